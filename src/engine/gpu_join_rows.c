/*-------------------------------------------------------------------------
 *
 * gpu_join_rows.c
 *		EXPLAIN ANALYZE's rows into and out of each GpuJoin depth: the
 *		service counts them in every run (xpu/protocol.h, WARP_JOIN_DEPTHS:
 *		the CPU engine per tile, the GPU per block) and returns them in the
 *		run's last reply; the nodes (GpuPreAgg, GpuJoin) sum them over their
 *		runs and parallel participants (GjRows) and gj_explain shows them
 *		beside each depth's inner table:
 *
 *		  Join Depth 1: Inner Join on (lo.k = d.k) (inner rows 2556, table
 *		  64 kB, built in 1.2 ms; rows in 6001215, out 910812)
 *
 *		and, in the other formats, as the list "Join Rows" of {"Depth": 1,
 *		"Rows In": 6001215, "Rows Out": 910812}, one a depth.  Rows in: those that passed the scan's
 *		quals and every depth before; rows out: INNER and SEMI the rows that
 *		found their inner row (and whose join quals hold), ANTI those that
 *		found none, LEFT every row kept (NULL-extended ones too); a depth
 *		that probes every match counts each combination of matches, so its
 *		rows out may exceed its rows in.  A node any of whose runs did not
 *		count (a fallback, a runner without the counters) shows none.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/explain.h"

#include "engine/gpu_join.h"

/* gj_rows_add: one run's counts (its last reply's) into r; depths 0: it did not count */
void
gj_rows_add(GjRows *r, int n, uint32 depths, const uint64 *in, const uint64 *out)
{
	if (n <= 0)
		return;
	if (depths != (uint32) n || n > WARP_MAX_JOINS)
	{
		r->uncounted++;
		return;
	}
	r->runs++;
	for (int d = 0; d < n; d++)
	{
		r->in[d] += in[d];
		r->out[d] += out[d];
	}
}

/* gj_rows_uncounted: a run (or participant) that did not count */
void
gj_rows_uncounted(GjRows *r)
{
	r->uncounted++;
}

/* gj_rows_sum: other's runs into r */
void
gj_rows_sum(GjRows *r, const GjRows *other)
{
	r->runs += other->runs;
	r->uncounted += other->uncounted;
	for (int d = 0; d < WARP_MAX_JOINS; d++)
	{
		r->in[d] += other->in[d];
		r->out[d] += other->out[d];
	}
}

/* gj_rows_show: r's counts into the n depths' inner (what gj_explain shows) */
void
gj_rows_show(GjInner *inner, int n, const GjRows *r)
{
	for (int d = 0; d < n; d++)
	{
		inner[d].rows_counted = r != NULL && r->runs > 0 && r->uncounted == 0 &&
			d < WARP_MAX_JOINS;
		inner[d].rows_in = inner[d].rows_counted ? r->in[d] : 0;
		inner[d].rows_out = inner[d].rows_counted ? r->out[d] : 0;
	}
}

/*
 * gj_rows_explain: in text, depth d's rows, "; rows in N, out M", into s
 * (its parenthesis open)
 */
void
gj_rows_explain(const GjInner *inner, int d, StringInfo s, ExplainState *es)
{
	if (inner[d].rows_counted && es->format == EXPLAIN_FORMAT_TEXT)
		appendStringInfo(s, "; rows in " UINT64_FORMAT ", out " UINT64_FORMAT,
						 inner[d].rows_in, inner[d].rows_out);
}

/*
 * gj_rows_explain_group: in the other formats, the depths' rows as a list
 * "Join Rows" of {"Depth": d, "Rows In": N, "Rows Out": M}, for the depths
 * counted
 */
void
gj_rows_explain_group(const GjInner *inner, int n, ExplainState *es)
{
	bool		any = false;

	if (es->format == EXPLAIN_FORMAT_TEXT)
		return;
	for (int d = 0; d < n; d++)
		any = any || inner[d].rows_counted;
	if (!any)
		return;
	ExplainOpenGroup("Join Rows", "Join Rows", false, es);
	for (int d = 0; d < n; d++)
	{
		if (!inner[d].rows_counted)
			continue;
		ExplainOpenGroup("Join Depth", NULL, true, es);
		ExplainPropertyInteger("Depth", NULL, d + 1, es);
		ExplainPropertyInteger("Rows In", NULL, (int64) inner[d].rows_in, es);
		ExplainPropertyInteger("Rows Out", NULL, (int64) inner[d].rows_out, es);
		ExplainCloseGroup("Join Depth", NULL, true, es);
	}
	ExplainCloseGroup("Join Rows", "Join Rows", false, es);
}
