/*-------------------------------------------------------------------------
 *
 * shippable.c
 *		Can the engine take this: a relation, a group key, an aggregate, a
 *		column?  And if not, why, in one line that EXPLAIN (VERBOSE) shows
 *		(explain_why.c).  The planners of the engine's nodes (gpuscan.c,
 *		gpu_preagg.c) ask here; an expression's own answer comes from
 *		codegen (codegen_expr_supported, codegen_why_not).
 *
 * Every function returns NULL when the engine takes the thing, else the
 * reason, palloc'ed or static: "what, and why not", without the node's
 * name (the caller prefixes it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_aggregate.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/regproc.h"
#include "utils/typcache.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/gpu_preagg.h"
#include "engine/heap_source.h"
#include "engine/shippable.h"

/*
 * ship_grouping_input: can GpuPreAgg group the rows of input_rel (the scan
 * of one table: an Arrow table, or a heap table where heap_ok() says so,
 * asked only for a heap table the engine could read: it may ask the
 * service)?  partial: the partially grouped relation of a parallel
 * aggregation (heap tables only)
 */
const char *
ship_grouping_input(PlannerInfo *root, RelOptInfo *input_rel, bool partial, bool (*heap_ok) (void))
{
	Query	   *parse = root->parse;
	RangeTblEntry *rte;

	if (input_rel->reloptkind != RELOPT_BASEREL)
		return psprintf("the grouping reads a join of %d relations "
						"(GpuPreAgg groups the rows of one table)",
						bms_num_members(input_rel->relids));
	if (parse->groupingSets != NIL)
		return "GROUPING SETS, ROLLUP or CUBE";
	rte = planner_rt_fetch(input_rel->relid, root);
	if (rte->rtekind != RTE_RELATION)
		return "the grouping reads a subquery or a function";
	if (rte->inh)
		return "the grouping reads a partitioned or inherited table";
	if (rte->tablesample != NULL)
		return "the grouping reads a TABLESAMPLE";
	if (rte->securityQuals != NIL)
		return psprintf("\"%s\" has row level security", get_rel_name(rte->relid));
	if (rte->relkind == RELKIND_FOREIGN_TABLE)
	{
		if (!arrow_fdw_is_table(rte->relid))
			return psprintf("\"%s\" is a foreign table of another wrapper",
							get_rel_name(rte->relid));
		if (partial)
			return "a parallel grouping of an Arrow table";
		return NULL;
	}
	if (!heap_source_plannable(rte->relid))
		return psprintf("\"%s\" is not a plain heap table", get_rel_name(rte->relid));
	if (!heap_ok())
		return "pg_warp.enable_gpupreagg_heap leaves heap tables to PostgreSQL here";
	return NULL;
}

/*
 * ship_key_type: does the engine group values of type typid exactly as
 * PostgreSQL does (pg_warp's float2 as its exact float4: -0 and 0 one
 * group, every NaN one group)?
 */
static bool
ship_key_type(Oid typid)
{
	if (OidIsValid(typid) && typid == codegen_float2_type())
		return true;
	switch (typid)
	{
		case BOOLOID:
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TEXTOID:
		case VARCHAROID:
			return true;
		default:
			return false;
	}
}

/*
 * ship_group_key: can the engine group by e (of GROUP BY clause sgc)
 * exactly as PostgreSQL groups it?
 */
const char *
ship_group_key(SortGroupClause *sgc, Expr *e)
{
	Oid			type = exprType((Node *) e);
	Oid			coll = exprCollation((Node *) e);
	TypeCacheEntry *tc = lookup_type_cache(type, TYPECACHE_EQ_OPR);

	if (!ship_key_type(type))
		return psprintf("a group key of type %s", format_type_be(type));
	if (sgc->eqop != tc->eq_opr)
		return psprintf("a group key compared by operator %s, not its type's equality",
						get_opname(sgc->eqop));
	if (OidIsValid(coll) && !get_collation_isdeterministic(coll))
		return psprintf("a group key in the nondeterministic collation \"%s\"",
						get_collation_name(coll));
	return NULL;
}

/*
 * ship_hll_arg: may the engine hash an argument of type typid (collation
 * coll) exactly as hll_count does (src/types/hll.c: integers, floats,
 * strings in a deterministic collation, by-value date/time types and bool)
 */
static bool
ship_hll_arg(Oid typid, Oid coll)
{
	switch (typid)
	{
		case TEXTOID:
		case VARCHAROID:
			return !OidIsValid(coll) || get_collation_isdeterministic(coll);
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case FLOAT4OID:
		case FLOAT8OID:
		case BOOLOID:
		case DATEOID:
		case TIMEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			return true;
		default:
			return false;
	}
}

/*
 * ship_aggref: does the engine compute aggregate a (its argument's
 * expression aside, which codegen answers for)?  engine_gpu: pg_warp.engine
 * is gpu, which computes no min/max of text.
 */
