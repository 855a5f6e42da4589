/*-------------------------------------------------------------------------
 *
 * gpu_heap.c
 *		The heap source on the GPU: gpu_heap_execute (gpu_driver.h), the run
 *		of gpu_agg.c (setup, table, slots, overflow reruns, cancel, drain)
 *		fed with the heap pages of a HEAP_RUN's ring and decoded by
 *		kern_heap.cu, then aggregated (GpuPreAgg: gpu_agg_heap_run) or
 *		filtered (GpuScan: gpu_heap_scan_run).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gpu_agg_int.h"
#include "file_reg.h"
#include "gpu_direct.h"
#include "xpu/xpu_heap_gpu.h"

/* ---------------- heap chunks (gpu_heap_execute) ---------------- */

/*
 * A HEAP_RUN on the GPU reuses the run above (setup, table, the two slots
 * and their overflow reruns, cancel, drain): a slot's pinned buffer takes a
 * chunk as the device sees it (the XpuChunk header and its column
 * descriptors, the chunk's XpuHeapGpuChunk and status, each page's first
 * row, the visibility bitmaps, then the pages, read from the ring's memfd
 * by the I/O threads), one copy moves it to the slot's device buffer, whose
 * rest holds the decoded columns; kern_heap_decode fills them and
 * gagg_launch aggregates them as a record batch.  The ring slot goes back
 * to the backend as soon as its pages are in pinned memory, and the next
 * chunk is staged while the GPU works on the one before.
 *
 * Where the driver lets a run without units (below) register the ring's
 * read-only mapping (cuMemHostRegister with CU_MEMHOSTREGISTER_READ_ONLY),
 * the pages are not staged: the device copies them straight from the ring slot after
 * the staged header part, and the slot goes back once that copy is done
 * (its event).  Otherwise (the registration refused) the I/O threads
 * stage them as above.
 *
 * A GpuScan's run (src->pass set) decodes the same way, then kern_warp_exec
 * (the per-row interpreter GpuScan's Arrow filter runs) writes one byte per
 * row into the slot's mask, which comes back with the program's first
 * error; the ring slot is handed back only then, through src->pass, since
 * the backend returns the passing tuples from it.  A chunk the GPU cannot
 * decode or filter (an error or FALLBACK of the program) is handed back
 * for PostgreSQL to recheck; the run goes on.
 *
 * Units (WARP_HEAP_UNITS, xpu/protocol.h).  The decoded columns of a
 * chunk that holds exactly one unit of a segment file, every page read
 * from the file, are copied into the device's column cache (gpu_cache.c)
 * once the chunk is aggregated, keyed by the segment file's identity, the
 * unit's block within it, the attribute and how it is decoded.  A later
 * probe of that unit is served from there: the chunk header points at the
 * cached columns and the aggregation runs without a page read or copied.
 * What makes the cached columns the unit's pages as the query must see
 * them: the backend probes only units whose blocks are all-visible and
 * absent from shared buffers or in clean ones (the pages a direct read
 * takes from the file);
 * a write to the file changes its ctime (and mtime), so an entry is found
 * only while the file is as it was when its pages were read; and a unit is
 * kept only when the file's ctime and mtime are more than
 * GHEAP_UNIT_SETTLED_US older than the moment the backend began reading it,
 * so that no write during that read can leave the same coarse timestamp.
 *
 * Units read here (WARP_HEAP_SERVICE_READS).  A probe that misses is then
 * not handed back for the backend to read the unit into its ring and this
 * run to stage it from there (two memory-to-memory copies of every page
 * and a round trip); the unit's blocks are read from the segment file by
 * the I/O threads straight into the slot's pinned buffer, checked as the
 * backend checks a direct read (xpu_hg_check_page), then decoded, aggregated
 * and kept like a WARP_CHUNK_UNIT chunk, the read's start standing in for
 * the backend's.  The backend's probe vouched for the blocks (all-visible,
 * in no dirty shared buffer) and its snapshot holds back the xmin horizon
 * until the HEAP_DONE, which is all that made its own later read of the
 * file right.  A unit that does not pass (a page, the file) goes back as a
 * miss and the backend reads it as before, its checks and errors its own.
 * Each thread checks the pages of a slice it read at once (gheap_check_slice).
 *
 * Units read with cuFile.  Where the service reads files with cuFile
 * (gpu_direct.c, pg_warp.gpudirect), the I/O threads read a unit's blocks
 * with cuFileRead straight into the slot's device buffer instead, where
 * kern_heap_check runs the same check on each page (xpu_hg_check_page),
 * writing its visibility bitmap beside it and its visible tuples into a
 * scratch array the host reads back (gheap_read_direct).  A page refused,
 * or a read that fails or ends short, gives the unit back to the backend as
 * a miss.  The host counts the rows from the tuples, stages the chunk's
 * header only (up to the bitmaps: gheap_launch copies no page), and keeps
 * every page where it was read (an empty one adds no row); growing the
 * slot's device buffer for the decoded columns keeps the pages
 * (gheap_dev_grow).  A segment file cuFile refuses is read with pread, or,
 * with pg_warp.gpudirect on, fails the run.
 *
 * Units from registered pages.  Where the service keeps file pages
 * registered (file_reg.c, pg_warp.pinned_files_size), a segment file is
 * kept so as Arrow files are: a unit read with pread queues its region,
 * registered in the background once no run reads; a later run's unit whose
 * region is registered is copied from the page cache straight into the
 * slot's device buffer and checked there as a unit read with cuFile is
 * (the CPU never reads the mapping).  That is the copy at the bus rate
 * measured for Arrow files (bench/results/README.md), for the heap units
 * the GPU column cache does not hold (other columns, a cache too small).
 * The registration is keyed by the segment file's identity, as the
 * column cache's units are: a file written since is a new entry, its
 * regions registered again.  A unit that runs past the file's end is
 * never taken from there (it is the backend's to read).
 * A heap part runs on one thread, and reads with as many I/O threads as
 * gagg_setup gives a run: its share of the service's CPU threads
 * (svc_share_threads) less its own, so that a query's participants
 * together read with about as many threads as the service has CPUs (three
 * each, before, put 68 threads on the 16 cores of the H200 host with 16
 * workers, and the reads took longer: bench/results/README.md).  The
 * slots' pinned buffers of whole units come from those the service keeps
 * (gagg_batch_buffer, --unit-buffers).
 */

#define GHEAP_IO_SLICE		(1 << 20)	/* bytes per pread of a chunk's pages (memory to memory) */
#define GHEAP_UNIT_HDR_MAX	(64 * 1024)	/* a unit chunk's header part of 1,600 columns */
#define GHEAP_UNIT_SETTLED_US	1000000	/* a kept unit's file unchanged this long before its read */
#define GHEAP_KIND_HEAP		0x40000000	/* cache keys of heap columns (Arrow kinds are small) */

/* where the parts of a chunk lie in a slot's buffers */
typedef struct GheapLayout
{
	size_t		hc;				/* XpuHeapGpuChunk */
	size_t		status;
	size_t		res;			/* a scan's XpuResult */
	size_t		rows;			/* uint32 first row of each page */
	size_t		vis;
	size_t		pages;
	size_t		host_len;		/* what is staged and copied: up to the pages' end */
	size_t		bits;			/* bitmaps, zeroed before the decode */
	size_t		bits_len;
	size_t		page_text;		/* uint64 [n_text * n_pages] */
	size_t		xerr;			/* a scan's XpuError (device only) */
	size_t		mask;			/* a scan's pass mask, one byte per row (device only) */
	size_t		dev_len;
} GheapLayout;

/* a slot's unit: the cached columns it aggregates, or those it will keep */
typedef struct GheapUnit
{
	bool		hit;			/* the chunk is cached columns (entries referenced) */
	bool		keep;			/* the chunk is a unit to keep once aggregated */
	GpuCacheFileId id;			/* its segment file as it was read */
	int32_t		batch;			/* its first block within the segment */
	GpuCacheEntry **entries;	/* [n_cols] */
	bool	   *filling;		/* [n_cols]: keep: the entry is this slot's to fill */
} GheapUnit;

