/*-------------------------------------------------------------------------
 *
 * agg.c
 *		AGG_RUN (xpu/protocol.h): GROUP BY aggregation of record batches of
 *		Arrow files with an xPU program, run by the CPU engine on a pool of
 *		threads, its groups sent back in AGG_RESULT messages.
 *
 * A run's life.  The epoll thread (server.c) hands the request's payload to
 * agg_task_start, which copies it, checks every offset and count, validates
 * the program and the aggregation spec, and starts the run's own thread;
 * a malformed request is refused there (ERROR WARP_ERR_PROTOCOL) and no
 * thread starts.  The run's thread opens the files (read-only, regular
 * files only, identity compared with the request's), then runs n_threads
 * workers: each claims record batches from one counter over all files'
 * batches, loads only the fields the program reads, runs the program in
 * slices of AGG_SLICE rows and folds the passing rows into its own
 * XpuAggTable.  A worker that finds no batch left helps the others: it
 * claims slices of the loaded batch with the most left (AggLive), so that
 * the last batches do not leave all but a few threads idle (39 batches on
 * 16 threads is 3 batches for some, 2 for others: a quarter of the time
 * lost).  The tables are merged at the end (with many groups by as many
 * threads, each into tables of their own for partitions of the groups'
 * hashes: 16 tables of 600,000 groups one after the other took longer than
 * the scan; by XPU_AGG_PARTS partitions when a table spilled, as the
 * workers' tables do when PG_WARP_AGG_SPILL_GROUPS asks, xpu_agg.h) and the
 * thread signals
 * the epoll thread (notify_fd), which then sends the replies
 * (agg_task_reply) as the socket takes them, so that a result of millions
 * of groups never sits in one buffer.
 *
 * The files.  Each file is opened once (its fd, its footer); the reader
 * does not modify an ArrowFile while loading batches and reads with pread,
 * so the workers share one ArrowFile per file (src/arrow/arrow_read.c).
 *
 * HEAP_RUN.  The same task, with a heap part instead of files: its chunks
 * arrive while it runs (heap_chunk.c decodes and aggregates them on its own
 * CPU workers); the replies are an AGG_RUN's.
 *
 * Shared runs (share.c, doc/service.md "One run per query").  A HEAP_RUN
 * that is a part of a parallel query's shared run leaves its checked groups
 * there (deposit_part) and replies only its counters; the finish, an
 * AGG_RUN without files, takes every part's groups and merges them as the
 * workers' tables are merged (finish_share).
 *
 * AGG_FILL.  The same request, read ahead (gpu_agg_fill): the columns the
 * program reads go into the GPU column cache, no kernel runs, no join table
 * is looked up (the backend is still building them), and the one reply
 * has the counters alone.  Under the CPU engine it reads nothing.
 *
 * Cancel.  agg_task_cancel (a CANCEL message, or the backend closing the
 * connection) sets a flag that every worker checks between slices; the
 * run then ends with ERROR WARP_ERR_CANCELED.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"
#include "service/gpu_direct.h"
#include "service/run.h"
#include "service/input.h"
#include "service/join_store.h"
#include "service/share.h"
#include "service/threads.h"
#include "arrow/arrow.h"

/*
 * rows per xpu_cpu_exec: 4096 keeps a slice's registers (16 bytes a row and
 * out) in a core's L2 cache; bench/cpu_engine_bench on the dev VM, paired
 * runs against 16384: whole runs 9 % (Q2) and 3 % (Q1) shorter
 */
#define AGG_SLICE		4096

/*
 * groups (summed over the tables) from which unspilled tables are merged
 * by as many threads as the run has, each taking partitions of the groups
 * (merge_tables), rather than all into one table by the run's thread
 */
#define AGG_PARALLEL_MERGE	65536

_Static_assert(XPU_AGG_PARTS <= SVC_RUN_MAX_THREADS, "a run's parts hold a spilled run's partitions");

/* one record batch to read: file and batch number */
typedef struct AggWork
{
	uint32_t	file;
	int32_t		batch;
} AggWork;

/*
 * A loaded batch whose slices any worker may run: its owner (the worker
 * that claimed and loaded it) lists it in AggTask.live, runs slices until
 * none is left, takes it out of the list and frees it once no helper holds
 * it (refs, under live_lock).
 */
typedef struct AggLive
{
	const AggRunFile *f;
	const ArrowBatch *batch;
	int64_t		n_slices;
	int64_t		next_slice;		/* atomic: the next slice to claim */
	int			refs;			/* helpers running its slices */
} AggLive;

struct AggTask
{
	AggRun		run;			/* the request, parsed (service.h) */
	uint8_t    *payload;		/* copy of the request, 16-byte aligned */
	const ServiceGpu *gpu;
	HeapRun    *heap;			/* a HEAP_RUN's chunk ring (heap_chunk.c), or NULL */
	WarpEngine	engine;			/* the engine that runs it */
	bool		gpu_asked;		/* the request asked for the GPU */
	bool		fill;			/* an AGG_FILL: the read-ahead only */
	int			notify_fd;		/* eventfd to write when done */
	SvcTaskThread task;			/* the run's thread (threads.c) */
	volatile int canceled;
	int64_t		start_us;

	/* work */
	AggWork    *work;
	int64_t		n_work;
	int64_t		next_work;		/* atomic */
	uint32_t	threads;
	pthread_mutex_t live_lock;	/* guards live[] and AggLive.refs */
	pthread_cond_t live_cond;	/* a helper left a batch, or a batch was listed */
	AggLive   **live;			/* [threads]: each worker's listed batch, or NULL */
	int			pending;		/* batches being claimed or loaded, not yet
								 * listed (live_lock) */

	/* outcome */
	SvcFailure	fail;			/* the first failure (its lock guards xerr too);
								 * werr 0: the run was done */
	XpuError	xerr;			/* the program's error or FALLBACK */

	/*
	 * The result: n_parts tables whose groups are disjoint (the partitions of
	 * a parallel merge, or one table); a shared run's finish may also return its parts' tables as they are
	 * (groups in several of them: partial states, combined by the backend)
	 */
	XpuAggTable **parts;		/* [SVC_RUN_MAX_THREADS], or the parts' tables */
	uint32_t	n_parts;

	SvcJoinSet	joins;			/* the join depths' tables, held (join_store.c) */
	uint32_t   *matched_own;	/* a serial run's matched flags (joins.matched;
								 * a shared run's are the run's, share.c) */

	/* a part or the finish of a query's shared run (share.c), or NULL */
	SvcShare   *share;
	uint32_t	share_role;		/* WARP_SHARE_PART or WARP_SHARE_FINISH */
	SvcShareSpec share_spec;
	int64_t		part_groups;	/* a part's groups, left in the shared run */

