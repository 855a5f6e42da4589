/*
 * aggcheck_data.h
 *		gpu_aggcheck's test data and queries: generated columns (TData) written
 *		as Arrow files with this project's writer, the columns of the checks
 *		(gen_data, COL_*), a test query (TQuery: a qual, a DIV or MUL
 *		projection, keys, aggregates) and its xPU program (build_program).
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#ifndef AGGCHECK_DATA_H
#define AGGCHECK_DATA_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow/arrow.h"
#include "service/gpu_driver.h"

/* ---------------- test data ---------------- */

/* one column of generated values */
typedef struct TCol
{
	const char *name;
	XpuType		type;			/* INT2, INT4, INT8, FLOAT8, NUMERIC (scale 2), TEXT, DATE */
	uint8_t    *null;
	int64_t    *i;
	double	   *f;
	__int128   *n;
	const char **s;
} TCol;

typedef struct TData
{
	int64_t		n;
	int			ncols;
	TCol		cols[12];
} TData;

static uint64_t rng = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int
is_float_type(int t)
{
	return t == XPU_T_FLOAT4 || t == XPU_T_FLOAT8;
}

static TCol *
tcol_add(TData *d, const char *name, XpuType type)
{
	TCol	   *c = &d->cols[d->ncols++];

	memset(c, 0, sizeof(*c));
	c->name = name;
	c->type = type;
	c->null = calloc(d->n, 1);
	if (is_float_type(type))
		c->f = calloc(d->n, sizeof(double));	/* float4: values a float holds */
	else
		c->i = calloc(d->n, sizeof(int64_t));
	if (type == XPU_T_NUMERIC)
		c->n = calloc(d->n, sizeof(__int128));
	if (type == XPU_T_TEXT)
		c->s = calloc(d->n, sizeof(char *));
	return c;
}

static void
tdata_free(TData *d)
{
	for (int k = 0; k < d->ncols; k++)
	{
		free(d->cols[k].null);
		free(d->cols[k].i);
		free(d->cols[k].f);
		free(d->cols[k].n);
		free(d->cols[k].s);
	}
	d->ncols = 0;
}

static ArrowTypeId
arrow_type_of(XpuType t)
{
	switch (t)
	{
		case XPU_T_INT2: return ARROW_TYPE_INT16;
		case XPU_T_INT4: return ARROW_TYPE_INT32;
		case XPU_T_INT8: return ARROW_TYPE_INT64;
		case XPU_T_FLOAT8: return ARROW_TYPE_FLOAT64;
		case XPU_T_FLOAT4: return ARROW_TYPE_FLOAT32;
		case XPU_T_NUMERIC: return ARROW_TYPE_DECIMAL128;
		case XPU_T_DATE: return ARROW_TYPE_DATE32;
		default: return ARROW_TYPE_UTF8;
	}
}

static XpuColKind
kind_of(XpuType t)
{
	switch (t)
	{
		case XPU_T_INT2: return XPU_COL_INT16;
		case XPU_T_INT4: return XPU_COL_INT32;
		case XPU_T_INT8: return XPU_COL_INT64;
		case XPU_T_FLOAT8: return XPU_COL_FLOAT64;
		case XPU_T_FLOAT4: return XPU_COL_FLOAT32;
		case XPU_T_NUMERIC: return XPU_COL_DECIMAL128;
		case XPU_T_DATE: return XPU_COL_DATE32;
		default: return XPU_COL_UTF8;
	}
}

static int
append_value(ArrowBuilder *b, const TCol *c, int64_t r, ArrowError *err)
{
	ArrowDecimal128 dv;

	if (c->null[r])
		return arrow_append_null(b, err);
	switch (c->type)
	{
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8:
			return arrow_append_float(b, c->f[r], err);
		case XPU_T_NUMERIC:
			dv.lo = (uint64_t) c->n[r];
			dv.hi = (int64_t) (c->n[r] >> 64);
			return arrow_append_decimal(b, dv, err);
		case XPU_T_TEXT:
			return arrow_append_bytes(b, c->s[r], strlen(c->s[r]), err);
		default:
			return arrow_append_int(b, c->i[r], err);
	}
}

