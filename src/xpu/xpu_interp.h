/*-------------------------------------------------------------------------
 *
 * xpu_interp.h
 *		The xPU interpreter in its two forms, over the opcode bodies of the
 *		type family headers:
 *
 *	per row		one thread evaluates one row's registers through the
 *				instruction list (the GPU kernel, kern_warp.cu; compiled for
 *				the host too, xpu_row_exec in xpu_cpu.c, so tests can compare);
 *	per tile	each instruction runs over a tile of up to XPU_TILE rows, a
 *				register being a vector of values and a vector of null
 *				flags (the CPU engine: xpu_tile.h, host code only).
 *
 * Conditional evaluation: every instruction runs only for the *active*
 * rows.  MASK_PUSH_* saves the active mask on a stack and narrows it to the
 * rows where its argument is true / not true / not false / NULL;
 * MASK_POP restores it.  A row that is not active is not evaluated at all,
 * so it raises no error (x <> 0 AND 10 / x > 1 never divides by zero) and
 * its destination keeps whatever it held.  There are no jumps: the
 * instruction stream is the same for every row.
 *
 * Run contract (both forms): every register starts NULL; LOAD, QUAL and
 * JOIN run for all rows (codegen puts the JOIN stage's probes under
 * MASK_PUSH_TRUE r0, so only rows that passed the qual probe); a row passes
 * when QUAL and JOIN are both empty or register 0 is true after them
 * (xpu_program_filters); PROJ runs for passing rows and fills the outputs; outputs of rows that
 * do not pass are NULL.  The first error is kept in XpuError; results are
 * meaningless once one is recorded (the caller discards them, or
 * re-evaluates the rows in PostgreSQL for XPU_ERR_FALLBACK).  Programs must
 * have passed xpu_program_validate() and the chunk xpu_chunk_check() (and
 * with inner tables, xpu_program_join_check()).  A program whose probes
 * meet every match (xpu_program_expands: rows expand, xpu_join.h) runs
 * in the per-row form only, through xpu_row_each_first and
 * xpu_row_each_next: each combination of an outer row's matches passes
 * or not and runs PROJ as a row of its own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_INTERP_H
#define XPU_INTERP_H

#include "xpu_int.h"
#include "xpu_float.h"
#include "xpu_float2.h"
#include "xpu_bool.h"
#include "xpu_numeric.h"
#include "xpu_text.h"
#include "xpu_date.h"
#include "xpu_interval.h"
#include "xpu_load.h"
#include "xpu_join.h"

#if defined(__GNUC__) && !defined(__CUDACC__)
#define XPU_ALWAYS_INLINE __attribute__((always_inline))
#else
#define XPU_ALWAYS_INLINE
#endif

/* does a strict opcode with nargs arguments see a NULL */
XPU_HOST_DEVICE int
xpu_args_null(int nargs, uint8_t an, uint8_t bn, uint8_t cn)
{
	return (nargs > 0 && an) || (nargs > 1 && bn) || (nargs > 2 && cn);
}

/* is op a MASK_PUSH_* */
XPU_HOST_DEVICE int
xpu_op_is_push(int op)
{
	return op == XPU_OP_MASK_PUSH_TRUE || op == XPU_OP_MASK_PUSH_NOT_TRUE ||
		op == XPU_OP_MASK_PUSH_NOT_FALSE || op == XPU_OP_MASK_PUSH_NULL;
}

/* does a mask opcode keep a row active, given its argument */
XPU_HOST_DEVICE XPU_ALWAYS_INLINE int
xpu_mask_keeps(int op, const XpuValue *v, uint8_t n)
{
	switch (op)
	{
		case XPU_OP_MASK_PUSH_TRUE: return XPU_TRUE(v, n);
		case XPU_OP_MASK_PUSH_NOT_TRUE: return !XPU_TRUE(v, n);
		case XPU_OP_MASK_PUSH_NOT_FALSE: return !XPU_FALSE(v, n);
		default: return n != 0;		/* MASK_PUSH_NULL */
	}
}

/* are the program's columns all present in the chunk */
XPU_HOST_DEVICE int
xpu_chunk_check(const XpuProgram *prog, const XpuChunk *chunk)
{
	int			i;

	for (i = 0; i < prog->n_cols; i++)
	{
		if (XPU_COLS(prog)[i].col_index >= chunk->ncols)
			return 0;
	}
	return 1;
}

