/*-------------------------------------------------------------------------
 *
 * cuda_driver.h
 *		The few types and constants of the CUDA driver API that pg_warp's
 *		host code uses.  The service (service/gpu.c) loads the driver with
 *		dlopen at run time and is never linked with it, so it includes no
 *		cuda.h and takes these declarations from here (as does test/gpu's
 *		stand-in driver).  Values as in the driver's cuda.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CUDA_DRIVER_H
#define CUDA_DRIVER_H

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;

#define CUDA_SUCCESS							0
#define CUDA_ERROR_STUB_LIBRARY					34
#define CUDA_ERROR_NO_DEVICE					100
#define CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT	16
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR	75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR	76
#define CU_MEMHOSTREGISTER_PORTABLE			0x01
#define CU_MEMHOSTREGISTER_READ_ONLY			0x08

/* cuMemcpyBatchAsync's (CUDA 12.8; the _v2 ABI of CUDA 13) attributes of a copy */
#define CU_MEM_LOCATION_TYPE_DEVICE				0x1
#define CU_MEM_LOCATION_TYPE_HOST				0x2
#define CU_MEMCPY_SRC_ACCESS_ORDER_STREAM		0x1

typedef struct CUmemLocation
{
	int			type;			/* CU_MEM_LOCATION_TYPE_* */
	int			id;				/* a device ordinal for a device */
} CUmemLocation;

typedef struct CUmemcpyAttributes
{
	int			srcAccessOrder; /* CU_MEMCPY_SRC_ACCESS_ORDER_* */
	CUmemLocation srcLocHint;	/* hints: only for managed memory */
	CUmemLocation dstLocHint;
	unsigned int flags;
} CUmemcpyAttributes;

/* the driver's shared library, as dlopen names it */
#define CUDA_LIBRARY_NAME		"libcuda.so.1"

#endif							/* CUDA_DRIVER_H */
