/*-------------------------------------------------------------------------
 *
 * gpu_scan.c
 *		GpuScan's filter of Arrow record batches on a GPU: gpu_scan_run
 *		(service.h) takes a SCAN_RUN's batches through the service's one GPU
 *		input path (gpu_agg.c, gpu_agg_int.h) and hands each batch's pass
 *		mask to the caller (scan.c), whose workers compact the passing rows.
 *
 * The run is GpuPreAgg's over the same batches without its aggregation:
 * two slots, each a pinned host buffer, a device buffer and a stream, take
 * the batches in turn, so that while the GPU filters batch k the I/O
 * threads read the program's columns of batch k + 1; a column the device's
 * column cache holds is not read or copied at all, and one the run reads
 * is kept there for later runs.  kern_warp_exec (kern_warp.cu, the per-row
 * interpreter) writes one byte per row into the slot's mask on the device;
 * the mask and the program's first error come back into the slot's pinned
 * buffer (the batch staged there is copied by then: the stream keeps the
 * order).  A batch whose program raised an error or FALLBACK is handed
 * over without a mask, for PostgreSQL to recheck; the run goes on.
 *
 * A projection run (GpuJoin's: a program with outputs) launches
 * kern_join_scan_exec (kern_join_scan.cu) instead: with the mask comes
 * back, per join depth, the inner row each passing row found (int32 per
 * row, xpu_join_scan.h), after the mask in the pinned buffer; the caller's
 * workers compute the outputs of the passing rows from the host copies of
 * the batch and of the inner tables.  Copying back 1 + 4 * depths bytes a
 * row costs less than the outputs themselves would (16 + 1 bytes a row and
 * output as XpuValues), and a text output would point into device memory
 * (the batch's columns or the column cache, an inner table, the program),
 * which the host would have to map back; the host's replay reads its own
 * copies instead.  Its cost is the per-row interpreter's for the passing
 * rows only (xpu_join_scan.h).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_agg_int.h"
#include "xpu/xpu_join_scan.h"

#define GSCAN_BLOCK		256
#define GSCAN_MAX_GRID	65535
#define GSCAN_SMEM_MAX	(48 * 1024)

/* what a slot's launch needs besides its batch: pinned, one per slot */
typedef struct GscanStage
{
	XpuResult	res;			/* copied to the device before the launch */
	XpuError	err;			/* the program's first error, copied back */
	XpuChunk	part;			/* one part of the slot's chunk (gscan_narrow) */
} GscanStage;

typedef struct GscanRun
{
	GaggRun		g;				/* the input path: slots, I/O threads, cache */
	CUfunction	f_warp;			/* kern_warp_exec */
	CUfunction	f_join;			/* kern_join_scan_exec: a projection run */
	int			n_probes;		/* its probes (xpu_join_scan_probes); 0: none */
	bool		join;			/* a projection run (the program has outputs) */
	CUdeviceptr d_prog;			/* the program as the request has it */
	GscanStage *stage[GAGG_SLOTS];
	CUdeviceptr d_aux[GAGG_SLOTS];	/* XpuResult, XpuError, then the mask */
	size_t		aux_cap[GAGG_SLOTS];
	int64_t		work[GAGG_SLOTS];	/* a slot's first batch, in request order */
	GpuScanPass pass;
	void	   *pass_arg;
	uint64_t   *join_in;		/* a projection run's rows entering each depth, or NULL */
	CUdeviceptr d_counts;		/* their device counters (XPU_JOIN_COUNT_DEPTHS) */
} GscanRun;

/* where the parts of a slot's d_aux lie; a projection run's rows after the mask */
#define GSCAN_AUX_ERR		align_up(sizeof(XpuResult), GAGG_ALIGN)
#define GSCAN_AUX_MASK		(GSCAN_AUX_ERR + align_up(sizeof(XpuError), GAGG_ALIGN))
#define GSCAN_ROWS_AT(nrows)	align_up((size_t) (nrows), GAGG_ALIGN)

/* bytes of mask and (a projection run) probe rows for nrows rows */
static size_t
gscan_result_len(const GscanRun *gs, int64_t nrows)
{
	return GSCAN_ROWS_AT(nrows) + (size_t) gs->n_probes * (size_t) nrows * sizeof(int32_t);
}

