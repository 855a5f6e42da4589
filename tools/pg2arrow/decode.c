/*-------------------------------------------------------------------------
 *
 * decode.c
 *		Binary COPY tuples -> Arrow builders, and per-batch statistics.
 *
 * Each value arrives in its type's binary send format (big-endian).  Every
 * length is checked against the bytes that enclose it before it is used:
 * a tuple against the CopyData stream, a field against its tuple, array
 * elements and composite attributes against their value.  Values that the
 * chosen Arrow type cannot hold exactly are errors naming the column and
 * the row, never silently changed.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

/* PostgreSQL epoch (2000-01-01) relative to the Unix epoch */
#define PG_EPOCH_DAYS		10957
#define PG_EPOCH_USECS		INT64_C(946684800000000)
#define USECS_PER_DAY		INT64_C(86400000000)

/* numeric sign words of the binary format */
#define NUMERIC_POS			0x0000
#define NUMERIC_NEG			0x4000
#define NUMERIC_NAN			0xC000
#define NUMERIC_PINF		0xD000
#define NUMERIC_NINF		0xF000

/* inet address families of the binary format (PGSQL_AF_INET in inet.h) */
#define PGSQL_AF_INET		(AF_INET + 0)
#define PGSQL_AF_INET6		(AF_INET + 1)

/* Largest value length PostgreSQL can send (1 GB) */
#define MAX_VALUE_LEN		0x40000000

/* Where decoding is, for error messages */
typedef struct DecodeCtx
{
	int64_t		row;
	char	   *errbuf;
	size_t		errlen;
} DecodeCtx;

