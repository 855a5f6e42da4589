/*
 * fake_cuda.c
 *		A stand-in libcuda.so.1 for heap_gpucheck on a machine without a
 *		GPU (`make -C test/gpu heapfake`): one "device" whose memory is host
 *		memory, synchronous streams, and kernels run on the host, so that
 *		the service's GPU heap path (service/gpu_agg.c's staging, layout,
 *		double buffering, status and cancel handling) runs for real around
 *		them.  The heap kernels are emulated with the same per-tuple
 *		functions kern_heap.cu calls (xpu/xpu_heap_gpu.h), block by block in
 *		thread order; kern_warp_exec by the CPU engine's pass mask (a heap
 *		GpuScan's filter); kern_join_scan_exec by its host form
 *		(xpu_join_scan_exec, the same per-row function; with
 *		PG_WARP_FAKE_JOIN_SCAN_FALLBACK set every launch raises FALLBACK, so
 *		that the service runs each batch on the CPU engine); kern_agg_exec is replaced by the CPU engine folding the
 *		decoded chunk into the side table the check registers
 *		(fake_side_table), which the check compares with the CPU engine's
 *		heap run; pg_warp_selftest as kern_selftest.cu computes it.  A
 *		chunk's join tables (XpuChunk.joins: the "device" copies, host
 *		memory here) go on to the CPU engine's slices.  Only
 *		what gpu.c resolves is defined.  With
 *		PG_WARP_FAKE_CUDA_FAULT=N in the environment every launch returns
 *		the driver result N instead (a kernel fault, for the service's
 *		recovery test, test/python/test_gpu_fault.py).  Host registration
 *		succeeds and is counted (fake_host_registers, fake_host_registered),
 *		as are device and pinned allocations (fake_allocs)
 *		unless PG_WARP_FAKE_CUDA_NO_REGISTER is set, when it is refused, so
 *		that both of the heap path's ways to the device run.  The streams
 *		and events made are counted too (fake_handles).  With
 *		PG_WARP_FAKE_CUDA_COPY_DELAY_US=N each host-to-device copy takes N
 *		microseconds more, so that a test can watch a run's threads.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpu/cuda_driver.h"
#include "xpu/xpu_agg.h"
#include "xpu/xpu_agg_gpu.h"
#include "xpu/xpu_heap_gpu.h"
#include "xpu/xpu_join.h"
#include "xpu/xpu_join_scan.h"

typedef struct CUevent_st *CUevent;

#define FAKE_API	__attribute__((visibility("default")))

/* where kern_agg_exec's stand-in folds the rows (set by heap_gpucheck) */
FAKE_API XpuAggTable *fake_side_table;

/* cuMemHostRegister: the registrations made, and those not undone yet */
FAKE_API int fake_host_registers;
FAKE_API int fake_host_registered;

/* cuMemAlloc and cuMemAllocHost: the allocations made */
FAKE_API int fake_allocs;

/* cuStreamCreate and cuEventCreate: the streams and events made */
FAKE_API int fake_handles;

/*
 * cuMemAllocHost of a heap unit's buffer (16 to 64 MiB): how many, the
 * first FAKE_UNIT_HOSTS of them, and the copies to the device from those
 * of them from the fake_unit_watch'th on (set by the test: none by default)
 */
#define FAKE_UNIT_HOSTS		64
FAKE_API int fake_unit_watch = FAKE_UNIT_HOSTS;
FAKE_API int fake_unit_host_allocs;
FAKE_API char *fake_unit_hosts[FAKE_UNIT_HOSTS];
FAKE_API size_t fake_unit_host_len[FAKE_UNIT_HOSTS];
FAKE_API int fake_unit_host_copies;

enum
{
	K_AGG_EXEC, K_HEAP_MEASURE, K_HEAP_SCAN, K_HEAP_DECODE, K_WARP_EXEC, K_SELFTEST, K_OTHER,
	K_JOIN_SCAN, K_HEAP_CHECK, K_COPY_PIECES
};

struct CUfunc_st
{
	int			id;
};
static struct CUfunc_st funcs[] = {{K_AGG_EXEC}, {K_HEAP_MEASURE}, {K_HEAP_SCAN},
{K_HEAP_DECODE}, {K_WARP_EXEC}, {K_SELFTEST}, {K_OTHER}, {K_JOIN_SCAN}, {K_HEAP_CHECK},
{K_COPY_PIECES}};
static int	dummy;

