/*
 * reader_built.c
 *		The checks of test_reader.c on streams built here by a forward
 *		flatbuffer builder (Schema, RecordBatch and DictionaryBatch messages):
 *	- schemas: nesting at and beyond ARROW_MAX_NESTING, fields sharing
 *	  tables (exponential walks), unsupported and malformed types;
 *	- batches pyarrow cannot write: intervals, a delta dictionary claiming
 *	  2^40 values without data;
 *	- decompression bombs, refused before anything big is allocated;
 *	- the newer layouts (views, run ends, list views), well-formed and not.
 * Included by test_reader.c.
 */
#include <lz4frame.h>
#include <zstd.h>

#include "reader_testlib.h"

/* ------------------------------------------------------------------------
 * Schemas built here
 * ------------------------------------------------------------------------
 */

/* A forward flatbuffer builder: parents first, offsets patched to children */
typedef struct Builder
{
	uint8_t		buf[1 << 18];
	uint32_t	len;
} Builder;

static uint32_t
b_alloc(Builder *b, uint32_t n)
{
	uint32_t	pos = (b->len + 3) & ~3u;

	memset(b->buf + b->len, 0, pos + n - b->len);
	b->len = pos + n;
	return pos;
}

/* A table of nf fields; sizes[i] 0 (absent), 4 or 8; slot positions in slots */
static uint32_t
b_table(Builder *b, int nf, const int *sizes, uint32_t *slots)
{
	uint32_t	vt = b_alloc(b, 4 + 2 * nf);
	uint32_t	tsize = 4;
	uint32_t	t;

	for (int i = 0; i < nf; i++)
		tsize += sizes[i];
	t = b_alloc(b, tsize);
	put32(b->buf + t, t - vt);	/* vtable = table - soffset */
	b->buf[vt] = (uint8_t) (4 + 2 * nf);
	b->buf[vt + 2] = (uint8_t) tsize;
	tsize = 4;
	for (int i = 0; i < nf; i++)
	{
		b->buf[vt + 4 + 2 * i] = sizes[i] ? (uint8_t) tsize : 0;
		slots[i] = sizes[i] ? t + tsize : 0;
		tsize += sizes[i];
	}
	return t;
}

static void
b_offset(Builder *b, uint32_t slot, uint32_t target)
{
	put32(b->buf + slot, target - slot);
}

static void
b_string(Builder *b, uint32_t slot, const char *s)
{
	uint32_t	n = (uint32_t) strlen(s);
	uint32_t	p = b_alloc(b, 4 + n + 1);

	put32(b->buf + p, n);
	memcpy(b->buf + p + 4, s, n);
	b_offset(b, slot, p);
}

/*
 * A field to build: type tag, int32 parameters (every scalar of a type table
 * fits a 4-byte little-endian slot), children.
 */
typedef struct Spec
{
	const char *name;
	uint8_t		type;
	int			n_params;
	int32_t		params[3];
	int			n_children;
	const struct Spec *children;
	int			depth;			/* > 0: a chain of 'depth' lists of this */
	bool		shared;			/* all children refer to one table */
	bool		dictionary;		/* dictionary-encoded, id 0, int32 indices */
} Spec;

static uint32_t b_field(Builder *b, const Spec *s, int chain);

/* Children vector of n entries, then the child tables */
static void
b_children(Builder *b, uint32_t slot, const Spec *child, int n, bool shared, int chain)
{
	uint32_t	v = b_alloc(b, 4 + 4 * n);

	put32(b->buf + v, n);
	b_offset(b, slot, v);
	if (shared)
	{
		uint32_t	t = b_field(b, child, chain);

		for (int i = 0; i < n; i++)
			b_offset(b, v + 4 + 4 * i, t);
	}
	else
	{
		for (int i = 0; i < n; i++)
			b_offset(b, v + 4 + 4 * i, b_field(b, &child[i], chain));
	}
}

/* Field table for s (chain > 0: a list wrapping s, chain - 1 times more) */
static uint32_t
b_field(Builder *b, const Spec *s, int chain)
{
	int			fsizes[7] = {4, 4, 4, 4, s->dictionary ? 4 : 0, 4, 0};
	int			psizes[3] = {4, 4, 4};
	uint32_t	slots[7];
	uint32_t	pslots[3];
	uint32_t	t = b_table(b, 7, fsizes, slots);
	uint32_t	tt;

	b->buf[slots[1]] = 1;		/* nullable */
	b_string(b, slots[0], chain > 0 ? "l" : s->name);
	if (chain > 0)
	{
		/* a list around s, or with shared children a struct of two */
		b->buf[slots[2]] = s->shared ? 13 : 12;
		b_offset(b, slots[3], b_table(b, 0, psizes, pslots));
		b_children(b, slots[5], s, s->shared ? 2 : 1, s->shared, chain - 1);
		return t;
	}
	b->buf[slots[2]] = s->type;
	if (s->dictionary)
	{
		static const int dsizes[2] = {8, 4};
		static const int isizes[2] = {4, 4};
		uint32_t	dslots[2];
		uint32_t	islots[2];

		b_offset(b, slots[4], b_table(b, 2, dsizes, dslots));
		b_offset(b, dslots[1], b_table(b, 2, isizes, islots));
		b->buf[islots[0]] = 32;
		b->buf[islots[1]] = 1;
	}
	tt = b_table(b, s->n_params, psizes, pslots);
	for (int i = 0; i < s->n_params; i++)
		put32(b->buf + pslots[i], (uint32_t) s->params[i]);
	b_offset(b, slots[3], tt);
	if (s->n_children > 0)
		b_children(b, slots[5], s->children, s->n_children, s->shared, 0);
	else
		b_offset(b, slots[5], b_alloc(b, 4));	/* empty vector */
	return t;
}