/* writes d to path in record batches of batch_rows rows; 0 on success */
static int
tdata_write(const TData *d, const char *path, int64_t batch_rows)
{
	ArrowField	fields[12];
	ArrowSchema schema;
	ArrowBuilder *b[12];
	ArrowWriter *w;
	ArrowError	err;

	memset(fields, 0, sizeof(fields));
	memset(&schema, 0, sizeof(schema));
	for (int k = 0; k < d->ncols; k++)
	{
		fields[k].name = (char *) d->cols[k].name;
		fields[k].nullable = true;
		fields[k].type.id = arrow_type_of(d->cols[k].type);
		fields[k].type.precision = 38;
		fields[k].type.scale = d->cols[k].type == XPU_T_NUMERIC ? 2 : 0;
	}
	schema.n_fields = d->ncols;
	schema.fields = fields;
	if (arrow_writer_create(path, &schema, NULL, &w, &err) != ARROW_OK)
		goto fail;
	for (int k = 0; k < d->ncols; k++)
		if (arrow_builder_create(&fields[k], NULL, &b[k], &err) != ARROW_OK)
			goto fail;
	for (int64_t r = 0; r < d->n; r++)
	{
		for (int k = 0; k < d->ncols; k++)
			if (append_value(b[k], &d->cols[k], r, &err) != ARROW_OK)
				goto fail;
		if ((r + 1) % batch_rows == 0 || r + 1 == d->n)
			if (arrow_writer_write_batch(w, b, NULL, &err) != ARROW_OK)
				goto fail;
	}
	for (int k = 0; k < d->ncols; k++)
		arrow_builder_free(b[k]);
	if (arrow_writer_close(w, &err) != ARROW_OK)
		goto fail;
	return 0;
fail:
	printf("Bail out! writing %s: %s\n", path, err.message);
	exit(1);
}

/* ---------------- the query and its program ---------------- */

/* a test query: columns loaded, optional qual a > lo AND b < hi, outputs */
typedef struct TQuery
{
	int			qual_a, qual_b;	/* column numbers, -1: no qual */
	int64_t		qual_lo, qual_hi;
	int			div_col, div_by;	/* PROJ: out = col / by (ints), -1: none */
	int			mul_col, mul_by;	/* PROJ: out = col * by (int8), -1: none */
	int			n_keys;
	int			keys[4];		/* columns */
	int			n_aggs;
	XpuAggDesc	aggs[24];		/* .out: a column, or d->ncols: the DIV/MUL output */
} TQuery;

/* is column k read by q */
static int
query_uses(const TQuery *q, int k)
{
	if (k == q->qual_a || k == q->qual_b || k == q->div_col || k == q->div_by ||
		k == q->mul_col || k == q->mul_by)
		return 1;
	for (int i = 0; i < q->n_keys; i++)
		if (q->keys[i] == k)
			return 1;
	for (int j = 0; j < q->n_aggs; j++)
		if (q->aggs[j].kind != XPU_AGG_COUNT_STAR && q->aggs[j].out == k)
			return 1;
	return 0;
}

/*
 * builds the program for q over d: loads only the columns q reads (fields[]
 * receives the file field of each column descriptor); outs: one register
 * per column of d (NULL when not loaded), then the DIV/MUL result
 */
