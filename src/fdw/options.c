/*-------------------------------------------------------------------------
 *
 * options.c
 *		arrow_fdw's options: the validator of table, column, server and
 *		wrapper options, and the list of files that a table's options name.
 *
 * A table names one file ("file"), several ("files", comma separated) or
 * every file of a directory ("dir", optionally filtered by "suffix" or a
 * glob "pattern"); "parallel_workers" overrides the planner's choice and the
 * column option "field" names the field a column reads.  Options that name
 * files need the right to read server files.  A named file that exists must
 * be a regular file (a FIFO, socket or device is refused without being
 * opened); a directory lists only regular files.
 *
 * A directory lists a symbolic link only when it resolves to a file in the
 * same directory (and file.c checks that again when it opens the file):
 * anyone who may write into the directory could otherwise make the table
 * read any file the server's OS user can read.  The table option
 * "follow_symlinks" 'true' follows every link; it needs the right to read
 * server files, as "dir" does, since it lets the files' choice to whoever
 * writes into the directory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fnmatch.h>
#include <sys/stat.h>

#include "access/reloptions.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "fdw/arrow_fdw.h"

/* the options of arrow_fdw, where each may appear */
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
	{"follow_symlinks", ForeignTableRelationId, true},
	{"parallel_workers", ForeignTableRelationId, false},
	{"field", AttributeRelationId, false},
	{NULL, InvalidOid, false}
};

/* whether the current user may name files that the server reads */
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

/* ereport unless 'path' is absolute ('opt' names the option) */
static void
check_absolute(const char *opt, const char *path)
{
	if (!is_absolute_path(path))
		ereport(ERROR,
				(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
				 errmsg("option \"%s\" needs an absolute path: \"%s\"", opt, path)));
}

PG_FUNCTION_INFO_V1(arrow_fdw_validator);

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
	bool		has_follow = false;

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
		else if (strcmp(def->defname, "follow_symlinks") == 0)
		{
			bool		b;

			if (!parse_bool(val, &b))
				ereport(ERROR,
						(errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
						 errmsg("invalid value for option \"follow_symlinks\": \"%s\"", val),
						 errhint("Use 'true' or 'false'.")));
			has_follow = true;
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
		if (has_follow && !has_dir)
			ereport(ERROR,
					(errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
					 errmsg("option \"follow_symlinks\" needs the option \"dir\"")));
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
 * The directory that the files of a table with 'options' must lie in, as
 * realpath() gives it, or NULL when they may lie anywhere (options "file"
 * or "files", or "dir" with "follow_symlinks" 'true').  A directory that
 * cannot be resolved is returned as written: nothing then lies in it.
 */
char *
arrow_fdw_confining_dir(List *options)
{
	const char *dir = NULL;
	bool		follow = false;
	ListCell   *lc;
	char	   *real;
	char	   *out;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, "dir") == 0)
			dir = defGetString(def);
		else if (strcmp(def->defname, "follow_symlinks") == 0)
			follow = defGetBoolean(def);
	}
	if (dir == NULL || follow)
		return NULL;
	real = realpath(dir, NULL);
	if (real == NULL)
		return pstrdup(dir);
	out = pstrdup(real);
	free(real);
	return out;
}

/*
 * The files that 'options' (of a table, or of IMPORT FOREIGN SCHEMA) name, in
 * order: as listed for "file"/"files", sorted by name for "dir" (regular
 * files whose names do not start with a dot and are not pg2arrow's work
 * files, filtered by "suffix" or "pattern"; FIFOs, sockets, devices,
 * directories and, unless "follow_symlinks", symbolic links to files in
 * other directories are left out).  *parallel_workers gets the option's
 * value or -1.
 */
List *
arrow_fdw_file_list(List *options, int *parallel_workers)
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
		char	   *within = arrow_fdw_confining_dir(options);

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
			if (within != NULL ? arrow_pg_resolve_within(path, within, &st) != 0 :
				stat(path, &st) != 0)
				continue;		/* gone, or a link to another directory */
			if (!S_ISREG(st.st_mode))
				continue;		/* a FIFO, socket, device, directory */
			files = lappend(files, path);
		}
		FreeDir(d);
		list_sort(files, cmp_cstring);
	}
	return files;
}
