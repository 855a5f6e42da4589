/*-------------------------------------------------------------------------
 *
 * heap_chunk.c
 *		The service's half of GpuPreAgg over heap tables (HEAP_RUN,
 *		xpu/protocol.h): the ring of chunks that the backend fills with
 *		heap pages in a memfd it passed over the socket, and the CPU
 *		engine's workers that decode the visible tuples of each chunk into
 *		column slices (xpu/xpu_heap.h), run the program over them and fold
 *		the passing rows into their aggregation tables; or, on the GPU
 *		engine, the source of chunks that gpu_agg.c's gpu_agg_heap_run
 *		decodes (xpu/kern_heap.cu) and aggregates on the GPU.
 *
 * GpuScan (WARP_HEAP_SCAN).  The same ring and workers, without groups:
 * each worker evaluates the qual program over the chunk's visible tuples
 * and sets one bit per passing tuple in the slot's pass bitmaps, which go
 * back in the slot's HEAP_DONE.  A chunk in which the program raised an
 * error or FALLBACK, or a value did not decode, is not an error of the run:
 * its pass bitmaps are its visibility bitmaps, flagged WARP_SCAN_RECHECK,
 * and the backend evaluates the qual there.  On the GPU engine the chunks
 * are decoded and filtered by gpu_heap.c, whose masks gpu_pass turns into
 * the same bitmaps.
 *
 * Threads.  The epoll thread (server.c) calls heap_run_message for each
 * HEAP_CHUNK / HEAP_END and heap_run_next_done to learn which slots to
 * answer HEAP_DONE for; the run's thread (agg.c) calls heap_run_exec,
 * which runs the workers until HEAP_END has come and every chunk is
 * decoded, or the run stops (an error, a FALLBACK, a cancel).  One mutex
 * guards the queues; workers write the run's eventfd after each chunk so
 * that the epoll thread sends its HEAP_DONE at once.  On the GPU the run's
 * thread alone takes the chunks (heap_run_exec_gpu) and gives each slot
 * back as soon as its pages are copied into pinned memory.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu_driver.h"
#include "service.h"
#include "service/join_store.h"
#include "service/threads.h"
#include "xpu/xpu_heap.h"

#define HEAP_SLICE			16384	/* rows per xpu_cpu_exec */
#define HEAP_MAX_THREADS	256
#define HEAP_MAX_SLOTS		64

struct HeapRun
{
	const XpuProgram *prog;
	const XpuHeapAtt *atts;
	int			n_deform;		/* attributes decoded: up to the last one read */
	const int16_t *col_att;		/* chunk column j: attribute number */
	uint8_t    *col_kind;		/* chunk column j: XpuColKind */
	int			n_cols;
	const uint8_t *missing;
	uint32_t	missing_len;
	uint8_t    *ring;			/* the memfd, mapped read-only */
	int			ring_fd;		/* the memfd, kept for the GPU engine's reads */
	size_t		ring_size;
	uint32_t	n_slots;
	uint32_t	slot_pages;
	uint64_t	slot_size;
	int			notify_fd;
	bool		scan;			/* WARP_HEAP_SCAN: pass bitmaps, no groups */
	char	   *relpath;		/* WARP_HEAP_UNITS: the first segment file, or NULL */
	uint32_t	seg_blocks;		/* blocks per segment file */
	bool		service_reads;	/* WARP_HEAP_SERVICE_READS */
	uint8_t    *pass;			/* scan: each slot's pass bitmaps */
	WarpHeapPass pass_hdr[HEAP_MAX_SLOTS];	/* scan: each slot's HEAP_DONE header */
	uint64_t   *run_rows_passed;	/* scan on the GPU: the run's counter */

	pthread_mutex_t lock;
	pthread_cond_t cond;
	WarpHeapChunk ready[HEAP_MAX_SLOTS];	/* FIFO of the filled slots' HEAP_CHUNKs */
	uint32_t	ready_head,
				n_ready;
	WarpHeapChunk slot_ch[HEAP_MAX_SLOTS];	/* each slot's HEAP_CHUNK, once taken */
	uint32_t	done_flags[HEAP_MAX_SLOTS];	/* each slot's HEAP_DONE flags */
	uint32_t	done[HEAP_MAX_SLOTS];	/* FIFO of slots to answer HEAP_DONE for */
	uint32_t	done_head,
				n_done;
	bool		in_flight[HEAP_MAX_SLOTS];
	bool		ended;			/* HEAP_END came */
	bool		stop;			/* canceled, or a worker failed */
};

/* one worker's buffers for a slice of decoded rows */
typedef struct HeapCol
{
	uint8_t    *validity;		/* [HEAP_SLICE / 8] */
	uint8_t    *values;			/* [HEAP_SLICE * 16], or utf8 offsets */
	char	   *data;			/* utf8 bytes */
	size_t		data_len;
	size_t		data_cap;
} HeapCol;

typedef struct HeapWorker
{
	HeapRun    *h;
	AggRun	   *run;
	XpuAggTable *table;
	void	   *workspace;
	XpuValue   *values;
	uint8_t    *nulls;
	uint8_t    *mask;
	XpuColumnData *cols;
	HeapCol    *hcols;
	const uint8_t **ptrs;		/* [n_deform] */
	uint32_t   *lens;
	uint32_t   *row_pos;		/* scan: each row's page << 16 | line pointer index */
	uint8_t    *pass;			/* scan: the pass bitmaps of the chunk it runs */
	int64_t		nrows;			/* rows of the current slice */
	/* outcome: werr (WarpErrorCode) or err.code set on failure */
	int			werr;
	XpuError	err;
} HeapWorker;

