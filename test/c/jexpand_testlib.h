/*
 * jexpand_testlib.h
 *		Programs whose join probes may match several inner rows (JOIN_PROBE
 *		with XPU_JOIN_PROBE_EACH, xpu_join.h) and their oracle, shared by
 *		test_xpu_jexpand.c (the CPU runs, ASan) and a GPU check: three
 *		join depths over random outer rows, as codegen builds them,
 *
 *		depth 0	INNER on an int4 outer key: hash table of duplicate keys
 *				(one key holds a third of the rows), NULL inner keys, or
 *				(dense0) a dense table of unique keys
 *		depth 1	LEFT on a text outer key: 1 to 3 copies of most keys, some
 *				keys without a row (the NULL-extended row)
 *		depth 2	INNER on two keys: depth 0's int8 payload and an int8
 *				outer key, duplicates; then a join qual on its payload
 *				(c % 3 <> 0) that writes r0 under a mask
 *
 *		optionally after a QUAL stage (id % 5 <> 0); each depth probes
 *		every match or the first (each[d]).  Or (outer2) depth 2 a RIGHT or
 *		FULL OUTER join (its probe marks, XPU_JOIN_PROBE_MARK; no join qual:
 *		codegen puts none there), whose unmatched inner rows come after
 *		every outer row's, in inner-row order, with every outer-side
 *		output NULL (xpu_cpu_exec_unmatched).  Outputs: the id, the three
 *		probe rows and a payload of each depth.  The oracle enumerates an
 *		outer row's combinations depth-first in inner-row order with
 *		nested loops over the inner rows (never the tables), which is the
 *		order the per-row runs emit them in.
 *		C that also compiles as C++ (nvcc).
 */
#ifndef JEXPAND_TESTLIB_H
#define JEXPAND_TESTLIB_H

#include "jstage_testlib.h"

#define JX_DEPTHS	3
#define JX_OUTS		7			/* id, p0, p1, p2, a, b, c */
#define JX_TEXTS	8

static const char *const jx_texts[JX_TEXTS] = {"", "a", "bb", "ccc", "\xc3\xa9", "zz", "none", "x"};

typedef struct JxCase
{
	const char *name;
	int			n_outer;
	int			qual;			/* a QUAL stage: id % 5 <> 0 */
	int			each[JX_DEPTHS];	/* probe every match (else the first) */
	int			dense0;			/* depth 0's keys unique (a dense table) */
	int			hot;			/* inner rows of depth 0's key 0 */
	int			outer2;			/* 0, or depth 2 XPU_JOIN_RIGHT / _FULL */
} JxCase;

/* inner rows of one depth: keys k * n + i, payload columns c * n + i */
typedef struct JxInner
{
	int			n;
	int			n_keys;
	int			n_pay;
	XpuValue   *keys;
	uint8_t    *key_nulls;
	XpuValue   *pay;
	uint8_t    *pay_nulls;
} JxInner;

/* one output row */
typedef struct JxRow
{
	int64_t		v[JX_OUTS];		/* text b: never (b is int4) */
	uint8_t		n[JX_OUTS];
} JxRow;

typedef struct JxRows
{
	JxRow	   *r;
	int64_t		n;
	int64_t		cap;
} JxRows;

typedef struct JxData
{
	JxInner		in[JX_DEPTHS];
	XpuJoinTable *tabs[JX_DEPTHS];
	TCol		cols[4];		/* id int4, k0 int4, k1 text, k2 int8 */
	XpuProgram *prog;
	JxRows		want;
	uint8_t    *matched2;		/* outer2: depth 2's inner rows an outer row met */
} JxData;

static inline void
jx_rows_add(JxRows *rs, const JxRow *row)
{
	if (rs->n == rs->cap)
	{
		rs->cap = rs->cap ? rs->cap * 2 : 256;
		rs->r = (JxRow *) realloc(rs->r, (size_t) rs->cap * sizeof(JxRow));
	}
	rs->r[rs->n++] = *row;
}

