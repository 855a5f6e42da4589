/*-------------------------------------------------------------------------
 *
 * pack_frames.c
 *		bench/data_paths' packing of integer column values for the bus
 *		(its pack ways): a frame of up to PACK_FRAME_VALUES values becomes
 *		each value's distance from the frame's smallest, in as few whole
 *		bytes as the frame's range needs (1 or 2 bytes: one array; 3: the
 *		low 16 bits of each, then the third bytes; 4 of an int64: one
 *		array of 32-bit words).  Whether the service should pack what its
 *		I/O threads read is what those ways measure: the packing costs
 *		CPU time that the bus must give back (bench/results/README.md,
 *		"Integer columns packed for the bus: tried").
 *
 * Both passes (the range, then the distances) run over a frame that the
 * caller has just read into a buffer its core's cache holds, and are
 * written so that the compiler vectorizes them.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "pack_frames.h"

/*
 * the passes are compiled for AVX2 as well, taken where the CPU has it
 * (the same results either way)
 */
#if defined(__x86_64__) && defined(__GNUC__)
#define PACK_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PACK_CLONES
#endif

/* the smallest and largest of n (> 0) int32 values */
static PACK_CLONES void
range32(const int32_t *v, uint32_t n, int32_t *lo, int32_t *hi)
{
	int32_t		mn = v[0],
				mx = v[0];

	for (uint32_t i = 0; i < n; i++)
	{
		mn = v[i] < mn ? v[i] : mn;
		mx = v[i] > mx ? v[i] : mx;
	}
	*lo = mn;
	*hi = mx;
}

static PACK_CLONES void
range64(const int64_t *v, uint32_t n, int64_t *lo, int64_t *hi)
{
	int64_t		mn = v[0],
				mx = v[0];

	for (uint32_t i = 0; i < n; i++)
	{
		mn = v[i] < mn ? v[i] : mn;
		mx = v[i] > mx ? v[i] : mx;
	}
	*lo = mn;
	*hi = mx;
}

/* the whole bytes a distance up to span takes */
static int
span_width(uint64_t span)
{
	return span < ((uint64_t) 1 << 8) ? 1 : span < ((uint64_t) 1 << 16) ? 2 :
		span < ((uint64_t) 1 << 24) ? 3 : span < ((uint64_t) 1 << 32) ? 4 : 8;
}

/*
 * pack32: the distances of n int32 values from lo in w bytes each: w = 1
 * and 2 one array of bytes or of 16-bit words; w = 3 the low 16 bits of
 * every distance, then their third bytes (two arrays that vectorize, where
 * 3-byte values would not)
 */
static PACK_CLONES void
pack32(const int32_t *v, uint32_t n, int w, int32_t lo, uint8_t *out)
{
	uint32_t	ulo = (uint32_t) lo;
	uint16_t   *o16 = (uint16_t *) out;

	if (w == 1)
		for (uint32_t i = 0; i < n; i++)
			out[i] = (uint8_t) ((uint32_t) v[i] - ulo);
	else
		for (uint32_t i = 0; i < n; i++)
			o16[i] = (uint16_t) ((uint32_t) v[i] - ulo);
	if (w == 3)
	{
		uint8_t    *hi = out + 2 * (size_t) n;

		for (uint32_t i = 0; i < n; i++)
			hi[i] = (uint8_t) (((uint32_t) v[i] - ulo) >> 16);
	}
}

/* the same for int64 values, w = 1 to 4 (w = 4: one array of 32-bit words) */
static PACK_CLONES void
pack64(const int64_t *v, uint32_t n, int w, int64_t lo, uint8_t *out)
{
	uint64_t	ulo = (uint64_t) lo;
	uint16_t   *o16 = (uint16_t *) out;
	uint32_t   *o32 = (uint32_t *) out;

	if (w == 1)
		for (uint32_t i = 0; i < n; i++)
			out[i] = (uint8_t) ((uint64_t) v[i] - ulo);
	else if (w == 4)
		for (uint32_t i = 0; i < n; i++)
			o32[i] = (uint32_t) ((uint64_t) v[i] - ulo);
	else
		for (uint32_t i = 0; i < n; i++)
			o16[i] = (uint16_t) ((uint64_t) v[i] - ulo);
	if (w == 3)
	{
		uint8_t    *hi = out + 2 * (size_t) n;

		for (uint32_t i = 0; i < n; i++)
			hi[i] = (uint8_t) (((uint64_t) v[i] - ulo) >> 16);
	}
}

/*
 * pack_values
 *		Packs n (1 .. PACK_FRAME_VALUES) integers of width bytes (4 or
 *		8) at in into out as one frame; returns the width of a packed value
 *		(1 to 4), with the frame's base in *base, or 0 when packing would
 *		save less than a quarter of the bytes (nothing written then).  out
 *		has room for n * width bytes.
 */
int
pack_values(const void *in, uint32_t n, int width, uint8_t *out, int64_t *base)
{
	int			w;

	if (n == 0 || n > PACK_FRAME_VALUES)
		return 0;
	if (width == 4)
	{
		int32_t		lo,
					hi;

		range32(in, n, &lo, &hi);
		w = span_width((uint64_t) ((int64_t) hi - lo));
		if (w > 3)
			return 0;
		pack32(in, n, w, lo, out);
		*base = lo;
		return w;
	}
	if (width == 8)
	{
		int64_t		lo,
					hi;

		range64(in, n, &lo, &hi);
		/* the span as unsigned: hi - lo may pass INT64_MAX */
		w = span_width((uint64_t) hi - (uint64_t) lo);
		if (w > 4)
			return 0;
		pack64(in, n, w, lo, out);
		*base = lo;
		return w;
	}
	return 0;
}
