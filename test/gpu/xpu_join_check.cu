/*
 * xpu_join_check.cu
 *		On a GPU host: the join table's probe (src/xpu/xpu_join.h) on the
 *		device.  Tables built on the host (xpu_join.c) are copied as they are
 *		to GPU memory and probed there by a kernel, one outer row a thread,
 *		for every join type with and without a join qual, RIGHT/FULL marking
 *		the matched bitmap with atomics, over one table or over a table per
 *		partition of the inner rows (their rows together); the rows (and a
 *		hash of each row's payload, read on the device) must equal the
 *		nested-loop join of test/c/join_testlib.h and the payload the host
 *		reads.  And programs with a JOIN stage (test/c/jstage_testlib.h's
 *		cases) run by kern_warp_exec, the per-row form, over a chunk whose
 *		XpuChunk.joins are the tables copied to the device, against the
 *		nested-loop oracle, and through GpuJoin's projection run
 *		(kern_join_scan_exec's mask and probe rows against the host form's,
 *		the host's replay of them against the oracle).  And programs whose probes meet every match
 *		(test/c/jexpand_testlib.h's cases: rows expand) run by a kernel of
 *		the aggregation kernel's loop (xpu_row_each_first, then
 *		xpu_row_each_next until the row's combinations are done), counting
 *		each row's output rows, then writing them; the rows, in order,
 *		against the oracle, and the rows entering each depth (the per-row
 *		form's counts, EXPLAIN ANALYZE's rows in) against the CPU engine's;
 *		where depth 2 is a RIGHT or FULL join, the kernel's probes mark
 *		device flags (XpuChunk.matched, atomicOr), which come back to the
 *		host, whose xpu_cpu_exec_unmatched emits the inner rows none marked
 *		after them (as the service does after a GPU run).  Prints TAP.
 *
 *		make -C test/gpu joincheck		(needs a GPU; the bundle's run-tests.sh
 *										runs it too)
 */
#include <stdio.h>
#include <cuda_runtime.h>

extern "C" {
#include "tap.h"
}
#include "join_testlib.h"
#include "jstage_testlib.h"
#include "jexpand_testlib.h"
#include "kern_warp.cu"
#include "kern_join_scan.cu"

#include "cuda_testlib.h"

/* a hash of inner row row's payload as xpu_join_payload reads it (-1: all NULL) */
__host__ __device__ static uint64_t
payload_sum(const XpuJoinTable *t, int32_t row)
{
	uint64_t	h = xpu_agg_hash_start(0);

	for (int c = 0; c < t->n_pay; c++)
	{
		XpuValue	v;
		uint8_t		isnull;
		uint64_t	w[2];

		xpu_join_payload(t, row, c, &v, &isnull);
		if (isnull)
		{
			h = xpu_agg_hash_step(h, UINT64_C(0x6e756c6c));
			continue;
		}
		if (t->pay[c].type == XPU_T_TEXT)
		{
			h = xpu_agg_hash_step(h, (uint64_t) v.t.len);
			h = xpu_join_hash_bytes(h, (const uint8_t *) v.t.p, v.t.len);
			continue;
		}
		memcpy(w, &v, 16);
		h = xpu_agg_hash_step(xpu_agg_hash_step(h, w[0]), w[1]);
	}
	return xpu_agg_hash_end(h);
}

typedef struct OutRow
{
	int32_t		o;
	int32_t		r;
	uint64_t	sum;
} OutRow;

__device__ static void
emit(const XpuJoinTable *t, OutRow *out, unsigned long long *n_out,
	 unsigned long long cap, int32_t o, int32_t r)
{
	unsigned long long i = atomicAdd(n_out, 1ULL);

	if (i < cap)
	{
		out[i].o = o;
		out[i].r = r;
		out[i].sum = payload_sum(t, r);
	}
}

/*
 * probes t with the outer keys (column-major, n_outer rows), one outer row
 * a thread; the qual sees inner row ids[r] for table row r (ids NULL: r)
 */
__global__ void
join_probe(const XpuJoinTable *t, const XpuValue *keys, const uint8_t *nulls, int n_outer,
		   int jointype, int quals, const int32_t *ids, uint32_t *matched, OutRow *out,
		   unsigned long long *n_out, unsigned long long cap)
{
	for (int o = blockIdx.x * blockDim.x + threadIdx.x; o < n_outer;
		 o += gridDim.x * blockDim.x)
	{
		XpuValue	vals[XPU_JOIN_MAX_KEYS];
		uint8_t		nl[XPU_JOIN_MAX_KEYS];
		XpuJoinCursor c;
		int32_t		r;

		for (int k = 0; k < t->n_keys; k++)
		{
			vals[k] = keys[k * n_outer + o];
			nl[k] = nulls[k * n_outer + o];
		}
		xpu_join_begin(t, &c, jointype, vals, nl);
		if (quals)
		{
			for (; c.row >= 0; xpu_join_advance(t, &c))
				if (jt_qual(o, ids ? ids[c.row] : c.row) && xpu_join_accept(&c, matched))
					emit(t, out, n_out, cap, o, c.row);
			if (xpu_join_unmatched(&c))
				emit(t, out, n_out, cap, o, -1);
			continue;
		}
		while (xpu_join_emit(t, &c, matched, &r))
			emit(t, out, n_out, cap, o, jointype == XPU_JOIN_ANTI ? -1 : r);
	}
}

