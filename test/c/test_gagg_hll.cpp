/*
 * test_gagg_hll.cpp
 *		The GPU's HLL sketch code (src/xpu/kern_agg_hll.h, device code of
 *		kern_agg.cu) run on host threads: the CUDA intrinsics it uses are
 *		stood in for by GCC atomics (every one sequentially consistent), a
 *		"block" is a group of threads with its own copy of the shared
 *		registers, and many threads fold rows into the same sketches at
 *		once.  Every sketch must then hold what xpu_agg_gpu.h promises and
 *		the CPU engine holds: its distinct hashes while there are at most
 *		XPU_HLL_EXPLICIT_LIMIT(p) of them, else the registers of every hash
 *		(xpu_hll_update).  The GPU itself is checked by test/gpu/aggcheck_hll.c (gpu_aggcheck).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <set>
#include <vector>

#include "tap.h"
#include "xpu_agg_gpu.h"
#include "xpu_agg_ops.h"

/* ---------------- stand-ins for the CUDA intrinsics ---------------- */

struct Dim3
{
	unsigned	x;
};

static thread_local Dim3 threadIdx;
static const Dim3 blockDim = {4};

#define __ldcg(p)	__atomic_load_n((p), __ATOMIC_SEQ_CST)

template <class T> static T
atomicCAS(T *p, T expected, T desired)
{
	__atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST,
								__ATOMIC_SEQ_CST);
	return expected;
}

static unsigned
atomicAdd(unsigned *p, unsigned v)
{
	return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
}

static unsigned
atomicOr(unsigned *p, unsigned v)
{
	return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
}

/* the bytewise unsigned maximum of two words */
static unsigned
__vmaxu4(unsigned a, unsigned b)
{
	unsigned	r = 0;

	for (int i = 0; i < 4; i++)
	{
		unsigned	x = (a >> (8 * i)) & 0xffu,
					y = (b >> (8 * i)) & 0xffu;

		r |= (x > y ? x : y) << (8 * i);
	}
	return r;
}

#include "kern_agg_hll.h"

/* ---------------- a run ---------------- */

enum
{
	N_AGGS = 4,
	N_BLOCKS = 4
};

static const int agg_types[N_AGGS] = {XPU_T_INT8, XPU_T_INT8, XPU_T_TEXT, XPU_T_FLOAT8};
static char words[1 << 16][16];

/* one run: rows, distinct values, groups (0: no keys), precisions */
typedef struct Run
{
	int64_t		n_rows;
	int64_t		n_distinct;
	int64_t		n_groups;
	int			p[N_AGGS];
	XpuGaggSpec spec;
	XpuGaggTable table;
	std::vector<uint8_t> smem[N_BLOCKS];	/* each block's shared HLL part */
} Run;

/* row r: its argument registers, NULLs (about 1 in 13) and group */
static void
row_values(const Run *run, int64_t r, XpuValue *regs, uint8_t *nulls, int64_t *g)
{
	uint64_t	x = (uint64_t) r * UINT64_C(0x9E3779B97F4A7C15);
	int64_t		v;

	x ^= x >> 29;
	v = (int64_t) (x % (uint64_t) run->n_distinct);
	*g = run->n_groups > 0 ? (int64_t) ((x >> 20) % (uint64_t) run->n_groups) : 0;
	for (int j = 0; j < N_AGGS; j++)
		nulls[j] = (x >> (40 + j)) % 13 == 0;
	regs[0].i = v;
	regs[1].i = v * 7 - 3;
	regs[2].t.p = words[v % (1 << 16)];
	regs[2].t.len = (int32_t) strlen(words[v % (1 << 16)]);
	regs[3].f8 = (double) v * 0.25 - 100.0;
}

typedef struct Thread
{
	Run		   *run;
	int			block;
	unsigned	tid;
} Thread;

/* a thread of the kernel: every N_BLOCKS * blockDim.x-th row, as gagg_fold_row folds it */
static void *
fold_rows(void *arg)
{
	Thread	   *th = (Thread *) arg;
	Run		   *run = th->run;
	int64_t		stride = (int64_t) N_BLOCKS * blockDim.x;
	uint64_t	dense = 0;
	bool		keyless = run->n_groups == 0;

	threadIdx.x = th->tid;
	for (int64_t r = th->block * blockDim.x + th->tid; r < run->n_rows; r += stride)
	{
		XpuValue	regs[N_AGGS];
		uint8_t		nulls[N_AGGS];
		int64_t		g;

		row_values(run, r, regs, nulls, &g);
		gagg_hll_row(&run->table, &run->spec, g, keyless ? run->smem[th->block].data() : NULL,
					 regs, nulls, keyless ? &dense : NULL);
	}
	return NULL;
}

/* a thread at the end of its block: the shared copies into the table */
static void *
flush_block(void *arg)
{
	Thread	   *th = (Thread *) arg;

	threadIdx.x = th->tid;
	gagg_hll_block_flush(&th->run->table, &th->run->spec, th->run->smem[th->block].data());
	return NULL;
}

/* runs fn on N_BLOCKS blocks of blockDim.x threads at once */
static void
run_threads(Run *run, void *(*fn) (void *))
{
	std::vector<pthread_t> ts(N_BLOCKS * blockDim.x);
	std::vector<Thread> args(N_BLOCKS * blockDim.x);

	for (int b = 0; b < N_BLOCKS; b++)
		for (unsigned t = 0; t < blockDim.x; t++)
		{
			args[b * blockDim.x + t] = {run, b, t};
			pthread_create(&ts[b * blockDim.x + t], NULL, fn, &args[b * blockDim.x + t]);
		}
	for (pthread_t &t : ts)
		pthread_join(t, NULL);
}

