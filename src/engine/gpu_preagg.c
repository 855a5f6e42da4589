/*-------------------------------------------------------------------------
 *
 * gpu_preagg.c
 *		GpuPreAgg: GROUP BY aggregation of an Arrow foreign table by the
 *		engine.  The planner hook offers a CustomScan path for the grouping
 *		of one arrow_fdw table whose quals, group keys and aggregates all
 *		compile; at run time the node sends the program and the table's
 *		record batches to the warp service (AGG_RUN), which reads the files,
 *		filters and aggregates on the GPU or on its CPU engine's threads and
 *		returns one row of states per group.  The node turns each group into
 *		PostgreSQL's own result values (final functions applied with
 *		PostgreSQL's numeric code where that is what PostgreSQL does) and
 *		evaluates HAVING and the target list over them.
 *
 * Exactness.  Only aggregates whose result the engine computes exactly as
 * PostgreSQL does are offloaded: count, sum and avg of integers and
 * numerics (exact 128-bit sums; avg divides with PostgreSQL's numeric_div),
 * sum of float4 and float8 and avg of float4 and float8 (float sums: the
 * order of additions differs, as it does between PostgreSQL's own parallel
 * plans), min and max of integer, float, numeric, date and timestamp values
 * and of text in the C collation, stddev and variance (of integers and
 * numerics from exact sums and sums of squares through PostgreSQL's own
 * deserial and final functions; of floats float8_accum's state combined as
 * float8_combine does, through PostgreSQL's final functions), the same of
 * pg_warp's float2 (its sum is float4's sum of the exactly widened values,
 * its avg, stddev and variance float8_accum's over them, as float2_ops.c
 * computes them), and pg_warp's hll_count and hll_sketch (the very sketch hll_trans would build, through
 * their own final functions).
 * A run that meets an error (overflow, division by zero in a qual) or a
 * value the engine cannot hold exactly reports it instead of groups; the
 * node then runs the plan PostgreSQL would have run without pg_warp (its
 * child), so results and errors are PostgreSQL's own.
 *
 * Heap tables.  The grouping of one plain heap table is offered too: the
 * node then ships the table's pages with their visible tuples through a
 * shared memory ring (heap_source.c, shm_chunk.c) and the service decodes
 * and aggregates them, on its GPU or its CPU engine as pg_warp.engine
 * says; the rest is as for Arrow tables.
 *
 * Parallel heap runs.  Over a heap table the node is offered as well as a
 * partial path of PostgreSQL's parallel aggregation (Finalize Aggregate over
 * Gather over a parallel-aware GpuPreAgg): each participant, leader and
 * workers, runs its own heap run over the block ranges it claims from a
 * counter in the query's dynamic shared memory (heap_source.c), with the
 * parallel query's shared snapshot, and returns its groups as PostgreSQL's
 * partial aggregate states (the serialized transition states its own
 * Partial Aggregate would return), which Finalize Aggregate combines.  A
 * participant whose run falls back runs PostgreSQL's partial aggregation
 * (its child: Partial Aggregate over a sequential scan) over exactly the
 * ranges it had claimed, then over the ranges it claims next, so no block
 * is lost or read twice.  On Arrow tables the service spreads the work over
 * its own threads or the GPU and the node is not parallel.
 *
 * Partitioned tables.  The grouping of a partitioned table (alone or joined
 * with tables that are not partitioned) is a node per partition returning
 * partial states under an Append and a Finalize Aggregate, planned by
 * gpu_join_part.c with gpu_preagg_plan.c's planning functions (gpu_preagg.h).
 *
 * The node runs through the engine's one executor (engine_scan.c: the
 * source, the program, the run, the block claims, the shared run and the
 * DSM).  This file has GpuPreAgg's part of execution, its EngineOps
 * (gpa_ops) and EXPLAIN; its planning (paths, costs, the plan) is
 * gpu_preagg_plan.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/parallel.h"
#include "access/tableam.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/nodeFuncs.h"
#include "portability/instr_time.h"
#include "storage/spin.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

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

/* settings (the planner's are gpu_preagg_plan.c's) */
static int	pg_warp_gpupreagg_hll_memory = 1024;	/* MB */

/* ---------------- execution ---------------- */

/* one participant's figures of a parallel GpuPreAgg (EXPLAIN ANALYZE) */
typedef struct GpaInstr
{
	int32		state;			/* GPA_RAN_* */
	int32		engine;			/* WARP_ENGINE_* of its run */
	uint64		ranges;			/* block ranges claimed */
	uint64		pages_shipped;
	uint64		tuples_shipped;
	uint64		chunks;
	uint64		units_served;	/* units aggregated from the GPU cache */
	uint64		units_read;		/* units read from the files by the service */
	uint64		rows_in;		/* rows the engine read */
	uint64		groups;			/* partial groups returned by the engine */
	GjRows		join_rows;		/* its run's rows into and out of each depth */
} GpaInstr;

#define GPA_RAN_NOT		0		/* the participant did not run the node */
#define GPA_RAN_ENGINE	1
#define GPA_RAN_FALLBACK 2		/* PostgreSQL's partial aggregation ran */

/*
 * GpuPreAgg's part of a parallel node's dynamic shared memory (the block
 * counter and the shared run are the common part's, engine_scan.h): who
 * returned the shared run's groups, and the participants' figures.
 *
 * The shared run (xpu/protocol.h, SHARE_OPEN).  The leader opens it before
 * the workers start and holds it open until the node ends.  Each
 * participant that joins (attached) leaves the groups of the blocks it
 * claims in it instead of returning them; one whose run falls back returns
 * PostgreSQL's partial groups of its blocks as before.  A participant is
 * done once it finds no block left to claim and its own rows are out; the
 * one that makes done equal attached is the last: every block is claimed
 * and every part is in the run, so it closes the run to late joiners and
 * returns the run's groups, merged, once for the query.  Finalize Aggregate
 * then combines as many rows as there are groups (plus any fallback's),
 * not one per group per participant.  share_id 0: no shared run (the
 * service could not be reached); each participant returns its own groups.
 */
