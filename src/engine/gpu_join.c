/*-------------------------------------------------------------------------
 *
 * gpu_join.c
 *		GpuJoin: the hash joins of a star query run in the engine, in the
 *		same pass as the scan of the outer (fact) table and the grouping
 *		above them, so that joined rows never leave the engine.
 *
 * Planning.  gj_plan_input takes the relation a grouping reads when it is a
 * join of base relations by inner joins: the outer relation is the largest
 * one the engine reads (an Arrow table, or a heap table where the engine
 * reads heap tables), every other one becomes a join depth, probed in the
 * order that drops rows soonest (its filtered share of rows, least first),
 * each after the depths its keys read.  A depth's join clauses are the
 * equalities PostgreSQL derives between it and the relations before it
 * (equivalence classes) and the join clauses among them; the equalities
 * whose sides are an expression of the relations before and one of the
 * inner relation, with an operator whose equality the engine's key bytes
 * give exactly (integers of any width, float4/float8, numeric, date,
 * timestamp[tz], bool, text of a deterministic collation), are the keys;
 * the other clauses are join quals, compiled into the program.  Where the
 * inner keys are provably unique by themselves (a primary key or a unique
 * index over them, as dimension tables have), a probe finds at most one
 * inner row; elsewhere an INNER or LEFT depth probes every match (the
 * outer row goes on once per matching inner row: row expansion, xpu_join.h)
 * unless PostgreSQL estimates that the depths multiply the outer rows by
 * more than GJ_MAX_EXPANSION.  What stays in PostgreSQL says why (EXPLAIN
 * VERBOSE, explain_why).
 *
 * Execution.  Each inner relation runs as PostgreSQL plans it (its own
 * filters and scan), its plan's target list being the inner keys, then the
 * inner columns later expressions read (the payload).  The node reads its
 * rows once, builds the depth's inner table (xpu/xpu_join.h: dense for
 * dimension keys, else hashed) straight into a sealed memfd and loads it
 * into the service (JOIN_LOAD; gpu_join_table.c), which keeps one copy for
 * every run of the query; the run's program probes it in its JOIN stage
 * (codegen).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <float.h>

#include "access/table.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "portability/instr_time.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/engine.h"
#include "engine/gpu_join.h"
#include "engine/shippable.h"
#include "xpu/xpu_join.h"

bool		pg_warp_enable_gpujoin = true;
static int	pg_warp_gpujoin_inner_limit = 4096;	/* MB per inner table */
static bool pg_warp_gpujoin_parallel_build = true;	/* gpu_join_build.c */
double		pg_warp_gpujoin_read_ahead_cost = 1000;	/* gpu_preagg.c */

/* inner rows a parallel build's worker reads, at least (gj_inner_path) */
#define GJ_BUILD_ROWS_PER_WORKER	131072

/* ---------------- planning ---------------- */

/*
 * gj_equality_ok: is opno, comparing with collation collid, an equality the
 * engine's key bytes (xpu_agg.h) decide exactly as PostgreSQL does
 */
static bool
gj_equality_ok(Oid opno, Oid collid)
{
	switch (get_opcode(opno))
	{
		case F_INT2EQ: case F_INT4EQ: case F_INT8EQ:
		case F_INT24EQ: case F_INT42EQ: case F_INT28EQ: case F_INT82EQ:
		case F_INT48EQ: case F_INT84EQ:
		case F_BOOLEQ: case F_DATE_EQ: case F_TIMESTAMP_EQ: case F_TIMESTAMPTZ_EQ:
		case F_FLOAT4EQ: case F_FLOAT8EQ: case F_FLOAT48EQ: case F_FLOAT84EQ:
		case F_NUMERIC_EQ:
			return true;
		case F_TEXTEQ:
			/* bytes equal exactly where the collation is deterministic */
			return !OidIsValid(collid) || get_collation_isdeterministic(collid);
		default:
			return false;
	}
}

/*
 * gj_key_clause: is ri an equality key between the relations joined (an
 * expression of them on one side) and inner relation rel (one of rel on
 * the other)?  Its sides into *okey and *ikey.
 */
static bool
gj_key_clause(RestrictInfo *ri, Relids joined, RelOptInfo *rel, Expr **okey, Expr **ikey)
{
	OpExpr	   *op = (OpExpr *) ri->clause;
	Expr	   *l, *r;
	XpuType		itype, otype;
	int			scale;

	if (!IsA(op, OpExpr) || list_length(op->args) != 2 || ri->left_relids == NULL ||
		ri->right_relids == NULL || !gj_equality_ok(op->opno, op->inputcollid) ||
		contain_volatile_functions((Node *) op))
		return false;
	l = linitial(op->args);
	r = lsecond(op->args);
	if (bms_is_subset(ri->left_relids, joined) && bms_is_subset(ri->right_relids, rel->relids))
		*okey = l, *ikey = r;
	else if (bms_is_subset(ri->right_relids, joined) && bms_is_subset(ri->left_relids, rel->relids))
		*okey = r, *ikey = l;
	else
		return false;
	/* an inner numeric key has its column's scale; an outer one codegen's */
	itype = codegen_value_type(exprType((Node *) *ikey), exprTypmod((Node *) *ikey), &scale);
	otype = exprType((Node *) *okey) == NUMERICOID ? XPU_T_NUMERIC :
		codegen_value_type(exprType((Node *) *okey), -1, &scale);
	return itype != XPU_T_NONE && otype != XPU_T_NONE && xpu_join_key_supported(itype, otype);
}

/* does node hold a PARAM_EXEC Param (a value that may change on a rescan) */
static bool
gj_has_exec_param(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, gj_has_exec_param, context);
}

/*
 * gj_keys_unique: do the key clauses alone (the ones the probe compares:
 * never the join quals, which the engine checks after the one row a probe
 * finds) prove that rel has one row per key, by a unique index?  Not
 * innerrel_is_unique, which proves it from all of a join's clauses (and
 * remembers that for the pair of relations).
 */
static bool
gj_keys_unique(PlannerInfo *root, Relids joined, RelOptInfo *rel, List *key_ris)
{
	List	   *usable = NIL;
	ListCell   *lc;

	foreach(lc, key_ris)
	{
		RestrictInfo *ri = lfirst(lc);

		if (!ri->can_join || ri->mergeopfamilies == NIL)
			continue;
		/* which side is rel's: relation_has_unique_index_for reads outer_is_left */
		if (bms_is_subset(ri->left_relids, joined) && bms_is_subset(ri->right_relids, rel->relids))
			ri->outer_is_left = true;
		else if (bms_is_subset(ri->right_relids, joined) &&
				 bms_is_subset(ri->left_relids, rel->relids))
			ri->outer_is_left = false;
		else
			continue;
		usable = lappend(usable, ri);
	}
	return usable != NIL && relation_has_unique_index_for(root, rel, usable, NIL, NIL);
}

/*
 * gj_special_join: the semi or anti join whose inner side is rel alone, or
 * NULL (gj_plan_input took only those)
 */
static SpecialJoinInfo *
gj_special_join(PlannerInfo *root, RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sj = lfirst(lc);

		/* a FULL join: only the top one of gj_top_outer */
		if (sj->jointype != JOIN_FULL && bms_equal(sj->syn_righthand, rel->relids))
			return sj;
	}
	return NULL;
}

/*
 * gj_top_outer_ok: is sj, a join of the relations all, a RIGHT or FULL
 * OUTER join the engine runs as its last depth: the top of the join tree
 * (its two sides are all of them), with a side of one table that keeps
 * every row of its side (PostgreSQL keeps a RIGHT join as a LEFT join with
 * the sides swapped: its left side; a FULL join keeps both)
 */
static bool
gj_top_outer_ok(const SpecialJoinInfo *sj, Relids all)
{
	Relids		l = sj->syn_lefthand,
				r = sj->syn_righthand;

	if (!bms_equal(bms_union(l, r), all) || bms_overlap(l, r))
		return false;
	if (sj->jointype == JOIN_LEFT)
		return bms_membership(l) == BMS_SINGLETON && bms_equal(sj->min_lefthand, l);
	return sj->jointype == JOIN_FULL &&
		(bms_membership(l) == BMS_SINGLETON || bms_membership(r) == BMS_SINGLETON);
}