/*
 * Starts a Message flatbuffer of header type 'type' and body length
 * 'body_len'; returns the slot of the header offset.
 */
static uint32_t
b_message(Builder *b, uint8_t type, int64_t body_len)
{
	static const int msizes[4] = {4, 4, 4, 8};
	uint32_t	mslots[4];

	memset(b, 0, sizeof(Builder));
	b->len = 4;
	put32(b->buf, b_table(b, 4, msizes, mslots));
	b->buf[mslots[0]] = 4;		/* V5 */
	b->buf[mslots[1]] = type;
	put64(b->buf + mslots[3], body_len);
	return mslots[2];
}

/* A stream being built: messages appended with out_message */
typedef struct Out
{
	uint8_t    *data;
	size_t		len;
} Out;

/* Appends the message in b (continuation, length, padded flatbuffer, body) */
static void
out_message(Out *o, const Builder *b, const uint8_t *body, size_t body_len)
{
	uint32_t	padded = (b->len + 7) & ~7u;

	o->data = realloc(o->data, o->len + 8 + padded + body_len + 8);
	memset(o->data + o->len, 0, 8 + padded);
	put32(o->data + o->len, 0xffffffffu);
	put32(o->data + o->len + 4, padded);
	memcpy(o->data + o->len + 8, b->buf, b->len);
	if (body_len > 0)
		memcpy(o->data + o->len + 8 + padded, body, body_len);
	o->len += 8 + padded + body_len;
}

/* The Schema message of the fields (depth > 0: wrapped in that many lists) */
static void
out_schema(Out *o, Builder *b, const Spec *fields, int n, int16_t endianness)
{
	static const int ssizes[2] = {4, 4};
	uint32_t	sslots[2];
	uint32_t	header = b_message(b, 1, 0);
	uint32_t	v;

	b_offset(b, header, b_table(b, 2, ssizes, sslots));
	b->buf[sslots[0]] = (uint8_t) endianness;
	v = b_alloc(b, 4 + 4 * n);
	put32(b->buf + v, n);
	b_offset(b, sslots[1], v);
	for (int i = 0; i < n; i++)
		b_offset(b, v + 4 + 4 * i, b_field(b, &fields[i], fields[i].depth));
	out_message(o, b, NULL, 0);
}

/*
 * A RecordBatch table at the offset slot 'slot'; codec -1: uncompressed;
 * n_variadic variadicBufferCounts (none when 0).
 */
static void
b_record_batch(Builder *b, uint32_t slot, int64_t rows, const ArrowNode *nodes, int n_nodes,
			   const ArrowBufferRef *bufs, int n_bufs, int codec,
			   const int64_t *variadic, int n_variadic)
{
	int			rsizes[5] = {8, 4, 4, codec >= 0 ? 4 : 0, n_variadic > 0 ? 4 : 0};
	uint32_t	rslots[5];
	uint32_t	v;

	b_offset(b, slot, b_table(b, 5, rsizes, rslots));
	if (n_variadic > 0)
	{
		v = b_alloc(b, 4 + 4 + 8 * n_variadic);
		v = (v + 4 + 7) / 8 * 8 - 4;	/* int64 elements 8-byte aligned */
		put32(b->buf + v, n_variadic);
		for (int i = 0; i < n_variadic; i++)
			put64(b->buf + v + 4 + 8 * i, variadic[i]);
		b_offset(b, rslots[4], v);
	}
	if (codec >= 0)
	{
		static const int csizes[2] = {4, 4};
		uint32_t	cslots[2];

		b_offset(b, rslots[3], b_table(b, 2, csizes, cslots));
		b->buf[cslots[0]] = (uint8_t) codec;	/* method 0: BUFFER */
	}
	put64(b->buf + rslots[0], rows);
	v = b_alloc(b, 4 + 16 * n_nodes);
	put32(b->buf + v, n_nodes);
	for (int i = 0; i < n_nodes; i++)
	{
		put64(b->buf + v + 4 + 16 * i, nodes[i].length);
		put64(b->buf + v + 12 + 16 * i, nodes[i].null_count);
	}
	b_offset(b, rslots[1], v);
	v = b_alloc(b, 4 + 16 * n_bufs);
	put32(b->buf + v, n_bufs);
	for (int i = 0; i < n_bufs; i++)
	{
		put64(b->buf + v + 4 + 16 * i, bufs[i].offset);
		put64(b->buf + v + 12 + 16 * i, bufs[i].length);
	}
	b_offset(b, rslots[2], v);
}

