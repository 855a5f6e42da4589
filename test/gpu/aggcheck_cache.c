/*
 * aggcheck_cache.c
 *		gpu_aggcheck's checks of the GPU column cache (service/gpu_cache.c):
 *		a file replaced by rename and one rewritten in place with the same
 *		size are never answered from the old contents, a cache far smaller
 *		than the data evicts and stays right, four threads share a small
 *		cache, a device whose memory is full makes room by evicting, and
 *		the read-ahead (AGG_FILL) fills it beside a run that waits for it.
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aggcheck_groups.h"
#include "service/gpu_cache.h"
#include "service/service.h"

/* ---------------- the column cache ---------------- */

/* one file and query of the cache checks, with its reference */
typedef struct TCacheCase
{
	char		path[1024];
	TQuery		q;
	XpuProgram *prog;
	int32_t		fields[8];
	uint8_t		types[24];
	TMap		ref;
} TCacheCase;

/* a text and an int8 key, count, sums, min/max: d written to path */
static void
cache_case_init(TCacheCase *c, const char *dir, const char *name, const TData *d,
				int64_t batch_rows)
{
	XpuError	err;

	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s/%s.arrow", dir, name);
	query_init(&c->q);
	c->q.n_keys = 2;
	c->q.keys[0] = COL_S;
	c->q.keys[1] = COL_K;
	agg(&c->q, XPU_AGG_COUNT_STAR, -1);
	agg(&c->q, XPU_AGG_SUM_INT, COL_A);
	agg(&c->q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&c->q, XPU_AGG_MAX, COL_G);
	c->prog = build_program(d, &c->q, c->fields);
	for (int j = 0; j < c->q.n_aggs; j++)
		c->types[j] = d->cols[c->q.aggs[j].out].type;
	tdata_write(d, c->path, batch_rows);
	tmap_init(&c->ref, c->q.n_aggs, c->q.aggs, c->types, d->n + 1);
	ref_run(d, &c->q, &c->ref, &err);
}

static void
cache_case_free(TCacheCase *c)
{
	tmap_free(&c->ref);
	free(c->prog);
	unlink(c->path);
}

/* runs c; 1 when the groups equal its reference (res filled) */
static int
cache_case_run(const ServiceGpu *gpu, TCacheCase *c, TRunResult *res, const char *name)
{
	TMap		got;
	int			ok;

	tmap_init(&got, c->q.n_aggs, c->q.aggs, c->types, c->ref.cap / 2);
	gpu_run(gpu, c->path, c->prog, c->fields, &c->q, 0, &got, res);
	ok = res->rc == 0 && maps_same(&got, &c->ref, name);
	if (res->rc != 0)
		tap_diag("%s: run failed: rc %d, %s%s", name, res->rc, res->err.message, res->msg);
	tmap_free(&got);
	return ok;
}

/*
 * a file replaced (rename of a new file over it) and then rewritten in
 * place with the same size: never answered from the old contents
 */
static void
check_cache_stale(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c1, c2, c3;
	TRunResult	res;
	char		tmp[1100];
	struct stat st2, st3;
	int			ok;

	gen_data(&d, 1000000, 40, 5, 0);
	cache_case_init(&c1, dir, "stale", &d, 200000);
	ok = cache_case_run(gpu, &c1, &res, "stale v1") && res.run.bytes_read > 0;
	ok = ok && cache_case_run(gpu, &c1, &res, "stale v1 again") && res.run.bytes_read == 0;
	tap_ok(ok, "cache: a file's second run is served from the cache");
	/* new contents, renamed over the path (a new inode) */
	tdata_free(&d);
	gen_data(&d, 1000000, 40, 5, 0);
	cache_case_init(&c2, dir, "stale_new", &d, 200000);
	snprintf(tmp, sizeof(tmp), "%s", c2.path);
	snprintf(c2.path, sizeof(c2.path), "%s", c1.path);
	ok = rename(tmp, c1.path) == 0 && cache_case_run(gpu, &c2, &res, "stale v2") &&
		res.run.bytes_cached == 0;
	tap_ok(ok, "cache: a file replaced by rename gives the new answer (%lu bytes cached)",
		   (unsigned long) res.run.bytes_cached);
	ok = cache_case_run(gpu, &c2, &res, "stale v2 again") && res.run.bytes_read == 0;
	tap_ok(ok, "cache: the replaced file's second run is served from the cache");
	/* the same size rewritten in place (same inode): one value changed */
	stat(c1.path, &st2);
	for (int64_t r = 0; r < d.n; r += 1000)
		d.cols[COL_A].i[r] = (d.cols[COL_A].i[r] + 12345) % 1000000;
	cache_case_init(&c3, dir, "stale_same_size", &d, 200000);
	unlink(c3.path);
	snprintf(c3.path, sizeof(c3.path), "%s", c1.path);
	tdata_write(&d, c3.path, 200000);
	stat(c3.path, &st3);
	ok = st2.st_ino == st3.st_ino && st2.st_size == st3.st_size &&
		cache_case_run(gpu, &c3, &res, "stale v3") && res.run.bytes_cached == 0;
	tap_ok(ok, "cache: a file rewritten in place with the same size (same inode: %s) "
		   "gives the new answer", st2.st_ino == st3.st_ino ? "yes" : "no");
	c2.path[0] = c3.path[0] = '\0';
	cache_case_free(&c1);
	cache_case_free(&c2);
	cache_case_free(&c3);
	tdata_free(&d);
}

