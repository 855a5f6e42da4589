/*-------------------------------------------------------------------------
 *
 * engine_scan.c
 *		The one executor of the engine's CustomScan nodes: GpuScan
 *		(gpuscan.c), GpuPreAgg (gpu_preagg.c) and every operator after them
 *		run through the CustomExecMethods here, and plug their own work in
 *		through an EngineOps table (engine_scan.h says what each callback
 *		is for).
 *
 * What is common.  A node's state starts with an EngineScanState: the table
 * it reads (an Arrow table's files and record batches, engine_scan_open, or
 * a heap table's run), the program from the plan (engine_scan_program,
 * executor.c), its run in the service (EngineRun: closed at the end of the
 * node, or of the query when it ends early), its child plans, and under a
 * Gather the DSM that its participants share (EngineShared): the claims of
 * record batches or heap blocks, and the query's shared run, which every
 * participant's work goes into and whose result the last one returns once.
 * The operator's part of the DSM follows the common part.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "catalog/pg_class.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "engine/engine_scan.h"

/* rows one claim of record batches is for, about (whole record batches) */
#define ENGINE_CLAIM_ROWS		(1024 * 1024)
#define ENGINE_MAX_CLAIM		256

static const CustomExecMethods engine_exec_methods;

/* the common state of an engine node */
static inline EngineScanState *
engine_state(CustomScanState *node)
{
	return (EngineScanState *) node;
}

/*
 * engine_scan_create: CreateCustomScanState of every engine operator: its
 * state of EngineOps.state_size bytes, no connection yet
 */
Node *
engine_scan_create(CustomScan *cs)
{
	const EngineOps *ops = (const EngineOps *) cs->methods;
	EngineScanState *st;

	Assert(ops->state_size >= sizeof(EngineScanState));
	st = (EngineScanState *) newNode(ops->state_size, T_CustomScanState);
	st->css.methods = &engine_exec_methods;
	st->ops = ops;
	st->run.conn = -1;
	st->share.conn = -1;
	st->ahead.conn = -1;
	return (Node *) st;
}

/* engine_scan_register: the operator's plans can be copied and read (_PG_init) */
void
engine_scan_register(const EngineOps *ops)
{
	StaticAssertStmt(offsetof(EngineOps, scan) == 0,
					 "a plan's methods are the start of its operator's EngineOps");
	RegisterCustomScanMethods(&ops->scan);
}

/* ---------------- begin ---------------- */

/*
 * engine_scan_open: the table the node reads, range table index relid (the
 * node's scan relation when it has one, else opened here for the node's
 * eflags), with the
 * columns attnos[0 .. n_attnos - 1] (the chunk columns, in the order the
 * program reads them); for an Arrow table its files and their record
 * batches that quals do not rule out (arrow_fdw_engine_source), and those
 * batches as the work items that claims hand out.  A heap table's run is
 * the operator's to prepare (heap_agg_prepare into st->heap).
 */
