/*-------------------------------------------------------------------------
 *
 * gpu_input.c
 *		The GPU input path of gpu_agg.c's runs (gpu_agg_int.h): the I/O
 *		threads, and a launch's record batches laid out in a slot as the
 *		chunk the kernel reads, each referenced buffer served by the GPU
 *		column cache, copied from the file's registered page-cache pages
 *		(file_reg.c), read with pread into the slot's pinned buffer, or
 *		loaded and decompressed by arrow_batch_load.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arrow/arrow.h"
#include "arrow/arrow_io.h"
#include "gpu_agg_int.h"
#include "service/file_reg.h"
#include "service/gpu_direct.h"

/* ---------------- the I/O threads ---------------- */

/* does off[0 .. n] never decrease (branch-free: the compiler vectorizes it) */
static bool
gagg_offsets_ok(const int32_t *off, int64_t n)
{
	int			bad = 0;

	for (int64_t i = 0; i < n; i++)
		bad |= off[i + 1] < off[i];
	return !bad;
}

/*
 * gagg_offsets_read: the `after` hook of a slice of utf8 offsets read into
 * pinned memory, run by the thread that read it while the slice is in its
 * cache: dst[0 .. n_off] must not decrease (the pairs across slices, the
 * first offset and the last are checked by gagg_check_offsets)
 */
static int
gagg_offsets_read(void *arg, const GaggRead *r)
{
	return r->n_off <= 0 || gagg_offsets_ok((const int32_t *) r->dst, r->n_off) ? 0 : -1;
}

/* gagg_bad_offsets: the run's failure for part p's invalid utf8 offsets; -1 */
static int
gagg_bad_offsets(GaggRun *g, const GaggSlot *s, int p)
{
	return gagg_fail(g, WARP_ERR_BAD_FILE, "%s: record batch %d has invalid utf8 offsets",
					 g->run->files[s->parts[p].fi].path, s->parts[p].batch);
}

/* gagg_io_take: does reads of the current list until none is left */
static void
gagg_io_take(GaggIo *io)
{
	for (;;)
	{
		GaggRead	r;
		ArrowError	aerr;
		CUresult	cu = CUDA_SUCCESS;
		int			rc,
					drc = 0,
					idx;

		pthread_mutex_lock(&io->lock);
		if (io->next >= io->n_reads)
		{
			pthread_mutex_unlock(&io->lock);
			return;
		}
		idx = io->next++;
		r = io->reads[idx];
		pthread_mutex_unlock(&io->lock);
		if (r.off != NULL)
			rc = gagg_offsets_ok(r.off, r.n_off) ? ARROW_OK : -2;
		else if (r.direct != NULL)
		{
			if ((drc = gpu_direct_read(r.direct, r.dev, r.len, r.offset)) == 0 && r.run != NULL)
				GAGG_ADD(r.run->bytes_direct, (uint64_t) r.len);
			rc = drc == 0 ? ARROW_OK : -4;
		}
		else if ((rc = arrow_pread_all(r.fd, r.dst, r.len, r.offset, NULL, &aerr)) == ARROW_OK &&
				 r.stream != NULL && !io->copier &&
				 (cu = gpu_drv.cuMemcpyHtoDAsync(r.dev, r.dst, r.len, r.stream)) != CUDA_SUCCESS)
			rc = -3;
		/* the slice is still in this core's cache: its checks cost least now */
		if (rc == ARROW_OK && r.after != NULL && r.after(r.after_arg, &r) != 0)
			rc = -5;
		pthread_mutex_lock(&io->lock);
		if (rc != ARROW_OK && io->failed_errno == 0)
		{
			io->failed_errno = rc == -2 || rc == -3 || rc == -4 || rc == -5 ? rc :
				rc == ARROW_ERR_IO && aerr.sys_errno != 0 ? aerr.sys_errno : -1;
			io->failed_tag = r.tag;
			io->failed_cu = cu;
			io->failed_direct = drc;
		}
		/* the copier (gagg_io_copy) copies what was read, in the reads' order */
		if (io->copier)
			io->state[idx] = rc == ARROW_OK ? GAGG_READ_DONE : GAGG_READ_FAILED;
		if (++io->finished == io->n_reads || io->copier)
			pthread_cond_signal(&io->done);
		pthread_mutex_unlock(&io->lock);
	}
}

/*
 * does read b continue the copy of len bytes that starts with read a: the
 * same stream, and its bytes right after them in pinned memory (past a
 * piece's padding to GAGG_ALIGN at most) and at the same distance in GPU
 * memory
 */
static bool
gagg_io_follows(const GaggRead *a, size_t len, const GaggRead *b)
{
	uintptr_t	end = (uintptr_t) a->dst + len;

	return b->stream == a->stream && (uintptr_t) b->dst >= end &&
		(uintptr_t) b->dst - end < GAGG_ALIGN &&
		b->dev - a->dev == (CUdeviceptr) ((uintptr_t) b->dst - (uintptr_t) a->dst);
}

/*
 * gagg_io_copy: the calling thread of gagg_io_run, while the I/O threads
 * read: queues the copies of the reads to the GPU in the reads' order as
 * they end, each copy covering the consecutive reads that have ended and
 * lie next to each other on both sides, at least GAGG_COPY_MIN bytes
 * where more of them follow (io->lock held on entry and on return).  One
 * thread issues every copy of a launch: fifteen I/O threads queueing
 * copies on the slot's one stream spent 21-28 us a call in the driver,
 * most of it waiting for each other (bench/results/README.md, "One thread
 * queues a launch's copies"); and copies of single columns of pg2arrow's
 * record batches fall short of the bus rate (GAGG_COPY_MIN).
 */
