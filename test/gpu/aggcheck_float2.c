/*
 * aggcheck_float2.c
 *		gpu_aggcheck's float2 checks: the GPU's groups over Float16 columns
 *		(float2 keys, quals and aggregates, widened to float4 as GpuPreAgg
 *		hands them over) against the CPU engine's over the same file.
 *		Included by gpu_aggcheck.c (one translation unit: tap.h counts
 *		the checks in static variables).
 */
#include <math.h>
#include <unistd.h>

#include "aggcheck_groups.h"

/* ---------------- float2 (Float16 columns) against the CPU engine ---------------- */

/*
 * The float2 checks: GpuPreAgg hands a float2 key or aggregate argument
 * over as its exact float4 (codegen_proj_program's F2_TO_F4), so the
 * programs load Float16 columns as float2, may filter on them in float2
 * (NE_F2), and group and aggregate the widened values.  The GPU's groups
 * must equal those of the CPU engine (xpu_cpu_exec and xpu_agg.c's table,
 * what the service runs without a GPU) over the same file: -0 and 0 one
 * group, every NaN one group, NULLs, infinities, the extreme halves.
 */
#define F2_ROWS		200000
#define F2_BATCH	50000

static const double f2_keys[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0, -0.0, 65504.0, -65504.0,
	0x1p-24, -0x1p-24, 1.0, -1.5, 0.25, 100.0};
#define F2_NKEYS	((int) (sizeof(f2_keys) / sizeof(f2_keys[0])))
#define F2_GROUPS	(F2_NKEYS - 2 + 1)	/* one NaN, one zero, and NULL */

/* writes the float2 file: k float16 (keys, NULLs), v float16 (values), g int32 */
static void
f2_write(const char *path)
{
	static const double vedges[] = {NAN, INFINITY, -INFINITY, -0.0, 65504.0, 0x1p-24};
	ArrowField	fields[3];
	ArrowSchema schema;
	ArrowBuilder *b[3];
	ArrowWriter *w;
	ArrowError	err;
	const char *names[3] = {"k", "v", "g"};

	memset(fields, 0, sizeof(fields));
	memset(&schema, 0, sizeof(schema));
	for (int c = 0; c < 3; c++)
	{
		fields[c].name = (char *) names[c];
		fields[c].nullable = true;
		fields[c].type.id = c < 2 ? ARROW_TYPE_FLOAT16 : ARROW_TYPE_INT32;
	}
	schema.n_fields = 3;
	schema.fields = fields;
	if (arrow_writer_create(path, &schema, NULL, &w, &err) != ARROW_OK)
		goto fail;
	for (int c = 0; c < 3; c++)
		if (arrow_builder_create(&fields[c], NULL, &b[c], &err) != ARROW_OK)
			goto fail;
	for (int64_t r = 0; r < F2_ROWS; r++)
	{
		uint64_t	x = rnd();
		int			kk = (int) (x % (F2_NKEYS + 1));	/* F2_NKEYS: NULL */
		int			vv = (int) ((x >> 8) % 100);

		if ((kk == F2_NKEYS ? arrow_append_null(b[0], &err) :
			 arrow_append_float(b[0], f2_keys[kk], &err)) != ARROW_OK ||
			(vv < 5 ? arrow_append_null(b[1], &err) :
			 vv < 7 ? arrow_append_float(b[1], vedges[(x >> 16) % 6], &err) :
			 vv < 12 ? arrow_append_float(b[1], 1.5, &err) :
			 arrow_append_float(b[1], (double) ((x >> 24) % 512) / 4.0 - 64.0, &err)) != ARROW_OK ||
			arrow_append_int(b[2], (int64_t) ((x >> 40) % 5), &err) != ARROW_OK)
			goto fail;
		if ((r + 1) % F2_BATCH == 0 || r + 1 == F2_ROWS)
			if (arrow_writer_write_batch(w, b, NULL, &err) != ARROW_OK)
				goto fail;
	}
	for (int c = 0; c < 3; c++)
		arrow_builder_free(b[c]);
	if (arrow_writer_close(w, &err) != ARROW_OK)
		goto fail;
	return;
fail:
	printf("Bail out! writing %s: %s\n", path, err.message);
	exit(1);
}

