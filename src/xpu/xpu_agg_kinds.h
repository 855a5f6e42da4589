/*-------------------------------------------------------------------------
 *
 * xpu_agg_kinds.h
 *		The table of the engine's aggregate kinds: one row per kind with the
 *		facts every part of the engine needs about it (which arguments it
 *		takes, how it uses its XpuAggState, whether the GPU computes it) and
 *		the names of its pieces in xpu_agg_ops.h.  The enum XpuAggKind
 *		(xpu_agg.h), the CPU engine's table (xpu_agg.c), the GPU kernels
 *		(kern_agg.cu), the service's GPU runner (service/gpu_agg.c) and
 *		GpuPreAgg's planning (engine/gpu_preagg.c) all read it, so that a
 *		new kind is one new row plus its pieces, not a case in every file.
 *		xpu_agg.h gives the meaning of each kind's state.
 *
 * A row is X(NAME, ARG, STATE, GPU, INIT, UPDATE, COMBINE, FINISH):
 *
 *	NAME	the kind is XPU_AGG_<NAME>; kinds are numbered from 1 in row order
 *			(the numbers travel in the protocol: append new rows at the end)
 *	ARG		the argument registers it takes (XPU_AGG_ARG_*)
 *	STATE	how it uses XpuAggState (XPU_AGG_ST_* bits, 0 for none)
 *	GPU		1 when the GPU kernels compute it (0: the CPU engine only)
 *	INIT	xpu_agg_init's piece: (XpuAggState *, int type, int mode)
 *	UPDATE	the fold of one non-NULL argument (COUNT_STAR: of one row):
 *			(XpuAggState *, int type, const XpuValue *, int mode); the
 *			caller counts the row unless STATE has XPU_AGG_ST_N
 *	COMBINE	the fold of a state whose count is not 0:
 *			(XpuAggState *dst, const XpuAggState *src, int type, int mode);
 *			the caller adds the count and the flags unless STATE has
 *			XPU_AGG_ST_N
 *	FINISH	a GPU-form state made xpu_agg.h's (xpu_agg_gpu.h): (XpuAggState *);
 *			xpu_agg_fin_wide for the exact integer sums, whose GPU form counts
 *			the wraps of v in pad, xpu_agg_fin_minmax for the kinds whose GPU
 *			form starts from a sentinel (INIT xpu_agg_init_min/max)
 *
 * mode is XPU_AGG_PLAIN or XPU_AGG_ATOMIC (xpu_agg_ops.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_KINDS_H
#define XPU_AGG_KINDS_H

#include "xpu_common.h"

/* ARG: the argument register types a kind takes */
#define XPU_AGG_ARG_NONE	0	/* no argument (count(*)) */
#define XPU_AGG_ARG_ANY		1	/* any type */
#define XPU_AGG_ARG_INT		2	/* int2, int4, int8 */
#define XPU_AGG_ARG_NUMERIC	3	/* numeric */
#define XPU_AGG_ARG_FLOAT	4	/* float4, float8 */
#define XPU_AGG_ARG_FLOAT4	5	/* float4 */
#define XPU_AGG_ARG_ORDERED	6	/* integer, date/time, float or numeric (MIN, MAX) */
#define XPU_AGG_ARG_HASHED	7	/* integer, float, text, bool, date/time (HLL) */
#define XPU_AGG_ARG_TEXT	8	/* text */

/* STATE: how a kind uses its XpuAggState */
#define XPU_AGG_ST_N		0x01	/* count is the N of a moment state, kept by
									 * its UPDATE and COMBINE (under a lock on
									 * the GPU) */
#define XPU_AGG_ST_EXTENDED 0x02	/* the value lives outside the state (CPU
									 * engine: v.i points to it) */

