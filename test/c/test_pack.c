/*
 * test_pack.c
 *		The packing of integer column values for the bus (service/pack.c)
 *		against its unpacking (xpu/xpu_pack.h, the code kern_unpack and the
 *		stand-in driver run): every width's edges, both value widths, the
 *		extremes of the types, frames of every length class, and random
 *		frames; each value must come back bit for bit, and packing must
 *		write no byte past what its width says.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/pack.h"
#include "tap.h"
#include "xpu/xpu_pack.h"

#define CANARY		0x5A

/*
 * packs n values of width bytes (in), checks the width packing chose
 * (want; -1: any), that nothing past n * w bytes was written, and that
 * unpacking (whole, and in the kernel's shares: 16 blocks of 256 threads)
 * gives the values back; returns the chosen width, or -2 on a failed check
 */
static int
roundtrip(const void *in, uint32_t n, int width, int want, const char *what)
{
	size_t		room = (size_t) n * width + 64;
	uint8_t    *out = malloc(room);
	uint8_t    *back = malloc((size_t) n * width + 1);
	int64_t		base = 0;
	int			w,
				ok = 1;

	memset(out, CANARY, room);
	w = svc_pack_values(in, n, width, out, &base);
	if (want >= 0 && w != want)
	{
		tap_ok(0, "%s: width %d, want %d", what, w, want);
		free(out);
		free(back);
		return -2;
	}
	for (size_t i = (size_t) n * (w > 0 ? w : 0); i < room && ok; i++)
		ok = out[i] == CANARY;
	if (w > 0 && ok)
	{
		XpuPackFrame f = {(uint64_t) (uintptr_t) back, (uint64_t) (uintptr_t) out, base, n,
		(uint8_t) w, (uint8_t) width, 0};
		uint32_t	share = (n + XPU_UNPACK_SPLIT - 1) / XPU_UNPACK_SPLIT;

		memset(back, 0, (size_t) n * width);
		xpu_unpack_range(&f, 0, n, 1);
		ok = memcmp(back, in, (size_t) n * width) == 0;
		/* as kern_unpack's blocks and threads share the frame */
		memset(back, 0, (size_t) n * width);
		for (uint32_t b = 0; b < XPU_UNPACK_SPLIT; b++)
			for (uint32_t t = 0; t < XPU_UNPACK_THREADS; t++)
			{
				uint32_t	from = b * share,
							to = from + share < n ? from + share : n;

				xpu_unpack_range(&f, from + t, to, XPU_UNPACK_THREADS);
			}
		ok = ok && memcmp(back, in, (size_t) n * width) == 0;
	}
	tap_ok(ok, "%s: width %d, values back, nothing written past them", what, w);
	free(out);
	free(back);
	return ok ? w : -2;
}

/* a frame of n int32: lo, then lo + span, then values between */
static void
fill32(int32_t *v, uint32_t n, int64_t lo, int64_t span)
{
	for (uint32_t i = 0; i < n; i++)
		v[i] = (int32_t) (lo + (i == 0 ? 0 : i == 1 ? span : (int64_t) ((uint64_t) i * 2654435761u % ((uint64_t) span + 1))));
}

static void
fill64(int64_t *v, uint32_t n, int64_t lo, uint64_t span)
{
	for (uint32_t i = 0; i < n; i++)
		v[i] = (int64_t) ((uint64_t) lo + (i == 0 ? 0 : i == 1 ? span :
										   span == UINT64_MAX ? (uint64_t) i * 0x9E3779B97F4A7C15u :
										   (uint64_t) i * 0x9E3779B97F4A7C15u % (span + 1)));
}

