/*-------------------------------------------------------------------------
 *
 * arrow_write.c
 *		Writer of the Arrow IPC file format: schema, dictionary and record
 *		batch messages, footer; appending to an existing file; concurrent
 *		batch writes from several threads.
 *
 * File layout written:
 *
 *	"ARROW1\0\0"
 *	Schema message					}
 *	dictionary batch messages		} the stream format: each message is
 *	record batch messages			} 0xFFFFFFFF, int32 metadata length,
 *	end-of-stream marker			} flatbuffer Message, padding, body
 *	Footer flatbuffer, int32 footer length, "ARROW1"
 *
 * Every message we write is a multiple of 64 bytes long (its metadata is
 * padded so that the body starts 64 bytes after a 64-byte boundary, and
 * every body buffer is padded to 64 bytes), and the magic plus the schema
 * message also end on a 64-byte boundary: in a file made by
 * arrow_writer_create every body buffer starts at a file offset that is a
 * multiple of 64.  Buffer offsets in a body are multiples of 64 in all
 * cases; in a file we append to, the absolute alignment of the new messages
 * is that of the old footer's position (at least 8).
 *
 * Concurrency: arrow_writer_write_batch and arrow_writer_write_dictionary
 * reserve their file range with an atomic fetch-add on next_offset, write
 * the message (metadata and the builders' buffers, gathered by pwritev, so
 * the body is never copied in memory) while holding io_lock shared, then
 * record the footer Block under block_lock.  The footer lists blocks by
 * file offset, which is the order of reservation.  A failure takes io_lock
 * exclusively (so that no write is in flight), marks the writer failed and
 * puts the file back: a created file is removed, an appended file gets its
 * old tail bytes back and its old size.  Every later call then fails with the first error.
 *
 * Durability: arrow_writer_close fsyncs the file before reporting success
 * (one fsync per file, so success means the data and footer are on disk);
 * arrow_writer_start_writeback lets the disk writes start earlier.
 * The directory entry of a new file is not fsynced here (the caller
 * renames it into place and then calls arrow_writer_sync_dir).
 *
 * Crash safety of appends: between the first batch written and the end of
 * close the file has no valid footer.  Before touching the file,
 * arrow_writer_open_append writes the journal PATH.pg2arrow-journal:
 *
 *	"PGWJRNL1", le64 old size, le64 tail offset, le64 inode of the file,
 *	the old bytes [tail offset, old size), le64 FNV-1a of all the above
 *
 * and fsyncs it and its directory.  close fsyncs the file, then unlinks the
 * journal and fsyncs the directory.  After a crash at any point the journal
 * is either incomplete (the file was never touched: it is just removed) or
 * complete, and then arrow_writer_recover writes the old tail back and
 * truncates to the old size, giving the old file back.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_build.h"
#include "arrow_io.h"
#include "arrow_types.h"
#include "fb_build.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define ARROW_MAGIC			"ARROW1"
#define ARROW_MAGIC_LEN		6
#define ARROW_V5			4	/* MetadataVersion.V5 */

#ifndef IOV_MAX
#define IOV_MAX				16	/* the least POSIX allows */
#endif

/* MessageHeader union members (Message.fbs) */
#define HEADER_SCHEMA			1
#define HEADER_DICTIONARY_BATCH	2
#define HEADER_RECORD_BATCH		3

/* One footer Block */
typedef struct WriterBlock
{
	int64_t		offset;			/* of the message (its 0xFFFFFFFF) */
	int32_t		meta_len;		/* prefix + flatbuffer + padding */
	int64_t		body_len;
} WriterBlock;

typedef struct BlockList
{
	WriterBlock *items;
	int32_t		n;
	int32_t		cap;
	int32_t		in_flight;		/* slots promised to writes in progress */
} BlockList;

/* A dictionary id of the schema, whether a batch for it was written, its size */
typedef struct WriterDict
{
	int64_t		id;
	const ArrowField *field;	/* a dictionary-encoded field with this id */
	bool		written;
	int64_t		length;			/* values in the dictionary so far */
} WriterDict;

struct ArrowWriter
{
	const ArrowAllocator *alloc;
	char	   *path;
	int			fd;
	ArrowSchema schema;
	int32_t		n_dicts;
	WriterDict *dicts;
	int64_t		next_offset;	/* atomic: where the next message goes */
	pthread_rwlock_t io_lock;	/* shared: a write; exclusive: failing */
	pthread_mutex_t block_lock; /* the block lists, dicts[].written and .length */
	BlockList	dict_blocks;
	BlockList	batch_blocks;
	bool		touched;		/* atomic: a write to the file was started */
	bool		failed;			/* the file was removed or restored */
	ArrowError	fail_err;		/* the error that made it fail */
	/* appending */
	bool		appending;
	int64_t		orig_size;		/* the file's size before the append */
	int64_t		tail_offset;	/* where our first message went */
	uint8_t    *tail;			/* the original bytes [tail_offset, orig_size) */
	char	   *journal;		/* path of the append journal */
	bool		journal_written;	/* it exists (durably) */
};

/* ------------------------------------------------------------------------
 * Flatbuffer encoding of metadata, schemas, messages and the footer
 * ------------------------------------------------------------------------
 */

/* [KeyValue] of md; 0 (field left absent) when md is empty */
static FbRef
encode_metadata(FbBuilder *fb, const ArrowMetadata *md)
{
	FbRef	   *refs;
	FbRef		vec;

	if (md == NULL || md->count <= 0)
		return 0;
	refs = arrow_malloc(fb->alloc, sizeof(FbRef) * md->count, NULL);
	if (refs == NULL)
	{
		fb_builder_fail(fb, ARROW_ERR_NOMEM, "out of memory");
		return 0;
	}
	for (int32_t i = 0; i < md->count; i++)
	{
		const char *k = md->items[i].key ? md->items[i].key : "";
		const char *v = md->items[i].value ? md->items[i].value : "";
		FbRef		kr = fb_create_string(fb, k, strlen(k));
		FbRef		vr = fb_create_string(fb, v, strlen(v));

		fb_table_start(fb);
		fb_add_offset(fb, 0, kr);
		fb_add_offset(fb, 1, vr);
		refs[i] = fb_table_end(fb);
	}
	vec = fb_create_offset_vector(fb, refs, md->count);
	arrow_free(fb->alloc, refs);
	return vec;
}

/* Table Int { bitWidth: int; is_signed: bool } of integer type id */
static FbRef
encode_int(FbBuilder *fb, ArrowTypeId id)
{
	const ArrowTypeInfo *info = arrow_type_info(id);

	fb_table_start(fb);
	fb_add_int32(fb, 0, info->bit_width);
	fb_add_bool(fb, 1, info->value == ARROW_VALUE_INT);
	return fb_table_end(fb);
}

/*
 * The table of the Type union for t; its union member (the type table's
 * fb_type) in *code.  Only the members with fields are filled in here.
 */
