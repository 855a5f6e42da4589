/*-------------------------------------------------------------------------
 *
 * arrow_fdw.c
 *		arrow_fdw: Apache Arrow files as foreign tables.
 *
 * A foreign table names one file ("file"), several ("files", comma
 * separated) or every file of a directory ("dir", optionally filtered by
 * "suffix" or a glob "pattern").  All of them must have the same schema.
 * Columns map to top-level fields by name (or by the column option "field").
 *
 * What a scan reads: only the buffers of the columns that the query
 * references, and only the record batches whose statistics (pg2arrow -S,
 * see arrow_stats.c) do not rule out the WHERE clause.  A parallel scan
 * hands out record batches, across all files, through one atomic counter in
 * dynamic shared memory.
 *
 * Column types are checked against the files when the table is created or
 * altered (a ProcessUtility hook; needs the library loaded, i.e.
 * shared_preload_libraries) and again whenever a query is planned, so a type
 * that cannot hold a field is an error before any row is read.  Values are
 * converted exactly or not at all (arrow_datum.c).
 *
 * Files are opened and their metadata read at planning; the plan records
 * each file's identity (device, inode, size, modification time).  Every
 * process of a scan (leader and parallel workers) checks that the file it
 * opens has that identity, and every later reopen of the file checks it
 * again (arrow_pg.c), so a scan reads exactly the files it planned with or
 * fails with "file changed during scan": never a mix of two files.  Only
 * regular files are read; a FIFO, socket or device is refused without being
 * opened (it could block the backend).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/sysattr.h"
#include "access/xact.h"
#include "access/table.h"
#include "catalog/heap.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_data_wrapper.h"
#include "catalog/pg_user_mapping.h"
#include "catalog/pg_attribute.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "commands/vacuum.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parse_type.h"
#include "port/atomics.h"
#include "storage/fd.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "mb/pg_wchar.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/ruleutils.h"
#include "utils/sampling.h"
#include "utils/varlena.h"

#include "pg_warp.h"
#include "engine/filter.h"

/* ----------------------------------------------------------------
 * Options
 * ----------------------------------------------------------------
 */
typedef struct ArrowFdwOption
{
	const char *name;
	Oid			context;		/* catalog where it may appear */
	bool		names_files;	/* needs the right to read server files */
} ArrowFdwOption;

static const ArrowFdwOption arrow_fdw_options[] = {
	{"file", ForeignTableRelationId, true},
	{"files", ForeignTableRelationId, true},
	{"dir", ForeignTableRelationId, true},
	{"suffix", ForeignTableRelationId, false},
	{"pattern", ForeignTableRelationId, false},
	{"parallel_workers", ForeignTableRelationId, false},
	{"field", AttributeRelationId, false},
	{NULL, InvalidOid, false}
};

/* one file of a table while it is open */
typedef struct ArrowFdwFile
{
	char	   *path;
	ArrowPgSource *src;
	ArrowFile  *file;
} ArrowFdwFile;

/* a table's files, opened, with its columns mapped to fields */
typedef struct ArrowFdwTable
{
	Oid			relid;
	int			n_files;
	ArrowFdwFile *files;
	int			natts;
	int		   *fields;			/* attno-1 -> top-level field, -1: none */
	ArrowConv  *convs;			/* attno-1 -> converter */
	int64		total_rows;
	int32		total_batches;
	int32	   *batch_start;	/* file -> its first global batch number */
} ArrowFdwTable;

/* planner state in baserel->fdw_private */
typedef struct ArrowFdwPlanState
{
	ArrowFdwTable *table;
	Bitmapset  *attrs_used;		/* offsets FirstLowInvalidHeapAttributeNumber */
	List	   *referenced;		/* attnos (Integer) read by the scan */
	List	   *stat_clauses;	/* usable for skipping */
	int64	   *file_bytes;		/* per file: bytes of referenced columns to read */
	int64		read_bytes;
	int64		kept_rows;
	int32		kept_batches;
	int			parallel_workers;	/* option, -1 when not set */
} ArrowFdwPlanState;

/* indexes of ForeignScan.fdw_private */
enum
{
	FdwPrivFiles,				/* List of String: paths */
	FdwPrivSizes,				/* List of String: int64 size at planning */
	FdwPrivMtimes,				/* List of String: int64 mtime (ns) */
	FdwPrivBytes,				/* List of String: planned bytes to read */
	FdwPrivReferenced,			/* List of Integer: attnos */
	FdwPrivIdents				/* List of String: "device:inode" at planning */
};

/* shared state of a parallel scan */
typedef struct ArrowFdwShared
{
	pg_atomic_uint64 next_batch;
	pg_atomic_uint64 batches_read;
	pg_atomic_uint64 batches_skipped;
	pg_atomic_uint64 bytes_read;
	pg_atomic_uint64 rows_filtered;
} ArrowFdwShared;

/* executor state */
typedef struct ArrowFdwScanState
{
	ArrowFdwTable *table;
	bool	   *want;			/* field -> load it */
	AttrNumber *ref_attnos;		/* referenced columns */
	int			n_ref;
	const ArrowArray **ref_arrays;	/* their arrays in the current batch */
	bool		all_fast;		/* every referenced column converts in place */
	ArrowStatCond *conds;
	int			n_conds;
	EngineFilter *filter;		/* the engine's quals (engine/filter.c) */
	uint64		rows_filtered;	/* rows the filter removed (this process) */
	uint64		rows_filtered_flushed;	/* of those, added to shared */
	MemoryContext row_cxt;
	ArrowFdwShared *shared;		/* parallel scan, else NULL */
	uint64		next_batch;		/* serial scan */
	int			cur_file;
	ArrowBatch *batch;
	int64		row;
	/* counters for EXPLAIN ANALYZE */
	uint64		batches_read;
	uint64		batches_skipped;
	uint64		bytes_read;
	bool		have_final;		/* parallel totals copied at shutdown */
	uint64		final_read;
	uint64		final_skipped;
	uint64		final_bytes;
	uint64		final_filtered;
	/* error context */
	TupleDesc	tupdesc;
	int			ctx_attidx;		/* column being converted, -1: none */
} ArrowFdwScanState;

/* callbacks */
static void arrowGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
								   Oid foreigntableid);
static void arrowGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
								 Oid foreigntableid);
static ForeignScan *arrowGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
										Oid foreigntableid, ForeignPath *best_path,
										List *tlist, List *scan_clauses,
										Plan *outer_plan);
static void arrowExplainForeignScan(ForeignScanState *node, ExplainState *es);
static void arrowBeginForeignScan(ForeignScanState *node, int eflags);
static TupleTableSlot *arrowIterateForeignScan(ForeignScanState *node);
static void arrowReScanForeignScan(ForeignScanState *node);
static void arrowEndForeignScan(ForeignScanState *node);
static bool arrowAnalyzeForeignTable(Relation relation,
									 AcquireSampleRowsFunc *func,
									 BlockNumber *totalpages);
static bool arrowIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
										   RangeTblEntry *rte);
static Size arrowEstimateDSMForeignScan(ForeignScanState *node,
										ParallelContext *pcxt);
static void arrowInitializeDSMForeignScan(ForeignScanState *node,
										  ParallelContext *pcxt, void *coordinate);
static void arrowReInitializeDSMForeignScan(ForeignScanState *node,
											ParallelContext *pcxt, void *coordinate);
static void arrowInitializeWorkerForeignScan(ForeignScanState *node,
											 shm_toc *toc, void *coordinate);
static void arrowShutdownForeignScan(ForeignScanState *node);
static List *arrowImportForeignSchema(ImportForeignSchemaStmt *stmt,
									  Oid serverOid);

