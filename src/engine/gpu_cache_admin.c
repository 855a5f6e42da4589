/*-------------------------------------------------------------------------
 *
 * gpu_cache_admin.c
 *		The GPU column cache of the warp service as a tool (doc/engine.md,
 *		"The GPU column cache"):
 *
 *	pgwarp.gpu_cache_info()		what the cache holds now, per GPU, table
 *								(or file), column and file version: record
 *								batches (heap units), bytes and the runs
 *								that found them there
 *	pgwarp.gpu_cache_drop()		empties the caches without a restart of
 *								the service: the column cache and the join
 *								inner tables kept for later queries
 *	pgwarp.gpu_cache_prewarm(regclass [, text[]])
 *								reads a table's columns into the cache
 *								before the queries that need them, one
 *								column at a time, with a line in the server
 *								log per column
 *
 * The service knows a cached buffer by its file's identity (device, inode,
 * size and times), its record batch and field; which table and column that
 * is, this backend finds out: the Arrow foreign tables of the database by
 * the identities of their files (fdw/fdw_scan.h), the heap relations by
 * their segment files.  A version of a file that is no longer the file's
 * (changed since it was cached; the next run over it drops it) shows as not
 * current.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_namespace.h"
#include "common/relpath.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "engine/engine.h"
#include "fdw/fdw_scan.h"
#include "xpu/file_id.h"
#include "xpu/protocol.h"

/* what a cached file is to this database: a table's file and its columns */
typedef struct CachedFile
{
	WarpFileId	id;				/* of the file now (ctime_ns -1: not known) */
	Oid			relid;
	bool		heap;
	char	   *path;
	int			n_fields;		/* Arrow: top-level field -> attribute name */
	char	  **field_names;
} CachedFile;

/* the file of identity (dev, ino) among files[0 .. n - 1], or NULL */
static CachedFile *
find_file(CachedFile *files, int n, int64 dev, int64 ino)
{
	for (int i = 0; i < n; i++)
		if (files[i].id.dev == dev && files[i].id.ino == ino)
			return &files[i];
	return NULL;
}

/* does any entry of the reply name file (dev, ino) */
static bool
cached(const WarpCacheList *list, int64 dev, int64 ino)
{
	const WarpCacheInfo *e = (const WarpCacheInfo *) (list + 1);

	for (uint32 i = 0; i < list->n_entries; i++)
		if (e[i].dev == dev && e[i].ino == ino)
			return true;
	return false;
}

/* fills f's identity from stat(path); false when it cannot be stat'ed */
static bool
stat_file(CachedFile *f, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return false;
	f->id = warp_file_id_of(&st);
	f->path = pstrdup(path);
	return true;
}

/*
 * the files of the Arrow foreign table relid that the reply names, appended
 * to *files; a table whose files cannot be opened now is left out (its
 * entries then show without a table)
 */
static void
arrow_table_files(Oid relid, const WarpCacheList *list, CachedFile **files, int *n, int *cap)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		Relation	rel = table_open(relid, AccessShareLock);
		TupleDesc	tupdesc = RelationGetDescr(rel);
		AttrNumber *attnos = palloc(sizeof(AttrNumber) * Max(tupdesc->natts, 1));
		char	  **names = palloc(sizeof(char *) * Max(tupdesc->natts, 1));
		int			n_att = 0;
		ArrowEngineSource *src;

		for (int i = 0; i < tupdesc->natts; i++)
		{
			if (TupleDescAttr(tupdesc, i)->attisdropped)
				continue;
			names[n_att] = pstrdup(NameStr(TupleDescAttr(tupdesc, i)->attname));
			attnos[n_att++] = (AttrNumber) (i + 1);
		}
		src = arrow_fdw_engine_source(rel, 1, NIL, attnos, n_att);
		for (int k = 0; k < src->n_files; k++)
		{
			const ArrowEngineFile *ef = &src->files[k];
			CachedFile *f;
			int			max_field = -1;

			if (!cached(list, ef->dev, ef->ino))
				continue;
			if (*n == *cap)
			{
				*cap *= 2;
				*files = repalloc(*files, sizeof(CachedFile) * *cap);
			}
			f = &(*files)[(*n)++];
			memset(f, 0, sizeof(*f));
			f->id.dev = ef->dev;
			f->id.ino = ef->ino;
			f->id.size = ef->size;
			f->id.mtime_ns = ef->mtime_ns;
			f->id.ctime_ns = -1;	/* not known here: the size and mtime decide */
			f->relid = relid;
			f->path = pstrdup(ef->path);
			for (int j = 0; j < src->n_cols; j++)
				max_field = Max(max_field, src->fields[j]);
			f->n_fields = max_field + 1;
			f->field_names = palloc0(sizeof(char *) * Max(f->n_fields, 1));
			for (int j = 0; j < src->n_cols; j++)
				if (src->fields[j] >= 0)
					f->field_names[src->fields[j]] = names[j];
		}
		table_close(rel, AccessShareLock);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(cxt);
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(cxt);
		CurrentResourceOwner = owner;
	}
	PG_END_TRY();
}

