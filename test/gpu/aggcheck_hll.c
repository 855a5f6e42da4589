/*
 * aggcheck_hll.c
 *		gpu_aggcheck's HLL checks: HLL aggregates on the GPU against the CPU
 *		engine, every group's states and exported sketches byte for byte,
 *		over 0 to 10^6 distinct values and 1 to 10^4 groups; a table that
 *		fills, the memory limits' fallbacks, numeric arguments refused by
 *		both engines, a cancel.  gpu_aggcheck FATBIN DIR hll runs only these.
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#include <pthread.h>
#include <unistd.h>

#include "aggcheck_groups.h"

/* ---------------- HLL: the GPU against the CPU engine ---------------- */

/*
 * The HLL checks run each query twice over the same file and program: on
 * the GPU through gpu_agg_run (the service's path: the GPU's groups and
 * sketches folded into a CPU table), and on the CPU engine (xpu_cpu_exec
 * and xpu_agg_table_update, as the service's workers run it, on one
 * thread); both tables are finished and every group's states and exported
 * sketches (xpu_agg_extra_export: explicit hashes or registers, what
 * AGG_RESULT carries and the backend turns into PostgreSQL's sketch) must
 * be equal byte for byte.
 */

#define HCOL_G	0				/* int4 group key */
#define HCOL_I	1				/* int8 */
#define HCOL_F	2				/* float8, with -0, NaN and infinities */
#define HCOL_T	3				/* text of 0 to 40 bytes */
#define HCOL_D	4				/* date */
#define HCOL_N	5				/* numeric(38,2) */

/*
 * HLL data: n rows whose argument columns take (about) n_distinct values
 * each (0: every value NULL; else 5% NULL), group key of n_groups values
 * (1% NULL when n_groups > 1); *pool receives the text values' storage
 */
static void
gen_hll_data(TData *d, int64_t n, int64_t n_distinct, int64_t n_groups, char **pool)
{
	static const double fedges[] = {-0.0, 0.0, NAN, INFINITY, -INFINITY};
	TCol	   *g, *i, *f, *t, *dt, *nu;
	int64_t		n_text = n_distinct > 0 ? n_distinct : 1;

	memset(d, 0, sizeof(*d));
	d->n = n;
	g = tcol_add(d, "g", XPU_T_INT4);
	i = tcol_add(d, "i", XPU_T_INT8);
	f = tcol_add(d, "f", XPU_T_FLOAT8);
	t = tcol_add(d, "t", XPU_T_TEXT);
	dt = tcol_add(d, "d", XPU_T_DATE);
	nu = tcol_add(d, "n", XPU_T_NUMERIC);
	*pool = malloc((size_t) n_text * 48);
	for (int64_t v = 0; v < n_text; v++)
		snprintf(*pool + v * 48, 48, v == 0 ? "" : v % 7 == 0 ?
				 "a longer text value number %ld, padded" : "t%ld", (long) v);
	for (int64_t r = 0; r < n; r++)
	{
		int64_t		v = n_distinct > 0 ? (int64_t) (rnd() % (uint64_t) n_distinct) : 0;
		int			null_pct = n_distinct > 0 ? 5 : 100;

		g->null[r] = n_groups > 1 && rnd() % 100 == 0;
		g->i[r] = n_groups > 1 ? (int64_t) (rnd() % (uint64_t) n_groups) : 0;
		i->null[r] = (int) (rnd() % 100) < null_pct;
		i->i[r] = (int64_t) ((uint64_t) v * 2654435761u % (UINT64_C(1) << 40)) - ((int64_t) 1 << 39);
		f->null[r] = (int) (rnd() % 100) < null_pct;
		f->f[r] = rnd() % 100 == 0 ? fedges[rnd() % 5] : (double) v * 0.5 - 1000.0;
		t->null[r] = (int) (rnd() % 100) < null_pct;
		t->s[r] = *pool + v * 48;
		dt->null[r] = (int) (rnd() % 100) < null_pct;
		dt->i[r] = v - 500000;
		nu->null[r] = (int) (rnd() % 100) < null_pct;
		nu->n[r] = (__int128) v * 100 + 25;
	}
}

