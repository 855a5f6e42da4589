/*
 * test_xpu_tile.c
 *		Unit tests of the CPU engine's fast paths (src/xpu/xpu_tile.h,
 *		xpu_cpu.c; xpu_agg.c's block-wise group lookup): programs of
 *		several instructions, as codegen emits them, run through both
 *		interpreter forms (per row, as on the GPU, and per tile) and against
 *		values computed here: the fusion of a constant comparison and of a
 *		MOVE, nested masks, int4 multiplication with its overflow error
 *		(22003 "integer out of range") in a passing row, a failing row and a
 *		row with a NULL, three-valued AND/OR and null tests, columns with
 *		and without validity bitmaps, empty and one-row chunks over several
 *		tiles' boundaries, text group keys of every length, and programs
 *		that only load columns (loaded straight into the result).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "xpu_agg.h"
#include "xpu_program.h"
#include "ssb_q1.h"

static char errbuf[256];

/* both forms' results over one chunk */
typedef struct Run
{
	XpuResult	res[2];			/* [0] per row, [1] per tile */
	XpuError	err[2];
} Run;

static void
run_both(const XpuProgram *p, const XpuColumnData *cols, int ncols, int64_t n, Run *r)
{
	XpuChunk	chunk = {n, ncols, 0, cols};
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(p) + 15) & ~(size_t) 15);
	size_t		nout = (size_t) (p->n_outs ? p->n_outs : 1) * (size_t) (n + 1);

	for (int f = 0; f < 2; f++)
	{
		memset(&r->err[f], 0, sizeof(XpuError));
		r->res[f].nrows = n;
		r->res[f].mask = calloc((size_t) n + 1, 1);
		r->res[f].values = calloc(nout, sizeof(XpuValue));
		r->res[f].nulls = calloc(nout, 1);
	}
	xpu_row_exec(p, &chunk, &r->res[0], &r->err[0]);
	xpu_cpu_exec(p, &chunk, &r->res[1], ws, &r->err[1]);
	free(ws);
}

static void
run_free(Run *r)
{
	for (int f = 0; f < 2; f++)
	{
		free(r->res[f].mask);
		free(r->res[f].values);
		free(r->res[f].nulls);
	}
}

/* do both forms agree on errors, masks, and the int outputs of passing rows */
static int
forms_agree(const XpuProgram *p, const Run *r)
{
	if (r->err[0].code != r->err[1].code)
		return 0;
	if (r->err[0].code != XPU_OK)
		return strcmp(r->err[0].message, r->err[1].message) == 0;
	for (int64_t i = 0; i < r->res[0].nrows; i++)
	{
		if (r->res[0].mask[i] != r->res[1].mask[i])
			return 0;
		for (int k = 0; k < p->n_outs; k++)
		{
			int64_t		o = k * r->res[0].nrows + i;

			if (r->res[0].nulls[o] != r->res[1].nulls[o] ||
				(!r->res[0].nulls[o] && r->res[0].values[o].i != r->res[1].values[o].i))
				return 0;
		}
	}
	return 1;
}

static XpuProgram *
finish(XpuBuilder *b)
{
	XpuProgram *p = xpu_builder_finish(b, errbuf, sizeof(errbuf));

	xpu_builder_free(b);
	if (p == NULL)
	{
		tap_diag("builder: %s", errbuf);
		fflush(stdout);
	}
	return p;
}

/*
 * Q1 of bench/engine_bench.py in its unfolded form (ssb_q1.h): each
 * conjunct's CONST + comparison + MOVE to r0 is fused by the tile
 * interpreter.  extra_read: the first comparison's register is an output
 * too (read twice: no fusion of its MOVE).
 */
static XpuProgram *
q1_program(int extra_read)
{
	XpuBuilder *b = xpu_builder_create();

	ssb_q1_build(b, extra_read);
	return finish(b);
}

/* a column of n int32 values; validity NULL: no NULLs */
static XpuColumnData
int_col(const int32_t *v, const uint8_t *validity)
{
	XpuColumnData cd = {validity, v, NULL, 0};

	return cd;
}

static int
is_valid(const uint8_t *bits, int64_t i)
{
	return bits == NULL || ((bits[i >> 3] >> (i & 7)) & 1);
}