/* the segment files of heap relation rel that the reply names, appended */
static void
heap_table_files(Relation rel, const WarpCacheList *list, CachedFile **files, int *n, int *cap)
{
	char	   *base = relpathbackend(rel->rd_node, rel->rd_backend, MAIN_FORKNUM);
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	uint32		nseg = nblocks / RELSEG_SIZE + 1;

	for (uint32 s = 0; s < nseg; s++)
	{
		char	   *path = s == 0 ? psprintf("%s/%s", DataDir, base) :
			psprintf("%s/%s.%u", DataDir, base, s);
		CachedFile	f;

		memset(&f, 0, sizeof(f));
		if (!stat_file(&f, path) || !cached(list, f.id.dev, f.id.ino))
			continue;
		f.relid = RelationGetRelid(rel);
		f.heap = true;
		if (*n == *cap)
		{
			*cap *= 2;
			*files = repalloc(*files, sizeof(CachedFile) * *cap);
		}
		(*files)[(*n)++] = f;
	}
}

/*
 * the files of this database's tables that the reply names: every Arrow
 * foreign table's, and the segments of every heap relation (tables and
 * materialized views) the caller may read
 */
static CachedFile *
cached_files(const WarpCacheList *list, int *n)
{
	int			cap = 16;
	CachedFile *files = palloc(sizeof(CachedFile) * cap);
	Relation	pgclass = table_open(RelationRelationId, AccessShareLock);
	TableScanDesc scan = table_beginscan_catalog(pgclass, 0, NULL);
	HeapTuple	tup;
	List	   *arrow = NIL,
			   *heap = NIL;
	ListCell   *lc;

	*n = 0;
	while ((tup = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_class c = (Form_pg_class) GETSTRUCT(tup);

		if (c->relnamespace == PG_TOAST_NAMESPACE || isAnyTempNamespace(c->relnamespace))
			continue;
		if (c->relkind == RELKIND_FOREIGN_TABLE && arrow_fdw_is_table(c->oid))
			arrow = lappend_oid(arrow, c->oid);
		else if ((c->relkind == RELKIND_RELATION || c->relkind == RELKIND_MATVIEW) &&
				 c->relpersistence != RELPERSISTENCE_TEMP)
			heap = lappend_oid(heap, c->oid);
	}
	table_endscan(scan);
	table_close(pgclass, AccessShareLock);
	foreach(lc, arrow)
		if (pg_class_aclcheck(lfirst_oid(lc), GetUserId(), ACL_SELECT) == ACLCHECK_OK)
			arrow_table_files(lfirst_oid(lc), list, &files, n, &cap);
	foreach(lc, heap)
	{
		Relation	rel;

		if (pg_class_aclcheck(lfirst_oid(lc), GetUserId(), ACL_SELECT) != ACLCHECK_OK)
			continue;
		rel = try_relation_open(lfirst_oid(lc), AccessShareLock);
		if (rel == NULL)
			continue;
		heap_table_files(rel, list, &files, n, &cap);
		relation_close(rel, AccessShareLock);
	}
	return files;
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_cache_info);

/*
 * pgwarp.gpu_cache_info() returns setof record
 *		One row per GPU, cached file version and column: the GPU, the table
 *		(NULL where the file is none of this database's tables the caller may
 *		read), the file, the column (Arrow: its name; heap: the attribute's),
 *		arrow or heap, the record batches (heap: units) and bytes held, the
 *		runs that found them, and whether that version is the file's now.
 */
Datum
pg_warp_gpu_cache_info(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarpCacheList *list;
	const WarpCacheInfo *e;
	CachedFile *files;
	int			n_files;

	InitMaterializedSRF(fcinfo, 0);
	list = service_cache_info();
	if (list->truncated)
		ereport(NOTICE,
				(errmsg("the GPU column cache holds more than one reply lists; some are left out")));
	files = cached_files(list, &n_files);
	e = (const WarpCacheInfo *) (list + 1);
	for (uint32 i = 0; i < list->n_entries; i++)
	{
		CachedFile *f = find_file(files, n_files, e[i].dev, e[i].ino);
		Datum		values[9];
		bool		nulls[9] = {0};
		int			field = f != NULL && f->heap ? (e[i].field & 0xffff) : e[i].field;

		values[0] = Int32GetDatum((int32) e[i].device);
		values[1] = ObjectIdGetDatum(f != NULL ? f->relid : InvalidOid);
		nulls[1] = f == NULL;
		values[2] = f != NULL ? CStringGetTextDatum(f->path) : (Datum) 0;
		nulls[2] = f == NULL;
		nulls[3] = true;
		if (f != NULL && f->heap && field >= 1)
		{
			char	   *att = get_attname(f->relid, (AttrNumber) field, true);

			if (att != NULL)
			{
				values[3] = CStringGetTextDatum(att);
				nulls[3] = false;
			}
		}
		else if (f != NULL && field >= 0 && field < f->n_fields && f->field_names[field] != NULL)
		{
			values[3] = CStringGetTextDatum(f->field_names[field]);
			nulls[3] = false;
		}
		values[4] = CStringGetTextDatum(f == NULL ? "unknown" : f->heap ? "heap" : "arrow");
		values[5] = Int64GetDatum((int64) e[i].batches);
		values[6] = Int64GetDatum((int64) e[i].bytes);
		values[7] = Int64GetDatum((int64) e[i].hits);
		values[8] = BoolGetDatum(f != NULL && f->id.size == e[i].size &&
								 f->id.mtime_ns == e[i].mtime_ns &&
								 (f->id.ctime_ns < 0 || f->id.ctime_ns == e[i].ctime_ns));
		nulls[8] = f == NULL;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_cache_drop);

/*
 * pgwarp.gpu_cache_drop(OUT column_bytes bigint, OUT join_tables int,
 *						 OUT join_bytes bigint) returns record
 *		Empties the GPU column cache of every GPU of the service and lets go
 *		of the join inner tables it keeps for later queries, without
 *		restarting it: the next query reads its columns and builds its inner
 *		tables again.  What running queries hold stays until they end; file
 *		pages kept registered (pg_warp.pinned_files_size) stay registered.
 *		Returns the device bytes freed, and the kept tables let go and their
 *		bytes.  Revoked from PUBLIC (every session's later queries slow down).
 */
Datum
pg_warp_gpu_cache_drop(PG_FUNCTION_ARGS)
{
	TupleDesc	tupdesc;
	WarpCacheDropped r;
	Datum		values[3];
	bool		nulls[3] = {0};

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	service_cache_drop(&r);
	values[0] = Int64GetDatum((int64) r.column_bytes);
	values[1] = Int32GetDatum((int32) r.join_tables);
	values[2] = Int64GetDatum((int64) r.join_bytes);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(tupdesc), values, nulls)));
}

