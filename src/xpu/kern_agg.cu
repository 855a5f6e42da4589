/*-------------------------------------------------------------------------
 *
 * kern_agg.cu
 *		GROUP BY aggregation on the GPU (GpuPreAgg): runs an xPU program
 *		(QUAL, then PROJ: xpu_interp.h's per-row form) over a chunk of Arrow
 *		columns and folds every passing row into the hash table of
 *		xpu_agg_gpu.h, whose contract (layout, table full, launch) this file
 *		implements; xpu_agg.h defines the key bytes and the states.
 *
 * Per row: the group's key is hashed from the key registers; the thread
 * finds the group in the global table (its key bytes compared with the
 * registers) or adds it (a CAS locks the empty slot, an atomic counter
 * gives the group id, the key is written to the arena, then the slot is
 * published).  The aggregates update the group's states with atomics: in a
 * block-local cache of states in shared memory when the group has (or
 * gets) an entry there, else in the global table; the cache is merged into
 * the global table once per block.  Without GROUP BY and with few
 * aggregates each thread accumulates in registers, then once into the
 * block's shared state, which goes to the table with one set of atomics
 * per block.  HLL aggregates keep sketches beside the states (xpu_agg_gpu.h):
 * each row's hash raises a register with a CAS only when it is greater
 * (in a per-block shared copy without GROUP BY, merged once per block) and
 * enters the group's explicit set until that is past the explicit limit.
 *
 * Each block walks a range of the chunk's rows of its own.  A program with
 * a compact point (xpu_program_compact_point: a MASK_PUSH_TRUE r0 after
 * which nothing runs for the rows no longer active and they cannot pass,
 * such as the one after a star query's first join depth) runs in two
 * passes: each thread runs its row to just after that push, the rows
 * still active go to a list in shared memory, and once the list holds a
 * block's worth each thread runs the whole program for one of them and
 * folds it (gagg_rows_compacted).
 * The rest of the program and the fold then run with every lane of a warp
 * busy, where a row at a time they ran, a warp at a time, for the few rows
 * that a selective join keeps (SSB SF 20 on the H200: the 13 queries' warm
 * runs 24.3 -> 16.1 ms, geometric mean; bench/results/README.md).  Other
 * programs, and those whose rows expand, walk a row at a time
 * (gagg_rows_each_row).
 *
 * The key bytes and every aggregate's init, update and combine are
 * xpu_agg_ops.h's, the bodies the CPU engine runs (xpu_agg_kinds.h names
 * them per kind); the template flag A of the "gagg_" wrappers selects their
 * atomic mode (the table and the block cache, in the GPU form of
 * xpu_agg_gpu.h) or their plain one (a thread's own states).
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_interp.h"
#include "xpu_agg_gpu.h"
#include "xpu_agg_ops.h"

/* aggregates a thread can accumulate in its own states (the no-key path) */
#define GAGG_LOCAL_AGGS		16
/* probes of the block-local cache before a group goes to the global table */
#define GAGG_CACHE_PROBES	8
/* gagg_warp_update: at most this many destinations a warp, with this many rows each on average */
#define GAGG_WARP_DESTS		4
#define GAGG_WARP_SHARE		4

/* ---------------- key bytes and hash ---------------- */

XPU_DEVICE uint64_t
gagg_mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	return h * UINT64_C(0xff51afd7ed558ccd);
}

XPU_DEVICE uint64_t
gagg_fmix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/*
 * gagg_key_hash: the key's length in bytes (xpu_agg.h's form) into *len and
 * a 64-bit hash; equal keys have equal hashes
 */
XPU_DEVICE uint64_t
gagg_key_hash(const XpuGaggSpec *sp, const XpuValue *regs, const uint8_t *nulls,
			  uint32_t *len)
{
	uint64_t	h = 0;
	uint32_t	n = 0;

	for (int k = 0; k < sp->n_keys; k++)
	{
		const XpuValue *v = &regs[sp->key_reg[k]];
		int			type = sp->key_type[k];

		n += 1;
		if (nulls[sp->key_reg[k]])
		{
			h = gagg_mix(h, 0x6e756c6cu);
			continue;
		}
		if (type == XPU_T_TEXT)
		{
			uint64_t	w = 0;
			int32_t		i;

			for (i = 0; i < v->t.len; i++)
			{
				w = (w << 8) | (uint8_t) v->t.p[i];
				if ((i & 7) == 7)
				{
					h = gagg_mix(h, w);
					w = 0;
				}
			}
			h = gagg_mix(h, w ^ ((uint64_t) v->t.len << 40));
			n += 4 + (uint32_t) v->t.len;
		}
		else if (type == XPU_T_NUMERIC)
		{
			h = gagg_mix(h, (uint64_t) v->n);
			h = gagg_mix(h, (uint64_t) (v->n >> 64));
			n += 16;
		}
		else
		{
			h = gagg_mix(h, xpu_agg_key_word(type, v));
			n += 8;
		}
	}
	*len = n;
	return gagg_fmix(h);
}

/* writes the key's bytes at dst (xpu_agg_key_value_put, the CPU table's writer) */
XPU_DEVICE void
gagg_key_write(const XpuGaggSpec *sp, const XpuValue *regs, const uint8_t *nulls,
			   uint8_t *dst)
{
	for (int k = 0; k < sp->n_keys; k++)
		dst += xpu_agg_key_value_put(dst, sp->key_type[k], &regs[sp->key_reg[k]],
									 nulls[sp->key_reg[k]]);
}

/*
 * Loads of stored key bytes.  L2: bytes of the global arena that another
 * thread may have written during this kernel, read through L2 (ld.cg),
 * never from a stale L1 line; else bytes of the block's shared cache,
 * written by another thread of the block (volatile).
 */
template <bool L2> XPU_DEVICE uint8_t
gagg_ld(const uint8_t *p)
{
	if (L2)
		return __ldcg(p);
	return *(const volatile uint8_t *) p;
}

template <bool L2> XPU_DEVICE uint64_t
gagg_ld_le(const uint8_t *p, int n)
{
	uint64_t	w = 0;

	for (int i = 0; i < n; i++)
		w |= (uint64_t) gagg_ld<L2>(p + i) << (8 * i);
	return w;
}

