/*-------------------------------------------------------------------------
 *
 * gpu.c
 *		The service's GPUs: loads the CUDA driver at run time, creates each
 *		device's (primary) context once at start, kept until exit, and loads
 *		the kernels (the fatbin named by --fatbin) into it on first use.
 *
 * The service is never linked with libcuda: on a machine without the NVIDIA
 * driver dlopen("libcuda.so.1") fails, and that is the normal state "no GPU"
 * (the CPU engine serves), reported by STATUS, not an error.  A driver that
 * is installed but does not work (missing entry point, cuInit failure) is
 * logged as a WARNING and also leaves the service on the CPU engine.
 *
 * No CUDA header is needed: the few types and constants used are declared
 * below with the values of the driver ABI.
 *
 *-------------------------------------------------------------------------
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_driver.h"

/* the driver's entry points (gpu_driver.h) */
GpuDriver	gpu_drv;

/* the fatbin that gpu_device_module loads (pg_warp_service --fatbin) */
const char *gpu_fatbin_path = NULL;

static const struct
{
	const char *name;
	void	  **slot;
}			driver_symbols[] =
{
	{"cuInit", (void **) &gpu_drv.cuInit},
	{"cuDeviceGetCount", (void **) &gpu_drv.cuDeviceGetCount},
	{"cuDeviceGet", (void **) &gpu_drv.cuDeviceGet},
	{"cuDeviceGetName", (void **) &gpu_drv.cuDeviceGetName},
	{"cuDeviceTotalMem_v2", (void **) &gpu_drv.cuDeviceTotalMem},
	{"cuDeviceGetAttribute", (void **) &gpu_drv.cuDeviceGetAttribute},
	{"cuDeviceGetPCIBusId", (void **) &gpu_drv.cuDeviceGetPCIBusId},
	{"cuDevicePrimaryCtxRetain", (void **) &gpu_drv.cuDevicePrimaryCtxRetain},
	{"cuDevicePrimaryCtxRelease_v2", (void **) &gpu_drv.cuDevicePrimaryCtxRelease},
	{"cuGetErrorName", (void **) &gpu_drv.cuGetErrorName},
	{"cuCtxPushCurrent_v2", (void **) &gpu_drv.cuCtxPushCurrent},
	{"cuCtxPopCurrent_v2", (void **) &gpu_drv.cuCtxPopCurrent},
	{"cuModuleLoad", (void **) &gpu_drv.cuModuleLoad},
	{"cuModuleGetFunction", (void **) &gpu_drv.cuModuleGetFunction},
	{"cuModuleUnload", (void **) &gpu_drv.cuModuleUnload},
	{"cuMemAlloc_v2", (void **) &gpu_drv.cuMemAlloc},
	{"cuMemFree_v2", (void **) &gpu_drv.cuMemFree},
	{"cuMemAllocHost_v2", (void **) &gpu_drv.cuMemAllocHost},
	{"cuMemFreeHost", (void **) &gpu_drv.cuMemFreeHost},
	{"cuMemHostRegister_v2", (void **) &gpu_drv.cuMemHostRegister},
	{"cuMemHostUnregister", (void **) &gpu_drv.cuMemHostUnregister},
	{"cuMemcpyHtoDAsync_v2", (void **) &gpu_drv.cuMemcpyHtoDAsync},
	{"cuMemcpyDtoHAsync_v2", (void **) &gpu_drv.cuMemcpyDtoHAsync},
	{"cuMemcpyDtoDAsync_v2", (void **) &gpu_drv.cuMemcpyDtoDAsync},
	{"cuMemsetD8Async", (void **) &gpu_drv.cuMemsetD8Async},
	{"cuStreamCreate", (void **) &gpu_drv.cuStreamCreate},
	{"cuStreamDestroy_v2", (void **) &gpu_drv.cuStreamDestroy},
	{"cuStreamSynchronize", (void **) &gpu_drv.cuStreamSynchronize},
	{"cuStreamQuery", (void **) &gpu_drv.cuStreamQuery},
	{"cuEventCreate", (void **) &gpu_drv.cuEventCreate},
	{"cuEventDestroy_v2", (void **) &gpu_drv.cuEventDestroy},
	{"cuEventRecord", (void **) &gpu_drv.cuEventRecord},
	{"cuEventSynchronize", (void **) &gpu_drv.cuEventSynchronize},
	{"cuEventElapsedTime", (void **) &gpu_drv.cuEventElapsedTime},
	{"cuLaunchKernel", (void **) &gpu_drv.cuLaunchKernel},
};

