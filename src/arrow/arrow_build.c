/*-------------------------------------------------------------------------
 *
 * arrow_build.c
 *		Column builders: growable Arrow buffers filled one value at a time,
 *		with range checks, for the writer (arrow_write.c) to serialize.
 *
 * A builder owns up to four buffers, used according to the field's layout:
 *	validity	bitmap, allocated only when the first null arrives (the rows
 *				before it are then marked valid); a column without nulls
 *				writes a validity buffer of length 0
 *	values		fixed-width values, BOOL bits, dictionary indices
 *	offsets		int32 or int64 (LARGE_*), length + 1 entries, first 0
 *	data		UTF8/BINARY bytes
 * plus one child builder per child field (LIST, LARGE_LIST, FIXED_SIZE_LIST,
 * STRUCT).  A dictionary-encoded field builds its indices only.
 *
 * Values are stored in host byte order, so the host must be little-endian
 * (checked at compile time).  Slots under a null hold zeros, and the unused
 * bits of the last bitmap byte are zero, so the output is deterministic.
 *
 * After ARROW_ERR_NOMEM from an append on a nested builder, children may
 * hold part of the value: reset the builder before writing from it (the
 * writer rejects such a builder, since its child lengths do not match).
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_build.h"
#include "arrow_types.h"
#include "arrow_bits.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "arrow_build.c stores values in host order and needs a little-endian host"
#endif

typedef struct GrowBuf
{
	uint8_t    *data;
	int64_t		len;
	int64_t		cap;
} GrowBuf;

struct ArrowBuilder
{
	const ArrowField *field;
	const ArrowAllocator *alloc;
	ArrowTypeId type;			/* of the stored values (dictionary: index) */
	ArrowLayout layout;		/* the type's (dictionary: FIXED) */
	int			width;			/* ARROW_LAYOUT_FIXED: bytes per value */
	bool		large;			/* 64-bit offsets */
	int64_t		length;
	int64_t		null_count;
	bool		has_validity;	/* validity holds a bitmap for this batch */
	bool		list_open;		/* ARROW_LAYOUT_LIST: append_valid without list_end */
	GrowBuf		validity;
	GrowBuf		values;
	GrowBuf		offsets;
	GrowBuf		data;
	int32_t		n_children;
	ArrowBuilder **children;
	/* integer-valued columns: the accepted range (see integer_range) */
	bool		is_integer;
	__int128	int_lo;
	__int128	int_hi;
};

static int	append_null_slot(ArrowBuilder *b, ArrowError *err);
static int	append_filler(ArrowBuilder *b, ArrowError *err);
static bool integer_range(const ArrowBuilder *b, __int128 *lo, __int128 *hi);
static bool same_type(const ArrowField *bf, const ArrowField *f, bool dict_values);

/* ------------------------------------------------------------------------
 * Field checks
 * ------------------------------------------------------------------------
 */
static int
field_error(ArrowError *err, const ArrowField *field, const char *what)
{
	return arrow_set_error(err, ARROW_ERR_ARGUMENT, "field \"%s\": %s",
						   field->name ? field->name : "", what);
}

static bool
is_unit(ArrowTimeUnit unit)
{
	return unit >= ARROW_UNIT_SECOND && unit <= ARROW_UNIT_NANO;
}

/*
 * The parameters of a writable type: decimal128 precision and scale, the
 * time units TIME32/TIME64 allow, a valid unit, widths and sizes >= 0.
 */
static int
params_check(const ArrowField *field, ArrowError *err)
{
	const ArrowType *t = &field->type;

	switch (t->id)
	{
		case ARROW_TYPE_DECIMAL128:
			if (t->precision < 1 || t->precision > 38)
				return field_error(err, field, "decimal128 precision must be between 1 and 38");
			if (t->scale < -38 || t->scale > 38)
				return field_error(err, field, "decimal128 scale must be between -38 and 38");
			break;
		case ARROW_TYPE_TIME32:
			if (t->unit != ARROW_UNIT_SECOND && t->unit != ARROW_UNIT_MILLI)
				return field_error(err, field, "time32 unit must be seconds or milliseconds");
			break;
		case ARROW_TYPE_TIME64:
			if (t->unit != ARROW_UNIT_MICRO && t->unit != ARROW_UNIT_NANO)
				return field_error(err, field, "time64 unit must be microseconds or nanoseconds");
			break;
		case ARROW_TYPE_TIMESTAMP:
		case ARROW_TYPE_DURATION:
			if (!is_unit(t->unit))
				return field_error(err, field, "invalid time unit");
			break;
		case ARROW_TYPE_FIXED_SIZE_BINARY:
			if (t->byte_width < 0)
				return field_error(err, field, "negative fixed_size_binary width");
			break;
		case ARROW_TYPE_FIXED_SIZE_LIST:
			if (t->list_size < 0)
				return field_error(err, field, "negative fixed_size_list size");
			break;
		default:
			break;
	}
	return ARROW_OK;
}

/*
 * Whether field (at nesting depth 'depth') can be written: a writable type
 * of the table, valid parameters, the children its type needs, integer
 * dictionary indices and no dictionary inside a dictionary.
 */