static ProcessUtility_hook_type prev_ProcessUtility = NULL;

PG_FUNCTION_INFO_V1(arrow_fdw_handler);
PG_FUNCTION_INFO_V1(arrow_fdw_validator);

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

static bool
may_read_server_files(void)
{
	return superuser() || has_privs_of_role(GetUserId(), ROLE_PG_READ_SERVER_FILES);
}

/* splits "a, b,c" into a list of trimmed, non-empty strings */
static List *
split_files(const char *value)
{
	List	   *out = NIL;
	char	   *s = pstrdup(value);
	char	   *tok;
	char	   *save = NULL;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
	{
		char	   *end;

		while (*tok == ' ' || *tok == '\t' || *tok == '\n')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n'))
			*--end = '\0';
		if (*tok)
			out = lappend(out, tok);
	}
	return out;
}

static void
check_absolute(const char *opt, const char *path)
{
	if (!is_absolute_path(path))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("option \"%s\" needs an absolute path: \"%s\"", opt, path)));
}

/*
 * Checks the options of the table, its columns, the server and the wrapper.
 * Options that name files need superuser or pg_read_server_files (like
 * file_fdw): they let a user read any file the server can read.
 */
Datum
arrow_fdw_validator(PG_FUNCTION_ARGS)
{
	List	   *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid			catalog = PG_GETARG_OID(1);
	ListCell   *lc;
	int			n_sources = 0;
	bool		has_dir = false;
	bool		has_filter = false;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);
		const ArrowFdwOption *opt;
		char	   *val;

		for (opt = arrow_fdw_options; opt->name; opt++)
			if (opt->context == catalog && strcmp(opt->name, def->defname) == 0)
				break;
		if (opt->name == NULL)
		{
			StringInfoData buf;

			initStringInfo(&buf);
			for (opt = arrow_fdw_options; opt->name; opt++)
				if (opt->context == catalog)
					appendStringInfo(&buf, "%s%s", buf.len ? ", " : "", opt->name);
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("invalid option \"%s\"", def->defname),
					 buf.len ? errhint("Valid options in this context are: %s.", buf.data)
					 : errhint("There are no valid options in this context.")));
		}
		val = defGetString(def);
		if (opt->names_files && !may_read_server_files())
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("permission denied to set option \"%s\" of an arrow_fdw foreign table",
							def->defname),
					 errdetail("Only superusers and roles with privileges of the pg_read_server_files role may name files.")));
		if (strcmp(def->defname, "file") == 0 || strcmp(def->defname, "dir") == 0)
		{
			n_sources++;
			check_absolute(def->defname, val);
			if (def->defname[0] == 'd')
				has_dir = true;
			else
				arrow_pg_check_regular(val);
		}
		else if (strcmp(def->defname, "files") == 0)
		{
			List	   *l = split_files(val);
			ListCell   *lc2;

			n_sources++;
			if (l == NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("option \"files\" names no file")));
			foreach(lc2, l)
			{
				check_absolute("files", lfirst(lc2));
				arrow_pg_check_regular(lfirst(lc2));
			}
		}
		else if (strcmp(def->defname, "suffix") == 0 ||
				 strcmp(def->defname, "pattern") == 0)
		{
			if (has_filter)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
						 errmsg("options \"suffix\" and \"pattern\" cannot be used together")));
			has_filter = true;
		}
		else if (strcmp(def->defname, "parallel_workers") == 0)
		{
			int			n;

			if (!parse_int(val, &n, 0, NULL) || n < 0 || n > 1024)
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"parallel_workers\": \"%s\"", val),
						 errhint("Use an integer between 0 and 1024.")));
		}
	}
	if (catalog == ForeignTableRelationId)
	{
		if (n_sources == 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_OPTION_NAME_NOT_FOUND),
					 errmsg("an arrow_fdw foreign table needs one of the options \"file\", \"files\" or \"dir\"")));
		if (n_sources > 1)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("only one of the options \"file\", \"files\" and \"dir\" may be given")));
		if (has_filter && !has_dir)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("options \"suffix\" and \"pattern\" need the option \"dir\"")));
	}
	PG_RETURN_VOID();
}

/*
 * Whether a directory entry is a file that pg2arrow is writing or uses to
 * recover: "FILE.pg2arrow-PID.tmp" or "FILE.pg2arrow-journal".
 */
static bool
is_pg2arrow_work_file(const char *name)
{
	const char *p = strstr(name, ".pg2arrow-");

	while (p != NULL)
	{
		const char *rest = p + strlen(".pg2arrow-");
		const char *q = rest;

		if (strcmp(rest, "journal") == 0)
			return true;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q > rest && strcmp(q, ".tmp") == 0)
			return true;
		p = strstr(p + 1, ".pg2arrow-");
	}
	return false;
}

static int
cmp_cstring(const ListCell *a, const ListCell *b)
{
	return strcmp(lfirst(a), lfirst(b));
}

/*
 * The files that 'options' (of a table, or of IMPORT FOREIGN SCHEMA) name, in
 * order: as listed for "file"/"files", sorted by name for "dir" (regular
 * files whose names do not start with a dot and are not pg2arrow's work
 * files, filtered by "suffix" or "pattern"; FIFOs, sockets, devices and
 * directories are left out).  *parallel_workers gets the option's value or -1.
 */
static List *
options_file_list(List *options, int *parallel_workers)
{
	List	   *files = NIL;
	const char *dir = NULL;
	const char *suffix = NULL;
	const char *pattern = NULL;
	ListCell   *lc;

	if (parallel_workers)
		*parallel_workers = -1;
	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "file") == 0)
			files = lappend(files, defGetString(def));
		else if (strcmp(def->defname, "files") == 0)
			files = list_concat(files, split_files(defGetString(def)));
		else if (strcmp(def->defname, "dir") == 0)
			dir = defGetString(def);
		else if (strcmp(def->defname, "suffix") == 0)
			suffix = defGetString(def);
		else if (strcmp(def->defname, "pattern") == 0)
			pattern = defGetString(def);
		else if (strcmp(def->defname, "parallel_workers") == 0 && parallel_workers)
			(void) parse_int(defGetString(def), parallel_workers, 0, NULL);
	}
	if (dir)
	{
		DIR		   *d;
		struct dirent *de;

		d = AllocateDir(dir);
		if (d == NULL)
		{
			int			save = errno;

			if (save == ENOENT)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_FILE),
						 errmsg("directory \"%s\" does not exist", dir),
						 errhint("Check the option \"dir\" of the foreign table.")));
			if (save == EACCES)
				ereport(ERROR,
						(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						 errmsg("permission denied to read directory \"%s\"", dir),
						 errhint("The directory must be readable by the operating system user that runs the PostgreSQL server.")));
			errno = save;
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not open directory \"%s\": %m", dir)));
		}
		while ((de = ReadDir(d, dir)) != NULL)
		{
			char	   *path;
			struct stat st;
			size_t		len = strlen(de->d_name);

			if (de->d_name[0] == '.')
				continue;
			if (suffix && (len < strlen(suffix) ||
						   strcmp(de->d_name + len - strlen(suffix), suffix) != 0))
				continue;
			if (pattern && fnmatch(pattern, de->d_name, 0) != 0)
				continue;
			if (is_pg2arrow_work_file(de->d_name))
				continue;
			path = psprintf("%s/%s", dir, de->d_name);
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
				continue;		/* gone, or a FIFO, socket, device, directory */
			files = lappend(files, path);
		}
		FreeDir(d);
		list_sort(files, cmp_cstring);
	}
	return files;
}

