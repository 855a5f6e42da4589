/*-------------------------------------------------------------------------
 *
 * xpu_agg_ops.h
 *		The per-row pieces of GROUP BY aggregation (xpu_agg.h states the
 *		semantics): the canonical bytes of one key value, the steps of a
 *		hash, the state an aggregate starts from, the update of a state
 *		with one argument value, and the combination of two states.  Small
 *		XPU_HOST_DEVICE functions, so that the CPU engine's table
 *		(xpu_agg.c) and the GPU kernel run the same bodies.
 *
 * Which register types each piece takes (xpu_agg_key_supported,
 * xpu_agg_arg_supported): keys of bool, integer, float, numeric, date,
 * time, timestamp[tz] and text; arguments of SUM_INT an integer type,
 * SUM_NUMERIC numeric, SUM_FLOAT and MOMENTS a float type, MIN and MAX an
 * integer, date/time, float or numeric type; SUMSQ_INT an integer type,
 * SUMSQ_NUMERIC numeric, VAR_FLOAT a float type, SUM_FLOAT4 float4, HLL
 * an integer, float, text, bool or date/time type; MIN_TEXT and MAX_TEXT
 * text; COUNT any type.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_OPS_H
#define XPU_AGG_OPS_H

#include <math.h>
#include <string.h>

#include "xpu_agg.h"
#include "xpu_hll.h"

#define XPU_AGG_ISINF(x)	((x) == HUGE_VAL || (x) == -HUGE_VAL)

/* ---------------------------------------------------------------- types */

/* the register types whose values live in XpuValue.i */
XPU_HOST_DEVICE int
xpu_agg_intlike(int type)
{
	return type == XPU_T_BOOL || type == XPU_T_INT2 || type == XPU_T_INT4 ||
		type == XPU_T_INT8 || type == XPU_T_DATE || type == XPU_T_TIME ||
		type == XPU_T_TIMESTAMP || type == XPU_T_TIMESTAMPTZ;
}

XPU_HOST_DEVICE int
xpu_agg_key_supported(int type)
{
	return xpu_agg_intlike(type) || type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8 ||
		type == XPU_T_NUMERIC || type == XPU_T_TEXT;
}

/* may an aggregate of kind take an argument register of type */
XPU_HOST_DEVICE int
xpu_agg_arg_supported(int kind, int type)
{
	int			is_int = type == XPU_T_INT2 || type == XPU_T_INT4 || type == XPU_T_INT8;
	int			is_float = type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8;

	switch (kind)
	{
		case XPU_AGG_COUNT_STAR:
		case XPU_AGG_COUNT:
			return 1;
		case XPU_AGG_SUM_INT:
		case XPU_AGG_SUMSQ_INT:
			return is_int;
		case XPU_AGG_SUM_NUMERIC:
		case XPU_AGG_SUMSQ_NUMERIC:
			return type == XPU_T_NUMERIC;
		case XPU_AGG_SUM_FLOAT:
		case XPU_AGG_MOMENTS:
		case XPU_AGG_VAR_FLOAT:
			return is_float;
		case XPU_AGG_SUM_FLOAT4:
			return type == XPU_T_FLOAT4;
		case XPU_AGG_HLL:
			return xpu_agg_intlike(type) || is_float || type == XPU_T_TEXT;
		case XPU_AGG_MIN_TEXT:
		case XPU_AGG_MAX_TEXT:
			return type == XPU_T_TEXT;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			return xpu_agg_intlike(type) || is_float || type == XPU_T_NUMERIC;
		default:
			return 0;
	}
}

/* ---------------------------------------------------------------- keys */

/* a float key as PostgreSQL's equality sees it: -0 is 0, one NaN */
XPU_HOST_DEVICE double
xpu_agg_canon_f8(double d)
{
	if (d != d)
		return (double) NAN;
	return d == 0.0 ? 0.0 : d;
}

/* a register value of a float type as a double */
XPU_HOST_DEVICE double
xpu_agg_as_f8(const XpuValue *v, int type)
{
	return type == XPU_T_FLOAT4 ? (double) v->f4 : v->f8;
}

