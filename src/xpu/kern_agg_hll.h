/*-------------------------------------------------------------------------
 *
 * kern_agg_hll.h
 *		The HLL sketches of GROUP BY aggregation on the GPU (kern_agg.cu):
 *		the per-row update of a group's registers and explicit hash set and
 *		the merge of a block's shared register copies, in the layout that
 *		xpu_agg_gpu.h gives ("HLL states").  Device code, included by
 *		kern_agg.cu; a host test (test/c/test_gagg_hll.cpp) compiles it
 *		with stand-ins for the CUDA intrinsics it uses (__ldcg, atomicCAS,
 *		atomicAdd, atomicOr, __vmaxu4, threadIdx, blockDim) and runs it on
 *		many threads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef KERN_AGG_HLL_H
#define KERN_AGG_HLL_H

#include "xpu_agg_gpu.h"
#include "xpu_agg_ops.h"

/* the sketch of HLL aggregate j of group gid */
XPU_DEVICE XpuGaggHll *
gagg_hll_of(const XpuGaggTable *t, const XpuGaggSpec *sp, int64_t gid, int j)
{
	return (XpuGaggHll *) (t->hll + (size_t) gid * sp->hll_group_bytes + sp->hll_off[j]);
}

/* the registers of sketch h at precision p */
XPU_DEVICE uint8_t *
gagg_hll_regs(XpuGaggHll *h, int p)
{
	return (uint8_t *) (h + 1) + 8 * (size_t) xpu_gagg_hll_slots(p);
}

/*
 * gagg_hll_max: raises register idx of the registers at regs (4-byte
 * aligned) to at least r with a CAS on its 4-byte word; L2: the table's
 * registers (read through L2), else a block's copy in shared memory.  A
 * register never decreases, so one already >= r costs no atomic.
 */
template <bool L2> XPU_DEVICE void
gagg_hll_max(uint8_t *regs, uint32_t idx, uint32_t r)
{
	unsigned int *w = (unsigned int *) (regs + (idx & ~3u));
	int			sh = (int) (idx & 3) * 8;
	unsigned int old = L2 ? __ldcg(w) : *(volatile unsigned int *) w;

	while (((old >> sh) & 0xffu) < r)
	{
		unsigned int nw = (old & ~(0xffu << sh)) | (r << sh);
		unsigned int prev = atomicCAS(w, old, nw);

		if (prev == old)
			break;
		old = prev;
	}
}

/* is the explicit set of sketch h DENSE (read through L2) */
XPU_DEVICE int
gagg_hll_dense(XpuGaggHll *h)
{
	return (__ldcg(&h->flags) & XPU_GAGG_HLL_DENSE) != 0;
}

/* counts a distinct hash put in the set of h: DENSE past the limit */
XPU_DEVICE void
gagg_hll_counted(XpuGaggHll *h, uint32_t limit)
{
	if (atomicAdd(&h->n, 1u) + 1 > limit)
		atomicOr(&h->flags, XPU_GAGG_HLL_DENSE);
}

/*
 * gagg_hll_insert: puts hash into the explicit set of sketch h (precision
 * p) unless it is there or the set is DENSE; returns 1 when the set is
 * known DENSE.  A probe that meets no free slot found every slot holding a
 * distinct hash, more than the limit: DENSE.  Every 16 probes the flag is
 * read again, so that threads stop probing a set that went DENSE.
 */
