/*-------------------------------------------------------------------------
 *
 * arrow_pg.c
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
 * leaks it.  A source opens its file lazily on the first read and can be
 * closed between uses (arrow_pg_source_close), so a scan over many files
 * holds at most one descriptor at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "pg_warp.h"

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
static int
arrow_pg_read_at(void *ctx, int64_t offset, void *dst, size_t len,
				 ArrowError *err)
{
	ArrowPgSource *s = (ArrowPgSource *) ctx;
	char	   *p = dst;

	if (offset < 0 || (int64) len > s->size || offset > s->size - (int64) len)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end of the file (%lld bytes)",
							   len, (long long) offset, (long long) s->size);
	if (s->fd < 0)
	{
		s->fd = OpenTransientFile(s->path, O_RDONLY | PG_BINARY);
		if (s->fd < 0)
		{
			int			save = errno;

			arrow_set_error(err, ARROW_ERR_IO, "could not open file: %s",
							strerror(save));
			err->sys_errno = save;
			return ARROW_ERR_IO;
		}
	}
	while (len > 0)
	{
		ssize_t		n;

		n = pread(s->fd, p, Min(len, (size_t) 1 << 30), (off_t) offset);
		if (n < 0)
		{
			int			save = errno;

			if (save == EINTR)
				continue;
			arrow_set_error(err, ARROW_ERR_IO, "could not read file: %s",
							strerror(save));
			err->sys_errno = save;
			return ARROW_ERR_IO;
		}
		if (n == 0)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "unexpected end of file at offset %lld (the file shrank while being read)",
								   (long long) offset);
		p += n;
		len -= n;
		offset += n;
		s->bytes_read += n;
	}
	return ARROW_OK;
}

/*
 * Prepares a source for 'path' whose size and modification time are taken
 * now (ereport on failure: missing file, permissions).  The file itself is
 * opened on the first read.
 */
void
arrow_pg_source_init(ArrowPgSource *s, const char *path)
{
	struct stat st;

	memset(s, 0, sizeof(ArrowPgSource));
	s->path = pstrdup(path);
	s->fd = -1;
	if (stat(path, &st) != 0)
		arrow_pg_report_errno(errno, path);
	if (S_ISDIR(st.st_mode))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a directory, not an Arrow file", path),
				 errhint("Use the option \"dir\" to read every file in a directory.")));
	s->size = st.st_size;
	s->mtime_ns = (int64) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	s->src.read_at = arrow_pg_read_at;
	s->src.size = s->size;
	s->src.ctx = s;

	/* fail early and clearly when the file cannot be opened */
	s->fd = OpenTransientFile(s->path, O_RDONLY | PG_BINARY);
	if (s->fd < 0)
		arrow_pg_report_errno(errno, path);
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
 * Opens an Arrow file: metadata of every batch is read now, the source
 * (in *s, which must outlive the file) stays usable for batch loads.
 * Memory comes from the current memory context.  Never returns NULL.
 */
ArrowFile *
arrow_pg_open(const char *path, ArrowPgSource *s)
{
	ArrowFile  *file = NULL;
	ArrowError	err;
	ArrowAllocator *alloc = arrow_pg_allocator(CurrentMemoryContext);

	arrow_pg_source_init(s, path);
	memset(&err, 0, sizeof(err));
	if (arrow_file_open_source(&s->src, alloc, &file, &err) != ARROW_OK)
	{
		arrow_pg_source_close(s);
		arrow_pg_report(&err, "open", path);
	}
	file->max_buffer_size = (int64) pg_warp_arrow_max_buffer_size * 1024;
	return file;
}
