/*-------------------------------------------------------------------------
 *
 * arrow_read_image.c
 *		The metadata of a file's record batches as one flat image, which a
 *		later open of the same file takes instead of reading and parsing a
 *		message per batch (arrow_file_batches_image, arrow_file_open_image).
 *
 * A file of a thousand 8 MB batches is a thousand messages to read and
 * parse: 5-8 ms on the dev VM, 10-16 ms of a new session's planning on the
 * GPU host (bench/results/README.md).  The image holds what parsing them
 * gave (ArrowBatchInfo: the body's place, the rows, the codec, the nodes,
 * the buffers, the custom metadata), and taking it is one allocation and a
 * pass over it.  It is checked as the messages would have been: each batch
 * against its footer block (where the message and its body are), against
 * the schema (the counts of nodes and buffers, each top-level node's length),
 * every buffer inside its body, every string free of NUL; the hint that a
 * batch's metadata keys are unique is computed again, not taken.  An image
 * that fails a check is not used: the messages are read as without one.
 * A file with view columns (variadic buffers) has no image.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_reader.h"
#include "arrow_types.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define IMAGE_MAGIC		"pgwarpB1"	/* 8 bytes: the format's first version */

typedef struct ImageHead
{
	char		magic[8];
	uint32_t	n_batches;
	int32_t		n_fields;
	int32_t		metadata_version;	/* ArrowFile's: the footer's and messages' lowest */
	int32_t		pad;
	uint64_t	len;			/* the whole image */
} ImageHead;

typedef struct ImageBatch
{
	int64_t		message_offset;
	int64_t		body_offset;
	int64_t		body_length;
	int64_t		n_rows;
	int32_t		codec;
	int32_t		n_nodes;
	int32_t		n_buffers;
	int32_t		n_meta;
	/* then n_nodes ArrowNode, n_buffers ArrowBufferRef, n_meta pairs of
	 * uint32 lengths (key, value), then the keys' and values' bytes, padded
	 * to 8 */
} ImageBatch;

#define PAD8(x)		(((x) + 7) & ~(uint64_t) 7)

/* the image bytes of batch b (0: one it cannot hold) */
static uint64_t
image_batch_len(const ArrowBatchInfo *b)
{
	uint64_t	len = sizeof(ImageBatch) + sizeof(ArrowNode) * (uint64_t) b->n_nodes +
		sizeof(ArrowBufferRef) * (uint64_t) b->n_buffers + 8 * (uint64_t) b->metadata.count;
	uint64_t	text = 0;

	if (b->n_variadic > 0 || b->column_first_buffer != NULL)
		return 0;
	for (int32_t i = 0; i < b->metadata.count; i++)
		text += strlen(b->metadata.items[i].key) + strlen(b->metadata.items[i].value);
	return len + PAD8(text);
}

