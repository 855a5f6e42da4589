/*
 * join_testlib.h
 *		Helpers of the join-table tests, shared by test_xpu_join.c (the CPU,
 *		ASan) and test/gpu/xpu_join_check.cu (the same probes on a GPU):
 *		random inner and outer rows of given key and payload types (NULLs,
 *		duplicates, edge values), the nested-loop join that is the oracle,
 *		written from PostgreSQL's equality of each type rather than from the
 *		key bytes, and lists of output pairs compared as multisets.
 *		C that also compiles as C++ (nvcc).
 */
#ifndef JOIN_TESTLIB_H
#define JOIN_TESTLIB_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xpu_join.h"

/* ---------------------------------------------------------------- random */

static uint64_t jt_seed = UINT64_C(0x9E3779B97F4A7C15);

static inline uint64_t
jt_rand(void)
{
	jt_seed ^= jt_seed << 13;
	jt_seed ^= jt_seed >> 7;
	jt_seed ^= jt_seed << 17;
	return jt_seed;
}

/* 0 .. n - 1 */
static inline uint32_t
jt_below(uint32_t n)
{
	return (uint32_t) (jt_rand() % n);
}

/* ---------------------------------------------------------------- values */

/* texts: empty, multi-byte UTF-8, prefixes of each other, 8/9/16/17 bytes, long */
static const char *const jt_texts[] = {
	"", "a", "ab", "\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "abcdefgh", "abcdefghi",
	"abcdefghijklmnop", "abcdefghijklmnopq", "A", "\xc3\xa9t\xc3\xa9",
	"a long text of more than thirty-two bytes, end 1",
	"a long text of more than thirty-two bytes, end 2",
};
#define JT_N_TEXTS	((int) (sizeof(jt_texts) / sizeof(jt_texts[0])))

/* numerics in hundredths (brought to each side's scale): 1.00 = 1.0 = 1 */
static const int64_t jt_cents[] = {0, 100, -100, 150, 1230, -5, 7, 12345678, 1000, 10};
#define JT_N_CENTS	((int) (sizeof(jt_cents) / sizeof(jt_cents[0])))

static inline __int128
jt_pow10(int k)
{
	__int128	r = 1;

	while (k-- > 0)
		r *= 10;
	return r;
}

/* how a value is drawn: a small domain (keys that meet) or a wide one */
typedef struct JtDomain
{
	int			null_pct;		/* percent of NULLs */
	int			range;			/* integers: 0 .. range - 1 (0: the edge pool) */
	int64_t		base;			/* integers: added to the draw */
} JtDomain;

/* a random value of type (numeric at scale) into *v, *isnull */
static inline void
jt_value(int type, int scale, const JtDomain *d, XpuValue *v, uint8_t *isnull)
{
	static const int64_t edges[] = {0, 1, -1, 2, 7, INT64_MIN, INT64_MAX, INT64_MIN + 1,
	INT64_MAX - 1, INT32_MIN, INT32_MAX};
	static const double floats[] = {0.0, -0.0, 1.5, -2.25, 0.1, 1e300, -1e300, 5e-324};

	memset(v, 0, sizeof(*v));
	*isnull = (int) jt_below(100) < d->null_pct;
	if (*isnull)
		return;
	switch (type)
	{
		case XPU_T_BOOL:
			v->i = jt_below(2);
			break;
		case XPU_T_INT2:
		case XPU_T_INT4:
		case XPU_T_INT8:
		case XPU_T_DATE:
		case XPU_T_TIME:
		case XPU_T_TIMESTAMP:
		case XPU_T_TIMESTAMPTZ:
			if (d->range > 0)
				v->i = (int64_t) ((uint64_t) d->base + jt_below(d->range));
			else
				v->i = edges[jt_below(sizeof(edges) / sizeof(edges[0]))];
			if (type == XPU_T_INT2)
				v->i = (int16_t) v->i;
			else if (type == XPU_T_INT4 || type == XPU_T_DATE)
				v->i = (int32_t) v->i;
			break;
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8:
			{
				double		x;
				uint32_t	pick = jt_below(12);

				if (pick < 8)
					x = floats[pick];
				else if (pick == 8)
					x = HUGE_VAL;
				else if (pick == 9)
					x = -HUGE_VAL;
				else if (pick == 10)
					x = (double) NAN;
				else
				{
					/* another NaN: sign and payload differ, still equal */
					uint64_t	w = UINT64_C(0xfff0000000000123);

					memcpy(&x, &w, 8);
				}
				if (type == XPU_T_FLOAT4)
				{
					v->f4 = (float) x;
					if (pick == 11)
					{
						uint32_t	w = 0xff800077u;

						memcpy(&v->f4, &w, 4);
					}
				}
				else
					v->f8 = x;
				break;
			}
		case XPU_T_NUMERIC:
			{
				__int128	c = jt_cents[jt_below(JT_N_CENTS)];

				v->n = scale >= 2 ? c * jt_pow10(scale - 2) : c / jt_pow10(2 - scale);
				break;
			}
		case XPU_T_TEXT:
			{
				const char *s = jt_texts[jt_below(JT_N_TEXTS)];

				v->t.p = s;
				v->t.len = (int32_t) strlen(s);
				break;
			}
		case XPU_T_INTERVAL:
			v->iv.us = (int64_t) jt_rand();
			v->iv.days = (int32_t) jt_rand();
			v->iv.months = (int32_t) jt_rand();
			break;
		default:
			v->i = (int64_t) jt_rand();
			break;
	}
}