static XpuProgram *
build_program(const TData *d, const TQuery *q, int32_t *fields)
{
	XpuBuilder *b = xpu_builder_create();
	int			regs[12];
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			n_desc = 0;
	char		errbuf[256];
	XpuProgram *prog;

	int			used[12];

	xpu_begin_stage(b, XPU_STAGE_LOAD);
	for (int k = 0; k < d->ncols; k++)
	{
		regs[k] = xpu_add_reg(b, d->cols[k].type, d->cols[k].type == XPU_T_NUMERIC ? 2 : 0);
		if (query_uses(q, k))
			used[n_desc++] = k;
	}

	/*
	 * Chunk column i holds field used[i] (fields[] is indexed by chunk
	 * column); the descriptors are added in the reverse order, so that a
	 * program column's index differs from its chunk column's, as in the
	 * programs codegen builds (columns in the order the quals load them).
	 */
	for (int i = n_desc - 1; i >= 0; i--)
	{
		int			k = used[i];
		int			scale = d->cols[k].type == XPU_T_NUMERIC ? 2 : 0;
		int			desc = xpu_add_column(b, i, kind_of(d->cols[k].type), scale);

		fields[i] = k;
		xpu_add_instr(b, XPU_OP_LOAD_COL, regs[k], 0, 0, 0, desc);
	}
	if (q->qual_a >= 0)
	{
		XpuType		ta = d->cols[q->qual_a].type,
					tb = d->cols[q->qual_b].type;
		int			c1 = xpu_add_reg(b, ta, 0),
					c2 = xpu_add_reg(b, tb, 0),
					t1 = xpu_add_reg(b, XPU_T_BOOL, 0),
					t2 = xpu_add_reg(b, XPU_T_BOOL, 0);

		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_INT, c1, 0, 0, 0, xpu_add_const(b, &q->qual_lo, 8));
		xpu_add_instr(b, XPU_OP_GT_INT, t1, regs[q->qual_a], c1, 0, 0);
		xpu_add_instr(b, XPU_OP_CONST_INT, c2, 0, 0, 0, xpu_add_const(b, &q->qual_hi, 8));
		xpu_add_instr(b, XPU_OP_LT_INT, t2, regs[q->qual_b], c2, 0, 0);
		xpu_add_instr(b, XPU_OP_AND, r0, t1, t2, 0, 0);
	}
	if (q->div_col >= 0 || q->mul_col >= 0)
	{
		int			a = q->div_col >= 0 ? q->div_col : q->mul_col;
		int			by = q->div_col >= 0 ? q->div_by : q->mul_by;
		XpuType		t = d->cols[a].type;
		int			dst = xpu_add_reg(b, t, 0);

		xpu_begin_stage(b, XPU_STAGE_PROJ);
		xpu_add_instr(b, q->div_col >= 0 ?
					  (t == XPU_T_INT4 ? XPU_OP_DIV_I4 : XPU_OP_DIV_I8) :
					  (t == XPU_T_INT4 ? XPU_OP_MUL_I4 : XPU_OP_MUL_I8),
					  dst, regs[a], regs[by], 0, 0);
		for (int k = 0; k < d->ncols; k++)
			xpu_add_output(b, regs[k]);
		xpu_add_output(b, dst);
	}
	else
		for (int k = 0; k < d->ncols; k++)
			xpu_add_output(b, regs[k]);
	(void) r0;
	prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (prog == NULL || !xpu_program_validate(prog, prog->total_len, errbuf, sizeof(errbuf)))
	{
		printf("Bail out! program: %s\n", errbuf);
		exit(1);
	}
	return prog;
}

/* ---------------- the columns and aggregates of the checks ---------------- */

static const char *const texts[] = {
	"", "a", "ab", "abc", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "zz", "AIR", "MAIL", "SHIP",
	"TRUCK", "RAIL", "FOB", "REG AIR", "1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI",
	"a rather long string that is longer than forty bytes, surely", "x\x01y"
};

#define NTEXTS	((int) (sizeof(texts) / sizeof(texts[0])))

/*
 * the columns of the checks: a int4, b int2, k int8 (n_groups values), f
 * float8 >= 0, g float8 with NaN/inf/-0, n numeric(38,2), s text, z int4
 * divisor with a few zeros (zero_every rows; 0: none), h float4 quarters
 */
