/*
 * jstage_testlib.h
 *		Programs with a JOIN stage (xpu_program.h) and their oracle, shared by
 *		test_xpu_jstage.c (both CPU forms, ASan) and test/gpu/xpu_join_check.cu
 *		(the GPU's per-row form): a case is one or two join depths of random
 *		inner rows (join_testlib.h) over random outer rows; its program,
 *		built with the xpu builder as codegen builds one, loads the outer key
 *		columns and a row id, optionally filters (id % 3 <> 0), and runs per
 *		depth, under MASK_PUSH_TRUE r0, JOIN_PROBE, r0 = probe IS NOT NULL
 *		(INNER, SEMI) or IS NULL (ANTI), and JOIN_PAY of every payload
 *		column (INNER, SEMI); a depth may be keyed by depth 0's payload.  Its
 *		outputs: the id, each depth's probe row, each payload.  The expected
 *		results come from a nested loop over the inner rows with
 *		PostgreSQL's equality (jt_equal), never from the table.
 *		C that also compiles as C++ (nvcc).
 */
#ifndef JSTAGE_TESTLIB_H
#define JSTAGE_TESTLIB_H

#include "join_testlib.h"
#include "xpu_testlib.h"

#define JS_MAX_DEPTHS	2
#define JS_PAY_SCALE	4		/* numeric payload registers (jt_fill_pay's scale) */

/* one join depth of a case */
typedef struct JsDepth
{
	XpuJoinSpec spec;
	int			jointype;		/* XPU_JOIN_INNER, _SEMI or _ANTI */
	int			key_from;		/* -1: outer key columns; c: depth 0's payload column c */
	int			n_inner;
	int			unique;			/* integer inner keys 0 .. n_inner - 1, permuted */
	JtDomain	inner_dom[XPU_JOIN_MAX_KEYS];
	JtDomain	outer_dom[XPU_JOIN_MAX_KEYS];
	int			want_form;		/* the form the table must have (0: any) */
} JsDepth;

typedef struct JsCase
{
	const char *name;
	int			n_depths;
	JsDepth		d[JS_MAX_DEPTHS];
	int			qual;			/* a QUAL stage: id % 3 <> 0 (else r0 = true in JOIN) */
	int			n_outer;
} JsCase;

/* a case built: tables, outer columns, program, expected results */
typedef struct JsData
{
	XpuJoinTable *tabs[JS_MAX_DEPTHS];
	JtRows		inner[JS_MAX_DEPTHS];
	JtRows		outer[JS_MAX_DEPTHS];	/* outer keys of a depth keyed by columns */
	TCol		cols[1 + JS_MAX_DEPTHS * XPU_JOIN_MAX_KEYS];
	int			ncols;
	XpuProgram *prog;
	int			n_outs;
	XpuType		out_type[1 + JS_MAX_DEPTHS * (1 + XPU_JOIN_MAX_PAYLOAD)];
	XpuResult	want;			/* the oracle's */
	uint64_t	in[JS_MAX_DEPTHS];	/* the oracle's rows entering each depth */
} JsData;

/* a TVal of value v of type (the outer column's) */
static inline void
js_tval(int type, const XpuValue *v, uint8_t isnull, TVal *tv)
{
	memset(tv, 0, sizeof(*tv));
	tv->null = isnull;
	if (isnull)
		return;
	switch (type)
	{
		case XPU_T_NUMERIC: tv->n = v->n; break;
		case XPU_T_TEXT: tv->s = v->t.p; tv->len = v->t.len; break;
		case XPU_T_FLOAT4: tv->f = v->f4; break;
		case XPU_T_FLOAT8: tv->f = v->f8; break;
		default: tv->i = v->i; break;
	}
}

