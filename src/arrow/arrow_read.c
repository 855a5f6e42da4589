/*-------------------------------------------------------------------------
 *
 * arrow_read.c
 *		Reader of the Arrow IPC file and stream formats: opening (footer,
 *		schema, message metadata), column extents, and batch loading with
 *		decompression and validation.
 *
 * Formats read:
 *	- file: "ARROW1\0\0", a stream, the Footer flatbuffer, its int32 length,
 *	  "ARROW1".  The footer lists the schema and the blocks (offset, metadata
 *	  length, body length) of every dictionary and record batch;
 *	- stream: a sequence of messages, each a prefix (0xFFFFFFFF and an int32
 *	  metadata length, or before Arrow 0.15 only the int32 length), the
 *	  Message flatbuffer (padded) and the body.  It starts with the Schema
 *	  message and ends at an end-of-stream marker (length 0) or at the end of
 *	  the file.
 * Metadata versions V4 and V5 are accepted (they differ only in the layout
 * of unions, which we do not support).
 *
 * Opening reads and checks all metadata but no body: every block, message
 * and buffer lies inside the file, node and buffer counts match the schema,
 * lengths and null counts are sane.  arrow_batch_load then reads the buffers
 * of the wanted columns and validates what value accessors rely on (see
 * load_array).  After both, no accessor in arrow.h and no code following the
 * documented ArrowArray invariants can read outside a buffer.
 *
 * Dictionaries: every dictionary-encoded field (at any depth) names a
 * dictionary id; dictionary batches carry the values.  In a stream a record
 * batch sees the dictionary batches before it: the last non-delta batch of
 * an id and the deltas after it, concatenated.  In a file every record batch
 * sees all of them (replacement is not allowed there, deltas are).  Decoded
 * dictionaries belong to the ArrowBatch that needed them.
 *
 * arrow_batch_load does not modify the ArrowFile, so batches of one file may
 * be loaded by several threads at once when the source's read_at is
 * thread-safe (the file-descriptor source uses pread and is).
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_internal.h"
#include "arrow_codec.h"
#include "fb_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the Arrow reader assumes a little-endian host"
#endif

/* Field ids of the tables we read (File.fbs, Message.fbs, Schema.fbs) */
#define FOOTER_VERSION			0
#define FOOTER_SCHEMA			1
#define FOOTER_DICTIONARIES		2
#define FOOTER_RECORD_BATCHES	3
#define SCHEMA_ENDIANNESS		0
#define SCHEMA_FIELDS			1
#define SCHEMA_METADATA			2
#define FIELD_NAME				0
#define FIELD_NULLABLE			1
#define FIELD_TYPE				2	/* union: type 2, value 3 */
#define FIELD_DICTIONARY		4
#define FIELD_CHILDREN			5
#define FIELD_METADATA			6
#define KEYVALUE_KEY			0
#define KEYVALUE_VALUE			1
#define DICTENC_ID				0
#define DICTENC_INDEX_TYPE		1
#define DICTENC_ORDERED			2
#define MESSAGE_VERSION			0
#define MESSAGE_HEADER			1	/* union: type 1, value 2 */
#define MESSAGE_BODY_LENGTH		3
#define MESSAGE_METADATA		4
#define RECORDBATCH_LENGTH		0
#define RECORDBATCH_NODES		1
#define RECORDBATCH_BUFFERS		2
#define RECORDBATCH_COMPRESSION	3
#define RECORDBATCH_VARIADIC	4	/* variadicBufferCounts: [long] */
#define DICTBATCH_ID			0
#define DICTBATCH_DATA			1
#define DICTBATCH_IS_DELTA		2
#define COMPRESSION_CODEC		0
#define COMPRESSION_METHOD		1

/* Message.fbs MessageHeader union */
#define HEADER_SCHEMA			1
#define HEADER_DICTIONARY_BATCH	2
#define HEADER_RECORD_BATCH		3

/* Schema.fbs MetadataVersion */
#define METADATA_V4				3
#define METADATA_V5				4

/* Schema.fbs Type union */
enum
{
	FBT_NULL = 1, FBT_INT, FBT_FLOATING_POINT, FBT_BINARY, FBT_UTF8, FBT_BOOL,
	FBT_DECIMAL, FBT_DATE, FBT_TIME, FBT_TIMESTAMP, FBT_INTERVAL, FBT_LIST,
	FBT_STRUCT, FBT_UNION, FBT_FIXED_SIZE_BINARY, FBT_FIXED_SIZE_LIST, FBT_MAP,
	FBT_DURATION, FBT_LARGE_BINARY, FBT_LARGE_UTF8, FBT_LARGE_LIST,
	FBT_RUN_END_ENCODED, FBT_BINARY_VIEW, FBT_UTF8_VIEW, FBT_LIST_VIEW,
	FBT_LARGE_LIST_VIEW
};

#define MAGIC					"ARROW1"
#define MAGIC_LEN				6
#define FILE_HEADER_LEN			8	/* magic padded to 8 bytes */
#define FILE_TRAILER_LEN		10	/* int32 footer length + magic */
#define CONTINUATION			0xFFFFFFFFu
#define BLOCK_SIZE				24	/* File.fbs struct Block */
#define NODE_SIZE				16	/* Message.fbs struct FieldNode */
#define BUFFER_SIZE				16	/* Schema.fbs struct Buffer */

/* The value field of a dictionary id (a shallow copy, never freed deeply) */
typedef struct DictValueField
{
	int64_t		id;
	ArrowField	field;			/* the encoded field, has_dictionary false */
	bool		seen;			/* a dictionary batch for id was read */
} DictValueField;

/* ArrowFile.priv */
typedef struct ReaderPriv
{
	int32_t    *visible_dicts;	/* per record batch: dictionaries[0..n) apply */
	int32_t		n_dict_fields;
	DictValueField *dict_fields;
	int32_t		batches_cap;	/* allocated entries of batches, dicts */
	int32_t		dicts_cap;
} ReaderPriv;

/* One message read from the file */
typedef struct Message
{
	int64_t		offset;			/* of the prefix */
	int64_t		metadata_length;	/* prefix + flatbuffer + padding */
	int64_t		body_offset;
	int64_t		body_length;
	int16_t		version;		/* MetadataVersion */
	uint8_t		header_type;
	uint8_t    *data;			/* the flatbuffer */
	FbReader	fb;
	FbTable		msg;
	FbTable		header;
} Message;

/* ------------------------------------------------------------------------
 * Reading bytes
 * ------------------------------------------------------------------------
 */

/* Reads len bytes at offset, which must lie inside the source */
static int
read_bytes(const ArrowFile *file, int64_t offset, void *dst, size_t len,
		   ArrowError *err)
{
	if (offset < 0 || offset > file->source.size ||
		(uint64_t) len > (uint64_t) (file->source.size - offset))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end of the file (%lld bytes)",
							   len, (long long) offset, (long long) file->source.size);
	if (len == 0)
		return ARROW_OK;
	return file->source.read_at(file->source.ctx, offset, dst, len, err);
}

/* Source over the file descriptor in ArrowFile.fd (ctx points to it) */
static int
fd_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err)
{
	int			fd = *(const int *) ctx;
	uint8_t    *p = dst;

	while (len > 0)
	{
		ssize_t		n = pread(fd, p, len, (off_t) offset);

		if (n < 0)
		{
			int			e = errno;
			const char *msg;

			if (e == EINTR)
				continue;
			msg = strerror(e);
			errno = e;
			return arrow_set_error(err, ARROW_ERR_IO, "could not read %zu bytes at offset %lld: %s",
								   len, (long long) offset, msg);
		}
		if (n == 0)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "unexpected end of file at offset %lld", (long long) offset);
		p += n;
		len -= (size_t) n;
		offset += n;
	}
	return ARROW_OK;
}