typedef struct GpaShared
{
	/* finish_* and join_fallback: guarded by EngineShared.mutex */
	int			finisher;		/* who returned them: -1 the leader, else the
								 * worker's number; -2 none yet */
	uint64		finish_groups;	/* the groups returned */
	bool		join_fallback;	/* a participant's run fell back: the last
								 * runs PostgreSQL's plan of the whole join */
	GjShared	joins;			/* the join depths' tables (the leader's) */
	int			n_instr;		/* leader (0) and workers (1 ..) */
	GpaInstr	instr[FLEXIBLE_ARRAY_MEMBER];
} GpaShared;

typedef struct GpaState
{
	EngineScanState es;			/* the table (es.heap: a heap table's run, or
								 * NULL), program, run (engine_scan.h) */
	int			n_keys;
	Oid			float2_oid;		/* pg_warp's float2 type (codegen_float2_type) */
	Oid		   *key_types;
	int		   *key_scales;		/* numeric keys */
	int			n_aggs;
	GpaAggExec *aggs;
	int			n_descs;		/* engine states per group */
	XpuAggDesc *descs;
	uint16	   *key_outs;
	int		   *key_sign;		/* a float key's hidden ZERO_SIGN state, or
								 * -1: see gpa_compile */
	List	   *quals;
	/* the join depths (GpuJoin): their plan items, clauses and inner tables */
	List	   *join_private;
	List	   *join_clauses;	/* per depth, from the scan tuple (EXPLAIN) */
	GjInner    *inner;
	int			n_depths;
	bool		compiled;		/* false: the child runs (EXPLAIN says why) */
	/* the run */
	bool		fallback;		/* the child produces the rows */
	const char *fallback_why;
	GpaStore   *groups;			/* the AGG_RESULT messages (preagg_store.c) */
	const char *cur_msg;		/* the one groups are read from, or NULL */
	uint32		cur_len;		/* its length */
	uint32		cur_group;		/* groups consumed from the current message */
	uint32		cur_off;		/* byte offset of the next group in it */
	WarpAggResult last;			/* the last message's counters */
	double		request_ms;		/* the run's join tables and request built */
	double		trip_ms;		/* its request sent, its last reply received */
	MemoryContext row_cxt;
	bool		partial_states; /* PostgreSQL's partial states out (GPA_PARTIAL*) */
	/* a parallel heap run (custom_private's mode GPA_PARTIAL_PARALLEL) */
	bool		partial;		/* partial states out, blocks claimed */
	bool		fb_scanning;	/* the fallback child reads a range now */
	bool		finishing;		/* returns the shared run's groups */
	bool		whole;			/* returns PostgreSQL's plan of the whole join */
	const char *build_why;		/* the leader's: why the inner tables were not
								 * built for the workers (gj_shared_build) */
	GpaInstr   *instr;			/* the participants' figures after shutdown */
	int			n_instr;
	int			finisher;		/* the shared run's, after shutdown (GpaShared) */
	uint64		finish_groups;
} GpaState;

/*
 * gpa_agg_functions: PostgreSQL's final function (and for FIN_VAR_EXACT and
 * FIN_HLL its deserial function) of aggregate ae, from pg_aggregate
 */
static void
gpa_agg_functions(GpaAggExec *ae)
{
	HeapTuple	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(ae->aggfn));
	Form_pg_aggregate agg;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for aggregate %u", ae->aggfn);
	agg = (Form_pg_aggregate) GETSTRUCT(tup);
	fmgr_info(agg->aggfinalfn, &ae->finalfn);
	if (ae->info->final == FIN_VAR_EXACT || ae->info->final == FIN_HLL)
		fmgr_info(agg->aggdeserialfn, &ae->deserialfn);
	ae->poly = ae->argtype == INT2OID || ae->argtype == INT4OID;
	ReleaseSysCache(tup);
}

/*
 * gpa_compile_agg: the engine states of aggregate a (ae) from state index
 * *n_descs on, its argument appended to *args (the program's outs after the
 * n_keys keys)
 */
static void
gpa_compile_agg(GpaState *st, GpaAggExec *ae, Aggref *a, List **args)
{
	XpuAggDesc *d = &st->descs[st->n_descs];

	ae->info = gpa_agg_info(a->aggfnoid);
	ae->aggfn = a->aggfnoid;
	ae->first = st->n_descs;
	d[0].kind = (uint8) ae->info->kind;
	d[1].kind = (uint8) ae->info->kind2;
	/* partial states of avg(float) are float8_accum's, Sxx included */
	if (st->partial_states && ae->info->kind == XPU_AGG_MOMENTS)
		d[0].kind = (uint8) XPU_AGG_VAR_FLOAT;
	st->n_descs += gpa_n_states(ae->info);
	if (a->args != NIL)
	{
		Expr	   *arg = ((TargetEntry *) linitial(a->args))->expr;

		ae->argtype = exprType((Node *) arg);
		ae->arg_float2 = ae->argtype == st->float2_oid && OidIsValid(st->float2_oid);
		*args = lappend(*args, arg);
		d[0].out = d[1].out = (uint16) (st->n_keys + list_length(*args) - 1);
	}
	if (ae->info->kind == XPU_AGG_HLL)
	{
		/* the precision hll_trans would give the sketches now */
		ae->hll_p = pg_warp_hll_registers_bits;
		d[0].param = (uint8) ae->hll_p;
		d[0].limit = (uint32) pg_warp_gpupreagg_hll_memory;
	}
	if (ae->info->final == FIN_VAR_EXACT || ae->info->final == FIN_VAR_FLOAT ||
		ae->info->final == FIN_HLL)
		gpa_agg_functions(ae);
}

/*
 * gpa_compile: the plan's program and the key and aggregate descriptions;
 * false (and the child will run, st->fallback_why says why) when the
 * program no longer fits (engine_exec_program: the table's files changed
 * since planning, say).
 */