static bool
decode_fail(DecodeCtx *ctx, const PgColumn *col, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

/* Formats 'column "path", row N: message' into ctx->errbuf; returns false */
static bool
decode_fail(DecodeCtx *ctx, const PgColumn *col, const char *fmt,...)
{
	char		msg[700];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(ctx->errbuf, ctx->errlen, "column \"%s\", row %lld: %s",
			 col->path, (long long) ctx->row, msg);
	return false;
}

/* Reports a failed append of the Arrow library */
static bool
arrow_fail(DecodeCtx *ctx, const PgColumn *col, const ArrowError *err)
{
	return decode_fail(ctx, col, "%s", err->message);
}

/* Big-endian reads of the binary format (the caller checked the length) */
static inline int16_t
get16(const char *p)
{
	uint16_t	v;

	memcpy(&v, p, 2);
	return (int16_t) __builtin_bswap16(v);
}

static inline int32_t
get32(const char *p)
{
	uint32_t	v;

	memcpy(&v, p, 4);
	return (int32_t) __builtin_bswap32(v);
}

static inline int64_t
get64(const char *p)
{
	uint64_t	v;

	memcpy(&v, p, 8);
	return (int64_t) __builtin_bswap64(v);
}

/* 10^0 .. 10^38 */
static __int128
pow10_i128(int e)
{
	__int128	v = 1;

	while (e-- > 0)
		v *= 10;
	return v;
}

/*
 * Converts a binary numeric (ndigits base-10000 digits with weight) into
 * value * 10^scale as a 128-bit integer.  False when digits would be lost
 * (more fraction digits than scale) or |result| >= 10^precision.
 */
static bool
numeric_to_scaled(const char *digits, int ndigits, int weight, bool neg,
				  int precision, int scale, __int128 *out, const char **why)
{
	__int128	limit = pow10_i128(precision);
	__int128	v = 0;

	for (int i = 0; i < ndigits; i++)
	{
		int			d = get16(digits + 2 * i);
		int			e = 4 * (weight - i) + scale;
		__int128	term;

		if (d == 0)
			continue;
		if (e < 0)
		{
			int			div = (e <= -4) ? 0 : (int) pow10_i128(-e);

			if (div == 0 || d % div != 0)
			{
				*why = "has more fraction digits than the scale of";
				return false;
			}
			term = d / div;
		}
		else if (e > 38)
		{
			*why = "does not fit in";
			return false;
		}
		else if (__builtin_mul_overflow((__int128) d, pow10_i128(e), &term))
		{
			*why = "does not fit in";
			return false;
		}
		if (__builtin_add_overflow(v, term, &v) || v >= limit)
		{
			*why = "does not fit in";
			return false;
		}
	}
	*out = neg ? -v : v;
	return true;
}

/* The four decimal digits of a base-10000 digit (0..9999) */
static inline void
digits4(int d, char *out)
{
	out[0] = '0' + d / 1000;
	out[1] = '0' + d / 100 % 10;
	out[2] = '0' + d / 10 % 10;
	out[3] = '0' + d % 10;
}

/*
 * Writes the decimal text of a binary numeric into buf (as numeric_out
 * prints it: dscale fraction digits).  Returns the length, or -1 when buf
 * is too small.
 */
static int
numeric_to_text(const char *digits, int ndigits, int weight, bool neg,
				int dscale, char *buf, size_t buflen)
{
	size_t		n = 0;

#define PUT(c) do { if (n + 1 >= buflen) return -1; buf[n++] = (c); } while (0)
	if (neg)
		PUT('-');
	if (weight < 0)
		PUT('0');
	for (int i = 0; i <= weight; i++)
	{
		int			d = (i < ndigits) ? get16(digits + 2 * i) : 0;
		char		grp[4];

		digits4(d, grp);
		for (int k = 0; k < 4; k++)
			if (n > (size_t) neg || grp[k] != '0' || (i == weight && k == 3))
				PUT(grp[k]);
	}
	if (dscale > 0)
	{
		PUT('.');
		for (int k = 0; k < dscale; k++)
		{
			int			i = weight + 1 + k / 4;
			int			d = (i >= 0 && i < ndigits) ? get16(digits + 2 * i) : 0;
			char		grp[4];

			digits4(d, grp);
			PUT(grp[k % 4]);
		}
	}
#undef PUT
	buf[n] = '\0';
	return (int) n;
}

/* A binary numeric value: its header fields; the digits follow at p + 8 */
typedef struct NumericValue
{
	const char *digits;			/* ndigits big-endian base-10000 digits */
	int			ndigits;
	int			weight;
	int			dscale;
	bool		neg;
	const char *special;		/* "NaN", "Infinity", "-Infinity" or NULL */
} NumericValue;

/* Checks and takes apart a numeric value (len bytes at p) into *nv */
static bool
read_numeric(const PgColumn *col, const char *p, int32_t len, NumericValue *nv,
			 DecodeCtx *ctx)
{
	int			sign;

	if (len < 8)
		return decode_fail(ctx, col, "numeric value of %d bytes is too short", len);
	nv->digits = p + 8;
	nv->ndigits = get16(p);
	nv->weight = get16(p + 2);
	sign = (uint16_t) get16(p + 4);
	nv->dscale = get16(p + 6);
	if (nv->ndigits < 0 || nv->dscale < 0 || len != 8 + 2 * nv->ndigits)
		return decode_fail(ctx, col, "malformed numeric value");
	for (int i = 0; i < nv->ndigits; i++)
	{
		int			d = get16(nv->digits + 2 * i);

		if (d < 0 || d > 9999)
			return decode_fail(ctx, col, "malformed numeric digit");
	}
	nv->special = sign == NUMERIC_NAN ? "NaN" :
		sign == NUMERIC_PINF ? "Infinity" :
		sign == NUMERIC_NINF ? "-Infinity" : NULL;
	if (nv->special == NULL && sign != NUMERIC_POS && sign != NUMERIC_NEG)
		return decode_fail(ctx, col, "malformed numeric sign 0x%04x", sign);
	nv->neg = (sign == NUMERIC_NEG);
	return true;
}

/* A numeric value -> decimal128(precision, scale), exactly or not at all */
static bool
append_numeric_decimal(ArrowBuilder *b, const PgColumn *col,
					   const NumericValue *nv, DecodeCtx *ctx)
{
	__int128	v;
	const char *why = NULL;
	ArrowDecimal128 d;
	ArrowError	err;

	if (nv->special != NULL)
		return decode_fail(ctx, col,
						   "numeric value %s has no decimal128 form\n"
						   "hint: use --numeric=float8 or --numeric=text", nv->special);
	if (!numeric_to_scaled(nv->digits, nv->ndigits, nv->weight, nv->neg, col->precision,
						   col->scale, &v, &why))
	{
		char		text[200];

		if (numeric_to_text(nv->digits, nv->ndigits, nv->weight, nv->neg, nv->dscale,
							text, sizeof(text)) < 0)
			snprintf(text, sizeof(text), "(%d digits)", nv->ndigits * 4);
		return decode_fail(ctx, col,
						   "numeric value %s %s decimal128(%d, %d)\n"
						   "hint: use --numeric-scale=N, --numeric=float8 or --numeric=text, or cast the column to numeric(p,s)",
						   text, why, col->precision, col->scale);
	}
	d.lo = (uint64_t) v;
	d.hi = (int64_t) (v >> 64);
	if (arrow_append_decimal(b, d, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/* A numeric value -> its text (--numeric=text) or a float8 (--numeric=float8) */
static bool
append_numeric_text(ArrowBuilder *b, const PgColumn *col,
					const NumericValue *nv, DecodeCtx *ctx)
{
	char		small[512];
	char	   *buf = NULL;
	const char *text = nv->special;
	ArrowError	err;
	int			rc;

	if (text == NULL)
	{
		size_t		cap = (size_t) (nv->weight > 0 ? nv->weight + 2 : 2) * 4 + nv->dscale + 8;

		if (cap < sizeof(small))
		{
			buf = small;
			cap = sizeof(small);
		}
		else if ((buf = malloc(cap)) == NULL)
			return decode_fail(ctx, col, "out of memory");
		if (numeric_to_text(nv->digits, nv->ndigits, nv->weight, nv->neg, nv->dscale,
							buf, cap) < 0)
		{
			if (buf != small)
				free(buf);
			return decode_fail(ctx, col, "malformed numeric value");
		}
		text = buf;
	}
	if (col->numeric_mode == NUMERIC_FLOAT8)
		rc = arrow_append_float(b, strtod(text, NULL), &err);
	else
		rc = arrow_append_bytes(b, text, strlen(text), &err);
	if (buf != small)
		free(buf);
	if (rc != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/* Decodes a numeric value (len bytes at p) into b as col's numeric mode */
static bool
decode_numeric(ArrowBuilder *b, const PgColumn *col, const char *p,
			   int32_t len, DecodeCtx *ctx)
{
	NumericValue nv = {0};

	if (!read_numeric(col, p, len, &nv, ctx))
		return false;
	if (col->numeric_mode == NUMERIC_DECIMAL)
		return append_numeric_decimal(b, col, &nv, ctx);
	return append_numeric_text(b, col, &nv, ctx);
}

/*
 * Formats a binary inet/cidr value (family, bits, is_cidr, address length,
 * address) as PostgreSQL's output function does: the address, then "/bits"
 * unless an inet value has every bit of its family (cidr always shows it).
 * Returns the length written, or -1 for a malformed value.
 */
static int
format_inet(const char *p, int32_t len, char *buf, size_t buflen)
{
	int			family,
				bits,
				is_cidr,
				nb,
				maxbits,
				n;

	if (len < 4)
		return -1;
	family = (unsigned char) p[0];
	bits = (unsigned char) p[1];
	is_cidr = p[2];
	nb = (unsigned char) p[3];
	if (family == PGSQL_AF_INET && nb == 4 && len == 8)
	{
		maxbits = 32;
		n = snprintf(buf, buflen, "%u.%u.%u.%u", (unsigned char) p[4],
					 (unsigned char) p[5], (unsigned char) p[6], (unsigned char) p[7]);
	}
	else if (family == PGSQL_AF_INET6 && nb == 16 && len == 20)
	{
		maxbits = 128;
		if (inet_ntop(AF_INET6, p + 4, buf, buflen) == NULL)
			return -1;
		n = strlen(buf);
	}
	else
		return -1;
	if (bits > maxbits)
		return -1;
	if (bits != maxbits || is_cidr)
		n += snprintf(buf + n, buflen - n, "/%d", bits);
	return n;
}

/* Index of an enum label (len bytes at p) in col's dictionary, or -1 */
static int32_t
enum_index(const PgColumn *col, const char *p, int32_t len)
{
	int32_t		lo = 0,
				hi = col->n_labels - 1;

	while (lo <= hi)
	{
		int32_t		mid = lo + (hi - lo) / 2;
		const char *label = col->labels[col->by_name[mid]];
		size_t		llen = strlen(label);
		int			c = memcmp(label, p, llen < (size_t) len ? llen : (size_t) len);

		if (c == 0)
			c = (llen > (size_t) len) - (llen < (size_t) len);
		if (c == 0)
			return col->by_name[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static bool decode_value(ArrowBuilder *b, const PgColumn *col, const char *p,
						 int32_t len, DecodeCtx *ctx);

/* A one-dimensional array value -> list (elements to the child builder) */
static bool
decode_array(ArrowBuilder *b, const PgColumn *col, const char *p,
			 int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	ArrowBuilder *child = arrow_builder_child(b, 0);
	int32_t		ndim,
				nitems = 0,
				pos;

	if (len < 12)
		return decode_fail(ctx, col, "array value of %d bytes is too short", len);
	ndim = get32(p);
	if (ndim > 1)
		return decode_fail(ctx, col,
						   "array value has %d dimensions; only one-dimensional arrays map to Arrow lists\n"
						   "hint: flatten it in the query, e.g. with unnest() or array_to_json()", ndim);
	if (ndim < 0)
		return decode_fail(ctx, col, "malformed array value");
	pos = 12;
	if (ndim == 1)
	{
		if (len < 20)
			return decode_fail(ctx, col, "array value of %d bytes is too short", len);
		nitems = get32(p + 12);
		if (nitems < 0)
			return decode_fail(ctx, col, "malformed array dimension");
		pos = 20;
	}
	if (arrow_append_valid(b, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	for (int32_t i = 0; i < nitems; i++)
	{
		int32_t		elen;

		if (len - pos < 4)
			return decode_fail(ctx, col, "array value is truncated");
		elen = get32(p + pos);
		pos += 4;
		if (elen < -1 || (elen > 0 && elen > len - pos))
			return decode_fail(ctx, col, "array element length %d is out of bounds", elen);
		if (!decode_value(child, &col->children[0], p + pos, elen, ctx))
			return false;
		if (elen > 0)
			pos += elen;
	}
	if (pos != len)
		return decode_fail(ctx, col, "array value has %d bytes after its last element", len - pos);
	if (arrow_list_end(b, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/* A composite value -> struct (attributes to the child builders) */
static bool
decode_composite(ArrowBuilder *b, const PgColumn *col, const char *p,
				 int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	int32_t		nfields,
				pos = 4;

	if (len < 4)
		return decode_fail(ctx, col, "composite value of %d bytes is too short", len);
	nfields = get32(p);
	if (nfields != col->n_children)
		return decode_fail(ctx, col, "composite value has %d attributes, its type %d",
						   nfields, col->n_children);
	if (arrow_append_valid(b, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	for (int32_t i = 0; i < nfields; i++)
	{
		int32_t		alen;

		if (len - pos < 8)
			return decode_fail(ctx, col, "composite value is truncated");
		alen = get32(p + pos + 4);	/* after the attribute's type OID */
		pos += 8;
		if (alen < -1 || (alen > 0 && alen > len - pos))
			return decode_fail(ctx, col, "attribute length %d is out of bounds", alen);
		if (!decode_value(arrow_builder_child(b, i), &col->children[i],
						  p + pos, alen, ctx))
			return false;
		if (alen > 0)
			pos += alen;
	}
	if (pos != len)
		return decode_fail(ctx, col, "composite value has %d bytes after its last attribute", len - pos);
	return true;
}

/* Checks that a fixed-size value has the expected length */
#define EXPECT_LEN(n) \
	do { \
		if (len != (n)) \
			return decode_fail(ctx, col, "value of %d bytes where %d were expected", len, (n)); \
	} while (0)

/* A float4 (also float2, cast in SQL) or float8 value -> float */
static bool
decode_float(ArrowBuilder *b, const PgColumn *col, const char *p,
			 int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	double		d;

	if (col->kind == PK_FLOAT8)
	{
		uint64_t	bits;

		EXPECT_LEN(8);
		bits = (uint64_t) get64(p);
		memcpy(&d, &bits, 8);
	}
	else
	{
		uint32_t	bits;
		float		f;

		EXPECT_LEN(4);
		bits = (uint32_t) get32(p);
		memcpy(&f, &bits, 4);
		d = f;
	}
	if (arrow_append_float(b, d, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/*
 * A date, time, timetz, timestamp(tz) or interval value -> the Arrow
 * temporal value (PostgreSQL's epoch moved to the Unix epoch; infinities
 * keep their sentinel values).  Values Arrow cannot hold are errors.
 */
static bool
decode_datetime(ArrowBuilder *b, const PgColumn *col, const char *p,
				int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	int64_t		t;

	switch (col->kind)
	{
		case PK_DATE:
			EXPECT_LEN(4);
			t = get32(p);
			if (t != INT32_MIN && t != INT32_MAX)
				t += PG_EPOCH_DAYS;
			break;
		case PK_TIME:
			EXPECT_LEN(8);
			if ((t = get64(p)) == USECS_PER_DAY)
				return decode_fail(ctx, col,
								   "time 24:00:00 is outside the range of Arrow's time64 (a day, from 00:00:00)\n"
								   "hint: cast the column to text or interval in the query");
			break;
		case PK_TIMETZ:
			EXPECT_LEN(12);
			/* the zone is seconds west of UTC: local + zone = UTC */
			t = (get64(p) + (int64_t) get32(p + 8) * 1000000) % USECS_PER_DAY;
			if (t < 0)
				t += USECS_PER_DAY;
			break;
		case PK_INTERVAL:
			EXPECT_LEN(16);
			if (__builtin_mul_overflow(get64(p), (int64_t) 1000, &t))
				return decode_fail(ctx, col,
								   "interval time part does not fit in 64-bit nanoseconds");
			if (arrow_append_interval_mdn(b, get32(p + 12), get32(p + 8), t, &err) != ARROW_OK)
				return arrow_fail(ctx, col, &err);
			return true;
		default:				/* PK_TIMESTAMP, PK_TIMESTAMPTZ */
			EXPECT_LEN(8);
			t = get64(p);
			/*
			 * A finite timestamp must stay below int64 max (that is
			 * infinity): PostgreSQL's last 29 years, from 294247-01-10
			 * 04:00:54.775807 UTC, do not fit.
			 */
			if (t != INT64_MIN && t != INT64_MAX &&
				(__builtin_add_overflow(t, PG_EPOCH_USECS, &t) || t == INT64_MAX))
				return decode_fail(ctx, col,
								   "timestamp is after 294247-01-10 04:00:54.775806, the last one Arrow's timestamp[us] holds (int64 max means infinity)\n"
								   "hint: cast the column to text in the query");
			break;
	}
	if (arrow_append_int(b, t, &err) != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/*
 * An inet/cidr or macaddr(8) value -> its text as PostgreSQL prints it, an
 * enum label -> its index in the column's dictionary.
 */
static bool
decode_formatted(ArrowBuilder *b, const PgColumn *col, const char *p,
				 int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	char		text[INET6_ADDRSTRLEN + 24];
	int			n = 0;
	int			rc;

	if (col->kind == PK_ENUM)
	{
		int32_t		idx = enum_index(col, p, len);

		if (idx < 0)
			return decode_fail(ctx, col, "enum label \"%.*s\" is not in the dictionary",
							   len > 100 ? 100 : len, p);
		rc = arrow_append_int(b, idx, &err);
	}
	else if (col->kind == PK_INET)
	{
		if ((n = format_inet(p, len, text, sizeof(text))) < 0)
			return decode_fail(ctx, col, "malformed inet value");
		rc = arrow_append_bytes(b, text, n, &err);
	}
	else						/* PK_MACADDR, PK_MACADDR8 */
	{
		EXPECT_LEN(col->kind == PK_MACADDR ? 6 : 8);
		for (int i = 0; i < len; i++)
			n += snprintf(text + n, sizeof(text) - n, i ? ":%02x" : "%02x",
						  (unsigned char) p[i]);
		rc = arrow_append_bytes(b, text, n, &err);
	}
	if (rc != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/*
 * Appends one value (len bytes at p; len -1 is NULL) of column col to
 * builder b.  The caller has checked that len bytes are readable at p.
 */
static bool
decode_value(ArrowBuilder *b, const PgColumn *col, const char *p,
			 int32_t len, DecodeCtx *ctx)
{
	ArrowError	err;
	int			rc;

	if (len == -1)
		rc = arrow_append_null(b, &err);
	else
		switch (col->kind)
		{
			case PK_BOOL:
				EXPECT_LEN(1);
				rc = arrow_append_bool(b, p[0] != 0, &err);
				break;
			case PK_INT2:
				EXPECT_LEN(2);
				rc = arrow_append_int(b, get16(p), &err);
				break;
			case PK_INT4:
				EXPECT_LEN(4);
				rc = arrow_append_int(b, get32(p), &err);
				break;
			case PK_INT8:
				EXPECT_LEN(8);
				rc = arrow_append_int(b, get64(p), &err);
				break;
			case PK_FLOAT2:
			case PK_FLOAT4:
			case PK_FLOAT8:
				return decode_float(b, col, p, len, ctx);
			case PK_NUMERIC:
				return decode_numeric(b, col, p, len, ctx);
			case PK_TEXT:
				if (col->tdict != NULL)
				{
					/* --dictionary: its index in the file's dictionary */
					int64_t		ix = text_dict_index(col->tdict, p, len, ctx->errbuf,
													 ctx->errlen);

					if (ix < 0)
						return decode_fail(ctx, col, "too many distinct values for --dictionary");
					rc = arrow_append_int(b, ix, &err);
					break;
				}
				/* FALLTHROUGH */
			case PK_BYTEA:
				rc = arrow_append_bytes(b, p, len, &err);
				break;
			case PK_JSONB:
				if (len < 1 || p[0] != 1)
					return decode_fail(ctx, col, "unknown jsonb format version");
				rc = arrow_append_bytes(b, p + 1, len - 1, &err);
				break;
			case PK_DATE:
			case PK_TIME:
			case PK_TIMETZ:
			case PK_TIMESTAMP:
			case PK_TIMESTAMPTZ:
			case PK_INTERVAL:
				return decode_datetime(b, col, p, len, ctx);
			case PK_UUID:
				EXPECT_LEN(16);
				rc = arrow_append_bytes(b, p, 16, &err);
				break;
			case PK_INET:
			case PK_MACADDR:
			case PK_MACADDR8:
			case PK_ENUM:
				return decode_formatted(b, col, p, len, ctx);
			case PK_ARRAY:
				return decode_array(b, col, p, len, ctx);
			case PK_COMPOSITE:
				return decode_composite(b, col, p, len, ctx);
			default:
				return decode_fail(ctx, col, "no decoder for this type");
		}
	if (rc != ARROW_OK)
		return arrow_fail(ctx, col, &err);
	return true;
}

/*
 * Finds the extent of the binary COPY tuple at p (avail bytes available).
 * Returns 1 with *len set for a complete tuple, 2 for the trailer (*len 2),
 * 0 when more bytes are needed, -1 (errbuf set) when the bytes cannot be a
 * tuple of n_columns fields.
 */
int
copy_tuple_length(const char *p, size_t avail, int32_t n_columns,
				  size_t *len, char *errbuf, size_t errlen)
{
	size_t		pos = 2;
	int16_t		nf;

	if (avail < 2)
		return 0;
	nf = get16(p);
	if (nf == -1)
	{
		*len = 2;
		return 2;
	}
	if (nf != n_columns)
	{
		snprintf(errbuf, errlen, "COPY tuple has %d fields where %d were expected",
				 nf, n_columns);
		return -1;
	}
	for (int i = 0; i < nf; i++)
	{
		int32_t		flen;

		if (avail - pos < 4)
			return 0;
		flen = get32(p + pos);
		pos += 4;
		if (flen < -1 || flen > MAX_VALUE_LEN)
		{
			snprintf(errbuf, errlen, "COPY field length %d is out of bounds", flen);
			return -1;
		}
		if (flen > 0)
		{
			if (avail - pos < (size_t) flen)
				return 0;
			pos += flen;
		}
	}
	*len = pos;
	return 1;
}

/*
 * Decodes one complete tuple (len bytes at tuple, as found by
 * copy_tuple_length) into bs; row is its number for messages.
 */
bool
decode_tuple(BatchState *bs, const PgColumn *columns, const char *tuple,
			 size_t len, int64_t row, char *errbuf, size_t errlen)
{
	DecodeCtx	ctx = {row, errbuf, errlen};
	size_t		pos = 2;

	for (int i = 0; i < bs->n_columns; i++)
	{
		int32_t		flen;

		if (len - pos < 4)
		{
			snprintf(errbuf, errlen, "row %lld: COPY tuple is truncated", (long long) row);
			return false;
		}
		flen = get32(tuple + pos);
		pos += 4;
		if (flen < -1 || (flen > 0 && (size_t) flen > len - pos))
		{
			snprintf(errbuf, errlen, "row %lld: COPY field length %d is out of bounds",
					 (long long) row, flen);
			return false;
		}
		if (!decode_value(bs->builders[i], &columns[i], tuple + pos, flen, &ctx))
			return false;
		if (flen > 0)
			pos += flen;
	}
	bs->n_rows++;
	return true;
}

/*
 * Sets up bs with one builder per field of schema (columns describe the
 * same fields).
 */
bool
batch_init(BatchState *bs, const ArrowSchema *schema, const PgColumn *columns,
		   char *errbuf, size_t errlen)
{
	memset(bs, 0, sizeof(*bs));
	bs->n_columns = schema->n_fields;
	bs->builders = calloc(schema->n_fields + 1, sizeof(ArrowBuilder *));
	if (bs->builders == NULL)
	{
		snprintf(errbuf, errlen, "out of memory");
		return false;
	}
	for (int i = 0; i < schema->n_fields; i++)
	{
		ArrowError	err;

		if (arrow_builder_create(&schema->fields[i], NULL, &bs->builders[i],
								 &err) != ARROW_OK)
		{
			snprintf(errbuf, errlen, "column \"%s\": %s", columns[i].name,
					 err.message);
			return false;
		}
	}
	return true;
}

/* Frees what batch_init allocated (also after a failed batch_init) */
void
batch_free(BatchState *bs)
{
	for (int i = 0; bs->builders != NULL && i < bs->n_columns; i++)
		if (bs->builders[i] != NULL)
			arrow_builder_free(bs->builders[i]);
	free(bs->builders);
	memset(bs, 0, sizeof(*bs));
}

/* Forgets the rows (after they were written), keeps the capacity */
void
batch_reset(BatchState *bs)
{
	for (int i = 0; i < bs->n_columns; i++)
		arrow_builder_reset(bs->builders[i]);
	bs->n_rows = 0;
}

/* Bytes the batch body would take now */
int64_t
batch_body_size(const BatchState *bs)
{
	int64_t		size = 0;

	for (int i = 0; i < bs->n_columns; i++)
		size += arrow_builder_body_size(bs->builders[i]);
	return size;
}

/* Formats a float statistic as doc/arrow-metadata.md says */
static void
format_float_stat(double v, char *buf, size_t len)
{
	if (isinf(v))
		snprintf(buf, len, "%s", v > 0 ? "Infinity" : "-Infinity");
	else if (v == 0 && signbit(v))
		snprintf(buf, len, "-0.0");
	else
		snprintf(buf, len, "%.17g", v);
}

/*
 * Fills md (zeroed by the caller; free with the default allocator) with the
 * pg_warp.min.N / pg_warp.max.N keys of the batch in bs, from the values
 * its builders hold (so the statistics are those of the stored values).
 */
bool
batch_stats_metadata(const BatchState *bs, const PgColumn *columns,
					 const ArrowSchema *schema, ArrowMetadata *md,
					 char *errbuf, size_t errlen)
{
	for (int i = 0; i < bs->n_columns; i++)
	{
		ArrowMinMax st;
		char		key[64],
					vmin[128],
					vmax[128];
		ArrowError	err;

		if (!columns[i].stats)
			continue;
		arrow_builder_minmax(bs->builders[i], &st);
		if (st.kind == ARROW_MINMAX_NONE)
			continue;
		if (st.kind == ARROW_MINMAX_FLOAT)
		{
			format_float_stat(st.dmin, vmin, sizeof(vmin));
			format_float_stat(st.dmax, vmax, sizeof(vmax));
		}
		else if (st.kind == ARROW_MINMAX_DECIMAL)
		{
			int32_t		scale = schema->fields[i].type.scale;

			arrow_decimal128_format(st.xmin, scale, vmin, sizeof(vmin));
			arrow_decimal128_format(st.xmax, scale, vmax, sizeof(vmax));
		}
		else
		{
			snprintf(vmin, sizeof(vmin), "%lld", (long long) st.imin);
			snprintf(vmax, sizeof(vmax), "%lld", (long long) st.imax);
		}
		snprintf(key, sizeof(key), "pg_warp.min.%d", i);
		if (arrow_metadata_set(NULL, md, key, vmin, &err) != ARROW_OK)
			goto fail;
		snprintf(key, sizeof(key), "pg_warp.max.%d", i);
		if (arrow_metadata_set(NULL, md, key, vmax, &err) != ARROW_OK)
			goto fail;
		continue;
fail:
		snprintf(errbuf, errlen, "%s", err.message);
		return false;
	}
	return true;
}