/* Whether [offset, offset + len) lies inside [0, limit) */
static bool
range_inside(int64_t offset, int64_t len, int64_t limit)
{
	return offset >= 0 && len >= 0 && offset <= limit && len <= limit - offset;
}

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
static int
parse_metadata(const ArrowAllocator *alloc, const FbTable *t, int field,
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
	switch (width)
	{
		case 8:
			*id = is_signed ? ARROW_TYPE_INT8 : ARROW_TYPE_UINT8;
			break;
		case 16:
			*id = is_signed ? ARROW_TYPE_INT16 : ARROW_TYPE_UINT16;
			break;
		case 32:
			*id = is_signed ? ARROW_TYPE_INT32 : ARROW_TYPE_UINT32;
			break;
		case 64:
			*id = is_signed ? ARROW_TYPE_INT64 : ARROW_TYPE_UINT64;
			break;
		default:
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "field \"%s\": invalid integer bit width %d", path, width);
	}
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
	int16_t		s16;
	int32_t		a;
	int32_t		b;
	int32_t		c;

	switch (fbtype)
	{
		case 0:
			return arrow_set_error(err, ARROW_ERR_INVALID, "field \"%s\" has no type", path);
		case FBT_NULL:
			t->id = ARROW_TYPE_NULL;
			return ARROW_OK;
		case FBT_BOOL:
			t->id = ARROW_TYPE_BOOL;
			return ARROW_OK;
		case FBT_UTF8:
			t->id = ARROW_TYPE_UTF8;
			return ARROW_OK;
		case FBT_LARGE_UTF8:
			t->id = ARROW_TYPE_LARGE_UTF8;
			return ARROW_OK;
		case FBT_BINARY:
			t->id = ARROW_TYPE_BINARY;
			return ARROW_OK;
		case FBT_LARGE_BINARY:
			t->id = ARROW_TYPE_LARGE_BINARY;
			return ARROW_OK;
		case FBT_LIST:
			t->id = ARROW_TYPE_LIST;
			return ARROW_OK;
		case FBT_LARGE_LIST:
			t->id = ARROW_TYPE_LARGE_LIST;
			return ARROW_OK;
		case FBT_STRUCT:
			t->id = ARROW_TYPE_STRUCT;
			return ARROW_OK;
		case FBT_INT:
			return parse_int(tt, &t->id, path, err);
		case FBT_UTF8_VIEW:
			t->id = ARROW_TYPE_UTF8_VIEW;
			return ARROW_OK;
		case FBT_BINARY_VIEW:
			t->id = ARROW_TYPE_BINARY_VIEW;
			return ARROW_OK;
		case FBT_LIST_VIEW:
			t->id = ARROW_TYPE_LIST_VIEW;
			return ARROW_OK;
		case FBT_LARGE_LIST_VIEW:
			t->id = ARROW_TYPE_LARGE_LIST_VIEW;
			return ARROW_OK;
		case FBT_RUN_END_ENCODED:
			t->id = ARROW_TYPE_RUN_END_ENCODED;
			return ARROW_OK;
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
			{
				const char *tz;
				uint32_t	tzlen;

				if (fb_get_int16(tt, 0, 0, &s16, err) != ARROW_OK ||
					parse_time_unit(s16, t, path, err) != ARROW_OK ||
					fb_get_string(tt, 1, &tz, &tzlen, err) != ARROW_OK)
					return err->code;
				t->id = ARROW_TYPE_TIMESTAMP;
				/* an empty zone means "no zone" (Schema.fbs) */
				if (tzlen > 0)
				{
					int			rc = copy_string(alloc, tz, tzlen, "a time zone",
												 &t->timezone, err);

					if (rc != ARROW_OK)
						return rc;
				}
				return ARROW_OK;
			}
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

/* Number of children the type requires; -1: any number (struct) */
static int
type_children(ArrowTypeId id)
{
	switch (id)
	{
		case ARROW_TYPE_LIST:
		case ARROW_TYPE_LARGE_LIST:
		case ARROW_TYPE_FIXED_SIZE_LIST:
		case ARROW_TYPE_LIST_VIEW:
		case ARROW_TYPE_LARGE_LIST_VIEW:
		case ARROW_TYPE_MAP:
			return 1;
		case ARROW_TYPE_RUN_END_ENCODED:
			return 2;
		case ARROW_TYPE_STRUCT:
			return -1;
		default:
			return 0;
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

	if (parse_metadata(alloc, ft, FIELD_METADATA, &f->metadata, err) != ARROW_OK ||
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
	want = type_children(f->type.id);
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
static int
parse_schema(ArrowFile *file, const FbTable *st, ArrowError *err)
{
	ArrowSchema *schema = &file->schema;
	int16_t		endianness;
	FbVector	fields;
	int64_t		budget = st->fb->len / 4;

	if (fb_get_int16(st, SCHEMA_ENDIANNESS, 0, &endianness, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	if (endianness != 0)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "unsupported big-endian schema");
	if (parse_metadata(file->alloc, st, SCHEMA_METADATA, &schema->metadata, err) != ARROW_OK ||
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
static const DictValueField *
find_dict_field(const ArrowFile *file, int64_t id)
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
		const DictValueField *dv = find_dict_field(file, f->dictionary.id);
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
static void
count_layout(const ArrowField *f, int32_t *nodes, int32_t *buffers)
{
	*nodes += 1;
	*buffers += arrow_field_buffer_count(f);
	if (f->has_dictionary)
		return;
	for (int32_t i = 0; i < f->n_children; i++)
		count_layout(&f->children[i], nodes, buffers);
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

/*
 * The variadicBufferCounts of a batch of 'fields' (vector v): one count per
 * view field, each added to *want_buffers; then where each field's buffers
 * and counts start (schemas without views need neither).
 */
static int
parse_variadic(const ArrowFile *file, const FbVector *v, const ArrowField *fields,
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
	info->variadic_counts = arrow_calloc(file->alloc, n_views, sizeof(int64_t), err);
	info->column_first_buffer = arrow_calloc(file->alloc, n_fields + 1, sizeof(int32_t), err);
	info->column_first_variadic = arrow_calloc(file->alloc, n_fields, sizeof(int32_t), err);
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
		count_layout(&fields[i], &nodes, &fixed);
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
static int
prepare_schema(ArrowFile *file, ArrowError *err)
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
		count_layout(&file->schema.fields[i], &node, &buffer);
		c->n_nodes = node - c->first_node;
		c->n_buffers = buffer - c->first_buffer;
		if (collect_dict_fields(file, &file->schema.fields[i], err) != ARROW_OK)
			return err->code;
	}
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------
 */
static void
message_free(const ArrowFile *file, Message *m)
{
	arrow_free(file->alloc, m->data);
	m->data = NULL;
}

/*
 * Reads the message at 'offset'.  block_meta_len is the metadata length a
 * file block gives (the message must fit in it and the body follows it), or
 * -1 in a stream (the body follows the flatbuffer).  *eos is set for an
 * end-of-stream marker (length 0).  On success m->data must be freed with
 * message_free.
 */
static int
read_message(const ArrowFile *file, int64_t offset, int64_t block_meta_len,
			 Message *m, bool *eos, ArrowError *err)
{
	uint8_t		prefix[8];
	int64_t		prefix_len = 4;
	int32_t		fb_len;
	int64_t		meta_len;

	memset(m, 0, sizeof(Message));
	m->offset = offset;
	*eos = false;
	if (read_bytes(file, offset, prefix, 4, err) != ARROW_OK)
		return err->code;
	if (fb_le32(prefix) == CONTINUATION)
	{
		if (read_bytes(file, offset + 4, prefix + 4, 4, err) != ARROW_OK)
			return err->code;
		fb_len = (int32_t) fb_le32(prefix + 4);
		prefix_len = 8;
	}
	else
		fb_len = (int32_t) fb_le32(prefix);	/* before Arrow 0.15 */
	if (fb_len == 0 && block_meta_len < 0)
	{
		*eos = true;
		return ARROW_OK;
	}
	if (fb_len <= 0)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "invalid message metadata length %d at offset %lld",
							   fb_len, (long long) offset);
	meta_len = prefix_len + fb_len;
	if (block_meta_len >= 0)
	{
		if (meta_len > block_meta_len)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "message at offset %lld is longer (%lld bytes) than its block says (%lld)",
								   (long long) offset, (long long) meta_len, (long long) block_meta_len);
		meta_len = block_meta_len;
	}
	if (!range_inside(offset, meta_len, file->source.size))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "message at offset %lld (%lld bytes of metadata) extends past the end of the file",
							   (long long) offset, (long long) meta_len);
	m->metadata_length = meta_len;
	m->data = arrow_malloc(file->alloc, fb_len, err);
	if (m->data == NULL)
		return ARROW_ERR_NOMEM;
	if (read_bytes(file, offset + prefix_len, m->data, fb_len, err) != ARROW_OK ||
		fb_init(&m->fb, m->data, fb_len, "message", &m->msg, err) != ARROW_OK ||
		fb_get_int16(&m->msg, MESSAGE_VERSION, 0, &m->version, err) != ARROW_OK ||
		fb_get_union(&m->msg, MESSAGE_HEADER, &m->header_type, &m->header, err) != ARROW_OK ||
		fb_get_int64(&m->msg, MESSAGE_BODY_LENGTH, 0, &m->body_length, err) != ARROW_OK)
		goto fail;
	if (m->version != METADATA_V4 && m->version != METADATA_V5)
	{
		arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
						"unsupported metadata version V%d of the message at offset %lld",
						m->version + 1, (long long) offset);
		goto fail;
	}
	m->body_offset = offset + meta_len;
	if (!range_inside(m->body_offset, m->body_length, file->source.size))
	{
		arrow_set_error(err, ARROW_ERR_INVALID,
						"body of the message at offset %lld (%lld bytes at %lld) extends past the end of the file",
						(long long) offset, (long long) m->body_length, (long long) m->body_offset);
		goto fail;
	}
	return ARROW_OK;

fail:
	message_free(file, m);
	return err->code;
}

/*
 * ArrowFile.metadata_version is the lowest version of the footer and the
 * messages: pyarrow, asked for V4, writes V4 messages under a V5 footer.
 */
static void
note_version(ArrowFile *file, const Message *m)
{
	if (file->metadata_version == 0 || m->version + 1 < file->metadata_version)
		file->metadata_version = m->version + 1;
}

/* Frees what an ArrowBatchInfo owns and zeroes it */
static void
batch_info_free(const ArrowAllocator *alloc, ArrowBatchInfo *info)
{
	arrow_free(alloc, info->nodes);
	arrow_free(alloc, info->buffers);
	arrow_free(alloc, info->variadic_counts);
	arrow_free(alloc, info->column_first_buffer);
	arrow_free(alloc, info->column_first_variadic);
	arrow_metadata_free(alloc, &info->metadata);
	memset(info, 0, sizeof(ArrowBatchInfo));
}

/*
 * Parses the RecordBatch table rb of message m (a record batch of 'fields',
 * or the data of a dictionary batch with its one value field) into *info,
 * checking the counts against the fields and every extent against the body.
 * 'what' names the batch in error messages.  Frees *info on failure.
 */
static int
parse_batch(const ArrowFile *file, const Message *m, const FbTable *rb,
			const ArrowField *fields, int32_t n_fields, ArrowBatchInfo *info,
			const char *what, ArrowError *err)
{
	FbVector	nodes;
	FbVector	buffers;
	FbVector	variadic;
	FbTable		ct;
	bool		has_compression;
	int32_t		want_nodes = 0;
	int32_t		want_buffers = 0;
	int32_t		node = 0;

	memset(info, 0, sizeof(ArrowBatchInfo));
	info->message_offset = m->offset;
	info->body_offset = m->body_offset;
	info->body_length = m->body_length;
	info->codec = ARROW_CODEC_NONE;
	for (int32_t i = 0; i < n_fields; i++)
		count_layout(&fields[i], &want_nodes, &want_buffers);

	if (fb_get_int64(rb, RECORDBATCH_LENGTH, 0, &info->n_rows, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_NODES, NODE_SIZE, &nodes, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_BUFFERS, BUFFER_SIZE, &buffers, err) != ARROW_OK ||
		fb_get_table(rb, RECORDBATCH_COMPRESSION, &ct, &has_compression, err) != ARROW_OK ||
		fb_get_vector(rb, RECORDBATCH_VARIADIC, 8, &variadic, err) != ARROW_OK ||
		parse_variadic(file, &variadic, fields, n_fields, info, &want_buffers, what, err) != ARROW_OK)
		goto fail;
	if (info->n_rows < 0)
	{
		arrow_set_error(err, ARROW_ERR_INVALID, "%s has a negative length", what);
		goto fail;
	}
	if (nodes.length != (uint32_t) want_nodes || buffers.length != (uint32_t) want_buffers)
	{
		arrow_set_error(err, ARROW_ERR_INVALID,
						"%s has %u nodes and %u buffers, the schema needs %d and %d",
						what, nodes.length, buffers.length, want_nodes, want_buffers);
		goto fail;
	}
	if (has_compression)
	{
		int8_t		codec;
		int8_t		method;

		if (fb_get_int8(&ct, COMPRESSION_CODEC, 0, &codec, err) != ARROW_OK ||
			fb_get_int8(&ct, COMPRESSION_METHOD, 0, &method, err) != ARROW_OK)
			goto fail;
		if (codec != ARROW_CODEC_LZ4_FRAME && codec != ARROW_CODEC_ZSTD)
		{
			arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "%s: unsupported compression codec %d", what, codec);
			goto fail;
		}
		if (method != 0)
		{
			arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "%s: unsupported body compression method %d",
							what, method);
			goto fail;
		}
		info->codec = (ArrowCodec) codec;
	}

	if (want_nodes > 0)
	{
		info->nodes = arrow_calloc(file->alloc, want_nodes, sizeof(ArrowNode), err);
		if (info->nodes == NULL)
			goto fail;
	}
	info->n_nodes = want_nodes;
	for (int32_t i = 0; i < want_nodes; i++)
	{
		const uint8_t *p = fb_vector_elem(&nodes, (uint32_t) i);
		ArrowNode  *n = &info->nodes[i];

		n->length = (int64_t) fb_le64(p);
		n->null_count = (int64_t) fb_le64(p + 8);
		if (n->length < 0 || n->null_count < 0 || n->null_count > n->length)
		{
			arrow_set_error(err, ARROW_ERR_INVALID, "%s: node %d has length %lld and null count %lld",
							what, i, (long long) n->length, (long long) n->null_count);
			goto fail;
		}
	}
	if (want_buffers > 0)
	{
		info->buffers = arrow_calloc(file->alloc, want_buffers, sizeof(ArrowBufferRef), err);
		if (info->buffers == NULL)
			goto fail;
	}
	info->n_buffers = want_buffers;
	for (int32_t i = 0; i < want_buffers; i++)
	{
		const uint8_t *p = fb_vector_elem(&buffers, (uint32_t) i);
		ArrowBufferRef *b = &info->buffers[i];

		b->offset = (int64_t) fb_le64(p);
		b->length = (int64_t) fb_le64(p + 8);
		if (!range_inside(b->offset, b->length, info->body_length))
		{
			arrow_set_error(err, ARROW_ERR_INVALID,
							"%s: buffer %d (%lld bytes at %lld) is outside the body (%lld bytes)",
							what, i, (long long) b->length, (long long) b->offset,
							(long long) info->body_length);
			goto fail;
		}
	}
	/* every top-level array has the batch's length */
	for (int32_t i = 0; i < n_fields; i++)
	{
		int32_t		n = 0;
		int32_t		b = 0;

		if (info->nodes[node].length != info->n_rows)
		{
			arrow_set_error(err, ARROW_ERR_INVALID, "%s: field \"%s\" has %lld values, the batch %lld rows",
							what, fields[i].name, (long long) info->nodes[node].length,
							(long long) info->n_rows);
			goto fail;
		}
		count_layout(&fields[i], &n, &b);
		node += n;
	}
	if (parse_metadata(file->alloc, &m->msg, MESSAGE_METADATA, &info->metadata, err) != ARROW_OK)
		goto fail;
	return ARROW_OK;

fail:
	batch_info_free(file->alloc, info);
	return err->code;
}

/* Appends a record batch (info moves into the file) */
static int
add_batch(ArrowFile *file, ArrowBatchInfo *info, ArrowError *err)
{
	ReaderPriv *priv = file->priv;

	if (file->n_batches == priv->batches_cap)
	{
		int32_t		cap = priv->batches_cap ? priv->batches_cap * 2 : 16;
		ArrowBatchInfo *b;
		int32_t    *v;

		b = arrow_realloc(file->alloc, file->batches, sizeof(ArrowBatchInfo) * cap, err);
		if (b == NULL)
			return ARROW_ERR_NOMEM;
		file->batches = b;
		v = arrow_realloc(file->alloc, priv->visible_dicts, sizeof(int32_t) * cap, err);
		if (v == NULL)
			return ARROW_ERR_NOMEM;
		priv->visible_dicts = v;
		priv->batches_cap = cap;
	}
	if (arrow_add_overflow(file->total_rows, info->n_rows, &file->total_rows))
		return arrow_set_error(err, ARROW_ERR_INVALID, "total row count overflows");
	for (int32_t c = 0; info->column_first_buffer != NULL && c < file->schema.n_fields; c++)
	{
		/* view columns: n_buffers is the most that any batch has */
		int32_t		n = info->column_first_buffer[c + 1] - info->column_first_buffer[c];

		if (n > file->columns[c].n_buffers)
			file->columns[c].n_buffers = n;
	}
	file->batches[file->n_batches] = *info;
	priv->visible_dicts[file->n_batches] = file->n_dictionaries;
	file->n_batches++;
	memset(info, 0, sizeof(ArrowBatchInfo));
	return ARROW_OK;
}

/*
 * Parses a DictionaryBatch header and appends it to file->dictionaries.
 * in_file: the file format, where replacing a dictionary is not allowed.
 */
static int
add_dictionary(ArrowFile *file, const Message *m, bool in_file, ArrowError *err)
{
	ReaderPriv *priv = file->priv;
	ArrowDictionaryBatchInfo d;
	DictValueField *dv;
	FbTable		data;
	bool		has_data;
	char		what[64];

	memset(&d, 0, sizeof(d));
	if (fb_get_int64(&m->header, DICTBATCH_ID, 0, &d.id, err) != ARROW_OK ||
		fb_get_bool(&m->header, DICTBATCH_IS_DELTA, false, &d.is_delta, err) != ARROW_OK ||
		fb_get_table(&m->header, DICTBATCH_DATA, &data, &has_data, err) != ARROW_OK)
		return ARROW_ERR_INVALID;
	snprintf(what, sizeof(what), "dictionary batch %d", file->n_dictionaries);
	if (!has_data)
		return arrow_set_error(err, ARROW_ERR_INVALID, "%s has no data", what);
	dv = (DictValueField *) find_dict_field(file, d.id);
	if (dv == NULL)
		return arrow_set_error(err, ARROW_ERR_INVALID, "%s is for dictionary id %lld, which no field uses",
							   what, (long long) d.id);
	if (in_file && !d.is_delta && dv->seen)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%s replaces dictionary %lld, which the file format does not allow",
							   what, (long long) d.id);
	if (parse_batch(file, m, &data, &dv->field, 1, &d.batch, what, err) != ARROW_OK)
		return err->code;
	if (file->n_dictionaries == priv->dicts_cap)
	{
		int32_t		cap = priv->dicts_cap ? priv->dicts_cap * 2 : 8;
		ArrowDictionaryBatchInfo *arr;

		arr = arrow_realloc(file->alloc, file->dictionaries,
							sizeof(ArrowDictionaryBatchInfo) * cap, err);
		if (arr == NULL)
		{
			batch_info_free(file->alloc, &d.batch);
			return ARROW_ERR_NOMEM;
		}
		file->dictionaries = arr;
		priv->dicts_cap = cap;
	}
	file->dictionaries[file->n_dictionaries++] = d;
	dv->seen = true;
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * File and stream formats
 * ------------------------------------------------------------------------
 */

/* Reads the message of a footer block and adds it as a batch or dictionary */
static int
read_block(ArrowFile *file, const uint8_t *block, bool dictionary, int32_t index,
		   ArrowError *err)
{
	int64_t		offset = (int64_t) fb_le64(block);
	int32_t		meta_len = (int32_t) fb_le32(block + 8);
	int64_t		body_len = (int64_t) fb_le64(block + 16);
	const char *kind = dictionary ? "dictionary" : "record batch";
	Message		m;
	bool		eos;
	int			rc;

	if (meta_len <= 0 || body_len < 0 || offset < FILE_HEADER_LEN ||
		!range_inside(offset, (int64_t) meta_len, file->source.size) ||
		!range_inside(offset + meta_len, body_len, file->source.size))
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%s block %d (offset %lld, metadata %d, body %lld bytes) is outside the file",
							   kind, index, (long long) offset, meta_len, (long long) body_len);
	if (read_message(file, offset, meta_len, &m, &eos, err) != ARROW_OK)
		return err->code;
	note_version(file, &m);
	if (m.body_length != body_len)
		rc = arrow_set_error(err, ARROW_ERR_INVALID,
							 "%s block %d says the body has %lld bytes, its message %lld",
							 kind, index, (long long) body_len, (long long) m.body_length);
	else if (m.header_type != (dictionary ? HEADER_DICTIONARY_BATCH : HEADER_RECORD_BATCH))
		rc = arrow_set_error(err, ARROW_ERR_INVALID,
							 "%s block %d points to a message of type %d",
							 kind, index, m.header_type);
	else if (dictionary)
		rc = add_dictionary(file, &m, true, err);
	else
	{
		ArrowBatchInfo info;
		char		what[64];

		snprintf(what, sizeof(what), "record batch %d", index);
		rc = parse_batch(file, &m, &m.header, file->schema.fields, file->schema.n_fields,
						 &info, what, err);
		if (rc == ARROW_OK && (rc = add_batch(file, &info, err)) != ARROW_OK)
			batch_info_free(file->alloc, &info);
	}
	message_free(file, &m);
	return rc;
}

/*
 * File format: checks the trailing magic, reads the footer (version, schema,
 * blocks) and the message of every dictionary and record batch block.
 */
static int
read_file_format(ArrowFile *file, ArrowError *err)
{
	int64_t		size = file->source.size;
	uint8_t		trailer[FILE_TRAILER_LEN];
	int32_t		footer_len;
	int64_t		footer_offset;
	uint8_t    *footer = NULL;
	FbReader	fb;
	FbTable		ft;
	FbTable		st;
	bool		has_schema;
	int16_t		version;
	FbVector	dicts;
	FbVector	batches;
	int			rc;

	if (size < FILE_HEADER_LEN + FILE_TRAILER_LEN)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "file of %lld bytes is too short for the arrow file format", (long long) size);
	if (read_bytes(file, size - FILE_TRAILER_LEN, trailer, FILE_TRAILER_LEN, err) != ARROW_OK)
		return err->code;
	if (memcmp(trailer + 4, MAGIC, MAGIC_LEN) != 0)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "file starts with the arrow magic but does not end with it (truncated?)");
	footer_len = (int32_t) fb_le32(trailer);
	footer_offset = size - FILE_TRAILER_LEN - (int64_t) footer_len;
	if (footer_len <= 0 || footer_offset < FILE_HEADER_LEN)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "footer length %d does not fit in the file (%lld bytes)",
							   footer_len, (long long) size);
	footer = arrow_malloc(file->alloc, footer_len, err);
	if (footer == NULL)
		return ARROW_ERR_NOMEM;
	if (read_bytes(file, footer_offset, footer, footer_len, err) != ARROW_OK ||
		fb_init(&fb, footer, footer_len, "footer", &ft, err) != ARROW_OK ||
		fb_get_int16(&ft, FOOTER_VERSION, 0, &version, err) != ARROW_OK ||
		fb_get_table(&ft, FOOTER_SCHEMA, &st, &has_schema, err) != ARROW_OK ||
		fb_get_vector(&ft, FOOTER_DICTIONARIES, BLOCK_SIZE, &dicts, err) != ARROW_OK ||
		fb_get_vector(&ft, FOOTER_RECORD_BATCHES, BLOCK_SIZE, &batches, err) != ARROW_OK)
		goto fail;
	if (version != METADATA_V4 && version != METADATA_V5)
	{
		arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "unsupported metadata version V%d in the footer",
						version + 1);
		goto fail;
	}
	file->metadata_version = version + 1;
	if (!has_schema)
	{
		arrow_set_error(err, ARROW_ERR_INVALID, "footer has no schema");
		goto fail;
	}
	if (parse_schema(file, &st, err) != ARROW_OK || prepare_schema(file, err) != ARROW_OK)
		goto fail;
	for (uint32_t i = 0; i < dicts.length; i++)
	{
		if (read_block(file, fb_vector_elem(&dicts, i), true, (int32_t) i, err) != ARROW_OK)
			goto fail;
	}
	for (uint32_t i = 0; i < batches.length; i++)
	{
		if (read_block(file, fb_vector_elem(&batches, i), false, (int32_t) i, err) != ARROW_OK)
			goto fail;
	}
	/* in a file every record batch sees every dictionary batch */
	for (int32_t i = 0; i < file->n_batches; i++)
		((ReaderPriv *) file->priv)->visible_dicts[i] = file->n_dictionaries;
	arrow_free(file->alloc, footer);
	return ARROW_OK;

