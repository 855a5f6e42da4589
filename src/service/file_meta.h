/*-------------------------------------------------------------------------
 *
 * file_meta.h
 *		The service's cache of opened Arrow files' metadata (file_meta.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_FILE_META_H
#define SERVICE_FILE_META_H

#include <sys/stat.h>

#include "arrow/arrow.h"

/*
 * svc_file_meta_open: *out the Arrow file open on descriptor fd, whose
 * identity is st, reading through src with alloc: a copy of the kept
 * metadata of that identity (read into a new entry first when none is
 * kept), or the file read when it cannot be kept.  *held: what
 * svc_file_meta_release lets go after *out is closed (NULL: nothing).
 * *from_image: the batches of a new entry came from the image a backend
 * kept (src/fdw/meta_image.c) rather than from their messages.  As
 * arrow_file_open_source otherwise.
 */
extern int	svc_file_meta_open(int fd, const struct stat *st, const ArrowSource *src,
							   const ArrowAllocator *alloc, ArrowFile **out, void **held,
							   bool *from_image, ArrowError *err);
extern void svc_file_meta_release(void *held);

/* ArrowSource.read_at over a file descriptor (ctx: its int) */
extern int	svc_fd_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err);

/*
 * svc_file_meta_prewarm: at the service's start, the files of the newest
 * max (at most half the entries) metadata images that backends kept in
 * the data directory (src/fdw/meta_image.c: those used last), read into
 * free entries from their images where they are still the files the
 * images were made of; how many were kept, and *left_out how many of the
 * images found were not (their files changed or gone, not read, a run's
 * entry there first, or no free entry)
 */
extern int	svc_file_meta_prewarm(int max, int *left_out);

#endif							/* SERVICE_FILE_META_H */
