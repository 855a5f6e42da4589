/*-------------------------------------------------------------------------
 *
 * xpu_cpu.c
 *		The CPU engine's entry points over one chunk: the vectorised run
 *		(tiles of XPU_TILE rows, xpu_tile_run) and the per-row run of the
 *		GPU's form compiled for the host (xpu_row_eval), which tests
 *		compare with each other.  Plain C (or C++), no PostgreSQL headers:
 *		the backend and the service link it alike.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "xpu_tile.h"

/* the workspace's parts, each 16-byte aligned */
static size_t
align16(size_t n)
{
	return (n + 15) & ~(size_t) 15;
}

/*
 * xpu_cpu_workspace_size: bytes of workspace that xpu_cpu_exec needs for
 * prog (16-byte aligned memory, e.g. from malloc); one workspace serves one
 * thread at a time.
 */
/*
 * the workspace's cursors of JOIN_PROBE (xpu_tile_probe) and their first
 * matches: only for a program with a JOIN stage
 */
static size_t
cpu_probe_space(const XpuProgram *prog)
{
	return xpu_program_probes(prog) ?
		align16(XPU_TILE * sizeof(XpuJoinCursor)) + align16(XPU_TILE * sizeof(int32_t)) : 0;
}

size_t
xpu_cpu_workspace_size(const XpuProgram *prog)
{
	size_t		nregs = prog->n_regs ? prog->n_regs : 1;

	return align16(nregs * XPU_TILE * sizeof(XpuValue)) +
		align16(nregs * XPU_TILE) + align16(XPU_TILE) +
		align16((size_t) (XPU_MAX_MASK_DEPTH + 1) * XPU_TILE * sizeof(uint16_t)) +
		cpu_probe_space(prog);
}

/* one tile: LOAD, QUAL and JOIN for all rows, PROJ for the passing ones, outputs */
static void
cpu_tile(const XpuProgram *prog, const XpuChunk *chunk, int64_t row0, int n,
		 XpuTile *t, XpuResult *res, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const uint8_t *outs = XPU_OUTS(prog);
	int			has_qual = xpu_program_filters(prog);
	int			i, k;

	memset(t->n, 1, (size_t) prog->n_regs * XPU_TILE);
	memset(t->act, 1, XPU_TILE);
	xpu_tile_run(prog, st[XPU_STAGE_LOAD], st[XPU_STAGE_GROUP], chunk->cols, row0,
				 n, t, err);
	for (i = 0; i < n; i++)
	{
		t->act[i] = !has_qual || XPU_TRUE(&t->v[i], t->n[i]);
		res->mask[row0 + i] = t->act[i];
	}
	xpu_tile_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk->cols, row0,
				 n, t, err);
	/* the values of rows that did not pass are never read: copied as they are */
	for (k = 0; k < prog->n_outs; k++)
	{
		int64_t		o = k * res->nrows + row0;
		const uint8_t *tn = &t->n[outs[k] * XPU_TILE];
		uint8_t    *rn = &res->nulls[o];

		memcpy(&res->values[o], &t->v[outs[k] * XPU_TILE], (size_t) n * sizeof(XpuValue));
		for (i = 0; i < n; i++)
			rn[i] = (uint8_t) (tn[i] | (t->act[i] == 0));
	}
}

/*
 * may xpu_load_rows load column col (integers, floats, utf8: never failing;
 * a varchar(n) column only while its values have at most n bytes, or a
 * dictionary's all fit it)
 */
static int
cpu_fast_col(const XpuColumn *col)
{
	int			kind = col->kind;

	return kind == XPU_COL_INT8 || kind == XPU_COL_INT16 || kind == XPU_COL_INT32 ||
		kind == XPU_COL_INT64 || kind == XPU_COL_FLOAT32 || kind == XPU_COL_FLOAT64 ||
		kind == XPU_COL_UTF8;
}

/*
 * cpu_out_load: the PROJ instruction that loads register r, when exactly
 * one does; NULL otherwise
 */
