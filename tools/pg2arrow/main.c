/*-------------------------------------------------------------------------
 *
 * main.c
 *		pg2arrow: exports the result of a query (or a table) from PostgreSQL
 *		into an Apache Arrow file, in parallel, from one snapshot.
 *
 * The first connection opens a REPEATABLE READ READ ONLY transaction and
 * exports its snapshot; every other worker imports it, so all workers see
 * the same data.  Each worker thread has its own connection, reads its rows
 * with COPY (...) TO STDOUT (FORMAT binary), builds record batches of about
 * --segment-size bytes, serializes them itself and writes them into the one
 * output file with arrow_writer_put_serialized (which reserves a file range
 * atomically).  The rows left at the end of each worker are merged into one
 * shared final batch (see merge_leftovers), so the file has no tiny batches.
 *
 * The output is written under a temporary name in the target directory and
 * renamed when complete; any failure (query error, a worker failing, disk
 * full, SIGINT/SIGTERM) removes it.  --append restores the original file
 * on failure (arrow_writer_abort).
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "pg2arrow.h"

#define DEFAULT_SEGMENT_SIZE	((int64_t) 256 << 20)
#define DEFAULT_NUMERIC_SCALE	6
#define MAX_WORKERS				1024
#define ERRLEN					2048

/* Command-line options */
typedef struct Options
{
	const char *dbname;
	const char *host;
	const char *port;
	const char *user;
	int			password_mode;	/* -1 never (-w), 0 when asked, 1 always (-W) */
	const char *command;
	const char *table;
	const char *output;
	const char *append;
	const char *ctid_table;
	int			n_workers;
	char	  **keys;			/* -k, n_keys entries */
	int			n_keys;
	int64_t		segment_size;
	bool		stat_all;		/* -S without a list */
	char	  **stat_cols;		/* -S COL1,COL2 */
	int			n_stat_cols;
	char	  **sets;			/* --set NAME:VALUE */
	int			n_sets;
	bool		progress;
	const char *dump;
	TypeOptions types;
} Options;

struct Export;

/* One worker: a connection, its query, the batch it is building */
typedef struct Worker
{
	struct Export *ex;
	int			id;
	PGconn	   *conn;
	char	   *sql;			/* the query, macros replaced */
	char	   *copy;			/* the COPY command that runs it */
	pthread_t	thread;
	bool		started;
	BatchState	batch;
	int64_t		rows;			/* rows decoded by this worker */
	char	   *carry;			/* bytes of an incomplete tuple (or header) */
	size_t		carry_len;
	size_t		carry_cap;
	bool		header_done;
	bool		trailer_seen;
} Worker;

/* The whole export */
typedef struct Export
{
	Options    *opts;
	PgColumn   *columns;
	int32_t		n_columns;
	ArrowSchema schema;
	ArrowWriter *writer;
	int			n_workers;
	Worker	   *workers;
	BatchState	final;			/* leftovers of the workers; under final_lock */
	pthread_mutex_t final_lock;
	pthread_mutex_t error_lock;
	char		error[ERRLEN];	/* the first failure; under error_lock */
	atomic_bool stop;			/* a worker failed: everyone stops */
	atomic_int_fast64_t rows;	/* for --progress */
	atomic_int_fast64_t bytes;	/* COPY bytes received */
	atomic_int_fast64_t batches;	/* record batches written */
	double		total_rows;		/* estimate for --progress, 0: unknown */
} Export;

/* Set by the signal handler; the cancel objects it uses are set up first */
static volatile sig_atomic_t interrupted = 0;
static PGcancel *cancels[MAX_WORKERS];
static volatile sig_atomic_t n_cancels = 0;

static const char *progname = "pg2arrow";

