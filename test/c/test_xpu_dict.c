/*
 * test_xpu_dict.c
 *		Unit tests of dictionary-encoded utf8 columns in the CPU engine
 *		(src/xpu/xpu_dict.h, xpu_arrow_bind.h, xpu_agg_index.h): Arrow
 *		arrays built by hand (indices of every integer type, NULL indices,
 *		a NULL value, '' and duplicate values in the dictionary), bound with
 *		xpu_column_bind, read by the per-row LOAD_COL (xpu_row_exec), the
 *		tiles (a qual: xpu_cpu_exec) and the loads-only path, against the
 *		values looked up here; an index outside the dictionary is an error
 *		of the run (AddressSanitizer: no read outside it).  Then GROUP BY on
 *		the indices (xpu_agg_table_update_dict, with the keys left unloaded
 *		by xpu_cpu_exec_skip) against the same rows grouped by their values
 *		(xpu_agg_table_update): one and two keys, rows that do not pass, a
 *		second dictionary version in the same table, a table that spills,
 *		and three keys (the hash probe over the dictionary's values).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow.h"
#include "tap.h"
#include "xpu_agg.h"
#include "xpu_arrow_bind.h"

enum
{
	ROWS = 5000
};

static char errbuf[256];

/* a dictionary: values (NULL entry: a NULL value) as an Arrow utf8 array */
typedef struct Dict
{
	ArrowField	field;
	ArrowArray	arr;
	int32_t    *offsets;
	char	   *data;
	uint8_t    *validity;
} Dict;

static void
dict_make(Dict *d, const char *const *values, int n)
{
	size_t		bytes = 0;

	for (int i = 0; i < n; i++)
		bytes += values[i] ? strlen(values[i]) : 0;
	memset(d, 0, sizeof(*d));
	d->offsets = calloc(n + 1, sizeof(int32_t));
	d->data = malloc(bytes + 1);
	d->validity = calloc((n + 7) / 8 + 1, 1);
	for (int i = 0, at = 0; i < n; i++)
	{
		size_t		len = values[i] ? strlen(values[i]) : 0;

		memcpy(d->data + at, values[i] ? values[i] : "", len);
		at += (int) len;
		d->offsets[i + 1] = at;
		if (values[i])
			d->validity[i / 8] |= (uint8_t) (1 << (i % 8));
	}
	d->field.type.id = ARROW_TYPE_UTF8;
	d->arr.field = &d->field;
	d->arr.length = n;
	d->arr.offsets = d->offsets;
	d->arr.data = (const uint8_t *) d->data;
	d->arr.validity = d->validity;
}

static void
dict_free(Dict *d)
{
	free(d->offsets);
	free(d->data);
	free(d->validity);
}

/* a dictionary-encoded column: indices of type itype (ix[i] < 0: NULL) */
typedef struct Col
{
	ArrowField	field;
	ArrowArray	arr;
	void	   *values;
	uint8_t    *validity;
} Col;

static int
type_width(ArrowTypeId t)
{
	return t == ARROW_TYPE_INT8 || t == ARROW_TYPE_UINT8 ? 1 :
		t == ARROW_TYPE_INT16 || t == ARROW_TYPE_UINT16 ? 2 :
		t == ARROW_TYPE_INT32 || t == ARROW_TYPE_UINT32 ? 4 : 8;
}

static void
col_make(Col *c, const Dict *d, ArrowTypeId itype, const int64_t *ix, int n)
{
	int			w = type_width(itype);

	memset(c, 0, sizeof(*c));
	c->values = calloc(n, w);
	c->validity = calloc((n + 7) / 8 + 1, 1);
	for (int i = 0; i < n; i++)
	{
		int64_t		v = ix[i] < 0 ? 0 : ix[i];

		/* little-endian: the low bytes of v */
		memcpy((char *) c->values + (size_t) i * w, &v, w);
		if (ix[i] >= 0)
			c->validity[i / 8] |= (uint8_t) (1 << (i % 8));
	}
	c->field.type.id = ARROW_TYPE_UTF8;
	c->field.has_dictionary = true;
	c->field.dictionary.index_type = itype;
	c->arr.field = &c->field;
	c->arr.length = n;
	c->arr.values = c->values;
	c->arr.validity = c->validity;
	c->arr.dictionary = &d->arr;
}

