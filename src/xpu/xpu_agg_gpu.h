/*-------------------------------------------------------------------------
 *
 * xpu_agg_gpu.h
 *		The GPU hash aggregation table and the launch contract of the
 *		aggregation kernels (kern_agg.cu), shared by the kernels and the
 *		service code that drives them (service/gpu_agg.c).  Plain data with
 *		fixed-width fields, so that host C and device code agree on the
 *		layout; xpu_agg.h gives the meaning of keys and states.
 *
 * The table lives in GPU memory:
 *
 *	slots[n_slots]		open addressing, linear probing; a slot is 0 (empty),
 *						XPU_GAGG_SLOT_LOCKED (a thread is inserting a group
 *						there), or (hash >> 32) << 32 | (group id + 1)
 *	key_off[capacity]	where group g's key bytes start in arena
 *	key_len[capacity]	their length; XPU_GAGG_NO_KEY for a group id that
 *						was handed out but whose key did not fit the arena
 *	arena[arena_cap]	key bytes of the groups (xpu_agg.h's canonical form)
 *	states[capacity * n_aggs]	XpuAggState of group g, aggregate j at
 *						[g * n_aggs + j], initialised by kern_agg_init
 *
 * While a kernel runs, states are in their *GPU form* (the atomic mode of
 * xpu_agg_ops.h): as xpu_agg.h says, except that a state of an exact
 * integer sum (SUM_INT, SUM_NUMERIC, SUMSQ_INT, SUMSQ_NUMERIC: FINISH
 * xpu_agg_fin_wide in xpu_agg_kinds.h) keeps in `pad` (as int32) the number
 * of times its int128 wrapped (the exact sum is v + pad * 2^128, v
 * unsigned), a numeric MIN/MAX or a VAR_FLOAT state uses `pad` as its lock
 * (VAR_FLOAT's N, Sx and Sxx change together), and a MIN/MAX state holds a
 * sentinel (the largest/least value) while count is 0.  The host
 * makes each state xpu_agg.h's with xpu_agg_gpu_finish (the kind's FINISH
 * piece: XPU_AGGF_OVERFLOW unless a wide sum fits int128).
 *
 * HLL states.  A group's HLL aggregates keep their sketches in the table's
 * HLL area (hll[capacity * spec.hll_group_bytes], zeroed by the host before
 * kern_agg_init), aggregate j's at hll + g * hll_group_bytes + hll_off[j]:
 *
 *	XpuGaggHll			n: distinct hashes in the set; flags: XPU_GAGG_HLL_*
 *	slots[xpu_gagg_hll_slots(p)]	the explicit set: open addressing, linear
 *						probing, 0 = empty (the hash 0 is the flag ZERO)
 *	regs[2^p]			the registers (xpu_hll_update's), 4-byte words
 *						updated by a CAS that keeps each byte's maximum
 *
 * Every hash goes into the registers; it goes into the set too while the
 * set is not DENSE.  DENSE is set once more than XPU_HLL_EXPLICIT_LIMIT(p)
 * distinct hashes went into the set (n counts them; a set whose probe meets
 * no free slot holds more than that, every slot a distinct hash), and the
 * set is no longer updated.  So at the end a sketch is the distinct
 * hashes of its group (not DENSE: the set) or more than the limit of them
 * (DENSE: the registers, the maximum over every hash), which is exactly
 * what the CPU engine's sketch (xpu_agg.c) holds after
 * xpu_agg_table_finish.  The XpuAggState of an HLL aggregate counts the
 * non-NULL arguments and holds nothing else.  Without GROUP BY a block
 * keeps its own copy of the registers in shared memory where they fit
 * (spec.hll_smem_off), merged into the table's when its rows are done.
 *
 * Table full.  A row whose group is new when no group id, slot or arena
 * space is left is not folded: its row number goes to the launch's
 * overflow list (room for every row of the chunk) and XPU_GAGG_FULL is set.
 * The host then moves the table's groups to its own table, empties the GPU
 * table (kern_agg_init), grows it if it was too small, and runs the kernel
 * again over the overflow rows only.  So every row is folded exactly once.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_GPU_H
#define XPU_AGG_GPU_H

#include "xpu_agg.h"
#include "xpu_hll.h"

#define XPU_GAGG_SLOT_LOCKED	(~(uint64_t) 0)
#define XPU_GAGG_NO_KEY			0xFFFFFFFFu

/* XpuGaggTable.flags */
#define XPU_GAGG_FULL			0x0001

