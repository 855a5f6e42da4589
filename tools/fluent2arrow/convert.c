/*-------------------------------------------------------------------------
 *
 * convert.c
 *		fluent2arrow: one event's record (a msgpack map) into one row of its
 *		route's column builders, or into the dead-letter file.
 *
 * Every value is first converted and checked for its column (type, range,
 * UTF-8, time of day within a day, ...) into a staged value; only when the
 * whole record fits are the values appended, so a rejected record leaves no
 * partial row.  The accepted inputs per column type are listed in
 * doc/fluent2arrow.md.  A rejected event becomes one JSON line of the
 * dead-letter file: {"reason":..., "tag":..., "time":..., "record":...}.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fluent2arrow.h"

typedef struct Staged
{
	bool		set;
	bool		null;
	int64_t		i;
	uint64_t	u;
	double		d;
	ArrowDecimal128 x;
	const char *p;
	size_t		len;
} Staged;

/* Whether s[0..len) is valid UTF-8 (no overlongs, surrogates or > U+10FFFF) */
static bool
valid_utf8(const uint8_t *s, size_t len)
{
	size_t		i = 0;

	while (i < len)
	{
		uint8_t		c = s[i];
		int			n;
		uint32_t	cp;

		if (c < 0x80)
		{
			i++;
			continue;
		}
		n = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
		if (n < 0 || i + n >= len)
			return false;
		cp = c & (0x3f >> n);
		for (int k = 1; k <= n; k++)
		{
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
			cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t		era;
	int64_t		yoe,
				doy,
				doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Digits of a fixed count at *p; -1 if not */
static int
digits(const char **p, int n)
{
	int			v = 0;

	for (int i = 0; i < n; i++, (*p)++)
	{
		if (**p < '0' || **p > '9')
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

/* ".ffffff": nanoseconds (at most 9 digits kept) */
static int64_t
fraction_ns(const char **p)
{
	int64_t		ns = 0;
	int			n = 0;

	if (**p != '.')
		return 0;
	(*p)++;
	while (**p >= '0' && **p <= '9')
	{
		if (n < 9)
			ns = ns * 10 + (**p - '0'), n++;
		(*p)++;
	}
	while (n++ < 9)
		ns *= 10;
	return ns;
}

/* "HH:MM:SS[.frac]" at *p: seconds of the day and ns; false if not */
static bool
parse_hms(const char **p, int64_t *sec, int64_t *ns)
{
	int			h = digits(p, 2),
				m = (**p == ':') ? ((*p)++, digits(p, 2)) : -1,
				s = (**p == ':') ? ((*p)++, digits(p, 2)) : -1;

	if (h < 0 || h > 23 || m < 0 || m > 59 || s < 0 || s > 59)
		return false;
	*sec = h * 3600 + m * 60 + s;
	*ns = fraction_ns(p);
	return true;
}

/* "YYYY-MM-DD" at *p: days since the epoch */
static bool
parse_ymd(const char **p, int64_t *days)
{
	static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int			y = digits(p, 4),
				m = (**p == '-') ? ((*p)++, digits(p, 2)) : -1,
				d = (**p == '-') ? ((*p)++, digits(p, 2)) : -1;

	if (y < 0 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1] ||
		(m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)))
		return false;
	*days = days_from_civil(y, m, d);
	return true;
}

/* ISO 8601 "YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|+HH:MM|-HH:MM|+HHMM]" */
static bool
parse_iso(const char *s, int64_t *sec, int64_t *ns)
{
	const char *p = s;
	int64_t		days,
				tod;

	if (!parse_ymd(&p, &days) || (*p != 'T' && *p != ' ') || (p++, !parse_hms(&p, &tod, ns)))
		return false;
	*sec = days * 86400 + tod;
	if (*p == 'Z')
		p++;
	else if (*p == '+' || *p == '-')
	{
		int			sign = *p++ == '-' ? -1 : 1;
		int			hh = digits(&p, 2),
					mm;

		if (*p == ':')
			p++;
		mm = digits(&p, 2);
		if (hh < 0 || hh > 23 || mm < 0 || mm > 59)
			return false;
		*sec -= sign * (hh * 3600 + mm * 60);
	}
	return *p == '\0';
}

/* A msgpack string as a NUL-terminated copy in buf; false if too long */
static bool
str_copy(const msgpack_object *o, char *buf, size_t size)
{
	if (o->via.str.size >= size)
		return false;
	memcpy(buf, o->via.str.ptr, o->via.str.size);
	buf[o->via.str.size] = '\0';
	return true;
}

/* seconds + ns into units of per_second; false on overflow */
static bool
to_units(int64_t sec, int64_t ns, int64_t per_second, int64_t *out)
{
	if (sec > INT64_MAX / per_second - 1 || sec < INT64_MIN / per_second + 1)
		return false;
	*out = sec * per_second + ns / (1000000000 / per_second);
	return true;
}

/* An integer (or integral float, or decimal text) as int64/uint64 */
static const char *
stage_integer(const Column *c, const msgpack_object *o, Staged *s)
{
	char		buf[64],
			   *end;

	switch (o->type)
	{
		case MSGPACK_OBJECT_POSITIVE_INTEGER:
			s->u = o->via.u64;
			if (c->kind == CK_INT ? s->u > (uint64_t) c->imax : s->u > c->umax)
				return "out of range";
			s->i = (int64_t) s->u;
			return NULL;
		case MSGPACK_OBJECT_NEGATIVE_INTEGER:
			s->i = o->via.i64;
			return c->kind == CK_UINT || s->i < c->imin ? "out of range" : NULL;
		case MSGPACK_OBJECT_FLOAT32:
		case MSGPACK_OBJECT_FLOAT64:
			if (o->via.f64 != floor(o->via.f64) || !(fabs(o->via.f64) < 9.2e18))
				return "not an integer";
			if (o->via.f64 < 0 ? c->kind == CK_UINT || o->via.f64 < (double) c->imin :
				(c->kind == CK_INT ? o->via.f64 > (double) c->imax : o->via.f64 > (double) c->umax))
				return "out of range";
			s->i = (int64_t) o->via.f64;
			s->u = (uint64_t) s->i;
			return NULL;
		case MSGPACK_OBJECT_STR:
			if (!str_copy(o, buf, sizeof(buf)) || buf[0] == '\0')
				return "not an integer";
			errno = 0;
			if (c->kind == CK_INT)
				s->i = strtoll(buf, &end, 10), s->u = (uint64_t) s->i;
			else
				s->u = strtoull(buf, &end, 10), s->i = (int64_t) s->u;
			if (*end != '\0')
				return "not an integer";
			if (errno == ERANGE || (c->kind == CK_INT ? s->i < c->imin || s->i > c->imax :
									 buf[0] == '-' || s->u > c->umax))
				return "out of range";
			return NULL;
		default:
			return "wrong type for an integer column";
	}
}

/* Floats: numbers or decimal text; checked against float16/32 range */
static const char *
stage_float(const Column *c, const msgpack_object *o, Staged *s)
{
	char		buf[64],
			   *end;

	if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64)
		s->d = o->via.f64;
	else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		s->d = (double) o->via.u64;
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		s->d = (double) o->via.i64;
	else if (o->type == MSGPACK_OBJECT_STR)
	{
		if (!str_copy(o, buf, sizeof(buf)) || buf[0] == '\0')
			return "not a number";
		s->d = strtod(buf, &end);
		if (*end != '\0')
			return "not a number";
	}
	else
		return "wrong type for a float column";
	if (isfinite(s->d) && ((c->type.id == ARROW_TYPE_FLOAT16 && fabs(s->d) >= 65520.0) ||
						   (c->type.id == ARROW_TYPE_FLOAT32 && isinf((float) s->d))))
		return "out of range";
	return NULL;
}

static const char *
stage_decimal(const Column *c, const msgpack_object *o, Staged *s)
{
	char		buf[128];
	ArrowError	err;

	if (o->type == MSGPACK_OBJECT_STR)
	{
		if (!str_copy(o, buf, sizeof(buf)))
			return "not a decimal number";
	}
	else if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long) o->via.u64);
	else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		snprintf(buf, sizeof(buf), "%lld", (long long) o->via.i64);
	else if ((o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) &&
			 fabs(o->via.f64) < 1e38)
		snprintf(buf, sizeof(buf), "%.*f", c->type.scale, o->via.f64);
	else
		return "wrong type for a decimal column";
	if (arrow_decimal128_parse(buf, c->type.precision, c->type.scale, &s->x, &err) != ARROW_OK)
		return "does not fit the decimal's precision and scale";
	return NULL;
}

