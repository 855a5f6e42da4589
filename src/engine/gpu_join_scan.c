/*-------------------------------------------------------------------------
 *
 * gpu_join_scan.c
 *		GpuJoin as a plan node: a query that joins an outer (fact) table
 *		with dimension tables and returns the joined rows, without grouping
 *		(`SELECT lo.x, d.y FROM lineorder lo JOIN date d ON ... WHERE ...`),
 *		runs as one engine pass: the scan of the outer Arrow table, its
 *		quals, every join depth and the projection of the output columns,
 *		whose rows come back through GpuScan's row path.
 *
 * Planning.  The joins are GpuJoin's (gpu_join.c: gj_plan_input, its depth
 * rules, gj_plan_payload); the node's outputs are the join relation's
 * target (Vars of any depth, the expressions above them PostgreSQL's
 * projection or the node's), compiled by codegen_join_program as its PROJ
 * stage.  The path is offered on the join relation the join search returns
 * (join_search_hook, after PostgreSQL's search): GpuJoin's fallback child
 * is PostgreSQL's cheapest plan of that same relation, which the node runs
 * instead where an inner table cannot be built (too large, a value the
 * engine does not hold) or the plan's program no longer fits the files; a
 * path added from set_join_pathlist_hook would meet the relation before
 * PostgreSQL's own paths for it were all there.  Its cost: the inner plans
 * (PostgreSQL's costs) and building their tables, the outer table's reading
 * (arrow_fdw's cost without its conversion of every row), the engine's
 * cost per outer row and depth, and PostgreSQL's cost per returned row, so
 * that a hash join wins where the outer table is small.  Grouped queries
 * are GpuPreAgg's (the join, scan and partial aggregation in one pass): no
 * GpuJoin is offered under them.
 *
 * Execution: gpuscan.c (GsState, the GpuJoin EngineOps): the inner tables
 * are built and loaded at the first row (gj_exec_load), the SCAN_RUN
 * requests carry their join ids, and the service returns the program's
 * outputs of the passing rows (service/scan.c, a projection run).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/geqo.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/spccache.h"
#include "utils/rel.h"
#include "access/table.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/engine.h"
#include "engine/executor.h"
#include "engine/gpu_join.h"
#include "engine/gpu_join_scan.h"
#include "engine/heap_source.h"
#include "engine/shippable.h"

static join_search_hook_type prev_join_search_hook = NULL;

/*
 * gjs_output_type: may an output of PostgreSQL type typid, held by the
 * engine as type, come back from a projection run (service/scan.c,
 * out_layout) and be made a Datum (gpuscan.c)?
 */
bool
gjs_output_type(Oid typid, XpuType type)
{
	switch (typid)
	{
		case BOOLOID: return type == XPU_T_BOOL;
		case INT2OID: return type == XPU_T_INT2;
		case INT4OID: return type == XPU_T_INT4;
		case INT8OID: return type == XPU_T_INT8;
		case FLOAT4OID: return type == XPU_T_FLOAT4;
		case FLOAT8OID: return type == XPU_T_FLOAT8;
		case NUMERICOID: return type == XPU_T_NUMERIC;
		case DATEOID: return type == XPU_T_DATE;
		case TIMESTAMPOID: return type == XPU_T_TIMESTAMP;
		case TIMESTAMPTZOID: return type == XPU_T_TIMESTAMPTZ;
		case TEXTOID: case VARCHAROID: return type == XPU_T_TEXT;
		default: return false;
	}
}

/* what gjs_plan found: the path's custom_private (gjs_plan_path reads it) */
typedef struct GjsInfo
{
	GjPlan	   *gp;
	List	   *quals;			/* the outer table's, in the executor's order */
	List	   *attnos;			/* the chunk columns */
	List	   *exprs;			/* the outputs: the join relation's target */
	Node	   *program;		/* engine_plan_program */
	bool		heap;			/* the outer table is a heap table */
} GjsInfo;

/*
 * gjs_plan_heap: gjs_plan's part for an outer heap table (range table index
 * relid): the service's heap scan (GpuScan's) passes the tuples that meet
 * the quals and every depth, and returns the tuples themselves, not
 * computed columns, so the node's outputs must be columns of that table;
 * the program (no outputs) reads the chunk columns the quals and the
 * depths' outer keys and quals read
 */
