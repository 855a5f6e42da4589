/*-------------------------------------------------------------------------
 *
 * h2d_copy.c
 *		The pinned host-to-GPU copy rate for bench/engine_bench.py: copies N
 *		bytes from page-locked host memory to GPU memory with cuMemcpyHtoD, a
 *		few times, and prints the rate (a benchmark tool, not part of pg_warp).
 *
 *	   h2d_copy BYTES [-r REPS] [-c CHUNK] [-g DEVICE]
 *
 * The CUDA driver is loaded with dlopen, as pg_warp does (engine/device.c),
 * so this builds with plain gcc where neither nvcc nor the driver exists
 * (`make -C bench h2d_copy`).  Host and device buffers are CHUNK bytes (default
 * 1 GiB, at most BYTES); a repetition moves BYTES bytes as consecutive copies
 * of at most CHUNK bytes, timed from the first copy's start to the last one's
 * end.  One unmeasured repetition comes first (the DMA mappings, the clocks).
 *
 * Output: one JSON object on standard output,
 *	 {"device": ..., "bytes": N, "chunk_bytes": C, "seconds": [...],
 *	  "gb_per_s_median": X, "gb_per_s_best": Y}
 * (GB = 10^9 bytes) and a readable line on standard error.
 *
 * Exit status: 0 measured; 3 no GPU here (no libcuda.so.1, the toolkit's
 * stub, or no device), with the reason on standard error; 1 a driver call
 * failed; 2 bad arguments.
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_driver.h"

#define EXIT_FAILED		1
#define EXIT_USAGE		2
#define EXIT_NO_GPU		3

#define MAX_REPS		100

/* the driver's entry points this program calls */
typedef struct Driver
{
	CUresult	(*cuInit) (unsigned int flags);
	CUresult	(*cuGetErrorName) (CUresult error, const char **str);
	CUresult	(*cuDeviceGetCount) (int *count);
	CUresult	(*cuDeviceGet) (CUdevice *device, int ordinal);
	CUresult	(*cuDeviceGetName) (char *name, int len, CUdevice dev);
	CUresult	(*cuDevicePrimaryCtxRetain) (CUcontext *ctx, CUdevice dev);
	CUresult	(*cuCtxSetCurrent) (CUcontext ctx);
	CUresult	(*cuCtxSynchronize) (void);
	CUresult	(*cuMemHostAlloc) (void **ptr, size_t bytes, unsigned int flags);
	CUresult	(*cuMemFreeHost) (void *ptr);
	CUresult	(*cuMemAlloc) (CUdeviceptr *dptr, size_t bytes);
	CUresult	(*cuMemFree) (CUdeviceptr dptr);
	CUresult	(*cuMemcpyHtoD) (CUdeviceptr dst, const void *src, size_t bytes);
} Driver;

/* exported names: the _v2 ABI where the driver has more than one */
static const struct
{
	const char *name;
	size_t		offset;
}			symbols[] = {
	{"cuInit", offsetof(Driver, cuInit)},
	{"cuGetErrorName", offsetof(Driver, cuGetErrorName)},
	{"cuDeviceGetCount", offsetof(Driver, cuDeviceGetCount)},
	{"cuDeviceGet", offsetof(Driver, cuDeviceGet)},
	{"cuDeviceGetName", offsetof(Driver, cuDeviceGetName)},
	{"cuDevicePrimaryCtxRetain", offsetof(Driver, cuDevicePrimaryCtxRetain)},
	{"cuCtxSetCurrent", offsetof(Driver, cuCtxSetCurrent)},
	{"cuCtxSynchronize", offsetof(Driver, cuCtxSynchronize)},
	{"cuMemHostAlloc", offsetof(Driver, cuMemHostAlloc)},
	{"cuMemFreeHost", offsetof(Driver, cuMemFreeHost)},
	{"cuMemAlloc_v2", offsetof(Driver, cuMemAlloc)},
	{"cuMemFree_v2", offsetof(Driver, cuMemFree)},
	{"cuMemcpyHtoD_v2", offsetof(Driver, cuMemcpyHtoD)},
};

static Driver drv;

/*
 * check
 *		Exits with EXIT_FAILED and the driver's name of the error if a call
 *		failed; what names the call.
 */
static void
check(CUresult rc, const char *what)
{
	const char *name = NULL;

	if (rc == CUDA_SUCCESS)
		return;
	if (drv.cuGetErrorName == NULL || drv.cuGetErrorName(rc, &name) != CUDA_SUCCESS)
		name = NULL;
	fprintf(stderr, "h2d_copy: %s() failed: %s (%d)\n", what, name ? name : "CUDA error", rc);
	exit(EXIT_FAILED);
}

/*
 * open_driver
 *		dlopen()s the driver, resolves the entry points and calls cuInit().
 *		Exits with EXIT_NO_GPU when there is no usable GPU (no library, the
 *		stub, no device) and EXIT_FAILED when an installed driver is broken.
 */
static void
open_driver(void)
{
	void	   *handle = dlopen(CUDA_LIBRARY_NAME, RTLD_NOW | RTLD_LOCAL);
	CUresult	rc;
	size_t		i;

	if (handle == NULL)
	{
		const char *why = dlerror();

		fprintf(stderr, "h2d_copy: no GPU: %s\n", why ? why : "cannot load " CUDA_LIBRARY_NAME);
		exit(EXIT_NO_GPU);
	}
	for (i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++)
	{
		void	   *addr = dlsym(handle, symbols[i].name);

		if (addr == NULL)
		{
			fprintf(stderr, "h2d_copy: %s has no symbol %s (driver too old or damaged)\n",
					CUDA_LIBRARY_NAME, symbols[i].name);
			exit(EXIT_FAILED);
		}
		memcpy((char *) &drv + symbols[i].offset, &addr, sizeof(addr));
	}
	rc = drv.cuInit(0);
	if (rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY)
	{
		fprintf(stderr, "h2d_copy: no GPU: cuInit() returned %d (%s)\n", rc,
				rc == CUDA_ERROR_NO_DEVICE ? "no CUDA device" : "the CUDA toolkit's stub library");
		exit(EXIT_NO_GPU);
	}
	check(rc, "cuInit");
}