typedef struct GheapRun
{
	GaggRun		g;
	GpuHeapSource *src;
	CUfunction	f_measure;
	CUfunction	f_scan;
	CUfunction	f_decode;
	CUdeviceptr d_desc;
	size_t		desc_bytes;
	int			n_text;
	uint32_t	max_missing;	/* longest missing value of a text column */
	XpuHeapGpuStatus *status[GAGG_SLOTS];	/* pinned: each slot's decode status */
	CUevent		ev_decode[GAGG_SLOTS];	/* before each slot's decode kernels */
	GheapLayout lay[GAGG_SLOTS];
	/* a GpuScan's run */
	bool		scan;
	CUfunction	f_warp;			/* kern_warp_exec */
	CUdeviceptr d_scan_prog;	/* the run's program as sent (not hoisted) */
	uint32_t	ring_slot[GAGG_SLOTS];	/* the ring slot each gagg slot filters */
	/* the ring registered with the driver: pages copied from it, not staged */
	bool		ring_reg;
	CUevent		ev_copied[GAGG_SLOTS];	/* after each slot's copy from the ring */
	/* units kept in and served from the column cache (the header comment) */
	bool		units;
	int32_t    *col_field;		/* [n_cols]: cache key field (attribute, descriptor hash) */
	int32_t    *col_key;		/* [n_cols]: cache key kind (column kind, scale) */
	GheapUnit	unit[GAGG_SLOTS];
	int32_t    *text_end[GAGG_SLOTS];	/* pinned [n_cols]: a kept chunk's text bytes */
	int			seg_fd;			/* the segment file last opened, or -1 */
	uint32_t	seg_no;
	/* units read with cuFile ("Units read with cuFile" above) */
	bool		direct;			/* the service reads files with cuFile */
	GpuDirectFile *seg_direct;	/* seg_fd registered with cuFile, or NULL */
	bool		seg_refused;	/* cuFile refused seg_fd: its units are preads */
	bool		direct_logged;	/* a refusal or a failed read was logged (once a run) */
	/* units copied from registered pages ("Units from registered pages" above) */
	struct FileReg *seg_reg;	/* seg_fd's kept registration (file_reg.h), or NULL */
	GpuCacheFileId seg_reg_id;	/* the file's identity seg_reg was acquired for */
	CUfunction	f_check;		/* kern_heap_check */
	bool		dev_pages[GAGG_SLOTS];	/* the slot's pages and bitmaps are in device memory */
	bool		keep_logged;	/* a unit not kept was logged (once a run) */
} GheapRun;

/*
 * gheap_layout: the chunk's layout for n_pages pages and nrows rows; the
 * column buffers' descriptors (device addresses from dev) into cols[]
 */
static void
gheap_layout(GheapRun *gh, uint32_t n_pages, int64_t nrows, int64_t text_cap,
			 CUdeviceptr dev, XpuColumnData *cols, GheapLayout *l)
{
	const GpuHeapSource *src = gh->src;
	size_t		bm = align_up(((size_t) nrows + 7) / 8, GAGG_ALIGN);
	size_t		off;

	l->hc = align_up(sizeof(XpuChunk) + src->n_cols * sizeof(XpuColumnData), GAGG_ALIGN);
	l->status = align_up(l->hc + sizeof(XpuHeapGpuChunk), GAGG_ALIGN);
	l->res = align_up(l->status + sizeof(XpuHeapGpuStatus), GAGG_ALIGN);
	l->rows = align_up(l->res + sizeof(XpuResult), GAGG_ALIGN);
	l->vis = align_up(l->rows + (size_t) n_pages * sizeof(uint32_t), GAGG_ALIGN);
	l->pages = align_up(l->vis + (size_t) n_pages * XPU_HEAP_VIS_BYTES, 256);
	l->host_len = l->pages + (size_t) n_pages * XPU_HEAP_PAGE_SIZE;
	l->bits = off = align_up(l->host_len, 256);
	for (int j = 0; j < src->n_cols; j++)
	{
		memset(&cols[j], 0, sizeof(XpuColumnData));
		cols[j].validity = (const uint8_t *) (uintptr_t) (dev + off);
		off += bm;
		if (src->col_kind[j] == XPU_COL_BOOL)
		{
			cols[j].values = (const void *) (uintptr_t) (dev + off);
			off += bm;
		}
	}
	l->bits_len = off - l->bits;
	for (int j = 0; j < src->n_cols; j++)
	{
		int			kind = src->col_kind[j];

		if (kind == XPU_COL_UTF8)
		{
			cols[j].values = (const void *) (uintptr_t) (dev + off);
			off += align_up(((size_t) nrows + 1) * sizeof(int32_t), GAGG_ALIGN);
			cols[j].data = (const char *) (uintptr_t) (dev + off);
			off += align_up((size_t) text_cap, GAGG_ALIGN);
		}
		else if (kind != XPU_COL_BOOL && xpu_hg_width(kind) > 0)
		{
			cols[j].values = (const void *) (uintptr_t) (dev + off);
			off += align_up((size_t) xpu_hg_width(kind) * (size_t) nrows, GAGG_ALIGN);
		}
	}
	l->page_text = off;
	l->dev_len = off + (size_t) gh->n_text * n_pages * sizeof(uint64_t);
	l->xerr = l->mask = 0;
	if (gh->scan)
	{
		l->xerr = align_up(l->dev_len, GAGG_ALIGN);
		l->mask = align_up(l->xerr + sizeof(XpuError), GAGG_ALIGN);
		l->dev_len = l->mask + (size_t) nrows;
	}
}

/*
 * see gpu_driver.h: what gheap_read_unit's reservation of a whole unit
 * comes to (its layout's header part, at most GHEAP_UNIT_HDR_MAX, the
 * pages' first rows, bitmaps and pages, gagg_slot_reserve's slack of an
 * eighth, whole MiB)
 */
size_t
gpu_heap_unit_buffer_bytes(void)
{
	size_t		host = GHEAP_UNIT_HDR_MAX + (size_t) WARP_HEAP_UNIT_BLOCKS *
		(sizeof(uint32_t) + XPU_HEAP_VIS_BYTES + XPU_HEAP_PAGE_SIZE);

	return align_up(host + host / 8, (size_t) 1 << 20);
}

/* the visible tuples of each of the n_pages bitmaps at vis: first rows into rows[]; the total */
static int64_t
gheap_count_rows(const uint8_t *vis, uint32_t n_pages, uint32_t *rows)
{
	int64_t		n = 0;

	for (uint32_t p = 0; p < n_pages; p++)
	{
		const uint8_t *b = vis + (size_t) p * XPU_HEAP_VIS_BYTES;
		uint64_t	w[XPU_HEAP_VIS_BYTES / 8];

		rows[p] = (uint32_t) n;
		memcpy(w, b, sizeof(w));
		for (int k = 0; k < XPU_HEAP_VIS_BYTES / 8; k++)
			n += __builtin_popcountll(w[k]);
	}
	return n;
}

/*
 * gheap_read_slices: len bytes of file fd from offset into dst, in
 * GHEAP_IO_SLICE slices by the I/O threads, each slice then given to
 * after (when not NULL) by the thread that read it; or, with direct, read
 * with cuFile into device memory at dev instead; -1 when out of memory
 * (the run's failure set), else 0 with gagg_io_run's result in *io_rc
 */
static int
gheap_read_slices(GheapRun *gh, int fd, int64_t offset, size_t len, uint8_t *dst,
				  GpuDirectFile *direct, CUdeviceptr dev,
				  int (*after) (void *, const GaggRead *), void *after_arg, int *io_rc)
{
	int			n = (int) ((len + GHEAP_IO_SLICE - 1) / GHEAP_IO_SLICE);
	GaggRead   *reads = calloc(n + 1, sizeof(GaggRead));

	*io_rc = 0;
	if (reads == NULL)
		return gagg_fail(&gh->g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (int i = 0; i < n; i++)
	{
		size_t		off = (size_t) i * GHEAP_IO_SLICE;

		reads[i].fd = fd;
		reads[i].offset = offset + (int64_t) off;
		reads[i].len = len - off < GHEAP_IO_SLICE ? len - off : GHEAP_IO_SLICE;
		reads[i].dst = dst != NULL ? dst + off : NULL;
		reads[i].direct = direct;
		reads[i].dev = direct != NULL ? dev + off : 0;
		reads[i].run = NULL;	/* a unit's bytes count once it is the run's (gheap_read_unit) */
		reads[i].after = after;
		reads[i].after_arg = after_arg;
	}
	*io_rc = gagg_io_run(&gh->g.io, reads, n);
	free(reads);
	return 0;
}

/* reads the n_pages pages of ring slot `slot` into dst with the I/O threads */
static int
gheap_read_pages(GheapRun *gh, uint32_t slot, uint32_t n_pages, uint8_t *dst)
{
	int			rc;

	if (gheap_read_slices(gh, gh->src->fd, (int64_t) ((uint64_t) slot * gh->src->slot_size),
						  (size_t) n_pages * XPU_HEAP_PAGE_SIZE, dst, NULL, 0, NULL, NULL,
						  &rc) != 0)
		return -1;
	if (rc != 0)
		return gagg_fail(&gh->g, WARP_ERR_IO, "could not read the chunk ring: %s",
						 rc > 0 ? strerror(rc) : "it is too short");
	return 0;
}

/*
 * gheap_dev_grow: slot s's device buffer made at least dev_len bytes, its
 * bytes from..to kept (the pages and bitmaps of a unit read with cuFile;
 * its stream idle)
 */
static int
gheap_dev_grow(GheapRun *gh, GaggSlot *s, size_t dev_len, size_t from, size_t to)
{
	GaggRun    *g = &gh->g;
	size_t		cap = align_up(dev_len + dev_len / 8, 1 << 20);
	CUdeviceptr dev = 0;

	if (dev_len <= s->dev_cap)
		return 0;
	if (gagg_dev_alloc(g, &dev, cap, "a heap unit") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoDAsync(dev + from, s->dev + from, to - from, s->stream),
				  "cuMemcpyDtoDAsync") != 0 ||
		gagg_stream_wait(g, s->stream) != 0)
	{
		if (dev != 0)
			gagg_dev_free(g, &dev, cap);
		return -1;
	}
	gagg_dev_free(g, &s->dev, s->dev_cap);
	s->dev = dev;
	s->dev_cap = cap;
	return 0;
}