/* the rows, tables and outer columns of case c into *js; 0 with errbuf set on failure */
static inline int
js_build_data(const JsCase *c, JsData *js, char *errbuf, size_t errlen)
{
	TVal	   *tv = (TVal *) calloc((size_t) c->n_outer + 1, sizeof(TVal));

	memset(js, 0, sizeof(*js));
	/* column 0: the row id */
	for (int o = 0; o < c->n_outer; o++)
		tv[o].i = o;
	tcol_build(&js->cols[js->ncols++], XPU_T_INT4, 0, tv, c->n_outer);
	for (int d = 0; d < c->n_depths; d++)
	{
		const JsDepth *dp = &c->d[d];

		jt_random_rows(&dp->spec, dp->n_inner, c->n_outer, dp->inner_dom, dp->outer_dom,
					   &js->inner[d], &js->outer[d]);
		if (dp->unique)
			for (int i = 0; i < dp->n_inner; i++)
				js->inner[d].keys[i].i = (int64_t) (((uint64_t) i * 7919) % (uint64_t) dp->n_inner);
		if (d == 1 && dp->key_from >= 0)
		{
			/* depth 0's payload column that keys depth 1: values in depth 1's
			 * key range and beyond, NULLs kept */
			JtRows	   *in0 = &js->inner[0];

			for (int i = 0; i < in0->n; i++)
				in0->pay[dp->key_from * in0->n + i].i =
					(int64_t) jt_below((uint32_t) (dp->n_inner + dp->n_inner / 4));
		}
	}
	for (int d = 0; d < c->n_depths; d++)
	{
		const JsDepth *dp = &c->d[d];
		const XpuJoinSpec *sp = &dp->spec;
		XpuJoinBuilder *b;
		XpuError	err;

		memset(&err, 0, sizeof(err));
		if ((b = xpu_join_builder_create(sp, &err)) == NULL ||
			!xpu_join_builder_add(b, dp->n_inner, js->inner[d].keys, js->inner[d].key_nulls,
								  js->inner[d].pay, js->inner[d].pay_nulls, &err) ||
			(js->tabs[d] = xpu_join_builder_finish(b, &err)) == NULL)
		{
			snprintf(errbuf, errlen, "depth %d's table: %s", d, err.message);
			xpu_join_builder_free(b);
			free(tv);
			return 0;
		}
		xpu_join_builder_free(b);
		if (dp->want_form != 0 && js->tabs[d]->form != dp->want_form)
		{
			snprintf(errbuf, errlen, "depth %d's table has form %d, not %d", d,
					 js->tabs[d]->form, dp->want_form);
			free(tv);
			return 0;
		}
		for (int k = 0; dp->key_from < 0 && k < sp->n_keys; k++)
		{
			for (int o = 0; o < c->n_outer; o++)
				js_tval(sp->keys[k].probe_type, &js->outer[d].keys[k * c->n_outer + o],
						js->outer[d].key_nulls[k * c->n_outer + o], &tv[o]);
			tcol_build(&js->cols[js->ncols++], (XpuType) sp->keys[k].probe_type,
					   sp->keys[k].probe_scale, tv, c->n_outer);
		}
	}
	free(tv);
	return 1;
}

/* the scale of a payload register of type */
static inline int
js_pay_scale(int type)
{
	return type == XPU_T_NUMERIC ? JS_PAY_SCALE : 0;
}

/* a QUAL stage of b: r0 = id % m <> 0 (rid: the id's int4 register) */
static inline void
js_qual_mod(XpuBuilder *b, int r0, int rid, int64_t m)
{
	int64_t		zero = 0;
	int			km = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k0 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			rem = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_CONST_INT, km, 0, 0, 0, xpu_add_const(b, &m, 8));
	xpu_add_instr(b, XPU_OP_MOD_I4, rem, rid, km, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, k0, 0, 0, 0, xpu_add_const(b, &zero, 8));
	xpu_add_instr(b, XPU_OP_NE_INT, r0, rem, k0, 0, 0);
}

/*
 * js_program: case c's program (as codegen would build it), its output
 * types into js; NULL with errbuf set if the builder refuses it
 */
