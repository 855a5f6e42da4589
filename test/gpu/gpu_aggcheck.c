/*
 * gpu_aggcheck.c
 *		On a GPU host: GROUP BY aggregation on the GPU (kern_agg.cu driven by
 *		service/gpu_agg.c, no service process, no PostgreSQL) against a host
 *		reference computed in this program.  Each case writes an Arrow file
 *		with this project's writer (NULLs, edge values, text keys), builds an
 *		xPU program with xpu_build.c, runs gpu_agg_execute over the file and
 *		compares every group: integers and numerics exactly, overflow flags,
 *		float sums within 1e-9 relative.  Prints TAP.
 *
 *		gpu_aggcheck FATBIN DIR			the checks (files written in DIR)
 *		gpu_aggcheck FATBIN DIR hll		only the HLL checks: HLL aggregates
 *										on the GPU against the CPU engine,
 *										exported sketches byte for byte
 *		gpu_aggcheck FATBIN DIR bench ROWS [BATCH_ROWS [QUERIES]]
 *										the throughput figures (QUERIES:
 *										run_bench's names, comma-separated)
 *
 * The GPU column cache (service/gpu_cache.c) is on (its default size) for
 * every case: each case runs a second time and must then be served from
 * the cache with the same result; run_cache_checks adds a replaced file, a
 * file rewritten in place, a tiny cache that must evict, concurrent runs
 * sharing a small cache, and a device out of memory that the cache must
 * make room on.  run_float2_checks compares the GPU's groups over Float16
 * columns (float2 keys, quals and aggregates) with the CPU engine's.
 */
#include <pthread.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrow/arrow.h"
#include "service/gpu_cache.h"
#include "service/gpu_driver.h"
#include "tap.h"

/* what the service's main.c and server.c define */
ServiceCounters svc_counters;

