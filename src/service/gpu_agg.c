/*-------------------------------------------------------------------------
 *
 * gpu_agg.c
 *		GpuPreAgg on the GPU: gpu_agg_run (service.h) aggregates the record
 *		batches of an AGG_RUN's Arrow files with the kernels of kern_agg.cu
 *		and folds the groups into the run's CPU table; gpu_heap.c does the
 *		same for the heap chunks of a HEAP_RUN, with the steps below that
 *		gpu_agg_int.h exports.
 *
 * One run on one GPU:
 *
 *	- the program, the resolved spec (XpuGaggSpec) and the hash table
 *	  (xpu_agg_gpu.h) are put in GPU memory once;
 *	- two slots, each a pinned host buffer, a device buffer and a stream,
 *	  take the batches in turn: while the GPU copies and aggregates batch k
 *	  in one slot, the I/O threads read batch k + 1 into the other.  A batch
 *	  is laid out as its XpuChunk, the column descriptors (device addresses)
 *	  and the referenced buffers, so one host-to-device copy moves it all;
 *	- uncompressed files are read with pread straight into the pinned
 *	  buffer, only the extents of the referenced columns (in slices of a few
 *	  MiB spread over the I/O threads); compressed ones are loaded and
 *	  decompressed by arrow_batch_load and copied;
 *	- when a launch reports the table full, the table's groups go to the
 *	  sink, the table is emptied (and grown) and the rows that did not fit
 *	  run again (xpu_agg_table_gpu.h), so each row is folded once;
 *	- at the end the groups are copied back and handed to the sink;
 *	- HLL aggregates keep their sketches in the table's HLL area
 *	  (xpu_agg_gpu.h), which the table's capacity keeps within the
 *	  aggregates' memory limit; the sink gets each sketch as its explicit
 *	  hashes or its registers (GpuAggHll).
 *
 * Every buffer the kernel reads is checked against the batch's row count
 * first (and utf8 offsets against their data), so a damaged file is an
 * error, never a read out of bounds on the device.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrow/arrow.h"
#include "arrow/arrow_io.h"
#include "gpu_agg_int.h"
#include "service/file_reg.h"
#include "service/gpu_direct.h"
#include "xpu/xpu_agg_ops.h"

/* ---------------- the spec, the table ---------------- */

/*
 * gagg_spec_hll: HLL aggregate j (desc a) in the spec: its precision, its
 * sketch's place in a group's HLL bytes, the run's memory limit (the least
 * of the aggregates'); -1 for a precision out of range
 */
static int
gagg_spec_hll(GaggRun *g, int j, const XpuAggDesc *a)
{
	XpuGaggSpec *sp = &g->spec;
	uint64_t	limit = (uint64_t) a->limit << 20;

	if (a->param < XPU_HLL_MIN_BITS || a->param > XPU_HLL_MAX_BITS)
		return gagg_fail(g, WARP_ERR_PROTOCOL, "aggregate %d: HyperLogLog precision %d",
						 j, a->param);
	sp->agg_param[j] = a->param;
	sp->hll_off[j] = sp->hll_group_bytes;
	sp->hll_smem_off[j] = XPU_GAGG_HLL_GLOBAL;
	sp->hll_group_bytes += xpu_gagg_hll_bytes(a->param);
	if (limit < g->hll_limit)
		g->hll_limit = limit;
	return 0;
}

/*
 * gagg_spec_hll_smem: without keys, block copies of the HLL registers in
 * the shared memory left beside the program and the cache (in the order of
 * the aggregates, while they fit)
 */
static void
gagg_spec_hll_smem(GaggRun *g)
{
	XpuGaggSpec *sp = &g->spec;
	uint32_t	used = xpu_gagg_smem_size(g->smem_prog, g->entries, sp->n_aggs) +
		(uint32_t) (sizeof(XpuGaggSpec) + XPU_GAGG_CAND * sizeof(uint32_t)) + 1024;

	sp->hll_smem = 0;
	for (int j = 0; j < sp->n_aggs && sp->n_keys == 0; j++)
	{
		uint32_t	m = UINT32_C(1) << sp->agg_param[j];

		if (sp->agg_kind[j] != XPU_AGG_HLL || used + sp->hll_smem + m > GAGG_SMEM_LIMIT)
			continue;
		sp->hll_smem_off[j] = sp->hll_smem;
		sp->hll_smem += m;
	}
}

/*
 * gagg_spec_build: the run's XpuAggSpec resolved to registers and types
 * (XpuGaggSpec); -1 for a spec the GPU kernels do not serve
 */
static int
gagg_spec_build(GaggRun *g)
{
	const XpuAggSpec *spec = &g->run->spec;
	const XpuProgram *prog = g->prog;
	XpuGaggSpec *sp = &g->spec;

	memset(sp, 0, sizeof(*sp));
	g->hll_limit = UINT64_MAX;
	if (spec->n_keys < 0 || spec->n_keys > XPU_AGG_MAX_KEYS ||
		spec->n_aggs < 0 || spec->n_aggs > XPU_AGG_MAX_AGGS)
		return gagg_fail(g, WARP_ERR_UNSUPPORTED, "too many group keys or aggregates for the GPU");
	sp->n_keys = spec->n_keys;
	sp->n_aggs = spec->n_aggs;
	for (int k = 0; k < spec->n_keys; k++)
	{
		int			reg;

		if (spec->key_outs[k] >= prog->n_outs)
			return gagg_fail(g, WARP_ERR_PROTOCOL, "group key %d names no output of the program", k);
		reg = XPU_OUTS(prog)[spec->key_outs[k]];
		sp->key_reg[k] = (uint8_t) reg;
		sp->key_type[k] = XPU_REGS(prog)[reg].type;
		if (!xpu_agg_key_supported(sp->key_type[k]))
			return gagg_fail(g, WARP_ERR_UNSUPPORTED, "the GPU cannot group by a value of type %s",
							 xpu_type_name(sp->key_type[k]));
	}
	for (int j = 0; j < spec->n_aggs; j++)
	{
		const XpuAggDesc *a = &spec->aggs[j];

		sp->agg_kind[j] = a->kind;
		if (a->kind == XPU_AGG_COUNT_STAR)
			continue;
		if (a->out >= prog->n_outs)
			return gagg_fail(g, WARP_ERR_PROTOCOL, "aggregate %d names no output of the program", j);
		sp->agg_reg[j] = XPU_OUTS(prog)[a->out];
		sp->agg_type[j] = XPU_REGS(prog)[sp->agg_reg[j]].type;
		if (!xpu_agg_arg_supported(a->kind, sp->agg_type[j]) || !xpu_agg_kind_gpu(a->kind))
			return gagg_fail(g, WARP_ERR_UNSUPPORTED,
							 "the GPU has no aggregate of kind %d over type %s",
							 a->kind, xpu_type_name(sp->agg_type[j]));
		if (a->kind == XPU_AGG_HLL && gagg_spec_hll(g, j, a) != 0)
			return -1;
	}
	return 0;
}

