/*-------------------------------------------------------------------------
 *
 * file.c
 *		Glue between the Arrow library (src/arrow, plain C) and the backend:
 *		an ArrowAllocator over palloc, an ArrowSource over a file descriptor
 *		that PostgreSQL closes at transaction abort, and the translation of
 *		ArrowError into ereport.
 *
 * The library must see NULL when memory runs out (it then unwinds and
 * returns ARROW_ERR_NOMEM), so the allocator uses MCXT_ALLOC_NO_OOM.  The
 * library never longjmps; every ereport happens here, after it returned.
 *
 * Files are opened with OpenTransientFile: the descriptor is closed by
 * PostgreSQL when the transaction aborts, so an error while reading never
 * leaks it.  A source can be closed between uses (arrow_pg_source_close), so
 * a scan over many files holds at most one descriptor at a time; the next
 * read reopens it.
 *
 * Only regular files are read.  The path is checked with stat() before it
 * is opened (a FIFO, socket or device is never opened), the open does not
 * block (O_NONBLOCK) and fstat() checks what was opened.  A source records
 * the identity of its file (device, inode, size, modification time); a
 * reopened file with another identity is an error (ESTALE in the ArrowError,
 * "file changed during scan"), so a file renamed over the path while it is
 * read is never mixed with the one the metadata came from.
 *
 * The files of a "dir" table are confined to that directory: a path that
 * resolves (symbolic links followed) to a file elsewhere is refused, so that
 * whoever may write into the directory cannot make the table read another
 * file the server can read.  The file opened must be the one that was
 * checked (device and inode), so a link swapped between the check and the
 * open is caught too.  The warp service opens files by path as well, and
 * reads one only when its identity is the one the backend recorded here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "fdw/arrow_fdw.h"
#include "arrow/arrow_io.h"

/*
 * The allocator stores the requested size in front of each block so that
 * realloc can copy without knowing the palloc chunk layout.  The header
 * keeps MAXALIGN alignment of the returned pointer.
 */
#define ARROW_PG_HDR	MAXALIGN(sizeof(Size) * 2)

static void *
arrow_pg_malloc(void *ctx, size_t size)
{
	char	   *p;

	if (size > MaxAllocHugeSize - ARROW_PG_HDR)
		return NULL;
	p = MemoryContextAllocExtended((MemoryContext) ctx, size + ARROW_PG_HDR,
								   MCXT_ALLOC_NO_OOM | MCXT_ALLOC_HUGE);
	if (p == NULL)
		return NULL;
	*(Size *) p = size;
	return p + ARROW_PG_HDR;
}

static void
arrow_pg_free(void *ctx, void *ptr)
{
	if (ptr != NULL)
		pfree((char *) ptr - ARROW_PG_HDR);
}

static void *
arrow_pg_realloc(void *ctx, void *ptr, size_t size)
{
	void	   *np;
	Size		old;

	if (ptr == NULL)
		return arrow_pg_malloc(ctx, size);
	old = *(Size *) ((char *) ptr - ARROW_PG_HDR);
	np = arrow_pg_malloc(ctx, size);
	if (np == NULL)
		return NULL;			/* the old block stays valid, like realloc */
	memcpy(np, ptr, Min(old, size));
	arrow_pg_free(ctx, ptr);
	return np;
}

/*
 * An allocator whose memory lives in 'cxt'.  The returned struct is itself
 * allocated in cxt and lives as long as it.
 */
ArrowAllocator *
arrow_pg_allocator(MemoryContext cxt)
{
	ArrowAllocator *a = MemoryContextAllocZero(cxt, sizeof(ArrowAllocator));

	a->malloc_fn = arrow_pg_malloc;
	a->realloc_fn = arrow_pg_realloc;
	a->free_fn = arrow_pg_free;
	a->ctx = cxt;
	return a;
}

/* ----------------------------------------------------------------
 * ArrowSource over a transient file descriptor
 * ----------------------------------------------------------------
 */
static bool arrow_pg_source_reopen(ArrowPgSource *s, ArrowError *err);