void
svc_log(const char *level, const char *fmt,...)
{
	va_list		ap;

	printf("# %s: ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int64_t
svc_now_us(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

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

static int	is_float_type(int t);

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

/* ---------------- the program and the run ---------------- */

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

/* ---------------- groups: a map of key bytes to states ---------------- */

typedef struct TGroup
{
	uint8_t    *key;
	uint32_t	len;
	int			used;
	XpuAggState *st;			/* [n_aggs] */
	/* the exact numeric sums of the reference: hi * 2^64 + lo, [n_aggs] */
	__int128   *ref_hi;
	unsigned __int128 *ref_lo;
} TGroup;

typedef struct TMap
{
	int			n_aggs;
	const XpuAggDesc *aggs;
	const uint8_t *agg_types;	/* XpuType of each aggregate's argument */
	int64_t		cap;
	int64_t		n;
	TGroup	   *g;
} TMap;

static uint64_t
hash_bytes(const uint8_t *p, uint32_t n)
{
	uint64_t	h = 1469598103934665603ULL;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

static void
tmap_init(TMap *m, int n_aggs, const XpuAggDesc *aggs, const uint8_t *types, int64_t cap)
{
	m->n_aggs = n_aggs;
	m->aggs = aggs;
	m->agg_types = types;
	m->cap = 16;
	while (m->cap < 2 * cap)
		m->cap *= 2;
	m->n = 0;
	m->g = calloc(m->cap, sizeof(TGroup));
}

static void
tmap_free(TMap *m)
{
	for (int64_t i = 0; i < m->cap; i++)
	{
		free(m->g[i].key);
		free(m->g[i].st);
		free(m->g[i].ref_hi);
		free(m->g[i].ref_lo);
	}
	free(m->g);
}

static int
is_float_type(int t)
{
	return t == XPU_T_FLOAT4 || t == XPU_T_FLOAT8;
}

/* the group of key (added with start states) */
static TGroup *
tmap_get(TMap *m, const uint8_t *key, uint32_t len)
{
	int64_t		i = (int64_t) (hash_bytes(key, len) & (uint64_t) (m->cap - 1));

	while (m->g[i].used)
	{
		if (m->g[i].len == len && memcmp(m->g[i].key, key, len) == 0)
			return &m->g[i];
		i = (i + 1) & (m->cap - 1);
	}
	if (2 * (m->n + 1) > m->cap)
	{
		printf("Bail out! test map full\n");
		exit(1);
	}
	m->n++;
	m->g[i].used = 1;
	m->g[i].len = len;
	m->g[i].key = malloc(len + 1);
	memcpy(m->g[i].key, key, len);
	m->g[i].st = calloc(m->n_aggs + 1, sizeof(XpuAggState));
	m->g[i].ref_hi = calloc(m->n_aggs + 1, sizeof(__int128));
	m->g[i].ref_lo = calloc(m->n_aggs + 1, sizeof(unsigned __int128));
	return &m->g[i];
}

static int
f8_less(double a, double b)
{
	if (isnan(a))
		return 0;
	if (isnan(b))
		return 1;
	return a < b;
}

/* dst += src for aggregate j (xpu_agg.h's states; sticky overflow) */
static void
state_combine(TMap *m, XpuAggState *dst, const XpuAggState *src, int j)
{
	int			kind = m->aggs[j].kind;
	int			type = m->agg_types[j];

	if (src->count == 0)
		return;
	dst->flags |= src->flags;
	switch (kind)
	{
		case XPU_AGG_SUM_INT:
		case XPU_AGG_SUM_NUMERIC:
		case XPU_AGG_SUMSQ_INT:
		case XPU_AGG_SUMSQ_NUMERIC:
			if (__builtin_add_overflow(dst->v.i128, src->v.i128, &dst->v.i128))
				dst->flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_SUM_FLOAT4:
			dst->v.f4 += src->v.f4;
			break;
		case XPU_AGG_VAR_FLOAT:
			/* PostgreSQL's float8_combine */
			if (dst->count == 0)
				dst->v = src->v;
			else
			{
				double		n1 = (double) dst->count,
							n2 = (double) src->count;
				double		d = dst->v.f8[0] / n1 - src->v.f8[0] / n2;

				dst->v.f8[1] += src->v.f8[1] + n1 * n2 * d * d / (n1 + n2);
				dst->v.f8[0] += src->v.f8[0];
			}
			break;
		case XPU_AGG_SUM_FLOAT:
		case XPU_AGG_MOMENTS:
			dst->v.f8[0] += src->v.f8[0];
			if (kind == XPU_AGG_MOMENTS)
				dst->v.f8[1] += src->v.f8[1];
			break;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			if (dst->count == 0)
				dst->v = src->v;
			else if (is_float_type(type) ?
					 (kind == XPU_AGG_MIN ? f8_less(src->v.f8[0], dst->v.f8[0]) :
					  f8_less(dst->v.f8[0], src->v.f8[0])) :
					 type == XPU_T_NUMERIC ?
					 (kind == XPU_AGG_MIN ? src->v.i128 < dst->v.i128 : src->v.i128 > dst->v.i128) :
					 (kind == XPU_AGG_MIN ? src->v.i < dst->v.i : src->v.i > dst->v.i))
				dst->v = src->v;
			break;
		default:
			break;
	}
	dst->count += src->count;
}

/* the sink the GPU run folds its groups into */
static int
tmap_sink(void *arg, const uint8_t *key, uint32_t key_len, const XpuAggState *states,
		  XpuError *err)
{
	TMap	   *m = arg;
	TGroup	   *g = tmap_get(m, key, key_len);

	for (int j = 0; j < m->n_aggs; j++)
		state_combine(m, &g->st[j], &states[j], j);
	return 1;
}

/* ---------------- the reference ---------------- */

/* appends the canonical key bytes (xpu_agg.h) of row r's column c */
static uint32_t
key_append(const TCol *c, int64_t r, uint8_t *p)
{
	uint32_t	n = 1;
	double		f;

	if (c->null[r])
	{
		p[0] = 0;
		return 1;
	}
	p[0] = 1;
	switch (c->type)
	{
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8:
			f = c->f[r];
			if (isnan(f))
				f = NAN;
			if (f == 0.0)
				f = 0.0;
			if (isnan(f))
			{
				uint64_t	canon = 0x7ff8000000000000ULL;

				memcpy(p + 1, &canon, 8);
			}
			else
				memcpy(p + 1, &f, 8);
			return 9;
		case XPU_T_NUMERIC:
			memcpy(p + 1, &c->n[r], 16);
			return 17;
		case XPU_T_TEXT:
			{
				uint32_t	len = (uint32_t) strlen(c->s[r]);

				memcpy(p + 1, &len, 4);
				memcpy(p + 5, c->s[r], len);
				return 5 + len;
			}
		default:
			memcpy(p + 1, &c->i[r], 8);
			return 9;
	}
	return n;
}

/* folds row r's argument value of aggregate j into the reference group */
static void
ref_fold(TMap *m, TGroup *g, int j, const TCol *c, int64_t r, const int64_t *extra)
{
	XpuAggState *st = &g->st[j];
	int			kind = m->aggs[j].kind;
	XpuAggState one;
	double		x;

	if (kind == XPU_AGG_COUNT_STAR)
	{
		st->count++;
		return;
	}
	if (extra == NULL && c->null[r])
		return;
	memset(&one, 0, sizeof(one));
	one.count = 1;
	x = c != NULL && is_float_type(c->type) ? c->f[r] : (double) (extra ? *extra : c->i[r]);
	switch (kind)
	{
		case XPU_AGG_SUM_NUMERIC:
			g->ref_lo[j] += (uint64_t) c->n[r];
			g->ref_hi[j] += (int64_t) (c->n[r] >> 64);
			st->count++;
			return;
		case XPU_AGG_SUM_INT:
			one.v.i128 = extra ? *extra : c->i[r];
			break;
		case XPU_AGG_SUM_FLOAT:
			one.v.f8[0] = x;
			if (isfinite(x) && fabs(x) > 1e289)
				one.flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_MOMENTS:
			one.v.f8[0] = x;
			one.v.f8[1] = x * x;
			if ((isfinite(x) && fabs(x) > 1e134) || (isinf(x * x) && !isinf(x)))
				one.flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_SUMSQ_INT:
			one.v.i128 = (__int128) (extra ? *extra : c->i[r]) * (extra ? *extra : c->i[r]);
			break;
		case XPU_AGG_SUMSQ_NUMERIC:
			if (c->n[r] >= ((__int128) 1 << 63) || c->n[r] <= -((__int128) 1 << 63))
				one.flags |= XPU_AGGF_OVERFLOW;
			else
				one.v.i128 = c->n[r] * c->n[r];
			break;
		case XPU_AGG_SUM_FLOAT4:
			one.v.f4 = (float) x;
			if (isfinite(x) && fabs(x) > 1e18)
				one.flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_VAR_FLOAT:
			/* float8_accum's state of one value: Sxx NaN for NaN and inf */
			one.v.f8[0] = x;
			one.v.f8[1] = isfinite(x) ? 0.0 : NAN;
			if (isfinite(x) && fabs(x) > 1e134)
				one.flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			if (is_float_type(c->type))
				one.v.f8[0] = x;
			else if (c->type == XPU_T_NUMERIC)
				one.v.i128 = c->n[r];
			else
				one.v.i = extra ? *extra : c->i[r];
			break;
		default:
			break;
	}
	state_combine(m, st, &one, j);
}

/* the exact numeric sums of the reference into their states */
static void
ref_finish(TMap *m)
{
	for (int64_t i = 0; i < m->cap; i++)
	{
		TGroup	   *g = &m->g[i];

		for (int j = 0; g->used && j < m->n_aggs; j++)
		{
			__int128	h;

			if (m->aggs[j].kind != XPU_AGG_SUM_NUMERIC)
				continue;
			h = g->ref_hi[j] + (__int128) (g->ref_lo[j] >> 64);
			if (h > INT64_MAX || h < INT64_MIN)
				g->st[j].flags |= XPU_AGGF_OVERFLOW;
			g->st[j].v.i128 = (__int128) (((unsigned __int128) h << 64) |
										  (uint64_t) g->ref_lo[j]);
		}
	}
}

/* the reference groups of q over d (folded as the program would) */
static void
ref_run(const TData *d, const TQuery *q, TMap *m, XpuError *err)
{
	uint8_t		key[4096];

	memset(err, 0, sizeof(*err));
	for (int64_t r = 0; r < d->n; r++)
	{
		int64_t		extra = 0;
		int			extra_null = 1;
		uint32_t	len = 0;
		TGroup	   *g;

		if (q->qual_a >= 0 &&
			(d->cols[q->qual_a].null[r] || d->cols[q->qual_b].null[r] ||
			 !(d->cols[q->qual_a].i[r] > q->qual_lo) || !(d->cols[q->qual_b].i[r] < q->qual_hi)))
			continue;
		if (q->div_col >= 0 || q->mul_col >= 0)
		{
			const TCol *a = &d->cols[q->div_col >= 0 ? q->div_col : q->mul_col];
			const TCol *b = &d->cols[q->div_col >= 0 ? q->div_by : q->mul_by];

			extra_null = a->null[r] || b->null[r];
			if (!extra_null && q->div_col >= 0 && b->i[r] == 0)
			{
				err->code = XPU_ERR_DIVISION_BY_ZERO;
				return;
			}
			if (!extra_null)
				extra = q->div_col >= 0 ? a->i[r] / b->i[r] : a->i[r] * b->i[r];
		}
		for (int k = 0; k < q->n_keys; k++)
			len += key_append(&d->cols[q->keys[k]], r, key + len);
		g = tmap_get(m, key, len);
		for (int j = 0; j < q->n_aggs; j++)
		{
			int			out = q->aggs[j].out;

			if (q->aggs[j].kind == XPU_AGG_COUNT_STAR)
				ref_fold(m, g, j, NULL, r, NULL);
			else if (out == d->ncols)
			{
				if (!extra_null)
					ref_fold(m, g, j, NULL, r, &extra);
			}
			else
				ref_fold(m, g, j, &d->cols[out], r, NULL);
		}
	}
	ref_finish(m);
}

static int
f8_close(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	if (a == b)
		return 1;
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* does GPU state s equal reference state r of aggregate j; why if not */
static int
state_same(const TMap *m, int j, const XpuAggState *s, const XpuAggState *r, char *why)
{
	int			kind = m->aggs[j].kind;
	int			type = m->agg_types[j];

	if (s->count != r->count || s->flags != r->flags)
	{
		sprintf(why, "count %ld/%ld flags %u/%u", (long) s->count, (long) r->count,
				s->flags, r->flags);
		return 0;
	}
	if (s->count == 0 || (s->flags & XPU_AGGF_OVERFLOW) || kind == XPU_AGG_COUNT ||
		kind == XPU_AGG_COUNT_STAR)
		return 1;
	if (kind == XPU_AGG_SUM_FLOAT4)
	{
		/* float4 additions in another order: a few float4 roundings apart */
		if (!(isnan(s->v.f4) && isnan(r->v.f4)) && s->v.f4 != r->v.f4 &&
			!(fabs(s->v.f4 - r->v.f4) <= 1e-5 * fmax(fabs(s->v.f4), fabs(r->v.f4))))
		{
			sprintf(why, "float4 %.9g / %.9g", s->v.f4, r->v.f4);
			return 0;
		}
		return 1;
	}
	if (kind == XPU_AGG_SUM_FLOAT || kind == XPU_AGG_MOMENTS || kind == XPU_AGG_VAR_FLOAT ||
		((kind == XPU_AGG_MIN || kind == XPU_AGG_MAX) && is_float_type(type)))
	{
		if (!f8_close(s->v.f8[0], r->v.f8[0]) ||
			((kind == XPU_AGG_MOMENTS || kind == XPU_AGG_VAR_FLOAT) &&
			 !f8_close(s->v.f8[1], r->v.f8[1])))
		{
			sprintf(why, "%.17g %.17g / %.17g %.17g", s->v.f8[0], s->v.f8[1],
					r->v.f8[0], r->v.f8[1]);
			return 0;
		}
		return 1;
	}
	if ((kind == XPU_AGG_MIN || kind == XPU_AGG_MAX) && type != XPU_T_NUMERIC)
	{
		if (s->v.i != r->v.i)
		{
			sprintf(why, "%ld / %ld", (long) s->v.i, (long) r->v.i);
			return 0;
		}
		return 1;
	}
	if (s->v.i128 != r->v.i128)
	{
		sprintf(why, "int128 %lx:%lx / %lx:%lx", (unsigned long) (s->v.i128 >> 64),
				(unsigned long) s->v.i128, (unsigned long) (r->v.i128 >> 64),
				(unsigned long) r->v.i128);
		return 0;
	}
	return 1;
}

/* does the GPU's map equal the reference's */
static int
maps_same(TMap *gpu, TMap *ref, const char *name)
{
	char		why[256];

	if (gpu->n != ref->n)
	{
		tap_diag("%s: %ld groups, reference %ld", name, (long) gpu->n, (long) ref->n);
		return 0;
	}
	for (int64_t i = 0; i < ref->cap; i++)
	{
		TGroup	   *r = &ref->g[i];
		TGroup	   *g;
		int64_t		before = gpu->n;

		if (!r->used)
			continue;
		g = tmap_get(gpu, r->key, r->len);
		if (gpu->n != before)
		{
			tap_diag("%s: a group of %u key bytes is missing", name, r->len);
			return 0;
		}
		for (int j = 0; j < ref->n_aggs; j++)
			if (!state_same(ref, j, &g->st[j], &r->st[j], why))
			{
				tap_diag("%s: aggregate %d (kind %d): %s", name, j, ref->aggs[j].kind, why);
				return 0;
			}
	}
	return 1;
}

/* ---------------- running a case ---------------- */

typedef struct TRunResult
{
	int			rc;
	XpuError	err;
	int			werr;
	char		msg[256];
	AggRun		run;
	double		wall_s;
} TRunResult;

/*
 * with odd_batches_only set, gpu_run_cancel runs over the file's odd record
 * batches only (a run that fills the cache with every other batch)
 */
static int	odd_batches_only;

/* runs q over the Arrow file path on the GPU into m; cancel: the run's flag (or NULL) */
static void
gpu_run_cancel(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
			   const int32_t *fields, const TQuery *q, uint32_t initial_groups, TMap *m,
			   TRunResult *res, volatile int *cancel)
{
	ArrowFile  *file;
	ArrowError	aerr;
	AggRunFile	f = {0};
	uint16_t	key_outs[4];
	int32_t    *batches;
	volatile int canceled = 0;
	GpuAggOptions opts = {initial_groups, 0};
	int64_t		t0;

	if (arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! %s: %s\n", path, aerr.message);
		exit(1);
	}
	batches = malloc(sizeof(int32_t) * (file->n_batches + 1));
	f.n_batches = 0;
	for (int i = 0; i < file->n_batches; i++)
		if (!odd_batches_only || i % 2 == 1)
			batches[f.n_batches++] = i;
	for (int k = 0; k < q->n_keys; k++)
		key_outs[k] = (uint16_t) q->keys[k];
	f.path = (char *) path;
	f.fd = file->fd;
	f.file = file;
	f.batches = batches;
	f.fields = fields;
	memset(res, 0, sizeof(*res));
	res->run.prog = prog;
	res->run.spec.n_keys = q->n_keys;
	res->run.spec.key_outs = key_outs;
	res->run.spec.n_aggs = q->n_aggs;
	res->run.spec.aggs = q->aggs;
	res->run.n_files = 1;
	res->run.files = &f;
	res->run.n_threads = 16;
	res->run.canceled = cancel != NULL ? cancel : (volatile int *) &canceled;
	t0 = svc_now_us(CLOCK_MONOTONIC);
	res->rc = gpu_agg_execute(gpu, &res->run, &opts, tmap_sink, m, &res->err, &res->werr,
							  res->msg, sizeof(res->msg));
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	res->run.files = NULL;
	free(batches);
	arrow_file_close(file);
}

static void
gpu_run(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
		const int32_t *fields, const TQuery *q, uint32_t initial_groups, TMap *m,
		TRunResult *res)
{
	gpu_run_cancel(gpu, path, prog, fields, q, initial_groups, m, res, NULL);
}

/*
 * check_cached_rerun: q over path once more, after a run that filled the
 * cache: every referenced byte must come from the cache, none from the
 * file, and the groups must still equal the reference
 */
static void
check_cached_rerun(const ServiceGpu *gpu, const char *path, const char *name,
				   const XpuProgram *prog, const int32_t *fields, const TQuery *q,
				   uint32_t initial_groups, TMap *ref, const uint8_t *types)
{
	TMap		got;
	TRunResult	res;

	tmap_init(&got, q->n_aggs, q->aggs, types, ref->cap / 2);
	gpu_run(gpu, path, prog, fields, q, initial_groups, &got, &res);
	if (res.rc != 0)
		tap_ok(0, "%s, from the GPU cache: run failed: rc %d, %s%s", name, res.rc,
			   res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, ref, name) && res.run.bytes_read == 0 && res.run.bytes_cached > 0,
			   "%s, from the GPU cache: groups equal the reference (%lu bytes cached, %lu read)",
			   name, (unsigned long) res.run.bytes_cached, (unsigned long) res.run.bytes_read);
	tmap_free(&got);
}

/* ---------------- the cases ---------------- */

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

/*
 * check_compressed: the same run over a zstd-compressed copy of the file
 * (pyarrow writes it), which the service loads with arrow_batch_load
 */
static void
check_compressed(const ServiceGpu *gpu, const char *path, const char *name,
				 const XpuProgram *prog, const int32_t *fields, const TQuery *q,
				 TMap *ref, const uint8_t *types)
{
	char		zpath[1100],
				cmd[3000];
	TMap		got;
	TRunResult	res;

	snprintf(zpath, sizeof(zpath), "%s.zstd", path);
	snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import sys, pyarrow.ipc as ipc; t = ipc.open_file(sys.argv[1]).read_all(); "
			 "w = ipc.new_file(sys.argv[2], t.schema, options=ipc.IpcWriteOptions(compression=\"zstd\")); "
			 "[w.write_batch(b) for b in t.to_batches(max_chunksize=300000)]; w.close()' %s %s",
			 path, zpath);
	if (system(cmd) != 0)
	{
		tap_ok(1, "%s, zstd-compressed # SKIP pyarrow could not write it", name);
		return;
	}
	tmap_init(&got, q->n_aggs, q->aggs, types, ref->cap / 2);
	gpu_run(gpu, zpath, prog, fields, q, 0, &got, &res);
	if (res.rc != 0)
		tap_ok(0, "%s, zstd-compressed: run failed: rc %d, %s%s", name, res.rc,
			   res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, ref, name), "%s, zstd-compressed: %ld groups equal the reference",
			   name, (long) ref->n);
	tmap_free(&got);
	if (res.rc == 0 && gpu_cache_capacity(0) > 0)
		check_cached_rerun(gpu, zpath, "zstd-compressed", prog, fields, q, 0, ref, types);
	unlink(zpath);
}

/*
 * check_case: q over d on the GPU (file written to dir) against the
 * reference; expect_err: the error code the run must end with (XPU_OK: it
 * must succeed and every group must match)
 */
static void
check_case(const ServiceGpu *gpu, const char *dir, const char *name, const TData *d,
		   const TQuery *q, uint32_t initial_groups, int64_t batch_rows, int expect_err,
		   int recompress)
{
	char		path[1024];
	uint8_t		types[24];
	TMap		ref, got;
	XpuError	ref_err;
	TRunResult	res;
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);

	snprintf(path, sizeof(path), "%s/%s.arrow", dir, name);
	tdata_write(d, path, batch_rows);
	for (int j = 0; j < q->n_aggs; j++)
		types[j] = q->aggs[j].out >= d->ncols ? XPU_T_INT8 : d->cols[q->aggs[j].out].type;
	tmap_init(&ref, q->n_aggs, q->aggs, types, d->n + 1);
	tmap_init(&got, q->n_aggs, q->aggs, types, d->n + 1);
	ref_run(d, q, &ref, &ref_err);
	if (gpu_cache_capacity(0) > 0)
	{
		/*
		 * every other batch into the cache first: the run below launches
		 * batches the cache holds beside batches it reads
		 */
		TMap		half;

		tmap_init(&half, q->n_aggs, q->aggs, types, d->n + 1);
		odd_batches_only = 1;
		gpu_run(gpu, path, prog, fields, q, initial_groups, &half, &res);
		odd_batches_only = 0;
		tmap_free(&half);
	}
	gpu_run(gpu, path, prog, fields, q, initial_groups, &got, &res);
	if (expect_err != XPU_OK)
		tap_ok(res.rc == expect_err && res.err.code == expect_err && ref_err.code == expect_err,
			   "%s: the run fails with error %d (got %d: %s%s)", name, expect_err, res.rc,
			   res.err.message, res.msg);
	else if (res.rc != 0)
		tap_ok(0, "%s: run failed: rc %d, %s%s", name, res.rc, res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, &ref, name) && res.run.rows_in == (uint64_t) d->n &&
			   (gpu_cache_capacity(0) == 0 || res.run.batches < 2 ||
				(res.run.bytes_cached > 0 && res.run.bytes_read > 0)),
			   "%s: %ld groups equal the reference (%ld rows, %ld passed, %lu batches, "
			   "%lu bytes from the cache, %lu read, %.3f s)",
			   name, (long) ref.n, (long) res.run.rows_in, (long) res.run.rows_passed,
			   (unsigned long) res.run.batches, (unsigned long) res.run.bytes_cached,
			   (unsigned long) res.run.bytes_read, res.wall_s);
	if (expect_err == XPU_OK && res.rc == 0 && gpu_cache_capacity(0) > 0)
		check_cached_rerun(gpu, path, name, prog, fields, q, initial_groups, &ref, types);
	if (expect_err == XPU_OK && recompress)
		check_compressed(gpu, path, name, prog, fields, q, &ref, types);
	tmap_free(&ref);
	tmap_free(&got);
	free(prog);
	unlink(path);
}