	/* replies sent so far: the next group is group next_group of parts[next_part] */
	uint32_t	next_part;
	int64_t		next_group;
};

/* ---------------------------------------------------------------- errors */

/* records the program's first error (an SQL error or FALLBACK) */
static void
task_xpu_error(AggTask *t, const XpuError *err)
{
	pthread_mutex_lock(&t->fail.lock);
	if (t->xerr.code == XPU_OK)
		t->xerr = *err;
	pthread_mutex_unlock(&t->fail.lock);
	__atomic_store_n(&t->fail.stop, 1, __ATOMIC_RELAXED);
}

/* a failure of the aggregation table: FALLBACK (HLL sets past their limit) or out of memory */
static void
task_table_error(AggTask *t, const XpuError *err)
{
	if (err->code == XPU_ERR_FALLBACK)
		task_xpu_error(t, err);
	else
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory in the aggregation table");
}

/* ---------------------------------------------------------------- parsing */

/* checks the aggregation spec against the program; false with msg set */
static bool
check_spec(AggTask *t, char *msg, size_t msglen)
{
	XpuError	err = {0};
	XpuAggTable *probe = xpu_agg_table_create(t->run.prog, &t->run.spec, &err);

	if (probe == NULL)
	{
		snprintf(msg, msglen, "invalid aggregation: %s", err.message);
		return false;
	}
	xpu_agg_table_free(probe);
	return true;
}

/* ---------------------------------------------------------------- RIGHT/FULL */

/*
 * setup_matched: the matched flags of a program whose last depth is a
 * RIGHT or FULL OUTER join (xpu_join.h, XPU_JOIN_PROBE_MARK) into
 * t->joins.matched: the shared run's where t is a part or the finish of
 * one, else t's own; false with msg set when memory runs out
 */
static bool
setup_matched(AggTask *t, char *msg, size_t msglen)
{
	int			pc = xpu_program_marks(t->run.prog);
	int			depth;
	uint64_t	words;

	if (pc < 0)
		return true;
	depth = XPU_JOIN_IMM_DEPTH(XPU_INSTRS(t->run.prog)[pc].imm);
	if (depth >= (int) t->joins.n)
		return snprintf(msg, msglen, "a marking probe of a depth without a table"), false;
	words = xpu_join_matched_words(t->joins.tables[depth]->n_rows);
	t->joins.matched_words = words;
	if (t->share != NULL)
		t->joins.matched = svc_share_matched(t->share, words, msg, msglen);
	else if ((t->joins.matched = t->matched_own = calloc(words ? words : 1, 4)) == NULL)
		snprintf(msg, msglen, "out of memory");
	return t->joins.matched != NULL;
}

/*
 * emit_unmatched: the unmatched inner rows of t's RIGHT or FULL OUTER
 * depth into table, once the pass is done (a serial run's end, or a shared
 * run's finish: never a part of one); false when the run failed (the
 * program's error, or memory)
 */
static bool
emit_unmatched(AggTask *t, XpuAggTable *table)
{
	const XpuProgram *prog = t->run.prog;
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	XpuValue   *values = aligned_alloc(16, outs * AGG_SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * AGG_SLICE);
	uint8_t    *mask = malloc(AGG_SLICE);
	XpuChunk	chunk = {0, prog->n_cols, 0, NULL};
	XpuResult	res = {AGG_SLICE, mask, values, nulls};
	XpuAggSink	as = {table, 0};
	XpuError	err = {0};
	int			rc = 1;

	if (t->joins.matched == NULL || t->share_role == WARP_SHARE_PART)
		rc = 1;
	else if (values == NULL || nulls == NULL || mask == NULL)
		rc = -2;
	else
	{
		svc_join_chunk(&chunk, &t->joins);
		rc = xpu_cpu_exec_unmatched(prog, &chunk, t->joins.matched, &res, &err,
									xpu_agg_sink, &as);
		svc_add_counter(&t->run.rows_passed, as.rows);
	}
	free(values);
	free(nulls);
	free(mask);
	if (rc == -2)
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	else if (rc == 0)
		task_xpu_error(t, &err);
	else if (rc < 0)
		task_table_error(t, &err);
	return rc > 0;
}

/*
 * parse_request: fills t->run (and t->heap for a HEAP_RUN: memfd >= 0)
 * from t->payload (len bytes) through the run parser (run.c); false with
 * msg set when the request is malformed.
 */
static bool
parse_request(AggTask *t, size_t len, int memfd, SvcRunDesc *d, char *msg, size_t msglen)
{
	AggRun	   *run = &t->run;
	uint32_t	werr;
	bool		ok = svc_run_parse(memfd >= 0 ? WARP_MSG_HEAP_RUN :
								   t->fill ? WARP_MSG_AGG_FILL : WARP_MSG_AGG_RUN,
								   t->payload, len, d, msg, msglen);

	/* the files are the run's (agg_task_free), parsed or not */
	run->n_files = d->n_files;
	run->files = d->files;
	d->files = NULL;
	if (!ok)
		return false;
	run->prog = d->prog;
	run->spec = d->spec;
	if (!check_spec(t, msg, msglen) ||
		(!t->fill && !svc_run_joins(d, &t->joins, &werr, msg, msglen)))
		return false;
	run->joins = &t->joins;
	t->n_work = d->n_batches;
	run->max_buffer_size = d->max_buffer_size;
	run->n_threads = d->n_threads;
	run->canceled = &t->canceled;
	if (d->share_role != 0)
	{
		if ((t->share = svc_share_attach(d->share_id)) == NULL)
			return snprintf(msg, msglen, "%s names shared run %016llx, which is not open",
							d->what, (unsigned long long) d->share_id), false;
		t->share_role = d->share_role;
		t->share_spec = (SvcShareSpec) {d->spec_bytes, d->spec_len};
		if (t->share_role == WARP_SHARE_PART)
			run->n_threads = svc_share_threads(t->share, run->n_threads);
	}
	if (!t->fill && !setup_matched(t, msg, msglen))
		return false;
	if (d->source == SVC_SOURCE_HEAP)
	{
		t->heap = heap_run_parse(d->heap, d->heap_len, d->prog, memfd, t->notify_fd,
								 msg, msglen);
		return t->heap != NULL;
	}
	return true;
}

/* ---------------------------------------------------------------- files */

/* opens file i (input.c) and checks it against the program; false on failure */
static bool
open_file(AggTask *t, uint32_t i)
{
	AggRunFile *f = &t->run.files[i];

	return svc_input_open(f, t->run.max_buffer_size, t->engine == WARP_ENGINE_CPU,
						  &t->fail) &&
		svc_input_check(f, t->run.prog, t->run.prog->n_cols, &t->fail);
}

/*
 * dict_to_cpu: a GPU run over a file whose dictionary-encoded fields the
 * program reads runs on the CPU engine (the GPU kernels read no
 * dictionaries, xpu/xpu_dict.h), or fails where the request asked for
 * the GPU (pg_warp.engine = gpu)
 */
