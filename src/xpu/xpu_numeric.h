/*-------------------------------------------------------------------------
 *
 * xpu_numeric.h
 *		Opcode bodies of numeric as 128-bit fixed point (xpu_step.h states
 *		the contract).
 *
 * A numeric register holds an int128 v meaning v / 10^scale, scale being
 * the register's (XpuReg.scale, 0..38), and |v| <= 10^38 - 1.  Codegen
 * gives ADD/SUB/MOD a destination scale max(scale a, scale b) and MUL the sum
 * of the scales: these are PostgreSQL's result scales, so results are
 * exact.  A result that leaves the 38-digit range is not an error but a
 * FALLBACK: PostgreSQL re-evaluates those rows (its numeric has no such
 * limit).  Rounding (NUM_RESCALE to fewer digits, casts to integers) is
 * half away from zero, as PostgreSQL's round_var; casts to integers raise
 * 22003 "smallint/integer/bigint out of range".
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_NUMERIC_H
#define XPU_NUMERIC_H

#include "xpu_step.h"

#define XPU_NUM_FALLBACK(s) \
	XPU_STEP_FAIL(s, XPU_ERR_FALLBACK, "numeric value out of the engine's 38-digit range")

/* 10^k for 0 <= k <= 38 */
XPU_HOST_DEVICE __int128
xpu_pow10(int k)
{
	__int128	r = 1;

	while (k-- > 0)
		r *= 10;
	return r;
}

/* the largest magnitude a numeric register holds: 10^38 - 1 */
XPU_HOST_DEVICE __int128
xpu_num_max(void)
{
	return xpu_pow10(38) - 1;
}

XPU_HOST_DEVICE __int128
xpu_abs128(__int128 v)
{
	return v < 0 ? -v : v;
}

/* *r = v * 10^k (k >= 0) within the range; returns 1 if it leaves it */
XPU_HOST_DEVICE int
xpu_num_upscale(__int128 v, int k, __int128 *r)
{
	__int128	p = xpu_pow10(k);

	if (xpu_abs128(v) > xpu_num_max() / p)
		return 1;
	*r = v * p;
	return 0;
}

/* v / 10^k (k >= 0) rounded half away from zero */
XPU_HOST_DEVICE __int128
xpu_num_round_down(__int128 v, int k)
{
	__int128	p = xpu_pow10(k);
	__int128	q = v / p;
	__int128	rem = v % p;

	if (xpu_abs128(rem) * 2 >= p)
		q += (v < 0 ? -1 : 1);
	return q;
}

/* compare a (scale sa) with b (scale sb): -1, 0, 1 */
XPU_HOST_DEVICE int
xpu_cmp_num(__int128 a, int sa, __int128 b, int sb)
{
	__int128	x;

	if (sa < sb)
	{
		if (xpu_num_upscale(a, sb - sa, &x))
			return a < 0 ? -1 : 1;	/* |a| exceeds any b */
		a = x;
	}
	else if (sb < sa)
	{
		if (xpu_num_upscale(b, sa - sb, &x))
			return b < 0 ? 1 : -1;
		b = x;
	}
	return a < b ? -1 : (a > b ? 1 : 0);
}

/* the arguments of a step brought to the destination's scale */
XPU_HOST_DEVICE int
xpu_num_args(const XpuCtx *s, __int128 *a, __int128 *b)
{
	int			sd = xpu_reg_scale(s->prog, s->ins->dst);

	return xpu_num_upscale(s->a->n, sd - xpu_reg_scale(s->prog, s->ins->a), a) ||
		xpu_num_upscale(s->b->n, sd - xpu_reg_scale(s->prog, s->ins->b), b);
}

XPU_HOST_DEVICE void
xpu_num_set(XpuCtx *s, __int128 v)
{
	s->d->n = v;
	*s->dn = 0;
}

XPU_STEP(ADD_NUM)
{
	__int128	a, b, m = xpu_num_max();

	if (xpu_num_args(s, &a, &b) || (b > 0 && a > m - b) || (b < 0 && a < -m - b))
		XPU_NUM_FALLBACK(s);
	else
		xpu_num_set(s, a + b);
}

