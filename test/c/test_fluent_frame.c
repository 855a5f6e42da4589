/*
 * test_fluent_frame.c
 *		Unit tests of fluent2arrow's frame scanner (tools/fluent2arrow/frame.c):
 *		every msgpack header kind, frames fed byte by byte and whole, the
 *		max_frame and depth limits, invalid bytes, and random corruption of
 *		valid frames, which must never read out of bounds (ASan + UBSan).
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "../../tools/fluent2arrow/frame.c"

typedef struct Buf
{
	uint8_t		data[200000];
	size_t		len;
} Buf;

static void
put(Buf *b, const void *p, size_t n)
{
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static void
put_be(Buf *b, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--)
		b->data[b->len++] = (uint8_t) (v >> (8 * i));
}

/* A frame with one object of every header kind */
static void
every_kind(Buf *b)
{
	static const uint8_t scalars[] = {
		0x00, 0x7f, 0xe0, 0xff, 0xc0, 0xc2, 0xc3,
		0xcc, 1, 0xcd, 1, 2, 0xce, 1, 2, 3, 4, 0xcf, 1, 2, 3, 4, 5, 6, 7, 8,
		0xd0, 1, 0xd1, 1, 2, 0xd2, 1, 2, 3, 4, 0xd3, 1, 2, 3, 4, 5, 6, 7, 8,
		0xca, 1, 2, 3, 4, 0xcb, 1, 2, 3, 4, 5, 6, 7, 8,
		0xd4, 0, 1, 0xd5, 0, 1, 2, 0xd6, 0, 1, 2, 3, 4,
		0xd7, 0, 1, 2, 3, 4, 5, 6, 7, 8,
		0xd8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	int			n = 0;

	b->len = 0;
	put_be(b, 0xdc, 1);			/* array16 of the items below */
	put_be(b, 0, 2);
	for (size_t i = 0; i < sizeof(scalars);)
	{
		size_t		hdr;
		uint64_t	body,
					count;

		object_header(scalars + i, sizeof(scalars) - i, &hdr, &body, &count);
		put(b, scalars + i, hdr + body);
		i += hdr + body;
		n++;
	}
	put(b, "\xa3" "abc", 4);	/* fixstr */
	put(b, "\xd9\x02xy", 4);	/* str8 */
	put(b, "\xda\x00\x01z", 4); /* str16 */
	put(b, "\xdb\x00\x00\x00\x01z", 6);	/* str32 */
	put(b, "\xc4\x01\x00\xc5\x00\x01\x00\xc6\x00\x00\x00\x01\x00", 13);	/* bin */
	put(b, "\xc7\x01\x05x\xc8\x00\x01\x05x\xc9\x00\x00\x00\x01\x05x", 16);	/* ext */
	put(b, "\x82\xa1k\x91\x90\x01\x80", 7);	/* fixmap {k: [[]], 1: {}} */
	put(b, "\xdd\x00\x00\x00\x01\xde\x00\x01\x01\xdf\x00\x00\x00\x01\x02\x03", 16);
	n += 4 + 3 + 3 + 2;
	b->data[1] = (uint8_t) (n >> 8);
	b->data[2] = (uint8_t) n;
}

/* Fed byte by byte: 0 until the last byte, then 1 with the exact length */
static bool
incremental(const Buf *b)
{
	FrameScan	st = {0};
	char		why[200];
	size_t		flen = 0;

	for (size_t n = 1; n <= b->len; n++)
	{
		int			r = frame_scan(&st, b->data, n, 1 << 20, &flen, why, sizeof(why));

		if (r != (n == b->len ? 1 : 0))
			return false;
	}
	return flen == b->len;
}

static int
scan_once(const uint8_t *p, size_t len, int64_t max, size_t *flen)
{
	FrameScan	st = {0};
	char		why[200];

	return frame_scan(&st, p, len, max, flen, why, sizeof(why));
}

static void
test_kinds(void)
{
	Buf		   *b = calloc(1, sizeof(Buf));
	size_t		flen = 0;

	every_kind(b);
	tap_ok(incremental(b), "every header kind, fed byte by byte");
	put(b, "\x93\x01\x02", 3);	/* the start of the next frame */
	tap_ok(scan_once(b->data, b->len, 1 << 20, &flen) == 1 && flen == b->len - 3,
	   "a whole frame followed by the next one: its exact length");
	tap_ok(scan_once((const uint8_t *) "\x90", 1, 100, &flen) == 1 && flen == 1, "an empty array");
	free(b);
}

static void
test_limits(void)
{
	Buf		   *b = calloc(1, sizeof(Buf));
	size_t		flen;
	uint8_t		deep[64];

	tap_ok(scan_once((const uint8_t *) "\x93\xa1" "a\xc6\x40\x00\x00\x00", 8, 1 << 20, &flen) == -1,
	   "a bin32 of 1 GiB is refused from its header");
	tap_ok(scan_once((const uint8_t *) "\x92\xa1" "a\xdd\xff\xff\xff\xff", 8, 1 << 20, &flen) == -1,
	   "an array32 of 2^32-1 items is refused from its header");
	tap_ok(scan_once((const uint8_t *) "\x92\xa1" "a\xdf\x7f\xff\xff\xff", 8, 1 << 20, &flen) == -1,
	   "a map32 of 2^31-1 pairs is refused from its header");
	b->len = 0;
	put(b, "\x92\xa1" "a\xc5\x10\x00", 6);
	memset(b->data + b->len, 'x', 4096);
	b->len += 4096;
	tap_ok(scan_once(b->data, b->len, 4000, &flen) == -1, "a frame above max_frame is refused");
	tap_ok(scan_once(b->data, b->len, 5000, &flen) == 1 && flen == b->len, "one within it is whole");
	tap_ok(scan_once(b->data, 10, 4000, &flen) == -1, "refused before its bytes arrive");
	memset(deep, 0x91, sizeof(deep));
	tap_ok(scan_once(deep, 32, 1 << 20, &flen) == 0, "32 levels: waits for more");
	tap_ok(scan_once(deep, 40, 1 << 20, &flen) == -1, "33 levels are refused");
	tap_ok(scan_once((const uint8_t *) "\x92\xc1\x01", 3, 100, &flen) == -1, "0xc1 is refused");
	tap_ok(scan_once((const uint8_t *) "\x81\xa1" "a\x01", 4, 100, &flen) == -1, "a map frame is refused");
	tap_ok(scan_once((const uint8_t *) "\xa1" "a", 2, 100, &flen) == -1, "a string frame is refused");
	free(b);
}

/* Scans one object of any kind (a PackedForward entry) */
static int
scan_any(const uint8_t *p, size_t len, int64_t max, size_t *flen)
{
	FrameScan	st = {0};
	char		why[200];

	st.any = true;
	return frame_scan(&st, p, len, max, flen, why, sizeof(why));
}

/* Objects of any kind: the packed stream's entries (forward.c) */
static void
test_any(void)
{
	size_t		flen = 0;

	tap_ok(scan_any((const uint8_t *) "\x05\x06", 2, 100, &flen) == 1 && flen == 1,
	   "any: a positive fixint is one whole object");
	tap_ok(scan_any((const uint8_t *) "\x81\xa1" "a\x01\x02", 5, 100, &flen) == 1 && flen == 4,
	   "any: a map is one whole object");
	tap_ok(scan_any((const uint8_t *) "\xa3" "ab", 3, 100, &flen) == 0, "any: a cut string waits");
	tap_ok(scan_any((const uint8_t *) "\xdd\x05\xf5\xe1\x00", 5, 1 << 20, &flen) == -1,
	   "any: an array32 of 100M items is refused from its header");
	tap_ok(scan_any((const uint8_t *) "\xc1", 1, 100, &flen) == -1, "any: 0xc1 is refused");
}

/* Random corruption: never out of bounds; the length is within the buffer */
static void
test_random(void)
{
	Buf		   *b = calloc(1, sizeof(Buf));
	int			bad = 0;

	srand(13);
	for (int round = 0; round < 20000; round++)
	{
		size_t		flen = 0;
		size_t		len;
		uint8_t    *copy;
		int			r;

		every_kind(b);
		for (int k = 0; k < 1 + rand() % 4; k++)
			b->data[rand() % b->len] = (uint8_t) rand();
		len = 1 + rand() % b->len;
		copy = malloc(len);		/* exact size: ASan sees any overread */
		memcpy(copy, b->data, len);
		r = scan_once(copy, len, 1 << 20, &flen);
		if (r == 1 && (flen == 0 || flen > len))
			bad++;
		free(copy);
	}
	tap_ok(bad == 0, "20000 corrupted frames: no overread, lengths within the data");
	free(b);
}

int
main(void)
{
	test_kinds();
	test_limits();
	test_any();
	test_random();
	return tap_done();
}
