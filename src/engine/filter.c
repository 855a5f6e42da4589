/*-------------------------------------------------------------------------
 *
 * filter.c
 *		The engine's row filter of arrow_fdw scans: the scan's quals that
 *		codegen.c compiles become one xPU program, run by the CPU
 *		interpreter (xpu_cpu.c, per tile) over the Arrow columns of each
 *		record batch to a pass mask; rows that fail are skipped before any
 *		Datum is built, and PostgreSQL no longer evaluates those quals.
 *		arrow_fdw calls it through the hook that pg_warp_filter_init
 *		installs (ArrowScanFilterHook, fdw/fdw_scan.h).
 *
 * Which quals: the longest prefix of the plan's qual list (in the order
 * ExecQual evaluates it) whose conjuncts all compile.  A conjunct after one
 * that stays in PostgreSQL stays too, so that PostgreSQL evaluates every
 * qual on exactly the rows it would evaluate it on without the engine: no
 * error is raised or lost, and a volatile function runs as often.
 *
 * Errors and fallbacks.  A batch in which the program records an error
 * (overflow, division by zero, ...) or a FALLBACK (a value the engine does
 * not hold exactly) is evaluated by PostgreSQL instead: the filter's quals
 * are evaluated on each row's tuple with ExecQual, so PostgreSQL raises its
 * own error, with its SQLSTATE and message, at the same row it would have
 * without the engine.  The program runs every conjunct only where those
 * before it are true (masks), so it records errors only for rows that
 * PostgreSQL evaluates too.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/engine.h"
#include "fdw/fdw_scan.h"
#include "xpu/xpu_arrow_bind.h"

/* the filter of one scan (fdw_scan.h declares the type, opaque there) */
struct ArrowScanFilter
{
	List	   *quals;			/* the conjuncts the engine evaluates */
	XpuProgram *prog;			/* their program (palloc'ed, 16-aligned) */
	void	   *workspace;		/* xpu_cpu_exec's, 16-aligned */
	ExprState  *recheck;		/* the same quals, for fallback batches */
	XpuColumnData *cols;		/* one per loaded column */
	int			n_cols;
	MemoryContext cxt;			/* the scan's: lives as long as the filter */
	uint8	   *mask;			/* pass mask of the current batch */
	int64		mask_cap;
	bool		fallback;		/* the current batch: PostgreSQL evaluates */
	uint64		fallback_batches;
};

/*
 * engine_column_hook: CodegenScan's column hook over an EngineColumns (arg):
 * the engine's load of an Arrow scan's column.
 */
bool
engine_column_hook(void *arg, AttrNumber attno, Oid typid, int *col_index,
				   XpuColKind *kind, int *scale)
{
	const EngineColumns *fc = arg;
	const ArrowScanColumn *c = NULL;
	int			i;

	for (i = 0; i < fc->n_cols && fc->cols[i].attno != attno; i++)
		;
	if (i >= fc->n_cols)
		return false;
	c = &fc->cols[i];
	if (c->typid != typid || !(c->plain || (fc->dict_ok && c->dict_text)))
		return false;
	*col_index = i;
	*scale = 0;
	switch (typid)
	{
		case BOOLOID:
			*kind = XPU_COL_BOOL;
			return c->arrow_id == ARROW_TYPE_BOOL;
		case INT2OID:
			*kind = c->arrow_id == ARROW_TYPE_INT8 ? XPU_COL_INT8 : XPU_COL_INT16;
			return c->arrow_id == ARROW_TYPE_INT8 || c->arrow_id == ARROW_TYPE_INT16;
		case INT4OID:
			*kind = XPU_COL_INT32;
			return c->arrow_id == ARROW_TYPE_INT32;
		case INT8OID:
			*kind = XPU_COL_INT64;
			return c->arrow_id == ARROW_TYPE_INT64;
		case FLOAT4OID:
			*kind = XPU_COL_FLOAT32;
			return c->arrow_id == ARROW_TYPE_FLOAT32;
		case FLOAT8OID:
			*kind = XPU_COL_FLOAT64;
			return c->arrow_id == ARROW_TYPE_FLOAT64;
		case DATEOID:
			*kind = XPU_COL_DATE32;
			return c->arrow_id == ARROW_TYPE_DATE32;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			*kind = c->unit == ARROW_UNIT_SECOND ? XPU_COL_TIMESTAMP_S :
				c->unit == ARROW_UNIT_MILLI ? XPU_COL_TIMESTAMP_MS :
				c->unit == ARROW_UNIT_MICRO ? XPU_COL_TIMESTAMP_US : XPU_COL_TIMESTAMP_NS;
			return c->arrow_id == ARROW_TYPE_TIMESTAMP;
		case NUMERICOID:
			*kind = XPU_COL_DECIMAL128;
			*scale = c->scale;
			return c->arrow_id == ARROW_TYPE_DECIMAL128 &&
				c->scale >= 0 && c->scale <= XPU_NUMERIC_MAX_SCALE;
		case TEXTOID:
		case VARCHAROID:
			*kind = XPU_COL_UTF8;
			*scale = c->max_chars;	/* varchar(n): its length limit */
			return c->arrow_id == ARROW_TYPE_UTF8;
		case INTERVALOID:
			*kind = XPU_COL_INTERVAL_MDN;
			return c->arrow_id == ARROW_TYPE_INTERVAL_MDN;
		default:
			/* pg_warp's float2: arrow_fdw reads a float16's bits as they are */
			*kind = XPU_COL_FLOAT16;
			return c->arrow_id == ARROW_TYPE_FLOAT16 &&
				typid == codegen_float2_type();
	}
}

