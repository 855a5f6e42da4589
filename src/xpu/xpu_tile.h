/*-------------------------------------------------------------------------
 *
 * xpu_tile.h
 *		The per-tile form of the xPU interpreter (the CPU engine, xpu_cpu.c;
 *		xpu_interp.h has the per-row form that the GPU runs and the run
 *		contract both obey): each instruction runs over a tile of up to
 *		XPU_TILE rows, a register being a vector of values and a vector of
 *		null flags.  Host code only (C or C++); no device code includes it.
 *
 * Selections.  An instruction runs for the *selected* rows of the tile: a
 * sorted vector of row numbers (uint16_t) and its length.  MASK_PUSH_*
 * writes the rows of the current selection that its test keeps into the
 * next level of the selection stack and makes that the current one;
 * MASK_POP goes back a level, without copying.  Stages are balanced (the
 * validator checks it), so a run ends at the level it started at, and the
 * tile's active mask (act) is only read when a run starts.  When every row
 * of the tile is selected the loops run over the rows directly, which the
 * compiler can vectorise.
 *
 * Fast paths.  The opcodes that queries use most run as tight loops over
 * the selection (xpu_tile_simple, xpu_tile_load): integer comparisons and
 * arithmetic, AND/OR, null tests, constants, moves, and loads of integer,
 * float and utf8 columns.  Each computes exactly what its step body does
 * (xpu_int.h, xpu_bool.h, xpu_load.h) for non-NULL results; the value slot
 * of a NULL result is left unspecified, as no reader looks at it.  Integer
 * arithmetic that overflows in any row hands the instruction to the
 * generic per-row loop, which records the error of the first such row as
 * the per-row form does.  Every other opcode runs its step body row by row
 * (XPU_TILE_CASE).  test_xpu and the PostgreSQL oracle run every opcode
 * through both forms and compare.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_TILE_H
#define XPU_TILE_H

#include "xpu_interp.h"

/*
 * XpuTile: the registers of one tile: values and null flags of register r
 * at [r * XPU_TILE], the rows active when a run starts (act), and the
 * selection stack: XPU_MAX_MASK_DEPTH + 1 levels of XPU_TILE row numbers
 * (sel_stack) and the length of each level below the current one.
 */
typedef struct XpuTile
{
	XpuValue   *v;
	uint8_t    *n;
	uint8_t    *act;
	uint16_t   *sel_stack;
	const XpuJoinTable *const *joins;	/* the chunk's inner tables */
	int			n_joins;
	XpuJoinCursor *curs;		/* XPU_TILE cursors and first matches of
								 * JOIN_PROBE (xpu_tile_probe); NULL: the */
	int32_t    *first;			/* program does not probe */
	uint64_t   *probes;			/* NULL, or where each JOIN_PROBE adds its
								 * tile's selected rows (XpuCtx.probes) */
	int			nsel_stack[XPU_MAX_MASK_DEPTH + 1];
	uint8_t		reads[XPU_MAX_REGS + 1];	/* xpu_tile_count_reads */
} XpuTile;

/*
 * xpu_tile_count_reads: t->reads[r] = how many times the program reads
 * register r (an argument field of any instruction, used or not, or an
 * output), at most 255.  A register read exactly once is one that the
 * fusions of xpu_tile_run may leave unwritten.
 */
static inline void
xpu_tile_count_reads(const XpuProgram *prog, XpuTile *t)
{
	const XpuInstr *instrs = XPU_INSTRS(prog);
	const uint16_t n = prog->stage_start[XPU_N_STAGES];

	memset(t->reads, 0, sizeof(t->reads));
#define XPU_COUNT_READ(r) \
	do { \
		if ((r) <= XPU_MAX_REGS && t->reads[r] < 255) \
			t->reads[r]++; \
	} while (0)
	for (int pc = 0; pc < n; pc++)
	{
		XPU_COUNT_READ(instrs[pc].a);
		XPU_COUNT_READ(instrs[pc].b);
		XPU_COUNT_READ(instrs[pc].c);
	}
	for (int k = 0; k < prog->n_outs; k++)
		XPU_COUNT_READ(XPU_OUTS(prog)[k]);
#undef XPU_COUNT_READ
}

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
 * (always inlined: the generic loops call it for every row)
 */