void
engine_scan_open(EngineScanState *st, Index relid, int eflags, List *quals,
				 const AttrNumber *attnos, int n_attnos)
{
	EState	   *estate = st->css.ss.ps.state;
	int64		k = 0;

	if (st->css.ss.ss_currentRelation != NULL)
		st->rel = st->css.ss.ss_currentRelation;
	else
		st->rel = ExecOpenScanRelation(estate, relid, eflags);
	if (st->rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		return;
	st->src = arrow_fdw_engine_source(st->rel, relid, quals, (AttrNumber *) attnos, n_attnos);
	st->n_work = st->src->batches_total - st->src->batches_skipped;
	st->work_file = palloc(sizeof(int32) * Max(st->n_work, 1));
	st->work_batch = palloc(sizeof(int32) * Max(st->n_work, 1));
	for (int f = 0; f < st->src->n_files; f++)
		for (int b = 0; b < st->src->files[f].n_batches; b++)
		{
			st->work_file[k] = f;
			st->work_batch[k++] = st->src->files[f].batches[b];
		}
	st->chunk = (int) Min(Max(ENGINE_CLAIM_ROWS /
							  Max(st->src->rows_to_read / Max(st->n_work, 1), 1), 1),
						  ENGINE_MAX_CLAIM);
}

/*
 * engine_scan_program: the plan's program (the last item of custom_private,
 * engine_plan_program) for the columns engine_scan_open found, into
 * st->prog; NULL, with st->stale_why saying why, when it no longer fits
 */
XpuProgram *
engine_scan_program(EngineScanState *st, CustomScan *cs)
{
	EngineColumns now = {0};

	if (st->src != NULL)
		now = (EngineColumns) {st->src->cols, st->src->n_cols, true};
	st->prog = engine_exec_program(llast(cs->custom_private), st->src ? &now : NULL,
								   &st->stale_why);
	return st->prog;
}

static void
engine_begin(CustomScanState *node, EState *estate, int eflags)
{
	EngineScanState *st = engine_state(node);
	CustomScan *cs = (CustomScan *) node->ss.ps.plan;
	ListCell   *lc;

	engine_run_init(&st->run, estate);
	engine_run_init(&st->share, estate);
	engine_run_init(&st->ahead, estate);
	foreach(lc, cs->custom_plans)
		node->custom_ps = lappend(node->custom_ps, ExecInitNode(lfirst(lc), estate, eflags));
	st->ops->begin(st, cs, estate, eflags);
}

/* ---------------- execution ---------------- */

static TupleTableSlot *
engine_exec(CustomScanState *node)
{
	EngineScanState *st = engine_state(node);

	return st->ops->exec(st);
}

/*
 * engine_scan_send: sends request req (a message of type `type`) in the
 * node's run: the first opens the run's connection, the next go on it;
 * their replies are then coming (st->run.active)
 */
void
engine_scan_send(EngineScanState *st, WarpMsgType type, StringInfo req)
{
	if (st->run.conn < 0)
		st->run.conn = service_run_begin(type, req->data, (uint32) req->len);
	else
		service_run_send(st->run.conn, type, req->data, (uint32) req->len);
	st->run.active = true;
	st->ran = true;
}

/* ---------------- the read-ahead ---------------- */

/*
 * engine_scan_read_ahead
 *		Asks the service to read the columns of the run req (an AGG_RUN's
 *		payload) into the GPU column cache now (AGG_FILL, xpu/protocol.h),
 *		on a connection of its own (st->ahead), while the backend builds
 *		the join depths' tables; the run that follows finds them there, or
 *		waits for those the read-ahead is still filling.  Its outcome is
 *		read by engine_scan_read_ahead_end.  A read-ahead that cannot be
 *		sent is no error of the query: the run reads the columns itself.
 */
void
engine_scan_read_ahead(EngineScanState *st, StringInfo req)
{
	MemoryContext cxt = CurrentMemoryContext;

	engine_run_close(&st->ahead);
	st->ahead_sent = true;
	st->ahead_why = NULL;
	PG_TRY();
	{
		st->ahead.conn = service_run_begin(WARP_MSG_AGG_FILL, req->data, (uint32) req->len);
		st->ahead.active = true;
	}
	PG_CATCH();
	{
		st->ahead_why = service_caught(cxt)->message;
	}
	PG_END_TRY();
}

/*
 * engine_scan_read_ahead_end
 *		The read-ahead's reply (after the run's last one, or with cancel:
 *		the run will not come, and the read-ahead is cancelled) into
 *		st->ahead_res, or why it read nothing into st->ahead_why; its
 *		connection kept for the backend's next run.  An error of the
 *		read-ahead (the run met the same, or its own) is not raised.
 */
void
engine_scan_read_ahead_end(EngineScanState *st, bool cancel)
{
	MemoryContext cxt = CurrentMemoryContext;
	uint32		len;
	void	   *reply;

	if (st->ahead.conn < 0)
		return;
	if (cancel)
	{
		engine_run_close(&st->ahead);
		st->ahead_why = "canceled: the join stays in PostgreSQL";
		return;
	}
	PG_TRY();
	{
		reply = service_run_next(st->ahead.conn, WARP_MSG_AGG_RESULT, &len);
		if (len < sizeof(WarpAggResult))
			elog(ERROR, "short AGG_RESULT of %u bytes", len);
		memcpy(&st->ahead_res, reply, sizeof(WarpAggResult));
		engine_run_keep(&st->ahead);
		if (st->ahead_res.engine != WARP_ENGINE_GPU)
			st->ahead_why = "the CPU engine reads no columns ahead";
	}
	PG_CATCH();
	{
		st->ahead_why = service_caught(cxt)->message;
		engine_run_close(&st->ahead);
	}
	PG_END_TRY();
}

/*
 * engine_scan_explain_read_ahead: EXPLAIN ANALYZE's line of the read-ahead
 * (none where the node sent none): the bytes it read into the GPU cache,
 * those it found there, and its time in the service
 */
void
engine_scan_explain_read_ahead(EngineScanState *st, ExplainState *es)
{
	const WarpAggResult *r = &st->ahead_res;

	if (!st->ahead_sent || !es->analyze)
		return;
	if (st->ahead_why != NULL)
	{
		ExplainPropertyText("Read Ahead", psprintf("none (%s)", st->ahead_why), es);
		return;
	}
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		ExplainPropertyText("Read Ahead",
							psprintf(UINT64_FORMAT " kB into the GPU cache, " UINT64_FORMAT
									 " kB there already, in %.3f ms",
									 (r->bytes_read + 1023) / 1024,
									 (r->bytes_cached + 1023) / 1024, r->wall_us / 1000.0), es);
		return;
	}
	ExplainPropertyInteger("Read Ahead Bytes", "bytes", (int64) r->bytes_read, es);
	ExplainPropertyInteger("Read Ahead Bytes Cached", "bytes", (int64) r->bytes_cached, es);
	ExplainPropertyFloat("Read Ahead Time", "ms", r->wall_us / 1000.0, 3, es);
}