/* bytes of one key value in the canonical form (1 for NULL) */
XPU_HOST_DEVICE uint32_t
xpu_agg_key_value_len(int type, const XpuValue *v, uint8_t isnull)
{
	if (isnull)
		return 1;
	if (type == XPU_T_TEXT)
		return 1 + 4 + (uint32_t) v->t.len;
	return type == XPU_T_NUMERIC ? 1 + 16 : 1 + 8;
}

/*
 * xpu_agg_key_value_put: writes one key value's canonical bytes at p (room
 * for xpu_agg_key_value_len bytes) and returns how many it wrote.
 */
XPU_HOST_DEVICE uint32_t
xpu_agg_key_value_put(uint8_t *p, int type, const XpuValue *v, uint8_t isnull)
{
	if (isnull)
	{
		p[0] = 0;
		return 1;
	}
	p[0] = 1;
	if (type == XPU_T_TEXT)
	{
		int32_t		len = v->t.len;

		memcpy(p + 1, &len, 4);
		if (len > 0)
			memcpy(p + 5, v->t.p, (size_t) len);
		return 5 + (uint32_t) len;
	}
	if (type == XPU_T_NUMERIC)
	{
		memcpy(p + 1, &v->n, 16);
		return 17;
	}
	if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
	{
		double		d = xpu_agg_canon_f8(xpu_agg_as_f8(v, type));

		memcpy(p + 1, &d, 8);
	}
	else
		memcpy(p + 1, &v->i, 8);
	return 9;
}

/*
 * The steps of a 64-bit hash of 8-byte words: xpu_agg_hash_start, one
 * xpu_agg_hash_step per word, xpu_agg_hash_end.  The CPU table hashes
 * group keys with them (xpu_agg.c: hash_encoded, row_hashes).
 */
#define XPU_AGG_HASH_MUL	UINT64_C(0x9E3779B97F4A7C15)

XPU_HOST_DEVICE uint64_t
xpu_agg_hash_start(uint32_t len)
{
	return UINT64_C(0x243F6A8885A308D3) ^ ((uint64_t) len * XPU_AGG_HASH_MUL);
}

XPU_HOST_DEVICE uint64_t
xpu_agg_hash_step(uint64_t h, uint64_t w)
{
	h = (h ^ w) * XPU_AGG_HASH_MUL;
	return h ^ (h >> 29);
}

XPU_HOST_DEVICE uint64_t
xpu_agg_hash_end(uint64_t h)
{
	h ^= h >> 32;
	h *= UINT64_C(0xD6E8FEB86659FD93);
	return h ^ (h >> 32);
}

/*
 * xpu_agg_hll_hash: the hash of a non-NULL argument of an HLL aggregate
 * (register type type) as pg_warp's hll_count computes it for the SQL
 * value (src/types/hll.c, hash_value): integers as int64, floats as double,
 * text as its bytes, other by-value types as their typlen bytes.
 */
XPU_HOST_DEVICE uint64_t
xpu_agg_hll_hash(int type, const XpuValue *v)
{
	uint8_t		b[8];
	uint32_t	len;

	switch (type)
	{
		case XPU_T_INT2:
		case XPU_T_INT4:
		case XPU_T_INT8:
			return xpu_hll_hash_int64(v->i);
		case XPU_T_FLOAT4:
			return xpu_hll_hash_float8((double) v->f4);
		case XPU_T_FLOAT8:
			return xpu_hll_hash_float8(v->f8);
		case XPU_T_TEXT:
			return xpu_hll_hash_bytes(XPU_HLL_SEED_TEXT, (const uint8_t *) v->t.p,
									  (uint32_t) v->t.len);
		default:
			break;
	}
	/* bool (typlen 1), date (4), time and timestamp[tz] (8) */
	len = type == XPU_T_BOOL ? 1 : type == XPU_T_DATE ? 4 : 8;
	for (uint32_t k = 0; k < len; k++)
		b[k] = (uint8_t) ((uint64_t) v->i >> (8 * k));
	return xpu_hll_hash_bytes(XPU_HLL_SEED_BYVAL, b, len);
}

/* ---------------------------------------------------------------- states */

XPU_HOST_DEVICE void
xpu_agg_init(XpuAggState *s, int kind)
{
	s->count = 0;
	s->flags = 0;
	s->pad = 0;
	s->v.i128 = 0;
	/* -0 is the identity of IEEE addition (xpu_agg.h) */
	if (kind == XPU_AGG_SUM_FLOAT)
		s->v.f8[0] = -0.0;
	else if (kind == XPU_AGG_SUM_FLOAT4)
		s->v.f4 = -0.0f;
}

