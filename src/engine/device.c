/*-------------------------------------------------------------------------
 *
 * device.c
 *		Access to NVIDIA GPUs through the CUDA driver API, loaded at run
 *		time: GPU discovery (pgwarp.gpu_devices()) and the self-test that
 *		runs the installed fatbin on every GPU (pgwarp.gpu_selftest()).
 *
 * The extension is never linked with libcuda: it must load on machines that
 * have no NVIDIA driver, where it uses its CPU engine.  The first function
 * that needs the driver dlopen()s libcuda.so.1, resolves the entry points
 * listed in cuda_symbols[] and calls cuInit().  That happens lazily in a
 * backend, never in the postmaster: a process that forks after cuInit()
 * leaves its children with an unusable driver state.
 *
 * The driver's outcome is one of three, kept for the life of the backend
 * (cuInit's result is sticky in the driver as well):
 *
 *	ready	the driver works and reports at least zero devices;
 *	absent	no GPU: libcuda.so.1 is missing, is the CUDA toolkit's stub, or
 *			reports no device.  Not an error: pg_warp uses its CPU engine;
 *	failed	a driver is installed but does not work (missing entry point,
 *			cuInit() failure such as a driver/kernel-module mismatch).
 *			gpu_devices() reports it as a WARNING and returns no rows (the
 *			CPU engine still works); gpu_selftest() raises an ERROR, since a
 *			self-test exists to expose exactly this.
 *
 * No CUDA header is included: the few types and constants used are declared
 * below with the values of the driver ABI, so the extension builds where the
 * CUDA toolkit is not installed.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <dlfcn.h>
#include <sys/stat.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"

#include "pg_warp.h"
#include "xpu/cuda_driver.h"
#include "xpu/xpu_selftest.h"

/* pg_warp.fatbin_path: the GPU code to load; "$libdir" is expanded */
char	   *pg_warp_fatbin_path = NULL;

/* --- the CUDA driver's entry points (types: xpu/cuda_driver.h) --- */

/*
 * Entry points of the driver.  The exported names carry the ABI version
 * (_v2) where the driver has more than one; cuda.h maps the plain names onto
 * them, which we cannot rely on without the header.
 */
typedef struct CudaDriver
{
	CUresult	(*cuInit) (unsigned int flags);
	CUresult	(*cuGetErrorName) (CUresult error, const char **str);
	CUresult	(*cuGetErrorString) (CUresult error, const char **str);
	CUresult	(*cuDeviceGetCount) (int *count);
	CUresult	(*cuDeviceGet) (CUdevice *device, int ordinal);
	CUresult	(*cuDeviceGetName) (char *name, int len, CUdevice dev);
	CUresult	(*cuDeviceTotalMem) (size_t *bytes, CUdevice dev);
	CUresult	(*cuDeviceGetAttribute) (int *value, int attrib, CUdevice dev);
	CUresult	(*cuDeviceGetPCIBusId) (char *busid, int len, CUdevice dev);
	CUresult	(*cuDevicePrimaryCtxRetain) (CUcontext *ctx, CUdevice dev);
	CUresult	(*cuDevicePrimaryCtxRelease) (CUdevice dev);
	CUresult	(*cuCtxPushCurrent) (CUcontext ctx);
	CUresult	(*cuCtxPopCurrent) (CUcontext *ctx);
	CUresult	(*cuCtxSynchronize) (void);
	CUresult	(*cuModuleLoadData) (CUmodule *module, const void *image);
	CUresult	(*cuModuleUnload) (CUmodule module);
	CUresult	(*cuModuleGetFunction) (CUfunction *func, CUmodule module,
										const char *name);
	CUresult	(*cuMemAlloc) (CUdeviceptr *dptr, size_t bytes);
	CUresult	(*cuMemFree) (CUdeviceptr dptr);
	CUresult	(*cuMemsetD8) (CUdeviceptr dptr, unsigned char value,
							   size_t count);
	CUresult	(*cuMemcpyHtoD) (CUdeviceptr dst, const void *src,
								 size_t bytes);
	CUresult	(*cuMemcpyDtoH) (void *dst, CUdeviceptr src, size_t bytes);
	CUresult	(*cuLaunchKernel) (CUfunction func,
								   unsigned int gridx, unsigned int gridy,
								   unsigned int gridz,
								   unsigned int blockx, unsigned int blocky,
								   unsigned int blockz,
								   unsigned int shmem_bytes, CUstream stream,
								   void **params, void **extra);
} CudaDriver;

