/*-------------------------------------------------------------------------
 *
 * gpu_join_part.c
 *		Partition-wise GpuPreAgg: the grouping of a partitioned table, alone
 *		or joined with tables that are not partitioned (a star query whose
 *		fact table is partitioned), as
 *
 *		  Finalize Aggregate -> Append -> GpuPreAgg (partial states) per partition
 *
 *		each partition's node scanning its own table (an Arrow foreign table
 *		or a heap table) and probing the same inner tables, which the query
 *		builds and loads into the service once (gpu_join.c's cache of the
 *		query's inner tables: the first node to run builds a depth's table,
 *		the others take its join id and EXPLAIN ANALYZE says "shared with").
 *
 * Planning.  create_upper_paths_hook (gpu_preagg.c) calls
 * gpa_partition_paths after offering its one-node paths (so that their
 * fallback is PostgreSQL's own plan, not this one).  Where the relation grouped is a partitioned
 * table, or a join one of whose members is (the largest, as the outer
 * relation of GpuJoin's depths: gj_plan_outer), the grouping is planned
 * once for the parent table (gpa_plan_grouping: keys, aggregates, join
 * depths and their payload) and translated to each partition PostgreSQL
 * did not prune (adjust_appendrel_attrs with the partition's
 * AppendRelInfo: its own restriction clauses, the keys, the partial
 * aggregates, the depths' outer keys and clauses).  A partition the engine
 * cannot read (another foreign data wrapper, a heap table where
 * pg_warp.enable_gpupreagg_heap says no, a partitioned partition, an
 * expression that does not compile) runs PostgreSQL's partial aggregation
 * in the Append instead.  The aggregates must have PostgreSQL's partial
 * form (combine, serial and deserial functions), as for parallel
 * aggregation.
 *
 * Fallback.  Each partition's node has PostgreSQL's partial aggregation of
 * its rows as its child (AGGSPLIT_INITIAL_SERIAL over the partition's scan,
 * or over hash joins of the partition with the inner relations built here,
 * since PostgreSQL plans no join of one partition with tables that are not
 * partitioned), run where the engine cannot answer for that partition.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_class.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planner.h"
#include "optimizer/prep.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "engine/gpu_join.h"
#include "engine/gpu_preagg.h"
#include "engine/heap_source.h"
#include "xpu/xpu_join.h"

static bool pg_warp_enable_partitionwise_gpujoin = true;

/* what every partition's path shares */
typedef struct GppParent
{
	RelOptInfo *parent;			/* the partitioned table */
	RelOptInfo *input_rel;		/* the relation grouped (parent or a join with it) */
	GpaPlanInfo *pi;			/* the grouping, planned for the parent */
	PathTarget *ptarget;		/* the partial grouping's target (keys, partial aggregates) */
	AggStrategy strategy;
	AggClauseCosts partial_costs;
	bool		inner_costed;	/* a partition's path paid for the inner tables */
} GppParent;

/*
 * gpp_partitioned_outer: the partitioned table input_rel groups: itself,
 * or the largest partitioned member of a join; NULL where none
 */
static RelOptInfo *
gpp_partitioned_outer(PlannerInfo *root, RelOptInfo *input_rel)
{
	RelOptInfo *best = NULL;
	int			x = -1;

	if (input_rel->reloptkind == RELOPT_BASEREL)
		return IS_PARTITIONED_REL(input_rel) ? input_rel : NULL;
	if (input_rel->reloptkind != RELOPT_JOINREL)
		return NULL;
	while ((x = bms_next_member(input_rel->relids, x)) >= 0)
	{
		RelOptInfo *r = find_base_rel(root, x);

		if (r->reloptkind == RELOPT_BASEREL && IS_PARTITIONED_REL(r) &&
			(best == NULL || r->tuples > best->tuples))
			best = r;
	}
	return best;
}