static inline void
jx_inner_alloc(JxInner *in, int n, int n_keys, int n_pay)
{
	in->n = n;
	in->n_keys = n_keys;
	in->n_pay = n_pay;
	in->keys = (XpuValue *) calloc((size_t) (n * n_keys) + 1, sizeof(XpuValue));
	in->key_nulls = (uint8_t *) calloc((size_t) (n * n_keys) + 1, 1);
	in->pay = (XpuValue *) calloc((size_t) (n * n_pay) + 1, sizeof(XpuValue));
	in->pay_nulls = (uint8_t *) calloc((size_t) (n * n_pay) + 1, 1);
}

static inline void
jx_inner_free(JxInner *in)
{
	free(in->keys);
	free(in->key_nulls);
	free(in->pay);
	free(in->pay_nulls);
}

/* a random value below n, NULL with pct % */
static inline int64_t
jx_pick(uint32_t n, int pct, uint8_t *isnull)
{
	*isnull = (int) jt_below(100) < pct;
	return *isnull ? 0 : (int64_t) jt_below(n);
}

/* the inner rows of case c */
static inline void
jx_inner_rows(const JxCase *c, JxData *x)
{
	JxInner    *a = &x->in[0], *b = &x->in[1], *cc = &x->in[2];
	int			n;

	/* depth 0: key 0 hot, keys 1 .. 29 0 to 6 copies, 5 NULL keys, shuffled */
	if (c->dense0)
	{
		jx_inner_alloc(a, 40, 1, 2);
		for (int i = 0; i < 40; i++)
			a->keys[i].i = (i * 7) % 40;
	}
	else
	{
		int			cnt[30];
		int			total = c->hot + 5;

		for (int k = 1; k < 30; k++)
			total += cnt[k] = (int) jt_below(7);
		jx_inner_alloc(a, total, 1, 2);
		n = 0;
		for (int i = 0; i < c->hot; i++)
			a->keys[n++].i = 0;
		for (int k = 1; k < 30; k++)
			for (int i = 0; i < cnt[k]; i++)
				a->keys[n++].i = k;
		for (int i = 0; i < 5; i++)
			a->key_nulls[n++] = 1;
		for (int i = n - 1; i > 0; i--)
		{
			int			j = (int) jt_below((uint32_t) i + 1);
			XpuValue	t = a->keys[i];
			uint8_t		tn = a->key_nulls[i];

			a->keys[i] = a->keys[j];
			a->key_nulls[i] = a->key_nulls[j];
			a->keys[j] = t;
			a->key_nulls[j] = tn;
		}
	}
	for (int i = 0; i < a->n; i++)
	{
		a->pay[i].i = jx_pick(1000, 10, &a->pay_nulls[i]);	/* a: int4 */
		a->pay[a->n + i].i = jx_pick(12, 5, &a->pay_nulls[a->n + i]);	/* link: int8 */
	}
	/* depth 1: texts 0 .. 5 with 1 to 3 copies each ("none", "x": no row), 2 NULL keys */
	jx_inner_alloc(b, 6 * 3 + 2, 1, 1);
	n = 0;
	for (int t = 0; t < 6; t++)
	{
		int			copies = 1 + (int) jt_below(3);

		for (int i = 0; i < copies; i++, n++)
		{
			b->keys[n].t.p = jx_texts[t];
			b->keys[n].t.len = (int32_t) strlen(jx_texts[t]);
		}
	}
	b->key_nulls[n++] = 1;
	b->key_nulls[n++] = 1;
	b->n = n;
	for (int i = 0; i < b->n; i++)
		b->pay[i].i = jx_pick(100, 10, &b->pay_nulls[i]);
	/* depth 2: (link 0 .. 9, 0 .. 3) with duplicates, NULLs in either key */
	jx_inner_alloc(cc, 80, 2, 1);
	for (int i = 0; i < 80; i++)
	{
		cc->keys[i].i = jx_pick(10, 3, &cc->key_nulls[i]);
		cc->keys[80 + i].i = jx_pick(4, 3, &cc->key_nulls[80 + i]);
		cc->pay[i].i = jx_pick(50, 10, &cc->pay_nulls[i]);
	}
}