/* the checks of the file header */
static void
run_checks(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;

	/* no keys: a 2-conjunct qual, every aggregate kind, NULLs and edge values */
	gen_data(&d, 3000000, 50, 8, 0);
	query_init(&q);
	q.qual_a = COL_A;
	q.qual_lo = -500000;
	q.qual_b = COL_B;
	q.qual_hi = 10000;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_COUNT, COL_A);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_INT, COL_B);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_MIN, COL_A);
	agg(&q, XPU_AGG_MAX, COL_A);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MIN, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	agg(&q, XPU_AGG_COUNT, COL_S);
	check_case(gpu, dir, "nokey", &d, &q, 0, 500000, XPU_OK, 1);

	/* the same with more than the per-thread aggregates: the shared path */
	agg(&q, XPU_AGG_MAX, COL_B);
	agg(&q, XPU_AGG_MIN, COL_B);
	agg(&q, XPU_AGG_COUNT, COL_G);
	check_case(gpu, dir, "nokey_shared", &d, &q, 0, 500000, XPU_OK, 0);
	/* no row passes: no group */
	q.qual_lo = INT32_MAX;
	check_case(gpu, dir, "nokey_empty", &d, &q, 0, 500000, XPU_OK, 0);

	/* stddev/variance and sum(float4): no keys (per-thread states), then keys */
	query_init(&q);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_A);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_B);
	agg(&q, XPU_AGG_SUMSQ_NUMERIC, COL_N);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_G);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_H);
	agg(&q, XPU_AGG_SUM_FLOAT4, COL_H);
	check_case(gpu, dir, "variance_nokey", &d, &q, 0, 500000, XPU_OK, 0);
	for (int i = 0; i < 10; i++)	/* past the per-thread states: shared and global ones */
		agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	check_case(gpu, dir, "variance_nokey_shared", &d, &q, 0, 500000, XPU_OK, 0);
	q.n_keys = 2;
	q.keys[0] = COL_S;
	q.keys[1] = COL_K;
	check_case(gpu, dir, "variance_keys", &d, &q, 0, 500000, XPU_OK, 0);

	/* a text key and an int8 key (with NULLs): about a thousand groups */
	query_init(&q);
	q.n_keys = 2;
	q.keys[0] = COL_S;
	q.keys[1] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	agg(&q, XPU_AGG_MIN, COL_B);
	check_case(gpu, dir, "text_int_keys", &d, &q, 0, 500000, XPU_OK, 1);
	/* float keys: NaN, -0 and +0 group as PostgreSQL does; numeric keys */
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_G;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	check_case(gpu, dir, "float_key", &d, &q, 0, 500000, XPU_OK, 0);
	q.keys[0] = COL_N;
	check_case(gpu, dir, "numeric_key_many", &d, &q, 0, 500000, XPU_OK, 0);
	/* a program error: a / z with a zero divisor */
	tdata_free(&d);
	gen_data(&d, 1000000, 50, 8, 1000);
	query_init(&q);
	q.div_col = COL_A;
	q.div_by = COL_Z;
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_SUM_INT, d.ncols);	/* the DIV output */
	check_case(gpu, dir, "division_by_zero", &d, &q, 0, 250000, XPU_ERR_DIVISION_BY_ZERO, 0);
	tdata_free(&d);

	/* one group; then a million groups, with a table that must grow */
	gen_data(&d, 4000000, 1, 8, 0);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_MAX, COL_G);
	check_case(gpu, dir, "one_group", &d, &q, 0, 1000000, XPU_OK, 0);
	tdata_free(&d);
	gen_data(&d, 4000000, 1000000, 8, 0);
	check_case(gpu, dir, "million_groups", &d, &q, 0, 1000000, XPU_OK, 0);
	check_case(gpu, dir, "million_groups_table_full", &d, &q, 4096, 1000000, XPU_OK, 0);
	tdata_free(&d);

	/*
	 * three groups and the NULL one, a qual and every aggregate kind: the
	 * lanes of a warp share their groups' states (kern_agg.cu's
	 * gagg_warp_update, lanes of other groups and lanes whose row fails the
	 * qual or whose argument is NULL among them)
	 */
	gen_data(&d, 3000000, 3, 8, 0);
	query_init(&q);
	q.qual_a = COL_A;
	q.qual_lo = -700000;
	q.qual_b = COL_B;
	q.qual_hi = 20000;
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_COUNT, COL_G);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_SUM_FLOAT4, COL_H);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_B);
	agg(&q, XPU_AGG_SUMSQ_NUMERIC, COL_N);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_G);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	agg(&q, XPU_AGG_MIN, COL_A);
	agg(&q, XPU_AGG_MAX, COL_B);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MIN, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	check_case(gpu, dir, "few_groups", &d, &q, 0, 500000, XPU_OK, 0);
	tdata_free(&d);

	/* numeric sums past int128 are flagged; sums whose parts pass it are not */
	gen_data(&d, 300000, 3, 0, 0);
	for (int64_t r = 0; r < d.n; r++)
	{
		__int128	big = (__int128) 1000000000000000000LL * 100000000000000000LL * 99;

		d.cols[COL_K].i[r] = r % 3;
		d.cols[COL_N].n[r] = r % 3 == 0 ? big : r % 3 == 1 ? ((r / 3) % 2 ? big : -big) : r;
	}
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	check_case(gpu, dir, "numeric_overflow", &d, &q, 0, 100000, XPU_OK, 0);
	tdata_free(&d);
}

/* ---------------- the column cache ---------------- */

/* one file and query of the cache checks, with its reference */
typedef struct TCacheCase
{
	char		path[1024];
	TQuery		q;
	XpuProgram *prog;
	int32_t		fields[8];
	uint8_t		types[24];
	TMap		ref;
} TCacheCase;

/* a text and an int8 key, count, sums, min/max: d written to path */
static void
cache_case_init(TCacheCase *c, const char *dir, const char *name, const TData *d,
				int64_t batch_rows)
{
	XpuError	err;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s/%s.arrow", dir, name);
	query_init(&c->q);
	c->q.n_keys = 2;
	c->q.keys[0] = COL_S;
	c->q.keys[1] = COL_K;
	agg(&c->q, XPU_AGG_COUNT_STAR, -1);
	agg(&c->q, XPU_AGG_SUM_INT, COL_A);
	agg(&c->q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&c->q, XPU_AGG_MAX, COL_G);
	c->prog = build_program(d, &c->q, c->fields);
	for (int j = 0; j < c->q.n_aggs; j++)
		c->types[j] = d->cols[c->q.aggs[j].out].type;
	tdata_write(d, c->path, batch_rows);
	tmap_init(&c->ref, c->q.n_aggs, c->q.aggs, c->types, d->n + 1);
	ref_run(d, &c->q, &c->ref, &err);
}

