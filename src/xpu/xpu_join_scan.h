/*-------------------------------------------------------------------------
 *
 * xpu_join_scan.h
 *		GpuJoin's projection run split between the GPU and the host: the
 *		GPU runs LOAD, QUAL and the JOIN stage of every outer row and keeps,
 *		per row, whether it passed and the inner row each JOIN_PROBE found
 *		(kern_join_scan.cu: xpu_join_scan_row); the host then runs the
 *		program again for the passing rows only, each probe taking the row
 *		the GPU found instead of searching the table (xpu_join_scan_replay),
 *		and so computes the PROJ stage's outputs from the host copies of
 *		the batch and of the inner tables.
 *
 * The probes of a program are its JOIN_PROBE instructions in order (one a
 * depth: codegen's cg_join_depth); probe p of chunk row r is kept at
 * rows[p * nrows + r]: the inner row number, or -1 where the probe found
 * none, did not run, or the row did not pass.  A program whose probes meet
 * every match (xpu_program_expands) is not for this split: GpuJoin
 * without grouping never has one (the service runs such a program on the
 * CPU engine).
 *
 * Why the replay gives the CPU engine's answer: a probe's destination is a
 * register of its own that nothing else writes (cg_join_depth), so its
 * value after the JOIN stage is the one the probe wrote; the replay runs
 * the same instructions in the same order, and where a probe ran on the
 * GPU (the row active at it) it is active in the replay too, taking the
 * same row, so every register ends as it did on the GPU; the PROJ stage
 * then runs on the host as the CPU engine's does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_JOIN_SCAN_H
#define XPU_JOIN_SCAN_H

#include "xpu_interp.h"

/* the program's JOIN_PROBE instructions (in its JOIN stage) */
XPU_HOST_DEVICE int
xpu_join_scan_probes(const XpuProgram *prog)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	int			n = 0;

	for (int pc = prog->stage_start[XPU_STAGE_JOIN]; pc < prog->stage_start[XPU_STAGE_GROUP]; pc++)
		n += ins[pc].op == XPU_OP_JOIN_PROBE;
	return n;
}

/*
 * xpu_join_scan_row: LOAD, QUAL and JOIN for chunk row row (of any part of
 * the chunk: results by the chunk's row): mask[row] whether it passed, the
 * row of each probe at rows[p * nrows + row] (-1: none, or the row did not
 * pass); regs and nulls have room for the program's registers; probes:
 * NULL, or XPU_JOIN_COUNT_DEPTHS counts of the rows entering each depth
 * (EXPLAIN ANALYZE's rows in), added to
 */
XPU_HOST_DEVICE void
xpu_join_scan_row(const XpuProgram *prog, const XpuChunk *chunk, int64_t row,
				  XpuValue *regs, uint8_t *nulls, uint8_t *mask, int32_t *rows,
				  int64_t nrows, uint64_t *probes, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const XpuInstr *ins = XPU_INSTRS(prog);
	int64_t		in_part = row;
	const XpuColumnData *cols = xpu_chunk_part(chunk, &in_part);
	int			pass, k, p = 0;

	for (k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_span_counted(prog, st[XPU_STAGE_LOAD], st[XPU_STAGE_GROUP], chunk, cols, in_part,
						 regs, nulls, 1, 0, 0, probes, err);
	pass = !xpu_program_filters(prog) || XPU_TRUE(&regs[0], nulls[0]);
	mask[row] = (uint8_t) pass;
	for (int pc = st[XPU_STAGE_JOIN]; pc < st[XPU_STAGE_GROUP]; pc++)
	{
		if (ins[pc].op != XPU_OP_JOIN_PROBE)
			continue;
		rows[(int64_t) p++ * nrows + row] =
			pass && !nulls[ins[pc].dst] ? (int32_t) regs[ins[pc].dst].i : -1;
	}
}

/* is op one that changes the active mask */
XPU_HOST_DEVICE int
xpu_join_scan_mask_op(int op)
{
	return xpu_op_is_push(op) || op == XPU_OP_MASK_POP;
}

/*
 * xpu_join_scan_replay: the whole run contract for row row of the chunk
 * (cols and row as xpu_row_span's), a row that passed on the GPU, its
 * probes taking probe_rows[p] (the GPU's, -1: none) instead of probing:
 * LOAD, QUAL and JOIN, then PROJ; the outputs are then in regs/nulls at
 * XPU_OUTS(prog).  Returns whether the row passes (it must: the GPU said
 * so).  The spans between mask instructions and probes run through
 * xpu_row_span with the active flag and mask stack kept here.
 */
XPU_HOST_DEVICE int
xpu_join_scan_replay(const XpuProgram *prog, const XpuChunk *chunk,
					 const XpuColumnData *cols, int64_t row, const int32_t *probe_rows,
					 XpuValue *regs, uint8_t *nulls, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const XpuInstr *ins = XPU_INSTRS(prog);
	uint64_t	stack = 0;
	int			active = 1,
				p = 0,
				pc = st[XPU_STAGE_LOAD],
				end = st[XPU_STAGE_GROUP],
				pass;

	for (int k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	while (pc < end)
	{
		const XpuInstr *in = ins + pc;
		int			to = pc;

		if (in->op == XPU_OP_MASK_POP)
		{
			active = (int) (stack & 1);
			stack >>= 1;
			pc++;
			continue;
		}
		if (xpu_join_scan_mask_op(in->op))
		{
			stack = (stack << 1) | (uint64_t) (active != 0);
			active = active && xpu_mask_keeps(in->op, &regs[in->a], nulls[in->a]);
			pc++;
			continue;
		}
		if (in->op == XPU_OP_JOIN_PROBE)
		{
			int32_t		r = probe_rows[p++];

			if (active)
			{
				regs[in->dst].i = r;
				nulls[in->dst] = r < 0;
			}
			pc++;
			continue;
		}
		while (to < end && ins[to].op != XPU_OP_JOIN_PROBE && !xpu_join_scan_mask_op(ins[to].op))
			to++;
		if (active)
			xpu_row_span(prog, pc, to, chunk, cols, row, regs, nulls, 1, stack, 0, err);
		pc = to;
	}
	pass = !xpu_program_filters(prog) || XPU_TRUE(&regs[0], nulls[0]);
	if (pass)
		xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, cols, row,
					regs, nulls, 1, err);
	return pass;
}

/* in xpu_join_scan.c: the host's halves */
#ifdef __cplusplus
extern "C" {
#endif
extern int	xpu_join_scan_exec(const XpuProgram *prog, const XpuChunk *chunk, uint8_t *mask,
							   int32_t *rows, uint64_t *probes, XpuError *err);
extern int	xpu_join_scan_project(const XpuProgram *prog, const XpuChunk *chunk,
								  const uint8_t *mask, const int32_t *rows, int64_t nrows,
								  int64_t row0, int64_t n, XpuValue *values, uint8_t *nulls,
								  XpuError *err);
#ifdef __cplusplus
}
#endif

#endif							/* XPU_JOIN_SCAN_H */