/*
 * engine_scan_claim: the next run of work items [*w0, *w1) of an Arrow
 * table, from the DSM's counter under a Gather; false when none is left
 */
bool
engine_scan_claim(EngineScanState *st, int64 *w0, int64 *w1)
{
	int			chunk = st->shared ? st->shared->chunk : st->chunk;

	if (st->shared)
		*w0 = (int64) pg_atomic_fetch_add_u64(&st->shared->next, chunk);
	else
	{
		*w0 = st->next_local;
		st->next_local += chunk;
	}
	*w1 = Min(*w0 + chunk, st->n_work);
	return *w0 < st->n_work;
}

/* engine_scan_work_files: the files that work items [w0, w1) are in */
uint32
engine_scan_work_files(EngineScanState *st, int64 w0, int64 w1)
{
	uint32		n = 0;

	for (int64 w = w0; w < w1; w++)
		n += (w == w0 || st->work_file[w] != st->work_file[w - 1]);
	return n;
}

/*
 * engine_scan_put_work: a request's parts for work items [w0, w1): one
 * file part a file (engine_put_file), with its record batches among them,
 * each read into the n_cols chunk columns
 */
void
engine_scan_put_work(EngineScanState *st, StringInfo buf, int64 w0, int64 w1, int n_cols)
{
	for (int64 w = w0; w < w1;)
	{
		int64		e = w;

		while (e < w1 && st->work_file[e] == st->work_file[w])
			e++;
		engine_put_file(buf, &st->src->files[st->work_file[w]], &st->work_batch[w],
						(int) (e - w), st->src->fields, n_cols);
		w = e;
	}
}

/*
 * engine_scan_rewind: the claims start again (a rescan): the record
 * batches from the first, a heap run's blocks from the DSM's counter (reset
 * by ReInitializeDSM) or, when not parallel, the whole table again
 */
void
engine_scan_rewind(EngineScanState *st)
{
	st->next_local = 0;
	if (st->heap != NULL)
	{
		heap_agg_reset(st->heap);
		if (st->shared == NULL)
			st->heap->shared = NULL;
	}
}

static void
engine_end(CustomScanState *node)
{
	EngineScanState *st = engine_state(node);
	ListCell   *lc;

	if (st->ops->end)
		st->ops->end(st);
	engine_run_close(&st->run);
	engine_run_close(&st->share);
	engine_run_close(&st->ahead);
	foreach(lc, node->custom_ps)
		ExecEndNode(lfirst(lc));
}

static void
engine_rescan(CustomScanState *node)
{
	EngineScanState *st = engine_state(node);

	st->ops->rescan(st);
}

/* ---------------- parallel ---------------- */

/* the offset of the operator's part of the DSM */
#define ENGINE_PART_OFFSET	MAXALIGN(sizeof(EngineShared))

/* engine_scan_part: the operator's part of the DSM, or NULL when not parallel */
void *
engine_scan_part(EngineScanState *st)
{
	return st->shared ? (char *) st->shared + ENGINE_PART_OFFSET : NULL;
}

static Size
engine_estimate_dsm(CustomScanState *node, ParallelContext *pcxt)
{
	EngineScanState *st = engine_state(node);

	return add_size(ENGINE_PART_OFFSET,
					st->ops->dsm_size ? st->ops->dsm_size(st, pcxt->nworkers) : 0);
}

/*
 * the leader, before the workers start (reinit: before a rescan starts them
 * again): the claims over the table's blocks or record batches now, no
 * shared run, then the operator's part
 */
static void
engine_dsm_setup(EngineScanState *st, ParallelContext *pcxt, EngineShared *sh, bool reinit)
{
	int64		per = st->n_work / (4 * (pcxt->nworkers + 1));

	if (st->rel->rd_rel->relkind != RELKIND_FOREIGN_TABLE)
		heap_agg_shared_init(&sh->heap, st->rel, false);
	pg_atomic_init_u64(&sh->next, 0);
	sh->n_work = st->n_work;
	sh->chunk = (int32) Max(Min((int64) st->chunk, per), 1);
	if (!reinit)
		SpinLockInit(&sh->mutex);
	sh->share_id = 0;
	sh->attached = sh->done = 0;
	sh->closed = false;
	st->shared = sh;
	if (st->ops->dsm_init)
		st->ops->dsm_init(st, pcxt->nworkers, reinit);
}

