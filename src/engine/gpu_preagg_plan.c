/*-------------------------------------------------------------------------
 *
 * gpu_preagg_plan.c
 *		GpuPreAgg's planning: the planner hook (create_upper_paths_hook)
 *		that offers a CustomScan path for the grouping of one Arrow or heap
 *		table, alone or over the tables it joins (gpu_join.c's depths),
 *		where its quals, group keys and aggregates all compile; the partial
 *		paths of PostgreSQL's parallel aggregation over heap tables; their
 *		costs; and the plan (gpa_plan_path), whose custom_private the
 *		executor (gpu_preagg.c) reads.  The planner's settings are defined
 *		here (gpa_plan_init).  What is offloaded, and why its results are
 *		PostgreSQL's own, is said in gpu_preagg.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
#include "utils/typcache.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/engine.h"
#include "engine/engine_scan.h"
#include "engine/executor.h"
#include "engine/shippable.h"
#include "engine/gpu_preagg.h"
#include "engine/gpu_join.h"
#include "engine/heap_source.h"
#include "xpu/xpu_agg.h"

/* settings (gpa_plan_init) */
bool		pg_warp_enable_gpupreagg = true;
int			pg_warp_engine = 0;	/* 0 auto, WARP_ENGINE_CPU, WARP_ENGINE_GPU */
double		pg_warp_engine_startup_cost = 1000.0;
double		pg_warp_engine_row_cost = 0.001;
static int	pg_warp_enable_gpupreagg_heap = 0;	/* GPA_HEAP_* */
static double pg_warp_heap_row_cost = 0.001;

#define GPA_HEAP_AUTO	0		/* where the run goes to a GPU */
#define GPA_HEAP_ON		1
#define GPA_HEAP_OFF	2

static const struct config_enum_entry heap_options[] = {
	{"auto", GPA_HEAP_AUTO, false},
	{"on", GPA_HEAP_ON, false},
	{"off", GPA_HEAP_OFF, false},
	{"true", GPA_HEAP_ON, true},
	{"false", GPA_HEAP_OFF, true},
	{NULL, 0, false}
};

static const struct config_enum_entry engine_options[] = {
	{"auto", 0, false},
	{"cpu", WARP_ENGINE_CPU, false},
	{"gpu", WARP_ENGINE_GPU, false},
	{NULL, 0, false}
};

static create_upper_paths_hook_type prev_upper_paths_hook = NULL;

static const char *gpa_one_node_paths(PlannerInfo *root, RelOptInfo *input_rel,
									  RelOptInfo *output_rel, GroupPathExtraData *gx);

/* ---------------- planning ---------------- */


/*
 * gpa_attnos: the columns (attnos, ascending: the chunk columns) of table
 * relid that exprs use, their number in *n; NULL when exprs use a system
 * column or the whole row
 */
AttrNumber *
gpa_attnos(Index relid, List *exprs, int *n)
{
	Bitmapset  *attrs = NULL;
	AttrNumber *attnos;
	int			x = -1;

	pull_varattnos((Node *) exprs, relid, &attrs);
	attnos = palloc(sizeof(AttrNumber) * Max(bms_num_members(attrs), 1));
	*n = 0;
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	a = x + FirstLowInvalidHeapAttributeNumber;

		if (a <= 0)
			return NULL;
		attnos[(*n)++] = a;
	}
	return attnos;
}

