/*
 * cuda_testlib.h
 *		What the CUDA checks of test/gpu share: a runtime call that must
 *		succeed (else a TAP "Bail out!") and a device copy of host memory.
 *		Device memory of a check is left to process exit.
 */
#ifndef CUDA_TESTLIB_H
#define CUDA_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>

#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	printf("Bail out! %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

/* a device copy of n bytes of host memory */
static inline void *
dcopy(const void *p, size_t n)
{
	void	   *d;

	CUDA_OK(cudaMalloc(&d, n ? n : 1));
	if (n)
		CUDA_OK(cudaMemcpy(d, p, n, cudaMemcpyHostToDevice));
	return d;
}

#endif							/* CUDA_TESTLIB_H */
