/*-------------------------------------------------------------------------
 *
 * fb_read.h
 *		Bounds-checked reading of flatbuffers (the encoding of Arrow's IPC
 *		metadata: Schema, Message, Footer).  Internal to the Arrow library.
 *
 * A flatbuffer is a byte buffer whose first four bytes are the offset of the
 * root table.  A table starts with a signed 32-bit offset back to its vtable;
 * the vtable holds its own size, the table's inline size, and one 16-bit
 * offset per field (0: field absent, reader uses the default).  Tables,
 * strings and vectors refer to each other through unsigned 32-bit offsets
 * relative to where the offset is stored.  A vector (or string) is a 32-bit
 * element count followed by the elements.  Everything is little-endian.
 *
 * Every accessor here checks each offset, size and count it follows against
 * the buffer and the enclosing table before reading, and fails with
 * ARROW_ERR_INVALID (message naming the buffer, e.g. "footer") otherwise.
 * Nothing here recurses; callers that walk recursive structures (fields
 * within fields) limit their own depth.
 *
 * Field numbers are the 0-based field ids of the .fbs declaration.  A union
 * field takes two ids: its type (a ubyte) and then its value (a table).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FB_READ_H
#define PG_WARP_FB_READ_H

#include "arrow_internal.h"

/* A flatbuffer being read: the bytes and a name for error messages. */
typedef struct FbReader
{
	const uint8_t *data;
	uint32_t	len;
	const char *what;			/* "footer", "message", ... */
} FbReader;

/* A table whose vtable has been checked */
typedef struct FbTable
{
	const FbReader *fb;
	uint32_t	pos;			/* start of the table (its vtable offset) */
	uint32_t	vtable;			/* start of the vtable */
	uint16_t	vtable_size;	/* bytes, including the two size fields */
	uint16_t	table_size;		/* inline bytes of the table */
} FbTable;

/* A vector whose elements all lie inside the buffer */
typedef struct FbVector
{
	const FbReader *fb;
	uint32_t	pos;			/* first element */
	uint32_t	length;			/* number of elements */
	uint32_t	elem_size;		/* bytes per element */
} FbVector;

/* Little-endian loads (no alignment needed) */
static inline uint16_t
fb_le16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t
fb_le32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static inline uint64_t
fb_le64(const uint8_t *p)
{
	return (uint64_t) fb_le32(p) | ((uint64_t) fb_le32(p + 4) << 32);
}

/*
 * Sets up fb over data/len (not copied: it must outlive fb and everything
 * read from it) and reads the root table.  Buffers of 2 GiB or more are
 * rejected, as flatbuffers cannot address them.
 */
extern int	fb_init(FbReader *fb, const void *data, size_t len, const char *what,
					FbTable *root, ArrowError *err);

/*
 * Scalar fields: *out is the stored value, or def when the field is absent.
 * A stored value that does not fit inside the table is an error.
 */
extern int	fb_get_bool(const FbTable *t, int field, bool def, bool *out,
						ArrowError *err);
extern int	fb_get_int8(const FbTable *t, int field, int8_t def, int8_t *out,
						ArrowError *err);
extern int	fb_get_uint8(const FbTable *t, int field, uint8_t def,
						 uint8_t *out, ArrowError *err);
extern int	fb_get_int16(const FbTable *t, int field, int16_t def,
						 int16_t *out, ArrowError *err);
extern int	fb_get_int32(const FbTable *t, int field, int32_t def,
						 int32_t *out, ArrowError *err);
extern int	fb_get_int64(const FbTable *t, int field, int64_t def,
						 int64_t *out, ArrowError *err);

/* Sub-table: *present false (and *out untouched) when the field is absent */
extern int	fb_get_table(const FbTable *t, int field, FbTable *out,
						 bool *present, ArrowError *err);

/*
 * String: *s points into the buffer (not NUL-terminated as far as this API
 * promises: use *len), or NULL with *len 0 when the field is absent.
 */
extern int	fb_get_string(const FbTable *t, int field, const char **s,
						  uint32_t *len, ArrowError *err);

/*
 * Vector of elem_size-byte elements (scalars, structs, or 4-byte offsets to
 * tables).  An absent field gives an empty vector.
 */
extern int	fb_get_vector(const FbTable *t, int field, uint32_t elem_size,
						  FbVector *out, ArrowError *err);

/* Element i (< v->length) of a vector of scalars or structs */
static inline const uint8_t *
fb_vector_elem(const FbVector *v, uint32_t i)
{
	return v->fb->data + v->pos + (size_t) i * v->elem_size;
}

/* Element i (< v->length) of a vector of tables */
extern int	fb_vector_table(const FbVector *v, uint32_t i, FbTable *out,
							ArrowError *err);

/*
 * Union: *type is the stored type (0, NONE, when absent); when it is not
 * NONE the value table is required and returned in *value.
 */
extern int	fb_get_union(const FbTable *t, int type_field, uint8_t *type,
						 FbTable *value, ArrowError *err);

#endif							/* PG_WARP_FB_READ_H */