/* the foreign table's options and its column's "field" options */
static char *
column_field_name(Oid relid, AttrNumber attno, const char *attname)
{
	List	   *opts = GetForeignColumnOptions(relid, attno);
	ListCell   *lc;

	foreach(lc, opts)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "field") == 0)
			return defGetString(def);
	}
	return pstrdup(attname);
}

/*
 * The top-level field named 'name': its index, -1 when there is none, and
 * an error when several fields have that name (valid Arrow, but a column
 * could map to either).
 */
static int
find_field(const ArrowSchema *schema, const char *name, const char *path)
{
	int			found = -1;

	for (int i = 0; i < schema->n_fields; i++)
	{
		if (strcmp(schema->fields[i].name, name) != 0)
			continue;
		if (found >= 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
					 errmsg("Arrow file \"%s\" has more than one field named \"%s\"",
							path, name),
					 errdetail("Fields %d and %d have that name.", found + 1, i + 1),
					 errhint("Rewrite the file with unique field names, or leave the field out of the foreign table.")));
		found = i;
	}
	return found;
}

/*
 * Opens every file of a list and checks that they share one schema.
 * Descriptors are closed again; the metadata stays.
 */
static void
open_files(ArrowFdwTable *t, List *paths)
{
	ListCell   *lc;
	int			i = 0;

	t->n_files = list_length(paths);
	t->files = palloc0(sizeof(ArrowFdwFile) * Max(t->n_files, 1));
	t->batch_start = palloc0(sizeof(int32) * (t->n_files + 1));
	foreach(lc, paths)
	{
		ArrowFdwFile *f = &t->files[i];

		f->path = pstrdup(lfirst(lc));
		f->src = palloc0(sizeof(ArrowPgSource));
		f->file = arrow_pg_open(f->path, f->src);
		arrow_pg_source_close(f->src);
		if (i > 0)
		{
			char		why[512];

			if (!arrow_schema_equal(&t->files[0].file->schema,
									&f->file->schema, why, sizeof(why)))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
						 errmsg("Arrow file \"%s\" has another schema than \"%s\"",
								f->path, t->files[0].path),
						 errdetail("%s.", why),
						 errhint("Every file of an arrow_fdw foreign table must have the same fields.")));
		}
		t->batch_start[i] = t->total_batches;
		if (f->file->n_batches > PG_INT32_MAX - t->total_batches)
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("too many record batches in the files of an arrow_fdw foreign table")));
		t->total_batches += f->file->n_batches;
		t->total_rows += f->file->total_rows;
		i++;
	}
	t->batch_start[t->n_files] = t->total_batches;
}

/*
 * Opens the files of foreign table 'relid' (the given list, or those its
 * options name) and maps every column to a field with a converter.  Errors:
 * a file cannot be read, schemas differ, a column has no field or a type
 * that cannot hold it.
 */
static ArrowFdwTable *
arrow_table_open(Relation rel, List *paths)
{
	ArrowFdwTable *t = palloc0(sizeof(ArrowFdwTable));
	TupleDesc	tupdesc = RelationGetDescr(rel);
	const ArrowSchema *schema;

	t->relid = RelationGetRelid(rel);
	if (paths == NIL)
	{
		ForeignTable *ft = GetForeignTable(t->relid);

		paths = options_file_list(ft->options, NULL);
	}
	open_files(t, paths);
	t->natts = tupdesc->natts;
	t->fields = palloc(sizeof(int) * Max(t->natts, 1));
	t->convs = palloc0(sizeof(ArrowConv) * Max(t->natts, 1));
	if (t->n_files == 0)
	{
		/* an empty directory: no rows, nothing to check */
		for (int i = 0; i < t->natts; i++)
			t->fields[i] = -1;
		return t;
	}
	schema = &t->files[0].file->schema;
	for (int i = 0; i < t->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		char	   *name;
		char	   *why = NULL;
		int			fi;

		t->fields[i] = -1;
		if (att->attisdropped)
			continue;
		name = column_field_name(t->relid, att->attnum, NameStr(att->attname));
		fi = find_field(schema, name, t->files[0].path);
		if (fi < 0)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_COLUMN_NAME_NOT_FOUND),
					 errmsg("column \"%s\" of foreign table \"%s\" has no field \"%s\" in Arrow file \"%s\"",
							NameStr(att->attname), RelationGetRelationName(rel),
							name, t->files[0].path),
					 errhint("Name the field with the column option \"field\".")));
		if (!arrow_conv_init(&t->convs[i], &schema->fields[fi], att->atttypid,
							 att->atttypmod, &why))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("column \"%s\" of foreign table \"%s\" cannot read Arrow file \"%s\"",
							NameStr(att->attname), RelationGetRelationName(rel),
							t->files[0].path),
					 errdetail("The %s.", why),
					 errhint("Change the column's type, e.g. to the type IMPORT FOREIGN SCHEMA chooses.")));
		t->fields[i] = fi;
	}
	return t;
}

/* file and batch of global batch number g */
static void
locate_batch(const ArrowFdwTable *t, int32 g, int *file, int32 *batch)
{
	int			lo = 0,
				hi = t->n_files - 1;

	/* the last file whose first batch is <= g (files may have no batch) */
	while (lo < hi)
	{
		int			mid = (lo + hi + 1) / 2;

		if (t->batch_start[mid] <= g)
			lo = mid;
		else
			hi = mid - 1;
	}
	*file = lo;
	*batch = g - t->batch_start[lo];
}

/* bytes of the referenced fields in one batch (plan estimates, EXPLAIN) */
static int64
batch_bytes(const ArrowFdwFile *f, int32 b, const bool *want, int n_fields)
{
	int64		sum = 0;
	ArrowError	err;

	for (int c = 0; c < n_fields; c++)
	{
		int			room = Max(f->file->columns[c].n_buffers, 1);
		ArrowExtent *ext;
		int			n;

		if (!want[c])
			continue;
		ext = palloc(sizeof(ArrowExtent) * room);
		n = arrow_column_extents(f->file, b, c, ext, room, &err);
		if (n < 0)
			arrow_pg_report(&err, "read the layout of", f->path);
		for (int k = 0; k < n; k++)
			sum += ext[k].length;
		pfree(ext);
	}
	return sum;
}

static int
n_fields_of(const ArrowFdwTable *t)
{
	return t->n_files > 0 ? t->files[0].file->schema.n_fields : 0;
}

/* ----------------------------------------------------------------
 * Planning
 * ----------------------------------------------------------------
 */
static double estimate_rows(PlannerInfo *root, RelOptInfo *baserel,
							const ArrowFdwTable *t);