static inline XpuProgram *
js_program(const JsCase *c, JsData *js, char *errbuf, size_t errlen)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			rid = xpu_add_reg(b, XPU_T_INT4, 0);
	int			keys[JS_MAX_DEPTHS][XPU_JOIN_MAX_KEYS];
	int			probe[JS_MAX_DEPTHS];
	int			pay[JS_MAX_DEPTHS][XPU_JOIN_MAX_PAYLOAD];
	int			col = 1;
	XpuProgram *p;

	xpu_add_instr(b, XPU_OP_LOAD_COL, rid, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	for (int d = 0; d < c->n_depths; d++)
	{
		const XpuJoinSpec *sp = &c->d[d].spec;

		for (int k = 0; c->d[d].key_from < 0 && k < sp->n_keys; k++, col++)
		{
			keys[d][k] = xpu_add_reg(b, (XpuType) sp->keys[k].probe_type, sp->keys[k].probe_scale);
			xpu_add_instr(b, XPU_OP_LOAD_COL, keys[d][k], 0, 0, 0,
						  xpu_add_column(b, col, tcol_kind((XpuType) sp->keys[k].probe_type),
										 sp->keys[k].probe_scale));
		}
	}
	if (c->qual)
		js_qual_mod(b, r0, rid, 3);
	xpu_begin_stage(b, XPU_STAGE_JOIN);
	if (!c->qual)
		xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
	for (int d = 0; d < c->n_depths; d++)
	{
		const JsDepth *dp = &c->d[d];
		const XpuJoinSpec *sp = &dp->spec;
		int			nk = sp->n_keys;

		if (dp->key_from >= 0)
			keys[d][0] = pay[0][dp->key_from];
		probe[d] = xpu_add_reg(b, XPU_T_INT8, 0);
		xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, probe[d], keys[d][0],
					  keys[d][nk > 1 ? 1 : 0], keys[d][nk > 2 ? 2 : 0], d | (nk << 8));
		xpu_add_instr(b, dp->jointype == XPU_JOIN_ANTI ? XPU_OP_IS_NULL : XPU_OP_IS_NOT_NULL,
					  r0, probe[d], 0, 0, 0);
		for (int k = 0; dp->jointype != XPU_JOIN_ANTI && k < sp->n_pay; k++)
		{
			pay[d][k] = xpu_add_reg(b, (XpuType) sp->pay_types[k], js_pay_scale(sp->pay_types[k]));
			xpu_add_instr(b, XPU_OP_JOIN_PAY, pay[d][k], probe[d], 0, 0, d | (k << 8));
		}
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	js->n_outs = 0;
	xpu_add_output(b, rid);
	js->out_type[js->n_outs++] = XPU_T_INT4;
	for (int d = 0; d < c->n_depths; d++)
	{
		xpu_add_output(b, probe[d]);
		js->out_type[js->n_outs++] = XPU_T_INT8;
		for (int k = 0; c->d[d].jointype != XPU_JOIN_ANTI && k < c->d[d].spec.n_pay; k++)
		{
			xpu_add_output(b, pay[d][k]);
			js->out_type[js->n_outs++] = (XpuType) c->d[d].spec.pay_types[k];
		}
	}
	p = xpu_builder_finish(b, errbuf, errlen);
	xpu_builder_free(b);
	return p;
}

/* the first inner row of depth d (-1: none) whose keys equal vals / nulls (probe types) */
static inline int32_t
js_first_match(const JsCase *c, const JsData *js, int d, const XpuValue *vals,
			   const uint8_t *nulls)
{
	const XpuJoinSpec *sp = &c->d[d].spec;
	const JtRows *in = &js->inner[d];

	for (int k = 0; k < sp->n_keys; k++)
		if (nulls[k])
			return -1;
	for (int r = 0; r < in->n; r++)
	{
		int			meet = 1;

		for (int k = 0; k < sp->n_keys && meet; k++)
		{
			const XpuJoinKeyDesc *kd = &sp->keys[k];

			meet = !in->key_nulls[k * in->n + r] &&
				jt_equal(kd->probe_type, kd->probe_scale, &vals[k], kd->type, kd->scale,
						 &in->keys[k * in->n + r]);
		}
		if (meet)
			return r;
	}
	return -1;
}

