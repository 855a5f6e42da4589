/*-------------------------------------------------------------------------
 *
 * gpuscan.c
 *		GpuScan: a scan of an Arrow foreign table (or of a heap table,
 *		below) whose filter the warp service evaluates.  The planner hook offers a CustomScan path beside
 *		arrow_fdw's own when a prefix of the table's quals compiles to an
 *		xPU program; at run time the node asks the service (SCAN_RUN) for a
 *		few record batches at a time, and the service reads the files,
 *		filters them on its CPU engine's threads and returns only the
 *		passing rows of only the columns the query needs, in column form.
 *		The node turns those into tuples with arrow_fdw's own conversion,
 *		and PostgreSQL evaluates the quals that did not compile (the node's
 *		ordinary qual) and the target list.
 *
 * Which quals: as for arrow_fdw's row filter (filter.c), the longest prefix
 * of the quals, in the order the executor would evaluate them, whose
 * conjuncts all compile; the others stay in PostgreSQL.  Errors: a batch in
 * which the program raised an error or FALLBACK comes back whole, flagged
 * for recheck, and the node evaluates the engine's quals on each of its
 * rows with ExecQual, so that PostgreSQL raises its own error at its own
 * row.
 *
 * The program is compiled when the plan is made and carried in it
 * (executor.c); a plan whose program no longer fits the table's files or
 * the session's time zone sends every row of the batches to PostgreSQL's
 * evaluation of the engine's quals instead.
 *
 * Parallel: under a Gather the processes share a counter of record batches
 * in the DSM; each claims runs of batches and asks the service for those.
 *
 * The node runs through the engine's one executor (engine_scan.c: the
 * source, the program, the run, the claims and the DSM); this file has
 * GpuScan's planning and its EngineOps (gs_ops): how it reads its plan,
 * streams the service's replies into rows, rescans and explains itself.
 *
 * Heap tables.  The node reads the table's pages itself, as GpuPreAgg does
 * (heap_source.c: each page's visible tuples decided for the query's
 * snapshot, the pages copied into a ring of chunks in shared memory,
 * block ranges claimed from a counter in the DSM under a Gather), and the
 * service evaluates the engine's quals over the visible tuples of each
 * chunk and answers with a bitmap of the ones that pass (a HEAP_RUN with
 * WARP_HEAP_SCAN).  The node then returns those tuples straight from its
 * copy of the pages, as heap tuples (system columns included), and only
 * then refills the chunk.  PostgreSQL projects the target list; only the
 * columns of the engine's quals are decoded by the service.  A chunk the
 * engine could not filter comes back flagged for recheck; without a ring
 * (no memory for it) every chunk is filtered by PostgreSQL.  The table
 * must not be the query's result relation or locked FOR UPDATE/SHARE.
 * The service decodes and filters the chunks on a GPU (service/gpu_heap.c)
 * or its CPU threads; on the CPU engine this was measured slower than
 * PostgreSQL's own scan, so the path is offered only with
 * pg_warp.enable_gpuscan_heap (off by default).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/parallel.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/prep.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "utils/spccache.h"
#include "parser/parsetree.h"
#include "port/atomics.h"
#include "storage/predicate.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
#include "utils/builtins.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/engine.h"
#include "engine/engine_scan.h"
#include "engine/executor.h"
#include "engine/gpu_join.h"
#include "engine/gpu_join_scan.h"
#include "engine/heap_source.h"
#include "engine/shippable.h"

/* pg_warp.enable_gpuscan */
bool		pg_warp_enable_gpuscan = true;

/* pg_warp.enable_gpuscan_heap */
bool		pg_warp_enable_gpuscan_heap = false;

static set_rel_pathlist_hook_type prev_rel_pathlist_hook = NULL;
static const EngineOps gs_ops;
static const EngineOps gjs_ops;

/* ---------------- planning ---------------- */

/* the attnos (> 0) of relid that exprs use, appended to *attnos; false: a
 * system column or a whole-row reference */
bool
gs_add_attnos(List *exprs, Index relid, List **attnos)
{
	Bitmapset  *attrs = NULL;
	int			x = -1;

	pull_varattnos((Node *) exprs, relid, &attrs);
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	a = x + FirstLowInvalidHeapAttributeNumber;

		if (a <= 0)
			return false;
		*attnos = list_append_unique_int(*attnos, a);
	}
	return true;
}

/* EngineColumns over the columns attnos (IntList) of relation relid */
EngineColumns *
gs_columns(Oid relid, List *attnos)
{
	Relation	rel = table_open(relid, NoLock);
	EngineColumns *ec = palloc0(sizeof(EngineColumns));
	AttrNumber *a = palloc(sizeof(AttrNumber) * Max(list_length(attnos), 1));
	ListCell   *lc;

	foreach(lc, attnos)
		a[foreach_current_index(lc)] = (AttrNumber) lfirst_int(lc);
	ec->n_cols = list_length(attnos);
	ec->cols = arrow_fdw_columns(rel, a, ec->n_cols);
	table_close(rel, NoLock);
	return ec;
}

/* the cheapest unparameterized path of pathlist that is a `type` plan, or NULL */
Path *
gs_cheapest_path(List *pathlist, NodeTag type)
{
	Path	   *best = NULL;
	ListCell   *lc;

	foreach(lc, pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->pathtype == type && p->param_info == NULL &&
			(best == NULL || p->total_cost < best->total_cost))
			best = p;
	}
	return best;
}

/*
 * gs_make_path: a GpuScan path costed against arrow_fdw's path `plain`: the
 * same reading of the files, the engine's cost per row read instead of
 * PostgreSQL's conversion and quals, PostgreSQL's per-row costs for the
 * rows that pass the engine's quals; `workers` > 0: a partial path.  For
 * a heap table (`plain` a sequential scan) the reading is the scan's pages
 * and a visibility test per tuple.
 */
static CustomPath *
gs_make_path(PlannerInfo *root, RelOptInfo *rel, Path *plain, List *engine,
			 List *rest, int n_ref, int workers)
{
	CustomPath *cp = makeNode(CustomPath);
	QualCost	qall,
				qrest;
	double		rows_in = Max(rel->tuples, 1.0);
	double		rows_e,
				io,
				out;
	List	   *all = list_concat(list_copy(engine), rest);

	cost_qual_eval(&qall, (List *) all, root);
	cost_qual_eval(&qrest, rest, root);
	rows_e = clamp_row_est(rows_in * clauselist_selectivity(root, engine, rel->relid,
															JOIN_INNER, NULL));
	if (IsA(plain, ForeignPath))
		io = plain->total_cost - plain->startup_cost -
			(cpu_tuple_cost + qall.per_tuple + cpu_operator_cost * n_ref) * rows_in -
			rel->reltarget->cost.per_tuple * rel->rows;
	else
	{
		double		spc_seq_page_cost;

		/*
		 * A heap table: its pages read as a sequential scan reads them
		 * (not divided among the participants), each tuple's visibility
		 * decided and its page copied by the backend
		 */
		get_tablespace_page_costs(rel->reltablespace, NULL, &spc_seq_page_cost);
		io = spc_seq_page_cost * rel->pages +
			cpu_operator_cost * rows_in / (workers > 0 ? engine_parallel_divisor(workers) : 1.0);
	}
	out = (cpu_tuple_cost + cpu_operator_cost * n_ref + qrest.per_tuple) * rows_e +
		rel->reltarget->cost.per_tuple * rel->rows;
	if (workers > 0)
		out /= engine_parallel_divisor(workers);
	cp->path.pathtype = T_CustomScan;
	cp->path.parent = rel;
	cp->path.pathtarget = rel->reltarget;
	cp->path.rows = workers > 0 ? clamp_row_est(rel->rows / engine_parallel_divisor(workers)) :
		rel->rows;
	cp->path.startup_cost = pg_warp_engine_startup_cost + qrest.startup +
		rel->reltarget->cost.startup;
	cp->path.total_cost = cp->path.startup_cost + Max(io, 0.0) +
		rows_in * pg_warp_engine_row_cost + out;
	cp->path.parallel_aware = workers > 0;
	cp->path.parallel_safe = rel->consider_parallel;
	cp->path.parallel_workers = workers;
	cp->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cp->methods = &gs_ops.path;
	return cp;
}

