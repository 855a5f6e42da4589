/*
 * xpu_gpu_check.cu
 *		On a GPU host: runs kern_warp_exec (the per-row form on the device)
 *		over random and edge values for every value opcode of the table, and
 *		compares the row masks, results, null flags and error codes with the
 *		CPU engine's per-tile form (xpu_cpu_exec); and the float2 (binary16)
 *		conversions of xpu_half.h on the device against the host, bit for
 *		bit over every half and many floats and doubles.  Prints TAP.
 *
 *		make -C test/gpu check		(needs nvcc and a GPU)
 */
#include <stdio.h>
#include <cuda_runtime.h>

extern "C" {
#include "xpu_testlib.h"
#include "tap.h"
}
#include "kern_warp.cu"

#define NROWS	5000

struct OpDesc
{
	const char *name;
	int			kind;			/* 0 VAL, 1 NS, 2 MASK */
	int			nargs;
	int			r, a[3];
};

static const OpDesc ops[] = {
#define KIND_VAL 0
#define KIND_NS 1
#define KIND_MASK 2
#define OPDESC(NAME, KIND, NARGS, R, A1, A2, A3, FORM) \
	{#NAME, KIND_##KIND, NARGS, XPU_T_##R, {XPU_T_##A1, XPU_T_##A2, XPU_T_##A3}},
	XPU_OPCODE_TABLE(OPDESC)
};

#include "cuda_testlib.h"

/* a random value of type t: edge values often */
static void
rand_val(TVal *v, XpuType t, int use_edges)
{
	static const char *texts[] = {"", "a", "ab", "abc", "\xc3\xa9", "\xe6\x97\xa5x", "zz"};
	static const int64_t edges[] = {0, 1, -1, 2, 7, INT16_MAX, INT16_MIN, INT32_MAX,
		INT32_MIN, INT64_MAX, INT64_MIN, 46341, 3037000500LL};
	static const double fedges[] = {0.0, -0.0, 1.0, -1.5, 2.5, 1e308, 1e-310, 3e38, 1e-45,
		HUGE_VAL, -HUGE_VAL, NAN, 2147483647.5};
	static const uint16_t hedges[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0001,
		0x8001, 0x03ff, 0x0400, 0x7c00, 0xfc00, 0x7e00, 0x7800, 0x3555, 0x1400};
	int			k = rand() % 16;

	memset(v, 0, sizeof(*v));
	v->null = (k == 0);
	if (t == XPU_T_FLOAT2)
	{
		/*
		 * float2 values are their bits: edges or any pattern (NaNs too); the
		 * small ones are 2^-5 <= |x| < 2^6, so that no row raises an error
		 * and every result is compared
		 */
		if (use_edges)
			v->i = k < 8 ? hedges[rand() % 16] : rand() & 0xffff;
		else
			v->i = ((rand() & 1) << 15) | ((10 + rand() % 11) << 10) | (rand() & 0x3ff);
		return;
	}
	if (!use_edges && t != XPU_T_TEXT && t != XPU_T_BOOL && t != XPU_T_INTERVAL)
	{
		v->i = rand() % 2001 - 1000;
		v->f = v->i / 7.0;
		v->n = (__int128) v->i * 1000 + rand() % 1000;
		return;
	}
	switch (t)
	{
		case XPU_T_BOOL: v->i = rand() & 1; break;
		case XPU_T_INT2: v->i = (int16_t) (k < 8 ? edges[rand() % 7] : rand()); break;
		case XPU_T_INT4: v->i = (int32_t) (k < 8 ? edges[rand() % 10] : rand() - RAND_MAX / 2); break;
		case XPU_T_INT8: v->i = k < 8 ? edges[rand() % 13] : (int64_t) rand() * rand(); break;
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8: v->f = k < 8 ? fedges[rand() % 13] : (rand() - RAND_MAX / 2) / 7.0; break;
		case XPU_T_NUMERIC: v->n = (__int128) (rand() - RAND_MAX / 2) * (k < 4 ? (__int128) 1000000000000000000LL * 100000000000000000LL : 1); break;
		case XPU_T_DATE: v->i = k < 4 ? XPU_DATE_MIN + rand() % 3 : rand() % 2000000 - 1000000; break;
		case XPU_T_TIMESTAMP: v->i = (int64_t) (rand() - RAND_MAX / 2) * 1000003LL * (k < 4 ? 99991 : 1); break;
		case XPU_T_INTERVAL:
			v->iv.months = k < 4 ? INT32_MAX - rand() % 3 : rand() % 2001 - 1000;
			v->iv.days = rand() % 20001 - 10000;
			v->iv.us = (int64_t) (rand() - RAND_MAX / 2) * 1000;
			break;
		default: v->s = texts[rand() % 7]; v->len = (int32_t) strlen(v->s); break;
	}
}

/* resolve the pseudo types of the table to a concrete type for the test */
static XpuType
concrete(int spec, XpuType dst, XpuType a1)
{
	switch (spec)
	{
		case XPU_T_ANY: return XPU_T_INT4;
		case XPU_T_INTLIKE: return XPU_T_INT8;
		case XPU_T_DST: return dst;
		case XPU_T_ARG1: return a1;
		default: return (XpuType) spec;
	}
}

/*
 * run prog over cols on the GPU into res (host arrays of nrows), err; with
 * parted, the chunk is 5 parts (a launch over several record batches, one
 * of them empty), each an Arrow slice of the same device buffers
 */
static void
gpu_exec(const XpuProgram *prog, const TCol *cols, int ncols, int64_t n,
		 XpuResult *res, XpuError *err, const char **dprog_out, const char **ddata, int parted)
{
	static const int64_t first[5] = {0, 1, 1234, 1234, 4097};
	XpuColumnData cd[3],
				pcd[5][3];
	XpuChunkPart parts[5];
	XpuChunk	chunk;
	XpuResult	dres;
	void	   *dprog = dcopy(prog, prog->total_len);
	size_t		nout = (size_t) prog->n_outs * (size_t) n;
	XpuChunk   *dchunk;
	XpuResult  *dresp;
	XpuError   *derr;
	uint32_t	smem = prog->total_len <= 40000 ? prog->total_len : 0;
	int			k;

	memset(cd, 0, sizeof(cd));
	for (k = 0; k < ncols; k++)
	{
		size_t		dlen = cols[k].kind == XPU_COL_UTF8 ? (size_t) ((int32_t *) cols[k].values)[n] : 0;

		cd[k].validity = (const uint8_t *) dcopy(cols[k].validity, (size_t) n / 8 + 1);
		cd[k].values = dcopy(cols[k].values, ((size_t) n + 1) * 16);
		cd[k].data = (const char *) dcopy(cols[k].data, dlen);
		ddata[k] = cd[k].data;
	}
	memset(&chunk, 0, sizeof(chunk));
	chunk.nrows = n;
	chunk.ncols = ncols;
	chunk.n_parts = 0;
	chunk.cols = (const XpuColumnData *) dcopy(cd, sizeof(cd));
	chunk.parts = NULL;
	if (parted && n > first[4])
	{
		for (int p = 0; p < 5; p++)
		{
			for (k = 0; k < 3; k++)
			{
				pcd[p][k] = cd[k];
				pcd[p][k].offset = first[p];
			}
			parts[p].first_row = first[p];
			parts[p].cols = (const XpuColumnData *) dcopy(pcd[p], sizeof(pcd[p]));
		}
		chunk.n_parts = 5;
		chunk.cols = parts[0].cols;
		chunk.parts = (const XpuChunkPart *) dcopy(parts, sizeof(parts));
	}
	dchunk = (XpuChunk *) dcopy(&chunk, sizeof(chunk));
	dres.nrows = n;
	CUDA_OK(cudaMalloc(&dres.mask, n));
	CUDA_OK(cudaMalloc(&dres.values, nout * sizeof(XpuValue)));
	CUDA_OK(cudaMalloc(&dres.nulls, nout));
	dresp = (XpuResult *) dcopy(&dres, sizeof(dres));
	memset(err, 0, sizeof(*err));
	derr = (XpuError *) dcopy(err, sizeof(*err));
	kern_warp_exec<<<7, 128, smem>>>((const XpuProgram *) dprog, prog->total_len, smem,
									  dchunk, dresp, derr);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(err, derr, sizeof(*err), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(res->mask, dres.mask, n, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(res->values, dres.values, nout * sizeof(XpuValue), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(res->nulls, dres.nulls, nout, cudaMemcpyDeviceToHost));
	*dprog_out = (const char *) dprog;
	/* device memory of the check is left to process exit */
}

/* text results point into device memory: make them point to the host copies */
static void
fix_text(XpuResult *res, int64_t n, const char *dprog, const XpuProgram *prog,
		 const char **ddata, const TCol *cols, int ncols)
{
	int64_t		i;
	int			k;

	for (i = 0; i < n; i++)
	{
		const char *p = res->values[i].t.p;

		if (res->nulls[i])
			continue;
		if (p >= dprog && p < dprog + prog->total_len)
			res->values[i].t.p = (const char *) prog + (p - dprog);
		for (k = 0; k < ncols; k++)
		{
			if (cols[k].data && ddata[k] && p >= ddata[k] &&
				p <= ddata[k] + ((int32_t *) cols[k].values)[n])
				res->values[i].t.p = cols[k].data + (p - ddata[k]);
		}
	}
}

/* one opcode over NROWS random rows: GPU against the CPU's per-tile form */
static void
check_op(int op, int edges)
{
	const OpDesc *d = &ops[op];
	TOp			o;
	TVal	   *vals = (TVal *) calloc(NROWS, sizeof(TVal));
	TCol		cols[3];
	TRun		r;
	XpuProgram *prog;
	const char *dprog, *ddata[3] = {NULL, NULL, NULL};
	char		errbuf[256];
	static const char pat[] = "a";
	static const char gpat[] = "%a_%b";
	static const int64_t list[] = {-7, 0, 1, 2, 1000};
	int			k, i;

	memset(&o, 0, sizeof(o));
	o.op = (XpuOpcode) op;
	o.nargs = d->nargs;
	o.rt = concrete(d->r, XPU_T_INT4, XPU_T_INT4);
	for (k = 0; k < d->nargs; k++)
		o.at[k] = concrete(d->a[k], o.rt, o.at[0]);
	if (o.rt == XPU_T_NUMERIC || o.at[0] == XPU_T_NUMERIC)
	{
		o.as[0] = o.at[0] == XPU_T_NUMERIC ? 2 : 0;
		o.as[1] = o.at[1] == XPU_T_NUMERIC ? 1 : 0;
		o.rs = o.rt != XPU_T_NUMERIC ? 0 : op == XPU_OP_MUL_NUM ? 3 : op == XPU_OP_NUM_RESCALE ? 1 : 2;
		if (d->a[0] == XPU_T_DST)
			o.as[0] = o.rs;
	}
	if (op >= XPU_OP_LIKE_EXACT && op <= XPU_OP_LIKE_INFIX)
	{
		o.text = pat;
		o.textlen = 1;
	}
	if (op == XPU_OP_LIKE_MATCH || op == XPU_OP_ILIKE_MATCH)
	{
		/* the general matcher: '_' and an inner '%' */
		o.text = gpat;
		o.textlen = (int) strlen(gpat);
	}
	if (op == XPU_OP_IN_INT || op == XPU_OP_IN_F8)
	{
		o.list = list;
		o.nlist = 5;
		o.sorted = op == XPU_OP_IN_INT;
		o.has_null = 1;
	}
	if (op == XPU_OP_DATE_PART_TS || op == XPU_OP_DATE_TRUNC_TS || op == XPU_OP_DATE_TRUNC_TSTZ ||
		op == XPU_OP_EXTRACT_TS || op == XPU_OP_EXTRACT_DATE ||
		op == XPU_OP_DATE_PART_IV || op == XPU_OP_EXTRACT_IV)
	{
		/* a random field that the opcode takes */
		do
			o.imm = XPU_DF_YEAR + rand() % (XPU_DF_N_FIELDS - XPU_DF_YEAR);
		while (!xpu_date_field_ok(op, o.imm));
		if (op == XPU_OP_EXTRACT_TS || op == XPU_OP_EXTRACT_DATE || op == XPU_OP_EXTRACT_IV)
			o.rs = op == XPU_OP_EXTRACT_DATE ? 0 : xpu_extract_scale(o.imm);
	}
	if ((prog = top_build(&o, errbuf, sizeof(errbuf))) == NULL)
	{
		tap_ok(0, "%s builds: %s", d->name, errbuf);
		return;
	}
	for (k = 0; k < d->nargs; k++)
	{
		for (i = 0; i < NROWS; i++)
			rand_val(&vals[i], o.at[k], edges);
		tcol_build(&cols[k], o.at[k], o.as[k], vals, NROWS);
	}
	trun_exec(&r, prog, cols, d->nargs, NROWS);
	gpu_exec(prog, cols, d->nargs, NROWS, &r.res[0], &r.err[0], &dprog, ddata, edges);
	if (o.rt == XPU_T_TEXT)
		fix_text(&r.res[0], NROWS, dprog, prog, ddata, cols, d->nargs);
	tap_ok((r.err[0].code != 0) == (r.err[1].code != 0) &&
		   (r.err[0].code != 0 || trun_agree(&r, prog, o.rt)),
		   "%s (%s values%s): GPU and CPU agree (error codes %d / %d)", d->name,
		   edges ? "edge" : "small", edges ? ", 5 parts" : "", r.err[0].code, r.err[1].code);
	trun_free(&r);
	for (k = 0; k < d->nargs; k++)
		tcol_free(&cols[k]);
	free(vals);
	free(prog);
}

/* the conversions of every half and of n floats and doubles, on the device */
__global__ void
half_convert(uint32_t *to_f, uint64_t *to_d, const float *f, const double *d,
			 uint16_t *from_f, uint16_t *from_d, int n)
{
	int			i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < 65536)
	{
		float		x = xpu_half_to_float((uint16_t) i);
		double		y = xpu_half_to_double((uint16_t) i);

		memcpy(&to_f[i], &x, 4);
		memcpy(&to_d[i], &y, 8);
	}
	if (i < n)
	{
		from_f[i] = xpu_half_from_float(f[i]);
		from_d[i] = xpu_half_from_double(d[i]);
	}
}

/* xpu_half.h on the GPU gives the host's bits for every input */
static void
check_half_conversions(void)
{
	const int	n = 4 * 65536;
	float	   *f = (float *) malloc(n * sizeof(float));
	double	   *d = (double *) malloc(n * sizeof(double));
	uint32_t   *to_f = (uint32_t *) malloc(65536 * 4), *dto_f;
	uint64_t   *to_d = (uint64_t *) malloc(65536 * 8), *dto_d;
	uint16_t   *from_f = (uint16_t *) malloc(n * 2), *from_d = (uint16_t *) malloc(n * 2);
	uint16_t   *dfrom_f, *dfrom_d;
	int			i, bad_to = 0, bad_from = 0;

	/* every half, the midpoints above each one (ties), and random values */
	for (i = 0; i < n; i++)
	{
		double		h = xpu_half_to_double((uint16_t) (i & 0xffff));
		double		up = xpu_half_to_double((uint16_t) ((i & 0xffff) + 1 == 65536 ? 0 : (i & 0xffff) + 1));

		switch (i >> 16)
		{
			case 0: d[i] = h; break;
			case 1: d[i] = (h + up) / 2; break;
			case 2: d[i] = (h + up) / 2 * (1 + 1e-12); break;
			default: d[i] = ((double) rand() / RAND_MAX - 0.5) * 140000.0 /
					(double) (1 << (rand() % 30)); break;
		}
		f[i] = (float) d[i];
	}
	CUDA_OK(cudaMalloc(&dto_f, 65536 * 4));
	CUDA_OK(cudaMalloc(&dto_d, 65536 * 8));
	CUDA_OK(cudaMalloc(&dfrom_f, n * 2));
	CUDA_OK(cudaMalloc(&dfrom_d, n * 2));
	half_convert<<<(n + 255) / 256, 256>>>(dto_f, dto_d, (const float *) dcopy(f, n * 4),
										   (const double *) dcopy(d, n * 8), dfrom_f, dfrom_d, n);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(to_f, dto_f, 65536 * 4, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(to_d, dto_d, 65536 * 8, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(from_f, dfrom_f, n * 2, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(from_d, dfrom_d, n * 2, cudaMemcpyDeviceToHost));
	for (i = 0; i < 65536; i++)
	{
		float		x = xpu_half_to_float((uint16_t) i);
		double		y = xpu_half_to_double((uint16_t) i);

		bad_to += memcmp(&to_f[i], &x, 4) != 0 || memcmp(&to_d[i], &y, 8) != 0;
	}
	for (i = 0; i < n; i++)
		bad_from += from_f[i] != xpu_half_from_float(f[i]) ||
			from_d[i] != xpu_half_from_double(d[i]);
	tap_ok(bad_to == 0, "half -> float/double: GPU and host agree on all 65536 halves (%d differ)",
		   bad_to);
	tap_ok(bad_from == 0, "float/double -> half: GPU and host agree on %d values (%d differ)",
		   n, bad_from);
	free(f);
	free(d);
	free(to_f);
	free(to_d);
	free(from_f);
	free(from_d);
}

int
main(void)
{
	int			op, e;

	srand(7);
	check_half_conversions();
	for (op = 0; op < XPU_N_OPCODES; op++)
	{
		if (ops[op].kind == KIND_MASK || op == XPU_OP_LOAD_COL ||
			(op >= XPU_OP_CONST_NULL && op <= XPU_OP_CONST_IV) ||
			op == XPU_OP_IN_TEXT || op == XPU_OP_CONST_BOOL ||
			op == XPU_OP_JOIN_PROBE || op == XPU_OP_JOIN_PAY)	/* xpu_join_check.cu */
			continue;
		for (e = 0; e < 2; e++)
			check_op(op, e);
	}
	return tap_done();
}
