/*-------------------------------------------------------------------------
 *
 * xpu_bool.h
 *		Opcode bodies of SQL's three-valued logic (AND, OR, NOT, IS [NOT]
 *		TRUE/FALSE/NULL) and of the type-independent merges that CASE,
 *		COALESCE and NULLIF are lowered onto (xpu_step.h states the
 *		contract).
 *
 * A bool register holds 0 or 1 in v.i plus its null flag.  AND is false
 * when either side is false, else NULL when either is NULL; OR is true when
 * either side is true, else NULL when either is NULL.  The interpreter
 * evaluates the right-hand side only where it matters (MASK_PUSH_NOT_FALSE
 * for AND, MASK_PUSH_NOT_TRUE for OR), so a right side that was not
 * evaluated holds an arbitrary value exactly where the left side decides.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_BOOL_H
#define XPU_BOOL_H

#include "xpu_step.h"

/* is the argument a non-null true / non-null false */
#define XPU_TRUE(v, n)		(!(n) && (v)->i != 0)
#define XPU_FALSE(v, n)		(!(n) && (v)->i == 0)

XPU_STEP(AND)
{
	if (XPU_FALSE(s->a, s->an) || XPU_FALSE(s->b, s->bn))
		XPU_SET_I(s, 0);
	else if (s->an || s->bn)
		*s->dn = 1;
	else
		XPU_SET_I(s, 1);
}

XPU_STEP(OR)
{
	if (XPU_TRUE(s->a, s->an) || XPU_TRUE(s->b, s->bn))
		XPU_SET_I(s, 1);
	else if (s->an || s->bn)
		*s->dn = 1;
	else
		XPU_SET_I(s, 0);
}

XPU_STEP(NOT) { XPU_SET_I(s, s->a->i == 0); }
XPU_STEP(IS_TRUE) { XPU_SET_I(s, XPU_TRUE(s->a, s->an)); }
XPU_STEP(IS_NOT_TRUE) { XPU_SET_I(s, !XPU_TRUE(s->a, s->an)); }
XPU_STEP(IS_FALSE) { XPU_SET_I(s, XPU_FALSE(s->a, s->an)); }
XPU_STEP(IS_NOT_FALSE) { XPU_SET_I(s, !XPU_FALSE(s->a, s->an)); }
XPU_STEP(IS_NULL) { XPU_SET_I(s, s->an != 0); }
XPU_STEP(IS_NOT_NULL) { XPU_SET_I(s, s->an == 0); }

/* type-independent copies: the whole 16-byte slot and the null flag */
XPU_STEP(MOVE)
{
	*s->d = *s->a;
	*s->dn = s->an;
}

/* CASE WHEN a THEN b ELSE c END, once b and c are evaluated under masks */
XPU_STEP(SELECT)
{
	if (XPU_TRUE(s->a, s->an))
	{
		*s->d = *s->b;
		*s->dn = s->bn;
	}
	else
	{
		*s->d = *s->c;
		*s->dn = s->cn;
	}
}

/* COALESCE(a, b), b evaluated where a is NULL */
XPU_STEP(COALESCE)
{
	if (!s->an)
	{
		*s->d = *s->a;
		*s->dn = 0;
	}
	else
	{
		*s->d = *s->b;
		*s->dn = s->bn;
	}
}

/* NULLIF(x, y) as NULLIF(a, b) where b holds x = y */
XPU_STEP(NULLIF)
{
	if (XPU_TRUE(s->b, s->bn))
		*s->dn = 1;
	else
	{
		*s->d = *s->a;
		*s->dn = s->an;
	}
}

/* bool::int4 (1 or 0) and int4::bool (true unless 0), as int4(bool), bool(int4) */
XPU_STEP(BOOL_TO_I4) { XPU_SET_I(s, s->a->i != 0); }
XPU_STEP(I4_TO_BOOL) { XPU_SET_I(s, s->a->i != 0); }

#endif							/* XPU_BOOL_H */