static const XpuInstr *
cpu_out_load(const XpuProgram *prog, int r)
{
	const uint16_t *st = prog->stage_start;
	const XpuInstr *instrs = XPU_INSTRS(prog);
	const XpuInstr *found = NULL;

	for (int pc = st[XPU_STAGE_PROJ]; pc < st[XPU_N_STAGES]; pc++)
	{
		if (instrs[pc].dst == r)
		{
			if (found != NULL)
				return NULL;
			found = &instrs[pc];
		}
	}
	return found;
}

/*
 * cpu_loads_only: a program that only loads columns into its outputs
 * (GROUP BY columns, aggregates of columns: no LOAD or QUAL stage, every
 * PROJ instruction a LOAD_COL of a kind that xpu_load_rows loads, every
 * output loaded by exactly one) loads them straight into res, without the
 * tiles; false for any other program, or a varchar(n) value of more than n
 * bytes (res written in part: the tiles write it all).
 */
static int
cpu_loads_only(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
			   const uint8_t *skip)
{
	const uint8_t *outs = XPU_OUTS(prog);
	const uint16_t *st = prog->stage_start;
	const XpuInstr *instrs = XPU_INSTRS(prog);
	int64_t		n = chunk->nrows;
	int			k;

	if (st[XPU_STAGE_LOAD] != st[XPU_STAGE_GROUP])
		return 0;
	for (int pc = st[XPU_STAGE_PROJ]; pc < st[XPU_N_STAGES]; pc++)
		if (instrs[pc].op != XPU_OP_LOAD_COL ||
			!cpu_fast_col(&XPU_COLS(prog)[instrs[pc].imm]))
			return 0;
	for (k = 0; k < prog->n_outs; k++)
		if (cpu_out_load(prog, outs[k]) == NULL)
			return 0;
	for (k = 0; k < prog->n_outs; k++)
	{
		const XpuColumn *col = XPU_COLS(prog) + cpu_out_load(prog, outs[k])->imm;
		const XpuColumnData *cd = chunk->cols + col->col_index;

		/*
		 * a dictionary column the consumer reads itself (xpu_cpu_exec_skip),
		 * whose values all fit its varchar(n), if any (else its rows are
		 * checked, by LOAD_COL where one does not fit)
		 */
		if (skip != NULL && skip[k] && xpu_is_dict(cd) &&
			(col->scale == 0 || xpu_dict_fits(col, cd)))
			continue;
		/* rows in pieces of at most INT32_MAX (xpu_load_rows counts in int) */
		for (int64_t r0 = 0; r0 < n; r0 += INT32_MAX)
		{
			int			m = (int) (n - r0 < INT32_MAX ? n - r0 : INT32_MAX);

			/*
			 * 0: a varchar(n) value longer than n bytes, or a dictionary
			 * index outside it: the tiles (LOAD_COL decides)
			 */
			if (!xpu_load_rows(col, cd, cd->offset + r0, NULL, m, m,
							   &res->values[k * n + r0], &res->nulls[k * n + r0]))
				return 0;
		}
	}
	memset(res->mask, 1, (size_t) n);
	return 1;
}

/* see xpu_program.h: above every version a file's field makes (2^63) */
uint64_t
xpu_dict_new_version(void)
{
	static uint64_t next;

	return UINT64_C(1) << 63 | __atomic_add_fetch(&next, 1, __ATOMIC_RELAXED);
}

/*
 * xpu_cpu_dict_outs: see xpu_program.h.  Exactly one PROJ instruction
 * loads the output, a LOAD_COL of that column, and no mask (CASE) is
 * pushed in PROJ: its value for every row that passes.
 */
