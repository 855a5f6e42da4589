/*-------------------------------------------------------------------------
 *
 * arrow_bits.h
 *		Bitmap helpers of the Arrow library (validity bitmaps and BOOL
 *		values): the one set that the reader, the builder, the JSON printer
 *		and the validators share.  Internal: not part of arrow.h.
 *
 * Arrow bitmaps number bits least significant first: bit i is bit (i % 8)
 * of byte i / 8.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_BITS_H
#define PG_WARP_ARROW_BITS_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Bit i of a bitmap */
static inline bool
arrow_bit_get(const uint8_t *bits, int64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/* Sets bit i of a bitmap to v */
static inline void
arrow_bit_set(uint8_t *bits, int64_t i, bool v)
{
	if (v)
		bits[i >> 3] |= (uint8_t) (1u << (i & 7));
	else
		bits[i >> 3] &= (uint8_t) ~(1u << (i & 7));
}

/* Whether row i is valid in a validity bitmap (NULL: every row is) */
static inline bool
arrow_bit_valid(const uint8_t *validity, int64_t i)
{
	return validity == NULL || arrow_bit_get(validity, i);
}

/* Bytes of a bitmap of n bits */
static inline int64_t
arrow_bitmap_bytes(int64_t n)
{
	return n / 8 + (n % 8 != 0);
}

/* Number of zero bits among bits [from, from + n) */
static inline int64_t
arrow_bits_count_zeros(const uint8_t *bits, int64_t from, int64_t n)
{
	int64_t		zeros = 0;
	int64_t		i = from;
	int64_t		end = from + n;

	for (; i < end && (i & 63) != 0; i++)
		zeros += !arrow_bit_get(bits, i);
	for (; end - i >= 64; i += 64)
	{
		uint64_t	w;

		memcpy(&w, bits + (i >> 3), 8);
		zeros += 64 - __builtin_popcountll(w);
	}
	for (; i < end; i++)
		zeros += !arrow_bit_get(bits, i);
	return zeros;
}

/*
 * Copies bits [from, from + n) of src (NULL: all set) to bits [to, to + n)
 * of dst, whose bytes up to bit to + n - 1 exist and are zero from bit 'to'
 * on.  Whole destination bytes are assembled from two source bytes at a
 * time; no byte of src past bit from + n - 1 is read.
 */
static inline void
arrow_bits_copy(uint8_t *dst, int64_t to, const uint8_t *src, int64_t from,
				int64_t n)
{
	int64_t		i = 0;

	if (src == NULL)
	{
		for (; i < n; i++)
			arrow_bit_set(dst, to + i, true);
		return;
	}
	for (; i < n && ((to + i) & 7) != 0; i++)
		if (arrow_bit_get(src, from + i))
			dst[(to + i) >> 3] |= (uint8_t) (1u << ((to + i) & 7));
	for (; n - i >= 8; i += 8)
	{
		int64_t		s = from + i;
		unsigned	shift = (unsigned) (s & 7);
		unsigned	v = src[s >> 3] >> shift;

		if (shift != 0)
			v |= (unsigned) src[(s >> 3) + 1] << (8 - shift);
		dst[(to + i) >> 3] = (uint8_t) v;
	}
	for (; i < n; i++)
		if (arrow_bit_get(src, from + i))
			dst[(to + i) >> 3] |= (uint8_t) (1u << ((to + i) & 7));
}

#endif							/* PG_WARP_ARROW_BITS_H */
