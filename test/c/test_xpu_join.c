/*
 * test_xpu_join.c
 *		Unit tests of a hash join's inner table and its probe (src/xpu:
 *		xpu_join.h, xpu_join.c): for every join type (INNER, LEFT, SEMI,
 *		ANTI, RIGHT, FULL), with and without a join qual, the rows the probe
 *		yields equal as a multiset those of a nested-loop join written from
 *		PostgreSQL's equality of each type (join_testlib.h), over random
 *		data with NULL keys, duplicates, empty sides, composite, text, float,
 *		int8-extreme and numeric keys of different scales; the payload the
 *		probe reads back equals the inner rows'; the dense form is chosen
 *		where its rule holds and not elsewhere; a table copied to another
 *		address is probed alike (position independence); keys said unique
 *		(spec.unique_keys) that repeat give the hash form; limits and bad
 *		specs fail with their codes; the validator refuses broken tables and
 *		never lets a probe read out of bounds (ASan).
 */
#include <stdio.h>

#include "tap.h"
#include "join_testlib.h"

static const int jointypes[] = {XPU_JOIN_INNER, XPU_JOIN_LEFT, XPU_JOIN_SEMI,
XPU_JOIN_ANTI, XPU_JOIN_RIGHT, XPU_JOIN_FULL};
static const char *const jointype_names[] = {"", "inner", "left", "semi", "anti", "right", "full"};

/* ---------------------------------------------------------------- building */

/* images attached in place (build_as), freed once the table is written */
#define MAX_KEPT	16
static uint64_t *kept[MAX_KEPT];
static uint64_t kept_len[MAX_KEPT];
static int	n_kept;

/*
 * share: batch rows added to a builder of their own, whose image is
 * attached to b in place (as each parallel worker of an inner scan builds
 * its share; the image kept until the table is written)
 */
static int
add_share(XpuJoinBuilder *b, const XpuJoinSpec *spec, const JtRows *c, XpuError *err)
{
	XpuJoinBuilder *own = xpu_join_builder_create(spec, err);
	uint64_t	len;
	uint64_t   *image;

	if (n_kept == MAX_KEPT)
		abort();				/* more shares than build_as makes */
	if (own == NULL)
		return 0;
	if (!xpu_join_builder_add(own, c->n, c->keys, c->key_nulls, c->pay, c->pay_nulls, err))
	{
		xpu_join_builder_free(own);
		return 0;
	}
	len = xpu_join_builder_image_len(own);
	image = (uint64_t *) malloc((size_t) len);
	xpu_join_builder_image(own, image);
	xpu_join_builder_free(own);
	kept[n_kept] = image;
	kept_len[n_kept++] = len;
	return xpu_join_builder_attach(b, image, len, err);
}

/* the attached images let go: poisoned first (the table must not point into them) */
static void
free_kept(void)
{
	for (int i = 0; i < n_kept; i++)
	{
		memset(kept[i], 0xA5, (size_t) kept_len[i]);
		free(kept[i]);
	}
	n_kept = 0;
}

/*
 * the table of inner's rows, added in batches calls (shares: each batch
 * through add_share); text payloads are given from copies freed right
 * after each call (the table must copy them)
 */
static XpuJoinTable *
build_as(const XpuJoinSpec *spec, const JtRows *inner, int batches, int shares, XpuError *err)
{
	XpuJoinBuilder *b;
	XpuJoinTable *t;
	int			start = 0;

	memset(err, 0, sizeof(*err));
	if ((b = xpu_join_builder_create(spec, err)) == NULL)
		return NULL;
	for (int part = 0; part < batches; part++)
	{
		int			end = part == batches - 1 ? inner->n : inner->n * (part + 1) / batches;
		int			n = end - start;
		JtRows		c;
		char	  **copies = (char **) malloc(sizeof(char *) * ((size_t) n * spec->n_pay + 1));
		int			n_copies = 0;
		int			ok;

		jt_rows_alloc(&c, n, spec->n_keys, spec->n_pay);
		for (int k = 0; k < spec->n_keys; k++)
			for (int i = 0; i < n; i++)
			{
				c.keys[k * n + i] = inner->keys[k * inner->n + start + i];
				c.key_nulls[k * n + i] = inner->key_nulls[k * inner->n + start + i];
			}
		for (int p = 0; p < spec->n_pay; p++)
			for (int i = 0; i < n; i++)
			{
				XpuValue   *v = &c.pay[p * n + i];

				*v = inner->pay[p * inner->n + start + i];
				c.pay_nulls[p * n + i] = inner->pay_nulls[p * inner->n + start + i];
				if (spec->pay_types[p] == XPU_T_TEXT && !c.pay_nulls[p * n + i])
				{
					char	   *s = (char *) malloc((size_t) v->t.len + 1);

					memcpy(s, v->t.p, (size_t) v->t.len);
					v->t.p = s;
					copies[n_copies++] = s;
				}
			}
		c.n = n;
		ok = shares ? add_share(b, spec, &c, err) :
			xpu_join_builder_add(b, n, c.keys, c.key_nulls, c.pay, c.pay_nulls, err);
		for (int i = 0; i < n_copies; i++)
			free(copies[i]);
		free(copies);
		jt_rows_free(&c);
		if (!ok)
		{
			xpu_join_builder_free(b);
			free_kept();
			return NULL;
		}
		start = end;
	}
	t = xpu_join_builder_finish(b, err);
	xpu_join_builder_free(b);
	free_kept();
	return t;
}

static XpuJoinTable *
build(const XpuJoinSpec *spec, const JtRows *inner, int batches, XpuError *err)
{
	return build_as(spec, inner, batches, 0, err);
}

/* ---------------------------------------------------------------- probing */

static int
payload_equal(int type, const XpuValue *a, const XpuValue *b)
{
	switch (type)
	{
		case XPU_T_TEXT:
			return a->t.len == b->t.len && memcmp(a->t.p, b->t.p, (size_t) a->t.len) == 0;
		case XPU_T_NUMERIC:
			return a->n == b->n;
		case XPU_T_INTERVAL:
			return a->iv.us == b->iv.us && a->iv.days == b->iv.days &&
				a->iv.months == b->iv.months;
		case XPU_T_FLOAT4:
			return memcmp(&a->f4, &b->f4, 4) == 0;
		case XPU_T_FLOAT8:
			return memcmp(&a->f8, &b->f8, 8) == 0;
		default:
			return a->i == b->i;
	}
}

/* does the payload the table gives for inner row r (-1: all NULL) equal inner's */
static int
payload_ok(const XpuJoinTable *t, const XpuJoinSpec *spec, const JtRows *inner, int32_t r)
{
	XpuValue	vals[XPU_JOIN_MAX_PAYLOAD];
	uint8_t		nulls[XPU_JOIN_MAX_PAYLOAD];

	xpu_join_payload_row(t, r, vals, nulls);
	for (int c = 0; c < spec->n_pay; c++)
	{
		if (r < 0)
		{
			if (!nulls[c])
				return 0;
			continue;
		}
		if (nulls[c] != inner->pay_nulls[c * inner->n + r])
			return 0;
		if (!nulls[c] && !payload_equal(spec->pay_types[c], &vals[c],
										&inner->pay[c * inner->n + r]))
			return 0;
	}
	return 1;
}

/*
 * the rows of jointype over outer and t's inner rows into out, with
 * jt_qual when quals (the begin/accept/advance form), else by
 * xpu_join_emit; RIGHT/FULL add the rows their matched flags leave
 * unmarked.  *pay_bad counts output rows whose payload is wrong.  ids:
 * the inner row number of each table row for the qual (NULL: the same).
 */