/*
 * the float2 program: loads k and v (FLOAT16) and g; qual (when asked)
 * v <> 1.5 in float2; outputs k::float4, v::float4, g
 */
static XpuProgram *
f2_program(int qual)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			rk = xpu_add_reg(b, XPU_T_FLOAT2, 0),
				rv = xpu_add_reg(b, XPU_T_FLOAT2, 0),
				rg = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k4 = xpu_add_reg(b, XPU_T_FLOAT4, 0),
				v4 = xpu_add_reg(b, XPU_T_FLOAT4, 0);
	char		errbuf[256];
	XpuProgram *prog;

	xpu_begin_stage(b, XPU_STAGE_LOAD);
	xpu_add_instr(b, XPU_OP_LOAD_COL, rk, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_FLOAT16, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, rv, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_FLOAT16, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, rg, 0, 0, 0, xpu_add_column(b, 2, XPU_COL_INT32, 0));
	if (qual)
	{
		int			c = xpu_add_reg(b, XPU_T_FLOAT2, 0);

		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_F2, c, 0, 0, 0, 0x3e00);	/* 1.5 */
		xpu_add_instr(b, XPU_OP_NE_F2, r0, rv, c, 0, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_F2_TO_F4, k4, rk, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_F2_TO_F4, v4, rv, 0, 0, 0);
	xpu_add_output(b, k4);
	xpu_add_output(b, v4);
	xpu_add_output(b, rg);
	prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (prog == NULL)
	{
		printf("Bail out! float2 program: %s\n", errbuf);
		exit(1);
	}
	return prog;
}

/* the groups of q over path by the CPU engine into m; 0, or -1 with a diagnostic */
static int
f2_cpu_run(const char *path, const XpuProgram *prog, const TQuery *q, TMap *m)
{
	enum {SLICE = 4096};
	uint16_t	key_outs[4];
	XpuAggSpec	spec = {q->n_keys, key_outs, q->n_aggs, q->aggs};
	XpuError	err = {0};
	XpuAggTable *t;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, 3 * SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(3 * SLICE), *mask = malloc(SLICE);
	bool		want[3] = {true, true, true};
	XpuColumnData cols[3];
	ArrowFile  *file;
	ArrowError	aerr;
	int			rc = 0;

	for (int k = 0; k < q->n_keys; k++)
		key_outs[k] = (uint16_t) q->keys[k];
	t = xpu_agg_table_create(prog, &spec, &err);	/* after the keys are set */
	if (t == NULL || arrow_file_open(path, NULL, &file, &aerr) != ARROW_OK)
	{
		printf("Bail out! float2 CPU run: %s\n", t == NULL ? err.message : aerr.message);
		exit(1);
	}
	for (int32_t bi = 0; bi < file->n_batches && rc == 0; bi++)
	{
		ArrowBatch *batch;

		if (arrow_batch_load(file, bi, want, &batch, &aerr) != ARROW_OK)
		{
			printf("Bail out! float2 CPU run: %s\n", aerr.message);
			exit(1);
		}
		for (int c = 0; c < 3; c++)
			cols[c] = (XpuColumnData) {batch->columns[c].validity, batch->columns[c].values,
									   NULL, 0};
		for (int64_t row0 = 0; row0 < batch->n_rows && rc == 0; row0 += SLICE)
		{
			int64_t		n = batch->n_rows - row0 < SLICE ? batch->n_rows - row0 : SLICE;
			XpuChunk	chunk = {n, 3, 0, cols};
			XpuResult	res = {n, mask, values, nulls};

			for (int c = 0; c < 3; c++)
				cols[c].offset = row0;
			if (xpu_cpu_exec(prog, &chunk, &res, ws, &err) != XPU_OK ||
				!xpu_agg_table_update(t, &res, &err))
			{
				tap_diag("float2 CPU run: %s", err.message);
				rc = -1;
			}
		}
		arrow_batch_free(batch);
	}
	for (int64_t g = 0; rc == 0 && g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *key;
		uint32_t	len;
		const XpuAggState *states;

		xpu_agg_table_group(t, g, &key, &len, &states);
		tmap_sink(m, key, len, states, &err);
	}
	arrow_file_close(file);
	xpu_agg_table_free(t);
	free(ws);
	free(values);
	free(nulls);
	free(mask);
	return rc;
}