int
xpu_cpu_dict_outs(const XpuProgram *prog, const XpuChunk *chunk,
				  const XpuColumnData **dict_cols)
{
	const uint8_t *outs = XPU_OUTS(prog);
	const XpuInstr *instrs = XPU_INSTRS(prog);
	int			masked = 0,
				n = 0;

	for (int pc = prog->stage_start[XPU_STAGE_PROJ]; pc < prog->stage_start[XPU_N_STAGES]; pc++)
		masked |= xpu_op_is_push(instrs[pc].op);
	for (int k = 0; k < prog->n_outs; k++)
	{
		const XpuInstr *in = cpu_out_load(prog, outs[k]);
		const XpuColumnData *cd = NULL;

		if (!masked && in != NULL && in->op == XPU_OP_LOAD_COL && chunk->n_parts <= 1 &&
			!xpu_program_expands_over(prog, chunk->joins, chunk->n_joins))
			cd = chunk->cols + XPU_COLS(prog)[in->imm].col_index;
		dict_cols[k] = cd != NULL && xpu_is_dict(cd) ? cd : NULL;
		n += dict_cols[k] != NULL;
	}
	return n;
}

/*
 * cpu_chunk_ok: does chunk fit prog (columns, result rows, and where either
 * has joins, the program's JOIN stage the chunk's tables); sets err if not
 */
static int
cpu_chunk_ok(const XpuProgram *prog, const XpuChunk *chunk, const XpuResult *res,
			 XpuError *err)
{
	if (!xpu_chunk_check(prog, chunk) || res->nrows != chunk->nrows ||
		chunk->n_joins < 0 || (chunk->n_joins > 0 && chunk->joins == NULL))
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "chunk does not match the program");
		return 0;
	}
	if (chunk->n_joins > 0 || xpu_program_probes(prog))
		return xpu_program_join_check(prog, chunk->joins, chunk->n_joins, err);
	return 1;
}

/*
 * xpu_cpu_exec: run prog over every row of chunk, vectorised, into res
 * (res->nrows == chunk->nrows).  Stops after the tile in which the first
 * error is recorded; returns err->code.
 */
int
xpu_cpu_exec(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
			 void *workspace, XpuError *err)
{
	return xpu_cpu_exec_counted(prog, chunk, res, workspace, err, NULL);
}

/* xpu_cpu_exec counting the rows that enter each join depth (xpu_program.h) */
int
xpu_cpu_exec_counted(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
					 void *workspace, XpuError *err, uint64_t *probes)
{
	return xpu_cpu_exec_skip(prog, chunk, res, workspace, err, probes, NULL);
}

/* xpu_cpu_exec_counted leaving outputs skip[k] of dictionary columns unloaded */
int
xpu_cpu_exec_skip(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
				  void *workspace, XpuError *err, uint64_t *probes, const uint8_t *skip)
{
	char	   *w = (char *) workspace;
	size_t		nregs = prog->n_regs ? prog->n_regs : 1;
	XpuTile		t;
	int64_t		row0;

	if (!cpu_chunk_ok(prog, chunk, res, err))
		return err->code;
	if (xpu_program_expands_over(prog, chunk->joins, chunk->n_joins))
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT,
				  "a program whose rows expand runs with xpu_cpu_exec_each");
		return err->code;
	}
	if (cpu_loads_only(prog, chunk, res, skip))
		return err->code;
	t.v = (XpuValue *) w;
	w += align16(nregs * XPU_TILE * sizeof(XpuValue));
	t.n = (uint8_t *) w;
	w += align16(nregs * XPU_TILE);
	t.act = (uint8_t *) w;
	w += align16(XPU_TILE);
	t.sel_stack = (uint16_t *) w;
	w += align16((size_t) (XPU_MAX_MASK_DEPTH + 1) * XPU_TILE * sizeof(uint16_t));
	t.joins = chunk->joins;
	t.n_joins = chunk->n_joins;
	t.curs = NULL;
	t.first = NULL;
	t.probes = probes;
	if (cpu_probe_space(prog) > 0)
	{
		t.curs = (XpuJoinCursor *) w;
		w += align16(XPU_TILE * sizeof(XpuJoinCursor));
		t.first = (int32_t *) w;
	}
	xpu_tile_count_reads(prog, &t);
	for (row0 = 0; row0 < chunk->nrows && err->code == XPU_OK; row0 += XPU_TILE)
	{
		int64_t		n = chunk->nrows - row0;

		cpu_tile(prog, chunk, row0, (int) (n < XPU_TILE ? n : XPU_TILE), &t, res, err);
	}
	return err->code;
}