/*
 * gscan_reserve: room in (idle) slot si for a mask of nrows rows: on the
 * device after the XpuResult and XpuError, in the pinned buffer the mask
 * comes back to
 */
static int
gscan_reserve(GscanRun *gs, int si, int64_t nrows)
{
	GaggRun    *g = &gs->g;
	size_t		need = GSCAN_AUX_MASK + gscan_result_len(gs, nrows);

	if (gagg_slot_reserve(g, &g->slots[si], gscan_result_len(gs, nrows), 0, 0, 4,
						  "a mask") != 0)
		return -1;
	if (need <= gs->aux_cap[si])
		return 0;
	need += need / 4;
	gagg_dev_free(g, &gs->d_aux[si], gs->aux_cap[si]);
	gs->aux_cap[si] = 0;
	if (gagg_dev_alloc(g, &gs->d_aux[si], need, "a mask") != 0)
		return -1;
	gs->aux_cap[si] = need;
	return 0;
}

/*
 * gscan_kernel: queues on slot s's stream kernel f over its chunk with
 * params (a grid of blocks covering its rows, smem bytes of shared memory):
 * the program's error at xerr cleared first, ev_end recorded after, then
 * result_len bytes at result copied back to the start of the slot's pinned
 * buffer and the error to err_host.  The slot is busy until gagg_stream_wait.
 */
static int
gscan_kernel(GaggRun *g, GaggSlot *s, CUfunction f, void **params, uint32_t smem,
			 CUdeviceptr xerr, CUdeviceptr result, size_t result_len, XpuError *err_host)
{
	uint32_t	blocks = (uint32_t) ((s->nrows + GSCAN_BLOCK - 1) / GSCAN_BLOCK);

	if (blocks > GSCAN_MAX_GRID)
		blocks = GSCAN_MAX_GRID;	/* the kernels stride over the grid */
	if (gagg_cuda(g, gpu_drv.cuMemsetD8Async(xerr, 0, sizeof(XpuError), s->stream),
				  "cuMemsetD8Async") != 0 ||
		gagg_cuda(g, GAGG_RETRY(g, gpu_drv.cuLaunchKernel(f, blocks, 1, 1, GSCAN_BLOCK,
														  1, 1, smem, s->stream, params, NULL)),
				  "cuLaunchKernel") != 0 ||
		gagg_cuda(g, gpu_drv.cuEventRecord(s->ev_end, s->stream), "cuEventRecord") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(s->host, result, result_len, s->stream),
				  "cuMemcpyDtoHAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(err_host, xerr, sizeof(XpuError), s->stream),
				  "cuMemcpyDtoHAsync") != 0)
		return -1;
	s->busy = 1;
	return 0;
}

/*
 * gagg_launch_filter (gpu_agg_int.h): queues on slot s's stream the filter
 * of its chunk (at s->dev) by kern_warp_exec (f) with the program at
 * d_prog: the program's error at xerr cleared, the kernel writing the mask
 * the XpuResult at res names (mask, s->nrows bytes), ev_end recorded, then
 * the mask copied back into the slot's pinned buffer and the error to
 * err_host.  The slot is busy until gagg_stream_wait.
 */
int
gagg_launch_filter(GaggRun *g, GaggSlot *s, CUfunction f, CUdeviceptr d_prog, CUdeviceptr res,
				   CUdeviceptr xerr, CUdeviceptr mask, XpuError *err_host)
{
	const XpuProgram *prog = g->run->prog;
	uint32_t	prog_len = prog->total_len;
	uint32_t	smem = prog_len <= GSCAN_SMEM_MAX ? (uint32_t) align_up(prog_len, 16) : 0;
	CUdeviceptr chunk = s->dev;
	void	   *params[] = {&d_prog, &prog_len, &smem, &chunk, &res, &xerr};

	return gscan_kernel(g, s, f, params, smem, xerr, mask, (size_t) s->nrows, err_host);
}

/*
 * gscan_launch_join: gagg_launch_filter's counterpart of a projection run:
 * kern_join_scan_exec over slot s's chunk into the mask at mask and the
 * probes' rows after it (GSCAN_ROWS_AT), both copied back to the start of
 * the slot's pinned buffer (in the same layout), the error to err_host
 */