static void
col_free(Col *c)
{
	free(c->values);
	free(c->validity);
}

/* the text of row i: NULL for a NULL index or value */
static const char *
row_text(const Dict *d, const int64_t *ix, int i, int *len)
{
	if (ix[i] < 0 || !(d->validity[ix[i] / 8] >> (ix[i] % 8) & 1))
		return NULL;
	*len = d->offsets[ix[i] + 1] - d->offsets[ix[i]];
	return d->data + d->offsets[ix[i]];
}

static XpuProgram *
finish(XpuBuilder *b)
{
	XpuProgram *p = xpu_builder_finish(b, errbuf, sizeof(errbuf));

	xpu_builder_free(b);
	if (p == NULL)
		tap_diag("builder: %s", errbuf);
	return p;
}

/* outputs: the n_cols text columns as they are (PROJ only), varchar(scale) */
static XpuProgram *
loads_program_n(int n_cols, int scale)
{
	XpuBuilder *b = xpu_builder_create();
	int			r[4];

	xpu_add_reg(b, XPU_T_BOOL, 0);
	for (int i = 0; i < n_cols; i++)
	{
		r[i] = xpu_add_reg(b, XPU_T_TEXT, 0);
		xpu_add_column(b, i, XPU_COL_UTF8, scale);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	for (int i = 0; i < n_cols; i++)
		xpu_add_instr(b, XPU_OP_LOAD_COL, r[i], 0, 0, 0, i);
	for (int i = 0; i < n_cols; i++)
		xpu_add_output(b, r[i]);
	return finish(b);
}

static XpuProgram *
loads_program(int n_cols)
{
	return loads_program_n(n_cols, 0);
}

/* WHERE column 0 = k; outputs: column 0 */
static XpuProgram *
qual_program(const char *k)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0),
				r1 = xpu_add_reg(b, XPU_T_TEXT, 0),
				r2 = xpu_add_reg(b, XPU_T_TEXT, 0),
				r3 = xpu_add_reg(b, XPU_T_BOOL, 0),
				r4 = xpu_add_reg(b, XPU_T_TEXT, 0);

	xpu_add_column(b, 0, XPU_COL_UTF8, 0);
	xpu_begin_stage(b, XPU_STAGE_LOAD);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r1, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_CONST_TEXT, r2, 0, 0, 0, xpu_add_const_text(b, k, strlen(k)));
	xpu_add_instr(b, XPU_OP_EQ_TEXT, r3, r1, r2, 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, r0, r3, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_LOAD_COL, r4, 0, 0, 0, 0);
	xpu_add_output(b, r4);
	return finish(b);
}

static XpuResult
result_new(int64_t n, int outs)
{
	XpuResult	r = {n, calloc(n, 1), calloc((size_t) n * outs, sizeof(XpuValue)),
	calloc((size_t) n * outs, 1)};

	return r;
}

static void
result_free(XpuResult *r)
{
	free(r->mask);
	free(r->values);
	free(r->nulls);
}

/* do output k's rows of r equal the column's texts (passing rows where qual) */
static int
output_is(const XpuResult *r, int k, const Dict *d, const int64_t *ix, int n, const char *qual)
{
	for (int i = 0; i < n; i++)
	{
		int			len = 0;
		const char *want = row_text(d, ix, i, &len);
		int			pass = qual == NULL ||
			(want != NULL && (size_t) len == strlen(qual) && memcmp(want, qual, len) == 0);
		const XpuValue *v = &r->values[(size_t) k * n + i];

		if (r->mask[i] != pass)
		{
			tap_diag("row %d: mask %d, want %d", i, r->mask[i], pass);
			return 0;
		}
		if (!pass)
			continue;
		if (r->nulls[(size_t) k * n + i] != (want == NULL) ||
			(want != NULL && (v->t.len != len || memcmp(v->t.p, want, len) != 0)))
		{
			tap_diag("row %d: got %s%.*s, want %s%.*s", i,
					 r->nulls[(size_t) k * n + i] ? "NULL " : "", (int) v->t.len,
					 r->nulls[(size_t) k * n + i] ? "" : v->t.p, want ? "" : "NULL ",
					 len, want ? want : "");
			return 0;
		}
	}
	return 1;
}