/* the attribute width each column kind reads (-1: a varlena) */
static int
kind_attlen(int kind)
{
	switch (kind)
	{
		case XPU_COL_BOOL: return 1;
		case XPU_COL_INT16:
		case XPU_COL_FLOAT16: return 2;
		case XPU_COL_INT32:
		case XPU_COL_FLOAT32:
		case XPU_COL_DATE32: return 4;
		case XPU_COL_INT64:
		case XPU_COL_FLOAT64:
		case XPU_COL_TIMESTAMP_US: return 8;
		case XPU_COL_INTERVAL_MDN: return 16;
		case XPU_COL_DECIMAL128:
		case XPU_COL_UTF8: return -1;
		default: return 0;
	}
}

/* checks the attributes and columns of a parsed request; false with msg */
static bool
check_columns(HeapRun *h, uint32_t n_atts, char *msg, size_t msglen)
{
	const XpuProgram *prog = h->prog;

	for (uint32_t a = 0; a < n_atts; a++)
	{
		const XpuHeapAtt *at = &h->atts[a];

		if ((at->attlen <= 0 && at->attlen != -1 && at->attlen != -2) ||
			(at->align != 1 && at->align != 2 && at->align != 4 && at->align != 8) ||
			((at->flags & XPU_HEAP_ATT_MISSING) &&
			 (at->missing_off > h->missing_len ||
			  at->missing_len > h->missing_len - at->missing_off || at->missing_len == 0)))
			return snprintf(msg, msglen, "heap attribute %u is malformed", a + 1), false;
	}
	for (int j = 0; j < h->n_cols; j++)
		if (h->col_att[j] < 1 || (uint32_t) h->col_att[j] > n_atts)
			return snprintf(msg, msglen, "chunk column %d reads no attribute", j), false;
		else if (h->col_att[j] > h->n_deform)
			h->n_deform = h->col_att[j];
	for (int i = 0; i < prog->n_cols; i++)
	{
		const XpuColumn *col = XPU_COLS(prog) + i;
		int			len;

		if (col->col_index >= h->n_cols)
			return snprintf(msg, msglen, "program column %d reads no chunk column", i), false;
		len = kind_attlen(col->kind);
		if (len == 0 || h->atts[h->col_att[col->col_index] - 1].attlen != len ||
			(h->col_kind[col->col_index] != 0 && h->col_kind[col->col_index] != col->kind))
			return snprintf(msg, msglen, "program column %d does not fit its attribute", i),
				false;
		h->col_kind[col->col_index] = col->kind;
	}
	return true;
}

/* maps the ring (sealed against shrinking, large enough); false with msg */
static bool
map_ring(HeapRun *h, int memfd, char *msg, size_t msglen)
{
	struct stat st;
	int			seals = fcntl(memfd, F_GET_SEALS);

	h->ring_size = (size_t) h->n_slots * h->slot_size;
	if (fstat(memfd, &st) != 0 || !S_ISREG(st.st_mode) || seals < 0 ||
		!(seals & F_SEAL_SHRINK) || (uint64_t) st.st_size < h->ring_size)
		return snprintf(msg, msglen, "the chunk ring is not a sealed memfd of %zu bytes",
						h->ring_size), false;
	h->ring = mmap(NULL, h->ring_size, PROT_READ, MAP_SHARED, memfd, 0);
	if (h->ring == MAP_FAILED)
	{
		h->ring = NULL;
		return snprintf(msg, msglen, "could not map the chunk ring: %s", strerror(errno)),
			false;
	}
	if ((h->ring_fd = fcntl(memfd, F_DUPFD_CLOEXEC, 0)) < 0)
		return snprintf(msg, msglen, "could not keep the chunk ring: %s", strerror(errno)),
			false;
	return true;
}

/*
 * parse_path: the WARP_HEAP_UNITS path (len bytes at the first 8-byte
 * aligned offset from at, within the request's n bytes at p) into h->relpath;
 * false when it does not fit, holds a NUL, is absolute or climbs out of
 * the data directory
 */
static bool
parse_path(HeapRun *h, const uint8_t *p, size_t n, size_t at, uint32_t len)
{
	at = (at + 7) & ~(size_t) 7;
	if (at > n || n - at < len || memchr(p + at, '\0', len) != NULL || p[at] == '/')
		return false;
	if ((h->relpath = malloc(len + 1)) == NULL)
		return false;
	memcpy(h->relpath, p + at, len);
	h->relpath[len] = '\0';
	return strstr(h->relpath, "..") == NULL;
}

/*
 * heap_run_parse: the heap part of a HEAP_RUN (p, len bytes: what follows
 * the program, at an 8-byte aligned offset) for program prog; maps the
 * ring of memfd (closed by the caller).  NULL with msg set when the
 * request is malformed or the ring cannot be mapped.
 */
