/*-------------------------------------------------------------------------
 *
 * dump.c
 *		pg2arrow --dump: prints the layout of an Arrow file.
 *
 * Uses the Arrow library's reader: the schema (with field metadata such as
 * pg_type), the dictionary batches, and for each record batch its file
 * offsets, rows, custom metadata (pg_warp.min.N / pg_warp.max.N) and the
 * nodes and buffers of every column.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "pg2arrow.h"

/* Prints a field and its children, indented by depth */
static void
dump_field(const ArrowField *f, int depth)
{
	char		type[128];

	arrow_type_format(&f->type, type, sizeof(type));
	printf("%*s%s: %s%s", 2 + depth * 2, "", f->name, type,
		   f->nullable ? "" : " not null");
	if (f->has_dictionary)
		printf(" (dictionary %lld, %s indices%s)", (long long) f->dictionary.id,
			   f->dictionary.index_type == ARROW_TYPE_INT8 ? "int8" :
			   f->dictionary.index_type == ARROW_TYPE_INT16 ? "int16" :
			   f->dictionary.index_type == ARROW_TYPE_INT32 ? "int32" : "int64",
			   f->dictionary.ordered ? ", ordered" : "");
	for (int i = 0; i < f->metadata.count; i++)
		printf(" %s=%s", f->metadata.items[i].key, f->metadata.items[i].value);
	putchar('\n');
	for (int i = 0; i < f->n_children; i++)
		dump_field(&f->children[i], depth + 1);
}

/* Prints the custom metadata of a message (one key per line) */
static void
dump_metadata(const ArrowMetadata *md, const char *indent)
{
	for (int i = 0; i < md->count; i++)
		printf("%s%s = %s\n", indent, md->items[i].key, md->items[i].value);
}

/* Prints offsets, sizes and the node/buffer lists of one batch message */
static void
dump_batch(const ArrowFile *file, const ArrowBatchInfo *b, bool per_column)
{
	printf("  offset %lld, body at %lld, %lld body bytes, %lld rows%s\n",
		   (long long) b->message_offset, (long long) b->body_offset,
		   (long long) b->body_length, (long long) b->n_rows,
		   b->codec == ARROW_CODEC_LZ4_FRAME ? ", lz4" :
		   b->codec == ARROW_CODEC_ZSTD ? ", zstd" : "");
	dump_metadata(&b->metadata, "  ");
	if (!per_column)
		return;
	for (int c = 0; c < file->schema.n_fields; c++)
	{
		const ArrowColumnLayout *l = &file->columns[c];

		printf("  column %d (%s):", c, file->schema.fields[c].name);
		for (int n = l->first_node; n < l->first_node + l->n_nodes && n < b->n_nodes; n++)
			printf(" node[%lld rows, %lld nulls]", (long long) b->nodes[n].length,
				   (long long) b->nodes[n].null_count);
		for (int k = l->first_buffer; k < l->first_buffer + l->n_buffers && k < b->n_buffers; k++)
			printf(" buf[%lld+%lld]", (long long) b->buffers[k].offset,
				   (long long) b->buffers[k].length);
		putchar('\n');
	}
}

/*
 * Prints the layout of the Arrow file at path to stdout.  Returns the exit
 * code: 0, or 1 (with a message on stderr) when the file cannot be read.
 */
int
dump_arrow_file(const char *path)
{
	ArrowFile  *file;
	ArrowError	err;

	if (arrow_file_open(path, NULL, &file, &err) != ARROW_OK)
	{
		fprintf(stderr, "pg2arrow: cannot read \"%s\": %s\n", path, err.message);
		return 1;
	}
	printf("file: %s (%lld bytes, %s format, metadata V%d)\n", path,
		   (long long) file->source.size, file->is_stream ? "stream" : "file",
		   file->metadata_version);
	printf("schema: %d fields\n", file->schema.n_fields);
	for (int i = 0; i < file->schema.n_fields; i++)
		dump_field(&file->schema.fields[i], 0);
	dump_metadata(&file->schema.metadata, "  schema metadata: ");
	for (int i = 0; i < file->n_dictionaries; i++)
	{
		const ArrowDictionaryBatchInfo *d = &file->dictionaries[i];

		printf("dictionary batch %d: id %lld%s\n", i, (long long) d->id,
			   d->is_delta ? " (delta)" : "");
		dump_batch(file, &d->batch, false);
	}
	for (int i = 0; i < file->n_batches; i++)
	{
		printf("record batch %d:\n", i);
		dump_batch(file, &file->batches[i], true);
	}
	printf("total: %d record batches, %lld rows\n", file->n_batches,
		   (long long) file->total_rows);
	arrow_file_close(file);
	return 0;
}