/* the largest group capacity (group ids + 1 must stay below 2^32 - 1) */
#define XPU_GAGG_MAX_CAPACITY	(1u << 30)

/* XpuGaggHll.flags */
#define XPU_GAGG_HLL_DENSE		0x0001	/* the set is past the explicit limit */
#define XPU_GAGG_HLL_ZERO		0x0002	/* the hash 0 is in the set */

/* XpuGaggSpec.hll_smem_off of an HLL aggregate without a shared copy */
#define XPU_GAGG_HLL_GLOBAL		0xFFFFFFFFu

/* the head of one HLL sketch in the table's HLL area (16 bytes) */
typedef struct XpuGaggHll
{
	uint32_t	n;				/* distinct hashes put in the set */
	uint32_t	flags;			/* XPU_GAGG_HLL_* */
	uint32_t	pad[2];
} XpuGaggHll;

/* slots of the explicit set at precision p: a power of 2, >= twice the limit */
XPU_HOST_DEVICE uint32_t
xpu_gagg_hll_slots(int p)
{
	uint32_t	need = 2 * XPU_HLL_EXPLICIT_LIMIT(p);
	uint32_t	n = 2;

	while (n < need)
		n *= 2;
	return n;
}

/* bytes of one HLL sketch at precision p (a multiple of 16) */
XPU_HOST_DEVICE uint32_t
xpu_gagg_hll_bytes(int p)
{
	return (uint32_t) sizeof(XpuGaggHll) + 8 * xpu_gagg_hll_slots(p) + (UINT32_C(1) << p);
}

/*
 * What the kernels need of the program and the XpuAggSpec, resolved on the
 * host (xpu_gagg_spec_build): registers and types instead of outs.
 */
typedef struct XpuGaggSpec
{
	int32_t		n_keys;
	int32_t		n_aggs;
	uint8_t		key_reg[XPU_AGG_MAX_KEYS];
	uint8_t		key_type[XPU_AGG_MAX_KEYS];
	uint8_t		agg_kind[XPU_AGG_MAX_AGGS];
	uint8_t		agg_reg[XPU_AGG_MAX_AGGS];	/* unused for COUNT_STAR */
	uint8_t		agg_type[XPU_AGG_MAX_AGGS];
	uint8_t		agg_param[XPU_AGG_MAX_AGGS];	/* HLL: the precision p */
	uint32_t	hll_off[XPU_AGG_MAX_AGGS];	/* HLL: its sketch in a group's HLL bytes */
	uint32_t	hll_smem_off[XPU_AGG_MAX_AGGS]; /* HLL without keys: its block copy
												 * of the registers in the shared
												 * HLL part; XPU_GAGG_HLL_GLOBAL: none */
	uint32_t	hll_group_bytes;	/* HLL bytes per group (0: no HLL aggregate) */
	uint32_t	hll_smem;		/* bytes of the shared HLL part of a block */
} XpuGaggSpec;

typedef struct XpuGaggTable
{
	uint64_t   *slots;
	uint64_t   *key_off;
	uint32_t   *key_len;
	uint8_t    *arena;
	XpuAggState *states;
	uint8_t    *hll;			/* [capacity * spec.hll_group_bytes]: HLL sketches */
	uint32_t	n_slots;		/* a power of 2, >= 2 * capacity */
	uint32_t	capacity;		/* group ids available */
	uint64_t	arena_cap;
	/* counters the kernels update (zeroed by kern_agg_init) */
	uint32_t	n_groups;		/* group ids handed out (may pass capacity) */
	uint32_t	flags;			/* XPU_GAGG_FULL */
	unsigned long long arena_used;	/* may pass arena_cap */
	unsigned long long max_key_len;	/* longest key that did not fit */
} XpuGaggTable;

/*
 * One launch's own results: the first error of the program, the rows that
 * passed the qual, and the overflow list's length (the list itself is the
 * launch's ovf_rows argument).  Zeroed by the host before the launch.
 */
typedef struct XpuGaggLaunch
{
	XpuError	err;
	unsigned long long rows_passed;
	uint32_t	n_overflow;
	uint32_t	pad;
	/* the rows that entered each join depth: a launch over the chunk's
	 * rows counts (one atomic a block a depth), one over an overflow list
	 * does not (those rows were counted) */
	unsigned long long join_in[XPU_JOIN_COUNT_DEPTHS];
} XpuGaggLaunch;

