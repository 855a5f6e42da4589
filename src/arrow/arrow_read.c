/*-------------------------------------------------------------------------
 *
 * arrow_read.c
 *		Reader of the Arrow IPC file and stream formats: opening (footer,
 *		messages, the metadata of every batch) and column extents.  The
 *		schema is parsed in arrow_read_schema.c, batches are loaded in
 *		arrow_load.c and their dictionaries in arrow_load_dict.c; what they
 *		share is in arrow_reader.h.  This comment describes the whole reader.
 *
 * Formats read:
 *	- file: "ARROW1\0\0", a stream, the Footer flatbuffer, its int32 length,
 *	  "ARROW1".  The footer lists the schema and the blocks (offset, metadata
 *	  length, body length) of every dictionary and record batch;
 *	- stream: a sequence of messages, each a prefix (0xFFFFFFFF and an int32
 *	  metadata length, or before Arrow 0.15 only the int32 length), the
 *	  Message flatbuffer (padded) and the body.  It starts with the Schema
 *	  message and ends at an end-of-stream marker (length 0) or at the end of
 *	  the file.
 * Metadata versions V4 and V5 are accepted (they differ only in the layout
 * of unions, which we do not support).
 *
 * Opening reads and checks all metadata but no body: every block, message
 * and buffer lies inside the file, node and buffer counts match the schema,
 * lengths and null counts are sane.  arrow_batch_load then reads the buffers
 * of the wanted columns and validates what value accessors rely on (see
 * load_array).  After both, no accessor in arrow.h and no code following the
 * documented ArrowArray invariants can read outside a buffer.
 *
 * Dictionaries: every dictionary-encoded field (at any depth) names a
 * dictionary id; dictionary batches carry the values.  In a stream a record
 * batch sees the dictionary batches before it: the last non-delta batch of
 * an id and the deltas after it, concatenated.  In a file every record batch
 * sees all of them (replacement is not allowed there, deltas are).  Decoded
 * dictionaries belong to the ArrowBatch that needed them.
 *
 * arrow_batch_load does not modify the ArrowFile, so batches of one file may
 * be loaded by several threads at once when the source's read_at is
 * thread-safe (the file-descriptor source uses pread and is).
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_reader.h"
#include "arrow_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Reading bytes
 * ------------------------------------------------------------------------
 */

/* Reads len bytes at offset, which must lie inside the source */
int
arrow_read_bytes(const ArrowFile *file, int64_t offset, void *dst, size_t len,
		   ArrowError *err)
{
	if (offset < 0 || offset > file->source.size ||
		(uint64_t) len > (uint64_t) (file->source.size - offset))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end of the file (%lld bytes)",
							   len, (long long) offset, (long long) file->source.size);
	if (len == 0)
		return ARROW_OK;
	return file->source.read_at(file->source.ctx, offset, dst, len, err);
}

/* Source over the file descriptor in ArrowFile.fd (ctx points to it) */
static int
fd_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err)
{
	return arrow_pread_all(*(const int *) ctx, dst, len, offset, NULL, err);
}

/* Whether [offset, offset + len) lies inside [0, limit) */
bool
arrow_range_inside(int64_t offset, int64_t len, int64_t limit)
{
	return offset >= 0 && len >= 0 && offset <= limit && len <= limit - offset;
}

#define range_inside arrow_range_inside

/* ------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------
 */
static void
message_free(const ArrowFile *file, Message *m)
{
	if (!m->borrowed)
		arrow_free(file->alloc, m->data);
	m->data = NULL;
	m->borrowed = false;
}

/*
 * the file's message buffer, of at least len bytes (one for all of a
 * file's messages instead of an allocation each); NULL when memory runs out
 */
static uint8_t *
message_buffer(const ArrowFile *file, int64_t len, ArrowError *err)
{
	ReaderPriv *priv = file->priv;
	uint8_t    *p;

	if ((size_t) len <= priv->msg_cap)
		return priv->msg_buf;
	if ((p = arrow_realloc(file->alloc, priv->msg_buf, (size_t) len, err)) == NULL)
		return NULL;
	priv->msg_buf = p;
	priv->msg_cap = (size_t) len;
	return p;
}

/*
 * Reads the message at 'offset'.  block_meta_len is the metadata length a
 * file block gives (the message must fit in it and the body follows it), or
 * -1 in a stream (the body follows the flatbuffer).  *eos is set for an
 * end-of-stream marker (length 0).  On success m->data must be freed with
 * message_free.
 */
#define READ_WHOLE_MAX	((int64_t) 1 << 20)	/* see read_message */

