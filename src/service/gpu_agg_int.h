/*-------------------------------------------------------------------------
 *
 * gpu_agg_int.h
 *		The service's one GPU input path and what its users share: a run's
 *		state (GaggRun: its pinned double-buffered slots, I/O threads, column
 *		cache entries, table and error) and its steps, defined in gpu_agg.c
 *		(GpuPreAgg over Arrow record batches), gpu_input.c (the input path)
 *		and gpu_mem.c (errors, allocations) and reused by gpu_heap.c (heap
 *		chunks) and gpu_scan.c (GpuScan's filter over Arrow record batches).
 *		Internal to the service's GPU runner.
 *
 *-------------------------------------------------------------------------
 */
#ifndef GPU_AGG_INT_H
#define GPU_AGG_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_cache.h"
#include "gpu_driver.h"
#include "service.h"
#include "service/join_store.h"
#include "xpu/xpu_agg_gpu.h"

#define GAGG_SLOTS			2
#define GAGG_ALIGN			64
#define GAGG_IO_THREADS		16
/*
 * bytes per pread of the I/O threads: each slice's copy to the GPU is
 * queued as its read ends (gagg_io_copy), so that reads and copies overlap
 * (the copy rates by slice size: bench/results/README.md, data path)
 */
#define GAGG_IO_SLICE		(2 << 20)
/*
 * the least bytes of one copy to the GPU while the reads that follow it
 * are still running (gagg_io_copy merges the copies of consecutive reads):
 * copies of one column of a pg2arrow record batch (384 KiB) stay well
 * below the bus rate, copies of a few MiB reach it (bench/results/README.md,
 * "A launch's copies merged")
 */
#define GAGG_COPY_MIN		((size_t) 4 << 20)
/*
 * the nice value of a read-ahead's I/O threads (AGG_FILL): while a join's
 * inner tables are built, PostgreSQL's processes that build them (the run
 * cannot start before) take the CPUs first, and the read-ahead the rest
 * (bench/results/README.md, "A read-ahead behind the builds")
 */
#define GAGG_FILL_NICE		10
#define GAGG_BLOCKS_PER_SM	XPU_GAGG_MIN_BLOCKS	/* the grid: as many as fit */
#define GAGG_SMEM_BUDGET	(40 * 1024)
#define GAGG_CACHE_MAX		256
#define GAGG_DEFAULT_GROUPS	(1u << 20)
#define GAGG_POLL_NS		20000	/* the wait for a kernel checks for a cancel this often */
#define GAGG_OOM_EVICT		((size_t) 64 << 20)	/* cache bytes evicted per retry */
#define GAGG_SMEM_LIMIT		(48 * 1024)	/* a block's shared memory without opting in */

/*
 * A launch takes consecutive record batches (of one or several files) until
 * it has GAGG_LAUNCH_ROWS rows, GAGG_LAUNCH_BYTES referenced bytes or
 * GAGG_LAUNCH_PARTS batches (a larger batch goes alone): small batches
 * (pg2arrow writes 8 MB ones) would otherwise pay a launch, a wait and a
 * flush of the blocks' tables each.
 */
#define GAGG_LAUNCH_PARTS	64
#define GAGG_LAUNCH_ROWS	((int64_t) 1 << 22)
#define GAGG_LAUNCH_BYTES	((uint64_t) 256 << 20)

/*
 * GAGG_RETRY: a driver call that may need device memory (a stream, an
 * event, a launch), done again while it runs out of it and the column
 * cache has entries to evict
 */
#define GAGG_RETRY(g, call) \
	({ \
		CUresult	r_; \
		while ((r_ = (call)) == CUDA_ERROR_OUT_OF_MEMORY && \
			   gpu_cache_shrink((g)->dev, GAGG_OOM_EVICT) > 0) \
			; \
		r_; \
	})

/*
 * one pread into pinned memory (with stream, then copied to device address
 * dev on it), or (direct != NULL) a cuFileRead of the file into dev
 * (gpu_direct.h), or (off != NULL) a check of utf8 offsets
 */
typedef struct GaggRead
{
	int			fd;
	int			tag;			/* the caller's: which of its inputs this is */
	int64_t		offset;
	size_t		len;
	uint8_t    *dst;
	CUstream	stream;			/* NULL: the read only */
	CUdeviceptr dev;
	struct GpuDirectFile *direct;
	const int32_t *off;			/* off[0 .. n_off] must not decrease */
	int64_t		n_off;			/* (or dst's, by its after hook) */
	AggRun	   *run;			/* a cuFile read's bytes counted there (NULL: the caller's) */
	/* run by the thread that read it, right after: 0, or the read fails (-5) */
	int			(*after) (void *arg, const struct GaggRead *r);
	void	   *after_arg;
} GaggRead;

