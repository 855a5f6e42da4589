/*-------------------------------------------------------------------------
 *
 * arrow_print.c
 *		Prints what an Arrow IPC file (or stream) holds: the printer of
 *		`arrow-inspect` and of `pg2arrow --dump`.
 *
 * The human form lists the file, its format and metadata version, the
 * schema (with field metadata), and every dictionary and record batch with
 * the file extents of its message, body, nodes and buffers, so that people
 * and tests can see where things are; with 'values' each record batch is
 * followed by its rows as JSON lines.  The JSON form is exactly the
 * JSON-lines form of doc/arrow-json.md (schema, then per batch one line and
 * one line per row).  The JSON text of schemas, metadata and values comes
 * from the Arrow library's JSON writer.
 *
 * A read error ends the program: "prog: PATH: message", exit status 1.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow.h"
#include "arrow_print.h"
#include "util.h"

/* The file being printed and how */
typedef struct Printer
{
	const char *path;
	ArrowFile  *file;
	const ArrowPrintOptions *opts;
} Printer;

/* Reports err for the file being printed and exits with status 1 */
static void
fail(const Printer *pr, const ArrowError *err)
	__attribute__((noreturn));

static void
fail(const Printer *pr, const ArrowError *err)
{
	fatal("%s: %s", pr->path, err->message);
}

/* Prints s with non-printable bytes as \xNN (names, metadata, paths) */
static void
print_text(const char *s)
{
	for (const unsigned char *p = (const unsigned char *) s; *p; p++)
	{
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			printf("\\x%02x", *p);
		else
			putchar(*p);
	}
}

/* Key = value lines, indented */
static void
print_metadata(const ArrowMetadata *md, int indent)
{
	for (int32_t i = 0; i < md->count; i++)
	{
		printf("%*s", indent, "");
		print_text(md->items[i].key);
		printf(" = ");
		print_text(md->items[i].value);
		printf("\n");
	}
}

/* A field line (type, nullability, dictionary), its metadata, its children */
static void
print_field(const ArrowField *f, int indent)
{
	char		tname[256];

	arrow_type_format(&f->type, tname, sizeof(tname));
	printf("%*s\"", indent, "");
	print_text(f->name);
	printf("\": %s, %s", tname, f->nullable ? "nullable" : "not null");
	if (f->has_dictionary)
	{
		ArrowType	itype = {.id = f->dictionary.index_type};
		char		iname[32];

		arrow_type_format(&itype, iname, sizeof(iname));
		printf(", dictionary %lld (%s indices%s)", (long long) f->dictionary.id, iname,
			   f->dictionary.ordered ? ", ordered" : "");
	}
	printf("\n");
	if (f->metadata.count > 0)
	{
		printf("%*smetadata:\n", indent + 2, "");
		print_metadata(&f->metadata, indent + 4);
	}
	for (int32_t i = 0; i < f->n_children; i++)
		print_field(&f->children[i], indent + 2);
}

/* The codec as the human form names it */
static const char *
codec_name(ArrowCodec codec)
{
	switch (codec)
	{
		case ARROW_CODEC_NONE:
			return "none";
		case ARROW_CODEC_LZ4_FRAME:
			return "lz4_frame";
		case ARROW_CODEC_ZSTD:
			return "zstd";
	}
	return "unknown";
}

/* Message and body extents, row count, codec and message metadata */
static void
print_batch_info(const ArrowBatchInfo *info, const char *rows_word)
{
	printf("  message offset %lld, metadata length %lld, body offset %lld, body length %lld\n",
		   (long long) info->message_offset,
		   (long long) (info->body_offset - info->message_offset),
		   (long long) info->body_offset, (long long) info->body_length);
	printf("  %s %lld, codec %s\n", rows_word, (long long) info->n_rows, codec_name(info->codec));
	if (info->metadata.count > 0)
	{
		printf("  message metadata:\n");
		print_metadata(&info->metadata, 4);
	}
}

