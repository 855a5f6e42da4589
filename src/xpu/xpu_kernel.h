/*-------------------------------------------------------------------------
 *
 * xpu_kernel.h
 *		What the per-row kernels (kern_warp.cu, kern_join_scan.cu) share:
 *		the program a block reads, copied once into its shared memory
 *		where it fits.  Device code only (nvcc).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_KERNEL_H
#define XPU_KERNEL_H

#include "xpu_program.h"

/*
 * xpu_block_program: the program the block's threads read: gprog copied
 * into the block's shared memory smem when smem_len (the launch's dynamic
 * shared memory, prog_len rounded up to 16, or 0) holds it, else gprog in
 * global memory.  Every thread of the block must call it.
 */
__device__ __forceinline__ const XpuProgram *
xpu_block_program(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_len, uint4 *smem)
{
	const uint4 *src = (const uint4 *) gprog;

	if (smem_len < prog_len || prog_len == 0)
		return gprog;
	for (uint32_t i = threadIdx.x; i < (prog_len + 15) / 16; i += blockDim.x)
		smem[i] = src[i];
	__syncthreads();
	return (const XpuProgram *) smem;
}

#endif							/* XPU_KERNEL_H */