/* a CodegenScan over the columns of the table relid that exprs use */
static CodegenScan *
gpa_codegen_scan(Relation rel, Index relid, List *exprs, AttrNumber **attnos_out,
				 int *n_out)
{
	int			n;
	AttrNumber *attnos = gpa_attnos(relid, exprs, &n);
	EngineColumns *ec = palloc0(sizeof(EngineColumns));
	CodegenScan *scan = palloc0(sizeof(CodegenScan));

	if (attnos == NULL)
		return NULL;
	scan->scanrelid = relid;
	if (rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		heap_source_codegen_scan(scan, rel, attnos, n);
	else
	{
		ec->cols = arrow_fdw_columns(rel, attnos, n);
		ec->n_cols = n;
		ec->dict_ok = true;		/* AGG_RUN: dictionary text runs on the CPU engine */
		scan->column = engine_column_hook;
		scan->column_arg = ec;
		scan->every_row = true;	/* arrow_fdw converts every row's columns */
	}
	*attnos_out = attnos;
	*n_out = n;
	return scan;
}

/* the argument expressions of aggrefs, one per aggregate that has one */
static List *
gpa_agg_args(List *aggrefs)
{
	List	   *args = NIL;
	ListCell   *lc;

	foreach(lc, aggrefs)
	{
		Aggref	   *a = lfirst(lc);

		if (a->args != NIL)
			args = lappend(args, ((TargetEntry *) linitial(a->args))->expr);
	}
	return args;
}

/*
 * gpa_check_keys: the group key expressions of the grouping (in the order of
 * the GROUP BY clause) into *keys, or why one cannot be grouped by the
 * engine exactly as PostgreSQL groups it (ship_group_key)
 */
static const char *
gpa_check_keys(PlannerInfo *root, List **keys)
{
	ListCell   *lc;

	*keys = NIL;
	foreach(lc, root->parse->groupClause)
	{
		SortGroupClause *sgc = lfirst(lc);
		Expr	   *e = (Expr *) get_sortgroupclause_expr(sgc, root->processed_tlist);
		const char *why = ship_group_key(sgc, e);

		if (why != NULL)
			return why;
		*keys = lappend(*keys, e);
	}
	return NULL;
}

/*
 * gpa_dependent_keys: the columns that exprs (the grouping's target and
 * HAVING) read outside aggregates and that no group key is, appended to
 * *keys.  PostgreSQL drops from GROUP BY the columns of a table whose
 * primary key is grouped by (remove_useless_groupby_columns): they are
 * functionally dependent on it, so grouping by them too makes the same
 * groups, and the node's scan tuple then holds them (a dimension's
 * columns under a GpuJoin: GROUP BY c_custkey, c_name).  Why one cannot be
 * a key of the engine's, or NULL.
 */
typedef struct GpaDependent
{
	List	   *keys;			/* the group keys */
	List	   *found;			/* columns read outside them and aggregates */
	bool		placeholder;	/* a PlaceHolderVar outside them */
} GpaDependent;

static bool
gpa_dependent_walker(Node *node, GpaDependent *c)
{
	if (node == NULL || IsA(node, Aggref) || IsA(node, GroupingFunc) ||
		list_member(c->keys, node))
		return false;			/* a key is matched whole; aggregates read rows */
	if (IsA(node, PlaceHolderVar))
	{
		c->placeholder = true;
		return false;
	}
	if (IsA(node, Var))
	{
		if (((Var *) node)->varlevelsup == 0 && !list_member(c->found, node))
			c->found = lappend(c->found, node);
		return false;
	}
	return expression_tree_walker(node, gpa_dependent_walker, c);
}

static const char *
gpa_dependent_keys(List *exprs, List **keys)
{
	GpaDependent c = {*keys, NIL, false};
	ListCell   *lc;

	gpa_dependent_walker((Node *) exprs, &c);
	if (c.placeholder)
		return "the grouping's target reads a placeholder of a subquery";
	foreach(lc, c.found)
	{
		Var		   *v = lfirst(lc);
		SortGroupClause sgc = {.type = T_SortGroupClause};
		const char *why;

		sgc.eqop = lookup_type_cache(v->vartype, TYPECACHE_EQ_OPR)->eq_opr;
		if ((why = ship_group_key(&sgc, (Expr *) v)) != NULL)
			return why;
		*keys = lappend(*keys, v);
	}
	return NULL;
}

/* the engine states (XpuAggDesc) of aggrefs */
static int
gpa_count_states(List *aggrefs)
{
	ListCell   *lc;
	int			n = 0;

	foreach(lc, aggrefs)
		n += gpa_n_states(gpa_agg_info(((Aggref *) lfirst(lc))->aggfnoid));
	return n;
}

/*
 * gpa_partial_target_ok: is every expression of the partial grouping target
 * a group key or an aggregate (the scan tuple holds nothing else)
 */
static bool
gpa_partial_target_ok(List *exprs, GpaPlanInfo *pi)
{
	ListCell   *lc;

	foreach(lc, exprs)
		if (!IsA(lfirst(lc), Aggref) && !list_member(pi->keys, lfirst(lc)))
			return false;
	return true;
}

/*
 * gpa_plan_info: whether the grouping of input_rel into output_rel can be
 * offloaded, and what it consists of; NULL if not, with *why saying why
 * (NULL: a grouping no engine path is made for, as no aggregate at all).
 * partial: output_rel is the partially grouped relation of a parallel
 * aggregation (heap tables only; HAVING is the Finalize Aggregate's).
 */
static GpaPlanInfo *
gpa_plan_info(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
			  GroupPathExtraData *extra, bool partial, const char **why)
{
	GjPlan	   *join = NULL;
	RelOptInfo *base = input_rel;

	*why = NULL;
	if (!gpa_grouping_offloadable(root, extra))
		return NULL;
	/* a join of an outer table with dimension tables: GpuJoin's depths */
	if (input_rel->reloptkind == RELOPT_JOINREL)
	{
		if ((join = gj_plan_input(root, input_rel, gpa_heap_enabled, why)) == NULL)
		{
			*why = psprintf("the grouping reads a join of %d relations (%s)",
							bms_num_members(input_rel->relids), *why);
			return NULL;
		}
		if (partial && !gj_plan_parallel(join))
		{
			*why = "a joined relation has no plan a parallel worker may run";
			return NULL;
		}
		base = join->outer;
	}
	if ((*why = ship_grouping_input(root, base, partial, gpa_heap_enabled)) != NULL)
		return NULL;
	return gpa_plan_grouping(root, base, join, output_rel, extra, partial, why);
}

/* is there a grouping GpuPreAgg could take (aggregates or GROUP BY, HAVING as planned) */
bool
gpa_grouping_offloadable(PlannerInfo *root, GroupPathExtraData *extra)
{
	return root->hasHavingQual == (extra->havingQual != NULL) &&
		(root->parse->groupClause != NIL || root->parse->hasAggs);
}

/*
 * gpa_base_quals: the restriction clauses of base (plain expressions, in
 * PostgreSQL's order, so that the same rows raise the same errors), or
 * NULL with *why where one cannot go to the engine
 */
List *
gpa_base_quals(PlannerInfo *root, RelOptInfo *base, const char **why)
{
	List	   *quals = NIL;
	ListCell   *lc;

	*why = NULL;
	foreach(lc, base->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (ri->pseudoconstant || ri->security_level > 0)
		{
			*why = ri->pseudoconstant ? "a clause that is constant for the query" :
				"a security barrier clause";
			return NIL;
		}
		quals = lappend(quals, ri->clause);
	}
	return engine_order_quals(root, quals);
}

/*
 * gpa_plan_grouping: the grouping of base (joined as join says, or NULL)
 * into output_rel as GpuPreAgg would run it, or NULL with *why (see
 * gpa_plan_info)
 */
GpaPlanInfo *
gpa_plan_grouping(PlannerInfo *root, RelOptInfo *base, GjPlan *join, RelOptInfo *output_rel,
				  GroupPathExtraData *extra, bool partial, const char **why)
{
	GpaPlanInfo *pi = palloc0(sizeof(GpaPlanInfo));

	pi->relid = base->relid;
	pi->join = join;
	pi->quals = gpa_base_quals(root, base, why);
	if (*why != NULL)
		return NULL;
	if ((*why = gpa_check_keys(root, &pi->keys)) != NULL ||
		(*why = gpa_dependent_keys(list_concat(list_copy(output_rel->reltarget->exprs),
											   partial ? NIL : (List *) extra->havingQual),
								   &pi->keys)) != NULL)
		return NULL;
	pi->having = partial ? NIL : (List *) extra->havingQual;
	if ((*why = ship_aggrefs((Node *) output_rel->reltarget->exprs, &pi->aggrefs,
							 pg_warp_engine == WARP_ENGINE_GPU)) != NULL ||
		(*why = ship_aggrefs((Node *) pi->having, &pi->aggrefs,
							 pg_warp_engine == WARP_ENGINE_GPU)) != NULL)
		return NULL;
	if (partial && !gpa_partial_target_ok(output_rel->reltarget->exprs, pi))
	{
		*why = "the partial grouping returns an expression of its keys";
		return NULL;
	}
	if (join != NULL &&
		(*why = gj_plan_payload(join, list_concat(list_copy(pi->keys),
												  gpa_agg_args(pi->aggrefs)))) != NULL)
		return NULL;
	if (list_length(pi->keys) > XPU_AGG_MAX_KEYS)
		*why = psprintf("%d group keys (the engine holds %d)",
						list_length(pi->keys), XPU_AGG_MAX_KEYS);
	else if (gpa_count_states(pi->aggrefs) > XPU_AGG_MAX_AGGS)
		*why = psprintf("%d aggregate states (the engine holds %d)",
						gpa_count_states(pi->aggrefs), XPU_AGG_MAX_AGGS);
	return *why == NULL ? pi : NULL;
}

/*
 * gpa_heap_enabled: may GpuPreAgg read heap tables (pg_warp.enable_gpupreagg_heap):
 * under auto, only where its run goes to a GPU.  The CPU engine over heap
 * pages is slower than PostgreSQL's own aggregation (each page is copied to
 * the service and decoded there, where PostgreSQL reads it in place; the
 * figures are in doc/engine.md's settings).
 */
bool
gpa_heap_enabled(void)
{
	switch (pg_warp_enable_gpupreagg_heap)
	{
		case GPA_HEAP_ON:
			return true;
		case GPA_HEAP_OFF:
			return false;
		default:
			return pg_warp_engine == WARP_ENGINE_GPU ||
				(pg_warp_engine != WARP_ENGINE_CPU && service_engine_gpu());
	}
}

/* does everything of pi compile for the Arrow table? */
bool
gpa_compiles(PlannerInfo *root, GpaPlanInfo *pi)
{
	RangeTblEntry *rte = planner_rt_fetch(pi->relid, root);
	Relation	rel = table_open(rte->relid, NoLock);
	List	   *exprs = list_concat(list_copy(pi->keys), gpa_agg_args(pi->aggrefs));
	List	   *outer_exprs = pi->join ? gj_outer_exprs(pi->join) : NIL;
	AttrNumber *attnos;
	int			n;
	CodegenScan *scan = gpa_codegen_scan(rel, pi->relid,
										 list_concat(list_concat(list_copy(exprs), pi->quals),
													 outer_exprs),
										 &attnos, &n);
	XpuProgram *prog = scan ? codegen_join_program(scan, pi->quals,
												   pi->join ? gj_codegen_joins(pi->join) : NIL,
												   exprs) : NULL;
	bool		ok = prog != NULL && prog->n_cols == n;

	/* every column the expressions use is a chunk column the program loads */
	if (ok)
		pi->program = engine_plan_program(prog, scan->column == engine_column_hook ?
										  scan->column_arg : NULL);
	free(prog);
	table_close(rel, NoLock);
	if (scan == NULL)
		explain_why_note("GpuPreAgg: the grouping reads a system column or the whole row");
	else if (!ok)
		explain_why_codegen(root, pi->relid, "GpuPreAgg", NULL);
	return ok;
}

/*
 * gpa_make_path: a GpuPreAgg path of the grouping pi into output_rel, with
 * fallback as the child PostgreSQL runs where the engine cannot; mode:
 * GPA_FINAL, GPA_PARTIAL_PARALLEL or GPA_PARTIAL; the costs are set by the
 * caller
 */
CustomPath *
gpa_make_path(RelOptInfo *output_rel, GpaPlanInfo *pi, Path *fallback, int mode)
{
	CustomPath *cp = makeNode(CustomPath);

	cp->path.pathtype = T_CustomScan;
	cp->path.parent = output_rel;
	cp->path.pathtarget = output_rel->reltarget;
	cp->path.rows = fallback->rows;
	cp->custom_paths = list_make1(fallback);
	cp->custom_private = list_make4(makeInteger((int) pi->relid), pi->quals,
									pi->keys, pi->aggrefs);
	cp->custom_private = lappend(cp->custom_private, pi->having);
	cp->custom_private = lappend(cp->custom_private, makeInteger(mode));
	cp->custom_private = lappend(cp->custom_private, pi->join ? gj_private(pi->join) : NIL);
	cp->custom_private = lappend(cp->custom_private, pi->program);
	/* the inner relations of the joins, which PostgreSQL runs (GpuJoin) */
	if (pi->join != NULL)
	{
		ListCell   *lc;

		foreach(lc, pi->join->depths)
			cp->custom_paths = lappend(cp->custom_paths,
									   ((GjDepth *) lfirst(lc))->inner_path);
	}
	cp->methods = gpa_path_methods();
	return cp;
}

/*
 * gpa_path_cost: the costs of GpuPreAgg path cp of pi, whose outer
 * relation is base, returning ngroups groups; with_inner: its inner
 * tables are built for it (not shared with another node of the query)
 */
void
gpa_path_cost(PlannerInfo *root, CustomPath *cp, GpaPlanInfo *pi, RelOptInfo *base,
			  double ngroups, bool with_inner)
{
	double		rows_in = base->tuples > 0 ? base->tuples : base->rows;
	bool		heap = planner_rt_fetch(pi->relid, root)->relkind != RELKIND_FOREIGN_TABLE;

	cp->path.startup_cost = pg_warp_engine_startup_cost +
		rows_in * (heap ? pg_warp_heap_row_cost : pg_warp_engine_row_cost) +
		(pi->join && with_inner ? gj_inner_cost(pi->join) : 0);

	/*
	 * A heap table's pages are read, checked for visibility and copied by
	 * this one backend: it pays a serial scan's page and tuple costs, which
	 * a parallel plan divides among its workers (gpa_parallel_paths offers
	 * the parallel GpuPreAgg).
	 */
	if (heap)
		cp->path.startup_cost += base->pages * seq_page_cost + rows_in * cpu_tuple_cost;
	cp->path.total_cost = cp->path.startup_cost + ngroups * cpu_tuple_cost;
}

/*
 * gpa_partial_path: the parallel GpuPreAgg of the grouping pi of heap table
 * input_rel into the partially grouped relation pgr, or NULL.  Each
 * participant reads and ships its share of the pages: the tuple costs are
 * divided among them as for a parallel sequential scan, whose page costs
 * PostgreSQL does not divide either; with pg_warp.heap_direct_read the
 * service reads the all-visible blocks from the file itself, and a
 * participant touches no tuple of theirs: no tuple cost then (on the GPU
 * host at SSB SF 20 the tuple cost kept PostgreSQL's plans of Q2.2 to Q4.3,
 * 1.5 to 8 s, where the engine ran Q2.1 and Q3.1 in 0.67 s against
 * PostgreSQL's 2.3 and 2.8 s).  The engine's per-row cost is divided
 * too: the participants' runs go on in the service at the same time (on the
 * GPU, or on the CPU runner's threads), as the workers' own tuple costs do.
 * Its child is PostgreSQL's partial aggregation over a (non-parallel)
 * sequential scan, which a participant whose run falls back restricts to
 * its own block ranges.
 */
static Path *
gpa_partial_path(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *pgr,
				 GroupPathExtraData *gx, GpaPlanInfo *pi)
{
	RelOptInfo *base = pi->join ? pi->join->outer : input_rel;
	int			workers = heap_unit_workers(compute_parallel_worker(base, base->pages, -1,
																max_parallel_workers_per_gather),
											base->pages);
	double		divisor = engine_parallel_divisor(workers);
	double		rows_in = base->tuples > 0 ? base->tuples : base->rows;
	double		ngroups;
	Path	   *child;
	Path	   *fallback;
	CustomPath *cp;

	if (workers <= 0)
		return NULL;
	/*
	 * The fallback of a join: PostgreSQL's own parallel plan of the join,
	 * whose participants share its rows among themselves, run by all of
	 * them, or by the last alone (gpa_join_fallback); of one table: a scan
	 * that each limits to its blocks
	 */
	child = !pi->join ? create_seqscan_path(root, input_rel, NULL, 0) :
		input_rel->partial_pathlist != NIL ? linitial(input_rel->partial_pathlist) : NULL;
	if (child == NULL)
		return NULL;
	ngroups = pi->keys == NIL ? 1.0 :
		estimate_num_groups(root, pi->keys, input_rel->rows / divisor, NULL, NULL);
	fallback = (Path *) create_agg_path(root, pgr, child,
										pgr->reltarget,
										root->parse->groupClause ? AGG_HASHED : AGG_PLAIN,
										AGGSPLIT_INITIAL_SERIAL, root->parse->groupClause,
										NIL, &gx->agg_partial_costs, ngroups);
	cp = gpa_make_path(pgr, pi, fallback, GPA_PARTIAL_PARALLEL);
	cp->path.parallel_aware = true;
	cp->path.parallel_safe = true;
	cp->path.parallel_workers = workers;
	cp->path.startup_cost = pg_warp_engine_startup_cost +
		rows_in * pg_warp_heap_row_cost / divisor +
		base->pages * seq_page_cost +
		(pg_warp_heap_direct_read ? 0 : rows_in * cpu_tuple_cost / divisor) +
		(pi->join ? gj_inner_cost(pi->join) : 0);
	cp->path.total_cost = cp->path.startup_cost + ngroups * cpu_tuple_cost;
	return (Path *) cp;
}

/*
 * gpa_parallel_paths: PostgreSQL's parallel aggregation over a parallel
 * GpuPreAgg of heap table input_rel (Finalize Aggregate over Gather over
 * the node, whose participants share one run in the service: the groups
 * come back once, merged, plus the partial groups of any participant that
 * fell back), where PostgreSQL would consider parallel aggregation: it made
 * the partially grouped relation (create_upper_paths_hook is not called
 * for it, so its paths are gathered and finalized here, as PostgreSQL's
 * gather_grouping_paths and add_paths_to_grouping_rel do)
 */
static void
gpa_parallel_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
				   GroupPathExtraData *gx, double ngroups)
{
	RelOptInfo *pgr;
	GpaPlanInfo *pi;
	const char *why;			/* the serial path noted it */
	Path	   *partial;
	Path	   *gather;
	double		total_groups;

	if ((input_rel->partial_pathlist == NIL && input_rel->reloptkind != RELOPT_JOINREL) ||
		!output_rel->consider_parallel || (gx->flags & GROUPING_CAN_PARTIAL_AGG) == 0)
		return;
	pgr = fetch_upper_rel(root, UPPERREL_PARTIAL_GROUP_AGG, output_rel->relids);
	if (!pgr->consider_parallel || pgr->reltarget == NULL || pgr->reltarget->exprs == NIL)
		return;
	if ((pi = gpa_plan_info(root, input_rel, pgr, gx, true, &why)) == NULL ||
		!gpa_compiles(root, pi) ||
		(partial = gpa_partial_path(root, input_rel, pgr, gx, pi)) == NULL)
		return;
	/* the query's shared run returns the groups once (GpaShared), not once per participant */
	total_groups = ngroups;
	gather = (Path *) create_gather_path(root, pgr, partial, pgr->reltarget, NULL,
										 &total_groups);
	add_path(output_rel, (Path *) create_agg_path(root, output_rel, gather,
												  output_rel->reltarget,
												  root->parse->groupClause ?
												  AGG_HASHED : AGG_PLAIN,
												  AGGSPLIT_FINAL_DESERIAL,
												  root->parse->groupClause,
												  (List *) gx->havingQual,
												  &gx->agg_final_costs, ngroups));
}

