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
 * Keys are of bool, integer, float, numeric, date, time, timestamp[tz] or
 * text type (xpu_agg_key_supported); the argument types of each kind are
 * its ARG in xpu_agg_kinds.h (xpu_agg_arg_supported).  The pieces that
 * xpu_agg_kinds.h names per kind are here, each written once for the CPU
 * engine and the GPU: only the primitives of "state memory" differ, by
 * their mode (plain or atomic).
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

/* may an aggregate of kind take an argument register of type (its ARG) */
XPU_HOST_DEVICE int
xpu_agg_arg_supported(int kind, int type)
{
	int			is_int = type == XPU_T_INT2 || type == XPU_T_INT4 || type == XPU_T_INT8;
	int			is_float = type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8;

	if (kind <= XPU_AGG_NONE || kind >= XPU_AGG_N_KINDS)
		return 0;
	switch (xpu_agg_kind_arg(kind))
	{
		case XPU_AGG_ARG_NONE:
		case XPU_AGG_ARG_ANY:
			return 1;
		case XPU_AGG_ARG_INT:
			return is_int;
		case XPU_AGG_ARG_NUMERIC:
			return type == XPU_T_NUMERIC;
		case XPU_AGG_ARG_FLOAT:
			return is_float;
		case XPU_AGG_ARG_FLOAT4:
			return type == XPU_T_FLOAT4;
		case XPU_AGG_ARG_ORDERED:
			return xpu_agg_intlike(type) || is_float || type == XPU_T_NUMERIC;
		case XPU_AGG_ARG_HASHED:
			return xpu_agg_intlike(type) || is_float || type == XPU_T_TEXT;
		case XPU_AGG_ARG_TEXT:
			return type == XPU_T_TEXT;
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
 * xpu_agg_key_word: the canonical 8 key bytes, as a little-endian word, of
 * a non-NULL value of a type whose key value is 8 bytes (not text or
 * numeric): the int64 of XpuValue.i, or a float as a double with -0 made +0
 * and every NaN the one quiet NaN 0x7ff8000000000000
 */
XPU_HOST_DEVICE uint64_t
xpu_agg_key_word(int type, const XpuValue *v)
{
	double		d;
	uint64_t	w;

	if (type != XPU_T_FLOAT4 && type != XPU_T_FLOAT8)
		return (uint64_t) v->i;
	d = xpu_agg_as_f8(v, type);
	if (d != d)
		return UINT64_C(0x7ff8000000000000);
	d = d == 0.0 ? 0.0 : d;
	memcpy(&w, &d, 8);
	return w;
}

/*
 * xpu_agg_key_value_put: writes one key value's canonical bytes at p (room
 * for xpu_agg_key_value_len bytes, any alignment) and returns how many it
 * wrote.  The one writer of key bytes: the CPU table (xpu_agg.c) and the
 * GPU kernel (kern_agg.cu) both call it.
 */
XPU_HOST_DEVICE uint32_t
xpu_agg_key_value_put(uint8_t *p, int type, const XpuValue *v, uint8_t isnull)
{
	uint64_t	w;

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
	w = xpu_agg_key_word(type, v);
	memcpy(p + 1, &w, 8);
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

/* ---------------------------------------------------------------- arithmetic */

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
				ss,
				sum;

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
	sum = *sx + sx2;
	if (XPU_AGG_ISINF(sum) && !XPU_AGG_ISINF(*sx) && !XPU_AGG_ISINF(sx2))
		*flags |= XPU_AGGF_OVERFLOW;
	*sx = sum;
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

/* ---------------------------------------------------------------- state memory */

/*
 * How the pieces of an aggregate write its state (their mode argument):
 *
 *	XPU_AGG_PLAIN	the state is one thread's own (the CPU engine's table, a
 *					GPU thread's accumulators): plain loads and stores, the
 *					state in xpu_agg.h's form
 *	XPU_AGG_ATOMIC	GPU memory that other threads update at the same time
 *					(the GPU table, a block's shared cache): atomics, the
 *					state in the GPU form (xpu_agg_gpu.h); a COMBINE's src is
 *					then a plain state, or with XPU_AGG_SRC_GPU a GPU-form one
 *
 * Each kind's body is written once, with the few primitives below for its
 * memory; only they look at the mode.  Host code never passes
 * XPU_AGG_ATOMIC (the atomic branches exist in device code only).
 */
#define XPU_AGG_PLAIN		0
#define XPU_AGG_ATOMIC		1
#define XPU_AGG_SRC_GPU		2

#ifdef __CUDA_ARCH__
#define XPU_AGG_IS_ATOMIC(mode)	(((mode) & XPU_AGG_ATOMIC) != 0)
#else
#define XPU_AGG_IS_ATOMIC(mode)	0
#endif

#ifdef __CUDACC__
/*
 * xpu_agg_add_wide_atomic: adds x + hi * 2^128 to the GPU-form sum of s: v
 * the low 128 bits as unsigned, pad (int32) the wraps above them (two
 * 64-bit atomic adds, their carries counted into pad); a pad leaving
 * +-2^30 is an overflow for good
 */
XPU_DEVICE void
xpu_agg_add_wide_atomic(XpuAggState *s, __int128 x, int32_t hi)
{
	unsigned long long *w = (unsigned long long *) &s->v;
	unsigned long long lo = (unsigned long long) x;
	unsigned long long up = (unsigned long long) ((unsigned __int128) x >> 64);
	unsigned long long old = atomicAdd(&w[0], lo);
	unsigned long long add_up = up + ((old + lo) < old);
	int32_t		prev;

	hi += add_up < up;			/* up + carry wrapped: 2^128 */
	old = atomicAdd(&w[1], add_up);
	hi += (old + add_up) < old;
	if (hi == 0)
		return;
	prev = atomicAdd((int *) &s->pad, hi);
	if (prev > (1 << 30) || prev < -(1 << 30))
		atomicOr((unsigned int *) &s->flags, XPU_AGGF_OVERFLOW);
}
#endif

/* ORs flags f into s */
XPU_HOST_DEVICE void
xpu_agg_or_flags(XpuAggState *s, uint32_t f, int mode)
{
	if (f == 0)
		return;
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		atomicOr((unsigned int *) &s->flags, f);
		return;
	}
#endif
	s->flags |= f;
}

/* adds n to the count of s */
XPU_HOST_DEVICE void
xpu_agg_add_count(XpuAggState *s, int64_t n, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		atomicAdd((unsigned long long *) &s->count, (unsigned long long) n);
		return;
	}
#endif
	s->count += n;
}

/*
 * xpu_agg_add_f8: adds x to the double *p of s; a sum of finite values that
 * becomes infinite flags XPU_AGGF_OVERFLOW (PostgreSQL's float8pl raises an
 * error there)
 */
XPU_HOST_DEVICE void
xpu_agg_add_f8(XpuAggState *s, double *p, double x, int mode)
{
	double		old;

#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
		old = atomicAdd(p, x);
	else
#endif
	{
		old = *p;
		*p = old + x;
	}
	if (XPU_AGG_ISINF(old + x) && !XPU_AGG_ISINF(old) && !XPU_AGG_ISINF(x))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
}

/* xpu_agg_add_f4: xpu_agg_add_f8 of the float4 sum of s in float4 arithmetic (float4pl) */
XPU_HOST_DEVICE void
xpu_agg_add_f4(XpuAggState *s, float x, int mode)
{
	float		old;

#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
		old = atomicAdd(&s->v.f4, x);
	else
#endif
	{
		old = s->v.f4;
		s->v.f4 = old + x;
	}
	if (XPU_AGG_ISINF(old + x) && !XPU_AGG_ISINF(old) && !XPU_AGG_ISINF(x))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
}

/*
 * xpu_agg_add_i128: adds x + hi * 2^128 to the exact integer sum of s
 * (FINISH xpu_agg_fin_wide), where hi is what x brings above the low 128
 * bits of the GPU form: -1 for a negative plain x, a GPU-form state's pad.  Plain:
 * an exact int128 sum, XPU_AGGF_OVERFLOW when it leaves int128 (hi unused).
 * Atomic: the GPU form (xpu_agg_add_wide_atomic).
 */
XPU_HOST_DEVICE void
xpu_agg_add_i128(XpuAggState *s, __int128 x, int32_t hi, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		xpu_agg_add_wide_atomic(s, x, hi);
		return;
	}
#endif
	if (xpu_agg_add128(s->v.i128, x, &s->v.i128))
		s->flags |= XPU_AGGF_OVERFLOW;
}