static void
cache_case_free(TCacheCase *c)
{
	tmap_free(&c->ref);
	free(c->prog);
	unlink(c->path);
}

/* runs c; 1 when the groups equal its reference (res filled) */
static int
cache_case_run(const ServiceGpu *gpu, TCacheCase *c, TRunResult *res, const char *name)
{
	TMap		got;
	int			ok;

	tmap_init(&got, c->q.n_aggs, c->q.aggs, c->types, c->ref.cap / 2);
	gpu_run(gpu, c->path, c->prog, c->fields, &c->q, 0, &got, res);
	ok = res->rc == 0 && maps_same(&got, &c->ref, name);
	if (res->rc != 0)
		tap_diag("%s: run failed: rc %d, %s%s", name, res->rc, res->err.message, res->msg);
	tmap_free(&got);
	return ok;
}

/*
 * a file replaced (rename of a new file over it) and then rewritten in
 * place with the same size: never answered from the old contents
 */
static void
check_cache_stale(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c1, c2, c3;
	TRunResult	res;
	char		tmp[1100];
	struct stat st2, st3;
	int			ok;

	gen_data(&d, 1000000, 40, 5, 0);
	cache_case_init(&c1, dir, "stale", &d, 200000);
	ok = cache_case_run(gpu, &c1, &res, "stale v1") && res.run.bytes_read > 0;
	ok = ok && cache_case_run(gpu, &c1, &res, "stale v1 again") && res.run.bytes_read == 0;
	tap_ok(ok, "cache: a file's second run is served from the cache");
	/* new contents, renamed over the path (a new inode) */
	tdata_free(&d);
	gen_data(&d, 1000000, 40, 5, 0);
	cache_case_init(&c2, dir, "stale_new", &d, 200000);
	snprintf(tmp, sizeof(tmp), "%s", c2.path);
	snprintf(c2.path, sizeof(c2.path), "%s", c1.path);
	ok = rename(tmp, c1.path) == 0 && cache_case_run(gpu, &c2, &res, "stale v2") &&
		res.run.bytes_cached == 0;
	tap_ok(ok, "cache: a file replaced by rename gives the new answer (%lu bytes cached)",
		   (unsigned long) res.run.bytes_cached);
	ok = cache_case_run(gpu, &c2, &res, "stale v2 again") && res.run.bytes_read == 0;
	tap_ok(ok, "cache: the replaced file's second run is served from the cache");
	/* the same size rewritten in place (same inode): one value changed */
	stat(c1.path, &st2);
	for (int64_t r = 0; r < d.n; r += 1000)
		d.cols[COL_A].i[r] = (d.cols[COL_A].i[r] + 12345) % 1000000;
	cache_case_init(&c3, dir, "stale_same_size", &d, 200000);
	unlink(c3.path);
	snprintf(c3.path, sizeof(c3.path), "%s", c1.path);
	tdata_write(&d, c3.path, 200000);
	stat(c3.path, &st3);
	ok = st2.st_ino == st3.st_ino && st2.st_size == st3.st_size &&
		cache_case_run(gpu, &c3, &res, "stale v3") && res.run.bytes_cached == 0;
	tap_ok(ok, "cache: a file rewritten in place with the same size (same inode: %s) "
		   "gives the new answer", st2.st_ino == st3.st_ino ? "yes" : "no");
	c2.path[0] = c3.path[0] = '\0';
	cache_case_free(&c1);
	cache_case_free(&c2);
	cache_case_free(&c3);
	tdata_free(&d);
}

/* a cache far smaller than the data: runs evict, stay correct, stay under the size */
static void
check_cache_tiny(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c;
	TRunResult	res;
	GpuCacheStats st;
	int			ok = 1;

	gpu_cache_configure(gpu, 6 << 20);
	gen_data(&d, 2000000, 1000, 5, 0);
	cache_case_init(&c, dir, "tiny", &d, 250000);
	for (int i = 0; i < 3; i++)
		ok &= cache_case_run(gpu, &c, &res, "tiny cache");
	gpu_cache_stats(0, &st);
	tap_ok(ok && st.evictions > 0 && st.used <= st.capacity,
		   "cache: a 6 MiB cache evicts (%lu evictions, %lu of %lu bytes used) and the "
		   "answers stay right", (unsigned long) st.evictions, (unsigned long) st.used,
		   (unsigned long) st.capacity);
	cache_case_free(&c);
	tdata_free(&d);
}

typedef struct TCacheThread
{
	const ServiceGpu *gpu;
	TCacheCase *cases;
	int			n_cases;
	int			id;
	int			failed;
} TCacheThread;

static void *
cache_thread(void *arg)
{
	TCacheThread *t = arg;

	for (int i = 0; i < 8; i++)
	{
		TRunResult	res;

		if (!cache_case_run(t->gpu, &t->cases[(t->id + i) % t->n_cases], &res, "concurrent"))
			t->failed++;
	}
	return NULL;
}

/* 4 threads share a cache that holds about half of the data */
static void
check_cache_concurrent(const ServiceGpu *gpu, const char *dir)
{
	TData		d[2];
	TCacheCase	c[2];
	TCacheThread t[4];
	pthread_t	th[4];
	GpuCacheStats st;
	int			failed = 0;

	gen_data(&d[0], 2000000, 500, 5, 0);
	gen_data(&d[1], 2000000, 50000, 5, 0);
	cache_case_init(&c[0], dir, "conc0", &d[0], 250000);
	cache_case_init(&c[1], dir, "conc1", &d[1], 250000);
	gpu_cache_configure(gpu, 100 << 20);
	for (int i = 0; i < 4; i++)
	{
		t[i] = (TCacheThread) {gpu, c, 2, i, 0};
		pthread_create(&th[i], NULL, cache_thread, &t[i]);
	}
	for (int i = 0; i < 4; i++)
	{
		pthread_join(th[i], NULL);
		failed += t[i].failed;
	}
	gpu_cache_stats(0, &st);
	tap_ok(failed == 0 && st.used <= st.capacity,
		   "cache: 4 threads x 8 runs over 2 files share a 100 MiB cache: %d wrong "
		   "(%lu hits, %lu misses, %lu evictions)", failed, (unsigned long) st.hits,
		   (unsigned long) st.misses, (unsigned long) st.evictions);
	for (int i = 0; i < 2; i++)
	{
		cache_case_free(&c[i]);
		tdata_free(&d[i]);
	}
}

/*
 * the device's memory taken by the cache and a hog: a run must evict
 * cache entries for its own buffers and still succeed
 */
static void
check_cache_oom(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c1, c2;
	TRunResult	res;
	CUdeviceptr hog[4096];
	int			n_hog = 0,
				ok;
	GpuCacheStats before, after;
	CUcontext	ctx;
	TData		d2;

	gpu_cache_configure(gpu, -1);
	gen_data(&d, 4000000, 1000, 5, 0);
	gen_data(&d2, 200000, 1000, 5, 0);
	cache_case_init(&c1, dir, "oom_fill", &d, 250000);
	ok = cache_case_run(gpu, &c1, &res, "oom fill");
	cache_case_init(&c2, dir, "oom_run", &d2, 50000);
	gpu_drv.cuCtxPushCurrent(gpu_device_context(0));
	for (size_t chunk = (size_t) 1 << 30; chunk >= (1 << 20) && n_hog < 4096; )
		if (gpu_drv.cuMemAlloc(&hog[n_hog], chunk) == CUDA_SUCCESS)
			n_hog++;
		else
			chunk /= 2;
	gpu_cache_stats(0, &before);
	ok = ok && cache_case_run(gpu, &c2, &res, "oom run");
	gpu_cache_stats(0, &after);
	for (int i = 0; i < n_hog; i++)
		gpu_drv.cuMemFree(hog[i]);
	gpu_drv.cuCtxPopCurrent(&ctx);
	tap_ok(ok && after.evictions > before.evictions,
		   "cache: with the device's memory full, a run evicts cache entries (%lu) and succeeds",
		   (unsigned long) (after.evictions - before.evictions));
	cache_case_free(&c1);
	cache_case_free(&c2);
	tdata_free(&d);
	tdata_free(&d2);
}

static void
run_cache_checks(const ServiceGpu *gpu, const char *dir)
{
	check_cache_stale(gpu, dir);
	check_cache_tiny(gpu, dir);
	check_cache_concurrent(gpu, dir);
	check_cache_oom(gpu, dir);
	gpu_cache_configure(gpu, -1);
}

/* ---------------- HLL: the GPU against the CPU engine ---------------- */

/*
 * The HLL checks run each query twice over the same file and program: on
 * the GPU through gpu_agg_run (the service's path: the GPU's groups and
 * sketches folded into a CPU table), and on the CPU engine (xpu_cpu_exec
 * and xpu_agg_table_update, as the service's workers run it, on one
 * thread); both tables are finished and every group's states and exported
 * sketches (xpu_agg_extra_export: explicit hashes or registers, what
 * AGG_RESULT carries and the backend turns into PostgreSQL's sketch) must
 * be equal byte for byte.
 */

#define HCOL_G	0				/* int4 group key */
#define HCOL_I	1				/* int8 */
#define HCOL_F	2				/* float8, with -0, NaN and infinities */
#define HCOL_T	3				/* text of 0 to 40 bytes */
#define HCOL_D	4				/* date */
#define HCOL_N	5				/* numeric(38,2) */

/*
 * HLL data: n rows whose argument columns take (about) n_distinct values
 * each (0: every value NULL; else 5% NULL), group key of n_groups values
 * (1% NULL when n_groups > 1); *pool receives the text values' storage
 */