FAKE_API CUresult cuInit(unsigned int f) { return 0; }
FAKE_API CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
FAKE_API CUresult cuDeviceGet(CUdevice *d, int i) { *d = i; return 0; }
FAKE_API CUresult cuDeviceGetName(char *name, int len, CUdevice d)
{
	strncpy(name, "fake GPU (host memory)", len);
	return 0;
}
FAKE_API CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = (size_t) 8 << 30; return 0; }
FAKE_API CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d)
{
	*v = attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 4 :
		attr == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR ? 9 : 0;
	return 0;
}
FAKE_API CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { *c = (CUcontext) &dummy; return 0; }
FAKE_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return 0; }
FAKE_API CUresult cuGetErrorName(CUresult e, const char **s) { *s = "CUDA_ERROR_FAKE"; return 0; }
FAKE_API CUresult cuCtxPushCurrent_v2(CUcontext c) { return 0; }
FAKE_API CUresult cuCtxPopCurrent_v2(CUcontext *c) { *c = (CUcontext) &dummy; return 0; }
FAKE_API CUresult cuModuleLoad(CUmodule *m, const char *path) { *m = (CUmodule) &dummy; return 0; }
FAKE_API CUresult cuModuleUnload(CUmodule m) { return 0; }
FAKE_API CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice d)
{
	strncpy(id, "0000:0F:00.0", len);
	return 0;
}
FAKE_API CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	*f = &funcs[strcmp(name, "kern_agg_exec") == 0 ? K_AGG_EXEC :
				strcmp(name, "kern_heap_measure") == 0 ? K_HEAP_MEASURE :
				strcmp(name, "kern_heap_scan") == 0 ? K_HEAP_SCAN :
				strcmp(name, "kern_heap_decode") == 0 ? K_HEAP_DECODE :
				strcmp(name, "kern_heap_check") == 0 ? K_HEAP_CHECK :
				strcmp(name, "kern_copy_pieces") == 0 ? K_COPY_PIECES :
				strcmp(name, "kern_warp_exec") == 0 ? K_WARP_EXEC :
				strcmp(name, "kern_join_scan_exec") == 0 ? K_JOIN_SCAN :
				strcmp(name, "pg_warp_selftest") == 0 ? K_SELFTEST : K_OTHER];
	return 0;
}
/* device memory starts as garbage, as a GPU's does */
FAKE_API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n)
{
	void	   *m = malloc(n);

	if (m == NULL)
		return 2;
	__atomic_add_fetch(&fake_allocs, 1, __ATOMIC_RELAXED);
	memset(m, 0xA5, n);
	*p = (CUdeviceptr) (uintptr_t) m;
	return 0;
}
FAKE_API CUresult cuMemFree_v2(CUdeviceptr p) { free((void *) (uintptr_t) p); return 0; }
/*
 * pinned host memory refused (CUDA_ERROR_OUT_OF_MEMORY) for an allocation
 * of more than PG_WARP_FAKE_CUDA_HOST_MAX bytes, where that is set
 */
FAKE_API CUresult cuMemAllocHost_v2(void **p, size_t n)
{
	const char *max = getenv("PG_WARP_FAKE_CUDA_HOST_MAX");

	if (max != NULL && n > (size_t) strtoull(max, NULL, 10))
		return 2;
	__atomic_add_fetch(&fake_allocs, 1, __ATOMIC_RELAXED);
	*p = calloc(1, n);
	if (*p != NULL && n >= ((size_t) 16 << 20) && n < ((size_t) 64 << 20))
	{
		int			i = __atomic_fetch_add(&fake_unit_host_allocs, 1, __ATOMIC_RELAXED);

		if (i < FAKE_UNIT_HOSTS)
		{
			fake_unit_hosts[i] = *p;
			fake_unit_host_len[i] = n;
		}
	}
	return *p ? 0 : 2;
}
FAKE_API CUresult cuMemFreeHost(void *p) { free(p); return 0; }
FAKE_API CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags)
{
	if (getenv("PG_WARP_FAKE_CUDA_NO_REGISTER") != NULL)
		return 801;				/* CUDA_ERROR_NOT_SUPPORTED */
	__atomic_add_fetch(&fake_host_registers, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&fake_host_registered, 1, __ATOMIC_RELAXED);
	return 0;
}
FAKE_API CUresult cuMemHostUnregister(void *p)
{
	__atomic_sub_fetch(&fake_host_registered, 1, __ATOMIC_RELAXED);
	return 0;
}
FAKE_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, CUstream st)
{
	int			units = __atomic_load_n(&fake_unit_host_allocs, __ATOMIC_RELAXED);
	const char *delay = getenv("PG_WARP_FAKE_CUDA_COPY_DELAY_US");

	if (delay != NULL && atol(delay) > 0)
		usleep((useconds_t) atol(delay));

	for (int i = __atomic_load_n(&fake_unit_watch, __ATOMIC_RELAXED);
		 i < units && i < FAKE_UNIT_HOSTS; i++)
		if ((const char *) s >= fake_unit_hosts[i] &&
			(const char *) s < fake_unit_hosts[i] + fake_unit_host_len[i])
			__atomic_add_fetch(&fake_unit_host_copies, 1, __ATOMIC_RELAXED);
	memcpy((void *) (uintptr_t) d, s, n);
	return 0;
}
/*
 * CUDA 13's batched copies: each as cuMemcpyHtoDAsync (only host-to-device
 * here); PG_WARP_FAKE_CUDA_NO_BATCH: refused, as a driver without them would
 */