static void
dict_to_cpu(AggTask *t)
{
	for (uint32_t i = 0; i < t->run.n_files; i++)
	{
		if (!svc_input_has_dict(&t->run.files[i], t->run.prog))
			continue;
		if (t->gpu_asked)
			svc_fail(&t->fail, WARP_ERR_UNSUPPORTED,
					 "file \"%s\" has a dictionary-encoded column, which only the CPU engine reads",
					 t->run.files[i].path);
		else
			t->engine = WARP_ENGINE_CPU;
		return;
	}
}

/* ---------------------------------------------------------------- workers */

/* what one worker thread owns */
typedef struct AggWorker
{
	AggTask    *task;
	XpuAggTable *table;
	void	   *workspace;
	XpuValue   *values;			/* [n_outs * AGG_SLICE] */
	uint8_t    *nulls;			/* [n_outs * AGG_SLICE] */
	uint8_t    *mask;			/* [AGG_SLICE] */
	XpuColumnData *cols;		/* [n_cols] */
	const XpuColumnData **dict_cols;	/* [n_outs] (xpu_cpu_dict_outs) */
	uint8_t    *skip;			/* [n_outs] (xpu_agg_table_dict_skip) */
	bool	   *want;			/* [widest schema] */
	uint32_t	index;			/* its slot in AggTask.live */
	AggLive		live;			/* the batch it loaded */
} AggWorker;

/* should the workers stop: canceled, or the run failed */
static bool
task_stopping(AggTask *t)
{
	return svc_stopping(&t->fail, &t->canceled);
}

/*
 * run_slices: runs the program over the slices of l's batch that this
 * worker claims, until none is left or the run stops, into w->table (a
 * program whose rows expand over the run's tables, through
 * xpu_cpu_exec_each: a slice's output rows AGG_SLICE at a time)
 */
static void
run_slices(AggWorker *w, AggLive *l)
{
	AggTask    *t = w->task;
	const XpuProgram *prog = t->run.prog;
	const ArrowBatch *batch = l->batch;
	XpuError	err;
	uint64_t	passed = 0;
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};

	svc_input_bind(l->f, prog, batch, w->cols);
	while (!task_stopping(t))
	{
		int64_t		s = __atomic_fetch_add(&l->next_slice, 1, __ATOMIC_RELAXED);
		int64_t		row0 = s * AGG_SLICE;
		int64_t		n;
		int			nd;
		XpuChunk	chunk;
		XpuResult	res = {0, w->mask, w->values, w->nulls};

		if (s >= l->n_slices)
			break;
		n = batch->n_rows - row0 < AGG_SLICE ? batch->n_rows - row0 : AGG_SLICE;
		chunk = (XpuChunk) {n, prog->n_cols, 0, w->cols};
		svc_join_chunk(&chunk, t->run.joins);
		res.nrows = n;
		for (int k = 0; k < prog->n_cols; k++)
			w->cols[k].offset = row0;
		memset(&err, 0, sizeof(err));
		if (xpu_program_expands_over(prog, chunk.joins, chunk.n_joins))
		{
			XpuAggSink	as = {w->table, 0};
			int			rc;

			res.nrows = AGG_SLICE;
			rc = xpu_cpu_exec_each_counted(prog, &chunk, &res, w->workspace, &err, xpu_agg_sink,
										   &as, probes);
			passed += as.rows;
			if (rc == 0)
				task_xpu_error(t, &err);
			else if (rc < 0)
				task_table_error(t, &err);
			if (rc <= 0)
				break;
			continue;
		}
		/* dictionary keys: grouped on their indices, left unloaded (xpu_dict.h) */
		if ((nd = xpu_cpu_dict_outs(prog, &chunk, w->dict_cols)) > 0)
			xpu_agg_table_dict_skip(w->table, prog->n_outs, w->dict_cols, w->skip);
		if (xpu_cpu_exec_skip(prog, &chunk, &res, w->workspace, &err, probes,
							  nd > 0 ? w->skip : NULL) != XPU_OK)
		{
			task_xpu_error(t, &err);
			break;
		}
		for (int64_t r = 0; r < n; r++)
			passed += w->mask[r];
		if (!xpu_agg_table_update_dict(w->table, &res, nd > 0 ? w->dict_cols : NULL, &err))
		{
			task_table_error(t, &err);
			break;
		}
	}
	svc_add_counter(&t->run.rows_passed, passed);
	svc_join_counts_add(&t->run.join_rows, probes, XPU_JOIN_COUNT_DEPTHS);
}

/*
 * help_others: once no batch is left to claim, runs slices of the listed
 * batch with the most slices left, until no listed batch has any
 */
static void
help_others(AggWorker *w)
{
	AggTask    *t = w->task;

	while (!task_stopping(t))
	{
		AggLive    *best = NULL;
		int64_t		most = 0,
					t0;

		pthread_mutex_lock(&t->live_lock);
		for (;;)
		{
			for (uint32_t j = 0; j < t->threads; j++)
			{
				AggLive    *l = t->live[j];
				int64_t		left = l == NULL ? 0 :
					l->n_slices - __atomic_load_n(&l->next_slice, __ATOMIC_RELAXED);

				if (left > most)
					best = l, most = left;
			}
			/* a batch still loading will be listed: wait for it */
			if (best != NULL || t->pending == 0 || task_stopping(t))
				break;
			pthread_cond_wait(&t->live_cond, &t->live_lock);
		}
		if (best != NULL)
			best->refs++;
		pthread_mutex_unlock(&t->live_lock);
		if (best == NULL)
			break;
		t0 = svc_now_us(CLOCK_MONOTONIC);
		run_slices(w, best);
		svc_add_counter(&t->run.exec_us, svc_now_us(CLOCK_MONOTONIC) - t0);
		pthread_mutex_lock(&t->live_lock);
		best->refs--;
		pthread_cond_broadcast(&t->live_cond);
		pthread_mutex_unlock(&t->live_lock);
	}
}

/* ends a claim (pending) by listing l (NULL: nothing to list) as worker index's batch */
static void
list_batch(AggTask *t, uint32_t index, AggLive *l)
{
	pthread_mutex_lock(&t->live_lock);
	t->pending--;
	if (l != NULL)
		t->live[index] = l;
	pthread_cond_broadcast(&t->live_cond);
	pthread_mutex_unlock(&t->live_lock);
}