/* Dates, timestamps and times of day */
static const char *
stage_time(const Column *c, const msgpack_object *o, Staged *s)
{
	char		buf[64];
	int64_t		sec,
				ns;
	const char *p = buf;

	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER || o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
	{
		if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 > INT64_MAX)
			return "out of range";
		s->i = o->via.i64;
		if (c->kind == CK_DATE && c->type.id == ARROW_TYPE_DATE32 && (s->i < INT32_MIN || s->i > INT32_MAX))
			return "out of range";
		/* Arrow's date64 holds whole days in milliseconds (Schema.fbs) */
		if (c->kind == CK_DATE && c->type.id == ARROW_TYPE_DATE64 && s->i % 86400000 != 0)
			return "not a whole number of days in milliseconds";
	}
	else if (c->kind == CK_TIMESTAMP && o->type == MSGPACK_OBJECT_EXT && ext_time(o, &sec, &ns))
	{
		if (!to_units(sec, ns, c->per_second, &s->i))
			return "out of range";
	}
	else if (c->kind == CK_TIMESTAMP && (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32))
	{
		if (!(fabs(o->via.f64) < 9.0e15))
			return "out of range";
		sec = (int64_t) floor(o->via.f64);
		if (!to_units(sec, (int64_t) ((o->via.f64 - sec) * 1e9), c->per_second, &s->i))
			return "out of range";
	}
	else if (o->type == MSGPACK_OBJECT_STR && str_copy(o, buf, sizeof(buf)))
	{
		if (c->kind == CK_DATE)
		{
			if (!parse_ymd(&p, &s->i) || *p != '\0')
				return "not a date (YYYY-MM-DD)";
			if (c->type.id == ARROW_TYPE_DATE64)
				s->i *= 86400000;
		}
		else if (c->kind == CK_TIMEOFDAY)
		{
			if (!parse_hms(&p, &sec, &ns) || *p != '\0')
				return "not a time of day (HH:MM:SS[.fraction])";
			to_units(sec, ns, c->per_second, &s->i);
		}
		else if (!parse_iso(buf, &sec, &ns) || !to_units(sec, ns, c->per_second, &s->i))
			return "not an ISO 8601 timestamp";
	}
	else
		return "wrong type for a date or time column";
	if (c->kind == CK_TIMEOFDAY && (s->i < 0 || s->i >= 86400 * c->per_second))
		return "time of day out of range";
	return NULL;
}

