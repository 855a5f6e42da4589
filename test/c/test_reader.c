/*
 * test_reader.c
 *		Unit tests of the Arrow reader (arrow_read.c, fb_read.c, arrow_codec.c,
 *		arrow_json.c) on the seed corpus in test/fuzz/corpus (made by
 *		test/fuzz/make_corpus.py with pyarrow):
 *	- every seed opens, every batch loads, every value prints as JSON, and
 *	  chosen values equal what make_corpus.py wrote;
 *	- every truncation and many single-byte corruptions of every seed give
 *	  an error or a result, never a crash or leak (run under ASan+UBSan);
 *	- targeted corruptions (huge vector lengths, negative and past-the-body
 *	  buffer offsets, bad footer length, bad offsets and dictionary indices,
 *	  decompression bombs, ...) give the expected error;
 *	- schemas built here: nesting at and beyond ARROW_MAX_NESTING, fields
 *	  sharing tables (exponential walks), unsupported and malformed types;
 *	- allocation failure at every allocation leaves nothing allocated;
 *	- API contracts and the JSON form of hand-built arrays.
 * The corpus directory is ../fuzz/corpus (tests run from test/c) or
 * $ARROW_TEST_CORPUS.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lz4frame.h>
#include <zstd.h>

#include "arrow_internal.h"
#include "fb_read.h"
#include "tap.h"

typedef struct Seed
{
	char		name[256];
	char		path[1024];
	uint8_t    *data;
	size_t		len;
} Seed;

static Seed seeds[64];
static int	n_seeds;

/* ------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------
 */
static uint8_t *
read_whole(const char *path, size_t *len)
{
	FILE	   *f = fopen(path, "rb");
	uint8_t    *data;
	long		n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(n > 0 ? n : 1);
	if (fread(data, 1, n, f) != (size_t) n)
	{
		free(data);
		fclose(f);
		return NULL;
	}
	fclose(f);
	*len = (size_t) n;
	return data;
}

static int
seed_cmp(const void *a, const void *b)
{
	return strcmp(((const Seed *) a)->name, ((const Seed *) b)->name);
}

static void
load_seeds(void)
{
	const char *dir = getenv("ARROW_TEST_CORPUS");
	DIR		   *d;
	struct dirent *e;

	if (dir == NULL)
		dir = "../fuzz/corpus";
	d = opendir(dir);
	if (!tap_ok(d != NULL, "corpus directory %s opens", dir))
		return;
	while ((e = readdir(d)) != NULL && n_seeds < 64)
	{
		Seed	   *s = &seeds[n_seeds];

		if (strncmp(e->d_name, "seed-", 5) != 0)
			continue;
		snprintf(s->name, sizeof(s->name), "%s", e->d_name);
		snprintf(s->path, sizeof(s->path), "%s/%s", dir, e->d_name);
		s->data = read_whole(s->path, &s->len);
		if (s->data != NULL)
			n_seeds++;
	}
	closedir(d);
	qsort(seeds, n_seeds, sizeof(Seed), seed_cmp);
	tap_ok(n_seeds >= 12, "corpus has %d seeds", n_seeds);
}

static const Seed *
find_seed(const char *name)
{
	for (int i = 0; i < n_seeds; i++)
	{
		if (strcmp(seeds[i].name, name) == 0)
			return &seeds[i];
	}
	return NULL;
}

/* A private copy of a seed, to corrupt */
static uint8_t *
copy_seed(const Seed *s)
{
	uint8_t    *p = malloc(s->len);

	memcpy(p, s->data, s->len);
	return p;
}

static int
open_mem(const uint8_t *data, size_t len, const ArrowAllocator *alloc,
		 ArrowSource *src, ArrowFile **file, ArrowError *err)
{
	arrow_source_from_memory(src, data, len);
	return arrow_file_open_source(src, alloc, file, err);
}

/*
 * Rows of a loaded batch as '{"row": ...}' lines (the columns as the
 * children of a struct), appended to buf.
 */
static int
rows_json(const ArrowFile *file, const ArrowBatch *batch, ArrowStrBuf *buf, ArrowError *err)
{
	ArrowField	row_field = {.name = "", .type = {.id = ARROW_TYPE_STRUCT},
	.n_children = file->schema.n_fields, .children = file->schema.fields};
	ArrowArray	row = {.field = &row_field, .length = batch->n_rows,
	.n_children = batch->n_columns, .children = batch->columns};

	for (int64_t r = 0; r < batch->n_rows; r++)
	{
		if (arrow_strbuf_append(buf, "{\"row\": ", 8, err) != ARROW_OK ||
			arrow_value_to_json(&row, r, buf, err) != ARROW_OK ||
			arrow_strbuf_append(buf, "}\n", 2, err) != ARROW_OK)
			return err->code;
	}
	return ARROW_OK;
}