/* bytes of key per group to plan the arena for (text keys: a guess) */
static uint64_t
gagg_key_estimate(const XpuGaggSpec *sp)
{
	uint64_t	n = 0;

	for (int k = 0; k < sp->n_keys; k++)
		n += 1 + (sp->key_type[k] == XPU_T_TEXT ? 4 + 16 :
				  sp->key_type[k] == XPU_T_NUMERIC ? 16 : 8);
	return n;
}

/*
 * gagg_hll_capacity: capacity groups, fewer where their HLL sketches would
 * pass the run's limit (at least 1: gagg_setup checked that one fits)
 */
static uint32_t
gagg_hll_capacity(const GaggRun *g, uint32_t capacity)
{
	uint64_t	most;

	if (g->spec.hll_group_bytes == 0)
		return capacity;
	most = g->hll_limit / g->spec.hll_group_bytes;
	return most < 1 ? 1 : (capacity > most ? (uint32_t) most : capacity);
}

/*
 * gagg_table_alloc: a table of capacity groups (fewer: gagg_hll_capacity) and arena_cap key bytes in
 * place of the current one, emptied (kern_agg_init); -1 with the error set
 * (the old table is kept when the new one does not fit)
 */
static int
gagg_table_alloc(GaggRun *g, uint32_t capacity, uint64_t arena_cap)
{
	XpuGaggTable *t = &g->table;
	uint32_t	n_slots = 2;
	size_t		off_key_off, off_key_len, off_arena, off_states, off_hll, total;
	CUdeviceptr mem;

	capacity = gagg_hll_capacity(g, capacity);
	while (n_slots < 2 * (uint64_t) capacity)
		n_slots *= 2;
	off_key_off = align_up((size_t) n_slots * 8, 256);
	off_key_len = off_key_off + align_up((size_t) capacity * 8, 256);
	off_arena = off_key_len + align_up((size_t) capacity * 4, 256);
	off_states = off_arena + align_up(arena_cap, 256);
	off_hll = off_states + align_up((size_t) capacity * g->spec.n_aggs * sizeof(XpuAggState), 256);
	total = off_hll + (size_t) capacity * g->spec.hll_group_bytes + 256;
	if (gagg_dev_alloc(g, &mem, total, "the aggregation table") != 0)
		return -1;
	gagg_dev_free(g, &g->table_mem, g->table_bytes);
	g->table_mem = mem;
	g->table_bytes = total;
	memset(t, 0, sizeof(*t));
	t->slots = (uint64_t *) (uintptr_t) mem;
	t->key_off = (uint64_t *) (uintptr_t) (mem + off_key_off);
	t->key_len = (uint32_t *) (uintptr_t) (mem + off_key_len);
	t->arena = (uint8_t *) (uintptr_t) (mem + off_arena);
	t->states = (XpuAggState *) (uintptr_t) (mem + off_states);
	t->hll = (uint8_t *) (uintptr_t) (mem + off_hll);
	t->n_slots = n_slots;
	t->capacity = capacity;
	t->arena_cap = arena_cap;
	return 0;
}

/* gagg_table_reset: the table (its HLL sketches too) emptied on the GPU (stream of slot 0) */
static int
gagg_table_reset(GaggRun *g)
{
	CUstream	s = g->slots[0].stream;
	uint64_t	n = g->table.n_slots;
	uint64_t	n_states = (uint64_t) g->table.capacity * g->spec.n_aggs;
	size_t		hll_bytes = (size_t) g->table.capacity * g->spec.hll_group_bytes;
	uint32_t	blocks;
	void	   *params[] = {&g->d_table, &g->d_spec};

	if (n_states > n)
		n = n_states;
	blocks = (uint32_t) ((n + XPU_GAGG_BLOCK - 1) / XPU_GAGG_BLOCK);
	if (blocks > (uint32_t) g->n_sms * 16)
		blocks = g->n_sms * 16;
	if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(g->d_table, &g->table, sizeof(g->table), s),
				  "cuMemcpyHtoDAsync") != 0 ||
		(hll_bytes > 0 &&
		 gagg_cuda(g, gpu_drv.cuMemsetD8Async((CUdeviceptr) (uintptr_t) g->table.hll, 0,
											  hll_bytes, s), "cuMemsetD8Async") != 0) ||
		gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(g->f_init, blocks, 1, 1,
														  XPU_GAGG_BLOCK, 1, 1, 0, s,
														  params, NULL)), "cuLaunchKernel") != 0)
		return -1;
	return gagg_cuda(g, gpu_drv.cuStreamSynchronize(s), "cuStreamSynchronize");
}

/*
 * copies the first n groups of table th (key offsets, lengths, arena,
 * states, HLL sketches) to the host
 */
static int
gagg_table_copy_back(GaggRun *g, const XpuGaggTable *th, uint64_t n, uint64_t arena_len,
					 uint64_t *key_off, uint32_t *key_len, uint8_t *arena,
					 XpuAggState *states, uint8_t *hll)
{
	CUstream	s = g->slots[0].stream;
	size_t		n_states = n * g->spec.n_aggs;
	size_t		hll_len = n * g->spec.hll_group_bytes;

	if (gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(key_off, (CUdeviceptr) (uintptr_t) th->key_off,
											   n * sizeof(uint64_t), s), "cuMemcpyDtoHAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(key_len, (CUdeviceptr) (uintptr_t) th->key_len,
											   n * sizeof(uint32_t), s), "cuMemcpyDtoHAsync") != 0 ||
		(arena_len > 0 &&
		 gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(arena, (CUdeviceptr) (uintptr_t) th->arena,
												arena_len, s), "cuMemcpyDtoHAsync") != 0) ||
		(n_states > 0 &&
		 gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(states, (CUdeviceptr) (uintptr_t) th->states,
												n_states * sizeof(XpuAggState), s),
					"cuMemcpyDtoHAsync") != 0) ||
		(hll_len > 0 &&
		 gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(hll, (CUdeviceptr) (uintptr_t) th->hll,
												hll_len, s), "cuMemcpyDtoHAsync") != 0))
		return -1;
	return gagg_cuda(g, gpu_drv.cuStreamSynchronize(s), "cuStreamSynchronize");
}

/*
 * gagg_hll_value: the host copy of sketch h (precision p) as a sink gets it
 * (GpuAggHll): its registers when it is past the explicit limit, else its
 * distinct hashes, gathered at the front of its slots
 */
