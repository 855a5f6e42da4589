/*-------------------------------------------------------------------------
 *
 * gpu_join_build.c
 *		GpuJoin's inner table built by the participants of a parallel scan:
 *		a CustomScan (GpuJoinBuild) between an inner plan's Gather and the
 *		scan below it.
 *
 * Without it, a dimension's rows went from the parallel workers through
 * the Gather's tuple queues to the one backend that converts every row to
 * the engine's values and adds it to the table's builder (gj_add_rows): on
 * the GPU host that serial part was most of a star query's first run
 * (SSB SF 20 Q4.1: 235 of 372 ms, bench/results/README.md).  Here every
 * participant converts the rows of its share of the scan and adds them to
 * a builder of its own; when its scan ends it writes the builder's image
 * (xpu_join_builder_image) into the query's dynamic shared memory and
 * returns no row.  The leader (gj_load -> gj_build_run) runs the Gather to
 * its end, then attaches the images to the table's builder where they lie
 * (xpu_join_builder_attach: checked, not copied) and goes on as before:
 * layout, memfd (the table written from the images), service; then frees
 * them (gj_build_release).
 *
 * The leader's node gets the table's spec (GjSpec: with the probe types the
 * program gives, which the plan does not hold) before the Gather starts its
 * workers, and puts it into the node's DSM, where each worker's node reads
 * it.  A participant that finds a value the engine cannot hold, or a share
 * past the table's limit, says why in the DSM and stops; the others stop
 * at their next batch and the leader leaves the join to PostgreSQL, as it
 * does for a serial build.  Where the Gather runs without a DSM (no worker
 * could be planned at run time) the leader alone runs the node and keeps its
 * image in its own memory.
 *
 * The rows and their order are the scan's, as the Gather's would have been:
 * a table's rows have no order a query may rely on.
 *
 * Several depths of a node form a group (gj_build_group) where one has such
 * a Gather and another a plan a worker may run: their GpuJoinBuild nodes
 * under one Gather's Parallel Append, so that their scans run at once.  The
 * first depth built runs the group (gj_build_groups), each depth that is
 * not to be built (found kept, or loaded) skipping its scan; each depth
 * then takes its images (gj_build_take).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "portability/instr_time.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/memutils.h"

#include "pg_warp.h"
#include "engine/gpu_join.h"

/* one participant's image, in the query's DSA (or the leader's memory) */
typedef struct GjbImage
{
	dsa_pointer next;			/* the next image, InvalidDsaPointer at the end */
	struct GjbImage *local_next;	/* without a DSA: the next, in the leader */
	uint64		len;			/* the image's bytes */
	double		rows;			/* the rows it holds */
	uint64		data[FLEXIBLE_ARRAY_MEMBER];	/* the image (8-byte aligned) */
} GjbImage;

/* the node's DSM: the spec, the images, and why the table was refused */
typedef struct GjbShared
{
	GjSpec		gs;
	bool		skip;			/* in a group: this table is not built */
	slock_t		mutex;
	dsa_pointer images;			/* GjbImage list */
	bool		refused;
	char		why[256];
} GjbShared;

typedef struct GjbState
{
	CustomScanState css;
	GjbShared  *shared;			/* the DSM's, or local where there is none */
	GjbShared	local;
	dsa_area   *area;			/* the query's DSA, NULL: none */
	GjbImage   *local_images;	/* images kept without a DSA */
	dsa_pointer taken;			/* the images in the DSA that b reads in
								 * place, until gj_build_release */
	bool		armed;			/* the leader gave the spec (gj_build_run) */
	bool		done;			/* this participant's share is built */
	XpuJoinBuilder *builder;	/* while the share is built */
	MemoryContextCallback cb;	/* frees builder when the query ends early */
} GjbState;

static CustomScanMethods gjb_plan_methods;
static CustomExecMethods gjb_exec_methods;

static bool pg_warp_gpujoin_concurrent_build = true;

/* ---------------------------------------------------------------- planning */

