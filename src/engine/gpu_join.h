/*-------------------------------------------------------------------------
 *
 * gpu_join.h
 *		GpuJoin: the hash joins of a star query in the engine's pass
 *		(gpu_join.c): which joins the engine takes and why not, and their
 *		inner tables at run time.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_JOIN_H
#define PG_WARP_GPU_JOIN_H

#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"

#include "xpu/xpu_program.h"

/* one join depth as the planner found it */
typedef struct GjDepth
{
	RelOptInfo *rel;			/* the inner relation (a base relation) */
	Path	   *inner_path;		/* the plan of its rows (gj_inner_path) */
	int			jointype;		/* XPU_JOIN_INNER, _LEFT, _SEMI or _ANTI */
	List	   *outer_keys;		/* Exprs over the outer relation and the depths before */
	List	   *inner_keys;		/* Exprs over rel, equal to outer_keys' */
	List	   *key_clauses;	/* the clauses the keys come from */
	List	   *quals;			/* join clauses beyond the keys (Exprs) */
	List	   *pay_vars;		/* Vars of rel that later expressions read */
	bool		unique;			/* the inner keys are proved unique (else an
								 * INNER or LEFT depth probes every match) */
	double		rows_out;		/* PostgreSQL's estimate of the rows after it */
} GjDepth;

/* the joins under a grouping: the outer relation and the depths in probe order */
typedef struct GjPlan
{
	RelOptInfo *outer;
	List	   *depths;			/* GjDepth */
} GjPlan;

/* one depth at run time: its inner plan's rows become a table in the service */
typedef struct GjInner
{
	PlanState  *ps;				/* the inner plan: keys, then payload columns */
	int			jointype;		/* XPU_JOIN_INNER, _LEFT, _SEMI or _ANTI */
	int			n_keys;
	int			n_key_clauses;	/* of the depth's clauses (EXPLAIN), the keys' */
	bool		each;			/* the keys may repeat: a probe of every match */
	uint64		join_id;		/* the service's table, 0: not loaded */
	double		rows;			/* inner rows read */
	uint64		bytes;			/* the table's bytes */
	double		build_ms;		/* reading the inner rows and building */
} GjInner;

extern bool pg_warp_enable_gpujoin;

/* planning */
extern GjPlan *gj_plan_input(PlannerInfo *root, RelOptInfo *input_rel, bool heap_ok,
							 const char **why);
extern const char *gj_plan_payload(GjPlan *gp, List *upper_exprs);
extern bool gj_plan_expands(const GjPlan *gp);
extern List *gj_codegen_joins(const GjPlan *gp);
extern List *gj_outer_exprs(const GjPlan *gp);
extern List *gj_private(const GjPlan *gp);
extern Plan *gj_inner_plan(Plan *plan, List *depth_private);
extern double gj_inner_cost(const GjPlan *gp);

/* execution */
extern GjInner *gj_exec_init(List *private, List *inner_ps, int *n_depths);
extern bool gj_exec_load(GjInner *inner, int n, const XpuProgram *prog, const char **why);
extern void gj_explain(GjInner *inner, int n, List *clauses, List *ctx, bool analyze,
					   struct ExplainState *es);
extern void pg_warp_gpu_join_init(void);

#endif							/* PG_WARP_GPU_JOIN_H */
