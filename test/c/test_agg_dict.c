/*
 * test_agg_dict.c
 *		Unit tests of the few-values shortcut of the CPU engine's group
 *		lookup (src/xpu/xpu_agg_dict.h, KeyDict): text keys packed as an
 *		Arrow column packs them (one buffer of exactly their bytes, so that
 *		AddressSanitizer catches a load past it), in results of 4096 rows
 *		as the service's slices are, against groups counted apart from the
 *		table (the rows' encoded keys, sorted).  Cases: two text keys of few
 *		values with NULLs, '' beside NULL, texts of 0 to 16 bytes (16: the
 *		longest the shortcut takes), rows that do not pass (the row list)
 *		and slices where all pass (no row list); a text longer than 16
 *		bytes now and then (its blocks take the probe, the shortcut stays);
 *		a column whose values grow past the shortcut's 255 in the middle of
 *		a slice (it gives up, the answer stays right); a text key beside an
 *		int8 key; one text key; the same without NULLs, where the texts of
 *		a block are packed (dict_packed_ids), and laid out from the last
 *		row, where they are not; the tables merged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "xpu_agg.h"

enum
{
	SLICE = 4096,
	MAX_KEY = 64
};

static char errbuf[256];

static XpuProgram *
outs_program(const XpuType *types, int n)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;

	for (int i = 0; i < n; i++)
		xpu_add_output(b, xpu_add_reg(b, types[i], 0));
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (p == NULL)
		tap_diag("builder: %s", errbuf);
	return p;
}

/* the text of value number i of a column (its few values, or many: v%d) */
typedef const char *(*ValueFn) (int64_t row, int *is_null);

typedef struct Case
{
	const char *name;
	int			nkeys;
	XpuType		types[2];
	ValueFn		fn[2];			/* text keys */
	int64_t		rows;
	int			skip_mod;		/* rows r % skip_mod == 1 do not pass (0: all pass) */
	int			want_on;		/* the shortcut on at the end (1) or given up (-1) */
	int			no_nulls;		/* no NULL (the packed texts' loop) */
	int			backwards;		/* each slice's texts in its buffer from the last row */
} Case;

static const char *const modes[] = {"TRUCK", "AIR", "REG AIR", "MAIL", "FOB", "RAIL", "SHIP",
	"", "exactly-16-bytes"};

/* few values, NULLs, '' */
static const char *
few_a(int64_t r, int *is_null)
{
	*is_null = r % 97 == 3;
	return modes[(r * 7 + r / 13) % 9];
}

static const char *const prios[] = {"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECI", "5-LOW", "a",
	"ab", "abcdefghijklmno"};

static const char *
few_b(int64_t r, int *is_null)
{
	*is_null = r % 89 == 0;
	return prios[(r * 5 + r / 7) % 8];
}

/* few values and, now and then, a text longer than 16 bytes */
static const char *
few_long(int64_t r, int *is_null)
{
	*is_null = 0;
	if (r % 5000 == 17)
		return r % 2 ? "a text longer than sixteen bytes" : "seventeen bytes!!";
	return prios[r % 5];
}

/* few values, and runs of 100 '' (over the ends of blocks: their texts have no byte) */
static const char *
empty_runs(int64_t r, int *is_null)
{
	*is_null = r % 89 == 0;
	return r % 300 >= 200 ? "" : prios[r % 5];
}

/* few values, then (from row 10000, in the middle of a slice) 400 values */
static const char *
grows(int64_t r, int *is_null)
{
	static char buf[32];

	*is_null = r % 101 == 0;
	if (r < 10000)
		return modes[r % 7];
	snprintf(buf, sizeof(buf), "v%03d", (int) ((r * 31) % 400));
	return buf;
}

typedef struct KeyRef
{
	uint8_t		b[MAX_KEY];
	uint32_t	len;
	int64_t		count;
} KeyRef;

static int
cmp_ref(const void *a, const void *b)
{
	const KeyRef *x = a, *y = b;
	int			c = memcmp(x->b, y->b, x->len < y->len ? x->len : y->len);

	return c != 0 ? c : (x->len > y->len) - (x->len < y->len);
}