static int
arrow_pg_read_at(void *ctx, int64_t offset, void *dst, size_t len,
				 ArrowError *err)
{
	ArrowPgSource *s = (ArrowPgSource *) ctx;
	int			rc;

	if (offset < 0 || (int64) len > s->size || offset > s->size - (int64) len)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end of the file (%lld bytes)",
							   len, (long long) offset, (long long) s->size);
	if (s->fd < 0 && !arrow_pg_source_reopen(s, err))
		return ARROW_ERR_IO;
	rc = arrow_pread_all(s->fd, dst, len, offset, NULL, err);
	if (rc == ARROW_OK)
		s->bytes_read += len;
	else if (rc == ARROW_ERR_INVALID && err != NULL)
		strlcat(err->message, " (the file shrank while being read)", sizeof(err->message));
	return rc;
}

/* the flags of every open of an Arrow file: never blocks, not inherited */
#define ARROW_PG_OPEN_FLAGS	(O_RDONLY | O_NONBLOCK | O_CLOEXEC | PG_BINARY)

static int64
mtime_ns_of(const struct stat *st)
{
	return (int64) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/*
 * Reopens the closed source and checks that the path still names the file
 * the source was made for.  Returns false with err set (sys_errno ESTALE
 * when the identity differs) and the source closed.
 */
static bool
arrow_pg_source_reopen(ArrowPgSource *s, ArrowError *err)
{
	struct stat st;
	int			save;

	s->fd = OpenTransientFile(s->path, ARROW_PG_OPEN_FLAGS);
	if (s->fd < 0)
	{
		save = errno;
		arrow_set_error(err, ARROW_ERR_IO, "could not open file: %s",
						strerror(save));
		err->sys_errno = save;
		return false;
	}
	if (fstat(s->fd, &st) != 0)
	{
		save = errno;
		arrow_pg_source_close(s);
		arrow_set_error(err, ARROW_ERR_IO, "could not stat file: %s",
						strerror(save));
		err->sys_errno = save;
		return false;
	}
	if (!S_ISREG(st.st_mode) || (int64) st.st_dev != s->dev ||
		(int64) st.st_ino != s->ino || (int64) st.st_size != s->size ||
		mtime_ns_of(&st) != s->mtime_ns)
	{
		arrow_pg_source_close(s);
		arrow_set_error(err, ARROW_ERR_IO,
						"the path names another file than when the file was opened");
		err->sys_errno = ESTALE;
		return false;
	}
	return true;
}

/* ereport unless 'st' describes a regular file */
static void
check_regular(const struct stat *st, const char *path)
{
	if (S_ISREG(st->st_mode))
		return;
	if (S_ISDIR(st->st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a directory, not an Arrow file", path),
				 errhint("Use the option \"dir\" to read every file in a directory.")));
	ereport(ERROR,
			(errcode(ERRCODE_WRONG_OBJECT_TYPE),
			 errmsg("\"%s\" is not a regular file", path),
			 errdetail("It is a %s; arrow_fdw reads only regular files.",
					   S_ISFIFO(st->st_mode) ? "named pipe (FIFO)" :
					   S_ISSOCK(st->st_mode) ? "socket" :
					   S_ISCHR(st->st_mode) ? "character device" :
					   S_ISBLK(st->st_mode) ? "block device" : "special file")));
}

/*
 * ereport when 'path' exists and is not a regular file (checked by the
 * validator, where a missing file is not yet an error).  Opens nothing.
 */
void
arrow_pg_check_regular(const char *path)
{
	struct stat st;

	if (stat(path, &st) == 0)
		check_regular(&st, path);
}

/*
 * Resolves 'path' (every symbolic link followed) and tells whether the file
 * it names lies directly in directory 'dir', given as realpath() gives it.
 * Returns 0 when it does, with *st its lstat (of the resolved path: no
 * link), an errno value when the path cannot be resolved or the file not
 * examined, and -1 when the file lies elsewhere.
 */
int
arrow_pg_resolve_within(const char *path, const char *dir, struct stat *st)
{
	char	   *real = realpath(path, NULL);
	size_t		len = strlen(dir);
	int			rc;

	if (real == NULL)
		return errno;
	if (len > 0 && dir[len - 1] == '/')
		len--;					/* the root directory */
	if (strncmp(real, dir, len) != 0 || real[len] != '/' ||
		real[len + 1] == '\0' || strchr(real + len + 1, '/') != NULL)
		rc = -1;
	else
		rc = lstat(real, st) == 0 ? 0 : errno;
	free(real);
	return rc;
}

/*
 * ereport unless 'path' resolves to a file directly in directory 'dir' (see
 * arrow_pg_resolve_within), whose stat goes to *st.
 */
static void
check_within(const char *path, const char *dir, struct stat *st)
{
	int			rc = arrow_pg_resolve_within(path, dir, st);

	if (rc > 0)
		arrow_pg_report_errno(rc, path);
	if (rc < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("Arrow file \"%s\" lies outside directory \"%s\"", path, dir),
				 errdetail("It is a symbolic link to a file in another directory."),
				 errhint("A \"dir\" table follows symbolic links only to files in the same directory, unless its option \"follow_symlinks\" is 'true'.")));
}