static const char *const VALUES[] = {"AIR", "MAIL", "", NULL, "RAIL", "é日本",
	"sixteen-bytes-16", "a text longer than sixteen bytes", "AIR"};	/* "AIR" twice */
enum
{
	NVALUES = 9
};

static void
random_indices(int64_t *ix, int n, int nvalues, unsigned seed, int null_mod)
{
	srand(seed);
	for (int i = 0; i < n; i++)
		ix[i] = null_mod && i % null_mod == 3 ? -1 : rand() % nvalues;
}

/* a column bound for a run of program p: its arrays, binding, result, workspace */
typedef struct Bound
{
	Col			c;
	XpuColumnData cd;
	XpuChunk	chunk;
	XpuResult	r;
	XpuError	err;
	void	   *ws;
} Bound;

static void
bound_make(Bound *b, const Dict *d, ArrowTypeId itype, const int64_t *ix, const XpuProgram *p)
{
	memset(b, 0, sizeof(*b));
	col_make(&b->c, d, itype, ix, ROWS);
	b->r = result_new(ROWS, 1);
	b->ws = aligned_alloc(16, (xpu_cpu_workspace_size(p) + 15) & ~(size_t) 15);
}

/* binds b's column (after any change of its arrays) */
static void
bound_bind(Bound *b)
{
	xpu_column_bind(&b->cd, &b->c.arr, NULL, 0);
	b->chunk = (XpuChunk) {ROWS, 1, 0, &b->cd};
}

static void
bound_free(Bound *b)
{
	col_free(&b->c);
	result_free(&b->r);
	free(b->ws);
}

/*
 * a varchar(n) key over a dictionary: left to the indices only where every
 * value fits n; a value over n characters is LOAD_COL's FALLBACK
 */
static void
test_varchar_keys(void)
{
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	uint16_t	key_outs[1] = {0};
	XpuAggSpec	spec = {1, key_outs, 1, aggs};
	int64_t    *ix = malloc(ROWS * sizeof(int64_t));
	Dict		d;

	dict_make(&d, VALUES, NVALUES);
	random_indices(ix, ROWS, NVALUES, 3, 0);
	for (int scale = 5; scale <= 40; scale += 35)
	{
		XpuProgram *p = loads_program_n(1, scale);
		XpuError	err = {0};
		XpuAggTable *t = xpu_agg_table_create(p, &spec, &err);
		const XpuColumnData *dict_cols[1];
		uint8_t		skip[1];
		Bound		b;
		int			rc;

		bound_make(&b, &d, ARROW_TYPE_INT8, ix, p);
		bound_bind(&b);
		xpu_cpu_dict_outs(p, &b.chunk, dict_cols);
		xpu_agg_table_dict_skip(t, 1, dict_cols, skip);
		rc = xpu_cpu_exec_skip(p, &b.chunk, &b.r, b.ws, &b.err, NULL, skip);
		if (scale == 5)
			tap_ok(rc == XPU_ERR_FALLBACK && skip[0] == 1,
				   "varchar(5) over values of 31 characters: FALLBACK, not the indices");
		else
		{
			/* 8 keys: "AIR" twice in the dictionary, NULL value and index one group */
			int			ok = rc == XPU_OK && xpu_agg_table_update_dict(t, &b.r, dict_cols, &err);

			tap_ok(ok && skip[0] == 1 && xpu_agg_table_ngroups(t) == NVALUES - 1,
				   "varchar(40): every value fits, grouped on the indices (%lld groups)",
				   (long long) xpu_agg_table_ngroups(t));
		}
		bound_free(&b);
		xpu_agg_table_free(t);
		free(p);
	}
	dict_free(&d);
	free(ix);
}

