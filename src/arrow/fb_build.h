/*-------------------------------------------------------------------------
 *
 * fb_build.h
 *		A small flatbuffer builder for the Arrow writer (internal).
 *
 * A flatbuffer is built back to front, the way the format wants it: objects
 * a table refers to (strings, vectors, other tables) are created first and
 * end up at higher addresses, and a reference to an object is its distance
 * from the end of the buffer (FbRef).  The finished buffer starts with the
 * uoffset of the root table.  Everything is written little-endian; every
 * scalar is aligned to its size relative to the start of the finished
 * buffer, which is itself aligned to the largest alignment used (so an
 * 8-byte aligned copy of it is correctly aligned in memory).
 *
 * Errors are sticky: a failing call (out of memory, a misuse such as adding
 * a field outside a table, a buffer over 2 GiB) records the error and makes
 * every later call a no-op; fb_finish reports it.  Callers therefore build a
 * whole message without checking each call.
 *
 * Tables: fb_table_start, then fb_add_* for the fields (nested objects must
 * already exist: one table is open at a time), then fb_table_end.  Every
 * field added is written, also when it equals the schema's default, so
 * readers never depend on default values.  A union is two fields: the type
 * (ubyte, id N) and the value (offset, id N + 1), see fb_add_union.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FB_BUILD_H
#define PG_WARP_FB_BUILD_H

#include "arrow_internal.h"

/* Distance of an object from the end of the buffer; 0 is "no object" */
typedef uint32_t FbRef;

#define FB_MAX_FIELDS	16		/* highest field id + 1 of one table */

typedef struct FbBuilder
{
	const ArrowAllocator *alloc;
	uint8_t    *buf;			/* the data is buf[cap - size, cap) */
	size_t		cap;
	size_t		size;
	size_t		minalign;		/* largest alignment used so far */
	/* the open table, if any */
	bool		in_table;
	size_t		table_begin;	/* size when the table was started */
	int			max_id;			/* highest field id added, -1 if none */
	size_t		field_pos[FB_MAX_FIELDS];	/* size after the field; 0: absent */
	/* first error, ARROW_OK if none */
	int			error;
	ArrowError	err;
} FbBuilder;

extern void fb_builder_init(FbBuilder *b, const ArrowAllocator *alloc);
/* Forgets the contents, keeps the memory for the next buffer */
extern void fb_builder_reset(FbBuilder *b);
extern void fb_builder_free(FbBuilder *b);
/*
 * Records an error found by the caller while building (such as a failed
 * allocation), so that fb_finish reports it; the first error wins.
 */
extern void fb_builder_fail(FbBuilder *b, ArrowErrorCode code,
							const char *what);

/* Objects outside tables */
extern FbRef fb_create_string(FbBuilder *b, const char *s, size_t len);
/*
 * A vector of n elements of elem_size bytes each, already little-endian in
 * data (scalars or structs); align is the element alignment (power of two).
 */
extern FbRef fb_create_vector(FbBuilder *b, const void *data, size_t n,
							  size_t elem_size, size_t align);
/* A vector of references (to tables or strings), refs[0] first */
extern FbRef fb_create_offset_vector(FbBuilder *b, const FbRef *refs, size_t n);

/* Tables */
extern void fb_table_start(FbBuilder *b);
extern void fb_add_bool(FbBuilder *b, int id, bool v);
extern void fb_add_uint8(FbBuilder *b, int id, uint8_t v);
extern void fb_add_int16(FbBuilder *b, int id, int16_t v);
extern void fb_add_int32(FbBuilder *b, int id, int32_t v);
extern void fb_add_int64(FbBuilder *b, int id, int64_t v);
/* A reference field; ref == 0 (no object) leaves the field absent */
extern void fb_add_offset(FbBuilder *b, int id, FbRef ref);
/* A struct stored inline in the table (little-endian bytes in data) */
extern void fb_add_struct(FbBuilder *b, int id, const void *data,
						  size_t size, size_t align);
/* Union: type in field type_id (ubyte), value reference in type_id + 1 */
extern void fb_add_union(FbBuilder *b, int type_id, uint8_t type, FbRef value);
extern FbRef fb_table_end(FbBuilder *b);

/*
 * Writes the root offset and returns ARROW_OK with the finished buffer in
 * *data / *len (owned by the builder, valid until the next reset or free),
 * or the first error recorded while building (copied into err).
 */
extern int	fb_finish(FbBuilder *b, FbRef root, const uint8_t **data,
					  size_t *len, ArrowError *err);

/* Little-endian stores, for preparing struct and vector element bytes */
static inline void
fb_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline void
fb_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

#endif							/* PG_WARP_FB_BUILD_H */
