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

#include <limits.h>

#include "access/parallel.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "pg_warp.h"

PG_MODULE_MAGIC;

/* pg_warp.enabled: master switch for offloading queries (GPU or CPU engine) */
bool		pg_warp_enabled = true;

/*
 * pg_warp.arrow_max_buffer_size (kB): the most memory one buffer of an Arrow
 * record batch may take once read and decompressed; bigger ones are refused
 * (53200) before anything is allocated.
 */
int			pg_warp_arrow_max_buffer_size = 1024 * 1024;

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

	DefineCustomIntVariable("pg_warp.arrow_max_buffer_size",
							"Largest buffer of an Arrow record batch that arrow_fdw reads into memory.",
							"A buffer (string data above all, stored or after decompression) "
							"larger than this is refused before it is allocated.",
							&pg_warp_arrow_max_buffer_size,
							1024 * 1024,
							64,
							INT_MAX,
							PGC_SUSET,
							GUC_UNIT_KB,
							NULL, NULL, NULL);

	pg_warp_gpu_init();
	arrow_fdw_init();
	pg_warp_filter_init();
	pg_warp_service_init();
	pg_warp_gpu_preagg_init();
	pg_warp_gpuscan_init();
	pg_warp_hll_init();
	pg_warp_explain_why_init();

	/*
	 * everything else that is ours is pg_warp.<name>; reject typos, and
	 * the schema's name used as a prefix by mistake (pgwarp.enabled)
	 */
	MarkGUCPrefixReserved("pg_warp");
	MarkGUCPrefixReserved("pgwarp");

	/*
	 * Loaded by CREATE EXTENSION, a function call or LOAD: the planner
	 * hooks are in, but the service and its engine are not (they start
	 * with the postmaster), so no query of this session runs in the engine
	 */
	if (!pg_warp_preloaded && !IsBinaryUpgrade && !IsParallelWorker())
		ereport(WARNING,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_warp is not in shared_preload_libraries: its GPU and CPU engines are off"),
				 errdetail("arrow_fdw, pg2arrow's types, float2 and the HyperLogLog functions work; "
						   "GpuScan and GpuPreAgg need the pg_warp service, which starts with the server."),
				 errhint("Add pg_warp to shared_preload_libraries in postgresql.conf and restart the server.")));

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
