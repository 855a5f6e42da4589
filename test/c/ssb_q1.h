/*
 * ssb_q1.h
 *		SSB Q1's program as codegen compiled it before MOVE folding: WHERE
 *		d BETWEEN 1 AND 3 AND q < 25, output e * d, over chunk columns q, e,
 *		d (int4); each conjunct a CONST, a comparison and a MOVE to r0 under
 *		the masks of the ones before.  Shared by test_xpu_tile.c (the CPU
 *		interpreter's fusions of that form) and bench/cpu_engine_bench.c.
 */
#ifndef SSB_Q1_H
#define SSB_Q1_H

#include "xpu_program.h"

/* a constant int64 into the pool; its offset */
static inline int32_t
ssb_q1_const(XpuBuilder *b, int64_t v)
{
	return xpu_add_const(b, &v, sizeof(v));
}

/* Q1 into b; extra_out: the first comparison's register is an output too */
static inline void
ssb_q1_build(XpuBuilder *b, int extra_out)
{
	static const XpuType types[11] = {XPU_T_BOOL, XPU_T_INT4, XPU_T_INT4, XPU_T_BOOL,
		XPU_T_INT4, XPU_T_BOOL, XPU_T_INT4, XPU_T_INT4, XPU_T_BOOL, XPU_T_INT4, XPU_T_INT4};
	int			r[11];

	for (int i = 0; i < 11; i++)
		r[i] = xpu_add_reg(b, types[i], 0);
	xpu_add_column(b, 0, XPU_COL_INT32, 0);	/* quantity */
	xpu_add_column(b, 1, XPU_COL_INT32, 0);	/* extendedprice */
	xpu_add_column(b, 2, XPU_COL_INT32, 0);	/* discount */
	xpu_begin_stage(b, XPU_STAGE_LOAD);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r[1], 0, 0, 0, 2);
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_CONST_INT, r[2], 0, 0, 0, ssb_q1_const(b, 1));
	xpu_add_instr(b, XPU_OP_GE_INT, r[3], r[1], r[2], 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, r[0], r[3], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r[0], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, r[4], 0, 0, 0, ssb_q1_const(b, 3));
	xpu_add_instr(b, XPU_OP_LE_INT, r[5], r[1], r[4], 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, r[0], r[5], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r[0], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r[6], 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, r[7], 0, 0, 0, ssb_q1_const(b, 25));
	xpu_add_instr(b, XPU_OP_LT_INT, r[8], r[6], r[7], 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, r[0], r[8], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r[9], 0, 0, 0, 1);
	xpu_add_instr(b, XPU_OP_MUL_I4, r[10], r[9], r[1], 0, 0);
	xpu_add_output(b, r[10]);
	if (extra_out)
		xpu_add_output(b, r[3]);
}

#endif							/* SSB_Q1_H */