/*
 * gs_heap_codegen: a CodegenScan over the user columns of heap table rel
 * (range table index relid) that quals read; their attnos in *attnos
 */
CodegenScan *
gs_heap_codegen(Relation rel, Index relid, List *quals, List **attnos)
{
	CodegenScan *scan = palloc0(sizeof(CodegenScan));
	Bitmapset  *attrs = NULL;
	AttrNumber *a;
	int			x = -1;

	*attnos = NIL;
	pull_varattnos((Node *) quals, relid, &attrs);
	while ((x = bms_next_member(attrs, x)) >= 0)
		if (x + FirstLowInvalidHeapAttributeNumber > 0)
			*attnos = lappend_int(*attnos, x + FirstLowInvalidHeapAttributeNumber);
	a = palloc(sizeof(AttrNumber) * Max(list_length(*attnos), 1));
	for (int i = 0; i < list_length(*attnos); i++)
		a[i] = (AttrNumber) list_nth_int(*attnos, i);
	scan->scanrelid = relid;
	heap_source_codegen_scan(scan, rel, a, list_length(*attnos));
	return scan;
}

/*
 * gs_heap_split: the engine's quals of heap table rel (a prefix of quals,
 * *rest the others) and in *attnos the attributes they read (the chunk
 * columns, in this order)
 */
static List *
gs_heap_split(Relation rel, Index relid, List *quals, List **rest, List **attnos)
{
	List	   *all;
	List	   *engine = engine_filter_split_scan(quals, gs_heap_codegen(rel, relid, quals, &all),
												  rest);

	*attnos = NIL;
	if (engine != NIL && !gs_add_attnos(engine, relid, attnos))
		elog(ERROR, "GpuScan: the engine's quals read a system column");
	return engine;
}

/*
 * gs_heap_pathlist: GpuScan (and a partial one beside a partial sequential
 * scan) for heap table rel with quals (in the executor's order), when a
 * prefix of them compiles over its columns
 */
static void
gs_heap_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte,
				 List *quals)
{
	Path	   *plain = gs_cheapest_path(rel->pathlist, T_SeqScan);
	List	   *engine,
			   *rest,
			   *attnos;
	Relation	r;
	XpuProgram *prog = NULL;

	/* the rows an UPDATE, DELETE or FOR UPDATE locks are PostgreSQL's to scan */
	if (!pg_warp_enable_gpuscan_heap || plain == NULL || !heap_source_plannable(rte->relid) ||
		root->parse->resultRelation == (int) rti ||
		get_plan_rowmark(root->rowMarks, rti) != NULL)
		return;
	r = table_open(rte->relid, NoLock);
	engine = gs_heap_split(r, rel->relid, quals, &rest, &attnos);
	if (rest != NIL)
		explain_why_codegen(root, rel->relid, "GpuScan", linitial(rest));
	if (engine != NIL)
		prog = codegen_qual_program(gs_heap_codegen(r, rel->relid, engine, &attnos), engine);
	table_close(r, NoLock);
	if (prog == NULL)
		return;
	free(prog);
	add_path(rel, (Path *) gs_make_path(root, rel, plain, engine, rest, 0, 0));
	plain = gs_cheapest_path(rel->partial_pathlist, T_SeqScan);
	if (rel->consider_parallel && plain != NULL)
		add_partial_path(rel, (Path *) gs_make_path(root, rel, plain, engine, rest, 0,
													plain->parallel_workers));
}

/*
 * gs_rel_pathlist: set_rel_pathlist_hook; offers GpuScan (and a partial
 * GpuScan when arrow_fdw offers a partial path) for an Arrow table whose
 * quals, or a prefix of them, compile; for a heap table, gs_heap_pathlist.
 */
static void
gs_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	List	   *quals = NIL,
			   *attnos = NIL,
			   *engine,
			   *rest;
	EngineColumns *ec;
	CodegenScan scan;
	XpuProgram *prog;
	Path	   *plain;
	ListCell   *lc;

	if (prev_rel_pathlist_hook)
		prev_rel_pathlist_hook(root, rel, rti, rte);

	if (!pg_warp_enabled || !pg_warp_enable_gpuscan || !pg_warp_preloaded ||
		rel->reloptkind != RELOPT_BASEREL || rte->rtekind != RTE_RELATION ||
		rte->tablesample != NULL || rte->securityQuals != NIL)
		return;
	foreach(lc, rel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (ri->security_level > 0)
			return;
		if (!ri->pseudoconstant)
			quals = lappend(quals, ri->clause);
	}
	quals = engine_order_quals(root, quals);
	if (quals == NIL)
		return;
	if (rte->relkind != RELKIND_FOREIGN_TABLE)
	{
		gs_heap_pathlist(root, rel, rti, rte, quals);
		return;
	}
	if (!arrow_fdw_is_table(rte->relid) ||
		(plain = gs_cheapest_path(rel->pathlist, T_ForeignScan)) == NULL)
		return;
	if (!gs_add_attnos(rel->reltarget->exprs, rel->relid, &attnos) ||
		!gs_add_attnos(quals, rel->relid, &attnos))
		return;
	ec = gs_columns(rte->relid, attnos);
	for (int i = 0; i < ec->n_cols; i++)
	{
		const char *why = ship_scan_column(rte->relid, &ec->cols[i]);

		if (why != NULL)
		{
			explain_why_rel(root, rel->relid, "GpuScan", why);
			return;
		}
	}
	engine = engine_filter_split(quals, rel->relid, ec, &rest);
	if (rest != NIL)
		explain_why_codegen(root, rel->relid, "GpuScan", linitial(rest));
	if (engine == NIL)
		return;
	/* rows the engine rejects are never converted: see fdw_scan.h */
	scan = (CodegenScan) {rel->relid, engine_column_hook, ec};
	if (!engine_every_row(&scan, ec) || (prog = codegen_qual_program(&scan, engine)) == NULL)
		return;
	free(prog);
	add_path(rel, (Path *) gs_make_path(root, rel, plain, engine, rest, ec->n_cols, 0));
	plain = gs_cheapest_path(rel->partial_pathlist, T_ForeignScan);
	if (rel->consider_parallel && plain != NULL)
		add_partial_path(rel, (Path *) gs_make_path(root, rel, plain, engine, rest,
													ec->n_cols, plain->parallel_workers));
}

/*
 * gs_plan_path: the CustomScan of a GpuScan path: a scan of the Arrow table
 * (scanrelid) whose scan tuple is the table's row; custom_exprs holds the
 * engine's quals, plan.qual the others (clauses come in the executor's
 * order).  custom_private: the chunk columns' attnos (those returned
 * first), how many are returned, whether the table is a heap table (its
 * chunk columns: what the engine's quals read; no column is returned, the
 * tuples are) and the engine's program (engine_plan_program).
 */
static List *gs_plan_arrow(CustomScan *cs, RelOptInfo *rel, Oid table, EngineColumns *ec,
						   List *quals, List **rest);

