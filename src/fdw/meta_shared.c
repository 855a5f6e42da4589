/*-------------------------------------------------------------------------
 *
 * meta_shared.c
 *		The metadata of large Arrow files' record batches in the cluster's
 *		shared memory, taken as it lies by every later session that opens
 *		the same file (pg_warp.arrow_shared_metadata_size,
 *		pg_warp.arrow_shared_metadata).
 *
 * A new session's first open of a file of a thousand record batches takes
 * them from the file's image (meta_image.c): a pass over every batch and
 * fresh memory for their arrays, 2.7 ms of a new session's 3.3-3.7 ms of
 * planning over SSB's lineorder of 1,257 batches on the development VM,
 * where the same query over a heap lineorder plans in 0.8 ms.  Here the
 * first session that opens a file of ARROW_META_MIN_BATCHES batches or
 * more lays its batches out flat (arrow_batches_flat_copy) in memory that
 * the postmaster reserved at its start, and every later session's open of
 * the same file (its identity: device, inode, size, modification and
 * change times, path) takes them from there as they lie
 * (arrow_file_open_flat), after reading the footer and the schema from the
 * file as always, and checking each batch against its footer block.
 *
 * The main shared memory segment lies at the same address in every process
 * of the cluster (forked from the postmaster; EXEC_BACKEND builds have no
 * such guarantee and leave this off), so the batches' pointers hold in each.
 * An entry is written once and never changed or freed: backends keep
 * pointers into it in their own caches (file.c) for as long as they run.
 * So the memory is used up by the files that come: a file replaced or
 * changed has another identity, and its first open adds an entry; once the
 * memory or the entries run out, further files are opened as without it
 * (the server log says so the first time, a DEBUG1 message every time)
 * until the server restarts.  Nothing here fails a query.
 *
 * A restart empties it, and the first session after it laid out its files
 * again: 6 of its 7.4-8 ms of planning over the lineorder above on the
 * development VM, against 1.4 ms for the next session.  So at the server's
 * start a background worker (pg_warp.arrow_metadata_prewarm) lays out the
 * files of the images kept in the data directory (meta_image.c), those
 * used last first (a session marks a file's image as used when it puts the
 * file's entry, and when it takes the entry at least META_TOUCH_S seconds
 * after the entry's last mark: arrow_pg_image_touch; the worker's own put
 * marks nothing), while they take at most half of the memory and of the
 * entries, so that files not used lately keep the rest.  An image whose
 * file changed or is gone is left out, a file that cannot be laid out
 * (dictionary-encoded or view columns) or does not fit in what is left of
 * that half is passed over, and a session that opens a file before the
 * worker gets to it lays it out as without the worker.  A crash restart
 * (the postmaster's, after a backend's crash) starts no worker: the
 * sessions lay the files out then.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "miscadmin.h"
#include "portability/instr_time.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "fdw/arrow_fdw.h"

#define META_SHARED_ENTRIES		256
/* the prewarm at the start takes at most half of the entries and of the memory */
#define META_PREWARM_ENTRIES	(META_SHARED_ENTRIES / 2)
/* a session marks an entry's image as used again after this long */
#define META_TOUCH_S			60

/* pg_warp.arrow_shared_metadata_size (MB; 0: none) and pg_warp.arrow_shared_metadata */
int			pg_warp_arrow_shared_metadata_size = 64;
bool		pg_warp_arrow_shared_metadata = true;
/* pg_warp.arrow_metadata_prewarm */
static bool meta_prewarm = true;

PGDLLEXPORT void pg_warp_meta_prewarm_main(Datum main_arg);

/* what meta_shared_put did */
typedef enum MetaPut
{
	META_PUT_DONE,				/* laid out */
	META_PUT_PRESENT,			/* an entry of the file was there */
	META_PUT_FULL,				/* no room for it */
	META_PUT_NONE				/* nothing of it can be laid out (flat_len 0, its path) */
} MetaPut;

typedef struct MetaSharedEntry
{
	int64		dev,
				ino,
				size,
				mtime_ns,
				ctime_ns;
	ArrowFlatBatches flat;		/* flat.batches NULL while it is written */
	ArrowMetaShared meta;		/* the fields' statistics and sizes */
	TimestampTz touched;		/* when a session last marked its image; 0: none has */
	char		path[MAXPGPATH];
} MetaSharedEntry;

typedef struct MetaShared
{
	slock_t		mutex;
	int			n_entries;
	bool		full_said;		/* the server log was told it is full */
	Size		cap;			/* the arena's bytes */
	Size		used;
	MetaSharedEntry entries[META_SHARED_ENTRIES];
	/* then the arena, MAXALIGN'ed */
} MetaShared;