/*
 * gj_top_outer: the top RIGHT or FULL join (gj_top_outer_ok) whose side of
 * one table is rel, which then joins last as a RIGHT or FULL depth; NULL
 * if none
 */
static SpecialJoinInfo *
gj_top_outer(PlannerInfo *root, RelOptInfo *rel, Relids all)
{
	ListCell   *lc;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sj = lfirst(lc);

		if (gj_top_outer_ok(sj, all) &&
			(bms_equal(sj->syn_lefthand, rel->relids) ||
			 (sj->jointype == JOIN_FULL && bms_equal(sj->syn_righthand, rel->relids))))
			return sj;
	}
	return NULL;
}

/*
 * gj_top_outer_why: why outer cannot be the outer relation of input_rel's
 * top RIGHT or FULL join, or NULL: it must lie on the side that is not
 * the depth's one table, except for a LEFT join of one table (then outer
 * may be its kept side, and the other table a LEFT depth)
 */
static const char *
gj_top_outer_why(PlannerInfo *root, Relids all, RelOptInfo *outer)
{
	ListCell   *lc;

	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sj = lfirst(lc);
		bool		in_left = bms_is_member(outer->relid, sj->syn_lefthand);
		Relids		other = in_left ? sj->syn_righthand : sj->syn_lefthand;

		if (!gj_top_outer_ok(sj, all) || bms_membership(other) == BMS_SINGLETON)
			continue;
		return "the outer relation would be the one table of a right or full join over "
			"several tables";
	}
	return NULL;
}

/*
 * gj_depth: rel as the next depth after the relations joined, or NULL with
 * *why saying why not
 */
static GjDepth *
gj_depth(PlannerInfo *root, Relids joined, RelOptInfo *rel, Relids all, const char **why)
{
	SpecialJoinInfo *top = gj_top_outer(root, rel, all);
	SpecialJoinInfo *sj = top ? top : gj_special_join(root, rel);
	bool		outer = sj != NULL && (sj->jointype == JOIN_LEFT || sj == top);
	Relids		jr = bms_union(joined, rel->relids);
	List	   *clauses = generate_join_implied_equalities(root, jr, joined, rel);
	GjDepth    *d = palloc0(sizeof(GjDepth));
	char	   *name = get_rel_name(planner_rt_fetch(rel->relid, root)->relid);
	List	   *key_ris = NIL;
	ListCell   *lc;

	foreach(lc, rel->joininfo)
	{
		RestrictInfo *ri = lfirst(lc);

		if (bms_is_subset(ri->required_relids, jr))
			clauses = lappend(clauses, ri);
	}
	foreach(lc, clauses)
	{
		RestrictInfo *ri = lfirst(lc);
		Expr	   *okey, *ikey;

		if (ri->pseudoconstant || ri->security_level > 0 ||
			gj_has_exec_param((Node *) ri->clause, NULL))
		{
			*why = "a join clause that is constant for the query, a security barrier "
				"or one with a value of an outer query";
			return NULL;
		}
		if (outer && RINFO_IS_PUSHED_DOWN(ri, jr))
			d->quals = lappend(d->quals, ri->clause);	/* a WHERE clause above the join */
		else if (list_length(d->outer_keys) < 3 && gj_key_clause(ri, joined, rel, &okey, &ikey))
		{
			d->outer_keys = lappend(d->outer_keys, okey);
			d->inner_keys = lappend(d->inner_keys, ikey);
			d->key_clauses = lappend(d->key_clauses, ri->clause);
			key_ris = lappend(key_ris, ri);
		}
		else if (outer)
		{
			*why = psprintf("the %s join of \"%s\" has clauses beyond equal keys",
							top == NULL ? "left" : top->jointype == JOIN_FULL ? "full" : "right",
							name ? name : "?");
			return NULL;
		}
		else
			d->quals = lappend(d->quals, ri->clause);
	}
	if (d->outer_keys == NIL)
	{
		*why = psprintf("no equality the engine compares joins \"%s\" to the relations before it",
						name ? name : "?");
		return NULL;
	}
	if (top != NULL)
	{
		/* RIGHT/FULL: the last depth, its unmatched inner rows emitted after the pass */
		if (!bms_is_subset(bms_difference(all, rel->relids), joined))
		{
			*why = psprintf("the %s join of \"%s\" is joined last (every other relation "
							"before it)", top->jointype == JOIN_FULL ? "full" : "right",
							name ? name : "?");
			return NULL;
		}
		d->unique = gj_keys_unique(root, joined, rel, key_ris);
		d->rel = rel;
		d->jointype = top->jointype == JOIN_FULL ? XPU_JOIN_FULL : XPU_JOIN_RIGHT;
		return d;
	}
	if (sj != NULL && sj->jointype != JOIN_LEFT)
	{
		/* EXISTS, IN (a semi join) or NOT EXISTS (an anti join): any match decides */
		if (!bms_is_subset(sj->min_lefthand, joined))
		{
			*why = psprintf("the semi or anti join of \"%s\" needs relations not joined before it",
							name ? name : "?");
			return NULL;
		}
		if (d->quals != NIL)
		{
			*why = psprintf("the semi or anti join of \"%s\" has clauses beyond equal keys",
							name ? name : "?");
			return NULL;
		}
		d->rel = rel;
		d->jointype = sj->jointype == JOIN_SEMI ? XPU_JOIN_SEMI : XPU_JOIN_ANTI;
		return d;
	}
	if (sj != NULL && !bms_is_subset(sj->min_lefthand, joined))
	{
		*why = psprintf("the left join of \"%s\" needs relations not joined before it",
						name ? name : "?");
		return NULL;
	}
	/* keys not known to be unique: the depth probes every match (row expansion) */
	d->unique = gj_keys_unique(root, joined, rel, key_ris);
	d->rel = rel;
	d->jointype = sj ? XPU_JOIN_LEFT : XPU_JOIN_INNER;
	return d;
}

/*
 * does depth d probe every match (an INNER, LEFT, RIGHT or FULL depth of
 * keys that may repeat; codegen probes a RIGHT/FULL depth of unique keys
 * in the same form, which yields one match)
 */
static bool
gj_depth_each(const GjDepth *d)
{
	return !d->unique && d->jointype != XPU_JOIN_SEMI && d->jointype != XPU_JOIN_ANTI;
}

/*
 * GJ_MAX_EXPANSION: a plan whose depths of keys that may repeat multiply
 * the outer rows by more than this (PostgreSQL's estimate) stays in
 * PostgreSQL: the engine would run each joined row through the program
 * and the aggregation, where PostgreSQL may choose another join order
 */
#define GJ_MAX_EXPANSION	100.0

/*
 * gj_depth_rows: PostgreSQL's estimate of the rows after depth d, whose
 * relations before it are joined (rows of them): the size of the join
 * relation of them and d's relation where the join search made one (what
 * PostgreSQL's own plan of that join estimates), else rows times d's rows
 * times the join selectivity of d's key clauses; a LEFT depth keeps every
 * row at least, a SEMI or ANTI depth at most every row, a depth of unique
 * keys at most one a row
 */
static double
gj_depth_rows(PlannerInfo *root, Relids joined, const GjDepth *d, double rows)
{
	RelOptInfo *jrel;
	double		out;

	if (d->jointype == XPU_JOIN_SEMI || d->jointype == XPU_JOIN_ANTI)
		return rows;
	jrel = find_join_rel(root, bms_union(joined, d->rel->relids));
	if (jrel != NULL)
		out = jrel->rows;
	else
	{
		SpecialJoinInfo sj;

		memset(&sj, 0, sizeof(sj));
		sj.type = T_SpecialJoinInfo;
		sj.min_lefthand = sj.syn_lefthand = joined;
		sj.min_righthand = sj.syn_righthand = d->rel->relids;
		sj.jointype = JOIN_INNER;
		out = clamp_row_est(rows * d->rel->rows *
							clauselist_selectivity(root, d->key_clauses, 0, JOIN_INNER, &sj));
	}
	if (d->unique)
		out = Min(out, rows);
	if (d->jointype == XPU_JOIN_LEFT || d->jointype == XPU_JOIN_FULL)
		out = Max(out, rows);
	if (d->jointype == XPU_JOIN_RIGHT || d->jointype == XPU_JOIN_FULL)
		out = Max(out, d->rel->rows);
	return out;
}

