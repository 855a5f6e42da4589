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

#include "utils/relcache.h"
#include "xpu/protocol.h"
#include "xpu/xpu_join.h"
#include "xpu/xpu_program.h"

/* one join depth as the planner found it */
typedef struct GjDepth
{
	RelOptInfo *rel;			/* the inner relation (a base relation) */
	Path	   *inner_path;		/* the plan of its rows (gj_inner_path) */
	int			jointype;		/* XPU_JOIN_INNER, _LEFT, _SEMI, _ANTI, or
								 * _RIGHT / _FULL (the last depth only) */
	List	   *outer_keys;		/* Exprs over the outer relation and the depths before */
	List	   *inner_keys;		/* Exprs over rel, equal to outer_keys' */
	List	   *key_clauses;	/* the clauses the keys come from */
	List	   *quals;			/* join clauses beyond the keys (Exprs) */
	List	   *pay_vars;		/* Vars of rel that later expressions read */
	List	   *cache_item;		/* gj_cache_plan's, NIL: its table is not kept */
	bool		unique;			/* the inner keys are proved unique (else an
								 * INNER or LEFT depth probes every match) */
	double		rows_out;		/* PostgreSQL's estimate of the rows after it */
} GjDepth;

/* the joins under a grouping: the outer relation and the depths in probe order */
typedef struct GjPlan
{
	PlannerInfo *root;			/* the query's planner state */
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
	/* EXPLAIN VERBOSE: build_ms's parts, a group's scans, the table, its load */
	double		scan_ms;
	double		table_ms;
	double		load_ms;
	char	   *share_key;		/* what decides its table (gj_exec_load); NULL:
								 * a table of its own (a volatile inner plan) */
	const char *name;			/* its node, for EXPLAIN (gj_exec_name) */
	const char *shared_with;	/* the node that built the table, NULL: this one */
	List	   *cache_item;		/* gj_cache_plan's, NIL: the table is not kept */
	bool		from_cache;		/* the table an earlier query kept */
	bool		unique;			/* its keys are unique (XPU_JOIN_UNIQUE) */
	/* EXPLAIN ANALYZE: the rows into and out of the depth (gj_rows_show) */
	bool		rows_counted;
	uint64		rows_in;
	uint64		rows_out;
	/* its inner scan run with other depths' under one Gather, NULL: alone */
	struct GjGroup *group;
	/* found not kept by the service before its group ran (gj_load), or NULL */
	struct GjFind *find;
	/* its table's memory made while its rows are scanned (gj_table_prepare) */
	struct GjPrepared *prepared;
	uint64		prepared_bytes; /* EXPLAIN VERBOSE: of the last table, 0: none */
	bool		prepared_used;	/* the table written into them (else let go) */
} GjInner;

/*
 * The rows into and out of each depth of a node's engine runs (the last
 * reply's join_in / join_out, xpu/protocol.h), summed over its runs and
 * participants (gpu_join_rows.c); runs counts the runs that counted them,
 * uncounted those that did not (a runner that does not count, a fallback):
 * EXPLAIN shows them only where every run counted.
 */
typedef struct GjRows
{
	int32		runs;
	int32		uncounted;
	uint64		in[WARP_MAX_JOINS];
	uint64		out[WARP_MAX_JOINS];
} GjRows;

/*
 * The inner tables of a parallel node, in its DSM: the leader builds them
 * once for the query before the workers start (gj_shared_build, from the
 * node's dsm_init), every participant probes them (gj_shared_take).
 */
typedef struct GjShared
{
	int			state;			/* GJ_SHARED_* */
	uint64		ids[WARP_MAX_JOINS];	/* GJ_SHARED_BUILT: the service's tables */
	char		why[256];		/* GJ_SHARED_REFUSED: why they stay in PostgreSQL */
} GjShared;

#define GJ_SHARED_NONE		0	/* not built yet */
/*
 * What the rows of a depth's inner plan become in its table: the spec, and
 * for converting each column its type's OID and a numeric payload's scale
 * (gj_load; in the DSM of a parallel build, gpu_join_build.c)
 */
typedef struct GjSpec
{
	XpuJoinSpec spec;
	Oid			typids[XPU_JOIN_MAX_KEYS + XPU_JOIN_MAX_PAYLOAD];
	int16		pay_scales[XPU_JOIN_MAX_PAYLOAD];
} GjSpec;

/*
 * What building a depth's table needs once the service did not have it
 * (gj_find): the spec, and where the table may be kept for later queries,
 * its relation, key and the version of its rows before they were read
 */
typedef struct GjFind
{
	GjSpec		gs;
	Oid			relid;			/* InvalidOid: the table is not kept */
	uint8		key[WARP_JOIN_DIGEST];
	uint8		version[WARP_JOIN_DIGEST];
} GjFind;

/*
 * Depths whose inner scans run at once: a Gather over a Parallel Append of
 * their GpuJoinBuild nodes (gpu_join_build.c), run by the first depth that
 * builds its table; each depth then takes its images
 */
typedef struct GjGroup
{
	PlanState  *ps;				/* the Gather */
	bool		ran;			/* since the node's start or rescan */
	double		ms;				/* its last run */
} GjGroup;

/*
 * What a node does once, right before the first of its inner tables that
 * is really built (not found kept by the service) from an inner plan whose
 * total cost is min_cost or more: GpuPreAgg starts its read-ahead there
 * (gj_exec_load's start)
 */
