/*-------------------------------------------------------------------------
 *
 * arrow_util.c
 *		Errors, allocation, metadata and schema handling, and the value
 *		helpers (float16, decimal128) of the Arrow library.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_internal.h"
#include "arrow_types.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------
 */
int
arrow_set_error(ArrowError *err, ArrowErrorCode code, const char *fmt,...)
{
	if (err != NULL)
	{
		va_list		ap;

		err->code = code;
		err->sys_errno = (code == ARROW_ERR_IO) ? errno : 0;
		va_start(ap, fmt);
		vsnprintf(err->message, sizeof(err->message), fmt, ap);
		va_end(ap);
	}
	return code;
}

const char *
arrow_error_code_name(ArrowErrorCode code)
{
	switch (code)
	{
		case ARROW_OK:
			return "ok";
		case ARROW_ERR_IO:
			return "i/o error";
		case ARROW_ERR_INVALID:
			return "invalid arrow data";
		case ARROW_ERR_UNSUPPORTED:
			return "unsupported arrow feature";
		case ARROW_ERR_NOMEM:
			return "out of memory";
		case ARROW_ERR_SCHEMA_MISMATCH:
			return "schema mismatch";
		case ARROW_ERR_ARGUMENT:
			return "invalid argument";
		case ARROW_ERR_LIMIT:
			return "limit exceeded";
		case ARROW_ERR_NOT_ARROW:
			return "not arrow";
	}
	return "unknown error";
}

/* ------------------------------------------------------------------------
 * Allocation
 * ------------------------------------------------------------------------
 */
static void *
default_malloc(void *ctx, size_t size)
{
	return malloc(size ? size : 1);
}

static void *
default_realloc(void *ctx, void *ptr, size_t size)
{
	return realloc(ptr, size ? size : 1);
}

static void
default_free(void *ctx, void *ptr)
{
	free(ptr);
}

const ArrowAllocator arrow_default_allocator = {
	default_malloc, default_realloc, default_free, NULL
};

void *
arrow_malloc(const ArrowAllocator *alloc, size_t size, ArrowError *err)
{
	void	   *p;

	alloc = arrow_alloc_or_default(alloc);
	p = alloc->malloc_fn(alloc->ctx, size);
	if (p == NULL)
		arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory allocating %zu bytes", size);
	return p;
}

void *
arrow_calloc(const ArrowAllocator *alloc, size_t n, size_t size, ArrowError *err)
{
	size_t		total;
	void	   *p;

	if (__builtin_mul_overflow(n, size, &total))
	{
		arrow_set_error(err, ARROW_ERR_NOMEM, "allocation of %zu x %zu bytes overflows", n, size);
		return NULL;
	}
	p = arrow_malloc(alloc, total, err);
	if (p != NULL)
		memset(p, 0, total);
	return p;
}

void *
arrow_realloc(const ArrowAllocator *alloc, void *ptr, size_t size, ArrowError *err)
{
	void	   *p;

	alloc = arrow_alloc_or_default(alloc);
	if (ptr == NULL)
		return arrow_malloc(alloc, size, err);
	p = alloc->realloc_fn(alloc->ctx, ptr, size);
	if (p == NULL)
		arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory allocating %zu bytes", size);
	return p;
}

void
arrow_free(const ArrowAllocator *alloc, void *ptr)
{
	if (ptr != NULL)
	{
		alloc = arrow_alloc_or_default(alloc);
		alloc->free_fn(alloc->ctx, ptr);
	}
}