/* Q1 over n rows of pseudo-random values, NULLs where with_nulls */
static void
test_q1(int64_t n, int with_nulls, int extra_read)
{
	XpuProgram *p = q1_program(extra_read);
	int32_t    *q = malloc((n + 1) * 4), *e = malloc((n + 1) * 4), *d = malloc((n + 1) * 4);
	uint8_t    *vq = calloc(n / 8 + 1, 1), *vd = calloc(n / 8 + 1, 1);
	XpuColumnData cols[3];
	Run			r;
	int			ok = 1;
	uint64_t	x = 88172645463325252ULL;
	__int128	sum = 0, tsum = 0;
	static const uint16_t no_keys[1] = {0};
	static const XpuAggDesc sum_desc[1] = {{XPU_AGG_SUM_INT, 0, 0, 0}};
	XpuAggSpec	spec = {0, no_keys, 1, sum_desc};
	XpuAggTable *t;
	const uint8_t *key;
	uint32_t	klen;
	const XpuAggState *st;

	for (int64_t i = 0; i < n; i++)
	{
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		q[i] = (int32_t) (x % 50) + 1;
		d[i] = (int32_t) ((x >> 8) % 11);
		e[i] = (int32_t) ((x >> 16) % 10000000);
		if (!with_nulls || (x >> 40) % 7 != 0)
			vq[i >> 3] |= 1 << (i & 7);
		if (!with_nulls || (x >> 44) % 5 != 0)
			vd[i >> 3] |= 1 << (i & 7);
	}
	cols[0] = int_col(q, with_nulls ? vq : NULL);
	cols[1] = int_col(e, NULL);
	cols[2] = int_col(d, with_nulls ? vd : NULL);
	run_both(p, cols, 3, n, &r);
	ok = forms_agree(p, &r) && r.err[1].code == XPU_OK;
	for (int64_t i = 0; ok && i < n; i++)
	{
		int			pass = is_valid(cols[2].validity, i) && d[i] >= 1 && d[i] <= 3 &&
			is_valid(cols[0].validity, i) && q[i] < 25;

		ok = r.res[1].mask[i] == pass &&
			(!pass || (!r.res[1].nulls[i] && r.res[1].values[i].i == (int64_t) e[i] * d[i]));
		if (pass)
			sum += (int64_t) e[i] * d[i];
		if (ok && extra_read && pass)
			ok = !r.res[1].nulls[n + i] && r.res[1].values[n + i].i == 1;
	}
	tap_ok(ok, "Q1's program, %lld rows%s%s: both forms and the expected rows agree",
		   (long long) n, with_nulls ? ", NULLs in two columns" : ", no validity bitmaps",
		   extra_read ? ", a comparison read twice" : "");
	t = xpu_agg_table_create(p, &spec, &r.err[1]);
	ok = t != NULL && xpu_agg_table_update(t, &r.res[1], &r.err[1]);
	if (ok)
	{
		xpu_agg_table_group(t, 0, &key, &klen, &st);
		tsum = st[0].v.i128;
	}
	tap_ok(ok && tsum == sum && xpu_agg_table_ngroups(t) == 1,
		   "Q1 over %lld rows: the sum of the passing rows' products", (long long) n);
	xpu_agg_table_free(t);
	run_free(&r);
	free(q);
	free(e);
	free(d);
	free(vq);
	free(vd);
	free(p);
}

/* int4 * int4 overflow: an error in a passing row, none in others */
static void
test_mul_overflow(void)
{
	XpuProgram *p = q1_program(0);
	/* rows: ok, overflow but q >= 25, overflow with d NULL, overflow passing */
	int32_t		q[1100], e[1100], d[1100];
	uint8_t		vd[1100 / 8 + 1];
	XpuColumnData cols[3];
	Run			r;

	memset(vd, 0xff, sizeof(vd));
	for (int i = 0; i < 1100; i++)
		q[i] = 1, e[i] = 1000, d[i] = 2;
	e[1] = 2000000000, q[1] = 30;
	e[2] = 2000000000, vd[0] &= ~(1 << 2);
	cols[0] = int_col(q, NULL);
	cols[1] = int_col(e, NULL);
	cols[2] = int_col(d, vd);
	run_both(p, cols, 3, 1100, &r);
	tap_ok(forms_agree(p, &r) && r.err[1].code == XPU_OK,
		   "int4 * int4: overflow in a row that does not pass or has a NULL is no error");
	run_free(&r);
	e[1030] = 2000000000;		/* second tile */
	run_both(p, cols, 3, 1100, &r);
	tap_ok(forms_agree(p, &r) && r.err[1].code == XPU_ERR_OUT_OF_RANGE &&
		   strcmp(r.err[1].message, "integer out of range") == 0,
		   "int4 * int4: overflow in a passing row is 22003 integer out of range (got %d %s)",
		   r.err[1].code, r.err[1].message);
	run_free(&r);
	e[1030] = -1073741824;		/* -2^30 * 2 = INT32_MIN: fits */
	run_both(p, cols, 3, 1100, &r);
	tap_ok(forms_agree(p, &r) && r.err[1].code == XPU_OK &&
		   r.res[1].values[1030].i == INT32_MIN, "int4 * int4: INT32_MIN fits");
	run_free(&r);
	free(p);
}

