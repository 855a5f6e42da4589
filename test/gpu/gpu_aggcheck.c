/*
 * gpu_aggcheck.c
 *		On a GPU host: GROUP BY aggregation on the GPU (kern_agg.cu driven by
 *		service/gpu_agg.c, no service process, no PostgreSQL) against a host
 *		reference computed in this program.  Each case writes an Arrow file
 *		with this project's writer (NULLs, edge values, text keys), builds an
 *		xPU program with xpu_build.c, runs gpu_agg_execute over the file and
 *		compares every group: integers and numerics exactly, overflow flags,
 *		float sums within 1e-9 relative.  Prints TAP.
 *
 *		gpu_aggcheck FATBIN DIR			the checks (files written in DIR)
 *		gpu_aggcheck FATBIN DIR hll		only the HLL checks: HLL aggregates
 *										on the GPU against the CPU engine,
 *										exported sketches byte for byte
 *		gpu_aggcheck FATBIN DIR bench ROWS [BATCH_ROWS [QUERIES]]
 *										the throughput figures (QUERIES:
 *										run_bench's names, comma-separated)
 *
 * The GPU column cache (service/gpu_cache.c) is on (its default size) for
 * every case: each case runs a second time and must then be served from
 * the cache with the same result; run_cache_checks adds a replaced file, a
 * file rewritten in place, a tiny cache that must evict, concurrent runs
 * sharing a small cache, and a device out of memory that the cache must
 * make room on.  run_float2_checks compares the GPU's groups over Float16
 * columns (float2 keys, quals and aggregates) with the CPU engine's.
 *
 * This file holds the cases (run_checks) and main.  The other parts are
 * included here, one translation unit, since tap.h counts the checks in
 * static variables:
 *	aggcheck_data.h		the test data and queries, their xPU programs
 *	aggcheck_groups.h	groups, the host reference, a run on the GPU
 *	aggcheck_cache.c	the column cache checks (run_cache_checks)
 *	aggcheck_float2.c	float2 against the CPU engine (run_float2_checks)
 *	aggcheck_hll.c		HLL against the CPU engine (run_hll_checks)
 *	aggcheck_bench.c	the throughput figures (run_bench)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arrow/arrow.h"
#include "service/gpu_cache.h"
#include "service/gpu_driver.h"
#include "tap.h"
#include "aggcheck_data.h"
#include "aggcheck_groups.h"
/* the parts (see above) */
#include "aggcheck_cache.c"
#include "aggcheck_float2.c"
#include "aggcheck_hll.c"
#include "aggcheck_bench.c"

/* what the service's main.c and server.c define */
ServiceCounters svc_counters;