static int
read_message(const ArrowFile *file, int64_t offset, int64_t block_meta_len,
			 Message *m, bool *eos, ArrowError *err)
{
	uint8_t		prefix[8];
	int64_t		prefix_len = 4;
	int32_t		fb_len;
	int64_t		meta_len;
	uint8_t    *whole = NULL;	/* the block's metadata, read at once */

	memset(m, 0, sizeof(Message));
	m->offset = offset;
	*eos = false;
	/*
	 * a file block says how long its metadata is: one read instead of one
	 * for the prefix and one for the flatbuffer (a file of a thousand
	 * batches is a thousand messages to read); beyond READ_WHOLE_MAX, or
	 * past the end, the reads below report what is wrong
	 */
	if (block_meta_len >= 8 && block_meta_len <= READ_WHOLE_MAX &&
		range_inside(offset, block_meta_len, file->source.size))
	{
		if ((whole = message_buffer(file, block_meta_len, err)) == NULL)
			return ARROW_ERR_NOMEM;
		m->borrowed = true;
		if (arrow_read_bytes(file, offset, whole, block_meta_len, err) != ARROW_OK)
		{
			message_free(file, m);
			return err->code;
		}
		memcpy(prefix, whole, 8);
	}
	else if (arrow_read_bytes(file, offset, prefix, 4, err) != ARROW_OK)
		return err->code;
	if (fb_le32(prefix) == CONTINUATION)
	{
		if (whole == NULL && arrow_read_bytes(file, offset + 4, prefix + 4, 4, err) != ARROW_OK)
			return err->code;
		fb_len = (int32_t) fb_le32(prefix + 4);
		prefix_len = 8;
	}
	else
		fb_len = (int32_t) fb_le32(prefix);	/* before Arrow 0.15 */
	if (fb_len == 0 && block_meta_len < 0)
	{
		*eos = true;
		return ARROW_OK;
	}
	if (fb_len <= 0)
	{
		message_free(file, m);
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "invalid message metadata length %d at offset %lld",
							   fb_len, (long long) offset);
	}
	meta_len = prefix_len + fb_len;
	if (block_meta_len >= 0)
	{
		if (meta_len > block_meta_len)
		{
			message_free(file, m);
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "message at offset %lld is longer (%lld bytes) than its block says (%lld)",
								   (long long) offset, (long long) meta_len, (long long) block_meta_len);
		}
		meta_len = block_meta_len;
	}
	if (!range_inside(offset, meta_len, file->source.size))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "message at offset %lld (%lld bytes of metadata) extends past the end of the file",
							   (long long) offset, (long long) meta_len);
	if (whole != NULL)
	{
		/* the flatbuffer to the start of the allocation, as read below */
		memmove(whole, whole + prefix_len, fb_len);
		m->data = whole;
	}
	else if ((m->data = arrow_malloc(file->alloc, fb_len, err)) == NULL ||
			 arrow_read_bytes(file, offset + prefix_len, m->data, fb_len, err) != ARROW_OK)
		goto fail;
	m->metadata_length = meta_len;
	if (fb_init(&m->fb, m->data, fb_len, "message", &m->msg, err) != ARROW_OK ||
		fb_get_int16(&m->msg, MESSAGE_VERSION, 0, &m->version, err) != ARROW_OK ||
		fb_get_union(&m->msg, MESSAGE_HEADER, &m->header_type, &m->header, err) != ARROW_OK ||
		fb_get_int64(&m->msg, MESSAGE_BODY_LENGTH, 0, &m->body_length, err) != ARROW_OK)
		goto fail;
	if (m->version != METADATA_V4 && m->version != METADATA_V5)
	{
		arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
						"unsupported metadata version V%d of the message at offset %lld",
						m->version + 1, (long long) offset);
		goto fail;
	}
	m->body_offset = offset + meta_len;
	if (!range_inside(m->body_offset, m->body_length, file->source.size))
	{
		arrow_set_error(err, ARROW_ERR_INVALID,
						"body of the message at offset %lld (%lld bytes at %lld) extends past the end of the file",
						(long long) offset, (long long) m->body_length, (long long) m->body_offset);
		goto fail;
	}
	return ARROW_OK;

fail:
	message_free(file, m);
	return err->code;
}

/*
 * ArrowFile.metadata_version is the lowest version of the footer and the
 * messages: pyarrow, asked for V4, writes V4 messages under a V5 footer.
 */
static void
note_version(ArrowFile *file, const Message *m)
{
	if (file->metadata_version == 0 || m->version + 1 < file->metadata_version)
		file->metadata_version = m->version + 1;
}

/* Frees what an ArrowBatchInfo owns and zeroes it */
static void
batch_info_free(const ArrowAllocator *alloc, ArrowBatchInfo *info)
{
	if (info->packed != NULL)
	{
		arrow_free(alloc, info->packed);
		memset(info, 0, sizeof(ArrowBatchInfo));
		return;
	}
	arrow_free(alloc, info->nodes);
	arrow_free(alloc, info->buffers);
	arrow_free(alloc, info->variadic_counts);
	arrow_free(alloc, info->column_first_buffer);
	arrow_free(alloc, info->column_first_variadic);
	arrow_metadata_free(alloc, &info->metadata);
	memset(info, 0, sizeof(ArrowBatchInfo));
}

/* The BodyCompression table ct of a record batch into info->codec */
static int
parse_compression(const FbTable *ct, ArrowBatchInfo *info, const char *what,
				  ArrowError *err)
{
	int8_t		codec;
	int8_t		method;

	if (fb_get_int8(ct, COMPRESSION_CODEC, 0, &codec, err) != ARROW_OK ||
		fb_get_int8(ct, COMPRESSION_METHOD, 0, &method, err) != ARROW_OK)
		return err->code;
	if (codec != ARROW_CODEC_LZ4_FRAME && codec != ARROW_CODEC_ZSTD)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "%s: unsupported compression codec %d", what, codec);
	if (method != 0)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "%s: unsupported body compression method %d",
							   what, method);
	info->codec = (ArrowCodec) codec;
	return ARROW_OK;
}

/* The n FieldNodes of a record batch into info->nodes, lengths checked */
static int
parse_nodes(const ArrowAllocator *alloc, const FbVector *nodes, int32_t n,
			ArrowBatchInfo *info, const char *what, ArrowError *err)
{
	if (n > 0)
	{
		info->nodes = arrow_calloc(alloc, n, sizeof(ArrowNode), err);
		if (info->nodes == NULL)
			return ARROW_ERR_NOMEM;
	}
	info->n_nodes = n;
	for (int32_t i = 0; i < n; i++)
	{
		const uint8_t *p = fb_vector_elem(nodes, (uint32_t) i);
		ArrowNode  *node = &info->nodes[i];

		node->length = (int64_t) fb_le64(p);
		node->null_count = (int64_t) fb_le64(p + 8);
		if (node->length < 0 || node->null_count < 0 || node->null_count > node->length)
			return arrow_set_error(err, ARROW_ERR_INVALID, "%s: node %d has length %lld and null count %lld",
								   what, i, (long long) node->length, (long long) node->null_count);
	}
	return ARROW_OK;
}

/* The n Buffers of a record batch into info->buffers, each inside the body */
static int
parse_buffers(const ArrowAllocator *alloc, const FbVector *buffers, int32_t n,
			  ArrowBatchInfo *info, const char *what, ArrowError *err)
{
	if (n > 0)
	{
		info->buffers = arrow_calloc(alloc, n, sizeof(ArrowBufferRef), err);
		if (info->buffers == NULL)
			return ARROW_ERR_NOMEM;
	}
	info->n_buffers = n;
	for (int32_t i = 0; i < n; i++)
	{
		const uint8_t *p = fb_vector_elem(buffers, (uint32_t) i);
		ArrowBufferRef *b = &info->buffers[i];

		b->offset = (int64_t) fb_le64(p);
		b->length = (int64_t) fb_le64(p + 8);
		if (!range_inside(b->offset, b->length, info->body_length))
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "%s: buffer %d (%lld bytes at %lld) is outside the body (%lld bytes)",
								   what, i, (long long) b->length, (long long) b->offset,
								   (long long) info->body_length);
	}
	return ARROW_OK;
}

