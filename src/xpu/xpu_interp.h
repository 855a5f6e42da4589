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
 *				flags (the CPU engine, xpu_cpu.c).
 *
 * Conditional evaluation: every instruction runs only for the *active*
 * rows.  MASK_PUSH_* saves the active mask on a stack and narrows it to the
 * rows where its argument is true / not true / not false / NULL;
 * MASK_POP restores it.  A row that is not active is not evaluated at all,
 * so it raises no error (x <> 0 AND 10 / x > 1 never divides by zero) and
 * its destination keeps whatever it held.  There are no jumps: the
 * instruction stream is the same for every row.
 *
 * Run contract (both forms): every register starts NULL; LOAD and QUAL
 * run for all rows; a row passes when QUAL is empty or register 0 is true;
 * PROJ runs for passing rows and fills the outputs; outputs of rows that
 * do not pass are NULL.  The first error is kept in XpuError; results are
 * meaningless once one is recorded (the caller discards them, or
 * re-evaluates the rows in PostgreSQL for XPU_ERR_FALLBACK).  Programs must
 * have passed xpu_program_validate() and the chunk xpu_chunk_check().
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
 * xpu_row_run: run instructions [begin, end) for one row whose registers
 * are regs/nulls, starting active or not.
 */
XPU_HOST_DEVICE void
xpu_row_run(const XpuProgram *prog, int begin, int end,
			const XpuColumnData *cols, int64_t row,
			XpuValue *regs, uint8_t *nulls, int active, XpuError *err)
{
	const XpuInstr *instrs = XPU_INSTRS(prog);
	uint64_t	stack = 0;
	XpuCtx		s;
	int			pc;

	s.prog = prog;
	s.err = err;
	s.cols = cols;
	s.row = row;
	for (pc = begin; pc < end; pc++)
	{
		const XpuInstr *in = instrs + pc;

		switch (in->op)
		{
			case XPU_OP_MASK_PUSH_TRUE:
			case XPU_OP_MASK_PUSH_NOT_TRUE:
			case XPU_OP_MASK_PUSH_NOT_FALSE:
			case XPU_OP_MASK_PUSH_NULL:
				stack = (stack << 1) | (uint64_t) (active != 0);
				active = active && xpu_mask_keeps(in->op, &regs[in->a], nulls[in->a]);
				break;
			case XPU_OP_MASK_POP:
				active = (int) (stack & 1);
				stack >>= 1;
				break;
			XPU_OPCODE_TABLE(XPU_ROW_CASE)
			default:
				XPU_ERROR(err, XPU_ERR_INTERNAL, "unknown xpu opcode");
				return;
		}
	}
}

/*
 * xpu_row_eval: the whole run contract for one row of the chunk; regs and
 * nulls have room for the program's registers.
 */
XPU_HOST_DEVICE void
xpu_row_eval(const XpuProgram *prog, const XpuChunk *chunk, int64_t row,
			 XpuValue *regs, uint8_t *nulls, XpuResult *res, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const uint8_t *outs = XPU_OUTS(prog);
	int			pass, k;

	for (k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_run(prog, st[XPU_STAGE_LOAD], st[XPU_STAGE_JOIN], chunk->cols, row,
				regs, nulls, 1, err);
	pass = st[XPU_STAGE_QUAL] == st[XPU_STAGE_JOIN] || XPU_TRUE(&regs[0], nulls[0]);
	res->mask[row] = (uint8_t) pass;
	if (pass)
		xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk->cols, row,
					regs, nulls, 1, err);
	for (k = 0; k < prog->n_outs; k++)
	{
		res->values[k * res->nrows + row] = regs[outs[k]];
		res->nulls[k * res->nrows + row] = pass ? nulls[outs[k]] : 1;
	}
}

/* ---------------- per-tile form ---------------- */