/*
 * gj_plan_depths: the depths of input_rel's joins with outer as the outer
 * relation, in probe order, or NIL with *why saying why not
 */
static List *
gj_plan_depths(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *outer, const char **why)
{
	Relids		joined = bms_copy(outer->relids);
	Relids		left = bms_difference(input_rel->relids, joined);
	List	   *depths = NIL;
	double		rows = outer->rows;

	while (!bms_is_empty(left))
	{
		GjDepth    *best = NULL;
		double		best_share = 0;
		const char *why1 = NULL;
		int			x = -1;

		while ((x = bms_next_member(left, x)) >= 0)
		{
			RelOptInfo *r = find_base_rel(root, x);
			GjDepth    *d = gj_depth(root, joined, r, input_rel->relids, &why1);
			double		share = r->rows / Max(r->tuples, 1.0);

			if (d != NULL && (best == NULL || share < best_share))
				best = d, best_share = share;
		}
		if (best == NULL)
			return (*why = why1), NIL;
		if (list_length(depths) >= XPU_MAX_MASK_DEPTH / 2)
			return (*why = psprintf("more than %d joins", XPU_MAX_MASK_DEPTH / 2)), NIL;
		best->rows_out = gj_depth_rows(root, joined, best, rows);
		if (gj_depth_each(best) && best->rows_out > GJ_MAX_EXPANSION * Max(outer->rows, 1.0))
		{
			char	   *name = get_rel_name(planner_rt_fetch(best->rel->relid, root)->relid);

			return (*why = psprintf("the join keys of \"%s\" are not known to be unique and "
									"PostgreSQL estimates %.0f joined rows from %.0f outer rows "
									"(GpuJoin takes at most %.0f times as many)",
									name ? name : "?", best->rows_out, outer->rows,
									GJ_MAX_EXPANSION)), NIL;
		}
		rows = best->rows_out;
		depths = lappend(depths, best);
		joined = bms_add_members(joined, best->rel->relids);
		left = bms_del_members(left, best->rel->relids);
	}
	return depths;
}

/*
 * gj_cheapest_safe_path: rel's cheapest unparameterized parallel-safe path
 * (a Gather path is never parallel-safe), or NULL
 */
static Path *
gj_cheapest_safe_path(RelOptInfo *rel)
{
	Path	   *best = NULL;
	ListCell   *lc;

	if (rel->cheapest_total_path != NULL && rel->cheapest_total_path->parallel_safe &&
		rel->cheapest_total_path->param_info == NULL)
		return rel->cheapest_total_path;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (p->parallel_safe && p->param_info == NULL &&
			(best == NULL || p->total_cost < best->total_cost))
			best = p;
	}
	return best;
}

/*
 * gj_inner_path: the plan of an inner relation's rows: a Gather over its
 * cheapest partial path where PostgreSQL has one (a table large enough for
 * parallel workers), else its cheapest path.  The inner plans run one after
 * the other in one backend before the outer scan; a serial scan of a large
 * dimension (SSB SF 20: part's 1 M rows) then took most of a star query's
 * time on the GPU host (bench/results/README.md).  PostgreSQL's cost of a
 * Gather (parallel_tuple_cost a row) is written for wide rows a plan goes on
 * with; an inner plan returns only the keys and the columns the query reads.
 */
static Path *
gj_inner_path(PlannerInfo *root, RelOptInfo *rel)
{
	GatherPath *gather;

	if (!rel->consider_parallel || rel->partial_pathlist == NIL ||
		!root->glob->parallelModeOK || max_parallel_workers_per_gather <= 0)
		return rel->cheapest_total_path;
	gather = create_gather_path(root, rel, linitial(rel->partial_pathlist), rel->reltarget,
								NULL, NULL);
	/*
	 * A parallel build's participants convert the rows and build the table
	 * as they scan (gpu_join_build.c), so more of them gain where PostgreSQL
	 * would count on the Gather's leader to take every row: a worker for
	 * each GJ_BUILD_ROWS_PER_WORKER rows of the relation, within
	 * max_parallel_workers_per_gather
	 */
	if (pg_warp_gpujoin_parallel_build)
		gather->num_workers = Max(gather->num_workers,
								  Min(max_parallel_workers_per_gather,
									  (int) (rel->tuples / GJ_BUILD_ROWS_PER_WORKER)));
	return (Path *) gather;
}

/*
 * gj_plan_parallel: makes gp's inner plans fit under a parallel GpuPreAgg,
 * whose leader builds the inner tables before the workers start
 * (gpu_preagg.c) and whose plan every worker receives: each inner
 * relation's cheapest parallel-safe path without a Gather of its own (no
 * Gather may run below another); false when a relation has none.
 */
bool
gj_plan_parallel(GjPlan *gp)
{
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);

		d->inner_path = gj_cheapest_safe_path(d->rel);
		if (d->inner_path == NULL)
			return false;
	}
	return true;
}

/* the larger relation first (qsort) */
static int
gj_cmp_tuples(const ListCell *a, const ListCell *b)
{
	double		ta = ((RelOptInfo *) lfirst(a))->tuples,
				tb = ((RelOptInfo *) lfirst(b))->tuples;

	return ta > tb ? -1 : ta < tb ? 1 : 0;
}

/*
 * gj_plan_checks: can the engine take input_rel's joins at all (their
 * kinds, every joined relation a table whose rows do not depend on a
 * rescan)?  Why not, or NULL.
 */
static const char *
gj_plan_checks(PlannerInfo *root, RelOptInfo *input_rel)
{
	int			x = -1;
	ListCell   *lc;

	if (!pg_warp_enable_gpujoin)
		return "pg_warp.enable_gpujoin is off";
	foreach(lc, root->join_info_list)
	{
		SpecialJoinInfo *sj = lfirst(lc);

		/* the RIGHT or FULL join of one table at the top (the last depth) */
		if (gj_top_outer_ok(sj, input_rel->relids))
			continue;
		/* EXISTS / IN / NOT EXISTS / LEFT JOIN of one table */
		if ((sj->jointype != JOIN_SEMI && sj->jointype != JOIN_ANTI &&
			 sj->jointype != JOIN_LEFT) ||
			bms_num_members(sj->syn_righthand) != 1 ||
			!bms_equal(sj->min_righthand, sj->syn_righthand))
			return "a right or full join below another join, or an outer, semi or anti "
				"join of several tables (GpuJoin takes inner joins, left, semi and anti "
				"joins of one table, and a right or full join of one table over all the "
				"others)";
	}
	if (root->placeholder_list != NIL || root->hasLateralRTEs)
		return "a LATERAL reference or a placeholder of a subquery";
	while ((x = bms_next_member(input_rel->relids, x)) >= 0)
	{
		RelOptInfo *r = find_base_rel(root, x);

		if (r->reloptkind != RELOPT_BASEREL || r->cheapest_total_path == NULL ||
			!bms_is_empty(r->lateral_relids) || r->rtekind != RTE_RELATION)
			return "a joined relation that is not a table";
		/* an inner table is built once: its rows must not depend on a rescan's values */
		foreach(lc, r->baserestrictinfo)
		{
			Node	   *clause = (Node *) ((RestrictInfo *) lfirst(lc))->clause;

			/* (a subquery's own parameters are no outer query's values) */
			if (contain_subplans(clause))
				return psprintf("\"%s\" is filtered by a subquery",
								get_rel_name(planner_rt_fetch(x, root)->relid));
			if (gj_has_exec_param(clause, NULL))
				return "a joined relation filtered by a value of an outer query";
		}
	}
	return NULL;
}

/*
 * gj_plan_with: input_rel's joins with outer as the outer relation, or
 * NULL with *why saying why not
 */