/* see arrow.h */
int
arrow_file_batches_image(const ArrowFile *file, const ArrowAllocator *alloc, void **out,
						 uint64_t *len, ArrowError *err)
{
	uint64_t	total = sizeof(ImageHead);
	uint8_t    *p;
	ImageHead	h;

	*out = NULL;
	*len = 0;
	if (file->is_stream)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "a stream has no footer to check an image against");
	for (int32_t i = 0; i < file->n_batches; i++)
	{
		uint64_t	n = image_batch_len(&file->batches[i]);

		if (n == 0)
			return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
								   "record batch %d has view buffers, which an image does not hold", i);
		total += n;
	}
	/* zeroed: the padding after each batch's strings is written as zeros */
	if ((p = arrow_calloc(alloc, 1, total, err)) == NULL)
		return ARROW_ERR_NOMEM;
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, IMAGE_MAGIC, 8);
	h.n_batches = (uint32_t) file->n_batches;
	h.n_fields = file->schema.n_fields;
	h.metadata_version = file->metadata_version;
	h.len = total;
	memcpy(p, &h, sizeof(h));
	*out = p;
	*len = total;
	p += sizeof(h);
	for (int32_t i = 0; i < file->n_batches; i++)
	{
		const ArrowBatchInfo *b = &file->batches[i];
		ImageBatch	ib;
		uint8_t    *text;

		memset(&ib, 0, sizeof(ib));
		ib.message_offset = b->message_offset;
		ib.body_offset = b->body_offset;
		ib.body_length = b->body_length;
		ib.n_rows = b->n_rows;
		ib.codec = (int32_t) b->codec;
		ib.n_nodes = b->n_nodes;
		ib.n_buffers = b->n_buffers;
		ib.n_meta = b->metadata.count;
		memcpy(p, &ib, sizeof(ib));
		p += sizeof(ib);
		if (b->n_nodes > 0)
			memcpy(p, b->nodes, sizeof(ArrowNode) * b->n_nodes);
		p += sizeof(ArrowNode) * b->n_nodes;
		if (b->n_buffers > 0)
			memcpy(p, b->buffers, sizeof(ArrowBufferRef) * b->n_buffers);
		p += sizeof(ArrowBufferRef) * b->n_buffers;
		text = p + 8 * (uint64_t) b->metadata.count;
		for (int32_t k = 0; k < b->metadata.count; k++)
		{
			uint32_t	kl = (uint32_t) strlen(b->metadata.items[k].key);
			uint32_t	vl = (uint32_t) strlen(b->metadata.items[k].value);

			memcpy(p + 8 * k, &kl, 4);
			memcpy(p + 8 * k + 4, &vl, 4);
			memcpy(text, b->metadata.items[k].key, kl);
			memcpy(text + kl, b->metadata.items[k].value, vl);
			text += kl + vl;
		}
		p += image_batch_len(b) - sizeof(ib) - sizeof(ArrowNode) * b->n_nodes -
			sizeof(ArrowBufferRef) * b->n_buffers;
	}
	return ARROW_OK;
}

/* the image's bytes [*pos, *pos + n) into dst, if it has them */
static bool
take(const uint8_t *image, uint64_t len, uint64_t *pos, void *dst, uint64_t n)
{
	if (*pos > len || n > len - *pos)
		return false;
	memcpy(dst, image + *pos, n);
	*pos += n;
	return true;
}

/*
 * Batches' strings are short (statistics keys and values of a few to a few
 * dozen bytes, tens of them a batch): byte loops, not a library call or
 * three per string (memchr, memcpy, strncmp were a fifth of a new
 * session's open of a file of a thousand batches on the development VM).
 */

/* the n bytes at src as a C string at dst; false where they hold a NUL */
static inline bool
copy_string(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
	{
		if (src[j] == '\0')
			return false;
		dst[j] = src[j];
	}
	dst[n] = '\0';
	return true;
}

/* is C string s the n bytes at b (which then hold no NUL) */
static inline bool
same_string(const char *s, const uint8_t *b, uint32_t n)
{
	for (uint32_t j = 0; j < n; j++)
		if (s[j] == '\0' || (uint8_t) s[j] != b[j])
			return false;
	return s[n] == '\0';
}

/*
 * one batch of the image at *pos checked against footer block `block` and
 * the schema (want_nodes, want_buffers), into *info whose arrays and
 * strings go to *room (enough, counted by the first pass: room_end); a
 * metadata key that prev's (the batch before; NULL: none) has at the same
 * place is prev's string
 */