#define GAGG_CHECK_SLICE	(1 << 20)	/* offsets per check job */

/* the I/O threads of a run: each takes the next slice of the current list */
typedef struct GaggIo
{
	pthread_t	threads[GAGG_IO_THREADS];
	int			n_threads;
	int			want;			/* threads to start at the first reads */
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t done;
	GaggRead   *reads;
	int			n_reads;
	int			next;
	int			finished;
	int			failed_errno;	/* first errno of a failed read; -1: file too
								 * short; -2: offsets decrease; -3: a copy
								 * failed (failed_cu); -4: a cuFileRead
								 * failed (failed_direct); -5: its after
								 * hook refused what was read */
	int			failed_tag;		/* that read's tag */
	CUresult	failed_cu;
	int			failed_direct;	/* gpu_direct_read's result */
	CUcontext	ctx;			/* the threads' (for the copies) */
	int			nice;			/* > 0: the threads' nice value (a read-ahead's) */
	int			stop;
	/*
	 * copier: the calling thread queues the copies of the reads in their
	 * order, merged (gagg_io_copy); state[i]: read i is GAGG_READ_* (room
	 * for state_cap reads)
	 */
	bool		copier;
	uint8_t    *state;
	int			state_cap;
} GaggIo;

#define GAGG_READ_PENDING	0
#define GAGG_READ_DONE		1
#define GAGG_READ_FAILED	2

/*
 * one host-to-device copy of a batch: from the slot's pinned buffer at
 * host_off, or (reg != NULL) from bytes file_off.. of a file's registered
 * region (file_reg.h; host_off unused: the pinned buffer keeps no room for
 * what comes from registered pages)
 */
typedef struct GaggCopy
{
	size_t		host_off;
	size_t		len;
	CUdeviceptr dst;
	struct FileReg *reg;		/* the file's registration, and the region */
	int32_t		region;
	int64_t		file_off;
	int			tag;
} GaggCopy;

/* one record batch of a launch: file fi of the run, its batch number */
typedef struct GaggWork
{
	uint32_t	fi;
	int32_t		batch;
} GaggWork;

/* where the next launch's batches start: file fi, its bi-th batch of the request */
typedef struct GaggCursor
{
	uint32_t	fi;
	uint32_t	bi;
} GaggCursor;

typedef struct GaggSlot
{
	CUstream	stream;
	CUevent		ev_start;
	CUevent		ev_end;
	uint8_t    *host;			/* pinned: the batch as the device sees it */
	size_t		host_cap;
	CUdeviceptr dev;
	size_t		dev_cap;
	CUdeviceptr ovf;			/* two overflow lists of ovf_cap rows */
	size_t		ovf_cap;
	CUdeviceptr d_launch;
	XpuGaggLaunch *status;		/* pinned copy of d_launch after the kernel */
	int			busy;			/* a batch is in flight */
	int64_t		nrows;			/* of all its batches */
	int			n_parts;		/* its record batches (Arrow input; 0: heap) */
	GaggWork	parts[GAGG_LAUNCH_PARTS];
	int64_t		first_row[GAGG_LAUNCH_PARTS + 1];	/* each part's first chunk row;
												 * [n_parts]: the rows of all */
	const XpuColumnData *part_cols[GAGG_LAUNCH_PARTS];	/* its descriptors on the device */
	/*
	 * per part and program column (entries[p * n_cols + k]): the cache entry
	 * the batch reads it from (a hit, or one this launch fills: filling[]
	 * 1; GAGG_SKIP: a read-ahead's column it leaves alone), referenced until
	 * the launch is done
	 */
	GpuCacheEntry **entries;
	uint8_t    *filling;
	GaggCopy   *copies;			/* the launch's host-to-device copies */
	int			n_copies;
	int			copies_cap;
	/*
	 * the cache entries the launch fills, as pieces of kern_copy_pieces
	 * from where they were copied in the device buffer: n_scatter of them
	 * at scatter_at of the pinned buffer (the chunk's header) and of the
	 * device buffer
	 */
	size_t		scatter_at;
	int			n_scatter;
} GaggSlot;

