/*-------------------------------------------------------------------------
 *
 * xpu_hll_sketch.c
 *		pg_warp's HyperLogLog sketch in plain C (no PostgreSQL headers):
 *		representations, merge, fold, estimator and serialized format.  The
 *		one implementation: the SQL functions (src/types/hll.c), the CPU
 *		engine's HLL states (xpu_agg.c) and the host half of the GPU's
 *		(whose sets and registers the service folds in here) use it.  The
 *		contract of each function is in xpu_hll_sketch.h and above it here;
 *		doc/hll.md describes the sketch for users.
 *
 * The estimator of a dense sketch is the "improved raw estimator" of
 * O. Ertl, "New cardinality estimation algorithms for HyperLogLog
 * sketches" (2017), section 3 (Algorithm 6 there): it works from the
 * histogram of register values, needs no empirical bias tables, and is
 * nearly unbiased from the smallest to the largest cardinalities (it turns
 * into linear counting where most registers are still empty).
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "xpu_hll_sketch.h"

#define HLL_FIRST_CAP	16

/*
 * hll_explicit_limit: the most distinct hashes an explicit sketch of
 * precision p holds: as many as fit (8 bytes each) in the dense form's
 * 6m/8 bytes, so an explicit sketch is never larger than a dense one.
 */
uint32_t
hll_explicit_limit(int p)
{
	return XPU_HLL_EXPLICIT_LIMIT(p);
}

/* hll_dense_bytes: the size of the packed registers of a dense sketch */
size_t
hll_dense_bytes(int p)
{
	return (size_t) ((UINT64_C(6) << p) / 8);
}

/* hll_init: *sk becomes an empty explicit sketch of precision p (0: not yet fixed) */
void
hll_init(HllSketch *sk, int p, HllResizeFn resize, void *arg)
{
	memset(sk, 0, sizeof(*sk));
	sk->p = p;
	sk->resize = resize;
	sk->resize_arg = arg;
}