/* a + b in int128; 1 when the sum left int128 (*r is then unset) */
XPU_HOST_DEVICE int
xpu_agg_add128(__int128 a, __int128 b, __int128 *r)
{
	__int128	s = (__int128) ((unsigned __int128) a + (unsigned __int128) b);

	if ((a >= 0) == (b >= 0) && (s >= 0) != (a >= 0))
		return 1;
	*r = s;
	return 0;
}

/* the float sum a + b; XPU_AGGF_OVERFLOW into *flags when finite values
 * gave an infinity */
XPU_HOST_DEVICE double
xpu_agg_fadd(double a, double b, uint32_t *flags)
{
	double		r = a + b;

	if (XPU_AGG_ISINF(r) && !XPU_AGG_ISINF(a) && !XPU_AGG_ISINF(b))
		*flags |= XPU_AGGF_OVERFLOW;
	return r;
}

/*
 * Float sums whose overflow depends on the order of additions.  PostgreSQL
 * raises an error when a running float sum of finite values overflows
 * (float8pl for sum; float8_accum's sum of squared deviations, whose terms
 * reach (2 N x)^2, for avg): an order-independent answer needs every order to
 * overflow or none.  With at most 2^63 rows, no partial sum of values below
 * XPU_AGG_SUM_FLOAT_LIMIT (1e289 * 2^63 < DBL_MAX) and no such squared term
 * of values below XPU_AGG_MOMENTS_LIMIT ((2 * 2^63 * 1e134)^2 < DBL_MAX) can
 * overflow; a finite value beyond the limit flags XPU_AGGF_OVERFLOW, and
 * PostgreSQL evaluates the query (infinities and NaN never overflow).
 */
#define XPU_AGG_SUM_FLOAT_LIMIT		1e289
#define XPU_AGG_MOMENTS_LIMIT		1e134

/*
 * The same for float4 sums (FLT_MAX is about 3.4e38): no partial sum of
 * fewer than 2^62 values below 1e18 reaches FLT_MAX, whatever the order and
 * the float4 rounding on the way (a rounded partial sum exceeds the exact
 * one by a factor of at most (1 + 2^-24) per addition, and a chain of
 * additions of one sign stops growing once the sum is 2^25 times the
 * largest value).
 */
#define XPU_AGG_SUM_FLOAT4_LIMIT	1e18

XPU_HOST_DEVICE int
xpu_agg_float_risky(double x, double limit)
{
	return !XPU_AGG_ISINF(x) && x == x && (x > limit || x < -limit);
}

/* a float4 sum a + b in float4 arithmetic (float4pl); flags as xpu_agg_fadd */
XPU_HOST_DEVICE float
xpu_agg_fadd4(float a, float b, uint32_t *flags)
{
	float		r = a + b;

	if (XPU_AGG_ISINF(r) && !XPU_AGG_ISINF(a) && !XPU_AGG_ISINF(b))
		*flags |= XPU_AGGF_OVERFLOW;
	return r;
}

/*
 * x * x of an int128 x into *r; 1 when it leaves int128 (any |x| >= 2^63
 * counts as leaving, which only numerics of 19 or more digits reach)
 */
XPU_HOST_DEVICE int
xpu_agg_square128(__int128 x, __int128 *r)
{
	__int128	lim = (__int128) 1 << 63;

	if (x >= lim || x <= -lim)
		return 1;
	*r = x * x;
	return 0;
}

/*
 * xpu_agg_var_accum: PostgreSQL's float8_accum step for one value x over
 * the Youngs-Cramer state (*n values so far, *sx, *sxx): where float8_accum
 * raises an overflow error XPU_AGGF_OVERFLOW goes into *flags (and the run
 * falls back), else the same N, Sx, Sxx, NaN where float8_accum makes NaN.
 */
