/*-------------------------------------------------------------------------
 *
 * kern_pack.cu
 *		kern_unpack: the values of integer buffers that crossed the bus
 *		packed (xpu_pack.h; service/pack.c packs them) written back where
 *		the chunk's kernel reads them.  The service launches it on a slot's
 *		stream after the slot's copies and before its kernel
 *		(service/gpu_input.c, gagg_copy_slot).
 *
 * Grid: one row of XPU_UNPACK_SPLIT blocks per frame; each block takes a
 * contiguous share of the frame's values, its threads every
 * blockDim.x-th value of it (neighbouring threads read neighbouring bytes
 * and write neighbouring values).  A frame with n 0 has nothing to do.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_pack.h"

XPU_KERNEL void
kern_unpack(const XpuPackFrame *frames, uint32_t n_frames)
{
	const XpuPackFrame *f;
	uint32_t	share,
				from,
				to;

	if (blockIdx.x >= n_frames)
		return;
	f = &frames[blockIdx.x];
	share = (f->n + gridDim.y - 1) / gridDim.y;
	from = blockIdx.y * share;
	to = from + share < f->n ? from + share : f->n;
	xpu_unpack_range(f, from + threadIdx.x, to, blockDim.x);
}