/*
 * xpu_agg_lock_read, xpu_agg_write_unlock: a state whose update changes
 * several fields together (VAR_FLOAT's N, Sx and Sxx; a numeric MIN/MAX's
 * 16 bytes) is updated in a copy c: read_lock fills c, the body changes
 * it, write_unlock stores its value (and, with own_count, its count) back
 * and ORs its flags in.  own_count: the body keeps the count under the
 * lock (VAR_FLOAT's N); a MIN/MAX's count is added outside the lock by
 * every row's update, so storing the copy's count would lose the adds
 * made between the read and the write.  Atomic: under the state's lock
 * (pad; the GPU form of such a state keeps nothing else there), with
 * volatile loads and stores, so that no thread sees a stale half.
 */
XPU_HOST_DEVICE void
xpu_agg_lock_read(XpuAggState *s, XpuAggState *c, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		const volatile unsigned long long *w = (const volatile unsigned long long *) &s->v;
		unsigned long long lo,
					up;

		while (atomicCAS((unsigned int *) &s->pad, 0u, 1u) != 0u)
			;
		__threadfence();
		lo = w[0];
		up = w[1];
		c->count = *(volatile int64_t *) &s->count;
		c->flags = 0;
		c->pad = 0;
		c->v.i128 = (__int128) (((unsigned __int128) up << 64) | lo);
		return;
	}