/* the oracle: js->want for every outer row (nested loops, outputs as js_program's) */
static inline void
js_expect(const JsCase *c, JsData *js)
{
	int64_t		n = c->n_outer;
	XpuResult  *w = &js->want;

	w->nrows = n;
	w->mask = (uint8_t *) calloc((size_t) n + 1, 1);
	w->values = (XpuValue *) calloc((size_t) (n * js->n_outs) + 1, sizeof(XpuValue));
	w->nulls = (uint8_t *) malloc((size_t) (n * js->n_outs) + 1);
	memset(w->nulls, 1, (size_t) (n * js->n_outs) + 1);
	for (int64_t o = 0; o < n; o++)
	{
		int			pass = !c->qual || o % 3 != 0;
		int32_t		match[JS_MAX_DEPTHS] = {-1, -1};
		int			k = 0;

		for (int d = 0; d < c->n_depths && pass; d++)
		{
			const JsDepth *dp = &c->d[d];
			XpuValue	vals[XPU_JOIN_MAX_KEYS];
			uint8_t		nulls[XPU_JOIN_MAX_KEYS];

			js->in[d]++;
			if (dp->key_from >= 0)
			{
				const JtRows *in0 = &js->inner[0];

				vals[0] = in0->pay[dp->key_from * in0->n + match[0]];
				nulls[0] = in0->pay_nulls[dp->key_from * in0->n + match[0]];
			}
			else
				jt_outer_keys(&dp->spec, &js->outer[d], (int) o, vals, nulls);
			match[d] = js_first_match(c, js, d, vals, nulls);
			pass = dp->jointype == XPU_JOIN_ANTI ? match[d] < 0 : match[d] >= 0;
		}
		w->mask[o] = (uint8_t) pass;
		if (!pass)
			continue;
		w->values[k * n + o].i = o;
		w->nulls[k++ * n + o] = 0;
		for (int d = 0; d < c->n_depths; d++)
		{
			const JtRows *in = &js->inner[d];

			w->values[k * n + o].i = match[d];
			w->nulls[k++ * n + o] = match[d] < 0;
			for (int p = 0; c->d[d].jointype != XPU_JOIN_ANTI && p < c->d[d].spec.n_pay; p++, k++)
			{
				if (in->pay_nulls[p * in->n + match[d]])
					continue;
				w->values[k * n + o] = in->pay[p * in->n + match[d]];
				w->nulls[k * n + o] = 0;
			}
		}
	}
}

/* build case c: rows, tables, program, expected results; 0 with errbuf set on failure */
static inline int
js_build(const JsCase *c, JsData *js, char *errbuf, size_t errlen)
{
	if (!js_build_data(c, js, errbuf, errlen) ||
		(js->prog = js_program(c, js, errbuf, errlen)) == NULL)
		return 0;
	js_expect(c, js);
	return 1;
}

static inline void
js_free(const JsCase *c, JsData *js)
{
	for (int d = 0; d < c->n_depths; d++)
	{
		free(js->tabs[d]);
		jt_rows_free(&js->inner[d]);
		jt_rows_free(&js->outer[d]);
	}
	for (int k = 0; k < js->ncols; k++)
		tcol_free(&js->cols[k]);
	free(js->prog);
	free(js->want.mask);
	free(js->want.values);
	free(js->want.nulls);
}

/* a chunk over js's outer columns (cd: room for js->ncols) and tables */
static inline void
js_chunk(const JsCase *c, JsData *js, XpuColumnData *cd, XpuChunk *chunk)
{
	memset(chunk, 0, sizeof(*chunk));
	memset(cd, 0, sizeof(XpuColumnData) * (size_t) js->ncols);
	for (int k = 0; k < js->ncols; k++)
	{
		cd[k].validity = js->cols[k].validity;
		cd[k].values = js->cols[k].values;
		cd[k].data = js->cols[k].data;
	}
	chunk->nrows = c->n_outer;
	chunk->ncols = js->ncols;
	chunk->cols = cd;
	chunk->joins = (const XpuJoinTable *const *) js->tabs;
	chunk->n_joins = c->n_depths;
}

/*
 * js_compare: the rows where got differs from js's expected results (mask,
 * null flags, values), the first one's row and output into *row, *out
 */