static void
out_record_batch(Out *o, Builder *b, int64_t rows, const ArrowNode *nodes, int n_nodes,
				 const ArrowBufferRef *bufs, int n_bufs, const uint8_t *body, size_t body_len)
{
	uint32_t	header = b_message(b, 3, (int64_t) body_len);

	b_record_batch(b, header, rows, nodes, n_nodes, bufs, n_bufs, -1, NULL, 0);
	out_message(o, b, body, body_len);
}

/* A DictionaryBatch of dictionary 0 */
static void
out_dictionary_batch(Out *o, Builder *b, bool delta, int64_t rows, const ArrowNode *nodes,
					 int n_nodes, const ArrowBufferRef *bufs, int n_bufs,
					 const uint8_t *body, size_t body_len)
{
	static const int dsizes[3] = {8, 4, 4};
	uint32_t	dslots[3];
	uint32_t	header = b_message(b, 2, (int64_t) body_len);

	b_offset(b, header, b_table(b, 3, dsizes, dslots));
	b->buf[dslots[2]] = delta;
	b_record_batch(b, dslots[1], rows, nodes, n_nodes, bufs, n_bufs, -1, NULL, 0);
	out_message(o, b, body, body_len);
}

/* A stream of one Schema message and the end-of-stream marker */
static uint8_t *
build_stream(const Spec *fields, int n, int16_t endianness, size_t *len)
{
	Builder    *b = malloc(sizeof(Builder));
	Out			o = {NULL, 0};
	static const uint8_t eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};

	out_schema(&o, b, fields, n, endianness);
	o.data = realloc(o.data, o.len + 8);
	memcpy(o.data + o.len, eos, 8);
	*len = o.len + 8;
	free(b);
	return o.data;
}

static void
expect_schema(const Spec *fields, int n, int16_t endianness, ArrowErrorCode code,
			  const char *needle, const char *what)
{
	size_t		len;
	uint8_t    *data = build_stream(fields, n, endianness, &len);
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err = {0};
	int			rc = open_mem(data, len, NULL, &src, &file, &err);

	if (rc == ARROW_OK)
		arrow_file_close(file);
	if (!tap_ok(rc == (int) code && (needle == NULL || strstr(err.message, needle) != NULL),
				"%s: %s", what, arrow_error_code_name(code)))
		tap_diag("got %s: %s", arrow_error_code_name(rc), rc ? err.message : "");
	else if (rc != ARROW_OK)
		tap_diag("  %s", err.message);
	free(data);
}

