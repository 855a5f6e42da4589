/*-------------------------------------------------------------------------
 *
 * xpu_hll_sketch.h
 *		The HyperLogLog sketch of pg_warp (doc/hll.md) as plain C, without
 *		PostgreSQL: its two representations, adding hashes, merging, folding
 *		to a lower precision, the estimator, and the serialized format with
 *		its validation.  The one sketch of pg_warp: src/types/hll.c wraps it
 *		into SQL functions, the CPU engine's HLL states are sketches
 *		(xpu_agg.c), and the GPU's (kern_agg_hll.h: the same hashes, limit
 *		and registers in an atomic layout) are folded into them on the host.
 *		The per-value hash and register update are in xpu_hll.h.
 *
 * A sketch at precision p is either
 *	explicit	the set of distinct 64-bit hashes seen, while there are at most
 *				hll_explicit_limit(p) of them (exact counts for small sets), or
 *	dense		m = 2^p registers of one byte each (xpu_hll_update).
 * Which one a sketch uses depends only on the set of hashes added to it
 * (explicit exactly when it has at most hll_explicit_limit(p) distinct
 * hashes), so equal sets give equal serialized bytes whatever the order or
 * the grouping of the additions and merges.
 *
 * Memory comes from the caller's HllResizeFn, so that the extension can
 * allocate in an aggregate's memory context.  The functions that allocate
 * return 0 when resize returned NULL (the CPU engine's malloc; palloc never
 * does), the sketch then as it was or with the hashes added so far.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_HLL_SKETCH_H
#define XPU_HLL_SKETCH_H

#include <stddef.h>
#include <stdint.h>

#include "xpu_hll.h"

/*
 * The serialized format (all integers little-endian):
 *	bytes 0-1	magic 'W' 'H'
 *	byte 2		version (1)
 *	byte 3		precision p, 4..18
 *	byte 4		encoding: 0 explicit, 1 dense
 *	bytes 5-7	zero
 *	explicit:	the distinct hashes, 8 bytes each, in strictly increasing
 *				order, at most hll_explicit_limit(p) of them
 *	dense:		the m registers packed 6 bits each: register i is bits
 *				6i .. 6i+5 of the payload read as one little-endian bit
 *				string (bit k is bit k % 8 of byte k / 8); 6m/8 bytes
 */
#define HLL_MAGIC0			'W'
#define HLL_MAGIC1			'H'
#define HLL_VERSION			1
#define HLL_HEADER_SIZE		8
#define HLL_ENC_EXPLICIT	0
#define HLL_ENC_DENSE		1

/* resize(arg, ptr, size): allocate (ptr NULL), reallocate, or free (size 0) */
typedef void *(*HllResizeFn) (void *arg, void *ptr, size_t size);

typedef struct HllSketch
{
	int			p;				/* precision; 0 while no input fixed it */
	int			dense;			/* which representation */
	uint32_t	n;				/* explicit: hashes in hashes[] (may repeat) */
	uint32_t	cap;			/* explicit: room in hashes[] */
	uint32_t	sorted;			/* explicit: hashes[0..sorted) sorted, distinct */
	uint64_t   *hashes;			/* explicit: the hashes */
	uint8_t    *regs;			/* dense: 2^p registers */
	HllResizeFn resize;
	void	   *resize_arg;
} HllSketch;

extern uint32_t hll_explicit_limit(int p);
extern size_t hll_dense_bytes(int p);
extern void hll_init(HllSketch *sk, int p, HllResizeFn resize, void *arg);
extern void hll_free(HllSketch *sk);
extern int	hll_add_hash(HllSketch *sk, uint64_t hash);
extern int	hll_merge(HllSketch *dst, const HllSketch *src);
extern int	hll_merge_registers(HllSketch *dst, int p, const uint8_t *regs);
extern int	hll_fold(HllSketch *sk, int p);
extern int	hll_normalize(HllSketch *sk);
extern size_t hll_memory(const HllSketch *sk);
extern double hll_estimate(HllSketch *sk);
extern void hll_histogram(HllSketch *sk, uint32_t *counts);
extern size_t hll_serialized_size(HllSketch *sk);
extern void hll_serialize(HllSketch *sk, uint8_t *out);
extern const char *hll_validate(const uint8_t *buf, size_t len);
extern int	hll_merge_serialized(HllSketch *dst, const uint8_t *buf, size_t len);

#endif							/* XPU_HLL_SKETCH_H */
