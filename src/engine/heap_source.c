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
 * 4096 blocks), so that each block is read by exactly one of them.  The claims of
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
 * Columns.  bool, int2/4/8, float4/8, pg_warp's float2, date, timestamp[tz], interval,
 * numeric with a typmod whose scale is 0 .. 38 (read as 128-bit fixed
 * point at that scale), text and varchar.  The service converts each
 * attribute's bytes into the Arrow form the programs read (xpu_heap.h).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tupdesc_details.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "miscadmin.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "pg_warp.h"
#include "engine/heap_source.h"
#include "xpu/protocol.h"
#include "xpu/xpu_heap.h"

StaticAssertDecl(BLCKSZ == XPU_HEAP_PAGE_SIZE, "the service decodes 8 kB pages");
StaticAssertDecl(MaxHeapTuplesPerPage <= XPU_HEAP_VIS_BYTES * 8,
				 "a page's visibility bitmap holds every line pointer");

/* pg_warp.heap_chunk_pages: pages per chunk of the ring */
/*
 * 512 (4 MiB): on the 16-core H100 host, SSB SF 20 with 16 workers, GPU
 * GpuPreAgg over the heap table took 1.40 s (Q1) and 1.38 s (Q2) at 512
 * pages, 2.0 s at 4096 (the chunks of the participants' rings reach the
 * GPU in a steadier stream); 256 and 1024 about as 512, 128 and 2048 slower
 */
int			pg_warp_heap_chunk_pages = 512;

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
}

/*
 * heap_source_plannable: is relid a plain heap table (no partitions, heap
 * access method) that GpuPreAgg may read
 */
bool
heap_source_plannable(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Form_pg_class form;
	bool		ok;

	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_class) GETSTRUCT(tup);
	ok = (form->relkind == RELKIND_RELATION || form->relkind == RELKIND_MATVIEW) &&
		form->relam == HEAP_TABLE_AM_OID;
	ReleaseSysCache(tup);
	return ok;
}

/* the scale of a numeric typmod the engine reads, or -1 */
static int
numeric_typmod_scale(int32 typmod)
{
	int			scale;

	if (typmod < (int32) VARHDRSZ)
		return -1;				/* unconstrained: no fixed scale */
	scale = ((((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024);
	return scale >= 0 && scale <= XPU_NUMERIC_MAX_SCALE ? scale : -1;
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
			*scale = numeric_typmod_scale(att->atttypmod);
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
	h->n_atts = Max(h->n_atts, 1);
	h->atts = palloc0(sizeof(XpuHeapAtt) * h->n_atts);
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
	h->n_slots = 4;
	h->slot_size = TYPEALIGN(BLCKSZ, (uint64) h->slot_pages * (BLCKSZ + XPU_HEAP_VIS_BYTES));
	req.n_slots = h->n_slots;
	req.slot_pages = h->slot_pages;
	req.slot_size = h->slot_size;
	req.n_atts = h->n_atts;
	req.missing_len = h->missing.len;
	req.flags = h->scan ? WARP_HEAP_SCAN : 0;
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
	pg_atomic_init_u64(&sh->next, 0);
}

/* heap_agg_reset: h as before its first run (a rescan), its counters zero */
void
heap_agg_reset(HeapAggRun *h)
{
	h->next = h->claim_end = 0;
	h->ranges = NIL;
	h->replayed = 0;
	h->pages_read = h->pages_shipped = h->tuples_shipped = h->chunks = 0;
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

/* the next block of h to read (claiming a range when one is used up); false at the end */
static bool
next_block(HeapAggRun *h, BlockNumber *blk)
{
	if (h->next >= h->claim_end)
	{
		BlockNumber start,
					n;

		if (!claim_range(h, &start, &n))
			return false;
		h->next = start;
		h->claim_end = start + n;
	}
	*blk = h->next++;
	return true;
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
		memcpy(dst, page, BLCKSZ);
	UnlockReleaseBuffer(buf);
	return n;
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
	instr_time	start,
				end;

	INSTR_TIME_SET_CURRENT(start);
	while (n < max_pages)
	{
		int			t;
		BlockNumber blk;

		CHECK_FOR_INTERRUPTS();
		if (!next_block(h, &blk))
			break;
		t = read_page(h, blk, pages + (Size) n * BLCKSZ, vis + n * XPU_HEAP_VIS_BYTES);
		h->pages_read++;
		if (t > 0)
		{
			h->tuples_shipped += t;
			if (blocks)
				blocks[n] = blk;
			n++;
		}
	}
	h->pages_shipped += n;
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
	ExplainPropertyInteger("Pages Shipped", NULL, (int64) h->pages_shipped, es);
	ExplainPropertyInteger("Tuples Shipped", NULL, (int64) h->tuples_shipped, es);
	ExplainPropertyInteger("Chunks", NULL, (int64) h->chunks, es);
	ExplainPropertyInteger("Bytes Shipped", "bytes",
						   (int64) h->pages_shipped * (BLCKSZ + XPU_HEAP_VIS_BYTES), es);
	ExplainPropertyFloat("Page Read Time", "ms", INSTR_TIME_GET_MILLISEC(h->read_time), 3, es);
	ExplainPropertyFloat("Ring Wait Time", "ms", INSTR_TIME_GET_MILLISEC(h->wait_time), 3, es);
}