/*
 * engine_filter_split: the prefix of quals (an implicit-AND list, in the
 * order ExecQual evaluates it) whose conjuncts all compile over the columns
 * fc of scanrelid: the quals the engine evaluates, for the backend's filter
 * and GpuScan alike.  The other conjuncts, in their order, go to *rest.
 */
List *
engine_filter_split(List *quals, Index scanrelid, EngineColumns *fc, List **rest)
{
	CodegenScan scan = {scanrelid, engine_column_hook, fc};

	return engine_filter_split_scan(quals, &scan, rest);
}

/* engine_filter_split over the columns of any CodegenScan (a heap table's) */
List *
engine_filter_split_scan(List *quals, CodegenScan *scan, List **rest)
{
	List	   *engine = NIL;
	ListCell   *lc;

	*rest = NIL;
	foreach(lc, quals)
	{
		if (*rest == NIL && codegen_expr_supported(scan, lfirst(lc)))
			engine = lappend(engine, lfirst(lc));
		else
			*rest = lappend(*rest, lfirst(lc));
	}
	return engine;
}

/* palloc'ed memory of size bytes at a 16-byte boundary */
static void *
palloc_aligned16(Size size)
{
	char	   *p = palloc(size + 16);

	return (void *) TYPEALIGN(16, p);
}

/*
 * engine_every_row: prepares scan, over the Arrow columns ec, for an engine
 * that skips rows before arrow_fdw converts them (the filter, GpuScan): the
 * columns whose conversion may fail (a date beyond PostgreSQL's range, a
 * varchar(n) too long...) are loaded for every row, so that such a value
 * in any row makes PostgreSQL evaluate its batch and raise its error.
 * False when a column whose typmod or domain the conversion checks cannot
 * be loaded by the engine (a char(n), a domain): the engine must not skip
 * rows of this scan then.  A column of a layout the engine does not load
 * at all (date64, time, ...) is not checked: a value of it that arrow_fdw
 * cannot convert, in a row the engine rejects, raises no error (see
 * doc/engine.md, "Values arrow_fdw cannot convert").
 */
bool
engine_every_row(CodegenScan *scan, const EngineColumns *ec)
{
	List	   *vars = NIL;

	for (int i = 0; i < ec->n_cols; i++)
	{
		const ArrowScanColumn *c = &ec->cols[i];
		int			index,
					scale;
		XpuColKind	kind;

		if (!c->may_fail)
			continue;
		if (!engine_column_hook((void *) ec, c->attno, c->typid, &index, &kind, &scale))
		{
			if (c->checked)
				return false;
			continue;
		}
		vars = lappend(vars, makeVar(scan->scanrelid, c->attno, c->typid, -1, InvalidOid, 0));
	}
	scan->every_row = true;
	scan->preload = vars;
	return true;
}

/*
 * engine_filter_begin: at BeginForeignScan, compile the scan's quals; the
 * conjuncts the engine evaluates leave ss->ps.qual (which ExecScan checks).
 * Returns NULL (and changes nothing) when no conjunct compiles.
 */
