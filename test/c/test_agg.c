/*
 * test_agg.c
 *		Unit tests of the CPU engine's hash aggregation (src/xpu/xpu_agg.c,
 *		xpu_agg_ops.h): group keys of every type with PostgreSQL's equality
 *		(NULLs group together, -0 = 0, every NaN one group, text bytewise),
 *		every aggregate kind, the overflow flags, the merge of tables and
 *		the fold of single groups equal to one table over all rows, the
 *		one group of a table without keys, and growth to a million groups;
 *		the states of stddev/variance (exact sums of squares; float8_accum's
 *		Youngs-Cramer state and float8_combine) and of sum(float4).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "xpu_agg.h"
#include "xpu_agg_ops.h"
#include "xpu_hll_sketch.h"

static char errbuf[256];

/* a program whose outs are registers of types[0 .. n-1] (scale: numeric) */
static XpuProgram *
outs_program(const XpuType *types, int n, int scale)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;

	for (int i = 0; i < n; i++)
		xpu_add_output(b, xpu_add_reg(b, types[i], types[i] == XPU_T_NUMERIC ? scale : 0));
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (p == NULL)
		tap_diag("builder: %s", errbuf);
	return p;
}

/* a result of nrows rows and nouts outs, every row passing, no NULL */
static XpuResult
new_result(int64_t nrows, int nouts)
{
	XpuResult	r;

	r.nrows = nrows;
	r.mask = malloc(nrows + 1);
	memset(r.mask, 1, nrows + 1);
	r.values = calloc((size_t) nrows * nouts + 1, sizeof(XpuValue));
	r.nulls = calloc((size_t) nrows * nouts + 1, 1);
	return r;
}

static void
free_result(XpuResult *r)
{
	free(r->mask);
	free(r->values);
	free(r->nulls);
}

#define VAL(r, k, row)	((r)->values[(k) * (r)->nrows + (row)])
#define NUL(r, k, row)	((r)->nulls[(k) * (r)->nrows + (row)])

/* a table over one key out (out 0) of type, with count(*) */
static XpuAggTable *
one_key_table(XpuProgram **prog, XpuType type)
{
	static const uint16_t key_outs[1] = {0};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	XpuAggSpec	spec = {1, key_outs, 1, aggs};
	XpuError	err = {0};

	*prog = outs_program(&type, 1, 2);
	return xpu_agg_table_create(*prog, &spec, &err);
}

/* count(*) of the group that row `row` of res falls in */
static int64_t
count_of(const XpuProgram *prog, XpuAggTable *t, const XpuResult *res, int64_t row)
{
	static const uint16_t key_outs[1] = {0};
	XpuAggSpec	spec = {1, key_outs, 0, NULL};
	uint8_t		key[256];
	size_t		len = xpu_agg_key_encode(prog, &spec, res, row, key, sizeof(key));

	for (int64_t g = 0; g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *k;
		uint32_t	klen;
		const XpuAggState *s;

		xpu_agg_table_group(t, g, &k, &klen, &s);
		if (klen == len && memcmp(k, key, len) == 0)
			return s[0].count;
	}
	return -1;
}

/* ------------------------------------------------------------------ keys */