/* the spec and table of run: without keys, shared copies for aggregates 0, 1 and 3 */
static void
run_setup(Run *run)
{
	XpuGaggSpec *sp = &run->spec;
	int64_t		groups = run->n_groups > 0 ? run->n_groups : 1;

	memset(sp, 0, sizeof(*sp));
	sp->n_keys = run->n_groups > 0 ? 1 : 0;
	sp->n_aggs = N_AGGS;
	for (int j = 0; j < N_AGGS; j++)
	{
		sp->agg_kind[j] = XPU_AGG_HLL;
		sp->agg_reg[j] = (uint8_t) j;
		sp->agg_type[j] = (uint8_t) agg_types[j];
		sp->agg_param[j] = (uint8_t) run->p[j];
		sp->hll_off[j] = sp->hll_group_bytes;
		sp->hll_smem_off[j] = XPU_GAGG_HLL_GLOBAL;
		sp->hll_group_bytes += xpu_gagg_hll_bytes(run->p[j]);
	}
	for (int j = 0; j < N_AGGS && run->n_groups == 0; j++)
		if (j != 2)
		{
			sp->hll_smem_off[j] = sp->hll_smem;
			sp->hll_smem += UINT32_C(1) << run->p[j];
		}
	for (int b = 0; b < N_BLOCKS; b++)
		run->smem[b].assign(sp->hll_smem + 4, 0);
	memset(&run->table, 0, sizeof(run->table));
	run->table.hll = (uint8_t *) calloc((size_t) groups, sp->hll_group_bytes);
}

/*
 * does sketch h (precision p) hold what it must for the distinct hashes
 * want; counts it in *n_dense or *n_explicit
 */
static bool
sketch_ok(XpuGaggHll *h, int p, const std::set<uint64_t> &want, int *n_dense, int *n_explicit)
{
	uint32_t	n_slots = xpu_gagg_hll_slots(p);
	const uint64_t *slots = (const uint64_t *) (h + 1);
	bool		dense = (h->flags & XPU_GAGG_HLL_DENSE) || h->n > XPU_HLL_EXPLICIT_LIMIT(p);

	if (dense != (want.size() > XPU_HLL_EXPLICIT_LIMIT(p)))
		return false;
	if (dense)
	{
		std::vector<uint8_t> regs((size_t) 1 << p, 0);

		for (uint64_t x : want)
			xpu_hll_update(regs.data(), p, x);
		(*n_dense)++;
		return memcmp(gagg_hll_regs(h, p), regs.data(), regs.size()) == 0;
	}
	else
	{
		std::vector<uint64_t> got;

		for (uint32_t i = 0; i < n_slots; i++)
			if (slots[i] != 0)
				got.push_back(slots[i]);
		if (h->flags & XPU_GAGG_HLL_ZERO)
			got.push_back(0);
		std::sort(got.begin(), got.end());
		(*n_explicit)++;
		return h->n == want.size() && got == std::vector<uint64_t>(want.begin(), want.end());
	}
}

/* runs one case and checks every sketch against the distinct hashes of its rows */
static void
check_run(int64_t n_rows, int64_t n_distinct, int64_t n_groups, const int *p)
{
	Run		   *run = new Run;
	int64_t		groups = n_groups > 0 ? n_groups : 1;
	std::vector<std::set<uint64_t>> want((size_t) groups * N_AGGS);
	int			bad = 0,
				n_dense = 0,
				n_explicit = 0;

	run->n_rows = n_rows;
	run->n_distinct = n_distinct;
	run->n_groups = n_groups;
	memcpy(run->p, p, sizeof(run->p));
	run_setup(run);
	run_threads(run, fold_rows);
	if (n_groups == 0)
		run_threads(run, flush_block);
	for (int64_t r = 0; r < n_rows; r++)
	{
		XpuValue	regs[N_AGGS];
		uint8_t		nulls[N_AGGS];
		int64_t		g;

		row_values(run, r, regs, nulls, &g);
		for (int j = 0; j < N_AGGS; j++)
			if (!nulls[j])
				want[g * N_AGGS + j].insert(xpu_agg_hll_hash(agg_types[j], &regs[j]));
	}
	for (int64_t g = 0; g < groups; g++)
		for (int j = 0; j < N_AGGS; j++)
			if (!sketch_ok(gagg_hll_of(&run->table, &run->spec, g, j), p[j],
						   want[g * N_AGGS + j], &n_dense, &n_explicit))
				bad++;
	tap_ok(bad == 0, "%ld rows, %ld distinct values, %ld groups%s, p = %d %d %d %d: "
		   "%d wrong of %d register and %d explicit sketches", (long) n_rows,
		   (long) n_distinct, (long) groups, n_groups == 0 ? " (no keys: shared copies)" : "",
		   p[0], p[1], p[2], p[3], bad, n_dense, n_explicit);
	free(run->table.hll);
	delete run;
}

int
main(void)
{
	static const int64_t distinct[] = {1, 2, 5, 1000, 5000, 100000};
	static const int p_keyless[N_AGGS] = {4, 14, 18, 10};
	static const int p_keys[N_AGGS] = {4, 14, 14, 10};

	for (int i = 0; i < (1 << 16); i++)
		snprintf(words[i], sizeof(words[i]), i % 7 == 0 ? "longer word %d, padded" : "w%d", i);
	for (int64_t d : distinct)
	{
		check_run(100000, d, 0, p_keyless);
		check_run(100000, d, 5, p_keys);
		check_run(100000, d, 300, p_keys);
	}
	return tap_done();
}
