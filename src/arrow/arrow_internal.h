/*-------------------------------------------------------------------------
 *
 * arrow_internal.h
 *		Helpers shared by the Arrow library's source files; not part of the
 *		public interface (arrow.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_INTERNAL_H
#define PG_WARP_ARROW_INTERNAL_H

#include "arrow.h"

/* Members of the Type union of Schema.fbs (reader, writer, type table) */
enum
{
	FBT_NULL = 1, FBT_INT, FBT_FLOATING_POINT, FBT_BINARY, FBT_UTF8, FBT_BOOL,
	FBT_DECIMAL, FBT_DATE, FBT_TIME, FBT_TIMESTAMP, FBT_INTERVAL, FBT_LIST,
	FBT_STRUCT, FBT_UNION, FBT_FIXED_SIZE_BINARY, FBT_FIXED_SIZE_LIST, FBT_MAP,
	FBT_DURATION, FBT_LARGE_BINARY, FBT_LARGE_UTF8, FBT_LARGE_LIST,
	FBT_RUN_END_ENCODED, FBT_BINARY_VIEW, FBT_UTF8_VIEW, FBT_LIST_VIEW,
	FBT_LARGE_LIST_VIEW
};

#define ARROW_ALIGNMENT		64	/* buffer alignment we write */

/* NULL allocator means the default one */
static inline const ArrowAllocator *
arrow_alloc_or_default(const ArrowAllocator *alloc)
{
	return alloc ? alloc : &arrow_default_allocator;
}

/* Allocation through an allocator; NULL (and err set) on failure */
extern void *arrow_malloc(const ArrowAllocator *alloc, size_t size,
						  ArrowError *err);
extern void *arrow_calloc(const ArrowAllocator *alloc, size_t n, size_t size,
						  ArrowError *err);
extern void *arrow_realloc(const ArrowAllocator *alloc, void *ptr,
						   size_t size, ArrowError *err);
extern void arrow_free(const ArrowAllocator *alloc, void *ptr);
extern char *arrow_strdup(const ArrowAllocator *alloc, const char *s,
						  ArrowError *err);
extern char *arrow_strndup(const ArrowAllocator *alloc, const char *s,
						   size_t len, ArrowError *err);

/* Deep copy and free of metadata and fields */
extern int	arrow_metadata_copy(const ArrowAllocator *alloc, ArrowMetadata *dst,
								const ArrowMetadata *src, ArrowError *err);
extern void arrow_metadata_free(const ArrowAllocator *alloc, ArrowMetadata *md);
extern int	arrow_field_copy(const ArrowAllocator *alloc, ArrowField *dst,
							 const ArrowField *src, int depth,
							 ArrowError *err);
extern void arrow_field_free(const ArrowAllocator *alloc, ArrowField *field);

/*
 * Validation of the newer layouts (arrow_views.c); false with a message in
 * why on the first bad entry.  Null rows are not checked.
 */
extern bool arrow_views_validate(const uint8_t *views, int64_t length,
								 const uint8_t *validity, int32_t n_variadic,
								 const uint8_t *const *variadic,
								 const int64_t *lengths, char *why,
								 size_t whylen);
extern bool arrow_list_views_validate(const void *offsets, const void *sizes,
									  bool large, int64_t length,
									  const uint8_t *validity,
									  int64_t child_length, char *why,
									  size_t whylen);
/* a: RUN_END_ENCODED with both children loaded */
extern bool arrow_run_ends_validate(const ArrowArray *a, char *why,
									size_t whylen);

/* printf into an ArrowStrBuf */
extern int	arrow_strbuf_printf(ArrowStrBuf *buf, ArrowError *err,
								const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* a + b and a * b without signed overflow; false on overflow */
static inline bool
arrow_add_overflow(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_add_overflow(a, b, r);
}
static inline bool
arrow_mul_overflow(int64_t a, int64_t b, int64_t *r)
{
	return __builtin_mul_overflow(a, b, r);
}

/* Entry i of an int32 (or, large, int64) offsets or sizes buffer */
static inline int64_t
arrow_offset_at(const void *offsets, bool large, int64_t i)
{
	if (large)
	{
		int64_t		v;

		__builtin_memcpy(&v, (const uint8_t *) offsets + i * 8, 8);
		return v;
	}
	else
	{
		int32_t		v;

		__builtin_memcpy(&v, (const uint8_t *) offsets + i * 4, 4);
		return v;
	}
}

static inline int64_t
arrow_align64(int64_t n)
{
	return (n + (ARROW_ALIGNMENT - 1)) & ~((int64_t) ARROW_ALIGNMENT - 1);
}

#endif							/* PG_WARP_ARROW_INTERNAL_H */
