/*-------------------------------------------------------------------------
 *
 * arrow_read_schema.c
 *		The reader's schema: Schema flatbuffer tables to ArrowSchema (types,
 *		fields, metadata, dictionary encodings), with the checks of nesting
 *		and layouts, and what the reader derives from the schema: where
 *		each column's nodes and buffers sit, the value field of each
 *		dictionary id, the variadic buffer counts of view fields.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_reader.h"
#include "arrow_types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Schema
 * ------------------------------------------------------------------------
 */

/*
 * Copies a flatbuffer string (s may be NULL when absent) into a C string in
 * *out.  A NUL byte inside cannot be kept in a C string: rather than cut the
 * string short silently (two field names could then look equal), it is
 * refused.  'what' names the string for the message.
 */
static int
copy_string(const ArrowAllocator *alloc, const char *s, uint32_t len,
			const char *what, char **out, ArrowError *err)
{
	if (s != NULL && memchr(s, '\0', len) != NULL)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "%s contains a NUL character, which pg_warp does not support", what);
	*out = arrow_strndup(alloc, s ? s : "", s ? len : 0, err);
	return *out ? ARROW_OK : ARROW_ERR_NOMEM;
}

/* Custom metadata: a vector of KeyValue tables in field 'field' of t */
int
arrow_parse_metadata(const ArrowAllocator *alloc, const FbTable *t, int field,
			   ArrowMetadata *md, ArrowError *err)
{
	FbVector	v;
	int			rc;

	md->count = 0;
	md->items = NULL;
	if (fb_get_vector(t, field, 4, &v, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (v.length == 0)
		return ARROW_OK;
	md->items = arrow_calloc(alloc, v.length, sizeof(ArrowKeyValue), err);
	if (md->items == NULL)
		return ARROW_ERR_NOMEM;
	for (uint32_t i = 0; i < v.length; i++)
	{
		FbTable		kv;
		const char *key;
		const char *value;
		uint32_t	keylen;
		uint32_t	valuelen;

		if (fb_vector_table(&v, i, &kv, err) != ARROW_OK ||
			fb_get_string(&kv, KEYVALUE_KEY, &key, &keylen, err) != ARROW_OK ||
			fb_get_string(&kv, KEYVALUE_VALUE, &value, &valuelen, err) != ARROW_OK)
			return ARROW_ERR_INVALID;
		md->count = (int32_t) i + 1;
		if ((rc = copy_string(alloc, key, keylen, "a metadata key", &md->items[i].key, err)) != ARROW_OK ||
			(rc = copy_string(alloc, value, valuelen, "a metadata value", &md->items[i].value, err)) != ARROW_OK)
			return rc;
	}
	return ARROW_OK;
}

/* Name of a Type union tag, for error messages */
static const char *
fb_type_name(uint8_t type)
{
	static const char *const names[] = {
		"NONE", "Null", "Int", "FloatingPoint", "Binary", "Utf8", "Bool",
		"Decimal", "Date", "Time", "Timestamp", "Interval", "List", "Struct",
		"Union", "FixedSizeBinary", "FixedSizeList", "Map", "Duration",
		"LargeBinary", "LargeUtf8", "LargeList", "RunEndEncoded", "BinaryView",
		"Utf8View", "ListView", "LargeListView"
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : "unknown";
}

/* A TimeUnit into t->unit */
static int
parse_time_unit(int16_t unit, ArrowType *t, const char *path, ArrowError *err)
{
	if (unit < ARROW_UNIT_SECOND || unit > ARROW_UNIT_NANO)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "field \"%s\": invalid time unit %d", path, unit);
	t->unit = (ArrowTimeUnit) unit;
	return ARROW_OK;
}

/* Int table (of a field type or a dictionary index type) to a type id */
static int
parse_int(const FbTable *tt, ArrowTypeId *id, const char *path, ArrowError *err)
{
	int32_t		width;
	bool		is_signed;

	if (fb_get_int32(tt, 0, 0, &width, err) != ARROW_OK ||
		fb_get_bool(tt, 1, false, &is_signed, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	for (int t = ARROW_TYPE_FIRST; t <= ARROW_TYPE_LAST; t++)
	{
		const ArrowTypeInfo *info = arrow_type_info(t);

		if (info->fb_type == FBT_INT && info->bit_width == width &&
			(info->value == ARROW_VALUE_INT) == is_signed)
		{
			*id = t;
			return ARROW_OK;
		}
	}
	return arrow_set_error(err, ARROW_ERR_INVALID,
						   "field \"%s\": invalid integer bit width %d", path, width);
}

/*
 * The type that Type union member fbtype names by itself: the only row of
 * the table with that member, when it has no parameters; 0 otherwise (the
 * member's table then says which type, as for Int, or gives parameters).
 */
static ArrowTypeId
plain_type(uint8_t fbtype)
{
	ArrowTypeId found = 0;

	for (int t = ARROW_TYPE_FIRST; t <= ARROW_TYPE_LAST; t++)
	{
		const ArrowTypeInfo *info = arrow_type_info(t);

		if (info->fb_type != fbtype)
			continue;
		if (found != 0 || info->params != ARROW_PARAMS_NONE)
			return 0;
		found = t;
	}
	return found;
}

/* Timestamp { unit, timezone }: an empty zone means "no zone" (Schema.fbs) */
static int
parse_timestamp(const ArrowAllocator *alloc, const FbTable *tt, ArrowType *t,
				const char *path, ArrowError *err)
{
	int16_t		s16;
	const char *tz;
	uint32_t	tzlen;

	if (fb_get_int16(tt, 0, 0, &s16, err) != ARROW_OK ||
		parse_time_unit(s16, t, path, err) != ARROW_OK ||
		fb_get_string(tt, 1, &tz, &tzlen, err) != ARROW_OK)
		return err->code;
	t->id = ARROW_TYPE_TIMESTAMP;
	if (tzlen > 0)
		return copy_string(alloc, tz, tzlen, "a time zone", &t->timezone, err);
	return ARROW_OK;
}

/* Decimal { precision, scale, bitWidth (128 or 256) } */
static int
parse_decimal(const FbTable *tt, ArrowType *t, const char *path, ArrowError *err)
{
	int32_t		a;
	int32_t		b;
	int32_t		c;

	if (fb_get_int32(tt, 0, 0, &a, err) != ARROW_OK ||
		fb_get_int32(tt, 1, 0, &b, err) != ARROW_OK ||
		fb_get_int32(tt, 2, 128, &c, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (c != 128 && c != 256)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "unsupported type decimal%d in field \"%s\"", c, path);
	if (a < 1 || a > (c == 128 ? 38 : 76))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "field \"%s\": decimal%d precision %d is out of range", path, c, a);
	if (b < -(c == 128 ? 38 : 76) || b > (c == 128 ? 38 : 76))
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "unsupported decimal%d scale %d in field \"%s\"", c, b, path);
	t->id = (c == 128) ? ARROW_TYPE_DECIMAL128 : ARROW_TYPE_DECIMAL256;
	t->precision = a;
	t->scale = b;
	return ARROW_OK;
}

/*
 * The Type union of a field to an ArrowType.  Types outside ArrowTypeId give
 * ARROW_ERR_UNSUPPORTED naming the type and the field.
 */
static int
parse_type(const ArrowAllocator *alloc, uint8_t fbtype, const FbTable *tt,
		   ArrowType *t, const char *path, ArrowError *err)
{
	ArrowTypeId plain = plain_type(fbtype);
	int16_t		s16;
	int32_t		a;

	if (fbtype == 0)
		return arrow_set_error(err, ARROW_ERR_INVALID, "field \"%s\" has no type", path);
	if (plain != 0)
	{
		t->id = plain;
		return ARROW_OK;
	}
	switch (fbtype)
	{
		case FBT_INT:
			return parse_int(tt, &t->id, path, err);
		case FBT_MAP:
			if (fb_get_bool(tt, 0, false, &t->keys_sorted, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			t->id = ARROW_TYPE_MAP;
			return ARROW_OK;
		case FBT_FLOATING_POINT:
			if (fb_get_int16(tt, 0, 0, &s16, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			if (s16 < 0 || s16 > 2)
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": invalid floating point precision %d", path, s16);
			t->id = ARROW_TYPE_FLOAT16 + s16;
			return ARROW_OK;
		case FBT_DECIMAL:
			return parse_decimal(tt, t, path, err);
		case FBT_DATE:
			if (fb_get_int16(tt, 0, 1, &s16, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			if (s16 != 0 && s16 != 1)
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": invalid date unit %d", path, s16);
			t->id = s16 == 0 ? ARROW_TYPE_DATE32 : ARROW_TYPE_DATE64;
			return ARROW_OK;
		case FBT_TIME:
			if (fb_get_int16(tt, 0, 1, &s16, err) != ARROW_OK ||
				fb_get_int32(tt, 1, 32, &a, err) != ARROW_OK ||
				parse_time_unit(s16, t, path, err) != ARROW_OK)
				return err->code;
			if (a == 32 && (t->unit == ARROW_UNIT_SECOND || t->unit == ARROW_UNIT_MILLI))
				t->id = ARROW_TYPE_TIME32;
			else if (a == 64 && (t->unit == ARROW_UNIT_MICRO || t->unit == ARROW_UNIT_NANO))
				t->id = ARROW_TYPE_TIME64;
			else
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": time unit %d with bit width %d", path, s16, a);
			return ARROW_OK;
		case FBT_TIMESTAMP:
			return parse_timestamp(alloc, tt, t, path, err);
		case FBT_INTERVAL:
			if (fb_get_int16(tt, 0, 0, &s16, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			if (s16 < 0 || s16 > 2)
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": invalid interval unit %d", path, s16);
			t->id = ARROW_TYPE_INTERVAL_YM + s16;
			return ARROW_OK;
		case FBT_DURATION:
			if (fb_get_int16(tt, 0, 1, &s16, err) != ARROW_OK ||
				parse_time_unit(s16, t, path, err) != ARROW_OK)
				return err->code;
			t->id = ARROW_TYPE_DURATION;
			return ARROW_OK;
		case FBT_FIXED_SIZE_BINARY:
			if (fb_get_int32(tt, 0, 0, &a, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			if (a < 0)
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": invalid byte width %d", path, a);
			t->id = ARROW_TYPE_FIXED_SIZE_BINARY;
			t->byte_width = a;
			return ARROW_OK;
		case FBT_FIXED_SIZE_LIST:
			if (fb_get_int32(tt, 0, 0, &a, err) != ARROW_OK)
				return ARROW_ERR_INVALID;
			if (a < 0)
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "field \"%s\": invalid list size %d", path, a);
			t->id = ARROW_TYPE_FIXED_SIZE_LIST;
			t->list_size = a;
			return ARROW_OK;
		default:
			return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
								   "unsupported type %s (%d) in field \"%s\"",
								   fb_type_name(fbtype), fbtype, path);
	}
}

/* Whether a descendant of f is dictionary-encoded */
static bool
has_nested_dictionary(const ArrowField *f)
{
	for (int32_t i = 0; i < f->n_children; i++)
	{
		if (f->children[i].has_dictionary || has_nested_dictionary(&f->children[i]))
			return true;
	}
	return false;
}

/*
 * The children that MAP and RUN_END_ENCODED require, and no dictionary
 * encoding of the newer layouts (their dictionaries could not be
 * concatenated).
 */
static int
check_new_layout(const ArrowField *f, const char *path, ArrowError *err)
{
	ArrowTypeId id = f->type.id;

	if (f->has_dictionary &&
		(id == ARROW_TYPE_UTF8_VIEW || id == ARROW_TYPE_BINARY_VIEW ||
		 id == ARROW_TYPE_LIST_VIEW || id == ARROW_TYPE_LARGE_LIST_VIEW ||
		 id == ARROW_TYPE_RUN_END_ENCODED || id == ARROW_TYPE_MAP))
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "unsupported dictionary of views, list views, maps or run-end encoded values in field \"%s\"",
							   path);
	if (id == ARROW_TYPE_MAP &&
		(f->children[0].type.id != ARROW_TYPE_STRUCT || f->children[0].n_children != 2 ||
		 f->children[0].has_dictionary))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "field \"%s\": a map's child must be a struct of key and value", path);
	if (id == ARROW_TYPE_RUN_END_ENCODED &&
		(f->children[0].has_dictionary ||
		 (f->children[0].type.id != ARROW_TYPE_INT16 &&
		  f->children[0].type.id != ARROW_TYPE_INT32 &&
		  f->children[0].type.id != ARROW_TYPE_INT64)))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "field \"%s\": run ends must be int16, int32 or int64", path);
	return ARROW_OK;
}

/*
 * Parses a Field table into *f (zeroed by the caller).  On failure *f may be
 * partly filled; the caller frees it with arrow_field_free.  'budget' bounds
 * the total number of fields, so that children vectors sharing tables cannot
 * make the walk exponential: a genuine schema spends at least 4 bytes (a
 * vector slot) on every field.
 */
static int
parse_field(const ArrowAllocator *alloc, const FbTable *ft, ArrowField *f,
			int depth, int64_t *budget, const char *parent, ArrowError *err)
{
	const char *name;
	uint32_t	namelen;
	uint8_t		fbtype;
	FbTable		tt;
	FbTable		dt;
	bool		has_dict;
	FbVector	children;
	char		path[256];
	int			want;
	int			rc;

	if (depth > ARROW_MAX_NESTING)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "fields nested deeper than %d levels", ARROW_MAX_NESTING);
	if (--(*budget) < 0)
		return arrow_set_error(err, ARROW_ERR_INVALID, "schema has more fields than its size allows");
	if (fb_get_string(ft, FIELD_NAME, &name, &namelen, err) != ARROW_OK ||
		fb_get_bool(ft, FIELD_NULLABLE, false, &f->nullable, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if ((rc = copy_string(alloc, name, namelen, "a field name", &f->name, err)) != ARROW_OK)
		return rc;
	if (parent != NULL)
		snprintf(path, sizeof(path), "%s.%s", parent, f->name);
	else
		snprintf(path, sizeof(path), "%s", f->name);

	if (arrow_parse_metadata(alloc, ft, FIELD_METADATA, &f->metadata, err) != ARROW_OK ||
		fb_get_union(ft, FIELD_TYPE, &fbtype, &tt, err) != ARROW_OK ||
		parse_type(alloc, fbtype, &tt, &f->type, path, err) != ARROW_OK)
		return err->code;

	if (fb_get_table(ft, FIELD_DICTIONARY, &dt, &has_dict, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (has_dict)
	{
		FbTable		it;
		bool		has_index;

		f->has_dictionary = true;
		f->dictionary.index_type = ARROW_TYPE_INT32;
		if (fb_get_int64(&dt, DICTENC_ID, 0, &f->dictionary.id, err) != ARROW_OK ||
			fb_get_bool(&dt, DICTENC_ORDERED, false, &f->dictionary.ordered, err) != ARROW_OK ||
			fb_get_table(&dt, DICTENC_INDEX_TYPE, &it, &has_index, err) != ARROW_OK ||
			(has_index && parse_int(&it, &f->dictionary.index_type, path, err) != ARROW_OK))
			return ARROW_ERR_INVALID;
	}

	if (fb_get_vector(ft, FIELD_CHILDREN, 4, &children, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	want = arrow_type_info(f->type.id)->n_children;
	if (want >= 0 && children.length != (uint32_t) want)
	{
		char		tname[64];

		arrow_type_format(&f->type, tname, sizeof(tname));
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "field \"%s\" of type %s has %u children, %d expected",
							   path, tname, children.length, want);
	}
	if (children.length > 0)
	{
		f->children = arrow_calloc(alloc, children.length, sizeof(ArrowField), err);
		if (f->children == NULL)
			return ARROW_ERR_NOMEM;
		for (uint32_t i = 0; i < children.length; i++)
		{
			FbTable		ct;

			f->n_children = (int32_t) i + 1;
			if (fb_vector_table(&children, i, &ct, err) != ARROW_OK ||
				parse_field(alloc, &ct, &f->children[i], depth + 1, budget, path, err) != ARROW_OK)
				return err->code;
		}
	}
	if (f->has_dictionary && has_nested_dictionary(f))
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
							   "unsupported dictionary-encoded field inside the dictionary of field \"%s\"",
							   path);
	return check_new_layout(f, path, err);
}

/* Schema table to file->schema */
int
arrow_parse_schema(ArrowFile *file, const FbTable *st, ArrowError *err)
{
	ArrowSchema *schema = &file->schema;
	int16_t		endianness;
	FbVector	fields;
	int64_t		budget = st->fb->len / 4;

	if (fb_get_int16(st, SCHEMA_ENDIANNESS, 0, &endianness, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (endianness != 0)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "unsupported big-endian schema");
	if (arrow_parse_metadata(file->alloc, st, SCHEMA_METADATA, &schema->metadata, err) != ARROW_OK ||
		fb_get_vector(st, SCHEMA_FIELDS, 4, &fields, err) != ARROW_OK)
		return err->code;
	if (fields.length == 0)
		return ARROW_OK;
	schema->fields = arrow_calloc(file->alloc, fields.length, sizeof(ArrowField), err);
	if (schema->fields == NULL)
		return ARROW_ERR_NOMEM;
	for (uint32_t i = 0; i < fields.length; i++)
	{
		FbTable		ft;

		schema->n_fields = (int32_t) i + 1;
		if (fb_vector_table(&fields, i, &ft, err) != ARROW_OK ||
			parse_field(file->alloc, &ft, &schema->fields[i], 1, &budget, NULL, err) != ARROW_OK)
			return err->code;
	}
	return ARROW_OK;
}

/* Same value type (names aside), for fields sharing a dictionary id */
static bool
value_types_equal(const ArrowField *a, const ArrowField *b)
{
	char		ta[128];
	char		tb[128];

	arrow_type_format(&a->type, ta, sizeof(ta));
	arrow_type_format(&b->type, tb, sizeof(tb));
	if (strcmp(ta, tb) != 0 || a->n_children != b->n_children)
		return false;
	for (int32_t i = 0; i < a->n_children; i++)
	{
		if (a->children[i].has_dictionary != b->children[i].has_dictionary ||
			!value_types_equal(&a->children[i], &b->children[i]))
			return false;
	}
	return true;
}

/* The value field of dictionary id, or NULL when no field uses it */
const DictValueField *
arrow_find_dict_field(const ArrowFile *file, int64_t id)
{
	const ReaderPriv *priv = file->priv;

	for (int32_t i = 0; i < priv->n_dict_fields; i++)
	{
		if (priv->dict_fields[i].id == id)
			return &priv->dict_fields[i];
	}
	return NULL;
}

/* Collects the dictionary ids of f and its descendants into priv */
static int
collect_dict_fields(ArrowFile *file, const ArrowField *f, ArrowError *err)
{
	ReaderPriv *priv = file->priv;

	if (f->has_dictionary)
	{
		const DictValueField *dv = arrow_find_dict_field(file, f->dictionary.id);
		DictValueField *arr;

		if (dv != NULL)
		{
			if (!value_types_equal(&dv->field, f))
				return arrow_set_error(err, ARROW_ERR_INVALID,
									   "fields \"%s\" and \"%s\" share dictionary %lld with different value types",
									   dv->field.name, f->name, (long long) f->dictionary.id);
			return ARROW_OK;
		}
		arr = arrow_realloc(file->alloc, priv->dict_fields,
							sizeof(DictValueField) * (priv->n_dict_fields + 1), err);
		if (arr == NULL)
			return ARROW_ERR_NOMEM;
		priv->dict_fields = arr;
		arr[priv->n_dict_fields].id = f->dictionary.id;
		arr[priv->n_dict_fields].field = *f;
		arr[priv->n_dict_fields].field.has_dictionary = false;
		arr[priv->n_dict_fields].seen = false;
		priv->n_dict_fields++;
		return ARROW_OK;		/* no dictionaries inside (parse_field) */
	}
	for (int32_t i = 0; i < f->n_children; i++)
	{
		if (collect_dict_fields(file, &f->children[i], err) != ARROW_OK)
			return err->code;
	}
	return ARROW_OK;
}

/*
 * Nodes and buffers of a field in a batch: a dictionary-encoded field is one
 * node with two buffers (its values travel in dictionary batches).
 */
void
arrow_count_layout(const ArrowField *f, int32_t *nodes, int32_t *buffers)
{
	*nodes += 1;
	*buffers += arrow_field_buffer_count(f);
	if (f->has_dictionary)
		return;
	for (int32_t i = 0; i < f->n_children; i++)
		arrow_count_layout(&f->children[i], nodes, buffers);
}

/*
 * Fields of f's tree with data buffers of their own in a batch (UTF8_VIEW,
 * BINARY_VIEW): one variadicBufferCounts entry each.
 */
static int32_t
count_views(const ArrowField *f)
{
	int32_t		n;

	if (f->has_dictionary)
		return 0;
	n = (f->type.id == ARROW_TYPE_UTF8_VIEW || f->type.id == ARROW_TYPE_BINARY_VIEW);
	for (int32_t i = 0; i < f->n_children; i++)
		n += count_views(&f->children[i]);
	return n;
}

/* does the schema have a view field, at any depth (batches with variadic buffers)? */
bool
arrow_schema_has_views(const ArrowSchema *schema)
{
	for (int32_t i = 0; i < schema->n_fields; i++)
		if (count_views(&schema->fields[i]) > 0)
			return true;
	return false;
}

/*
 * The variadicBufferCounts of a batch of 'fields' (vector v): one count per
 * view field, each added to *want_buffers; then where each field's buffers
 * and counts start (schemas without views need neither).
 */
int
arrow_parse_variadic(const ArrowAllocator *alloc, const FbVector *v, const ArrowField *fields,
			   int32_t n_fields, ArrowBatchInfo *info, int32_t *want_buffers,
			   const char *what, ArrowError *err)
{
	int32_t		n_views = 0;
	int32_t		buffer = 0;
	int32_t		view = 0;
	int64_t		total = *want_buffers;

	for (int32_t i = 0; i < n_fields; i++)
		n_views += count_views(&fields[i]);
	if (v->length != (uint32_t) n_views)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%s has %u variadic buffer counts, the schema has %d view fields",
							   what, v->length, n_views);
	if (n_views == 0)
		return ARROW_OK;
	info->n_variadic = n_views;
	info->variadic_counts = arrow_calloc(alloc, n_views, sizeof(int64_t), err);
	info->column_first_buffer = arrow_calloc(alloc, n_fields + 1, sizeof(int32_t), err);
	info->column_first_variadic = arrow_calloc(alloc, n_fields, sizeof(int32_t), err);
	if (info->variadic_counts == NULL || info->column_first_buffer == NULL ||
		info->column_first_variadic == NULL)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < n_views; i++)
	{
		int64_t		c = (int64_t) fb_le64(fb_vector_elem(v, (uint32_t) i));

		/* every buffer takes 16 bytes of the metadata: a bound on any count */
		if (c < 0 || c > INT32_MAX / 2 - total)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "%s: invalid variadic buffer count %lld", what, (long long) c);
		info->variadic_counts[i] = c;
		total += c;
	}
	for (int32_t i = 0; i < n_fields; i++)
	{
		int32_t		nodes = 0;
		int32_t		fixed = 0;
		int32_t		k = count_views(&fields[i]);

		info->column_first_buffer[i] = buffer;
		info->column_first_variadic[i] = view;
		arrow_count_layout(&fields[i], &nodes, &fixed);
		buffer += fixed;
		for (int32_t j = 0; j < k; j++)
			buffer += (int32_t) info->variadic_counts[view + j];
		view += k;
	}
	info->column_first_buffer[n_fields] = buffer;
	*want_buffers = buffer;
	return ARROW_OK;
}

/* Schema-derived state: column layouts and dictionary value fields */
int
arrow_prepare_schema(ArrowFile *file, ArrowError *err)
{
	int32_t		node = 0;
	int32_t		buffer = 0;

	if (file->schema.n_fields > 0)
	{
		file->columns = arrow_calloc(file->alloc, file->schema.n_fields,
									 sizeof(ArrowColumnLayout), err);
		if (file->columns == NULL)
			return ARROW_ERR_NOMEM;
	}
	for (int32_t i = 0; i < file->schema.n_fields; i++)
	{
		ArrowColumnLayout *c = &file->columns[i];

		c->first_node = node;
		c->first_buffer = buffer;
		arrow_count_layout(&file->schema.fields[i], &node, &buffer);
		c->n_nodes = node - c->first_node;
		c->n_buffers = buffer - c->first_buffer;
		if (collect_dict_fields(file, &file->schema.fields[i], err) != ARROW_OK)
			return err->code;
	}
	return ARROW_OK;
}