/* the outcome of one engine's run of an HLL case */
typedef struct THllRun
{
	int			rc;				/* 0, -1 (werr, msg) or an XpuErrorCode (err) */
	XpuError	err;
	int			werr;
	char		msg[256];
	double		wall_s;
	uint64_t	rows_in;
	XpuAggTable *table;			/* finished; NULL unless rc is 0 */
} THllRun;

/* the XpuAggSpec of q (key_outs: room for its keys) */
static XpuAggSpec
hll_spec(const TQuery *q, uint16_t *key_outs)
{
	XpuAggSpec	spec;

	for (int k = 0; k < q->n_keys; k++)
		key_outs[k] = (uint16_t) q->keys[k];
	spec.n_keys = q->n_keys;
	spec.key_outs = key_outs;
	spec.n_aggs = q->n_aggs;
	spec.aggs = q->aggs;
	return spec;
}

/* finishes res->table (xpu_agg_table_finish, as agg.c's check_result) */
static void
hll_finish(THllRun *res)
{
	if (res->rc == 0 && !xpu_agg_table_finish(res->table, &res->err))
		res->rc = res->err.code;
	if (res->rc != 0 && res->table != NULL)
	{
		xpu_agg_table_free(res->table);
		res->table = NULL;
	}
}

/* q over the batches of file on the CPU engine into res->table */
static void
hll_cpu_batches(ArrowFile *file, const XpuProgram *prog, const int32_t *fields,
				THllRun *res)
{
	enum {SLICE = 16384};
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * SLICE);
	uint8_t    *mask = malloc(SLICE);
	XpuColumnData cols[12];
	bool		want[12];

	memset(want, 1, sizeof(want));
	for (int32_t b = 0; b < file->n_batches && res->rc == 0; b++)
	{
		ArrowBatch *batch;
		ArrowError	aerr;

		if (arrow_batch_load(file, b, want, &batch, &aerr) != ARROW_OK)
		{
			printf("Bail out! loading a batch: %s\n", aerr.message);
			exit(1);
		}
		for (int k = 0; k < prog->n_cols; k++)
		{
			const ArrowArray *a = &batch->columns[fields[k]];

			cols[k].validity = a->validity;
			cols[k].values = a->field->type.id == ARROW_TYPE_UTF8 ? a->offsets : a->values;
			cols[k].data = (const char *) a->data;
		}
		for (int64_t row0 = 0; row0 < batch->n_rows && res->rc == 0; row0 += SLICE)
		{
			int64_t		n = batch->n_rows - row0 < SLICE ? batch->n_rows - row0 : SLICE;
			XpuChunk	chunk = {n, prog->n_cols, 0, cols};
			XpuResult	r = {n, mask, values, nulls};

			for (int k = 0; k < prog->n_cols; k++)
				cols[k].offset = row0;
			if (xpu_cpu_exec(prog, &chunk, &r, ws, &res->err) != XPU_OK ||
				!xpu_agg_table_update(res->table, &r, &res->err))
				res->rc = res->err.code;
		}
		res->rows_in += batch->n_rows;
		arrow_batch_free(batch);
	}
	free(ws);
	free(values);
	free(nulls);
	free(mask);
}

/* q over the Arrow file path on the CPU engine (one thread) */
static void
hll_cpu_run(const char *path, const XpuProgram *prog, const int32_t *fields,
			const TQuery *q, THllRun *res)
{
	uint16_t	key_outs[4];
	XpuAggSpec	spec = hll_spec(q, key_outs);
	ArrowFile  *file;
	ArrowError	aerr;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	memset(res, 0, sizeof(*res));
	if ((res->table = xpu_agg_table_create(prog, &spec, &res->err)) == NULL)
	{
		res->rc = -1;
		return;
	}
	if (arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! %s: %s\n", path, aerr.message);
		exit(1);
	}
	hll_cpu_batches(file, prog, fields, res);
	arrow_file_close(file);
	hll_finish(res);
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
}