static bool
image_batch(ArrowFile *file, const uint8_t *image, uint64_t len, uint64_t *pos,
			const uint8_t *block, int32_t want_nodes, int32_t want_buffers,
			const ArrowBatchInfo *prev, ArrowBatchInfo *info, uint8_t **room,
			const uint8_t *room_end)
{
	int64_t		offset = (int64_t) fb_le64(block);
	int32_t		meta_len = (int32_t) fb_le32(block + 8);
	int64_t		body_len = (int64_t) fb_le64(block + 16);
	ImageBatch	ib;
	uint64_t	text_len = 0;
	uint64_t	lens_at;
	int32_t		node = 0;
	int32_t		n_same = 0;		/* keys that are prev's at the same place */
	const uint8_t *key;

	memset(info, 0, sizeof(*info));
	if (!take(image, len, pos, &ib, sizeof(ib)) ||
		meta_len <= 0 || body_len < 0 || offset < FILE_HEADER_LEN ||
		!arrow_range_inside(offset, meta_len, file->source.size) ||
		!arrow_range_inside(offset + meta_len, body_len, file->source.size) ||
		ib.message_offset != offset || ib.body_offset != offset + meta_len ||
		ib.body_length != body_len || ib.n_rows < 0 ||
		(ib.codec != ARROW_CODEC_NONE && ib.codec != ARROW_CODEC_LZ4_FRAME &&
		 ib.codec != ARROW_CODEC_ZSTD) ||
		ib.n_nodes != want_nodes || ib.n_buffers != want_buffers || ib.n_meta < 0)
		return false;
	info->message_offset = ib.message_offset;
	info->body_offset = ib.body_offset;
	info->body_length = ib.body_length;
	info->n_rows = ib.n_rows;
	info->codec = (ArrowCodec) ib.codec;
	info->n_nodes = ib.n_nodes;
	info->n_buffers = ib.n_buffers;
	info->nodes = (ArrowNode *) *room;
	*room += sizeof(ArrowNode) * ib.n_nodes;
	info->buffers = (ArrowBufferRef *) *room;
	*room += sizeof(ArrowBufferRef) * ib.n_buffers;
	info->metadata.items = (ArrowKeyValue *) *room;
	*room += sizeof(ArrowKeyValue) * ib.n_meta;
	if (*room > room_end ||
		!take(image, len, pos, info->nodes, sizeof(ArrowNode) * ib.n_nodes) ||
		!take(image, len, pos, info->buffers, sizeof(ArrowBufferRef) * ib.n_buffers))
		return false;
	for (int32_t i = 0; i < ib.n_nodes; i++)
	{
		const ArrowNode *n = &info->nodes[i];

		if (n->length < 0 || n->null_count < 0 || n->null_count > n->length)
			return false;
	}
	for (int32_t i = 0; i < ib.n_buffers; i++)
		if (!arrow_range_inside(info->buffers[i].offset, info->buffers[i].length, ib.body_length))
			return false;
	/* every top-level array has the batch's length */
	for (int32_t i = 0; i < file->schema.n_fields; i++)
	{
		int32_t		n = 0;
		int32_t		b = 0;

		if (node >= ib.n_nodes || info->nodes[node].length != ib.n_rows)
			return false;
		arrow_count_layout(&file->schema.fields[i], &n, &b);
		node += n;
	}
	/* the metadata: its lengths, then its strings, each made a C string */
	lens_at = *pos;
	if ((uint64_t) ib.n_meta > (len - *pos) / 8)
		return false;
	*pos += 8 * (uint64_t) ib.n_meta;
	for (int32_t i = 0; i < ib.n_meta; i++)
	{
		uint32_t	kl;
		uint32_t	vl;

		memcpy(&kl, image + lens_at + 8 * i, 4);
		memcpy(&vl, image + lens_at + 8 * i + 4, 4);
		if ((uint64_t) kl + vl > len - *pos - text_len ||
			*room + kl + vl + 2 > room_end)
			return false;
		key = image + *pos + text_len;
		if (prev != NULL && i < prev->metadata.count &&
			same_string(prev->metadata.items[i].key, key, kl))
		{
			/* the key of the batch before (batches' keys repeat): that string */
			info->metadata.items[i].key = prev->metadata.items[i].key;
			n_same++;
		}
		else
		{
			if (!copy_string(*room, key, kl))
				return false;
			info->metadata.items[i].key = (char *) *room;
			*room += kl + 1;
		}
		if (!copy_string(*room, key + kl, vl))
			return false;
		info->metadata.items[i].value = (char *) *room;
		*room += vl + 1;
		text_len += (uint64_t) kl + vl;
	}
	info->metadata.count = ib.n_meta;
	/* the keys of the batch before, in its order: as unique as they were there */
	info->metadata.unique = prev != NULL && n_same == ib.n_meta &&
		n_same == prev->metadata.count ? prev->metadata.unique :
		arrow_metadata_keys_unique(&info->metadata);
	*room = (uint8_t *) PAD8((uintptr_t) *room);
	if (PAD8(text_len) > len - *pos)
		return false;
	*pos += PAD8(text_len);
	return true;
}

/*
 * the bytes image's batches take as ArrowBatchInfo arrays and C strings
 * (image_batch's room), 0 where the image is cut short
 */
