/*-------------------------------------------------------------------------
 *
 * session.c
 *		Connections and SQL of pg2arrow: connecting (with a password prompt),
 *		the snapshot every worker imports, --set, the per-worker queries with
 *		their macros replaced, and the COPY commands that run them.
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "pg2arrow.h"

/*
 * Reads a password from the terminal without echo.  Echo is off before the
 * prompt appears, so an answer typed (or sent) as soon as the prompt shows
 * is neither echoed nor discarded.
 */
char *
prompt_password(void)
{
	FILE	   *tty = fopen("/dev/tty", "r+");
	struct termios old,
				noecho;
	char		buf[1024];
	size_t		n;

	if (tty == NULL)
		fatal("cannot prompt for a password: no terminal");
	tcgetattr(fileno(tty), &old);
	noecho = old;
	noecho.c_lflag &= ~ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &noecho);
	fputs("Password: ", tty);
	fflush(tty);
	if (fgets(buf, sizeof(buf), tty) == NULL)
		buf[0] = '\0';
	tcsetattr(fileno(tty), TCSANOW, &old);
	fputc('\n', tty);
	fclose(tty);
	n = strlen(buf);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return xstrdup(buf);
}

/*
 * Opens a connection with the options (NULL values fall back to PG*
 * environment variables; -d may be a conninfo string or URI).  Prompts for
 * a password when the server asks for one and -w was not given; the
 * password is remembered for the other workers.
 */
PGconn *
connect_db(const Options *opts, char **password, char *errbuf, size_t errlen)
{
	for (;;)
	{
		const char *keys[] = {"host", "port", "user", "password", "dbname",
		"fallback_application_name", "client_encoding", NULL};
		const char *vals[] = {opts->host, opts->port, opts->user, *password,
		opts->dbname, "pg2arrow", "UTF8", NULL};
		PGconn	   *conn = PQconnectdbParams(keys, vals, 1);

		if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
			return conn;
		if (conn != NULL && PQconnectionNeedsPassword(conn) && *password == NULL &&
			opts->password_mode >= 0 && isatty(fileno(stdin)))
		{
			PQfinish(conn);
			*password = prompt_password();
			continue;
		}
		snprintf(errbuf, errlen, "connection to database failed: %s",
				 conn ? PQerrorMessage(conn) : "out of memory");
		PQfinish(conn);
		return NULL;
	}
}

/* Runs a command that returns no rows; false with errbuf set on failure */
bool
exec_command(PGconn *conn, const char *sql, char *errbuf, size_t errlen)
{
	PGresult   *res = PQexec(conn, sql);
	bool		ok = PQresultStatus(res) == PGRES_COMMAND_OK ||
		PQresultStatus(res) == PGRES_TUPLES_OK;

	if (!ok)
		snprintf(errbuf, errlen, "%s failed: %s", sql, PQerrorMessage(conn));
	PQclear(res);
	return ok;
}

/* Applies every --set NAME:VALUE with set_config() */
bool
apply_sets(PGconn *conn, const Options *opts, char *errbuf, size_t errlen)
{
	for (int i = 0; i < opts->n_sets; i++)
	{
		const char *colon = strchr(opts->sets[i], ':');
		char	   *name = strndup(opts->sets[i], colon - opts->sets[i]);
		const char *params[2] = {name, colon + 1};
		PGresult   *res = PQexecParams(conn, "SELECT pg_catalog.set_config($1, $2, false)",
									   2, NULL, params, NULL, NULL, 0);
		bool		ok = PQresultStatus(res) == PGRES_TUPLES_OK;

		if (!ok)
			snprintf(errbuf, errlen, "--set %s failed: %s", opts->sets[i],
					 PQerrorMessage(conn));
		PQclear(res);
		free(name);
		if (!ok)
			return false;
	}
	return true;
}

/* Returns s with every occurrence of from replaced by to (new string) */
static char *
replace_all(const char *s, const char *from, const char *to)
{
	size_t		flen = strlen(from),
				tlen = strlen(to),
				n = 0;
	char	   *out,
			   *o;

	for (const char *p = strstr(s, from); p; p = strstr(p + flen, from))
		n++;
	out = o = xmalloc(strlen(s) + n * tlen + 1);
	for (const char *p = s, *q; (q = strstr(p, from)) != NULL; p = q + flen)
	{
		memcpy(o, p, q - p);
		o += q - p;
		memcpy(o, to, tlen);
		o += tlen;
		s = q + flen;
	}
	strcpy(o, s);
	return out;
}

/* Runs a query; returns the first value of its first row (new string) or NULL */
char *
query_value(PGconn *conn, const char *sql, const char *param, char *errbuf,
			size_t errlen)
{
	PGresult   *res = PQexecParams(conn, sql, param ? 1 : 0, NULL, &param,
								   NULL, NULL, 0);
	char	   *v = NULL;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) >= 1 &&
		!PQgetisnull(res, 0, 0))
		v = xstrdup(PQgetvalue(res, 0, 0));
	else
		snprintf(errbuf, errlen, "%s", PQresultStatus(res) == PGRES_TUPLES_OK ?
				 "query returned no value" : PQerrorMessage(conn));
	PQclear(res);
	return v;
}

/*
 * Builds each worker's SQL: the query (or SELECT * FROM table) with the
 * macros $(WORKER_ID), $(N_WORKERS), $(CTID_RANGE) and $(PARALLEL_KEY)
 * replaced.  The block count for $(CTID_RANGE) and the row estimate for
 * --progress are read on conn, inside the snapshot.
 */
