/*-------------------------------------------------------------------------
 *
 * zero_copy_gather.cu
 *		Whether a kernel that reads a column straight from a file's
 *		registered page-cache pages (zero copy) beats copying the column to
 *		GPU memory first, when it reads only some of its rows: the rows a
 *		filter on another column passed (a benchmark tool, not part of
 *		pg_warp; the question behind fetching a query's other columns late).
 *
 *	   zero_copy_gather FILE [MIB] [-r ROUNDS]
 *
 * The first MIB mebibytes of FILE (default: all of it, rounded down to
 * 4 KiB) are mapped read-only (MAP_SHARED, faulted in once, so the file is
 * in the page cache) and registered with cudaHostRegister (read-only,
 * mapped), then taken as int32 values.  Each way sums the values of the
 * selected rows, a row being selected where a hash of its number falls
 * below the selectivity (rows spread evenly, as a filter on an unsorted
 * column passes them), and is timed with events, best of ROUNDS (default
 * 5):
 *
 *	 copy        the whole range copied to GPU memory (cudaMemcpyAsync from
 *	             the registered mapping), then summed there: what a launch
 *	             does today
 *	 device      the selected rows summed from GPU memory (the copy not
 *	             counted): the kernel's own cost
 *	 zero-copy   the selected rows read from the registered mapping by the
 *	             kernel itself: a warp's loads of its selected rows only
 *
 * for selectivities 1, 0.5, 0.25, 0.1, 0.03, 0.01, 0.003, 0.001.  Prints
 * one line per way and selectivity: ms and the rate in bytes of the range
 * a second (GB/s), and checks that every way's sum is the same.  Exit
 * status 0, 3 without a GPU, 1 when a call fails or sums differ.
 *
 *	   make -C bench zero_copy_gather     (nvcc; sm_80 and sm_90)
 *
 *-------------------------------------------------------------------------
 */
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHECK(call) \
	do { \
		cudaError_t e_ = (call); \
		if (e_ != cudaSuccess) \
		{ \
			fprintf(stderr, "zero_copy_gather: %s: %s\n", #call, cudaGetErrorString(e_)); \
			exit(1); \
		} \
	} while (0)

/* row i is selected where this hash of i is below the selectivity's threshold */
__device__ __forceinline__ uint32_t
row_hash(uint64_t i)
{
	uint64_t	x = i * 0x9E3779B97F4A7C15ull;

	x ^= x >> 29;
	x *= 0xBF58476D1CE4E5B9ull;
	return (uint32_t) (x >> 32);
}

/* the sum of the selected values of v[0 .. n): each thread a row at a time, grid-stride */
__global__ void
k_sum(const int32_t *__restrict__ v, uint64_t n, uint32_t threshold, bool all,
	  unsigned long long *out)
{
	uint64_t	i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;
	long long	sum = 0;

	for (; i < n; i += stride)
		if (all || row_hash(i) < threshold)
			sum += v[i];
	/* the warp's sums, then one atomic a warp */
	for (int d = 16; d > 0; d /= 2)
		sum += __shfl_down_sync(0xffffffffu, sum, d);
	if ((threadIdx.x & 31) == 0)
		atomicAdd(out, (unsigned long long) sum);
}

static double
now_ms(cudaEvent_t a, cudaEvent_t b)
{
	float		ms;

	CHECK(cudaEventElapsedTime(&ms, a, b));
	return ms;
}

int
main(int argc, char **argv)
{
	static const double sels[] = {1, 0.5, 0.25, 0.1, 0.03, 0.01, 0.003, 0.001};
	const char *path = NULL;
	size_t		mib = 0;
	int			rounds = 5,
				ndev = 0,
				sms = 0,
				bad = 0;
	struct stat st;
	size_t		len;
	uint8_t    *map;
	int32_t    *dev_v,
			   *host_v;
	unsigned long long *d_out,
				sum;
	cudaStream_t s;
	cudaEvent_t e0, e1;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "-r") == 0 && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (path == NULL)
			path = argv[i];
		else
			mib = strtoull(argv[i], NULL, 10);
	}
	if (path == NULL || rounds < 1)
	{
		fprintf(stderr, "usage: zero_copy_gather FILE [MIB] [-r ROUNDS]\n");
		return 1;
	}
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
	{
		fprintf(stderr, "zero_copy_gather: no GPU\n");
		return 3;
	}
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	int			fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
	{
		perror(path);
		return 1;
	}
	len = mib > 0 && (mib << 20) < (size_t) st.st_size ? mib << 20 : (size_t) st.st_size;
	len &= ~(size_t) 4095;
	map = (uint8_t *) mmap(NULL, len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (len == 0 || map == MAP_FAILED)
	{
		fprintf(stderr, "zero_copy_gather: cannot map %zu bytes of %s\n", len, path);
		return 1;
	}
	CHECK(cudaHostRegister(map, len, cudaHostRegisterReadOnly | cudaHostRegisterMapped));
	CHECK(cudaHostGetDevicePointer((void **) &host_v, map, 0));
	CHECK(cudaMalloc((void **) &dev_v, len));
	CHECK(cudaMalloc((void **) &d_out, sizeof(*d_out)));
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	printf("file %s, %zu MiB registered (%zu int32 values), %d SMs, best of %d\n",
		   path, len >> 20, len / 4, sms, rounds);

	uint64_t	n = len / 4;
	unsigned	grid = (unsigned) sms * 8,
				block = 256;

	for (size_t k = 0; k < sizeof(sels) / sizeof(sels[0]); k++)
	{
		uint32_t	threshold = (uint32_t) (sels[k] * 4294967295.0);
		bool		all = sels[k] >= 1;
		double		best[3] = {1e30, 1e30, 1e30};
		unsigned long long sums[3] = {0, 0, 0};

		for (int r = 0; r < rounds; r++)
			for (int way = 0; way < 3; way++)
			{
				double		ms;

				CHECK(cudaMemsetAsync(d_out, 0, sizeof(*d_out), s));
				CHECK(cudaEventRecord(e0, s));
				if (way == 0)
					CHECK(cudaMemcpyAsync(dev_v, map, len, cudaMemcpyHostToDevice, s));
				k_sum<<<grid, block, 0, s>>>(way == 2 ? host_v : dev_v, n, threshold, all, d_out);
				CHECK(cudaGetLastError());
				CHECK(cudaEventRecord(e1, s));
				CHECK(cudaMemcpyAsync(&sum, d_out, sizeof(sum), cudaMemcpyDeviceToHost, s));
				CHECK(cudaStreamSynchronize(s));
				ms = now_ms(e0, e1);
				if (ms < best[way])
					best[way] = ms;
				sums[way] = sum;
			}
		for (int way = 0; way < 3; way++)
			printf("selectivity %-6g %-9s %9.3f ms %8.2f GB/s%s\n", sels[k],
				   way == 0 ? "copy" : way == 1 ? "device" : "zero-copy", best[way],
				   (double) len / best[way] / 1e6, sums[way] == sums[0] ? "" : "  SUM DIFFERS");
		bad |= sums[1] != sums[0] || sums[2] != sums[0];
	}
	CHECK(cudaHostUnregister(map));
	munmap(map, len);
	close(fd);
	return bad ? 1 : 0;
}
