/*-------------------------------------------------------------------------
 *
 * xpu_float2.h
 *		Opcode bodies of pg_warp's float2 (IEEE 754 binary16; xpu_step.h
 *		states the contract).  A float2 register holds the half's 16 bits in
 *		v.i; xpu_half.h converts them.
 *
 * Semantics are float2_ops.c's and float2.c's, bit for bit:
 *	- float2 OP float2 is float4's operator on the exactly widened values
 *	  (with float4's errors: 22003 overflow/underflow, 22012 division by
 *	  zero), its result rounded to the nearest half, ties to even; a finite
 *	  result that rounds to an infinity is an overflow, a non-zero one that
 *	  rounds to zero an underflow (22003).  float4 has more than twice a
 *	  half's bits plus two, so this is the correctly rounded result.
 *	- - and abs flip / clear the sign bit (NaNs too).
 *	- Comparisons are float4's on the widened values: NaNs equal each
 *	  other and sort above every number, -0 equals 0.
 *	- float4 / float8 / int8 -> float2 round to nearest even with the same
 *	  range errors; float2 -> float4 / float8 are exact.  The mixed forms
 *	  (float2 with float4 or float8) and float2 -> int2/4/8 are float4's and
 *	  float8's opcodes on the widened value (codegen.c emits the widening).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_FLOAT2_H
#define XPU_FLOAT2_H

#include "xpu_float.h"
#include "xpu_half.h"

/* the half of register value v */
#define XPU_F2(v)		((uint16_t) (v)->i)

/*
 * The result r (a float4 value, or the double d of a cast) as a half, with
 * float2_check_range's errors: 22003 when a finite source rounds to an
 * infinity or a non-zero one to zero.
 */
XPU_HOST_DEVICE void
xpu_f2_set_checked(XpuCtx *s, uint16_t h, double src)
{
	if (xpu_half_isinf(h) && !xpu_isinf(src) && !xpu_isnan(src))
		XPU_FLOAT_OVERFLOW(s);
	else if (xpu_half_iszero(h) && src != 0 && !xpu_isnan(src))
		XPU_FLOAT_UNDERFLOW(s);
	else
		XPU_SET_I(s, h);
}

/* a float4 result of float2 arithmetic, rounded */
XPU_HOST_DEVICE void
xpu_f2_set_f4(XpuCtx *s, float r)
{
	xpu_f2_set_checked(s, xpu_half_from_float(r), (double) r);
}

XPU_STEP(ADD_F2)
{
	float		a = xpu_half_to_float(XPU_F2(s->a)),
				b = xpu_half_to_float(XPU_F2(s->b)),
				r = a + b;

	if (xpu_isinf4(r) && !xpu_isinf4(a) && !xpu_isinf4(b))
		XPU_FLOAT_OVERFLOW(s);
	else
		xpu_f2_set_f4(s, r);
}

XPU_STEP(SUB_F2)
{
	float		a = xpu_half_to_float(XPU_F2(s->a)),
				b = xpu_half_to_float(XPU_F2(s->b)),
				r = a - b;

	if (xpu_isinf4(r) && !xpu_isinf4(a) && !xpu_isinf4(b))
		XPU_FLOAT_OVERFLOW(s);
	else
		xpu_f2_set_f4(s, r);
}

XPU_STEP(MUL_F2)
{
	float		a = xpu_half_to_float(XPU_F2(s->a)),
				b = xpu_half_to_float(XPU_F2(s->b)),
				r = a * b;

	if (xpu_isinf4(r) && !xpu_isinf4(a) && !xpu_isinf4(b))
		XPU_FLOAT_OVERFLOW(s);
	else if (r == 0 && a != 0 && b != 0)
		XPU_FLOAT_UNDERFLOW(s);
	else
		xpu_f2_set_f4(s, r);
}

XPU_STEP(DIV_F2)
{
	float		a = xpu_half_to_float(XPU_F2(s->a)),
				b = xpu_half_to_float(XPU_F2(s->b)),
				r;

	if (b == 0 && !xpu_isnan(a))
	{
		XPU_STEP_FAIL(s, XPU_ERR_DIVISION_BY_ZERO, "division by zero");
		return;
	}
	r = a / b;
	if (xpu_isinf4(r) && !xpu_isinf4(a))
		XPU_FLOAT_OVERFLOW(s);
	else if (r == 0 && a != 0 && !xpu_isinf4(b))
		XPU_FLOAT_UNDERFLOW(s);
	else
		xpu_f2_set_f4(s, r);
}

XPU_STEP(NEG_F2) { XPU_SET_I(s, XPU_F2(s->a) ^ XPU_HALF_SIGN); }
XPU_STEP(ABS_F2) { XPU_SET_I(s, XPU_F2(s->a) & ~XPU_HALF_SIGN); }

/* PostgreSQL's float order of two halves (xpu_cmp_f8 on exact values) */
XPU_HOST_DEVICE int
xpu_cmp_f2(const XpuCtx *s)
{
	return xpu_cmp_f8((double) xpu_half_to_float(XPU_F2(s->a)),
					  (double) xpu_half_to_float(XPU_F2(s->b)));
}

XPU_STEP(EQ_F2) { XPU_SET_I(s, xpu_cmp_f2(s) == 0); }
XPU_STEP(NE_F2) { XPU_SET_I(s, xpu_cmp_f2(s) != 0); }
XPU_STEP(LT_F2) { XPU_SET_I(s, xpu_cmp_f2(s) < 0); }
XPU_STEP(LE_F2) { XPU_SET_I(s, xpu_cmp_f2(s) <= 0); }
XPU_STEP(GT_F2) { XPU_SET_I(s, xpu_cmp_f2(s) > 0); }
XPU_STEP(GE_F2) { XPU_SET_I(s, xpu_cmp_f2(s) >= 0); }

/* casts: widening is exact, narrowing rounds with range errors */
XPU_STEP(F2_TO_F4)
{
	s->d->f4 = xpu_half_to_float(XPU_F2(s->a));
	*s->dn = 0;
}

XPU_STEP(F2_TO_F8)
{
	s->d->f8 = xpu_half_to_double(XPU_F2(s->a));
	*s->dn = 0;
}

XPU_STEP(F4_TO_F2) { xpu_f2_set_f4(s, s->a->f4); }

XPU_STEP(F8_TO_F2)
{
	xpu_f2_set_checked(s, xpu_half_from_double(s->a->f8), s->a->f8);
}

/*
 * int8 (and int2/int4, widened) -> float2 through double, as float2.c: an
 * int8 that double does not hold exactly is far beyond the half range.
 */
XPU_STEP(I8_TO_F2)
{
	double		d = (double) s->a->i;

	xpu_f2_set_checked(s, xpu_half_from_double(d), d);
}

XPU_STEP(CONST_F2) { XPU_SET_I(s, (uint16_t) s->ins->imm); }

#endif							/* XPU_FLOAT2_H */