char *
arrow_strndup(const ArrowAllocator *alloc, const char *s, size_t len, ArrowError *err)
{
	char	   *p = arrow_malloc(alloc, len + 1, err);

	if (p != NULL)
	{
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

char *
arrow_strdup(const ArrowAllocator *alloc, const char *s, ArrowError *err)
{
	return arrow_strndup(alloc, s, strlen(s), err);
}

/* ------------------------------------------------------------------------
 * String buffers
 * ------------------------------------------------------------------------
 */
int
arrow_strbuf_append(ArrowStrBuf *buf, const char *s, size_t len, ArrowError *err)
{
	if (buf->len + len + 1 > buf->cap)
	{
		size_t		cap = buf->cap ? buf->cap : 256;
		char	   *p;

		while (cap < buf->len + len + 1)
			cap *= 2;
		p = arrow_realloc(buf->alloc, buf->data, cap, err);
		if (p == NULL)
			return ARROW_ERR_NOMEM;
		buf->data = p;
		buf->cap = cap;
	}
	memcpy(buf->data + buf->len, s, len);
	buf->len += len;
	buf->data[buf->len] = '\0';
	return ARROW_OK;
}

int
arrow_strbuf_printf(ArrowStrBuf *buf, ArrowError *err, const char *fmt,...)
{
	char		local[256];
	va_list		ap;
	int			n;
	int			rc;

	va_start(ap, fmt);
	n = vsnprintf(local, sizeof(local), fmt, ap);
	va_end(ap);
	if (n < 0)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "bad format string");
	if ((size_t) n < sizeof(local))
		return arrow_strbuf_append(buf, local, n, err);
	else
	{
		char	   *big = arrow_malloc(buf->alloc, n + 1, err);

		if (big == NULL)
			return ARROW_ERR_NOMEM;
		va_start(ap, fmt);
		vsnprintf(big, n + 1, fmt, ap);
		va_end(ap);
		rc = arrow_strbuf_append(buf, big, n, err);
		arrow_free(buf->alloc, big);
		return rc;
	}
}

void
arrow_strbuf_free(ArrowStrBuf *buf)
{
	arrow_free(buf->alloc, buf->data);
	buf->data = NULL;
	buf->len = buf->cap = 0;
}

/* ------------------------------------------------------------------------
 * Metadata
 * ------------------------------------------------------------------------
 */
const char *
arrow_metadata_get(const ArrowMetadata *md, const char *key)
{
	for (int32_t i = 0; md != NULL && i < md->count; i++)
	{
		if (strcmp(md->items[i].key, key) == 0)
			return md->items[i].value;
	}
	return NULL;
}

const char *
arrow_metadata_get_hinted(const ArrowMetadata *md, const char *key, int32_t *hint)
{
	if (md == NULL)
		return NULL;
	if (md->unique && *hint >= 0 && *hint < md->count &&
		strcmp(md->items[*hint].key, key) == 0)
		return md->items[*hint].value;
	for (int32_t i = 0; i < md->count; i++)
	{
		if (strcmp(md->items[i].key, key) == 0)
		{
			*hint = i;
			return md->items[i].value;
		}
	}
	return NULL;
}

int
arrow_metadata_set(const ArrowAllocator *alloc, ArrowMetadata *md,
				   const char *key, const char *value, ArrowError *err)
{
	char	   *v = arrow_strdup(alloc, value, err);
	ArrowKeyValue *items;

	if (v == NULL)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < md->count; i++)
	{
		if (strcmp(md->items[i].key, key) == 0)
		{
			arrow_free(alloc, md->items[i].value);
			md->items[i].value = v;
			return ARROW_OK;
		}
	}
	items = arrow_realloc(alloc, md->items, sizeof(ArrowKeyValue) * (md->count + 1), err);
	if (items == NULL)
	{
		arrow_free(alloc, v);
		return ARROW_ERR_NOMEM;
	}
	md->items = items;
	md->items[md->count].key = arrow_strdup(alloc, key, err);
	if (md->items[md->count].key == NULL)
	{
		arrow_free(alloc, v);
		return ARROW_ERR_NOMEM;
	}
	md->items[md->count].value = v;
	md->count++;
	return ARROW_OK;
}

int
arrow_metadata_copy(const ArrowAllocator *alloc, ArrowMetadata *dst,
					const ArrowMetadata *src, ArrowError *err)
{
	dst->count = 0;
	dst->items = NULL;
	dst->unique = src != NULL && src->unique;	/* as the original says, even of no key */
	if (src == NULL || src->count == 0)
		return ARROW_OK;
	dst->items = arrow_calloc(alloc, src->count, sizeof(ArrowKeyValue), err);
	if (dst->items == NULL)
		return ARROW_ERR_NOMEM;
	for (int32_t i = 0; i < src->count; i++)
	{
		dst->items[i].key = arrow_strdup(alloc, src->items[i].key, err);
		dst->items[i].value = arrow_strdup(alloc, src->items[i].value, err);
		dst->count = i + 1;
		if (dst->items[i].key == NULL || dst->items[i].value == NULL)
		{
			arrow_metadata_free(alloc, dst);
			return ARROW_ERR_NOMEM;
		}
	}
	return ARROW_OK;
}

