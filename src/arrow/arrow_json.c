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

/* Integer of 'width' bytes at p */
static int64_t
load_signed(const uint8_t *p, int width)
{
	switch (width)
	{
		case 1:
			return (int8_t) p[0];
		case 2:
			{
				int16_t		v;

				memcpy(&v, p, 2);
				return v;
			}
		case 4:
			{
				int32_t		v;

				memcpy(&v, p, 4);
				return v;
			}
		default:
			{
				int64_t		v;

				memcpy(&v, p, 8);
				return v;
			}
	}
}

/* Unsigned integer of 'width' bytes at p */
static uint64_t
load_unsigned(const uint8_t *p, int width)
{
	switch (width)
	{
		case 1:
			return p[0];
		case 2:
			{
				uint16_t	v;

				memcpy(&v, p, 2);
				return v;
			}
		case 4:
			{
				uint32_t	v;

				memcpy(&v, p, 4);
				return v;
			}
		default:
			{
				uint64_t	v;

				memcpy(&v, p, 8);
				return v;
			}
	}
}

/* Offset i of a (large) binary or list array */
static int64_t
offset_at(const ArrowArray *a, bool large, int64_t i)
{
	return load_signed((const uint8_t *) a->offsets + i * (large ? 8 : 4), large ? 8 : 4);
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

/* The JSON form of row 'row' (in range) of a */
static int
value_json(const ArrowArray *a, int64_t row, ArrowStrBuf *buf, ArrowError *err)
{
	const ArrowField *f = a->field;
	int			width = arrow_type_value_width(&f->type);
	bool		large = false;

	if (arrow_array_is_null(a, row))
		return APPEND_LIT(buf, "null", err);
	if (f->has_dictionary)
	{
		ArrowType	itype = {.id = f->dictionary.index_type};
		int			iw = arrow_type_value_width(&itype);
		int64_t		ix;

		if (itype.id >= ARROW_TYPE_UINT8 && itype.id <= ARROW_TYPE_UINT64)
			ix = (int64_t) load_unsigned(a->values + row * iw, iw);
		else
			ix = load_signed(a->values + row * iw, iw);
		return value_json(a->dictionary, ix, buf, err);
	}
	switch (f->type.id)
	{
		case ARROW_TYPE_NULL:
			return APPEND_LIT(buf, "null", err);
		case ARROW_TYPE_BOOL:
			return (a->values[row >> 3] >> (row & 7)) & 1 ?
				APPEND_LIT(buf, "true", err) : APPEND_LIT(buf, "false", err);
		case ARROW_TYPE_INT8:
		case ARROW_TYPE_INT16:
		case ARROW_TYPE_INT32:
		case ARROW_TYPE_INT64:
		case ARROW_TYPE_DATE32:
		case ARROW_TYPE_DATE64:
		case ARROW_TYPE_TIME32:
		case ARROW_TYPE_TIME64:
		case ARROW_TYPE_TIMESTAMP:
		case ARROW_TYPE_DURATION:
		case ARROW_TYPE_INTERVAL_YM:
			return arrow_strbuf_printf(buf, err, "%" PRId64,
									   load_signed(a->values + row * width, width));
		case ARROW_TYPE_UINT8:
		case ARROW_TYPE_UINT16:
		case ARROW_TYPE_UINT32:
		case ARROW_TYPE_UINT64:
			return arrow_strbuf_printf(buf, err, "%" PRIu64,
									   load_unsigned(a->values + row * width, width));
		case ARROW_TYPE_FLOAT16:
			return append_double(buf, arrow_half_to_float((uint16_t) load_unsigned(a->values + row * 2, 2)),
								 err);
		case ARROW_TYPE_FLOAT32:
			{
				float		v;

				memcpy(&v, a->values + row * 4, 4);
				return append_double(buf, v, err);
			}
		case ARROW_TYPE_FLOAT64:
			{
				double		v;

				memcpy(&v, a->values + row * 8, 8);
				return append_double(buf, v, err);
			}
		case ARROW_TYPE_DECIMAL128:
			return append_decimal(buf, a->values + row * 16, f->type.scale, err);
		case ARROW_TYPE_INTERVAL_DT:
			return arrow_strbuf_printf(buf, err, "[%" PRId64 ", %" PRId64 "]",
									   load_signed(a->values + row * 8, 4),
									   load_signed(a->values + row * 8 + 4, 4));
		case ARROW_TYPE_INTERVAL_MDN:
			return arrow_strbuf_printf(buf, err, "[%" PRId64 ", %" PRId64 ", %" PRId64 "]",
									   load_signed(a->values + row * 16, 4),
									   load_signed(a->values + row * 16 + 4, 4),
									   load_signed(a->values + row * 16 + 8, 8));
		case ARROW_TYPE_LARGE_UTF8:
		case ARROW_TYPE_LARGE_BINARY:
			large = true;
			/* FALLTHROUGH */
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_BINARY:
			{
				int64_t		start = offset_at(a, large, row);
				int64_t		end = offset_at(a, large, row + 1);

				if (f->type.id == ARROW_TYPE_UTF8 || f->type.id == ARROW_TYPE_LARGE_UTF8)
					return append_string(buf, a->data + start, end - start, err);
				return append_hex(buf, a->data + start, end - start, err);
			}
		case ARROW_TYPE_FIXED_SIZE_BINARY:
			return append_hex(buf, a->values + row * width, width, err);
		case ARROW_TYPE_LARGE_LIST:
			large = true;
			/* FALLTHROUGH */
		case ARROW_TYPE_LIST:
			{
				int64_t		start = offset_at(a, large, row);

				return append_elements(&a->children[0], start,
									   offset_at(a, large, row + 1) - start, buf, err);
			}
		case ARROW_TYPE_FIXED_SIZE_LIST:
			return append_elements(&a->children[0], row * f->type.list_size,
								   f->type.list_size, buf, err);
		case ARROW_TYPE_MAP:	/* as its list of {"key": .., "value": ..} */
		case ARROW_TYPE_LIST_VIEW:
		case ARROW_TYPE_LARGE_LIST_VIEW:
			{
				int64_t		start;
				int64_t		end;

				arrow_list_range(a, row, &start, &end);
				return append_elements(&a->children[0], start, end - start, buf, err);
			}
		case ARROW_TYPE_UTF8_VIEW:
		case ARROW_TYPE_BINARY_VIEW:
			{
				int32_t		n;
				const uint8_t *p = arrow_view_value(a, row, &n);

				if (f->type.id == ARROW_TYPE_UTF8_VIEW)
					return append_string(buf, p, n, err);
				return append_hex(buf, p, n, err);
			}
		case ARROW_TYPE_RUN_END_ENCODED:
			return value_json(&a->children[1], arrow_ree_index(a, row), buf, err);
		case ARROW_TYPE_DECIMAL256:
			{
				char		text[ARROW_DECIMAL256_MAX_TEXT];

				arrow_decimal256_format(a->values + row * 32, f->type.scale, text, sizeof(text));
				return append_cstring(buf, text, err);
			}
		case ARROW_TYPE_STRUCT:
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
	return arrow_set_error(err, ARROW_ERR_ARGUMENT, "unknown type id %d", (int) f->type.id);
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
