/*-------------------------------------------------------------------------
 *
 * fb_build.c
 *		Flatbuffer builder used by the Arrow writer to encode Message and
 *		Footer tables.  See fb_build.h for the model (back-to-front building,
 *		sticky errors).
 *
 * Binary layout produced (flatbuffers format, little-endian):
 *	- a table starts with an int32 soffset: table position minus the
 *	  position of its vtable (our vtables always precede their table);
 *	- a vtable is uint16 entries: vtable size in bytes, table size in bytes
 *	  (soffset included), then one entry per field id: the field's offset
 *	  from the table start, 0 when the field is absent;
 *	- a uoffset (uint32) points forward: target = its own position + value;
 *	- strings and vectors start with a uint32 element count; strings carry a
 *	  trailing NUL that the count excludes.
 *
 *-------------------------------------------------------------------------
 */
#include "fb_build.h"

#include <string.h>

/* Keeps the finished buffer (and a message prefix) below 2 GiB */
#define FB_MAX_SIZE		((size_t) INT32_MAX - 64)

void
fb_builder_init(FbBuilder *b, const ArrowAllocator *alloc)
{
	memset(b, 0, sizeof(FbBuilder));
	b->alloc = arrow_alloc_or_default(alloc);
	b->minalign = 1;
	b->max_id = -1;
}

void
fb_builder_reset(FbBuilder *b)
{
	b->size = 0;
	b->minalign = 1;
	b->in_table = false;
	b->max_id = -1;
	b->error = ARROW_OK;
}

void
fb_builder_free(FbBuilder *b)
{
	arrow_free(b->alloc, b->buf);
	b->buf = NULL;
	b->cap = 0;
	b->size = 0;
}

/* Records the first error; later calls see b->error and do nothing. */
void
fb_builder_fail(FbBuilder *b, ArrowErrorCode code, const char *what)
{
	if (b->error == ARROW_OK)
		b->error = arrow_set_error(&b->err, code, "flatbuffer builder: %s", what);
}

/* Makes room for n more bytes in front of the data */
static bool
fb_reserve(FbBuilder *b, size_t n)
{
	size_t		newcap;
	uint8_t    *nbuf;

	if (b->error != ARROW_OK)
		return false;
	if (n > FB_MAX_SIZE - b->size)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "metadata larger than 2 GiB");
		return false;
	}
	if (b->cap - b->size >= n)
		return true;
	newcap = b->cap ? b->cap : 256;
	while (newcap - b->size < n)
		newcap *= 2;
	nbuf = arrow_malloc(b->alloc, newcap, &b->err);
	if (nbuf == NULL)
	{
		b->error = ARROW_ERR_NOMEM;
		return false;
	}
	if (b->size > 0)
		memcpy(nbuf + newcap - b->size, b->buf + b->cap - b->size, b->size);
	arrow_free(b->alloc, b->buf);
	b->buf = nbuf;
	b->cap = newcap;
	return true;
}

/* Puts n bytes in front of the data (zeros when src is NULL) */
static bool
fb_push(FbBuilder *b, const void *src, size_t n)
{
	if (n == 0)
		return b->error == ARROW_OK;
	if (!fb_reserve(b, n))
		return false;
	b->size += n;
	if (src != NULL)
		memcpy(b->buf + b->cap - b->size, src, n);
	else
		memset(b->buf + b->cap - b->size, 0, n);
	return true;
}

/*
 * Pads so that after 'additional' more bytes the size is a multiple of
 * align (a power of two), and remembers align for fb_finish.
 */
static bool
fb_prep(FbBuilder *b, size_t align, size_t additional)
{
	size_t		pad;

	if (align > b->minalign)
		b->minalign = align;
	pad = (~(b->size + additional) + 1) & (align - 1);
	return fb_push(b, NULL, pad);
}

static bool
fb_push_le32(FbBuilder *b, uint32_t v)
{
	uint8_t		le[4];

	fb_put_le32(le, v);
	return fb_push(b, le, 4);
}

/* The uoffset value to store at the next 4 bytes pushed, pointing at ref */
static bool
fb_check_ref(FbBuilder *b, FbRef ref)
{
	if (ref == 0 || ref > b->size)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "reference to an object not yet built");
		return false;
	}
	return true;
}

static bool
fb_not_in_table(FbBuilder *b)
{
	if (b->in_table)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "object created inside an open table");
		return false;
	}
	return b->error == ARROW_OK;
}

FbRef
fb_create_string(FbBuilder *b, const char *s, size_t len)
{
	if (!fb_not_in_table(b))
		return 0;
	if (len > FB_MAX_SIZE)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "string larger than 2 GiB");
		return 0;
	}
	if (!fb_prep(b, 4, len + 1) ||
		!fb_push(b, NULL, 1) ||
		!fb_push(b, s, len) ||
		!fb_push_le32(b, (uint32_t) len))
		return 0;
	return (FbRef) b->size;
}

FbRef
fb_create_vector(FbBuilder *b, const void *data, size_t n, size_t elem_size,
				 size_t align)
{
	size_t		bytes;

	if (!fb_not_in_table(b))
		return 0;
	if (__builtin_mul_overflow(n, elem_size, &bytes) || bytes > FB_MAX_SIZE)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "vector larger than 2 GiB");
		return 0;
	}
	if (!fb_prep(b, align > 4 ? align : 4, bytes) ||
		!fb_push(b, data, bytes) ||
		!fb_push_le32(b, (uint32_t) n))
		return 0;
	return (FbRef) b->size;
}