/*
 * Prepares a source for 'path' and opens it (ereport on failure: missing
 * file, permissions, not a regular file, and with 'within' not NULL, a file
 * that does not lie directly in that directory: see file header).  The
 * identity of the file opened (fstat: device, inode, size, modification
 * time) is recorded; the descriptor stays open until arrow_pg_source_close.
 */
void
arrow_pg_source_init(ArrowPgSource *s, const char *path, const char *within)
{
	struct stat st;
	struct stat checked;

	memset(s, 0, sizeof(ArrowPgSource));
	s->path = pstrdup(path);
	s->fd = -1;
	/* refuse a FIFO, socket or device (or a file elsewhere) before opening it */
	if (within != NULL)
		check_within(path, within, &st);
	else if (stat(path, &st) != 0)
		arrow_pg_report_errno(errno, path);
	check_regular(&st, path);
	checked = st;
	s->fd = OpenTransientFile(s->path, ARROW_PG_OPEN_FLAGS);
	if (s->fd < 0)
		arrow_pg_report_errno(errno, path);
	/* what was opened may differ from what stat saw */
	if (fstat(s->fd, &st) != 0)
		arrow_pg_report_errno(errno, path);
	check_regular(&st, path);
	if (within != NULL && (st.st_dev != checked.st_dev || st.st_ino != checked.st_ino))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("file \"%s\" changed during scan", path),
				 errdetail("The path named another file when it was opened than when it was checked."),
				 errhint("A file must not be replaced or modified while a query reads it; run the query again.")));
	s->size = st.st_size;
	s->mtime_ns = mtime_ns_of(&st);
	s->dev = (int64) st.st_dev;
	s->ino = (int64) st.st_ino;
	s->src.read_at = arrow_pg_read_at;
	s->src.size = s->size;
	s->src.ctx = s;
}

/* Closes the descriptor (if open); the next read reopens it. */
void
arrow_pg_source_close(ArrowPgSource *s)
{
	if (s->fd >= 0)
	{
		CloseTransientFile(s->fd);
		s->fd = -1;
	}
}

/*
 * ereport for a failed open/stat of an Arrow file.
 */
void
arrow_pg_report_errno(int save_errno, const char *path)
{
	errno = save_errno;
	if (save_errno == ENOENT || save_errno == ENOTDIR)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("Arrow file \"%s\" does not exist", path),
				 errhint("Check the options \"file\", \"files\" or \"dir\" of the foreign table.")));
	if (save_errno == EACCES || save_errno == EPERM)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied to read Arrow file \"%s\"", path),
				 errhint("The file must be readable by the operating system user that runs the PostgreSQL server.")));
	ereport(ERROR,
			(errcode_for_file_access(),
			 errmsg("could not open Arrow file \"%s\": %m", path)));
}

/*
 * ereport for an error returned by the Arrow library while working on
 * 'path'.  'what' says what was being done ("open", "read record batch 3 of").
 */
void
arrow_pg_report(const ArrowError *err, const char *what, const char *path)
{
	if (err->code == ARROW_ERR_IO && err->sys_errno == ESTALE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("file \"%s\" changed during scan", path),
				 errdetail("While trying to %s Arrow file \"%s\": %s.",
						   what, path, err->message),
				 errhint("A file must not be replaced or modified while a query reads it; run the query again.")));
	switch (err->code)
	{
		case ARROW_ERR_IO:
			if (err->sys_errno != 0)
			{
				if (err->sys_errno == ENOENT || err->sys_errno == EACCES ||
					err->sys_errno == EPERM || err->sys_errno == ENOTDIR)
					arrow_pg_report_errno(err->sys_errno, path);
				errno = err->sys_errno;
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not %s Arrow file \"%s\": %s",
								what, path, err->message)));
			}
			ereport(ERROR,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("could not %s Arrow file \"%s\": %s",
							what, path, err->message)));
			break;
		case ARROW_ERR_NOMEM:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("out of memory"),
					 errdetail("While trying to %s Arrow file \"%s\": %s.",
							   what, path, err->message)));
			break;
		case ARROW_ERR_UNSUPPORTED:
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("could not %s Arrow file \"%s\": %s",
							what, path, err->message),
					 errhint("The file uses a feature of Apache Arrow that pg_warp does not support.")));
			break;
		case ARROW_ERR_LIMIT:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("could not %s Arrow file \"%s\": %s",
							what, path, err->message),
					 errhint("Raise pg_warp.arrow_max_buffer_size if the file is trusted.")));
			break;
		case ARROW_ERR_NOT_ARROW:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not %s Arrow file \"%s\": %s",
							what, path, err->message),
					 errhint("arrow_fdw reads only the Arrow IPC file and stream formats; convert CSV, Parquet or other files to Arrow first.")));
			break;
		case ARROW_ERR_INVALID:
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("could not %s Arrow file \"%s\": %s",
							what, path, err->message),
					 errhint("The file is not a valid Arrow IPC file, or it is truncated or corrupt.")));
			break;
	}
}