/* do the key registers equal the key bytes at p (of the same length) */
template <bool L2> XPU_DEVICE int
gagg_key_equal(const XpuGaggSpec *sp, const XpuValue *regs, const uint8_t *nulls,
			   const uint8_t *p)
{
	for (int k = 0; k < sp->n_keys; k++)
	{
		const XpuValue *v = &regs[sp->key_reg[k]];
		int			type = sp->key_type[k];
		uint8_t		flag = gagg_ld<L2>(p++);

		if (nulls[sp->key_reg[k]])
		{
			if (flag != 0)
				return 0;
			continue;
		}
		if (flag != 1)
			return 0;
		if (type == XPU_T_TEXT)
		{
			if ((int32_t) gagg_ld_le<L2>(p, 4) != v->t.len)
				return 0;
			p += 4;
			for (int32_t i = 0; i < v->t.len; i++)
				if (gagg_ld<L2>(p + i) != (uint8_t) v->t.p[i])
					return 0;
			p += v->t.len;
		}
		else if (type == XPU_T_NUMERIC)
		{
			if (gagg_ld_le<L2>(p, 8) != (uint64_t) v->n ||
				gagg_ld_le<L2>(p + 8, 8) != (uint64_t) (v->n >> 64))
				return 0;
			p += 16;
		}
		else
		{
			if (gagg_ld_le<L2>(p, 8) != xpu_agg_key_word(type, v))
				return 0;
			p += 8;
		}
	}
	return 1;
}

/* ---------------- the global table ---------------- */

XPU_DEVICE void
gagg_set_full(XpuGaggTable *t)
{
	atomicOr(&t->flags, XPU_GAGG_FULL);
}

/*
 * gagg_new_group: a group id and arena space for a key of len bytes, the
 * key written; -1 (table full) when either is exhausted
 */
XPU_DEVICE int64_t
gagg_new_group(XpuGaggTable *t, const XpuGaggSpec *sp, const XpuValue *regs,
			   const uint8_t *nulls, uint32_t len)
{
	uint32_t	gid;
	unsigned long long off;

	if (*(volatile uint32_t *) &t->flags & XPU_GAGG_FULL)
		return -1;
	gid = atomicAdd(&t->n_groups, 1u);
	if (gid >= t->capacity)
	{
		gagg_set_full(t);
		return -1;
	}
	off = atomicAdd(&t->arena_used, (unsigned long long) len);
	if (off + len > t->arena_cap)
	{
		t->key_len[gid] = XPU_GAGG_NO_KEY;
		atomicMax(&t->max_key_len, (unsigned long long) len);
		gagg_set_full(t);
		return -1;
	}
	gagg_key_write(sp, regs, nulls, t->arena + off);
	t->key_off[gid] = off;
	t->key_len[gid] = len;
	return gid;
}

/*
 * gagg_find_group: the id in t of the row's group, whose key has hash h and
 * len bytes, added if new; -1 when it is new and the table is full
 */
XPU_DEVICE int64_t
gagg_find_group(XpuGaggTable *t, const XpuGaggSpec *sp, const XpuValue *regs,
				const uint8_t *nulls, uint64_t h, uint32_t len)
{
	uint32_t	tag = (uint32_t) (h >> 32);
	uint32_t	mask = t->n_slots - 1;
	uint32_t	pos = (uint32_t) h & mask;

	for (uint32_t probe = 0; probe < t->n_slots;)
	{
		unsigned long long *slot = (unsigned long long *) &t->slots[pos];
		uint64_t	s = *(volatile unsigned long long *) slot;

		while (s == XPU_GAGG_SLOT_LOCKED)
			s = *(volatile unsigned long long *) slot;
		if (s == 0)
		{
			s = atomicCAS(slot, 0ull, (unsigned long long) XPU_GAGG_SLOT_LOCKED);
			if (s == 0)
			{
				int64_t		gid = gagg_new_group(t, sp, regs, nulls, len);

				__threadfence();
				atomicExch(slot, gid < 0 ? 0ull :
						   ((unsigned long long) tag << 32) | (unsigned long long) (gid + 1));
				return gid;
			}
			continue;			/* another thread took it: look again */
		}
		if ((uint32_t) (s >> 32) == tag)
		{
			uint32_t	gid = (uint32_t) s - 1;

			uint64_t	off = __ldcg((const unsigned long long *) &t->key_off[gid]);

			if (__ldcg(&t->key_len[gid]) == len &&
				gagg_key_equal<true>(sp, regs, nulls, t->arena + off))
				return gid;
		}
		pos = (pos + 1) & mask;
		probe++;
	}
	gagg_set_full(t);
	return -1;
}

/* ---------------- states: xpu_agg_ops.h's pieces ---------------- */

/*
 * The modes of xpu_agg_ops.h: a thread's own states are plain (A false),
 * the table's and the block cache's are updated with atomics (A true) and
 * hold the GPU form of xpu_agg_gpu.h
 */
#define GAGG_MODE(A)	((A) ? XPU_AGG_ATOMIC : XPU_AGG_PLAIN)

/* folds aggregate j's argument of one passing row into st, that aggregate's state of the row's group */
template <bool A> XPU_DEVICE void
gagg_update_one(XpuAggState *st, const XpuGaggSpec *sp, int j, const XpuValue *regs,
				const uint8_t *nulls)
{
	int			r = sp->agg_reg[j];

	xpu_agg_update_mode(st, sp->agg_kind[j], sp->agg_type[j], &regs[r], nulls[r],
						GAGG_MODE(A));
}

/* folds one passing row into the states of its group */
template <bool A> XPU_DEVICE void
gagg_update_row(XpuAggState *states, const XpuGaggSpec *sp, const XpuValue *regs,
				const uint8_t *nulls)
{
	for (int j = 0; j < sp->n_aggs; j++)
		gagg_update_one<A>(&states[j], sp, j, regs, nulls);
}

