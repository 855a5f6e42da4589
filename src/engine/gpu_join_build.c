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
 * its end, then merges the images into the table's builder
 * (xpu_join_builder_merge) and goes on as before: layout, memfd, service.
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "catalog/pg_proc.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
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
	bool		armed;			/* the leader gave the spec (gj_build_run) */
	bool		done;			/* this participant's share is built */
	XpuJoinBuilder *builder;	/* while the share is built */
	MemoryContextCallback cb;	/* frees builder when the query ends early */
} GjbState;

static CustomScanMethods gjb_plan_methods;
static CustomExecMethods gjb_exec_methods;

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
 * gj_build_plan: plan, an inner plan made to return the keys and payload,
 * with a GjbState node under its Gather (the same target list, over the
 * Gather's scan) where it has one that runs workers and its target list may
 * be evaluated in them; else plan as it is
 */
Plan *
gj_build_plan(Plan *plan)
{
	Gather	   *gather;
	Plan	   *scan;
	CustomScan *cs;
	List	   *scan_tlist = NIL;
	ListCell   *lc;

	if (!IsA(plan, Gather) || ((Gather *) plan)->single_copy ||
		((Gather *) plan)->num_workers <= 0 || plan->lefttree == NULL ||
		gjb_leader_only((Node *) plan->targetlist, NULL))
		return plan;
	gather = (Gather *) plan;
	scan = plan->lefttree;
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
	cs->scan.plan.plan_width = plan->plan_width;
	cs->scan.plan.parallel_aware = true;	/* it has a DSM */
	cs->scan.plan.parallel_safe = true;
	cs->scan.plan.targetlist = copyObject(plan->targetlist);
	cs->scan.scanrelid = 0;
	cs->custom_scan_tlist = scan_tlist;
	cs->custom_plans = list_make1(scan);
	cs->methods = &gjb_plan_methods;
	gather->plan.lefttree = &cs->scan.plan;
	return plan;
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
	GjbShared  *sh = coordinate;

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

/* one participant's image merged into b, its rows counted in *rows */
static bool
gjb_merge(XpuJoinBuilder *b, const GjbImage *img, double *rows, XpuError *err)
{
	*rows += img->rows;
	return xpu_join_builder_merge(b, img->data, img->len, err);
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
	GjbState   *st = (GjbState *) gj_build_node(inner);
	XpuError	err = {0};
	dsa_pointer dp;
	bool		ok = true;

	st->local.gs = *gs;
	st->armed = true;
	if (!TupIsNull(ExecProcNode(inner)))
		elog(ERROR, "GpuJoinBuild: an inner table's build returned a row");
	if (st->shared->refused)
	{
		*why = pstrdup(st->shared->why);
		ok = false;
	}
	for (GjbImage *img = st->local_images; ok && img != NULL; img = img->local_next)
		ok = gjb_merge(b, img, rows, &err);
	/* the images in the DSA: merged, and freed either way */
	dp = st->shared == &st->local ? InvalidDsaPointer : st->shared->images;
	while (DsaPointerIsValid(dp))
	{
		GjbImage   *img = dsa_get_address(st->area, dp);
		dsa_pointer next = img->next;

		ok = ok && gjb_merge(b, img, rows, &err);
		dsa_free(st->area, dp);
		dp = next;
	}
	if (st->shared != &st->local)
		st->shared->images = InvalidDsaPointer;
	if (!ok && err.message[0] != '\0')
		*why = gj_build_why(&err);
	return ok;
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
}
