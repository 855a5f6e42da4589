/*-------------------------------------------------------------------------
 *
 * scan.c
 *		Scanning an arrow_fdw table: EXPLAIN, Begin/Iterate/ReScan/End and
 *		the state that the processes of a parallel scan share.
 *
 * A scan reads only the buffers of the referenced columns, and only the
 * record batches whose statistics (pg2arrow -S, see stats.c) do not rule
 * out the WHERE clause.  A parallel scan hands out record batches, across
 * all files, through one atomic counter in dynamic shared memory.
 *
 * Every process of a scan (leader and parallel workers) checks that the
 * files it opens have the identity recorded in the plan (device, inode,
 * size, modification time), and every later reopen checks it again
 * (file.c), so a scan reads exactly the files it planned with or fails with
 * "file changed during scan".
 *
 * The quals that the engine compiles are evaluated per record batch by the
 * engine's filter before any row is formed; PostgreSQL evaluates only the
 * others.  arrow_fdw reaches that filter only through the hook the engine
 * installs (ArrowScanFilterHook, fdw_scan.h); without it no qual is
 * filtered here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/parallel.h"
#include "access/stratnum.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"

#include "fdw/arrow_fdw.h"
#include "fdw/fdw_scan.h"

/* shared state of a parallel scan */
typedef struct ArrowFdwShared
{
	pg_atomic_uint64 next_batch;
	pg_atomic_uint64 batches_read;
	pg_atomic_uint64 batches_skipped;
	pg_atomic_uint64 bytes_read;
	pg_atomic_uint64 rows_filtered;
} ArrowFdwShared;

/* executor state */
typedef struct ArrowFdwScanState
{
	ArrowFdwTable *table;
	bool	   *want;			/* field -> load it */
	AttrNumber *ref_attnos;		/* referenced columns */
	int			n_ref;
	const ArrowArray **ref_arrays;	/* their arrays in the current batch */
	bool		all_fast;		/* every referenced column converts in place */
	ArrowStatCond *conds;
	int			n_conds;
	ArrowScanColumn *scan_cols;	/* the referenced columns, for the engine */
	ArrowScanFilter *filter;	/* the engine's quals (filter_hook) */
	uint64		rows_filtered;	/* rows the filter removed (this process) */
	uint64		rows_filtered_flushed;	/* of those, added to shared */
	MemoryContext row_cxt;
	ArrowFdwShared *shared;		/* parallel scan, else NULL */
	uint64		next_batch;		/* serial scan */
	int			cur_file;
	ArrowBatch *batch;
	int64		row;
	/* counters for EXPLAIN ANALYZE */
	uint64		batches_read;
	uint64		batches_skipped;
	uint64		bytes_read;
	bool		have_final;		/* parallel totals copied at shutdown */
	uint64		final_read;
	uint64		final_skipped;
	uint64		final_bytes;
	uint64		final_filtered;
	/* error context */
	TupleDesc	tupdesc;
	int			ctx_attidx;		/* column being converted, -1: none */
} ArrowFdwScanState;

/* the engine's row filter (arrow_fdw_set_scan_filter), or NULL */
static const ArrowScanFilterHook *filter_hook = NULL;

/*
 * arrow_fdw_set_scan_filter: installs the row filter that scans use from
 * then on (the engine does, at _PG_init); hook must live as long as the
 * process.
 */
void
arrow_fdw_set_scan_filter(const ArrowScanFilterHook *hook)
{
	filter_hook = hook;
}


/* ----------------------------------------------------------------
 * EXPLAIN
 * ----------------------------------------------------------------
 */

/*
 * EXPLAIN without a running scan: the engine filter that
 * BeginForeignScan would set up, from the planned files' columns.
 */
static void
explain_engine_filter(ForeignScanState *node, List *files, List *referenced,
					  ExplainState *es)
{
	List	   *paths = NIL;
	AttrNumber *attnos = palloc(sizeof(AttrNumber) * Max(list_length(referenced), 1));
	int			n = 0;
	ArrowFdwTable *t;
	ListCell   *lc;

	foreach(lc, files)
		paths = lappend(paths, strVal(lfirst(lc)));
	foreach(lc, referenced)
		attnos[n++] = lfirst_int(lc);
	t = arrow_table_open(node->ss.ss_currentRelation, paths);
	filter_hook->explain(&node->ss, ((ForeignScan *) node->ss.ps.plan)->scan.scanrelid,
						 arrow_table_scan_columns(t, attnos, n), n, NULL, es);
	for (int i = 0; i < t->n_files; i++)
		arrow_file_close(t->files[i].file);
}