/* Stages one value for column c; NULL, or why it does not fit */
static const char *
stage_value(const Column *c, const msgpack_object *o, Staged *s)
{
	s->null = o->type == MSGPACK_OBJECT_NIL;
	if (s->null)
		return c->required ? "null for a required column" : NULL;
	switch (c->kind)
	{
		case CK_BOOL:
			if (o->type != MSGPACK_OBJECT_BOOLEAN)
				return "wrong type for a bool column";
			s->i = o->via.boolean;
			return NULL;
		case CK_INT:
		case CK_UINT:
			return stage_integer(c, o, s);
		case CK_FLOAT:
			return stage_float(c, o, s);
		case CK_DECIMAL:
			return stage_decimal(c, o, s);
		case CK_UTF8:
		case CK_BINARY:
			if (o->type != MSGPACK_OBJECT_STR && o->type != MSGPACK_OBJECT_BIN)
				return c->kind == CK_UTF8 ? "wrong type for a utf8 column" : "wrong type for a binary column";
			s->p = o->via.str.ptr;
			s->len = o->via.str.size;
			if (c->kind == CK_UTF8 && !valid_utf8((const uint8_t *) s->p, s->len))
				return "invalid UTF-8";
			if (c->type.id == ARROW_TYPE_FIXED_SIZE_BINARY && s->len != (size_t) c->type.byte_width)
				return "wrong length for a fixed_size_binary column";
			return NULL;
		default:
			return stage_time(c, o, s);
	}
}

