/*
 * aggcheck_bench.c
 *		gpu_aggcheck's throughput figures (gpu_aggcheck FATBIN DIR bench
 *		ROWS [BATCH_ROWS [QUERIES]]): SSB-like queries over a generated
 *		lineorder with the GPU cache off, cold and warm, and the latency of a
 *		cancel inside one long kernel.  Figures, not checks: "#" lines.
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#include <pthread.h>
#include <unistd.h>

#include "aggcheck_groups.h"
#include "service/gpu_cache.h"

/* ---------------- the figures ---------------- */

/* GB/s of a pinned host-to-device copy of len bytes (best of 5) */
static double
pinned_copy_rate(size_t len)
{
	void	   *host;
	CUdeviceptr dev;
	CUstream	s;
	double		best = 0;
	CUcontext	ctx;

	gpu_drv.cuCtxPushCurrent(gpu_device_context(0));
	if (gpu_drv.cuMemAllocHost(&host, len) != CUDA_SUCCESS ||
		gpu_drv.cuMemAlloc(&dev, len) != CUDA_SUCCESS ||
		gpu_drv.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return 0;
	memset(host, 1, len);
	for (int i = 0; i < 5; i++)
	{
		int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);
		double		rate;

		gpu_drv.cuMemcpyHtoDAsync(dev, host, len, s);
		gpu_drv.cuStreamSynchronize(s);
		rate = len / 1e3 / (double) (svc_now_us(CLOCK_MONOTONIC) - t0);
		if (rate > best)
			best = rate;
	}
	gpu_drv.cuStreamDestroy(s);
	gpu_drv.cuMemFree(dev);
	gpu_drv.cuMemFreeHost(host);
	gpu_drv.cuCtxPopCurrent(&ctx);
	return best;
}

/* an SSB-like lineorder: quantity, discount, extendedprice, revenue,
 * supplycost int4, orderpriority text, shipmode text */
static void
gen_lineorder(TData *d, int64_t n)
{
	static const char *const prio[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW"};
	static const char *const mode[] = {"AIR", "FOB", "MAIL", "RAIL", "REG AIR", "SHIP", "TRUCK"};
	TCol	   *c[7];

	memset(d, 0, sizeof(*d));
	d->n = n;
	c[0] = tcol_add(d, "lo_quantity", XPU_T_INT4);
	c[1] = tcol_add(d, "lo_discount", XPU_T_INT4);
	c[2] = tcol_add(d, "lo_extendedprice", XPU_T_INT4);
	c[3] = tcol_add(d, "lo_revenue", XPU_T_INT4);
	c[4] = tcol_add(d, "lo_supplycost", XPU_T_INT4);
	c[5] = tcol_add(d, "lo_orderpriority", XPU_T_TEXT);
	c[6] = tcol_add(d, "lo_shipmode", XPU_T_TEXT);
	for (int64_t r = 0; r < n; r++)
	{
		c[0]->i[r] = (int64_t) (rnd() % 50) + 1;
		c[1]->i[r] = (int64_t) (rnd() % 11);
		c[2]->i[r] = (int64_t) (rnd() % 10000000) + 90000;
		c[3]->i[r] = (int64_t) (rnd() % 10000000);
		c[4]->i[r] = (int64_t) (rnd() % 100000) + 1000;
		c[5]->s[r] = prio[rnd() % 5];
		c[6]->s[r] = mode[rnd() % 7];
	}
}

/* one figure line of a run */
static void
bench_print(const char *name, const char *how, const TRunResult *r)
{
	printf("# %s, %s: %ld rows, %ld passed, %.1f MB read, %.1f MB from the GPU cache: "
		   "end to end %.2f ms = %.2f G rows/s; kernels %.2f ms = %.2f G rows/s; I/O %.2f ms\n",
		   name, how, (long) r->run.rows_in, (long) r->run.rows_passed,
		   r->run.bytes_read / 1e6, r->run.bytes_cached / 1e6, r->wall_s * 1e3,
		   r->run.rows_in / r->wall_s / 1e9, r->run.exec_us / 1e3,
		   r->run.rows_in / (r->run.exec_us / 1e6) / 1e9, r->run.io_us / 1e3);
}

/*
 * the figures for a query: the GPU cache off (the pinned buffers and the
 * page cache warmed by the run before), then cold (the cache empty: every
 * buffer is read from the page cache, copied and kept), then warm (best
 * of 5, every buffer from the GPU cache)
 */
static void
bench_query(const ServiceGpu *gpu, const char *path, const TData *d, const TQuery *q,
			const char *name)
{
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);
	uint8_t		types[24] = {0};
	TRunResult	res,
				best;

	memset(&best, 0, sizeof(best));
	best.wall_s = 1e9;
	for (int i = 0; i < 8; i++)
	{
		TMap		m;

		if (i == 0 || i == 2)
			gpu_cache_configure(gpu, i == 0 ? 0 : -1);
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		gpu_run(gpu, path, prog, fields, q, 0, &m, &res);
		if (res.rc != 0)
			printf("# %s failed: %d %s%s\n", name, res.rc, res.err.message, res.msg);
		if (i == 1 || i == 2)
			bench_print(name, i == 1 ? "GPU cache off" : "cold (filling the GPU cache)", &res);
		else if (i > 2 && res.rc == 0 && res.wall_s < best.wall_s)
			best = res;
		tmap_free(&m);
	}
	bench_print(name, "warm (best of 5)", &best);
	free(prog);
}

typedef struct TCancel
{
	volatile int flag;
	int64_t		after_us;
	int64_t		set_at;
} TCancel;