static int
gscan_launch_join(GscanRun *gs, GaggSlot *s, CUdeviceptr xerr, CUdeviceptr mask,
				  XpuError *err_host)
{
	GaggRun    *g = &gs->g;
	const XpuProgram *prog = g->run->prog;
	uint32_t	prog_len = prog->total_len;
	uint32_t	smem = prog_len <= GSCAN_SMEM_MAX ? (uint32_t) align_up(prog_len, 16) : 0;
	CUdeviceptr chunk = s->dev,
				rows = mask + GSCAN_ROWS_AT(s->nrows);
	void	   *params[] = {&gs->d_prog, &prog_len, &smem, &chunk, &mask, &rows, &xerr,
		&gs->d_counts};

	return gscan_kernel(g, s, gs->f_join, params, smem, xerr, mask,
						gscan_result_len(gs, s->nrows), err_host);
}

/* the filter (gagg_launch_filter) or, for a projection run, the join (gscan_launch_join) */
static int
gscan_queue(GscanRun *gs, GaggSlot *s, CUdeviceptr res)
{
	CUdeviceptr mask = res + GSCAN_AUX_MASK;
	XpuError   *err_host = &gs->stage[s - gs->g.slots]->err;

	if (gs->join)
		return gscan_launch_join(gs, s, res + GSCAN_AUX_ERR, mask, err_host);
	return gagg_launch_filter(&gs->g, s, gs->f_warp, gs->d_prog, res, res + GSCAN_AUX_ERR, mask,
							  err_host);
}

/*
 * gscan_launch: queues on slot si's stream (after its batch's copies) its
 * XpuResult, then the filter into the mask and the copies of the mask and
 * the error back
 */
static int
gscan_launch(GscanRun *gs, int si)
{
	GaggRun    *g = &gs->g;
	GaggSlot   *s = &g->slots[si];
	CUdeviceptr res = gs->d_aux[si],
				mask = gs->d_aux[si] + GSCAN_AUX_MASK;

	gs->stage[si]->res = (XpuResult) {s->nrows, (uint8_t *) (uintptr_t) mask, NULL, NULL};
	if (gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(res, &gs->stage[si]->res, sizeof(XpuResult),
											   s->stream), "cuMemcpyHtoDAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuEventRecord(s->ev_start, s->stream), "cuEventRecord") != 0)
		return -1;
	return gscan_queue(gs, s, res);
}

/*
 * gscan_pass: hands each batch of slot si's launch its part of the mask
 * (NULL: none, a recheck) and of the probes' rows in request order
 */
static void
gscan_pass(GscanRun *gs, int si, const uint8_t *mask)
{
	GaggSlot   *s = &gs->g.slots[si];
	const int32_t *rows = mask != NULL && gs->join ?
		(const int32_t *) (mask + GSCAN_ROWS_AT(s->nrows)) : NULL;

	for (int p = 0; p < s->n_parts; p++)
		gs->pass(gs->pass_arg, gs->work[si] + p, mask != NULL ? mask + s->first_row[p] : NULL,
				 rows != NULL ? rows + s->first_row[p] : NULL, s->nrows, gagg_part_rows(s, p));
}

/*
 * gscan_narrow: slot si's launch over several batches raised an error or
 * FALLBACK: each batch is filtered again on its own (its data is still on
 * the device), so that only the batches that raise it come back without a
 * mask, for PostgreSQL to recheck, as they would have on their own.  The
 * slot's chunk header is replaced by each part's in turn (its part and
 * column descriptors lie after it), the mask comes back to the start of
 * the pinned buffer.
 */
static int
gscan_narrow(GscanRun *gs, int si)
{
	GaggRun    *g = &gs->g;
	GaggSlot   *s = &g->slots[si];
	GscanStage *st = gs->stage[si];
	int64_t		total = s->nrows;
	CUdeviceptr res = gs->d_aux[si],
				mask = res + GSCAN_AUX_MASK;
	int			rc = 0;

	for (int p = 0; p < s->n_parts && rc == 0; p++)
	{
		int64_t		rows = gagg_part_rows(s, p);

		if (rows == 0)
		{
			gs->pass(gs->pass_arg, gs->work[si] + p, s->host, NULL, 0, 0);
			continue;
		}
		st->part = (XpuChunk) {rows, g->chunk_ncols, 0, s->part_cols[p], NULL};
		gagg_chunk_joins(g, &st->part);
		st->res = (XpuResult) {rows, (uint8_t *) (uintptr_t) mask, NULL, NULL};
		s->nrows = rows;
		rc = gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(s->dev, &st->part, sizeof(XpuChunk),
													s->stream), "cuMemcpyHtoDAsync");
		if (rc == 0)
			rc = gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(res, &st->res, sizeof(XpuResult),
														s->stream), "cuMemcpyHtoDAsync");
		if (rc == 0)
			rc = gscan_queue(gs, s, res);
		if (rc == 0)
			rc = gagg_stream_wait(g, s->stream);
		s->busy = 0;
		if (rc == 0 && st->err.code == XPU_OK)
			gs->pass(gs->pass_arg, gs->work[si] + p, s->host,
					 gs->join ? (const int32_t *) (s->host + GSCAN_ROWS_AT(rows)) : NULL,
					 rows, rows);
		else if (rc == 0)
			gs->pass(gs->pass_arg, gs->work[si] + p, NULL, NULL, 0, rows);
	}
	s->nrows = total;
	return rc;
}