/* The column named by key k (using the route's hint for position i) */
static int
find_column(Route *r, int i, const msgpack_object *k)
{
	const char *name = k->via.str.ptr;
	size_t		len = k->via.str.size;

	if (i < r->n_hint)
	{
		const Column *c = &r->columns[r->key_hint[i]];

		if (c->name_len == len && memcmp(c->name, name, len) == 0)
			return r->key_hint[i];
	}
	for (int j = 0; j < r->n_columns; j++)
		if (r->columns[j].name_len == len && memcmp(r->columns[j].name, name, len) == 0)
		{
			if (i >= r->n_hint && i < 4096)
			{
				r->key_hint = xrealloc(r->key_hint, sizeof(uint16_t) * (i + 1));
				while (r->n_hint <= i)
					r->key_hint[r->n_hint++] = 0;
			}
			if (i < r->n_hint)
				r->key_hint[i] = (uint16_t) j;
			return j;
		}
	return -1;
}

/* Appends staged value s to column c's builder */
static int
append_staged(ArrowBuilder *b, const Column *c, const Staged *s, ArrowError *err)
{
	if (!s->set || s->null)
		return arrow_append_null(b, err);
	switch (c->kind)
	{
		case CK_BOOL:
			return arrow_append_bool(b, s->i != 0, err);
		case CK_UINT:
			return arrow_append_uint(b, s->u, err);
		case CK_FLOAT:
			return arrow_append_float(b, s->d, err);
		case CK_DECIMAL:
			return arrow_append_decimal(b, s->x, err);
		case CK_TAG:
		case CK_UTF8:
		case CK_BINARY:
			return arrow_append_bytes(b, s->p, s->len, err);
		default:
			return arrow_append_int(b, s->i, err);
	}
}

/* Stages every key of the record; NULL, or the reason to reject it */
static const char *
stage_record(Route *r, const msgpack_object *record, Staged *st, char *why, size_t whylen)
{
	for (uint32_t i = 0; i < record->via.map.size; i++)
	{
		const msgpack_object *k = &record->via.map.ptr[i].key;
		const char *bad;
		int			j;

		if (k->type != MSGPACK_OBJECT_STR)
			return "record key is not a string";
		j = find_column(r, (int) i, k);
		if (j < 0 || r->columns[j].kind == CK_TAG || r->columns[j].kind == CK_TIME)
		{
			if (!r->strict)
				continue;
			snprintf(why, whylen, "unknown key \"%.*s\"", (int) (k->via.str.size > 100 ? 100 : k->via.str.size), k->via.str.ptr);
			return why;
		}
		if (st[j].set)
			return snprintf(why, whylen, "key \"%s\" twice", r->columns[j].name), why;
		st[j].set = true;
		bad = stage_value(&r->columns[j], &record->via.map.ptr[i].val, &st[j]);
		if (bad)
			return snprintf(why, whylen, "column \"%s\": %s", r->columns[j].name, bad), why;
	}
	for (int j = 0; j < r->n_columns; j++)
		if (!st[j].set && r->columns[j].required)
			return snprintf(why, whylen, "column \"%s\": required key missing", r->columns[j].name), why;
	return NULL;
}