/* ---------------------------------------------------------------- prewarm */

/*
 * runs sql (one row of one column) through SPI and returns its text (NULL:
 * SQL NULL)
 */
static char *
spi_text(const char *sql, int nargs, Oid *types, Datum *args)
{
	int			rc = SPI_execute_with_args(sql, nargs, types, args, NULL, false, 1);

	if (rc < 0 || SPI_processed != 1)
		elog(ERROR, "SPI_execute_with_args failed for \"%s\": %d", sql, rc);
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

/*
 * prewarm_column: reads column att of rel through a GpuPreAgg on the GPU
 * (count(col) over the whole table); returns false with *why set when the
 * engine did not run it there, else the bytes read into the cache and
 * those it held already
 */
static bool
prewarm_column(Relation rel, const char *att, int64 *read, int64 *had, char **why)
{
	char	   *relname = quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
													 RelationGetRelationName(rel));
	char	   *q = psprintf("EXPLAIN (ANALYZE, VERBOSE, FORMAT JSON) SELECT count(%s) FROM %s",
							 quote_identifier(att), relname);
	Oid			types[1] = {TEXTOID};
	Datum		args[1];
	char	   *plan = spi_text(q, 0, NULL, NULL);
	char	   *node;

	args[0] = CStringGetTextDatum(plan);
	node = spi_text("SELECT jsonb_path_query_first($1::jsonb, "
					"'strict $.**?(@.\"Custom Plan Provider\" == \"GpuPreAgg\")')::text",
					1, types, args);
	if (node == NULL)
	{
		*why = "the engine does not read it (no GpuPreAgg in the plan)";
		return false;
	}
	args[0] = CStringGetTextDatum(node);
	if (strcmp(spi_text("SELECT coalesce($1::jsonb->>'Engine', '')", 1, types, args),
			   "GPU") != 0)
	{
		*why = psprintf("the engine did not run it on the GPU (Engine: %s)",
						spi_text("SELECT coalesce($1::jsonb->>'Engine', 'none')", 1, types, args));
		return false;
	}
	*read = pg_strtoint64(spi_text("SELECT coalesce($1::jsonb->>'Bytes Read', '0')",
								   1, types, args));
	*had = pg_strtoint64(spi_text("SELECT coalesce($1::jsonb->>'Bytes From GPU Cache', '0')",
								  1, types, args));
	return true;
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_cache_prewarm);