static GjPlan *
gj_plan_with(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *outer, const char **why)
{
	List	   *depths;
	GjPlan	   *gp;
	ListCell   *ld;

	if ((*why = gj_top_outer_why(root, input_rel->relids, outer)) != NULL)
		return NULL;
	if ((depths = gj_plan_depths(root, input_rel, outer, why)) == NIL)
		return NULL;
	foreach(ld, depths)
		((GjDepth *) lfirst(ld))->inner_path = gj_inner_path(root, ((GjDepth *) lfirst(ld))->rel);
	gp = palloc0(sizeof(GjPlan));
	gp->root = root;
	gp->outer = outer;
	gp->depths = depths;
	return gp;
}

/*
 * gj_plan_input: the joins of input_rel (the relation a grouping reads) as
 * the engine would run them, or NULL with *why saying why they stay in
 * PostgreSQL (NULL *why: input_rel is no join).  heap_ok(): may the outer
 * relation be a heap table (asked only of one the engine could read).  The
 * outer relation is the largest one the engine reads whose joins to the
 * others the engine runs, by probes of unique keys where one is (today's
 * star plans), else with depths whose probes meet every match.
 */
GjPlan *
gj_plan_input(PlannerInfo *root, RelOptInfo *input_rel, bool (*heap_ok) (void), const char **why)
{
	List	   *outers = NIL;
	GjPlan	   *best = NULL;
	int			x = -1;
	ListCell   *lc;

	*why = NULL;
	if (input_rel->reloptkind != RELOPT_JOINREL)
		return NULL;
	if ((*why = gj_plan_checks(root, input_rel)) != NULL)
		return NULL;
	while ((x = bms_next_member(input_rel->relids, x)) >= 0)
	{
		RelOptInfo *r = find_base_rel(root, x);

		SpecialJoinInfo *sj = gj_special_join(root, r);

		/* (the nullable side of a top RIGHT join may be the outer one) */
		if (ship_grouping_input(root, r, false, heap_ok) == NULL &&
			(sj == NULL || gj_top_outer_ok(sj, input_rel->relids)))
			outers = lappend(outers, r);
	}
	if (outers == NIL)
		return (*why = "no joined relation is an Arrow table or a heap table the engine reads"), NULL;
	list_sort(outers, gj_cmp_tuples);
	foreach(lc, outers)
	{
		const char *why1 = NULL;
		GjPlan	   *gp = gj_plan_with(root, input_rel, lfirst(lc), &why1);
		ListCell   *ld;
		bool		expands = false;

		if (gp == NULL)
		{
			if (*why == NULL)
				*why = why1;	/* the largest outer relation's reason */
			continue;
		}
		foreach(ld, gp->depths)
			expands |= gj_depth_each(lfirst(ld));
		/*
		 * the largest outer relation whose depths all probe unique keys, else
		 * the largest whose depths expand its rows: a star query of
		 * dimension keys keeps its fact table as the outer one
		 */
		if (!expands)
			return (*why = NULL), gp;
		if (best == NULL)
			best = gp;
	}
	if (best != NULL)
		*why = NULL;
	return best;
}

/*
 * gj_plan_outer: the joins of input_rel (a join relation) with outer, a
 * member of it (a partitioned table: gpu_join_part.c), as the outer
 * relation, or NULL with *why saying why not
 */
GjPlan *
gj_plan_outer(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *outer, const char **why)
{
	GjPlan	   *gp;

	*why = NULL;
	if (input_rel->reloptkind != RELOPT_JOINREL ||
		!bms_is_subset(outer->relids, input_rel->relids))
		return (*why = "no join"), NULL;
	if ((*why = gj_plan_checks(root, input_rel)) != NULL)
		return NULL;
	if (gj_special_join(root, outer) != NULL)
		return (*why = "the partitioned table is the inner side of an outer, semi or anti join"),
			NULL;
	if ((gp = gj_plan_with(root, input_rel, outer, why)) != NULL && gj_plan_outer_join(gp))
		return (*why = "a right or full join over a partitioned table (each partition's run "
				"would emit the unmatched rows)"), NULL;
	return gp;
}

/* does a depth of gp keep every inner row (RIGHT or FULL OUTER) */
bool
gj_plan_outer_join(const GjPlan *gp)
{
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);

		if (d->jointype == XPU_JOIN_RIGHT || d->jointype == XPU_JOIN_FULL)
			return true;
	}
	return false;
}

/*
 * gj_plan_child: gp (over a partitioned outer relation) for its partition
 * child, whose AppendRelInfo is ai: the outer keys and the join clauses
 * translated to the partition's columns; the inner side is the same
 */
GjPlan *
gj_plan_child(PlannerInfo *root, const GjPlan *gp, RelOptInfo *child, AppendRelInfo *ai)
{
	GjPlan	   *cp = palloc0(sizeof(GjPlan));
	ListCell   *lc;

	cp->root = gp->root;
	cp->outer = child;
	foreach(lc, gp->depths)
	{
		GjDepth    *d = palloc(sizeof(GjDepth));

		*d = *(GjDepth *) lfirst(lc);
		d->outer_keys = (List *) adjust_appendrel_attrs(root, (Node *) d->outer_keys, 1, &ai);
		d->key_clauses = (List *) adjust_appendrel_attrs(root, (Node *) d->key_clauses, 1, &ai);
		d->quals = (List *) adjust_appendrel_attrs(root, (Node *) d->quals, 1, &ai);
		cp->depths = lappend(cp->depths, d);
	}
	return cp;
}

/*
 * gj_plan_payload: each depth's payload: the columns of its relation that
 * the depths after it (keys, quals), its own quals and upper_exprs (the
 * grouping's keys and aggregate arguments) read, and the item that lets a
 * table be kept for later queries (gj_cache_plan, whose key names the
 * payload); why not, or NULL
 */
const char *
gj_plan_payload(GjPlan *gp, List *upper_exprs)
{
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);
		List	   *later = list_concat(list_copy(upper_exprs), d->quals);
		List	   *vars;
		ListCell   *lv;

		for_each_cell(lv, gp->depths, lnext(gp->depths, lc))
		{
			GjDepth    *e = lfirst(lv);

			later = list_concat(list_concat(later, e->outer_keys), e->quals);
		}
		vars = pull_var_clause((Node *) later, PVC_RECURSE_AGGREGATES |
							   PVC_RECURSE_PLACEHOLDERS);
		d->pay_vars = NIL;
		foreach(lv, vars)
		{
			Var		   *v = lfirst(lv);
			ListCell   *lp;
			bool		seen = false;

			if (!IsA(v, Var) || v->varno != d->rel->relid)
				continue;
			if (v->varattno <= 0 || v->varlevelsup != 0)
				return "a join reads a system column or the whole row of an inner relation";
			foreach(lp, d->pay_vars)
				seen |= ((Var *) lfirst(lp))->varattno == v->varattno;
			if (!seen)
				d->pay_vars = lappend(d->pay_vars, copyObject(v));
		}
		/* the key of a table kept for later queries names the payload too */
		d->cache_item = gj_cache_plan(gp->root, d);
	}
	return NULL;
}

/*
 * gj_plan_expands: does a depth of gp probe every match, so that the
 * engine's output rows may outnumber its input rows (a pipeline of one
 * output row an input row, GpuScan's projection, must refuse such a plan;
 * GpuPreAgg folds them all)
 */
bool
gj_plan_expands(const GjPlan *gp)
{
	ListCell   *lc;

	foreach(lc, gp->depths)
		if (gj_depth_each(lfirst(lc)))
			return true;
	return false;
}

/* the depths as codegen compiles them (CodegenJoin) */
List *
gj_codegen_joins(const GjPlan *gp)
{
	List	   *joins = NIL;
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);
		CodegenJoin *j = palloc0(sizeof(CodegenJoin));

		j->relid = d->rel->relid;
		j->jointype = d->jointype;
		j->outer_keys = d->outer_keys;
		j->quals = d->quals;
		j->pay_vars = d->pay_vars;
		j->each = gj_depth_each(d);
		joins = lappend(joins, j);
	}
	return joins;
}

/* the expressions the depths evaluate in the program (their outer keys and quals) */
List *
gj_outer_exprs(const GjPlan *gp)
{
	List	   *exprs = NIL;
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);

		exprs = list_concat(list_concat(exprs, d->outer_keys), d->quals);
	}
	return exprs;
}