/* every index type through the three loads */
static void
test_loads(void)
{
	static const ArrowTypeId types[8] = {ARROW_TYPE_INT8, ARROW_TYPE_INT16, ARROW_TYPE_INT32,
		ARROW_TYPE_INT64, ARROW_TYPE_UINT8, ARROW_TYPE_UINT16, ARROW_TYPE_UINT32,
	ARROW_TYPE_UINT64};
	int64_t    *ix = malloc(ROWS * sizeof(int64_t));
	Dict		d;
	XpuProgram *lp = loads_program(1),
			   *qp = qual_program("AIR");

	dict_make(&d, VALUES, NVALUES);
	random_indices(ix, ROWS, NVALUES, 1, 17);
	for (int t = 0; t < 8; t++)
	{
		Bound		b;

		bound_make(&b, &d, types[t], ix, qp);
		bound_bind(&b);
		tap_ok(xpu_is_dict(&b.cd) &&
			   b.cd.dict_width == (types[t] >= ARROW_TYPE_UINT8 ? -1 : 1) * type_width(types[t]),
			   "type %d: bound as a dictionary of %d-byte indices", t, type_width(types[t]));
		tap_ok(xpu_cpu_exec(lp, &b.chunk, &b.r, b.ws, &b.err) == XPU_OK &&
			   output_is(&b.r, 0, &d, ix, ROWS, NULL), "type %d: loads-only path", t);
		memset(b.r.mask, 0, ROWS);
		tap_ok(xpu_row_exec(lp, &b.chunk, &b.r, &b.err) == XPU_OK &&
			   output_is(&b.r, 0, &d, ix, ROWS, NULL), "type %d: per-row LOAD_COL", t);
		tap_ok(xpu_cpu_exec(qp, &b.chunk, &b.r, b.ws, &b.err) == XPU_OK &&
			   output_is(&b.r, 0, &d, ix, ROWS, "AIR"), "type %d: qual = 'AIR' in tiles", t);
		tap_ok(xpu_row_exec(qp, &b.chunk, &b.r, &b.err) == XPU_OK &&
			   output_is(&b.r, 0, &d, ix, ROWS, "AIR"), "type %d: qual = 'AIR' per row", t);
		bound_free(&b);
	}
	/* an index outside the dictionary (9), and a negative one: errors */
	for (int bad = 0; bad < 2; bad++)
	{
		Bound		b;
		const char *which = bad ? "-2" : "9";

		ix[1234] = bad ? -2 : NVALUES;
		bound_make(&b, &d, ARROW_TYPE_INT8, ix, qp);
		if (bad)
			((int8_t *) b.c.values)[1234] = -2;	/* valid, negative */
		b.c.validity[1234 / 8] |= 1 << (1234 % 8);
		bound_bind(&b);
		tap_ok(xpu_cpu_exec(lp, &b.chunk, &b.r, b.ws, &b.err) == XPU_ERR_INVALID_ARGUMENT,
			   "index %s: loads-only path errs", which);
		memset(&b.err, 0, sizeof(b.err));
		tap_ok(xpu_cpu_exec(qp, &b.chunk, &b.r, b.ws, &b.err) == XPU_ERR_INVALID_ARGUMENT,
			   "index %s: tiles err", which);
		memset(&b.err, 0, sizeof(b.err));
		tap_ok(xpu_row_exec(lp, &b.chunk, &b.r, &b.err) == XPU_ERR_INVALID_ARGUMENT,
			   "index %s: per-row LOAD_COL errs (%s)", which, b.err.message);
		ix[1234] = 0;
		bound_free(&b);
	}
	/* a descriptor whose dict_* fields its maker never set is no dictionary */
	{
		XpuColumnData g;

		memset(&g, 0xA5, sizeof(g));
		tap_ok(!xpu_is_dict(&g), "garbage in dict_* is no dictionary");
	}
	dict_free(&d);
	free(lp);
	free(qp);
	free(ix);
}

