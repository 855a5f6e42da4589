/*-------------------------------------------------------------------------
 *
 * connection.h
 *		Connection options of the tools that connect to PostgreSQL (-d -h -p
 *		-U -w -W, as psql's; -u as -U): their getopt entries, their --help lines, and opening a
 *		libpq connection with them (prompting for a password with
 *		PostgreSQL's own prompt routine).
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOOLS_CONNECTION_H
#define TOOLS_CONNECTION_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>

#include <libpq-fe.h>

/* Where to connect; NULL values fall back to PG* environment variables */
typedef struct ConnOptions
{
	const char *dbname;			/* -d: a name, a conninfo string or a URI */
	const char *host;
	const char *port;
	const char *user;
	int			password_mode;	/* -1 never (-w), 0 when asked, 1 always (-W) */
	char	   *password;		/* typed at the prompt: kept for the next
								 * connections */
} ConnOptions;

/* The short options (for getopt's optstring) and the long ones */
#define CONN_SHORT_OPTIONS	"d:h:p:U:u:wW"
#define CONN_LONG_OPTIONS \
	{"dbname", required_argument, NULL, 'd'}, \
	{"host", required_argument, NULL, 'h'}, \
	{"port", required_argument, NULL, 'p'}, \
	{"user", required_argument, NULL, 'U'}, \
	{"no-password", no_argument, NULL, 'w'}, \
	{"password", no_argument, NULL, 'W'}

/* The "Connection:" section of --help */
extern const char conn_options_help[];

/* Takes option c (with optarg arg) into co; false when c is no connection option */
extern bool conn_option(ConnOptions *co, int c, const char *arg);

/*
 * Opens a connection (application name appname, client encoding UTF8).
 * With -W the password is asked before the first connection; without -w
 * it is asked when the server wants one and stdin is a terminal.  NULL with
 * the reason in errbuf on failure.
 */
extern PGconn *conn_open(ConnOptions *co, const char *appname, char *errbuf,
						 size_t errlen);

/* Frees the remembered password */
extern void conn_options_free(ConnOptions *co);

/* in password.c: "Password: " on the terminal, read without echo (new string) */
extern char *prompt_password(void);

#endif							/* TOOLS_CONNECTION_H */
