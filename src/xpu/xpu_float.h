/*-------------------------------------------------------------------------
 *
 * xpu_float.h
 *		Opcode bodies of float4 / float8 (xpu_step.h states the contract).
 *
 * Semantics are PostgreSQL's (float.h, float.c): float4 arithmetic is done
 * in single precision; an infinite result from finite inputs raises 22003
 * "value out of range: overflow", a zero result of a non-zero product or
 * quotient "value out of range: underflow"; x / 0 raises 22012 unless x is
 * NaN.  Comparisons order NaN above every other value and equal to itself.
 * Casts to integers round with rint() (ties to even) and raise the target
 * type's "out of range" error for NaN and values outside its range.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_FLOAT_H
#define XPU_FLOAT_H

#include <math.h>

#include "xpu_step.h"

#define xpu_isnan(x)	((x) != (x))
#define xpu_isinf(x)	((x) == HUGE_VAL || (x) == -HUGE_VAL)
#define xpu_isinf4(x)	((x) == HUGE_VALF || (x) == -HUGE_VALF)

#define XPU_FLOAT_OVERFLOW(s) \
	XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, "value out of range: overflow")
#define XPU_FLOAT_UNDERFLOW(s) \
	XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, "value out of range: underflow")

/* PostgreSQL's total order of floats: -1, 0, 1 (NaN = NaN > all) */
XPU_HOST_DEVICE int
xpu_cmp_f8(double a, double b)
{
	if (xpu_isnan(a))
		return xpu_isnan(b) ? 0 : 1;
	if (xpu_isnan(b))
		return -1;
	return a < b ? -1 : (a > b ? 1 : 0);
}

/*
 * XPU_FLOAT_BODIES: the opcodes of one width W whose C type is CT, value
 * field F, infinity test ISINF.
 */
#define XPU_FLOAT_BODIES(W, CT, F, ISINF) \
XPU_STEP(ADD_##W) \
{ \
	CT			a = s->a->F, b = s->b->F, r = a + b; \
	if (ISINF(r) && !ISINF(a) && !ISINF(b)) \
		XPU_FLOAT_OVERFLOW(s); \
	else \
	{ s->d->F = r; *s->dn = 0; } \
} \
XPU_STEP(SUB_##W) \
{ \
	CT			a = s->a->F, b = s->b->F, r = a - b; \
	if (ISINF(r) && !ISINF(a) && !ISINF(b)) \
		XPU_FLOAT_OVERFLOW(s); \
	else \
	{ s->d->F = r; *s->dn = 0; } \
} \
XPU_STEP(MUL_##W) \
{ \
	CT			a = s->a->F, b = s->b->F, r = a * b; \
	if (ISINF(r) && !ISINF(a) && !ISINF(b)) \
		XPU_FLOAT_OVERFLOW(s); \
	else if (r == 0 && a != 0 && b != 0) \
		XPU_FLOAT_UNDERFLOW(s); \
	else \
	{ s->d->F = r; *s->dn = 0; } \
} \
XPU_STEP(DIV_##W) \
{ \
	CT			a = s->a->F, b = s->b->F, r; \
	if (b == 0 && !xpu_isnan(a)) \
	{ \
		XPU_STEP_FAIL(s, XPU_ERR_DIVISION_BY_ZERO, "division by zero"); \
		return; \
	} \
	r = a / b; \
	if (ISINF(r) && !ISINF(a)) \
		XPU_FLOAT_OVERFLOW(s); \
	else if (r == 0 && a != 0 && !ISINF(b)) \
		XPU_FLOAT_UNDERFLOW(s); \
	else \
	{ s->d->F = r; *s->dn = 0; } \
} \
XPU_STEP(NEG_##W) { s->d->F = -s->a->F; *s->dn = 0; } \
XPU_STEP(ABS_##W) \
{ \
	s->d->F = (s->a->F < 0 || (s->a->F == 0 && 1 / s->a->F < 0)) ? -s->a->F : s->a->F; \
	*s->dn = 0; \
} \
XPU_STEP(EQ_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) == 0); } \
XPU_STEP(NE_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) != 0); } \
XPU_STEP(LT_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) < 0); } \
XPU_STEP(LE_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) <= 0); } \
XPU_STEP(GT_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) > 0); } \
XPU_STEP(GE_##W) { XPU_SET_I(s, xpu_cmp_f8(s->a->F, s->b->F) >= 0); }

XPU_FLOAT_BODIES(F4, float, f4, xpu_isinf4)
XPU_FLOAT_BODIES(F8, double, f8, xpu_isinf)

/* IN_F8: as IN_INT over float8 values in PostgreSQL's order */
XPU_STEP(IN_F8)
{
	const XpuInList *l = (const XpuInList *) xpu_const_ptr(s);
	const double *v = (const double *) (l + 1);
	double		x = s->a->f8;
	int32_t		lo = 0, hi = l->n - 1, found = 0;

	if (l->sorted)
	{
		while (lo <= hi && !found)
		{
			int32_t		mid = lo + (hi - lo) / 2;
			int			c = xpu_cmp_f8(v[mid], x);

			if (c == 0)
				found = 1;
			else if (c < 0)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
	}
	else
	{
		for (lo = 0; lo < l->n && !found; lo++)
			found = (xpu_cmp_f8(v[lo], x) == 0);
	}
	s->d->i = found;
	*s->dn = (!found && l->has_null);
}

/* casts from integers (int2/int4 are widened to int8 first: exact) */
XPU_STEP(I8_TO_F4) { s->d->f4 = (float) s->a->i; *s->dn = 0; }
XPU_STEP(I8_TO_F8) { s->d->f8 = (double) s->a->i; *s->dn = 0; }
XPU_STEP(F4_TO_F8) { s->d->f8 = (double) s->a->f4; *s->dn = 0; }

XPU_STEP(F8_TO_F4)
{
	double		a = s->a->f8;
	float		r = (float) a;

	if (xpu_isinf4(r) && !xpu_isinf(a))
		XPU_FLOAT_OVERFLOW(s);
	else if (r == 0 && a != 0)
		XPU_FLOAT_UNDERFLOW(s);
	else
	{
		s->d->f4 = r;
		*s->dn = 0;
	}
}

/*
 * Casts to integers: round to the nearest (ties to even, as rint), then the
 * range test of PostgreSQL's FLOATn_FITS_IN_INTm: MIN <= x < -MIN, done in
 * the source type (so float4 2147483520 fits int4 and 2147483648 not).
 */
#define XPU_FLOAT_TO_INT(NAME, CT, F, RINT, MIN, MSG) \
XPU_STEP(NAME) \
{ \
	CT			x = RINT(s->a->F); \
	if (xpu_isnan(x) || !(x >= (CT) (MIN) && x < -((CT) (MIN)))) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, x); \
}

XPU_FLOAT_TO_INT(F4_TO_I2, float, f4, rintf, INT16_MIN, "smallint out of range")
XPU_FLOAT_TO_INT(F4_TO_I4, float, f4, rintf, INT32_MIN, "integer out of range")
XPU_FLOAT_TO_INT(F4_TO_I8, float, f4, rintf, INT64_MIN, "bigint out of range")
XPU_FLOAT_TO_INT(F8_TO_I2, double, f8, rint, INT16_MIN, "smallint out of range")
XPU_FLOAT_TO_INT(F8_TO_I4, double, f8, rint, INT32_MIN, "integer out of range")
XPU_FLOAT_TO_INT(F8_TO_I8, double, f8, rint, INT64_MIN, "bigint out of range")

#endif							/* XPU_FLOAT_H */