static void
gagg_io_copy(GaggIo *io)
{
	int			i = 0;

	while (i < io->n_reads)
	{
		const GaggRead *r = &io->reads[i];
		size_t		len = r->len;
		int			j = i + 1;
		CUresult	cu;

		if (io->state[i] == GAGG_READ_PENDING)
		{
			pthread_cond_wait(&io->done, &io->lock);
			continue;
		}
		if (io->state[i] == GAGG_READ_FAILED || r->stream == NULL)
		{
			i++;
			continue;
		}
		for (; j < io->n_reads && io->state[j] == GAGG_READ_DONE &&
			 gagg_io_follows(r, len, &io->reads[j]); j++)
			len = (size_t) (io->reads[j].dst - r->dst) + io->reads[j].len;
		/* too short while the next read, which would continue it, runs */
		if (len < GAGG_COPY_MIN && j < io->n_reads && io->state[j] == GAGG_READ_PENDING &&
			gagg_io_follows(r, len, &io->reads[j]))
		{
			pthread_cond_wait(&io->done, &io->lock);
			continue;
		}
		pthread_mutex_unlock(&io->lock);
		cu = gpu_drv.cuMemcpyHtoDAsync(r->dev, r->dst, len, r->stream);
		pthread_mutex_lock(&io->lock);
		if (cu != CUDA_SUCCESS && io->failed_errno == 0)
		{
			io->failed_errno = -3;
			io->failed_tag = r->tag;
			io->failed_cu = cu;
		}
		i = j;
	}
}

static void *
gagg_io_main(void *arg)
{
	GaggIo	   *io = arg;

	/* the context of the copies that follow reads */
	if (io->ctx != NULL)
		gpu_drv.cuCtxPushCurrent(io->ctx);
	/* this thread alone (Linux: a thread id names one thread); it ends with the run */
	if (io->nice > 0 && setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), io->nice) != 0)
		svc_log("WARNING", "could not lower the priority of a read-ahead's I/O thread: %s",
				strerror(errno));
	pthread_mutex_lock(&io->lock);
	while (!io->stop)
	{
		if (io->next < io->n_reads)
		{
			pthread_mutex_unlock(&io->lock);
			gagg_io_take(io);
			pthread_mutex_lock(&io->lock);
			continue;
		}
		pthread_cond_wait(&io->work, &io->lock);
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

/*
 * prepares the I/O of a run: up to n threads, started at its first reads
 * (gagg_io_spawn), copying in context ctx
 */
void
gagg_io_start(GaggIo *io, int n, CUcontext ctx)
{
	memset(io, 0, sizeof(*io));
	io->ctx = ctx;
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->work, NULL);
	pthread_cond_init(&io->done, NULL);
	io->want = n < GAGG_IO_THREADS ? n : GAGG_IO_THREADS;
}

/*
 * gagg_io_spawn: the threads, at the first reads of the run (a run whose
 * batches all come from the GPU column cache reads nothing and starts none)
 */
static void
gagg_io_spawn(GaggIo *io)
{
	for (int i = io->n_threads; i < io->want; i++)
	{
		if (pthread_create(&io->threads[i], NULL, gagg_io_main, io) != 0)
			break;
		io->n_threads++;
	}
	io->want = 0;
}

void
gagg_io_stop(GaggIo *io)
{
	pthread_mutex_lock(&io->lock);
	io->stop = 1;
	pthread_cond_broadcast(&io->work);
	pthread_mutex_unlock(&io->lock);
	for (int i = 0; i < io->n_threads; i++)
		pthread_join(io->threads[i], NULL);
	pthread_mutex_destroy(&io->lock);
	pthread_cond_destroy(&io->work);
	pthread_cond_destroy(&io->done);
	free(io->state);
	io->state = NULL;
}

/*
 * gagg_io_run: does the n reads (the calling thread helps, or, where the
 * reads are copied to the GPU and I/O threads read, queues the copies as
 * the reads end: gagg_io_copy) and returns 0,
 * or the errno of the first failed read (-1: the file ended first; -2: a
 * check of offsets failed; -3: the copy after a read failed, with
 * io->failed_cu; -4: a cuFileRead failed, with io->failed_direct; -5: its
 * after hook refused it), whose tag is then io->failed_tag
 */
int
gagg_io_run(GaggIo *io, GaggRead *reads, int n)
{
	int			rc;
	bool		copies = false;

	if (io->want > 0)
		gagg_io_spawn(io);
	for (int i = 0; i < n && !copies; i++)
		copies = reads[i].stream != NULL;
	/* with I/O threads to read, the calling thread queues the copies */
	if (copies && io->n_threads > 0 && n > io->state_cap)
	{
		uint8_t    *more = realloc(io->state, (size_t) n);

		if (more != NULL)
		{
			io->state = more;
			io->state_cap = n;
		}
	}
	pthread_mutex_lock(&io->lock);
	io->reads = reads;
	io->n_reads = n;
	io->next = 0;
	io->finished = 0;
	io->failed_errno = 0;
	io->failed_tag = 0;
	io->copier = copies && io->n_threads > 0 && io->state_cap >= n;
	if (io->copier)
		memset(io->state, GAGG_READ_PENDING, (size_t) n);
	pthread_cond_broadcast(&io->work);
	if (io->copier)
		gagg_io_copy(io);
	else
	{
		pthread_mutex_unlock(&io->lock);
		gagg_io_take(io);
		pthread_mutex_lock(&io->lock);
	}
	while (io->finished < io->n_reads)
		pthread_cond_wait(&io->done, &io->lock);
	rc = io->failed_errno;
	io->n_reads = 0;
	io->next = 0;
	pthread_mutex_unlock(&io->lock);
	return rc;
}

/* ---------------- reading a batch ---------------- */

/* bytes of the values (or utf8 offsets) buffer of n rows */
static size_t
gagg_values_len(const XpuColumn *col, int width, int64_t n)
{
	if (col->kind == XPU_COL_BOOL)
		return (size_t) (n + 7) / 8;
	if (col->kind == XPU_COL_UTF8)
		return (size_t) (n + 1) * 4;
	return (size_t) n * width;
}

/*
 * gagg_field: the top-level field that program column k reads: the field of
 * the chunk column it loads (AGG_RUN's fields[] is indexed by chunk column,
 * XpuColumn.col_index, which agg.c checked to be below n_cols)
 */
static int32_t
gagg_field(const GaggRun *g, const AggRunFile *f, int k)
{
	return f->fields[XPU_COLS(g->prog)[k].col_index];
}

