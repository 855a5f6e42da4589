/*
 * xpu_join_check.cu
 *		On a GPU host: the join table's probe (src/xpu/xpu_join.h) on the
 *		device.  Tables built on the host (xpu_join.c) are copied as they are
 *		to GPU memory and probed there by a kernel, one outer row a thread,
 *		for every join type with and without a join qual, RIGHT/FULL marking
 *		the matched bitmap with atomics; the rows (and a hash of each row's
 *		payload, read on the device) must equal the nested-loop join of
 *		test/c/join_testlib.h and the payload the host reads.  Prints TAP.
 *
 *		nvcc -std=c++17 -O2 -arch=sm_90 -I../../src/xpu -I../c \
 *			-o bin/xpu_join_check xpu_join_check.cu ../../src/xpu/xpu_join.c
 *		bin/xpu_join_check			(needs a GPU)
 */
#include <stdio.h>
#include <cuda_runtime.h>

extern "C" {
#include "tap.h"
}
#include "join_testlib.h"

#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	printf("Bail out! %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

/* a device copy of n bytes of host memory */
static void *
dcopy(const void *p, size_t n)
{
	void	   *d;

	CUDA_OK(cudaMalloc(&d, n ? n : 1));
	if (n)
		CUDA_OK(cudaMemcpy(d, p, n, cudaMemcpyHostToDevice));
	return d;
}

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

