/*-------------------------------------------------------------------------
 *
 * xpu_hll.h
 *		The per-value half of pg_warp's HyperLogLog sketches (doc/hll.md):
 *		the 64-bit hash of a value's canonical bytes and the register update.
 *		Plain C, compiled by the extension (src/types/hll*.c), the CPU engine
 *		and device code alike, so that every producer of a sketch computes
 *		the same registers bit for bit.
 *
 * The hash.  A value is hashed as a byte string b[0..len) under a seed that
 * names its class of canonical form (XPU_HLL_SEED_*).  The bytes are read
 * as little-endian 64-bit words w[0..k) (the last one zero-padded; none for
 * len = 0), and
 *
 *		h = seed ^ (len * XPU_HLL_K_LEN)
 *		h = mix(h ^ w[i])							for each word in order
 *		hash = mix(h ^ XPU_HLL_K_FINAL)
 *
 * where mix() is the 64-bit finalizer of SplitMix64 with the "Mix13"
 * constants (Steele, Lea and Flood, "Fast splittable pseudorandom number
 * generators", OOPSLA 2014; constants by D. Stafford): a bijection of 64-bit
 * words in which every input bit changes every output bit with probability
 * close to 1/2.  The length enters first, so zero padding never makes two
 * strings equal.  Integers, floats and by-value types go through
 * xpu_hll_hash_word(), which is the same function for an 8-byte string.
 *
 * The register update.  With precision p (4..18, m = 2^p registers) the top
 * p bits of the hash select the register; the rank is the position of the
 * first 1 bit in the remaining 64 - p bits (1 for a leading 1 bit), or
 * 65 - p when they are all zero.  A register keeps the greatest rank seen
 * (0: none).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_HLL_H
#define XPU_HLL_H

#include "xpu_common.h"

#define XPU_HLL_MIN_BITS	4
#define XPU_HLL_MAX_BITS	18

/*
 * The most distinct hashes a sketch keeps explicitly at precision p: as
 * many as fit (8 bytes each) in the 6-bit packed registers of the dense
 * form (xpu_hll_sketch.h), so an explicit sketch is never the larger.  The
 * CPU engine, the GPU and the SQL functions change representation there.
 */
#define XPU_HLL_EXPLICIT_LIMIT(p)	((uint32_t) ((UINT64_C(6) << (p)) / 64))

/* the greatest rank a register holds at precision p */
#define XPU_HLL_MAX_RANK(p)	(64 - (p) + 1)

/* seeds: one per class of canonical form (doc/hll.md, "Hashing") */
#define XPU_HLL_SEED_INT	UINT64_C(0x243f6a8885a308d3)	/* int2/int4/int8 as int64 */
#define XPU_HLL_SEED_FLOAT	UINT64_C(0x13198a2e03707344)	/* float4/float8 as double */
#define XPU_HLL_SEED_NUMERIC UINT64_C(0xa4093822299f31d0)	/* numeric, canonical digits */
#define XPU_HLL_SEED_TEXT	UINT64_C(0x082efa98ec4e6c89)	/* text, varchar, bpchar, name */
#define XPU_HLL_SEED_BYVAL	UINT64_C(0x452821e638d01377)	/* other by-value types */
#define XPU_HLL_SEED_SEND	UINT64_C(0xbe5466cf34e90c6c)	/* others: binary send form */

#define XPU_HLL_K_LEN		UINT64_C(0x9e3779b97f4a7c15)
#define XPU_HLL_K_FINAL		UINT64_C(0xc2b2ae3d27d4eb4f)

/* xpu_hll_mix: SplitMix64's finalizer (Mix13), a bijection with good avalanche */
XPU_HOST_DEVICE uint64_t
xpu_hll_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/*
 * xpu_hll_hash_bytes: the hash of len bytes at data under seed (see the
 * header comment).  data need not be aligned.
 */
XPU_HOST_DEVICE uint64_t
xpu_hll_hash_bytes(uint64_t seed, const uint8_t *data, uint32_t len)
{
	uint64_t	h = seed ^ ((uint64_t) len * XPU_HLL_K_LEN);
	uint32_t	i = 0;

	while (i < len)
	{
		uint64_t	w = 0;
		uint32_t	j;

		for (j = 0; j < 8 && i + j < len; j++)
			w |= (uint64_t) data[i + j] << (8 * j);
		h = xpu_hll_mix(h ^ w);
		i += 8;
	}
	return xpu_hll_mix(h ^ XPU_HLL_K_FINAL);
}

/*
 * xpu_hll_hash_word: the hash of the 8 little-endian bytes of w under seed;
 * equal to xpu_hll_hash_bytes(seed, those bytes, 8).
 */
XPU_HOST_DEVICE uint64_t
xpu_hll_hash_word(uint64_t seed, uint64_t w)
{
	uint64_t	h = seed ^ (8 * XPU_HLL_K_LEN);

	h = xpu_hll_mix(h ^ w);
	return xpu_hll_mix(h ^ XPU_HLL_K_FINAL);
}

/* xpu_hll_hash_int64: an int2, int4 or int8 value, widened to int64 */
XPU_HOST_DEVICE uint64_t
xpu_hll_hash_int64(int64_t v)
{
	return xpu_hll_hash_word(XPU_HLL_SEED_INT, (uint64_t) v);
}

/*
 * xpu_hll_hash_float8: a float4 or float8 value, widened to double: the
 * IEEE bits of the double, with -0 hashed as +0 and every NaN as the one
 * quiet NaN 0x7ff8000000000000 (PostgreSQL's float equality).
 */
XPU_HOST_DEVICE uint64_t
xpu_hll_hash_float8(double v)
{
	union
	{
		double		d;
		uint64_t	u;
	}			bits;

	if (v != v)
		bits.u = UINT64_C(0x7ff8000000000000);
	else
	{
		bits.d = (v == 0.0) ? 0.0 : v;
	}
	return xpu_hll_hash_word(XPU_HLL_SEED_FLOAT, bits.u);
}

/* xpu_hll_clz64: leading zero bits of a non-zero word */
XPU_HOST_DEVICE int
xpu_hll_clz64(uint64_t w)
{
#ifdef __CUDA_ARCH__
	return __clzll((long long) w);
#else
	return __builtin_clzll(w);
#endif
}

/* xpu_hll_index: the register that hash falls into at precision p */
XPU_HOST_DEVICE uint32_t
xpu_hll_index(uint64_t hash, int p)
{
	return (uint32_t) (hash >> (64 - p));
}

/*
 * xpu_hll_rank: the rank of hash at precision p, 1 .. 65 - p.  A sentinel
 * bit below the 64 - p rank bits caps the count of leading zeros.
 */
XPU_HOST_DEVICE uint8_t
xpu_hll_rank(uint64_t hash, int p)
{
	uint64_t	w = (hash << p) | (UINT64_C(1) << (p - 1));

	return (uint8_t) (xpu_hll_clz64(w) + 1);
}

/*
 * xpu_hll_update: add hash to the m = 2^p byte registers regs.  Not atomic:
 * one thread per register array (device code that shares an array between
 * threads applies xpu_hll_index/xpu_hll_rank with an atomic maximum).
 */
XPU_HOST_DEVICE void
xpu_hll_update(uint8_t *regs, int p, uint64_t hash)
{
	uint32_t	i = xpu_hll_index(hash, p);
	uint8_t		r = xpu_hll_rank(hash, p);

	if (regs[i] < r)
		regs[i] = r;
}

#endif							/* XPU_HLL_H */