/* a cache far smaller than the data: runs evict, stay correct, stay under the size */
static void
check_cache_tiny(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c;
	TRunResult	res;
	GpuCacheStats st;
	int			ok = 1;

	gpu_cache_configure(gpu, 6 << 20);
	gen_data(&d, 2000000, 1000, 5, 0);
	cache_case_init(&c, dir, "tiny", &d, 250000);
	for (int i = 0; i < 3; i++)
		ok &= cache_case_run(gpu, &c, &res, "tiny cache");
	gpu_cache_stats(0, &st);
	tap_ok(ok && st.evictions > 0 && st.used <= st.capacity,
		   "cache: a 6 MiB cache evicts (%lu evictions, %lu of %lu bytes used) and the "
		   "answers stay right", (unsigned long) st.evictions, (unsigned long) st.used,
		   (unsigned long) st.capacity);
	cache_case_free(&c);
	tdata_free(&d);
}

typedef struct TCacheThread
{
	const ServiceGpu *gpu;
	TCacheCase *cases;
	int			n_cases;
	int			id;
	int			failed;
} TCacheThread;

static void *
cache_thread(void *arg)
{
	TCacheThread *t = arg;

	for (int i = 0; i < 8; i++)
	{
		TRunResult	res;

		if (!cache_case_run(t->gpu, &t->cases[(t->id + i) % t->n_cases], &res, "concurrent"))
			t->failed++;
	}
	return NULL;
}

/* 4 threads share a cache that holds about half of the data */
static void
check_cache_concurrent(const ServiceGpu *gpu, const char *dir)
{
	TData		d[2];
	TCacheCase	c[2];
	TCacheThread t[4];
	pthread_t	th[4];
	GpuCacheStats st;
	int			failed = 0;

	gen_data(&d[0], 2000000, 500, 5, 0);
	gen_data(&d[1], 2000000, 50000, 5, 0);
	cache_case_init(&c[0], dir, "conc0", &d[0], 250000);
	cache_case_init(&c[1], dir, "conc1", &d[1], 250000);
	gpu_cache_configure(gpu, 100 << 20);
	for (int i = 0; i < 4; i++)
	{
		t[i] = (TCacheThread) {gpu, c, 2, i, 0};
		pthread_create(&th[i], NULL, cache_thread, &t[i]);
	}
	for (int i = 0; i < 4; i++)
	{
		pthread_join(th[i], NULL);
		failed += t[i].failed;
	}
	gpu_cache_stats(0, &st);
	tap_ok(failed == 0 && st.used <= st.capacity,
		   "cache: 4 threads x 8 runs over 2 files share a 100 MiB cache: %d wrong "
		   "(%lu hits, %lu misses, %lu evictions)", failed, (unsigned long) st.hits,
		   (unsigned long) st.misses, (unsigned long) st.evictions);
	for (int i = 0; i < 2; i++)
	{
		cache_case_free(&c[i]);
		tdata_free(&d[i]);
	}
}

/* hog: device memory taken in chunks of 1 GiB down to 1 MiB, into hog[*n] */
static void
hog_memory(CUdeviceptr *hog, int *n, int max)
{
	for (size_t chunk = (size_t) 1 << 30; chunk >= (1 << 20) && *n < max; )
		if (gpu_drv.cuMemAlloc(&hog[*n], chunk) == CUDA_SUCCESS)
			(*n)++;
		else
			chunk /= 2;
}

/*
 * the device's memory taken by the cache and a hog: a run must evict
 * cache entries for its own buffers and still succeed.  The blocks that
 * runs keep (gpu_mem.c) are freed and hogged too, else the run would take
 * its room from them (which an allocation tries first) and never from the
 * cache.
 */
