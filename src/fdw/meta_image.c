/*-------------------------------------------------------------------------
 *
 * meta_image.c
 *		The metadata of large Arrow files' record batches kept on disk, so
 *		that a new session does not read and parse a message per batch
 *		again (pg_warp.arrow_metadata_images).
 *
 * A session's first plan over a file of a thousand record batches read
 * every batch's message: 10-16 ms of a new session's planning over SSB SF
 * 20's lineorder on the GPU host, as long as the query that followed.  The
 * backend's own cache (file.c) lives as long as the session.  Here, once a
 * file of ARROW_META_MIN_BATCHES batches or more has been read, the image
 * of its batches (arrow_file_batches_image) goes to
 * pg_warp/arrow_meta/DEV-INO in the data directory, and the next session
 * that opens the file takes it instead (arrow_file_open_image), after
 * reading the footer and the schema from the file as always.
 *
 * The image file (src/arrow/arrow_image_file.c) holds the identity of the
 * Arrow file it was made from and a CRC-32C of the image: a file replaced,
 * appended to or written in place has another identity and its image is
 * not used (the next open writes a new one), and an image torn by a crash
 * or changed on disk fails its CRC.  The library then checks every batch
 * as it would its message (arrow_read_image.c).  The pg_warp service takes
 * the same image when it first opens the file (src/service/file_meta.c).
 * Nothing here fails a query: an image that cannot be written is only
 * logged (DEBUG1).
 *
 * Images are named after the Arrow file's device and inode, so the image
 * of a file that was deleted (or whose path now names another file) would
 * stay for good: each image names its source path, and every time a
 * backend writes an image it removes those of files that are gone, and
 * the temporary files of writers that died (arrow_image_file_prune).  A
 * directory holds about one image per large Arrow file that still exists.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "fdw/arrow_fdw.h"

/* a writer's temporary file older than this is one whose writer died */
#define META_IMAGE_TMP_AGE_S	3600

bool		pg_warp_arrow_metadata_images = true;

/* the identity of s's file (of change time ctime_ns) and its image's path */
static void
meta_image_of(const ArrowPgSource *s, int64 ctime_ns, ArrowFileIdentity *id, char *path)
{
	id->dev = s->dev;
	id->ino = s->ino;
	id->size = s->size;
	id->mtime_ns = s->mtime_ns;
	id->ctime_ns = ctime_ns;
	arrow_image_file_path(path, MAXPGPATH, id);
}

/* the image of file (just read from the file of identity id) kept at path */
static void
meta_image_write(const ArrowPgSource *s, const ArrowFileIdentity *id, const char *path,
				 const ArrowFile *file)
{
	char		tmp[MAXPGPATH];
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "Arrow metadata image",
											  ALLOCSET_DEFAULT_SIZES);
	ArrowError	err;
	void	   *image;
	uint64		len;
	int			e;

	if (arrow_file_batches_image(file, arrow_pg_allocator(cxt), &image, &len, &err) == ARROW_OK)
	{
		snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, MyProcPid);
		(void) MakePGDirectory("pg_warp");
		(void) MakePGDirectory(ARROW_IMAGE_DIR);
		if ((e = arrow_image_file_write(path, tmp, id, s->path, image, len)) != 0)
			elog(DEBUG1, "pg_warp: could not write Arrow metadata image \"%s\": %s", path,
				 strerror(e));
		else
		{
			int			removed = arrow_image_file_prune(ARROW_IMAGE_DIR, META_IMAGE_TMP_AGE_S);

			elog(DEBUG1, "pg_warp: kept the record batches of \"%s\" in metadata image \"%s\"",
				 s->path, path);
			if (removed > 0)
				elog(DEBUG1, "pg_warp: removed %d stale metadata image files (images of "
					 "Arrow files that are gone, writers' leftovers)", removed);
		}
	}
	MemoryContextDelete(cxt);
}

/*
 * arrow_pg_image_touch: the image of s's file (of change time ctime_ns)
 * marked as used now (its modification time), where there is one: the
 * order in which the metadata prewarm at the server's start takes images
 * (meta_shared.c).  Nothing fails here.
 */
void
arrow_pg_image_touch(const ArrowPgSource *s, int64 ctime_ns)
{
	ArrowFileIdentity id;
	char		path[MAXPGPATH];

	if (ctime_ns < 0)
		return;
	meta_image_of(s, ctime_ns, &id, path);
	if (utimensat(AT_FDCWD, path, NULL, 0) != 0 && errno != ENOENT)
		elog(DEBUG1, "pg_warp: could not mark Arrow metadata image \"%s\" as used: %m", path);
}

/*
 * arrow_pg_open_image: s's file (of change time ctime_ns; -1: unknown)
 * opened into *out (alloc's memory) as arrow_file_open_source does, its
 * record batches taken from the image kept on disk where there is a whole
 * one of this identity, and an image kept for the next session where there
 * was none (a file of ARROW_META_MIN_BATCHES batches or more)
 */
int
arrow_pg_open_image(const ArrowPgSource *s, int64 ctime_ns, const ArrowAllocator *alloc,
					ArrowFile **out, ArrowError *err)
{
	ArrowFileIdentity id;
	char		path[MAXPGPATH];
	const void *image;
	void	   *map;
	size_t		map_len;
	uint64		len;
	bool		used = false;
	int			rc;

	if (!pg_warp_arrow_metadata_images || ctime_ns < 0)
		return arrow_file_open_source(&s->src, alloc, out, err);
	meta_image_of(s, ctime_ns, &id, path);
	image = arrow_image_file_map(path, &id, &len, &map, &map_len);
	/* the library never raises (file.c), so the mapping is always let go here */
	rc = arrow_file_open_image(&s->src, alloc, image, len, out, &used, err);
	arrow_image_file_unmap(map, map_len);
	if (rc == ARROW_OK && used)
		elog(DEBUG1, "pg_warp: the record batches of \"%s\" from its metadata image", s->path);
	else if (rc == ARROW_OK && (*out)->n_batches >= ARROW_META_MIN_BATCHES)
		meta_image_write(s, &id, path, *out);
	return rc;
}