static void
arrowGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
					   Oid foreigntableid)
{
	ArrowFdwPlanState *ps = palloc0(sizeof(ArrowFdwPlanState));
	ForeignTable *ft = GetForeignTable(foreigntableid);
	Relation	rel;
	ListCell   *lc;
	bool	   *want;
	int			n_fields;
	int			n_conds;
	ArrowStatCond *conds;
	bool		whole_row;

	rel = table_open(foreigntableid, NoLock);
	ps->table = arrow_table_open(rel, options_file_list(ft->options, &ps->parallel_workers));
	table_close(rel, NoLock);

	/* the columns the query needs: target list and restriction clauses */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &ps->attrs_used);
	foreach(lc, baserel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause,
					   baserel->relid, &ps->attrs_used);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, ps->attrs_used);
	n_fields = n_fields_of(ps->table);
	want = palloc0(sizeof(bool) * Max(n_fields, 1));
	for (int i = 0; i < ps->table->natts; i++)
	{
		if (ps->table->fields[i] < 0)
			continue;
		if (whole_row ||
			bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, ps->attrs_used))
		{
			ps->referenced = lappend_int(ps->referenced, i + 1);
			want[ps->table->fields[i]] = true;
		}
	}

	/* statistics: which batches remain, how many bytes they need */
	ps->stat_clauses = arrow_stats_usable_clauses(baserel->baserestrictinfo,
												  baserel->relid);
	conds = arrow_stats_prepare(ps->stat_clauses, &n_conds);
	ps->file_bytes = palloc0(sizeof(int64) * Max(ps->table->n_files, 1));
	for (int f = 0; f < ps->table->n_files; f++)
	{
		ArrowFdwFile *file = &ps->table->files[f];

		for (int32 b = 0; b < file->file->n_batches; b++)
		{
			if (n_conds > 0 &&
				arrow_stats_skip_batch(conds, n_conds, ps->table->convs,
									   ps->table->fields, &file->file->batches[b]))
				continue;
			ps->kept_batches++;
			ps->kept_rows += file->file->batches[b].n_rows;
			ps->file_bytes[f] += batch_bytes(file, b, want, n_fields);
		}
		ps->read_bytes += ps->file_bytes[f];
	}

	baserel->tuples = (double) ps->table->total_rows;
	baserel->rows = clamp_row_est(estimate_rows(root, baserel, ps->table));
	baserel->fdw_private = ps;
}

/* rows of the scan that pass its restriction clauses (arrow_estimate.c) */
static double
estimate_rows(PlannerInfo *root, RelOptInfo *baserel, const ArrowFdwTable *t)
{
	ArrowEstimateTable et;

	et.relid = t->relid;
	et.n_files = t->n_files;
	et.files = palloc(sizeof(ArrowFile *) * Max(t->n_files, 1));
	for (int f = 0; f < t->n_files; f++)
		et.files[f] = t->files[f].file;
	et.convs = t->convs;
	et.fields = t->fields;
	et.natts = t->natts;
	et.total_rows = t->total_rows;
	return arrow_estimate_rows(root, baserel, &et);
}

static double
parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation)
	{
		double		leader = 1.0 - (0.3 * workers);

		if (leader > 0)
			divisor += leader;
	}
	return divisor;
}

static void
estimate_costs(PlannerInfo *root, RelOptInfo *baserel, ArrowFdwPlanState *ps,
			   int workers, Cost *startup, Cost *total)
{
	double		pages = (double) ps->read_bytes / BLCKSZ;
	QualCost	qcost;
	double		cpu;
	double		rows;

	cost_qual_eval(&qcost, baserel->baserestrictinfo, root);
	*startup = qcost.startup + baserel->reltarget->cost.startup;
	/* per row: forming the tuple (per column) and the quals */
	cpu = (cpu_tuple_cost + qcost.per_tuple +
		   cpu_operator_cost * list_length(ps->referenced)) * ps->kept_rows;
	/* the target list is computed for the rows the scan returns */
	rows = baserel->rows;
	if (workers > 0)
	{
		cpu /= parallel_divisor(workers);
		rows = clamp_row_est(rows / parallel_divisor(workers));
	}
	*total = *startup + seq_page_cost * pages + cpu +
		baserel->reltarget->cost.per_tuple * rows;
}

static void
arrowGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid)
{
	ArrowFdwPlanState *ps = baserel->fdw_private;
	Cost		startup,
				total;
	ForeignPath *path;

	estimate_costs(root, baserel, ps, 0, &startup, &total);
	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup, total, NIL, NULL, NULL, NIL));

	if (baserel->consider_parallel && ps->kept_batches > 1)
	{
		int			workers;

		if (ps->parallel_workers >= 0)
			workers = Min(ps->parallel_workers, max_parallel_workers_per_gather);
		else
			workers = compute_parallel_worker(baserel,
											  (double) ps->read_bytes / BLCKSZ,
											  -1, max_parallel_workers_per_gather);
		workers = Min(workers, ps->kept_batches);
		if (workers > 0)
		{
			estimate_costs(root, baserel, ps, workers, &startup, &total);
			path = create_foreignscan_path(root, baserel, NULL,
										   clamp_row_est(baserel->rows / parallel_divisor(workers)),
										   startup, total, NIL, NULL, NULL, NIL);
			path->path.parallel_aware = true;
			path->path.parallel_safe = true;
			path->path.parallel_workers = workers;
			add_partial_path(baserel, (Path *) path);
		}
	}
}

static String *
int64_string(int64 v)
{
	return makeString(psprintf(INT64_FORMAT, v));
}

static ForeignScan *
arrowGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					Oid foreigntableid, ForeignPath *best_path,
					List *tlist, List *scan_clauses, Plan *outer_plan)
{
	ArrowFdwPlanState *ps = baserel->fdw_private;
	List	   *files = NIL,
			   *sizes = NIL,
			   *mtimes = NIL,
			   *bytes = NIL,
			   *idents = NIL;

	for (int f = 0; f < ps->table->n_files; f++)
	{
		ArrowFdwFile *file = &ps->table->files[f];

		files = lappend(files, makeString(file->path));
		sizes = lappend(sizes, int64_string(file->src->size));
		mtimes = lappend(mtimes, int64_string(file->src->mtime_ns));
		bytes = lappend(bytes, int64_string(ps->file_bytes[f]));
		idents = lappend(idents,
						 makeString(psprintf(INT64_FORMAT ":" INT64_FORMAT,
											 file->src->dev, file->src->ino)));
	}
	scan_clauses = extract_actual_clauses(scan_clauses, false);
	/* the statistics conditions go to fdw_exprs, where setrefs fixes Vars */
	return make_foreignscan(tlist, scan_clauses, baserel->relid,
							ps->stat_clauses,
							lappend(list_make5(files, sizes, mtimes, bytes,
											   ps->referenced), idents),
							NIL, NIL, outer_plan);
}

static bool
arrowIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
							   RangeTblEntry *rte)
{
	return true;
}

/* ----------------------------------------------------------------
 * EXPLAIN
 * ----------------------------------------------------------------
 */

/*
 * EXPLAIN without a running scan: the engine filter that
 * BeginForeignScan would set up, from the planned files' columns.
 */
static void
explain_engine_filter(ForeignScanState *node, List *files, List *referenced,
					  ExplainState *es)
{
	List	   *paths = NIL;
	AttrNumber *attnos = palloc(sizeof(AttrNumber) * Max(list_length(referenced), 1));
	int			n = 0;
	ArrowFdwTable *t;
	EngineFilterColumns cols;
	ListCell   *lc;

	foreach(lc, files)
		paths = lappend(paths, strVal(lfirst(lc)));
	foreach(lc, referenced)
		attnos[n++] = lfirst_int(lc);
	t = arrow_table_open(node->ss.ss_currentRelation, paths);
	cols.convs = t->convs;
	cols.ref_attnos = attnos;
	cols.n_ref = n;
	engine_filter_explain(&node->ss, ((ForeignScan *) node->ss.ps.plan)->scan.scanrelid,
						  &cols, NULL, es);
	for (int i = 0; i < t->n_files; i++)
		arrow_file_close(t->files[i].file);
}

