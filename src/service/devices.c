/*-------------------------------------------------------------------------
 *
 * devices.c
 *		The DEVICES request (xpu/protocol.h): the GPUs the service owns, for
 *		pgwarp.gpu_devices(), and the self-test of GPU code on each of them,
 *		for pgwarp.gpu_selftest().  The backend never loads the CUDA
 *		driver: it asks here, and the answer comes from the driver that
 *		gpu.c loaded and the contexts it created at start.
 *
 * The self-test (xpu/xpu_selftest.h) loads the fatbin the backend names into
 * a device's context, runs pg_warp_selftest over XPU_SELFTEST_NITEMS
 * elements, copies the result back and checks every element; everything it
 * acquired is released on every path.  It runs on the service's main loop
 * (tens of milliseconds per device), a superuser's diagnostic.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu_driver.h"
#include "service.h"
#include "xpu/xpu_selftest.h"

/* what the self-test of one device holds; released by selftest_release */
typedef struct Selftest
{
	CUmodule	module;
	CUstream	stream;
	CUdeviceptr dev_x;
	CUdeviceptr dev_y;
	CUdeviceptr dev_err;
	int64_t    *x;
	int64_t    *y;
	char	   *result;			/* the detail's result, result_len bytes */
	size_t		result_len;
} Selftest;

/*
 * selftest_call: false, with the failed call described in t->result, when
 * a driver call failed (a result that loses the context is noted)
 */
static bool
selftest_call(Selftest *t, CUresult rc, const char *what)
{
	char		buf[96];

	if (rc == CUDA_SUCCESS)
		return true;
	gpu_note_result(rc, what);
	snprintf(t->result, t->result_len, "CUDA driver call %s() failed: %s", what,
			 gpu_error_text(rc, buf, sizeof(buf)));
	return false;
}

/*
 * selftest_check: the kernel's outcome into t->result: "ok", the error it
 * recorded, or the first wrong element of y
 */
static void
selftest_check(Selftest *t, const XpuError *err)
{
	const int64_t n = XPU_SELFTEST_NITEMS;
	int64_t		wrong = 0,
				first = -1;

	if (err->code != XPU_OK)
	{
		snprintf(t->result, t->result_len, "the kernel reported error %d: %.*s",
				 err->code, (int) sizeof(err->message), err->message);
		return;
	}
	for (int64_t i = 0; i < n; i++)
	{
		if (t->y[i] != XPU_SELFTEST_MULTIPLIER * t->x[i] + i)
		{
			if (first < 0)
				first = i;
			wrong++;
		}
	}
	if (wrong == 0)
		snprintf(t->result, t->result_len, "ok");
	else
		snprintf(t->result, t->result_len,
				 "wrong result in %lld of %lld elements; first at element %lld: expected %lld, got %lld",
				 (long long) wrong, (long long) n, (long long) first,
				 (long long) (XPU_SELFTEST_MULTIPLIER * t->x[first] + first),
				 (long long) t->y[first]);
}

/*
 * selftest_run: the test on the current context; true when it ran (the
 * result is "ok" or a wrong element), false when a call failed
 */
static bool
selftest_run(Selftest *t, const char *path)
{
	const int64_t n = XPU_SELFTEST_NITEMS;
	const size_t bytes = n * sizeof(int64_t);
	int64_t		kn_n = n,
				kn_a = XPU_SELFTEST_MULTIPLIER;
	void	   *params[5] = {&kn_n, &kn_a, &t->dev_x, &t->dev_y, &t->dev_err};
	unsigned int blocks = (n + XPU_SELFTEST_BLOCK_SIZE - 1) / XPU_SELFTEST_BLOCK_SIZE;
	CUfunction	fn;
	XpuError	err;

	t->x = malloc(bytes);
	t->y = malloc(bytes);
	if (t->x == NULL || t->y == NULL)
	{
		snprintf(t->result, t->result_len, "out of memory");
		return false;
	}
	for (int64_t i = 0; i < n; i++)
		t->x[i] = xpu_selftest_input(i);
	memset(&err, 0, sizeof(err));
	if (!selftest_call(t, gpu_drv.cuModuleLoad(&t->module, path), "cuModuleLoad") ||
		!selftest_call(t, gpu_drv.cuModuleGetFunction(&fn, t->module, XPU_SELFTEST_KERNEL),
					   "cuModuleGetFunction") ||
		!selftest_call(t, gpu_drv.cuStreamCreate(&t->stream, CU_STREAM_NON_BLOCKING),
					   "cuStreamCreate") ||
		!selftest_call(t, gpu_drv.cuMemAlloc(&t->dev_x, bytes), "cuMemAlloc") ||
		!selftest_call(t, gpu_drv.cuMemAlloc(&t->dev_y, bytes), "cuMemAlloc") ||
		!selftest_call(t, gpu_drv.cuMemAlloc(&t->dev_err, sizeof(err)), "cuMemAlloc") ||
		!selftest_call(t, gpu_drv.cuMemcpyHtoDAsync(t->dev_x, t->x, bytes, t->stream),
					   "cuMemcpyHtoDAsync") ||
		!selftest_call(t, gpu_drv.cuMemcpyHtoDAsync(t->dev_err, &err, sizeof(err), t->stream),
					   "cuMemcpyHtoDAsync") ||
	/* poison the output, so that an element the kernel skips cannot pass */
		!selftest_call(t, gpu_drv.cuMemsetD8Async(t->dev_y, 0xA5, bytes, t->stream),
					   "cuMemsetD8Async") ||
		!selftest_call(t, gpu_drv.cuLaunchKernel(fn, blocks, 1, 1, XPU_SELFTEST_BLOCK_SIZE,
												 1, 1, 0, t->stream, params, NULL),
					   "cuLaunchKernel") ||
		!selftest_call(t, gpu_drv.cuMemcpyDtoHAsync(&err, t->dev_err, sizeof(err), t->stream),
					   "cuMemcpyDtoHAsync") ||
		!selftest_call(t, gpu_drv.cuMemcpyDtoHAsync(t->y, t->dev_y, bytes, t->stream),
					   "cuMemcpyDtoHAsync") ||
		!selftest_call(t, gpu_drv.cuStreamSynchronize(t->stream), "cuStreamSynchronize"))
		return false;
	selftest_check(t, &err);
	return true;
}