/*
 * gj_private: what the plan keeps of each depth: (jointype, inner keys,
 * payload Vars, the join's clauses for EXPLAIN: the keys' then the others,
 * the number of the keys', gj_cache_plan's item or NIL, whether its keys may
 * repeat)
 */
List *
gj_private(const GjPlan *gp)
{
	List	   *priv = NIL;
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);

		List	   *item = list_make5(makeInteger(d->jointype), d->inner_keys, d->pay_vars,
									  list_concat(list_copy(d->key_clauses), d->quals),
									  makeInteger(list_length(d->key_clauses)));

		item = lappend(item, d->cache_item);
		priv = lappend(priv, lappend(item, makeInteger(gj_depth_each(d) ? 1 : 0)));
	}
	return priv;
}

/* the planner's cost of running the inner plans once */
double
gj_inner_cost(const GjPlan *gp)
{
	double		cost = 0;
	ListCell   *lc;

	foreach(lc, gp->depths)
	{
		GjDepth    *d = lfirst(lc);

		/* each inner row read, converted and put into the table */
		cost += d->inner_path->total_cost + d->rel->rows * cpu_tuple_cost;
	}
	/*
	 * the rows that depths of keys that may repeat add (their estimate past
	 * the outer rows, which the caller costs): each runs the program's rest
	 * and the aggregation as an outer row does
	 */
	if (gp->depths != NIL)
	{
		GjDepth    *last = llast(gp->depths);

		if (last->rows_out > gp->outer->rows)
			cost += (last->rows_out - gp->outer->rows) * pg_warp_engine_row_cost;
	}
	return cost;
}

/*
 * gj_inner_plan: the inner plan of a depth (its private item) made to return
 * the inner keys, then the payload columns
 */
static Plan *
gj_inner_plan(Plan *plan, List *depth_private)
{
	List	   *tlist = NIL;
	ListCell   *lc;
	AttrNumber	resno = 1;

	foreach(lc, list_concat(list_copy(lsecond(depth_private)), lthird(depth_private)))
		tlist = lappend(tlist, makeTargetEntry(copyObject(lfirst(lc)), resno++, NULL, false));
	plan = change_plan_targetlist(plan, tlist, plan->parallel_safe);
	/* a Gather's participants build the table's shares (gpu_join_build.c) */
	return pg_warp_gpujoin_parallel_build ? gj_build_plan(plan) : plan;
}

/*
 * gj_inner_plans: a node's custom plans after its fallback: the inner plans
 * (plans, one per depth of depth_privates) made to return the inner keys,
 * then the payload columns, and where several of them can run at once,
 * their scans under one Gather (gj_build_group).  *privates_out: the
 * depths' private items, each with where its plan is (gj_exec_init).
 */
List *
gj_inner_plans(List *plans, List *depth_privates, List **privates_out)
{
	List	   *inner = NIL;
	ListCell   *lc;

	foreach(lc, depth_privates)
		inner = lappend(inner, gj_inner_plan(list_nth(plans, foreach_current_index(lc)),
											 lfirst(lc)));
	return gj_build_group(inner, depth_privates, privates_out);
}

/* ---------------- execution ---------------- */

/*
 * The inner tables a query has loaded, shared by its nodes: a partitioned
 * outer table's per-partition GpuPreAggs join the same inner relations, and
 * each of them has its own copy of the inner plans; two groupings of one
 * query may join one dimension the same way.  A depth's table is keyed by
 * what decides its bytes: the depth's kind and number of keys, its inner
 * plan, whose target list is the inner keys and the payload
 * (gj_share_key_plan: without what differs between equal copies, tables
 * named by OID) and the types its probe compares.  One cache per executor
 * state, gone with its query context.
 */
typedef struct GjQueryTable
{
	char	   *key;
	uint64		join_id;
	double		rows;
	uint64		bytes;
	double		build_ms;
	bool		unique;			/* its keys are unique */
	const char *name;			/* the node that built it */
	const char *why;			/* join_id 0: why the engine cannot take it */
} GjQueryTable;

typedef struct GjQueryCache
{
	EState	   *estate;
	List	   *tables;			/* GjQueryTable, in the query's context */
	MemoryContextCallback cb;
} GjQueryCache;

static List *gj_query_caches;	/* GjQueryCache, one per running query (TopMemoryContext) */

static void
gj_cache_drop(void *arg)
{
	gj_query_caches = list_delete_ptr(gj_query_caches, arg);
}

/* the cache of estate's query, made on first use */
static GjQueryCache *
gj_cache(EState *estate)
{
	GjQueryCache *c;
	MemoryContext old;
	ListCell   *lc;

	foreach(lc, gj_query_caches)
		if (((GjQueryCache *) lfirst(lc))->estate == estate)
			return lfirst(lc);
	c = MemoryContextAllocZero(estate->es_query_cxt, sizeof(GjQueryCache));
	c->estate = estate;
	c->cb.func = gj_cache_drop;
	c->cb.arg = c;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &c->cb);
	old = MemoryContextSwitchTo(TopMemoryContext);
	gj_query_caches = lappend(gj_query_caches, c);
	MemoryContextSwitchTo(old);
	return c;
}

/*
 * gj_share_key_plan: s (nodeToString of an inner plan) without the values of
 * the fields that differ between equal copies of one plan (node ids, the
 * parameters PostgreSQL assigns to each copy), and with each range table
 * index of a table (a scan's, a Var's) replaced by the table's OID, so that
 * two scans of one table with the same quals and columns (one dimension
 * joined in two branches of a UNION ALL, say) are the same inner table
 */
static void
gj_share_key_plan(StringInfo key, const char *s, List *rtable)
{
	static const char *const drop[] = {":plan_node_id ", ":rescan_param ", ":extParam ",
	":allParam ", ":location "};
	static const char *const rti[] = {":scanrelid ", ":varno ", ":varnosyn "};

	while (*s)
	{
		int			f,
					r;
		int			depth = 0;

		for (f = 0; f < lengthof(drop); f++)
			if (strncmp(s, drop[f], strlen(drop[f])) == 0)
				break;
		for (r = 0; r < lengthof(rti); r++)
			if (strncmp(s, rti[r], strlen(rti[r])) == 0)
				break;
		if (r < lengthof(rti))
		{
			char	   *end;
			long		i = strtol(s + strlen(rti[r]), &end, 10);
			RangeTblEntry *rte = i >= 1 && i <= list_length(rtable) ?
				rt_fetch(i, rtable) : NULL;

			if (rte != NULL && rte->rtekind == RTE_RELATION)
			{
				appendStringInfo(key, "%soid%u", rti[r], rte->relid);
				s = end;
				continue;
			}
		}
		if (f == lengthof(drop))
		{
			appendStringInfoChar(key, *s++);
			continue;
		}
		appendStringInfoString(key, drop[f]);
		s += strlen(drop[f]);
		/* the value: one token, or a parenthesized group */
		while (*s && (depth > 0 || (*s != ' ' && *s != '}' && *s != ')') || *s == '('))
		{
			depth += *s == '(' ? 1 : *s == ')' ? -1 : 0;
			s++;
		}
	}
}

/*
 * gj_plan_volatile: does plan (an inner plan: scans, a Gather, a Result)
 * evaluate a volatile function, whose rows another copy of the plan need
 * not return?
 */
static bool
gj_plan_volatile(Plan *plan)
{
	if (plan == NULL)
		return false;
	if (IsA(plan, CustomScan))
	{
		ListCell   *lc;

		/* a parallel build (gpu_join_build.c) over its scan */
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			if (gj_plan_volatile(lfirst(lc)))
				return true;
	}
	return contain_volatile_functions((Node *) plan->qual) ||
		contain_volatile_functions((Node *) plan->targetlist) ||
		(IsA(plan, Result) && contain_volatile_functions(((Result *) plan)->resconstantqual)) ||
		gj_plan_volatile(plan->lefttree) || gj_plan_volatile(plan->righttree);
}

