/*-------------------------------------------------------------------------
 *
 * shippable.h
 *		Can the engine take a relation, a group key, an aggregate, a
 *		column, and if not, why (shippable.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SHIPPABLE_H
#define PG_WARP_SHIPPABLE_H

#include "nodes/pathnodes.h"
#include "nodes/primnodes.h"

#include "engine/engine.h"

/* in shippable.c */
extern const char *ship_grouping_input(PlannerInfo *root, RelOptInfo *input_rel, bool partial,
									   bool (*heap_ok) (void));
extern const char *ship_group_key(SortGroupClause *sgc, Expr *e);
extern const char *ship_aggref(Aggref *a, bool engine_gpu);
extern const char *ship_aggrefs(Node *node, List **aggrefs, bool engine_gpu);
extern const char *ship_scan_column(Oid table, const ArrowScanColumn *c);

#endif							/* PG_WARP_SHIPPABLE_H */
