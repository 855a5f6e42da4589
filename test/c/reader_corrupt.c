/*
 * reader_corrupt.c
 *		The checks of test_reader.c on corrupted input: every truncation and
 *		many single-byte corruptions of every seed give an error or a result,
 *		never a crash or a leak (run under ASan+UBSan); targeted corruptions of
 *		chosen seeds (huge vector lengths, negative and past-the-body buffer
 *		offsets, bad footer length, bad offsets and dictionary indices, the
 *		declared lengths of compressed buffers, ...) give the expected error;
 *		and fb_read on hand-made flatbuffers.  Included by test_reader.c.
 */
#include "fb_read.h"
#include "reader_testlib.h"

/* ------------------------------------------------------------------------
 * Truncations and single-byte corruptions
 * ------------------------------------------------------------------------
 */
static void
test_truncation(void)
{
	for (int i = 0; i < n_seeds; i++)
	{
		const Seed *s = &seeds[i];
		bool		is_file = strstr(s->name, ".file") != NULL;
		int			opened = 0;
		int			wrongly_opened = 0;

		for (size_t len = 0; len < s->len; len++)
		{
			uint8_t    *copy = malloc(len ? len : 1);	/* exact size: ASan sees overreads */
			ArrowError	err;

			memcpy(copy, s->data, len);
			if (exercise(copy, len, NULL, &err, NULL) == ARROW_OK)
			{
				opened++;
				if (is_file)
					wrongly_opened++;
			}
			free(copy);
		}
		tap_ok(wrongly_opened == 0, "%s: all %zu truncations handled (%d read as a shorter stream)",
			   s->name, s->len, opened);
	}
}

static void
test_corruption(void)
{
	static const uint8_t values[] = {0x00, 0xff, 0x7f, 0x80};

	for (int i = 0; i < n_seeds; i++)
	{
		const Seed *s = &seeds[i];
		uint8_t    *copy = copy_seed(s);
		int			tried = 0;
		int			ok = 0;

		for (size_t pos = 0; pos < s->len; pos++)
		{
			uint8_t		orig = copy[pos];

			for (size_t v = 0; v < sizeof(values) + 1; v++)
			{
				ArrowError	err;

				copy[pos] = v < sizeof(values) ? values[v] : (uint8_t) (orig ^ 0x01);
				if (copy[pos] == orig)
					continue;
				tried++;
				if (exercise(copy, s->len, NULL, &err, NULL) == ARROW_OK)
					ok++;
			}
			copy[pos] = orig;
		}
		free(copy);
		tap_ok(true, "%s: %d single-byte corruptions handled (%d still read)", s->name, tried, ok);
	}
}

/* ------------------------------------------------------------------------
 * Targeted corruptions
 * ------------------------------------------------------------------------
 */
/* Position of a present scalar field of a table, relative to the buffer */
static uint32_t
field_pos(const FbTable *t, int field)
{
	const uint8_t *d = t->fb->data;

	if (4 + 2 * field + 2 > t->vtable_size)
		return 0;
	return fb_le16(d + t->vtable + 4 + 2 * field) ? t->pos + fb_le16(d + t->vtable + 4 + 2 * field) : 0;
}

/* The footer of a file-format seed */
static bool
footer(const uint8_t *data, size_t len, FbReader *fb, FbTable *ft, int64_t *start)
{
	int32_t		flen = (int32_t) fb_le32(data + len - 10);

	*start = (int64_t) len - 10 - flen;
	return fb_init(fb, data + *start, flen, "footer", ft, NULL) == ARROW_OK;
}

/*
 * The RecordBatch table of the message at msg_offset (the data of a
 * dictionary batch too); *start is the file offset of the flatbuffer.
 */