static FbRef
encode_type(FbBuilder *fb, const ArrowType *t, uint8_t *code)
{
	const ArrowTypeInfo *info = arrow_type_info(t->id);
	FbRef		tz = 0;

	if (info == NULL || !info->writable)
	{
		/* arrow_field_check rejected other ids */
		fb_builder_fail(fb, ARROW_ERR_ARGUMENT, "unknown type id");
		fb_table_start(fb);
		return fb_table_end(fb);
	}
	*code = info->fb_type;
	if (info->fb_type == FBT_INT)
		return encode_int(fb, t->id);
	if (t->id == ARROW_TYPE_TIMESTAMP && t->timezone != NULL)
		tz = fb_create_string(fb, t->timezone, strlen(t->timezone));
	fb_table_start(fb);
	switch (info->fb_type)
	{
		case FBT_FLOATING_POINT:
			/* Precision: HALF, SINGLE, DOUBLE */
			fb_add_int16(fb, 0, (int16_t) (t->id - ARROW_TYPE_FLOAT16));
			break;
		case FBT_DECIMAL:
			fb_add_int32(fb, 0, t->precision);
			fb_add_int32(fb, 1, t->scale);
			fb_add_int32(fb, 2, info->bit_width);
			break;
		case FBT_DATE:
			/* DateUnit: DAY, MILLISECOND */
			fb_add_int16(fb, 0, t->id == ARROW_TYPE_DATE32 ? 0 : 1);
			break;
		case FBT_TIME:
			fb_add_int16(fb, 0, (int16_t) t->unit);
			fb_add_int32(fb, 1, info->bit_width);
			break;
		case FBT_TIMESTAMP:
			fb_add_int16(fb, 0, (int16_t) t->unit);
			fb_add_offset(fb, 1, tz);
			break;
		case FBT_INTERVAL:
			/* IntervalUnit: YEAR_MONTH, DAY_TIME, MONTH_DAY_NANO */
			fb_add_int16(fb, 0, (int16_t) (t->id - ARROW_TYPE_INTERVAL_YM));
			break;
		case FBT_DURATION:
			fb_add_int16(fb, 0, (int16_t) t->unit);
			break;
		case FBT_FIXED_SIZE_BINARY:
			fb_add_int32(fb, 0, t->byte_width);
			break;
		case FBT_FIXED_SIZE_LIST:
			fb_add_int32(fb, 0, t->list_size);
			break;
		default:
			/* Null, Bool, Utf8, Binary, List, Struct_ and the large ones: no fields */
			break;
	}
	return fb_table_end(fb);
}

/*
 * Table Field { name, nullable, type_type, type, dictionary, children,
 * custom_metadata }; the children's tables are built first.
 */
static FbRef
encode_field(FbBuilder *fb, const ArrowField *f)
{
	FbRef		name;
	FbRef		type;
	FbRef		dict = 0;
	FbRef		children;
	FbRef		md;
	FbRef	   *refs = NULL;
	uint8_t		code = 0;

	if (f->n_children > 0)
	{
		refs = arrow_malloc(fb->alloc, sizeof(FbRef) * f->n_children, NULL);
		if (refs == NULL)
		{
			fb_builder_fail(fb, ARROW_ERR_NOMEM, "out of memory");
			return 0;
		}
		for (int32_t i = 0; i < f->n_children; i++)
			refs[i] = encode_field(fb, &f->children[i]);
	}
	children = fb_create_offset_vector(fb, refs, f->n_children);
	arrow_free(fb->alloc, refs);
	name = fb_create_string(fb, f->name, strlen(f->name));
	type = encode_type(fb, &f->type, &code);
	if (f->has_dictionary)
	{
		/* DictionaryEncoding { id, indexType: Int, isOrdered } */
		FbRef		index = encode_int(fb, f->dictionary.index_type);

		fb_table_start(fb);
		fb_add_int64(fb, 0, f->dictionary.id);
		fb_add_offset(fb, 1, index);
		fb_add_bool(fb, 2, f->dictionary.ordered);
		dict = fb_table_end(fb);
	}
	md = encode_metadata(fb, &f->metadata);
	fb_table_start(fb);
	fb_add_offset(fb, 0, name);
	fb_add_bool(fb, 1, f->nullable);
	fb_add_union(fb, 2, code, type);
	fb_add_offset(fb, 4, dict);
	fb_add_offset(fb, 5, children);
	fb_add_offset(fb, 6, md);
	return fb_table_end(fb);
}

/* Table Schema { endianness, fields, custom_metadata } */
static FbRef
encode_schema(FbBuilder *fb, const ArrowSchema *s)
{
	FbRef	   *refs = NULL;
	FbRef		fields;
	FbRef		md;

	if (s->n_fields > 0)
	{
		refs = arrow_malloc(fb->alloc, sizeof(FbRef) * s->n_fields, NULL);
		if (refs == NULL)
		{
			fb_builder_fail(fb, ARROW_ERR_NOMEM, "out of memory");
			return 0;
		}
		for (int32_t i = 0; i < s->n_fields; i++)
			refs[i] = encode_field(fb, &s->fields[i]);
	}
	fields = fb_create_offset_vector(fb, refs, s->n_fields);
	arrow_free(fb->alloc, refs);
	md = encode_metadata(fb, &s->metadata);
	fb_table_start(fb);
	fb_add_int16(fb, 0, 0);		/* Endianness.Little */
	fb_add_offset(fb, 1, fields);
	fb_add_offset(fb, 2, md);
	return fb_table_end(fb);
}

/* Table Message { version, header_type, header, bodyLength, custom_metadata } */
static FbRef
encode_message(FbBuilder *fb, uint8_t header_type, FbRef header,
			   int64_t body_len, FbRef md)
{
	fb_table_start(fb);
	fb_add_int16(fb, 0, ARROW_V5);
	fb_add_union(fb, 1, header_type, header);
	fb_add_int64(fb, 3, body_len);
	fb_add_offset(fb, 4, md);
	return fb_table_end(fb);
}

/*
 * Allocates lead + message bytes: 'lead' bytes left for the caller, the
 * encapsulation prefix (0xFFFFFFFF, int32 length), the flatbuffer, zero
 * padding up to a multiple of 64 counted from the start of the buffer.
 * *meta_len: prefix + flatbuffer + padding; *total: the buffer's size.
 */
static uint8_t *
frame_message(const ArrowAllocator *alloc, const uint8_t *fbdata, size_t fblen,
			  int64_t lead, int32_t *meta_len, int64_t *total, ArrowError *err)
{
	int64_t		head = arrow_align64(lead + 8 + (int64_t) fblen);
	uint8_t    *buf;

	if (head - lead > INT32_MAX)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "message too large");
		return NULL;
	}
	buf = arrow_malloc(alloc, (size_t) head, err);
	if (buf == NULL)
		return NULL;
	fb_put_le32(buf + lead, 0xffffffffu);
	fb_put_le32(buf + lead + 4, (uint32_t) (head - lead - 8));
	memcpy(buf + lead + 8, fbdata, fblen);
	memset(buf + lead + 8 + fblen, 0, head - lead - 8 - fblen);
	*meta_len = (int32_t) (head - lead);
	*total = head;
	return buf;
}

/*
 * A RecordBatch or DictionaryBatch message ready to be written: its framed
 * metadata (head: prefix, flatbuffer, padding; meta_len bytes) and its body
 * buffers, which still belong to the builders.  Each body buffer is padded
 * to 64 bytes with zeros as it is written.
 */
typedef struct OutMessage
{
	uint8_t    *head;
	int32_t		meta_len;
	int64_t		body_len;
	ArrowBuiltBuffer *bufs;
	int32_t		n_bufs;
	const ArrowAllocator *alloc;
} OutMessage;

typedef struct DictHeader
{
	int64_t		id;
	bool		is_delta;
} DictHeader;

static void
message_free(OutMessage *m)
{
	arrow_free(m->alloc, m->head);
	arrow_free(m->alloc, m->bufs);
	memset(m, 0, sizeof(OutMessage));
}

/*
 * Table RecordBatch { length, nodes, buffers } of n_rows rows with the given
 * nodes and buffers, each buffer at the next 64-byte boundary of the body;
 * *body_len is the body's length.  le is scratch room for 16 bytes per node
 * and per buffer.
 */