XPU_DEVICE int
gagg_hll_insert(XpuGaggHll *h, int p, uint64_t hash)
{
	uint32_t	limit = XPU_HLL_EXPLICIT_LIMIT(p);
	uint32_t	n_slots = xpu_gagg_hll_slots(p);
	unsigned long long *slots = (unsigned long long *) (h + 1);
	uint32_t	pos = (uint32_t) hash & (n_slots - 1);

	if (hash == 0)
	{
		if ((atomicOr(&h->flags, XPU_GAGG_HLL_ZERO) & XPU_GAGG_HLL_ZERO) == 0)
			gagg_hll_counted(h, limit);
		return gagg_hll_dense(h);
	}
	for (uint32_t i = 0; i < n_slots; i++)
	{
		unsigned long long s = __ldcg(&slots[pos]);

		if ((i & 15) == 15 && gagg_hll_dense(h))
			return 1;
		if (s == 0)
		{
			s = atomicCAS(&slots[pos], 0ull, (unsigned long long) hash);
			if (s == 0)
			{
				gagg_hll_counted(h, limit);
				return gagg_hll_dense(h);
			}
		}
		if (s == (unsigned long long) hash)
			return 0;
		pos = (pos + 1) & (n_slots - 1);
	}
	atomicOr(&h->flags, XPU_GAGG_HLL_DENSE);
	return 1;
}

/*
 * gagg_hll_row: folds a passing row's HLL arguments into the sketches of
 * group gid: the hash into the registers (the block's shared copy, hsmem,
 * where the spec gives one) and into the explicit set until it is DENSE.
 * dense (no keys; else NULL): one bit per aggregate whose set this thread
 * saw DENSE, so that it reads the flag no more.
 */
XPU_DEVICE void
gagg_hll_row(XpuGaggTable *t, const XpuGaggSpec *sp, int64_t gid, uint8_t *hsmem,
			 const XpuValue *regs, const uint8_t *nulls, uint64_t *dense)
{
	for (int j = 0; j < sp->n_aggs; j++)
	{
		int			r = sp->agg_reg[j];
		int			p = sp->agg_param[j];
		uint64_t	hash;
		XpuGaggHll *h;

		if (sp->agg_kind[j] != XPU_AGG_HLL || nulls[r])
			continue;
		hash = xpu_agg_hll_hash(sp->agg_type[j], &regs[r]);
		h = gagg_hll_of(t, sp, gid, j);
		if (sp->hll_smem_off[j] != XPU_GAGG_HLL_GLOBAL)
			gagg_hll_max<false>(hsmem + sp->hll_smem_off[j], xpu_hll_index(hash, p),
								xpu_hll_rank(hash, p));
		else
			gagg_hll_max<true>(gagg_hll_regs(h, p), xpu_hll_index(hash, p),
							   xpu_hll_rank(hash, p));
		if (dense != NULL && ((*dense >> j) & 1))
			continue;
		if ((gagg_hll_dense(h) || gagg_hll_insert(h, p, hash)) && dense != NULL)
			*dense |= UINT64_C(1) << j;
	}
}

/*
 * gagg_hll_block_flush: the block's shared register copies (no keys: group
 * 0) merged into the table's, a bytewise maximum per 4-byte word (after the
 * block's rows and a __syncthreads)
 */
XPU_DEVICE void
gagg_hll_block_flush(XpuGaggTable *t, const XpuGaggSpec *sp, const uint8_t *hsmem)
{
	for (int j = 0; j < sp->n_aggs; j++)
	{
		const unsigned int *src;
		unsigned int *dst;
		int			p = sp->agg_param[j];

		if (sp->agg_kind[j] != XPU_AGG_HLL || sp->hll_smem_off[j] == XPU_GAGG_HLL_GLOBAL)
			continue;
		src = (const unsigned int *) (hsmem + sp->hll_smem_off[j]);
		dst = (unsigned int *) gagg_hll_regs(gagg_hll_of(t, sp, 0, j), p);
		for (uint32_t w = threadIdx.x; w < (UINT32_C(1) << p) / 4; w += blockDim.x)
		{
			unsigned int v = src[w];
			unsigned int old;

			if (v == 0)
				continue;
			old = __ldcg(&dst[w]);
			for (;;)
			{
				unsigned int nw = __vmaxu4(old, v);
				unsigned int prev;

				if (nw == old)
					break;
				prev = atomicCAS(&dst[w], old, nw);
				if (prev == old)
					break;
				old = prev;
			}
		}
	}
}

#endif							/* KERN_AGG_HLL_H */
