/*-------------------------------------------------------------------------
 *
 * xpu_common.h
 *		Definitions shared by the GPU kernels (nvcc), the CPU engine (C or
 *		C++) and the extension (C): qualifier macros that let one header
 *		compile under all three, and the plain-data structure in which device
 *		code reports an error back to the host.
 *
 * Rules for every xpu header: plain data and small inline functions only;
 * never include postgres.h or any PostgreSQL header (device code cannot
 * compile them); fixed-width types from <stdint.h> so a structure has the
 * same layout on the host and on the device.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_COMMON_H
#define XPU_COMMON_H

#include <stdint.h>

/*
 * Qualifier macros.
 *
 *	XPU_DEVICE			a function that runs in device code only (the CPU engine
 *						compiles it as an ordinary static inline function)
 *	XPU_HOST_DEVICE		a function compiled for both the host and the device
 *	XPU_KERNEL			a kernel entry point: extern "C" so that the host finds
 *						it in the fatbin by its plain name (nvcc only)
 */
#ifdef __CUDACC__
#define XPU_DEVICE			__device__ __forceinline__
#define XPU_HOST_DEVICE		__host__ __device__ __forceinline__
#define XPU_KERNEL			extern "C" __global__
#else
#define XPU_DEVICE			static inline
#define XPU_HOST_DEVICE		static inline
#endif

/* XPU_UNUSED: a parameter or variable that one of the compilations ignores */
#define XPU_UNUSED(x)		((void) (x))

/*
 * Error codes that device code reports.  The host turns each into a
 * SQLSTATE (engine/device.c, engine/codegen.c); a new code needs a case
 * there.  The SQLSTATE each code maps to is given beside it.
 */
typedef enum XpuErrorCode
{
	XPU_OK = 0,
	XPU_ERR_INTERNAL = 1,		/* XX000: a bug, cannot-happen state in device code */
	XPU_ERR_INVALID_ARGUMENT = 2,	/* XX000: the host passed a kernel bad arguments */
	XPU_ERR_OUT_OF_RANGE = 3,	/* 22003 numeric_value_out_of_range */
	XPU_ERR_DIVISION_BY_ZERO = 4,	/* 22012 division_by_zero */
	XPU_ERR_DATETIME_OUT_OF_RANGE = 5,	/* 22008 datetime_field_overflow */
	XPU_ERR_SUBSTRING = 6,		/* 22011 substring_error */
	XPU_ERR_BAD_PROGRAM = 7,	/* XX000: the validator refused a program */
	XPU_ERR_FALLBACK = 8		/* not an error: re-evaluate the rows in PostgreSQL */
} XpuErrorCode;

#define XPU_ERROR_FILE_LEN		64
#define XPU_ERROR_MESSAGE_LEN	128

/*
 * XpuError: the first error that device code raised during one kernel run.
 *
 * The host zeroes it before the launch and reads it back afterwards; code
 * XPU_OK means no error.  Only the first error is kept: the thread that
 * changes code from XPU_OK owns the other fields.  file holds the base name
 * of the source file, message a lower-case sentence in PostgreSQL style; both
 * are always NUL-terminated.
 */
typedef struct XpuError
{
	int32_t		code;			/* XpuErrorCode */
	int32_t		line;			/* __LINE__ where the error was raised */
	char		file[XPU_ERROR_FILE_LEN];
	char		message[XPU_ERROR_MESSAGE_LEN];
} XpuError;

/*
 * xpu_copy_cstring: copy the NUL-terminated string src into dst of size
 * dstlen (> 0), truncating it; dst is always NUL-terminated.
 */
XPU_HOST_DEVICE void
xpu_copy_cstring(char *dst, const char *src, int32_t dstlen)
{
	int32_t		i;

	for (i = 0; i < dstlen - 1 && src[i] != '\0'; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/*
 * xpu_set_error: record an error in *err unless one is recorded already.
 *
 * Use it through XPU_ERROR() so that file and line are filled in.  On the
 * device several threads may fail at once; an atomic compare-and-swap on code
 * elects the one whose description is kept.  The caller goes on (and should
 * return soon): the kernel's results are discarded by the host.
 */
XPU_HOST_DEVICE void
xpu_set_error(XpuError *err, int32_t code, const char *file, int32_t line,
			  const char *message)
{
	const char *base = file;
	const char *p;

#ifdef __CUDA_ARCH__
	if (atomicCAS((int *) &err->code, (int) XPU_OK, (int) code) != XPU_OK)
		return;
#else
	if (err->code != XPU_OK)
		return;
	err->code = code;
#endif
	for (p = file; *p != '\0'; p++)
	{
		if (*p == '/')
			base = p + 1;
	}
	err->line = line;
	xpu_copy_cstring(err->file, base, XPU_ERROR_FILE_LEN);
	xpu_copy_cstring(err->message, message, XPU_ERROR_MESSAGE_LEN);
}

#define XPU_ERROR(err, code, message) \
	xpu_set_error((err), (code), __FILE__, __LINE__, (message))

#endif							/* XPU_COMMON_H */