/*
 * does no key of md appear twice (what arrow_metadata_get_hinted needs to
 * trust a hint); false beyond 256 keys, which are not compared.  The keys
 * go into a hash table (open addressing, at most half full) so that each
 * is compared only with those of its hash: every record batch of a file
 * with statistics has two keys per column, and comparing every pair took
 * a sixth of opening a file of 1,400 batches.
 */
bool
arrow_metadata_keys_unique(const ArrowMetadata *md)
{
	uint16_t	slot[512];		/* 1 + index of the key there, 0: free */
	uint32_t	hash[256];

	if (md->count > 256)
		return false;
	if (md->count < 2)
		return true;
	memset(slot, 0, sizeof(slot));
	for (int32_t i = 0; i < md->count; i++)
	{
		uint32_t	h = 2166136261u;	/* FNV-1a */
		uint32_t	at;

		for (const unsigned char *c = (const unsigned char *) md->items[i].key; *c; c++)
			h = (h ^ *c) * 16777619u;
		hash[i] = h;
		for (at = h & 511; slot[at] != 0; at = (at + 1) & 511)
			if (hash[slot[at] - 1] == h && strcmp(md->items[slot[at] - 1].key, md->items[i].key) == 0)
				return false;
		slot[at] = (uint16_t) (i + 1);
	}
	return true;
}

/*
 * Parses the RecordBatch table rb of message m (a record batch of 'fields',
 * or the data of a dictionary batch with its one value field) into *info,
 * checking the counts against the fields and every extent against the body;
 * its arrays and metadata from alloc.  'what' names the batch in error
 * messages.  Frees *info on failure.
 */
static int
parse_batch(const ArrowFile *file, const ArrowAllocator *alloc, const Message *m,
			const FbTable *rb, const ArrowField *fields, int32_t n_fields,
			ArrowBatchInfo *info, const char *what, ArrowError *err)
{
	FbVector	nodes;
	FbVector	buffers;
	FbVector	variadic;
	FbTable		ct;
	bool		has_compression;
	int32_t		want_nodes = 0;
	int32_t		want_buffers = 0;
	int32_t		node = 0;

	memset(info, 0, sizeof(ArrowBatchInfo));
	info->message_offset = m->offset;
	info->body_offset = m->body_offset;
	info->body_length = m->body_length;
	info->codec = ARROW_CODEC_NONE;
	for (int32_t i = 0; i < n_fields; i++)
		arrow_count_layout(&fields[i], &want_nodes, &want_buffers);

	if (fb_get_int64(rb, RECORDBATCH_LENGTH, 0, &info->n_rows, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_NODES, NODE_SIZE, &nodes, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_BUFFERS, BUFFER_SIZE, &buffers, err) != ARROW_OK ||
		fb_get_table(rb, RECORDBATCH_COMPRESSION, &ct, &has_compression, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_VARIADIC, 8, &variadic, err) != ARROW_OK ||
		arrow_parse_variadic(alloc, &variadic, fields, n_fields, info, &want_buffers, what, err) != ARROW_OK)
		goto fail;
	if (info->n_rows < 0)
	{
		arrow_set_error(err, ARROW_ERR_INVALID, "%s has a negative length", what);
		goto fail;
	}
	if (nodes.length != (uint32_t) want_nodes || buffers.length != (uint32_t) want_buffers)
	{
		arrow_set_error(err, ARROW_ERR_INVALID,
						"%s has %u nodes and %u buffers, the schema needs %d and %d",
						what, nodes.length, buffers.length, want_nodes, want_buffers);
		goto fail;
	}
	if ((has_compression && parse_compression(&ct, info, what, err) != ARROW_OK) ||
		parse_nodes(alloc, &nodes, want_nodes, info, what, err) != ARROW_OK ||
		parse_buffers(alloc, &buffers, want_buffers, info, what, err) != ARROW_OK)
		goto fail;
	/* every top-level array has the batch's length */
	for (int32_t i = 0; i < n_fields; i++)
	{
		int32_t		n = 0;
		int32_t		b = 0;

		if (info->nodes[node].length != info->n_rows)
		{
			arrow_set_error(err, ARROW_ERR_INVALID, "%s: field \"%s\" has %lld values, the batch %lld rows",
							what, fields[i].name, (long long) info->nodes[node].length,
							(long long) info->n_rows);
			goto fail;
		}
		arrow_count_layout(&fields[i], &n, &b);
		node += n;
	}
	if (arrow_parse_metadata(alloc, &m->msg, MESSAGE_METADATA, &info->metadata, err) != ARROW_OK)
		goto fail;
	info->metadata.unique = arrow_metadata_keys_unique(&info->metadata);
	return ARROW_OK;

fail:
	batch_info_free(alloc, info);
	return err->code;
}

/*
 * The scratch allocator of parse_batch_packed: allocations follow each
 * other in ReaderPriv.scratch (16-byte aligned), none is freed alone, and
 * running out is ARROW_ERR_NOMEM
 */
typedef struct Scratch
{
	ArrowAllocator a;
	uint8_t    *base;
	size_t		cap;
	size_t		used;
} Scratch;

static void *
scratch_malloc(void *ctx, size_t size)
{
	Scratch    *s = ctx;
	size_t		need = (size + 15) & ~(size_t) 15;
	void	   *p;

	if (need < size || need > s->cap - s->used)
		return NULL;
	p = s->base + s->used;
	s->used += need;
	return p;
}

static void *
scratch_realloc(void *ctx, void *ptr, size_t size)
{
	return NULL;				/* parse_batch never reallocates */
}

static void
scratch_free(void *ctx, void *ptr)
{
}

/*
 * parse_batch with the batch's arrays and metadata in one allocation of
 * the file's allocator (ArrowBatchInfo.packed) instead of one each: a
 * record batch with statistics has two strings a column, and a thousand
 * batches were some sixty thousand allocations and the page faults of
 * their memory in every new process that opened the file.  Parsed into
 * the file's scratch area, then copied into the allocation, the pointers
 * moved with it.  Where the scratch area runs out (a bound that does not
 * hold) the batch is parsed as before.
 */