static Plan *
gs_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			 List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cs = makeNode(CustomScan);
	RangeTblEntry *rte = planner_rt_fetch(rel->relid, root);
	List	   *quals = extract_actual_clauses(clauses, false);
	List	   *attnos = NIL,
			   *engine,
			   *rest;
	EngineColumns *ec;

	if (rte->relkind != RELKIND_FOREIGN_TABLE)
	{
		Relation	r = table_open(rte->relid, NoLock);
		XpuProgram *prog;

		engine = gs_heap_split(r, rel->relid, quals, &rest, &attnos);
		prog = codegen_qual_program(gs_heap_codegen(r, rel->relid, engine, &attnos), engine);
		table_close(r, NoLock);
		cs->custom_private = list_make4(attnos, makeInteger(0), makeInteger(1),
										engine_plan_program(prog, NULL));
		free(prog);
	}
	else
	{
		if (!gs_add_attnos(rel->reltarget->exprs, rel->relid, &attnos) ||
			!gs_add_attnos(quals, rel->relid, &attnos))
			elog(ERROR, "GpuScan: a column the path accepted is now refused");
		ec = gs_columns(rte->relid, attnos);
		engine = gs_plan_arrow(cs, rel, rte->relid, ec, quals, &rest);
	}
	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = rest;
	cs->scan.scanrelid = rel->relid;
	cs->custom_exprs = engine;
	cs->custom_plans = custom_plans;
	cs->methods = &gs_ops.scan;
	return &cs->scan.plan;
}

/* gs_plan_path's split of an Arrow table's quals; custom_private set */
static List *
gs_plan_arrow(CustomScan *cs, RelOptInfo *rel, Oid table, EngineColumns *ec, List *quals,
			  List **rest)
{
	List	   *outs = NIL,
			   *engine;
	int			n_outs;
	EngineColumns *chunk;
	CodegenScan scan;
	XpuProgram *prog = NULL;

	engine = engine_filter_split(quals, rel->relid, ec, rest);
	(void) gs_add_attnos(rel->reltarget->exprs, rel->relid, &outs);
	(void) gs_add_attnos(*rest, rel->relid, &outs);
	n_outs = list_length(outs);
	(void) gs_add_attnos(engine, rel->relid, &outs);
	/* the program over the chunk columns, in the order the service sends them */
	chunk = gs_columns(table, outs);
	scan = (CodegenScan) {rel->relid, engine_column_hook, chunk};
	if (engine_every_row(&scan, chunk))
		prog = codegen_qual_program(&scan, engine);
	cs->custom_private = list_make4(outs, makeInteger(n_outs), makeInteger(0),
									engine_plan_program(prog, chunk));
	free(prog);
	return engine;
}

/* ---------------- execution ---------------- */

/* the counters of EXPLAIN ANALYZE, as GsShared.c holds them */
enum
{
	GC_ROWS_IN, GC_ROWS_PASSED, GC_BATCHES, GC_RECHECK, GC_BYTES_READ,
	GC_BYTES_SENT, GC_IO_US, GC_EXEC_US, GC_REQUESTS, GC_CPU_BATCHES,
	GC_BYTES_MAPPED, GC_BYTES_TO_PIN, GC_BYTES_DIRECT,
	GC_DIRECT_MODES,			/* bit 1 << WARP_CUFILE_* of each run that read with cuFile */
	GC_N
};

/*
 * GpuScan's part of a parallel node's DSM (engine_scan.h: the claims are
 * the common part's): the counters, summed over the processes
 */
typedef struct GsShared
{
	pg_atomic_uint64 c[GC_N];
	GjShared	joins;			/* GpuJoin: the tables the leader built */
	GjRows		join_rows;		/* GpuJoin: the rows into and out of each
								 * depth (EngineShared.mutex) */
} GsShared;

typedef struct GsState
{
	EngineScanState es;			/* the table, program, run, claims (engine_scan.h) */
	List	   *engine_quals;
	ExprState  *recheck;
	bool		always_recheck; /* the plan's program does not fit: PostgreSQL's */
	int			n_cols;
	int			n_outs;
	AttrNumber *attnos;			/* chunk column -> attno */
	/* the run (es.run.active: a SCAN_RUN's replies are coming) */
	char	   *msg;			/* the current SCAN_RESULT */
	uint32		n_rows;
	uint32		cur_row;
	int			block_cols;
	bool		block_recheck;
	ArrowArray *arrays;			/* [n_cols] of the current block */
	MemoryContext row_cxt;
	/* counters */
	uint64		c[GC_N];
	uint64		wall_us;
	uint32		threads;
	uint32		engine;
	/* a heap table's scan (es.heap: claims, ring, counters) */
	bool		heap;
	bool		hstarted;		/* the run was started */
	bool		hdone;			/* and has returned its last chunk */
	HeapScanChunk hc;			/* the chunk whose tuples are returned */
	uint32		hpage;			/* the page of hc returned now */
	int			hbit;			/* the next line pointer index to try */
	HeapTupleData htup;			/* the tuple in the scan slot */
	/*
	 * GpuJoin (gjs_ops, gpu_join_scan.c): the scan tuple is the program's
	 * outputs (n_outs of them), which a projection run returns; the join
	 * depths' inner tables are loaded at the first row; where one cannot
	 * be built, or the program no longer fits, the fallback child runs
	 */
	bool		join;
	GjInner    *inner;
	int			n_depths;
	List	   *join_clauses;	/* per depth, for EXPLAIN */
	GjRows		join_rows;		/* the rows into and out of each depth */
	Oid		   *out_types;		/* [n_outs] */
	int		   *out_scales;		/* [n_outs]: numeric outputs' */
	TupleTableSlot *hslot;		/* an outer heap table's tuples (outputs: its columns) */
	AttrNumber *out_attnos;		/* [n_outs]: the outer heap table's columns returned */
	int			max_attno;
	bool		heap_recheck;	/* gs_heap_next met a tuple of a chunk to recheck */
	bool		loaded;			/* the inner tables were tried */
	bool		builds_done;	/* their Gathers let go (gj_exec_shutdown) */
	uint64		returned;		/* rows the engine's run returned */
	bool		fallback;
	const char *fallback_why;
} GsState;

/*
 * gs_program: the plan's program (engine_scan_program) for the chunk
 * columns now, or, where it no longer fits, a program that passes every
 * row, which PostgreSQL then filters
 */
static void
gs_program(GsState *st, CustomScan *cs)
{
	if (engine_scan_program(&st->es, cs) == NULL)
	{
		st->always_recheck = true;
		st->es.prog = engine_pass_all_program();
	}
}

/*
 * gs_heap_begin: gs_begin of a heap table's scan: the engine's program over
 * the chunk columns; a scan slot of heap tuples (the tuples come straight
 * from the copies of the pages), with the projection and qual built anew
 * for it
 */