static const char *
gjs_plan_heap(PlannerInfo *root, GjsInfo *gi, Oid table, Index relid)
{
	Relation	r;
	CodegenScan *scan;
	XpuProgram *prog;
	ListCell   *lc;

	if (!heap_source_plannable(table))
		return "the outer heap table is one the engine does not read";
	foreach(lc, gi->exprs)
	{
		Var		   *v = lfirst(lc);

		if (!IsA(v, Var) || v->varno != relid || v->varattno <= 0 || v->varlevelsup != 0)
			return "the query reads columns of the inner relations above a join whose outer "
				"table is a heap table (GpuJoin returns that table's tuples)";
	}
	r = table_open(table, NoLock);
	scan = gs_heap_codegen(r, relid, list_concat(list_copy(gi->quals), gj_outer_exprs(gi->gp)),
						   &gi->attnos);
	prog = codegen_join_program(scan, gi->quals, gj_codegen_joins(gi->gp), NIL);
	table_close(r, NoLock);
	if (prog == NULL)
	{
		explain_why_codegen(root, relid, "GpuJoin", NULL);
		return "";
	}
	if (gi->attnos == NIL)
	{
		free(prog);
		return "the joins read no column of the outer table";
	}
	gi->program = engine_plan_program(prog, NULL);
	free(prog);
	return NULL;
}

/* may a GpuJoin scan read a heap table (pg_warp.enable_gpuscan_heap) */
static bool
gjs_heap_ok(void)
{
	return pg_warp_enable_gpuscan_heap;
}

/*
 * gjs_plan: the engine's plan of join relation rel (gi), or why not (NULL
 * with gi set)
 */
static const char *
gjs_plan(PlannerInfo *root, RelOptInfo *rel, GjsInfo *gi)
{
	const char *why;
	RelOptInfo *outer;
	RangeTblEntry *rte;
	EngineColumns *ec;
	CodegenScan scan;
	XpuProgram *prog;
	ListCell   *lc;

	if ((gi->gp = gj_plan_input(root, rel, gjs_heap_ok, &why)) == NULL)
		return why ? why : "no join";
	/* the unmatched inner rows come after the pass, which the scan's sink does not take */
	if (gj_plan_outer_join(gi->gp))
		return "a right or full join (its unmatched inner rows come after the pass: only "
			"GpuPreAgg takes them)";
	/* a row of the outer table becomes at most one row of the node's */
	if (gj_plan_expands(gi->gp))
		return "the join keys of a depth are not known to be unique (a probe of every "
			"match returns several rows for one outer row: only GpuPreAgg folds them)";
	outer = gi->gp->outer;
	rte = planner_rt_fetch(outer->relid, root);
	gi->heap = rte->relkind != RELKIND_FOREIGN_TABLE;
	if (!gi->heap && !arrow_fdw_is_table(rte->relid))
		return "the outer relation is not an Arrow table";
	foreach(lc, outer->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (ri->pseudoconstant || ri->security_level > 0)
			return "a clause of the outer table that is constant for the query, or a "
				"security barrier";
		gi->quals = lappend(gi->quals, ri->clause);
	}
	gi->quals = engine_order_quals(root, gi->quals);
	gi->exprs = rel->reltarget->exprs;
	if ((why = gj_plan_payload(gi->gp, gi->exprs)) != NULL)
		return why;
	if (gi->heap)
		return gjs_plan_heap(root, gi, rte->relid, outer->relid);
	if (!gs_add_attnos(gj_outer_exprs(gi->gp), outer->relid, &gi->attnos) || gi->attnos == NIL)
		return "the joins read a system column or the whole row of the outer table, or none "
			"of its columns";
	if (!gs_add_attnos(gi->exprs, outer->relid, &gi->attnos) ||
		!gs_add_attnos(gi->quals, outer->relid, &gi->attnos))
		return "the join reads a system column or the whole row of the outer table";
	ec = gs_columns(rte->relid, gi->attnos);
	for (int i = 0; i < ec->n_cols; i++)
		if ((why = ship_scan_column(rte->relid, &ec->cols[i])) != NULL)
			return why;
	scan = (CodegenScan) {outer->relid, engine_column_hook, ec};
	if (!engine_every_row(&scan, ec))
		return "a column of the outer table whose conversion PostgreSQL checks "
			"(a char(n) or a domain)";
	prog = codegen_join_program(&scan, gi->quals, gj_codegen_joins(gi->gp), gi->exprs);
	if (prog == NULL)
	{
		explain_why_codegen(root, outer->relid, "GpuJoin", NULL);
		return "";
	}
	foreach(lc, gi->exprs)
	{
		int			k = foreach_current_index(lc);
		const XpuReg *reg = &XPU_REGS(prog)[XPU_OUTS(prog)[k]];

		if (!gjs_output_type(exprType(lfirst(lc)), (XpuType) reg->type))
		{
			free(prog);
			return psprintf("an output of type %s (GpuJoin returns integers, floats, "
							"numeric, bool, date, timestamp and text)",
							format_type_be(exprType(lfirst(lc))));
		}
	}
	gi->program = engine_plan_program(prog, ec);
	free(prog);
	return NULL;
}

