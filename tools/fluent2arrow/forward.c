/*-------------------------------------------------------------------------
 *
 * forward.c
 *		fluent2arrow: the Forward protocol's frames (Fluentd's forward
 *		protocol specification v1): decoding the four carrier modes into
 *		events:
 *			Message					[tag, time, record, option?]
 *			Forward					[tag, [[time, record], ...], option?]
 *			PackedForward			[tag, bin/str of msgpack [time, record]
 *									entries, option?]
 *			CompressedPackedForward	the same, gzip (option compressed: gzip)
 *		The option "compressed" is "gzip", or "text" (or absent) for plain
 *		entries; it matters in PackedForward mode only.  Each event has a
 *		position (WalPos: its frame's WAL position, its index in the frame)
 *		that files and checkpoints refer to; a replay skips the events
 *		before the spool's checkpoint.
 *		Times are integers (seconds), EventTime (ext type 0: big-endian
 *		uint32 seconds and nanoseconds) or floats (seconds).  Where a frame
 *		ends in the byte stream is frame.c's business.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>
#include <zlib.h>

#include "fluent2arrow.h"


/* An event time as microseconds since the epoch; false if not a time */
static bool
event_time(const msgpack_object *o, int64_t *us)
{
	switch (o->type)
	{
		case MSGPACK_OBJECT_POSITIVE_INTEGER:
			if (o->via.u64 > INT64_MAX / 1000000)
				return false;
			*us = (int64_t) o->via.u64 * 1000000;
			return true;
		case MSGPACK_OBJECT_NEGATIVE_INTEGER:
			if (o->via.i64 < INT64_MIN / 1000000)
				return false;
			*us = o->via.i64 * 1000000;
			return true;
		case MSGPACK_OBJECT_FLOAT32:
		case MSGPACK_OBJECT_FLOAT64:
			if (!(o->via.f64 > -9.2e12 && o->via.f64 < 9.2e12))
				return false;
			*us = (int64_t) (o->via.f64 * 1e6);
			return true;
		case MSGPACK_OBJECT_EXT:
			{
				int64_t		sec,
							ns;

				if (!ext_time(o, &sec, &ns) || sec > INT64_MAX / 1000000 - 1 ||
					sec < INT64_MIN / 1000000 + 1)
					return false;
				*us = sec * 1000000 + ns / 1000;
				return true;
			}
		default:
			return false;
	}
}

/* The route of tag, remembering the last one asked for */
static Route *
route_of(const char *tag, size_t len)
{
	static unsigned gen = UINT32_MAX;
	static char last[256];
	static size_t last_len = SIZE_MAX;
	static Route *last_route;

	if (gen == g_cfg_generation && len == last_len && memcmp(tag, last, len) == 0)
		return last_route;
	last_route = config_route(g_cfg, tag, len);
	gen = g_cfg_generation;
	if (len < sizeof(last))
	{
		memcpy(last, tag, len);
		last_len = len;
	}
	else
		last_len = SIZE_MAX;
	return last_route;
}

/* One [time, record] entry (or a Message-mode event) */
static void
one_event(const char *tag, size_t tag_len, const msgpack_object *time,
		  const msgpack_object *record, WalPos pos)
{
	int64_t		us = 0;
	Route	   *route;

	if (!event_time(time, &us))
	{
		deadletter_bad_time("invalid event time", tag, tag_len, time, record);
		return;
	}
	route = route_of(tag, tag_len);
	if (route == NULL)
	{
		deadletter("no route matches the tag", tag, tag_len, us, record);
		return;
	}
	if (convert_event(route, tag, tag_len, us, record))
		output_row_added(route, pos);
}

/* An entry of Forward or PackedForward mode: [time, record] */
static void
one_entry(const char *tag, size_t tag_len, const msgpack_object *e)
{
	WalPos		pos;

	if (!wal_next_event(&pos))
		return;
	if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 2)
	{
		deadletter("entry is not a [time, record] array", tag, tag_len, 0, e);
		return;
	}
	/* Fluent Bit's events with metadata: [[time, metadata], record] */
	if (e->via.array.ptr[0].type == MSGPACK_OBJECT_ARRAY && e->via.array.ptr[0].via.array.size == 2)
		one_event(tag, tag_len, &e->via.array.ptr[0].via.array.ptr[0], &e->via.array.ptr[1], pos);
	else
		one_event(tag, tag_len, &e->via.array.ptr[0], &e->via.array.ptr[1], pos);
}

/*
 * Decompresses gzip data (one or more members) into a buffer reused from
 * call to call, of at most 'limit' bytes.  NULL (why in errbuf) on failure.
 */