static void
gen_hll_data(TData *d, int64_t n, int64_t n_distinct, int64_t n_groups, char **pool)
{
	static const double fedges[] = {-0.0, 0.0, NAN, INFINITY, -INFINITY};
	TCol	   *g, *i, *f, *t, *dt, *nu;
	int64_t		n_text = n_distinct > 0 ? n_distinct : 1;

	memset(d, 0, sizeof(*d));
	d->n = n;
	g = tcol_add(d, "g", XPU_T_INT4);
	i = tcol_add(d, "i", XPU_T_INT8);
	f = tcol_add(d, "f", XPU_T_FLOAT8);
	t = tcol_add(d, "t", XPU_T_TEXT);
	dt = tcol_add(d, "d", XPU_T_DATE);
	nu = tcol_add(d, "n", XPU_T_NUMERIC);
	*pool = malloc((size_t) n_text * 48);
	for (int64_t v = 0; v < n_text; v++)
		snprintf(*pool + v * 48, 48, v == 0 ? "" : v % 7 == 0 ?
				 "a longer text value number %ld, padded" : "t%ld", (long) v);
	for (int64_t r = 0; r < n; r++)
	{
		int64_t		v = n_distinct > 0 ? (int64_t) (rnd() % (uint64_t) n_distinct) : 0;
		int			null_pct = n_distinct > 0 ? 5 : 100;

		g->null[r] = n_groups > 1 && rnd() % 100 == 0;
		g->i[r] = n_groups > 1 ? (int64_t) (rnd() % (uint64_t) n_groups) : 0;
		i->null[r] = (int) (rnd() % 100) < null_pct;
		i->i[r] = (int64_t) ((uint64_t) v * 2654435761u % (UINT64_C(1) << 40)) - ((int64_t) 1 << 39);
		f->null[r] = (int) (rnd() % 100) < null_pct;
		f->f[r] = rnd() % 100 == 0 ? fedges[rnd() % 5] : (double) v * 0.5 - 1000.0;
		t->null[r] = (int) (rnd() % 100) < null_pct;
		t->s[r] = *pool + v * 48;
		dt->null[r] = (int) (rnd() % 100) < null_pct;
		dt->i[r] = v - 500000;
		nu->null[r] = (int) (rnd() % 100) < null_pct;
		nu->n[r] = (__int128) v * 100 + 25;
	}
}

/* adds an HLL aggregate over column col at precision p, limit_mb MiB */
static void
agg_hll(TQuery *q, int col, int p, uint32_t limit_mb)
{
	agg(q, XPU_AGG_HLL, col);
	q->aggs[q->n_aggs - 1].param = (uint8_t) p;
	q->aggs[q->n_aggs - 1].limit = limit_mb;
}

/* the outcome of one engine's run of an HLL case */
typedef struct THllRun
{
	int			rc;				/* 0, -1 (werr, msg) or an XpuErrorCode (err) */
	XpuError	err;
	int			werr;
	char		msg[256];
	double		wall_s;
	uint64_t	rows_in;
	XpuAggTable *table;			/* finished; NULL unless rc is 0 */
} THllRun;

/* the XpuAggSpec of q (key_outs: room for its keys) */
static XpuAggSpec
hll_spec(const TQuery *q, uint16_t *key_outs)
{
	XpuAggSpec	spec;

	for (int k = 0; k < q->n_keys; k++)
		key_outs[k] = (uint16_t) q->keys[k];
	spec.n_keys = q->n_keys;
	spec.key_outs = key_outs;
	spec.n_aggs = q->n_aggs;
	spec.aggs = q->aggs;
	return spec;
}

/* finishes res->table (xpu_agg_table_finish, as agg.c's check_result) */
static void
hll_finish(THllRun *res)
{
	if (res->rc == 0 && !xpu_agg_table_finish(res->table, &res->err))
		res->rc = res->err.code;
	if (res->rc != 0 && res->table != NULL)
	{
		xpu_agg_table_free(res->table);
		res->table = NULL;
	}
}

/* q over the batches of file on the CPU engine into res->table */
static void
hll_cpu_batches(ArrowFile *file, const XpuProgram *prog, const int32_t *fields,
				THllRun *res)
{
	enum {SLICE = 16384};
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * SLICE);
	uint8_t    *mask = malloc(SLICE);
	XpuColumnData cols[12];
	bool		want[12];

	memset(want, 1, sizeof(want));
	for (int32_t b = 0; b < file->n_batches && res->rc == 0; b++)
	{
		ArrowBatch *batch;
		ArrowError	aerr;

		if (arrow_batch_load(file, b, want, &batch, &aerr) != ARROW_OK)
		{
			printf("Bail out! loading a batch: %s\n", aerr.message);
			exit(1);
		}
		for (int k = 0; k < prog->n_cols; k++)
		{
			const ArrowArray *a = &batch->columns[fields[k]];

			cols[k].validity = a->validity;
			cols[k].values = a->field->type.id == ARROW_TYPE_UTF8 ? a->offsets : a->values;
			cols[k].data = (const char *) a->data;
		}
		for (int64_t row0 = 0; row0 < batch->n_rows && res->rc == 0; row0 += SLICE)
		{
			int64_t		n = batch->n_rows - row0 < SLICE ? batch->n_rows - row0 : SLICE;
			XpuChunk	chunk = {n, prog->n_cols, 0, cols};
			XpuResult	r = {n, mask, values, nulls};

			for (int k = 0; k < prog->n_cols; k++)
				cols[k].offset = row0;
			if (xpu_cpu_exec(prog, &chunk, &r, ws, &res->err) != XPU_OK ||
				!xpu_agg_table_update(res->table, &r, &res->err))
				res->rc = res->err.code;
		}
		res->rows_in += batch->n_rows;
		arrow_batch_free(batch);
	}
	free(ws);
	free(values);
	free(nulls);
	free(mask);
}

/* q over the Arrow file path on the CPU engine (one thread) */
static void
hll_cpu_run(const char *path, const XpuProgram *prog, const int32_t *fields,
			const TQuery *q, THllRun *res)
{
	uint16_t	key_outs[4];
	XpuAggSpec	spec = hll_spec(q, key_outs);
	ArrowFile  *file;
	ArrowError	aerr;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	memset(res, 0, sizeof(*res));
	if ((res->table = xpu_agg_table_create(prog, &spec, &res->err)) == NULL)
	{
		res->rc = -1;
		return;
	}
	if (arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! %s: %s\n", path, aerr.message);
		exit(1);
	}
	hll_cpu_batches(file, prog, fields, res);
	arrow_file_close(file);
	hll_finish(res);
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
}

/* q over the Arrow file path on the GPU with gpu_agg_run; cancel: the run's flag or NULL */
static void
hll_gpu_run(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
			const int32_t *fields, const TQuery *q, volatile int *cancel, THllRun *res)
{
	uint16_t	key_outs[4];
	ArrowFile  *file;
	ArrowError	aerr;
	AggRunFile	f;
	AggRun		run;
	int32_t    *batches;
	volatile int canceled = 0;
	int64_t		t0;

	memset(res, 0, sizeof(*res));
	memset(&run, 0, sizeof(run));
	run.spec = hll_spec(q, key_outs);
	if ((res->table = xpu_agg_table_create(prog, &run.spec, &res->err)) == NULL)
	{
		res->rc = -1;
		return;
	}
	if (arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! %s: %s\n", path, aerr.message);
		exit(1);
	}
	batches = malloc(sizeof(int32_t) * (file->n_batches + 1));
	for (int i = 0; i < file->n_batches; i++)
		batches[i] = i;
	memset(&f, 0, sizeof(f));
	f.path = (char *) path;
	f.fd = file->fd;
	f.file = file;
	f.n_batches = (uint32_t) file->n_batches;
	f.batches = batches;
	f.fields = fields;
	run.prog = prog;
	run.n_files = 1;
	run.files = &f;
	run.n_threads = 16;
	run.canceled = cancel != NULL ? cancel : (volatile int *) &canceled;
	t0 = svc_now_us(CLOCK_MONOTONIC);
	res->rc = gpu_agg_run(gpu, &run, res->table, &res->err, &res->werr, res->msg,
						  sizeof(res->msg));
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	res->rows_in = run.rows_in;
	free(batches);
	arrow_file_close(file);
	hll_finish(res);
}

static const XpuAggTable *hll_sort_table;

/* qsort order of group indexes: by key bytes */
static int
hll_group_cmp(const void *a, const void *b)
{
	const uint8_t *ka, *kb;
	uint32_t	la, lb;
	const XpuAggState *s;
	int			c;

	xpu_agg_table_group(hll_sort_table, *(const int64_t *) a, &ka, &la, &s);
	xpu_agg_table_group(hll_sort_table, *(const int64_t *) b, &kb, &lb, &s);
	c = memcmp(ka, kb, la < lb ? la : lb);
	return c != 0 ? c : (la > lb) - (la < lb);
}

/* the group indexes of t in key order (malloc'd) */
static int64_t *
hll_sorted_groups(const XpuAggTable *t)
{
	int64_t		n = xpu_agg_table_ngroups(t);
	int64_t    *idx = malloc(sizeof(int64_t) * (n + 1));

	for (int64_t i = 0; i < n; i++)
		idx[i] = i;
	hll_sort_table = t;
	qsort(idx, n, sizeof(int64_t), hll_group_cmp);
	return idx;
}

/*
 * do states sg (GPU) and sc (CPU) of aggregate kind `kind` export the same
 * bytes; *dense counts the register sketches, *explicit the explicit ones
 */
static int
hll_state_same(int kind, const XpuAggState *sg, const XpuAggState *sc, char *why,
			   int64_t *dense, int64_t *explicit)
{
	const uint8_t *dg, *dc;
	int			fg, fc;
	uint32_t	lg, lc;

	if (sg->count != sc->count || sg->flags != sc->flags)
		return sprintf(why, "count %ld/%ld flags %u/%u", (long) sg->count,
					   (long) sc->count, sg->flags, sc->flags), 0;
	if (kind != XPU_AGG_HLL)
		return 1;
	lg = xpu_agg_extra_export(kind, sg, &dg, &fg);
	lc = xpu_agg_extra_export(kind, sc, &dc, &fc);
	if (lg != lc || fg != fc || (lg > 0 && memcmp(dg, dc, lg) != 0))
		return sprintf(why, "sketch of %u bytes (%s) / %u bytes (%s)%s", lg,
					   fg ? "registers" : "hashes", lc, fc ? "registers" : "hashes",
					   lg == lc && fg == fc ? ": the bytes differ" : ""), 0;
	*(fg ? dense : explicit) += 1;
	return 1;
}

/* do finished tables g (GPU) and c (CPU) of q hold the same groups, byte for byte */
static int
hll_tables_same(const XpuAggTable *g, const XpuAggTable *c, const TQuery *q,
				const char *name, int64_t *dense, int64_t *explicit)
{
	int64_t		n = xpu_agg_table_ngroups(c);
	int64_t    *ig, *ic;
	char		why[256];
	int			ok = 1;

	if (xpu_agg_table_ngroups(g) != n)
	{
		tap_diag("%s: %ld groups on the GPU, %ld on the CPU", name,
				 (long) xpu_agg_table_ngroups(g), (long) n);
		return 0;
	}
	ig = hll_sorted_groups(g);
	ic = hll_sorted_groups(c);
	for (int64_t i = 0; i < n && ok; i++)
	{
		const uint8_t *kg, *kc;
		uint32_t	lg, lc;
		const XpuAggState *sg, *sc;

		xpu_agg_table_group(g, ig[i], &kg, &lg, &sg);
		xpu_agg_table_group(c, ic[i], &kc, &lc, &sc);
		if (lg != lc || memcmp(kg, kc, lg) != 0)
		{
			tap_diag("%s: the groups' keys differ (%u / %u bytes)", name, lg, lc);
			ok = 0;
		}
		for (int j = 0; j < q->n_aggs && ok; j++)
			if (!hll_state_same(q->aggs[j].kind, &sg[j], &sc[j], why, dense, explicit))
			{
				tap_diag("%s: group %ld, aggregate %d (p = %d): %s", name, (long) i, j,
						 q->aggs[j].param, why);
				ok = 0;
			}
	}
	free(ig);
	free(ic);
	return ok;
}

