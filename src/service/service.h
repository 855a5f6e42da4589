/*-------------------------------------------------------------------------
 *
 * service.h
 *		Declarations shared by the files of pg_warp_service, the process
 *		that owns the GPUs of one PostgreSQL cluster (doc/service.md).
 *
 * The service is a program of its own: it includes no PostgreSQL header and
 * talks to backends only through xpu/protocol.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_H
#define PG_WARP_SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "service/input.h"
#include "service/join_counts.h"
#include "xpu/protocol.h"
#include "xpu/xpu_agg.h"

/* in util.c */
extern void svc_log(const char *level, const char *fmt, ...)
			__attribute__((format(printf, 2, 3)));
extern int64_t svc_now_us(int clock_id);

/* the counters that STATUS reports (server.c keeps them, the runs add to them) */
typedef struct ServiceCounters
{
	uint64_t	memory_in_use;	/* bytes of GPU + pinned memory held */
	uint32_t	running_tasks;	/* tasks executing now */
	uint32_t	connections;	/* clients connected now */
	uint32_t	queued_tasks;	/* runs waiting for admission */
} ServiceCounters;

extern ServiceCounters svc_counters;


/* in options.c: the command line (main.c) and the settings it gives */
typedef struct ServiceOptions
{
	const char *datadir;		/* -D */
	pid_t		parent;			/* --parent-pid, 0: none */
	bool		use_gpus;		/* false: --no-gpu */
	int64_t		cache_size;		/* --gpu-cache-size in bytes, -1: auto */
	int			unit_buffers;	/* --unit-buffers, per device */
	bool		meta_prewarm;	/* --arrow-metadata-prewarm (on by default) */
} ServiceOptions;

extern void svc_options_parse(int argc, char **argv, ServiceOptions *opts);
extern int	svc_cpu_threads;	/* --threads: CPU engine threads of a run */
extern const char *svc_gpu_list;	/* --gpus: device ordinals to use (NULL: all) */
extern int	svc_max_async_tasks;	/* --max-async-tasks: runs at once */

/* in gpu.c */

/* what the CUDA driver gave the service at start; fixed for its life */
typedef struct ServiceGpu
{
	WarpEngine	engine;			/* GPU when n_devices > 0 */
	char		detail[192];	/* why there is no GPU, or "" */
	bool		driver_failed;	/* a driver is installed but does not work */
	uint32_t	n_devices;
	WarpDeviceInfo devices[WARP_MAX_DEVICES];
} ServiceGpu;

extern void gpu_open(ServiceGpu *gpu, bool use_gpus);
/* in gpu_mem.c: the GPU runs' first pinned buffers, before any run */
extern void gpu_agg_prewarm(const ServiceGpu *gpu, int unit_buffers, size_t unit_bytes);
extern bool gpu_agg_release_kept(uint32_t dev);
extern void gpu_close(ServiceGpu *gpu);

/*
 * in devices.c: the reply to DEVICES (xpu/protocol.h) into buf (at least
 * PGWARP_MAX_PAYLOAD bytes, 16-aligned): its length, *type
 * WARP_MSG_DEVICES, or WARP_MSG_ERROR with a WarpErrorMsg
 */
extern uint32_t devices_answer(const ServiceGpu *gpu, const uint8_t *payload,
							   uint32_t len, uint8_t *buf, uint32_t *type);

/* in server.c */

extern int	server_listen(void);
extern int	server_run(int listen_fd, int signal_fd, pid_t parent_pid,
					   const ServiceGpu *gpu);
extern void server_unlink_socket(void);

/*
 * in agg.c: one AGG_RUN (xpu/protocol.h) while it runs.  agg.c parses and
 * checks the request, opens the files (identity checked), runs the CPU
 * engine, and hands a run to gpu_agg_run (gpu_agg.c) when the run may use a
 * GPU; the groups of either end in `out` and go back in AGG_RESULT messages.
 */
struct ArrowFile;
struct XpuAggTable;
struct SvcJoinSet;

