/*-------------------------------------------------------------------------
 *
 * session.c
 *		Connections and SQL of pg2arrow: each worker's connection and the
 *		snapshot they share, --set, the query's columns, the per-worker
 *		queries with their macros replaced, and the COPY commands that run
 *		them.
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

/* Runs a command that returns no rows; false with errbuf set on failure */
static bool
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
static bool
apply_sets(PGconn *conn, const Options *opts, char *errbuf, size_t errlen)
{
	for (int i = 0; i < opts->n_sets; i++)
	{
		const char *colon = strchr(opts->sets[i], ':');
		char	   *name = xstrndup(opts->sets[i], colon - opts->sets[i]);
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
static char *
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
		base = xstrndup(opts->command, n);
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

/*
 * Opens worker i's connection in a REPEATABLE READ READ ONLY transaction
 * and applies --set.  Worker 0 exports its snapshot (into ex->snapshot)
 * when there are other workers; they import it, so that every worker sees
 * the same data.
 */
bool
open_worker(Export *ex, int i, char *errbuf, size_t errlen)
{
	Worker	   *w = &ex->workers[i];
	bool		ok;

	if ((w->conn = conn_open(&ex->opts->conn, "pg2arrow", errbuf, errlen)) == NULL)
		return false;
	cancel_register(i, w->conn);
	if (!exec_command(w->conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
					  errbuf, errlen))
		return false;
	if (i == 0 && ex->n_workers > 1)
		ok = (ex->snapshot = query_value(w->conn, "SELECT pg_catalog.pg_export_snapshot()",
										 NULL, errbuf, errlen)) != NULL;
	else if (i > 0)
	{
		char	   *sql = xasprintf("SET TRANSACTION SNAPSHOT '%s'", ex->snapshot);

		ok = exec_command(w->conn, sql, errbuf, errlen);
		free(sql);
	}
	else
		ok = true;
	return ok && apply_sets(w->conn, ex->opts, errbuf, errlen);
}

/*
 * Prepares worker 0's query on conn and resolves the types of its columns
 * (ex->columns, ex->n_columns).  A query without columns is refused.
 */
bool
describe_columns(Export *ex, PGconn *conn, char *errbuf, size_t errlen)
{
	PGresult   *desc = PQprepare(conn, "", ex->workers[0].sql, 0, NULL);
	bool		ok;

	if (PQresultStatus(desc) == PGRES_COMMAND_OK)
	{
		PQclear(desc);
		desc = PQdescribePrepared(conn, "");
	}
	if (PQresultStatus(desc) != PGRES_COMMAND_OK)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(conn));
		PQclear(desc);
		return false;
	}
	ex->n_columns = PQnfields(desc);
	if (ex->n_columns == 0)
	{
		snprintf(errbuf, errlen, "the query returns no columns");
		PQclear(desc);
		return false;
	}
	ok = pgtypes_resolve(conn, desc, &ex->opts->types, &ex->columns, errbuf, errlen);
	PQclear(desc);
	return ok;
}
