/*-------------------------------------------------------------------------
 *
 * engine_scan.h
 *		The one executor of the engine's CustomScan nodes (engine_scan.c):
 *		the state every engine node starts with (EngineScanState), the
 *		operator table through which GpuScan, GpuPreAgg (and GpuJoin next)
 *		plug their own work into it (EngineOps), and the parallel state
 *		they share in the DSM (EngineShared).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ENGINE_SCAN_H
#define PG_WARP_ENGINE_SCAN_H

#include "access/parallel.h"
#include "nodes/execnodes.h"
#include "nodes/extensible.h"
#include "port/atomics.h"
#include "storage/spin.h"

#include "engine/executor.h"
#include "engine/heap_source.h"

struct ExplainState;
typedef struct EngineScanState EngineScanState;

/*
 * The part of a parallel engine node's DSM that engine_scan.c owns; the
 * operator's own part (EngineOps.dsm_size) follows it, MAXALIGNed.
 *
 * Claims: an Arrow table's record batches (EngineScanState.work) are claimed
 * `chunk` at a time from `next`; a heap table's blocks from `heap`
 * (heap_source.c).  Every participant's node has the same work items, or
 * the files changed under it (engine_scan_init_worker says so).
 *
 * The query's shared run in the service (xpu/protocol.h, SHARE_OPEN), for
 * an operator that opens one in its dsm_init (engine_scan_share_open): one
 * run that every participant's work goes into, whose result the last
 * participant returns once (engine_scan_join, engine_scan_leave).
 * share_id 0: none.
 */
typedef struct EngineShared
{
	/* claims */
	HeapAggShared heap;			/* a heap table's block counter */
	pg_atomic_uint64 next;		/* an Arrow table's next work item */
	int64		n_work;			/* the leader's work items, checked by workers */
	int32		chunk;			/* work items per claim */
	/* the shared run */
	uint64		share_id;		/* the run, or 0 */
	slock_t		mutex;			/* guards attached, done, closed and what the
								 * operator's part says it guards */
	int			attached;		/* participants that joined the run */
	int			done;			/* ... whose part is in it or went to PostgreSQL */
	bool		closed;			/* the last is returning the result: no joiner */
} EngineShared;

/*
 * EngineOps: what an engine operator plugs into the common executor
 * (ENGINE_OPS below fills the table).  Its first two members are the
 * CustomScanMethods and CustomPathMethods of the operator, so that the
 * executor finds the operator of a plan from the plan's methods; the plan's
 * custom_private must end with engine_plan_program's item (the program
 * engine_scan_program hands out).
 *
 * The common executor (engine_scan.c) does, for every operator: the state
 * (state_size bytes, EngineScanState first), the run's connection and the
 * shared run's (closed when the query ends or the node ends), the child
 * plans in custom_plans (ExecInitNode at begin, ExecEndNode at end: their
 * PlanStates are custom_ps, in order), the source (engine_scan_open: an
 * Arrow table's files and record batches or nothing for a heap table), the
 * program from the plan (engine_scan_program), the claims of a parallel
 * run and the shared run in the DSM, and EXPLAIN's deparse context.  The
 * operator does what is its own, in these callbacks (NULL: nothing):
 *
 * begin     required.  Reads its plan (custom_private, custom_scan_tlist,
 *           custom_exprs), calls engine_scan_open for the table it reads
 *           and engine_scan_program, then prepares its run: a heap table's
 *           run (heap_agg_prepare into st->heap), its slots, expressions
 *           and what its fallback needs.  GpuJoin: the inner plans are in
 *           custom_ps already (ExecInitNode'd); its hash tables are built
 *           at the first exec, not here.
 * exec      required.  The node's next row (ExecCustomScan): it starts the
 *           run at its first call (sets st->ran), streams the service's
 *           replies (st->run.conn) into the scan slot or its result slot.
 *           GpuScan asks for the record batches of one claim at a time
 *           (engine_scan_claim, engine_scan_put_work) and reads blocks of
 *           rows (engine_rows_block); GpuPreAgg asks once for the whole
 *           table and reads groups; a parallel participant of a shared run
 *           joins it first (engine_scan_join) and, when it has nothing left
 *           to claim, leaves it (engine_scan_leave: the last one returns
 *           the run's result).  GpuJoin: rows or groups as these do, its
 *           inner hash tables in the query's shared run.
 * end       what the node holds beside the connections and children: a
 *           ring of heap chunks, a store of results with its files.
 * rescan    required.  Makes the next exec start again: a run in progress
 *           is cancelled by engine_run_close(&st->run); the claims start
 *           again (engine_scan_rewind); its children are rescanned where
 *           their parameters changed (custom_ps is the operator's to
 *           rescan).
 * dsm_size  bytes of the operator's part of the DSM for nworkers workers.
 * dsm_init  the leader, before the workers start (reinit false) and before
 *           a rescan's start them again (reinit true): the operator's part
 *           (engine_scan_part).  Claims are reset by the common part; a
 *           shared run is opened here (engine_scan_share_open) if wanted.
 * shutdown  the leader, before the DSM goes away: copy what EXPLAIN needs
 *           out of the operator's part.
 * explain   EXPLAIN's lines of the node, with ctx the deparse context of its
 *           plan; the common lines are the engine_explain_* helpers
 *           (executor.h).
 */