/* AND, OR, IS NULL, IS NOT NULL over every pair of true / false / NULL */
static void
test_three_valued(void)
{
	static const int32_t a[9] = {1, 1, 1, 0, 0, 0, 0, 0, 0};
	static const int32_t bv[9] = {1, 0, 0, 1, 0, 0, 1, 0, 0};
	static const uint8_t va[2] = {0x3f, 0};	/* rows 6..8: a NULL */
	static const uint8_t vb[2] = {0xdb, 0};	/* rows 2, 5, 8: b NULL */
	/* expected: 1 true, 0 false, 2 NULL */
	static const int and_exp[9] = {1, 0, 2, 0, 0, 0, 2, 0, 2};
	static const int or_exp[9] = {1, 1, 1, 1, 0, 2, 1, 2, 2};
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	XpuColumnData cols[2];
	Run			r;
	int			ra, rb, rand_, ror, risn, rnn, ok;

	ra = xpu_add_reg(b, XPU_T_INT4, 0);
	rb = xpu_add_reg(b, XPU_T_INT4, 0);
	rand_ = xpu_add_reg(b, XPU_T_BOOL, 0);
	ror = xpu_add_reg(b, XPU_T_BOOL, 0);
	risn = xpu_add_reg(b, XPU_T_BOOL, 0);
	rnn = xpu_add_reg(b, XPU_T_BOOL, 0);
	{
		int			ba = xpu_add_reg(b, XPU_T_BOOL, 0), bb = xpu_add_reg(b, XPU_T_BOOL, 0);
		int			zero = xpu_add_reg(b, XPU_T_INT4, 0);

		xpu_add_column(b, 0, XPU_COL_INT32, 0);
		xpu_add_column(b, 1, XPU_COL_INT32, 0);
		xpu_begin_stage(b, XPU_STAGE_PROJ);
		xpu_add_instr(b, XPU_OP_LOAD_COL, ra, 0, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_LOAD_COL, rb, 0, 0, 0, 1);
		xpu_add_instr(b, XPU_OP_CONST_INT, zero, 0, 0, 0, ssb_q1_const(b, 0));
		xpu_add_instr(b, XPU_OP_NE_INT, ba, ra, zero, 0, 0);
		xpu_add_instr(b, XPU_OP_NE_INT, bb, rb, zero, 0, 0);
		xpu_add_instr(b, XPU_OP_AND, rand_, ba, bb, 0, 0);
		xpu_add_instr(b, XPU_OP_OR, ror, ba, bb, 0, 0);
		xpu_add_instr(b, XPU_OP_IS_NULL, risn, ba, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_IS_NOT_NULL, rnn, bb, 0, 0, 0);
	}
	xpu_add_output(b, rand_);
	xpu_add_output(b, ror);
	xpu_add_output(b, risn);
	xpu_add_output(b, rnn);
	p = finish(b);
	cols[0] = int_col(a, va);
	cols[1] = int_col(bv, vb);
	run_both(p, cols, 2, 9, &r);
	ok = forms_agree(p, &r) && r.err[1].code == XPU_OK;
	for (int i = 0; ok && i < 9; i++)
	{
		const uint8_t *nl = r.res[1].nulls;
		const XpuValue *v = r.res[1].values;

		ok = (and_exp[i] == 2 ? nl[i] : !nl[i] && v[i].i == and_exp[i]) &&
			(or_exp[i] == 2 ? nl[9 + i] : !nl[9 + i] && v[9 + i].i == or_exp[i]) &&
			!nl[18 + i] && v[18 + i].i == (i >= 6) &&
			!nl[27 + i] && v[27 + i].i == (i % 3 != 2);
	}
	tap_ok(ok, "AND, OR, IS NULL, IS NOT NULL: three-valued logic in both forms");
	run_free(&r);
	free(p);
}