void
arrow_metadata_free(const ArrowAllocator *alloc, ArrowMetadata *md)
{
	for (int32_t i = 0; i < md->count; i++)
	{
		arrow_free(alloc, md->items[i].key);
		arrow_free(alloc, md->items[i].value);
	}
	arrow_free(alloc, md->items);
	md->items = NULL;
	md->count = 0;
}

/* ------------------------------------------------------------------------
 * Fields and schemas
 * ------------------------------------------------------------------------
 */
int
arrow_field_copy(const ArrowAllocator *alloc, ArrowField *dst,
				 const ArrowField *src, int depth, ArrowError *err)
{
	int			rc;

	memset(dst, 0, sizeof(ArrowField));
	if (depth > ARROW_MAX_NESTING)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "fields nested deeper than %d levels", ARROW_MAX_NESTING);
	dst->nullable = src->nullable;
	dst->type = src->type;
	dst->type.timezone = NULL;
	dst->has_dictionary = src->has_dictionary;
	dst->dictionary = src->dictionary;
	dst->name = arrow_strdup(alloc, src->name ? src->name : "", err);
	if (dst->name == NULL)
		goto fail;
	if (src->type.timezone != NULL)
	{
		dst->type.timezone = arrow_strdup(alloc, src->type.timezone, err);
		if (dst->type.timezone == NULL)
			goto fail;
	}
	if ((rc = arrow_metadata_copy(alloc, &dst->metadata, &src->metadata, err)) != ARROW_OK)
		goto fail;
	if (src->n_children > 0)
	{
		dst->children = arrow_calloc(alloc, src->n_children, sizeof(ArrowField), err);
		if (dst->children == NULL)
			goto fail;
		for (int32_t i = 0; i < src->n_children; i++)
		{
			dst->n_children = i + 1;
			if (arrow_field_copy(alloc, &dst->children[i], &src->children[i], depth + 1, err) != ARROW_OK)
				goto fail;
		}
	}
	return ARROW_OK;

fail:
	arrow_field_free(alloc, dst);
	return err ? err->code : ARROW_ERR_NOMEM;
}

void
arrow_field_free(const ArrowAllocator *alloc, ArrowField *field)
{
	for (int32_t i = 0; i < field->n_children; i++)
		arrow_field_free(alloc, &field->children[i]);
	arrow_free(alloc, field->children);
	arrow_free(alloc, field->name);
	arrow_free(alloc, field->type.timezone);
	arrow_metadata_free(alloc, &field->metadata);
	memset(field, 0, sizeof(ArrowField));
}

int
arrow_schema_copy(const ArrowAllocator *alloc, ArrowSchema *dst,
				  const ArrowSchema *src, ArrowError *err)
{
	memset(dst, 0, sizeof(ArrowSchema));
	if (arrow_metadata_copy(alloc, &dst->metadata, &src->metadata, err) != ARROW_OK)
		return err ? err->code : ARROW_ERR_NOMEM;
	if (src->n_fields > 0)
	{
		dst->fields = arrow_calloc(alloc, src->n_fields, sizeof(ArrowField), err);
		if (dst->fields == NULL)
		{
			arrow_schema_free(alloc, dst);
			return ARROW_ERR_NOMEM;
		}
		for (int32_t i = 0; i < src->n_fields; i++)
		{
			dst->n_fields = i + 1;
			if (arrow_field_copy(alloc, &dst->fields[i], &src->fields[i], 1, err) != ARROW_OK)
			{
				arrow_schema_free(alloc, dst);
				return err ? err->code : ARROW_ERR_NOMEM;
			}
		}
	}
	return ARROW_OK;
}

void
arrow_schema_free(const ArrowAllocator *alloc, ArrowSchema *schema)
{
	for (int32_t i = 0; i < schema->n_fields; i++)
		arrow_field_free(alloc, &schema->fields[i]);
	arrow_free(alloc, schema->fields);
	arrow_metadata_free(alloc, &schema->metadata);
	memset(schema, 0, sizeof(ArrowSchema));
}