/* check_functions_in_node's test: a function a parallel worker may not run */
static bool
gjb_func_unsafe(Oid func_id, void *context)
{
	return func_parallel(func_id) != PROPARALLEL_SAFE;
}

/*
 * does node (the Gather's target list, which the participants evaluate
 * once the build node is under it) hold what only the leader may evaluate:
 * a function that is not parallel safe, a parameter, a subplan?
 */
static bool
gjb_leader_only(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) || IsA(node, SubPlan) || IsA(node, AlternativeSubPlan) ||
		check_functions_in_node(node, gjb_func_unsafe, context))
		return true;
	return expression_tree_walker(node, gjb_leader_only, context);
}

/*
 * a GpuJoinBuild node of target list tlist over scan, whose participants
 * together are expected to read rows rows (its private item: the plan's
 * rows of a partial scan are each participant's)
 */
static Plan *
gjb_over(Plan *scan, List *tlist, double rows)
{
	CustomScan *cs;
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	foreach(lc, scan->targetlist)
	{
		TargetEntry *te = lfirst(lc);

		scan_tlist = lappend(scan_tlist, makeTargetEntry(copyObject(te->expr), te->resno,
														 NULL, te->resjunk));
	}
	cs = makeNode(CustomScan);
	cs->scan.plan.startup_cost = scan->startup_cost;
	cs->scan.plan.total_cost = scan->total_cost;
	cs->scan.plan.plan_rows = scan->plan_rows;
	cs->scan.plan.plan_width = scan->plan_width;
	cs->scan.plan.parallel_aware = true;	/* it has a DSM */
	cs->scan.plan.parallel_safe = true;
	cs->scan.plan.targetlist = copyObject(tlist);
	cs->scan.scanrelid = 0;
	cs->custom_scan_tlist = scan_tlist;
	cs->custom_plans = list_make1(scan);
	cs->custom_private = list_make1(makeFloat(psprintf("%.0f", rows)));
	cs->methods = &gjb_plan_methods;
	return &cs->scan.plan;
}

/*
 * gj_build_plan: plan, an inner plan made to return the keys and payload,
 * with a GjbState node under its Gather (the same target list, over the
 * Gather's scan) where it has one that runs workers and its target list may
 * be evaluated in them; else plan as it is
 */
Plan *
gj_build_plan(Plan *plan)
{
	if (!IsA(plan, Gather) || ((Gather *) plan)->single_copy ||
		((Gather *) plan)->num_workers <= 0 || plan->lefttree == NULL ||
		gjb_leader_only((Node *) plan->targetlist, NULL))
		return plan;
	plan->lefttree = gjb_over(plan->lefttree, plan->targetlist, plan->plan_rows);
	return plan;
}

/*
 * may plan not join a group: it holds a Gather (none may run under
 * another), or a node whose children are not walked here
 */
static bool
gjb_not_groupable(Plan *plan)
{
	if (plan == NULL)
		return false;
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		return true;
	if (IsA(plan, CustomScan))
	{
		ListCell   *lc;

		foreach(lc, ((CustomScan *) plan)->custom_plans)
			if (gjb_not_groupable(lfirst(lc)))
				return true;
	}
	if (IsA(plan, Append) || IsA(plan, MergeAppend) || IsA(plan, SubqueryScan))
		return true;
	return gjb_not_groupable(plan->lefttree) || gjb_not_groupable(plan->righttree);
}

/* plan's GpuJoinBuild node, if it is a Gather over one (gj_build_plan's) */
static Plan *
gjb_plan_under(Plan *plan)
{
	Plan	   *below = IsA(plan, Gather) ? plan->lefttree : NULL;

	return below != NULL && IsA(below, CustomScan) &&
		((CustomScan *) below)->methods == &gjb_plan_methods ? below : NULL;
}

