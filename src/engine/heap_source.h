/*-------------------------------------------------------------------------
 *
 * heap_source.h
 *		GpuPreAgg over heap tables: what gpu_preagg.c calls to plan a
 *		grouping of a heap table (the engine's columns of its attributes)
 *		and to run it (the pages of the table, their visible tuples,
 *		shipped to the service through a memfd ring of chunks).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_HEAP_SOURCE_H
#define PG_WARP_HEAP_SOURCE_H

#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "port/atomics.h"
#include "portability/instr_time.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"
#include "utils/snapshot.h"

#include "engine/codegen.h"
#include "xpu/protocol.h"
#include "xpu/xpu_heap.h"

/* a parallel plan's claims are whole units (protocol.h) from this many blocks on */
#define HEAP_UNIT_CLAIM_MIN_BLOCKS	(16 * WARP_HEAP_UNIT_BLOCKS)

/* the most pages of a heap GpuScan's chunk: its pass bitmaps fit a HEAP_DONE */
#define HEAP_SCAN_MAX_CHUNK_PAGES	8192

struct ExplainState;

/* in heap_source.c */
extern int	pg_warp_heap_chunk_pages;
extern bool pg_warp_heap_direct_read;
extern bool pg_warp_heap_gpu_cache;
extern bool pg_warp_heap_service_read;
extern int	pg_warp_gpu_heap_workers;

extern void heap_source_init(void);
extern int	heap_unit_workers(int planned, BlockNumber pages);
extern int	heap_unit_worker_limit(void);

extern bool heap_source_plannable(Oid relid);
extern void heap_source_codegen_scan(CodegenScan *scan, Relation rel,
									 const AttrNumber *attnos, int n);

/*
 * The blocks a heap run reads: claimed in ranges from a counter, which the
 * participants of a parallel GpuPreAgg share in dynamic shared memory (one
 * claim of the whole table for a run that is not parallel)
 */
typedef struct HeapAggShared
{
	pg_atomic_uint64 next;		/* the first block not claimed yet */
	uint32		nblocks;		/* the table's blocks when the query began */
	uint32		claim;			/* blocks per claim */
} HeapAggShared;

/* one run of a GpuPreAgg over a heap table */
typedef struct HeapAggRun
{
	Relation	rel;
	XpuHeapAtt *atts;			/* attributes 1 .. n_atts */
	int			n_atts;
	int16	   *col_att;		/* chunk column j's attribute */
	int			n_cols;
	StringInfoData missing;		/* missing values (atthasmissing) */
	/* reading */
	Snapshot	snap;
	BufferAccessStrategy strategy;
	BlockNumber nblocks;
	HeapAggShared *shared;		/* where blocks are claimed (NULL: not yet) */
	BlockNumber next;			/* the next block of the current claim */
	BlockNumber claim_end;		/* the end of the current claim */
	List	   *ranges;			/* the claims of this run: start, count (Oid) */
	int			replayed;		/* claims handed to heap_agg_fallback_range */
	/* direct reads (heap_source.c): decided at the first read, 1 yes, -1 no */
	int			direct;
	Buffer		vmbuffer;		/* the visibility map page last looked at */
	int			seg_fd;			/* the segment file open for direct reads, or -1 */
	BlockNumber seg_no;			/* its segment number */
	/* units (protocol.h): the request allows them; decided at the first probe, 1 yes, -1 no */
	bool		units;
	int			probe;
	bool		in_unit;		/* reading one unit: no claims past it */
	/* counters (EXPLAIN ANALYZE) */
	uint64		pages_read;
	uint64		pages_shipped;
	uint64		pages_direct;	/* read from the file, not through shared buffers */
	uint64		tuples_shipped;
	uint64		chunks;
	uint64		units_probed;	/* units offered to the service's GPU cache */
	uint64		units_served;	/* ... and aggregated from there */
	uint64		units_read;		/* ... or read from the files by the service */
	instr_time	read_time;		/* reading pages and deciding visibility */
	instr_time	wait_time;		/* waiting for a free chunk of the ring */
	/* the ring (shm_chunk.c) */
	struct ShmRing *ring;
	uint32		n_slots;
	uint32		slot_pages;
	uint64		slot_size;
	List	   *pending;		/* AGG_RESULT payloads received while shipping */
	List	   *pending_len;
	/* GpuScan (WARP_HEAP_SCAN): the chunks come back with pass bitmaps */
	bool		scan;
	bool		ssi;			/* serializable: predicate locks, conflict checks */
	BlockNumber *blocks;		/* [n_slots * slot_pages]: each shipped page's block */
	char	   *local;			/* one chunk filtered in the backend (no ring) */
	uint32	   *free_slots;		/* [n_slots] */
	uint32		n_free;
	uint32		n_out;			/* chunks shipped, not yet back */
	uint32	   *shipped;		/* [n_slots]: a FIFO of the slots in shipping
								 * (block) order, returned in that order */
	uint32		ship_head;		/* its first entry */
	uint32		n_shipped;		/* its entries */
	char	  **early;			/* [n_slots]: HEAP_DONEs that came back before
								 * their turn, or NULL */
	uint32	   *early_len;		/* [n_slots] */
	int			cur_slot;		/* the chunk being returned, or -1 */
	char	   *cur_msg;		/* its HEAP_DONE */
	bool		read_done;		/* the claims are read, HEAP_END sent */
} HeapAggRun;

/* a chunk of a heap GpuScan, as heap_scan_next returns it */
typedef struct HeapScanChunk
{
	const char *pages;			/* n_pages pages of BLCKSZ */
	const BlockNumber *blocks;	/* their block numbers */
	const uint8 *pass;			/* n_pages bitmaps of XPU_HEAP_VIS_BYTES */
	const uint8 *vis;			/* the pages' visibility bitmaps (pass is within) */
	uint32		n_pages;
	uint32		n_passed;
	bool		recheck;		/* PostgreSQL evaluates the engine's quals */
} HeapScanChunk;

extern HeapAggRun *heap_agg_prepare(Relation rel, const AttrNumber *attnos, int n);
extern void heap_agg_shared_init(HeapAggShared *sh, Relation rel, bool whole);
extern void heap_agg_reset(HeapAggRun *h);
extern bool heap_agg_fallback_range(HeapAggRun *h, BlockNumber *start, BlockNumber *n);
extern void heap_agg_put_request(HeapAggRun *h, StringInfo buf);
extern int	heap_agg_read_pages(HeapAggRun *h, char *pages, uint8 *vis, BlockNumber *blocks,
								int max_pages);
extern bool heap_agg_probe_unit(HeapAggRun *h, BlockNumber *unit);
extern int	heap_agg_read_unit(HeapAggRun *h, BlockNumber unit, char *pages, uint8 *vis,
							   bool *whole, int64 *start_us);
extern void heap_agg_read_end(HeapAggRun *h);
extern void heap_agg_explain(HeapAggRun *h, bool analyze, struct ExplainState *es);

/* in shm_chunk.c */
extern bool heap_agg_begin(HeapAggRun *h, Snapshot snap, const char *req, uint32 len,
						   int *conn, const char **why);
extern void *heap_agg_next(HeapAggRun *h, int conn, uint32 *len);
extern void heap_scan_begin(HeapAggRun *h, Snapshot snap, const char *req, uint32 len,
							int *conn);
extern bool heap_scan_next(HeapAggRun *h, int conn, HeapScanChunk *out, WarpAggResult *last);
extern void heap_scan_end(HeapAggRun *h);

#endif							/* PG_WARP_HEAP_SOURCE_H */
