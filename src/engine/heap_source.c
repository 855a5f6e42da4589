/*-------------------------------------------------------------------------
 *
 * heap_source.c
 *		GpuPreAgg over plain heap tables, the backend's part: which tables
 *		qualify, the engine's columns of their attributes (codegen's column
 *		hook), the tuple descriptor the service decodes with, and the
 *		reading of the table's pages with the visibility of each tuple.
 *
 * Claims.  A run reads the blocks it claims from a counter (HeapAggShared):
 * a run that is not parallel claims the whole table at once; the runs of a
 * parallel GpuPreAgg (one per participant, under Gather) share the counter
 * in dynamic shared memory and claim ranges of 1/256 of the table (8 to
 * 4096 blocks; whole units of 2048 blocks in a table of 16 units or more, see
 * "Units" below), so that each block is read by exactly one of them.  The claims of
 * a run are remembered: a participant whose run falls back hands them to
 * PostgreSQL's own partial aggregation (heap_agg_fallback_range), then
 * claims the rest of the table for it.
 *
 * Reading.  The pages of each claim are read in block order through the buffer manager
 * with a bulk-read strategy (a small ring of buffers, so that a large
 * table does not evict shared_buffers), each under a share lock while its
 * tuples' visibility is decided for the query's snapshot: every normal
 * tuple of a page marked PD_ALL_VISIBLE (and a snapshot not taken during
 * recovery) is visible, otherwise HeapTupleSatisfiesVisibility decides
 * tuple by tuple, as a sequential scan's heapgetpage does.  A page with a
 * visible tuple is copied whole, with a bitmap of its visible line
 * pointers, into a chunk of the ring (shm_chunk.c); the service decodes
 * only those tuples.  Pages without a visible tuple are not shipped.
 *
 * Direct reads (pg_warp.heap_direct_read).  A run of blocks that the
 * visibility map marks all-visible and that are not in shared buffers, or
 * are there in clean buffers, is
 * read from the relation's segment file in one pread straight into the
 * chunk, without the buffer manager; each page so read must carry
 * PD_ALL_VISIBLE and pass PageIsVerifiedExtended (its header, and its
 * checksum where the cluster has them), else it is read again through
 * the buffer manager as above.  Why the file's copy is the page the
 * query must see: a block absent from the buffer mapping has no newer
 * version than the file's (a buffer is written before it is evicted, and
 * it stays in the mapping while it is written), nor has one in a clean
 * buffer (a change marks the buffer dirty before its content lock is let
 * go, and it stays dirty until the write is done; a change that a
 * concurrent transaction is making as the state is read is not visible
 * to the query's snapshot, nor can it take away a tuple the snapshot
 * sees); a version written after
 * that check that differs in more than hint bits comes from a change
 * that cleared PD_ALL_VISIBLE, and such a page is read again; and while
 * the query's snapshot holds back the xmin horizon, no tuple of an
 * all-visible page can be pruned, so a pread that races a later write of
 * the block still finds the tuples its line pointers name where they
 * were (only a new tuple or line pointer, which an all-visible header
 * does not list, or a tuple header's xmax bits can differ).  Not used for
 * serializable transactions (every tuple read is checked for conflicts),
 * snapshots taken during recovery, temporary tables, or anything but an
 * MVCC snapshot.
 *
 * Units (pg_warp.heap_gpu_cache, protocol.h).  Where the next blocks of a
 * claim are a whole unit (2048 blocks at a multiple of 2048) that a direct
 * read would take from the file (every block all-visible, none in a dirty
 * shared buffer), the run offers the unit to the service instead of reading it:
 * a GPU run that kept the unit's decoded columns in its column cache from
 * an earlier read of the same file contents aggregates them without a page
 * shipped; otherwise the run reads the unit then, and marks it WARP_CHUNK_UNIT
 * when every block came from the file, so that the service may keep it.
 * Unless pg_warp.heap_service_read is off or the cluster has data checksums
 * (which only a read here verifies), a GPU run that misses reads such a
 * unit from the file itself, straight into its pinned memory, and keeps it
 * (WARP_HEAP_SERVICE_READS, protocol.h): the backend reads nothing of it.
 *
 * Columns.  bool, int2/4/8, float4/8, pg_warp's float2, date, timestamp[tz], interval,
 * numeric with a typmod whose scale is 0 .. 38 (read as 128-bit fixed
 * point at that scale), text and varchar.  The service converts each
 * attribute's bytes into the Arrow form the programs read (xpu_heap.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/transam.h"
#include "access/tupdesc_details.h"
#include "access/visibilitymap.h"
#include "access/xlog.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "miscadmin.h"
#include "port/pg_bitutils.h"
#include "portability/instr_time.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/wait_event.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "engine/heap_source.h"
#include "xpu/protocol.h"
#include "xpu/xpu_heap.h"

StaticAssertDecl(BLCKSZ == XPU_HEAP_PAGE_SIZE, "the service decodes 8 kB pages");
StaticAssertDecl(MaxHeapTuplesPerPage <= XPU_HEAP_VIS_BYTES * 8,
				 "a page's visibility bitmap holds every line pointer");

/* pg_warp.heap_chunk_pages: pages per chunk of the ring */
/*
 * 512 (4 MiB): the chunks of the participants' rings reach the GPU in a
 * steadier stream than with larger chunks, without the per-chunk cost of
 * smaller ones (the sizes measured: bench/results/README.md, "Figures
 * behind constants and choices in the code")
 */
