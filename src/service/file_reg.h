/*-------------------------------------------------------------------------
 *
 * file_reg.h
 *		Arrow files' page-cache pages registered for DMA and kept between
 *		runs, so that the GPU copies a file's column buffers straight from
 *		the page cache (file_reg.c explains the rules).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_FILE_REG_H
#define SERVICE_FILE_REG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_cache.h"
#include "gpu_driver.h"

/* a file is registered in regions of this many bytes (the last one shorter) */
#define FILE_REG_REGION		((int64_t) 16 << 20)

typedef struct FileReg FileReg;

/* the byte budget of registered pages over all files (0: off), from --pinned-files */
extern void file_reg_set_limit(uint64_t bytes);
extern uint64_t file_reg_limit(void);

/* whether file_reg_restore restores (--pinned-files-restore; on by default) */
extern void file_reg_set_restore(bool on);

/* the bytes registered now over all files, and those queued to be */
extern void file_reg_stats(uint64_t *pinned, uint64_t *queued);

/*
 * file_reg_acquire: the kept registration of the file open as fd whose
 * identity is *id (a new one, mapped but with no region registered, when
 * none is kept), held until file_reg_release; NULL when registration is
 * off or the file cannot be mapped
 */
extern FileReg *file_reg_acquire(const GpuCacheFileId *id, int fd);
extern void file_reg_release(FileReg *r);

/* the address of byte off of the file in its mapping */
extern const uint8_t *file_reg_addr(const FileReg *r, int64_t off);

/* the regions [*first, *last] that bytes [off, off + len) of the file touch */
extern void file_reg_regions(int64_t off, size_t len, int32_t *first, int32_t *last);

/* the part of bytes [off, off + len) in region i (of those): from *from, its length */
extern size_t file_reg_piece(int64_t off, size_t len, int32_t i, int64_t *from);

/*
 * file_reg_want: true when every region that bytes [off, off + len) touch
 * is registered (copies may read them until file_reg_release); otherwise
 * queues those never tried for the registering thread, which registers them
 * in context ctx once their pages are in the page cache, adds their bytes to
 * *queued and returns false: the caller reads the bytes another way
 */
extern bool file_reg_want(FileReg *r, int64_t off, size_t len, CUcontext ctx,
						  uint64_t *queued);

/*
 * file_reg_run_begin / file_reg_run_end: a run that reads input starts and
 * ends (every run, registered files or not); the registering thread waits
 * while any is in progress
 */
extern void file_reg_run_begin(void);
extern void file_reg_run_end(void);

/*
 * file_reg_stop: at the service's end, before the contexts go: nothing more
 * is queued, the queue is emptied, and the registering thread has ended
 */
extern void file_reg_stop(void);

/*
 * file_reg_keep_list: the list of registered files is kept in the working
 * directory (the service's data directory) from now on; not called (the
 * test programs that run the service's code), no list is written
 */
extern void file_reg_keep_list(void);

/*
 * file_reg_restore: at the service's start (the GPUs open): the regions of
 * the files registered before the last end or restart (the list kept in the
 * data directory, the working directory) queued again, in context ctx, for
 * those files still there and unchanged (nothing with --pinned-files-restore
 * off); the list kept from then on (file_reg_keep_list)
 */
extern void file_reg_restore(CUcontext ctx);

/*
 * file_reg_drop_unheld: every entry no run holds unregistered and unmapped
 * (after file_reg_stop, a context current: the registrations are portable)
 */
extern void file_reg_drop_unheld(void);

#endif							/* SERVICE_FILE_REG_H */
