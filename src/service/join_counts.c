/*-------------------------------------------------------------------------
 *
 * join_counts.c
 *		The rows into and out of each join depth (join_counts.h).
 *
 * The JOIN stage (codegen.c, cg_joins) opens depth d + 1 under a mask on
 * the register that depth d leaves true for the rows it keeps, so the
 * rows that leave depth d are the rows that enter depth d + 1, and those
 * that leave the last depth are the rows that pass (the run's rows_passed:
 * QUAL and JOIN are the pass test, xpu_interp.h).  The runners count only
 * the rows entering each depth.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "service/join_counts.h"

WARP_STATIC_ASSERT(WARP_JOIN_DEPTHS == XPU_JOIN_COUNT_DEPTHS, "join depths counted");
WARP_STATIC_ASSERT(WARP_JOIN_DEPTHS >= WARP_MAX_JOINS, "every join depth counted");

void
svc_join_counts_add(SvcJoinCounts *run, uint64_t *mine, int n)
{
	for (int d = 0; d < n && d < WARP_JOIN_DEPTHS; d++)
	{
		if (mine[d] != 0)
			__atomic_add_fetch(&run->in[d], mine[d], __ATOMIC_RELAXED);
		mine[d] = 0;
	}
}

void
svc_join_counts_reply(const SvcJoinCounts *run, int n_joins, uint64_t passed, int counted,
					  uint32_t *depths, uint64_t *in, uint64_t *out)
{
	*depths = 0;
	memset(in, 0, WARP_JOIN_DEPTHS * sizeof(uint64_t));
	memset(out, 0, WARP_JOIN_DEPTHS * sizeof(uint64_t));
	if (!counted || n_joins <= 0 || n_joins > WARP_JOIN_DEPTHS)
		return;
	*depths = (uint32_t) n_joins;
	for (int d = 0; d < n_joins; d++)
	{
		in[d] = __atomic_load_n(&run->in[d], __ATOMIC_RELAXED);
		out[d] = d + 1 < n_joins ? __atomic_load_n(&run->in[d + 1], __ATOMIC_RELAXED) : passed;
	}
}