/* prints why a run failed */
static void
hll_run_diag(const char *name, const char *engine, const THllRun *r)
{
	tap_diag("%s: the %s run failed: rc %d (werr %d) %s%s", name, engine, r->rc, r->werr,
			 r->err.message, r->msg);
}

/*
 * check_hll_case: q over d on the GPU and on the CPU engine: both must
 * succeed (expect_rc 0) with byte-identical groups, or both end with
 * XpuErrorCode expect_rc
 */
static void
check_hll_case(const ServiceGpu *gpu, const char *dir, const char *name, const TData *d,
			   const TQuery *q, int64_t batch_rows, int expect_rc)
{
	char		path[1024];
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);
	THllRun		rg, rc;
	int64_t		dense = 0,
				explicit = 0;

	snprintf(path, sizeof(path), "%s/hll_%s.arrow", dir, name);
	tdata_write(d, path, batch_rows);
	hll_gpu_run(gpu, path, prog, fields, q, NULL, &rg);
	hll_cpu_run(path, prog, fields, q, &rc);
	if (expect_rc != 0)
		tap_ok(rg.rc == expect_rc && rc.rc == expect_rc,
			   "hll %s: both engines end with error %d (GPU %d: %s%s; CPU %d: %s)", name,
			   expect_rc, rg.rc, rg.err.message, rg.msg, rc.rc, rc.err.message);
	else if (rg.rc != 0 || rc.rc != 0)
	{
		if (rg.rc != 0)
			hll_run_diag(name, "GPU", &rg);
		if (rc.rc != 0)
			hll_run_diag(name, "CPU", &rc);
		tap_ok(0, "hll %s: both engines run it", name);
	}
	else
		tap_ok(hll_tables_same(rg.table, rc.table, q, name, &dense, &explicit) &&
			   rg.rows_in == (uint64_t) d->n,
			   "hll %s: %ld groups byte-identical on the GPU and the CPU engine "
			   "(%ld register and %ld explicit sketches; GPU %.3f s, CPU %.3f s)", name,
			   (long) xpu_agg_table_ngroups(rc.table), (long) dense, (long) explicit,
			   rg.wall_s, rc.wall_s);
	xpu_agg_table_free(rg.table);
	xpu_agg_table_free(rc.table);
	free(prog);
	unlink(path);
}

/* an HLL query: count(*) and HLL over int8, float8, text and date at p = 4 and 14
 * (and 18 over int8 and text with p18), grouped by the key unless n_groups is 0 */
static void
hll_query(TQuery *q, int64_t n_groups, int p18, uint32_t limit_mb)
{
	static const int cols[] = {HCOL_I, HCOL_F, HCOL_T, HCOL_D};

	query_init(q);
	if (n_groups > 0)
	{
		q->n_keys = 1;
		q->keys[0] = HCOL_G;
	}
	agg(q, XPU_AGG_COUNT_STAR, -1);
	for (int c = 0; c < 4; c++)
	{
		agg_hll(q, cols[c], 4, limit_mb);
		agg_hll(q, cols[c], 14, limit_mb);
	}
	if (p18)
	{
		agg_hll(q, HCOL_I, 18, limit_mb);
		agg_hll(q, HCOL_T, 18, limit_mb);
	}
}

/* the matrix: 0 .. 10^6 distinct values, no keys, 5 and 10^4 groups */
static void
check_hll_matrix(const ServiceGpu *gpu, const char *dir)
{
	static const int64_t distinct[] = {0, 1, 5, 1000, 100000, 1000000};
	static const int64_t groups[] = {0, 5, 10000};

	for (int di = 0; di < 6; di++)
		for (int gi = 0; gi < 3; gi++)
		{
			int64_t		nd = distinct[di];
			int64_t		n = nd == 0 ? 100000 : nd * 3 < 200000 ? 200000 :
				nd * 3 > 3000000 ? 3000000 : nd * 3;
			TData		d;
			TQuery		q;
			char	   *pool;
			char		name[64];

			gen_hll_data(&d, n, nd, groups[gi] > 0 ? groups[gi] : 1, &pool);
			hll_query(&q, groups[gi], groups[gi] < 10000, 1024);
			snprintf(name, sizeof(name), "%ld_distinct_%ld_groups", (long) nd,
					 (long) (groups[gi] > 0 ? groups[gi] : 1));
			check_hll_case(gpu, dir, name, &d, &q, 500000, 0);
			tdata_free(&d);
			free(pool);
		}
}

/*
 * p = 18 over 10^4 groups: the sketches (1.5 MiB a group) hold the GPU
 * table to a few hundred groups, so it fills and is flushed many times;
 * then the memory limits: past pg_warp.gpupreagg_hll_memory both engines
 * fall back, and a limit below one group's GPU sketches falls back on the GPU
 */
static void
check_hll_limits(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	THllRun		rg;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];

	gen_hll_data(&d, 1000000, 100000, 10000, &pool);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = HCOL_G;
	agg(&q, XPU_AGG_COUNT, HCOL_I);
	agg_hll(&q, HCOL_I, 18, 1024);
	agg_hll(&q, HCOL_T, 18, 1024);
	check_hll_case(gpu, dir, "p18_10000_groups_table_full", &d, &q, 250000, 0);
	tdata_free(&d);
	free(pool);

	gen_hll_data(&d, 3000000, 1000000, 10000, &pool);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = HCOL_G;
	agg_hll(&q, HCOL_I, 14, 1);
	check_hll_case(gpu, dir, "limit_1MiB_fallback", &d, &q, 500000, XPU_ERR_FALLBACK);
	tdata_free(&d);
	free(pool);

	gen_hll_data(&d, 100000, 5, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_I, 18, 1);
	agg_hll(&q, HCOL_T, 18, 1);
	prog = build_program(&d, &q, fields);
	snprintf(path, sizeof(path), "%s/hll_gpu_limit.arrow", dir);
	tdata_write(&d, path, 50000);
	hll_gpu_run(gpu, path, prog, fields, &q, NULL, &rg);
	tap_ok(rg.rc == XPU_ERR_FALLBACK,
		   "hll: two p = 18 sketches (1.5 MiB a group on the GPU) under a 1 MiB limit fall "
		   "back on the GPU (rc %d: %s%s)", rg.rc, rg.err.message, rg.msg);
	xpu_agg_table_free(rg.table);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

/* numeric arguments: neither engine takes them (PostgreSQL computes hll_count(numeric)) */
static void
check_hll_numeric(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	TRunResult	res;
	TMap		m;
	uint8_t		types[4] = {XPU_T_NUMERIC};
	uint16_t	key_outs[4];
	XpuAggSpec	spec;
	XpuAggTable *t;
	XpuError	err;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];

	gen_hll_data(&d, 10000, 100, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_N, 14, 1024);
	prog = build_program(&d, &q, fields);
	spec = hll_spec(&q, key_outs);
	t = xpu_agg_table_create(prog, &spec, &err);
	snprintf(path, sizeof(path), "%s/hll_numeric.arrow", dir);
	tdata_write(&d, path, 5000);
	tmap_init(&m, q.n_aggs, q.aggs, types, 16);
	gpu_run(gpu, path, prog, fields, &q, 0, &m, &res);
	tap_ok(t == NULL && res.rc == -1 && res.werr == WARP_ERR_UNSUPPORTED,
		   "hll: a numeric argument is refused by both engines (CPU: %s; GPU: %s)",
		   t == NULL ? err.message : "taken", res.msg);
	xpu_agg_table_free(t);
	tmap_free(&m);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

typedef struct THllCancel
{
	volatile int flag;
	int64_t		after_us;
} THllCancel;

