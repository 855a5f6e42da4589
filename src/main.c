/*-------------------------------------------------------------------------
 *
 * main.c
 *		Entry point of the pg_warp extension: _PG_init, configuration
 *		parameters (GUCs) and SQL-callable functions about the extension.
 *
 * pg_warp works when loaded by shared_preload_libraries (the normal way) and
 * also when merely loaded by CREATE EXTENSION; features that need shared
 * memory or the warp service are unavailable in the second case and say so.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg_warp.h"

PG_MODULE_MAGIC;

/* pg_warp.enabled: master switch for offloading queries (GPU or CPU engine) */
bool		pg_warp_enabled = true;

/* true when loaded through shared_preload_libraries */
bool		pg_warp_preloaded = false;

void		_PG_init(void);

void
_PG_init(void)
{
	pg_warp_preloaded = process_shared_preload_libraries_in_progress;

	DefineCustomBoolVariable("pg_warp.enabled",
							 "Enables pg_warp's GPU and CPU query engines.",
							 "When off, every query runs on PostgreSQL's own executor.",
							 &pg_warp_enabled,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);

	pg_warp_gpu_init();
	arrow_fdw_init();
	pg_warp_service_init();

	/* everything else that is ours is pg_warp.<name>; reject typos */
	MarkGUCPrefixReserved("pg_warp");

}

PG_FUNCTION_INFO_V1(pg_warp_version);

/*
 * pgwarp.version() returns text
 *		The version of the loaded library (which may differ from the version
 *		of the installed SQL objects after an upgrade of the binaries).
 */
Datum
pg_warp_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(PG_WARP_VERSION));
}

PG_FUNCTION_INFO_V1(pg_warp_preloaded_fn);

/*
 * pgwarp.preloaded() returns bool
 *		Whether this backend loaded pg_warp through shared_preload_libraries.
 */
Datum
pg_warp_preloaded_fn(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(pg_warp_preloaded);
}