static inline XPU_ALWAYS_INLINE void
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
 * the tile is selected (the selection is then 0 .. nrows - 1) the loop runs
 * over i directly.
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

/* the active rows of the tile, in order, into sel; returns how many */
static inline int
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
 * xpu_tile_narrow: MASK_PUSH_* (op) of register values v / null flags nl:
 * the rows of sel[0 .. nsel) that it keeps, into out; returns how many.
 * The tests are xpu_mask_keeps', one loop per opcode.
 */
static inline int
xpu_tile_narrow(int op, const XpuValue *v, const uint8_t *nl, const uint16_t *sel,
				int nsel, int nrows, uint16_t *out)
{
	int			i, k, n = 0;

#define XPU_TILE_NARROW(KEEP) \
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
		out[n] = (uint16_t) i; \
		n += (KEEP); \
	})
	switch (op)
	{
		case XPU_OP_MASK_PUSH_TRUE:
			XPU_TILE_NARROW((nl[i] == 0) & (v[i].i != 0));
			break;
		case XPU_OP_MASK_PUSH_NOT_TRUE:
			XPU_TILE_NARROW((nl[i] != 0) | (v[i].i == 0));
			break;
		case XPU_OP_MASK_PUSH_NOT_FALSE:
			XPU_TILE_NARROW((nl[i] != 0) | (v[i].i != 0));
			break;
		default:				/* MASK_PUSH_NULL */
			XPU_TILE_NARROW(nl[i] != 0);
			break;
	}
#undef XPU_TILE_NARROW
	return n;
}

/*
 * xpu_tile_arith: ADD/SUB/MUL of I2/I4/I8 over the selected rows; 0 when
 * some row with non-NULL arguments overflows (or the destination is an
 * argument, which a rerun would read changed): the caller then runs the
 * step body row by row, which records the error.  The bodies compute in
 * int64 and check the width's range (xpu_int.h); so does this.
 */
static inline int
xpu_tile_arith(const XpuInstr *in, XpuTile *t, const uint16_t *sel, int nsel, int nrows)
{
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	const XpuValue *a = &t->v[in->a * XPU_TILE];
	const XpuValue *b = &t->v[in->b * XPU_TILE];
	const uint8_t *an = &t->n[in->a * XPU_TILE];
	const uint8_t *bn = &t->n[in->b * XPU_TILE];
	int			i, k, bad = 0;

	if (in->dst == in->a || in->dst == in->b)
		return 0;
#define XPU_TILE_ARITH(NAME, BUILTIN, MIN, MAX) \
	case XPU_OP_##NAME: \
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
			int64_t		r; \
			int			ovf = BUILTIN(a[i].i, b[i].i, &r); \
			uint8_t		nul = an[i] | bn[i]; \
			\
			ovf |= (r < (MIN)) | (r > (MAX)); \
			d[i].i = r; \
			dn[i] = nul; \
			bad |= ovf & (nul == 0); \
		}); \
		return !bad
	switch (in->op)
	{
		XPU_TILE_ARITH(ADD_I2, __builtin_add_overflow, INT16_MIN, INT16_MAX);
		XPU_TILE_ARITH(SUB_I2, __builtin_sub_overflow, INT16_MIN, INT16_MAX);
		XPU_TILE_ARITH(MUL_I2, __builtin_mul_overflow, INT16_MIN, INT16_MAX);
		XPU_TILE_ARITH(ADD_I4, __builtin_add_overflow, INT32_MIN, INT32_MAX);
		XPU_TILE_ARITH(SUB_I4, __builtin_sub_overflow, INT32_MIN, INT32_MAX);
		XPU_TILE_ARITH(MUL_I4, __builtin_mul_overflow, INT32_MIN, INT32_MAX);
		XPU_TILE_ARITH(ADD_I8, __builtin_add_overflow, INT64_MIN, INT64_MAX);
		XPU_TILE_ARITH(SUB_I8, __builtin_sub_overflow, INT64_MIN, INT64_MAX);
		XPU_TILE_ARITH(MUL_I8, __builtin_mul_overflow, INT64_MIN, INT64_MAX);
		default:
			return 0;
	}
