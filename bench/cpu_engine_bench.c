/*-------------------------------------------------------------------------
 *
 * cpu_engine_bench.c
 *		The CPU engine's per-row cost on one thread, without the service:
 *		engine_bench.py's queries over lineorder (an Arrow file, e.g.
 *		from bench/ssb/load.sh) as the service's AGG_RUN workers run them
 *		(src/service/agg.c, run_batch): each record batch loaded with the
 *		Arrow reader (with the service's buffer allocator,
 *		src/service/buf_cache.c), then xpu_cpu_exec and xpu_agg_table_update over
 *		slices of 4096 rows.  The programs are those codegen emits for
 *		the queries (EXPLAIN VERBOSE's Engine Program): Q1 to Q4 of
 *		engine_bench.py (Q3: 600,000 groups of an integer key; Q4: two text
 *		keys and count(*)).
 *
 *	cpu_engine_bench FILE [q1|q2|q3|q4|both|all] [REPEAT]
 *
 * FILE may hold its text columns dictionary-encoded (pg2arrow -t lineorder
 * --dictionary=lo_shipmode,lo_orderpriority, or pyarrow): the columns are
 * bound as the service binds them (xpu_column_bind), and Q4 then groups on
 * the dictionary indices with its keys left unloaded, as the service's
 * workers do (xpu_cpu_dict_outs, xpu_agg_table_dict_skip, xpu_cpu_exec_skip,
 * xpu_agg_table_update_dict); its answer is the plain file's.
 *
 * With MAP=1 in the environment the file is mapped and its buffers read in
 * place (ArrowFile.map), as the service does with pg_warp.map_arrow_files;
 * MAP=2 maps it anew for every repetition, as the service maps a file for
 * every run (src/service/file_map.c), so that every run's first touch of
 * each page faults in the engine threads (the cost that MAP=1's repetitions
 * after the first do not see).
 *
 * With THREADS=N in the environment, N threads claim the batches from one
 * counter, each into its own table, as the service's workers do; the
 * tables are then merged as agg.c's run_workers merges them (timed apart):
 * by partitions on N threads when a table spilled (xpu_agg.h) or the
 * tables hold many groups (from 4 threads on), else one after the other
 * into the first.  SPILL=G sets the tables' spill limit (default as the
 * service's, PG_WARP_AGG_SPILL_GROUPS: 0, never spill).
 * Q3_GROUPS=M makes Q3's modulus M instead of 600,000.
 *
 * Prints per query: the load time, the engine time (program + table) and
 * the engine threads' CPU time (the figure to compare on a busy machine),
 * the engine's nanoseconds per row, the merge's wall and CPU time, and the
 * answer (the groups and a checksum of their keys and states, in any order)
 * so that two builds can be compared.  A benchmark, not a test: the tests
 * are test/c and test/python.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>

#include "arrow.h"
#include "service/buf_cache.h"
#include "xpu_agg.h"
#include "xpu_program.h"
#include "xpu_arrow_bind.h"
#include "ssb_q1.h"

#define SLICE	4096			/* src/service/agg.c's AGG_SLICE */
#define MAX_THREADS	64

typedef struct Query
{
	const char *name;
	XpuProgram *prog;
	int			n_fields;
	const char *fields[8];		/* chunk column i reads this field */
	XpuAggSpec	spec;
	uint16_t	key_outs[4];
	XpuAggDesc	aggs[8];
} Query;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* the CPU time of this thread: on a busy machine, unlike now_s, without the
 * time others' processes ran */
static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static XpuProgram *
finish(XpuBuilder *b)
{
	char		errbuf[256];
	XpuProgram *p = xpu_builder_finish(b, errbuf, sizeof(errbuf));

	xpu_builder_free(b);
	if (p == NULL)
	{
		fprintf(stderr, "builder: %s\n", errbuf);
		exit(1);
	}
	return p;
}

/*
 * describe: q is query `name`, the program b builds, reading the n_fields
 * fields named (chunk column i reads fields[i]), grouped by its first
 * n_keys outs, with the n_aggs aggregates aggs
 */
static void
describe(Query *q, const char *name, XpuBuilder *b, int n_fields, const char *const *fields,
		 int n_keys, int n_aggs, const XpuAggDesc *aggs)
{
	q->name = name;
	q->prog = finish(b);
	q->n_fields = n_fields;
	for (int i = 0; i < n_fields; i++)
		q->fields[i] = fields[i];
	q->spec.n_keys = n_keys;
	for (int i = 0; i < n_keys; i++)
		q->key_outs[i] = (uint16_t) i;
	q->spec.n_aggs = n_aggs;
	for (int i = 0; i < n_aggs; i++)
		q->aggs[i] = aggs[i];
	q->spec.aggs = q->aggs;
	q->spec.key_outs = q->key_outs;
}