static void
test_int_keys(void)
{
	XpuProgram *prog;
	XpuAggTable *t = one_key_table(&prog, XPU_T_INT4);
	XpuResult	r = new_result(6, 1);
	XpuError	err = {0};

	VAL(&r, 0, 0).i = 1;
	VAL(&r, 0, 1).i = 1;
	VAL(&r, 0, 2).i = -1;
	NUL(&r, 0, 3) = 1;
	NUL(&r, 0, 4) = 1;
	VAL(&r, 0, 4).i = 1;		/* a NULL's value slot is ignored */
	VAL(&r, 0, 5).i = 2;
	r.mask[5] = 0;				/* did not pass */
	tap_ok(xpu_agg_table_update(t, &r, &err), "int4 keys: update");
	tap_ok(xpu_agg_table_ngroups(t) == 3, "int4 keys: 1, -1 and NULL are 3 groups (got %lld)",
		   (long long) xpu_agg_table_ngroups(t));
	tap_ok(count_of(prog, t, &r, 0) == 2 && count_of(prog, t, &r, 2) == 1 &&
		   count_of(prog, t, &r, 3) == 2, "int4 keys: NULLs form one group");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

static void
test_float_keys(XpuType type)
{
	const char *name = type == XPU_T_FLOAT4 ? "float4" : "float8";
	XpuProgram *prog;
	XpuAggTable *t = one_key_table(&prog, type);
	XpuResult	r = new_result(7, 1);
	XpuError	err = {0};
	double		d[7] = {0.0, -0.0, NAN, -NAN, 1.5, 1.5, INFINITY};
	uint64_t	payload;
	double		nan2;

	/* a NaN with another payload */
	memcpy(&payload, &d[2], 8);
	payload |= 1;
	memcpy(&nan2, &payload, 8);
	d[3] = type == XPU_T_FLOAT4 ? -NAN : nan2;
	for (int i = 0; i < 7; i++)
	{
		if (type == XPU_T_FLOAT4)
			VAL(&r, 0, i).f4 = (float) d[i];
		else
			VAL(&r, 0, i).f8 = d[i];
	}
	xpu_agg_table_update(t, &r, &err);
	tap_ok(xpu_agg_table_ngroups(t) == 4, "%s keys: 0 = -0, NaN = NaN: 4 groups (got %lld)",
		   name, (long long) xpu_agg_table_ngroups(t));
	tap_ok(count_of(prog, t, &r, 1) == 2 && count_of(prog, t, &r, 3) == 2 &&
		   count_of(prog, t, &r, 5) == 2 && count_of(prog, t, &r, 6) == 1,
		   "%s keys: the groups' counts", name);
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

static void
test_numeric_and_text_keys(void)
{
	XpuProgram *prog;
	XpuAggTable *t = one_key_table(&prog, XPU_T_NUMERIC);
	XpuResult	r = new_result(4, 1);
	XpuError	err = {0};
	char		s1[] = "ab", s2[] = "ab", s3[] = "a\0b", s4[] = "a";

	VAL(&r, 0, 0).n = (__int128) 150;
	VAL(&r, 0, 1).n = (__int128) 150;
	VAL(&r, 0, 2).n = -((__int128) 1 << 100);
	VAL(&r, 0, 3).n = (__int128) 1 << 100;
	xpu_agg_table_update(t, &r, &err);
	tap_ok(xpu_agg_table_ngroups(t) == 3 && count_of(prog, t, &r, 0) == 2,
		   "numeric keys: equal values group, 2^100 and -2^100 differ");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);

	t = one_key_table(&prog, XPU_T_TEXT);
	r = new_result(7, 1);
	VAL(&r, 0, 0).t = (XpuText) {s1, 2};
	VAL(&r, 0, 1).t = (XpuText) {s2, 2};	/* same bytes, another pointer */
	VAL(&r, 0, 2).t = (XpuText) {s3, 3};	/* an inner NUL byte */
	VAL(&r, 0, 3).t = (XpuText) {s4, 1};
	VAL(&r, 0, 4).t = (XpuText) {s4, 0};	/* '' */
	NUL(&r, 0, 5) = 1;
	VAL(&r, 0, 6).t = (XpuText) {s3, 1};	/* "a" again */
	xpu_agg_table_update(t, &r, &err);
	tap_ok(xpu_agg_table_ngroups(t) == 5, "text keys: ab, a\\0b, a, '' and NULL (got %lld)",
		   (long long) xpu_agg_table_ngroups(t));
	tap_ok(count_of(prog, t, &r, 0) == 2 && count_of(prog, t, &r, 3) == 2 &&
		   count_of(prog, t, &r, 4) == 1 && count_of(prog, t, &r, 5) == 1,
		   "text keys: bytewise equality; '' is not NULL");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* several keys of the date/time, bool and int2 types; key bytes' layout */
static void
test_multi_keys(void)
{
	static const XpuType types[5] = {XPU_T_DATE, XPU_T_TIMESTAMP, XPU_T_BOOL, XPU_T_INT2,
	XPU_T_TEXT};
	static const uint16_t key_outs[5] = {0, 1, 2, 3, 4};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	XpuAggSpec	spec = {5, key_outs, 1, aggs};
	XpuProgram *prog = outs_program(types, 5, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	r = new_result(4, 5);
	uint8_t		key[64];
	size_t		len;
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;

	for (int row = 0; row < 4; row++)
	{
		VAL(&r, 0, row).i = -730;
		VAL(&r, 1, row).i = INT64_C(1000000);
		VAL(&r, 2, row).i = row & 1;
		VAL(&r, 3, row).i = -7;
		VAL(&r, 4, row).t = (XpuText) {"xy", 2};
	}
	NUL(&r, 1, 3) = 1;
	xpu_agg_table_update(t, &r, &err);
	tap_ok(xpu_agg_table_ngroups(t) == 3, "five keys: 3 groups");
	len = xpu_agg_key_encode(prog, &spec, &r, 3, key, sizeof(key));
	tap_ok(len == 9 + 1 + 9 + 9 + 1 + 4 + 2 && key[9] == 0 && key[10] == 1 &&
		   key[19] == 1 && key[28] == 1 && key[29] == 2 && key[33] == 'x',
		   "key bytes: flag + int64 per value, 1 byte for NULL, len + bytes for text");
	tap_ok(xpu_agg_key_encode(prog, &spec, &r, 3, key, 4) == len,
		   "xpu_agg_key_encode returns the length of a key longer than cap");
	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(klen == 9 * 4 + 1 + 4 + 2 && s[0].count == 2, "group 0: its key and count");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* the sum of aggregate 0's counts over t's groups */
static int64_t
total_count(const XpuAggTable *t)
{
	int64_t		total = 0;

	for (int64_t g = 0; g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *k;
		uint32_t	kl;
		const XpuAggState *st;

		xpu_agg_table_group(t, g, &k, &kl, &st);
		total += st[0].count;
	}
	return total;
}

/* qsort of encoded keys (KeyBuf) by their bytes */
typedef struct KeyBuf
{
	uint8_t		b[128];
	size_t		len;
} KeyBuf;

static int
cmp_keybuf(const void *a, const void *b)
{
	const KeyBuf *x = a, *y = b;

	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->b, y->b, x->len);
}

/* folds every group of src into dst from its key bytes and states */
static int
fold_groups(XpuAggTable *dst, const XpuAggTable *src, XpuError *err)
{
	for (int64_t g = 0; g < xpu_agg_table_ngroups(src); g++)
	{
		const uint8_t *k;
		uint32_t	kl;
		const XpuAggState *st;

		xpu_agg_table_group(src, g, &k, &kl, &st);
		if (!xpu_agg_table_fold_group(dst, k, kl, st, err))
			return 0;
	}
	return 1;
}

/*
 * Keys of every text length class (0 to 40 bytes; texts of one length that
 * differ only in one middle byte, where the first and last 8 bytes agree),
 * NULLs, and int, float (0 and -0) and numeric keys beside them: as many
 * groups as distinct key bytes, every row counted once, over updates of
 * several slices; folding each group's key bytes back in (and merging a
 * table of the same rows in another order) finds the same groups, so
 * that key bytes and rows hash and compare alike.
 */
static void
test_key_classes(void)
{
	static const XpuType types[4] = {XPU_T_TEXT, XPU_T_INT4, XPU_T_FLOAT8, XPU_T_NUMERIC};
	static const uint16_t key_outs[4] = {0, 1, 2, 3};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	enum {ROWS = 6000, SLICE_ROWS = 700};
	XpuAggSpec	spec = {4, key_outs, 1, aggs};
	XpuProgram *prog = outs_program(types, 4, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *t2 = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	all = new_result(ROWS, 4);
	static char text[ROWS][41];
	static KeyBuf keys[ROWS];
	int64_t		distinct = 0, total, ng;
	int			ok = 1;

	for (int r = 0; r < ROWS; r++)
	{
		int			len = r % 41;

		memset(text[r], 'a', 40);
		if (len > 0)
			text[r][(r / 41) % len] = 'b';
		VAL(&all, 0, r).t = (XpuText) {text[r], len};
		NUL(&all, 0, r) = r % 97 == 0;
		VAL(&all, 1, r).i = r % 3;
		NUL(&all, 1, r) = r % 89 == 0;
		VAL(&all, 2, r).f8 = r % 2 ? -0.0 : 0.0;
		VAL(&all, 3, r).n = (__int128) (r % 2) << 70;
		keys[r].len = xpu_agg_key_encode(prog, &spec, &all, r, keys[r].b, sizeof(keys[r].b));
	}
	qsort(keys, ROWS, sizeof(KeyBuf), cmp_keybuf);
	for (int r = 0; r < ROWS; r++)
		distinct += r == 0 || cmp_keybuf(&keys[r], &keys[r - 1]) != 0;
	/* the rows in slices (several blocks each), and in reverse into t2 */
	for (int r0 = 0; r0 < ROWS; r0 += SLICE_ROWS)
	{
		int			n = ROWS - r0 < SLICE_ROWS ? ROWS - r0 : SLICE_ROWS;
		XpuResult	part = new_result(n, 4), rev = new_result(n, 4);

		for (int k = 0; k < 4; k++)
			for (int i = 0; i < n; i++)
			{
				VAL(&part, k, i) = VAL(&all, k, r0 + i);
				NUL(&part, k, i) = NUL(&all, k, r0 + i);
				VAL(&rev, k, i) = VAL(&all, k, ROWS - 1 - (r0 + i));
				NUL(&rev, k, i) = NUL(&all, k, ROWS - 1 - (r0 + i));
			}
		ok &= xpu_agg_table_update(t, &part, &err) && xpu_agg_table_update(t2, &rev, &err);
		free_result(&part);
		free_result(&rev);
	}
	ng = xpu_agg_table_ngroups(t);
	total = total_count(t);
	tap_ok(ok && ng == distinct && total == ROWS,
		   "key classes: %lld groups for %lld distinct keys, %lld rows counted",
		   (long long) ng, (long long) distinct, (long long) total);
	for (int64_t g = 0; g < ng && ok; g++)
	{
		const uint8_t *k;
		uint32_t	kl;
		const XpuAggState *st;
		XpuAggState copy;

		xpu_agg_table_group(t, g, &k, &kl, &st);
		copy = st[0];
		ok &= xpu_agg_table_fold_group(t, k, kl, &copy, &err);
	}
	total = total_count(t);
	tap_ok(ok && xpu_agg_table_ngroups(t) == ng && total == 2 * ROWS,
		   "key classes: each group's key bytes folded in find its group (%lld groups)",
		   (long long) xpu_agg_table_ngroups(t));
	ok &= xpu_agg_table_merge(t, t2, &err);
	tap_ok(ok && xpu_agg_table_ngroups(t) == ng && xpu_agg_table_ngroups(t2) == ng,
		   "key classes: a table of the rows in reverse merges into the same groups");
	/* a table of groups folded in from key bytes only, then the rows */
	xpu_agg_table_free(t2);
	t2 = xpu_agg_table_create(prog, &spec, &err);
	ok &= fold_groups(t2, t, &err);
	ok &= xpu_agg_table_update(t2, &all, &err);
	tap_ok(ok && xpu_agg_table_ngroups(t2) == ng,
		   "key classes: rows meet the groups that key bytes made");
	xpu_agg_table_free(t);
	xpu_agg_table_free(t2);
	free(prog);
	free_result(&all);
}

/*
 * Text keys packed one after the other in one buffer of exactly their
 * bytes, as an Arrow column holds them (the table then prints a text from
 * the 16 bytes at its start where the texts after it reach that far; the
 * sanitizers catch a load past the buffer): lengths 0 to 20 in an order
 * that runs the texts near the buffer's end short, NULLs and rows that do
 * not pass in between, two text keys; as many groups as distinct keys of
 * the passing rows, each passing row counted once; the groups' key bytes
 * folded into a fresh table and merged with it, and a table of the rows in
 * reverse merged with it, find the same groups.
 */
static void
test_packed_text_keys(void)
{
	static const XpuType types[2] = {XPU_T_TEXT, XPU_T_TEXT};
	static const uint16_t key_outs[2] = {0, 1};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	enum {ROWS = 3000};
	XpuAggSpec	spec = {2, key_outs, 1, aggs};
	XpuProgram *prog = outs_program(types, 2, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *t2 = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *t3 = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	all = new_result(ROWS, 2), rev = new_result(ROWS, 2);
	static KeyBuf keys[ROWS];
	char	   *buf[2];
	size_t		size[2] = {0, 0};
	int64_t		distinct = 0, passing = 0, ng;
	int			ok = 1, nk = 0;

	for (int k = 0; k < 2; k++)
	{
		for (int r = 0; r < ROWS; r++)
			size[k] += (ROWS - 1 - r + 7 * k) % 21;
		buf[k] = malloc(size[k] ? size[k] : 1);
	}
	for (int k = 0, off = 0; k < 2; k++, off = 0)
		for (int r = 0; r < ROWS; r++)
		{
			/* lengths fall to 0 at the buffer's end for key 0 */
			int			len = (ROWS - 1 - r + 7 * k) % 21;

			for (int i = 0; i < len; i++)
				buf[k][off + i] = (char) ('a' + (r * 7 + i * (k + 1) + r / 50) % 3);
			VAL(&all, k, r).t = (XpuText) {buf[k] + off, len};
			NUL(&all, k, r) = (r + k) % 61 == 0;
			off += len;
		}
	for (int r = 0; r < ROWS; r++)
		all.mask[r] = r % 13 != 5;
	for (int r = 0; r < ROWS; r++)
	{
		for (int k = 0; k < 2; k++)
		{
			VAL(&rev, k, r) = VAL(&all, k, ROWS - 1 - r);
			NUL(&rev, k, r) = NUL(&all, k, ROWS - 1 - r);
		}
		rev.mask[r] = all.mask[ROWS - 1 - r];
		if (all.mask[r])
		{
			keys[nk].len = xpu_agg_key_encode(prog, &spec, &all, r, keys[nk].b,
											  sizeof(keys[nk].b));
			nk++;
		}
	}
	passing = nk;
	qsort(keys, nk, sizeof(KeyBuf), cmp_keybuf);
	for (int r = 0; r < nk; r++)
		distinct += r == 0 || cmp_keybuf(&keys[r], &keys[r - 1]) != 0;
	ok &= xpu_agg_table_update(t, &all, &err) && xpu_agg_table_update(t2, &rev, &err);
	ng = xpu_agg_table_ngroups(t);
	tap_ok(ok && ng == distinct && total_count(t) == passing,
		   "packed text keys: %lld groups for %lld distinct keys, %lld of %lld rows counted",
		   (long long) ng, (long long) distinct, (long long) total_count(t), (long long) passing);
	ok &= fold_groups(t3, t, &err);
	ok &= xpu_agg_table_merge(t3, t, &err) && xpu_agg_table_merge(t3, t2, &err);
	tap_ok(ok && xpu_agg_table_ngroups(t3) == ng && total_count(t3) == 3 * passing,
		   "packed text keys: folded key bytes and merged tables meet the rows' groups "
		   "(%lld groups, %lld rows)", (long long) xpu_agg_table_ngroups(t3),
		   (long long) total_count(t3));
	xpu_agg_table_free(t);
	xpu_agg_table_free(t2);
	xpu_agg_table_free(t3);
	free(buf[0]);
	free(buf[1]);
	free(prog);
	free_result(&all);
	free_result(&rev);
}

/* a spec the table must refuse */
static int
refuses(XpuType type, XpuAggKind kind, int n_keys)
{
	static const uint16_t key_outs[1] = {0};
	XpuAggDesc	aggs[1] = {{(uint8_t) kind, 0, 0, 0}};
	XpuAggSpec	spec = {n_keys, key_outs, 1, aggs};
	XpuProgram *prog = outs_program(&type, 1, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	int			ok = t == NULL && err.code == XPU_ERR_INVALID_ARGUMENT;

	xpu_agg_table_free(t);
	free(prog);
	return ok;
}

static void
test_refused_specs(void)
{
	tap_ok(refuses(XPU_T_INTERVAL, XPU_AGG_COUNT_STAR, 1), "interval key refused");
	tap_ok(refuses(XPU_T_TEXT, XPU_AGG_MIN, 0), "min(text) refused");
	tap_ok(refuses(XPU_T_FLOAT8, XPU_AGG_SUM_INT, 0), "SUM_INT of float refused");
	tap_ok(refuses(XPU_T_INT8, XPU_AGG_SUM_NUMERIC, 0), "SUM_NUMERIC of int8 refused");
	tap_ok(refuses(XPU_T_INT8, XPU_AGG_MOMENTS, 0), "MOMENTS of int8 refused");
	tap_ok(refuses(XPU_T_INT8, (XpuAggKind) 0, 0) && refuses(XPU_T_INT8, XPU_AGG_N_KINDS, 0),
		   "unknown aggregate kinds refused");
}

/* ------------------------------------------------------------- aggregates */

/* the no-key table over outs of types; n rows from fill; states out */
typedef void (*FillFn) (XpuResult *r);

static XpuAggTable *
run_aggs(const XpuType *types, int nouts, const XpuAggDesc *aggs, int naggs,
		 int64_t nrows, FillFn fill, XpuProgram **prog, XpuResult *r)
{
	XpuAggSpec	spec = {0, NULL, naggs, aggs};
	XpuError	err = {0};
	XpuAggTable *t;

	*prog = outs_program(types, nouts, 3);
	t = xpu_agg_table_create(*prog, &spec, &err);
	*r = new_result(nrows, nouts);
	fill(r);
	if (!xpu_agg_table_update(t, r, &err))
		tap_diag("update: %s", err.message);
	return t;
}

static const XpuType kinds_types[5] = {XPU_T_INT8, XPU_T_FLOAT8, XPU_T_NUMERIC, XPU_T_INT2,
XPU_T_FLOAT4};

/* rows: int8 {5, NULL, INT64_MAX, INT64_MAX, -3}, float8 {1.5, NaN, -0, 0, NULL}, ... */
static void
fill_kinds(XpuResult *r)
{
	int64_t		iv[5] = {5, 0, INT64_MAX, INT64_MAX, -3};
	double		fv[5] = {1.5, NAN, -0.0, 0.0, 0};
	__int128	nv[5] = {1234, -5, 0, 99999, 7};

	for (int i = 0; i < 5; i++)
	{
		VAL(r, 0, i).i = iv[i];
		VAL(r, 1, i).f8 = fv[i];
		VAL(r, 2, i).n = nv[i];
		VAL(r, 3, i).i = i - 2;
		VAL(r, 4, i).f4 = (float) (i * 0.5);
	}
	NUL(r, 0, 1) = 1;
	NUL(r, 1, 4) = 1;
	NUL(r, 2, 2) = 1;
	r->mask[4] = 0;				/* row 4 does not pass: ignored entirely */
}

static void
test_agg_kinds(void)
{
	static const XpuAggDesc aggs[] = {
		{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_COUNT, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 0, 0},
		{XPU_AGG_SUM_FLOAT, 0, 1, 0}, {XPU_AGG_SUM_NUMERIC, 0, 2, 0}, {XPU_AGG_MOMENTS, 0, 4, 0},
		{XPU_AGG_MIN, 0, 0, 0}, {XPU_AGG_MAX, 0, 0, 0}, {XPU_AGG_MIN, 0, 1, 0},
		{XPU_AGG_MAX, 0, 1, 0}, {XPU_AGG_MIN, 0, 2, 0}, {XPU_AGG_MAX, 0, 2, 0},
		{XPU_AGG_SUM_INT, 0, 3, 0}, {XPU_AGG_MIN, 0, 4, 0}, {XPU_AGG_COUNT, 0, 1, 0},
	};
	XpuProgram *prog;
	XpuResult	r;
	XpuAggTable *t = run_aggs(kinds_types, 5, aggs, 15, 5, fill_kinds, &prog, &r);
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;

	tap_ok(xpu_agg_table_ngroups(t) == 1, "no keys: one group");
	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(klen == 0, "no keys: the empty key");
	tap_ok(s[0].count == 4, "COUNT_STAR counts passing rows");
	tap_ok(s[1].count == 3, "COUNT skips NULLs");
	tap_ok(s[2].count == 3 && s[2].v.i128 == (__int128) 5 + 2 * (__int128) INT64_MAX,
		   "SUM_INT in int128: past int64 exactly");
	tap_ok(s[3].count == 4 && isnan(s[3].v.f8[0]) && s[3].flags == 0,
		   "SUM_FLOAT with a NaN is NaN, no overflow flag");
	tap_ok(s[4].count == 3 && s[4].v.i128 == 1234 - 5 + 99999, "SUM_NUMERIC");
	tap_ok(s[5].count == 4 && s[5].v.f8[0] == 3.0 && s[5].v.f8[1] == 0.25 + 1 + 2.25,
		   "MOMENTS of float4: sum and sum of squares");
	tap_ok(s[6].v.i == 5 && s[7].v.i == INT64_MAX, "MIN/MAX of int8");
	tap_ok(s[8].v.f8[0] == 0 && isnan(s[9].v.f8[0]), "MIN/MAX of float8: NaN is the greatest");
	tap_ok(!signbit(s[8].v.f8[0]), "MIN of -0 then 0 keeps the later (PostgreSQL's float8smaller)");
	tap_ok(s[10].v.i128 == -5 && s[11].v.i128 == 99999, "MIN/MAX of numeric");
	tap_ok(s[12].count == 4 && s[12].v.i128 == -2, "SUM_INT of int2");
	tap_ok(s[13].count == 4 && s[13].v.f8[0] == 0.0, "MIN of float4");
	tap_ok(s[14].count == 4, "COUNT of float8");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* ------------------------------------------------------- stddev/variance */

/* rows 0..3 of fill_kinds (row 4 masked), float4 {0, 0.5, 1, 1.5} */
static void
test_variance_kinds(void)
{
	static const XpuAggDesc aggs[] = {
		{XPU_AGG_SUMSQ_INT, 0, 3, 0}, {XPU_AGG_SUMSQ_INT, 0, 0, 0},
		{XPU_AGG_SUMSQ_NUMERIC, 0, 2, 0}, {XPU_AGG_VAR_FLOAT, 0, 4, 0},
		{XPU_AGG_SUM_FLOAT4, 0, 4, 0}, {XPU_AGG_VAR_FLOAT, 0, 1, 0},
	};
	XpuProgram *prog;
	XpuResult	r;
	XpuAggTable *t = run_aggs(kinds_types, 5, aggs, 6, 5, fill_kinds, &prog, &r);
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;
	__int128	max2 = (__int128) INT64_MAX * INT64_MAX;

	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].count == 4 && s[0].v.i128 == 4 + 1 + 0 + 1 && s[0].flags == 0,
		   "SUMSQ_INT of int2");
	tap_ok(s[1].count == 3 && s[1].v.i128 == 25 + 2 * max2 && s[1].flags == 0,
		   "SUMSQ_INT of int8: 2 * INT64_MAX^2 still fits int128");
	tap_ok(s[2].count == 3 && s[2].v.i128 == (__int128) 1234 * 1234 + 25 + (__int128) 99999 * 99999,
		   "SUMSQ_NUMERIC at twice the scale");
	tap_ok(s[3].count == 4 && s[3].v.f8[0] == 3.0 && s[3].v.f8[1] == 1.25 && s[3].flags == 0,
		   "VAR_FLOAT of float4: N, Sx and Sxx (squared deviations) as float8_accum");
	tap_ok(s[4].count == 4 && s[4].v.f4 == 3.0f, "SUM_FLOAT4");
	tap_ok(s[5].count == 4 && isnan(s[5].v.f8[0]) && isnan(s[5].v.f8[1]) && s[5].flags == 0,
		   "VAR_FLOAT with a NaN: Sx and Sxx NaN, no flag");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* rows: int8 INT64_MAX x 3; float8 {1e300, -1e300, 0}; float4 -0 x 3 */
static void
fill_var_edges(XpuResult *r)
{
	double		fv[3] = {1e300, -1e300, 0};

	for (int i = 0; i < 3; i++)
	{
		VAL(r, 0, i).i = INT64_MAX;
		VAL(r, 1, i).f8 = fv[i];
		VAL(r, 2, i).f4 = -0.0f;
		VAL(r, 3, i).f8 = -0.0;
	}
}

static void
test_variance_edges(void)
{
	static const XpuType types[4] = {XPU_T_INT8, XPU_T_FLOAT8, XPU_T_FLOAT4, XPU_T_FLOAT8};
	static const XpuAggDesc aggs[] = {
		{XPU_AGG_SUMSQ_INT, 0, 0, 0}, {XPU_AGG_VAR_FLOAT, 0, 1, 0},
		{XPU_AGG_SUM_FLOAT4, 0, 2, 0}, {XPU_AGG_SUM_FLOAT, 0, 3, 0},
		{XPU_AGG_VAR_FLOAT, 0, 2, 0},
	};
	XpuProgram *prog;
	XpuResult	r;
	XpuAggTable *t = run_aggs(types, 4, aggs, 5, 3, fill_var_edges, &prog, &r);
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;

	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].flags & XPU_AGGF_OVERFLOW, "SUMSQ_INT: 3 * INT64_MAX^2 leaves int128: flagged");
	tap_ok(s[1].flags & XPU_AGGF_OVERFLOW, "VAR_FLOAT of 1e300: flagged (float8_accum overflows)");
	tap_ok(s[2].v.f4 == 0 && signbit(s[2].v.f4), "SUM_FLOAT4 of -0 values is -0 (float4pl)");
	tap_ok(s[3].v.f8[0] == 0 && signbit(s[3].v.f8[0]), "SUM_FLOAT of -0 values is -0 (float8pl)");
	tap_ok(s[4].count == 3 && s[4].v.f8[0] == 0 && !signbit(s[4].v.f8[0]) && s[4].v.f8[1] == 0,
		   "VAR_FLOAT of -0 values: Sx is +0 as float8_accum's (initial 0)");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* VAR_FLOAT: two halves combined equal float8_combine's formula */
static void
test_variance_combine(void)
{
	XpuAggState a, b;
	XpuAggState c;
	XpuValue	v;
	double		xs[4] = {0, 0.5, 1, 1.5};

	xpu_agg_init(&a, XPU_AGG_VAR_FLOAT);
	xpu_agg_init(&b, XPU_AGG_VAR_FLOAT);
	xpu_agg_init(&c, XPU_AGG_VAR_FLOAT);
	for (int i = 0; i < 4; i++)
	{
		v.f8 = xs[i];
		xpu_agg_update(i < 2 ? &a : &b, XPU_AGG_VAR_FLOAT, XPU_T_FLOAT8, &v, 0);
	}
	xpu_agg_combine(&c, &a, XPU_AGG_VAR_FLOAT, XPU_T_FLOAT8);
	tap_ok(c.count == 2 && c.v.f8[0] == 0.5 && c.v.f8[1] == 0.125,
		   "VAR_FLOAT combine into an empty state copies");
	xpu_agg_combine(&c, &b, XPU_AGG_VAR_FLOAT, XPU_T_FLOAT8);
	tap_ok(c.count == 4 && c.v.f8[0] == 3.0 && c.v.f8[1] == 1.25 && c.flags == 0,
		   "VAR_FLOAT combine: Sxx1 + Sxx2 + N1 N2 (Sx1/N1 - Sx2/N2)^2 / N");
}

/* ------------------------------------------------------------- HLL sets */

/* rows: key r % nkeys, int8 value r % distinct, text of the same number */
static char hll_words[4096][16];

static void
fill_hll(XpuResult *r, int64_t first, int nkeys, int64_t distinct)
{
	for (int64_t i = 0; i < r->nrows; i++)
	{
		int64_t		v = (first + i) % distinct;
		char	   *w = hll_words[v % 4096];

		snprintf(w, 16, "w%ld", (long) (v % 4096));
		VAL(r, 0, i).i = (first + i) % nkeys;
		VAL(r, 1, i).i = v;
		NUL(r, 1, i) = (first + i) % 17 == 0;
		VAL(r, 2, i).t = (XpuText) {w, (int32_t) strlen(w)};
	}
}

static void
test_hll(void)
{
	static const XpuType types[3] = {XPU_T_INT8, XPU_T_INT8, XPU_T_TEXT};
	static const uint16_t keys[1] = {0};
	XpuAggDesc	aggs[2] = {{XPU_AGG_HLL, 10, 1, 64}, {XPU_AGG_HLL, 10, 2, 64}};
	XpuAggSpec	spec = {1, keys, 2, aggs};
	XpuProgram *prog = outs_program(types, 3, 0);
	XpuError	err = {0};
	XpuAggTable *all = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *a = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *b = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	r1 = new_result(3000, 3),
				r2 = new_result(3000, 3);
	const uint8_t *k, *d1, *d2;
	uint32_t	kl, l1, l2;
	const XpuAggState *s, *t;
	int			dense1, dense2, ok = 1;

	/* key 0: 3000 distinct values (dense at p = 10: limit 96); key 1: 50 */
	fill_hll(&r1, 0, 1, 3000);
	fill_hll(&r2, 3000, 1, 3000);
	for (int64_t i = 0; i < r2.nrows; i++)
	{
		VAL(&r2, 0, i).i = 1;
		VAL(&r2, 1, i).i = i % 50;
	}
	ok &= xpu_agg_table_update(all, &r1, &err) && xpu_agg_table_update(all, &r2, &err);
	ok &= xpu_agg_table_update(a, &r1, &err) && xpu_agg_table_update(b, &r2, &err);
	ok &= xpu_agg_table_merge(b, a, &err);
	ok &= xpu_agg_table_finish(all, &err) && xpu_agg_table_finish(b, &err);
	tap_ok(ok && xpu_agg_table_ngroups(all) == 2, "HLL: updates, merge and finish (%s)",
		   err.message);
	xpu_agg_table_group(all, 0, &k, &kl, &s);
	l1 = xpu_agg_extra_export(XPU_AGG_HLL, &s[0], &d1, &dense1);
	tap_ok(dense1 && l1 == 1024 && s[0].count == 3000 - 177,
		   "HLL: 3000 distinct values at p = 10 are 1024 registers");
	xpu_agg_table_group(all, 1, &k, &kl, &s);
	l1 = xpu_agg_extra_export(XPU_AGG_HLL, &s[0], &d1, &dense1);
	tap_ok(!dense1 && l1 == 50 * 8, "HLL: 50 distinct values are 50 explicit hashes");
	/* the merged table holds the same sets (explicit hashes sorted) */
	for (int64_t g = 0; g < 2; g++)
	{
		int64_t		h = 0;
		const uint8_t *kb;
		uint32_t	lb;

		xpu_agg_table_group(all, g, &k, &kl, &s);
		for (; h < 2; h++)
		{
			xpu_agg_table_group(b, h, &kb, &lb, &t);
			if (lb == kl && memcmp(k, kb, kl) == 0)
				break;
		}
		for (int j = 0; j < 2 && h < 2; j++)
		{
			l1 = xpu_agg_extra_export(XPU_AGG_HLL, &s[j], &d1, &dense1);
			l2 = xpu_agg_extra_export(XPU_AGG_HLL, &t[j], &d2, &dense2);
			ok &= l1 == l2 && dense1 == dense2 && memcmp(d1, d2, l1) == 0 &&
				s[j].count == t[j].count;
		}
		ok &= h < 2;
	}
	tap_ok(ok, "HLL: merged tables hold the sets of one table over all rows");
	{
		uint8_t		regs[1024] = {0};
		int			same = 1;

		xpu_agg_table_group(all, 0, &k, &kl, &s);
		l1 = xpu_agg_extra_export(XPU_AGG_HLL, &s[0], &d1, &dense1);
		for (int64_t v = 0; v < 3000; v++)
			if (v % 17 != 0)	/* row v of r1 (the NULLs: rows 0, 17, ...) */
				xpu_hll_update(regs, 10, xpu_hll_hash_int64(v));
		for (int i = 0; i < 1024; i++)
			same &= regs[i] == d1[i];
		tap_ok(same, "HLL: registers of xpu_hll.h's hash of each value");
	}
	xpu_agg_table_free(all);
	xpu_agg_table_free(a);
	xpu_agg_table_free(b);
	/* a limit of 1 MiB: 2000 groups of dense sets do not fit */
	aggs[0].limit = aggs[1].limit = 1;
	all = xpu_agg_table_create(prog, &spec, &err);
	free_result(&r1);
	r1 = new_result(400000, 3);
	fill_hll(&r1, 0, 2000, 1000000);
	memset(&err, 0, sizeof(err));
	ok = xpu_agg_table_update(all, &r1, &err) && xpu_agg_table_finish(all, &err);
	tap_ok(!ok && err.code == XPU_ERR_FALLBACK, "HLL: sets past the limit: FALLBACK");
	xpu_agg_table_free(all);
	free_result(&r1);
	free_result(&r2);
	free(prog);
}

/*
 * fold_like_gpu: the groups of finished table src into dst as
 * service/gpu_agg.c hands a GPU table's groups over: the states (HLL values
 * cleared) with xpu_agg_table_fold_group, then each sketch with
 * xpu_agg_table_fold_hll, explicit hashes reversed and given twice (the GPU
 * gives them in no order)
 */
static int
fold_like_gpu(XpuAggTable *dst, const XpuAggTable *src, int n_aggs, XpuError *err)
{
	for (int64_t g = 0; g < xpu_agg_table_ngroups(src); g++)
	{
		const uint8_t *k, *d;
		uint32_t	kl, l;
		const XpuAggState *s;
		XpuAggState st[4];
		int			dense, ok = 1;

		xpu_agg_table_group(src, g, &k, &kl, &s);
		memcpy(st, s, n_aggs * sizeof(XpuAggState));
		for (int j = 0; j < n_aggs; j++)
			st[j].v.i = 0;
		if (!xpu_agg_table_fold_group(dst, k, kl, st, err))
			return 0;
		for (int j = 0; j < n_aggs && ok; j++)
		{
			uint8_t    *twice;

			l = xpu_agg_extra_export(XPU_AGG_HLL, &s[j], &d, &dense);
			if (dense)
			{
				ok = xpu_agg_table_fold_hll(dst, k, kl, j, 1, d, l, err);
				continue;
			}
			twice = malloc(2 * (size_t) l + 1);
			for (uint32_t i = 0; i < l; i += 8)
			{
				memcpy(twice + (l - 8 - i), d + i, 8);
				memcpy(twice + l + i, d + i, 8);
			}
			ok = xpu_agg_table_fold_hll(dst, k, kl, j, 0, twice, 2 * l, err);
			free(twice);
		}
		if (!ok)
			return 0;
	}
	return 1;
}

/* do finished tables a and b hold the same groups, states and sketches */
static int
same_hll_tables(const XpuAggTable *a, const XpuAggTable *b, int n_aggs)
{
	int			ok = xpu_agg_table_ngroups(a) == xpu_agg_table_ngroups(b);

	for (int64_t g = 0; g < xpu_agg_table_ngroups(a) && ok; g++)
	{
		const uint8_t *k, *kb, *d1, *d2;
		uint32_t	kl, lb, l1, l2;
		const XpuAggState *s, *t = NULL;
		int			dense1, dense2;

		xpu_agg_table_group(a, g, &k, &kl, &s);
		for (int64_t h = 0; h < xpu_agg_table_ngroups(b) && t == NULL; h++)
		{
			xpu_agg_table_group(b, h, &kb, &lb, &t);
			if (lb != kl || memcmp(k, kb, kl) != 0)
				t = NULL;
		}
		ok &= t != NULL;
		for (int j = 0; j < n_aggs && ok; j++)
		{
			l1 = xpu_agg_extra_export(XPU_AGG_HLL, &s[j], &d1, &dense1);
			l2 = xpu_agg_extra_export(XPU_AGG_HLL, &t[j], &d2, &dense2);
			ok &= l1 == l2 && dense1 == dense2 && (l1 == 0 || memcmp(d1, d2, l1) == 0) &&
				s[j].count == t[j].count && s[j].flags == t[j].flags;
		}
	}
	return ok;
}

/*
 * HLL sketches folded in from outside (a GPU's table, service/gpu_agg.c):
 * parts of the rows aggregated apart and folded with
 * xpu_agg_table_fold_hll give the very sketches of one table over all rows,
 * where the parts are explicit and their union is not too
 */
static void
test_hll_fold(void)
{
	static const XpuType types[3] = {XPU_T_INT8, XPU_T_INT8, XPU_T_TEXT};
	static const uint16_t keys[1] = {0};
	XpuAggDesc	aggs[2] = {{XPU_AGG_HLL, 10, 1, 64}, {XPU_AGG_HLL, 10, 2, 64}};
	XpuAggSpec	spec = {1, keys, 2, aggs};
	XpuProgram *prog = outs_program(types, 3, 0);
	XpuError	err = {0};
	XpuAggTable *all = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *pa = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *pb = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *folded = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	r[4] = {new_result(3000, 3), new_result(3000, 3), new_result(80, 3),
	new_result(80, 3)};
	const uint8_t *k, *d;
	uint32_t	kl, l;
	const XpuAggState *s;
	int			dense, dense_part, ok = 1;
	uint8_t		regs[16] = {0};

	/* key 0: 3000 distinct; key 1: 50; key 2: 80 + 80 (96 is the limit at p = 10) */
	fill_hll(&r[0], 0, 1, 3000);
	fill_hll(&r[1], 3000, 1, 3000);
	for (int64_t i = 0; i < 3000; i++)
	{
		VAL(&r[1], 0, i).i = 1;
		VAL(&r[1], 1, i).i = i % 50;
	}
	for (int part = 2; part < 4; part++)
	{
		fill_hll(&r[part], (part - 2) * 80, 1, 3000);
		for (int64_t i = 0; i < 80; i++)
			VAL(&r[part], 0, i).i = 2;
	}
	for (int i = 0; i < 4; i++)
		ok &= xpu_agg_table_update(all, &r[i], &err) &&
			xpu_agg_table_update(i % 2 ? pb : pa, &r[i], &err);
	ok &= xpu_agg_table_finish(all, &err) && xpu_agg_table_finish(pa, &err) &&
		xpu_agg_table_finish(pb, &err);
	ok &= fold_like_gpu(folded, pa, 2, &err) && fold_like_gpu(folded, pb, 2, &err) &&
		xpu_agg_table_finish(folded, &err);
	tap_ok(ok && same_hll_tables(all, folded, 2) && xpu_agg_table_ngroups(folded) == 3,
		   "HLL fold: sketches folded in part by part equal one table's (%s)", err.message);
	xpu_agg_table_group(pa, 1, &k, &kl, &s);	/* key 2 */
	xpu_agg_extra_export(XPU_AGG_HLL, &s[0], &d, &dense_part);
	xpu_agg_table_group(all, 2, &k, &kl, &s);
	l = xpu_agg_extra_export(XPU_AGG_HLL, &s[0], &d, &dense);
	tap_ok(!dense_part && dense && l == 1024,
		   "HLL fold: two explicit parts whose union passes the limit become registers");
	ok = xpu_agg_table_fold_hll(folded, k, kl, 0, 1, regs, 16, &err);
	tap_ok(!ok && err.code == XPU_ERR_INTERNAL, "HLL fold: registers of the wrong size: %s",
		   err.message);
	xpu_agg_table_free(all);
	xpu_agg_table_free(pa);
	xpu_agg_table_free(pb);
	xpu_agg_table_free(folded);
	for (int i = 0; i < 4; i++)
		free_result(&r[i]);
	free(prog);
}

/* ------------------------------------------------------------- min/max of text */

static void
test_text_min_max(void)
{
	static const XpuType types[2] = {XPU_T_INT8, XPU_T_TEXT};
	static const uint16_t keys[1] = {0};
	static const XpuAggDesc aggs[2] = {{XPU_AGG_MIN_TEXT, 0, 1, 0}, {XPU_AGG_MAX_TEXT, 0, 1, 0}};
	static const char *const ws[6] = {"b", "ab", "", "a", "\xc3\xa9", "abc"};
	XpuAggSpec	spec = {1, keys, 2, aggs};
	XpuProgram *prog = outs_program(types, 2, 0);
	XpuError	err = {0};
	XpuAggTable *all = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *parts[2];
	XpuResult	r = new_result(6, 2);
	const uint8_t *k, *d;
	uint32_t	kl, l;
	const XpuAggState *s;
	int			flag, ok = 1;

	for (int i = 0; i < 6; i++)
	{
		VAL(&r, 0, i).i = i == 5;	/* group 1: "abc" alone; group 0: the others */
		VAL(&r, 1, i).t = (XpuText) {ws[i], (int32_t) strlen(ws[i])};
	}
	NUL(&r, 1, 0) = 1;			/* "b" is NULL */
	ok &= xpu_agg_table_update(all, &r, &err);
	xpu_agg_table_group(all, 0, &k, &kl, &s);
	l = xpu_agg_extra_export(XPU_AGG_MIN_TEXT, &s[0], &d, &flag);
	tap_ok(ok && s[0].count == 4 && l == 0, "MIN_TEXT: the empty string is the least");
	l = xpu_agg_extra_export(XPU_AGG_MAX_TEXT, &s[1], &d, &flag);
	tap_ok(l == 2 && memcmp(d, "\xc3\xa9", 2) == 0, "MAX_TEXT: bytewise (UTF-8 above ASCII)");
	/* two halves merged: the same */
	for (int p = 0; p < 2; p++)
	{
		parts[p] = xpu_agg_table_create(prog, &spec, &err);
		memset(r.mask, 0, 6);
		for (int i = 0; i < 6; i++)
			r.mask[i] = i % 2 == p;
		ok &= xpu_agg_table_update(parts[p], &r, &err);
	}
	ok &= xpu_agg_table_merge(parts[0], parts[1], &err);
	for (int64_t g = 0; g < xpu_agg_table_ngroups(parts[0]); g++)
	{
		xpu_agg_table_group(parts[0], g, &k, &kl, &s);
		if (kl == 9 && k[1] == 1)
		{
			l = xpu_agg_extra_export(XPU_AGG_MAX_TEXT, &s[1], &d, &flag);
			ok &= l == 3 && memcmp(d, "abc", 3) == 0 && s[1].count == 1;
		}
		else
		{
			l = xpu_agg_extra_export(XPU_AGG_MAX_TEXT, &s[1], &d, &flag);
			ok &= l == 2 && memcmp(d, "\xc3\xa9", 2) == 0 && s[0].count == 4;
			ok &= xpu_agg_extra_export(XPU_AGG_MIN_TEXT, &s[0], &d, &flag) == 0 && d != NULL;
		}
	}
	tap_ok(ok, "MIN_TEXT/MAX_TEXT: merged halves equal one table");
	xpu_agg_table_free(all);
	xpu_agg_table_free(parts[0]);
	xpu_agg_table_free(parts[1]);
	free_result(&r);
	free(prog);
}

/* ------------------------------------------------------------- overflow */

static void
fill_overflow(XpuResult *r)
{
	for (int i = 0; i < 2; i++)
	{
		VAL(r, 0, i).f8 = 1e308;
		VAL(r, 1, i).n = ((__int128) 1 << 126);
		VAL(r, 2, i).f8 = 1e200;
	}
}

static void
fill_infinite(XpuResult *r)
{
	VAL(r, 0, 0).f8 = INFINITY;
	VAL(r, 0, 1).f8 = 1.0;
	VAL(r, 1, 0).n = -((__int128) 1 << 126);
	VAL(r, 1, 1).n = -((__int128) 1 << 126);
	VAL(r, 2, 0).f8 = INFINITY;
	VAL(r, 2, 1).f8 = 2.0;
}

static void
test_overflow(void)
{
	static const XpuType types[3] = {XPU_T_FLOAT8, XPU_T_NUMERIC, XPU_T_FLOAT8};
	static const XpuAggDesc aggs[3] = {
		{XPU_AGG_SUM_FLOAT, 0, 0, 0}, {XPU_AGG_SUM_NUMERIC, 0, 1, 0}, {XPU_AGG_MOMENTS, 0, 2, 0},
	};
	XpuProgram *prog;
	XpuResult	r;
	XpuAggTable *t = run_aggs(types, 3, aggs, 3, 2, fill_overflow, &prog, &r);
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;

	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].flags & XPU_AGGF_OVERFLOW, "SUM_FLOAT: 1e308 + 1e308 overflows");
	tap_ok(s[1].flags & XPU_AGGF_OVERFLOW, "SUM_NUMERIC: 2^126 + 2^126 leaves int128");
	tap_ok(s[2].flags & XPU_AGGF_OVERFLOW, "MOMENTS: (1e200)^2 overflows");
	tap_ok(xpu_agg_table_flags(t) & XPU_AGGF_OVERFLOW, "xpu_agg_table_flags sees it");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);

	t = run_aggs(types, 3, aggs, 3, 2, fill_infinite, &prog, &r);
	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].flags == 0 && isinf(s[0].v.f8[0]), "SUM_FLOAT of an infinite input: no flag");
	tap_ok(s[1].flags == 0 && s[1].v.i128 == -((__int128) 1 << 126) * 2,
		   "SUM_NUMERIC reaching INT128_MIN exactly does not overflow");
	tap_ok(s[2].flags == 0, "MOMENTS of an infinite input: no flag");
	tap_ok(xpu_agg_table_flags(t) == 0, "no flags in the table");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* values at the limits of xpu_agg_float_risky: just below, just above */
static void
fill_limits_below(XpuResult *r)
{
	VAL(r, 0, 0).f8 = 9e288;
	VAL(r, 0, 1).f8 = -9e288;
	VAL(r, 1, 0).f8 = 9e133;
	VAL(r, 1, 1).f8 = NAN;
}

static void
fill_limits_above(XpuResult *r)
{
	VAL(r, 0, 0).f8 = 2e289;
	VAL(r, 0, 1).f8 = 1.0;
	VAL(r, 1, 0).f8 = -2e134;
	VAL(r, 1, 1).f8 = 1.0;
}

static void
test_float_limits(void)
{
	static const XpuType types[2] = {XPU_T_FLOAT8, XPU_T_FLOAT8};
	static const XpuAggDesc aggs[2] = {
		{XPU_AGG_SUM_FLOAT, 0, 0, 0}, {XPU_AGG_MOMENTS, 0, 1, 0},
	};
	XpuProgram *prog;
	XpuResult	r;
	XpuAggTable *t = run_aggs(types, 2, aggs, 2, 2, fill_limits_below, &prog, &r);
	const uint8_t *k;
	uint32_t	klen;
	const XpuAggState *s;

	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].flags == 0, "SUM_FLOAT of values below 1e289: no flag");
	tap_ok(s[1].flags == 0, "MOMENTS of values below 1e134 (and NaN): no flag");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);

	t = run_aggs(types, 2, aggs, 2, 2, fill_limits_above, &prog, &r);
	xpu_agg_table_group(t, 0, &k, &klen, &s);
	tap_ok(s[0].flags & XPU_AGGF_OVERFLOW,
		   "SUM_FLOAT of a value above 1e289: flagged (the order of additions decides)");
	tap_ok(s[1].flags & XPU_AGGF_OVERFLOW,
		   "MOMENTS of a value above 1e134: flagged (PostgreSQL's squared deviations)");
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* ------------------------------------------------------ merge, fold, size */