HeapRun *
heap_run_parse(const uint8_t *p, size_t len, const XpuProgram *prog, int memfd,
			   int notify_fd, char *msg, size_t msglen)
{
	const WarpHeapRequest *req = (const WarpHeapRequest *) p;
	HeapRun    *h;
	size_t		off;

	if (len < sizeof(*req))
		return snprintf(msg, msglen, "HEAP_RUN is truncated"), NULL;
	if (req->n_slots < 1 || req->n_slots > HEAP_MAX_SLOTS || req->slot_pages < 1 ||
		req->slot_pages > 65536 || req->slot_size % XPU_HEAP_PAGE_SIZE != 0 ||
		req->slot_size < (uint64_t) req->slot_pages * (XPU_HEAP_PAGE_SIZE + XPU_HEAP_VIS_BYTES) ||
		req->slot_size > ((uint64_t) 1 << 32) || req->n_atts > 1600)
		return snprintf(msg, msglen, "HEAP_RUN has a bad ring or attribute count"), NULL;
	off = sizeof(*req) + sizeof(XpuHeapAtt) * req->n_atts;
	off += ((size_t) prog->n_cols * 2 + 7) & ~(size_t) 7;
	if (off > len || len - off < req->missing_len)
		return snprintf(msg, msglen, "HEAP_RUN is truncated"), NULL;
	if ((req->flags & ~(uint32_t) (WARP_HEAP_SCAN | WARP_HEAP_UNITS | WARP_HEAP_SERVICE_READS)) != 0 ||
		((req->flags & WARP_HEAP_SERVICE_READS) && !(req->flags & WARP_HEAP_UNITS)) ||
		((req->flags & WARP_HEAP_SCAN) &&
		 sizeof(WarpHeapPass) + (uint64_t) req->slot_pages * XPU_HEAP_VIS_BYTES > PGWARP_MAX_PAYLOAD))
		return snprintf(msg, msglen, "HEAP_RUN has bad flags or too many pages per chunk"), NULL;
	/* units: an aggregation whose chunks hold a whole unit, a path, whole units per segment */
	if ((req->flags & WARP_HEAP_UNITS) &&
		((req->flags & WARP_HEAP_SCAN) || req->slot_pages < WARP_HEAP_UNIT_BLOCKS ||
		 req->path_len < 1 || req->path_len > 1024 ||
		 req->seg_blocks < WARP_HEAP_UNIT_BLOCKS || req->seg_blocks % WARP_HEAP_UNIT_BLOCKS != 0))
		return snprintf(msg, msglen, "HEAP_RUN has a bad unit request"), NULL;
	if ((h = calloc(1, sizeof(HeapRun))) == NULL ||
		(h->col_kind = calloc(prog->n_cols + 1, 1)) == NULL)
	{
		free(h);
		return snprintf(msg, msglen, "out of memory"), NULL;
	}
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	h->prog = prog;
	h->atts = (const XpuHeapAtt *) (p + sizeof(*req));
	h->col_att = (const int16_t *) (p + sizeof(*req) + sizeof(XpuHeapAtt) * req->n_atts);
	h->n_cols = prog->n_cols;
	h->missing = p + off;
	h->missing_len = req->missing_len;
	h->n_slots = req->n_slots;
	h->slot_pages = req->slot_pages;
	h->slot_size = req->slot_size;
	h->notify_fd = notify_fd;
	h->ring_fd = -1;
	h->scan = (req->flags & WARP_HEAP_SCAN) != 0;
	h->seg_blocks = req->seg_blocks;
	h->service_reads = (req->flags & WARP_HEAP_SERVICE_READS) != 0;
	if ((req->flags & WARP_HEAP_UNITS) && !parse_path(h, p, len, off + req->missing_len,
													   req->path_len))
	{
		heap_run_free(h);
		return snprintf(msg, msglen, "HEAP_RUN has a bad segment path"), NULL;
	}
	if (h->scan &&
		(h->pass = calloc((size_t) h->n_slots * h->slot_pages, XPU_HEAP_VIS_BYTES)) == NULL)
	{
		heap_run_free(h);
		return snprintf(msg, msglen, "out of memory"), NULL;
	}
	if (!check_columns(h, req->n_atts, msg, msglen) || !map_ring(h, memfd, msg, msglen))
	{
		heap_run_free(h);
		return NULL;
	}
	return h;
}

/* heap_run_free: unmaps and frees (the workers have ended) */
void
heap_run_free(HeapRun *h)
{
	if (h == NULL)
		return;
	if (h->ring)
		munmap(h->ring, h->ring_size);
	if (h->ring_fd >= 0)
		close(h->ring_fd);
	pthread_mutex_destroy(&h->lock);
	pthread_cond_destroy(&h->cond);
	free(h->col_kind);
	free(h->pass);
	free(h->relpath);
	free(h);
}

/* are the unit flags of HEAP_CHUNK ch ones the run allows */
static bool
chunk_flags_ok(const HeapRun *h, const WarpHeapChunk *ch)
{
	if (ch->flags == 0)
		return true;
	if (h->relpath == NULL || ch->unit % WARP_HEAP_UNIT_BLOCKS != 0)
		return false;
	if (ch->flags == WARP_CHUNK_PROBE)
		return ch->n_pages == 0;
	return ch->flags == WARP_CHUNK_UNIT && ch->n_pages <= WARP_HEAP_UNIT_BLOCKS;
}

/*
 * heap_run_message: serves a HEAP_CHUNK or HEAP_END of the run (epoll
 * thread); false with msg set when it breaks the protocol.
 */