/*
 * Q1: sum(lo_extendedprice * lo_discount) WHERE lo_discount BETWEEN 1 AND 3
 * AND lo_quantity < 25 (chunk columns: quantity, extendedprice, discount)
 */
static void
build_q1(Query *q)
{
	static const char *const fields[3] = {"lo_quantity", "lo_extendedprice", "lo_discount"};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_SUM_INT, 0, 0, 0}};
	XpuBuilder *b = xpu_builder_create();

	ssb_q1_build(b, 0);
	xpu_builder_fold_moves(b);	/* as codegen compiles it now */
	describe(q, "q1", b, 3, fields, 0, 1, aggs);
}

/*
 * Q2: lo_orderpriority, lo_shipmode, count(*), sum(lo_revenue),
 * avg(lo_quantity), max(lo_supplycost) GROUP BY 1, 2 (chunk columns:
 * orderpriority, revenue, quantity, supplycost, shipmode)
 */
static void
build_q2(Query *q)
{
	XpuBuilder *b = xpu_builder_create();
	int			r[6];
	static const XpuType types[6] = {XPU_T_BOOL, XPU_T_TEXT, XPU_T_TEXT, XPU_T_INT4,
	XPU_T_INT4, XPU_T_INT4};
	static const int cols[5] = {0, 4, 2, 1, 3};
	static const char *const fields[5] = {"lo_orderpriority", "lo_revenue", "lo_quantity",
	"lo_supplycost", "lo_shipmode"};
	static const XpuAggDesc aggs[4] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 3, 0},
	{XPU_AGG_SUM_INT, 0, 2, 0}, {XPU_AGG_MAX, 0, 4, 0}};

	for (int i = 0; i < 6; i++)
		r[i] = xpu_add_reg(b, types[i], 0);
	xpu_add_column(b, 0, XPU_COL_UTF8, 0);
	xpu_add_column(b, 1, XPU_COL_INT32, 0);
	xpu_add_column(b, 2, XPU_COL_INT32, 0);
	xpu_add_column(b, 3, XPU_COL_INT32, 0);
	xpu_add_column(b, 4, XPU_COL_UTF8, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	for (int i = 0; i < 5; i++)
		xpu_add_instr(b, XPU_OP_LOAD_COL, r[i + 1], 0, 0, 0, cols[i]);
	for (int i = 0; i < 5; i++)
		xpu_add_output(b, r[i + 1]);
	describe(q, "q2", b, 5, fields, 2, 4, aggs);
}

/*
 * Q3: lo_orderkey % 600000, count(*), sum(lo_revenue) GROUP BY 1 (600,000
 * groups; chunk columns: orderkey, revenue)
 */
static void
build_q3(Query *q)
{
	XpuBuilder *b = xpu_builder_create();
	int64_t		m = getenv("Q3_GROUPS") ? atoll(getenv("Q3_GROUPS")) : 600000;
	static const char *const fields[2] = {"lo_orderkey", "lo_revenue"};
	static const XpuAggDesc aggs[2] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 1, 0}};
	int			r1, r2, r3, r4;

	xpu_add_reg(b, XPU_T_BOOL, 0);
	r1 = xpu_add_reg(b, XPU_T_INT8, 0);
	r2 = xpu_add_reg(b, XPU_T_INT8, 0);
	r3 = xpu_add_reg(b, XPU_T_INT8, 0);
	r4 = xpu_add_reg(b, XPU_T_INT4, 0);
	xpu_add_column(b, 0, XPU_COL_INT64, 0);
	xpu_add_column(b, 1, XPU_COL_INT32, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r1, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, r2, 0, 0, 0, xpu_add_const(b, &m, sizeof(m)));
	xpu_add_instr(b, XPU_OP_MOD_I8, r3, r1, r2, 0, 0);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r4, 0, 0, 0, 1);
	xpu_add_output(b, r3);
	xpu_add_output(b, r4);
	describe(q, "q3", b, 2, fields, 1, 2, aggs);
}

/*
 * Q4: lo_shipmode, lo_orderpriority, count(*) GROUP BY 1, 2 (text keys
 * alone; chunk columns: shipmode, orderpriority)
 */
