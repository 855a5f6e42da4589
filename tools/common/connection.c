/*-------------------------------------------------------------------------
 *
 * connection.c
 *		Connection options (-d -h -p -u -w -W) and connecting with them; see
 *		connection.h.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "connection.h"

const char	conn_options_help[] =
"Connection:\n"
"  -d, --dbname=DBNAME       database name, or a conninfo string or URI\n"
"  -h, --host=HOSTNAME       server host or socket directory\n"
"  -p, --port=PORT           server port\n"
"  -U, --user=USERNAME       user name (also -u)\n"
"  -w, --no-password         never prompt for a password\n"
"  -W, --password            prompt for a password\n"
"  (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD ... apply as usual)\n";

/*
 * Takes getopt's option c (with optarg arg) into co when it is one of the
 * connection options; returns false, leaving co alone, when it is not.
 */
bool
conn_option(ConnOptions *co, int c, const char *arg)
{
	switch (c)
	{
		case 'd':
			co->dbname = arg;
			return true;
		case 'h':
			co->host = arg;
			return true;
		case 'p':
			co->port = arg;
			return true;
		case 'U':
		case 'u':
			co->user = arg;
			return true;
		case 'w':
			co->password_mode = -1;
			return true;
		case 'W':
			co->password_mode = 1;
			return true;
	}
	return false;
}

/*
 * Opens a connection with the options (NULL values fall back to PG*
 * environment variables; -d may be a conninfo string or URI), application
 * name appname, client encoding UTF8.  With -W the password is asked
 * before the first connection; without -w it is asked when the server
 * wants one and stdin is a terminal.  A password typed is kept in co for
 * the next connections (each worker of pg2arrow opens one).  Returns NULL
 * with the reason in errbuf on failure.
 */
PGconn *
conn_open(ConnOptions *co, const char *appname, char *errbuf, size_t errlen)
{
	if (co->password_mode == 1 && co->password == NULL)
		co->password = prompt_password();
	for (;;)
	{
		const char *keys[] = {"host", "port", "user", "password", "dbname",
		"fallback_application_name", "client_encoding", NULL};
		const char *vals[] = {co->host, co->port, co->user, co->password,
		co->dbname, appname, "UTF8", NULL};
		PGconn	   *conn = PQconnectdbParams(keys, vals, 1);

		if (conn != NULL && PQstatus(conn) == CONNECTION_OK)
			return conn;
		if (conn != NULL && PQconnectionNeedsPassword(conn) && co->password == NULL &&
			co->password_mode >= 0 && isatty(fileno(stdin)))
		{
			PQfinish(conn);
			co->password = prompt_password();
			continue;
		}
		snprintf(errbuf, errlen, "connection to database failed: %s",
				 conn ? PQerrorMessage(conn) : "out of memory");
		PQfinish(conn);
		return NULL;
	}
}

/* Frees the password kept in co */
void
conn_options_free(ConnOptions *co)
{
	free(co->password);
	co->password = NULL;
}
