/*-------------------------------------------------------------------------
 *
 * pg_warp.h
 *		Declarations shared by the layers of the extension, grouped by the
 *		file that defines them.
 *
 * The extension's sources live in folders by layer (DESIGN.md, "Layout"):
 * main.c here at the top, fdw/ (arrow_fdw; its internals are in
 * fdw/arrow_fdw.h, its interface for the engine in fdw/fdw_scan.h) and
 * engine/ (the backend half of the engine).  What one layer needs of another,
 * or of main.c, is declared here.
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
extern int	pg_warp_arrow_max_buffer_size;	/* kB */

/* in engine/service_supervisor.c */
extern int	pg_warp_max_async_tasks;
extern void pg_warp_service_init(void);

/* in engine/service_client.c */
extern int	pg_warp_service_timeout;
extern bool pg_warp_map_arrow_files;
extern void pg_warp_service_client_init(void);

/* in engine/device.c */
struct XpuError;
extern char *pg_warp_fatbin_path;
extern void pg_warp_gpu_init(void);
extern void pg_warp_report_xpu_error(const struct XpuError *err);

/* in engine/gpu_preagg.c */
extern bool pg_warp_enable_gpupreagg;
extern int	pg_warp_engine;
extern double pg_warp_engine_startup_cost;
extern double pg_warp_engine_row_cost;
extern void pg_warp_gpu_preagg_init(void);

/* in engine/explain_why.c: why a query stays in PostgreSQL (EXPLAIN VERBOSE) */
struct Expr;
struct PlannerInfo;
struct RelOptInfo;
struct ExplainState;
extern void pg_warp_explain_why_init(void);
extern void explain_why_codegen(struct PlannerInfo *root, Index relid, const char *node,
								struct Expr *fallback);
extern void explain_why_note(const char *fmt,...) pg_attribute_printf(1, 2);
extern void explain_why_rel(struct PlannerInfo *root, Index relid, const char *node,
							const char *why);
extern void explain_why_offered(struct RelOptInfo *rel, const char *node, double cost);
extern void explain_why_show(struct ExplainState *es, Oid relid);

/* in engine/gpuscan.c */
extern bool pg_warp_enable_gpuscan;
extern void pg_warp_gpuscan_init(void);

/* in engine/filter.c: installs the engine's row filter of Arrow scans */
extern void pg_warp_filter_init(void);

/* in fdw/arrow_fdw.c */
extern void arrow_fdw_init(void);

/* in types/hll.c */
extern int	pg_warp_hll_registers_bits;
extern void pg_warp_hll_init(void);

#endif							/* PG_WARP_H */