static const int jointypes[] = {XPU_JOIN_INNER, XPU_JOIN_LEFT, XPU_JOIN_SEMI,
XPU_JOIN_ANTI, XPU_JOIN_RIGHT, XPU_JOIN_FULL};
static const char *const jointype_names[] = {"", "inner", "left", "semi", "anti", "right", "full"};

/* the outer rows' keys in device memory, their texts too */
typedef struct DevOuter
{
	int			n;
	void	   *keys;
	void	   *nulls;
	char	   *text;
} DevOuter;

static void
dev_outer(DevOuter *d, const XpuJoinSpec *spec, const JtRows *outer)
{
	int			nk = spec->n_keys,
				m = outer->n;
	XpuValue   *hkeys = (XpuValue *) malloc(sizeof(XpuValue) * ((size_t) nk * m + 1));
	size_t		text_len = 0;

	memcpy(hkeys, outer->keys, sizeof(XpuValue) * (size_t) nk * m);
	for (int i = 0; i < nk * m; i++)
		if (spec->keys[i / m].probe_type == XPU_T_TEXT && !outer->key_nulls[i])
			text_len += (size_t) hkeys[i].t.len;
	CUDA_OK(cudaMalloc((void **) &d->text, text_len + 1));
	text_len = 0;
	for (int i = 0; i < nk * m; i++)
		if (spec->keys[i / m].probe_type == XPU_T_TEXT && !outer->key_nulls[i])
		{
			if (hkeys[i].t.len > 0)
				CUDA_OK(cudaMemcpy(d->text + text_len, hkeys[i].t.p, (size_t) hkeys[i].t.len,
								   cudaMemcpyHostToDevice));
			hkeys[i].t.p = d->text + text_len;
			text_len += (size_t) hkeys[i].t.len;
		}
	d->n = m;
	d->keys = dcopy(hkeys, sizeof(XpuValue) * (size_t) nk * m);
	d->nulls = dcopy(outer->key_nulls, (size_t) nk * m);
	free(hkeys);
}

static void
dev_outer_free(DevOuter *d)
{
	CUDA_OK(cudaFree(d->keys));
	CUDA_OK(cudaFree(d->nulls));
	CUDA_OK(cudaFree(d->text));
}

/*
 * gpu_probe: the rows of jointype over the outer rows and table t (host
 * copy t, device copy dt) as the device yields them, into got (inner rows
 * as ids[r]), RIGHT/FULL's unmarked rows added; *pay_bad counts rows whose
 * payload hash differs from the host's reading.  0 when more than cap rows
 * came.
 */
static int
gpu_probe(const XpuJoinTable *t, const XpuJoinTable *dt, const DevOuter *outer,
		  int jointype, int quals, const int32_t *ids, const int32_t *dids,
		  unsigned long long cap, JtPairs *got, int *pay_bad)
{
	unsigned long long n_out = 0,
			   *dn;
	uint64_t	words = xpu_join_matched_words(t->n_rows) + 1;
	uint32_t   *matched = (uint32_t *) calloc(words, 4),
			   *dmatched;
	OutRow	   *out = (OutRow *) malloc(sizeof(OutRow) * cap),
			   *dout;

	CUDA_OK(cudaMalloc((void **) &dout, sizeof(OutRow) * cap));
	dn = (unsigned long long *) dcopy(&n_out, sizeof(n_out));
	dmatched = (uint32_t *) dcopy(matched, 4 * words);
	if (outer->n > 0)
		join_probe<<<(outer->n + 255) / 256, 256>>>(dt, (const XpuValue *) outer->keys,
													(const uint8_t *) outer->nulls, outer->n,
													jointype, quals, dids, dmatched, dout,
													dn, cap);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(&n_out, dn, sizeof(n_out), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(matched, dmatched, 4 * words, cudaMemcpyDeviceToHost));
	if (n_out <= cap)
		CUDA_OK(cudaMemcpy(out, dout, sizeof(OutRow) * n_out, cudaMemcpyDeviceToHost));
	for (unsigned long long i = 0; i < n_out && i < cap; i++)
	{
		jt_pair(got, out[i].o, out[i].r < 0 ? -1 : ids[out[i].r]);
		*pay_bad += out[i].sum != payload_sum(t, out[i].r);
	}
	if (jointype == XPU_JOIN_RIGHT || jointype == XPU_JOIN_FULL)
		for (uint32_t r = 0; r < t->n_rows; r++)
			if (!xpu_join_marked(matched, (int32_t) r))
				jt_pair(got, -1, ids[r]);
	free(out);
	free(matched);
	CUDA_OK(cudaFree(dout));
	CUDA_OK(cudaFree(dn));
	CUDA_OK(cudaFree(dmatched));
	return n_out <= cap;
}

