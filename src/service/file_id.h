/*-------------------------------------------------------------------------
 *
 * file_id.h
 *		A file's identity as the service keys what it keeps of files (the
 *		GPU column cache, registered pages, opened files' metadata, kept
 *		mappings): device, inode, size, modification and change times.  A
 *		file replaced, appended to, truncated or written in place has
 *		another.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SERVICE_FILE_ID_H
#define SERVICE_FILE_ID_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

typedef struct SvcFileId
{
	int64_t		dev;
	int64_t		ino;
	int64_t		size;
	int64_t		mtime_ns;
	int64_t		ctime_ns;
} SvcFileId;

/* svc_file_id_of: the identity of the file of stat st */
static inline SvcFileId
svc_file_id_of(const struct stat *st)
{
	SvcFileId	id;

	memset(&id, 0, sizeof(id));
	id.dev = (int64_t) st->st_dev;
	id.ino = (int64_t) st->st_ino;
	id.size = (int64_t) st->st_size;
	id.mtime_ns = (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	id.ctime_ns = (int64_t) st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec;
	return id;
}

static inline bool
svc_file_id_equal(const SvcFileId *a, const SvcFileId *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
		a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

#endif							/* SERVICE_FILE_ID_H */