/* one file of the run (input.h); its fields[] are indexed by chunk column,
 * which for an AGG_RUN is the program's column */
typedef SvcInputFile AggRunFile;

typedef struct AggRun
{
	const XpuProgram *prog;		/* validated, 16-byte aligned */
	XpuAggSpec	spec;
	uint32_t	n_files;
	AggRunFile *files;
	uint32_t	n_threads;		/* CPU threads to use */
	int64_t		max_buffer_size;
	volatile int *canceled;		/* set (nonzero) when the backend cancels */
	const struct SvcJoinSet *joins;	/* the join depths' tables (join_store.h), held
									 * while the run lives; NULL: none */
	/* counters the run adds to (atomically: several threads) */
	uint64_t	rows_in;
	uint64_t	rows_passed;
	uint64_t	batches;
	uint64_t	bytes_read;
	uint64_t	bytes_cached;	/* served from the GPU column cache instead */
	uint64_t	bytes_mapped;	/* of bytes_read: copied from registered pages */
	uint64_t	bytes_to_pin;	/* file pages this run queued to be registered */
	uint64_t	bytes_direct;	/* of bytes_read: read with cuFile (gpu_direct.c) */
	uint64_t	io_us;
	uint64_t	exec_us;
	SvcJoinCounts join_rows;	/* the rows entering each join depth */
	int			join_uncounted;	/* a runner that does not count them ran */
	/* the GPUs' shares (gpu_agg_execute adds to device d's, d < the limit) */
	WarpDeviceWork devices[WARP_REPORT_DEVICES];
	uint32_t	devices_used;	/* bit d: device d took part */
} AggRun;

/*
 * in gpu_scan.c: GpuScan's filter of a SCAN_RUN's record batches on a GPU,
 * through the GPU input path of gpu_agg.c (run: the SCAN_RUN as an AggRun
 * without keys or aggregates).  pass(pass_arg, work, mask, nrows) is called
 * once for each batch, work counting the batches in request order (files,
 * then batches), on the caller's thread: mask[0 .. nrows - 1] nonzero where
 * the row passes, valid during the call only, or NULL when the program
 * raised an error or FALLBACK in that batch (PostgreSQL rechecks it).
 * A projection run (a program with outputs: GpuJoin's) runs the JOIN
 * stage on the GPU (kern_join_scan.cu) and hands over with the mask the
 * inner row each probe found: probe p of row r at rows[p * rows_stride + r]
 * (xpu_join_scan.h); rows NULL for a program without outputs.  join_in
 * (NULL: not counted): a projection run adds to join_in[d] the rows that
 * entered join depth d (XPU_JOIN_COUNT_DEPTHS of them; EXPLAIN ANALYZE).
 * Returns 0, or -1 with *werr and msg set (I/O, GPU failure, canceled).
 */
typedef void (*GpuScanPass) (void *arg, int64_t work, const uint8_t *mask,
							 const int32_t *rows, int64_t rows_stride, int64_t nrows);

extern int	gpu_scan_run(const ServiceGpu *gpu, AggRun *run, GpuScanPass pass, void *pass_arg,
						 uint64_t *join_in, int *werr, char *msg, size_t msglen);

/*
 * in agg.c: the life of one AGG_RUN as the epoll loop (server.c) sees it:
 * start (the request parsed and checked, the run on its own thread), an
 * eventfd write when the run is done, then its replies one by one, then
 * free.  Only agg_task_cancel may be called while it runs.
 */
typedef struct AggTask AggTask;

/*
 * An AggTask begins with its AggRun (agg.c), so that server.c can read a
 * running task's counters (rows_in) through it for TASKS.
 */
#define AGG_TASK_RUN(t)		((const AggRun *) (const void *) (t))

extern AggTask *agg_task_start(const uint8_t *payload, uint32_t len,
							   const ServiceGpu *gpu, int notify_fd, int memfd, bool fill,
							   uint32_t *werr, char *msg, size_t msglen);
