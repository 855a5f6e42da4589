/*-------------------------------------------------------------------------
 *
 * arrow_types.c
 *		The table of Arrow types (see arrow_types.h) and the readers of
 *		stored scalar values that go with it.
 *
 * Widths follow the Arrow columnar format: a value of a fixed-width type
 * takes bit_width / 8 bytes of the values buffer (BOOL one bit); offsets
 * are int32 (int64 for the LARGE_ types and LARGE_LIST_VIEW); a view is 16
 * bytes.  The buffer counts are those of the IPC format (the validity
 * buffer counted also where it is empty).  The alignment is that of the
 * C type that holds one entry of the first data buffer.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_types.h"
#include "arrow_internal.h"

#include <string.h>

/* Rows in the order of the columns of ArrowTypeInfo */
#define ROW(id, name, layout, params, bits, align, nbuf, offw, nchild, value, minmax, wr, fb, pg) \
	[ARROW_TYPE_##id] = {ARROW_TYPE_##id, name, ARROW_LAYOUT_##layout, ARROW_PARAMS_##params, \
						 bits, align, nbuf, offw, nchild, ARROW_VALUE_##value, \
						 ARROW_MINMAX_##minmax, wr, FBT_##fb, pg}

static const ArrowTypeInfo type_table[ARROW_TYPE_LAST + 1] = {
	ROW(NULL, "null", NULL, NONE, 0, 0, 0, 0, 0, NONE, NONE, true, NULL, "text"),
	ROW(BOOL, "bool", BITS, NONE, 1, 1, 2, 0, 0, BOOL, NONE, true, BOOL, "bool"),
	ROW(INT8, "int8", FIXED, NONE, 8, 1, 2, 0, 0, INT, INT, true, INT, "int2"),
	ROW(INT16, "int16", FIXED, NONE, 16, 2, 2, 0, 0, INT, INT, true, INT, "int2"),
	ROW(INT32, "int32", FIXED, NONE, 32, 4, 2, 0, 0, INT, INT, true, INT, "int4"),
	ROW(INT64, "int64", FIXED, NONE, 64, 8, 2, 0, 0, INT, INT, true, INT, "int8"),
	ROW(UINT8, "uint8", FIXED, NONE, 8, 1, 2, 0, 0, UINT, INT, true, INT, "int2"),
	ROW(UINT16, "uint16", FIXED, NONE, 16, 2, 2, 0, 0, UINT, INT, true, INT, "int4"),
	ROW(UINT32, "uint32", FIXED, NONE, 32, 4, 2, 0, 0, UINT, INT, true, INT, "int8"),
	ROW(UINT64, "uint64", FIXED, NONE, 64, 8, 2, 0, 0, UINT, NONE, true, INT, "numeric"),
	ROW(FLOAT16, "float16", FIXED, NONE, 16, 2, 2, 0, 0, FLOAT, FLOAT, true, FLOATING_POINT, "float4"),
	ROW(FLOAT32, "float32", FIXED, NONE, 32, 4, 2, 0, 0, FLOAT, FLOAT, true, FLOATING_POINT, "float4"),
	ROW(FLOAT64, "float64", FIXED, NONE, 64, 8, 2, 0, 0, FLOAT, FLOAT, true, FLOATING_POINT, "float8"),
	ROW(DECIMAL128, "decimal128", FIXED, DECIMAL, 128, 8, 2, 0, 0, DECIMAL, DECIMAL, true, DECIMAL, "numeric"),
	ROW(DATE32, "date32", FIXED, NONE, 32, 4, 2, 0, 0, INT, INT, true, DATE, "date"),
	ROW(DATE64, "date64", FIXED, NONE, 64, 8, 2, 0, 0, INT, INT, true, DATE, "date"),
	ROW(TIME32, "time32", FIXED, UNIT, 32, 4, 2, 0, 0, INT, INT, true, TIME, "time"),
	ROW(TIME64, "time64", FIXED, UNIT, 64, 8, 2, 0, 0, INT, INT, true, TIME, "time"),
	ROW(TIMESTAMP, "timestamp", FIXED, TIMESTAMP, 64, 8, 2, 0, 0, INT, INT, true, TIMESTAMP, "timestamp"),
	ROW(INTERVAL_YM, "interval[ym]", FIXED, NONE, 32, 4, 2, 0, 0, INT, NONE, true, INTERVAL, "interval"),
	ROW(INTERVAL_DT, "interval[dt]", FIXED, NONE, 64, 4, 2, 0, 0, INTERVAL, NONE, true, INTERVAL, "interval"),
	ROW(INTERVAL_MDN, "interval[mdn]", FIXED, NONE, 128, 8, 2, 0, 0, INTERVAL, NONE, true, INTERVAL, "interval"),
	ROW(DURATION, "duration", FIXED, UNIT, 64, 8, 2, 0, 0, INT, INT, true, DURATION, "interval"),
	ROW(UTF8, "utf8", VAR, NONE, 0, 4, 3, 4, 0, STRING, NONE, true, UTF8, "text"),
	ROW(LARGE_UTF8, "large_utf8", VAR, NONE, 0, 8, 3, 8, 0, STRING, NONE, true, LARGE_UTF8, "text"),
	ROW(BINARY, "binary", VAR, NONE, 0, 4, 3, 4, 0, BYTES, NONE, true, BINARY, "bytea"),
	ROW(LARGE_BINARY, "large_binary", VAR, NONE, 0, 8, 3, 8, 0, BYTES, NONE, true, LARGE_BINARY, "bytea"),
	ROW(FIXED_SIZE_BINARY, "fixed_size_binary", FIXED, BYTE_WIDTH, 0, 1, 2, 0, 0, BYTES, NONE, true, FIXED_SIZE_BINARY, "bytea"),
	ROW(LIST, "list", LIST, NONE, 0, 4, 2, 4, 1, NONE, NONE, true, LIST, NULL),
	ROW(LARGE_LIST, "large_list", LIST, NONE, 0, 8, 2, 8, 1, NONE, NONE, true, LARGE_LIST, NULL),
	ROW(FIXED_SIZE_LIST, "fixed_size_list", FIXED_LIST, LIST_SIZE, 0, 0, 1, 0, 1, NONE, NONE, true, FIXED_SIZE_LIST, NULL),
	ROW(STRUCT, "struct", STRUCT, NONE, 0, 0, 1, 0, -1, NONE, NONE, true, STRUCT, NULL),
	ROW(UTF8_VIEW, "utf8_view", VIEW, NONE, 0, 4, 2, 0, 0, STRING, NONE, false, UTF8_VIEW, "text"),
	ROW(BINARY_VIEW, "binary_view", VIEW, NONE, 0, 4, 2, 0, 0, BYTES, NONE, false, BINARY_VIEW, "bytea"),
	ROW(LIST_VIEW, "list_view", LIST_VIEW, NONE, 0, 4, 3, 4, 1, NONE, NONE, false, LIST_VIEW, NULL),
	ROW(LARGE_LIST_VIEW, "large_list_view", LIST_VIEW, NONE, 0, 8, 3, 8, 1, NONE, NONE, false, LARGE_LIST_VIEW, NULL),
	ROW(RUN_END_ENCODED, "run_end_encoded", RUN_END, NONE, 0, 0, 0, 0, 2, NONE, NONE, false, RUN_END_ENCODED, NULL),
	ROW(DECIMAL256, "decimal256", FIXED, DECIMAL, 256, 8, 2, 0, 0, DECIMAL, NONE, false, DECIMAL, "numeric"),
	ROW(MAP, "map", LIST, MAP, 0, 4, 2, 4, 1, NONE, NONE, false, MAP, "jsonb"),
};

/* See arrow_types.h */
const ArrowTypeInfo *
arrow_type_info(ArrowTypeId id)
{
	if ((int) id < ARROW_TYPE_FIRST || (int) id > ARROW_TYPE_LAST)
		return NULL;
	return &type_table[id];
}

/* See arrow_types.h */
bool
arrow_type_is_int(ArrowTypeId id)
{
	const ArrowTypeInfo *info = arrow_type_info(id);

	return info != NULL && info->fb_type == FBT_INT;
}

/* See arrow_types.h */
const char *
arrow_type_pg_name(const ArrowType *t)
{
	const ArrowTypeInfo *info = arrow_type_info(t->id);

	if (info == NULL)
		return NULL;
	if (info->params == ARROW_PARAMS_TIMESTAMP && t->timezone != NULL)
		return "timestamptz";
	return info->pg_type;
}

/* See arrow_types.h */
int64_t
arrow_load_int(const uint8_t *p, int width)
{
	int16_t		i16;
	int32_t		i32;
	int64_t		i64;

	switch (width)
	{
		case 1:
			return (int8_t) p[0];
		case 2:
			memcpy(&i16, p, 2);
			return i16;
		case 4:
			memcpy(&i32, p, 4);
			return i32;
		default:
			memcpy(&i64, p, 8);
			return i64;
	}
}

/* See arrow_types.h */
uint64_t
arrow_load_uint(const uint8_t *p, int width)
{
	uint16_t	u16;
	uint32_t	u32;
	uint64_t	u64;

	switch (width)
	{
		case 1:
			return p[0];
		case 2:
			memcpy(&u16, p, 2);
			return u16;
		case 4:
			memcpy(&u32, p, 4);
			return u32;
		default:
			memcpy(&u64, p, 8);
			return u64;
	}
}

/* See arrow_types.h */
double
arrow_load_float(const uint8_t *p, int width)
{
	float		f;
	double		d;

	if (width == 2)
		return arrow_half_to_float((uint16_t) arrow_load_uint(p, 2));
	if (width == 4)
	{
		memcpy(&f, p, 4);
		return f;
	}
	memcpy(&d, p, 8);
	return d;
}