bool
heap_run_message(HeapRun *h, uint32_t type, const uint8_t *payload, uint32_t len,
				 char *msg, size_t msglen)
{
	bool		ok = true;

	pthread_mutex_lock(&h->lock);
	if (h->ended)
		ok = (snprintf(msg, msglen, "a heap chunk message after HEAP_END"), false);
	else if (type == WARP_MSG_HEAP_END)
		ok = len == 0 || (snprintf(msg, msglen, "HEAP_END with a payload"), false);
	else
	{
		WarpHeapChunk ch;

		if (len != sizeof(ch))
			ok = (snprintf(msg, msglen, "HEAP_CHUNK of %u bytes", len), false);
		else
		{
			memcpy(&ch, payload, sizeof(ch));
			if (ch.slot >= h->n_slots || ch.n_pages > h->slot_pages || h->in_flight[ch.slot])
				ok = (snprintf(msg, msglen, "HEAP_CHUNK of a bad or busy slot %u", ch.slot),
					  false);
			else if (!chunk_flags_ok(h, &ch))
				ok = (snprintf(msg, msglen, "HEAP_CHUNK with bad unit flags %#x", ch.flags),
					  false);
			else
			{
				uint32_t	tail = (h->ready_head + h->n_ready) % HEAP_MAX_SLOTS;

				h->ready[tail] = ch;
				h->n_ready++;
				h->in_flight[ch.slot] = true;
			}
		}
	}
	if (ok && type == WARP_MSG_HEAP_END)
		h->ended = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return ok;
}

/*
 * heap_run_next_done: the payload of the next HEAP_DONE to send (epoll
 * thread) into buf (room for PGWARP_MAX_PAYLOAD bytes), its length in *len;
 * false when no slot is done
 */
bool
heap_run_next_done(HeapRun *h, uint8_t *buf, uint32_t *len)
{
	bool		any;
	uint32_t	slot = 0;

	pthread_mutex_lock(&h->lock);
	any = h->n_done > 0;
	if (any)
	{
		slot = h->done[h->done_head];
		h->done_head = (h->done_head + 1) % HEAP_MAX_SLOTS;
		h->n_done--;
	}
	pthread_mutex_unlock(&h->lock);
	if (!any)
		return false;
	if (!h->scan)
	{
		WarpHeapChunk ch = {slot, 0, h->slot_ch[slot].unit, h->done_flags[slot], 0};

		memcpy(buf, &ch, sizeof(ch));
		*len = sizeof(ch);
		return true;
	}
	/* the slot is the backend's again only once this is sent: its bits stay */
	memcpy(buf, &h->pass_hdr[slot], sizeof(WarpHeapPass));
	*len = sizeof(WarpHeapPass) + h->pass_hdr[slot].n_pages * XPU_HEAP_VIS_BYTES;
	memcpy(buf + sizeof(WarpHeapPass), h->pass + (size_t) slot * h->slot_pages * XPU_HEAP_VIS_BYTES,
		   (size_t) h->pass_hdr[slot].n_pages * XPU_HEAP_VIS_BYTES);
	return true;
}

/* heap_run_cancel: stops the workers (any thread) */
void
heap_run_cancel(HeapRun *h)
{
	pthread_mutex_lock(&h->lock);
	h->stop = true;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* ---------------------------------------------------------------- workers */

/*
 * flush_slice_each: flush_slice of an aggregation whose program's rows
 * expand: the output rows, HEAP_SLICE at a time, into the worker's table
 */
static bool
flush_slice_each(HeapWorker *w, XpuChunk *chunk)
{
	XpuResult	res = {HEAP_SLICE, w->mask, w->values, w->nulls};
	XpuAggSink	as = {w->table, 0};
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};
	int			rc = xpu_cpu_exec_each_counted(w->h->prog, chunk, &res, w->workspace, &w->err,
											   xpu_agg_sink, &as, probes);

	__atomic_add_fetch(&w->run->rows_passed, as.rows, __ATOMIC_RELAXED);
	svc_join_counts_add(&w->run->join_rows, probes, chunk->n_joins);
	if (rc < 0 && w->err.code != XPU_ERR_FALLBACK)
		w->werr = WARP_ERR_OUT_OF_MEMORY;
	return rc > 0;
}

/* runs the program over the worker's slice and folds it into its table */
static bool
flush_slice(HeapWorker *w)
{
	HeapRun    *h = w->h;
	XpuChunk	chunk = {w->nrows, h->n_cols, 0, w->cols};
	XpuResult	res = {w->nrows, w->mask, w->values, w->nulls};
	uint64_t	passed = 0;
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};

	if (w->nrows == 0)
		return true;
	svc_join_chunk(&chunk, w->run->joins);
	for (int j = 0; j < h->n_cols; j++)
	{
		w->cols[j].validity = w->hcols[j].validity;
		w->cols[j].values = w->hcols[j].values;
		w->cols[j].data = w->hcols[j].data;
		w->cols[j].offset = 0;
	}
	if (!h->scan && xpu_program_expands_over(h->prog, chunk.joins, chunk.n_joins))
	{
		if (!flush_slice_each(w, &chunk))
			return false;
		w->nrows = 0;
		for (int j = 0; j < h->n_cols; j++)
			w->hcols[j].data_len = 0;
		return true;
	}
	if (xpu_cpu_exec_counted(h->prog, &chunk, &res, w->workspace, &w->err,
							 chunk.n_joins > 0 ? probes : NULL) != XPU_OK)
		return false;
	for (int64_t r = 0; r < w->nrows; r++)
		passed += w->mask[r];
	if (h->scan)
	{
		for (int64_t r = 0; r < w->nrows; r++)
			if (w->mask[r])
			{
				uint32_t	pos = w->row_pos[r];
				uint8_t    *bits = w->pass + (size_t) (pos >> 16) * XPU_HEAP_VIS_BYTES;

				bits[(pos & 0xffff) >> 3] |= 1 << (pos & 7);
			}
	}
	else if (!xpu_agg_table_update(w->table, &res, &w->err))
	{
		w->werr = WARP_ERR_OUT_OF_MEMORY;
		return false;
	}
	__atomic_add_fetch(&w->run->rows_passed, passed, __ATOMIC_RELAXED);
	svc_join_counts_add(&w->run->join_rows, probes, chunk.n_joins);
	w->nrows = 0;
	for (int j = 0; j < h->n_cols; j++)
		w->hcols[j].data_len = 0;
	return true;
}