/*
 * gagg_column_bytes: the bytes that program column k's field takes in
 * record batch `batch` of file f (what reading it reads); 0 for a field the
 * file does not have
 */
uint64_t
gagg_column_bytes(const GaggRun *g, const AggRunFile *f, int32_t batch, int k)
{
	ArrowExtent ext[4];
	ArrowError	aerr;
	int32_t		field = gagg_field(g, f, k);
	int			n = field >= 0 && field < f->file->schema.n_fields ?
		arrow_column_extents(f->file, batch, field, ext, 4, &aerr) : 0;
	uint64_t	bytes = 0;

	for (int e = 0; e < n; e++)
		bytes += (uint64_t) ext[e].length;
	return bytes;
}

/*
 * gagg_plan_stored: the pieces (validity, values, utf8 data) of program
 * column k in an uncompressed batch, as file extents checked against the
 * batch's rows
 */
static int
gagg_plan_stored(GaggRun *g, AggRunFile *f, int32_t batch, int k, int width,
				 GaggPiece *pc)
{
	const ArrowFile *file = f->file;
	const ArrowBatchInfo *bi = &file->batches[batch];
	const XpuColumn *col = XPU_COLS(g->prog) + k;
	int32_t		field = gagg_field(g, f, k);
	int32_t		first_node = file->columns[field].first_node;
	ArrowExtent ext[4];
	ArrowError	aerr;
	int			n_ext = arrow_column_extents(file, batch, field, ext, 4, &aerr);
	int64_t		nrows = bi->n_rows;
	size_t		need = gagg_values_len(col, width, nrows);

	if (n_ext < 0)
		return gagg_fail(g, WARP_ERR_BAD_FILE, "%s: %s", f->path, aerr.message);
	if (n_ext != (col->kind == XPU_COL_UTF8 ? 3 : 2) || first_node >= bi->n_nodes ||
		bi->nodes[first_node].length != nrows ||
		(bi->nodes[first_node].null_count > 0 && ext[0].length < (nrows + 7) / 8) ||
		ext[1].length < (int64_t) need)
		return gagg_fail(g, WARP_ERR_BAD_FILE,
						 "%s: record batch %d: the buffers of column %d do not match its rows",
						 f->path, batch, field);
	memset(pc, 0, 3 * sizeof(GaggPiece));
	pc[0].file_off = -1;
	pc[2].file_off = -1;
	if (bi->nodes[first_node].null_count > 0)
	{
		pc[0].file_off = ext[0].offset;
		pc[0].len = (size_t) (nrows + 7) / 8;
	}
	pc[1].file_off = ext[1].offset;
	pc[1].len = need;
	if (col->kind == XPU_COL_UTF8)
	{
		pc[2].file_off = ext[2].offset;
		pc[2].len = (size_t) ext[2].length;
	}
	return 0;
}

/* the same from a loaded (decompressed, validated) batch */
static int
gagg_plan_loaded(GaggRun *g, AggRunFile *f, const ArrowBatch *ab, int k, int width,
				 GaggPiece *pc)
{
	const XpuColumn *col = XPU_COLS(g->prog) + k;
	const ArrowArray *a = &ab->columns[gagg_field(g, f, k)];

	if (a->length != ab->n_rows)
		return gagg_fail(g, WARP_ERR_BAD_FILE, "%s: record batch %d: column %d has %ld rows",
						 f->path, ab->index, gagg_field(g, f, k), (long) a->length);
	memset(pc, 0, 3 * sizeof(GaggPiece));
	pc[0].file_off = pc[1].file_off = pc[2].file_off = -1;
	if (a->null_count > 0 && a->validity != NULL)
	{
		pc[0].src = a->validity;
		pc[0].len = (size_t) (ab->n_rows + 7) / 8;
	}
	pc[1].src = col->kind == XPU_COL_UTF8 ? a->offsets : (const void *) a->values;
	pc[1].len = gagg_values_len(col, width, ab->n_rows);
	if (col->kind == XPU_COL_UTF8)
	{
		pc[2].src = a->data;
		pc[2].len = (size_t) a->data_length;
	}
	return 0;
}

/*
 * gagg_slot_reserve: room for host_len staged bytes in the slot's pinned
 * buffer, dev_len in its device buffer and nrows rows in its overflow lists
 * (slot idle); buffers that grow take 1/slack_div more, so that batches of
 * slightly different sizes do not reallocate each time
 */
int
gagg_slot_reserve(GaggRun *g, GaggSlot *s, size_t host_len, size_t dev_len, int64_t nrows,
				  int slack_div, const char *what)
{
	if (host_len > s->host_cap)
	{
		size_t		cap = align_up(host_len + host_len / slack_div, 1 << 20);

		gagg_batch_release(g, &s->host, s->host_cap);
		s->host_cap = 0;
		if (gagg_batch_buffer(g, &s->host, &cap) != 0)
			return -1;
		s->host_cap = cap;
	}
	if (dev_len > s->dev_cap)
	{
		size_t		cap = align_up(dev_len + dev_len / slack_div, 1 << 20);

		gagg_dev_free(g, &s->dev, s->dev_cap);
		s->dev_cap = 0;
		if (gagg_dev_alloc(g, &s->dev, cap, what) != 0)
			return -1;
		s->dev_cap = cap;
	}
	if ((size_t) nrows > s->ovf_cap)
	{
		size_t		cap = align_up((size_t) nrows + (size_t) nrows / 4, 1 << 16);

		gagg_dev_free(g, &s->ovf, 2 * s->ovf_cap * sizeof(uint32_t));
		s->ovf_cap = 0;
		if (gagg_dev_alloc(g, &s->ovf, 2 * cap * sizeof(uint32_t), "overflow rows") != 0)
			return -1;
		s->ovf_cap = cap;
	}
	return 0;
}

/* the pieces of program column k of a batch, from cache entry e */
static void
gagg_plan_cached(const GpuCacheEntry *e, GaggPiece *pc)
{
	memset(pc, 0, 3 * sizeof(GaggPiece));
	for (int p = 0; p < 3; p++)
	{
		pc[p].file_off = -1;
		pc[p].len = gpu_cache_entry_lens(e)[p];
	}
}