void
arrowExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	List	   *priv = plan->fdw_private;
	List	   *files = list_nth(priv, FdwPrivFiles);
	List	   *sizes = list_nth(priv, FdwPrivSizes);
	List	   *bytes = list_nth(priv, FdwPrivBytes);
	List	   *referenced = list_nth(priv, FdwPrivReferenced);
	Relation	rel = node->ss.ss_currentRelation;
	TupleDesc	tupdesc = RelationGetDescr(rel);
	List	   *names = NIL;
	ListCell   *lc;
	ArrowFdwScanState *st = node->fdw_state;

	foreach(lc, referenced)
		names = lappend(names,
						NameStr(TupleDescAttr(tupdesc, lfirst_int(lc) - 1)->attname));
	ExplainPropertyList("Referenced", names, es);

	/* one "File" line per file in text form, a list "Files" otherwise */
	names = NIL;
	for (int i = 0; i < list_length(files); i++)
	{
		const char *path = strVal(list_nth(files, i));
		const char *size = strVal(list_nth(sizes, i));
		const char *nbytes = strVal(list_nth(bytes, i));
		char	   *line = psprintf("%s (read %s of %s bytes)", path, nbytes, size);

		if (es->format == EXPLAIN_FORMAT_TEXT)
			ExplainPropertyText("File", line, es);
		else
			names = lappend(names, line);
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyList("Files", names, es);

	if (plan->fdw_exprs != NIL)
	{
		List	   *ctx = set_deparse_context_plan(es->deparse_cxt,
												   node->ss.ps.plan, NIL);
		List	   *conds = NIL;

		foreach(lc, plan->fdw_exprs)
			conds = lappend(conds,
							deparse_expression(lfirst(lc), ctx,
											   list_length(es->rtable) > 1, false));
		ExplainPropertyList("Stats Conditions", conds, es);
	}

	if (st != NULL && st->filter != NULL)
		filter_hook->explain(&node->ss, plan->scan.scanrelid, NULL, 0, st->filter, es);
	else if (st == NULL && filter_hook != NULL && pg_warp_enabled &&
			 plan->scan.plan.qual != NIL)
		explain_engine_filter(node, files, referenced, es);

	if (es->analyze && st != NULL)
	{
		uint64		nread = st->have_final ? st->final_read : st->batches_read;
		uint64		nskip = st->have_final ? st->final_skipped : st->batches_skipped;
		uint64		nbytes = st->have_final ? st->final_bytes : st->bytes_read;

		ExplainPropertyInteger("Batches Read", NULL, nread, es);
		ExplainPropertyInteger("Batches Skipped", NULL, nskip, es);
		ExplainPropertyInteger("Bytes Read", NULL, nbytes, es);
		if (st->filter != NULL)
			ExplainPropertyInteger("Rows Filtered by Scan", NULL,
								   st->have_final ? st->final_filtered : st->rows_filtered, es);
	}
}

/* ----------------------------------------------------------------
 * Execution
 * ----------------------------------------------------------------
 */
static void
scan_error_context(void *arg)
{
	ArrowFdwScanState *st = arg;

	if (st->batch && st->cur_file >= 0)
		errcontext("Arrow file \"%s\", record batch %d, row " INT64_FORMAT "%s%s%s",
				   st->table->files[st->cur_file].path, st->batch->index,
				   st->row, st->ctx_attidx >= 0 ? ", column \"" : "",
				   st->ctx_attidx >= 0 ? NameStr(TupleDescAttr(st->tupdesc, st->ctx_attidx)->attname) : "",
				   st->ctx_attidx >= 0 ? "\"" : "");
}

