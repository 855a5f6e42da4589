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
 * --segment-size bytes and writes them itself into the one output file with
 * arrow_writer_write_batch (which reserves a file range atomically and
 * writes straight from the column builders).  The rows left at the end of
 * each worker are merged into one shared final batch (see merge_leftovers),
 * so the file has no tiny batches.
 *
 * The output is written under a temporary name in the target directory and
 * renamed when complete (then the directory is fsynced); any failure (query
 * error, a worker failing, disk full, a termination signal) removes it.
 * --append restores the original file on failure (arrow_writer_abort), and
 * its journal lets the next run (or --recover) restore it after a crash.
 * Symbolic links are followed to the file written; targets that are not
 * regular files are refused (target.c).
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
#include <time.h>
#include <unistd.h>

#include "pg2arrow.h"

#define DEFAULT_SEGMENT_SIZE	((int64_t) 256 << 20)
#define DEFAULT_NUMERIC_SCALE	6

/* Set by the signal handler; the cancel objects it uses are set up first */
atomic_int	interrupted = 0;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "signal handlers need lock-free atomic int");
PGcancel   *cancels[MAX_WORKERS];
atomic_int	n_cancels = 0;

static const char *progname = "pg2arrow";

/*
 * The signals that end pg2arrow by default and can be caught: each one
 * interrupts the export, which removes its temporary file (or puts an
 * appended file back).  SIGPIPE is ignored instead: libpq and the stderr
 * messages see EPIPE, and an export never needs to stop for it.
 */
static const int term_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXFSZ,
	SIGXCPU, SIGVTALRM, SIGPROF,
#ifdef SIGPWR
	SIGPWR,
#endif
#ifdef SIGPOLL
	SIGPOLL,
#endif
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
};
#define N_TERM_SIGNALS ((int) (sizeof(term_signals) / sizeof(term_signals[0])))

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
void
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

/* malloc, calloc, strdup and asprintf that call fatal() on failure */
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

/* A termination signal: remember it and cancel every running query */
static void
handle_signal(int signo)
{
	char		errbuf[256];

	interrupted = signo;
	for (int i = 0; i < n_cancels; i++)
		if (cancels[i] != NULL)
			PQcancel(cancels[i], errbuf, sizeof(errbuf));
}

/*
 * Makes every termination signal interrupt the export (handle_signal) and
 * ignores SIGPIPE; *block gets the set of those signals, blocked while the
 * file is finished.
 */