static uint64_t
image_room(const uint8_t *image, uint64_t len, uint32_t n_batches)
{
	uint64_t	pos = sizeof(ImageHead);
	uint64_t	room = 8;

	for (uint32_t i = 0; i < n_batches; i++)
	{
		ImageBatch	ib;
		uint64_t	text = 0;

		if (!take(image, len, &pos, &ib, sizeof(ib)) || ib.n_nodes < 0 || ib.n_buffers < 0 ||
			ib.n_meta < 0 ||
			(uint64_t) ib.n_nodes + ib.n_buffers + ib.n_meta > (len - pos) / 8)
			return 0;
		pos += sizeof(ArrowNode) * (uint64_t) ib.n_nodes +
			sizeof(ArrowBufferRef) * (uint64_t) ib.n_buffers;
		if (pos > len || (uint64_t) ib.n_meta > (len - pos) / 8)
			return 0;
		for (int32_t k = 0; k < ib.n_meta; k++)
		{
			uint32_t	kl;
			uint32_t	vl;

			memcpy(&kl, image + pos + 8 * k, 4);
			memcpy(&vl, image + pos + 8 * k + 4, 4);
			text += (uint64_t) kl + vl;
		}
		pos += 8 * (uint64_t) ib.n_meta;
		if (PAD8(text) > len - pos)
			return 0;
		pos += PAD8(text);
		room += sizeof(ArrowNode) * (uint64_t) ib.n_nodes +
			sizeof(ArrowBufferRef) * (uint64_t) ib.n_buffers +
			sizeof(ArrowKeyValue) * (uint64_t) ib.n_meta + PAD8(text + 2 * (uint64_t) ib.n_meta);
	}
	return room;
}

#define ROOM_HUGE_PAGE	((uint64_t) 2 << 20)	/* x86-64's transparent huge page */

/*
 * room_len bytes for the batches' arrays and strings (image_batch's room),
 * *block the allocation to free.  A new session's first open of a file of a
 * thousand batches takes about 2 MB of fresh memory here, and each 4 kB
 * page of it is a fault on first touch: on the development VM (a
 * Firecracker guest, as the GPU hosts are) 2 MB faulted page by page took
 * 0.9-1.1 ms, as one transparent huge page 0.1 ms.  So a room of a huge page or
 * more starts at a huge-page boundary of an allocation one huge page
 * longer (the rest is never touched: address space, not memory) and its
 * whole huge pages are advised MADV_HUGEPAGE; where the kernel gives none
 * (THP "never", no huge page free) they are ordinary pages, as before.
 * (With THP's defrag "madvise", the common default, a fault there may first
 * compact memory to make a huge page; that is what the advice asks for.)
 */
static uint8_t *
image_room_alloc(const ArrowFile *file, uint64_t room_len, uint8_t **block, ArrowError *err)
{
#ifdef MADV_HUGEPAGE
	if (room_len >= ROOM_HUGE_PAGE)
	{
		uint8_t    *room;

		if ((*block = arrow_malloc(file->alloc, room_len + ROOM_HUGE_PAGE, err)) == NULL)
			return NULL;
		room = (uint8_t *) (((uintptr_t) *block + ROOM_HUGE_PAGE - 1) & ~(uintptr_t) (ROOM_HUGE_PAGE - 1));
		(void) madvise(room, room_len & ~(ROOM_HUGE_PAGE - 1), MADV_HUGEPAGE);
		return room;
	}
#endif
	*block = arrow_malloc(file->alloc, room_len, err);
	return *block;
}

/*
 * arrow_batches_from_image: file's record batches (footer blocks `blocks`)
 * from the image the reader was given (ReaderPriv.image), every batch
 * checked; false (nothing taken) where it does not match
 */
