/*-------------------------------------------------------------------------
 *
 * arrow_types.h
 *		The table of Arrow types (arrow_types.c): one row per ArrowTypeId with
 *		every fact about the type that code outside the row needs - its name,
 *		physical layout and buffers, the width and alignment of a value, how a
 *		value is read, compared (statistics) and appended, whether the writer
 *		takes it, its member of the Schema.fbs Type union, and the PostgreSQL
 *		type it maps to by default.
 *
 * The reader, the builder and writer, the JSON printer, the statistics and
 * the extension look a type up here instead of switching on its id.  Adding
 * a type means adding its row (and its tests in test/c/test_types.c), plus
 * the code for what is new about it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_TYPES_H
#define PG_WARP_ARROW_TYPES_H

#include "arrow.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The first and last ArrowTypeId; every id between them has a row */
#define ARROW_TYPE_FIRST	ARROW_TYPE_NULL
#define ARROW_TYPE_LAST		ARROW_TYPE_MAP

/* Physical layout: which buffers and children a field of the type has */
typedef enum ArrowLayout
{
	ARROW_LAYOUT_NULL,			/* no buffers (NULL) */
	ARROW_LAYOUT_BITS,			/* validity, values one bit each (BOOL) */
	ARROW_LAYOUT_FIXED,			/* validity, values of a fixed width */
	ARROW_LAYOUT_VAR,			/* validity, offsets, data (UTF8, BINARY) */
	ARROW_LAYOUT_VIEW,			/* validity, 16-byte views, variadic data */
	ARROW_LAYOUT_LIST,			/* validity, offsets; one child */
	ARROW_LAYOUT_LIST_VIEW,		/* validity, offsets, sizes; one child */
	ARROW_LAYOUT_FIXED_LIST,	/* validity; list_size child values a row */
	ARROW_LAYOUT_STRUCT,		/* validity; any number of children */
	ARROW_LAYOUT_RUN_END		/* no buffers; children run_ends, values */
} ArrowLayout;

/*
 * How one value is read (from the values buffer, at its width) and which
 * arrow_append_* function takes it.
 */
typedef enum ArrowValueKind
{
	ARROW_VALUE_NONE,			/* no scalar value: NULL, nested types */
	ARROW_VALUE_BOOL,			/* one bit: arrow_append_bool */
	ARROW_VALUE_INT,			/* signed integer: arrow_append_int */
	ARROW_VALUE_UINT,			/* unsigned integer: arrow_append_uint */
	ARROW_VALUE_FLOAT,			/* IEEE binary16/32/64: arrow_append_float */
	ARROW_VALUE_DECIMAL,		/* two's complement, little-endian:
								 * arrow_append_decimal (DECIMAL128) */
	ARROW_VALUE_INTERVAL,		/* a struct of integers:
								 * arrow_append_interval_dt/_mdn */
	ARROW_VALUE_STRING,			/* UTF-8 bytes: arrow_append_bytes */
	ARROW_VALUE_BYTES			/* bytes: arrow_append_bytes */
} ArrowValueKind;

/* The parameters of a type, as arrow_type_format shows them */
typedef enum ArrowTypeParams
{
	ARROW_PARAMS_NONE,
	ARROW_PARAMS_UNIT,			/* "time32[ms]": ArrowType.unit */
	ARROW_PARAMS_TIMESTAMP,		/* unit and timezone */
	ARROW_PARAMS_DECIMAL,		/* "decimal128(10, 2)": precision, scale */
	ARROW_PARAMS_BYTE_WIDTH,	/* "fixed_size_binary(16)" */
	ARROW_PARAMS_LIST_SIZE,		/* "fixed_size_list(3)" */
	ARROW_PARAMS_MAP			/* "map[sorted]" when keys_sorted */
} ArrowTypeParams;

typedef struct ArrowTypeInfo
{
	ArrowTypeId id;
	const char *name;			/* "int32", "timestamp" (no parameters) */
	ArrowLayout layout;
	ArrowTypeParams params;
	int16_t		bit_width;		/* of one value: 1 (BOOL) .. 256; 0 when
								 * variable or given by byte_width
								 * (FIXED_SIZE_BINARY), or no values */
	int8_t		alignment;		/* bytes: natural alignment of the entries
								 * of the first data buffer (values,
								 * offsets, views); 0 when it has none */
	int8_t		n_buffers;		/* IPC buffers of the field itself (views:
								 * plus the batch's variadic count) */
	int8_t		offset_width;	/* offsets and sizes: 4 or 8 bytes; else 0 */
	int8_t		n_children;		/* children the type needs; -1: any */
	ArrowValueKind value;
	ArrowMinMaxKind minmax;		/* arrow_builder_minmax; NONE: not kept */
	bool		writable;		/* the builder and the writer take it */
	uint8_t		fb_type;		/* member of the Schema.fbs Type union */
	const char *pg_type;		/* PostgreSQL type by default (IMPORT
								 * FOREIGN SCHEMA): its pg_type.typname in
								 * pg_catalog ("int4"); NULL when it follows
								 * from the children (lists, run ends) or
								 * needs a composite (struct) */
} ArrowTypeInfo;

/* The row of id; NULL when id is not an ArrowTypeId */
extern const ArrowTypeInfo *arrow_type_info(ArrowTypeId id);

/*
 * Whether id is one of the integer types INT8 .. UINT64 (the Int member of
 * Schema.fbs), as opposed to the types stored as integers (dates, times,
 * timestamps, durations, INTERVAL_YM)
 */
extern bool arrow_type_is_int(ArrowTypeId id);

/*
 * The default PostgreSQL type of t (a typname in pg_catalog): the row's
 * pg_type, except that a TIMESTAMP with a time zone maps to "timestamptz".
 * NULL as for the row.
 */
extern const char *arrow_type_pg_name(const ArrowType *t);

/*
 * Values as stored (little-endian) at p, 'width' bytes wide: a signed or
 * unsigned integer of 1, 2, 4 or 8 bytes, a float of 2 (binary16), 4 or 8.
 */
extern int64_t arrow_load_int(const uint8_t *p, int width);
extern uint64_t arrow_load_uint(const uint8_t *p, int width);
extern double arrow_load_float(const uint8_t *p, int width);

#ifdef __cplusplus
}
#endif

#endif							/* PG_WARP_ARROW_TYPES_H */
