/*-------------------------------------------------------------------------
 *
 * xpu_agg.h
 *		GROUP BY aggregation of the engine (GpuPreAgg): which aggregates a
 *		query asks for, the state each one keeps per group, the canonical
 *		byte form of a group's key, and the CPU engine's hash aggregation
 *		table (xpu_agg.c).  Plain data and plain C, shared by the service
 *		(which aggregates), the backend (which decodes the groups and
 *		finalizes them with PostgreSQL's own functions) and device code.
 *
 * How a query's aggregation is described.  The xPU program's QUAL stage
 * filters rows; its PROJ stage computes, for every passing row, the group
 * key registers and the aggregates' argument registers, named by the
 * program's outs[] (XpuResult values).  An XpuAggSpec then says which outs
 * are keys (key_outs[]) and, per aggregate, its kind and the out that holds
 * its argument (count(*) has none).  Register types (XPU_REGS) give the
 * key and argument types and numeric scales.
 *
 * Group keys.  Rows whose keys are equal in PostgreSQL's sense (the btree
 * equality of the key's type; text only in deterministic collations, which
 * is byte equality) form one group, NULLs included.  The key of a group is
 * kept as bytes, key after key, little-endian, unaligned:
 *
 *	1 byte		0 = NULL (nothing follows for this key), 1 = a value
 *	bool, int2/4/8, date, time, timestamp[tz]
 *				8 bytes: the int64 of XpuValue.i
 *	float4, float8
 *				8 bytes: the value as a double, with -0 stored as +0 and every
 *				NaN as one canonical NaN (PostgreSQL's float equality)
 *	numeric		16 bytes: the int128 at the register's scale
 *	text		4 bytes of length, then the bytes
 *
 * Equal keys have equal bytes, so grouping and hashing work on the bytes.
 *
 * Aggregate states (XpuAggState, 32 bytes per aggregate per group):
 *
 *	COUNT_STAR	count = rows
 *	COUNT		count = rows whose argument is not NULL
 *	SUM_INT		count, v.i128 = the sum of int2/int4/int8 arguments (exact;
 *				no overflow before 2^63 rows)
 *	SUM_NUMERIC	count, v.i128 = the sum of the argument at its register's
 *				scale; XPU_AGGF_OVERFLOW when it left int128 (the backend then
 *				evaluates the query in PostgreSQL)
 *	SUM_FLOAT	count, v.f8[0] = the sum as a double of float4/float8
 *				arguments; XPU_AGGF_OVERFLOW when a sum of finite values became
 *				infinite (PostgreSQL's float8pl raises an error there)
 *	MOMENTS		count = N, v.f8[0] = sum of x, v.f8[1] = sum of x * x, for
 *				avg of floats (same overflow rule; the sum of squares is there
 *				only for the overflow PostgreSQL's float8_accum can raise)
 *	SUM_FLOAT4	count, v.f4 = the sum of float4 arguments in float4
 *				arithmetic (PostgreSQL's float4pl); starts at -0, the identity
 *				of IEEE addition, so that a sum of -0 values stays -0 as
 *				PostgreSQL's (whose state starts from the first value) does;
 *				XPU_AGGF_OVERFLOW as for SUM_FLOAT
 *	SUMSQ_INT	count, v.i128 = the sum of x * x of int2/int4/int8 arguments;
 *				XPU_AGGF_OVERFLOW when it left int128 (int8 only)
 *	SUMSQ_NUMERIC count, v.i128 = the sum of x * x at twice the argument's
 *				register scale; XPU_AGGF_OVERFLOW when a square or the sum left
 *				int128.  With SUM_INT / SUM_NUMERIC over the same argument these
 *				are the exact N, sum(x), sum(x * x) of PostgreSQL's stddev and
 *				variance of integers and numerics.
 *	VAR_FLOAT	count = N, v.f8[0] = Sx, v.f8[1] = Sxx of float4/float8
 *				arguments: PostgreSQL's float8_accum state (Youngs-Cramer: Sxx
 *				is the sum of squared deviations from the mean), updated row by
 *				row as float8_accum does and combined as float8_combine does;
 *				XPU_AGGF_OVERFLOW where those raise an overflow error, and for
 *				arguments beyond XPU_AGG_MOMENTS_LIMIT (xpu_agg_ops.h)
 *	HLL			count = the non-NULL arguments; the distinct 64-bit hashes of
 *				the arguments (xpu_hll.h's hash of each value's canonical form,
 *				as pg_warp's hll_count and hll_sketch compute it) at precision
 *				p = XpuAggDesc.param: kept as the set of distinct hashes while
 *				there are at most XPU_HLL_EXPLICIT_LIMIT(p) of them, then as
 *				2^p registers (xpu_hll_update), exactly when pg_warp's own
 *				sketch (xpu_hll_sketch.h) changes representation, so
 *				that the backend rebuilds the very sketch PostgreSQL would
 *				have built.  The CPU table keeps the set in memory of its own
 *				(v.i points to it there); in an AGG_RESULT group, v.i is the
 *				number of bytes of the set that follow the group's states and
 *				pad is 0 for explicit hashes (8 bytes each, little-endian, in
 *				no order) or 1 for 2^p register bytes (xpu/protocol.h).  A
 *				table whose sets would take more than XpuAggDesc.limit MiB
 *				fails with XPU_ERR_FALLBACK.  Arguments: integer, float, text,
 *				bool, date, timestamp[tz] registers.
 *	MIN_TEXT, MAX_TEXT
 *				count, and the least/greatest text argument in the C
 *				collation (bytewise, a prefix first: PostgreSQL's text_smaller
 *				and text_larger there).  The CPU table keeps a copy (v.i points
 *				to it); in an AGG_RESULT group v.i is its length and its bytes
 *				follow the states as an HLL set's do.
 *
 * HLL, MIN_TEXT and MAX_TEXT states are the *extended* ones
 * (XPU_AGG_EXTENDED): their value does not fit the state, and the CPU
 * engine alone computes them.
 *	MIN, MAX	count, v = the least/greatest argument so far in its register
 *				form (i for integer and date/time types, f8 for floats,
 *				i128 for numeric); meaningless while count = 0.  Floats order
 *				as PostgreSQL's do: NaN above every other value.
 *
 * A state whose count is 0 after the whole input is PostgreSQL's NULL result
 * (sum, min, max and avg of no non-NULL value), except for COUNT/COUNT_STAR.
 *
 * A table without keys (n_keys = 0) holds exactly one group, with the empty
 * key, from its creation on: a query without GROUP BY returns one row even
 * over no input rows.  Keys of interval type, MIN/MAX of interval and
 * MIN/MAX of text (which MIN_TEXT/MAX_TEXT compute) are refused by
 * xpu_agg_table_create; xpu_agg_ops.h holds the
 * per-row bodies (key bytes, hash, state update and combine) that the CPU
 * table and device code share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_H
#define XPU_AGG_H

#include "xpu_program.h"
#include "xpu_agg_kinds.h"
#include "xpu_hll.h"

/* flags of an XpuAggState */
#define XPU_AGGF_OVERFLOW		0x0001

