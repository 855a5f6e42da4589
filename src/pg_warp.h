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

/* in gpu_device.c */
struct XpuError;
extern char *pg_warp_fatbin_path;
extern void pg_warp_gpu_init(void);
extern void pg_warp_report_xpu_error(const struct XpuError *err);

#endif							/* PG_WARP_H */