/*
 * gj_build_group: the custom plans of a node's depths (plans: their inner
 * plans, gj_inner_plan's) where the scans of several run at once: a Gather
 * over a Parallel Append of their GpuJoinBuild nodes, after the plans of
 * the depths left out.  The inner plans ran one after the other in the
 * backend, each Gather starting its workers and waiting for its last, and a
 * dimension that PostgreSQL scans serially (SSB SF 20: supplier, 40,000
 * rows, 10 ms) waited for the others.  In the group every partial scan
 * (a Gather's, gj_build_plan) is shared by the participants as before, and
 * each serial plan is run by one of them beside it.  A depth joins the
 * group where its plan is a Gather over a GpuJoinBuild, or a plan without a
 * Gather that a worker may run (parallel safe, its target list too); the
 * group is made when it has a partial scan and another depth.  The Gather
 * plans the workers of the partial scans' Gathers and one for each serial
 * plan, within max_parallel_workers_per_gather.  *privates_out: each
 * depth's private item (depth_privates') with the index of its plan among
 * those returned and, in the group, its child (else -1).
 */
List *
gj_build_group(List *plans, List *depth_privates, List **privates_out)
{
	enum
	{
		ALONE, SERIAL, PARTIAL
	}		   *kind = palloc0(sizeof(*kind) * Max(list_length(plans), 1));
	List	   *out = NIL;
	int			n = list_length(plans);
	int		   *child = palloc(sizeof(int) * Max(n, 1));
	int			n_serial = 0,
				n_partial = 0,
				workers = 0,
				rescan_param = -1;
	Gather	   *gather = NULL;

	for (int d = 0; d < n && pg_warp_gpujoin_concurrent_build; d++)
	{
		Plan	   *p = list_nth(plans, d);

		if (gjb_plan_under(p) != NULL)
		{
			kind[d] = PARTIAL;
			n_partial++;
			workers += ((Gather *) p)->num_workers;
			/* the Gather's rescan parameter (one per Gather, which the group replaces) */
			if (rescan_param < 0)
				rescan_param = ((Gather *) p)->rescan_param;
		}
		else if (p->parallel_safe && !gjb_not_groupable(p) &&
				 !gjb_leader_only((Node *) p->targetlist, NULL))
		{
			kind[d] = SERIAL;
			n_serial++;
		}
	}
	for (int d = 0; d < n; d++)
		child[d] = -1;
	if (n_partial > 0 && n_partial + n_serial >= 2)
	{
		Append	   *ap = makeNode(Append);
		int			k = 0;

		/* the serial plans first: each is run once (first_partial_plan) */
		for (int d = 0; d < n; d++)
			if (kind[d] == SERIAL)
			{
				Plan	   *p = list_nth(plans, d);

				child[d] = k++;
				ap->appendplans = lappend(ap->appendplans,
										  gjb_over(p, p->targetlist, p->plan_rows));
			}
		ap->first_partial_plan = k;
		for (int d = 0; d < n; d++)
			if (kind[d] == PARTIAL)
			{
				child[d] = k++;
				ap->appendplans = lappend(ap->appendplans, gjb_plan_under(list_nth(plans, d)));
			}
		for (int c = 0; c < k; c++)
		{
			Plan	   *p = list_nth(ap->appendplans, c);

			ap->plan.startup_cost += p->startup_cost;
			ap->plan.total_cost += p->total_cost;
		}
		ap->plan.parallel_aware = true;
		ap->plan.parallel_safe = true;
		gather = makeNode(Gather);
		gather->plan.startup_cost = ap->plan.startup_cost;
		gather->plan.total_cost = ap->plan.total_cost;
		gather->plan.lefttree = &ap->plan;
		gather->num_workers = Max(1, Min(max_parallel_workers_per_gather, workers + n_serial));
		gather->rescan_param = rescan_param;
	}
	/* the plans of the depths left out, then the group's (its index: their count) */
	*privates_out = NIL;
	for (int d = 0; d < n; d++)
	{
		List	   *dp = list_copy(list_nth(depth_privates, d));

		if (child[d] < 0)
			out = lappend(out, list_nth(plans, d));
		dp = lappend(dp, makeInteger(child[d] < 0 ? list_length(out) - 1 :
									 n - (gather != NULL ? n_partial + n_serial : 0)));
		dp = lappend(dp, makeInteger(child[d]));
		*privates_out = lappend(*privates_out, dp);
	}
	if (gather != NULL)
		out = lappend(out, gather);
	return out;
}