fail:
	rc = err->code;
	arrow_free(file->alloc, footer);
	return rc;
}

/*
 * Stream format: the Schema message, then dictionary and record batches up
 * to an end-of-stream marker or the end of the file.
 */
static int
read_stream_format(ArrowFile *file, ArrowError *err)
{
	int64_t		offset = 0;
	bool		have_schema = false;

	if (file->source.size == 0)
		return arrow_set_error(err, ARROW_ERR_INVALID, "empty file");
	while (offset < file->source.size)
	{
		Message		m;
		bool		eos;
		int			rc = ARROW_OK;

		if (read_message(file, offset, -1, &m, &eos, err) != ARROW_OK)
			return err->code;
		if (eos)
			break;
		note_version(file, &m);
		if (!have_schema)
		{
			if (m.header_type != HEADER_SCHEMA)
				rc = arrow_set_error(err, ARROW_ERR_INVALID,
									 "stream starts with a message of type %d, not a schema",
									 m.header_type);
			else
			{
				rc = parse_schema(file, &m.header, err);
				if (rc == ARROW_OK)
					rc = prepare_schema(file, err);
				have_schema = true;
			}
		}
		else if (m.header_type == HEADER_DICTIONARY_BATCH)
			rc = add_dictionary(file, &m, false, err);
		else if (m.header_type == HEADER_RECORD_BATCH)
		{
			ArrowBatchInfo info;
			char		what[64];

			snprintf(what, sizeof(what), "record batch %d", file->n_batches);
			rc = parse_batch(file, &m, &m.header, file->schema.fields, file->schema.n_fields,
							 &info, what, err);
			if (rc == ARROW_OK && (rc = add_batch(file, &info, err)) != ARROW_OK)
				batch_info_free(file->alloc, &info);
		}
		else if (m.header_type == HEADER_SCHEMA)
			rc = arrow_set_error(err, ARROW_ERR_INVALID,
								 "second schema message at offset %lld", (long long) offset);
		else
			rc = arrow_set_error(err, ARROW_ERR_UNSUPPORTED,
								 "unsupported message type %d at offset %lld",
								 m.header_type, (long long) offset);
		offset = m.body_offset + m.body_length;
		message_free(file, &m);
		if (rc != ARROW_OK)
			return rc;
	}
	if (!have_schema)
		return arrow_set_error(err, ARROW_ERR_INVALID, "stream has no schema message");
	return ARROW_OK;
}