/* combines the plain state src into dst: with atomics (A), else plainly (dst a thread's own) */
template <bool A> XPU_DEVICE void
gagg_combine(XpuAggState *dst, const XpuAggState *src, int kind, int type)
{
	xpu_agg_combine_mode(dst, src, kind, type, GAGG_MODE(A));
}

/* ---------------- updates the lanes of a warp share ---------------- */

/* a state of lane (threadIdx.x % 32) ^ mask */
XPU_DEVICE void
gagg_shfl_xor_state(XpuAggState *out, const XpuAggState *in, int mask)
{
	const unsigned long long *w = (const unsigned long long *) in;
	unsigned long long *o = (unsigned long long *) out;

	static_assert(sizeof(XpuAggState) == 4 * sizeof(unsigned long long),
				  "an XpuAggState is shuffled as four words");
	for (int k = 0; k < 4; k++)
		o[k] = __shfl_xor_sync(0xffffffffu, w[k], mask);
}

/*
 * gagg_warp_update: folds what each lane of the warp brings into its
 * destination st (its group's states; NULL: nothing), when the lanes share
 * few destinations: the rows of one group (no GROUP BY, or a handful of
 * groups) would otherwise update one state one lane at a time, and the
 * states updated under a lock (VAR_FLOAT, numeric MIN/MAX) or by a CAS
 * loop serialise every lane of every block on it.  Per destination and
 * aggregate, each lane puts its part into a state of its own (the identity
 * for lanes of another destination), the warp sums these by shuffles, and
 * the destination's first lane combines the sum with atomics: one atomic
 * update per destination and aggregate instead of one per row.  A lane
 * brings its row (regs, nulls; src NULL) or its states src[n_aggs].  Every
 * lane calls it; it returns false, having done nothing, when the lanes
 * have more than GAGG_WARP_DESTS destinations or fewer than
 * GAGG_WARP_SHARE rows a destination on average (then the lanes update one
 * by one, each on a state other lanes seldom touch).
 */
XPU_DEVICE int
gagg_warp_update(XpuAggState *st, const XpuGaggSpec *sp, const XpuValue *regs,
				 const uint8_t *nulls, const XpuAggState *src)
{
	unsigned	lane = threadIdx.x & 31u;
	unsigned	peers = __match_any_sync(0xffffffffu, (unsigned long long) (uintptr_t) st);
	unsigned	firsts = __ballot_sync(0xffffffffu,
									   st != NULL && (peers & ((1u << lane) - 1u)) == 0);
	unsigned	n_dests = __popc(firsts);

	if (n_dests > GAGG_WARP_DESTS ||
		__popc(__ballot_sync(0xffffffffu, st != NULL)) < GAGG_WARP_SHARE * n_dests)
		return 0;
	for (; firsts != 0; firsts &= firsts - 1u)
	{
		int			first = __ffs(firsts) - 1;
		XpuAggState *dst = (XpuAggState *) (uintptr_t)
			__shfl_sync(0xffffffffu, (unsigned long long) (uintptr_t) st, first);
		int			mine = st == dst;

		for (int j = 0; j < sp->n_aggs; j++)
		{
			int			kind = sp->agg_kind[j];
			int			type = sp->agg_type[j];
			XpuAggState sum, other;

			xpu_agg_init_mode(&sum, kind, type, XPU_AGG_PLAIN);
			if (mine && src != NULL)
				gagg_combine<false>(&sum, &src[j], kind, type);
			else if (mine)
				gagg_update_one<false>(&sum, sp, j, regs, nulls);
			for (int m = 16; m > 0; m >>= 1)
			{
				gagg_shfl_xor_state(&other, &sum, m);
				gagg_combine<false>(&sum, &other, kind, type);
			}
			if ((int) lane == first)
				gagg_combine<true>(&dst[j], &sum, kind, type);
		}
	}
	return 1;
}

/* ---------------- HLL sketches: kern_agg_hll.h ---------------- */

#include "kern_agg_hll.h"

/* ---------------- the block-local cache ---------------- */

/*
 * gagg_cache_find: the block's cached states of the row's group (hash h,
 * len key bytes) with its group id in *gid; NULL when the probes do not find
 * it, with *free_pos a free entry met on the way (-1: none)
 */
XPU_DEVICE XpuAggState *
gagg_cache_find(XpuGaggCacheEntry *ce, XpuAggState *cstates, uint32_t entries,
				const XpuGaggSpec *sp, const XpuValue *regs, const uint8_t *nulls,
				uint64_t h, uint32_t len, int64_t *gid, int32_t *free_pos)
{
	uint32_t	pos;

	*free_pos = -1;
	if (entries == 0 || len > XPU_GAGG_CACHE_KEY)
		return NULL;
	pos = (uint32_t) h & (entries - 1);
	for (int i = 0; i < GAGG_CACHE_PROBES; i++)
	{
		volatile XpuGaggCacheEntry *e = &ce[pos];
		int32_t		tag = e->tag;

		if (tag == -1)
		{
			*free_pos = (int32_t) pos;
			return NULL;
		}
		if (tag >= 0 && e->hash == h && e->len == len &&
			gagg_key_equal<false>(sp, regs, nulls, (const uint8_t *) ce[pos].key))
		{
			*gid = tag;
			return &cstates[(size_t) pos * sp->n_aggs];
		}
		pos = (pos + 1) & (entries - 1);
	}
	return NULL;
}

/*
 * gagg_cache_add: claims free entry pos for group gid (key hash h, len
 * bytes): its states, or NULL when another thread took the entry first
 * (then the row updates the global table)
 */
XPU_DEVICE XpuAggState *
gagg_cache_add(XpuGaggCacheEntry *ce, XpuAggState *cstates, int32_t pos, int64_t gid,
			   const XpuGaggSpec *sp, const XpuValue *regs, const uint8_t *nulls,
			   uint64_t h, uint32_t len)
{
	if (pos < 0 || atomicCAS(&ce[pos].tag, -1, -2) != -1)
		return NULL;
	ce[pos].hash = h;
	ce[pos].len = len;
	gagg_key_write(sp, regs, nulls, ce[pos].key);
	__threadfence_block();
	*(volatile int32_t *) &ce[pos].tag = (int32_t) gid;
	return &cstates[(size_t) pos * sp->n_aggs];
}