typedef struct CudaSymbol
{
	const char *symbol;			/* exported name in libcuda.so.1 */
	size_t		offset;			/* where its address goes in CudaDriver */
} CudaSymbol;

#define CUDA_SYMBOL(field, symbol) { symbol, offsetof(CudaDriver, field) }

static const CudaSymbol cuda_symbols[] = {
	CUDA_SYMBOL(cuInit, "cuInit"),
	CUDA_SYMBOL(cuGetErrorName, "cuGetErrorName"),
	CUDA_SYMBOL(cuGetErrorString, "cuGetErrorString"),
	CUDA_SYMBOL(cuDeviceGetCount, "cuDeviceGetCount"),
	CUDA_SYMBOL(cuDeviceGet, "cuDeviceGet"),
	CUDA_SYMBOL(cuDeviceGetName, "cuDeviceGetName"),
	CUDA_SYMBOL(cuDeviceTotalMem, "cuDeviceTotalMem_v2"),
	CUDA_SYMBOL(cuDeviceGetAttribute, "cuDeviceGetAttribute"),
	CUDA_SYMBOL(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId"),
	CUDA_SYMBOL(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
	CUDA_SYMBOL(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"),
	CUDA_SYMBOL(cuCtxPushCurrent, "cuCtxPushCurrent_v2"),
	CUDA_SYMBOL(cuCtxPopCurrent, "cuCtxPopCurrent_v2"),
	CUDA_SYMBOL(cuCtxSynchronize, "cuCtxSynchronize"),
	CUDA_SYMBOL(cuModuleLoadData, "cuModuleLoadData"),
	CUDA_SYMBOL(cuModuleUnload, "cuModuleUnload"),
	CUDA_SYMBOL(cuModuleGetFunction, "cuModuleGetFunction"),
	CUDA_SYMBOL(cuMemAlloc, "cuMemAlloc_v2"),
	CUDA_SYMBOL(cuMemFree, "cuMemFree_v2"),
	CUDA_SYMBOL(cuMemsetD8, "cuMemsetD8_v2"),
	CUDA_SYMBOL(cuMemcpyHtoD, "cuMemcpyHtoD_v2"),
	CUDA_SYMBOL(cuMemcpyDtoH, "cuMemcpyDtoH_v2"),
	CUDA_SYMBOL(cuLaunchKernel, "cuLaunchKernel"),
};

typedef enum CudaState
{
	CUDA_STATE_UNKNOWN,			/* not tried yet in this backend */
	CUDA_STATE_READY,
	CUDA_STATE_ABSENT,
	CUDA_STATE_FAILED
} CudaState;

static CudaDriver cuda;
static CudaState cuda_state = CUDA_STATE_UNKNOWN;

/* why the state is ABSENT or FAILED, for errdetail */
static char cuda_state_detail[512];

/*
 * Resources of the self-test on one device; whatever is set is released by
 * selftest_release(), on success and on error alike.
 */
typedef struct SelftestResources
{
	CUdevice	device;
	bool		ctx_retained;	/* primary context retained */
	bool		ctx_pushed;		/* ... and current in this thread */
	CUmodule	module;
	CUdeviceptr dev_x;
	CUdeviceptr dev_y;
	CUdeviceptr dev_err;
} SelftestResources;

/* what errcontext says while a device is being tested */
typedef struct SelftestContext
{
	int			devindex;
	const char *name;
} SelftestContext;

/*
 * pg_warp_gpu_init
 *		Called from _PG_init: defines the GUCs of this file.  It must not touch
 *		the driver, since _PG_init also runs in the postmaster.
 */
void
pg_warp_gpu_init(void)
{
	DefineCustomStringVariable("pg_warp.fatbin_path",
							   "Path of the GPU code (fatbin) that pg_warp loads.",
							   "A leading \"$libdir\" stands for PostgreSQL's package library directory.",
							   &pg_warp_fatbin_path,
							   "$libdir/pg_warp.fatbin",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
}

/*
 * cuda_error_text
 *		"CUDA_ERROR_NAME: description" for a driver result code, usable for
 *		errdetail.  Falls back to the number when the driver cannot name it
 *		(or when the driver is not loaded).  Returns a palloc'd string.
 */
static char *
cuda_error_text(CUresult rc)
{
	const char *name = NULL;
	const char *text = NULL;

	if (cuda.cuGetErrorName == NULL ||
		cuda.cuGetErrorName(rc, &name) != CUDA_SUCCESS || name == NULL)
		return psprintf("CUDA error %d", rc);
	if (cuda.cuGetErrorString == NULL ||
		cuda.cuGetErrorString(rc, &text) != CUDA_SUCCESS || text == NULL)
		return pstrdup(name);
	return psprintf("%s: %s", name, text);
}

/*
 * cuda_check
 *		Raises an ERROR if a driver call failed.  what names the call as the
 *		message shows it, e.g. "cuMemAlloc".
 */
static void
cuda_check(CUresult rc, const char *what)
{
	if (rc != CUDA_SUCCESS)
		ereport(ERROR,
				(errcode(ERRCODE_SYSTEM_ERROR),
				 errmsg("CUDA driver call %s() failed", what),
				 errdetail("%s", cuda_error_text(rc))));
}

/*
 * cuda_open
 *		Loads and initialises the CUDA driver on first use in this backend and
 *		returns the outcome, which is kept (see the file header).  Never
 *		raises an error for a missing or broken driver: the callers decide how
 *		to report it, with cuda_state_detail as the reason.
 */
static CudaState
cuda_open(void)
{
	void	   *handle;
	CUresult	rc;
	int			i;

	if (cuda_state != CUDA_STATE_UNKNOWN)
		return cuda_state;

	/* the postmaster's children would inherit a driver they cannot use */
	if (IsPostmasterEnvironment && !IsUnderPostmaster)
		elog(ERROR, "the CUDA driver must not be loaded by the postmaster");

	handle = dlopen(CUDA_LIBRARY_NAME, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL)
	{
		const char *why = dlerror();

		snprintf(cuda_state_detail, sizeof(cuda_state_detail),
				 "The CUDA driver library could not be loaded: %s",
				 why ? why : CUDA_LIBRARY_NAME);
		cuda_state = CUDA_STATE_ABSENT;
		return cuda_state;
	}

	for (i = 0; i < lengthof(cuda_symbols); i++)
	{
		void	   *addr = dlsym(handle, cuda_symbols[i].symbol);

		if (addr == NULL)
		{
			snprintf(cuda_state_detail, sizeof(cuda_state_detail),
					 "The CUDA driver library %s has no symbol %s; the driver is too old or damaged.",
					 CUDA_LIBRARY_NAME, cuda_symbols[i].symbol);
			memset(&cuda, 0, sizeof(cuda));
			cuda_state = CUDA_STATE_FAILED;
			return cuda_state;
		}
		/* function pointers and void * have one representation on Linux */
		memcpy((char *) &cuda + cuda_symbols[i].offset, &addr, sizeof(addr));
	}

	rc = cuda.cuInit(0);
	if (rc == CUDA_SUCCESS)
		cuda_state = CUDA_STATE_READY;
	else
	{
		char	   *text = cuda_error_text(rc);

		snprintf(cuda_state_detail, sizeof(cuda_state_detail),
				 "cuInit() failed: %s", text);
		pfree(text);
		if (rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY)
			cuda_state = CUDA_STATE_ABSENT;
		else
			cuda_state = CUDA_STATE_FAILED;
	}
	/* the library stays loaded: unloading a CUDA driver is not supported */
	return cuda_state;
}

/*
 * cuda_device_count
 *		Number of GPUs the driver reports; 0 when the driver is absent.  A
 *		failed driver is reported with the given elevel (WARNING: then 0 is
 *		returned; ERROR: no return).
 */
static int
cuda_device_count(int elevel)
{
	int			count = 0;

	switch (cuda_open())
	{
		case CUDA_STATE_READY:
			cuda_check(cuda.cuDeviceGetCount(&count), "cuDeviceGetCount");
			return count;
		case CUDA_STATE_ABSENT:
			return 0;
		case CUDA_STATE_FAILED:
			ereport(elevel,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("could not initialize the CUDA driver"),
					 errdetail("%s", cuda_state_detail),
					 errhint("pg_warp uses its CPU engine until the NVIDIA driver works.")));
			return 0;
		case CUDA_STATE_UNKNOWN:
			break;
	}
	elog(ERROR, "unexpected CUDA driver state %d", (int) cuda_state);
	return 0;					/* keep compiler quiet */
}

/*
 * cuda_device_name
 *		The marketing name of a device ("NVIDIA H100 80GB HBM3"), palloc'd.
 */
static char *
cuda_device_name(CUdevice dev)
{
	char		name[256];

	cuda_check(cuda.cuDeviceGetName(name, sizeof(name), dev),
			   "cuDeviceGetName");
	name[sizeof(name) - 1] = '\0';
	return pstrdup(name);
}

/*
 * pg_warp_report_xpu_error
 *		Raises the error that device code recorded in *err (see XpuError);
 *		returns if it recorded none.  The error code selects the SQLSTATE;
 *		the source position goes to errcontext.
 */
void
pg_warp_report_xpu_error(const XpuError *err)
{
	int			sqlstate;
	char		file[XPU_ERROR_FILE_LEN];
	char		message[XPU_ERROR_MESSAGE_LEN];

	if (err->code == XPU_OK)
		return;

	/*
	 * No default case: -Wswitch then flags a new XpuErrorCode without a
	 * SQLSTATE.  A code the host does not know (a damaged buffer) stays an
	 * internal error.
	 */
	sqlstate = ERRCODE_INTERNAL_ERROR;
	switch ((XpuErrorCode) err->code)
	{
		case XPU_OK:
			break;
		case XPU_ERR_INTERNAL:
		case XPU_ERR_INVALID_ARGUMENT:
		case XPU_ERR_BAD_PROGRAM:
			/* bugs in pg_warp, not in the query */
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
		case XPU_ERR_FALLBACK:
			/* the caller re-evaluates the rows in PostgreSQL: never reported */
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
		case XPU_ERR_OUT_OF_RANGE:
			sqlstate = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
			break;
		case XPU_ERR_DIVISION_BY_ZERO:
			sqlstate = ERRCODE_DIVISION_BY_ZERO;
			break;
		case XPU_ERR_DATETIME_OUT_OF_RANGE:
			sqlstate = ERRCODE_DATETIME_VALUE_OUT_OF_RANGE;
			break;
		case XPU_ERR_SUBSTRING:
			sqlstate = ERRCODE_SUBSTRING_ERROR;
			break;
	}
	/* the buffers came from the device: do not trust their terminators */
	memcpy(file, err->file, sizeof(file));
	file[sizeof(file) - 1] = '\0';
	memcpy(message, err->message, sizeof(message));
	message[sizeof(message) - 1] = '\0';

	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg_internal("%s", message),
			 errcontext("GPU code at %s:%d (error code %d)",
						file, err->line, err->code)));
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_devices);

/*
 * pgwarp.gpu_devices()
 *		One row per GPU that the CUDA driver reports: index, name, memory,
 *		multiprocessors, compute capability ("9.0") and PCI bus id
 *		("0000:1b:00.0", lower case).  No rows where there is no driver or no
 *		device; a WARNING and no rows where the driver is installed but does
 *		not work.  Creates no CUDA context, so it is cheap.
 */
Datum
pg_warp_gpu_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			ndevices;
	int			i;

	InitMaterializedSRF(fcinfo, 0);

	ndevices = cuda_device_count(WARNING);
	for (i = 0; i < ndevices; i++)
	{
		CUdevice	dev;
		size_t		total_memory;
		int			nsm;
		int			major;
		int			minor;
		char		busid[64];
		char	   *c;
		Datum		values[6];
		bool		nulls[6] = {false};

		cuda_check(cuda.cuDeviceGet(&dev, i), "cuDeviceGet");
		cuda_check(cuda.cuDeviceTotalMem(&total_memory, dev),
				   "cuDeviceTotalMem");
		cuda_check(cuda.cuDeviceGetAttribute(&nsm,
											 CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
											 dev),
				   "cuDeviceGetAttribute");
		cuda_check(cuda.cuDeviceGetAttribute(&major,
											 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
											 dev),
				   "cuDeviceGetAttribute");
		cuda_check(cuda.cuDeviceGetAttribute(&minor,
											 CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
											 dev),
				   "cuDeviceGetAttribute");
		cuda_check(cuda.cuDeviceGetPCIBusId(busid, sizeof(busid), dev),
				   "cuDeviceGetPCIBusId");
		busid[sizeof(busid) - 1] = '\0';
		for (c = busid; *c != '\0'; c++)
			*c = tolower((unsigned char) *c);

		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(cuda_device_name(dev));
		values[2] = Int64GetDatum((int64) total_memory);
		values[3] = Int32GetDatum(nsm);
		values[4] = CStringGetTextDatum(psprintf("%d.%d", major, minor));
		values[5] = CStringGetTextDatum(busid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
	}
	return (Datum) 0;
}

/*
 * fatbin_path
 *		pg_warp.fatbin_path with a leading "$libdir" replaced by the package
 *		library directory; palloc'd.
 */
static char *
fatbin_path(void)
{
	const char *path = pg_warp_fatbin_path;
	size_t		len = strlen("$libdir");

	if (strncmp(path, "$libdir", len) == 0 &&
		(path[len] == '/' || path[len] == '\0'))
		return psprintf("%s%s", pkglib_path, path + len);
	return pstrdup(path);
}

/*
 * read_fatbin
 *		Reads the whole GPU code file into a palloc'd buffer, followed by a
 *		NUL byte (cuModuleLoadData also accepts PTX text, which it reads up to
 *		a NUL).  Raises a user-facing ERROR if the file is missing, unreadable
 *		or empty.
 */
static char *
read_fatbin(const char *path, size_t *length)
{
	FILE	   *file;
	struct stat st;
	char	   *image;

	file = AllocateFile(path, PG_BINARY_R);
	if (file == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open GPU code file \"%s\": %m", path),
				 errhint("Install pg_warp from a build made where nvcc is on the PATH, or point pg_warp.fatbin_path to its pg_warp.fatbin.")));
	if (fstat(fileno(file), &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat GPU code file \"%s\": %m", path)));
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 ||
		st.st_size >= (off_t) MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("GPU code file \"%s\" is not a regular file of a valid size",
						path)));

	image = palloc(st.st_size + 1);
	if (fread(image, 1, st.st_size, file) != (size_t) st.st_size)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read GPU code file \"%s\": %m", path)));
	image[st.st_size] = '\0';
	FreeFile(file);

	*length = st.st_size;
	return image;
}