/*
 * gscan_finish: waits for slot si's filter, hands its mask (or, when the
 * program raised an error or FALLBACK, none: a recheck, narrowed down to
 * the batches that raise it) to the caller and publishes the cache entries
 * its launch filled
 */
static int
gscan_finish(GscanRun *gs, int si)
{
	GaggRun    *g = &gs->g;
	GaggSlot   *s = &g->slots[si];
	float		ms = 0;

	if (gagg_stream_wait(g, s->stream) != 0)
		return -1;
	s->busy = 0;
	if (gpu_drv.cuEventElapsedTime(&ms, s->ev_start, s->ev_end) == CUDA_SUCCESS)
		GAGG_ADD(g->run->exec_us, (uint64_t) (ms * 1000.0f));
	if (gs->stage[si]->err.code == XPU_OK || s->n_parts == 1)
		gscan_pass(gs, si, gs->stage[si]->err.code == XPU_OK ? s->host : NULL);
	else if (gscan_narrow(gs, si) != 0)
		return -1;
	gagg_slot_release(g, s, true);
	return 0;
}

/*
 * every batch of every file through the two slots, in request order, a
 * launch taking several small ones
 */
static int
gscan_run_batches(GscanRun *gs)
{
	GaggRun    *g = &gs->g;
	AggRun	   *run = g->run;
	GaggCursor	cur = {0, 0};
	GaggWork	w[GAGG_LAUNCH_PARTS];
	int64_t		work = 0,
				rows;
	int			next = 0,
				n;

	while ((n = gagg_next_launch(g, &cur, w, &rows)) > 0)
	{
		GaggSlot   *s = &g->slots[next];

		if (run->canceled != NULL && *run->canceled)
			return gagg_fail(g, WARP_ERR_CANCELED, "canceled");
		if (s->busy && gscan_finish(gs, next) != 0)
			return -1;
		if (gscan_reserve(gs, next, rows) != 0 || gagg_fill_slot(g, s, w, n) != 0)
			return -1;
		gs->work[next] = work;
		work += n;
		if (s->nrows == 0)
		{
			gscan_pass(gs, next, s->host);
			continue;
		}
		if (gagg_copy_slot(g, s) != 0 || gscan_launch(gs, next) != 0)
			return -1;
		next = (next + 1) % GAGG_SLOTS;
	}
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		int			si = (next + i) % GAGG_SLOTS;

		if (g->slots[si].busy && gscan_finish(gs, si) != 0)
			return -1;
	}
	return 0;
}

