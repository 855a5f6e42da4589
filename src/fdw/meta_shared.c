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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/guc.h"

#include "fdw/arrow_fdw.h"

#define META_SHARED_ENTRIES		256

/* pg_warp.arrow_shared_metadata_size (MB; 0: none) and pg_warp.arrow_shared_metadata */
int			pg_warp_arrow_shared_metadata_size = 64;
bool		pg_warp_arrow_shared_metadata = true;

typedef struct MetaSharedEntry
{
	int64		dev,
				ino,
				size,
				mtime_ns,
				ctime_ns;
	ArrowFlatBatches flat;		/* flat.batches NULL while it is written */
	ArrowMetaShared meta;		/* the fields' statistics and sizes */
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
#ifndef EXEC_BACKEND
	if (pg_warp_arrow_shared_metadata_size > 0)
	{
		prev_shmem_request_hook = shmem_request_hook;
		shmem_request_hook = meta_shared_request;
		prev_shmem_startup_hook = shmem_startup_hook;
		shmem_startup_hook = meta_shared_startup;
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
 * session's open takes them once written
 */
static void
meta_shared_put(const ArrowPgSource *s, int64 ctime_ns, const ArrowFile *file)
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

	if (flat_len == 0 || strlen(s->path) >= MAXPGPATH)
		return;
	SpinLockAcquire(&meta_shared->mutex);
	if (meta_shared_find_locked(s, ctime_ns) == NULL)
	{
		full = meta_shared->n_entries >= META_SHARED_ENTRIES ||
			MAXALIGN(len) > meta_shared->cap - meta_shared->used;
		say = full && !meta_shared->full_said;
		meta_shared->full_said |= full;
		if (!full)
		{
			e = &meta_shared->entries[meta_shared->n_entries++];
			e->dev = s->dev;
			e->ino = s->ino;
			e->size = s->size;
			e->mtime_ns = s->mtime_ns;
			e->ctime_ns = ctime_ns;
			e->flat.batches = NULL;
			strlcpy(e->path, s->path, MAXPGPATH);
			dst = meta_shared_arena() + meta_shared->used;
			meta_shared->used += MAXALIGN(len);
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
	else if (full)
		elog(DEBUG1, "pg_warp: no room in shared memory for the record batches of \"%s\" "
			 "(%llu bytes; pg_warp.arrow_shared_metadata_size)",
			 s->path, (unsigned long long) len);
	if (e == NULL)
		return;
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
	bool		used;
	int			rc;

	*shared = NULL;
	if (meta_shared == NULL || !pg_warp_arrow_shared_metadata || ctime_ns < 0)
		return arrow_pg_open_image(s, ctime_ns, alloc, out, err);
	memset(&flat, 0, sizeof(flat));
	SpinLockAcquire(&meta_shared->mutex);
	if ((e = meta_shared_find_locked(s, ctime_ns)) != NULL)
	{
		present = true;
		flat = e->flat;
		meta = &e->meta;		/* written with the batches, never changed */
	}
	SpinLockRelease(&meta_shared->mutex);
	if (flat.batches == NULL)
	{
		rc = arrow_pg_open_image(s, ctime_ns, alloc, out, err);
		if (rc == ARROW_OK && !present && (*out)->n_batches >= ARROW_META_MIN_BATCHES)
			meta_shared_put(s, ctime_ns, *out);
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