/* a PathTarget of exprs (sortgrouprefs: the first n_refs of them have refs[]) */
static PathTarget *
gpp_target(PlannerInfo *root, List *exprs, const Index *refs, int n_refs)
{
	PathTarget *t = create_empty_pathtarget();
	ListCell   *lc;

	foreach(lc, exprs)
	{
		int			i = foreach_current_index(lc);

		add_column_to_pathtarget(t, lfirst(lc), i < n_refs ? refs[i] : 0);
	}
	/* widths for the costs: the partial states' are those of the values they hold */
	t->width = root->upper_targets[UPPERREL_GROUP_AGG] ?
		root->upper_targets[UPPERREL_GROUP_AGG]->width : 32 * list_length(exprs);
	return t;
}

/* target translated to a partition (ai: its AppendRelInfo) */
static PathTarget *
gpp_child_target(PlannerInfo *root, PathTarget *target, AppendRelInfo *ai)
{
	PathTarget *t = copy_pathtarget(target);

	t->exprs = (List *) adjust_appendrel_attrs(root, (Node *) target->exprs, 1, &ai);
	return t;
}

/*
 * gpp_partial_target: the partial grouping's target of pi: the group keys
 * (with the GROUP BY clause's references), the other columns read above,
 * then the aggregates in their partial form, as PostgreSQL's partial
 * aggregation returns them; pi's aggregates become those partial ones
 */
static PathTarget *
gpp_partial_target(PlannerInfo *root, GpaPlanInfo *pi)
{
	int			n_refs = list_length(root->parse->groupClause);
	Index	   *refs = palloc0(sizeof(Index) * Max(n_refs, 1));
	List	   *partial = NIL;
	ListCell   *lc;

	foreach(lc, root->parse->groupClause)
		refs[foreach_current_index(lc)] = ((SortGroupClause *) lfirst(lc))->tleSortGroupRef;
	foreach(lc, pi->aggrefs)
	{
		Aggref	   *a = copyObject((Aggref *) lfirst(lc));

		mark_partial_aggref(a, AGGSPLIT_INITIAL_SERIAL);
		partial = lappend(partial, a);
	}
	pi->aggrefs = partial;
	pi->having = NIL;			/* Finalize Aggregate's */
	return gpp_target(root, list_concat(list_copy(pi->keys), partial), refs, n_refs);
}

/* an empty upper relation of relids, for paths of a partition's partial grouping */
static RelOptInfo *
gpp_upper_rel(Relids relids, PathTarget *target, double rows)
{
	RelOptInfo *rel = makeNode(RelOptInfo);

	rel->reloptkind = RELOPT_UPPER_REL;
	rel->relids = bms_copy(relids);
	rel->reltarget = target;
	rel->rows = clamp_row_est(rows);
	return rel;
}

/* the join type of a GpuJoin depth */
static JoinType
gpp_jointype(int jointype)
{
	switch (jointype)
	{
		case XPU_JOIN_LEFT: return JOIN_LEFT;
		case XPU_JOIN_SEMI: return JOIN_SEMI;
		case XPU_JOIN_ANTI: return JOIN_ANTI;
		default: return JOIN_INNER;
	}
}

/*
 * gpp_hash_clause: a RestrictInfo of equality clause (a join key) that a
 * hash join can use, or NULL
 */
static RestrictInfo *
gpp_hash_clause(PlannerInfo *root, Expr *clause)
{
	RestrictInfo *ri = make_restrictinfo(root, clause, false, false, false, 0, NULL, NULL, NULL);
	OpExpr	   *op = (OpExpr *) clause;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 ||
		!op_hashjoinable(op->opno, exprType(linitial(op->args))))
		return NULL;
	ri->hashjoinoperator = op->opno;
	return ri;
}

/*
 * gpp_join_path: PostgreSQL's join of partition child with the inner
 * relations of the depths of cj (gj_plan_child's), as hash joins in probe
 * order, or NULL where a key cannot be hashed
 */