static void
test_built_schemas(void)
{
	Spec		int32 = {.name = "i", .type = 2, .n_params = 2, .params = {32, 1}};
	Spec		chain = int32;
	Spec		wide[2] = {int32, int32};
	Spec		dag = {.name = "s", .type = 13, .n_children = 2, .children = wide, .shared = true};
	Spec		ree_bad[2] = {{.name = "e", .type = 5}, int32};
	Spec		s;

	/* ARROW_MAX_NESTING levels: 63 lists around an int32 */
	chain.depth = ARROW_MAX_NESTING - 1;
	expect_schema(&chain, 1, 0, ARROW_OK, NULL, "64 levels of nesting");
	chain.depth = ARROW_MAX_NESTING;
	expect_schema(&chain, 1, 0, ARROW_ERR_INVALID, "nested deeper", "65 levels of nesting");
	chain.depth = 1000;
	expect_schema(&chain, 1, 0, ARROW_ERR_INVALID, "nested deeper", "1000 levels of nesting");
	/* 2^40 fields through shared tables: refused, and quickly */
	dag.depth = 40;
	expect_schema(&dag, 1, 0, ARROW_ERR_INVALID, "more fields", "structs of structs sharing tables");

	expect_schema(&int32, 1, 1, ARROW_ERR_UNSUPPORTED, "big-endian", "big-endian schema");
	s = (Spec) {.name = "u", .type = 14};
	expect_schema(&s, 1, 0, ARROW_ERR_UNSUPPORTED, "Union (14) in field \"u\"", "union");
	/* the newer layouts are read; malformed ones are refused */
	s = (Spec) {.name = "m", .type = 17, .n_params = 1, .params = {0}, .n_children = 1, .children = &int32};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "a map's child must be a struct", "map of int32 entries");
	s = (Spec) {.name = "m", .type = 17, .n_params = 1, .params = {1}, .n_children = 1, .children = &dag};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "map of struct<i, i> entries");
	s = (Spec) {.name = "r", .type = 22};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "0 children, 2 expected", "run-end encoded without children");
	s = (Spec) {.name = "r", .type = 22, .n_children = 2, .children = wide};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "run-end encoded int32 runs of int32");
	s = (Spec) {.name = "r", .type = 22, .n_children = 2, .children = ree_bad};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "run ends must be", "run-end encoded with utf8 run ends");
	s = (Spec) {.name = "v", .type = 23};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "binary view");
	s = (Spec) {.name = "v", .type = 24};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "utf8 view");
	s = (Spec) {.name = "v", .type = 24, .dictionary = true};
	expect_schema(&s, 1, 0, ARROW_ERR_UNSUPPORTED, "dictionary of views", "dictionary-encoded utf8 view");
	s = (Spec) {.name = "lv", .type = 25};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "0 children, 1 expected", "list view without a child");
	s = (Spec) {.name = "lv", .type = 26, .n_children = 1, .children = &int32};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "large list view of int32");
	s = (Spec) {.name = "x", .type = 99};
	expect_schema(&s, 1, 0, ARROW_ERR_UNSUPPORTED, "unknown (99)", "unknown type id");
	s = (Spec) {.name = "d", .type = 7, .n_params = 3, .params = {40, 2, 256}};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "decimal256(40, 2)");
	s = (Spec) {.name = "d", .type = 7, .n_params = 3, .params = {77, 2, 256}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "decimal256 precision 77", "decimal256 precision 77");
	s = (Spec) {.name = "d", .type = 7, .n_params = 3, .params = {10, 2, 64}};
	expect_schema(&s, 1, 0, ARROW_ERR_UNSUPPORTED, "decimal64 in field \"d\"", "decimal64");
	s = (Spec) {.name = "d", .type = 7, .n_params = 3, .params = {10, 2, 128}};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "decimal128(10, 2)");
	s = (Spec) {.name = "d", .type = 7, .n_params = 3, .params = {39, 2, 128}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "precision", "decimal128 precision 39");
	s = (Spec) {.name = "i", .type = 2, .n_params = 2, .params = {7, 1}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "bit width", "int bit width 7");
	s = (Spec) {.name = "t", .type = 9, .n_params = 2, .params = {2, 32}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "time unit", "time[us] in 32 bits");
	s = (Spec) {.name = "t", .type = 9, .n_params = 2, .params = {3, 64}};
	expect_schema(&s, 1, 0, ARROW_OK, NULL, "time[ns] in 64 bits");
	s = (Spec) {.name = "ts", .type = 10, .n_params = 1, .params = {4}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "time unit", "timestamp unit 4");
	s = (Spec) {.name = "iv", .type = 11, .n_params = 1, .params = {3}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "interval unit", "interval unit 3");
	s = (Spec) {.name = "f", .type = 3, .n_params = 1, .params = {3}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "precision", "floating point precision 3");
	s = (Spec) {.name = "fsb", .type = 15, .n_params = 1, .params = {-1}};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "byte width", "negative byte width");
	s = (Spec) {.name = "fsl", .type = 16, .n_params = 1, .params = {-3}, .n_children = 1, .children = &int32};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "list size", "negative list size");
	s = (Spec) {.name = "l", .type = 12, .n_children = 2, .children = wide};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "children", "list with two children");
	s = (Spec) {.name = "i", .type = 2, .n_params = 2, .params = {32, 1}, .n_children = 1, .children = &int32};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "children", "int32 with a child");
	s = (Spec) {.name = "n", .type = 0};
	expect_schema(&s, 1, 0, ARROW_ERR_INVALID, "no type", "field without a type");
	expect_schema(NULL, 0, 0, ARROW_OK, NULL, "schema without fields");
}

/*
 * Streams with batches built here: the interval types pyarrow cannot write,
 * and a delta dictionary claiming 2^40 values without data.
 */
