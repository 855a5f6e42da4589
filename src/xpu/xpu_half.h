/*-------------------------------------------------------------------------
 *
 * xpu_half.h
 *		IEEE 754 binary16 ("half", pg_warp's float2) bits and their exact
 *		conversions to and from float and double, in plain C that the
 *		extension (types/float2.h), the CPU engine and device code share: one
 *		definition, so that the engine rounds bit for bit as float2's SQL
 *		functions do.  No half-precision hardware or intrinsics are used.
 *
 * Conversions to float and double are exact; conversions from them round
 * to nearest, ties to even, straight from the source value (a double is
 * never rounded to float first, which could round twice).  NaNs keep
 * their sign and the top bits of their payload, as numpy.float16 does:
 * half -> float shifts the 10 payload bits up; float/double -> half keeps
 * the top 10 bits and sets the lowest one when they would all be zero (so
 * that a NaN stays a NaN).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_HALF_H
#define XPU_HALF_H

#include <string.h>

#include "xpu_common.h"

#define XPU_HALF_SIGN		0x8000
#define XPU_HALF_EXP_MASK	0x7c00
#define XPU_HALF_FRAC_MASK	0x03ff
#define XPU_HALF_INF		0x7c00

/* whether h is a NaN / an infinity / a zero of either sign */
XPU_HOST_DEVICE int
xpu_half_isnan(uint16_t h)
{
	return (h & XPU_HALF_EXP_MASK) == XPU_HALF_EXP_MASK && (h & XPU_HALF_FRAC_MASK) != 0;
}

XPU_HOST_DEVICE int
xpu_half_isinf(uint16_t h)
{
	return (h & ~XPU_HALF_SIGN) == XPU_HALF_INF;
}

XPU_HOST_DEVICE int
xpu_half_iszero(uint16_t h)
{
	return (h & ~XPU_HALF_SIGN) == 0;
}

/* the exact value of h as a float (NaN payloads as numpy does) */
XPU_HOST_DEVICE float
xpu_half_to_float(uint16_t h)
{
	uint32_t	sign = (uint32_t) (h & XPU_HALF_SIGN) << 16;
	uint32_t	exp = (h >> 10) & 0x1f;
	uint32_t	frac = h & XPU_HALF_FRAC_MASK;
	uint32_t	bits;
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
		bits = sign | ((uint32_t) (e + 127) << 23) | ((frac & XPU_HALF_FRAC_MASK) << 13);
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* the exact value of h as a double (NaN payloads as numpy does) */
XPU_HOST_DEVICE double
xpu_half_to_double(uint16_t h)
{
	uint64_t	bits;
	double		d;

	if ((h & XPU_HALF_EXP_MASK) == XPU_HALF_EXP_MASK)
	{
		bits = ((uint64_t) (h & XPU_HALF_SIGN) << 48) | UINT64_C(0x7ff0000000000000) |
			((uint64_t) (h & XPU_HALF_FRAC_MASK) << 42);
		memcpy(&d, &bits, sizeof(d));
		return d;
	}
	return (double) xpu_half_to_float(h);	/* exact */
}

/*
 * d rounded to the nearest half, ties to even; NaN and infinities keep
 * their kind; a finite value at or beyond 65520 becomes an infinity (the
 * caller checks for overflow).  'tie' breaks an exact tie when d is itself
 * the rounded form of a longer value: > 0 when that value's magnitude is
 * above |d|, < 0 when below, 0 when d is exact.
 */
XPU_HOST_DEVICE uint16_t
xpu_half_from_double_tie(double d, int tie)
{
	uint64_t	bits;
	uint16_t	sign;
	int			bexp;
	int			e;
	int			shift;
	uint64_t	sig,
				q,
				rem,
				halfway;

	memcpy(&bits, &d, sizeof(bits));
	sign = (uint16_t) ((bits >> 48) & XPU_HALF_SIGN);
	bexp = (int) ((bits >> 52) & 0x7ff);
	sig = bits & UINT64_C(0x000fffffffffffff);
	if (bexp == 0x7ff)
	{
		uint16_t	frac = (uint16_t) (sig >> 42);

		if (sig == 0)
			return (uint16_t) (sign | XPU_HALF_INF);
		return (uint16_t) (sign | XPU_HALF_INF | (frac != 0 ? frac : 1));
	}
	if (bexp == 0)
		return sign;			/* zero or a double subnormal: far below 2^-25 */
	e = bexp - 1023;
	if (e > 15)
		return (uint16_t) (sign | XPU_HALF_INF);
	sig |= UINT64_C(1) << 52;
	/* keep 11 bits for a normal half, fewer for a subnormal one (units of 2^-24) */
	shift = e >= -14 ? 42 : 42 + (-14 - e);
	if (shift > 53)
		return sign;			/* below half of the smallest subnormal */
	q = sig >> shift;
	rem = sig & ((UINT64_C(1) << shift) - 1);
	halfway = UINT64_C(1) << (shift - 1);
	if (rem > halfway ||
		(rem == halfway && (tie > 0 || (tie == 0 && (q & 1)))))
		q++;
	if (e < -14)
		return (uint16_t) (sign | (uint16_t) q);	/* q == 1024 is the smallest normal */
	/* normal: biased exponent e + 15, q = 1024 + fraction (a carry moves up) */
	if (((uint64_t) (e + 14) << 10) + q >= XPU_HALF_INF)
		return (uint16_t) (sign | XPU_HALF_INF);
	return (uint16_t) (sign | (uint16_t) (((uint64_t) (e + 14) << 10) + q));
}

/* d rounded to the nearest half, ties to even (see xpu_half_from_double_tie) */
XPU_HOST_DEVICE uint16_t
xpu_half_from_double(double d)
{
	return xpu_half_from_double_tie(d, 0);
}

/* f rounded to the nearest half, ties to even (NaN payloads as numpy does) */
XPU_HOST_DEVICE uint16_t
xpu_half_from_float(float f)
{
	uint32_t	bits;

	memcpy(&bits, &f, sizeof(bits));
	if ((bits & 0x7f800000) == 0x7f800000 && (bits & 0x007fffff) != 0)
	{
		uint16_t	frac = (uint16_t) ((bits & 0x007fffff) >> 13);

		return (uint16_t) (((bits >> 16) & XPU_HALF_SIGN) | XPU_HALF_INF | (frac != 0 ? frac : 1));
	}
	return xpu_half_from_double((double) f);	/* exact widening, one rounding */
}

#endif							/* XPU_HALF_H */