static int
field_check(const ArrowField *field, int depth, bool in_dictionary,
			ArrowError *err)
{
	const ArrowTypeInfo *info = arrow_type_info(field->type.id);
	int32_t		want_children;
	int			rc;

	if (field->name == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "field without a name (use \"\")");
	if (depth > ARROW_MAX_NESTING)
		return field_error(err, field, "nested deeper than ARROW_MAX_NESTING levels");
	if (info == NULL || !info->writable)
		return field_error(err, field, "unknown type id");
	if ((rc = params_check(field, err)) != ARROW_OK)
		return rc;
	want_children = info->n_children < 0 ? field->n_children : info->n_children;
	if (field->n_children != want_children || (want_children > 0 && field->children == NULL))
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "field \"%s\": has %d children, its type needs %d",
							   field->name, field->n_children, want_children);
	if (field->has_dictionary)
	{
		if (in_dictionary)
			return field_error(err, field, "dictionary-encoded values inside a dictionary are not supported");
		if (!arrow_type_is_int(field->dictionary.index_type))
			return field_error(err, field, "dictionary index type must be an integer type");
		if (field->dictionary.id < 0)
			return field_error(err, field, "negative dictionary id");
		in_dictionary = true;
	}
	for (int32_t i = 0; i < field->n_children; i++)
	{
		rc = field_check(&field->children[i], depth + 1, in_dictionary, err);
		if (rc != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

int
arrow_field_check(const ArrowField *field, int depth, ArrowError *err)
{
	return field_check(field, depth, false, err);
}

/* ------------------------------------------------------------------------
 * Creating, resetting, freeing
 * ------------------------------------------------------------------------
 */
static int
gb_reserve(ArrowBuilder *b, GrowBuf *g, int64_t more, ArrowError *err)
{
	int64_t		need;
	int64_t		cap;
	uint8_t    *p;

	if (arrow_add_overflow(g->len, more, &need))
		return arrow_set_error(err, ARROW_ERR_NOMEM, "column buffer size overflows");
	if (need <= g->cap)
		return ARROW_OK;
	cap = g->cap ? g->cap : 64;
	while (cap < need)
		cap = (cap > INT64_MAX / 2) ? need : cap * 2;
	p = arrow_realloc(b->alloc, g->data, (size_t) cap, err);
	if (p == NULL)
		return ARROW_ERR_NOMEM;
	g->data = p;
	g->cap = cap;
	return ARROW_OK;
}

static int
offset_width(const ArrowBuilder *b)
{
	return b->large ? 8 : 4;
}

/* Stores offset v as entry i (the offsets buffer must hold it) */
static void
put_offset(ArrowBuilder *b, int64_t i, int64_t v)
{
	if (b->large)
		memcpy(b->offsets.data + 8 * i, &v, 8);
	else
	{
		int32_t		v32 = (int32_t) v;

		memcpy(b->offsets.data + 4 * i, &v32, 4);
	}
}

static int64_t
get_offset(const ArrowBuilder *b, int64_t i)
{
	return arrow_offset_at(b->offsets.data, b->large, i);
}

static void
builder_reset(ArrowBuilder *b)
{
	b->length = 0;
	b->null_count = 0;
	b->has_validity = false;
	b->list_open = false;
	b->validity.len = 0;
	b->values.len = 0;
	b->data.len = 0;
	if (b->layout == ARROW_LAYOUT_VAR || b->layout == ARROW_LAYOUT_LIST)
	{
		/* capacity for the first entry was reserved at creation */
		put_offset(b, 0, 0);
		b->offsets.len = offset_width(b);
	}
	for (int32_t i = 0; i < b->n_children; i++)
		builder_reset(b->children[i]);
}

static int
builder_new(const ArrowField *field, const ArrowAllocator *alloc,
			ArrowBuilder **out, ArrowError *err)
{
	ArrowBuilder *b;

	*out = NULL;
	b = arrow_calloc(alloc, 1, sizeof(ArrowBuilder), err);
	if (b == NULL)
		return ARROW_ERR_NOMEM;
	b->field = field;
	b->alloc = alloc;
	if (field->has_dictionary)
	{
		b->type = field->dictionary.index_type;
		b->layout = ARROW_LAYOUT_FIXED;
	}
	else
	{
		const ArrowTypeInfo *info = arrow_type_info(field->type.id);

		b->type = field->type.id;
		b->layout = info->layout;
		b->large = info->offset_width == 8;
	}
	if (b->layout == ARROW_LAYOUT_FIXED)
	{
		ArrowType	vt = {.id = b->type, .byte_width = field->type.byte_width};

		b->width = arrow_type_value_width(&vt);
		b->is_integer = integer_range(b, &b->int_lo, &b->int_hi);
	}
	if ((b->layout == ARROW_LAYOUT_VAR || b->layout == ARROW_LAYOUT_LIST) &&
		gb_reserve(b, &b->offsets, offset_width(b), err) != ARROW_OK)
		goto fail;
	if (b->layout == ARROW_LAYOUT_LIST || b->layout == ARROW_LAYOUT_FIXED_LIST || b->layout == ARROW_LAYOUT_STRUCT)
	{
		if (field->n_children > 0)
		{
			b->children = arrow_calloc(alloc, field->n_children, sizeof(ArrowBuilder *), err);
			if (b->children == NULL)
				goto fail;
		}
		for (int32_t i = 0; i < field->n_children; i++)
		{
			if (builder_new(&field->children[i], alloc, &b->children[i], err) != ARROW_OK)
				goto fail;
			b->n_children = i + 1;
		}
	}
	builder_reset(b);
	*out = b;
	return ARROW_OK;

fail:
	arrow_builder_free(b);
	return err ? err->code : ARROW_ERR_NOMEM;
}

/*
 * Creates a builder for 'field' after checking that the field can be
 * written (arrow_field_check); the field must outlive the builder.
 */
int
arrow_builder_create(const ArrowField *field, const ArrowAllocator *alloc,
					 ArrowBuilder **out, ArrowError *err)
{
	int			rc;

	*out = NULL;
	if (field == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no field given for a builder");
	rc = arrow_field_check(field, 1, err);
	if (rc != ARROW_OK)
		return rc;
	return builder_new(field, arrow_alloc_or_default(alloc), out, err);
}

void
arrow_builder_free(ArrowBuilder *b)
{
	if (b == NULL)
		return;
	for (int32_t i = 0; i < b->n_children; i++)
		arrow_builder_free(b->children[i]);
	arrow_free(b->alloc, b->children);
	arrow_free(b->alloc, b->validity.data);
	arrow_free(b->alloc, b->values.data);
	arrow_free(b->alloc, b->offsets.data);
	arrow_free(b->alloc, b->data.data);
	arrow_free(b->alloc, b);
}

/* Keeps the buffers' memory for the next batch */
void
arrow_builder_reset(ArrowBuilder *b)
{
	if (b != NULL)
		builder_reset(b);
}

/* Child i of a LIST/LARGE_LIST/FIXED_SIZE_LIST/STRUCT builder, else NULL */
ArrowBuilder *
arrow_builder_child(ArrowBuilder *b, int32_t i)
{
	if (b == NULL || i < 0 || i >= b->n_children)
		return NULL;
	return b->children[i];
}

int64_t
arrow_builder_length(const ArrowBuilder *b)
{
	return b->length;
}

/*
 * Bytes of the batch body that b's buffers take, each padded to 64 bytes,
 * children included; the flatbuffer metadata is not counted.
 */
int64_t
arrow_builder_body_size(const ArrowBuilder *b)
{
	int64_t		size = 0;

	if (b->has_validity)
		size += arrow_align64(b->validity.len);
	size += arrow_align64(b->values.len);
	if (b->layout == ARROW_LAYOUT_VAR || b->layout == ARROW_LAYOUT_LIST)
		size += arrow_align64(b->offsets.len);
	size += arrow_align64(b->data.len);
	for (int32_t i = 0; i < b->n_children; i++)
		size += arrow_builder_body_size(b->children[i]);
	return size;
}

/* ------------------------------------------------------------------------
 * Appending: slots and validity
 * ------------------------------------------------------------------------
 */

/* "int8 field \"x\"" or "dictionary (int8 indices) field \"x\"" */
static void
describe(const ArrowBuilder *b, char *buf, size_t len)
{
	char		tname[96];
	ArrowType	it = {.id = b->type};

	if (b->field->has_dictionary)
	{
		arrow_type_format(&it, tname, sizeof(tname));
		snprintf(buf, len, "dictionary (%s indices) field \"%s\"", tname, b->field->name);
	}
	else
	{
		arrow_type_format(&b->field->type, tname, sizeof(tname));
		snprintf(buf, len, "%s field \"%s\"", tname, b->field->name);
	}
}

static int
wrong_kind(const ArrowBuilder *b, const char *what, ArrowError *err)
{
	char		d[192];

	describe(b, d, sizeof(d));
	return arrow_set_error(err, ARROW_ERR_ARGUMENT, "cannot append %s to %s", what, d);
}

/* Checks made by every public append function */
static int
append_start(const ArrowBuilder *b, ArrowError *err)
{
	if (b == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "append to a NULL builder");
	if (b->list_open)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "list value of field \"%s\" is still open (call arrow_list_end)",
							   b->field->name);
	return ARROW_OK;
}

/*
 * Makes room for bit 'index' in bitmap g.  A new byte is zeroed, so bits
 * past the last one appended are always 0.
 */
static int
bits_reserve(ArrowBuilder *b, GrowBuf *g, int64_t index, ArrowError *err)
{
	int64_t		byte = index >> 3;

	if (byte < g->len)
		return ARROW_OK;
	if (gb_reserve(b, g, byte + 1 - g->len, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	memset(g->data + g->len, 0, byte + 1 - g->len);
	g->len = byte + 1;
	return ARROW_OK;
}

/*
 * Creates the validity bitmap of a builder that had no null so far: its
 * b->length slots so far are marked valid.
 */
static int
validity_create(ArrowBuilder *b, ArrowError *err)
{
	int64_t		full = b->length >> 3;

	b->validity.len = 0;
	if (bits_reserve(b, &b->validity, b->length, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	memset(b->validity.data, 0xff, full);
	b->validity.data[full] = (uint8_t) ((1u << (b->length & 7)) - 1);
	b->has_validity = true;
	return ARROW_OK;
}

/*
 * Records the validity of slot b->length.  Either succeeds completely or
 * leaves the slot unrecorded.  The bitmap is created at the first null, with
 * the earlier slots marked valid.
 */
static int
push_validity(ArrowBuilder *b, bool valid, ArrowError *err)
{
	if (!valid && !b->has_validity && validity_create(b, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (b->has_validity)
	{
		if (bits_reserve(b, &b->validity, b->length, err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
		arrow_bit_set(b->validity.data, b->length, valid);
	}
	if (!valid)
		b->null_count++;
	return ARROW_OK;
}

/* Appends one fixed-width slot: the bytes at v, or zeros when v is NULL */
static int
push_fixed(ArrowBuilder *b, const void *v, bool valid, ArrowError *err)
{
	if (gb_reserve(b, &b->values, b->width, err) != ARROW_OK ||
		push_validity(b, valid, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (b->width > 0)
	{
		if (v != NULL)
			memcpy(b->values.data + b->values.len, v, b->width);
		else
			memset(b->values.data + b->values.len, 0, b->width);
		b->values.len += b->width;
	}
	b->length++;
	return ARROW_OK;
}

static int
push_bit(ArrowBuilder *b, bool bit, bool valid, ArrowError *err)
{
	if (bits_reserve(b, &b->values, b->length, err) != ARROW_OK ||
		push_validity(b, valid, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	arrow_bit_set(b->values.data, b->length, bit);
	b->length++;
	return ARROW_OK;
}

/*
 * The data offset after len more bytes in a UTF8/BINARY builder, or an
 * error when int32 offsets (or int64) cannot hold it.
 */
static int
var_end(const ArrowBuilder *b, size_t len, int64_t *end, ArrowError *err)
{
	if (len > (size_t) INT64_MAX || arrow_add_overflow(b->data.len, (int64_t) len, end))
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "value too large");
	if (!b->large && *end > INT32_MAX)
	{
		char		d[192];

		describe(b, d, sizeof(d));
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "%s: more than 2 GiB of data in one batch (int32 offsets); "
							   "write smaller batches or use a large_ type", d);
	}
	return ARROW_OK;
}

/* Appends a UTF8/BINARY slot (len bytes at v; a null has len 0) */
static int
push_var(ArrowBuilder *b, const void *v, size_t len, bool valid, ArrowError *err)
{
	int64_t		end;
	int			rc;

	if ((rc = var_end(b, len, &end, err)) != ARROW_OK)
		return rc;
	if (gb_reserve(b, &b->data, (int64_t) len, err) != ARROW_OK ||
		gb_reserve(b, &b->offsets, offset_width(b), err) != ARROW_OK ||
		push_validity(b, valid, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (len > 0)
		memcpy(b->data.data + b->data.len, v, len);
	b->data.len = end;
	put_offset(b, b->length + 1, end);
	b->offsets.len += offset_width(b);
	b->length++;
	return ARROW_OK;
}

/* Starts a LIST slot; the end offset is set again by arrow_list_end */
static int
push_list(ArrowBuilder *b, bool valid, ArrowError *err)
{
	if (gb_reserve(b, &b->offsets, offset_width(b), err) != ARROW_OK ||
		push_validity(b, valid, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	put_offset(b, b->length + 1, b->children[0]->length);
	b->offsets.len += offset_width(b);
	b->length++;
	return ARROW_OK;
}

/*
 * Appends one slot with empty contents (zeros, "", an empty list), valid or
 * null; the children of a STRUCT or FIXED_SIZE_LIST slot get fillers.
 */
static int
push_empty_slot(ArrowBuilder *b, bool valid, ArrowError *err)
{
	int			rc;

	switch (b->layout)
	{
		case ARROW_LAYOUT_NULL:
			b->length++;
			b->null_count++;
			return ARROW_OK;
		case ARROW_LAYOUT_BITS:
			return push_bit(b, false, valid, err);
		case ARROW_LAYOUT_FIXED:
			return push_fixed(b, NULL, valid, err);
		case ARROW_LAYOUT_VAR:
			return push_var(b, NULL, 0, valid, err);
		case ARROW_LAYOUT_LIST:
			return push_list(b, valid, err);
		case ARROW_LAYOUT_FIXED_LIST:
			for (int32_t i = 0; i < b->field->type.list_size; i++)
			{
				if ((rc = append_filler(b->children[0], err)) != ARROW_OK)
					return rc;
			}
			break;
		case ARROW_LAYOUT_STRUCT:
			for (int32_t i = 0; i < b->n_children; i++)
			{
				if ((rc = append_filler(b->children[i], err)) != ARROW_OK)
					return rc;
			}
			break;
		case ARROW_LAYOUT_VIEW:
		case ARROW_LAYOUT_LIST_VIEW:
		case ARROW_LAYOUT_RUN_END:
			/* not writable: arrow_field_check refused the field */
			break;
	}
	if ((rc = push_validity(b, valid, err)) != ARROW_OK)
		return rc;
	b->length++;
	return ARROW_OK;
}

/*
 * Appends the value a child gets under a null parent slot (STRUCT,
 * FIXED_SIZE_LIST): a null when the child is nullable, else an "empty"
 * valid value, recursively for nested children.
 */
static int
append_filler(ArrowBuilder *b, ArrowError *err)
{
	return push_empty_slot(b, !b->field->nullable && b->layout != ARROW_LAYOUT_NULL, err);
}

/* A null slot, whatever the field's nullability */
static int
append_null_slot(ArrowBuilder *b, ArrowError *err)
{
	return push_empty_slot(b, false, err);
}

/*
 * A null of any type.  A field declared non-nullable rejects it (the type
 * NULL excepted, whose values are all null).
 */
int
arrow_append_null(ArrowBuilder *b, ArrowError *err)
{
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (!b->field->nullable && b->layout != ARROW_LAYOUT_NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "null value for non-nullable field \"%s\"", b->field->name);
	return append_null_slot(b, err);
}

/* ------------------------------------------------------------------------
 * Appending: values
 * ------------------------------------------------------------------------
 */
int
arrow_append_bool(ArrowBuilder *b, bool v, ArrowError *err)
{
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (b->type != ARROW_TYPE_BOOL)
		return wrong_kind(b, "a bool", err);
	return push_bit(b, v, true, err);
}

static const int64_t nanos_per_unit[] = {1000000000, 1000000, 1000, 1};

/*
 * The values an integer-valued column accepts: the type's range;
 * non-negative for dictionary indices; a time of day within [0, 24h) in the
 * type's unit for TIME32/TIME64.  False for the other types.
 */
static bool
integer_range(const ArrowBuilder *b, __int128 *lo, __int128 *hi)
{
	const ArrowTypeInfo *info = arrow_type_info(b->type);
	int			bits = info->bit_width;

	if (info->value == ARROW_VALUE_INT)
		*lo = -((__int128) 1 << (bits - 1)), *hi = ((__int128) 1 << (bits - 1)) - 1;
	else if (info->value == ARROW_VALUE_UINT)
		*lo = 0, *hi = ((__int128) 1 << bits) - 1;
	else
		return false;
	if (b->type == ARROW_TYPE_TIME32 || b->type == ARROW_TYPE_TIME64)
		*lo = 0, *hi = (__int128) 86400 * 1000000000 / nanos_per_unit[b->field->type.unit] - 1;
	if (b->field->has_dictionary)
		*lo = 0;
	return true;
}

/* Appends an integer to an integer-valued column after checking it fits */
static int
append_integer(ArrowBuilder *b, __int128 v, ArrowError *err)
{
	int64_t		store;
	char		d[192];
	char		num[32];
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (!b->is_integer)
		return wrong_kind(b, "an integer", err);
	if (v < b->int_lo || v > b->int_hi)
	{
		describe(b, d, sizeof(d));
		if (v < 0)
			snprintf(num, sizeof(num), "%lld", (long long) v);
		else
			snprintf(num, sizeof(num), "%llu", (unsigned long long) v);
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "value %s out of range for %s", num, d);
	}
	/* the low 'width' bytes of the two's complement value (little-endian) */
	store = (int64_t) (uint64_t) (unsigned __int128) v;
	return push_fixed(b, &store, true, err);
}

/*
 * The common case takes a short path: a value in range, room in the values
 * buffer and no validity bitmap yet (no null so far in this batch).  It
 * does exactly what append_integer does for it.
 */
int
arrow_append_int(ArrowBuilder *b, int64_t v, ArrowError *err)
{
	if (b != NULL && b->is_integer && !b->has_validity &&
		v >= b->int_lo && v <= b->int_hi &&
		b->values.len + b->width <= b->values.cap)
	{
		memcpy(b->values.data + b->values.len, &v, b->width);	/* little-endian */
		b->values.len += b->width;
		b->length++;
		return ARROW_OK;
	}
	return append_integer(b, v, err);
}

int
arrow_append_uint(ArrowBuilder *b, uint64_t v, ArrowError *err)
{
	return append_integer(b, v, err);
}

/*
 * double -> float16, correctly rounded (to nearest, ties to even).  Going
 * through float with round-to-nearest could round twice; rounding to float
 * with "round to odd" (truncate, then set the last bit if inexact) keeps
 * enough information (24 >= 11 + 2 bits) for the final rounding to be right.
 * The caller has excluded finite values that overflow float16.
 */
static uint16_t
double_to_half(double d)
{
	float		f = (float) d;

	if (isfinite(d) && (double) f != d)
	{
		uint32_t	bits;

		memcpy(&bits, &f, sizeof(bits));
		if (fabs((double) f) > fabs(d))
			bits--;				/* one ulp toward zero: truncation */
		bits |= 1;
		memcpy(&f, &bits, sizeof(f));
	}
	return arrow_float_to_half(f);
}

/*
 * FLOAT16 and FLOAT32 round to nearest; a finite value that would round to
 * infinity is out of range.  NaN and infinities are kept.
 */
int
arrow_append_float(ArrowBuilder *b, double v, ArrowError *err)
{
	char		d[192];
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	switch (b->type)
	{
		case ARROW_TYPE_FLOAT16:
			{
				uint16_t	h;

				/* 65520 is halfway between 65504 (max) and 65536 */
				if (isfinite(v) && fabs(v) >= 65520.0)
					break;
				h = double_to_half(v);
				return push_fixed(b, &h, true, err);
			}
		case ARROW_TYPE_FLOAT32:
			{
				float		f;

				/* FLT_MAX + half an ulp rounds (to even) to infinity */
				if (isfinite(v) && fabs(v) >= 0x1.ffffffp127)
					break;
				f = (float) v;
				return push_fixed(b, &f, true, err);
			}
		case ARROW_TYPE_FLOAT64:
			return push_fixed(b, &v, true, err);
		default:
			return wrong_kind(b, "a floating-point value", err);
	}
	describe(b, d, sizeof(d));
	return arrow_set_error(err, ARROW_ERR_ARGUMENT, "value %g out of range for %s", v, d);
}

/* The value must have at most 'precision' digits */
int
arrow_append_decimal(ArrowBuilder *b, ArrowDecimal128 v, ArrowError *err)
{
	__int128	x = (__int128) (((unsigned __int128) (uint64_t) v.hi << 64) | v.lo);
	__int128	limit = 1;
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (b->type != ARROW_TYPE_DECIMAL128)
		return wrong_kind(b, "a decimal", err);
	for (int32_t i = 0; i < b->field->type.precision; i++)
		limit *= 10;
	if (x >= limit || x <= -limit)
	{
		char		d[192];
		char		num[ARROW_DECIMAL128_MAX_TEXT];

		describe(b, d, sizeof(d));
		arrow_decimal128_format(v, b->field->type.scale, num, sizeof(num));
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "value %s has more digits than the precision of %s", num, d);
	}
	return push_fixed(b, &v, true, err);
}

/*
 * Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
 * Runs of ASCII are checked 8 bytes at a time.
 */
static bool
utf8_valid(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		c = s[i];
		size_t		n;
		uint32_t	cp;
		uint32_t	min;
		uint64_t	word;

		if (len - i >= 8)
		{
			memcpy(&word, s + i, 8);
			if ((word & 0x8080808080808080ULL) == 0)
			{
				i += 8;
				continue;
			}
		}
		if (c < 0x80)
		{
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0)
			n = 1, cp = c & 0x1f, min = 0x80;
		else if ((c & 0xf0) == 0xe0)
			n = 2, cp = c & 0x0f, min = 0x800;
		else if ((c & 0xf8) == 0xf0)
			n = 3, cp = c & 0x07, min = 0x10000;
		else
			return false;
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++)
		{
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/*
 * UTF8 values must be valid UTF-8; FIXED_SIZE_BINARY values exactly
 * byte_width bytes; UTF8 and BINARY (int32 offsets) hold at most 2 GiB of
 * data per batch.
 */
int
arrow_append_bytes(ArrowBuilder *b, const void *v, size_t len, ArrowError *err)
{
	int			rc = append_start(b, err);
	const ArrowTypeInfo *info;
	int64_t		end;
	char		d[192];

	if (rc != ARROW_OK)
		return rc;
	if (v == NULL && len > 0)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "NULL pointer for %zu bytes", len);
	info = arrow_type_info(b->type);
	if (b->layout == ARROW_LAYOUT_VAR && info->value == ARROW_VALUE_STRING)
	{
		/* a value too large fails before the validation reads it */
		if ((rc = var_end(b, len, &end, err)) != ARROW_OK)
			return rc;
		if (!utf8_valid(v, len))
		{
			describe(b, d, sizeof(d));
			return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid UTF-8 for %s", d);
		}
		return push_var(b, v, len, true, err);
	}
	if (b->layout == ARROW_LAYOUT_VAR)
		return push_var(b, v, len, true, err);
	if (b->layout != ARROW_LAYOUT_FIXED || info->value != ARROW_VALUE_BYTES)
		return wrong_kind(b, "bytes", err);
	/* FIXED_SIZE_BINARY */
	if (len != (size_t) b->field->type.byte_width)
	{
		describe(b, d, sizeof(d));
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "value of %zu bytes for %s", len, d);
	}
	return push_fixed(b, v, true, err);
}

int
arrow_append_interval_dt(ArrowBuilder *b, int32_t days, int32_t msecs,
						 ArrowError *err)
{
	int32_t		v[2] = {days, msecs};
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (b->type != ARROW_TYPE_INTERVAL_DT)
		return wrong_kind(b, "a day-time interval", err);
	return push_fixed(b, v, true, err);
}

int
arrow_append_interval_mdn(ArrowBuilder *b, int32_t months, int32_t days,
						  int64_t nanos, ArrowError *err)
{
	uint8_t		v[16];
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	if (b->type != ARROW_TYPE_INTERVAL_MDN)
		return wrong_kind(b, "a month-day-nano interval", err);
	memcpy(v, &months, 4);
	memcpy(v + 4, &days, 4);
	memcpy(v + 8, &nanos, 8);
	return push_fixed(b, v, true, err);
}

/*
 * A non-null STRUCT, LIST/LARGE_LIST or FIXED_SIZE_LIST slot; the caller
 * then appends the children's values (and, for lists, calls arrow_list_end).
 */
int
arrow_append_valid(ArrowBuilder *b, ArrowError *err)
{
	int			rc = append_start(b, err);

	if (rc != ARROW_OK)
		return rc;
	switch (b->layout)
	{
		case ARROW_LAYOUT_LIST:
			if ((rc = push_list(b, true, err)) != ARROW_OK)
				return rc;
			b->list_open = true;
			return ARROW_OK;
		case ARROW_LAYOUT_FIXED_LIST:
		case ARROW_LAYOUT_STRUCT:
			if ((rc = push_validity(b, true, err)) != ARROW_OK)
				return rc;
			b->length++;
			return ARROW_OK;
		default:
			return wrong_kind(b, "a nested value", err);
	}
}

/*
 * Closes the list opened by arrow_append_valid: its elements are the child
 * values appended since.  A LIST (int32 offsets) may not reach 2^31 child
 * values in one batch; after that error the list stays open.
 */
int
arrow_list_end(ArrowBuilder *b, ArrowError *err)
{
	int64_t		end;

	if (b == NULL || b->layout != ARROW_LAYOUT_LIST || !b->list_open)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "arrow_list_end without an open list value%s%s%s",
							   b ? " (field \"" : "", b ? b->field->name : "", b ? "\")" : "");
	end = b->children[0]->length;
	if (!b->large && end > INT32_MAX)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "list field \"%s\": more than 2^31 - 1 elements in one batch "
							   "(int32 offsets); write smaller batches or use large_list",
							   b->field->name);
	put_offset(b, b->length, end);
	b->list_open = false;
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * Copying rows from another builder
 * ------------------------------------------------------------------------
 */

/* Nulls among rows [off, off + n) of b */
static int64_t
range_nulls(const ArrowBuilder *b, int64_t off, int64_t n)
{
	if (b->layout == ARROW_LAYOUT_NULL)
		return n;
	if (!b->has_validity || n == 0)
		return 0;
	return arrow_bits_count_zeros(b->validity.data, off, n);
}

/*
 * The checks of arrow_builder_append_rows that can fail for valid
 * arguments, made before anything changes: nulls for a non-nullable field,
 * int32 offsets that would pass 2^31 - 1.
 */
static int
rows_check(const ArrowBuilder *dst, const ArrowBuilder *src, int64_t off,
		   int64_t n, ArrowError *err)
{
	int64_t		first,
				last,
				end;

	if (!dst->field->nullable && dst->layout != ARROW_LAYOUT_NULL && range_nulls(src, off, n) > 0)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "null value for non-nullable field \"%s\"", dst->field->name);
	switch (dst->layout)
	{
		case ARROW_LAYOUT_VAR:
			first = get_offset(src, off);
			last = get_offset(src, off + n);
			return var_end(dst, (size_t) (last - first), &end, err);
		case ARROW_LAYOUT_LIST:
			first = get_offset(src, off);
			last = get_offset(src, off + n);
			if (!dst->large && dst->children[0]->length + (last - first) > INT32_MAX)
				return arrow_set_error(err, ARROW_ERR_ARGUMENT,
									   "list field \"%s\": more than 2^31 - 1 elements in one batch "
									   "(int32 offsets); write smaller batches or use large_list",
									   dst->field->name);
			return rows_check(dst->children[0], src->children[0], first, last - first, err);
		case ARROW_LAYOUT_FIXED_LIST:
			{
				int64_t		size = dst->field->type.list_size;

				return rows_check(dst->children[0], src->children[0], off * size, n * size, err);
			}
		case ARROW_LAYOUT_STRUCT:
			for (int32_t i = 0; i < dst->n_children; i++)
			{
				int			rc = rows_check(dst->children[i], src->children[i], off, n, err);

				if (rc != ARROW_OK)
					return rc;
			}
			return ARROW_OK;
		default:
			return ARROW_OK;
	}
}

/* The validity bits of rows [off, off + n) of src, after dst's rows */
static int
rows_validity(ArrowBuilder *dst, const ArrowBuilder *src, int64_t off, int64_t n,
			  int64_t nulls, ArrowError *err)
{
	if (nulls > 0 && !dst->has_validity && validity_create(dst, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (dst->has_validity && n > 0)
	{
		if (bits_reserve(dst, &dst->validity, dst->length + n - 1, err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
		if (src->has_validity)
			arrow_bits_copy(dst->validity.data, dst->length, src->validity.data, off, n);
		else
			for (int64_t i = 0; i < n; i++)
				arrow_bit_set(dst->validity.data, dst->length + i, true);
	}
	dst->null_count += nulls;
	return ARROW_OK;
}

/* arrow_builder_append_rows after its checks */
static int
rows_append(ArrowBuilder *dst, const ArrowBuilder *src, int64_t off, int64_t n,
			ArrowError *err)
{
	int			ow = offset_width(dst);
	int64_t		first,
				last;
	int			rc;

	if (dst->layout == ARROW_LAYOUT_NULL)
	{
		dst->length += n;
		dst->null_count += n;
		return ARROW_OK;
	}
	if ((rc = rows_validity(dst, src, off, n, range_nulls(src, off, n), err)) != ARROW_OK)
		return rc;
	switch (dst->layout)
	{
		case ARROW_LAYOUT_BITS:
			if (n > 0)
			{
				if (bits_reserve(dst, &dst->values, dst->length + n - 1, err) != ARROW_OK)
					return ARROW_ERR_NOMEM;
				arrow_bits_copy(dst->values.data, dst->length, src->values.data, off, n);
			}
			break;
		case ARROW_LAYOUT_FIXED:
			if (gb_reserve(dst, &dst->values, n * dst->width, err) != ARROW_OK)
				return ARROW_ERR_NOMEM;
			if (n > 0 && dst->width > 0)
				memcpy(dst->values.data + dst->values.len,
					   src->values.data + off * src->width, n * dst->width);
			dst->values.len += n * dst->width;
			break;
		case ARROW_LAYOUT_VAR:
		case ARROW_LAYOUT_LIST:
			{
				/* new offsets: src's, moved from 'first' to dst's current end */
				int64_t		base;

				first = get_offset(src, off);
				last = get_offset(src, off + n);
				if (dst->layout == ARROW_LAYOUT_VAR)
				{
					base = dst->data.len;
					if (gb_reserve(dst, &dst->data, last - first, err) != ARROW_OK)
						return ARROW_ERR_NOMEM;
					if (last > first)
						memcpy(dst->data.data + dst->data.len, src->data.data + first,
							   last - first);
					dst->data.len += last - first;
				}
				else
				{
					base = dst->children[0]->length;
					if ((rc = rows_append(dst->children[0], src->children[0], first,
										  last - first, err)) != ARROW_OK)
						return rc;
				}
				if (gb_reserve(dst, &dst->offsets, n * ow, err) != ARROW_OK)
					return ARROW_ERR_NOMEM;
				for (int64_t i = 1; i <= n; i++)
					put_offset(dst, dst->length + i, base + get_offset(src, off + i) - first);
				dst->offsets.len += n * ow;
				break;
			}
		case ARROW_LAYOUT_FIXED_LIST:
			{
				int64_t		size = dst->field->type.list_size;

				if ((rc = rows_append(dst->children[0], src->children[0], off * size,
									  n * size, err)) != ARROW_OK)
					return rc;
				break;
			}
		case ARROW_LAYOUT_STRUCT:
			for (int32_t i = 0; i < dst->n_children; i++)
			{
				if ((rc = rows_append(dst->children[i], src->children[i], off, n,
									  err)) != ARROW_OK)
					return rc;
			}
			break;
		case ARROW_LAYOUT_NULL:
			/* no buffers */
		case ARROW_LAYOUT_VIEW:
		case ARROW_LAYOUT_LIST_VIEW:
		case ARROW_LAYOUT_RUN_END:
			/* not writable: arrow_field_check refused the field */
			break;
	}
	dst->length += n;
	return ARROW_OK;
}

int
arrow_builder_append_rows(ArrowBuilder *dst, const ArrowBuilder *src,
						  int64_t offset, int64_t count, ArrowError *err)
{
	int			rc;

	if ((rc = append_start(dst, err)) != ARROW_OK)
		return rc;
	if (src == NULL || src == dst)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no other builder to copy rows from");
	if (src->list_open)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "list value of field \"%s\" is still open (call arrow_list_end)",
							   src->field->name);
	if (offset < 0 || count < 0 || offset > src->length || count > src->length - offset)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "rows %lld..%lld are not in field \"%s\" (%lld rows)",
							   (long long) offset, (long long) offset + count,
							   src->field->name, (long long) src->length);
	if (src->field != dst->field && !same_type(src->field, dst->field, false))
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "rows of field \"%s\" copied to field \"%s\" of another type",
							   src->field->name, dst->field->name);
	if ((rc = rows_check(dst, src, offset, count, err)) != ARROW_OK)
		return rc;
	return rows_append(dst, src, offset, count, err);
}

int64_t
arrow_builder_rows_size(const ArrowBuilder *b, int64_t offset, int64_t count)
{
	int64_t		size = 0;
	int64_t		first,
				last;

	if (b->has_validity)
		size += (count + 7) / 8;
	switch (b->layout)
	{
		case ARROW_LAYOUT_BITS:
			size += (count + 7) / 8;
			break;
		case ARROW_LAYOUT_FIXED:
			size += count * b->width;
			break;
		case ARROW_LAYOUT_VAR:
			size += count * offset_width(b) + get_offset(b, offset + count) - get_offset(b, offset);
			break;
		case ARROW_LAYOUT_LIST:
			first = get_offset(b, offset);
			last = get_offset(b, offset + count);
			size += count * offset_width(b) +
				arrow_builder_rows_size(b->children[0], first, last - first);
			break;
		case ARROW_LAYOUT_FIXED_LIST:
			size += arrow_builder_rows_size(b->children[0], offset * b->field->type.list_size,
											count * b->field->type.list_size);
			break;
		case ARROW_LAYOUT_STRUCT:
			for (int32_t i = 0; i < b->n_children; i++)
				size += arrow_builder_rows_size(b->children[i], offset, count);
			break;
		case ARROW_LAYOUT_NULL:
			/* no buffers */
		case ARROW_LAYOUT_VIEW:
		case ARROW_LAYOUT_LIST_VIEW:
		case ARROW_LAYOUT_RUN_END:
			/* not writable: arrow_field_check refused the field */
			break;
	}
	return size;
}

/* ------------------------------------------------------------------------
 * Statistics
 * ------------------------------------------------------------------------
 */

/* Value i of a FIXED layout integer-valued builder, sign-extended or not */
static inline int64_t
int_value(const ArrowBuilder *b, int64_t i, bool is_signed)
{
	const uint8_t *p = b->values.data + i * b->width;

	return is_signed ? arrow_load_int(p, b->width) : (int64_t) arrow_load_uint(p, b->width);
}

static inline double
float_value(const ArrowBuilder *b, int64_t i)
{
	return arrow_load_float(b->values.data + i * b->width, b->width);
}

void
arrow_builder_minmax(const ArrowBuilder *b, ArrowMinMax *out)
{
	ArrowMinMaxKind kind;
	bool		is_signed;
	bool		any = false;
	__int128	xmin = 0,
				xmax = 0;

	memset(out, 0, sizeof(ArrowMinMax));
	if (b->field->has_dictionary || b->layout != ARROW_LAYOUT_FIXED)
		return;
	kind = arrow_type_info(b->type)->minmax;
	is_signed = arrow_type_info(b->type)->value == ARROW_VALUE_INT;
	if (kind == ARROW_MINMAX_NONE)
		return;
	for (int64_t i = 0; i < b->length; i++)
	{
		if (b->has_validity && !arrow_bit_get(b->validity.data, i))
			continue;
		if (kind == ARROW_MINMAX_INT)
		{
			int64_t		v = int_value(b, i, is_signed);

			if (!any || v < out->imin)
				out->imin = v;
			if (!any || v > out->imax)
				out->imax = v;
		}
		else if (kind == ARROW_MINMAX_FLOAT)
		{
			double		v = float_value(b, i);

			if (isnan(v))
				continue;
			if (!any || v < out->dmin)
				out->dmin = v;
			if (!any || v > out->dmax)
				out->dmax = v;
		}
		else
		{
			ArrowDecimal128 d;
			__int128	v;

			memcpy(&d, b->values.data + 16 * i, 16);
			v = (__int128) (((unsigned __int128) (uint64_t) d.hi << 64) | d.lo);
			if (!any || v < xmin)
				xmin = v;
			if (!any || v > xmax)
				xmax = v;
		}
		any = true;
	}
	if (!any)
		return;
	out->kind = kind;
	if (kind == ARROW_MINMAX_DECIMAL)
	{
		out->xmin.lo = (uint64_t) xmin;
		out->xmin.hi = (int64_t) (xmin >> 64);
		out->xmax.lo = (uint64_t) xmax;
		out->xmax.hi = (int64_t) (xmax >> 64);
	}
}

/* ------------------------------------------------------------------------
 * What the writer needs
 * ------------------------------------------------------------------------
 */

/* Same type and nesting (names aside); dict_values: f's value type */
static bool
same_type(const ArrowField *bf, const ArrowField *f, bool dict_values)
{
	bool		f_dict = f->has_dictionary && !dict_values;
	char		ta[128];
	char		tb[128];

	if (bf->has_dictionary != f_dict)
		return false;
	if (f_dict && bf->dictionary.index_type != f->dictionary.index_type)
		return false;
	arrow_type_format(&bf->type, ta, sizeof(ta));
	arrow_type_format(&f->type, tb, sizeof(tb));
	if (strcmp(ta, tb) != 0 || bf->n_children != f->n_children)
		return false;
	for (int32_t i = 0; i < f->n_children; i++)
	{
		if (!same_type(&bf->children[i], &f->children[i], false))
			return false;
	}
	return true;
}

static int
check_lengths(const ArrowBuilder *b, ArrowError *err)
{
	int64_t		want = -1;

	if (b->list_open)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "list value of field \"%s\" is still open (call arrow_list_end)",
							   b->field->name);
	switch (b->layout)
	{
		case ARROW_LAYOUT_STRUCT:
			want = b->length;
			break;
		case ARROW_LAYOUT_LIST:
			want = get_offset(b, b->length);
			break;
		case ARROW_LAYOUT_FIXED_LIST:
			if (arrow_mul_overflow(b->length, b->field->type.list_size, &want))
				return arrow_set_error(err, ARROW_ERR_ARGUMENT, "fixed_size_list too long");
			break;
		default:
			break;
	}
	for (int32_t i = 0; i < b->n_children; i++)
	{
		int			rc;

		if (b->children[i]->length != want)
			return arrow_set_error(err, ARROW_ERR_ARGUMENT,
								   "child \"%s\" of field \"%s\" has %lld values, %lld expected",
								   b->children[i]->field->name, b->field->name,
								   (long long) b->children[i]->length, (long long) want);
		if ((rc = check_lengths(b->children[i], err)) != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

int
arrow_builder_check(const ArrowBuilder *b, const ArrowField *field,
					bool dictionary_values, ArrowError *err)
{
	if (b == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no builder for field \"%s\"", field->name);
	if ((b->field != field || dictionary_values) &&
		!same_type(b->field, field, dictionary_values))
	{
		char		ta[128];
		char		tb[128];

		arrow_type_format(&b->field->type, ta, sizeof(ta));
		arrow_type_format(&field->type, tb, sizeof(tb));
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "builder of field \"%s\" (%s%s) used for field \"%s\" (%s%s)",
							   b->field->name, ta, b->field->has_dictionary ? ", dictionary" : "",
							   field->name, tb,
							   field->has_dictionary && !dictionary_values ? ", dictionary" : "");
	}
	return check_lengths(b, err);
}

void
arrow_builder_count(const ArrowBuilder *b, int32_t *n_nodes, int32_t *n_buffers)
{
	*n_nodes += 1;
	*n_buffers += arrow_field_buffer_count(b->field);
	for (int32_t i = 0; i < b->n_children; i++)
		arrow_builder_count(b->children[i], n_nodes, n_buffers);
}

static void
export_buffer(const GrowBuf *g, ArrowBuiltBuffer **buffers)
{
	(*buffers)->data = g->len > 0 ? g->data : NULL;
	(*buffers)->length = g->len;
	(*buffers)++;
}

int64_t
arrow_builder_max_index(const ArrowBuilder *b, int64_t dict_id)
{
	int64_t		max = -1;

	if (b->field->has_dictionary && b->field->dictionary.id == dict_id)
	{
		bool		is_signed = arrow_type_info(b->type)->value == ARROW_VALUE_INT;

		for (int64_t row = 0; row < b->length; row++)
		{
			int64_t		v;

			if (b->has_validity && !arrow_bit_get(b->validity.data, row))
				continue;
			/* append_int/uint keep 64-bit indices within int64 */
			v = int_value(b, row, is_signed);
			if (v > max)
				max = v;
		}
	}
	for (int32_t i = 0; i < b->n_children; i++)
	{
		int64_t		m = arrow_builder_max_index(b->children[i], dict_id);

		if (m > max)
			max = m;
	}
	return max;
}

void
arrow_builder_export(const ArrowBuilder *b, ArrowNode **nodes,
					 ArrowBuiltBuffer **buffers)
{
	static const GrowBuf none = {NULL, 0, 0};

	(*nodes)->length = b->length;
	(*nodes)->null_count = b->null_count;
	(*nodes)++;
	if (b->layout == ARROW_LAYOUT_NULL)
		return;
	export_buffer(b->has_validity ? &b->validity : &none, buffers);
	switch (b->layout)
	{
		case ARROW_LAYOUT_BITS:
		case ARROW_LAYOUT_FIXED:
			export_buffer(&b->values, buffers);
			break;
		case ARROW_LAYOUT_VAR:
			export_buffer(&b->offsets, buffers);
			export_buffer(&b->data, buffers);
			break;
		case ARROW_LAYOUT_LIST:
			export_buffer(&b->offsets, buffers);
			break;
		default:
			break;
	}
	for (int32_t i = 0; i < b->n_children; i++)
		arrow_builder_export(b->children[i], nodes, buffers);
}