/* key types of the merge test and its aggregates */
static const XpuType merge_types[4] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_FLOAT8, XPU_T_NUMERIC};
static const uint16_t merge_keys[2] = {0, 1};
static const XpuAggDesc merge_aggs[7] = {
	{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 0, 0}, {XPU_AGG_SUM_FLOAT, 0, 2, 0},
	{XPU_AGG_MOMENTS, 0, 2, 0}, {XPU_AGG_MIN, 0, 2, 0}, {XPU_AGG_MAX, 0, 3, 0},
	{XPU_AGG_SUM_NUMERIC, 0, 3, 0},
};
static const char *const words[5] = {"alpha", "beta", "", "gamma-delta-epsilon", "z"};

static void
fill_random(XpuResult *r, unsigned *seed)
{
	for (int64_t i = 0; i < r->nrows; i++)
	{
		int			w = rand_r(seed) % 5;

		VAL(r, 0, i).i = rand_r(seed) % 50 - 25;
		NUL(r, 0, i) = rand_r(seed) % 13 == 0;
		VAL(r, 1, i).t = (XpuText) {words[w], (int32_t) strlen(words[w])};
		NUL(r, 1, i) = rand_r(seed) % 11 == 0;
		VAL(r, 2, i).f8 = rand_r(seed) % 1000 - 500;	/* integers: sums exact */
		VAL(r, 3, i).n = (__int128) (rand_r(seed) % 100000) * 1000000007;
		NUL(r, 3, i) = rand_r(seed) % 7 == 0;
		r->mask[i] = rand_r(seed) % 5 != 0;
	}
}

