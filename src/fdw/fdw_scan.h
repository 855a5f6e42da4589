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

/* in fdw/arrow_fdw.c */
extern bool arrow_fdw_is_table(Oid relid);

#endif							/* PG_WARP_FDW_SCAN_H */
