/*-------------------------------------------------------------------------
 *
 * kern_all.cu
 *		The one translation unit that nvcc compiles into pg_warp.fatbin
 *		(see the Makefile): it includes every kern_*.cu, so all kernels
 *		live in one module that the host loads once per device.
 *
 *-------------------------------------------------------------------------
 */
#include "kern_selftest.cu"
#include "kern_warp.cu"
#include "kern_agg.cu"
#include "kern_heap.cu"
#include "kern_join_scan.cu"