/*
 * gjs_copy_path: a copy of path (the fallback child), so that add_path's
 * freeing of a dominated path leaves the child alone; NULL for a kind of
 * path not known here
 */
static Path *
gjs_copy_path(Path *path)
{
	size_t		size;
	Path	   *copy;

	switch (nodeTag(path))
	{
		case T_NestPath: size = sizeof(NestPath); break;
		case T_MergePath: size = sizeof(MergePath); break;
		case T_HashPath: size = sizeof(HashPath); break;
		case T_GatherPath: size = sizeof(GatherPath); break;
		case T_GatherMergePath: size = sizeof(GatherMergePath); break;
		case T_ProjectionPath: size = sizeof(ProjectionPath); break;
		case T_SortPath: size = sizeof(SortPath); break;
		case T_IncrementalSortPath: size = sizeof(IncrementalSortPath); break;
		case T_MaterialPath: size = sizeof(MaterialPath); break;
		default: return NULL;
	}
	copy = palloc(size);
	memcpy(copy, path, size);
	return copy;
}

/*
 * gjs_add_partial_path: the parallel GpuJoin of the scan/join relation rel
 * beside serial (the serial path, costed): each participant claims record
 * batches (or heap blocks) of the outer table from the DSM, as GpuScan's,
 * and builds the inner tables itself, from the inner relations' cheapest
 * plans (no Gather under a Gather); its fallback child is PostgreSQL's
 * cheapest partial path of rel, which every participant runs where the
 * inner tables cannot be built (the same in each).  PostgreSQL puts the
 * Gather above it (rel is the topmost scan/join relation).
 */
static void
gjs_add_partial_path(PlannerInfo *root, RelOptInfo *rel, GjsInfo *gi, CustomPath *serial)
{
	double		serial_inner_cost = gj_inner_cost(gi->gp);
	CustomPath *cp;
	Path	   *fallback,
			   *outer;
	double		divisor,
				startup;
	ListCell   *lc;

	if (!rel->consider_parallel || rel->partial_pathlist == NIL ||
		!bms_equal(rel->relids, root->all_baserels) ||
		gi->gp->outer->partial_pathlist == NIL)
		return;
	outer = linitial(gi->gp->outer->partial_pathlist);
	fallback = gjs_copy_path(linitial(rel->partial_pathlist));
	if (fallback == NULL || !fallback->parallel_safe || outer->parallel_workers < 1)
		return;
	/* the inner relations' plans a worker may run (no Gather) */
	if (!gj_plan_parallel(gi->gp))
		return;
	cp = makeNode(CustomPath);
	memcpy(cp, serial, sizeof(CustomPath));
	cp->custom_paths = list_make1(fallback);
	foreach(lc, gi->gp->depths)
		cp->custom_paths = lappend(cp->custom_paths, ((GjDepth *) lfirst(lc))->inner_path);
	startup = serial->path.startup_cost - serial_inner_cost + gj_inner_cost(gi->gp);
	divisor = engine_parallel_divisor(outer->parallel_workers);
	cp->path.parallel_aware = true;
	cp->path.parallel_safe = true;
	cp->path.parallel_workers = outer->parallel_workers;
	cp->path.rows = clamp_row_est(rel->rows / divisor);
	/* each participant builds every inner table; the rest is shared out */
	cp->path.startup_cost = startup;
	cp->path.total_cost = startup +
		(serial->path.total_cost - serial->path.startup_cost) / divisor;
	add_partial_path(rel, &cp->path);
}