static void
gagg_hll_value(XpuGaggHll *h, int p, GpuAggHll *v)
{
	uint32_t	n_slots = xpu_gagg_hll_slots(p);
	uint64_t   *slots = (uint64_t *) (h + 1);
	uint32_t	n = 0;

	if ((h->flags & XPU_GAGG_HLL_DENSE) || h->n > XPU_HLL_EXPLICIT_LIMIT(p))
	{
		v->dense = 1;
		v->len = UINT32_C(1) << p;
		v->data = (const uint8_t *) (slots + n_slots);
		return;
	}
	for (uint32_t i = 0; i < n_slots; i++)
		if (slots[i] != 0)
			slots[n++] = slots[i];
	if ((h->flags & XPU_GAGG_HLL_ZERO) && n < n_slots)
		slots[n++] = 0;
	v->dense = 0;
	v->len = n * 8;
	v->data = (const uint8_t *) slots;
}

/*
 * hands the n groups read back to the sink (states made xpu_agg.h's, HLL
 * states pointing to their sketches); XPU_ERR_FALLBACK (*g->err set) when
 * the sink refuses a group for its HLL sketches' memory limit
 */
static int
gagg_sink_groups(GaggRun *g, uint64_t n, uint64_t arena_len, const uint64_t *key_off,
				 const uint32_t *key_len, const uint8_t *arena, XpuAggState *states,
				 uint8_t *hll)
{
	int			n_aggs = g->spec.n_aggs;
	GpuAggHll	vals[XPU_AGG_MAX_AGGS];

	for (uint64_t i = 0; i < n; i++)
	{
		XpuAggState *st = states + i * n_aggs;

		if (key_len[i] == XPU_GAGG_NO_KEY)
			continue;			/* no row reached it */
		if (g->spec.n_keys > 0 &&
			(key_off[i] > arena_len || key_len[i] > arena_len - key_off[i]))
			return gagg_fail(g, WARP_ERR_IO, "GPU failure: group %lu has no valid key",
							 (unsigned long) i);
		for (int j = 0; j < n_aggs; j++)
		{
			xpu_agg_gpu_finish(&st[j], g->spec.agg_kind[j]);
			if (g->spec.agg_kind[j] != XPU_AGG_HLL)
				continue;
			gagg_hll_value((XpuGaggHll *) (hll + i * g->spec.hll_group_bytes +
										   g->spec.hll_off[j]),
						   g->spec.agg_param[j], &vals[j]);
			st[j].v.i = vals[j].len > 0 ? (int64_t) (uintptr_t) &vals[j] : 0;
		}
		if (!g->sink(g->sink_arg, g->spec.n_keys > 0 ? arena + key_off[i] : arena,
					 g->spec.n_keys > 0 ? key_len[i] : 0, st, g->err))
		{
			if (g->err->code == XPU_ERR_FALLBACK)
				return XPU_ERR_FALLBACK;
			return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "%s", g->err->message);
		}
	}
	return 0;
}

/*
 * gagg_matched_back: the device's matched flags of the run's RIGHT/FULL
 * depth ORed into the run's (every participant's and device's marks meet
 * there; agg.c emits the rows none marked after the pass).  Streams idle.
 */
static int
gagg_matched_back(GaggRun *g)
{
	uint32_t   *m = g->run->joins ? g->run->joins->matched : NULL;
	uint32_t   *host;

	if (g->d_matched == 0 || m == NULL)
		return 0;
	if ((host = malloc(g->matched_words * 4 + 4)) == NULL)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory reading back the matched flags");
	if (gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(host, g->d_matched, g->matched_words * 4,
											   g->slots[0].stream), "cuMemcpyDtoHAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[0].stream), "cuStreamSynchronize") != 0)
	{
		free(host);
		return -1;
	}
	for (uint64_t w = 0; w < g->matched_words; w++)
		if (host[w] != 0)
			__atomic_fetch_or(&m[w], host[w], __ATOMIC_RELAXED);
	free(host);
	return 0;
}

/*
 * gagg_table_drain: hands every group of the GPU table to the sink (all
 * streams idle); *thp receives the table's header with its counters.
 * Returns 0, -1 (error set) or gagg_sink_groups' XPU_ERR_FALLBACK.
 */
int
gagg_table_drain(GaggRun *g, XpuGaggTable *thp)
{
	XpuGaggTable th;
	int			n_aggs = g->spec.n_aggs;
	uint64_t	n, arena_len;
	uint64_t   *key_off = NULL;
	uint32_t   *key_len = NULL;
	uint8_t    *arena = NULL;
	XpuAggState *states = NULL;
	uint8_t    *hll = NULL;
	int			rc = -1;

	if (gagg_matched_back(g) != 0)
		return -1;
	if (gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(&th, g->d_table, sizeof(th), g->slots[0].stream),
				  "cuMemcpyDtoHAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[0].stream), "cuStreamSynchronize") != 0)
		return -1;
	*thp = th;
	n = g->spec.n_keys == 0 ? 1 : (th.n_groups < th.capacity ? th.n_groups : th.capacity);
	arena_len = th.arena_used < th.arena_cap ? th.arena_used : th.arena_cap;
	if (n == 0)
		return 0;
	key_off = malloc(n * sizeof(uint64_t));
	key_len = malloc(n * sizeof(uint32_t));
	arena = malloc(arena_len + 1);
	states = malloc(n * n_aggs * sizeof(XpuAggState) + 1);
	hll = malloc(n * g->spec.hll_group_bytes + 1);
	if (key_off == NULL || key_len == NULL || arena == NULL || states == NULL || hll == NULL)
	{
		gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory reading back %lu groups",
				  (unsigned long) n);
		goto done;
	}
	if (gagg_table_copy_back(g, &th, n, arena_len, key_off, key_len, arena, states, hll) != 0)
		goto done;
	rc = gagg_sink_groups(g, n, arena_len, key_off, key_len, arena, states, hll);
done:
	free(key_off);
	free(key_len);
	free(arena);
	free(states);
	free(hll);
	return rc;
}

/*
 * gagg_table_flush: after a launch found the table full: its groups go to
 * the sink, and it is emptied, grown first where it lacked group ids or
 * key space (kept as it is when a bigger one does not fit but a key does).
 * Returns 0, -1 or gagg_table_drain's XPU_ERR_FALLBACK.
 */
static int
gagg_table_flush(GaggRun *g)
{
	XpuGaggTable th;
	uint32_t	capacity = g->table.capacity;
	uint64_t	arena_cap = g->table.arena_cap;
	int			rc;

	if ((rc = gagg_table_drain(g, &th)) != 0)
		return rc;
	if (th.n_groups > capacity && capacity < XPU_GAGG_MAX_CAPACITY)
		capacity = gagg_hll_capacity(g, capacity * 2);
	if (th.arena_used > arena_cap || th.max_key_len > arena_cap)
		arena_cap = 2 * (arena_cap > th.max_key_len ? arena_cap : th.max_key_len);
	if ((capacity != g->table.capacity || arena_cap != g->table.arena_cap) &&
		gagg_table_alloc(g, capacity, arena_cap) != 0)
	{
		if (*g->werr != WARP_ERR_OUT_OF_MEMORY || th.max_key_len > g->table.arena_cap)
			return -1;
		*g->werr = 0;			/* the old table serves, at more flushes */
		g->msg[0] = '\0';
	}
	return gagg_table_reset(g);
}

/* ---------------- launches ---------------- */

/*
 * gagg_launch: queues on the slot's stream the kernel over the slot's
 * chunk (rows == 0) or over the n_rows rows listed at rows, overflow going
 * to ovf, and the copy of its status back
 */
int
gagg_launch(GaggRun *g, GaggSlot *s, CUdeviceptr rows, uint32_t n_rows, CUdeviceptr ovf)
{
	int64_t		n = rows != 0 ? (int64_t) n_rows : s->nrows;
	uint32_t	prog_len = g->prog->total_len;
	uint32_t	blocks = (uint32_t) ((n + XPU_GAGG_BLOCK - 1) / XPU_GAGG_BLOCK);
	uint32_t	smem = xpu_gagg_smem_total(g->smem_prog, g->entries, &g->spec);
	CUdeviceptr chunk = s->dev;
	void	   *params[] = {&g->d_prog, &prog_len, &g->smem_prog, &chunk, &g->d_spec,
		&g->d_table, &rows, &n_rows, &ovf, &s->d_launch, &g->entries, &g->d_cancel};

	if (blocks > (uint32_t) g->n_sms * GAGG_BLOCKS_PER_SM)
		blocks = g->n_sms * GAGG_BLOCKS_PER_SM;
	if (blocks == 0)
		blocks = 1;
	if (gagg_cuda(g, gpu_drv.cuMemsetD8Async(s->d_launch, 0, sizeof(XpuGaggLaunch), s->stream),
				  "cuMemsetD8Async") != 0 ||
		gagg_cuda(g, gpu_drv.cuEventRecord(s->ev_start, s->stream), "cuEventRecord") != 0 ||
		gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(g->f_exec, blocks, 1, 1,
														  XPU_GAGG_BLOCK, 1, 1, smem,
														  s->stream, params, NULL)),
				  "cuLaunchKernel") != 0 ||
		gagg_cuda(g, gpu_drv.cuEventRecord(s->ev_end, s->stream), "cuEventRecord") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(s->status, s->d_launch, sizeof(XpuGaggLaunch),
											   s->stream), "cuMemcpyDtoHAsync") != 0)
		return -1;
	s->busy = 1;
	return 0;
}