static void *
hll_cancel_thread(void *arg)
{
	THllCancel *c = arg;

	usleep((useconds_t) c->after_us);
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * cancel: an HLL run over 20 M rows canceled 5 ms in ends with
 * WARP_ERR_CANCELED; the same run afterwards equals the CPU engine's
 */
static void
check_hll_cancel(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	THllRun		rg, rc;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];
	THllCancel	c = {0, 5000};
	pthread_t	th;
	int64_t		dense = 0,
				explicit = 0;

	gen_hll_data(&d, 20000000, 1000000, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_I, 14, 1024);
	prog = build_program(&d, &q, fields);
	snprintf(path, sizeof(path), "%s/hll_cancel.arrow", dir);
	tdata_write(&d, path, 500000);
	pthread_create(&th, NULL, hll_cancel_thread, &c);
	hll_gpu_run(gpu, path, prog, fields, &q, &c.flag, &rg);
	pthread_join(th, NULL);
	tap_ok(rg.rc == -1 && rg.werr == WARP_ERR_CANCELED,
		   "hll: a run canceled 5 ms in ends canceled (rc %d, werr %d: %s, after %.3f s)",
		   rg.rc, rg.werr, rg.msg, rg.wall_s);
	xpu_agg_table_free(rg.table);
	hll_gpu_run(gpu, path, prog, fields, &q, NULL, &rg);
	hll_cpu_run(path, prog, fields, &q, &rc);
	tap_ok(rg.rc == 0 && rc.rc == 0 &&
		   hll_tables_same(rg.table, rc.table, &q, "after cancel", &dense, &explicit),
		   "hll: the run after the cancel equals the CPU engine's (20 M rows: GPU %.3f s = "
		   "%.2f G rows/s end to end, CPU one thread %.3f s)", rg.wall_s,
		   rg.wall_s > 0 ? d.n / rg.wall_s / 1e9 : 0.0, rc.wall_s);
	xpu_agg_table_free(rg.table);
	xpu_agg_table_free(rc.table);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

/* the HLL checks (gpu_aggcheck FATBIN DIR hll runs only these) */
static void
run_hll_checks(const ServiceGpu *gpu, const char *dir)
{
	check_hll_matrix(gpu, dir);
	check_hll_limits(gpu, dir);
	check_hll_numeric(gpu, dir);
	check_hll_cancel(gpu, dir);
}

/* ---------------- the figures ---------------- */

/* GB/s of a pinned host-to-device copy of len bytes (best of 5) */
static double
pinned_copy_rate(size_t len)
{
	void	   *host;
	CUdeviceptr dev;
	CUstream	s;
	double		best = 0;
	CUcontext	ctx;

	gpu_drv.cuCtxPushCurrent(gpu_device_context(0));
	if (gpu_drv.cuMemAllocHost(&host, len) != CUDA_SUCCESS ||
		gpu_drv.cuMemAlloc(&dev, len) != CUDA_SUCCESS ||
		gpu_drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return 0;
	memset(host, 1, len);
	for (int i = 0; i < 5; i++)
	{
		int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);
		double		rate;

		gpu_drv.cuMemcpyHtoDAsync(dev, host, len, s);
		gpu_drv.cuStreamSynchronize(s);
		rate = len / 1e3 / (double) (svc_now_us(CLOCK_MONOTONIC) - t0);
		if (rate > best)
			best = rate;
	}
	gpu_drv.cuStreamDestroy(s);
	gpu_drv.cuMemFree(dev);
	gpu_drv.cuMemFreeHost(host);
	gpu_drv.cuCtxPopCurrent(&ctx);
	return best;
}

/* an SSB-like lineorder: quantity, discount, extendedprice, revenue,
 * supplycost int4, orderpriority text, shipmode text */
static void
gen_lineorder(TData *d, int64_t n)
{
	static const char *const prio[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"};
	static const char *const mode[] = {"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"};
	TCol	   *c[7];

	memset(d, 0, sizeof(*d));
	d->n = n;
	c[0] = tcol_add(d, "lo_quantity", XPU_T_INT4);
	c[1] = tcol_add(d, "lo_discount", XPU_T_INT4);
	c[2] = tcol_add(d, "lo_extendedprice", XPU_T_INT4);
	c[3] = tcol_add(d, "lo_revenue", XPU_T_INT4);
	c[4] = tcol_add(d, "lo_supplycost", XPU_T_INT4);
	c[5] = tcol_add(d, "lo_orderpriority", XPU_T_TEXT);
	c[6] = tcol_add(d, "lo_shipmode", XPU_T_TEXT);
	for (int64_t r = 0; r < n; r++)
	{
		c[0]->i[r] = (int64_t) (rnd() % 50) + 1;
		c[1]->i[r] = (int64_t) (rnd() % 11);
		c[2]->i[r] = (int64_t) (rnd() % 10000000) + 90000;
		c[3]->i[r] = (int64_t) (rnd() % 10000000);
		c[4]->i[r] = (int64_t) (rnd() % 100000) + 1000;
		c[5]->s[r] = prio[rnd() % 5];
		c[6]->s[r] = mode[rnd() % 7];
	}
}

/* one figure line of a run */
static void
bench_print(const char *name, const char *how, const TRunResult *r)
{
	printf("# %s, %s: %ld rows, %ld passed, %.1f MB read, %.1f MB from the GPU cache: "
		   "end to end %.2f ms = %.2f G rows/s; kernels %.2f ms = %.2f G rows/s; I/O %.2f ms\n",
		   name, how, (long) r->run.rows_in, (long) r->run.rows_passed,
		   r->run.bytes_read / 1e6, r->run.bytes_cached / 1e6, r->wall_s * 1e3,
		   r->run.rows_in / r->wall_s / 1e9, r->run.exec_us / 1e3,
		   r->run.rows_in / (r->run.exec_us / 1e6) / 1e9, r->run.io_us / 1e3);
}

/*
 * the figures for a query: the GPU cache off (the pinned buffers and the
 * page cache warmed by the run before), then cold (the cache empty: every
 * buffer is read from the page cache, copied and kept), then warm (best
 * of 5, every buffer from the GPU cache)
 */
static void
bench_query(const ServiceGpu *gpu, const char *path, const TData *d, const TQuery *q,
			const char *name)
{
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);
	uint8_t		types[24] = {0};
	TRunResult	res,
				best;

	memset(&best, 0, sizeof(best));
	best.wall_s = 1e9;
	for (int i = 0; i < 8; i++)
	{
		TMap		m;

		if (i == 0 || i == 2)
			gpu_cache_configure(gpu, i == 0 ? 0 : -1);
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		gpu_run(gpu, path, prog, fields, q, 0, &m, &res);
		if (res.rc != 0)
			printf("# %s failed: %d %s%s\n", name, res.rc, res.err.message, res.msg);
		if (i == 1 || i == 2)
			bench_print(name, i == 1 ? "GPU cache off" : "cold (filling the GPU cache)", &res);
		else if (i > 2 && res.rc == 0 && res.wall_s < best.wall_s)
			best = res;
		tmap_free(&m);
	}
	bench_print(name, "warm (best of 5)", &best);
	free(prog);
}

typedef struct TCancel
{
	volatile int flag;
	int64_t		after_us;
	int64_t		set_at;
} TCancel;

static void *
cancel_thread(void *arg)
{
	TCancel    *c = arg;

	usleep((useconds_t) c->after_us);
	c->set_at = svc_now_us(CLOCK_MONOTONIC);
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * the cancel latency inside one long kernel: d written as ONE record
 * batch, the query run warm from the cache, then again with a cancel
 * half-way through its kernel; prints the time from the cancel to the
 * run's return
 */
static void
bench_cancel(const ServiceGpu *gpu, const char *dir, const TData *d, const TQuery *q)
{
	char		path[1024];
	int32_t		fields[8];
	XpuProgram *prog = build_program(d, q, fields);
	uint8_t		types[24] = {0};
	TRunResult	res;
	TCancel		c;
	pthread_t	th;
	TMap		m;
	double		full_ms;

	snprintf(path, sizeof(path), "%s/one_batch.arrow", dir);
	tdata_write(d, path, d->n);
	for (int i = 0; i < 3; i++)
	{
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		gpu_run(gpu, path, prog, fields, q, 0, &m, &res);
		tmap_free(&m);
	}
	full_ms = res.wall_s * 1e3;
	printf("# cancel: one batch of %ld rows, warm: run %.2f ms, kernel %.2f ms\n",
		   (long) d->n, full_ms, res.run.exec_us / 1e3);
	for (int i = 0; i < 3; i++)
	{
		int64_t		t0;

		memset(&c, 0, sizeof(c));
		c.after_us = (int64_t) (full_ms * 1e3 / 2);
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		t0 = svc_now_us(CLOCK_MONOTONIC);
		pthread_create(&th, NULL, cancel_thread, &c);
		gpu_run_cancel(gpu, path, prog, fields, q, 0, &m, &res, &c.flag);
		pthread_join(th, NULL);
		printf("# cancel at %.2f ms into the run: rc %d werr %d (%s), returned %.3f ms after "
			   "the cancel (the whole run: %.2f ms)\n", (c.set_at - t0) / 1e3, res.rc, res.werr,
			   res.msg, (svc_now_us(CLOCK_MONOTONIC) - c.set_at) / 1e3 - 0.0, full_ms);
		tmap_free(&m);
	}
	free(prog);
	unlink(path);
}

/* is query name in the comma-separated list which (NULL: every query) */
static bool
bench_wants(const char *which, const char *name)
{
	size_t		n = strlen(name);

	if (which == NULL)
		return true;
	for (const char *p = which;; p++)
	{
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		if ((p = strchr(p, ',')) == NULL)
			return false;
	}
}

/*
 * the throughput figures of q1 .. q4 and the cancel latency; which (a
 * comma-separated list, NULL for all but the variants) picks queries,
 * among them q2 variants that take one cost at a time out of q2: q2c
 * (its keys, count(*) only) and q2i (its aggregates by one int key)
 */
static void
run_bench(const ServiceGpu *gpu, const char *dir, int64_t rows, int64_t batch_rows,
		  const char *which)
{
	char		path[1024];
	TData		d;
	TQuery		q;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	snprintf(path, sizeof(path), "%s/lineorder.arrow", dir);
	gen_lineorder(&d, rows);
	tdata_write(&d, path, batch_rows);
	printf("# wrote %ld rows in %.1f s; pinned host-to-GPU copy of 1 GiB: %.1f GB/s\n",
		   (long) rows, (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6, pinned_copy_rate(1 << 30));
	if (bench_wants(which, "q1"))
	{
		/* sum(extendedprice * discount) where discount > 0 and quantity < 25 */
		query_init(&q);
		q.qual_a = 1;
		q.qual_lo = 0;
		q.qual_b = 0;
		q.qual_hi = 25;
		q.mul_col = 2;
		q.mul_by = 1;
		agg(&q, XPU_AGG_SUM_INT, d.ncols);
		bench_query(gpu, path, &d, &q, "q1 (2-conjunct qual, sum, no keys)");
	}
	/* orderpriority, shipmode, count(*), sum(revenue), avg(quantity), max(supplycost) */
	query_init(&q);
	q.n_keys = 2;
	q.keys[0] = 5;
	q.keys[1] = 6;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	if (which != NULL && bench_wants(which, "q2c"))
		bench_query(gpu, path, &d, &q, "q2c (2 text keys, 35 groups, count(*) only)");
	agg(&q, XPU_AGG_SUM_INT, 3);
	agg(&q, XPU_AGG_SUM_INT, 0);
	agg(&q, XPU_AGG_COUNT, 0);
	agg(&q, XPU_AGG_MAX, 4);
	if (bench_wants(which, "q2"))
		bench_query(gpu, path, &d, &q, "q2 (2 text keys, 35 groups)");
	if (which != NULL && bench_wants(which, "q2i"))
	{
		q.n_keys = 1;
		q.keys[0] = 1;
		bench_query(gpu, path, &d, &q, "q2i (q2's aggregates by one int4 key, 11 groups)");
	}
	/* hll_count(lo_revenue): about 10 M distinct values; no keys, then orderpriority */
	query_init(&q);
	agg_hll(&q, 3, 14, 1024);
	if (bench_wants(which, "q3"))
		bench_query(gpu, path, &d, &q, "q3 (hll_count, p = 14, no keys)");
	q.n_keys = 1;
	q.keys[0] = 5;
	if (bench_wants(which, "q4"))
		bench_query(gpu, path, &d, &q, "q4 (hll_count, p = 14, 5 groups)");
	unlink(path);
	if (bench_wants(which, "cancel"))
	{
		TData		sub = d;	/* the first 60 M rows, as one batch */

		sub.n = rows < 60000000 ? rows : 60000000;
		bench_cancel(gpu, dir, &sub, &q);
	}
	tdata_free(&d);
}

/* ---------------- float2 (Float16 columns) against the CPU engine ---------------- */

/*
 * The float2 checks: GpuPreAgg hands a float2 key or aggregate argument
 * over as its exact float4 (codegen_proj_program's F2_TO_F4), so the
 * programs load Float16 columns as float2, may filter on them in float2
 * (NE_F2), and group and aggregate the widened values.  The GPU's groups
 * must equal those of the CPU engine (xpu_cpu_exec and xpu_agg.c's table,
 * what the service runs without a GPU) over the same file: -0 and 0 one
 * group, every NaN one group, NULLs, infinities, the extreme halves.
 */
#define F2_ROWS		200000
#define F2_BATCH	50000

static const double f2_keys[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 65504.0, -65504.0,
	0x1p-24, -0x1p-24, 1.0, -1.5, 0.25, 100.0};
#define F2_NKEYS	((int) (sizeof(f2_keys) / sizeof(f2_keys[0])))
#define F2_GROUPS	(F2_NKEYS - 2 + 1)	/* one NaN, one zero, and NULL */

/* writes the float2 file: k float16 (keys, NULLs), v float16 (values), g int32 */
static void
f2_write(const char *path)
{
	static const double vedges[] = {NAN, INFINITY, -INFINITY, -0.0, 65504.0, 0x1p-24};
	ArrowField	fields[3];
	ArrowSchema schema;
	ArrowBuilder *b[3];
	ArrowWriter *w;
	ArrowError	err;
	const char *names[3] = {"k", "v", "g"};

	memset(fields, 0, sizeof(fields));
	memset(&schema, 0, sizeof(schema));
	for (int c = 0; c < 3; c++)
	{
		fields[c].name = (char *) names[c];
		fields[c].nullable = true;
		fields[c].type.id = c < 2 ? ARROW_TYPE_FLOAT16 : ARROW_TYPE_INT32;
	}
	schema.n_fields = 3;
	schema.fields = fields;
	if (arrow_writer_create(path, &schema, NULL, &w, &err) != ARROW_OK)
		goto fail;
	for (int c = 0; c < 3; c++)
		if (arrow_builder_create(&fields[c], NULL, &b[c], &err) != ARROW_OK)
			goto fail;
	for (int64_t r = 0; r < F2_ROWS; r++)
	{
		uint64_t	x = rnd();
		int			kk = (int) (x % (F2_NKEYS + 1));	/* F2_NKEYS: NULL */
		int			vv = (int) ((x >> 8) % 100);

		if ((kk == F2_NKEYS ? arrow_append_null(b[0], &err) :
			 arrow_append_float(b[0], f2_keys[kk], &err)) != ARROW_OK ||
			(vv < 5 ? arrow_append_null(b[1], &err) :
			 vv < 7 ? arrow_append_float(b[1], vedges[(x >> 16) % 6], &err) :
			 vv < 12 ? arrow_append_float(b[1], 1.5, &err) :
			 arrow_append_float(b[1], (double) ((x >> 24) % 512) / 4.0 - 64.0, &err)) != ARROW_OK ||
			arrow_append_int(b[2], (int64_t) ((x >> 40) % 5), &err) != ARROW_OK)
			goto fail;
		if ((r + 1) % F2_BATCH == 0 || r + 1 == F2_ROWS)
			if (arrow_writer_write_batch(w, b, NULL, &err) != ARROW_OK)
				goto fail;
	}
	for (int c = 0; c < 3; c++)
		arrow_builder_free(b[c]);
	if (arrow_writer_close(w, &err) != ARROW_OK)
		goto fail;
	return;
fail:
	printf("Bail out! writing %s: %s\n", path, err.message);
	exit(1);
}

/*
 * the float2 program: loads k and v (FLOAT16) and g; qual (when asked)
 * v <> 1.5 in float2; outputs k::float4, v::float4, g
 */
static XpuProgram *
f2_program(int qual)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			rk = xpu_add_reg(b, XPU_T_FLOAT2, 0),
				rv = xpu_add_reg(b, XPU_T_FLOAT2, 0),
				rg = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k4 = xpu_add_reg(b, XPU_T_FLOAT4, 0),
				v4 = xpu_add_reg(b, XPU_T_FLOAT4, 0);
	char		errbuf[256];
	XpuProgram *prog;

	xpu_begin_stage(b, XPU_STAGE_LOAD);
	xpu_add_instr(b, XPU_OP_LOAD_COL, rk, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_FLOAT16, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, rv, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_FLOAT16, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, rg, 0, 0, 0, xpu_add_column(b, 2, XPU_COL_INT32, 0));
	if (qual)
	{
		int			c = xpu_add_reg(b, XPU_T_FLOAT2, 0);

		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_F2, c, 0, 0, 0, 0x3e00);	/* 1.5 */
		xpu_add_instr(b, XPU_OP_NE_F2, r0, rv, c, 0, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_F2_TO_F4, k4, rk, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_F2_TO_F4, v4, rv, 0, 0, 0);
	xpu_add_output(b, k4);
	xpu_add_output(b, v4);
	xpu_add_output(b, rg);
	prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (prog == NULL)
	{
		printf("Bail out! float2 program: %s\n", errbuf);
		exit(1);
	}
	return prog;
}

/* the groups of q over path by the CPU engine into m; 0, or -1 with a diagnostic */
static int
f2_cpu_run(const char *path, const XpuProgram *prog, const TQuery *q, TMap *m)
{
	enum {SLICE = 4096};
	uint16_t	key_outs[4];
	XpuAggSpec	spec = {q->n_keys, key_outs, q->n_aggs, q->aggs};
	XpuError	err = {0};
	XpuAggTable *t;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, 3 * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(3 * SLICE), *mask = malloc(SLICE);
	bool		want[3] = {true, true, true};
	XpuColumnData cols[3];
	ArrowFile  *file;
	ArrowError	aerr;
	int			rc = 0;

	for (int k = 0; k < q->n_keys; k++)
		key_outs[k] = (uint16_t) q->keys[k];
	t = xpu_agg_table_create(prog, &spec, &err);	/* after the keys are set */
	if (t == NULL || arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! float2 CPU run: %s\n", t == NULL ? err.message : aerr.message);
		exit(1);
	}
	for (int32_t bi = 0; bi < file->n_batches && rc == 0; bi++)
	{
		ArrowBatch *batch;

		if (arrow_batch_load(file, bi, want, &batch, &aerr) != ARROW_OK)
		{
			printf("Bail out! float2 CPU run: %s\n", aerr.message);
			exit(1);
		}
		for (int c = 0; c < 3; c++)
			cols[c] = (XpuColumnData) {batch->columns[c].validity, batch->columns[c].values,
									   NULL, 0};
		for (int64_t row0 = 0; row0 < batch->n_rows && rc == 0; row0 += SLICE)
		{
			int64_t		n = batch->n_rows - row0 < SLICE ? batch->n_rows - row0 : SLICE;
			XpuChunk	chunk = {n, 3, 0, cols};
			XpuResult	res = {n, mask, values, nulls};

			for (int c = 0; c < 3; c++)
				cols[c].offset = row0;
			if (xpu_cpu_exec(prog, &chunk, &res, ws, &err) != XPU_OK ||
				!xpu_agg_table_update(t, &res, &err))
			{
				tap_diag("float2 CPU run: %s", err.message);
				rc = -1;
			}
		}
		arrow_batch_free(batch);
	}
	for (int64_t g = 0; rc == 0 && g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *key;
		uint32_t	len;
		const XpuAggState *states;

		xpu_agg_table_group(t, g, &key, &len, &states);
		tmap_sink(m, key, len, states, &err);
	}
	arrow_file_close(file);
	xpu_agg_table_free(t);
	free(ws);
	free(values);
	free(nulls);
	free(mask);
	return rc;
}

/* one float2 case: q (over f2_program(qual)) on the GPU and the CPU engine */
static void
f2_case(const ServiceGpu *gpu, const char *path, const char *name, const TQuery *q, int qual,
		int64_t groups)
{
	XpuProgram *prog = f2_program(qual);
	int32_t		fields[3] = {0, 1, 2};
	uint8_t		types[24];
	TMap		cpu, got;
	TRunResult	res;

	for (int j = 0; j < q->n_aggs; j++)
		types[j] = q->aggs[j].out == 2 ? XPU_T_INT4 : XPU_T_FLOAT4;
	tmap_init(&cpu, q->n_aggs, q->aggs, types, 1024);
	tmap_init(&got, q->n_aggs, q->aggs, types, 1024);
	if (f2_cpu_run(path, prog, q, &cpu) != 0)
		tap_ok(0, "%s: the CPU engine's run failed", name);
	else
	{
		gpu_run(gpu, path, prog, fields, q, 0, &got, &res);
		if (res.rc != 0)
			tap_ok(0, "%s: GPU run failed: rc %d, %s%s", name, res.rc, res.err.message, res.msg);
		else
			tap_ok(maps_same(&got, &cpu, name) && (groups < 0 || cpu.n == groups),
				   "%s: the GPU's %ld groups equal the CPU engine's (expected %ld)", name,
				   (long) got.n, (long) groups);
	}
	tmap_free(&cpu);
	tmap_free(&got);
	free(prog);
}

/* the float2 checks (see f2_write) */
static void
run_float2_checks(const ServiceGpu *gpu, const char *dir)
{
	static const int kinds[] = {XPU_AGG_COUNT, XPU_AGG_SUM_FLOAT4, XPU_AGG_MIN, XPU_AGG_MAX,
		XPU_AGG_MOMENTS, XPU_AGG_VAR_FLOAT};
	char		path[1024];
	TQuery		q;

	snprintf(path, sizeof(path), "%s/gpu_aggcheck_float2.arrow", dir);
	f2_write(path);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = 0;				/* k::float4 */
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	for (int i = 0; i < (int) (sizeof(kinds) / sizeof(kinds[0])); i++)
		agg(&q, kinds[i], 1);	/* of v::float4 */
	f2_case(gpu, path, "float2 key, float2 aggregates", &q, 0, F2_GROUPS);
	f2_case(gpu, path, "float2 key, float2 aggregates, float2 qual", &q, 1, F2_GROUPS);
	q.n_keys = 2;
	q.keys[1] = 2;				/* g */
	f2_case(gpu, path, "float2 and int4 keys, float2 qual", &q, 1, F2_GROUPS * 5);
	query_init(&q);
	for (int i = 0; i < (int) (sizeof(kinds) / sizeof(kinds[0])); i++)
		agg(&q, kinds[i], 0);	/* of k::float4: NaN, infinities, both zeros */
	f2_case(gpu, path, "float2 aggregates of edge values, no key", &q, 0, 1);
	unlink(path);
}

int
main(int argc, char **argv)
{
	ServiceGpu	gpu;

	if (argc < 3)
	{
		fprintf(stderr, "usage: gpu_aggcheck FATBIN DIR [hll | bench ROWS [BATCH_ROWS [QUERIES]]]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_fatbin_path = argv[1];
	gpu_open(&gpu, true);
	if (gpu.n_devices == 0)
	{
		printf("1..0 # SKIP no GPU: %s\n", gpu.detail);
		return 0;
	}
	gpu_cache_configure(&gpu, -1);
	if (argc >= 5 && strcmp(argv[3], "bench") == 0)
		run_bench(&gpu, argv[2], atoll(argv[4]), argc >= 6 ? atoll(argv[5]) : 8000000,
				  argc >= 7 ? argv[6] : NULL);
	else if (argc >= 4 && strcmp(argv[3], "hll") == 0)
		run_hll_checks(&gpu, argv[2]);
	else
	{
		run_checks(&gpu, argv[2]);
		run_float2_checks(&gpu, argv[2]);
		run_cache_checks(&gpu, argv[2]);
		run_hll_checks(&gpu, argv[2]);
	}
	gpu_close(&gpu);
	return tap_done();
}