/* ---------------------------------------------------------------- execution */

static Node *
gjb_create_state(CustomScan *cs)
{
	GjbState   *st = (GjbState *) newNode(sizeof(GjbState), T_CustomScanState);

	st->css.methods = &gjb_exec_methods;
	return (Node *) st;
}

static void
gjb_free_builder(void *arg)
{
	GjbState   *st = arg;

	xpu_join_builder_free(st->builder);
	st->builder = NULL;
}

static void
gjb_begin(CustomScanState *node, EState *estate, int eflags)
{
	GjbState   *st = (GjbState *) node;
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;

	node->custom_ps = list_make1(ExecInitNode(linitial(cs->custom_plans), estate, eflags));
	st->shared = &st->local;
	SpinLockInit(&st->local.mutex);
	st->local.images = InvalidDsaPointer;
	st->cb.func = gjb_free_builder;
	st->cb.arg = st;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, &st->cb);
}

/* the scan's next row as the table's columns (gj_add_rows' GjNextRow) */
static TupleTableSlot *
gjb_next(void *arg)
{
	GjbState   *st = arg;
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	TupleTableSlot *slot;

	/* another participant refused the table: the rest need not be read */
	if (st->shared->refused)
		return NULL;
	slot = ExecProcNode(linitial(st->css.custom_ps));
	if (TupIsNull(slot) || st->css.ss.ps.ps_ProjInfo == NULL)
		return slot;
	ResetExprContext(econtext);
	econtext->ecxt_scantuple = slot;
	return ExecProject(st->css.ss.ps.ps_ProjInfo);
}

/* st's refusal of the table, for every participant (the first why stays) */
static void
gjb_refuse(GjbState *st, const char *why)
{
	SpinLockAcquire(&st->shared->mutex);
	if (!st->shared->refused)
	{
		st->shared->refused = true;
		strlcpy(st->shared->why, why, sizeof(st->shared->why));
	}
	SpinLockRelease(&st->shared->mutex);
}

/* the image of st's builder, put where the leader finds it */
static void
gjb_put_image(GjbState *st, double rows)
{
	uint64		len = xpu_join_builder_image_len(st->builder);
	Size		size = offsetof(GjbImage, data) + len;
	dsa_pointer dp = InvalidDsaPointer;
	GjbImage   *img;

	if (st->area != NULL)
	{
		dp = dsa_allocate_extended(st->area, size, DSA_ALLOC_HUGE);
		img = dsa_get_address(st->area, dp);
	}
	else
		img = MemoryContextAllocHuge(st->css.ss.ps.state->es_query_cxt, size);
	img->len = len;
	img->rows = rows;
	xpu_join_builder_image(st->builder, img->data);
	if (st->area == NULL)
	{
		img->local_next = st->local_images;
		st->local_images = img;
		return;
	}
	SpinLockAcquire(&st->shared->mutex);
	img->next = st->shared->images;
	st->shared->images = dp;
	SpinLockRelease(&st->shared->mutex);
}

/*
 * gjb_exec: this participant's share of the rows into a builder, and its
 * image into the DSM; never a row
 */
static TupleTableSlot *
gjb_exec(CustomScanState *node)
{
	GjbState   *st = (GjbState *) node;
	XpuError	err = {0};
	double		rows = 0;
	const char *why = NULL;

	if (st->done)
		return NULL;
	st->done = true;
	if (!st->armed && st->area == NULL)
		elog(ERROR, "GpuJoinBuild: run without the table's spec");
	if (st->shared->skip)
		return NULL;			/* a group's table that is not built */
	if ((st->builder = xpu_join_builder_create(&st->shared->gs.spec, &err)) == NULL)
		elog(ERROR, "GpuJoinBuild: %s", err.message);
	if (gj_add_rows(gjb_next, st, &st->shared->gs, st->builder, &rows, &why))
		gjb_put_image(st, rows);
	else
		gjb_refuse(st, why);
	gjb_free_builder(st);
	return NULL;
}