static ArrowScanFilter *
engine_filter_begin(ScanState *ss, Index scanrelid, const ArrowScanColumn *cols, int n_cols)
{
	EngineColumns fc = {cols, n_cols, true};
	CodegenScan scan = {scanrelid, engine_column_hook, &fc};
	List	   *rest;
	List	   *engine = engine_filter_split(ss->ps.plan->qual, scanrelid, &fc, &rest);
	XpuProgram *prog;
	ArrowScanFilter *f;

	if (engine == NIL || !engine_every_row(&scan, &fc))
		return NULL;
	prog = codegen_qual_program(&scan, engine);
	if (prog == NULL)
		return NULL;			/* together past a limit (registers, masks) */
	f = palloc0(sizeof(ArrowScanFilter));
	f->cxt = CurrentMemoryContext;
	f->quals = engine;
	f->prog = palloc_aligned16(prog->total_len);
	memcpy(f->prog, prog, prog->total_len);
	free(prog);
	f->workspace = palloc_aligned16(xpu_cpu_workspace_size(f->prog));
	f->n_cols = n_cols;
	f->cols = palloc0(sizeof(XpuColumnData) * Max(f->n_cols, 1));
	f->recheck = ExecInitQual(engine, &ss->ps);
	ss->ps.qual = ExecInitQual(rest, &ss->ps);
	return f;
}

/*
 * engine_filter_batch: run the program over a record batch of nrows rows
 * whose columns (those engine_filter_begin was given, in that order) are
 * arrays[0 .. n_cols - 1].
 */
static void
engine_filter_batch(ArrowScanFilter *f, const ArrowArray *const *arrays, int64 nrows)
{
	XpuChunk	chunk;
	XpuResult	res;
	XpuError	err;

	if (nrows > f->mask_cap)
	{
		/* not the caller's context: the executor may run us in a short one */
		if (f->mask)
			pfree(f->mask);
		f->mask = MemoryContextAlloc(f->cxt, nrows);
		f->mask_cap = nrows;
	}
	for (int i = 0; i < f->n_cols; i++)
	{
		/* dictionary-encoded text too (xpu_dict.h): no aggregation here */
		xpu_column_bind(&f->cols[i], arrays[i], NULL, -1);
		f->cols[i].offset = 0;
	}
	memset(&chunk, 0, sizeof(chunk));	/* no join tables (XpuChunk.joins) */
	chunk.nrows = nrows;
	chunk.ncols = f->n_cols;
	chunk.n_parts = 0;
	chunk.parts = NULL;
	chunk.cols = f->cols;
	res.nrows = nrows;
	res.mask = f->mask;
	res.values = NULL;
	res.nulls = NULL;
	memset(&err, 0, sizeof(err));
	xpu_cpu_exec(f->prog, &chunk, &res, f->workspace, &err);
	switch ((XpuErrorCode) err.code)
	{
		case XPU_OK:
			f->fallback = false;
			break;
		case XPU_ERR_FALLBACK:
		case XPU_ERR_OUT_OF_RANGE:
		case XPU_ERR_DIVISION_BY_ZERO:
		case XPU_ERR_DATETIME_OUT_OF_RANGE:
		case XPU_ERR_SUBSTRING:
			/* PostgreSQL evaluates this batch: its own error, at its row */
			f->fallback = true;
			f->fallback_batches++;
			break;
		default:
			/* a bug in pg_warp (internal, invalid argument, bad program) */
			pg_warp_report_xpu_error(&err);
			break;
	}
}

/*
 * engine_filter_row: may row of the current batch pass (false: skip it
 * without building its tuple)?
 */
static bool
engine_filter_row(const ArrowScanFilter *f, int64 row)
{
	return f->fallback || f->mask[row];
}

/*
 * engine_filter_recheck: for a row of a fallback batch, evaluate the
 * filter's quals on its tuple in PostgreSQL; true otherwise.
 */
static bool
engine_filter_recheck(ArrowScanFilter *f, ExprContext *econtext, TupleTableSlot *slot)
{
	if (!f->fallback)
		return true;
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = slot;
	return ExecQual(f->recheck, econtext);
}

/*
 * engine_explain_program: EXPLAIN VERBOSE's "Engine Program", the program in
 * readable form, one instruction per line.
 */