/* ---------------- per-row form ---------------- */

#define XPU_ROW_CASE_MASK(NAME, NARGS)
#define XPU_ROW_CASE_VAL(NAME, NARGS) \
	case XPU_OP_##NAME: \
		if (active) \
		{ \
			xpu_row_bind(&s, in, regs, nulls); \
			if (xpu_args_null(NARGS, s.an, s.bn, s.cn)) \
				nulls[in->dst] = 1; \
			else \
				xpu_step_##NAME(&s); \
		} \
		break;
#define XPU_ROW_CASE_NS(NAME, NARGS) \
	case XPU_OP_##NAME: \
		if (active) \
		{ \
			xpu_row_bind(&s, in, regs, nulls); \
			xpu_step_##NAME(&s); \
		} \
		break;
#define XPU_ROW_CASE(NAME, KIND, NARGS, R, A1, A2, A3, FORM) \
	XPU_ROW_CASE_##KIND(NAME, NARGS)

/* point the step context at one instruction's registers */
XPU_HOST_DEVICE void
xpu_row_bind(XpuCtx *s, const XpuInstr *in, XpuValue *regs, uint8_t *nulls)
{
	s->ins = in;
	s->d = &regs[in->dst];
	s->dn = &nulls[in->dst];
	s->a = &regs[in->a];
	s->b = &regs[in->b];
	s->c = &regs[in->c];
	s->an = nulls[in->a];
	s->bn = nulls[in->b];
	s->cn = nulls[in->c];
}

/*
 * xpu_row_go: run instructions [begin, end) for one row whose registers
 * are regs/nulls, starting active or not with the mask stack *stack; cols
 * (of chunk, or of its part that holds the row) and row say where LOAD_COL
 * reads, chunk's joins where the JOIN stage probes, each where a probe of
 * every match opens its points (NULL: the program has none), probes as
 * xpu_row_span_counted's.  Returns whether the row is active at end, and
 * leaves the mask stack there in *stack, so that a later call can go on
 * from end (an unknown opcode: 0, the error recorded).
 */
XPU_HOST_DEVICE int
xpu_row_go(const XpuProgram *prog, int begin, int end, const XpuChunk *chunk,
		   const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
		   int active, uint64_t *stack, XpuEach *each, uint64_t *probes, XpuError *err)
{
	const XpuInstr *instrs = XPU_INSTRS(prog);
	XpuCtx		s;
	int			pc;

	s.probes = probes;
	s.prog = prog;
	s.err = err;
	s.cols = cols;
	s.row = row;
	s.joins = chunk->joins;
	s.n_joins = chunk->n_joins;
	s.each = each;
	s.stack = *stack;
	s.matched = chunk->matched;
	for (pc = begin; pc < end; pc++)
	{
		const XpuInstr *in = instrs + pc;

		switch (in->op)
		{
			case XPU_OP_MASK_PUSH_TRUE:
			case XPU_OP_MASK_PUSH_NOT_TRUE:
			case XPU_OP_MASK_PUSH_NOT_FALSE:
			case XPU_OP_MASK_PUSH_NULL:
				s.stack = (s.stack << 1) | (uint64_t) (active != 0);
				active = active && xpu_mask_keeps(in->op, &regs[in->a], nulls[in->a]);
				break;
			case XPU_OP_MASK_POP:
				active = (int) (s.stack & 1);
				s.stack >>= 1;
				break;
			XPU_OPCODE_TABLE(XPU_ROW_CASE)
			default:
				XPU_ERROR(err, XPU_ERR_INTERNAL, "unknown xpu opcode");
				return 0;
		}
	}
	*stack = s.stack;
	return active;
}

/* xpu_row_go from mask stack stack, the run's end state left unsaid */
XPU_HOST_DEVICE void
xpu_row_span_counted(const XpuProgram *prog, int begin, int end, const XpuChunk *chunk,
					 const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
					 int active, uint64_t stack, XpuEach *each, uint64_t *probes,
					 XpuError *err)
{
	(void) xpu_row_go(prog, begin, end, chunk, cols, row, regs, nulls, active, &stack, each,
					  probes, err);
}