/*
 * XpuTile: the CPU form's registers for one tile: values and null flags of
 * register r at [r * XPU_TILE], the active mask, and the mask stack
 * (XPU_MAX_MASK_DEPTH saved masks of XPU_TILE bytes).
 */
typedef struct XpuTile
{
	XpuValue   *v;
	uint8_t    *n;
	uint8_t    *act;
	uint8_t    *stack;
	uint16_t   *sel_stack;		/* the selection saved with each mask */
	int			nsel_stack[XPU_MAX_MASK_DEPTH];
} XpuTile;

#define XPU_TILE_CASE_MASK(NAME, NARGS)
#define XPU_TILE_CASE_VAL(NAME, NARGS) \
	case XPU_OP_##NAME: \
		for (k = 0; k < nsel; k++) \
		{ \
			i = sel[k]; \
			xpu_tile_bind(&s, in, t, i); \
			s.row = row0 + i; \
			if (xpu_args_null(NARGS, s.an, s.bn, s.cn)) \
				*s.dn = 1; \
			else \
				xpu_step_##NAME(&s); \
		} \
		break;
#define XPU_TILE_CASE_NS(NAME, NARGS) \
	case XPU_OP_##NAME: \
		for (k = 0; k < nsel; k++) \
		{ \
			i = sel[k]; \
			xpu_tile_bind(&s, in, t, i); \
			s.row = row0 + i; \
			xpu_step_##NAME(&s); \
		} \
		break;
#define XPU_TILE_CASE(NAME, KIND, NARGS, R, A1, A2, A3, FORM) \
	XPU_TILE_CASE_##KIND(NAME, NARGS)

/*
 * point the step context at row i of one instruction's register vectors
 * (always inlined: the per-tile loops call it for every row and
 * instruction; as a call it took 40% of a filter's time)
 */
XPU_HOST_DEVICE XPU_ALWAYS_INLINE void
xpu_tile_bind(XpuCtx *s, const XpuInstr *in, XpuTile *t, int i)
{
	s->ins = in;
	s->d = &t->v[in->dst * XPU_TILE + i];
	s->dn = &t->n[in->dst * XPU_TILE + i];
	s->a = &t->v[in->a * XPU_TILE + i];
	s->b = &t->v[in->b * XPU_TILE + i];
	s->c = &t->v[in->c * XPU_TILE + i];
	s->an = t->n[in->a * XPU_TILE + i];
	s->bn = t->n[in->b * XPU_TILE + i];
	s->cn = t->n[in->c * XPU_TILE + i];
}

/*
 * XPU_TILE_FOR_SEL: runs BODY with i = each selected row; when every row of
 * the tile is selected (nsel == nrows, the first conjunct's case) the loop
 * runs over i directly, which the compiler can vectorise.
 */
#define XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, BODY) \
	do { \
		if ((nsel) == (nrows)) \
			for ((i) = 0; (i) < (nsel); (i)++) \
			{ \
				(k) = (i); \
				BODY; \
			} \
		else \
			for ((k) = 0; (k) < (nsel); (k)++) \
			{ \
				(i) = (sel)[k]; \
				BODY; \
			} \
	} while (0)

/*
 * xpu_tile_select: the active rows of the tile, in order, into sel (the
 * selection vector the value opcodes loop over, so that rows a mask turned
 * off cost nothing); returns how many
 */
XPU_HOST_DEVICE XPU_ALWAYS_INLINE int
xpu_tile_select(const XpuTile *t, int nrows, uint16_t *sel)
{
	int			n = 0;

	for (int i = 0; i < nrows; i++)
	{
		sel[n] = (uint16_t) i;
		n += t->act[i] != 0;
	}
	return n;
}

/*
 * xpu_tile_mask: the mask opcodes over a tile; *depth is the stack's depth.
 * A push saves the mask and the selection, tests only the selected rows
 * (the others are inactive already) and narrows the selection in place; a
 * pop restores both.  Returns the new number of selected rows.
 */