static void
install_signal_handlers(sigset_t *block)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(block);
	for (int i = 0; i < N_TERM_SIGNALS; i++)
	{
		sigaddset(&sa.sa_mask, term_signals[i]);
		sigaddset(block, term_signals[i]);
	}
	for (int i = 0; i < N_TERM_SIGNALS; i++)
		sigaction(term_signals[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Points opts->output or opts->append at the file really written (symbolic
 * links followed; exits if it is a device, FIFO, socket or directory), then
 * clears what crashed runs left next to it: stale temporary files and the
 * journal of an interrupted append.  Returns that path (new string), or
 * NULL with errbuf set.
 */
static char *
prepare_target(Options *opts, char *errbuf, size_t errlen)
{
	char	   *target = resolve_target(opts->output ? opts->output : opts->append,
										opts->output ? "-o/--output" : "--append");

	if (opts->output)
		opts->output = target;
	else
		opts->append = target;
	remove_stale_temps(target);
	if (!recover_target(target, true, errbuf, errlen))
	{
		free(target);
		opts->output = opts->append = NULL;
		return NULL;
	}
	return target;
}

/* --help */
static void
usage(void)
{
	printf("%s exports the result of a PostgreSQL query or table to an Apache Arrow file.\n\n"
		   "Usage:\n"
		   "  %s [OPTION]... (-c SQL | -t TABLE) (-o FILE | --append=FILE)\n"
		   "  %s --dump=FILE\n"
		   "  %s --recover=FILE\n\n"
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
		   "  -s, --segment-size=SIZE   record batch size (default 256m, at most 1g;\n"
		   "                            k, m, g suffixes)\n"
		   "  -S, --stat[=COL1,COL2]    min/max statistics per record batch: all columns\n"
		   "                            that allow them (-S), or those listed (-SCOL1,COL2)\n"
		   "      --numeric=MODE        unconstrained numeric as decimal (default), float8\n"
		   "                            or text\n"
		   "      --numeric-scale=N     scale of unconstrained numeric as decimal128(38, N)\n"
		   "                            (default %d)\n\n"
		   "Other:\n"
		   "      --set=NAME:VALUE      set a configuration parameter before the query\n"
		   "      --progress            show rows, bytes, rate (and percent and ETA)\n"
		   "      --dump=FILE           print the layout of an Arrow file\n"
		   "      --recover=FILE        undo an --append of FILE that was killed or\n"
		   "                            crashed (any export to FILE also does it)\n"
		   "      --help                show this help, then exit\n"
		   "      --version             show the version, then exit\n",
		   progname, progname, progname, progname, DEFAULT_NUMERIC_SCALE);
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
	/* at most 1 GB: a batch plus one more value stays below Arrow's 2 GB offsets */
	if (*end != '\0' || v * mult > (double) ((int64_t) 1 << 30))
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
	OPT_NUMERIC, OPT_NUMERIC_SCALE, OPT_CTID_TABLE, OPT_RECOVER
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
		{"recover", required_argument, NULL, OPT_RECOVER},
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
					fatal("invalid segment size \"%s\": 1 byte to 1g (examples: 64m, 1g, 500k)", optarg);
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
			case OPT_RECOVER:
				opts->recover = optarg;
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
	if (opts->dump != NULL || opts->recover != NULL)
	{
		if (opts->command || opts->table || opts->output || opts->append ||
			(opts->dump && opts->recover))
			fatal("%s cannot be combined with an export or another action",
				  opts->dump ? "--dump" : "--recover");
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

/* Monotonic clock in seconds */
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

/*
 * The export, step by step: options; the first connection (snapshot, --set,
 * the query's columns); the other workers join the snapshot; the output file
 * (temporary name, or --append); the worker threads; the shared final batch;
 * footer and rename.  Every failure after the file exists goes to 'fail',
 * which removes it (or restores the appended file).
 */
int
main(int argc, char **argv)
{
	Options		opts;
	Export		ex;
	char		errbuf[ERRLEN];
	char	   *password = NULL;
	char	   *snapshot = NULL;
	char	   *tmp_path = NULL;
	char	   *target = NULL;
	PGresult   *desc;
	PGconn	   *conn0;
	ArrowError	err;
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
	if (opts.recover)
	{
		target = resolve_target(opts.recover, "--recover");
		remove_stale_temps(target);
		rc = recover_target(target, false, errbuf, sizeof(errbuf));
		if (!rc)
			report("%s", errbuf);
		free(target);
		free_options(&opts);
		return rc ? 0 : 1;
	}

	memset(&ex, 0, sizeof(ex));
	ex.opts = &opts;
	ex.n_workers = opts.n_workers;
	ex.workers = xcalloc(ex.n_workers, sizeof(Worker));
	pthread_mutex_init(&ex.final_lock, NULL);
	pthread_mutex_init(&ex.error_lock, NULL);

	install_signal_handlers(&block);
	target = prepare_target(&opts, errbuf, sizeof(errbuf));
	if (target == NULL)
		goto fail;

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
			snprintf(errbuf, sizeof(errbuf), "%s", err.message);	/* names the file */
			goto fail;
		}
		if (!write_dictionaries(&ex, ex.columns, ex.n_columns, errbuf, sizeof(errbuf)))
			goto fail;
	}
	else if (arrow_writer_open_append(opts.append, &ex.schema, NULL, &ex.writer,
									  &err) != ARROW_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "%s", err.message);	/* names the file */
		goto fail;
	}
	else if (!check_append_dictionaries(&ex, opts.append, errbuf, sizeof(errbuf)))
		goto fail;

	for (int i = 0; i < ex.n_workers; i++)
		if (!batch_init(&ex.workers[i].batch, &ex.schema, ex.columns,
						errbuf, sizeof(errbuf)))
			goto fail;
	if (!batch_init(&ex.final, &ex.schema, ex.columns, errbuf, sizeof(errbuf)))
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
	/*
	 * While the workers run, this thread reports progress and starts the
	 * disk writes of each batch the workers wrote (so that the final fsync
	 * does not have the whole file left to write).
	 */
	{
		double		next = start + 1;
		int64_t		batches_seen = 0;

		for (;;)
		{
			bool		running = false;
			int64_t		batches = atomic_load(&ex.batches);

			for (int i = 0; i < ex.n_workers; i++)
				if (ex.workers[i].started && pthread_tryjoin_np(ex.workers[i].thread, NULL) == 0)
					ex.workers[i].started = false;
				else if (ex.workers[i].started)
					running = true;
			if (!running)
				break;
			if (batches != batches_seen)
			{
				arrow_writer_start_writeback(ex.writer);
				batches_seen = batches;
			}
			if (opts.progress && now_seconds() >= next)
			{
				print_progress(&ex, start, false);
				next += 1;
			}
			usleep(20000);
		}
	}
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
	sigprocmask(SIG_BLOCK, &block, NULL);
	if (interrupted)
		goto interrupted;
	rc = arrow_writer_close(ex.writer, &err);
	ex.writer = NULL;
	if (rc != ARROW_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "cannot finish \"%s\": %s",
				 tmp_path ? tmp_path : opts.append, err.message);
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
	if (tmp_path && arrow_writer_sync_dir(opts.output, &err) != ARROW_OK)
	{
		snprintf(errbuf, sizeof(errbuf), "\"%s\" is written, but a crash could still undo its rename: %s",
				 opts.output, err.message);
		goto fail;
	}
	if (opts.progress)
		print_progress(&ex, start, true);
	free_export(&ex);
	free_options(&opts);
	free(tmp_path);
	free(target);
	free(snapshot);
	free(password);
	return 0;

interrupted:
fail:
	if (interrupted)
		snprintf(errbuf, sizeof(errbuf), "interrupted by signal %d (%s)",
				 (int) interrupted, strsignal((int) interrupted));
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
	free(target);
	free(snapshot);
	free(password);
	return 1;
}