static bool
gpa_compile(GpaState *st, CustomScan *cs, Index relid, int eflags, int n_keys, int n_aggs)
{
	List	   *tl = cs->custom_scan_tlist;
	List	   *keys = NIL,
			   *args = NIL;
	AttrNumber *attnos;
	int			n_attnos;
	ListCell   *lc;

	st->n_keys = n_keys;
	st->n_aggs = n_aggs;
	st->float2_oid = codegen_float2_type();
	st->key_types = palloc0(sizeof(Oid) * Max(st->n_keys, 1));
	st->key_scales = palloc0(sizeof(int) * Max(st->n_keys, 1));
	st->key_outs = palloc0(sizeof(uint16) * Max(st->n_keys, 1));
	st->key_sign = palloc(sizeof(int) * Max(st->n_keys, 1));
	st->aggs = palloc0(sizeof(GpaAggExec) * Max(st->n_aggs, 1));
	/* at most two states per aggregate (GpaAggInfo), one per key, one spare */
	st->descs = palloc0(sizeof(XpuAggDesc) * (2 * st->n_aggs + st->n_keys + 1));
	foreach(lc, tl)
	{
		TargetEntry *te = lfirst(lc);
		int			i = foreach_current_index(lc);

		if (i >= n_keys + n_aggs)
			break;
		if (i < st->n_keys)
		{
			keys = lappend(keys, te->expr);
			st->key_types[i] = exprType((Node *) te->expr);
			st->key_outs[i] = (uint16) i;
		}
		else
			gpa_compile_agg(st, &st->aggs[i - st->n_keys], (Aggref *) te->expr, &args);
	}

	/*
	 * A float key's bytes are canonical (-0 is 0: xpu_agg_key_word), so a
	 * group of -0 would come back as 0, where PostgreSQL returns the value
	 * of a row of the group.  A hidden ZERO_SIGN of the key says whether
	 * every row was -0; gpa_next then puts the sign on the zero key.
	 */
	for (int i = 0; i < st->n_keys; i++)
	{
		Oid			t = st->key_types[i];

		st->key_sign[i] = -1;
		if (t == FLOAT4OID || t == FLOAT8OID || (OidIsValid(st->float2_oid) && t == st->float2_oid))
		{
			st->descs[st->n_descs].kind = XPU_AGG_ZERO_SIGN;
			st->descs[st->n_descs].out = (uint16) i;
			st->key_sign[i] = st->n_descs++;
		}
	}
	/* the columns the program loads: also those of the join depths' clauses */
	foreach(lc, st->join_clauses)
		args = list_concat(args, lfirst(lc));
	attnos = gpa_attnos(relid, list_concat(list_concat(list_copy(keys), args), st->quals),
						&n_attnos);
	if (attnos == NULL)
		elog(ERROR, "GpuPreAgg: the plan's expressions read a system column");
	engine_scan_open(&st->es, relid, eflags, st->quals, attnos, n_attnos);
	if (st->es.src != NULL && st->partial)
		elog(ERROR, "GpuPreAgg: a parallel run of a foreign table");
	if (engine_scan_program(&st->es, cs) == NULL)
	{
		st->fallback_why = st->es.stale_why;
		return false;
	}
	for (int i = 0; i < st->n_keys; i++)
		st->key_scales[i] = XPU_REGS(st->es.prog)[XPU_OUTS(st->es.prog)[i]].scale;
	for (int i = 0; i < st->n_aggs; i++)
		if (st->aggs[i].info->kind != XPU_AGG_COUNT_STAR)
			st->aggs[i].scale =
				XPU_REGS(st->es.prog)[XPU_OUTS(st->es.prog)[st->descs[st->aggs[i].first].out]].scale;
	if (st->es.src == NULL)
		st->es.heap = heap_agg_prepare(st->es.rel, attnos, n_attnos);
	return true;
}

/*
 * EngineOps.begin: the plan's program, keys and aggregates, the table's
 * source; the child (custom_ps, begun by engine_scan.c) is PostgreSQL's plan
 * for the same grouping
 */
static void
gpa_begin(EngineScanState *node, CustomScan *cs, EState *estate, int eflags)
{
	GpaState   *st = (GpaState *) node;
	int			n_keys = intVal(linitial(cs->custom_private));
	int			n_aggs = intVal(lsecond(cs->custom_private));
	int			n_quals = intVal(lthird(cs->custom_private));
	Var		   *anchor = (Var *) llast_node(TargetEntry, cs->custom_scan_tlist)->expr;
	Index		relid = (Index) anchor->varno;
	int			te = n_keys + n_aggs + n_quals;
	ListCell   *lc;

	st->partial = intVal(lfourth(cs->custom_private)) == GPA_PARTIAL_PARALLEL;
	st->partial_states = intVal(lfourth(cs->custom_private)) != GPA_FINAL;
	st->finisher = -2;
	for (int i = 0; i < n_quals; i++)
		st->quals = lappend(st->quals,
							list_nth_node(TargetEntry, cs->custom_scan_tlist,
										  n_keys + n_aggs + i)->expr);
	st->join_private = list_nth(cs->custom_private, 4);
	foreach(lc, st->join_private)
	{
		List	   *clauses = NIL;

		for (int i = 0; i < list_length(lfourth((List *) lfirst(lc))); i++)
			clauses = lappend(clauses,
							  list_nth_node(TargetEntry, cs->custom_scan_tlist, te++)->expr);
		st->join_clauses = lappend(st->join_clauses, clauses);
	}
	st->inner = gj_exec_init(st->join_private,
							 list_copy_tail(node->css.custom_ps, 1), &st->n_depths);
	st->compiled = gpa_compile(st, cs, relid, eflags, n_keys, n_aggs);
	/* who builds a depth's inner table, where another node of the query shares it */
	gj_exec_name(st->inner, st->n_depths,
				 psprintf("GpuPreAgg on %s", RelationGetRelationName(st->es.rel)));
	if (!st->compiled && st->partial)
		st->es.heap = heap_agg_prepare(st->es.rel, NULL, 0);	/* its claims only */
	if (!st->compiled)
		st->fallback = true;	/* gpa_compile said why */
	st->row_cxt = AllocSetContextCreate(estate->es_query_cxt, "GpuPreAgg rows",
										ALLOCSET_DEFAULT_SIZES);
	st->groups = gpa_store_create();
}

/* ---------------- the request ---------------- */

/*
 * the AGG_RUN (HEAP_RUN) payload of st (protocol.h), as a part of the
 * query's shared run when st joined it, or the finish of that run
 * (share_role WARP_SHARE_FINISH: no source); NULL if it is too large
 */
