/*-------------------------------------------------------------------------
 *
 * arrow_inspect.c
 *		arrow-inspect: shows what an Arrow IPC file (or stream) holds.
 *
 *	arrow-inspect [--json] [--values] [--batch N] FILE
 *
 * The human form lists the format, metadata version, schema, and every
 * dictionary and record batch with the file extents of its message, body
 * and buffers, so that people and tests can see where things are.
 * --values adds the rows of each record batch as JSON lines.  --json prints
 * exactly the JSON-lines form of doc/arrow-json.md (schema, then per batch
 * one line and one line per row).  --batch N limits both to record batch N.
 *
 * Errors go to stderr as "arrow-inspect: FILE: message", exit status 1;
 * usage errors exit with status 2.
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow.h"

#define ARROW_INSPECT_VERSION	"0.1.0"

static const char *progname = "arrow-inspect";
static const char *filename;

typedef struct Options
{
	bool		json;
	bool		values;
	int32_t		batch;			/* -1: all */
	const char *path;
} Options;

/* --help */
static void
usage(FILE *out)
{
	fprintf(out,
			"%s shows the schema, batches and buffer extents of an Arrow IPC file or stream.\n\n"
			"Usage:\n"
			"  %s [OPTION]... FILE\n\n"
			"Options:\n"
			"      --json        print the JSON-lines form (doc/arrow-json.md): schema,\n"
			"                    then each record batch and its rows\n"
			"      --values      also print the rows of each record batch as JSON lines\n"
			"      --batch N     only record batch N (0-based)\n"
			"      --help        show this help, then exit\n"
			"      --version     show the version, then exit\n\n"
			"Exit status: 0 ok, 1 the file could not be read, 2 usage error.\n",
			progname, progname);
}

/* Reports err for the file being inspected and exits with status 1 */
static void
fail(const ArrowError *err)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s: %s\n", progname, filename, err->message);
	exit(1);
}

/* Parses argv into opts; exits on usage errors, --help and --version */
static void
parse_options(int argc, char **argv, Options *opts)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"values", no_argument, NULL, 'v'},
		{"batch", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(opts, 0, sizeof(Options));
	opts->batch = -1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
	{
		char	   *end;
		long		n;

		switch (c)
		{
			case 'j':
				opts->json = true;
				break;
			case 'v':
				opts->values = true;
				break;
			case 'b':
				n = strtol(optarg, &end, 10);
				if (*optarg == '\0' || *end != '\0' || n < 0 || n > INT32_MAX)
				{
					fprintf(stderr, "%s: invalid batch number \"%s\"\n", progname, optarg);
					exit(2);
				}
				opts->batch = (int32_t) n;
				break;
			case 'h':
				usage(stdout);
				exit(0);
			case 'V':
				printf("%s (pg_warp) %s\n", progname, ARROW_INSPECT_VERSION);
				exit(0);
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				exit(2);
		}
	}
	if (optind != argc - 1)
	{
		fprintf(stderr, "%s: %s\nTry \"%s --help\" for more information.\n", progname,
				optind >= argc ? "no file given" : "too many arguments", progname);
		exit(2);
	}
	opts->path = argv[optind];
}

/* Prints s with non-printable bytes as \xNN (names and metadata) */
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
print_metadata_json(const ArrowMetadata *md)
{
	static const char prefix[] = "{\"fields\": [], \"metadata\": ";
	ArrowSchema schema = {.n_fields = 0, .fields = NULL, .metadata = *md};
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	if (arrow_schema_to_json(&schema, &buf, &err) != ARROW_OK)
		fail(&err);
	/* buf.data is prefix + object + "}" */
	fwrite(buf.data + sizeof(prefix) - 1, 1, buf.len - sizeof(prefix), stdout);
	arrow_strbuf_free(&buf);
}

/*
 * Prints the rows of a loaded batch as {"row": {...}} lines.  A row is the
 * JSON form of a struct whose children are the columns, so the library
 * writes the whole object.
 */
static void
print_rows(const ArrowFile *file, const ArrowBatch *batch)
{
	ArrowField	row_field = {.name = "", .nullable = false, .type = {.id = ARROW_TYPE_STRUCT},
	.n_children = file->schema.n_fields, .children = file->schema.fields};
	ArrowArray	row = {.field = &row_field, .length = batch->n_rows,
	.n_children = batch->n_columns, .children = batch->columns};
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	for (int64_t r = 0; r < batch->n_rows; r++)
	{
		buf.len = 0;
		if (arrow_strbuf_append(&buf, "{\"row\": ", 8, &err) != ARROW_OK ||
			arrow_value_to_json(&row, r, &buf, &err) != ARROW_OK ||
			arrow_strbuf_append(&buf, "}\n", 2, &err) != ARROW_OK)
			fail(&err);
		fwrite(buf.data, 1, buf.len, stdout);
	}
	arrow_strbuf_free(&buf);
}