#undef XPU_TILE_ARITH
}

/*
 * xpu_tile_simple: the opcodes that cannot fail and touch only whole
 * values (integer comparisons, AND, OR, null tests, integer and bool
 * constants, MOVE), run over the selected rows; returns 0 for every other
 * opcode.  The results are those of their step bodies (xpu_int.h,
 * xpu_load.h, xpu_bool.h): a comparison with a NULL argument is NULL.
 */
static inline int
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
		case XPU_OP_AND:
			/* false if either is false, else NULL if either is NULL */
			XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
				int			f = ((an[i] == 0) & (a[i].i == 0)) | ((bn[i] == 0) & (b[i].i == 0));

				d[i].i = !f;
				dn[i] = (uint8_t) (!f & ((an[i] | bn[i]) != 0));
			});
			return 1;
		case XPU_OP_OR:
			/* true if either is true, else NULL if either is NULL */
			XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
				int			tr = ((an[i] == 0) & (a[i].i != 0)) | ((bn[i] == 0) & (b[i].i != 0));

				d[i].i = tr;
				dn[i] = (uint8_t) (!tr & ((an[i] | bn[i]) != 0));
			});
			return 1;
		case XPU_OP_IS_NULL:
		case XPU_OP_IS_NOT_NULL:
			c = in->op == XPU_OP_IS_NOT_NULL;
			XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
				d[i].i = (an[i] != 0) ^ c;
				dn[i] = 0;
			});
			return 1;
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
			return xpu_tile_arith(in, t, sel, nsel, nrows);
	}
#undef XPU_TILE_CMP
}

/*
 * xpu_load_rows of a dictionary-encoded utf8 column (xpu_dict.h): each
 * row's value from its index, NULL for a NULL index or value; 0 (rows
 * left to LOAD_COL, which records the error) at an index outside the
 * dictionary
 */
static inline int
xpu_load_dict_rows(const XpuColumnData *cd, int64_t off, const uint16_t *sel, int nsel,
				   int nrows, XpuValue *d, uint8_t *dn)
{
	const int32_t *o = cd->dict_offsets;
	const uint8_t *iv = cd->validity;
	int			i, k, bad = 0;

	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
		int64_t		ix;

		if (iv != NULL && !xpu_bit(iv, off + i))
			dn[i] = 1;
		else if (!xpu_dict_index_ok(cd, ix = xpu_dict_index(cd, off + i)))
			bad = 1;
		else
		{
			dn[i] = (uint8_t) xpu_dict_value_null(cd, ix);
			d[i].t.p = cd->data + o[ix];
			d[i].t.len = o[ix + 1] - o[ix];
		}
	});
	return !bad;
}

/*
 * xpu_load_rows: the values and null flags of the selected rows (of rows
 * 0 .. nrows - 1; nsel == nrows: all of them, sel unused) of a column of
 * an integer, float or utf8 kind into d / dn, row i from the column's row
 * off + i; returns 0 for every other column, which the generic LOAD_COL
 * step handles.  These loads never fail.  A utf8 column with a length
 * limit (varchar(n): col->scale characters) is loaded here when no value
 * of the selected rows has more than n bytes, since a value of at most n
 * bytes has at most n characters; otherwise 0 is returned (d / dn written
 * in part) and LOAD_COL counts the characters of each value.  A column
 * without a validity bitmap has no NULLs: its null flags are set to 0 in
 * the same loop.  A dictionary-encoded utf8 column: xpu_load_dict_rows,
 * with varchar(n) checked once for the dictionary (xpu_dict_fits).
 */