/* hll_free: releases the memory of *sk (which stays a valid empty sketch) */
void
hll_free(HllSketch *sk)
{
	if (sk->hashes)
		sk->resize(sk->resize_arg, sk->hashes, 0);
	if (sk->regs)
		sk->resize(sk->resize_arg, sk->regs, 0);
	sk->hashes = NULL;
	sk->regs = NULL;
	sk->n = sk->cap = sk->sorted = 0;
	sk->dense = 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a;
	uint64_t	y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* compact: sort the explicit hashes and drop repeats */
static void
compact(HllSketch *sk)
{
	uint32_t	i,
				out;

	if (sk->sorted == sk->n)
		return;
	qsort(sk->hashes, sk->n, sizeof(uint64_t), cmp_u64);
	for (i = 0, out = 0; i < sk->n; i++)
		if (out == 0 || sk->hashes[out - 1] != sk->hashes[i])
			sk->hashes[out++] = sk->hashes[i];
	sk->n = sk->sorted = out;
}

/*
 * densify: turn an explicit sketch into m zeroed registers, then add its
 * hashes; 0 (the sketch unchanged) when the memory is not there
 */
static int
densify(HllSketch *sk)
{
	size_t		m = (size_t) 1 << sk->p;
	uint32_t	i;

	sk->regs = sk->resize(sk->resize_arg, NULL, m);
	if (sk->regs == NULL)
		return 0;
	memset(sk->regs, 0, m);
	for (i = 0; i < sk->n; i++)
		xpu_hll_update(sk->regs, sk->p, sk->hashes[i]);
	if (sk->hashes)
		sk->resize(sk->resize_arg, sk->hashes, 0);
	sk->hashes = NULL;
	sk->n = sk->cap = sk->sorted = 0;
	sk->dense = 1;
	return 1;
}

/*
 * hll_normalize: the canonical representation of the hashes added so far:
 * explicit (sorted, distinct) while they are few enough, else dense; 0
 * when the memory for the registers is not there
 */
int
hll_normalize(HllSketch *sk)
{
	if (sk->dense)
		return 1;
	compact(sk);
	return sk->n <= hll_explicit_limit(sk->p) || densify(sk);
}

/*
 * make_room: called on a full explicit array: grows it (up to twice the
 * explicit limit), else compacts it, and densifies the sketch when the
 * distinct hashes exceed the limit; 0 when the memory is not there.
 */
static int
make_room(HllSketch *sk)
{
	uint32_t	maxcap = 2 * hll_explicit_limit(sk->p);

	if (sk->cap < maxcap)
	{
		uint32_t	cap = sk->cap ? 2 * sk->cap : HLL_FIRST_CAP;
		uint64_t   *h;

		if (cap > maxcap)
			cap = maxcap;
		h = sk->resize(sk->resize_arg, sk->hashes, cap * sizeof(uint64_t));
		if (h == NULL)
			return 0;
		sk->hashes = h;
		sk->cap = cap;
		return 1;
	}
	return hll_normalize(sk);
}

/* hll_add_hash: adds one value's hash (p must be fixed); 0 when out of memory */
int
hll_add_hash(HllSketch *sk, uint64_t hash)
{
	if (!sk->dense && sk->n >= sk->cap && !make_room(sk))
		return 0;
	if (sk->dense)
		xpu_hll_update(sk->regs, sk->p, hash);
	else
		sk->hashes[sk->n++] = hash;
	return 1;
}

/*
 * fold_rank: the rank at precision p - d of a hash whose register at
 * precision p is i with rank r > 0: the low d bits of i come first in the
 * coarser sketch's rank bits.
 */
static uint8_t
fold_rank(uint32_t i, uint8_t r, int d)
{
	uint32_t	low = i & ((UINT32_C(1) << d) - 1);

	if (low == 0)
		return (uint8_t) (d + r);
	/* leading zeros of low within d bits, plus one */
	return (uint8_t) (d - (32 - __builtin_clz(low)) + 1);
}

/* merge_register: register i (rank r) of a dense sketch of precision srcp into dense dst */
static inline void
merge_register(HllSketch *dst, int srcp, uint32_t i, uint8_t r)
{
	int			d = srcp - dst->p;
	uint32_t	j = i >> d;

	if (r == 0)
		return;
	if (d > 0)
		r = fold_rank(i, r, d);
	if (dst->regs[j] < r)
		dst->regs[j] = r;
}

/*
 * hll_fold: lowers the precision of *sk to p (no-op when it is not
 * higher): the result equals the sketch of the same values built at p; 0
 * (the sketch unchanged) when out of memory.
 */
int
hll_fold(HllSketch *sk, int p)
{
	if (p >= sk->p)
		return 1;
	if (sk->dense)
	{
		uint8_t    *old = sk->regs;
		uint8_t    *regs = sk->resize(sk->resize_arg, NULL, (size_t) 1 << p);
		int			oldp = sk->p;
		uint32_t	i;

		if (regs == NULL)
			return 0;
		sk->p = p;
		sk->regs = regs;
		memset(sk->regs, 0, (size_t) 1 << p);
		for (i = 0; i < (UINT32_C(1) << oldp); i++)
			merge_register(sk, oldp, i, old[i]);
		sk->resize(sk->resize_arg, old, 0);
		return 1;
	}
	sk->p = p;
	return hll_normalize(sk);
}

/*
 * prepare_merge: before merging a sketch of precision srcp into dst: fixes
 * dst's precision if it had none and folds dst down to srcp if it is finer
 * (the source is then folded to dst's precision by merge_register); 0 when
 * out of memory.
 */
static int
prepare_merge(HllSketch *dst, int srcp)
{
	if (dst->p == 0)
		dst->p = srcp;
	return hll_fold(dst, srcp);
}

/*
 * hll_merge_registers: adds a dense sketch of precision p, given as its 2^p
 * one-byte registers (xpu_hll_update's, as the GPU keeps them), to dst; 0
 * when out of memory.
 */
int
hll_merge_registers(HllSketch *dst, int p, const uint8_t *regs)
{
	uint32_t	i;

	if (!prepare_merge(dst, p))
		return 0;
	/* the source has more distinct hashes than any explicit sketch holds */
	if (!dst->dense && !densify(dst))
		return 0;
	for (i = 0; i < (UINT32_C(1) << p); i++)
		merge_register(dst, p, i, regs[i]);
	return 1;
}

/*
 * hll_merge: adds every hash of src to dst (the union); the result's
 * precision is the lower of the two.  src is not changed.  0 when out of
 * memory.
 */
int
hll_merge(HllSketch *dst, const HllSketch *src)
{
	uint32_t	i;

	if (src->p == 0)
		return 1;
	if (src->dense)
		return hll_merge_registers(dst, src->p, src->regs);
	if (!prepare_merge(dst, src->p))
		return 0;
	for (i = 0; i < src->n; i++)
		if (!hll_add_hash(dst, src->hashes[i]))
			return 0;
	return 1;
}

/* hll_memory: the bytes of memory *sk holds besides its HllSketch */
size_t
hll_memory(const HllSketch *sk)
{
	return (size_t) sk->cap * sizeof(uint64_t) + (sk->regs ? (size_t) 1 << sk->p : 0);
}

/* read_u64: the little-endian 64-bit word at b */
static uint64_t
read_u64(const uint8_t *b)
{
	uint64_t	v = 0;
	int			k;

	for (k = 0; k < 8; k++)
		v |= (uint64_t) b[k] << (8 * k);
	return v;
}

/* packed_register: register i of packed 6-bit registers at b */
static uint8_t
packed_register(const uint8_t *b, uint32_t i)
{
	uint32_t	bit = 6 * i;
	uint32_t	w = b[bit / 8];

	if (bit % 8 > 2)
		w |= (uint32_t) b[bit / 8 + 1] << 8;
	return (uint8_t) ((w >> (bit % 8)) & 0x3f);
}

/*
 * hll_merge_serialized: hll_merge from a serialized sketch that
 * hll_validate accepted; 0 when out of memory
 */
int
hll_merge_serialized(HllSketch *dst, const uint8_t *buf, size_t len)
{
	int			srcp = buf[3];
	const uint8_t *payload = buf + HLL_HEADER_SIZE;
	uint32_t	i;

	if (!prepare_merge(dst, srcp))
		return 0;
	if (buf[4] == HLL_ENC_EXPLICIT)
	{
		for (i = 0; i < (len - HLL_HEADER_SIZE) / 8; i++)
			if (!hll_add_hash(dst, read_u64(payload + 8 * i)))
				return 0;
		return 1;
	}
	if (!dst->dense && !densify(dst))
		return 0;
	for (i = 0; i < (UINT32_C(1) << srcp); i++)
		merge_register(dst, srcp, i, packed_register(payload, i));
	return 1;
}

/* hll_histogram: counts[k] = registers of rank k, k = 0 .. 65 - p (66 - p entries) */
void
hll_histogram(HllSketch *sk, uint32_t *counts)
{
	int			p = sk->p;
	uint32_t	m = UINT32_C(1) << p;
	uint32_t	i;

	(void) hll_normalize(sk);
	memset(counts, 0, sizeof(uint32_t) * (XPU_HLL_MAX_RANK(p) + 1));
	if (sk->dense)
	{
		for (i = 0; i < m; i++)
			counts[sk->regs[i]]++;
		return;
	}
	/* sorted hashes come grouped by register (the top p bits) */
	counts[0] = m;
	for (i = 0; i < sk->n;)
	{
		uint32_t	reg = xpu_hll_index(sk->hashes[i], p);
		uint8_t		best = 0;

		for (; i < sk->n && xpu_hll_index(sk->hashes[i], p) == reg; i++)
		{
			uint8_t		r = xpu_hll_rank(sk->hashes[i], p);

			best = r > best ? r : best;
		}
		counts[0]--;
		counts[best]++;
	}
}

/* sigma and tau of Ertl's estimator (see the file header) */
static double
ertl_sigma(double x)
{
	double		y = 1.0,
				z = x,
				prev;

	if (x == 1.0)
		return INFINITY;
	do
	{
		x *= x;
		prev = z;
		z += x * y;
		y += y;
	} while (z != prev);
	return z;
}

static double
ertl_tau(double x)
{
	double		y = 1.0,
				z,
				prev;

	if (x == 0.0 || x == 1.0)
		return 0.0;
	z = 1.0 - x;
	do
	{
		x = sqrt(x);
		prev = z;
		y *= 0.5;
		z -= (1.0 - x) * (1.0 - x) * y;
	} while (z != prev);
	return z / 3.0;
}

/*
 * hll_estimate: the estimated number of distinct hashes: exact for an
 * explicit sketch, Ertl's improved estimator for a dense one.
 */
double
hll_estimate(HllSketch *sk)
{
	uint32_t	counts[XPU_HLL_MAX_RANK(XPU_HLL_MIN_BITS) + 1];
	int			q;
	double		m,
				z;
	int			k;

	if (sk->p == 0)
		return 0.0;
	(void) hll_normalize(sk);
	if (!sk->dense)
		return (double) sk->n;
	hll_histogram(sk, counts);
	q = 64 - sk->p;
	m = (double) (UINT32_C(1) << sk->p);
	z = m * ertl_tau((m - counts[q + 1]) / m);
	for (k = q; k >= 1; k--)
		z = 0.5 * (z + counts[k]);
	z += m * ertl_sigma(counts[0] / m);
	return m * m / (2.0 * log(2.0) * z);
}

/* hll_serialized_size: the bytes hll_serialize writes for *sk (p fixed) */
size_t
hll_serialized_size(HllSketch *sk)
{
	(void) hll_normalize(sk);
	if (sk->dense)
		return HLL_HEADER_SIZE + hll_dense_bytes(sk->p);
	return HLL_HEADER_SIZE + (size_t) 8 * sk->n;
}

/* hll_serialize: writes *sk (p fixed) in the serialized format to out */
void
hll_serialize(HllSketch *sk, uint8_t *out)
{
	uint8_t    *payload = out + HLL_HEADER_SIZE;
	uint32_t	i;
	int			k;

	(void) hll_normalize(sk);
	memset(out, 0, HLL_HEADER_SIZE);
	out[0] = HLL_MAGIC0;
	out[1] = HLL_MAGIC1;
	out[2] = HLL_VERSION;
	out[3] = (uint8_t) sk->p;
	out[4] = sk->dense ? HLL_ENC_DENSE : HLL_ENC_EXPLICIT;
	if (!sk->dense)
	{
		for (i = 0; i < sk->n; i++)
			for (k = 0; k < 8; k++)
				payload[8 * i + k] = (uint8_t) (sk->hashes[i] >> (8 * k));
		return;
	}
	memset(payload, 0, hll_dense_bytes(sk->p));
	for (i = 0; i < (UINT32_C(1) << sk->p); i++)
	{
		uint32_t	bit = 6 * i;
		uint32_t	v = (uint32_t) sk->regs[i] << (bit % 8);

		payload[bit / 8] |= (uint8_t) v;
		if (v >> 8)
			payload[bit / 8 + 1] |= (uint8_t) (v >> 8);
	}
}

/* validate_payload: the payload checks of hll_validate */
static const char *
validate_payload(const uint8_t *buf, size_t len)
{
	int			p = buf[3];
	const uint8_t *payload = buf + HLL_HEADER_SIZE;
	size_t		plen = len - HLL_HEADER_SIZE;
	uint32_t	i;

	if (buf[4] == HLL_ENC_EXPLICIT)
	{
		if (plen % 8 != 0)
			return "the length of an explicit sketch is not 8 plus a multiple of 8";
		if (plen / 8 > hll_explicit_limit(p))
			return "an explicit sketch holds more hashes than its precision allows";
		for (i = 1; i < plen / 8; i++)
			if (read_u64(payload + 8 * (i - 1)) >= read_u64(payload + 8 * i))
				return "the hashes of an explicit sketch are not in strictly increasing order";
		return NULL;
	}
	if (plen != hll_dense_bytes(p))
		return "the length of a dense sketch does not match its precision";
	for (i = 0; i < (UINT32_C(1) << p); i++)
		if (packed_register(payload, i) > XPU_HLL_MAX_RANK(p))
			return "a register of a dense sketch is larger than its precision allows";
	return NULL;
}

/*
 * hll_validate: NULL when buf[0..len) is a sketch this code can read, else
 * a message (lower case, no period) saying what is wrong with it.
 */
const char *
hll_validate(const uint8_t *buf, size_t len)
{
	if (len < HLL_HEADER_SIZE)
		return "the value is shorter than a sketch header";
	if (buf[0] != HLL_MAGIC0 || buf[1] != HLL_MAGIC1)
		return "the value does not start with the magic bytes of a pg_warp sketch";
	if (buf[2] != HLL_VERSION)
		return "the sketch has an unsupported format version";
	if (buf[3] < XPU_HLL_MIN_BITS || buf[3] > XPU_HLL_MAX_BITS)
		return "the sketch's precision is outside 4 .. 18";
	if (buf[4] != HLL_ENC_EXPLICIT && buf[4] != HLL_ENC_DENSE)
		return "the sketch has an unknown encoding";
	if (buf[5] != 0 || buf[6] != 0 || buf[7] != 0)
		return "the reserved bytes of the sketch header are not zero";
	return validate_payload(buf, len);
}
