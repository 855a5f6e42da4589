/*-------------------------------------------------------------------------
 *
 * float2.h
 *		The float2 type (IEEE 754 binary16, "half"): its representation and
 *		the exact conversions between its bits and float/double, shared by
 *		float2.c (I/O, casts) and float2_ops.c (operators, aggregates).
 *
 * A float2 Datum is passed by value and holds the 16 bits of the half in
 * the low bits (typlen 2, alignment int2).  The conversions (exact to
 * float and double, round-to-nearest-even from them) are src/xpu/xpu_half.h's,
 * shared with the engine's opcodes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FLOAT2_H
#define PG_WARP_FLOAT2_H

#include "fmgr.h"

#include "xpu/xpu_half.h"

typedef uint16 float2;

#define DatumGetFloat2(d)		((float2) DatumGetUInt16(d))
#define Float2GetDatum(h)		UInt16GetDatum(h)
#define PG_GETARG_FLOAT2(n)		DatumGetFloat2(PG_GETARG_DATUM(n))
#define PG_RETURN_FLOAT2(h)		return Float2GetDatum(h)

#define FLOAT2_SIGN			XPU_HALF_SIGN
#define FLOAT2_EXP_MASK		XPU_HALF_EXP_MASK
#define FLOAT2_FRAC_MASK	XPU_HALF_FRAC_MASK
#define FLOAT2_INF			XPU_HALF_INF

/*
 * The bit tests and conversions are xpu_half.h's, which the engine's
 * opcodes use too (so that both round alike): see there.
 */
#define float2_isnan(h)					((bool) xpu_half_isnan(h))
#define float2_isinf(h)					((bool) xpu_half_isinf(h))
#define float2_iszero(h)				((bool) xpu_half_iszero(h))
#define float2_to_float(h)				xpu_half_to_float(h)
#define float2_to_double(h)				xpu_half_to_double(h)
#define float2_from_double_tie(d, tie)	xpu_half_from_double_tie((d), (tie))
#define float2_from_double(d)			xpu_half_from_double(d)
#define float2_from_float(f)			xpu_half_from_float(f)

/* in float2.c */
extern float2 float2_check_range(float2 h, double src);
extern float2 float2_round_checked(double d);
extern float2 float2_from_cstring(const char *str, const char *orig);
extern int	float2_shortest(float2 h, char *buf);

#define FLOAT2_SHORTEST_LEN	16

#endif							/* PG_WARP_FLOAT2_H */