/* the table of inner's rows (of partition part of n_parts where n_parts > 1) */
static XpuJoinTable *
build(XpuJoinSpec *spec, const JtRows *inner, int n_parts, int part)
{
	XpuError	err;
	XpuJoinBuilder *b;
	XpuJoinTable *t = NULL;

	memset(&err, 0, sizeof(err));
	spec->n_parts = (uint32_t) n_parts;
	spec->part = (uint32_t) part;
	b = xpu_join_builder_create(spec, &err);
	if (b != NULL && xpu_join_builder_add(b, inner->n, inner->keys, inner->key_nulls,
										  inner->pay, inner->pay_nulls, &err))
		t = xpu_join_builder_finish(b, &err);
	xpu_join_builder_free(b);
	spec->n_parts = spec->part = 0;
	if (t == NULL)
		tap_diag("build: %s", err.message);
	return t;
}

/*
 * gpu_case: the table of inner in n_parts partitions (1: one table),
 * copied to the device with outer's keys; every join type's rows there
 * (over the partitions together, each table's rows mapped back to inner's
 * by payload column 0, which holds the inner row number) must be the
 * nested loop's
 */
static void
gpu_case(const char *name, XpuJoinSpec *spec, JtRows *inner, const JtRows *outer,
		 int n_parts)
{
	XpuJoinTable *tabs[8],
			   *dtabs[8];
	int32_t    *ids[8],
			   *dids[8];
	DevOuter	dout;
	int			built = 1;

	for (int i = 0; i < inner->n; i++)
		inner->pay[i].i = i;
	for (int p = 0; p < n_parts; p++)
	{
		tabs[p] = build(spec, inner, n_parts, p);
		if (tabs[p] == NULL)
		{
			built = 0;
			n_parts = p;
			break;
		}
		ids[p] = (int32_t *) malloc(sizeof(int32_t) * (tabs[p]->n_rows + 1));
		for (uint32_t r = 0; r < tabs[p]->n_rows; r++)
		{
			XpuValue	v;
			uint8_t		isnull;

			xpu_join_payload(tabs[p], (int32_t) r, 0, &v, &isnull);
			ids[p][r] = (int32_t) v.i;
		}
		dtabs[p] = (XpuJoinTable *) dcopy(tabs[p], tabs[p]->total_len);
		dids[p] = (int32_t *) dcopy(ids[p], sizeof(int32_t) * (tabs[p]->n_rows + 1));
	}
	if (tap_ok(built, "%s: %d table(s) built", name, n_parts))
	{
		dev_outer(&dout, spec, outer);
		for (size_t j = 0; j < sizeof(jointypes) / sizeof(jointypes[0]); j++)
			for (int quals = 0; quals <= 1; quals++)
			{
				JtPairs		got = {0, 0, NULL},
							want = {0, 0, NULL};
				int			pay_bad = 0,
							fits = 1;

				jt_nested_loop(spec, jointypes[j], quals, outer, inner, &want);
				for (int p = 0; p < n_parts; p++)
					fits &= gpu_probe(tabs[p], dtabs[p], &dout, jointypes[j], quals, ids[p],
									  dids[p], (unsigned long long) want.n + 16, &got,
									  &pay_bad);
				tap_ok(fits && jt_pairs_same(&got, &want) && pay_bad == 0,
					   "%s: %s join%s on the GPU equals the nested loop (%d rows, %d "
					   "emitted, %d bad payloads)", name, jointype_names[jointypes[j]],
					   quals ? " with a qual" : "", want.n, got.n, pay_bad);
				free(got.p);
				free(want.p);
			}
		dev_outer_free(&dout);
	}
	for (int p = 0; p < n_parts; p++)
	{
		CUDA_OK(cudaFree(dtabs[p]));
		CUDA_OK(cudaFree(dids[p]));
		free(tabs[p]);
		free(ids[p]);
	}
}

/* random rows of spec from one domain per key column, then gpu_case */
static void
random_case(const char *name, XpuJoinSpec *spec, int n_inner, int n_outer,
			const JtDomain *dom, int n_parts)
{
	JtRows		inner,
				outer;

	jt_random_rows(spec, n_inner, n_outer, dom, dom, &inner, &outer);
	gpu_case(name, spec, &inner, &outer, n_parts);
	jt_rows_free(&inner);
	jt_rows_free(&outer);
}

static XpuJoinSpec
spec1(int type, int probe_type, int scale, int probe_scale, int form)
{
	static const uint8_t pay[] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_NUMERIC, XPU_T_FLOAT8,
	XPU_T_BOOL, XPU_T_INTERVAL, XPU_T_FLOAT4};
	XpuJoinSpec s;

	memset(&s, 0, sizeof(s));
	s.n_keys = 1;
	s.keys[0].type = (uint8_t) type;
	s.keys[0].probe_type = (uint8_t) probe_type;
	s.keys[0].scale = (int16_t) scale;
	s.keys[0].probe_scale = (int16_t) probe_scale;
	s.n_pay = (int) sizeof(pay);
	memcpy(s.pay_types, pay, sizeof(pay));
	s.form = form;
	return s;
}