/* are the groups of a and b the same keys with the same states */
static int
tables_equal(const XpuAggTable *a, const XpuAggTable *b, int naggs)
{
	if (xpu_agg_table_ngroups(a) != xpu_agg_table_ngroups(b))
		return 0;
	for (int64_t g = 0; g < xpu_agg_table_ngroups(a); g++)
	{
		const uint8_t *ka, *kb;
		uint32_t	la, lb;
		const XpuAggState *sa, *sb;
		int64_t		h;

		xpu_agg_table_group(a, g, &ka, &la, &sa);
		for (h = 0; h < xpu_agg_table_ngroups(b); h++)
		{
			xpu_agg_table_group(b, h, &kb, &lb, &sb);
			if (la == lb && memcmp(ka, kb, la) == 0)
				break;
		}
		if (h == xpu_agg_table_ngroups(b) || memcmp(sa, sb, naggs * sizeof(XpuAggState)) != 0)
			return 0;
	}
	return 1;
}

static void
test_merge(void)
{
	XpuAggSpec	spec = {2, merge_keys, 7, merge_aggs};
	XpuProgram *prog = outs_program(merge_types, 4, 6);
	XpuError	err = {0};
	XpuAggTable *all = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *parts[3];
	XpuAggTable *merged = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *folded = xpu_agg_table_create(prog, &spec, &err);
	unsigned	seed = 42;
	int			ok = 1;

	for (int p = 0; p < 3; p++)
	{
		XpuResult	r = new_result(2000 + p * 500, 4);

		parts[p] = xpu_agg_table_create(prog, &spec, &err);
		fill_random(&r, &seed);
		ok &= xpu_agg_table_update(all, &r, &err) && xpu_agg_table_update(parts[p], &r, &err);
		free_result(&r);
	}
	tap_ok(ok, "merge: updates");
	for (int p = 0; p < 3; p++)
		ok &= xpu_agg_table_merge(merged, parts[p], &err);
	for (int p = 0; p < 3; p++)
	{
		for (int64_t g = 0; g < xpu_agg_table_ngroups(parts[p]); g++)
		{
			const uint8_t *k;
			uint32_t	l;
			const XpuAggState *s;

			xpu_agg_table_group(parts[p], g, &k, &l, &s);
			ok &= xpu_agg_table_fold_group(folded, k, l, s, &err);
		}
	}
	tap_ok(ok && xpu_agg_table_ngroups(all) > 200, "merge: %lld groups",
		   (long long) xpu_agg_table_ngroups(all));
	tap_ok(tables_equal(all, merged, 7), "merge of 3 tables == one table over all rows");
	tap_ok(tables_equal(all, folded, 7), "fold of every group == one table over all rows");
	xpu_agg_table_free(all);
	xpu_agg_table_free(merged);
	xpu_agg_table_free(folded);
	for (int p = 0; p < 3; p++)
		xpu_agg_table_free(parts[p]);
	free(prog);
}

