/*-------------------------------------------------------------------------
 *
 * xpu_selftest.h
 *		The contract between pgwarp.gpu_selftest() (engine/device.c) and its
 *		kernel (kern_selftest.cu): the kernel's name, its arguments, and the
 *		input that the host generates and checks.
 *
 * The kernel, with these arguments in this order:
 *
 *		pg_warp_selftest(int64_t nitems, int64_t a, const int64_t *x,
 *						 int64_t *y, XpuError *err)
 *
 * sets y[i] = a * x[i] + i for 0 <= i < nitems.  It reports bad arguments
 * (nitems < 0, a null pointer) through *err.  Inputs are chosen so that no
 * product overflows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_SELFTEST_H
#define XPU_SELFTEST_H

#include "xpu_common.h"

#define XPU_SELFTEST_KERNEL		"pg_warp_selftest"
#define XPU_SELFTEST_NITEMS		(1 << 20)
#define XPU_SELFTEST_BLOCK_SIZE	256
#define XPU_SELFTEST_MULTIPLIER	3

/*
 * xpu_selftest_input: the value of x[i]; a pseudo-random pattern in
 * [-500000, 500001] so that a wrong index or a stale buffer shows.
 */
XPU_HOST_DEVICE int64_t
xpu_selftest_input(int64_t i)
{
	return (i * 7919) % 1000003 - 500000;
}

#endif							/* XPU_SELFTEST_H */