static StringInfo
gpa_request(GpaState *st, uint32 share_role)
{
	StringInfo	buf = makeStringInfo();
	WarpAggRequest req = {0};

	req.n_files = st->es.heap ? 0 : st->es.src->n_files;
	req.n_keys = st->n_keys;
	req.n_aggs = st->n_descs;
	req.prog_len = st->es.prog->total_len;
	req.n_joins = (uint32) st->n_depths;
	req.engine = (uint32) pg_warp_engine;
	req.max_buffer_size = (int64) pg_warp_arrow_max_buffer_size * 1024;
	if (share_role != 0)
	{
		req.share_id = st->es.shared->share_id;
		req.share_role = share_role;
	}
	engine_put(buf, &req, sizeof(req), 8);
	engine_put(buf, st->key_outs, sizeof(uint16) * st->n_keys, 8);
	engine_put(buf, st->descs, sizeof(XpuAggDesc) * st->n_descs, 8);
	engine_put(buf, st->es.prog, st->es.prog->total_len, 16);
	for (int d = 0; d < st->n_depths; d++)
		engine_put(buf, &st->inner[d].join_id, sizeof(uint64), 8);
	if (share_role == WARP_SHARE_FINISH)
		return engine_request_end(buf) ? buf : NULL;
	if (st->es.heap)
		heap_agg_put_request(st->es.heap, buf);
	for (int f = 0; st->es.src && f < st->es.src->n_files; f++)
	{
		const ArrowEngineFile *ef = &st->es.src->files[f];

		/* chunk column j (XpuColumn.col_index) reads field fields[j] */
		engine_put_file(buf, ef, ef->batches, ef->n_batches, st->es.src->fields,
						st->es.prog->n_cols);
		if (buf->len > PGWARP_MAX_PAYLOAD)
			return NULL;
	}
	return engine_request_end(buf) ? buf : NULL;
}

/*
 * gpa_fallback_reason: why a run that ended in a FALLBACK whose message is
 * msg left the query to PostgreSQL, in the user's terms
 */
static const char *
gpa_fallback_reason(const char *msg)
{
	if (strstr(msg, "HyperLogLog") != NULL)
		return "the groups' HyperLogLog sketches need more memory than "
			"pg_warp.gpupreagg_hll_memory allows";
	if (strncmp(msg, "the service ran out of memory", 29) == 0)
		return "the pg_warp service ran out of memory";
	return "a value the engine does not hold exactly";
}

/* gpa_groups_rewind: the next gpa_next returns the run's first group */
static void
gpa_groups_rewind(GpaState *st)
{
	gpa_store_rewind(st->groups);
	st->cur_msg = gpa_store_next(st->groups, &st->cur_len);
	st->cur_group = 0;
	st->cur_off = sizeof(WarpAggResult);
}

/*
 * gpa_collect: the replies of the run on st->es.run.conn (through the heap
 * run's ring when heap is set) into st->groups, until the last, whose
 * header goes to *last; then the connection is kept for the backend's
 * next run (a heap run's is closed)
 */
static void
gpa_collect(GpaState *st, HeapAggRun *heap, WarpAggResult *last)
{
	for (;;)
	{
		uint32		len;
		char	   *msg = heap ? heap_agg_next(heap, st->es.run.conn, &len) :
			service_run_next(st->es.run.conn, WARP_MSG_AGG_RESULT, &len);
		WarpAggResult hdr;

		if (len < sizeof(WarpAggResult))
			elog(ERROR, "pg_warp service sent a short AGG_RESULT (%u bytes)", len);
		memcpy(&hdr, msg, sizeof(hdr));
		gpa_store_add(st->groups, msg, len);
		if (hdr.flags & WARP_AGG_LAST)
		{
			*last = hdr;
			last->err_message[sizeof(hdr.err_message) - 1] = '\0';
			break;
		}
	}
	/* an Arrow run's connection serves the next one; a heap run's is closed */
	if (heap == NULL)
		engine_run_keep(&st->es.run);
	else
		engine_run_close(&st->es.run);
}

/* gpa_read_ahead: GjBuildStart's: the run's read-ahead (engine_scan_read_ahead) */
static void
gpa_read_ahead(void *arg)
{
	GpaState   *st = arg;
	StringInfo	req = gpa_request(st, 0);

	if (req != NULL)
		engine_scan_read_ahead(&st->es, req);
}

/*
 * gpa_run_engine: runs the aggregation in the service and keeps its groups,
 * or decides that the child runs instead.
 */
static void
gpa_run_engine(GpaState *st)
{
	StringInfo	req;
	bool		built = false;	/* this node ran its depths' builds */
	instr_time	t0,
				t1,
				t2;

	INSTR_TIME_SET_CURRENT(t0);

	/*
	 * The join depths' inner tables first: PostgreSQL runs their plans; in a
	 * parallel node the leader did before the workers started
	 */
	if (st->n_depths > 0 && st->partial && st->es.shared != NULL)
	{
		if (!gj_shared_take(&((GpaShared *) engine_scan_part(&st->es))->joins, st->inner,
							st->n_depths, &st->fallback_why))
		{
			st->fallback = true;
			return;
		}
	}
	else if (st->n_depths > 0)
	{
		/* while a costly table is built, the service reads the Arrow columns */
		GjBuildStart start = {gpa_read_ahead, st, pg_warp_gpujoin_read_ahead_cost,
			st->es.heap != NULL};

		if (!gj_exec_load(st->inner, st->n_depths, st->es.prog, &start, &st->fallback_why))
		{
			engine_scan_read_ahead_end(&st->es, true);
			st->fallback = true;
			return;
		}
		built = true;
	}
	if ((req = gpa_request(st, st->es.joined ? WARP_SHARE_PART : 0)) == NULL)
	{
		engine_scan_read_ahead_end(&st->es, true);
		st->fallback = true;
		st->fallback_why = "the request is larger than the protocol allows";
		return;
	}
	if (st->es.heap && IsolationIsSerializable())
	{
		st->fallback = true;
		st->fallback_why = "serializable transactions read heap tables in PostgreSQL";
		return;
	}
	INSTR_TIME_SET_CURRENT(t1);
	if (st->es.heap && !heap_agg_begin(st->es.heap, st->es.css.ss.ps.state->es_snapshot,
									   req->data, (uint32) req->len, &st->es.run.conn,
									   &st->fallback_why))
	{
		st->fallback = true;
		return;
	}
	if (!st->es.heap)
		engine_scan_send(&st->es, WARP_MSG_AGG_RUN, req);
	/* the builds' workers exit while the service runs */
	if (built)
		gj_exec_shutdown(st->inner, st->n_depths);
	gpa_collect(st, st->es.heap, &st->last);
	engine_scan_read_ahead_end(&st->es, false);
	INSTR_TIME_SET_CURRENT(t2);
	INSTR_TIME_SUBTRACT(t2, t1);
	INSTR_TIME_SUBTRACT(t1, t0);
	st->request_ms = INSTR_TIME_GET_MILLISEC(t1);
	st->trip_ms = INSTR_TIME_GET_MILLISEC(t2);
	if (st->last.status != XPU_OK)
	{
		/* PostgreSQL evaluates the query: its own result, or its own error */
		st->fallback = true;
		st->fallback_why = st->last.status == XPU_ERR_FALLBACK ?
			gpa_fallback_reason(st->last.err_message) :
			"the engine met an error; PostgreSQL raises its own";
	}
	gpa_groups_rewind(st);
}