/* one worker: claims batches until none is left or the run stops, then helps */
static void *
worker_main(void *arg)
{
	AggWorker  *w = arg;
	AggTask    *t = w->task;
	AggLive    *l = &w->live;

	while (!task_stopping(t))
	{
		int64_t		i;
		AggRunFile *f;
		ArrowBatch *batch = NULL;
		ArrowError	aerr;
		int64_t		t0, t1;

		/* pending first: a helper that sees it 0 knows that no batch is on its way */
		pthread_mutex_lock(&t->live_lock);
		t->pending++;
		pthread_mutex_unlock(&t->live_lock);
		i = __atomic_fetch_add(&t->next_work, 1, __ATOMIC_RELAXED);
		if (i >= t->n_work)
		{
			list_batch(t, w->index, NULL);
			break;
		}
		f = &t->run.files[t->work[i].file];
		memset(w->want, 0, sizeof(bool) * f->file->schema.n_fields);
		for (int k = 0; k < t->run.prog->n_cols; k++)
			w->want[f->fields[k]] = true;
		t0 = svc_now_us(CLOCK_MONOTONIC);
		if (arrow_batch_load(f->file, t->work[i].batch, w->want, &batch, &aerr) != ARROW_OK)
		{
			svc_fail_arrow(&t->fail, f->path, &aerr);
			list_batch(t, w->index, NULL);
			break;
		}
		t1 = svc_now_us(CLOCK_MONOTONIC);
		svc_add_counter(&t->run.io_us, t1 - t0);
		svc_add_counter(&t->run.batches, 1);
		svc_add_counter(&t->run.rows_in, batch->n_rows);
		svc_add_counter(&t->run.bytes_read, svc_input_batch_bytes(f, t->work[i].batch, w->want));
		l->f = f;
		l->batch = batch;
		l->n_slices = (batch->n_rows + AGG_SLICE - 1) / AGG_SLICE;
		l->next_slice = 0;
		l->refs = 0;
		list_batch(t, w->index, l);
		run_slices(w, l);
		pthread_mutex_lock(&t->live_lock);
		t->live[w->index] = NULL;
		while (l->refs > 0)
			pthread_cond_wait(&t->live_cond, &t->live_lock);
		pthread_mutex_unlock(&t->live_lock);
		arrow_batch_free(batch);
		svc_add_counter(&t->run.exec_us, svc_now_us(CLOCK_MONOTONIC) - t1);
	}
	help_others(w);
	return NULL;
}

/* frees what worker_setup allocated (not the table) */
static void
worker_release(AggWorker *w)
{
	free(w->workspace);
	free(w->values);
	free(w->nulls);
	free(w->mask);
	free(w->cols);
	free(w->want);
	free(w->dict_cols);
	free(w->skip);
}

/*
 * The spill limit of the workers' tables (xpu_agg.h): PG_WARP_AGG_SPILL_GROUPS
 * of the service's environment, else 0 (never spill).  Not on by default
 * until it is measured where it could pay: on 1 and 2 threads of the 2-core
 * development machine spilling made 600,000 groups of SSB SF 1-2
 * (lo_orderkey % 600000) about 2x slower (doc/engine-design.md, "Many
 * groups"): each order's 4 rows are the only repeats a small table sees, so
 * it spills 1 group for 4 rows, where one table of all groups stays at
 * 132 MB with the L3 cache and memory to itself.  With 16 threads, 16 such
 * tables compete for them: the GPU host's 16 cores are to tell.
 */
static int64_t
agg_spill_limit(void)
{
	const char *v = getenv("PG_WARP_AGG_SPILL_GROUPS");

	return v != NULL && *v != '\0' ? strtoll(v, NULL, 10) : 0;
}

/* allocates a worker's buffers and table; false (run failed) on OOM */
static bool
worker_setup(AggTask *t, AggWorker *w, int widest)
{
	const XpuProgram *prog = t->run.prog;
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	XpuError	err = {0};

	w->task = t;
	w->workspace = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	w->values = aligned_alloc(16, outs * AGG_SLICE * sizeof(XpuValue));
	w->nulls = malloc(outs * AGG_SLICE);
	w->mask = malloc(AGG_SLICE);
	w->cols = calloc(prog->n_cols ? prog->n_cols : 1, sizeof(XpuColumnData));
	w->want = calloc(widest ? widest : 1, sizeof(bool));
	w->dict_cols = calloc(outs, sizeof(XpuColumnData *));
	w->skip = calloc(outs, 1);
	w->table = xpu_agg_table_create(prog, &t->run.spec, &err);
	if (w->table != NULL)
		xpu_agg_table_set_spill(w->table, agg_spill_limit());
	if (!w->workspace || !w->values || !w->nulls || !w->mask || !w->cols || !w->want ||
		!w->dict_cols || !w->skip || !w->table)
	{
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		return false;
	}
	return true;
}

/* a parallel merge: what its threads share */
typedef struct AggMerge
{
	const AggTask *task;
	XpuAggTable *const *tables;
	uint32_t	n_tables;
	uint32_t	n_parts;		/* partitions of the groups */
	int64_t		reserve;		/* groups a partition's table is made for */
	uint32_t	next;			/* atomic: the next partition to merge */
	int			failed;			/* atomic: a partition failed */
	XpuAggTable **dst;			/* [n_parts] each partition's groups */
	pthread_mutex_t lock;		/* guards err */
	XpuError	err;			/* the first failure */
} AggMerge;

/*
 * merge_main: claims partitions p until none is left and merges partition p
 * of every table into m->dst[p] (a table of its own); on failure m->failed
 * is set and m->err says why (FALLBACK: HLL sets past their limit; else out
 * of memory)
 */
static void *
merge_main(void *arg)
{
	AggMerge   *m = arg;
	const AggTask *t = m->task;
	XpuError	err = {0};
	uint32_t	p;

	while (!__atomic_load_n(&m->failed, __ATOMIC_RELAXED) &&
		   (p = __atomic_fetch_add(&m->next, 1, __ATOMIC_RELAXED)) < m->n_parts)
	{
		bool		ok;

		if ((m->dst[p] = xpu_agg_table_create(t->run.prog, &t->run.spec, &err)) == NULL)
			XPU_ERROR(&err, XPU_ERR_INTERNAL, "out of memory");
		ok = m->dst[p] != NULL && xpu_agg_table_reserve(m->dst[p], m->reserve, &err);
		for (uint32_t i = 0; ok && i < m->n_tables && !task_stopping((AggTask *) t); i++)
			ok = xpu_agg_table_merge_part(m->dst[p], m->tables[i], (int) p, (int) m->n_parts,
										  &err);
		if (!ok)
		{
			pthread_mutex_lock(&m->lock);
			if (!m->failed)
				m->err = err;
			__atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&m->lock);
		}
	}
	return NULL;
}