/*
 * xpu_row_span: xpu_row_span_counted counting into each's probes (NULL
 * each: no counts); xpu_row_span_counted's probes: NULL, or where each
 * JOIN_PROBE that runs (the row active) adds one at its depth: the rows,
 * or combinations of matches, that enter each join depth (EXPLAIN
 * ANALYZE; a resumed probe of every match does not run again)
 */
XPU_HOST_DEVICE void
xpu_row_span(const XpuProgram *prog, int begin, int end, const XpuChunk *chunk,
			 const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
			 int active, uint64_t stack, XpuEach *each, XpuError *err)
{
	xpu_row_span_counted(prog, begin, end, chunk, cols, row, regs, nulls, active, stack,
						 each, each != 0 ? each->probes : 0, err);
}

/* xpu_row_span from an empty mask stack, without probes of every match */
XPU_HOST_DEVICE void
xpu_row_run(const XpuProgram *prog, int begin, int end, const XpuChunk *chunk,
			const XpuColumnData *cols, int64_t row,
			XpuValue *regs, uint8_t *nulls, int active, XpuError *err)
{
	xpu_row_span(prog, begin, end, chunk, cols, row, regs, nulls, active, 0, 0, err);
}

/* ---------------- where rows may be compacted ---------------- */

/*
 * xpu_pop_of: the MASK_POP that closes the MASK_PUSH_* at pc (balanced, as
 * the validator checks), or -1
 */
XPU_HOST_DEVICE int
xpu_pop_of(const XpuProgram *prog, int pc)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	int			depth = 0;

	for (int k = pc; k < prog->n_instrs; k++)
	{
		if (xpu_op_is_push(ins[k].op))
			depth++;
		else if (ins[k].op == XPU_OP_MASK_POP && --depth == 0)
			return k;
	}
	return -1;
}

/*
 * xpu_push_settles: does every row that is not active just after the
 * MASK_PUSH_TRUE r0 at pc (in the QUAL or JOIN stage) fail the program,
 * with nothing after pc evaluated for it?  So when r0 is the pass test,
 * each push that encloses pc is a MASK_PUSH_TRUE r0 too (a row made
 * inactive before pc had r0 not true, and a row keeps its registers while
 * inactive), and only MASK_POPs follow pc's MASK_POP before the GROUP stage
 * (no instruction there could make a row that left pass again, nor raise
 * an error for it: a kernel that sets such rows aside at pc answers as the
 * row-at-a-time walk does, errors included).
 */
XPU_HOST_DEVICE int
xpu_push_settles(const XpuProgram *prog, int pc)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	const int	group = prog->stage_start[XPU_STAGE_GROUP];
	int			pop,
				depth = 0;

	if (!xpu_program_filters(prog) || pc < prog->stage_start[XPU_STAGE_QUAL] ||
		pc >= group || ins[pc].op != XPU_OP_MASK_PUSH_TRUE || ins[pc].a != 0)
		return 0;
	pop = xpu_pop_of(prog, pc);
	if (pop < 0 || pop >= group)
		return 0;
	/* the pushes that enclose pc, innermost first */
	for (int k = pc - 1; k >= prog->n_hoisted; k--)
	{
		if (ins[k].op == XPU_OP_MASK_POP)
			depth++;
		else if (xpu_op_is_push(ins[k].op) && depth > 0)
			depth--;
		else if (xpu_op_is_push(ins[k].op) &&
				 (ins[k].op != XPU_OP_MASK_PUSH_TRUE || ins[k].a != 0))
			return 0;
	}
	for (int k = pop + 1; k < group; k++)
		if (ins[k].op != XPU_OP_MASK_POP)
			return 0;
	return 1;
}

/*
 * xpu_program_compact_point: the MASK_PUSH_TRUE r0 after which a kernel
 * may set aside the rows still active and run the rest of the program for
 * those only (xpu_push_settles: the others fail), or -1 for none: the first
 * such push after the program's first JOIN_PROBE (the rows that found a
 * match at the first depth), else the last one (the rows that passed the
 * qual).  Hoisted constants (instructions before n_hoisted) are not
 * considered.  A program whose rows expand over the run's tables joins[0
 * .. n_joins - 1] (xpu_program_expands_over) has none.
 */