static void
probe(const XpuJoinTable *t, const XpuJoinSpec *spec, const JtRows *inner,
	  const JtRows *outer, int jointype, int quals, const int32_t *ids, JtPairs *out,
	  int *pay_bad)
{
	uint32_t   *matched = (uint32_t *) calloc(xpu_join_matched_words(t->n_rows) + 1, 4);

	for (int o = 0; o < outer->n; o++)
	{
		XpuValue	vals[XPU_JOIN_MAX_KEYS];
		uint8_t		nulls[XPU_JOIN_MAX_KEYS];
		XpuJoinCursor c;
		int32_t		r;

		jt_outer_keys(spec, outer, o, vals, nulls);
		xpu_join_begin(t, &c, jointype, vals, nulls);
		if (quals)
		{
			for (; c.row >= 0; xpu_join_advance(t, &c))
				if (jt_qual(o, ids ? ids[c.row] : c.row) && xpu_join_accept(&c, matched))
				{
					jt_pair(out, o, c.row);
					*pay_bad += !payload_ok(t, spec, inner, c.row);
				}
			if (xpu_join_unmatched(&c))
			{
				jt_pair(out, o, -1);
				*pay_bad += !payload_ok(t, spec, inner, -1);
			}
			continue;
		}
		while (xpu_join_emit(t, &c, matched, &r))
		{
			jt_pair(out, o, jointype == XPU_JOIN_ANTI ? -1 : r);
			*pay_bad += !payload_ok(t, spec, inner, r);
		}
	}
	if (jointype == XPU_JOIN_RIGHT || jointype == XPU_JOIN_FULL)
		for (uint32_t r = 0; r < t->n_rows; r++)
			if (!xpu_join_marked(matched, (int32_t) r))
				jt_pair(out, -1, (int32_t) r);
	free(matched);
}

#define N_JOINTYPES	((int) (sizeof(jointypes) / sizeof(jointypes[0])))

/* the nested loop's rows of every join type, without and with the qual */
typedef struct Oracle
{
	JtPairs		want[N_JOINTYPES][2];
} Oracle;

static void
oracle_make(Oracle *or, const XpuJoinSpec *spec, const JtRows *inner, const JtRows *outer)
{
	memset(or, 0, sizeof(*or));
	for (int j = 0; j < N_JOINTYPES; j++)
		for (int quals = 0; quals <= 1; quals++)
		{
			jt_nested_loop(spec, jointypes[j], quals, outer, inner, &or->want[j][quals]);
			/* sorted once: the probe's rows are sorted to be compared */
			if (or->want[j][quals].n > 0)
				qsort(or->want[j][quals].p, (size_t) or->want[j][quals].n, 8, jt_pair_cmp);
		}
}

static void
oracle_free(Oracle *or)
{
	for (int j = 0; j < N_JOINTYPES; j++)
		for (int quals = 0; quals <= 1; quals++)
			free(or->want[j][quals].p);
}

/* does every join type, with and without the qual, give the nested loop's rows */
static int
all_types_agree(const XpuJoinTable *t, const XpuJoinSpec *spec, const JtRows *inner,
				const JtRows *outer, Oracle *or, const char *name, const char *where)
{
	int			all = 1;

	for (int j = 0; j < N_JOINTYPES; j++)
	{
		int			ok = 1;

		for (int quals = 0; quals <= 1; quals++)
		{
			JtPairs		got = {0, 0, NULL};
			JtPairs    *want = &or->want[j][quals];
			int			pay_bad = 0;

			probe(t, spec, inner, outer, jointypes[j], quals, NULL, &got, &pay_bad);
			if (!jt_pairs_same(&got, want) || pay_bad)
			{
				ok = 0;
				tap_diag("%s %s quals %d: %d rows, nested loop %d, %d bad payloads",
						 name, jointype_names[jointypes[j]], quals, got.n, want->n, pay_bad);
			}
			free(got.p);
		}
		tap_ok(ok, "%s: %s join equals the nested loop (%d and %d rows with the qual, %s)",
			   name, jointype_names[jointypes[j]], or->want[j][0].n, or->want[j][1].n, where);
		all &= ok;
	}
	return all;
}

/*
 * does xpu_join_first_batch give every outer row the matches
 * xpu_join_first/next give: over runs of 100 outer rows (groups end inside
 * a run), all of a run's rows, then every third through a selection vector;
 * and do its cursors, begun for LEFT, emit what xpu_join_begin's emit
 */
static int
batch_agrees(const XpuJoinTable *t, const XpuJoinSpec *spec, const JtRows *outer)
{
	XpuJoinCursor *curs = (XpuJoinCursor *) malloc(sizeof(XpuJoinCursor) * 100);
	int32_t		first[100];
	uint16_t	sel[100];
	int			ok = 1;

	for (int from = 0; from < outer->n; from += 100)
	{
		int			n = outer->n - from < 100 ? outer->n - from : 100;
		int			n_sel = 0;
		const XpuValue *keys[XPU_JOIN_MAX_KEYS];
		const uint8_t *nulls[XPU_JOIN_MAX_KEYS];

		for (int k = 0; k < spec->n_keys; k++)
		{
			keys[k] = outer->keys + k * outer->n + from;
			nulls[k] = outer->key_nulls + k * outer->n + from;
		}
		for (int i = 0; i < n; i += 3)
			sel[n_sel++] = (uint16_t) i;
		for (int pass = 0; pass < 2; pass++)
		{
			int			count = pass == 0 ? n : n_sel;

			xpu_join_first_batch(t, pass == 0 ? XPU_JOIN_INNER : XPU_JOIN_LEFT, count,
								 pass == 0 ? NULL : sel, keys, nulls, curs, first);
			for (int i = 0; i < count; i++)
			{
				XpuValue	vals[XPU_JOIN_MAX_KEYS];
				uint8_t		nl[XPU_JOIN_MAX_KEYS];
				XpuJoinCursor c;
				int32_t		a,
							b = first[i];

				jt_outer_keys(spec, outer, from + (pass == 0 ? i : sel[i]), vals, nl);
				if (pass == 1)
				{
					int			more_a,
								more_b;

					/* LEFT: the same rows, the NULL-extended one too */
					xpu_join_begin(t, &c, XPU_JOIN_LEFT, vals, nl);
					do
					{
						more_a = xpu_join_emit(t, &c, NULL, &a);
						more_b = xpu_join_emit(t, &curs[i], NULL, &b);
						ok &= more_a == more_b && (!more_a || a == b);
					} while (more_a && more_b);
					continue;
				}
				a = xpu_join_first(t, &c, vals, nl);
				for (;;)
				{
					ok &= a == b;
					if (a < 0 || b < 0)
						break;
					a = xpu_join_next(t, &c);
					b = xpu_join_next(t, &curs[i]);
				}
			}
		}
	}
	free(curs);
	return ok;
}

/* are the table's null_rows the inner rows with a NULL key, ascending */
static int
null_rows_ok(const XpuJoinTable *t, const XpuJoinSpec *spec, const JtRows *inner)
{
	const uint32_t *nr = (const uint32_t *) XPU_JOIN_AT(t, t->null_rows_off);
	uint32_t	j = 0;

	for (int r = 0; r < inner->n; r++)
	{
		int			has_null = 0;

		for (int k = 0; k < spec->n_keys; k++)
			has_null |= inner->key_nulls[k * inner->n + r];
		if (!has_null)
			continue;
		if (j >= t->n_null_keys || nr[j] != (uint32_t) r)
			return 0;
		j++;
	}
	return j == t->n_null_keys && t->n_keyed + t->n_null_keys == (uint32_t) inner->n;
}

/*
 * run_case: builds the table of inner (form expected: XPU_JOIN_AUTO for
 * either), checks it, probes it with outer for every join type, then copies
 * it to another address, frees the original and probes the copy
 */