/*
 * gpa_postgres_path: the path of output_rel PostgreSQL would run, its
 * cheapest unparameterized one so far (the hook runs after PostgreSQL made
 * its own grouping paths), or NULL when it has none.  GpuPreAgg's fallback
 * is that plan, so that a fallback behaves as PostgreSQL alone would: the
 * same strategy (sorted or hashed, its memory and spill), the same errors.
 */
static Path *
gpa_postgres_path(RelOptInfo *output_rel)
{
	Path	   *best = NULL;
	Path	   *copy;
	Size		size;
	ListCell   *lc;

	foreach(lc, output_rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->param_info != NULL ||
			(IsA(p, CustomPath) && ((CustomPath *) p)->methods == gpa_path_methods()))
			continue;
		if (best == NULL || p->total_cost < best->total_cost)
			best = p;
	}
	if (best == NULL)
		return NULL;

	/*
	 * A copy of its top node: add_path frees the top node of a path that a
	 * cheaper one (GpuPreAgg's) dominates; the nodes below stay.
	 */
	switch (nodeTag(best))
	{
		case T_AggPath: size = sizeof(AggPath); break;
		case T_GroupPath: size = sizeof(GroupPath); break;
		case T_MinMaxAggPath: size = sizeof(MinMaxAggPath); break;
		case T_GatherPath: size = sizeof(GatherPath); break;
		case T_GatherMergePath: size = sizeof(GatherMergePath); break;
		case T_ProjectionPath: size = sizeof(ProjectionPath); break;
		case T_SortPath: size = sizeof(SortPath); break;
		case T_IncrementalSortPath: size = sizeof(IncrementalSortPath); break;
		case T_UpperUniquePath: size = sizeof(UpperUniquePath); break;
		default: return NULL;	/* the caller makes a hashed or plain Agg */
	}
	copy = palloc(size);
	memcpy(copy, best, size);
	return copy;
}