XPU_HOST_DEVICE int
xpu_program_compact_point(const XpuProgram *prog, const XpuJoinTable *const *joins, int n_joins)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	int			probe = -1,
				last = -1;

	if (xpu_program_expands_over(prog, joins, n_joins))
		return -1;
	for (int k = prog->n_hoisted; k < prog->stage_start[XPU_STAGE_GROUP]; k++)
	{
		if (ins[k].op == XPU_OP_JOIN_PROBE && probe < 0)
			probe = k;
		if (!xpu_push_settles(prog, k))
			continue;
		if (probe >= 0)
			return k;
		last = k;
	}
	return last;
}

/* ---------------- probes of every match (xpu_join.h) ---------------- */

/*
 * xpu_each_open: each ready for a row's first combination of matches: no
 * point open, the row's registers, part (cols), row in it and counts
 * (probes, NULL for none), for xpu_row_each_next to go on from
 */
XPU_HOST_DEVICE void
xpu_each_open(XpuEach *each, XpuValue *regs, uint8_t *nulls, const XpuColumnData *cols,
			  int64_t row, uint64_t *probes)
{
	each->n = 0;
	each->regs = regs;
	each->nulls = nulls;
	each->cols = cols;
	each->row = row;
	each->probes = probes;
}

/* xpu_row_each_first's run, counting into probes (NULL: not) */
XPU_HOST_DEVICE void
xpu_row_each_go(const XpuProgram *prog, int begin, const XpuChunk *chunk,
				const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
				XpuEach *each, uint64_t *probes, XpuError *err)
{
	xpu_each_open(each, regs, nulls, cols, row, probes);
	xpu_row_span(prog, begin, prog->stage_start[XPU_STAGE_GROUP], chunk, cols, row,
				 regs, nulls, 1, 0, each, err);
}

/*
 * xpu_row_each_first: LOAD, QUAL and JOIN (instructions [begin, the GROUP
 * stage)) for one row, cols/row as xpu_row_span's, every probe of every
 * match taking its first match and opening its points in each; the caller
 * then tests r0 and runs what follows, as after xpu_row_run
 */
XPU_HOST_DEVICE void
xpu_row_each_first(const XpuProgram *prog, int begin, const XpuChunk *chunk,
				   const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
				   XpuEach *each, XpuError *err)
{
	xpu_row_each_go(prog, begin, chunk, cols, row, regs, nulls, each, 0, err);
}

/*
 * xpu_row_each_first_counted: xpu_row_each_first counting the rows that
 * enter each depth into probes (xpu_row_span_counted), this combination's
 * and, through each, those xpu_row_each_next runs
 */
XPU_HOST_DEVICE void
xpu_row_each_first_counted(const XpuProgram *prog, int begin, const XpuChunk *chunk,
						   const XpuColumnData *cols, int64_t row, XpuValue *regs,
						   uint8_t *nulls, XpuEach *each, uint64_t *probes, XpuError *err)
{
	xpu_row_each_go(prog, begin, chunk, cols, row, regs, nulls, each, probes, err);
}

/*
 * xpu_each_reset: the registers that instructions after pc write (but
 * r0) back to NULL, as they were at pc (xpu_join.h); r0 back to v, n
 */
XPU_HOST_DEVICE void
xpu_each_reset(const XpuProgram *prog, int pc, uint8_t *nulls, XpuValue *regs,
			   const XpuValue *v, uint8_t n)
{
	const XpuInstr *ins = XPU_INSTRS(prog);

	for (int k = pc + 1; k < prog->n_instrs; k++)
		nulls[ins[k].dst] = 1;
	regs[0] = *v;
	nulls[0] = n;
}

/*
 * xpu_row_each_next: the row's next combination of matches (see
 * xpu_join.h): the newest open point takes its next match and the JOIN
 * stage runs on from its probe; returns 0 when no point is open (the
 * row's combinations are done), else 1, the caller then going on as after
 * xpu_row_each_first
 */