/* q over the Arrow file path on the GPU with gpu_agg_run; cancel: the run's flag or NULL */
static void
hll_gpu_run(const ServiceGpu *gpu, const char *path, const XpuProgram *prog,
			const int32_t *fields, const TQuery *q, volatile int *cancel, THllRun *res)
{
	uint16_t	key_outs[4];
	ArrowFile  *file;
	ArrowError	aerr;
	AggRunFile	f;
	AggRun		run;
	int32_t    *batches;
	volatile int canceled = 0;
	int64_t		t0;

	memset(res, 0, sizeof(*res));
	memset(&run, 0, sizeof(run));
	run.spec = hll_spec(q, key_outs);
	if ((res->table = xpu_agg_table_create(prog, &run.spec, &res->err)) == NULL)
	{
		res->rc = -1;
		return;
	}
	if (arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! %s: %s\n", path, aerr.message);
		exit(1);
	}
	batches = malloc(sizeof(int32_t) * (file->n_batches + 1));
	for (int i = 0; i < file->n_batches; i++)
		batches[i] = i;
	memset(&f, 0, sizeof(f));
	f.path = (char *) path;
	f.fd = file->fd;
	f.file = file;
	f.n_batches = (uint32_t) file->n_batches;
	f.batches = batches;
	f.fields = fields;
	run.prog = prog;
	run.n_files = 1;
	run.files = &f;
	run.n_threads = 16;
	run.canceled = cancel != NULL ? cancel : (volatile int *) &canceled;
	t0 = svc_now_us(CLOCK_MONOTONIC);
	res->rc = gpu_agg_run(gpu, &run, res->table, &res->err, &res->werr, res->msg,
						  sizeof(res->msg));
	res->wall_s = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	res->rows_in = run.rows_in;
	free(batches);
	arrow_file_close(file);
	hll_finish(res);
}

static const XpuAggTable *hll_sort_table;

/* qsort order of group indexes: by key bytes */
static int
hll_group_cmp(const void *a, const void *b)
{
	const uint8_t *ka, *kb;
	uint32_t	la, lb;
	const XpuAggState *s;
	int			c;

	xpu_agg_table_group(hll_sort_table, *(const int64_t *) a, &ka, &la, &s);
	xpu_agg_table_group(hll_sort_table, *(const int64_t *) b, &kb, &lb, &s);
	c = memcmp(ka, kb, la < lb ? la : lb);
	return c != 0 ? c : (la > lb) - (la < lb);
}

/* the group indexes of t in key order (malloc'd) */
static int64_t *
hll_sorted_groups(const XpuAggTable *t)
{
	int64_t		n = xpu_agg_table_ngroups(t);
	int64_t    *idx = malloc(sizeof(int64_t) * (n + 1));

	for (int64_t i = 0; i < n; i++)
		idx[i] = i;
	hll_sort_table = t;
	qsort(idx, n, sizeof(int64_t), hll_group_cmp);
	return idx;
}

/*
 * do states sg (GPU) and sc (CPU) of aggregate kind `kind` export the same
 * bytes; *dense counts the register sketches, *explicit the explicit ones
 */
static int
hll_state_same(int kind, const XpuAggState *sg, const XpuAggState *sc, char *why,
			   int64_t *dense, int64_t *explicit)
{
	const uint8_t *dg, *dc;
	int			fg, fc;
	uint32_t	lg, lc;

	if (sg->count != sc->count || sg->flags != sc->flags)
		return sprintf(why, "count %ld/%ld flags %u/%u", (long) sg->count,
					   (long) sc->count, sg->flags, sc->flags), 0;
	if (kind != XPU_AGG_HLL)
		return 1;
	lg = xpu_agg_extra_export(kind, sg, &dg, &fg);
	lc = xpu_agg_extra_export(kind, sc, &dc, &fc);
	if (lg != lc || fg != fc || (lg > 0 && memcmp(dg, dc, lg) != 0))
		return sprintf(why, "sketch of %u bytes (%s) / %u bytes (%s)%s", lg,
					   fg ? "registers" : "hashes", lc, fc ? "registers" : "hashes",
					   lg == lc && fg == fc ? ": the bytes differ" : ""), 0;
	*(fg ? dense : explicit) += 1;
	return 1;
}