/*
 * gagg_states_of: the states the row's group (hash h, len key bytes)
 * updates: the block's cached ones, else the table's (the group added to
 * the table and to the cache if new), its group id in *gidp; NULL when the
 * table is full
 */
XPU_DEVICE XpuAggState *
gagg_states_of(XpuGaggTable *t, const XpuGaggSpec *sp, XpuGaggCacheEntry *ce,
			   XpuAggState *cstates, uint32_t entries, const XpuValue *regs,
			   const uint8_t *nulls, uint64_t h, uint32_t len, int64_t *gidp)
{
	int64_t		gid = 0;
	int32_t		free_pos;
	XpuAggState *st = gagg_cache_find(ce, cstates, entries, sp, regs, nulls, h, len,
									  &gid, &free_pos);

	*gidp = gid;
	if (st != NULL)
		return st;
	if (sp->n_keys > 0)
		gid = gagg_find_group(t, sp, regs, nulls, h, len);
	*gidp = gid;
	if (gid < 0)
		return NULL;
	st = gagg_cache_add(ce, cstates, free_pos, gid, sp, regs, nulls, h, len);
	return st != NULL ? st : &t->states[(size_t) gid * sp->n_aggs];
}

/* ---------------- kernels ---------------- */

/*
 * kern_copy_pieces: piece blockIdx.y of pieces[0 .. n - 1] copied by its
 * gridDim.x blocks, 16 bytes a thread where both ends are 16-byte aligned
 */
XPU_KERNEL void
kern_copy_pieces(const XpuCopyPiece *pieces, uint32_t n)
{
	uint64_t	tid = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t	step = (uint64_t) gridDim.x * blockDim.x;
	uint64_t	len,
				head = 0;
	const uint8_t *src;
	uint8_t    *dst;

	if (blockIdx.y >= n)
		return;
	len = pieces[blockIdx.y].len;
	src = (const uint8_t *) pieces[blockIdx.y].src;
	dst = (uint8_t *) pieces[blockIdx.y].dst;
	if ((((uintptr_t) src | (uintptr_t) dst) & 15) == 0)
	{
		head = len / 16 * 16;
		for (uint64_t i = tid; i < len / 16; i += step)
			((uint4 *) dst)[i] = ((const uint4 *) src)[i];
	}
	for (uint64_t i = head + tid; i < len; i += step)
		dst[i] = src[i];
}

/* empties the table (xpu_agg_gpu.h) */
XPU_KERNEL void
kern_agg_init(XpuGaggTable *t, const XpuGaggSpec *sp)
{
	uint64_t	stride = (uint64_t) gridDim.x * blockDim.x;
	uint64_t	n_states = (uint64_t) t->capacity * sp->n_aggs;
	uint64_t	i;

	for (i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < t->n_slots; i += stride)
		t->slots[i] = 0;
	for (i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < t->capacity; i += stride)
		t->key_len[i] = XPU_GAGG_NO_KEY;
	for (i = (uint64_t) blockIdx.x * blockDim.x + threadIdx.x; i < n_states; i += stride)
		xpu_agg_init_mode(&t->states[i], sp->agg_kind[i % sp->n_aggs],
						  sp->agg_type[i % sp->n_aggs], XPU_AGG_ATOMIC);
	if (blockIdx.x == 0 && threadIdx.x == 0)
	{
		t->n_groups = 0;
		t->flags = 0;
		t->arena_used = 0;
		t->max_key_len = 0;
	}
}

/*
 * The interpreter's copies.  xpu_row_go is inlined where it is called, and
 * its opcode table is most of the kernel's code: each call site costs
 * ptxas minutes (ten of them made the fatbin the longest step of a build).
 * Out of line, each run costs a call: with every run out of line the
 * kernels of gpu_aggcheck's bench took 40 % longer for q1 (a filter-sum)
 * and 16 % for q2 (two text keys) on the H200.  So the per-row runs each
 * have one inlined call site that loops over their steps (gagg_eval; the
 * two passes of gagg_rows_compacted), and the runs that are not per row
 * (the hoisted constants) or rare (an expanding row's further matches)
 * call gagg_row_go, the one copy out of line.
 */

/* xpu_row_go, out of line */
__device__ __noinline__ int
gagg_row_go(const XpuProgram *prog, int begin, int end, const XpuChunk *chunk,
			const XpuColumnData *cols, int64_t row, XpuValue *regs, uint8_t *nulls,
			int active, uint64_t *stack, XpuEach *each, uint64_t *probes, XpuError *err)
{
	return xpu_row_go(prog, begin, end, chunk, cols, row, regs, nulls, active, stack, each,
					  probes, err);
}

/* the pass test of a row after its JOIN stage, and PROJ when it passes */
XPU_DEVICE int
gagg_pass(const XpuProgram *prog, const XpuChunk *chunk, const XpuColumnData *cols,
		  int64_t row, XpuValue *regs, uint8_t *nulls, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	uint64_t	stack = 0;

	if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
		return 0;
	(void) gagg_row_go(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, cols, row, regs,
					   nulls, 1, &stack, NULL, NULL, err);
	return 1;
}

/*
 * GaggPart: a thread's last part of the chunk (xpu_chunk_part): its rows
 * [lo, hi) and columns, so that the next row, which is most often in the
 * same part, needs no search
 */
typedef struct GaggPart
{
	int64_t		lo;
	int64_t		hi;
	const XpuColumnData *cols;
} GaggPart;

/* the columns of chunk row row, *in_part its row within them */
XPU_DEVICE const XpuColumnData *
gagg_part_of(const XpuChunk *chunk, int64_t row, GaggPart *pc, int64_t *in_part)
{
	if (row < pc->lo || row >= pc->hi)
	{
		int32_t		k = chunk->n_parts > 1 ? xpu_chunk_part_index(chunk, row) : 0;

		pc->lo = chunk->n_parts > 1 ? chunk->parts[k].first_row : 0;
		pc->hi = k + 1 < chunk->n_parts ? chunk->parts[k + 1].first_row : chunk->nrows;
		pc->cols = chunk->n_parts > 1 ? chunk->parts[k].cols : chunk->cols;
	}
	*in_part = row - pc->lo;
	return pc->cols;
}