/*
 * gagg_stream_wait: waits for the work queued on stream st; while it runs,
 * a cancel of the run is passed on to the kernels (the flag they poll,
 * kern_agg.cu) every GAGG_POLL_NS.  -1 with WARP_ERR_CANCELED once the
 * stream is idle after a cancel.
 */
int
gagg_stream_wait(GaggRun *g, CUstream st)
{
	struct timespec nap = {0, GAGG_POLL_NS};
	CUresult	rc;

	while ((rc = gpu_drv.cuStreamQuery(st)) == CUDA_ERROR_NOT_READY)
	{
		if (g->run->canceled != NULL && *g->run->canceled && !g->cancel_sent)
		{
			g->cancel_sent = true;
			if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(g->d_cancel, g->cancel_one,
													   sizeof(int32_t), g->cancel_stream),
						  "cuMemcpyHtoDAsync") != 0)
				return -1;
		}
		nanosleep(&nap, NULL);
	}
	if (gagg_cuda(g, rc, "cuStreamQuery") != 0)
		return -1;
	if (g->run->canceled != NULL && *g->run->canceled)
		return gagg_fail(g, WARP_ERR_CANCELED, "canceled");
	return 0;
}

/*
 * gagg_slot_finish: waits for the slot's batch; a full table is flushed
 * and the rows that did not fit run again until none is left; then the
 * cache entries the batch filled are published.  Returns 0, -1 (error
 * set), or the program's XpuErrorCode (*g->err filled).
 */
int
gagg_slot_finish(GaggRun *g, GaggSlot *s)
{
	int			list = 0,
				rc;

	s->busy = 0;
	for (;;)
	{
		XpuGaggLaunch st;
		float		ms = 0;
		size_t		list_bytes = s->ovf_cap * sizeof(uint32_t);

		if (gagg_stream_wait(g, s->stream) != 0)
			return -1;
		if (gpu_drv.cuEventElapsedTime(&ms, s->ev_start, s->ev_end) == CUDA_SUCCESS)
			GAGG_ADD(g->run->exec_us, (uint64_t) (ms * 1000.0f));
		st = *s->status;
		if (st.err.code != XPU_OK)
		{
			*g->err = st.err;
			g->err->file[XPU_ERROR_FILE_LEN - 1] = '\0';
			g->err->message[XPU_ERROR_MESSAGE_LEN - 1] = '\0';
			return st.err.code;
		}
		GAGG_ADD(g->run->rows_passed, (uint64_t) st.rows_passed);
		for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
			if (st.join_in[d] != 0)
				GAGG_ADD(g->run->join_rows.in[d], (uint64_t) st.join_in[d]);
		if (st.n_overflow == 0)
		{
			gagg_slot_release(g, s, true);
			return 0;
		}
		for (int i = 0; i < GAGG_SLOTS; i++)
			if (gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[i].stream),
						  "cuStreamSynchronize") != 0)
				return -1;
		if ((rc = gagg_table_flush(g)) != 0)
			return rc;
		if (gagg_launch(g, s, s->ovf + list * list_bytes, st.n_overflow,
						s->ovf + (1 - list) * list_bytes) != 0)
			return -1;
		s->busy = 0;
		list = 1 - list;
	}
}

/*
 * gagg_run_batches: every batch of every file through the two slots, a
 * launch taking several small ones: the batches after the ones the GPU
 * works on are read meanwhile
 */
static int
gagg_run_batches(GaggRun *g)
{
	AggRun	   *run = g->run;
	GaggCursor	cur = {0, 0};
	GaggWork	w[GAGG_LAUNCH_PARTS];
	int64_t		rows;
	int			next = 0,
				n,
				rc;

	while ((n = gagg_next_launch(g, &cur, w, &rows)) > 0)
	{
		GaggSlot   *s = &g->slots[next];

		if (run->canceled != NULL && *run->canceled)
			return gagg_fail(g, WARP_ERR_CANCELED, "canceled");
		if (s->busy && (rc = gagg_slot_finish(g, s)) != 0)
			return rc;
		if (gagg_fill_slot(g, s, w, n) != 0)
			return -1;
		GAGG_ADD(run->rows_in, (uint64_t) s->nrows);
		GAGG_ADD(run->batches, (uint64_t) n);
		if (s->nrows == 0)
			continue;
		if (gagg_copy_slot(g, s) != 0 || gagg_launch(g, s, 0, 0, s->ovf) != 0)
			return -1;
		next = (next + 1) % GAGG_SLOTS;
	}
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		GaggSlot   *s = &g->slots[(next + i) % GAGG_SLOTS];

		if (s->busy && (rc = gagg_slot_finish(g, s)) != 0)
			return rc;
	}
	return 0;
}