/*
 * gheap_fill_header: the part of gagg slot si's pinned buffer before the
 * pages of a chunk of n_pages pages whose visibility bitmaps are vis, as
 * the device will see it, with room in the slot for the chunk; s->nrows:
 * its visible tuples.  The pages, at the layout's `pages`, are the
 * caller's to stage.  vis NULL: the pages and their bitmaps are in the
 * slot's device buffer already (gheap_read_direct), each page's visible
 * tuples in tuples; only the header part is staged then.
 */
static int
gheap_fill_header(GheapRun *gh, int si, uint32_t n_pages, const uint8_t *vis,
				  const int16_t *tuples)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	GheapLayout *l = &gh->lay[si];
	uint32_t   *rows = malloc(((size_t) n_pages + 1) * sizeof(uint32_t));
	XpuColumnData *cols = calloc(gh->src->n_cols + 1, sizeof(XpuColumnData));
	int64_t		text_cap;
	XpuChunk   *chunk;
	XpuHeapGpuChunk *hc;
	int			rc = -1;

	if (rows == NULL || cols == NULL)
	{
		gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		goto done;
	}
	if (vis != NULL)
		s->nrows = gheap_count_rows(vis, n_pages, rows);
	else
	{
		s->nrows = 0;
		for (uint32_t p = 0; p < n_pages; p++)
		{
			rows[p] = (uint32_t) s->nrows;
			s->nrows += tuples[p];
		}
	}
	gh->dev_pages[si] = vis == NULL;
	/* a page's tuples do not overlap; a missing value repeats per row */
	text_cap = (int64_t) n_pages * XPU_HEAP_PAGE_SIZE + s->nrows * (int64_t) gh->max_missing;
	if (text_cap > INT32_MAX)
		text_cap = INT32_MAX;
	gheap_layout(gh, n_pages, s->nrows, gh->n_text > 0 ? text_cap : 0, 0, cols, l);
	if ((vis == NULL && gheap_dev_grow(gh, s, l->dev_len, l->vis, l->host_len) != 0) ||
		gagg_slot_reserve(g, s, vis != NULL ? l->host_len : l->pages, l->dev_len, s->nrows, 8,
						  "a heap chunk") != 0)
		goto done;
	gheap_layout(gh, n_pages, s->nrows, gh->n_text > 0 ? text_cap : 0, s->dev, cols, l);
	memset(s->host, 0, l->pages);
	chunk = (XpuChunk *) s->host;
	chunk->nrows = s->nrows;
	chunk->ncols = gh->src->n_cols;
	chunk->cols = (const XpuColumnData *) (uintptr_t) (s->dev + sizeof(XpuChunk));
	gagg_chunk_joins(g, chunk);
	memcpy(s->host + sizeof(XpuChunk), cols, gh->src->n_cols * sizeof(XpuColumnData));
	hc = (XpuHeapGpuChunk *) (s->host + l->hc);
	hc->pages = (const uint8_t *) (uintptr_t) (s->dev + l->pages);
	hc->vis = (const uint8_t *) (uintptr_t) (s->dev + l->vis);
	hc->row_start = (const uint32_t *) (uintptr_t) (s->dev + l->rows);
	hc->page_text = (uint64_t *) (uintptr_t) (s->dev + l->page_text);
	hc->status = (XpuHeapGpuStatus *) (uintptr_t) (s->dev + l->status);
	hc->text_cap = gh->n_text > 0 ? text_cap : 0;
	hc->n_pages = n_pages;
	if (gh->scan)
		*(XpuResult *) (s->host + l->res) =
			(XpuResult) {s->nrows, (uint8_t *) (uintptr_t) (s->dev + l->mask), NULL, NULL};
	memcpy(s->host + l->rows, rows, (size_t) n_pages * sizeof(uint32_t));
	if (vis != NULL)
		memcpy(s->host + l->vis, vis, (size_t) n_pages * XPU_HEAP_VIS_BYTES);
	rc = 0;
done:
	free(rows);
	free(cols);
	return rc;
}

/*
 * gheap_fill_slot: stages ring slot `slot` (n_pages pages) in gagg slot
 * si's pinned buffer as the device will see it; s->nrows: its visible
 * tuples
 */
static int
gheap_fill_slot(GheapRun *gh, int si, uint32_t slot, uint32_t n_pages)
{
	const uint8_t *vis = gh->src->ring + (size_t) slot * gh->src->slot_size +
		(size_t) gh->src->slot_pages * XPU_HEAP_PAGE_SIZE;

	if (gheap_fill_header(gh, si, n_pages, vis, NULL) != 0)
		return -1;
	return gh->g.slots[si].nrows > 0 && !gh->ring_reg ?
		gheap_read_pages(gh, slot, n_pages, gh->g.slots[si].host + gh->lay[si].pages) : 0;
}

/* ---------------- units in the column cache (the header comment) ---------------- */

/* the identity of the segment file that holds block `unit`; false when it cannot be had */
static bool
gheap_seg_id(GheapRun *gh, uint32_t unit, GpuCacheFileId *id)
{
	const GpuHeapSource *src = gh->src;
	uint32_t	seg = unit / src->seg_blocks;

	if (gh->seg_fd < 0 || gh->seg_no != seg)
	{
		char		path[1100];
		struct stat st;

		if (gh->seg_fd >= 0)
			close(gh->seg_fd);
		gpu_direct_close(gh->seg_direct);
		gh->seg_direct = NULL;
		/* no copy from it is in flight: gheap_read_direct waits for its own */
		file_reg_release(gh->seg_reg);
		gh->seg_reg = NULL;
		gh->seg_refused = false;
		if (seg == 0)
			snprintf(path, sizeof(path), "%s", src->relpath);
		else
			snprintf(path, sizeof(path), "%s.%u", src->relpath, seg);
		/* O_NONBLOCK: a FIFO where the file belongs must not hang the open */
		gh->seg_fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
		gh->seg_no = seg;
		/* only a regular file is a segment (an open file's type does not change) */
		if (gh->seg_fd >= 0 && (fstat(gh->seg_fd, &st) != 0 || !S_ISREG(st.st_mode)))
		{
			close(gh->seg_fd);
			gh->seg_fd = -1;
		}
	}
	return gh->seg_fd >= 0 && gpu_cache_file_id(gh->seg_fd, id);
}

/*
 * gheap_col_keys: each chunk column's cache key: its attribute with a hash
 * of what its decoding depends on (the widths and alignments of the
 * attributes up to it, its missing value), its kind and numeric scale
 */
static void
gheap_col_keys(GheapRun *gh, const int16_t *scale)
{
	const GpuHeapSource *src = gh->src;

	for (int j = 0; j < src->n_cols; j++)
	{
		int			a = src->col_att[j] - 1;
		uint32_t	h = 2166136261u;
		const XpuHeapAtt *at = &src->atts[a];

		for (int i = 0; i <= a; i++)
		{
			uint8_t		b[4] = {(uint8_t) src->atts[i].attlen,
				(uint8_t) ((uint16_t) src->atts[i].attlen >> 8),
			src->atts[i].align, src->atts[i].flags};

			for (int k = 0; k < 4; k++)
				h = (h ^ b[k]) * 16777619u;
		}
		if (at->flags & XPU_HEAP_ATT_MISSING)
			for (uint32_t k = 0; k < at->missing_len; k++)
				h = (h ^ src->missing[at->missing_off + k]) * 16777619u;
		gh->col_field[j] = (int32_t) ((uint32_t) src->col_att[j] | (h & 0x7fff) << 16);
		gh->col_key[j] = GHEAP_KIND_HEAP | (scale[j] & 0xff) << 8 | src->col_kind[j];
	}
}

/* the bytes of chunk column j's validity (p 0), values (1) and text (2) pieces */
static size_t
gheap_piece_len(const GheapRun *gh, int j, int p, int64_t nrows, int32_t text_len)
{
	int			kind = gh->src->col_kind[j];

	if (p == 0 || (p == 1 && kind == XPU_COL_BOOL))
		return ((size_t) nrows + 7) / 8;
	if (p == 1)
		return kind == XPU_COL_UTF8 ? ((size_t) nrows + 1) * sizeof(int32_t) :
			(size_t) xpu_hg_width(kind) * (size_t) nrows;
	return kind == XPU_COL_UTF8 ? (size_t) text_len : 0;
}

/* drops slot si's references to cached columns (its kernels are done) */
static void
gheap_unit_release(GheapRun *gh, int si)
{
	GheapUnit  *u = &gh->unit[si];

	for (int j = 0; u->entries != NULL && j < gh->src->n_cols; j++)
		if (u->entries[j] != NULL)
		{
			gpu_cache_release(u->entries[j]);
			u->entries[j] = NULL;
		}
	u->hit = u->keep = false;
}

/*
 * gheap_probe: aggregates unit ch->unit in slot si from the cached columns
 * when the cache holds every column of it for the segment file as it is
 * now; 1 when it does (the slot busy), 0 when not, -1 on failure
 */