/*
 * selftest_release
 *		Releases whatever the self-test holds on one device, in reverse order
 *		of acquisition.  With report, a failure to release raises an ERROR
 *		(success path); without, failures are ignored, since an error is
 *		already propagating and the driver may be in a failed state.
 */
static void
selftest_release(SelftestResources *res, bool report)
{
	CUresult	rc;
	CUresult	first = CUDA_SUCCESS;
	const char *first_what = NULL;

#define SELFTEST_NOTE(call, what) \
	do { \
		rc = (call); \
		if (rc != CUDA_SUCCESS && first == CUDA_SUCCESS) \
		{ \
			first = rc; \
			first_what = (what); \
		} \
	} while (0)

	if (res->ctx_pushed)
	{
		if (res->dev_err != 0)
			SELFTEST_NOTE(cuda.cuMemFree(res->dev_err), "cuMemFree");
		if (res->dev_y != 0)
			SELFTEST_NOTE(cuda.cuMemFree(res->dev_y), "cuMemFree");
		if (res->dev_x != 0)
			SELFTEST_NOTE(cuda.cuMemFree(res->dev_x), "cuMemFree");
		if (res->module != NULL)
			SELFTEST_NOTE(cuda.cuModuleUnload(res->module), "cuModuleUnload");
		{
			CUcontext	popped;

			SELFTEST_NOTE(cuda.cuCtxPopCurrent(&popped), "cuCtxPopCurrent");
		}
	}
	if (res->ctx_retained)
		SELFTEST_NOTE(cuda.cuDevicePrimaryCtxRelease(res->device),
					  "cuDevicePrimaryCtxRelease");
#undef SELFTEST_NOTE

	res->dev_err = res->dev_y = res->dev_x = 0;
	res->module = NULL;
	res->ctx_pushed = res->ctx_retained = false;

	if (report && first != CUDA_SUCCESS)
		cuda_check(first, first_what);
}