#endif
	*c = *s;
}

XPU_HOST_DEVICE void
xpu_agg_write_unlock(XpuAggState *s, const XpuAggState *c, int own_count, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		volatile unsigned long long *w = (volatile unsigned long long *) &s->v;

		if (own_count)
			*(volatile int64_t *) &s->count = c->count;
		w[0] = (unsigned long long) c->v.i128;
		w[1] = (unsigned long long) ((unsigned __int128) c->v.i128 >> 64);
		__threadfence();
		atomicExch((unsigned int *) &s->pad, 0u);
		xpu_agg_or_flags(s, c->flags, mode);
		return;
	}
#endif
	*s = *c;
}

/*
 * The takes of MIN (want -1) and MAX (want 1): the state's value becomes x
 * when the state has none yet (plain: count 0; the GPU form holds a
 * sentinel instead) or x is better.  Plain: ties replace, as PostgreSQL's
 * smaller/larger functions return their second argument; the value is
 * stored in all 16 bytes (an integer sign-extended, a float's upper half
 * zero), which go out in AGG_RESULT.  Atomic: atomicMin/atomicMax, a CAS
 * loop (floats) or the state's lock (numeric).
 */
XPU_HOST_DEVICE void
xpu_agg_take_i64(XpuAggState *s, int64_t x, int want, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		if (want < 0)
			atomicMin((long long *) &s->v.i, (long long) x);
		else
			atomicMax((long long *) &s->v.i, (long long) x);
		return;
	}
#endif
	if (s->count == 0 || (want < 0 ? x <= s->v.i : x >= s->v.i))
		s->v.i128 = x;
}