/* the kernel, the request's program on the device, the slots' stages */
static int
gscan_setup(GscanRun *gs, const ServiceGpu *gpu, uint32_t dev)
{
	GaggRun    *g = &gs->g;
	const XpuProgram *prog = g->run->prog;
	GpuAggOptions opts = {1, dev};	/* no groups: the smallest table */
	CUmodule	mod;

	if (gagg_setup(g, gpu, dev, &opts) != 0)
		return -1;
	if (!gpu_device_module(dev, &mod, g->msg, g->msglen))
		return gagg_fail(g, WARP_ERR_UNSUPPORTED, "%s", g->msg);
	if (gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gs->f_warp, mod, "kern_warp_exec"),
				  "cuModuleGetFunction") != 0 ||
		(gs->join &&
		 gagg_cuda(g, gpu_drv.cuModuleGetFunction(&gs->f_join, mod, "kern_join_scan_exec"),
				   "cuModuleGetFunction") != 0) ||
		gagg_dev_alloc(g, &gs->d_prog, prog->total_len, "the program") != 0 ||
		gagg_cuda(g, gpu_drv.cuMemcpyHtoDAsync(gs->d_prog, prog, prog->total_len,
											   g->slots[0].stream), "cuMemcpyHtoDAsync") != 0)
		return -1;
	for (int i = 0; i < GAGG_SLOTS; i++)
		if (gagg_host_alloc(g, (void **) &gs->stage[i], sizeof(GscanStage), "a scan stage") != 0)
			return -1;
	/* a projection run counts the rows entering each depth (EXPLAIN ANALYZE) */
	if (gs->join && gs->join_in != NULL &&
		(gagg_dev_alloc(g, &gs->d_counts, XPU_JOIN_COUNT_DEPTHS * sizeof(uint64_t),
						"the join counts") != 0 ||
		 gagg_cuda(g, gpu_drv.cuMemsetD8Async(gs->d_counts, 0,
											  XPU_JOIN_COUNT_DEPTHS * sizeof(uint64_t),
											  g->slots[0].stream), "cuMemsetD8Async") != 0 ||
		 gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[0].stream),
				   "cuStreamSynchronize") != 0))
		return -1;
	return 0;
}

/*
 * gscan_counts_back: a projection run's device counts of the rows entering
 * each depth added to gs->join_in (the slots' streams idle)
 */
static int
gscan_counts_back(GscanRun *gs)
{
	GaggRun    *g = &gs->g;
	uint64_t	c[XPU_JOIN_COUNT_DEPTHS];

	if (gs->d_counts == 0)
		return 0;
	if (gagg_cuda(g, gpu_drv.cuMemcpyDtoHAsync(c, gs->d_counts, sizeof(c), g->slots[0].stream),
				  "cuMemcpyDtoHAsync") != 0 ||
		gagg_cuda(g, gpu_drv.cuStreamSynchronize(g->slots[0].stream), "cuStreamSynchronize") != 0)
		return -1;
	for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		gs->join_in[d] += c[d];
	return 0;
}

/* see service.h; the runs take the GPUs in turn */
int
gpu_scan_run(const ServiceGpu *gpu, AggRun *run, GpuScanPass pass, void *pass_arg,
			 uint64_t *join_in, int *werr, char *msg, size_t msglen)
{
	static uint32_t next_device;
	GscanRun	gs;
	GaggRun    *g = &gs.g;
	XpuError	err;
	CUcontext	ctx;
	int			rc;

	memset(&gs, 0, sizeof(gs));
	gs.pass = pass;
	gs.pass_arg = pass_arg;
	gs.join_in = join_in;
	gs.join = run->prog->n_outs > 0;
	gs.n_probes = gs.join ? xpu_join_scan_probes(run->prog) : 0;
	if (gagg_begin(g, gpu, run, __atomic_fetch_add(&next_device, 1, __ATOMIC_RELAXED), &err,
				   werr, msg, msglen) != 0)
		return -1;
	rc = gscan_setup(&gs, gpu, g->dev);
	if (rc == 0)
		rc = gscan_run_batches(&gs);
	if (rc == 0)
		rc = gscan_counts_back(&gs);
	gagg_teardown(g);			/* waits for the slots' streams */
	gagg_dev_free(g, &gs.d_counts, XPU_JOIN_COUNT_DEPTHS * sizeof(uint64_t));
	for (int i = 0; i < GAGG_SLOTS; i++)
	{
		gagg_dev_free(g, &gs.d_aux[i], gs.aux_cap[i]);
		gagg_host_free(g, (void **) &gs.stage[i], sizeof(GscanStage));
	}
	gagg_dev_free(g, &gs.d_prog, run->prog->total_len);
	gpu_drv.cuCtxPopCurrent(&ctx);
	/* an error of the program only makes a recheck: any other rc is the run's */
	if (rc != 0 && *werr == 0)
		gagg_fail(g, WARP_ERR_IO, "GPU failure in GpuScan: %s", err.message);
	return rc == 0 ? 0 : -1;
}