/* do finished tables g (GPU) and c (CPU) of q hold the same groups, byte for byte */
static int
hll_tables_same(const XpuAggTable *g, const XpuAggTable *c, const TQuery *q,
				const char *name, int64_t *dense, int64_t *explicit)
{
	int64_t		n = xpu_agg_table_ngroups(c);
	int64_t    *ig, *ic;
	char		why[256];
	int			ok = 1;

	if (xpu_agg_table_ngroups(g) != n)
	{
		tap_diag("%s: %ld groups on the GPU, %ld on the CPU", name,
				 (long) xpu_agg_table_ngroups(g), (long) n);
		return 0;
	}
	ig = hll_sorted_groups(g);
	ic = hll_sorted_groups(c);
	for (int64_t i = 0; i < n && ok; i++)
	{
		const uint8_t *kg, *kc;
		uint32_t	lg, lc;
		const XpuAggState *sg, *sc;

		xpu_agg_table_group(g, ig[i], &kg, &lg, &sg);
		xpu_agg_table_group(c, ic[i], &kc, &lc, &sc);
		if (lg != lc || memcmp(kg, kc, lg) != 0)
		{
			tap_diag("%s: the groups' keys differ (%u / %u bytes)", name, lg, lc);
			ok = 0;
		}
		for (int j = 0; j < q->n_aggs && ok; j++)
			if (!hll_state_same(q->aggs[j].kind, &sg[j], &sc[j], why, dense, explicit))
			{
				tap_diag("%s: group %ld, aggregate %d (p = %d): %s", name, (long) i, j,
						 q->aggs[j].param, why);
				ok = 0;
			}
	}
	free(ig);
	free(ic);
	return ok;
}

/* prints why a run failed */
static void
hll_run_diag(const char *name, const char *engine, const THllRun *r)
{
	tap_diag("%s: the %s run failed: rc %d (werr %d) %s%s", name, engine, r->rc, r->werr,
			 r->err.message, r->msg);
}

/*
 * check_hll_case: q over d on the GPU and on the CPU engine: both must
 * succeed (expect_rc 0) with byte-identical groups, or both end with
 * XpuErrorCode expect_rc
 */
static void
check_hll_case(const ServiceGpu *gpu, const char *dir, const char *name, const TData *d,
			   const TQuery *q, int64_t batch_rows, int expect_rc)
{
	char		path[1024];
	int32_t		fields[12];
	XpuProgram *prog = build_program(d, q, fields);
	THllRun		rg, rc;
	int64_t		dense = 0,
				explicit = 0;

	snprintf(path, sizeof(path), "%s/hll_%s.arrow", dir, name);
	tdata_write(d, path, batch_rows);
	hll_gpu_run(gpu, path, prog, fields, q, NULL, &rg);
	hll_cpu_run(path, prog, fields, q, &rc);
	if (expect_rc != 0)
		tap_ok(rg.rc == expect_rc && rc.rc == expect_rc,
			   "hll %s: both engines end with error %d (GPU %d: %s%s; CPU %d: %s)", name,
			   expect_rc, rg.rc, rg.err.message, rg.msg, rc.rc, rc.err.message);
	else if (rg.rc != 0 || rc.rc != 0)
	{
		if (rg.rc != 0)
			hll_run_diag(name, "GPU", &rg);
		if (rc.rc != 0)
			hll_run_diag(name, "CPU", &rc);
		tap_ok(0, "hll %s: both engines run it", name);
	}
	else
		tap_ok(hll_tables_same(rg.table, rc.table, q, name, &dense, &explicit) &&
			   rg.rows_in == (uint64_t) d->n,
			   "hll %s: %ld groups byte-identical on the GPU and the CPU engine "
			   "(%ld register and %ld explicit sketches; GPU %.3f s, CPU %.3f s)", name,
			   (long) xpu_agg_table_ngroups(rc.table), (long) dense, (long) explicit,
			   rg.wall_s, rc.wall_s);
	xpu_agg_table_free(rg.table);
	xpu_agg_table_free(rc.table);
	free(prog);
	unlink(path);
}

