/*
 * test_reader.c
 *		Unit tests of the Arrow reader (arrow_read.c, fb_read.c, arrow_codec.c,
 *		arrow_json.c) on the seed corpus in test/fuzz/corpus (made by
 *		test/fuzz/make_corpus.py with pyarrow) and on files built here.  This
 *		file holds main and the checks of the seeds as written:
 *	- every seed opens, every batch loads, every value prints as JSON, and
 *	  chosen values equal what make_corpus.py wrote;
 *	- allocation failure at every allocation leaves nothing allocated;
 *	- API contracts and the JSON form of hand-built arrays.
 * reader_corrupt.c, corrupted input:
 *	- every truncation and many single-byte corruptions of every seed give
 *	  an error or a result, never a crash or leak (run under ASan+UBSan);
 *	- targeted corruptions (huge vector lengths, negative and past-the-body
 *	  buffer offsets, bad footer length, bad offsets and dictionary indices,
 *	  declared lengths of compressed buffers, ...) give the expected error;
 *	- fb_read on hand-made buffers.
 * reader_image.c, the image of a file's record batches (arrow_read_image.c).
 * reader_built.c, streams built here with a flatbuffer builder:
 *	- schemas: nesting at and beyond ARROW_MAX_NESTING, fields sharing
 *	  tables (exponential walks), unsupported and malformed types;
 *	- batches pyarrow cannot write, decompression bombs, views, run ends
 *	  and list views.
 * reader_testlib.h holds what they share.  The two parts are included here,
 * one translation unit, since tap.h counts the checks in static variables.
 * The corpus directory is ../fuzz/corpus (tests run from test/c) or
 * $ARROW_TEST_CORPUS.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "reader_testlib.h"
/* the parts (see above) */
#include "reader_corrupt.c"
#include "reader_built.c"
#include "reader_image.c"

/* ------------------------------------------------------------------------
 * Seeds and their values
 * ------------------------------------------------------------------------
 */
static void
check_rows(const char *seed, const char *expect)
{
	const Seed *s = find_seed(seed);
	ArrowError	err;
	char	   *got;

	if (!tap_ok(s != NULL, "seed %s exists", seed))
		return;
	got = file_rows(s->data, s->len, &err);
	if (!tap_ok(got != NULL, "%s: rows load", seed))
	{
		tap_diag("%s", err.message);
		return;
	}
	if (!tap_ok(strcmp(got, expect) == 0, "%s: rows are the values make_corpus.py wrote", seed))
		tap_diag("got:\n%s", got);
	free(got);
}

static void
test_seeds(void)
{
	for (int i = 0; i < n_seeds; i++)
	{
		ArrowError	err;
		int			loaded;
		int			rc = exercise(seeds[i].data, seeds[i].len, NULL, &err, &loaded);

		if (!tap_ok(rc == ARROW_OK, "%s: opens, %d batches load, values print", seeds[i].name, loaded))
			tap_diag("%s", err.message);
	}
}

/* does p point into data[0 .. len) */
static bool
points_into(const void *p, const uint8_t *data, size_t len)
{
	return (const uint8_t *) p >= data && (const uint8_t *) p < data + len;
}

/*
 * ArrowFile.map: every seed's rows are the same with its bytes as the
 * file's mapping; in an uncompressed file the values and UTF8/BINARY data
 * point into the mapping, the offsets (which loading checks) never do;
 * nothing of a compressed one does.
 */
