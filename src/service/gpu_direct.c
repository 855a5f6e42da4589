/*-------------------------------------------------------------------------
 *
 * gpu_direct.c
 *		GPUDirect Storage for the GPU input path (gpu_input.c): a GPU run
 *		reads the stored column buffers of its Arrow files with cuFileRead
 *		straight into GPU memory, instead of pread into a pinned buffer and
 *		a copy from there.
 *
 * libcufile is loaded with dlopen (--cufile-library, pg_warp.cufile_library;
 * the nvidia-cufile wheel ships it) at service start, and its driver opened
 * once.  It reads in one of two modes, its own decision: GPUDirect Storage
 * proper, DMA from the disk to the GPU, needs the nvidia-fs kernel driver
 * and a file system it supports; otherwise, in compatibility mode, it reads
 * with POSIX calls into bounce buffers and copies them, which is what the
 * service's own pread path does, with fewer threads.  So the setting
 * (--gpudirect, pg_warp.gpudirect):
 *	 off   never;
 *	 auto  (the default) only where it can run GPUDirect Storage: the library
 *		   is not even loaded unless /proc/driver/nvidia-fs exists, and a file
 *		   cuFile refuses is read with pread;
 *	 on    always, compatibility mode included; a GPU run over files fails
 *		   when cuFile cannot be used, or refuses one of its files (a user who
 *		   asks for it hears why it does not run).
 * libcufile writes its own log, pg_warp_cufile.log in the data directory
 * unless CUFILE_LOGFILE_PATH names another.
 *
 * Each run registers its files (cuFileHandleRegister) through descriptors
 * of its own, opened through /proc/self/fd from the run's checked ones, so
 * they are the same files whatever their paths name now; in GPUDirect
 * Storage mode with O_DIRECT where the file system allows it, as it needs,
 * and in compatibility mode without, so that libcufile's reads come from the
 * page cache as pread's do (with O_DIRECT they went to the disk: a heap
 * table's first runs took 20-40 times as long on the H200 host).  The
 * registered pages of file_reg.c, when on, come first: they are the page
 * cache's bytes at the bus rate.  utf8 offsets are still read with pread:
 * they are checked on the host.  The heap units a run reads itself are read
 * with cuFile too (gpu_heap.c, gheap_read_direct), their pages checked on
 * the device.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpu_direct.h"
#include "xpu/cufile_api.h"
#include "xpu/protocol.h"

struct GpuDirectFile
{
	int			fd;				/* ours, registered */
	void	   *handle;			/* CUfileHandle_t */
};

static struct
{
	int			setting;		/* GpuDirectSetting */
	const char *library;
	uint32_t	mode;			/* WARP_CUFILE_* runs use */
	bool		driver_open;
	char		unusable[256];	/* setting on, mode none: why */
	CuFileApi	api;
}			gd = {GPU_DIRECT_AUTO, CUFILE_LIBRARY_NAME};

int
gpu_direct_parse(const char *s)
{
	return strcmp(s, "off") == 0 ? GPU_DIRECT_OFF :
		strcmp(s, "auto") == 0 ? GPU_DIRECT_AUTO :
		strcmp(s, "on") == 0 ? GPU_DIRECT_ON : -1;
}

void
gpu_direct_configure(int setting, const char *library)
{
	gd.setting = setting;
	if (library != NULL && library[0] != '\0')
		gd.library = library;
}

/*
 * gpu_direct_load: loads the library and opens its driver in context ctx;
 * false with the reason in gd.unusable
 */
static bool
gpu_direct_load(CUcontext ctx, bool nvfs_proc, bool *gds)
{
	void	   *lib = dlopen(gd.library, RTLD_NOW | RTLD_LOCAL);
	const char *missing;
	CuFileDrvProps props;
	CuFileError e;

	if (lib == NULL)
	{
		snprintf(gd.unusable, sizeof(gd.unusable), "could not load %s: %s", gd.library, dlerror());
		return false;
	}
	if ((missing = cufile_api_resolve(lib, &gd.api)) != NULL)
	{
		snprintf(gd.unusable, sizeof(gd.unusable), "%s lacks %s", gd.library, missing);
		dlclose(lib);
		return false;
	}
	/* libcufile logs to ./cufile.log (the data directory) unless told */
	setenv("CUFILE_LOGFILE_PATH", "pg_warp_cufile.log", 0);
	gpu_drv.cuCtxPushCurrent(ctx);
	e = gd.api.DriverOpen();
	if (e.err == 0)
	{
		memset(&props, 0, sizeof(props));
		if (gd.api.DriverGetProperties(&props).err != 0)
			memset(&props, 0, sizeof(props));
		*gds = cufile_api_gds(&gd.api, &props, nvfs_proc);
	}
	gpu_drv.cuCtxPopCurrent(&ctx);
	if (e.err != 0)
	{
		snprintf(gd.unusable, sizeof(gd.unusable), "cuFileDriverOpen failed: error %d%s",
				 e.err, e.err == CUFILE_DRIVER_NOT_INITIALIZED ?
				 " (nvidia-fs is not loaded and compatibility mode is off)" : "");
		return false;
	}
	gd.driver_open = true;
	return true;
}

/*
 * the file whose existence says the nvidia-fs driver is loaded; the tests of
 * auto (test_service_direct.py) name one of their own, beside a stand-in
 * libcufile that says it runs GPUDirect Storage
 */
