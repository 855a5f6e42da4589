/*
 * fuzz_reader.c
 *		libFuzzer target for the Arrow reader: opens the input as a file or
 *		stream (over memory), loads every record batch with all its columns
 *		(and so the dictionaries they use), writes the schema and values as
 *		JSON, asks for every column's extents, and frees everything.
 *		Sanitizers catch any out-of-bounds access, leak or undefined
 *		behaviour.  Built and run by scripts/fuzz.sh.
 *
 * An input may legitimately claim billions of rows of a type without data
 * (null, struct of nulls), whose JSON would be gigabytes; so the values of
 * at most MAX_ROWS rows per column are written, the JSON buffer may not grow
 * beyond MAX_JSON bytes, and the reader's own memory is capped at MAX_LIVE
 * bytes (past which its allocations fail, exercising the out-of-memory
 * paths).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "arrow.h"

#define MAX_ROWS	1000
#define MAX_JSON	(1 << 20)
#define MAX_LIVE	((size_t) 512 << 20)

/* malloc with a cap on live bytes (the size is kept before the block) */
typedef struct Capped
{
	size_t		cap;
	size_t		live;
} Capped;

static void *
capped_malloc(void *ctx, size_t size)
{
	Capped	   *c = ctx;
	size_t	   *p;

	if (size > c->cap - c->live)
		return NULL;
	p = malloc(size + 16);
	if (p == NULL)
		return NULL;
	p[0] = size;
	c->live += size;
	return (char *) p + 16;
}

static void
capped_free(void *ctx, void *ptr)
{
	Capped	   *c = ctx;
	size_t	   *p;

	if (ptr == NULL)
		return;
	p = (size_t *) ((char *) ptr - 16);
	c->live -= p[0];
	free(p);
}

static void *
capped_realloc(void *ctx, void *ptr, size_t size)
{
	Capped	   *c = ctx;
	size_t	   *p = (size_t *) ((char *) ptr - 16);
	size_t	   *q;

	if (size > p[0] && size - p[0] > c->cap - c->live)
		return NULL;
	q = realloc(p, size + 16);
	if (q == NULL)
		return NULL;
	c->live = c->live - q[0] + size;
	q[0] = size;
	return (char *) q + 16;
}

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Capped		reader_mem = {MAX_LIVE, 0};
	Capped		json_mem = {MAX_JSON, 0};
	ArrowAllocator reader_alloc = {capped_malloc, capped_realloc, capped_free, &reader_mem};
	ArrowAllocator json_alloc = {capped_malloc, capped_realloc, capped_free, &json_mem};
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;
	ArrowStrBuf buf = {&json_alloc, NULL, 0, 0};

	arrow_source_from_memory(&src, data, size);
	if (arrow_file_open_source(&src, &reader_alloc, &file, &err) != ARROW_OK)
		return 0;
	(void) arrow_schema_to_json(&file->schema, &buf, &err);
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		ArrowBatch *batch;

		for (int32_t c = 0; c < file->schema.n_fields; c++)
		{
			ArrowExtent extents[64];

			(void) arrow_column_extents(file, b, c, extents, 64, &err);
		}
		if (arrow_batch_load(file, b, NULL, &batch, &err) != ARROW_OK)
			continue;
		for (int32_t c = 0; c < batch->n_columns; c++)
		{
			for (int64_t r = 0; r < batch->columns[c].length && r < MAX_ROWS; r++)
			{
				buf.len = 0;
				if (arrow_value_to_json(&batch->columns[c], r, &buf, &err) != ARROW_OK)
					break;
			}
		}
		arrow_batch_free(batch);
	}
	arrow_strbuf_free(&buf);
	arrow_file_close(file);
	if (reader_mem.live != 0 || json_mem.live != 0)
		abort();				/* the reader lost track of memory */
	return 0;
}