/* one float2 case: q (over f2_program(qual)) on the GPU and the CPU engine */
static void
f2_case(const ServiceGpu *gpu, const char *path, const char *name, const TQuery *q, int qual,
		int64_t groups)
{
	XpuProgram *prog = f2_program(qual);
	int32_t		fields[3] = {0, 1, 2};
	uint8_t		types[24];
	TMap		cpu, got;
	TRunResult	res;

	for (int j = 0; j < q->n_aggs; j++)
		types[j] = q->aggs[j].out == 2 ? XPU_T_INT4 : XPU_T_FLOAT4;
	tmap_init(&cpu, q->n_aggs, q->aggs, types, 1024);
	tmap_init(&got, q->n_aggs, q->aggs, types, 1024);
	if (f2_cpu_run(path, prog, q, &cpu) != 0)
		tap_ok(0, "%s: the CPU engine's run failed", name);
	else
	{
		gpu_run(gpu, path, prog, fields, q, 0, &got, &res);
		if (res.rc != 0)
			tap_ok(0, "%s: GPU run failed: rc %d, %s%s", name, res.rc, res.err.message, res.msg);
		else
			tap_ok(maps_same(&got, &cpu, name) && (groups < 0 || cpu.n == groups),
				   "%s: the GPU's %ld groups equal the CPU engine's (expected %ld)", name,
				   (long) got.n, (long) groups);
	}
	tmap_free(&cpu);
	tmap_free(&got);
	free(prog);
}

/* the float2 checks (see f2_write) */
static void
run_float2_checks(const ServiceGpu *gpu, const char *dir)
{
	static const int kinds[] = {XPU_AGG_COUNT, XPU_AGG_SUM_FLOAT4, XPU_AGG_MIN, XPU_AGG_MAX,
		XPU_AGG_MOMENTS, XPU_AGG_VAR_FLOAT};
	char		path[1024];
	TQuery		q;

	snprintf(path, sizeof(path), "%s/gpu_aggcheck_float2.arrow", dir);
	f2_write(path);
	query_init(&q);
	q.n_keys = 1;
	q.keys[0] = 0;				/* k::float4 */
	agg(&q, XPU_AGG_COUNT_STAR, -1);
	for (int i = 0; i < (int) (sizeof(kinds) / sizeof(kinds[0])); i++)
		agg(&q, kinds[i], 1);	/* of v::float4 */
	f2_case(gpu, path, "float2 key, float2 aggregates", &q, 0, F2_GROUPS);
	f2_case(gpu, path, "float2 key, float2 aggregates, float2 qual", &q, 1, F2_GROUPS);
	q.n_keys = 2;
	q.keys[1] = 2;				/* g */
	f2_case(gpu, path, "float2 and int4 keys, float2 qual", &q, 1, F2_GROUPS * 5);
	query_init(&q);
	for (int i = 0; i < (int) (sizeof(kinds) / sizeof(kinds[0])); i++)
		agg(&q, kinds[i], 0);	/* of k::float4: NaN, infinities, both zeros */
	f2_case(gpu, path, "float2 aggregates of edge values, no key", &q, 0, 1);
	unlink(path);
}