static void
test_built_batches(void)
{
	Builder    *b = malloc(sizeof(Builder));
	Out			o = {NULL, 0};
	ArrowError	err;
	char	   *rows;

	/* interval[ym] and interval[dt], two rows, one null */
	{
		Spec		fields[2] = {
			{.name = "ym", .type = 11, .n_params = 1, .params = {0}},
			{.name = "dt", .type = 11, .n_params = 1, .params = {1}},
		};
		ArrowNode	nodes[2] = {{2, 1}, {2, 0}};
		ArrowBufferRef bufs[4] = {{0, 1}, {8, 8}, {16, 0}, {16, 16}};
		uint8_t		body[32] = {0};
		int32_t		ym[2] = {14, -3};
		int32_t		dt[4] = {3, 500, -1, -2};

		body[0] = 0x01;			/* row 0 valid, row 1 null */
		memcpy(body + 8, ym, 8);
		memcpy(body + 16, dt, 16);
		out_schema(&o, b, fields, 2, 0);
		out_record_batch(&o, b, 2, nodes, 2, bufs, 4, body, sizeof(body));
		rows = file_rows(o.data, o.len, &err);
		if (!tap_ok(rows != NULL && strcmp(rows, "{\"row\": {\"ym\": 14, \"dt\": [3, 500]}}\n"
										   "{\"row\": {\"ym\": null, \"dt\": [-1, -2]}}\n") == 0,
					"interval[ym] and interval[dt] read from a stream built here"))
			tap_diag("%s", rows ? rows : err.message);
		free(rows);
		free(o.data);
		o.data = NULL;
		o.len = 0;
	}

	/* struct<> dictionary: 8 values with a null, then a delta of 2^40 */
	{
		Spec		field = {.name = "d", .type = 13, .dictionary = true};
		ArrowNode	dnode1 = {8, 1};
		ArrowBufferRef dbuf1 = {0, 1};
		uint8_t		dbody1[8] = {0xfe};
		ArrowNode	dnode2 = {1LL << 40, 0};
		ArrowBufferRef dbuf2 = {0, 0};
		ArrowNode	node = {1, 0};
		ArrowBufferRef bufs[2] = {{0, 0}, {0, 4}};
		uint8_t		body[8] = {0};

		out_schema(&o, b, &field, 1, 0);
		out_dictionary_batch(&o, b, false, 8, &dnode1, 1, &dbuf1, 1, dbody1, sizeof(dbody1));
		out_record_batch(&o, b, 1, &node, 1, bufs, 2, body, sizeof(body));
		out_dictionary_batch(&o, b, true, 1LL << 40, &dnode2, 1, &dbuf2, 1, NULL, 0);
		out_record_batch(&o, b, 1, &node, 1, bufs, 2, body, sizeof(body));
		expect_error(o.data, o.len, ARROW_OK, AT_LOAD, "struct<> dictionary of 8 values");
		{
			ArrowSource src;
			ArrowFile  *file;
			ArrowBatch *batch = NULL;
			int			rc = open_mem(o.data, o.len, NULL, &src, &file, &err);

			if (rc == ARROW_OK)
			{
				rc = arrow_batch_load(file, 1, NULL, &batch, &err);
				arrow_batch_free(batch);
				arrow_file_close(file);
			}
			tap_ok(rc == ARROW_ERR_INVALID && strstr(err.message, "more values than") != NULL,
				   "delta of 2^40 struct<> values without data is refused: %s", err.message);
		}
		free(o.data);
	}
	free(b);
}

/* ------------------------------------------------------------------------
 * Decompression bombs: compressed buffers declaring far more than the batch
 * can hold must be refused before anything big is allocated
 * ------------------------------------------------------------------------
 */

#define BOMB_BYTES	(4 << 20)	/* what a bomb buffer decompresses to */

/* An allocator over malloc that remembers its largest request */
typedef struct CountingAlloc
{
	size_t		largest;
} CountingAlloc;

static void *
count_malloc(void *ctx, size_t size)
{
	CountingAlloc *c = ctx;

	if (size > c->largest)
		c->largest = size;
	return malloc(size ? size : 1);
}

static void *
count_realloc(void *ctx, void *ptr, size_t size)
{
	CountingAlloc *c = ctx;

	if (size > c->largest)
		c->largest = size;
	return realloc(ptr, size ? size : 1);
}

static void
count_free(void *ctx, void *ptr)
{
	free(ptr);
}

/* BOMB_BYTES zero bytes as one frame of 'codec'; malloc'd, length in *len */
static uint8_t *
bomb_frame(int codec, size_t *len)
{
	uint8_t    *zeros = calloc(1, BOMB_BYTES);
	size_t		cap = codec == ARROW_CODEC_LZ4_FRAME ?
		LZ4F_compressFrameBound(BOMB_BYTES, NULL) : ZSTD_compressBound(BOMB_BYTES);
	uint8_t    *out = malloc(cap);

	if (codec == ARROW_CODEC_LZ4_FRAME)
		*len = LZ4F_compressFrame(out, cap, zeros, BOMB_BYTES, NULL);
	else
		*len = ZSTD_compress(out, cap, zeros, BOMB_BYTES, 19);
	free(zeros);
	return out;
}

/* One buffer of a crafted compressed batch: its bytes, stored uncompressed */
typedef struct Piece
{
	const void *data;
	size_t		len;
} Piece;

/*
 * A stream of field f and one compressed batch of 'rows' rows: every buffer
 * stored as is (length prefix -1) but buffer 'bomb', which is 'frame'
 * declaring BOMB_BYTES.
 */