static void
gjb_end(CustomScanState *node)
{
	ExecEndNode(linitial(node->custom_ps));
}

static void
gjb_rescan(CustomScanState *node)
{
	GjbState   *st = (GjbState *) node;

	st->done = false;
	gj_build_release(&node->ss.ps);
	st->local_images = NULL;
	if (st->shared == &st->local)
	{
		st->local.refused = false;
		st->local.images = InvalidDsaPointer;
	}
	ExecReScan(linitial(node->custom_ps));
}

/* ---------------------------------------------------------------- parallel */

static Size
gjb_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	return sizeof(GjbShared);
}

static void
gjb_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GjbState   *st = (GjbState *) node;
	GjbShared  *sh = coordinate;

	if (!st->armed)
		elog(ERROR, "GpuJoinBuild: started without the table's spec");
	memset(sh, 0, sizeof(*sh));
	sh->gs = st->local.gs;
	sh->skip = st->local.skip;
	SpinLockInit(&sh->mutex);
	sh->images = InvalidDsaPointer;
	st->shared = sh;
	st->area = node->ss.ps.state->es_query_dsa;
	if (st->area == NULL)
		elog(ERROR, "GpuJoinBuild: no dynamic shared memory area");
}

static void
gjb_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	GjbState   *st = (GjbState *) node;
	GjbShared  *sh = coordinate;

	/* a group's rescan may build other tables of it */
	sh->gs = st->local.gs;
	sh->skip = st->local.skip;
	sh->refused = false;
	sh->why[0] = '\0';
	sh->images = InvalidDsaPointer;
}

static void
gjb_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	GjbState   *st = (GjbState *) node;

	st->shared = coordinate;
	st->area = node->ss.ps.state->es_query_dsa;
	if (st->area == NULL)
		elog(ERROR, "GpuJoinBuild: no dynamic shared memory area in a worker");
}

/* ---------------------------------------------------------------- the leader */

/* the GpuJoinBuild node under inner (an inner plan's Gather), or NULL */
PlanState *
gj_build_node(PlanState *inner)
{
	PlanState  *below;

	if (!IsA(inner, GatherState) || (below = outerPlanState(inner)) == NULL ||
		!IsA(below, CustomScanState) ||
		((CustomScanState *) below)->methods != &gjb_exec_methods)
		return NULL;
	return below;
}

/*
 * gj_build_rows: the rows the planner expects inner (a depth's inner plan,
 * or its GpuJoinBuild node in a group) to give in all
 */
double
gj_build_rows(PlanState *inner)
{
	PlanState  *node = IsA(inner, CustomScanState) &&
		((CustomScanState *) inner)->methods == &gjb_exec_methods ? inner : NULL;

	if (node == NULL)
		return inner->plan->plan_rows;
	return floatVal(linitial(((CustomScan *) node->plan)->custom_private));
}

/* node (a GpuJoinBuild) to build the table of spec gs, or none (NULL) */
static void
gjb_arm(PlanState *node, const GjSpec *gs)
{
	GjbState   *st = (GjbState *) node;

	if (gs != NULL)
		st->local.gs = *gs;
	st->local.skip = gs == NULL;
	st->armed = true;
}

/*
 * one participant's image attached to b in place (it stays until the
 * table is written: gj_build_release), its rows counted in *rows
 */
static bool
gjb_attach(XpuJoinBuilder *b, const GjbImage *img, double *rows, XpuError *err)
{
	*rows += img->rows;
	return xpu_join_builder_attach(b, img->data, img->len, err);
}