/* One event into a row of route's builders, or the dead-letter file */
bool
convert_event(Route *r, const char *tag, size_t tag_len, int64_t time_us,
			  const msgpack_object *record)
{
	static Staged *st;
	static int	n_st;
	char		why[300];
	const char *bad;
	ArrowError	err;

	if (record->type != MSGPACK_OBJECT_MAP)
	{
		deadletter("record is not a map", tag, tag_len, time_us, record);
		return false;
	}
	if (n_st < r->n_columns)
		st = xrealloc(st, sizeof(Staged) * (n_st = r->n_columns));
	memset(st, 0, sizeof(Staged) * r->n_columns);
	for (int j = 0; j < r->n_columns; j++)
	{
		if (r->columns[j].kind == CK_TAG)
		{
			st[j].set = true;
			st[j].p = tag, st[j].len = tag_len;
			if (!valid_utf8((const uint8_t *) tag, tag_len))
				return deadletter("tag is not valid UTF-8", tag, tag_len, time_us, record), false;
		}
		else if (r->columns[j].kind == CK_TIME)
			st[j].set = true, st[j].i = time_us;
	}
	if ((bad = stage_record(r, record, st, why, sizeof(why))) != NULL)
	{
		deadletter(bad, tag, tag_len, time_us, record);
		return false;
	}
	for (int j = 0; j < r->n_columns; j++)
		if (append_staged(r->builders[j], &r->columns[j], &st[j], &err) != ARROW_OK)
		{
			/* cannot happen: staging checked what the builder checks */
			logmsg("route \"%s\", column \"%s\": %s", r->name, r->columns[j].name, err.message);
			abort();
		}
	return true;
}

/* ------------------------------------------------------------------------
 * The dead-letter file
 * ------------------------------------------------------------------------
 */
static int	dl_fd = -1;
static ArrowStrBuf dl_buf;
static bool dl_dirty;
static bool dl_failed;			/* a write or fsync failed: keep the spool */

static void
put(const char *s, size_t len)
{
	ArrowError	err;

	if (arrow_strbuf_append(&dl_buf, s, len, &err) != ARROW_OK)
		fatal("out of memory");
}

#define PUTS(s) put(s, strlen(s))

/* A JSON string of bytes (invalid UTF-8 bytes as \u00XX) */
static void
json_string(const char *s, size_t len)
{
	bool		utf8 = valid_utf8((const uint8_t *) s, len);

	put("\"", 1);
	for (size_t i = 0; i < len; i++)
	{
		unsigned char c = s[i];
		char		esc[8];

		if (c == '"' || c == '\\')
		{
			esc[0] = '\\', esc[1] = c;
			put(esc, 2);
		}
		else if (c < 0x20 || (c >= 0x80 && !utf8))
		{
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			put(esc, 6);
		}
		else
			put((const char *) &c, 1);
	}
	put("\"", 1);
}

/* The JSON form of a msgpack object (bin as a string, ext as {"ext":type,"data":...}) */
static void
json_value(const msgpack_object *o)
{
	char		num[64];

	switch (o->type)
	{
		case MSGPACK_OBJECT_NIL:
			PUTS("null");
			break;
		case MSGPACK_OBJECT_BOOLEAN:
			PUTS(o->via.boolean ? "true" : "false");
			break;
		case MSGPACK_OBJECT_POSITIVE_INTEGER:
			snprintf(num, sizeof(num), "%llu", (unsigned long long) o->via.u64);
			PUTS(num);
			break;
		case MSGPACK_OBJECT_NEGATIVE_INTEGER:
			snprintf(num, sizeof(num), "%lld", (long long) o->via.i64);
			PUTS(num);
			break;
		case MSGPACK_OBJECT_FLOAT32:
		case MSGPACK_OBJECT_FLOAT64:
			snprintf(num, sizeof(num), isfinite(o->via.f64) ? "%.17g" : "\"%g\"", o->via.f64);
			if (isfinite(o->via.f64) && strpbrk(num, ".e") == NULL)
				strcat(num, ".0");	/* stays a float in JSON readers */
			PUTS(num);
			break;
		case MSGPACK_OBJECT_STR:
		case MSGPACK_OBJECT_BIN:
			json_string(o->via.str.ptr, o->via.str.size);
			break;
		case MSGPACK_OBJECT_EXT:
			snprintf(num, sizeof(num), "{\"ext\":%d,\"data\":", o->via.ext.type);
			PUTS(num);
			json_string(o->via.ext.ptr, o->via.ext.size);
			PUTS("}");
			break;
		case MSGPACK_OBJECT_ARRAY:
			PUTS("[");
			for (uint32_t i = 0; i < o->via.array.size; i++)
			{
				if (i)
					PUTS(",");
				json_value(&o->via.array.ptr[i]);
			}
			PUTS("]");
			break;
		case MSGPACK_OBJECT_MAP:
			PUTS("{");
			for (uint32_t i = 0; i < o->via.map.size; i++)
			{
				const msgpack_object *k = &o->via.map.ptr[i].key;

				if (i)
					PUTS(",");
				if (k->type == MSGPACK_OBJECT_STR || k->type == MSGPACK_OBJECT_BIN)
					json_value(k);
				else
				{
					size_t		at = dl_buf.len;

					json_value(k);	/* a non-string key, as a string of its JSON */
					{
						char	   *copy = xstrndup(dl_buf.data + at, dl_buf.len - at);

						dl_buf.len = at;
						json_string(copy, strlen(copy));
						free(copy);
					}
				}
				PUTS(":");
				json_value(&o->via.map.ptr[i].val);
			}
			PUTS("}");
			break;
	}
}