/*
 * merge_tables: the groups of the n tables merged into *n_out new tables
 * (out[], room for SVC_RUN_MAX_THREADS) whose groups are disjoint, each
 * made for its share of the largest table's groups (no growth then): one
 * partition of the groups' hashes each, claimed by t->threads threads,
 * XPU_AGG_PARTS of them when a table spilled (xpu_agg.h: it must), else
 * t->threads when they hold many groups (16 tables of 600,000 groups one
 * after the other took longer than the scan), else one table.  An HLL
 * aggregate's memory limit must hold for the whole result: one table then
 * (HLL tables never spill).  The tables are left as they are.  False with
 * *err set (FALLBACK, or any other code: out of memory) and nothing in out
 * on failure.
 */
static bool
merge_tables(const AggTask *t, XpuAggTable *const *tables, uint32_t n, XpuAggTable **out,
			 uint32_t *n_out, XpuError *err)
{
	int64_t		groups = 0,
				most = 0;
	bool		spilled = false;
	uint32_t	threads = t->threads > 1 ? t->threads : 1,
				parts = threads;
	AggMerge	m;

	for (uint32_t i = 0; i < n; i++)
	{
		int64_t		g = xpu_agg_table_ngroups(tables[i]);

		groups += g;
		most = g > most ? g : most;
		spilled |= xpu_agg_table_spilled(tables[i]) != 0;
	}
	for (int a = 0; a < t->run.spec.n_aggs; a++)
		if (t->run.spec.aggs[a].kind == XPU_AGG_HLL)
			parts = 1;
	if (spilled)
		parts = XPU_AGG_PARTS;
	else if (n < 2 || groups < AGG_PARALLEL_MERGE)
		parts = 1;
	if (parts > SVC_RUN_MAX_THREADS)
		parts = SVC_RUN_MAX_THREADS;
	if (threads > parts)
		threads = parts;
	memset(out, 0, parts * sizeof(XpuAggTable *));
	/* the largest table's groups are all in the result: room for them, no growth */
	m = (AggMerge) {t, tables, n, parts, most / parts, 0, 0, out};
	pthread_mutex_init(&m.lock, NULL);
	/* every thread shares m (argument size 0) and claims partitions from it */
	svc_workers_run("a merge of aggregation tables", merge_main, &m, 0, threads);
	pthread_mutex_destroy(&m.lock);
	if (m.failed)
	{
		for (uint32_t p = 0; p < parts; p++)
		{
			xpu_agg_table_free(out[p]);
			out[p] = NULL;
		}
		*err = m.err;
		*n_out = 0;
		return false;
	}
	*n_out = parts;
	return true;
}

/*
 * fold_tables: when the workers are fewer than AGG_FOLD_TABLES and no table
 * spilled, folds tables[1 ..] into tables[0], the run's one result table
 * (true); false when they must go to merge_tables, or (err set) when the
 * fold failed.  Folding a table into one that has its groups is lookups,
 * where merge_tables builds its partitions' tables from nothing: with 2
 * tables of 600,000 groups (bench/cpu_engine_bench THREADS=2 q3) 14 ms
 * against 45 ms wall for two threads' partitions.
 */
#define AGG_FOLD_TABLES		4

static bool
fold_tables(XpuAggTable **tables, uint32_t n, XpuError *err)
{
	if (n >= AGG_FOLD_TABLES)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (xpu_agg_table_spilled(tables[i]))
			return false;
	for (uint32_t i = 1; i < n; i++)
		if (!xpu_agg_table_merge(tables[0], tables[i], err))
			return false;
	return true;
}

/*
 * take_tables: the n workers' tables as t's result parts: fewer than
 * AGG_FOLD_TABLES folded into the first (one table as it is), else merged
 * by partition (merge_tables); a table moved into t->parts is set to NULL
 * in tables[], the others stay the caller's to free
 */
static void
take_tables(AggTask *t, XpuAggTable **tables, uint32_t n)
{
	XpuError	err = {0};

	if (n == 0)
		return;
	if (fold_tables(tables, n, &err))
	{
		t->parts[t->n_parts++] = tables[0];
		tables[0] = NULL;
	}
	else if (err.code != XPU_OK || !merge_tables(t, tables, n, t->parts, &t->n_parts, &err))
		task_table_error(t, &err);
}

/*
 * runs the workers over t->work and merges their tables into t->parts;
 * t->threads is then the number of workers that ran (threads.h: fewer
 * when threads could not start)
 */