static inline int
xpu_load_rows(const XpuColumn *col, const XpuColumnData *cd, int64_t off,
			  const uint16_t *sel, int nsel, int nrows, XpuValue *d, uint8_t *dn)
{
	int			i, k;

#define XPU_LOAD_VALS(CTYPE, FIELD) \
	do { \
		const CTYPE *v = (const CTYPE *) cd->values + off; \
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
			d[i].FIELD = v[i]; \
			dn[i] = 0; \
		}); \
	} while (0)
	switch (col->kind)
	{
		case XPU_COL_INT8: XPU_LOAD_VALS(int8_t, i); break;
		case XPU_COL_INT16: XPU_LOAD_VALS(int16_t, i); break;
		case XPU_COL_INT32: XPU_LOAD_VALS(int32_t, i); break;
		case XPU_COL_INT64: XPU_LOAD_VALS(int64_t, i); break;
		case XPU_COL_FLOAT32: XPU_LOAD_VALS(float, f4); break;
		case XPU_COL_FLOAT64: XPU_LOAD_VALS(double, f8); break;
		case XPU_COL_UTF8:
			if (xpu_is_dict(cd))
			{
				/* varchar(n): every value of the dictionary fits, or LOAD_COL */
				if (col->scale > 0 && !xpu_dict_fits(col, cd))
					return 0;
				return xpu_load_dict_rows(cd, off, sel, nsel, nrows, d, dn);
			}
			{
				const int32_t *o = (const int32_t *) cd->values + off;
				int32_t		longest = 0;

				XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
					int32_t		len = o[i + 1] - o[i];

					d[i].t.p = cd->data + o[i];
					d[i].t.len = len;
					longest = len > longest ? len : longest;
					dn[i] = 0;
				});
				/* a NULL's bytes (none, in a valid file) count too: LOAD_COL decides */
				if (col->scale > 0 && longest > col->scale)
					return 0;
				break;
			}
		default:
			return 0;
	}
#undef XPU_LOAD_VALS
	if (cd->validity != NULL)
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
			dn[i] = !xpu_bit(cd->validity, off + i);
		});
	return 1;
}

/* xpu_load_rows for a LOAD_COL instruction over the selected rows of a tile */
static inline int
xpu_tile_load(const XpuProgram *prog, const XpuInstr *in, const XpuColumnData *cols,
			  int64_t row0, XpuTile *t, const uint16_t *sel, int nsel, int nrows)
{
	const XpuColumn *col = XPU_COLS(prog) + in->imm;
	const XpuColumnData *cd = cols + col->col_index;

	return xpu_load_rows(col, cd, row0 + cd->offset, sel, nsel, nrows,
						 &t->v[in->dst * XPU_TILE], &t->n[in->dst * XPU_TILE]);
}

/* is op an integer comparison (XPU_TILE_CMP of xpu_tile_simple) */
static inline int
xpu_tile_is_int_cmp(int op)
{
	return op == XPU_OP_EQ_INT || op == XPU_OP_NE_INT || op == XPU_OP_LT_INT ||
		op == XPU_OP_LE_INT || op == XPU_OP_GT_INT || op == XPU_OP_GE_INT;
}

/*
 * xpu_tile_cmp_const: register dst = register a OP c over the selected
 * rows (OP: the comparison opcode op): what CONST_INT into a register and
 * the comparison of a with it compute, without the constant's register
 */
static inline void
xpu_tile_cmp_const(int op, int dst, int a, int64_t c, XpuTile *t, const uint16_t *sel,
				   int nsel, int nrows)
{
	XpuValue   *d = &t->v[dst * XPU_TILE];
	uint8_t    *dn = &t->n[dst * XPU_TILE];
	const XpuValue *av = &t->v[a * XPU_TILE];
	const uint8_t *an = &t->n[a * XPU_TILE];
	int			i, k;

#define XPU_TILE_CMPC(NAME, OP) \
	case XPU_OP_##NAME: \
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
			d[i].i = av[i].i OP c; \
			dn[i] = an[i]; \
		}); \
		break
	switch (op)
	{
		XPU_TILE_CMPC(EQ_INT, ==);
		XPU_TILE_CMPC(NE_INT, !=);
		XPU_TILE_CMPC(LT_INT, <);
		XPU_TILE_CMPC(LE_INT, <=);
		XPU_TILE_CMPC(GT_INT, >);
		default:
			XPU_TILE_CMPC(GE_INT, >=);
	}
#undef XPU_TILE_CMPC
}