static Path *
gpp_join_path(PlannerInfo *root, RelOptInfo *child, GjPlan *cj)
{
	RelOptInfo *outer_rel = child;
	Path	   *path = child->cheapest_total_path;
	ListCell   *lc;

	foreach(lc, cj->depths)
	{
		GjDepth    *d = lfirst(lc);
		JoinType	jt = gpp_jointype(d->jointype);
		RelOptInfo *jrel = makeNode(RelOptInfo);
		SpecialJoinInfo *sj = makeNode(SpecialJoinInfo);
		JoinPathExtraData extra;
		JoinCostWorkspace ws;
		List	   *hashclauses = NIL,
				   *rlist = NIL;
		ListCell   *lk;
		double		share = d->rel->rows / Max(d->rel->tuples, 1.0);

		foreach(lk, d->key_clauses)
		{
			RestrictInfo *ri = gpp_hash_clause(root, lfirst(lk));

			if (ri == NULL)
				return NULL;
			hashclauses = lappend(hashclauses, ri);
		}
		rlist = list_copy(hashclauses);
		/* a left join's quals are WHERE clauses above it; an inner join's join clauses */
		foreach(lk, d->quals)
			rlist = lappend(rlist, make_restrictinfo(root, lfirst(lk), jt == JOIN_LEFT,
														   false, false, 0, NULL, NULL, NULL));
		jrel->reloptkind = RELOPT_OTHER_JOINREL;
		jrel->relids = bms_union(outer_rel->relids, d->rel->relids);
		jrel->rows = clamp_row_est(outer_rel->rows * (jt == JOIN_INNER ? Min(share, 1.0) :
													  jt == JOIN_LEFT ? 1.0 : 0.5));
		jrel->reltarget = copy_pathtarget(outer_rel->reltarget);
		if (jt == JOIN_INNER || jt == JOIN_LEFT)
			add_new_columns_to_pathtarget(jrel->reltarget, d->rel->reltarget->exprs);
		set_pathtarget_cost_width(root, jrel->reltarget);
		sj->jointype = jt;
		sj->min_lefthand = sj->syn_lefthand = outer_rel->relids;
		sj->min_righthand = sj->syn_righthand = d->rel->relids;
		memset(&extra, 0, sizeof(extra));
		extra.restrictlist = rlist;
		extra.inner_unique = jt == JOIN_INNER || jt == JOIN_LEFT;	/* a unique key probed */
		extra.sjinfo = sj;
		if (jt == JOIN_SEMI || jt == JOIN_ANTI)
			compute_semi_anti_join_factors(root, jrel, outer_rel, d->rel, jt, sj, rlist,
										   &extra.semifactors);
		initial_cost_hashjoin(root, &ws, jt, hashclauses, path, d->inner_path, &extra, false);
		path = (Path *) create_hashjoin_path(root, jrel, jt, &ws, &extra, path, d->inner_path,
											 false, rlist, NULL, hashclauses);
		outer_rel = jrel;
	}
	return path;
}

/*
 * gpp_child_why: why the engine cannot read partition child's table, or
 * NULL
 */
static const char *
gpp_child_why(PlannerInfo *root, RelOptInfo *child)
{
	RangeTblEntry *rte = planner_rt_fetch(child->relid, root);

	if (rte->rtekind != RTE_RELATION || rte->inh || child->part_scheme != NULL)
		return "a partition that is partitioned itself";
	if (rte->tablesample != NULL)
		return "a TABLESAMPLE";
	if (rte->relkind == RELKIND_FOREIGN_TABLE)
		return arrow_fdw_is_table(rte->relid) ? NULL : "a foreign table of another wrapper";
	if (!heap_source_plannable(rte->relid))
		return "not a plain heap table";
	if (!gpa_heap_enabled())
		return "pg_warp.enable_gpupreagg_heap leaves heap tables to PostgreSQL here";
	return NULL;
}

/*
 * gpp_child_path: the partial grouping of partition child (AppendRelInfo
 * ai) of gp: a GpuPreAgg with PostgreSQL's partial aggregation as its
 * fallback, or that aggregation alone where the engine cannot read the
 * partition (*engine false); NULL where PostgreSQL's cannot be planned
 */