static int
gheap_probe(GheapRun *gh, int si, const WarpHeapChunk *ch)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	GheapUnit  *u = &gh->unit[si];
	const GpuHeapSource *src = gh->src;
	size_t		hdr = align_up(sizeof(XpuChunk) + src->n_cols * sizeof(XpuColumnData), GAGG_ALIGN);
	XpuChunk   *chunk;
	XpuColumnData *cols;
	int64_t		nrows = -1;
	uint64_t	bytes = 0;

	if (!gh->units || !gheap_seg_id(gh, ch->unit, &u->id))
		return 0;
	gpu_cache_check_file(g->dev, &u->id);
	u->batch = (int32_t) (ch->unit % src->seg_blocks);
	for (int j = 0; j < src->n_cols; j++)
	{
		u->entries[j] = gpu_cache_get(g->dev, &u->id, u->batch, gh->col_field[j], gh->col_key[j]);
		if (u->entries[j] == NULL ||
			(nrows >= 0 && (int64_t) gpu_cache_entry_tag(u->entries[j]) != nrows))
		{
			gheap_unit_release(gh, si);
			return 0;
		}
		nrows = (int64_t) gpu_cache_entry_tag(u->entries[j]);
		for (int p = 0; p < 3; p++)
			bytes += gpu_cache_entry_lens(u->entries[j])[p];
	}
	if (nrows <= 0)
	{
		gheap_unit_release(gh, si);
		return 0;
	}
	u->hit = true;
	if (gagg_slot_reserve(g, s, hdr, hdr, nrows, 8, "a cached heap unit") != 0)
		return -1;
	memset(s->host, 0, hdr);
	chunk = (XpuChunk *) s->host;
	chunk->nrows = nrows;
	chunk->ncols = src->n_cols;
	chunk->cols = (const XpuColumnData *) (uintptr_t) (s->dev + sizeof(XpuChunk));
	gagg_chunk_joins(g, chunk);
	cols = (XpuColumnData *) (s->host + sizeof(XpuChunk));
	for (int j = 0; j < src->n_cols; j++)
	{
		CUdeviceptr base = gpu_cache_entry_ptr(u->entries[j]);
		const size_t *len = gpu_cache_entry_lens(u->entries[j]);

		cols[j].validity = (const uint8_t *) (uintptr_t) base;
		cols[j].values = (const void *) (uintptr_t) (base + align_up(len[0], GPU_CACHE_ALIGN));
		if (src->col_kind[j] == XPU_COL_UTF8)
			cols[j].data = (const char *) (uintptr_t) (base + align_up(len[0], GPU_CACHE_ALIGN) +
													   align_up(len[1], GPU_CACHE_ALIGN));
	}
	s->nrows = nrows;
	if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(s->dev, s->host, hdr, s->stream),
				  "cuMemcpyHtoDAsync") != 0 ||
		gagg_launch(g, s, 0, 0, s->ovf) != 0)
		return -1;
	GAGG_ADD(g->run->rows_in, (uint64_t) nrows);
	GAGG_ADD(g->run->batches, 1);
	GAGG_ADD(g->run->bytes_cached, bytes);
	return 1;
}

/*
 * gheap_log_once: logs what (a unit not kept in the cache, not read with
 * cuFile) and fmt's why, once a run (*logged)
 */
static void
gheap_log_once(bool *logged, const char *what, const char *fmt,...)
{
	char		why[300];
	va_list		ap;

	if (*logged)
		return;
	*logged = true;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	svc_log("LOG", "%s%s", what, why);
}

#define GHEAP_NOT_KEPT	"a heap unit was not kept in the GPU column cache: "

/*
 * gheap_keep_check: may slot si's chunk (ch: its pages, read from the file)
 * be kept as unit ch->unit: its segment file unchanged since well before
 * the backend began reading it
 */
static void
gheap_keep_check(GheapRun *gh, int si, const WarpHeapChunk *ch)
{
	GheapUnit  *u = &gh->unit[si];
	int64_t		settled_ns = (ch->read_start_us - GHEAP_UNIT_SETTLED_US) * 1000;

	u->keep = false;
	if (!gh->units || !(ch->flags & WARP_CHUNK_UNIT))
		return;
	if (!gheap_seg_id(gh, ch->unit, &u->id))
		gheap_log_once(&gh->keep_logged, GHEAP_NOT_KEPT, "segment %u of %s cannot be opened",
					   ch->unit / gh->src->seg_blocks, gh->src->relpath);
	else if (ch->read_start_us <= 0 || u->id.ctime_ns >= settled_ns || u->id.mtime_ns >= settled_ns)
		gheap_log_once(&gh->keep_logged, GHEAP_NOT_KEPT,
					   "segment %u of %s changed within a second of the read",
					   ch->unit / gh->src->seg_blocks, gh->src->relpath);
	else
	{
		u->keep = true;
		u->batch = (int32_t) (ch->unit % gh->src->seg_blocks);
	}
}

/* a unit's pages as the I/O threads read them (gheap_check_slice) */
typedef struct GheapUnitRead
{
	const uint8_t *pages;		/* the unit's first page in the slot's buffer */
	uint8_t    *vis;			/* [n_pages]: each page's visibility bitmap */
	int16_t    *tuples;			/* [n_pages]: xpu_hg_check_page's result */
} GheapUnitRead;

/*
 * gheap_check_slice: the after hook of a unit's slice reads: each page of
 * the slice checked by the thread that just read it (in its core's cache
 * still, where the run's thread would fetch every page header from memory
 * again once the whole unit is read: a third of a unit's time in the
 * service on the H200 host); -1 at the first page the backend must read
 */
static int
gheap_check_slice(void *arg, const GaggRead *r)
{
	GheapUnitRead *u = arg;
	size_t		first = (size_t) (r->dst - u->pages) / XPU_HEAP_PAGE_SIZE;

	for (size_t p = first; p < first + r->len / XPU_HEAP_PAGE_SIZE; p++)
		if ((u->tuples[p] = (int16_t) xpu_hg_check_page(u->pages + p * XPU_HEAP_PAGE_SIZE,
														u->vis + p * XPU_HEAP_VIS_BYTES)) < 0)
			return -1;
	return 0;
}

static int	gheap_launch(GheapRun *gh, int si);

/*
 * gheap_seg_direct: is the segment file open in gh->seg_fd read with cuFile
 * (1), with pread (0: cuFile is off, or refused it), or (-1) does the run
 * fail: pg_warp.gpudirect is on and cuFile refused it
 */
static int
gheap_seg_direct(GheapRun *gh)
{
	char		why[256];

	if (!gh->direct || gh->seg_refused)
		return 0;
	if (gh->seg_direct != NULL ||
		(gh->seg_direct = gpu_direct_open(gh->seg_fd, why, sizeof(why))) != NULL)
		return 1;
	if (gpu_direct_required())
		return gagg_fail(&gh->g, WARP_ERR_IO,
						 "could not read segment %u of \"%s\" with cuFile: %s", gh->seg_no,
						 gh->src->relpath, why);
	gh->seg_refused = true;
	gheap_log_once(&gh->direct_logged, "",
				   "segment %u of \"%s\" is read with pread, not cuFile: %s", gh->seg_no,
				   gh->src->relpath, why);
	return 0;
}

/*
 * gheap_seg_pages: are the bytes [off, off + len) of the segment file open
 * in gh->seg_fd, whose identity is now *id, in its registered pages
 * (gh->seg_reg), the service keeping file pages registered (file_reg.c)?
 * When not, the regions not tried yet are queued to be registered for
 * later runs (their bytes added to the run's bytes_to_pin).  Bytes past
 * the file's end are never taken so.
 */
static bool
gheap_seg_pages(GheapRun *gh, const GpuCacheFileId *id, int64_t off, size_t len)
{
	uint64_t	queued = 0;
	bool		ready;

	if (file_reg_limit() == 0 || off + (int64_t) len > id->size)
		return false;
	if (gh->seg_reg == NULL || memcmp(&gh->seg_reg_id, id, sizeof(*id)) != 0)
	{
		/* the file changed since (a new entry: the old one is retired once unheld) */
		file_reg_release(gh->seg_reg);
		gh->seg_reg = file_reg_acquire(id, gh->seg_fd);
		gh->seg_reg_id = *id;
		if (gh->seg_reg == NULL)
			return false;
	}
	ready = file_reg_want(gh->seg_reg, off, len, gh->g.ctx, &queued);
	GAGG_ADD(gh->g.run->bytes_to_pin, queued);
	return ready;
}

/*
 * gheap_copy_pinned: len bytes of the segment file from off, all in its
 * registered pages (gheap_seg_pages), copied to dev on stream, a copy per
 * region (each region is a registration of its own)
 */
static int
gheap_copy_pinned(GheapRun *gh, int64_t off, size_t len, CUdeviceptr dev, CUstream stream)
{
	int32_t		first,
				last;

	file_reg_regions(off, len, &first, &last);
	for (int32_t i = first; i <= last; i++)
	{
		int64_t		from;
		size_t		n = file_reg_piece(off, len, i, &from);

		if (gagg_cuda(&gh->g, gpu_drv.cuMemcpyHtoDAsync(dev + (size_t) (from - off),
														 file_reg_addr(gh->seg_reg, from), n,
														 stream), "cuMemcpyHtoDAsync") != 0)
			return -1;
	}
	return 0;
}

