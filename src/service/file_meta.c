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
 * replaced, appended to, truncated or written in place has another), and a
 * later run over the same file copies it (arrow_file_copy) instead of
 * reading it again.  The copy's record batches point into the entry's
 * arrays, so an entry is held while a run's copy lives and is never evicted
 * then; its arrays are never changed.  The run still opens the file itself
 * and checks its identity against the request (input.c), and reads through
 * its own descriptor.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <string.h>

#include "service/file_id.h"
#include "service/file_meta.h"

#define META_ENTRIES	16

typedef struct MetaEntry
{
	SvcFileId	id;
	ArrowFile  *file;			/* a copy that reads nothing; NULL: free */
	uint64_t	used;			/* meta_clock when last found or added */
	int			holds;			/* runs whose copies point into it */
} MetaEntry;

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static MetaEntry meta[META_ENTRIES];
static uint64_t meta_clock;
static const ArrowSource meta_no_source;	/* the kept files read nothing */

static bool
meta_is(const MetaEntry *e, const SvcFileId *id)
{
	return e->file != NULL && svc_file_id_equal(&e->id, id);
}

/* meta_keep: a copy of opened file `file` of identity st kept, if a slot is free or unheld */
static void
meta_keep(const ArrowFile *file, const SvcFileId *id)
{
	ArrowFile  *copy;
	ArrowError	err;
	MetaEntry  *victim = NULL;

	memset(&err, 0, sizeof(err));
	if (arrow_file_copy(file, &meta_no_source, &arrow_default_allocator, false, &copy,
						&err) != ARROW_OK)
		return;
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
		ArrowFile  *old = victim->file;

		*victim = (MetaEntry) {*id, copy, ++meta_clock, 0};
		copy = old;
	}
	pthread_mutex_unlock(&meta_lock);
	if (copy != NULL)
		arrow_file_close(copy);
}

/* see file_meta.h */
int
svc_file_meta_open(int fd, const struct stat *st, const ArrowSource *src,
				   const ArrowAllocator *alloc, ArrowFile **out, void **held, ArrowError *err)
{
	MetaEntry  *found = NULL;
	SvcFileId	id = svc_file_id_of(st);
	struct stat now;
	int			rc;

	*held = NULL;
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
	{
		if ((rc = arrow_file_copy(found->file, src, alloc, true, out, err)) == ARROW_OK)
			*held = found;
		else
			svc_file_meta_release(found);
		return rc;
	}
	/* kept only when nothing wrote the file while it was read */
	if ((rc = arrow_file_open_source(src, alloc, out, err)) == ARROW_OK && fstat(fd, &now) == 0)
	{
		SvcFileId	after = svc_file_id_of(&now);

		if (svc_file_id_equal(&after, &id))
			meta_keep(*out, &id);
	}
	return rc;
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