static Path *
gpp_child_path(PlannerInfo *root, GppParent *gp, RelOptInfo *child, AppendRelInfo *ai,
			   bool *engine)
{
	GpaPlanInfo *pi = gp->pi;
	GpaPlanInfo *cpi = palloc0(sizeof(GpaPlanInfo));
	PathTarget *ctarget = gpp_child_target(root, gp->ptarget, ai);
	PathTarget *scanjoin = gpp_child_target(root, gp->input_rel->reltarget, ai);
	double		share = child->rows / Max(gp->parent->rows, 1.0);
	double		rows_in = clamp_row_est(gp->input_rel->rows * share);
	double		ngroups;
	RelOptInfo *crel;
	Path	   *input;
	Path	   *fallback;
	CustomPath *cp;
	const char *why;

	*engine = false;
	cpi->relid = child->relid;
	cpi->keys = (List *) adjust_appendrel_attrs(root, (Node *) pi->keys, 1, &ai);
	cpi->aggrefs = (List *) adjust_appendrel_attrs(root, (Node *) pi->aggrefs, 1, &ai);
	cpi->join = pi->join ? gj_plan_child(root, pi->join, child, ai) : NULL;
	ngroups = cpi->keys == NIL ? 1.0 :
		estimate_num_groups(root, cpi->keys, rows_in, NULL, NULL);
	crel = gpp_upper_rel(bms_union(child->relids,
								   bms_difference(gp->input_rel->relids, gp->parent->relids)),
						 ctarget, ngroups);
	input = cpi->join ? gpp_join_path(root, child, cpi->join) : child->cheapest_total_path;
	if (input == NULL)
		return NULL;
	input = (Path *) create_projection_path(root, input->parent, input, scanjoin);
	fallback = (Path *) create_agg_path(root, crel, input, ctarget, gp->strategy,
										AGGSPLIT_INITIAL_SERIAL, root->parse->groupClause,
										NIL, &gp->partial_costs, ngroups);
	if ((why = gpp_child_why(root, child)) != NULL)
	{
		explain_why_note("GpuPreAgg: partition \"%s\": %s",
						 get_rel_name(planner_rt_fetch(child->relid, root)->relid), why);
		return fallback;
	}
	cpi->quals = gpa_base_quals(root, child, &why);
	if (why != NULL)
	{
		explain_why_note("GpuPreAgg: partition \"%s\": %s",
						 get_rel_name(planner_rt_fetch(child->relid, root)->relid), why);
		return fallback;
	}
	if (!gpa_compiles(root, cpi))
		return fallback;
	cp = gpa_make_path(crel, cpi, fallback, GPA_PARTIAL);
	/* the inner tables are built once, by whichever partition's node runs first */
	gpa_path_cost(root, cp, cpi, child, ngroups, !gp->inner_costed);
	gp->inner_costed = true;
	*engine = true;
	return (Path *) cp;
}

/*
 * gpp_offer: the partition-wise path of the grouping of input_rel (which
 * reads partitioned table parent) into output_rel, added to it; why not,
 * or NULL
 */
