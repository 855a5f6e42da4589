/*-------------------------------------------------------------------------
 *
 * input.c
 *		The input side that the service's runs over Arrow files share:
 *		AGG_RUN (agg.c, and gpu_agg.c on the GPUs) and SCAN_RUN (scan.c).
 *
 * It owns
 *	- a run's first failure (SvcFailure): its WarpErrorCode and message,
 *	  the mapping of the Arrow reader's errors to WarpErrorCodes, and the
 *	  flag that stops the run's workers;
 *	- the files of a request (SvcInputFile, the WarpAggFile parts of
 *	  xpu/protocol.h): parsing a part with every bound checked, opening
 *	  the file read-only (a regular file whose device, inode, size and
 *	  modification time are the request's, else WARP_ERR_FILE_CHANGED),
 *	  reading its footer through pread, checking its batch numbers and
 *	  fields against the program, and closing it; its batches are loaded
 *	  into buffers that each worker thread reuses (buf_cache.c), or, for
 *	  a CPU engine run that the request lets map its files (WARP_FILE_MAP),
 *	  read in place from a mapping of the file (file_map.c) where loading
 *	  checks nothing of them;
 *	- which Arrow field a program column (XpuColKind) may read and how many
 *	  bytes its values take (svc_field_fits, with xpu_col_kind_width).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/buf_cache.h"
#include "service/file_map.h"
#include "service/file_meta.h"
#include "service/input.h"
#include "xpu/xpu_arrow_bind.h"

/* ---------------------------------------------------------------- failures */

/* svc_failure_init: no failure yet */
void
svc_failure_init(SvcFailure *f)
{
	memset(f, 0, sizeof(*f));
	pthread_mutex_init(&f->lock, NULL);
}

/* svc_failure_destroy: releases what svc_failure_init set up */
void
svc_failure_destroy(SvcFailure *f)
{
	pthread_mutex_destroy(&f->lock);
}

/*
 * records a failure of the run (in place of an earlier one only when
 * `replace`) and stops the workers
 */
static void
fail_v(SvcFailure *f, bool replace, WarpErrorCode code, const char *fmt, va_list ap)
{
	pthread_mutex_lock(&f->lock);
	if (f->werr == 0 || replace)
	{
		f->werr = code;
		vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	}
	pthread_mutex_unlock(&f->lock);
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELAXED);
}

/* svc_fail: records the run's failure (the first one wins) and stops the workers */
void
svc_fail(SvcFailure *f, WarpErrorCode code, const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	fail_v(f, false, code, fmt, ap);
	va_end(ap);
}

/* fail_replace: svc_fail, in place of any earlier failure */
static void
fail_replace(SvcFailure *f, WarpErrorCode code, const char *fmt, ...)
{
	va_list		ap;

	va_start(ap, fmt);
	fail_v(f, true, code, fmt, ap);
	va_end(ap);
}

/* svc_fail_arrow: an ArrowError of file path as the run's failure */
void
svc_fail_arrow(SvcFailure *f, const char *path, const ArrowError *err)
{
	WarpErrorCode code = err->code == ARROW_ERR_IO ? WARP_ERR_IO :
		err->code == ARROW_ERR_NOMEM ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_BAD_FILE;

	svc_fail(f, code, "%s file \"%s\": %s",
			 code == WARP_ERR_BAD_FILE ? "corrupt or unsupported Arrow" : "could not read",
			 path, err->message);
}

/* svc_stopping: should the run's workers stop (canceled, or a failure) */
bool
svc_stopping(SvcFailure *f, const volatile int *canceled)
{
	return *canceled || __atomic_load_n(&f->stop, __ATOMIC_RELAXED);
}

/*
 * svc_failure_reply: the ERROR message (WarpErrorMsg) that ends a failed or
 * canceled run, into buf; returns its length
 */
uint32_t
svc_failure_reply(const SvcFailure *f, bool canceled, uint8_t *buf)
{
	WarpErrorMsg *e = (WarpErrorMsg *) buf;

	memset(e, 0, sizeof(*e));
	e->code = canceled ? WARP_ERR_CANCELED : f->werr;
	snprintf(e->message, sizeof(e->message), "%s",
			 canceled ? "the run was canceled" : f->msg);
	return sizeof(*e);
}