FAKE_API CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
										size_t count, CUmemcpyAttributes *attrs, size_t *attr_idxs,
										size_t num_attrs, CUstream st)
{
	if (getenv("PG_WARP_FAKE_CUDA_NO_BATCH") != NULL)
		return 801;				/* CUDA_ERROR_NOT_SUPPORTED */
	if (count == 0 || attrs == NULL || attr_idxs == NULL || num_attrs == 0 ||
		num_attrs > count || attr_idxs[0] != 0)
		return 1;				/* CUDA_ERROR_INVALID_VALUE */
	for (size_t i = 0; i < num_attrs; i++)
		if (attrs[i].srcAccessOrder == 0)
			return 1;
	for (size_t i = 0; i < count; i++)
		cuMemcpyHtoDAsync_v2(dsts[i], (const void *) (uintptr_t) srcs[i], sizes[i], st);
	return 0;
}
FAKE_API CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, CUstream st)
{
	memcpy(d, (const void *) (uintptr_t) s, n);
	return 0;
}
FAKE_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st)
{
	memcpy((void *) (uintptr_t) d, (const void *) (uintptr_t) s, n);
	return 0;
}
FAKE_API CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char v, size_t n, CUstream st)
{
	memset((void *) (uintptr_t) p, v, n);
	return 0;
}
FAKE_API CUresult cuStreamCreate(CUstream *s, unsigned int f)
{
	__atomic_add_fetch(&fake_handles, 1, __ATOMIC_RELAXED);
	*s = (CUstream) &dummy;
	return 0;
}
FAKE_API CUresult cuStreamDestroy_v2(CUstream s) { return 0; }
FAKE_API CUresult cuStreamSynchronize(CUstream s) { return 0; }
FAKE_API CUresult cuStreamQuery(CUstream s) { return 0; }
FAKE_API CUresult cuEventCreate(CUevent *e, unsigned int f)
{
	__atomic_add_fetch(&fake_handles, 1, __ATOMIC_RELAXED);
	*e = (CUevent) &dummy;
	return 0;
}
FAKE_API CUresult cuEventDestroy_v2(CUevent e) { return 0; }
FAKE_API CUresult cuEventRecord(CUevent e, CUstream s) { return 0; }
FAKE_API CUresult cuEventSynchronize(CUevent e) { return 0; }
FAKE_API CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { *ms = 0; return 0; }

