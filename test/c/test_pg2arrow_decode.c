/*
 * test_pg2arrow_decode.c
 *		Unit tests of pg2arrow's binary COPY decoding (tools/pg2arrow/decode.c):
 *		tuple framing, malformed values of every nested kind, numeric
 *		conversion, and random corruption of valid tuples, which must give
 *		errors and never read out of bounds (the tests run under ASan+UBSan).
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../tools/pg2arrow/decode.c"

/* decode.c's --dictionary path (text_dict.c, tested through pg2arrow in
 * test_pg2arrow_dict.py): no column here has a dictionary */
int64_t
text_dict_index(TextDict *d, const char *p, int32_t len, char *errbuf, size_t errlen)
{
	snprintf(errbuf, errlen, "no dictionary");
	return -1;
}

/* A growable big-endian byte buffer for building COPY data */
typedef struct Buf
{
	char		data[4096];
	size_t		len;
} Buf;

static void
put16(Buf *b, int v)
{
	b->data[b->len++] = (char) (v >> 8);
	b->data[b->len++] = (char) v;
}

static void
put32(Buf *b, int32_t v)
{
	for (int s = 24; s >= 0; s -= 8)
		b->data[b->len++] = (char) ((uint32_t) v >> s);
}

static void
putbytes(Buf *b, const void *p, size_t n)
{
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

/* Appends a field: length + bytes of v */
static void
field(Buf *t, const Buf *v)
{
	put32(t, (int32_t) v->len);
	putbytes(t, v->data, v->len);
}

/* A column of a test schema: the PgColumn and its Arrow field */
static PgColumn cols[4];
static PgColumn int_child,
			comp_children[2];
static ArrowField fields[4];
static ArrowField int_child_f,
			comp_children_f[2];
static ArrowSchema schema = {4, fields, {0, NULL}};

/*
 * Columns: 0 int4, 1 numeric as decimal128(10, 2), 2 int4[] (list),
 * 3 composite (a int4, m text).
 */
static void
setup_schema(void)
{
	cols[0] = (PgColumn) {.name = "i", .path = "i", .kind = PK_INT4, .stats = true};
	fields[0] = (ArrowField) {.name = "i", .nullable = true, .type = {.id = ARROW_TYPE_INT32}};
	cols[1] = (PgColumn) {.name = "n", .path = "n", .kind = PK_NUMERIC,
	.numeric_mode = NUMERIC_DECIMAL, .precision = 10, .scale = 2, .stats = true};
	fields[1] = (ArrowField) {.name = "n", .nullable = true,
	.type = {.id = ARROW_TYPE_DECIMAL128, .precision = 10, .scale = 2}};
	int_child = (PgColumn) {.name = "item", .path = "a[]", .kind = PK_INT4};
	int_child_f = (ArrowField) {.name = "item", .nullable = true, .type = {.id = ARROW_TYPE_INT32}};
	cols[2] = (PgColumn) {.name = "a", .path = "a", .kind = PK_ARRAY, .n_children = 1,
	.children = &int_child};
	fields[2] = (ArrowField) {.name = "a", .nullable = true, .type = {.id = ARROW_TYPE_LIST},
	.n_children = 1, .children = &int_child_f};
	comp_children[0] = (PgColumn) {.name = "x", .path = "c.x", .kind = PK_INT4};
	comp_children[1] = (PgColumn) {.name = "m", .path = "c.m", .kind = PK_TEXT};
	comp_children_f[0] = (ArrowField) {.name = "x", .nullable = true, .type = {.id = ARROW_TYPE_INT32}};
	comp_children_f[1] = (ArrowField) {.name = "m", .nullable = true, .type = {.id = ARROW_TYPE_UTF8}};
	cols[3] = (PgColumn) {.name = "c", .path = "c", .kind = PK_COMPOSITE, .n_children = 2,
	.children = comp_children};
	fields[3] = (ArrowField) {.name = "c", .nullable = true, .type = {.id = ARROW_TYPE_STRUCT},
	.n_children = 2, .children = comp_children_f};
}

/* Binary numeric of base-10000 digits */
static void
numeric_value(Buf *v, int weight, int sign, int dscale, int ndigits, const int *digits)
{
	v->len = 0;
	put16(v, ndigits);
	put16(v, weight);
	put16(v, sign);
	put16(v, dscale);
	for (int i = 0; i < ndigits; i++)
		put16(v, digits[i]);
}

/* A valid tuple: 7, 12.50, {1,NULL,3}, (5,"hi") */
static void
valid_tuple(Buf *t)
{
	Buf			v;
	static const int d1[] = {12, 5000};

	t->len = 0;
	put16(t, 4);
	v.len = 0;
	put32(&v, 7);
	field(t, &v);
	numeric_value(&v, 0, NUMERIC_POS, 2, 2, d1);
	field(t, &v);
	v.len = 0;
	put32(&v, 1);				/* ndim */
	put32(&v, 1);				/* has nulls */
	put32(&v, 23);				/* int4 */
	put32(&v, 3);				/* dim */
	put32(&v, 1);				/* lower bound */
	put32(&v, 4);
	put32(&v, 1);
	put32(&v, -1);
	put32(&v, 4);
	put32(&v, 3);
	field(t, &v);
	v.len = 0;
	put32(&v, 2);
	put32(&v, 23);
	put32(&v, 4);
	put32(&v, 5);
	put32(&v, 25);
	put32(&v, 2);
	putbytes(&v, "hi", 2);
	field(t, &v);
}

/* Decodes tuple t into a fresh batch; returns success, message in err */
static bool
decode_one(const Buf *t, char *err, size_t errlen)
{
	BatchState	bs;
	size_t		len;
	int			rc;
	bool		ok;

	err[0] = '\0';
	if (!batch_init(&bs, &schema, cols, err, errlen))
		return false;
	rc = copy_tuple_length(t->data, t->len, 4, &len, err, errlen);
	ok = rc == 1 && decode_tuple(&bs, cols, t->data, len, 1, err, errlen);
	if (rc == 0)
		snprintf(err, errlen, "incomplete");
	batch_free(&bs);
	return ok;
}

static void
test_framing(void)
{
	Buf			t;
	size_t		len;
	char		err[512];

	valid_tuple(&t);
	tap_ok(copy_tuple_length(t.data, t.len, 4, &len, err, sizeof(err)) == 1 && len == t.len,
		   "a complete tuple is found");
	tap_ok(copy_tuple_length(t.data, t.len - 1, 4, &len, err, sizeof(err)) == 0,
		   "a tuple missing its last byte needs more data");
	tap_ok(copy_tuple_length(t.data, 1, 4, &len, err, sizeof(err)) == 0,
		   "one byte needs more data");
	tap_ok(copy_tuple_length(t.data, t.len, 3, &len, err, sizeof(err)) == -1 &&
		   strstr(err, "4 fields where 3") != NULL, "a wrong field count is an error");
	tap_ok(copy_tuple_length("\xff\xff", 2, 4, &len, err, sizeof(err)) == 2 && len == 2,
		   "the trailer is recognised");
	t.len = 0;
	put16(&t, 4);
	put32(&t, -2);
	tap_ok(copy_tuple_length(t.data, t.len, 4, &len, err, sizeof(err)) == -1,
		   "a field length below -1 is an error");
	t.len = 0;
	put16(&t, 4);
	put32(&t, 0x7fffffff);
	tap_ok(copy_tuple_length(t.data, t.len, 4, &len, err, sizeof(err)) == -1,
		   "a field length over 1 GB is an error");
	valid_tuple(&t);
	tap_ok(decode_one(&t, err, sizeof(err)), "a valid tuple decodes (%s)", err);
}

/* Replaces field 'which' of the valid tuple by v and decodes it */
static bool
decode_with(int which, const Buf *v, char *err, size_t errlen)
{
	Buf			t,
				good;
	Buf			one;

	valid_tuple(&good);
	t.len = 0;
	put16(&t, 4);
	for (int i = 0, pos = 2; i < 4; i++)
	{
		int32_t		flen = get32(good.data + pos);

		one.len = 0;
		putbytes(&one, good.data + pos + 4, flen > 0 ? flen : 0);
		if (i == which)
			field(&t, v);
		else
			field(&t, &one);
		pos += 4 + (flen > 0 ? flen : 0);
	}
	return decode_one(&t, err, errlen);
}

static void
test_malformed_values(void)
{
	Buf			v;
	char		err[512];
	static const int big[] = {9999, 9999, 9999};
	static const int frac[] = {1, 1};
	static const int bad_digit[] = {10000};

	v.len = 0;
	put16(&v, 7);
	tap_ok(!decode_with(0, &v, err, sizeof(err)) && strstr(err, "column \"i\", row 1") != NULL,
		   "int4 of 2 bytes: %s", err);
	numeric_value(&v, 2, NUMERIC_POS, 0, 3, big);
	tap_ok(!decode_with(1, &v, err, sizeof(err)) && strstr(err, "does not fit") != NULL,
		   "numeric too large for decimal128(10, 2): %s", err);
	numeric_value(&v, 0, NUMERIC_POS, 4, 2, frac);
	tap_ok(!decode_with(1, &v, err, sizeof(err)) && strstr(err, "fraction digits") != NULL,
		   "numeric 1.0001 in scale 2: %s", err);
	numeric_value(&v, 0, NUMERIC_NAN, 0, 0, NULL);
	tap_ok(!decode_with(1, &v, err, sizeof(err)) && strstr(err, "NaN") != NULL,
		   "numeric NaN as decimal: %s", err);
	numeric_value(&v, 0, NUMERIC_POS, 0, 1, bad_digit);
	tap_ok(!decode_with(1, &v, err, sizeof(err)) && strstr(err, "digit") != NULL,
		   "numeric digit 10000: %s", err);
	numeric_value(&v, 0, NUMERIC_POS, 0, 2, frac);
	v.len -= 2;					/* ndigits says 2, one present */
	tap_ok(!decode_with(1, &v, err, sizeof(err)), "numeric shorter than ndigits: %s", err);

	v.len = 0;
	put32(&v, 2);
	put32(&v, 0);
	put32(&v, 23);
	put32(&v, 1);
	put32(&v, 1);
	put32(&v, 1);
	put32(&v, 1);
	put32(&v, 4);
	put32(&v, 9);
	tap_ok(!decode_with(2, &v, err, sizeof(err)) && strstr(err, "2 dimensions") != NULL,
		   "two-dimensional array: %s", err);
	v.len = 0;
	put32(&v, 1);
	put32(&v, 0);
	put32(&v, 23);
	put32(&v, 2);
	put32(&v, 1);
	put32(&v, 4);
	put32(&v, 1);
	put32(&v, 400);				/* second element claims 400 bytes */
	tap_ok(!decode_with(2, &v, err, sizeof(err)) && strstr(err, "out of bounds") != NULL,
		   "array element longer than the array: %s", err);
	v.len = 0;
	put32(&v, 1);
	put32(&v, 0);
	put32(&v, 23);
	put32(&v, 1000000);			/* a million elements in 20 bytes */
	put32(&v, 1);
	tap_ok(!decode_with(2, &v, err, sizeof(err)) && strstr(err, "truncated") != NULL,
		   "array dimension larger than its data: %s", err);
	v.len = 0;
	put32(&v, 1);
	put32(&v, 0);
	put32(&v, 23);
	put32(&v, -5);
	put32(&v, 1);
	tap_ok(!decode_with(2, &v, err, sizeof(err)), "negative array dimension: %s", err);

	v.len = 0;
	put32(&v, 3);
	tap_ok(!decode_with(3, &v, err, sizeof(err)) && strstr(err, "3 attributes") != NULL,
		   "composite with another attribute count: %s", err);
	v.len = 0;
	put32(&v, 2);
	put32(&v, 23);
	put32(&v, 4);
	put32(&v, 5);
	put32(&v, 25);
	put32(&v, 100);
	putbytes(&v, "hi", 2);
	tap_ok(!decode_with(3, &v, err, sizeof(err)) && strstr(err, "column \"c\"") != NULL,
		   "composite attribute longer than the value: %s", err);
	v.len = 0;
	put32(&v, 2);
	put32(&v, 23);
	put32(&v, 3);
	putbytes(&v, "abc", 3);
	put32(&v, 25);
	put32(&v, -1);
	tap_ok(!decode_with(3, &v, err, sizeof(err)) && strstr(err, "column \"c.x\"") != NULL,
		   "nested int4 of 3 bytes names its path: %s", err);
}

static void
test_numeric_conversion(void)
{
	Buf			v;
	char		text[128];
	__int128	x;
	const char *why;
	static const int d[] = {1, 2345, 6700};	/* 1 2345.6700 with weight 1 */
	static const int small[] = {1};			/* 0.0001 with weight -1 */

	numeric_value(&v, 1, NUMERIC_POS, 4, 3, d);
	numeric_to_text(v.data + 8, 3, 1, false, 4, text, sizeof(text));
	tap_ok(strcmp(text, "12345.6700") == 0, "numeric text %s", text);
	numeric_to_text(v.data + 8, 3, 1, true, 2, text, sizeof(text));
	tap_ok(strcmp(text, "-12345.67") == 0, "numeric text with dscale 2: %s", text);
	numeric_value(&v, -1, NUMERIC_POS, 4, 1, small);
	numeric_to_text(v.data + 8, 1, -1, false, 4, text, sizeof(text));
	tap_ok(strcmp(text, "0.0001") == 0, "numeric text %s", text);
	numeric_to_text(v.data + 8, 0, 0, false, 0, text, sizeof(text));
	tap_ok(strcmp(text, "0") == 0, "numeric zero: %s", text);
	tap_ok(numeric_to_text(v.data + 8, 1, 100, false, 0, text, 16) == -1,
		   "a too small buffer is refused");

	numeric_value(&v, 1, NUMERIC_POS, 4, 3, d);
	tap_ok(numeric_to_scaled(v.data + 8, 3, 1, false, 38, 2, &x, &why) && x == 1234567,
		   "12345.67 at scale 2");
	tap_ok(numeric_to_scaled(v.data + 8, 3, 1, true, 7, 2, &x, &why) && x == -1234567,
		   "-12345.67 fits precision 7");
	tap_ok(!numeric_to_scaled(v.data + 8, 3, 1, false, 6, 2, &x, &why),
		   "12345.67 does not fit precision 6");
	tap_ok(!numeric_to_scaled(v.data + 8, 3, 1, false, 38, 1, &x, &why),
		   "12345.67 loses a digit at scale 1");
	tap_ok(!numeric_to_scaled(v.data + 8, 1, 20, false, 38, 0, &x, &why),
		   "10^80 does not fit");
}

/* Random corruption of valid tuples must end in success or an error */
static void
test_corruption(void)
{
	Buf			good,
				t;
	char		err[512];
	int			ok = 0,
				bad = 0;

	valid_tuple(&good);
	srand(12345);
	for (int i = 0; i < 20000; i++)
	{
		int			n = 1 + rand() % 4;

		t = good;
		for (int k = 0; k < n; k++)
			t.data[rand() % t.len] = (char) rand();
		if (rand() % 4 == 0)
			t.len = rand() % t.len;
		if (decode_one(&t, err, sizeof(err)))
			ok++;
		else
			bad++;
	}
	tap_ok(ok + bad == 20000, "20000 corrupted tuples: %d decoded, %d refused, no crash", ok, bad);
}

int
main(void)
{
	setup_schema();
	test_framing();
	test_malformed_values();
	test_numeric_conversion();
	test_corruption();
	return tap_done();
}