/* an HLL query: count(*) and HLL over int8, float8, text and date at p = 4 and 14
 * (and 18 over int8 and text with p18), grouped by the key unless n_groups is 0 */
static void
hll_query(TQuery *q, int64_t n_groups, int p18, uint32_t limit_mb)
{
	static const int cols[] = {HCOL_I, HCOL_F, HCOL_T, HCOL_D};

	query_init(q);
	if (n_groups > 0)
	{
		q->n_keys = 1;
		q->keys[0] = HCOL_G;
	}
	agg(q, XPU_AGG_COUNT_STAR, -1);
	for (int c = 0; c < 4; c++)
	{
		agg_hll(q, cols[c], 4, limit_mb);
		agg_hll(q, cols[c], 14, limit_mb);
	}
	if (p18)
	{
		agg_hll(q, HCOL_I, 18, limit_mb);
		agg_hll(q, HCOL_T, 18, limit_mb);
	}
}

/* the matrix: 0 .. 10^6 distinct values, no keys, 5 and 10^4 groups */
static void
check_hll_matrix(const ServiceGpu *gpu, const char *dir)
{
	static const int64_t distinct[] = {0, 1, 5, 1000, 100000, 1000000};
	static const int64_t groups[] = {0, 5, 10000};

	for (int di = 0; di < 6; di++)
		for (int gi = 0; gi < 3; gi++)
		{
			int64_t		nd = distinct[di];
			int64_t		n = nd == 0 ? 100000 : nd * 3 < 200000 ? 200000 :
				nd * 3 > 3000000 ? 3000000 : nd * 3;
			TData		d;
			TQuery		q;
			char	   *pool;
			char		name[64];

			gen_hll_data(&d, n, nd, groups[gi] > 0 ? groups[gi] : 1, &pool);
			hll_query(&q, groups[gi], groups[gi] < 10000, 1024);
			snprintf(name, sizeof(name), "%ld_distinct_%ld_groups", (long) nd,
					 (long) (groups[gi] > 0 ? groups[gi] : 1));
			check_hll_case(gpu, dir, name, &d, &q, 500000, 0);
			tdata_free(&d);
			free(pool);
		}
}

/*
 * p = 18 over 10^4 groups: the sketches (1.5 MiB a group) hold the GPU
 * table to a few hundred groups, so it fills and is flushed many times;
 * then the memory limits: past pg_warp.gpupreagg_hll_memory both engines
 * fall back, and a limit below one group's GPU sketches falls back on the GPU
 */
static void
check_hll_limits(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	THllRun		rg;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];

	gen_hll_data(&d, 1000000, 100000, 10000, &pool);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = HCOL_G;
	agg(&q, XPU_AGG_COUNT, HCOL_I);
	agg_hll(&q, HCOL_I, 18, 1024);
	agg_hll(&q, HCOL_T, 18, 1024);
	check_hll_case(gpu, dir, "p18_10000_groups_table_full", &d, &q, 250000, 0);
	tdata_free(&d);
	free(pool);

	gen_hll_data(&d, 3000000, 1000000, 10000, &pool);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = HCOL_G;
	agg_hll(&q, HCOL_I, 14, 1);
	check_hll_case(gpu, dir, "limit_1MiB_fallback", &d, &q, 500000, XPU_ERR_FALLBACK);
	tdata_free(&d);
	free(pool);

	gen_hll_data(&d, 100000, 5, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_I, 18, 1);
	agg_hll(&q, HCOL_T, 18, 1);
	prog = build_program(&d, &q, fields);
	snprintf(path, sizeof(path), "%s/hll_gpu_limit.arrow", dir);
	tdata_write(&d, path, 50000);
	hll_gpu_run(gpu, path, prog, fields, &q, NULL, &rg);
	tap_ok(rg.rc == XPU_ERR_FALLBACK,
		   "hll: two p = 18 sketches (1.5 MiB a group on the GPU) under a 1 MiB limit fall "
		   "back on the GPU (rc %d: %s%s)", rg.rc, rg.err.message, rg.msg);
	xpu_agg_table_free(rg.table);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