static int
cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *) a, *(char *const *) b);
}

/* appends t's groups (key bytes in hex, count(*)) to lines[*n ..] */
static void
add_lines(const XpuAggTable *t, char **lines, int64_t *n)
{
	for (int64_t g = 0; g < xpu_agg_table_ngroups(t); g++)
	{
		const uint8_t *key;
		uint32_t	klen;
		const XpuAggState *s;
		char	   *l;

		xpu_agg_table_group(t, g, &key, &klen, &s);
		l = malloc(2 * (size_t) klen + 32);
		for (uint32_t i = 0; i < klen; i++)
			sprintf(l + 2 * i, "%02x", key[i]);
		sprintf(l + 2 * klen, " %lld", (long long) s[0].count);
		lines[(*n)++] = l;
	}
}

/* a table's groups as sorted lines (a table that spilled merged by partitions) */
static char **
group_lines(const XpuProgram *prog, const XpuAggSpec *spec, const XpuAggTable *t, int64_t *n)
{
	char	  **lines = calloc(2 * ROWS + 1, sizeof(char *));
	XpuError	err = {0};

	*n = 0;
	if (!xpu_agg_table_spilled(t))
		add_lines(t, lines, n);
	else
		for (int p = 0; p < XPU_AGG_PARTS; p++)
		{
			XpuAggTable *d = xpu_agg_table_create(prog, spec, &err);

			if (d == NULL || !xpu_agg_table_merge_part(d, t, p, XPU_AGG_PARTS, &err))
				tap_diag("merge: %s", err.message);
			else
				add_lines(d, lines, n);
			xpu_agg_table_free(d);
		}
	qsort(lines, *n, sizeof(char *), cmp_line);
	return lines;
}

static int
same_lines(char **a, int64_t na, char **b, int64_t nb)
{
	int			same = na == nb;

	for (int64_t i = 0; same && i < na; i++)
		same = strcmp(a[i], b[i]) == 0;
	if (!same)
		tap_diag("groups differ: %lld and %lld, first %s / %s", (long long) na,
				 (long long) nb, na ? a[0] : "-", nb ? b[0] : "-");
	for (int64_t i = 0; i < na; i++)
		free(a[i]);
	for (int64_t i = 0; i < nb; i++)
		free(b[i]);
	free(a);
	free(b);
	return same;
}

/*
 * GROUP BY the first nkeys of three dictionary columns (dictionaries a, b
 * for the first two, the third over a), count(*), over slices of 1000
 * rows: the indices (update_dict, keys left unloaded) against the values
 * (update over the loaded values); qual: rows i % 5 == 2 do not pass;
 * second: the last two slices read a second dictionary (another version);
 * spill: the tables' spill limit
 */