static bool
message_batch(const uint8_t *data, int64_t msg_offset, FbReader *fb, FbTable *rb, int64_t *start)
{
	FbTable		msg;
	FbTable		header;
	uint8_t		type;
	bool		present;

	*start = msg_offset + 8;
	if (fb_init(fb, data + *start, fb_le32(data + msg_offset + 4), "message", &msg, NULL) != ARROW_OK ||
		fb_get_union(&msg, 1, &type, &header, NULL) != ARROW_OK)
		return false;
	if (type == 3)
	{
		*rb = header;
		return true;
	}
	return type == 2 && fb_get_table(&header, 1, rb, &present, NULL) == ARROW_OK && present;
}

/* File offset of element i of vector field 'field' of table t */
static int64_t
vector_elem(const FbTable *t, int64_t start, int field, uint32_t size, uint32_t i)
{
	FbVector	v;

	if (fb_get_vector(t, field, size, &v, NULL) != ARROW_OK || i >= v.length)
		return -1;
	return start + v.pos + (int64_t) i * size;
}

static void
test_targeted(void)
{
	const Seed *s = find_seed("seed-primitives.file");
	uint8_t    *d;
	size_t		len;
	FbReader	fb;
	FbReader	mfb;
	FbTable		ft;
	FbTable		rb;
	int64_t		fstart;
	int64_t		mstart;
	int64_t		block;
	int64_t		msg_offset;
	int64_t		pos;
	ArrowSource src;
	ArrowFile  *file = NULL;
	ArrowError	err;
	int64_t		body_length;

	if (!tap_ok(s != NULL, "seed-primitives.file for targeted corruptions"))
		return;
	len = s->len;
	d = copy_seed(s);

	/* footer length */
	put32(d + len - 10, (uint32_t) len);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "footer length past the file");
	put32(d + len - 10, 0x7fffffff);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "footer length 2^31-1");
	put32(d + len - 10, (uint32_t) -16);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative footer length");
	memcpy(d, s->data, len);
	memcpy(d + len - 6, "ARROW2", 6);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "trailing magic missing");
	memcpy(d, s->data, len);

	/* footer vectors and blocks */
	if (!tap_ok(footer(d, len, &fb, &ft, &fstart), "footer of the seed parses"))
		goto done;
	block = vector_elem(&ft, fstart, 3, 24, 0);
	put32(d + block - 4, 0x7fffffff);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "record batch vector length 2^31-1");
	put32(d + block - 4, 0x10000);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "record batch vector length past the footer");
	memcpy(d, s->data, len);
	msg_offset = (int64_t) fb_le64(d + block);
	put64(d + block, -8);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative block offset");
	put64(d + block, (int64_t) len);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block offset at the end of the file");
	put64(d + block, INT64_MAX);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block offset INT64_MAX");
	put64(d + block, msg_offset + 8);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block offset inside the message");
	memcpy(d, s->data, len);
	put32(d + block + 8, (uint32_t) -1);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative block metadata length");
	put32(d + block + 8, 0x7fffffff);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block metadata length 2^31-1");
	put32(d + block + 8, 16);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block metadata length shorter than the message");
	memcpy(d, s->data, len);
	put64(d + block + 16, INT64_MAX);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block body length INT64_MAX");
	put64(d + block + 16, (int64_t) fb_le64(s->data + block + 16) + 8);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "block and message body lengths differ");
	memcpy(d, s->data, len);

	/* schema: fields vector length */
	{
		FbTable		st;
		bool		present;

		if (fb_get_table(&ft, 1, &st, &present, NULL) == ARROW_OK && present &&
			(pos = vector_elem(&st, fstart, 1, 4, 0)) > 0)
		{
			put32(d + pos - 4, 0x3fffffff);
			expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "schema fields vector length huge");
			put32(d + pos - 4, 100);
			expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "schema fields vector overlapping other data");
			memcpy(d, s->data, len);
		}
		else
			tap_ok(false, "schema of the footer");
	}

	/* the record batch message: nodes, buffers, length, version */
	if (!tap_ok(message_batch(d, msg_offset, &mfb, &rb, &mstart), "record batch message parses"))
		goto done;
	pos = vector_elem(&rb, mstart, 1, 16, 0);
	put32(d + pos - 4, 0x0fffffff);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "nodes vector length huge");
	put32(d + pos - 4, 12);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "nodes vector one short");
	memcpy(d, s->data, len);
	put64(d + pos, -1);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative node length");
	memcpy(d, s->data, len);
	put64(d + pos + 8, 5);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "null count above the length");
	memcpy(d, s->data, len);
	put64(d + pos + 8, -1);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative null count");
	memcpy(d, s->data, len);
	put64(d + pos, 1LL << 40);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "node length different from the batch length");
	memcpy(d, s->data, len);
	{
		uint32_t	lp = field_pos(&rb, 0);

		put64(d + mstart + lp, -4);
		expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative batch length");
		/* batch and every top-level node 2^40 rows: buffers too short */
		put64(d + mstart + lp, 1LL << 40);
		for (int n = 0; n < 13; n++)
			put64(d + pos + 16 * n, 1LL << 40);
		expect_error(d, len, ARROW_ERR_INVALID, AT_LOAD, "2^40 rows with small buffers");
		memcpy(d, s->data, len);
	}
	body_length = (int64_t) fb_le64(s->data + block + 16);
	pos = vector_elem(&rb, mstart, 2, 16, 1);	/* buffer 1: b's values */
	put64(d + pos, -8);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative buffer offset");
	put64(d + pos, body_length);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "buffer offset at the end of the body");
	put64(d + pos, INT64_MAX);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "buffer offset INT64_MAX");
	memcpy(d, s->data, len);
	put64(d + pos + 8, INT64_MAX);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "buffer length INT64_MAX");
	put64(d + pos + 8, -1);
	expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "negative buffer length");
	put64(d + pos + 8, 0);
	expect_error(d, len, ARROW_ERR_INVALID, AT_LOAD, "bool values buffer emptied");
	memcpy(d, s->data, len);
	pos = vector_elem(&rb, mstart, 2, 16, 0);	/* b's validity, b has a null */
	put64(d + pos + 8, 0);
	expect_error(d, len, ARROW_ERR_INVALID, AT_LOAD, "validity emptied while null count > 0");
	memcpy(d, s->data, len);
	pos = vector_elem(&rb, mstart, 2, 16, 9);	/* i64 values: 32 bytes */
	put64(d + pos + 8, 31);
	expect_error(d, len, ARROW_ERR_INVALID, AT_LOAD, "int64 values one byte short");
	memcpy(d, s->data, len);
	{
		FbTable		msg;
		uint32_t	vp;

		fb_init(&mfb, d + mstart, fb_le32(d + msg_offset + 4), "message", &msg, NULL);
		vp = field_pos(&msg, 0);
		if (tap_ok(vp != 0, "message version field present"))
		{
			d[mstart + vp] = 2;		/* V3 */
			expect_error(d, len, ARROW_ERR_UNSUPPORTED, AT_OPEN, "metadata version V3");
			d[mstart + vp] = 9;
			expect_error(d, len, ARROW_ERR_UNSUPPORTED, AT_OPEN, "metadata version V10");
			memcpy(d, s->data, len);
		}
		vp = field_pos(&msg, 1);
		if (tap_ok(vp != 0, "message header type present"))
		{
			d[mstart + vp] = 1;		/* Schema */
			expect_error(d, len, ARROW_ERR_INVALID, AT_OPEN, "record batch block pointing to a schema");
			memcpy(d, s->data, len);
		}
	}

	/* the file opens after all these restores */
	tap_ok(memcmp(d, s->data, len) == 0 && open_mem(d, len, NULL, &src, &file, &err) == ARROW_OK,
		   "restored copy opens");
	if (file != NULL)
		arrow_file_close(file);