/*
 * gagg_nulls_reset: the null flags a row starts from (null0) into nulls,
 * 16 at a time (both 16-byte aligned, XPU_MAX_REGS + 1 long)
 */
XPU_DEVICE void
gagg_nulls_reset(const XpuProgram *prog, uint8_t *nulls, const uint8_t *null0)
{
	for (int k = 0; k < (prog->n_regs + 15) / 16; k++)
		((uint4 *) nulls)[k] = ((const uint4 *) null0)[k];
}

/*
 * gagg_eval: runs LOAD, QUAL and JOIN for row row of cols (a part of the
 * chunk, gagg_part_of), and PROJ when it passes (gagg_pass's test; one
 * call site of the interpreter for both runs);
 * returns whether it passed (xpu_row_eval's contract, without results).
 * The program's hoisted constants already hold their registers (run once
 * by gagg_hoisted_setup); null0 is the null flags every row starts from
 * (gagg_nulls_reset).
 * each: NULL, or for a program whose rows expand (xpu_program_expands_over)
 * where the row's probes of every match open their points: the row's
 * first combination of matches; gagg_eval_next the others.  probes: NULL,
 * or the thread's counts of the rows entering each join depth.
 */
XPU_DEVICE int
gagg_eval(const XpuProgram *prog, const XpuChunk *chunk, const XpuColumnData *cols,
		  int64_t row, XpuValue *regs, uint8_t *nulls, const uint8_t *null0, XpuEach *each,
		  uint64_t *probes, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	int			begin = prog->n_hoisted,
				end = st[XPU_STAGE_GROUP];

	gagg_nulls_reset(prog, nulls, null0);
	if (each != NULL)
		xpu_each_open(each, regs, nulls, cols, row, probes);	/* xpu_row_each_first_counted */
#pragma unroll 1
	for (int step = 0;; step++)
	{
		uint64_t	stack = 0;

		(void) xpu_row_go(prog, begin, end, chunk, cols, row, regs, nulls, 1, &stack, each,
						  probes, err);
		if (step == 1)
			return 1;
		if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
			return 0;
		/* PROJ, as xpu_row_run: no probe of every match, no counts */
		begin = st[XPU_STAGE_PROJ];
		end = st[XPU_N_STAGES];
		each = NULL;
		probes = NULL;
	}
}

/*
 * gagg_eval_next: the next combination of the matches of the row that
 * gagg_eval began with each (each->n > 0: one is left); returns whether
 * it passed.  Out of line: only rows with several matches come here.
 */
__device__ __noinline__ int
gagg_eval_next(const XpuProgram *prog, const XpuChunk *chunk, XpuValue *regs,
			   uint8_t *nulls, XpuEach *each, XpuError *err)
{
	if (!xpu_row_each_next(prog, chunk, each, err))
		return 0;
	return gagg_pass(prog, chunk, each->cols, each->row, regs, nulls, err);
}

/* the program and the spec into shared memory, the cache and the HLL copies emptied */
XPU_DEVICE const XpuProgram *
gagg_block_setup(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_prog,
				 const XpuGaggSpec *gspec, XpuGaggSpec *sp, uint4 *smem,
				 XpuAggState *cstates, XpuGaggCacheEntry *ce, uint32_t entries,
				 uint8_t *hsmem)
{
	const XpuProgram *prog = gprog;

	if (smem_prog >= prog_len && prog_len > 0)
	{
		for (uint32_t i = threadIdx.x; i < (prog_len + 15) / 16; i += blockDim.x)
			smem[i] = ((const uint4 *) gprog)[i];
		prog = (const XpuProgram *) smem;
	}
	if (threadIdx.x == 0)
		*sp = *gspec;
	__syncthreads();
	for (uint32_t i = threadIdx.x; i < entries; i += blockDim.x)
		ce[i].tag = -1;
	for (uint32_t i = threadIdx.x; i < entries * (uint32_t) sp->n_aggs; i += blockDim.x)
		xpu_agg_init_mode(&cstates[i], sp->agg_kind[i % sp->n_aggs],
						  sp->agg_type[i % sp->n_aggs], XPU_AGG_ATOMIC);
	for (uint32_t i = threadIdx.x; i < sp->hll_smem / 4; i += blockDim.x)
		((unsigned int *) hsmem)[i] = 0;
	__syncthreads();
	return prog;
}

/* merges the block's cache into the table (after the block's rows) */
XPU_DEVICE void
gagg_block_flush(XpuGaggTable *t, const XpuGaggSpec *sp, const XpuAggState *cstates,
				 const XpuGaggCacheEntry *ce, uint32_t entries)
{
	__syncthreads();
	for (uint32_t e = threadIdx.x; e < entries; e += blockDim.x)
	{
		if (ce[e].tag < 0)
			continue;
		for (int j = 0; j < sp->n_aggs; j++)
			xpu_agg_combine_mode(&t->states[(size_t) ce[e].tag * sp->n_aggs + j],
								 &cstates[(size_t) e * sp->n_aggs + j],
								 sp->agg_kind[j], sp->agg_type[j],
								 XPU_AGG_ATOMIC | XPU_AGG_SRC_GPU);
	}
}

/*
 * gagg_fold_row: folds a passing row (pass) into its group: its own states
 * (no keys, few aggregates: acc), else the block's cache or the table, and
 * the HLL sketches (hsmem and dense as gagg_hll_row's); false when the
 * table is full (the row is left for a later run).  Every lane of the warp
 * calls it, a lane without a row with pass false.  The key hashing and the
 * group lookup diverge (keys of different lengths, probes); the lanes meet
 * again after each, so that the state updates run as one instruction for
 * the warp, not once per divergent path (ncu on the H100, two text keys and
 * 35 groups: 5.9 active threads a warp without the meeting points).
 */