/* gpa_report: this participant's figures into the parallel node's DSM */
static void
gpa_report(GpaState *st)
{
	int			slot = ParallelWorkerNumber + 1;
	GpaShared  *part = engine_scan_part(&st->es);
	GpaInstr   *in;

	if (part == NULL || slot < 0 || slot >= part->n_instr)
		return;
	in = &part->instr[slot];
	in->state = st->fallback ? GPA_RAN_FALLBACK : GPA_RAN_ENGINE;
	in->engine = (int32) st->last.engine;
	in->ranges = (uint64) list_length(st->es.heap->ranges) / 2;
	in->pages_shipped = st->es.heap->pages_shipped;
	in->tuples_shipped = st->es.heap->tuples_shipped;
	in->chunks = st->es.heap->chunks;
	in->units_served = st->es.heap->units_served;
	in->units_read = st->es.heap->units_read;
	in->rows_in = st->fallback ? 0 : st->last.rows_in;
	in->groups = st->fallback ? 0 : st->last.groups_total;
	memset(&in->join_rows, 0, sizeof(in->join_rows));
	if (st->fallback)
		gj_rows_uncounted(&in->join_rows);
	else
		gj_rows_add(&in->join_rows, st->n_depths, st->last.join_depths, st->last.join_in,
					st->last.join_out);
}

/*
 * gpa_join_rows: the rows into and out of each depth for EXPLAIN ANALYZE
 * (gpu_join_rows.c): the participants' sum, or this node's run's
 */
static void
gpa_join_rows(GpaState *st)
{
	GjRows		r;

	memset(&r, 0, sizeof(r));
	if (st->instr != NULL)
	{
		for (int i = 0; i < st->n_instr; i++)
			if (st->instr[i].state != GPA_RAN_NOT)
				gj_rows_sum(&r, &st->instr[i].join_rows);
	}
	else if (st->fallback)
		gj_rows_uncounted(&r);
	else if (st->es.ran)
		gj_rows_add(&r, st->n_depths, st->last.join_depths, st->last.join_in,
					st->last.join_out);
	gj_rows_show(st->inner, st->n_depths, &r);
}

/*
 * gpa_finish: the last participant takes the shared run's groups, every
 * part's merged, into its store; gpa_next returns them
 */
static void
gpa_finish(GpaState *st)
{
	StringInfo	req;
	GpaShared  *part = engine_scan_part(&st->es);
	WarpAggResult last;
	bool		whole;

	SpinLockAcquire(&st->es.shared->mutex);
	whole = part->join_fallback;
	if (whole)
		part->finisher = ParallelWorkerNumber;
	SpinLockRelease(&st->es.shared->mutex);
	if (whole)
	{
		/* the run lacks a part: PostgreSQL's plan of the whole join instead */
		st->finishing = st->whole = true;
		return;
	}
	req = gpa_request(st, WARP_SHARE_FINISH);
	if (req == NULL)
		elog(ERROR, "GpuPreAgg: the finish of a shared run is larger than the protocol allows");
	st->finishing = true;
	gpa_store_reset(st->groups);
	engine_scan_send(&st->es, WARP_MSG_AGG_RUN, req);
	gpa_collect(st, NULL, &last);
	if (last.status != XPU_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("pg_warp service could not return the groups of a parallel GpuPreAgg"),
				 errdetail("%s", last.err_message)));
	SpinLockAcquire(&st->es.shared->mutex);
	part->finisher = ParallelWorkerNumber;
	part->finish_groups = last.groups_total;
	SpinLockRelease(&st->es.shared->mutex);
	gpa_groups_rewind(st);
}

/*
 * gpa_run: the node's first call: the engine's run (a parallel node's over
 * the blocks it claims from the shared counter, as a part of the query's
 * shared run), unless the child runs
 */
static void
gpa_run(GpaState *st)
{
	st->es.ran = true;
	if (st->partial && st->es.shared != NULL)
	{
		st->es.heap->shared = &st->es.shared->heap;
		if (!engine_scan_join(&st->es))
			return;
	}
	if (!st->fallback)
		gpa_run_engine(st);
	if (st->partial)
		gpa_report(st);
}

/*
 * gpa_restrict_child: points the fallback child of a parallel node (Partial
 * Aggregate over a sequential scan) at blocks start .. start + n - 1: its
 * scan is begun here, without synchronized scanning, limited to them; for
 * the next range the aggregation is rescanned as if its input's parameters
 * had changed (a hashed one would otherwise return its old groups again)
 * and the scan rescanned and limited anew
 */