/* Nodes and buffers (absolute file offsets) of part of a batch */
static void
print_nodes_buffers(const ArrowBatchInfo *info, int32_t first_node, int32_t n_nodes,
					int32_t first_buffer, int32_t n_buffers, int indent)
{
	for (int32_t i = 0; i < n_nodes; i++)
		printf("%*snode %d: length %lld, null count %lld\n", indent, "", first_node + i,
			   (long long) info->nodes[first_node + i].length,
			   (long long) info->nodes[first_node + i].null_count);
	for (int32_t i = 0; i < n_buffers; i++)
	{
		const ArrowBufferRef *b = &info->buffers[first_buffer + i];

		printf("%*sbuffer %d: offset %lld, length %lld\n", indent, "", first_buffer + i,
			   (long long) (info->body_offset + b->offset), (long long) b->length);
	}
}

/*
 * The JSON object of some metadata: the library writes it as part of a
 * schema, so we write an empty schema with that metadata and keep the part
 * after '"metadata": '.
 */
static void
print_metadata_json(const Printer *pr, const ArrowMetadata *md)
{
	static const char prefix[] = "{\"fields\": [], \"metadata\": ";
	ArrowSchema schema = {.n_fields = 0, .fields = NULL, .metadata = *md};
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	if (arrow_schema_to_json(&schema, &buf, &err) != ARROW_OK)
		fail(pr, &err);
	/* buf.data is prefix + object + "}" */
	fwrite(buf.data + sizeof(prefix) - 1, 1, buf.len - sizeof(prefix), stdout);
	arrow_strbuf_free(&buf);
}

/*
 * Loads record batch b and prints its rows as {"row": {...}} lines.  A row
 * is the JSON form of a struct whose children are the columns, so the
 * library writes the whole object.
 */
static void
print_rows(const Printer *pr, int32_t b)
{
	const ArrowSchema *schema = &pr->file->schema;
	ArrowField	row_field = {.name = "", .nullable = false, .type = {.id = ARROW_TYPE_STRUCT},
	.n_children = schema->n_fields, .children = schema->fields};
	ArrowBatch *batch;
	ArrowArray	row;
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	if (arrow_batch_load(pr->file, b, NULL, &batch, &err) != ARROW_OK)
		fail(pr, &err);
	row = (ArrowArray) {.field = &row_field, .length = batch->n_rows,
	.n_children = batch->n_columns, .children = batch->columns};
	for (int64_t r = 0; r < batch->n_rows; r++)
	{
		buf.len = 0;
		if (arrow_strbuf_append(&buf, "{\"row\": ", 8, &err) != ARROW_OK ||
			arrow_value_to_json(&row, r, &buf, &err) != ARROW_OK ||
			arrow_strbuf_append(&buf, "}\n", 2, &err) != ARROW_OK)
			fail(pr, &err);
		fwrite(buf.data, 1, buf.len, stdout);
	}
	arrow_strbuf_free(&buf);
	arrow_batch_free(batch);
}

/* Whether record batch b is to be printed */
static bool
batch_wanted(const Printer *pr, int32_t b)
{
	return pr->opts->batch < 0 || b == pr->opts->batch;
}

/* The JSON-lines form of doc/arrow-json.md */
static void
print_json(const Printer *pr)
{
	const ArrowFile *file = pr->file;
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	if (arrow_schema_to_json(&file->schema, &buf, &err) != ARROW_OK)
		fail(pr, &err);
	printf("{\"schema\": %s}\n", buf.data);
	arrow_strbuf_free(&buf);
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		if (!batch_wanted(pr, b))
			continue;
		printf("{\"batch\": %d, \"rows\": %lld, \"metadata\": ", b,
			   (long long) file->batches[b].n_rows);
		print_metadata_json(pr, &file->batches[b].metadata);
		printf("}\n");
		print_rows(pr, b);
	}
}

