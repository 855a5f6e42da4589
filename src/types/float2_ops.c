/*-------------------------------------------------------------------------
 *
 * float2_ops.c
 *		Operators, operator-class support and aggregate helpers of the float2
 *		type (IEEE 754 binary16).
 *
 *	- Arithmetic on two float2 values computes in float4 with float4's
 *	  checks (22003 overflow/underflow, 22012 division by zero) and rounds
 *	  the result to the nearest half, ties to even; a finite result that
 *	  rounds to an infinity is an overflow error, a non-zero one that rounds
 *	  to zero an underflow error.  float4 has more than twice the bits of a
 *	  half plus two, so the result is the correctly rounded one (no double
 *	  rounding).
 *	- The mixed forms (float2 with float4, float2 with float8) are float4's
 *	  and float8's operators on the exact widened value.
 *	- Comparisons are float4's: NaNs are equal to each other and above
 *	  every number, -0 equals 0.  Hashing hashes the float8 value as
 *	  hashfloat4/hashfloat8 do, so equal float2, float4 and float8 values
 *	  hash alike (the float_ops hash family holds all three).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/fmgrprotos.h"
#include "utils/sortsupport.h"

#include "pg_warp.h"
#include "types/float2.h"

/* the arguments, widened exactly */
#define ARG_F2_AS_F4(n)		float2_to_float(PG_GETARG_FLOAT2(n))
#define ARG_F2_AS_F8(n)		float2_to_double(PG_GETARG_FLOAT2(n))

/*
 * A float4 result r rounded to the nearest half; 22003 when a finite r
 * rounds to an infinity or a non-zero r to zero.
 */
static float2
round_result(float4 r)
{
	return float2_check_range(float2_from_float(r), isnan(r) ? 0 : r);
}

/* ----------------------------------------------------------------
 * Arithmetic
 * ----------------------------------------------------------------
 */

/*
 * float2 OP float2 returns float2: float4's operator (float4_pl, ...,
 * with its errors), the result rounded by round_result.
 */
#define FLOAT2_ARITH(name, op4) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	PG_RETURN_FLOAT2(round_result(op4(ARG_F2_AS_F4(0), ARG_F2_AS_F4(1)))); \
}

FLOAT2_ARITH(float2pl, float4_pl)
FLOAT2_ARITH(float2mi, float4_mi)
FLOAT2_ARITH(float2mul, float4_mul)
FLOAT2_ARITH(float2div, float4_div)

/*
 * The mixed forms: float2 OP float4 and float4 OP float2 return float4,
 * float2 OP float8 and float8 OP float2 return float8, by float4's and
 * float8's operators on the exactly widened float2.
 */
#define FLOAT2_MIXED_ARITH(name, ret, op, left, right) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	ret(op(left, right)); \
}

