/*-------------------------------------------------------------------------
 *
 * import.c
 *		IMPORT FOREIGN SCHEMA for arrow_fdw: a CREATE FOREIGN TABLE per
 *		file or for all files, its columns named after the fields and typed
 *		from pg2arrow's pg_type metadata or the default mapping (datum.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/heap.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "mb/pg_wchar.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "fdw/arrow_fdw.h"

/* while restore_pg_type parses: the first message below ERROR, kept back */
static char *pg_type_message = NULL;
static emit_log_hook_type pg_type_prev_hook = NULL;

/* emit_log_hook while parse_pg_type runs: keeps back what is below ERROR */
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

/*
 * The CREATE FOREIGN TABLE statement for a table 'schema'.'table' of server
 * 'server' with the given options, one column per field of 'as': the type
 * that pg2arrow recorded (pg_type metadata) when it is usable, else the
 * field's default type; a field without a usable name gets a generated
 * column name and the column option "field".  Errors: a field that no
 * PostgreSQL type can hold, two fields of one name.
 */
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

		(void) arrow_table_find_field(as, f->name, first_path);	/* refuses duplicates */

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

/* whether LIMIT TO / EXCEPT of the statement keep the table 'name' */
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
List *
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
	paths = arrow_fdw_file_list(table_options, NULL);
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
			t.within = arrow_fdw_confining_dir(table_options);
			arrow_table_open_files(&t, list_make1(path));
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
		t.within = arrow_fdw_confining_dir(table_options);
		arrow_table_open_files(&t, paths);
		out = lappend(out,
					  import_table_sql(stmt->local_schema, stmt->remote_schema,
									   server->servername,
									   &t.files[0].file->schema, table_options,
									   t.files[0].path));
	}
	return out;
}
