/*-------------------------------------------------------------------------
 *
 * gpu_driver.h
 *		The CUDA driver as the service's GPU code sees it: the entry points
 *		that gpu.c resolves with its one dlopen(), each device's context and
 *		the fatbin module loaded into it, and the driver-level form of the
 *		GPU aggregation run (gpu_agg.c) that tests drive directly.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_DRIVER_H
#define PG_WARP_GPU_DRIVER_H

#include <stddef.h>

#include "service.h"
#include "xpu/cuda_driver.h"

typedef struct CUevent_st *CUevent;

#define CUDA_ERROR_INVALID_VALUE		1
#define CUDA_ERROR_OUT_OF_MEMORY		2
#define CUDA_ERROR_NOT_READY			600
#define CUDA_ERROR_NOT_SUPPORTED		801
#define CU_STREAM_NON_BLOCKING			1
#define CU_EVENT_DEFAULT				0
#define CU_EVENT_DISABLE_TIMING			2

/* the driver entry points (gpu.c); versioned names where the ABI has several */
typedef struct GpuDriver
{
	CUresult	(*cuInit) (unsigned int flags);
	CUresult	(*cuDeviceGetCount) (int *count);
	CUresult	(*cuDeviceGet) (CUdevice *dev, int ordinal);
	CUresult	(*cuDeviceGetName) (char *name, int len, CUdevice dev);
	CUresult	(*cuDeviceTotalMem) (size_t *bytes, CUdevice dev);
	CUresult	(*cuDeviceGetAttribute) (int *value, int attrib, CUdevice dev);
	CUresult	(*cuDeviceGetPCIBusId) (char *busid, int len, CUdevice dev);
	CUresult	(*cuDevicePrimaryCtxRetain) (CUcontext *ctx, CUdevice dev);
	CUresult	(*cuDevicePrimaryCtxRelease) (CUdevice dev);
	CUresult	(*cuGetErrorName) (CUresult err, const char **name);
	CUresult	(*cuCtxPushCurrent) (CUcontext ctx);
	CUresult	(*cuCtxPopCurrent) (CUcontext *ctx);
	CUresult	(*cuModuleLoad) (CUmodule *mod, const char *path);
	CUresult	(*cuModuleGetFunction) (CUfunction *f, CUmodule mod, const char *name);
	CUresult	(*cuModuleUnload) (CUmodule mod);
	CUresult	(*cuMemAlloc) (CUdeviceptr *p, size_t bytes);
	CUresult	(*cuMemFree) (CUdeviceptr p);
	CUresult	(*cuMemAllocHost) (void **p, size_t bytes);
	CUresult	(*cuMemFreeHost) (void *p);
	CUresult	(*cuMemHostRegister) (void *p, size_t bytes, unsigned int flags);
	CUresult	(*cuMemHostUnregister) (void *p);
	CUresult	(*cuMemcpyHtoDAsync) (CUdeviceptr dst, const void *src, size_t bytes,
									  CUstream s);
	CUresult	(*cuMemcpyDtoHAsync) (void *dst, CUdeviceptr src, size_t bytes,
									  CUstream s);
	CUresult	(*cuMemcpyDtoDAsync) (CUdeviceptr dst, CUdeviceptr src, size_t bytes,
									  CUstream s);
	CUresult	(*cuMemsetD8Async) (CUdeviceptr p, unsigned char v, size_t n, CUstream s);
	CUresult	(*cuStreamCreate) (CUstream *s, unsigned int flags);
	CUresult	(*cuStreamDestroy) (CUstream s);
	CUresult	(*cuStreamSynchronize) (CUstream s);
	CUresult	(*cuStreamQuery) (CUstream s);
	CUresult	(*cuEventCreate) (CUevent *e, unsigned int flags);
	CUresult	(*cuEventDestroy) (CUevent e);
	CUresult	(*cuEventRecord) (CUevent e, CUstream s);
	CUresult	(*cuEventSynchronize) (CUevent e);
	CUresult	(*cuEventElapsedTime) (float *ms, CUevent start, CUevent end);
	CUresult	(*cuLaunchKernel) (CUfunction f, unsigned int gx, unsigned int gy,
								   unsigned int gz, unsigned int bx, unsigned int by,
								   unsigned int bz, unsigned int smem, CUstream s,
								   void **params, void **extra);
	/* optional (NULL before CUDA 13's driver): many copies queued in one call */
	CUresult	(*cuMemcpyBatchAsync) (CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
									   size_t count, CUmemcpyAttributes *attrs,
									   size_t *attr_idxs, size_t num_attrs, CUstream s);
} GpuDriver;

/* in gpu.c */
extern GpuDriver gpu_drv;

/* the fatbin the kernels come from (--fatbin); NULL: no GPU kernels */
extern const char *gpu_fatbin_path;

/* "CUDA_ERROR_X (n)" for a driver result, into buf */
extern const char *gpu_error_text(CUresult rc, char *buf, size_t len);

/*
 * gpu_note_result: called with every failed driver result; one that leaves
 * the CUDA context unusable (a fault in a kernel: illegal address, launch
 * failure, device assert, ...; every later call of the process returns it
 * again) marks the service's GPUs lost, logged once with what (the call).
 * gpu_lost: that result, or 0.  server.c then admits no more runs and ends
 * the service once its runs are over, so that the supervisor starts a new
 * one with new contexts.
 */
extern void gpu_note_result(CUresult rc, const char *what);
extern CUresult gpu_lost(void);

