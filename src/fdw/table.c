/*-------------------------------------------------------------------------
 *
 * table.c
 *		A foreign table's Arrow files, opened: their metadata, one schema
 *		for all of them, every column mapped to a top-level field with a
 *		converter (datum.c), and record batches numbered across the files.
 *
 * Opening a table reads the footer and the batch metadata of every file
 * (file.c) and closes the descriptors again; a scan reopens them one at a
 * time.  Errors: a file cannot be read, the schemas differ, a column has no
 * field, two fields have the column's name, or the column's type cannot
 * hold the field.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "utils/rel.h"

#include "fdw/arrow_fdw.h"

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
int
arrow_table_find_field(const ArrowSchema *schema, const char *name, const char *path)
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
 * Opens every file of a list and checks that they share one schema; each
 * must lie in directory t->within unless that is NULL (file.c).
 * Descriptors are closed again; the metadata stays.
 */
void
arrow_table_open_files(ArrowFdwTable *t, List *paths)
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
		f->file = arrow_pg_open(f->path, f->src, t->within);
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
 * options name; those of a "dir" table must lie in it) and maps every column to a field with a converter.  Errors:
 * a file cannot be read, schemas differ, a column has no field or a type
 * that cannot hold it.
 */
ArrowFdwTable *
arrow_table_open(Relation rel, List *paths)
{
	ArrowFdwTable *t = palloc0(sizeof(ArrowFdwTable));
	TupleDesc	tupdesc = RelationGetDescr(rel);
	ForeignTable *ft;
	const ArrowSchema *schema;

	t->relid = RelationGetRelid(rel);
	ft = GetForeignTable(t->relid);
	if (paths == NIL)
		paths = arrow_fdw_file_list(ft->options, NULL);
	t->within = arrow_fdw_confining_dir(ft->options);
	arrow_table_open_files(t, paths);
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
		fi = arrow_table_find_field(schema, name, t->files[0].path);
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
void
arrow_table_locate_batch(const ArrowFdwTable *t, int32 g, int *file, int32 *batch)
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
int64
arrow_table_batch_bytes(const ArrowFdwFile *f, int32 b, const bool *want, int n_fields)
{
	int64		sum = 0;

	for (int c = 0; c < n_fields; c++)
	{
		const ArrowFieldSizes *cached;

		if (!want[c])
			continue;
		if ((cached = arrow_pg_field_sizes(f->file, c)) != NULL)
			sum += cached->bytes[b];
		else
			sum += arrow_pg_batch_field_bytes(f->file, b, c, f->path);
	}
	return sum;
}

/* the number of top-level fields of the table's files (0: no file) */
int
arrow_table_n_fields(const ArrowFdwTable *t)
{
	return t->n_files > 0 ? t->files[0].file->schema.n_fields : 0;
}