/*
 * are the groups of `all` those of the n disjoint tables parts[] (each
 * group in exactly one), with the same states; the extended states
 * (MIN_TEXT/MAX_TEXT) by their text
 */
static int
parts_equal(const XpuAggTable *all, XpuAggTable *const *parts, int n,
			const XpuAggDesc *aggs, int naggs)
{
	int64_t		total = 0;

	for (int p = 0; p < n; p++)
		total += xpu_agg_table_ngroups(parts[p]);
	if (total != xpu_agg_table_ngroups(all))
		return 0;
	for (int64_t g = 0; g < xpu_agg_table_ngroups(all); g++)
	{
		const uint8_t *ka, *kb;
		uint32_t	la, lb;
		const XpuAggState *sa, *sb = NULL;
		int			found = 0;

		xpu_agg_table_group(all, g, &ka, &la, &sa);
		for (int p = 0; p < n; p++)
			for (int64_t h = 0; h < xpu_agg_table_ngroups(parts[p]); h++)
			{
				const XpuAggState *s;

				xpu_agg_table_group(parts[p], h, &kb, &lb, &s);
				if (la == lb && memcmp(ka, kb, la) == 0)
					found++, sb = s;
			}
		if (found != 1)
			return 0;
		for (int a = 0; a < naggs; a++)
		{
			const uint8_t *da, *db;
			int			fa, fb;
			uint32_t	na, nb;

			if (!XPU_AGG_EXTENDED(aggs[a].kind))
			{
				if (memcmp(&sa[a], &sb[a], sizeof(XpuAggState)) != 0)
					return 0;
				continue;
			}
			na = xpu_agg_extra_export(aggs[a].kind, &sa[a], &da, &fa);
			nb = xpu_agg_extra_export(aggs[a].kind, &sb[a], &db, &fb);
			if (sa[a].count != sb[a].count || na != nb || (na > 0 && memcmp(da, db, na) != 0))
				return 0;
		}
	}
	return 1;
}