/* appends text bytes to column c's slice; false when out of memory */
static bool
put_text(HeapWorker *w, HeapCol *c, int64_t r, const uint8_t *d, uint32_t n)
{
	int32_t    *offs = (int32_t *) c->values;

	if (c->data_len + n > c->data_cap)
	{
		size_t		cap = c->data_cap * 2 > c->data_len + n ? c->data_cap * 2 : c->data_len + n;
		char	   *p = realloc(c->data, cap);

		if (p == NULL)
			return false;
		c->data = p;
		c->data_cap = cap;
	}
	if (n > 0)
		memcpy(c->data + c->data_len, d, n);
	c->data_len += n;
	offs[r] = (int32_t) (c->data_len - n);
	offs[r + 1] = (int32_t) c->data_len;
	return true;
}

/* one column value of the tuple into row r of column j; an XpuErrorCode */
static int
put_value(HeapWorker *w, int j, int64_t r, const uint8_t *p, uint32_t sz)
{
	HeapCol    *c = &w->hcols[j];
	int			kind = w->h->col_kind[j];
	const uint8_t *d;
	uint32_t	dlen;
	int			rc;

	if (p == NULL)
	{
		c->validity[r >> 3] &= ~(1 << (r & 7));
		if (kind == XPU_COL_UTF8)
			return put_text(w, c, r, NULL, 0) ? XPU_OK : -1;
		return XPU_OK;
	}
	c->validity[r >> 3] |= 1 << (r & 7);
	if (kind == XPU_COL_UTF8 || kind == XPU_COL_DECIMAL128)
	{
		if ((rc = xpu_heap_varlena(p, sz, &d, &dlen)) != XPU_OK)
			return rc;
		if (kind == XPU_COL_UTF8)
			return put_text(w, c, r, d, dlen) ? XPU_OK : -1;
		for (int i = 0; i < w->h->prog->n_cols; i++)
		{
			const XpuColumn *col = XPU_COLS(w->h->prog) + i;
			__int128	v;

			if (col->col_index != j)
				continue;
			if ((rc = xpu_heap_numeric(d, dlen, col->scale, &v)) != XPU_OK)
				return rc;
			memcpy(c->values + 16 * r, &v, 16);
			return XPU_OK;
		}
		return XPU_ERR_INTERNAL;
	}
	if (kind == XPU_COL_BOOL)
	{
		uint8_t		b;

		if ((rc = xpu_heap_fixed(kind, p, sz, &b)) == XPU_OK)
			c->values[r >> 3] = (c->values[r >> 3] & ~(1 << (r & 7))) | (b << (r & 7));
		return rc;
	}
	return xpu_heap_fixed(kind, p, sz, c->values + (size_t) kind_attlen(kind) * r);
}

/*
 * decodes the tuple at off/len of page into the slice (pos: its page and
 * line pointer index, for a scan's pass bits); false on failure
 */
static bool
put_tuple(HeapWorker *w, const uint8_t *page, uint32_t off, uint32_t len, uint32_t pos)
{
	HeapRun    *h = w->h;
	int			rc = xpu_heap_deform(page + off, len, h->atts, h->n_deform, h->missing,
									 w->ptrs, w->lens);

	for (int j = 0; j < h->n_cols && rc == XPU_OK; j++)
		rc = put_value(w, j, w->nrows, w->ptrs[h->col_att[j] - 1], w->lens[h->col_att[j] - 1]);
	if (rc == -1)
	{
		w->werr = WARP_ERR_OUT_OF_MEMORY;
		return false;
	}
	if (rc != XPU_OK)
	{
		XPU_ERROR(&w->err, rc == XPU_ERR_FALLBACK ? XPU_ERR_FALLBACK : XPU_ERR_INTERNAL,
				  "a heap value the engine does not decode (compressed, external or out of range)");
		return false;
	}
	if (w->row_pos)
		w->row_pos[w->nrows] = pos;
	w->nrows++;
	return w->nrows < HEAP_SLICE || flush_slice(w);
}

/*
 * page_items: the visible tuples of page (bits: its visibility bitmap) as
 * offsets and lengths; -1 when a line pointer does not decode
 */
static int
page_items(const uint8_t *page, const uint8_t *bits, uint32_t *offs, uint32_t *lens,
		   uint16_t *idx)
{
	int			n = 0;

	for (int b = 0; b < XPU_HEAP_VIS_BYTES; b++)
	{
		if (bits[b] == 0)
			continue;
		for (int i = b * 8; i < b * 8 + 8; i++)
		{
			if (!(bits[b] & (1 << (i & 7))))
				continue;
			if (!xpu_heap_item(page, i, &offs[n], &lens[n]))
				return -1;
			idx[n++] = (uint16_t) i;
		}
	}
	return n;
}