typedef struct XpuAggDesc
{
	uint8_t		kind;			/* XpuAggKind */
	uint8_t		param;			/* HLL: the precision p (XPU_HLL_MIN_BITS ..
								 * XPU_HLL_MAX_BITS); else 0 */
	uint16_t	out;			/* the program out holding the argument (unused for COUNT_STAR) */
	uint32_t	limit;			/* HLL: MiB of sets a table may hold; else 0 */
} XpuAggDesc;

typedef struct XpuAggState
{
	int64_t		count;
	uint32_t	flags;			/* XPU_AGGF_* */
	uint32_t	pad;
	union
	{
		__int128	i128;
		int64_t		i;
		double		f8[2];
		float		f4;
	}			v;
} XpuAggState;

#define XPU_AGG_MAX_KEYS		32
#define XPU_AGG_MAX_AGGS		64

/* what one query aggregates: see the file header */
typedef struct XpuAggSpec
{
	int			n_keys;
	const uint16_t *key_outs;	/* [n_keys] indexes into the program's outs */
	int			n_aggs;
	const XpuAggDesc *aggs;		/* [n_aggs] */
} XpuAggSpec;

#ifndef __CUDACC__
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The CPU engine's hash aggregation table (xpu_agg.c): one per thread, merged
 * at the end.  Functions that can fail return 0 and set *err (XPU_ERR_INTERNAL
 * with "out of memory" when an allocation fails; the table stays usable for
 * xpu_agg_table_free).
 */
