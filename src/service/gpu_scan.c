/*-------------------------------------------------------------------------
 *
 * gpu_scan.c
 *		GpuScan's filter on a GPU: a SCAN_RUN worker (scan.c) that runs on a
 *		service with a GPU hands each loaded record batch here; the columns
 *		the qual program loads are copied to the device, kern_warp_exec
 *		(src/xpu/kern_warp.cu, the per-row interpreter) writes the pass
 *		mask, and the mask and the program's first error come back to the
 *		host, where scan.c compacts the passing rows into blocks.
 *
 * Each worker has its own GpuScanDev: a stream in the device's primary
 * context and one device arena, grown as batches need, that holds the
 * program, the chunk's descriptors, the result's mask and the column
 * buffers.  A batch is one synchronous round trip (copies in, kernel, copy
 * back); several workers keep the GPU busy with several batches at once.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_driver.h"
#include "arrow/arrow.h"

#define GSCAN_BLOCK		256
#define GSCAN_MAX_GRID	65535
#define GSCAN_SMEM_MAX	(48 * 1024)

struct GpuScanDev
{
	uint32_t	device;
	CUcontext	ctx;
	CUfunction	f_exec;
	CUstream	stream;
	CUdeviceptr arena;
	size_t		arena_cap;
	uint8_t    *host;			/* staging of the descriptors */
	size_t		host_cap;
};

static size_t
gscan_align(size_t n)
{
	return (n + 15) & ~(size_t) 15;
}

/* -1 with msg naming the call unless rc is success; *werr set */
static int
gscan_cuda(CUresult rc, const char *what, int *werr, char *msg, size_t msglen)
{
	char		buf[96];

	if (rc == CUDA_SUCCESS)
		return 0;
	*werr = rc == CUDA_ERROR_OUT_OF_MEMORY ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_IO;
	gpu_note_result(rc, what);
	snprintf(msg, msglen, "GPU failure in GpuScan: %s: %s", what,
			 gpu_error_text(rc, buf, sizeof(buf)));
	return -1;
}

/*
 * gpu_scan_open: a worker's state on device `device` of the service; NULL
 * with *werr and msg set when the GPU cannot run the kernel.
 */