/* decodes and aggregates (or filters) the n_pages pages of slot; false on failure */
static bool
run_chunk(HeapWorker *w, uint32_t slot, uint32_t n_pages)
{
	HeapRun    *h = w->h;
	const uint8_t *base = h->ring + (size_t) slot * h->slot_size;
	const uint8_t *vis = base + (size_t) h->slot_pages * XPU_HEAP_PAGE_SIZE;
	uint32_t	offs[XPU_HEAP_VIS_BYTES * 8];
	uint32_t	lens[XPU_HEAP_VIS_BYTES * 8];
	uint16_t	idx[XPU_HEAP_VIS_BYTES * 8];
	uint64_t	tuples = 0;

	for (uint32_t p = 0; p < n_pages; p++)
	{
		const uint8_t *page = base + (size_t) p * XPU_HEAP_PAGE_SIZE;
		int			n = page_items(page, vis + (size_t) p * XPU_HEAP_VIS_BYTES, offs, lens,
								   idx);

		if (n < 0)
		{
			XPU_ERROR(&w->err, XPU_ERR_FALLBACK, "a malformed heap page");
			return false;
		}
		for (int k = 0; k < n; k++)
		{
			/* the first touch of a tuple is a cache miss: ask for the next ones early */
			if (k + 4 < n)
				__builtin_prefetch(page + offs[k + 4]);
			if (!put_tuple(w, page, offs[k], lens[k], p << 16 | idx[k]))
				return false;
		}
		tuples += n;
	}
	__atomic_add_fetch(&w->run->rows_in, tuples, __ATOMIC_RELAXED);
	__atomic_add_fetch(&w->run->bytes_read, (uint64_t) n_pages * XPU_HEAP_PAGE_SIZE,
					   __ATOMIC_RELAXED);
	__atomic_add_fetch(&w->run->batches, 1, __ATOMIC_RELAXED);
	return flush_slice(w);
}

/* takes the next filled slot's HEAP_CHUNK; false when the run is over for this worker */
static bool
take_slot(HeapRun *h, WarpHeapChunk *ch)
{
	bool		got = false;

	pthread_mutex_lock(&h->lock);
	while (!h->stop && h->n_ready == 0 && !h->ended)
		pthread_cond_wait(&h->cond, &h->lock);
	if (!h->stop && h->n_ready > 0)
	{
		*ch = h->ready[h->ready_head];
		h->slot_ch[ch->slot] = *ch;
		h->ready_head = (h->ready_head + 1) % HEAP_MAX_SLOTS;
		h->n_ready--;
		got = true;
	}
	pthread_mutex_unlock(&h->lock);
	return got;
}

/*
 * hands slot back: HEAP_DONE goes out through the epoll thread, with
 * flags (WARP_CHUNK_SERVED, WARP_CHUNK_READ, WARP_CHUNK_NO_CACHE) and, for a probe,
 * WARP_CHUNK_PROBE
 */
static void
give_slot(HeapRun *h, uint32_t slot, uint32_t flags)
{
	uint64_t	one = 1;

	pthread_mutex_lock(&h->lock);
	h->in_flight[slot] = false;
	h->done_flags[slot] = flags | (h->slot_ch[slot].flags & WARP_CHUNK_PROBE);
	h->done[(h->done_head + h->n_done) % HEAP_MAX_SLOTS] = slot;
	h->n_done++;
	pthread_mutex_unlock(&h->lock);
	if (write(h->notify_fd, &one, sizeof(one)) < 0)
		svc_log("WARNING", "could not signal a heap chunk's end: %s", strerror(errno));
}

/* the visible tuples of the n_pages bitmaps at vis */
static uint32_t
count_bits(const uint8_t *vis, uint32_t n_pages)
{
	uint32_t	n = 0;

	for (size_t i = 0; i < (size_t) n_pages * XPU_HEAP_VIS_BYTES; i++)
		n += (uint32_t) __builtin_popcount(vis[i]);
	return n;
}

/*
 * scan_chunk: run_chunk for a GpuScan: the slot's pass bitmaps and HEAP_DONE
 * header; a chunk that the engine cannot filter (the program's error or
 * FALLBACK, a value it does not decode) is returned whole for the backend
 * to recheck.  False only when the run must stop (out of memory).
 */
static bool
scan_chunk(HeapWorker *w, uint32_t slot, uint32_t n_pages)
{
	HeapRun    *h = w->h;
	const uint8_t *vis = h->ring + (size_t) slot * h->slot_size +
		(size_t) h->slot_pages * XPU_HEAP_PAGE_SIZE;
	WarpHeapPass *ph = &h->pass_hdr[slot];

	w->pass = h->pass + (size_t) slot * h->slot_pages * XPU_HEAP_VIS_BYTES;
	memset(w->pass, 0, (size_t) n_pages * XPU_HEAP_VIS_BYTES);
	*ph = (WarpHeapPass) {slot, n_pages, 0, 0};
	if (run_chunk(w, slot, n_pages))
	{
		ph->n_passed = count_bits(w->pass, n_pages);
		return true;
	}
	if (w->werr != 0)
		return false;
	/* PostgreSQL's to filter: every visible tuple, flagged */
	memcpy(w->pass, vis, (size_t) n_pages * XPU_HEAP_VIS_BYTES);
	ph->flags = WARP_SCAN_RECHECK;
	ph->n_passed = count_bits(vis, n_pages);
	memset(&w->err, 0, sizeof(w->err));
	w->nrows = 0;
	for (int j = 0; j < h->n_cols; j++)
		w->hcols[j].data_len = 0;
	__atomic_add_fetch(&w->run->rows_in, ph->n_passed, __ATOMIC_RELAXED);
	__atomic_add_fetch(&w->run->batches, 1, __ATOMIC_RELAXED);
	return true;
}