/*
 * one slice of rows row0 .. row0 + n - 1 of case c into res, the texts of
 * each key packed into buf[k] (exactly their bytes)
 */
static void
fill_slice(const Case *c, int64_t row0, int n, XpuResult *res, char **buf)
{
	for (int k = 0; k < c->nkeys; k++)
	{
		size_t		size = 0,
					off = 0;
		int			isnull;

		if (c->types[k] != XPU_T_TEXT)
		{
			for (int j = 0; j < n; j++)
			{
				res->values[k * n + j].i = (row0 + j) % 3 - 1;
				res->nulls[k * n + j] = (row0 + j) % 50 == 7;
			}
			continue;
		}
		for (int j = 0; j < n; j++)
			size += strlen(c->fn[k] (row0 + j, &isnull));
		free(buf[k]);
		buf[k] = malloc(size ? size : 1);
		for (int i = 0; i < n; i++)
		{
			int			j = c->backwards ? n - 1 - i : i;
			const char *s = c->fn[k] (row0 + j, &isnull);
			size_t		len = strlen(s);

			memcpy(buf[k] + off, s, len);
			res->values[k * n + j].t = (XpuText) {buf[k] + off, (int32_t) len};
			res->nulls[k * n + j] = (uint8_t) (isnull && !c->no_nulls);
			off += len;
		}
	}
	for (int j = 0; j < n; j++)
		res->mask[j] = c->skip_mod == 0 || (row0 + j) % c->skip_mod != 1;
}

/* runs case c into a table over slices; checks its groups against the rows' keys */
static XpuAggTable *
run_case(const Case *c, XpuProgram **progp)
{
	static const uint16_t key_outs[2] = {0, 1};
	static const XpuAggDesc aggs[1] = {{XPU_AGG_COUNT_STAR, 0, 0, 0}};
	XpuAggSpec	spec = {c->nkeys, key_outs, 1, aggs};
	XpuProgram *prog = outs_program(c->types, c->nkeys);
	XpuError	err = {0};
	XpuAggTable *t = xpu_agg_table_create(prog, &spec, &err);
	KeyRef	   *ref = calloc(c->rows, sizeof(KeyRef));
	int64_t		nref = 0, nd = 0, hits = 0;
	char	   *buf[2] = {NULL, NULL};
	int			ok = t != NULL, wrong = 0, on;

	for (int64_t row0 = 0; ok && row0 < c->rows; row0 += SLICE)
	{
		int			n = c->rows - row0 < SLICE ? (int) (c->rows - row0) : SLICE;
		XpuResult	res = {n, malloc(n), calloc(n * 2, sizeof(XpuValue)), calloc(n * 2, 1)};

		fill_slice(c, row0, n, &res, buf);
		ok &= xpu_agg_table_update(t, &res, &err);
		for (int j = 0; j < n; j++)
			if (res.mask[j])
			{
				ref[nref].len = (uint32_t) xpu_agg_key_encode(prog, &spec, &res, j, ref[nref].b,
															  MAX_KEY);
				ref[nref++].count = 1;
			}
		free(res.mask);
		free(res.values);
		free(res.nulls);
	}
	qsort(ref, nref, sizeof(KeyRef), cmp_ref);
	for (int64_t i = 0; i < nref; i++)
	{
		if (nd > 0 && cmp_ref(&ref[nd - 1], &ref[i]) == 0)
			ref[nd - 1].count++;
		else
			ref[nd++] = ref[i];
	}
	for (int64_t g = 0; ok && g < xpu_agg_table_ngroups(t); g++)
	{
		KeyRef		one = {{0}};
		const uint8_t *key;
		const XpuAggState *s;
		KeyRef	   *hit;

		xpu_agg_table_group(t, g, &key, &one.len, &s);
		memcpy(one.b, key, one.len < MAX_KEY ? one.len : MAX_KEY);
		hit = bsearch(&one, ref, nd, sizeof(KeyRef), cmp_ref);
		wrong += hit == NULL || hit->count != s[0].count;
	}
	on = xpu_agg_table_shortcut(t, &hits);
	tap_ok(ok && wrong == 0 && xpu_agg_table_ngroups(t) == nd,
		   "%s: %lld groups for %lld distinct keys of %lld passing rows, %d wrong", c->name,
		   (long long) xpu_agg_table_ngroups(t), (long long) nd, (long long) nref, wrong);
	tap_ok(on == c->want_on && hits > 0, "%s: the shortcut %s (state %d, %lld blocks found)",
		   c->name, c->want_on > 0 ? "on" : "gave up", on, (long long) hits);
	free(buf[0]);
	free(buf[1]);
	free(ref);
	*progp = prog;
	return t;
}