void
svc_log(const char *level, const char *fmt,...)
{
	va_list		ap;

	printf("# %s: ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int64_t
svc_now_us(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* ---------------- the cases ---------------- */

/*
 * check_cached_rerun: q over path once more, after a run that filled the
 * cache: every referenced byte must come from the cache, none from the
 * file, and the groups must still equal the reference
 */
static void
check_cached_rerun(const ServiceGpu *gpu, const char *path, const char *name,
				   const XpuProgram *prog, const int32_t *fields, const TQuery *q,
				   uint32_t initial_groups, TMap *ref, const uint8_t *types)
{
	TMap		got;
	TRunResult	res;

	tmap_init(&got, q->n_aggs, q->aggs, types, ref->cap / 2);
	gpu_run(gpu, path, prog, fields, q, initial_groups, &got, &res);
	if (res.rc != 0)
		tap_ok(0, "%s, from the GPU cache: run failed: rc %d, %s%s", name, res.rc,
			   res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, ref, name) && res.run.bytes_read == 0 && res.run.bytes_cached > 0,
			   "%s, from the GPU cache: groups equal the reference (%lu bytes cached, %lu read)",
			   name, (unsigned long) res.run.bytes_cached, (unsigned long) res.run.bytes_read);
	tmap_free(&got);
}

/*
 * check_compressed: the same run over a zstd-compressed copy of the file
 * (pyarrow writes it), which the service loads with arrow_batch_load
 */
static void
check_compressed(const ServiceGpu *gpu, const char *path, const char *name,
				 const XpuProgram *prog, const int32_t *fields, const TQuery *q,
				 TMap *ref, const uint8_t *types)
{
	char		zpath[1100],
				cmd[3000];
	TMap		got;
	TRunResult	res;

	snprintf(zpath, sizeof(zpath), "%s.zstd", path);
	snprintf(cmd, sizeof(cmd),
			 "python3 -c 'import sys, pyarrow.ipc as ipc; t = ipc.open_file(sys.argv[1]).read_all(); "
			 "w = ipc.new_file(sys.argv[2], t.schema, options=ipc.IpcWriteOptions(compression=\"zstd\")); "
			 "[w.write_batch(b) for b in t.to_batches(max_chunksize=300000)]; w.close()' %s %s",
			 path, zpath);
	if (system(cmd) != 0)
	{
		tap_ok(1, "%s, zstd-compressed # SKIP pyarrow could not write it", name);
		return;
	}
	tmap_init(&got, q->n_aggs, q->aggs, types, ref->cap / 2);
	gpu_run(gpu, zpath, prog, fields, q, 0, &got, &res);
	if (res.rc != 0)
		tap_ok(0, "%s, zstd-compressed: run failed: rc %d, %s%s", name, res.rc,
			   res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, ref, name), "%s, zstd-compressed: %ld groups equal the reference",
			   name, (long) ref->n);
	tmap_free(&got);
	if (res.rc == 0 && gpu_cache_capacity(0) > 0)
		check_cached_rerun(gpu, zpath, "zstd-compressed", prog, fields, q, 0, ref, types);
	unlink(zpath);
}

/*
 * check_case: q over d on the GPU (file written to dir) against the
 * reference; expect_err: the error code the run must end with (XPU_OK: it
 * must succeed and every group must match)
 */
static void
check_case(const ServiceGpu *gpu, const char *dir, const char *name, const TData *d,
		   const TQuery *q, uint32_t initial_groups, int64_t batch_rows, int expect_err,
		   int recompress)
{
	char		path[1024];
	uint8_t		types[24];
	TMap		ref, got;
	XpuError	ref_err;
	TRunResult	res;
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);

	snprintf(path, sizeof(path), "%s/%s.arrow", dir, name);
	tdata_write(d, path, batch_rows);
	for (int j = 0; j < q->n_aggs; j++)
		types[j] = q->aggs[j].out >= d->ncols ? XPU_T_INT8 : d->cols[q->aggs[j].out].type;
	tmap_init(&ref, q->n_aggs, q->aggs, types, d->n + 1);
	tmap_init(&got, q->n_aggs, q->aggs, types, d->n + 1);
	ref_run(d, q, &ref, &ref_err);
	if (gpu_cache_capacity(0) > 0)
	{
		/*
		 * every other batch into the cache first: the run below launches
		 * batches the cache holds beside batches it reads
		 */
		TMap		half;

		tmap_init(&half, q->n_aggs, q->aggs, types, d->n + 1);
		odd_batches_only = 1;
		gpu_run(gpu, path, prog, fields, q, initial_groups, &half, &res);
		odd_batches_only = 0;
		tmap_free(&half);
	}
	gpu_run(gpu, path, prog, fields, q, initial_groups, &got, &res);
	if (expect_err != XPU_OK)
		tap_ok(res.rc == expect_err && res.err.code == expect_err && ref_err.code == expect_err,
			   "%s: the run fails with error %d (got %d: %s%s)", name, expect_err, res.rc,
			   res.err.message, res.msg);
	else if (res.rc != 0)
		tap_ok(0, "%s: run failed: rc %d, %s%s", name, res.rc, res.err.message, res.msg);
	else
		tap_ok(maps_same(&got, &ref, name) && res.run.rows_in == (uint64_t) d->n &&
			   (gpu_cache_capacity(0) == 0 || res.run.batches < 2 ||
				(res.run.bytes_cached > 0 && res.run.bytes_read > 0)),
			   "%s: %ld groups equal the reference (%ld rows, %ld passed, %lu batches, "
			   "%lu bytes from the cache, %lu read, %.3f s)",
			   name, (long) ref.n, (long) res.run.rows_in, (long) res.run.rows_passed,
			   (unsigned long) res.run.batches, (unsigned long) res.run.bytes_cached,
			   (unsigned long) res.run.bytes_read, res.wall_s);
	if (expect_err == XPU_OK && res.rc == 0 && gpu_cache_capacity(0) > 0)
		check_cached_rerun(gpu, path, name, prog, fields, q, initial_groups, &ref, types);
	if (expect_err == XPU_OK && recompress)
		check_compressed(gpu, path, name, prog, fields, q, &ref, types);
	tmap_free(&ref);
	tmap_free(&got);
	free(prog);
	unlink(path);
}