#define GAGG_SKIP			2	/* GaggSlot.filling: not read (a read-ahead's) */

/* one referenced buffer of a batch: read from the file or copied from memory */
typedef struct GaggPiece
{
	int64_t		file_off;		/* >= 0: read len bytes there */
	const void *src;			/* else copy from here (NULL and len 0: none) */
	size_t		len;
	/* where a launch puts it (gagg_layout_pieces) */
	uint8_t		via;			/* GAGG_VIA_* */
	size_t		dev_off;		/* in the slot's device buffer */
	size_t		host_off;		/* in its pinned buffer (GAGG_VIA_HOST only) */
} GaggPiece;

/* how a piece reaches the GPU (GaggPiece.via) */
#define GAGG_VIA_NONE		0	/* a cache hit, or no bytes */
#define GAGG_VIA_HOST		1	/* through the pinned buffer: read, or copied from memory */
#define GAGG_VIA_PAGES		2	/* copied from the file's registered pages */
#define GAGG_VIA_DIRECT		3	/* read into GPU memory with cuFile */

typedef struct GaggRun
{
	AggRun	   *run;
	uint32_t	dev;			/* index into ServiceGpu.devices */
	const XpuProgram *prog;		/* the run's program, or hoisted */
	XpuProgram *hoisted;		/* its constants hoisted for the GPU (owned) */
	CUfunction	f_init;
	CUfunction	f_exec;
	CUfunction	f_copy;			/* kern_copy_pieces */
	int			n_sms;
	XpuGaggSpec spec;
	uint64_t	hll_limit;		/* bytes the table's HLL sketches may take */
	uint32_t	smem_prog;
	uint32_t	entries;
	int32_t		chunk_ncols;
	CUdeviceptr d_prog;
	CUdeviceptr d_spec;
	CUdeviceptr d_table;
	CUdeviceptr d_joins;		/* [n_joins]: the join tables' device copies */
	CUdeviceptr join_ptrs[WARP_MAX_JOINS];	/* what d_joins holds (join_store.c's
											 * copies, kept while the tables live) */
	int32_t		n_joins;
	CUdeviceptr d_matched;		/* the run's matched flags on the device (a
								 * RIGHT/FULL depth), 0: none */
	uint64_t	matched_words;
	CUdeviceptr table_mem;
	size_t		table_bytes;
	XpuGaggTable table;			/* host copy of what d_table holds */
	GaggSlot	slots[GAGG_SLOTS];
	GaggIo		io;
	uint64_t	mem_held;
	bool		use_cache;		/* the device's column cache is on */
	bool		fill_only;		/* a read-ahead (AGG_FILL): the batches' columns
								 * copied into cache entries, no kernel */
	GpuCacheFileId *ids;		/* per file: its identity (ino 0: not cached) */
	bool		reg_run;		/* between file_reg_run_begin and _end */
	struct FileReg **regs;		/* per file: its registered pages (file_reg.h),
								 * NULL: read with pread */
	struct GpuDirectFile **direct;	/* per file: read with cuFile (gpu_direct.h),
									 * NULL: not */
	CUcontext	ctx;			/* the device's context (registrations) */
	CUdeviceptr d_cancel;		/* int32 the kernels poll: nonzero stops them */
	CUstream	cancel_stream;	/* sets it while the slots' streams are busy */
	int32_t    *cancel_one;		/* pinned: the 1 copied there */
	bool		cancel_sent;
	GpuAggSink	sink;
	void	   *sink_arg;
	XpuError   *err;
	int		   *werr;
	char	   *msg;
	size_t		msglen;
} GaggRun;

#define GAGG_ADD(field, v)	__atomic_fetch_add(&(field), (v), __ATOMIC_RELAXED)

/* where gpu_agg_run's groups go: the run's CPU table */
typedef struct GaggTableSink
{
	XpuAggTable *table;
	const XpuAggSpec *spec;
} GaggTableSink;

static inline size_t
align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* a chunk the kernel reads probes the run's join tables on the device */
static inline void
gagg_chunk_joins(const GaggRun *g, XpuChunk *chunk)
{
	chunk->joins = (const struct XpuJoinTable *const *) (uintptr_t) g->d_joins;
	chunk->n_joins = g->n_joins;
	chunk->matched = (uint32_t *) (uintptr_t) g->d_matched;
}

/* the rows of part p of slot s's launch */
static inline int64_t
gagg_part_rows(const GaggSlot *s, int p)
{
	return s->first_row[p + 1] - s->first_row[p];
}