/* Prints "pg2arrow: message" (and a newline) to stderr */
static void
report(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

static void
report(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Reports an error and exits; only before the output file exists */
static void
fatal(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));

static void
fatal(const char *fmt,...)
{
	va_list		ap;

	fprintf(stderr, "%s: ", progname);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

char *
xstrdup(const char *s)
{
	char	   *p = strdup(s);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

char *
xasprintf(const char *fmt,...)
{
	va_list		ap;
	char	   *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	return p;
}

/* SIGINT/SIGTERM: remember it and cancel every running query */
static void
handle_signal(int signo)
{
	char		errbuf[256];

	interrupted = 1;
	for (int i = 0; i < n_cancels; i++)
		if (cancels[i] != NULL)
			PQcancel(cancels[i], errbuf, sizeof(errbuf));
}

static void
usage(void)
{
	printf("%s exports the result of a PostgreSQL query or table to an Apache Arrow file.\n\n"
		   "Usage:\n"
		   "  %s [OPTION]... (-c SQL | -t TABLE) (-o FILE | --append=FILE)\n"
		   "  %s --dump=FILE\n\n"
		   "Connection:\n"
		   "  -d, --dbname=DBNAME       database name, or a conninfo string or URI\n"
		   "  -h, --host=HOSTNAME       server host or socket directory\n"
		   "  -p, --port=PORT           server port\n"
		   "  -u, --user=USERNAME       user name\n"
		   "  -w, --no-password         never prompt for a password\n"
		   "  -W, --password            prompt for a password\n"
		   "  (PGHOST, PGPORT, PGUSER, PGDATABASE, PGPASSWORD ... apply as usual)\n\n"
		   "Source (one of):\n"
		   "  -c, --command=SQL         a query\n"
		   "  -t, --table=NAME          every row of a table\n\n"
		   "Output (one of):\n"
		   "  -o, --output=FILE         write a new file (replaces FILE when complete)\n"
		   "      --append=FILE         add record batches to FILE (same schema)\n\n"
		   "Parallel export (one snapshot for all workers):\n"
		   "  -n, --num-workers=N       N connections; with -t the table is split into\n"
		   "                            N ctid block ranges; in SQL use $(WORKER_ID),\n"
		   "                            $(N_WORKERS) and $(CTID_RANGE)\n"
		   "      --ctid-table=NAME     the table $(CTID_RANGE) splits (with -c)\n"
		   "  -k, --parallel-keys=K1,K2,...  one worker per key, replacing $(PARALLEL_KEY)\n\n"
		   "Format:\n"
		   "  -s, --segment-size=SIZE   record batch size (default 256m; k, m, g suffixes)\n"
		   "  -S, --stat[=COL1,COL2]    min/max statistics per record batch (all columns\n"
		   "                            that allow them, or the ones listed)\n"
		   "      --numeric=MODE        unconstrained numeric as decimal (default), float8\n"
		   "                            or text\n"
		   "      --numeric-scale=N     scale of unconstrained numeric as decimal128(38, N)\n"
		   "                            (default %d)\n\n"
		   "Other:\n"
		   "      --set=NAME:VALUE      set a configuration parameter before the query\n"
		   "      --progress            show rows, bytes, rate (and percent and ETA)\n"
		   "      --dump=FILE           print the layout of an Arrow file\n"
		   "      --help                show this help, then exit\n"
		   "      --version             show the version, then exit\n",
		   progname, progname, progname, DEFAULT_NUMERIC_SCALE);
}

/* Splits a comma-separated list into a new array of new strings; *n gets the count */
static char **
split_list(const char *s, int *n)
{
	char	   *copy = xstrdup(s);
	char	  **items = xcalloc(strlen(s) + 2, sizeof(char *));
	char	   *save = NULL;

	*n = 0;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		items[(*n)++] = xstrdup(tok);
	free(copy);
	return items;
}

/* Parses SIZE with an optional k/m/g suffix (powers of 1024); -1 if bad */
static int64_t
parse_size(const char *s)
{
	char	   *end;
	double		v = strtod(s, &end);
	int64_t		mult = 1;

	if (end == s || v <= 0)
		return -1;
	switch (*end)
	{
		case 'k':
		case 'K':
			mult = (int64_t) 1 << 10;
			end++;
			break;
		case 'm':
		case 'M':
			mult = (int64_t) 1 << 20;
			end++;
			break;
		case 'g':
		case 'G':
			mult = (int64_t) 1 << 30;
			end++;
			break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end != '\0' || v * mult > (double) ((int64_t) 1 << 40))
		return -1;
	return (int64_t) (v * mult) > 0 ? (int64_t) (v * mult) : 1;
}

/* Parses an integer option in [min, max] or exits */
static int
parse_int(const char *s, const char *what, int min, int max)
{
	char	   *end;
	long		v = strtol(s, &end, 10);

	if (end == s || *end != '\0' || v < min || v > max)
		fatal("invalid %s \"%s\": must be an integer from %d to %d", what, s, min, max);
	return (int) v;
}

enum
{
	OPT_APPEND = 256, OPT_SET, OPT_PROGRESS, OPT_DUMP, OPT_HELP, OPT_VERSION,
	OPT_NUMERIC, OPT_NUMERIC_SCALE, OPT_CTID_TABLE
};

/* Parses argv into opts; exits on errors, --help and --version */
static void
parse_options(int argc, char **argv, Options *opts)
{
	static const struct option long_options[] = {
		{"dbname", required_argument, NULL, 'd'},
		{"host", required_argument, NULL, 'h'},
		{"port", required_argument, NULL, 'p'},
		{"user", required_argument, NULL, 'u'},
		{"no-password", no_argument, NULL, 'w'},
		{"password", no_argument, NULL, 'W'},
		{"command", required_argument, NULL, 'c'},
		{"table", required_argument, NULL, 't'},
		{"output", required_argument, NULL, 'o'},
		{"append", required_argument, NULL, OPT_APPEND},
		{"num-workers", required_argument, NULL, 'n'},
		{"parallel-keys", required_argument, NULL, 'k'},
		{"ctid-table", required_argument, NULL, OPT_CTID_TABLE},
		{"segment-size", required_argument, NULL, 's'},
		{"stat", optional_argument, NULL, 'S'},
		{"set", required_argument, NULL, OPT_SET},
		{"progress", no_argument, NULL, OPT_PROGRESS},
		{"dump", required_argument, NULL, OPT_DUMP},
		{"numeric", required_argument, NULL, OPT_NUMERIC},
		{"numeric-scale", required_argument, NULL, OPT_NUMERIC_SCALE},
		{"help", no_argument, NULL, OPT_HELP},
		{"version", no_argument, NULL, OPT_VERSION},
		{NULL, 0, NULL, 0}
	};
	int			c;
	bool		n_given = false;

	memset(opts, 0, sizeof(*opts));
	opts->n_workers = 1;
	opts->segment_size = DEFAULT_SEGMENT_SIZE;
	opts->types.numeric_mode = NUMERIC_DECIMAL;
	opts->types.numeric_scale = DEFAULT_NUMERIC_SCALE;
	opts->sets = xcalloc(argc + 1, sizeof(char *));

	while ((c = getopt_long(argc, argv, "d:h:p:u:wWc:t:o:n:k:s:S::",
							long_options, NULL)) != -1)
	{
		switch (c)
		{
			case 'd':
				opts->dbname = optarg;
				break;
			case 'h':
				opts->host = optarg;
				break;
			case 'p':
				opts->port = optarg;
				break;
			case 'u':
				opts->user = optarg;
				break;
			case 'w':
				opts->password_mode = -1;
				break;
			case 'W':
				opts->password_mode = 1;
				break;
			case 'c':
				opts->command = optarg;
				break;
			case 't':
				opts->table = optarg;
				break;
			case 'o':
				opts->output = optarg;
				break;
			case OPT_APPEND:
				opts->append = optarg;
				break;
			case 'n':
				opts->n_workers = parse_int(optarg, "number of workers", 1, MAX_WORKERS - 1);
				n_given = true;
				break;
			case 'k':
				opts->keys = split_list(optarg, &opts->n_keys);
				if (opts->n_keys == 0 || opts->n_keys >= MAX_WORKERS)
					fatal("-k/--parallel-keys needs 1 to %d keys", MAX_WORKERS - 1);
				break;
			case OPT_CTID_TABLE:
				opts->ctid_table = optarg;
				break;
			case 's':
				if ((opts->segment_size = parse_size(optarg)) < 0)
					fatal("invalid segment size \"%s\" (examples: 64m, 1g, 500k)", optarg);
				break;
			case 'S':
				if (optarg == NULL)
					opts->stat_all = true;
				else
					opts->stat_cols = split_list(optarg, &opts->n_stat_cols);
				break;
			case OPT_SET:
				if (strchr(optarg, ':') == NULL || optarg[0] == ':')
					fatal("invalid --set \"%s\": expected NAME:VALUE", optarg);
				opts->sets[opts->n_sets++] = optarg;
				break;
			case OPT_PROGRESS:
				opts->progress = true;
				break;
			case OPT_DUMP:
				opts->dump = optarg;
				break;
			case OPT_NUMERIC:
				if (strcmp(optarg, "decimal") == 0)
					opts->types.numeric_mode = NUMERIC_DECIMAL;
				else if (strcmp(optarg, "float8") == 0)
					opts->types.numeric_mode = NUMERIC_FLOAT8;
				else if (strcmp(optarg, "text") == 0)
					opts->types.numeric_mode = NUMERIC_TEXT;
				else
					fatal("invalid --numeric \"%s\": expected decimal, float8 or text", optarg);
				break;
			case OPT_NUMERIC_SCALE:
				opts->types.numeric_scale = parse_int(optarg, "numeric scale", 0, 38);
				break;
			case OPT_HELP:
				usage();
				exit(0);
			case OPT_VERSION:
				printf("pg2arrow (pg_warp) %s\n", PG2ARROW_VERSION);
				exit(0);
			default:
				fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
				exit(1);
		}
	}
	if (optind < argc)
		fatal("too many command-line arguments (first is \"%s\")", argv[optind]);
	if (opts->dump != NULL)
	{
		if (opts->command || opts->table || opts->output || opts->append)
			fatal("--dump cannot be combined with an export");
		return;
	}
	if (!opts->command == !opts->table)
		fatal("give exactly one of -c/--command and -t/--table");
	if (!opts->output == !opts->append)
		fatal("give exactly one of -o/--output and --append");
	if (n_given && opts->keys)
		fatal("-n/--num-workers and -k/--parallel-keys cannot be combined");
	if (opts->keys)
	{
		if (!opts->command || !strstr(opts->command, "$(PARALLEL_KEY)"))
			fatal("-k/--parallel-keys needs a query (-c) that uses $(PARALLEL_KEY)");
		opts->n_workers = opts->n_keys;
	}
	if (opts->ctid_table && !opts->command)
		fatal("--ctid-table is for queries (-c) that use $(CTID_RANGE)");
	if (opts->command && strstr(opts->command, "$(CTID_RANGE)") && !opts->ctid_table)
		fatal("$(CTID_RANGE) needs --ctid-table=NAME, the table whose blocks are split");
	if (opts->command && opts->n_workers > 1 && !opts->keys &&
		!strstr(opts->command, "$(WORKER_ID)") && !strstr(opts->command, "$(CTID_RANGE)"))
		fatal("with -n/--num-workers, the query must use $(WORKER_ID) or $(CTID_RANGE) so that each worker reads other rows");
}

/* Reads a password from the terminal without echo */
static char *
prompt_password(void)
{
	FILE	   *tty = fopen("/dev/tty", "r+");
	struct termios old,
				noecho;
	char		buf[1024];
	size_t		n;

	if (tty == NULL)
		fatal("cannot prompt for a password: no terminal");
	fputs("Password: ", tty);
	fflush(tty);
	tcgetattr(fileno(tty), &old);
	noecho = old;
	noecho.c_lflag &= ~ECHO;
	tcsetattr(fileno(tty), TCSAFLUSH, &noecho);
	if (fgets(buf, sizeof(buf), tty) == NULL)
		buf[0] = '\0';
	tcsetattr(fileno(tty), TCSAFLUSH, &old);
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
static PGconn *
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

/* Runs a one-value query; returns the value (new string) or NULL */
static char *
query_value(PGconn *conn, const char *sql, const char *param, char *errbuf,
			size_t errlen)
{
	PGresult   *res = PQexecParams(conn, sql, param ? 1 : 0, NULL, &param,
								   NULL, NULL, 0);
	char	   *v = NULL;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 &&
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
static bool
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

		v = query_value(conn,
						"SELECT pg_catalog.pg_relation_size(c.oid) / pg_catalog.current_setting('block_size')::int8"
						" || ' ' || c.reltuples FROM pg_catalog.pg_class c WHERE c.oid = $1::pg_catalog.regclass",
						rel, errbuf, errlen);
		if (v == NULL)
			return false;
		sscanf(v, "%" SCNd64 " %lf", &nblocks, &ex->total_rows);
		free(v);
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
static char *
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

/* Records the first failure and makes every worker stop */
static void
set_failure(Export *ex, const char *msg)
{
	pthread_mutex_lock(&ex->error_lock);
	if (ex->error[0] == '\0')
		snprintf(ex->error, sizeof(ex->error), "%s", msg);
	pthread_mutex_unlock(&ex->error_lock);
	if (!atomic_exchange(&ex->stop, true))
	{
		char		errbuf[256];

		for (int i = 0; i < ex->n_workers; i++)
			if (cancels[i] != NULL)
				PQcancel(cancels[i], errbuf, sizeof(errbuf));
	}
}

/* Frees custom metadata built with the default allocator */
static void
free_metadata(ArrowMetadata *md)
{
	for (int i = 0; i < md->count; i++)
	{
		free(md->items[i].key);
		free(md->items[i].value);
	}
	free(md->items);
	memset(md, 0, sizeof(*md));
}

/*
 * Writes the rows in bs as one record batch (serialized in this thread,
 * written at a reserved range of the file) and resets bs.
 */
static bool
flush_batch(Export *ex, BatchState *bs, char *errbuf, size_t errlen)
{
	ArrowMetadata md = {0};
	ArrowSerializedBatch sb;
	ArrowError	err;

	if (!batch_stats_metadata(bs, ex->columns, &ex->schema, &md, errbuf, errlen))
	{
		free_metadata(&md);
		return false;
	}
	if (arrow_batch_serialize(&ex->schema, bs->builders, &md, NULL, &sb,
							  &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot build a record batch: %s", err.message);
		free_metadata(&md);
		return false;
	}
	free_metadata(&md);
	if (arrow_writer_put_serialized(ex->writer, &sb, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot write a record batch: %s%s%s", err.message,
				 err.sys_errno ? ": " : "", err.sys_errno ? strerror(err.sys_errno) : "");
		arrow_serialized_batch_free(&sb);
		return false;
	}
	arrow_serialized_batch_free(&sb);
	atomic_fetch_add(&ex->batches, 1);
	batch_reset(bs);
	return true;
}

/*
 * Hands a worker's last partial batch to the shared final batch.  The
 * smaller of the two is decoded again (from its kept raw tuples) into the
 * larger one, which becomes the final batch: the first worker to finish
 * hands its batch over without any work.  The final batch is written
 * whenever it reaches the segment size, the rest at the end of the export.
 */
static bool
merge_leftovers(Worker *w, char *errbuf, size_t errlen)
{
	Export	   *ex = w->ex;
	BatchState *from = &w->batch;
	size_t		pos = 0;
	bool		ok = true;

	pthread_mutex_lock(&ex->final_lock);
	if (from->raw_len > ex->final.raw_len)
	{
		BatchState	tmp = ex->final;

		ex->final = *from;
		*from = tmp;
	}
	while (ok && pos < from->raw_len)
	{
		size_t		len;

		if (copy_tuple_length(from->raw + pos, from->raw_len - pos, ex->n_columns,
							  &len, errbuf, errlen) != 1)
		{
			snprintf(errbuf, errlen, "kept rows of worker %d are damaged", w->id);
			ok = false;
			break;
		}
		ok = decode_tuple(&ex->final, ex->columns, from->raw + pos, len, 0,
						  errbuf, errlen);
		pos += len;
		if (ok && batch_body_size(&ex->final) >= ex->opts->segment_size)
			ok = flush_batch(ex, &ex->final, errbuf, errlen);
	}
	if (ok && batch_body_size(&ex->final) >= ex->opts->segment_size)
		ok = flush_batch(ex, &ex->final, errbuf, errlen);
	pthread_mutex_unlock(&ex->final_lock);
	batch_reset(from);
	return ok;
}

/* Appends bytes to the worker's carry buffer */
static bool
carry_append(Worker *w, const char *data, size_t len, char *errbuf, size_t errlen)
{
	if (w->carry_cap - w->carry_len < len)
	{
		size_t		cap = w->carry_cap ? w->carry_cap : 8192;
		char	   *p;

		while (cap - w->carry_len < len)
			cap *= 2;
		if ((p = realloc(w->carry, cap)) == NULL)
		{
			snprintf(errbuf, errlen, "out of memory");
			return false;
		}
		w->carry = p;
		w->carry_cap = cap;
	}
	memcpy(w->carry + w->carry_len, data, len);
	w->carry_len += len;
	return true;
}

/*
 * Consumes one CopyData message: the header first, then complete tuples.
 * A tuple split across messages waits in the carry buffer (the server sends
 * one tuple per message, so the fast path decodes straight from libpq's
 * buffer).
 */
static bool
consume(Worker *w, const char *data, size_t len, char *errbuf, size_t errlen)
{
	static const char signature[11] = "PGCOPY\n\377\r\n\0";
	Export	   *ex = w->ex;
	const char *p = data;
	size_t		avail = len,
				used = 0;

	if (w->carry_len > 0 || !w->header_done)
	{
		if (!carry_append(w, data, len, errbuf, errlen))
			return false;
		p = w->carry;
		avail = w->carry_len;
	}
	if (!w->header_done)
	{
		uint32_t	flags,
					extlen;

		if (avail < 19)
			return true;
		if (memcmp(p, signature, 11) != 0)
		{
			snprintf(errbuf, errlen, "the server did not send a binary COPY header");
			return false;
		}
		memcpy(&flags, p + 11, 4);
		memcpy(&extlen, p + 15, 4);
		flags = __builtin_bswap32(flags);
		extlen = __builtin_bswap32(extlen);
		if ((flags & 0xffff0000u) != 0 || extlen > (1u << 20))
		{
			snprintf(errbuf, errlen, "unsupported binary COPY header (flags 0x%x)", flags);
			return false;
		}
		if (avail - 19 < extlen)
			return true;
		used = 19 + extlen;
		w->header_done = true;
	}
	while (used < avail)
	{
		size_t		tlen;
		int			rc;

		if (w->trailer_seen)
		{
			snprintf(errbuf, errlen, "binary COPY data continues after its trailer");
			return false;
		}
		rc = copy_tuple_length(p + used, avail - used, ex->n_columns, &tlen,
							   errbuf, errlen);
		if (rc < 0)
			return false;
		if (rc == 0)
			break;
		if (rc == 2)
		{
			w->trailer_seen = true;
			used += tlen;
			continue;
		}
		w->rows++;
		if (!decode_tuple(&w->batch, ex->columns, p + used, tlen,
						  w->rows, errbuf, errlen))
			return false;
		used += tlen;
		if (batch_body_size(&w->batch) >= ex->opts->segment_size &&
			!flush_batch(ex, &w->batch, errbuf, errlen))
			return false;
	}
	/* keep the incomplete rest */
	if (p == w->carry)
	{
		memmove(w->carry, w->carry + used, avail - used);
		w->carry_len = avail - used;
	}
	else if (used < avail && !carry_append(w, p + used, avail - used, errbuf, errlen))
		return false;
	return true;
}

/* The body of a worker: run the COPY, decode, write.  False on failure. */
static bool
worker_run(Worker *w, char *errbuf, size_t errlen)
{
	Export	   *ex = w->ex;
	PGresult   *res = PQexec(w->conn, w->copy);
	int64_t		counted = 0,
				bytes = 0;
	char	   *buf;
	int			n;

	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		PQclear(res);
		return false;
	}
	PQclear(res);
	while ((n = PQgetCopyData(w->conn, &buf, 0)) > 0)
	{
		bool		ok;

		if (atomic_load(&ex->stop) || interrupted)
		{
			PQfreemem(buf);
			snprintf(errbuf, errlen, "stopped");
			return false;
		}
		ok = consume(w, buf, n, errbuf, errlen);
		PQfreemem(buf);
		if (!ok)
			return false;
		/* shared counters for --progress, updated now and then */
		bytes += n;
		if (w->rows - counted >= 4096)
		{
			atomic_fetch_add(&ex->bytes, bytes);
			atomic_fetch_add(&ex->rows, w->rows - counted);
			counted = w->rows;
			bytes = 0;
		}
	}
	atomic_fetch_add(&ex->bytes, bytes);
	atomic_fetch_add(&ex->rows, w->rows - counted);
	if (n == -2)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		return false;
	}
	res = PQgetResult(w->conn);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		PQclear(res);
		return false;
	}
	PQclear(res);
	if (w->carry_len > 0 || !w->trailer_seen)
	{
		snprintf(errbuf, errlen, "binary COPY data ended in the middle of a row");
		return false;
	}
	if (w->batch.n_rows == 0)
		return true;
	if (ex->n_workers == 1)
		return flush_batch(ex, &w->batch, errbuf, errlen);
	return merge_leftovers(w, errbuf, errlen);
}

static void *
worker_main(void *arg)
{
	Worker	   *w = arg;
	char		errbuf[ERRLEN];

	if (!worker_run(w, errbuf, sizeof(errbuf)))
	{
		char		msg[ERRLEN + 32];
		size_t		len = strlen(errbuf);

		while (len > 0 && errbuf[len - 1] == '\n')
			errbuf[--len] = '\0';
		if (w->ex->n_workers > 1)
			snprintf(msg, sizeof(msg), "worker %d: %s", w->id, errbuf);
		else
			snprintf(msg, sizeof(msg), "%s", errbuf);
		set_failure(w->ex, msg);
	}
	return NULL;
}

static double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Prints one --progress report (in place on a terminal) */
static void
print_progress(Export *ex, double start, bool last)
{
	static bool tty = false,
				tty_checked = false;
	double		elapsed = now_seconds() - start;
	int64_t		rows = atomic_load(&ex->rows);
	double		mb = atomic_load(&ex->bytes) / 1048576.0;
	double		rate = elapsed > 0 ? rows / elapsed : 0;
	char		extra[100] = "";

	if (!tty_checked)
	{
		tty = isatty(fileno(stderr));
		tty_checked = true;
	}
	if (ex->total_rows > 0)
	{
		double		pct = 100.0 * rows / ex->total_rows;

		if (pct > 100)
			pct = 100;
		if (last)
			snprintf(extra, sizeof(extra), ", 100%%");
		else if (rate > 0 && rows < ex->total_rows)
		{
			int			eta = (int) ((ex->total_rows - rows) / rate);

			snprintf(extra, sizeof(extra), ", %.0f%%, ETA %d:%02d:%02d",
					 pct, eta / 3600, eta / 60 % 60, eta % 60);
		}
		else
			snprintf(extra, sizeof(extra), ", %.0f%%", pct);
	}
	if (last)
	{
		int64_t		nb = atomic_load(&ex->batches);

		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
				 ", %" PRId64 " record batch%s", nb, nb == 1 ? "" : "es");
	}
	fprintf(stderr, "%s%s: %" PRId64 " rows, %.1f MB, %.0f rows/s, %.1f MB/s%s%s",
			tty ? "\r" : "", progname, rows, mb, rate,
			elapsed > 0 ? mb / elapsed : 0, extra,
			!tty ? "\n" : last ? "\033[K\n" : "\033[K");
	fflush(stderr);
}

/* Opens worker i's connection and imports the snapshot */
static bool
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

/* Marks the columns that keep statistics (-S); exits on unknown names */
static void
select_stats(Export *ex)
{
	const Options *opts = ex->opts;

	for (int j = 0; j < opts->n_stat_cols; j++)
	{
		int			i;

		for (i = 0; i < ex->n_columns; i++)
			if (strcmp(ex->columns[i].name, opts->stat_cols[j]) == 0)
				break;
		if (i == ex->n_columns)
			fatal("-S/--stat: the result has no column \"%s\"", opts->stat_cols[j]);
		if (!pgtypes_stats_supported(&ex->columns[i]))
			fatal("-S/--stat: column \"%s\" has type %s, which has no statistics\n"
				  "hint: statistics are kept for integers, floats, numeric as decimal, date, time and timestamps",
				  ex->columns[i].name, ex->columns[i].pg_type);
		ex->columns[i].stats = true;
	}
	if (opts->stat_all)
		for (int i = 0; i < ex->n_columns; i++)
			ex->columns[i].stats = pgtypes_stats_supported(&ex->columns[i]);
}

/*
 * Writes the dictionary batches of the enum columns (all labels, in sort
 * order) into a new file, before any record batch.
 */
static bool
write_dictionaries(Export *ex, const PgColumn *cols, int n, char *errbuf,
				   size_t errlen)
{
	for (int i = 0; i < n; i++)
	{
		const PgColumn *c = &cols[i];

		if (c->kind == PK_ENUM)
		{
			ArrowField	f = {0};
			ArrowBuilder *b = NULL;
			ArrowError	err;
			int			rc;

			f.name = c->name;
			f.nullable = false;
			f.type.id = ARROW_TYPE_UTF8;
			rc = arrow_builder_create(&f, NULL, &b, &err);
			for (int j = 0; rc == ARROW_OK && j < c->n_labels; j++)
				rc = arrow_append_bytes(b, c->labels[j], strlen(c->labels[j]), &err);
			if (rc == ARROW_OK)
				rc = arrow_writer_write_dictionary(ex->writer, c->dict_id, b, false, &err);
			if (b != NULL)
				arrow_builder_free(b);
			if (rc != ARROW_OK)
			{
				snprintf(errbuf, errlen, "cannot write the dictionary of column \"%s\": %s",
						 c->path, err.message);
				return false;
			}
		}
		if (!write_dictionaries(ex, c->children, c->n_children, errbuf, errlen))
			return false;
	}
	return true;
}

/* True when col or a column nested in it is an enum */
static bool
has_enum(const PgColumn *col)
{
	if (col->kind == PK_ENUM)
		return true;
	for (int i = 0; i < col->n_children; i++)
		if (has_enum(&col->children[i]))
			return true;
	return false;
}

/*
 * Compares the labels of the enum columns in col (recursively) with the
 * dictionaries of array a, loaded from the file appended to.
 */
static bool
same_labels(const PgColumn *col, const ArrowArray *a, char *errbuf, size_t errlen)
{
	if (col->kind == PK_ENUM)
	{
		const ArrowArray *d = a->dictionary;
		bool		same = d != NULL && d->length == col->n_labels &&
			d->offsets != NULL;

		for (int i = 0; same && i < col->n_labels; i++)
		{
			const int32_t *off = d->offsets;
			size_t		len = strlen(col->labels[i]);

			same = (size_t) (off[i + 1] - off[i]) == len &&
				memcmp(d->data + off[i], col->labels[i], len) == 0;
		}
		if (!same)
			snprintf(errbuf, errlen,
					 "column \"%s\": the labels of enum type %s differ from the dictionary in the file\n"
					 "hint: write a new file with -o",
					 col->path, col->pg_type);
		return same;
	}
	if (a->n_children != col->n_children)
	{
		snprintf(errbuf, errlen, "column \"%s\" has another shape in the file", col->path);
		return false;
	}
	for (int i = 0; i < col->n_children; i++)
		if (!same_labels(&col->children[i], &a->children[i], errbuf, errlen))
			return false;
	return true;
}

/*
 * --append writes no dictionary batches: the rows appended index into the
 * file's dictionaries, so the enum labels must be the ones in the file.
 * Reads them from the file's first record batch (a file without one cannot
 * be checked and is refused).
 */
static bool
check_append_dictionaries(Export *ex, const char *path, char *errbuf, size_t errlen)
{
	ArrowFile  *file;
	ArrowBatch *batch = NULL;
	ArrowError	err;
	bool	   *want;
	bool		any = false,
				ok = true;

	want = xcalloc(ex->n_columns, sizeof(bool));
	for (int i = 0; i < ex->n_columns; i++)
		any |= want[i] = has_enum(&ex->columns[i]);
	if (!any)
	{
		free(want);
		return true;
	}
	if (arrow_file_open(path, NULL, &file, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot read \"%s\": %s", path, err.message);
		free(want);
		return false;
	}
	if (file->n_batches == 0)
	{
		snprintf(errbuf, errlen,
				 "cannot check the enum labels of \"%s\": it has no record batch\n"
				 "hint: write a new file with -o", path);
		ok = false;
	}
	else if (arrow_batch_load(file, 0, want, &batch, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot read \"%s\": %s", path, err.message);
		ok = false;
	}
	for (int i = 0; ok && i < ex->n_columns; i++)
		if (want[i])
			ok = same_labels(&ex->columns[i], &batch->columns[i], errbuf, errlen);
	if (batch)
		arrow_batch_free(batch);
	arrow_file_close(file);
	free(want);
	return ok;
}

/*
 * Frees the connections and cancel objects (the transactions end with them)
 * and everything else the export allocated.
 */
static void
free_export(Export *ex)
{
	n_cancels = 0;
	for (int i = 0; i < ex->n_workers; i++)
	{
		if (cancels[i] != NULL)
			PQfreeCancel(cancels[i]);
		cancels[i] = NULL;
		if (ex->workers[i].conn != NULL)
			PQfinish(ex->workers[i].conn);
		free(ex->workers[i].sql);
		free(ex->workers[i].copy);
		free(ex->workers[i].carry);
		batch_free(&ex->workers[i].batch);
	}
	batch_free(&ex->final);
	free(ex->workers);
	pgtypes_free(ex->columns, ex->n_columns);
	arrow_schema_free(NULL, &ex->schema);
	pthread_mutex_destroy(&ex->final_lock);
	pthread_mutex_destroy(&ex->error_lock);
}

/* Frees what parse_options allocated */
static void
free_options(Options *opts)
{
	for (int i = 0; i < opts->n_keys; i++)
		free(opts->keys[i]);
	free(opts->keys);
	for (int i = 0; i < opts->n_stat_cols; i++)
		free(opts->stat_cols[i]);
	free(opts->stat_cols);
	free(opts->sets);
}

int
main(int argc, char **argv)
{
	Options		opts;
	Export		ex;
	char		errbuf[ERRLEN];
	char	   *password = NULL;
	char	   *snapshot = NULL;
	char	   *tmp_path = NULL;
	PGresult   *desc;
	PGconn	   *conn0;
	ArrowError	err;
	struct sigaction sa;
	sigset_t	block;
	double		start;
	int			rc;

	parse_options(argc, argv, &opts);
	if (opts.dump)
	{
		rc = dump_arrow_file(opts.dump);
		free_options(&opts);
		return rc;
	}

	memset(&ex, 0, sizeof(ex));
	ex.opts = &opts;
	ex.n_workers = opts.n_workers;
	ex.workers = xcalloc(ex.n_workers, sizeof(Worker));
	pthread_mutex_init(&ex.final_lock, NULL);
	pthread_mutex_init(&ex.error_lock, NULL);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (opts.password_mode == 1)
		password = prompt_password();

	/* the first connection: the snapshot, the query's shape */
	if ((conn0 = connect_db(&opts, &password, errbuf, sizeof(errbuf))) == NULL)
		goto fail;
	ex.workers[0].conn = conn0;
	cancels[0] = PQgetCancel(conn0);
	n_cancels = 1;
	if (!exec_command(conn0, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
					  errbuf, sizeof(errbuf)))
		goto fail;
	if (ex.n_workers > 1 &&
		(snapshot = query_value(conn0, "SELECT pg_catalog.pg_export_snapshot()",
								NULL, errbuf, sizeof(errbuf))) == NULL)
		goto fail;
	if (!apply_sets(conn0, &opts, errbuf, sizeof(errbuf)) ||
		!build_worker_sql(&ex, conn0, errbuf, sizeof(errbuf)))
		goto fail;

	desc = PQprepare(conn0, "", ex.workers[0].sql, 0, NULL);
	if (PQresultStatus(desc) == PGRES_COMMAND_OK)
	{
		PQclear(desc);
		desc = PQdescribePrepared(conn0, "");
	}
	if (PQresultStatus(desc) != PGRES_COMMAND_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "query failed: %s", PQerrorMessage(conn0));
		PQclear(desc);
		goto fail;
	}
	ex.n_columns = PQnfields(desc);
	if (ex.n_columns == 0)
	{
		snprintf(errbuf, sizeof(errbuf), "the query returns no columns");
		PQclear(desc);
		goto fail;
	}
	rc = pgtypes_resolve(conn0, desc, &opts.types, &ex.columns, errbuf, sizeof(errbuf));
	PQclear(desc);
	if (!rc)
		goto fail;
	select_stats(&ex);
	if (!pgtypes_build_schema(ex.columns, ex.n_columns, &ex.schema, errbuf, sizeof(errbuf)))
		goto fail;
	for (int i = 0; i < ex.n_workers; i++)
	{
		ex.workers[i].ex = &ex;
		ex.workers[i].id = i;
		ex.workers[i].copy = build_copy(&ex, ex.workers[i].sql);
	}

	/* the other workers join the snapshot */
	for (int i = 1; i < ex.n_workers; i++)
		if (!open_worker(&ex, i, snapshot, &password, errbuf, sizeof(errbuf)))
			goto fail;
	if (interrupted)
		goto interrupted;

	/* the output file */
	if (opts.output)
	{
		tmp_path = xasprintf("%s.pg2arrow-%d.tmp", opts.output, (int) getpid());
		if (arrow_writer_create(tmp_path, &ex.schema, NULL, &ex.writer, &err) != ARROW_OK)
		{
			snprintf(errbuf, sizeof(errbuf), "cannot create \"%s\": %s", tmp_path, err.message);
			goto fail;
		}
		if (!write_dictionaries(&ex, ex.columns, ex.n_columns, errbuf, sizeof(errbuf)))
			goto fail;
	}
	else if (arrow_writer_open_append(opts.append, &ex.schema, NULL, &ex.writer,
									  &err) != ARROW_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "cannot append to \"%s\": %s", opts.append,
				 err.message);
		goto fail;
	}
	else if (!check_append_dictionaries(&ex, opts.append, errbuf, sizeof(errbuf)))
		goto fail;

	for (int i = 0; i < ex.n_workers; i++)
		if (!batch_init(&ex.workers[i].batch, &ex.schema, ex.columns,
						ex.n_workers > 1, errbuf, sizeof(errbuf)))
			goto fail;
	if (!batch_init(&ex.final, &ex.schema, ex.columns, ex.n_workers > 1,
					errbuf, sizeof(errbuf)))
		goto fail;

	/* run */
	start = now_seconds();
	for (int i = 0; i < ex.n_workers; i++)
	{
		if (pthread_create(&ex.workers[i].thread, NULL, worker_main, &ex.workers[i]) != 0)
		{
			set_failure(&ex, "cannot start a worker thread");
			break;
		}
		ex.workers[i].started = true;
	}
	if (opts.progress)
	{
		double		next = start + 1;

		for (;;)
		{
			bool		running = false;

			for (int i = 0; i < ex.n_workers; i++)
				if (ex.workers[i].started && pthread_tryjoin_np(ex.workers[i].thread, NULL) == 0)
					ex.workers[i].started = false;
				else if (ex.workers[i].started)
					running = true;
			if (!running)
				break;
			if (now_seconds() >= next)
			{
				print_progress(&ex, start, false);
				next += 1;
			}
			usleep(50000);
		}
	}
	for (int i = 0; i < ex.n_workers; i++)
		if (ex.workers[i].started)
			pthread_join(ex.workers[i].thread, NULL);
	if (interrupted)
		goto interrupted;
	if (ex.error[0] != '\0')
	{
		snprintf(errbuf, sizeof(errbuf), "%s", ex.error);
		goto fail;
	}
	if (ex.final.n_rows > 0 && !flush_batch(&ex, &ex.final, errbuf, sizeof(errbuf)))
		goto fail;

	/* complete: footer, then the file appears under its name */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, NULL);
	if (interrupted)
		goto interrupted;
	rc = arrow_writer_close(ex.writer, &err);
	ex.writer = NULL;
	if (rc != ARROW_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "cannot finish \"%s\": %s%s%s",
				 tmp_path ? tmp_path : opts.append, err.message,
				 err.sys_errno ? ": " : "", err.sys_errno ? strerror(err.sys_errno) : "");
		if (tmp_path)
			unlink(tmp_path);
		goto fail;
	}
	if (tmp_path && rename(tmp_path, opts.output) != 0)
	{
		snprintf(errbuf, sizeof(errbuf), "cannot rename \"%s\" to \"%s\": %s",
				 tmp_path, opts.output, strerror(errno));
		unlink(tmp_path);
		goto fail;
	}
	if (opts.progress)
		print_progress(&ex, start, true);
	free_export(&ex);
	free_options(&opts);
	free(tmp_path);
	free(snapshot);
	free(password);
	return 0;

interrupted:
fail:
	if (interrupted)
		snprintf(errbuf, sizeof(errbuf), "interrupted");
	if (ex.writer)
		arrow_writer_abort(ex.writer);
	free_export(&ex);
	{
		size_t		len = strlen(errbuf);

		while (len > 0 && errbuf[len - 1] == '\n')
			errbuf[--len] = '\0';
	}
	report("%s", errbuf);
	if (opts.append && access(opts.append, F_OK) == 0)
		report("\"%s\" is unchanged", opts.append);
	free_options(&opts);
	free(tmp_path);
	free(snapshot);
	free(password);
	return 1;
}