/* text group keys of lengths 0 .. 40 and NULL, over several key blocks */
static void
test_text_keys(void)
{
	enum { N = 3000, NV = 42 };
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	static const uint16_t key_outs[1] = {0};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	XpuAggSpec	spec = {1, key_outs, 1, aggs};
	int32_t    *offs = malloc((N + 1) * 4);
	char	   *data = malloc(N * 40 + 1);
	uint8_t    *valid = calloc(N / 8 + 1, 1);
	int64_t		expect[NV] = {0};
	XpuColumnData cd;
	XpuAggTable *t;
	Run			r;
	int			reg = xpu_add_reg(b, XPU_T_TEXT, 0), ok;
	int32_t		pos = 0;

	xpu_add_column(b, 0, XPU_COL_UTF8, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_LOAD_COL, reg, 0, 0, 0, 0);
	xpu_add_output(b, reg);
	p = finish(b);
	for (int i = 0; i < N; i++)
	{
		int			v = (i * 7919) % NV;	/* 0..40: length, 41: NULL */

		offs[i] = pos;
		if (v < NV - 1)
		{
			valid[i >> 3] |= 1 << (i & 7);
			for (int j = 0; j < v; j++)
				data[pos++] = (char) ('a' + (j + v) % 26);
		}
		expect[v]++;
	}
	offs[N] = pos;
	cd.validity = valid;
	cd.values = offs;
	cd.data = data;
	cd.offset = 0;
	run_both(p, &cd, 1, N, &r);
	t = xpu_agg_table_create(p, &spec, &r.err[1]);
	ok = forms_agree(p, &r) && t != NULL && xpu_agg_table_update(t, &r.res[1], &r.err[1]) &&
		xpu_agg_table_ngroups(t) == NV;
	for (int64_t g = 0; ok && g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *key;
		uint32_t	klen;
		const XpuAggState *st;
		int32_t		len;

		xpu_agg_table_group(t, g, &key, &klen, &st);
		if (klen == 1 && key[0] == 0)
			ok = st[0].count == expect[NV - 1];
		else
		{
			memcpy(&len, key + 1, 4);
			ok = klen == 5 + (uint32_t) len && len < NV - 1 && st[0].count == expect[len];
			for (int j = 0; ok && j < len; j++)
				ok = key[5 + j] == 'a' + (j + len) % 26;
		}
	}
	tap_ok(ok, "text keys of lengths 0 to 40 and NULL over %d rows: 42 groups, exact counts", N);
	xpu_agg_table_free(t);
	run_free(&r);
	free(offs);
	free(data);
	free(valid);
	free(p);
}

/*
 * a program of loads only (int4, int8, utf8 with and without NULLs, one
 * column twice) over n rows: both forms agree on every output, NULLs and
 * values (text by content)
 */