static void
run_case(const char *name, const XpuJoinSpec *spec, const JtRows *inner,
		 const JtRows *outer, int expect_form)
{
	XpuError	err;
	XpuJoinTable *t = build(spec, inner, 3, &err);
	uint8_t    *space;
	XpuJoinTable *copy;
	uint64_t	len;
	Oracle		or;

	if (!tap_ok(t != NULL, "%s: the table is built", name))
	{
		tap_diag("%s", err.message);
		return;
	}
	len = t->total_len;
	tap_ok(xpu_join_table_validate(t, len, &err), "%s: %s form of %u rows (%u keyed, %llu bytes) "
		   "validates", name, t->form == XPU_JOIN_DENSE ? "dense" :
		   t->inline_key ? "hash (keys in the entries)" : "hash", t->n_rows,
		   t->n_keyed, (unsigned long long) len);
	if (t->form == XPU_JOIN_HASH)
		tap_ok(t->inline_key == xpu_join_key_inline(spec->keys, spec->n_keys) &&
			   (t->inline_key ? t->keys_len == 0 : t->keys_len > 0 || t->n_keyed == 0),
			   "%s: the entries hold the key where it is one column of 8 bytes", name);
	if (expect_form != XPU_JOIN_AUTO)
		tap_ok(t->form == expect_form, "%s: the %s form is chosen", name,
			   expect_form == XPU_JOIN_DENSE ? "dense" : "hash");
	tap_ok(null_rows_ok(t, spec, inner), "%s: rows with a NULL key are listed", name);
	{
		XpuJoinTable *shared = build_as(spec, inner, 3, 1, &err);

		tap_ok(shared != NULL && shared->total_len == len && memcmp(shared, t, (size_t) len) == 0,
			   "%s: built from three shares' images attached in place, the table is the "
			   "same bytes", name);
		free(shared);
	}
	oracle_make(&or, spec, inner, outer);
	all_types_agree(t, spec, inner, outer, &or, name, "where it was built");
	tap_ok(batch_agrees(t, spec, outer), "%s: the batch probe finds the rows' matches", name);

	/* another address, 16-byte aligned but not 64: the original is freed */
	space = (uint8_t *) malloc((size_t) len + 64);
	copy = (XpuJoinTable *) (((uintptr_t) space + 63) / 64 * 64 + 16);
	memcpy(copy, t, (size_t) len);
	memset(t, 0xA5, (size_t) len);
	free(t);
	memset(&err, 0, sizeof(err));
	tap_ok(xpu_join_table_validate(copy, len, &err), "%s: the copy validates", name);
	all_types_agree(copy, spec, inner, outer, &or, name, "copied elsewhere");
	free(space);
	oracle_free(&or);
}

/* ---------------------------------------------------------------- cases */

static XpuJoinSpec
spec_of(int n_keys, const int *types, const int *probe_types, const int *scales,
		const int *probe_scales, int n_pay, const int *pay_types)
{
	XpuJoinSpec s;

	memset(&s, 0, sizeof(s));
	s.n_keys = n_keys;
	for (int k = 0; k < n_keys && k < XPU_JOIN_MAX_KEYS; k++)
	{
		s.keys[k].type = (uint8_t) types[k];
		s.keys[k].probe_type = (uint8_t) (probe_types ? probe_types[k] : types[k]);
		s.keys[k].scale = (int16_t) (scales ? scales[k] : 0);
		s.keys[k].probe_scale = (int16_t) (probe_scales ? probe_scales[k] : s.keys[k].scale);
	}
	s.n_pay = n_pay;
	for (int c = 0; c < n_pay; c++)
		s.pay_types[c] = (uint8_t) pay_types[c];
	return s;
}

static const int std_pay[] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_NUMERIC, XPU_T_FLOAT8,
XPU_T_BOOL, XPU_T_INTERVAL, XPU_T_FLOAT4, XPU_T_DATE, XPU_T_INT2};
#define N_STD_PAY	((int) (sizeof(std_pay) / sizeof(std_pay[0])))

/* random inner and outer rows of spec from the domains, then run_case */
static void
random_case(const char *name, const XpuJoinSpec *spec, int n_inner, int n_outer,
			const JtDomain *inner_dom, const JtDomain *outer_dom, int expect_form)
{
	JtRows		inner,
				outer;

	jt_random_rows(spec, n_inner, n_outer, inner_dom, outer_dom, &inner, &outer);
	run_case(name, spec, &inner, &outer, expect_form);
	jt_rows_free(&inner);
	jt_rows_free(&outer);
}

/* one key of type on both sides, values in [base, base + range) with null_pct NULLs */
static void
one_key_case(const char *name, int type, int probe_type, int n_inner, int n_outer,
			 int range, int64_t base, int null_pct, int expect_form)
{
	int			t[1] = {type},
				pt[1] = {probe_type};
	XpuJoinSpec spec = spec_of(1, t, pt, NULL, NULL, N_STD_PAY, std_pay);
	JtDomain	di = {null_pct, range, base},
				dout = {null_pct, range + range / 4 + 2, base - range / 8 - 1};

	random_case(name, &spec, n_inner, n_outer, &di, &dout, expect_form);
}

/* inner keys base + perm(0 .. n - 1) * step, unique: dense when step <= 2 */
static void
unique_case(const char *name, int type, int64_t base, int step, int n_inner, int n_outer,
			int form, int expect_form)
{
	int			t[1] = {type};
	XpuJoinSpec spec = spec_of(1, t, NULL, NULL, NULL, N_STD_PAY, std_pay);
	JtRows		inner,
				outer;
	JtDomain	dout = {10, n_inner * step + 8, (int64_t) ((uint64_t) base - 4)};

	spec.form = form;
	jt_rows_alloc(&inner, n_inner, 1, spec.n_pay);
	jt_rows_alloc(&outer, n_outer, 1, 0);
	for (int i = 0; i < n_inner; i++)
		inner.keys[i].i = (int64_t) ((uint64_t) base + (uint64_t) i * step);
	for (int i = n_inner - 1; i > 0; i--)
	{
		int			j = (int) jt_below((uint32_t) i + 1);
		XpuValue	x = inner.keys[i];

		inner.keys[i] = inner.keys[j];
		inner.keys[j] = x;
	}
	jt_fill_keys(&outer, &spec, 1, &dout);
	/* the far ends of int8 too: a key below the least must not wrap into a slot */
	if (n_outer >= 4)
	{
		outer.keys[0].i = INT64_MIN;
		outer.keys[1].i = INT64_MAX;
		outer.keys[2].i = (int64_t) ((uint64_t) base - 1);
		outer.keys[3].i = (int64_t) ((uint64_t) base + (uint64_t) n_inner * step);
		for (int i = 0; i < 4; i++)
			outer.key_nulls[i] = 0;
	}
	jt_fill_pay(&inner, &spec);
	run_case(name, &spec, &inner, &outer, expect_form);
	jt_rows_free(&inner);
	jt_rows_free(&outer);
}