/*
 * xpu_tile_fuse: the instruction to run at pc of [pc, end), and how many
 * instructions it stands for (*used).  Two fusions, which codegen's
 * qual conjuncts (x op constant, then r0 = that) make common:
 *
 *	CONST_INT/BOOL rk; CMP rd = ra op rk	(rk read only there)
 *		returns NULL after running the comparison with the constant itself
 *		(into rd, or with the next fusion into a MOVE's destination);
 *	X rd = ...; MOVE rm = rd			(rd read only by the MOVE, rm none of
 *		X's argument fields) returns X with destination rm in *tmp.
 *
 * A register read exactly once (t->reads) and skipped is seen by no other
 * instruction and no output, so the results are those of the unfused
 * instructions.
 */
static inline const XpuInstr *
xpu_tile_fuse(const XpuProgram *prog, const XpuInstr *in, int pc, int end, XpuTile *t,
			  const uint16_t *sel, int nsel, int nrows, XpuInstr *tmp, int *used)
{
	const XpuInstr *next = pc + 1 < end ? in + 1 : NULL;
	int			dst;

	*used = 1;
	if (next != NULL && (in->op == XPU_OP_CONST_INT || in->op == XPU_OP_CONST_BOOL) &&
		xpu_tile_is_int_cmp(next->op) && next->b == in->dst && next->a != in->dst &&
		t->reads[in->dst] == 1)
	{
		int64_t		c = in->op == XPU_OP_CONST_BOOL ? (in->imm != 0) :
			*(const int64_t *) (XPU_CONSTS(prog) + in->imm);

		*used = 2;
		dst = next->dst;
		if (pc + 2 < end && next[1].op == XPU_OP_MOVE && next[1].a == dst &&
			t->reads[dst] == 1 && next[1].dst != next->a)
		{
			dst = next[1].dst;
			*used = 3;
		}
		xpu_tile_cmp_const(next->op, dst, next->a, c, t, sel, nsel, nrows);
		return NULL;
	}
	if (next != NULL && next->op == XPU_OP_MOVE && next->a == in->dst &&
		in->op != XPU_OP_MOVE && t->reads[in->dst] == 1 && next->dst != in->a &&
		next->dst != in->b && next->dst != in->c && next->dst != in->dst)
	{
		*tmp = *in;
		tmp->dst = next->dst;
		*used = 2;
		return tmp;
	}
	return in;
}

/*
 * xpu_tile_probe_word: JOIN_PROBE of a table with a word form
 * (xpu_join_word_form: one key, dense or with the key in its hash entries)
 * in loops over the selected rows whose iterations are independent, so that
 * their cache misses overlap: dense, one loop (subtract, compare, slot);
 * hash, two: each key's bucket bounds (into the cursors' memory, which no
 * row needs here), then the bucket's entries up to the first equal key
 */
static inline void
xpu_tile_probe_word(const XpuJoinTable *tab, int word_form, const XpuInstr *in, XpuTile *t,
					const uint16_t *sel, int nsel, int nrows)
{
	const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(tab, tab->buckets_off);
	const int	type = tab->keys[0].probe_type;
	const XpuValue *a = &t->v[in->a * XPU_TILE];
	const uint8_t *an = &t->n[in->a * XPU_TILE];
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	uint32_t   *pos = (uint32_t *) t->curs,
			   *end = pos + XPU_TILE;
	int			i, k;

	if (word_form == XPU_JOIN_WORD_DENSE)
	{
		XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
			int32_t		r = an[i] ? -1 : xpu_join_first_word(tab, word_form, (uint64_t) a[i].i);

			d[i].i = r;
			dn[i] = r < 0;
		});
		return;
	}
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
		uint32_t	b = xpu_join_word_bucket(tab, xpu_agg_key_word(type, &a[i]));

		pos[k] = an[i] ? 0 : buckets[b];
		end[k] = an[i] ? 0 : buckets[b + 1];
	});
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
		int32_t		r = xpu_join_word_walk(tab, pos[k], end[k], xpu_agg_key_word(type, &a[i]));

		d[i].i = r;
		dn[i] = r < 0;
	});
}

/*
 * xpu_tile_probe: JOIN_PROBE over the selected rows, their loads
 * overlapped (xpu_tile_probe_word, else xpu_join_first_batch); 0 (nothing
 * done) where the tile has no cursors or the instruction does not fit the
 * table, which the step body then refuses row by row.  A probe of every
 * match is one of the first where its table's keys are unique (it meets
 * no second match).
 */