GpuScanDev *
gpu_scan_open(uint32_t device, int *werr, char *msg, size_t msglen)
{
	GpuScanDev *d = calloc(1, sizeof(GpuScanDev));
	CUmodule	mod;
	CUcontext	old;

	if (d == NULL)
		return *werr = WARP_ERR_OUT_OF_MEMORY, snprintf(msg, msglen, "out of memory"), NULL;
	d->device = device;
	d->ctx = gpu_device_context(device);
	if (gscan_cuda(gpu_drv.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent", werr, msg, msglen))
		return free(d), NULL;
	if (!gpu_device_module(device, &mod, msg, msglen))
		*werr = WARP_ERR_UNSUPPORTED;
	else if (gscan_cuda(gpu_drv.cuModuleGetFunction(&d->f_exec, mod, "kern_warp_exec"),
						"cuModuleGetFunction", werr, msg, msglen) == 0 &&
			 gscan_cuda(gpu_drv.cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING),
						"cuStreamCreate", werr, msg, msglen) == 0)
	{
		gpu_drv.cuCtxPopCurrent(&old);
		return d;
	}
	gpu_drv.cuCtxPopCurrent(&old);
	free(d);
	return NULL;
}

/* gpu_scan_close: frees what gpu_scan_open and the batches allocated */
void
gpu_scan_close(GpuScanDev *d)
{
	CUcontext	old;

	if (d == NULL)
		return;
	if (gpu_drv.cuCtxPushCurrent(d->ctx) == CUDA_SUCCESS)
	{
		if (d->arena)
		{
			gpu_drv.cuMemFree(d->arena);
			__atomic_sub_fetch(&svc_counters.memory_in_use, d->arena_cap, __ATOMIC_RELAXED);
		}
		if (d->stream)
			gpu_drv.cuStreamDestroy(d->stream);
		gpu_drv.cuCtxPopCurrent(&old);
	}
	free(d->host);
	free(d);
}

/*
 * bytes of the values (or utf8 offsets) buffer of array a over n rows,
 * from the Arrow type scan.c checked against the program column's kind
 */
static size_t
gscan_values_len(const ArrowArray *a, int64_t n)
{
	if (a->field->type.id == ARROW_TYPE_BOOL)
		return ((size_t) n + 7) / 8;
	if (a->field->type.id == ARROW_TYPE_UTF8)
		return 4 * ((size_t) n + 1);
	return (size_t) arrow_type_value_width(&a->field->type) * (size_t) n;
}

/* makes room: arena of n bytes, host staging of h bytes */
static int
gscan_reserve(GpuScanDev *d, size_t n, size_t h, int *werr, char *msg, size_t msglen)
{
	if (h > d->host_cap)
	{
		free(d->host);
		if ((d->host = malloc(h)) == NULL)
			return d->host_cap = 0, *werr = WARP_ERR_OUT_OF_MEMORY,
				snprintf(msg, msglen, "out of memory"), -1;
		d->host_cap = h;
	}
	if (n <= d->arena_cap)
		return 0;
	if (d->arena)
	{
		gpu_drv.cuMemFree(d->arena);
		__atomic_sub_fetch(&svc_counters.memory_in_use, d->arena_cap, __ATOMIC_RELAXED);
		d->arena = 0;
		d->arena_cap = 0;
	}
	n = n + n / 4;
	if (gscan_cuda(gpu_drv.cuMemAlloc(&d->arena, n), "cuMemAlloc", werr, msg, msglen))
		return -1;
	d->arena_cap = n;
	__atomic_add_fetch(&svc_counters.memory_in_use, n, __ATOMIC_RELAXED);
	return 0;
}

/*
 * gpu_scan_filter: runs prog over the loaded batch (its chunk column j is
 * batch->columns[fields[j]], n_cols of them) into mask[0 .. n_rows - 1].
 * Returns 0 (err->code: the program's first error, XPU_OK if none), or -1
 * with *werr and msg set when the GPU failed.
 */
int
gpu_scan_filter(GpuScanDev *d, const XpuProgram *prog, const ArrowBatch *batch,
				const int32_t *fields, uint32_t n_cols, uint8_t *mask, XpuError *err,
				int *werr, char *msg, size_t msglen)
{
	const int64_t n = batch->n_rows;
	const size_t o_chunk = gscan_align(prog->total_len);
	const size_t o_cols = o_chunk + gscan_align(sizeof(XpuChunk));
	const size_t o_res = o_cols + gscan_align(sizeof(XpuColumnData) * (n_cols ? n_cols : 1));
	const size_t o_err = o_res + gscan_align(sizeof(XpuResult));
	const size_t o_mask = o_err + gscan_align(sizeof(XpuError));
	size_t		total = o_mask + gscan_align((size_t) n);
	uint32_t	prog_len = prog->total_len;
	uint32_t	smem = prog_len <= GSCAN_SMEM_MAX ? (uint32_t) gscan_align(prog_len) : 0;
	uint32_t	blocks = (uint32_t) ((n + GSCAN_BLOCK - 1) / GSCAN_BLOCK);
	CUdeviceptr d_prog, d_chunk, d_res, d_err;
	CUcontext	old;
	XpuColumnData *cd;
	int			rc = -1;

	memset(err, 0, sizeof(*err));
	if (n == 0)
		return 0;
	for (int k = 0; k < prog->n_cols; k++)
	{
		const XpuColumn *col = &XPU_COLS(prog)[k];
		const ArrowArray *a = &batch->columns[fields[col->col_index]];

		total += gscan_align(a->validity ? ((size_t) n + 7) / 8 : 0) +
			gscan_align(gscan_values_len(a, n)) +
			gscan_align(col->kind == XPU_COL_UTF8 ? (size_t) a->data_length : 0);
	}
	if (gscan_cuda(gpu_drv.cuCtxPushCurrent(d->ctx), "cuCtxPushCurrent", werr, msg, msglen))
		return -1;
	if (gscan_reserve(d, total, o_mask, werr, msg, msglen) != 0)
		goto done;
	memset(d->host, 0, o_mask);
	memcpy(d->host, prog, prog->total_len);
	d_prog = d->arena;
	d_chunk = d->arena + o_chunk;
	d_res = d->arena + o_res;
	d_err = d->arena + o_err;
	*(XpuChunk *) (d->host + o_chunk) =
		(XpuChunk) {n, (int32_t) n_cols, 0, (const XpuColumnData *) (uintptr_t) (d->arena + o_cols)};
	*(XpuResult *) (d->host + o_res) =
		(XpuResult) {n, (uint8_t *) (uintptr_t) (d->arena + o_mask), NULL, NULL};
	cd = (XpuColumnData *) (d->host + o_cols);
	{
		size_t		off = o_mask + gscan_align((size_t) n);

		for (int k = 0; k < prog->n_cols; k++)
		{
			const XpuColumn *col = &XPU_COLS(prog)[k];
			const ArrowArray *a = &batch->columns[fields[col->col_index]];
			const void *bufs[3] = {a->validity,
				col->kind == XPU_COL_UTF8 ? a->offsets : (const void *) a->values, a->data};
			size_t		lens[3] = {a->validity ? ((size_t) n + 7) / 8 : 0,
				gscan_values_len(a, n), col->kind == XPU_COL_UTF8 ? (size_t) a->data_length : 0};
			CUdeviceptr at[3] = {0, 0, 0};

			for (int b = 0; b < 3; b++)
			{
				if (lens[b] == 0 || bufs[b] == NULL)
					continue;
				at[b] = d->arena + off;
				if (gscan_cuda(gpu_drv.cuMemcpyHtoDAsync(at[b], bufs[b], lens[b], d->stream),
							   "cuMemcpyHtoDAsync", werr, msg, msglen))
					goto done;
				off += gscan_align(lens[b]);
			}
			cd[col->col_index].validity = (const uint8_t *) (uintptr_t) at[0];
			cd[col->col_index].values = (const void *) (uintptr_t) at[1];
			cd[col->col_index].data = (const char *) (uintptr_t) at[2];
			cd[col->col_index].offset = 0;
		}
	}
	if (blocks > GSCAN_MAX_GRID)
		blocks = GSCAN_MAX_GRID;
	{
		void	   *params[] = {&d_prog, &prog_len, &smem, &d_chunk, &d_res, &d_err};

		if (gscan_cuda(gpu_drv.cuMemcpyHtoDAsync(d->arena, d->host, o_mask, d->stream),
					   "cuMemcpyHtoDAsync", werr, msg, msglen) ||
			gscan_cuda(gpu_drv.cuLaunchKernel(d->f_exec, blocks, 1, 1, GSCAN_BLOCK, 1, 1, smem,
											  d->stream, params, NULL),
					   "cuLaunchKernel", werr, msg, msglen) ||
			gscan_cuda(gpu_drv.cuMemcpyDtoHAsync(mask, d->arena + o_mask, (size_t) n, d->stream),
					   "cuMemcpyDtoHAsync", werr, msg, msglen) ||
			gscan_cuda(gpu_drv.cuMemcpyDtoHAsync(err, d_err, sizeof(XpuError), d->stream),
					   "cuMemcpyDtoHAsync", werr, msg, msglen) ||
			gscan_cuda(gpu_drv.cuStreamSynchronize(d->stream), "cuStreamSynchronize",
					   werr, msg, msglen))
			goto done;
	}
	rc = 0;
done:
	/* an async copy may still read host memory: wait before returning */
	gpu_drv.cuStreamSynchronize(d->stream);
	gpu_drv.cuCtxPopCurrent(&old);
	return rc;
}