XPU_DEVICE int
gagg_fold_row(XpuGaggTable *t, const XpuGaggSpec *sp, XpuGaggCacheEntry *ce,
			  XpuAggState *cstates, uint32_t entries, XpuAggState *acc, int pass,
			  const XpuValue *regs, const uint8_t *nulls, uint8_t *hsmem, uint64_t *dense)
{
	int			grouped = pass && acc == NULL;	/* into the cache or the table */
	uint32_t	len = 0;
	uint64_t	h = 0;
	int64_t		gid = 0;
	XpuAggState *st = NULL;

	if (pass && acc != NULL)
		gagg_update_row<false>(acc, sp, regs, nulls);
	if (grouped && sp->n_keys > 0)
		h = gagg_key_hash(sp, regs, nulls, &len);
	__syncwarp();
	if (grouped)
		st = gagg_states_of(t, sp, ce, cstates, entries, regs, nulls, h, len, &gid);
	__syncwarp();
	if (acc == NULL && !gagg_warp_update(st, sp, regs, nulls, NULL) && st != NULL)
		gagg_update_row<true>(st, sp, regs, nulls);
	if (!pass || (grouped && st == NULL))
		return 0;
	if (sp->hll_group_bytes > 0)
		gagg_hll_row(t, sp, gid, hsmem, regs, nulls, sp->n_keys == 0 ? dense : NULL);
	return 1;
}

/*
 * gagg_hoisted_setup: runs the program's hoisted constants (xpu_program.h)
 * once into this thread's registers; null0 (shared) gets the null flags a
 * row starts from: NULL but for the constants' registers
 */