/* ---------------------------------------------------------------- the JOIN stage */

/*
 * js_device: case c's chunk (js_chunk) whose outer columns (cd), tables
 * (dtabs: room for its depths) and column array are copied to the device;
 * returns the program's device copy
 */
static void *
js_device(const JsCase *c, JsData *js, XpuColumnData *cd, XpuChunk *chunk,
		  const XpuJoinTable **dtabs)
{
	int64_t		n = c->n_outer;

	js_chunk(c, js, cd, chunk);
	for (int k = 0; k < js->ncols; k++)
	{
		size_t		dlen = js->cols[k].kind == XPU_COL_UTF8 ?
			(size_t) ((int32_t *) js->cols[k].values)[n] : 0;

		cd[k].validity = (const uint8_t *) dcopy(js->cols[k].validity, (size_t) n / 8 + 1);
		cd[k].values = dcopy(js->cols[k].values, ((size_t) n + 1) * 16);
		cd[k].data = (const char *) dcopy(js->cols[k].data, dlen);
	}
	chunk->cols = (const XpuColumnData *) dcopy(cd, sizeof(XpuColumnData) * (size_t) js->ncols);
	for (int d = 0; d < c->n_depths; d++)
		dtabs[d] = (const XpuJoinTable *) dcopy(js->tabs[d], js->tabs[d]->total_len);
	chunk->joins = (const XpuJoinTable *const *) dcopy(dtabs,
													   sizeof(dtabs[0]) * (size_t) c->n_depths);
	return dcopy(js->prog, js->prog->total_len);
}

/*
 * one jstage_testlib.h case on the GPU: the outer columns and the tables
 * copied to the device, kern_warp_exec over the chunk, the results (text
 * payloads pointing into the device tables mapped back to the host's)
 * against the oracle
 */
