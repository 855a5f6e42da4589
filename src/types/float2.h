/*-------------------------------------------------------------------------
 *
 * float2.h
 *		The float2 type (IEEE 754 binary16, "half"): its representation and
 *		the exact conversions between its bits and float/double, shared by
 *		float2.c (I/O, casts) and float2_ops.c (operators, aggregates).
 *
 * A float2 Datum is passed by value and holds the 16 bits of the half in
 * the low bits (typlen 2, alignment int2).  Conversions to float and double
 * are exact; conversions from them round to nearest, ties to even, straight
 * from the source value (a double is never rounded to float first, which
 * could round twice).  NaNs keep their sign and the top bits of their
 * payload, as numpy.float16 does: half -> float shifts the 10 payload bits
 * up; float/double -> half keeps the top 10 bits and sets the lowest one
 * when they would all be zero (so that a NaN stays a NaN).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FLOAT2_H
#define PG_WARP_FLOAT2_H

#include <string.h>

#include "fmgr.h"

typedef uint16 float2;

#define DatumGetFloat2(d)		((float2) DatumGetUInt16(d))
#define Float2GetDatum(h)		UInt16GetDatum(h)
#define PG_GETARG_FLOAT2(n)		DatumGetFloat2(PG_GETARG_DATUM(n))
#define PG_RETURN_FLOAT2(h)		return Float2GetDatum(h)

#define FLOAT2_SIGN			0x8000
#define FLOAT2_EXP_MASK		0x7c00
#define FLOAT2_FRAC_MASK	0x03ff
#define FLOAT2_INF			0x7c00

/* whether h is a NaN / an infinity / a zero of either sign */
static inline bool
float2_isnan(float2 h)
{
	return (h & FLOAT2_EXP_MASK) == FLOAT2_EXP_MASK && (h & FLOAT2_FRAC_MASK) != 0;
}

static inline bool
float2_isinf(float2 h)
{
	return (h & ~FLOAT2_SIGN) == FLOAT2_INF;
}

static inline bool
float2_iszero(float2 h)
{
	return (h & ~FLOAT2_SIGN) == 0;
}

/* the exact value of h as a float (NaN payloads as numpy does) */
static inline float
float2_to_float(float2 h)
{
	uint32		sign = (uint32) (h & FLOAT2_SIGN) << 16;
	uint32		exp = (h >> 10) & 0x1f;
	uint32		frac = h & FLOAT2_FRAC_MASK;
	uint32		bits;
	float		f;

	if (exp == 0x1f)
		bits = sign | 0x7f800000 | (frac << 13);
	else if (exp != 0)
		bits = sign | ((exp + 127 - 15) << 23) | (frac << 13);
	else if (frac == 0)
		bits = sign;
	else
	{
		/* subnormal: frac * 2^-24; normalize so that bit 10 is the leading 1 */
		int			e = -14;

		while ((frac & 0x400) == 0)
		{
			frac <<= 1;
			e--;
		}
		bits = sign | ((uint32) (e + 127) << 23) | ((frac & FLOAT2_FRAC_MASK) << 13);
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* the exact value of h as a double (NaN payloads as numpy does) */
static inline double
float2_to_double(float2 h)
{
	uint64		bits;
	double		d;

	if ((h & FLOAT2_EXP_MASK) == FLOAT2_EXP_MASK)
	{
		bits = ((uint64) (h & FLOAT2_SIGN) << 48) | UINT64CONST(0x7ff0000000000000) |
			((uint64) (h & FLOAT2_FRAC_MASK) << 42);
		memcpy(&d, &bits, sizeof(d));
		return d;
	}
	return (double) float2_to_float(h);	/* exact */
}

/*
 * d rounded to the nearest half, ties to even; NaN and infinities keep
 * their kind; a finite value at or beyond 65520 becomes an infinity (the
 * caller checks for overflow).  'tie' breaks an exact tie when d is itself
 * the rounded form of a longer value: > 0 when that value's magnitude is
 * above |d|, < 0 when below, 0 when d is exact.
 */
static inline float2
float2_from_double_tie(double d, int tie)
{
	uint64		bits;
	uint16		sign;
	int			bexp;
	int			e;
	int			shift;
	uint64		sig,
				q,
				rem,
				halfway;

	memcpy(&bits, &d, sizeof(bits));
	sign = (uint16) ((bits >> 48) & FLOAT2_SIGN);
	bexp = (int) ((bits >> 52) & 0x7ff);
	sig = bits & UINT64CONST(0x000fffffffffffff);
	if (bexp == 0x7ff)
	{
		uint16		frac = (uint16) (sig >> 42);

		if (sig == 0)
			return sign | FLOAT2_INF;
		return sign | FLOAT2_INF | (frac != 0 ? frac : 1);
	}
	if (bexp == 0)
		return sign;			/* zero or a double subnormal: far below 2^-25 */
	e = bexp - 1023;
	if (e > 15)
		return sign | FLOAT2_INF;
	sig |= UINT64CONST(1) << 52;
	/* keep 11 bits for a normal half, fewer for a subnormal one (units of 2^-24) */
	shift = e >= -14 ? 42 : 42 + (-14 - e);
	if (shift > 53)
		return sign;			/* below half of the smallest subnormal */
	q = sig >> shift;
	rem = sig & ((UINT64CONST(1) << shift) - 1);
	halfway = UINT64CONST(1) << (shift - 1);
	if (rem > halfway ||
		(rem == halfway && (tie > 0 || (tie == 0 && (q & 1)))))
		q++;
	if (e < -14)
		return sign | (uint16) q;	/* q == 1024 is the smallest normal */
	/* normal: biased exponent e + 15, q = 1024 + fraction (a carry moves up) */
	if (((uint64) (e + 14) << 10) + q >= FLOAT2_INF)
		return sign | FLOAT2_INF;
	return sign | (uint16) (((uint64) (e + 14) << 10) + q);
}

/* d rounded to the nearest half, ties to even (see float2_from_double_tie) */
static inline float2
float2_from_double(double d)
{
	return float2_from_double_tie(d, 0);
}

/* f rounded to the nearest half, ties to even (NaN payloads as numpy does) */
static inline float2
float2_from_float(float f)
{
	uint32		bits;

	memcpy(&bits, &f, sizeof(bits));
	if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x007fffff) != 0)
	{
		uint16		frac = (uint16) ((bits & 0x007fffff) >> 13);

		return (uint16) ((bits >> 16) & FLOAT2_SIGN) | FLOAT2_INF | (frac != 0 ? frac : 1);
	}
	return float2_from_double((double) f);	/* exact widening, one rounding */
}

/* in float2.c */
extern float2 float2_check_range(float2 h, double src);
extern float2 float2_round_checked(double d);
extern float2 float2_from_cstring(const char *str, const char *orig);
extern int	float2_shortest(float2 h, char *buf);

#define FLOAT2_SHORTEST_LEN	16

#endif							/* PG_WARP_FLOAT2_H */
