/*-------------------------------------------------------------------------
 *
 * kern_warp.cu
 *		The engine's scan kernel: runs an xPU program (xpu_interp.h, per-row
 *		form) over a chunk of Arrow columns in GPU memory and writes the row
 *		mask and the projected values (XpuResult).
 *
 * Launch: kern_warp_exec<<<blocks, threads, smem_len>>>(prog, prog_len,
 * chunk, res, err) with smem_len = prog_len rounded up to 16 when the
 * program fits the block's shared memory (it is copied there once per
 * block), else 0 (it is read from global memory).  prog, chunk (and the
 * column array it points to), the column buffers, res and its arrays, and
 * err are device memory; err is zeroed by the host before the launch.  The
 * host validated prog (xpu_program_validate) and checked the chunk
 * (xpu_chunk_check).  Each thread evaluates rows in a grid-stride loop, so
 * any launch geometry covers the chunk.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_interp.h"
#include "xpu_kernel.h"

XPU_KERNEL void
kern_warp_exec(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_len,
			   const XpuChunk *chunk, XpuResult *res, XpuError *err)
{
	extern __shared__ uint4 kern_warp_smem[];
	const XpuProgram *prog = xpu_block_program(gprog, prog_len, smem_len, kern_warp_smem);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	int64_t		row;
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	for (row = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
		 row < chunk->nrows;
		 row += stride)
	{
		if (err->code != XPU_OK)
			break;
		xpu_row_eval(prog, chunk, row, regs, nulls, res, err);
	}
}
