/*-------------------------------------------------------------------------
 *
 * data_paths.c
 *		The raw limits of moving a file's bytes to GPU memory, and the
 *		candidate ways an Arrow file's bytes can take, side by side in one
 *		run (issue 30 items 1-3; a benchmark tool, not part of pg_warp).
 *
 *	   data_paths FILE [-b BYTES] [-t THREADS] [-s SLICE_MIB] [-R REGION_MIB]
 *	                   [-S STREAMS] [-D DEVICE_MIB] [-g GPU] [-w WAY,WAY,...]
 *	                   [-T WAY_SECONDS] [-B COPIES]
 *	   data_paths -E FILE
 *
 * The first BYTES of FILE (default: all of it; K, M, G suffixes are powers
 * of 1024; rounded down to 4 KiB) move by each way, in order:
 *
 *	 odirect          the disk's raw rate: THREADS threads read SLICE_MIB
 *	                  slices with O_DIRECT into aligned host buffers; the file
 *	                  evicted from the page cache first
 *	 cold-pread       the file evicted first, then THREADS threads pread slices
 *	                  (through the page cache, from the disk) into pinned
 *	                  buffers and copy each to the GPU (as pread-pinned);
 *	                  without a GPU into ordinary buffers
 *	 pread            the file in the page cache: THREADS threads pread slices
 *	                  into ordinary host buffers (the page cache's read rate)
 *	 pinned           pinned host memory to GPU: STREAMS threads, each with its
 *	                  stream, cuMemcpyHtoDAsync of slices (the bus)
 *	 pageable         the same from ordinary (pageable) host memory
 *	 pread-pinned     what the service does today: the file in the page cache,
 *	                  THREADS threads pread slices into pinned buffers (two per
 *	                  thread), each followed by cuMemcpyHtoDAsync on the
 *	                  thread's stream; end to end, bytes in GPU memory
 *	 map              the file in the page cache: THREADS threads memcpy slices
 *	                  from a read-only mapping of it, made for the way (its
 *	                  page faults timed), into ordinary host buffers
 *	 map-pinned       as pread-pinned, the slices copied from that mapping
 *	                  with memcpy instead of pread
 *	 map-nt           as map, each slice copied with non-temporal (streaming)
 *	                  AVX2 stores, which write the destination's lines without
 *	                  reading them first (unavailable without AVX2)
 *	 map-nt-pinned    as map-pinned, the slices copied that way
 *	 pack             the file in the page cache: THREADS threads pread each
 *	                  slice in frames of 256 KiB into a buffer of their own,
 *	                  pack each frame as the service could pack an integer column
 *	                  (pack_frames.c: the file's bytes taken as int32, each
 *	                  frame's distances from its smallest value in 1, 2 or 3
 *	                  bytes, as they are where that gains nothing) into
 *	                  ordinary host buffers; the packed share in the JSON
 *	 pack-pinned      as pack into pinned buffers, each slice's packed bytes
 *	                  copied to the GPU (not unpacked there: a kernel that
 *	                  would restore them is not in this figure); the bytes
 *	                  in the rate are the file's, not the packed ones
 *	 map-pack         as pack, each frame packed straight from a read-only
 *	                  mapping of the file (as map) instead of a pread copy
 *	 map-pack-pinned  the same into pinned buffers, copied to the GPU
 *	 register         the file mapped read-only (MAP_SHARED), then THREADS
 *	                  threads cuMemHostRegister(READ_ONLY) REGION_MIB regions
 *	                  of it in parallel: the registration rate (the pages in
 *	                  the page cache); the later unregistration is timed too
 *	 registered-copy  copies from the registered mapping to the GPU (STREAMS
 *	                  threads, slices): a mapping the service keeps registered
 *	 register-copy    the pipelined first touch: THREADS threads each register
 *	                  a region and copy it, then the next
 *	 cufile           libcufile (dlopen: $CUFILE_LIB, else libcufile.so.0):
 *	                  THREADS threads cuFileRead slices of an O_DIRECT handle
 *	                  straight into GPU memory; the file evicted first; says
 *	                  whether GPUDirect Storage (nvidia-fs) or compatibility
 *	                  mode was used (see cufile_mode)
 *
 * -B COPIES: the copy ways (pinned, pageable, registered-copy) queue their
 * slices COPIES at a time with one cuMemcpyBatchAsync call each instead of a
 * cuMemcpyHtoDAsync per slice (default 1: one call per slice); the driver
 * must have cuMemcpyBatchAsync (CUDA 13's ABI), else those ways fail.
 *
 * SLICE_MIB, REGION_MIB and DEVICE_MIB are mebibytes, or sizes with a K, M or
 * G suffix (-s 384K: the size of one column of a record batch of pg2arrow's).
 * Every GPU copy goes to one device buffer of DEVICE_MIB (default 4096, at
 * most BYTES) that offsets wrap around.  A way's time runs from the moment
 * its threads (buffers, streams set up) start to the end of its last copy.
 * Warm ways read the file once first when it is not all in the page cache;
 * every way says the share of BYTES in the page cache before it (mincore) and
 * whether an eviction held (posix_fadvise(POSIX_FADV_DONTNEED): without root,
 * for clean pages no one maps or has pinned).
 *
 * -E: only evicts FILE from the page cache (as the cold ways do) and prints
 * {"file", "bytes", "resident_before", "resident_after"} (shares of its
 * bytes in the page cache; -1 when mincore fails), for bench/data_path_bench.py.
 *
 * Output: one JSON object on standard output (per way: status ok /
 * unavailable / failed, seconds, GB/s with GB = 10^9 bytes, the page cache
 * state, details), readable lines on standard error.  -w picks ways (default
 * all).  A way running longer than WAY_SECONDS (default 300) is reported as
 * failed and ends the run (the JSON so far printed, exit status 1).  The
 * CUDA driver and libcufile are loaded with dlopen, so this builds with
 * plain cc (`make -C bench data_paths`); on a machine without a GPU, test/gpu's
 * stand-in driver runs the GPU ways' code (not their rates):
 *	 make -C test/gpu bin/fake/libcuda.so.1
 *	 LD_LIBRARY_PATH=test/gpu/bin/fake bench/data_paths FILE -D 256
 *
 * Exit status: 0 measured; 3 no GPU here (no libcuda.so.1, the stub, no
 * device) while a GPU way was asked for: the ways without a GPU still run and
 * the JSON is printed; 1 a way failed; 2 bad arguments.  A missing libcufile
 * is no failure: the way is reported as unavailable.
 *
 *-------------------------------------------------------------------------
 */
#define _GNU_SOURCE				/* O_DIRECT */
#include <dlfcn.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <immintrin.h>

#include "cuda_driver.h"
#include "cufile_api.h"
#include "pack_frames.h"

#define EXIT_FAILED		1
#define EXIT_USAGE		2
#define EXIT_NO_GPU		3

#define MIB				((size_t) 1 << 20)
#define PAGE			((size_t) 4096)
#define MAX_THREADS		256

/* driver types and flags beyond cuda_driver.h's (values as in cuda.h) */
typedef struct CUevent_st *CUevent;
#define CU_STREAM_NON_BLOCKING		0x1
#define CU_EVENT_DISABLE_TIMING		0x2

/* ---------------------------------------------------------------- the ways */

enum Way
{
	W_ODIRECT, W_COLD_PREAD, W_PREAD, W_PINNED, W_PAGEABLE, W_PREAD_PINNED,
	W_MAP, W_MAP_PINNED, W_MAP_NT, W_MAP_NT_PINNED, W_PACK, W_PACK_PINNED, W_MAP_PACK, W_MAP_PACK_PINNED, W_REGISTER,
	W_REGISTERED_COPY, W_REGISTER_COPY, W_CUFILE, N_WAYS
};

static const char *way_names[N_WAYS] = {
	"odirect", "cold-pread", "pread", "pinned", "pageable", "pread-pinned",
	"map", "map-pinned", "map-nt", "map-nt-pinned", "pack", "pack-pinned", "map-pack", "map-pack-pinned", "register",
	"registered-copy", "register-copy", "cufile"
};

