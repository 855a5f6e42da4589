/*
 * test_writer.c
 *		Unit tests of the writing side of the Arrow library: the flatbuffer
 *		builder (read back with fb_read), the column builders and their range
 *		checks, files with every type read back with the reader, 64-byte
 *		alignment, dictionaries, append (schema mismatch, restore after a
 *		failed write, abort, the journal that undoes a crashed append), I/O
 *		errors and concurrent batch writes.
 *
 * Write failures are real ones: RLIMIT_FSIZE with SIGXFSZ ignored makes
 * pwrite fail with EFBIG once the file would grow past the limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arrow_build.h"
#include "fb_build.h"
#include "fb_read.h"
#include "tap.h"

static char tmpdir[] = "/tmp/test_writer.XXXXXX";

static char *
tmp_path(const char *name)
{
	static char paths[8][256];
	static int	next = 0;
	char	   *p = paths[next++ % 8];

	snprintf(p, 256, "%s/%s", tmpdir, name);
	return p;
}

/* The whole file, malloc'ed; NULL if it cannot be read */
static uint8_t *
slurp(const char *path, size_t *len)
{
	struct stat st;
	uint8_t    *buf;
	int			fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || (buf = malloc(st.st_size + 1)) == NULL)
	{
		close(fd);
		return NULL;
	}
	*len = (size_t) st.st_size;
	if (read(fd, buf, *len) != (ssize_t) *len)
	{
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

static bool
same_bytes(const uint8_t *a, size_t alen, const char *path)
{
	size_t		blen;
	uint8_t    *b = slurp(path, &blen);
	bool		same = b != NULL && alen == blen && memcmp(a, b, alen) == 0;

	free(b);
	return same;
}

/* ------------------------------------------------------------------------
 * Flatbuffer builder
 * ------------------------------------------------------------------------
 */

/* Position in the buffer of field f of table t (0 when absent) */
static uint32_t
field_pos(const FbTable *t, int f)
{
	uint16_t	off = fb_le16(t->fb->data + t->vtable + 4 + 2 * f);

	return off ? t->pos + off : 0;
}

static void
test_fb_build(void)
{
	FbBuilder	fb;
	FbReader	rd;
	FbTable		root;
	FbTable		sub;
	FbVector	vec;
	ArrowError	err;
	const uint8_t *data;
	size_t		len;
	uint8_t		structs[3 * 16];
	int32_t		ints[3] = {-1, 2, 70000};
	uint8_t		inl[16];
	FbRef		str;
	FbRef		ivec;
	FbRef		svec;
	FbRef		tabs[2];
	FbRef		tvec;
	FbRef		uni;
	FbRef		top;
	bool		bv;
	uint8_t		u8;
	int16_t		i16;
	int32_t		i32;
	int64_t		i64;
	const char *s;
	uint32_t	slen;
	bool		aligned = true;

	fb_builder_init(&fb, NULL);
	str = fb_create_string(&fb, "hello", 5);
	ivec = fb_create_vector(&fb, ints, 3, 4, 4);
	for (int i = 0; i < 3; i++)
	{
		fb_put_le64(structs + 16 * i, (uint64_t) (i * 100));
		fb_put_le64(structs + 16 * i + 8, (uint64_t) -i);
	}
	svec = fb_create_vector(&fb, structs, 3, 16, 8);
	for (int i = 0; i < 2; i++)
	{
		fb_table_start(&fb);
		fb_add_int32(&fb, 0, 10 + i);
		tabs[i] = fb_table_end(&fb);
	}
	tvec = fb_create_offset_vector(&fb, tabs, 2);
	fb_table_start(&fb);
	fb_add_int16(&fb, 0, 77);
	uni = fb_table_end(&fb);
	fb_put_le64(inl, 0x1122334455667788ULL);
	fb_put_le64(inl + 8, 42);

	fb_table_start(&fb);
	fb_add_bool(&fb, 0, true);
	fb_add_uint8(&fb, 1, 200);
	fb_add_int16(&fb, 2, -300);
	fb_add_int32(&fb, 3, -70000);
	fb_add_int64(&fb, 4, INT64_MIN);
	fb_add_offset(&fb, 5, str);
	fb_add_offset(&fb, 6, ivec);
	fb_add_offset(&fb, 7, svec);
	fb_add_offset(&fb, 8, tvec);
	fb_add_struct(&fb, 9, inl, 16, 8);
	fb_add_union(&fb, 10, 3, uni);
	/* field 12 left absent, 13 present: the vtable has a hole */
	fb_add_int32(&fb, 13, 5);
	top = fb_table_end(&fb);
	if (!tap_ok(fb_finish(&fb, top, &data, &len, &err) == ARROW_OK, "fb: build a table with every kind of field"))
	{
		tap_diag("%s", err.message);
		fb_builder_free(&fb);
		return;
	}
	tap_ok(len % 8 == 0, "fb: finished size %zu is a multiple of the largest alignment", len);
	tap_ok(fb_init(&rd, data, len, "test", &root, &err) == ARROW_OK, "fb: fb_read accepts it");
	tap_ok(fb_get_bool(&root, 0, false, &bv, &err) == ARROW_OK && bv, "fb: bool");
	tap_ok(fb_get_uint8(&root, 1, 0, &u8, &err) == ARROW_OK && u8 == 200, "fb: uint8");
	tap_ok(fb_get_int16(&root, 2, 0, &i16, &err) == ARROW_OK && i16 == -300, "fb: int16");
	tap_ok(fb_get_int32(&root, 3, 0, &i32, &err) == ARROW_OK && i32 == -70000, "fb: int32");
	tap_ok(fb_get_int64(&root, 4, 0, &i64, &err) == ARROW_OK && i64 == INT64_MIN, "fb: int64");
	tap_ok(fb_get_string(&root, 5, &s, &slen, &err) == ARROW_OK && slen == 5 &&
		   memcmp(s, "hello", 5) == 0 && s[5] == '\0', "fb: string with NUL terminator");
	tap_ok(fb_get_vector(&root, 6, 4, &vec, &err) == ARROW_OK && vec.length == 3 &&
		   (int32_t) fb_le32(fb_vector_elem(&vec, 0)) == -1 &&
		   (int32_t) fb_le32(fb_vector_elem(&vec, 2)) == 70000, "fb: vector of int32");
	aligned = aligned && vec.pos % 4 == 0;
	tap_ok(fb_get_vector(&root, 7, 16, &vec, &err) == ARROW_OK && vec.length == 3 &&
		   fb_le64(fb_vector_elem(&vec, 2)) == 200 &&
		   (int64_t) fb_le64(fb_vector_elem(&vec, 2) + 8) == -2, "fb: vector of structs");
	tap_ok(vec.pos % 8 == 0, "fb: 8-byte struct elements are 8-byte aligned");
	tap_ok(fb_get_vector(&root, 8, 4, &vec, &err) == ARROW_OK && vec.length == 2 &&
		   fb_vector_table(&vec, 1, &sub, &err) == ARROW_OK &&
		   fb_get_int32(&sub, 0, 0, &i32, &err) == ARROW_OK && i32 == 11, "fb: vector of tables");
	tap_ok(field_pos(&root, 9) % 8 == 0 &&
		   fb_le64(data + field_pos(&root, 9)) == 0x1122334455667788ULL &&
		   fb_le64(data + field_pos(&root, 9) + 8) == 42, "fb: inline struct, aligned");
	tap_ok(fb_get_union(&root, 10, &u8, &sub, &err) == ARROW_OK && u8 == 3 &&
		   fb_get_int16(&sub, 0, 0, &i16, &err) == ARROW_OK && i16 == 77, "fb: union");
	tap_ok(field_pos(&root, 12) == 0 && fb_get_int32(&root, 12, -9, &i32, &err) == ARROW_OK && i32 == -9,
		   "fb: absent field reads as the default");
	tap_ok(fb_get_int32(&root, 13, 0, &i32, &err) == ARROW_OK && i32 == 5, "fb: field after a hole");
	for (int f = 1; f <= 4; f++)
	{
		static const uint32_t sizes[] = {0, 1, 2, 4, 8};

		aligned = aligned && field_pos(&root, f) % sizes[f] == 0;
	}
	tap_ok(aligned, "fb: every scalar is aligned to its size");

	/* misuse is reported by fb_finish, the first error wins */
	fb_builder_reset(&fb);
	fb_add_int32(&fb, 0, 1);
	fb_table_start(&fb);
	top = fb_table_end(&fb);
	tap_ok(fb_finish(&fb, top, &data, &len, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "outside a table") != NULL,
		   "fb: field outside a table is an error (%s)", err.message);
	fb_builder_reset(&fb);
	fb_table_start(&fb);
	fb_add_int32(&fb, FB_MAX_FIELDS, 1);
	top = fb_table_end(&fb);
	tap_ok(fb_finish(&fb, top, &data, &len, &err) == ARROW_ERR_ARGUMENT, "fb: field id out of range");
	fb_builder_reset(&fb);
	fb_table_start(&fb);
	str = fb_create_string(&fb, "x", 1);
	tap_ok(fb_finish(&fb, str, &data, &len, &err) == ARROW_ERR_ARGUMENT, "fb: string inside an open table");
	fb_builder_free(&fb);
}

/* ------------------------------------------------------------------------
 * Column builders
 * ------------------------------------------------------------------------
 */
static ArrowField
mkfield(const char *name, ArrowTypeId id, bool nullable)
{
	ArrowField	f;

	memset(&f, 0, sizeof(f));
	f.name = (char *) name;
	f.nullable = nullable;
	f.type.id = id;
	return f;
}

static void
test_builder_ranges(void)
{
	ArrowField	f;
	ArrowBuilder *b;
	ArrowError	err;

	struct
	{
		ArrowTypeId id;
		int64_t		lo;
		int64_t		hi;
	}			ints[] = {
		{ARROW_TYPE_INT8, INT8_MIN, INT8_MAX},
		{ARROW_TYPE_INT16, INT16_MIN, INT16_MAX},
		{ARROW_TYPE_INT32, INT32_MIN, INT32_MAX},
		{ARROW_TYPE_UINT8, 0, UINT8_MAX},
		{ARROW_TYPE_UINT16, 0, UINT16_MAX},
		{ARROW_TYPE_UINT32, 0, UINT32_MAX},
		{ARROW_TYPE_DATE32, INT32_MIN, INT32_MAX},
		{ARROW_TYPE_INTERVAL_YM, INT32_MIN, INT32_MAX},
	};

	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
	{
		char		tname[64];

		f = mkfield("x", ints[i].id, true);
		arrow_type_format(&f.type, tname, sizeof(tname));
		arrow_builder_create(&f, NULL, &b, &err);
		tap_ok(arrow_append_int(b, ints[i].lo, &err) == ARROW_OK &&
			   arrow_append_int(b, ints[i].hi, &err) == ARROW_OK &&
			   arrow_append_int(b, ints[i].lo - 1, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_int(b, ints[i].hi + 1, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_uint(b, (uint64_t) ints[i].hi + 1, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_builder_length(b) == 2,
			   "%s accepts [%lld, %lld] only", tname, (long long) ints[i].lo, (long long) ints[i].hi);
		arrow_builder_free(b);
	}
	f = mkfield("u", ARROW_TYPE_UINT64, true);
	arrow_builder_create(&f, NULL, &b, &err);
	tap_ok(arrow_append_uint(b, UINT64_MAX, &err) == ARROW_OK &&
		   arrow_append_int(b, -1, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "out of range") && strstr(err.message, "\"u\""),
		   "uint64 takes 2^64-1 and rejects -1 (%s)", err.message);
	arrow_builder_free(b);
	f = mkfield("i", ARROW_TYPE_INT64, true);
	arrow_builder_create(&f, NULL, &b, &err);
	tap_ok(arrow_append_int(b, INT64_MIN, &err) == ARROW_OK &&
		   arrow_append_uint(b, INT64_MAX, &err) == ARROW_OK &&
		   arrow_append_uint(b, (uint64_t) INT64_MAX + 1, &err) == ARROW_ERR_ARGUMENT,
		   "int64 range through append_int and append_uint");
	arrow_builder_free(b);

	/* times of day */
	{
		struct
		{
			ArrowTypeId id;
			ArrowTimeUnit unit;
			int64_t		day;
		}			times[] = {
			{ARROW_TYPE_TIME32, ARROW_UNIT_SECOND, 86400},
			{ARROW_TYPE_TIME32, ARROW_UNIT_MILLI, 86400000},
			{ARROW_TYPE_TIME64, ARROW_UNIT_MICRO, 86400000000LL},
			{ARROW_TYPE_TIME64, ARROW_UNIT_NANO, 86400000000000LL},
		};

		for (int i = 0; i < 4; i++)
		{
			f = mkfield("t", times[i].id, true);
			f.type.unit = times[i].unit;
			arrow_builder_create(&f, NULL, &b, &err);
			tap_ok(arrow_append_int(b, 0, &err) == ARROW_OK &&
				   arrow_append_int(b, times[i].day - 1, &err) == ARROW_OK &&
				   arrow_append_int(b, times[i].day, &err) == ARROW_ERR_ARGUMENT &&
				   arrow_append_int(b, -1, &err) == ARROW_ERR_ARGUMENT,
				   "time unit %d: [0, %lld) only", times[i].unit, (long long) times[i].day);
			arrow_builder_free(b);
		}
		f = mkfield("t", ARROW_TYPE_TIME32, true);
		f.type.unit = ARROW_UNIT_MICRO;
		tap_ok(arrow_builder_create(&f, NULL, &b, &err) == ARROW_ERR_ARGUMENT && b == NULL,
			   "time32 with microseconds is rejected (%s)", err.message);
		f = mkfield("t", ARROW_TYPE_TIME64, true);
		f.type.unit = ARROW_UNIT_MILLI;
		tap_ok(arrow_builder_create(&f, NULL, &b, &err) == ARROW_ERR_ARGUMENT, "time64 with milliseconds is rejected");
		f = mkfield("t", ARROW_TYPE_TIMESTAMP, true);
		f.type.unit = 7;
		tap_ok(arrow_builder_create(&f, NULL, &b, &err) == ARROW_ERR_ARGUMENT, "timestamp with unit 7 is rejected");
	}

	/* floats */
	{
		uint16_t	h;

		f = mkfield("h", ARROW_TYPE_FLOAT16, true);
		arrow_builder_create(&f, NULL, &b, &err);
		tap_ok(arrow_append_float(b, 65519.0, &err) == ARROW_OK &&
			   arrow_append_float(b, 65520.0, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_float(b, -1e300, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_float(b, INFINITY, &err) == ARROW_OK &&
			   arrow_append_float(b, NAN, &err) == ARROW_OK,
			   "float16: 65519 rounds to max, 65520 and beyond are out of range, inf/NaN kept");
		/* just above a tie between two halves: a detour through float would tie */
		arrow_builder_reset(b);
		arrow_append_float(b, 1.0 + 0x1p-11 + 0x1p-40, &err);
		arrow_append_float(b, 1.0 + 0x1p-11, &err);
		arrow_append_float(b, -0.0, &err);
		{
			ArrowNode	nodes[1];
			ArrowNode  *np = nodes;
			ArrowBuiltBuffer bufs[2];
			ArrowBuiltBuffer *bp = bufs;

			arrow_builder_export(b, &np, &bp);
			memcpy(&h, bufs[1].data, 2);
			tap_ok(h == 0x3c01, "float16: 1 + 2^-11 + 2^-40 rounds up to 0x3c01 (got 0x%04x)", h);
			memcpy(&h, bufs[1].data + 2, 2);
			tap_ok(h == 0x3c00, "float16: 1 + 2^-11 ties to even 0x3c00 (got 0x%04x)", h);
			memcpy(&h, bufs[1].data + 4, 2);
			tap_ok(h == 0x8000, "float16: -0.0 keeps its sign");
		}
		arrow_builder_free(b);
		f = mkfield("f", ARROW_TYPE_FLOAT32, true);
		arrow_builder_create(&f, NULL, &b, &err);
		tap_ok(arrow_append_float(b, 3.4028234663852886e38, &err) == ARROW_OK &&
			   arrow_append_float(b, 3.4028235677973366e38, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_float(b, 1e39, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_float(b, -INFINITY, &err) == ARROW_OK &&
			   arrow_append_float(b, 1e-50, &err) == ARROW_OK,
			   "float32: FLT_MAX ok, overflow to infinity rejected, underflow rounds");
		tap_ok(arrow_append_int(b, 1, &err) == ARROW_ERR_ARGUMENT && strstr(err.message, "float"),
			   "append_int to float32 is rejected (%s)", err.message);
		arrow_builder_free(b);
	}

	/* decimal precision */
	{
		ArrowDecimal128 d;

		f = mkfield("d", ARROW_TYPE_DECIMAL128, true);
		f.type.precision = 3;
		arrow_builder_create(&f, NULL, &b, &err);
		d.hi = 0, d.lo = 999;
		tap_ok(arrow_append_decimal(b, d, &err) == ARROW_OK, "decimal128(3, 0) takes 999");
		d.hi = -1, d.lo = (uint64_t) -999;
		tap_ok(arrow_append_decimal(b, d, &err) == ARROW_OK, "decimal128(3, 0) takes -999");
		d.hi = 0, d.lo = 1000;
		tap_ok(arrow_append_decimal(b, d, &err) == ARROW_ERR_ARGUMENT, "decimal128(3, 0) rejects 1000 (%s)", err.message);
		d.hi = -1, d.lo = (uint64_t) -1000;
		tap_ok(arrow_append_decimal(b, d, &err) == ARROW_ERR_ARGUMENT, "decimal128(3, 0) rejects -1000");
		arrow_builder_free(b);
		f.type.precision = 39;
		tap_ok(arrow_builder_create(&f, NULL, &b, &err) == ARROW_ERR_ARGUMENT, "precision 39 is rejected");
	}

	/* bytes */
	{
		static const char *bad[] = {"\xff", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "a\xe2\x82"};

		f = mkfield("s", ARROW_TYPE_UTF8, true);
		arrow_builder_create(&f, NULL, &b, &err);
		tap_ok(arrow_append_bytes(b, "h\xc3\xa9\xf0\x9f\x98\x80", 8, &err) == ARROW_OK, "utf8 takes valid UTF-8");
		for (int i = 0; i < 5; i++)
			tap_ok(arrow_append_bytes(b, bad[i], strlen(bad[i]), &err) == ARROW_ERR_ARGUMENT,
				   "utf8 rejects invalid sequence %d", i);
		tap_ok(arrow_append_bool(b, true, &err) == ARROW_ERR_ARGUMENT, "append_bool to utf8 is rejected");
		arrow_builder_free(b);
		f = mkfield("fsb", ARROW_TYPE_FIXED_SIZE_BINARY, true);
		f.type.byte_width = 4;
		arrow_builder_create(&f, NULL, &b, &err);
		tap_ok(arrow_append_bytes(b, "abcd", 4, &err) == ARROW_OK &&
			   arrow_append_bytes(b, "abc", 3, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_bytes(b, "abcde", 5, &err) == ARROW_ERR_ARGUMENT,
			   "fixed_size_binary(4) takes 4 bytes only (%s)", err.message);
		arrow_builder_free(b);
	}

	/* int32 offsets cannot pass 2 GiB: a real 2 GiB buffer, never read */
	{
		size_t		big = (size_t) INT32_MAX;
		void	   *mem = mmap(NULL, big + 1, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		ArrowTypeId ids[] = {ARROW_TYPE_BINARY, ARROW_TYPE_UTF8};

		for (int i = 0; i < 2 && mem != MAP_FAILED; i++)
		{
			f = mkfield("big", ids[i], true);
			arrow_builder_create(&f, NULL, &b, &err);
			tap_ok(arrow_append_bytes(b, "x", 1, &err) == ARROW_OK &&
				   arrow_append_bytes(b, mem, big, &err) == ARROW_ERR_ARGUMENT &&
				   strstr(err.message, "2 GiB") != NULL && arrow_builder_length(b) == 1,
				   "%s: int32 offset overflow is an error (%s)", i ? "utf8" : "binary", err.message);
			arrow_builder_free(b);
		}
		if (mem != MAP_FAILED)
			munmap(mem, big + 1);
	}

	/* nulls and nesting misuse */
	f = mkfield("nn", ARROW_TYPE_INT32, false);
	arrow_builder_create(&f, NULL, &b, &err);
	tap_ok(arrow_append_null(b, &err) == ARROW_ERR_ARGUMENT && strstr(err.message, "non-nullable"),
		   "null for a non-nullable field is rejected (%s)", err.message);
	arrow_builder_free(b);
	{
		ArrowField	item = mkfield("item", ARROW_TYPE_INT32, true);
		ArrowField	l = mkfield("l", ARROW_TYPE_LIST, true);

		l.n_children = 1;
		l.children = &item;
		arrow_builder_create(&l, NULL, &b, &err);
		tap_ok(arrow_list_end(b, &err) == ARROW_ERR_ARGUMENT, "list_end without an open list is rejected");
		tap_ok(arrow_append_valid(b, &err) == ARROW_OK &&
			   arrow_append_int(arrow_builder_child(b, 0), 5, &err) == ARROW_OK &&
			   arrow_append_null(b, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "still open") != NULL &&
			   arrow_list_end(b, &err) == ARROW_OK && arrow_append_null(b, &err) == ARROW_OK,
			   "appending to a list builder with an open list is rejected");
		tap_ok(arrow_builder_child(b, 1) == NULL && arrow_builder_child(b, -1) == NULL,
			   "arrow_builder_child out of range is NULL");
		tap_ok(arrow_append_int(b, 1, &err) == ARROW_ERR_ARGUMENT, "append_int to a list is rejected");
		arrow_builder_free(b);
		l.n_children = 0;
		tap_ok(arrow_builder_create(&l, NULL, &b, &err) == ARROW_ERR_ARGUMENT, "a list without a child is rejected");
	}
	{
		ArrowField	f2 = mkfield("d", ARROW_TYPE_UTF8, true);

		f2.has_dictionary = true;
		f2.dictionary.index_type = ARROW_TYPE_INT8;
		arrow_builder_create(&f2, NULL, &b, &err);
		tap_ok(arrow_append_int(b, 127, &err) == ARROW_OK &&
			   arrow_append_int(b, 128, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_int(b, -1, &err) == ARROW_ERR_ARGUMENT &&
			   arrow_append_bytes(b, "a", 1, &err) == ARROW_ERR_ARGUMENT,
			   "dictionary int8 indices: 0..127, no values");
		arrow_builder_free(b);
		f2.dictionary.index_type = ARROW_TYPE_FLOAT32;
		tap_ok(arrow_builder_create(&f2, NULL, &b, &err) == ARROW_ERR_ARGUMENT, "float dictionary index type is rejected");
	}
}

/* Validity is created at the first null, earlier rows valid; sizes */
static void
test_builder_layout(void)
{
	ArrowField	f = mkfield("x", ARROW_TYPE_INT32, true);
	ArrowBuilder *b;
	ArrowError	err;
	ArrowNode	nodes[8];
	ArrowBuiltBuffer bufs[8];
	ArrowNode  *np;
	ArrowBuiltBuffer *bp;
	bool		ok = true;

	arrow_builder_create(&f, NULL, &b, &err);
	for (int i = 0; i < 10; i++)
		arrow_append_int(b, i, &err);
	np = nodes, bp = bufs;
	arrow_builder_export(b, &np, &bp);
	tap_ok(nodes[0].length == 10 && nodes[0].null_count == 0 && bufs[0].length == 0 &&
		   bufs[1].length == 40, "no null: empty validity buffer, 40 value bytes");
	tap_ok(arrow_builder_body_size(b) == 64, "body size 64 for 40 bytes of values");
	arrow_append_null(b, &err);
	arrow_append_int(b, 11, &err);
	np = nodes, bp = bufs;
	arrow_builder_export(b, &np, &bp);
	tap_ok(nodes[0].length == 12 && nodes[0].null_count == 1 && bufs[0].length == 2 &&
		   bufs[0].data[0] == 0xff && bufs[0].data[1] == 0x0b,
		   "first null at row 10: bitmap ff 0b (got %02x %02x)",
		   bufs[0].length ? bufs[0].data[0] : 0, bufs[0].length > 1 ? bufs[0].data[1] : 0);
	tap_ok(arrow_builder_body_size(b) == 128, "body size 128 with a validity buffer");
	arrow_builder_reset(b);
	arrow_append_int(b, 1, &err);
	np = nodes, bp = bufs;
	arrow_builder_export(b, &np, &bp);
	tap_ok(nodes[0].length == 1 && nodes[0].null_count == 0 && bufs[0].length == 0 &&
		   bufs[1].length == 4, "reset forgets values and validity");
	arrow_builder_free(b);

	/* bools: bits past the last value stay zero, also after reset */
	f = mkfield("b", ARROW_TYPE_BOOL, true);
	arrow_builder_create(&f, NULL, &b, &err);
	for (int i = 0; i < 8; i++)
		arrow_append_bool(b, true, &err);
	arrow_builder_reset(b);
	arrow_append_bool(b, true, &err);
	arrow_append_null(b, &err);
	arrow_append_bool(b, true, &err);
	np = nodes, bp = bufs;
	arrow_builder_export(b, &np, &bp);
	tap_ok(bufs[1].length == 1 && bufs[1].data[0] == 0x05 && bufs[0].data[0] == 0x05,
		   "bool values 0x05, validity 0x05, no stale bits after reset");
	arrow_builder_free(b);

	/* struct null: a nullable child gets a null, a non-nullable child a zero */
	{
		ArrowField	kids[2] = {mkfield("a", ARROW_TYPE_INT16, false), mkfield("b", ARROW_TYPE_UTF8, true)};
		ArrowField	s = mkfield("s", ARROW_TYPE_STRUCT, true);

		s.n_children = 2;
		s.children = kids;
		arrow_builder_create(&s, NULL, &b, &err);
		arrow_append_null(b, &err);
		np = nodes, bp = bufs;
		arrow_builder_export(b, &np, &bp);
		ok = nodes[0].null_count == 1 && nodes[1].length == 1 && nodes[1].null_count == 0 &&
			nodes[2].length == 1 && nodes[2].null_count == 1;
		tap_ok(ok, "null struct: child a (not nullable) filled, child b null");
		arrow_builder_free(b);
	}
}

/* ------------------------------------------------------------------------
 * A file with every type, read back
 * ------------------------------------------------------------------------
 */
enum
{
	C_N, C_B, C_I8, C_I16, C_I32, C_I64, C_U8, C_U16, C_U32, C_U64, C_F16,
	C_F32, C_F64, C_DEC, C_D32, C_D64, C_T32, C_T64, C_TS, C_IYM, C_IDT,
	C_IMDN, C_DUR, C_S, C_LS, C_BIN, C_LBIN, C_FSB, C_L, C_LL, C_FSL, C_ST,
	C_DICT, N_COLS
};

static ArrowField list_item = {.name = "item", .nullable = true, .type = {.id = ARROW_TYPE_INT32}};
static ArrowField llist_item = {.name = "item", .nullable = true, .type = {.id = ARROW_TYPE_LARGE_UTF8}};
static ArrowField fsl_item = {.name = "item", .nullable = false, .type = {.id = ARROW_TYPE_INT16}};
static ArrowField st_kids[2] = {
	{.name = "a", .nullable = false, .type = {.id = ARROW_TYPE_INT32}},
	{.name = "b", .nullable = true, .type = {.id = ARROW_TYPE_UTF8}},
};
static ArrowKeyValue field_md_items[1] = {{"fk", "fv"}};

static ArrowField all_fields[N_COLS] = {
	[C_N] = {.name = "n", .nullable = true, .type = {.id = ARROW_TYPE_NULL}},
	[C_B] = {.name = "b", .nullable = true, .type = {.id = ARROW_TYPE_BOOL}},
	[C_I8] = {.name = "i8", .nullable = true, .type = {.id = ARROW_TYPE_INT8}},
	[C_I16] = {.name = "i16", .nullable = true, .type = {.id = ARROW_TYPE_INT16}},
	[C_I32] = {.name = "i32", .nullable = false, .type = {.id = ARROW_TYPE_INT32},
	.metadata = {1, field_md_items}},
	[C_I64] = {.name = "i64", .nullable = true, .type = {.id = ARROW_TYPE_INT64}},
	[C_U8] = {.name = "u8", .nullable = true, .type = {.id = ARROW_TYPE_UINT8}},
	[C_U16] = {.name = "u16", .nullable = true, .type = {.id = ARROW_TYPE_UINT16}},
	[C_U32] = {.name = "u32", .nullable = true, .type = {.id = ARROW_TYPE_UINT32}},
	[C_U64] = {.name = "u64", .nullable = true, .type = {.id = ARROW_TYPE_UINT64}},
	[C_F16] = {.name = "f16", .nullable = true, .type = {.id = ARROW_TYPE_FLOAT16}},
	[C_F32] = {.name = "f32", .nullable = true, .type = {.id = ARROW_TYPE_FLOAT32}},
	[C_F64] = {.name = "f64", .nullable = true, .type = {.id = ARROW_TYPE_FLOAT64}},
	[C_DEC] = {.name = "dec", .nullable = true, .type = {.id = ARROW_TYPE_DECIMAL128, .precision = 20, .scale = 3}},
	[C_D32] = {.name = "d32", .nullable = true, .type = {.id = ARROW_TYPE_DATE32}},
	[C_D64] = {.name = "d64", .nullable = true, .type = {.id = ARROW_TYPE_DATE64}},
	[C_T32] = {.name = "t32", .nullable = true, .type = {.id = ARROW_TYPE_TIME32, .unit = ARROW_UNIT_MILLI}},
	[C_T64] = {.name = "t64", .nullable = true, .type = {.id = ARROW_TYPE_TIME64, .unit = ARROW_UNIT_NANO}},
	[C_TS] = {.name = "ts", .nullable = true, .type = {.id = ARROW_TYPE_TIMESTAMP, .unit = ARROW_UNIT_MICRO, .timezone = "UTC"}},
	[C_IYM] = {.name = "iym", .nullable = true, .type = {.id = ARROW_TYPE_INTERVAL_YM}},
	[C_IDT] = {.name = "idt", .nullable = true, .type = {.id = ARROW_TYPE_INTERVAL_DT}},
	[C_IMDN] = {.name = "imdn", .nullable = true, .type = {.id = ARROW_TYPE_INTERVAL_MDN}},
	[C_DUR] = {.name = "dur", .nullable = true, .type = {.id = ARROW_TYPE_DURATION, .unit = ARROW_UNIT_SECOND}},
	[C_S] = {.name = "s", .nullable = true, .type = {.id = ARROW_TYPE_UTF8}},
	[C_LS] = {.name = "ls", .nullable = true, .type = {.id = ARROW_TYPE_LARGE_UTF8}},
	[C_BIN] = {.name = "bin", .nullable = true, .type = {.id = ARROW_TYPE_BINARY}},
	[C_LBIN] = {.name = "lbin", .nullable = true, .type = {.id = ARROW_TYPE_LARGE_BINARY}},
	[C_FSB] = {.name = "fsb", .nullable = true, .type = {.id = ARROW_TYPE_FIXED_SIZE_BINARY, .byte_width = 2}},
	[C_L] = {.name = "l", .nullable = true, .type = {.id = ARROW_TYPE_LIST}, .n_children = 1, .children = &list_item},
	[C_LL] = {.name = "ll", .nullable = true, .type = {.id = ARROW_TYPE_LARGE_LIST}, .n_children = 1, .children = &llist_item},
	[C_FSL] = {.name = "fsl", .nullable = true, .type = {.id = ARROW_TYPE_FIXED_SIZE_LIST, .list_size = 2}, .n_children = 1, .children = &fsl_item},
	[C_ST] = {.name = "st", .nullable = true, .type = {.id = ARROW_TYPE_STRUCT}, .n_children = 2, .children = st_kids},
	[C_DICT] = {.name = "dict", .nullable = true, .type = {.id = ARROW_TYPE_UTF8}, .has_dictionary = true,
	.dictionary = {.id = 7, .index_type = ARROW_TYPE_INT16, .ordered = true}},
};
static ArrowKeyValue schema_md_items[1] = {{"k", "v"}};
static ArrowSchema all_schema = {N_COLS, all_fields, {1, schema_md_items}};

/* Expected JSON of each column for rows 0, 1, 2 */
static const char *const expect[N_COLS][3] = {
	[C_N] = {"null", "null", "null"},
	[C_B] = {"true", "null", "false"},
	[C_I8] = {"-128", "127", "null"},
	[C_I16] = {"-32768", "null", "32767"},
	[C_I32] = {"-2147483648", "0", "2147483647"},
	[C_I64] = {"-9223372036854775808", "null", "9223372036854775807"},
	[C_U8] = {"255", "null", "0"},
	[C_U16] = {"65535", "0", "null"},
	[C_U32] = {"4294967295", "null", "1"},
	[C_U64] = {"18446744073709551615", "null", "9007199254740993"},
	[C_F16] = {"0.0999755859375", "null", "-0.0"},
	[C_F32] = {"0.10000000149011612", "\"Infinity\"", "null"},
	[C_F64] = {"\"NaN\"", "\"-Infinity\"", "0.10000000000000001"},
	[C_DEC] = {"\"-12345678901234567.890\"", "null", "\"0.001\""},
	[C_D32] = {"19000", "null", "-1"},
	[C_D64] = {"86400000", "null", "0"},
	[C_T32] = {"86399999", "null", "0"},
	[C_T64] = {"86399999999999", "1", "null"},
	[C_TS] = {"1700000000000000", "null", "-1"},
	[C_IYM] = {"14", "-1", "null"},
	[C_IDT] = {"[3, 500]", "null", "[-1, -2]"},
	[C_IMDN] = {"[1, -2, 3000]", "null", "[0, 0, -9223372036854775808]"},
	[C_DUR] = {"-5", "null", "9223372036854775807"},
	[C_S] = {"\"h\xc3\xa9llo \\\"q\\\"\"", "null", "\"\""},
	[C_LS] = {"\"large\"", "\"\"", "null"},
	[C_BIN] = {"\"00ff10\"", "null", "\"\""},
	[C_LBIN] = {"\"\"", "\"ab\"", "null"},
	[C_FSB] = {"\"abcd\"", "null", "\"0000\""},
	[C_L] = {"[1, null, 3]", "null", "[]"},
	[C_LL] = {"[\"x\"]", "[]", "null"},
	[C_FSL] = {"[1, 2]", "null", "[3, -4]"},
	[C_ST] = {"{\"a\": 1, \"b\": \"x\"}", "null", "{\"a\": 2, \"b\": null}"},
	[C_DICT] = {"\"c\"", "null", "\"a\""},
};

static int
fill_row(ArrowBuilder **c, int r, ArrowError *e)
{
	ArrowDecimal128 dec;
	int			rc = ARROW_OK;

/* expressions, so that "r == 1 ? NUL(c) : DO(...)" works; stop at an error */
#define DO(call) (rc = (rc != ARROW_OK ? rc : (call)))
#define NUL(col) DO(arrow_append_null(c[col], e))
	NUL(C_N);
	if (r == 1)
		NUL(C_B);
	else
		DO(arrow_append_bool(c[C_B], r == 0, e));
	r == 2 ? NUL(C_I8) : DO(arrow_append_int(c[C_I8], r == 0 ? -128 : 127, e));
	r == 1 ? NUL(C_I16) : DO(arrow_append_int(c[C_I16], r == 0 ? -32768 : 32767, e));
	DO(arrow_append_int(c[C_I32], r == 0 ? INT32_MIN : r == 1 ? 0 : INT32_MAX, e));
	r == 1 ? NUL(C_I64) : DO(arrow_append_int(c[C_I64], r == 0 ? INT64_MIN : INT64_MAX, e));
	r == 1 ? NUL(C_U8) : DO(arrow_append_uint(c[C_U8], r == 0 ? 255 : 0, e));
	r == 2 ? NUL(C_U16) : DO(arrow_append_uint(c[C_U16], r == 0 ? 65535 : 0, e));
	r == 1 ? NUL(C_U32) : DO(arrow_append_uint(c[C_U32], r == 0 ? 4294967295u : 1, e));
	r == 1 ? NUL(C_U64) : DO(arrow_append_uint(c[C_U64], r == 0 ? UINT64_MAX : 9007199254740993ULL, e));
	r == 1 ? NUL(C_F16) : DO(arrow_append_float(c[C_F16], r == 0 ? 0.1 : -0.0, e));
	r == 2 ? NUL(C_F32) : DO(arrow_append_float(c[C_F32], r == 0 ? 0.1 : INFINITY, e));
	DO(arrow_append_float(c[C_F64], r == 0 ? NAN : r == 1 ? -INFINITY : 0.1, e));
	if (r == 1)
		NUL(C_DEC);
	else
	{
		DO(arrow_decimal128_parse(r == 0 ? "-12345678901234567.89" : "0.001", 20, 3, &dec, e));
		DO(arrow_append_decimal(c[C_DEC], dec, e));
	}
	r == 1 ? NUL(C_D32) : DO(arrow_append_int(c[C_D32], r == 0 ? 19000 : -1, e));
	r == 1 ? NUL(C_D64) : DO(arrow_append_int(c[C_D64], r == 0 ? 86400000 : 0, e));
	r == 1 ? NUL(C_T32) : DO(arrow_append_int(c[C_T32], r == 0 ? 86399999 : 0, e));
	r == 2 ? NUL(C_T64) : DO(arrow_append_int(c[C_T64], r == 0 ? 86399999999999LL : 1, e));
	r == 1 ? NUL(C_TS) : DO(arrow_append_int(c[C_TS], r == 0 ? 1700000000000000LL : -1, e));
	r == 2 ? NUL(C_IYM) : DO(arrow_append_int(c[C_IYM], r == 0 ? 14 : -1, e));
	r == 1 ? NUL(C_IDT) : DO(arrow_append_interval_dt(c[C_IDT], r == 0 ? 3 : -1, r == 0 ? 500 : -2, e));
	r == 1 ? NUL(C_IMDN) : DO(arrow_append_interval_mdn(c[C_IMDN], r == 0, r == 0 ? -2 : 0,
														r == 0 ? 3000 : INT64_MIN, e));
	r == 1 ? NUL(C_DUR) : DO(arrow_append_int(c[C_DUR], r == 0 ? -5 : INT64_MAX, e));
	r == 1 ? NUL(C_S) : DO(arrow_append_bytes(c[C_S], r == 0 ? "h\xc3\xa9llo \"q\"" : "", r == 0 ? 10 : 0, e));
	r == 2 ? NUL(C_LS) : DO(arrow_append_bytes(c[C_LS], "large", r == 0 ? 5 : 0, e));
	r == 1 ? NUL(C_BIN) : DO(arrow_append_bytes(c[C_BIN], "\x00\xff\x10", r == 0 ? 3 : 0, e));
	r == 2 ? NUL(C_LBIN) : DO(arrow_append_bytes(c[C_LBIN], "\xab", r == 0 ? 0 : 1, e));
	r == 1 ? NUL(C_FSB) : DO(arrow_append_bytes(c[C_FSB], r == 0 ? "\xab\xcd" : "\0\0", 2, e));
	if (r == 1)
		NUL(C_L);
	else
	{
		DO(arrow_append_valid(c[C_L], e));
		if (r == 0)
		{
			DO(arrow_append_int(arrow_builder_child(c[C_L], 0), 1, e));
			DO(arrow_append_null(arrow_builder_child(c[C_L], 0), e));
			DO(arrow_append_int(arrow_builder_child(c[C_L], 0), 3, e));
		}
		DO(arrow_list_end(c[C_L], e));
	}
	if (r == 2)
		NUL(C_LL);
	else
	{
		DO(arrow_append_valid(c[C_LL], e));
		if (r == 0)
			DO(arrow_append_bytes(arrow_builder_child(c[C_LL], 0), "x", 1, e));
		DO(arrow_list_end(c[C_LL], e));
	}
	if (r == 1)
		NUL(C_FSL);
	else
	{
		DO(arrow_append_valid(c[C_FSL], e));
		DO(arrow_append_int(arrow_builder_child(c[C_FSL], 0), r == 0 ? 1 : 3, e));
		DO(arrow_append_int(arrow_builder_child(c[C_FSL], 0), r == 0 ? 2 : -4, e));
	}
	if (r == 1)
		NUL(C_ST);
	else
	{
		DO(arrow_append_valid(c[C_ST], e));
		DO(arrow_append_int(arrow_builder_child(c[C_ST], 0), r == 0 ? 1 : 2, e));
		r == 0 ? DO(arrow_append_bytes(arrow_builder_child(c[C_ST], 1), "x", 1, e))
			: DO(arrow_append_null(arrow_builder_child(c[C_ST], 1), e));
	}
	r == 1 ? NUL(C_DICT) : DO(arrow_append_int(c[C_DICT], r == 0 ? 2 : 0, e));
#undef NUL
#undef DO
	return rc;
}

/* Creates one builder per field of schema */
static bool
make_builders(const ArrowSchema *schema, ArrowBuilder **cols)
{
	ArrowError	err;

	for (int32_t i = 0; i < schema->n_fields; i++)
	{
		if (arrow_builder_create(&schema->fields[i], NULL, &cols[i], &err) != ARROW_OK)
		{
			tap_diag("builder %d: %s", i, err.message);
			return false;
		}
	}
	return true;
}

static void
free_builders(ArrowBuilder **cols, int n)
{
	for (int i = 0; i < n; i++)
		arrow_builder_free(cols[i]);
}

/* The dictionary of C_DICT: ["a", "b", "c"] */
static int
write_all_dictionary(ArrowWriter *w, ArrowError *err)
{
	ArrowField	vf = all_fields[C_DICT];
	ArrowBuilder *d;
	int			rc;

	vf.has_dictionary = false;
	if ((rc = arrow_builder_create(&vf, NULL, &d, err)) != ARROW_OK)
		return rc;
	if ((rc = arrow_append_bytes(d, "a", 1, err)) == ARROW_OK &&
		(rc = arrow_append_bytes(d, "b", 1, err)) == ARROW_OK &&
		(rc = arrow_append_bytes(d, "c", 1, err)) == ARROW_OK)
		rc = arrow_writer_write_dictionary(w, 7, d, false, err);
	arrow_builder_free(d);
	return rc;
}

/* Writes batches of 3 rows, 0 rows, 3 rows; body sizes in sizes[] */
static int
write_all_batches(ArrowWriter *w, ArrowBuilder **cols, int64_t *sizes, ArrowError *err)
{
	ArrowKeyValue kv = {"batch", "first"};
	ArrowMetadata md = {1, &kv};
	int			rc;

	for (int batch = 0; batch < 3; batch++)
	{
		int64_t		size = 0;

		for (int r = 0; batch != 1 && r < 3; r++)
		{
			if ((rc = fill_row(cols, r, err)) != ARROW_OK)
				return rc;
		}
		for (int i = 0; i < N_COLS; i++)
			size += arrow_builder_body_size(cols[i]);
		if (sizes)
			sizes[batch] = size;
		if ((rc = arrow_writer_write_batch(w, cols, batch == 0 ? &md : NULL, err)) != ARROW_OK)
			return rc;
		if (arrow_builder_length(cols[0]) != 0)
			return arrow_set_error(err, ARROW_ERR_ARGUMENT, "builders not reset");
	}
	return ARROW_OK;
}

/* Compares every value of batch b of file f with expect[][] */
static int
check_values(ArrowFile *f, int32_t batch, int nrows)
{
	ArrowBatch *b;
	ArrowError	err;
	ArrowStrBuf sb = {NULL, NULL, 0, 0};
	int			bad = 0;

	if (arrow_batch_load(f, batch, NULL, &b, &err) != ARROW_OK)
	{
		tap_diag("load batch %d: %s", batch, err.message);
		return -1;
	}
	for (int r = 0; r < nrows; r++)
	{
		for (int c = 0; c < N_COLS; c++)
		{
			sb.len = 0;
			if (arrow_value_to_json(&b->columns[c], r, &sb, &err) != ARROW_OK ||
				strcmp(sb.data, expect[c][r % 3]) != 0)
			{
				if (bad++ < 5)
					tap_diag("batch %d row %d col %s: %s, expected %s", batch, r, all_fields[c].name,
							 sb.data ? sb.data : err.message, expect[c][r % 3]);
			}
		}
	}
	arrow_strbuf_free(&sb);
	arrow_batch_free(b);
	return bad;
}

/* Every message and buffer we wrote starts at a multiple of 64 */
static bool
check_alignment(const ArrowFile *f, int32_t first_batch)
{
	bool		ok = true;

	for (int32_t i = first_batch; i < f->n_batches; i++)
	{
		const ArrowBatchInfo *bi = &f->batches[i];

		ok = ok && bi->message_offset % 64 == 0 && bi->body_offset % 64 == 0 &&
			bi->body_length % 64 == 0;
		for (int32_t k = 0; k < bi->n_buffers; k++)
			ok = ok && (bi->body_offset + bi->buffers[k].offset) % 64 == 0;
	}
	for (int32_t i = 0; i < f->n_dictionaries; i++)
		ok = ok && f->dictionaries[i].batch.body_offset % 64 == 0;
	return ok;
}

static void
test_all_types_file(void)
{
	const char *path = tmp_path("all.arrow");
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowWriter *w = NULL;
	ArrowFile  *f = NULL;
	ArrowError	err;
	int64_t		sizes[3];
	uint8_t    *bytes;
	size_t		len;
	char		why[256];

	if (!make_builders(&all_schema, cols))
		return;
	tap_ok(arrow_writer_create(path, &all_schema, NULL, &w, &err) == ARROW_OK, "create a file with every type");
	tap_ok(write_all_dictionary(w, &err) == ARROW_OK, "write its dictionary");
	if (!tap_ok(write_all_batches(w, cols, sizes, &err) == ARROW_OK, "write 3 batches"))
		tap_diag("%s", err.message);
	tap_ok(arrow_writer_close(w, &err) == ARROW_OK, "close");

	bytes = slurp(path, &len);
	tap_ok(bytes != NULL && len > 80 && memcmp(bytes, "ARROW1\0\0", 8) == 0 &&
		   memcmp(bytes + len - 6, "ARROW1", 6) == 0, "magic at both ends");
	if (bytes != NULL)
	{
		int32_t		flen = (int32_t) fb_le32(bytes + len - 10);

		tap_ok(flen > 0 && (size_t) flen < len - 10 - 64 &&
			   memcmp(bytes + len - 10 - flen - 8, "\xff\xff\xff\xff\0\0\0\0", 8) == 0,
			   "footer length sane (%d), end-of-stream marker before it", flen);
		tap_ok(fb_le32(bytes + 8) == 0xffffffffu && (16 + fb_le32(bytes + 12)) % 64 == 0,
			   "schema message: continuation marker, ends on a 64-byte boundary");
	}
	free(bytes);

	if (!tap_ok(arrow_file_open(path, NULL, &f, &err) == ARROW_OK, "the reader opens it"))
	{
		tap_diag("%s", err.message);
		free_builders(cols, N_COLS);
		return;
	}
	tap_ok(!f->is_stream && f->metadata_version == 5 && f->n_batches == 3 &&
		   f->total_rows == 6 && f->n_dictionaries == 1, "V5 file, 3 batches, 6 rows, 1 dictionary");
	tap_ok(arrow_schema_equal(&f->schema, &all_schema, why, sizeof(why)), "schema read back equals (%s)",
		   why);
	tap_ok(strcmp(arrow_metadata_get(&f->schema.metadata, "k"), "v") == 0 &&
		   strcmp(arrow_metadata_get(&f->schema.fields[C_I32].metadata, "fk"), "fv") == 0,
		   "schema and field metadata");
	tap_ok(f->schema.fields[C_DICT].dictionary.id == 7 && f->schema.fields[C_DICT].dictionary.ordered &&
		   f->schema.fields[C_DICT].dictionary.index_type == ARROW_TYPE_INT16,
		   "dictionary encoding: id, ordered, index type");
	tap_ok(strcmp(f->schema.fields[C_TS].type.timezone, "UTC") == 0, "timestamp timezone");
	tap_ok(f->batches[0].metadata.count == 1 && f->batches[1].metadata.count == 0 &&
		   strcmp(arrow_metadata_get(&f->batches[0].metadata, "batch"), "first") == 0,
		   "record batch custom metadata");
	tap_ok(f->batches[0].body_length == sizes[0] && f->batches[1].body_length == sizes[1] &&
		   f->batches[2].body_length == sizes[2],
		   "arrow_builder_body_size predicts the body lengths (%lld %lld %lld)",
		   (long long) sizes[0], (long long) sizes[1], (long long) sizes[2]);
	tap_ok(check_alignment(f, 0), "every message, body and buffer is 64-byte aligned in the file");
	tap_ok(check_values(f, 0, 3) == 0, "batch 0 values read back");
	tap_ok(check_values(f, 1, 0) == 0 && f->batches[1].n_rows == 0, "batch 1 is empty");
	tap_ok(check_values(f, 2, 3) == 0, "batch 2 (builders reused after reset) values read back");
	arrow_file_close(f);
	free_builders(cols, N_COLS);
}

/* ------------------------------------------------------------------------
 * Copying rows between builders, row sizes, min/max
 * ------------------------------------------------------------------------
 */

/* Which of fill_row's three rows row r of the merge tests is */
static int
merge_pattern(int r)
{
	return (r * r + r / 5) % 3;
}

/* Writes a file of every type: its dictionary, then one batch from cols */
static int
write_one_batch(const char *path, ArrowBuilder **cols, ArrowError *err)
{
	ArrowWriter *w;
	int			rc;

	if ((rc = arrow_writer_create(path, &all_schema, NULL, &w, err)) != ARROW_OK)
		return rc;
	if ((rc = write_all_dictionary(w, err)) != ARROW_OK ||
		(rc = arrow_writer_write_batch(w, cols, NULL, err)) != ARROW_OK)
	{
		arrow_writer_abort(w);
		return rc;
	}
	return arrow_writer_close(w, err);
}

/*
 * A batch merged from row ranges of another builder (at bit offsets that
 * are not multiples of 8, with and without nulls on either side) is byte
 * for byte the batch built by appending the same values directly.
 */
static void
test_append_rows(void)
{
	enum
	{
		PREFIX = 5, N = 61
	};
	static const int cuts[] = {0, 7, 8, 8, 9, 30, 45, 61};
	const char *direct_path = tmp_path("merge_direct.arrow");
	const char *merged_path = tmp_path("merge_rows.arrow");
	ArrowBuilder *direct[N_COLS] = {0};
	ArrowBuilder *src[N_COLS] = {0};
	ArrowBuilder *dst[N_COLS] = {0};
	ArrowError	err;
	int			rc = ARROW_OK;
	size_t		len;
	uint8_t    *bytes;

	if (!make_builders(&all_schema, direct) || !make_builders(&all_schema, src) ||
		!make_builders(&all_schema, dst))
		return;
	/* dst and direct start with rows without nulls (pattern 0), src has all */
	for (int r = 0; r < PREFIX && rc == ARROW_OK; r++)
		if ((rc = fill_row(dst, 0, &err)) == ARROW_OK)
			rc = fill_row(direct, 0, &err);
	for (int r = 0; r < N && rc == ARROW_OK; r++)
		if ((rc = fill_row(src, merge_pattern(r), &err)) == ARROW_OK)
			rc = fill_row(direct, merge_pattern(r), &err);
	if (!tap_ok(rc == ARROW_OK, "fill the builders"))
		tap_diag("%s", err.message);
	for (size_t k = 1; k < sizeof(cuts) / sizeof(cuts[0]) && rc == ARROW_OK; k++)
		for (int c = 0; c < N_COLS && rc == ARROW_OK; c++)
			if ((rc = arrow_builder_append_rows(dst[c], src[c], cuts[k - 1],
												cuts[k] - cuts[k - 1], &err)) != ARROW_OK)
				tap_diag("column %s rows %d..%d: %s", all_fields[c].name, cuts[k - 1],
						 cuts[k], err.message);
	tap_ok(rc == ARROW_OK, "append rows in 7 ranges (one empty) to every type");
	tap_ok(arrow_builder_length(dst[C_L]) == PREFIX + N &&
		   arrow_builder_length(arrow_builder_child(dst[C_L], 0)) ==
		   arrow_builder_length(arrow_builder_child(direct[C_L], 0)),
		   "lengths of the merged list and its child");
	tap_ok(write_one_batch(direct_path, direct, &err) == ARROW_OK &&
		   write_one_batch(merged_path, dst, &err) == ARROW_OK, "write both batches (%s)",
		   err.message);
	bytes = slurp(direct_path, &len);
	tap_ok(bytes != NULL && same_bytes(bytes, len, merged_path),
		   "the merged file equals the directly built one, byte for byte");
	free(bytes);
	unlink(direct_path);
	unlink(merged_path);

	/* src is unchanged and can be copied from again, whole, into an empty dst */
	for (int c = 0; c < N_COLS; c++)
		arrow_builder_reset(dst[c]);
	for (int c = 0; c < N_COLS && rc == ARROW_OK; c++)
		rc = arrow_builder_append_rows(dst[c], src[c], 0, N, &err);
	tap_ok(rc == ARROW_OK && arrow_builder_body_size(dst[C_ST]) == arrow_builder_body_size(src[C_ST]) &&
		   arrow_builder_body_size(dst[C_S]) == arrow_builder_body_size(src[C_S]),
		   "all rows into an empty builder: the same body size");

	/* refusals leave dst as it was */
	{
		int64_t		before = arrow_builder_length(dst[C_I64]);
		ArrowField	strict = all_fields[C_I64];
		ArrowBuilder *sb;

		tap_ok(arrow_builder_append_rows(dst[C_I64], src[C_I64], N - 2, 3, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "not in field") != NULL, "rows past the end are refused (%s)",
			   err.message);
		tap_ok(arrow_builder_append_rows(dst[C_I64], src[C_I64], -1, 1, &err) == ARROW_ERR_ARGUMENT,
			   "a negative offset is refused");
		tap_ok(arrow_builder_append_rows(dst[C_I64], src[C_S], 0, 1, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "another type") != NULL, "rows of another type are refused (%s)",
			   err.message);
		tap_ok(arrow_builder_append_rows(dst[C_I64], dst[C_I64], 0, 1, &err) == ARROW_ERR_ARGUMENT,
			   "a builder cannot copy from itself");
		strict.nullable = false;
		arrow_builder_create(&strict, NULL, &sb, &err);
		tap_ok(arrow_builder_append_rows(sb, src[C_I64], 0, 1, &err) == ARROW_OK &&
			   merge_pattern(1) == 1 &&
			   arrow_builder_append_rows(sb, src[C_I64], 1, 1, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "non-nullable") != NULL && arrow_builder_length(sb) == 1,
			   "a null for a non-nullable field is refused (%s)", err.message);
		arrow_builder_free(sb);
		arrow_append_valid(src[C_L], &err);
		tap_ok(arrow_builder_append_rows(dst[C_L], src[C_L], 0, 1, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "still open") != NULL, "a source with an open list is refused");
		arrow_list_end(src[C_L], &err);
		tap_ok(arrow_builder_length(dst[C_I64]) == before, "refusals change nothing");
	}

	/* row sizes: additive over ranges, within the padding of the body size */
	{
		bool		ok = true;

		for (int c = 0; c < N_COLS; c++)
		{
			int64_t		n = arrow_builder_length(src[c]);
			int64_t		all = arrow_builder_rows_size(src[c], 0, n);
			int64_t		body = arrow_builder_body_size(src[c]);
			int64_t		parts = arrow_builder_rows_size(src[c], 0, 20) +
				arrow_builder_rows_size(src[c], 20, n - 20);

			if (all > body || body - all > 64 * 8 || parts < all || parts > all + 8 ||
				arrow_builder_rows_size(src[c], 3, 0) != 0)
			{
				tap_diag("column %s: rows %lld, parts %lld, body %lld", all_fields[c].name,
						 (long long) all, (long long) parts, (long long) body);
				ok = false;
			}
		}
		tap_ok(ok, "arrow_builder_rows_size: additive, within the body size's padding");
		tap_ok(arrow_builder_rows_size(src[C_I64], 0, 10) == 10 * 8 + 2 &&
			   arrow_builder_rows_size(src[C_N], 0, 10) == 0,
			   "rows_size of int64 with a validity bitmap, of the null type");
	}
	free_builders(direct, N_COLS);
	free_builders(src, N_COLS);
	free_builders(dst, N_COLS);
}

static void
test_minmax(void)
{
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowMinMax mm[N_COLS];
	ArrowError	err;
	int			rc = ARROW_OK;
	char		lo[64],
				hi[64];

	if (!make_builders(&all_schema, cols))
		return;
	for (int r = 0; r < 3 && rc == ARROW_OK; r++)
		rc = fill_row(cols, r, &err);
	for (int c = 0; c < N_COLS; c++)
		arrow_builder_minmax(cols[c], &mm[c]);
	tap_ok(mm[C_I8].kind == ARROW_MINMAX_INT && mm[C_I8].imin == -128 && mm[C_I8].imax == 127,
		   "int8 min/max, the null left out");
	tap_ok(mm[C_I64].kind == ARROW_MINMAX_INT && mm[C_I64].imin == INT64_MIN &&
		   mm[C_I64].imax == INT64_MAX, "int64 extremes");
	tap_ok(mm[C_U32].kind == ARROW_MINMAX_INT && mm[C_U32].imin == 1 &&
		   mm[C_U32].imax == 4294967295LL, "uint32 is not sign-extended");
	tap_ok(mm[C_U64].kind == ARROW_MINMAX_NONE, "uint64 has no int64 min/max");
	tap_ok(mm[C_D32].kind == ARROW_MINMAX_INT && mm[C_D32].imin == -1 && mm[C_D32].imax == 19000 &&
		   mm[C_TS].imin == -1 && mm[C_TS].imax == 1700000000000000LL &&
		   mm[C_T64].imin == 1 && mm[C_T64].imax == 86399999999999LL,
		   "date32, timestamp and time64 min/max");
	tap_ok(mm[C_F16].kind == ARROW_MINMAX_FLOAT && mm[C_F16].dmin == 0 &&
		   mm[C_F16].dmax == 0.0999755859375, "float16: the stored (rounded) values");
	tap_ok(mm[C_F32].kind == ARROW_MINMAX_FLOAT && mm[C_F32].dmin == (double) 0.1f &&
		   isinf(mm[C_F32].dmax), "float32 with infinity");
	tap_ok(mm[C_F64].kind == ARROW_MINMAX_FLOAT && isinf(mm[C_F64].dmin) && mm[C_F64].dmin < 0 &&
		   mm[C_F64].dmax == 0.1, "float64: NaN left out, -infinity kept");
	arrow_decimal128_format(mm[C_DEC].xmin, 3, lo, sizeof(lo));
	arrow_decimal128_format(mm[C_DEC].xmax, 3, hi, sizeof(hi));
	tap_ok(mm[C_DEC].kind == ARROW_MINMAX_DECIMAL && strcmp(lo, "-12345678901234567.890") == 0 &&
		   strcmp(hi, "0.001") == 0, "decimal128 min %s max %s", lo, hi);
	tap_ok(mm[C_S].kind == ARROW_MINMAX_NONE && mm[C_DICT].kind == ARROW_MINMAX_NONE &&
		   mm[C_N].kind == ARROW_MINMAX_NONE && mm[C_ST].kind == ARROW_MINMAX_NONE,
		   "no min/max for strings, dictionary indices, the null type, structs");
	for (int c = 0; c < N_COLS; c++)
		arrow_builder_reset(cols[c]);
	arrow_append_null(cols[C_I16], &err);
	arrow_append_float(cols[C_F64], NAN, &err);
	arrow_builder_minmax(cols[C_I16], &mm[C_I16]);
	arrow_builder_minmax(cols[C_F64], &mm[C_F64]);
	tap_ok(mm[C_I16].kind == ARROW_MINMAX_NONE && mm[C_F64].kind == ARROW_MINMAX_NONE,
		   "only nulls, only NaN: no min/max");
	free_builders(cols, N_COLS);
}

/* ------------------------------------------------------------------------
 * Dictionaries and misuse of the writer
 * ------------------------------------------------------------------------
 */
static void
test_writer_errors(void)
{
	const char *path = tmp_path("errors.arrow");
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowWriter *w;
	ArrowError	err;
	ArrowField	vf = all_fields[C_DICT];
	ArrowField	wrong = mkfield("x", ARROW_TYPE_INT32, true);
	ArrowBuilder *d = NULL;
	ArrowBuilder *wb = NULL;
	struct stat st;

	if (!make_builders(&all_schema, cols))
		return;
	vf.has_dictionary = false;
	arrow_builder_create(&vf, NULL, &d, &err);
	arrow_builder_create(&wrong, NULL, &wb, &err);
	arrow_writer_create(path, &all_schema, NULL, &w, &err);
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "dictionary 7"), "record batch before its dictionary is rejected (%s)", err.message);
	tap_ok(arrow_writer_write_dictionary(w, 7, d, true, &err) == ARROW_ERR_ARGUMENT,
		   "delta before the first dictionary batch is rejected");
	tap_ok(arrow_writer_write_dictionary(w, 8, d, false, &err) == ARROW_ERR_ARGUMENT,
		   "unknown dictionary id is rejected");
	tap_ok(arrow_writer_write_dictionary(w, 7, wb, false, &err) == ARROW_ERR_ARGUMENT,
		   "dictionary values of the wrong type are rejected (%s)", err.message);
	arrow_append_bytes(d, "a", 1, &err);
	tap_ok(arrow_writer_write_dictionary(w, 7, d, false, &err) == ARROW_OK && arrow_builder_length(d) == 0,
		   "dictionary written, its builder reset");
	arrow_append_bytes(d, "b", 1, &err);
	tap_ok(arrow_writer_write_dictionary(w, 7, d, false, &err) == ARROW_ERR_ARGUMENT,
		   "a second non-delta dictionary batch is rejected");
	arrow_append_bytes(d, "c", 1, &err);
	tap_ok(arrow_writer_write_dictionary(w, 7, d, true, &err) == ARROW_OK, "delta dictionary batch");

	/* builders that do not match */
	arrow_append_int(cols[C_I8], 1, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "rows"), "columns of different lengths are rejected (%s)", err.message);
	arrow_builder_reset(cols[C_I8]);
	arrow_append_int(cols[C_I8], 1, &err);
	{
		ArrowBuilder *keep = cols[C_S];

		cols[C_S] = wb;
		arrow_append_int(wb, 1, &err);
		tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_ARGUMENT &&
			   strstr(err.message, "used for field \"s\""), "a builder of another field is rejected (%s)", err.message);
		cols[C_S] = keep;
	}
	arrow_append_valid(cols[C_L], &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_ARGUMENT, "an open list is rejected");
	for (int i = 0; i < N_COLS; i++)
		arrow_builder_reset(cols[i]);
	fill_row(cols, 0, &err);
	arrow_append_int(arrow_builder_child(cols[C_FSL], 0), 9, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "\"item\" of field \"fsl\""),
		   "fixed_size_list child of the wrong length is rejected (%s)", err.message);
	for (int i = 0; i < N_COLS; i++)
		arrow_builder_reset(cols[i]);
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_OK, "a good batch after all that");
	arrow_writer_abort(w);
	tap_ok(stat(path, &st) != 0 && errno == ENOENT, "abort removes a created file");

	/* create errors */
	tap_ok(arrow_writer_create("/dev/null", &all_schema, NULL, &w, &err) == ARROW_ERR_ARGUMENT &&
		   w == NULL && stat("/dev/null", &st) == 0, "a device is refused and left alone (%s)", err.message);
	tap_ok(arrow_writer_create(tmp_path("no/such/dir.arrow"), &all_schema, NULL, &w, &err) == ARROW_ERR_IO &&
		   err.sys_errno == ENOENT && strstr(err.message, "no/such/dir.arrow") != NULL,
		   "a missing directory gives ARROW_ERR_IO with errno and path (%s)", err.message);
	{
		ArrowField	bad = mkfield("bad", ARROW_TYPE_LIST, true);
		ArrowSchema bs = {1, &bad, {0, NULL}};

		tap_ok(arrow_writer_create(path, &bs, NULL, &w, &err) == ARROW_ERR_ARGUMENT &&
			   stat(path, &st) != 0, "an invalid schema is refused before creating the file (%s)", err.message);
	}
	tap_ok(arrow_writer_open_append(tmp_path("missing.arrow"), NULL, NULL, &w, &err) == ARROW_ERR_IO &&
		   err.sys_errno == ENOENT, "append to a missing file: ARROW_ERR_IO, ENOENT");
	arrow_builder_free(d);
	arrow_builder_free(wb);
	free_builders(cols, N_COLS);
}

/* ------------------------------------------------------------------------
 * Append
 * ------------------------------------------------------------------------
 */

/* A complete file of all_schema with one dictionary and 3 batches */
static bool
make_all_file(const char *path)
{
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowWriter *w;
	ArrowError	err;
	bool		ok;

	ok = make_builders(&all_schema, cols) &&
		arrow_writer_create(path, &all_schema, NULL, &w, &err) == ARROW_OK &&
		write_all_dictionary(w, &err) == ARROW_OK &&
		write_all_batches(w, cols, NULL, &err) == ARROW_OK &&
		arrow_writer_close(w, &err) == ARROW_OK;
	if (!ok)
		tap_diag("making %s: %s", path, err.message);
	free_builders(cols, N_COLS);
	return ok;
}

static void
test_append(void)
{
	const char *path = tmp_path("append.arrow");
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowWriter *w = NULL;
	ArrowFile  *f;
	ArrowError	err;
	uint8_t    *orig;
	size_t		orig_len;
	ArrowSchema other;

	if (!make_all_file(path) || (orig = slurp(path, &orig_len)) == NULL || !make_builders(&all_schema, cols))
		return;

	/* a schema that differs deep inside is refused, nothing changes */
	arrow_schema_copy(NULL, &other, &all_schema, &err);
	other.fields[C_ST].children[1].type.id = ARROW_TYPE_LARGE_UTF8;
	tap_ok(arrow_writer_open_append(path, &other, NULL, &w, &err) == ARROW_ERR_SCHEMA_MISMATCH && w == NULL,
		   "append with another schema: ARROW_ERR_SCHEMA_MISMATCH");
	tap_ok(strstr(err.message, "st.b") != NULL && strstr(err.message, "utf8 vs large_utf8") != NULL,
		   "the message names the field and the types: %s", err.message);
	arrow_schema_free(NULL, &other);
	tap_ok(same_bytes(orig, orig_len, path), "the file is unchanged");

	/* abort after writing a batch puts the file back */
	tap_ok(arrow_writer_open_append(path, &all_schema, NULL, &w, &err) == ARROW_OK, "open for append");
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_OK, "write a batch");
	tap_ok(!same_bytes(orig, orig_len, path), "the file changed");
	{
		ArrowWriter *w2;

		tap_ok(arrow_writer_open_append(path, NULL, NULL, &w2, &err) == ARROW_ERR_IO,
			   "a second appender is locked out (%s)", err.message);
	}
	arrow_writer_abort(w);
	tap_ok(same_bytes(orig, orig_len, path), "abort restores the file byte for byte");

	/* a successful append (schema taken from the file) */
	tap_ok(arrow_writer_open_append(path, NULL, NULL, &w, &err) == ARROW_OK, "open for append, file's schema");
	{
		const ArrowSchema *ws = arrow_writer_schema(w);
		ArrowField	vf = ws->fields[C_DICT];
		ArrowBuilder *d;
		char		why[256];

		tap_ok(arrow_schema_equal(ws, &all_schema, why, sizeof(why)), "arrow_writer_schema is the file's");
		vf.has_dictionary = false;
		arrow_builder_create(&vf, NULL, &d, &err);
		arrow_append_bytes(d, "d", 1, &err);
		tap_ok(arrow_writer_write_dictionary(w, 7, d, false, &err) == ARROW_ERR_ARGUMENT,
			   "the file's dictionary counts as written: only deltas");
		tap_ok(arrow_writer_write_dictionary(w, 7, d, true, &err) == ARROW_OK, "append a delta dictionary");
		arrow_builder_free(d);
	}
	for (int r = 0; r < 3; r++)
		fill_row(cols, r, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_OK, "append a batch");
	tap_ok(arrow_writer_close(w, &err) == ARROW_OK, "close");
	if (tap_ok(arrow_file_open(path, NULL, &f, &err) == ARROW_OK, "the reader opens the appended file"))
	{
		tap_ok(f->n_batches == 4 && f->total_rows == 9 && f->n_dictionaries == 2,
			   "4 batches, 9 rows, 2 dictionary batches");
		tap_ok(f->batches[0].message_offset < f->batches[3].message_offset &&
			   check_values(f, 0, 3) == 0 && check_values(f, 2, 3) == 0 && check_values(f, 3, 3) == 0,
			   "old and new batches read back");
		tap_ok(check_alignment(f, 0), "all buffers 64-byte aligned (append started at the old EOS marker)");
		arrow_file_close(f);
	}
	{
		size_t		len;
		uint8_t    *now = slurp(path, &len);

		tap_ok(now != NULL && len > orig_len &&
			   memcmp(now, orig, (size_t) (orig_len - 10 - fb_le32(orig + orig_len - 10) - 8)) == 0,
			   "everything before the old end-of-stream marker is untouched");
		free(now);
	}
	free(orig);
	free_builders(cols, N_COLS);
}

/*
 * Write failures for real: the file size limit makes pwrite fail with
 * EFBIG.  A failed append leaves the file byte-identical, a failed create
 * leaves no file, and the writer reports the error until closed.
 */
static void
test_write_failures(void)
{
	const char *path = tmp_path("fail.arrow");
	const char *cpath = tmp_path("fail_create.arrow");
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowWriter *w = NULL;
	ArrowError	err;
	struct rlimit saved;
	struct rlimit lim;
	uint8_t    *orig;
	size_t		orig_len;
	struct stat st;
	int			rc;

	if (!make_all_file(path) || (orig = slurp(path, &orig_len)) == NULL || !make_builders(&all_schema, cols))
		return;
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &saved);

	tap_ok(arrow_writer_open_append(path, &all_schema, NULL, &w, &err) == ARROW_OK, "open for append");
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_OK, "first appended batch fits");
	lim = saved;
	lim.rlim_cur = orig_len + 4096;
	setrlimit(RLIMIT_FSIZE, &lim);
	for (int i = 0; i < 200; i++)
		fill_row(cols, i % 3, &err);
	rc = arrow_writer_write_batch(w, cols, NULL, &err);
	tap_ok(rc == ARROW_ERR_IO && err.sys_errno == EFBIG && strstr(err.message, path) != NULL,
		   "a write past the size limit fails: %s", err.message);
	tap_ok(same_bytes(orig, orig_len, path), "the failed append left the file byte-identical");
	for (int i = 0; i < N_COLS; i++)
		arrow_builder_reset(cols[i]);
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_IO, "later writes fail with the first error");
	tap_ok(arrow_writer_close(w, &err) == ARROW_ERR_IO && err.sys_errno == EFBIG, "close reports it too");
	tap_ok(same_bytes(orig, orig_len, path), "still byte-identical after close");

	/* the footer itself does not fit */
	setrlimit(RLIMIT_FSIZE, &saved);
	arrow_writer_open_append(path, &all_schema, NULL, &w, &err);
	for (int i = 0; i < 60; i++)
		fill_row(cols, i % 3, &err);
	arrow_writer_write_batch(w, cols, NULL, &err);
	{
		struct stat now;

		stat(path, &now);
		lim.rlim_cur = now.st_size + 16;
	}
	setrlimit(RLIMIT_FSIZE, &lim);
	tap_ok(arrow_writer_close(w, &err) == ARROW_ERR_IO, "a footer that cannot be written fails close (%s)", err.message);
	setrlimit(RLIMIT_FSIZE, &saved);
	tap_ok(same_bytes(orig, orig_len, path), "and the file is put back");

	/* create: the header fits, a batch does not */
	lim.rlim_cur = 65536;
	setrlimit(RLIMIT_FSIZE, &lim);
	tap_ok(arrow_writer_create(cpath, &all_schema, NULL, &w, &err) == ARROW_OK, "create under a 64 KiB limit");
	for (int i = 0; i < 600; i++)
		fill_row(cols, i % 3, &err);
	tap_ok(arrow_writer_write_dictionary(w, 7, NULL, false, &err) == ARROW_ERR_ARGUMENT, "dictionary without a builder");
	tap_ok(write_all_dictionary(w, &err) == ARROW_OK, "dictionary under the limit");
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_ERR_IO && err.sys_errno == EFBIG,
		   "a batch past the limit fails");
	tap_ok(stat(cpath, &st) != 0 && errno == ENOENT, "the created file is removed at once");
	tap_ok(arrow_writer_close(w, &err) == ARROW_ERR_IO, "close reports the error and frees");
	lim.rlim_cur = 100;
	setrlimit(RLIMIT_FSIZE, &lim);
	tap_ok(arrow_writer_create(cpath, &all_schema, NULL, &w, &err) == ARROW_ERR_IO && w == NULL &&
		   stat(cpath, &st) != 0, "create whose header does not fit fails and leaves no file");
	setrlimit(RLIMIT_FSIZE, &saved);
	signal(SIGXFSZ, SIG_DFL);
	free(orig);
	free_builders(cols, N_COLS);
}

