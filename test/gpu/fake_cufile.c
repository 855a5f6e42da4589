/*
 * fake_cufile.c
 *		A stand-in libcufile for machines without a GPU, beside fake_cuda.c
 *		(whose device memory is host memory): the service's cuFile path
 *		(service/gpu_direct.c) runs against it as it does against NVIDIA's
 *		library, and the reads land where the GPU's would.  cuFileRead is a
 *		pread through a descriptor of its own (the registered one may be
 *		O_DIRECT, which would need aligned buffers).
 *
 * Environment, read when called:
 *	 PG_WARP_FAKE_CUFILE_GDS		set: the properties say nvidia-fs 2.17 with
 *								NVMe support (GPUDirect Storage); else 0.0
 *								(compatibility mode)
 *	 PG_WARP_FAKE_CUFILE_NO_DRIVER	set: cuFileDriverOpen fails (5001)
 *	 PG_WARP_FAKE_CUFILE_REFUSE	set: cuFileHandleRegister fails (5027), as
 *								NVIDIA's does where udev knows no file system
 *	 PG_WARP_FAKE_CUFILE_LOG	a file: each read appends "read LEN\n", and
 *								each registration "register\n", or
 *								"register O_DIRECT\n" for a descriptor
 *								opened with it
 *
 *	 make -C test/gpu bin/fake/libcufile.so.0
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpu/cufile_api.h"

#define FAKE_API __attribute__((visibility("default")))

typedef struct FakeHandle
{
	int			fd;				/* a plain descriptor of the registered file */
} FakeHandle;

static void
fake_log(const char *fmt, size_t n)
{
	const char *path = getenv("PG_WARP_FAKE_CUFILE_LOG");
	char		line[64];
	int			fd,
				len;

	if (path == NULL)
		return;
	len = snprintf(line, sizeof(line), fmt, n);
	/* one write of a short line to an O_APPEND file: whole, whatever the threads */
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) >= 0)
	{
		if (write(fd, line, (size_t) len) != len)
			abort();
		close(fd);
	}
}

static CuFileError
fake_error(int err)
{
	CuFileError e = {err, 0};

	return e;
}

FAKE_API CuFileError cuFileDriverOpen(void);
FAKE_API CuFileError cuFileDriverClose_v2(void);
FAKE_API CuFileError cuFileDriverGetProperties(CuFileDrvProps *p);
FAKE_API CuFileError cuFileHandleRegister(void **h, CuFileDescr *d);
FAKE_API void cuFileHandleDeregister(void *h);
FAKE_API CuFileError cuFileBufRegister(const void *p, size_t n, int flags);
FAKE_API CuFileError cuFileBufDeregister(const void *p);
FAKE_API ssize_t cuFileRead(void *h, void *buf, size_t n, off_t off, off_t buf_off);

CuFileError
cuFileDriverOpen(void)
{
	return fake_error(getenv("PG_WARP_FAKE_CUFILE_NO_DRIVER") ? CUFILE_DRIVER_NOT_INITIALIZED : 0);
}

CuFileError
cuFileDriverClose_v2(void)
{
	return fake_error(0);
}

CuFileError
cuFileDriverGetProperties(CuFileDrvProps *p)
{
	memset(p, 0, sizeof(*p));
	p->nvfs.dcontrolflags = 1u << CUFILE_ALLOW_COMPAT_BIT;
	if (getenv("PG_WARP_FAKE_CUFILE_GDS") != NULL)
	{
		p->nvfs.major_version = 2;
		p->nvfs.minor_version = 17;
		p->nvfs.dstatusflags = 1u << CUFILE_NVME_SUPPORTED_BIT;
	}
	return fake_error(0);
}

CuFileError
cuFileHandleRegister(void **h, CuFileDescr *d)
{
	char		path[64];
	FakeHandle *fh;

	if (getenv("PG_WARP_FAKE_CUFILE_REFUSE") != NULL)
		return fake_error(CUFILE_HANDLE_NOT_REGISTERED);
	if (d->type != CUFILE_HANDLE_TYPE_FD || (fh = malloc(sizeof(*fh))) == NULL)
		return fake_error(5002);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", d->handle.fd);
	if ((fh->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
	{
		free(fh);
		return fake_error(5002);
	}
	fake_log((fcntl(d->handle.fd, F_GETFL) & O_DIRECT) ? "register O_DIRECT\n" : "register\n", 0);
	*h = fh;
	return fake_error(0);
}

void
cuFileHandleDeregister(void *h)
{
	FakeHandle *fh = h;

	close(fh->fd);
	free(fh);
}

CuFileError
cuFileBufRegister(const void *p, size_t n, int flags)
{
	return fake_error(0);
}

CuFileError
cuFileBufDeregister(const void *p)
{
	return fake_error(0);
}

/* bytes read (0 at the end of the file), or -1 with errno */
ssize_t
cuFileRead(void *h, void *buf, size_t n, off_t off, off_t buf_off)
{
	FakeHandle *fh = h;
	ssize_t		r = pread(fh->fd, (char *) buf + buf_off, n, off);

	if (r > 0)
		fake_log("read %zu\n", (size_t) r);
	return r;
}