done:
	free(d);
}

/* Corruptions of buffer contents, found through the batch's own extents */
static void
test_targeted_body(void)
{
	const Seed *s;
	uint8_t    *d;
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;
	ArrowExtent ext[8];

	/* strings: s is column 0: validity, offsets (int32), data */
	s = find_seed("seed-strings.file");
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-strings.file opens");
		return;
	}
	arrow_column_extents(file, 0, 0, ext, 8, &err);
	arrow_file_close(file);
	d = copy_seed(s);
	put32(d + ext[1].offset + 8, 0);	/* offsets 0,1,1,1,9 -> 0,1,0,... */
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "decreasing string offsets");
	memcpy(d, s->data, s->len);
	put32(d + ext[1].offset, (uint32_t) -1);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "negative first string offset");
	memcpy(d, s->data, s->len);
	put32(d + ext[1].offset + 16, 1000);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "last string offset past the data");
	memcpy(d, s->data, s->len);
	/* invalid UTF-8 in a utf8 value still prints (as \ufffd) */
	d[ext[2].offset] = 0xff;
	{
		char	   *rows = file_rows(d, s->len, &err);

		tap_ok(rows != NULL && strstr(rows, "\"s\": \"\\ufffd\"") != NULL, "invalid UTF-8 byte prints as \\ufffd");
		free(rows);
	}
	free(d);

	/* dictionary: index out of range */
	s = find_seed("seed-dictionary.file");
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-dictionary.file opens");
		return;
	}
	arrow_column_extents(file, 0, 0, ext, 8, &err);
	arrow_file_close(file);
	d = copy_seed(s);
	put32(d + ext[1].offset, 2);	/* dictionary has 2 values */
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "dictionary index == dictionary length");
	put32(d + ext[1].offset, (uint32_t) -1);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "negative dictionary index");
	memcpy(d, s->data, s->len);
	put32(d + ext[1].offset + 8, 7);	/* row 2 is null: not checked */
	tap_ok(exercise(d, s->len, NULL, &err, NULL) == ARROW_OK, "out-of-range index in a null slot is ignored");
	free(d);

	/* list child too short: l's child has 4 values, offsets end at 4 */
	s = find_seed("seed-nested.file");
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-nested.file opens");
		return;
	}
	arrow_column_extents(file, 0, 0, ext, 8, &err);
	arrow_file_close(file);
	d = copy_seed(s);
	put32(d + ext[1].offset + 16, 5);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "list offsets past the child");
	free(d);

	/* compression: declared lengths of the first buffer with data */
	s = find_seed("seed-zstd.file");
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-zstd.file opens");
		return;
	}
	arrow_column_extents(file, 0, 0, ext, 8, &err);	/* i: validity, values */
	arrow_file_close(file);
	d = copy_seed(s);
	put64(d + ext[1].offset, 1LL << 40);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "zstd buffer declaring 2^40 bytes (bomb guard)");
	put64(d + ext[1].offset, 329);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "zstd buffer declaring one byte more");
	put64(d + ext[1].offset, -2);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "uncompressed length -2");
	put64(d + ext[1].offset, -1);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "zstd frame taken as stored data: too short");
	memcpy(d, s->data, s->len);
	d[ext[1].offset + 8 + ext[1].length / 2] ^= 0x55;
	{
		int			rc = exercise(d, s->len, NULL, &err, NULL);

		tap_ok(rc == ARROW_OK || rc == ARROW_ERR_INVALID, "corrupt zstd frame: %s", rc ? err.message : "still decodes");
	}
	free(d);

	s = find_seed("seed-lz4.file");
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-lz4.file opens");
		return;
	}
	arrow_column_extents(file, 0, 0, ext, 8, &err);
	arrow_file_close(file);
	d = copy_seed(s);
	put64(d + ext[1].offset, 1LL << 40);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "lz4 buffer declaring 2^40 bytes (bomb guard)");
	put64(d + ext[1].offset, 327);
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "lz4 buffer declaring one byte less");
	memcpy(d, s->data, s->len);
	d[ext[1].offset + 8 + 5] ^= 0x40;	/* inside the frame header */
	expect_error(d, s->len, ARROW_ERR_INVALID, AT_LOAD, "corrupt lz4 frame header");
	free(d);
}