/* in gpu_agg.c */
extern int gagg_begin(GaggRun *g, const ServiceGpu *gpu, AggRun *run, uint32_t device,
					  XpuError *err, int *werr, char *msg, size_t msglen);
extern int gagg_slot_finish(GaggRun *g, GaggSlot *s);
extern int gagg_setup(GaggRun *g, const ServiceGpu *gpu, uint32_t dev,
						const GpuAggOptions *opts);
extern int gagg_launch(GaggRun *g, GaggSlot *s, CUdeviceptr rows, uint32_t n_rows,
						CUdeviceptr ovf);
extern int gagg_fold_into_table(void *arg, const uint8_t *key, uint32_t key_len,
						const XpuAggState *states, XpuError *err);
extern void gagg_teardown(GaggRun *g);
extern int gagg_table_drain(GaggRun *g, XpuGaggTable *thp);
extern int gagg_stream_wait(GaggRun *g, CUstream st);
extern void gagg_device_add(AggRun *run, const WarpDeviceWork *w);
extern int	gpu_agg_fill_device(const ServiceGpu *gpu, AggRun *run, uint32_t device,
								int *werr, char *msg, size_t msglen);

/*
 * a run's share on its device as it goes (gagg_clock_start, the marks of
 * its setup's and its batches' ends, gagg_clock_end adds it to the run)
 */
typedef struct GaggClock
{
	int64_t		t[5];			/* start, setup done, batches done, groups
								 * read back (0: not marked), end */
	uint64_t	batches,		/* the run's counters at the start */
				rows,
				exec_us;
} GaggClock;

extern void gagg_clock_start(GaggClock *c, const AggRun *run);
extern void gagg_clock_mark(GaggClock *c, int step);
extern void gagg_clock_end(GaggClock *c, AggRun *run, uint32_t dev);

/* in gpu_mem.c */
extern int gagg_cuda(GaggRun *g, CUresult rc, const char *what);
extern int gagg_fail(GaggRun *g, int code, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));
extern void gagg_dev_free(GaggRun *g, CUdeviceptr *p, size_t n);
extern int gagg_dev_alloc(GaggRun *g, CUdeviceptr *p, size_t n, const char *what);
extern void gagg_dev_keep(GaggRun *g, CUdeviceptr *p, size_t n);
extern void gagg_host_free(GaggRun *g, void **p, size_t n);
extern void gagg_host_keep(GaggRun *g, void **p, size_t n);
extern int	gagg_stream_get(GaggRun *g, CUstream *s);
extern void gagg_stream_keep(GaggRun *g, CUstream *s);
extern int	gagg_event_get(GaggRun *g, CUevent *e);
extern void gagg_event_keep(GaggRun *g, CUevent *e);
extern int gagg_host_alloc(GaggRun *g, void **p, size_t n, const char *what);
extern void gagg_batch_release(GaggRun *g, uint8_t **p, size_t cap);
extern int gagg_batch_buffer(GaggRun *g, uint8_t **p, size_t *cap);
extern void gagg_prewarm_kept(uint32_t dev);
extern void gagg_kept_drop(uint32_t dev);

/* in gpu_input.c */
extern void gagg_io_start(GaggIo *io, int n, CUcontext ctx);
extern void gagg_io_stop(GaggIo *io);
extern int gagg_io_run(GaggIo *io, GaggRead *reads, int n);
extern int gagg_slot_reserve(GaggRun *g, GaggSlot *s, size_t host_len, size_t dev_len,
							 int64_t nrows, int slack_div, const char *what);
extern int gagg_next_launch(GaggRun *g, GaggCursor *c, GaggWork *w, int64_t *rows);
extern uint64_t gagg_column_bytes(const GaggRun *g, const AggRunFile *f, int32_t batch, int k);
extern int gagg_fill_slot(GaggRun *g, GaggSlot *s, const GaggWork *w, int n);
extern int gagg_copy_slot(GaggRun *g, GaggSlot *s);
extern void gagg_slot_release(GaggRun *g, GaggSlot *s, bool published);

/* in gpu_scan.c */
extern int gagg_launch_filter(GaggRun *g, GaggSlot *s, CUfunction f, CUdeviceptr d_prog,
							  CUdeviceptr res, CUdeviceptr xerr, CUdeviceptr mask,
							  XpuError *err_host);

#endif							/* GPU_AGG_INT_H */