static void
test_mapped(void)
{
	for (int i = 0; i < n_seeds; i++)
	{
		ArrowError	err;
		char	   *read = file_rows_of(seeds[i].data, seeds[i].len, false, &err);
		char	   *mapped = read ? file_rows_of(seeds[i].data, seeds[i].len, true, &err) : NULL;

		if (!tap_ok(read && mapped && strcmp(read, mapped) == 0,
					"%s: the same rows read and mapped", seeds[i].name))
			tap_diag("%s", read && mapped ? "rows differ" : err.message);
		free(read);
		free(mapped);
	}
	for (int k = 0; k < 2; k++)
	{
		const char *name = k == 0 ? "seed-strings.file" : "seed-lz4.file";
		const Seed *s = find_seed(name);
		ArrowSource src;
		ArrowFile  *file = NULL;
		ArrowBatch *batch = NULL;
		ArrowError	err;
		int			in_map = 0, offsets_in_map = 0, var = 0;

		if (!tap_ok(s && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK &&
					(file->map = s->data, arrow_batch_load(file, 0, NULL, &batch, &err)) == ARROW_OK,
					"%s: batch 0 loads mapped", name))
		{
			arrow_file_close(file);
			continue;
		}
		for (int32_t c = 0; c < batch->n_columns; c++)
		{
			const ArrowArray *a = &batch->columns[c];

			if (a->offsets != NULL)
			{
				var++;
				in_map += points_into(a->data, s->data, s->len);
				offsets_in_map += points_into(a->offsets, s->data, s->len);
			}
			else
				in_map += points_into(a->values, s->data, s->len);
		}
		if (k == 0)
			tap_ok(var == 4 && in_map == batch->n_columns && offsets_in_map == 0,
				   "%s: values and data in the mapping (%d of %d), offsets not (%d of %d)",
				   name, in_map, batch->n_columns, offsets_in_map, var);
		else
			tap_ok(var > 0 && in_map == 0 && offsets_in_map == 0,
				   "%s (compressed): nothing in the mapping (%d)", name, in_map);
		arrow_batch_free(batch);
		arrow_file_close(file);
	}
}