static void
engine_init_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	engine_dsm_setup(engine_state(node), pcxt, coordinate, false);
}

static void
engine_reinit_dsm(CustomScanState *node, ParallelContext *pcxt, void *coordinate)
{
	engine_dsm_setup(engine_state(node), pcxt, coordinate, true);
}

/* a worker: the leader's claims, which must be over the same work */
static void
engine_init_worker(CustomScanState *node, shm_toc *toc, void *coordinate)
{
	EngineScanState *st = engine_state(node);
	EngineShared *sh = coordinate;

	if (sh->n_work != st->n_work)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the files of foreign table \"%s\" changed during scan",
						RelationGetRelationName(st->rel)),
				 errhint("Run the query again.")));
	st->shared = sh;
}

/*
 * the leader's ExecShutdownNode: the operator keeps what EXPLAIN needs of
 * its part before the DSM goes away with the workers
 */
static void
engine_shutdown(CustomScanState *node)
{
	EngineScanState *st = engine_state(node);

	if (st->shared == NULL || IsParallelWorker())
		return;
	if (st->ops->shutdown)
		st->ops->shutdown(st);
	st->shared = NULL;
	if (st->heap != NULL)
		st->heap->shared = NULL;
}

/*
 * engine_scan_share_open: opens the query's shared run in the service for
 * at most participants processes, held open by st->share until the node
 * ends; its id, or 0 when the service cannot be reached (the participants
 * then run their own runs and return their own results)
 */
uint64
engine_scan_share_open(EngineScanState *st, int participants)
{
	MemoryContext cxt = CurrentMemoryContext;
	WarpShareOpen req = {0};
	volatile uint64 id = 0;

	engine_run_close(&st->share);
	if (!pg_strong_random(&req.share_id, sizeof(req.share_id)))
		return 0;
	req.share_id |= 1;			/* never 0 */
	req.participants = (uint32) participants;
	PG_TRY();
	{
		uint32		len;
		WarpShareOpen *reply;

		st->share.conn = service_run_begin(WARP_MSG_SHARE_OPEN, &req, sizeof(req));
		reply = service_run_next(st->share.conn, WARP_MSG_SHARE_OPEN, &len);
		if (len == sizeof(req) && reply->share_id == req.share_id)
			id = req.share_id;
	}
	PG_CATCH();
	{
		FreeErrorData(service_caught(cxt));
	}
	PG_END_TRY();
	if (id == 0)
		engine_run_close(&st->share);
	return id;
}

/*
 * engine_scan_join: a parallel participant joins the query's shared run,
 * if there is one (else it runs on its own); false when it comes too late
 * (st->late): the last participant is returning the run's result, every
 * block is claimed
 */
bool
engine_scan_join(EngineScanState *st)
{
	EngineShared *sh = st->shared;

	if (sh->share_id == 0)
		return true;
	SpinLockAcquire(&sh->mutex);
	if (!sh->closed)
	{
		sh->attached++;
		st->joined = true;
	}
	SpinLockRelease(&sh->mutex);
	st->late = !st->joined;
	return st->joined;
}

/*
 * engine_scan_leave: a participant of the shared run whose part is in the
 * run (or whose blocks went to PostgreSQL) and who found nothing left to
 * claim; true when it is the last: then no one joins any more, and it
 * returns the run's result
 */
bool
engine_scan_leave(EngineScanState *st)
{
	EngineShared *sh = st->shared;
	bool		last;

	st->joined = false;
	SpinLockAcquire(&sh->mutex);
	last = ++sh->done == sh->attached;
	if (last)
		sh->closed = true;
	SpinLockRelease(&sh->mutex);
	return last;
}

/* ---------------- EXPLAIN ---------------- */

static void
engine_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	EngineScanState *st = engine_state(node);

	st->ops->explain(st, set_deparse_context_plan(es->deparse_cxt, node->ss.ps.plan,
												  ancestors), es);
}

static const CustomExecMethods engine_exec_methods = {
	.CustomName = "pg_warp engine",
	.BeginCustomScan = engine_begin,
	.ExecCustomScan = engine_exec,
	.EndCustomScan = engine_end,
	.ReScanCustomScan = engine_rescan,
	.EstimateDSMCustomScan = engine_estimate_dsm,
	.InitializeDSMCustomScan = engine_init_dsm,
	.ReInitializeDSMCustomScan = engine_reinit_dsm,
	.InitializeWorkerCustomScan = engine_init_worker,
	.ShutdownCustomScan = engine_shutdown,
	.ExplainCustomScan = engine_explain,
};