/* kern_heap_measure and kern_heap_decode, a block (page) at a time, threads in order */
static void
fake_heap(const XpuHeapGpuDesc *d, const XpuHeapGpuChunk *hc, XpuChunk *chunk,
		  const int32_t *cancel, unsigned int n_pages)
{
	const uint8_t *ptrs[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	lens[XPU_HEAP_GPU_MAX_WANT];

	for (unsigned int p = 0; p < n_pages && *cancel == 0; p++)
	{
		const uint8_t *page = hc->pages + (size_t) p * XPU_HEAP_PAGE_SIZE;
		const uint8_t *vis = hc->vis + (size_t) p * XPU_HEAP_VIS_BYTES;
		uint64_t	before[64] = {0};

		for (int i = 0; i < XPU_HEAP_GPU_BLOCK; i++)
		{
			int			visible = xpu_hg_visible(vis, i);
			int			code = visible ? xpu_hg_tuple(d, page, i, ptrs, lens) : 0;
			const uint8_t *const *pp = visible && code == 0 ? ptrs : NULL;
			uint32_t	r = visible ? hc->row_start[p] + xpu_hg_rank(vis, i) : 0;

			for (int j = 0; j < d->n_cols; j++)
			{
				int			t = d->col_text[j];
				uint64_t	n = t >= 0 ? xpu_hg_text_len(d, j, pp, lens) : 0;
				uint64_t   *pt = t >= 0 ? &hc->page_text[(size_t) t * hc->n_pages + p] : NULL;
				int			c;

				if (chunk == NULL)
				{
					if (t >= 0)
						*pt = (i == 0 ? 0 : *pt) + n;
					continue;
				}
				if (t >= 0)
					before[t] += n;
				if (!visible)
					continue;
				c = xpu_hg_put(d, &chunk->cols[j], j, r, pp, lens,
							   t >= 0 ? *pt + before[t] - n : 0, hc->text_cap);
				if (code == 0)
					code = c;
			}
			if (code != 0 && hc->status->code == 0)
				hc->status->code = code;
		}
	}
}

/* kern_heap_scan: page_text made exclusive prefix sums */
static void
fake_scan(const XpuHeapGpuDesc *d, const XpuHeapGpuChunk *hc)
{
	for (int t = 0; t < d->n_text; t++)
	{
		uint64_t	sum = 0;

		for (uint32_t p = 0; p < hc->n_pages; p++)
		{
			uint64_t	v = hc->page_text[(size_t) t * hc->n_pages + p];

			hc->page_text[(size_t) t * hc->n_pages + p] = sum;
			sum += v;
		}
	}
}

/*
 * fake_slice: the columns (cols) of chunk rows r0 .. r0 + n - 1, n at most
 * max and within the part r0 lies in (a chunk of several record batches,
 * XpuChunk.parts, as the kernels read it); returns n
 */
static int64_t
fake_slice(const XpuChunk *chunk, int64_t r0, int64_t max, XpuColumnData *cols)
{
	int64_t		in = r0,
				end = chunk->nrows;
	const XpuColumnData *part = xpu_chunk_part(chunk, &in);

	for (int p = 0; p + 1 < chunk->n_parts; p++)
		if (chunk->parts[p + 1].first_row > r0)
		{
			end = chunk->parts[p + 1].first_row;
			break;
		}
	for (int j = 0; j < chunk->ncols; j++)
	{
		cols[j] = part[j];
		cols[j].offset += in;
	}
	return end - r0 < max ? end - r0 : max;
}

/* kern_agg_exec's stand-in: the CPU engine over the chunk into fake_side_table */
static void
fake_agg(const XpuProgram *prog, const XpuChunk *chunk, XpuGaggLaunch *launch,
		 const int32_t *cancel)
{
	enum
	{
		SLICE = 4096
	};
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * SLICE),
			   *mask = malloc(SLICE);
	XpuColumnData *cols = malloc((chunk->ncols + 1) * sizeof(XpuColumnData));
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};

	for (int64_t r0 = 0, n; r0 < chunk->nrows && *cancel == 0; r0 += n)
	{
		XpuChunk	c = {n = fake_slice(chunk, r0, SLICE, cols), chunk->ncols, 0, cols, NULL,
		chunk->joins, chunk->n_joins, 0};	/* "device" memory is the host's */
		XpuResult	res = {n, mask, values, nulls};

		/* a program whose rows expand: SLICE output rows at a time */
		if (xpu_program_expands(prog))
		{
			XpuAggSink	as = {fake_side_table, 0};
			int			rc;

			res.nrows = SLICE;
			rc = xpu_cpu_exec_each_counted(prog, &c, &res, ws, &launch->err, xpu_agg_sink,
										   &as, probes);
			launch->rows_passed += as.rows;
			if (rc != 1)
				break;
			continue;
		}
		if (xpu_cpu_exec_counted(prog, &c, &res, ws, &launch->err, probes) != XPU_OK ||
			!xpu_agg_table_update(fake_side_table, &res, &launch->err))
			break;
		for (int64_t r = 0; r < n; r++)
			launch->rows_passed += mask[r];
	}
	/* the rows entering each join depth, as the kernel's one atomic a block */
	for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		launch->join_in[d] += probes[d];
	free(ws);
	free(values);
	free(nulls);
	free(mask);
	free(cols);
}