/*
 * Spilling (partitioned aggregation): tables that spill many times (a
 * limit of 7 groups, 40 rows an update) over keys with NULLs, texts longer
 * than 16 bytes, numeric sums and MIN_TEXT/MAX_TEXT states, merged by
 * partitions (XPU_AGG_PARTS disjoint tables), by any other number of
 * partitions and into one table, equal one table over all rows; an
 * overflow in a spilled group still flags the result; HLL tables and
 * tables without keys never spill
 */
static void
test_spill(void)
{
	static const XpuAggDesc aggs[9] = {
		{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 0, 0}, {XPU_AGG_SUM_FLOAT, 0, 2, 0},
		{XPU_AGG_MOMENTS, 0, 2, 0}, {XPU_AGG_MIN, 0, 2, 0}, {XPU_AGG_MAX, 0, 3, 0},
		{XPU_AGG_SUM_NUMERIC, 0, 3, 0}, {XPU_AGG_MIN_TEXT, 0, 1, 0}, {XPU_AGG_MAX_TEXT, 0, 1, 0},
	};
	static const XpuAggDesc hll[1] = {{XPU_AGG_HLL, 10, 0, 64}};
	XpuAggSpec	spec = {2, merge_keys, 9, aggs};
	XpuAggSpec	hspec = {2, merge_keys, 1, hll};
	XpuAggSpec	nokeys = {0, NULL, 9, aggs};
	XpuProgram *prog = outs_program(merge_types, 4, 6);
	XpuError	err = {0};
	XpuAggTable *all = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *one = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *src[2], *parts[XPU_AGG_PARTS], *thirds[3];
	XpuAggTable *h = xpu_agg_table_create(prog, &hspec, &err);
	XpuAggTable *k0 = xpu_agg_table_create(prog, &nokeys, &err);
	unsigned	seed = 7;
	int			ok = 1;

	for (int i = 0; i < 2; i++)
	{
		src[i] = xpu_agg_table_create(prog, &spec, &err);
		xpu_agg_table_set_spill(src[i], 7);
	}
	xpu_agg_table_set_spill(h, 7);
	xpu_agg_table_set_spill(k0, 1);
	for (int u = 0; u < 150; u++)
	{
		XpuResult	r = new_result(40, 4);

		fill_random(&r, &seed);
		ok &= xpu_agg_table_update(all, &r, &err) &&
			xpu_agg_table_update(src[u % 2], &r, &err) &&
			xpu_agg_table_update(h, &r, &err) && xpu_agg_table_update(k0, &r, &err);
		free_result(&r);
	}
	tap_ok(ok && xpu_agg_table_spilled(src[0]) && xpu_agg_table_spilled(src[1]) &&
		   xpu_agg_table_ngroups(src[0]) < 7 + 40 && xpu_agg_table_ngroups(all) > 200,
		   "spill: both tables spilled, their hashes stay small (%lld groups in all)",
		   (long long) xpu_agg_table_ngroups(all));
	tap_ok(!xpu_agg_table_spilled(h) && xpu_agg_table_ngroups(h) > 200 &&
		   !xpu_agg_table_spilled(k0) && xpu_agg_table_ngroups(k0) == 1,
		   "spill: an HLL table and a table without keys never spill");
	for (int p = 0; p < XPU_AGG_PARTS; p++)
	{
		parts[p] = xpu_agg_table_create(prog, &spec, &err);
		for (int i = 0; i < 2; i++)
			ok &= xpu_agg_table_merge_part(parts[p], src[i], p, XPU_AGG_PARTS, &err);
	}
	tap_ok(ok && parts_equal(all, parts, XPU_AGG_PARTS, aggs, 9),
		   "spill: merged by XPU_AGG_PARTS partitions == one table over all rows");
	for (int p = 0; p < 3; p++)
	{
		thirds[p] = xpu_agg_table_create(prog, &spec, &err);
		for (int i = 0; i < 2; i++)
			ok &= xpu_agg_table_merge_part(thirds[p], src[i], p, 3, &err);
	}
	tap_ok(ok && parts_equal(all, thirds, 3, aggs, 9),
		   "spill: merged by 3 partitions == one table over all rows");
	/* a final spill of what the hash holds changes no answer */
	ok &= xpu_agg_table_spill(src[0], &err) && xpu_agg_table_ngroups(src[0]) == 0;
	for (int i = 0; i < 2; i++)
		ok &= xpu_agg_table_merge(one, src[i], &err);
	tap_ok(ok && parts_equal(all, &one, 1, aggs, 9),
		   "spill: merged into one table == one table over all rows");
	tap_ok(xpu_agg_table_memory(src[0]) > xpu_agg_table_memory(h) / 4,
		   "spill: the spilled groups count in the table's memory");
	/* an overflowed state in a spilled group flags the merged result */
	{
		XpuResult	r = new_result(2, 4);
		XpuAggTable *dst = xpu_agg_table_create(prog, &spec, &err);
		uint32_t	f = 0;

		for (int i = 0; i < 2; i++)
		{
			VAL(&r, 0, i).i = 1;
			VAL(&r, 1, i).t = (XpuText) {"x", 1};
			VAL(&r, 3, i).n = ((__int128) 1 << 126) + 1;
		}
		ok &= xpu_agg_table_update(src[1], &r, &err) && xpu_agg_table_spill(src[1], &err);
		tap_ok(ok && (xpu_agg_table_flags(src[1]) & XPU_AGGF_OVERFLOW),
			   "spill: a spilled overflow shows in the table's flags");
		for (int p = 0; p < XPU_AGG_PARTS; p++)
		{
			xpu_agg_table_free(parts[p]);
			parts[p] = xpu_agg_table_create(prog, &spec, &err);
			ok &= xpu_agg_table_merge_part(parts[p], src[1], p, XPU_AGG_PARTS, &err);
			f |= xpu_agg_table_flags(parts[p]);
		}
		tap_ok(ok && (f & XPU_AGGF_OVERFLOW), "spill: ... and in the merged partitions'");
		xpu_agg_table_free(dst);
		free_result(&r);
	}
	for (int p = 0; p < XPU_AGG_PARTS; p++)
		xpu_agg_table_free(parts[p]);
	for (int p = 0; p < 3; p++)
		xpu_agg_table_free(thirds[p]);
	for (int i = 0; i < 2; i++)
		xpu_agg_table_free(src[i]);
	xpu_agg_table_free(all);
	xpu_agg_table_free(one);
	xpu_agg_table_free(h);
	xpu_agg_table_free(k0);
	free(prog);
}