/* the outer columns of case c */
static inline void
jx_outer_cols(const JxCase *c, JxData *x)
{
	TVal	   *tv = (TVal *) calloc((size_t) c->n_outer + 1, sizeof(TVal));

	for (int o = 0; o < c->n_outer; o++)
		tv[o].i = o;
	tcol_build(&x->cols[0], XPU_T_INT4, 0, tv, c->n_outer);
	for (int o = 0; o < c->n_outer; o++)
	{
		uint8_t		isnull;

		memset(&tv[o], 0, sizeof(TVal));
		tv[o].i = jx_pick(36, 8, &isnull);	/* 30 .. 35: no inner row */
		tv[o].null = isnull;
	}
	tcol_build(&x->cols[1], XPU_T_INT4, 0, tv, c->n_outer);
	for (int o = 0; o < c->n_outer; o++)
	{
		uint8_t		isnull;
		int			t = (int) jx_pick(JX_TEXTS, 10, &isnull);

		memset(&tv[o], 0, sizeof(TVal));
		tv[o].null = isnull;
		tv[o].s = jx_texts[t];
		tv[o].len = (int32_t) strlen(jx_texts[t]);
	}
	tcol_build(&x->cols[2], XPU_T_TEXT, 0, tv, c->n_outer);
	for (int o = 0; o < c->n_outer; o++)
	{
		uint8_t		isnull;

		memset(&tv[o], 0, sizeof(TVal));
		tv[o].i = jx_pick(5, 5, &isnull);
		tv[o].null = isnull;
	}
	tcol_build(&x->cols[3], XPU_T_INT8, 0, tv, c->n_outer);
	free(tv);
}

/* the tables of the inner rows; 0 with errbuf set on failure */
static inline int
jx_tables(const JxCase *c, JxData *x, char *errbuf, size_t errlen)
{
	static const uint8_t key_types[JX_DEPTHS][2] = {
		{XPU_T_INT4, 0}, {XPU_T_TEXT, 0}, {XPU_T_INT8, XPU_T_INT8}
	};
	static const uint8_t pay_types[JX_DEPTHS][2] = {
		{XPU_T_INT4, XPU_T_INT8}, {XPU_T_INT4, 0}, {XPU_T_INT4, 0}
	};

	for (int d = 0; d < JX_DEPTHS; d++)
	{
		XpuJoinSpec sp;
		XpuJoinBuilder *b;
		XpuError	err;

		memset(&sp, 0, sizeof(sp));
		memset(&err, 0, sizeof(err));
		sp.n_keys = x->in[d].n_keys;
		for (int k = 0; k < sp.n_keys; k++)
			sp.keys[k].type = sp.keys[k].probe_type = key_types[d][k];
		sp.n_pay = x->in[d].n_pay;
		for (int p = 0; p < sp.n_pay; p++)
			sp.pay_types[p] = pay_types[d][p];
		sp.form = XPU_JOIN_AUTO;
		if ((b = xpu_join_builder_create(&sp, &err)) == NULL ||
			!xpu_join_builder_add(b, x->in[d].n, x->in[d].keys, x->in[d].key_nulls,
								  x->in[d].pay, x->in[d].pay_nulls, &err) ||
			(x->tabs[d] = xpu_join_builder_finish(b, &err)) == NULL)
		{
			snprintf(errbuf, errlen, "depth %d: %s", d, err.message);
			xpu_join_builder_free(b);
			return 0;
		}
		xpu_join_builder_free(b);
	}
	if (c->dense0 && x->tabs[0]->form != XPU_JOIN_DENSE)
	{
		snprintf(errbuf, errlen, "depth 0 is not dense");
		return 0;
	}
	return 1;
}

/* case c's program, as codegen builds one; NULL with errbuf set */
static inline XpuProgram *
jx_program(const JxCase *c, char *errbuf, size_t errlen)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			rid = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k0 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k1 = xpu_add_reg(b, XPU_T_TEXT, 0);
	int			k2 = xpu_add_reg(b, XPU_T_INT8, 0);
	int			p[JX_DEPTHS], ra, rlink, rb, rc, three, zero, m;
	int64_t		v3 = 3, v0 = 0;
	XpuProgram *prog;