/*
 * gheap_read_direct: the pages of unit ch->unit read with cuFile, or (with
 * pinned) copied from the segment file's registered pages
 * (gheap_seg_pages), straight into slot si's device buffer, where a whole unit's pages lie in
 * its layout (whole), and checked there (kern_heap_check: each page's
 * bitmap beside it, its visible tuples back into tuples); 1 when the unit
 * is the run's, 0 when the backend must read it (the file short or
 * unreadable, a page refused), -1 on failure
 */
static int
gheap_read_direct(GheapRun *gh, int si, const WarpHeapChunk *ch, const GheapLayout *whole,
				  bool pinned, int16_t *tuples)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	uint32_t	n_pages = WARP_HEAP_UNIT_BLOCKS;
	size_t		counts_len = (size_t) n_pages * sizeof(int16_t);
	CUdeviceptr pages,
				vis,
				counts;
	void	   *args[] = {&pages, &n_pages, &vis, &counts};
	int64_t		off = (int64_t) (ch->unit % gh->src->seg_blocks) * XPU_HEAP_PAGE_SIZE;
	int			io_rc = 0;

	/* the counts where the columns go later (whole->bits), back where the pages would be */
	if (gagg_slot_reserve(g, s, whole->pages + counts_len, whole->bits + counts_len, 0, 8,
						  "a heap unit") != 0)
		return -1;
	pages = s->dev + whole->pages;
	vis = s->dev + whole->vis;
	counts = s->dev + whole->bits;
	if (pinned)
	{
		if (gheap_copy_pinned(gh, off, (size_t) n_pages * XPU_HEAP_PAGE_SIZE, pages, s->stream) != 0)
			return -1;
	}
	else if (gheap_read_slices(gh, gh->seg_fd, off, (size_t) n_pages * XPU_HEAP_PAGE_SIZE, NULL,
							   gh->seg_direct, pages, NULL, NULL, &io_rc) != 0)
		return -1;
	if (io_rc != 0)
	{
		/* only cuFile reads: a failed one is -4; the file ending first is not logged */
		char		why[128];

		if (g->io.failed_direct != -1)
			gheap_log_once(&gh->direct_logged, "",
						   "a unit of segment %u of \"%s\" went back to the backend: %s",
						   gh->seg_no, gh->src->relpath,
						   gpu_direct_error(g->io.failed_direct, why, sizeof(why)));
		return 0;				/* the backend reads it, its checks and errors its own */
	}
	if (gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(gh->f_check, (n_pages + 127) / 128, 1, 1,
														  128, 1, 1, 0, s->stream, args, NULL)),
				  "cuLaunchKernel") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(s->host + whole->pages, counts, counts_len,
											   s->stream), "cuMemcpyDtoHAsync") != 0 ||
		gagg_stream_wait(g, s->stream) != 0)
		return -1;
	memcpy(tuples, s->host + whole->pages, counts_len);
	for (uint32_t p = 0; p < n_pages; p++)
		if (tuples[p] < 0)
			return 0;
	return 1;
}

/*
 * gheap_read_pread: the pages of unit ch->unit read with pread into slot
 * si's pinned buffer (where a whole unit's pages lie in its layout, whole),
 * each checked as it is read (gheap_check_slice), then the pages that hold
 * nothing left out, as the backend does, the others' bitmaps into vis; the
 * pages kept, or -1 when the backend must read the unit, -2 on failure
 */
static int64_t
gheap_read_pread(GheapRun *gh, int si, const WarpHeapChunk *ch, const GheapLayout *whole,
				 uint8_t *vis, int16_t *tuples, XpuColumnData *cols)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	uint32_t	n_pages = WARP_HEAP_UNIT_BLOCKS,
				kept = 0;
	GheapLayout part;
	GheapUnitRead check;
	uint8_t    *pages;
	int			io_rc;

	if (gagg_slot_reserve(g, s, whole->host_len, 0, 0, 8, "a heap unit") != 0)
		return -2;
	pages = s->host + whole->pages;
	check = (GheapUnitRead) {pages, vis, tuples};
	if (gheap_read_slices(gh, gh->seg_fd,
						  (int64_t) (ch->unit % gh->src->seg_blocks) * XPU_HEAP_PAGE_SIZE,
						  (size_t) n_pages * XPU_HEAP_PAGE_SIZE, pages, NULL, 0,
						  gheap_check_slice, &check, &io_rc) != 0)
		return -2;
	if (io_rc != 0)
		return -1;				/* short, unreadable or a page refused: the backend reads it */
	for (uint32_t p = 0; p < n_pages; p++)
	{
		if (tuples[p] == 0)
			continue;
		if (kept != p)
		{
			memmove(pages + (size_t) kept * XPU_HEAP_PAGE_SIZE,
					pages + (size_t) p * XPU_HEAP_PAGE_SIZE, XPU_HEAP_PAGE_SIZE);
			memcpy(vis + (size_t) kept * XPU_HEAP_VIS_BYTES, vis + (size_t) p * XPU_HEAP_VIS_BYTES,
				   XPU_HEAP_VIS_BYTES);
		}
		kept++;
	}
	/* fewer pages: a smaller header part before them */
	gheap_layout(gh, kept, 0, 0, 0, cols, &part);
	if (part.pages != whole->pages)
		memmove(s->host + part.pages, pages, (size_t) kept * XPU_HEAP_PAGE_SIZE);
	return kept;
}

/*
 * gheap_read_unit: reads unit ch->unit (a probe the cache did not serve)
 * from its segment file into slot si and launches it, to be kept as a
 * WARP_CHUNK_UNIT chunk would be ("Units read here" above): copied from
 * the file's registered pages where they are (gheap_seg_pages), with cuFile
 * where the service reads files so (gheap_read_direct), else with pread.
 * 1 when it did (the slot busy unless the unit held no tuple), 0 when the
 * backend must read it, -1 on failure.
 */
static int
gheap_read_unit(GheapRun *gh, int si, const WarpHeapChunk *ch)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	uint32_t	n_pages = WARP_HEAP_UNIT_BLOCKS;
	size_t		len = (size_t) n_pages * XPU_HEAP_PAGE_SIZE;
	uint8_t    *vis = malloc((size_t) n_pages * XPU_HEAP_VIS_BYTES);
	int16_t    *tuples = malloc((size_t) n_pages * sizeof(int16_t));
	XpuColumnData *cols = calloc(gh->src->n_cols + 1, sizeof(XpuColumnData));
	WarpHeapChunk unit = *ch;
	GpuCacheFileId id;
	GheapLayout whole;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC),
				kept;
	bool		any = false,	/* a visible tuple */
				pinned;
	int			rc = -1,
				direct;			/* the pages read into device memory */

	unit.flags = WARP_CHUNK_UNIT;
	unit.read_start_us = svc_now_us(CLOCK_REALTIME);
	if (vis == NULL || tuples == NULL || cols == NULL)
	{
		gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		goto done;
	}
	rc = 0;
	/* (a units run copies its pages from the slot, never from a registered ring) */
	if (gh->ring_reg || !gheap_seg_id(gh, ch->unit, &id))
		goto done;				/* no segment file to read: the backend's to say why */
	/* the pages where a whole unit's go in the slot's buffers */
	gheap_layout(gh, n_pages, 0, 0, 0, cols, &whole);
	pinned = gheap_seg_pages(gh, &id, (int64_t) (ch->unit % gh->src->seg_blocks) *
							 XPU_HEAP_PAGE_SIZE, len);
	if ((direct = pinned ? 1 : gheap_seg_direct(gh)) < 0)
	{
		rc = -1;
		goto done;
	}
	if (direct)
	{
		/* every page stays where it was read: an empty one adds no row */
		if ((rc = gheap_read_direct(gh, si, ch, &whole, pinned, tuples)) <= 0)
			goto done;
		kept = n_pages;
		for (uint32_t p = 0; p < n_pages; p++)
			any |= tuples[p] > 0;
	}
	else if ((kept = gheap_read_pread(gh, si, ch, &whole, vis, tuples, cols)) < 0)
	{
		rc = kept == -2 ? -1 : 0;
		goto done;
	}
	else
		any = kept > 0;			/* every page kept holds a tuple */
	rc = 1;
	s->nrows = 0;
	if (any)
	{
		gheap_keep_check(gh, si, &unit);
		if (gheap_fill_header(gh, si, (uint32_t) kept, direct ? NULL : vis, tuples) != 0)
			rc = -1;
	}
	GAGG_ADD(g->run->io_us, (uint64_t) (svc_now_us(CLOCK_MONOTONIC) - t0));
	if (rc == 1)
	{
		GAGG_ADD(g->run->rows_in, (uint64_t) s->nrows);
		GAGG_ADD(g->run->batches, 1);
		GAGG_ADD(g->run->bytes_read, (uint64_t) len);
		if (pinned)
			GAGG_ADD(g->run->bytes_mapped, (uint64_t) len);
		else if (direct)
			GAGG_ADD(g->run->bytes_direct, (uint64_t) len);
		if (s->nrows > 0 && gheap_launch(gh, si) != 0)
			rc = -1;
	}
done:
	free(vis);
	free(tuples);
	free(cols);
	return rc;
}

/*
 * gheap_keep: copies slot si's decoded columns (aggregated, its stream
 * drained) into the column cache as its unit, each column that an earlier
 * run (another query) has not kept there already; a column the cache has
 * no room for, or one being filled by another run, leaves the unit out
 * (what was reserved is dropped)
 */
