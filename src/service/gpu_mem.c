/*-------------------------------------------------------------------------
 *
 * gpu_mem.c
 *		What every GPU run of the service (gpu_agg_int.h) reports and
 *		holds: its error, its device and pinned host allocations (counted in
 *		the memory the service holds), and the pool of pinned batch buffers
 *		kept between runs, filled when the service starts.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_agg_int.h"

/*
 * Pinned batch buffers kept between runs: pinning memory costs about as
 * much as reading it, so the last few are kept for the next run on the same
 * device (they stay counted in the memory the service holds).
 */
#define GAGG_POOL			4

static struct
{
	pthread_mutex_t lock;
	struct
	{
		uint32_t	dev;
		void	   *p;
		size_t		cap;
	}			buf[GAGG_POOL];
}			gagg_pool = {PTHREAD_MUTEX_INITIALIZER};

/* gagg_fail: sets the run's error (code and message) and returns -1 */
int
gagg_fail(GaggRun *g, int code, const char *fmt,...)
{
	va_list		ap;

	*g->werr = code;
	va_start(ap, fmt);
	vsnprintf(g->msg, g->msglen, fmt, ap);
	va_end(ap);
	return -1;
}

/* gagg_cuda: -1 with a message naming the call unless rc is success */
int
gagg_cuda(GaggRun *g, CUresult rc, const char *what)
{
	char		buf[96];

	if (rc == CUDA_SUCCESS)
		return 0;
	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of GPU memory: %s failed", what);
	gpu_note_result(rc, what);
	return gagg_fail(g, WARP_ERR_IO, "GPU failure: %s: %s", what,
					 gpu_error_text(rc, buf, sizeof(buf)));
}

/* memory the service holds (STATUS), and this run's share */
static void
gagg_account(GaggRun *g, int64_t delta)
{
	GAGG_ADD(svc_counters.memory_in_use, (uint64_t) delta);
	g->mem_held += (uint64_t) delta;
}

/* a device allocation: out of memory first evicts column cache entries */
int
gagg_dev_alloc(GaggRun *g, CUdeviceptr *p, size_t n, const char *what)
{
	CUresult	rc;

	while ((rc = gpu_drv.cuMemAlloc(p, n)) == CUDA_ERROR_OUT_OF_MEMORY &&
		   gpu_cache_shrink(g->dev, n) > 0)
		;

	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY,
						 "out of GPU memory: could not allocate %zu bytes for %s", n, what);
	if (gagg_cuda(g, rc, "cuMemAlloc") != 0)
		return -1;
	gagg_account(g, (int64_t) n);
	return 0;
}

void
gagg_dev_free(GaggRun *g, CUdeviceptr *p, size_t n)
{
	if (*p != 0)
	{
		gpu_drv.cuMemFree(*p);
		gagg_account(g, -(int64_t) n);
	}
	*p = 0;
}

int
gagg_host_alloc(GaggRun *g, void **p, size_t n, const char *what)
{
	CUresult	rc = gpu_drv.cuMemAllocHost(p, n);

	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY,
						 "out of pinned host memory: could not allocate %zu bytes for %s",
						 n, what);
	if (gagg_cuda(g, rc, "cuMemAllocHost") != 0)
		return -1;
	gagg_account(g, (int64_t) n);
	return 0;
}

void
gagg_host_free(GaggRun *g, void **p, size_t n)
{
	if (*p != NULL)
	{
		gpu_drv.cuMemFreeHost(*p);
		gagg_account(g, -(int64_t) n);
	}
	*p = NULL;
}

/*
 * gagg_batch_buffer: a pinned buffer of at least *cap bytes for a slot,
 * from the pool when one there is big enough (*cap: its size)
 */
int
gagg_batch_buffer(GaggRun *g, uint8_t **p, size_t *cap)
{
	int			best = -1;

	pthread_mutex_lock(&gagg_pool.lock);
	for (int i = 0; i < GAGG_POOL; i++)
		if (gagg_pool.buf[i].p != NULL && gagg_pool.buf[i].dev == g->dev &&
			gagg_pool.buf[i].cap >= *cap &&
			(best < 0 || gagg_pool.buf[i].cap < gagg_pool.buf[best].cap))
			best = i;
	if (best >= 0)
	{
		*p = gagg_pool.buf[best].p;
		*cap = gagg_pool.buf[best].cap;
		gagg_pool.buf[best].p = NULL;
		g->mem_held += *cap;
	}
	pthread_mutex_unlock(&gagg_pool.lock);
	return best >= 0 ? 0 : gagg_host_alloc(g, (void **) p, *cap, "a batch");
}

/*
 * gpu_agg_prewarm: puts GAGG_SLOTS pinned buffers per device in the pool,
 * each large enough for any launch of several batches (GAGG_LAUNCH_BYTES
 * and the slack gagg_slot_reserve adds), so that the first run after the
 * service starts does not pin its slots' memory: pinning two fresh 320 MB
 * buffers took about 90 ms of a first run on the H200 host (its I/O time
 * 89 ms against 26 ms for the same run later; bench/results/README.md).
 * Done before the service serves runs; a buffer that cannot be had is
 * left to the first run that needs it.
 */
void
gpu_agg_prewarm(const ServiceGpu *gpu)
{
	size_t		cap = align_up(GAGG_LAUNCH_BYTES + GAGG_LAUNCH_BYTES / 4 + ((size_t) 16 << 20),
							   (size_t) 1 << 20);

	for (uint32_t d = 0; d < gpu->n_devices; d++)
	{
		CUcontext	popped;

		if (gpu_drv.cuCtxPushCurrent(gpu_device_context(d)) != CUDA_SUCCESS)
			continue;
		for (int k = 0; k < GAGG_SLOTS; k++)
		{
			void	   *p = NULL;
			int			i;

			if (gpu_drv.cuMemAllocHost(&p, cap) != CUDA_SUCCESS)
				break;
			pthread_mutex_lock(&gagg_pool.lock);
			for (i = 0; i < GAGG_POOL && gagg_pool.buf[i].p != NULL; i++)
				;
			if (i < GAGG_POOL)
			{
				gagg_pool.buf[i].dev = d;
				gagg_pool.buf[i].p = p;
				gagg_pool.buf[i].cap = cap;
				GAGG_ADD(svc_counters.memory_in_use, (uint64_t) cap);
			}
			pthread_mutex_unlock(&gagg_pool.lock);
			if (i == GAGG_POOL)
			{
				gpu_drv.cuMemFreeHost(p);
				break;
			}
		}
		gpu_drv.cuCtxPopCurrent(&popped);
	}
}

/* gagg_batch_release: a slot's buffer back to the pool (or freed when it is full) */
void
gagg_batch_release(GaggRun *g, uint8_t **p, size_t cap)
{
	int			i;

	if (*p == NULL)
		return;
	pthread_mutex_lock(&gagg_pool.lock);
	for (i = 0; i < GAGG_POOL && gagg_pool.buf[i].p != NULL; i++)
		;
	if (i < GAGG_POOL)
	{
		gagg_pool.buf[i].dev = g->dev;
		gagg_pool.buf[i].p = *p;
		gagg_pool.buf[i].cap = cap;
		g->mem_held -= cap;
		*p = NULL;
	}
	pthread_mutex_unlock(&gagg_pool.lock);
	gagg_host_free(g, (void **) p, cap);
}