typedef struct XpuAggTable XpuAggTable;

/* a table for spec (copied) over prog's registers; NULL: out of memory or a
 * spec the program does not fit (reason in err) */
extern XpuAggTable *xpu_agg_table_create(const XpuProgram *prog,
										 const XpuAggSpec *spec, XpuError *err);
extern void xpu_agg_table_free(XpuAggTable *t);

/* folds the rows of res with mask[row] != 0 (all nrows rows when res->mask is
 * NULL) into the table */
extern int	xpu_agg_table_update(XpuAggTable *t, const XpuResult *res,
								 XpuError *err);

/*
 * the same, where dict_cols[k] (NULL: none) is the dictionary-encoded
 * column whose rows output k of res is (xpu_cpu_dict_outs, xpu_dict.h):
 * keys of such columns are grouped on their indices (xpu_agg_index.h)
 */
extern int	xpu_agg_table_update_dict(XpuAggTable *t, const XpuResult *res,
									  const XpuColumnData *const *dict_cols,
									  XpuError *err);

/*
 * skip[k] (n_outs of them) = 1 where output k need not be loaded for
 * xpu_agg_table_update_dict with dict_cols (xpu_cpu_exec_skip): a
 * dictionary key column that no aggregate reads, whose values the table
 * takes from the dictionary where it needs them; returns how many
 */
extern int	xpu_agg_table_dict_skip(const XpuAggTable *t, int n_outs,
									const XpuColumnData *const *dict_cols,
									uint8_t *skip);

/*
 * xpu_agg_sink: an XpuResultSink (xpu_cpu_exec_each, for a program whose
 * rows expand) that folds the rows into an aggregation table: arg an
 * XpuAggSink, whose rows counts the rows folded
 */
typedef struct XpuAggSink
{
	XpuAggTable *table;
	uint64_t	rows;
} XpuAggSink;

extern int	xpu_agg_sink(void *arg, const XpuResult *res, XpuError *err);

/* folds every group of src into dst (same program and spec) */
extern int	xpu_agg_table_merge(XpuAggTable *dst, const XpuAggTable *src,
								XpuError *err);

/*
 * folds into dst the groups of src in partition part (0 <= part < nparts)
 * of nparts: the groups' keys fall into nparts disjoint partitions (by
 * their hash), so that nparts threads can merge the same tables into
 * nparts tables of their own at once, which then hold every group once
 */
extern int	xpu_agg_table_merge_part(XpuAggTable *dst, const XpuAggTable *src,
									 int part, int nparts, XpuError *err);

/*
 * Partitioned aggregation, for many groups.  A table given a spill limit
 * (xpu_agg_table_set_spill; tables with HLL aggregates and tables without
 * keys never spill) moves all its groups, once an update leaves it with
 * limit groups or more, into XPU_AGG_PARTS buffers by partition of their
 * hash (hash_part in xpu_agg.c, as xpu_agg_table_merge_part's), and goes on
 * from an empty hash that stays small enough for the caches; the same key
 * may then be in several buffers and in the hash.  A table that spilled
 * holds its groups for merging only: xpu_agg_table_merge_part(dst, src, p,
 * XPU_AGG_PARTS, err) folds src's groups of partition p (its buffer p and
 * the groups of its hash in p) into dst, so that one thread a partition
 * merges the tables into XPU_AGG_PARTS disjoint tables of a partition's
 * groups each; ngroups and group see the groups of its hash alone.
 */