static int
parse_batch_packed(ArrowFile *file, const Message *m, ArrowBatchInfo *info,
				   const char *what, ArrowError *err)
{
	ReaderPriv *priv = file->priv;
	/*
	 * a bound: each array, string and key-value pair takes no more than
	 * its flatbuffer (items: 16 bytes for 8 or more), plus 15 bytes of
	 * alignment an allocation, two allocations per key-value pair of at
	 * least 8 bytes; the layout arrays go with the fields
	 */
	size_t		need = 16 * (size_t) m->fb.len + 24 * (size_t) (file->schema.n_fields + 1) + 256;
	Scratch		s;
	uint8_t    *block;
	ptrdiff_t	delta;
	int			rc;

	if (need > priv->scratch_cap)
	{
		uint8_t    *p = arrow_realloc(file->alloc, priv->scratch, need, err);

		if (p != NULL)
		{
			priv->scratch = p;
			priv->scratch_cap = need;
		}
	}
	s.a = (ArrowAllocator) {scratch_malloc, scratch_realloc, scratch_free, &s};
	s.base = priv->scratch;
	s.cap = priv->scratch_cap;
	s.used = 0;
	rc = need > priv->scratch_cap ? ARROW_ERR_NOMEM :
		parse_batch(file, &s.a, m, &m->header, file->schema.fields, file->schema.n_fields,
					info, what, err);
	if (rc == ARROW_ERR_NOMEM)
	{
		/* no scratch area to be had, or it ran out: as before it */
		memset(err, 0, sizeof(*err));
		return parse_batch(file, file->alloc, m, &m->header, file->schema.fields,
						   file->schema.n_fields, info, what, err);
	}
	if (rc != ARROW_OK)
		return rc;
	if ((block = arrow_malloc(file->alloc, s.used > 0 ? s.used : 1, err)) == NULL)
	{
		memset(info, 0, sizeof(ArrowBatchInfo));
		return ARROW_ERR_NOMEM;
	}
	memcpy(block, s.base, s.used);
	delta = block - s.base;
#define MOVED(ptr) ((ptr) = (ptr) == NULL ? NULL : (void *) ((uint8_t *) (ptr) + delta))
	MOVED(info->nodes);
	MOVED(info->buffers);
	MOVED(info->variadic_counts);
	MOVED(info->column_first_buffer);
	MOVED(info->column_first_variadic);
	MOVED(info->metadata.items);
	for (int32_t i = 0; i < info->metadata.count; i++)
	{
		MOVED(info->metadata.items[i].key);
		MOVED(info->metadata.items[i].value);
	}
#undef MOVED
	info->packed = block;
	return ARROW_OK;
}

/*
 * room for n record batches in all, so that adding them moves nothing; a
 * file whose arrays are another's (arrow_file_copy) gets its own first
 */
int
arrow_reserve_batches(ArrowFile *file, int32_t n, ArrowError *err)
{
	ReaderPriv *priv = file->priv;
	ArrowBatchInfo *b;
	int32_t    *v;

	if (priv->batches_borrowed)
	{
		n = n > file->n_batches ? n : file->n_batches;
		b = arrow_malloc(file->alloc, sizeof(ArrowBatchInfo) * n, err);
		v = b != NULL ? arrow_malloc(file->alloc, sizeof(int32_t) * n, err) : NULL;
		if (v == NULL)
		{
			arrow_free(file->alloc, b);
			return ARROW_ERR_NOMEM;
		}
		memcpy(b, file->batches, sizeof(ArrowBatchInfo) * file->n_batches);
		memcpy(v, priv->visible_dicts, sizeof(int32_t) * file->n_batches);
		file->batches = b;
		priv->visible_dicts = v;
		priv->batches_cap = n;
		priv->batches_borrowed = false;
		return ARROW_OK;
	}
	if (n <= priv->batches_cap)
		return ARROW_OK;
	b = arrow_realloc(file->alloc, file->batches, sizeof(ArrowBatchInfo) * n, err);
	if (b == NULL)
		return ARROW_ERR_NOMEM;
	file->batches = b;
	v = arrow_realloc(file->alloc, priv->visible_dicts, sizeof(int32_t) * n, err);
	if (v == NULL)
		return ARROW_ERR_NOMEM;
	priv->visible_dicts = v;
	priv->batches_cap = n;
	return ARROW_OK;
}