/* ---------------- a run ---------------- */

/* rows of the run's batches; -1 when a batch number is out of range */
static int64_t
gagg_total_rows(GaggRun *g)
{
	int64_t		n = 0;

	for (uint32_t fi = 0; fi < g->run->n_files; fi++)
	{
		AggRunFile *f = &g->run->files[fi];

		for (uint32_t bi = 0; bi < f->n_batches; bi++)
		{
			if (f->batches[bi] < 0 || f->batches[bi] >= f->file->n_batches)
				return gagg_fail(g, WARP_ERR_PROTOCOL, "%s has no record batch %d",
								 f->path, f->batches[bi]);
			if (f->file->batches[f->batches[bi]].n_rows > INT32_MAX)
				return gagg_fail(g, WARP_ERR_UNSUPPORTED,
								 "%s: record batch %d has too many rows for the GPU",
								 f->path, f->batches[bi]);
			n += f->file->batches[f->batches[bi]].n_rows;
		}
	}
	return n;
}

/* the slots' streams, events and status buffers, and the kernel that fills cache entries */
static int
gagg_slots_create(GaggRun *g)
{
	CUmodule	mod;

	if (!gpu_device_module(g->dev, &mod, g->msg, g->msglen))
		return gagg_fail(g, WARP_ERR_UNSUPPORTED, "%s", g->msg);
	if (gagg_cuda(g, gpu_drv.cuModuleGetFunction(&g->f_copy, mod, "kern_copy_pieces"),
				  "cuModuleGetFunction") != 0)
		return -1;
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		GaggSlot   *s = &g->slots[i];

		if (gagg_stream_get(g, &s->stream) != 0 ||
			gagg_event_get(g, &s->ev_start) != 0 ||
			gagg_event_get(g, &s->ev_end) != 0 ||
			gagg_host_alloc(g, (void **) &s->status, sizeof(XpuGaggLaunch), "a status") != 0 ||
			gagg_dev_alloc(g, &s->d_launch, sizeof(XpuGaggLaunch), "a status") != 0)
			return -1;
		size_t		n = (size_t) GAGG_LAUNCH_PARTS * g->prog->n_cols + 1;

		s->entries = calloc(n, sizeof(GpuCacheEntry *));
		s->filling = calloc(n, 1);
		s->copies = calloc(n, sizeof(GaggCopy));
		s->copies_cap = (int) n;
		if (s->entries == NULL || s->filling == NULL || s->copies == NULL)
			return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	}
	return 0;
}

/*
 * gagg_direct_setup: each file of the run registered with cuFile where the
 * service reads files with it (gpu_direct.c); a file it refuses is read
 * with pread, unless pg_warp.gpudirect is on: the run fails then, as it
 * does when cuFile cannot be used at all
 */
static int
gagg_direct_setup(GaggRun *g)
{
	static bool logged;			/* a refused file (once a service) */
	const char *unusable = gpu_direct_unusable();
	char		why[256];

	if (g->run->n_files == 0)
		return 0;
	if (unusable != NULL)
		return gagg_fail(g, WARP_ERR_IO, "pg_warp.gpudirect is on, but cuFile cannot be used: %s",
						 unusable);
	if (gpu_direct_mode() == WARP_CUFILE_NONE)
		return 0;
	if ((g->direct = calloc(g->run->n_files, sizeof(GpuDirectFile *))) == NULL)
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (uint32_t fi = 0; fi < g->run->n_files; fi++)
	{
		if ((g->direct[fi] = gpu_direct_open(g->run->files[fi].fd, why, sizeof(why))) != NULL)
			continue;
		if (gpu_direct_required())
			return gagg_fail(g, WARP_ERR_IO, "could not read file \"%s\" with cuFile: %s",
							 g->run->files[fi].path, why);
		if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
			svc_log("LOG", "file \"%s\" is read with pread, not cuFile: %s "
					"(later files refused are not logged)", g->run->files[fi].path, why);
	}
	return 0;
}

/*
 * gagg_cache_setup: the identity of each file of the run (fstat of the
 * descriptor agg.c checked), and the cache entries of their older versions
 * dropped; a file whose identity cannot be read is not cached
 */