static uint8_t *
build_bomb(const Spec *f, int64_t rows, const ArrowNode *nodes, int n_nodes,
		   const Piece *pieces, int n_bufs, int bomb, int codec,
		   const uint8_t *frame, size_t frame_len, size_t *len)
{
	Builder    *b = malloc(sizeof(Builder));
	Out			o = {NULL, 0};
	uint8_t    *body = calloc(1, frame_len + 64 * n_bufs + 1024);
	ArrowBufferRef bufs[8];
	size_t		at = 0;
	static const uint8_t eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};

	for (int i = 0; i < n_bufs; i++)
	{
		size_t		n = (i == bomb) ? frame_len : pieces[i].len;

		put64(body + at, i == bomb ? BOMB_BYTES : -1);
		if (n > 0)
			memcpy(body + at + 8, i == bomb ? frame : pieces[i].data, n);
		bufs[i].offset = (int64_t) at;
		bufs[i].length = (int64_t) (8 + n);
		at = (at + 8 + n + 7) & ~(size_t) 7;
	}
	out_schema(&o, b, f, 1, 0);
	{
		uint32_t	header = b_message(b, 3, (int64_t) at);

		b_record_batch(b, header, rows, nodes, n_nodes, bufs, n_bufs, codec, NULL, 0);
		out_message(&o, b, body, at);
	}
	o.data = realloc(o.data, o.len + 8);
	memcpy(o.data + o.len, eos, 8);
	*len = o.len + 8;
	free(body);
	free(b);
	return o.data;
}

/*
 * Loads the batch with 'limit' as max_buffer_size and checks the result
 * code; a refused bomb must not have cost an allocation near its size.
 */
static void
expect_bomb(const uint8_t *data, size_t len, int64_t limit, ArrowErrorCode code,
			const char *what)
{
	CountingAlloc ca = {0};
	ArrowAllocator alloc = {count_malloc, count_realloc, count_free, &ca};
	ArrowSource src;
	ArrowFile  *file = NULL;
	ArrowBatch *batch = NULL;
	ArrowError	err = {0};
	int			rc = open_mem(data, len, &alloc, &src, &file, &err);

	if (rc == ARROW_OK)
	{
		file->max_buffer_size = limit;
		rc = arrow_batch_load(file, 0, NULL, &batch, &err);
		arrow_batch_free(batch);
		arrow_file_close(file);
	}
	if (!tap_ok(rc == (int) code && (code == ARROW_OK || ca.largest < BOMB_BYTES / 4),
				"%s: %s, largest allocation %zu bytes", what, arrow_error_code_name(code),
				ca.largest))
		tap_diag("got %s: %s", arrow_error_code_name(rc), rc ? err.message : "");
	else if (rc != ARROW_OK)
		tap_diag("  %s", err.message);
}

static void
test_bombs(void)
{
	static const Spec int32 = {.name = "i", .type = 2, .n_params = 2, .params = {32, 1}};
	static const Spec utf8 = {.name = "s", .type = 5};
	static const Spec boolean = {.name = "b", .type = 6};
	static const Spec list = {.name = "l", .type = 12, .n_children = 1, .children = &int32};
	static const uint8_t validity[1] = {0x0b};	/* row 2 null */
	static const int32_t ints[4] = {1, 2, 0, 4};
	static const int32_t offsets[5] = {0, 1, 2, 2, 3};
	static const int codecs[2] = {ARROW_CODEC_LZ4_FRAME, ARROW_CODEC_ZSTD};
	const ArrowNode node = {4, 1};
	const ArrowNode list_nodes[2] = {{4, 1}, {3, 0}};
	const Piece fixed[2] = {{validity, 1}, {ints, 16}};
	const Piece strings[3] = {{validity, 1}, {offsets, 20}, {"abc", 3}};
	const Piece bools[2] = {{validity, 1}, {validity, 1}};
	const Piece lists[4] = {{validity, 1}, {offsets, 20}, {NULL, 0}, {ints, 12}};

	for (int c = 0; c < 2; c++)
	{
		const char *name = c == 0 ? "lz4" : "zstd";
		size_t		flen;
		uint8_t    *frame = bomb_frame(codecs[c], &flen);
		size_t		len;
		uint8_t    *d;
		char		what[128];

		tap_diag("%s bomb: %zu bytes declaring %d", name, flen, BOMB_BYTES);
#define BOMB(spec, rows, nodes, n_nodes, pieces, n_bufs, bomb, limit, code, desc) \
		do { \
			d = build_bomb(spec, rows, nodes, n_nodes, pieces, n_bufs, bomb, codecs[c], \
						   frame, flen, &len); \
			snprintf(what, sizeof(what), "%s %s", name, desc); \
			expect_bomb(d, len, limit, code, what); \
			free(d); \
		} while (0)
		BOMB(&int32, 4, &node, 1, fixed, 2, -1, 0, ARROW_OK, "int32 batch without a bomb");
		BOMB(&int32, 4, &node, 1, fixed, 2, 0, 0, ARROW_ERR_INVALID, "validity bitmap bomb");
		BOMB(&int32, 4, &node, 1, fixed, 2, 1, 0, ARROW_ERR_INVALID, "int32 values bomb");
		BOMB(&boolean, 4, &node, 1, bools, 2, 1, 0, ARROW_ERR_INVALID, "bool values bomb");
		BOMB(&utf8, 4, &node, 1, strings, 3, -1, 1 << 20, ARROW_OK, "utf8 batch without a bomb");
		BOMB(&utf8, 4, &node, 1, strings, 3, 1, 0, ARROW_ERR_INVALID, "utf8 offsets bomb");
		BOMB(&utf8, 4, &node, 1, strings, 3, 2, 1 << 20, ARROW_ERR_LIMIT, "utf8 data bomb over the limit");
		BOMB(&list, 4, list_nodes, 2, lists, 4, 1, 0, ARROW_ERR_INVALID, "list offsets bomb");
		BOMB(&list, 4, list_nodes, 2, lists, 4, 3, 0, ARROW_ERR_INVALID, "list child values bomb");
#undef BOMB
		/* without a limit, a big string buffer is not corrupt: it loads */
		d = build_bomb(&utf8, 4, &node, 1, strings, 3, 2, codecs[c], frame, flen, &len);
		snprintf(what, sizeof(what), "%s utf8 data of 4 MiB without a limit", name);
		expect_error(d, len, ARROW_OK, AT_LOAD, what);
		free(d);
		free(frame);
	}
}