/* selftest_release: frees what the test of one device holds */
static void
selftest_release(Selftest *t)
{
	if (t->dev_err)
		gpu_drv.cuMemFree(t->dev_err);
	if (t->dev_y)
		gpu_drv.cuMemFree(t->dev_y);
	if (t->dev_x)
		gpu_drv.cuMemFree(t->dev_x);
	if (t->stream)
		gpu_drv.cuStreamDestroy(t->stream);
	if (t->module)
		gpu_drv.cuModuleUnload(t->module);
	free(t->x);
	free(t->y);
}

/* selftest_device: the self-test of gpu->devices[i] into d */
static void
selftest_device(uint32_t i, const char *path, WarpDeviceDetail *d)
{
	Selftest	t = {0};
	CUcontext	popped;
	int64_t		start = svc_now_us(CLOCK_MONOTONIC);

	t.result = d->result;
	t.result_len = sizeof(d->result);
	if (!selftest_call(&t, gpu_drv.cuCtxPushCurrent(gpu_device_context(i)), "cuCtxPushCurrent"))
	{
		d->selftest = WARP_SELFTEST_FAILED;
		return;
	}
	d->selftest = selftest_run(&t, path) ? WARP_SELFTEST_RAN : WARP_SELFTEST_FAILED;
	selftest_release(&t);
	gpu_drv.cuCtxPopCurrent(&popped);
	d->selftest_us = svc_now_us(CLOCK_MONOTONIC) - start;
}

/* error_reply: an ERROR reply of code with message msg into buf */
static uint32_t
error_reply(uint8_t *buf, uint32_t *type, uint32_t code, const char *msg)
{
	WarpErrorMsg err = {.code = code};

	snprintf(err.message, sizeof(err.message), "%s", msg);
	memcpy(buf, &err, sizeof(err));
	*type = WARP_MSG_ERROR;
	return sizeof(err);
}

/* devices_answer: see service.h */
uint32_t
devices_answer(const ServiceGpu *gpu, const uint8_t *payload, uint32_t len,
			   uint8_t *buf, uint32_t *type)
{
	WarpDevicesRequest req;
	WarpDevices *head = (WarpDevices *) buf;
	WarpDeviceDetail *details = (WarpDeviceDetail *) (buf + sizeof(WarpDevices));
	char		path[4096];
	bool		selftest;

	if (len < sizeof(req))
		return error_reply(buf, type, WARP_ERR_PROTOCOL, "DEVICES of too few bytes");
	memcpy(&req, payload, sizeof(req));
	selftest = (req.flags & WARP_DEVICES_SELFTEST) != 0;
	if ((req.flags & ~WARP_DEVICES_SELFTEST) != 0 || len != sizeof(req) + req.path_len ||
		req.path_len >= sizeof(path) || (selftest && req.path_len == 0))
		return error_reply(buf, type, WARP_ERR_PROTOCOL, "malformed DEVICES request");
	memcpy(path, payload + sizeof(req), req.path_len);
	path[req.path_len] = '\0';
	if (selftest && gpu->n_devices > 0 && gpu_lost() != 0)
		return error_reply(buf, type, WARP_ERR_UNSUPPORTED,
						   "a GPU fault stopped the pg_warp service's GPUs; the service is restarting");

	memset(head, 0, sizeof(*head));
	head->driver = gpu->n_devices > 0 ? WARP_DRIVER_READY :
		gpu->driver_failed ? WARP_DRIVER_FAILED : WARP_DRIVER_ABSENT;
	head->n_devices = gpu->n_devices;
	memcpy(head->detail, gpu->detail, sizeof(head->detail));
	for (uint32_t i = 0; i < gpu->n_devices; i++)
	{
		WarpDeviceDetail *d = &details[i];
		CUdevice	dev;

		memset(d, 0, sizeof(*d));
		d->info = gpu->devices[i];
		if (gpu_drv.cuDeviceGet(&dev, gpu->devices[i].index) != CUDA_SUCCESS ||
			gpu_drv.cuDeviceGetPCIBusId(d->pci_bus_id, sizeof(d->pci_bus_id) - 1,
										dev) != CUDA_SUCCESS)
			d->pci_bus_id[0] = '\0';
		if (selftest)
			selftest_device(i, path, d);
	}
	*type = WARP_MSG_DEVICES;
	return sizeof(WarpDevices) + gpu->n_devices * sizeof(WarpDeviceDetail);
}