/* svc_add_counter: adds v to a counter that several workers add to */
void
svc_add_counter(uint64_t *c, uint64_t v)
{
	__atomic_add_fetch(c, v, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- parsing */

/*
 * svc_take: the part of n bytes at the next `align`-aligned (a power of
 * two) offset of p[*off .. len), advancing *off past it; NULL when it does
 * not fit.
 */
const void *
svc_take(const uint8_t *p, size_t len, size_t *off, size_t n, size_t align)
{
	size_t		o = (*off + align - 1) & ~(align - 1);

	if (o > len || n > len - o)
		return NULL;
	*off = o + n;
	return p + o;
}

/*
 * svc_input_parse: parses file part i of a request (`what`: its message
 * name) at *off of p[0 .. len) into f, whose fd must be -1: the
 * WarpAggFile, its path (absolute, no NUL), batch list and n_cols field
 * numbers.  False with msg set when it is malformed or out of memory.
 */
bool
svc_input_parse(SvcInputFile *f, uint32_t i, const uint8_t *p, size_t len, size_t *off,
				uint32_t n_cols, const char *what, char *msg, size_t msglen)
{
	const WarpAggFile *wf = svc_take(p, len, off, sizeof(WarpAggFile), 8);
	const char *path;

	if (wf == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is truncated at file %u", what, len,
						i), false;
	if (wf->n_cols != n_cols || wf->path_len == 0 || wf->path_len >= 4096 ||
		wf->n_batches > PGWARP_MAX_PAYLOAD / 4)
		return snprintf(msg, msglen, "file %u: bad path length, batch count or column count",
						i), false;
	path = svc_take(p, len, off, wf->path_len, 8);
	f->batches = path ? svc_take(p, len, off, (size_t) wf->n_batches * 4, 8) : NULL;
	f->fields = f->batches ? svc_take(p, len, off, (size_t) n_cols * 4, 8) : NULL;
	if (f->fields == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is truncated at file %u", what, len,
						i), false;
	if (memchr(path, '\0', wf->path_len) != NULL || path[0] != '/')
		return snprintf(msg, msglen, "file %u: the path is not absolute or holds a NUL",
						i), false;
	if ((f->path = strndup(path, wf->path_len)) == NULL)
		return snprintf(msg, msglen, "out of memory"), false;
	f->n_batches = wf->n_batches;
	f->wf = wf;
	return true;
}

/* ---------------------------------------------------------------- files */

/* is the file of stat st the one that request part wf names (device, inode, size, mtime) */
static bool
same_file(const struct stat *st, const WarpAggFile *wf)
{
	return (int64_t) st->st_dev == wf->dev && (int64_t) st->st_ino == wf->ino &&
		(int64_t) st->st_size == wf->size &&
		(int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec == wf->mtime_ns;
}

/*
 * svc_input_open: opens parsed file f: a regular file, its identity as
 * the request's, its footer (record batches up to max_buffer_size bytes a
 * buffer); with `map` (and WARP_FILE_MAP in the request), maps it too
 * when it can.  False with the run's failure set.
 */
bool
svc_input_open(SvcInputFile *f, int64_t max_buffer_size, bool map, SvcFailure *fail)
{
	const WarpAggFile *wf = f->wf;
	struct stat st;
	ArrowError	aerr;

	f->fd = open(f->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (f->fd < 0)
		return svc_fail(fail, errno == ENOMEM ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_IO,
						"could not open file \"%s\": %s", f->path, strerror(errno)), false;
	if (fstat(f->fd, &st) != 0)
		return svc_fail(fail, WARP_ERR_IO, "could not stat file \"%s\": %s",
						f->path, strerror(errno)), false;
	if (!S_ISREG(st.st_mode))
		return svc_fail(fail, WARP_ERR_IO, "\"%s\" is not a regular file", f->path), false;
	if (!same_file(&st, wf))
		return svc_fail(fail, WARP_ERR_FILE_CHANGED,
						"file \"%s\" changed during scan", f->path), false;
	f->src.read_at = svc_fd_read_at;
	f->src.size = st.st_size;
	f->src.ctx = &f->fd;
	if (svc_file_meta_open(f->fd, &st, &f->src, &svc_buffer_allocator, &f->file, &f->meta,
						   &f->meta_image, &aerr) != ARROW_OK)
		return svc_fail_arrow(fail, f->path, &aerr), false;
	f->file->max_buffer_size = max_buffer_size;
	if (map && (wf->flags & WARP_FILE_MAP) &&
		(f->map = svc_file_map_open_kept(f->fd, &st, f->path)) != NULL)
		f->file->map = svc_file_map_bytes(f->map);
	return true;
}

/*
 * svc_input_check_end: once a run's workers are done with file f, is it
 * still the file the request named?  When reading its mapping faulted (it
 * shrank, or a page could not be read) or its size or modification time
 * differs now (it was written while the run read it), that is the run's
 * failure (WARP_ERR_FILE_CHANGED) in place of any other, since what the
 * run read may be neither the old file nor the new one; returns false then.
 */
bool
svc_input_check_end(const SvcInputFile *f, SvcFailure *fail)
{
	struct stat st;
	const char *why;

	if (f->fd < 0)
		return true;
	if (svc_file_map_lost(f->map))
		why = " (it shrank, or a page of it could not be read)";
	else if (fstat(f->fd, &st) != 0)
		why = " (it could not be checked)";
	else if ((int64_t) st.st_size < f->wf->size)
		why = " (it shrank)";
	else if (!same_file(&st, f->wf))
		why = " (it was written)";
	else
		return true;
	fail_replace(fail, WARP_ERR_FILE_CHANGED, "file \"%s\" changed during scan%s", f->path, why);
	return false;
}

/*
 * svc_input_check: checks opened file f against a request of n_cols chunk
 * columns and its program: every batch number is one of the file's, every
 * chunk column names one of its top-level fields, and every program column
 * reads a chunk column whose field holds what the column's kind loads.
 * False with the run's failure set (WARP_ERR_PROTOCOL).
 */
bool
svc_input_check(const SvcInputFile *f, const XpuProgram *prog, uint32_t n_cols,
				SvcFailure *fail)
{
	const ArrowSchema *sc = &f->file->schema;
	int			width;

	for (uint32_t b = 0; b < f->n_batches; b++)
		if (f->batches[b] < 0 || f->batches[b] >= f->file->n_batches)
			return svc_fail(fail, WARP_ERR_PROTOCOL, "file \"%s\" has no record batch %d",
							f->path, f->batches[b]), false;
	for (uint32_t j = 0; j < n_cols; j++)
		if (f->fields[j] < 0 || f->fields[j] >= sc->n_fields)
			return svc_fail(fail, WARP_ERR_PROTOCOL, "file \"%s\" has no field %d",
							f->path, f->fields[j]), false;
	for (int i = 0; i < prog->n_cols; i++)
	{
		const XpuColumn *col = XPU_COLS(prog) + i;
		const ArrowField *fld;

		if (col->col_index >= n_cols)
			return svc_fail(fail, WARP_ERR_PROTOCOL, "program column %d reads chunk column %u",
							i, col->col_index), false;
		fld = &sc->fields[f->fields[col->col_index]];
		if (!svc_field_fits_cpu(fld, col, &width))
			return svc_fail(fail, WARP_ERR_PROTOCOL,
							"field \"%s\" of file \"%s\" does not hold what the program reads",
							fld->name, f->path), false;
	}
	return true;
}

/* svc_input_close: closes and frees what svc_input_parse and _open made */
void
svc_input_close(SvcInputFile *f)
{
	if (f->file)
		arrow_file_close(f->file);
	svc_file_meta_release(f->meta);	/* after the file: its batches point into it */
	svc_file_map_close(f->map);	/* after the file: its dictionaries may point into it */
	if (f->fd >= 0)
		close(f->fd);
	f->map = NULL;
	f->meta = NULL;
	free(f->path);
	f->file = NULL;
	f->fd = -1;
	f->path = NULL;
}

/*
 * svc_input_batch_bytes: the bytes that the fields want[] of record batch
 * `batch` of f take in the file (what loading them read)
 */
uint64_t
svc_input_batch_bytes(const SvcInputFile *f, int32_t batch, const bool *want)
{
	ArrowExtent ext[64];
	ArrowError	aerr;
	uint64_t	bytes = 0;

	for (int32_t c = 0; c < f->file->schema.n_fields; c++)
	{
		int			n = want[c] ? arrow_column_extents(f->file, batch, c, ext, 64, &aerr) : 0;

		for (int i = 0; i < n; i++)
			bytes += ext[i].length;
	}
	return bytes;
}

/*
 * svc_input_bind: points cols (indexed by chunk column) at the loaded
 * fields of batch that the program's columns read (utf8: its offsets and
 * bytes); the offsets stay the caller's
 */
void
svc_input_bind(const SvcInputFile *f, const XpuProgram *prog, const ArrowBatch *batch,
			   XpuColumnData *cols)
{
	for (int k = 0; k < prog->n_cols; k++)
	{
		const XpuColumn *col = XPU_COLS(prog) + k;
		const ArrowArray *a = &batch->columns[f->fields[col->col_index]];
		XpuColumnData *cd = &cols[col->col_index];

		xpu_column_bind(cd, a, f->file, f->fields[col->col_index]);
	}
}

/* ---------------------------------------------------------------- fields */

/*
 * svc_field_fits_cpu: svc_field_fits for the CPU engine, which also reads
 * a dictionary-encoded field of utf8 values as a utf8 column (xpu_dict.h;
 * any integer index type)
 */
bool
svc_field_fits_cpu(const ArrowField *fld, const XpuColumn *col, int *width)
{
	if (!fld->has_dictionary)
		return svc_field_fits(fld, col, width);
	*width = 0;
	return col->kind == XPU_COL_UTF8 && fld->type.id == ARROW_TYPE_UTF8 &&
		xpu_dict_width_of(fld->dictionary.index_type) != 0;
}

/* does a program column read a dictionary-encoded field of file f */
bool
svc_input_has_dict(const SvcInputFile *f, const XpuProgram *prog)
{
	for (int i = 0; i < prog->n_cols; i++)
		if (f->file->schema.fields[f->fields[XPU_COLS(prog)[i].col_index]].has_dictionary)
			return true;
	return false;
}

/*
 * svc_field_fits: does top-level field fld hold what program column col
 * loads (its kind, a decimal's scale, a timestamp's unit; never a
 * dictionary)?  *width: the bytes of one value as the column reads them
 * (xpu_col_kind_width: 0 for bool's bits and utf8, whose buffers have
 * other sizes).
 */
bool
svc_field_fits(const ArrowField *fld, const XpuColumn *col, int *width)
{
	const ArrowType *ty = &fld->type;

	*width = xpu_col_kind_width(col->kind);
	if (fld->has_dictionary)
		return false;
	switch ((XpuColKind) col->kind)
	{
		case XPU_COL_BOOL: return ty->id == ARROW_TYPE_BOOL;
		case XPU_COL_INT8: return ty->id == ARROW_TYPE_INT8;
		case XPU_COL_INT16: return ty->id == ARROW_TYPE_INT16;
		case XPU_COL_INT32: return ty->id == ARROW_TYPE_INT32;
		case XPU_COL_INT64: return ty->id == ARROW_TYPE_INT64;
		case XPU_COL_FLOAT16: return ty->id == ARROW_TYPE_FLOAT16;
		case XPU_COL_FLOAT32: return ty->id == ARROW_TYPE_FLOAT32;
		case XPU_COL_FLOAT64: return ty->id == ARROW_TYPE_FLOAT64;
		case XPU_COL_DATE32: return ty->id == ARROW_TYPE_DATE32;
		case XPU_COL_TIMESTAMP_S:
		case XPU_COL_TIMESTAMP_MS:
		case XPU_COL_TIMESTAMP_US:
		case XPU_COL_TIMESTAMP_NS:
			return ty->id == ARROW_TYPE_TIMESTAMP &&
				(int) ty->unit == col->kind - XPU_COL_TIMESTAMP_S;
		case XPU_COL_DECIMAL128:
			return ty->id == ARROW_TYPE_DECIMAL128 && ty->scale == col->scale;
		case XPU_COL_UTF8: return ty->id == ARROW_TYPE_UTF8;
		case XPU_COL_INTERVAL_MDN: return ty->id == ARROW_TYPE_INTERVAL_MDN;
		default: return false;
	}
}
