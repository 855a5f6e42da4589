/*-------------------------------------------------------------------------
 *
 * gpu_preagg.h
 *		What gpu_preagg.c (GpuPreAgg's planning and execution) and
 *		preagg_values.c (the engine's groups as PostgreSQL values) share:
 *		the aggregates the engine computes and how their states become
 *		PostgreSQL's results.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_PREAGG_H
#define PG_WARP_GPU_PREAGG_H

#include "fmgr.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"

#include "engine/gpu_join.h"
#include "xpu/xpu_agg.h"

/* how a group's state becomes PostgreSQL's result */
typedef enum GpaFinal
{
	FIN_COUNT,					/* int8 count */
	FIN_SUM_INT8,				/* sum(int2/int4): int8 */
	FIN_SUM_NUMERIC,			/* sum(int8), sum(numeric): numeric */
	FIN_AVG_NUMERIC,			/* avg of integers and numerics: numeric_div */
	FIN_SUM_FLOAT8,
	FIN_AVG_FLOAT8,
	FIN_SUM_FLOAT4,
	FIN_MINMAX,					/* the value, of the argument's type */
	FIN_VAR_EXACT,				/* stddev/variance of integers and numerics:
								 * PostgreSQL's deserial and final functions
								 * over N, sum(x), sum(x * x) */
	FIN_VAR_FLOAT,				/* stddev/variance of floats: PostgreSQL's
								 * final function over {N, Sx, Sxx} */
	FIN_HLL,					/* hll_count, hll_sketch: pg_warp's final
								 * function over the sketch of the hashes */
	FIN_TEXT					/* min/max of text: the text */
} GpaFinal;

/*
 * An aggregate the engine computes: the kinds of its one or two engine
 * states (kind2 0: one), whose argument is the aggregate's.
 */
typedef struct GpaAggInfo
{
	Oid			fn;				/* pg_proc OID of the aggregate */
	XpuAggKind	kind;
	Oid			argtype;		/* InvalidOid: count(*) or any type */
	GpaFinal	final;
	XpuAggKind	kind2;
} GpaAggInfo;

/* one aggregate of a GpuPreAgg node at run time */
typedef struct GpaAggExec
{
	const GpaAggInfo *info;
	Oid			aggfn;			/* the aggregate (pg_proc OID) */
	int			hll_p;			/* FIN_HLL: the precision of its sketches */
	Oid			argtype;		/* the argument's type (count: any) */
	bool		arg_float2;		/* argtype is pg_warp's float2 */
	int			scale;			/* numeric arguments: their register scale */
	int			first;			/* its first state among a group's states */
	/* FIN_VAR_*: PostgreSQL's functions of the aggregate (pg_aggregate) */
	FmgrInfo	finalfn;
	FmgrInfo	deserialfn;		/* FIN_VAR_EXACT, FIN_HLL */
	bool		poly;			/* FIN_VAR_EXACT: an Int128AggState (int2/int4) */
} GpaAggExec;

/* what the planner found out about one grouping (GpaPlanInfo) */
typedef struct GpaPlanInfo
{
	Index		relid;			/* the outer table's range table index */
	List	   *quals;			/* its restriction clauses (plain exprs) */
	List	   *keys;			/* group key expressions */
	List	   *aggrefs;		/* distinct Aggrefs of the target and HAVING */
	List	   *having;			/* HAVING, implicit AND */
	GjPlan	   *join;			/* the joins under the grouping (GpuJoin), or NULL */
	Node	   *program;		/* the engine's program (engine_plan_program) */
} GpaPlanInfo;

/* what a GpuPreAgg node returns (custom_private's mode) */
#define GPA_FINAL				0	/* the grouping's rows */
#define GPA_PARTIAL_PARALLEL	1	/* partial states, a parallel heap run's share */
#define GPA_PARTIAL				2	/* partial states of its whole input (a partition) */

/* in preagg_aggs.c */
extern const GpaAggInfo *gpa_agg_info(Oid fn);
extern int	gpa_n_states(const GpaAggInfo *info);

/* in gpu_preagg_plan.c */
extern void gpa_plan_init(void);
extern bool gpa_heap_enabled(void);
extern bool gpa_grouping_offloadable(PlannerInfo *root, GroupPathExtraData *extra);
extern List *gpa_base_quals(PlannerInfo *root, RelOptInfo *base, const char **why);
extern GpaPlanInfo *gpa_plan_grouping(PlannerInfo *root, RelOptInfo *base, GjPlan *join,
									  RelOptInfo *output_rel, GroupPathExtraData *extra,
									  bool partial, const char **why);
extern bool gpa_compiles(PlannerInfo *root, GpaPlanInfo *pi);
extern CustomPath *gpa_make_path(RelOptInfo *output_rel, GpaPlanInfo *pi, Path *fallback,
								 int mode);
extern void gpa_path_cost(PlannerInfo *root, CustomPath *cp, GpaPlanInfo *pi,
						  RelOptInfo *base, double ngroups, bool with_inner);
extern AttrNumber *gpa_attnos(Index relid, List *exprs, int *n);
extern Plan *gpa_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);

/* in gpu_preagg.c */
extern const CustomPathMethods *gpa_path_methods(void);
extern const CustomScanMethods *gpa_scan_methods(void);

/* in gpu_join_part.c */
extern bool gpa_partition_paths(PlannerInfo *root, RelOptInfo *input_rel,
								RelOptInfo *output_rel, GroupPathExtraData *gx,
								const char **why);
extern void pg_warp_gpu_join_part_init(void);

/* in preagg_values.c */

/*
 * gpa_decode_keys: the key bytes of one group from the service (len bytes
 * at p) into values/nulls[0 .. n_keys - 1], of key_types (numerics at
 * key_scales; float2_oid: pg_warp's float2, InvalidOid when absent)
 */
extern void gpa_decode_keys(int n_keys, const Oid *key_types, const int *key_scales,
							Oid float2_oid, const uint8 *p, uint32 len, Datum *values,
							bool *nulls);

/*
 * gpa_key_zero_sign: a float key's value (*value, of type typid; float2_oid
 * as gpa_decode_keys') made -0 where the group's hidden ZERO_SIGN state
 * (sign) says that every row was -0: the key bytes are canonical (0), and
 * PostgreSQL returns the value of a row of the group
 */
extern void gpa_key_zero_sign(Oid typid, Oid float2_oid, const XpuAggState *sign, Datum *value);

/* gpa_final: an aggregate's result from its engine states (extra: HLL, text) */
extern Datum gpa_final(GpaAggExec *ae, const XpuAggState *s, const uint8 *extra,
					   bool *isnull);

/* gpa_partial: an aggregate's partial state, as its Partial Aggregate returns it */
extern Datum gpa_partial(GpaAggExec *ae, const XpuAggState *s, const uint8 *extra,
						 bool *isnull);

/* in preagg_store.c: a run's AGG_RESULT messages, spilled past hash memory */
typedef struct GpaStore GpaStore;
extern GpaStore *gpa_store_create(void);
extern void gpa_store_add(GpaStore *s, char *msg, uint32 len);
extern void gpa_store_rewind(GpaStore *s);
extern const char *gpa_store_next(GpaStore *s, uint32 *len);
extern void gpa_store_reset(GpaStore *s);
extern uint64 gpa_store_spilled(const GpaStore *s);

#endif							/* PG_WARP_GPU_PREAGG_H */