static void
check_cache_oom(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c1, c2;
	TRunResult	res;
	CUdeviceptr hog[4096];
	int			n_hog = 0,
				ok;
	GpuCacheStats before, after;
	CUcontext	ctx;
	TData		d2;

	gpu_cache_configure(gpu, -1);
	gen_data(&d, 4000000, 1000, 5, 0);
	gen_data(&d2, 200000, 1000, 5, 0);
	cache_case_init(&c1, dir, "oom_fill", &d, 250000);
	ok = cache_case_run(gpu, &c1, &res, "oom fill");
	cache_case_init(&c2, dir, "oom_run", &d2, 50000);
	gpu_drv.cuCtxPushCurrent(gpu_device_context(0));
	hog_memory(hog, &n_hog, 4096);
	if (gpu_agg_release_kept(0))
		hog_memory(hog, &n_hog, 4096);
	gpu_cache_stats(0, &before);
	ok = ok && cache_case_run(gpu, &c2, &res, "oom run");
	gpu_cache_stats(0, &after);
	for (int i = 0; i < n_hog; i++)
		gpu_drv.cuMemFree(hog[i]);
	gpu_drv.cuCtxPopCurrent(&ctx);
	tap_ok(ok && after.evictions > before.evictions,
		   "cache: with the device's memory full, a run evicts cache entries (%lu) and succeeds",
		   (unsigned long) (after.evictions - before.evictions));
	cache_case_free(&c1);
	cache_case_free(&c2);
	tdata_free(&d);
	tdata_free(&d2);
}

/* ---------------- the read-ahead (AGG_FILL) ---------------- */

typedef struct TFill
{
	const ServiceGpu *gpu;
	TCacheCase *c;
	TRunResult	res;
	volatile int cancel;
} TFill;

static void *
fill_thread(void *arg)
{
	TFill	   *t = arg;
	TMap		none;

	tmap_init(&none, t->c->q.n_aggs, t->c->q.aggs, t->c->types, 16);
	gpu_run_mode(t->gpu, t->c->path, t->c->prog, t->c->fields, &t->c->q, 0, &none, &t->res,
				 &t->cancel, true);
	tmap_free(&none);
	return NULL;
}

/*
 * the read-ahead of a run's columns: alone, then the run reads nothing from
 * the file; beside a run that starts while it reads, every column is read
 * once between them (the run waits for what the read-ahead fills, the
 * read-ahead leaves what the run fills); cancelled while a run waits for
 * it, the run still answers right
 */
static void
check_cache_read_ahead(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TCacheCase	c;
	TRunResult	res;
	TFill		f;
	pthread_t	th;
	uint64_t	total;
	int			ok;

	gpu_cache_configure(gpu, -1);
	gen_data(&d, 8000000, 1000, 5, 0);
	cache_case_init(&c, dir, "ahead", &d, 250000);
	ok = cache_case_run(gpu, &c, &res, "ahead: the whole file once");
	total = res.run.bytes_read;
	gpu_cache_clear(0);
	f = (TFill) {gpu, &c};
	fill_thread(&f);
	ok = ok && f.res.rc == 0 && f.res.run.bytes_read == total && f.res.run.bytes_cached == 0;
	ok = ok && cache_case_run(gpu, &c, &res, "ahead: after") && res.run.bytes_read == 0 &&
		res.run.bytes_cached == total;
	tap_ok(ok, "read-ahead: %lu of %lu bytes into the cache (rc %d %s), then a run reads none "
		   "from the file (%lu)", (unsigned long) f.res.run.bytes_read, (unsigned long) total,
		   f.res.rc, f.res.msg, (unsigned long) res.run.bytes_read);
	for (int delay_us = 0; delay_us <= 20000; delay_us += 5000)
	{
		gpu_cache_clear(0);
		f = (TFill) {gpu, &c};
		pthread_create(&th, NULL, fill_thread, &f);
		usleep(delay_us);
		ok = cache_case_run(gpu, &c, &res, "ahead: beside");
		pthread_join(th, NULL);
		tap_ok(ok && f.res.rc == 0 && f.res.run.bytes_read + res.run.bytes_read == total,
			   "read-ahead beside a run started %d us later: right answer, read-ahead %lu + "
			   "run %lu bytes = %lu (every column once; rc %d %s)", delay_us,
			   (unsigned long) f.res.run.bytes_read, (unsigned long) res.run.bytes_read,
			   (unsigned long) total, f.res.rc, f.res.msg);
	}
	gpu_cache_clear(0);
	f = (TFill) {gpu, &c};
	pthread_create(&th, NULL, fill_thread, &f);
	usleep(3000);
	f.cancel = 1;
	ok = cache_case_run(gpu, &c, &res, "ahead: cancelled");
	pthread_join(th, NULL);
	tap_ok(ok && (f.res.rc == 0 || f.res.werr == WARP_ERR_CANCELED),
		   "read-ahead cancelled while a run reads: right answer (read-ahead rc %d, %s)",
		   f.res.rc, f.res.msg);
	cache_case_free(&c);
	tdata_free(&d);
}

static void
run_cache_checks(const ServiceGpu *gpu, const char *dir)
{
	check_cache_stale(gpu, dir);
	check_cache_tiny(gpu, dir);
	check_cache_concurrent(gpu, dir);
	check_cache_oom(gpu, dir);
	check_cache_read_ahead(gpu, dir);
	gpu_cache_configure(gpu, -1);
}