/* ---------------------------------------------------------------- PostgreSQL's equality */

/* a numeric a at scale sa equals b at sb (exact: no rounding) */
static inline int
jt_num_eq(__int128 a, int sa, __int128 b, int sb)
{
	/* bring the one with the smaller scale up; a value that cannot go up
	 * is beyond any of the other side's (both fit 38 digits) */
	__int128	lim = jt_pow10(38);

	while (sa < sb)
	{
		if (a >= lim || a <= -lim)
			return 0;
		a *= 10;
		sa++;
	}
	while (sb < sa)
	{
		if (b >= lim || b <= -lim)
			return 0;
		b *= 10;
		sb++;
	}
	return a == b;
}

/* values a (type ta, scale sa) and b (tb, sb) are equal as PostgreSQL's = says */
static inline int
jt_equal(int ta, int sa, const XpuValue *a, int tb, int sb, const XpuValue *b)
{
	if (ta == XPU_T_FLOAT4 || ta == XPU_T_FLOAT8)
	{
		double		x = ta == XPU_T_FLOAT4 ? (double) a->f4 : a->f8;
		double		y = tb == XPU_T_FLOAT4 ? (double) b->f4 : b->f8;

		if (x != x || y != y)
			return x != x && y != y;	/* NaN = NaN */
		return x == y;			/* -0 = 0 */
	}
	if (ta == XPU_T_NUMERIC)
		return jt_num_eq(a->n, sa, b->n, sb);
	if (ta == XPU_T_TEXT)
		return a->t.len == b->t.len && memcmp(a->t.p, b->t.p, (size_t) a->t.len) == 0;
	return a->i == b->i;
}

/* ---------------------------------------------------------------- a case */

/* rows of one side: key column k of row i at keys[k * n + i] */
typedef struct JtRows
{
	int			n;
	XpuValue   *keys;
	uint8_t    *key_nulls;
	XpuValue   *pay;
	uint8_t    *pay_nulls;
} JtRows;

static inline void
jt_rows_alloc(JtRows *r, int n, int n_keys, int n_pay)
{
	r->n = n;
	r->keys = (XpuValue *) calloc((size_t) n * n_keys + 1, sizeof(XpuValue));
	r->key_nulls = (uint8_t *) calloc((size_t) n * n_keys + 1, 1);
	r->pay = (XpuValue *) calloc((size_t) n * n_pay + 1, sizeof(XpuValue));
	r->pay_nulls = (uint8_t *) calloc((size_t) n * n_pay + 1, 1);
}

static inline void
jt_rows_free(JtRows *r)
{
	free(r->keys);
	free(r->key_nulls);
	free(r->pay);
	free(r->pay_nulls);
}

/* random keys of one side of spec (probe: the outer types and scales) */
static inline void
jt_fill_keys(JtRows *r, const XpuJoinSpec *spec, int probe, const JtDomain *d)
{
	for (int k = 0; k < spec->n_keys; k++)
		for (int i = 0; i < r->n; i++)
			jt_value(probe ? spec->keys[k].probe_type : spec->keys[k].type,
					 probe ? spec->keys[k].probe_scale : spec->keys[k].scale,
					 &d[k], &r->keys[k * r->n + i], &r->key_nulls[k * r->n + i]);
}

/* random payload of spec's types; every column but the first has NULLs */
static inline void
jt_fill_pay(JtRows *r, const XpuJoinSpec *spec)
{
	for (int c = 0; c < spec->n_pay; c++)
		for (int i = 0; i < r->n; i++)
		{
			JtDomain	d = {c == 0 ? 0 : 15, 1000000, -500000};

			jt_value(spec->pay_types[c], 4, &d, &r->pay[c * r->n + i],
					 &r->pay_nulls[c * r->n + i]);
		}
}

/*
 * random inner rows (keys from inner_dom, payload) and outer rows (keys
 * from outer_dom) of spec; free both with jt_rows_free
 */