static void
gen_data(TData *d, int64_t n, int64_t n_groups, int null_pct, int64_t zero_every)
{
	static const double gedges[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1e308, -1e308, 0.5};
	TCol	   *a, *b, *k, *f, *g, *nu, *s, *z, *h;

	memset(d, 0, sizeof(*d));
	d->n = n;
	a = tcol_add(d, "a", XPU_T_INT4);
	b = tcol_add(d, "b", XPU_T_INT2);
	k = tcol_add(d, "k", XPU_T_INT8);
	f = tcol_add(d, "f", XPU_T_FLOAT8);
	g = tcol_add(d, "g", XPU_T_FLOAT8);
	nu = tcol_add(d, "n", XPU_T_NUMERIC);
	s = tcol_add(d, "s", XPU_T_TEXT);
	z = tcol_add(d, "z", XPU_T_INT4);
	h = tcol_add(d, "h", XPU_T_FLOAT4);
	for (int64_t r = 0; r < n; r++)
	{
		uint64_t	x = rnd();

		a->null[r] = (int) (rnd() % 100) < null_pct;
		a->i[r] = x % 97 == 0 ? (x & 1 ? INT32_MAX : INT32_MIN) : (int64_t) (x % 2000001) - 1000000;
		b->null[r] = (int) (rnd() % 100) < null_pct;
		b->i[r] = (int16_t) rnd();
		k->null[r] = n_groups > 1 && (int) (rnd() % 100) < null_pct / 4;
		k->i[r] = n_groups > 1 ? (int64_t) (rnd() % n_groups) * 7919 - 3 : 42;
		f->null[r] = (int) (rnd() % 100) < null_pct;
		f->f[r] = (double) (rnd() % 1000000) / 1000.0;
		g->null[r] = (int) (rnd() % 100) < null_pct;
		g->f[r] = rnd() % 50 == 0 ? gedges[rnd() % 8] : (double) (rnd() % 100) / 4.0 - 12.0;
		nu->null[r] = (int) (rnd() % 100) < null_pct;
		nu->n[r] = (__int128) ((int64_t) (rnd() % 2000000000001ULL) - 1000000000000LL) * 1000003;
		s->null[r] = (int) (rnd() % 100) < null_pct;
		s->s[r] = texts[rnd() % NTEXTS];
		z->null[r] = 0;
		z->i[r] = zero_every > 0 && r % zero_every == zero_every - 1 ? 0 : (int64_t) (rnd() % 5) + 1;
		h->null[r] = (int) (rnd() % 100) < null_pct;
		h->f[r] = rnd() % 1000 == 0 ? -0.0 : (double) (rnd() % 64) / 4.0 - 8.0;
	}
}

#define COL_A 0
#define COL_B 1
#define COL_K 2
#define COL_F 3
#define COL_G 4
#define COL_N 5
#define COL_S 6
#define COL_Z 7
#define COL_H 8					/* float4 quarters in [-8, 8): exact float4 sums */

static void
agg(TQuery *q, int kind, int col)
{
	q->aggs[q->n_aggs].kind = (uint8_t) kind;
	q->aggs[q->n_aggs].out = (uint16_t) (col < 0 ? 0 : col);
	q->n_aggs++;
}

static void
query_init(TQuery *q)
{
	memset(q, 0, sizeof(*q));
	q->qual_a = q->qual_b = -1;
	q->div_col = q->div_by = q->mul_col = q->mul_by = -1;
}

/* adds an HLL aggregate over column col at precision p, limit_mb MiB */
static void
agg_hll(TQuery *q, int col, int p, uint32_t limit_mb)
{
	agg(q, XPU_AGG_HLL, col);
	q->aggs[q->n_aggs - 1].param = (uint8_t) p;
	q->aggs[q->n_aggs - 1].limit = limit_mb;
}

#endif							/* AGGCHECK_DATA_H */