/*
 * xpu_row_exec: the same run through the per-row form (the GPU kernel's
 * loop body), one row after the other; returns err->code.
 */
int
xpu_row_exec(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
			 XpuError *err)
{
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	int64_t		row;

	if (!cpu_chunk_ok(prog, chunk, res, err))
		return err->code;
	for (row = 0; row < chunk->nrows && err->code == XPU_OK; row++)
		xpu_row_eval(prog, chunk, row, regs, nulls, res, err);
	return err->code;
}

/* row i of res: the outputs of the row whose registers are regs/nulls */
static void
cpu_row_out(const XpuProgram *prog, const XpuValue *regs, const uint8_t *nulls,
			XpuResult *res, int64_t i)
{
	const uint8_t *outs = XPU_OUTS(prog);

	res->mask[i] = 1;
	for (int k = 0; k < prog->n_outs; k++)
	{
		res->values[k * res->nrows + i] = regs[outs[k]];
		res->nulls[k * res->nrows + i] = nulls[outs[k]];
	}
}

/*
 * cpu_row_sink: PROJ for the passing row whose registers are regs/nulls,
 * its outputs into row *filled of res, and res into sink when full: 1, 0
 * on the program's error, -1 when sink returned 0
 */
static int
cpu_row_sink(const XpuProgram *prog, const XpuChunk *chunk, const XpuColumnData *cols,
			 int64_t row, XpuValue *regs, uint8_t *nulls, XpuResult *res, int64_t *filled,
			 XpuError *err, XpuResultSink sink, void *arg)
{
	const uint16_t *st = prog->stage_start;

	xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, cols, row, regs, nulls, 1,
				err);
	if (err->code != XPU_OK)
		return 0;
	cpu_row_out(prog, regs, nulls, res, (*filled)++);
	if (*filled == res->nrows)
	{
		if (!sink(arg, res, err))
			return -1;
		*filled = 0;
	}
	return 1;
}

/* the last rows of res (filled of them) into sink; returns as cpu_row_sink */
static int
cpu_sink_end(XpuResult *res, int64_t filled, XpuError *err, XpuResultSink sink, void *arg)
{
	if (err->code != XPU_OK)
		return 0;
	if (filled > 0)
	{
		memset(res->mask + filled, 0, (size_t) (res->nrows - filled));
		if (!sink(arg, res, err))
			return -1;
	}
	return 1;
}

/*
 * xpu_cpu_exec_each: run prog over every row of chunk into batches of
 * output rows, for a program whose rows may expand (xpu_program_expands:
 * probes of every match, xpu_join.h) as for any other: res holds up to
 * res->nrows output rows (any number, its capacity); each time it is full,
 * and once at the end where it holds any, sink(arg, res, err) takes them
 * (rows whose mask is 0 are none).  A program that does not expand runs
 * as xpu_cpu_exec, vectorised, one chunk row an output row (res->nrows
 * must then be chunk->nrows); so does one whose probes of every match are
 * of tables of unique keys (xpu_program_expands_over) where res has room
 * for chunk->nrows rows (sink takes a result of chunk->nrows rows, once);
 * one that expands runs through the per-row form,
 * each outer row once per combination of its matches, in order.  Returns
 * 1, 0 on the program's error (err), -1 when sink returned 0 (sink said
 * why, through err or arg).
 */
int
xpu_cpu_exec_each(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
				  void *workspace, XpuError *err, XpuResultSink sink, void *arg)
{
	return xpu_cpu_exec_each_counted(prog, chunk, res, workspace, err, sink, arg, NULL);
}