/* the checks of the file header */
static void
run_checks(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;

	/* no keys: a 2-conjunct qual, every aggregate kind, NULLs and edge values */
	gen_data(&d, 3000000, 50, 8, 0);
	query_init(&q);
	q.qual_a = COL_A;
	q.qual_lo = -500000;
	q.qual_b = COL_B;
	q.qual_hi = 10000;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_COUNT, COL_A);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_INT, COL_B);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_MIN, COL_A);
	agg(&q, XPU_AGG_MAX, COL_A);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MIN, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	agg(&q, XPU_AGG_COUNT, COL_S);
	check_case(gpu, dir, "nokey", &d, &q, 0, 500000, XPU_OK, 1);

	/* the same with more than the per-thread aggregates: the shared path */
	agg(&q, XPU_AGG_MAX, COL_B);
	agg(&q, XPU_AGG_MIN, COL_B);
	agg(&q, XPU_AGG_COUNT, COL_G);
	check_case(gpu, dir, "nokey_shared", &d, &q, 0, 500000, XPU_OK, 0);
	/* no row passes: no group */
	q.qual_lo = INT32_MAX;
	check_case(gpu, dir, "nokey_empty", &d, &q, 0, 500000, XPU_OK, 0);

	/* stddev/variance and sum(float4): no keys (per-thread states), then keys */
	query_init(&q);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_A);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_B);
	agg(&q, XPU_AGG_SUMSQ_NUMERIC, COL_N);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_G);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_H);
	agg(&q, XPU_AGG_SUM_FLOAT4, COL_H);
	check_case(gpu, dir, "variance_nokey", &d, &q, 0, 500000, XPU_OK, 0);
	for (int i = 0; i < 10; i++)	/* past the per-thread states: shared and global ones */
		agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	check_case(gpu, dir, "variance_nokey_shared", &d, &q, 0, 500000, XPU_OK, 0);
	q.n_keys = 2;
	q.keys[0] = COL_S;
	q.keys[1] = COL_K;
	check_case(gpu, dir, "variance_keys", &d, &q, 0, 500000, XPU_OK, 0);

	/* a text key and an int8 key (with NULLs): about a thousand groups */
	query_init(&q);
	q.n_keys = 2;
	q.keys[0] = COL_S;
	q.keys[1] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	agg(&q, XPU_AGG_MIN, COL_B);
	check_case(gpu, dir, "text_int_keys", &d, &q, 0, 500000, XPU_OK, 1);
	/* float keys: NaN, -0 and +0 group as PostgreSQL does; numeric keys */
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_G;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	check_case(gpu, dir, "float_key", &d, &q, 0, 500000, XPU_OK, 0);
	q.keys[0] = COL_N;
	check_case(gpu, dir, "numeric_key_many", &d, &q, 0, 500000, XPU_OK, 0);
	/* a program error: a / z with a zero divisor */
	tdata_free(&d);
	gen_data(&d, 1000000, 50, 8, 1000);
	query_init(&q);
	q.div_col = COL_A;
	q.div_by = COL_Z;
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_SUM_INT, d.ncols);	/* the DIV output */
	check_case(gpu, dir, "division_by_zero", &d, &q, 0, 250000, XPU_ERR_DIVISION_BY_ZERO, 0);
	tdata_free(&d);

	/* one group; then a million groups, with a table that must grow */
	gen_data(&d, 4000000, 1, 8, 0);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_MAX, COL_G);
	check_case(gpu, dir, "one_group", &d, &q, 0, 1000000, XPU_OK, 0);
	tdata_free(&d);
	gen_data(&d, 4000000, 1000000, 8, 0);
	check_case(gpu, dir, "million_groups", &d, &q, 0, 1000000, XPU_OK, 0);
	check_case(gpu, dir, "million_groups_table_full", &d, &q, 4096, 1000000, XPU_OK, 0);
	tdata_free(&d);

	/*
	 * three groups and the NULL one, a qual and every aggregate kind: the
	 * lanes of a warp share their groups' states (kern_agg.cu's
	 * gagg_warp_update, lanes of other groups and lanes whose row fails the
	 * qual or whose argument is NULL among them)
	 */
	gen_data(&d, 3000000, 3, 8, 0);
	query_init(&q);
	q.qual_a = COL_A;
	q.qual_lo = -700000;
	q.qual_b = COL_B;
	q.qual_hi = 20000;
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_COUNT, COL_G);
	agg(&q, XPU_AGG_SUM_INT, COL_A);
	agg(&q, XPU_AGG_SUM_FLOAT, COL_F);
	agg(&q, XPU_AGG_SUM_FLOAT4, COL_H);
	agg(&q, XPU_AGG_MOMENTS, COL_F);
	agg(&q, XPU_AGG_SUMSQ_INT, COL_B);
	agg(&q, XPU_AGG_SUMSQ_NUMERIC, COL_N);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_G);
	agg(&q, XPU_AGG_VAR_FLOAT, COL_F);
	agg(&q, XPU_AGG_MIN, COL_A);
	agg(&q, XPU_AGG_MAX, COL_B);
	agg(&q, XPU_AGG_MIN, COL_G);
	agg(&q, XPU_AGG_MAX, COL_G);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	agg(&q, XPU_AGG_MIN, COL_N);
	agg(&q, XPU_AGG_MAX, COL_N);
	check_case(gpu, dir, "few_groups", &d, &q, 0, 500000, XPU_OK, 0);
	tdata_free(&d);

	/* numeric sums past int128 are flagged; sums whose parts pass it are not */
	gen_data(&d, 300000, 3, 0, 0);
	for (int64_t r = 0; r < d.n; r++)
	{
		__int128	big = (__int128) 1000000000000000000LL * 100000000000000000LL * 99;

		d.cols[COL_K].i[r] = r % 3;
		d.cols[COL_N].n[r] = r % 3 == 0 ? big : r % 3 == 1 ? ((r / 3) % 2 ? big : -big) : r;
	}
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = COL_K;
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	agg(&q, XPU_AGG_SUM_NUMERIC, COL_N);
	check_case(gpu, dir, "numeric_overflow", &d, &q, 0, 100000, XPU_OK, 0);
	tdata_free(&d);
}

int
main(int argc, char **argv)
{
	ServiceGpu	gpu;

	if (argc < 3)
	{
		fprintf(stderr, "usage: gpu_aggcheck FATBIN DIR [hll | bench ROWS [BATCH_ROWS [QUERIES]]]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_fatbin_path = argv[1];
	gpu_open(&gpu, true);
	if (gpu.n_devices == 0)
	{
		printf("1..0 # SKIP no GPU: %s\n", gpu.detail);
		return 0;
	}
	gpu_cache_configure(&gpu, -1);
	if (argc >= 5 && strcmp(argv[3], "bench") == 0)
		run_bench(&gpu, argv[2], atoll(argv[4]), argc >= 6 ? atoll(argv[5]) : 8000000,
				  argc >= 7 ? argv[6] : NULL);
	else if (argc >= 4 && strcmp(argv[3], "hll") == 0)
		run_hll_checks(&gpu, argv[2]);
	else
	{
		run_checks(&gpu, argv[2]);
		run_float2_checks(&gpu, argv[2]);
		run_cache_checks(&gpu, argv[2]);
		run_hll_checks(&gpu, argv[2]);
	}
	gpu_close(&gpu);
	return tap_done();
}
