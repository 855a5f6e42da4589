/*-------------------------------------------------------------------------
 *
 * arrow_fdw.c
 *		arrow_fdw: Apache Arrow files as foreign tables.  This file holds
 *		its entry points: the handler, the ProcessUtility hook that checks
 *		tables when they are created or altered, and arrow_fdw_init.
 *
 * A foreign table names one file ("file"), several ("files", comma
 * separated) or every file of a directory ("dir", optionally filtered by
 * "suffix" or a glob "pattern").  All of them must have the same schema.
 * Columns map to top-level fields by name (or by the column option "field").
 *
 * What a scan reads: only the buffers of the columns that the query
 * references, and only the record batches whose statistics (pg2arrow -S,
 * see stats.c) do not rule out the WHERE clause.  A parallel scan
 * hands out record batches, across all files, through one atomic counter in
 * dynamic shared memory.
 *
 * Column types are checked against the files when the table is created or
 * altered (a ProcessUtility hook; needs the library loaded, i.e.
 * shared_preload_libraries) and again whenever a query is planned, so a type
 * that cannot hold a field is an error before any row is read.  Values are
 * converted exactly or not at all (datum.c).
 *
 * Files are opened and their metadata read at planning; the plan records
 * each file's identity (device, inode, size, modification time).  Every
 * process of a scan (leader and parallel workers) checks that the file it
 * opens has that identity, and every later reopen of the file checks it
 * again (file.c), so a scan reads exactly the files it planned with or
 * fails with "file changed during scan": never a mix of two files.  Only
 * regular files are read; a FIFO, socket or device is refused without being
 * opened (it could block the backend).
 *
 * The files of src/fdw, by concern:
 *		options.c	options, their validation, the list of a table's files
 *		file.c		one Arrow file in the backend: allocator, source, errors
 *		table.c		a table's files opened, columns mapped to fields
 *		datum.c		Arrow values -> Datums; the default type of a field
 *		stats.c		record-batch statistics: skipping batches
 *		estimate.c	row estimates from the statistics
 *		plan.c		sizes, costs, paths, the plan
 *		scan.c		execution, EXPLAIN, parallel state
 *		analyze.c	ANALYZE's sampler
 *		import.c	IMPORT FOREIGN SCHEMA
 * arrow_fdw.h declares their internals; fdw_scan.h is what the engine
 * (src/engine) may use.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "foreign/foreign.h"
#include "tcop/utility.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "fdw/arrow_fdw.h"
#include "fdw/fdw_scan.h"

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

PG_FUNCTION_INFO_V1(arrow_fdw_handler);

/*
 * The FDW's callbacks: planning in plan.c, scans in scan.c, ANALYZE in
 * analyze.c, IMPORT FOREIGN SCHEMA in import.c.
 */
Datum
arrow_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *r = makeNode(FdwRoutine);

	r->GetForeignRelSize = arrowGetForeignRelSize;
	r->GetForeignPaths = arrowGetForeignPaths;
	r->GetForeignPlan = arrowGetForeignPlan;
	r->ExplainForeignScan = arrowExplainForeignScan;
	r->BeginForeignScan = arrowBeginForeignScan;
	r->IterateForeignScan = arrowIterateForeignScan;
	r->ReScanForeignScan = arrowReScanForeignScan;
	r->EndForeignScan = arrowEndForeignScan;
	r->AnalyzeForeignTable = arrowAnalyzeForeignTable;
	r->IsForeignScanParallelSafe = arrowIsForeignScanParallelSafe;
	r->EstimateDSMForeignScan = arrowEstimateDSMForeignScan;
	r->InitializeDSMForeignScan = arrowInitializeDSMForeignScan;
	r->ReInitializeDSMForeignScan = arrowReInitializeDSMForeignScan;
	r->InitializeWorkerForeignScan = arrowInitializeWorkerForeignScan;
	r->ShutdownForeignScan = arrowShutdownForeignScan;
	r->ImportForeignSchema = arrowImportForeignSchema;
	PG_RETURN_POINTER(r);
}

