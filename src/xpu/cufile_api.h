/*-------------------------------------------------------------------------
 *
 * cufile_api.h
 *		The few types, constants and entry points of NVIDIA's cuFile API
 *		(GPUDirect Storage, libcufile) that pg_warp uses.  Like the CUDA
 *		driver (cuda_driver.h), libcufile is loaded with dlopen at run time
 *		and never linked: the service (service/gpu_direct.c), the data path
 *		benchmark (bench/data_paths.c) and test/gpu's stand-in library take
 *		these declarations from here.  Declared from the documented API
 *		(cufile.h of the nvidia-cufile wheel, version 1.20): every call
 *		returns a CUfileError_t {op error, CUDA error} by value, except
 *		cuFileRead (bytes read, or -1 with errno / -CUfileOpError) and
 *		cuFileHandleDeregister.
 *
 *-------------------------------------------------------------------------
 */
#ifndef CUFILE_API_H
#define CUFILE_API_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "cuda_driver.h"

typedef struct CuFileError
{
	int			err;			/* CUfileOpError: 0 success, 5000 + n errors */
	CUresult	cu_err;
} CuFileError;

typedef struct CuFileDescr
{
	int			type;			/* CUFILE_HANDLE_TYPE_FD */
	union
	{
		int			fd;
		void	   *handle;
	}			handle;
	const void *fs_ops;			/* NULL: the kernel's file system */
} CuFileDescr;

typedef struct CuFileDrvProps
{
	struct
	{
		unsigned int major_version; /* nvidia-fs' version (0.0: not loaded) */
		unsigned int minor_version;
		size_t		poll_thresh_size;
		size_t		max_direct_io_size;
		unsigned int dstatusflags;	/* bit per file system / device kind GDS supports */
		unsigned int dcontrolflags; /* bit 0 poll mode, bit 1 compat mode allowed */
	}			nvfs;
	unsigned int fflags;
	unsigned int max_device_cache_size;
	unsigned int per_buffer_cache_size;
	unsigned int max_device_pinned_mem_size;
	unsigned int max_batch_io_size;
	unsigned int max_batch_io_timeout_msecs;
} CuFileDrvProps;

#define CUFILE_HANDLE_TYPE_FD			1
#define CUFILE_NVME_SUPPORTED_BIT		4	/* CU_FILE_NVME_SUPPORTED */
#define CUFILE_ALLOW_COMPAT_BIT			1	/* CU_FILE_ALLOW_COMPAT_MODE */
#define CUFILE_P2P_NVFS_FLAG			(1u << 1)	/* CU_FILE_P2P_FLAG_NVFS */
#define CUFILE_PARAM_FORCE_COMPAT		2	/* CUFILE_PARAM_FORCE_COMPAT_MODE */
#define CUFILE_DRIVER_NOT_INITIALIZED	5001
#define CUFILE_HANDLE_NOT_REGISTERED	5027

/* the library as dlopen names it (the nvidia-cufile wheel's and the toolkit's) */
#define CUFILE_LIBRARY_NAME		"libcufile.so.0"

/* the entry points; the last three are optional (older libraries lack them) */
typedef struct CuFileApi
{
	CuFileError (*DriverOpen) (void);
	CuFileError (*DriverClose) (void);
	CuFileError (*DriverGetProperties) (CuFileDrvProps *);
	CuFileError (*HandleRegister) (void **, CuFileDescr *);
	void		(*HandleDeregister) (void *);
	CuFileError (*BufRegister) (const void *, size_t, int);
	CuFileError (*BufDeregister) (const void *);
	ssize_t		(*Read) (void *, void *, size_t, off_t, off_t);
	CuFileError (*GetVersion) (int *);
	CuFileError (*GetParameterBool) (int, bool *);
	CuFileError (*DriverGetP2PFlags) (int, unsigned int *);
} CuFileApi;

/*
 * cufile_api_resolve: api's entry points from the library lib (dlopen'ed);
 * NULL when all the required ones are there, else the name of one missing
 */
static inline const char *
cufile_api_resolve(void *lib, CuFileApi *api)
{
	static const char *const required[] = {"cuFileDriverOpen", "cuFileDriverGetProperties",
		"cuFileHandleRegister", "cuFileHandleDeregister", "cuFileBufRegister",
	"cuFileBufDeregister", "cuFileRead"};

	api->DriverOpen = (CuFileError (*) (void)) dlsym(lib, "cuFileDriverOpen");
	api->DriverClose = (CuFileError (*) (void)) dlsym(lib, "cuFileDriverClose_v2");
	if (api->DriverClose == NULL)
		api->DriverClose = (CuFileError (*) (void)) dlsym(lib, "cuFileDriverClose");
	api->DriverGetProperties = (CuFileError (*) (CuFileDrvProps *))
		dlsym(lib, "cuFileDriverGetProperties");
	api->HandleRegister = (CuFileError (*) (void **, CuFileDescr *))
		dlsym(lib, "cuFileHandleRegister");
	api->HandleDeregister = (void (*) (void *)) dlsym(lib, "cuFileHandleDeregister");
	api->BufRegister = (CuFileError (*) (const void *, size_t, int)) dlsym(lib, "cuFileBufRegister");
	api->BufDeregister = (CuFileError (*) (const void *)) dlsym(lib, "cuFileBufDeregister");
	api->Read = (ssize_t (*) (void *, void *, size_t, off_t, off_t)) dlsym(lib, "cuFileRead");
	api->GetVersion = (CuFileError (*) (int *)) dlsym(lib, "cuFileGetVersion");
	api->GetParameterBool = (CuFileError (*) (int, bool *)) dlsym(lib, "cuFileGetParameterBool");
	api->DriverGetP2PFlags = (CuFileError (*) (int, unsigned int *))
		dlsym(lib, "cuFileDriverGetP2PFlags");
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (dlsym(lib, required[i]) == NULL)
			return required[i];
	return api->DriverClose == NULL ? "cuFileDriverClose" : NULL;
}

/*
 * cufile_api_gds: does libcufile read with GPUDirect Storage rather than in
 * compatibility mode: the nvidia-fs kernel driver loaded (its version in
 * the properties, or /proc/driver/nvidia-fs), compatibility mode not forced
 * (CUFILE_FORCE_COMPAT_MODE, the parameter FORCE_COMPAT_MODE) and a route
 * for local disks (NVMe supported, or a peer-to-peer flag for NVMe)
 */
static inline bool
cufile_api_gds(const CuFileApi *api, const CuFileDrvProps *p, bool nvfs_proc)
{
	bool		nvfs = p->nvfs.major_version > 0 || p->nvfs.minor_version > 0;
	bool		nvme = (p->nvfs.dstatusflags >> CUFILE_NVME_SUPPORTED_BIT) & 1;
	bool		forced = false;
	unsigned int p2p = 0;
	const char *env = getenv("CUFILE_FORCE_COMPAT_MODE");

	if (api->GetParameterBool)
		api->GetParameterBool(CUFILE_PARAM_FORCE_COMPAT, &forced);
	if (env != NULL && strcmp(env, "true") == 0)
		forced = true;
	if (api->DriverGetP2PFlags && api->DriverGetP2PFlags(CUFILE_NVME_SUPPORTED_BIT, &p2p).err != 0)
		p2p = 0;
	return (nvfs || nvfs_proc) && !forced && (nvme || p2p != 0);
}

#endif							/* CUFILE_API_H */