static inline void
jt_random_rows(const XpuJoinSpec *spec, int n_inner, int n_outer, const JtDomain *inner_dom,
			   const JtDomain *outer_dom, JtRows *inner, JtRows *outer)
{
	jt_rows_alloc(inner, n_inner, spec->n_keys, spec->n_pay);
	jt_rows_alloc(outer, n_outer, spec->n_keys, 0);
	jt_fill_keys(inner, spec, 0, inner_dom);
	jt_fill_keys(outer, spec, 1, outer_dom);
	jt_fill_pay(inner, spec);
}

/* the keys of outer row o and inner row r meet */
static inline int
jt_keys_meet(const XpuJoinSpec *spec, const JtRows *outer, int o, const JtRows *inner, int r)
{
	for (int k = 0; k < spec->n_keys; k++)
	{
		const XpuJoinKeyDesc *d = &spec->keys[k];

		if (outer->key_nulls[k * outer->n + o] || inner->key_nulls[k * inner->n + r])
			return 0;
		if (!jt_equal(d->probe_type, d->probe_scale, &outer->keys[k * outer->n + o],
					  d->type, d->scale, &inner->keys[k * inner->n + r]))
			return 0;
	}
	return 1;
}

/* the join qual of the tests' quals runs: drops about a quarter of the pairs
 * (on the GPU too) */
XPU_HOST_DEVICE int
jt_qual(int o, int r)
{
	return (o * 7 + r * 3) % 4 != 0;
}

/* ---------------------------------------------------------------- pairs */

/* output rows (outer row, inner row), -1 for a side that is NULL */
typedef struct JtPairs
{
	int			n;
	int			cap;
	int32_t    *p;				/* [2 * n] */
} JtPairs;

static inline void
jt_pair(JtPairs *l, int32_t o, int32_t r)
{
	if (l->n == l->cap)
	{
		l->cap = l->cap ? 2 * l->cap : 64;
		l->p = (int32_t *) realloc(l->p, sizeof(int32_t) * 2 * (size_t) l->cap);
	}
	l->p[2 * l->n] = o;
	l->p[2 * l->n + 1] = r;
	l->n++;
}

static inline int
jt_pair_cmp(const void *a, const void *b)
{
	const int32_t *x = (const int32_t *) a,
			   *y = (const int32_t *) b;

	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : (x[1] > y[1] ? 1 : 0);
}

/* are a and b the same multiset (both get sorted) */
static inline int
jt_pairs_same(JtPairs *a, JtPairs *b)
{
	if (a->n != b->n)
		return 0;
	if (a->n == 0)
		return 1;
	qsort(a->p, (size_t) a->n, 8, jt_pair_cmp);
	qsort(b->p, (size_t) b->n, 8, jt_pair_cmp);
	return memcmp(a->p, b->p, 8 * (size_t) a->n) == 0;
}

/*
 * jt_nested_loop: the rows of join type over outer x inner (with jt_qual
 * when quals), as PostgreSQL defines them; SEMI's inner row is the first
 * match in inner-row order (the probe's order too), ANTI's -1
 */
static inline void
jt_nested_loop(const XpuJoinSpec *spec, int jointype, int quals, const JtRows *outer,
			   const JtRows *inner, JtPairs *out)
{
	uint8_t    *hit = (uint8_t *) calloc((size_t) inner->n + 1, 1);

	for (int o = 0; o < outer->n; o++)
	{
		int			any = 0;

		for (int r = 0; r < inner->n; r++)
		{
			if (!jt_keys_meet(spec, outer, o, inner, r) || (quals && !jt_qual(o, r)))
				continue;
			hit[r] = 1;
			if (jointype == XPU_JOIN_ANTI)
			{
				any = 1;
				break;
			}
			jt_pair(out, o, r);
			any = 1;
			if (jointype == XPU_JOIN_SEMI)
				break;
		}
		if (!any && (jointype == XPU_JOIN_LEFT || jointype == XPU_JOIN_FULL ||
					 jointype == XPU_JOIN_ANTI))
			jt_pair(out, o, -1);
	}
	if (jointype == XPU_JOIN_RIGHT || jointype == XPU_JOIN_FULL)
		for (int r = 0; r < inner->n; r++)
			if (!hit[r])
				jt_pair(out, -1, r);
	free(hit);
}

/* the outer row o's key registers, consecutive, into vals / nulls */
static inline void
jt_outer_keys(const XpuJoinSpec *spec, const JtRows *outer, int o, XpuValue *vals,
			  uint8_t *nulls)
{
	for (int k = 0; k < spec->n_keys; k++)
	{
		vals[k] = outer->keys[k * outer->n + o];
		nulls[k] = outer->key_nulls[k * outer->n + o];
	}
}

#endif							/* JOIN_TESTLIB_H */