void
arrowBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	List	   *priv = plan->fdw_private;
	List	   *files = list_nth(priv, FdwPrivFiles);
	List	   *sizes = list_nth(priv, FdwPrivSizes);
	List	   *mtimes = list_nth(priv, FdwPrivMtimes);
	List	   *referenced = list_nth(priv, FdwPrivReferenced);
	List	   *idents = list_nth(priv, FdwPrivIdents);
	List	   *paths = NIL;
	ArrowFdwScanState *st;
	ListCell   *lc;
	int			i;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	st = palloc0(sizeof(ArrowFdwScanState));
	node->fdw_state = st;
	st->cur_file = -1;

	/* the files must be those that were planned: check what is opened */
	foreach(lc, files)
		paths = lappend(paths, strVal(lfirst(lc)));
	st->table = arrow_table_open(node->ss.ss_currentRelation, paths);
	if (st->table->n_files != list_length(files))
		elog(ERROR, "arrow_fdw: file list changed");
	for (i = 0; i < st->table->n_files; i++)
	{
		const ArrowPgSource *src = st->table->files[i].src;
		char	   *ident = psprintf(INT64_FORMAT ":" INT64_FORMAT, src->dev, src->ino);

		if (src->size != strtoi64(strVal(list_nth(sizes, i)), NULL, 10) ||
			src->mtime_ns != strtoi64(strVal(list_nth(mtimes, i)), NULL, 10) ||
			strcmp(ident, strVal(list_nth(idents, i))) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("file \"%s\" changed during scan", src->path),
					 errdetail("The Arrow file changed after the query was planned: its device, inode, size or modification time differs."),
					 errhint("Run the query again; a prepared statement must be prepared again.")));
	}

	/* the fields to load */
	st->want = palloc0(sizeof(bool) * Max(arrow_table_n_fields(st->table), 1));
	st->ref_attnos = palloc(sizeof(AttrNumber) * Max(list_length(referenced), 1));
	st->ref_arrays = palloc0(sizeof(ArrowArray *) * Max(list_length(referenced), 1));
	st->all_fast = true;
	foreach(lc, referenced)
	{
		AttrNumber	attno = lfirst_int(lc);

		st->ref_attnos[st->n_ref++] = attno;
		st->want[st->table->fields[attno - 1]] = true;
		if (st->table->convs[attno - 1].fast == ARROW_FAST_NONE)
			st->all_fast = false;
	}
	st->tupdesc = RelationGetDescr(node->ss.ss_currentRelation);
	st->ctx_attidx = -1;
	st->conds = arrow_stats_prepare(plan->fdw_exprs, &st->n_conds);
	if (filter_hook != NULL && pg_warp_enabled)
	{
		st->scan_cols = arrow_table_scan_columns(st->table, st->ref_attnos, st->n_ref);
		st->filter = filter_hook->begin(&node->ss, plan->scan.scanrelid,
										st->scan_cols, st->n_ref);
	}
	st->row_cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
										"arrow_fdw rows", ALLOCSET_DEFAULT_SIZES);
}

static void
release_batch(ArrowFdwScanState *st)
{
	if (st->batch)
	{
		arrow_batch_free(st->batch);
		st->batch = NULL;
	}
}

/* Loads the next record batch that the statistics do not rule out. */
static bool
next_batch(ArrowFdwScanState *st)
{
	ArrowFdwTable *t = st->table;

	release_batch(st);
	if (st->shared && st->rows_filtered > st->rows_filtered_flushed)
	{
		pg_atomic_fetch_add_u64(&st->shared->rows_filtered,
								st->rows_filtered - st->rows_filtered_flushed);
		st->rows_filtered_flushed = st->rows_filtered;
	}
	for (;;)
	{
		uint64		g;
		int			f;
		int32		b;
		ArrowFdwFile *file;
		ArrowError	err;
		int64		before;

		if (st->shared)
			g = pg_atomic_fetch_add_u64(&st->shared->next_batch, 1);
		else
			g = st->next_batch++;
		if (g >= (uint64) t->total_batches)
		{
			if (st->cur_file >= 0)
				arrow_pg_source_close(t->files[st->cur_file].src);
			return false;
		}
		arrow_table_locate_batch(t, (int32) g, &f, &b);
		file = &t->files[f];
		if (st->n_conds > 0 &&
			arrow_stats_skip_batch(st->conds, st->n_conds, t->convs, t->fields,
								   file->file, b))
		{
			st->batches_skipped++;
			if (st->shared)
				pg_atomic_fetch_add_u64(&st->shared->batches_skipped, 1);
			continue;
		}
		if (st->cur_file != f)
		{
			if (st->cur_file >= 0)
				arrow_pg_source_close(t->files[st->cur_file].src);
			st->cur_file = f;
		}
		CHECK_FOR_INTERRUPTS();
		before = file->src->bytes_read;
		memset(&err, 0, sizeof(err));
		if (arrow_batch_load(file->file, b, st->want, &st->batch, &err) != ARROW_OK)
		{
			st->batch = NULL;
			arrow_pg_report(&err, psprintf("read record batch %d of", b), file->path);
		}
		st->bytes_read += file->src->bytes_read - before;
		st->batches_read++;
		if (st->shared)
		{
			pg_atomic_fetch_add_u64(&st->shared->batches_read, 1);
			pg_atomic_fetch_add_u64(&st->shared->bytes_read,
									file->src->bytes_read - before);
		}
		st->row = 0;
		for (int i = 0; i < st->n_ref; i++)
			st->ref_arrays[i] = &st->batch->columns[t->fields[st->ref_attnos[i] - 1]];
		if (st->batch->n_rows > 0)
			return true;
		release_batch(st);
	}
}