static MetaShared *meta_shared;
static shmem_request_hook_type prev_shmem_request_hook;
static shmem_startup_hook_type prev_shmem_startup_hook;

static Size
meta_shared_size(void)
{
	return MAXALIGN(sizeof(MetaShared)) +
		(Size) pg_warp_arrow_shared_metadata_size * 1024 * 1024;
}

static uint8 *
meta_shared_arena(void)
{
	return (uint8 *) meta_shared + MAXALIGN(sizeof(MetaShared));
}

static void
meta_shared_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(meta_shared_size());
}

static void
meta_shared_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	meta_shared = ShmemInitStruct("pg_warp arrow metadata", meta_shared_size(), &found);
	if (!found)
	{
		SpinLockInit(&meta_shared->mutex);
		meta_shared->n_entries = 0;
		meta_shared->full_said = false;
		meta_shared->cap = (Size) pg_warp_arrow_shared_metadata_size * 1024 * 1024;
		meta_shared->used = 0;
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * arrow_meta_shared_init: the parameters, and (loaded by
 * shared_preload_libraries, with a size above 0) the memory
 */
void
arrow_meta_shared_init(void)
{
	DefineCustomBoolVariable("pg_warp.arrow_shared_metadata",
							 "Lets this session take and put large Arrow files' record batches' "
							 "metadata in shared memory.",
							 "Off: the session opens files as without pg_warp.arrow_shared_metadata_size.",
							 &pg_warp_arrow_shared_metadata,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	/* a server parameter exists only where it is read at the server's start */
	if (!process_shared_preload_libraries_in_progress)
		return;
	DefineCustomIntVariable("pg_warp.arrow_shared_metadata_size",
							"Shared memory for the metadata of large Arrow files' record batches.",
							"The first session that opens a file of 64 record batches or more "
							"lays them out there, and later sessions take them as they lie. "
							"Entries are never freed: once it is full, files are opened as without "
							"it until the server restarts. 0 turns it off.",
							&pg_warp_arrow_shared_metadata_size,
							64, 0, 64 * 1024,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.arrow_metadata_prewarm",
							 "Lays out large Arrow files' record batches' metadata in shared memory "
							 "at the server's start.",
							 "A background worker takes the metadata images kept in the data "
							 "directory, the files used last first, while they take at most half of "
							 "pg_warp.arrow_shared_metadata_size; the pg_warp service keeps the "
							 "newest in its own cache too.  Off: the first session that opens a file "
							 "after a restart lays it out.",
							 &meta_prewarm,
							 true,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);
#ifndef EXEC_BACKEND
	if (pg_warp_arrow_shared_metadata_size > 0)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = meta_shared_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = meta_shared_startup;
		if (meta_prewarm)
		{
			BackgroundWorker worker;

			memset(&worker, 0, sizeof(worker));
			worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
			worker.bgw_start_time = BgWorkerStart_PostmasterStart;
			worker.bgw_restart_time = BGW_NEVER_RESTART;
			snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_warp");
			snprintf(worker.bgw_function_name, BGW_MAXLEN, "pg_warp_meta_prewarm_main");
			snprintf(worker.bgw_name, BGW_MAXLEN, "pg_warp arrow metadata prewarm");
			snprintf(worker.bgw_type, BGW_MAXLEN, "pg_warp arrow metadata prewarm");
			RegisterBackgroundWorker(&worker);
		}
	}
#endif
}

/* the entry of s's file (of change time ctime_ns), written or not; NULL: none */
static MetaSharedEntry *
meta_shared_find_locked(const ArrowPgSource *s, int64 ctime_ns)
{
	for (int i = 0; i < meta_shared->n_entries; i++)
	{
		MetaSharedEntry *e = &meta_shared->entries[i];

		if (e->dev == s->dev && e->ino == s->ino && e->size == s->size &&
			e->mtime_ns == s->mtime_ns && e->ctime_ns == ctime_ns &&
			strcmp(e->path, s->path) == 0)
			return e;
	}
	return NULL;
}

/* the bytes of the fields' statistics and sizes of a file of n batches (meta_shared_fields) */
static Size
meta_shared_fields_len(int n_fields, int32 n)
{
	return MAXALIGN(sizeof(ArrowStatColumn) * n_fields) +
		MAXALIGN(sizeof(ArrowFieldSizes) * n_fields) +
		(Size) n_fields * (6 * sizeof(int64) * n + MAXALIGN(n));
}

/*
 * each top-level field's statistics (as the batches laid out flat at flat
 * hold them: the strings are theirs) and sizes in every batch of file, at
 * p (meta_shared_fields_len's bytes), into *meta; a field whose sizes
 * cannot be read has none there (the session then reads them itself and
 * raises its error)
 */
static void
meta_shared_fields(const ArrowFile *file, const ArrowBatchInfo *flat, uint8 *p,
				   ArrowMetaShared *meta)
{
	int			n_fields = file->schema.n_fields;
	Size		n = file->n_batches;
	ArrowStatColumn *stats = (ArrowStatColumn *) p;
	ArrowFieldSizes *sizes;
	ArrowError	err;

	p += MAXALIGN(sizeof(ArrowStatColumn) * n_fields);
	sizes = (ArrowFieldSizes *) p;
	p += MAXALIGN(sizeof(ArrowFieldSizes) * n_fields);
	for (int f = 0; f < n_fields; f++)
	{
		memset(&stats[f], 0, sizeof(ArrowStatColumn));
		stats[f].min_s = (const char **) p;
		stats[f].max_s = (const char **) (p + sizeof(int64) * n);
		stats[f].min = (int64 *) (p + 2 * sizeof(int64) * n);
		stats[f].max = (int64 *) (p + 3 * sizeof(int64) * n);
		sizes[f].bytes = (int64 *) (p + 4 * sizeof(int64) * n);
		sizes[f].nulls = (int64 *) (p + 5 * sizeof(int64) * n);
		stats[f].parsed = p + 6 * sizeof(int64) * n;
		p += 6 * sizeof(int64) * n + MAXALIGN(n);
		if (!arrow_pg_sizes_fill(file, f, &sizes[f], &err))
			sizes[f].bytes = sizes[f].nulls = NULL;
	}
	arrow_pg_stat_fill_all(file, flat, stats);
	meta->n_fields = n_fields;
	meta->stats = stats;
	meta->sizes = sizes;
}

/*
 * the file's batches laid out flat into a new entry, with its fields'
 * statistics and sizes, if there is room and no entry of it yet; another
 * session's open takes them once written.  A session's put marks the
 * file's image as used; the prewarm's (prewarm) does not, and finds room
 * only in the first half of the memory and of the entries, and no room is
 * not the server log's business then.  *put_len: the bytes it took.
 */
static MetaPut
meta_shared_put(const ArrowPgSource *s, int64 ctime_ns, const ArrowFile *file, bool prewarm,
				Size *put_len)
{
	uint64		flat_len = arrow_batches_flat_len(file);
	uint64		len = MAXALIGN(flat_len) + meta_shared_fields_len(file->schema.n_fields,
																   file->n_batches);
	MetaSharedEntry *e = NULL;
	uint8	   *dst = NULL;
	const ArrowBatchInfo *flat;
	ArrowMetaShared meta;
	bool		full = false;
	bool		say = false;
	bool		present = false;
	int			max_entries = prewarm ? META_PREWARM_ENTRIES : META_SHARED_ENTRIES;
	Size		cap = prewarm ? meta_shared->cap / 2 : meta_shared->cap;
	TimestampTz now = prewarm ? 0 : GetCurrentTimestamp();

	*put_len = 0;
	if (flat_len == 0 || strlen(s->path) >= MAXPGPATH)
		return META_PUT_NONE;
	SpinLockAcquire(&meta_shared->mutex);
	if (meta_shared_find_locked(s, ctime_ns) != NULL)
		present = true;
	else
	{
		full = meta_shared->n_entries >= max_entries || meta_shared->used > cap ||
			MAXALIGN(len) > cap - meta_shared->used;
		say = full && !prewarm && !meta_shared->full_said;
		meta_shared->full_said |= say;
		if (!full)
		{
			e = &meta_shared->entries[meta_shared->n_entries++];
			e->dev = s->dev;
			e->ino = s->ino;
			e->size = s->size;
			e->mtime_ns = s->mtime_ns;
			e->ctime_ns = ctime_ns;
			e->flat.batches = NULL;
			e->touched = now;
			strlcpy(e->path, s->path, MAXPGPATH);
			dst = meta_shared_arena() + meta_shared->used;
			meta_shared->used += MAXALIGN(len);
			*put_len = MAXALIGN(len);
		}
	}
	SpinLockRelease(&meta_shared->mutex);
	/* the first time for the server's log (once until it restarts), else DEBUG1 */
	if (say)
		ereport(LOG,
				(errmsg("pg_warp: no room in shared memory for the record batches of \"%s\" "
						"(%llu bytes): from now on, files that have no entry there are opened "
						"by each session until the server restarts",
						s->path, (unsigned long long) len),
				 errhint("Raise pg_warp.arrow_shared_metadata_size (%d MB, %d of %d files).",
						 pg_warp_arrow_shared_metadata_size, meta_shared->n_entries,
						 META_SHARED_ENTRIES)));
	else if (full && !prewarm)
		elog(DEBUG1, "pg_warp: no room in shared memory for the record batches of \"%s\" "
			 "(%llu bytes; pg_warp.arrow_shared_metadata_size)",
			 s->path, (unsigned long long) len);
	if (e == NULL)
		return present ? META_PUT_PRESENT : META_PUT_FULL;
	/* outside the lock: no other session reads the entry before it is written */
	flat = arrow_batches_flat_copy(file, dst, flat_len);
	if (flat != NULL)
		meta_shared_fields(file, flat, dst + MAXALIGN(flat_len), &meta);
	SpinLockAcquire(&meta_shared->mutex);
	e->flat.n_batches = file->n_batches;
	e->flat.metadata_version = file->metadata_version;
	if (flat != NULL)
		e->meta = meta;
	e->flat.batches = flat;
	SpinLockRelease(&meta_shared->mutex);
	if (flat != NULL)
		elog(DEBUG1, "pg_warp: the record batches of \"%s\" kept in shared memory (%llu bytes)",
			 s->path, (unsigned long long) len);
	if (!prewarm)
		arrow_pg_image_touch(s, ctime_ns);
	return flat != NULL ? META_PUT_DONE : META_PUT_FULL;
}

/*
 * arrow_pg_open_shared: s's file (of change time ctime_ns; -1: unknown)
 * opened into *out (alloc's memory) as arrow_pg_open_image does, its
 * record batches taken from shared memory where another session laid them
 * out, and laid out there for the next sessions where none had (a file of
 * ARROW_META_MIN_BATCHES batches or more)
 */
int
arrow_pg_open_shared(const ArrowPgSource *s, int64 ctime_ns, const ArrowAllocator *alloc,
					 ArrowFile **out, const ArrowMetaShared **shared, ArrowError *err)
{
	MetaSharedEntry *e;
	ArrowFlatBatches flat;
	const ArrowMetaShared *meta = NULL;
	bool		present = false;
	bool		touch = false;
	bool		used;
	int			rc;
	TimestampTz now;

	*shared = NULL;
	if (meta_shared == NULL || !pg_warp_arrow_shared_metadata || ctime_ns < 0)
		return arrow_pg_open_image(s, ctime_ns, alloc, out, err);
	memset(&flat, 0, sizeof(flat));
	now = GetCurrentTimestamp();
	SpinLockAcquire(&meta_shared->mutex);
	if ((e = meta_shared_find_locked(s, ctime_ns)) != NULL)
	{
		present = true;
		flat = e->flat;
		meta = &e->meta;		/* written with the batches, never changed */
		/* its image marked as used: once it is written, and then once a while */
		touch = flat.batches != NULL &&
			(e->touched == 0 || now - e->touched >= (TimestampTz) META_TOUCH_S * USECS_PER_SEC);
		if (touch)
			e->touched = now;
	}
	SpinLockRelease(&meta_shared->mutex);
	if (touch)
		arrow_pg_image_touch(s, ctime_ns);
	if (flat.batches == NULL)
	{
		rc = arrow_pg_open_image(s, ctime_ns, alloc, out, err);
		if (rc == ARROW_OK && !present && (*out)->n_batches >= ARROW_META_MIN_BATCHES)
		{
			Size		put_len;

			(void) meta_shared_put(s, ctime_ns, *out, false, &put_len);
		}
		return rc;
	}
	rc = arrow_file_open_flat(&s->src, alloc, &flat, out, &used, err);
	if (rc == ARROW_OK && used && meta->n_fields == (*out)->schema.n_fields)
	{
		*shared = meta;
		elog(DEBUG1, "pg_warp: the record batches of \"%s\" from shared memory", s->path);
	}
	return rc;
}

/* ---------------------------------------------------------------- the prewarm */

/* what meta_prewarm_one did with an image */
typedef enum MetaPrewarm
{
	PREWARM_LAID,				/* its file laid out */
	PREWARM_PRESENT,			/* a session had laid it out first */
	PREWARM_GONE,				/* the file changed or is gone, or was not read */
	PREWARM_PASSED,				/* it cannot be laid out, or does not fit */
} MetaPrewarm;

/*
 * the file of image img laid out in shared memory (cxt: the memory it may
 * use), when it is still the file the image was made of; an error opening
 * it is caught and logged (DEBUG1) as the file left out; *put_len: the
 * bytes its entry took
 */
static MetaPrewarm
meta_prewarm_one(const ArrowImageEntry *img, MemoryContext cxt, Size *put_len)
{
	MemoryContext old = MemoryContextSwitchTo(cxt);
	ArrowPgSource *s = palloc0(sizeof(ArrowPgSource));
	volatile MetaPrewarm result = PREWARM_GONE;
	struct stat st;

	s->fd = -1;
	*put_len = 0;
	/* checked before it is opened: a FIFO or a device at its path is left alone */
	if (stat(img->source, &st) != 0 || !S_ISREG(st.st_mode) ||
		(int64) st.st_dev != img->id.dev || (int64) st.st_ino != img->id.ino ||
		(int64) st.st_size != img->id.size)
	{
		MemoryContextSwitchTo(old);
		return PREWARM_GONE;
	}
	PG_TRY();
	{
		ArrowFile  *file;
		ArrowError	err;
		int64		ctime_ns;

		arrow_pg_source_init(s, img->source, NULL);
		ctime_ns = arrow_pg_source_ctime_ns(s);
		if (s->dev == img->id.dev && s->ino == img->id.ino && s->size == img->id.size &&
			s->mtime_ns == img->id.mtime_ns && ctime_ns == img->id.ctime_ns &&
			arrow_pg_open_image(s, ctime_ns, arrow_pg_allocator(cxt), &file, &err) == ARROW_OK &&
			file->n_batches >= ARROW_META_MIN_BATCHES)
		{
			switch (meta_shared_put(s, ctime_ns, file, true, put_len))
			{
				case META_PUT_DONE:
					result = PREWARM_LAID;
					break;
				case META_PUT_PRESENT:
					result = PREWARM_PRESENT;
					break;
				case META_PUT_FULL:
				case META_PUT_NONE:
					result = PREWARM_PASSED;
					break;
			}
		}
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		elog(DEBUG1, "pg_warp: the metadata prewarm left out \"%s\": %s", img->source,
			 edata->message);
		result = PREWARM_GONE;
	}
	PG_END_TRY();
	if (s->fd >= 0)
		arrow_pg_source_close(s);
	MemoryContextSwitchTo(old);
	return result;
}

/* has the prewarm taken all it may: half of the entries or of the memory */
static bool
meta_prewarm_full(void)
{
	bool		full;

	SpinLockAcquire(&meta_shared->mutex);
	full = meta_shared->n_entries >= META_PREWARM_ENTRIES ||
		meta_shared->used >= meta_shared->cap / 2;
	SpinLockRelease(&meta_shared->mutex);
	return full;
}

/*
 * pg_warp_meta_prewarm_main: the background worker that lays out, at the
 * server's start, the files of the images used last (see the head of this
 * file); the server log says what it did
 */
void
pg_warp_meta_prewarm_main(Datum main_arg)
{
	ArrowImageEntry *imgs;
	MemoryContext cxt;
	instr_time	start,
				took;
	Size		bytes = 0;
	int			n,
				laid = 0,
				gone = 0;

	/* a shutdown ends it between files, not inside a spinlock or an entry */
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	/* nothing to do where the sessions take nothing from shared memory */
	if (meta_shared == NULL || !pg_warp_arrow_shared_metadata)
		proc_exit(0);
	INSTR_TIME_SET_CURRENT(start);
	imgs = palloc(sizeof(ArrowImageEntry) * META_PREWARM_ENTRIES);
	n = arrow_image_file_recent(ARROW_IMAGE_DIR, imgs, META_PREWARM_ENTRIES);
	cxt = AllocSetContextCreate(TopMemoryContext, "pg_warp arrow metadata prewarm",
								ALLOCSET_DEFAULT_SIZES);
	for (int i = 0; i < n && !meta_prewarm_full(); i++)
	{
		Size		put_len;
		MetaPrewarm r;

		CHECK_FOR_INTERRUPTS();
		r = meta_prewarm_one(&imgs[i], cxt, &put_len);
		MemoryContextReset(cxt);
		bytes += put_len;
		laid += r == PREWARM_LAID;
		gone += r == PREWARM_GONE;
	}
	INSTR_TIME_SET_CURRENT(took);
	INSTR_TIME_SUBTRACT(took, start);
	if (laid > 0 || gone > 0)
		ereport(LOG,
				(errmsg("pg_warp: the record batches of %d large Arrow file(s) laid out in shared "
						"memory at the start (%zu kB, %.1f ms), %d changed or gone",
						laid, bytes / 1024, INSTR_TIME_GET_MILLISEC(took), gone)));
	proc_exit(0);
}
