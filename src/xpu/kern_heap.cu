/*-------------------------------------------------------------------------
 *
 * kern_heap.cu
 *		GpuPreAgg over heap tables on the GPU: the kernels that decode the
 *		visible tuples of a chunk of heap pages into the Arrow columns of an
 *		XpuChunk, which kern_agg_exec (kern_agg.cu) then aggregates as it
 *		does a record batch.  xpu_heap_gpu.h gives the launch contract and
 *		the per-tuple work (the same functions the host can run);
 *		service/gpu_heap.c (gpu_heap_execute) drives them.
 *
 * Design.  Decoding into device column buffers, rather than teaching the
 * aggregation kernel to read heap tuples, keeps kern_agg.cu's one input
 * form and its overflow reruns (which read rows of the chunk again by row
 * number) unchanged.  One block per page, one thread per line pointer: a
 * thread whose bit in the page's visibility bitmap is clear does nothing
 * but take part in the block's scans; a visible tuple's row number is the
 * page's first row (counted by the host) plus its rank in the bitmap, so
 * rows keep the CPU engine's order.  Text columns need every row's offset:
 * kern_heap_measure sums each page's text bytes, kern_heap_scan turns the
 * sums into each page's first byte, and kern_heap_decode adds a block-wide
 * exclusive scan of the page's lengths.  Every block reads the run's cancel
 * flag first and stops when it is set.
 *
 *-------------------------------------------------------------------------
 */
#include "xpu_heap_gpu.h"

/*
 * hg_block_scan: the exclusive prefix sum of v over the block's threads
 * (every thread of the block calls it; s has blockDim.x entries)
 */
XPU_DEVICE uint64_t
hg_block_scan(uint64_t v, uint64_t *s)
{
	int			i = threadIdx.x;
	uint64_t	incl;

	s[i] = v;
	__syncthreads();
	for (int off = 1; off < (int) blockDim.x; off <<= 1)
	{
		uint64_t	x = i >= off ? s[i - off] : 0;

		__syncthreads();
		s[i] += x;
		__syncthreads();
	}
	incl = s[i];
	__syncthreads();
	return incl - v;
}

/* has the run been canceled (the same answer for every thread of the block) */
XPU_DEVICE bool
hg_canceled(const volatile int32_t *cancel)
{
	__shared__ int32_t stop;

	if (threadIdx.x == 0)
		stop = *cancel;
	__syncthreads();
	return stop != 0;
}

/* records the first reason a chunk falls back */
XPU_DEVICE void
hg_fail(XpuHeapGpuStatus *st, int code)
{
	if (code != 0 && st->code == 0)
		atomicCAS((int *) &st->code, 0, code);
}

/*
 * kern_heap_measure: page blockIdx.x's text bytes per text column into
 * hc->page_text[t * n_pages + page]
 */