XPU_HOST_DEVICE int
xpu_tile_mask(const XpuInstr *in, XpuTile *t, int nrows, int *depth,
			  uint16_t *sel, int nsel)
{
	uint8_t    *saved;
	uint16_t   *saved_sel;
	int			i, k, n = 0;

	if (in->op == XPU_OP_MASK_POP)
	{
		--*depth;
		saved = t->stack + *depth * XPU_TILE;
		saved_sel = t->sel_stack + *depth * XPU_TILE;
		for (i = 0; i < nrows; i++)
			t->act[i] = saved[i];
		n = t->nsel_stack[*depth];
		for (k = 0; k < n; k++)
			sel[k] = saved_sel[k];
		return n;
	}
	saved = t->stack + *depth * XPU_TILE;
	saved_sel = t->sel_stack + *depth * XPU_TILE;
	t->nsel_stack[*depth] = nsel;
	++*depth;
	for (i = 0; i < nrows; i++)
		saved[i] = t->act[i];
	/* one loop per opcode: the test is decided once, not per row */
#define XPU_TILE_NARROW(OP) \
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
		int			keep = xpu_mask_keeps(OP, &t->v[in->a * XPU_TILE + i], \
										  t->n[in->a * XPU_TILE + i]); \
		\
		saved_sel[k] = (uint16_t) i; \
		t->act[i] = (uint8_t) keep; \
		sel[n] = (uint16_t) i; \
		n += keep; \
	})
	switch (in->op)
	{
		case XPU_OP_MASK_PUSH_TRUE: XPU_TILE_NARROW(XPU_OP_MASK_PUSH_TRUE); break;
		case XPU_OP_MASK_PUSH_NOT_TRUE: XPU_TILE_NARROW(XPU_OP_MASK_PUSH_NOT_TRUE); break;
		case XPU_OP_MASK_PUSH_NOT_FALSE: XPU_TILE_NARROW(XPU_OP_MASK_PUSH_NOT_FALSE); break;
		default: XPU_TILE_NARROW(XPU_OP_MASK_PUSH_NULL); break;
	}
#undef XPU_TILE_NARROW
	return n;
}

/*
 * xpu_tile_simple: the opcodes that cannot fail and touch only whole
 * values (integer comparisons, integer and bool constants, MOVE), run over
 * the selected rows without the per-row step context; returns 0 for every
 * other opcode.  The results are those of their step bodies (xpu_int.h,
 * xpu_load.h, xpu_bool.h): a comparison with a NULL argument is NULL.
 * test_xpu and the PostgreSQL oracle run every opcode through both forms.
 */
XPU_HOST_DEVICE int
xpu_tile_simple(const XpuProgram *prog, const XpuInstr *in, XpuTile *t,
				const uint16_t *sel, int nsel, int nrows)
{
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	const XpuValue *a = &t->v[in->a * XPU_TILE];
	const XpuValue *b = &t->v[in->b * XPU_TILE];
	const uint8_t *an = &t->n[in->a * XPU_TILE];
	const uint8_t *bn = &t->n[in->b * XPU_TILE];
	int64_t		c;
	int			i, k;

#define XPU_TILE_CMP(NAME, OP) \
	case XPU_OP_##NAME: \
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
			d[i].i = a[i].i OP b[i].i; \
			dn[i] = an[i] | bn[i]; \
		}); \
		return 1
	switch (in->op)
	{
		XPU_TILE_CMP(EQ_INT, ==);
		XPU_TILE_CMP(NE_INT, !=);
		XPU_TILE_CMP(LT_INT, <);
		XPU_TILE_CMP(LE_INT, <=);
		XPU_TILE_CMP(GT_INT, >);
		XPU_TILE_CMP(GE_INT, >=);
		case XPU_OP_CONST_INT:
		case XPU_OP_CONST_BOOL:
			c = in->op == XPU_OP_CONST_BOOL ? (in->imm != 0) :
				*(const int64_t *) (XPU_CONSTS(prog) + in->imm);
			XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
				d[i].i = c;
				dn[i] = 0;
			});
			return 1;
		case XPU_OP_MOVE:
			XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
				d[i] = a[i];
				dn[i] = an[i];
			});
			return 1;
		default:
			return 0;
	}