static void *
worker_main(void *arg)
{
	HeapWorker *w = arg;
	WarpHeapChunk ch;

	while (take_slot(w->h, &ch))
	{
		int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);
		bool		ok;

		if (ch.flags & WARP_CHUNK_PROBE)
		{
			/* the CPU engine keeps no decoded units: the backend reads them */
			give_slot(w->h, ch.slot, WARP_CHUNK_NO_CACHE);
			continue;
		}
		ok = w->h->scan ? scan_chunk(w, ch.slot, ch.n_pages) : run_chunk(w, ch.slot, ch.n_pages);
		__atomic_add_fetch(&w->run->exec_us, svc_now_us(CLOCK_MONOTONIC) - t0,
						   __ATOMIC_RELAXED);
		give_slot(w->h, ch.slot, 0);
		if (!ok)
		{
			heap_run_cancel(w->h);
			break;
		}
	}
	return NULL;
}

/* allocates a worker's buffers and table; false when out of memory */
static bool
worker_setup(HeapRun *h, AggRun *run, HeapWorker *w)
{
	const XpuProgram *prog = h->prog;
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	int			nc = h->n_cols ? h->n_cols : 1;
	XpuError	err = {0};

	w->h = h;
	w->run = run;
	w->workspace = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	w->values = aligned_alloc(16, outs * HEAP_SLICE * sizeof(XpuValue));
	w->nulls = malloc(outs * HEAP_SLICE);
	w->mask = malloc(HEAP_SLICE);
	w->cols = calloc(nc, sizeof(XpuColumnData));
	w->hcols = calloc(nc, sizeof(HeapCol));
	w->ptrs = calloc(h->n_deform + 1, sizeof(uint8_t *));
	w->lens = calloc(h->n_deform + 1, sizeof(uint32_t));
	if (h->scan)
		w->row_pos = malloc(HEAP_SLICE * sizeof(uint32_t));
	else
		w->table = xpu_agg_table_create(prog, &run->spec, &err);
	if (!w->workspace || !w->values || !w->nulls || !w->mask || !w->cols || !w->hcols ||
		!w->ptrs || !w->lens || (h->scan ? !w->row_pos : !w->table))
		return false;
	for (int j = 0; j < h->n_cols; j++)
	{
		HeapCol    *c = &w->hcols[j];

		c->validity = calloc(HEAP_SLICE / 8, 1);
		c->values = aligned_alloc(16, (HEAP_SLICE + 1) * 16);
		if (c->validity == NULL || c->values == NULL)
			return false;
	}
	return true;
}

/* frees what worker_setup allocated (not the table) */
static void
worker_release(HeapRun *h, HeapWorker *w)
{
	for (int j = 0; w->hcols && j < h->n_cols; j++)
	{
		free(w->hcols[j].validity);
		free(w->hcols[j].values);
		free(w->hcols[j].data);
	}
	free(w->hcols);
	free(w->workspace);
	free(w->values);
	free(w->nulls);
	free(w->mask);
	free(w->cols);
	free(w->ptrs);
	free(w->lens);
	free(w->row_pos);
}

/* the first failure of the workers, as heap_run_exec returns it */
static int
workers_outcome(HeapWorker *ws, uint32_t n, XpuError *err, int *werr, char *msg,
				size_t msglen)
{
	for (uint32_t i = 0; i < n; i++)
		if (ws[i].werr != 0)
		{
			*werr = ws[i].werr;
			snprintf(msg, msglen, "out of memory decoding heap tuples");
			return -1;
		}
	for (uint32_t i = 0; i < n; i++)
		if (ws[i].err.code != XPU_OK)
		{
			*err = ws[i].err;
			return err->code;
		}
	return XPU_OK;
}

/*
 * heap_run_exec: runs the workers (run->n_threads) until every chunk of
 * the run is aggregated; their tables go to tables[0 .. *n_tables) (room
 * for HEAP_MAX_THREADS; the caller merges them, on as many threads).
 * Returns as gpu_agg_run does (service.h); *threads is the number of
 * workers that ran (threads.h: fewer when threads could not start).  A
 * canceled run returns XPU_OK with the tables partial: the caller checks
 * its cancel flag.
 */
int
heap_run_exec(HeapRun *h, AggRun *run, XpuAggTable **tables, uint32_t *n_tables,
			  uint32_t *threads, XpuError *err, int *werr, char *msg, size_t msglen)
{
	uint32_t	n = run->n_threads ? run->n_threads : 1;
	uint32_t	ran = 0;
	HeapWorker *ws;
	int			rc = XPU_OK;

	if (n > HEAP_MAX_THREADS)
		n = HEAP_MAX_THREADS;
	if ((ws = calloc(n, sizeof(HeapWorker))) == NULL)
		return *werr = WARP_ERR_OUT_OF_MEMORY, snprintf(msg, msglen, "out of memory"), -1;
	for (uint32_t i = 0; i < n && rc == XPU_OK; i++)
		if (!worker_setup(h, run, &ws[i]))
		{
			*werr = WARP_ERR_OUT_OF_MEMORY;
			snprintf(msg, msglen, "out of memory starting the heap workers");
			rc = -1;
			heap_run_cancel(h);
		}
	if (rc == XPU_OK)
	{
		ran = svc_workers_run("a HEAP_RUN's workers", worker_main, ws, sizeof(HeapWorker), n);
		rc = workers_outcome(ws, ran, err, werr, msg, msglen);
	}
	*threads = ran;
	for (uint32_t i = 0; i < n; i++)
	{
		if (rc == XPU_OK && i < ran && ws[i].table != NULL)
			tables[(*n_tables)++] = ws[i].table, ws[i].table = NULL;
		xpu_agg_table_free(ws[i].table);
		worker_release(h, &ws[i]);
	}
	free(ws);
	return rc;
}