FbRef
fb_create_offset_vector(FbBuilder *b, const FbRef *refs, size_t n)
{
	if (!fb_not_in_table(b))
		return 0;
	if (n > FB_MAX_SIZE / 4)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "vector larger than 2 GiB");
		return 0;
	}
	if (!fb_prep(b, 4, 4 * n))
		return 0;
	for (size_t i = n; i-- > 0;)
	{
		if (!fb_check_ref(b, refs[i]) ||
			!fb_push_le32(b, (uint32_t) (b->size + 4 - refs[i])))
			return 0;
	}
	if (!fb_push_le32(b, (uint32_t) n))
		return 0;
	return (FbRef) b->size;
}

void
fb_table_start(FbBuilder *b)
{
	if (!fb_not_in_table(b))
		return;
	b->in_table = true;
	b->table_begin = b->size;
	b->max_id = -1;
	memset(b->field_pos, 0, sizeof(b->field_pos));
}

/* Checks that a field id can be added to the open table */
static bool
fb_field_ok(FbBuilder *b, int id)
{
	if (b->error != ARROW_OK)
		return false;
	if (!b->in_table)
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "field added outside a table");
	else if (id < 0 || id >= FB_MAX_FIELDS)
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "field id out of range");
	else if (b->field_pos[id] != 0)
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "field added twice");
	return b->error == ARROW_OK;
}

/* Adds a field whose value is the given little-endian bytes */
static void
fb_add_bytes(FbBuilder *b, int id, const void *le, size_t size, size_t align)
{
	if (!fb_field_ok(b, id) ||
		!fb_prep(b, align, size) ||
		!fb_push(b, le, size))
		return;
	b->field_pos[id] = b->size;
	if (id > b->max_id)
		b->max_id = id;
}

void
fb_add_bool(FbBuilder *b, int id, bool v)
{
	fb_add_uint8(b, id, v ? 1 : 0);
}

void
fb_add_uint8(FbBuilder *b, int id, uint8_t v)
{
	fb_add_bytes(b, id, &v, 1, 1);
}

void
fb_add_int16(FbBuilder *b, int id, int16_t v)
{
	uint8_t		le[2] = {(uint8_t) v, (uint8_t) ((uint16_t) v >> 8)};

	fb_add_bytes(b, id, le, 2, 2);
}

void
fb_add_int32(FbBuilder *b, int id, int32_t v)
{
	uint8_t		le[4];

	fb_put_le32(le, (uint32_t) v);
	fb_add_bytes(b, id, le, 4, 4);
}

void
fb_add_int64(FbBuilder *b, int id, int64_t v)
{
	uint8_t		le[8];

	fb_put_le64(le, (uint64_t) v);
	fb_add_bytes(b, id, le, 8, 8);
}

void
fb_add_struct(FbBuilder *b, int id, const void *data, size_t size, size_t align)
{
	fb_add_bytes(b, id, data, size, align);
}

void
fb_add_offset(FbBuilder *b, int id, FbRef ref)
{
	if (ref == 0)
		return;
	if (!fb_field_ok(b, id) ||
		!fb_check_ref(b, ref) ||
		!fb_prep(b, 4, 4) ||
		!fb_push_le32(b, (uint32_t) (b->size + 4 - ref)))
		return;
	b->field_pos[id] = b->size;
	if (id > b->max_id)
		b->max_id = id;
}

void
fb_add_union(FbBuilder *b, int type_id, uint8_t type, FbRef value)
{
	fb_add_uint8(b, type_id, type);
	fb_add_offset(b, type_id + 1, value);
}

FbRef
fb_table_end(FbBuilder *b)
{
	uint8_t		vt[2 * (FB_MAX_FIELDS + 2)];
	size_t		table_pos;
	size_t		table_size;
	size_t		n;

	if (b->error != ARROW_OK)
		return 0;
	if (!b->in_table)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "table ended without being started");
		return 0;
	}
	/* the soffset to the vtable, patched below */
	if (!fb_prep(b, 4, 4) || !fb_push(b, NULL, 4))
		return 0;
	table_pos = b->size;
	table_size = table_pos - b->table_begin;
	if (table_size > UINT16_MAX)
	{
		fb_builder_fail(b, ARROW_ERR_ARGUMENT, "table larger than 64 KiB");
		return 0;
	}
	n = (size_t) (b->max_id + 1);
	vt[0] = (uint8_t) (4 + 2 * n);
	vt[1] = 0;
	vt[2] = (uint8_t) table_size;
	vt[3] = (uint8_t) (table_size >> 8);
	for (size_t i = 0; i < n; i++)
	{
		size_t		off = b->field_pos[i] ? table_pos - b->field_pos[i] : 0;

		vt[4 + 2 * i] = (uint8_t) off;
		vt[5 + 2 * i] = (uint8_t) (off >> 8);
	}
	/* the table size is a multiple of 4 here: the vtable needs no padding */
	if (!fb_prep(b, 2, 4 + 2 * n) || !fb_push(b, vt, 4 + 2 * n))
		return 0;
	fb_put_le32(b->buf + b->cap - table_pos, (uint32_t) (b->size - table_pos));
	b->in_table = false;
	return (FbRef) table_pos;
}

int
fb_finish(FbBuilder *b, FbRef root, const uint8_t **data, size_t *len,
		  ArrowError *err)
{
	if (fb_not_in_table(b) &&
		fb_check_ref(b, root) &&
		fb_prep(b, b->minalign > 4 ? b->minalign : 4, 4))
		fb_push_le32(b, (uint32_t) (b->size + 4 - root));
	if (b->error != ARROW_OK)
	{
		if (err != NULL)
			*err = b->err;
		return b->error;
	}
	*data = b->buf + b->cap - b->size;
	*len = b->size;
	return ARROW_OK;
}