/* gj_exec_init: the depths of a plan (private: gj_private's) over their inner plans */
GjInner *
gj_exec_init(List *private, List *inner_ps, int *n_depths)
{
	GjInner    *inner;
	StringInfoData key;
	ListCell   *lc;

	*n_depths = list_length(private);
	if (*n_depths == 0)
		return NULL;
	inner = palloc0(sizeof(GjInner) * *n_depths);
	foreach(lc, private)
	{
		int			d = foreach_current_index(lc);
		List	   *dp = lfirst(lc);
		/* where its inner plan is: an inner plan of its own, or a child of a group's */
		PlanState  *ps = list_nth(inner_ps, intVal(list_nth(dp, 7)));
		int			child = intVal(list_nth(dp, 8));

		inner[d].ps = ps;
		if (child >= 0)
		{
			AppendState *as = (AppendState *) outerPlanState(ps);
			GjGroup    *grp = NULL;

			if (!IsA(ps, GatherState) || as == NULL || !IsA(as, AppendState) ||
				child >= as->as_nplans)
				elog(ERROR, "GpuJoin: depth %d's inner plan is not in its group", d + 1);
			/* the depths of one group share it */
			for (int e = 0; e < d && grp == NULL; e++)
				if (inner[e].group != NULL && inner[e].group->ps == ps)
					grp = inner[e].group;
			if (grp == NULL)
			{
				grp = palloc0(sizeof(GjGroup));
				grp->ps = ps;
			}
			inner[d].group = grp;
			inner[d].ps = as->appendplans[child];
		}
		inner[d].jointype = intVal(linitial(dp));
		inner[d].n_key_clauses = intVal(list_nth(dp, 4));
		inner[d].cache_item = list_nth(dp, 5);
		inner[d].n_keys = list_length(lsecond(dp));
		inner[d].each = intVal(list_nth(dp, 6)) != 0;
		/* the inner plan's target list is the inner keys, then the payload */
		if (gj_plan_volatile(inner[d].ps->plan))
			continue;			/* its own table (share_key NULL) */
		initStringInfo(&key);
		appendStringInfo(&key, "jointype %d keys %d ", inner[d].jointype, inner[d].n_keys);
		gj_share_key_plan(&key, nodeToString(inner[d].ps->plan),
						  inner[d].ps->state->es_range_table);
		inner[d].share_key = key.data;
	}
	return inner;
}

/* gj_exec_name: the name EXPLAIN gives the node of the depths inner (n of them) */
void
gj_exec_name(GjInner *inner, int n, const char *name)
{
	for (int d = 0; d < n; d++)
		inner[d].name = name;
}

/*
 * gj_value: Datum d of type typid (an inner key or payload column of the
 * engine's type type, numeric scale scale) as the engine's value; false
 * where the engine cannot hold it (a numeric beyond its fixed-point form)
 */
static bool
gj_value(Datum d, Oid typid, XpuType type, int scale, XpuValue *v)
{
	memset(v, 0, sizeof(*v));
	switch (type)
	{
		case XPU_T_BOOL: v->i = DatumGetBool(d) ? 1 : 0; return true;
		case XPU_T_INT2: v->i = DatumGetInt16(d); return true;
		case XPU_T_INT4: v->i = DatumGetInt32(d); return true;
		case XPU_T_DATE: v->i = DatumGetDateADT(d); return true;
		case XPU_T_INT8:
		case XPU_T_TIMESTAMP:
		case XPU_T_TIMESTAMPTZ: v->i = DatumGetInt64(d); return true;
		case XPU_T_FLOAT4: v->f4 = DatumGetFloat4(d); return true;
		case XPU_T_FLOAT8: v->f8 = DatumGetFloat8(d); return true;
		case XPU_T_TEXT:
			{
				/* a copy in the batch's context: the slot's tuple goes at the next row */
				text	   *t = DatumGetTextPP(d);
				char	   *copy = palloc(Max(VARSIZE_ANY_EXHDR(t), 1));

				memcpy(copy, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				v->t.p = copy;
				v->t.len = VARSIZE_ANY_EXHDR(t);
				return true;
			}
		case XPU_T_NUMERIC:
			{
				__int128	n;
				int			s;

				if (!codegen_numeric_value(d, &n, &s) || s > scale)
					return false;
				for (; s < scale; s++)
				{
					if (xpu_abs128(n) > xpu_num_max() / 10)
						return false;
					n *= 10;
				}
				v->n = n;
				return true;
			}
		default:
			return false;
	}
}

/* the key registers' types of depth d's probe in prog (its JOIN_PROBE) */
static bool
gj_probe_types(const XpuProgram *prog, int d, XpuJoinKeyDesc *keys, int n_keys)
{
	const XpuInstr *in = XPU_INSTRS(prog);

	for (int pc = 0; pc < prog->n_instrs; pc++)
	{
		int			regs[3];

		if (in[pc].op != XPU_OP_JOIN_PROBE || XPU_JOIN_IMM_DEPTH(in[pc].imm) != d)
			continue;
		if (XPU_JOIN_IMM_ARG(in[pc].imm) != n_keys)
			return false;
		regs[0] = in[pc].a, regs[1] = in[pc].b, regs[2] = in[pc].c;
		for (int k = 0; k < n_keys; k++)
		{
			keys[k].probe_type = XPU_REGS(prog)[regs[k]].type;
			keys[k].probe_scale = XPU_REGS(prog)[regs[k]].scale;
		}
		return true;
	}
	return false;
}

#define GJ_BATCH	1024		/* inner rows per xpu_join_builder_add */

/* why the builder refused an inner table, in the user's terms */
const char *
gj_build_why(const XpuError *err)
{
	if (strstr(err->message, "size limit") != NULL)
		return "an inner table larger than pg_warp.gpujoin_inner_limit";
	return psprintf("an inner table the engine cannot build (%s)", err->message);
}

/* the next row of an inner plan run in this process (GjNextRow) */
TupleTableSlot *
gj_next_exec(void *arg)
{
	return ExecProcNode((PlanState *) arg);
}

/*
 * gj_add_rows: every row next returns (until NULL: an inner plan's rows,
 * keys then payload columns, as gs says) into builder b, GJ_BATCH rows at
 * a time, counted in *rows; false (why) where a value does not fit the
 * engine or the builder refuses the table
 */
bool
gj_add_rows(GjNextRow next, void *arg, const GjSpec *gs, XpuJoinBuilder *b, double *rows,
			const char **why)
{
	const XpuJoinSpec *spec = &gs->spec;
	int			nk = spec->n_keys,
				np = spec->n_pay;
	/* XpuValue holds an int128: 16-byte aligned, beyond palloc's alignment */
	XpuValue   *keys = (XpuValue *) TYPEALIGN(16, palloc(sizeof(XpuValue) * nk * GJ_BATCH + 15));
	uint8	   *knulls = palloc(nk * GJ_BATCH);
	XpuValue   *pay = (XpuValue *) TYPEALIGN(16, palloc(sizeof(XpuValue) * Max(np, 1) * GJ_BATCH + 15));
	uint8	   *pnulls = palloc(Max(np, 1) * GJ_BATCH);
	MemoryContext batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "GpuJoin inner rows",
													ALLOCSET_DEFAULT_SIZES);
	MemoryContext old;
	XpuError	err = {0};
	int			n = 0;
	bool		done = false;

	while (!done)
	{
		TupleTableSlot *slot;

		CHECK_FOR_INTERRUPTS();
		slot = next(arg);
		done = TupIsNull(slot);
		if (!done)
		{
			slot_getallattrs(slot);
			old = MemoryContextSwitchTo(batch_cxt);
			for (int c = 0; c < nk + np; c++)
			{
				bool		isnull = slot->tts_isnull[c];
				XpuType		type = c < nk ? (XpuType) spec->keys[c].type :
					(XpuType) spec->pay_types[c - nk];
				int			scale = c < nk ? spec->keys[c].scale : 0;
				XpuValue   *v = c < nk ? &keys[c * GJ_BATCH + n] : &pay[(c - nk) * GJ_BATCH + n];
				uint8	   *vn = c < nk ? &knulls[c * GJ_BATCH + n] : &pnulls[(c - nk) * GJ_BATCH + n];

				if (c >= nk && type == XPU_T_NUMERIC)
					scale = gs->pay_scales[c - nk];
				*vn = isnull;
				if (!isnull && !gj_value(slot->tts_values[c], gs->typids[c], type, scale, v))
				{
					MemoryContextSwitchTo(old);
					*why = "an inner value the engine does not hold exactly";
					return false;
				}
			}
			MemoryContextSwitchTo(old);
			(*rows)++;
			n++;
		}
		if (n == GJ_BATCH || (done && n > 0))
		{
			/* the builder's layout wants each column's n values together */
			for (int c = 1; c < nk; c++)
			{
				memmove(&keys[c * n], &keys[c * GJ_BATCH], sizeof(XpuValue) * n);
				memmove(&knulls[c * n], &knulls[c * GJ_BATCH], n);
			}
			for (int c = 1; c < np; c++)
			{
				memmove(&pay[c * n], &pay[c * GJ_BATCH], sizeof(XpuValue) * n);
				memmove(&pnulls[c * n], &pnulls[c * GJ_BATCH], n);
			}
			if (!xpu_join_builder_add(b, n, keys, knulls, pay, pnulls, &err))
			{
				*why = gj_build_why(&err);
				return false;
			}
			MemoryContextReset(batch_cxt);
			n = 0;
		}
	}
	MemoryContextDelete(batch_cxt);
	return true;
}