/*
 * gpa_upper_paths: create_upper_paths_hook; offers GpuPreAgg for the
 * grouping of one Arrow or heap table, beside PostgreSQL's own paths, and
 * for a heap table a parallel aggregation over a parallel GpuPreAgg; for
 * the grouping of a partitioned table a GpuPreAgg per partition.
 */
static void
gpa_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
				RelOptInfo *output_rel, void *extra)
{
	GroupPathExtraData *gx = extra;
	const char *why,
			   *why_part;

	if (prev_upper_paths_hook)
		prev_upper_paths_hook(root, stage, input_rel, output_rel, extra);
	if (stage != UPPERREL_GROUP_AGG || extra == NULL || !pg_warp_enabled ||
		!pg_warp_enable_gpupreagg || !pg_warp_preloaded ||
		input_rel->cheapest_total_path == NULL)
		return;
	why = gpa_one_node_paths(root, input_rel, output_rel, gx);

	/*
	 * A partitioned outer table: a GpuPreAgg per partition (gpu_join_part.c),
	 * after the one-node paths, whose fallback is PostgreSQL's own plan
	 */
	if (!gpa_partition_paths(root, input_rel, output_rel, gx, &why_part) &&
		(why_part != NULL || why != NULL))
		explain_why_note("GpuPreAgg: %s", why_part != NULL ? why_part : why);
}