static inline int
xpu_tile_probe(const XpuInstr *in, XpuTile *t, const uint16_t *sel, int nsel, int nrows)
{
	int			depth = XPU_JOIN_IMM_DEPTH(in->imm);
	const XpuJoinTable *tab;
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	const XpuValue *keys[XPU_JOIN_PROBE_MAX_KEYS] = {
		&t->v[in->a * XPU_TILE], &t->v[in->b * XPU_TILE], &t->v[in->c * XPU_TILE]
	};
	const uint8_t *nulls[XPU_JOIN_PROBE_MAX_KEYS] = {
		&t->n[in->a * XPU_TILE], &t->n[in->b * XPU_TILE], &t->n[in->c * XPU_TILE]
	};
	int			i, k;

	if (t->curs == NULL || depth >= t->n_joins || t->joins[depth] == NULL ||
		((in->imm & XPU_JOIN_PROBE_EACH) && xpu_join_probe_expands(in, t->joins, t->n_joins)))
		return 0;
	tab = t->joins[depth];
	if (XPU_JOIN_IMM_ARG(in->imm) != tab->n_keys)
		return 0;
	if (xpu_join_word_form(tab) != XPU_JOIN_WORD_NONE)
	{
		/* two uint32 bucket bounds a row in the 136 bytes of its cursor */
		xpu_tile_probe_word(tab, xpu_join_word_form(tab), in, t, sel, nsel, nrows);
		return 1;
	}
	xpu_join_first_batch(tab, XPU_JOIN_INNER, nsel, nsel == nrows ? NULL : sel,
						 keys, nulls, t->curs, t->first);
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
		d[i].i = t->first[k];
		dn[i] = t->first[k] < 0;
	});
	return 1;
}

/*
 * xpu_tile_pay: JOIN_PAY over the selected rows, a gather of the payload
 * column at the rows that register a names; 0 (nothing done) where a row
 * is not one of the table's or the column not either, which the step body
 * then refuses
 */
static inline int
xpu_tile_pay(const XpuInstr *in, XpuTile *t, const uint16_t *sel, int nsel, int nrows)
{
	int			depth = XPU_JOIN_IMM_DEPTH(in->imm);
	int			col = XPU_JOIN_IMM_ARG(in->imm);
	const XpuJoinTable *tab;
	const XpuJoinPayCol *pc;
	XpuValue   *d = &t->v[in->dst * XPU_TILE];
	uint8_t    *dn = &t->n[in->dst * XPU_TILE];
	const XpuValue *a = &t->v[in->a * XPU_TILE];
	const uint8_t *an = &t->n[in->a * XPU_TILE];
	const uint8_t *pnull, *pval;
	int			i, k, bad = 0;

	if (depth >= t->n_joins || t->joins == NULL || t->joins[depth] == NULL)
		return 0;
	tab = t->joins[depth];
	if (col >= tab->n_pay)
		return 0;
	pc = &tab->pay[col];
	pnull = XPU_JOIN_AT(tab, pc->nulls_off);
	pval = XPU_JOIN_AT(tab, pc->vals_off);
	/* every row a NULL argument or one of the table's (before any write:
	 * the destination may be the argument) */
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, {
		bad |= an[i] == 0 && (uint64_t) a[i].i >= tab->n_rows;
	});
	if (bad)
		return 0;
#define XPU_TILE_GATHER(LOAD) \
	XPU_TILE_FOR_SEL(i, k, sel, nsel, nrows, { \
		uint64_t	r = (uint64_t) a[i].i; \
		\
		if (an[i] || pnull[r]) \
			dn[i] = 1; \
		else \
		{ \
			LOAD; \
			dn[i] = 0; \
		} \
	})
	if (pc->type == XPU_T_TEXT)
		XPU_TILE_GATHER({
			XpuJoinText tx;

			memcpy(&tx, pval + r * 16, sizeof(tx));
			d[i].t.p = (const char *) XPU_JOIN_AT(tab, tx.off);
			d[i].t.len = tx.len;
		});
	else if (pc->width == 16)
		XPU_TILE_GATHER(memcpy(&d[i], pval + r * 16, 16));
	else
		XPU_TILE_GATHER(memcpy(&d[i].i, pval + r * 8, 8));