void
engine_explain_program(const XpuProgram *prog, ExplainState *es)
{
	char	   *text = codegen_disassemble(prog);
	List	   *lines = NIL;
	char	   *line;

	for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
		lines = lappend(lines, line);
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyList("Engine Program", lines, es);
	else
	{
		ListCell   *lc;

		appendStringInfoSpaces(es->str, es->indent * 2);
		appendStringInfoString(es->str, "Engine Program:\n");
		foreach(lc, lines)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "  %s\n", (char *) lfirst(lc));
		}
	}
}

/*
 * engine_filter_explain: EXPLAIN lines of a scan's engine filter f
 * ("Engine", "Engine Filter", VERBOSE: the program, ANALYZE: batches that
 * PostgreSQL evaluated).  Without f (EXPLAIN alone) the quals are compiled
 * here over cols, as engine_filter_begin would.
 */
static void
engine_filter_explain(ScanState *ss, Index scanrelid, const ArrowScanColumn *cols,
					  int n_cols, const ArrowScanFilter *f, ExplainState *es)
{
	EngineColumns fc = {cols, n_cols, true};
	CodegenScan scan = {scanrelid, engine_column_hook, &fc};
	List	   *quals,
			   *rest;
	XpuProgram *own = NULL;
	const XpuProgram *prog;
	List	   *ctx;

	if (f != NULL)
		quals = f->quals, prog = f->prog;
	else
	{
		quals = engine_filter_split(ss->ps.plan->qual, scanrelid, &fc, &rest);
		if (quals == NIL || !engine_every_row(&scan, &fc) ||
			(own = codegen_qual_program(&scan, quals)) == NULL)
			return;
		prog = own;
	}
	ctx = set_deparse_context_plan(es->deparse_cxt, ss->ps.plan, NIL);
	explain_why_show(es, RelationGetRelid(ss->ss_currentRelation));
	ExplainPropertyText("Engine", "CPU", es);
	ExplainPropertyText("Engine Filter",
						deparse_expression((Node *) make_ands_explicit(quals), ctx,
										   list_length(es->rtable) > 1, false), es);
	if (es->verbose)
		engine_explain_program(prog, es);
	free(own);
	if (es->analyze && f != NULL &&
		(f->fallback_batches > 0 || es->format != EXPLAIN_FORMAT_TEXT))
		ExplainPropertyInteger("Engine Fallback Batches", NULL, f->fallback_batches, es);
}

/* the filter as arrow_fdw calls it (fdw_scan.h) */
static const ArrowScanFilterHook engine_filter_hook = {
	.begin = engine_filter_begin,
	.batch = engine_filter_batch,
	.row = engine_filter_row,
	.recheck = engine_filter_recheck,
	.explain = engine_filter_explain,
};

/*
 * pg_warp_filter_init: at _PG_init, installs the engine's filter into
 * arrow_fdw's scans
 */
void
pg_warp_filter_init(void)
{
	arrow_fdw_set_scan_filter(&engine_filter_hook);
}

/*
 * engine_order_quals: quals (plain exprs, one security level) in the order the
 * executor evaluates them: the planner's order_qual_clauses, cheapest first,
 * a stable sort.  Every engine operator compiles its quals in this order, so
 * that an error (division by zero, overflow) is raised for exactly the rows
 * PostgreSQL's own plan would raise it for, and the prefix GpuScan takes
 * here is the one the plan's clauses give gs_plan_path.
 */
List *
engine_order_quals(PlannerInfo *root, List *quals)
{
	int			n = list_length(quals);
	Node	  **items = palloc(sizeof(Node *) * Max(n, 1));
	Cost	   *costs = palloc(sizeof(Cost) * Max(n, 1));
	List	   *result = NIL;

	for (int i = 0; i < n; i++)
	{
		QualCost	qc;
		Node	   *item = list_nth(quals, i);
		Cost		cost;
		int			j;

		cost_qual_eval_node(&qc, item, root);
		cost = qc.per_tuple;
		for (j = i; j > 0 && costs[j - 1] > cost; j--)
		{
			items[j] = items[j - 1];
			costs[j] = costs[j - 1];
		}
		items[j] = item;
		costs[j] = cost;
	}
	for (int i = 0; i < n; i++)
		result = lappend(result, items[i]);
	return result;
}