/*
 * selftest_run
 *		Runs the self-test kernel on one device: loads the module, copies
 *		XPU_SELFTEST_NITEMS inputs to the device, launches, copies the results
 *		back and checks every element on the host.  Returns "ok" or a
 *		description of the first wrong element.  Driver failures and device
 *		errors raise an ERROR; everything acquired is recorded in *res for
 *		the caller to release.
 */
static char *
selftest_run(SelftestResources *res, const char *image)
{
	const int64 nitems = XPU_SELFTEST_NITEMS;
	const size_t nbytes = nitems * sizeof(int64_t);
	int64_t		kn_nitems = nitems;
	int64_t		kn_a = XPU_SELFTEST_MULTIPLIER;
	void	   *params[5];
	unsigned int nblocks;
	CUcontext	ctx;
	CUfunction	func;
	XpuError	err;
	int64_t    *x;
	int64_t    *y;
	int64		i;
	int64		nwrong = 0;
	int64		first_wrong = -1;
	char	   *result;

	Assert(cuda_state == CUDA_STATE_READY);
	Assert(!res->ctx_retained && !res->ctx_pushed && res->module == NULL);

	cuda_check(cuda.cuDevicePrimaryCtxRetain(&ctx, res->device),
			   "cuDevicePrimaryCtxRetain");
	res->ctx_retained = true;
	cuda_check(cuda.cuCtxPushCurrent(ctx), "cuCtxPushCurrent");
	res->ctx_pushed = true;

	cuda_check(cuda.cuModuleLoadData(&res->module, image), "cuModuleLoadData");
	cuda_check(cuda.cuModuleGetFunction(&func, res->module,
										XPU_SELFTEST_KERNEL),
			   "cuModuleGetFunction");

	x = palloc(nbytes);
	y = palloc(nbytes);
	for (i = 0; i < nitems; i++)
		x[i] = xpu_selftest_input(i);
	memset(&err, 0, sizeof(err));

	cuda_check(cuda.cuMemAlloc(&res->dev_x, nbytes), "cuMemAlloc");
	cuda_check(cuda.cuMemAlloc(&res->dev_y, nbytes), "cuMemAlloc");
	cuda_check(cuda.cuMemAlloc(&res->dev_err, sizeof(XpuError)), "cuMemAlloc");
	cuda_check(cuda.cuMemcpyHtoD(res->dev_x, x, nbytes), "cuMemcpyHtoD");
	cuda_check(cuda.cuMemcpyHtoD(res->dev_err, &err, sizeof(err)),
			   "cuMemcpyHtoD");
	/* poison the output, so that an element the kernel skips cannot pass */
	cuda_check(cuda.cuMemsetD8(res->dev_y, 0xA5, nbytes), "cuMemsetD8");

	params[0] = &kn_nitems;
	params[1] = &kn_a;
	params[2] = &res->dev_x;
	params[3] = &res->dev_y;
	params[4] = &res->dev_err;
	nblocks = (nitems + XPU_SELFTEST_BLOCK_SIZE - 1) / XPU_SELFTEST_BLOCK_SIZE;
	cuda_check(cuda.cuLaunchKernel(func,
								   nblocks, 1, 1,
								   XPU_SELFTEST_BLOCK_SIZE, 1, 1,
								   0, NULL, params, NULL),
			   "cuLaunchKernel");
	cuda_check(cuda.cuCtxSynchronize(), "cuCtxSynchronize");

	cuda_check(cuda.cuMemcpyDtoH(&err, res->dev_err, sizeof(err)),
			   "cuMemcpyDtoH");
	pg_warp_report_xpu_error(&err);
	cuda_check(cuda.cuMemcpyDtoH(y, res->dev_y, nbytes), "cuMemcpyDtoH");

	for (i = 0; i < nitems; i++)
	{
		if (y[i] != XPU_SELFTEST_MULTIPLIER * x[i] + i)
		{
			if (first_wrong < 0)
				first_wrong = i;
			nwrong++;
		}
	}
	if (nwrong == 0)
		result = pstrdup("ok");
	else
		result = psprintf("wrong result in " INT64_FORMAT " of " INT64_FORMAT " elements; first at element " INT64_FORMAT ": expected " INT64_FORMAT ", got " INT64_FORMAT,
						  nwrong, nitems, first_wrong,
						  (int64) (XPU_SELFTEST_MULTIPLIER * x[first_wrong] + first_wrong),
						  (int64) y[first_wrong]);
	pfree(x);
	pfree(y);
	return result;
}