/* ------------------------------------------------------------- the GPU */

/* GpuHeapSource.take over the run's queue */
static bool
gpu_take(void *arg, WarpHeapChunk *ch)
{
	return take_slot((HeapRun *) arg, ch);
}

/* GpuHeapSource.give: the slot's HEAP_DONE */
static void
gpu_give(void *arg, uint32_t slot, uint32_t flags)
{
	give_slot((HeapRun *) arg, slot, flags);
}

/*
 * GpuHeapSource.pass: a GpuScan chunk's mask (rows in page and line
 * pointer order) into the slot's pass bitmaps, then its HEAP_DONE
 */
static void
gpu_pass(void *arg, uint32_t slot, const uint8_t *mask, int64_t nrows, bool recheck)
{
	HeapRun    *h = arg;
	uint32_t	n_pages = h->slot_ch[slot].n_pages;
	const uint8_t *vis = h->ring + (size_t) slot * h->slot_size +
		(size_t) h->slot_pages * XPU_HEAP_PAGE_SIZE;
	uint8_t    *pass = h->pass + (size_t) slot * h->slot_pages * XPU_HEAP_VIS_BYTES;
	WarpHeapPass *ph = &h->pass_hdr[slot];
	int64_t		r = 0;
	uint32_t	passed = 0;

	memset(pass, 0, (size_t) n_pages * XPU_HEAP_VIS_BYTES);
	for (size_t i = 0; i < (size_t) n_pages * XPU_HEAP_VIS_BYTES && !recheck; i++)
		for (int b = 0; b < 8; b++)
			if (vis[i] & (1 << b))
			{
				if (r >= nrows)
					recheck = true;		/* not the rows decoded: PostgreSQL's to filter */
				else if (mask[r++])
				{
					pass[i] |= 1 << b;
					passed++;
				}
			}
	*ph = (WarpHeapPass) {slot, n_pages, 0, passed};
	if (recheck || r != nrows)
	{
		memcpy(pass, vis, (size_t) n_pages * XPU_HEAP_VIS_BYTES);
		ph->flags = WARP_SCAN_RECHECK;
		ph->n_passed = count_bits(vis, n_pages);
	}
	else
		__atomic_add_fetch(&h->run_rows_passed[0], passed, __ATOMIC_RELAXED);
	give_slot(h, slot, 0);
}

/*
 * heap_run_exec_gpu: heap_run_exec on the GPUs of gpu (gpu_agg.c's
 * gpu_agg_heap_run: the chunks decoded by kern_heap.cu and aggregated by
 * kern_agg.cu), into *out (created here); the same returns.  A run the
 * GPU does not serve (a grouping or aggregate its kernels lack, too many
 * attributes) runs on the CPU workers instead, before any chunk is taken;
 * *engine says which engine ran it (the result's header reports it).
 */
int
heap_run_exec_gpu(HeapRun *h, const ServiceGpu *gpu, AggRun *run, XpuAggTable **tables,
				  uint32_t *n_tables, uint32_t *threads, WarpEngine *engine, XpuError *err,
				  int *werr, char *msg, size_t msglen)
{
	GpuHeapSource src;
	int			rc;

	memset(&src, 0, sizeof(src));
	src.fd = h->ring_fd;
	src.ring = h->ring;
	src.ring_size = h->ring_size;
	src.slot_size = h->slot_size;
	src.slot_pages = h->slot_pages;
	src.atts = h->atts;
	src.n_deform = h->n_deform;
	src.col_att = h->col_att;
	src.col_kind = h->col_kind;
	src.n_cols = h->n_cols;
	src.missing = h->missing;
	src.relpath = h->relpath;
	src.seg_blocks = h->seg_blocks;
	src.service_reads = h->service_reads;
	src.take = gpu_take;
	src.give = gpu_give;
	src.arg = h;
	*threads = 1;
	if (h->scan)
	{
		/* GpuScan: the chunks decoded and filtered on the GPU (gpu_heap.c) */
		src.pass = gpu_pass;
		h->run_rows_passed = &run->rows_passed;
		run->join_uncounted = 1;	/* the filter kernel counts no join rows */
		rc = gpu_heap_scan_run(gpu, run, &src, err, werr, msg, msglen);
	}
	else
	{
		if ((tables[0] = xpu_agg_table_create(h->prog, &run->spec, err)) == NULL)
			return *werr = WARP_ERR_OUT_OF_MEMORY, snprintf(msg, msglen, "out of memory"), -1;
		*n_tables = 1;
		rc = gpu_agg_heap_run(gpu, run, &src, tables[0], err, werr, msg, msglen);
	}
	if (rc == -1 && *werr == WARP_ERR_UNSUPPORTED && !src.taken)
	{
		svc_log("LOG", "a heap run goes to the CPU engine: %s", msg);
		*engine = WARP_ENGINE_CPU;
		if (*n_tables > 0)
			xpu_agg_table_free(tables[0]);
		*n_tables = 0;
		*werr = 0;
		msg[0] = '\0';
		run->join_uncounted = 0;
		return heap_run_exec(h, run, tables, n_tables, threads, err, werr, msg, msglen);
	}
	if (rc != XPU_OK)
		heap_run_cancel(h);	/* as a failed CPU worker stops the run */
	return rc;
}