TupleTableSlot *
arrowIterateForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	ErrorContextCallback errcb;
	MemoryContext old;

next_row:
	ExecClearTuple(slot);
	for (;;)
	{
		if (st->batch == NULL || st->row >= st->batch->n_rows)
		{
			if (!next_batch(st))
				return slot;
			if (st->filter)
				filter_hook->batch(st->filter, st->ref_arrays, st->batch->n_rows);
		}
		if (st->filter == NULL || filter_hook->row(st->filter, st->row))
			break;
		st->row++;
		st->rows_filtered++;
	}
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	if (st->all_fast)
	{
		/* plain fixed-width values: no memory, no error possible */
		for (int i = 0; i < st->n_ref; i++)
		{
			int			a = st->ref_attnos[i] - 1;

			slot->tts_values[a] = arrow_conv_fast(&st->table->convs[a],
												  st->ref_arrays[i], st->row,
												  &slot->tts_isnull[a]);
		}
	}
	else
	{
		MemoryContextReset(st->row_cxt);
		old = MemoryContextSwitchTo(st->row_cxt);
		errcb.callback = scan_error_context;
		errcb.arg = st;
		errcb.previous = error_context_stack;
		error_context_stack = &errcb;
		for (int i = 0; i < st->n_ref; i++)
		{
			int			a = st->ref_attnos[i] - 1;

			st->ctx_attidx = a;
			slot->tts_values[a] = arrow_conv_value(&st->table->convs[a],
												   st->ref_arrays[i], st->row,
												   &slot->tts_isnull[a]);
		}
		st->ctx_attidx = -1;
		error_context_stack = errcb.previous;
		MemoryContextSwitchTo(old);
	}
	st->row++;
	ExecStoreVirtualTuple(slot);
	/* a batch the engine left to PostgreSQL: the engine's quals here */
	if (st->filter &&
		!filter_hook->recheck(st->filter, node->ss.ps.ps_ExprContext, slot))
	{
		st->rows_filtered++;
		goto next_row;
	}
	return slot;
}

void
arrowReScanForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	release_batch(st);
	st->next_batch = 0;
	st->row = 0;
}

void
arrowEndForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	if (st == NULL)
		return;
	release_batch(st);
	for (int i = 0; i < st->table->n_files; i++)
	{
		arrow_pg_source_close(st->table->files[i].src);
		arrow_file_close(st->table->files[i].file);
	}
}

/* ----------------------------------------------------------------
 * Parallel scans
 * ----------------------------------------------------------------
 */
Size
arrowEstimateDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt)
{
	return sizeof(ArrowFdwShared);
}

static void
reset_shared(ArrowFdwShared *sh)
{
	pg_atomic_write_u64(&sh->next_batch, 0);
	pg_atomic_write_u64(&sh->batches_read, 0);
	pg_atomic_write_u64(&sh->batches_skipped, 0);
	pg_atomic_write_u64(&sh->bytes_read, 0);
	pg_atomic_write_u64(&sh->rows_filtered, 0);
}

void
arrowInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
							  void *coordinate)
{
	ArrowFdwShared *sh = coordinate;
	ArrowFdwScanState *st = node->fdw_state;

	pg_atomic_init_u64(&sh->next_batch, 0);
	pg_atomic_init_u64(&sh->batches_read, 0);
	pg_atomic_init_u64(&sh->batches_skipped, 0);
	pg_atomic_init_u64(&sh->bytes_read, 0);
	pg_atomic_init_u64(&sh->rows_filtered, 0);
	if (st)
		st->shared = sh;
}

void
arrowReInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
								void *coordinate)
{
	reset_shared(coordinate);
}

void
arrowInitializeWorkerForeignScan(ForeignScanState *node, shm_toc *toc,
								 void *coordinate)
{
	ArrowFdwScanState *st = node->fdw_state;

	if (st)
		st->shared = coordinate;
}

void
arrowShutdownForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	/* the DSM goes away after this: keep the totals for EXPLAIN ANALYZE */
	if (st && st->shared && !IsParallelWorker())
	{
		st->final_read = pg_atomic_read_u64(&st->shared->batches_read);
		st->final_skipped = pg_atomic_read_u64(&st->shared->batches_skipped);
		st->final_bytes = pg_atomic_read_u64(&st->shared->bytes_read);
		st->final_filtered = pg_atomic_read_u64(&st->shared->rows_filtered);
		st->have_final = true;
		st->shared = NULL;
	}
}