/*
 * When an Arrow file cannot be opened while the journal of an interrupted
 * pg2arrow --append lies next to it, reports that (ereport ERROR) instead
 * of a bare "not a valid Arrow file"; returns if there is no journal.
 */
static void
report_interrupted_append(const ArrowError *err, const char *path)
{
	char	   *journal = psprintf("%s%s", path, ARROW_APPEND_JOURNAL_SUFFIX);
	struct stat st;

	if (stat(journal, &st) != 0)
	{
		pfree(journal);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("could not open Arrow file \"%s\": %s", path, err->message),
			 errdetail("An interrupted pg2arrow --append left \"%s\".", journal),
			 errhint("Run \"pg2arrow --recover %s\" to put the file back as it was before that append.",
					 path)));
}

/* ----------------------------------------------------------------
 * The backend's cache of opened files' metadata
 *
 * Opening a file reads every record batch's message (one read each): a
 * file of pg2arrow's 8 MB batches has a thousand of them, and a query opens
 * its table's files several times (its paths, its plan, its executor).  The
 * metadata of the files opened last is kept, keyed by the identity of what
 * was opened (device, inode, size, modification and change times, path),
 * and every open of it copies it (arrow_file_copy) instead of reading it:
 * the first open reads it straight into a new entry (copying it there
 * after reading it took a fifth of a new session's first planning over a
 * file of 1,400 batches).  A file replaced, appended to, truncated or
 * rewritten has another identity and is read again.  The copy's array of
 * record batches is the entry's, and so are the batches' arrays (copying a
 * thousand batches' statistics took most of a star query's planning, and
 * the array of batches alone, about 150 bytes each, half of a warm
 * session's EXPLAIN over 1,256 batches: seven opens): an entry that a copy
 * was made of is pinned until the end of the transaction (the copies live
 * in the memory of the query that opened them) and is not evicted before.
 * ----------------------------------------------------------------
 */
#define META_CACHE_ENTRIES	32
#define META_CACHE_BYTES	((Size) 64 << 20)

typedef struct MetaCacheEntry
{
	char	   *path;
	int64		dev,
				ino,
				size,
				mtime_ns,
				ctime_ns;
	MemoryContext cxt;			/* holds the entry's path and file */
	ArrowFile  *file;			/* never read through: copied from */
	uint64		used;			/* when it was last used (a counter) */
	bool		pinned;			/* copies of this transaction point into it */
	/*
	 * the min and max statistics of each top-level field in every batch,
	 * found and parsed on first use (arrow_pg_stat_column; in cxt, NULL
	 * until then): looking them up by key in each batch's metadata and
	 * parsing them took most of the planning and executor start of a query
	 * over a file of a thousand batches, for every query
	 */
	int			n_stat_fields;
	ArrowStatColumn **stats;
	/* each top-level field's bytes and nulls in every batch (arrow_pg_field_sizes) */
	ArrowFieldSizes **field_sizes;
	/* the batches came from shared memory, and these with them (meta_shared.c) */
	const ArrowMetaShared *shared;
} MetaCacheEntry;

static MetaCacheEntry meta_cache[META_CACHE_ENTRIES];
static uint64 meta_cache_clock;
static const ArrowSource meta_cache_no_source;	/* the cached files read nothing */
static bool meta_cache_callback;	/* meta_cache_unpin is registered */