XPU_HOST_DEVICE void
xpu_agg_var_accum(int64_t *n, double *sx, double *sxx, double x, uint32_t *flags)
{
	double		n_old = (double) *n;
	double		nn = n_old + 1.0;
	double		sx_old = *sx;
	double		s = sx_old + x;
	double		ss = *sxx;

	if (n_old > 0.0)
	{
		double		tmp = x * nn - s;

		ss += tmp * tmp / (nn * n_old);
		if (XPU_AGG_ISINF(s) || XPU_AGG_ISINF(ss))
		{
			if (!XPU_AGG_ISINF(sx_old) && !XPU_AGG_ISINF(x))
				*flags |= XPU_AGGF_OVERFLOW;
			ss = (double) NAN;
		}
	}
	else if (x != x || XPU_AGG_ISINF(x))
		ss = (double) NAN;
	*n += 1;
	*sx = s;
	*sxx = ss;
}

/*
 * xpu_agg_var_combine: PostgreSQL's float8_combine of the Youngs-Cramer
 * state (n2, sx2, sxx2) into (*n, *sx, *sxx); overflow as float8_combine
 * raises it goes into *flags.
 */
XPU_HOST_DEVICE void
xpu_agg_var_combine(int64_t *n, double *sx, double *sxx, int64_t n2, double sx2,
					double sxx2, uint32_t *flags)
{
	double		n1d = (double) *n,
				n2d = (double) n2;
	double		tmp,
				ss;

	if (n2 == 0)
		return;
	if (*n == 0)
	{
		*n = n2;
		*sx = sx2;
		*sxx = sxx2;
		return;
	}
	tmp = *sx / n1d - sx2 / n2d;
	ss = *sxx + sxx2 + n1d * n2d * tmp * tmp / (n1d + n2d);
	if (XPU_AGG_ISINF(ss) && !XPU_AGG_ISINF(*sxx) && !XPU_AGG_ISINF(sxx2))
		*flags |= XPU_AGGF_OVERFLOW;
	*sx = xpu_agg_fadd(*sx, sx2, flags);
	*sxx = ss;
	*n += n2;
}