/*
 * the cache entries of part p of the slot's launch, by program column, and
 * whether the launch fills them
 */
#define GAGG_PART_ENTRIES(g, s, p)	((s)->entries + (size_t) (p) * (g)->prog->n_cols)
#define GAGG_PART_FILLING(g, s, p)	((s)->filling + (size_t) (p) * (g)->prog->n_cols)

/*
 * is program column k (of a part whose entries are ent, fill) a cache hit,
 * or one a read-ahead leaves alone (GAGG_SKIP): nothing to read either way
 */
static bool
gagg_col_hit(GpuCacheEntry *const *ent, const uint8_t *fill, int k)
{
	return (ent[k] != NULL && !fill[k]) || fill[k] == GAGG_SKIP;
}

/*
 * gagg_load_missing: loads (decompresses) the fields of a compressed batch
 * that the cache did not have, and plans their pieces from it (*ab)
 */
static int
gagg_load_missing(GaggRun *g, GpuCacheEntry *const *ent, const uint8_t *fill, AggRunFile *f,
				  int32_t batch, GaggPiece *pc, ArrowBatch **ab)
{
	ArrowFile  *file = f->file;
	bool	   *want = calloc(file->schema.n_fields, sizeof(bool));
	ArrowError	aerr;
	int			rc;

	if (want == NULL)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (int k = 0; k < g->prog->n_cols; k++)
		if (!gagg_col_hit(ent, fill, k))
			want[gagg_field(g, f, k)] = true;
	rc = arrow_batch_load(file, batch, want, ab, &aerr);
	free(want);
	if (rc != ARROW_OK)
		return gagg_fail(g, rc == ARROW_ERR_IO ? WARP_ERR_IO :
						 rc == ARROW_ERR_NOMEM ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_BAD_FILE,
						 "%s: %s", f->path, aerr.message);
	for (int k = 0; k < g->prog->n_cols; k++)
	{
		int			width;

		if (gagg_col_hit(ent, fill, k))
			continue;
		svc_field_fits(&file->schema.fields[gagg_field(g, f, k)], XPU_COLS(g->prog) + k, &width);
		if (gagg_plan_loaded(g, f, *ab, k, width, pc + 3 * k) != 0)
			return -1;
	}
	return 0;
}

/*
 * gagg_plan_batch: the pieces of every program column of batch `batch` of
 * file fi into pc (3 per column): a column the device's cache holds is
 * taken from there (ent[k]); the others are planned from the file, loading
 * the batch first when it is compressed (*ab), and get a cache entry to
 * fill where the cache has room (fill[k]).  A run waits for the columns a
 * read-ahead is filling; a read-ahead (g->fill_only) leaves the columns it
 * cannot reserve (another run fills them, no room) alone (GAGG_SKIP).
 * *file_bytes and *cached_bytes grow by the bytes the referenced buffers
 * take in the file, read and served from the cache.
 */
static int
gagg_plan_batch(GaggRun *g, GpuCacheEntry **ent, uint8_t *fill, uint32_t fi, int32_t batch,
				GaggPiece *pc, ArrowBatch **ab, uint64_t *file_bytes, uint64_t *cached_bytes)
{
	AggRunFile *f = &g->run->files[fi];
	ArrowFile  *file = f->file;
	int			n_cols = g->prog->n_cols,
				n_missing = 0;
	bool		cache = g->use_cache && g->ids[fi].ino != 0;
	uint64_t	missing_bytes = 0;

	for (int k = 0; k < n_cols; k++)
	{
		const XpuColumn *col = XPU_COLS(g->prog) + k;
		int32_t		field = gagg_field(g, f, k);
		uint64_t	bytes;
		int			width;

		if (field < 0 || field >= file->schema.n_fields ||
			!svc_field_fits(&file->schema.fields[field], col, &width))
			return gagg_fail(g, WARP_ERR_BAD_FILE,
							 "%s: column %d is not of the type the plan reads", f->path, field);
		bytes = gagg_column_bytes(g, f, batch, k);
		ent[k] = !cache ? NULL : g->fill_only ?
			gpu_cache_get(g->dev, &g->ids[fi], batch, field, col->kind) :
			gpu_cache_get_wait(g->dev, &g->ids[fi], batch, field, col->kind, g->run->canceled);
		fill[k] = 0;
		if (ent[k] != NULL)
		{
			*cached_bytes += bytes;
			gagg_plan_cached(ent[k], pc + 3 * k);
			continue;
		}
		if (g->fill_only && !cache)
		{
			fill[k] = GAGG_SKIP;
			continue;
		}
		missing_bytes += bytes;
		n_missing++;
		if (file->batches[batch].codec == ARROW_CODEC_NONE &&
			gagg_plan_stored(g, f, batch, k, width, pc + 3 * k) != 0)
			return -1;
	}
	if (n_missing > 0 && file->batches[batch].codec != ARROW_CODEC_NONE &&
		gagg_load_missing(g, ent, fill, f, batch, pc, ab) != 0)
		return -1;
	for (int k = 0; k < n_cols && cache; k++)
	{
		size_t		len[3] = {pc[3 * k].len, pc[3 * k + 1].len, pc[3 * k + 2].len};
		int32_t		field = gagg_field(g, f, k);
		int32_t		kind = XPU_COLS(g->prog)[k].kind;

		if (ent[k] != NULL)
			continue;
		ent[k] = g->fill_only ?
			gpu_cache_reserve_ahead(g->dev, &g->ids[fi], batch, field, kind, len) :
			gpu_cache_reserve(g->dev, &g->ids[fi], batch, field, kind, len);
		fill[k] = ent[k] != NULL ? 1 : g->fill_only ? GAGG_SKIP : 0;
		if (fill[k] == GAGG_SKIP)
			missing_bytes -= gagg_column_bytes(g, f, batch, k);
	}
	*file_bytes += missing_bytes;
	return 0;
}