#undef XPU_TILE_GATHER
	return 1;
}

/* a function of its own, compiled once (GNU C and C++) */
#if defined(__GNUC__)
#define XPU_NOINLINE __attribute__((noinline))
#else
#define XPU_NOINLINE
#endif

/*
 * xpu_tile_generic: instruction in over the selected rows through its step
 * body, row by row (every opcode's; the fast paths above take the common
 * ones first).  Kept out of line: the opcode table expands to a large
 * switch.
 */
static XPU_NOINLINE void
xpu_tile_generic(const XpuInstr *in, XpuTile *t, const uint16_t *sel, int nsel,
				 int64_t row0, XpuCtx *ctx, XpuError *err)
{
	XpuCtx		s = *ctx;
	int			i, k;

	switch (in->op)
	{
		XPU_OPCODE_TABLE(XPU_TILE_CASE)
		default:
			XPU_ERROR(err, XPU_ERR_INTERNAL, "unknown xpu opcode");
			return;
	}
}

/*
 * xpu_tile_run: run instructions [begin, end) over rows row0 .. row0 +
 * nrows - 1 of the chunk, for the rows of the tile's active mask.
 */
static XPU_NOINLINE void
xpu_tile_run(const XpuProgram *prog, int begin, int end,
			 const XpuColumnData *cols, int64_t row0, int nrows,
			 XpuTile *t, XpuError *err)
{
	const XpuInstr *instrs = XPU_INSTRS(prog);
	XpuCtx		s;
	XpuInstr	tmp;
	uint16_t   *sel = t->sel_stack;
	int			pc, used, depth = 0;
	int			nsel = xpu_tile_select(t, nrows, sel);

	s.prog = prog;
	s.err = err;
	s.cols = cols;
	s.joins = t->joins;
	s.n_joins = t->n_joins;
	s.each = 0;				/* expanding programs run per row (xpu_cpu.c) */
	s.matched = 0;			/* and so do the ones that mark (xpu_join.h) */
	s.stack = 0;
	s.probes = 0;			/* counted per tile, below */
	for (pc = begin; pc < end; pc += used)
	{
		const XpuInstr *in = instrs + pc;

		used = 1;
		switch (in->op)
		{
			case XPU_OP_MASK_PUSH_TRUE:
			case XPU_OP_MASK_PUSH_NOT_TRUE:
			case XPU_OP_MASK_PUSH_NOT_FALSE:
			case XPU_OP_MASK_PUSH_NULL:
				t->nsel_stack[depth++] = nsel;
				nsel = xpu_tile_narrow(in->op, &t->v[in->a * XPU_TILE],
									   &t->n[in->a * XPU_TILE], sel, nsel, nrows,
									   sel + XPU_TILE);
				sel += XPU_TILE;
				continue;
			case XPU_OP_MASK_POP:
				sel -= XPU_TILE;
				nsel = t->nsel_stack[--depth];
				continue;
			default:
				break;
		}
		in = xpu_tile_fuse(prog, in, pc, end, t, sel, nsel, nrows, &tmp, &used);
		if (in == NULL)
			continue;
		if (in->op == XPU_OP_LOAD_COL)
		{
			if (xpu_tile_load(prog, in, cols, row0, t, sel, nsel, nrows))
				continue;
		}
		else if (in->op == XPU_OP_JOIN_PROBE)
		{
			if (t->probes != NULL && XPU_JOIN_IMM_DEPTH(in->imm) < XPU_JOIN_COUNT_DEPTHS)
				t->probes[XPU_JOIN_IMM_DEPTH(in->imm)] += (uint64_t) nsel;
			if (xpu_tile_probe(in, t, sel, nsel, nrows))
				continue;
		}
		else if (in->op == XPU_OP_JOIN_PAY)
		{
			if (xpu_tile_pay(in, t, sel, nsel, nrows))
				continue;
		}
		else if (xpu_tile_simple(prog, in, t, sel, nsel, nrows))
			continue;
		xpu_tile_generic(in, t, sel, nsel, row0, &s, err);
	}
}

#endif							/* XPU_TILE_H */