/*
 * Opens data, writes the schema as JSON, asks for every column's extents,
 * loads every batch and writes every row as JSON.  Returns the first error
 * (err set) or ARROW_OK; *batches_loaded counts the batches that loaded.
 * Everything is freed in every case.
 */
static int
exercise(const uint8_t *data, size_t len, const ArrowAllocator *alloc,
		 ArrowError *err, int *batches_loaded)
{
	ArrowSource src;
	ArrowFile  *file;
	ArrowStrBuf buf = {alloc, NULL, 0, 0};
	int			rc;

	if (batches_loaded)
		*batches_loaded = 0;
	rc = open_mem(data, len, alloc, &src, &file, err);
	if (rc != ARROW_OK)
		return rc;
	rc = arrow_schema_to_json(&file->schema, &buf, err);
	for (int32_t b = 0; rc == ARROW_OK && b < file->n_batches; b++)
	{
		ArrowBatch *batch;

		for (int32_t c = 0; c < file->schema.n_fields; c++)
		{
			ArrowExtent ext[256];

			if (arrow_column_extents(file, b, c, ext, 256, err) != file->columns[c].n_buffers)
				rc = ARROW_ERR_ARGUMENT;
		}
		if (rc != ARROW_OK)
			break;
		rc = arrow_batch_load(file, b, NULL, &batch, err);
		if (rc != ARROW_OK)
			break;
		buf.len = 0;
		rc = rows_json(file, batch, &buf, err);
		arrow_batch_free(batch);
		if (rc == ARROW_OK && batches_loaded)
			(*batches_loaded)++;
	}
	arrow_strbuf_free(&buf);
	arrow_file_close(file);
	return rc;
}

/*
 * All rows of a file as JSON lines (malloc'd), or NULL with err set; with
 * `mapped`, data is the file's ArrowFile.map too
 */
static char *
file_rows_of(const uint8_t *data, size_t len, bool mapped, ArrowError *err)
{
	ArrowSource src;
	ArrowFile  *file;
	ArrowStrBuf buf = {NULL, NULL, 0, 0};

	if (open_mem(data, len, NULL, &src, &file, err) != ARROW_OK)
		return NULL;
	if (mapped)
		file->map = data;
	if (arrow_strbuf_append(&buf, "", 0, err) != ARROW_OK)
		goto fail;
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		ArrowBatch *batch;
		int			rc;

		if (arrow_batch_load(file, b, NULL, &batch, err) != ARROW_OK)
			goto fail;
		rc = rows_json(file, batch, &buf, err);
		arrow_batch_free(batch);
		if (rc != ARROW_OK)
			goto fail;
	}
	arrow_file_close(file);
	return buf.data;

fail:
	arrow_strbuf_free(&buf);
	arrow_file_close(file);
	return NULL;
}

static char *
file_rows(const uint8_t *data, size_t len, ArrowError *err)
{
	return file_rows_of(data, len, false, err);
}

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

/* ------------------------------------------------------------------------
 * Seeds and their values
 * ------------------------------------------------------------------------
 */
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
static void
put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void
put64(uint8_t *p, int64_t v)
{
	memcpy(p, &v, 8);
}

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

typedef enum
{
	AT_OPEN,					/* the error comes from opening */
	AT_LOAD						/* the file opens, loading batch 0 fails */
} Stage;

/* Runs the mutated file and checks the error code and stage */
static void
expect_error(const uint8_t *data, size_t len, ArrowErrorCode code, Stage stage, const char *what)
{
	ArrowSource src;
	ArrowFile  *file = NULL;
	ArrowBatch *batch = NULL;
	ArrowError	err = {0};
	int			rc = open_mem(data, len, NULL, &src, &file, &err);
	Stage		got = AT_OPEN;

	if (rc == ARROW_OK)
	{
		got = AT_LOAD;
		rc = file->n_batches > 0 ? arrow_batch_load(file, 0, NULL, &batch, &err) : ARROW_OK;
		arrow_batch_free(batch);
		arrow_file_close(file);
	}
	if (!tap_ok(rc == (int) code && got == stage, "%s: %s %s", what,
				arrow_error_code_name(code), stage == AT_OPEN ? "on open" : "on load"))
		tap_diag("got %s %s: %s", arrow_error_code_name(rc), got == AT_OPEN ? "on open" : "on load",
				 rc ? err.message : "");
	else if (rc != ARROW_OK)
		tap_diag("  %s", err.message);
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
	for (int i = 0; i < n_seeds; i++)
		free(seeds[i].data);
	return tap_done();
}
