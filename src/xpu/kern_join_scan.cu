/*-------------------------------------------------------------------------
 *
 * kern_join_scan.cu
 *		GpuJoin's projection run on the GPU (xpu_join_scan.h): LOAD, QUAL
 *		and the JOIN stage of every row of a chunk, writing whether it
 *		passed and the inner row each probe found; the service's workers
 *		compute the outputs of the passing rows on the host.
 *
 * Launch: kern_join_scan_exec<<<blocks, threads, smem_len>>>(prog,
 * prog_len, smem_len, chunk, mask, rows, err, counts) as kern_warp_exec's
 * (the program in shared memory where it fits, a grid-stride loop over the
 * chunk's rows); mask has chunk->nrows bytes, rows n_probes * nrows
 * int32 (xpu_join_scan_probes); err zeroed by the host before the launch;
 * counts NULL, or XPU_JOIN_COUNT_DEPTHS counters that the rows entering
 * each join depth are added to (EXPLAIN ANALYZE's rows in: per thread, then
 * one atomic a block and depth).
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_join_scan.h"
#include "xpu_kernel.h"

XPU_KERNEL void
kern_join_scan_exec(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_len,
					const XpuChunk *chunk, uint8_t *mask, int32_t *rows, XpuError *err,
					unsigned long long *counts)
{
	extern __shared__ uint4 kern_join_scan_smem[];
	__shared__ unsigned long long block_counts[XPU_JOIN_COUNT_DEPTHS];
	const XpuProgram *prog = xpu_block_program(gprog, prog_len, smem_len, kern_join_scan_smem);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS];
	uint64_t   *probesp = counts != NULL && chunk->n_joins > 0 ? probes : NULL;
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		probes[d] = 0;
	for (int d = threadIdx.x; d < XPU_JOIN_COUNT_DEPTHS; d += blockDim.x)
		block_counts[d] = 0;
	/* a grid-stride loop: any launch geometry covers the chunk */
	for (int64_t row = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
		 row < chunk->nrows && err->code == XPU_OK; row += stride)
		xpu_join_scan_row(prog, chunk, row, regs, nulls, mask, rows, chunk->nrows, probesp, err);
	if (counts == NULL)
		return;
	__syncthreads();
	for (int d = 0; probesp != NULL && d < chunk->n_joins && d < XPU_JOIN_COUNT_DEPTHS; d++)
		if (probes[d] != 0)
			atomicAdd(&block_counts[d], (unsigned long long) probes[d]);
	__syncthreads();
	for (int d = threadIdx.x; d < chunk->n_joins && d < XPU_JOIN_COUNT_DEPTHS; d += blockDim.x)
		if (block_counts[d] != 0)
			atomicAdd(&counts[d], block_counts[d]);
}
