/*-------------------------------------------------------------------------
 *
 * arrow_gen.c
 *		arrow-gen: writes an Arrow file with pg_warp's writer from the JSON
 *		form of doc/arrow-json.md.  A test tool: the interop suite makes
 *		files with it and reads them back with pyarrow.
 *
 *	arrow-gen OUT.arrow < SPEC.json
 *		creates OUT.arrow from {"schema": ..., "dictionaries": [...],
 *		"batches": [...]}
 *	arrow-gen --append OUT.arrow < SPEC.json
 *		adds the dictionaries (deltas for ids the file has) and batches to
 *		OUT.arrow; "schema" may then be left out, else it must equal the
 *		file's
 *
 * A dictionary entry may carry "delta": true (default false): the values
 * are added to the earlier batches of that dictionary.
 *
 * Errors name the batch, row and field (for nested values a path such as
 * "s.a" or "l[2]"), go to stderr, and exit with status 1; the output file
 * is then removed (create) or restored (append).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow.h"
#include "json.h"
#include "util.h"

#define MSG_LEN 1024

static void
set_msg(char *msg, const char *fmt,...)
	__attribute__((format(printf, 2, 3)));

static void
set_msg(char *msg, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, MSG_LEN, fmt, ap);
	va_end(ap);
}

/* Object keys other than the allowed ones are mistakes: report them */
static bool
check_keys(const JsonValue *obj, const char *const *allowed, const char *what,
		   char *msg)
{
	for (size_t i = 0; i < obj->n; i++)
	{
		bool		ok = false;

		for (const char *const *a = allowed; *a != NULL; a++)
			ok = ok || strcmp(obj->keys[i], *a) == 0;
		if (!ok)
		{
			set_msg(msg, "line %d: unknown key \"%s\" in %s", obj->line, obj->keys[i], what);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Schema
 * ------------------------------------------------------------------------
 */
static bool
parse_unit(const char *s, size_t len, ArrowTimeUnit *unit)
{
	static const char *const names[] = {"s", "ms", "us", "ns"};

	for (int i = 0; i < 4; i++)
	{
		if (strlen(names[i]) == len && strncmp(s, names[i], len) == 0)
		{
			*unit = (ArrowTimeUnit) i;
			return true;
		}
	}
	return false;
}

/* "name[UNIT]" for time32, time64, duration: the unit, or false */
static bool
parse_unit_type(const char *s, const char *prefix, ArrowTimeUnit *unit)
{
	size_t		plen = strlen(prefix);
	size_t		len = strlen(s);

	return strncmp(s, prefix, plen) == 0 && len > plen + 1 && s[len - 1] == ']' &&
		parse_unit(s + plen, len - plen - 1, unit);
}

/* "prefix(N)" or "prefix(N, M)": true with the numbers when s matches */
static bool
parse_params(const char *s, const char *prefix, int n, int32_t *a, int32_t *b)
{
	size_t		plen = strlen(prefix);
	const char *p = s + plen;
	char	   *end;
	long		v;

	if (strncmp(s, prefix, plen) != 0)
		return false;
	for (int i = 0; i < n; i++)
	{
		if (i > 0)
		{
			if (p[0] != ',' || p[1] != ' ')
				return false;
			p += 2;
		}
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno != 0 || v < INT32_MIN || v > INT32_MAX)
			return false;
		*(i == 0 ? a : b) = (int32_t) v;
		p = end;
	}
	return strcmp(p, ")") == 0;
}

/*
 * Type string of doc/arrow-json.md -> ArrowType.  The timezone of a
 * timestamp is malloc'ed (freed with the schema).
 */
static bool
parse_type(const char *s, ArrowType *t, char *msg)
{
	static const struct
	{
		const char *name;
		ArrowTypeId id;
	}			simple[] = {
		{"null", ARROW_TYPE_NULL}, {"bool", ARROW_TYPE_BOOL},
		{"int8", ARROW_TYPE_INT8}, {"int16", ARROW_TYPE_INT16},
		{"int32", ARROW_TYPE_INT32}, {"int64", ARROW_TYPE_INT64},
		{"uint8", ARROW_TYPE_UINT8}, {"uint16", ARROW_TYPE_UINT16},
		{"uint32", ARROW_TYPE_UINT32}, {"uint64", ARROW_TYPE_UINT64},
		{"float16", ARROW_TYPE_FLOAT16}, {"float32", ARROW_TYPE_FLOAT32},
		{"float64", ARROW_TYPE_FLOAT64}, {"date32", ARROW_TYPE_DATE32},
		{"date64", ARROW_TYPE_DATE64}, {"interval[ym]", ARROW_TYPE_INTERVAL_YM},
		{"interval[dt]", ARROW_TYPE_INTERVAL_DT},
		{"interval[mdn]", ARROW_TYPE_INTERVAL_MDN},
		{"utf8", ARROW_TYPE_UTF8}, {"large_utf8", ARROW_TYPE_LARGE_UTF8},
		{"binary", ARROW_TYPE_BINARY}, {"large_binary", ARROW_TYPE_LARGE_BINARY},
		{"list", ARROW_TYPE_LIST}, {"large_list", ARROW_TYPE_LARGE_LIST},
		{"struct", ARROW_TYPE_STRUCT},
	};

	memset(t, 0, sizeof(ArrowType));
	for (size_t i = 0; i < sizeof(simple) / sizeof(simple[0]); i++)
	{
		if (strcmp(s, simple[i].name) == 0)
		{
			t->id = simple[i].id;
			return true;
		}
	}
	if (parse_params(s, "decimal128(", 2, &t->precision, &t->scale))
		t->id = ARROW_TYPE_DECIMAL128;
	else if (parse_params(s, "fixed_size_binary(", 1, &t->byte_width, NULL))
		t->id = ARROW_TYPE_FIXED_SIZE_BINARY;
	else if (parse_params(s, "fixed_size_list(", 1, &t->list_size, NULL))
		t->id = ARROW_TYPE_FIXED_SIZE_LIST;
	else if (parse_unit_type(s, "time32[", &t->unit))
		t->id = ARROW_TYPE_TIME32;
	else if (parse_unit_type(s, "time64[", &t->unit))
		t->id = ARROW_TYPE_TIME64;
	else if (parse_unit_type(s, "duration[", &t->unit))
		t->id = ARROW_TYPE_DURATION;
	else if (strncmp(s, "timestamp[", 10) == 0 && s[strlen(s) - 1] == ']')
	{
		const char *u = s + 10;
		const char *tz = strstr(u, ", tz=");
		size_t		ulen = tz ? (size_t) (tz - u) : strlen(u) - 1;

		if (!parse_unit(u, ulen, &t->unit))
			goto bad;
		if (tz != NULL)
		{
			tz += 5;
			t->timezone = xstrndup(tz, strlen(tz) - 1);
		}
		t->id = ARROW_TYPE_TIMESTAMP;
	}
	else
		goto bad;
	return true;

bad:
	set_msg(msg, "unknown type \"%s\"", s);
	return false;
}

/* {"k": "v", ...} -> md (strings only) */
static bool
parse_metadata(const JsonValue *j, ArrowMetadata *md, char *msg)
{
	ArrowError	err;

	if (j == NULL)
		return true;
	if (j->type != JSON_OBJECT)
	{
		set_msg(msg, "line %d: metadata must be an object", j->line);
		return false;
	}
	for (size_t i = 0; i < j->n; i++)
	{
		const JsonValue *v = j->items[i];

		if (v->type != JSON_STRING || strlen(v->str) != v->len)
		{
			set_msg(msg, "line %d: metadata value of \"%s\" must be a string without U+0000 "
					"(C strings in arrow.h)", v->line, j->keys[i]);
			return false;
		}
		if (arrow_metadata_set(NULL, md, j->keys[i], v->str, &err) != ARROW_OK)
		{
			set_msg(msg, "%s", err.message);
			return false;
		}
	}
	return true;
}

static const char *
string_member(const JsonValue *obj, const char *key)
{
	const JsonValue *v = json_get(obj, key);

	if (v == NULL || v->type != JSON_STRING || strlen(v->str) != v->len)
		return NULL;
	return v->str;
}

static bool parse_field(const JsonValue *j, ArrowField *f, char *msg);

/*
 * The fields of JSON array arr -> *fields (a new array), *n: how many are
 * filled in so far, also on failure, so that the schema can be freed.
 */
static bool
parse_fields(const JsonValue *arr, ArrowField **fields, int32_t *n, char *msg)
{
	if (arr->n > 0)
		*fields = xcalloc(arr->n, sizeof(ArrowField));
	for (size_t i = 0; i < arr->n; i++)
	{
		*n = (int32_t) i + 1;
		if (!parse_field(arr->items[i], &(*fields)[i], msg))
			return false;
	}
	return true;
}

/* One field of the schema (with its children and dictionary) -> *f */
static bool
parse_field(const JsonValue *j, ArrowField *f, char *msg)
{
	static const char *const keys[] = {"name", "type", "nullable", "metadata",
	"children", "dictionary", NULL};
	const char *name;
	const char *type;
	const JsonValue *v;
	char		tmp[MSG_LEN];

	if (j->type != JSON_OBJECT)
	{
		set_msg(msg, "line %d: a field must be an object", j->line);
		return false;
	}
	if (!check_keys(j, keys, "a field", msg))
		return false;
	name = string_member(j, "name");
	type = string_member(j, "type");
	if (name == NULL || type == NULL)
	{
		set_msg(msg, "line %d: a field needs a string \"name\" and \"type\" "
				"(without U+0000: names are C strings in arrow.h)", j->line);
		return false;
	}
	f->name = xstrdup(name);
	if (!parse_type(type, &f->type, tmp))
	{
		set_msg(msg, "line %d: field \"%s\": %s", j->line, name, tmp);
		return false;
	}
	f->nullable = true;
	if ((v = json_get(j, "nullable")) != NULL)
	{
		if (v->type != JSON_BOOL)
		{
			set_msg(msg, "line %d: \"nullable\" must be true or false", v->line);
			return false;
		}
		f->nullable = v->boolean;
	}
	if (!parse_metadata(json_get(j, "metadata"), &f->metadata, msg))
		return false;
	if ((v = json_get(j, "children")) != NULL)
	{
		if (v->type != JSON_ARRAY)
		{
			set_msg(msg, "line %d: \"children\" must be an array", v->line);
			return false;
		}
		if (!parse_fields(v, &f->children, &f->n_children, msg))
			return false;
	}
	if ((v = json_get(j, "dictionary")) != NULL)
	{
		static const char *const dkeys[] = {"id", "index_type", "ordered", NULL};
		const JsonValue *id = json_get(v, "id");
		const JsonValue *ordered = json_get(v, "ordered");
		const char *itype = string_member(v, "index_type");
		ArrowType	it;

		if (v->type != JSON_OBJECT || !check_keys(v, dkeys, "a dictionary", msg))
		{
			if (v->type != JSON_OBJECT)
				set_msg(msg, "line %d: \"dictionary\" must be an object", v->line);
			return false;
		}
		if (id == NULL || !json_is_integer(id) || itype == NULL ||
			!parse_type(itype, &it, tmp) || (ordered != NULL && ordered->type != JSON_BOOL))
		{
			set_msg(msg, "line %d: a dictionary needs an integer \"id\", an integer "
					"\"index_type\" and an optional boolean \"ordered\"", v->line);
			return false;
		}
		f->has_dictionary = true;
		f->dictionary.id = strtoll(id->str, NULL, 10);
		f->dictionary.index_type = it.id;
		f->dictionary.ordered = ordered != NULL && ordered->boolean;
	}
	return true;
}

static bool
parse_schema(const JsonValue *j, ArrowSchema *schema, char *msg)
{
	static const char *const keys[] = {"fields", "metadata", NULL};
	const JsonValue *fields = json_get(j, "fields");

	if (j->type != JSON_OBJECT || fields == NULL || fields->type != JSON_ARRAY)
	{
		set_msg(msg, "line %d: the schema must be an object with a \"fields\" array", j->line);
		return false;
	}
	if (!check_keys(j, keys, "the schema", msg) ||
		!parse_metadata(json_get(j, "metadata"), &schema->metadata, msg))
		return false;
	return parse_fields(fields, &schema->fields, &schema->n_fields, msg);
}

/* ------------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------------
 */

/* An integer literal -> append_int (negative) or append_uint, exactly */
static bool
append_json_int(ArrowBuilder *b, const JsonValue *v, char *msg)
{
	ArrowError	err;
	char	   *end;
	int			rc;

	if (!json_is_integer(v))
	{
		set_msg(msg, "expected an integer, got %s", v->type == JSON_NUMBER ? v->str : json_type_name(v->type));
		return false;
	}
	errno = 0;
	if (v->str[0] == '-')
	{
		long long	x = strtoll(v->str, &end, 10);

		if (errno != 0 || *end != '\0')
		{
			set_msg(msg, "integer %s out of range", v->str);
			return false;
		}
		rc = arrow_append_int(b, x, &err);
	}
	else
	{
		unsigned long long x = strtoull(v->str, &end, 10);

		if (errno != 0 || *end != '\0')
		{
			set_msg(msg, "integer %s out of range", v->str);
			return false;
		}
		rc = arrow_append_uint(b, x, &err);
	}
	if (rc != ARROW_OK)
	{
		set_msg(msg, "%s", err.message);
		return false;
	}
	return true;
}

/* An integer element of an interval array, within [lo, hi] */
static bool
json_int_in(const JsonValue *v, long long lo, long long hi, long long *out)
{
	char	   *end;

	if (!json_is_integer(v))
		return false;
	errno = 0;
	*out = strtoll(v->str, &end, 10);
	return errno == 0 && *end == '\0' && *out >= lo && *out <= hi;
}

static bool
parse_float(const JsonValue *v, double *out)
{
	if (v->type == JSON_STRING)
	{
		if (strcmp(v->str, "NaN") == 0)
			*out = NAN;
		else if (strcmp(v->str, "Infinity") == 0)
			*out = INFINITY;
		else if (strcmp(v->str, "-Infinity") == 0)
			*out = -INFINITY;
		else
			return false;
		return true;
	}
	if (v->type != JSON_NUMBER)
		return false;
	/*
	 * strtod rounds correctly.  ERANGE also comes with subnormal and zero
	 * results of an underflow, which are right; an overflow (to infinity)
	 * is refused: infinities are written as strings.
	 */
	errno = 0;
	*out = strtod(v->str, NULL);
	return !(errno == ERANGE && isinf(*out));
}

/* A hex string -> bytes (malloc'ed, *len of them); NULL if not hex */
static uint8_t *
decode_hex(const JsonValue *v, size_t *len)
{
	uint8_t    *out;

	if (v->type != JSON_STRING || v->len % 2 != 0)
		return NULL;
	out = malloc(v->len / 2 + 1);
	if (out == NULL)
		return NULL;
	for (size_t i = 0; i < v->len / 2; i++)
	{
		int			hi = hex_digit(v->str[2 * i]);
		int			lo = hex_digit(v->str[2 * i + 1]);

		if (hi < 0 || lo < 0)
		{
			free(out);
			return NULL;
		}
		out[i] = (uint8_t) (hi << 4 | lo);
	}
	*len = v->len / 2;
	return out;
}

static bool append_value(ArrowBuilder *b, const ArrowField *f, const JsonValue *v,
						 char *path, size_t pathlen, char *msg);

/*
 * Extends path with ".name" (a struct member) or "[index]" (a list
 * element); returns the old length, to cut it back with path[old] = 0.
 */
static size_t
path_push_name(char *path, size_t pathlen, const char *name)
{
	size_t		old = strlen(path);

	snprintf(path + old, pathlen - old, ".%s", name);
	return old;
}

static size_t
path_push_index(char *path, size_t pathlen, size_t index)
{
	size_t		old = strlen(path);

	snprintf(path + old, pathlen - old, "[%zu]", index);
	return old;
}

static bool
append_children(ArrowBuilder *b, const ArrowField *f, const JsonValue *v,
				 char *path, size_t pathlen, char *msg)
{
	ArrowError	err;

	switch (f->type.id)
	{
		case ARROW_TYPE_LIST:
		case ARROW_TYPE_LARGE_LIST:
		case ARROW_TYPE_FIXED_SIZE_LIST:
			if (v->type != JSON_ARRAY)
				break;
			if (f->type.id == ARROW_TYPE_FIXED_SIZE_LIST && v->n != (size_t) f->type.list_size)
			{
				set_msg(msg, "expected %d elements, got %zu", f->type.list_size, v->n);
				return false;
			}
			if (arrow_append_valid(b, &err) != ARROW_OK)
			{
				set_msg(msg, "%s", err.message);
				return false;
			}
			for (size_t i = 0; i < v->n; i++)
			{
				size_t		old = path_push_index(path, pathlen, i);

				if (!append_value(arrow_builder_child(b, 0), &f->children[0], v->items[i],
								  path, pathlen, msg))
					return false;
				path[old] = '\0';
			}
			if (f->type.id != ARROW_TYPE_FIXED_SIZE_LIST && arrow_list_end(b, &err) != ARROW_OK)
			{
				set_msg(msg, "%s", err.message);
				return false;
			}
			return true;
		case ARROW_TYPE_STRUCT:
			if (v->type != JSON_OBJECT)
				break;
			for (size_t i = 0; i < v->n; i++)
			{
				bool		known = false;

				for (int32_t c = 0; c < f->n_children; c++)
					known = known || strcmp(v->keys[i], f->children[c].name) == 0;
				if (!known)
				{
					set_msg(msg, "unknown key \"%s\" in a struct value", v->keys[i]);
					return false;
				}
			}
			if (arrow_append_valid(b, &err) != ARROW_OK)
			{
				set_msg(msg, "%s", err.message);
				return false;
			}
			for (int32_t c = 0; c < f->n_children; c++)
			{
				const JsonValue *cv = json_get(v, f->children[c].name);
				size_t		old = path_push_name(path, pathlen, f->children[c].name);

				if (cv == NULL)
				{
					set_msg(msg, "missing struct member");
					return false;
				}
				if (!append_value(arrow_builder_child(b, c), &f->children[c], cv, path, pathlen, msg))
					return false;
				path[old] = '\0';
			}
			return true;
		default:
			break;
	}
	set_msg(msg, "expected %s, got %s",
			f->type.id == ARROW_TYPE_STRUCT ? "an object" : "an array", json_type_name(v->type));
	return false;
}

/*
 * Appends a non-null JSON value v of a type whose JSON form is a number or
 * a string (bool, floats, decimal128, intervals, strings, binaries) to b.
 * Returns ARROW_OK, an error of the library (in *err), or -1 with msg set
 * when v does not have the form of f's type.
 */
static int
append_scalar(ArrowBuilder *b, const ArrowField *f, const JsonValue *v,
			  char *msg, ArrowError *err)
{
	long long	p[3];
	double		d;
	uint8_t    *bytes;
	size_t		len = 0;
	int			rc;

	switch (f->type.id)
	{
		case ARROW_TYPE_BOOL:
			if (v->type == JSON_BOOL)
				return arrow_append_bool(b, v->boolean, err);
			set_msg(msg, "expected true or false, got %s", json_type_name(v->type));
			return -1;
		case ARROW_TYPE_FLOAT16:
		case ARROW_TYPE_FLOAT32:
		case ARROW_TYPE_FLOAT64:
			if (parse_float(v, &d))
				return arrow_append_float(b, d, err);
			set_msg(msg, "expected a number, \"NaN\", \"Infinity\" or \"-Infinity\"");
			return -1;
		case ARROW_TYPE_DECIMAL128:
			{
				ArrowDecimal128 dec;

				if (v->type != JSON_STRING)
				{
					set_msg(msg, "expected a decimal string, got %s", json_type_name(v->type));
					return -1;
				}
				rc = arrow_decimal128_parse(v->str, f->type.precision, f->type.scale, &dec, err);
				return rc == ARROW_OK ? arrow_append_decimal(b, dec, err) : rc;
			}
		case ARROW_TYPE_INTERVAL_DT:
			if (v->type == JSON_ARRAY && v->n == 2 &&
				json_int_in(v->items[0], INT32_MIN, INT32_MAX, &p[0]) &&
				json_int_in(v->items[1], INT32_MIN, INT32_MAX, &p[1]))
				return arrow_append_interval_dt(b, (int32_t) p[0], (int32_t) p[1], err);
			set_msg(msg, "expected [days, milliseconds] (int32)");
			return -1;
		case ARROW_TYPE_INTERVAL_MDN:
			if (v->type == JSON_ARRAY && v->n == 3 &&
				json_int_in(v->items[0], INT32_MIN, INT32_MAX, &p[0]) &&
				json_int_in(v->items[1], INT32_MIN, INT32_MAX, &p[1]) &&
				json_int_in(v->items[2], INT64_MIN, INT64_MAX, &p[2]))
				return arrow_append_interval_mdn(b, (int32_t) p[0], (int32_t) p[1], p[2], err);
			set_msg(msg, "expected [months, days, nanoseconds] (int32, int32, int64)");
			return -1;
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_LARGE_UTF8:
			if (v->type == JSON_STRING)
				return arrow_append_bytes(b, v->str, v->len, err);
			set_msg(msg, "expected a string, got %s", json_type_name(v->type));
			return -1;
		default:
			/* binary, large_binary, fixed_size_binary */
			if ((bytes = decode_hex(v, &len)) == NULL)
			{
				set_msg(msg, "expected a hex string");
				return -1;
			}
			rc = arrow_append_bytes(b, bytes, len, err);
			free(bytes);
			return rc;
	}
}

/*
 * Appends the JSON value v (the form of doc/arrow-json.md for f's type) to
 * b.  On failure msg says why; path then names the nested value.
 */
static bool
append_value(ArrowBuilder *b, const ArrowField *f, const JsonValue *v,
			 char *path, size_t pathlen, char *msg)
{
	ArrowError	err;
	int			rc;

	if (v->type == JSON_NULL)
		rc = arrow_append_null(b, &err);
	else if (f->has_dictionary)
		return append_json_int(b, v, msg);
	else
		switch (f->type.id)
		{
			case ARROW_TYPE_NULL:
				set_msg(msg, "expected null, got %s", json_type_name(v->type));
				return false;
			case ARROW_TYPE_BOOL:
			case ARROW_TYPE_FLOAT16:
			case ARROW_TYPE_FLOAT32:
			case ARROW_TYPE_FLOAT64:
			case ARROW_TYPE_DECIMAL128:
			case ARROW_TYPE_INTERVAL_DT:
			case ARROW_TYPE_INTERVAL_MDN:
			case ARROW_TYPE_UTF8:
			case ARROW_TYPE_LARGE_UTF8:
			case ARROW_TYPE_BINARY:
			case ARROW_TYPE_LARGE_BINARY:
			case ARROW_TYPE_FIXED_SIZE_BINARY:
				if ((rc = append_scalar(b, f, v, msg, &err)) < 0)
					return false;
				break;
			case ARROW_TYPE_LIST:
			case ARROW_TYPE_LARGE_LIST:
			case ARROW_TYPE_FIXED_SIZE_LIST:
			case ARROW_TYPE_STRUCT:
				return append_children(b, f, v, path, pathlen, msg);
			default:
				/* integers, dates, times, timestamps, durations, interval[ym] */
				return append_json_int(b, v, msg);
		}
	if (rc != ARROW_OK)
	{
		set_msg(msg, "%s", err.message);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------------
 * Dictionaries and batches
 * ------------------------------------------------------------------------
 */
static const ArrowField *
find_dictionary(const ArrowField *fields, int32_t n, int64_t id)
{
	for (int32_t i = 0; i < n; i++)
	{
		const ArrowField *f = &fields[i];

		if (f->has_dictionary && f->dictionary.id == id)
			return f;
		if ((f = find_dictionary(f->children, f->n_children, id)) != NULL)
			return f;
	}
	return NULL;
}

static bool
write_dictionary(ArrowWriter *w, const ArrowSchema *schema, const JsonValue *j,
				 size_t index, char *msg)
{
	static const char *const keys[] = {"id", "values", "delta", NULL};
	const JsonValue *id = json_get(j, "id");
	const JsonValue *values = json_get(j, "values");
	const JsonValue *delta = json_get(j, "delta");
	const ArrowField *df;
	ArrowField	vf;
	ArrowBuilder *b = NULL;
	ArrowError	err;
	char		path[512];
	char		vmsg[MSG_LEN];

	if (j->type != JSON_OBJECT || !check_keys(j, keys, "a dictionary", msg))
	{
		if (j->type != JSON_OBJECT)
			set_msg(msg, "dictionary %zu: must be an object", index);
		return false;
	}
	if (id == NULL || !json_is_integer(id) || values == NULL || values->type != JSON_ARRAY ||
		(delta != NULL && delta->type != JSON_BOOL))
	{
		set_msg(msg, "dictionary %zu: needs an integer \"id\", a \"values\" array "
				"and an optional boolean \"delta\"", index);
		return false;
	}
	df = find_dictionary(schema->fields, schema->n_fields, strtoll(id->str, NULL, 10));
	if (df == NULL)
	{
		set_msg(msg, "dictionary %zu: no field uses dictionary id %s", index, id->str);
		return false;
	}
	/* the values have the field's type, without the dictionary encoding */
	vf = *df;
	vf.has_dictionary = false;
	vf.nullable = true;
	if (arrow_builder_create(&vf, NULL, &b, &err) != ARROW_OK)
	{
		set_msg(msg, "dictionary %zu: %s", index, err.message);
		return false;
	}
	for (size_t i = 0; i < values->n; i++)
	{
		snprintf(path, sizeof(path), "%s", df->name);
		if (!append_value(b, &vf, values->items[i], path, sizeof(path), vmsg))
		{
			set_msg(msg, "dictionary %zu, value %zu (field \"%s\"): %s", index, i, path, vmsg);
			arrow_builder_free(b);
			return false;
		}
	}
	if (arrow_writer_write_dictionary(w, df->dictionary.id, b,
									  delta != NULL && delta->boolean, &err) != ARROW_OK)
	{
		set_msg(msg, "dictionary %zu: %s", index, err.message);
		arrow_builder_free(b);
		return false;
	}
	arrow_builder_free(b);
	return true;
}

static bool
write_batch(ArrowWriter *w, const ArrowSchema *schema, ArrowBuilder **cols,
			const JsonValue *j, size_t index, char *msg)
{
	static const char *const keys[] = {"metadata", "rows", NULL};
	const JsonValue *rows = json_get(j, "rows");
	ArrowMetadata md = {0, NULL};
	ArrowError	err;
	char		path[512];
	char		vmsg[MSG_LEN];
	bool		ok = false;

	if (j->type != JSON_OBJECT || rows == NULL || rows->type != JSON_ARRAY)
	{
		set_msg(msg, "batch %zu: must be an object with a \"rows\" array", index);
		return false;
	}
	if (!check_keys(j, keys, "a batch", vmsg) || !parse_metadata(json_get(j, "metadata"), &md, vmsg))
	{
		set_msg(msg, "batch %zu: %s", index, vmsg);
		goto done;
	}
	for (size_t r = 0; r < rows->n; r++)
	{
		const JsonValue *row = rows->items[r];

		if (row->type != JSON_OBJECT)
		{
			set_msg(msg, "batch %zu, row %zu: a row must be an object", index, r);
			goto done;
		}
		for (size_t k = 0; k < row->n; k++)
		{
			bool		known = false;

			for (int32_t c = 0; c < schema->n_fields; c++)
				known = known || strcmp(row->keys[k], schema->fields[c].name) == 0;
			if (!known)
			{
				set_msg(msg, "batch %zu, row %zu: no field \"%s\" in the schema", index, r, row->keys[k]);
				goto done;
			}
		}
		for (int32_t c = 0; c < schema->n_fields; c++)
		{
			const ArrowField *f = &schema->fields[c];
			const JsonValue *v = json_get(row, f->name);

			snprintf(path, sizeof(path), "%s", f->name);
			if (v == NULL)
			{
				set_msg(msg, "batch %zu, row %zu, field \"%s\": missing", index, r, f->name);
				goto done;
			}
			if (!append_value(cols[c], f, v, path, sizeof(path), vmsg))
			{
				set_msg(msg, "batch %zu, row %zu, field \"%s\": %s", index, r, path, vmsg);
				goto done;
			}
		}
	}
	if (arrow_writer_write_batch(w, cols, &md, &err) != ARROW_OK)
	{
		set_msg(msg, "batch %zu: %s", index, err.message);
		goto done;
	}
	ok = true;

done:
	free_metadata(&md);
	return ok;
}

/* ------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------
 */
/* All of 'in' in a new buffer (*len bytes); NULL on a read error */
static char *
read_all(FILE *in, size_t *len)
{
	size_t		cap = 65536;
	char	   *buf = xmalloc(cap);

	*len = 0;
	for (;;)
	{
		size_t		n = fread(buf + *len, 1, cap - *len, in);

		*len += n;
		if (n == 0)
		{
			if (ferror(in))
			{
				free(buf);
				return NULL;
			}
			return buf;
		}
		if (*len == cap)
		{
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
	}
}

/* Writes (or appends) everything in spec to path; false with msg on error */
static bool
generate(const char *path, bool append, const JsonValue *spec, char *msg)
{
	static const char *const keys[] = {"schema", "dictionaries", "batches", NULL};
	const JsonValue *js = json_get(spec, "schema");
	const JsonValue *dicts = json_get(spec, "dictionaries");
	const JsonValue *batches = json_get(spec, "batches");
	ArrowSchema given = {0, NULL, {0, NULL}};
	const ArrowSchema *schema;
	ArrowWriter *w = NULL;
	ArrowBuilder **cols = NULL;
	int32_t		n_cols = 0;
	ArrowError	err;
	bool		ok = false;

	if (spec->type != JSON_OBJECT)
	{
		set_msg(msg, "the document must be an object");
		return false;
	}
	if (!check_keys(spec, keys, "the document", msg))
		return false;
	if ((dicts != NULL && dicts->type != JSON_ARRAY) || (batches != NULL && batches->type != JSON_ARRAY))
	{
		set_msg(msg, "\"dictionaries\" and \"batches\" must be arrays");
		return false;
	}
	if (js == NULL && !append)
	{
		set_msg(msg, "no \"schema\"");
		return false;
	}
	if (js != NULL && !parse_schema(js, &given, msg))
		goto done;
	if (append)
	{
		if (arrow_writer_open_append(path, js ? &given : NULL, NULL, &w, &err) != ARROW_OK)
		{
			set_msg(msg, "%s", err.message);
			goto done;
		}
	}
	else if (arrow_writer_create(path, &given, NULL, &w, &err) != ARROW_OK)
	{
		set_msg(msg, "%s", err.message);
		goto done;
	}
	schema = arrow_writer_schema(w);

	for (size_t i = 0; dicts != NULL && i < dicts->n; i++)
	{
		if (!write_dictionary(w, schema, dicts->items[i], i, msg))
			goto done;
	}
	if (schema->n_fields > 0)
	{
		/* n_cols: the writer's schema is gone after close */
		n_cols = schema->n_fields;
		cols = calloc(n_cols, sizeof(ArrowBuilder *));
		if (cols == NULL)
		{
			set_msg(msg, "out of memory");
			goto done;
		}
	}
	for (int32_t c = 0; c < schema->n_fields; c++)
	{
		if (arrow_builder_create(&schema->fields[c], NULL, &cols[c], &err) != ARROW_OK)
		{
			set_msg(msg, "%s", err.message);
			goto done;
		}
	}
	for (size_t i = 0; batches != NULL && i < batches->n; i++)
	{
		if (!write_batch(w, schema, cols, batches->items[i], i, msg))
			goto done;
	}
	ok = arrow_writer_close(w, &err) == ARROW_OK;
	w = NULL;
	if (!ok)
		set_msg(msg, "%s", err.message);

done:
	if (w != NULL)
		arrow_writer_abort(w);
	for (int32_t c = 0; c < n_cols; c++)
		arrow_builder_free(cols[c]);
	free(cols);
	arrow_schema_free(NULL, &given);
	return ok;
}

int
main(int argc, char **argv)
{
	bool		append = false;
	const char *path = NULL;
	char	   *text;
	size_t		len;
	JsonValue  *spec;
	char		msg[MSG_LEN];
	bool		ok;

	set_progname("arrow-gen");
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--append") == 0)
			append = true;
		else if (path == NULL && argv[i][0] != '-')
			path = argv[i];
		else
		{
			path = NULL;
			break;
		}
	}
	if (path == NULL)
	{
		fprintf(stderr, "usage: %s [--append] OUT.arrow < SPEC.json\n", progname);
		return 1;
	}
	text = read_all(stdin, &len);
	if (text == NULL)
	{
		report("could not read the standard input");
		return 1;
	}
	spec = json_parse(text, len, msg, sizeof(msg));
	free(text);
	if (spec == NULL)
	{
		report("invalid JSON: %s", msg);
		return 1;
	}
	ok = generate(path, append, spec, msg);
	json_free(spec);
	if (!ok)
	{
		report("%s", msg);
		return 1;
	}
	return 0;
}