static const char *
unit_suffix(ArrowTimeUnit unit)
{
	switch (unit)
	{
		case ARROW_UNIT_SECOND:
			return "s";
		case ARROW_UNIT_MILLI:
			return "ms";
		case ARROW_UNIT_MICRO:
			return "us";
		case ARROW_UNIT_NANO:
			return "ns";
	}
	return "?";
}

/* See arrow.h: the table's name, with the parameters the row says */
void
arrow_type_format(const ArrowType *t, char *buf, size_t len)
{
	const ArrowTypeInfo *info = arrow_type_info(t->id);

	if (info == NULL)
	{
		snprintf(buf, len, "unknown");
		return;
	}
	switch (info->params)
	{
		case ARROW_PARAMS_NONE:
			snprintf(buf, len, "%s", info->name);
			break;
		case ARROW_PARAMS_MAP:
			snprintf(buf, len, "%s%s", info->name, t->keys_sorted ? "[sorted]" : "");
			break;
		case ARROW_PARAMS_DECIMAL:
			snprintf(buf, len, "%s(%d, %d)", info->name, t->precision, t->scale);
			break;
		case ARROW_PARAMS_UNIT:
			snprintf(buf, len, "%s[%s]", info->name, unit_suffix(t->unit));
			break;
		case ARROW_PARAMS_TIMESTAMP:
			if (t->timezone != NULL)
				snprintf(buf, len, "%s[%s, tz=%s]", info->name, unit_suffix(t->unit), t->timezone);
			else
				snprintf(buf, len, "%s[%s]", info->name, unit_suffix(t->unit));
			break;
		case ARROW_PARAMS_BYTE_WIDTH:
			snprintf(buf, len, "%s(%d)", info->name, t->byte_width);
			break;
		case ARROW_PARAMS_LIST_SIZE:
			snprintf(buf, len, "%s(%d)", info->name, t->list_size);
			break;
	}
}

static bool
field_equal(const ArrowField *a, const ArrowField *b, const char *path,
			char *why, size_t whylen)
{
	char		ta[128];
	char		tb[128];
	char		subpath[256];

	arrow_type_format(&a->type, ta, sizeof(ta));
	arrow_type_format(&b->type, tb, sizeof(tb));
	if (strcmp(a->name, b->name) != 0)
	{
		if (why)
			snprintf(why, whylen, "field %s: name \"%s\" vs \"%s\"", path, a->name, b->name);
		return false;
	}
	if (strcmp(ta, tb) != 0)
	{
		if (why)
			snprintf(why, whylen, "field \"%s\": %s vs %s", path, ta, tb);
		return false;
	}
	if (a->nullable != b->nullable)
	{
		if (why)
			snprintf(why, whylen, "field \"%s\": nullable %s vs %s", path,
					 a->nullable ? "true" : "false", b->nullable ? "true" : "false");
		return false;
	}
	if (a->has_dictionary != b->has_dictionary ||
		(a->has_dictionary &&
		 (a->dictionary.index_type != b->dictionary.index_type ||
		  a->dictionary.id != b->dictionary.id)))
	{
		if (why)
			snprintf(why, whylen, "field \"%s\": dictionary encoding differs", path);
		return false;
	}
	if (a->n_children != b->n_children)
	{
		if (why)
			snprintf(why, whylen, "field \"%s\": %d vs %d children", path,
					 a->n_children, b->n_children);
		return false;
	}
	for (int32_t i = 0; i < a->n_children; i++)
	{
		snprintf(subpath, sizeof(subpath), "%s.%s", path, a->children[i].name);
		if (!field_equal(&a->children[i], &b->children[i], subpath, why, whylen))
			return false;
	}
	return true;
}

bool
arrow_schema_equal(const ArrowSchema *a, const ArrowSchema *b, char *why, size_t whylen)
{
	if (a->n_fields != b->n_fields)
	{
		if (why)
			snprintf(why, whylen, "%d vs %d fields", a->n_fields, b->n_fields);
		return false;
	}
	for (int32_t i = 0; i < a->n_fields; i++)
	{
		if (!field_equal(&a->fields[i], &b->fields[i], a->fields[i].name, why, whylen))
			return false;
	}
	return true;
}

