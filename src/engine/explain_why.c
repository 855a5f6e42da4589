/*-------------------------------------------------------------------------
 *
 * explain_why.c
 *		Why a query, or a part of it, stays in PostgreSQL: the one line that
 *		EXPLAIN (VERBOSE) shows.
 *
 * While EXPLAIN (VERBOSE) plans a query (ExplainOneQuery_hook), the planner
 * paths note why they offered no engine path or kept a qual out of one
 * (explain_why_note and friends): the first expression that does not
 * compile and why (codegen_why_not), deparsed; the shape of the query
 * (a join below the grouping, grouping sets, ...); a setting that is off;
 * an engine path that the cost estimate did not choose.  An engine node of
 * the plan shows the note of its own relation ("Not in engine:",
 * explain_why_show); the first note of the highest rank that no node showed
 * is printed after the plan as one line "pg_warp: ..." (a "pg_warp"
 * property of the query in the other formats).  Outside EXPLAIN (VERBOSE)
 * the notes cost one test of a flag.
 *
 * Notes are kept only for the planning that the hook wraps: EXPLAIN
 * EXECUTE of a prepared statement planned earlier shows none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"
#include "executor/instrument.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "tcop/tcopprot.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"

#include "pg_warp.h"
#include "engine/codegen.h"

/* the rank of a note: the highest one is the query's line */
typedef enum WhyRank
{
	WHY_COST = 1,				/* an engine path the estimate did not choose */
	WHY_SCAN,					/* a qual that GpuScan leaves to PostgreSQL */
	WHY_GROUPING,				/* a grouping that GpuPreAgg does not take */
	WHY_SETTING					/* a setting that turns the engine off */
} WhyRank;

typedef struct WhyNote
{
	WhyRank		rank;
	Oid			relid;			/* the relation it is about, or InvalidOid */
	char	   *text;
	bool		shown;			/* printed on a node of the plan */
} WhyNote;

/* an engine path offered to the planner (explain_why_offered) */
typedef struct WhyOffer
{
	const char *node;
	Cost		cost;
	Cost		best_other;
} WhyOffer;

static bool why_collecting = false;
static List *why_notes = NIL;	/* WhyNotes, in the order noted */
static List *why_offers = NIL;	/* WhyOffers */

static ExplainOneQuery_hook_type prev_explain_one_query = NULL;

/* a new note (the text is kept as is); the same text twice is one note */
static void
why_add(WhyRank rank, Oid relid, char *text)
{
	WhyNote    *n;
	ListCell   *lc;

	foreach(lc, why_notes)
	{
		if (strcmp(((WhyNote *) lfirst(lc))->text, text) == 0)
			return;
	}
	n = palloc0(sizeof(WhyNote));
	n->rank = rank;
	n->relid = relid;
	n->text = text;
	why_notes = lappend(why_notes, n);
}

/* expr of relation relid (of root's range table) in SQL, briefly */
static char *
why_deparse(PlannerInfo *root, Index relid, Expr *expr)
{
	RangeTblEntry *rte = planner_rt_fetch(relid, root);
	Node	   *e = copyObject((Node *) expr);
	char	   *name = rte->rtekind == RTE_RELATION ? get_rel_name(rte->relid) : NULL;

	Relids		rels = pull_varnos(root, e);

	if (!bms_is_empty(rels) && !bms_equal(rels, bms_make_singleton(relid)))
	{
		/* the columns of a join (GpuJoin): the query's range table names them */
		PlannedStmt *ps = makeNode(PlannedStmt);

		ps->rtable = root->parse->rtable;
		return deparse_expression(e, deparse_context_for_plan_tree(ps,
																	select_rtable_names_for_explain(ps->rtable,
																									bms_add_range(NULL, 1, list_length(ps->rtable)))),
								  true, false);
	}
	if (name == NULL)
		return nodeToString(e);
	/* the relation alone in a range table of one: its Vars are varno 1 */
	ChangeVarNodes(e, relid, 1, 0);
	return deparse_expression(e, deparse_context_for(name, rte->relid), false, true);
}

/*
 * explain_why_codegen: notes why a compilation for node (GpuScan,
 * GpuPreAgg) over relation relid failed, from codegen_why_not(): call it
 * right after the failing codegen call.  fallback: the expression to name
 * where codegen named none.
 */
void
explain_why_codegen(PlannerInfo *root, Index relid, const char *node, Expr *fallback)
{
	const CodegenWhyNot *w;
	Expr	   *e;

	if (!why_collecting)
		return;
	w = codegen_why_not();
	e = w->expr ? w->expr : fallback;
	why_add(strcmp(node, "GpuScan") == 0 ? WHY_SCAN : WHY_GROUPING,
			planner_rt_fetch(relid, root)->relid,
			e ? psprintf("%s: %s: %s", node, why_deparse(root, relid, e),
						 w->why[0] ? w->why : "not compiled") :
			psprintf("%s: %s", node, w->why[0] ? w->why : "not compiled"));
}