/* Appends a record batch (info moves into the file) */
int
arrow_add_batch(ArrowFile *file, ArrowBatchInfo *info, ArrowError *err)
{
	ReaderPriv *priv = file->priv;

	if ((file->n_batches == priv->batches_cap || priv->batches_borrowed) &&
		arrow_reserve_batches(file, priv->batches_cap ? priv->batches_cap * 2 : 16,
							  err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (arrow_add_overflow(file->total_rows, info->n_rows, &file->total_rows))
		return arrow_set_error(err, ARROW_ERR_INVALID, "total row count overflows");
	for (int32_t c = 0; info->column_first_buffer != NULL && c < file->schema.n_fields; c++)
	{
		/* view columns: n_buffers is the most that any batch has */
		int32_t		n = info->column_first_buffer[c + 1] - info->column_first_buffer[c];

		if (n > file->columns[c].n_buffers)
			file->columns[c].n_buffers = n;
	}
	file->batches[file->n_batches] = *info;
	priv->visible_dicts[file->n_batches] = file->n_dictionaries;
	file->n_batches++;
	memset(info, 0, sizeof(ArrowBatchInfo));
	return ARROW_OK;
}

/*
 * Parses a DictionaryBatch header and appends it to file->dictionaries.
 * in_file: the file format, where replacing a dictionary is not allowed.
 */
static int
add_dictionary(ArrowFile *file, const Message *m, bool in_file, ArrowError *err)
{
	ReaderPriv *priv = file->priv;
	ArrowDictionaryBatchInfo d;
	DictValueField *dv;
	FbTable		data;
	bool		has_data;
	char		what[64];

	memset(&d, 0, sizeof(d));
	if (fb_get_int64(&m->header, DICTBATCH_ID, 0, &d.id, err) != ARROW_OK ||
		fb_get_bool(&m->header, DICTBATCH_IS_DELTA, false, &d.is_delta, err) != ARROW_OK ||
		fb_get_table(&m->header, DICTBATCH_DATA, &data, &has_data, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	snprintf(what, sizeof(what), "dictionary batch %d", file->n_dictionaries);
	if (!has_data)
		return arrow_set_error(err, ARROW_ERR_INVALID, "%s has no data", what);
	dv = (DictValueField *) arrow_find_dict_field(file, d.id);
	if (dv == NULL)
		return arrow_set_error(err, ARROW_ERR_INVALID, "%s is for dictionary id %lld, which no field uses",
							   what, (long long) d.id);
	if (in_file && !d.is_delta && dv->seen)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%s replaces dictionary %lld, which the file format does not allow",
							   what, (long long) d.id);
	if (parse_batch(file, file->alloc, m, &data, &dv->field, 1, &d.batch, what, err) != ARROW_OK)
		return err->code;
	if (file->n_dictionaries == priv->dicts_cap)
	{
		int32_t		cap = priv->dicts_cap ? priv->dicts_cap * 2 : 8;
		ArrowDictionaryBatchInfo *arr;

		arr = arrow_realloc(file->alloc, file->dictionaries,
							sizeof(ArrowDictionaryBatchInfo) * cap, err);
		if (arr == NULL)
		{
			batch_info_free(file->alloc, &d.batch);
			return ARROW_ERR_NOMEM;
		}
		file->dictionaries = arr;
		priv->dicts_cap = cap;
	}
	file->dictionaries[file->n_dictionaries++] = d;
	dv->seen = true;
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * File and stream formats
 * ------------------------------------------------------------------------
 */

/* Reads the message of a footer block and adds it as a batch or dictionary */
static int
read_block(ArrowFile *file, const uint8_t *block, bool dictionary, int32_t index,
		   ArrowError *err)
{
	int64_t		offset = (int64_t) fb_le64(block);
	int32_t		meta_len = (int32_t) fb_le32(block + 8);
	int64_t		body_len = (int64_t) fb_le64(block + 16);
	const char *kind = dictionary ? "dictionary" : "record batch";
	Message		m;
	bool		eos;
	int			rc;

	if (meta_len <= 0 || body_len < 0 || offset < FILE_HEADER_LEN ||
		!range_inside(offset, (int64_t) meta_len, file->source.size) ||
		!range_inside(offset + meta_len, body_len, file->source.size))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%s block %d (offset %lld, metadata %d, body %lld bytes) is outside the file",
							   kind, index, (long long) offset, meta_len, (long long) body_len);
	if (read_message(file, offset, meta_len, &m, &eos, err) != ARROW_OK)
		return err->code;
	note_version(file, &m);
	if (m.body_length != body_len)
		rc = arrow_set_error(err, ARROW_ERR_INVALID,
							 "%s block %d says the body has %lld bytes, its message %lld",
							 kind, index, (long long) body_len, (long long) m.body_length);
	else if (m.header_type != (dictionary ? HEADER_DICTIONARY_BATCH : HEADER_RECORD_BATCH))
		rc = arrow_set_error(err, ARROW_ERR_INVALID,
							 "%s block %d points to a message of type %d",
							 kind, index, m.header_type);
	else if (dictionary)
		rc = add_dictionary(file, &m, true, err);
	else
	{
		ArrowBatchInfo info;
		char		what[64];

		snprintf(what, sizeof(what), "record batch %d", index);
		rc = parse_batch_packed(file, &m, &info, what, err);
		if (rc == ARROW_OK && (rc = arrow_add_batch(file, &info, err)) != ARROW_OK)
			batch_info_free(file->alloc, &info);
	}
	message_free(file, &m);
	return rc;
}

/*
 * File format: checks the trailing magic, reads the footer (version, schema,
 * blocks) and the message of every dictionary and record batch block.
 */
static int
read_file_format(ArrowFile *file, ArrowError *err)
{
	int64_t		size = file->source.size;
	uint8_t		trailer[FILE_TRAILER_LEN];
	int32_t		footer_len;
	int64_t		footer_offset;
	uint8_t    *footer = NULL;
	FbReader	fb;
	FbTable		ft;
	FbTable		st;
	bool		has_schema;
	int16_t		version;
	FbVector	dicts;
	FbVector	batches;
	int			rc;

	if (size < FILE_HEADER_LEN + FILE_TRAILER_LEN)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "file of %lld bytes is too short for the arrow file format", (long long) size);
	if (arrow_read_bytes(file, size - FILE_TRAILER_LEN, trailer, FILE_TRAILER_LEN, err) != ARROW_OK)
		return err->code;
	if (memcmp(trailer + 4, MAGIC, MAGIC_LEN) != 0)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "file starts with the arrow magic but does not end with it (truncated?)");
	footer_len = (int32_t) fb_le32(trailer);
	footer_offset = size - FILE_TRAILER_LEN - (int64_t) footer_len;
	if (footer_len <= 0 || footer_offset < FILE_HEADER_LEN)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "footer length %d does not fit in the file (%lld bytes)",
							   footer_len, (long long) size);
	footer = arrow_malloc(file->alloc, footer_len, err);
	if (footer == NULL)
		return ARROW_ERR_NOMEM;
	if (arrow_read_bytes(file, footer_offset, footer, footer_len, err) != ARROW_OK ||
		fb_init(&fb, footer, footer_len, "footer", &ft, err) != ARROW_OK ||
		fb_get_int16(&ft, FOOTER_VERSION, 0, &version, err) != ARROW_OK ||
		fb_get_table(&ft, FOOTER_SCHEMA, &st, &has_schema, err) != ARROW_OK ||
		fb_get_vector(&ft, FOOTER_DICTIONARIES, BLOCK_SIZE, &dicts, err) != ARROW_OK ||
		fb_get_vector(&ft, FOOTER_RECORD_BATCHES, BLOCK_SIZE, &batches, err) != ARROW_OK)
		goto fail;
	if (version != METADATA_V4 && version != METADATA_V5)
	{
		arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "unsupported metadata version V%d in the footer",
						version + 1);
		goto fail;
	}
	file->metadata_version = version + 1;
	if (!has_schema)
	{
		arrow_set_error(err, ARROW_ERR_INVALID, "footer has no schema");
		goto fail;
	}
	if (arrow_parse_schema(file, &st, err) != ARROW_OK || arrow_prepare_schema(file, err) != ARROW_OK)
		goto fail;
	for (uint32_t i = 0; i < dicts.length; i++)
	{
		if (read_block(file, fb_vector_elem(&dicts, i), true, (int32_t) i, err) != ARROW_OK)
			goto fail;
	}
	/*
	 * the batches another process laid out flat, or an earlier open's image,
	 * where they hold (arrow_read_image.c)
	 */
	if (!arrow_batches_given(file, &batches) && !arrow_batches_from_image(file, &batches))
		for (uint32_t i = 0; i < batches.length; i++)
		{
			if (read_block(file, fb_vector_elem(&batches, i), false, (int32_t) i, err) != ARROW_OK)
				goto fail;
		}
	/* in a file every record batch sees every dictionary batch (given ones: there are none) */
	for (int32_t i = 0; !((ReaderPriv *) file->priv)->batches_borrowed && i < file->n_batches; i++)
		((ReaderPriv *) file->priv)->visible_dicts[i] = file->n_dictionaries;
	arrow_free(file->alloc, footer);
	return ARROW_OK;