static int
group_case(int nkeys, int qual, int second, int64_t spill)
{
	static const char *const B[] = {"1-URGENT", "2-HIGH", NULL, "", "5-LOW"};
	static const char *const A2[] = {"MAIL", "AIR", "x", NULL, "AIR", "y", "z"};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	uint16_t	key_outs[3] = {0, 1, 2};
	XpuAggSpec	spec = {nkeys, key_outs, 1, aggs};
	XpuProgram *prog = loads_program(nkeys);
	Dict		da, db, da2;
	int64_t    *ix[3];
	Col			c[3], c2[3];
	XpuError	err = {0};
	XpuAggTable *ti = xpu_agg_table_create(prog, &spec, &err),
			   *tv = xpu_agg_table_create(prog, &spec, &err);
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuResult	r = result_new(1000, nkeys);
	const XpuColumnData *dict_cols[3];
	uint8_t		skip[3];
	int64_t		ni, nv;
	int			ok = 1;

	dict_make(&da, VALUES, NVALUES);
	dict_make(&db, B, 5);
	dict_make(&da2, A2, 7);
	for (int k = 0; k < 3; k++)
	{
		ix[k] = malloc(ROWS * sizeof(int64_t));
		random_indices(ix[k], ROWS, k == 1 ? 5 : 7, 10 + k, 13 + k);
		col_make(&c[k], k == 1 ? &db : &da, k == 1 ? ARROW_TYPE_INT16 : ARROW_TYPE_INT8,
				 ix[k], ROWS);
		col_make(&c2[k], k == 1 ? &db : &da2, ARROW_TYPE_UINT32, ix[k], ROWS);
	}
	xpu_agg_table_set_spill(ti, spill);
	xpu_agg_table_set_spill(tv, spill);
	for (int64_t r0 = 0; ok && r0 < ROWS; r0 += 1000)
	{
		XpuColumnData cd[3];
		XpuChunk	chunk;
		int			nd;

		memset(cd, 0, sizeof(cd));
		for (int k = 0; k < nkeys; k++)
		{
			xpu_column_bind(&cd[k], second && r0 >= 3000 ? &c2[k].arr : &c[k].arr, NULL, k);
			cd[k].offset = r0;
		}
		chunk = (XpuChunk) {1000, nkeys, 0, cd};
		/* by the values: everything loaded, no dictionary columns given */
		ok &= xpu_cpu_exec(prog, &chunk, &r, ws, &err) == XPU_OK;
		for (int i = 0; qual && i < 1000; i++)
			r.mask[i] = (r0 + i) % 5 != 2;
		ok &= xpu_agg_table_update(tv, &r, &err);
		/* by the indices, the keys left unloaded (garbage there) */
		memset(r.values, 0x5A, (size_t) 1000 * nkeys * sizeof(XpuValue));
		memset(r.nulls, 0x5A, (size_t) 1000 * nkeys);
		nd = xpu_cpu_dict_outs(prog, &chunk, dict_cols);
		ok &= nd == nkeys;
		ok &= xpu_agg_table_dict_skip(ti, nkeys, dict_cols, skip) == nkeys;
		ok &= xpu_cpu_exec_skip(prog, &chunk, &r, ws, &err, NULL, skip) == XPU_OK;
		for (int i = 0; qual && i < 1000; i++)
			r.mask[i] = (r0 + i) % 5 != 2;
		ok &= xpu_agg_table_update_dict(ti, &r, dict_cols, &err);
		if (!ok)
			tap_diag("slice %lld: %s", (long long) r0, err.message);
	}
	if (ok)
	{
		char	  **li = group_lines(prog, &spec, ti, &ni);
		char	  **lv = group_lines(prog, &spec, tv, &nv);

		ok = same_lines(li, ni, lv, nv) && ni > 1;
	}
	xpu_agg_table_free(ti);
	xpu_agg_table_free(tv);
	for (int k = 0; k < 3; k++)
	{
		col_free(&c[k]);
		col_free(&c2[k]);
		free(ix[k]);
	}
	dict_free(&da);
	dict_free(&db);
	dict_free(&da2);
	result_free(&r);
	free(ws);
	free(prog);
	return ok;
}

int
main(void)
{
	test_loads();
	test_varchar_keys();
	tap_ok(group_case(1, 0, 0, 0), "one key: groups by the indices are the values' groups");
	tap_ok(group_case(2, 0, 0, 0), "two keys");
	tap_ok(group_case(2, 1, 0, 0), "two keys, rows that do not pass");
	tap_ok(group_case(1, 1, 1, 0), "one key, a second dictionary version");
	tap_ok(group_case(2, 0, 1, 0), "two keys, a second dictionary version");
	tap_ok(group_case(2, 1, 1, 6), "two keys, a table that spills");
	tap_ok(group_case(3, 1, 1, 0), "three keys: the hash probe, values from the dictionaries");
	return tap_done();
}
