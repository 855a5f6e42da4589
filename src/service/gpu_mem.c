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
 * much as reading it, so a few are kept for the next run on the same
 * device (they stay counted in the memory the service holds), the largest
 * where more come back than the pool holds (gagg_batch_release).
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

/*
 * Pinned buffers of heap units (gpu_heap.c: a slot that reads a whole unit
 * from its segment file needs gpu_heap_unit_buffer_bytes, which main.c
 * passes), --unit-buffers
 * of them per device pinned before the first run (gpu_agg_prewarm) and kept
 * apart from the batch buffers above: a parallel query's participants each
 * take two at once (17 participants, 34 buffers of 19 MiB), and pinning
 * them at the run's start, then unpinning them at its end, held the
 * driver's locks that the other participants' launches and copies waited
 * on (SSB SF 20 Q1's first GPU run over heap on the H200 host: 0.79-0.84 s
 * with 16 workers, 0.58 s with the buffers kept; bench/results/README.md).
 * A buffer of a run goes back here when there is room (the prewarmed
 * count), else it is freed.
 */
static struct
{
	pthread_mutex_t lock;
	size_t		bytes;			/* each buffer's size; 0: none kept */
	int			cap;			/* buffers kept at most */
	int			n;
	struct
	{
		uint32_t	dev;
		void	   *p;
	}		   *buf;
}			gagg_units = {PTHREAD_MUTEX_INITIALIZER};

/*
 * The device and pinned host allocations a run makes every time (its slots'
 * buffers and statuses, its program, table and flags), released at its end
 * once its streams are idle (gagg_teardown: gagg_dev_keep, gagg_host_keep),
 * are kept for the next run on the same device, which takes one of the
 * same size instead of asking the driver (cuMemAlloc, cuMemFree, which
 * waits for the device, cuMemAllocHost, cuMemFreeHost).  On each H200 of a
 * two-GPU host (warm SSB queries, both GPUs in use, EXPLAIN ANALYZE's GPU
 * lines) a run's setup took 2.3-4.3 ms and its end 1.5-2.9 ms beside
 * 6.4-24 ms of batches; with the blocks kept (and the I/O threads started
 * only for reads) 0.15-0.24 ms and 0.4-1.5 ms (bench/results/README.md).  At most
 * GAGG_KEPT blocks, and GAGG_KEPT_BYTES of device memory per device, the
 * device's oldest blocks giving way; an allocation that finds the device
 * full frees its kept blocks first.  Kept blocks are not counted in the
 * memory the service holds (STATUS), as freed ones were not.
 */
#define GAGG_KEPT			128
#define GAGG_KEPT_BYTES		((size_t) 1 << 30)

/*
 * what a kept block is: device or pinned host memory, or (n 0) one of the
 * streams and events a run creates (gagg_stream_get, gagg_event_get), so
 * that the next run on the device skips the driver's work of creating them
 * and the current one that of destroying them
 */
typedef enum GaggKeptKind
{
	KEPT_DEV,
	KEPT_HOST,
	KEPT_STREAM,
	KEPT_EVENT
} GaggKeptKind;

typedef struct GaggKept
{
	uint32_t	dev;
	GaggKeptKind kind;
	size_t		n;
	uintptr_t	p;				/* 0: a free slot */
	uint64_t	used;			/* gagg_kept.clock when kept */
} GaggKept;

static struct
{
	pthread_mutex_t lock;
	uint64_t	clock;
	GaggKept	blocks[GAGG_KEPT];
}			gagg_kept = {PTHREAD_MUTEX_INITIALIZER};

/* gagg_kept_take: a kept block of n bytes (of that kind) of device dev, or 0 */
static uintptr_t
gagg_kept_take(uint32_t dev, GaggKeptKind kind, size_t n)
{
	uintptr_t	p = 0;

	pthread_mutex_lock(&gagg_kept.lock);
	for (int i = 0; i < GAGG_KEPT && p == 0; i++)
	{
		GaggKept   *k = &gagg_kept.blocks[i];

		if (k->p != 0 && k->dev == dev && k->kind == kind && k->n == n)
		{
			p = k->p;
			k->p = 0;
		}
	}
	pthread_mutex_unlock(&gagg_kept.lock);
	return p;
}