extern struct HeapRun *agg_task_heap(AggTask *t);
extern void agg_task_cancel(AggTask *t);
extern bool agg_task_done(const AggTask *t);
extern uint32_t agg_task_reply(AggTask *t, uint8_t *buf, uint32_t *type, bool *last);
extern size_t agg_task_memory(const AggTask *t);
extern void agg_task_free(AggTask *t);

/*
 * in scan.c: one SCAN_RUN (GpuScan's filter), with the life of an AGG_RUN:
 * start, an eventfd write when done, replies, free.
 */
typedef struct ScanTask ScanTask;

extern ScanTask *scan_task_start(const uint8_t *payload, uint32_t len,
								 const ServiceGpu *gpu, int notify_fd,
								 uint32_t *werr, char *msg, size_t msglen);
extern void scan_task_cancel(ScanTask *t);
extern bool scan_task_done(const ScanTask *t);
extern uint32_t scan_task_reply(ScanTask *t, uint8_t *buf, uint32_t *type, bool *last);
extern size_t scan_task_memory(const ScanTask *t);
extern void scan_task_free(ScanTask *t);

/*
 * in gpu_agg.c: runs `run` on the GPUs of `gpu` and folds every group into
 * `out` (an empty table made by xpu_agg_table_create for the run's program
 * and spec).  Returns XPU_OK; an XpuErrorCode with *err filled when the
 * program raised an error or FALLBACK (the backend then evaluates the query
 * in PostgreSQL); or -1 with *werr (WarpErrorCode) and msg[msglen] set when
 * the run could not be done (I/O, out of GPU memory, canceled).
 */
extern int	gpu_agg_run(const ServiceGpu *gpu, AggRun *run,
						struct XpuAggTable *out, XpuError *err,
						int *werr, char *msg, size_t msglen);

/*
 * in gpu_multi.c: the read-ahead of `run` (AGG_FILL): the columns its
 * program reads copied into the column cache of the GPU that gpu_agg_run
 * would read each batch on, no kernel run (a run over one batch on several
 * GPUs: nothing, its device is not known in advance).  Counters as a run's
 * (batches, bytes_read: read into the cache, bytes_cached: there already).
 * Returns 0, or -1 with *werr and msg set.
 */
extern int	gpu_agg_fill(const ServiceGpu *gpu, AggRun *run, int *werr, char *msg,
						 size_t msglen);

/*
 * in heap_chunk.c: the heap part of a HEAP_RUN (xpu/protocol.h): its ring
 * of chunks in the backend's memfd and the CPU workers that decode and
 * aggregate them.  agg.c parses (heap_run_parse), runs (heap_run_exec, or
 * heap_run_exec_gpu on the GPU engine, on the run's thread: the groups in
 * one table a worker, which agg.c merges as an AGG_RUN's) and frees it;
 * server.c passes it the HEAP_CHUNK and
 * HEAP_END messages and sends a HEAP_DONE for each slot heap_run_next_done
 * gives back.
 */
typedef struct HeapRun HeapRun;

extern HeapRun *heap_run_parse(const uint8_t *p, size_t len, const XpuProgram *prog,
							   int memfd, int notify_fd, char *msg, size_t msglen);
extern bool heap_run_message(HeapRun *h, uint32_t type, const uint8_t *payload,
							 uint32_t len, char *msg, size_t msglen);
extern bool heap_run_next_done(HeapRun *h, uint8_t *buf, uint32_t *len);
extern void heap_run_cancel(HeapRun *h);
extern int	heap_run_exec(HeapRun *h, AggRun *run, struct XpuAggTable **tables,
						  uint32_t *n_tables, uint32_t *threads, XpuError *err, int *werr,
						  char *msg, size_t msglen);
extern int	heap_run_exec_gpu(HeapRun *h, const ServiceGpu *gpu, AggRun *run,
							  struct XpuAggTable **tables, uint32_t *n_tables,
							  uint32_t *threads, WarpEngine *engine, XpuError *err,
							  int *werr, char *msg, size_t msglen);
extern void heap_run_free(HeapRun *h);

#endif							/* PG_WARP_SERVICE_H */