static void
arrowExplainForeignScan(ForeignScanState *node, ExplainState *es)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	List	   *priv = plan->fdw_private;
	List	   *files = list_nth(priv, FdwPrivFiles);
	List	   *sizes = list_nth(priv, FdwPrivSizes);
	List	   *bytes = list_nth(priv, FdwPrivBytes);
	List	   *referenced = list_nth(priv, FdwPrivReferenced);
	Relation	rel = node->ss.ss_currentRelation;
	TupleDesc	tupdesc = RelationGetDescr(rel);
	List	   *names = NIL;
	ListCell   *lc;
	ArrowFdwScanState *st = node->fdw_state;

	foreach(lc, referenced)
		names = lappend(names,
						NameStr(TupleDescAttr(tupdesc, lfirst_int(lc) - 1)->attname));
	ExplainPropertyList("Referenced", names, es);

	/* one "File" line per file in text form, a list "Files" otherwise */
	names = NIL;
	for (int i = 0; i < list_length(files); i++)
	{
		const char *path = strVal(list_nth(files, i));
		const char *size = strVal(list_nth(sizes, i));
		const char *nbytes = strVal(list_nth(bytes, i));
		char	   *line = psprintf("%s (read %s of %s bytes)", path, nbytes, size);

		if (es->format == EXPLAIN_FORMAT_TEXT)
			ExplainPropertyText("File", line, es);
		else
			names = lappend(names, line);
	}
	if (es->format != EXPLAIN_FORMAT_TEXT)
		ExplainPropertyList("Files", names, es);

	if (plan->fdw_exprs != NIL)
	{
		List	   *ctx = set_deparse_context_plan(es->deparse_cxt,
												   node->ss.ps.plan, NIL);
		List	   *conds = NIL;

		foreach(lc, plan->fdw_exprs)
			conds = lappend(conds,
							deparse_expression(lfirst(lc), ctx,
											   list_length(es->rtable) > 1, false));
		ExplainPropertyList("Stats Conditions", conds, es);
	}

	if (st != NULL && st->filter != NULL)
		engine_filter_explain(&node->ss, plan->scan.scanrelid, NULL, st->filter, es);
	else if (st == NULL && pg_warp_enabled && plan->scan.plan.qual != NIL)
		explain_engine_filter(node, files, referenced, es);

	if (es->analyze && st != NULL)
	{
		uint64		nread = st->have_final ? st->final_read : st->batches_read;
		uint64		nskip = st->have_final ? st->final_skipped : st->batches_skipped;
		uint64		nbytes = st->have_final ? st->final_bytes : st->bytes_read;

		ExplainPropertyInteger("Batches Read", NULL, nread, es);
		ExplainPropertyInteger("Batches Skipped", NULL, nskip, es);
		ExplainPropertyInteger("Bytes Read", NULL, nbytes, es);
		if (st->filter != NULL)
			ExplainPropertyInteger("Rows Filtered by Scan", NULL,
								   st->have_final ? st->final_filtered : st->rows_filtered, es);
	}
}

/* ----------------------------------------------------------------
 * Execution
 * ----------------------------------------------------------------
 */
static void
scan_error_context(void *arg)
{
	ArrowFdwScanState *st = arg;

	if (st->batch && st->cur_file >= 0)
		errcontext("Arrow file \"%s\", record batch %d, row " INT64_FORMAT "%s%s%s",
				   st->table->files[st->cur_file].path, st->batch->index,
				   st->row, st->ctx_attidx >= 0 ? ", column \"" : "",
				   st->ctx_attidx >= 0 ? NameStr(TupleDescAttr(st->tupdesc, st->ctx_attidx)->attname) : "",
				   st->ctx_attidx >= 0 ? "\"" : "");
}

static void
arrowBeginForeignScan(ForeignScanState *node, int eflags)
{
	ForeignScan *plan = (ForeignScan *) node->ss.ps.plan;
	List	   *priv = plan->fdw_private;
	List	   *files = list_nth(priv, FdwPrivFiles);
	List	   *sizes = list_nth(priv, FdwPrivSizes);
	List	   *mtimes = list_nth(priv, FdwPrivMtimes);
	List	   *referenced = list_nth(priv, FdwPrivReferenced);
	List	   *idents = list_nth(priv, FdwPrivIdents);
	List	   *paths = NIL;
	ArrowFdwScanState *st;
	ListCell   *lc;
	int			i;

	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;

	st = palloc0(sizeof(ArrowFdwScanState));
	node->fdw_state = st;
	st->cur_file = -1;

	/* the files must be those that were planned: check what is opened */
	foreach(lc, files)
		paths = lappend(paths, strVal(lfirst(lc)));
	st->table = arrow_table_open(node->ss.ss_currentRelation, paths);
	if (st->table->n_files != list_length(files))
		elog(ERROR, "arrow_fdw: file list changed");
	for (i = 0; i < st->table->n_files; i++)
	{
		const ArrowPgSource *src = st->table->files[i].src;
		char	   *ident = psprintf(INT64_FORMAT ":" INT64_FORMAT, src->dev, src->ino);

		if (src->size != strtoi64(strVal(list_nth(sizes, i)), NULL, 10) ||
			src->mtime_ns != strtoi64(strVal(list_nth(mtimes, i)), NULL, 10) ||
			strcmp(ident, strVal(list_nth(idents, i))) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("file \"%s\" changed during scan", src->path),
					 errdetail("The Arrow file changed after the query was planned: its device, inode, size or modification time differs."),
					 errhint("Run the query again; a prepared statement must be prepared again.")));
	}

	/* the fields to load */
	st->want = palloc0(sizeof(bool) * Max(n_fields_of(st->table), 1));
	st->ref_attnos = palloc(sizeof(AttrNumber) * Max(list_length(referenced), 1));
	st->ref_arrays = palloc0(sizeof(ArrowArray *) * Max(list_length(referenced), 1));
	st->all_fast = true;
	foreach(lc, referenced)
	{
		AttrNumber	attno = lfirst_int(lc);

		st->ref_attnos[st->n_ref++] = attno;
		st->want[st->table->fields[attno - 1]] = true;
		if (st->table->convs[attno - 1].fast == ARROW_FAST_NONE)
			st->all_fast = false;
	}
	st->tupdesc = RelationGetDescr(node->ss.ss_currentRelation);
	st->ctx_attidx = -1;
	st->conds = arrow_stats_prepare(plan->fdw_exprs, &st->n_conds);
	if (pg_warp_enabled)
	{
		EngineFilterColumns cols = {st->table->convs, st->ref_attnos, st->n_ref};

		st->filter = engine_filter_begin(&node->ss, plan->scan.scanrelid, &cols);
	}
	st->row_cxt = AllocSetContextCreate(node->ss.ps.state->es_query_cxt,
										"arrow_fdw rows", ALLOCSET_DEFAULT_SIZES);
}

static void
release_batch(ArrowFdwScanState *st)
{
	if (st->batch)
	{
		arrow_batch_free(st->batch);
		st->batch = NULL;
	}
}