/*
 * gj_inner_spec: what the table of an inner plan whose target list is tlist
 * (n_keys keys, then the payload) holds, but the probe types, which the
 * program gives (gj_probe_types)
 */
static void
gj_inner_spec(List *tlist, int n_keys, GjSpec *gs)
{
	ListCell   *lc;

	memset(gs, 0, sizeof(*gs));
	gs->spec.n_keys = n_keys;
	gs->spec.n_pay = list_length(tlist) - n_keys;
	gs->spec.form = XPU_JOIN_AUTO;
	gs->spec.max_bytes = (uint64) pg_warp_gpujoin_inner_limit * 1024 * 1024;
	foreach(lc, tlist)
	{
		TargetEntry *te = lfirst(lc);
		int			c = foreach_current_index(lc);
		int			scale;
		XpuType		t = codegen_value_type(exprType((Node *) te->expr),
										   exprTypmod((Node *) te->expr), &scale);

		gs->typids[c] = exprType((Node *) te->expr);
		if (c < n_keys)
		{
			gs->spec.keys[c].type = (uint8) t;
			gs->spec.keys[c].scale = (int16) scale;
		}
		else
		{
			gs->spec.pay_types[c - n_keys] = (uint8) t;
			gs->pay_scales[c - n_keys] = (int16) scale;
		}
	}
}

/*
 * gj_find: depth d's table as an earlier query left it with the service,
 * if the relation did not change since (g takes it: true); else what
 * building it needs into *f: its spec, and where it may be kept, its key
 * and the version of the rows before they are read
 */
bool
gj_find(GjInner *g, int d, const XpuProgram *prog, GjFind *f)
{
	Relation	rel;
	XpuJoinSpec *spec = &f->gs.spec;

	memset(f, 0, sizeof(*f));
	gj_inner_spec(g->ps->plan->targetlist, g->n_keys, &f->gs);
	if (!gj_probe_types(prog, d, spec->keys, spec->n_keys))
		elog(ERROR, "GpuJoin: the program does not probe depth %d with %d keys", d, spec->n_keys);
	/* keys the planner proved unique (gj_keys_unique): no pass for repeats before the layout */
	spec->unique_keys = !g->each && g->jointype != XPU_JOIN_SEMI && g->jointype != XPU_JOIN_ANTI;
	if (g->cache_item == NIL || !pg_warp_gpujoin_cache)
		return false;
	rel = table_open((Oid) strtoul(strVal(linitial(g->cache_item)), NULL, 10), NoLock);
	if (gj_cache_version(rel, f->version))
	{
		WarpJoinLoaded found;

		gj_cache_key(g->cache_item, rel, spec, f->gs.pay_scales, f->key);
		f->relid = RelationGetRelid(rel);
		service_join_find(f->key, f->version, &found);
		if (found.join_id != 0 && found.bytes <= spec->max_bytes)
		{
			g->join_id = found.join_id;
			g->rows = (double) found.rows;
			g->bytes = found.bytes;
			g->unique = (found.flags & XPU_JOIN_UNIQUE) != 0;
			g->from_cache = true;
		}
	}
	table_close(rel, NoLock);
	return g->from_cache;
}

/* the key of depth d's table among the query's (GjQueryTable) */
char *
gj_query_key(GjInner *g, int d, const XpuProgram *prog)
{
	XpuJoinKeyDesc keys[XPU_JOIN_MAX_KEYS];
	StringInfoData key;

	memset(keys, 0, sizeof(keys));
	if (!gj_probe_types(prog, d, keys, g->n_keys))
		elog(ERROR, "GpuJoin: the program does not probe depth %d with %d keys", d, g->n_keys);
	initStringInfo(&key);
	appendStringInfoString(&key, g->share_key);
	for (int k = 0; k < g->n_keys; k++)
		appendStringInfo(&key, " probe %d:%d", keys[k].probe_type, keys[k].probe_scale);
	return key.data;
}

/*
 * gj_query_find: depth d's table as another node of the query loaded it:
 * 1 (g takes it), -1 where that node found it would not fit (why), 0 where
 * no node loaded it (or g's table is its own)
 */
int
gj_query_find(GjInner *g, int d, const XpuProgram *prog, const char **why)
{
	GjQueryCache *cache;
	char	   *key;
	ListCell   *lc;

	if (g->share_key == NULL)
		return 0;
	cache = gj_cache(g->ps->state);
	key = gj_query_key(g, d, prog);
	foreach(lc, cache->tables)
	{
		GjQueryTable *t = lfirst(lc);

		if (strcmp(t->key, key) != 0)
			continue;
		if (t->join_id == 0)
			return (*why = t->why), -1;
		g->join_id = t->join_id;
		g->rows = t->rows;
		g->bytes = t->bytes;
		g->build_ms = t->build_ms;
		g->unique = t->unique;
		g->shared_with = t->name;
		return 1;
	}
	return 0;
}

/*
 * gj_exec_load: the inner tables of the n depths, built and loaded once
 * for the query (prog: the node's program, whose probes give the outer key
 * types): a depth whose table another node of the query loaded (the
 * query's cache, GjQueryTable) takes its join id, one that another node could
 * not build is not built again; false with *why where one stays with
 * PostgreSQL.  The depths of a group have their scans run at once first.
 */
bool
gj_exec_load(GjInner *inner, int n, const XpuProgram *prog, GjBuildStart *start,
			 const char **why)
{
	GjTables   *made;
	bool		ok = true;

	if (!gj_build_groups(inner, n, prog, start, why))
		return false;
	/* a group's tables made at once (gpu_join_table.c), then loaded in order */
	made = gj_tables_make(inner, n, prog, start);
	PG_TRY();
	{
		for (int d = 0; d < n && ok; d++)
		{
			GjInner    *g = &inner[d];
			int			found;

			if (g->join_id != 0)
				continue;
			if ((found = gj_query_find(g, d, prog, why)) != 0)
			{
				ok = found > 0;
				continue;
			}
			ok = gj_load(g, d, prog, start, made, why);
			gj_query_add(g, d, prog, ok ? NULL : *why);
		}
	}
	PG_FINALLY();
	{
		gj_tables_discard(made);
	}
	PG_END_TRY();
	return ok;
}

/*
 * gj_query_add: depth d's table (g's join id; why: why it has none, else
 * NULL) among the query's, for the other nodes that share its key
 */
void
gj_query_add(GjInner *g, int d, const XpuProgram *prog, const char *why)
{
	GjQueryCache *cache;
	GjQueryTable *t;
	MemoryContext old;

	if (g->share_key == NULL)
		return;
	cache = gj_cache(g->ps->state);
	old = MemoryContextSwitchTo(g->ps->state->es_query_cxt);
	t = palloc0(sizeof(GjQueryTable));
	t->why = why != NULL ? pstrdup(why) : NULL;
	t->key = gj_query_key(g, d, prog);
	t->join_id = why != NULL ? 0 : g->join_id;
	t->rows = g->rows;
	t->bytes = g->bytes;
	t->build_ms = g->build_ms;
	t->unique = g->unique;
	t->name = g->name ? pstrdup(g->name) : "another node";
	cache->tables = lappend(cache->tables, t);
	MemoryContextSwitchTo(old);
}