/* at the end of a transaction: its copies are gone, no entry is pinned */
static void
meta_cache_unpin(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		for (int i = 0; i < META_CACHE_ENTRIES; i++)
			meta_cache[i].pinned = false;
}

/* see arrow_fdw.h */
int64
arrow_pg_source_ctime_ns(const ArrowPgSource *s)
{
	struct stat st;

	if (s->fd < 0 || fstat(s->fd, &st) != 0)
		return -1;
	return (int64) st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
}

static void
meta_cache_drop(MetaCacheEntry *e)
{
	if (e->cxt != NULL)
		MemoryContextDelete(e->cxt);
	memset(e, 0, sizeof(MetaCacheEntry));
}

/* the entry for the file s opened, or NULL */
static MetaCacheEntry *
meta_cache_find(const ArrowPgSource *s, int64 ctime_ns)
{
	for (int i = 0; i < META_CACHE_ENTRIES; i++)
	{
		MetaCacheEntry *e = &meta_cache[i];

		if (e->file != NULL && e->dev == s->dev && e->ino == s->ino && e->size == s->size &&
			e->mtime_ns == s->mtime_ns && e->ctime_ns == ctime_ns &&
			strcmp(e->path, s->path) == 0)
			return e;
	}
	return NULL;
}

/*
 * meta_cache_open: opens the file of s (ctime_ns its change time) into a
 * new entry of the cache, in place of the entry used longest ago: its
 * metadata read once, into the entry's memory, for the caller to take a
 * copy of as from any entry (the entry comes back pinned); entries go
 * while the cache holds more than META_CACHE_BYTES.  NULL with *err set
 * when the open failed, or with err->code 0 when every entry is pinned
 * (the caller then opens the file itself).
 */
static MetaCacheEntry *
meta_cache_open(const ArrowPgSource *s, int64 ctime_ns, ArrowError *err)
{
	MetaCacheEntry *e = NULL;
	MemoryContext cxt;
	ArrowFile  *file;
	const ArrowMetaShared *shared;
	Size		total = 0;

	for (int i = 0; i < META_CACHE_ENTRIES; i++)
		if (!meta_cache[i].pinned && (e == NULL || meta_cache[i].used < e->used))
			e = &meta_cache[i];
	if (e == NULL)
		return NULL;
	meta_cache_drop(e);
	/* under the current context until the file is read: an error leaves nothing behind */
	cxt = AllocSetContextCreate(CurrentMemoryContext, "arrow_fdw file metadata",
								ALLOCSET_DEFAULT_SIZES);
	/*
	 * its batches from the shared memory where another session laid them out
	 * (meta_shared.c), else from the image an earlier session kept, where
	 * there is one (meta_image.c)
	 */
	if (arrow_pg_open_shared(s, ctime_ns, arrow_pg_allocator(cxt), &file, &shared, err) != ARROW_OK)
	{
		MemoryContextDelete(cxt);
		return NULL;
	}
	file->source = meta_cache_no_source;	/* never read through: only copied from */
	MemoryContextSetParent(cxt, TopMemoryContext);
	e->cxt = cxt;
	e->file = file;
	e->path = MemoryContextStrdup(cxt, s->path);
	e->dev = s->dev;
	e->ino = s->ino;
	e->size = s->size;
	e->mtime_ns = s->mtime_ns;
	e->ctime_ns = ctime_ns;
	e->shared = shared;
	e->used = ++meta_cache_clock;
	e->pinned = true;
	for (int i = 0; i < META_CACHE_ENTRIES; i++)
		if (meta_cache[i].cxt != NULL)
			total += MemoryContextMemAllocated(meta_cache[i].cxt, true);
	while (total > META_CACHE_BYTES)
	{
		MetaCacheEntry *old = NULL;

		for (int i = 0; i < META_CACHE_ENTRIES; i++)
			if (meta_cache[i].cxt != NULL && !meta_cache[i].pinned &&
				(old == NULL || meta_cache[i].used < old->used))
				old = &meta_cache[i];
		if (old == NULL)
			break;				/* the rest is pinned: over the limit until the end */
		total -= MemoryContextMemAllocated(old->cxt, true);
		meta_cache_drop(old);
	}
	return e;
}

/* is file a copy of entry e's file (its batches' arrays are e's) */
static bool
meta_cache_holds(const MetaCacheEntry *e, const ArrowFile *file)
{
	return e->file != NULL && e->file->n_batches == file->n_batches &&
		e->file->batches[0].nodes == file->batches[0].nodes &&
		e->file->batches[0].message_offset == file->batches[0].message_offset;
}

