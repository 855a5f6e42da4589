/*-------------------------------------------------------------------------
 *
 * kern_join_scan.cu
 *		GpuJoin's projection run on the GPU (xpu_join_scan.h): LOAD, QUAL
 *		and the JOIN stage of every row of a chunk, writing whether it
 *		passed and the inner row each probe found; the service's workers
 *		compute the outputs of the passing rows on the host.
 *
 * Launch: kern_join_scan_exec<<<blocks, threads, smem_len>>>(prog,
 * prog_len, smem_len, chunk, mask, rows, err) as kern_warp_exec's (the
 * program in shared memory where it fits, a grid-stride loop over the
 * chunk's rows); mask has chunk->nrows bytes, rows n_probes * nrows
 * int32 (xpu_join_scan_probes); err zeroed by the host before the launch.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_join_scan.h"
#include "xpu_kernel.h"

XPU_KERNEL void
kern_join_scan_exec(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_len,
					const XpuChunk *chunk, uint8_t *mask, int32_t *rows, XpuError *err)
{
	extern __shared__ uint4 kern_join_scan_smem[];
	const XpuProgram *prog = xpu_block_program(gprog, prog_len, smem_len, kern_join_scan_smem);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	/* a grid-stride loop: any launch geometry covers the chunk */
	for (int64_t row = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
		 row < chunk->nrows && err->code == XPU_OK; row += stride)
		xpu_join_scan_row(prog, chunk, row, regs, nulls, mask, rows, chunk->nrows, err);
}