static FbRef
encode_record_batch(FbBuilder *fb, const ArrowNode *nodes, int32_t n_nodes,
					const ArrowBuiltBuffer *bufs, int32_t n_buffers, int64_t n_rows,
					uint8_t *le, int64_t *body_len)
{
	FbRef		node_vec;
	FbRef		buf_vec;

	/* struct FieldNode { length: long; null_count: long } */
	for (int32_t i = 0; i < n_nodes; i++)
	{
		fb_put_le64(le + 16 * i, (uint64_t) nodes[i].length);
		fb_put_le64(le + 16 * i + 8, (uint64_t) nodes[i].null_count);
	}
	node_vec = fb_create_vector(fb, le, n_nodes, 16, 8);
	/* struct Buffer { offset: long; length: long }, 64-byte aligned */
	*body_len = 0;
	for (int32_t i = 0; i < n_buffers; i++)
	{
		fb_put_le64(le + 16 * i, (uint64_t) *body_len);
		fb_put_le64(le + 16 * i + 8, (uint64_t) bufs[i].length);
		*body_len += arrow_align64(bufs[i].length);
	}
	buf_vec = fb_create_vector(fb, le, n_buffers, 16, 8);
	fb_table_start(fb);
	fb_add_int64(fb, 0, n_rows);
	fb_add_offset(fb, 1, node_vec);
	fb_add_offset(fb, 2, buf_vec);
	return fb_table_end(fb);
}

/*
 * Builds the message of a RecordBatch (dict == NULL) or DictionaryBatch of
 * the n columns in 'columns' (already checked) into *out.  The body is not
 * copied: out->bufs points into the builders, which must not change until
 * the message is written.
 */
static int
build_message(const ArrowAllocator *alloc, ArrowBuilder *const *columns,
			  int32_t n, int64_t n_rows, const DictHeader *dict,
			  const ArrowMetadata *metadata, OutMessage *out, ArrowError *err)
{
	int32_t		n_nodes = 0;
	int32_t		n_buffers = 0;
	ArrowNode  *nodes = NULL;
	ArrowBuiltBuffer *bufs = NULL;
	uint8_t    *le = NULL;
	ArrowNode  *np;
	ArrowBuiltBuffer *bp;
	int64_t		body_len = 0;
	FbBuilder	fb;
	FbRef		header;
	FbRef		md;
	const uint8_t *fbdata;
	size_t		fblen;
	uint8_t    *head;
	int32_t		meta_len;
	int64_t		total;
	int			rc;

	memset(out, 0, sizeof(OutMessage));
	fb_builder_init(&fb, alloc);
	for (int32_t i = 0; i < n; i++)
		arrow_builder_count(columns[i], &n_nodes, &n_buffers);
	nodes = arrow_calloc(alloc, n_nodes + 1, sizeof(ArrowNode), err);
	bufs = arrow_calloc(alloc, n_buffers + 1, sizeof(ArrowBuiltBuffer), err);
	le = arrow_calloc(alloc, (n_nodes > n_buffers ? n_nodes : n_buffers) + 1, 16, err);
	if (nodes == NULL || bufs == NULL || le == NULL)
	{
		rc = ARROW_ERR_NOMEM;
		goto done;
	}
	np = nodes;
	bp = bufs;
	for (int32_t i = 0; i < n; i++)
		arrow_builder_export(columns[i], &np, &bp);

	header = encode_record_batch(&fb, nodes, n_nodes, bufs, n_buffers, n_rows, le, &body_len);
	if (dict != NULL)
	{
		/* DictionaryBatch { id, data, isDelta } */
		FbRef		rb = header;

		fb_table_start(&fb);
		fb_add_int64(&fb, 0, dict->id);
		fb_add_offset(&fb, 1, rb);
		fb_add_bool(&fb, 2, dict->is_delta);
		header = fb_table_end(&fb);
	}
	md = encode_metadata(&fb, metadata);
	header = encode_message(&fb, dict ? HEADER_DICTIONARY_BATCH : HEADER_RECORD_BATCH,
							header, body_len, md);
	if ((rc = fb_finish(&fb, header, &fbdata, &fblen, err)) != ARROW_OK)
		goto done;
	head = frame_message(alloc, fbdata, fblen, 0, &meta_len, &total, err);
	if (head == NULL || body_len > INT64_MAX - meta_len)
	{
		arrow_free(alloc, head);
		rc = head == NULL ? (err ? err->code : ARROW_ERR_NOMEM) :
			arrow_set_error(err, ARROW_ERR_ARGUMENT, "message too large");
		goto done;
	}
	out->head = head;
	out->meta_len = meta_len;
	out->body_len = body_len;
	out->bufs = bufs;
	out->n_bufs = n_buffers;
	out->alloc = alloc;
	bufs = NULL;
	rc = ARROW_OK;

done:
	fb_builder_free(&fb);
	arrow_free(alloc, nodes);
	arrow_free(alloc, bufs);
	arrow_free(alloc, le);
	return rc;
}

/*
 * Writes message m at offset: its head, then each body buffer and the
 * zeros that pad it to 64 bytes, gathered by pwritev.
 */
static int
write_message(int fd, const OutMessage *m, int64_t offset, const char *path,
			  ArrowError *err)
{
	static const uint8_t zeros[64];
	struct iovec *iov;
	int			n = 0;
	int			rc;

	iov = arrow_malloc(m->alloc, sizeof(struct iovec) * (1 + 2 * (size_t) m->n_bufs), err);
	if (iov == NULL)
		return ARROW_ERR_NOMEM;
	iov[n].iov_base = m->head;
	iov[n++].iov_len = (size_t) m->meta_len;
	for (int32_t i = 0; i < m->n_bufs; i++)
	{
		int64_t		pad = arrow_align64(m->bufs[i].length) - m->bufs[i].length;

		if (m->bufs[i].length > 0)
		{
			iov[n].iov_base = (void *) m->bufs[i].data;
			iov[n++].iov_len = (size_t) m->bufs[i].length;
		}
		if (pad > 0)
		{
			iov[n].iov_base = (void *) zeros;
			iov[n++].iov_len = (size_t) pad;
		}
	}
	rc = arrow_pwritev_all(fd, iov, n, offset, path, err);
	arrow_free(m->alloc, iov);
	return rc;
}

/* ------------------------------------------------------------------------
 * Schema checks
 * ------------------------------------------------------------------------
 */