static void
build_q4(Query *q)
{
	static const char *const fields[2] = {"lo_shipmode", "lo_orderpriority"};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	XpuBuilder *b = xpu_builder_create();
	int			r[2];

	xpu_add_reg(b, XPU_T_BOOL, 0);
	for (int i = 0; i < 2; i++)
	{
		r[i] = xpu_add_reg(b, XPU_T_TEXT, 0);
		xpu_add_column(b, i, XPU_COL_UTF8, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	for (int i = 0; i < 2; i++)
		xpu_add_instr(b, XPU_OP_LOAD_COL, r[i], 0, 0, 0, i);
	for (int i = 0; i < 2; i++)
		xpu_add_output(b, r[i]);
	describe(q, "q4", b, 2, fields, 2, 1, aggs);
}

/* the answer's fingerprint (of the groups in any order, over the n tables
 * t[], whose groups are disjoint): every group's key, count, sums and max */
static void
print_answer(const Query *q, XpuAggTable **t, int n)
{
	unsigned __int128 check = 0;
	int64_t		ng = 0;
	uint32_t	flags = 0;

	for (int i = 0; i < n; i++)
	{
		for (int64_t g = 0; g < xpu_agg_table_ngroups(t[i]); g++)
		{
			const uint8_t *key;
			uint32_t	klen;
			const XpuAggState *s;
			unsigned __int128 one = 0;

			xpu_agg_table_group(t[i], g, &key, &klen, &s);
			for (int a = 0; a < q->spec.n_aggs; a++)
				one += s[a].count * 31 + s[a].v.i128 * (a + 1);
			for (uint32_t k = 0; k < klen; k++)
				one = one * 3 + key[k];
			one *= one | 1;
			check += one ^ (one >> 61);
		}
		ng += xpu_agg_table_ngroups(t[i]);
		flags |= xpu_agg_table_flags(t[i]);
	}
	printf("%s answer: groups %lld checksum %016llx%016llx flags %u\n", q->name, (long long) ng,
		   (unsigned long long) (check >> 64), (unsigned long long) check, flags);
}

/* one run of a query: what its threads share */
typedef struct Run
{
	const Query *q;
	ArrowFile  *file;
	const bool *want;
	const int  *fidx;
	int64_t		spill;			/* the tables' spill limit */
	int			next;			/* atomic: the next batch, or (merge) partition */
	int			nparts;			/* the merge's partitions */
	int64_t		most;			/* the groups of the largest table */
	int			nthreads;
	XpuAggTable **tables;		/* [nthreads] the scan's */
	XpuAggTable *parts[XPU_AGG_PARTS];	/* the partitioned merge's */
} Run;

/* one thread of a run: its table and times */
typedef struct Worker
{
	Run		   *run;
	pthread_t	thread;
	int			index;			/* its table: run->tables[index] */
	double		t_load,
				t_exec,
				c_exec,
				c_merge;
	int64_t		rows;
} Worker;

static void
fail(const char *what, const char *msg)
{
	fprintf(stderr, "%s: %s\n", what, msg);
	exit(1);
}

/* a scan thread: claims batches and folds their rows into its table */
static void *
scan_main(void *arg)
{
	Worker	   *w = arg;
	Run		   *run = w->run;
	const XpuProgram *prog = run->q->prog;
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * SLICE);
	uint8_t    *mask = malloc(SLICE);
	XpuColumnData cols[8];
	const XpuColumnData *dict_cols[8];
	uint8_t		skip[8];
	XpuError	err = {0};
	XpuAggTable *table = run->tables[w->index];
	int32_t		bi;

	while ((bi = __atomic_fetch_add(&run->next, 1, __ATOMIC_RELAXED)) < run->file->n_batches)
	{
		ArrowBatch *batch;
		ArrowError	aerr;
		double		t0 = now_s(), t1, c1;

		if (arrow_batch_load(run->file, bi, run->want, &batch, &aerr) != ARROW_OK)
			fail("load", aerr.message);
		t1 = now_s();
		c1 = cpu_s();
		w->t_load += t1 - t0;
		for (int i = 0; i < run->q->n_fields; i++)
			xpu_column_bind(&cols[i], &batch->columns[run->fidx[i]], run->file, run->fidx[i]);
		for (int64_t row0 = 0; row0 < batch->n_rows; row0 += SLICE)
		{
			int64_t		n = batch->n_rows - row0 < SLICE ? batch->n_rows - row0 : SLICE;
			XpuChunk	chunk = {n, run->q->n_fields, 0, cols};
			XpuResult	res = {n, mask, values, nulls};

			for (int i = 0; i < run->q->n_fields; i++)
				cols[i].offset = row0;
			int			nd = xpu_cpu_dict_outs(prog, &chunk, dict_cols);

			/* dictionary keys: grouped on their indices, left unloaded */
			if (nd > 0)
				xpu_agg_table_dict_skip(table, prog->n_outs, dict_cols, skip);
			if (xpu_cpu_exec_skip(prog, &chunk, &res, ws, &err, NULL, nd > 0 ? skip : NULL) != XPU_OK ||
				!xpu_agg_table_update_dict(table, &res, nd > 0 ? dict_cols : NULL, &err))
				fail("run", err.message);
		}
		w->rows += batch->n_rows;
		w->t_exec += now_s() - t1;
		w->c_exec += cpu_s() - c1;
		arrow_batch_free(batch);
	}
	free(ws);
	free(values);
	free(nulls);
	free(mask);
	return NULL;
}

/* a merge thread: claims partitions, each merged from every table into a table of its own */
static void *
merge_main(void *arg)
{
	Worker	   *w = arg;
	Run		   *run = w->run;
	XpuError	err = {0};
	double		c0 = cpu_s();
	int			p;

	while ((p = __atomic_fetch_add(&run->next, 1, __ATOMIC_RELAXED)) < run->nparts)
	{
		if ((run->parts[p] = xpu_agg_table_create(run->q->prog, &run->q->spec, &err)) == NULL ||
			!xpu_agg_table_reserve(run->parts[p], run->most / run->nparts, &err))
			fail("merge", err.message);
		for (int i = 0; i < run->nthreads; i++)
			if (!xpu_agg_table_merge_part(run->parts[p], run->tables[i], p, run->nparts, &err))
				fail("merge", err.message);
	}
	w->c_merge = cpu_s() - c0;
	return NULL;
}

/* starts fn on n threads of ws[] and waits for them */
static void
run_threads(Worker *ws, int n, void *(*fn) (void *))
{
	for (int i = 0; i < n; i++)
		if (pthread_create(&ws[i].thread, NULL, fn, &ws[i]) != 0)
			fail("pthread_create", "failed");
	for (int i = 0; i < n; i++)
		pthread_join(ws[i].thread, NULL);
}

/* MAP=2: a fresh mapping of the file, as the service makes one per run */
static void
remap(ArrowFile *file)
{
	void	   *m;

	munmap((void *) file->map, file->source.size);
	m = mmap(NULL, file->source.size, PROT_READ, MAP_SHARED, file->fd, 0);
	if (m == MAP_FAILED)
		fail("mmap", "failed");
	file->map = m;
}

/* runs q over every batch of file, repeat times, and prints its figures and answer */
static void
run_query(Query *q, ArrowFile *file, int repeat)
{
	int			fidx[8];
	bool	   *want = calloc(file->schema.n_fields, sizeof(bool));
	int			nthreads = getenv("THREADS") ? atoi(getenv("THREADS")) : 1;
	XpuAggTable *tables[MAX_THREADS] = {0};
	Worker		ws[MAX_THREADS];
	/* agg.c's agg_spill_limit: never, unless asked */
	Run			run = {q, file, want, fidx, getenv("SPILL") ? atoll(getenv("SPILL")) : 0};
	double		t_load = 0, t_exec = 0, c_exec = 0, t_merge = 0, c_merge = 0, mem = 0;
	int64_t		rows = 0;
	int			nparts = 1;
	XpuError	err = {0};

	if (nthreads < 1 || nthreads > MAX_THREADS)
		fail("THREADS", "out of range");
	for (int i = 0; i < q->n_fields; i++)
	{
		fidx[i] = -1;
		for (int f = 0; f < file->schema.n_fields; f++)
			if (strcmp(file->schema.fields[f].name, q->fields[i]) == 0)
				fidx[i] = f;
		if (fidx[i] < 0)
			fail("no field", q->fields[i]);
		want[fidx[i]] = true;
	}
	run.nthreads = nthreads;
	run.tables = tables;
	for (int rep = 0; rep < repeat; rep++)
	{
		double		t0;
		int			spilled = 0;
		int64_t		groups = 0;

		run.most = 0;

		for (int i = 0; i < XPU_AGG_PARTS; i++)
		{
			xpu_agg_table_free(run.parts[i]);
			run.parts[i] = NULL;
		}
		for (int i = 0; i < nthreads; i++)
		{
			xpu_agg_table_free(tables[i]);
			if ((tables[i] = xpu_agg_table_create(q->prog, &q->spec, &err)) == NULL)
				fail("create", err.message);
			xpu_agg_table_set_spill(tables[i], run.spill);
			ws[i] = (Worker) {&run};
			ws[i].index = i;
		}
		run.next = 0;
		if (rep > 0 && getenv("MAP") != NULL && atoi(getenv("MAP")) == 2)
			remap(file);
		run_threads(ws, nthreads, scan_main);
		for (int i = 0; i < nthreads; i++)
		{
			t_load += ws[i].t_load;
			t_exec += ws[i].t_exec;
			c_exec += ws[i].c_exec;
			rows += ws[i].rows;
			spilled |= xpu_agg_table_spilled(tables[i]);
			groups += xpu_agg_table_ngroups(tables[i]);
			if (xpu_agg_table_ngroups(tables[i]) > run.most)
				run.most = xpu_agg_table_ngroups(tables[i]);
			mem += xpu_agg_table_memory(tables[i]) / (1024.0 * 1024.0 * repeat);
		}
		t0 = now_s();
		run.next = 0;
		/* agg.c's fold_tables (AGG_FOLD_TABLES) and merge_tables (AGG_PARALLEL_MERGE) */
		run.nparts = spilled ? XPU_AGG_PARTS : nthreads >= 4 && groups >= 65536 ? nthreads : 1;
		if (run.nparts > 1)
		{
			run_threads(ws, nthreads, merge_main);
			for (int i = 0; i < nthreads; i++)
				c_merge += ws[i].c_merge;
			nparts = run.nparts;
		}
		else
		{
			double		c0 = cpu_s();

			for (int i = 1; i < nthreads; i++)
				if (!xpu_agg_table_merge(tables[0], tables[i], &err))
					fail("merge", err.message);
			c_merge += cpu_s() - c0;
			nparts = 1;
		}
		t_merge += now_s() - t0;
	}
	/* the threads' engine wall time: per thread, as each ran its share */
	t_exec /= nthreads;
	printf("%s: %lld rows, %d thread(s), load %.3f s (%.2f ns/row), engine %.3f s wall "
		   "(%.2f ns/row), engine CPU %.3f s (%.2f ns/row), merge %.3f s wall %.3f s CPU, "
		   "tables %.1f MiB, engine+merge CPU %.2f ns/row\n", q->name, (long long) rows,
		   nthreads, t_load, t_load * 1e9 / rows, t_exec, t_exec * 1e9 / rows, c_exec,
		   c_exec * 1e9 / rows, t_merge, c_merge, mem, (c_exec + c_merge) * 1e9 / rows);
	print_answer(q, nparts > 1 ? run.parts : tables, nparts);
	for (int i = 0; i < XPU_AGG_PARTS; i++)
		xpu_agg_table_free(run.parts[i]);
	for (int i = 0; i < nthreads; i++)
		xpu_agg_table_free(tables[i]);
	free(want);
}

int
main(int argc, char **argv)
{
	ArrowFile  *file;
	ArrowError	aerr;
	Query		q1 = {0}, q2 = {0}, q3 = {0}, q4 = {0};
	const char *which = argc > 2 ? argv[2] : "both";
	int			repeat = argc > 3 ? atoi(argv[3]) : 1;

	if (argc < 2)
	{
		fprintf(stderr, "usage: %s FILE [q1|q2|q3|q4|both|all] [REPEAT]\n", argv[0]);
		return 2;
	}
	if (arrow_file_open(argv[1], &svc_buffer_allocator, &file, &aerr) != ARROW_OK)
	{
		fprintf(stderr, "%s: %s\n", argv[1], aerr.message);
		return 1;
	}
	if (getenv("MAP") != NULL && atoi(getenv("MAP")) != 0)
	{
		/* as the service reads with pg_warp.map_arrow_files (file_map.c) */
		void	   *m = mmap(NULL, file->source.size, PROT_READ, MAP_SHARED, file->fd, 0);

		if (m == MAP_FAILED)
		{
			perror("mmap");
			return 1;
		}
		file->map = m;
	}
	build_q1(&q1);
	build_q2(&q2);
	build_q3(&q3);
	build_q4(&q4);
	if (strcmp(which, "q1") == 0 || strcmp(which, "both") == 0 || strcmp(which, "all") == 0)
		run_query(&q1, file, repeat);
	if (strcmp(which, "q2") == 0 || strcmp(which, "both") == 0 || strcmp(which, "all") == 0)
		run_query(&q2, file, repeat);
	if (strcmp(which, "q3") == 0 || strcmp(which, "all") == 0)
		run_query(&q3, file, repeat);
	if (strcmp(which, "q4") == 0 || strcmp(which, "all") == 0)
		run_query(&q4, file, repeat);
	arrow_file_close(file);
	free(q1.prog);
	free(q2.prog);
	free(q3.prog);
	free(q4.prog);
	return 0;
}