static const uint8_t *
gunzip(const uint8_t *in, size_t in_len, size_t limit, size_t *out_len,
	   char *errbuf, size_t errlen)
{
	static uint8_t *buf;
	static size_t cap;
	z_stream	zs;
	int			rc = Z_OK;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return snprintf(errbuf, errlen, "cannot start gzip decompression"), NULL;
	zs.next_in = (Bytef *) in;
	zs.avail_in = (uInt) in_len;
	*out_len = 0;
	while (zs.avail_in > 0)
	{
		if (*out_len == cap)
		{
			if (cap >= limit)
			{
				inflateEnd(&zs);
				return snprintf(errbuf, errlen, "gzip data inflates past %zu bytes", limit), NULL;
			}
			cap = cap == 0 ? 1 << 20 : cap * 2 > limit ? limit : cap * 2;
			buf = xrealloc(buf, cap);
		}
		zs.next_out = buf + *out_len;
		zs.avail_out = (uInt) (cap - *out_len);
		rc = inflate(&zs, Z_NO_FLUSH);
		*out_len = cap - zs.avail_out;
		if (rc == Z_STREAM_END && zs.avail_in > 0)
			rc = inflateReset(&zs);
		else if (rc != Z_OK && rc != Z_STREAM_END && !(rc == Z_BUF_ERROR && zs.avail_out == 0))
			break;
		if (rc == Z_STREAM_END)
			break;
	}
	inflateEnd(&zs);
	if (rc != Z_STREAM_END)
		return snprintf(errbuf, errlen, "invalid or truncated gzip data"), NULL;
	return buf;
}

/* The entries of PackedForward mode, one msgpack object after another */
static void
packed_entries(const char *tag, size_t tag_len, const uint8_t *data, size_t len)
{
	static msgpack_unpacked ent;
	static bool init;
	size_t		off = 0;

	if (!init)
		msgpack_unpacked_init(&ent), init = true;
	while (off < len)
	{
		size_t		before = off,
					ent_len = 0;
		FrameScan	scan;
		char		why[512],
					scan_why[160];
		int			r;
		msgpack_object rest;
		WalPos		pos;

		/* the entry's extent first: its objects stay within max_frame */
		memset(&scan, 0, sizeof(scan));
		scan.any = true;
		r = frame_scan(&scan, data + off, len - off, g_cfg->max_frame, &ent_len,
					   scan_why, sizeof(scan_why));
		if (r == 1)
		{
			int			rc = msgpack_unpack_next(&ent, (const char *) data, off + ent_len, &off);

			if (rc == MSGPACK_UNPACK_SUCCESS)
			{
				one_entry(tag, tag_len, &ent.data);
				continue;
			}
			snprintf(scan_why, sizeof(scan_why), "invalid msgpack");
		}
		/* the rest of the stream (up to max_frame bytes) is one dead letter */
		rest.type = MSGPACK_OBJECT_BIN;
		rest.via.bin.ptr = (const char *) data + before;
		rest.via.bin.size = (uint32_t) (len - before < (size_t) g_cfg->max_frame ?
										 len - before : (size_t) g_cfg->max_frame);
		snprintf(why, sizeof(why), "%s entry stream at byte %zu of %zu (%s); record: %s",
				 r == 0 ? "truncated" : "malformed", before, len,
				 r == 0 ? "ends inside an entry" : scan_why,
				 rest.via.bin.size == len - before ? "the rest of the stream" :
				 "the first max_frame bytes of the rest of the stream");
		if (wal_next_event(&pos))
			deadletter(why, tag, tag_len, 0, &rest);
		break;
	}
}

/* How a PackedForward stream's bytes are encoded (option "compressed") */
typedef enum Encoding
{
	ENC_TEXT,					/* no option, or "text" (Fluentd's default) */
	ENC_GZIP,					/* "gzip": CompressedPackedForward */
	ENC_OTHER					/* anything else (Fluentd's "zstd", ...) */
} Encoding;

/* Whether the msgpack string o is the C string s */
static bool
str_is(const msgpack_object *o, const char *s)
{
	size_t		n = strlen(s);

	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == n &&
		memcmp(o->via.str.ptr, s, n) == 0;
}

/*
 * Reads the option map (opt may be NULL or nil).  The specification (v1)
 * defines "chunk" (the ack token), "size" (the number of events: a hint,
 * not checked) and "compressed"; Fluentd sends "compressed": "text" on
 * every chunk that is not gzipped, and Fluent Bit adds "fluent_signal",
 * "metadata" and keys of its own.  Keys other than chunk and compressed
 * are ignored, as the specification asks.  *enc gets the encoding named
 * by "compressed" (the caller decides whether it matters).  false (why in
 * errbuf) when the option is not a map or chunk is not a short string.
 */