typedef struct EngineOps
{
	CustomScanMethods scan;
	CustomPathMethods path;
	Size		state_size;
	void		(*begin) (EngineScanState *st, CustomScan *cs, EState *estate, int eflags);
	TupleTableSlot *(*exec) (EngineScanState *st);
	void		(*end) (EngineScanState *st);
	void		(*rescan) (EngineScanState *st);
	Size		(*dsm_size) (EngineScanState *st, int nworkers);
	void		(*dsm_init) (EngineScanState *st, int nworkers, bool reinit);
	void		(*shutdown) (EngineScanState *st);
	void		(*explain) (EngineScanState *st, List *ctx, struct ExplainState *es);
} EngineOps;

/*
 * ENGINE_OPS(op, name, State): the EngineOps of the operator whose
 * CustomName is name, whose state is State (an EngineScanState first) and
 * whose functions are named after op: op_plan_path (PlanCustomPath),
 * op_begin, op_exec, op_end, op_rescan, op_dsm_size, op_dsm_init,
 * op_shutdown and op_explain.  GpuScan's: ENGINE_OPS(gs, "GpuScan", GsState).
 */
#define ENGINE_OPS(op, name, State) ENGINE_OPS_PLAN(op, op##_plan_path, name, State)
/* the same, for an operator whose plan function is another operator's (plan) */
#define ENGINE_OPS_PLAN(op, plan, name, State) \
{ \
	.scan = {.CustomName = (name), .CreateCustomScanState = engine_scan_create}, \
	.path = {.CustomName = (name), .PlanCustomPath = (plan)}, \
	.state_size = sizeof(State), \
	.begin = op##_begin, \
	.exec = op##_exec, \
	.end = op##_end, \
	.rescan = op##_rescan, \
	.dsm_size = op##_dsm_size, \
	.dsm_init = op##_dsm_init, \
	.shutdown = op##_shutdown, \
	.explain = op##_explain, \
}

/*
 * The state every engine node starts with (the operator's follows).
 */
struct EngineScanState
{
	CustomScanState css;
	const EngineOps *ops;
	/* the table the node reads */
	Relation	rel;
	ArrowEngineSource *src;		/* an Arrow table's files (engine_scan_open) */
	HeapAggRun *heap;			/* a heap table's run (the operator's begin) */
	/* the program (engine_scan_program) */
	XpuProgram *prog;			/* palloc'ed, 16-byte aligned, or NULL */
	const char *stale_why;		/* NULL, or why the plan's program no longer fits */
	/* the run */
	EngineRun	run;			/* the connection of the node's run */
	bool		ran;			/* the operator started its run */
	/* an Arrow table's record batches, in file order: the work items */
	int64		n_work;
	int32	   *work_file;
	int32	   *work_batch;
	int			chunk;			/* work items per claim */
	int64		next_local;		/* the next claim when not parallel */
	/* parallel */
	EngineShared *shared;		/* the DSM under a Gather, or NULL */
	EngineRun	share;			/* the leader's: holds the shared run open */
	/* the read-ahead of the run's columns (engine_scan_read_ahead) */
	EngineRun	ahead;
	bool		ahead_sent;
	WarpAggResult ahead_res;	/* its outcome once read, if ahead_why is NULL */
	const char *ahead_why;		/* why it read nothing or failed, or NULL */
	bool		joined;			/* a part of the shared run, not done yet */
	bool		late;			/* came after the shared run closed */
};

/* in engine_scan.c */
extern Node *engine_scan_create(CustomScan *cs);
extern void engine_scan_register(const EngineOps *ops);
extern void engine_scan_open(EngineScanState *st, Index relid, int eflags, List *quals,
							 const AttrNumber *attnos, int n_attnos);
extern XpuProgram *engine_scan_program(EngineScanState *st, CustomScan *cs);
extern void engine_scan_send(EngineScanState *st, WarpMsgType type, StringInfo req);
extern bool engine_scan_claim(EngineScanState *st, int64 *w0, int64 *w1);
extern uint32 engine_scan_work_files(EngineScanState *st, int64 w0, int64 w1);
extern void engine_scan_put_work(EngineScanState *st, StringInfo buf, int64 w0, int64 w1,
								 int n_cols);
extern void engine_scan_rewind(EngineScanState *st);
extern void *engine_scan_part(EngineScanState *st);
extern uint64 engine_scan_share_open(EngineScanState *st, int participants);
extern bool engine_scan_join(EngineScanState *st);
extern bool engine_scan_leave(EngineScanState *st);
extern void engine_scan_read_ahead(EngineScanState *st, StringInfo req);
extern void engine_scan_read_ahead_end(EngineScanState *st, bool cancel);
extern void engine_scan_explain_read_ahead(EngineScanState *st, struct ExplainState *es);

#endif							/* PG_WARP_ENGINE_SCAN_H */