static void *
cancel_thread(void *arg)
{
	TCancel    *c = arg;

	usleep((useconds_t) c->after_us);
	c->set_at = svc_now_us(CLOCK_MONOTONIC);
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * the cancel latency inside one long kernel: d written as ONE record
 * batch, the query run warm from the cache, then again with a cancel
 * half-way through its kernel; prints the time from the cancel to the
 * run's return
 */
static void
bench_cancel(const ServiceGpu *gpu, const char *dir, const TData *d, const TQuery *q)
{
	char		path[1024];
	int32_t		fields[8];
	XpuProgram *prog = build_program(d, q, fields);
	uint8_t		types[24] = {0};
	TRunResult	res;
	TCancel		c;
	pthread_t	th;
	TMap		m;
	double		full_ms;

	snprintf(path, sizeof(path), "%s/one_batch.arrow", dir);
	tdata_write(d, path, d->n);
	for (int i = 0; i < 3; i++)
	{
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		gpu_run(gpu, path, prog, fields, q, 0, &m, &res);
		tmap_free(&m);
	}
	full_ms = res.wall_s * 1e3;
	printf("# cancel: one batch of %ld rows, warm: run %.2f ms, kernel %.2f ms\n",
		   (long) d->n, full_ms, res.run.exec_us / 1e3);
	for (int i = 0; i < 3; i++)
	{
		int64_t		t0;

		memset(&c, 0, sizeof(c));
		c.after_us = (int64_t) (full_ms * 1e3 / 2);
		tmap_init(&m, q->n_aggs, q->aggs, types, 1024);
		t0 = svc_now_us(CLOCK_MONOTONIC);
		pthread_create(&th, NULL, cancel_thread, &c);
		gpu_run_cancel(gpu, path, prog, fields, q, 0, &m, &res, &c.flag);
		pthread_join(th, NULL);
		printf("# cancel at %.2f ms into the run: rc %d werr %d (%s), returned %.3f ms after "
			   "the cancel (the whole run: %.2f ms)\n", (c.set_at - t0) / 1e3, res.rc, res.werr,
			   res.msg, (svc_now_us(CLOCK_MONOTONIC) - c.set_at) / 1e3 - 0.0, full_ms);
		tmap_free(&m);
	}
	free(prog);
	unlink(path);
}

/* is query name in the comma-separated list which (NULL: every query) */
static bool
bench_wants(const char *which, const char *name)
{
	size_t		n = strlen(name);

	if (which == NULL)
		return true;
	for (const char *p = which;; p++)
	{
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return true;
		if ((p = strchr(p, ',')) == NULL)
			return false;
	}
}

/*
 * the throughput figures of q1 .. q4 and the cancel latency; which (a
 * comma-separated list, NULL for all but the variants) picks queries,
 * among them q2 variants that take one cost at a time out of q2: q2c
 * (its keys, count(*) only) and q2i (its aggregates by one int key)
 */
static void
run_bench(const ServiceGpu *gpu, const char *dir, int64_t rows, int64_t batch_rows,
		  const char *which)
{
	char		path[1024];
	TData		d;
	TQuery		q;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	snprintf(path, sizeof(path), "%s/lineorder.arrow", dir);
	gen_lineorder(&d, rows);
	tdata_write(&d, path, batch_rows);
	printf("# wrote %ld rows in %.1f s; pinned host-to-GPU copy of 1 GiB: %.1f GB/s\n",
		   (long) rows, (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6, pinned_copy_rate(1 << 30));
	if (bench_wants(which, "q1"))
	{
		/* sum(extendedprice * discount) where discount > 0 and quantity < 25 */
		query_init(&q);
		q.qual_a = 1;
		q.qual_lo = 0;
		q.qual_b = 0;
		q.qual_hi = 25;
		q.mul_col = 2;
		q.mul_by = 1;
		agg(&q, XPU_AGG_SUM_INT, d.ncols);
		bench_query(gpu, path, &d, &q, "q1 (2-conjunct qual, sum, no keys)");
	}
	/* orderpriority, shipmode, count(*), sum(revenue), avg(quantity), max(supplycost) */
	query_init(&q);
	q.n_keys = 2;
	q.keys[0] = 5;
	q.keys[1] = 6;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	if (which != NULL && bench_wants(which, "q2c"))
		bench_query(gpu, path, &d, &q, "q2c (2 text keys, 35 groups, count(*) only)");
	agg(&q, XPU_AGG_SUM_INT, 3);
	agg(&q, XPU_AGG_SUM_INT, 0);
	agg(&q, XPU_AGG_COUNT, 0);
	agg(&q, XPU_AGG_MAX, 4);
	if (bench_wants(which, "q2"))
		bench_query(gpu, path, &d, &q, "q2 (2 text keys, 35 groups)");
	if (which != NULL && bench_wants(which, "q2i"))
	{
		q.n_keys = 1;
		q.keys[0] = 1;
		bench_query(gpu, path, &d, &q, "q2i (q2's aggregates by one int4 key, 11 groups)");
	}
	/* hll_count(lo_revenue): about 10 M distinct values; no keys, then orderpriority */
	query_init(&q);
	agg_hll(&q, 3, 14, 1024);
	if (bench_wants(which, "q3"))
		bench_query(gpu, path, &d, &q, "q3 (hll_count, p = 14, no keys)");
	q.n_keys = 1;
	q.keys[0] = 5;
	if (bench_wants(which, "q4"))
		bench_query(gpu, path, &d, &q, "q4 (hll_count, p = 14, 5 groups)");
	unlink(path);
	if (bench_wants(which, "cancel"))
	{
		TData		sub = d;	/* the first 60 M rows, as one batch */

		sub.n = rows < 60000000 ? rows : 60000000;
		bench_cancel(gpu, dir, &sub, &q);
	}
	tdata_free(&d);
}