static void
gs_heap_begin(GsState *st, CustomScan *cs, EState *estate)
{
	ScanState  *ss = &st->es.css.ss;
	Relation	rel = ss->ss_currentRelation;

	gs_program(st, cs);
	st->es.heap = heap_agg_prepare(rel, st->attnos, st->n_cols);
	st->es.heap->scan = true;
	ExecInitScanTupleSlot(estate, ss, RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecAssignScanProjectionInfoWithVarno(ss, cs->scan.scanrelid);
	ss->ps.qual = ExecInitQual(cs->scan.plan.qual, &ss->ps);
	st->recheck = ExecInitQual(st->engine_quals, &ss->ps);
}

/*
 * gjs_begin: gs_begin of a GpuJoin (gjs_plan_path's plan): the outer table's
 * source, the program, the depths over their inner plans (custom_ps after
 * the fallback), and what EXPLAIN shows from the scan tuple's resjunk part
 */
static void
gjs_begin(GsState *st, CustomScan *cs, EState *estate, int eflags)
{
	List	   *priv = cs->custom_private;
	List	   *attnos = lthird(priv);
	List	   *join_private = list_nth(priv, 4);
	int			te;
	ListCell   *lc;

	st->join = true;
	st->n_outs = intVal(lfourth(priv));
	st->n_cols = list_length(attnos);
	st->attnos = palloc(sizeof(AttrNumber) * Max(st->n_cols, 1));
	foreach(lc, attnos)
		st->attnos[foreach_current_index(lc)] = (AttrNumber) lfirst_int(lc);
	te = st->n_outs;
	for (int i = 0; i < intVal(linitial(priv)); i++)
		st->engine_quals = lappend(st->engine_quals,
								   list_nth_node(TargetEntry, cs->custom_scan_tlist, te++)->expr);
	foreach(lc, join_private)
	{
		List	   *clauses = NIL;

		for (int i = 0; i < list_length(lfourth((List *) lfirst(lc))); i++)
			clauses = lappend(clauses,
							  list_nth_node(TargetEntry, cs->custom_scan_tlist, te++)->expr);
		st->join_clauses = lappend(st->join_clauses, clauses);
	}
	/* the outer table: its anchor Var's (gjs_plan_path), the scan tuple's last */
	st->heap = intVal(lsecond(priv)) != 0;
	engine_scan_open(&st->es, ((Var *) llast_node(TargetEntry, cs->custom_scan_tlist)->expr)->varno,
					 eflags, st->heap ? NIL : st->engine_quals, st->attnos, st->n_cols);
	if (engine_scan_program(&st->es, cs) == NULL)
	{
		st->fallback = true;
		st->fallback_why = st->es.stale_why;
	}
	if (st->heap)
	{
		/* the run's tuples in a slot of their own; the outputs are their columns */
		st->es.heap = heap_agg_prepare(st->es.rel, st->attnos, st->n_cols);
		st->es.heap->scan = true;
		st->hslot = ExecAllocTableSlot(&estate->es_tupleTable, RelationGetDescr(st->es.rel),
									   &TTSOpsHeapTuple);
		st->recheck = ExecInitQual(st->engine_quals, &st->es.css.ss.ps);
		st->out_attnos = palloc(sizeof(AttrNumber) * Max(st->n_outs, 1));
		for (int k = 0; k < st->n_outs; k++)
		{
			st->out_attnos[k] = castNode(Var, list_nth_node(TargetEntry, cs->custom_scan_tlist,
															  k)->expr)->varattno;
			st->max_attno = Max(st->max_attno, st->out_attnos[k]);
		}
	}
	st->inner = gj_exec_init(join_private, list_copy_tail(st->es.css.custom_ps, 1),
							 &st->n_depths);
	st->out_types = palloc(sizeof(Oid) * Max(st->n_outs, 1));
	st->out_scales = palloc0(sizeof(int) * Max(st->n_outs, 1));
	for (int k = 0; k < st->n_outs; k++)
	{
		st->out_types[k] = exprType((Node *) list_nth_node(TargetEntry, cs->custom_scan_tlist,
															k)->expr);
		if (st->es.prog != NULL)
			st->out_scales[k] = XPU_REGS(st->es.prog)[XPU_OUTS(st->es.prog)[k]].scale;
	}
	/* a block has the outputs, or (flagged for recheck) the chunk columns */
	st->arrays = palloc0(sizeof(ArrowArray) * Max(Max(st->n_cols, st->n_outs), 1));
	st->row_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuJoin rows",
										ALLOCSET_DEFAULT_SIZES);
}

/* EngineOps.begin: the plan's columns, the table's source and the program */
static void
gs_begin(EngineScanState *node, CustomScan *cs, EState *estate, int eflags)
{
	GsState    *st = (GsState *) node;
	List	   *attnos = linitial(cs->custom_private);
	ListCell   *lc;

	if (node->ops == &gjs_ops)
	{
		gjs_begin(st, cs, estate, eflags);
		return;
	}

	st->heap = intVal(lthird(cs->custom_private)) != 0;
	st->engine_quals = cs->custom_exprs;
	st->n_cols = list_length(attnos);
	st->n_outs = intVal(lsecond(cs->custom_private));
	st->attnos = palloc(sizeof(AttrNumber) * Max(st->n_cols, 1));
	foreach(lc, attnos)
		st->attnos[foreach_current_index(lc)] = (AttrNumber) lfirst_int(lc);
	if (st->heap)
	{
		engine_scan_open(node, cs->scan.scanrelid, eflags, NIL, st->attnos, st->n_cols);
		gs_heap_begin(st, cs, estate);
		return;
	}
	engine_scan_open(node, cs->scan.scanrelid, eflags,
					 list_concat(list_copy(st->engine_quals), cs->scan.plan.qual),
					 st->attnos, st->n_cols);
	gs_program(st, cs);
	if (st->always_recheck)
		st->n_outs = st->n_cols;
	st->recheck = ExecInitQual(st->engine_quals, &node->css.ss.ps);
	st->arrays = palloc0(sizeof(ArrowArray) * Max(st->n_cols, 1));
	st->row_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuScan rows",
										ALLOCSET_DEFAULT_SIZES);
}

/* ---------------- requests ---------------- */

/* a request must fit one message of the protocol (engine_request_end) */
static void
gs_check_size(StringInfo buf)
{
	if (!engine_request_end(buf))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("GpuScan request of %d bytes is larger than the pg_warp protocol allows",
						buf->len),
				 errhint("Set pg_warp.enable_gpuscan to off for this query.")));
}

/* the SCAN_RUN payload for work items [w0, w1) */
static StringInfo
gs_request(GsState *st, int64 w0, int64 w1)
{
	StringInfo	buf = makeStringInfo();
	WarpScanRequest req = {0};

	req.n_cols = st->n_cols;
	req.n_outs = st->join ? 0 : st->n_outs;	/* GpuJoin's: the program's outputs */
	req.prog_len = st->es.prog->total_len;
	req.engine = (uint32) pg_warp_engine;
	req.max_buffer_size = (int64) pg_warp_arrow_max_buffer_size * 1024;
	req.n_files = engine_scan_work_files(&st->es, w0, w1);
	req.n_joins = (uint32) st->n_depths;
	engine_put(buf, &req, sizeof(req), 8);
	engine_put(buf, st->es.prog, st->es.prog->total_len, 16);
	for (int d = 0; d < st->n_depths; d++)
		engine_put(buf, &st->inner[d].join_id, sizeof(uint64), 8);
	engine_scan_put_work(&st->es, buf, w0, w1, st->n_cols);
	gs_check_size(buf);
	return buf;
}

/* sends SCAN_RUN for the next claimed batches; false when none is left */
static bool
gs_start_request(GsState *st)
{
	int64		w0,
				w1;
	StringInfo	req;

	if (!engine_scan_claim(&st->es, &w0, &w1))
		return false;
	req = gs_request(st, w0, w1);
	engine_scan_send(&st->es, WARP_MSG_SCAN_RUN, req);
	pfree(req->data);
	pfree(req);
	/* a GpuJoin's builds' workers exit while the service runs its first batches */
	if (st->join && st->loaded && !st->builds_done && st->es.shared == NULL)
	{
		st->builds_done = true;
		gj_exec_shutdown(st->inner, st->n_depths);
	}
	return true;
}

/* adds n to counter i, the node's and the DSM's */
static void
gs_count(GsState *st, int i, uint64 n)
{
	GsShared   *part = engine_scan_part(&st->es);

	if (i == GC_DIRECT_MODES)
	{
		st->c[i] |= n;
		if (part)
			pg_atomic_fetch_or_u64(&part->c[i], n);
		return;
	}
	st->c[i] += n;
	if (part)
		pg_atomic_fetch_add_u64(&part->c[i], n);
}

/*
 * GpuJoin: adds a run's rows into and out of each depth (its last reply's)
 * to the node's and the DSM's (gpu_join_rows.c)
 */
static void
gs_join_rows(GsState *st, uint32 depths, const uint64 *in, const uint64 *out)
{
	GsShared   *part = engine_scan_part(&st->es);

	if (!st->join || st->n_depths == 0)
		return;
	gj_rows_add(&st->join_rows, st->n_depths, depths, in, out);
	if (part == NULL)
		return;
	SpinLockAcquire(&st->es.shared->mutex);
	gj_rows_add(&part->join_rows, st->n_depths, depths, in, out);
	SpinLockRelease(&st->es.shared->mutex);
}