bool
arrow_batches_from_image(ArrowFile *file, const FbVector *blocks)
{
	ReaderPriv *priv = file->priv;
	const uint8_t *image = priv->image;
	uint64_t	len = priv->image_len;
	uint64_t	pos = sizeof(ImageHead);
	uint64_t	room_len;
	int32_t		want_nodes = 0;
	int32_t		want_buffers = 0;
	uint8_t    *room;
	uint8_t    *room_start;
	uint8_t    *block;
	ImageHead	h;
	ArrowError	err;

	if (image == NULL || len < sizeof(h))
		return false;
	memcpy(&h, image, sizeof(h));
	for (int32_t i = 0; i < file->schema.n_fields; i++)
		arrow_count_layout(&file->schema.fields[i], &want_nodes, &want_buffers);
	if (memcmp(h.magic, IMAGE_MAGIC, 8) != 0 || h.len != len || h.n_batches != blocks->length ||
		h.n_fields != file->schema.n_fields || file->n_batches != 0 ||
		h.metadata_version > file->metadata_version || h.metadata_version < 4 ||
		arrow_schema_has_views(&file->schema))
		return false;
	if ((room_len = image_room(image, len, h.n_batches)) == 0 ||
		(room_start = image_room_alloc(file, room_len, &block, &err)) == NULL)
		return false;
	room = room_start;
	if (arrow_reserve_batches(file, (int32_t) h.n_batches, &err) != ARROW_OK)
	{
		arrow_free(file->alloc, block);
		return false;
	}
	for (uint32_t i = 0; i < h.n_batches; i++)
	{
		ArrowBatchInfo info;

		if (!image_batch(file, image, len, &pos, fb_vector_elem(blocks, i), want_nodes,
						 want_buffers, i > 0 ? &file->batches[i - 1] : NULL, &info, &room,
						 room_start + room_len) ||
			arrow_add_batch(file, &info, &err) != ARROW_OK)
		{
			/* as if never taken: the batches point into block */
			file->n_batches = 0;
			file->total_rows = 0;
			arrow_free(file->alloc, block);
			return false;
		}
	}
	if (pos != len)
	{
		file->n_batches = 0;
		file->total_rows = 0;
		arrow_free(file->alloc, block);
		return false;
	}
	if (h.metadata_version < file->metadata_version)
		file->metadata_version = h.metadata_version;
	/* the batches' arrays are block's, freed with the file */
	priv->image_block = block;
	priv->n_borrowed = file->n_batches;
	return true;
}

/* ---------------- batches laid out flat (arrow.h) ---------------- */

/*
 * A backend of a PostgreSQL cluster that opens a large file for the first
 * time takes its batches from its image (above): a pass over every batch
 * and fresh memory for their arrays, 1-3 ms of a new session's planning
 * over a file of a thousand batches.  Laid out flat in memory that every
 * process of the cluster maps at the same address, the batches of one
 * open serve the opens of every later session as they lie.
 */

/* the bytes of batch b's arrays and strings laid out flat */
static uint64_t
flat_batch_len(const ArrowBatchInfo *b)
{
	uint64_t	len = PAD8(sizeof(ArrowNode) * (uint64_t) b->n_nodes) +
		PAD8(sizeof(ArrowBufferRef) * (uint64_t) b->n_buffers) +
		PAD8(sizeof(ArrowKeyValue) * (uint64_t) b->metadata.count);
	uint64_t	text = 0;

	for (int32_t k = 0; k < b->metadata.count; k++)
		text += strlen(b->metadata.items[k].key) + strlen(b->metadata.items[k].value) + 2;
	return len + PAD8(text);
}

/* see arrow.h */
uint64_t
arrow_batches_flat_len(const ArrowFile *file)
{
	uint64_t	len;

	if (file->is_stream || file->n_batches <= 0 || file->n_dictionaries > 0 ||
		arrow_schema_has_views(&file->schema))
		return 0;
	len = PAD8(sizeof(ArrowBatchInfo) * (uint64_t) file->n_batches) +
		PAD8(sizeof(int32_t) * (uint64_t) file->n_batches);
	for (int32_t i = 0; i < file->n_batches; i++)
	{
		const ArrowBatchInfo *b = &file->batches[i];

		if (b->n_variadic > 0 || b->column_first_buffer != NULL)
			return 0;
		len += flat_batch_len(b);
	}
	return len;
}

/* the n bytes at src to *pos of dst; their place, NULL for none */
static void *
flat_put(uint8_t *dst, uint64_t *pos, const void *src, uint64_t n)
{
	void	   *at = dst + *pos;

	if (n == 0)
		return NULL;
	memcpy(at, src, n);
	*pos += PAD8(n);
	return at;
}