static int
gheap_keep(GheapRun *gh, int si)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	GheapUnit  *u = &gh->unit[si];
	const GpuHeapSource *src = gh->src;
	const XpuColumnData *cols = (const XpuColumnData *) (s->host + sizeof(XpuChunk));
	int64_t		text_cap = ((XpuHeapGpuChunk *) (s->host + gh->lay[si].hc))->text_cap;
	bool		whole = true;

	u->keep = false;
	for (int j = 0; j < src->n_cols && whole; j++)
	{
		int32_t		text_len = src->col_kind[j] == XPU_COL_UTF8 ? gh->text_end[si][j] : 0;
		size_t		len[3];
		CUdeviceptr from[3] = {(CUdeviceptr) (uintptr_t) cols[j].validity,
			(CUdeviceptr) (uintptr_t) cols[j].values, (CUdeviceptr) (uintptr_t) cols[j].data};
		size_t		off = 0;

		if (text_len < 0 || text_len > text_cap)
		{
			gheap_log_once(&gh->keep_logged, GHEAP_NOT_KEPT,
						   "column %d's text ends at %d of %lld bytes", j, text_len,
						   (long long) text_cap);
			whole = false;		/* not what the decode left: not kept */
			break;
		}
		for (int p = 0; p < 3; p++)
			len[p] = gheap_piece_len(gh, j, p, s->nrows, text_len);
		/* a column another query kept from the same file contents is there already */
		u->filling[j] = false;
		u->entries[j] = gpu_cache_get(g->dev, &u->id, u->batch, gh->col_field[j], gh->col_key[j]);
		if (u->entries[j] != NULL)
		{
			if (gpu_cache_entry_tag(u->entries[j]) == (uint64_t) s->nrows &&
				memcmp(gpu_cache_entry_lens(u->entries[j]), len, sizeof(len)) == 0)
				continue;
			gheap_log_once(&gh->keep_logged, GHEAP_NOT_KEPT,
						   "column %d is in the GPU column cache with other rows", j);
			whole = false;
			break;
		}
		u->entries[j] = gpu_cache_reserve(g->dev, &u->id, u->batch, gh->col_field[j],
										  gh->col_key[j], len);
		u->filling[j] = u->entries[j] != NULL;
		if (u->entries[j] == NULL)
		{
			gheap_log_once(&gh->keep_logged, GHEAP_NOT_KEPT,
						   "the GPU column cache has no room for column %d (%zu bytes)", j,
						   len[0] + len[1] + len[2]);
			whole = false;
			break;
		}
		gpu_cache_entry_set_tag(u->entries[j], (uint64_t) s->nrows);
		for (int p = 0; p < 3; p++)
		{
			if (len[p] > 0 &&
				gagg_cuda(g, gpu_drv.cuMemcpyDtoDAsync(gpu_cache_entry_ptr(u->entries[j]) + off,
													   from[p], len[p], s->stream),
						  "cuMemcpyDtoDAsync") != 0)
				return -1;
			off += align_up(len[p], GPU_CACHE_ALIGN);
		}
	}
	if (gagg_stream_wait(g, s->stream) != 0)
		return -1;
	for (int j = 0; j < src->n_cols && whole; j++)
		if (u->filling[j])
			gpu_cache_publish(u->entries[j]);
	gheap_unit_release(gh, si);
	return 0;
}

/*
 * queues a scan's filter of slot si's decoded chunk on its stream: the
 * program's error zeroed, kern_warp_exec into the mask, the mask and the
 * error back into the slot's pinned buffer (its staged chunk is copied by
 * then: the stream keeps the order)
 */
static int
gheap_launch_filter(GheapRun *gh, int si)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	GheapLayout *l = &gh->lay[si];

	return gagg_launch_filter(g, s, gh->f_warp, gh->d_scan_prog, s->dev + l->res,
							  s->dev + l->xerr, s->dev + l->mask,
							  (XpuError *) (s->host + align_up(s->nrows, 16)));
}

/*
 * gheap_finish_filter: waits for slot si's filter and hands its mask (or,
 * when the chunk did not decode or the program failed, a recheck) to the
 * source, which gives the ring slot back
 */
static int
gheap_finish_filter(GheapRun *gh, int si)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	XpuError	xerr;
	float		ms = 0;
	bool		recheck;

	if (gagg_stream_wait(g, s->stream) != 0)
		return -1;
	s->busy = 0;
	if (gpu_drv.cuEventElapsedTime(&ms, gh->ev_decode[si], s->ev_end) == CUDA_SUCCESS)
		GAGG_ADD(g->run->exec_us, (uint64_t) (ms * 1000.0f));
	memcpy(&xerr, s->host + align_up(s->nrows, 16), sizeof(xerr));
	recheck = gh->status[si]->code != 0 || xerr.code != XPU_OK;
	gh->src->pass(gh->src->arg, gh->ring_slot[si], recheck ? NULL : s->host, s->nrows, recheck);
	return 0;
}

/* queues on the slot's stream: the copy, the decode kernels, the aggregation */
static int
gheap_launch(GheapRun *gh, int si)
{
	GaggRun    *g = &gh->g;
	GaggSlot   *s = &g->slots[si];
	GheapLayout *l = &gh->lay[si];
	CUdeviceptr hc = s->dev + l->hc,
				chunk = s->dev;
	uint32_t	n_pages = ((XpuHeapGpuChunk *) (s->host + l->hc))->n_pages;
	void	   *p_measure[] = {&gh->d_desc, &hc, &g->d_cancel};
	void	   *p_scan[] = {&gh->d_desc, &hc};
	void	   *p_decode[] = {&gh->d_desc, &hc, &chunk, &g->d_cancel};

	if (gh->ring_reg)
	{
		/* the staged header part, then the pages from the registered ring slot */
		const uint8_t *pages = gh->src->ring + (size_t) gh->ring_slot[si] * gh->src->slot_size;

		if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(s->dev, s->host, l->pages, s->stream),
					  "cuMemcpyHtoDAsync") != 0 ||
			gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(s->dev + l->pages, pages,
												   l->host_len - l->pages, s->stream),
					  "cuMemcpyHtoDAsync") != 0 ||
			gagg_cuda(g, gpu_drv.cuEventRecord(gh->ev_copied[si], s->stream),
					  "cuEventRecord") != 0)
			return -1;
	}
	else if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(s->dev, s->host,
													gh->dev_pages[si] ? l->vis : l->host_len,
													s->stream),
					   "cuMemcpyHtoDAsync") != 0)
		return -1;
	if (gagg_cuda(g, gpu_drv.cuMemsetD8Async(s->dev + l->bits, 0, l->bits_len, s->stream),
				  "cuMemsetD8Async") != 0 ||
		gagg_cuda(g, gpu_drv.cuEventRecord(gh->ev_decode[si], s->stream), "cuEventRecord") != 0)
		return -1;
	if (gh->n_text > 0 &&
		(gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(gh->f_measure, n_pages, 1, 1,
														   XPU_HEAP_GPU_BLOCK, 1, 1, 0,
														   s->stream, p_measure, NULL)),
				   "cuLaunchKernel") != 0 ||
		 gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(gh->f_scan, 1, 1, 1,
														   XPU_HEAP_GPU_SCAN_BLOCK, 1, 1, 0,
														   s->stream, p_scan, NULL)),
				   "cuLaunchKernel") != 0))
		return -1;
	if (gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(gh->f_decode, n_pages, 1, 1,
														  XPU_HEAP_GPU_BLOCK, 1, 1, 0,
														  s->stream, p_decode, NULL)),
				  "cuLaunchKernel") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(gh->status[si], s->dev + l->status,
											   sizeof(XpuHeapGpuStatus), s->stream),
				  "cuMemcpyDtoHAsync") != 0)
		return -1;
	/* a unit to keep: where each text column's bytes end (gheap_keep) */
	for (int j = 0; gh->unit[si].keep && j < gh->src->n_cols; j++)
	{
		const XpuColumnData *cd = (const XpuColumnData *) (s->host + sizeof(XpuChunk)) + j;

		if (gh->src->col_kind[j] == XPU_COL_UTF8 &&
			gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(&gh->text_end[si][j],
												   (CUdeviceptr) (uintptr_t) cd->values +
												   (size_t) s->nrows * sizeof(int32_t),
												   sizeof(int32_t), s->stream),
					  "cuMemcpyDtoHAsync") != 0)
			return -1;
	}
	return gh->scan ? gheap_launch_filter(gh, si) : gagg_launch(g, s, 0, 0, s->ovf);
}

/*
 * gheap_finish: waits for slot si's chunk; a decode failure is the CPU
 * engine's FALLBACK (before any error the aggregation of its NULLed rows
 * raised), else gagg_slot_finish's outcome
 */
