/*-------------------------------------------------------------------------
 *
 * fdw_scan.h
 *		What arrow_fdw offers the engine (src/engine) for scans of Arrow
 *		foreign tables.
 *
 * The engine includes this header and nothing else of src/fdw: the FDW's
 * internals (fdw/arrow_fdw.h) stay private to it, so that either side can
 * change them alone.  It grows as the engine takes over Arrow scans.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FDW_SCAN_H
#define PG_WARP_FDW_SCAN_H

#include "postgres.h"

#include "arrow.h"

/*
 * One column of an Arrow scan as the engine may load it from the record
 * batches' ArrowArrays: the column's type and the field's layout.  plain is
 * false when the values are not in the field's own layout (dictionary or
 * run-end encoded) or the column has a domain: the engine leaves such a
 * column to the FDW's conversion.
 */
typedef struct ArrowScanColumn
{
	AttrNumber	attno;
	Oid			typid;			/* the column's type (the domain, if any) */
	bool		plain;
	ArrowTypeId arrow_id;		/* the field's type */
	ArrowTimeUnit unit;			/* timestamps */
	int32		scale;			/* decimals */
} ArrowScanColumn;

/* in fdw/arrow_fdw.c */
extern bool arrow_fdw_is_table(Oid relid);

#endif							/* PG_WARP_FDW_SCAN_H */