/* ------------------------------------------------------------------------
 * The newer layouts on batches built here: views, run ends, list views
 * ------------------------------------------------------------------------
 */

/* A stream of field f and one batch (variadic: its variadicBufferCounts) */
static uint8_t *
build_one(const Spec *f, int64_t rows, const ArrowNode *nodes, int n_nodes,
		  const ArrowBufferRef *bufs, int n_bufs, const uint8_t *body, size_t body_len,
		  const int64_t *variadic, int n_variadic, size_t *len)
{
	Builder    *b = malloc(sizeof(Builder));
	Out			o = {NULL, 0};
	static const uint8_t eos[8] = {0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
	uint32_t	header;

	out_schema(&o, b, f, 1, 0);
	header = b_message(b, 3, (int64_t) body_len);
	b_record_batch(b, header, rows, nodes, n_nodes, bufs, n_bufs, -1, variadic, n_variadic);
	out_message(&o, b, body, body_len);
	o.data = realloc(o.data, o.len + 8);
	memcpy(o.data + o.len, eos, 8);
	*len = o.len + 8;
	free(b);
	return o.data;
}

/* Checks the rows (JSON lines) of a stream, or its error code and message */
static void
expect_rows(const uint8_t *data, size_t len, ArrowErrorCode code, const char *want,
			const char *what)
{
	ArrowError	err = {0};
	char	   *rows = file_rows(data, len, &err);

	if (code == ARROW_OK)
	{
		if (!tap_ok(rows != NULL && strcmp(rows, want) == 0, "%s: reads", what))
			tap_diag("%s", rows ? rows : err.message);
	}
	else if (!tap_ok(rows == NULL && err.code == code && strstr(err.message, want) != NULL,
					 "%s: %s", what, arrow_error_code_name(code)))
		tap_diag("got %s", rows ? rows : err.message);
	else
		tap_diag("  %s", err.message);
	free(rows);
}

static void
test_built_views(void)
{
	Spec		f = {.name = "v", .type = 24};
	ArrowNode	node = {2, 0};
	ArrowBufferRef bufs[3] = {{0, 0}, {0, 32}, {32, 24}};
	int64_t		one = 1;
	int64_t		two = 2;
	uint8_t		body[56] = {0};
	uint8_t		d[56];
	size_t		len;
	uint8_t    *s;

	put32(body, 3);
	memcpy(body + 4, "abc", 3);
	put32(body + 16, 20);
	memcpy(body + 20, "0123", 4);
	put32(body + 24, 0);		/* buffer 0 */
	put32(body + 28, 4);		/* offset 4 */
	memcpy(body + 32, "xxxx0123456789abcdefghij", 24);
#define VIEWS(mutate, n_var, var, code, want, what) \
	do { \
		memcpy(d, body, sizeof(d)); \
		mutate; \
		s = build_one(&f, 2, &node, 1, bufs, 3, d, sizeof(d), var, n_var, &len); \
		expect_rows(s, len, code, want, what); \
		free(s); \
	} while (0)
	VIEWS((void) 0, 1, &one, ARROW_OK,
		  "{\"row\": {\"v\": \"abc\"}}\n{\"row\": {\"v\": \"0123456789abcdefghij\"}}\n",
		  "utf8 view: inline and in a data buffer");
	VIEWS(put32(d + 28, 5), 1, &one, ARROW_ERR_INVALID, "is past data buffer 0 (24 bytes)",
		  "view one byte past its data buffer");
	VIEWS(put32(d + 28, -4), 1, &one, ARROW_ERR_INVALID, "is past data buffer", "view at a negative offset");
	VIEWS(put32(d + 24, 1), 1, &one, ARROW_ERR_INVALID, "refers to data buffer 1 of 1",
		  "view naming a data buffer that is not there");
	VIEWS(put32(d + 24, -1), 1, &one, ARROW_ERR_INVALID, "refers to data buffer -1",
		  "view naming data buffer -1");
	VIEWS(put32(d + 16, -20), 1, &one, ARROW_ERR_INVALID, "negative length", "view of negative length");
	VIEWS(d[23] = '4', 1, &one, ARROW_ERR_INVALID, "prefix", "view whose prefix differs from its data");
	VIEWS((void) 0, 0, NULL, ARROW_ERR_INVALID, "0 variadic buffer counts, the schema has 1",
		  "no variadic buffer counts");
	VIEWS((void) 0, 1, &two, ARROW_ERR_INVALID, "buffers", "variadic count above the buffers");
#undef VIEWS
}

static void
test_built_run_ends(void)
{
	Spec		kids[2] = {
		{.name = "e", .type = 2, .n_params = 2, .params = {32, 1}},
		{.name = "x", .type = 2, .n_params = 2, .params = {32, 1}},
	};
	Spec		f = {.name = "r", .type = 22, .n_children = 2, .children = kids};
	ArrowNode	nodes[3] = {{4, 0}, {2, 0}, {2, 0}};
	ArrowBufferRef bufs[4] = {{0, 0}, {0, 8}, {8, 0}, {8, 8}};
	int32_t		body[4] = {3, 4, 10, 20};
	int32_t		d[4];
	ArrowNode	n[3];
	size_t		len;
	uint8_t    *s;

#define RUNS(mutate, code, want, what) \
	do { \
		memcpy(d, body, sizeof(d)); \
		memcpy(n, nodes, sizeof(n)); \
		mutate; \
		s = build_one(&f, 4, n, 3, bufs, 4, (const uint8_t *) d, sizeof(d), NULL, 0, &len); \
		expect_rows(s, len, code, want, what); \
		free(s); \
	} while (0)
	RUNS((void) 0, ARROW_OK,
		 "{\"row\": {\"r\": 10}}\n{\"row\": {\"r\": 10}}\n{\"row\": {\"r\": 10}}\n{\"row\": {\"r\": 20}}\n",
		 "run-end encoded: 3 x 10, 1 x 20");
	RUNS(d[1] = 3, ARROW_ERR_INVALID, "is not above the one before", "run ends not increasing");
	RUNS(d[0] = 0, ARROW_ERR_INVALID, "is not above the one before (0)", "run end 0");
	RUNS(d[0] = -5, ARROW_ERR_INVALID, "is not above", "negative run end");
	RUNS(d[1] = 3; d[0] = 2, ARROW_ERR_INVALID, "the runs end at 3, the array has 4 values",
		 "run ends short of the length");
	RUNS(n[0].length = 5; n[0].null_count = 0, ARROW_ERR_INVALID, "has 5 values, the batch 4",
		 "run-end encoded longer than the batch");
	RUNS(n[0].null_count = 1, ARROW_ERR_INVALID, "null count", "run-end encoded with a null count");
	RUNS(n[2].length = 1, ARROW_ERR_INVALID, "2 runs but 1 values", "fewer values than runs");
	RUNS(n[1].null_count = 1, ARROW_ERR_INVALID, "validity", "null run end");
#undef RUNS
}

static void
test_built_list_views(void)
{
	Spec		child = {.name = "i", .type = 2, .n_params = 2, .params = {32, 1}};
	Spec		f = {.name = "lv", .type = 25, .n_children = 1, .children = &child};
	ArrowNode	nodes[2] = {{2, 0}, {3, 0}};
	ArrowBufferRef bufs[5] = {{0, 0}, {0, 8}, {8, 8}, {16, 0}, {16, 12}};
	int32_t		body[8] = {1, 0, 2, 3, 5, 6, 7, 0};
	int32_t		d[8];
	size_t		len;
	uint8_t    *s;

#define LV(mutate, code, want, what) \
	do { \
		memcpy(d, body, sizeof(d)); \
		mutate; \
		s = build_one(&f, 2, nodes, 2, bufs, 5, (const uint8_t *) d, sizeof(d), NULL, 0, &len); \
		expect_rows(s, len, code, want, what); \
		free(s); \
	} while (0)
	LV((void) 0, ARROW_OK, "{\"row\": {\"lv\": [6, 7]}}\n{\"row\": {\"lv\": [5, 6, 7]}}\n",
	   "list view: overlapping, out of order");
	LV(d[2] = 3, ARROW_ERR_INVALID, "(3 values at 1) is outside the child (3 values)",
	   "list view past its child");
	LV(d[0] = -1, ARROW_ERR_INVALID, "is outside the child", "list view at a negative offset");
	LV(d[3] = -1, ARROW_ERR_INVALID, "is outside the child", "list view of negative size");
	LV(d[1] = 4; d[3] = 0, ARROW_ERR_INVALID, "is outside the child", "empty list view past the child");
#undef LV
}