/* Loads the next record batch that the statistics do not rule out. */
static bool
next_batch(ArrowFdwScanState *st)
{
	ArrowFdwTable *t = st->table;

	release_batch(st);
	if (st->shared && st->rows_filtered > st->rows_filtered_flushed)
	{
		pg_atomic_fetch_add_u64(&st->shared->rows_filtered,
								st->rows_filtered - st->rows_filtered_flushed);
		st->rows_filtered_flushed = st->rows_filtered;
	}
	for (;;)
	{
		uint64		g;
		int			f;
		int32		b;
		ArrowFdwFile *file;
		ArrowError	err;
		int64		before;

		if (st->shared)
			g = pg_atomic_fetch_add_u64(&st->shared->next_batch, 1);
		else
			g = st->next_batch++;
		if (g >= (uint64) t->total_batches)
		{
			if (st->cur_file >= 0)
				arrow_pg_source_close(t->files[st->cur_file].src);
			return false;
		}
		locate_batch(t, (int32) g, &f, &b);
		file = &t->files[f];
		if (st->n_conds > 0 &&
			arrow_stats_skip_batch(st->conds, st->n_conds, t->convs, t->fields,
								   &file->file->batches[b]))
		{
			st->batches_skipped++;
			if (st->shared)
				pg_atomic_fetch_add_u64(&st->shared->batches_skipped, 1);
			continue;
		}
		if (st->cur_file != f)
		{
			if (st->cur_file >= 0)
				arrow_pg_source_close(t->files[st->cur_file].src);
			st->cur_file = f;
		}
		CHECK_FOR_INTERRUPTS();
		before = file->src->bytes_read;
		memset(&err, 0, sizeof(err));
		if (arrow_batch_load(file->file, b, st->want, &st->batch, &err) != ARROW_OK)
		{
			st->batch = NULL;
			arrow_pg_report(&err, psprintf("read record batch %d of", b), file->path);
		}
		st->bytes_read += file->src->bytes_read - before;
		st->batches_read++;
		if (st->shared)
		{
			pg_atomic_fetch_add_u64(&st->shared->batches_read, 1);
			pg_atomic_fetch_add_u64(&st->shared->bytes_read,
									file->src->bytes_read - before);
		}
		st->row = 0;
		for (int i = 0; i < st->n_ref; i++)
			st->ref_arrays[i] = &st->batch->columns[t->fields[st->ref_attnos[i] - 1]];
		if (st->batch->n_rows > 0)
			return true;
		release_batch(st);
	}
}

static TupleTableSlot *
arrowIterateForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;
	TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
	ErrorContextCallback errcb;
	MemoryContext old;

next_row:
	ExecClearTuple(slot);
	for (;;)
	{
		if (st->batch == NULL || st->row >= st->batch->n_rows)
		{
			if (!next_batch(st))
				return slot;
			if (st->filter)
				engine_filter_batch(st->filter, st->ref_arrays, st->batch->n_rows);
		}
		if (st->filter == NULL || engine_filter_row(st->filter, st->row))
			break;
		st->row++;
		st->rows_filtered++;
	}
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	if (st->all_fast)
	{
		/* plain fixed-width values: no memory, no error possible */
		for (int i = 0; i < st->n_ref; i++)
		{
			int			a = st->ref_attnos[i] - 1;

			slot->tts_values[a] = arrow_conv_fast(&st->table->convs[a],
												  st->ref_arrays[i], st->row,
												  &slot->tts_isnull[a]);
		}
	}
	else
	{
		MemoryContextReset(st->row_cxt);
		old = MemoryContextSwitchTo(st->row_cxt);
		errcb.callback = scan_error_context;
		errcb.arg = st;
		errcb.previous = error_context_stack;
		error_context_stack = &errcb;
		for (int i = 0; i < st->n_ref; i++)
		{
			int			a = st->ref_attnos[i] - 1;

			st->ctx_attidx = a;
			slot->tts_values[a] = arrow_conv_value(&st->table->convs[a],
												   st->ref_arrays[i], st->row,
												   &slot->tts_isnull[a]);
		}
		st->ctx_attidx = -1;
		error_context_stack = errcb.previous;
		MemoryContextSwitchTo(old);
	}
	st->row++;
	ExecStoreVirtualTuple(slot);
	/* a batch the engine left to PostgreSQL: the engine's quals here */
	if (st->filter &&
		!engine_filter_recheck(st->filter, node->ss.ps.ps_ExprContext, slot))
	{
		st->rows_filtered++;
		goto next_row;
	}
	return slot;
}

static void
arrowReScanForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	release_batch(st);
	st->next_batch = 0;
	st->row = 0;
}

static void
arrowEndForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	if (st == NULL)
		return;
	release_batch(st);
	for (int i = 0; i < st->table->n_files; i++)
	{
		arrow_pg_source_close(st->table->files[i].src);
		arrow_file_close(st->table->files[i].file);
	}
}

/* ----------------------------------------------------------------
 * Parallel scans
 * ----------------------------------------------------------------
 */
static Size
arrowEstimateDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt)
{
	return sizeof(ArrowFdwShared);
}

static void
reset_shared(ArrowFdwShared *sh)
{
	pg_atomic_write_u64(&sh->next_batch, 0);
	pg_atomic_write_u64(&sh->batches_read, 0);
	pg_atomic_write_u64(&sh->batches_skipped, 0);
	pg_atomic_write_u64(&sh->bytes_read, 0);
	pg_atomic_write_u64(&sh->rows_filtered, 0);
}

static void
arrowInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
							  void *coordinate)
{
	ArrowFdwShared *sh = coordinate;
	ArrowFdwScanState *st = node->fdw_state;

	pg_atomic_init_u64(&sh->next_batch, 0);
	pg_atomic_init_u64(&sh->batches_read, 0);
	pg_atomic_init_u64(&sh->batches_skipped, 0);
	pg_atomic_init_u64(&sh->bytes_read, 0);
	pg_atomic_init_u64(&sh->rows_filtered, 0);
	if (st)
		st->shared = sh;
}

static void
arrowReInitializeDSMForeignScan(ForeignScanState *node, ParallelContext *pcxt,
								void *coordinate)
{
	reset_shared(coordinate);
}

static void
arrowInitializeWorkerForeignScan(ForeignScanState *node, shm_toc *toc,
								 void *coordinate)
{
	ArrowFdwScanState *st = node->fdw_state;

	if (st)
		st->shared = coordinate;
}

static void
arrowShutdownForeignScan(ForeignScanState *node)
{
	ArrowFdwScanState *st = node->fdw_state;

	/* the DSM goes away after this: keep the totals for EXPLAIN ANALYZE */
	if (st && st->shared && !IsParallelWorker())
	{
		st->final_read = pg_atomic_read_u64(&st->shared->batches_read);
		st->final_skipped = pg_atomic_read_u64(&st->shared->batches_skipped);
		st->final_bytes = pg_atomic_read_u64(&st->shared->bytes_read);
		st->final_filtered = pg_atomic_read_u64(&st->shared->rows_filtered);
		st->have_final = true;
		st->shared = NULL;
	}
}

/* ----------------------------------------------------------------
 * ANALYZE
 * ----------------------------------------------------------------
 */
/*
 * Puts the rows of one record batch through the reservoir of
 * arrow_acquire_sample_rows, converting only the rows that enter it.
 * *n: rows in the reservoir, *seen: rows offered so far.
 */
static void
sample_batch_rows(ArrowFdwTable *t, TupleDesc tupdesc, ArrowBatch *batch,
				  HeapTuple *rows, int targrows, int *n, double *seen,
				  double *skip, ReservoirState rstate, MemoryContext row_cxt)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(tupdesc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(tupdesc->natts, 1));

	for (int64 r = 0; r < batch->n_rows; r++)
	{
		int			pos = -1;
		MemoryContext old;

		if (*n < targrows)
			pos = (*n)++;
		else
		{
			/* Vitter's algorithm, as in PostgreSQL's own samplers */
			if (*skip < 0)
				*skip = reservoir_get_next_S(rstate, *seen, targrows);
			if (*skip <= 0)
			{
				pos = (int) (targrows * sampler_random_fract(&rstate->randstate));
				heap_freetuple(rows[pos]);
			}
			*skip -= 1;
		}
		*seen += 1;
		if (pos < 0)
			continue;
		MemoryContextReset(row_cxt);
		old = MemoryContextSwitchTo(row_cxt);
		for (int i = 0; i < tupdesc->natts; i++)
		{
			if (t->fields[i] < 0)
			{
				nulls[i] = true;
				continue;
			}
			values[i] = arrow_conv_value(&t->convs[i], &batch->columns[t->fields[i]],
										 r, &nulls[i]);
		}
		MemoryContextSwitchTo(old);
		rows[pos] = heap_form_tuple(tupdesc, values, nulls);
	}
	pfree(values);
	pfree(nulls);
}