/*
 * gpa_one_node_paths: the GpuPreAgg of the grouping of input_rel into
 * output_rel as one node (and its parallel form over a heap table), added
 * to output_rel; why not, or NULL (offered, or a grouping GpuPreAgg does
 * not take)
 */
static const char *
gpa_one_node_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
				   GroupPathExtraData *gx)
{
	GpaPlanInfo *pi;
	const char *why;
	CustomPath *cp;
	Path	   *fallback;
	double		ngroups;
	bool		heap;

	if ((pi = gpa_plan_info(root, input_rel, output_rel, gx, false, &why)) == NULL)
		return why;
	if (!gpa_compiles(root, pi))
		return NULL;
	if (root->parse->groupClause != NIL && !grouping_is_hashable(root->parse->groupClause))
		return NULL;

	ngroups = pi->keys == NIL ? 1.0 :
		estimate_num_groups(root, pi->keys, input_rel->rows, NULL, NULL);

	/* PostgreSQL's own plan, run when the engine cannot give exact results */
	fallback = gpa_postgres_path(output_rel);
	if (fallback == NULL)
		fallback = (Path *) create_agg_path(root, output_rel, input_rel->cheapest_total_path,
											output_rel->reltarget,
											root->parse->groupClause ? AGG_HASHED : AGG_PLAIN,
											AGGSPLIT_SIMPLE, root->parse->groupClause,
											pi->having, &gx->agg_final_costs,
											ngroups);

	cp = gpa_make_path(output_rel, pi, fallback, GPA_FINAL);
	gpa_path_cost(root, cp, pi, pi->join ? pi->join->outer : input_rel, ngroups, true);
	heap = planner_rt_fetch(pi->relid, root)->relkind != RELKIND_FOREIGN_TABLE;
	explain_why_offered(output_rel, "GpuPreAgg", cp->path.total_cost);
	add_path(output_rel, (Path *) cp);
	if (heap)
		gpa_parallel_paths(root, input_rel, output_rel, gx, ngroups);
	return NULL;
}

