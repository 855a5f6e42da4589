/*
 * fuzz_reader.c
 *		libFuzzer target for the Arrow reader: opens the input as a file or
 *		stream (over memory), loads every record batch with all its columns
 *		(and so the dictionaries they use), writes every value and the schema
 *		as JSON, asks for every column's extents, and frees everything.
 *		Sanitizers catch any out-of-bounds access, leak or undefined
 *		behaviour.  Built and run by scripts/fuzz.sh.
 */
#include <stddef.h>
#include <stdint.h>

#include "arrow.h"

int			LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ArrowSource src;
	ArrowFile  *file;
	ArrowError	err;
	ArrowStrBuf buf = {NULL, NULL, 0, 0};

	arrow_source_from_memory(&src, data, size);
	if (arrow_file_open_source(&src, NULL, &file, &err) != ARROW_OK)
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
			for (int64_t r = 0; r < batch->columns[c].length; r++)
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
	return 0;
}
