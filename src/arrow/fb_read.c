/*-------------------------------------------------------------------------
 *
 * fb_read.c
 *		Bounds-checked flatbuffer reading for the Arrow IPC metadata.
 *
 * The rules checked here (see fb_read.h for the layout):
 *	- a table's position leaves room for its 4-byte vtable offset, its
 *	  vtable lies wholly inside the buffer and has an even size of at least
 *	  4, and the table's inline size (from the vtable) fits in the buffer;
 *	- a field is read only when its vtable slot exists and is non-zero, and
 *	  the value lies inside the table's inline bytes;
 *	- an offset to a table, string or vector is non-zero, and its target
 *	  (plus the element count and all elements for vectors and strings)
 *	  lies inside the buffer.
 * All arithmetic is done in 64 bits so that no sum can wrap.
 *
 *-------------------------------------------------------------------------
 */
#include "fb_read.h"

/* Sets ARROW_ERR_INVALID: "invalid <what> metadata: <detail> at byte <pos>" */
static int
fb_error(const FbReader *fb, ArrowError *err, const char *detail, uint64_t pos)
{
	return arrow_set_error(err, ARROW_ERR_INVALID,
						   "invalid %s metadata: %s at byte %llu of %u",
						   fb->what, detail, (unsigned long long) pos, fb->len);
}

/* Whether [pos, pos + size) lies inside the buffer */
static inline bool
fb_in_bounds(const FbReader *fb, uint64_t pos, uint64_t size)
{
	return pos <= fb->len && size <= fb->len - pos;
}

/* Checks the table at pos and its vtable; fills *out */
static int
fb_table_at(const FbReader *fb, uint64_t pos, FbTable *out, ArrowError *err)
{
	int64_t		vtable;
	uint16_t	vsize;
	uint16_t	tsize;

	if (!fb_in_bounds(fb, pos, 4))
		return fb_error(fb, err, "table out of bounds", pos);
	vtable = (int64_t) pos - (int32_t) fb_le32(fb->data + pos);
	if (vtable < 0 || !fb_in_bounds(fb, (uint64_t) vtable, 4))
		return fb_error(fb, err, "vtable out of bounds", pos);
	vsize = fb_le16(fb->data + vtable);
	tsize = fb_le16(fb->data + vtable + 2);
	if (vsize < 4 || (vsize & 1) != 0 || !fb_in_bounds(fb, (uint64_t) vtable, vsize))
		return fb_error(fb, err, "bad vtable size", (uint64_t) vtable);
	if (tsize < 4 || !fb_in_bounds(fb, pos, tsize))
		return fb_error(fb, err, "bad table size", pos);
	out->fb = fb;
	out->pos = (uint32_t) pos;
	out->vtable = (uint32_t) vtable;
	out->vtable_size = vsize;
	out->table_size = tsize;
	return ARROW_OK;
}

/* See fb_read.h */
int
fb_init(FbReader *fb, const void *data, size_t len, const char *what,
		FbTable *root, ArrowError *err)
{
	fb->data = data;
	fb->len = 0;
	fb->what = what;
	if (len >= INT32_MAX)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "invalid %s metadata: %zu bytes is too large", what, len);
	fb->len = (uint32_t) len;
	if (len < 4)
		return fb_error(fb, err, "buffer too short for the root offset", 0);
	return fb_table_at(fb, fb_le32(fb->data), root, err);
}

/* Offset of field 'field' inside the table, 0 when absent */
static inline uint16_t
fb_field_offset(const FbTable *t, int field)
{
	uint32_t	slot = 4 + 2 * (uint32_t) field;

	if (field < 0 || slot + 2 > t->vtable_size)
		return 0;
	return fb_le16(t->fb->data + t->vtable + slot);
}

/*
 * Position of a present field of 'size' bytes; 0 when absent, -1 (error
 * set) when it does not fit in the table.
 */
static int64_t
fb_field_pos(const FbTable *t, int field, uint32_t size, ArrowError *err)
{
	uint16_t	off = fb_field_offset(t, field);

	if (off == 0)
		return 0;
	if ((uint32_t) off + size > t->table_size)
	{
		fb_error(t->fb, err, "field outside its table", t->pos);
		return -1;
	}
	return (int64_t) t->pos + off;
}

#define FB_GET_SCALAR(NAME, TYPE, SIZE, LOAD) \
int \
NAME(const FbTable *t, int field, TYPE def, TYPE *out, ArrowError *err) \
{ \
	int64_t		pos = fb_field_pos(t, field, SIZE, err); \
\
	if (pos < 0) \
		return ARROW_ERR_INVALID; \
	*out = (pos == 0) ? def : (TYPE) LOAD(t->fb->data + pos); \
	return ARROW_OK; \
}