/* gagg_kept_free: a kept block freed (its device's context current) */
static void
gagg_kept_free(const GaggKept *k)
{
	switch (k->kind)
	{
		case KEPT_DEV:
			gpu_drv.cuMemFree((CUdeviceptr) k->p);
			break;
		case KEPT_HOST:
			gpu_drv.cuMemFreeHost((void *) k->p);
			break;
		case KEPT_STREAM:
			gpu_drv.cuStreamDestroy((CUstream) k->p);
			break;
		case KEPT_EVENT:
			gpu_drv.cuEventDestroy((CUevent) k->p);
			break;
	}
}

/*
 * gagg_kept_put: block p of n bytes kept for device dev's next run (the
 * device's context current), in place of the device's oldest kept blocks
 * where there is no room; false when it cannot be kept (the caller frees it)
 */
static bool
gagg_kept_put(uint32_t dev, GaggKeptKind kind, size_t n, uintptr_t p)
{
	GaggKept	evict[GAGG_KEPT];
	int			n_evict = 0;
	bool		kept = false;

	if (kind == KEPT_DEV && n > GAGG_KEPT_BYTES)
		return false;
	pthread_mutex_lock(&gagg_kept.lock);
	for (;;)
	{
		size_t		dev_bytes = 0;
		int			slot = -1,
					oldest = -1;

		for (int i = 0; i < GAGG_KEPT; i++)
		{
			GaggKept   *k = &gagg_kept.blocks[i];

			if (k->p == 0)
				slot = slot < 0 ? i : slot;
			else if (k->dev == dev)
			{
				dev_bytes += k->kind == KEPT_DEV ? k->n : 0;
				if (oldest < 0 || k->used < gagg_kept.blocks[oldest].used)
					oldest = i;
			}
		}
		if (slot >= 0 && (kind != KEPT_DEV || dev_bytes + n <= GAGG_KEPT_BYTES))
		{
			gagg_kept.blocks[slot] = (GaggKept) {dev, kind, n, p, ++gagg_kept.clock};
			kept = true;
			break;
		}
		if (oldest < 0)
			break;				/* the other devices' blocks fill it */
		evict[n_evict++] = gagg_kept.blocks[oldest];
		gagg_kept.blocks[oldest].p = 0;
	}
	pthread_mutex_unlock(&gagg_kept.lock);
	for (int i = 0; i < n_evict; i++)
		gagg_kept_free(&evict[i]);
	return kept;
}

/*
 * gagg_kept_release: frees the device blocks kept for device dev (its
 * context current), and with all its pinned blocks, streams and events
 * too; returns whether there were any
 */
static bool
gagg_kept_release(uint32_t dev, bool all)
{
	GaggKept	drop[GAGG_KEPT];
	int			n = 0;

	pthread_mutex_lock(&gagg_kept.lock);
	for (int i = 0; i < GAGG_KEPT; i++)
	{
		GaggKept   *k = &gagg_kept.blocks[i];

		if (k->p != 0 && k->dev == dev && (all || k->kind == KEPT_DEV))
		{
			drop[n++] = *k;
			k->p = 0;
		}
	}
	pthread_mutex_unlock(&gagg_kept.lock);
	for (int i = 0; i < n; i++)
		gagg_kept_free(&drop[i]);
	return n > 0;
}

/*
 * gpu_agg_release_kept: frees the device blocks the runs keep for device
 * dev (its context current), as an allocation that finds the device full
 * does first (gagg_dev_alloc); whether there were any
 */
bool
gpu_agg_release_kept(uint32_t dev)
{
	return gagg_kept_release(dev, false);
}

/*
 * gagg_kept_drop: frees all that the runs keep for device dev (its context
 * current): blocks, streams and events
 */
void
gagg_kept_drop(uint32_t dev)
{
	(void) gagg_kept_release(dev, true);
}

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

	if ((*p = (CUdeviceptr) gagg_kept_take(g->dev, KEPT_DEV, n)) != 0)
	{
		gagg_account(g, (int64_t) n);
		return 0;
	}
	while ((rc = gpu_drv.cuMemAlloc(p, n)) == CUDA_ERROR_OUT_OF_MEMORY &&
		   (gagg_kept_release(g->dev, false) || gpu_cache_shrink(g->dev, n) > 0))
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