static void
gpa_restrict_child(GpaState *st, BlockNumber start, BlockNumber n)
{
	PlanState  *agg = linitial(st->es.css.custom_ps);
	ScanState  *scan = (ScanState *) outerPlanState(agg);

	if (!IsA(agg, AggState) || scan == NULL || !IsA(scan, SeqScanState))
		elog(ERROR, "GpuPreAgg: the fallback of a parallel run is not an aggregate of a scan");
	if (scan->ss_currentScanDesc == NULL)
		scan->ss_currentScanDesc = table_beginscan_strat(scan->ss_currentRelation,
														 agg->state->es_snapshot,
														 0, NULL, true, false);
	else
	{
		scan->ps.chgParam = bms_add_member(scan->ps.chgParam, 0);
		ExecReScan(agg);
		ExecReScan(&scan->ps);
	}
	heap_setscanlimits(scan->ss_currentScanDesc, start, n);
}

/*
 * gpa_partial_fallback: the next row of PostgreSQL's partial aggregation
 * over the block ranges of a parallel node whose run fell back: the ranges
 * its run had claimed, then the ones it claims now (one Partial Aggregate
 * pass per range: Finalize Aggregate combines any number of partial rows)
 */
static TupleTableSlot *
gpa_partial_fallback(GpaState *st)
{
	for (;;)
	{
		BlockNumber start,
					n;

		if (st->fb_scanning)
		{
			TupleTableSlot *slot = ExecProcNode(linitial(st->es.css.custom_ps));

			if (!TupIsNull(slot))
				return slot;
			st->fb_scanning = false;
		}
		if (!heap_agg_fallback_range(st->es.heap, &start, &n))
		{
			gpa_report(st);
			return NULL;
		}
		gpa_restrict_child(st, start, n);
		st->fb_scanning = true;
	}
}

/* the next group into the scan slot, or an empty slot at the end */
static TupleTableSlot *
gpa_next(ScanState *ss)
{
	GpaState   *st = (GpaState *) ss;
	TupleTableSlot *slot = ss->ss_ScanTupleSlot;
	MemoryContext old;

	ExecClearTuple(slot);
	MemoryContextReset(st->row_cxt);
	while (st->cur_msg != NULL)
	{
		const char *msg = st->cur_msg;
		uint32		len = st->cur_len;
		WarpAggResult hdr;
		uint32		key_len;
		size_t		states_off,
					extra_off;

		memcpy(&hdr, msg, sizeof(hdr));
		if (st->cur_group >= hdr.n_groups)
		{
			st->cur_msg = gpa_store_next(st->groups, &st->cur_len);
			st->cur_group = 0;
			st->cur_off = sizeof(WarpAggResult);
			continue;
		}
		if (len - st->cur_off < 4)
			elog(ERROR, "GpuPreAgg: a group from the service is truncated");
		memcpy(&key_len, msg + st->cur_off, 4);
		states_off = TYPEALIGN(16, 4 + (size_t) key_len);
		if ((size_t) len - st->cur_off < states_off + sizeof(XpuAggState) * st->n_descs)
			elog(ERROR, "GpuPreAgg: a group from the service is truncated");
		extra_off = states_off + sizeof(XpuAggState) * st->n_descs;
		old = MemoryContextSwitchTo(st->row_cxt);
		gpa_decode_keys(st->n_keys, st->key_types, st->key_scales, st->float2_oid,
						(const uint8 *) msg + st->cur_off + 4, key_len,
						slot->tts_values, slot->tts_isnull);
		for (int k = 0; k < st->n_keys; k++)
		{
			XpuAggState m;

			if (st->key_sign[k] < 0 || slot->tts_isnull[k])
				continue;
			memcpy(&m, msg + st->cur_off + states_off + sizeof(XpuAggState) * st->key_sign[k],
				   sizeof(XpuAggState));
			gpa_key_zero_sign(st->key_types[k], st->float2_oid, &m, &slot->tts_values[k]);
		}
		for (int a = 0; a < st->n_aggs; a++)
		{
			XpuAggState s[2];
			const uint8 *extra = NULL;

			memcpy(s, msg + st->cur_off + states_off + sizeof(XpuAggState) * st->aggs[a].first,
				   sizeof(XpuAggState) * gpa_n_states(st->aggs[a].info));
			if (XPU_AGG_EXTENDED(st->aggs[a].info->kind))
			{
				/* its value's bytes follow the states, 16-byte padded (xpu/protocol.h) */
				size_t		n = TYPEALIGN(16, (size_t) (uint64) s[0].v.i);

				if (s[0].v.i < 0 || (size_t) len - st->cur_off < extra_off + n)
					elog(ERROR, "GpuPreAgg: a group from the service is truncated");
				extra = (const uint8 *) msg + st->cur_off + extra_off;
				extra_off += n;
			}
			slot->tts_values[st->n_keys + a] = st->partial_states ?
				gpa_partial(&st->aggs[a], s, extra, &slot->tts_isnull[st->n_keys + a]) :
				gpa_final(&st->aggs[a], s, extra, &slot->tts_isnull[st->n_keys + a]);
		}
		MemoryContextSwitchTo(old);
		/* the resjunk quals and anchor of the scan tuple (gpa_plan_path) */
		for (int i = st->n_keys + st->n_aggs; i < slot->tts_tupleDescriptor->natts; i++)
			slot->tts_isnull[i] = true;
		st->cur_off += extra_off;
		st->cur_group++;
		return ExecStoreVirtualTuple(slot);
	}
	return slot;
}

static bool
gpa_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

/*
 * gpa_join_fallback: a participant of a parallel node with join depths
 * whose run fell back.  The fallback plan is PostgreSQL's parallel plan of
 * the join, whose parallel scans share the fact table's blocks among the
 * participants that run it.  Without a shared run every participant falls
 * back and runs it; in a shared run, the other parts may be in the run
 * already, so this one leaves the run and marks it, and the last to leave
 * drops the run's groups and runs the plan alone, over every block
 * (gpa_finish).  Returns this participant's next row.
 */
static TupleTableSlot *
gpa_join_fallback(GpaState *st)
{
	if (!st->es.joined)
	{
		st->whole = true;
		return ExecProcNode(linitial(st->es.css.custom_ps));
	}
	SpinLockAcquire(&st->es.shared->mutex);
	((GpaShared *) engine_scan_part(&st->es))->join_fallback = true;
	SpinLockRelease(&st->es.shared->mutex);
	gpa_report(st);
	return ExecClearTuple(st->es.css.ss.ps.ps_ResultTupleSlot);
}