/* PostgreSQL's float order: -1, 0, 1 with NaN above everything */
XPU_HOST_DEVICE int
xpu_agg_cmp_f8(double a, double b)
{
	if (a != a)
		return b != b ? 0 : 1;
	if (b != b)
		return -1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

/*
 * xpu_agg_better: does value (in state form) x replace the state's y in a
 * MIN (want = -1) or MAX (want = 1) of register type type?  Ties replace,
 * as PostgreSQL's smaller/larger functions return their second argument.
 */
XPU_HOST_DEVICE int
xpu_agg_better(const XpuAggState *x, const XpuAggState *y, int type, int want)
{
	int			c;

	if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
		c = xpu_agg_cmp_f8(x->v.f8[0], y->v.f8[0]);
	else if (type == XPU_T_NUMERIC)
		c = x->v.i128 < y->v.i128 ? -1 : (x->v.i128 > y->v.i128 ? 1 : 0);
	else
		c = x->v.i < y->v.i ? -1 : (x->v.i > y->v.i ? 1 : 0);
	return c == 0 || c == want;
}

/*
 * xpu_agg_update: folds one row's argument (v, isnull; register type type)
 * into s.  COUNT_STAR ignores v.
 */
XPU_HOST_DEVICE void
xpu_agg_update(XpuAggState *s, int kind, int type, const XpuValue *v, uint8_t isnull)
{
	if (kind == XPU_AGG_COUNT_STAR)
	{
		s->count++;
		return;
	}
	if (isnull)
		return;
	switch (kind)
	{
		case XPU_AGG_COUNT:
			break;
		case XPU_AGG_SUM_INT:
			s->v.i128 += v->i;
			break;
		case XPU_AGG_SUM_NUMERIC:
			if (xpu_agg_add128(s->v.i128, v->n, &s->v.i128))
				s->flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_SUM_FLOAT:
			{
				double		x = xpu_agg_as_f8(v, type);

				if (xpu_agg_float_risky(x, XPU_AGG_SUM_FLOAT_LIMIT))
					s->flags |= XPU_AGGF_OVERFLOW;
				s->v.f8[0] = xpu_agg_fadd(s->v.f8[0], x, &s->flags);
				break;
			}
		case XPU_AGG_MOMENTS:
			{
				double		x = xpu_agg_as_f8(v, type);

				if (xpu_agg_float_risky(x, XPU_AGG_MOMENTS_LIMIT))
					s->flags |= XPU_AGGF_OVERFLOW;
				s->v.f8[0] = xpu_agg_fadd(s->v.f8[0], x, &s->flags);
				s->v.f8[1] = xpu_agg_fadd(s->v.f8[1], x * x, &s->flags);
				if (XPU_AGG_ISINF(x * x) && !XPU_AGG_ISINF(x))
					s->flags |= XPU_AGGF_OVERFLOW;
				break;
			}
		case XPU_AGG_SUM_FLOAT4:
			if (xpu_agg_float_risky((double) v->f4, XPU_AGG_SUM_FLOAT4_LIMIT))
				s->flags |= XPU_AGGF_OVERFLOW;
			s->v.f4 = xpu_agg_fadd4(s->v.f4, v->f4, &s->flags);
			break;
		case XPU_AGG_SUMSQ_INT:
		case XPU_AGG_SUMSQ_NUMERIC:
			{
				__int128	sq;

				if (xpu_agg_square128(kind == XPU_AGG_SUMSQ_INT ? (__int128) v->i : v->n, &sq) ||
					xpu_agg_add128(s->v.i128, sq, &s->v.i128))
					s->flags |= XPU_AGGF_OVERFLOW;
				break;
			}
		case XPU_AGG_VAR_FLOAT:
			{
				double		x = xpu_agg_as_f8(v, type);

				if (xpu_agg_float_risky(x, XPU_AGG_MOMENTS_LIMIT))
					s->flags |= XPU_AGGF_OVERFLOW;
				/* the count is N: xpu_agg_var_accum advances it */
				xpu_agg_var_accum(&s->count, &s->v.f8[0], &s->v.f8[1], x, &s->flags);
				return;
			}
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			{
				XpuAggState x;

				x.v.i128 = 0;	/* the unused bytes go out in AGG_RESULT */
				if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
					x.v.f8[0] = xpu_agg_as_f8(v, type);
				else if (type == XPU_T_NUMERIC)
					x.v.i128 = v->n;
				else
					x.v.i128 = v->i;
				if (s->count == 0 ||
					xpu_agg_better(&x, s, type, kind == XPU_AGG_MIN ? -1 : 1))
					s->v = x.v;
				break;
			}
		default:
			break;
	}
	s->count++;
}

/* xpu_agg_combine: folds state src into dst (same kind and type) */
XPU_HOST_DEVICE void
xpu_agg_combine(XpuAggState *dst, const XpuAggState *src, int kind, int type)
{
	dst->flags |= src->flags;
	switch (kind)
	{
		case XPU_AGG_SUM_INT:
			dst->v.i128 += src->v.i128;
			break;
		case XPU_AGG_VAR_FLOAT:
			/* the count is N: xpu_agg_var_combine adds it */
			xpu_agg_var_combine(&dst->count, &dst->v.f8[0], &dst->v.f8[1], src->count,
								src->v.f8[0], src->v.f8[1], &dst->flags);
			return;
		case XPU_AGG_SUM_FLOAT4:
			dst->v.f4 = xpu_agg_fadd4(dst->v.f4, src->v.f4, &dst->flags);
			break;
		case XPU_AGG_SUMSQ_INT:
		case XPU_AGG_SUMSQ_NUMERIC:
		case XPU_AGG_SUM_NUMERIC:
			if (xpu_agg_add128(dst->v.i128, src->v.i128, &dst->v.i128))
				dst->flags |= XPU_AGGF_OVERFLOW;
			break;
		case XPU_AGG_SUM_FLOAT:
			dst->v.f8[0] = xpu_agg_fadd(dst->v.f8[0], src->v.f8[0], &dst->flags);
			break;
		case XPU_AGG_MOMENTS:
			dst->v.f8[0] = xpu_agg_fadd(dst->v.f8[0], src->v.f8[0], &dst->flags);
			dst->v.f8[1] = xpu_agg_fadd(dst->v.f8[1], src->v.f8[1], &dst->flags);
			break;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			if (src->count > 0 &&
				(dst->count == 0 ||
				 xpu_agg_better(src, dst, type, kind == XPU_AGG_MIN ? -1 : 1)))
				dst->v = src->v;
			break;
		default:
			break;
	}
	dst->count += src->count;
}

#endif							/* XPU_AGG_OPS_H */