#define FB_LOAD8(p) (*(p))
FB_GET_SCALAR(fb_get_int8, int8_t, 1, FB_LOAD8)
FB_GET_SCALAR(fb_get_uint8, uint8_t, 1, FB_LOAD8)
FB_GET_SCALAR(fb_get_int16, int16_t, 2, fb_le16)
FB_GET_SCALAR(fb_get_int32, int32_t, 4, fb_le32)
FB_GET_SCALAR(fb_get_int64, int64_t, 8, fb_le64)

/* A bool is a byte: non-zero is true */
int
fb_get_bool(const FbTable *t, int field, bool def, bool *out, ArrowError *err)
{
	uint8_t		v;

	if (fb_get_uint8(t, field, def ? 1 : 0, &v, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	*out = (v != 0);
	return ARROW_OK;
}

/*
 * Follows the offset stored at pos (which must be in bounds, 4 bytes);
 * *target is the absolute position it points to.
 */
static int
fb_follow(const FbReader *fb, uint64_t pos, uint64_t *target, ArrowError *err)
{
	uint32_t	off = fb_le32(fb->data + pos);

	if (off == 0 || off >= INT32_MAX || !fb_in_bounds(fb, pos + off, 4))
		return fb_error(fb, err, "offset out of bounds", pos);
	*target = pos + off;
	return ARROW_OK;
}

/* See fb_read.h */
int
fb_get_table(const FbTable *t, int field, FbTable *out, bool *present,
			 ArrowError *err)
{
	int64_t		pos = fb_field_pos(t, field, 4, err);
	uint64_t	target;

	*present = false;
	if (pos < 0)
		return ARROW_ERR_INVALID;
	if (pos == 0)
		return ARROW_OK;
	if (fb_follow(t->fb, (uint64_t) pos, &target, err) != ARROW_OK ||
		fb_table_at(t->fb, target, out, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	*present = true;
	return ARROW_OK;
}

/* A vector (or string) whose offset is stored at pos */
static int
fb_vector_at(const FbReader *fb, uint64_t pos, uint32_t elem_size,
			 FbVector *out, ArrowError *err)
{
	uint64_t	target;
	uint32_t	n;

	if (fb_follow(fb, pos, &target, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	n = fb_le32(fb->data + target);
	if (!fb_in_bounds(fb, target + 4, (uint64_t) n * elem_size))
		return fb_error(fb, err, "vector longer than the buffer", target);
	out->fb = fb;
	out->pos = (uint32_t) (target + 4);
	out->length = n;
	out->elem_size = elem_size;
	return ARROW_OK;
}

/* See fb_read.h */
int
fb_get_string(const FbTable *t, int field, const char **s, uint32_t *len,
			  ArrowError *err)
{
	int64_t		pos = fb_field_pos(t, field, 4, err);
	FbVector	v;

	*s = NULL;
	*len = 0;
	if (pos < 0)
		return ARROW_ERR_INVALID;
	if (pos == 0)
		return ARROW_OK;
	if (fb_vector_at(t->fb, (uint64_t) pos, 1, &v, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	*s = (const char *) t->fb->data + v.pos;
	*len = v.length;
	return ARROW_OK;
}

/* See fb_read.h */
int
fb_get_vector(const FbTable *t, int field, uint32_t elem_size, FbVector *out,
			  ArrowError *err)
{
	int64_t		pos = fb_field_pos(t, field, 4, err);

	out->fb = t->fb;
	out->pos = 0;
	out->length = 0;
	out->elem_size = elem_size;
	if (pos < 0)
		return ARROW_ERR_INVALID;
	if (pos == 0)
		return ARROW_OK;
	return fb_vector_at(t->fb, (uint64_t) pos, elem_size, out, err);
}

/* See fb_read.h */
int
fb_vector_table(const FbVector *v, uint32_t i, FbTable *out, ArrowError *err)
{
	uint64_t	pos = v->pos + (uint64_t) i * 4;
	uint64_t	target;

	if (i >= v->length || v->elem_size != 4)
		return fb_error(v->fb, err, "vector index out of range", v->pos);
	if (fb_follow(v->fb, pos, &target, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	return fb_table_at(v->fb, target, out, err);
}

/* See fb_read.h */
int
fb_get_union(const FbTable *t, int type_field, uint8_t *type, FbTable *value,
			 ArrowError *err)
{
	bool		present;

	if (fb_get_uint8(t, type_field, 0, type, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (*type == 0)
		return ARROW_OK;
	if (fb_get_table(t, type_field + 1, value, &present, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (!present)
		return fb_error(t->fb, err, "union value missing", t->pos);
	return ARROW_OK;
}