static void
test_values(void)
{
	const Seed *s;
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;
	ArrowStrBuf buf = {NULL, NULL, 0, 0};

	check_rows("seed-primitives.file",
			   "{\"row\": {\"b\": true, \"i8\": -128, \"i16\": null, \"i32\": 1, \"i64\": -9223372036854775808, \"u8\": 255, \"u16\": 65535, \"u32\": 4294967295, \"u64\": 18446744073709551615, \"f16\": 1.5, \"f32\": 0.10000000149011612, \"f64\": 1.0000000000000001e+300, \"n\": null}}\n"
			   "{\"row\": {\"b\": null, \"i8\": 127, \"i16\": -32768, \"i32\": null, \"i64\": 9223372036854775807, \"u8\": null, \"u16\": 0, \"u32\": 0, \"u64\": null, \"f16\": null, \"f32\": \"NaN\", \"f64\": -0.0, \"n\": null}}\n"
			   "{\"row\": {\"b\": false, \"i8\": null, \"i16\": 32767, \"i32\": 3, \"i64\": null, \"u8\": 0, \"u16\": null, \"u32\": 1, \"u64\": 0, \"f16\": -0.0, \"f32\": null, \"f64\": \"-Infinity\", \"n\": null}}\n"
			   "{\"row\": {\"b\": true, \"i8\": 0, \"i16\": 1, \"i32\": -2147483648, \"i64\": 42, \"u8\": 1, \"u16\": 1, \"u32\": null, \"u64\": 1, \"f16\": \"Infinity\", \"f32\": -1, \"f64\": null, \"n\": null}}\n");
	check_rows("seed-strings.file",
			   "{\"row\": {\"s\": \"a\", \"ls\": \"x\", \"bin\": \"00ff\", \"lbin\": \"71\", \"fsb\": \"616263\"}}\n"
			   "{\"row\": {\"s\": null, \"ls\": \"yy\", \"bin\": null, \"lbin\": \"\", \"fsb\": null}}\n"
			   "{\"row\": {\"s\": \"\", \"ls\": null, \"bin\": \"\", \"lbin\": null, \"fsb\": \"000102\"}}\n"
			   "{\"row\": {\"s\": \"h\xc3\xa9\\\"\\\\\\u000a\\u0001\", \"ls\": \"zzz\", \"bin\": \"616263\", \"lbin\": \"0102\", \"fsb\": \"7a7a7a\"}}\n");
	check_rows("seed-nested.file",
			   "{\"row\": {\"l\": [1, null], \"ll\": [\"a\"], \"fsl\": [1, 2], \"st\": {\"a\": 1, \"b\": [1.5]}, \"ls2\": [[1], [2, 3]]}}\n"
			   "{\"row\": {\"l\": [], \"ll\": null, \"fsl\": null, \"st\": null, \"ls2\": null}}\n"
			   "{\"row\": {\"l\": null, \"ll\": [], \"fsl\": [null, 3], \"st\": {\"a\": null, \"b\": []}, \"ls2\": [[]]}}\n"
			   "{\"row\": {\"l\": [4], \"ll\": [\"b\", null], \"fsl\": [4, 5], \"st\": {\"a\": 4, \"b\": null}, \"ls2\": [null]}}\n");
	check_rows("seed-temporal.file",
			   "{\"row\": {\"dec\": \"-123.45\", \"d32\": 19000, \"d64\": 86400000, \"t32\": 1, \"t64\": 1, \"ts\": 1700000000000000, \"dur\": 5, \"mdn\": [1, -2, 3000]}}\n"
			   "{\"row\": {\"dec\": null, \"d32\": null, \"d64\": 0, \"t32\": 86399, \"t64\": null, \"ts\": null, \"dur\": -5, \"mdn\": null}}\n"
			   "{\"row\": {\"dec\": \"0.01\", \"d32\": 0, \"d64\": null, \"t32\": null, \"t64\": 86399999999999, \"ts\": 0, \"dur\": null, \"mdn\": [0, 0, 0]}}\n"
			   "{\"row\": {\"dec\": \"99999999.99\", \"d32\": -1, \"d64\": -86400000, \"t32\": 0, \"t64\": 0, \"ts\": -1, \"dur\": 0, \"mdn\": [-1, 31, -9223372036854775808]}}\n");
	check_rows("seed-dictionary.file",
			   "{\"row\": {\"d\": \"x\", \"d8\": \"q\", \"ld\": [\"x\"], \"sd\": {\"k\": \"a\"}}}\n"
			   "{\"row\": {\"d\": \"y\", \"d8\": \"p\", \"ld\": [], \"sd\": {\"k\": null}}}\n"
			   "{\"row\": {\"d\": null, \"d8\": null, \"ld\": null, \"sd\": null}}\n"
			   "{\"row\": {\"d\": \"x\", \"d8\": \"q\", \"ld\": [\"y\", null], \"sd\": {\"k\": \"b\"}}}\n");
	/* delta: the second batch sees "c" appended to a, b */
	check_rows("seed-delta.stream",
			   "{\"row\": {\"d\": \"a\", \"v\": 1}}\n{\"row\": {\"d\": \"b\", \"v\": 2}}\n{\"row\": {\"d\": null, \"v\": 3}}\n"
			   "{\"row\": {\"d\": \"c\", \"v\": 4}}\n{\"row\": {\"d\": \"a\", \"v\": null}}\n{\"row\": {\"d\": \"b\", \"v\": 6}}\n");
	check_rows("seed-delta.file",
			   "{\"row\": {\"d\": \"a\", \"v\": 1}}\n{\"row\": {\"d\": \"b\", \"v\": 2}}\n{\"row\": {\"d\": null, \"v\": 3}}\n"
			   "{\"row\": {\"d\": \"c\", \"v\": 4}}\n{\"row\": {\"d\": \"a\", \"v\": null}}\n{\"row\": {\"d\": \"b\", \"v\": 6}}\n");
	/* deltas of list, struct, fixed-size list, bool, large_utf8, float64 values */
	check_rows("seed-delta-types.stream",
			   "{\"row\": {\"dl\": [1, null], \"ds\": {\"a\": 1, \"b\": \"x\"}, \"df\": [1, 2], \"db\": true, \"dL\": \"p\", \"dd\": 1.5}}\n"
			   "{\"row\": {\"dl\": null, \"ds\": null, \"df\": null, \"db\": null, \"dL\": null, \"dd\": null}}\n"
			   "{\"row\": {\"dl\": null, \"ds\": null, \"df\": null, \"db\": null, \"dL\": null, \"dd\": null}}\n"
			   "{\"row\": {\"dl\": [7, 8, 9], \"ds\": {\"a\": null, \"b\": \"yz\"}, \"df\": [null, 4], \"db\": false, \"dL\": \"qq\", \"dd\": -2}}\n"
			   "{\"row\": {\"dl\": [1, null], \"ds\": {\"a\": 1, \"b\": \"x\"}, \"df\": [1, 2], \"db\": true, \"dL\": \"p\", \"dd\": 1.5}}\n"
			   "{\"row\": {\"dl\": null, \"ds\": null, \"df\": null, \"db\": null, \"dL\": null, \"dd\": null}}\n");
	/* replacement: the second batch sees x, y only */
	check_rows("seed-replace.stream",
			   "{\"row\": {\"d\": \"a\", \"v\": 1}}\n{\"row\": {\"d\": \"b\", \"v\": 2}}\n{\"row\": {\"d\": null, \"v\": 3}}\n"
			   "{\"row\": {\"d\": \"y\", \"v\": 7}}\n{\"row\": {\"d\": \"x\", \"v\": 8}}\n{\"row\": {\"d\": \"x\", \"v\": 9}}\n");
	check_rows("seed-empty.file", "");
	check_rows("seed-zero-rows.stream", "");

	/* the same data read four ways */
	{
		const char *names[] = {"seed-lz4.file", "seed-zstd.file", "seed-zstd.stream"};
		const Seed *a = find_seed("seed-lz4.file");
		char	   *first = a ? file_rows(a->data, a->len, &err) : NULL;

		tap_ok(first != NULL && strstr(first, "{\"row\": {\"i\": 39, \"s\": \"row 39\", \"l\": [39, 40], \"d\": null}}\n"
					  "{\"row\": {\"i\": null, \"s\": null, \"l\": [40, 41], \"d\": \"a\"}}\n") != NULL,
			   "lz4 seed has the expected last rows");
		for (int i = 1; i < 3; i++)
		{
			const Seed *o = find_seed(names[i]);
			char	   *other = o ? file_rows(o->data, o->len, &err) : NULL;

			tap_ok(first && other && strcmp(first, other) == 0, "%s reads like %s", names[i], names[0]);
			free(other);
		}
		free(first);
	}
	{
		const Seed *a = find_seed("seed-strings.file");
		const Seed *b = find_seed("seed-legacy.stream");
		char	   *ra = a ? file_rows(a->data, a->len, &err) : NULL;
		char	   *rb = b ? file_rows(b->data, b->len, &err) : NULL;

		tap_ok(ra && rb && strcmp(ra, rb) == 0, "pre-0.15 stream reads like the file");
		free(ra);
		free(rb);
	}

	/* metadata at every level, versions, formats */
	s = find_seed("seed-metadata.file");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
	{
		tap_ok(arrow_schema_to_json(&file->schema, &buf, &err) == ARROW_OK &&
			   strcmp(buf.data, "{\"fields\": [{\"name\": \"x\", \"type\": \"int32\", \"nullable\": true, \"metadata\": {\"unit\": \"m\", \"k\xc3\xa9y\": \"v\xc3\xa4l\"}}, "
					  "{\"name\": \"y\", \"type\": \"utf8\", \"nullable\": false}], \"metadata\": {\"origin\": \"pg_warp\", \"empty\": \"\"}}") == 0,
			   "schema and field metadata: %s", buf.data);
		tap_ok(file->n_batches == 1 && strcmp(arrow_metadata_get(&file->batches[0].metadata, "batch") ?: "", "first") == 0,
			   "message metadata of the record batch");
		tap_ok(!file->is_stream && file->metadata_version == 5, "file format, V5");
		arrow_strbuf_free(&buf);
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-metadata.file opens");
	s = find_seed("seed-batch-keys.file");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK &&
		file->n_batches == 2)
	{
		int32_t		hint = 2;	/* the second "k": a lookup must not trust it */
		const char *v = arrow_metadata_get_hinted(&file->batches[0].metadata, "k", &hint);

		tap_ok(!file->batches[0].metadata.unique && v != NULL && strcmp(v, "first") == 0,
			   "a batch's key given twice: not unique, the first value wins over a hint");
		hint = 33;
		v = arrow_metadata_get_hinted(&file->batches[1].metadata, "key33", &hint);
		tap_ok(file->batches[1].metadata.unique && file->batches[1].metadata.count == 40 &&
			   v != NULL && strcmp(v, "v33") == 0, "40 distinct keys of a batch: unique");
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-batch-keys.file opens with 2 batches");
	s = find_seed("seed-v4.file");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
	{
		tap_ok(file->metadata_version == 4, "V4 metadata read as version 4");
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-v4.file opens");
	s = find_seed("seed-delta.stream");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
	{
		tap_ok(file->is_stream && file->n_dictionaries == 2 && !file->dictionaries[0].is_delta &&
			   file->dictionaries[1].is_delta && file->n_batches == 2 && file->total_rows == 6,
			   "stream with a dictionary and a delta");
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-delta.stream opens");
	s = find_seed("seed-zstd.file");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
	{
		tap_ok(file->batches[0].codec == ARROW_CODEC_ZSTD && file->dictionaries[0].batch.codec == ARROW_CODEC_ZSTD,
			   "zstd codec recorded");
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-zstd.file opens");
	s = find_seed("seed-lz4.file");
	if (s != NULL && open_mem(s->data, s->len, NULL, &src, &file, &err) == ARROW_OK)
	{
		tap_ok(file->batches[0].codec == ARROW_CODEC_LZ4_FRAME, "lz4 codec recorded");
		arrow_file_close(file);
	}
	else
		tap_ok(false, "seed-lz4.file opens");
}

/* ------------------------------------------------------------------------
 * Allocation failures
 * ------------------------------------------------------------------------
 */
typedef struct FailingAlloc
{
	int64_t		countdown;		/* allocations left before failing; < 0: none fail */
	int64_t		live;
	bool		failed;
} FailingAlloc;

static void *
fail_malloc(void *ctx, size_t size)
{
	FailingAlloc *f = ctx;
	void	   *p;

	if (f->countdown == 0)
	{
		f->failed = true;
		return NULL;
	}
	if (f->countdown > 0)
		f->countdown--;
	p = malloc(size ? size : 1);
	if (p != NULL)
	{
		memset(p, 0xbe, size);	/* no reader code may rely on zeroed memory */
		f->live++;
	}
	return p;
}

static void *
fail_realloc(void *ctx, void *ptr, size_t size)
{
	FailingAlloc *f = ctx;

	if (f->countdown == 0)
	{
		f->failed = true;
		return NULL;
	}
	if (f->countdown > 0)
		f->countdown--;
	return realloc(ptr, size ? size : 1);
}

static void
fail_free(void *ctx, void *ptr)
{
	FailingAlloc *f = ctx;

	if (ptr != NULL)
	{
		f->live--;
		free(ptr);
	}
}

static void
test_oom(void)
{
	static const char *names[] = {
		"seed-dictionary.file", "seed-zstd.stream", "seed-lz4.file",
		"seed-delta.stream", "seed-metadata.file", "seed-nested.file",
		"seed-delta-types.stream"
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
	{
		const Seed *s = find_seed(names[i]);
		FailingAlloc fa = {0};
		ArrowAllocator alloc = {fail_malloc, fail_realloc, fail_free, &fa};
		int			leaks = 0;
		int			wrong = 0;
		int64_t		n;

		if (!tap_ok(s != NULL, "seed %s", names[i]))
			continue;
		for (n = 0;; n++)
		{
			ArrowError	err;
			int			rc;

			fa.countdown = n;
			fa.failed = false;
			fa.live = 0;
			rc = exercise(s->data, s->len, &alloc, &err, NULL);
			if (fa.live != 0)
				leaks++;
			if (!fa.failed)
			{
				if (rc != ARROW_OK)
					wrong++;
				break;
			}
			if (rc != ARROW_ERR_NOMEM)
				wrong++;
		}
		tap_ok(leaks == 0 && wrong == 0,
			   "%s: failing each of %lld allocations gives ARROW_ERR_NOMEM and frees everything (%d leaks, %d wrong codes)",
			   names[i], (long long) n, leaks, wrong);
	}
}

/* ------------------------------------------------------------------------
 * API contracts
 * ------------------------------------------------------------------------
 */
static void
test_api(void)
{
	const Seed *s = find_seed("seed-nested.file");
	ArrowSource src;
	ArrowFile  *file;
	ArrowFile  *byfd;
	ArrowBatch *batch;
	ArrowError	err;
	ArrowExtent ext[16];
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	bool		want[5] = {false, false, false, true, false};
	int			n;

	tap_ok(arrow_file_open("/nonexistent/file", NULL, &file, &err) == ARROW_ERR_IO &&
		   err.sys_errno == ENOENT && file == NULL, "missing file: ARROW_ERR_IO, ENOENT (%s)", err.message);
	tap_ok(arrow_file_open(".", NULL, &file, &err) == ARROW_ERR_INVALID && file == NULL,
		   "directory: ARROW_ERR_INVALID (%s)", err.message);
	tap_ok(open_mem((const uint8_t *) "", 0, NULL, &src, &file, &err) == ARROW_ERR_INVALID,
		   "empty input: %s", err.message);
	if (s == NULL || open_mem(s->data, s->len, NULL, &src, &file, &err) != ARROW_OK)
	{
		tap_ok(false, "seed-nested.file opens");
		return;
	}
	tap_ok(arrow_file_open(s->path, NULL, &byfd, &err) == ARROW_OK &&
		   byfd->n_batches == file->n_batches && byfd->fd >= 0 &&
		   arrow_schema_equal(&byfd->schema, &file->schema, NULL, 0),
		   "opening by path reads the same file");
	if (arrow_batch_load(byfd, 0, NULL, &batch, &err) == ARROW_OK)
	{
		tap_ok(rows_json(byfd, batch, &buf, &err) == ARROW_OK && strstr(buf.data, "\"ls2\": [[1], [2, 3]]") != NULL,
			   "values read through the file descriptor");
		arrow_batch_free(batch);
	}
	else
		tap_ok(false, "load through the file descriptor: %s", err.message);
	arrow_file_close(byfd);

	/* extents: absolute offsets of the column's buffers, children included */
	n = arrow_column_extents(file, 0, 3, ext, 16, &err);
	tap_ok(n == file->columns[3].n_buffers && n == 7 &&
		   ext[0].offset == file->batches[0].body_offset + file->batches[0].buffers[file->columns[3].first_buffer].offset,
		   "extents of the struct column: %d", n);
	tap_ok(arrow_column_extents(file, 0, 3, ext, 4, &err) == -1 && err.code == ARROW_ERR_ARGUMENT,
		   "too little room for extents: ARROW_ERR_ARGUMENT");
	tap_ok(arrow_column_extents(file, 1, 0, ext, 16, &err) == -1 && err.code == ARROW_ERR_ARGUMENT,
		   "extents of a missing batch: ARROW_ERR_ARGUMENT");
	tap_ok(arrow_column_extents(file, 0, 5, ext, 16, &err) == -1 && err.code == ARROW_ERR_ARGUMENT,
		   "extents of a missing column: ARROW_ERR_ARGUMENT");
	tap_ok(arrow_batch_load(file, 1, NULL, &batch, &err) == ARROW_ERR_ARGUMENT && batch == NULL,
		   "loading a missing batch: ARROW_ERR_ARGUMENT");
	tap_ok(arrow_batch_load(file, -1, NULL, &batch, NULL) == ARROW_ERR_ARGUMENT,
		   "NULL error pointer is accepted");

	/* want: only column 3 */
	if (arrow_batch_load(file, 0, want, &batch, &err) == ARROW_OK)
	{
		buf.len = 0;
		tap_ok(batch->columns[0].field == NULL && batch->columns[3].field == &file->schema.fields[3] &&
			   batch->columns[3].n_children == 2 && batch->n_rows == 4,
			   "only the wanted column is loaded");
		tap_ok(arrow_value_to_json(&batch->columns[0], 0, &buf, &err) == ARROW_ERR_ARGUMENT,
			   "JSON of an unloaded column: ARROW_ERR_ARGUMENT");
		tap_ok(arrow_value_to_json(&batch->columns[3], 4, &buf, &err) == ARROW_ERR_ARGUMENT,
			   "JSON of a row past the end: ARROW_ERR_ARGUMENT");
		tap_ok(arrow_value_to_json(&batch->columns[3], 2, &buf, &err) == ARROW_OK &&
			   strcmp(buf.data, "{\"a\": null, \"b\": []}") == 0, "struct value: %s", buf.data);
		tap_ok(arrow_array_is_null(&batch->columns[3], 1) && !arrow_array_is_null(&batch->columns[3], 0),
			   "arrow_array_is_null");
		arrow_batch_free(batch);
	}
	else
		tap_ok(false, "load with a want mask: %s", err.message);
	arrow_strbuf_free(&buf);
	arrow_file_close(file);
}

/* ------------------------------------------------------------------------
 * JSON of hand-built arrays
 * ------------------------------------------------------------------------
 */
static void
check_json(const ArrowArray *a, int64_t row, const char *expect, const char *what)
{
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;
	int			rc = arrow_value_to_json(a, row, &buf, &err);

	tap_ok(rc == ARROW_OK && strcmp(buf.data, expect) == 0, "%s: %s", what, rc ? err.message : buf.data);
	arrow_strbuf_free(&buf);
}

static void
test_json(void)
{
	double		dv[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e300, 0.1, 5e-324, 123456789012345678.0};
	const char *dexp[] = {"0", "-0.0", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"",
	"1.0000000000000001e+300", "0.10000000000000001", "4.9406564584124654e-324", "1.2345678901234568e+17"};
	ArrowField	fd = {.name = "f", .type = {.id = ARROW_TYPE_FLOAT64}};
	ArrowArray	ad = {.field = &fd, .length = 9, .values = (const uint8_t *) dv};
	/* strings: controls, separators, quote, backslash, valid and invalid UTF-8 */
	static const char text[] = "a\"\\\x1f\x7f" "\xc2\x85" "\xe2\x80\xa8" "\xe2\x80\xa9" "\xc3\xa9" "\xe2\x82\xac" "\xf0\x9f\x98\x80"
		"\xc0\xaf" "\xed\xa0\x80" "\xf4\x90\x80\x80" "\xe2\x82" "z";
	int32_t		offsets[] = {0, (int32_t) sizeof(text) - 1};
	ArrowField	fs = {.name = "s", .type = {.id = ARROW_TYPE_UTF8}};
	ArrowArray	as = {.field = &fs, .length = 1, .offsets = offsets, .data = (const uint8_t *) text,
	.data_length = sizeof(text) - 1};
	/* decimals with negative, zero and large scale */
	uint64_t	dec[4] = {(uint64_t) -12345, UINT64_MAX, 0, 0};
	ArrowField	fdec = {.name = "d", .type = {.id = ARROW_TYPE_DECIMAL128, .precision = 10, .scale = -3}};
	ArrowArray	adec = {.field = &fdec, .length = 2, .values = (const uint8_t *) dec};
	ArrowField	fdec2 = {.name = "d", .type = {.id = ARROW_TYPE_DECIMAL128, .precision = 38, .scale = 38}};
	ArrowArray	adec2 = {.field = &fdec2, .length = 2, .values = (const uint8_t *) dec};
	uint16_t	halves[] = {0x3c00, 0x0001, 0xfc00, 0x7e00};
	ArrowField	fh = {.name = "h", .type = {.id = ARROW_TYPE_FLOAT16}};
	ArrowArray	ah = {.field = &fh, .length = 4, .values = (const uint8_t *) halves};
	int32_t		dt[] = {3, -500};
	ArrowField	fdt = {.name = "i", .type = {.id = ARROW_TYPE_INTERVAL_DT}};
	ArrowArray	adt = {.field = &fdt, .length = 1, .values = (const uint8_t *) dt};
	ArrowSchema empty = {0};
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	for (int i = 0; i < 9; i++)
		check_json(&ad, i, dexp[i], "float64");
	check_json(&as, 0, "\"a\\\"\\\\\\u001f\\u007f\\u0085\\u2028\\u2029\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"
			   "\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffdz\"",
			   "string escapes and invalid UTF-8");
	check_json(&adec, 0, "\"-12345000\"", "decimal128 scale -3");
	check_json(&adec, 1, "\"0\"", "decimal128 scale -3, zero");
	check_json(&adec2, 0, "\"-0.00000000000000000000000000000000012345\"", "decimal128 scale 38");
	check_json(&ah, 0, "1", "float16 1.0");
	check_json(&ah, 1, "5.9604644775390625e-08", "float16 smallest subnormal");
	check_json(&ah, 2, "\"-Infinity\"", "float16 -inf");
	check_json(&ah, 3, "\"NaN\"", "float16 NaN");
	check_json(&adt, 0, "[3, -500]", "interval[dt]");
	tap_ok(arrow_schema_to_json(&empty, &buf, &err) == ARROW_OK &&
		   strcmp(buf.data, "{\"fields\": [], \"metadata\": {}}") == 0, "empty schema JSON");
	arrow_strbuf_free(&buf);
}

int
main(void)
{
	load_seeds();
	test_seeds();
	test_mapped();
	test_values();
	test_api();
	test_json();
	test_targeted();
	test_targeted_body();
	test_built_schemas();
	test_built_batches();
	test_bombs();
	test_built_views();
	test_built_run_ends();
	test_built_list_views();
	test_fb();
	test_oom();
	test_truncation();
	test_corruption();
	test_image();
	test_flat();
	test_copy();
	test_image_large();
	test_image_unpadded();
	test_image_file();
	test_image_file_prune();
	for (int i = 0; i < n_seeds; i++)
		free(seeds[i].data);
	return tap_done();
}