/* See arrow.h (the table's n_buffers) */
int
arrow_field_buffer_count(const ArrowField *field)
{
	const ArrowTypeInfo *info = arrow_type_info(field->type.id);

	if (field->has_dictionary)
		return 2;
	return info ? info->n_buffers : 2;
}

/* See arrow.h (the table's bit_width; FIXED_SIZE_BINARY: its byte_width) */
int
arrow_type_value_width(const ArrowType *type)
{
	const ArrowTypeInfo *info = arrow_type_info(type->id);

	if (info == NULL)
		return 0;
	if (info->params == ARROW_PARAMS_BYTE_WIDTH)
		return type->byte_width;
	return info->bit_width / 8;
}


/* ------------------------------------------------------------------------
 * float16
 * ------------------------------------------------------------------------
 */
float
arrow_half_to_float(uint16_t h)
{
	uint32_t	sign = (uint32_t) (h >> 15) << 31;
	uint32_t	exp = (h >> 10) & 0x1f;
	uint32_t	mant = h & 0x3ff;
	uint32_t	bits;
	float		f;

	if (exp == 0x1f)			/* inf or NaN */
		bits = sign | 0x7f800000u | (mant << 13);
	else if (exp != 0)			/* normal */
		bits = sign | ((exp + 112) << 23) | (mant << 13);
	else if (mant == 0)			/* zero */
		bits = sign;
	else
	{
		/* subnormal half: value = mant * 2^-24, exact in float */
		f = (float) mant * 0x1p-24f;
		return sign ? -f : f;
	}
	memcpy(&f, &bits, sizeof(f));
	return f;
}

uint16_t
arrow_float_to_half(float f)
{
	uint32_t	bits;
	uint32_t	sign;
	uint32_t	exp;
	uint32_t	mant;

	memcpy(&bits, &f, sizeof(bits));
	sign = (bits >> 16) & 0x8000;
	exp = (bits >> 23) & 0xff;
	mant = bits & 0x7fffff;

	if (exp == 0xff)			/* inf or NaN (keep NaN a NaN) */
		return sign | 0x7c00 | (mant ? (0x200 | (mant >> 13)) : 0);
	if (exp > 142)				/* >= 2^16: overflow to inf */
		return sign | 0x7c00;
	if (exp >= 113)
	{
		/* normal half; round mantissa to nearest even */
		uint32_t	h = ((exp - 112) << 10) | (mant >> 13);
		uint32_t	rest = mant & 0x1fff;

		if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
			h++;				/* may carry into exponent, even to inf: right */
		return sign | h;
	}
	if (exp >= 102)
	{
		/* subnormal half: shift the full mantissa (with implicit 1) */
		uint32_t	m = mant | 0x800000;
		int			shift = 126 - exp;	/* 14..24 */
		uint32_t	h = m >> shift;
		uint32_t	rest = m & ((1u << shift) - 1);
		uint32_t	halfway = 1u << (shift - 1);

		if (rest > halfway || (rest == halfway && (h & 1)))
			h++;
		return sign | h;
	}
	return sign;				/* underflow to zero */
}

/* ------------------------------------------------------------------------
 * decimal128
 * ------------------------------------------------------------------------
 */
void
arrow_decimal128_format(ArrowDecimal128 v, int32_t scale, char *buf, size_t len)
{
	__int128	x = (__int128) (((unsigned __int128) (uint64_t) v.hi << 64) | v.lo);
	unsigned __int128 u;
	char		digits[ARROW_DECIMAL128_MAX_TEXT];	/* least significant first */
	int			nd = 0;
	size_t		pos = 0;
	bool		neg = x < 0;

	if (scale < -38)
		scale = -38;
	if (scale > 38)
		scale = 38;
	/* value = unscaled * 10^-scale: a negative scale adds -scale zeros */
	if (scale < 0 && x != 0)
		for (int i = 0; i < -scale; i++)
			digits[nd++] = '0';
	u = neg ? -(unsigned __int128) x : (unsigned __int128) x;
	do
	{
		digits[nd++] = '0' + (int) (u % 10);
		u /= 10;
	} while (u != 0);
	/* at least scale + 1 digits, so there is a leading 0 before the point */
	while (scale > 0 && nd < scale + 1)
		digits[nd++] = '0';

#define PUT(c) do { if (pos + 1 < len) buf[pos++] = (c); } while (0)
	if (neg)
		PUT('-');
	for (int i = nd - 1; i >= 0; i--)
	{
		PUT(digits[i]);
		if (i == scale && scale > 0)
			PUT('.');
	}
#undef PUT
	if (len > 0)
		buf[pos] = '\0';
}

