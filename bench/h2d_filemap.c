/*-------------------------------------------------------------------------
 *
 * h2d_filemap.c
 *		Whether the GPU can copy a file's page-cache pages without a host
 *		copy, and at what rate (a benchmark tool, not part of pg_warp): maps
 *		FILE read-only (MAP_SHARED, its pages faulted in once), registers the
 *		mapping with cuMemHostRegister(CU_MEMHOSTREGISTER_READ_ONLY) and
 *		copies it to GPU memory, whole and then chunk by chunk (each chunk
 *		registered, copied, unregistered), beside the way heap pages reach
 *		the GPU today (pread into pinned memory, then the copy).
 *
 *	   h2d_filemap FILE MIB [-c CHUNK_MIB]
 *
 * The first MIB mebibytes of FILE are used (FILE must be at least that
 * long); CHUNK_MIB defaults to 4 (a heap chunk of 512 pages).  One thread,
 * synchronous copies (cuMemcpyHtoD).  The CUDA driver is loaded with
 * dlopen, so this builds with plain cc (`make -C bench h2d_filemap`).
 * Prints one line per measurement; exit status 0, 3 without a GPU, 1 when
 * a call fails.
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cuda_driver.h"

static struct
{
	CUresult	(*init) (unsigned int);
	CUresult	(*device_get) (CUdevice *, int);
	CUresult	(*ctx_retain) (CUcontext *, CUdevice);
	CUresult	(*ctx_push) (CUcontext);
	CUresult	(*mem_alloc) (CUdeviceptr *, size_t);
	CUresult	(*host_alloc) (void **, size_t);
	CUresult	(*host_register) (void *, size_t, unsigned int);
	CUresult	(*host_unregister) (void *);
	CUresult	(*copy) (CUdeviceptr, const void *, size_t);
} cu;

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int
fail(const char *what, int rc)
{
	fprintf(stderr, "h2d_filemap: %s failed (%d)\n", what, rc);
	return 1;
}

static void
report(const char *what, double secs, size_t bytes)
{
	printf("%-44s %8.3f s  %6.1f GB/s\n", what, secs, bytes / secs / 1e9);
}

int
main(int argc, char **argv)
{
	void	   *lib;
	CUdevice	dev;
	CUcontext	ctx;
	CUdeviceptr dst;
	size_t		size,
				chunk = (size_t) 4 << 20;
	struct stat st;
	const char *m;
	void	   *pinned;
	volatile uint64_t sum = 0;
	double		t0;
	int			fd,
				rc;

	if (argc < 3)
	{
		fprintf(stderr, "usage: h2d_filemap FILE MIB [-c CHUNK_MIB]\n");
		return 2;
	}
	size = (size_t) atol(argv[2]) << 20;
	if (argc >= 5 && strcmp(argv[3], "-c") == 0)
		chunk = (size_t) atol(argv[4]) << 20;
	if (size == 0 || chunk == 0 || size % chunk != 0)
	{
		fprintf(stderr, "h2d_filemap: MIB must be a positive multiple of CHUNK_MIB\n");
		return 2;
	}
	if ((lib = dlopen(CUDA_LIBRARY_NAME, RTLD_NOW)) == NULL)
	{
		fprintf(stderr, "h2d_filemap: no GPU here: %s\n", dlerror());
		return 3;
	}
	cu.init = dlsym(lib, "cuInit");
	cu.device_get = dlsym(lib, "cuDeviceGet");
	cu.ctx_retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
	cu.ctx_push = dlsym(lib, "cuCtxPushCurrent_v2");
	cu.mem_alloc = dlsym(lib, "cuMemAlloc_v2");
	cu.host_alloc = dlsym(lib, "cuMemAllocHost_v2");
	cu.host_register = dlsym(lib, "cuMemHostRegister_v2");
	cu.host_unregister = dlsym(lib, "cuMemHostUnregister");
	cu.copy = dlsym(lib, "cuMemcpyHtoD_v2");
	if (!cu.init || !cu.device_get || !cu.ctx_retain || !cu.ctx_push || !cu.mem_alloc ||
		!cu.host_alloc || !cu.host_register || !cu.host_unregister || !cu.copy)
		return fail("resolving the driver's entry points", -1);
	if ((rc = cu.init(0)) != 0)
	{
		fprintf(stderr, "h2d_filemap: no GPU here: cuInit %d\n", rc);
		return 3;
	}
	if ((rc = cu.device_get(&dev, 0)) != 0 || (rc = cu.ctx_retain(&ctx, dev)) != 0 ||
		(rc = cu.ctx_push(ctx)) != 0)
		return fail("the device's context", rc);
	if ((rc = cu.mem_alloc(&dst, size)) != 0 || (rc = cu.host_alloc(&pinned, chunk)) != 0)
		return fail("memory", rc);
	if ((fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st) != 0 || (size_t) st.st_size < size)
	{
		fprintf(stderr, "h2d_filemap: %s: %s\n", argv[1],
				fd < 0 ? strerror(errno) : "shorter than MIB mebibytes");
		return 2;
	}
	m = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		return fail("mmap", errno);
	for (size_t i = 0; i < size; i += 4096)
		sum += (unsigned char) m[i];	/* in the page cache, the mapping faulted in */

	t0 = now();
	rc = cu.host_register((void *) m, size, CU_MEMHOSTREGISTER_READ_ONLY);
	if (rc != 0)
		printf("cuMemHostRegister(READ_ONLY) of the file mapping refused: %d\n", rc);
	else
	{
		report("register the whole mapping", now() - t0, size);
		t0 = now();
		if ((rc = cu.copy(dst, m, size)) != 0)
			return fail("the copy from the registered mapping", rc);
		report("copy it whole", now() - t0, size);
		t0 = now();
		cu.host_unregister((void *) m);
		report("unregister it", now() - t0, size);

		t0 = now();
		for (size_t o = 0; o < size; o += chunk)
		{
			if ((rc = cu.host_register((void *) (m + o), chunk, CU_MEMHOSTREGISTER_READ_ONLY)) != 0)
				return fail("registering a chunk", rc);
			if ((rc = cu.copy(dst + o, m + o, chunk)) != 0)
				return fail("a chunk's copy", rc);
			cu.host_unregister((void *) (m + o));
		}
		report("per chunk: register, copy, unregister", now() - t0, size);
	}
	t0 = now();
	for (size_t o = 0; o < size; o += chunk)
	{
		if (pread(fd, pinned, chunk, (off_t) o) != (ssize_t) chunk)
			return fail("pread", errno);
		if ((rc = cu.copy(dst + o, pinned, chunk)) != 0)
			return fail("a staged copy", rc);
	}
	report("per chunk: pread into pinned memory, copy", now() - t0, size);
	return 0;
}