/* adds the last message's counters to the node's (and the DSM's) */
static void
gs_add_counters(GsState *st, const WarpScanResult *h)
{
	uint64		v[GC_N] = {h->rows_in, h->rows_passed, h->batches, h->recheck_batches,
		h->bytes_read, h->bytes_sent, h->io_us, h->exec_us, 1, h->cpu_batches,
		h->bytes_mapped, h->bytes_to_pin, h->bytes_direct,
	h->bytes_direct > 0 ? UINT64CONST(1) << h->direct_mode : 0};

	gs_join_rows(st, h->join_depths, h->join_in, h->join_out);
	for (int i = 0; i < GC_N; i++)
		gs_count(st, i, v[i]);
	st->wall_us += h->wall_us;
	st->threads = Max(st->threads, h->threads);
	st->engine = h->engine;
}

/* sets st->arrays from the block of the current message (len bytes) */
static void
gs_parse_block(GsState *st, uint32 len, const WarpScanResult *h)
{
	st->block_recheck = (h->flags & WARP_SCAN_RECHECK) != 0;
	st->block_cols = (int) h->n_cols;
	if (h->n_cols != (uint32) (st->block_recheck ? st->n_cols : st->n_outs))
		elog(ERROR, "GpuScan: a SCAN_RESULT from the pg_warp service has %u columns", h->n_cols);
	engine_rows_block(st->msg, len, h, st->arrays, "GpuScan");
}

/*
 * gs_next_block: receives the next block of rows into st (true), or false
 * when the scan has no more.
 */
static bool
gs_next_block(GsState *st)
{
	for (;;)
	{
		uint32		len;
		WarpScanResult h;

		if (st->msg)
			pfree(st->msg);
		st->msg = NULL;
		st->n_rows = st->cur_row = 0;
		if (!st->es.run.active && !gs_start_request(st))
			return false;
		st->msg = service_run_next(st->es.run.conn, WARP_MSG_SCAN_RESULT, &len);
		if (len < sizeof(WarpScanResult))
			elog(ERROR, "GpuScan: short SCAN_RESULT (%u bytes) from the pg_warp service", len);
		memcpy(&h, st->msg, sizeof(h));
		if (h.flags & WARP_SCAN_LAST)
		{
			gs_add_counters(st, &h);
			st->es.run.active = false;
			continue;
		}
		gs_parse_block(st, len, &h);
		st->n_rows = h.n_rows;
		return true;
	}
}

/* ---------------- heap tables ---------------- */

/* adds a heap run's counters (h's, and its last reply's) to the node's and the DSM's */
static void
gs_heap_counters(GsState *st, const WarpAggResult *last)
{
	HeapAggRun *h = st->es.heap;
	uint64		v[GC_N] = {h->tuples_shipped, 0, h->chunks, 0,
		h->pages_shipped * BLCKSZ, 0, INSTR_TIME_GET_MICROSEC(h->read_time), last->exec_us,
	st->es.run.conn >= 0};

	gs_join_rows(st, last->join_depths, last->join_in, last->join_out);
	/* rows passed, chunks rechecked and bytes sent are counted chunk by chunk */
	for (int i = 0; i < GC_N; i++)
		if (i != GC_ROWS_PASSED && i != GC_RECHECK && i != GC_BYTES_SENT)
			gs_count(st, i, v[i]);
	st->wall_us += last->wall_us;
	st->threads = Max(st->threads, last->threads);
	st->engine = st->es.run.conn >= 0 ? last->engine : 0;
}

/* starts the heap run: the HEAP_RUN request (WARP_HEAP_SCAN) and the ring */
static void
gs_heap_start(GsState *st)
{
	EState	   *estate = st->es.css.ss.ps.state;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	StringInfo	buf = makeStringInfo();
	WarpAggRequest req = {0};

	if (st->es.shared)
		st->es.heap->shared = &st->es.shared->heap;
	req.prog_len = st->es.prog->total_len;
	req.engine = (uint32) pg_warp_engine;
	req.n_joins = (uint32) st->n_depths;	/* GpuJoin's */
	engine_put(buf, &req, sizeof(req), 8);
	engine_put(buf, st->es.prog, st->es.prog->total_len, 16);
	for (int d = 0; d < st->n_depths; d++)
		engine_put(buf, &st->inner[d].join_id, sizeof(uint64), 8);
	heap_agg_put_request(st->es.heap, buf);
	gs_check_size(buf);
	st->es.heap->ssi = IsolationIsSerializable();
	if (st->es.heap->ssi)
		PredicateLockRelation(st->es.heap->rel, estate->es_snapshot);
	st->hstarted = st->es.ran = true;
	heap_scan_begin(st->es.heap, estate->es_snapshot, buf->data, (uint32) buf->len,
					&st->es.run.conn);
	MemoryContextSwitchTo(old);
}

/* the next filtered chunk of the heap run into st->hc; false at the end */
static bool
gs_heap_chunk(GsState *st)
{
	EState	   *estate = st->es.css.ss.ps.state;
	MemoryContext old;
	WarpAggResult last;
	bool		more;

	if (!st->hstarted)
		gs_heap_start(st);
	if (st->hdone)
		return false;
	old = MemoryContextSwitchTo(estate->es_query_cxt);
	more = heap_scan_next(st->es.heap, st->es.run.conn, &st->hc, &last);
	MemoryContextSwitchTo(old);
	st->hpage = 0;
	st->hbit = 0;
	if (!more)
	{
		st->hdone = true;
		gs_heap_counters(st, &last);
		heap_scan_end(st->es.heap);
		engine_run_close(&st->es.run);
		return false;
	}
	if (st->hc.recheck)
		gs_count(st, GC_RECHECK, 1);
	else
		gs_count(st, GC_ROWS_PASSED, st->hc.n_passed);
	if (st->es.run.conn >= 0)
		gs_count(st, GC_BYTES_SENT, sizeof(WarpHeapPass) +
				 (uint64) st->hc.n_pages * XPU_HEAP_VIS_BYTES);
	return true;
}

/*
 * gs_heap_next: the next tuple of a heap table's scan that passed the
 * engine's quals (or, in a chunk to recheck, PostgreSQL's evaluation of
 * them) into the scan slot; an empty slot at the end
 */
static TupleTableSlot *
gs_heap_next(GsState *st, TupleTableSlot *slot)
{
	ExprContext *econtext = st->es.css.ss.ps.ps_ExprContext;
	Oid			relid = RelationGetRelid(st->es.rel);

	for (;;)
	{
		while (st->hpage < st->hc.n_pages)
		{
			const uint8 *pass = st->hc.pass + (Size) st->hpage * XPU_HEAP_VIS_BYTES;
			const uint8 *vis = st->hc.vis + (Size) st->hpage * XPU_HEAP_VIS_BYTES;
			Page		page = (Page) (st->hc.pages + (Size) st->hpage * BLCKSZ);

			while (st->hbit < XPU_HEAP_VIS_BYTES * 8)
			{
				int			k = st->hbit++;
				uint8		bits = pass[k >> 3] & vis[k >> 3];
				OffsetNumber off = (OffsetNumber) (k + 1);
				ItemId		lp;

				if (bits == 0)
				{
					st->hbit = (k | 7) + 1;		/* the rest of this byte */
					continue;
				}
				if (!(bits & (1 << (k & 7))))
					continue;
				/* the page was checked when read: a visible line pointer is normal */
				if (off > PageGetMaxOffsetNumber(page) ||
					!ItemIdIsNormal(lp = PageGetItemId(page, off)))
					elog(ERROR, "GpuScan: line pointer %u of a shipped page is not a tuple", off);
				st->htup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
				st->htup.t_len = ItemIdGetLength(lp);
				st->htup.t_tableOid = relid;
				ItemPointerSet(&st->htup.t_self, st->hc.blocks[st->hpage], off);
				ExecStoreHeapTuple(&st->htup, slot, false);
				if (st->join && (st->hc.recheck || st->always_recheck))
				{
					st->heap_recheck = true;	/* GpuJoin decides (gjs_heap_next) */
					return slot;
				}
				if (st->hc.recheck || st->always_recheck)
				{
					/* PostgreSQL evaluates the engine's quals: its own errors */
					ResetExprContext(econtext);
					econtext->ecxt_scantuple = slot;
					if (!ExecQual(st->recheck, econtext))
						continue;
				}
				return slot;
			}
			st->hpage++;
			st->hbit = 0;
		}
		CHECK_FOR_INTERRUPTS();
		if (!gs_heap_chunk(st))
			return ExecClearTuple(slot);
	}
}