/*
 * pgwarp.gpu_cache_prewarm(rel regclass, columns text[] DEFAULT NULL)
 * returns bigint
 *		Reads the columns of rel (NULL: every column) into the GPU column
 *		cache, one at a time, and returns the bytes read into it.  The
 *		caller needs SELECT on them.  A column the engine cannot read on the
 *		GPU is skipped with a NOTICE saying why; each column's result goes
 *		to the server log (bytes and rate), so that a long prewarm shows its
 *		progress.  Needs a GPU (an error on the CPU engine: it has no cache).
 */
Datum
pg_warp_gpu_cache_prewarm(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	ArrayType  *cols = PG_ARGISNULL(1) ? NULL : PG_GETARG_ARRAYTYPE_P(1);
	Relation	rel;
	TupleDesc	tupdesc;
	List	   *atts = NIL;
	ListCell   *lc;
	int64		total = 0;
	int			done = 0,
				nest;

	if (!service_engine_gpu())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the pg_warp service has no GPU, so it has no GPU column cache")));
	rel = relation_open(relid, AccessShareLock);
	if (rel->rd_rel->relkind != RELKIND_RELATION && rel->rd_rel->relkind != RELKIND_MATVIEW &&
		!(rel->rd_rel->relkind == RELKIND_FOREIGN_TABLE && arrow_fdw_is_table(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is neither a table nor an arrow_fdw foreign table",
						RelationGetRelationName(rel))));
	tupdesc = RelationGetDescr(rel);
	if (cols == NULL)
	{
		for (int i = 0; i < tupdesc->natts; i++)
			if (!TupleDescAttr(tupdesc, i)->attisdropped)
				atts = lappend(atts, pstrdup(NameStr(TupleDescAttr(tupdesc, i)->attname)));
	}
	else
	{
		Datum	   *elems;
		bool	   *enulls;
		int			n;

		deconstruct_array(cols, TEXTOID, -1, false, TYPALIGN_INT, &elems, &enulls, &n);
		for (int i = 0; i < n; i++)
		{
			char	   *name;

			if (enulls[i])
				ereport(ERROR,
						(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						 errmsg("the column list holds a NULL")));
			name = TextDatumGetCString(elems[i]);
			if (get_attnum(relid, name) == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("column \"%s\" of relation \"%s\" does not exist",
								name, RelationGetRelationName(rel))));
			atts = lappend(atts, name);
		}
	}

	/* the engine on the GPU, whatever the costs say; no parallel plan */
	nest = NewGUCNestLevel();
	(void) set_config_option("pg_warp.enabled", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("pg_warp.engine", "gpu", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("pg_warp.engine_startup_cost", "0", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("pg_warp.enable_gpupreagg_heap", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	(void) set_config_option("max_parallel_workers_per_gather", "0", PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ereport(LOG,
			(errmsg("pg_warp: prewarming the GPU column cache with %d column%s of \"%s\"",
					list_length(atts), list_length(atts) == 1 ? "" : "s",
					RelationGetRelationName(rel))));
	foreach(lc, atts)
	{
		char	   *att = lfirst(lc);
		int64		read = 0,
					had = 0;
		char	   *why = NULL;
		TimestampTz t0 = GetCurrentTimestamp();
		long		secs;
		int			usecs;

		CHECK_FOR_INTERRUPTS();
		done++;
		if (!prewarm_column(rel, att, &read, &had, &why))
		{
			ereport(NOTICE,
					(errmsg("column \"%s\" of \"%s\" was not prewarmed: %s",
							att, RelationGetRelationName(rel), why)));
			continue;
		}
		TimestampDifference(t0, GetCurrentTimestamp(), &secs, &usecs);
		total += read;
		ereport(LOG,
				(errmsg("pg_warp: prewarm of \"%s\": column %d of %d (\"%s\"): %lld bytes read "
						"into the GPU column cache in %.3f s, %lld bytes were there already",
						RelationGetRelationName(rel), done, list_length(atts), att,
						(long long) read, secs + usecs / 1e6, (long long) had)));
	}
	SPI_finish();
	AtEOXact_GUC(true, nest);
	relation_close(rel, AccessShareLock);
	PG_RETURN_INT64(total);
}