/* xpu_cpu_exec_each counting the rows that enter each join depth (xpu_program.h) */
int
xpu_cpu_exec_each_counted(const XpuProgram *prog, const XpuChunk *chunk, XpuResult *res,
						  void *workspace, XpuError *err, XpuResultSink sink, void *arg,
						  uint64_t *probes)
{
	const uint16_t *st = prog->stage_start;
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	XpuEach		each;
	int64_t		filled = 0;
	int			rc,
				expands = xpu_program_expands(prog);

	if (!expands || (!xpu_program_expands_over(prog, chunk->joins, chunk->n_joins) &&
					 chunk->nrows <= res->nrows))
	{
		/* one output row a chunk row (unique keys: res's room as chunk->nrows rows) */
		XpuResult	one = *res;

		if (expands)
			one.nrows = chunk->nrows;
		if (xpu_cpu_exec_counted(prog, chunk, &one, workspace, err, probes) != XPU_OK)
			return 0;
		return sink(arg, &one, err) ? 1 : -1;
	}
	if (res->nrows <= 0)
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "no room for output rows");
		return 0;
	}
	/* the chunk's columns and tables as xpu_cpu_exec checks them */
	if (!xpu_chunk_check(prog, chunk) || chunk->n_joins < 0 ||
		(chunk->n_joins > 0 && chunk->joins == NULL))
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "chunk does not match the program");
		return 0;
	}
	if (!xpu_program_join_check(prog, chunk->joins, chunk->n_joins, err))
		return 0;
	for (int64_t row = 0; row < chunk->nrows && err->code == XPU_OK; row++)
	{
		int64_t		in_part = row;
		const XpuColumnData *cols = xpu_chunk_part(chunk, &in_part);

		for (int k = 0; k < prog->n_regs; k++)
			nulls[k] = 1;
		xpu_row_each_first_counted(prog, st[XPU_STAGE_LOAD], chunk, cols, in_part, regs,
								   nulls, &each, probes, err);
		do
		{
			if (err->code != XPU_OK)
				break;
			if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
				continue;
			if ((rc = cpu_row_sink(prog, chunk, cols, in_part, regs, nulls, res, &filled, err,
								   sink, arg)) < 0)
				return -1;
			if (rc == 0)
				break;
		} while (xpu_row_each_next(prog, chunk, &each, err));
	}
	return cpu_sink_end(res, filled, err, sink, arg);
}

/*
 * xpu_cpu_exec_unmatched: after the pass of a program whose last depth is
 * a RIGHT or FULL OUTER join (xpu_program_marks), its unmatched inner
 * rows (those whose flag in matched, the pass's, is clear) through the
 * rest of the program as xpu_row_unmatched runs them, their output rows
 * into res and sink as xpu_cpu_exec_each's; chunk gives the inner tables
 * (no rows, no columns).  Returns as xpu_cpu_exec_each.
 */
int
xpu_cpu_exec_unmatched(const XpuProgram *prog, const XpuChunk *chunk, const uint32_t *matched,
					   XpuResult *res, XpuError *err, XpuResultSink sink, void *arg)
{
	int			pc = xpu_program_marks(prog);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	const XpuJoinTable *t;
	int64_t		filled = 0;
	int			depth, rc;

	if (pc < 0 || matched == NULL || res->nrows <= 0)
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "no marking probe, flags or room for rows");
		return 0;
	}
	depth = XPU_JOIN_IMM_DEPTH(XPU_INSTRS(prog)[pc].imm);
	if (chunk->joins == NULL || depth >= chunk->n_joins || chunk->joins[depth] == NULL)
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "chunk does not match the program");
		return 0;
	}
	if (!xpu_program_join_check(prog, chunk->joins, chunk->n_joins, err))
		return 0;
	t = chunk->joins[depth];
	for (uint32_t r = 0; r < t->n_rows && err->code == XPU_OK; r++)
	{
		if (xpu_join_marked(matched, (int32_t) r))
			continue;
		xpu_row_unmatched(prog, pc, chunk, (int32_t) r, regs, nulls, err);
		if (err->code != XPU_OK)
			break;
		if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
			continue;
		if ((rc = cpu_row_sink(prog, chunk, chunk->cols, 0, regs, nulls, res, &filled, err,
							   sink, arg)) < 0)
			return -1;
		if (rc == 0)
			break;
	}
	return cpu_sink_end(res, filled, err, sink, arg);
}