int
main(void)
{
	int32_t    *v32 = malloc(sizeof(int32_t) * XPU_PACK_FRAME_VALUES);
	int64_t    *v64 = malloc(sizeof(int64_t) * XPU_PACK_FRAME_VALUES);
	uint8_t		out[64];
	int64_t		base;
	static const struct
	{
		int64_t		lo;
		int64_t		span;
		int			want;
	}			c32[] = {
		{0, 0, 1}, {-5, 0, 1}, {0, 255, 1}, {0, 256, 2}, {-100, 65535, 2}, {7, 65536, 3},
		{19920101, 61129, 2}, {0, (1 << 24) - 1, 3}, {0, 1 << 24, 0},
		{INT32_MIN, 255, 1}, {INT32_MAX - 255, 255, 1}, {INT32_MAX - 70000, 70000, 3},
		{INT32_MIN, (int64_t) UINT32_MAX, 0}, {-1, 1, 1},
	};
	static const struct
	{
		int64_t		lo;
		uint64_t	span;
		int			want;
	}			c64[] = {
		{0, 0, 1}, {INT64_MIN, 255, 1}, {INT64_MAX - 256, 256, 2}, {-1, 65536, 3},
		{1700000000000000, UINT32_MAX, 4}, {0, (uint64_t) UINT32_MAX + 1, 0},
		{INT64_MIN, UINT64_MAX, 0}, {-3, (uint64_t) INT64_MAX, 0},
	};
	static const uint32_t lens[] = {1, 2, 3, 15, 1023, 1024, 1025, 4097, 65535, XPU_PACK_FRAME_VALUES};

	for (size_t c = 0; c < sizeof(c32) / sizeof(c32[0]); c++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		{
			char		what[96];
			uint32_t	n = lens[l];
			int			want = n == 1 ? 1 : c32[c].want;

			fill32(v32, n, c32[c].lo, c32[c].span);
			snprintf(what, sizeof(what), "int32 from %lld spanning %lld, %u values",
					 (long long) c32[c].lo, (long long) c32[c].span, n);
			roundtrip(v32, n, 4, want, what);
		}
	for (size_t c = 0; c < sizeof(c64) / sizeof(c64[0]); c++)
		for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		{
			char		what[96];
			uint32_t	n = lens[l];
			int			want = n == 1 ? 1 : c64[c].want;

			fill64(v64, n, c64[c].lo, c64[c].span);
			snprintf(what, sizeof(what), "int64 from %lld spanning %llu, %u values",
					 (long long) c64[c].lo, (unsigned long long) c64[c].span, n);
			roundtrip(v64, n, 8, want, what);
		}

	/* what packing refuses: no values, too many, another width */
	tap_ok(svc_pack_values(v32, 0, 4, out, &base) == 0, "no values: not packed");
	tap_ok(svc_pack_values(v32, XPU_PACK_FRAME_VALUES + 1, 4, out, &base) == 0,
		   "more values than a frame holds: not packed");
	tap_ok(svc_pack_values(v32, 4, 2, out, &base) == 0, "2-byte values: not packed");

	/* random frames: random lengths, bases and spans of every width */
	srand(42);
	for (int i = 0; i < 300; i++)
	{
		uint32_t	n = 1 + (uint32_t) rand() % XPU_PACK_FRAME_VALUES;
		int			bits = rand() % 34;
		uint64_t	span = bits == 0 ? 0 : ((uint64_t) 1 << (bits > 33 ? 33 : bits)) - 1;
		int64_t		lo = ((int64_t) rand() << 31 | rand()) - ((int64_t) 1 << 50);
		char		what[96];

		snprintf(what, sizeof(what), "random frame %d (%u values, span %llu)", i, n,
				 (unsigned long long) span);
		if (i % 2 == 0)
		{
			fill32(v32, n, (int32_t) lo, span > (uint64_t) INT32_MAX ? INT32_MAX : (int64_t) span);
			roundtrip(v32, n, 4, -1, what);
		}
		else
		{
			for (uint32_t j = 0; j < n; j++)
				v64[j] = lo + (int64_t) (span == 0 ? 0 : ((uint64_t) rand() << 16 ^ (uint64_t) rand()) % (span + 1));
			roundtrip(v64, n, 8, -1, what);
		}
	}
	free(v32);
	free(v64);
	return tap_done();
}
