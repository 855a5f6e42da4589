/*-------------------------------------------------------------------------
 *
 * arrow_json.c
 *		The JSON form of schemas and values (doc/arrow-json.md), used by
 *		arrow-inspect and the tests.
 *
 * Every value has exactly one form.  The choices the document leaves to us,
 * also written down there:
 *	- separators are ", " and ": ";
 *	- in strings, '"' and '\' are escaped as \" and \\; the control
 *	  characters (U+0000 to U+001F, U+007F to U+009F) and the line and
 *	  paragraph separators U+2028 and U+2029 as \uxxxx (lowercase hex), so
 *	  that no JSON line splits where a reader splits lines; everything else
 *	  is copied as UTF-8;
 *	- a byte of a utf8 value (or of a name or metadata string) that is not
 *	  part of a well-formed UTF-8 sequence becomes \ufffd, so the output is
 *	  always valid JSON; well-formed means no overlong forms, no surrogates,
 *	  nothing above U+10FFFF;
 *	- a decimal128 with negative scale S prints as the integer
 *	  unscaled * 10^-S (no point);
 *	- a schema field has "metadata" only when it has metadata, "children"
 *	  exactly for list, large_list, fixed_size_list, struct, list_view,
 *	  large_list_view, map and run_end_encoded, and
 *	  "dictionary" exactly when it is dictionary-encoded.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_internal.h"
#include "arrow_bits.h"
#include "arrow_types.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define APPEND_LIT(buf, s, err) arrow_strbuf_append((buf), (s), sizeof(s) - 1, (err))

/* Length of the well-formed UTF-8 sequence at s (n bytes left), 0 if none */
static int
utf8_sequence_length(const uint8_t *s, int64_t n)
{
	uint8_t		c = s[0];
	uint8_t		lo = 0x80;
	uint8_t		hi = 0xbf;
	int			len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
	{
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;			/* no overlong forms */
		else if (c == 0xed)
			hi = 0x9f;			/* no surrogates */
	}
	else if (c >= 0xf0 && c <= 0xf4)
	{
		len = 4;
		if (c == 0xf0)
			lo = 0x90;			/* no overlong forms */
		else if (c == 0xf4)
			hi = 0x8f;			/* nothing above U+10FFFF */
	}
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
	{
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	}
	return len;
}

