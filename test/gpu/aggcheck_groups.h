/*
 * aggcheck_groups.h
 *		gpu_aggcheck's groups: the map of key bytes to aggregate states that a
 *		run folds its groups into (TMap, tmap_sink), the host reference of a
 *		query (ref_run, folded as the program would), the comparison of two
 *		maps (maps_same: integers and numerics exactly, float sums within
 *		1e-9 relative), and a run of a query over an Arrow file on the GPU
 *		(gpu_run, gpu_run_cancel).
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#ifndef AGGCHECK_GROUPS_H
#define AGGCHECK_GROUPS_H

#include <math.h>
#include <time.h>

#include "aggcheck_data.h"
#include "tap.h"

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

/*
 * runs q over the Arrow file path on the GPU into m; cancel: the run's flag
 * (or NULL); fill: its read-ahead instead (gpu_agg_fill: m stays empty)
 */
static void
gpu_run_mode(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
			 const int32_t *fields, const TQuery *q, uint32_t initial_groups, TMap *m,
			 TRunResult *res, volatile int *cancel, bool fill)
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
	res->rc = fill ? gpu_agg_fill(gpu, &res->run, &res->werr, res->msg, sizeof(res->msg)) :
		gpu_agg_execute(gpu, &res->run, &opts, tmap_sink, m, &res->err, &res->werr,
						res->msg, sizeof(res->msg));
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	res->run.files = NULL;
	free(batches);
	arrow_file_close(file);
}

static void
gpu_run_cancel(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
			   const int32_t *fields, const TQuery *q, uint32_t initial_groups, TMap *m,
			   TRunResult *res, volatile int *cancel)
{
	gpu_run_mode(gpu, path, prog, fields, q, initial_groups, m, res, cancel, false);
}

static void
gpu_run(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
		const int32_t *fields, const TQuery *q, uint32_t initial_groups, TMap *m,
		TRunResult *res)
{
	gpu_run_cancel(gpu, path, prog, fields, q, initial_groups, m, res, NULL);
}

#endif							/* AGGCHECK_GROUPS_H */