/*
 * gs_row_ready: slot cleared, and a row of the service's blocks current
 * (st->cur_row of the block in st), the next block received where the
 * current one is done; false at the end of the scan
 */
static bool
gs_row_ready(GsState *st, TupleTableSlot *slot)
{
	ExecClearTuple(slot);
	MemoryContextReset(st->row_cxt);
	while (st->cur_row >= st->n_rows)
		if (!gs_next_block(st))
			return false;
	return true;
}

/* ---------------- GpuJoin ---------------- */

/* is bit i of an Arrow bitmap set */
static inline bool
gjs_bit(const uint8 *bits, uint32 i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/*
 * gjs_value: output k of row `row` of the current block as a Datum of its
 * type (service/scan.c's out_layout: C values, numeric's 128-bit fixed
 * point, text as VAR32)
 */
static Datum
gjs_value(GsState *st, int k, uint32 row, bool *isnull)
{
	const ArrowArray *a = &st->arrays[k];
	union
	{
		int16		i2;
		int32		i4;
		int64		i8;
		float4		f4;
		float8		f8;
		__int128	n;
	}			v;

	*isnull = a->validity != NULL && !gjs_bit(a->validity, row);
	if (*isnull)
		return (Datum) 0;
#define GJS_FIXED(w)	memcpy(&v, a->values + (Size) row * (w), (w))
	switch (st->out_types[k])
	{
		case BOOLOID:
			return BoolGetDatum(gjs_bit(a->values, row));
		case INT2OID:
			GJS_FIXED(2);
			return Int16GetDatum(v.i2);
		case INT4OID:
		case DATEOID:
			GJS_FIXED(4);
			return Int32GetDatum(v.i4);
		case FLOAT4OID:
			GJS_FIXED(4);
			return Float4GetDatum(v.f4);
		case FLOAT8OID:
			GJS_FIXED(8);
			return Float8GetDatum(v.f8);
		case NUMERICOID:
			GJS_FIXED(16);
			return codegen_numeric_datum(v.n, st->out_scales[k]);
		case TEXTOID:
		case VARCHAROID:
			{
				const int32 *off = a->offsets;

				return PointerGetDatum(cstring_to_text_with_len((const char *) a->data + off[row],
																off[row + 1] - off[row]));
			}
		default:
			/* int8, timestamp, timestamptz */
			GJS_FIXED(8);
			return Int64GetDatum(v.i8);
	}
#undef GJS_FIXED
}

/* the fallback child's next row as the scan tuple (its target is the outputs) */
static TupleTableSlot *
gjs_fallback_next(GsState *st, TupleTableSlot *slot)
{
	TupleTableSlot *in = ExecProcNode(linitial(st->es.css.custom_ps));

	ExecClearTuple(slot);
	if (TupIsNull(in))
		return slot;
	slot_getallattrs(in);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	for (int k = 0; k < st->n_outs; k++)
	{
		slot->tts_values[k] = in->tts_values[k];
		slot->tts_isnull[k] = in->tts_isnull[k];
	}
	return ExecStoreVirtualTuple(slot);
}

/*
 * gjs_recheck_error: a block the engine could not evaluate (flagged for
 * recheck: every chunk column of every row of its record batch) after rows
 * were returned: PostgreSQL evaluates the outer table's quals over its rows,
 * raising its own error where the engine met one there; else the node
 * raises its own
 */
static void
gjs_recheck_error(GsState *st)
{
	ScanState  *ss = &st->es.css.ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	TupleTableSlot *slot = MakeSingleTupleTableSlot(RelationGetDescr(st->es.rel),
													&TTSOpsVirtual);
	ExprState  *qual = ExecInitQual(st->engine_quals, &ss->ps);
	int			natts = slot->tts_tupleDescriptor->natts;

	for (uint32 r = 0; r < st->n_rows; r++)
	{
		ExecClearTuple(slot);
		memset(slot->tts_isnull, true, sizeof(bool) * natts);
		MemoryContextReset(st->row_cxt);
		for (int j = 0; j < st->block_cols; j++)
		{
			int			a = st->attnos[j] - 1;
			MemoryContext old = MemoryContextSwitchTo(st->row_cxt);

			slot->tts_values[a] = arrow_fdw_engine_value(st->es.src, j, &st->arrays[j], r,
														 &slot->tts_isnull[a]);
			MemoryContextSwitchTo(old);
		}
		ExecStoreVirtualTuple(slot);
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = slot;
		(void) ExecQual(qual, econtext);
	}
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("GpuJoin: the engine could not evaluate the joins of a record batch "
					"(an error, or a value it does not hold exactly)"),
			 errhint("Set pg_warp.enable_gpujoin to off for this query.")));
}

/*
 * gjs_heap_next: gjs_next over an outer heap table: the next tuple the
 * engine passed, its columns as the outputs.  A chunk the engine could not
 * evaluate: the fallback child where nothing was returned yet, else
 * PostgreSQL evaluates the outer table's quals over the tuple (its own
 * error) before the node raises.
 */
static TupleTableSlot *
gjs_heap_next(GsState *st, TupleTableSlot *slot)
{
	TupleTableSlot *h;

	st->heap_recheck = false;
	h = gs_heap_next(st, st->hslot);
	if (st->heap_recheck && st->returned == 0 && !st->es.css.ss.ps.plan->parallel_aware)
	{
		if (st->hstarted)
			heap_scan_end(st->es.heap);
		engine_run_close(&st->es.run);
		st->hstarted = false;
		st->hdone = true;
		st->fallback = true;
		st->fallback_why = "the engine met an error or a value it does not hold exactly";
		return gjs_fallback_next(st, slot);
	}
	if (st->heap_recheck)
	{
		ExprContext *econtext = st->es.css.ss.ps.ps_ExprContext;

		ResetExprContext(econtext);
		econtext->ecxt_scantuple = h;
		(void) ExecQual(st->recheck, econtext);
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("GpuJoin: the engine could not evaluate the joins of a chunk of a heap table "
						"(an error, or a value it does not hold exactly)"),
				 errhint("Set pg_warp.enable_gpujoin to off for this query.")));
	}
	ExecClearTuple(slot);
	if (TupIsNull(h))
		return slot;
	slot_getsomeattrs(h, st->max_attno);
	for (int k = 0; k < st->n_outs; k++)
	{
		slot->tts_values[k] = h->tts_values[st->out_attnos[k] - 1];
		slot->tts_isnull[k] = h->tts_isnull[st->out_attnos[k] - 1];
	}
	st->returned++;
	return ExecStoreVirtualTuple(slot);
}

/*
 * gjs_next: GpuJoin's next joined row into the scan slot: the inner tables
 * loaded first (PostgreSQL runs their plans), then the outputs of the
 * service's blocks; the fallback child's rows where the engine cannot
 */