const char *
ship_aggref(Aggref *a, bool engine_gpu)
{
	const GpaAggInfo *info = gpa_agg_info(a->aggfnoid);
	Node	   *arg = a->args ? (Node *) ((TargetEntry *) linitial(a->args))->expr : NULL;
	const char *name = get_func_name(a->aggfnoid);

	if (a->aggorder != NIL || a->aggdistinct != NIL || a->aggfilter != NULL)
		return psprintf("%s() with DISTINCT, ORDER BY or FILTER", name);
	if (info == NULL)
		return psprintf("%s is not an aggregate the engine computes",
						format_procedure(a->aggfnoid));
	if (a->agglevelsup != 0 || a->aggkind != AGGKIND_NORMAL)
		return psprintf("%s() of an outer query, or an ordered-set aggregate", name);
	if (a->aggsplit != AGGSPLIT_SIMPLE && a->aggsplit != AGGSPLIT_INITIAL_SERIAL)
		return psprintf("%s() in a split PostgreSQL does not hand to the engine", name);
	if (list_length(a->args) != (xpu_agg_kind_arg(info->kind) == XPU_AGG_ARG_NONE ? 0 : 1))
		return psprintf("%s() of %d arguments", name, list_length(a->args));
	if (arg != NULL && OidIsValid(info->argtype) && exprType(arg) != info->argtype)
		return psprintf("%s() of an argument of type %s", name, format_type_be(exprType(arg)));
	if (info->kind == XPU_AGG_HLL && !ship_hll_arg(exprType(arg), exprCollation(arg)))
		return psprintf("%s() of type %s, which the engine does not hash as hll_count does",
						name, format_type_be(exprType(arg)));
	/* text_smaller and text_larger order bytewise only in C */
	if (xpu_agg_kind_arg(info->kind) == XPU_AGG_ARG_TEXT &&
		!(OidIsValid(a->inputcollid) && lc_collate_is_c(a->inputcollid)))
		return psprintf("%s() of text in the collation \"%s\" (the engine orders bytewise)",
						name, get_collation_name(a->inputcollid));
	/*
	 * pg_warp.engine = gpu leaves a kind the GPU does not compute
	 * (xpu_agg_kinds.h: min/max of text) to PostgreSQL; auto runs it on the
	 * CPU engine
	 */
	if (engine_gpu && !xpu_agg_kind_gpu(info->kind))
		return psprintf("%s() with pg_warp.engine = gpu (the GPU does not compute it)", name);
	return NULL;
}

/* what ship_aggrefs walks with */
typedef struct ShipAggrefs
{
	List	   *aggrefs;
	bool		engine_gpu;
	const char *why;
} ShipAggrefs;

static bool
ship_aggrefs_walker(Node *node, ShipAggrefs *s)
{
	if (node == NULL)
		return false;
	if (IsA(node, Aggref))
	{
		s->why = ship_aggref((Aggref *) node, s->engine_gpu);
		if (s->why != NULL)
			return true;
		if (!list_member(s->aggrefs, node))
			s->aggrefs = lappend(s->aggrefs, node);
		return false;			/* the arguments are the engine's */
	}
	if (IsA(node, GroupingFunc))
		return (s->why = "GROUPING()") != NULL;
	if (IsA(node, WindowFunc))
		return (s->why = "a window function over the grouping") != NULL;
	if (IsA(node, SubPlan))
		return (s->why = "a subquery over the grouping") != NULL;
	return expression_tree_walker(node, ship_aggrefs_walker, (void *) s);
}

/*
 * ship_aggrefs: appends the distinct Aggrefs below node to *aggrefs (their
 * arguments are left to codegen), or says why one of them, or something
 * else over the grouping, keeps it in PostgreSQL
 */
const char *
ship_aggrefs(Node *node, List **aggrefs, bool engine_gpu)
{
	ShipAggrefs s = {*aggrefs, engine_gpu, NULL};

	(void) ship_aggrefs_walker(node, &s);
	*aggrefs = s.aggrefs;
	return s.why;
}

/*
 * ship_scan_column: can the service return column c of Arrow table `table`
 * (a flat layout, converted by arrow_fdw's own code in the backend)?
 */
const char *
ship_scan_column(Oid table, const ArrowScanColumn *c)
{
	if (c->plain)
	{
		switch (c->arrow_id)
		{
			case ARROW_TYPE_BOOL:
			case ARROW_TYPE_UTF8:
			case ARROW_TYPE_BINARY:
			case ARROW_TYPE_LARGE_UTF8:
			case ARROW_TYPE_LARGE_BINARY:
			case ARROW_TYPE_INT8:
			case ARROW_TYPE_INT16:
			case ARROW_TYPE_INT32:
			case ARROW_TYPE_INT64:
			case ARROW_TYPE_UINT8:
			case ARROW_TYPE_UINT16:
			case ARROW_TYPE_UINT32:
			case ARROW_TYPE_UINT64:
			case ARROW_TYPE_FLOAT16:
			case ARROW_TYPE_FLOAT32:
			case ARROW_TYPE_FLOAT64:
			case ARROW_TYPE_DECIMAL128:
			case ARROW_TYPE_DECIMAL256:
			case ARROW_TYPE_DATE32:
			case ARROW_TYPE_DATE64:
			case ARROW_TYPE_TIME32:
			case ARROW_TYPE_TIME64:
			case ARROW_TYPE_TIMESTAMP:
			case ARROW_TYPE_INTERVAL_YM:
			case ARROW_TYPE_INTERVAL_DT:
			case ARROW_TYPE_INTERVAL_MDN:
			case ARROW_TYPE_DURATION:
			case ARROW_TYPE_FIXED_SIZE_BINARY:
				return NULL;
			default:
				break;
		}
	}
	return psprintf("column %s is of a layout the service does not return (nested, "
					"dictionary-encoded or converted)", get_attname(table, c->attno, false));
}