/*
 * gpa_anchor_var: a Var of the table relid, through which the executor
 * learns the table's range table index after set_plan_references (which
 * offsets the Vars of custom_scan_tlist, and nothing else the node keeps):
 * a column's, or the whole-row Var of a table that has no column
 */
static Var *
gpa_anchor_var(PlannerInfo *root, Index relid, List *exprs)
{
	List	   *vars = pull_var_clause((Node *) exprs, PVC_RECURSE_AGGREGATES);
	RangeTblEntry *rte;
	Relation	rel;
	Var		   *v = NULL;
	ListCell   *lc;

	/* (a join's expressions read the inner relations' columns too) */
	foreach(lc, vars)
		if (((Var *) lfirst(lc))->varno == relid)
			return copyObject((Var *) lfirst(lc));
	rte = planner_rt_fetch(relid, root);
	rel = table_open(rte->relid, NoLock);
	for (int i = 0; i < RelationGetDescr(rel)->natts && v == NULL; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), i);

		if (!att->attisdropped)
			v = makeVar(relid, att->attnum, att->atttypid, att->atttypmod,
						att->attcollation, 0);
	}
	table_close(rel, NoLock);
	/* a table without columns (none declared, or all dropped): its row */
	if (v == NULL)
		v = makeWholeRowVar(rte, relid, 0, false);
	return v;
}