/* the entry that `file` (a copy arrow_pg_open made of it) shares its batches' arrays with */
static MetaCacheEntry *
meta_cache_of(const ArrowFile *file)
{
	static MetaCacheEntry *last;

	if (file->n_batches <= 0 || file->batches[0].nodes == NULL)
		return NULL;
	if (last != NULL && meta_cache_holds(last, file))
		return last;
	for (int i = 0; i < META_CACHE_ENTRIES; i++)
		if (meta_cache_holds(&meta_cache[i], file))
			return last = &meta_cache[i];
	return NULL;
}

/*
 * arrow_pg_stat_column
 *		The min and max statistics of top-level field `field` in every record
 *		batch of `file` (ArrowStatColumn, arrow_fdw.h), when file is a copy of a
 *		cached file's metadata made by arrow_pg_open in this transaction (the
 *		entry is pinned until its end): found and parsed once per field and
 *		kept with the entry.  NULL for any other file; the caller then looks
 *		each batch's up itself (arrow_batch_stat_strings).
 */
const ArrowStatColumn *
arrow_pg_stat_column(const ArrowFile *file, int field)
{
	MetaCacheEntry *e = meta_cache_of(file);
	ArrowStatColumn *c;
	int32		n = file->n_batches;

	if (e == NULL || field < 0 || field >= e->file->schema.n_fields)
		return NULL;
	if (e->stats == NULL)
	{
		e->n_stat_fields = e->file->schema.n_fields;
		e->stats = MemoryContextAllocZero(e->cxt, sizeof(ArrowStatColumn *) * e->n_stat_fields);
	}
	if (e->stats[field] != NULL)
		return e->stats[field];
	c = MemoryContextAllocZero(e->cxt, sizeof(ArrowStatColumn));
	if (e->shared != NULL)
	{
		/* laid out in shared memory: this copy's Datums are its own */
		*c = e->shared->stats[field];
		e->stats[field] = c;
		return c;
	}
	c->min_s = MemoryContextAlloc(e->cxt, sizeof(char *) * n);
	c->max_s = MemoryContextAlloc(e->cxt, sizeof(char *) * n);
	c->min = MemoryContextAlloc(e->cxt, sizeof(int64) * n);
	c->max = MemoryContextAlloc(e->cxt, sizeof(int64) * n);
	c->parsed = MemoryContextAlloc(e->cxt, sizeof(uint8) * n);
	arrow_pg_stat_fill(e->file, e->file->batches, field, c);
	e->stats[field] = c;
	return c;
}

/* batch b's min and max strings in c parsed into its min, max and parsed */
static inline void
stat_parse_batch(ArrowStatColumn *c, ArrowTypeId id, int32 b)
{
	c->parsed[b] = 0;
	if (c->as_bits && arrow_stat_parse(id, c->min_s[b], &c->min[b]))
		c->parsed[b] |= ARROW_STAT_MIN;
	if (c->as_bits && arrow_stat_parse(id, c->max_s[b], &c->max[b]))
		c->parsed[b] |= ARROW_STAT_MAX;
}

/*
 * arrow_pg_stat_fill: the min and max statistics of top-level field
 * `field` of file, as `batches` (file's, or a copy of them) hold them, into
 * c, whose five arrays of a batch each the caller gave
 */
void
arrow_pg_stat_fill(const ArrowFile *file, const ArrowBatchInfo *batches, int field,
				   ArrowStatColumn *c)
{
	ArrowTypeId id = file->schema.fields[field].type.id;
	int64		bits;

	c->as_bits = arrow_stat_parse(id, "0", &bits);
	for (int32 b = 0; b < file->n_batches; b++)
	{
		arrow_batch_stat_strings(&batches[b], field, &c->min_s[b], &c->max_s[b]);
		stat_parse_batch(c, id, b);
	}
}

/*
 * arrow_pg_stat_fill_all: arrow_pg_stat_fill of every top-level field of
 * file into stats[field], reading each batch's metadata once
 */