#define JX_EACH(d)	(c->each[d] ? XPU_JOIN_PROBE_EACH : 0)
	xpu_add_instr(b, XPU_OP_LOAD_COL, rid, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, k0, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_INT32, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, k1, 0, 0, 0,
				  xpu_add_column(b, 2, tcol_kind(XPU_T_TEXT), 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, k2, 0, 0, 0, xpu_add_column(b, 3, XPU_COL_INT64, 0));
	if (c->qual)
		js_qual_mod(b, r0, rid, 5);
	xpu_begin_stage(b, XPU_STAGE_JOIN);
	if (!c->qual)
		xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
	/* depth 0: INNER */
	p[0] = xpu_add_reg(b, XPU_T_INT8, 0);
	ra = xpu_add_reg(b, XPU_T_INT4, 0);
	rlink = xpu_add_reg(b, XPU_T_INT8, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, p[0], k0, k0, k0, 0 | (1 << 8) | JX_EACH(0));
	xpu_add_instr(b, XPU_OP_JOIN_PAY, ra, p[0], 0, 0, 0 | (0 << 8));
	xpu_add_instr(b, XPU_OP_JOIN_PAY, rlink, p[0], 0, 0, 0 | (1 << 8));
	xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p[0], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	/* depth 1: LEFT (r0 untouched) */
	p[1] = xpu_add_reg(b, XPU_T_INT8, 0);
	rb = xpu_add_reg(b, XPU_T_INT4, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, p[1], k1, k1, k1, 1 | (1 << 8) | JX_EACH(1));
	xpu_add_instr(b, XPU_OP_JOIN_PAY, rb, p[1], 0, 0, 1 | (0 << 8));
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	/* depth 2: INNER on (depth 0's link, k2), then the join qual c % 3 <> 0 */
	p[2] = xpu_add_reg(b, XPU_T_INT8, 0);
	rc = xpu_add_reg(b, XPU_T_INT4, 0);
	three = xpu_add_reg(b, XPU_T_INT4, 0);
	zero = xpu_add_reg(b, XPU_T_INT4, 0);
	m = xpu_add_reg(b, XPU_T_INT4, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	if (c->outer2)
	{
		/* RIGHT / FULL: a marking probe of every match, no join qual */
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, p[2], rlink, k2, rlink,
					  2 | (2 << 8) | XPU_JOIN_PROBE_EACH | XPU_JOIN_PROBE_MARK);
		if (c->outer2 == XPU_JOIN_RIGHT)
			xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p[2], 0, 0, 0);
		xpu_add_instr(b, XPU_OP_JOIN_PAY, rc, p[2], 0, 0, 2 | (0 << 8));
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
		goto outputs;
	}
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, p[2], rlink, k2, rlink, 2 | (2 << 8) | JX_EACH(2));
	xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p[2], 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PAY, rc, p[2], 0, 0, 2 | (0 << 8));
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, three, 0, 0, 0, xpu_add_const(b, &v3, 8));
	xpu_add_instr(b, XPU_OP_MOD_I4, m, rc, three, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, zero, 0, 0, 0, xpu_add_const(b, &v0, 8));
	xpu_add_instr(b, XPU_OP_NE_INT, r0, m, zero, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
#undef JX_EACH
outputs:
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_output(b, rid);
	for (int d = 0; d < JX_DEPTHS; d++)
		xpu_add_output(b, p[d]);
	xpu_add_output(b, ra);
	xpu_add_output(b, rb);
	xpu_add_output(b, rc);
	prog = xpu_builder_finish(b, errbuf, errlen);
	xpu_builder_free(b);
	return prog;
}

/* do the outer keys (vals, nulls) meet inner row r of in (all keys int or text) */
static inline int
jx_meets(const JxInner *in, int d, int r, const XpuValue *vals, const uint8_t *nulls)
{
	for (int k = 0; k < in->n_keys; k++)
	{
		const XpuValue *iv = &in->keys[k * in->n + r];

		if (nulls[k] || in->key_nulls[k * in->n + r])
			return 0;
		if (d == 1)
		{
			if (iv->t.len != vals[k].t.len ||
				memcmp(iv->t.p, vals[k].t.p, (size_t) iv->t.len) != 0)
				return 0;
		}
		else if (iv->i != vals[k].i)
			return 0;
	}
	return 1;
}