/* Frees everything of a file, even a partly opened one; closes its fd */
void
arrow_file_close(ArrowFile *file)
{
	const ArrowAllocator *alloc;
	ReaderPriv *priv;

	if (file == NULL)
		return;
	alloc = file->alloc;
	priv = file->priv;
	for (int32_t i = 0; i < file->n_batches; i++)
		batch_info_free(alloc, &file->batches[i]);
	for (int32_t i = 0; i < file->n_dictionaries; i++)
		batch_info_free(alloc, &file->dictionaries[i].batch);
	arrow_free(alloc, file->batches);
	arrow_free(alloc, file->dictionaries);
	arrow_free(alloc, file->columns);
	arrow_schema_free(alloc, &file->schema);
	if (priv != NULL)
	{
		arrow_free(alloc, priv->visible_dicts);
		arrow_free(alloc, priv->dict_fields);
		arrow_free(alloc, priv);
	}
	if (file->fd >= 0)
		close(file->fd);
	arrow_free(alloc, file);
}

/*
 * Common part of the two open functions.  With fd >= 0 the source is that
 * file descriptor (of 'size' bytes), which the ArrowFile then owns; else
 * *src.
 */
static int
file_open(const ArrowSource *src, int fd, int64_t size,
		  const ArrowAllocator *alloc, ArrowFile **out, ArrowError *err)
{
	ArrowFile  *file;
	uint8_t		head[FILE_HEADER_LEN];
	int			rc;

	*out = NULL;
	alloc = arrow_alloc_or_default(alloc);
	file = arrow_calloc(alloc, 1, sizeof(ArrowFile), err);
	if (file == NULL)
	{
		if (fd >= 0)
			close(fd);
		return ARROW_ERR_NOMEM;
	}
	file->alloc = alloc;
	file->fd = fd;
	if (fd >= 0)
	{
		file->source.read_at = fd_read_at;
		file->source.size = size;
		file->source.ctx = &file->fd;
	}
	else
		file->source = *src;
	file->priv = arrow_calloc(alloc, 1, sizeof(ReaderPriv), err);
	if (file->priv == NULL)
	{
		arrow_file_close(file);
		return ARROW_ERR_NOMEM;
	}
	if (file->source.size >= FILE_HEADER_LEN &&
		read_bytes(file, 0, head, FILE_HEADER_LEN, err) != ARROW_OK)
		rc = err->code;
	else if (file->source.size >= FILE_HEADER_LEN && memcmp(head, MAGIC, MAGIC_LEN) == 0)
		rc = read_file_format(file, err);
	else
	{
		file->is_stream = true;
		rc = read_stream_format(file, err);
	}
	if (rc != ARROW_OK)
	{
		arrow_file_close(file);
		return rc;
	}
	*out = file;
	return ARROW_OK;
}