/*
 * ANALYZE's sampler.  It reads a bounded random subset of the record
 * batches (arrow_sample_batches: enough for targrows rows and about the
 * bytes that ANALYZE of a heap table reads), takes a uniform sample of the
 * rows of those batches and reports the table's exact row count from the
 * files' footers.
 */
static int
arrow_acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows,
						  int targrows, double *totalrows,
						  double *totaldeadrows)
{
	ArrowFdwTable *t = arrow_table_open(rel, NIL);
	TupleDesc	tupdesc = RelationGetDescr(rel);
	bool	   *want = palloc0(sizeof(bool) * Max(n_fields_of(t), 1));
	const ArrowFile **files = palloc(sizeof(ArrowFile *) * Max(t->n_files, 1));
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "arrow_fdw analyze",
												  ALLOCSET_DEFAULT_SIZES);
	ReservoirStateData rstate;
	double		seen = 0;
	double		skip = -1;
	int			n = 0;
	int32	   *chosen;
	int32		n_chosen;
	int64		bytes = 0;

	for (int i = 0; i < t->natts; i++)
		if (t->fields[i] >= 0)
			want[t->fields[i]] = true;
	for (int f = 0; f < t->n_files; f++)
		files[f] = t->files[f].file;
	reservoir_init_selection_state(&rstate, targrows);
	chosen = arrow_sample_batches(files, t->n_files, t->total_batches, targrows,
								  &n_chosen);
	for (int32 k = 0; k < n_chosen; k++)
	{
		ArrowBatch *batch = NULL;
		ArrowError	err;
		int			f;
		int32		b;

		vacuum_delay_point();
		locate_batch(t, chosen[k], &f, &b);
		memset(&err, 0, sizeof(err));
		if (arrow_batch_load(t->files[f].file, b, want, &batch, &err) != ARROW_OK)
			arrow_pg_report(&err, psprintf("read record batch %d of", b), t->files[f].path);
		sample_batch_rows(t, tupdesc, batch, rows, targrows, &n, &seen, &skip,
						  &rstate, row_cxt);
		arrow_batch_free(batch);
		/* at most one file open at a time */
		if (k + 1 == n_chosen || chosen[k + 1] >= t->batch_start[f + 1])
			arrow_pg_source_close(t->files[f].src);
	}
	for (int f = 0; f < t->n_files; f++)
		bytes += t->files[f].src->bytes_read;
	MemoryContextDelete(row_cxt);
	*totalrows = (double) t->total_rows;
	*totaldeadrows = 0;
	ereport(elevel,
			(errmsg("\"%s\": sampled %d of %.0f rows, reading %d of %d record batches (" INT64_FORMAT " bytes) in %d Arrow files",
					RelationGetRelationName(rel), n, *totalrows, n_chosen,
					t->total_batches, bytes, t->n_files)));
	return n;
}

static bool
arrowAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						 BlockNumber *totalpages)
{
	ForeignTable *ft = GetForeignTable(RelationGetRelid(relation));
	List	   *files = options_file_list(ft->options, NULL);
	ListCell   *lc;
	int64		bytes = 0;

	foreach(lc, files)
	{
		struct stat sb;

		if (stat(lfirst(lc), &sb) == 0)
			bytes += sb.st_size;
	}
	*totalpages = (BlockNumber) Min(bytes / BLCKSZ + 1, (int64) MaxBlockNumber);
	*func = arrow_acquire_sample_rows;
	return true;
}

/* ----------------------------------------------------------------
 * IMPORT FOREIGN SCHEMA
 * ----------------------------------------------------------------
 */

/* while restore_pg_type parses: the first message below ERROR, kept back */
static char *pg_type_message = NULL;
static emit_log_hook_type pg_type_prev_hook = NULL;

static void
pg_type_log_hook(ErrorData *edata)
{
	if (edata->elevel < ERROR)
	{
		if (pg_type_message == NULL && edata->message != NULL)
			pg_type_message = MemoryContextStrdup(TopTransactionContext,
												  edata->message);
		edata->output_to_client = false;
		edata->output_to_server = false;
		return;
	}
	if (pg_type_prev_hook)
		pg_type_prev_hook(edata);
}

/*
 * Parses a pg_type metadata string in a subtransaction; returns the type or
 * InvalidOid with *problem set (the error or warning that parsing raised,
 * which is not shown).
 */