/*
 * Rows whose key repeats the row before's take its group without a probe:
 * runs of equal keys (NULLs, long texts, texts equal in their first and
 * last 8 bytes but not between) group as one table of shuffled rows does
 */
static void
test_key_runs(void)
{
	static const XpuType types[2] = {XPU_T_TEXT, XPU_T_INT8};
	static const uint16_t keys[2] = {0, 1};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	static const char *const texts[4] = {
		"abcdefgh-1-ijklmnop", "abcdefgh-2-ijklmnop", "short", "abcdefgh-1-ijklmnop"};
	XpuAggSpec	spec = {2, keys, 1, aggs};
	XpuProgram *prog = outs_program(types, 2, 0);
	XpuError	err = {0};
	XpuAggTable *runs = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *shuffled = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	r = new_result(600, 2), q = new_result(600, 2);
	int			ok = 1;

	for (int64_t i = 0; i < r.nrows; i++)
	{
		int64_t		run = i / 7;	/* runs of 7 rows, across the blocks of 256 */

		VAL(&r, 0, i).t = (XpuText) {texts[run % 4], (int32_t) strlen(texts[run % 4])};
		NUL(&r, 0, i) = run % 5 == 4;
		VAL(&r, 1, i).i = run % 3;
		NUL(&r, 1, i) = run % 7 == 6;
		r.mask[i] = i % 11 != 3;
	}
	for (int64_t i = 0; i < q.nrows; i++)
	{
		int64_t		j = i * 367 % q.nrows;	/* a permutation */

		VAL(&q, 0, i) = VAL(&r, 0, j);
		NUL(&q, 0, i) = NUL(&r, 0, j);
		VAL(&q, 1, i) = VAL(&r, 1, j);
		NUL(&q, 1, i) = NUL(&r, 1, j);
		q.mask[i] = r.mask[j];
	}
	ok &= xpu_agg_table_update(runs, &r, &err) && xpu_agg_table_update(shuffled, &q, &err);
	tap_ok(ok && xpu_agg_table_ngroups(runs) > 10 && tables_equal(runs, shuffled, 1),
		   "runs of equal keys group as shuffled rows do (%lld groups)",
		   (long long) xpu_agg_table_ngroups(runs));
	xpu_agg_table_free(runs);
	xpu_agg_table_free(shuffled);
	free_result(&r);
	free_result(&q);
	free(prog);
}

/* state combine == updates over the concatenated input, for each kind */
static void
test_combine(void)
{
	XpuValue	v[4];
	int			ok = 1;

	v[0].i = 7;
	v[1].i = -9;
	v[2].i = 3;
	v[3].i = 11;
	for (int kind = XPU_AGG_COUNT_STAR; kind < XPU_AGG_N_KINDS; kind++)
	{
		XpuType		type = kind == XPU_AGG_SUM_FLOAT || kind == XPU_AGG_MOMENTS ||
			kind == XPU_AGG_ZERO_SIGN ? XPU_T_FLOAT8 :
			kind == XPU_AGG_SUM_NUMERIC ? XPU_T_NUMERIC : XPU_T_INT8;
		XpuAggState a, b, all;
		XpuValue	x[4];

		for (int i = 0; i < 4; i++)
		{
			if (type == XPU_T_FLOAT8)
				x[i].f8 = (double) v[i].i;
			else if (type == XPU_T_NUMERIC)
				x[i].n = v[i].i;
			else
				x[i].i = v[i].i;
		}
		xpu_agg_state_init(&a, kind);
		xpu_agg_state_init(&b, kind);
		xpu_agg_state_init(&all, kind);
		for (int i = 0; i < 4; i++)
		{
			xpu_agg_update(i < 2 ? &a : &b, kind, type, &x[i], 0);
			xpu_agg_update(&all, kind, type, &x[i], 0);
		}
		xpu_agg_state_combine(&a, &b, kind, type);
		ok &= memcmp(&a, &all, sizeof(a)) == 0;
	}
	tap_ok(ok, "xpu_agg_state_combine of two halves == the whole, every kind");
}

/*
 * ZERO_SIGN (a float group key's hidden aggregate): 0 while every row is
 * -0, 1 once one is not (0, a NaN, any other value), in any order and
 * through combines; float4 as float8
 */
static void
test_zero_sign(void)
{
	static const double others[] = {0.0, 1.0, -1.0, NAN, -NAN, 5e-324, -5e-324};
	XpuAggState s, t;
	XpuValue	x;
	int			ok = 1;

	xpu_agg_state_init(&s, XPU_AGG_ZERO_SIGN);
	x.f8 = -0.0;
	for (int i = 0; i < 3; i++)
		xpu_agg_update(&s, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8, &x, 0);
	ok &= s.count == 3 && s.v.i == 0;
	x.f4 = -0.0f;
	xpu_agg_update(&s, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT4, &x, 0);
	ok &= s.count == 4 && s.v.i == 0;
	for (int k = 0; k < (int) (sizeof(others) / sizeof(others[0])); k++)
	{
		xpu_agg_state_init(&t, XPU_AGG_ZERO_SIGN);
		x.f8 = others[k];
		xpu_agg_update(&t, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8, &x, 0);
		x.f8 = -0.0;
		xpu_agg_update(&t, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8, &x, 0);
		ok &= t.v.i == 1;
		/* a combine of an all -0 state with this one is not all -0 either way */
		{
			XpuAggState u = s,
						w = t;

			xpu_agg_state_combine(&u, &t, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8);
			xpu_agg_state_combine(&w, &s, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8);
			ok &= u.v.i == 1 && w.v.i == 1 && u.count == 6 && w.count == 6;
		}
	}
	xpu_agg_state_init(&t, XPU_AGG_ZERO_SIGN);
	x.f8 = -0.0;
	xpu_agg_update(&t, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8, &x, 0);
	xpu_agg_state_combine(&t, &s, XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8);
	ok &= t.v.i == 0 && t.count == 5;
	ok &= xpu_agg_arg_supported(XPU_AGG_ZERO_SIGN, XPU_T_FLOAT4) &&
		xpu_agg_arg_supported(XPU_AGG_ZERO_SIGN, XPU_T_FLOAT8) &&
		!xpu_agg_arg_supported(XPU_AGG_ZERO_SIGN, XPU_T_INT8);
	tap_ok(ok, "ZERO_SIGN: 0 only while every row is -0, through combines");
}