bool
build_worker_sql(Export *ex, PGconn *conn, char *errbuf, size_t errlen)
{
	const Options *opts = ex->opts;
	const char *rel = opts->table ? opts->table : opts->ctid_table;
	char	   *base;
	int64_t		nblocks = 0;

	if (opts->table)
		base = xasprintf(ex->n_workers > 1 ? "SELECT * FROM %s WHERE $(CTID_RANGE)"
						 : "SELECT * FROM %s", opts->table);
	else
	{
		size_t		n = strlen(opts->command);

		/* a trailing semicolon would end the COPY command early */
		while (n > 0 && (opts->command[n - 1] == ';' ||
						 strchr(" \t\r\n", opts->command[n - 1])))
			n--;
		base = strndup(opts->command, n);
	}
	if (rel != NULL)
	{
		char	   *v;
		char		relkind = '?';

		v = query_value(conn,
						"SELECT pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::int8"
						" || ' ' || c.reltuples || ' ' || c.relkind::text"
						" FROM pg_catalog.pg_class c WHERE c.oid = $1::pg_catalog.regclass",
						rel, errbuf, errlen);
		if (v == NULL)
			return false;
		sscanf(v, "%" SCNd64 " %lf %c", &nblocks, &ex->total_rows, &relkind);
		free(v);
		/* never analyzed (reltuples -1): the planner's estimate for --progress */
		if (ex->total_rows < 0 && opts->table)
		{
			char	   *sql = xasprintf("EXPLAIN SELECT * FROM %s", opts->table);
			const char *rows;

			v = query_value(conn, sql, NULL, errbuf, errlen);
			free(sql);
			if (v == NULL)
				return false;
			if ((rows = strstr(v, " rows=")) != NULL)
				ex->total_rows = strtod(rows + 6, NULL);
			free(v);
		}
		/* ctid ranges split the heap blocks of one table */
		if (ex->n_workers > 1 && relkind != 'r' && relkind != 'm')
		{
			snprintf(errbuf, errlen,
					 "cannot split \"%s\" into ctid ranges: it is not a table (relkind '%c')\n"
					 "hint: use -c with a query that uses $(WORKER_ID), e.g. WHERE id %% $(N_WORKERS) = $(WORKER_ID)",
					 rel, relkind);
			return false;
		}
	}
	for (int i = 0; i < ex->n_workers; i++)
	{
		Worker	   *w = &ex->workers[i];
		char		num[32],
					range[200];
		char	   *s1,
				   *s2,
				   *s3;
		int64_t		b0 = nblocks * i / ex->n_workers,
					b1 = nblocks * (i + 1) / ex->n_workers;

		if (i == ex->n_workers - 1)
			snprintf(range, sizeof(range), "ctid >= '(%" PRId64 ",0)'::tid", b0);
		else
			snprintf(range, sizeof(range),
					 "ctid >= '(%" PRId64 ",0)'::tid AND ctid < '(%" PRId64 ",0)'::tid",
					 b0, b1);
		snprintf(num, sizeof(num), "%d", i);
		s1 = replace_all(base, "$(WORKER_ID)", num);
		snprintf(num, sizeof(num), "%d", ex->n_workers);
		s2 = replace_all(s1, "$(N_WORKERS)", num);
		s3 = replace_all(s2, "$(CTID_RANGE)", range);
		w->sql = replace_all(s3, "$(PARALLEL_KEY)", opts->keys ? opts->keys[i] : "");
		free(s1);
		free(s2);
		free(s3);
	}
	free(base);
	return true;
}

/*
 * The COPY command of a worker.  When some column needs a cast (float2),
 * the query is wrapped and its columns renamed
 * positionally, so that any column names (also duplicates) work.
 */
char *
build_copy(const Export *ex, const char *sql)
{
	bool		need_wrap = false;
	char	   *cols,
			   *alias,
			   *copy;

	for (int i = 0; i < ex->n_columns; i++)
		need_wrap |= ex->columns[i].cast != NULL;
	if (!need_wrap)
		return xasprintf("COPY (%s) TO STDOUT (FORMAT binary)", sql);
	cols = xstrdup("");
	alias = xstrdup("");
	for (int i = 0; i < ex->n_columns; i++)
	{
		char	   *c,
				   *a;

		c = xasprintf("%s%sq.c%d%s%s", cols, i ? ", " : "", i,
					  ex->columns[i].cast ? "::" : "",
					  ex->columns[i].cast ? ex->columns[i].cast : "");
		a = xasprintf("%s%sc%d", alias, i ? ", " : "", i);
		free(cols);
		free(alias);
		cols = c;
		alias = a;
	}
	copy = xasprintf("COPY (SELECT %s FROM (%s) AS q(%s)) TO STDOUT (FORMAT binary)",
					 cols, sql, alias);
	free(cols);
	free(alias);
	return copy;
}

/* Opens worker i's connection and imports the snapshot */
bool
open_worker(Export *ex, int i, const char *snapshot, char **password,
			char *errbuf, size_t errlen)
{
	Worker	   *w = &ex->workers[i];
	char	   *sql;
	bool		ok;

	if ((w->conn = connect_db(ex->opts, password, errbuf, errlen)) == NULL)
		return false;
	cancels[i] = PQgetCancel(w->conn);
	n_cancels = i + 1;
	if (!exec_command(w->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
					  errbuf, errlen))
		return false;
	sql = xasprintf("SET TRANSACTION SNAPSHOT '%s'", snapshot);
	ok = exec_command(w->conn, sql, errbuf, errlen);
	free(sql);
	return ok && apply_sets(w->conn, ex->opts, errbuf, errlen);
}