static int
gagg_cache_setup(GaggRun *g)
{
	bool		pin = file_reg_limit() > 0;

	file_reg_run_begin();
	g->reg_run = true;
	g->use_cache = gpu_cache_capacity(g->dev) > 0;
	g->ctx = gpu_device_context(g->dev);
	g->ids = calloc(g->run->n_files + 1, sizeof(GpuCacheFileId));
	g->regs = pin ? calloc(g->run->n_files + 1, sizeof(FileReg *)) : NULL;
	if (g->ids == NULL || (pin && g->regs == NULL))
		return gagg_fail(g, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (uint32_t fi = 0; (g->use_cache || pin) && fi < g->run->n_files; fi++)
	{
		if (!gpu_cache_file_id(g->run->files[fi].fd, &g->ids[fi]))
			g->ids[fi].ino = 0;
		else if (g->use_cache)
			gpu_cache_check_file(g->dev, &g->ids[fi]);
		if (pin && g->ids[fi].ino != 0)
			g->regs[fi] = file_reg_acquire(&g->ids[fi], g->run->files[fi].fd);
	}
	return gagg_direct_setup(g);
}

/*
 * gagg_cache_recheck: a file that changed while the run read it (its
 * identity now is not the one the run started with) loses its entries
 */
static void
gagg_cache_recheck(GaggRun *g)
{
	for (uint32_t fi = 0; g->ids != NULL && g->use_cache && fi < g->run->n_files; fi++)
	{
		GpuCacheFileId now;

		if (g->ids[fi].ino != 0 &&
			(!gpu_cache_file_id(g->run->files[fi].fd, &now) ||
			 memcmp(&now, &g->ids[fi], sizeof(now)) != 0))
			gpu_cache_drop_file(g->dev, &g->ids[fi]);
	}
}

/*
 * the flag that stops the kernels: device memory (zeroed on slot 0's
 * stream, before any launch) that a copy on a stream of its own sets while
 * the kernels run
 */
static int
gagg_cancel_setup(GaggRun *g)
{
	if (gagg_host_alloc(g, (void **) &g->cancel_one, sizeof(int32_t), "the cancel flag") != 0 ||
		gagg_dev_alloc(g, &g->d_cancel, sizeof(int32_t), "the cancel flag") != 0 ||
		gagg_stream_get(g, &g->cancel_stream) != 0)
		return -1;
	*g->cancel_one = 1;
	return gagg_cuda(g, gpu_drv.cuMemsetD8Async(g->d_cancel, 0, sizeof(int32_t),
												g->slots[0].stream), "cuMemsetD8Async");
}

/*
 * gagg_first_table: the first table: one group without keys, else
 * opts->initial_groups or as many groups as rows up to a million, halved
 * while the GPU lacks the memory
 */
static int
gagg_first_table(GaggRun *g, const GpuAggOptions *opts, int64_t total_rows)
{
	uint64_t	groups = opts->initial_groups;

	if (g->spec.n_keys == 0)
		groups = 1;
	else if (groups == 0)
		groups = total_rows < 1024 ? 1024 :
			(total_rows > GAGG_DEFAULT_GROUPS ? GAGG_DEFAULT_GROUPS : (uint64_t) total_rows);
	for (;;)
	{
		uint64_t	arena = groups * gagg_key_estimate(&g->spec);

		if (gagg_table_alloc(g, (uint32_t) groups, arena < 4096 ? 4096 : arena) == 0)
			return gagg_table_reset(g);
		if (*g->werr != WARP_ERR_OUT_OF_MEMORY || groups <= 1024)
			return -1;
		groups /= 2;
	}
}

/*
 * gagg_joins_setup: the run's join tables in device memory (each copied
 * once per device by join_store.c, on the first run that probes it there)
 * and the array of their device addresses that the chunks point at
 */
static int
gagg_joins_setup(GaggRun *g)
{
	const SvcJoinSet *set = g->run->joins;
	CUstream	st = g->slots[0].stream;
	CUresult	rc;

	g->n_joins = set != NULL ? (int32_t) set->n : 0;
	if (g->n_joins == 0)
		return 0;
	for (int d = 0; d < g->n_joins; d++)
	{
		/* an allocation evicts from the column cache while that makes room */
		if ((g->join_ptrs[d] = svc_join_device_copy(set, d, g->dev, st, &rc)) == 0)
			return rc == CUDA_ERROR_OUT_OF_MEMORY ?
				gagg_fail(g, WARP_ERR_OUT_OF_MEMORY,
						  "out of GPU memory: could not copy join table %d", d) :
				gagg_cuda(g, rc, "a join table's copy");
	}
	if (gagg_dev_alloc(g, &g->d_joins, g->n_joins * sizeof(CUdeviceptr), "the join tables") != 0)
		return -1;
	/*
	 * a RIGHT/FULL depth: the run's flags on this device, zeroed
	 * (gagg_matched_back); a word more than they need, so that an empty
	 * inner table's are no allocation of 0 bytes (which the driver refuses)
	 */
	if (set->matched != NULL &&
		(gagg_dev_alloc(g, &g->d_matched, (set->matched_words + 1) * 4, "the matched flags") != 0 ||
		 gagg_cuda(g, gpu_drv.cuMemsetD8Async(g->d_matched, 0, (set->matched_words + 1) * 4, st),
				   "cuMemsetD8Async") != 0))
		return -1;
	g->matched_words = g->d_matched ? set->matched_words : 0;
	return gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(g->d_joins, g->join_ptrs,
												  g->n_joins * sizeof(CUdeviceptr), st),
					 "cuMemcpyHtoDAsync");
}

/* the columns of the chunks a run's launches read: past the program's highest col_index */
static int32_t
gagg_chunk_ncols(const XpuProgram *prog)
{
	int32_t		n = 1;

	for (int k = 0; k < prog->n_cols; k++)
		if (XPU_COLS(prog)[k].col_index + 1 > n)
			n = XPU_COLS(prog)[k].col_index + 1;
	return n;
}

/*
 * everything a run needs before its first batch; -1 (error set), or
 * XPU_ERR_FALLBACK when one group's HLL sketches pass their memory limit
 */
int
gagg_setup(GaggRun *g, const ServiceGpu *gpu, uint32_t dev, const GpuAggOptions *opts)
{
	const XpuProgram *prog;
	CUmodule	mod;
	uint32_t	per_entry;
	int64_t		total_rows;
	int			threads = g->run->n_threads > 0 ? (int) g->run->n_threads : 4;

	/* the kernel runs hoisted constants once per thread, not once per row */
	if ((g->hoisted = xpu_program_hoist_consts(g->prog)) != NULL)
		g->prog = g->hoisted;
	prog = g->prog;
	if (!gpu_device_module(dev, &mod, g->msg, g->msglen))
		return gagg_fail(g, WARP_ERR_UNSUPPORTED, "%s", g->msg);
	if (gagg_cuda(g, gpu_drv.cuModuleGetFunction(&g->f_init, mod, "kern_agg_init"),
				  "cuModuleGetFunction") != 0 ||
		gagg_cuda(g, gpu_drv.cuModuleGetFunction(&g->f_exec, mod, "kern_agg_exec"),
				  "cuModuleGetFunction") != 0 ||
		gagg_spec_build(g) != 0 ||
		(total_rows = gagg_total_rows(g)) < 0)
		return -1;
	g->n_sms = gpu->devices[dev].multiprocessors > 0 ? (int) gpu->devices[dev].multiprocessors : 1;
	g->smem_prog = prog->total_len <= 16384 ? (uint32_t) align_up(prog->total_len, 16) : 0;
	per_entry = sizeof(XpuGaggCacheEntry) + g->spec.n_aggs * sizeof(XpuAggState);
	g->entries = (GAGG_SMEM_BUDGET - g->smem_prog) / per_entry;
	if (g->entries > GAGG_CACHE_MAX)
		g->entries = GAGG_CACHE_MAX;
	if (g->spec.n_keys == 0 && g->entries > 1)
		g->entries = 1;
	while (g->entries & (g->entries - 1))
		g->entries &= g->entries - 1;	/* a power of 2 */
	if (g->spec.hll_group_bytes > g->hll_limit)
	{
		XPU_ERROR(g->err, XPU_ERR_FALLBACK,
				  "HyperLogLog sketches of the groups need more memory than allowed");
		return XPU_ERR_FALLBACK;
	}
	gagg_spec_hll_smem(g);
	g->chunk_ncols = gagg_chunk_ncols(prog);
	if (gagg_cache_setup(g) != 0 || gagg_slots_create(g) != 0 ||
		gagg_cancel_setup(g) != 0 || gagg_joins_setup(g) != 0 ||
		gagg_dev_alloc(g, &g->d_prog, prog->total_len, "the program") != 0 ||
		gagg_dev_alloc(g, &g->d_spec, sizeof(XpuGaggSpec), "the aggregates") != 0 ||
		gagg_dev_alloc(g, &g->d_table, sizeof(XpuGaggTable), "the table") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(g->d_prog, prog, prog->total_len,
											   g->slots[0].stream), "cuMemcpyHtoDAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(g->d_spec, &g->spec, sizeof(XpuGaggSpec),
											   g->slots[0].stream), "cuMemcpyHtoDAsync") != 0 ||
		gagg_first_table(g, opts, total_rows) != 0)
		return -1;
	gagg_io_start(&g->io, (threads < GAGG_IO_THREADS ? threads : GAGG_IO_THREADS) - 1, g->ctx);
	return 0;
}