/* numeric arguments: neither engine takes them (PostgreSQL computes hll_count(numeric)) */
static void
check_hll_numeric(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	TRunResult	res;
	TMap		m;
	uint8_t		types[4] = {XPU_T_NUMERIC};
	uint16_t	key_outs[4];
	XpuAggSpec	spec;
	XpuAggTable *t;
	XpuError	err;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];

	gen_hll_data(&d, 10000, 100, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_N, 14, 1024);
	prog = build_program(&d, &q, fields);
	spec = hll_spec(&q, key_outs);
	t = xpu_agg_table_create(prog, &spec, &err);
	snprintf(path, sizeof(path), "%s/hll_numeric.arrow", dir);
	tdata_write(&d, path, 5000);
	tmap_init(&m, q.n_aggs, q.aggs, types, 16);
	gpu_run(gpu, path, prog, fields, &q, 0, &m, &res);
	tap_ok(t == NULL && res.rc == -1 && res.werr == WARP_ERR_UNSUPPORTED,
		   "hll: a numeric argument is refused by both engines (CPU: %s; GPU: %s)",
		   t == NULL ? err.message : "taken", res.msg);
	xpu_agg_table_free(t);
	tmap_free(&m);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

typedef struct THllCancel
{
	volatile int flag;
	int64_t		after_us;
} THllCancel;

static void *
hll_cancel_thread(void *arg)
{
	THllCancel *c = arg;

	usleep((useconds_t) c->after_us);
	__atomic_store_n(&c->flag, 1, __ATOMIC_RELAXED);
	return NULL;
}

/*
 * cancel: an HLL run over 20 M rows canceled 5 ms in ends with
 * WARP_ERR_CANCELED; the same run afterwards equals the CPU engine's
 */
static void
check_hll_cancel(const ServiceGpu *gpu, const char *dir)
{
	TData		d;
	TQuery		q;
	char	   *pool;
	THllRun		rg, rc;
	int32_t		fields[12];
	XpuProgram *prog;
	char		path[1024];
	THllCancel	c = {0, 5000};
	pthread_t	th;
	int64_t		dense = 0,
				explicit = 0;

	gen_hll_data(&d, 20000000, 1000000, 1, &pool);
	query_init(&q);
	agg_hll(&q, HCOL_I, 14, 1024);
	prog = build_program(&d, &q, fields);
	snprintf(path, sizeof(path), "%s/hll_cancel.arrow", dir);
	tdata_write(&d, path, 500000);
	pthread_create(&th, NULL, hll_cancel_thread, &c);
	hll_gpu_run(gpu, path, prog, fields, &q, &c.flag, &rg);
	pthread_join(th, NULL);
	tap_ok(rg.rc == -1 && rg.werr == WARP_ERR_CANCELED,
		   "hll: a run canceled 5 ms in ends canceled (rc %d, werr %d: %s, after %.3f s)",
		   rg.rc, rg.werr, rg.msg, rg.wall_s);
	xpu_agg_table_free(rg.table);
	hll_gpu_run(gpu, path, prog, fields, &q, NULL, &rg);
	hll_cpu_run(path, prog, fields, &q, &rc);
	tap_ok(rg.rc == 0 && rc.rc == 0 &&
		   hll_tables_same(rg.table, rc.table, &q, "after cancel", &dense, &explicit),
		   "hll: the run after the cancel equals the CPU engine's (20 M rows: GPU %.3f s = "
		   "%.2f G rows/s end to end, CPU one thread %.3f s)", rg.wall_s,
		   rg.wall_s > 0 ? d.n / rg.wall_s / 1e9 : 0.0, rc.wall_s);
	xpu_agg_table_free(rg.table);
	xpu_agg_table_free(rc.table);
	unlink(path);
	free(prog);
	tdata_free(&d);
	free(pool);
}

/* the HLL checks (gpu_aggcheck FATBIN DIR hll runs only these) */
static void
run_hll_checks(const ServiceGpu *gpu, const char *dir)
{
	check_hll_matrix(gpu, dir);
	check_hll_limits(gpu, dir);
	check_hll_numeric(gpu, dir);
	check_hll_cancel(gpu, dir);
}