/* Adds the dictionary-encoded fields under f to w->dicts */
static int
collect_dicts(ArrowWriter *w, const ArrowField *f, ArrowError *err)
{
	if (f->has_dictionary)
	{
		WriterDict *d;

		for (int32_t i = 0; i < w->n_dicts; i++)
		{
			const ArrowField *g = w->dicts[i].field;

			if (w->dicts[i].id != f->dictionary.id)
				continue;
			/* one id, one dictionary: the value types must agree */
			{
				ArrowField	a = *f;
				ArrowField	b = *g;
				ArrowSchema sa = {.n_fields = 1, .fields = &a};
				ArrowSchema sb = {.n_fields = 1, .fields = &b};
				char		why[256];

				a.name = b.name = "";
				a.nullable = b.nullable = true;
				a.dictionary.ordered = b.dictionary.ordered = false;
				if (!arrow_schema_equal(&sa, &sb, why, sizeof(why)))
					return arrow_set_error(err, ARROW_ERR_ARGUMENT,
										   "fields \"%s\" and \"%s\" share dictionary %lld but differ: %s",
										   g->name, f->name, (long long) f->dictionary.id, why);
			}
			return ARROW_OK;
		}
		d = arrow_realloc(w->alloc, w->dicts, sizeof(WriterDict) * (w->n_dicts + 1), err);
		if (d == NULL)
			return ARROW_ERR_NOMEM;
		w->dicts = d;
		d[w->n_dicts].id = f->dictionary.id;
		d[w->n_dicts].field = f;
		d[w->n_dicts].written = false;
		d[w->n_dicts].length = 0;
		w->n_dicts++;
	}
	for (int32_t i = 0; i < f->n_children; i++)
	{
		int			rc = collect_dicts(w, &f->children[i], err);

		if (rc != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

/* Checks the schema, keeps a copy of it in w, finds its dictionaries */
static int
writer_set_schema(ArrowWriter *w, const ArrowSchema *schema, ArrowError *err)
{
	int			rc;

	if (schema == NULL || schema->n_fields < 0 || (schema->n_fields > 0 && schema->fields == NULL))
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid schema");
	for (int32_t i = 0; i < schema->n_fields; i++)
	{
		if ((rc = arrow_field_check(&schema->fields[i], 1, err)) != ARROW_OK)
			return rc;
	}
	if ((rc = arrow_schema_copy(w->alloc, &w->schema, schema, err)) != ARROW_OK)
		return rc;
	for (int32_t i = 0; i < w->schema.n_fields; i++)
	{
		if ((rc = collect_dicts(w, &w->schema.fields[i], err)) != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * Writer state
 * ------------------------------------------------------------------------
 */
static ArrowWriter *
writer_new(const char *path, const ArrowAllocator *alloc, ArrowError *err)
{
	ArrowWriter *w;

	alloc = arrow_alloc_or_default(alloc);
	if (path == NULL)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "no path given");
		return NULL;
	}
	w = arrow_calloc(alloc, 1, sizeof(ArrowWriter), err);
	if (w == NULL)
		return NULL;
	w->alloc = alloc;
	w->fd = -1;
	w->path = arrow_strdup(alloc, path, err);
	if (w->path == NULL)
	{
		arrow_free(alloc, w);
		return NULL;
	}
	if (pthread_rwlock_init(&w->io_lock, NULL) != 0)
	{
		arrow_set_error(err, ARROW_ERR_NOMEM, "could not initialize a lock");
		arrow_free(alloc, w->path);
		arrow_free(alloc, w);
		return NULL;
	}
	if (pthread_mutex_init(&w->block_lock, NULL) != 0)
	{
		arrow_set_error(err, ARROW_ERR_NOMEM, "could not initialize a lock");
		pthread_rwlock_destroy(&w->io_lock);
		arrow_free(alloc, w->path);
		arrow_free(alloc, w);
		return NULL;
	}
	return w;
}

static void
writer_free(ArrowWriter *w)
{
	if (w->fd >= 0)
		close(w->fd);
	pthread_rwlock_destroy(&w->io_lock);
	pthread_mutex_destroy(&w->block_lock);
	arrow_schema_free(w->alloc, &w->schema);
	arrow_free(w->alloc, w->dicts);
	arrow_free(w->alloc, w->dict_blocks.items);
	arrow_free(w->alloc, w->batch_blocks.items);
	arrow_free(w->alloc, w->tail);
	arrow_free(w->alloc, w->journal);
	arrow_free(w->alloc, w->path);
	arrow_free(w->alloc, w);
}

/* ------------------------------------------------------------------------
 * The append journal (see the header comment)
 * ------------------------------------------------------------------------
 */
#define JOURNAL_MAGIC		"PGWJRNL1"
#define JOURNAL_HEAD		32	/* magic, old size, tail offset, inode */
#define JOURNAL_MAX			((int64_t) 1 << 30) /* a footer is far smaller */

/* FNV-1a, 64 bits: detects a journal cut short or torn by a crash */
static uint64_t
journal_checksum(const uint8_t *p, size_t n)
{
	uint64_t	h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * UINT64_C(1099511628211);
	return h;
}

static uint64_t
get_le64(const uint8_t *p)
{
	uint64_t	v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* A new string path + ARROW_APPEND_JOURNAL_SUFFIX */
static char *
journal_path(const ArrowAllocator *alloc, const char *path, ArrowError *err)
{
	size_t		len = strlen(path) + sizeof(ARROW_APPEND_JOURNAL_SUFFIX);
	char	   *j = arrow_malloc(alloc, len, err);

	if (j != NULL)
		snprintf(j, len, "%s%s", path, ARROW_APPEND_JOURNAL_SUFFIX);
	return j;
}

/*
 * fsyncs the directory holding path, so that a rename, creation or unlink
 * of path survives a crash.
 */
int
arrow_writer_sync_dir(const char *path, ArrowError *err)
{
	const char *slash = strrchr(path, '/');
	char		dir[PATH_MAX];
	int			fd;
	int			rc = ARROW_OK;

	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if (slash - path < (ptrdiff_t) sizeof(dir))
		snprintf(dir, sizeof(dir), "%.*s", (int) (slash - path), path);
	else
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "path too long: \"%s\"", path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return arrow_io_error(err, "could not open directory", dir);
	if (fsync(fd) != 0)
		rc = arrow_io_error(err, "could not fsync directory", dir);
	close(fd);
	return rc;
}

/*
 * Writes the journal of an append (w->tail is read, the file not yet
 * touched) and makes it durable.  On failure no journal is left.
 */
static int
journal_write(ArrowWriter *w, uint64_t inode, ArrowError *err)
{
	size_t		tail_len = (size_t) (w->orig_size - w->tail_offset);
	size_t		total = JOURNAL_HEAD + tail_len + 8;
	uint8_t    *buf;
	int			fd;
	int			rc;

	buf = arrow_malloc(w->alloc, total, err);
	if (buf == NULL)
		return ARROW_ERR_NOMEM;
	memcpy(buf, JOURNAL_MAGIC, 8);
	fb_put_le64(buf + 8, (uint64_t) w->orig_size);
	fb_put_le64(buf + 16, (uint64_t) w->tail_offset);
	fb_put_le64(buf + 24, inode);
	memcpy(buf + JOURNAL_HEAD, w->tail, tail_len);
	fb_put_le64(buf + JOURNAL_HEAD + tail_len, journal_checksum(buf, JOURNAL_HEAD + tail_len));
	fd = open(w->journal, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		rc = arrow_io_error(err, "could not create", w->journal);
	else
	{
		rc = arrow_pwrite_all(fd, buf, total, 0, w->journal, err);
		if (rc == ARROW_OK && fsync(fd) != 0)
			rc = arrow_io_error(err, "could not fsync", w->journal);
		close(fd);
		if (rc == ARROW_OK)
			rc = arrow_writer_sync_dir(w->journal, err);
		if (rc != ARROW_OK)
			unlink(w->journal);
	}
	arrow_free(w->alloc, buf);
	if (rc == ARROW_OK)
		w->journal_written = true;
	return rc;
}

/* Removes the journal (gone already is fine) and fsyncs its directory */
static int
journal_remove(ArrowWriter *w, ArrowError *err)
{
	if (unlink(w->journal) != 0 && errno != ENOENT)
		return arrow_io_error(err, "could not remove", w->journal);
	return arrow_writer_sync_dir(w->journal, err);
}

/*
 * Reads the journal at jpath into *buf (allocated; *len bytes) and checks
 * it.  *exists: there is a journal; *valid: it is complete and intact.
 */
static int
journal_read(const ArrowAllocator *alloc, const char *jpath, uint8_t **buf,
			 size_t *len, bool *exists, bool *valid, ArrowError *err)
{
	struct stat st;
	int			fd;
	int			rc = ARROW_OK;

	*buf = NULL;
	*exists = *valid = false;
	fd = open(jpath, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? ARROW_OK : arrow_io_error(err, "could not open", jpath);
	*exists = true;
	if (fstat(fd, &st) != 0)
		rc = arrow_io_error(err, "could not stat", jpath);
	else if (st.st_size >= JOURNAL_HEAD + 8 && st.st_size <= JOURNAL_MAX)
	{
		*len = (size_t) st.st_size;
		*buf = arrow_malloc(alloc, *len, err);
		if (*buf == NULL)
			rc = ARROW_ERR_NOMEM;
		else
			rc = arrow_pread_all(fd, *buf, *len, 0, jpath, err);
	}
	close(fd);
	if (rc == ARROW_OK && *buf != NULL)
	{
		const uint8_t *b = *buf;
		uint64_t	orig = get_le64(b + 8);
		uint64_t	tail = get_le64(b + 16);

		*valid = memcmp(b, JOURNAL_MAGIC, 8) == 0 && tail >= 8 && tail <= orig &&
			orig - tail == *len - JOURNAL_HEAD - 8 &&
			get_le64(b + *len - 8) == journal_checksum(b, *len - 8);
	}
	return rc;
}

/*
 * arrow_writer_recover for a file that is open (fd, with st its fstat) and
 * locked by us.
 */
static int
recover_locked(const ArrowAllocator *alloc, const char *path, int fd,
			   const struct stat *st, ArrowRecoverResult *result, ArrowError *err)
{
	ArrowWriter tmp;
	uint8_t    *buf;
	size_t		len;
	bool		exists,
				valid;
	int			rc;

	*result = ARROW_RECOVER_NONE;
	memset(&tmp, 0, sizeof(tmp));
	tmp.alloc = alloc;
	tmp.path = (char *) path;
	tmp.journal = journal_path(alloc, path, err);
	if (tmp.journal == NULL)
		return ARROW_ERR_NOMEM;
	rc = journal_read(alloc, tmp.journal, &buf, &len, &exists, &valid, err);
	if (rc != ARROW_OK || !exists)
		goto done;
	if (!valid || get_le64(buf + 24) != (uint64_t) st->st_ino)
	{
		/* cut short before the file was touched, or the file was replaced */
		*result = ARROW_RECOVER_DISCARDED;
		rc = journal_remove(&tmp, err);
		goto done;
	}
	tmp.orig_size = (int64_t) get_le64(buf + 8);
	tmp.tail_offset = (int64_t) get_le64(buf + 16);
	if (st->st_size < tmp.tail_offset)
	{
		rc = arrow_set_error(err, ARROW_ERR_INVALID,
							 "cannot recover \"%s\": it is %lld bytes long, shorter than the %lld bytes the interrupted append left untouched",
							 path, (long long) st->st_size, (long long) tmp.tail_offset);
		goto done;
	}
	rc = arrow_pwrite_all(fd, buf + JOURNAL_HEAD, len - JOURNAL_HEAD - 8, tmp.tail_offset, path, err);
	if (rc == ARROW_OK && ftruncate(fd, (off_t) tmp.orig_size) != 0)
		rc = arrow_io_error(err, "could not truncate", path);
	if (rc == ARROW_OK && fsync(fd) != 0)
		rc = arrow_io_error(err, "could not fsync", path);
	if (rc == ARROW_OK)
		rc = journal_remove(&tmp, err);
	if (rc == ARROW_OK)
		*result = ARROW_RECOVER_RESTORED;
done:
	arrow_free(alloc, buf);
	arrow_free(alloc, tmp.journal);
	return rc;
}

/* flock(LOCK_EX | LOCK_NB) with the error an appender in progress gives */
static int
lock_file(int fd, const char *path, ArrowError *err)
{
	int			e;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return ARROW_OK;
	e = errno;
	arrow_set_error(err, ARROW_ERR_IO,
					"could not lock \"%s\" (is another process appending to it?): %s",
					path, strerror(e));
	if (err != NULL)
		err->sys_errno = e;
	return ARROW_ERR_IO;
}

/*
 * Undoes an interrupted append of path if its journal exists (see
 * arrow.h).  Without a journal nothing is opened.  A journal whose file is
 * gone is removed (ARROW_RECOVER_DISCARDED).
 */
int
arrow_writer_recover(const char *path, ArrowRecoverResult *result, ArrowError *err)
{
	const ArrowAllocator *alloc = arrow_alloc_or_default(NULL);
	ArrowWriter tmp;
	struct stat st;
	int			fd;
	int			rc;

	*result = ARROW_RECOVER_NONE;
	memset(&tmp, 0, sizeof(tmp));
	if ((tmp.journal = journal_path(alloc, path, err)) == NULL)
		return ARROW_ERR_NOMEM;
	rc = lstat(tmp.journal, &st);
	arrow_free(alloc, tmp.journal);
	if (rc != 0)
		return errno == ENOENT ? ARROW_OK : arrow_io_error(err, "could not stat journal of", path);
	fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
	{
		/* the file is gone: the journal has nothing to restore */
		tmp.journal = journal_path(alloc, path, err);
		if (tmp.journal == NULL)
			return ARROW_ERR_NOMEM;
		rc = journal_remove(&tmp, err);
		arrow_free(alloc, tmp.journal);
		if (rc == ARROW_OK)
			*result = ARROW_RECOVER_DISCARDED;
		return rc;
	}
	if (fd < 0)
		return arrow_io_error(err, "could not open", path);
	if ((rc = lock_file(fd, path, err)) != ARROW_OK)
		;
	else if (fstat(fd, &st) != 0)
		rc = arrow_io_error(err, "could not stat", path);
	else if (!S_ISREG(st.st_mode))
		rc = arrow_set_error(err, ARROW_ERR_ARGUMENT, "\"%s\" is not a regular file", path);
	else
		rc = recover_locked(alloc, path, fd, &st, result, err);
	close(fd);
	return rc;
}

/*
 * Puts the file back as it was before this writer: removes a created file;
 * truncates an appended file to its old size and writes its old tail bytes
 * back (then fsyncs).  Appends the reason to err when that fails.
 */
static void
undo_file(ArrowWriter *w, ArrowError *err)
{
	ArrowError	uerr;
	bool		ok;

	if (!w->appending)
	{
		ok = unlink(w->path) == 0 || errno == ENOENT;
		if (!ok)
			arrow_io_error(&uerr, "could not remove", w->path);
	}
	else if (!__atomic_load_n(&w->touched, __ATOMIC_SEQ_CST))
		ok = true;				/* nothing written: nothing to put back */
	else
	{
		ok = ftruncate(w->fd, (off_t) w->orig_size) == 0;
		if (!ok)
			arrow_io_error(&uerr, "could not truncate", w->path);
		else
			ok = arrow_pwrite_all(w->fd, w->tail, (size_t) (w->orig_size - w->tail_offset),
								  w->tail_offset, w->path, &uerr) == ARROW_OK;
		if (ok && fsync(w->fd) != 0)
		{
			ok = false;
			arrow_io_error(&uerr, "could not fsync", w->path);
		}
	}
	/* the file is as before: the journal has done its work */
	if (ok && w->appending && w->journal_written)
		ok = journal_remove(w, &uerr) == ARROW_OK;
	if (!ok && err != NULL)
	{
		size_t		len = strlen(err->message);

		snprintf(err->message + len, sizeof(err->message) - len,
				 "; putting the file back failed too: %s", uerr.message);
	}
}

/*
 * Called after a write failed with *err: waits for the writes in flight,
 * puts the file back (once) and makes every later call fail with *err.
 */
static void
writer_fail(ArrowWriter *w, ArrowError *err)
{
	pthread_rwlock_wrlock(&w->io_lock);
	if (!w->failed)
	{
		undo_file(w, err);
		w->failed = true;
		if (err != NULL)
			w->fail_err = *err;
		else
			arrow_set_error(&w->fail_err, ARROW_ERR_IO, "writing \"%s\" failed", w->path);
	}
	pthread_rwlock_unlock(&w->io_lock);
}

/* The error of a writer that failed earlier */
static int
failed_error(ArrowWriter *w, ArrowError *err)
{
	if (err != NULL)
		*err = w->fail_err;
	return w->fail_err.code;
}

/* Makes room in l for one more block besides those promised */
static int
block_room(ArrowWriter *w, BlockList *l, ArrowError *err)
{
	if (l->n + l->in_flight >= l->cap)
	{
		int32_t		cap = l->cap ? 2 * l->cap : 16;
		WriterBlock *items;

		if (l->cap > INT32_MAX / 2)
			return arrow_set_error(err, ARROW_ERR_ARGUMENT, "too many batches in one file");
		items = arrow_realloc(w->alloc, l->items, sizeof(WriterBlock) * cap, err);
		if (items == NULL)
			return ARROW_ERR_NOMEM;
		l->items = items;
		l->cap = cap;
	}
	return ARROW_OK;
}

/*
 * Writes message m at the next free offset and records its block.  dict:
 * the dictionary whose batch this is, NULL for a record batch (which needs
 * every dictionary of the schema written before it).  Thread-safe.
 */
static int
writer_put(ArrowWriter *w, const OutMessage *m, WriterDict *dict, ArrowError *err)
{
	BlockList  *l = dict ? &w->dict_blocks : &w->batch_blocks;
	WriterBlock blk;
	bool		write_failed = false;
	int			rc = ARROW_OK;

	pthread_mutex_lock(&w->block_lock);
	if (dict == NULL)
	{
		for (int32_t i = 0; i < w->n_dicts; i++)
		{
			if (!w->dicts[i].written)
			{
				rc = arrow_set_error(err, ARROW_ERR_ARGUMENT,
									 "record batch written before dictionary %lld (field \"%s\")",
									 (long long) w->dicts[i].id, w->dicts[i].field->name);
				break;
			}
		}
	}
	/* the slot for the block is promised now: recording it cannot fail */
	if (rc == ARROW_OK && (rc = block_room(w, l, err)) == ARROW_OK)
		l->in_flight++;
	pthread_mutex_unlock(&w->block_lock);
	if (rc != ARROW_OK)
		return rc;

	pthread_rwlock_rdlock(&w->io_lock);
	if (w->failed)
		rc = failed_error(w, err);
	else
	{
		blk.offset = __atomic_fetch_add(&w->next_offset, m->meta_len + m->body_len,
										__ATOMIC_SEQ_CST);
		blk.meta_len = m->meta_len;
		blk.body_len = m->body_len;
		__atomic_store_n(&w->touched, true, __ATOMIC_SEQ_CST);
		rc = write_message(w->fd, m, blk.offset, w->path, err);
		write_failed = rc != ARROW_OK;
	}
	pthread_rwlock_unlock(&w->io_lock);

	pthread_mutex_lock(&w->block_lock);
	l->in_flight--;
	if (rc == ARROW_OK)
	{
		l->items[l->n++] = blk;
		if (dict != NULL)
			dict->written = true;
	}
	pthread_mutex_unlock(&w->block_lock);

	if (write_failed)
		writer_fail(w, err);
	return rc;
}

/* ------------------------------------------------------------------------
 * Creating a file
 * ------------------------------------------------------------------------
 */

/* The magic and the Schema message, ending on a 64-byte boundary */
static int
write_header(ArrowWriter *w, ArrowError *err)
{
	FbBuilder	fb;
	FbRef		schema;
	const uint8_t *fbdata;
	size_t		fblen;
	uint8_t    *buf;
	int32_t		meta_len;
	int64_t		total;
	int			rc;

	fb_builder_init(&fb, w->alloc);
	schema = encode_schema(&fb, &w->schema);
	schema = encode_message(&fb, HEADER_SCHEMA, schema, 0, 0);
	rc = fb_finish(&fb, schema, &fbdata, &fblen, err);
	if (rc == ARROW_OK)
	{
		buf = frame_message(w->alloc, fbdata, fblen, 8, &meta_len, &total, err);
		if (buf == NULL)
			rc = err ? err->code : ARROW_ERR_NOMEM;
		else
		{
			memcpy(buf, ARROW_MAGIC "\0\0", 8);
			rc = arrow_pwrite_all(w->fd, buf, (size_t) total, 0, w->path, err);
			w->next_offset = total;
			arrow_free(w->alloc, buf);
		}
	}
	fb_builder_free(&fb);
	return rc;
}

/*
 * Creates (or truncates) the regular file at path and writes the magic and
 * the schema.  On failure nothing is left behind: a file we created or
 * truncated is removed.
 */
int
arrow_writer_create(const char *path, const ArrowSchema *schema,
					const ArrowAllocator *alloc, ArrowWriter **out,
					ArrowError *err)
{
	ArrowWriter *w;
	struct stat st;
	int			rc;

	*out = NULL;
	w = writer_new(path, alloc, err);
	if (w == NULL)
		return err ? err->code : ARROW_ERR_NOMEM;
	if ((rc = writer_set_schema(w, schema, err)) != ARROW_OK)
	{
		writer_free(w);
		return rc;
	}
	/* refuse devices and pipes before truncating or removing anything */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
	{
		rc = arrow_set_error(err, ARROW_ERR_ARGUMENT, "\"%s\" is not a regular file", path);
		writer_free(w);
		return rc;
	}
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (w->fd < 0)
	{
		rc = arrow_io_error(err, "could not create", path);
		writer_free(w);
		return rc;
	}
	if ((rc = write_header(w, err)) != ARROW_OK)
	{
		undo_file(w, err);
		writer_free(w);
		return rc;
	}
	*out = w;
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * Appending to a file
 * ------------------------------------------------------------------------
 */
static int
fd_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err)
{
	ArrowWriter *w = ctx;

	if (offset < 0 || offset > w->orig_size || (int64_t) len > w->orig_size - offset)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end of \"%s\"",
							   len, (long long) offset, w->path);
	return arrow_pread_all(w->fd, dst, len, offset, w->path, err);
}

static int
add_old_block(ArrowWriter *w, BlockList *l, const ArrowBatchInfo *bi,
			  int64_t *end, ArrowError *err)
{
	int			rc = block_room(w, l, err);

	if (rc != ARROW_OK)
		return rc;
	l->items[l->n].offset = bi->message_offset;
	l->items[l->n].meta_len = (int32_t) (bi->body_offset - bi->message_offset);
	l->items[l->n].body_len = bi->body_length;
	l->n++;
	if (bi->body_offset + bi->body_length > *end)
		*end = bi->body_offset + bi->body_length;
	return ARROW_OK;
}

/*
 * Registers the dictionary and record batch blocks of the file being
 * appended to with w (dictionaries already written count as written);
 * *end moves past each message.
 */
static int
add_old_blocks(ArrowWriter *w, const ArrowFile *file, int64_t *end,
			   ArrowError *err)
{
	int			rc;

	for (int32_t i = 0; i < file->n_dictionaries; i++)
	{
		if ((rc = add_old_block(w, &w->dict_blocks, &file->dictionaries[i].batch, end, err)) != ARROW_OK)
			return rc;
		for (int32_t d = 0; d < w->n_dicts; d++)
		{
			if (w->dicts[d].id == file->dictionaries[i].id)
			{
				/* the file format allows one dictionary, then deltas */
				w->dicts[d].written = true;
				w->dicts[d].length += file->dictionaries[i].batch.n_rows;
			}
		}
	}
	for (int32_t i = 0; i < file->n_batches; i++)
	{
		if ((rc = add_old_block(w, &w->batch_blocks, &file->batches[i], end, err)) != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

/*
 * Where the new messages go: at the old footer (the messages end at 'end'
 * before it), or at the end-of-stream marker right before the footer.  The
 * bytes from there to the end of the file are kept in w->tail, to put back
 * if the append fails.
 */
static int
save_tail(ArrowWriter *w, int64_t end, ArrowError *err)
{
	uint8_t		trailer[10];
	uint8_t		pre[8];
	int64_t		footer_start;
	int32_t		footer_len;
	int			rc;

	/* trailer: int32 footer length, "ARROW1" */
	if ((rc = arrow_pread_all(w->fd, trailer, 10, w->orig_size - 10, w->path, err)) != ARROW_OK)
		return rc;
	footer_len = (int32_t) (trailer[0] | trailer[1] << 8 | trailer[2] << 16 | (uint32_t) trailer[3] << 24);
	footer_start = w->orig_size - 10 - footer_len;
	if (footer_len <= 0 || footer_start < end)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "cannot append to \"%s\": footer overlaps the messages", w->path);
	/* new messages replace the end-of-stream marker too, if there is one */
	w->tail_offset = footer_start;
	if (footer_start - 8 >= end)
	{
		if ((rc = arrow_pread_all(w->fd, pre, 8, footer_start - 8, w->path, err)) != ARROW_OK)
			return rc;
		if (memcmp(pre, "\xff\xff\xff\xff\0\0\0\0", 8) == 0)
			w->tail_offset = footer_start - 8;
	}
	if (w->tail_offset % 8 != 0)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "cannot append to \"%s\": its footer is not 8-byte aligned", w->path);
	w->tail = arrow_malloc(w->alloc, (size_t) (w->orig_size - w->tail_offset), err);
	if (w->tail == NULL)
		return ARROW_ERR_NOMEM;
	rc = arrow_pread_all(w->fd, w->tail, (size_t) (w->orig_size - w->tail_offset),
						 w->tail_offset, w->path, err);
	w->next_offset = w->tail_offset;
	return rc;
}

/*
 * Reads what append needs from the open file: schema (compared with
 * 'schema' when given), old blocks, dictionaries already written, where the
 * old footer starts, and the bytes from there to the end.
 */
static int
prepare_append(ArrowWriter *w, const ArrowSchema *schema, ArrowError *err)
{
	ArrowSource src = {.read_at = fd_read_at, .size = w->orig_size, .ctx = w};
	ArrowFile  *file = NULL;
	uint8_t		pre[8];
	int64_t		end;
	char		why[256];
	int			rc;

	rc = arrow_file_open_source(&src, w->alloc, &file, err);
	if (rc != ARROW_OK)
	{
		if (err != NULL)
		{
			char		msg[sizeof(err->message)];
			int			sys_errno = err->sys_errno;

			memcpy(msg, err->message, sizeof(msg));
			arrow_set_error(err, rc, "cannot append to \"%s\": %s", w->path, msg);
			err->sys_errno = sys_errno;
		}
		return rc;
	}
	if (file->is_stream)
	{
		rc = arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							 "cannot append to \"%s\": it is in the stream format, not the file format",
							 w->path);
		goto done;
	}
	if (schema != NULL && !arrow_schema_equal(&file->schema, schema, why, sizeof(why)))
	{
		rc = arrow_set_error(err, ARROW_ERR_SCHEMA_MISMATCH,
							 "cannot append to \"%s\": schema differs: %s", w->path, why);
		goto done;
	}
	if ((rc = writer_set_schema(w, &file->schema, err)) != ARROW_OK)
		goto done;

	/* the Schema message at offset 8: 0xFFFFFFFF, length (or old: length) */
	if ((rc = arrow_pread_all(w->fd, pre, 8, 8, w->path, err)) != ARROW_OK)
		goto done;
	{
		uint32_t	first = pre[0] | pre[1] << 8 | pre[2] << 16 | (uint32_t) pre[3] << 24;
		uint32_t	second = pre[4] | pre[5] << 8 | pre[6] << 16 | (uint32_t) pre[7] << 24;

		end = (first == 0xffffffffu) ? 16 + (int64_t) second : 12 + (int64_t) first;
	}
	if ((rc = add_old_blocks(w, file, &end, err)) != ARROW_OK)
		goto done;
	rc = save_tail(w, end, err);

done:
	arrow_file_close(file);
	return rc;
}

/*
 * Opens path for adding record batches (and delta dictionaries) after its
 * existing ones.  An exclusive flock keeps other appenders out until close.
 * The journal of an earlier append that was interrupted is applied first
 * (silently: callers that want to say so call arrow_writer_recover before);
 * then this append's journal is written.  The file itself is not written
 * before the first batch.
 */
int
arrow_writer_open_append(const char *path, const ArrowSchema *schema,
						 const ArrowAllocator *alloc, ArrowWriter **out,
						 ArrowError *err)
{
	ArrowWriter *w;
	struct stat st;
	ArrowRecoverResult recovered;
	int			rc;

	*out = NULL;
	w = writer_new(path, alloc, err);
	if (w == NULL)
		return err ? err->code : ARROW_ERR_NOMEM;
	w->journal = journal_path(w->alloc, path, err);
	if (w->journal == NULL)
	{
		writer_free(w);
		return ARROW_ERR_NOMEM;
	}
	w->fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (w->fd < 0)
		rc = arrow_io_error(err, "could not open", path);
	else if ((rc = lock_file(w->fd, path, err)) != ARROW_OK)
		;
	else if (fstat(w->fd, &st) != 0)
		rc = arrow_io_error(err, "could not stat", path);
	else if (!S_ISREG(st.st_mode))
		rc = arrow_set_error(err, ARROW_ERR_ARGUMENT, "\"%s\" is not a regular file", path);
	else if ((rc = recover_locked(w->alloc, path, w->fd, &st, &recovered, err)) != ARROW_OK)
		;
	else if (recovered != ARROW_RECOVER_NONE && fstat(w->fd, &st) != 0)
		rc = arrow_io_error(err, "could not stat", path);
	else
	{
		w->orig_size = st.st_size;
		rc = prepare_append(w, schema, err);
		if (rc == ARROW_OK)
			rc = journal_write(w, (uint64_t) st.st_ino, err);
	}
	if (rc != ARROW_OK)
	{
		writer_free(w);
		return rc;
	}
	w->appending = true;
	*out = w;
	return ARROW_OK;
}

const ArrowSchema *
arrow_writer_schema(const ArrowWriter *w)
{
	return &w->schema;
}

/* ------------------------------------------------------------------------
 * Writing batches
 * ------------------------------------------------------------------------
 */

/* Checks the builders of a record batch of 'schema'; *n_rows: their length */
static int
check_record_batch(const ArrowSchema *schema, ArrowBuilder **columns,
				   int64_t *n_rows, ArrowError *err)
{
	*n_rows = 0;
	if (schema == NULL || (schema->n_fields > 0 && columns == NULL))
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no schema or no columns");
	for (int32_t i = 0; i < schema->n_fields; i++)
	{
		int			rc;

		if ((rc = arrow_builder_check(columns[i], &schema->fields[i], false, err)) != ARROW_OK)
			return rc;
		if (i == 0)
			*n_rows = arrow_builder_length(columns[0]);
		else if (arrow_builder_length(columns[i]) != *n_rows)
			return arrow_set_error(err, ARROW_ERR_ARGUMENT,
								   "column \"%s\" has %lld rows, column \"%s\" %lld",
								   schema->fields[i].name,
								   (long long) arrow_builder_length(columns[i]),
								   schema->fields[0].name, (long long) *n_rows);
	}
	return ARROW_OK;
}

/*
 * Thread-safe for record batches built in different threads (see the
 * header comment of this file); the dictionaries' state is read under
 * block_lock.
 */
int
arrow_writer_write_batch(ArrowWriter *w, ArrowBuilder **columns,
						 const ArrowMetadata *metadata, ArrowError *err)
{
	OutMessage	m;
	int64_t		n_rows;
	int			rc;

	if (w == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no writer");
	if ((rc = check_record_batch(&w->schema, columns, &n_rows, err)) != ARROW_OK)
		return rc;
	/* every dictionary index must point into its dictionary */
	for (int32_t d = 0; d < w->n_dicts && columns != NULL; d++)
	{
		int64_t		max = -1;
		int64_t		length;
		bool		written;

		pthread_mutex_lock(&w->block_lock);
		written = w->dicts[d].written;
		length = w->dicts[d].length;
		pthread_mutex_unlock(&w->block_lock);
		if (!written)
			continue;			/* writer_put reports the missing dictionary */
		for (int32_t i = 0; i < w->schema.n_fields; i++)
		{
			int64_t		mi = arrow_builder_max_index(columns[i], w->dicts[d].id);

			if (mi > max)
				max = mi;
		}
		if (max >= length)
			return arrow_set_error(err, ARROW_ERR_ARGUMENT,
								   "dictionary index %lld is past the end of dictionary %lld (%lld values)",
								   (long long) max, (long long) w->dicts[d].id,
								   (long long) length);
	}
	rc = build_message(w->alloc, columns, w->schema.n_fields, n_rows, NULL, metadata,
					   &m, err);
	if (rc != ARROW_OK)
		return rc;
	rc = writer_put(w, &m, NULL, err);
	message_free(&m);
	if (rc == ARROW_OK)
	{
		for (int32_t i = 0; i < w->schema.n_fields; i++)
			arrow_builder_reset(columns[i]);
	}
	return rc;
}

/*
 * Writes a dictionary batch for dictionary 'id' of the schema from a builder
 * made for the dictionary's value type (the dictionary-encoded field with
 * has_dictionary cleared); resets the builder on success.  The file format
 * has one dictionary per id: after the first batch of an id, only deltas.
 */
int
arrow_writer_write_dictionary(ArrowWriter *w, int64_t id, ArrowBuilder *values,
							  bool is_delta, ArrowError *err)
{
	WriterDict *dict = NULL;
	OutMessage	m;
	DictHeader	dh = {id, is_delta};
	bool		written;
	int			rc;

	if (w == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no writer");
	for (int32_t i = 0; i < w->n_dicts; i++)
	{
		if (w->dicts[i].id == id)
			dict = &w->dicts[i];
	}
	if (dict == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "no field of the schema uses dictionary %lld", (long long) id);
	pthread_mutex_lock(&w->block_lock);
	written = dict->written;
	pthread_mutex_unlock(&w->block_lock);
	if (written && !is_delta)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "dictionary %lld was already written: the file format "
							   "only allows deltas after the first batch", (long long) id);
	if (!written && is_delta)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "delta for dictionary %lld before its first batch", (long long) id);
	if ((rc = arrow_builder_check(values, dict->field, true, err)) != ARROW_OK)
		return rc;
	rc = build_message(w->alloc, &values, 1, arrow_builder_length(values), &dh,
					   NULL, &m, err);
	if (rc != ARROW_OK)
		return rc;
	rc = writer_put(w, &m, dict, err);
	message_free(&m);
	if (rc == ARROW_OK)
	{
		pthread_mutex_lock(&w->block_lock);
		dict->length = (is_delta ? dict->length : 0) + arrow_builder_length(values);
		pthread_mutex_unlock(&w->block_lock);
		arrow_builder_reset(values);
	}
	return rc;
}

/* ------------------------------------------------------------------------
 * Closing
 * ------------------------------------------------------------------------
 */
static int
block_cmp(const void *a, const void *b)
{
	int64_t		x = ((const WriterBlock *) a)->offset;
	int64_t		y = ((const WriterBlock *) b)->offset;

	return (x > y) - (x < y);
}

/* [Block] sorted by offset: struct Block { offset: long; metaDataLength: int; (pad) bodyLength: long } */
static FbRef
encode_blocks(FbBuilder *fb, BlockList *l)
{
	uint8_t    *le;
	FbRef		vec;

	if (l->n > 1)
		qsort(l->items, l->n, sizeof(WriterBlock), block_cmp);
	le = arrow_calloc(fb->alloc, l->n + 1, 24, NULL);
	if (le == NULL)
	{
		fb_builder_fail(fb, ARROW_ERR_NOMEM, "out of memory");
		return 0;
	}
	for (int32_t i = 0; i < l->n; i++)
	{
		fb_put_le64(le + 24 * i, (uint64_t) l->items[i].offset);
		fb_put_le32(le + 24 * i + 8, (uint32_t) l->items[i].meta_len);
		fb_put_le64(le + 24 * i + 16, (uint64_t) l->items[i].body_len);
	}
	vec = fb_create_vector(fb, le, l->n, 24, 8);
	arrow_free(fb->alloc, le);
	return vec;
}

/* End-of-stream marker, Footer, footer length, magic; then fsync */
static int
write_footer(ArrowWriter *w, ArrowError *err)
{
	FbBuilder	fb;
	FbRef		schema;
	FbRef		dicts;
	FbRef		batches;
	FbRef		footer;
	const uint8_t *fbdata;
	size_t		fblen;
	uint8_t    *buf = NULL;
	int64_t		total = 0;
	int			rc;

	fb_builder_init(&fb, w->alloc);
	schema = encode_schema(&fb, &w->schema);
	dicts = encode_blocks(&fb, &w->dict_blocks);
	batches = encode_blocks(&fb, &w->batch_blocks);
	/* Footer { version, schema, dictionaries, recordBatches } */
	fb_table_start(&fb);
	fb_add_int16(&fb, 0, ARROW_V5);
	fb_add_offset(&fb, 1, schema);
	fb_add_offset(&fb, 2, dicts);
	fb_add_offset(&fb, 3, batches);
	footer = fb_table_end(&fb);
	rc = fb_finish(&fb, footer, &fbdata, &fblen, err);
	if (rc == ARROW_OK)
	{
		total = 8 + (int64_t) fblen + 4 + ARROW_MAGIC_LEN;
		buf = arrow_malloc(w->alloc, (size_t) total, err);
		if (buf == NULL)
			rc = ARROW_ERR_NOMEM;
	}
	if (rc == ARROW_OK)
	{
		fb_put_le32(buf, 0xffffffffu);
		fb_put_le32(buf + 4, 0);
		memcpy(buf + 8, fbdata, fblen);
		fb_put_le32(buf + 8 + fblen, (uint32_t) fblen);
		memcpy(buf + 12 + fblen, ARROW_MAGIC, ARROW_MAGIC_LEN);
		w->touched = true;
		rc = arrow_pwrite_all(w->fd, buf, (size_t) total, w->next_offset, w->path, err);
	}
	if (rc == ARROW_OK && ftruncate(w->fd, (off_t) (w->next_offset + total)) != 0)
		rc = arrow_io_error(err, "could not truncate", w->path);
	if (rc == ARROW_OK && fsync(w->fd) != 0)
		rc = arrow_io_error(err, "could not fsync", w->path);
	arrow_free(w->alloc, buf);
	fb_builder_free(&fb);
	return rc;
}

/*
 * Starts writing the file's dirty pages to disk (Linux: sync_file_range
 * with SYNC_FILE_RANGE_WRITE; elsewhere nothing), so that the fsync of
 * arrow_writer_close has little left to wait for.  It does not wait for the
 * writes to complete but may wait for the device's queue: call it from a
 * thread that does not produce batches.
 */
void
arrow_writer_start_writeback(ArrowWriter *w)
{
	if (w == NULL)
		return;
	pthread_rwlock_rdlock(&w->io_lock);
#ifdef SYNC_FILE_RANGE_WRITE
	if (!w->failed)
		(void) sync_file_range(w->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
	pthread_rwlock_unlock(&w->io_lock);
}

/*
 * Writes the footer, fsyncs and closes; frees the writer in every case.
 * All writes (of every thread) must have returned before.  On failure the
 * file is put back as arrow_writer_abort would.
 */
int
arrow_writer_close(ArrowWriter *w, ArrowError *err)
{
	int			rc;

	if (w == NULL)
		return ARROW_OK;
	if (w->failed)
		rc = failed_error(w, err);
	else if ((rc = write_footer(w, err)) != ARROW_OK)
		undo_file(w, err);
	else if (w->journal_written && (rc = journal_remove(w, err)) != ARROW_OK)
		undo_file(w, err);		/* old file, whether or not the journal returns */
	writer_free(w);
	return rc;
}

void
arrow_writer_abort(ArrowWriter *w)
{
	if (w == NULL)
		return;
	if (!w->failed)
		undo_file(w, NULL);
	writer_free(w);
}
