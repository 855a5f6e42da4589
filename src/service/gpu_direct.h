/*-------------------------------------------------------------------------
 *
 * gpu_direct.h
 *		GPUDirect Storage: the GPU input path's reads of Arrow column
 *		buffers with cuFile, straight into GPU memory (gpu_direct.c says
 *		when).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_GPU_DIRECT_H
#define SERVICE_GPU_DIRECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_driver.h"
#include "service.h"

/* --gpudirect (pg_warp.gpudirect) */
typedef enum GpuDirectSetting
{
	GPU_DIRECT_OFF = 0,
	GPU_DIRECT_AUTO = 1,
	GPU_DIRECT_ON = 2
} GpuDirectSetting;

typedef struct GpuDirectFile GpuDirectFile;

/* in options.c's parse: the setting and the library to load (NULL: the default) */
extern int	gpu_direct_parse(const char *s);
extern void gpu_direct_configure(int setting, const char *library);

/*
 * gpu_direct_start: at service start, once the GPUs are open: loads
 * libcufile and opens its driver where the setting asks for it, decides
 * the mode (gpu_direct_mode) and logs it
 */
extern void gpu_direct_start(const ServiceGpu *gpu);
extern void gpu_direct_stop(void);

/*
 * the mode GPU runs over files read them in: WARP_CUFILE_NONE (pread),
 * WARP_CUFILE_GDS or WARP_CUFILE_COMPAT (protocol.h)
 */
extern uint32_t gpu_direct_mode(void);

/*
 * NULL, or (the setting on, and cuFile not usable) why: a GPU run over
 * files then fails with it
 */
extern const char *gpu_direct_unusable(void);

/* is the setting on (a file cuFile refuses fails its run) */
extern bool gpu_direct_required(void);

/*
 * gpu_direct_open: the file open as fd (the run's checked descriptor)
 * registered with cuFile through a descriptor of its own (O_DIRECT where
 * the file system allows it); NULL with the reason in err
 */
extern GpuDirectFile *gpu_direct_open(int fd, char *err, size_t errlen);
extern void gpu_direct_close(GpuDirectFile *f);

/*
 * gpu_direct_read: len bytes at offset off of the file into device memory
 * dst with cuFileRead (the calling thread's context current); 0, -1 when
 * the file ends first, a positive errno, or a cuFile error (< -1, its
 * negated CUfileOpError)
 */
extern int	gpu_direct_read(GpuDirectFile *f, CUdeviceptr dst, size_t len, int64_t off);

/* the words for what gpu_direct_read returned (rc != 0) */
extern const char *gpu_direct_error(int rc, char *buf, size_t len);

#endif							/* SERVICE_GPU_DIRECT_H */