/*
 * gagg_dev_keep: as gagg_dev_free, but the block is kept for the next run
 * on the device (see GAGG_KEPT) when there is room.  Only for blocks that
 * no queued work of the run can still use: its streams are idle.
 */
void
gagg_dev_keep(GaggRun *g, CUdeviceptr *p, size_t n)
{
	if (*p != 0 && gagg_kept_put(g->dev, KEPT_DEV, n, (uintptr_t) *p))
	{
		gagg_account(g, -(int64_t) n);
		*p = 0;
	}
	gagg_dev_free(g, p, n);
}

/* gagg_host_keep: gagg_dev_keep for a pinned host block of gagg_host_alloc */
void
gagg_host_keep(GaggRun *g, void **p, size_t n)
{
	if (*p != NULL && gagg_kept_put(g->dev, KEPT_HOST, n, (uintptr_t) *p))
	{
		gagg_account(g, -(int64_t) n);
		*p = NULL;
	}
	gagg_host_free(g, p, n);
}

int
gagg_host_alloc(GaggRun *g, void **p, size_t n, const char *what)
{
	CUresult	rc;

	if ((*p = (void *) gagg_kept_take(g->dev, KEPT_HOST, n)) != NULL)
	{
		gagg_account(g, (int64_t) n);
		return 0;
	}
	rc = gpu_drv.cuMemAllocHost(p, n);

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
 * gagg_handle_create: a new stream (non-blocking) or event (with timing) of
 * kind in *h, for the current context: what runs keep and the start makes
 */
static CUresult
gagg_handle_create(GaggKeptKind kind, uintptr_t *h)
{
	CUstream	s = NULL;
	CUevent		e = NULL;
	CUresult	rc;

	if (kind == KEPT_STREAM)
		rc = gpu_drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING);
	else
		rc = gpu_drv.cuEventCreate(&e, CU_EVENT_DEFAULT);
	*h = kind == KEPT_STREAM ? (uintptr_t) s : (uintptr_t) e;
	return rc;
}

/*
 * a kept stream or event (kind) of the run's device (its context current),
 * else a new one (a non-blocking stream, an event with timing); *rc -1 with
 * the error set when none (0 returned)
 */
static uintptr_t
gagg_handle_get(GaggRun *g, GaggKeptKind kind, int *rc)
{
	uintptr_t	h = gagg_kept_take(g->dev, kind, 0);

	*rc = 0;
	if (h != 0)
		return h;
	*rc = gagg_cuda(g, GAGG_RETRY(g, gagg_handle_create(kind, &h)),
					kind == KEPT_STREAM ? "cuStreamCreate" : "cuEventCreate");
	return *rc == 0 ? h : 0;
}

/* an idle stream or event of gagg_handle_get kept for the next run, or destroyed; 0 */
static uintptr_t
gagg_handle_keep(GaggRun *g, GaggKeptKind kind, uintptr_t h)
{
	GaggKept	k = {g->dev, kind, 0, h, 0};

	if (h != 0 && !gagg_kept_put(g->dev, kind, 0, h))
		gagg_kept_free(&k);
	return 0;
}

/* gagg_stream_get: *s a stream of the run's device, kept or new (gagg_handle_get) */
int
gagg_stream_get(GaggRun *g, CUstream *s)
{
	int			rc;

	*s = (CUstream) gagg_handle_get(g, KEPT_STREAM, &rc);
	return rc;
}

/* gagg_stream_keep: an idle stream of gagg_stream_get kept for the next run, or destroyed */
void
gagg_stream_keep(GaggRun *g, CUstream *s)
{
	*s = (CUstream) gagg_handle_keep(g, KEPT_STREAM, (uintptr_t) *s);
}

/* gagg_event_get: *e an event of the run's device, kept or new */
int
gagg_event_get(GaggRun *g, CUevent *e)
{
	int			rc;

	*e = (CUevent) gagg_handle_get(g, KEPT_EVENT, &rc);
	return rc;
}

/* gagg_event_keep: an event that no queued work records, kept for the next run or destroyed */
void
gagg_event_keep(GaggRun *g, CUevent *e)
{
	*e = (CUevent) gagg_handle_keep(g, KEPT_EVENT, (uintptr_t) *e);
}