/*
 * gagg_slot_release: drops the slot's references to cache entries (the
 * GPU is done with its launch); with published, the entries it filled are
 * complete and later runs may use them, else they are dropped
 */
void
gagg_slot_release(GaggRun *g, GaggSlot *s, bool published)
{
	for (int k = 0; s->entries != NULL && k < s->n_parts * g->prog->n_cols; k++)
	{
		if (s->entries[k] == NULL)
		{
			s->filling[k] = 0;
			continue;
		}
		if (published && s->filling[k])
			gpu_cache_publish(s->entries[k]);
		gpu_cache_release(s->entries[k]);
		s->entries[k] = NULL;
		s->filling[k] = 0;
	}
}

/*
 * gagg_add_copy: a copy of the batch from the pinned buffer (c->reg NULL)
 * or from a registered file region, merged with the last one where both
 * are contiguous; -1 when out of memory
 */
static int
gagg_add_copy(GaggRun *g, GaggSlot *s, const GaggCopy *c)
{
	GaggCopy   *last = s->n_copies > 0 ? &s->copies[s->n_copies - 1] : NULL;

	if (last != NULL && last->dst + last->len == c->dst && last->reg == c->reg &&
		(c->reg == NULL ? last->host_off + last->len == c->host_off :
		 last->region == c->region && last->file_off + (int64_t) last->len == c->file_off))
	{
		last->len += c->len;
		return 0;
	}
	if (s->n_copies == s->copies_cap)
	{
		int			cap = s->copies_cap > 0 ? 2 * s->copies_cap : 64;
		GaggCopy   *more = realloc(s->copies, (size_t) cap * sizeof(GaggCopy));

		if (more == NULL)
			return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		s->copies = more;
		s->copies_cap = cap;
	}
	s->copies[s->n_copies++] = *c;
	return 0;
}

/* gagg_add_read: one more read job in *reads (grown) */
static GaggRead *
gagg_add_read(GaggRun *g, GaggRead **reads, int *n_reads, int *cap)
{
	GaggRead   *r;

	if (*n_reads == *cap)
	{
		GaggRead   *more = realloc(*reads, 2 * *cap * sizeof(GaggRead));

		if (more == NULL)
		{
			gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
			return NULL;
		}
		*reads = more;
		*cap *= 2;
	}
	r = &(*reads)[(*n_reads)++];
	memset(r, 0, sizeof(GaggRead));
	return r;
}

/*
 * gagg_map_piece: the copies of a stored piece (len bytes at file_off of
 * part p's file reg, whose regions are registered) to dst from the file's
 * registered pages, one per region
 */
static int
gagg_map_piece(GaggRun *g, GaggSlot *s, int p, struct FileReg *reg, int64_t file_off,
			   size_t len, CUdeviceptr dst)
{
	int32_t		first, last;

	file_reg_regions(file_off, len, &first, &last);
	for (int32_t i = first; i <= last; i++)
	{
		int64_t		from;
		GaggCopy	c = {0};

		c.len = file_reg_piece(file_off, len, i, &from);
		c.dst = dst + (size_t) (from - file_off);
		c.reg = reg;
		c.region = i;
		c.file_off = from;
		c.tag = p;
		if (gagg_add_copy(g, s, &c) != 0)
			return -1;
	}
	GAGG_ADD(g->run->bytes_mapped, (uint64_t) len);
	return 0;
}

/*
 * gagg_layout_pieces: decides how each piece of part p's columns that is no
 * cache hit reaches the GPU (GaggPiece.via) and lays it out: at *dev_pos of
 * the slot's device buffer, which every such piece takes, and at *host_pos
 * of its pinned buffer, which only those that pass through it take (read
 * with pread, or copied from a loaded batch).  Pieces copied from the
 * file's registered pages or read with cuFile take no pinned memory, so a
 * launch whose file is registered stages only its chunk's header.  A piece
 * is copied from registered pages when all its regions are (asking for
 * those that are not: file_reg_want); utf8 offsets always pass through the
 * pinned buffer, where they are checked.
 */
static void
gagg_layout_pieces(GaggRun *g, GaggSlot *s, int p, GaggPiece *pc, size_t *dev_pos,
				   size_t *host_pos)
{
	uint32_t	fi = s->parts[p].fi;
	struct FileReg *reg = g->regs != NULL ? g->regs[fi] : NULL;
	bool		direct = g->direct != NULL && g->direct[fi] != NULL;
	uint64_t	queued = 0;		/* bytes of regions queued for registration */

	for (int k = 0; k < g->prog->n_cols; k++)
	{
		bool		hit = gagg_col_hit(GAGG_PART_ENTRIES(g, s, p), GAGG_PART_FILLING(g, s, p), k);

		for (int q = 0; q < 3; q++)
		{
			GaggPiece  *piece = pc + 3 * k + q;
			size_t		span = align_up(piece->len, GAGG_ALIGN);
			bool		offsets = q == 1 && XPU_COLS(g->prog)[k].kind == XPU_COL_UTF8;

			piece->via = GAGG_VIA_NONE;
			if (hit)
				continue;
			piece->dev_off = *dev_pos;
			*dev_pos += span;
			if (piece->len == 0)
				continue;
			if (piece->file_off >= 0 && !offsets && reg != NULL &&
				file_reg_want(reg, piece->file_off, piece->len, g->ctx, &queued))
				piece->via = GAGG_VIA_PAGES;
			else if (piece->file_off >= 0 && !offsets && direct)
				piece->via = GAGG_VIA_DIRECT;
			else
			{
				piece->via = GAGG_VIA_HOST;
				piece->host_off = *host_pos;
				*host_pos += span;
			}
		}
	}
	GAGG_ADD(g->run->bytes_to_pin, queued);
}

/*
 * gagg_place_pieces: for the pieces of part p's columns that are no cache
 * hit (laid out by gagg_layout_pieces): copies the loaded ones into the
 * pinned buffer, adds the reads of the stored ones (in slices, tagged p)
 * to *reads and the host-to-device copies to s->copies (a column with a
 * cache entry to fill goes there, the others to the slot's device buffer),
 * and points the part's column descriptors (cols, in the pinned buffer) at
 * their device addresses
 */