fail:
	rc = err->code;
	arrow_free(file->alloc, footer);
	return rc;
}

/*
 * Called when the first message of what was taken for a stream cannot be
 * read (err says why): unless the input starts as Arrow IPC does (the
 * continuation marker of a message, or the file magic of a truncated file),
 * it is no Arrow IPC at all, a CSV or text file most often, and err becomes
 * ARROW_ERR_NOT_ARROW quoting its first bytes.  A stream of the framing
 * before Arrow 0.15 (no marker) that is corrupt from its first message is
 * reported as not Arrow too.  Returns err->code.
 */
static int
first_message_failed(const ArrowFile *file, ArrowError *err)
{
	uint8_t		head[8];
	char		shown[8 * 4 + 1];
	size_t		n = file->source.size < 8 ? (size_t) file->source.size : 8;
	size_t		pos = 0;
	ArrowError	local;

	if (err->code != ARROW_ERR_INVALID ||
		arrow_read_bytes(file, 0, head, n, &local) != ARROW_OK)
		return err->code;
	if ((n >= 4 && fb_le32(head) == CONTINUATION) ||
		(n >= MAGIC_LEN && memcmp(head, MAGIC, MAGIC_LEN) == 0))
		return err->code;
	for (size_t i = 0; i < n; i++)
	{
		if (head[i] >= 0x20 && head[i] < 0x7f && head[i] != '"' && head[i] != '\\')
			shown[pos++] = (char) head[i];
		else
			pos += snprintf(shown + pos, sizeof(shown) - pos, "\\x%02x", head[i]);
	}
	shown[pos] = '\0';
	return arrow_set_error(err, ARROW_ERR_NOT_ARROW,
						   "not an Arrow IPC file: it starts with \"%s\", neither the file magic \"ARROW1\" nor a stream's first message",
						   shown);
}

/*
 * Stream format: the Schema message, then dictionary and record batches up
 * to an end-of-stream marker or the end of the file.
 */
static int
read_stream_format(ArrowFile *file, ArrowError *err)
{
	int64_t		offset = 0;
	bool		have_schema = false;

	if (file->source.size == 0)		/* possibly one being written: corrupt */
		return arrow_set_error(err, ARROW_ERR_INVALID, "not an Arrow IPC file: the file is empty");
	while (offset < file->source.size)
	{
		Message		m;
		bool		eos;
		int			rc = ARROW_OK;

		if (read_message(file, offset, -1, &m, &eos, err) != ARROW_OK)
			return offset == 0 ? first_message_failed(file, err) : err->code;
		if (eos)
			break;
		note_version(file, &m);
		if (!have_schema)
		{
			if (m.header_type != HEADER_SCHEMA)
				rc = arrow_set_error(err, ARROW_ERR_INVALID,
									 "stream starts with a message of type %d, not a schema",
									 m.header_type);
			else
			{
				rc = arrow_parse_schema(file, &m.header, err);
				if (rc == ARROW_OK)
					rc = arrow_prepare_schema(file, err);
				have_schema = true;
			}
		}
		else if (m.header_type == HEADER_DICTIONARY_BATCH)
			rc = add_dictionary(file, &m, false, err);
		else if (m.header_type == HEADER_RECORD_BATCH)
		{
			ArrowBatchInfo info;
			char		what[64];

			snprintf(what, sizeof(what), "record batch %d", file->n_batches);
			rc = parse_batch_packed(file, &m, &info, what, err);
			if (rc == ARROW_OK && (rc = arrow_add_batch(file, &info, err)) != ARROW_OK)
				batch_info_free(file->alloc, &info);
		}
		else if (m.header_type == HEADER_SCHEMA)
			rc = arrow_set_error(err, ARROW_ERR_INVALID,
								 "second schema message at offset %lld", (long long) offset);
		else
			rc = arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
								 "unsupported message type %d at offset %lld",
								 m.header_type, (long long) offset);
		offset = m.body_offset + m.body_length;
		message_free(file, &m);
		if (rc != ARROW_OK)
			return rc;
	}
	if (!have_schema)
		return arrow_set_error(err, ARROW_ERR_INVALID, "stream has no schema message");
	return ARROW_OK;
}

/* Frees everything of a file, even a partly opened one; closes its fd */
void
arrow_file_close(ArrowFile *file)
{
	const ArrowAllocator *alloc;
	ReaderPriv *priv;

	if (file == NULL)
		return;
	alloc = file->alloc;
	priv = file->priv;
	for (int32_t i = priv != NULL ? priv->n_borrowed : 0; i < file->n_batches; i++)
		batch_info_free(alloc, &file->batches[i]);
	for (int32_t i = 0; i < file->n_dictionaries; i++)
		batch_info_free(alloc, &file->dictionaries[i].batch);
	if (priv == NULL || !priv->batches_borrowed)
		arrow_free(alloc, file->batches);
	arrow_free(alloc, file->dictionaries);
	arrow_free(alloc, file->columns);
	arrow_schema_free(alloc, &file->schema);
	if (priv != NULL)
	{
		arrow_free(alloc, priv->image_block);
		arrow_free(alloc, priv->msg_buf);
		arrow_free(alloc, priv->scratch);
		if (!priv->batches_borrowed)
			arrow_free(alloc, priv->visible_dicts);
		arrow_free(alloc, priv->dict_fields);
		arrow_free(alloc, priv);
	}
	if (file->fd >= 0)
		close(file->fd);
	arrow_free(alloc, file);
}

