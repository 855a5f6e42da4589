/*-------------------------------------------------------------------------
 *
 * pg_warp.h
 *		Declarations shared by the extension's source files, grouped by the
 *		file that defines them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_H
#define PG_WARP_H

#include "postgres.h"

#define PG_WARP_VERSION		"0.1.0"

/* in main.c */
extern bool pg_warp_enabled;
extern bool pg_warp_preloaded;

#endif							/* PG_WARP_H */