static const char *
gpp_offer(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *parent,
		  RelOptInfo *output_rel, GroupPathExtraData *gx)
{
	RangeTblEntry *rte = planner_rt_fetch(parent->relid, root);
	GppParent	gp = {parent, input_rel};
	GjPlan	   *join = NULL;
	AggClauseCosts final_costs;
	List	   *subpaths = NIL;
	int			n_engine = 0;
	double		ngroups;
	const char *why = NULL;
	Path	   *append;
	AggPath    *agg;

	if (!pg_warp_enable_partitionwise_gpujoin)
		return "pg_warp.enable_partitionwise_gpujoin is off";
	if (root->parse->groupingSets != NIL)
		return "GROUPING SETS, ROLLUP or CUBE";
	if (rte->tablesample != NULL || rte->securityQuals != NIL)
		return "the partitioned table has a TABLESAMPLE or row level security";
	if ((gx->flags & GROUPING_CAN_PARTIAL_AGG) == 0)
		return "an aggregate without PostgreSQL's partial form (partition-wise GpuPreAgg "
			"combines the partitions' partial states)";
	if (root->parse->groupClause != NIL && !grouping_is_hashable(root->parse->groupClause))
		return "a GROUP BY key that cannot be hashed";
	if (input_rel != parent && (join = gj_plan_outer(root, input_rel, parent, &why)) == NULL)
		return psprintf("the grouping reads a join of %d relations (%s)",
						bms_num_members(input_rel->relids), why);
	gp.pi = gpa_plan_grouping(root, parent, join, output_rel, gx, false, &why);
	if (gp.pi == NULL)
		return why;
	gp.ptarget = gpp_partial_target(root, gp.pi);
	gp.strategy = root->parse->groupClause ? AGG_HASHED : AGG_PLAIN;
	memset(&gp.partial_costs, 0, sizeof(AggClauseCosts));
	memset(&final_costs, 0, sizeof(AggClauseCosts));
	if (root->parse->hasAggs)
	{
		get_agg_clause_costs(root, AGGSPLIT_INITIAL_SERIAL, &gp.partial_costs);
		get_agg_clause_costs(root, AGGSPLIT_FINAL_DESERIAL, &final_costs);
	}
	for (int i = 0; i < parent->nparts; i++)
	{
		RelOptInfo *child = parent->part_rels[i];
		bool		engine;
		Path	   *p;

		/* a partition PostgreSQL pruned, or proved empty by its constraints */
		if (child == NULL || !bms_is_member(i, parent->live_parts) || IS_DUMMY_REL(child) ||
			child->cheapest_total_path == NULL)
			continue;
		p = gpp_child_path(root, &gp, child, root->append_rel_array[child->relid], &engine);
		if (p == NULL)
			return "a join key PostgreSQL cannot hash (the partitions' fallback)";
		subpaths = lappend(subpaths, p);
		n_engine += engine ? 1 : 0;
	}
	if (n_engine == 0)
		return "no partition of the partitioned table is one the engine reads";
	append = (Path *) create_append_path(root, gpp_upper_rel(output_rel->relids, gp.ptarget, 0),
										 subpaths, NIL, NIL, NULL, 0, false, -1);
	ngroups = gp.pi->keys == NIL ? 1.0 :
		estimate_num_groups(root, gp.pi->keys, input_rel->rows, NULL, NULL);
	agg = create_agg_path(root, output_rel, append, output_rel->reltarget, gp.strategy,
						  AGGSPLIT_FINAL_DESERIAL, root->parse->groupClause,
						  (List *) gx->havingQual, &final_costs, ngroups);
	explain_why_offered(output_rel, "GpuPreAgg", agg->path.total_cost);
	add_path(output_rel, (Path *) agg);
	return NULL;
}

/* is rel the largest table (in rows) of input_rel (itself, or a join) */
static bool
gpp_largest(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *rel)
{
	int			x = -1;

	while ((x = bms_next_member(input_rel->relids, x)) >= 0)
		if (find_base_rel(root, x)->tuples > rel->tuples)
			return false;
	return true;
}

/*
 * gpa_partition_paths: where the grouping of input_rel into output_rel
 * reads a partitioned table, offers the partition-wise GpuPreAgg; true if
 * it did.  Else *why says why not where the partitioned table is the
 * largest one the grouping reads (the fact table of a star query), NULL
 * where it is not (the caller's one-node GpuPreAgg's reason tells more).
 * The caller may have offered its one-node GpuPreAgg too (a join whose
 * partitioned table is a dimension); add_path keeps the cheaper.
 */
bool
gpa_partition_paths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *output_rel,
					GroupPathExtraData *gx, const char **why)
{
	RelOptInfo *parent = gpp_partitioned_outer(root, input_rel);
	const char *why1;

	*why = NULL;
	if (parent == NULL || !gpa_grouping_offloadable(root, gx))
		return false;
	if ((why1 = gpp_offer(root, input_rel, parent, output_rel, gx)) == NULL)
		return true;
	if (gpp_largest(root, input_rel, parent))
		*why = psprintf("partition-wise over \"%s\": %s",
						get_rel_name(planner_rt_fetch(parent->relid, root)->relid), why1);
	return false;
}

/* pg_warp_gpu_join_part_init: the setting (from _PG_init, via gpu_preagg.c) */
void
pg_warp_gpu_join_part_init(void)
{
	DefineCustomBoolVariable("pg_warp.enable_partitionwise_gpujoin",
							 "Lets the planner run the grouping of a partitioned table, alone or "
							 "joined with tables that are not partitioned, as a GpuPreAgg per "
							 "partition.",
							 "The partitions' nodes share the inner tables of their joins: "
							 "built and loaded once for the query.",
							 &pg_warp_enable_partitionwise_gpujoin, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}