/* The file, its format, the schema and its metadata (human form) */
static void
print_header(const Printer *pr)
{
	const ArrowFile *file = pr->file;

	printf("file: ");
	print_text(pr->path);
	printf(" (%lld bytes)\n", (long long) file->source.size);
	printf("format: %s\n", file->is_stream ? "stream" : "file");
	printf("metadata version: V%d\n", file->metadata_version);
	printf("schema: %d fields\n", file->schema.n_fields);
	for (int32_t i = 0; i < file->schema.n_fields; i++)
		print_field(&file->schema.fields[i], 2);
	if (file->schema.metadata.count > 0)
	{
		printf("schema metadata:\n");
		print_metadata(&file->schema.metadata, 2);
	}
}

/* Every dictionary batch: id, extents, nodes and buffers (human form) */
static void
print_dictionaries(const Printer *pr)
{
	const ArrowFile *file = pr->file;

	printf("dictionary batches: %d\n", file->n_dictionaries);
	for (int32_t d = 0; d < file->n_dictionaries; d++)
	{
		const ArrowDictionaryBatchInfo *di = &file->dictionaries[d];

		printf("dictionary batch %d: id %lld%s\n", d, (long long) di->id,
			   di->is_delta ? ", delta" : "");
		print_batch_info(&di->batch, "values");
		print_nodes_buffers(&di->batch, 0, di->batch.n_nodes, 0, di->batch.n_buffers, 2);
	}
}

/*
 * Column c of record batch b: its nodes, and its buffers as the library
 * locates them (arrow_column_extents: absolute offsets, and for compressed
 * batches the compressed extents).
 */
static void
print_column(const Printer *pr, int32_t b, int32_t c)
{
	const ArrowFile *file = pr->file;
	const ArrowBatchInfo *info = &file->batches[b];
	const ArrowColumnLayout *l = &file->columns[c];
	ArrowExtent *extents = xcalloc(l->n_buffers + 1, sizeof(ArrowExtent));
	int32_t		first_buffer = info->column_first_buffer ?
		info->column_first_buffer[c] : l->first_buffer;
	ArrowError	err;
	int			n;

	n = arrow_column_extents(file, b, c, extents, l->n_buffers, &err);
	if (n < 0)
		fail(pr, &err);
	printf("  column %d \"", c);
	print_text(file->schema.fields[c].name);
	printf("\": %d nodes, %d buffers\n", l->n_nodes, n);
	print_nodes_buffers(info, l->first_node, l->n_nodes, 0, 0, 4);
	for (int i = 0; i < n; i++)
		printf("    buffer %d: offset %lld, length %lld\n", first_buffer + i,
			   (long long) extents[i].offset, (long long) extents[i].length);
	free(extents);
}

/* The human form: header, dictionaries, record batches and their columns */
static void
print_human(const Printer *pr)
{
	const ArrowFile *file = pr->file;

	print_header(pr);
	print_dictionaries(pr);
	printf("record batches: %d, rows: %lld\n", file->n_batches, (long long) file->total_rows);
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		if (!batch_wanted(pr, b))
			continue;
		printf("record batch %d:\n", b);
		print_batch_info(&file->batches[b], "rows");
		for (int32_t c = 0; c < file->schema.n_fields; c++)
			print_column(pr, b, c);
		if (pr->opts->values)
			print_rows(pr, b);
	}
}

/*
 * Prints the Arrow IPC file or stream at path to standard output as opts
 * say.  Returns the exit status: 0, or 1 after a message on stderr when
 * there is no such record batch or the output cannot be written; a file
 * that cannot be read ends the program (status 1).
 */
int
arrow_print_file(const char *path, const ArrowPrintOptions *opts)
{
	Printer		pr = {path, NULL, opts};
	ArrowError	err;

	if (arrow_file_open(path, NULL, &pr.file, &err) != ARROW_OK)
		fail(&pr, &err);
	if (opts->batch >= pr.file->n_batches)
	{
		report("%s: no record batch %d (the file has %d)", path, opts->batch,
			   pr.file->n_batches);
		arrow_file_close(pr.file);
		return 1;
	}
	if (opts->json)
		print_json(&pr);
	else
		print_human(&pr);
	arrow_file_close(pr.file);
	if (fflush(stdout) != 0 || ferror(stdout))
	{
		report("could not write output");
		return 1;
	}
	return 0;
}