/* ------------------------------------------------------------------------
 * fb_read on hand-made buffers
 * ------------------------------------------------------------------------
 */
static void
test_fb(void)
{
	/*
	 * root offset 12; vtable at 4: size 8, table size 12, field 0 at +4,
	 * field 1 at +8; table at 12: soffset 8, int32 field 0, offset to the
	 * string "abc" at 24
	 */
	static const uint8_t good[32] = {
		12, 0, 0, 0, 8, 0, 12, 0, 4, 0, 8, 0, 8, 0, 0, 0,
		0x44, 0x33, 0x22, 0x11, 4, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c', 0
	};
	uint8_t		b[32];
	FbReader	fb;
	FbTable		t;
	FbTable		sub;
	FbVector	v;
	ArrowError	err;
	int32_t		i32;
	int64_t		i64;
	const char *str;
	uint32_t	len;
	bool		present;

	tap_ok(fb_init(&fb, good, sizeof(good), "test", &t, &err) == ARROW_OK, "fb: good buffer");
	tap_ok(fb_get_int32(&t, 0, 7, &i32, &err) == ARROW_OK && i32 == 0x11223344, "fb: int32 field");
	tap_ok(fb_get_int32(&t, 5, 7, &i32, &err) == ARROW_OK && i32 == 7, "fb: absent field gives the default");
	tap_ok(fb_get_string(&t, 1, &str, &len, &err) == ARROW_OK && len == 3 && memcmp(str, "abc", 3) == 0,
		   "fb: string field");
	tap_ok(fb_get_int64(&t, 1, 0, &i64, &err) == ARROW_ERR_INVALID, "fb: int64 reaching past the table");
	tap_ok(fb_get_table(&t, 1, &sub, &present, &err) == ARROW_ERR_INVALID,
		   "fb: string bytes taken as a table: %s", err.message);
	tap_ok(fb_get_vector(&t, 1, 8, &v, &err) == ARROW_ERR_INVALID, "fb: 3 elements of 8 bytes past the end");
	tap_ok(fb_init(&fb, good, 3, "test", &t, &err) == ARROW_ERR_INVALID, "fb: 3-byte buffer");

	memcpy(b, good, sizeof(b));
	b[0] = 30;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_ERR_INVALID, "fb: root past the end");
	memcpy(b, good, sizeof(b));
	b[12] = 13;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_ERR_INVALID, "fb: vtable before the buffer");
	memcpy(b, good, sizeof(b));
	b[12] = 0xf0;
	b[13] = b[14] = b[15] = 0xff;	/* vtable at 12 + 16 = 28: its size runs out */
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_ERR_INVALID, "fb: vtable at the end");
	memcpy(b, good, sizeof(b));
	b[4] = 7;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_ERR_INVALID, "fb: odd vtable size");
	memcpy(b, good, sizeof(b));
	b[6] = 40;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_ERR_INVALID, "fb: table size past the end");
	memcpy(b, good, sizeof(b));
	b[8] = 12;					/* field 0 at +12: outside the 12-byte table */
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_OK &&
		   fb_get_int32(&t, 0, 0, &i32, &err) == ARROW_ERR_INVALID, "fb: field outside its table");
	memcpy(b, good, sizeof(b));
	b[20] = 0;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_OK &&
		   fb_get_string(&t, 1, &str, &len, &err) == ARROW_ERR_INVALID, "fb: zero offset");
	memcpy(b, good, sizeof(b));
	b[24] = 5;
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_OK &&
		   fb_get_string(&t, 1, &str, &len, &err) == ARROW_ERR_INVALID, "fb: string longer than the buffer");
	memcpy(b, good, sizeof(b));
	b[23] = 0x80;				/* offset 2^31 + 4 */
	tap_ok(fb_init(&fb, b, sizeof(b), "test", &t, &err) == ARROW_OK &&
		   fb_get_string(&t, 1, &str, &len, &err) == ARROW_ERR_INVALID, "fb: offset beyond 2 GiB");
}
