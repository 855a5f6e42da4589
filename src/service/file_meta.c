/*-------------------------------------------------------------------------
 *
 * file_meta.c
 *		The service's cache of opened Arrow files' metadata.
 *
 * Opening a file reads and parses its footer and every record batch's
 * message: for pg2arrow's 8 MB batches, a thousand of them for 10 GB, which
 * took 9-14 ms of every run over SSB SF 1's lineorder rewritten with 1,257
 * batches on the dev VM, as long as a warm GPU run's kernels.  The metadata
 * of the files opened last is kept, keyed by the identity of what was
 * opened (device, inode, size, modification and change times: a file
 * replaced, appended to, truncated or written in place has another), and
 * every run over the file copies it (arrow_file_copy) instead of reading
 * it: the first run reads it into the entry, its batches from the image a
 * backend kept in the data directory where there is one (src/fdw/meta_image.c).  The copy's array
 * of record batches is the entry's, and the batches' arrays too, so an entry is held while a run's copy
 * lives and is never evicted then; its arrays are never changed.  The run
 * still opens the file itself and checks its identity against the request
 * (input.c), and reads through its own descriptor.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xpu/file_id.h"
#include "service/file_meta.h"

#define META_ENTRIES	16

typedef struct MetaEntry
{
	WarpFileId	id;
	ArrowFile  *file;			/* a copy that reads nothing; NULL: free */
	uint64_t	used;			/* meta_clock when last found or added */
	int			holds;			/* runs whose copies point into it */
} MetaEntry;

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static MetaEntry meta[META_ENTRIES];
static uint64_t meta_clock;
static const ArrowSource meta_no_source;	/* the kept files read nothing */

static bool
meta_is(const MetaEntry *e, const WarpFileId *id)
{
	return e->file != NULL && warp_file_id_equal(&e->id, id);
}

/*
 * meta_install: file (just read) kept as the entry of identity id, if a
 * slot is free or unheld (only_free: free) and no run kept that identity
 * meanwhile; the entry comes back held once (the caller's copy), else NULL
 * (file stays the caller's).  A kept file reads nothing: its source is
 * cleared.
 */
static MetaEntry *
meta_install(ArrowFile *file, const WarpFileId *id, bool only_free)
{
	MetaEntry  *victim = NULL;
	ArrowFile  *old = NULL;

	pthread_mutex_lock(&meta_lock);
	for (int i = 0; i < META_ENTRIES; i++)
	{
		MetaEntry  *e = &meta[i];

		if (meta_is(e, id))
		{
			victim = NULL;		/* another run kept it meanwhile */
			break;
		}
		if (e->holds > 0 || (only_free && e->file != NULL))
			continue;
		/* a free slot, else the one found or added longest ago */
		if (victim == NULL || (victim->file != NULL &&
							   (e->file == NULL || e->used < victim->used)))
			victim = e;
	}
	if (victim != NULL)
	{
		old = victim->file;
		file->source = meta_no_source;
		*victim = (MetaEntry) {*id, file, ++meta_clock, 1};
	}
	pthread_mutex_unlock(&meta_lock);
	if (old != NULL)
		arrow_file_close(old);
	return victim;
}

/* meta_copy: *out a copy of held entry e's file reading through src; *held e, or e let go */
static int
meta_copy(MetaEntry *e, const ArrowSource *src, const ArrowAllocator *alloc, ArrowFile **out,
		  void **held, ArrowError *err)
{
	int			rc = arrow_file_copy(e->file, src, alloc, true, out, err);

	if (rc == ARROW_OK)
		*held = e;
	else
		svc_file_meta_release(e);
	return rc;
}

/*
 * meta_read: the file open on fd (of identity id, read through src) read
 * into *opened, its batches from the image a backend kept in the data
 * directory, the service's working directory, where there is a whole one
 * of this identity (arrow_image_file.c; *from_image), and kept as a new
 * entry (only_free: in a free slot) when nothing wrote the file while it
 * was read: *found that entry,
 * held once, which owns *opened from then on (else NULL: *opened is the
 * caller's).  A kept file is the file read (copying a thousand batches'
 * metadata into the entry instead was a run's work for nothing).
 */