/* n elements of size bytes from src into *dst (NULL when n is 0) */
static int
copy_array(const ArrowAllocator *alloc, void **dst, const void *src, size_t n, size_t size,
		   ArrowError *err)
{
	*dst = NULL;
	if (n == 0 || src == NULL)
		return ARROW_OK;
	if ((*dst = arrow_malloc(alloc, n * size, err)) == NULL)
		return ARROW_ERR_NOMEM;
	memcpy(*dst, src, n * size);
	return ARROW_OK;
}

/* a deep copy of one batch's metadata; dst is freed by batch_info_free */
static int
batch_info_copy(const ArrowAllocator *alloc, ArrowBatchInfo *dst, const ArrowBatchInfo *src,
				int32_t n_fields, ArrowError *err)
{
	*dst = *src;
	dst->packed = NULL;
	dst->nodes = NULL;
	dst->buffers = NULL;
	dst->variadic_counts = NULL;
	dst->column_first_buffer = NULL;
	dst->column_first_variadic = NULL;
	memset(&dst->metadata, 0, sizeof(ArrowMetadata));
	if (copy_array(alloc, (void **) &dst->nodes, src->nodes, src->n_nodes,
				   sizeof(ArrowNode), err) != ARROW_OK ||
		copy_array(alloc, (void **) &dst->buffers, src->buffers, src->n_buffers,
				   sizeof(ArrowBufferRef), err) != ARROW_OK ||
		copy_array(alloc, (void **) &dst->variadic_counts, src->variadic_counts,
				   src->n_variadic, sizeof(int64_t), err) != ARROW_OK ||
		copy_array(alloc, (void **) &dst->column_first_buffer, src->column_first_buffer,
				   src->column_first_buffer ? n_fields + 1 : 0, sizeof(int32_t), err) != ARROW_OK ||
		copy_array(alloc, (void **) &dst->column_first_variadic, src->column_first_variadic,
				   src->column_first_variadic ? n_fields : 0, sizeof(int32_t), err) != ARROW_OK ||
		arrow_metadata_copy(alloc, &dst->metadata, &src->metadata, err) != ARROW_OK)
		return err ? err->code : ARROW_ERR_NOMEM;
	return ARROW_OK;
}

/* see arrow.h */
int
arrow_file_copy(const ArrowFile *file, const ArrowSource *src, const ArrowAllocator *alloc,
				bool share_batches, ArrowFile **out, ArrowError *err)
{
	const ReaderPriv *fp = file->priv;
	ArrowFile  *copy;
	ReaderPriv *priv;
	int32_t		n_fields = file->schema.n_fields;

	*out = NULL;
	if ((copy = arrow_calloc(alloc, 1, sizeof(ArrowFile), err)) == NULL)
		return ARROW_ERR_NOMEM;
	copy->alloc = alloc;
	copy->source = *src;
	copy->fd = -1;
	copy->is_stream = file->is_stream;
	copy->metadata_version = file->metadata_version;
	copy->total_rows = file->total_rows;
	/*
	 * the schema, then what opening derives from it (the columns' layout,
	 * the dictionary-encoded fields, which point into the copy's schema);
	 * the layout as the original has it after reading its batches (view
	 * fields widen it), and which dictionaries it has seen
	 */
	if ((copy->priv = priv = arrow_calloc(alloc, 1, sizeof(ReaderPriv), err)) == NULL ||
		arrow_schema_copy(alloc, &copy->schema, &file->schema, err) != ARROW_OK ||
		arrow_prepare_schema(copy, err) != ARROW_OK)
		goto fail;
	if (n_fields > 0)
		memcpy(copy->columns, file->columns, n_fields * sizeof(ArrowColumnLayout));
	if (priv->n_dict_fields != fp->n_dict_fields)
	{
		arrow_set_error(err, ARROW_ERR_INVALID, "the copy of a file has other dictionaries");
		goto fail;
	}
	for (int32_t i = 0; i < priv->n_dict_fields; i++)
		priv->dict_fields[i].seen = fp->dict_fields[i].seen;
	if (file->n_batches > 0 && share_batches)
	{
		/*
		 * the original's batches, their arrays and metadata as they are: a
		 * copy of the batches' array alone (about 150 bytes a batch) cost
		 * each of a query's opens of a file of a thousand batches more than
		 * the rest of the open, in pages touched for the first time
		 */
		copy->batches = file->batches;
		priv->visible_dicts = fp->visible_dicts;
		priv->batches_borrowed = true;
		copy->n_batches = priv->n_borrowed = file->n_batches;
	}
	else if (file->n_batches > 0)
	{
		if ((copy->batches = arrow_calloc(alloc, file->n_batches, sizeof(ArrowBatchInfo),
										  err)) == NULL)
			goto fail;
		for (int32_t i = 0; i < file->n_batches; i++)
		{
			copy->n_batches = i + 1;
			if (batch_info_copy(alloc, &copy->batches[i], &file->batches[i], n_fields,
								err) != ARROW_OK)
				goto fail;
		}
	}
	if (file->n_dictionaries > 0)
	{
		if ((copy->dictionaries = arrow_calloc(alloc, file->n_dictionaries,
											   sizeof(ArrowDictionaryBatchInfo), err)) == NULL)
			goto fail;
		for (int32_t i = 0; i < file->n_dictionaries; i++)
		{
			copy->n_dictionaries = i + 1;
			copy->dictionaries[i].id = file->dictionaries[i].id;
			copy->dictionaries[i].is_delta = file->dictionaries[i].is_delta;
			if (batch_info_copy(alloc, &copy->dictionaries[i].batch,
								&file->dictionaries[i].batch, n_fields, err) != ARROW_OK)
				goto fail;
		}
	}
	priv->batches_cap = copy->n_batches;
	priv->dicts_cap = copy->n_dictionaries;
	if (!priv->batches_borrowed &&
		copy_array(alloc, (void **) &priv->visible_dicts, fp->visible_dicts, file->n_batches,
				   sizeof(int32_t), err) != ARROW_OK)
		goto fail;
	*out = copy;
	return ARROW_OK;

fail:
	arrow_file_close(copy);
	return err && err->code != ARROW_OK ? err->code : ARROW_ERR_NOMEM;
}

/*
 * Common part of the open functions.  With fd >= 0 the source is that
 * file descriptor (of 'size' bytes), which the ArrowFile then owns; else
 * *src.  image (NULL: none): the record batches' image of an earlier open
 * (arrow_read_image.c), image_len bytes, taken where it holds; given (NULL:
 * none): the batches laid out flat by another process (arrow_batches_flat_copy).
 */