/* Loads record batch b and prints its rows; exits on errors */
static void
load_and_print_rows(ArrowFile *file, int32_t b)
{
	ArrowBatch *batch;
	ArrowError	err;

	if (arrow_batch_load(file, b, NULL, &batch, &err) != ARROW_OK)
		fail(&err);
	print_rows(file, batch);
	arrow_batch_free(batch);
}

/* --json: the JSON-lines form of doc/arrow-json.md */
static void
inspect_json(ArrowFile *file, const Options *opts)
{
	ArrowStrBuf buf = {NULL, NULL, 0, 0};
	ArrowError	err;

	if (arrow_schema_to_json(&file->schema, &buf, &err) != ARROW_OK)
		fail(&err);
	printf("{\"schema\": %s}\n", buf.data);
	arrow_strbuf_free(&buf);
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		if (opts->batch >= 0 && b != opts->batch)
			continue;
		printf("{\"batch\": %d, \"rows\": %lld, \"metadata\": ", b,
			   (long long) file->batches[b].n_rows);
		print_metadata_json(&file->batches[b].metadata);
		printf("}\n");
		load_and_print_rows(file, b);
	}
}

/* The human form: format, schema, dictionary and record batches, extents */
static void
inspect_human(ArrowFile *file, const Options *opts)
{
	ArrowError	err;

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
	printf("dictionary batches: %d\n", file->n_dictionaries);
	for (int32_t d = 0; d < file->n_dictionaries; d++)
	{
		const ArrowDictionaryBatchInfo *di = &file->dictionaries[d];

		printf("dictionary batch %d: id %lld%s\n", d, (long long) di->id,
			   di->is_delta ? ", delta" : "");
		print_batch_info(&di->batch, "values");
		print_nodes_buffers(&di->batch, 0, di->batch.n_nodes, 0, di->batch.n_buffers, 2);
	}
	printf("record batches: %d, rows: %lld\n", file->n_batches, (long long) file->total_rows);
	for (int32_t b = 0; b < file->n_batches; b++)
	{
		const ArrowBatchInfo *info = &file->batches[b];

		if (opts->batch >= 0 && b != opts->batch)
			continue;
		printf("record batch %d:\n", b);
		print_batch_info(info, "rows");
		for (int32_t c = 0; c < file->schema.n_fields; c++)
		{
			const ArrowColumnLayout *l = &file->columns[c];
			ArrowExtent *extents = calloc(l->n_buffers + 1, sizeof(ArrowExtent));
			int			n;

			if (extents == NULL)
			{
				fprintf(stderr, "%s: out of memory\n", progname);
				exit(1);
			}
			n = arrow_column_extents(file, b, c, extents, l->n_buffers, &err);
			if (n < 0)
				fail(&err);
			printf("  column %d \"", c);
			print_text(file->schema.fields[c].name);
			printf("\": %d nodes, %d buffers\n", l->n_nodes, n);
			print_nodes_buffers(info, l->first_node, l->n_nodes, 0, 0, 4);
			for (int i = 0; i < n; i++)
				printf("    buffer %d: offset %lld, length %lld\n",
					   (info->column_first_buffer ? info->column_first_buffer[c] : l->first_buffer) + i,
					   (long long) extents[i].offset, (long long) extents[i].length);
			free(extents);
		}
		if (opts->values)
			load_and_print_rows(file, b);
	}
}

int
main(int argc, char **argv)
{
	Options		opts;
	ArrowFile  *file;
	ArrowError	err;

	parse_options(argc, argv, &opts);
	filename = opts.path;
	if (arrow_file_open(opts.path, NULL, &file, &err) != ARROW_OK)
		fail(&err);
	if (opts.batch >= file->n_batches)
	{
		fprintf(stderr, "%s: %s: no record batch %d (the file has %d)\n", progname,
				filename, opts.batch, file->n_batches);
		arrow_file_close(file);
		return 1;
	}
	if (opts.json)
		inspect_json(file, &opts);
	else
		inspect_human(file, &opts);
	arrow_file_close(file);
	if (fflush(stdout) != 0 || ferror(stdout))
	{
		fprintf(stderr, "%s: could not write output\n", progname);
		return 1;
	}
	return 0;
}