/* see arrow.h */
const ArrowBatchInfo *
arrow_batches_flat_copy(const ArrowFile *file, void *dst, uint64_t len)
{
	uint8_t    *d = dst;
	ArrowBatchInfo *out = dst;
	uint64_t	pos;

	if (len == 0 || ((uintptr_t) dst & 7) != 0 || len != arrow_batches_flat_len(file))
		return NULL;
	pos = PAD8(sizeof(ArrowBatchInfo) * (uint64_t) file->n_batches);
	/* every batch sees every dictionary: there are none */
	memset(d + pos, 0, sizeof(int32_t) * (uint64_t) file->n_batches);
	pos += PAD8(sizeof(int32_t) * (uint64_t) file->n_batches);
	for (int32_t i = 0; i < file->n_batches; i++)
	{
		const ArrowBatchInfo *b = &file->batches[i];
		ArrowBatchInfo *o = &out[i];
		ArrowKeyValue *items;
		uint64_t	text;

		*o = *b;				/* no view arrays (arrow_batches_flat_len) */
		o->packed = NULL;
		o->nodes = flat_put(d, &pos, b->nodes, sizeof(ArrowNode) * (uint64_t) b->n_nodes);
		o->buffers = flat_put(d, &pos, b->buffers, sizeof(ArrowBufferRef) * (uint64_t) b->n_buffers);
		items = (ArrowKeyValue *) (d + pos);
		o->metadata.items = b->metadata.count > 0 ? items : NULL;
		pos += PAD8(sizeof(ArrowKeyValue) * (uint64_t) b->metadata.count);
		text = pos;
		for (int32_t k = 0; k < b->metadata.count; k++)
		{
			size_t		kl = strlen(b->metadata.items[k].key) + 1;
			size_t		vl = strlen(b->metadata.items[k].value) + 1;

			items[k].key = memcpy(d + text, b->metadata.items[k].key, kl);
			text += kl;
			items[k].value = memcpy(d + text, b->metadata.items[k].value, vl);
			text += vl;
		}
		pos = PAD8(text);
	}
	return pos == len ? out : NULL;
}

/*
 * arrow_batches_given: file's record batches (footer blocks `blocks`) as
 * they lie in the flat layout the reader was given (ReaderPriv.given),
 * each checked against its block and the schema; false (nothing taken)
 * where they do not match
 */
bool
arrow_batches_given(ArrowFile *file, const FbVector *blocks)
{
	ReaderPriv *priv = file->priv;
	const ArrowFlatBatches *g = priv->given;
	int32_t		want_nodes = 0;
	int32_t		want_buffers = 0;
	int64_t		total = 0;

	if (g == NULL || g->batches == NULL || g->n_batches <= 0 ||
		(uint32_t) g->n_batches != blocks->length || file->n_batches != 0 ||
		file->n_dictionaries != 0 || g->metadata_version < 4 ||
		g->metadata_version > file->metadata_version || arrow_schema_has_views(&file->schema))
		return false;
	for (int32_t i = 0; i < file->schema.n_fields; i++)
		arrow_count_layout(&file->schema.fields[i], &want_nodes, &want_buffers);
	for (int32_t i = 0; i < g->n_batches; i++)
	{
		const uint8_t *block = fb_vector_elem(blocks, i);
		int64_t		offset = (int64_t) fb_le64(block);
		int32_t		meta_len = (int32_t) fb_le32(block + 8);
		int64_t		body_len = (int64_t) fb_le64(block + 16);
		const ArrowBatchInfo *b = &g->batches[i];

		if (b->message_offset != offset || b->body_offset != offset + meta_len ||
			b->body_length != body_len || b->n_nodes != want_nodes ||
			b->n_buffers != want_buffers || b->n_variadic != 0 ||
			b->column_first_buffer != NULL || b->n_rows < 0 ||
			arrow_add_overflow(total, b->n_rows, &total))
			return false;
	}
	file->batches = (ArrowBatchInfo *) g->batches;
	priv->visible_dicts = (int32_t *) ((const uint8_t *) g->batches +
									   PAD8(sizeof(ArrowBatchInfo) * (uint64_t) g->n_batches));
	priv->batches_borrowed = true;
	file->n_batches = priv->n_borrowed = g->n_batches;
	file->total_rows = total;
	file->metadata_version = g->metadata_version;
	return true;
}