static int
gagg_place_pieces(GaggRun *g, GaggSlot *s, int p, const GaggPiece *pc, XpuColumnData *cols,
				  GaggRead **reads, int *n_reads, int *cap)
{
	AggRunFile *f = &g->run->files[s->parts[p].fi];
	GpuCacheEntry **ent = GAGG_PART_ENTRIES(g, s, p);

	for (int k = 0; k < g->prog->n_cols; k++)
	{
		XpuColumnData *cd = cols + XPU_COLS(g->prog)[k].col_index;
		CUdeviceptr base = ent[k] != NULL ? gpu_cache_entry_ptr(ent[k]) :
			s->dev + pc[3 * k].dev_off;
		size_t		off = 0;
		const void *addr[3];

		for (int q = 0; q < 3; q++)
		{
			const GaggPiece *piece = pc + 3 * k + q;
			size_t		span = align_up(piece->len, GAGG_ALIGN);
			/*
			 * a stored piece that fills a cache entry through the pinned
			 * buffer: its copies go to its place in the device buffer, from
			 * where it is placed in the entry (kern_copy_pieces,
			 * gagg_copy_slot)
			 */
			bool		staged = piece->via == GAGG_VIA_HOST && piece->file_off >= 0 &&
				ent[k] != NULL;

			addr[q] = piece->len > 0 || q == 2 ? (const void *) (uintptr_t) (base + off) : NULL;
			/* a cache hit's pieces, and empty ones, are GAGG_VIA_NONE */
			if (piece->via == GAGG_VIA_NONE)
			{
				off += span;
				continue;
			}
			if (piece->via == GAGG_VIA_PAGES)
			{
				if (gagg_map_piece(g, s, p, g->regs[s->parts[p].fi], piece->file_off,
								   piece->len, base + off) != 0)
					return -1;
			}
			else if (piece->file_off < 0)
			{
				GaggCopy	c = {.host_off = piece->host_off, .len = span, .dst = base + off};

				memcpy(s->host + piece->host_off, piece->src, piece->len);
				if (gagg_add_copy(g, s, &c) != 0)
					return -1;
			}
			if (staged)
			{
				XpuCopyPiece *sp = (XpuCopyPiece *) (s->host + s->scatter_at) + s->n_scatter++;

				sp->src = s->dev + piece->dev_off;
				sp->dst = base + off;
				sp->len = piece->len;
			}
			for (size_t done = 0; piece->file_off >= 0 && piece->via != GAGG_VIA_PAGES &&
				 done < piece->len; done += GAGG_IO_SLICE)
			{
				GaggRead   *r = gagg_add_read(g, reads, n_reads, cap);

				if (r == NULL)
					return -1;
				r->fd = f->fd;
				r->tag = p;
				r->offset = piece->file_off + (int64_t) done;
				r->len = piece->len - done < GAGG_IO_SLICE ? piece->len - done : GAGG_IO_SLICE;
				r->dev = (staged ? s->dev + piece->dev_off : base + off) + done;
				r->run = g->run;
				if (piece->via == GAGG_VIA_DIRECT)
					r->direct = g->direct[s->parts[p].fi];
				else
				{
					r->dst = s->host + piece->host_off + done;
					r->stream = s->stream;
				}
				if (q == 1 && XPU_COLS(g->prog)[k].kind == XPU_COL_UTF8)
				{
					/* this slice's offsets among the part's rows + 1 */
					int64_t		left = gagg_part_rows(s, p) + 1 -
						(int64_t) (done / sizeof(int32_t));
					int64_t		n = (int64_t) (r->len / sizeof(int32_t));

					r->n_off = (n < left ? n : left) - 1;
					r->after = gagg_offsets_read;
				}
			}
			off += span;
		}
		cd->validity = addr[0];
		cd->values = addr[1];
		cd->data = addr[2];
		cd->offset = 0;
	}
	return 0;
}

/* gagg_io_fail: the run's failure for what gagg_io_run returned (io_rc != 0); -1 */
static int
gagg_io_fail(GaggRun *g, const GaggSlot *s, int io_rc)
{
	const char *path = g->run->files[s->parts[g->io.failed_tag].fi].path;

	if (io_rc == -3)
		return gagg_cuda(g, g->io.failed_cu, "cuMemcpyHtoDAsync");
	if (io_rc == -4 && g->io.failed_direct != -1)
	{
		char		why[128];

		return gagg_fail(g, WARP_ERR_IO, "could not read file \"%s\" with cuFile: %s", path,
						 gpu_direct_error(g->io.failed_direct, why, sizeof(why)));
	}
	if (io_rc == -5)			/* gagg_offsets_read refused a slice */
		return gagg_bad_offsets(g, s, g->io.failed_tag);
	if (io_rc == -4)
		io_rc = -1;				/* the file ended first */
	return gagg_fail(g, io_rc > 0 ? WARP_ERR_IO : WARP_ERR_BAD_FILE,
					 io_rc > 0 ? "could not read file \"%s\": %s" : "file \"%s\" is truncated%s",
					 path, io_rc > 0 ? strerror(io_rc) : "");
}

/*
 * gagg_check_offsets: checks the utf8 offsets the pinned buffer holds
 * (after the reads; where gagg_layout_pieces put them): within [0, data
 * length] and never decreasing.  Offsets read from the file were
 * checked slice by slice by the threads that read them (gagg_offsets_read):
 * here only the pairs across their slices; loaded ones (a compressed batch)
 * in slices spread over the I/O threads.  Cache hits were checked when they
 * were read.
 */