static void
run_workers(AggTask *t)
{
	uint32_t	n = t->run.n_threads ? t->run.n_threads : 1;
	AggWorker  *ws;
	XpuAggTable **tables;
	int			widest = 0;
	uint32_t	ran = 0;

	if ((int64_t) n > t->n_work)
		n = t->n_work > 0 ? (uint32_t) t->n_work : 1;
	t->threads = n;
	for (uint32_t i = 0; i < t->run.n_files; i++)
		if (t->run.files[i].file->schema.n_fields > widest)
			widest = t->run.files[i].file->schema.n_fields;
	ws = calloc(n, sizeof(AggWorker));
	tables = calloc(n, sizeof(XpuAggTable *));
	if (ws == NULL || tables == NULL || (t->live = calloc(n, sizeof(AggLive *))) == NULL)
	{
		free(ws);
		free(tables);
		return svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	pthread_mutex_init(&t->live_lock, NULL);
	pthread_cond_init(&t->live_cond, NULL);
	for (uint32_t i = 0; i < n && worker_setup(t, &ws[i], widest); i++)
		ws[i].index = i;
	if (t->fail.werr == 0)
		ran = svc_workers_run("an AGG_RUN's workers", worker_main, ws, sizeof(AggWorker), n);
	/* t->live[] stays sized n; the workers are gone, the merge reads t->threads */
	t->threads = ran;
	for (uint32_t i = 0; i < n; i++)
		tables[i] = ws[i].table;
	if (ran > 0 && t->fail.werr == 0 && t->xerr.code == XPU_OK && !t->canceled &&
		emit_unmatched(t, tables[0]))
		take_tables(t, tables, ran);
	for (uint32_t i = 0; i < n; i++)
	{
		xpu_agg_table_free(tables[i]);
		worker_release(&ws[i]);
	}
	free(tables);
	free(ws);
	free(t->live);
	t->live = NULL;
	pthread_mutex_destroy(&t->live_lock);
	pthread_cond_destroy(&t->live_cond);
}

/* records what gpu_agg_run or heap_run_exec returned (rc) as the outcome */
static void
task_outcome(AggTask *t, int rc, const XpuError *err, int werr, const char *msg)
{
	switch (rc)
	{
		case XPU_OK:
			break;
		case -1:
			svc_fail(&t->fail, werr ? (WarpErrorCode) werr : WARP_ERR_IO, "%s", msg);
			break;
		default:
			pthread_mutex_lock(&t->fail.lock);
			if (t->xerr.code == XPU_OK)
				t->xerr = *err;
			pthread_mutex_unlock(&t->fail.lock);
			break;
	}
}

/* the read-ahead of an AGG_FILL on the GPUs (gpu_multi.c); nothing on the CPU engine */
static void
run_fill(AggTask *t)
{
	XpuError	err = {0};
	int			werr = 0;
	char		msg[sizeof(t->fail.msg)];

	t->threads = 1;
	if (t->engine != WARP_ENGINE_GPU)
		return;
	msg[0] = '\0';
	task_outcome(t, gpu_agg_fill(t->gpu, &t->run, &werr, msg, sizeof(msg)), &err, werr, msg);
}

/* runs t on the GPUs (gpu_agg.c) into one table, t->parts[0] */
static void
run_gpu(AggTask *t)
{
	XpuError	err = {0};
	int			werr = 0;
	int			rc;
	char		msg[sizeof(t->fail.msg)];

	t->threads = 1;
	if ((t->parts[0] = xpu_agg_table_create(t->run.prog, &t->run.spec, &err)) == NULL)
		return svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	t->n_parts = 1;
	msg[0] = '\0';
	rc = gpu_agg_run(t->gpu, &t->run, t->parts[0], &err, &werr, msg, sizeof(msg));
	task_outcome(t, rc, &err, werr, msg);
	/* the GPU marked, the CPU emits the unmatched inner rows (few: an inner table's) */
	if (rc == XPU_OK && !t->canceled)
		emit_unmatched(t, t->parts[0]);
}

/*
 * runs a HEAP_RUN's chunks on the CPU workers of heap_chunk.c, or on the
 * GPU, into t->parts: its workers' tables taken as run_workers takes them;
 * a part of a shared run keeps them as they are (the finish merges every
 * part's at once)
 */
static void
run_heap(AggTask *t)
{
	XpuError	err = {0};
	int			werr = 0;
	char		msg[sizeof(t->fail.msg)];
	XpuAggTable **tables = calloc(SVC_RUN_MAX_THREADS, sizeof(XpuAggTable *));
	uint32_t	n = 0;
	int			rc;

	if (tables == NULL)
		return svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	msg[0] = '\0';
	if (t->engine == WARP_ENGINE_GPU)
		rc = heap_run_exec_gpu(t->heap, t->gpu, &t->run, tables, &n, &t->threads, &t->engine,
							   &err, &werr, msg, sizeof(msg));
	else
		rc = heap_run_exec(t->heap, &t->run, tables, &n, &t->threads, &err, &werr, msg,
						   sizeof(msg));
	task_outcome(t, rc, &err, werr, msg);
	if (rc == XPU_OK && !t->canceled && t->share_role == WARP_SHARE_PART)
	{
		memcpy(t->parts, tables, sizeof(XpuAggTable *) * n);
		t->n_parts = n;
		n = 0;
	}
	else if (rc == XPU_OK && !t->canceled)
	{
		if (n == 0 && t->joins.matched != NULL &&
			(tables[0] = xpu_agg_table_create(t->run.prog, &t->run.spec, &err)) != NULL)
			n = 1;
		if (t->joins.matched == NULL || (n > 0 && emit_unmatched(t, tables[0])))
			take_tables(t, tables, n);
		else if (n == 0)
			svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	for (uint32_t i = 0; i < n; i++)
		xpu_agg_table_free(tables[i]);
	free(tables);
}

/* the bytes of an extended state's value in an AGG_RESULT group (16-byte multiple) */
static size_t
extra_size(int kind, const XpuAggState *s)
{
	const uint8_t *data;
	int			flag;

	return ((size_t) xpu_agg_extra_export(kind, s, &data, &flag) + 15) & ~(size_t) 15;
}

/* a group's bytes in an AGG_RESULT message (xpu/protocol.h) */
static size_t
group_size(const AggTask *t, uint32_t key_len, const XpuAggState *states)
{
	size_t		n = ((4 + (size_t) key_len + 15) & ~(size_t) 15) +
		(size_t) t->run.spec.n_aggs * sizeof(XpuAggState);

	for (int a = 0; a < t->run.spec.n_aggs; a++)
		if (XPU_AGG_EXTENDED(t->run.spec.aggs[a].kind))
			n += extra_size(t->run.spec.aggs[a].kind, &states[a]);
	return n;
}

/*
 * put_group: one group into an AGG_RESULT message at p (gs bytes, zeroed):
 * key, states, then the values of the extended states, each state saying
 * how many bytes its value takes (and for HLL whether they are registers,
 * xpu_agg.h)
 */
static void
put_group(const AggTask *t, uint8_t *p, size_t gs, const uint8_t *key, uint32_t key_len,
		  const XpuAggState *states)
{
	int			n_aggs = t->run.spec.n_aggs;
	/* the message is only 8-byte aligned: states go in with memcpy */
	uint8_t    *out = p + ((4 + (size_t) key_len + 15) & ~(size_t) 15);
	uint8_t    *extra = out + n_aggs * sizeof(XpuAggState);

	memset(p, 0, gs);
	memcpy(p, &key_len, 4);
	if (key_len > 0)
		memcpy(p + 4, key, key_len);
	memcpy(out, states, n_aggs * sizeof(XpuAggState));
	for (int a = 0; a < n_aggs; a++)
	{
		const uint8_t *data;
		int			flag;
		uint32_t	len;
		XpuAggState s;

		if (!XPU_AGG_EXTENDED(t->run.spec.aggs[a].kind))
			continue;
		len = xpu_agg_extra_export(t->run.spec.aggs[a].kind, &states[a], &data, &flag);
		s = states[a];
		s.v.i128 = 0;
		s.v.i = len;
		s.pad = (uint32_t) flag;
		memcpy(out + a * sizeof(XpuAggState), &s, sizeof(s));
		if (len > 0)
			memcpy(extra, data, len);
		extra += (len + 15) & ~(uint32_t) 15;
	}
}

/* the groups of the run's result (every part's) */
static int64_t
result_ngroups(const AggTask *t)
{
	int64_t		n = 0;

	for (uint32_t p = 0; p < t->n_parts; p++)
		n += t->parts[p] ? xpu_agg_table_ngroups(t->parts[p]) : 0;
	return n;
}

/*
 * result_ok: can the n tables go back as a result: false with *err set
 * when a state overflowed or a group is too large for an AGG_RESULT
 * (FALLBACK), or the HLL sets' finish failed (FALLBACK: past their limit;
 * another code: out of memory)
 */
static bool
result_ok(const AggTask *t, XpuAggTable *const *parts, uint32_t n, XpuError *err)
{
	const uint8_t *key;
	uint32_t	key_len;
	const XpuAggState *states;
	uint32_t	flags = 0;

	for (uint32_t p = 0; p < n; p++)
		flags |= xpu_agg_table_flags(parts[p]);
	if (flags & XPU_AGGF_OVERFLOW)
		return XPU_ERROR(err, XPU_ERR_FALLBACK, "an aggregate overflowed the engine's state"),
			false;
	for (uint32_t p = 0; p < n; p++)
	{
		if (!xpu_agg_table_finish(parts[p], err))
			return false;
		for (int64_t g = 0; g < xpu_agg_table_ngroups(parts[p]); g++)
		{
			xpu_agg_table_group(parts[p], g, &key, &key_len, &states);
			if (sizeof(WarpAggResult) + group_size(t, key_len, states) > PGWARP_MAX_PAYLOAD)
				return XPU_ERROR(err, XPU_ERR_FALLBACK,
								 "a group key is too long for AGG_RESULT"), false;
		}
	}
	return true;
}

/* after the merge: overflowed states and oversized groups are a FALLBACK */
static void
check_result(AggTask *t)
{
	XpuError	err = {0};

	if (!result_ok(t, t->parts, t->n_parts, &err))
		task_table_error(t, &err);
}

/* a part of a shared run: its groups (checked) go into the run, none back */
static void
deposit_part(AggTask *t)
{
	char		msg[sizeof(t->fail.msg)];

	t->part_groups = result_ngroups(t);
	if (!svc_share_deposit(t->share, &t->share_spec, t->parts, t->n_parts, msg, sizeof(msg)))
		return svc_fail(&t->fail, strcmp(msg, "out of memory") == 0 ?
						WARP_ERR_OUT_OF_MEMORY : WARP_ERR_PROTOCOL, "%s", msg);
	t->n_parts = 0;
}

/*
 * finish_unmatched: a shared run's unmatched inner rows of its RIGHT or
 * FULL OUTER depth (every part has marked the run's flags) as one more
 * table of groups after *tables' *n; false when the run failed
 */
static bool
finish_unmatched(AggTask *t, XpuAggTable ***tables, uint32_t *n)
{
	XpuError	err = {0};
	XpuAggTable *x = xpu_agg_table_create(t->run.prog, &t->run.spec, &err);
	XpuAggTable **more = x ? realloc(*tables, sizeof(XpuAggTable *) * (*n + 1)) : NULL;

	if (more == NULL)
	{
		xpu_agg_table_free(x);
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		return false;
	}
	*tables = more;
	more[(*n)++] = x;
	return emit_unmatched(t, x);
}

/*
 * finish_share: the groups that every part left in the shared run, merged
 * on the run's threads into t->parts.  When the merged groups cannot go
 * back (a state overflowed where no part's had, memory ran out) the parts'
 * tables go back as they are: each was checked as a result, and their
 * partial states combine in the backend's Finalize Aggregate as the
 * merge would have.  A finish never falls back: the parts' blocks were
 * read by other processes, which are gone.
 */
static void
finish_share(AggTask *t)
{
	XpuAggTable **tables;
	uint32_t	n;
	XpuError	err = {0};
	char		msg[sizeof(t->fail.msg)];

	if (!svc_share_take(t->share, &t->share_spec, &tables, &n, msg, sizeof(msg)))
		return svc_fail(&t->fail, strcmp(msg, "out of memory") == 0 ?
						WARP_ERR_OUT_OF_MEMORY : WARP_ERR_PROTOCOL, "%s", msg);
	t->threads = t->run.n_threads;
	if (t->joins.matched != NULL && !finish_unmatched(t, &tables, &n))
	{
		for (uint32_t i = 0; i < n; i++)
			xpu_agg_table_free(tables[i]);
		free(tables);
		return;
	}
	if (n == 0)
		return;
	if (merge_tables(t, tables, n, t->parts, &t->n_parts, &err))
	{
		if (result_ok(t, t->parts, t->n_parts, &err))
		{
			for (uint32_t i = 0; i < n; i++)
				xpu_agg_table_free(tables[i]);
			free(tables);
			return;
		}
		for (uint32_t p = 0; p < t->n_parts; p++)
			xpu_agg_table_free(t->parts[p]);
	}
	svc_log("LOG", "a shared run returns its %u parts unmerged: %s", n, err.message);
	free(t->parts);
	t->parts = tables;
	t->n_parts = n;
}

/* the run's thread: files, workers, merge (threads.c then tells the epoll thread) */
static void
task_main(void *arg)
{
	AggTask    *t = arg;
	int64_t		w = 0;

	for (uint32_t i = 0; i < t->run.n_files && t->fail.werr == 0; i++)
		open_file(t, i);
	if (t->fail.werr == 0 && t->engine == WARP_ENGINE_GPU && t->heap == NULL)
		dict_to_cpu(t);
	if (t->fail.werr == 0 && (t->work = calloc(t->n_work ? t->n_work : 1, sizeof(AggWork))) == NULL)
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (uint32_t i = 0; i < t->run.n_files && t->fail.werr == 0; i++)
		for (uint32_t b = 0; b < t->run.files[i].n_batches; b++)
			t->work[w++] = (AggWork) {i, t->run.files[i].batches[b]};
	if (t->fail.werr == 0 && !t->canceled)
	{
		if (t->share_role == WARP_SHARE_FINISH)
			finish_share(t);
		else if (t->fill)
			run_fill(t);
		else if (t->heap != NULL)
			run_heap(t);
		else if (t->engine == WARP_ENGINE_GPU)
			run_gpu(t);
		else
			run_workers(t);
		for (uint32_t i = 0; i < t->run.n_files; i++)
			svc_input_check_end(&t->run.files[i], &t->fail);
	}
	if (t->fail.werr == 0 && !t->canceled && t->xerr.code == XPU_OK && t->n_parts > 0 &&
		t->share_role != WARP_SHARE_FINISH)
		check_result(t);
	if (t->fail.werr == 0 && !t->canceled && t->xerr.code == XPU_OK &&
		t->share_role == WARP_SHARE_PART)
		deposit_part(t);
}

/* ---------------------------------------------------------------- the API */

/*
 * agg_task_start: parses and checks an AGG_RUN (or AGG_FILL: fill) payload
 * of len bytes and starts its run on a thread of its own, which writes to
 * notify_fd (an eventfd) when done.  NULL with *werr and msg set when the
 * request is refused (nothing runs then).
 */
AggTask *
agg_task_start(const uint8_t *payload, uint32_t len, const ServiceGpu *gpu,
			   int notify_fd, int memfd, bool fill, uint32_t *werr, char *msg, size_t msglen)
{
	AggTask    *t = calloc(1, sizeof(AggTask));
	SvcRunDesc	d;

	*werr = WARP_ERR_OUT_OF_MEMORY;
	snprintf(msg, msglen, "out of memory");
	if (t == NULL)
		return NULL;
	svc_failure_init(&t->fail);
	t->gpu = gpu;
	t->fill = fill;
	t->notify_fd = notify_fd;
	t->start_us = svc_now_us(CLOCK_MONOTONIC);
	if ((t->payload = svc_run_copy(payload, len)) == NULL ||
		(t->parts = calloc(SVC_RUN_MAX_THREADS, sizeof(XpuAggTable *))) == NULL)
	{
		agg_task_free(t);
		return NULL;
	}
	if (!parse_request(t, len, memfd, &d, msg, msglen))
	{
		*werr = strcmp(msg, "out of memory") == 0 ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_PROTOCOL;
		agg_task_free(t);
		return NULL;
	}
	if (!svc_run_engine(gpu, &d, &t->engine, werr, msg, msglen))
	{
		agg_task_free(t);
		return NULL;
	}
	t->gpu_asked = d.engine == WARP_ENGINE_GPU;
	if (!svc_task_thread_start(&t->task, "AGG_RUN", task_main, t, notify_fd, werr, msg, msglen))
	{
		agg_task_free(t);
		return NULL;
	}
	return t;
}

/* agg_task_cancel: asks the run to stop (it still signals when done) */
void
agg_task_cancel(AggTask *t)
{
	t->canceled = 1;
	if (t->heap != NULL)
		heap_run_cancel(t->heap);
}

/* agg_task_heap: the chunk ring of a HEAP_RUN, NULL for an AGG_RUN */
HeapRun *
agg_task_heap(AggTask *t)
{
	return t->heap;
}

/* agg_task_done: has the run's thread finished (its replies are ready) */
bool
agg_task_done(const AggTask *t)
{
	return svc_task_thread_done(&t->task);
}

/* the last AGG_RESULT's header: counters and status */
static void
fill_header(AggTask *t, WarpAggResult *h, bool last)
{
	memset(h, 0, sizeof(*h));
	h->engine = t->engine;
	h->rows_in = t->run.rows_in;
	h->rows_passed = t->run.rows_passed;
	h->batches = t->run.batches;
	h->bytes_read = t->run.bytes_read;
	h->bytes_cached = t->run.bytes_cached;
	h->bytes_mapped = t->run.bytes_mapped;
	h->bytes_to_pin = t->run.bytes_to_pin;
	h->bytes_direct = t->run.bytes_direct;
	h->direct_mode = h->bytes_direct > 0 ? gpu_direct_mode() : WARP_CUFILE_NONE;
	h->groups_total = t->xerr.code != XPU_OK ? 0 :
		t->share_role == WARP_SHARE_PART ? t->part_groups : result_ngroups(t);
	h->io_us = t->run.io_us;
	h->exec_us = t->run.exec_us;
	h->threads = t->threads;
	for (int d = 0; d < WARP_REPORT_DEVICES; d++)
		if (t->run.devices_used & (1u << d))
			h->devices[h->n_devices++] = t->run.devices[d];
	svc_join_counts_reply(&t->run.join_rows, t->run.joins != NULL ? (int) t->run.joins->n : 0,
						  t->run.rows_passed, !t->run.join_uncounted, &h->join_depths,
						  h->join_in, h->join_out);
	if (last)
	{
		h->flags = WARP_AGG_LAST;
		for (uint32_t i = 0; i < t->run.n_files; i++)
			if (t->run.files[i].meta_image)
				h->flags |= WARP_AGG_META_IMAGE;
		h->status = t->xerr.code;
		if (t->xerr.code != XPU_OK)
			snprintf(h->err_message, sizeof(h->err_message), "%s", t->xerr.message);
		h->wall_us = svc_now_us(CLOCK_MONOTONIC) - t->start_us;
	}
}

/*
 * agg_task_reply: the next reply of a finished run into buf (room for
 * PGWARP_MAX_PAYLOAD bytes): its type and length; *last is set on the
 * run's last reply (AGG_RESULT with WARP_AGG_LAST, or ERROR).
 */
uint32_t
agg_task_reply(AggTask *t, uint8_t *buf, uint32_t *type, bool *last)
{
	WarpAggResult *h = (WarpAggResult *) buf;
	size_t		off = sizeof(WarpAggResult);
	uint32_t	n = 0;

	if (t->fail.werr == WARP_ERR_OUT_OF_MEMORY && !t->canceled)
	{
		/*
		 * No memory for the run: the backend runs PostgreSQL's own plan
		 * (which spills where it must) instead of failing the query
		 */
		t->xerr.code = XPU_ERR_FALLBACK;
		snprintf(t->xerr.message, sizeof(t->xerr.message), "the service ran out of memory: %.*s",
				 (int) sizeof(t->xerr.message) - 32, t->fail.msg);
		*type = WARP_MSG_AGG_RESULT;
		*last = true;
		fill_header(t, h, true);
		return (uint32_t) off;
	}
	if (t->fail.werr != 0 || t->canceled)
	{
		*type = WARP_MSG_ERROR;
		*last = true;
		return svc_failure_reply(&t->fail, t->canceled, buf);
	}
	*type = WARP_MSG_AGG_RESULT;
	if (t->xerr.code != XPU_OK)
		t->next_part = t->n_parts;
	while (t->next_part < t->n_parts)
	{
		const uint8_t *key;
		uint32_t	key_len;
		const XpuAggState *states;
		size_t		gs;

		if (t->next_group >= xpu_agg_table_ngroups(t->parts[t->next_part]))
		{
			t->next_part++;
			t->next_group = 0;
			continue;
		}
		xpu_agg_table_group(t->parts[t->next_part], t->next_group, &key, &key_len, &states);
		gs = group_size(t, key_len, states);
		if (off + gs > PGWARP_MAX_PAYLOAD)
			break;
		put_group(t, buf + off, gs, key, key_len, states);
		off += gs;
		n++;
		t->next_group++;
	}
	*last = t->next_part >= t->n_parts;
	fill_header(t, h, *last);
	h->n_groups = n;
	return (uint32_t) off;
}

/* agg_task_memory: bytes the run's result tables hold */
size_t
agg_task_memory(const AggTask *t)
{
	size_t		n = 0;

	for (uint32_t p = 0; p < t->n_parts; p++)
		n += t->parts[p] ? xpu_agg_table_memory(t->parts[p]) : 0;
	return n;
}

/*
 * agg_task_free: waits for the run's thread (cancel it first to make that
 * quick) and frees everything of the run.
 */
void
agg_task_free(AggTask *t)
{
	if (t == NULL)
		return;
	svc_task_thread_join(&t->task);
	for (uint32_t i = 0; t->run.files && i < t->run.n_files; i++)
		svc_input_close(&t->run.files[i]);
	free(t->run.files);
	free(t->work);
	heap_run_free(t->heap);
	for (uint32_t p = 0; p < t->n_parts; p++)
		xpu_agg_table_free(t->parts[p]);
	free(t->parts);
	svc_share_detach(t->share);
	svc_join_release_set(&t->joins);
	free(t->matched_own);
	free(t->payload);
	svc_failure_destroy(&t->fail);
	free(t);
}