/* the context of gpu->devices[i] (retained by gpu_open) */
extern CUcontext gpu_device_context(uint32_t i);

/*
 * the fatbin's module in device i's context, loaded on first use (any
 * thread); false with msg set when there is no fatbin or it does not load
 */
extern bool gpu_device_module(uint32_t i, CUmodule *mod, char *msg, size_t msglen);

/* in gpu_agg.c */

/*
 * the sketch of an HLL aggregate of a group handed to a GpuAggSink: len
 * bytes at data, 8-byte hashes (in no order) or, with dense, 2^p registers
 * (xpu_agg_table_fold_hll's arguments)
 */
typedef struct GpuAggHll
{
	int			dense;
	uint32_t	len;
	const uint8_t *data;
} GpuAggHll;

/* receives each group of a GPU run (several times for one key at most
 * when the GPU table filled up: the receiver combines them); 0 on failure
 * with err set.  An HLL state's v.i points to its GpuAggHll during the
 * call (0: the group had no non-NULL argument) */
typedef int (*GpuAggSink) (void *arg, const uint8_t *key, uint32_t key_len,
						   const XpuAggState *states, XpuError *err);

typedef struct GpuAggOptions
{
	uint32_t	initial_groups; /* the GPU table's first capacity (0: automatic) */
	uint32_t	device;			/* index into gpu->devices */
} GpuAggOptions;

/* gpu_agg_run (service.h) with the groups going to sink */
extern int	gpu_agg_execute(const ServiceGpu *gpu, AggRun *run,
							const GpuAggOptions *opts, GpuAggSink sink, void *sink_arg,
							XpuError *err, int *werr, char *msg, size_t msglen);

/*
 * The heap chunks of a HEAP_RUN as gpu_heap_execute reads them
 * (service/heap_chunk.c fills it): the ring of slots in the backend's memfd
 * (pages read with pread from fd, visibility bitmaps from the mapping),
 * what the run decodes, and the queue of filled slots: take() blocks for
 * the next one (false: no more, or the run stopped) and give() hands a
 * slot back once its pages are copied.
 */
struct XpuHeapAtt;

typedef struct GpuHeapSource
{
	int			fd;
	const uint8_t *ring;		/* mapped read-only, ring_size bytes */
	size_t		ring_size;
	uint64_t	slot_size;
	uint32_t	slot_pages;
	const struct XpuHeapAtt *atts;	/* [n_deform] */
	int			n_deform;
	const int16_t *col_att;		/* [n_cols]: chunk column j's attribute number */
	const uint8_t *col_kind;	/* [n_cols]: XpuColKind */
	int			n_cols;
	const uint8_t *missing;
	const char *relpath;		/* WARP_HEAP_UNITS: the first segment file, or NULL */
	uint32_t	seg_blocks;		/* blocks per segment file */
	bool		service_reads;	/* WARP_HEAP_SERVICE_READS: a missed unit read here */
	/* the next HEAP_CHUNK (slot, pages, unit flags); false at the run's end */
	bool		(*take) (void *arg, WarpHeapChunk *ch);
	/* the slot's HEAP_DONE, with WARP_CHUNK_SERVED (and READ) or WARP_CHUNK_NO_CACHE for a probe */
	void		(*give) (void *arg, uint32_t slot, uint32_t flags);

	/*
	 * a GpuScan's run (WARP_HEAP_SCAN) when set: the chunk's rows are only
	 * filtered (kern_warp_exec), and its pass mask (one byte per visible
	 * tuple, in page and line pointer order; NULL when it has none) goes
	 * here instead of give(); recheck: the GPU could not filter it
	 */
	void		(*pass) (void *arg, uint32_t slot, const uint8_t *mask, int64_t nrows,
						 bool recheck);
	void	   *arg;
	bool		taken;			/* set once take() gave a slot */
} GpuHeapSource;

/*
 * gpu_heap_execute: a HEAP_RUN (the heap source) on device opts->device:
 * every chunk src gives is decoded (kern_heap.cu) and aggregated on the
 * GPU, the groups going to sink(sink_arg, ...), or, for a GpuScan's run
 * (src->pass set), filtered.  Returns as gpu_agg_run does; a chunk the
 * GPU cannot decode exactly returns XPU_ERR_FALLBACK as the CPU engine
 * would.  WARP_ERR_UNSUPPORTED (src->taken false): the run is one the GPU
 * does not serve, the CPU engine may take it.
 */
extern int	gpu_heap_execute(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src,
							 const GpuAggOptions *opts, GpuAggSink sink, void *sink_arg,
							 XpuError *err, int *werr, char *msg, size_t msglen);

/* the pinned buffer of a slot that reads a whole heap unit (gpu_agg_prewarm keeps some) */
extern size_t gpu_heap_unit_buffer_bytes(void);

/* gpu_heap_execute into the table out (as gpu_agg_run), the runs taking the GPUs in turn */
extern int	gpu_agg_heap_run(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src,
							 struct XpuAggTable *out, XpuError *err, int *werr,
							 char *msg, size_t msglen);

/*
 * gpu_heap_scan_run: a GpuScan's HEAP_RUN (src->pass set) on the GPUs in
 * turn: every chunk decoded and filtered on the GPU, its mask to src->pass;
 * returns as gpu_heap_execute
 */
extern int	gpu_heap_scan_run(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src,
							  XpuError *err, int *werr, char *msg, size_t msglen);

#endif							/* PG_WARP_GPU_DRIVER_H */