/* the outer row's value of column col (1, 2, 3) */
static inline void
jx_outer(const JxData *x, int col, int o, XpuValue *v, uint8_t *isnull)
{
	const TCol *tc = &x->cols[col];

	memset(v, 0, sizeof(*v));
	*isnull = tc->validity != NULL && !((tc->validity[o >> 3] >> (o & 7)) & 1);
	if (*isnull)
		return;
	if (col == 1)
		v->i = ((const int32_t *) tc->values)[o];
	else if (col == 3)
		v->i = ((const int64_t *) tc->values)[o];
	else
	{
		const int32_t *offs = (const int32_t *) tc->values;

		v->t.p = tc->data + offs[o];
		v->t.len = offs[o + 1] - offs[o];
	}
}

/* the oracle's combinations of outer row o from depth d on (m: the rows so far) */
static inline void
jx_walk(const JxCase *c, JxData *x, int o, int d, int32_t *m)
{
	const JxInner *in = &x->in[d < JX_DEPTHS ? d : 0];
	XpuValue	vals[2];
	uint8_t		nulls[2];
	int			found = 0;

	if (d == JX_DEPTHS)
	{
		const JxInner *a = &x->in[0], *b = &x->in[1], *cc = &x->in[2];
		JxRow		row;

		/* the join qual c % 3 <> 0 (NULL fails; none over an outer join) */
		if (!c->outer2 && (cc->pay_nulls[m[2]] || cc->pay[m[2]].i % 3 == 0))
			return;
		memset(&row, 0, sizeof(row));
		row.v[0] = o;
		for (int k = 0; k < JX_DEPTHS; k++)
		{
			row.v[1 + k] = m[k] < 0 ? 0 : m[k];
			row.n[1 + k] = m[k] < 0;
		}
		row.v[4] = a->pay[m[0]].i;
		row.n[4] = a->pay_nulls[m[0]];
		row.v[5] = m[1] < 0 ? 0 : b->pay[m[1]].i;
		row.n[5] = m[1] < 0 || b->pay_nulls[m[1]];
		row.v[6] = m[2] < 0 || cc->pay_nulls[m[2]] ? 0 : cc->pay[m[2]].i;
		row.n[6] = m[2] < 0 || cc->pay_nulls[m[2]];
		jx_rows_add(&x->want, &row);
		return;
	}
	if (d == 0)
		jx_outer(x, 1, o, &vals[0], &nulls[0]);
	else if (d == 1)
		jx_outer(x, 2, o, &vals[0], &nulls[0]);
	else
	{
		const JxInner *a = &x->in[0];

		vals[0] = a->pay[a->n + m[0]];
		nulls[0] = a->pay_nulls[a->n + m[0]];
		jx_outer(x, 3, o, &vals[1], &nulls[1]);
	}
	for (int r = 0; r < in->n && (c->each[d] || !found); r++)
	{
		if (!jx_meets(in, d, r, vals, nulls))
			continue;
		found = 1;
		m[d] = r;
		if (d == 2 && c->outer2)
			x->matched2[r] = 1;
		jx_walk(c, x, o, d + 1, m);
	}
	if (!found && (d == 1 || (d == 2 && c->outer2 == XPU_JOIN_FULL)))
	{
		m[d] = -1;				/* LEFT, FULL: the NULL-extended row */
		jx_walk(c, x, o, d + 1, m);
	}
}

/* outer2: depth 2's inner rows no outer row met, every outer-side output NULL */
static inline void
jx_unmatched(const JxCase *c, JxData *x)
{
	const JxInner *cc = &x->in[2];

	for (int r = 0; c->outer2 && r < cc->n; r++)
	{
		JxRow		row;

		if (x->matched2[r])
			continue;
		memset(&row, 0, sizeof(row));
		memset(row.n, 1, sizeof(row.n));
		row.v[3] = r;
		row.n[3] = 0;
		row.n[6] = cc->pay_nulls[r];
		row.v[6] = row.n[6] ? 0 : cc->pay[r].i;
		jx_rows_add(&x->want, &row);
	}
}