/* See arrow.h; the source is copied into the ArrowFile */
int
arrow_file_open_source(const ArrowSource *src, const ArrowAllocator *alloc,
					   ArrowFile **out, ArrowError *err)
{
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (out == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no output pointer");
	*out = NULL;
	if (src == NULL || src->read_at == NULL || src->size < 0)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid source");
	return file_open(src, -1, 0, alloc, out, err);
}

/* See arrow.h; the file descriptor is read with pread and closed on close */
int
arrow_file_open(const char *path, const ArrowAllocator *alloc,
				ArrowFile **out, ArrowError *err)
{
	struct stat st;
	int			fd;
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (out == NULL || path == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no path or output pointer");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return arrow_set_error(err, ARROW_ERR_IO, "could not open file: %s", strerror(errno));
	if (fstat(fd, &st) != 0)
	{
		int			e = errno;

		close(fd);
		errno = e;
		return arrow_set_error(err, ARROW_ERR_IO, "could not stat file: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode))
	{
		close(fd);
		return arrow_set_error(err, ARROW_ERR_INVALID, "not a regular file");
	}
	return file_open(NULL, fd, (int64_t) st.st_size, alloc, out, err);
}

/*
 * See arrow.h.  With room for fewer extents than the column has buffers
 * (file->columns[column].n_buffers) it fails with ARROW_ERR_ARGUMENT rather
 * than return a partial list.
 */
int
arrow_column_extents(const ArrowFile *file, int32_t batch, int32_t column,
					 ArrowExtent *extents, int max_extents, ArrowError *err)
{
	const ArrowColumnLayout *c;
	const ArrowBatchInfo *info;
	int32_t		first;
	int32_t		n;

	if (file == NULL || batch < 0 || batch >= file->n_batches ||
		column < 0 || column >= file->schema.n_fields)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "no record batch %d or column %d", batch, column);
		return -1;
	}
	c = &file->columns[column];
	info = &file->batches[batch];
	first = c->first_buffer;
	n = c->n_buffers;
	if (info->column_first_buffer != NULL)
	{
		/* view fields: this batch's own counts */
		first = info->column_first_buffer[column];
		n = info->column_first_buffer[column + 1] - first;
	}
	if (n > max_extents)
	{
		arrow_set_error(err, ARROW_ERR_ARGUMENT, "column %d has %d buffers, room for %d extents",
						column, n, max_extents);
		return -1;
	}
	for (int32_t i = 0; i < n; i++)
	{
		const ArrowBufferRef *b = &info->buffers[first + i];

		extents[i].offset = info->body_offset + b->offset;
		extents[i].length = b->length;
	}
	return n;
}

/* ------------------------------------------------------------------------
 * Batch loading
 * ------------------------------------------------------------------------
 */

/* All memory of one ArrowBatch: a list of allocations freed together */
typedef struct Arena
{
	const ArrowAllocator *alloc;
	void	  **ptrs;
	int32_t		n;
	int32_t		cap;
} Arena;

/* A decoded dictionary of one batch */
typedef struct LoadedDict
{
	int64_t		id;
	const ArrowArray *values;
	struct LoadedDict *next;
} LoadedDict;

/* ArrowBatch.priv */
typedef struct BatchPriv
{
	Arena		arena;
	LoadedDict *dicts;
} BatchPriv;

/* State while loading the arrays of one batch message */
typedef struct Loader
{
	const ArrowFile *file;
	const ArrowBatchInfo *info;
	int32_t		node;			/* next node of info */
	int32_t		buffer;			/* next buffer of info */
	int32_t		variadic;		/* next variadic count of info */
	BatchPriv  *bp;
	ArrowCodecCtx *codec;
	int32_t		visible;		/* file->dictionaries[0..visible) apply */
	int64_t		concat_limit;	/* most values concat_slices may make */
	char		what[64];		/* "record batch 3" */
	ArrowError *err;
} Loader;

/* What zero-length buffers point to: readable as offsets {0} of any width */
static const int64_t zero_block[2];

/* Registers p (allocated with arena->alloc) with the arena; frees it on failure */
static int
arena_add(Arena *arena, void *p, ArrowError *err)
{
	if (arena->n == arena->cap)
	{
		int32_t		cap = arena->cap ? arena->cap * 2 : 32;
		void	  **ptrs = arrow_realloc(arena->alloc, arena->ptrs, sizeof(void *) * cap, err);

		if (ptrs == NULL)
		{
			arrow_free(arena->alloc, p);
			return ARROW_ERR_NOMEM;
		}
		arena->ptrs = ptrs;
		arena->cap = cap;
	}
	arena->ptrs[arena->n++] = p;
	return ARROW_OK;
}

/* Zeroed memory owned by the arena */
static void *
arena_calloc(Arena *arena, size_t n, size_t size, ArrowError *err)
{
	void	   *p = arrow_calloc(arena->alloc, n, size, err);

	if (p == NULL || arena_add(arena, p, err) != ARROW_OK)
		return NULL;
	return p;
}

/* Frees every allocation of the arena */
static void
arena_free(Arena *arena)
{
	for (int32_t i = 0; i < arena->n; i++)
		arrow_free(arena->alloc, arena->ptrs[i]);
	arrow_free(arena->alloc, arena->ptrs);
	arena->ptrs = NULL;
	arena->n = arena->cap = 0;
}

static int
load_error(Loader *L, const ArrowField *f, const char *fmt,...)
__attribute__((format(printf, 3, 4)));

/* Sets an ARROW_ERR_INVALID naming the batch and the field */
static int
load_error(Loader *L, const ArrowField *f, const char *fmt,...)
{
	char		detail[384];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return arrow_set_error(L->err, ARROW_ERR_INVALID, "%s, field \"%s\": %s",
						   L->what, f->name, detail);
}

/* Sets an ARROW_ERR_LIMIT for a buffer of 'bytes' above the caller's cap */
static int
limit_error(Loader *L, const ArrowField *f, int64_t bytes)
{
	return arrow_set_error(L->err, ARROW_ERR_LIMIT,
						   "%s, field \"%s\": buffer of %lld bytes exceeds the limit of %lld bytes",
						   L->what, f->name, (long long) bytes,
						   (long long) L->file->max_buffer_size);
}

/* Whether a buffer of 'bytes' is above the caller's cap (0: none) */
static bool
above_limit(const Loader *L, int64_t bytes)
{
	return L->file->max_buffer_size > 0 && bytes > L->file->max_buffer_size;
}

/*
 * Reads the next buffer of the batch (decompressing it) into arena memory.
 * 'max' is the most bytes the buffer can need for its node's length (-1:
 * unknown, for variable-width data): a compressed buffer declaring more than
 * that, rounded up to the 64-byte padding of writers, is corrupt.  No buffer,
 * stored or decompressed, may exceed file->max_buffer_size.  Both are
 * checked before the output of a decompression is allocated (a bomb costs
 * no more than its stored bytes).  A zero-length buffer gives zero_block.
 */
static int
read_buffer(Loader *L, const ArrowField *f, int64_t max, const uint8_t **data,
			int64_t *len)
{
	const ArrowBufferRef *ref = &L->info->buffers[L->buffer++];
	int64_t		offset = L->info->body_offset + ref->offset;
	Arena	   *arena = &L->bp->arena;
	uint8_t    *raw;
	int64_t		declared;
	uint8_t    *out;

	*data = (const uint8_t *) zero_block;
	*len = 0;
	if (ref->length == 0)
		return ARROW_OK;
	if (above_limit(L, ref->length))
		return limit_error(L, f, ref->length);
	if ((uint64_t) ref->length > SIZE_MAX / 2)
		return load_error(L, f, "buffer of %lld bytes is too large", (long long) ref->length);
	raw = arrow_malloc(arena->alloc, (size_t) ref->length, L->err);
	if (raw == NULL)
		return ARROW_ERR_NOMEM;
	if (read_bytes(L->file, offset, raw, (size_t) ref->length, L->err) != ARROW_OK)
	{
		arrow_free(arena->alloc, raw);
		return L->err->code;
	}
	if (L->info->codec == ARROW_CODEC_NONE)
	{
		*data = raw;
		*len = ref->length;
		return arena_add(arena, raw, L->err);
	}
	/* compressed: int64 uncompressed length (-1: stored as is), then data */
	if (ref->length < 8)
	{
		arrow_free(arena->alloc, raw);
		return load_error(L, f, "compressed buffer of %lld bytes has no length prefix",
						  (long long) ref->length);
	}
	declared = (int64_t) fb_le64(raw);
	if (declared == -1)
	{
		*data = raw + 8;
		*len = ref->length - 8;
		return arena_add(arena, raw, L->err);
	}
	if (declared < -1)
	{
		arrow_free(arena->alloc, raw);
		return load_error(L, f, "invalid uncompressed buffer length %lld", (long long) declared);
	}
	if (declared == 0)
	{
		arrow_free(arena->alloc, raw);
		return ARROW_OK;
	}
	/* a decompression bomb is refused before its output is allocated */
	if (max >= 0 && max <= INT64_MAX - ARROW_ALIGNMENT && declared > arrow_align64(max))
	{
		arrow_free(arena->alloc, raw);
		return load_error(L, f, "compressed buffer declares %lld bytes, %lld values need at most %lld",
						  (long long) declared, (long long) L->info->nodes[L->node - 1].length,
						  (long long) max);
	}
	if (above_limit(L, declared))
	{
		arrow_free(arena->alloc, raw);
		return limit_error(L, f, declared);
	}
	if (arrow_decompress(L->codec, L->info->codec, raw + 8, (size_t) (ref->length - 8),
						 declared, &out, L->err) != ARROW_OK)
	{
		int			rc = L->err->code;

		arrow_free(arena->alloc, raw);
		if (rc == ARROW_ERR_INVALID)
			return load_error(L, f, "%s", L->err->message);
		return rc;
	}
	arrow_free(arena->alloc, raw);
	*data = out;
	*len = declared;
	return arena_add(arena, out, L->err);
}

/* Bytes for n values of 'width' bytes, or -1 on overflow */
static int64_t
bytes_for(int64_t n, int64_t width)
{
	int64_t		r;

	return arrow_mul_overflow(n, width, &r) ? -1 : r;
}

/* Bytes of a bitmap of n bits */
static int64_t
bitmap_bytes(int64_t n)
{
	return n / 8 + (n % 8 != 0);
}

/* Bit i of a bitmap (least significant bit first) */
static inline bool
get_bit(const uint8_t *bits, int64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

static inline void
set_bit(uint8_t *bits, int64_t i, bool v)
{
	if (v)
		bits[i >> 3] |= (uint8_t) (1u << (i & 7));
	else
		bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

/* The validity buffer: required (ceil(length/8) bytes) when there are nulls */
static int
load_validity(Loader *L, const ArrowField *f, ArrowArray *a)
{
	const uint8_t *p;
	int64_t		len;

	if (read_buffer(L, f, bitmap_bytes(a->length), &p, &len) != ARROW_OK)
		return L->err->code;
	if (a->null_count == 0)
		return ARROW_OK;		/* a->validity stays NULL: no value is null */
	if (len < bitmap_bytes(a->length))
		return load_error(L, f, "validity bitmap of %lld bytes is too short for %lld values",
						  (long long) len, (long long) a->length);
	a->validity = p;
	return ARROW_OK;
}

/*
 * The values buffer of a: at least 'need' bytes (-1: the size overflowed)
 * into a->values.
 */
static int
load_values(Loader *L, const ArrowField *f, ArrowArray *a, int64_t need,
			const char *name)
{
	const uint8_t *p;
	int64_t		len;

	if (need < 0)
		return load_error(L, f, "%s buffer for %lld values would overflow",
						  name, (long long) a->length);
	if (read_buffer(L, f, need, &p, &len) != ARROW_OK)
		return L->err->code;
	if (len < need)
		return load_error(L, f, "%s buffer of %lld bytes is too short for %lld values",
						  name, (long long) len, (long long) a->length);
	a->values = p;
	return ARROW_OK;
}

/* Offset i of an int32 (or, large, int64) offsets buffer */
static inline int64_t
offset_at(const void *offsets, bool large, int64_t i)
{
	if (large)
	{
		int64_t		v;

		memcpy(&v, (const uint8_t *) offsets + i * 8, 8);
		return v;
	}
	else
	{
		int32_t		v;

		memcpy(&v, (const uint8_t *) offsets + i * 4, 4);
		return v;
	}
}

/*
 * The offsets buffer of a - length + 1 entries, starting at >= 0, never
 * decreasing - into a->offsets.  The caller checks the last one against the
 * data or child length.
 */
static int
load_offsets(Loader *L, const ArrowField *f, ArrowArray *a, bool large)
{
	const uint8_t *p;
	int64_t		len;
	int64_t		need;
	int64_t		prev;

	need = (a->length == INT64_MAX) ? -1 : bytes_for(a->length + 1, large ? 8 : 4);
	if (need < 0)
		return load_error(L, f, "offsets buffer for %lld values would overflow",
						  (long long) a->length);
	if (read_buffer(L, f, need, &p, &len) != ARROW_OK)
		return L->err->code;
	if (a->length == 0 && len == 0)
	{
		a->offsets = zero_block;	/* {0}: writers may omit the buffer */
		return ARROW_OK;
	}
	if (len < need)
		return load_error(L, f, "offsets buffer of %lld bytes is too short for %lld values",
						  (long long) len, (long long) a->length);
	prev = offset_at(p, large, 0);
	if (prev < 0)
		return load_error(L, f, "first offset %lld is negative", (long long) prev);
	for (int64_t i = 1; i <= a->length; i++)
	{
		int64_t		o = offset_at(p, large, i);

		if (o < prev)
			return load_error(L, f, "offset %lld (%lld) is less than the one before (%lld)",
							  (long long) i, (long long) o, (long long) prev);
		prev = o;
	}
	a->offsets = p;
	return ARROW_OK;
}

static inline int64_t
last_offset(const ArrowArray *a, bool large)
{
	return offset_at(a->offsets, large, a->length);
}

static int	load_array(Loader *L, const ArrowField *f, ArrowArray *a);

/* Loads the arrays of the children of f into a->children */
static int
load_children(Loader *L, const ArrowField *f, ArrowArray *a)
{
	if (f->n_children == 0)
		return ARROW_OK;
	a->children = arena_calloc(&L->bp->arena, f->n_children, sizeof(ArrowArray), L->err);
	if (a->children == NULL)
		return ARROW_ERR_NOMEM;
	a->n_children = f->n_children;
	for (int32_t i = 0; i < f->n_children; i++)
	{
		if (load_array(L, &f->children[i], &a->children[i]) != ARROW_OK)
			return L->err->code;
	}
	return ARROW_OK;
}

static int	get_dictionary(Loader *L, const ArrowField *f, const ArrowArray **out);

/* Index i of an index array of type 'type', as int64 (uint64 > INT64_MAX: -1) */
static int64_t
index_at(const ArrowArray *a, ArrowTypeId type, int64_t i)
{
	switch (type)
	{
		case ARROW_TYPE_INT8:
			return ((const int8_t *) a->values)[i];
		case ARROW_TYPE_UINT8:
			return a->values[i];
		case ARROW_TYPE_INT16:
			{
				int16_t		v;

				memcpy(&v, a->values + i * 2, 2);
				return v;
			}
		case ARROW_TYPE_UINT16:
			{
				uint16_t	v;

				memcpy(&v, a->values + i * 2, 2);
				return v;
			}
		case ARROW_TYPE_INT32:
			{
				int32_t		v;

				memcpy(&v, a->values + i * 4, 4);
				return v;
			}
		case ARROW_TYPE_UINT32:
			{
				uint32_t	v;

				memcpy(&v, a->values + i * 4, 4);
				return v;
			}
		case ARROW_TYPE_INT64:
			{
				int64_t		v;

				memcpy(&v, a->values + i * 8, 8);
				return v;
			}
		default:
			{
				uint64_t	v;

				memcpy(&v, a->values + i * 8, 8);
				return v > INT64_MAX ? -1 : (int64_t) v;
			}
	}
}

/* A dictionary-encoded array: validity, indices, and its dictionary */
static int
load_dictionary_encoded(Loader *L, const ArrowField *f, ArrowArray *a)
{
	ArrowType	itype = {.id = f->dictionary.index_type};
	int			width = arrow_type_value_width(&itype);
	int64_t		dict_len;

	if (load_validity(L, f, a) != ARROW_OK ||
		load_values(L, f, a, bytes_for(a->length, width), "indices") != ARROW_OK ||
		get_dictionary(L, f, &a->dictionary) != ARROW_OK)
		return L->err->code;
	dict_len = a->dictionary->length;
	for (int64_t i = 0; i < a->length; i++)
	{
		int64_t		ix;

		if (a->validity != NULL && !get_bit(a->validity, i))
			continue;
		ix = index_at(a, itype.id, i);
		if (ix < 0 || ix >= dict_len)
			return load_error(L, f, "dictionary index %lld at row %lld is outside the dictionary (%lld values)",
							  (long long) ix, (long long) i, (long long) dict_len);
	}
	return ARROW_OK;
}

/* A buffer of at least 'need' bytes (-1: overflowed) into *out */
static int
load_sized(Loader *L, const ArrowField *f, int64_t need, const char *name,
		   int64_t length, const void **out)
{
	const uint8_t *p;
	int64_t		len;

	if (need < 0)
		return load_error(L, f, "%s buffer for %lld values would overflow", name, (long long) length);
	if (read_buffer(L, f, need, &p, &len) != ARROW_OK)
		return L->err->code;
	if (len < need)
		return load_error(L, f, "%s buffer of %lld bytes is too short for %lld values",
						  name, (long long) len, (long long) length);
	*out = p;
	return ARROW_OK;
}

/*
 * A UTF8_VIEW/BINARY_VIEW array: validity, the 16-byte views, then this
 * batch's count of data buffers (arrow_views_validate checks the views).
 */
static int
load_views(Loader *L, const ArrowField *f, ArrowArray *a)
{
	int64_t		count;
	const uint8_t **bufs;
	int64_t    *lens;
	char		why[256];

	if (load_validity(L, f, a) != ARROW_OK ||
		load_values(L, f, a, bytes_for(a->length, 16), "views") != ARROW_OK)
		return L->err->code;
	if (L->variadic >= L->info->n_variadic)
		return load_error(L, f, "no variadic buffer count for the field");
	count = L->info->variadic_counts[L->variadic++];
	bufs = arena_calloc(&L->bp->arena, count + 1, sizeof(uint8_t *), L->err);
	lens = arena_calloc(&L->bp->arena, count + 1, sizeof(int64_t), L->err);
	if (bufs == NULL || lens == NULL)
		return ARROW_ERR_NOMEM;
	for (int64_t i = 0; i < count; i++)
	{
		if (read_buffer(L, f, -1, &bufs[i], &lens[i]) != ARROW_OK)
			return L->err->code;
	}
	a->n_variadic = (int32_t) count;
	a->variadic = bufs;
	a->variadic_lengths = lens;
	if (!arrow_views_validate(a->values, a->length, a->validity, a->n_variadic,
							  bufs, lens, why, sizeof(why)))
		return load_error(L, f, "%s", why);
	return ARROW_OK;
}

/* A LIST_VIEW/LARGE_LIST_VIEW array: validity, offsets, sizes, the child */
static int
load_list_views(Loader *L, const ArrowField *f, ArrowArray *a, bool large)
{
	int64_t		need = bytes_for(a->length, large ? 8 : 4);
	char		why[256];

	if (load_validity(L, f, a) != ARROW_OK ||
		load_sized(L, f, need, "offsets", a->length, &a->offsets) != ARROW_OK ||
		load_sized(L, f, need, "sizes", a->length, &a->sizes) != ARROW_OK ||
		load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	if (!arrow_list_views_validate(a->offsets, a->sizes, large, a->length, a->validity,
								   a->children[0].length, why, sizeof(why)))
		return load_error(L, f, "%s", why);
	return ARROW_OK;
}

/* A RUN_END_ENCODED array: no buffers, children run_ends and values */
static int
load_run_end_encoded(Loader *L, const ArrowField *f, ArrowArray *a)
{
	char		why[256];

	if (a->null_count != 0)
		return load_error(L, f, "a run-end encoded array has a null count (%lld)",
						  (long long) a->null_count);
	if (load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	if (!arrow_run_ends_validate(a, why, sizeof(why)))
		return load_error(L, f, "%s", why);
	return ARROW_OK;
}

/*
 * Loads the next node of the batch as an array of field f (and its
 * children), checking everything a value accessor relies on:
 *	- validity: NULL when null_count is 0, else at least ceil(length/8) bytes
 *	- fixed-width values: length * width bytes (bits for BOOL)
 *	- offsets: length + 1 entries, first >= 0, non-decreasing, last within
 *	  the data (UTF8/BINARY) or the child (LIST)
 *	- children: FIXED_SIZE_LIST child >= length * list_size values, STRUCT
 *	  children >= length values
 *	- dictionary indices: non-null ones within the dictionary
 *	- views, list views and run ends: see arrow_views.c
 */
static int
load_array(Loader *L, const ArrowField *f, ArrowArray *a)
{
	const ArrowNode *node = &L->info->nodes[L->node++];
	const uint8_t *p;
	int64_t		len;
	bool		large = false;

	memset(a, 0, sizeof(ArrowArray));
	a->field = f;
	a->length = node->length;
	a->null_count = node->null_count;
	if (f->has_dictionary)
		return load_dictionary_encoded(L, f, a);

	switch (f->type.id)
	{
		case ARROW_TYPE_NULL:
			a->null_count = a->length;
			return ARROW_OK;
		case ARROW_TYPE_BOOL:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_values(L, f, a, bitmap_bytes(a->length), "values") != ARROW_OK)
				return L->err->code;
			return ARROW_OK;
		case ARROW_TYPE_LARGE_UTF8:
		case ARROW_TYPE_LARGE_BINARY:
			large = true;
			/* FALLTHROUGH */
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_BINARY:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_offsets(L, f, a, large) != ARROW_OK ||
				read_buffer(L, f, -1, &p, &len) != ARROW_OK)
				return L->err->code;
			if (last_offset(a, large) > len)
				return load_error(L, f, "last offset %lld is past the data (%lld bytes)",
								  (long long) last_offset(a, large), (long long) len);
			a->data = p;
			a->data_length = len;
			return ARROW_OK;
		case ARROW_TYPE_UTF8_VIEW:
		case ARROW_TYPE_BINARY_VIEW:
			return load_views(L, f, a);
		case ARROW_TYPE_LIST_VIEW:
		case ARROW_TYPE_LARGE_LIST_VIEW:
			return load_list_views(L, f, a, f->type.id == ARROW_TYPE_LARGE_LIST_VIEW);
		case ARROW_TYPE_RUN_END_ENCODED:
			return load_run_end_encoded(L, f, a);
		case ARROW_TYPE_LARGE_LIST:
			large = true;
			/* FALLTHROUGH */
		case ARROW_TYPE_LIST:
		case ARROW_TYPE_MAP:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_offsets(L, f, a, large) != ARROW_OK ||
				load_children(L, f, a) != ARROW_OK)
				return L->err->code;
			if (last_offset(a, large) > a->children[0].length)
				return load_error(L, f, "last offset %lld is past the child (%lld values)",
								  (long long) last_offset(a, large), (long long) a->children[0].length);
			return ARROW_OK;
		case ARROW_TYPE_FIXED_SIZE_LIST:
			{
				int64_t		need = bytes_for(a->length, f->type.list_size);

				if (load_validity(L, f, a) != ARROW_OK ||
					load_children(L, f, a) != ARROW_OK)
					return L->err->code;
				if (need < 0 || a->children[0].length < need)
					return load_error(L, f, "child has %lld values, %lld lists of %d need more",
									  (long long) a->children[0].length, (long long) a->length,
									  f->type.list_size);
				return ARROW_OK;
			}
		case ARROW_TYPE_STRUCT:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_children(L, f, a) != ARROW_OK)
				return L->err->code;
			for (int32_t i = 0; i < a->n_children; i++)
			{
				if (a->children[i].length < a->length)
					return load_error(L, f, "child \"%s\" has %lld values, the struct %lld",
									  f->children[i].name, (long long) a->children[i].length,
									  (long long) a->length);
			}
			return ARROW_OK;
		default:
			/* fixed width, FIXED_SIZE_BINARY included */
			if (load_validity(L, f, a) != ARROW_OK ||
				load_values(L, f, a, bytes_for(a->length, arrow_type_value_width(&f->type)),
							"values") != ARROW_OK)
				return L->err->code;
			return ARROW_OK;
	}
}

/* ------------------------------------------------------------------------
 * Dictionaries
 * ------------------------------------------------------------------------
 */

/* A range of rows of an array, for concatenating delta dictionaries */
typedef struct Slice
{
	const ArrowArray *a;
	int64_t		start;
	int64_t		length;
} Slice;

/* Copies bits [start, start + n) of src (NULL: all set) to dst at 'at' */
static void
copy_bits(uint8_t *dst, int64_t at, const uint8_t *src, int64_t start, int64_t n)
{
	for (int64_t i = 0; i < n; i++)
		set_bit(dst, at + i, src == NULL || get_bit(src, start + i));
}

/*
 * Concatenates the slices (validated arrays of field f) into *out, memory
 * from the arena.  Used for a dictionary and its deltas.
 *
 * Null, struct and fixed-size-list arrays may claim any length without data
 * behind it, and concatenating costs at least a bit per value, so no level
 * may hold more than L->concat_limit values (the bits of the dictionary
 * batches' bodies): such a dictionary is refused rather than blown up.
 */
static int
concat_slices(Loader *L, const ArrowField *f, const Slice *s, int n, ArrowArray *out)
{
	Arena	   *arena = &L->bp->arena;
	int64_t		total = 0;
	int64_t		nulls = 0;
	int64_t		at;
	bool		large = false;

	memset(out, 0, sizeof(ArrowArray));
	out->field = f;
	for (int i = 0; i < n; i++)
	{
		if (arrow_add_overflow(total, s[i].length, &total) || total > L->concat_limit)
			return load_error(L, f, "concatenated dictionary has more values than its batches hold");
		for (int64_t r = 0; s[i].a->validity != NULL && r < s[i].length; r++)
			nulls += !get_bit(s[i].a->validity, s[i].start + r);
	}
	out->length = total;
	out->null_count = (f->type.id == ARROW_TYPE_NULL) ? total : nulls;
	if (f->type.id == ARROW_TYPE_NULL)
		return ARROW_OK;
	if (nulls > 0)
	{
		uint8_t    *v = arena_calloc(arena, bitmap_bytes(total), 1, L->err);

		if (v == NULL)
			return ARROW_ERR_NOMEM;
		at = 0;
		for (int i = 0; i < n; i++)
		{
			copy_bits(v, at, s[i].a->validity, s[i].start, s[i].length);
			at += s[i].length;
		}
		out->validity = v;
	}

	switch (f->type.id)
	{
		case ARROW_TYPE_BOOL:
			{
				uint8_t    *v = arena_calloc(arena, bitmap_bytes(total) + 1, 1, L->err);

				if (v == NULL)
					return ARROW_ERR_NOMEM;
				at = 0;
				for (int i = 0; i < n; i++)
				{
					copy_bits(v, at, s[i].a->values, s[i].start, s[i].length);
					at += s[i].length;
				}
				out->values = v;
				return ARROW_OK;
			}
		case ARROW_TYPE_LARGE_UTF8:
		case ARROW_TYPE_LARGE_BINARY:
		case ARROW_TYPE_LARGE_LIST:
			large = true;
			/* FALLTHROUGH */
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_BINARY:
		case ARROW_TYPE_LIST:
			{
				int			w = large ? 8 : 4;
				bool		is_list = (f->type.id == ARROW_TYPE_LIST || f->type.id == ARROW_TYPE_LARGE_LIST);
				uint8_t    *offsets = arena_calloc(arena, total + 1, w, L->err);
				int64_t		base = 0;
				uint8_t    *data = NULL;
				Slice	   *cs = NULL;

				if (offsets == NULL)
					return ARROW_ERR_NOMEM;
				if (is_list)
				{
					cs = arena_calloc(arena, n, sizeof(Slice), L->err);
					if (cs == NULL)
						return ARROW_ERR_NOMEM;
				}
				else
				{
					int64_t		bytes = 0;

					for (int i = 0; i < n; i++)
						bytes += offset_at(s[i].a->offsets, large, s[i].start + s[i].length) -
							offset_at(s[i].a->offsets, large, s[i].start);
					data = arena_calloc(arena, bytes + 1, 1, L->err);
					if (data == NULL)
						return ARROW_ERR_NOMEM;
					out->data = data;
					out->data_length = bytes;
				}
				at = 0;
				for (int i = 0; i < n; i++)
				{
					int64_t		first = offset_at(s[i].a->offsets, large, s[i].start);
					int64_t		last = offset_at(s[i].a->offsets, large, s[i].start + s[i].length);

					for (int64_t r = 0; r <= s[i].length; r++)
					{
						int64_t		o = offset_at(s[i].a->offsets, large, s[i].start + r) - first + base;
						int32_t		o32 = (int32_t) o;

						if (!large && o > INT32_MAX)
							return load_error(L, f, "concatenated dictionary exceeds 32-bit offsets");
						if (large)
							memcpy(offsets + (at + r) * 8, &o, 8);
						else
							memcpy(offsets + (at + r) * 4, &o32, 4);
					}
					if (is_list)
					{
						cs[i].a = &s[i].a->children[0];
						cs[i].start = first;
						cs[i].length = last - first;
					}
					else
						memcpy(data + base, s[i].a->data + first, last - first);
					base += last - first;
					at += s[i].length;
				}
				out->offsets = offsets;
				if (!is_list)
					return ARROW_OK;
				out->children = arena_calloc(arena, 1, sizeof(ArrowArray), L->err);
				if (out->children == NULL)
					return ARROW_ERR_NOMEM;
				out->n_children = 1;
				return concat_slices(L, &f->children[0], cs, n, &out->children[0]);
			}
		case ARROW_TYPE_UTF8_VIEW:
		case ARROW_TYPE_BINARY_VIEW:
		case ARROW_TYPE_LIST_VIEW:
		case ARROW_TYPE_LARGE_LIST_VIEW:
		case ARROW_TYPE_RUN_END_ENCODED:
		case ARROW_TYPE_MAP:
			return arrow_set_error(L->err, ARROW_ERR_UNSUPPORTED,
								   "%s, field \"%s\": unsupported delta dictionary of views, list views, maps or run-end encoded values",
								   L->what, f->name);
		case ARROW_TYPE_FIXED_SIZE_LIST:
		case ARROW_TYPE_STRUCT:
			{
				Slice	   *cs = arena_calloc(arena, n, sizeof(Slice), L->err);
				int64_t		k = (f->type.id == ARROW_TYPE_STRUCT) ? 1 : f->type.list_size;

				if (cs == NULL)
					return ARROW_ERR_NOMEM;
				if (f->n_children > 0)
				{
					out->children = arena_calloc(arena, f->n_children, sizeof(ArrowArray), L->err);
					if (out->children == NULL)
						return ARROW_ERR_NOMEM;
					out->n_children = f->n_children;
				}
				for (int32_t c = 0; c < f->n_children; c++)
				{
					for (int i = 0; i < n; i++)
					{
						cs[i].a = &s[i].a->children[c];
						cs[i].start = s[i].start * k;
						cs[i].length = s[i].length * k;
					}
					if (concat_slices(L, &f->children[c], cs, n, &out->children[c]) != ARROW_OK)
						return L->err->code;
				}
				return ARROW_OK;
			}
		default:
			{
				int64_t		w = arrow_type_value_width(&f->type);
				uint8_t    *v = arena_calloc(arena, total * w + 1, 1, L->err);

				if (v == NULL)
					return ARROW_ERR_NOMEM;
				at = 0;
				for (int i = 0; i < n; i++)
				{
					memcpy(v + at * w, s[i].a->values + s[i].start * w, s[i].length * w);
					at += s[i].length;
				}
				out->values = v;
				return ARROW_OK;
			}
	}
}

/*
 * The dictionary of dictionary-encoded field f as the record batch being
 * loaded sees it (decoded once per batch).
 */
static int
get_dictionary(Loader *L, const ArrowField *f, const ArrowArray **out)
{
	const ArrowFile *file = L->file;
	int64_t		id = f->dictionary.id;
	const DictValueField *dv = find_dict_field(file, id);
	Arena	   *arena = &L->bp->arena;
	LoadedDict *ld;
	int32_t		start = -1;
	int			n = 0;
	int64_t		bytes = 0;		/* body bytes of the pieces */
	ArrowArray *pieces;
	ArrowArray *result;

	for (ld = L->bp->dicts; ld != NULL; ld = ld->next)
	{
		if (ld->id == id)
		{
			*out = ld->values;
			return ARROW_OK;
		}
	}
	/* the last replacement (non-delta) batch of id, then its deltas */
	for (int32_t i = 0; i < L->visible; i++)
	{
		if (file->dictionaries[i].id != id)
			continue;
		if (start < 0 || !file->dictionaries[i].is_delta)
		{
			start = i;
			n = 0;
		}
		n++;
	}
	if (start < 0)
		return load_error(L, f, "no dictionary batch for dictionary %lld comes before it",
						  (long long) id);
	pieces = arena_calloc(arena, n, sizeof(ArrowArray), L->err);
	result = arena_calloc(arena, 1, sizeof(ArrowArray), L->err);
	ld = arena_calloc(arena, 1, sizeof(LoadedDict), L->err);
	if (pieces == NULL || result == NULL || ld == NULL)
		return ARROW_ERR_NOMEM;
	n = 0;
	for (int32_t i = start; i < L->visible; i++)
	{
		Loader		sub;

		if (file->dictionaries[i].id != id)
			continue;
		sub = *L;
		sub.info = &file->dictionaries[i].batch;
		sub.node = 0;
		sub.buffer = 0;
		sub.variadic = 0;
		snprintf(sub.what, sizeof(sub.what), "dictionary batch %d", i);
		if (load_array(&sub, &dv->field, &pieces[n]) != ARROW_OK)
			return L->err->code;
		bytes += file->dictionaries[i].batch.body_length;
		n++;
	}
	if (n == 1)
		*result = pieces[0];
	else
	{
		Slice	   *s = arena_calloc(arena, n, sizeof(Slice), L->err);

		if (s == NULL)
			return ARROW_ERR_NOMEM;
		for (int i = 0; i < n; i++)
		{
			s[i].a = &pieces[i];
			s[i].start = 0;
			s[i].length = pieces[i].length;
		}
		L->concat_limit = bytes * 8 + 64;
		if (concat_slices(L, &dv->field, s, n, result) != ARROW_OK)
			return L->err->code;
	}
	ld->id = id;
	ld->values = result;
	ld->next = L->bp->dicts;
	L->bp->dicts = ld;
	*out = result;
	return ARROW_OK;
}

/* Frees a loaded batch: its arrays, buffers and dictionaries */
void
arrow_batch_free(ArrowBatch *batch)
{
	BatchPriv  *bp;
	const ArrowAllocator *alloc;

	if (batch == NULL)
		return;
	bp = batch->priv;
	alloc = bp->arena.alloc;
	arena_free(&bp->arena);
	arrow_free(alloc, bp);
	arrow_free(alloc, batch);
}

/*
 * See arrow.h.  Reads and checks the wanted columns with load_array; on
 * failure nothing stays allocated.
 */
int
arrow_batch_load(ArrowFile *file, int32_t batch, const bool *want,
				 ArrowBatch **out, ArrowError *err)
{
	ArrowBatch *b;
	BatchPriv  *bp;
	ArrowCodecCtx codec;
	Loader		L;
	int			rc = ARROW_OK;
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (out == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no output pointer");
	*out = NULL;
	if (file == NULL || batch < 0 || batch >= file->n_batches)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no record batch %d", batch);
	b = arrow_calloc(file->alloc, 1, sizeof(ArrowBatch), err);
	if (b == NULL)
		return ARROW_ERR_NOMEM;
	bp = arrow_calloc(file->alloc, 1, sizeof(BatchPriv), err);
	if (bp == NULL)
	{
		arrow_free(file->alloc, b);
		return ARROW_ERR_NOMEM;
	}
	bp->arena.alloc = file->alloc;
	b->priv = bp;
	b->file = file;
	b->index = batch;
	b->n_rows = file->batches[batch].n_rows;
	b->n_columns = file->schema.n_fields;
	if (b->n_columns > 0)
	{
		b->columns = arena_calloc(&bp->arena, b->n_columns, sizeof(ArrowArray), err);
		if (b->columns == NULL)
		{
			arrow_batch_free(b);
			return ARROW_ERR_NOMEM;
		}
	}

	arrow_codec_init(&codec, file->alloc);
	memset(&L, 0, sizeof(L));
	L.file = file;
	L.info = &file->batches[batch];
	L.bp = bp;
	L.codec = &codec;
	L.visible = ((const ReaderPriv *) file->priv)->visible_dicts[batch];
	L.err = err;
	snprintf(L.what, sizeof(L.what), "record batch %d", batch);
	for (int32_t c = 0; c < b->n_columns && rc == ARROW_OK; c++)
	{
		if (want != NULL && !want[c])
			continue;
		L.node = file->columns[c].first_node;
		L.buffer = file->columns[c].first_buffer;
		if (L.info->column_first_buffer != NULL)
		{
			L.buffer = L.info->column_first_buffer[c];
			L.variadic = L.info->column_first_variadic[c];
		}
		rc = load_array(&L, &file->schema.fields[c], &b->columns[c]);
	}
	arrow_codec_free(&codec);
	if (rc != ARROW_OK)
	{
		arrow_batch_free(b);
		return rc;
	}
	*out = b;
	return ARROW_OK;
}