static TupleTableSlot *
gjs_next(GsState *st, TupleTableSlot *slot)
{
	int			natts = slot->tts_tupleDescriptor->natts;

	if (!st->loaded)
	{
		st->loaded = true;
		/* a parallel node's participants probe the tables its leader built */
		if (!st->fallback &&
			!(st->es.shared != NULL ?
			  gj_shared_take(&((GsShared *) engine_scan_part(&st->es))->joins, st->inner,
							 st->n_depths, &st->fallback_why) :
			  gj_exec_load(st->inner, st->n_depths, st->es.prog, NULL, &st->fallback_why)))
			st->fallback = true;
	}
	if (st->fallback)
		return gjs_fallback_next(st, slot);
	if (st->heap)
		return gjs_heap_next(st, slot);
	for (;;)
	{
		MemoryContext old;

		if (!gs_row_ready(st, slot))
			return slot;
		if (st->block_recheck && st->returned == 0 && !st->es.css.ss.ps.plan->parallel_aware)
		{
			/*
			 * nothing returned yet: PostgreSQL's plan answers, or raises its
			 * error (not under a Gather: the other participants' rows came
			 * from the engine)
			 */
			engine_run_close(&st->es.run);
			st->fallback = true;
			st->fallback_why = "the engine met an error or a value it does not hold exactly";
			return gjs_fallback_next(st, slot);
		}
		if (st->block_recheck)
			gjs_recheck_error(st);
		st->returned++;
		memset(slot->tts_isnull, true, sizeof(bool) * natts);
		old = MemoryContextSwitchTo(st->row_cxt);
		for (int k = 0; k < st->n_outs; k++)
			slot->tts_values[k] = gjs_value(st, k, st->cur_row, &slot->tts_isnull[k]);
		MemoryContextSwitchTo(old);
		st->cur_row++;
		return ExecStoreVirtualTuple(slot);
	}
}