static inline int64_t
js_compare(const JsData *js, const XpuResult *got, int64_t *row, int *out)
{
	const XpuResult *w = &js->want;
	int64_t		bad = 0;

	*row = -1;
	*out = -1;
	for (int64_t o = 0; o < w->nrows; o++)
	{
		int			diff = -1;

		if (got->mask[o] != w->mask[o])
			diff = 0;
		for (int k = 0; k < js->n_outs && diff < 0 && w->mask[o]; k++)
		{
			int64_t		i = k * w->nrows + o;

			if (got->nulls[i] != w->nulls[i] ||
				(!w->nulls[i] && !tval_same(js->out_type[k], &got->values[i], &w->values[i])))
				diff = k;
		}
		if (diff < 0)
			continue;
		if (bad++ == 0)
		{
			*row = o;
			*out = diff;
		}
	}
	return bad;
}

/* how many outer rows pass (the expected mask) */
static inline int64_t
js_passing(const JsData *js)
{
	int64_t		n = 0;

	for (int64_t o = 0; o < js->want.nrows; o++)
		n += js->want.mask[o];
	return n;
}

/* ---------------------------------------------------------------- the cases */

/* a depth of one key column (inner type, outer type, scales) and payload types */
static inline JsDepth
js_depth1(int type, int probe_type, int scale, int probe_scale, int jointype, int form,
		  int n_inner, int unique, const uint8_t *pay_types, int n_pay)
{
	JsDepth		d;

	memset(&d, 0, sizeof(d));
	d.spec.n_keys = 1;
	d.spec.keys[0].type = (uint8_t) type;
	d.spec.keys[0].probe_type = (uint8_t) probe_type;
	d.spec.keys[0].scale = (int16_t) scale;
	d.spec.keys[0].probe_scale = (int16_t) probe_scale;
	d.spec.n_pay = n_pay;
	for (int k = 0; k < n_pay; k++)
		d.spec.pay_types[k] = pay_types[k];
	d.spec.form = form;
	d.jointype = jointype;
	d.key_from = -1;
	d.n_inner = n_inner;
	d.unique = unique;
	for (int k = 0; k < XPU_JOIN_MAX_KEYS; k++)
	{
		/* inner keys: 2 % NULL; outer: 10 % NULL, a quarter beyond the inner range */
		d.inner_dom[k].null_pct = 2;
		d.inner_dom[k].range = unique ? 0 : n_inner / 2;
		d.outer_dom[k].null_pct = 10;
		d.outer_dom[k].range = n_inner + n_inner / 4;
		d.outer_dom[k].base = 0;
	}
	return d;
}

/* a second key column of d */
static inline void
js_add_key(JsDepth *d, int type, int probe_type, int scale, int probe_scale)
{
	int			k = d->spec.n_keys++;

	d->spec.keys[k].type = (uint8_t) type;
	d->spec.keys[k].probe_type = (uint8_t) probe_type;
	d->spec.keys[k].scale = (int16_t) scale;
	d->spec.keys[k].probe_scale = (int16_t) probe_scale;
}

#define JS_N_CASES	15