void
arrow_pg_stat_fill_all(const ArrowFile *file, const ArrowBatchInfo *batches,
					   ArrowStatColumn *stats)
{
	int			n_fields = file->schema.n_fields;
	const char **smin = palloc(sizeof(char *) * Max(n_fields, 1));
	const char **smax = palloc(sizeof(char *) * Max(n_fields, 1));
	int64		bits;

	for (int f = 0; f < n_fields; f++)
		stats[f].as_bits = arrow_stat_parse(file->schema.fields[f].type.id, "0", &bits);
	for (int32 b = 0; b < file->n_batches; b++)
	{
		arrow_batch_stats_all(&batches[b], n_fields, smin, smax);
		for (int f = 0; f < n_fields; f++)
		{
			stats[f].min_s[b] = smin[f];
			stats[f].max_s[b] = smax[f];
			stat_parse_batch(&stats[f], file->schema.fields[f].type.id, b);
		}
	}
	pfree(smin);
	pfree(smax);
}

/*
 * the bytes of top-level field `field` in batch b of file (its buffers'
 * extents, children included), ext room for its `room` buffers; -1 with
 * *err set where its layout cannot be read
 */
static int64
batch_field_bytes(const ArrowFile *file, int32 b, int field, ArrowExtent *ext, int room,
				  ArrowError *err)
{
	int			n = arrow_column_extents(file, b, field, ext, room, err);
	int64		sum = 0;

	if (n < 0)
		return -1;
	for (int k = 0; k < n; k++)
		sum += ext[k].length;
	return sum;
}

/*
 * arrow_pg_batch_field_bytes: the bytes of top-level field `field` in batch
 * b of file (its buffers' extents, children included); path names the file
 * in an error
 */
int64
arrow_pg_batch_field_bytes(const ArrowFile *file, int32 b, int field, const char *path)
{
	int			room = Max(file->columns[field].n_buffers, 1);
	ArrowExtent *ext = palloc(sizeof(ArrowExtent) * room);
	ArrowError	err;
	int64		sum = batch_field_bytes(file, b, field, ext, room, &err);

	if (sum < 0)
		arrow_pg_report(&err, "read the layout of", path);
	pfree(ext);
	return sum;
}

/*
 * arrow_pg_field_sizes
 *		Top-level field `field`'s bytes (its buffers, children included) and
 *		null count (-1 where a batch has no node for it) in every record batch
 *		of `file`, when file is a copy of a cached file's metadata (see
 *		arrow_pg_stat_column): found once per field and kept with the entry, in
 *		two arrays that the planner's estimates read without a load of each
 *		batch's layout.  NULL for any other file.
 */
const ArrowFieldSizes *
arrow_pg_field_sizes(const ArrowFile *file, int field)
{
	MetaCacheEntry *e = meta_cache_of(file);
	ArrowFieldSizes *fs;
	ArrowError	err;

	if (e == NULL || field < 0 || field >= e->file->schema.n_fields)
		return NULL;
	if (e->field_sizes == NULL)
		e->field_sizes = MemoryContextAllocZero(e->cxt, sizeof(ArrowFieldSizes *) *
												e->file->schema.n_fields);
	if (e->field_sizes[field] != NULL)
		return e->field_sizes[field];
	if (e->shared != NULL && e->shared->sizes[field].bytes != NULL)
		return e->field_sizes[field] = (ArrowFieldSizes *) &e->shared->sizes[field];
	fs = MemoryContextAlloc(e->cxt, sizeof(ArrowFieldSizes));
	fs->bytes = MemoryContextAlloc(e->cxt, sizeof(int64) * Max(file->n_batches, 1));
	fs->nulls = MemoryContextAlloc(e->cxt, sizeof(int64) * Max(file->n_batches, 1));
	if (!arrow_pg_sizes_fill(e->file, field, fs, &err))
		arrow_pg_report(&err, "read the layout of", e->path);
	e->field_sizes[field] = fs;
	return fs;
}

/*
 * arrow_pg_sizes_fill: top-level field `field`'s bytes and null count in
 * every record batch of file into fs's arrays (a batch each, the caller's);
 * false with *err set where a batch's layout cannot be read
 */
bool
arrow_pg_sizes_fill(const ArrowFile *file, int field, ArrowFieldSizes *fs, ArrowError *err)
{
	int			room = Max(file->columns[field].n_buffers, 1);
	ArrowExtent *ext = palloc(sizeof(ArrowExtent) * room);
	int32		node = file->columns[field].first_node;
	bool		ok = true;

	for (int32 b = 0; ok && b < file->n_batches; b++)
	{
		const ArrowBatchInfo *batch = &file->batches[b];

		fs->bytes[b] = batch_field_bytes(file, b, field, ext, room, err);
		fs->nulls[b] = node >= 0 && node < batch->n_nodes ? batch->nodes[node].null_count : -1;
		ok = fs->bytes[b] >= 0;
	}
	pfree(ext);
	return ok;
}