/*
 * gj_build_run: inner's rows (a Gather over a GpuJoinBuild node) into
 * builder b of spec gs, counted in *rows: the Gather's participants build
 * shares, whose images are merged into b; false (why) where the engine
 * cannot take the table
 */
bool
gj_build_run(PlanState *inner, const GjSpec *gs, XpuJoinBuilder *b, double *rows,
			 const char **why)
{
	PlanState  *node = gj_build_node(inner);

	gjb_arm(node, gs);
	if (!TupIsNull(ExecProcNode(inner)))
		elog(ERROR, "GpuJoinBuild: an inner table's build returned a row");
	return gj_build_take(node, b, rows, why);
}

/*
 * gj_build_take: the images of GpuJoinBuild node (whose Gather ran)
 * attached to builder b where they lie, the rows counted in *rows; false
 * (why) where a participant refused the table or an image is refused.
 * The leader no longer copies every share into b (the copy, and the fresh
 * pages it filled, were most of the serial part of a build: "A read-ahead
 * behind the builds", bench/results/README.md): b reads them when the
 * table is written, after which gj_build_release frees them (else they go
 * with the query's DSA).
 */
bool
gj_build_take(PlanState *node, XpuJoinBuilder *b, double *rows, const char **why)
{
	GjbState   *st = (GjbState *) node;
	XpuError	err = {0};
	dsa_pointer dp;
	bool		ok = true;

	if (st->shared->refused)
	{
		*why = pstrdup(st->shared->why);
		ok = false;
	}
	for (GjbImage *img = st->local_images; ok && img != NULL; img = img->local_next)
		ok = gjb_attach(b, img, rows, &err);
	dp = st->shared == &st->local ? InvalidDsaPointer : st->shared->images;
	if (st->shared != &st->local)
		st->shared->images = InvalidDsaPointer;
	gj_build_release(node);
	st->taken = dp;
	for (; ok && DsaPointerIsValid(dp); dp = ((GjbImage *) dsa_get_address(st->area, dp))->next)
		ok = gjb_attach(b, dsa_get_address(st->area, dp), rows, &err);
	if (!ok && err.message[0] != '\0')
		*why = gj_build_why(&err);
	return ok;
}

/*
 * gj_build_release: the images that gj_build_take attached, once the
 * builder that reads them is written or freed
 */
void
gj_build_release(PlanState *node)
{
	GjbState   *st = (GjbState *) node;

	while (DsaPointerIsValid(st->taken))
	{
		dsa_pointer next = ((GjbImage *) dsa_get_address(st->area, st->taken))->next;

		dsa_free(st->area, st->taken);
		st->taken = next;
	}
}

/*
 * does an earlier depth of group grp build the table that depth d of inner
 * would (the same key among the query's tables)?
 */
static bool
gjb_built_before(GjGroup *grp, GjInner *inner, int d, const XpuProgram *prog)
{
	char	   *key = NULL;

	if (inner[d].share_key == NULL)
		return false;
	for (int e = 0; e < d; e++)
	{
		if (inner[e].group != grp || inner[e].find == NULL || inner[e].share_key == NULL)
			continue;
		if (key == NULL)
			key = gj_query_key(&inner[d], d, prog);
		if (strcmp(key, gj_query_key(&inner[e], e, prog)) == 0)
			return true;
	}
	return false;
}

/*
 * gj_build_group_run: the scans of group grp (of inner's n depths) run at
 * once for the depths whose tables are to be built: the others (loaded,
 * another node's in the query, kept by the service: gj_query_find,
 * gj_find) skip theirs; each depth to build keeps what gj_find learned
 * (g->find) for gj_load.  start (gj_exec_load's) is called first if a
 * depth to build costs enough.  false (why) where a depth stays with
 * PostgreSQL.
 */