/* releases what gagg_setup and the batches took (after waiting for the GPU) */
void
gagg_teardown(GaggRun *g)
{
	/* nothing queued can use the run's memory after this: it can be kept */
	for (int i = 0; i < GAGG_SLOTS; i++)
		if (g->slots[i].stream != NULL)
			gpu_drv.cuStreamSynchronize(g->slots[i].stream);
	if (g->cancel_stream != NULL)
		gpu_drv.cuStreamSynchronize(g->cancel_stream);
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		GaggSlot   *s = &g->slots[i];

		gagg_stream_keep(g, &s->stream);
		gagg_event_keep(g, &s->ev_start);
		gagg_event_keep(g, &s->ev_end);
		gagg_slot_release(g, s, false);
		free(s->entries);
		free(s->filling);
		free(s->copies);
		gagg_batch_release(g, &s->host, s->host_cap);
		gagg_host_keep(g, (void **) &s->status, sizeof(XpuGaggLaunch));
		gagg_dev_keep(g, &s->dev, s->dev_cap);
		gagg_dev_keep(g, &s->ovf, 2 * s->ovf_cap * sizeof(uint32_t));
		gagg_dev_keep(g, &s->d_launch, sizeof(XpuGaggLaunch));
	}
	gagg_dev_keep(g, &g->table_mem, g->table_bytes);
	gagg_dev_keep(g, &g->d_prog, g->prog->total_len);
	gagg_dev_keep(g, &g->d_spec, sizeof(XpuGaggSpec));
	gagg_dev_keep(g, &g->d_table, sizeof(XpuGaggTable));
	gagg_dev_keep(g, &g->d_joins, g->n_joins * sizeof(CUdeviceptr));
	if (g->d_matched != 0)
		gagg_dev_keep(g, &g->d_matched, (g->matched_words + 1) * 4);
	gagg_stream_keep(g, &g->cancel_stream);
	gagg_dev_keep(g, &g->d_cancel, sizeof(int32_t));
	gagg_host_keep(g, (void **) &g->cancel_one, sizeof(int32_t));
	gagg_cache_recheck(g);
	/* after the streams: no copy from a registered region is in flight */
	for (uint32_t fi = 0; g->regs != NULL && fi < g->run->n_files; fi++)
		file_reg_release(g->regs[fi]);
	free(g->regs);
	if (g->reg_run)
		file_reg_run_end();
	g->reg_run = false;
	for (uint32_t fi = 0; g->direct != NULL && fi < g->run->n_files; fi++)
		gpu_direct_close(g->direct[fi]);
	free(g->direct);
	free(g->ids);
	if (g->io.n_threads > 0 || g->io.stop == 0)
		gagg_io_stop(&g->io);
	if (g->hoisted != NULL)
	{
		g->prog = g->run->prog;
		free(g->hoisted);
		g->hoisted = NULL;
	}
}

/*
 * gagg_begin: the start of every GPU run over g (zeroed by the caller):
 * the run, its error outputs (cleared), no I/O threads yet, and device
 * `device` (modulo the devices) made current.  -1 with the error set when
 * there is no GPU or its context cannot be made current (nothing to pop).
 */
int
gagg_begin(GaggRun *g, const ServiceGpu *gpu, AggRun *run, uint32_t device, XpuError *err,
		   int *werr, char *msg, size_t msglen)
{
	memset(err, 0, sizeof(*err));
	*werr = 0;
	msg[0] = '\0';
	g->run = run;
	g->prog = run->prog;
	g->err = err;
	g->werr = werr;
	g->msg = msg;
	g->msglen = msglen;
	g->io.stop = 1;				/* no threads yet */
	if (gpu->n_devices == 0)
		return gagg_fail(g, WARP_ERR_UNSUPPORTED, "no GPU");
	g->dev = device % gpu->n_devices;
	return gagg_cuda(g, gpu_drv.cuCtxPushCurrent(gpu_device_context(g->dev)), "cuCtxPushCurrent");
}

/*
 * gpu_agg_execute
 *		gpu_agg_run (service.h) on device opts->device, the groups going to
 *		sink(sink_arg, ...).  Same results.
 */
int
gpu_agg_execute(const ServiceGpu *gpu, AggRun *run, const GpuAggOptions *opts,
				GpuAggSink sink, void *sink_arg, XpuError *err, int *werr,
				char *msg, size_t msglen)
{
	GaggRun		g;
	CUcontext	ctx;
	XpuGaggTable th;
	GaggClock	clock;
	int			rc;

	memset(&g, 0, sizeof(g));
	g.sink = sink;
	g.sink_arg = sink_arg;
	gagg_clock_start(&clock, run);
	if (gagg_begin(&g, gpu, run, opts->device, err, werr, msg, msglen) != 0)
		return -1;
	rc = gagg_setup(&g, gpu, g.dev, opts);
	gagg_clock_mark(&clock, 1);
	if (rc == 0)
		rc = gagg_run_batches(&g);
	gagg_clock_mark(&clock, 2);
	if (rc == 0)
		rc = gagg_table_drain(&g, &th);
	gagg_clock_mark(&clock, 3);
	gagg_teardown(&g);
	gpu_drv.cuCtxPopCurrent(&ctx);
	gagg_clock_end(&clock, run, g.dev);
	return rc;
}

/* ---------------- a read-ahead (AGG_FILL) ---------------- */

/*
 * gagg_fill_finish: slot s's copies into the cache entries it fills are
 * complete (waited for): the entries are published, and later runs (and
 * the run waiting for them) read them
 */
static int
gagg_fill_finish(GaggRun *g, GaggSlot *s)
{
	s->busy = 0;
	if (gagg_cuda(g, gpu_drv.cuStreamSynchronize(s->stream), "cuStreamSynchronize") != 0)
		return -1;
	gagg_slot_release(g, s, true);
	return 0;
}

/*
 * gagg_fill_batches: every batch of the run read into the device's column
 * cache through the slots, as gagg_run_batches reads them, without a
 * kernel; a slot whose copies are done is published as soon as the next
 * one is read, so that a run that waits for its entries goes on
 */