/* Appends s (len bytes) as a JSON string */
static int
append_string(ArrowStrBuf *buf, const uint8_t *s, int64_t len, ArrowError *err)
{
	int64_t		run = 0;		/* start of the bytes copied as they are */
	int64_t		i = 0;

	if (APPEND_LIT(buf, "\"", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	while (i < len)
	{
		uint8_t		c = s[i];
		int			n = utf8_sequence_length(s + i, len - i);
		uint32_t	cp = c;
		char		esc[8];
		const char *rep = NULL;

		if (n == 2)
			cp = ((c & 0x1fu) << 6) | (s[i + 1] & 0x3fu);
		else if (n == 3)
			cp = ((c & 0x0fu) << 12) | ((s[i + 1] & 0x3fu) << 6) | (s[i + 2] & 0x3fu);
		if (n == 0)
			rep = "\\ufffd";
		else if (c == '"')
			rep = "\\\"";
		else if (c == '\\')
			rep = "\\\\";
		else if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029)
		{
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned) cp);
			rep = esc;
		}
		else
		{
			i += n;				/* copied as it is */
			continue;
		}
		if (arrow_strbuf_append(buf, (const char *) s + run, i - run, err) != ARROW_OK ||
			arrow_strbuf_append(buf, rep, strlen(rep), err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
		i += n > 0 ? n : 1;
		run = i;
	}
	if (arrow_strbuf_append(buf, (const char *) s + run, i - run, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	return APPEND_LIT(buf, "\"", err);
}

/* Appends a NUL-terminated string as a JSON string */
static int
append_cstring(ArrowStrBuf *buf, const char *s, ArrowError *err)
{
	return append_string(buf, (const uint8_t *) s, (int64_t) strlen(s), err);
}

/* Appends bytes as a lowercase hex JSON string */
static int
append_hex(ArrowStrBuf *buf, const uint8_t *p, int64_t len, ArrowError *err)
{
	static const char digits[] = "0123456789abcdef";
	char		chunk[128];
	int			n = 0;

	if (APPEND_LIT(buf, "\"", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	for (int64_t i = 0; i < len; i++)
	{
		chunk[n++] = digits[p[i] >> 4];
		chunk[n++] = digits[p[i] & 15];
		if (n == sizeof(chunk) || i == len - 1)
		{
			if (arrow_strbuf_append(buf, chunk, n, err) != ARROW_OK)
				return ARROW_ERR_NOMEM;
			n = 0;
		}
	}
	return APPEND_LIT(buf, "\"", err);
}

/* A float widened to double: %.17g, "-0.0", "NaN", "Infinity", "-Infinity" */
static int
append_double(ArrowStrBuf *buf, double d, ArrowError *err)
{
	if (isnan(d))
		return APPEND_LIT(buf, "\"NaN\"", err);
	if (isinf(d))
		return d > 0 ? APPEND_LIT(buf, "\"Infinity\"", err) : APPEND_LIT(buf, "\"-Infinity\"", err);
	if (d == 0 && signbit(d))
		return APPEND_LIT(buf, "-0.0", err);
	return arrow_strbuf_printf(buf, err, "%.17g", d);
}

/* A decimal128 (16 little-endian bytes at p) as a JSON string */
static int
append_decimal(ArrowStrBuf *buf, const uint8_t *p, int32_t scale, ArrowError *err)
{
	ArrowDecimal128 d;
	char		text[ARROW_DECIMAL128_MAX_TEXT];

	memcpy(&d.lo, p, 8);
	memcpy(&d.hi, p + 8, 8);
	arrow_decimal128_format(d, scale, text, sizeof(text));
	return append_cstring(buf, text, err);
}

static int	value_json(const ArrowArray *a, int64_t row, ArrowStrBuf *buf,
					   ArrowError *err);

/* Elements [start, start + n) of child as a JSON array */
static int
append_elements(const ArrowArray *child, int64_t start, int64_t n,
				ArrowStrBuf *buf, ArrowError *err)
{
	if (APPEND_LIT(buf, "[", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	for (int64_t i = 0; i < n; i++)
	{
		if ((i > 0 && APPEND_LIT(buf, ", ", err) != ARROW_OK) ||
			value_json(child, start + i, buf, err) != ARROW_OK)
			return err->code;
	}
	return APPEND_LIT(buf, "]", err);
}

/*
 * A value of a (LARGE_)UTF8/BINARY, view or FIXED_SIZE_BINARY array: a JSON
 * string for text, hex for bytes.
 */
static int
bytes_json(const ArrowArray *a, const ArrowTypeInfo *info, int64_t row,
		   ArrowStrBuf *buf, ArrowError *err)
{
	const uint8_t *p;
	int64_t		n;

	if (info->layout == ARROW_LAYOUT_VAR)
	{
		bool		large = info->offset_width == 8;
		int64_t		start = arrow_offset_at(a->offsets, large, row);

		p = a->data + start;
		n = arrow_offset_at(a->offsets, large, row + 1) - start;
	}
	else if (info->layout == ARROW_LAYOUT_VIEW)
	{
		int32_t		n32;

		p = arrow_view_value(a, row, &n32);
		n = n32;
	}
	else
	{
		n = a->field->type.byte_width;
		p = a->values + row * n;
	}
	if (info->value == ARROW_VALUE_STRING)
		return append_string(buf, p, n, err);
	return append_hex(buf, p, n, err);
}

/* A non-null value of a type with a scalar value (the table's value kind) */
static int
scalar_json(const ArrowArray *a, const ArrowTypeInfo *info, int64_t row,
			ArrowStrBuf *buf, ArrowError *err)
{
	const ArrowType *t = &a->field->type;
	int			width = arrow_type_value_width(t);
	/* the value of a fixed-width type (others have no values buffer) */
	const uint8_t *p = (info->layout == ARROW_LAYOUT_FIXED) ? a->values + row * width : NULL;
	char		text[ARROW_DECIMAL256_MAX_TEXT];

	switch (info->value)
	{
		case ARROW_VALUE_BOOL:
			return arrow_bit_get(a->values, row) ?
				APPEND_LIT(buf, "true", err) : APPEND_LIT(buf, "false", err);
		case ARROW_VALUE_INT:
			return arrow_strbuf_printf(buf, err, "%" PRId64, arrow_load_int(p, width));
		case ARROW_VALUE_UINT:
			return arrow_strbuf_printf(buf, err, "%" PRIu64, arrow_load_uint(p, width));
		case ARROW_VALUE_FLOAT:
			return append_double(buf, arrow_load_float(p, width), err);
		case ARROW_VALUE_DECIMAL:
			if (width == 16)
				return append_decimal(buf, p, t->scale, err);
			arrow_decimal256_format(p, t->scale, text, sizeof(text));
			return append_cstring(buf, text, err);
		case ARROW_VALUE_INTERVAL:
			/* [days, msecs] or [months, days, nanos] */
			if (width == 8)
				return arrow_strbuf_printf(buf, err, "[%" PRId64 ", %" PRId64 "]",
										   arrow_load_int(p, 4), arrow_load_int(p + 4, 4));
			return arrow_strbuf_printf(buf, err, "[%" PRId64 ", %" PRId64 ", %" PRId64 "]",
									   arrow_load_int(p, 4), arrow_load_int(p + 4, 4),
									   arrow_load_int(p + 8, 8));
		case ARROW_VALUE_STRING:
		case ARROW_VALUE_BYTES:
			return bytes_json(a, info, row, buf, err);
		case ARROW_VALUE_NONE:
			break;
	}
	return arrow_set_error(err, ARROW_ERR_ARGUMENT, "unknown type id %d", (int) t->id);
}

/* A struct row as an object of its children's values */
static int
struct_json(const ArrowArray *a, int64_t row, ArrowStrBuf *buf, ArrowError *err)
{
	const ArrowField *f = a->field;

	if (APPEND_LIT(buf, "{", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < a->n_children; i++)
	{
		if ((i > 0 && APPEND_LIT(buf, ", ", err) != ARROW_OK) ||
			append_cstring(buf, f->children[i].name, err) != ARROW_OK ||
			APPEND_LIT(buf, ": ", err) != ARROW_OK ||
			value_json(&a->children[i], row, buf, err) != ARROW_OK)
			return err->code;
	}
	return APPEND_LIT(buf, "}", err);
}

/*
 * Row 'row' of a: a dictionary-encoded value as its dictionary entry, a
 * list (maps as their list of {"key": .., "value": ..}) as an array, a
 * struct as an object, a run-end encoded value as its run's value, a scalar
 * by its value kind.
 */
static int
value_json(const ArrowArray *a, int64_t row, ArrowStrBuf *buf, ArrowError *err)
{
	const ArrowField *f = a->field;
	const ArrowTypeInfo *info = arrow_type_info(f->type.id);
	int64_t		start;
	int64_t		end;

	if (arrow_array_is_null(a, row))
		return APPEND_LIT(buf, "null", err);
	if (f->has_dictionary)
	{
		const ArrowTypeInfo *ix = arrow_type_info(f->dictionary.index_type);
		int			iw = ix->bit_width / 8;

		if (ix->value == ARROW_VALUE_UINT)
			start = (int64_t) arrow_load_uint(a->values + row * iw, iw);
		else
			start = arrow_load_int(a->values + row * iw, iw);
		return value_json(a->dictionary, start, buf, err);
	}
	if (info == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "unknown type id %d", (int) f->type.id);
	switch (info->layout)
	{
		case ARROW_LAYOUT_NULL:
			return APPEND_LIT(buf, "null", err);
		case ARROW_LAYOUT_LIST:
		case ARROW_LAYOUT_LIST_VIEW:
		case ARROW_LAYOUT_FIXED_LIST:
			arrow_list_range(a, row, &start, &end);
			return append_elements(&a->children[0], start, end - start, buf, err);
		case ARROW_LAYOUT_STRUCT:
			return struct_json(a, row, buf, err);
		case ARROW_LAYOUT_RUN_END:
			return value_json(&a->children[1], arrow_ree_index(a, row), buf, err);
		case ARROW_LAYOUT_BITS:
		case ARROW_LAYOUT_FIXED:
		case ARROW_LAYOUT_VAR:
		case ARROW_LAYOUT_VIEW:
			break;
	}
	return scalar_json(a, info, row, buf, err);
}

/* See arrow.h: checks the array and the row, then value_json */
int
arrow_value_to_json(const ArrowArray *a, int64_t row, ArrowStrBuf *buf,
					ArrowError *err)
{
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (a == NULL || a->field == NULL || buf == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no array (column not loaded?)");
	if (row < 0 || row >= a->length)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "row %lld is outside the array (%lld values)",
							   (long long) row, (long long) a->length);
	return value_json(a, row, buf, err);
}

/* {"key": "value", ...} */
static int
metadata_json(const ArrowMetadata *md, ArrowStrBuf *buf, ArrowError *err)
{
	if (APPEND_LIT(buf, "{", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < md->count; i++)
	{
		if ((i > 0 && APPEND_LIT(buf, ", ", err) != ARROW_OK) ||
			append_cstring(buf, md->items[i].key, err) != ARROW_OK ||
			APPEND_LIT(buf, ": ", err) != ARROW_OK ||
			append_cstring(buf, md->items[i].value, err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
	}
	return APPEND_LIT(buf, "}", err);
}

/* One field of the schema JSON (doc/arrow-json.md), children recursively */
static int
field_json(const ArrowField *f, ArrowStrBuf *buf, ArrowError *err)
{
	char		tname[256];
	bool		nested;

	arrow_type_format(&f->type, tname, sizeof(tname));
	if (APPEND_LIT(buf, "{\"name\": ", err) != ARROW_OK ||
		append_cstring(buf, f->name, err) != ARROW_OK ||
		APPEND_LIT(buf, ", \"type\": ", err) != ARROW_OK ||
		append_cstring(buf, tname, err) != ARROW_OK ||
		arrow_strbuf_printf(buf, err, ", \"nullable\": %s", f->nullable ? "true" : "false") != ARROW_OK)
		return ARROW_ERR_NOMEM;
	if (f->metadata.count > 0 &&
		(APPEND_LIT(buf, ", \"metadata\": ", err) != ARROW_OK ||
		 metadata_json(&f->metadata, buf, err) != ARROW_OK))
		return ARROW_ERR_NOMEM;
	nested = (f->type.id == ARROW_TYPE_LIST || f->type.id == ARROW_TYPE_LARGE_LIST ||
			  f->type.id == ARROW_TYPE_FIXED_SIZE_LIST || f->type.id == ARROW_TYPE_STRUCT ||
			  f->type.id == ARROW_TYPE_LIST_VIEW || f->type.id == ARROW_TYPE_LARGE_LIST_VIEW ||
			  f->type.id == ARROW_TYPE_MAP || f->type.id == ARROW_TYPE_RUN_END_ENCODED);
	if (nested)
	{
		if (APPEND_LIT(buf, ", \"children\": [", err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
		for (int32_t i = 0; i < f->n_children; i++)
		{
			if ((i > 0 && APPEND_LIT(buf, ", ", err) != ARROW_OK) ||
				field_json(&f->children[i], buf, err) != ARROW_OK)
				return ARROW_ERR_NOMEM;
		}
		if (APPEND_LIT(buf, "]", err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
	}
	if (f->has_dictionary)
	{
		ArrowType	itype = {.id = f->dictionary.index_type};

		arrow_type_format(&itype, tname, sizeof(tname));
		if (arrow_strbuf_printf(buf, err, ", \"dictionary\": {\"id\": %lld, \"index_type\": \"%s\", \"ordered\": %s}",
								(long long) f->dictionary.id, tname,
								f->dictionary.ordered ? "true" : "false") != ARROW_OK)
			return ARROW_ERR_NOMEM;
	}
	return APPEND_LIT(buf, "}", err);
}

/* See arrow.h */
int
arrow_schema_to_json(const ArrowSchema *schema, ArrowStrBuf *buf, ArrowError *err)
{
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (schema == NULL || buf == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no schema or buffer");
	if (APPEND_LIT(buf, "{\"fields\": [", err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < schema->n_fields; i++)
	{
		if ((i > 0 && APPEND_LIT(buf, ", ", err) != ARROW_OK) ||
			field_json(&schema->fields[i], buf, err) != ARROW_OK)
			return ARROW_ERR_NOMEM;
	}
	if (APPEND_LIT(buf, "], \"metadata\": ", err) != ARROW_OK ||
		metadata_json(&schema->metadata, buf, err) != ARROW_OK)
		return ARROW_ERR_NOMEM;
	return APPEND_LIT(buf, "}", err);
}