/* case i (0 .. JS_N_CASES - 1) into *c */
static inline void
js_case(int i, JsCase *c)
{
	static const uint8_t pay_mix[] = {XPU_T_INT4, XPU_T_TEXT, XPU_T_NUMERIC, XPU_T_INT8,
	XPU_T_FLOAT8, XPU_T_DATE};
	static const uint8_t pay_chain[] = {XPU_T_INT4, XPU_T_INT8, XPU_T_TEXT};
	static const uint8_t pay_text[] = {XPU_T_TEXT, XPU_T_INT4};
	static const uint8_t pay_one[] = {XPU_T_INT8};

	memset(c, 0, sizeof(*c));
	c->n_depths = 1;
	c->n_outer = 3000;			/* tiles of 1024 and a partial one */
	switch (i)
	{
		case 0:
			c->name = "INNER int4 = int4, dense, with a qual";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								500, 1, pay_mix, 6);
			c->d[0].want_form = XPU_JOIN_DENSE;
			break;
		case 1:
			c->name = "INNER int4 = int4, hash, no qual";
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_HASH,
								500, 1, pay_mix, 6);
			c->d[0].want_form = XPU_JOIN_HASH;
			break;
		case 2:
			c->name = "SEMI int8 = int8 with duplicate inner keys, hash";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_SEMI, XPU_JOIN_AUTO,
								700, 0, pay_one, 1);
			c->d[0].want_form = XPU_JOIN_HASH;
			break;
		case 3:
			c->name = "ANTI int4 = int4, dense, with a qual";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_ANTI, XPU_JOIN_AUTO,
								500, 1, pay_one, 1);
			c->d[0].want_form = XPU_JOIN_DENSE;
			break;
		case 4:
			c->name = "ANTI int8 = int8 with duplicates, hash, no qual";
			c->d[0] = js_depth1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_ANTI, XPU_JOIN_HASH,
								700, 0, pay_one, 1);
			break;
		case 5:
			c->name = "two depths: depth 1 keyed by depth 0's int8 payload (NULLs)";
			c->qual = 1;
			c->n_depths = 2;
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								600, 1, pay_chain, 3);
			c->d[1] = js_depth1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								300, 1, pay_text, 2);
			c->d[1].key_from = 1;
			c->d[1].want_form = XPU_JOIN_DENSE;
			break;
		case 6:
			c->name = "two depths: INNER hash then ANTI keyed by depth 0's payload";
			c->n_depths = 2;
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_HASH,
								600, 1, pay_chain, 3);
			c->d[1] = js_depth1(XPU_T_INT8, XPU_T_INT8, 0, 0, XPU_JOIN_ANTI, XPU_JOIN_HASH,
								300, 0, pay_one, 1);
			c->d[1].key_from = 1;
			break;
		case 7:
			c->name = "INNER text = text (duplicates: the first match), text payload";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_TEXT, XPU_T_TEXT, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								40, 0, pay_text, 2);
			c->d[0].outer_dom[0].null_pct = 10;
			break;
		case 8:
			c->name = "SEMI text = text";
			c->d[0] = js_depth1(XPU_T_TEXT, XPU_T_TEXT, 0, 0, XPU_JOIN_SEMI, XPU_JOIN_AUTO,
								7, 0, pay_text, 2);
			break;
		case 9:
			c->name = "INNER int2 probe of an int8 inner, dense";
			c->d[0] = js_depth1(XPU_T_INT8, XPU_T_INT2, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								500, 1, pay_mix, 6);
			c->d[0].want_form = XPU_JOIN_DENSE;
			break;
		case 10:
			c->name = "INNER int4 probe of an int8 inner, hash";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_INT8, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_HASH,
								500, 1, pay_mix, 6);
			break;
		case 11:
			c->name = "INNER numeric(scale 2) inner, numeric(scale 1) probe";
			c->d[0] = js_depth1(XPU_T_NUMERIC, XPU_T_NUMERIC, 2, 1, XPU_JOIN_INNER,
								XPU_JOIN_AUTO, 60, 0, pay_mix, 6);
			break;
		case 12:
			c->name = "SEMI numeric(scale 0) inner, numeric(scale 4) probe";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_NUMERIC, XPU_T_NUMERIC, 0, 4, XPU_JOIN_SEMI,
								XPU_JOIN_AUTO, 60, 0, pay_one, 1);
			break;
		case 13:
			c->name = "INNER float8 probe of a float4 inner (-0, NaN, infinities), hash";
			c->qual = 1;
			c->d[0] = js_depth1(XPU_T_FLOAT4, XPU_T_FLOAT8, 0, 0, XPU_JOIN_INNER,
								XPU_JOIN_AUTO, 12, 0, pay_text, 2);
			c->d[0].want_form = XPU_JOIN_HASH;
			break;
		default:
			c->name = "INNER on three keys (int4, text, numeric scales 2 / 3)";
			c->d[0] = js_depth1(XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_INNER, XPU_JOIN_AUTO,
								400, 0, pay_text, 2);
			js_add_key(&c->d[0], XPU_T_TEXT, XPU_T_TEXT, 0, 0);
			js_add_key(&c->d[0], XPU_T_NUMERIC, XPU_T_NUMERIC, 2, 3);
			/* small domains so that three keys meet */
			for (int k = 0; k < 3; k++)
			{
				c->d[0].inner_dom[k].range = 3;
				c->d[0].outer_dom[k].range = 4;
			}
			c->d[0].want_form = XPU_JOIN_HASH;
			break;
	}
}

#endif							/* JSTAGE_TESTLIB_H */