XPU_DEVICE void
gagg_hoisted_setup(const XpuProgram *prog, const XpuChunk *chunk, XpuValue *regs,
				   uint8_t *nulls, uint8_t *null0, XpuError *err)
{
	uint64_t	stack = 0;

	for (int k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	(void) gagg_row_go(prog, 0, prog->n_hoisted, chunk, chunk->cols, 0, regs, nulls, 1, &stack,
					   NULL, NULL, err);
	if (threadIdx.x == 0)
	{
		for (int k = 0; k < prog->n_regs; k++)
			null0[k] = nulls[k];
	}
	__syncthreads();
}

/*
 * gagg_each_full: a combination of an expanding row's matches found the
 * table full.  The row cannot go to the overflow list (its combinations
 * before are folded, and a later run would fold them again): the run
 * falls back (the query runs in PostgreSQL).
 */
XPU_DEVICE void
gagg_each_full(XpuGaggLaunch *launch)
{
	XPU_ERROR(&launch->err, XPU_ERR_FALLBACK,
			  "the GPU's group table filled during a row's join matches");
}

/*
 * gagg_join_counts: the block's threads' counts of the rows entering each
 * join depth (probes, NULL for all or none: the same for the block) into
 * the launch's: summed in shared memory (sh, zeroed before the block's
 * first barrier), then one atomic a block a depth.  Every thread of the
 * block calls it.
 */
XPU_DEVICE void
gagg_join_counts(XpuGaggLaunch *launch, const uint64_t *probes, int n_joins,
				 unsigned long long *sh)
{
	if (probes == NULL)
		return;
	for (int d = 0; d < n_joins; d++)
		if (probes[d] != 0)
			atomicAdd(&sh[d], (unsigned long long) probes[d]);
	__syncthreads();
	if (threadIdx.x < (unsigned) n_joins && sh[threadIdx.x] != 0)
		atomicAdd(&launch->join_in[threadIdx.x], sh[threadIdx.x]);
}

/*
 * GaggRows: what kern_agg_exec's loops over the block's rows share: the
 * launch's arguments, the block's range [lo, hi) and shared parts, the
 * thread's registers, part and counts
 */
typedef struct GaggRows
{
	const XpuProgram *prog;
	const XpuChunk *chunk;
	const uint32_t *rows;
	int64_t		lo;
	int64_t		hi;
	XpuGaggTable *t;
	const XpuGaggSpec *sp;
	XpuGaggCacheEntry *ce;
	XpuAggState *cstates;
	uint32_t	entries;
	XpuAggState *acc;			/* the thread's states (no keys), or NULL */
	uint8_t    *hsmem;
	uint64_t   *hll_dense;
	uint32_t   *ovf_rows;
	XpuGaggLaunch *launch;
	const volatile int32_t *cancel;
	XpuValue   *regs;
	uint8_t    *nulls;
	const uint8_t *null0;
	uint64_t   *probes;			/* the thread's join counts, or NULL */
	GaggPart	part;
	unsigned long long passed;
} GaggRows;

/* should the thread stop at iteration it: an error or the cancel */
XPU_DEVICE int
gagg_stop(const GaggRows *g, int64_t it)
{
	return (it & (XPU_GAGG_CANCEL_EVERY - 1)) == 0 &&
		(*(volatile int32_t *) &g->launch->err.code != XPU_OK || *g->cancel != 0);
}

/* folds a row that passed or not (gagg_fold_row), a full table sending it to the overflow list */
XPU_DEVICE void
gagg_fold(GaggRows *g, int64_t row, int pass, int expands)
{
	if (gagg_fold_row(g->t, g->sp, g->ce, g->cstates, g->entries, g->acc, pass, g->regs,
					  g->nulls, g->hsmem, g->hll_dense))
		g->passed++;
	else if (pass && !expands)
		g->ovf_rows[atomicAdd(&g->launch->n_overflow, 1u)] = (uint32_t) row;
	else if (pass)
		gagg_each_full(g->launch);
}

/*
 * gagg_rows_each_row: the block's rows a row at a time, each thread one of
 * every blockDim.x (each: the program's rows expand, or NULL).  The warp
 * walks its rows together (base is the same for its lanes, as blockDim.x
 * and the range's length are multiples of 32), so that gagg_fold_row can
 * make its lanes meet; a lane past the range takes part without a row, and
 * the warp stops as one when any lane sees an error or the cancel.
 */
XPU_DEVICE void
gagg_rows_each_row(GaggRows *g, XpuEach *each)
{
	for (int64_t base = g->lo + (threadIdx.x & ~31u), it = 0; base < g->hi;
		 base += blockDim.x, it++)
	{
		int64_t		i = base + (threadIdx.x & 31u);
		int64_t		row = i >= g->hi ? -1 : g->rows != NULL ? (int64_t) g->rows[i] : i;
		int64_t		in_part = 0;
		const XpuColumnData *cols = row >= 0 ? gagg_part_of(g->chunk, row, &g->part, &in_part) :
			NULL;
		int			pass;

		if (__any_sync(0xffffffffu, gagg_stop(g, it)))
			break;
		pass = row >= 0 && gagg_eval(g->prog, g->chunk, cols, in_part, g->regs, g->nulls,
									 g->null0, each, g->probes, &g->launch->err);
		__syncwarp();
		gagg_fold(g, row, pass, each != NULL);
		if (each != NULL)
		{
			/*
			 * the rows' further combinations of matches, the warp's lanes
			 * together (gagg_fold_row's meeting points) until every lane's
			 * are done
			 */
			int			more = row >= 0 && each->n > 0;

			while (__any_sync(0xffffffffu, more))
			{
				pass = more && gagg_eval_next(g->prog, g->chunk, g->regs, g->nulls, each,
											  &g->launch->err);
				more = more && each->n > 0;
				__syncwarp();
				gagg_fold(g, row, pass, 1);
			}
		}
	}
}

/*
 * gagg_rows_compacted: the block's rows in two passes, for a program with
 * a compact point cp (xpu_program_compact_point).  Each thread runs its row
 * to just after cp; the rows still active there (the only ones that can
 * pass) go to the block's list cand; whenever the list holds a blockDim.x
 * of them (and at the end of the range), each thread takes one and runs
 * the whole program for it, then folds it.  So the rest of the program
 * and the fold run with every lane of a warp busy, where the row-at-a-time
 * walk would run them for the few rows a selective qual or join keeps,
 * a warp at a time.  The part before cp runs twice for the rows kept (with
 * the join counts taken only the first time).  A block whose first
 * blockDim.x rows keep more than half walks the rest of its rows a row at
 * a time (gagg_rows_each_row), as the second pass would redo most of the
 * first.  Every thread of the block calls it; the block stops as one on an
 * error or the cancel.
 */
XPU_DEVICE void
gagg_rows_compacted(GaggRows *g, int cp, uint32_t *cand, uint32_t *n_cand)
{
	const XpuProgram *prog = g->prog;
	const int	group = prog->stage_start[XPU_STAGE_GROUP];
	const unsigned lane = threadIdx.x & 31u;

	if (threadIdx.x == 0)
		*n_cand = 0;
	__syncthreads();
	for (int64_t base = g->lo, it = 0; base < g->hi; base += blockDim.x, it++)
	{
		int64_t		i = base + threadIdx.x;
		int64_t		row = i >= g->hi ? -1 : g->rows != NULL ? (int64_t) g->rows[i] : i;
		int			last = base + blockDim.x >= g->hi;
		int			kept = 0,
					give_up;
		unsigned	ballot;
		uint32_t	at = 0;

		if (__syncthreads_or(gagg_stop(g, it)))
			break;
		if (row >= 0)
		{
			int64_t		in_part;
			const XpuColumnData *cols = gagg_part_of(g->chunk, row, &g->part, &in_part);
			uint64_t	stack = 0;

			gagg_nulls_reset(prog, g->nulls, g->null0);
			kept = xpu_row_go(prog, prog->n_hoisted, cp + 1, g->chunk, cols, in_part, g->regs,
							  g->nulls, 1, &stack, NULL, g->probes, &g->launch->err);
		}
		/* the warp's kept rows to the list, in one place a warp */
		ballot = __ballot_sync(0xffffffffu, kept);
		if (lane == 0 && ballot != 0)
			at = atomicAdd(n_cand, (uint32_t) __popc(ballot));
		at = __shfl_sync(0xffffffffu, at, 0);
		if (kept)
			cand[at + __popc(ballot & ((1u << lane) - 1u))] = (uint32_t) row;
		__syncthreads();
		/*
		 * where the block's first rows keep more than half, the second pass
		 * would redo most of the first: the block folds those and walks
		 * the rest of its rows a row at a time
		 */
		give_up = it == 0 && !last && 2 * *n_cand > (uint32_t) blockDim.x;
		for (;;)
		{
			uint32_t	n = *n_cand;
			uint32_t	take = n < blockDim.x ? n : blockDim.x;
			uint32_t	moved = 0;
			int64_t		mine;
			int			pass = 0;

			if (n == 0 || (n < blockDim.x && !last && !give_up))
				break;
			mine = threadIdx.x < take ? (int64_t) cand[threadIdx.x] : -1;
			if (threadIdx.x < n - take)
				moved = cand[take + threadIdx.x];
			__syncthreads();
			if (threadIdx.x < n - take)
				cand[threadIdx.x] = moved;
			if (threadIdx.x == 0)
				*n_cand = n - take;
			if (mine >= 0)
			{
				int64_t		in_part;
				const XpuColumnData *cols = gagg_part_of(g->chunk, mine, &g->part, &in_part);
				uint64_t	stack = 0;
				uint64_t   *probes = NULL;	/* counted in the first pass */
				int			active = 1,
							begin = prog->n_hoisted,
							end = cp + 1;

				/*
				 * three runs at one call site of the interpreter: to the
				 * point again, on to the GROUP stage, and PROJ when the
				 * row passes (gagg_pass's test)
				 */
				gagg_nulls_reset(prog, g->nulls, g->null0);
#pragma unroll 1
				for (int step = 0;; step++)
				{
					active = xpu_row_go(prog, begin, end, g->chunk, cols, in_part, g->regs,
										g->nulls, active, &stack, NULL, probes,
										&g->launch->err);
					if (step == 2)
					{
						pass = 1;
						break;
					}
					if (step == 0)
					{
						begin = cp + 1;
						end = group;
						probes = g->probes;
						continue;
					}
					if (xpu_program_filters(prog) && !XPU_TRUE(&g->regs[0], g->nulls[0]))
						break;
					begin = prog->stage_start[XPU_STAGE_PROJ];
					end = prog->stage_start[XPU_N_STAGES];
					active = 1;
					stack = 0;
					probes = NULL;
				}
			}
			__syncwarp();
			gagg_fold(g, mine, pass, 0);
			__syncthreads();
		}
		if (give_up)
		{
			g->lo = base + blockDim.x;
			gagg_rows_each_row(g, NULL);
			return;
		}
	}
}

/* see xpu_agg_gpu.h */
XPU_KERNEL void __launch_bounds__(XPU_GAGG_BLOCK, XPU_GAGG_MIN_BLOCKS)
kern_agg_exec(const XpuProgram *gprog, uint32_t prog_len, uint32_t smem_prog,
			  const XpuChunk *chunk, const XpuGaggSpec *gspec, XpuGaggTable *t,
			  const uint32_t *rows, uint32_t n_rows, uint32_t *ovf_rows,
			  XpuGaggLaunch *launch, uint32_t entries, const volatile int32_t *cancel)
{
	extern __shared__ uint4 kern_agg_smem[];
	__shared__ XpuGaggSpec sp;
	__shared__ __align__(16) uint8_t null0[XPU_MAX_REGS + 1];
	XpuAggState *cstates = (XpuAggState *) ((char *) kern_agg_smem + smem_prog);
	XpuGaggCacheEntry *ce = (XpuGaggCacheEntry *) (cstates + (size_t) entries * gspec->n_aggs);
	uint8_t    *hsmem = (uint8_t *) (ce + entries);
	uint64_t	hll_dense = 0;
	int64_t		gid0;
	const XpuProgram *prog;
	XpuValue	regs[XPU_MAX_REGS];
	__align__(16) uint8_t nulls[XPU_MAX_REGS + 1];
	XpuAggState acc[GAGG_LOCAL_AGGS];
	XpuAggState *accp = NULL;
	XpuEach		each;
	XpuEach    *eachp;
	int64_t		n = rows != NULL ? (int64_t) n_rows : chunk->nrows;
	/* the block's rows: [lo, hi) */
	int64_t		per_block = ((n + gridDim.x - 1) / gridDim.x + 31) & ~(int64_t) 31;
	int64_t		lo = (int64_t) blockIdx.x * per_block;
	int64_t		hi = lo + per_block < n ? lo + per_block : n;
	GaggRows	g;
	int			cp;
	__shared__ uint32_t cand[XPU_GAGG_CAND];
	__shared__ uint32_t n_cand;
	unsigned long long passed = 0;
	__shared__ unsigned long long join_sh[XPU_JOIN_COUNT_DEPTHS];
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS];
	int			n_joins = chunk->n_joins < XPU_JOIN_COUNT_DEPTHS ? chunk->n_joins :
		XPU_JOIN_COUNT_DEPTHS;
	/* the chunk's rows (not an overflow list's, counted before) */
	uint64_t   *probesp = rows == NULL && n_joins > 0 ? probes : NULL;

	for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		probes[d] = 0;
	if (threadIdx.x < XPU_JOIN_COUNT_DEPTHS)
		join_sh[threadIdx.x] = 0;	/* before gagg_block_setup's barrier */
	prog = gagg_block_setup(gprog, prog_len, smem_prog, gspec, &sp, kern_agg_smem,
							cstates, ce, entries, hsmem);
	gagg_hoisted_setup(prog, chunk, regs, nulls, null0, &launch->err);
	/* probes of every match over tables of unique keys meet one: no expansion */
	eachp = xpu_program_expands_over(prog, chunk->joins, chunk->n_joins) ? &each : NULL;
	if (sp.n_keys == 0 && sp.n_aggs <= GAGG_LOCAL_AGGS)
	{
		accp = acc;
		for (int j = 0; j < sp.n_aggs; j++)
			xpu_agg_init_mode(&acc[j], sp.agg_kind[j], sp.agg_type[j], XPU_AGG_PLAIN);
	}
	g.prog = prog;
	g.chunk = chunk;
	g.rows = rows;
	g.lo = lo;
	g.hi = hi;
	g.t = t;
	g.sp = &sp;
	g.ce = ce;
	g.cstates = cstates;
	g.entries = entries;
	g.acc = accp;
	g.hsmem = hsmem;
	g.hll_dense = &hll_dense;
	g.ovf_rows = ovf_rows;
	g.launch = launch;
	g.cancel = cancel;
	g.regs = regs;
	g.nulls = nulls;
	g.null0 = null0;
	g.probes = probesp;
	g.part.lo = g.part.hi = 0;
	g.part.cols = NULL;
	g.passed = 0;
	/*
	 * The block walks its own range of rows, blockDim.x at a time, so that
	 * a thread's next row is most often in the part of its last one.
	 */
	if (eachp == NULL && (cp = xpu_program_compact_point(prog, chunk->joins, chunk->n_joins)) >= 0)
		gagg_rows_compacted(&g, cp, cand, &n_cand);
	else
		gagg_rows_each_row(&g, eachp);
	passed = g.passed;
	if (accp != NULL)
	{
		/* the warp's lanes (together again after the loop) share the one group */
		XpuAggState *st = passed == 0 ? NULL :
			gagg_states_of(t, &sp, ce, cstates, entries, regs, nulls, 0, 0, &gid0);

		__syncwarp();
		if (!gagg_warp_update(st, &sp, regs, nulls, acc) && st != NULL)
		{
			for (int j = 0; j < sp.n_aggs; j++)
				gagg_combine<true>(&st[j], &acc[j], sp.agg_kind[j], sp.agg_type[j]);
		}
	}
	if (passed > 0)
	{
		atomicAdd(&launch->rows_passed, passed);
		if (sp.n_keys == 0)
			t->key_len[0] = 0;	/* the one group exists */
	}
	gagg_block_flush(t, &sp, cstates, ce, entries);
	if (sp.hll_smem > 0)
		gagg_hll_block_flush(t, &sp, hsmem);
	gagg_join_counts(launch, probesp, n_joins, join_sh);
}