#define FLOAT2_MIXED_ARITH_ALL(op, suffix) \
	FLOAT2_MIXED_ARITH(float24##suffix, PG_RETURN_FLOAT4, float4_##op, ARG_F2_AS_F4(0), PG_GETARG_FLOAT4(1)) \
	FLOAT2_MIXED_ARITH(float42##suffix, PG_RETURN_FLOAT4, float4_##op, PG_GETARG_FLOAT4(0), ARG_F2_AS_F4(1)) \
	FLOAT2_MIXED_ARITH(float28##suffix, PG_RETURN_FLOAT8, float8_##op, ARG_F2_AS_F8(0), PG_GETARG_FLOAT8(1)) \
	FLOAT2_MIXED_ARITH(float82##suffix, PG_RETURN_FLOAT8, float8_##op, PG_GETARG_FLOAT8(0), ARG_F2_AS_F8(1))

FLOAT2_MIXED_ARITH_ALL(pl, pl)
FLOAT2_MIXED_ARITH_ALL(mi, mi)
FLOAT2_MIXED_ARITH_ALL(mul, mul)
FLOAT2_MIXED_ARITH_ALL(div, div)

PG_FUNCTION_INFO_V1(float2um);

/* -float2: the sign bit flipped (NaNs too, as float4um does) */
Datum
float2um(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(PG_GETARG_FLOAT2(0) ^ FLOAT2_SIGN);
}

PG_FUNCTION_INFO_V1(float2up);

/* +float2: the value itself */
Datum
float2up(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(PG_GETARG_FLOAT2(0));
}

PG_FUNCTION_INFO_V1(float2abs);

/* abs(float2): the sign bit cleared (as fabsf) */
Datum
float2abs(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(PG_GETARG_FLOAT2(0) & ~FLOAT2_SIGN);
}

PG_FUNCTION_INFO_V1(float2larger);

/* float2larger(a, b): b unless a > b (float4larger's rule) */
Datum
float2larger(PG_FUNCTION_ARGS)
{
	float2		a = PG_GETARG_FLOAT2(0);
	float2		b = PG_GETARG_FLOAT2(1);

	PG_RETURN_FLOAT2(float4_gt(float2_to_float(a), float2_to_float(b)) ? a : b);
}

PG_FUNCTION_INFO_V1(float2smaller);

/* float2smaller(a, b): b unless a < b (float4smaller's rule) */
Datum
float2smaller(PG_FUNCTION_ARGS)
{
	float2		a = PG_GETARG_FLOAT2(0);
	float2		b = PG_GETARG_FLOAT2(1);

	PG_RETURN_FLOAT2(float4_lt(float2_to_float(a), float2_to_float(b)) ? a : b);
}

/* ----------------------------------------------------------------
 * Comparisons (btree support)
 * ----------------------------------------------------------------
 */

/*
 * The six comparisons and the btree order function of one pair of types:
 * prefix##eq, ne, lt, le, gt, ge return bool and prefix##cmp returns int4
 * (-1, 0, 1), by float4's or float8's NaN-aware comparisons ('kind') on
 * the exactly widened arguments.
 */
#define FLOAT2_COMPARE_FN(name, type, left, right, test) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	type		a = (left); \
	type		b = (right); \
	PG_RETURN_BOOL(test(a, b)); \
}

#define FLOAT2_ORDER_FN(name, type, left, right, cmp) \
PG_FUNCTION_INFO_V1(name); \
Datum \
name(PG_FUNCTION_ARGS) \
{ \
	type		a = (left); \
	type		b = (right); \
	PG_RETURN_INT32(cmp(a, b)); \
}

#define FLOAT2_COMPARISONS(prefix, type, left, right, kind) \
	FLOAT2_COMPARE_FN(prefix##eq, type, left, right, kind##_eq) \
	FLOAT2_COMPARE_FN(prefix##ne, type, left, right, kind##_ne) \
	FLOAT2_COMPARE_FN(prefix##lt, type, left, right, kind##_lt) \
	FLOAT2_COMPARE_FN(prefix##le, type, left, right, kind##_le) \
	FLOAT2_COMPARE_FN(prefix##gt, type, left, right, kind##_gt) \
	FLOAT2_COMPARE_FN(prefix##ge, type, left, right, kind##_ge) \
	FLOAT2_ORDER_FN(prefix##cmp, type, left, right, kind##_cmp_internal)

FLOAT2_COMPARISONS(float2, float4, ARG_F2_AS_F4(0), ARG_F2_AS_F4(1), float4)
FLOAT2_COMPARISONS(float24, float4, ARG_F2_AS_F4(0), PG_GETARG_FLOAT4(1), float4)
FLOAT2_COMPARISONS(float42, float4, PG_GETARG_FLOAT4(0), ARG_F2_AS_F4(1), float4)
FLOAT2_COMPARISONS(float28, float8, ARG_F2_AS_F8(0), PG_GETARG_FLOAT8(1), float8)
FLOAT2_COMPARISONS(float82, float8, PG_GETARG_FLOAT8(0), ARG_F2_AS_F8(1), float8)

/* sort comparator: float4's order of the widened values */
static int
float2_fastcmp(Datum x, Datum y, SortSupport ssup)
{
	return float4_cmp_internal(float2_to_float(DatumGetFloat2(x)),
							   float2_to_float(DatumGetFloat2(y)));
}

PG_FUNCTION_INFO_V1(float2_sortsupport);

/* btree support function 2: sorts without going through fmgr */
Datum
float2_sortsupport(PG_FUNCTION_ARGS)
{
	SortSupport ssup = (SortSupport) PG_GETARG_POINTER(0);

	ssup->comparator = float2_fastcmp;
	PG_RETURN_VOID();
}

PG_FUNCTION_INFO_V1(in_range_float2_float8);

/*
 * btree support function 3 (window RANGE frames with a float8 offset):
 * float4's in_range on the exactly widened values.
 */
Datum
in_range_float2_float8(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall5(in_range_float8_float8,
							   Float8GetDatum(ARG_F2_AS_F8(0)),
							   Float8GetDatum(ARG_F2_AS_F8(1)),
							   PG_GETARG_DATUM(2), PG_GETARG_DATUM(3),
							   PG_GETARG_DATUM(4));
}

/* ----------------------------------------------------------------
 * Hashing
 * ----------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(float2hash);

/* hash support 1: hashfloat8 of the value (as hashfloat4 does for float4) */
Datum
float2hash(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(hashfloat8, Float8GetDatum(ARG_F2_AS_F8(0)));
}

PG_FUNCTION_INFO_V1(float2hashextended);

/* hash support 2: hashfloat8extended of the value, with the seed */
Datum
float2hashextended(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall2(hashfloat8extended, Float8GetDatum(ARG_F2_AS_F8(0)),
							   PG_GETARG_DATUM(1));
}

/* ----------------------------------------------------------------
 * Aggregates
 * ----------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(float2_sum_accum);

/*
 * Transition of sum(float2), state float4 (not strict): the first non-null
 * value starts the sum, then float4_pl adds each one, so that the result
 * is sum(float4) of the same values, errors included.
 */
Datum
float2_sum_accum(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(1))
	{
		if (PG_ARGISNULL(0))
			PG_RETURN_NULL();
		PG_RETURN_DATUM(PG_GETARG_DATUM(0));
	}
	if (PG_ARGISNULL(0))
		PG_RETURN_FLOAT4(ARG_F2_AS_F4(1));
	PG_RETURN_FLOAT4(float4_pl(PG_GETARG_FLOAT4(0), ARG_F2_AS_F4(1)));
}

PG_FUNCTION_INFO_V1(float2_accum);

/*
 * Transition of avg, stddev and variance of float2: PostgreSQL's
 * float8_accum (state float8[3]: N, sum(X), Sxx) on the exact float8 value.
 * The aggregate call context is passed on, so that float8_accum updates
 * the state in place as it does for float8 aggregates.
 */
Datum
float2_accum(PG_FUNCTION_ARGS)
{
	LOCAL_FCINFO(inner, 2);

	InitFunctionCallInfoData(*inner, NULL, 2, InvalidOid, fcinfo->context, NULL);
	inner->args[0].value = PG_GETARG_DATUM(0);
	inner->args[0].isnull = false;
	inner->args[1].value = Float8GetDatum(ARG_F2_AS_F8(1));
	inner->args[1].isnull = false;
	return float8_accum(inner);
}
