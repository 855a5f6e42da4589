/*-------------------------------------------------------------------------
 *
 * filter.h
 *		The engine's row filter of arrow_fdw scans (filter.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FILTER_H
#define PG_WARP_FILTER_H

#include "commands/explain.h"
#include "nodes/execnodes.h"

#include "pg_warp.h"

typedef struct EngineFilter EngineFilter;

/* the columns of a scan: converters by attno - 1, the loaded attnos */
typedef struct EngineFilterColumns
{
	const ArrowConv *convs;
	const AttrNumber *ref_attnos;	/* chunk column i is attno ref_attnos[i] */
	int			n_ref;
} EngineFilterColumns;

/* in filter.c */
extern List *engine_filter_split(List *quals, Index scanrelid,
								 const EngineFilterColumns *cols, List **rest);
extern EngineFilter *engine_filter_begin(ScanState *ss, Index scanrelid,
										 const EngineFilterColumns *cols);
extern void engine_filter_batch(EngineFilter *f, const ArrowArray *const *arrays,
								int64 nrows);
extern bool engine_filter_row(const EngineFilter *f, int64 row);
extern bool engine_filter_recheck(EngineFilter *f, ExprContext *econtext,
								  TupleTableSlot *slot);
extern void engine_filter_explain(ScanState *ss, Index scanrelid,
								  const EngineFilterColumns *cols,
								  const EngineFilter *f, ExplainState *es);

#endif							/* PG_WARP_FILTER_H */
