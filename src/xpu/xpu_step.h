/*-------------------------------------------------------------------------
 *
 * xpu_step.h
 *		The contract between the interpreter (xpu_interp.h) and the opcode
 *		bodies in the type family headers (xpu_int.h, xpu_float.h, ...).
 *
 * Every opcode NAME of kind VAL or NS in xpu_opcodes.h has a body
 *
 *		XPU_STEP(NAME) { ... }
 *
 * that computes one row's result: it reads its arguments through s->a,
 * s->b, s->c (and for NS opcodes their null flags s->an, s->bn, s->cn),
 * and writes *s->d and *s->dn.  The interpreter calls a body only for
 * active rows, and for VAL opcodes only when no argument is NULL (it sets
 * the result NULL itself otherwise), so a body may raise an error without
 * looking at the mask: XPU_STEP_FAIL records it and makes the result NULL.
 * The same body serves the GPU's per-row form and the CPU's vectorised
 * form, which is why both give the same answers.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_STEP_H
#define XPU_STEP_H

#include "xpu_program.h"

typedef struct XpuCtx
{
	const XpuInstr *ins;		/* the instruction being run */
	const XpuProgram *prog;		/* for constants and register scales */
	XpuError   *err;
	const XpuColumnData *cols;	/* the chunk's columns (LOAD_COL) */
	int64_t		row;			/* the row in the chunk (LOAD_COL) */
	const struct XpuJoinTable *const *joins;	/* the chunk's inner tables */
	int32_t		n_joins;		/* (JOIN_PROBE, JOIN_PAY) */
	struct XpuEach *each;		/* the per-row form's open probes of every
								 * match (xpu_join.h), NULL: none may run */
	uint64_t	stack;			/* the per-row form's mask stack */
	uint32_t   *matched;		/* XpuChunk.matched (JOIN_PROBE's marks) */
	uint64_t   *probes;			/* NULL, or JOIN_PROBE counts by depth
								 * (XPU_JOIN_COUNT_DEPTHS): the rows that
								 * enter each depth (EXPLAIN ANALYZE) */
	XpuValue   *d;				/* destination value and null flag */
	uint8_t    *dn;
	const XpuValue *a;			/* arguments and their null flags */
	const XpuValue *b;
	const XpuValue *c;
	uint8_t		an;
	uint8_t		bn;
	uint8_t		cn;
} XpuCtx;

#define XPU_STEP(NAME)	XPU_HOST_DEVICE void xpu_step_##NAME(XpuCtx *s)

/* record an error of this row and make its result NULL */
#define XPU_STEP_FAIL(s, code, msg) \
	do { \
		XPU_ERROR((s)->err, (code), (msg)); \
		*(s)->dn = 1; \
	} while (0)

/* the result of a VAL step: a non-null value of the int64 slot */
#define XPU_SET_I(s, v)		do { (s)->d->i = (int64_t) (v); *(s)->dn = 0; } while (0)

/* the scale of register r */
XPU_HOST_DEVICE int32_t
xpu_reg_scale(const XpuProgram *prog, int r)
{
	return XPU_REGS(prog)[r].scale;
}

/* a pointer to the constant at byte offset off of the pool */
XPU_HOST_DEVICE const char *
xpu_const_ptr(const XpuCtx *s)
{
	return XPU_CONSTS(s->prog) + s->ins->imm;
}

#endif							/* XPU_STEP_H */