static void
test_loads_only(int64_t n)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int32_t    *i4 = malloc((n + 1) * 4), *offs = malloc((n + 1) * 4);
	int64_t    *i8 = malloc((n + 1) * 8);
	char	   *data = malloc(n * 3 + 1);
	uint8_t    *valid = calloc(n / 8 + 1, 1);
	XpuColumnData cols[3];
	Run			r;
	int			regs[4], ok;
	int32_t		pos = 0;

	regs[0] = xpu_add_reg(b, XPU_T_INT4, 0);
	regs[1] = xpu_add_reg(b, XPU_T_INT8, 0);
	regs[2] = xpu_add_reg(b, XPU_T_TEXT, 0);
	regs[3] = xpu_add_reg(b, XPU_T_INT4, 0);
	xpu_add_column(b, 0, XPU_COL_INT32, 0);
	xpu_add_column(b, 1, XPU_COL_INT64, 0);
	xpu_add_column(b, 2, XPU_COL_UTF8, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_LOAD_COL, regs[2], 0, 0, 0, 2);
	xpu_add_instr(b, XPU_OP_LOAD_COL, regs[0], 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_LOAD_COL, regs[1], 0, 0, 0, 1);
	xpu_add_instr(b, XPU_OP_LOAD_COL, regs[3], 0, 0, 0, 0);
	for (int k = 0; k < 4; k++)
		xpu_add_output(b, regs[k]);
	p = finish(b);
	for (int64_t i = 0; i < n; i++)
	{
		i4[i] = (int32_t) (i * 2654435761u);
		i8[i] = INT64_MIN + i * 1000003;
		offs[i] = pos;
		for (int j = 0; j < i % 4; j++)
			data[pos++] = (char) ('a' + j);
		if (i % 3 != 1)
			valid[i >> 3] |= 1 << (i & 7);
	}
	offs[n] = pos;
	cols[0] = int_col(i4, valid);
	cols[1] = (XpuColumnData) {NULL, i8, NULL, 0};
	cols[2] = (XpuColumnData) {valid, offs, data, 0};
	run_both(p, cols, 3, n, &r);
	ok = r.err[0].code == XPU_OK && r.err[1].code == XPU_OK;
	for (int64_t i = 0; ok && i < n; i++)
	{
		ok = r.res[0].mask[i] == 1 && r.res[1].mask[i] == 1;
		for (int k = 0; ok && k < 4; k++)
		{
			int64_t		o = k * n + i;
			const XpuValue *v0 = &r.res[0].values[o], *v1 = &r.res[1].values[o];

			ok = r.res[0].nulls[o] == r.res[1].nulls[o] &&
				r.res[1].nulls[o] == (k != 1 && i % 3 == 1);
			if (ok && !r.res[1].nulls[o])
				ok = k == 2 ? v0->t.len == v1->t.len && v1->t.len == i % 4 &&
					memcmp(v0->t.p, v1->t.p, v1->t.len) == 0 : v0->i == v1->i;
		}
	}
	tap_ok(ok, "a program of loads only, %lld rows: both forms agree", (long long) n);
	run_free(&r);
	free(i4);
	free(offs);
	free(i8);
	free(data);
	free(valid);
	free(p);
}

/*
 * a filter without outputs (the engine filter's and GpuScan's programs):
 * rows pass by their qual, and an overflow in the qual is an error
 */
static void
test_filter_only(void)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int32_t		v[300];
	XpuColumnData cd = {NULL, v, NULL, 0};
	Run			r;
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0), r1 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			r2 = xpu_add_reg(b, XPU_T_INT4, 0), r3 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			r4 = xpu_add_reg(b, XPU_T_BOOL, 0), ok;

	xpu_add_column(b, 0, XPU_COL_INT32, 0);
	xpu_begin_stage(b, XPU_STAGE_LOAD);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r1, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_MUL_I4, r2, r1, r1, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, r3, 0, 0, 0, ssb_q1_const(b, 100));
	xpu_add_instr(b, XPU_OP_GT_INT, r4, r2, r3, 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, r0, r4, 0, 0, 0);
	p = finish(b);
	for (int i = 0; i < 300; i++)
		v[i] = i % 20;
	run_both(p, &cd, 1, 300, &r);
	ok = forms_agree(p, &r) && r.err[1].code == XPU_OK;
	for (int i = 0; ok && i < 300; i++)
		ok = r.res[1].mask[i] == (v[i] * v[i] > 100);
	tap_ok(ok, "a filter without outputs: rows pass by the qual");
	run_free(&r);
	v[250] = 50000;
	run_both(p, &cd, 1, 300, &r);
	tap_ok(forms_agree(p, &r) && r.err[1].code == XPU_ERR_OUT_OF_RANGE,
		   "a filter without outputs: an overflow in the qual is 22003");
	run_free(&r);
	free(p);
}

int
main(void)
{
	test_q1(0, 0, 0);
	test_q1(1, 0, 0);
	test_q1(1, 1, 0);
	test_q1(1023, 1, 0);
	test_q1(1024, 0, 0);
	test_q1(1025, 1, 1);
	test_q1(5000, 0, 0);
	test_q1(5000, 1, 1);
	test_mul_overflow();
	test_three_valued();
	test_text_keys();
	test_filter_only();
	test_loads_only(0);
	test_loads_only(1);
	test_loads_only(2500);
	return tap_done();
}