/* ----------------------------------------------------------------
 * Checking tables when they are created or altered
 * ----------------------------------------------------------------
 */

/* whether 'relid' is a foreign table of arrow_fdw (fdw_scan.h) */
bool
arrow_fdw_is_table(Oid relid)
{
	ForeignTable *ft;
	ForeignServer *srv;
	ForeignDataWrapper *fdw;
	FdwRoutine *r;

	if (!OidIsValid(relid) || get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	ft = GetForeignTable(relid);
	srv = GetForeignServer(ft->serverid);
	fdw = GetForeignDataWrapper(srv->fdwid);
	if (!OidIsValid(fdw->fdwhandler))
		return false;
	r = GetFdwRoutine(fdw->fdwhandler);
	return r->GetForeignRelSize == arrowGetForeignRelSize;
}

/*
 * the paths of the files that arrow_fdw table relid reads now, in the order
 * it reads them (its options' "file", "files" or "dir"; fdw_scan.h)
 */
List *
arrow_fdw_table_files(Oid relid)
{
	return arrow_fdw_file_list(GetForeignTable(relid)->options, NULL);
}

/* opens an arrow_fdw table's files to check its columns against them */
static void
check_table(Oid relid)
{
	Relation	rel;
	ArrowFdwTable *t;

	if (!arrow_fdw_is_table(relid))
		return;
	CommandCounterIncrement();
	rel = table_open(relid, AccessShareLock);
	t = arrow_table_open(rel, NIL);
	for (int i = 0; i < t->n_files; i++)
		arrow_file_close(t->files[i].file);
	table_close(rel, AccessShareLock);
}

/*
 * ProcessUtility hook: after CREATE FOREIGN TABLE, ALTER FOREIGN TABLE and
 * a column's RENAME, an arrow_fdw table is checked against its files.
 */
static void
arrow_fdw_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	RangeVar   *rv = NULL;

	/*
	 * Subcommands (the column options of a CREATE FOREIGN TABLE arrive as
	 * one ALTER per column; IMPORT FOREIGN SCHEMA runs its CREATEs) are
	 * checked by the statement that contains them, once complete.
	 */
	if (context == PROCESS_UTILITY_SUBCOMMAND)
		;
	else if (IsA(parsetree, CreateForeignTableStmt))
		rv = copyObject(((CreateForeignTableStmt *) parsetree)->base.relation);
	else if (IsA(parsetree, AlterTableStmt) &&
			 ((AlterTableStmt *) parsetree)->objtype == OBJECT_FOREIGN_TABLE)
		rv = copyObject(((AlterTableStmt *) parsetree)->relation);
	else if (IsA(parsetree, RenameStmt) &&
			 ((RenameStmt *) parsetree)->renameType == OBJECT_COLUMN &&
			 ((RenameStmt *) parsetree)->relationType == OBJECT_FOREIGN_TABLE)
		rv = copyObject(((RenameStmt *) parsetree)->relation);	/* a column maps by name */

	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	if (rv != NULL)
		check_table(RangeVarGetRelid(rv, NoLock, true));
}

/*
 * Called once from _PG_init: the GUC and the utility hook.
 */
void
arrow_fdw_init(void)
{
	DefineCustomBoolVariable("pg_warp.arrow_stats_skip",
							 "Skips Arrow record batches whose min/max statistics rule out the WHERE clause.",
							 NULL,
							 &pg_warp_arrow_stats_skip,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = arrow_fdw_ProcessUtility;
	DefineCustomBoolVariable("pg_warp.arrow_metadata_images",
							 "Keeps the metadata of large Arrow files' record batches in the data "
							 "directory for the next session that opens them.",
							 "A file of 64 record batches or more: a new session takes its batches' "
							 "metadata from pg_warp/arrow_meta instead of reading every batch's "
							 "message; a file changed since has another identity and is read again.",
							 &pg_warp_arrow_metadata_images,
							 true,
							 PGC_SUSET,
							 0,
							 NULL, NULL, NULL);
	arrow_meta_shared_init();
}