static void
test_many_groups(void)
{
	static const XpuType type = XPU_T_INT8;
	static const uint16_t key_outs[1] = {0};
	static const XpuAggDesc aggs[2] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_SUM_INT, 0, 0, 0}};
	XpuAggSpec	spec = {1, key_outs, 2, aggs};
	XpuProgram *prog = outs_program(&type, 1, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	XpuResult	r = new_result(65536, 1);
	size_t		mem0 = xpu_agg_table_memory(t);
	int			ok = 1;
	const int64_t n = 1000000;

	/* every key twice, in two passes of chunks */
	for (int pass = 0; pass < 2; pass++)
	{
		for (int64_t base = 0; base < n; base += r.nrows)
		{
			int64_t		m = n - base < r.nrows ? n - base : r.nrows;

			for (int64_t i = 0; i < r.nrows; i++)
			{
				VAL(&r, 0, i).i = (base + i) * 2654435761 % n;	/* a permutation */
				r.mask[i] = i < m;
			}
			ok &= xpu_agg_table_update(t, &r, &err);
		}
	}
	tap_ok(ok && xpu_agg_table_ngroups(t) == n, "1e6 groups (got %lld)",
		   (long long) xpu_agg_table_ngroups(t));
	for (int64_t g = 0; g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *k;
		uint32_t	l;
		const XpuAggState *s;
		int64_t		key;

		xpu_agg_table_group(t, g, &k, &l, &s);
		memcpy(&key, k + 1, 8);
		ok &= s[0].count == 2 && s[1].v.i128 == 2 * (__int128) key;
	}
	tap_ok(ok, "1e6 groups: every count and sum right after growth");
	tap_ok(xpu_agg_table_memory(t) > mem0 + (size_t) n * 64, "memory grows with the groups");
	{
		XpuAggTable *r2 = xpu_agg_table_create(prog, &spec, &err);

		tap_ok(r2 != NULL && xpu_agg_table_reserve(r2, n, &err) &&
			   xpu_agg_table_memory(r2) > (size_t) n * (64 + 16) && xpu_agg_table_ngroups(r2) == 0,
			   "xpu_agg_table_reserve: room for 1e6 groups, none there");
		xpu_agg_table_free(r2);
	}
	xpu_agg_table_free(t);
	free(prog);
	free_result(&r);
}

/* a table without keys has its one group before any row */
static void
test_empty(void)
{
	static const XpuType type = XPU_T_INT8;
	static const XpuAggDesc aggs[2] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}, {XPU_AGG_MAX, 0, 0, 0}};
	XpuAggSpec	spec = {0, NULL, 2, aggs};
	static const uint16_t key_outs[1] = {0};
	XpuAggSpec	spec1 = {1, key_outs, 2, aggs};
	XpuProgram *prog = outs_program(&type, 1, 0);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	XpuAggTable *t1 = xpu_agg_table_create(prog, &spec1, &err);
	XpuResult	r = new_result(3, 1);
	const uint8_t *k;
	uint32_t	l;
	const XpuAggState *s;

	memset(r.mask, 0, 3);
	xpu_agg_table_update(t, &r, &err);
	xpu_agg_table_update(t1, &r, &err);
	xpu_agg_table_group(t, 0, &k, &l, &s);
	tap_ok(xpu_agg_table_ngroups(t) == 1 && s[0].count == 0 && s[1].count == 0,
		   "no keys, no passing row: one group of count 0");
	tap_ok(xpu_agg_table_ngroups(t1) == 0, "with keys, no passing row: no group");
	xpu_agg_table_free(t);
	xpu_agg_table_free(t1);
	free(prog);
	free_result(&r);
}

/*
 * The table of kinds (xpu_agg_kinds.h): the numbers that travel in the
 * protocol stay those of the rows' order, and the facts the CPU engine, the
 * GPU runner and the planner read agree with xpu_agg.h
 */
static void
test_kind_table(void)
{
	int			ok = 1;

	tap_ok(XPU_AGG_COUNT_STAR == 1 && XPU_AGG_COUNT == 2 && XPU_AGG_SUM_INT == 3 &&
		   XPU_AGG_SUM_NUMERIC == 4 && XPU_AGG_SUM_FLOAT == 5 && XPU_AGG_MOMENTS == 6 &&
		   XPU_AGG_MIN == 7 && XPU_AGG_MAX == 8 && XPU_AGG_SUM_FLOAT4 == 9 &&
		   XPU_AGG_SUMSQ_INT == 10 && XPU_AGG_SUMSQ_NUMERIC == 11 &&
		   XPU_AGG_VAR_FLOAT == 12 && XPU_AGG_HLL == 13 && XPU_AGG_MIN_TEXT == 14 &&
		   XPU_AGG_MAX_TEXT == 15 && XPU_AGG_ZERO_SIGN == 16 && XPU_AGG_N_KINDS == 17,
		   "the kinds keep their protocol numbers");
	for (int k = XPU_AGG_COUNT_STAR; k < XPU_AGG_N_KINDS; k++)
	{
		int			ext = k == XPU_AGG_HLL || k == XPU_AGG_MIN_TEXT || k == XPU_AGG_MAX_TEXT;

		ok &= XPU_AGG_EXTENDED(k) == ext;
		ok &= xpu_agg_kind_gpu(k) == (k != XPU_AGG_MIN_TEXT && k != XPU_AGG_MAX_TEXT);
		ok &= (xpu_agg_kind_arg(k) == XPU_AGG_ARG_NONE) == (k == XPU_AGG_COUNT_STAR);
	}
	ok &= !xpu_agg_arg_supported(XPU_AGG_NONE, XPU_T_INT8) &&
		!xpu_agg_arg_supported(XPU_AGG_N_KINDS, XPU_T_INT8) &&
		xpu_agg_arg_supported(XPU_AGG_COUNT_STAR, XPU_T_NONE) &&
		xpu_agg_arg_supported(XPU_AGG_MIN, XPU_T_DATE) &&
		!xpu_agg_arg_supported(XPU_AGG_SUM_FLOAT4, XPU_T_FLOAT8) &&
		xpu_agg_arg_supported(XPU_AGG_HLL, XPU_T_TEXT) &&
		!xpu_agg_arg_supported(XPU_AGG_SUM_INT, XPU_T_NUMERIC);
	tap_ok(ok, "extended, GPU and argument facts of every kind");
}

/*
 * xpu_agg_gpu_finish: a GPU-form wide sum (v unsigned, pad its wraps)
 * overflows unless v + pad * 2^128 fits int128; a MIN/MAX without a value
 * loses its sentinel; pad is 0 afterwards
 */
static void
test_gpu_finish(void)
{
	XpuAggState s;
	int			ok = 1;

	xpu_agg_init(&s, XPU_AGG_SUM_NUMERIC);
	s.count = 2;
	s.v.i128 = -5;
	s.pad = (uint32_t) -1;		/* -5 as unsigned wrapped once down */
	xpu_agg_gpu_finish(&s, XPU_AGG_SUM_NUMERIC);
	ok &= s.flags == 0 && s.pad == 0 && s.v.i128 == -5;
	s.v.i128 = -5;
	s.pad = 0;					/* 2^128 - 5: past int128 */
	xpu_agg_gpu_finish(&s, XPU_AGG_SUM_NUMERIC);
	ok &= s.flags == XPU_AGGF_OVERFLOW;
	xpu_agg_init(&s, XPU_AGG_SUM_INT);
	s.v.i128 = 7;
	s.pad = 1;
	xpu_agg_gpu_finish(&s, XPU_AGG_SUM_INT);
	ok &= s.flags == XPU_AGGF_OVERFLOW;
	xpu_agg_init_mode(&s, XPU_AGG_MIN, XPU_T_INT8, XPU_AGG_ATOMIC);
	ok &= s.v.i == INT64_MAX;
	xpu_agg_gpu_finish(&s, XPU_AGG_MIN);
	ok &= s.v.i128 == 0 && s.count == 0;
	xpu_agg_init_mode(&s, XPU_AGG_MAX, XPU_T_FLOAT8, XPU_AGG_ATOMIC);
	ok &= s.v.f8[0] == -HUGE_VAL;
	xpu_agg_init_mode(&s, XPU_AGG_MIN, XPU_T_FLOAT4, XPU_AGG_ATOMIC);
	ok &= isnan(s.v.f8[0]);
	/* the plain takes replace a GPU-form sentinel as they replace "none" */
	{
		XpuValue	v;

		v.f4 = 2.5f;
		xpu_agg_update(&s, XPU_AGG_MIN, XPU_T_FLOAT4, &v, 0);
		ok &= s.count == 1 && s.v.f8[0] == 2.5;
	}
	tap_ok(ok, "xpu_agg_gpu_finish: wide sums, MIN/MAX sentinels");
}

/* an HllResizeFn that fails from its arg's countdown on */
static void *
failing_resize(void *arg, void *ptr, size_t size)
{
	int		   *left = arg;

	if (size == 0)
	{
		free(ptr);
		return NULL;
	}
	if ((*left)-- <= 0)
		return NULL;
	return realloc(ptr, size);
}

/*
 * The shared sketch (xpu_hll_sketch.h) says when its memory is not there
 * and stays a valid sketch: the CPU engine turns that into an error
 */
static void
test_hll_sketch_memory(void)
{
	HllSketch	sk;
	int			left = 4;		/* 16, 32, 64, 128 hashes; not 192 */
	int			ok = 1,
				failed = 0;
	uint32_t	added = 0;

	hll_init(&sk, 10, failing_resize, &left);
	for (uint64_t i = 1; i < 100000 && !failed; i++)
	{
		if (hll_add_hash(&sk, xpu_hll_hash_int64((int64_t) i)))
			added++;
		else
			failed = 1;
	}
	ok &= failed && !sk.dense && sk.n == added && sk.n == 128 && sk.cap == 128;
	ok &= hll_memory(&sk) == (size_t) sk.cap * 8;
	left = 0;
	/* 128 distinct hashes, past the limit of 96: the registers, no memory */
	ok &= hll_normalize(&sk) == 0 && !sk.dense && sk.n == 128;
	left = 1;
	ok &= hll_normalize(&sk) == 1 && sk.dense && hll_memory(&sk) == 1024;
	hll_free(&sk);
	tap_ok(ok, "the HLL sketch reports a failed allocation and stays usable");
}

int
main(void)
{
	test_int_keys();
	test_float_keys(XPU_T_FLOAT8);
	test_float_keys(XPU_T_FLOAT4);
	test_numeric_and_text_keys();
	test_multi_keys();
	test_key_classes();
	test_packed_text_keys();
	test_refused_specs();
	test_agg_kinds();
	test_variance_kinds();
	test_variance_edges();
	test_variance_combine();
	test_hll();
	test_hll_fold();
	test_text_min_max();
	test_overflow();
	test_float_limits();
	test_combine();
	test_zero_sign();
	test_merge();
	test_many_groups();
	test_spill();
	test_key_runs();
	test_empty();
	test_kind_table();
	test_gpu_finish();
	test_hll_sketch_memory();
	return tap_done();
}