/* the next row into the scan slot, or an empty slot at the end */
static TupleTableSlot *
gs_next(ScanState *ss)
{
	GsState    *st = (GsState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	ExprContext *econtext = ss->ps.ps_ExprContext;
	int			natts = slot->tts_tupleDescriptor->natts;

	if (st->join)
		return gjs_next(st, slot);
	if (st->heap)
		return gs_heap_next(st, slot);
	for (;;)
	{
		MemoryContext old;

		if (!gs_row_ready(st, slot))
			return slot;
		memset(slot->tts_isnull, true, sizeof(bool) * natts);
		old = MemoryContextSwitchTo(st->row_cxt);
		for (int j = 0; j < st->block_cols; j++)
		{
			int			a = st->attnos[j] - 1;

			slot->tts_values[a] = arrow_fdw_engine_value(st->es.src, j, &st->arrays[j],
														 st->cur_row, &slot->tts_isnull[a]);
		}
		MemoryContextSwitchTo(old);
		st->cur_row++;
		ExecStoreVirtualTuple(slot);
		if (st->block_recheck || st->always_recheck)
		{
			/* PostgreSQL evaluates the engine's quals: its own errors */
			ResetExprContext(econtext);
			econtext->ecxt_scantuple = slot;
			if (!ExecQual(st->recheck, econtext))
				continue;
		}
		return slot;
	}
}

/*
 * gs_recheck: EvalPlanQual's test of a tuple substituted for the scan's:
 * the engine's quals (ExecScan checks the others)
 */
static bool
gs_recheck(ScanState *ss, TupleTableSlot *slot)
{
	GsState    *st = (GsState *) ss;
	ExprContext *econtext = ss->ps.ps_ExprContext;

	ResetExprContext(econtext);
	econtext->ecxt_scantuple = slot;
	return ExecQual(st->recheck, econtext);
}

/* EngineOps.exec: the next row that passed every qual, projected */
static TupleTableSlot *
gs_exec(EngineScanState *node)
{
	return ExecScan(&node->css.ss, gs_next, gs_recheck);
}

/* EngineOps.end: a heap table's ring (engine_scan.c closes the run) */
static void
gs_end(EngineScanState *node)
{
	GsState    *st = (GsState *) node;

	if (st->heap && st->hstarted)
		heap_scan_end(st->es.heap);
	if (st->join)
		gj_exec_end(st->inner, st->n_depths);
}

/* EngineOps.rescan */
static void
gs_rescan(EngineScanState *node)
{
	GsState    *st = (GsState *) node;

	/* a run in progress is cancelled by closing its connection */
	if (st->es.run.active || st->heap)
		engine_run_close(&st->es.run);
	if (st->heap)
	{
		if (st->hstarted)
			heap_scan_end(st->es.heap);
		st->hstarted = st->hdone = false;
		memset(&st->hc, 0, sizeof(st->hc));
	}
	engine_scan_rewind(&st->es);
	/* GpuJoin: its inner tables stay loaded; a fallback child starts again */
	if (st->join && st->fallback)
		ExecReScan(linitial(st->es.css.custom_ps));
	st->returned = 0;
	if (st->msg)
		pfree(st->msg);
	st->msg = NULL;
	st->n_rows = st->cur_row = 0;
}

/* ---------------- parallel ---------------- */

/* EngineOps.dsm_size: GsShared */
static Size
gs_dsm_size(EngineScanState *node, int nworkers)
{
	return sizeof(GsShared);
}

/*
 * EngineOps.dsm_init: the counters start at 0 (a rescan's add to them);
 * GpuJoin's leader builds the inner tables for every participant
 * (gj_shared_build)
 */
static void
gs_dsm_init(EngineScanState *node, int nworkers, bool reinit)
{
	GsState    *st = (GsState *) node;
	GsShared   *part = engine_scan_part(node);

	if (st->join && st->n_depths > 0 && !st->fallback)
		(void) gj_shared_build(&part->joins, reinit, st->inner, st->n_depths, st->es.prog,
							   NULL);
	if (reinit)
		return;
	for (int i = 0; i < GC_N; i++)
		pg_atomic_init_u64(&part->c[i], 0);
	memset(&part->join_rows, 0, sizeof(part->join_rows));
}

/* EngineOps.shutdown: the counters of every process, for EXPLAIN */
static void
gs_shutdown(EngineScanState *node)
{
	GsState    *st = (GsState *) node;
	GsShared   *part = engine_scan_part(node);

	for (int i = 0; i < GC_N; i++)
		st->c[i] = pg_atomic_read_u64(&part->c[i]);
	st->join_rows = part->join_rows;
}

/* ---------------- EXPLAIN ---------------- */

/* the names of columns attnos[from .. to - 1] of rel */
static List *
gs_column_names(Relation rel, const AttrNumber *attnos, int from, int to)
{
	List	   *names = NIL;

	for (int i = from; i < to; i++)
		names = lappend(names,
						NameStr(TupleDescAttr(RelationGetDescr(rel), attnos[i] - 1)->attname));
	return names;
}

/*
 * where the plan's program no longer fits (engine_exec_program): why, and
 * that PostgreSQL evaluates the engine's quals
 */
static void
gs_explain_stale(GsState *st, ExplainState *es)
{
	if (st->es.stale_why != NULL)
		ExplainPropertyText("Engine Filter Rechecked by PostgreSQL", st->es.stale_why, es);
}

/* gs_explain of a heap table's scan */
static void
gs_heap_explain(GsState *st, List *ctx, ExplainState *es)
{
	Relation	rel = st->es.rel;

	if (es->analyze && st->es.ran && st->c[GC_REQUESTS] == 0)
		ExplainPropertyText("Engine", "PostgreSQL (no chunk ring)", es);
	else
		engine_explain_engine(es, st->es.ran, st->engine);
	gs_explain_stale(st, es);
	engine_explain_filter(es, st->engine_quals, ctx, list_length(es->rtable) > 1);
	ExplainPropertyList("Columns Filtered", gs_column_names(rel, st->attnos, 0, st->n_cols), es);
	if (es->verbose)
		engine_explain_program(st->es.prog, es);
	heap_agg_explain(st->es.heap, false, es);
	if (!es->analyze)
		return;
	ExplainPropertyInteger("Tuples Read", NULL, (int64) st->c[GC_ROWS_IN], es);
	ExplainPropertyInteger("Tuples Passed by Engine", NULL, (int64) st->c[GC_ROWS_PASSED], es);
	ExplainPropertyInteger("Chunks", NULL, (int64) st->c[GC_BATCHES], es);
	ExplainPropertyInteger("Chunks Rechecked by PostgreSQL", NULL, (int64) st->c[GC_RECHECK], es);
	ExplainPropertyInteger("Bytes Shipped", "bytes", (int64) st->c[GC_BYTES_READ], es);
	ExplainPropertyFloat("Page Read Time", "ms", st->c[GC_IO_US] / 1000.0, 3, es);
	ExplainPropertyFloat("Engine Time", "ms", st->c[GC_EXEC_US] / 1000.0, 3, es);
	if (st->threads > 0)
		ExplainPropertyInteger("Engine Threads", NULL, st->threads, es);
}

/*
 * gs_explain_data_path: how a GPU run's file bytes reached the GPU
 * (engine_explain_data_path), for Arrow sources; a heap source's units
 * copied from registered pages (engine_explain_heap_pinned)
 */
static void
gs_explain_data_path(GsState *st, ExplainState *es)
{
	uint64		modes = st->c[GC_DIRECT_MODES];

	if (st->engine != WARP_ENGINE_GPU)
		return;
	if (st->heap)
	{
		engine_explain_heap_pinned(es, st->c[GC_BYTES_MAPPED], st->c[GC_BYTES_TO_PIN]);
		return;
	}
	engine_explain_data_path(es, st->c[GC_BYTES_READ], -1, st->c[GC_BYTES_MAPPED],
							 st->c[GC_BYTES_TO_PIN], st->c[GC_IO_US],
							 st->c[GC_BYTES_DIRECT],
							 (modes >> WARP_CUFILE_GDS) & 1 ? WARP_CUFILE_GDS :
							 (modes >> WARP_CUFILE_COMPAT) & 1 ? WARP_CUFILE_COMPAT :
							 WARP_CUFILE_NONE);
}

/* gs_explain of a GpuJoin: as GpuScan's, with the join depths and any fallback */
static void
gjs_explain(GsState *st, List *ctx, ExplainState *es)
{
	bool		ran = es->analyze && st->es.ran && !st->fallback;

	if (st->fallback && (st->loaded || st->es.prog == NULL))
	{
		ExplainPropertyText("Engine", "PostgreSQL (fallback)", es);
		ExplainPropertyText("Fallback Reason", st->fallback_why ? st->fallback_why : "?", es);
	}
	else
		engine_explain_engine(es, st->es.ran, st->engine);
	engine_explain_filter(es, st->engine_quals, ctx, true);
	gj_rows_show(st->inner, st->n_depths, &st->join_rows);
	gj_explain(st->inner, st->n_depths, st->join_clauses, ctx,
			   es->analyze && st->loaded && !st->fallback, es);
	ExplainPropertyList("Outer Columns Read",
						gs_column_names(st->es.rel, st->attnos, 0, st->n_cols), es);
	if (st->heap)
		heap_agg_explain(st->es.heap, ran, es);
	else
		engine_explain_source(es, st->es.src);
	if (es->verbose && st->es.prog != NULL)
		engine_explain_program(st->es.prog, es);
	if (!ran)
		return;
	ExplainPropertyInteger("Rows Read", NULL, (int64) st->c[GC_ROWS_IN], es);
	ExplainPropertyInteger("Rows Returned by Engine", NULL, (int64) st->c[GC_ROWS_PASSED], es);
	ExplainPropertyInteger("Batches Read", NULL, (int64) st->c[GC_BATCHES], es);
	ExplainPropertyInteger("Bytes Read", "bytes", (int64) st->c[GC_BYTES_READ], es);
	ExplainPropertyInteger("Bytes Returned", "bytes", (int64) st->c[GC_BYTES_SENT], es);
	ExplainPropertyInteger("Service Requests", NULL, (int64) st->c[GC_REQUESTS], es);
	/* on the GPU: batches whose GPU run raised an error, run on the CPU engine */
	if (st->c[GC_CPU_BATCHES] > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyInteger("Batches Run on the CPU Engine", NULL,
							   (int64) st->c[GC_CPU_BATCHES], es);
	gs_explain_data_path(st, es);
	engine_explain_times(es, st->c[GC_IO_US], st->c[GC_EXEC_US], st->threads);
}

/* EngineOps.explain */
static void
gs_explain(EngineScanState *node, List *ctx, ExplainState *es)
{
	GsState    *st = (GsState *) node;
	Relation	rel = node->rel;
	const char *names[GC_N] = {"Rows Read", "Rows Returned by Engine", "Batches Read",
		"Batches Rechecked by PostgreSQL", "Bytes Read", "Bytes Returned", NULL, NULL,
	"Service Requests"};

	explain_why_show(es, RelationGetRelid(rel));
	if (st->join)
	{
		gjs_explain(st, ctx, es);
		return;
	}
	if (st->heap)
	{
		gs_heap_explain(st, ctx, es);
		return;
	}
	engine_explain_engine(es, st->es.ran, st->engine);
	gs_explain_stale(st, es);
	engine_explain_filter(es, st->engine_quals, ctx, list_length(es->rtable) > 1);
	ExplainPropertyList("Columns Returned", gs_column_names(rel, st->attnos, 0, st->n_outs), es);
	if (st->n_cols > st->n_outs || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyList("Columns Only Filtered",
							gs_column_names(rel, st->attnos, st->n_outs, st->n_cols), es);
	engine_explain_source(es, st->es.src);
	if (es->verbose)
		engine_explain_program(st->es.prog, es);
	if (!es->analyze)
		return;
	for (int i = 0; i < GC_N; i++)
		if (names[i] != NULL)
			ExplainPropertyInteger(names[i], i == GC_BYTES_READ || i == GC_BYTES_SENT ?
								   "bytes" : NULL, (int64) st->c[i], es);
	gs_explain_data_path(st, es);
	engine_explain_times(es, st->c[GC_IO_US], st->c[GC_EXEC_US], st->threads);
}

/* ---------------- registration ---------------- */

static const EngineOps gs_ops = ENGINE_OPS(gs, "GpuScan", GsState);

/* GpuJoin's node (gpu_join_scan.c plans it): GpuScan's executor */
static const EngineOps gjs_ops = ENGINE_OPS_PLAN(gs, gjs_plan_path, "GpuJoin", GsState);

/* GpuJoin's path and plan methods (gpu_join_scan.c) */
const CustomPathMethods *
gpuscan_join_path_methods(void)
{
	return &gjs_ops.path;
}

const CustomScanMethods *
gpuscan_join_scan_methods(void)
{
	return &gjs_ops.scan;
}

/* pg_warp_gpuscan_init: the setting and the planner hook (from _PG_init) */
void
pg_warp_gpuscan_init(void)
{
	DefineCustomBoolVariable("pg_warp.enable_gpuscan",
							 "Lets the planner use GpuScan for filtered scans of Arrow tables.",
							 NULL, &pg_warp_enable_gpuscan, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.enable_gpuscan_heap",
							 "Lets the planner use GpuScan for filtered scans of heap tables.",
							 "Off by default: on the service's CPU engine it is slower than "
							 "PostgreSQL's own scan.",
							 &pg_warp_enable_gpuscan_heap, false,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	engine_scan_register(&gs_ops);
	engine_scan_register(&gjs_ops);
	pg_warp_gpu_join_scan_init();
	prev_rel_pathlist_hook = set_rel_pathlist_hook;
	set_rel_pathlist_hook = gs_rel_pathlist;
}