#define XPU_AGG_PARTS			64

extern void xpu_agg_table_set_spill(XpuAggTable *t, int64_t limit);
/* moves t's groups into its buffers now (nothing for a table that never
 * spills); 0 with err set when memory runs out */
extern int	xpu_agg_table_spill(XpuAggTable *t, XpuError *err);
/* makes room in t for groups groups in all (no growth until then); 0 with
 * err set when memory runs out */
extern int	xpu_agg_table_reserve(XpuAggTable *t, int64_t groups, XpuError *err);
/* has t spilled groups (its result must then be merged by partitions) */
extern int	xpu_agg_table_spilled(const XpuAggTable *t);

/* folds one group (key bytes and n_aggs states, e.g. from a GPU's table)
 * into t */
extern int	xpu_agg_table_fold_group(XpuAggTable *t, const uint8_t *key,
									 uint32_t key_len,
									 const XpuAggState *states, XpuError *err);

/*
 * folds a sketch of HLL aggregate a of the group with key (key, key_len)
 * into t: len / 8 hashes (8 bytes each, little-endian, any order, repeats
 * allowed) or, with dense, 2^p registers (e.g. from a GPU's table; its
 * states go in with xpu_agg_table_fold_group); 0 with err set on failure
 * (FALLBACK past the aggregate's limit)
 */
extern int	xpu_agg_table_fold_hll(XpuAggTable *t, const uint8_t *key, uint32_t key_len,
								   int a, int dense, const uint8_t *data, uint32_t len,
								   XpuError *err);

extern int64_t xpu_agg_table_ngroups(const XpuAggTable *t);

/* group i (0 <= i < ngroups): its key bytes and its n_aggs states */
extern void xpu_agg_table_group(const XpuAggTable *t, int64_t i,
								const uint8_t **key, uint32_t *key_len,
								const XpuAggState **states);

/* the OR of the flags of every state of every group: XPU_AGGF_OVERFLOW
 * there makes the run's result a fallback */
extern uint32_t xpu_agg_table_flags(const XpuAggTable *t);

/* bytes of memory the table holds now */
extern size_t xpu_agg_table_memory(const XpuAggTable *t);

/*
 * The few-values shortcut of the group lookup (xpu_agg_dict.h): 1 on, -1
 * off for good, 0 not tried yet; *hits (NULL: not asked) the blocks of rows
 * it found every group of
 */
extern int	xpu_agg_table_shortcut(const XpuAggTable *t, int64_t *hits);

/*
 * After the last update or merge: every HLL set of t in its final form
 * (distinct explicit hashes, or registers once there are more than the
 * explicit limit); 0 with err set (FALLBACK past the limit, or out of
 * memory) when that fails
 */
extern int	xpu_agg_table_finish(XpuAggTable *t, XpuError *err);

/*
 * The value of extended state s (XPU_AGG_EXTENDED kind) of a finished
 * table: its bytes (*data, as an AGG_RESULT group carries them) and *flag
 * (HLL: 1 for registers, 0 for explicit hashes; else 0); returns their length
 */
extern uint32_t xpu_agg_extra_export(int kind, const XpuAggState *s, const uint8_t **data,
									 int *flag);

/*
 * The state an aggregate starts from and how two states combine (the merge of
 * per-thread and per-task tables); type is the argument register's XpuType.
 */
extern void xpu_agg_state_init(XpuAggState *s, XpuAggKind kind);
extern void xpu_agg_state_combine(XpuAggState *dst, const XpuAggState *src,
								  XpuAggKind kind, XpuType type);

/* the canonical key bytes of one row's key values (see the file header):
 * returns the length; writes at most cap bytes (a longer key is not written
 * but its length is still returned) */
extern size_t xpu_agg_key_encode(const XpuProgram *prog, const XpuAggSpec *spec,
								 const XpuResult *res, int64_t row,
								 uint8_t *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif							/* !__CUDACC__ */

#endif							/* XPU_AGG_H */