static Oid
parse_pg_type(const char *name, int32 *typmod, char **problem)
{
	Oid			typid = InvalidOid;
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	*problem = NULL;
	pg_type_message = NULL;
	pg_type_prev_hook = emit_log_hook;
	emit_log_hook = pg_type_log_hook;
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(cxt);
	PG_TRY();
	{
		parseTypeString(name, &typid, typmod, true);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		emit_log_hook = pg_type_prev_hook;
		MemoryContextSwitchTo(cxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		*problem = edata->message;
		typid = InvalidOid;
	}
	PG_END_TRY();
	emit_log_hook = pg_type_prev_hook;
	MemoryContextSwitchTo(cxt);
	CurrentResourceOwner = owner;
	if (*problem == NULL && pg_type_message != NULL)
	{
		*problem = pstrdup(pg_type_message);
		typid = InvalidOid;
	}
	else if (*problem == NULL && !OidIsValid(typid))
		*problem = psprintf("type \"%s\" does not exist", name);
	pg_type_message = NULL;
	return typid;
}

/*
 * The type recorded by pg2arrow in the field's "pg_type" metadata, when it
 * exists here and can hold the field; else InvalidOid, with one NOTICE that
 * names the field and says why (the default mapping is used then).
 */
static Oid
restore_pg_type(const ArrowField *f, int32 *typmod)
{
	const char *name = arrow_metadata_get(&f->metadata, "pg_type");
	Oid			typid;
	char	   *problem = NULL;

	if (name == NULL || *name == '\0')
		return InvalidOid;
	typid = parse_pg_type(name, typmod, &problem);
	if (OidIsValid(typid))
	{
		ArrowConv	c;

		if (!arrow_conv_init(&c, f, typid, *typmod, &problem))
			typid = InvalidOid;
	}
	if (!OidIsValid(typid))
	{
		*typmod = -1;
		ereport(NOTICE,
				(errmsg("Arrow field \"%s\": pg_type metadata \"%s\" is not used",
						f->name, name),
				 errdetail("%s.", problem),
				 errhint("The column gets the default type of the field.")));
	}
	return typid;
}

/* whether 'name' is used by a system column of a table */
static bool
is_system_column_name(const char *name)
{
	return SystemAttributeByName(name) != NULL;
}

/* whether a field's name can be its column's name unchanged */
static bool
usable_column_name(const char *name)
{
	return name[0] != '\0' && strlen(name) < NAMEDATALEN &&
		!is_system_column_name(name);
}

/*
 * A column name for field i (0-based) named 'name', which is not usable as
 * it is: "field_N" (N = i + 1) for an empty name, else the name cut at
 * NAMEDATALEN - 1 bytes (on a character boundary); then "_K" (K = 1, 2, ...)
 * appended while the name is in 'used' (the usable field names and the names
 * given so far) or is a system column's.  The result is added to 'used'.
 */
static char *
import_column_name(const char *name, int i, List **used)
{
	char	   *base;
	char	   *cand;
	char		suffix[16];
	int			len;
	ListCell   *lc;

	if (name[0] == '\0')
		base = psprintf("field_%d", i + 1);
	else
	{
		len = pg_mbcliplen(name, strlen(name), NAMEDATALEN - 1);
		base = pnstrdup(name, len);
	}
	cand = base;
	for (int k = 1;; k++)
	{
		bool		taken = is_system_column_name(cand);

		foreach(lc, *used)
			if (!taken && strcmp(lfirst(lc), cand) == 0)
				taken = true;
		if (!taken)
			break;
		snprintf(suffix, sizeof(suffix), "_%d", k);
		len = pg_mbcliplen(base, strlen(base),
						   NAMEDATALEN - 1 - (int) strlen(suffix));
		cand = psprintf("%.*s%s", len, base, suffix);
	}
	*used = lappend(*used, cand);
	return cand;
}

static char *
import_table_sql(const char *schema, const char *table, const char *server,
				 const ArrowSchema *as, List *table_options, const char *first_path)
{
	StringInfoData buf;
	ListCell   *lc;
	bool		first = true;
	List	   *used = NIL;

	/* fields that keep their names come first: generated names avoid them */
	for (int i = 0; i < as->n_fields; i++)
		if (usable_column_name(as->fields[i].name))
			used = lappend(used, as->fields[i].name);
	initStringInfo(&buf);
	appendStringInfo(&buf, "CREATE FOREIGN TABLE %s (",
					 quote_qualified_identifier(schema, table));
	for (int i = 0; i < as->n_fields; i++)
	{
		const ArrowField *f = &as->fields[i];
		Oid			typid;
		int32		typmod = -1;
		char	   *why = NULL;
		char	   *colname;

		(void) find_field(as, f->name, first_path);	/* refuses duplicates */

		typid = restore_pg_type(f, &typmod);
		if (!OidIsValid(typid) && !arrow_default_type(f, &typid, &typmod, &why))
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_DATA_TYPE),
					 errmsg("cannot import field \"%s\" of Arrow file \"%s\"", f->name, first_path),
					 errdetail("The %s.", why),
					 f->type.id == ARROW_TYPE_STRUCT
					 ? errhint("Create a composite type with attributes named like the struct's fields, then create the foreign table yourself.")
					 : errhint("Leave the field out: create the foreign table yourself.")));
		if (usable_column_name(f->name))
			colname = f->name;
		else
		{
			colname = import_column_name(f->name, i, &used);
			ereport(NOTICE,
					(errmsg("Arrow field \"%s\" of file \"%s\" becomes column \"%s\"",
							f->name, first_path, colname),
					 errdetail("The field's name is %s; the column option \"field\" keeps it.",
							   f->name[0] == '\0' ? "empty" :
							   strlen(f->name) >= NAMEDATALEN ? "too long for a column name" :
							   "that of a system column")));
		}
		appendStringInfo(&buf, "%s\n  %s %s", i ? "," : "", quote_identifier(colname),
						 format_type_extended(typid, typmod,
											  FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY));
		if (strcmp(colname, f->name) != 0)
			appendStringInfo(&buf, " OPTIONS (field %s)", quote_literal_cstr(f->name));
	}
	appendStringInfo(&buf, "\n) SERVER %s OPTIONS (", quote_identifier(server));
	foreach(lc, table_options)
	{
		DefElem    *def = lfirst(lc);

		appendStringInfo(&buf, "%s%s %s", first ? "" : ", ", def->defname,
						 quote_literal_cstr(defGetString(def)));
		first = false;
	}
	appendStringInfoString(&buf, ")");
	return buf.data;
}

static bool
import_wanted(ImportForeignSchemaStmt *stmt, const char *name)
{
	ListCell   *lc;
	bool		listed = false;

	foreach(lc, stmt->table_list)
		if (strcmp(((RangeVar *) lfirst(lc))->relname, name) == 0)
			listed = true;
	switch (stmt->list_type)
	{
		case FDW_IMPORT_SCHEMA_LIMIT_TO:
			return listed;
		case FDW_IMPORT_SCHEMA_EXCEPT:
			return !listed;
		default:
			return true;
	}
}

/* file name without directory and without its last extension */
static char *
table_name_of(const char *path)
{
	const char *base = strrchr(path, '/');
	char	   *name = pstrdup(base ? base + 1 : path);
	char	   *dot = strrchr(name, '.');

	if (dot && dot != name)
		*dot = '\0';
	if (strlen(name) >= NAMEDATALEN)
		name[NAMEDATALEN - 1] = '\0';
	return name;
}

/*
 * IMPORT FOREIGN SCHEMA name FROM SERVER s INTO local OPTIONS (...)
 *
 * The options are those of a table (file, files or dir with suffix or
 * pattern; parallel_workers), plus "per_file" (boolean).  Without per_file,
 * all files make one table named 'name' (the "remote schema", free-form);
 * with per_file 'true', every file becomes its own table named after the
 * file (without extension).  LIMIT TO and EXCEPT filter those table names.
 */
static List *
arrowImportForeignSchema(ImportForeignSchemaStmt *stmt, Oid serverOid)
{
	ForeignServer *server = GetForeignServer(serverOid);
	List	   *table_options = NIL;
	List	   *out = NIL;
	List	   *paths;
	bool		per_file = false;
	ListCell   *lc;
	Datum		validate;

	foreach(lc, stmt->options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "per_file") == 0)
			per_file = defGetBoolean(def);
		else
			table_options = lappend(table_options, def);
	}
	/* the same checks (and privileges) as for a table's options */
	validate = transformGenericOptions(ForeignTableRelationId, (Datum) 0,
									   table_options, InvalidOid);
	DirectFunctionCall2(arrow_fdw_validator, validate,
						ObjectIdGetDatum(ForeignTableRelationId));
	paths = options_file_list(table_options, NULL);
	if (paths == NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
				 errmsg("no Arrow files to import"),
				 errhint("The directory has no file that matches the options \"suffix\" or \"pattern\".")));

	if (per_file)
	{
		foreach(lc, paths)
		{
			char	   *path = lfirst(lc);
			char	   *name = table_name_of(path);
			ArrowFdwTable t;

			if (!import_wanted(stmt, name))
				continue;
			memset(&t, 0, sizeof(t));
			open_files(&t, list_make1(path));
			out = lappend(out,
						  import_table_sql(stmt->local_schema, name,
										   server->servername,
										   &t.files[0].file->schema,
										   list_make1(makeDefElem("file", (Node *) makeString(path), -1)),
										   path));
		}
	}
	else if (import_wanted(stmt, stmt->remote_schema))
	{
		ArrowFdwTable t;

		memset(&t, 0, sizeof(t));
		open_files(&t, paths);
		out = lappend(out,
					  import_table_sql(stmt->local_schema, stmt->remote_schema,
									   server->servername,
									   &t.files[0].file->schema, table_options,
									   t.files[0].path));
	}
	return out;
}

/* ----------------------------------------------------------------
 * Checking tables when they are created or altered
 * ----------------------------------------------------------------
 */
static bool
is_arrow_table(Oid relid)
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

static void
check_table(Oid relid)
{
	Relation	rel;
	ArrowFdwTable *t;

	if (!is_arrow_table(relid))
		return;
	CommandCounterIncrement();
	rel = table_open(relid, AccessShareLock);
	t = arrow_table_open(rel, NIL);
	for (int i = 0; i < t->n_files; i++)
		arrow_file_close(t->files[i].file);
	table_close(rel, AccessShareLock);
}

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
}