/* probes t with the outer keys (column-major, n_outer rows), one outer row a thread */
__global__ void
join_probe(const XpuJoinTable *t, const XpuValue *keys, const uint8_t *nulls, int n_outer,
		   int jointype, int quals, uint32_t *matched, OutRow *out,
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
				if (jt_qual(o, c.row) && xpu_join_accept(&c, matched))
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

/*
 * gpu_case: builds the table of inner, copies it and outer's keys (their
 * texts too) to the device, and compares every join type's rows there with
 * the nested loop
 */
static void
gpu_case(const char *name, const XpuJoinSpec *spec, const JtRows *inner, const JtRows *outer)
{
	XpuError	err;
	XpuJoinBuilder *b;
	XpuJoinTable *t = NULL;
	XpuJoinTable *dt;
	XpuValue   *hkeys;
	char	   *dtext;
	size_t		text_len = 0;
	void	   *dkeys,
			   *dnulls;
	int			nk = spec->n_keys,
				m = outer->n;

	memset(&err, 0, sizeof(err));
	b = xpu_join_builder_create(spec, &err);
	if (b != NULL && xpu_join_builder_add(b, inner->n, inner->keys, inner->key_nulls,
										  inner->pay, inner->pay_nulls, &err))
		t = xpu_join_builder_finish(b, &err);
	xpu_join_builder_free(b);
	if (!tap_ok(t != NULL, "%s: the table is built", name))
		return;
	dt = (XpuJoinTable *) dcopy(t, t->total_len);

	/* the outer texts in device memory, the keys pointing to them */
	hkeys = (XpuValue *) malloc(sizeof(XpuValue) * ((size_t) nk * m + 1));
	memcpy(hkeys, outer->keys, sizeof(XpuValue) * (size_t) nk * m);
	for (int k = 0; k < nk; k++)
		if (spec->keys[k].probe_type == XPU_T_TEXT)
			for (int o = 0; o < m; o++)
				text_len += (size_t) outer->keys[k * m + o].t.len;
	CUDA_OK(cudaMalloc((void **) &dtext, text_len + 1));
	text_len = 0;
	for (int k = 0; k < nk; k++)
		if (spec->keys[k].probe_type == XPU_T_TEXT)
			for (int o = 0; o < m; o++)
			{
				XpuValue   *v = &hkeys[k * m + o];

				if (outer->key_nulls[k * m + o])
					continue;
				if (v->t.len > 0)
					CUDA_OK(cudaMemcpy(dtext + text_len, v->t.p, (size_t) v->t.len,
									   cudaMemcpyHostToDevice));
				v->t.p = dtext + text_len;
				text_len += (size_t) v->t.len;
			}
	dkeys = dcopy(hkeys, sizeof(XpuValue) * (size_t) nk * m);
	dnulls = dcopy(outer->key_nulls, (size_t) nk * m);

	for (size_t j = 0; j < sizeof(jointypes) / sizeof(jointypes[0]); j++)
		for (int quals = 0; quals <= 1; quals++)
		{
			JtPairs		got = {0, 0, NULL},
						want = {0, 0, NULL};
			unsigned long long cap,
						n_out = 0,
					   *dn;
			uint64_t	words = xpu_join_matched_words(t->n_rows) + 1;
			uint32_t   *matched = (uint32_t *) calloc(words, 4),
					   *dmatched;
			OutRow	   *out,
					   *dout;
			int			pay_bad = 0;

			jt_nested_loop(spec, jointypes[j], quals, outer, inner, &want);
			cap = (unsigned long long) want.n + 16;
			out = (OutRow *) malloc(sizeof(OutRow) * cap);
			CUDA_OK(cudaMalloc((void **) &dout, sizeof(OutRow) * cap));
			dn = (unsigned long long *) dcopy(&n_out, sizeof(n_out));
			dmatched = (uint32_t *) dcopy(matched, 4 * words);
			if (m > 0)
				join_probe<<<(m + 255) / 256, 256>>>(dt, (const XpuValue *) dkeys,
													 (const uint8_t *) dnulls, m,
													 jointypes[j], quals, dmatched,
													 dout, dn, cap);
			CUDA_OK(cudaGetLastError());
			CUDA_OK(cudaDeviceSynchronize());
			CUDA_OK(cudaMemcpy(&n_out, dn, sizeof(n_out), cudaMemcpyDeviceToHost));
			CUDA_OK(cudaMemcpy(matched, dmatched, 4 * words, cudaMemcpyDeviceToHost));
			if (n_out <= cap)
				CUDA_OK(cudaMemcpy(out, dout, sizeof(OutRow) * n_out, cudaMemcpyDeviceToHost));
			for (unsigned long long i = 0; i < n_out && i < cap; i++)
			{
				jt_pair(&got, out[i].o, out[i].r);
				pay_bad += out[i].sum != payload_sum(t, out[i].r);
			}
			if (jointypes[j] == XPU_JOIN_RIGHT || jointypes[j] == XPU_JOIN_FULL)
				for (uint32_t r = 0; r < t->n_rows; r++)
					if (!xpu_join_marked(matched, (int32_t) r))
						jt_pair(&got, -1, (int32_t) r);
			tap_ok(n_out <= cap && jt_pairs_same(&got, &want) && pay_bad == 0,
				   "%s: %s join%s on the GPU equals the nested loop (%d rows, %llu emitted, "
				   "%d bad payloads)", name, jointype_names[jointypes[j]],
				   quals ? " with a qual" : "", want.n, n_out, pay_bad);
			free(got.p);
			free(want.p);
			free(out);
			free(matched);
			CUDA_OK(cudaFree(dout));
			CUDA_OK(cudaFree(dn));
			CUDA_OK(cudaFree(dmatched));
		}
	CUDA_OK(cudaFree(dt));
	CUDA_OK(cudaFree(dtext));
	CUDA_OK(cudaFree(dkeys));
	CUDA_OK(cudaFree(dnulls));
	free(hkeys);
	free(t);
}

/* random rows of spec from one domain per key column, then gpu_case */
static void
random_case(const char *name, const XpuJoinSpec *spec, int n_inner, int n_outer,
			const JtDomain *dom)
{
	JtRows		inner,
				outer;

	jt_rows_alloc(&inner, n_inner, spec->n_keys, spec->n_pay);
	jt_rows_alloc(&outer, n_outer, spec->n_keys, 0);
	jt_fill_keys(&inner, spec, 0, dom);
	jt_fill_keys(&outer, spec, 1, dom);
	jt_fill_pay(&inner, spec);
	gpu_case(name, spec, &inner, &outer);
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

int
main(void)
{
	XpuJoinSpec s;

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
		gpu_case("int4 unique (dense)", &s, &inner, &outer);
		s.form = XPU_JOIN_HASH;
		gpu_case("int4 unique (forced hash)", &s, &inner, &outer);
		jt_rows_free(&inner);
		jt_rows_free(&outer);
	}
	{
		JtDomain	d[1] = {{10, 700, 0}};

		s = spec1(XPU_T_INT8, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("int8 duplicates, int4 outer", &s, 3000, 20000, d);
	}
	{
		JtDomain	d[1] = {{10, 0, 0}};

		s = spec1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_AUTO);
		random_case("int8 extremes", &s, 500, 5000, d);
		s = spec1(XPU_T_TEXT, XPU_T_TEXT, 0, 0, XPU_JOIN_AUTO);
		random_case("text", &s, 1000, 5000, d);
		s = spec1(XPU_T_FLOAT4, XPU_T_FLOAT8, 0, 0, XPU_JOIN_AUTO);
		random_case("float4 inner, float8 outer (-0, NaN, inf)", &s, 1000, 5000, d);
		s = spec1(XPU_T_NUMERIC, XPU_T_NUMERIC, 1, 2, XPU_JOIN_AUTO);
		random_case("numeric scale 1 inner, 2 outer", &s, 1000, 5000, d);
		s = spec1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("empty inner", &s, 0, 1000, d);
	}
	{
		JtDomain	d[1] = {{100, 10, 0}};

		s = spec1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_AUTO);
		random_case("all keys NULL", &s, 300, 1000, d);
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
		random_case("composite of 4 (int8/int2, numeric 3/1, text, float8)", &s, 3000, 5000, d);
	}
	return tap_done();
}