/*
 * gjs_add_path: GpuJoin's path of join relation rel (the join search's
 * result), beside PostgreSQL's, whose cheapest is its fallback child
 */
static void
gjs_add_path(PlannerInfo *root, RelOptInfo *rel)
{
	Query	   *parse = root->parse;
	GjsInfo		gi = {0};
	const char *why;
	CustomPath *cp;
	Path	   *fallback,
			   *plain;
	QualCost	qall;
	double		rows_in,
				io;
	int			n_depths;
	ListCell   *lc;

	if (!pg_warp_enabled || !pg_warp_enable_gpujoin || !pg_warp_preloaded ||
		rel == NULL || rel->reloptkind != RELOPT_JOINREL || rel->cheapest_total_path == NULL)
		return;
	/* a grouping is GpuPreAgg's, joins and all; rows a statement locks or changes PostgreSQL's */
	if (parse->hasAggs || parse->groupClause != NIL || parse->groupingSets != NIL ||
		root->hasHavingQual || parse->resultRelation != 0 || root->rowMarks != NIL)
		return;
	if ((why = gjs_plan(root, rel, &gi)) != NULL)
	{
		/* a join of no table the engine reads is no news */
		if (*why != '\0' && strstr(why, "no joined relation is") == NULL)
			explain_why_note("GpuJoin: %s", why);
		return;
	}
	if ((fallback = gjs_copy_path(rel->cheapest_total_path)) == NULL ||
		fallback->param_info != NULL)
		return;
	/* arrow_fdw's path, or where GpuScan's won over it, GpuScan's */
	plain = gs_cheapest_path(gi.gp->outer->pathlist, gi.heap ? T_SeqScan : T_ForeignScan);
	if (plain == NULL && !gi.heap &&
		(plain = gs_cheapest_path(gi.gp->outer->pathlist, T_CustomScan)) == NULL)
		return;
	n_depths = list_length(gi.gp->depths);
	cp = makeNode(CustomPath);
	cp->path.pathtype = T_CustomScan;
	cp->path.parent = rel;
	cp->path.pathtarget = rel->reltarget;
	cp->path.rows = rel->rows;
	cp->path.parallel_safe = false;	/* its inner plans may be Gathers */
	cp->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cp->methods = gpuscan_join_path_methods();
	cp->custom_paths = list_make1(fallback);
	foreach(lc, gi.gp->depths)
		cp->custom_paths = lappend(cp->custom_paths, ((GjDepth *) lfirst(lc))->inner_path);
	cp->custom_private = list_make5(makeInteger((int) gi.gp->outer->relid), gi.quals,
									gi.attnos, gi.exprs, gj_private(gi.gp));
	cp->custom_private = lappend(cp->custom_private, makeInteger(gi.heap ? 1 : 0));
	cp->custom_private = lappend(cp->custom_private, gi.program);

	/*
	 * Costs: the inner plans and their tables before the first row; the
	 * outer table's reading as arrow_fdw's path costs it, less its per-row
	 * conversion and quals (the engine's instead, per depth too); then the
	 * returned rows, each made a tuple by the node.
	 */
	cost_qual_eval(&qall, gi.quals, root);
	rows_in = Max(gi.gp->outer->tuples, 1.0);
	if (gi.heap)
	{
		double		spc_seq_page_cost;

		/* a heap table's pages read, each tuple's visibility decided, by the backend */
		get_tablespace_page_costs(gi.gp->outer->reltablespace, NULL, &spc_seq_page_cost);
		io = spc_seq_page_cost * gi.gp->outer->pages + cpu_operator_cost * rows_in;
	}
	else if (plain != NULL && plain->pathtype == T_ForeignScan)
		io = plain->total_cost - plain->startup_cost -
			(cpu_tuple_cost + qall.per_tuple + cpu_operator_cost * list_length(gi.attnos)) *
			rows_in - gi.gp->outer->reltarget->cost.per_tuple * gi.gp->outer->rows;
	else
		io = plain->total_cost - plain->startup_cost - rows_in * pg_warp_engine_row_cost -
			plain->rows * cpu_tuple_cost;
	cp->path.startup_cost = pg_warp_engine_startup_cost + gj_inner_cost(gi.gp);
	cp->path.total_cost = cp->path.startup_cost + Max(io, 0.0) +
		rows_in * pg_warp_engine_row_cost * (1 + n_depths) +
		rel->rows * (cpu_tuple_cost + cpu_operator_cost * list_length(gi.exprs)) +
		rel->reltarget->cost.per_tuple * rel->rows;
	explain_why_offered(rel, "GpuJoin", cp->path.total_cost);
	gjs_add_partial_path(root, rel, &gi, cp);
	add_path(rel, &cp->path);
	set_cheapest(rel);
}