static int
gheap_finish(GheapRun *gh, int si)
{
	GaggRun    *g = &gh->g;
	float		ms = 0;
	int			code;

	if (gh->scan)
		return gheap_finish_filter(gh, si);
	if (gh->unit[si].hit)
	{
		/* cached columns: nothing was decoded */
		code = gagg_slot_finish(g, &g->slots[si]);
		if (code == 0)
			gheap_unit_release(gh, si);
		return code;
	}
	if (gagg_stream_wait(g, g->slots[si].stream) != 0)
		return -1;
	/* the decode's time; gagg_slot_finish adds the aggregation's */
	if (gpu_drv.cuEventElapsedTime(&ms, gh->ev_decode[si], g->slots[si].ev_start) == CUDA_SUCCESS)
		GAGG_ADD(g->run->exec_us, (uint64_t) (ms * 1000.0f));
	code = gh->status[si]->code;
	if (code != 0)
	{
		g->slots[si].busy = 0;
		XPU_ERROR(g->err, XPU_ERR_FALLBACK, code == XPU_HEAP_GPU_MALFORMED ?
				  "a malformed heap page" :
				  "a heap value the engine does not decode (compressed, external or out of range)");
		return XPU_ERR_FALLBACK;
	}
	code = gagg_slot_finish(g, &g->slots[si]);
	if (code == 0 && gh->unit[si].keep)
		code = gheap_keep(gh, si);
	return code;
}

/* every chunk the source gives through the two slots */
static int
gheap_run_chunks(GheapRun *gh)
{
	GaggRun    *g = &gh->g;
	AggRun	   *run = g->run;
	int			next = 0,
				rc;
	WarpHeapChunk ch;

	while (gh->src->take(gh->src->arg, &ch))
	{
		GaggSlot   *s = &g->slots[next];
		uint32_t	slot = ch.slot,
					n_pages = ch.n_pages;
		int64_t		t0 = 0;

		gh->src->taken = true;
		rc = s->busy ? gheap_finish(gh, next) : 0;
		if (rc == 0 && (ch.flags & WARP_CHUNK_PROBE))
		{
			/* a unit served from the cache, read here, or the backend reads it */
			uint32_t	flags = WARP_CHUNK_SERVED;

			rc = gheap_probe(gh, next, &ch);
			if (rc == 0 && gh->units && gh->src->service_reads)
			{
				rc = gheap_read_unit(gh, next, &ch);
				flags |= WARP_CHUNK_READ;
			}
			if (rc < 0)
				return -1;
			gh->src->give(gh->src->arg, slot, rc > 0 ? flags :
						  gh->units ? 0 : WARP_CHUNK_NO_CACHE);
			if (rc > 0 && g->slots[next].busy)
				next = (next + 1) % GAGG_SLOTS;
			continue;
		}
		if (rc == 0)
		{
			t0 = svc_now_us(CLOCK_MONOTONIC);
			gheap_keep_check(gh, next, &ch);
			rc = gheap_fill_slot(gh, next, slot, n_pages);
			GAGG_ADD(run->io_us, (uint64_t) (svc_now_us(CLOCK_MONOTONIC) - t0));
		}
		/*
		 * a scan's slot goes back with its mask (gheap_finish_filter), an
		 * aggregation's once its pages are staged or, from a registered
		 * ring, copied
		 */
		if (!gh->scan && (!gh->ring_reg || rc != 0 || s->nrows == 0))
			gh->src->give(gh->src->arg, slot, 0);
		if (rc != 0)
			return rc;
		GAGG_ADD(run->rows_in, (uint64_t) s->nrows);
		GAGG_ADD(run->batches, 1);
		GAGG_ADD(run->bytes_read, (uint64_t) n_pages * XPU_HEAP_PAGE_SIZE);
		gh->ring_slot[next] = slot;
		if (s->nrows == 0)
		{
			if (gh->scan)
				gh->src->pass(gh->src->arg, slot, NULL, 0, false);
			continue;
		}
		if (gheap_launch(gh, next) != 0)
			return -1;
		if (!gh->scan && gh->ring_reg)
		{
			if (gagg_cuda(g, gpu_drv.cuEventSynchronize(gh->ev_copied[next]),
						  "cuEventSynchronize") != 0)
				return -1;
			gh->src->give(gh->src->arg, slot, 0);
		}
		next = (next + 1) % GAGG_SLOTS;
	}
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		int			si = (next + i) % GAGG_SLOTS;

		if (g->slots[si].busy && (rc = gheap_finish(gh, si)) != 0)
			return rc;
	}
	if (run->canceled != NULL && *run->canceled)
		return gagg_fail(g, WARP_ERR_CANCELED, "canceled");
	return 0;
}

/*
 * gheap_desc_build: the run's XpuHeapGpuDesc and its arrays in one device
 * allocation (gh->d_desc); -1 with WARP_ERR_UNSUPPORTED when the run reads
 * more attributes than the kernels keep
 */
static int
gheap_desc_build(GheapRun *gh)
{
	const GpuHeapSource *src = gh->src;
	const XpuProgram *prog = gh->g.prog;
	int			nd = src->n_deform,
				nc = src->n_cols;
	size_t		o_atts = align_up(sizeof(XpuHeapGpuDesc), 16),
				o_want = align_up(o_atts + (size_t) nd * sizeof(XpuHeapAtt), 16),
				o_cwant = align_up(o_want + (size_t) nd * 2, 16),
				o_kind = align_up(o_cwant + (size_t) nc * 2, 16),
				o_scale = align_up(o_kind + (size_t) nc, 16),
				o_text = align_up(o_scale + (size_t) nc * 2, 16),
				o_missing = align_up(o_text + (size_t) nc * 2, 16);
	size_t		missing_len = 0;
	uint8_t    *h;
	XpuHeapGpuDesc *d;
	int16_t    *want, *cwant, *scale, *text;
	int			rc;

	for (int a = 0; a < nd; a++)
		if ((src->atts[a].flags & XPU_HEAP_ATT_MISSING) &&
			src->atts[a].missing_off + src->atts[a].missing_len > missing_len)
			missing_len = src->atts[a].missing_off + src->atts[a].missing_len;
	gh->desc_bytes = o_missing + missing_len + 1;
	if ((h = calloc(1, gh->desc_bytes)) == NULL)
		return gagg_fail(&gh->g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	d = (XpuHeapGpuDesc *) h;
	want = (int16_t *) (h + o_want);
	cwant = (int16_t *) (h + o_cwant);
	scale = (int16_t *) (h + o_scale);
	text = (int16_t *) (h + o_text);
	memcpy(h + o_atts, src->atts, (size_t) nd * sizeof(XpuHeapAtt));
	memcpy(h + o_kind, src->col_kind, nc);
	if (missing_len > 0)
		memcpy(h + o_missing, src->missing, missing_len);
	for (int a = 0; a < nd; a++)
		want[a] = -1;
	for (int j = 0; j < nc; j++)
	{
		int			a = src->col_att[j] - 1;
		const XpuHeapAtt *at = &src->atts[a];
		int			kind = src->col_kind[j];

		/* every column read gets a buffer (gheap_layout): a kind without one is a bug */
		if (kind != 0 && kind != XPU_COL_UTF8 && kind != XPU_COL_BOOL && xpu_hg_width(kind) <= 0)
		{
			free(h);
			return gagg_fail(&gh->g, WARP_ERR_UNSUPPORTED,
							 "the GPU heap decoder has no column kind %d", kind);
		}

		if (want[a] < 0)
			want[a] = (int16_t) d->n_want++;
		cwant[j] = want[a];
		text[j] = src->col_kind[j] == XPU_COL_UTF8 ? (int16_t) gh->n_text++ : -1;
		if (text[j] >= 0 && (at->flags & XPU_HEAP_ATT_MISSING) && at->missing_len > gh->max_missing)
			gh->max_missing = at->missing_len;
		for (int i = prog->n_cols - 1; i >= 0; i--)
			if (XPU_COLS(prog)[i].col_index == j)
				scale[j] = (int16_t) XPU_COLS(prog)[i].scale;	/* the first one's */
	}
	if (gh->units)
		gheap_col_keys(gh, scale);
	d->n_deform = nd;
	d->n_cols = nc;
	d->n_text = gh->n_text;
	rc = d->n_want > XPU_HEAP_GPU_MAX_WANT ?
		gagg_fail(&gh->g, WARP_ERR_UNSUPPORTED, "the GPU decodes at most %d attributes of a heap table",
				  XPU_HEAP_GPU_MAX_WANT) :
		gagg_dev_alloc(&gh->g, &gh->d_desc, gh->desc_bytes, "the heap attributes");
	if (rc == 0)
	{
		d->atts = (const XpuHeapAtt *) (uintptr_t) (gh->d_desc + o_atts);
		d->missing = (const uint8_t *) (uintptr_t) (gh->d_desc + o_missing);
		d->want = (const int16_t *) (uintptr_t) (gh->d_desc + o_want);
		d->col_want = (const int16_t *) (uintptr_t) (gh->d_desc + o_cwant);
		d->col_kind = (const uint8_t *) (uintptr_t) (gh->d_desc + o_kind);
		d->col_scale = (const int16_t *) (uintptr_t) (gh->d_desc + o_scale);
		d->col_text = (const int16_t *) (uintptr_t) (gh->d_desc + o_text);
		rc = gagg_cuda(&gh->g, gpu_drv.cuMemcpyHtoDAsync(gh->d_desc, h, gh->desc_bytes,
														 gh->g.slots[0].stream),
					   "cuMemcpyHtoDAsync") != 0 ||
			gagg_cuda(&gh->g, gpu_drv.cuStreamSynchronize(gh->g.slots[0].stream),
					  "cuStreamSynchronize") != 0 ? -1 : 0;
	}
	free(h);
	return rc;
}

/* what a heap run needs besides gagg_setup's */
static int
gheap_setup(GheapRun *gh, const ServiceGpu *gpu, uint32_t dev, const GpuAggOptions *opts)
{
	GaggRun    *g = &gh->g;
	CUmodule	mod;

	gh->units = gh->src->relpath != NULL && !gh->scan && gh->src->seg_blocks > 0 &&
		gpu_cache_capacity(dev) > 0;
	if (gh->units)
	{
		int			nc = gh->src->n_cols + 1;

		if ((gh->col_field = calloc(nc, sizeof(int32_t))) == NULL ||
			(gh->col_key = calloc(nc, sizeof(int32_t))) == NULL)
			return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		for (int i = 0; i < GAGG_SLOTS; i++)
			if ((gh->unit[i].entries = calloc(nc, sizeof(GpuCacheEntry *))) == NULL ||
				(gh->unit[i].filling = calloc(nc, sizeof(bool))) == NULL)
				return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	if (gagg_setup(g, gpu, dev, opts) != 0 ||
		!gpu_device_module(dev, &mod, g->msg, g->msglen) ||
		gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gh->f_measure, mod, "kern_heap_measure"),
				  "cuModuleGetFunction") != 0 ||
		gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gh->f_scan, mod, "kern_heap_scan"),
				  "cuModuleGetFunction") != 0 ||
		gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gh->f_decode, mod, "kern_heap_decode"),
				  "cuModuleGetFunction") != 0 ||
		gheap_desc_build(gh) != 0)
		return -1;
	if (gh->scan &&
		(gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gh->f_warp, mod, "kern_warp_exec"),
				   "cuModuleGetFunction") != 0 ||
		 gagg_dev_alloc(g, &gh->d_scan_prog, g->run->prog->total_len, "the program") != 0 ||
		 gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(gh->d_scan_prog, g->run->prog,
												g->run->prog->total_len, g->slots[0].stream),
				   "cuMemcpyHtoDAsync") != 0 ||
		 gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[0].stream),
				   "cuStreamSynchronize") != 0))
		return -1;
	/* units it reads itself: with cuFile where the service reads files so */
	if (gh->units && gh->src->service_reads)
	{
		const char *unusable = gpu_direct_unusable();

		if (unusable != NULL)
			return gagg_fail(g, WARP_ERR_IO,
							 "pg_warp.gpudirect is on, but cuFile cannot be used: %s", unusable);
		gh->direct = gpu_direct_mode() != WARP_CUFILE_NONE;
		/* the pages' check on the device: units read with cuFile or from registered pages */
		if ((gh->direct || file_reg_limit() > 0) &&
			gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gh->f_check, mod, "kern_heap_check"),
					  "cuModuleGetFunction") != 0)
			return -1;
	}
	for (int i = 0; i < GAGG_SLOTS; i++)
		if ((gh->units && gagg_host_alloc(g, (void **) &gh->text_end[i],
										  (gh->src->n_cols + 1) * sizeof(int32_t),
										  "a heap chunk's text ends") != 0) ||
			gagg_host_alloc(g, (void **) &gh->status[i], sizeof(XpuHeapGpuStatus),
							"a heap status") != 0 ||
			gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuEventCreate(&gh->ev_decode[i], CU_EVENT_DEFAULT)),
					  "cuEventCreate") != 0)
			return -1;
	return 0;
}