/* kern_warp_exec's stand-in: the CPU engine's pass mask over the chunk, its first error */
static void
fake_warp(const XpuProgram *prog, const XpuChunk *chunk, const XpuResult *res, XpuError *err)
{
	enum
	{
		SLICE = 4096
	};
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * SLICE);
	XpuColumnData *cols = malloc((chunk->ncols + 1) * sizeof(XpuColumnData));

	for (int64_t r0 = 0, n; r0 < chunk->nrows && err->code == XPU_OK; r0 += n)
	{
		XpuChunk	c = {n = fake_slice(chunk, r0, SLICE, cols), chunk->ncols, 0, cols, NULL,
		chunk->joins, chunk->n_joins, 0};
		XpuResult	r = {n, res->mask + r0, values, nulls};

		xpu_cpu_exec(prog, &c, &r, ws, err);
	}
	free(ws);
	free(values);
	free(nulls);
	free(cols);
}

FAKE_API CUresult
cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			   unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
			   CUstream s, void **params, void **extra)
{
#define ARG(i, type)	((type) (uintptr_t) *(CUdeviceptr *) params[i])
	const char *fault = getenv("PG_WARP_FAKE_CUDA_FAULT");

	/* a kernel fault (e.g. 700, an illegal address): test_gpu_fault.py */
	if (fault != NULL && atoi(fault) != 0)
		return atoi(fault);
	if (f == NULL)
		return 400;				/* CUDA_ERROR_INVALID_HANDLE, as the driver says */
	if (gy > 65535 || gz > 65535 || gx == 0 || gy == 0 || gz == 0)
		return 1;				/* CUDA_ERROR_INVALID_VALUE: the driver's grid limits */
	switch (f->id)
	{
		case K_AGG_EXEC:
			fake_agg(ARG(0, const XpuProgram *), ARG(3, const XpuChunk *),
					 ARG(9, XpuGaggLaunch *), ARG(11, const int32_t *));
			break;
		case K_HEAP_MEASURE:
			fake_heap(ARG(0, const XpuHeapGpuDesc *), ARG(1, const XpuHeapGpuChunk *), NULL,
					  ARG(2, const int32_t *), gx);
			break;
		case K_HEAP_SCAN:
			fake_scan(ARG(0, const XpuHeapGpuDesc *), ARG(1, const XpuHeapGpuChunk *));
			break;
		case K_HEAP_CHECK:
			/* kern_heap_check(pages, n_pages, vis, tuples): a page at a time */
			for (uint32_t p = 0; p < *(const uint32_t *) params[1]; p++)
				ARG(3, int16_t *)[p] = (int16_t)
					xpu_hg_check_page(ARG(0, const uint8_t *) + (size_t) p * XPU_HEAP_PAGE_SIZE,
									  ARG(2, uint8_t *) + (size_t) p * XPU_HEAP_VIS_BYTES);
			break;
		case K_COPY_PIECES:
			/* kern_copy_pieces(pieces, n): one piece after the other */
			for (uint32_t p = 0; p < *(const uint32_t *) params[1]; p++)
			{
				const XpuCopyPiece *pc = ARG(0, const XpuCopyPiece *) + p;

				memcpy((void *) (uintptr_t) pc->dst, (const void *) (uintptr_t) pc->src, pc->len);
			}
			break;
		case K_HEAP_DECODE:
			fake_heap(ARG(0, const XpuHeapGpuDesc *), ARG(1, const XpuHeapGpuChunk *),
					  ARG(2, XpuChunk *), ARG(3, const int32_t *), gx);
			break;
		case K_WARP_EXEC:
			fake_warp(ARG(0, const XpuProgram *), ARG(3, const XpuChunk *),
					  ARG(4, const XpuResult *), ARG(5, XpuError *));
			break;
		case K_JOIN_SCAN:
			{
				uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};
				unsigned long long *counts = ARG(7, unsigned long long *);

				xpu_join_scan_exec(ARG(0, const XpuProgram *), ARG(3, const XpuChunk *),
								   ARG(4, uint8_t *), ARG(5, int32_t *),
								   counts != NULL ? probes : NULL, ARG(6, XpuError *));
				for (int d = 0; counts != NULL && d < XPU_JOIN_COUNT_DEPTHS; d++)
					counts[d] += probes[d];
			}
			/* every launch as if its program raised FALLBACK (test_gpujoin_scan.py) */
			if (getenv("PG_WARP_FAKE_JOIN_SCAN_FALLBACK") != NULL)
				ARG(6, XpuError *)->code = XPU_ERR_FALLBACK;
			break;
		case K_SELFTEST:
			/* kern_selftest.cu: y[i] = a * x[i] + i */
			for (int64_t i = 0; i < ARG(0, int64_t); i++)
				ARG(3, int64_t *)[i] = ARG(1, int64_t) * ARG(2, const int64_t *)[i] + i;
			break;
	}
	return 0;
#undef ARG
}