static bool
gj_build_group_run(GjGroup *grp, GjInner *inner, int n, const XpuProgram *prog,
				   GjBuildStart *start, const char **why)
{
	bool		build = false;
	bool		costly = false;
	instr_time	t0,
				t1;

	for (int d = 0; d < n; d++)
	{
		GjInner    *g = &inner[d];
		GjFind	   *f;
		int			r = 0;

		if (g->group != grp)
			continue;
		if (g->join_id != 0 || (r = gj_query_find(g, d, prog, why)) > 0)
		{
			gjb_arm(g->ps, NULL);
			continue;
		}
		if (r < 0)
			return false;
		if (gjb_built_before(grp, inner, d, prog))
		{
			gjb_arm(g->ps, NULL);	/* gj_exec_load takes the earlier depth's table */
			continue;
		}
		f = palloc(sizeof(GjFind));
		INSTR_TIME_SET_CURRENT(t0);
		if (gj_find(g, d, prog, f))
		{
			INSTR_TIME_SET_CURRENT(t1);
			INSTR_TIME_SUBTRACT(t1, t0);
			g->build_ms = INSTR_TIME_GET_MILLISEC(t1);	/* the lookup, as gj_load times it */
			pfree(f);
			gjb_arm(g->ps, NULL);
			gj_query_add(g, d, prog, NULL);	/* for the query's other nodes */
			continue;
		}
		g->find = f;
		g->rows = 0;
		gjb_arm(g->ps, &f->gs);
		gj_table_prepare(g, &f->gs, gj_build_rows(g->ps));
		build = true;
		if (start != NULL && start->min_cost >= 0 && g->ps->plan->total_cost >= start->min_cost)
			costly = true;
	}
	if (!build)
		return true;
	if (costly && !start->done)
	{
		start->done = true;
		start->fn(start->arg);
	}
	if (grp->ran)
		ExecReScan(grp->ps);
	INSTR_TIME_SET_CURRENT(t0);
	if (!TupIsNull(ExecProcNode(grp->ps)))
		elog(ERROR, "GpuJoinBuild: a group of inner tables' builds returned a row");
	INSTR_TIME_SET_CURRENT(t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	grp->ms = INSTR_TIME_GET_MILLISEC(t1);
	grp->ran = true;
	return true;
}

/*
 * gj_build_groups: before inner's n depths are loaded one by one
 * (gj_exec_load), each group's scans run at once (gj_build_group_run)
 */
bool
gj_build_groups(GjInner *inner, int n, const XpuProgram *prog, GjBuildStart *start,
				const char **why)
{
	for (int d = 0; d < n; d++)
	{
		bool		first = inner[d].group != NULL;

		for (int e = 0; e < d && first; e++)
			first = inner[e].group != inner[d].group;
		if (first && !gj_build_group_run(inner[d].group, inner, n, prog, start, why))
			return false;
	}
	return true;
}

/* gj_build_init: the node's methods, known by name to parallel workers */
void
gj_build_init(void)
{
	gjb_plan_methods.CustomName = "GpuJoinBuild";
	gjb_plan_methods.CreateCustomScanState = gjb_create_state;
	RegisterCustomScanMethods(&gjb_plan_methods);

	gjb_exec_methods.CustomName = "GpuJoinBuild";
	gjb_exec_methods.BeginCustomScan = gjb_begin;
	gjb_exec_methods.ExecCustomScan = gjb_exec;
	gjb_exec_methods.EndCustomScan = gjb_end;
	gjb_exec_methods.ReScanCustomScan = gjb_rescan;
	gjb_exec_methods.EstimateDSMCustomScan = gjb_estimate_dsm;
	gjb_exec_methods.InitializeDSMCustomScan = gjb_init_dsm;
	gjb_exec_methods.ReInitializeDSMCustomScan = gjb_reinit_dsm;
	gjb_exec_methods.InitializeWorkerCustomScan = gjb_init_worker;

	DefineCustomBoolVariable("pg_warp.gpujoin_concurrent_build",
							 "Lets the inner scans of a GpuJoin's depths run at once under one Gather.",
							 "Off: each depth's scan runs after the one before, under a Gather of "
							 "its own where it has one.",
							 &pg_warp_gpujoin_concurrent_build, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}