static const char *
gpu_direct_nvfs_proc(void)
{
	const char *path = getenv("PG_WARP_TEST_NVFS_PROC");

	return path != NULL && path[0] != '\0' ? path : "/proc/driver/nvidia-fs/version";
}

void
gpu_direct_start(const ServiceGpu *gpu)
{
	bool		nvfs_proc = access(gpu_direct_nvfs_proc(), F_OK) == 0;
	bool		gds = false;

	gd.mode = WARP_CUFILE_NONE;
	gd.unusable[0] = '\0';
	if (gd.setting == GPU_DIRECT_OFF || gpu->n_devices == 0)
		return;
	if (gd.setting == GPU_DIRECT_AUTO && !nvfs_proc)
	{
		svc_log("LOG", "GPUDirect Storage: not used (no nvidia-fs driver); files are read with pread");
		return;
	}
	if (!gpu_direct_load(gpu_device_context(0), nvfs_proc, &gds))
	{
		svc_log(gd.setting == GPU_DIRECT_ON ? "WARNING" : "LOG", "GPUDirect Storage: not used: %s",
				gd.unusable);
		if (gd.setting != GPU_DIRECT_ON)
			gd.unusable[0] = '\0';
		return;
	}
	if (!gds && gd.setting == GPU_DIRECT_AUTO)
	{
		svc_log("LOG", "GPUDirect Storage: not used: %s runs in compatibility mode here; "
				"files are read with pread", gd.library);
		gpu_direct_stop();
		return;
	}
	gd.mode = gds ? WARP_CUFILE_GDS : WARP_CUFILE_COMPAT;
	svc_log("LOG", "GPUDirect Storage: files are read with cuFile (%s, %s)", gd.library,
			gds ? "GPUDirect Storage" : "compatibility mode");
}

void
gpu_direct_stop(void)
{
	if (gd.driver_open)
		gd.api.DriverClose();
	gd.driver_open = false;
	gd.mode = WARP_CUFILE_NONE;
}

uint32_t
gpu_direct_mode(void)
{
	return gd.mode;
}

const char *
gpu_direct_unusable(void)
{
	return gd.setting == GPU_DIRECT_ON && gd.mode == WARP_CUFILE_NONE && gd.unusable[0] ?
		gd.unusable : NULL;
}

bool
gpu_direct_required(void)
{
	return gd.setting == GPU_DIRECT_ON;
}

GpuDirectFile *
gpu_direct_open(int fd, char *err, size_t errlen)
{
	char		path[64];
	struct stat run_st,
				st;
	GpuDirectFile *f;
	CuFileDescr descr;
	CuFileError e;
	int			dfd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	dfd = open(path, O_RDONLY | O_CLOEXEC | (gd.mode == WARP_CUFILE_GDS ? O_DIRECT : 0));
	/* a file system without O_DIRECT: libcufile decides (compatibility mode) */
	if (dfd < 0 && errno == EINVAL)
		dfd = open(path, O_RDONLY | O_CLOEXEC);
	if (dfd < 0)
	{
		snprintf(err, errlen, "could not open it again: %s", strerror(errno));
		return NULL;
	}
	if (fstat(fd, &run_st) != 0 || fstat(dfd, &st) != 0 ||
		st.st_dev != run_st.st_dev || st.st_ino != run_st.st_ino)
	{
		snprintf(err, errlen, "it is not the file the run opened");
		close(dfd);
		return NULL;
	}
	memset(&descr, 0, sizeof(descr));
	descr.type = CUFILE_HANDLE_TYPE_FD;
	descr.handle.fd = dfd;
	if ((f = calloc(1, sizeof(*f))) == NULL)
	{
		snprintf(err, errlen, "out of memory");
		close(dfd);
		return NULL;
	}
	e = gd.api.HandleRegister(&f->handle, &descr);
	if (e.err != 0)
	{
		snprintf(err, errlen, "cuFileHandleRegister failed: error %d%s", e.err,
				 e.err == CUFILE_HANDLE_NOT_REGISTERED ?
				 " (libcufile could not describe the file system: see its log)" : "");
		close(dfd);
		free(f);
		return NULL;
	}
	f->fd = dfd;
	return f;
}

void
gpu_direct_close(GpuDirectFile *f)
{
	if (f == NULL)
		return;
	gd.api.HandleDeregister(f->handle);
	close(f->fd);
	free(f);
}

int
gpu_direct_read(GpuDirectFile *f, CUdeviceptr dst, size_t len, int64_t off)
{
	size_t		done = 0;

	while (done < len)
	{
		ssize_t		r;

		errno = 0;
		r = gd.api.Read(f->handle, (void *) (uintptr_t) dst, len - done,
						(off_t) (off + (int64_t) done), (off_t) done);
		if (r == 0)
			return -1;
		if (r == -1)
			return errno != 0 ? errno : EIO;
		if (r < 0)
			return r < -INT32_MAX ? INT32_MIN : (int) r;
		done += (size_t) r;
	}
	return 0;
}

const char *
gpu_direct_error(int rc, char *buf, size_t len)
{
	if (rc == -1)
		snprintf(buf, len, "the file ended first");
	else if (rc > 0)
		snprintf(buf, len, "%s", strerror(rc));
	else
		snprintf(buf, len, "cuFileRead failed: error %d", -rc);
	return buf;
}