/*
 * gagg_batch_buffer: a pinned buffer of at least *cap bytes for a slot,
 * from the pool when one there is big enough (*cap: its size)
 */
int
gagg_batch_buffer(GaggRun *g, uint8_t **p, size_t *cap)
{
	int			best = -1;

	/* a unit's buffer (or a request of that order): a kept one of the device */
	if (*cap <= gagg_units.bytes && *cap > gagg_units.bytes / 2)
	{
		void	   *u = NULL;

		*cap = gagg_units.bytes;
		pthread_mutex_lock(&gagg_units.lock);
		for (int i = 0; i < gagg_units.n && u == NULL; i++)
			if (gagg_units.buf[i].dev == g->dev)
			{
				u = gagg_units.buf[i].p;
				gagg_units.buf[i] = gagg_units.buf[--gagg_units.n];
			}
		pthread_mutex_unlock(&gagg_units.lock);
		if (u != NULL)
		{
			*p = u;
			g->mem_held += *cap;
			return 0;
		}
		return gagg_host_alloc(g, (void **) p, *cap, "a heap unit's buffer");
	}

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
 * gagg_prewarm_kept: device dev's kept blocks (its context current) filled
 * with what every aggregation run's setup takes at a fixed size: the
 * slots' streams, events and launch statuses, the cancel flag and its
 * stream, the aggregates and the table, so that the first run after the
 * service starts takes them as later runs do instead of asking the driver
 * (a run's setup took 2.3-4.3 ms without kept blocks, 0.15-0.24 ms with
 * them: the comment above gagg_kept).  What cannot be had is left to the
 * first run.
 */
void
gagg_prewarm_kept(uint32_t dev)
{
	static const struct
	{
		GaggKeptKind kind;
		size_t		n;
		int			count;
	}			fixed[] = {
		{KEPT_STREAM, 0, GAGG_SLOTS + 1},
		{KEPT_EVENT, 0, 2 * GAGG_SLOTS},
		{KEPT_HOST, sizeof(XpuGaggLaunch), GAGG_SLOTS},
		{KEPT_DEV, sizeof(XpuGaggLaunch), GAGG_SLOTS},
		{KEPT_HOST, sizeof(int32_t), 1},
		{KEPT_DEV, sizeof(int32_t), 1},
		{KEPT_DEV, sizeof(XpuGaggSpec), 1},
		{KEPT_DEV, sizeof(XpuGaggTable), 1},
	};

	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		for (int c = 0; c < fixed[i].count; c++)
		{
			GaggKept	k = {dev, fixed[i].kind, fixed[i].n, 0, 0};
			CUresult	rc;

			if (k.kind == KEPT_HOST)
				rc = gpu_drv.cuMemAllocHost((void **) &k.p, k.n);
			else if (k.kind == KEPT_DEV)
				rc = gpu_drv.cuMemAlloc((CUdeviceptr *) &k.p, k.n);
			else
				rc = gagg_handle_create(k.kind, &k.p);
			if (rc != CUDA_SUCCESS || k.p == 0)
				return;
			if (!gagg_kept_put(dev, k.kind, k.n, k.p))
			{
				gagg_kept_free(&k);
				return;
			}
		}
}

/*
 * gpu_agg_prewarm: pins unit_buffers buffers of unit_bytes per device for
 * heap units (gagg_units, where the device keeps a GPU column cache) and
 * puts GAGG_SLOTS pinned buffers per device in the pool,
 * each large enough for any launch of several batches (GAGG_LAUNCH_BYTES
 * and the slack gagg_slot_reserve adds), so that the first run after the
 * service starts does not pin its slots' memory: pinning two fresh 320 MB
 * buffers took about 90 ms of a first run on the H200 host (its I/O time
 * 89 ms against 26 ms for the same run later; bench/results/README.md).
 * Done before the service serves runs; a buffer that cannot be had is
 * left to the first run that needs it.  The GPU code is loaded into each
 * device's context here too (with all its kernels: gpu.c), which took
 * most of the 18 ms that the first run's setup took on the H200 host;
 * a fatbin that cannot be loaded is tried again, and reported, by the
 * first run.  So are the fixed-size blocks, streams and events of a run's
 * setup (gagg_prewarm_kept).
 */
void
gpu_agg_prewarm(const ServiceGpu *gpu, int unit_buffers, size_t unit_bytes)
{
	size_t		cap = align_up(GAGG_LAUNCH_BYTES + GAGG_LAUNCH_BYTES / 4 + ((size_t) 16 << 20),
							   (size_t) 1 << 20);

	if (unit_buffers > 0 && gpu->n_devices > 0 &&
		(gagg_units.buf = calloc((size_t) unit_buffers * gpu->n_devices,
								 sizeof(*gagg_units.buf))) != NULL)
	{
		gagg_units.bytes = unit_bytes;
		gagg_units.cap = unit_buffers * (int) gpu->n_devices;
	}

	for (uint32_t d = 0; d < gpu->n_devices; d++)
	{
		CUcontext	popped;

		CUmodule	mod;
		char		msg[256];

		if (gpu_drv.cuCtxPushCurrent(gpu_device_context(d)) != CUDA_SUCCESS)
			continue;
		(void) gpu_device_module(d, &mod, msg, sizeof(msg));
		gagg_prewarm_kept(d);
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
		/* the heap units' (none where the device keeps no GPU column cache) */
		for (int k = 0; gagg_units.cap > 0 && gpu_cache_capacity(d) > 0 && k < unit_buffers; k++)
		{
			void	   *p = NULL;

			if (gpu_drv.cuMemAllocHost(&p, gagg_units.bytes) != CUDA_SUCCESS)
				break;
			gagg_units.buf[gagg_units.n].dev = d;
			gagg_units.buf[gagg_units.n++].p = p;
			GAGG_ADD(svc_counters.memory_in_use, (uint64_t) gagg_units.bytes);
		}
		gpu_drv.cuCtxPopCurrent(&popped);
	}
}

/*
 * gagg_batch_release: a slot's buffer back to the pool (in place of a
 * smaller one of the device when it is full), else freed
 */
void
gagg_batch_release(GaggRun *g, uint8_t **p, size_t cap)
{
	int			i;
	void	   *smaller = NULL;
	size_t		smaller_cap = 0;

	if (*p == NULL)
		return;
	if (cap == gagg_units.bytes)
	{
		pthread_mutex_lock(&gagg_units.lock);
		if (gagg_units.n < gagg_units.cap)
		{
			gagg_units.buf[gagg_units.n].dev = g->dev;
			gagg_units.buf[gagg_units.n++].p = *p;
			g->mem_held -= cap;
			*p = NULL;
		}
		pthread_mutex_unlock(&gagg_units.lock);
		gagg_host_free(g, (void **) p, cap);
		return;
	}
	pthread_mutex_lock(&gagg_pool.lock);
	for (i = 0; i < GAGG_POOL && gagg_pool.buf[i].p != NULL; i++)
		;
	/*
	 * A full pool: the buffer takes the place of the device's smallest one
	 * that is smaller, which is freed instead.  Otherwise the small buffers
	 * of concurrent small runs (a GpuJoin's GpuScans of its dimensions
	 * beside a read-ahead, say) could fill the pool for good, and every
	 * later run over a large file would pin its launch buffers afresh
	 * (about 90 ms for two of 320 MB on the H200 host) and free them at its
	 * end (bench/results/README.md: the slow first runs after queries over
	 * Arrow dimensions look like that).
	 */
	if (i == GAGG_POOL)
		for (int k = 0; k < GAGG_POOL; k++)
			if (gagg_pool.buf[k].dev == g->dev && gagg_pool.buf[k].cap < cap &&
				(i == GAGG_POOL || gagg_pool.buf[k].cap < gagg_pool.buf[i].cap))
				i = k;
	if (i < GAGG_POOL)
	{
		smaller = gagg_pool.buf[i].p;
		smaller_cap = gagg_pool.buf[i].cap;
		gagg_pool.buf[i].dev = g->dev;
		gagg_pool.buf[i].p = *p;
		gagg_pool.buf[i].cap = cap;
		g->mem_held -= cap;
		*p = NULL;
	}
	pthread_mutex_unlock(&gagg_pool.lock);
	if (smaller != NULL)
	{
		gpu_drv.cuMemFreeHost(smaller);
		GAGG_ADD(svc_counters.memory_in_use, (uint64_t) -(int64_t) smaller_cap);
	}
	gagg_host_free(g, (void **) p, cap);
}