/*
 * gj_shared_build: the leader of a parallel node builds its n depths'
 * tables and loads them into the service once for the query, before the
 * workers start (the node's dsm_init; reinit: a rescan's, which keeps what
 * was built), into sh: every participant's run probes the same tables,
 * which live while the leader's join connection does.  cannot: why they
 * may not be built (the service unreachable), or NULL.  Returns why they
 * stay in PostgreSQL, or NULL.
 */
const char *
gj_shared_build(GjShared *sh, bool reinit, GjInner *inner, int n, const XpuProgram *prog,
				const char *cannot)
{
	const char *why = cannot;

	if (!reinit)
		sh->state = GJ_SHARED_NONE;
	if (sh->state != GJ_SHARED_NONE)
		return sh->state == GJ_SHARED_REFUSED ? pstrdup(sh->why) : NULL;
	Assert(n <= WARP_MAX_JOINS);
	if (why == NULL && gj_exec_load(inner, n, prog, NULL, &why))
	{
		for (int d = 0; d < n; d++)
			sh->ids[d] = inner[d].join_id;
		sh->state = GJ_SHARED_BUILT;
		return NULL;
	}
	sh->state = GJ_SHARED_REFUSED;
	strlcpy(sh->why, why, sizeof(sh->why));
	return why;
}

/*
 * gj_shared_take: a participant's depths probe the tables the leader built
 * (sh); false with *why where they stay in PostgreSQL
 */
bool
gj_shared_take(const GjShared *sh, GjInner *inner, int n, const char **why)
{
	if (sh->state != GJ_SHARED_BUILT)
	{
		*why = pstrdup(sh->state == GJ_SHARED_REFUSED ? sh->why :
					   "the leader did not build the inner tables");
		return false;
	}
	for (int d = 0; d < n; d++)
		inner[d].join_id = sh->ids[d];
	return true;
}

/*
 * gj_exec_shutdown: the depths' tables are loaded and the node's run is
 * asked for: their inner plans are done, and their Gathers let their
 * workers go now (ExecShutdownNode, as a Limit does once it has its rows)
 * rather than at the end of the query, so that the wait for the workers'
 * exit (5.6 ms of Q4.2's first run on the H200 host, 13 workers) passes
 * while the service runs.  What the leader took of a build's images is let
 * go first: they live in the Gather's DSA.  A rescan starts a Gather anew.
 */
void
gj_exec_shutdown(GjInner *inner, int n)
{
	for (int d = 0; d < n; d++)
	{
		GjInner    *g = &inner[d];
		PlanState  *node = g->group != NULL ? g->ps : gj_build_node(g->ps);

		if (node != NULL)
			gj_build_release(node);
		(void) ExecShutdownNode(g->group != NULL ? g->group->ps : g->ps);
	}
}

/*
 * gj_exec_end: the node is done with its depths' tables: the service drops
 * them (unless a run holds one, or keeps it for later queries)
 */
void
gj_exec_end(GjInner *inner, int n)
{
	for (int d = 0; d < n; d++)
	{
		/* a table another node of the query loaded is that node's to drop */
		if (inner[d].shared_with == NULL)
			service_join_drop(inner[d].join_id);
		inner[d].join_id = 0;
	}
}

/*
 * gj_explain: a line per depth: its join (clauses: per depth, the clauses
 * as the node's scan tuple holds them), with ANALYZE its inner table
 */
void
gj_explain(GjInner *inner, int n, List *clauses, List *ctx, bool analyze, ExplainState *es)
{
	ListCell   *lc;

	foreach(lc, clauses)
	{
		int			d = foreach_current_index(lc);
		char	   *label = psprintf("Join Depth %d", d + 1);
		List	   *keys = list_copy_head(lfirst(lc), inner[d].n_key_clauses);
		List	   *others = list_copy_tail(lfirst(lc), inner[d].n_key_clauses);
		StringInfoData s;

		initStringInfo(&s);
		appendStringInfo(&s, "%s Join on %s",
						 inner[d].jointype == XPU_JOIN_SEMI ? "Semi" :
						 inner[d].jointype == XPU_JOIN_ANTI ? "Anti" :
						 inner[d].jointype == XPU_JOIN_LEFT ? "Left" :
						 inner[d].jointype == XPU_JOIN_RIGHT ? "Right" :
						 inner[d].jointype == XPU_JOIN_FULL ? "Full" : "Inner",
						 deparse_expression((Node *) make_ands_explicit(keys), ctx, true, false));
		/* an inner join's quals beyond the keys; the WHERE clauses over an outer join */
		if (others != NIL)
			appendStringInfo(&s, ", %s %s",
							 inner[d].jointype != XPU_JOIN_INNER ? "then filter" : "join filter",
							 deparse_expression((Node *) make_ands_explicit(others), ctx, true,
												false));
		/*
		 * a probe of every match: the keys may repeat, the rows expand;
		 * with ANALYZE, an inner table whose keys turned out unique has one
		 * match a row at most (the CPU engine then runs the depth vectorised)
		 */
		if (inner[d].each)
			appendStringInfoString(&s, ", every match");
		if (analyze && inner[d].each && inner[d].join_id != 0 && inner[d].unique)
			appendStringInfoString(&s, " (the keys are unique)");
		if (analyze && inner[d].join_id != 0 && inner[d].shared_with != NULL)
			appendStringInfo(&s, " (inner table shared with %s", inner[d].shared_with);
		else if (analyze && inner[d].join_id != 0)
		{
			appendStringInfo(&s, " (inner rows %.0f, table %llu kB, %s in %.3f ms",
							 inner[d].rows, (unsigned long long) (inner[d].bytes + 1023) / 1024,
							 inner[d].from_cache ? "kept from an earlier query, found" : "built",
							 inner[d].build_ms);
			/* where a build's time went: a group's scans are each of its depths' */
			if (es->verbose && !inner[d].from_cache)
			{
				appendStringInfo(&s, ": %s %.3f, table %.3f, load %.3f",
								 inner[d].group != NULL ? "group scans" : "scan",
								 inner[d].scan_ms, inner[d].table_ms, inner[d].load_ms);
				/* its memory made while the rows were scanned (gj_table_prepare) */
				if (inner[d].prepared_bytes > 0)
					appendStringInfo(&s, "; memory made during the scan %llu kB%s",
									 (unsigned long long) (inner[d].prepared_bytes + 1023) / 1024,
									 inner[d].prepared_used ? "" :
									 ", not used (over twice the table's)");
			}
		}
		/* the rows into and out of the depth (gpu_join_rows.c) */
		if (analyze && inner[d].join_id != 0)
		{
			gj_rows_explain(inner, d, &s, es);
			appendStringInfoChar(&s, ')');
		}
		ExplainPropertyText(label, s.data, es);
	}
	if (analyze)
		gj_rows_explain_group(inner, n, es);
}

/* pg_warp_gpu_join_init: GpuJoin's settings (from _PG_init) */
void
pg_warp_gpu_join_init(void)
{
	gj_cache_init();
	gj_build_init();
	DefineCustomBoolVariable("pg_warp.enable_gpujoin",
							 "Lets the planner run the inner joins under a GpuPreAgg in the engine.",
							 NULL, &pg_warp_enable_gpujoin, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.gpujoin_parallel_build",
							 "Lets the parallel workers of a GpuJoin inner scan build its table.",
							 "Off: the rows go through the Gather to the backend that builds the table.",
							 &pg_warp_gpujoin_parallel_build, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("pg_warp.gpujoin_read_ahead_cost",
							 "Lets the service read a GpuJoin's Arrow columns into the GPU cache "
							 "while an inner table of at least this cost is built.",
							 "-1: never; the run then reads them once the tables are built.",
							 &pg_warp_gpujoin_read_ahead_cost, 1000, -1, DBL_MAX,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warp.gpujoin_inner_limit",
							"The largest inner table of one GpuJoin depth.",
							"A join whose inner rows need more runs in PostgreSQL.",
							&pg_warp_gpujoin_inner_limit, 4096, 1, INT_MAX / 2,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
}