/*
 * gheap_register_ring: registers the ring's read-only mapping with the
 * driver and creates the copy events; on any refusal the run stages its
 * pages instead (nothing registered)
 */
static void
gheap_register_ring(GheapRun *gh)
{
	if (gh->src->ring == NULL || gh->src->ring_size == 0)
		return;
	for (int i = 0; i < GAGG_SLOTS; i++)
		if (gpu_drv.cuEventCreate(&gh->ev_copied[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
			return;
	gh->ring_reg = gpu_drv.cuMemHostRegister((void *) gh->src->ring, gh->src->ring_size,
											 CU_MEMHOSTREGISTER_READ_ONLY) == CUDA_SUCCESS;
}

/*
 * gheap_unregister_ring: the ring's registration undone once no copy from
 * it can be in flight (every slot's stream drained)
 */
static void
gheap_unregister_ring(GheapRun *gh)
{
	if (!gh->ring_reg)
		return;
	for (int i = 0; i < GAGG_SLOTS; i++)
		if (gh->g.slots[i].stream != NULL)
			gpu_drv.cuStreamSynchronize(gh->g.slots[i].stream);
	gpu_drv.cuMemHostUnregister((void *) gh->src->ring);
	gh->ring_reg = false;
}

/* see gpu_driver.h */
int
gpu_heap_execute(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src,
				 const GpuAggOptions *opts, GpuAggSink sink, void *sink_arg,
				 XpuError *err, int *werr, char *msg, size_t msglen)
{
	GheapRun	gh;
	GaggRun    *g = &gh.g;
	CUcontext	ctx;
	XpuGaggTable th;
	GaggClock	clock;
	int			rc;

	memset(&gh, 0, sizeof(gh));
	gh.seg_fd = -1;
	gh.src = src;
	gh.scan = src->pass != NULL;
	g->sink = sink;
	g->sink_arg = sink_arg;
	gagg_clock_start(&clock, run);
	if (gagg_begin(g, gpu, run, opts->device, err, werr, msg, msglen) != 0)
		return -1;
	rc = gheap_setup(&gh, gpu, g->dev, opts);
	/*
	 * a run that may be served units (the ring mostly idle) stages the pages
	 * it does get: registering a ring takes the driver long (tens of ms for
	 * 64 MiB, one registration at a time), so many participants' runs paid
	 * more for it than their chunks from the cache took
	 */
	if (rc == 0 && !gh.units)
		gheap_register_ring(&gh);
	gagg_clock_mark(&clock, 1);
	if (rc == 0)
		rc = gheap_run_chunks(&gh);
	gagg_clock_mark(&clock, 2);
	if (rc == 0 && !gh.scan)
		rc = gagg_table_drain(g, &th);
	gagg_clock_mark(&clock, 3);
	gheap_unregister_ring(&gh);
	/* the cached columns a slot still holds, once no kernel can read them */
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		if (g->slots[i].stream != NULL)
			gpu_drv.cuStreamSynchronize(g->slots[i].stream);
		gheap_unit_release(&gh, i);
		free(gh.unit[i].entries);
		free(gh.unit[i].filling);
	}
	gagg_teardown(g);
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		gagg_host_free(g, (void **) &gh.text_end[i], (src->n_cols + 1) * sizeof(int32_t));
		gagg_host_free(g, (void **) &gh.status[i], sizeof(XpuHeapGpuStatus));
		if (gh.ev_decode[i] != NULL)
			gpu_drv.cuEventDestroy(gh.ev_decode[i]);
		if (gh.ev_copied[i] != NULL)
			gpu_drv.cuEventDestroy(gh.ev_copied[i]);
	}
	gagg_dev_free(g, &gh.d_desc, gh.desc_bytes);
	if (gh.d_scan_prog)
		gagg_dev_free(g, &gh.d_scan_prog, run->prog->total_len);
	free(gh.col_field);
	free(gh.col_key);
	gpu_direct_close(gh.seg_direct);
	file_reg_release(gh.seg_reg);
	if (gh.seg_fd >= 0)
		close(gh.seg_fd);
	gpu_drv.cuCtxPopCurrent(&ctx);
	gagg_clock_end(&clock, run, g->dev);
	return rc;
}

/*
 * the device of a heap run over src: one that keeps units in the GPU
 * column cache (src->relpath) goes to the device of its relation, so that
 * every run over a table finds the units an earlier one kept, each unit on
 * one device (with several GPUs, different tables spread over them); the
 * others take the GPUs in turn
 */
static uint32_t
gheap_device(const GpuHeapSource *src)
{
	static uint32_t next_device;
	uint64_t	h = 1469598103934665603ULL;

	if (src->relpath == NULL)
		return __atomic_fetch_add(&next_device, 1, __ATOMIC_RELAXED);
	for (const char *p = src->relpath; *p != '\0'; p++)
		h = (h ^ (uint8_t) *p) * 1099511628211ULL;
	return (uint32_t) (h ^ (h >> 32));
}

/* see gpu_driver.h */
int
gpu_agg_heap_run(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src,
				 struct XpuAggTable *out, XpuError *err, int *werr, char *msg, size_t msglen)
{
	GpuAggOptions opts;

	GaggTableSink ts = {out, &run->spec};

	opts.initial_groups = 1u << 16;
	opts.device = gheap_device(src);
	return gpu_heap_execute(gpu, run, src, &opts, gagg_fold_into_table, &ts, err, werr,
								msg, msglen);
}

/* see gpu_driver.h */
int
gpu_heap_scan_run(const ServiceGpu *gpu, AggRun *run, GpuHeapSource *src, XpuError *err,
				  int *werr, char *msg, size_t msglen)
{
	GpuAggOptions opts;

	opts.initial_groups = 1;	/* no groups: the smallest table */
	opts.device = gheap_device(src);
	return gpu_heap_execute(gpu, run, src, &opts, NULL, NULL, err, werr, msg, msglen);
}