/* build case c: rows, tables, columns, program, expected rows; 0 with errbuf set */
static inline int
jx_build(const JxCase *c, JxData *x, char *errbuf, size_t errlen)
{
	int32_t		m[JX_DEPTHS];

	memset(x, 0, sizeof(*x));
	jx_inner_rows(c, x);
	jx_outer_cols(c, x);
	if (!jx_tables(c, x, errbuf, errlen) ||
		(x->prog = jx_program(c, errbuf, errlen)) == NULL)
		return 0;
	x->matched2 = (uint8_t *) calloc((size_t) x->in[2].n + 1, 1);
	for (int o = 0; o < c->n_outer; o++)
		if (!c->qual || o % 5 != 0)
			jx_walk(c, x, o, 0, m);
	jx_unmatched(c, x);
	return 1;
}

static inline void
jx_free(JxData *x)
{
	for (int d = 0; d < JX_DEPTHS; d++)
	{
		free(x->tabs[d]);
		jx_inner_free(&x->in[d]);
	}
	for (int k = 0; k < 4; k++)
		tcol_free(&x->cols[k]);
	free(x->prog);
	free(x->want.r);
	free(x->matched2);
}

/* a chunk over x's columns (cd: room for 4) and tables */
static inline void
jx_chunk(const JxCase *c, JxData *x, XpuColumnData *cd, XpuChunk *chunk)
{
	memset(chunk, 0, sizeof(*chunk));
	memset(cd, 0, sizeof(XpuColumnData) * 4);
	for (int k = 0; k < 4; k++)
	{
		cd[k].validity = x->cols[k].validity;
		cd[k].values = x->cols[k].values;
		cd[k].data = x->cols[k].data;
	}
	chunk->nrows = c->n_outer;
	chunk->ncols = 4;
	chunk->cols = cd;
	chunk->joins = (const XpuJoinTable *const *) x->tabs;
	chunk->n_joins = JX_DEPTHS;
}

/* output row i of res (n_outs outputs, at most JX_OUTS) as a JxRow */
static inline void
jx_row_of(const XpuResult *res, int64_t i, int n_outs, JxRow *row)
{
	memset(row, 0, sizeof(*row));
	for (int k = 0; k < n_outs && k < JX_OUTS; k++)
	{
		row->n[k] = res->nulls[k * res->nrows + i];
		row->v[k] = row->n[k] ? 0 : res->values[k * res->nrows + i].i;
	}
}

/* the first index where got differs from want (-1: equal, in order) */
static inline int64_t
jx_diff(const JxRows *want, const JxRows *got)
{
	int64_t		n = want->n < got->n ? want->n : got->n;

	for (int64_t i = 0; i < n; i++)
		if (memcmp(want->r[i].v, got->r[i].v, sizeof(want->r[i].v)) != 0 ||
			memcmp(want->r[i].n, got->r[i].n, sizeof(want->r[i].n)) != 0)
			return i;
	return want->n == got->n ? -1 : n;
}

#define JX_N_CASES	9

static inline void
jx_case(int i, JxCase *c)
{
	memset(c, 0, sizeof(*c));
	c->n_outer = 3000;
	c->hot = 60;
	c->each[0] = c->each[1] = c->each[2] = 1;
	switch (i)
	{
		case 0: c->name = "three depths of every match"; break;
		case 1: c->name = "three depths of every match, a qual"; c->qual = 1; break;
		case 2:
			c->name = "depth 1 first match only";
			c->each[1] = 0;
			break;
		case 3:
			c->name = "depth 0 dense (unique keys) of every match";
			c->dense0 = 1;
			break;
		case 4:
			c->name = "a hot key of 1000 rows, only depth 0 of every match";
			c->hot = 1000;
			c->n_outer = 500;
			c->each[1] = c->each[2] = 0;
			break;
		case 6:
			c->name = "depth 2 a RIGHT join (marks, then its unmatched rows)";
			c->outer2 = XPU_JOIN_RIGHT;
			break;
		case 7:
			c->name = "depth 2 a FULL join, a qual";
			c->outer2 = XPU_JOIN_FULL;
			c->qual = 1;
			break;
		case 8:
			c->name = "depth 2 a FULL join, depths 0 and 1 first match only";
			c->outer2 = XPU_JOIN_FULL;
			c->each[0] = c->each[1] = 0;
			break;
		default:
			c->name = "no depth of every match (first matches)";
			c->each[0] = c->each[1] = c->each[2] = 0;
			break;
	}
}

#endif							/* JEXPAND_TESTLIB_H */