typedef struct GjBuildStart
{
	void		(*fn) (void *arg);
	void	   *arg;
	double		min_cost;
	bool		done;
} GjBuildStart;

/* the next row of an inner plan, NULL at the end (gj_add_rows) */
typedef TupleTableSlot *(*GjNextRow) (void *arg);

#define GJ_SHARED_BUILT		1
#define GJ_SHARED_REFUSED	2

extern bool pg_warp_enable_gpujoin;
extern double pg_warp_gpujoin_read_ahead_cost;

/* planning */
extern GjPlan *gj_plan_input(PlannerInfo *root, RelOptInfo *input_rel, bool (*heap_ok) (void),
							 const char **why);
extern GjPlan *gj_plan_outer(PlannerInfo *root, RelOptInfo *input_rel, RelOptInfo *outer,
							 const char **why);
extern GjPlan *gj_plan_child(PlannerInfo *root, const GjPlan *gp, RelOptInfo *child,
							 AppendRelInfo *ai);
extern bool gj_plan_parallel(GjPlan *gp);
extern const char *gj_plan_payload(GjPlan *gp, List *upper_exprs);
extern bool gj_plan_expands(const GjPlan *gp);
extern bool gj_plan_outer_join(const GjPlan *gp);
extern List *gj_codegen_joins(const GjPlan *gp);
extern List *gj_outer_exprs(const GjPlan *gp);
extern List *gj_private(const GjPlan *gp);
extern List *gj_inner_plans(List *plans, List *depth_privates, List **privates_out);
extern double gj_inner_cost(const GjPlan *gp);

/* execution */
extern GjInner *gj_exec_init(List *private, List *inner_ps, int *n_depths);
extern void gj_exec_name(GjInner *inner, int n, const char *name);
extern bool gj_exec_load(GjInner *inner, int n, const XpuProgram *prog, GjBuildStart *start,
						 const char **why);
extern void gj_exec_shutdown(GjInner *inner, int n);
extern void gj_exec_end(GjInner *inner, int n);
extern const char *gj_shared_build(GjShared *sh, bool reinit, GjInner *inner, int n,
								   const XpuProgram *prog, const char *cannot);
extern bool gj_shared_take(const GjShared *sh, GjInner *inner, int n, const char **why);
extern void gj_explain(GjInner *inner, int n, List *clauses, List *ctx, bool analyze,
					   struct ExplainState *es);
extern const char *gj_build_why(const XpuError *err);
extern bool gj_add_rows(GjNextRow next, void *arg, const GjSpec *gs, XpuJoinBuilder *b,
						double *rows, const char **why);
extern TupleTableSlot *gj_next_exec(void *arg);
extern void pg_warp_gpu_join_init(void);

extern bool gj_find(GjInner *g, int d, const XpuProgram *prog, GjFind *f);
extern int	gj_query_find(GjInner *g, int d, const XpuProgram *prog, const char **why);
extern char *gj_query_key(GjInner *g, int d, const XpuProgram *prog);
extern void gj_query_add(GjInner *g, int d, const XpuProgram *prog, const char *why);

/* in gpu_join_build.c: an inner table built by the participants of a Gather */
extern Plan *gj_build_plan(Plan *plan);
extern List *gj_build_group(List *plans, List *depth_privates, List **privates_out);
extern PlanState *gj_build_node(PlanState *inner);
extern double gj_build_rows(PlanState *inner);
extern bool gj_build_run(PlanState *inner, const GjSpec *gs, XpuJoinBuilder *b, double *rows,
						 const char **why);
extern bool gj_build_take(PlanState *node, XpuJoinBuilder *b, double *rows, const char **why);
extern void gj_build_release(PlanState *node);
extern bool gj_build_groups(GjInner *inner, int n, const XpuProgram *prog, GjBuildStart *start,
							const char **why);
extern void gj_build_init(void);

/* in gpu_join_table.c: a depth's table made and loaded into the service */
typedef struct GjTables GjTables;
extern void gj_table_prepare(GjInner *g, const GjSpec *gs, double rows);
extern bool gj_load(GjInner *g, int d, const XpuProgram *prog, GjBuildStart *before,
					GjTables *made, const char **why);
extern GjTables *gj_tables_make(GjInner *inner, int n, const XpuProgram *prog,
								GjBuildStart *before);
extern void gj_tables_discard(GjTables *made);

/* in gpu_join_rows.c: the rows into and out of each depth */
extern void gj_rows_add(GjRows *r, int n, uint32 depths, const uint64 *in, const uint64 *out);
extern void gj_rows_uncounted(GjRows *r);
extern void gj_rows_sum(GjRows *r, const GjRows *other);
extern void gj_rows_show(GjInner *inner, int n, const GjRows *r);
extern void gj_rows_explain(const GjInner *inner, int d, StringInfo s, struct ExplainState *es);
extern void gj_rows_explain_group(const GjInner *inner, int n, struct ExplainState *es);

/* in gpu_join_cache.c: inner tables kept for later queries */
extern bool pg_warp_gpujoin_cache;
extern List *gj_cache_plan(PlannerInfo *root, const GjDepth *d);
extern void gj_cache_key(List *item, Relation rel, const XpuJoinSpec *spec,
						 const int16 *pay_scales, uint8 *out);
extern bool gj_cache_version(Relation rel, uint8 *out);
extern void gj_cache_init(void);

#endif							/* PG_WARP_GPU_JOIN_H */