static int
gagg_check_offsets(GaggRun *g, GaggSlot *s, const GaggPiece *pc)
{
	GaggRead	jobs[64];
	int			n_jobs = 0,
				bad_part = -1,
				n_cols = g->prog->n_cols;

	for (int p = 0; p < s->n_parts && bad_part < 0; p++)
	{
		int64_t		nrows = gagg_part_rows(s, p);

		for (int k = 0; k < n_cols && bad_part < 0; k++)
		{
			const GaggPiece *q = pc + 3 * ((size_t) p * n_cols + k);
			const int32_t *off;

			if (XPU_COLS(g->prog)[k].kind != XPU_COL_UTF8 ||
				gagg_col_hit(GAGG_PART_ENTRIES(g, s, p), GAGG_PART_FILLING(g, s, p), k))
				continue;
			/* offsets always pass through the pinned buffer (gagg_layout_pieces) */
			off = (const int32_t *) (s->host + q[1].host_off);
			if (off[0] < 0 || (size_t) off[nrows] > q[2].len)
				bad_part = p;
			if (q[1].file_off >= 0)
			{
				for (int64_t i = GAGG_IO_SLICE / sizeof(int32_t); i <= nrows && bad_part < 0;
					 i += GAGG_IO_SLICE / sizeof(int32_t))
					if (off[i] < off[i - 1])
						bad_part = p;
				continue;
			}
			for (int64_t i = 0; i < nrows && bad_part < 0; i += GAGG_CHECK_SLICE)
			{
				if (n_jobs == 64)
				{
					if (gagg_io_run(&g->io, jobs, n_jobs) != 0)
						bad_part = g->io.failed_tag;
					n_jobs = 0;
				}
				memset(&jobs[n_jobs], 0, sizeof(GaggRead));
				jobs[n_jobs].tag = p;
				jobs[n_jobs].off = off + i;
				jobs[n_jobs++].n_off = nrows - i < GAGG_CHECK_SLICE ? nrows - i : GAGG_CHECK_SLICE;
			}
		}
	}
	if (bad_part < 0 && n_jobs > 0 && gagg_io_run(&g->io, jobs, n_jobs) != 0)
		bad_part = g->io.failed_tag;
	return bad_part >= 0 ? gagg_bad_offsets(g, s, bad_part) : 0;
}

/*
 * gagg_next_launch: the record batches of the next launch, from cursor c on
 * in request order (consecutive batches, across files, within the
 * GAGG_LAUNCH_* limits), into w, and their rows into *rows; returns how
 * many (0: none is left) and moves c past them
 */
int
gagg_next_launch(GaggRun *g, GaggCursor *c, GaggWork *w, int64_t *rows)
{
	AggRun	   *run = g->run;
	uint64_t	bytes = 0;
	int			n = 0;

	*rows = 0;

	while (c->fi < run->n_files && n < GAGG_LAUNCH_PARTS)
	{
		AggRunFile *f = &run->files[c->fi];
		int32_t		batch;
		int64_t		r;
		uint64_t	b;

		if (c->bi >= f->n_batches)
		{
			c->fi++;
			c->bi = 0;
			continue;
		}
		batch = f->batches[c->bi];
		r = f->file->batches[batch].n_rows;
		b = 0;
		for (int k = 0; k < g->prog->n_cols; k++)
			b += gagg_column_bytes(g, f, batch, k);
		if (n > 0 && (*rows + r > GAGG_LAUNCH_ROWS || bytes + b > GAGG_LAUNCH_BYTES))
			break;
		w[n].fi = c->fi;
		w[n++].batch = batch;
		*rows += r;
		bytes += b;
		c->bi++;
	}
	return n;
}

/*
 * gagg_fill_slot: lays the n record batches w (gagg_next_launch) out in the
 * (idle) slot's device buffer as the chunk the kernel reads (one part per
 * batch when there are several), except the columns the cache holds; reads
 * the pieces that pass through its pinned buffer and lists the copies to
 * make (s->copies)
 */
int
gagg_fill_slot(GaggRun *g, GaggSlot *s, const GaggWork *w, int n)
{
	int			n_cols = g->prog->n_cols;
	size_t		cols_at = sizeof(XpuChunk) + (size_t) n * sizeof(XpuChunkPart);
	size_t		part_cols = (size_t) g->chunk_ncols * sizeof(XpuColumnData);
	/* room for a kern_copy_pieces piece per piece of a column the cache can take */
	size_t		scatter_at = align_up(cols_at + (size_t) n * part_cols, 16);
	size_t		header = align_up(scatter_at + (g->use_cache ? (size_t) n * n_cols * 3 : 0) *
								  sizeof(XpuCopyPiece), GAGG_ALIGN);
	size_t		dev_len = header,
				host_len = header;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);
	GaggPiece  *pc = calloc((size_t) n * n_cols * 3 + 1, sizeof(GaggPiece));
	ArrowBatch **abs = calloc(n, sizeof(ArrowBatch *));
	GaggRead   *reads = malloc(16 * sizeof(GaggRead));
	uint64_t	file_bytes = 0,
				cached_bytes = 0;
	XpuChunk   *chunk;
	XpuChunkPart *parts;
	int			n_reads = 0,
				cap = 16,
				rc = -1,
				io_rc;

	gagg_slot_release(g, s, false);
	s->n_parts = 0;
	s->nrows = 0;
	if (pc == NULL || abs == NULL || reads == NULL)
	{
		gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		goto done;
	}
	s->first_row[0] = 0;
	for (int p = 0; p < n; p++)
	{
		s->parts[p] = w[p];
		s->nrows += g->run->files[w[p].fi].file->batches[w[p].batch].n_rows;
		s->first_row[p + 1] = s->nrows;
		s->n_parts = p + 1;
		if (gagg_plan_batch(g, GAGG_PART_ENTRIES(g, s, p), GAGG_PART_FILLING(g, s, p),
							w[p].fi, w[p].batch, pc + (size_t) 3 * n_cols * p, &abs[p],
							&file_bytes, &cached_bytes) != 0)
			goto done;
		gagg_layout_pieces(g, s, p, pc + (size_t) 3 * n_cols * p, &dev_len, &host_len);
	}
	if (gagg_slot_reserve(g, s, host_len, dev_len, s->nrows, 4, "a batch") != 0)
		goto done;
	memset(s->host, 0, header);
	chunk = (XpuChunk *) s->host;
	parts = (XpuChunkPart *) (s->host + sizeof(XpuChunk));
	chunk->nrows = s->nrows;
	chunk->ncols = g->chunk_ncols;
	chunk->n_parts = n > 1 ? n : 0;
	chunk->cols = (const XpuColumnData *) (uintptr_t) (s->dev + cols_at);
	chunk->parts = n > 1 ? (const XpuChunkPart *) (uintptr_t) (s->dev + sizeof(XpuChunk)) : NULL;
	gagg_chunk_joins(g, chunk);
	s->n_copies = 0;
	s->scatter_at = scatter_at;
	s->n_scatter = 0;
	{
		GaggCopy	c = {.host_off = 0, .len = header, .dst = s->dev};

		if (gagg_add_copy(g, s, &c) != 0)
			goto done;
	}
	for (int p = 0; p < n; p++)
	{
		parts[p].first_row = s->first_row[p];
		parts[p].cols = (const XpuColumnData *) (uintptr_t) (s->dev + cols_at + p * part_cols);
		s->part_cols[p] = parts[p].cols;
		if (gagg_place_pieces(g, s, p, pc + (size_t) 3 * n_cols * p,
							  (XpuColumnData *) (s->host + cols_at + p * part_cols),
							  &reads, &n_reads, &cap) != 0)
			goto done;
	}
	io_rc = gagg_io_run(&g->io, reads, n_reads);
	if (io_rc != 0)
	{
		gagg_io_fail(g, s, io_rc);
		goto done;
	}
	if (gagg_check_offsets(g, s, pc) != 0)
		goto done;
	GAGG_ADD(g->run->bytes_read, file_bytes);
	GAGG_ADD(g->run->bytes_cached, cached_bytes);
	rc = 0;