#define XPU_AGG_KIND_TABLE(X) \
	X(COUNT_STAR, XPU_AGG_ARG_NONE, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_nothing, xpu_agg_comb_nothing, xpu_agg_fin_nothing) \
	X(COUNT, XPU_AGG_ARG_ANY, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_nothing, xpu_agg_comb_nothing, xpu_agg_fin_nothing) \
	X(SUM_INT, XPU_AGG_ARG_INT, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_sum_int, xpu_agg_comb_sum128, xpu_agg_fin_wide) \
	X(SUM_NUMERIC, XPU_AGG_ARG_NUMERIC, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_sum_numeric, xpu_agg_comb_sum128, xpu_agg_fin_wide) \
	X(SUM_FLOAT, XPU_AGG_ARG_FLOAT, 0, 1, \
	  xpu_agg_init_sum_f8, xpu_agg_upd_sum_float, xpu_agg_comb_sum_float, xpu_agg_fin_nothing) \
	X(MOMENTS, XPU_AGG_ARG_FLOAT, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_moments, xpu_agg_comb_moments, xpu_agg_fin_nothing) \
	X(MIN, XPU_AGG_ARG_ORDERED, 0, 1, \
	  xpu_agg_init_min, xpu_agg_upd_min, xpu_agg_comb_min, xpu_agg_fin_minmax) \
	X(MAX, XPU_AGG_ARG_ORDERED, 0, 1, \
	  xpu_agg_init_max, xpu_agg_upd_max, xpu_agg_comb_max, xpu_agg_fin_minmax) \
	X(SUM_FLOAT4, XPU_AGG_ARG_FLOAT4, 0, 1, \
	  xpu_agg_init_sum_f4, xpu_agg_upd_sum_float4, xpu_agg_comb_sum_float4, xpu_agg_fin_nothing) \
	X(SUMSQ_INT, XPU_AGG_ARG_INT, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_sumsq_int, xpu_agg_comb_sum128, xpu_agg_fin_wide) \
	X(SUMSQ_NUMERIC, XPU_AGG_ARG_NUMERIC, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_sumsq_numeric, xpu_agg_comb_sum128, xpu_agg_fin_wide) \
	X(VAR_FLOAT, XPU_AGG_ARG_FLOAT, XPU_AGG_ST_N, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_var_float, xpu_agg_comb_var_float, xpu_agg_fin_nothing) \
	X(HLL, XPU_AGG_ARG_HASHED, XPU_AGG_ST_EXTENDED, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_nothing, xpu_agg_comb_nothing, xpu_agg_fin_nothing) \
	X(MIN_TEXT, XPU_AGG_ARG_TEXT, XPU_AGG_ST_EXTENDED, 0, \
	  xpu_agg_init_zero, xpu_agg_upd_nothing, xpu_agg_comb_nothing, xpu_agg_fin_nothing) \
	X(MAX_TEXT, XPU_AGG_ARG_TEXT, XPU_AGG_ST_EXTENDED, 0, \
	  xpu_agg_init_zero, xpu_agg_upd_nothing, xpu_agg_comb_nothing, xpu_agg_fin_nothing) \
	X(ZERO_SIGN, XPU_AGG_ARG_FLOAT, 0, 1, \
	  xpu_agg_init_zero, xpu_agg_upd_zero_sign, xpu_agg_comb_zero_sign, xpu_agg_fin_nothing)

/* XPU_AGG_<NAME> for each row, numbered from 1; 0 is no kind */
#define XPU_AGG_ENUM_ROW(NAME, ARG, ST, GPU, I, U, C, F)	XPU_AGG_##NAME,

typedef enum XpuAggKind
{
	XPU_AGG_NONE = 0,
	XPU_AGG_KIND_TABLE(XPU_AGG_ENUM_ROW)
	XPU_AGG_N_KINDS
} XpuAggKind;

/* the table's columns of kind k (0 for a number that is no kind) */
#define XPU_AGG_CASE_ARG(NAME, ARG, ST, GPU, I, U, C, F) \
	case XPU_AGG_##NAME: return (ARG);
#define XPU_AGG_CASE_STATE(NAME, ARG, ST, GPU, I, U, C, F) \
	case XPU_AGG_##NAME: return (ST);
#define XPU_AGG_CASE_GPU(NAME, ARG, ST, GPU, I, U, C, F) \
	case XPU_AGG_##NAME: return (GPU);

/* ARG of kind k: which argument registers it takes */
XPU_HOST_DEVICE int
xpu_agg_kind_arg(int k)
{
	switch (k)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_CASE_ARG)
		default:
			return XPU_AGG_ARG_NONE;
	}
}

/* STATE of kind k: XPU_AGG_ST_* bits */
XPU_HOST_DEVICE int
xpu_agg_kind_state(int k)
{
	switch (k)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_CASE_STATE)
		default:
			return 0;
	}
}

/* GPU of kind k: do the GPU kernels compute it */
XPU_HOST_DEVICE int
xpu_agg_kind_gpu(int k)
{
	switch (k)
	{
			XPU_AGG_KIND_TABLE(XPU_AGG_CASE_GPU)
		default:
			return 0;
	}
}

/* does a state of kind k keep its value outside the state (xpu_agg.h) */
#define XPU_AGG_EXTENDED(k)		((xpu_agg_kind_state(k) & XPU_AGG_ST_EXTENDED) != 0)

#endif							/* XPU_AGG_KINDS_H */
