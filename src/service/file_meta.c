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
#include <pthread.h>
#include <string.h>

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
 * slot is free or unheld and no run kept that identity meanwhile; the
 * entry comes back held once (the caller's copy), else NULL (file stays
 * the caller's).  A kept file reads nothing: its source is cleared.
 */
static MetaEntry *
meta_install(ArrowFile *file, const WarpFileId *id)
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
		if (e->holds > 0)
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

/* see file_meta.h */
int
svc_file_meta_open(int fd, const struct stat *st, const ArrowSource *src,
				   const ArrowAllocator *alloc, ArrowFile **out, void **held, bool *from_image,
				   ArrowError *err)
{
	MetaEntry  *found = NULL;
	WarpFileId	id = warp_file_id_of(st),
				after;
	ArrowFileIdentity fid = {id.dev, id.ino, id.size, id.mtime_ns, id.ctime_ns};
	char		path[64];
	struct stat now;
	ArrowFile  *opened;
	const void *image;
	void	   *map;
	size_t		map_len;
	uint64_t	len;
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
	/*
	 * in the entries' memory (a file not kept stays the run's: its loads use
	 * malloc's); its batches from the image a backend kept in the data
	 * directory, the service's working directory, where there is a whole
	 * one of this identity (arrow_image_file.c)
	 */
	arrow_image_file_path(path, sizeof(path), &fid);
	image = arrow_image_file_map(path, &fid, &len, &map, &map_len);
	rc = arrow_file_open_image(src, &arrow_default_allocator, image, len, &opened, from_image,
							   err);
	arrow_image_file_unmap(map, map_len);
	if (rc != ARROW_OK)
		return rc;
	/*
	 * kept only when nothing wrote the file while it was read: the file read
	 * becomes the entry, and the run takes a copy of it as from any entry
	 * (copying a thousand batches' metadata into the entry instead was a
	 * run's work for nothing)
	 */
	if (fstat(fd, &now) == 0)
	{
		after = warp_file_id_of(&now);
		if (warp_file_id_equal(&after, &id) && (found = meta_install(opened, &id)) != NULL)
			return meta_copy(found, src, alloc, out, held, err);
	}
	*out = opened;
	return ARROW_OK;
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
