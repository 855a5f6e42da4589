/*
 * reader_testlib.h
 *		What the parts of test_reader.c share: the seed corpus (loaded once by
 *		load_seeds, found by name with find_seed), a file held in memory opened
 *		(open_mem), loaded batch by batch and printed as JSON rows (exercise,
 *		file_rows), the little-endian stores that corrupt or build files
 *		(put32, put64), and expect_error, which checks that such a file fails
 *		with the expected code on open or on load.  Static functions of one
 *		translation unit: test_reader.c includes this and its parts.
 */
#ifndef READER_TESTLIB_H
#define READER_TESTLIB_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_internal.h"
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

/* Little-endian stores into a file being corrupted or built */
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

#endif							/* READER_TESTLIB_H */