/* ways that need the GPU (cold-pread runs without one, into host buffers) */
static const bool way_needs_gpu[N_WAYS] = {
	false, false, false, true, true, true, false, true, false, true, false, true, false, true, true,
	true, true, true
};

typedef struct WayResult
{
	bool		asked;
	const char *status;			/* "ok", "unavailable", "failed"; NULL: not run */
	char		why[1200];
	double		seconds;
	double		cpu_seconds;	/* the process's CPU time over its timed threads; < 0 unknown */
	size_t		bytes;
	double		resident_before;	/* share of BYTES in the page cache, -1 unknown */
	const char *page_cache;		/* what the way did to the page cache */
	const char *target;			/* where the bytes went */
	char		detail[1024];	/* more JSON members, already formatted (",\"k\": v") */
} WayResult;

static WayResult results[N_WAYS];

/* ---------------------------------------------------------------- options, file */

static const char *path;
static int	file_fd = -1;
static size_t file_size;
static size_t nbytes;			/* the bytes every way moves */
static int	n_threads = 8;
static int	n_streams = 4;
static size_t slice = 8 * MIB;
static size_t region = 64 * MIB;
static size_t dev_bytes = 4096 * MIB;
static int	gpu_ordinal = 0;
static int	way_limit_s = 300;	/* -T: a way running longer ends the program */
static int	copy_batch = 1;		/* -B: slices per cuMemcpyBatchAsync call (1: none) */
static volatile int current_way = -1;
static volatile double way_started;

/* ---------------------------------------------------------------- the driver */

/*
 * The driver's entry points this program calls: the field, the exported name
 * (the _v2 ABI where the driver has more than one), the parameters.
 */
#define DRIVER_CALLS(X) \
	X(cuInit, "cuInit", (unsigned int)) \
	X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **)) \
	X(cuDeviceGetCount, "cuDeviceGetCount", (int *)) \
	X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int)) \
	X(cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice)) \
	X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice)) \
	X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", (CUcontext)) \
	X(cuMemAllocHost, "cuMemAllocHost_v2", (void **, size_t)) \
	X(cuMemFreeHost, "cuMemFreeHost", (void *)) \
	X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t)) \
	X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream)) \
	X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned int)) \
	X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream)) \
	X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream)) \
	X(cuEventCreate, "cuEventCreate", (CUevent *, unsigned int)) \
	X(cuEventRecord, "cuEventRecord", (CUevent, CUstream)) \
	X(cuEventSynchronize, "cuEventSynchronize", (CUevent)) \
	X(cuEventDestroy, "cuEventDestroy_v2", (CUevent)) \
	X(cuMemHostRegister, "cuMemHostRegister_v2", (void *, size_t, unsigned int)) \
	X(cuMemHostUnregister, "cuMemHostUnregister", (void *))

#define DRIVER_FIELD(field, name, params) CUresult (*field) params;
#define DRIVER_SYMBOL(field, name, params) {name, offsetof(Driver, field)},

typedef struct Driver
{
	DRIVER_CALLS(DRIVER_FIELD)
} Driver;

static const struct
{
	const char *name;
	size_t		offset;
}			driver_symbols[] = {DRIVER_CALLS(DRIVER_SYMBOL)};

static Driver drv;

/* optional: CUDA 13's batched copies (-B) */
static CUresult (*drv_batch) (CUdeviceptr *, CUdeviceptr *, size_t *, size_t, CUmemcpyAttributes *,
							  size_t *, size_t, CUstream);
static bool have_gpu;
static char no_gpu_why[256];
static char device_name[256];
static CUcontext ctx;
static CUdeviceptr dev_buf;

static const char *
cu_error(CUresult rc)
{
	const char *name = NULL;

	if (drv.cuGetErrorName == NULL || drv.cuGetErrorName(rc, &name) != CUDA_SUCCESS || !name)
		return "CUDA error";
	return name;
}

/*
 * open_gpu
 *		Loads the driver, takes GPU gpu_ordinal's primary context and the
 *		device buffer; have_gpu says whether it worked, no_gpu_why why not.
 *		Returns false only when an installed driver fails (exit status 1).
 */
