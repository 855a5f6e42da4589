/*-------------------------------------------------------------------------
 *
 * gpu_join_scan.h
 *		GpuJoin as a plan node of its own (gpu_join_scan.c): the joins of a
 *		query without grouping, run in the engine's pass over the outer
 *		table, the joined rows coming back through GpuScan's row path
 *		(gpuscan.c, which executes the node).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_JOIN_SCAN_H
#define PG_WARP_GPU_JOIN_SCAN_H

#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"

#include "engine/codegen.h"
#include "engine/engine.h"

/* in gpuscan.c: GpuScan's planning helpers GpuJoin shares, and its node's methods */
extern bool gs_add_attnos(List *exprs, Index relid, List **attnos);
extern EngineColumns *gs_columns(Oid relid, List *attnos);
extern Path *gs_cheapest_path(List *pathlist, NodeTag type);
struct RelationData;
extern CodegenScan *gs_heap_codegen(struct RelationData *rel, Index relid, List *quals,
									List **attnos);
extern bool pg_warp_enable_gpuscan_heap;
extern const CustomPathMethods *gpuscan_join_path_methods(void);
extern const CustomScanMethods *gpuscan_join_scan_methods(void);

/* in gpu_join_scan.c */
extern Plan *gjs_plan_path(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);
extern bool gjs_output_type(Oid typid, XpuType type);
extern void pg_warp_gpu_join_scan_init(void);

#endif							/* PG_WARP_GPU_JOIN_SCAN_H */
