/*-------------------------------------------------------------------------
 *
 * frame.c
 *		fluent2arrow: where a msgpack frame ends in a byte stream.
 *
 * frame_scan walks the msgpack headers of a frame as its bytes arrive,
 * keeping how many objects each open array or map still owes, so that a
 * frame is parsed only once it is whole, a frame that announces more than
 * max_frame bytes (a huge string, bin or element count) is refused before
 * its bytes are buffered, and the scan resumes where it stopped when more
 * bytes come (no quadratic re-parsing of a large frame).  No allocation,
 * no dependencies: the unit test test/c/test_fluent_frame.c includes it.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <string.h>

#include "fluent2arrow.h"

/* Big-endian unsigned integer of n bytes */
uint64_t
be(const uint8_t *p, int n)
{
	uint64_t	v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/*
 * Size of the msgpack object header at p (*hdr) and of its payload (*body),
 * and the number of objects it contains (*count).  false for 0xc1, the one
 * byte that is never valid.  len: bytes available (>= 1); *hdr may exceed it.
 */
static bool
object_header(const uint8_t *p, size_t len, size_t *hdr, uint64_t *body,
			  uint64_t *count)
{
	uint8_t		b = p[0];
	static const uint8_t fixed[] = {	/* 0xc0..0xdf: header bytes */
		1, 0, 1, 1, 2, 3, 5, 3, 4, 6, 5, 9, 2, 3, 5, 9,
		2, 3, 5, 9, 3, 4, 6, 10, 18, 2, 3, 5, 3, 5, 3, 5};

	*body = 0;
	*count = 0;
	*hdr = 1;
	if (b <= 0x7f || b >= 0xe0)
		return true;
	if (b <= 0x8f)
		return *count = 2 * (b & 0x0f), true;
	if (b <= 0x9f)
		return *count = b & 0x0f, true;
	if (b <= 0xbf)
		return *body = b & 0x1f, true;
	if (b == 0xc1)
		return false;
	*hdr = fixed[b - 0xc0];
	if (*hdr > len)
		return true;			/* the caller waits for more bytes */
	switch (b)
	{
		case 0xc4: case 0xc5: case 0xc6:	/* bin 8/16/32 */
			*body = be(p + 1, *hdr - 1);
			break;
		case 0xc7: case 0xc8: case 0xc9:	/* ext 8/16/32: + type byte */
			*body = be(p + 1, *hdr - 2);
			break;
		case 0xd9: case 0xda: case 0xdb:	/* str 8/16/32 */
			*body = be(p + 1, *hdr - 1);
			break;
		case 0xdc: case 0xdd:
			*count = be(p + 1, *hdr - 1);
			break;
		case 0xde: case 0xdf:
			*count = 2 * be(p + 1, *hdr - 1);
			break;
		default:
			break;				/* fixed size */
	}
	return true;
}

/* Advances the scan; see fluent2arrow.h */
int
frame_scan(FrameScan *st, const uint8_t *buf, size_t len, int64_t max_frame,
		   size_t *frame_len, char *errbuf, size_t errlen)
{
	for (;;)
	{
		size_t		hdr;
		uint64_t	body,
					count;

		if (st->started && st->depth == 0)
		{
			*frame_len = st->pos;
			return 1;
		}
		if (st->pos >= len)
			return 0;
		if (!st->started && !st->any && !((buf[0] >= 0x90 && buf[0] <= 0x9f) || buf[0] == 0xdc || buf[0] == 0xdd))
			return snprintf(errbuf, errlen, "a frame must be a msgpack array (first byte 0x%02x)", buf[0]), -1;
		if (!object_header(buf + st->pos, len - st->pos, &hdr, &body, &count))
			return snprintf(errbuf, errlen, "invalid msgpack byte 0xc1 at offset %zu", st->pos), -1;
		if (body > (uint64_t) max_frame || st->pos + hdr + body > (uint64_t) max_frame ||
			count > (uint64_t) max_frame || count > UINT32_MAX)
			return snprintf(errbuf, errlen, "frame larger than max_frame (%lld bytes)", (long long) max_frame), -1;
		if (st->pos + hdr + body > len)
			return 0;
		st->pos += hdr + body;
		st->started = true;
		if (st->depth > 0)
			st->left[st->depth - 1]--;
		if (count > 0)
		{
			if (st->depth == SCAN_MAX_DEPTH)
				return snprintf(errbuf, errlen, "frame nested deeper than %d levels", SCAN_MAX_DEPTH), -1;
			st->left[st->depth++] = (uint32_t) count;
		}
		while (st->depth > 0 && st->left[st->depth - 1] == 0)
			st->depth--;
	}
}

/*
 * Seconds and nanoseconds of a time extension: Fluentd's EventTime (type 0:
 * big-endian uint32 seconds, uint32 nanoseconds) or msgpack's timestamp
 * (type -1: 4, 8 or 12 bytes).  false for any other extension.
 */
bool
ext_time(const msgpack_object *o, int64_t *sec, int64_t *ns)
{
	const uint8_t *p = (const uint8_t *) o->via.ext.ptr;
	uint64_t	v;

	if (o->via.ext.type == 0 && o->via.ext.size == 8)
		*sec = (int64_t) be(p, 4), *ns = (int64_t) be(p + 4, 4);
	else if (o->via.ext.type == -1 && o->via.ext.size == 4)
		*sec = (int64_t) be(p, 4), *ns = 0;
	else if (o->via.ext.type == -1 && o->via.ext.size == 8)
	{
		v = be(p, 8);
		*sec = (int64_t) (v & 0x3ffffffffULL);
		*ns = (int64_t) (v >> 34);
	}
	else if (o->via.ext.type == -1 && o->via.ext.size == 12)
		*ns = (int64_t) be(p, 4), *sec = (int64_t) be(p + 4, 8);
	else
		return false;
	return *ns < 1000000000;
}