static int
gagg_fill_batches(GaggRun *g)
{
	AggRun	   *run = g->run;
	GaggCursor	cur = {0, 0};
	GaggWork	w[GAGG_LAUNCH_PARTS];
	int64_t		rows;
	int			next = 0,
				n;

	while ((n = gagg_next_launch(g, &cur, w, &rows)) > 0)
	{
		GaggSlot   *s = &g->slots[next];

		if (run->canceled != NULL && *run->canceled)
			return gagg_fail(g, WARP_ERR_CANCELED, "canceled");
		if (s->busy && gagg_fill_finish(g, s) != 0)
			return -1;
		if (gagg_fill_slot(g, s, w, n) != 0 || gagg_copy_slot(g, s) != 0)
			return -1;
		s->busy = 1;
		GAGG_ADD(run->batches, (uint64_t) n);
		for (int i = 1; i < GAGG_SLOTS; i++)
		{
			GaggSlot   *o = &g->slots[(next + i) % GAGG_SLOTS];

			if (o->busy && gpu_drv.cuStreamQuery(o->stream) == CUDA_SUCCESS &&
				gagg_fill_finish(g, o) != 0)
				return -1;
		}
		next = (next + 1) % GAGG_SLOTS;
	}
	for (int i = 0; i < GAGG_SLOTS; i++)
		if (g->slots[i].busy && gagg_fill_finish(g, &g->slots[i]) != 0)
			return -1;
	return 0;
}

/*
 * gagg_fill_fits: are the run's referenced bytes at most half of the
 * device's cache (a read-ahead that evicted its own first entries would
 * only read them twice)
 */
static bool
gagg_fill_fits(GaggRun *g)
{
	uint64_t	bytes = 0;

	for (uint32_t fi = 0; fi < g->run->n_files; fi++)
		for (uint32_t bi = 0; bi < g->run->files[fi].n_batches; bi++)
			for (int k = 0; k < g->prog->n_cols; k++)
				bytes += gagg_column_bytes(g, &g->run->files[fi], g->run->files[fi].batches[bi], k);
	return bytes <= gpu_cache_capacity(g->dev) / 2;
}

/*
 * gpu_agg_fill_device
 *		The read-ahead of `run` (AGG_FILL) on device `device`: the columns
 *		its program reads, of every batch, copied into the device's column
 *		cache (those the cache has, or another run is filling, left alone),
 *		no kernel run.  Nothing is read when the cache is off or the
 *		columns would take more than half of it.  Returns 0, or -1 with
 *		*werr and msg set (I/O, out of memory, canceled).
 */
int
gpu_agg_fill_device(const ServiceGpu *gpu, AggRun *run, uint32_t device, int *werr,
					char *msg, size_t msglen)
{
	GaggRun		g;
	XpuError	err;
	CUcontext	ctx;
	int			threads = run->n_threads > 0 ? (int) run->n_threads : 4;
	int			rc;

	memset(&g, 0, sizeof(g));
	g.fill_only = true;
	if (gagg_begin(&g, gpu, run, device, &err, werr, msg, msglen) != 0)
		return -1;
	g.chunk_ncols = gagg_chunk_ncols(g.prog);
	rc = gagg_total_rows(&g) < 0 || gagg_cache_setup(&g) != 0 ? -1 : 0;
	if (rc == 0 && g.use_cache && gagg_fill_fits(&g))
	{
		rc = gagg_slots_create(&g);
		if (rc == 0)
		{
			gagg_io_start(&g.io, (threads < GAGG_IO_THREADS ? threads : GAGG_IO_THREADS) - 1,
						  g.ctx);
			g.io.nice = GAGG_FILL_NICE;
			rc = gagg_fill_batches(&g);
		}
	}
	gagg_teardown(&g);
	gpu_drv.cuCtxPopCurrent(&ctx);
	return rc;
}

/*
 * gagg_device_add: device w->device's share w added to the run's report of
 * its GPUs (EXPLAIN ANALYZE); devices past the report's limit are left out
 */
void
gagg_device_add(AggRun *run, const WarpDeviceWork *w)
{
	WarpDeviceWork *to;

	if (w->device >= WARP_REPORT_DEVICES)
		return;
	to = &run->devices[w->device];
	__atomic_fetch_or(&run->devices_used, 1u << w->device, __ATOMIC_RELAXED);
	to->device = w->device;
	GAGG_ADD(to->batches, w->batches);
	GAGG_ADD(to->rows_in, w->rows_in);
	GAGG_ADD(to->exec_us, w->exec_us);
	GAGG_ADD(to->setup_us, w->setup_us);
	GAGG_ADD(to->run_us, w->run_us);
	GAGG_ADD(to->end_us, w->end_us);
	GAGG_ADD(to->drain_us, w->drain_us);
}

/* gagg_clock_start: the start of a run's share (see GaggClock) */
void
gagg_clock_start(GaggClock *c, const AggRun *run)
{
	memset(c->t, 0, sizeof(c->t));
	c->t[0] = svc_now_us(CLOCK_MONOTONIC);
	c->batches = run->batches;
	c->rows = run->rows_in;
	c->exec_us = run->exec_us;
}

/* gagg_clock_mark: the end of step 1 (setup), 2 (batches) or 3 (the groups read back) */
void
gagg_clock_mark(GaggClock *c, int step)
{
	c->t[step] = svc_now_us(CLOCK_MONOTONIC);
}

/*
 * gagg_clock_end: the end of the run's share on device dev, added to the
 * run's report of its GPUs with what its counters grew by meanwhile
 */
void
gagg_clock_end(GaggClock *c, AggRun *run, uint32_t dev)
{
	WarpDeviceWork w;

	c->t[4] = svc_now_us(CLOCK_MONOTONIC);
	w = (WarpDeviceWork) {
		.device = dev, .drain_us = c->t[3] > 0 ? (uint32_t) (c->t[3] - c->t[2]) : 0,
		.batches = run->batches - c->batches, .rows_in = run->rows_in - c->rows,
		.exec_us = run->exec_us - c->exec_us, .setup_us = (uint64_t) (c->t[1] - c->t[0]),
		.run_us = (uint64_t) (c->t[2] - c->t[1]), .end_us = (uint64_t) (c->t[4] - c->t[2])
	};
	gagg_device_add(run, &w);
}

/*
 * the sink of gpu_agg_run: a group's states into the run's CPU table, then
 * its HLL sketches (GpuAggHll) with xpu_agg_table_fold_hll
 */
int
gagg_fold_into_table(void *arg, const uint8_t *key, uint32_t key_len,
					 const XpuAggState *states, XpuError *err)
{
	GaggTableSink *ts = arg;
	XpuAggState st[XPU_AGG_MAX_AGGS];
	int			n_aggs = ts->spec->n_aggs;

	memcpy(st, states, n_aggs * sizeof(XpuAggState));
	for (int a = 0; a < n_aggs; a++)
		if (ts->spec->aggs[a].kind == XPU_AGG_HLL)
			st[a].v.i = 0;
	if (!xpu_agg_table_fold_group(ts->table, key, key_len, st, err))
		return 0;
	for (int a = 0; a < n_aggs; a++)
	{
		const GpuAggHll *h = (const GpuAggHll *) (uintptr_t) states[a].v.i;

		if (ts->spec->aggs[a].kind == XPU_AGG_HLL && h != NULL &&
			!xpu_agg_table_fold_hll(ts->table, key, key_len, a, h->dense, h->data, h->len, err))
			return 0;
	}
	return 1;
}