static void
gpu_jstage_case(int i)
{
	JsCase		c;
	JsData		js;
	XpuColumnData cd[16];
	XpuChunk	chunk;
	const XpuJoinTable *dtabs[JS_MAX_DEPTHS];
	XpuResult	dres,
				got;
	XpuError	err;
	XpuResult  *dresp;
	XpuError   *derr;
	char		errbuf[256];
	int64_t		n, row, bad;
	size_t		nout;
	uint32_t	smem;
	int			out;
	void	   *dprog;

	js_case(i, &c);
	if (!tap_ok(js_build(&c, &js, errbuf, sizeof(errbuf)), "%s: builds", c.name))
	{
		tap_diag("%s", errbuf);
		return;
	}
	n = c.n_outer;
	nout = (size_t) js.n_outs * (size_t) n;
	dprog = js_device(&c, &js, cd, &chunk, dtabs);
	dres.nrows = n;
	CUDA_OK(cudaMalloc(&dres.mask, n));
	CUDA_OK(cudaMalloc(&dres.values, nout * sizeof(XpuValue)));
	CUDA_OK(cudaMalloc(&dres.nulls, nout));
	dresp = (XpuResult *) dcopy(&dres, sizeof(dres));
	memset(&err, 0, sizeof(err));
	derr = (XpuError *) dcopy(&err, sizeof(err));
	smem = js.prog->total_len <= 40000 ? js.prog->total_len : 0;
	kern_warp_exec<<<(unsigned) ((n + 127) / 128), 128, smem>>>(
		(const XpuProgram *) dprog, js.prog->total_len, smem,
		(const XpuChunk *) dcopy(&chunk, sizeof(chunk)), dresp, derr);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	got.nrows = n;
	got.mask = (uint8_t *) malloc((size_t) n);
	got.values = (XpuValue *) malloc(nout * sizeof(XpuValue));
	got.nulls = (uint8_t *) malloc(nout);
	CUDA_OK(cudaMemcpy(got.mask, dres.mask, n, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(got.values, dres.values, nout * sizeof(XpuValue), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(got.nulls, dres.nulls, nout, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(&err, derr, sizeof(err), cudaMemcpyDeviceToHost));
	for (size_t o = 0; o < nout; o++)
	{
		const char *p = got.values[o].t.p;

		if (js.out_type[o / (size_t) n] != XPU_T_TEXT || got.nulls[o])
			continue;
		for (int d = 0; d < c.n_depths; d++)
		{
			const char *base = (const char *) dtabs[d];

			if (p >= base && p < base + js.tabs[d]->total_len)
				got.values[o].t.p = (const char *) js.tabs[d] + (p - base);
		}
	}
	bad = err.code == XPU_OK ? js_compare(&js, &got, &row, &out) : -1;
	if (!tap_ok(bad == 0, "%s: the GPU's per-row form equals the nested loop (%lld of %lld rows pass)",
				c.name, (long long) js_passing(&js), (long long) n))
		tap_diag("error %d (%s); %lld rows differ, the first %lld at output %d",
				 err.code, err.message, (long long) bad, (long long) row, out);
	free(got.mask);
	free(got.values);
	free(got.nulls);
	js_free(&c, &js);
}

/* ---------------------------------------------------------------- GpuJoin's projection run */

/*
 * one jstage_testlib.h case through GpuJoin's projection run split
 * between the GPU and the host (xpu_join_scan.h): kern_join_scan_exec on
 * the device writes the mask and the probes' inner rows, which must equal
 * the host form's (xpu_join_scan_exec, what the stand-in driver runs); the
 * host's replay of the passing rows over the host copies of the columns
 * and tables (xpu_join_scan_project, the service's workers) must give the
 * nested loop's outputs
 */
static void
gpu_join_scan_case(int i)
{
	JsCase		c;
	JsData		js;
	XpuColumnData cd[16],
				hcd[16];
	XpuChunk	chunk,
				hchunk;
	const XpuJoinTable *dtabs[JS_MAX_DEPTHS];
	XpuError	err,
				herr,
				perr;
	XpuError   *derr;
	XpuResult	got;
	char		errbuf[256];
	int64_t		n, row, bad;
	size_t		nout, nrows_len;
	uint32_t	smem;
	int			np, out, same;
	void	   *dprog;
	uint8_t    *dmask, *hmask;
	int32_t    *drows, *rows, *hrows;
	unsigned long long gcounts[XPU_JOIN_COUNT_DEPTHS],
			   *dcounts;
	uint64_t	hcounts[XPU_JOIN_COUNT_DEPTHS];

	js_case(i, &c);
	if (!tap_ok(js_build(&c, &js, errbuf, sizeof(errbuf)), "%s: builds (join scan)", c.name))
	{
		tap_diag("%s", errbuf);
		return;
	}
	n = c.n_outer;
	np = xpu_join_scan_probes(js.prog);
	nout = (size_t) js.n_outs * (size_t) n;
	nrows_len = sizeof(int32_t) * ((size_t) np * (size_t) n + 1);
	js_chunk(&c, &js, hcd, &hchunk);
	dprog = js_device(&c, &js, cd, &chunk, dtabs);
	CUDA_OK(cudaMalloc(&dmask, n ? (size_t) n : 1));
	CUDA_OK(cudaMalloc(&drows, nrows_len));
	memset(&err, 0, sizeof(err));
	derr = (XpuError *) dcopy(&err, sizeof(err));
	smem = js.prog->total_len <= 40000 ? (js.prog->total_len + 15) & ~15u : 0;
	CUDA_OK(cudaMalloc(&dcounts, sizeof(gcounts)));
	CUDA_OK(cudaMemset(dcounts, 0, sizeof(gcounts)));
	kern_join_scan_exec<<<(unsigned) ((n + 127) / 128 + (n == 0)), 128, smem>>>(
		(const XpuProgram *) dprog, js.prog->total_len, smem,
		(const XpuChunk *) dcopy(&chunk, sizeof(chunk)), dmask, drows, derr, dcounts);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	got.nrows = n;
	got.mask = (uint8_t *) malloc(n ? (size_t) n : 1);
	got.values = (XpuValue *) malloc((nout ? nout : 1) * sizeof(XpuValue));
	got.nulls = (uint8_t *) malloc(nout ? nout : 1);
	rows = (int32_t *) malloc(nrows_len);
	hmask = (uint8_t *) malloc(n ? (size_t) n : 1);
	hrows = (int32_t *) malloc(nrows_len);
	CUDA_OK(cudaMemcpy(got.mask, dmask, (size_t) n, cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(rows, drows, nrows_len - sizeof(int32_t), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(&err, derr, sizeof(err), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaMemcpy(gcounts, dcounts, sizeof(gcounts), cudaMemcpyDeviceToHost));
	CUDA_OK(cudaFree(dcounts));
	/* the device's mask, rows and rows entering each depth: the host form's */
	memset(&herr, 0, sizeof(herr));
	memset(hcounts, 0, sizeof(hcounts));
	xpu_join_scan_exec(js.prog, &hchunk, hmask, hrows, hcounts, &herr);
	same = err.code == XPU_OK && herr.code == XPU_OK &&
		memcmp(hmask, got.mask, (size_t) n) == 0 &&
		memcmp(hrows, rows, nrows_len - sizeof(int32_t)) == 0;
	for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		same = same && gcounts[d] == hcounts[d];
	if (!tap_ok(same, "%s: kern_join_scan_exec's mask, %d probes' rows and rows entering each "
				"depth equal the host form's", c.name, np))
		tap_diag("device error %d (%s), host error %d (%s)", err.code, err.message,
				 herr.code, herr.message);
	/* the host's replay of the device's rows: the nested loop's outputs */
	memset(&perr, 0, sizeof(perr));
	xpu_join_scan_project(js.prog, &hchunk, got.mask, rows, n, 0, n, got.values, got.nulls, &perr);
	bad = err.code == XPU_OK && perr.code == XPU_OK ? js_compare(&js, &got, &row, &out) : -1;
	if (!tap_ok(bad == 0, "%s: the replay of the device's probe rows equals the nested loop "
				"(%lld of %lld rows pass)", c.name, (long long) js_passing(&js), (long long) n))
		tap_diag("error %d (%s), replay error %d (%s); %lld rows differ, the first %lld at "
				 "output %d", err.code, err.message, perr.code, perr.message, (long long) bad,
				 (long long) row, out);
	CUDA_OK(cudaFree(dmask));
	CUDA_OK(cudaFree(drows));
	free(got.mask);
	free(got.values);
	free(got.nulls);
	free(rows);
	free(hmask);
	free(hrows);
	js_free(&c, &js);
}

/* ---------------------------------------------------------------- rows that expand */

/*
 * one outer row a thread: its combinations of matches as kern_agg.cu's
 * loop makes them; counts[row] their number, and where out is not NULL
 * the rows from out[offs[row]] on
 */
__global__ void
kern_jexpand(const XpuProgram *prog, const XpuChunk *chunk, const int64_t *offs,
			 int64_t *counts, JxRow *out, XpuError *err, unsigned long long *probes)
{
	uint64_t	mine[XPU_JOIN_COUNT_DEPTHS] = {0};	/* the rows entering each depth */
	int64_t		row = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
	const uint16_t *st = prog->stage_start;
	const uint8_t *outs = XPU_OUTS(prog);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS];
	XpuEach		each;
	int64_t		in_part = row,
				n = 0;
	const XpuColumnData *cols;

	if (row >= chunk->nrows)
		return;
	cols = xpu_chunk_part(chunk, &in_part);
	for (int k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_each_first_counted(prog, st[XPU_STAGE_LOAD], chunk, cols, in_part, regs, nulls,
							   &each, probes != NULL ? mine : NULL, err);
	do
	{
		if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
			continue;
		xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, each.cols, each.row,
					regs, nulls, 1, err);
		if (out != NULL)
		{
			JxRow	   *r = &out[offs[row] + n];

			for (int k = 0; k < JX_OUTS; k++)
			{
				r->n[k] = nulls[outs[k]];
				r->v[k] = r->n[k] ? 0 : regs[outs[k]].i;
			}
		}
		n++;
	} while (xpu_row_each_next(prog, chunk, &each, err));
	counts[row] = n;
	for (int d = 0; probes != NULL && d < JX_DEPTHS; d++)
		if (mine[d] != 0)
			atomicAdd(&probes[d], (unsigned long long) mine[d]);
}

/* a sink of xpu_cpu_exec_each that keeps nothing */
static int
jx_discard(void *arg, const XpuResult *res, XpuError *err)
{
	return 1;
}

/*
 * the host's counts of the rows entering each depth (xpu_cpu_exec_each_counted,
 * the CPU engine's, test_gpujoin_counters.py checking them against PostgreSQL)
 */
static void
jx_host_probes(const XpuProgram *prog, const XpuChunk *chunk, uint64_t *probes)
{
	XpuResult	res;
	XpuError	err;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	size_t		outs = prog->n_outs ? prog->n_outs : 1;

	/* a program without probes of every match runs the tile form: a row of the result a chunk row */
	res.nrows = chunk->nrows > 256 ? chunk->nrows : 256;
	res.mask = (uint8_t *) calloc((size_t) res.nrows, 1);
	res.values = (XpuValue *) calloc((size_t) res.nrows * outs, sizeof(XpuValue));
	res.nulls = (uint8_t *) calloc((size_t) res.nrows * outs, 1);
	memset(&err, 0, sizeof(err));
	memset(probes, 0, XPU_JOIN_COUNT_DEPTHS * sizeof(uint64_t));
	xpu_cpu_exec_each_counted(prog, chunk, &res, ws, &err, jx_discard, NULL, probes);
	free(res.mask);
	free(res.values);
	free(res.nulls);
	free(ws);
}

/* a sink of xpu_cpu_exec_unmatched: the rows into a JxRows */
static int
collect_rows(void *arg, const XpuResult *res, XpuError *err)
{
	for (int64_t i = 0; i < res->nrows; i++)
	{
		JxRow		row;

		if (!res->mask[i])
			continue;
		jx_row_of(res, i, JX_OUTS, &row);
		jx_rows_add((JxRows *) arg, &row);
	}
	return 1;
}

/*
 * after the GPU's rows of case c: where depth 2 marks, the device flags
 * dflags (words of them) back to the host and the inner rows none marked
 * into got by the CPU engine, over x's host tables
 */
static void
gpu_jexpand_unmatched(const JxCase *c, JxData *x, uint32_t *dflags, uint64_t words,
					  JxRows *got, XpuError *err)
{
	XpuColumnData hcd[4];
	XpuChunk	hchunk;
	uint32_t   *flags;
	XpuValue	vals[JX_OUTS * 64];
	uint8_t		nulls[JX_OUTS * 64], mask[64];
	XpuResult	res = {64, mask, vals, nulls};

	if (dflags == NULL || err->code != XPU_OK)
		return;
	flags = (uint32_t *) malloc(words * 4 + 4);
	CUDA_OK(cudaMemcpy(flags, dflags, words * 4, cudaMemcpyDeviceToHost));
	jx_chunk(c, x, hcd, &hchunk);
	xpu_cpu_exec_unmatched(x->prog, &hchunk, flags, &res, err, collect_rows, got);
	free(flags);
}

/* one jexpand_testlib.h case on the GPU: counts, then rows, against the oracle */
static void
gpu_jexpand_case(int i)
{
	JxCase		c;
	JxData		x;
	XpuColumnData cd[4];
	XpuChunk	chunk;
	const XpuJoinTable *dtabs[JX_DEPTHS];
	XpuError	err;
	XpuError   *derr;
	char		errbuf[256];
	int64_t		n, total = 0, *counts, *offs, *dcounts, *doffs;
	JxRows		got = {0};
	JxRow	   *dout;
	const XpuProgram *dprog;
	const XpuChunk *dchunk;
	unsigned	blocks;
	uint32_t   *dflags;
	uint64_t	words;
	uint64_t	host_probes[XPU_JOIN_COUNT_DEPTHS];
	unsigned long long gpu_probes[JX_DEPTHS],
			   *dprobes;
	int			probes_differ = 0;

	jx_case(i, &c);
	if (!tap_ok(jx_build(&c, &x, errbuf, sizeof(errbuf)), "%s: builds", c.name))
	{
		tap_diag("%s", errbuf);
		return;
	}
	n = c.n_outer;
	blocks = (unsigned) ((n + 127) / 128);
	jx_chunk(&c, &x, cd, &chunk);
	jx_host_probes(x.prog, &chunk, host_probes);
	for (int k = 0; k < 4; k++)
	{
		size_t		dlen = x.cols[k].kind == XPU_COL_UTF8 ?
			(size_t) ((int32_t *) x.cols[k].values)[n] : 0;

		cd[k].validity = (const uint8_t *) dcopy(x.cols[k].validity, (size_t) n / 8 + 1);
		cd[k].values = dcopy(x.cols[k].values, ((size_t) n + 1) * 16);
		cd[k].data = (const char *) dcopy(x.cols[k].data, dlen);
	}
	chunk.cols = (const XpuColumnData *) dcopy(cd, sizeof(cd));
	for (int d = 0; d < JX_DEPTHS; d++)
		dtabs[d] = (const XpuJoinTable *) dcopy(x.tabs[d], x.tabs[d]->total_len);
	chunk.joins = (const XpuJoinTable *const *) dcopy(dtabs, sizeof(dtabs));
	/* a RIGHT/FULL depth 2: the run's flags in device memory, zeroed */
	words = xpu_join_matched_words((uint32_t) x.in[2].n);
	dflags = NULL;
	if (c.outer2)
	{
		CUDA_OK(cudaMalloc(&dflags, words * 4 + 4));
		CUDA_OK(cudaMemset(dflags, 0, words * 4 + 4));
	}
	chunk.matched = dflags;
	dchunk = (const XpuChunk *) dcopy(&chunk, sizeof(chunk));
	dprog = (const XpuProgram *) dcopy(x.prog, x.prog->total_len);
	memset(&err, 0, sizeof(err));
	derr = (XpuError *) dcopy(&err, sizeof(err));
	counts = (int64_t *) malloc((size_t) n * sizeof(int64_t));
	offs = (int64_t *) malloc((size_t) n * sizeof(int64_t));
	CUDA_OK(cudaMalloc(&dcounts, (size_t) n * sizeof(int64_t)));
	CUDA_OK(cudaMalloc(&dprobes, sizeof(gpu_probes)));
	CUDA_OK(cudaMemset(dprobes, 0, sizeof(gpu_probes)));
	kern_jexpand<<<blocks, 128>>>(dprog, dchunk, NULL, dcounts, NULL, derr, dprobes);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(gpu_probes, dprobes, sizeof(gpu_probes), cudaMemcpyDeviceToHost));
	for (int d = 0; d < JX_DEPTHS; d++)
		probes_differ += gpu_probes[d] != host_probes[d];
	if (!tap_ok(probes_differ == 0, "%s: the GPU's rows entering each depth equal the CPU "
				"engine's (EXPLAIN ANALYZE's rows in)", c.name))
		for (int d = 0; d < JX_DEPTHS; d++)
			tap_diag("depth %d: GPU %llu, CPU %llu", d, gpu_probes[d],
					 (unsigned long long) host_probes[d]);
	CUDA_OK(cudaMemcpy(counts, dcounts, (size_t) n * sizeof(int64_t), cudaMemcpyDeviceToHost));
	for (int64_t o = 0; o < n; o++)
	{
		offs[o] = total;
		total += counts[o];
	}
	doffs = (int64_t *) dcopy(offs, (size_t) n * sizeof(int64_t));
	CUDA_OK(cudaMalloc(&dout, (size_t) (total + 1) * sizeof(JxRow)));
	kern_jexpand<<<blocks, 128>>>(dprog, dchunk, doffs, dcounts, dout, derr, NULL);
	CUDA_OK(cudaGetLastError());
	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(&err, derr, sizeof(err), cudaMemcpyDeviceToHost));
	got.n = got.cap = total;
	got.r = (JxRow *) malloc((size_t) (total + 1) * sizeof(JxRow));
	CUDA_OK(cudaMemcpy(got.r, dout, (size_t) total * sizeof(JxRow), cudaMemcpyDeviceToHost));
	gpu_jexpand_unmatched(&c, &x, dflags, words, &got, &err);
	{
		int64_t		d = err.code == XPU_OK ? jx_diff(&x.want, &got) : -2;

		if (!tap_ok(d == -1, "%s: the GPU's rows of every match equal the nested loops "
					"(%lld rows from %lld)", c.name, (long long) x.want.n, (long long) n))
			tap_diag("error %d (%s); %lld rows, the first difference at %lld", err.code,
					 err.message, (long long) total, (long long) d);
	}
	free(got.r);
	free(counts);
	free(offs);
	if (dflags != NULL)
		CUDA_OK(cudaFree(dflags));
	jx_free(&x);
}

int
main(void)
{
	XpuJoinSpec s;

	for (int i = 0; i < JS_N_CASES; i++)
		gpu_jstage_case(i);
	for (int i = 0; i < JS_N_CASES; i++)
		gpu_join_scan_case(i);
	for (int i = 0; i < JX_N_CASES; i++)
		gpu_jexpand_case(i);

	{
		/* unique keys 0 .. 4999: the dense form */
		JtRows		inner,
					outer;
		JtDomain	dout[1] = {{10, 5200, -100}};

		s = spec1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		jt_rows_alloc(&inner, 5000, 1, s.n_pay);
		jt_rows_alloc(&outer, 20000, 1, 0);
		for (int i = 0; i < 5000; i++)
			inner.keys[i].i = (i * 7919) % 5000;
		jt_fill_keys(&outer, &s, 1, dout);
		jt_fill_pay(&inner, &s);
		gpu_case("int4 unique (dense)", &s, &inner, &outer, 1);
		s.form = XPU_JOIN_HASH;
		gpu_case("int4 unique (forced hash)", &s, &inner, &outer, 1);
		jt_rows_free(&inner);
		jt_rows_free(&outer);
	}
	{
		JtDomain	d[1] = {{10, 700, 0}};

		s = spec1(XPU_T_INT8, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("int8 duplicates, int4 outer", &s, 3000, 20000, d, 1);
		random_case("int8 duplicates, int4 outer, 4 partitions", &s, 3000, 20000, d, 4);
	}
	{
		JtDomain	d[1] = {{10, 0, 0}};

		s = spec1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_AUTO);
		random_case("int8 extremes", &s, 500, 5000, d, 1);
		s = spec1(XPU_T_TEXT, XPU_T_TEXT, 0, 0, XPU_JOIN_AUTO);
		random_case("text", &s, 1000, 5000, d, 1);
		random_case("text in 3 partitions", &s, 1000, 5000, d, 3);
		s = spec1(XPU_T_FLOAT4, XPU_T_FLOAT8, 0, 0, XPU_JOIN_AUTO);
		random_case("float4 inner, float8 outer (-0, NaN, inf)", &s, 1000, 5000, d, 1);
		s = spec1(XPU_T_NUMERIC, XPU_T_NUMERIC, 1, 2, XPU_JOIN_AUTO);
		random_case("numeric scale 1 inner, 2 outer", &s, 1000, 5000, d, 1);
		s = spec1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("empty inner", &s, 0, 1000, d, 1);
	}
	{
		JtDomain	d[1] = {{100, 10, 0}};

		s = spec1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("all keys NULL", &s, 300, 1000, d, 1);
		random_case("all keys NULL, 2 partitions", &s, 300, 1000, d, 2);
	}
	{
		JtDomain	d[4] = {{3, 3, 0}, {3, 0, 0}, {3, 0, 0}, {3, 0, 0}};

		s = spec1(XPU_T_INT8, XPU_T_INT2, 0, 0, XPU_JOIN_AUTO);
		s.n_keys = 4;
		s.keys[1].type = s.keys[1].probe_type = XPU_T_NUMERIC;
		s.keys[1].scale = 3;
		s.keys[1].probe_scale = 1;
		s.keys[2].type = s.keys[2].probe_type = XPU_T_TEXT;
		s.keys[3].type = s.keys[3].probe_type = XPU_T_FLOAT8;
		random_case("composite of 4 (int8/int2, numeric 3/1, text, float8)", &s, 3000, 5000, d, 1);
	}
	return tap_done();
}
