/*-------------------------------------------------------------------------
 *
 * xpu_int.h
 *		Opcode bodies of int2 / int4 / int8 (xpu_step.h states the contract)
 *		and of the comparisons shared by every type held in the int64 slot
 *		(bool, integers, date, time, timestamp[tz]).
 *
 * Semantics are PostgreSQL's (int.c, int8.c): results out of the type's
 * range raise 22003 "smallint/integer/bigint out of range", a zero divisor
 * raises 22012 "division by zero" (before any overflow check), MIN / -1
 * overflows, MIN % -1 is 0, -MIN and abs(MIN) overflow.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_INT_H
#define XPU_INT_H

#include "xpu_step.h"

/* int8 addition / subtraction / multiplication with overflow detection;
 * each returns 1 on overflow */
XPU_HOST_DEVICE int
xpu_add_i64(int64_t a, int64_t b, int64_t *r)
{
	if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
		return 1;
	*r = a + b;
	return 0;
}

XPU_HOST_DEVICE int
xpu_sub_i64(int64_t a, int64_t b, int64_t *r)
{
	if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b))
		return 1;
	*r = a - b;
	return 0;
}

XPU_HOST_DEVICE int
xpu_mul_i64(int64_t a, int64_t b, int64_t *r)
{
	__int128	p = (__int128) a * (__int128) b;

	if (p > INT64_MAX || p < INT64_MIN)
		return 1;
	*r = (int64_t) p;
	return 0;
}

/*
 * XPU_INT_BODIES: the arithmetic of one width W, range [MIN, MAX], with the
 * out-of-range message MSG.  int2 and int4 compute in int64 and check the
 * range; int8 uses the overflow-checked helpers above.
 */
#define XPU_INT_BODIES(W, MIN, MAX, MSG) \
XPU_HOST_DEVICE int \
xpu_fits_##W(int64_t v) \
{ \
	return v >= (MIN) && v <= (MAX); \
} \
XPU_STEP(ADD_##W) \
{ \
	int64_t		r; \
	if (xpu_add_i64(s->a->i, s->b->i, &r) || !xpu_fits_##W(r)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, r); \
} \
XPU_STEP(SUB_##W) \
{ \
	int64_t		r; \
	if (xpu_sub_i64(s->a->i, s->b->i, &r) || !xpu_fits_##W(r)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, r); \
} \
XPU_STEP(MUL_##W) \
{ \
	int64_t		r; \
	if (xpu_mul_i64(s->a->i, s->b->i, &r) || !xpu_fits_##W(r)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, r); \
} \
XPU_STEP(DIV_##W) \
{ \
	int64_t		a = s->a->i, b = s->b->i; \
	if (b == 0) \
		XPU_STEP_FAIL(s, XPU_ERR_DIVISION_BY_ZERO, "division by zero"); \
	else if (b == -1) \
	{ \
		if (a == (MIN)) \
			XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
		else \
			XPU_SET_I(s, -a); \
	} \
	else \
		XPU_SET_I(s, a / b); \
} \
XPU_STEP(MOD_##W) \
{ \
	int64_t		a = s->a->i, b = s->b->i; \
	if (b == 0) \
		XPU_STEP_FAIL(s, XPU_ERR_DIVISION_BY_ZERO, "division by zero"); \
	else if (b == -1) \
		XPU_SET_I(s, 0); \
	else \
		XPU_SET_I(s, a % b); \
} \
XPU_STEP(NEG_##W) \
{ \
	if (s->a->i == (MIN)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, -s->a->i); \
} \
XPU_STEP(ABS_##W) \
{ \
	if (s->a->i == (MIN)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, s->a->i < 0 ? -s->a->i : s->a->i); \
}

XPU_INT_BODIES(I2, INT16_MIN, INT16_MAX, "smallint out of range")
XPU_INT_BODIES(I4, INT32_MIN, INT32_MAX, "integer out of range")
XPU_INT_BODIES(I8, INT64_MIN, INT64_MAX, "bigint out of range")

/* casts between widths: widening is exact, narrowing checks the range */
XPU_STEP(I2_TO_I4) { XPU_SET_I(s, s->a->i); }
XPU_STEP(I2_TO_I8) { XPU_SET_I(s, s->a->i); }
XPU_STEP(I4_TO_I8) { XPU_SET_I(s, s->a->i); }

XPU_STEP(I4_TO_I2)
{
	if (!xpu_fits_I2(s->a->i))
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, "smallint out of range");
	else
		XPU_SET_I(s, s->a->i);
}

XPU_STEP(I8_TO_I2)
{
	if (!xpu_fits_I2(s->a->i))
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, "smallint out of range");
	else
		XPU_SET_I(s, s->a->i);
}

XPU_STEP(I8_TO_I4)
{
	if (!xpu_fits_I4(s->a->i))
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, "integer out of range");
	else
		XPU_SET_I(s, s->a->i);
}

/* comparisons of two values of one int64-slot type */
XPU_STEP(EQ_INT) { XPU_SET_I(s, s->a->i == s->b->i); }
XPU_STEP(NE_INT) { XPU_SET_I(s, s->a->i != s->b->i); }
XPU_STEP(LT_INT) { XPU_SET_I(s, s->a->i < s->b->i); }
XPU_STEP(LE_INT) { XPU_SET_I(s, s->a->i <= s->b->i); }
XPU_STEP(GT_INT) { XPU_SET_I(s, s->a->i > s->b->i); }
XPU_STEP(GE_INT) { XPU_SET_I(s, s->a->i >= s->b->i); }

/*
 * IN_INT: a IN (list): true when a equals an element, else NULL when the
 * list holds a NULL, else false.  A sorted list is binary-searched.
 */
XPU_STEP(IN_INT)
{
	const XpuInList *l = (const XpuInList *) xpu_const_ptr(s);
	const int64_t *v = (const int64_t *) (l + 1);
	int64_t		x = s->a->i;
	int32_t		lo = 0, hi = l->n - 1, found = 0;

	if (l->sorted)
	{
		while (lo <= hi && !found)
		{
			int32_t		mid = lo + (hi - lo) / 2;

			if (v[mid] == x)
				found = 1;
			else if (v[mid] < x)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	else
	{
		for (lo = 0; lo < l->n && !found; lo++)
			found = (v[lo] == x);
	}
	s->d->i = found;
	*s->dn = (!found && l->has_null);
}

#endif							/* XPU_INT_H */