/*
 * gpa_exec: the node's rows: the engine's groups, or the child's; a part
 * of a shared run returns only the rows of its fallback (if it fell back),
 * then, when it is the last to be done, the run's groups
 */
static TupleTableSlot *
gpa_exec(EngineScanState *node)
{
	GpaState   *st = (GpaState *) node;
	TupleTableSlot *slot;

	if (!st->es.ran)
		gpa_run(st);
	if (st->es.late)
		return ExecClearTuple(node->css.ss.ps.ps_ResultTupleSlot);
	if ((st->fallback && !st->partial) || st->whole)
		return ExecProcNode(linitial(node->css.custom_ps));
	if (!st->finishing)
	{
		slot = !st->fallback ? ExecScan(&node->css.ss, gpa_next, gpa_recheck) :
			st->n_depths > 0 ? gpa_join_fallback(st) : gpa_partial_fallback(st);
		if (!TupIsNull(slot) || !st->es.joined || !engine_scan_leave(&st->es))
			return slot;
		gpa_finish(st);
		if (st->whole)
			return ExecProcNode(linitial(node->css.custom_ps));
	}
	return ExecScan(&node->css.ss, gpa_next, gpa_recheck);
}

/* EngineOps.end: the groups' temporary file, the join tables (engine_scan.c ends the rest) */
static void
gpa_end(EngineScanState *node)
{
	GpaState   *st = (GpaState *) node;

	gpa_store_reset(st->groups);
	gj_exec_end(st->inner, st->n_depths);
}

/* EngineOps.rescan */
static void
gpa_rescan(EngineScanState *node)
{
	GpaState   *st = (GpaState *) node;

	if (st->partial)
	{
		/* a new run over the blocks claimed anew (ReInitializeDSM resets the counter) */
		engine_run_close(&st->es.run);
		st->es.ran = false;
		st->fallback = !st->compiled;
		st->fb_scanning = false;
		st->es.joined = st->es.late = st->finishing = st->whole = false;
		gpa_store_reset(st->groups);
		st->cur_msg = NULL;
		memset(&st->last, 0, sizeof(st->last));
		engine_scan_rewind(&st->es);
		return;
	}
	if (st->fallback)
		ExecReScan(linitial(node->css.custom_ps));
	if (!st->fallback)
		gpa_groups_rewind(st);
}

/* ---------------- parallel heap runs ---------------- */

/* EngineOps.dsm_size: GpaShared */
static Size
gpa_dsm_size(EngineScanState *node, int nworkers)
{
	return add_size(offsetof(GpaShared, instr), mul_size(sizeof(GpaInstr), nworkers + 1));
}

/*
 * EngineOps.dsm_init: the leader, before the workers start (and before a
 * rescan's): a new shared run, no figures yet
 */
static void
gpa_dsm_init(EngineScanState *node, int nworkers, bool reinit)
{
	GpaState   *st = (GpaState *) node;
	GpaShared  *part = engine_scan_part(node);

	part->finisher = -2;
	part->finish_groups = 0;
	node->shared->share_id = st->compiled ? engine_scan_share_open(node, nworkers + 1) : 0;
	part->n_instr = nworkers + 1;
	memset(part->instr, 0, sizeof(GpaInstr) * part->n_instr);
	part->join_fallback = false;
	if (st->n_depths > 0 && st->compiled)
		st->build_why = gj_shared_build(&part->joins, reinit, st->inner, st->n_depths,
										st->es.prog, node->shared->share_id == 0 ?
										"the pg_warp service could not open the query's "
										"shared run" : NULL);
}

/*
 * EngineOps.shutdown: keeps the participants' figures for EXPLAIN before
 * the DSM goes away with the workers (the leader's ExecShutdownNode)
 */
static void
gpa_shutdown(EngineScanState *node)
{
	GpaState   *st = (GpaState *) node;
	GpaShared  *part = engine_scan_part(node);

	st->n_instr = part->n_instr;
	st->instr = palloc(sizeof(GpaInstr) * st->n_instr);
	memcpy(st->instr, part->instr, sizeof(GpaInstr) * st->n_instr);
	st->finisher = part->finisher;
	st->finish_groups = part->finish_groups;
}

/*
 * gpa_explain_workers: each worker's part of a parallel node (the leader's
 * is the node's own figures), as PostgreSQL shows its nodes' workers
 */
static void
gpa_explain_workers(GpaState *st, ExplainState *es)
{
	bool		opened = false;

	for (int i = 1; i < st->n_instr; i++)
	{
		const GpaInstr *in = &st->instr[i];
		const char *engine = in->state == GPA_RAN_FALLBACK ? "PostgreSQL (fallback)" :
			in->engine == WARP_ENGINE_GPU ? "GPU" : "CPU";

		if (in->state == GPA_RAN_NOT)
			continue;
		if (es->format == EXPLAIN_FORMAT_TEXT)
		{
			appendStringInfoSpaces(es->str, es->indent * 2);
			appendStringInfo(es->str, "Worker %d:  Engine: %s  Block Ranges: " UINT64_FORMAT
							 "  Pages Shipped: " UINT64_FORMAT "  Tuples Shipped: "
							 UINT64_FORMAT "  Chunks: " UINT64_FORMAT "  Groups: "
							 UINT64_FORMAT, i - 1, engine, in->ranges,
							 in->pages_shipped, in->tuples_shipped, in->chunks, in->groups);
			if (in->units_served > 0)
				appendStringInfo(es->str, "  Units from GPU Cache: " UINT64_FORMAT,
								 in->units_served);
			if (in->units_read > 0)
				appendStringInfo(es->str, "  Units Read by the Service: " UINT64_FORMAT,
								 in->units_read);
			appendStringInfoChar(es->str, '\n');
			continue;
		}
		if (!opened)
			ExplainOpenGroup("Workers", "Workers", false, es);
		opened = true;
		ExplainOpenGroup("Worker", NULL, true, es);
		ExplainPropertyInteger("Worker Number", NULL, i - 1, es);
		ExplainPropertyText("Engine", engine, es);
		ExplainPropertyInteger("Block Ranges", NULL, (int64) in->ranges, es);
		ExplainPropertyInteger("Pages Shipped", NULL, (int64) in->pages_shipped, es);
		ExplainPropertyInteger("Tuples Shipped", NULL, (int64) in->tuples_shipped, es);
		ExplainPropertyInteger("Chunks", NULL, (int64) in->chunks, es);
		ExplainPropertyInteger("Units from GPU Cache", NULL, (int64) in->units_served, es);
		ExplainPropertyInteger("Units Read by the Service", NULL, (int64) in->units_read, es);
		ExplainPropertyInteger("Groups", NULL, (int64) in->groups, es);
		ExplainCloseGroup("Worker", NULL, true, es);
	}
	if (opened)
		ExplainCloseGroup("Workers", "Workers", false, es);
}