static bool
open_gpu(void)
{
	void	   *h = dlopen(CUDA_LIBRARY_NAME, RTLD_NOW | RTLD_LOCAL);
	CUdevice	dev;
	CUresult	rc;
	int			count = 0;

	if (h == NULL)
	{
		snprintf(no_gpu_why, sizeof(no_gpu_why), "cannot load %s: %s", CUDA_LIBRARY_NAME,
				 dlerror());
		return true;
	}
	for (size_t i = 0; i < sizeof(driver_symbols) / sizeof(driver_symbols[0]); i++)
	{
		void	   *addr = dlsym(h, driver_symbols[i].name);

		if (addr == NULL)
		{
			snprintf(no_gpu_why, sizeof(no_gpu_why), "%s has no symbol %s",
					 CUDA_LIBRARY_NAME, driver_symbols[i].name);
			return false;
		}
		memcpy((char *) &drv + driver_symbols[i].offset, &addr, sizeof(addr));
	}
	*(void **) &drv_batch = dlsym(h, "cuMemcpyBatchAsync_v2");
	rc = drv.cuInit(0);
	if (rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY)
	{
		snprintf(no_gpu_why, sizeof(no_gpu_why), "cuInit() returned %s",
				 rc == CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "the toolkit's stub library");
		return true;
	}
	if (rc != CUDA_SUCCESS || (rc = drv.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
	{
		snprintf(no_gpu_why, sizeof(no_gpu_why), "cuInit/cuDeviceGetCount: %s", cu_error(rc));
		return false;
	}
	if (gpu_ordinal >= count)
	{
		snprintf(no_gpu_why, sizeof(no_gpu_why), "no GPU %d (%d visible)", gpu_ordinal, count);
		return true;
	}
	if ((rc = drv.cuDeviceGet(&dev, gpu_ordinal)) != CUDA_SUCCESS ||
		(rc = drv.cuDeviceGetName(device_name, sizeof(device_name), dev)) != CUDA_SUCCESS ||
		(rc = drv.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS ||
		(rc = drv.cuCtxPushCurrent(ctx)) != CUDA_SUCCESS ||
		(rc = drv.cuMemAlloc(&dev_buf, dev_bytes)) != CUDA_SUCCESS)
	{
		snprintf(no_gpu_why, sizeof(no_gpu_why), "GPU %d's context or %zu MiB of its memory: %s",
				 gpu_ordinal, dev_bytes / MIB, cu_error(rc));
		return false;
	}
	have_gpu = true;
	return true;
}

/* the device address that file offset off (a multiple of the unit) lands on */
static CUdeviceptr
dev_at(size_t off)
{
	return dev_buf + off % dev_bytes;
}

/* ---------------------------------------------------------------- threads */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* the process's CPU time, user and system, all threads; -1 if unknown */
static double
cpu_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return -1;
	return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* one run of a way's threads: the pieces they claim, the first error */
typedef struct Run
{
	size_t		unit;			/* bytes per claimed piece */
	int64_t		n_pieces;
	int64_t		next;			/* atomic */
	pthread_barrier_t start;
	pthread_mutex_t lock;
	char		error[400];		/* the first error; "" none */
	int			err_flag;		/* atomic: stop claiming */
	void	   *arg;			/* the way's own state */
	double		cpu_seconds;	/* user + system CPU time of the process over the timed part */
} Run;

static Run	run;

static void
run_fail(const char *fmt, const char *what, long code)
{
	pthread_mutex_lock(&run.lock);
	if (run.error[0] == '\0')
		snprintf(run.error, sizeof(run.error), fmt, what, code);
	pthread_mutex_unlock(&run.lock);
	__atomic_store_n(&run.err_flag, 1, __ATOMIC_RELAXED);
}

static void
run_cu_fail(const char *what, CUresult rc)
{
	char		buf[200];

	snprintf(buf, sizeof(buf), "%s: %s", what, cu_error(rc));
	run_fail("%s (%ld)", buf, rc);
}

/* the next piece's offset and length; false when none is left (or an error) */
static bool
claim(size_t *off, size_t *len)
{
	int64_t		p;

	if (__atomic_load_n(&run.err_flag, __ATOMIC_RELAXED))
		return false;
	p = __atomic_fetch_add(&run.next, 1, __ATOMIC_RELAXED);
	if (p >= run.n_pieces)
		return false;
	*off = (size_t) p * run.unit;
	*len = nbytes - *off < run.unit ? nbytes - *off : run.unit;
	return true;
}

/* every thread, after its setup: the start line (the main thread times from it) */
static void
ready(void)
{
	pthread_barrier_wait(&run.start);
}

static bool
set_context(void)
{
	CUresult	rc = drv.cuCtxPushCurrent(ctx);

	if (rc != CUDA_SUCCESS)
		run_cu_fail("cuCtxPushCurrent", rc);
	return rc == CUDA_SUCCESS;
}

/*
 * run_threads
 *		Runs fn on threads threads over nbytes in pieces of unit bytes;
 *		returns the seconds from the start line to the last thread's end, or
 *		-1 with the error in run.error.
 */
static double
run_threads(void *(*fn) (void *), int threads, size_t unit, void *arg)
{
	pthread_t	tids[MAX_THREADS];
	double		t0,
				cpu0;

	run.unit = unit;
	run.n_pieces = (int64_t) ((nbytes + unit - 1) / unit);
	run.next = 0;
	run.error[0] = '\0';
	run.err_flag = 0;
	run.arg = arg;
	pthread_barrier_init(&run.start, NULL, threads + 1);
	for (int i = 0; i < threads; i++)
		if (pthread_create(&tids[i], NULL, fn, NULL) != 0)
		{
			fprintf(stderr, "data_paths: pthread_create failed\n");
			exit(EXIT_FAILED);
		}
	pthread_barrier_wait(&run.start);
	t0 = now();
	cpu0 = cpu_now();
	for (int i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t0 = now() - t0;
	run.cpu_seconds = cpu0 < 0 ? -1 : cpu_now() - cpu0;
	pthread_barrier_destroy(&run.start);
	return run.error[0] ? -1 : t0;
}

/* queues a copy of len bytes to the GPU on stream; false (and the run's error) if refused */
static bool
copy_async(CUdeviceptr dst, const void *src, size_t len, CUstream stream)
{
	CUresult	rc;

	if (dst < dev_buf || dst + len > dev_buf + dev_bytes)
	{
		run_fail("%s (%ld)", "a copy past the end of the device buffer (a bug)", (long) len);
		return false;
	}
	rc = drv.cuMemcpyHtoDAsync(dst, src, len, stream);
	if (rc != CUDA_SUCCESS)
		run_cu_fail("cuMemcpyHtoDAsync", rc);
	return rc == CUDA_SUCCESS;
}

/* waits for a thread's stream (its copies done) and destroys it */
static void
end_stream(CUstream stream)
{
	CUresult	rc;

	if (stream == NULL)
		return;
	if ((rc = drv.cuStreamSynchronize(stream)) != CUDA_SUCCESS)
		run_cu_fail("cuStreamSynchronize", rc);
	drv.cuStreamDestroy(stream);
}

/* reads len bytes at off of fd into buf, whole; false (and the run's error) if not */
static bool
read_all(int fd, void *buf, size_t len, size_t off)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		r = pread(fd, (char *) buf + done, len - done, (off_t) (off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
		{
			run_fail("pread: %s (%ld)", r < 0 ? strerror(errno) : "end of file", r < 0 ? errno : 0);
			return false;
		}
		done += r;
	}
	return true;
}

/* ---------------------------------------------------------------- page cache */

/* the share of the first nbytes of the file in the page cache (mincore), -1 unknown */
static double
resident_share(void)
{
	size_t		pages = (nbytes + PAGE - 1) / PAGE,
				in = 0;
	unsigned char *vec;
	void	   *m;

	if (nbytes == 0)
		return 1.0;
	m = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, file_fd, 0);
	if (m == MAP_FAILED)
		return -1;
	vec = malloc(pages);
	if (vec == NULL || mincore(m, nbytes, vec) != 0)
	{
		free(vec);
		munmap(m, nbytes);
		return -1;
	}
	for (size_t i = 0; i < pages; i++)
		in += vec[i] & 1;
	free(vec);
	munmap(m, nbytes);
	return (double) in / pages;
}

/* drops the file's clean pages from the page cache; the share left */
static double
evict(void)
{
	fdatasync(file_fd);			/* fails harmlessly on a read-only descriptor */
	posix_fadvise(file_fd, 0, 0, POSIX_FADV_DONTNEED);
	return resident_share();
}

static const char *
evicted_text(double left)
{
	if (left < 0)
		return "evicted first (posix_fadvise DONTNEED); mincore failed, not checked";
	if (left <= 0.01)
		return "evicted first (posix_fadvise DONTNEED), held: not in the page cache";
	return "evicted first (posix_fadvise DONTNEED), did NOT hold: pages still cached "
		"(mapped or pinned elsewhere?)";
}

/* ---------------------------------------------------------------- odirect */

static int	direct_fd = -1;
static int	direct_errno;		/* why open(O_DIRECT) failed */

static void *
odirect_worker(void *unused)
{
	void	   *buf = NULL;
	size_t		off,
				len;

	(void) unused;
	if (posix_memalign(&buf, PAGE, slice) != 0)
		run_fail("posix_memalign: %s (%ld)", "out of memory", 0);
	ready();
	while (buf && claim(&off, &len))
	{
		/* O_DIRECT: lengths stay multiples of 4 KiB (nbytes is) */
		if (!read_all(direct_fd, buf, len, off))
			break;
	}
	free(buf);
	return NULL;
}

/* ---------------------------------------------------------------- pread ways */

/* whether the pread worker copies to the GPU (cold-pread with a GPU, pread-pinned, map-pinned) */
static bool pread_to_gpu;
/* map, map-pinned: the mapping the pread worker copies from instead of pread */
static const char *pread_map;

/* map-nt, map-nt-pinned: slices copied from pread_map with streaming stores (copy_nt) */
static bool copy_streaming;

/*
 * copy_nt: memcpy with non-temporal AVX2 stores for the 32-byte aligned part
 * of dst, so that the destination's cache lines are written without being
 * read first (a plain store reads each line it fills, one more pass over
 * memory, and leaves it in the cache); memcpy for the ends
 */
__attribute__((target("avx2")))
static void
copy_nt(void *dst, const void *src, size_t len)
{
	uint8_t    *d = dst;
	const uint8_t *s = src;
	size_t		head = (32 - ((uintptr_t) d & 31)) & 31;

	if (head > len)
		head = len;
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 128; len -= 128, d += 128, s += 128)
	{
		__m256i		a = _mm256_loadu_si256((const __m256i *) s);
		__m256i		b = _mm256_loadu_si256((const __m256i *) (s + 32));
		__m256i		c = _mm256_loadu_si256((const __m256i *) (s + 64));
		__m256i		e = _mm256_loadu_si256((const __m256i *) (s + 96));

		_mm256_stream_si256((__m256i *) d, a);
		_mm256_stream_si256((__m256i *) (d + 32), b);
		_mm256_stream_si256((__m256i *) (d + 64), c);
		_mm256_stream_si256((__m256i *) (d + 96), e);
	}
	memcpy(d, s, len);
	_mm_sfence();				/* the streamed lines visible before the copy is queued */
}

/* pack, pack-pinned: slices packed (fetch_packed); the bytes that came out of packing */
static bool pack_slices;
static size_t packed_bytes;		/* atomic */

/* the pread worker's read of one slice: pread, or memcpy from pread_map */
static bool
fetch(void *buf, size_t len, size_t off)
{
	if (pread_map == NULL)
		return read_all(file_fd, buf, len, off);
	if (copy_streaming)
		copy_nt(buf, pread_map + off, len);
	else
		memcpy(buf, pread_map + off, len);
	return true;
}

/*
 * fetch_packed: the slice read in frames into frame_buf (PACK_FRAME_VALUES
 * int32 values), each packed into buf or copied as it is; *out_len the bytes
 * in buf
 */
static bool
fetch_packed(void *buf, size_t len, size_t off, void *frame_buf, size_t *out_len)
{
	const size_t frame = PACK_FRAME_VALUES * sizeof(int32_t);
	size_t		at = 0;

	for (size_t done = 0; done < len; done += frame)
	{
		size_t		n = len - done < frame ? len - done : frame;
		int64_t		base;
		int			w = 0;

		const void *src = pread_map != NULL ? (const void *) (pread_map + off + done) : frame_buf;

		if (pread_map == NULL && !read_all(file_fd, frame_buf, n, off + done))
			return false;
		if (n % 4 == 0)
			w = pack_values(src, (uint32_t) (n / 4), 4, (uint8_t *) buf + at, &base);
		if (w == 0)
			memcpy((char *) buf + at, src, n);
		at += w == 0 ? n : (n / 4) * w;
		at = (at + 3) & ~(size_t) 3;
	}
	__atomic_fetch_add(&packed_bytes, at, __ATOMIC_RELAXED);
	*out_len = at;
	return true;
}

static void *
pread_worker(void *unused)
{
	void	   *buf[2] = {NULL, NULL};
	void	   *frame_buf = NULL;
	CUstream	stream = NULL;
	CUevent		done[2] = {NULL, NULL};
	bool		pending[2] = {false, false};
	bool		ok = true;
	size_t		off,
				len;
	int			b = 0;
	CUresult	rc;

	(void) unused;
	/* packing a mapping's frames in place needs no frame buffer */
	if (pack_slices && pread_map == NULL &&
		posix_memalign(&frame_buf, PAGE, PACK_FRAME_VALUES * sizeof(int32_t)) != 0)
	{
		run_fail("posix_memalign: %s (%ld)", "out of memory", 0);
		ok = false;
	}
	if (!ok)
		;
	else if (pread_to_gpu)
	{
		ok = set_context();
		for (int i = 0; ok && i < 2; i++)
		{
			if ((rc = drv.cuMemAllocHost(&buf[i], slice)) != CUDA_SUCCESS ||
				(rc = drv.cuEventCreate(&done[i], CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
			{
				run_cu_fail("cuMemAllocHost/cuEventCreate", rc);
				ok = false;
			}
		}
		if (ok && (rc = drv.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
		{
			run_cu_fail("cuStreamCreate", rc);
			ok = false;
		}
	}
	else if (posix_memalign(&buf[0], PAGE, slice) != 0)
	{
		run_fail("posix_memalign: %s (%ld)", "out of memory", 0);
		ok = false;
	}
	else
		memset(buf[0], 0, slice);	/* its pages faulted in before the start */
	ready();
	while (ok && claim(&off, &len))
	{
		size_t		out_len = len;

		if (!pread_to_gpu)
		{
			ok = pack_slices ? fetch_packed(buf[0], len, off, frame_buf, &out_len) :
				fetch(buf[0], len, off);
			continue;
		}
		/* double-buffered: wait for buffer b's last copy, fill it, copy it */
		if (pending[b] && (rc = drv.cuEventSynchronize(done[b])) != CUDA_SUCCESS)
		{
			run_cu_fail("cuEventSynchronize", rc);
			break;
		}
		if (pack_slices ? !fetch_packed(buf[b], len, off, frame_buf, &out_len) :
			!fetch(buf[b], len, off))
			break;
		if (!copy_async(dev_at(off), buf[b], out_len, stream))
			break;
		if ((rc = drv.cuEventRecord(done[b], stream)) != CUDA_SUCCESS)
		{
			run_cu_fail("cuEventRecord", rc);
			break;
		}
		pending[b] = true;
		b ^= 1;
	}
	if (pread_to_gpu)
	{
		end_stream(stream);
		for (int i = 0; i < 2; i++)
		{
			if (done[i])
				drv.cuEventDestroy(done[i]);
			if (buf[i])
				drv.cuMemFreeHost(buf[i]);
		}
	}
	else
		free(buf[0]);
	free(frame_buf);
	return NULL;
}

/* ---------------------------------------------------------------- copy ways */

/* the source of the copy ways: NULL a buffer per thread (pinned or not), else the mapping */
static const char *copy_map;
static bool copy_pinned;

/*
 * copy_batches: copy_worker's loop with -B: the slices claimed, copy_batch
 * at a time, each group queued with one cuMemcpyBatchAsync call
 */
static void
copy_batches(void *buf, CUstream stream)
{
	CUdeviceptr *dsts = calloc((size_t) copy_batch, sizeof(CUdeviceptr));
	CUdeviceptr *srcs = calloc((size_t) copy_batch, sizeof(CUdeviceptr));
	size_t	   *sizes = calloc((size_t) copy_batch, sizeof(size_t));
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM};
	size_t		attr_at = 0,
				off,
				len;
	bool		more = true;

	attr.srcLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
	attr.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
	attr.dstLocHint.id = gpu_ordinal;
	if (drv_batch == NULL)
		run_fail("%s (%ld)", "the driver has no cuMemcpyBatchAsync_v2", 0);
	else if (dsts == NULL || srcs == NULL || sizes == NULL)
		run_fail("malloc: %s (%ld)", "out of memory", 0);
	while (drv_batch != NULL && dsts != NULL && srcs != NULL && sizes != NULL && more)
	{
		size_t		n = 0;
		CUresult	rc;

		while (n < (size_t) copy_batch && (more = claim(&off, &len)))
		{
			dsts[n] = dev_at(off);
			if (dsts[n] < dev_buf || dsts[n] + len > dev_buf + dev_bytes)
			{
				run_fail("%s (%ld)", "a copy past the end of the device buffer (a bug)", (long) len);
				more = false;
				n = 0;
				break;
			}
			srcs[n] = (CUdeviceptr) (uintptr_t) (copy_map ? (const void *) (copy_map + off) : buf);
			sizes[n++] = len;
		}
		if (n > 0 && (rc = drv_batch(dsts, srcs, sizes, n, &attr, &attr_at, 1, stream)) != CUDA_SUCCESS)
		{
			run_cu_fail("cuMemcpyBatchAsync", rc);
			break;
		}
	}
	free(dsts);
	free(srcs);
	free(sizes);
}

static void *
copy_worker(void *unused)
{
	void	   *buf = NULL;
	CUstream	stream = NULL;
	size_t		off,
				len;
	CUresult	rc;

	(void) unused;
	if (!set_context())
		goto start;
	if ((rc = drv.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
	{
		run_cu_fail("cuStreamCreate", rc);
		goto start;
	}
	if (copy_map == NULL && copy_pinned &&
		(rc = drv.cuMemAllocHost(&buf, slice)) != CUDA_SUCCESS)
		run_cu_fail("cuMemAllocHost", rc);
	else if (copy_map == NULL && !copy_pinned)
	{
		if ((buf = malloc(slice)) == NULL)
			run_fail("malloc: %s (%ld)", "out of memory", 0);
		else
			memset(buf, 1, slice);
	}
start:
	ready();
	if (copy_batch > 1)
		copy_batches(buf, stream);
	else
		while (claim(&off, &len))
		{
			if (!copy_async(dev_at(off), copy_map ? (const void *) (copy_map + off) : buf, len,
							stream))
				break;
		}
	end_stream(stream);
	if (buf && copy_pinned)
		drv.cuMemFreeHost(buf);
	else
		free(buf);
	return NULL;
}

/* ---------------------------------------------------------------- registration ways */

static char *reg_map;			/* the read-only mapping of the first nbytes */
static bool *reg_done;			/* per region: registered */

enum RegOp
{
	REG_REGISTER, REG_UNREGISTER, REG_REGISTER_COPY
};

static enum RegOp reg_op;

static void *
reg_worker(void *unused)
{
	CUstream	stream = NULL;
	size_t		off,
				len;
	CUresult	rc;

	(void) unused;
	if (set_context() && reg_op == REG_REGISTER_COPY &&
		(rc = drv.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS)
		run_cu_fail("cuStreamCreate", rc);
	ready();
	while (claim(&off, &len))
	{
		size_t		r = off / region;
		size_t		reg_len = (len + PAGE - 1) & ~(PAGE - 1);

		if (reg_op == REG_UNREGISTER)
		{
			if (reg_done[r] && (rc = drv.cuMemHostUnregister(reg_map + off)) != CUDA_SUCCESS)
			{
				run_cu_fail("cuMemHostUnregister", rc);
				break;
			}
			reg_done[r] = false;
			continue;
		}
		rc = drv.cuMemHostRegister(reg_map + off, reg_len, CU_MEMHOSTREGISTER_READ_ONLY);
		if (rc != CUDA_SUCCESS)
		{
			run_cu_fail("cuMemHostRegister(READ_ONLY) of the file mapping", rc);
			break;
		}
		reg_done[r] = true;
		if (reg_op == REG_REGISTER_COPY)
		{
			/* the region's copy in slices, queued; the next region's registration overlaps it */
			for (size_t o = 0; o < len; o += slice)
			{
				if (!copy_async(dev_at(off + o), reg_map + off + o,
								len - o < slice ? len - o : slice, stream))
					break;
			}
		}
	}
	end_stream(stream);
	return NULL;
}

/* ---------------------------------------------------------------- cuFile */

/* libcufile's entry points (xpu/cufile_api.h) */
static CuFileApi cf;

static void *cf_handle;

/*
 * cufile_log_line
 *		The first line of libcufile's log (CUFILE_LOGFILE_PATH) that holds
 *		one of the NULL-terminated needles: its text after the log's prefix
 *		(time, pid, level, source location) into out; "" when none does.
 */
static void
cufile_log_line(const char *log, const char *const *needles, char *out, size_t outlen)
{
	FILE	   *f = fopen(log, "r");
	char		line[512];
	size_t		n;

	out[0] = '\0';
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f))
	{
		char	   *hit = NULL;

		for (int i = 0; needles[i] != NULL && hit == NULL; i++)
			hit = strstr(line, needles[i]);
		if (hit == NULL)
			continue;
		/* the message after "NOTICE  cufio-drv:1257 " or the like */
		hit = strstr(line, "] ");
		hit = hit ? hit + 2 : line;
		while (*hit && *hit != ' ')
			hit++;				/* the level */
		while (*hit == ' ')
			hit++;
		while (*hit && *hit != ' ')
			hit++;				/* the source location */
		while (*hit == ' ')
			hit++;
		hit[strcspn(hit, "\n")] = '\0';
		n = strlen(hit) < outlen - 1 ? strlen(hit) : outlen - 1;
		memcpy(out, hit, n);
		out[n] = '\0';
		break;
	}
	fclose(f);
}

/*
 * cufile_log_says: the log's line that names libcufile's mode ("running in
 * compatible mode", "nvidia_fs not loaded, operating on compatible mode.",
 * "forcing cufile into compatible mode", "... has no GDS support, compat
 * mode ..."); "" when none does (libcufile logs nothing of the kind when it
 * runs GDS)
 */
static void
cufile_log_says(const char *log, char *out, size_t outlen)
{
	static const char *const mode[] = {"compatible mode", "compat mode", NULL};

	cufile_log_line(log, mode, out, outlen);
}

static void *
cufile_worker(void *unused)
{
	size_t		off,
				len;

	(void) unused;
	set_context();
	ready();
	while (claim(&off, &len))
	{
		size_t		done = 0;

		while (done < len)
		{
			ssize_t		r = cf.Read(cf_handle, (void *) (uintptr_t) dev_buf, len - done,
									(off_t) (off + done), (off_t) ((off + done) % dev_bytes));

			if (r <= 0)
			{
				run_fail("%s (%ld)", r == 0 ? "cuFileRead: end of file" :
						 "cuFileRead failed (-1: errno, < -1: -CUfileOpError)", (long) r);
				return NULL;
			}
			done += r;
		}
	}
	return NULL;
}

/*
 * cufile_mode
 *		Which mode libcufile reads in, in words: GPUDirect Storage needs the
 *		nvidia-fs kernel driver (cuFileDriverGetProperties' nvfs version is
 *		0.0 without it, and /proc/driver/nvidia-fs exists with it), a file
 *		system it supports (dstatusflags; NVMe, bit 4, for a local disk) and
 *		compatibility mode not forced (CUFILE_FORCE_COMPAT_MODE,
 *		cuFileGetParameterBool(FORCE_COMPAT_MODE)); cuFileDriverGetP2PFlags
 *		for NVMe names the peer-to-peer route (NVFS, P2PDMA) where the
 *		library has it.  Otherwise, when allowed (dcontrolflags bit 1), reads
 *		go through compatibility mode: POSIX reads into host bounce buffers,
 *		then copies to the GPU.
 */
static void
cufile_mode(const CuFileDrvProps *p, char *out, size_t outlen, bool *gds)
{
	bool		nvfs_proc = access("/proc/driver/nvidia-fs/version", F_OK) == 0;
	bool		nvfs = p->nvfs.major_version > 0 || p->nvfs.minor_version > 0;
	bool		nvme = (p->nvfs.dstatusflags >> CUFILE_NVME_SUPPORTED_BIT) & 1;
	bool		compat_allowed = (p->nvfs.dcontrolflags >> CUFILE_ALLOW_COMPAT_BIT) & 1;
	bool		forced = false;
	unsigned int p2p = 0;
	char		p2ptext[64] = "";

	if (cf.GetParameterBool)
		cf.GetParameterBool(CUFILE_PARAM_FORCE_COMPAT, &forced);
	if (getenv("CUFILE_FORCE_COMPAT_MODE") && strcmp(getenv("CUFILE_FORCE_COMPAT_MODE"), "true") == 0)
		forced = true;
	if (cf.DriverGetP2PFlags && cf.DriverGetP2PFlags(CUFILE_NVME_SUPPORTED_BIT, &p2p).err == 0)
		snprintf(p2ptext, sizeof(p2ptext), ", NVMe P2P flags 0x%x%s", p2p,
				 (p2p & CUFILE_P2P_NVFS_FLAG) ? " (nvidia-fs)" : "");
	*gds = cufile_api_gds(&cf, p, nvfs_proc);
	snprintf(out, outlen, "%s: nvidia-fs %s (version %u.%u, /proc/driver/nvidia-fs %s), "
			 "NVMe %ssupported, compatibility mode %s%s",
			 *gds ? "GDS" : compat_allowed ? "compatibility" : "neither GDS nor compatibility",
			 nvfs ? "loaded" : "not loaded", p->nvfs.major_version, p->nvfs.minor_version,
			 nvfs_proc ? "present" : "absent", nvme ? "" : "not ",
			 forced ? "forced" : compat_allowed ? "allowed" : "not allowed", p2ptext);
}

static void
way_cufile(WayResult *w)
{
	const char *lib = getenv("CUFILE_LIB") ? getenv("CUFILE_LIB") : "libcufile.so.0";
	void	   *h;
	char		log[300],
				log_says[300];
	CuFileDrvProps props;
	CuFileDescr descr;
	CuFileError e;
	const char *missing;
	char		mode[700];
	bool		gds = false,
				buf_registered;
	int			version = 0;
	double		secs;

	w->target = "GPU memory (cuFileRead)";
	/* libcufile logs to ./cufile.log unless told otherwise: its own file in /tmp */
	if (getenv("CUFILE_LOGFILE_PATH") == NULL)
	{
		snprintf(log, sizeof(log), "/tmp/data_paths_cufile_%d.log", (int) getpid());
		unlink(log);
		setenv("CUFILE_LOGFILE_PATH", log, 1);
	}
	else
		snprintf(log, sizeof(log), "%s", getenv("CUFILE_LOGFILE_PATH"));
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
	{
		w->status = "unavailable";
		snprintf(w->why, sizeof(w->why), "cannot load %s (set CUFILE_LIB): %s", lib, dlerror());
		return;
	}
	if ((missing = cufile_api_resolve(h, &cf)) != NULL)
	{
		w->status = "unavailable";
		snprintf(w->why, sizeof(w->why), "%s lacks %s", lib, missing);
		return;
	}
	if (cf.GetVersion)
		cf.GetVersion(&version);
	e = cf.DriverOpen();
	if (e.err != 0)
	{
		w->status = "unavailable";
		snprintf(w->why, sizeof(w->why), "cuFileDriverOpen: error %d%s (CUDA %d)", e.err,
				 e.err == CUFILE_DRIVER_NOT_INITIALIZED ?
				 " (nvidia-fs not loaded and compatibility mode off)" : "", e.cu_err);
		return;
	}
	memset(&props, 0, sizeof(props));
	e = cf.DriverGetProperties(&props);
	if (e.err != 0)
		snprintf(mode, sizeof(mode), "unknown: cuFileDriverGetProperties error %d", e.err);
	else
		cufile_mode(&props, mode, sizeof(mode), &gds);
	/* what the library itself logged: a compatibility-mode line overrides the inference */
	cufile_log_says(log, log_says, sizeof(log_says));
	if (log_says[0])
	{
		gds = false;
		snprintf(mode + strlen(mode), sizeof(mode) - strlen(mode), "; libcufile's log: %s",
				 log_says);
	}
	fprintf(stderr, "data_paths: libcufile %d.%d (%s): %s\n", version / 1000, version % 1000 / 10,
			lib, mode);

	memset(&descr, 0, sizeof(descr));
	descr.type = CUFILE_HANDLE_TYPE_FD;
	descr.handle.fd = direct_fd;
	e = cf.HandleRegister(&cf_handle, &descr);
	if (e.err != 0)
	{
		/*
		 * libcufile asks udev for the attributes of the file's block device,
		 * in compatibility mode too; where udev's database has no record of
		 * it (a container or VM without udev) it registers no file at all
		 * (CU_FILE_HANDLE_NOT_REGISTERED, 5027)
		 */
		static const char *const udev[] = {"udev property not found", NULL};
		char		udev_says[256];
		struct stat st;

		cufile_log_line(log, udev, udev_says, sizeof(udev_says));
		w->status = "failed";
		snprintf(w->why, sizeof(w->why), "cuFileHandleRegister on the O_DIRECT descriptor: "
				 "error %d (CUDA %d)", e.err, e.cu_err);
		if (udev_says[0] && fstat(direct_fd, &st) == 0)
			snprintf(w->why + strlen(w->why), sizeof(w->why) - strlen(w->why),
					 ": libcufile's log: \"%s\": udev's database has no record of the "
					 "file's block device (/run/udev/data/b%u:%u)",
					 udev_says, major(st.st_dev), minor(st.st_dev));
		snprintf(w->why + strlen(w->why), sizeof(w->why) - strlen(w->why), "; mode %s", mode);
		cf.DriverClose();
		return;
	}
	e = cf.BufRegister((const void *) (uintptr_t) dev_buf, dev_bytes, 0);
	buf_registered = e.err == 0;
	if (!buf_registered)
		fprintf(stderr, "data_paths: cuFileBufRegister of %zu MiB failed (error %d, CUDA %d): "
				"reads go through libcufile's bounce buffers\n", dev_bytes / MIB, e.err, e.cu_err);
	w->resident_before = evict();
	w->page_cache = evicted_text(w->resident_before);
	secs = run_threads(cufile_worker, n_threads, slice, NULL);
	if (secs < 0)
	{
		w->status = "failed";
		snprintf(w->why, sizeof(w->why), "%s; mode %s", run.error, mode);
	}
	else
	{
		w->status = "ok";
		w->seconds = secs;
		w->bytes = nbytes;
	}
	snprintf(w->detail, sizeof(w->detail),
			 ",\"cufile_version\": %d, \"mode\": \"%s\", \"gds\": %s, \"nvfs_version\": \"%u.%u\", "
			 "\"dstatusflags\": %u, \"dcontrolflags\": %u, \"fflags\": %u, "
			 "\"device_buffer_registered\": %s, \"cufile_log\": \"%s\"",
			 version, gds ? "GDS" : "compatibility", gds ? "true" : "false",
			 props.nvfs.major_version, props.nvfs.minor_version, props.nvfs.dstatusflags,
			 props.nvfs.dcontrolflags, props.fflags, buf_registered ? "true" : "false", log);
	if (buf_registered)
		cf.BufDeregister((const void *) (uintptr_t) dev_buf);
	cf.HandleDeregister(cf_handle);
	cf.DriverClose();
	/* mode in words goes to why (the JSON's "why" holds the reason of the mode) */
	snprintf(w->why + strlen(w->why), sizeof(w->why) - strlen(w->why), "%s%s",
			 w->why[0] ? "; " : "", mode);
}

/* ---------------------------------------------------------------- running the ways */

static void
finish(WayResult *w, double secs, size_t bytes)
{
	if (secs < 0)
	{
		w->status = "failed";
		snprintf(w->why, sizeof(w->why), "%s", run.error);
		return;
	}
	w->status = "ok";
	w->seconds = secs;
	w->cpu_seconds = run.cpu_seconds;
	w->bytes = bytes;
}

/* reads the first nbytes once (pread, THREADS threads) unless all of it is cached */
static void
warm_file(void)
{
	double		share = resident_share(),
				secs;
	bool		saved = pread_to_gpu;

	if (share >= 0.999)
		return;
	pread_to_gpu = false;
	secs = run_threads(pread_worker, n_threads, slice, NULL);
	pread_to_gpu = saved;
	fprintf(stderr, "data_paths: read the file into the page cache (%.0f%% was there) in %.2f s; "
			"now %.0f%%\n", share * 100, secs, resident_share() * 100);
}

static void
warm_way(WayResult *w)
{
	warm_file();
	w->resident_before = resident_share();
	w->page_cache = w->resident_before >= 0.999 ? "warm: read once first, all in the page cache"
		: "warm: read once first, but NOT all of it stayed in the page cache";
}

/*
 * read_way: a way of the pread worker over the warm file (pread, map, pack,
 * map-pack and their pinned forms): to_gpu (pinned buffers, copied) or not,
 * each slice copied from a mapping of the file (mapped) or read with pread,
 * and packed (pack_slices) or not
 */
static void
read_way(WayResult *w, bool to_gpu, bool mapped, bool packed)
{
	pread_to_gpu = to_gpu;
	warm_way(w);
	if (mapped)
	{
		pread_map = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, file_fd, 0);
		if (pread_map == MAP_FAILED)
		{
			pread_map = NULL;
			w->status = "failed";
			snprintf(w->why, sizeof(w->why), "mmap: %s", strerror(errno));
			return;
		}
	}
	pack_slices = packed;
	packed_bytes = 0;
	finish(w, run_threads(pread_worker, n_threads, slice, NULL), nbytes);
	pack_slices = false;
	if (mapped)
	{
		munmap((void *) pread_map, nbytes);
		pread_map = NULL;
	}
	if (packed)
		snprintf(w->detail, sizeof(w->detail), ",\"packed_bytes\": %zu, \"packed_share\": %.4f",
				 packed_bytes, (double) packed_bytes / nbytes);
}

static void
do_way(enum Way way)
{
	WayResult  *w = &results[way];
	double		secs = -1;

	run.cpu_seconds = -1;		/* set by the way's timed threads (run_threads) */
	if (way_needs_gpu[way] && !have_gpu)
	{
		w->status = "unavailable";
		snprintf(w->why, sizeof(w->why), "no GPU: %s", no_gpu_why);
		return;
	}
	switch (way)
	{
		case W_ODIRECT:
			w->target = "aligned host buffers (O_DIRECT)";
			if (direct_fd < 0)
			{
				w->status = "unavailable";
				snprintf(w->why, sizeof(w->why), "open(O_DIRECT): %s", strerror(direct_errno));
				return;
			}
			w->resident_before = evict();
			w->page_cache = evicted_text(w->resident_before);
			finish(w, run_threads(odirect_worker, n_threads, slice, NULL), nbytes);
			break;
		case W_CUFILE:
			if (direct_fd < 0)
			{
				w->status = "unavailable";
				snprintf(w->why, sizeof(w->why), "open(O_DIRECT): %s", strerror(direct_errno));
				return;
			}
			way_cufile(w);
			break;
		case W_COLD_PREAD:
			pread_to_gpu = have_gpu;
			w->target = have_gpu ? "GPU memory (pread into pinned buffers, cuMemcpyHtoDAsync)"
				: "ordinary host buffers (no GPU)";
			w->resident_before = evict();
			w->page_cache = evicted_text(w->resident_before);
			finish(w, run_threads(pread_worker, n_threads, slice, NULL), nbytes);
			break;
		case W_PREAD:
			w->target = "ordinary host buffers";
			read_way(w, false, false, false);
			break;
		case W_PINNED:
		case W_PAGEABLE:
			copy_map = NULL;
			copy_pinned = way == W_PINNED;
			w->target = "GPU memory (cuMemcpyHtoDAsync)";
			w->page_cache = "no file";
			w->resident_before = -1;
			finish(w, run_threads(copy_worker, n_streams, slice, NULL), nbytes);
			break;
		case W_PREAD_PINNED:
			w->target = "GPU memory (pread into pinned buffers, cuMemcpyHtoDAsync)";
			read_way(w, true, false, false);
			break;
		case W_MAP:
		case W_MAP_PINNED:
			w->target = way == W_MAP ? "ordinary host buffers (memcpy from a mapping)" :
				"GPU memory (memcpy from a mapping into pinned buffers, cuMemcpyHtoDAsync)";
			read_way(w, way == W_MAP_PINNED, true, false);
			break;
		case W_MAP_NT:
		case W_MAP_NT_PINNED:
			w->target = way == W_MAP_NT ?
				"ordinary host buffers (copied from a mapping with streaming stores)" :
				"GPU memory (copied from a mapping into pinned buffers with streaming stores, "
				"cuMemcpyHtoDAsync)";
			if (!__builtin_cpu_supports("avx2"))
			{
				w->status = "unavailable";
				snprintf(w->why, sizeof(w->why), "this CPU has no AVX2");
				break;
			}
			copy_streaming = true;
			read_way(w, way == W_MAP_NT_PINNED, true, false);
			copy_streaming = false;
			break;
		case W_PACK:
		case W_PACK_PINNED:
			w->target = way == W_PACK ? "ordinary host buffers (packed)" :
				"GPU memory (packed into pinned buffers, cuMemcpyHtoDAsync; not unpacked)";
			read_way(w, way == W_PACK_PINNED, false, true);
			break;
		case W_MAP_PACK:
		case W_MAP_PACK_PINNED:
			w->target = way == W_MAP_PACK ? "ordinary host buffers (packed from a mapping)" :
				"GPU memory (packed from a mapping into pinned buffers, cuMemcpyHtoDAsync)";
			read_way(w, way == W_MAP_PACK_PINNED, true, true);
			break;
		case W_REGISTER:
			w->target = "page-locked file pages (cuMemHostRegister READ_ONLY)";
			warm_way(w);
			reg_op = REG_REGISTER;
			secs = run_threads(reg_worker, n_threads, region, NULL);
			finish(w, secs, nbytes);
			break;
		case W_REGISTERED_COPY:
			w->target = "GPU memory (cuMemcpyHtoDAsync from the registered mapping)";
			warm_way(w);
			if (!results[W_REGISTER].asked || results[W_REGISTER].status == NULL ||
				strcmp(results[W_REGISTER].status, "ok") != 0)
			{
				reg_op = REG_REGISTER;
				if (run_threads(reg_worker, n_threads, region, NULL) < 0)
				{
					finish(w, -1, 0);
					break;
				}
			}
			copy_map = reg_map;
			finish(w, run_threads(copy_worker, n_streams, slice, NULL), nbytes);
			break;
		case W_REGISTER_COPY:
			w->target = "GPU memory (each region registered, then copied)";
			warm_way(w);
			reg_op = REG_REGISTER_COPY;
			finish(w, run_threads(reg_worker, n_threads, region, NULL), nbytes);
			break;
		case N_WAYS:
			break;
	}
	/* registrations end with the way that made them (timed for register) */
	if (way == W_REGISTER || way == W_REGISTERED_COPY || way == W_REGISTER_COPY)
	{
		bool		keep = way == W_REGISTER && results[W_REGISTERED_COPY].asked &&
			strcmp(w->status, "ok") == 0;

		if (!keep)
		{
			reg_op = REG_UNREGISTER;
			secs = run_threads(reg_worker, n_threads, region, NULL);
			if (secs >= 0 && (way == W_REGISTER || way == W_REGISTER_COPY))
				snprintf(w->detail, sizeof(w->detail), ",\"unregister_seconds\": %.6f", secs);
		}
		else
			snprintf(w->detail, sizeof(w->detail),
					 ",\"unregister_seconds\": null, \"kept_for\": \"registered-copy\"");
	}
	if (way == W_REGISTERED_COPY && results[W_REGISTER].asked && secs >= 0)
		snprintf(results[W_REGISTER].detail, sizeof(results[W_REGISTER].detail),
				 ",\"unregister_seconds\": %.6f, \"kept_for\": \"registered-copy\"", secs);
}

/* ---------------------------------------------------------------- output */

static void
json_string(const char *s)
{
	putchar('"');
	for (; s && *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c >= 0x20 && c != '"' && c != '\\')
			putchar(c);
		else
			printf(c < 0x20 ? "\\u%04x" : "\\%c", c);
	}
	putchar('"');
}

static void
print_results(void)
{
	bool		first = true;

	printf("{\"tool\": \"data_paths\", \"file\": ");
	json_string(path);
	printf(", \"file_bytes\": %zu, \"bytes\": %zu, \"threads\": %d, \"streams\": %d, "
		   "\"copies_per_call\": %d, \"slice_bytes\": %zu, \"region_bytes\": %zu, \"device_buffer_bytes\": %zu, "
		   "\"gpu\": %d, \"device\": ", file_size, nbytes, n_threads, n_streams, copy_batch, slice, region,
		   dev_bytes, gpu_ordinal);
	if (have_gpu)
		json_string(device_name);
	else
		printf("null");
	printf(", \"no_gpu_reason\": ");
	if (have_gpu)
		printf("null");
	else
		json_string(no_gpu_why);
	printf(", \"ways\": [");
	for (int i = 0; i < N_WAYS; i++)
	{
		WayResult  *w = &results[i];

		if (!w->asked || w->status == NULL)
			continue;
		printf("%s\n  {\"way\": \"%s\", \"status\": \"%s\"", first ? "" : ",", way_names[i],
			   w->status);
		first = false;
		if (strcmp(w->status, "ok") == 0)
		{
			printf(", \"seconds\": %.6f, \"bytes\": %zu, \"gb_per_s\": %.3f", w->seconds, w->bytes,
				   w->bytes / w->seconds / 1e9);
			if (w->cpu_seconds >= 0)
				printf(", \"cpu_seconds\": %.4f, \"cpu_seconds_per_gb\": %.4f", w->cpu_seconds,
					   w->cpu_seconds / (w->bytes / 1e9));
		}
		printf(", \"why\": ");
		if (w->why[0])
			json_string(w->why);
		else
			printf("null");
		printf(", \"target\": ");
		if (w->target)
			json_string(w->target);
		else
			printf("null");
		printf(", \"page_cache\": ");
		if (w->page_cache)
			json_string(w->page_cache);
		else
			printf("null");
		if (w->resident_before >= 0)
			printf(", \"resident_before\": %.4f", w->resident_before);
		else
			printf(", \"resident_before\": null");
		printf("%s}", w->detail);

		fprintf(stderr, "%-16s %-11s", way_names[i], w->status);
		if (strcmp(w->status, "ok") == 0)
		{
			fprintf(stderr, " %8.3f s %8.2f GB/s", w->seconds, w->bytes / w->seconds / 1e9);
			if (w->cpu_seconds >= 0)
				fprintf(stderr, " %6.3f CPU-s/GB", w->cpu_seconds / (w->bytes / 1e9));
		}
		fprintf(stderr, "  %s%s%s\n", w->page_cache ? w->page_cache : "",
				w->page_cache && w->why[0] ? "; " : "", w->why);
	}
	printf("\n]}\n");
}

/*
 * watchdog
 *		A way that runs past way_limit_s seconds (a library call that hangs,
 *		e.g. cuFileDriverOpen) is reported as failed, with the results so far,
 *		and the program exits with status 1.
 */
static void *
watchdog(void *unused)
{
	(void) unused;
	for (;;)
	{
		int			w = current_way;

		sleep(1);
		if (w >= 0 && w == current_way && now() - way_started > way_limit_s)
		{
			results[w].status = "failed";
			snprintf(results[w].why, sizeof(results[w].why), "timed out after %d s (-T)",
					 way_limit_s);
			for (int i = w + 1; i < N_WAYS; i++)
				if (results[i].asked)
				{
					results[i].status = "failed";
					snprintf(results[i].why, sizeof(results[i].why), "not run: %s timed out",
							 way_names[w]);
				}
			print_results();
			fflush(stdout);
			_exit(EXIT_FAILED);
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- main */

static size_t
parse_size(const char *s, const char *what)
{
	char	   *end;
	double		v = strtod(s, &end);

	switch (*end)
	{
		case 'k':
		case 'K':
			v *= 1024;
			end++;
			break;
		case 'm':
		case 'M':
			v *= 1024.0 * 1024;
			end++;
			break;
		case 'g':
		case 'G':
			v *= 1024.0 * 1024 * 1024;
			end++;
			break;
	}
	if (*end != '\0' || v < 0)
	{
		fprintf(stderr, "data_paths: bad %s: %s\n", what, s);
		exit(EXIT_USAGE);
	}
	return (size_t) v;
}

static void
usage(void)
{
	fprintf(stderr, "usage: data_paths FILE [-b BYTES] [-t THREADS] [-s SLICE_MIB] [-R REGION_MIB]\n"
			"                  [-S STREAMS] [-D DEVICE_MIB] [-g GPU] [-w WAY,...] [-T WAY_SECONDS]\n"
			"                  [-B COPIES]\n"
			"       data_paths -E FILE    (evict it from the page cache)\n"
			"ways:");
	for (int i = 0; i < N_WAYS; i++)
		fprintf(stderr, " %s", way_names[i]);
	fprintf(stderr, "\n");
	exit(EXIT_USAGE);
}

int
main(int argc, char **argv)
{
	const char *ways = NULL;
	struct stat st;
	/* the options that take a number: a count, or mebibytes */
	const struct
	{
		int			letter;
		int		   *ival;
		size_t	   *mib;
	}			int_options[] = {
		{'t', &n_threads, NULL}, {'S', &n_streams, NULL}, {'g', &gpu_ordinal, NULL},
		{'T', &way_limit_s, NULL}, {'B', &copy_batch, NULL}, {'s', NULL, &slice}, {'R', NULL, &region}, {'D', NULL, &dev_bytes}
	};
	size_t		opt_i;
	bool		evict_only = false,
				gpu_asked = false,
				failed = false;
	int			opt;

	while ((opt = getopt(argc, argv, "b:t:s:R:S:D:g:w:T:B:Eh")) != -1)
	{
		switch (opt)
		{
			case 'b':
				nbytes = parse_size(optarg, "BYTES");
				continue;
			case 'w':
				ways = optarg;
				continue;
			case 'E':
				evict_only = true;
				continue;
		}
		for (opt_i = 0; opt_i < sizeof(int_options) / sizeof(int_options[0]); opt_i++)
			if (int_options[opt_i].letter == opt)
			{
				int			v = atoi(optarg);

				if (int_options[opt_i].ival)
					*int_options[opt_i].ival = v;
				else if (optarg[0] != '\0' && isdigit((unsigned char) optarg[strlen(optarg) - 1]))
					*int_options[opt_i].mib = (size_t) (v < 0 ? 0 : v) * MIB;
				else
					*int_options[opt_i].mib = parse_size(optarg, "size");
				break;
			}
		if (opt_i == sizeof(int_options) / sizeof(int_options[0]))
			usage();
	}
	if (optind != argc - 1 || n_threads < 1 || n_threads > MAX_THREADS || n_streams < 1 ||
		n_streams > MAX_THREADS || way_limit_s < 1 || copy_batch < 1 || slice == 0 || region == 0 ||
		dev_bytes == 0 || gpu_ordinal < 0)
		usage();
	path = argv[optind];

	for (int i = 0; i < N_WAYS; i++)
		results[i].asked = ways == NULL;
	if (ways)
	{
		char	   *list = strdup(ways),
				   *save = NULL;

		for (char *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		{
			int			i;

			for (i = 0; i < N_WAYS && strcmp(t, way_names[i]) != 0; i++)
				;
			if (i == N_WAYS)
			{
				fprintf(stderr, "data_paths: unknown way %s\n", t);
				usage();
			}
			results[i].asked = true;
		}
		free(list);
	}
	for (int i = 0; i < N_WAYS; i++)
		if (results[i].asked && way_needs_gpu[i])
			gpu_asked = true;

	if ((file_fd = open(path, O_RDONLY)) < 0 || fstat(file_fd, &st) != 0)
	{
		fprintf(stderr, "data_paths: %s: %s\n", path, strerror(errno));
		return EXIT_USAGE;
	}
	file_size = st.st_size;
	if (nbytes == 0 || nbytes > file_size)
		nbytes = file_size;
	nbytes &= ~(PAGE - 1);
	if (nbytes == 0)
	{
		fprintf(stderr, "data_paths: %s is shorter than 4 KiB\n", path);
		return EXIT_USAGE;
	}
	if (dev_bytes > nbytes)
		dev_bytes = (nbytes + MIB - 1) / MIB * MIB;
	/*
	 * Offsets wrap at a multiple of every piece size, and a slice never
	 * spans two registered regions (a copy's source is in one registration)
	 */
	if (region % slice != 0)
	{
		fprintf(stderr, "data_paths: REGION_MIB must be a multiple of SLICE_MIB\n");
		return EXIT_USAGE;
	}
	if (dev_bytes < nbytes)
	{
		dev_bytes -= dev_bytes % region;
		if (dev_bytes == 0)
		{
			fprintf(stderr, "data_paths: DEVICE_MIB must hold a region (REGION_MIB)\n");
			return EXIT_USAGE;
		}
	}
	if (evict_only)
	{
		double		before = resident_share();
		double		after = evict();

		printf("{\"file\": ");
		json_string(path);
		printf(", \"bytes\": %zu, \"resident_before\": %.4f, \"resident_after\": %.4f}\n",
			   nbytes, before, after);
		return 0;
	}
	direct_fd = open(path, O_RDONLY | O_DIRECT);
	direct_errno = errno;
	pthread_mutex_init(&run.lock, NULL);

	if (gpu_asked && !open_gpu())
	{
		fprintf(stderr, "data_paths: %s\n", no_gpu_why);
		return EXIT_FAILED;
	}
	fprintf(stderr, "data_paths: %s, %.2f GB of %.2f GB, %d threads, %d streams, slices %zu KiB, "
			"regions %zu MiB; GPU %s\n", path, nbytes / 1e9, file_size / 1e9, n_threads, n_streams,
			slice / 1024, region / MIB, have_gpu ? device_name : gpu_asked ? no_gpu_why : "not asked");
	if (have_gpu && (results[W_REGISTER].asked || results[W_REGISTERED_COPY].asked ||
					 results[W_REGISTER_COPY].asked))
	{
		reg_map = mmap(NULL, nbytes, PROT_READ, MAP_SHARED, file_fd, 0);
		reg_done = calloc((nbytes + region - 1) / region, sizeof(bool));
		if (reg_map == MAP_FAILED || reg_done == NULL)
		{
			fprintf(stderr, "data_paths: mmap of %s: %s\n", path, strerror(errno));
			return EXIT_FAILED;
		}
	}

	{
		pthread_t	wd;

		pthread_create(&wd, NULL, watchdog, NULL);
		pthread_detach(wd);
	}
	for (int i = 0; i < N_WAYS; i++)
	{
		if (!results[i].asked)
			continue;
		results[i].resident_before = -1;
		results[i].cpu_seconds = -1;
		way_started = now();
		current_way = i;
		do_way((enum Way) i);
		current_way = -1;
		if (strcmp(results[i].status, "failed") == 0)
			failed = true;
		fprintf(stderr, "  %s: %s%s%s\n", way_names[i], results[i].status,
				strcmp(results[i].status, "ok") == 0 ? "" : ": ",
				strcmp(results[i].status, "ok") == 0 ? "" : results[i].why);
	}
	if (reg_map && reg_map != MAP_FAILED)
		munmap(reg_map, nbytes);
	print_results();
	if (failed)
		return EXIT_FAILED;
	return gpu_asked && !have_gpu ? EXIT_NO_GPU : 0;
}