static int
meta_read(int fd, const WarpFileId *id, const ArrowSource *src, bool only_free,
		  ArrowFile **opened, MetaEntry **found, bool *from_image, ArrowError *err)
{
	ArrowFileIdentity fid = {id->dev, id->ino, id->size, id->mtime_ns, id->ctime_ns};
	char		path[64];
	struct stat now;
	WarpFileId	after;
	const void *image;
	void	   *map;
	size_t		map_len;
	uint64_t	len;
	int			rc;

	*found = NULL;
	/* in the entries' memory (a file not kept stays the run's: its loads use malloc's) */
	arrow_image_file_path(path, sizeof(path), &fid);
	image = arrow_image_file_map(path, &fid, &len, &map, &map_len);
	rc = arrow_file_open_image(src, &arrow_default_allocator, image, len, opened, from_image,
							   err);
	arrow_image_file_unmap(map, map_len);
	if (rc == ARROW_OK && fstat(fd, &now) == 0)
	{
		after = warp_file_id_of(&now);
		if (warp_file_id_equal(&after, id))
			*found = meta_install(*opened, id, only_free);
	}
	return rc;
}

/* see file_meta.h */
int
svc_file_meta_open(int fd, const struct stat *st, const ArrowSource *src,
				   const ArrowAllocator *alloc, ArrowFile **out, void **held, bool *from_image,
				   ArrowError *err)
{
	MetaEntry  *found = NULL;
	WarpFileId	id = warp_file_id_of(st);
	ArrowFile  *opened;
	int			rc;

	*held = NULL;
	*from_image = false;
	pthread_mutex_lock(&meta_lock);
	for (int i = 0; i < META_ENTRIES && found == NULL; i++)
		if (meta_is(&meta[i], &id))
		{
			found = &meta[i];
			found->holds++;
			found->used = ++meta_clock;
		}
	pthread_mutex_unlock(&meta_lock);
	if (found != NULL)
		return meta_copy(found, src, alloc, out, held, err);
	rc = meta_read(fd, &id, src, false, &opened, &found, from_image, err);
	if (rc != ARROW_OK)
		return rc;
	/* the run takes a copy of the file read as from any entry */
	if (found != NULL)
		return meta_copy(found, src, alloc, out, held, err);
	*out = opened;
	return ARROW_OK;
}

/* see file_meta.h */
int
svc_fd_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err)
{
	int			fd = *(const int *) ctx;

	while (len > 0)
	{
		ssize_t		n = pread(fd, dst, len, offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return arrow_set_error(err, n < 0 ? ARROW_ERR_IO : ARROW_ERR_INVALID,
								   n < 0 ? "read failed: %s" : "unexpected end of file%s",
								   n < 0 ? strerror(errno) : "");
		dst = (char *) dst + n;
		len -= n;
		offset += n;
	}
	return ARROW_OK;
}

/* see file_meta.h */
int
svc_file_meta_prewarm(int max, int *left_out)
{
	ArrowImageEntry *imgs;
	int			n,
				kept = 0;

	*left_out = 0;
	if (max > META_ENTRIES / 2)
		max = META_ENTRIES / 2;
	if (max <= 0 || (imgs = malloc(sizeof(ArrowImageEntry) * (size_t) max)) == NULL)
		return 0;
	n = arrow_image_file_recent(ARROW_IMAGE_DIR, imgs, max);
	/* the newest kept last: the last of them to be evicted */
	for (int i = n - 1; i >= 0; i--)
	{
		ArrowImageEntry *img = &imgs[i];
		WarpFileId	was = {img->id.dev, img->id.ino, img->id.size, img->id.mtime_ns,
						   img->id.ctime_ns},
					id;
		MetaEntry  *found = NULL;
		ArrowFile  *opened;
		ArrowSource src;
		ArrowError	err;
		struct stat st;
		bool		from_image;
		int			fd = -1;

		/*
		 * what is at the path checked before it is opened (a FIFO or a device
		 * that took the file's place is not), and what was opened after it
		 */
		if (stat(img->source, &st) == 0 && S_ISREG(st.st_mode) &&
			(id = warp_file_id_of(&st), warp_file_id_equal(&id, &was)) &&
			(fd = open(img->source, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) >= 0 &&
			fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			(id = warp_file_id_of(&st), warp_file_id_equal(&id, &was)))
		{
			src.read_at = svc_fd_read_at;
			src.size = st.st_size;
			src.ctx = &fd;
			/* in a free slot only: the entries the runs made stay */
			if (meta_read(fd, &id, &src, true, &opened, &found, &from_image, &err) == ARROW_OK &&
				found == NULL)
				arrow_file_close(opened);
		}
		if (found != NULL)
		{
			kept++;
			svc_file_meta_release(found);
		}
		else
			(*left_out)++;
		if (fd >= 0)
			close(fd);
	}
	free(imgs);
	return kept;
}

/* see file_meta.h */
void
svc_file_meta_release(void *held)
{
	MetaEntry  *e = held;

	if (e == NULL)
		return;
	pthread_mutex_lock(&meta_lock);
	e->holds--;
	pthread_mutex_unlock(&meta_lock);
}