/* ---------------- EXPLAIN ---------------- */

/* EngineOps.explain */
static void
gpa_explain(EngineScanState *node, List *ctx, ExplainState *es)
{
	GpaState   *st = (GpaState *) node;

	engine_explain_filter(es, st->quals, ctx, true);
	if (st->n_depths > 0 && es->analyze)
		gpa_join_rows(st);
	if (st->n_depths > 0)
		gj_explain(st->inner, st->n_depths, st->join_clauses, ctx, es->analyze, es);
	if (es->analyze && st->build_why != NULL)
		ExplainPropertyText("Inner Tables Not Built", st->build_why, es);
	if (st->es.src != NULL)
		engine_explain_source(es, st->es.src);
	if (st->es.heap != NULL)
		heap_agg_explain(st->es.heap, es->analyze && st->es.ran && !st->fallback, es);
	if (st->partial_states)
		ExplainPropertyText("Aggregate States", "partial", es);
	if (es->analyze && st->instr != NULL)
		gpa_explain_workers(st, es);
	if (es->analyze && st->finisher != -2)
	{
		/* the shared run's groups, returned once for the query */
		ExplainPropertyInteger("Shared Run Groups", NULL, (int64) st->finish_groups, es);
		ExplainPropertyText("Shared Run Groups Returned By", st->finisher < 0 ? "leader" :
							psprintf("worker %d", st->finisher), es);
	}
	if (es->verbose && st->es.prog != NULL)
		engine_explain_program(st->es.prog, es);
	if (!es->analyze)
		ExplainPropertyText("Fallback Plan", st->compiled ?
							"the plan below, run only where the engine cannot answer" :
							psprintf("the plan below runs (%s)", st->fallback_why), es);
	if (!es->analyze || !st->es.ran)
		return;
	if (st->es.late)
	{
		ExplainPropertyText("Engine", "none (the other participants had claimed every block)",
							es);
		return;
	}
	if (st->fallback)
	{
		ExplainPropertyText("Engine", "PostgreSQL (fallback)", es);
		ExplainPropertyText("Fallback Reason", st->fallback_why, es);
		if (st->last.err_message[0] != '\0')
			ExplainPropertyText("Fallback Detail", st->last.err_message, es);
		return;
	}
	engine_explain_engine(es, true, st->last.engine);
	ExplainPropertyInteger("Rows Read", NULL, (int64) st->last.rows_in, es);
	ExplainPropertyInteger("Rows Passed", NULL, (int64) st->last.rows_passed, es);
	ExplainPropertyInteger("Groups", NULL, (int64) st->last.groups_total, es);
	if (gpa_store_spilled(st->groups) > 0 || es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyInteger("Groups Spilled to Disk", "bytes",
							   (int64) gpa_store_spilled(st->groups), es);
	ExplainPropertyInteger("Bytes Read", "bytes", (int64) st->last.bytes_read, es);
	if (st->last.engine == WARP_ENGINE_GPU)
		ExplainPropertyInteger("Bytes From GPU Cache", "bytes", (int64) st->last.bytes_cached, es);
	engine_scan_explain_read_ahead(&st->es, es);
	if (st->last.engine == WARP_ENGINE_GPU && st->es.heap == NULL)
		engine_explain_data_path(es, st->last.bytes_read, (int64) st->last.bytes_cached,
								 st->last.bytes_mapped, st->last.bytes_to_pin,
								 st->last.io_us, st->last.bytes_direct,
								 st->last.direct_mode);
	else if (st->last.engine == WARP_ENGINE_GPU)
	{
		engine_explain_heap_pinned(es, st->last.bytes_mapped, st->last.bytes_to_pin);
		engine_explain_cufile(es, st->last.bytes_direct, st->last.direct_mode);
	}
	engine_explain_times(es, st->last.io_us, st->last.exec_us, st->last.threads);
	ExplainPropertyFloat("Service Wall Time", "ms", st->last.wall_us / 1000.0, 3, es);
	ExplainPropertyFloat("Service Round Trip", "ms", st->trip_ms, 3, es);
	ExplainPropertyFloat("Request Time", "ms", st->request_ms, 3, es);
	if (st->last.engine == WARP_ENGINE_GPU)
		engine_explain_devices(es, st->last.n_devices, st->last.devices);
}

/* ---------------- registration ---------------- */

static const EngineOps gpa_ops = ENGINE_OPS(gpa, "GpuPreAgg", GpaState);

/* GpuPreAgg's path and plan methods (gpu_preagg_plan.c) */
const CustomPathMethods *
gpa_path_methods(void)
{
	return &gpa_ops.path;
}

const CustomScanMethods *
gpa_scan_methods(void)
{
	return &gpa_ops.scan;
}

/* pg_warp_gpu_preagg_init: settings and the planner hook (from _PG_init) */
void
pg_warp_gpu_preagg_init(void)
{
	gpa_plan_init();
	DefineCustomIntVariable("pg_warp.gpupreagg_hll_memory",
							"Memory the HyperLogLog sketches of a GpuPreAgg run may take per engine thread.",
							"A run whose hll_count or hll_sketch groups need more falls back to "
							"PostgreSQL's plan.",
							&pg_warp_gpupreagg_hll_memory, 1024, 1, 1024 * 1024,
							PGC_USERSET, GUC_UNIT_MB, NULL, NULL, NULL);
	heap_source_init();
	pg_warp_gpu_join_init();
	pg_warp_gpu_join_part_init();
	engine_scan_register(&gpa_ops);
}