/* the CUDA device of each entry of ServiceGpu.devices[], for release */
static CUdevice held_devices[WARP_MAX_DEVICES];
/* ... its primary context, and the fatbin's module once loaded */
static CUcontext held_contexts[WARP_MAX_DEVICES];
static CUmodule held_modules[WARP_MAX_DEVICES];
static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;

/* --gpus (options.c): the CUDA device ordinals to use, comma-separated (NULL: all) */
const char *svc_gpu_list;

/* cu_error: gpu_error_text into a static buffer (gpu_open's thread only) */
static const char *
cu_error(CUresult rc)
{
	static char buf[96];

	return gpu_error_text(rc, buf, sizeof(buf));
}

/*
 * load_driver
 *		dlopen()s the driver and resolves driver_symbols[].  On failure sets
 *		gpu->detail and returns false; *installed says whether a driver
 *		library exists at all (false: the plain "no GPU" case).
 */
static bool
load_driver(ServiceGpu *gpu, bool *installed)
{
	void	   *lib = dlopen(CUDA_LIBRARY_NAME, RTLD_NOW | RTLD_LOCAL);

	*installed = (lib != NULL);
	if (lib == NULL)
	{
		snprintf(gpu->detail, sizeof(gpu->detail), "no GPU: %s", dlerror());
		return false;
	}
	for (size_t i = 0; i < sizeof(driver_symbols) / sizeof(driver_symbols[0]); i++)
	{
		*driver_symbols[i].slot = dlsym(lib, driver_symbols[i].name);
		if (*driver_symbols[i].slot == NULL)
		{
			snprintf(gpu->detail, sizeof(gpu->detail),
					 "GPU driver unusable: libcuda.so.1 lacks %s",
					 driver_symbols[i].name);
			dlclose(lib);
			return false;
		}
	}
	/* the _v2 ABI (CUDA 13's; 12.8's had one more parameter) */
	*(void **) &gpu_drv.cuMemcpyBatchAsync = dlsym(lib, "cuMemcpyBatchAsync_v2");
	return true;
}

/*
 * open_device
 *		Describes CUDA device `ordinal` into gpu->devices[gpu->n_devices] and
 *		retains its primary context; a device whose context cannot be
 *		created is logged and left out.
 */