/* seconds on the monotonic clock */
static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * copy_once
 *		Moves total bytes from host to dev in copies of at most chunk bytes;
 *		returns the seconds from the first copy's start to the end of the last.
 */
static double
copy_once(CUdeviceptr dev, const void *host, size_t total, size_t chunk)
{
	double		t0 = now();
	size_t		done = 0;

	while (done < total)
	{
		size_t		n = total - done < chunk ? total - done : chunk;

		check(drv.cuMemcpyHtoD(dev, host, n), "cuMemcpyHtoD");
		done += n;
	}
	/* pinned-to-device copies return when done; make sure of it */
	check(drv.cuCtxSynchronize(), "cuCtxSynchronize");
	return now() - t0;
}

/* prints s as a JSON string (quotes, backslashes and control bytes escaped) */
static void
print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++)
	{
		unsigned char c = (unsigned char) *s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

/*
 * parse_size
 *		A positive byte count (decimal); exits with EXIT_USAGE otherwise.
 */
static size_t
parse_size(const char *s, const char *what)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v == 0 || s[0] == '-')
	{
		fprintf(stderr, "h2d_copy: %s must be a positive integer, not \"%s\"\n", what, s);
		exit(EXIT_USAGE);
	}
	return (size_t) v;
}

static void
usage(void)
{
	fprintf(stderr, "usage: h2d_copy BYTES [-r REPS] [-c CHUNK_BYTES] [-g DEVICE]\n");
	exit(EXIT_USAGE);
}

int
main(int argc, char **argv)
{
	size_t		total = 0;
	size_t		chunk = (size_t) 1 << 30;
	int			reps = 5;
	int			ordinal = 0;
	int			ndev;
	int			i;
	char		name[256];
	CUdevice	dev;
	CUcontext	ctx;
	void	   *host;
	CUdeviceptr dptr;
	double		secs[MAX_REPS];
	double		sorted[MAX_REPS];
	double		median;

	for (i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
			reps = (int) parse_size(argv[++i], "REPS");
		else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc)
			chunk = parse_size(argv[++i], "CHUNK_BYTES");
		else if (strcmp(argv[i], "-g") == 0 && i + 1 < argc)
			ordinal = atoi(argv[++i]);
		else if (argv[i][0] != '-' && total == 0)
			total = parse_size(argv[i], "BYTES");
		else
			usage();
	}
	if (total == 0)
		usage();
	if (reps > MAX_REPS)
	{
		fprintf(stderr, "h2d_copy: at most %d repetitions\n", MAX_REPS);
		exit(EXIT_USAGE);
	}
	if (chunk > total)
		chunk = total;

	open_driver();
	check(drv.cuDeviceGetCount(&ndev), "cuDeviceGetCount");
	if (ndev == 0)
	{
		fprintf(stderr, "h2d_copy: no GPU: the driver reports no device\n");
		exit(EXIT_NO_GPU);
	}
	if (ordinal < 0 || ordinal >= ndev)
	{
		fprintf(stderr, "h2d_copy: no device %d (the driver reports %d)\n", ordinal, ndev);
		exit(EXIT_USAGE);
	}
	check(drv.cuDeviceGet(&dev, ordinal), "cuDeviceGet");
	check(drv.cuDeviceGetName(name, sizeof(name), dev), "cuDeviceGetName");
	name[sizeof(name) - 1] = '\0';
	check(drv.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
	check(drv.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

	check(drv.cuMemHostAlloc(&host, chunk, 0), "cuMemHostAlloc");
	memset(host, 0x5a, chunk);	/* the pages exist before the clock runs */
	check(drv.cuMemAlloc(&dptr, chunk), "cuMemAlloc");

	copy_once(dptr, host, total, chunk);	/* unmeasured */
	for (i = 0; i < reps; i++)
		secs[i] = copy_once(dptr, host, total, chunk);

	memcpy(sorted, secs, reps * sizeof(double));
	qsort(sorted, reps, sizeof(double), cmp_double);
	median = reps % 2 ? sorted[reps / 2] : (sorted[reps / 2 - 1] + sorted[reps / 2]) / 2;

	printf("{\"device\": ");
	print_json_string(name);
	printf(", \"bytes\": %zu, \"chunk_bytes\": %zu, \"seconds\": [", total, chunk);
	for (i = 0; i < reps; i++)
		printf("%s%.6f", i ? ", " : "", secs[i]);
	printf("], \"gb_per_s_median\": %.3f, \"gb_per_s_best\": %.3f}\n",
		   total / median / 1e9, total / sorted[0] / 1e9);
	fprintf(stderr, "h2d_copy: %zu bytes host-to-device (pinned, chunks of %zu) on %s: "
			"median %.2f GB/s, best %.2f GB/s over %d runs\n",
			total, chunk, name, total / median / 1e9, total / sorted[0] / 1e9, reps);

	check(drv.cuMemFree(dptr), "cuMemFree");
	check(drv.cuMemFreeHost(host), "cuMemFreeHost");
	return 0;
}