/* floats in PostgreSQL's order (xpu_agg_cmp_f8: NaN above all) */
XPU_HOST_DEVICE void
xpu_agg_take_f8(XpuAggState *s, double x, int want, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		unsigned long long *w = (unsigned long long *) &s->v.f8[0];
		unsigned long long old = *(volatile unsigned long long *) w;

		while (xpu_agg_cmp_f8(x, __longlong_as_double((long long) old)) == want)
		{
			unsigned long long prev = atomicCAS(w, old,
												(unsigned long long) __double_as_longlong(x));

			if (prev == old)
				return;
			old = prev;
		}
		return;
	}
#endif
	if (s->count == 0 || xpu_agg_cmp_f8(x, s->v.f8[0]) != -want)
	{
		s->v.i128 = 0;
		s->v.f8[0] = x;
	}
}

XPU_HOST_DEVICE void
xpu_agg_take_i128(XpuAggState *s, __int128 x, int want, int mode)
{
	XpuAggState c;

	xpu_agg_lock_read(s, &c, mode);
	if ((c.count == 0 && !XPU_AGG_IS_ATOMIC(mode)) ||
		(want < 0 ? x <= c.v.i128 : x >= c.v.i128))
		c.v.i128 = x;
	xpu_agg_write_unlock(s, &c, 0, mode);
}

/*
 * xpu_agg_take: the take of a value in state form x (x->v as xpu_agg.h
 * gives MIN/MAX's v) for a MIN/MAX of register type type
 */
XPU_HOST_DEVICE void
xpu_agg_take(XpuAggState *s, const XpuAggState *x, int type, int want, int mode)
{
	if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
		xpu_agg_take_f8(s, x->v.f8[0], want, mode);
	else if (type == XPU_T_NUMERIC)
		xpu_agg_take_i128(s, x->v.i128, want, mode);
	else
		xpu_agg_take_i64(s, x->v.i, want, mode);
}

/* ---------------------------------------------------------------- the kinds' pieces */

/*
 * The pieces that xpu_agg_kinds.h names, one body per kind for the CPU
 * engine and the GPU alike.  An UPDATE gets a non-NULL argument; a COMBINE
 * a src whose count is not 0; the callers (xpu_agg_update,
 * xpu_agg_combine) count rows and OR flags unless the kind's state has
 * XPU_AGG_ST_N.
 */

/* INIT: the start of a state, after xpu_agg_init zeroed it */
XPU_HOST_DEVICE void
xpu_agg_init_zero(XpuAggState *s, int type, int mode)
{
}

/* -0 is the identity of IEEE addition (xpu_agg.h) */
XPU_HOST_DEVICE void
xpu_agg_init_sum_f8(XpuAggState *s, int type, int mode)
{
	s->v.f8[0] = -0.0;
}

XPU_HOST_DEVICE void
xpu_agg_init_sum_f4(XpuAggState *s, int type, int mode)
{
	s->v.f4 = -0.0f;
}

/* the GPU form of MIN (want -1) or MAX (want 1): the sentinel its takes replace */
XPU_HOST_DEVICE void
xpu_agg_init_sentinel(XpuAggState *s, int type, int want, int mode)
{
	__int128	max128 = (__int128) (~(unsigned __int128) 0 >> 1);
	uint64_t	nan = UINT64_C(0x7ff8000000000000);

	if (!(mode & XPU_AGG_ATOMIC))
		return;
	if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
	{
		if (want < 0)
			memcpy(&s->v.f8[0], &nan, 8);	/* above every value */
		else
			s->v.f8[0] = -HUGE_VAL;
	}
	else if (type == XPU_T_NUMERIC)
		s->v.i128 = want < 0 ? max128 : -max128 - 1;
	else
		s->v.i = want < 0 ? INT64_MAX : INT64_MIN;
}

XPU_HOST_DEVICE void
xpu_agg_init_min(XpuAggState *s, int type, int mode)
{
	xpu_agg_init_sentinel(s, type, -1, mode);
}