static void
open_device(ServiceGpu *gpu, int ordinal)
{
	WarpDeviceInfo *d = &gpu->devices[gpu->n_devices];
	CUdevice	dev;
	CUcontext	ctx;
	size_t		mem = 0;
	int			sm = 0,
				major = 0,
				minor = 0;
	CUresult	rc;

	memset(d, 0, sizeof(*d));
	if ((rc = gpu_drv.cuDeviceGet(&dev, ordinal)) != CUDA_SUCCESS ||
		(rc = gpu_drv.cuDeviceGetName(d->name, sizeof(d->name) - 1, dev)) != CUDA_SUCCESS ||
		(rc = gpu_drv.cuDeviceTotalMem(&mem, dev)) != CUDA_SUCCESS ||
		(rc = gpu_drv.cuDeviceGetAttribute(&sm, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS ||
		(rc = gpu_drv.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||
		(rc = gpu_drv.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS)
	{
		svc_log("WARNING", "GPU %d left out: could not query it: %s", ordinal, cu_error(rc));
		return;
	}
	if ((rc = gpu_drv.cuDevicePrimaryCtxRetain(&ctx, dev)) != CUDA_SUCCESS)
	{
		svc_log("WARNING", "GPU %d (%s) left out: could not create its context: %s",
				ordinal, d->name, cu_error(rc));
		return;
	}
	d->index = ordinal;
	d->total_memory = mem;
	d->multiprocessors = sm;
	d->cc_major = major;
	d->cc_minor = minor;
	held_contexts[gpu->n_devices] = ctx;
	held_devices[gpu->n_devices++] = dev;
	svc_log("LOG", "GPU %d: %s, %zu MiB, %d SMs, compute capability %d.%d",
			ordinal, d->name, mem >> 20, sm, major, minor);
}

/*
 * gpu_open
 *		Fills *gpu with the GPUs the driver offers, each with its context
 *		created; never fails: without a usable GPU, gpu->engine is
 *		WARP_ENGINE_CPU and gpu->detail says why.  With use_gpus false the
 *		driver is not even loaded (pg_warp_service --no-gpu).
 */
void
gpu_open(ServiceGpu *gpu, bool use_gpus)
{
	bool		installed;
	int			count = 0;
	CUresult	rc;

	memset(gpu, 0, sizeof(*gpu));
	gpu->engine = WARP_ENGINE_CPU;
	if (!use_gpus)
	{
		snprintf(gpu->detail, sizeof(gpu->detail), "no GPU: started with --no-gpu");
		svc_log("LOG", "%s; the CPU engine serves", gpu->detail);
		return;
	}
	if (!load_driver(gpu, &installed))
	{
		gpu->driver_failed = installed;
		svc_log(installed ? "WARNING" : "LOG", "%s; the CPU engine serves", gpu->detail);
		return;
	}
	/*
	 * every kernel of the fatbin loaded with it (gpu_device_module, done at
	 * the start: gpu_agg_prewarm), not at its first launch in some run;
	 * a CUDA_MODULE_LOADING of the service's environment wins
	 */
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	rc = gpu_drv.cuInit(0);
	if (rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY)
		snprintf(gpu->detail, sizeof(gpu->detail), "no GPU: the CUDA driver reports %s",
				 rc == CUDA_ERROR_NO_DEVICE ? "no device" : "that it is a stub library");
	else if (rc != CUDA_SUCCESS)
		snprintf(gpu->detail, sizeof(gpu->detail), "GPU driver failed: cuInit: %s",
				 cu_error(rc));
	else if ((rc = gpu_drv.cuDeviceGetCount(&count)) != CUDA_SUCCESS)
		snprintf(gpu->detail, sizeof(gpu->detail), "GPU driver failed: cuDeviceGetCount: %s",
				 cu_error(rc));
	if (gpu->detail[0] != '\0')
	{
		gpu->driver_failed = rc != CUDA_ERROR_NO_DEVICE && rc != CUDA_ERROR_STUB_LIBRARY;
		svc_log(rc == CUDA_ERROR_NO_DEVICE || rc == CUDA_ERROR_STUB_LIBRARY ? "LOG" : "WARNING",
				"%s; the CPU engine serves", gpu->detail);
		return;
	}
	if (svc_gpu_list != NULL)
	{
		/*
		 * --gpus: the listed ordinals, in their order; one listed twice is
		 * used as two devices of its own (two column caches, two shares of
		 * each run), which tests the spreading of runs over GPUs on a host
		 * with one
		 */
		const char *p = svc_gpu_list;

		while (*p != '\0')
		{
			char	   *end;
			long		ordinal;

			if (*p == ',')
			{
				p++;
				continue;
			}
			ordinal = strtol(p, &end, 10);
			p = end;
			if (ordinal >= count || ordinal >= WARP_MAX_DEVICES)
				svc_log("WARNING", "--gpus names GPU %ld, but the driver reports %d GPUs; it is left out",
						ordinal, count);
			else if (gpu->n_devices < WARP_MAX_DEVICES)
				open_device(gpu, (int) ordinal);
		}
	}
	else
	{
		if (count > WARP_MAX_DEVICES)
			svc_log("WARNING", "%d GPUs found; the service uses the first %d",
					count, WARP_MAX_DEVICES);
		for (int i = 0; i < count && i < WARP_MAX_DEVICES; i++)
			open_device(gpu, i);
	}
	if (gpu->n_devices > 0)
		gpu->engine = WARP_ENGINE_GPU;
	else
	{
		if (svc_gpu_list != NULL)
			snprintf(gpu->detail, sizeof(gpu->detail),
					 "no GPU: none of the GPUs of --gpus %s is usable (the driver reports %d)",
					 svc_gpu_list, count);
		else
			snprintf(gpu->detail, sizeof(gpu->detail), "no GPU: none of %d devices is usable",
					 count);
		gpu->driver_failed = true;
		svc_log("WARNING", "%s; the CPU engine serves", gpu->detail);
	}
}

/* gpu_error_text: "CUDA_ERROR_X (n)" for a driver result, into buf */
const char *
gpu_error_text(CUresult rc, char *buf, size_t len)
{
	const char *name = NULL;

	if (gpu_drv.cuGetErrorName == NULL || gpu_drv.cuGetErrorName(rc, &name) != CUDA_SUCCESS)
		name = "unknown error";
	snprintf(buf, len, "%s (%d)", name, rc);
	return buf;
}

/* the result that lost the GPUs' contexts (gpu_note_result), or 0 */
static CUresult gpu_lost_rc;

/*
 * does rc leave the context unusable: the driver's "any further CUDA work
 * will return the same error; the process must be terminated and relaunched"
 * results (illegal address 700, launch timeout 702, assert 710, hardware
 * stack error 714, illegal instruction 715, misaligned address 716, invalid
 * address space 717, invalid PC 718, launch failed 719, external device
 * 911) and an uncorrectable ECC error (214)
 */
static bool
gpu_result_fatal(CUresult rc)
{
	switch (rc)
	{
		case 214: case 700: case 702: case 710: case 714: case 715:
		case 716: case 717: case 718: case 719: case 911:
			return true;
		default:
			return false;
	}
}

/* see gpu_driver.h */
void
gpu_note_result(CUresult rc, const char *what)
{
	CUresult	none = 0;
	char		buf[96];

	if (rc == CUDA_SUCCESS || !gpu_result_fatal(rc) ||
		!__atomic_compare_exchange_n(&gpu_lost_rc, &none, rc, false, __ATOMIC_SEQ_CST,
									 __ATOMIC_SEQ_CST))
		return;
	svc_log("ERROR", "GPU fault: %s returned %s; the CUDA context is lost, so the service "
			"takes no more runs and restarts once the runs in progress end",
			what, gpu_error_text(rc, buf, sizeof(buf)));
}

/* see gpu_driver.h */
CUresult
gpu_lost(void)
{
	return __atomic_load_n(&gpu_lost_rc, __ATOMIC_SEQ_CST);
}

/* gpu_device_context: the primary context of gpu->devices[i] */
CUcontext
gpu_device_context(uint32_t i)
{
	return held_contexts[i];
}

/*
 * gpu_device_module
 *		The fatbin (gpu_fatbin_path) loaded into device i's context, once;
 *		the caller has that context current.  False with msg set when the
 *		service has no fatbin or the driver refuses it (then the next call
 *		tries again).
 */
bool
gpu_device_module(uint32_t i, CUmodule *mod, char *msg, size_t msglen)
{
	CUresult	rc = CUDA_SUCCESS;
	char		buf[96];

	pthread_mutex_lock(&module_lock);
	if (held_modules[i] == NULL && gpu_fatbin_path != NULL)
		rc = gpu_drv.cuModuleLoad(&held_modules[i], gpu_fatbin_path);
	*mod = held_modules[i];
	pthread_mutex_unlock(&module_lock);
	if (gpu_fatbin_path == NULL)
		snprintf(msg, msglen, "the service was started without --fatbin");
	else if (rc != CUDA_SUCCESS)
		snprintf(msg, msglen, "could not load GPU code \"%s\": %s", gpu_fatbin_path,
				 gpu_error_text(rc, buf, sizeof(buf)));
	return *mod != NULL;
}

/*
 * gpu_close: releases the contexts that gpu_open created (the caller has
 * emptied the devices' GPU caches)
 */
void
gpu_close(ServiceGpu *gpu)
{
	for (uint32_t i = 0; i < gpu->n_devices; i++)
	{
		held_modules[i] = NULL;
		gpu_drv.cuDevicePrimaryCtxRelease(held_devices[i]);
	}
	gpu->n_devices = 0;
}