int
arrow_decimal128_parse(const char *s, int32_t precision, int32_t scale,
					   ArrowDecimal128 *out, ArrowError *err)
{
	const char *p = s;
	bool		neg = false;
	char		digits[128];	/* significant digits, most significant first */
	int			nd = 0;
	int			nfrac = 0;		/* digits after the point */
	int			shift;
	bool		seen_point = false;
	bool		seen_digit = false;
	unsigned __int128 u = 0;
	__int128	x;

	if (precision < 1 || precision > 38 || scale < -38 || scale > 38)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "invalid decimal128 precision %d / scale %d", precision, scale);
	if (*p == '-' || *p == '+')
		neg = (*p++ == '-');
	for (; *p; p++)
	{
		if (*p == '.' && !seen_point)
		{
			seen_point = true;
			continue;
		}
		if (*p < '0' || *p > '9')
			return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid decimal \"%s\"", s);
		seen_digit = true;
		if (seen_point)
			nfrac++;
		if (nd == 0 && *p == '0')
			continue;			/* leading zero */
		if (nd == (int) sizeof(digits))
			return arrow_set_error(err, ARROW_ERR_ARGUMENT, "decimal \"%s\" has too many digits", s);
		digits[nd++] = *p;
	}
	if (!seen_digit)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "invalid decimal \"%s\"", s);

	/* unscaled = digits * 10^(scale - nfrac) must be an integer */
	shift = scale - nfrac;
	for (; shift < 0 && nd > 0; shift++)
	{
		if (digits[nd - 1] != '0')
			return arrow_set_error(err, ARROW_ERR_ARGUMENT,
								   scale >= 0 ? "decimal \"%s\" has more than %d fraction digits"
								   : "decimal \"%s\" is not a multiple of 10^%d",
								   s, scale >= 0 ? scale : -scale);
		nd--;
	}
	if (nd > 0 && nd + shift > precision)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT,
							   "decimal \"%s\" does not fit in decimal128(%d, %d)", s, precision, scale);
	for (int i = 0; i < nd; i++)
		u = u * 10 + (unsigned) (digits[i] - '0');
	for (; nd > 0 && shift > 0; shift--)
		u *= 10;
	x = neg ? -(__int128) u : (__int128) u;
	out->lo = (uint64_t) x;
	out->hi = (int64_t) ((unsigned __int128) x >> 64);
	return ARROW_OK;
}

/* ------------------------------------------------------------------------
 * Memory source
 * ------------------------------------------------------------------------
 */
typedef struct MemorySource
{
	const uint8_t *data;
	size_t		len;
} MemorySource;

static int
memory_read_at(void *ctx, int64_t offset, void *dst, size_t len, ArrowError *err)
{
	const MemorySource *m = ctx;

	if (offset < 0 || (uint64_t) offset > m->len || len > m->len - (size_t) offset)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "read of %zu bytes at offset %lld is past the end (%zu bytes)",
							   len, (long long) offset, m->len);
	memcpy(dst, m->data + offset, len);
	return ARROW_OK;
}

/* The MemorySource lives inside the caller's ArrowSource: no allocation. */
void
arrow_source_from_memory(ArrowSource *src, const void *data, size_t len)
{
	_Static_assert(sizeof(MemorySource) <= sizeof(src->mem_ctx_storage),
				   "ArrowSource storage too small");
	MemorySource *m = (MemorySource *) src->mem_ctx_storage;

	m->data = data;
	m->len = len;
	src->read_at = memory_read_at;
	src->size = (int64_t) len;
	src->ctx = m;
}