XPU_HOST_DEVICE void
xpu_agg_init_max(XpuAggState *s, int type, int mode)
{
	xpu_agg_init_sentinel(s, type, 1, mode);
}

/* UPDATE of COUNT_STAR, COUNT and the extended kinds: the count is all */
XPU_HOST_DEVICE void
xpu_agg_upd_nothing(XpuAggState *s, int type, const XpuValue *v, int mode)
{
}

XPU_HOST_DEVICE void
xpu_agg_upd_sum_int(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	xpu_agg_add_i128(s, (__int128) v->i, v->i < 0 ? -1 : 0, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_sum_numeric(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	xpu_agg_add_i128(s, v->n, v->n < 0 ? -1 : 0, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_sum_float(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	double		x = xpu_agg_as_f8(v, type);

	if (xpu_agg_float_risky(x, XPU_AGG_SUM_FLOAT_LIMIT))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
	xpu_agg_add_f8(s, &s->v.f8[0], x, mode);
}

/* avg of floats: sum of x and of x * x (whose overflow PostgreSQL raises) */
XPU_HOST_DEVICE void
xpu_agg_upd_moments(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	double		x = xpu_agg_as_f8(v, type);

	if (xpu_agg_float_risky(x, XPU_AGG_MOMENTS_LIMIT) ||
		(XPU_AGG_ISINF(x * x) && !XPU_AGG_ISINF(x)))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
	xpu_agg_add_f8(s, &s->v.f8[0], x, mode);
	xpu_agg_add_f8(s, &s->v.f8[1], x * x, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_sum_float4(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	if (xpu_agg_float_risky((double) v->f4, XPU_AGG_SUM_FLOAT4_LIMIT))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
	xpu_agg_add_f4(s, v->f4, mode);
}

/* the square of x into the sum of s (SUMSQ_*) */
XPU_HOST_DEVICE void
xpu_agg_add_square(XpuAggState *s, __int128 x, int mode)
{
	__int128	sq;

	if (xpu_agg_square128(x, &sq))
		xpu_agg_or_flags(s, XPU_AGGF_OVERFLOW, mode);
	else
		xpu_agg_add_i128(s, sq, 0, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_sumsq_int(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	xpu_agg_add_square(s, (__int128) v->i, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_sumsq_numeric(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	xpu_agg_add_square(s, v->n, mode);
}

/* float8_accum of x: the count is N, changed with Sx and Sxx */
XPU_HOST_DEVICE void
xpu_agg_upd_var_float(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	double		x = xpu_agg_as_f8(v, type);
	XpuAggState c;

	xpu_agg_lock_read(s, &c, mode);
	if (xpu_agg_float_risky(x, XPU_AGG_MOMENTS_LIMIT))
		c.flags |= XPU_AGGF_OVERFLOW;
	xpu_agg_var_accum(&c.count, &c.v.f8[0], &c.v.f8[1], x, &c.flags);
	xpu_agg_write_unlock(s, &c, 1, mode);
}

/* a MIN/MAX argument in state form (xpu_agg.h) */
XPU_HOST_DEVICE void
xpu_agg_minmax_value(XpuAggState *x, int type, const XpuValue *v)
{
	x->v.i128 = 0;
	if (type == XPU_T_FLOAT4 || type == XPU_T_FLOAT8)
		x->v.f8[0] = xpu_agg_as_f8(v, type);
	else if (type == XPU_T_NUMERIC)
		x->v.i128 = v->n;
	else
		x->v.i128 = v->i;
}

XPU_HOST_DEVICE void
xpu_agg_upd_min(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	XpuAggState x;

	xpu_agg_minmax_value(&x, type, v);
	xpu_agg_take(s, &x, type, -1, mode);
}

XPU_HOST_DEVICE void
xpu_agg_upd_max(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	XpuAggState x;

	xpu_agg_minmax_value(&x, type, v);
	xpu_agg_take(s, &x, type, 1, mode);
}

/* COMBINE of COUNT_STAR, COUNT and the extended kinds: the count is all */
XPU_HOST_DEVICE void
xpu_agg_comb_nothing(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
}

/* the exact integer sums (FINISH xpu_agg_fin_wide) */
XPU_HOST_DEVICE void
xpu_agg_comb_sum128(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	int32_t		hi = (mode & XPU_AGG_SRC_GPU) ? (int32_t) src->pad :
		(src->v.i128 < 0 ? -1 : 0);

	xpu_agg_add_i128(dst, src->v.i128, hi, mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_sum_float(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	xpu_agg_add_f8(dst, &dst->v.f8[0], src->v.f8[0], mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_moments(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	xpu_agg_add_f8(dst, &dst->v.f8[0], src->v.f8[0], mode);
	xpu_agg_add_f8(dst, &dst->v.f8[1], src->v.f8[1], mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_sum_float4(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	xpu_agg_add_f4(dst, src->v.f4, mode);
}

/* float8_combine: the count is N, changed with Sx and Sxx; the flags of src go in too */
XPU_HOST_DEVICE void
xpu_agg_comb_var_float(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	XpuAggState c;

	xpu_agg_lock_read(dst, &c, mode);
	c.flags |= src->flags;
	xpu_agg_var_combine(&c.count, &c.v.f8[0], &c.v.f8[1], src->count, src->v.f8[0],
						src->v.f8[1], &c.flags);
	xpu_agg_write_unlock(dst, &c, 1, mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_min(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	xpu_agg_take(dst, src, type, -1, mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_max(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	xpu_agg_take(dst, src, type, 1, mode);
}

/*
 * ZERO_SIGN, the hidden aggregate GpuPreAgg adds for a float group key:
 * v.i becomes 1 at the first row that is not -0.  A float key's bytes are
 * canonical (-0 is 0: xpu_agg_key_word), so the group of the zeros comes
 * back as 0 unless this says that every row of it was -0, where
 * PostgreSQL returns -0.  An OR: the same in any order of rows.
 */
XPU_HOST_DEVICE void
xpu_agg_zero_sign_set(XpuAggState *s, int mode)
{
#ifdef __CUDA_ARCH__
	if (XPU_AGG_IS_ATOMIC(mode))
	{
		if (*(volatile long long *) &s->v.i == 0)
			atomicOr((unsigned long long *) &s->v.i, 1ULL);
		return;
	}
#endif
	s->v.i = 1;
}

XPU_HOST_DEVICE void
xpu_agg_upd_zero_sign(XpuAggState *s, int type, const XpuValue *v, int mode)
{
	double		d = xpu_agg_as_f8(v, type);

	if (d != 0.0 || !signbit(d))
		xpu_agg_zero_sign_set(s, mode);
}

XPU_HOST_DEVICE void
xpu_agg_comb_zero_sign(XpuAggState *dst, const XpuAggState *src, int type, int mode)
{
	if (src->v.i != 0)
		xpu_agg_zero_sign_set(dst, mode);
}

/* FINISH: a GPU-form state made xpu_agg.h's (pad is then 0) */
XPU_HOST_DEVICE void
xpu_agg_fin_nothing(XpuAggState *s)
{
}

/* the exact sum v + pad * 2^128 (v unsigned) must fit int128 */
XPU_HOST_DEVICE void
xpu_agg_fin_wide(XpuAggState *s)
{
	int32_t		wraps = (int32_t) s->pad;
	int			negative = (int) ((unsigned __int128) s->v.i128 >> 127);

	if (!((wraps == 0 && !negative) || (wraps == -1 && negative)))
		s->flags |= XPU_AGGF_OVERFLOW;
}

/* no value: the sentinel goes, xpu_agg.h's state is zero */
XPU_HOST_DEVICE void
xpu_agg_fin_minmax(XpuAggState *s)
{
	if (s->count == 0)
		s->v.i128 = 0;
}

/* ---------------------------------------------------------------- by kind */

#define XPU_AGG_INIT_CASE(NAME, ARG, ST, GPU, INIT, UPD, COMB, FIN) \
	case XPU_AGG_##NAME: \
		INIT(s, type, mode); \
		break;

/*
 * xpu_agg_init_mode: the state an aggregate of kind (argument register type
 * type) starts from, in mode's form
 */
XPU_HOST_DEVICE void
xpu_agg_init_mode(XpuAggState *s, int kind, int type, int mode)
{
	s->count = 0;
	s->flags = 0;
	s->pad = 0;
	s->v.i128 = 0;
	switch (kind)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_INIT_CASE)
		default:
			break;
	}
}

#define XPU_AGG_UPDATE_CASE(NAME, ARG, ST, GPU, INIT, UPD, COMB, FIN) \
	case XPU_AGG_##NAME: \
		if ((ARG) != XPU_AGG_ARG_NONE && isnull) \
			break; \
		UPD(s, type, v, mode); \
		if (!((ST) & XPU_AGG_ST_N)) \
			xpu_agg_add_count(s, 1, mode); \
		break;

/*
 * xpu_agg_update_mode: folds one row's argument (v, isnull; register type
 * type) into s.  COUNT_STAR ignores v and isnull.  The extended kinds only
 * count here: their values are the caller's (xpu_agg.c's sets and copies,
 * the GPU's sketches).
 */
XPU_HOST_DEVICE void
xpu_agg_update_mode(XpuAggState *s, int kind, int type, const XpuValue *v, uint8_t isnull,
					int mode)
{
	switch (kind)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_UPDATE_CASE)
		default:
			break;
	}
}

#define XPU_AGG_COMBINE_CASE(NAME, ARG, ST, GPU, INIT, UPD, COMB, FIN) \
	case XPU_AGG_##NAME: \
		COMB(dst, src, type, mode); \
		if (!((ST) & XPU_AGG_ST_N)) \
		{ \
			xpu_agg_add_count(dst, src->count, mode); \
			xpu_agg_or_flags(dst, src->flags, mode); \
		} \
		break;

/* xpu_agg_combine_mode: folds state src into dst (same kind and type) */
XPU_HOST_DEVICE void
xpu_agg_combine_mode(XpuAggState *dst, const XpuAggState *src, int kind, int type, int mode)
{
	if (src->count == 0)
		return;
	switch (kind)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_COMBINE_CASE)
		default:
			break;
	}
}

/* the plain forms, the CPU engine's */
XPU_HOST_DEVICE void
xpu_agg_init(XpuAggState *s, int kind)
{
	xpu_agg_init_mode(s, kind, XPU_T_NONE, XPU_AGG_PLAIN);
}

XPU_HOST_DEVICE void
xpu_agg_update(XpuAggState *s, int kind, int type, const XpuValue *v, uint8_t isnull)
{
	xpu_agg_update_mode(s, kind, type, v, isnull, XPU_AGG_PLAIN);
}

XPU_HOST_DEVICE void
xpu_agg_combine(XpuAggState *dst, const XpuAggState *src, int kind, int type)
{
	xpu_agg_combine_mode(dst, src, kind, type, XPU_AGG_PLAIN);
}

#define XPU_AGG_FINISH_CASE(NAME, ARG, ST, GPU, INIT, UPD, COMB, FIN) \
	case XPU_AGG_##NAME: \
		FIN(s); \
		break;

/* xpu_agg_gpu_finish: a GPU-form state of kind made xpu_agg.h's (xpu_agg_gpu.h) */
XPU_HOST_DEVICE void
xpu_agg_gpu_finish(XpuAggState *s, int kind)
{
	switch (kind)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_FINISH_CASE)
		default:
			break;
	}
	s->pad = 0;
}

#endif							/* XPU_AGG_OPS_H */