#undef XPU_TILE_CMP
}

/*
 * xpu_tile_load_int: LOAD_COL of an integer column (int8/16/32/64) for the
 * selected rows, with the column kind decided once for the tile instead of
 * per row; returns 0 (nothing done) for every other kind, which the
 * generic LOAD_COL step handles.  Integer loads never fail.
 */
XPU_HOST_DEVICE int
xpu_tile_load_int(const XpuProgram *prog, const XpuInstr *in, const XpuColumnData *cols,
				  int64_t row0, XpuTile *t, const uint16_t *sel, int nsel)
{
	const XpuColumn *col = XPU_COLS(prog) + in->imm;
	const XpuColumnData *cd = cols + col->col_index;
	const int64_t off = row0 + cd->offset;
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	int			k;

#define XPU_LOAD_INTS(CTYPE) \
	do { \
		const CTYPE *v = (const CTYPE *) cd->values + off; \
		for (k = 0; k < nsel; k++) \
		{ \
			d[sel[k]].i = v[sel[k]]; \
			dn[sel[k]] = 0; \
		} \
	} while (0)
	switch (col->kind)
	{
		case XPU_COL_INT8: XPU_LOAD_INTS(int8_t); break;
		case XPU_COL_INT16: XPU_LOAD_INTS(int16_t); break;
		case XPU_COL_INT32: XPU_LOAD_INTS(int32_t); break;
		case XPU_COL_INT64: XPU_LOAD_INTS(int64_t); break;
		default:
			return 0;
	}
#undef XPU_LOAD_INTS
	if (cd->validity != NULL)
		for (k = 0; k < nsel; k++)
			dn[sel[k]] = !xpu_bit(cd->validity, off + sel[k]);
	return 1;
}

/*
 * xpu_tile_run: run instructions [begin, end) over rows row0 .. row0 +
 * nrows - 1 of the chunk, under the tile's active mask.
 */
XPU_HOST_DEVICE void
xpu_tile_run(const XpuProgram *prog, int begin, int end,
			 const XpuColumnData *cols, int64_t row0, int nrows,
			 XpuTile *t, XpuError *err)
{
	const XpuInstr *instrs = XPU_INSTRS(prog);
	XpuCtx		s;
	uint16_t	sel[XPU_TILE];
	int			pc, i, k, depth = 0;
	int			nsel = xpu_tile_select(t, nrows, sel);

	s.prog = prog;
	s.err = err;
	s.cols = cols;
	for (pc = begin; pc < end; pc++)
	{
		const XpuInstr *in = instrs + pc;

		if (in->op == XPU_OP_LOAD_COL &&
			xpu_tile_load_int(prog, in, cols, row0, t, sel, nsel))
			continue;
		if (xpu_tile_simple(prog, in, t, sel, nsel, nrows))
			continue;
		switch (in->op)
		{
			case XPU_OP_MASK_PUSH_TRUE:
			case XPU_OP_MASK_PUSH_NOT_TRUE:
			case XPU_OP_MASK_PUSH_NOT_FALSE:
			case XPU_OP_MASK_PUSH_NULL:
			case XPU_OP_MASK_POP:
				nsel = xpu_tile_mask(in, t, nrows, &depth, sel, nsel);
				break;
			XPU_OPCODE_TABLE(XPU_TILE_CASE)
			default:
				XPU_ERROR(err, XPU_ERR_INTERNAL, "unknown xpu opcode");
				return;
		}
	}
}

#endif							/* XPU_INTERP_H */