/*
 * A child process opens path for append, writes n_batches batches and dies
 * (_exit: no close, no abort, as with SIGKILL).  Returns whether it did.
 */
static bool
append_and_die(const char *path, int n_batches)
{
	pid_t		pid = fork();
	int			status;

	if (pid == 0)
	{
		ArrowBuilder *cols[N_COLS] = {0};
		ArrowWriter *w;
		ArrowError	err;

		if (!make_builders(&all_schema, cols) ||
			arrow_writer_open_append(path, &all_schema, NULL, &w, &err) != ARROW_OK)
			_exit(2);
		for (int b = 0; b < n_batches; b++)
		{
			for (int r = 0; r < 3; r++)
				fill_row(cols, r, &err);
			if (arrow_writer_write_batch(w, cols, NULL, &err) != ARROW_OK)
				_exit(3);
		}
		_exit(0);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		WEXITSTATUS(status) == 0;
}

/*
 * The append journal: a process that dies mid-append leaves the journal,
 * and arrow_writer_recover (or the next arrow_writer_open_append) puts the
 * old file back byte for byte; a live appender's journal is not touched.
 */
static void
test_append_journal(void)
{
	const char *path = tmp_path("journal.arrow");
	char		journal[300];
	ArrowBuilder *cols[N_COLS] = {0};
	ArrowRecoverResult res;
	ArrowWriter *w;
	ArrowFile  *f;
	ArrowError	err;
	uint8_t    *orig;
	size_t		orig_len;
	struct stat st;

	snprintf(journal, sizeof(journal), "%s%s", path, ARROW_APPEND_JOURNAL_SUFFIX);
	if (!make_all_file(path) || (orig = slurp(path, &orig_len)) == NULL || !make_builders(&all_schema, cols))
		return;
	tap_ok(arrow_writer_recover(path, &res, &err) == ARROW_OK && res == ARROW_RECOVER_NONE,
		   "recover without a journal does nothing");

	tap_ok(append_and_die(path, 2), "a child appends two batches and dies");
	tap_ok(stat(journal, &st) == 0 && !same_bytes(orig, orig_len, path),
		   "it left the journal and a changed file");
	tap_ok(arrow_file_open(path, NULL, &f, &err) != ARROW_OK, "which no reader can open");
	tap_ok(arrow_writer_recover(path, &res, &err) == ARROW_OK && res == ARROW_RECOVER_RESTORED,
		   "recover restores it");
	tap_ok(same_bytes(orig, orig_len, path) && stat(journal, &st) != 0 && errno == ENOENT,
		   "byte for byte, and the journal is gone");

	/* the next append recovers by itself, then appends */
	tap_ok(append_and_die(path, 1), "another child dies mid-append");
	tap_ok(arrow_writer_open_append(path, &all_schema, NULL, &w, &err) == ARROW_OK, "open for append recovers");
	tap_ok(stat(journal, &st) == 0, "and writes its own journal");
	{
		ArrowRecoverResult r2;

		tap_ok(arrow_writer_recover(path, &r2, &err) == ARROW_ERR_IO &&
			   strstr(err.message, "another process") != NULL,
			   "recover refuses while an appender holds the file: %s", err.message);
	}
	fill_row(cols, 0, &err);
	tap_ok(arrow_writer_write_batch(w, cols, NULL, &err) == ARROW_OK &&
		   arrow_writer_close(w, &err) == ARROW_OK, "append one batch and close");
	tap_ok(stat(journal, &st) != 0 && errno == ENOENT, "close removes the journal");
	if (tap_ok(arrow_file_open(path, NULL, &f, &err) == ARROW_OK, "the file opens"))
	{
		tap_ok(f->n_batches == 4 && f->total_rows == 7, "the old 3 batches and the new one, no more");
		arrow_file_close(f);
	}

	/* abort removes the journal too */
	free(orig);
	orig = slurp(path, &orig_len);
	tap_ok(arrow_writer_open_append(path, &all_schema, NULL, &w, &err) == ARROW_OK, "open for append");
	fill_row(cols, 0, &err);
	arrow_writer_write_batch(w, cols, NULL, &err);
	arrow_writer_abort(w);
	tap_ok(same_bytes(orig, orig_len, path) && stat(journal, &st) != 0,
		   "abort restores the file and removes the journal");

	/* a journal cut short: the file was never touched */
	tap_ok(append_and_die(path, 0), "a child opens for append and dies");
	tap_ok(truncate(journal, 20) == 0 &&
		   arrow_writer_recover(path, &res, &err) == ARROW_OK && res == ARROW_RECOVER_DISCARDED,
		   "a journal cut short is discarded");
	tap_ok(same_bytes(orig, orig_len, path) && stat(journal, &st) != 0, "the file is untouched");
	free(orig);
	free_builders(cols, N_COLS);
	unlink(path);
}

/* A stream (no magic, no footer) cannot be appended to */
static void
test_append_stream(void)
{
	const char *path = tmp_path("s.arrow");
	const char *spath = tmp_path("s.stream");
	ArrowWriter *w;
	ArrowError	err;
	uint8_t    *bytes;
	size_t		len;
	int			fd;

	if (!make_all_file(path) || (bytes = slurp(path, &len)) == NULL)
		return;
	fd = open(spath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	/* stream = the bytes between the magic and the footer (EOS included) */
	if (write(fd, bytes + 8, len - 8 - 10 - fb_le32(bytes + len - 10)) < 0)
		tap_diag("write failed");
	close(fd);
	free(bytes);
	tap_ok(arrow_writer_open_append(spath, NULL, NULL, &w, &err) == ARROW_ERR_UNSUPPORTED &&
		   strstr(err.message, "stream") != NULL, "appending to a stream is refused (%s)", err.message);
}

/* ------------------------------------------------------------------------
 * Concurrent writes
 * ------------------------------------------------------------------------
 */
#define N_THREADS	8
#define N_PER_THREAD 25

static ArrowField conc_fields[3] = {
	{.name = "tid", .nullable = false, .type = {.id = ARROW_TYPE_INT32}},
	{.name = "seq", .nullable = false, .type = {.id = ARROW_TYPE_INT32}},
	{.name = "pad", .nullable = true, .type = {.id = ARROW_TYPE_BINARY}},
};
static ArrowSchema conc_schema = {3, conc_fields, {0, NULL}};

typedef struct ConcArg
{
	ArrowWriter *w;
	int			tid;
	int			failures;
} ConcArg;

static void *
conc_worker(void *p)
{
	ConcArg    *a = p;
	ArrowBuilder *cols[3];
	ArrowError	err;
	char		pad[3000];

	memset(pad, a->tid, sizeof(pad));
	if (!make_builders(&conc_schema, cols))
	{
		a->failures++;
		return NULL;
	}
	for (int seq = 0; seq < N_PER_THREAD; seq++)
	{
		int			rows = 1 + (seq * 7 + a->tid) % 5;

		for (int r = 0; r < rows; r++)
		{
			arrow_append_int(cols[0], a->tid, &err);
			arrow_append_int(cols[1], seq, &err);
			arrow_append_bytes(cols[2], pad, (size_t) (seq * 97 + r) % sizeof(pad), &err);
		}
		if (arrow_writer_write_batch(a->w, cols, NULL, &err) != ARROW_OK)
		{
			tap_diag("thread %d: %s", a->tid, err.message);
			a->failures++;
		}
	}
	free_builders(cols, 3);
	return NULL;
}

static void
test_concurrent(void)
{
	const char *path = tmp_path("conc.arrow");
	ArrowWriter *w;
	ArrowFile  *f;
	ArrowError	err;
	pthread_t	th[N_THREADS];
	ConcArg		args[N_THREADS];
	int			seen[N_THREADS][N_PER_THREAD] = {{0}};
	int			failures = 0;
	int			bad = 0;
	bool		ordered = true;

	if (arrow_writer_create(path, &conc_schema, NULL, &w, &err) != ARROW_OK)
	{
		tap_ok(false, "create: %s", err.message);
		return;
	}
	for (int t = 0; t < N_THREADS; t++)
	{
		args[t].w = w;
		args[t].tid = t;
		args[t].failures = 0;
		pthread_create(&th[t], NULL, conc_worker, &args[t]);
	}
	/* as pg2arrow's main thread does while its workers write */
	for (int i = 0; i < 20; i++)
	{
		arrow_writer_start_writeback(w);
		usleep(1000);
	}
	for (int t = 0; t < N_THREADS; t++)
	{
		pthread_join(th[t], NULL);
		failures += args[t].failures;
	}
	tap_ok(failures == 0, "%d threads x %d write_batch without error", N_THREADS, N_PER_THREAD);
	tap_ok(arrow_writer_close(w, &err) == ARROW_OK, "close");
	if (!tap_ok(arrow_file_open(path, NULL, &f, &err) == ARROW_OK, "the reader opens it"))
		return;
	tap_ok(f->n_batches == N_THREADS * N_PER_THREAD, "%d batches in the footer", f->n_batches);
	for (int32_t i = 0; i < f->n_batches; i++)
	{
		ArrowBatch *b;
		int32_t		tid;
		int32_t		seq;

		if (i > 0)
			ordered = ordered && f->batches[i].message_offset > f->batches[i - 1].message_offset;
		if (arrow_batch_load(f, i, NULL, &b, &err) != ARROW_OK)
		{
			bad++;
			continue;
		}
		memcpy(&tid, b->columns[0].values, 4);
		memcpy(&seq, b->columns[1].values, 4);
		if (tid < 0 || tid >= N_THREADS || seq < 0 || seq >= N_PER_THREAD ||
			b->n_rows != 1 + (seq * 7 + tid) % 5)
			bad++;
		else
		{
			seen[tid][seq]++;
			for (int64_t r = 0; r < b->n_rows; r++)
			{
				const int32_t *off = b->columns[2].offsets;
				int64_t		plen = off[r + 1] - off[r];

				if (plen != (seq * 97 + r) % 3000 ||
					(plen > 0 && b->columns[2].data[off[r]] != (uint8_t) tid))
					bad++;
			}
		}
		arrow_batch_free(b);
	}
	for (int t = 0; t < N_THREADS; t++)
		for (int s = 0; s < N_PER_THREAD; s++)
			bad += seen[t][s] != 1;
	tap_ok(bad == 0, "every batch exactly once, with its own rows (%d problems)", bad);
	tap_ok(ordered, "footer blocks are in file order");
	tap_ok(check_alignment(f, 0), "64-byte alignment of every buffer");
	arrow_file_close(f);
}

/* Removes the files the tests made and the directory */
static void
cleanup(void)
{
	static const char *names[] = {"all.arrow", "errors.arrow", "append.arrow", "fail.arrow",
	"fail_create.arrow", "s.arrow", "s.stream", "conc.arrow"};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(tmp_path(names[i]));
	rmdir(tmpdir);
}

/* An index past the end of its dictionary is refused, also after an append */
static void
test_dictionary_bounds(void)
{
	ArrowField	f = {.name = "d", .nullable = true, .type = {.id = ARROW_TYPE_UTF8},
	.has_dictionary = true, .dictionary = {.id = 3, .index_type = ARROW_TYPE_INT8}};
	ArrowSchema schema = {1, &f};
	ArrowField	vf = f;
	const char *path = tmp_path("dict_bounds.arrow");
	ArrowWriter *w;
	ArrowBuilder *col;
	ArrowBuilder *d;
	ArrowError	err;

	vf.has_dictionary = false;
	arrow_builder_create(&f, NULL, &col, &err);
	arrow_builder_create(&vf, NULL, &d, &err);
	tap_ok(arrow_writer_create(path, &schema, NULL, &w, &err) == ARROW_OK, "dictionary bounds: create");
	arrow_append_bytes(d, "x", 1, &err);
	arrow_append_bytes(d, "y", 1, &err);
	tap_ok(arrow_writer_write_dictionary(w, 3, d, false, &err) == ARROW_OK, "two-value dictionary");
	arrow_append_int(col, 1, &err);
	arrow_append_null(col, &err);
	tap_ok(arrow_writer_write_batch(w, &col, NULL, &err) == ARROW_OK, "indices 1 and null are fine");
	arrow_append_int(col, 2, &err);
	tap_ok(arrow_writer_write_batch(w, &col, NULL, &err) == ARROW_ERR_ARGUMENT &&
		   strstr(err.message, "past the end of dictionary 3 (2 values)") != NULL,
		   "index 2 of a two-value dictionary is refused (%s)", err.message);
	arrow_builder_reset(col);
	arrow_append_bytes(d, "z", 1, &err);
	tap_ok(arrow_writer_write_dictionary(w, 3, d, true, &err) == ARROW_OK, "a delta adds a value");
	arrow_append_int(col, 2, &err);
	tap_ok(arrow_writer_write_batch(w, &col, NULL, &err) == ARROW_OK, "index 2 is fine after the delta");
	tap_ok(arrow_writer_close(w, &err) == ARROW_OK, "close");
	tap_ok(arrow_writer_open_append(path, &schema, NULL, &w, &err) == ARROW_OK, "append");
	arrow_append_int(col, 3, &err);
	tap_ok(arrow_writer_write_batch(w, &col, NULL, &err) == ARROW_ERR_ARGUMENT,
		   "an appended batch cannot point past the file's dictionary");
	arrow_writer_abort(w);
	arrow_builder_free(col);
	arrow_builder_free(d);
}

int
main(void)
{
	if (mkdtemp(tmpdir) == NULL)
	{
		perror("mkdtemp");
		return 1;
	}
	test_fb_build();
	test_builder_ranges();
	test_builder_layout();
	test_all_types_file();
	test_append_rows();
	test_minmax();
	test_writer_errors();
	test_append();
	test_write_failures();
	test_append_stream();
	test_append_journal();
	test_concurrent();
	test_dictionary_bounds();
	cleanup();
	return tap_done();
}