/*
 * gpa_plan_path: the CustomScan of a GpuPreAgg path.  Its scan tuple is
 * (keys..., aggregates..., quals..., join clauses..., anchor)
 * (custom_scan_tlist; the last ones resjunk, never filled: they are there so
 * that set_plan_references adjusts their Vars); the target list and HAVING
 * are expressions over it.  custom_private: the number of keys, of
 * aggregates and of quals, what the node returns (GPA_FINAL, or partial
 * states: GPA_PARTIAL_PARALLEL for a parallel heap run, GPA_PARTIAL for one
 * partition of a partitioned table, gpu_join_part.c), the join depths (gj_private: GpuJoin's, NIL without
 * joins) and the engine's program (engine_plan_program, compiled by
 * gpa_compiles).  custom_plans: the fallback, then the depths' inner plans
 * (gj_inner_plans: those whose scans run at once under one Gather, last).
 */
Plan *
gpa_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cs = makeNode(CustomScan);
	List	   *priv = best_path->custom_private;
	Index		relid = (Index) intVal(linitial(priv));
	List	   *quals = lsecond(priv);
	List	   *keys = lthird(priv);
	List	   *aggrefs = lfourth(priv);
	List	   *scan_tlist = NIL;
	List	   *depths;
	ListCell   *lc;
	AttrNumber	resno = 1;

	foreach(lc, keys)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++, NULL, false));
	foreach(lc, aggrefs)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++, NULL, false));
	foreach(lc, quals)
		scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lc), resno++, NULL, true));
	/* each join depth's clauses, for EXPLAIN (set_plan_references adjusts their Vars) */
	foreach(lc, list_nth(priv, 6))
	{
		ListCell   *lq;

		foreach(lq, lfourth((List *) lfirst(lc)))
			scan_tlist = lappend(scan_tlist, makeTargetEntry(lfirst(lq), resno++, NULL, true));
	}
	scan_tlist = lappend(scan_tlist,
						 makeTargetEntry((Expr *) gpa_anchor_var(root, relid,
																 list_concat(list_copy(keys), aggrefs)),
										 resno++, NULL, true));
	cs->scan.plan.targetlist = tlist;
	cs->scan.plan.qual = list_nth(priv, 4);
	cs->scan.scanrelid = 0;
	/* the fallback, then the join depths' inner plans, returning their keys and payload */
	cs->custom_plans = lcons(linitial(custom_plans),
							 gj_inner_plans(list_copy_tail(custom_plans, 1), list_nth(priv, 6),
											&depths));
	cs->custom_scan_tlist = scan_tlist;
	cs->custom_private = list_make5(makeInteger(list_length(keys)),
									makeInteger(list_length(aggrefs)),
									makeInteger(list_length(quals)),
									list_nth(priv, 5), depths);
	cs->custom_private = lappend(cs->custom_private, list_nth(priv, 7));
	cs->methods = gpa_scan_methods();
	return &cs->scan.plan;
}