/* Writes what is buffered */
static void
dl_flush(void)
{
	size_t		off = 0;

	while (off < dl_buf.len)
	{
		ssize_t		n = write(dl_fd, dl_buf.data + off, dl_buf.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			logmsg("cannot write the dead-letter file: %s; the spool is kept until the next start",
				   strerror(errno));
			dl_failed = true;
			break;
		}
		off += n;
	}
	dl_buf.len = 0;
}

/* One dead-letter line; time_obj (if not NULL) stands for time_us */
static void
dl_line(const char *reason, const char *tag, size_t tag_len, int64_t time_us,
		const msgpack_object *time_obj, const msgpack_object *record)
{
	char		t[64];

	g_count.rejects++;
	PUTS("{\"reason\":");
	json_string(reason, strlen(reason));
	PUTS(",\"tag\":");
	json_string(tag, tag_len);
	PUTS(",\"time\":");
	if (time_obj)
		json_value(time_obj);
	else
	{
		snprintf(t, sizeof(t), "%.6f", time_us / 1e6);
		PUTS(t);
	}
	PUTS(",\"record\":");
	if (record)
		json_value(record);
	else
		PUTS("null");
	PUTS("}\n");
	dl_dirty = true;
	if (dl_buf.len >= 65536)
		dl_flush();
}

/* One dead-letter line */
void
deadletter(const char *reason, const char *tag, size_t tag_len,
		   int64_t time_us, const msgpack_object *record)
{
	dl_line(reason, tag, tag_len, time_us, NULL, record);
}

/* One dead-letter line whose "time" is the invalid time as it came */
void
deadletter_bad_time(const char *reason, const char *tag, size_t tag_len,
					const msgpack_object *time, const msgpack_object *record)
{
	dl_line(reason, tag, tag_len, 0, time, record);
}

bool
deadletter_open(const char *path, char *errbuf, size_t errlen)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0)
		return snprintf(errbuf, errlen, "cannot open the dead-letter file \"%s\": %s", path, strerror(errno)), false;
	if (dl_fd >= 0)
	{
		deadletter_sync();		/* a checkpoint may count on its lines */
		close(dl_fd);
	}
	dl_fd = fd;
	dl_buf.alloc = NULL;
	return true;
}

/*
 * Writes and fdatasyncs the dead-letter lines (before WAL segments go).
 * false once any dead letter could not be written or synced: the frames
 * that made them must then stay in the spool (replayed at the next start).
 */
bool
deadletter_sync(void)
{
	if (dl_fd < 0 || !dl_dirty)
		return !dl_failed;
	dl_flush();
	if (!dl_failed && fdatasync(dl_fd) != 0)
	{
		logmsg("cannot fsync the dead-letter file: %s; the spool is kept until the next start",
			   strerror(errno));
		dl_failed = true;
	}
	dl_dirty = false;
	return !dl_failed;
}

void
deadletter_close(void)
{
	deadletter_sync();
	if (dl_fd >= 0)
		close(dl_fd);
	dl_fd = -1;
	arrow_strbuf_free(&dl_buf);
}