static void
test_integer_keys(void)
{
	unique_case("int4 unique 0..999", XPU_T_INT4, 0, 1, 1000, 1500, XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("int4 unique 0..999 forced hash", XPU_T_INT4, 0, 1, 1000, 1500, XPU_JOIN_HASH,
				XPU_JOIN_HASH);
	unique_case("int8 unique step 2 (range 2n - 1)", XPU_T_INT8, -700, 2, 500, 800,
				XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	/* the dense form's limits (xpu_join_dense_fits): 8 slots a row, or 262144 slots */
	unique_case("int8 unique step 8 (range 8n - 7)", XPU_T_INT8, 5, 8, 33000, 300,
				XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("int8 unique step 9 (range past 8n)", XPU_T_INT8, 5, 9, 33000, 300,
				XPU_JOIN_AUTO, XPU_JOIN_HASH);
	unique_case("int4 unique step 2647 (262054 slots for 100 rows)", XPU_T_INT4, -3, 2647, 100,
				300, XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("int4 unique step 2648 (past 262144 slots, past 8n)", XPU_T_INT4, -3, 2648,
				100, 300, XPU_JOIN_AUTO, XPU_JOIN_HASH);
	unique_case("int8 unique at INT64_MAX", XPU_T_INT8, INT64_MAX - 99, 1, 100, 300,
				XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("int8 unique at INT64_MIN", XPU_T_INT8, INT64_MIN, 1, 100, 300,
				XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("date unique (d_datekey-like)", XPU_T_DATE, 8000, 1, 2556, 3000,
				XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	unique_case("one inner row", XPU_T_INT4, 42, 1, 1, 40, XPU_JOIN_AUTO, XPU_JOIN_DENSE);
	one_key_case("int4 duplicates, NULLs", XPU_T_INT4, XPU_T_INT4, 2000, 3000, 500, 0, 10,
				 XPU_JOIN_HASH);
	one_key_case("int4 inner, int8 outer", XPU_T_INT4, XPU_T_INT8, 800, 1000, 300, -150, 10,
				 XPU_JOIN_AUTO);
	one_key_case("int2 inner, int4 outer, skewed", XPU_T_INT2, XPU_T_INT4, 1000, 1000, 3, 0, 5,
				 XPU_JOIN_HASH);
	one_key_case("int8 edges (extremes, duplicates)", XPU_T_INT8, XPU_T_INT8, 300, 500, 0, 0, 10,
				 XPU_JOIN_HASH);
	one_key_case("bool", XPU_T_BOOL, XPU_T_BOOL, 50, 60, 0, 0, 20, XPU_JOIN_HASH);
	one_key_case("timestamp", XPU_T_TIMESTAMP, XPU_T_TIMESTAMP, 700, 900, 400,
				 INT64_C(700000000000000), 10, XPU_JOIN_AUTO);
}

/*
 * keys said unique (spec.unique_keys, as a unique index proves them): the
 * dense form's layout skips its pass for repeats; a table of unique keys is
 * the same bytes as without the hint (and its span comes from the images'
 * attach); where keys do repeat the dense table's slots, counted once
 * written, give it away and the table is the hash form, every row kept
 */
static void
test_keys_said_unique(void)
{
	int			t[1] = {XPU_T_INT4};
	XpuJoinSpec spec = spec_of(1, t, NULL, NULL, NULL, N_STD_PAY, std_pay);
	JtDomain	di = {10, 500, 0},
				dout = {10, 700, -60};
	JtRows		inner,
				outer;
	XpuError	err;
	XpuJoinTable *plain,
			   *said;

	spec.unique_keys = 1;
	random_case("int4 duplicates, NULLs, said unique", &spec, 2000, 3000, &di, &dout,
				XPU_JOIN_HASH);
	/* unique keys 7 .. 7 + 2 * 1199 (shuffled) with NULLs: dense either way */
	jt_rows_alloc(&inner, 1300, 1, spec.n_pay);
	for (int i = 0; i < inner.n; i++)
	{
		inner.keys[i].i = 7 + (int64_t) ((i * 7919) % inner.n) * 2;
		inner.key_nulls[i] = (i * 7919) % inner.n >= 1200;
	}
	jt_fill_pay(&inner, &spec);
	jt_rows_alloc(&outer, 2000, 1, 0);
	jt_fill_keys(&outer, &spec, 1, &dout);
	said = build_as(&spec, &inner, 3, 4, &err);
	spec.unique_keys = 0;
	plain = build_as(&spec, &inner, 3, 4, &err);
	tap_ok(said != NULL && plain != NULL && said->form == XPU_JOIN_DENSE &&
		   (said->flags & XPU_JOIN_UNIQUE) && said->total_len == plain->total_len &&
		   memcmp(said, plain, (size_t) plain->total_len) == 0,
		   "unique int4 keys said unique, from four shares' images: the dense table of the "
		   "same bytes as without the hint");
	free(said);
	free(plain);
	spec.unique_keys = 1;
	run_case("unique int4 keys, NULLs, said unique", &spec, &inner, &outer, XPU_JOIN_DENSE);
	jt_rows_free(&inner);
	jt_rows_free(&outer);
}

static void
test_empty_and_null(void)
{
	one_key_case("empty inner", XPU_T_INT4, XPU_T_INT4, 0, 100, 10, 0, 10, XPU_JOIN_HASH);
	one_key_case("empty outer", XPU_T_INT4, XPU_T_INT4, 100, 0, 10, 0, 10, XPU_JOIN_AUTO);
	one_key_case("both empty", XPU_T_TEXT, XPU_T_TEXT, 0, 0, 0, 0, 0, XPU_JOIN_HASH);
	one_key_case("all inner and outer keys NULL", XPU_T_INT8, XPU_T_INT8, 200, 300, 10, 0, 100,
				 XPU_JOIN_HASH);
	{
		int			t[2] = {XPU_T_INT4, XPU_T_TEXT};
		XpuJoinSpec spec = spec_of(2, t, NULL, NULL, NULL, N_STD_PAY, std_pay);
		JtDomain	di[2] = {{100, 5, 0}, {0, 0, 0}},
					dout[2] = {{0, 5, 0}, {0, 0, 0}};

		random_case("a composite key's first column all NULL inside", &spec, 100, 100, di,
					dout, XPU_JOIN_HASH);
	}
}

static void
test_text_float_numeric_keys(void)
{
	int			text[1] = {XPU_T_TEXT};
	int			f8[1] = {XPU_T_FLOAT8},
				f4[1] = {XPU_T_FLOAT4};
	int			num[1] = {XPU_T_NUMERIC};
	JtDomain	d10[1] = {{10, 0, 0}};
	XpuJoinSpec spec;

	spec = spec_of(1, text, NULL, NULL, NULL, N_STD_PAY, std_pay);
	random_case("text (UTF-8, empty, prefixes, long)", &spec, 600, 800, d10, d10, XPU_JOIN_HASH);
	spec = spec_of(1, f8, NULL, NULL, NULL, N_STD_PAY, std_pay);
	random_case("float8 (-0/0, NaNs, infinities)", &spec, 500, 700, d10, d10, XPU_JOIN_HASH);
	spec = spec_of(1, f4, f8, NULL, NULL, N_STD_PAY, std_pay);
	random_case("float4 inner, float8 outer", &spec, 500, 700, d10, d10, XPU_JOIN_HASH);
	spec = spec_of(1, f8, f4, NULL, NULL, N_STD_PAY, std_pay);
	random_case("float8 inner, float4 outer", &spec, 500, 700, d10, d10, XPU_JOIN_HASH);
	{
		int			s1[1] = {1},
					s2[1] = {2},
					s0[1] = {0},
					s5[1] = {5};

		spec = spec_of(1, num, NULL, s1, s2, N_STD_PAY, std_pay);
		random_case("numeric scale 1 inner, scale 2 outer (1.0 = 1.00)", &spec, 500, 700, d10,
					d10, XPU_JOIN_HASH);
		spec = spec_of(1, num, NULL, s2, s0, N_STD_PAY, std_pay);
		random_case("numeric scale 2 inner, scale 0 outer", &spec, 500, 700, d10, d10,
					XPU_JOIN_HASH);
		spec = spec_of(1, num, NULL, s5, s5, N_STD_PAY, std_pay);
		random_case("numeric scale 5 both", &spec, 500, 700, d10, d10, XPU_JOIN_HASH);
	}
}

static void
test_composite_keys(void)
{
	{
		int			t[2] = {XPU_T_INT4, XPU_T_TEXT};
		XpuJoinSpec spec = spec_of(2, t, NULL, NULL, NULL, N_STD_PAY, std_pay);
		JtDomain	d[2] = {{10, 6, 0}, {10, 0, 0}};

		random_case("composite (int4, text)", &spec, 1000, 1500, d, d, XPU_JOIN_HASH);
	}
	{
		int			t[3] = {XPU_T_TEXT, XPU_T_FLOAT8, XPU_T_DATE},
					pt[3] = {XPU_T_TEXT, XPU_T_FLOAT4, XPU_T_DATE};
		XpuJoinSpec spec = spec_of(3, t, pt, NULL, NULL, N_STD_PAY, std_pay);
		JtDomain	d[3] = {{5, 0, 0}, {5, 0, 0}, {5, 3, 7000}};

		random_case("composite (text, float8/float4, date)", &spec, 1500, 1500, d, d,
					XPU_JOIN_HASH);
	}
	{
		int			t[4] = {XPU_T_INT8, XPU_T_NUMERIC, XPU_T_TEXT, XPU_T_BOOL},
					pt[4] = {XPU_T_INT2, XPU_T_NUMERIC, XPU_T_TEXT, XPU_T_BOOL},
					sc[4] = {0, 3, 0, 0},
					psc[4] = {0, 1, 0, 0};
		XpuJoinSpec spec = spec_of(4, t, pt, sc, psc, 2, std_pay);
		JtDomain	d[4] = {{3, 3, 0}, {3, 0, 0}, {3, 0, 0}, {3, 0, 0}};

		random_case("composite of 4 (int8/int2, numeric 3/1, text, bool)", &spec, 2000, 2000,
					d, d, XPU_JOIN_HASH);
	}
}

/* a larger join: many duplicates, a few hot keys, hash buckets of several keys */
static void
test_larger(void)
{
	int			t[1] = {XPU_T_INT8};
	XpuJoinSpec spec = spec_of(1, t, NULL, NULL, NULL, 3, std_pay);
	JtDomain	di[1] = {{2, 3000, -1000}},
				dout[1] = {{2, 4000, -1500}};

	random_case("int8, 6000 inner rows over 3000 keys", &spec, 6000, 4000, di, dout,
				XPU_JOIN_HASH);
}

/* ---------------------------------------------------------------- partitions */

/*
 * parts_case: inner's rows (payload column 0 their row number) joined with
 * outer in n_parts passes, one table a partition; the passes' rows together
 * (each table's rows mapped back by their row number) must be the nested
 * loop's, every join type, with and without the qual
 */
static void
parts_case(const char *name, XpuJoinSpec *spec, JtRows *inner, const JtRows *outer,
		   int n_parts)
{
	XpuJoinTable *tabs[8];
	JtRows		kept[8];
	int32_t    *ids[8];
	Oracle		or;
	int			built = 1,
				rows = 0,
				nulls_ok = 1,
				ok = 1;

	for (int i = 0; i < inner->n; i++)
		inner->pay[i].i = i;
	spec->n_parts = (uint32_t) n_parts;
	for (int p = 0; p < n_parts; p++)
	{
		XpuError	err;

		spec->part = (uint32_t) p;
		tabs[p] = build(spec, inner, 2, &err);
		if (tabs[p] == NULL || !xpu_join_table_validate(tabs[p], tabs[p]->total_len, &err))
		{
			tap_diag("%s part %d: %s", name, p, err.message);
			built = 0;
			continue;
		}
		/* the inner rows the table kept, in its order (its row numbers) */
		jt_rows_alloc(&kept[p], (int) tabs[p]->n_rows, spec->n_keys, spec->n_pay);
		ids[p] = (int32_t *) malloc(sizeof(int32_t) * (tabs[p]->n_rows + 1));
		for (int r = 0; r < (int) tabs[p]->n_rows; r++)
		{
			XpuValue	v;
			uint8_t		isnull;
			int			id;

			xpu_join_payload(tabs[p], r, 0, &v, &isnull);
			id = ids[p][r] = (int32_t) v.i;
			for (int k = 0; k < spec->n_keys; k++)
			{
				kept[p].keys[k * kept[p].n + r] = inner->keys[k * inner->n + id];
				kept[p].key_nulls[k * kept[p].n + r] = inner->key_nulls[k * inner->n + id];
			}
			for (int c = 0; c < spec->n_pay; c++)
			{
				kept[p].pay[c * kept[p].n + r] = inner->pay[c * inner->n + id];
				kept[p].pay_nulls[c * kept[p].n + r] = inner->pay_nulls[c * inner->n + id];
			}
		}
		rows += (int) tabs[p]->n_rows;
		nulls_ok &= p == 0 || tabs[p]->n_null_keys == 0;
	}
	spec->n_parts = spec->part = 0;
	if (!tap_ok(built && rows == inner->n && nulls_ok,
				"%s: %d partitions hold each inner row once (NULL keys in the first)",
				name, n_parts))
		return;
	oracle_make(&or, spec, inner, outer);
	for (int j = 0; j < N_JOINTYPES; j++)
		for (int quals = 0; quals <= 1; quals++)
		{
			JtPairs		got = {0, 0, NULL};
			int			pay_bad = 0;

			for (int p = 0; p < n_parts; p++)
			{
				JtPairs		part = {0, 0, NULL};

				probe(tabs[p], spec, &kept[p], outer, jointypes[j], quals, ids[p], &part,
					  &pay_bad);
				for (int i = 0; i < part.n; i++)
					jt_pair(&got, part.p[2 * i],
							part.p[2 * i + 1] < 0 ? -1 : ids[p][part.p[2 * i + 1]]);
				free(part.p);
			}
			if (!jt_pairs_same(&got, &or.want[j][quals]) || pay_bad)
			{
				ok = 0;
				tap_diag("%s %s quals %d: %d rows, nested loop %d, %d bad payloads", name,
						 jointype_names[jointypes[j]], quals, got.n, or.want[j][quals].n,
						 pay_bad);
			}
			free(got.p);
		}
	tap_ok(ok, "%s: every join type over %d partitions equals the nested loop", name,
		   n_parts);
	oracle_free(&or);
	for (int p = 0; p < n_parts; p++)
	{
		free(tabs[p]);
		free(ids[p]);
		jt_rows_free(&kept[p]);
	}
}

static void
test_partitions(void)
{
	static const int pay[] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_NUMERIC};
	static const struct
	{
		const char *name;
		int			n_keys;
		int			types[2];
		int			scales[2];
		int			probe_scales[2];
		JtDomain	dom[2];
		int			n_parts;
	}			cases[] = {
		{"int4 with duplicates and NULLs", 1, {XPU_T_INT4}, {0}, {0}, {{10, 400, 0}}, 3},
		{"int4 unique-ish, 2 partitions", 1, {XPU_T_INT8}, {0}, {0}, {{5, 5000, 0}}, 2},
		{"text", 1, {XPU_T_TEXT}, {0}, {0}, {{10, 0, 0}}, 4},
		{"numeric 1 inner, 2 outer", 1, {XPU_T_NUMERIC}, {1}, {2}, {{10, 0, 0}}, 3},
		{"composite (int4, text)", 2, {XPU_T_INT4, XPU_T_TEXT}, {0, 0}, {0, 0},
		{{10, 5, 0}, {10, 0, 0}}, 5},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		XpuJoinSpec spec = spec_of(cases[i].n_keys, cases[i].types, NULL, cases[i].scales,
								   cases[i].probe_scales, 3, pay);
		JtRows		inner,
					outer;

		jt_random_rows(&spec, 1500, 1500, cases[i].dom, cases[i].dom, &inner, &outer);
		parts_case(cases[i].name, &spec, &inner, &outer, cases[i].n_parts);
		jt_rows_free(&inner);
		jt_rows_free(&outer);
	}
}

/* ---------------------------------------------------------------- numeric range */

static void
test_numeric_range(void)
{
	int			num[1] = {XPU_T_NUMERIC},
				s0[1] = {0},
				s2[1] = {2};
	XpuJoinSpec spec = spec_of(1, num, NULL, s0, s2, 0, NULL);
	XpuJoinBuilder *b;
	XpuValue	v;
	uint8_t		nul = 0;
	XpuError	err;

	/* 10^37 at scale 0 fits; at the key scale 2 it would need 40 digits */
	memset(&err, 0, sizeof(err));
	b = xpu_join_builder_create(&spec, &err);
	v.n = jt_pow10(37);
	tap_ok(b != NULL && !xpu_join_builder_add(b, 1, &v, &nul, NULL, NULL, &err) &&
		   err.code == XPU_ERR_FALLBACK,
		   "an inner numeric beyond 38 digits at the key scale is a FALLBACK (%s)", err.message);
	xpu_join_builder_free(b);

	/* the other way: an outer value that cannot reach the key scale has no match */
	{
		XpuJoinSpec s = spec_of(1, num, NULL, s2, s0, 0, NULL);
		XpuJoinTable *t;
		XpuJoinCursor c;
		XpuValue	keys[2];
		uint8_t		nulls[2] = {0, 0};
		int			ok;

		memset(&err, 0, sizeof(err));
		keys[0].n = 100;		/* 1.00 */
		keys[1].n = jt_pow10(38) - 1;	/* the largest value at scale 2 */
		b = xpu_join_builder_create(&s, &err);
		ok = b != NULL && xpu_join_builder_add(b, 2, keys, nulls, NULL, NULL, &err);
		t = ok ? xpu_join_builder_finish(b, &err) : NULL;
		xpu_join_builder_free(b);
		v.n = jt_pow10(37);		/* 10^37 at scale 0: 10^39 at scale 2 */
		ok = t != NULL && xpu_join_first(t, &c, &v, &nul) == -1;
		v.n = 1;				/* 1 = 1.00 */
		ok = ok && xpu_join_first(t, &c, &v, &nul) == 0 && xpu_join_next(t, &c) == -1;
		tap_ok(ok, "an outer numeric beyond the key scale's range has no match; 1 = 1.00");
		free(t);
	}
}

/* ---------------------------------------------------------------- caller's memory */

/*
 * layout + write into memory of the test's gives finish's bytes, and so
 * does write_zeroed into zeroed memory (a fresh memfd's); no rows after
 * layout.  A hash table (text and int4 keys, some NULL) and a dense one
 * (unique int4 keys in shuffled order, some NULL).
 */
static void
caller_memory_case(const char *name, int n_keys, const int *types, int dense)
{
	XpuJoinSpec spec = spec_of(n_keys, types, NULL, NULL, NULL, N_STD_PAY, std_pay);
	JtRows		inner;
	JtDomain	d[2] = {{10, 0, 0}, {10, 50, 0}};
	XpuError	err;
	XpuJoinTable *a;
	XpuJoinBuilder *b;
	uint64_t	len;
	uint8_t    *space,
			   *zeroed,
			   *at,
			   *zat;
	int			ok;

	jt_rows_alloc(&inner, 500, n_keys, spec.n_pay);
	jt_fill_keys(&inner, &spec, 0, d);
	if (dense)
	{
		for (int i = 0; i < inner.n; i++)
			inner.keys[i].i = 1000 + (int64_t) ((i * 7) % inner.n);	/* 7 and 500 coprime */
	}
	jt_fill_pay(&inner, &spec);
	a = build(&spec, &inner, 1, &err);
	memset(&err, 0, sizeof(err));
	b = xpu_join_builder_create(&spec, &err);
	ok = xpu_join_builder_add(b, inner.n, inner.keys, inner.key_nulls, inner.pay,
							  inner.pay_nulls, &err);
	len = xpu_join_builder_layout(b, &err);
	space = (uint8_t *) malloc((size_t) len + 32);
	zeroed = (uint8_t *) calloc(1, (size_t) len + 32);
	memset(space, 0x5A, (size_t) len + 32);
	at = space + 16 - ((uintptr_t) space & 15);
	zat = zeroed + 16 - ((uintptr_t) zeroed & 15);
	xpu_join_builder_write(b, at);
	xpu_join_builder_write_zeroed(b, zat);
	tap_ok(ok && a != NULL && len == a->total_len && a->form == (dense ? XPU_JOIN_DENSE : XPU_JOIN_HASH) &&
		   memcmp(at, a, (size_t) len) == 0,
		   "%s: a table written into the caller's memory is finish's, byte for byte (%llu bytes)",
		   name, (unsigned long long) len);
	tap_ok(a != NULL && memcmp(zat, a, (size_t) len) == 0,
		   "%s: written into zeroed memory (write_zeroed), the same bytes", name);
	tap_ok(!xpu_join_builder_add(b, 1, inner.keys, inner.key_nulls, inner.pay,
								 inner.pay_nulls, &err) &&
		   err.code == XPU_ERR_INVALID_ARGUMENT && xpu_join_builder_layout(b, &err) == len,
		   "%s: rows added after the layout are refused; the layout stays", name);
	xpu_join_builder_free(b);
	free(space);
	free(zeroed);
	free(a);
	jt_rows_free(&inner);
}

static void
test_caller_memory(void)
{
	int			hash_types[2] = {XPU_T_TEXT, XPU_T_INT4};
	int			dense_types[1] = {XPU_T_INT4};

	caller_memory_case("hash form", 2, hash_types, 0);
	caller_memory_case("dense form", 1, dense_types, 1);
}

/* ---------------------------------------------------------------- limits and specs */

static void
test_limits(void)
{
	int			t[1] = {XPU_T_INT8};
	XpuJoinSpec spec = spec_of(1, t, NULL, NULL, NULL, 2, std_pay);
	JtRows		inner;
	JtDomain	d[1] = {{0, 1000000, 0}};
	XpuError	err;
	XpuJoinTable *tab;

	jt_rows_alloc(&inner, 3000, 1, 2);
	jt_fill_keys(&inner, &spec, 0, d);
	jt_fill_pay(&inner, &spec);
	spec.max_bytes = 16384;
	tab = build(&spec, &inner, 1, &err);
	tap_ok(tab == NULL && err.code == XPU_ERR_FALLBACK,
		   "a table past its byte limit fails with FALLBACK while rows are added (%s)",
		   err.message);
	jt_rows_free(&inner);

	/* few rows: the limit one byte under the table's size, then at it */
	jt_rows_alloc(&inner, 20, 1, 2);
	jt_fill_keys(&inner, &spec, 0, d);
	jt_fill_pay(&inner, &spec);
	spec.max_bytes = 0;
	tab = build(&spec, &inner, 1, &err);
	if (tap_ok(tab != NULL && tab->total_len % 16 == 0, "the same rows without a limit build"))
	{
		uint64_t	len = tab->total_len;

		free(tab);
		spec.max_bytes = len - 1;
		tab = build(&spec, &inner, 1, &err);
		tap_ok(tab == NULL && err.code == XPU_ERR_FALLBACK,
			   "a limit one byte under the table's size fails with FALLBACK");
		spec.max_bytes = len;
		tab = build(&spec, &inner, 1, &err);
		tap_ok(tab != NULL, "a limit of exactly the table's size builds");
	}
	free(tab);
	jt_rows_free(&inner);

	/* a dense table within a limit its hash form would pass */
	jt_rows_alloc(&inner, 5000, 1, 0);
	for (int i = 0; i < inner.n; i++)
		inner.keys[i].i = 3 * (int64_t) i / 2;
	spec.n_pay = 0;
	spec.max_bytes = 0;
	tab = build(&spec, &inner, 1, &err);
	if (tap_ok(tab != NULL && tab->form == XPU_JOIN_DENSE, "5000 keys over 7500 values: dense"))
	{
		spec.max_bytes = tab->total_len;
		free(tab);
		tab = build(&spec, &inner, 1, &err);
		tap_ok(tab != NULL && tab->form == XPU_JOIN_DENSE && 20 * 5000 > spec.max_bytes,
			   "a limit of the dense table's size (%llu bytes) builds it, the hash form's "
			   "entries alone would pass it", (unsigned long long) spec.max_bytes);
	}
	free(tab);
	jt_rows_free(&inner);
}

/*
 * merging shares: past the byte limit it is FALLBACK; an image of another
 * spec, a short one and ones whose key, row or text references point past
 * their own bytes are refused, and the builder keeps the rows it had
 */
static void
test_images(void)
{
	int			t[1] = {XPU_T_INT8};
	int			pay[2] = {XPU_T_TEXT, XPU_T_INT4};
	XpuJoinSpec spec = spec_of(1, t, NULL, NULL, NULL, 2, pay);
	XpuJoinSpec other = spec_of(1, t, NULL, NULL, NULL, 1, pay);
	JtRows		inner;
	JtDomain	d[1] = {{0, 1000000, 10}};
	XpuError	err;
	XpuJoinBuilder *src,
			   *dst;
	XpuJoinTable *whole,
			   *tab;
	uint64_t	len;
	uint8_t    *image,
			   *bad;
	static const struct
	{
		const char *what;
		uint64_t	at;			/* offset of the word changed; ~0: length */
		uint64_t	value;
	}			breaks[] = {
		{"a short image", ~(uint64_t) 0, 8},
		{"another magic", 0, 1},
		{"more rows than the image holds", 4, 0},
	};

	jt_rows_alloc(&inner, 400, 1, 2);
	jt_fill_keys(&inner, &spec, 0, d);
	jt_fill_pay(&inner, &spec);
	memset(&err, 0, sizeof(err));
	src = xpu_join_builder_create(&spec, &err);
	xpu_join_builder_add(src, inner.n, inner.keys, inner.key_nulls, inner.pay, inner.pay_nulls,
						 &err);
	len = xpu_join_builder_image_len(src);
	image = (uint8_t *) malloc((size_t) len);
	bad = (uint8_t *) malloc((size_t) len);
	xpu_join_builder_image(src, image);
	whole = xpu_join_builder_finish(src, &err);
	xpu_join_builder_free(src);

	/*
	 * an image of another spec, the breaks and bytes changed all over:
	 * refused, or attached and then finished and validated without a read
	 * out of bounds (ASan; the service validates every table it receives);
	 * a refusal leaves the builder's rows, so the good image attached after
	 * it gives the table of the rows alone.  Attached twice, the table of
	 * the rows added twice; nothing added after an attachment; an image
	 * not 8-byte aligned refused
	 */
	{
		int			refusals = 0,
					all_ok = 1;
		XpuJoinTable *twice_m,
				   *twice_a;
		uint8_t    *odd = (uint8_t *) malloc((size_t) len + 8);

		dst = xpu_join_builder_create(&other, &err);
		tap_ok(!xpu_join_builder_attach(dst, image, len, &err) &&
			   err.code == XPU_ERR_INVALID_ARGUMENT, "attach: an image of another spec is refused");
		xpu_join_builder_free(dst);
		for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++)
		{
			uint64_t	blen = len;
			uint32_t	w;

			memcpy(bad, image, (size_t) len);
			if (breaks[i].at == ~(uint64_t) 0)
				blen = breaks[i].value;
			else
			{
				memcpy(&w, bad + breaks[i].at, 4);
				w = breaks[i].value ? w ^ (uint32_t) breaks[i].value : w + 1000;
				memcpy(bad + breaks[i].at, &w, 4);
			}
			dst = xpu_join_builder_create(&spec, &err);
			memset(&err, 0, sizeof(err));
			tap_ok(!xpu_join_builder_attach(dst, bad, blen, &err) &&
				   err.code == XPU_ERR_INVALID_ARGUMENT, "attach: %s is refused (%s)",
				   breaks[i].what, err.message);
			xpu_join_builder_free(dst);
		}
		for (uint64_t at = 0; at < len; at += 7)
		{
			memcpy(bad, image, (size_t) len);
			bad[at] ^= 0x5a;
			dst = xpu_join_builder_create(&spec, &err);
			if (!xpu_join_builder_attach(dst, bad, len, &err))
			{
				refusals++;
				if (!xpu_join_builder_attach(dst, image, len, &err) ||
					(tab = xpu_join_builder_finish(dst, &err)) == NULL ||
					tab->total_len != whole->total_len ||
					memcmp(tab, whole, (size_t) whole->total_len) != 0)
					all_ok = 0;
				else
					free(tab);
			}
			else if ((tab = xpu_join_builder_finish(dst, &err)) != NULL)
			{
				(void) xpu_join_table_validate(tab, tab->total_len, &err);
				free(tab);
			}
			xpu_join_builder_free(dst);
		}
		tap_ok(all_ok && refusals > 0, "attach: an image with a byte changed is refused (%d "
			   "times) or attached; a refused one leaves the builder as it was", refusals);

		dst = xpu_join_builder_create(&spec, &err);
		for (int k = 0; k < 2; k++)
			xpu_join_builder_add(dst, inner.n, inner.keys, inner.key_nulls, inner.pay,
								 inner.pay_nulls, &err);
		twice_m = xpu_join_builder_finish(dst, &err);
		xpu_join_builder_free(dst);
		dst = xpu_join_builder_create(&spec, &err);
		xpu_join_builder_attach(dst, image, len, &err);
		xpu_join_builder_attach(dst, image, len, &err);
		twice_a = xpu_join_builder_finish(dst, &err);
		tap_ok(twice_m != NULL && twice_a != NULL && twice_a->total_len == twice_m->total_len &&
			   memcmp(twice_a, twice_m, (size_t) twice_m->total_len) == 0,
			   "an image attached twice gives the table of its rows added twice (%s keys)",
			   twice_m != NULL && (twice_m->flags & XPU_JOIN_UNIQUE) ? "unique" : "repeated");
		free(twice_m);
		free(twice_a);
		xpu_join_builder_free(dst);

		dst = xpu_join_builder_create(&spec, &err);
		xpu_join_builder_attach(dst, image, len, &err);
		memset(&err, 0, sizeof(err));
		tap_ok(!xpu_join_builder_add(dst, inner.n, inner.keys, inner.key_nulls, inner.pay,
									 inner.pay_nulls, &err) &&
			   err.code == XPU_ERR_INVALID_ARGUMENT, "rows added after an attachment are refused");
		xpu_join_builder_free(dst);

		memcpy(odd + 4, image, (size_t) len);
		dst = xpu_join_builder_create(&spec, &err);
		memset(&err, 0, sizeof(err));
		tap_ok(!xpu_join_builder_attach(dst, odd + 4, len, &err) &&
			   err.code == XPU_ERR_INVALID_ARGUMENT, "an image not 8-byte aligned is refused (%s)",
			   err.message);
		xpu_join_builder_free(dst);
		free(odd);
	}

	/* the limit counts the attached rows */
	spec.max_bytes = whole->total_len + whole->total_len / 8;
	dst = xpu_join_builder_create(&spec, &err);
	memset(&err, 0, sizeof(err));
	tap_ok(xpu_join_builder_attach(dst, image, len, &err), "one share within the limit attaches");
	tap_ok(!xpu_join_builder_attach(dst, image, len, &err) && err.code == XPU_ERR_FALLBACK,
		   "a second share past the limit fails with FALLBACK (%s)", err.message);
	xpu_join_builder_free(dst);

	free(whole);
	free(image);
	free(bad);
	jt_rows_free(&inner);
}

static void
test_bad_specs(void)
{
	static const struct
	{
		const char *what;
		int			n_keys;
		int			type,
					probe_type,
					scale,
					pay_type,
					form;
	}			cases[] = {
		{"no key", 0, XPU_T_INT4, XPU_T_INT4, 0, 0, 0},
		{"5 keys", 5, XPU_T_INT4, XPU_T_INT4, 0, 0, 0},
		{"int4 with text", 1, XPU_T_INT4, XPU_T_TEXT, 0, 0, 0},
		{"int4 with float8", 1, XPU_T_INT4, XPU_T_FLOAT8, 0, 0, 0},
		{"date with timestamp", 1, XPU_T_DATE, XPU_T_TIMESTAMP, 0, 0, 0},
		{"interval key", 1, XPU_T_INTERVAL, XPU_T_INTERVAL, 0, 0, 0},
		{"numeric scale 39", 1, XPU_T_NUMERIC, XPU_T_NUMERIC, 39, 0, 0},
		{"unknown payload type", 1, XPU_T_INT4, XPU_T_INT4, 0, XPU_T_N_TYPES, 0},
		{"unknown form", 1, XPU_T_INT4, XPU_T_INT4, 0, 0, XPU_JOIN_DENSE},
		{"partition 3 of 3", 1, XPU_T_INT4, XPU_T_INT4, 0, 0, 0},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		int			types[5],
					probe_types[5],
					scales[5];
		XpuJoinSpec spec;
		XpuError	err;
		XpuJoinBuilder *b;

		for (int k = 0; k < 5; k++)
		{
			types[k] = cases[i].type;
			probe_types[k] = cases[i].probe_type;
			scales[k] = cases[i].scale;
		}
		spec = spec_of(cases[i].n_keys, types, probe_types, scales, NULL,
					   cases[i].pay_type != 0, &cases[i].pay_type);
		spec.form = cases[i].form;
		if (i == sizeof(cases) / sizeof(cases[0]) - 1)
		{
			spec.n_parts = 3;
			spec.part = 3;
		}
		memset(&err, 0, sizeof(err));
		b = xpu_join_builder_create(&spec, &err);
		tap_ok(b == NULL && err.code == XPU_ERR_INVALID_ARGUMENT,
			   "a spec with %s is refused (%s)", cases[i].what, err.message);
		xpu_join_builder_free(b);
	}
}

/* ---------------------------------------------------------------- validator */

static int
refused(const XpuJoinTable *t, void (*fn) (XpuJoinTable *), uint64_t len)
{
	XpuJoinTable *c;
	XpuError	err;
	int			ok;

	if (posix_memalign((void **) &c, 64, (size_t) t->total_len) != 0)
		return 0;
	memcpy(c, t, (size_t) t->total_len);
	if (fn)
		fn(c);
	memset(&err, 0, sizeof(err));
	ok = xpu_join_table_validate(c, len, &err);
	free(c);
	return !ok && err.code == XPU_ERR_INVALID_ARGUMENT;
}

static void m_magic(XpuJoinTable *t) { t->magic ^= 1; }
static void m_version(XpuJoinTable *t) { t->version = 99; }
static void m_form(XpuJoinTable *t) { t->form = 7; }
static void m_counts(XpuJoinTable *t) { t->n_keyed++; }
static void m_keys(XpuJoinTable *t) { t->n_keys = 5; }
static void m_keytype(XpuJoinTable *t) { t->keys[0].probe_type = XPU_T_INT4; }
static void m_buckets(XpuJoinTable *t) { t->n_buckets = 3; }
static void m_bucket_end(XpuJoinTable *t) { ((uint32_t *) ((char *) t + t->buckets_off))[t->n_buckets] += 1; }
static void m_entry_row(XpuJoinTable *t) { ((XpuJoinEntry *) ((char *) t + t->entries_off))[0].row = t->n_rows; }
static void m_entry_key(XpuJoinTable *t) { ((XpuJoinEntry *) ((char *) t + t->entries_off))[0].key_off = t->total_len - 2; }
static void m_key_len(XpuJoinTable *t) { memset((char *) t + t->keys_off + 1, 0x7f, 4); }
static void m_null_row(XpuJoinTable *t) { ((uint32_t *) ((char *) t + t->null_rows_off))[0] = t->n_rows; }
static void m_pay_off(XpuJoinTable *t) { t->pay[1].vals_off = t->total_len; }
static void m_pay_width(XpuJoinTable *t) { t->pay[0].width = 16; }
static void m_text_off(XpuJoinTable *t)
{
	/* the first non-NULL text payload points past the texts */
	for (uint32_t r = 0; r < t->n_rows; r++)
		if (!((uint8_t *) t + t->pay[1].nulls_off)[r])
		{
			XpuJoinText *tx = (XpuJoinText *) ((char *) t + t->pay[1].vals_off + 16 * (uint64_t) r);

			tx->off = t->text_off + t->text_len;
			tx->len = 1;
			return;
		}
}
static void m_inline(XpuJoinTable *t) { t->inline_key = 1; }
static void m_part(XpuJoinTable *t) { t->part = t->n_parts; }
static void m_dense_range(XpuJoinTable *t)
{
	t->dense_range = XPU_JOIN_DENSE_SMALL + XPU_JOIN_DENSE_RATIO * (uint64_t) t->n_keyed + 1;
}
static void m_dense_slot(XpuJoinTable *t) { ((uint32_t *) ((char *) t + t->slots_off))[0] = t->n_rows + 1; }

static void
test_validator(void)
{
	int			t2[1] = {XPU_T_TEXT},
				i4[1] = {XPU_T_INT4};
	XpuJoinSpec spec = spec_of(1, t2, NULL, NULL, NULL, N_STD_PAY, std_pay);
	JtRows		inner;
	JtDomain	d[1] = {{10, 0, 0}};
	XpuError	err;
	XpuJoinTable *t;
	int			flips_ok = 1,
				accepted = 0;
	volatile int sink = 0;
	static const struct
	{
		const char *what;
		void		(*fn) (XpuJoinTable *);
	}			hash_muts[] = {
		{"magic", m_magic}, {"version", m_version}, {"form", m_form}, {"counts", m_counts},
		{"key count", m_keys}, {"key types", m_keytype}, {"bucket count", m_buckets},
		{"last bucket", m_bucket_end}, {"entry row", m_entry_row},
		{"entry key offset", m_entry_key}, {"key text length", m_key_len},
		{"null row", m_null_row}, {"payload offset", m_pay_off},
		{"payload width", m_pay_width}, {"payload text offset", m_text_off},
		{"inline key flag (text key)", m_inline}, {"partition", m_part},
	};

	jt_rows_alloc(&inner, 300, 1, spec.n_pay);
	jt_fill_keys(&inner, &spec, 0, d);
	jt_fill_pay(&inner, &spec);
	t = build(&spec, &inner, 2, &err);
	tap_ok(t != NULL && !refused(t, NULL, t->total_len), "the validator accepts a built table");
	tap_ok(refused(t, NULL, t->total_len - 16) && refused(t, NULL, 8),
		   "the validator refuses a table of another length");
	for (size_t i = 0; i < sizeof(hash_muts) / sizeof(hash_muts[0]); i++)
		tap_ok(refused(t, hash_muts[i].fn, t->total_len), "the validator refuses a broken %s",
			   hash_muts[i].what);

	/*
	 * random byte flips: whatever the validator accepts, probes and payload
	 * reads stay in bounds (ASan would stop the test)
	 */
	for (int round = 0; round < 3000; round++)
	{
		XpuJoinTable *c;
		uint64_t	len = t->total_len;

		if (posix_memalign((void **) &c, 64, (size_t) len) != 0)
			break;
		memcpy(c, t, (size_t) len);
		for (int f = 0; f < 1 + (int) jt_below(3); f++)
			((uint8_t *) c)[jt_below((uint32_t) len)] ^= (uint8_t) (1 + jt_below(255));
		memset(&err, 0, sizeof(err));
		if (xpu_join_table_validate(c, len, &err))
		{
			accepted++;
			for (int o = 0; o < 20; o++)
			{
				XpuJoinCursor cur;
				XpuValue	pv[XPU_JOIN_MAX_PAYLOAD];
				uint8_t		pn[XPU_JOIN_MAX_PAYLOAD];
				int32_t		r;

				xpu_join_begin(c, &cur, XPU_JOIN_INNER, &inner.keys[o], &inner.key_nulls[o]);
				while (xpu_join_emit(c, &cur, NULL, &r))
				{
					xpu_join_payload_row(c, r, pv, pn);
					for (int k = 0; k < c->n_pay; k++)
						if (!pn[k] && c->pay[k].type == XPU_T_TEXT && pv[k].t.len > 0)
							sink += pv[k].t.p[0] + pv[k].t.p[pv[k].t.len - 1];
				}
			}
		}
		else
			flips_ok &= err.code == XPU_ERR_INVALID_ARGUMENT;
		free(c);
	}
	tap_ok(flips_ok, "3000 tables with random byte flips: refused, or probed within bounds "
		   "(%d accepted)", accepted);
	free(t);
	jt_rows_free(&inner);

	/* a dense table's own fields */
	spec = spec_of(1, i4, NULL, NULL, NULL, 1, std_pay);
	jt_rows_alloc(&inner, 100, 1, 1);
	for (int i = 0; i < 100; i++)
		inner.keys[i].i = 1000 + i;
	jt_fill_pay(&inner, &spec);
	t = build(&spec, &inner, 1, &err);
	tap_ok(t != NULL && t->form == XPU_JOIN_DENSE &&
		   refused(t, m_dense_range, t->total_len) && refused(t, m_dense_slot, t->total_len),
		   "the validator refuses a dense table's range past the rule and a slot past the rows");
	free(t);
	jt_rows_free(&inner);
}

int
main(void)
{
	test_integer_keys();
	test_keys_said_unique();
	test_empty_and_null();
	test_text_float_numeric_keys();
	test_composite_keys();
	test_larger();
	test_partitions();
	test_numeric_range();
	test_caller_memory();
	test_limits();
	test_images();
	test_bad_specs();
	test_validator();
	return tap_done();
}