int			pg_warp_heap_chunk_pages = 512;

/* pg_warp.heap_direct_read: all-visible blocks not in shared buffers read from the file */
bool		pg_warp_heap_direct_read = true;

/* pg_warp.heap_gpu_cache: units probed in the service's GPU column cache */
bool		pg_warp_heap_gpu_cache = true;

/* pg_warp.heap_service_read: a probed unit the cache misses read by the service */
bool		pg_warp_heap_service_read = true;

/* pg_warp.gpu_heap_workers: see heap_unit_workers; -1: from the service's CPUs */
int			pg_warp_gpu_heap_workers = -1;

/* the most blocks one pread of a direct run reads (8 MiB) */
#define HEAP_DIRECT_MAX_RUN		1024

/* the columns of a heap scan, for heap_column_hook */
typedef struct HeapColumns
{
	TupleDesc	desc;
	const AttrNumber *attnos;	/* chunk column j reads attribute attnos[j] */
	int			n;
} HeapColumns;


/* heap_source_init: the settings of heap runs (from gpu_preagg.c's init) */
void
heap_source_init(void)
{
	DefineCustomIntVariable("pg_warp.heap_chunk_pages",
							"Heap pages per chunk that GpuPreAgg ships to the pg_warp service.",
							"The ring holds four chunks of shared memory.",
							&pg_warp_heap_chunk_pages, 512, 1, 65536,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.heap_direct_read",
							 "Reads all-visible heap blocks that are not in shared buffers "
							 "straight from the table's files.",
							 "Off: every block is read through the buffer manager.",
							 &pg_warp_heap_direct_read, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.heap_gpu_cache",
							 "Lets GpuPreAgg over heap tables aggregate all-visible parts of a table "
							 "from the columns the service's GPU cache kept of them.",
							 "Needs pg_warp.heap_direct_read and a GPU column cache "
							 "(pg_warp.gpu_cache_size).",
							 &pg_warp_heap_gpu_cache, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.heap_service_read",
							 "Lets the service read from the table's files the all-visible parts "
							 "of a table that pg_warp.heap_gpu_cache offers it and it does not hold.",
							 "Otherwise this backend reads them and ships their pages to the service. "
							 "Not used where the cluster has data checksums.",
							 &pg_warp_heap_service_read, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("pg_warp.gpu_heap_workers",
							"Parallel workers of a GpuPreAgg over a heap table whose GPU run has "
							"the service read the table.",
							"At most this many, fewer where PostgreSQL plans fewer.  -1 (the "
							"default): a participant per eight CPU threads of the service, less "
							"the leader, at least one worker; 0: as many as PostgreSQL plans.  "
							"Applies where pg_warp.heap_gpu_cache and pg_warp.heap_service_read "
							"let the service read the table's units, in tables of 256 MB or more.",
							&pg_warp_gpu_heap_workers, -1, -1, 1024,
							PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * heap_service_reads: may the service read the units it misses
 * (pg_warp.heap_service_read; never where the cluster has data checksums,
 * which only a backend's read verifies)
 */
static bool
heap_service_reads(void)
{
	return pg_warp_heap_service_read && !DataChecksumsEnabled();
}

/*
 * heap_unit_workers: the parallel workers of a GpuPreAgg over a heap table
 * of pages blocks that PostgreSQL would give planned: fewer where the run
 * goes to a GPU whose service reads the table's all-visible units (the GPU
 * column cache, pg_warp.heap_service_read, no data checksums, a table large
 * enough for a parallel plan's claims to be whole units).  Its participants then read
 * nothing but probe the units; each one's run costs the service its setup,
 * two pinned unit buffers (whose footprint past the CPU's last-level cache
 * slows every copy) and a worker process's start, while the service's
 * threads are shared among them.  On the H200 host (16 CPUs, SSB SF 20 Q1
 * over the 13.2 GB heap lineorder, first runs) 2 participants took 0.39-0.40
 * s, 4 took 0.37-0.45 s, 8 took 0.43-0.54 s and 17 took 0.53-0.58 s
 * (bench/results/README.md): a participant per eight threads, and never
 * fewer than two (one worker), which a serial plan would be costed as.
 */
int
heap_unit_workers(int planned, BlockNumber pages)
{
	int			cap = heap_unit_worker_limit();

	/* a parallel plan probes units only in claims of whole units */
	if (planned <= 0 || cap < 0 || pages < HEAP_UNIT_CLAIM_MIN_BLOCKS ||
		!pg_warp_heap_gpu_cache || !pg_warp_heap_direct_read || !heap_service_reads() ||
		pg_warp_engine == WARP_ENGINE_CPU ||
		(pg_warp_engine != WARP_ENGINE_GPU && !service_engine_gpu()))
		return planned;
	return Min(planned, cap);
}

/*
 * heap_unit_worker_limit: the most workers heap_unit_workers leaves a plan
 * (pg_warp.gpu_heap_workers, or from the service's CPU threads), -1 for
 * none (the setting 0, or no GPU column cache: the backends read)
 */
int
heap_unit_worker_limit(void)
{
	int			threads;

	if (pg_warp_gpu_heap_workers != -1)
		return pg_warp_gpu_heap_workers > 0 ? pg_warp_gpu_heap_workers : -1;
	threads = service_heap_unit_threads();
	return threads > 0 ? Max(threads / 8, 2) - 1 : -1;
}

/*
 * heap_source_plannable: is relid a plain heap table (no partitions, heap
 * access method) that GpuPreAgg may read: a user's table, not one of the
 * system's (catalogs, information_schema: made by initdb, read by
 * PostgreSQL through its buffers only)
 */
bool
heap_source_plannable(Oid relid)
{
	HeapTuple	tup;
	Form_pg_class form;
	bool		ok;

	if (relid < FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_class) GETSTRUCT(tup);
	ok = (form->relkind == RELKIND_RELATION || form->relkind == RELKIND_MATVIEW) &&
		form->relam == HEAP_TABLE_AM_OID;
	ReleaseSysCache(tup);
	return ok;
}

/* codegen's column hook over a HeapColumns: the engine's load of an attribute */
static bool
heap_column_hook(void *arg, AttrNumber attno, Oid typid, int *col_index,
				 XpuColKind *kind, int *scale)
{
	const HeapColumns *hc = arg;
	Form_pg_attribute att;
	int			i;

	for (i = 0; i < hc->n && hc->attnos[i] != attno; i++)
		;
	if (i >= hc->n || attno < 1 || attno > hc->desc->natts)
		return false;
	att = TupleDescAttr(hc->desc, attno - 1);
	if (att->attisdropped || att->atttypid != typid)
		return false;
	*col_index = i;
	*scale = 0;
	if (typid == codegen_float2_type())
	{
		/* pg_warp's float2: the half's two bytes, as an Arrow float16 */
		*kind = XPU_COL_FLOAT16;
		return true;
	}
	switch (typid)
	{
		case BOOLOID: *kind = XPU_COL_BOOL; return true;
		case INT2OID: *kind = XPU_COL_INT16; return true;
		case INT4OID: *kind = XPU_COL_INT32; return true;
		case INT8OID: *kind = XPU_COL_INT64; return true;
		case FLOAT4OID: *kind = XPU_COL_FLOAT32; return true;
		case FLOAT8OID: *kind = XPU_COL_FLOAT64; return true;
		case DATEOID: *kind = XPU_COL_DATE32; return true;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID: *kind = XPU_COL_TIMESTAMP_US; return true;
		case INTERVALOID: *kind = XPU_COL_INTERVAL_MDN; return true;
		case TEXTOID:
		case VARCHAROID: *kind = XPU_COL_UTF8; return true;
		case NUMERICOID:
			*kind = XPU_COL_DECIMAL128;
			*scale = codegen_numeric_typmod_scale(att->atttypmod);
			return *scale >= 0;
		default:
			return false;
	}
}

/*
 * heap_source_codegen_scan: points scan's column hook at the attributes
 * attnos[0 .. n - 1] of heap table rel (chunk column j is attnos[j])
 */
void
heap_source_codegen_scan(CodegenScan *scan, Relation rel, const AttrNumber *attnos, int n)
{
	HeapColumns *hc = palloc0(sizeof(HeapColumns));

	hc->desc = RelationGetDescr(rel);
	hc->attnos = attnos;
	hc->n = n;
	scan->column = heap_column_hook;
	scan->column_arg = hc;
}

/* the missing value of attribute att (atthasmissing) into h->missing */
static void
put_missing(HeapAggRun *h, TupleDesc desc, int a, XpuHeapAtt *xa)
{
	Form_pg_attribute att = TupleDescAttr(desc, a);
	AttrMissing *am = desc->constr ? desc->constr->missing : NULL;
	Datum		v;
	char		buf[8];

	if (!att->atthasmissing || am == NULL || !am[a].am_present)
		return;
	v = am[a].am_value;
	while (h->missing.len % 8 != 0)
		appendStringInfoChar(&h->missing, '\0');
	xa->flags |= XPU_HEAP_ATT_MISSING;
	xa->missing_off = h->missing.len;
	if (att->attbyval)
	{
		store_att_byval(buf, v, att->attlen);
		appendBinaryStringInfo(&h->missing, buf, att->attlen);
		xa->missing_len = att->attlen;
	}
	else if (att->attlen > 0)
	{
		appendBinaryStringInfo(&h->missing, DatumGetPointer(v), att->attlen);
		xa->missing_len = att->attlen;
	}
	else if (att->attlen == -1)
	{
		/* a compressed or external one the service refuses (FALLBACK) */
		xa->missing_len = VARSIZE_ANY(DatumGetPointer(v));
		appendBinaryStringInfo(&h->missing, DatumGetPointer(v), xa->missing_len);
	}
	else
	{
		xa->missing_len = strlen(DatumGetCString(v)) + 1;
		appendBinaryStringInfo(&h->missing, DatumGetCString(v), xa->missing_len);
	}
}

/*
 * heap_agg_prepare: the run of a GpuPreAgg over heap table rel whose
 * chunk column j reads attribute attnos[j]: the tuple descriptor as the
 * service decodes it (every attribute up to the last one read, dropped
 * ones too: their bytes are still in old tuples).
 */
HeapAggRun *
heap_agg_prepare(Relation rel, const AttrNumber *attnos, int n)
{
	HeapAggRun *h = palloc0(sizeof(HeapAggRun));
	TupleDesc	desc = RelationGetDescr(rel);

	h->rel = rel;
	h->n_cols = n;
	h->col_att = palloc0(sizeof(int16) * Max(n, 1));
	for (int j = 0; j < n; j++)
	{
		h->col_att[j] = attnos[j];
		h->n_atts = Max(h->n_atts, attnos[j]);
	}
	/* one attribute at least, where the table has one (none: count(*)) */
	h->n_atts = Max(h->n_atts, Min(desc->natts, 1));
	h->vmbuffer = InvalidBuffer;
	h->seg_fd = -1;
	h->atts = palloc0(sizeof(XpuHeapAtt) * Max(h->n_atts, 1));
	initStringInfo(&h->missing);
	for (int a = 0; a < h->n_atts; a++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, a);

		h->atts[a].attlen = att->attlen;
		h->atts[a].align = att->attalign == TYPALIGN_DOUBLE ? 8 :
			att->attalign == TYPALIGN_INT ? 4 : att->attalign == TYPALIGN_SHORT ? 2 : 1;
		put_missing(h, desc, a, &h->atts[a]);
	}
	return h;
}

/* heap_agg_put_request: appends the heap part of HEAP_RUN (protocol.h) */
void
heap_agg_put_request(HeapAggRun *h, StringInfo buf)
{
	WarpHeapRequest req = {0};
	char	   *path = NULL;

	/* the ring: 4 chunks of up to pg_warp.heap_chunk_pages pages */
	if (h->shared == NULL)
	{
		h->shared = palloc(sizeof(HeapAggShared));
		heap_agg_shared_init(h->shared, h->rel, true);
	}
	h->nblocks = h->shared->nblocks;
	h->slot_pages = (uint32) Min(pg_warp_heap_chunk_pages, Max(h->nblocks, 1));
	if (h->scan)
		h->slot_pages = Min(h->slot_pages, HEAP_SCAN_MAX_CHUNK_PAGES);
	/*
	 * units: where a claim can hold one (a serial run's whole table of one
	 * unit at least, a parallel run's claims of whole units) of a table whose
	 * files all backends share; a chunk holds one
	 */
	h->units = !h->scan && pg_warp_heap_gpu_cache && pg_warp_heap_direct_read &&
		h->shared->claim >= WARP_HEAP_UNIT_BLOCKS && !RelationUsesLocalBuffers(h->rel);
	if (h->units)
		h->slot_pages = Max(h->slot_pages, WARP_HEAP_UNIT_BLOCKS);
	h->n_slots = 4;
	h->slot_size = TYPEALIGN(BLCKSZ, (uint64) h->slot_pages * (BLCKSZ + XPU_HEAP_VIS_BYTES));
	req.n_slots = h->n_slots;
	req.slot_pages = h->slot_pages;
	req.slot_size = h->slot_size;
	req.n_atts = h->n_atts;
	req.missing_len = h->missing.len;
	req.flags = h->scan ? WARP_HEAP_SCAN : 0;
	if (h->units)
	{
		path = relpath(RelationGetSmgr(h->rel)->smgr_rnode, MAIN_FORKNUM);
		req.flags |= WARP_HEAP_UNITS;
		if (heap_service_reads())
			req.flags |= WARP_HEAP_SERVICE_READS;
		req.path_len = (uint32) strlen(path);
		req.seg_blocks = RELSEG_SIZE;
	}
	while (buf->len % 8 != 0)
		appendStringInfoChar(buf, '\0');
	appendBinaryStringInfo(buf, (char *) &req, sizeof(req));
	appendBinaryStringInfo(buf, (char *) h->atts, sizeof(XpuHeapAtt) * h->n_atts);
	appendBinaryStringInfo(buf, (char *) h->col_att, sizeof(int16) * h->n_cols);
	while (buf->len % 8 != 0)
		appendStringInfoChar(buf, '\0');
	appendBinaryStringInfo(buf, h->missing.data, h->missing.len);
	while (buf->len % 8 != 0)
		appendStringInfoChar(buf, '\0');
	if (path != NULL)
	{
		appendBinaryStringInfo(buf, path, req.path_len);
		while (buf->len % 8 != 0)
			appendStringInfoChar(buf, '\0');
		pfree(path);
	}
}

/*
 * heap_agg_shared_init: the block counter of the runs over rel: its blocks
 * now, claimed whole (whole) or in ranges that balance the participants of
 * a parallel plan
 */
void
heap_agg_shared_init(HeapAggShared *sh, Relation rel, bool whole)
{
	sh->nblocks = RelationGetNumberOfBlocks(rel);
	sh->claim = whole ? Max(sh->nblocks, 1) : Min(4096, Max(sh->nblocks / 256, 8));
	/* claims of whole units (protocol.h) where the table has 16 of them or more */
	if (!whole && sh->nblocks >= HEAP_UNIT_CLAIM_MIN_BLOCKS)
		sh->claim = Max(sh->claim - sh->claim % WARP_HEAP_UNIT_BLOCKS, WARP_HEAP_UNIT_BLOCKS);
	pg_atomic_init_u64(&sh->next, 0);
}

/* heap_agg_reset: h as before its first run (a rescan), its counters zero */
void
heap_agg_reset(HeapAggRun *h)
{
	h->next = h->claim_end = 0;
	h->ranges = NIL;
	h->replayed = 0;
	h->direct = 0;
	h->probe = 0;
	h->in_unit = false;
	h->pages_read = h->pages_shipped = h->pages_direct = h->tuples_shipped = h->chunks = 0;
	h->units_probed = h->units_served = h->units_read = 0;
	INSTR_TIME_SET_ZERO(h->read_time);
	INSTR_TIME_SET_ZERO(h->wait_time);
	h->pending = NIL;
	h->pending_len = NIL;
}

/* claims the next range of blocks for h (remembered in h->ranges); false at the end */
static bool
claim_range(HeapAggRun *h, BlockNumber *start, BlockNumber *n)
{
	HeapAggShared *sh = h->shared;
	uint64		first = pg_atomic_fetch_add_u64(&sh->next, sh->claim);

	if (first >= sh->nblocks)
		return false;
	*start = (BlockNumber) first;
	*n = (BlockNumber) Min((uint64) sh->claim, sh->nblocks - first);
	h->ranges = lappend_oid(lappend_oid(h->ranges, *start), *n);
	return true;
}

/*
 * heap_agg_fallback_range: the next range of blocks that PostgreSQL reads
 * for a run that fell back: the run's own claims first, then new ones;
 * false when the table is read
 */
bool
heap_agg_fallback_range(HeapAggRun *h, BlockNumber *start, BlockNumber *n)
{
	if (h->shared == NULL)
	{
		h->shared = palloc(sizeof(HeapAggShared));
		heap_agg_shared_init(h->shared, h->rel, true);
	}
	if (h->replayed * 2 >= list_length(h->ranges) && !claim_range(h, start, n))
		return false;
	*start = list_nth_oid(h->ranges, 2 * h->replayed);
	*n = list_nth_oid(h->ranges, 2 * h->replayed + 1);
	h->replayed++;
	return true;
}

/*
 * claims the next range for h when its current one is used up (not while
 * it reads one unit, whose blocks are all it may read); false at the end
 */
static bool
claim_if_used_up(HeapAggRun *h)
{
	BlockNumber start,
				n;

	if (h->next < h->claim_end)
		return true;
	if (h->in_unit || !claim_range(h, &start, &n))
		return false;
	h->next = start;
	h->claim_end = start + n;
	return true;
}

/* the next block of h to read (claiming a range when one is used up); false at the end */
static bool
next_block(HeapAggRun *h, BlockNumber *blk)
{
	if (!claim_if_used_up(h))
		return false;
	*blk = h->next++;
	return true;
}

/*
 * copy_page: a page into the ring, with non-temporal stores where the CPU
 * has them and dst is aligned: the service's or the GPU's copy reads the
 * ring next, not this backend, and ordinary stores would first read every
 * line of dst from memory (with the page itself and the device's read,
 * the memory traffic that bounds many participants copying at once).
 * heap_agg_read_pages fences them before the chunk is handed over.
 */
static inline void
copy_page(char *dst, const char *src)
{
#ifdef __SSE2__
	if (((uintptr_t) dst & 15) == 0)
	{
		for (int i = 0; i < BLCKSZ; i += 64)
		{
			__m128i		a = _mm_loadu_si128((const __m128i *) (src + i));
			__m128i		b = _mm_loadu_si128((const __m128i *) (src + i + 16));
			__m128i		c = _mm_loadu_si128((const __m128i *) (src + i + 32));
			__m128i		d = _mm_loadu_si128((const __m128i *) (src + i + 48));

			_mm_stream_si128((__m128i *) (dst + i), a);
			_mm_stream_si128((__m128i *) (dst + i + 16), b);
			_mm_stream_si128((__m128i *) (dst + i + 32), c);
			_mm_stream_si128((__m128i *) (dst + i + 48), d);
		}
		return;
	}
#endif
	memcpy(dst, src, BLCKSZ);
}

/*
 * read_page: the visible tuples of block blk into vis (bit k: line pointer
 * k + 1) and, when there is one, the page into dst; the count of them
 */
static int
read_page(HeapAggRun *h, BlockNumber blk, char *dst, uint8 *vis)
{
	HeapTupleData tup;
	Buffer		buf = ReadBufferExtended(h->rel, MAIN_FORKNUM, blk, RBM_NORMAL, h->strategy);
	Page		page;
	bool		all_visible;
	OffsetNumber maxoff;
	int			n = 0;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	all_visible = PageIsAllVisible(page) && !h->snap->takenDuringRecovery;
	maxoff = PageGetMaxOffsetNumber(page);
	memset(vis, 0, XPU_HEAP_VIS_BYTES);
	for (OffsetNumber off = FirstOffsetNumber; off <= maxoff; off++)
	{
		ItemId		lp = PageGetItemId(page, off);

		bool		valid = all_visible;

		if (!ItemIdIsNormal(lp))
			continue;
		if (!all_visible || h->ssi)
		{
			tup.t_data = (HeapTupleHeader) PageGetItem(page, lp);
			tup.t_len = ItemIdGetLength(lp);
			tup.t_tableOid = RelationGetRelid(h->rel);
			ItemPointerSet(&tup.t_self, blk, off);
			if (!all_visible)
				valid = HeapTupleSatisfiesVisibility(&tup, h->snap, buf);
			/* what a serializable sequential scan checks of every tuple it reads */
			if (h->ssi)
				HeapCheckForSerializableConflictOut(valid, h->rel, &tup, buf, h->snap);
		}
		if (!valid)
			continue;
		vis[(off - 1) >> 3] |= 1 << ((off - 1) & 7);
		n++;
	}
	if (n > 0)
		copy_page(dst, page);
	UnlockReleaseBuffer(buf);
	return n;
}

/* ---------------- direct reads (the header comment says when) ---------------- */

/* may the run of h read blocks from the table's files */
static bool
direct_allowed(HeapAggRun *h)
{
	if (h->direct == 0)
		h->direct = pg_warp_heap_direct_read && !h->ssi && h->snap != NULL &&
			IsMVCCSnapshot(h->snap) && !h->snap->takenDuringRecovery &&
			!RelationUsesLocalBuffers(h->rel) ? 1 : -1;
	return h->direct > 0;
}

/*
 * is block blk of h's table marked all-visible, and either absent from
 * shared buffers or there in a clean buffer (the same bytes as the file's:
 * a change marks a buffer dirty, and it stays so until it is written)
 */
static bool
direct_block(HeapAggRun *h, BlockNumber blk)
{
	BufferTag	tag;
	uint32		hash;
	LWLock	   *lock;
	int			id;
	bool		clean = true;

	if (!VM_ALL_VISIBLE(h->rel, blk, &h->vmbuffer))
		return false;
	INIT_BUFFERTAG(tag, RelationGetSmgr(h->rel)->smgr_rnode.node, MAIN_FORKNUM, blk);
	hash = BufTableHashCode(&tag);
	lock = BufMappingPartitionLock(hash);
	LWLockAcquire(lock, LW_SHARED);
	id = BufTableLookup(&tag, hash);
	/* the mapping's lock keeps the buffer on this block while its state is read */
	if (id >= 0)
		clean = (pg_atomic_read_u32(&GetBufferDescriptor(id)->state) & BM_DIRTY) == 0;
	LWLockRelease(lock);
	return clean;
}

/*
 * the segment file of block blk open in h->seg_fd; false when it cannot be
 * read directly (missing, not a regular file: the buffer manager then
 * reads the block and reports what is wrong its own way)
 */
static bool
direct_open(HeapAggRun *h, BlockNumber blk)
{
	BlockNumber seg = blk / RELSEG_SIZE;
	char	   *base;
	char	   *path;
	struct stat st;
	int			fd;

	if (h->seg_fd >= 0 && h->seg_no == seg)
		return true;
	if (h->seg_fd >= 0)
		CloseTransientFile(h->seg_fd);
	h->seg_fd = -1;
	base = relpath(RelationGetSmgr(h->rel)->smgr_rnode, MAIN_FORKNUM);
	path = seg == 0 ? base : psprintf("%s.%u", base, seg);
	/* O_NONBLOCK: a FIFO put where the file belongs must not hang the open */
	fd = OpenTransientFile(path, O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)))
	{
		CloseTransientFile(fd);
		fd = -1;
	}
	if (path != base)
		pfree(path);
	pfree(base);
	if (fd < 0)
		return false;
	h->seg_fd = fd;
	h->seg_no = seg;
	return true;
}

/*
 * direct_page: is the page that a direct read put at page (block blk)
 * one the query may take as it is; its visible line pointers into vis
 * and their count into *n
 */
static bool
direct_page(Page page, BlockNumber blk, uint8 *vis, int *n)
{
	const ItemIdData *lp;
	int			maxoff;

	if (PageIsNew(page) || !PageIsAllVisible(page) || !PageIsVerifiedExtended(page, blk, 0))
		return false;
	maxoff = PageGetMaxOffsetNumber(page);
	if (maxoff > MaxHeapTuplesPerPage)
		return false;
	lp = ((PageHeader) page)->pd_linp;
	memset(vis, 0, XPU_HEAP_VIS_BYTES);
	*n = 0;
	/* a byte of the bitmap at a time (the line pointers' loop is most of this path's own time) */
	for (int i = 0; i < maxoff; i += 8)
	{
		uint8		b = 0;

		for (int j = 0; j < Min(8, maxoff - i); j++)
			b |= (uint8) (lp[i + j].lp_flags == LP_NORMAL) << j;
		vis[i >> 3] = b;
		*n += pg_number_of_ones[b];
	}
	return true;
}

/*
 * direct_run: reads block blk (claimed) and the blocks after it in its
 * claim and segment that qualify too, at most max, straight from the file
 * into pages; each page the query may not take as read is read again
 * through the buffer manager.  Every block goes to pages[k], vis[k] and
 * counts[k] (its visible tuples, 0: not shipped).  Returns the blocks
 * claimed (>= 1).
 */
static int
direct_run(HeapAggRun *h, BlockNumber blk, char *pages, uint8 *vis, int *counts, int max)
{
	BlockNumber seg_end = (blk / RELSEG_SIZE + 1) * RELSEG_SIZE;
	int			len = 1;
	ssize_t		got = 0;

	max = Min(max, HEAP_DIRECT_MAX_RUN);
	while (len < max && h->next < h->claim_end && h->next < seg_end && direct_block(h, h->next))
	{
		h->next++;
		len++;
	}
	if (direct_open(h, blk))
	{
		pgstat_report_wait_start(WAIT_EVENT_DATA_FILE_READ);
		got = pg_pread(h->seg_fd, pages, (size_t) len * BLCKSZ,
					   (off_t) (blk % RELSEG_SIZE) * BLCKSZ);
		pgstat_report_wait_end();
		got = Max(got, 0);
	}
	for (int k = 0; k < len; k++)
	{
		char	   *page = pages + (Size) k * BLCKSZ;
		uint8	   *v = vis + k * XPU_HEAP_VIS_BYTES;

		if ((k + 1) * (ssize_t) BLCKSZ <= got && direct_page(page, blk + k, v, &counts[k]))
			h->pages_direct++;
		else
			counts[k] = read_page(h, blk + k, page, v);
	}
	return len;
}

/* ---------------- units (protocol.h) ---------------- */

/* is the run's next block the first of a whole unit of its current claim */
static bool
unit_ahead(HeapAggRun *h)
{
	return h->next % WARP_HEAP_UNIT_BLOCKS == 0 && h->next < h->claim_end &&
		h->claim_end - h->next >= WARP_HEAP_UNIT_BLOCKS;
}

/*
 * heap_agg_probe_unit: when the run's next blocks (claiming a range if the
 * current one is used up) are a whole unit whose every block a direct read
 * would take from the file (direct_block), the unit goes to *unit, its
 * blocks count as read, and true: the caller offers it to the service's
 * cache, and reads it with heap_agg_read_unit if the service does not
 * serve it
 */
bool
heap_agg_probe_unit(HeapAggRun *h, BlockNumber *unit)
{
	if (h->probe == 0)
		h->probe = h->units && direct_allowed(h) ? 1 : -1;
	if (h->probe < 0 || !claim_if_used_up(h) || !unit_ahead(h))
		return false;
	for (BlockNumber b = h->next; b < h->next + WARP_HEAP_UNIT_BLOCKS; b++)
		if (!direct_block(h, b))
			return false;
	*unit = h->next;
	h->next += WARP_HEAP_UNIT_BLOCKS;
	h->units_probed++;
	return true;
}

/*
 * heap_agg_read_unit: the pages of unit (a probe the service did not
 * serve) as heap_agg_read_pages reads pages; *whole: every block of it was
 * read from the file and passed the checks of a direct read; *start_us:
 * when the reading began (CLOCK_REALTIME, microseconds)
 */
int
heap_agg_read_unit(HeapAggRun *h, BlockNumber unit, char *pages, uint8 *vis, bool *whole,
				   int64 *start_us)
{
	BlockNumber next = h->next,
				claim_end = h->claim_end;
	uint64		direct = h->pages_direct;
	struct timespec ts;
	int			n;

	clock_gettime(CLOCK_REALTIME, &ts);
	*start_us = (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	h->next = unit;
	h->claim_end = unit + WARP_HEAP_UNIT_BLOCKS;
	h->in_unit = true;
	n = heap_agg_read_pages(h, pages, vis, NULL, WARP_HEAP_UNIT_BLOCKS);
	h->in_unit = false;
	h->next = next;
	h->claim_end = claim_end;
	*whole = h->pages_direct - direct == WARP_HEAP_UNIT_BLOCKS;
	return n;
}

/*
 * heap_agg_read_end: releases what the reading of h holds (its strategy,
 * the visibility map page, the segment file); the run's counters stay
 */
void
heap_agg_read_end(HeapAggRun *h)
{
	if (h->strategy)
		FreeAccessStrategy(h->strategy);
	h->strategy = NULL;
	if (BufferIsValid(h->vmbuffer))
		ReleaseBuffer(h->vmbuffer);
	h->vmbuffer = InvalidBuffer;
	if (h->seg_fd >= 0)
		CloseTransientFile(h->seg_fd);
	h->seg_fd = -1;
}

/*
 * heap_agg_read_pages: the next pages of the run's claims that hold a
 * visible tuple, at most max_pages, into pages (BLCKSZ each) and vis (their
 * visibility bitmaps, XPU_HEAP_VIS_BYTES each); 0 when nothing is left to
 * claim
 */
int
heap_agg_read_pages(HeapAggRun *h, char *pages, uint8 *vis, BlockNumber *blocks, int max_pages)
{
	int			n = 0;
	int			counts[HEAP_DIRECT_MAX_RUN];
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	while (n < max_pages)
	{
		BlockNumber blk;
		int			len = 1;
		int			at = n;		/* where the run's first page went */

		CHECK_FOR_INTERRUPTS();
		/* a unit to probe starts here: the next chunk offers it (heap_agg_probe_unit) */
		if (n > 0 && h->probe > 0 && unit_ahead(h))
			break;
		if (!next_block(h, &blk))
			break;
		if (direct_allowed(h) && direct_block(h, blk))
			len = direct_run(h, blk, pages + (Size) n * BLCKSZ, vis + n * XPU_HEAP_VIS_BYTES,
							 counts, max_pages - n);
		else
			counts[0] = read_page(h, blk, pages + (Size) n * BLCKSZ, vis + n * XPU_HEAP_VIS_BYTES);
		h->pages_read += len;
		/* the pages with a visible tuple, moved up over those without */
		for (int k = 0; k < len; k++)
		{
			if (counts[k] == 0)
				continue;
			if (at + k != n)
			{
				memmove(pages + (Size) n * BLCKSZ, pages + (Size) (at + k) * BLCKSZ, BLCKSZ);
				memmove(vis + n * XPU_HEAP_VIS_BYTES, vis + (at + k) * XPU_HEAP_VIS_BYTES,
						XPU_HEAP_VIS_BYTES);
			}
			h->tuples_shipped += counts[k];
			if (blocks)
				blocks[n] = blk + k;
			n++;
		}
	}
	h->pages_shipped += n;
#ifdef __SSE2__
	_mm_sfence();				/* copy_page's stores, before the chunk is handed over */
#endif
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_ACCUM_DIFF(h->read_time, end, start);
	return n;
}

/* heap_agg_explain: the heap run's EXPLAIN fields (counters with analyze) */
void
heap_agg_explain(HeapAggRun *h, bool analyze, ExplainState *es)
{
	ExplainPropertyText("Heap Table", RelationGetRelationName(h->rel), es);
	if (!analyze || h->nblocks == 0)
		return;
	ExplainPropertyInteger("Heap Pages", NULL, (int64) h->nblocks, es);
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		/*
		 * where the pages came from, in one line: the GPU column cache (whole
		 * units, in the service), or shipped through the ring after this
		 * backend read them from the relation's files (all-visible pages) or
		 * from shared buffers, and the rate of that reading and copying
		 */
		double		ms = INSTR_TIME_GET_MILLISEC(h->read_time);
		double		mb = (double) h->pages_shipped * BLCKSZ / (1024.0 * 1024.0);
		StringInfoData d;

		initStringInfo(&d);
		appendStringInfo(&d, "GPU cache " UINT64_FORMAT " units (" UINT64_FORMAT " pages); "
						 "read by the service " UINT64_FORMAT " units (" UINT64_FORMAT " pages); "
						 "shipped " UINT64_FORMAT " pages, %.1f MB (" UINT64_FORMAT
						 " read from the files, " UINT64_FORMAT " from shared buffers)",
						 h->units_served, h->units_served * WARP_HEAP_UNIT_BLOCKS,
						 h->units_read, h->units_read * WARP_HEAP_UNIT_BLOCKS,
						 h->pages_shipped, mb, h->pages_direct,
						 h->pages_shipped > h->pages_direct ? h->pages_shipped - h->pages_direct : 0);
		if (ms > 0 && h->pages_shipped > 0)
			appendStringInfo(&d, " at %.0f MB/s", mb * 1000.0 / ms);
		ExplainPropertyText("Data Path", d.data, es);
		pfree(d.data);
	}
	ExplainPropertyInteger("Pages Shipped", NULL, (int64) h->pages_shipped, es);
	ExplainPropertyInteger("Pages Read Directly", NULL, (int64) h->pages_direct, es);
	if (h->units_probed > 0)
	{
		ExplainPropertyInteger("Units Probed", NULL, (int64) h->units_probed, es);
		ExplainPropertyInteger("Units from GPU Cache", NULL, (int64) h->units_served, es);
		ExplainPropertyInteger("Units Read by the Service", NULL, (int64) h->units_read, es);
	}
	ExplainPropertyInteger("Tuples Shipped", NULL, (int64) h->tuples_shipped, es);
	ExplainPropertyInteger("Chunks", NULL, (int64) h->chunks, es);
	ExplainPropertyInteger("Bytes Shipped", "bytes",
						   (int64) h->pages_shipped * (BLCKSZ + XPU_HEAP_VIS_BYTES), es);
	ExplainPropertyFloat("Page Read Time", "ms", INSTR_TIME_GET_MILLISEC(h->read_time), 3, es);
	ExplainPropertyFloat("Ring Wait Time", "ms", INSTR_TIME_GET_MILLISEC(h->wait_time), 3, es);
}
