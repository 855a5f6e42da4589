/*-------------------------------------------------------------------------
 *
 * file_id.h
 *		A file's identity as the service keys what it keeps of files (the
 *		GPU column cache, registered pages, opened files' metadata, kept
 *		mappings) and the backend the inner tables of Arrow dimensions it
 *		keeps: device, inode, size, modification and change times.  A file
 *		replaced, appended to, truncated or written in place has another.
 *		Plain C, shared by the service and the backend (xpu/protocol.h's
 *		cache entries carry the same fields).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_FILE_ID_H
#define XPU_FILE_ID_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

typedef struct WarpFileId
{
	int64_t		dev;
	int64_t		ino;
	int64_t		size;
	int64_t		mtime_ns;
	int64_t		ctime_ns;
} WarpFileId;

/* warp_file_id_of: the identity of the file of stat st */
static inline WarpFileId
warp_file_id_of(const struct stat *st)
{
	WarpFileId	id;

	memset(&id, 0, sizeof(id));
	id.dev = (int64_t) st->st_dev;
	id.ino = (int64_t) st->st_ino;
	id.size = (int64_t) st->st_size;
	id.mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	id.ctime_ns = (int64_t) st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	return id;
}

static inline bool
warp_file_id_equal(const WarpFileId *a, const WarpFileId *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
		a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

#endif							/* XPU_FILE_ID_H */