static bool
read_option(const msgpack_object *opt, FrameResult *res, Encoding *enc,
			char *errbuf, size_t errlen)
{
	*enc = ENC_TEXT;
	if (opt == NULL || opt->type == MSGPACK_OBJECT_NIL)
		return true;
	if (opt->type != MSGPACK_OBJECT_MAP)
		return snprintf(errbuf, errlen, "option is not a map"), false;
	for (uint32_t i = 0; i < opt->via.map.size; i++)
	{
		const msgpack_object *k = &opt->via.map.ptr[i].key;
		const msgpack_object *v = &opt->via.map.ptr[i].val;

		if (str_is(k, "chunk"))
		{
			if (v->type != MSGPACK_OBJECT_STR || v->via.str.size >= sizeof(res->chunk))
				return snprintf(errbuf, errlen, "option chunk is not a string of at most %zu bytes", sizeof(res->chunk) - 1), false;
			memcpy(res->chunk, v->via.str.ptr, v->via.str.size);
			res->chunk[v->via.str.size] = '\0';
			res->has_chunk = true;
		}
		else if (str_is(k, "compressed"))
		{
			*enc = str_is(v, "gzip") ? ENC_GZIP : str_is(v, "text") ? ENC_TEXT : ENC_OTHER;
			if (*enc == ENC_OTHER && v->type == MSGPACK_OBJECT_STR)
				snprintf(errbuf, errlen, "option compressed \"%.*s\" is not supported (only \"gzip\" and \"text\")",
						 (int) (v->via.str.size < 32 ? v->via.str.size : 32), v->via.str.ptr);
			else if (*enc == ENC_OTHER)
				snprintf(errbuf, errlen, "option compressed is not a string");
		}
	}
	return true;
}

/* Decodes one data frame; see fluent2arrow.h */
bool
forward_frame(const msgpack_object *frame, uint64_t lsn, FrameResult *res,
			  char *errbuf, size_t errlen)
{
	const msgpack_object *a;
	uint32_t	n;
	const char *tag;
	size_t		tag_len;
	const msgpack_object *opt;
	Encoding	enc;
	WalPos		pos;

	memset(res, 0, sizeof(*res));
	wal_frame_start(lsn);
	if (frame->type != MSGPACK_OBJECT_ARRAY)
		return snprintf(errbuf, errlen, "a frame must be an array"), false;
	a = frame->via.array.ptr;
	n = frame->via.array.size;
	if (n < 2 || n > 4 || a[0].type != MSGPACK_OBJECT_STR)
		return snprintf(errbuf, errlen, "a frame must be an array of 2 to 4 items starting with the tag"), false;
	tag = a[0].via.str.ptr;
	tag_len = a[0].via.str.size;
	if (a[1].type == MSGPACK_OBJECT_ARRAY)	/* Forward */
	{
		opt = n >= 3 ? &a[2] : NULL;
		if (n > 3 || !read_option(opt, res, &enc, errbuf, errlen))
			return n > 3 ? (snprintf(errbuf, errlen, "Forward mode frame of %u items", n), false) : false;
		for (uint32_t i = 0; i < a[1].via.array.size; i++)
			one_entry(tag, tag_len, &a[1].via.array.ptr[i]);
		return true;
	}
	if (a[1].type == MSGPACK_OBJECT_STR || a[1].type == MSGPACK_OBJECT_BIN)	/* PackedForward */
	{
		const uint8_t *data = (const uint8_t *) a[1].via.bin.ptr;
		size_t		len = a[1].via.bin.size;

		opt = n >= 3 ? &a[2] : NULL;
		if (n > 3)
			return snprintf(errbuf, errlen, "PackedForward mode frame of %u items", n), false;
		if (!read_option(opt, res, &enc, errbuf, errlen))
			return false;
		if (enc == ENC_OTHER)
			return false;		/* read_option said why */
		if (enc == ENC_GZIP && (data = gunzip(data, len, 8 * (size_t) g_cfg->max_frame, &len, errbuf, errlen)) == NULL)
			return false;
		packed_entries(tag, tag_len, data, len);
		return true;
	}
	/* Message: [tag, time, record, option?] */
	if (n < 3)
		return snprintf(errbuf, errlen, "Message mode frame without a record"), false;
	if (!read_option(n == 4 ? &a[3] : NULL, res, &enc, errbuf, errlen))
		return false;
	if (wal_next_event(&pos))
		one_event(tag, tag_len, &a[1], &a[2], pos);
	return true;
}