/*
 * An entry of a block's shared-memory cache of groups: the group id
 * (tag; -1 free, -2 being filled), its key's hash, length and bytes (keys
 * of at most XPU_GAGG_CACHE_KEY bytes are cached), and, elsewhere in shared
 * memory, n_aggs states that the block's rows of the group update.
 */
#define XPU_GAGG_CACHE_KEY	32

typedef struct XpuGaggCacheEntry
{
	int32_t		tag;
	uint32_t	len;
	uint64_t	hash;
	uint8_t		key[XPU_GAGG_CACHE_KEY];
} XpuGaggCacheEntry;

/*
 * One device-to-device copy of kern_copy_pieces: len bytes from src to dst
 * (device addresses).  The service's input path copies a launch's column
 * buffers from its pinned buffer to the same offsets of the slot's device
 * buffer in large copies, then these pieces place the ones that fill
 * entries of the GPU column cache (service/gpu_input.c).
 */
typedef struct XpuCopyPiece
{
	uint64_t	src;
	uint64_t	dst;
	uint64_t	len;
} XpuCopyPiece;

/* kern_copy_pieces' blocks per piece (gridDim.x; gridDim.y: the pieces) */
#define XPU_COPY_PIECE_BLOCKS	4

/*
 * Kernels (extern "C" names in the fatbin):
 *
 *	kern_agg_init(XpuGaggTable *t, XpuGaggSpec *spec)
 *		empties the table: slots, counters, every state to its start value
 *		(grid-stride: any geometry)
 *	kern_agg_exec(prog, prog_len, smem_prog, chunk, spec, t, rows, n_rows,
 *				  ovf_rows, launch, cache_entries, cancel)
 *		runs the program over the chunk's rows (rows == NULL) or over
 *		rows[0 .. n_rows - 1], and folds every passing row into t; a row
 *		whose group cannot be added goes to ovf_rows.  Each thread reads
 *		*cancel (device memory that the host sets with a copy on another
 *		stream) before its first row and then every XPU_GAGG_CANCEL_EVERY
 *		rows, and stops when it is nonzero (the run was canceled: the
 *		table's contents are then void).  Dynamic shared
 *		memory: xpu_gagg_smem_size(smem_prog, cache_entries, n_aggs); the
 *		program is copied there when smem_prog > 0 (= its length rounded up
 *		to 16), then the block's cache of cache_entries groups (0 or a
 *		power of 2):
 *		their states, then their XpuGaggCacheEntry; the cache is merged into
 *		t once per block; then spec.hll_smem bytes of HLL register copies.
 *	kern_copy_pieces(const XpuCopyPiece *pieces, uint32_t n)
 *		copies each of the n pieces (block row blockIdx.y: piece blockIdx.y,
 *		XPU_COPY_PIECE_BLOCKS blocks a piece, any block size)
 */
#define XPU_GAGG_BLOCK		256
/*
 * blocks of kern_agg_exec an SM holds at once: 4 caps its registers at 64
 * a thread (some spill); without the bound the compiler takes 128, two
 * blocks an SM, and the text-key and hll groupings run slower (figures:
 * bench/results/README.md).  GAGG_BLOCKS_PER_SM (service/gpu_agg_int.h)
 * sizes the grid to match.
 */
#define XPU_GAGG_MIN_BLOCKS	4
#define XPU_GAGG_CANCEL_EVERY	4	/* a power of 2 */
/* kern_agg_exec's list of a block's rows kept at the compact point (static shared memory) */
#define XPU_GAGG_CAND			(2 * XPU_GAGG_BLOCK)

static inline uint32_t
xpu_gagg_smem_size(uint32_t smem_prog, uint32_t cache_entries, int n_aggs)
{
	return smem_prog + cache_entries * (uint32_t) (sizeof(XpuGaggCacheEntry) +
												   (size_t) n_aggs * sizeof(XpuAggState));
}

/* the dynamic shared memory of kern_agg_exec with spec's HLL register copies */
static inline uint32_t
xpu_gagg_smem_total(uint32_t smem_prog, uint32_t cache_entries, const XpuGaggSpec *spec)
{
	return xpu_gagg_smem_size(smem_prog, cache_entries, spec->n_aggs) + spec->hll_smem;
}

#endif							/* XPU_AGG_GPU_H */