XPU_STEP(SUB_NUM)
{
	__int128	a, b, m = xpu_num_max();

	if (xpu_num_args(s, &a, &b) || (b < 0 && a > m + b) || (b > 0 && a < -m + b))
		XPU_NUM_FALLBACK(s);
	else
		xpu_num_set(s, a - b);
}

/* the product's scale is the sum of the scales: no rescaling */
XPU_STEP(MUL_NUM)
{
	__int128	a = s->a->n, b = s->b->n;

	if (a != 0 && xpu_abs128(b) > xpu_num_max() / xpu_abs128(a))
		XPU_NUM_FALLBACK(s);
	else
		xpu_num_set(s, a * b);
}

/*
 * numeric_mod: a - b * trunc(a / b) at the larger scale (C's remainder of
 * the aligned values: the dividend's sign); b = 0 is 22012.  A divisor
 * beyond the range once aligned exceeds |a|: the result is a.  A dividend
 * beyond it falls back.
 */
XPU_STEP(MOD_NUM)
{
	int			sd = xpu_reg_scale(s->prog, s->ins->dst);
	__int128	a, b;

	if (s->b->n == 0)
		XPU_STEP_FAIL(s, XPU_ERR_DIVISION_BY_ZERO, "division by zero");
	else if (xpu_num_upscale(s->a->n, sd - xpu_reg_scale(s->prog, s->ins->a), &a))
		XPU_NUM_FALLBACK(s);
	else if (xpu_num_upscale(s->b->n, sd - xpu_reg_scale(s->prog, s->ins->b), &b))
		xpu_num_set(s, a);
	else
		xpu_num_set(s, a % b);
}

XPU_STEP(NEG_NUM) { xpu_num_set(s, -s->a->n); }
XPU_STEP(ABS_NUM) { xpu_num_set(s, xpu_abs128(s->a->n)); }

#define XPU_NUM_CMP(NAME, OP) \
XPU_STEP(NAME) \
{ \
	XPU_SET_I(s, xpu_cmp_num(s->a->n, xpu_reg_scale(s->prog, s->ins->a), \
							 s->b->n, xpu_reg_scale(s->prog, s->ins->b)) OP 0); \
}
XPU_NUM_CMP(EQ_NUM, ==)
XPU_NUM_CMP(NE_NUM, !=)
XPU_NUM_CMP(LT_NUM, <)
XPU_NUM_CMP(LE_NUM, <=)
XPU_NUM_CMP(GT_NUM, >)
XPU_NUM_CMP(GE_NUM, >=)

/* to the destination's scale: exact upwards, rounded half away downwards */
XPU_STEP(NUM_RESCALE)
{
	int			k = xpu_reg_scale(s->prog, s->ins->dst) -
		xpu_reg_scale(s->prog, s->ins->a);
	__int128	r;

	if (k >= 0)
	{
		if (xpu_num_upscale(s->a->n, k, &r))
			XPU_NUM_FALLBACK(s);
		else
			xpu_num_set(s, r);
	}
	else
		xpu_num_set(s, xpu_num_round_down(s->a->n, -k));
}

XPU_STEP(I8_TO_NUM)
{
	__int128	r;

	if (xpu_num_upscale(s->a->i, xpu_reg_scale(s->prog, s->ins->dst), &r))
		XPU_NUM_FALLBACK(s);
	else
		xpu_num_set(s, r);
}

#define XPU_NUM_TO_INT(NAME, MIN, MAX, MSG) \
XPU_STEP(NAME) \
{ \
	__int128	r = xpu_num_round_down(s->a->n, xpu_reg_scale(s->prog, s->ins->a)); \
	if (r < (MIN) || r > (MAX)) \
		XPU_STEP_FAIL(s, XPU_ERR_OUT_OF_RANGE, MSG); \
	else \
		XPU_SET_I(s, r); \
}
XPU_NUM_TO_INT(NUM_TO_I2, INT16_MIN, INT16_MAX, "smallint out of range")
XPU_NUM_TO_INT(NUM_TO_I4, INT32_MIN, INT32_MAX, "integer out of range")
XPU_NUM_TO_INT(NUM_TO_I8, INT64_MIN, INT64_MAX, "bigint out of range")

#endif							/* XPU_NUMERIC_H */
