/*-------------------------------------------------------------------------
 *
 * kern_selftest.cu
 *		The self-test kernel that pgwarp.gpu_selftest() runs on every GPU to
 *		prove that the installed fatbin loads and computes on that device.
 *		xpu_selftest.h states its contract.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_selftest.h"

/*
 * pg_warp_selftest: y[i] = a * x[i] + i over nitems elements, one element per
 * thread in a grid-stride loop, so any launch geometry covers the input.
 */
XPU_KERNEL void
pg_warp_selftest(int64_t nitems, int64_t a, const int64_t *x, int64_t *y,
				 XpuError *err)
{
	int64_t		i;
	int64_t		stride = (int64_t) gridDim.x * blockDim.x;

	if (nitems < 0 || x == NULL || y == NULL)
	{
		if (threadIdx.x == 0 && blockIdx.x == 0)
			XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT,
					  "self-test kernel called with invalid arguments");
		return;
	}
	for (i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
		 i < nitems;
		 i += stride)
		y[i] = a * x[i] + i;
}