static int
file_open(const ArrowSource *src, int fd, int64_t size, const void *image, uint64_t image_len,
		  const ArrowFlatBatches *given, const ArrowAllocator *alloc, ArrowFile **out,
		  ArrowError *err)
{
	ArrowFile  *file;
	uint8_t		head[FILE_HEADER_LEN];
	int			rc;

	*out = NULL;
	alloc = arrow_alloc_or_default(alloc);
	file = arrow_calloc(alloc, 1, sizeof(ArrowFile), err);
	if (file == NULL)
	{
		if (fd >= 0)
			close(fd);
		return ARROW_ERR_NOMEM;
	}
	file->alloc = alloc;
	file->fd = fd;
	if (fd >= 0)
	{
		file->source.read_at = fd_read_at;
		file->source.size = size;
		file->source.ctx = &file->fd;
	}
	else
		file->source = *src;
	file->priv = arrow_calloc(alloc, 1, sizeof(ReaderPriv), err);
	if (file->priv == NULL)
	{
		arrow_file_close(file);
		return ARROW_ERR_NOMEM;
	}
	((ReaderPriv *) file->priv)->image = image;
	((ReaderPriv *) file->priv)->image_len = image_len;
	((ReaderPriv *) file->priv)->given = given;
	if (file->source.size >= FILE_HEADER_LEN &&
		arrow_read_bytes(file, 0, head, FILE_HEADER_LEN, err) != ARROW_OK)
		rc = err->code;
	else if (file->source.size >= FILE_HEADER_LEN && memcmp(head, MAGIC, MAGIC_LEN) == 0)
		rc = read_file_format(file, err);
	else
	{
		file->is_stream = true;
		rc = read_stream_format(file, err);
	}
	if (rc != ARROW_OK)
	{
		arrow_file_close(file);
		return rc;
	}
	else
	{
		/* the buffers of opening are not kept with the file */
		ReaderPriv *priv = file->priv;

		arrow_free(alloc, priv->msg_buf);
		arrow_free(alloc, priv->scratch);
		priv->msg_buf = priv->scratch = NULL;
		priv->msg_cap = priv->scratch_cap = 0;
		priv->image = NULL;		/* the caller's */
		priv->image_len = 0;
		priv->given = NULL;
	}
	*out = file;
	return ARROW_OK;
}

/* See arrow.h; the source is copied into the ArrowFile */
int
arrow_file_open_source(const ArrowSource *src, const ArrowAllocator *alloc,
					   ArrowFile **out, ArrowError *err)
{
	bool		used;

	return arrow_file_open_image(src, alloc, NULL, 0, out, &used, err);
}

/*
 * arrow_file_open_image and arrow_file_open_flat: *src opened with the
 * batches of image or given where they hold (*used)
 */
static int
source_open(const ArrowSource *src, const ArrowAllocator *alloc, const void *image,
			uint64_t image_len, const ArrowFlatBatches *given, ArrowFile **out, bool *used,
			ArrowError *err)
{
	ArrowError	local;
	int			rc;

	if (err == NULL)
		err = &local;
	*used = false;
	if (out == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no output pointer");
	*out = NULL;
	if (src == NULL || src->read_at == NULL || src->size < 0)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid source");
	rc = file_open(src, -1, 0, image, image_len, given, alloc, out, err);
	if (rc == ARROW_OK)
	{
		const ReaderPriv *priv = (*out)->priv;

		*used = given != NULL ? priv->batches_borrowed : priv->image_block != NULL;
	}
	return rc;
}

/* See arrow.h */
int
arrow_file_open_image(const ArrowSource *src, const ArrowAllocator *alloc, const void *image,
					  uint64_t image_len, ArrowFile **out, bool *used, ArrowError *err)
{
	return source_open(src, alloc, image, image_len, NULL, out, used, err);
}

/* See arrow.h */
int
arrow_file_open_flat(const ArrowSource *src, const ArrowAllocator *alloc,
					 const ArrowFlatBatches *given, ArrowFile **out, bool *used, ArrowError *err)
{
	return source_open(src, alloc, NULL, 0, given, out, used, err);
}

/* See arrow.h; the file descriptor is read with pread and closed on close */
int
arrow_file_open(const char *path, const ArrowAllocator *alloc,
				ArrowFile **out, ArrowError *err)
{
	struct stat st;
	int			fd;
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (out == NULL || path == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no path or output pointer");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return arrow_set_error(err, ARROW_ERR_IO, "could not open file: %s", strerror(errno));
	if (fstat(fd, &st) != 0)
	{
		int			e = errno;

		close(fd);
		errno = e;
		return arrow_set_error(err, ARROW_ERR_IO, "could not stat file: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode))
	{
		close(fd);
		return arrow_set_error(err, ARROW_ERR_INVALID, "not a regular file");
	}
	return file_open(NULL, fd, (int64_t) st.st_size, NULL, 0, NULL, alloc, out, err);
}

/*
 * See arrow.h.  With room for fewer extents than the column has buffers
 * (file->columns[column].n_buffers) it fails with ARROW_ERR_ARGUMENT rather
 * than return a partial list.
 */
int
arrow_column_extents(const ArrowFile *file, int32_t batch, int32_t column,
					 ArrowExtent *extents, int max_extents, ArrowError *err)
{
	const ArrowColumnLayout *c;
	const ArrowBatchInfo *info;
	int32_t		first;
	int32_t		n;

	if (file == NULL || batch < 0 || batch >= file->n_batches ||
		column < 0 || column >= file->schema.n_fields)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "no record batch %d or column %d", batch, column);
		return -1;
	}
	c = &file->columns[column];
	info = &file->batches[batch];
	first = c->first_buffer;
	n = c->n_buffers;
	if (info->column_first_buffer != NULL)
	{
		/* view fields: this batch's own counts */
		first = info->column_first_buffer[column];
		n = info->column_first_buffer[column + 1] - first;
	}
	if (n > max_extents)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "column %d has %d buffers, room for %d extents",
						column, n, max_extents);
		return -1;
	}
	for (int32_t i = 0; i < n; i++)
	{
		const ArrowBufferRef *b = &info->buffers[first + i];

		extents[i].offset = info->body_offset + b->offset;
		extents[i].length = b->length;
	}
	return n;
}
