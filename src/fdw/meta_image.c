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
 * file of META_IMAGE_MIN_BATCHES batches or more has been read, the image
 * of its batches (arrow_file_batches_image) goes to
 * pg_warp/arrow_meta/DEV-INO in the data directory, and the next session
 * that opens the file takes it instead (arrow_file_open_image), after
 * reading the footer and the schema from the file as always.
 *
 * The file holds the identity of the Arrow file it was made from (device,
 * inode, size, modification and change times) and a CRC-32C of the image:
 * a file replaced, appended to or written in place has another identity and
 * its image is not used (the next open writes a new one), and an image
 * torn by a crash or changed on disk fails its CRC.  The library then
 * checks every batch as it would its message (arrow_read_image.c).  A
 * write goes to a file of its own and is renamed over the old, so readers
 * see a whole image or the one before.  Nothing here fails a query: an
 * image that cannot be read or written is only logged (DEBUG1).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_perm.h"
#include "miscadmin.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "fdw/arrow_fdw.h"

#define META_IMAGE_DIR			"pg_warp/arrow_meta"
#define META_IMAGE_MIN_BATCHES	64
#define META_IMAGE_MAGIC		"pgwarpM1"

bool		pg_warp_arrow_metadata_images = true;

typedef struct MetaImageHead
{
	char		magic[8];
	int64		dev;
	int64		ino;
	int64		size;
	int64		mtime_ns;
	int64		ctime_ns;
	uint64		len;			/* of the image that follows */
	pg_crc32c	crc;			/* of the image */
	uint32		pad;
} MetaImageHead;

static void
meta_image_path(char *path, const ArrowPgSource *s)
{
	snprintf(path, MAXPGPATH, META_IMAGE_DIR "/%llx-%llx",
			 (unsigned long long) s->dev, (unsigned long long) s->ino);
}

static pg_crc32c
meta_image_crc(const void *image, uint64 len)
{
	pg_crc32c	crc;

	INIT_CRC32C(crc);
	COMP_CRC32C(crc, image, len);
	FIN_CRC32C(crc);
	return crc;
}

/* write all n bytes; false otherwise */
static bool
meta_image_write_all(int fd, const void *buf, uint64 n)
{
	uint64		done = 0;

	while (done < n)
	{
		ssize_t		w = write(fd, (const char *) buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		done += w;
	}
	return true;
}

/*
 * the image kept for s's file (of change time ctime_ns): mapped (*len
 * bytes after *map_len bytes at *map, to be unmapped), or NULL where there
 * is none for this identity, or it is not whole.  Mapped, not read: its
 * pages come from the page cache without a copy into fresh memory.
 */
static const void *
meta_image_map(const ArrowPgSource *s, int64 ctime_ns, uint64 *len, void **map,
			   size_t *map_len)
{
	char		path[MAXPGPATH];
	MetaImageHead h;
	struct stat st;
	const char *image = NULL;
	void	   *p = MAP_FAILED;
	int			fd;

	*map = NULL;
	*map_len = 0;
	*len = 0;
	meta_image_path(path, s);
	/* not blocking: a FIFO put where the image belongs is no image */
	if ((fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | PG_BINARY)) < 0)
	{
		if (errno != ENOENT)
			elog(DEBUG1, "pg_warp: could not open Arrow metadata image \"%s\": %m", path);
		return NULL;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > (off_t) sizeof(h) &&
		(p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)) != MAP_FAILED)
	{
		memcpy(&h, p, sizeof(h));
		image = (const char *) p + sizeof(h);
		if (memcmp(h.magic, META_IMAGE_MAGIC, 8) != 0 || h.dev != s->dev || h.ino != s->ino ||
			h.size != s->size || h.mtime_ns != s->mtime_ns || h.ctime_ns != ctime_ns ||
			h.len != (uint64) st.st_size - sizeof(h))
			image = NULL;
		else if (meta_image_crc(image, h.len) != h.crc)
		{
			elog(DEBUG1, "pg_warp: Arrow metadata image \"%s\" is not whole", path);
			image = NULL;
		}
		if (image == NULL)
			munmap(p, st.st_size);
		else
		{
			*map = p;
			*map_len = st.st_size;
			*len = h.len;
		}
	}
	CloseTransientFile(fd);
	return image;
}

/* the image of file (just read from s's file of change time ctime_ns) kept */
static void
meta_image_write(const ArrowPgSource *s, int64 ctime_ns, const ArrowFile *file)
{
	char		path[MAXPGPATH];
	char		tmp[MAXPGPATH];
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "Arrow metadata image",
											  ALLOCSET_DEFAULT_SIZES);
	ArrowError	err;
	MetaImageHead h;
	void	   *image;
	uint64		len;
	int			fd;
	bool		ok;

	if (arrow_file_batches_image(file, arrow_pg_allocator(cxt), &image, &len, &err) != ARROW_OK)
	{
		MemoryContextDelete(cxt);
		return;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, META_IMAGE_MAGIC, 8);
	h.dev = s->dev;
	h.ino = s->ino;
	h.size = s->size;
	h.mtime_ns = s->mtime_ns;
	h.ctime_ns = ctime_ns;
	h.len = len;
	h.crc = meta_image_crc(image, len);
	meta_image_path(path, s);
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, MyProcPid);
	(void) MakePGDirectory("pg_warp");
	(void) MakePGDirectory(META_IMAGE_DIR);
	fd = OpenTransientFile(tmp, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
	ok = fd >= 0 && meta_image_write_all(fd, &h, sizeof(h)) &&
		meta_image_write_all(fd, image, len);
	if (fd >= 0 && CloseTransientFile(fd) != 0)
		ok = false;
	if (!ok || rename(tmp, path) != 0)
	{
		elog(DEBUG1, "pg_warp: could not write Arrow metadata image \"%s\": %m", path);
		(void) unlink(tmp);
	}
	else
		elog(DEBUG1, "pg_warp: kept the record batches of \"%s\" in metadata image \"%s\"",
			 s->path, path);
	MemoryContextDelete(cxt);
}

/*
 * arrow_pg_open_image: s's file (of change time ctime_ns; -1: unknown)
 * opened into *out (alloc's memory) as arrow_file_open_source does, its
 * record batches taken from the image kept on disk where there is a whole
 * one of this identity, and an image kept for the next session where there
 * was none (a file of META_IMAGE_MIN_BATCHES batches or more)
 */
int
arrow_pg_open_image(const ArrowPgSource *s, int64 ctime_ns, const ArrowAllocator *alloc,
					ArrowFile **out, ArrowError *err)
{
	const void *volatile image;
	void	   *map;
	size_t		map_len;
	uint64		len;
	bool		used = false;
	int			rc;

	if (!pg_warp_arrow_metadata_images || ctime_ns < 0)
		return arrow_file_open_source(&s->src, alloc, out, err);
	image = meta_image_map(s, ctime_ns, &len, &map, &map_len);
	/* the library does not raise; the mapping goes anyway if something else does */
	PG_TRY();
	{
		rc = arrow_file_open_image(&s->src, alloc, image, len, out, &used, err);
	}
	PG_FINALLY();
	{
		if (image != NULL)
			munmap(map, map_len);
	}
	PG_END_TRY();
	if (rc == ARROW_OK && used)
		elog(DEBUG1, "pg_warp: the record batches of \"%s\" from its metadata image", s->path);
	else if (rc == ARROW_OK && (*out)->n_batches >= META_IMAGE_MIN_BATCHES)
		meta_image_write(s, ctime_ns, *out);
	return rc;
}