/* ---------------- settings ---------------- */

/*
 * gpa_plan_init: the planner's settings of GpuPreAgg and pg_warp.engine,
 * and the planner hook (from pg_warp_gpu_preagg_init)
 */
void
gpa_plan_init(void)
{
	DefineCustomBoolVariable("pg_warp.enable_gpupreagg",
							 "Lets the planner use GpuPreAgg for GROUP BY aggregation of "
							 "Arrow and heap tables.",
							 "Heap tables also need pg_warp.enable_gpupreagg_heap.",
							 &pg_warp_enable_gpupreagg, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warp.enable_gpupreagg_heap",
							 "Lets the planner use GpuPreAgg for GROUP BY aggregation of heap tables.",
							 "auto: where the run goes to a GPU (pg_warp.engine = gpu, or auto "
							 "on a service with a GPU); on: with the CPU engine too; off: never.",
							 &pg_warp_enable_gpupreagg_heap, GPA_HEAP_AUTO, heap_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_warp.heap_row_cost",
							 "Planner cost of one row of a heap table read by the engine.",
							 "Beside the page and tuple costs of reading the table, which the "
							 "backend pays as a sequential scan does.",
							 &pg_warp_heap_row_cost, 0.001, 0.0, 1e10,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomEnumVariable("pg_warp.engine",
							 "Which engine runs pg_warp's offloaded work: auto, cpu or gpu.",
							 "auto: a GPU when the service has one, else the CPU engine; "
							 "gpu: an error when the service has no GPU.",
							 &pg_warp_engine, 0, engine_options,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_warp.engine_startup_cost",
							 "Planner cost of starting an engine run in the pg_warp service.",
							 NULL, &pg_warp_engine_startup_cost, 1000.0, 0.0, 1e10,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_warp.engine_row_cost",
							 "Planner cost of one row read by the engine.",
							 NULL, &pg_warp_engine_row_cost, 0.001, 0.0, 1e10,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	prev_upper_paths_hook = create_upper_paths_hook;
	create_upper_paths_hook = gpa_upper_paths;
}