/*
 * explain_why_rel: notes why node (GpuScan, GpuPreAgg) does not take
 * relation relid of root's range table (a reason from shippable.c)
 */
void
explain_why_rel(PlannerInfo *root, Index relid, const char *node, const char *why)
{
	if (!why_collecting)
		return;
	why_add(strcmp(node, "GpuScan") == 0 ? WHY_SCAN : WHY_GROUPING,
			planner_rt_fetch(relid, root)->relid, psprintf("%s: %s", node, why));
}

/* explain_why_note: notes a reason of rank grouping (GpuPreAgg's) */
void
explain_why_note(const char *fmt,...)
{
	va_list		ap;
	char		buf[256];

	if (!why_collecting)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	why_add(WHY_GROUPING, InvalidOid, pstrdup(buf));
}

/*
 * explain_why_offered: an engine path node (its total cost) offered to rel,
 * beside PostgreSQL's paths of rel: if the plan ends up without that
 * node, the estimate chose PostgreSQL's (noted at the end of planning)
 */
void
explain_why_offered(RelOptInfo *rel, const char *node, Cost cost)
{
	WhyOffer   *o;
	ListCell   *lc;

	if (!why_collecting)
		return;
	o = palloc0(sizeof(WhyOffer));
	o->node = node;
	o->cost = cost;
	o->best_other = -1;
	foreach(lc, rel->pathlist)
	{
		Path	   *p = lfirst(lc);

		if (!IsA(p, CustomPath) && (o->best_other < 0 || p->total_cost < o->best_other))
			o->best_other = p->total_cost;
	}
	why_offers = lappend(why_offers, o);
}

/*
 * explain_why_show: in EXPLAIN (VERBOSE), the note of relation relid, if
 * any, as the property "Not in engine" of the node explained now
 */
void
explain_why_show(ExplainState *es, Oid relid)
{
	ListCell   *lc;

	if (!why_collecting || !es->verbose)
		return;
	foreach(lc, why_notes)
	{
		WhyNote    *n = lfirst(lc);

		if (n->relid == relid && n->rank == WHY_SCAN && !n->shown)
		{
			ExplainPropertyText("Not in engine", n->text, es);
			n->shown = true;
			return;
		}
	}
}

/* does plan (or a plan below it) have a CustomScan named name */
static bool
why_plan_has(Plan *plan, const char *name)
{
	ListCell   *lc;

	if (plan == NULL)
		return false;
	if (IsA(plan, CustomScan) &&
		strcmp(((CustomScan *) plan)->methods->CustomName, name) == 0)
		return true;
	if (why_plan_has(plan->lefttree, name) || why_plan_has(plan->righttree, name))
		return true;
	if (IsA(plan, Append) || IsA(plan, MergeAppend) || IsA(plan, CustomScan) ||
		IsA(plan, SubqueryScan))
	{
		List	   *kids = IsA(plan, Append) ? ((Append *) plan)->appendplans :
			IsA(plan, MergeAppend) ? ((MergeAppend *) plan)->mergeplans :
			IsA(plan, CustomScan) ? ((CustomScan *) plan)->custom_plans : NIL;

		if (IsA(plan, SubqueryScan))
			return why_plan_has(((SubqueryScan *) plan)->subplan, name);
		foreach(lc, kids)
			if (why_plan_has(lfirst(lc), name))
				return true;
	}
	return false;
}

/* notes the engine paths offered that the plan does not have */
static void
why_note_costs(PlannedStmt *plan)
{
	ListCell   *lc;

	foreach(lc, why_offers)
	{
		WhyOffer   *o = lfirst(lc);
		bool		found = why_plan_has(plan->planTree, o->node);
		ListCell   *sp;

		foreach(sp, plan->subplans)
			found = found || why_plan_has(lfirst(sp), o->node);
		if (!found)
			why_add(WHY_COST, InvalidOid,
					psprintf("%s: the cost estimate chose PostgreSQL's plan "
							 "(%s %.2f, PostgreSQL's cheapest path %.2f)",
							 o->node, o->node, o->cost, o->best_other));
	}
}

