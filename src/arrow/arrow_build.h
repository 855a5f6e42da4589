/*-------------------------------------------------------------------------
 *
 * arrow_build.h
 *		What arrow_write.c needs from the column builders of arrow_build.c
 *		(internal; the public builder API is in arrow.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_BUILD_H
#define PG_WARP_ARROW_BUILD_H

#include "arrow_internal.h"

/* One buffer of a built column: bytes owned by the builder */
typedef struct ArrowBuiltBuffer
{
	const uint8_t *data;		/* NULL when length is 0 */
	int64_t		length;
} ArrowBuiltBuffer;

/*
 * Checks that 'field' can be written (types, units, children, dictionary
 * index types, nesting depth); depth is the field's nesting level, 1 for a
 * top-level field.  ARROW_ERR_ARGUMENT names the field.
 */
extern int	arrow_field_check(const ArrowField *field, int depth,
							  ArrowError *err);

/*
 * Checks that b holds a complete column for 'field': a builder made for a
 * field of the same type (dictionary_values: for the value type of the
 * dictionary-encoded 'field'), no list left open, child lengths that match
 * the parent's.  ARROW_ERR_ARGUMENT otherwise.
 */
extern int	arrow_builder_check(const ArrowBuilder *b, const ArrowField *field,
								bool dictionary_values, ArrowError *err);

/* Number of IPC nodes and buffers of b, children included */
extern void arrow_builder_count(const ArrowBuilder *b, int32_t *n_nodes,
								int32_t *n_buffers);

/*
 * Writes b's nodes and buffers in IPC order (depth-first pre-order) at
 * (*nodes)[0..] and (*buffers)[0..] and advances both pointers.  A validity
 * buffer is written with length 0 when the column has no null.
 */
extern void arrow_builder_export(const ArrowBuilder *b, ArrowNode **nodes,
								 ArrowBuiltBuffer **buffers);

/*
 * Largest index among the non-null values of the fields encoded with
 * dictionary dict_id in b and its children; -1 when there is none.
 */
extern int64_t arrow_builder_max_index(const ArrowBuilder *b, int64_t dict_id);

#endif							/* PG_WARP_ARROW_BUILD_H */