/* join_search_hook: PostgreSQL's (or the previous hook's) search, then GpuJoin's path */
static RelOptInfo *
gjs_join_search(PlannerInfo *root, int levels_needed, List *initial_rels)
{
	RelOptInfo *rel;

	if (prev_join_search_hook)
		rel = prev_join_search_hook(root, levels_needed, initial_rels);
	else if (enable_geqo && levels_needed >= geqo_threshold)
		rel = geqo(root, levels_needed, initial_rels);
	else
		rel = standard_join_search(root, levels_needed, initial_rels);
	gjs_add_path(root, rel);
	return rel;
}

/*
 * gjs_plan_path: the CustomScan of a GpuJoin path: no scan relation; its
 * scan tuple (custom_scan_tlist) is the outputs, then (resjunk, so that
 * set_plan_references adjusts them) the outer table's quals (EXPLAIN, and
 * the Arrow source's skipping of record batches), each depth's clauses
 * (EXPLAIN) and an anchor Var of the outer table.  custom_private: the
 * number of the outer table's quals, whether it is a heap table, the chunk
 * columns' attnos, the number of outputs, the depths (gj_private) and the
 * program.  custom_plans: the fallback, then the depths' inner plans
 * returning their keys and payload (gj_inner_plans).
 */
Plan *
gjs_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cs = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;
	List	   *quals = lsecond(priv);
	List	   *exprs = lfourth(priv);
	List	   *depths = list_nth(priv, 4);
	List	   *scan_tlist = NIL;
	AttrNumber	resno = 1;
	ListCell   *lc;

	Index		relid = (Index) intVal(linitial(priv));
	Oid			typid,
				collid;
	int32		typmod;

	foreach(lc, exprs)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++, NULL, false));
	foreach(lc, quals)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++, NULL, true));
	foreach(lc, depths)
	{
		ListCell   *lq;

		foreach(lq, lfourth((List *) lfirst(lc)))
			scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lq), resno++, NULL, true));
	}
	/*
	 * an anchor: a Var of the outer table's first chunk column, through
	 * which the executor learns the table's range table index after
	 * set_plan_references (which offsets the Vars of custom_scan_tlist, and
	 * nothing else the node keeps)
	 */
	get_atttypetypmodcoll(planner_rt_fetch(relid, root)->relid,
						  (AttrNumber) linitial_int(lthird(priv)), &typid, &typmod, &collid);
	scan_tlist = lappend(scan_tlist,
						 makeTargetEntry((Expr *) makeVar(relid,
														  (AttrNumber) linitial_int(lthird(priv)),
														  typid, typmod, collid, 0),
										 resno++, NULL, true));
	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = extract_actual_clauses(clauses, false);
	cs->scan.scanrelid = 0;
	cs->custom_scan_tlist = scan_tlist;
	cs->custom_plans = lcons(linitial(custom_plans),
							 gj_inner_plans(list_copy_tail(custom_plans, 1), depths, &depths));
	cs->custom_private = list_make5(makeInteger(list_length(quals)), list_nth(priv, 5),
									lthird(priv), makeInteger(list_length(exprs)), depths);
	cs->custom_private = lappend(cs->custom_private, list_nth(priv, 6));
	cs->methods = gpuscan_join_scan_methods();
	return &cs->scan.plan;
}

/* pg_warp_gpu_join_scan_init: the planner hook (from _PG_init) */
void
pg_warp_gpu_join_scan_init(void)
{
	prev_join_search_hook = join_search_hook;
	join_search_hook = gjs_join_search;
}