/* the notes that decide whether the engine runs at all: its settings */
static void
why_note_settings(Query *query)
{
	if (!pg_warp_preloaded)
		why_add(WHY_SETTING, InvalidOid,
				pstrdup("pg_warp is not in shared_preload_libraries: the engine is off"));
	else if (!pg_warp_enabled)
		why_add(WHY_SETTING, InvalidOid, pstrdup("pg_warp.enabled is off"));
	else if (!pg_warp_enable_gpupreagg && (query->hasAggs || query->groupClause != NIL))
		why_add(WHY_SETTING, InvalidOid,
				pstrdup("pg_warp.enable_gpupreagg is off: the grouping stays in PostgreSQL"));
	else if (!pg_warp_enable_gpuscan)
		why_add(WHY_SETTING, InvalidOid,
				pstrdup("pg_warp.enable_gpuscan is off: scans stay in PostgreSQL"));
}

/*
 * The query's line after the plan: in text "pg_warp: ...", in the other
 * formats the property "pg_warp" of the query, whose group ExplainOnePlan
 * has closed: the closing is taken back (the characters ExplainCloseGroup
 * wrote last, and the state it changed), the property added and the group
 * closed again.
 */
static void
why_print(ExplainState *es, const char *text)
{
	StringInfo	s = es->str;
	char	   *tail;
	int			taillen = 0;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("pg_warp", text, es);
		return;
	}
	if (es->format == EXPLAIN_FORMAT_JSON)
		tail = psprintf("\n%*s}", 2 * es->indent, "");
	else if (es->format == EXPLAIN_FORMAT_XML)
		tail = psprintf("%*s</Query>\n", 2 * es->indent, "");
	else
		tail = pstrdup("");
	taillen = strlen(tail);
	if (s->len < taillen || strcmp(s->data + s->len - taillen, tail) != 0)
		return;					/* not the output this was written for */
	s->len -= taillen;
	s->data[s->len] = '\0';
	es->indent++;
	if (es->format != EXPLAIN_FORMAT_XML)
		es->grouping_stack = lcons_int(1, es->grouping_stack);	/* has members */
	ExplainPropertyText("pg_warp", text, es);
	ExplainCloseGroup("Query", NULL, true, es);
}

/* the note to print after the plan: the first of the highest rank not shown */
static WhyNote *
why_pick(void)
{
	WhyNote    *best = NULL;
	ListCell   *lc;

	foreach(lc, why_notes)
	{
		WhyNote    *n = lfirst(lc);

		if (!n->shown && (best == NULL || n->rank > best->rank))
			best = n;
	}
	return best;
}

/* plans query and explains the plan, as EXPLAIN does without the hook */
static void
why_plan_and_explain(Query *query, int cursorOptions, IntoClause *into, ExplainState *es,
					 const char *queryString, ParamListInfo params,
					 QueryEnvironment *queryEnv)
{
	PlannedStmt *plan;
	instr_time	start,
				duration;
	BufferUsage before = pgBufferUsage,
				used;
	WhyNote    *n;

	INSTR_TIME_SET_CURRENT(start);
	plan = pg_plan_query(query, queryString, cursorOptions, params);
	INSTR_TIME_SET_CURRENT(duration);
	INSTR_TIME_SUBTRACT(duration, start);
	memset(&used, 0, sizeof(used));
	BufferUsageAccumDiff(&used, &pgBufferUsage, &before);
	why_note_costs(plan);
	ExplainOnePlan(plan, into, es, queryString, params, queryEnv, &duration,
				   es->buffers ? &used : NULL);
	if ((n = why_pick()) != NULL)
		why_print(es, n->text);
}

/*
 * ExplainOneQuery_hook: EXPLAIN (VERBOSE) of a query collects the notes of
 * its planning and prints its line; other EXPLAINs run as they would
 */
static void
why_explain_one_query(Query *query, int cursorOptions, IntoClause *into, ExplainState *es,
					  const char *queryString, ParamListInfo params,
					  QueryEnvironment *queryEnv)
{
	bool		saved_collecting = why_collecting;
	List	   *saved_notes = why_notes,
			   *saved_offers = why_offers;

	if (prev_explain_one_query != NULL)
	{
		prev_explain_one_query(query, cursorOptions, into, es, queryString, params, queryEnv);
		return;
	}
	why_collecting = es->verbose;
	why_notes = NIL;
	why_offers = NIL;
	PG_TRY();
	{
		if (why_collecting)
			why_note_settings(query);
		why_plan_and_explain(query, cursorOptions, into, es, queryString, params, queryEnv);
	}
	PG_FINALLY();
	{
		why_collecting = saved_collecting;
		why_notes = saved_notes;
		why_offers = saved_offers;
	}
	PG_END_TRY();
}

/* pg_warp_explain_why_init: installs the ExplainOneQuery_hook (_PG_init) */
void
pg_warp_explain_why_init(void)
{
	prev_explain_one_query = ExplainOneQuery_hook;
	ExplainOneQuery_hook = why_explain_one_query;
}