done:
	GAGG_ADD(g->run->io_us, (uint64_t) (svc_now_us(CLOCK_MONOTONIC) - t0));
	for (int p = 0; abs != NULL && p < n; p++)
		if (abs[p] != NULL)
			arrow_batch_free(abs[p]);
	free(abs);
	free(reads);
	free(pc);
	return rc;
}

/* the host address copy c of slot s reads */
static const void *
gagg_copy_src(const GaggSlot *s, const GaggCopy *c)
{
	return c->reg != NULL ? (const void *) file_reg_addr(c->reg, c->file_off) :
		(const void *) (s->host + c->host_off);
}

/* the driver refused a batch of copies once (gagg_copy_batch) */
static bool batch_refused;

/*
 * gagg_copy_batch: the slot's copies queued with one cuMemcpyBatchAsync
 * call where the driver has it: a launch from registered file pages has a
 * copy per column of each record batch (4,904 of about 400 kB for SSB
 * Q1.1), each of which costs a cuMemcpyHtoDAsync call on the main thread
 * otherwise.  The copies of one batch run in no set order, which they need
 * not: their destinations never overlap, and what reads them (the kernels)
 * comes after on the stream.  1: not queued (no such call, or the driver
 * refuses it), 0 queued, -1 failed
 */
static int
gagg_copy_batch(GaggRun *g, GaggSlot *s)
{
	size_t		n = (size_t) s->n_copies;
	CUdeviceptr *dsts;
	CUdeviceptr *srcs;
	size_t	   *sizes;
	size_t		attr_at = 0;
	CUmemcpyAttributes attr = {.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
		.srcLocHint = {.type = CU_MEM_LOCATION_TYPE_HOST},
	.dstLocHint = {.type = CU_MEM_LOCATION_TYPE_DEVICE}};
	CUresult	cu;

	if (gpu_drv.cuMemcpyBatchAsync == NULL || n < 2 ||
		__atomic_load_n(&batch_refused, __ATOMIC_RELAXED))
		return 1;
	dsts = malloc(n * (2 * sizeof(CUdeviceptr) + sizeof(size_t)));
	if (dsts == NULL)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	srcs = dsts + n;
	sizes = (size_t *) (srcs + n);
	for (size_t i = 0; i < n; i++)
	{
		dsts[i] = s->copies[i].dst;
		srcs[i] = (CUdeviceptr) (uintptr_t) gagg_copy_src(s, &s->copies[i]);
		sizes[i] = s->copies[i].len;
	}
	cu = gpu_drv.cuMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &attr_at, 1, s->stream);
	free(dsts);
	/* refused as such (nothing was queued): one call per copy from now on */
	if (cu == CUDA_ERROR_INVALID_VALUE || cu == CUDA_ERROR_NOT_SUPPORTED)
	{
		if (!__atomic_exchange_n(&batch_refused, true, __ATOMIC_RELAXED))
			svc_log("LOG", "the GPU driver refused batched copies (error %d): "
					"each copy queued with a call of its own", (int) cu);
		return 1;
	}
	return gagg_cuda(g, cu, "cuMemcpyBatchAsync");
}

/*
 * gagg_copy_slot: queues the slot's copies on its stream, then the
 * placing of the cache entries it fills (the reads' copies were queued as
 * they ended)
 */
int
gagg_copy_slot(GaggRun *g, GaggSlot *s)
{
	CUdeviceptr pieces = s->dev + s->scatter_at;
	uint32_t	n;
	void	   *params[] = {&pieces, &n};
	int			batched = gagg_copy_batch(g, s);

	if (batched < 0)
		return -1;
	for (int i = 0; batched > 0 && i < s->n_copies; i++)
	{
		const GaggCopy *c = &s->copies[i];

		if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(c->dst, gagg_copy_src(s, c), c->len,
												   s->stream),
					  "cuMemcpyHtoDAsync") != 0)
			return -1;
	}
	/* a launch's grid has at most 65535 rows of blocks (pieces) */
	for (int done = 0; done < s->n_scatter; done += (int) n)
	{
		n = s->n_scatter - done < 65535 ? (uint32_t) (s->n_scatter - done) : 65535;
		pieces = s->dev + s->scatter_at + (size_t) done * sizeof(XpuCopyPiece);
		if (gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(g->f_copy, XPU_COPY_PIECE_BLOCKS,
															  n, 1, 256, 1, 1, 0, s->stream,
															  params, NULL)),
					  "cuLaunchKernel") != 0)
			return -1;
	}
	return 0;
}