XPU_KERNEL void
kern_heap_measure(const XpuHeapGpuDesc *d, const XpuHeapGpuChunk *hc,
				  const int32_t *cancel)
{
	__shared__ uint64_t s[XPU_HEAP_GPU_BLOCK];
	const uint8_t *ptrs[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	lens[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	p = blockIdx.x;
	int			i = threadIdx.x;
	const uint8_t *page = hc->pages + (size_t) p * XPU_HEAP_PAGE_SIZE;
	const uint8_t *const *pp;

	if (hg_canceled(cancel))
		return;
	pp = xpu_hg_visible(hc->vis + (size_t) p * XPU_HEAP_VIS_BYTES, i) &&
		xpu_hg_tuple(d, page, i, ptrs, lens) == 0 ? ptrs : NULL;
	for (int j = 0; j < d->n_cols; j++)
	{
		uint64_t	n,
					before;

		if (d->col_text[j] < 0)
			continue;
		n = xpu_hg_text_len(d, j, pp, lens);
		before = hg_block_scan(n, s);
		if (i == (int) blockDim.x - 1)
			hc->page_text[(size_t) d->col_text[j] * hc->n_pages + p] = before + n;
	}
}

/*
 * kern_heap_scan: one block of XPU_HEAP_GPU_SCAN_BLOCK threads: each text
 * column's page_text made the exclusive prefix sum over the pages (each
 * thread sums a run of pages, the block scans the sums, then each thread
 * rewrites its run)
 */
XPU_KERNEL void
kern_heap_scan(const XpuHeapGpuDesc *d, const XpuHeapGpuChunk *hc)
{
	__shared__ uint64_t s[XPU_HEAP_GPU_SCAN_BLOCK];
	uint32_t	n = hc->n_pages;
	uint32_t	per = (n + blockDim.x - 1) / blockDim.x;
	uint32_t	lo = threadIdx.x * per;
	uint32_t	hi = lo + per < n ? lo + per : n;

	for (int t = 0; t < d->n_text; t++)
	{
		uint64_t   *a = hc->page_text + (size_t) t * n;
		uint64_t	sum = 0,
					run;

		for (uint32_t k = lo; k < hi; k++)
			sum += a[k];
		run = hg_block_scan(sum, s);
		for (uint32_t k = lo; k < hi; k++)
		{
			uint64_t	v = a[k];

			a[k] = run;
			run += v;
		}
		__syncthreads();
	}
}

/*
 * kern_heap_decode: the visible tuples of page blockIdx.x into the rows of
 * chunk (its columns' bitmaps zeroed beforehand); a failure sets
 * hc->status
 */
XPU_KERNEL void
kern_heap_decode(const XpuHeapGpuDesc *d, const XpuHeapGpuChunk *hc, const XpuChunk *chunk,
				 const int32_t *cancel)
{
	__shared__ uint64_t s[XPU_HEAP_GPU_BLOCK];
	const uint8_t *ptrs[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	lens[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	p = blockIdx.x;
	int			i = threadIdx.x;
	const uint8_t *vis = hc->vis + (size_t) p * XPU_HEAP_VIS_BYTES;
	const uint8_t *page = hc->pages + (size_t) p * XPU_HEAP_PAGE_SIZE;
	const uint8_t *const *pp = NULL;	/* the tuple's attributes, if it decoded */
	bool		visible;
	int			code = 0;
	uint32_t	r = 0;

	if (hg_canceled(cancel))
		return;
	visible = xpu_hg_visible(vis, i);
	if (visible)
	{
		code = xpu_hg_tuple(d, page, i, ptrs, lens);
		r = hc->row_start[p] + xpu_hg_rank(vis, i);
		pp = code == 0 ? ptrs : NULL;
	}
	for (int j = 0; j < d->n_cols; j++)
	{
		uint64_t	start = 0;
		int			c;

		if (d->col_text[j] >= 0)
		{
			uint64_t	n = xpu_hg_text_len(d, j, pp, lens);

			start = hc->page_text[(size_t) d->col_text[j] * hc->n_pages + p] +
				hg_block_scan(n, s);
		}
		if (!visible)
			continue;
		c = xpu_hg_put(d, &chunk->cols[j], j, r, pp, lens, start, hc->text_cap);
		if (code == 0)
			code = c;
	}
	hg_fail(hc->status, code);
}

/*
 * kern_heap_check: a thread per page of the n_pages at pages (a unit cuFile
 * read into device memory): xpu_hg_check_page's count into tuples[p] (-1:
 * the backend must read the unit) and the page's bitmap into vis, as the
 * host's I/O threads check the pages they read
 */
XPU_KERNEL void
kern_heap_check(const uint8_t *pages, uint32_t n_pages, uint8_t *vis, int16_t *tuples)
{
	uint32_t	p = blockIdx.x * blockDim.x + threadIdx.x;

	if (p < n_pages)
		tuples[p] = (int16_t) xpu_hg_check_page(pages + (size_t) p * XPU_HEAP_PAGE_SIZE,
												vis + (size_t) p * XPU_HEAP_VIS_BYTES);
}