/*
 * arrow_pg_stat_datums
 *		arrow_pg_stat_column's statistics of `field`, with its parsed values
 *		converted once to Datums of conv's column (dmin, dmax, dflags): the
 *		planner and each executor start read every batch's statistics, and
 *		converting them again each time took most of a short query's
 *		planning over a file of a thousand batches.  Kept with the entry for
 *		the last column type asked for; NULL where the statistics are not
 *		kept as bits or the type is passed by reference (the caller converts
 *		each value itself).
 */
const ArrowStatColumn *
arrow_pg_stat_datums(const ArrowFile *file, int field, const ArrowConv *conv)
{
	ArrowStatColumn *c = (ArrowStatColumn *) arrow_pg_stat_column(file, field);
	MetaCacheEntry *e;
	int32		n = file->n_batches;

	if (c == NULL || !c->as_bits || !conv->typbyval || conv->has_dictionary)
		return NULL;
	if (c->dflags != NULL && c->d_typid == conv->typid && c->d_typmod == conv->typmod &&
		c->d_kind == conv->kind)
		return c;
	e = meta_cache_of(file);
	if (c->dflags == NULL)
	{
		c->dmin = MemoryContextAlloc(e->cxt, sizeof(Datum) * Max(n, 1));
		c->dmax = MemoryContextAlloc(e->cxt, sizeof(Datum) * Max(n, 1));
		c->dflags = MemoryContextAlloc(e->cxt, sizeof(uint8) * Max(n, 1));
	}
	/* not usable until filled (an error in a conversion leaves it so) */
	c->d_typid = InvalidOid;
	for (int32 b = 0; b < n; b++)
	{
		c->dflags[b] = 0;
		if ((c->parsed[b] & ARROW_STAT_MIN) && arrow_conv_stat_bits(conv, c->min[b], &c->dmin[b]))
			c->dflags[b] |= ARROW_STAT_MIN;
		if ((c->parsed[b] & ARROW_STAT_MAX) && arrow_conv_stat_bits(conv, c->max[b], &c->dmax[b]))
			c->dflags[b] |= ARROW_STAT_MAX;
	}
	c->d_typmod = conv->typmod;
	c->d_kind = conv->kind;
	c->d_typid = conv->typid;
	return c;
}

/* arrow_pg_open's error: the source closed, the failure reported */
static void pg_attribute_noreturn()
open_failed(ArrowPgSource *s, ArrowError *err, const char *path)
{
	arrow_pg_source_close(s);
	report_interrupted_append(err, path);
	arrow_pg_report(err, "open", path);
}

/*
 * Opens an Arrow file: metadata of every batch is read now (or copied from
 * the cache above, for a file this backend opened before), the source (in
 * *s, which must outlive the file) stays usable for batch loads.
 * 'within': see arrow_pg_source_init.
 * Memory comes from the current memory context.  Never returns NULL.
 */
ArrowFile *
arrow_pg_open(const char *path, ArrowPgSource *s, const char *within)
{
	ArrowFile  *file = NULL;
	ArrowError	err;
	ArrowAllocator *alloc = arrow_pg_allocator(CurrentMemoryContext);
	MetaCacheEntry *e = NULL;
	int64		ctime_ns;

	arrow_pg_source_init(s, path, within);
	ctime_ns = arrow_pg_source_ctime_ns(s);
	memset(&err, 0, sizeof(err));
	if (!meta_cache_callback)
	{
		RegisterXactCallback(meta_cache_unpin, NULL);
		meta_cache_callback = true;
	}
	if (ctime_ns >= 0 && (e = meta_cache_find(s, ctime_ns)) == NULL &&
		(e = meta_cache_open(s, ctime_ns, &err)) == NULL && err.code != ARROW_OK)
		open_failed(s, &err, path);
	if (e != NULL && arrow_file_copy(e->file, &s->src, alloc, true, &file, &err) == ARROW_OK)
	{
		e->used = ++meta_cache_clock;
		e->pinned = true;
	}
	else if (arrow_file_open_source(&s->src, alloc, &file, &err) != ARROW_OK)
		open_failed(s, &err, path);
	file->max_buffer_size = (int64) pg_warp_arrow_max_buffer_size * 1024;
	return file;
}