XPU_HOST_DEVICE int
xpu_row_each_next(const XpuProgram *prog, const XpuChunk *chunk, XpuEach *each,
				  XpuError *err)
{
	XpuValue   *regs = each->regs;
	uint8_t    *nulls = each->nulls;

	while (each->n > 0)
	{
		XpuEachPoint *p = &each->p[each->n - 1];
		const XpuInstr *in = XPU_INSTRS(prog) + p->pc;
		int			depth = XPU_JOIN_IMM_DEPTH(in->imm);
		int			pc = p->pc;
		uint64_t	stack = p->stack;
		int32_t		row = p->next_row;
		XpuValue	kv[XPU_JOIN_PROBE_MAX_KEYS] = {regs[in->a], regs[in->b], regs[in->c]};
		uint8_t		kn[XPU_JOIN_PROBE_MAX_KEYS] = {nulls[in->a], nulls[in->b], nulls[in->c]};

		if (depth >= chunk->n_joins || chunk->joins == 0 || chunk->joins[depth] == 0)
		{
			XPU_ERROR(err, XPU_ERR_INTERNAL, "join depth without an inner table");
			each->n = 0;
			return 0;
		}
		/* the reset comes before any register is written: r0 from the point */
		xpu_each_reset(prog, pc, nulls, regs, &p->r0, p->r0n);
		/* the match after this one for the next resume, or the point closes */
		p->next_row = xpu_join_each_after(chunk->joins[depth], p, kv, kn);
		if (p->next_row < 0)
			each->n--;
		regs[in->dst].i = row;
		nulls[in->dst] = 0;
		if ((in->imm & XPU_JOIN_PROBE_MARK) && chunk->matched != 0)
			xpu_join_mark(chunk->matched, row);
		xpu_row_span(prog, pc + 1, prog->stage_start[XPU_STAGE_GROUP], chunk, each->cols,
					 each->row, regs, nulls, 1, stack, each, err);
		return 1;
	}
	return 0;
}

/*
 * xpu_row_unmatched: LOAD, QUAL and JOIN for inner row row of the depth
 * whose probe (XPU_JOIN_PROBE_MARK) is instruction pc, as an unmatched
 * row of a RIGHT or FULL OUTER join (xpu_join.h): every register NULL
 * but r0 (true) and the probe's (the row), the run going on from just
 * after the probe with every mask open and no marks (chunk->matched is
 * not read); the caller then tests r0 and runs what follows, as after
 * xpu_row_run.  chunk's joins are read; its columns never (codegen loads
 * every outer column before the probe).  A program whose constants are
 * hoisted (xpu_program_hoist_consts) has them computed first.
 */
XPU_HOST_DEVICE void
xpu_row_unmatched(const XpuProgram *prog, int pc, const XpuChunk *chunk, int32_t row,
				  XpuValue *regs, uint8_t *nulls, XpuError *err)
{
	const XpuInstr *in = XPU_INSTRS(prog) + pc;
	XpuChunk	c = *chunk;

	c.matched = 0;
	for (int k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_run(prog, 0, prog->n_hoisted, &c, chunk->cols, 0, regs, nulls, 1, err);
	regs[0].n = 0;
	regs[0].i = 1;
	nulls[0] = 0;
	regs[in->dst].i = row;
	nulls[in->dst] = 0;
	xpu_row_span(prog, pc + 1, prog->stage_start[XPU_STAGE_GROUP], &c, chunk->cols, 0,
				 regs, nulls, 1, ~UINT64_C(0), 0, err);
}

/*
 * xpu_row_eval: the whole run contract for one row of the chunk (of any of
 * its parts: results are indexed by the chunk's row); regs and nulls have
 * room for the program's registers.
 */
XPU_HOST_DEVICE void
xpu_row_eval(const XpuProgram *prog, const XpuChunk *chunk, int64_t row,
			 XpuValue *regs, uint8_t *nulls, XpuResult *res, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const uint8_t *outs = XPU_OUTS(prog);
	int64_t		in_part = row;
	const XpuColumnData *cols = xpu_chunk_part(chunk, &in_part);
	int			pass, k;

	for (k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_run(prog, st[XPU_STAGE_LOAD], st[XPU_STAGE_GROUP], chunk, cols, in_part,
				regs, nulls, 1, err);
	pass = !xpu_program_filters(prog) || XPU_TRUE(&regs[0], nulls[0]);
	res->mask[row] = (uint8_t) pass;
	if (pass)
		xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, cols, in_part,
					regs, nulls, 1, err);
	for (k = 0; k < prog->n_outs; k++)
	{
		res->values[k * res->nrows + row] = regs[outs[k]];
		res->nulls[k * res->nrows + row] = pass ? nulls[outs[k]] : 1;
	}
}

#endif							/* XPU_INTERP_H */