int
main(void)
{
	static const Case cases[] = {
		{"two text keys, all pass", 2, {XPU_T_TEXT, XPU_T_TEXT}, {few_a, few_b}, 50000, 0, 1},
		{"two text keys, rows that do not pass", 2, {XPU_T_TEXT, XPU_T_TEXT}, {few_a, few_b},
		30000, 7, 1},
		{"one text key", 1, {XPU_T_TEXT}, {few_b}, 20000, 0, 1},
		{"text and int8 keys", 2, {XPU_T_TEXT, XPU_T_INT8}, {few_a, NULL}, 20000, 5, 1},
		{"texts longer than 16 bytes now and then", 2, {XPU_T_TEXT, XPU_T_TEXT},
		{few_long, few_a}, 40000, 0, 1},
		{"values grow past the shortcut mid-slice", 2, {XPU_T_TEXT, XPU_T_TEXT}, {few_b, grows},
		30000, 0, -1},
		{"two text keys, no NULL (packed texts)", 2, {XPU_T_TEXT, XPU_T_TEXT}, {few_a, few_b},
		50000, 0, 1, 1},
		{"packed texts, rows that do not pass", 2, {XPU_T_TEXT, XPU_T_TEXT}, {few_b, few_a},
		30000, 3, 1, 1},
		{"packed texts longer than 16 bytes now and then", 2, {XPU_T_TEXT, XPU_T_TEXT},
		{few_a, few_long}, 40000, 0, 1, 1},
		{"packed values grow past the shortcut mid-slice", 2, {XPU_T_TEXT, XPU_T_TEXT},
		{grows, few_a}, 30000, 0, -1, 1},
		{"packed texts, runs of ''", 2, {XPU_T_TEXT, XPU_T_TEXT}, {empty_runs, few_a},
		30000, 0, 1, 1},
		{"runs of '' beside NULLs", 1, {XPU_T_TEXT}, {empty_runs}, 30000, 0, 1},
		{"texts laid out from the last row (not packed)", 2, {XPU_T_TEXT, XPU_T_TEXT},
		{few_a, few_b}, 30000, 0, 1, 1, 1},
	};
	XpuProgram *prog[2];
	XpuAggTable *t[2];
	XpuError	err = {0};

	for (int i = 0; i < (int) (sizeof(cases) / sizeof(cases[0])); i++)
	{
		XpuProgram *p;

		xpu_agg_table_free(run_case(&cases[i], &p));
		free(p);
	}

	/* two tables of the same rows merged: every group's count doubled */
	t[0] = run_case(&cases[0], &prog[0]);
	t[1] = run_case(&cases[0], &prog[1]);
	{
		int64_t		before = xpu_agg_table_ngroups(t[0]),
					sum0 = 0,
					sum1 = 0;
		int			ok = xpu_agg_table_merge(t[0], t[1], &err);

		for (int i = 0; i < 2; i++)
			for (int64_t g = 0; g < xpu_agg_table_ngroups(t[i]); g++)
			{
				const uint8_t *key;
				uint32_t	len;
				const XpuAggState *s;

				xpu_agg_table_group(t[i], g, &key, &len, &s);
				*(i == 0 ? &sum0 : &sum1) += s[0].count;
			}
		tap_ok(ok && xpu_agg_table_ngroups(t[0]) == before && sum0 == 2 * sum1,
			   "merged tables: %lld groups, %lld rows (twice %lld)",
			   (long long) xpu_agg_table_ngroups(t[0]), (long long) sum0, (long long) sum1);
	}
	for (int i = 0; i < 2; i++)
	{
		xpu_agg_table_free(t[i]);
		free(prog[i]);
	}
	return tap_done();
}
