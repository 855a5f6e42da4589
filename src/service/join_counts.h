/*-------------------------------------------------------------------------
 *
 * join_counts.h
 *		The rows into and out of each join depth of a run (EXPLAIN
 *		ANALYZE; xpu/protocol.h, WARP_JOIN_DEPTHS): the runners count the
 *		rows that enter each depth (XpuCtx.probes: per tile on the CPU
 *		engine, per block on the GPU), add them to the run's counts once a
 *		slice or a launch, and the reply derives the rows out of them
 *		(join_counts.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_JOIN_COUNTS_H
#define PG_WARP_JOIN_COUNTS_H

#include <stdint.h>

#include "xpu/protocol.h"
#include "xpu/xpu_program.h"

/* a run's counts: in[d] the rows that entered depth d, summed over threads */
typedef struct SvcJoinCounts
{
	uint64_t	in[WARP_JOIN_DEPTHS];
} SvcJoinCounts;

/* adds a thread's counts (n of them) to the run's, atomically, and zeroes them */
extern void svc_join_counts_add(SvcJoinCounts *run, uint64_t *mine, int n);

/*
 * the reply's join_depths, join_in and join_out for a run of n_joins
 * depths whose rows that pass (every depth behind them) are passed;
 * n_joins 0, or counted false: none
 */
extern void svc_join_counts_reply(const SvcJoinCounts *run, int n_joins, uint64_t passed,
								  int counted, uint32_t *depths, uint64_t *in,
								  uint64_t *out);

#endif							/* PG_WARP_JOIN_COUNTS_H */