/* errcontext callback while one device is under test */
static void
selftest_error_callback(void *arg)
{
	SelftestContext *context = (SelftestContext *) arg;

	errcontext("GPU self-test on device %d (%s)",
			   context->devindex, context->name);
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_selftest);

/*
 * pgwarp.gpu_selftest()
 *		For each GPU: loads the installed fatbin in the device's primary
 *		context, runs the self-test kernel over about a million elements and
 *		checks the result on the host.  One row per device with result "ok"
 *		or a description of the wrong element, and elapsed_ms, the wall time
 *		of the whole test of that device (context, module load, copies,
 *		kernel, check).
 *
 *		With no GPU it returns no rows and raises a NOTICE.  A broken driver,
 *		a missing or unloadable fatbin, or a failing driver call raise an
 *		ERROR; every device resource is released on every path.  The primary
 *		context is released at the end, so the backend keeps no GPU memory.
 */
Datum
pg_warp_gpu_selftest(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			ndevices;
	char	   *path;
	char	   *image;
	size_t		image_len;
	int			i;

	InitMaterializedSRF(fcinfo, 0);

	ndevices = cuda_device_count(ERROR);
	if (ndevices == 0)
	{
		ereport(NOTICE,
				(errmsg("no GPU found: pg_warp uses its CPU engine"),
				 cuda_state == CUDA_STATE_ABSENT ?
				 errdetail("%s", cuda_state_detail) :
				 errdetail("The CUDA driver reports no device.")));
		return (Datum) 0;
	}

	path = fatbin_path();
	image = read_fatbin(path, &image_len);

	for (i = 0; i < ndevices; i++)
	{
		SelftestResources *res = palloc0(sizeof(SelftestResources));
		SelftestContext context;
		ErrorContextCallback errcallback;
		instr_time	start;
		instr_time	elapsed;
		char	   *result;
		Datum		values[4];
		bool		nulls[4] = {false};

		INSTR_TIME_SET_CURRENT(start);
		cuda_check(cuda.cuDeviceGet(&res->device, i), "cuDeviceGet");
		context.devindex = i;
		context.name = cuda_device_name(res->device);
		errcallback.callback = selftest_error_callback;
		errcallback.arg = &context;
		errcallback.previous = error_context_stack;
		error_context_stack = &errcallback;

		PG_TRY();
		{
			result = selftest_run(res, image);
		}
		PG_CATCH();
		{
			selftest_release(res, false);
			PG_RE_THROW();
		}
		PG_END_TRY();
		selftest_release(res, true);
		INSTR_TIME_SET_CURRENT(elapsed);
		INSTR_TIME_SUBTRACT(elapsed, start);

		error_context_stack = errcallback.previous;

		values[0] = Int32GetDatum(i);
		values[1] = CStringGetTextDatum(context.name);
		values[2] = CStringGetTextDatum(result);
		values[3] = Float8GetDatum(INSTR_TIME_GET_MILLISEC(elapsed));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
							 values, nulls);
		pfree(res);
	}
	pfree(image);
	pfree(path);
	return (Datum) 0;
}
