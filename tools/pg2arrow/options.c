/*-------------------------------------------------------------------------
 *
 * options.c
 *		pg2arrow's command line: parsing and checking the options, --help,
 *		--version, and -S/--stat applied to the columns of the result.
 *
 * Errors in the options end the program (status 1) before anything is
 * connected or written.
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

#define DEFAULT_SEGMENT_SIZE	((int64_t) 8 << 20)
#define DEFAULT_NUMERIC_SCALE	6

enum
{
	OPT_APPEND = 256, OPT_SET, OPT_PROGRESS, OPT_DUMP, OPT_HELP, OPT_VERSION,
	OPT_NUMERIC, OPT_NUMERIC_SCALE, OPT_CTID_TABLE, OPT_RECOVER, OPT_DICTIONARY
};

/* --help */
static void
usage(void)
{
	printf("%s exports the result of a PostgreSQL query or table to an Apache Arrow file.\n\n"
		   "Usage:\n"
		   "  %s [OPTION]... (-c SQL | -t TABLE) (-o FILE | --append=FILE)\n"
		   "  %s --dump=FILE\n"
		   "  %s --recover=FILE\n\n",
		   progname, progname, progname, progname);
	printf("%s\n", conn_options_help);
	printf("Source (one of):\n"
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
		   "  -s, --segment-size=SIZE   record batch size (default 8m, at most 1g;\n"
		   "                            k, m, g suffixes)\n"
		   "  -S, --stat[=COL1,COL2]    min/max statistics per record batch: all columns\n"
		   "                            that allow them (-S), or those listed (-SCOL1,COL2)\n"
		   "      --numeric=MODE        unconstrained numeric as decimal (default), float8\n"
		   "                            or text\n"
		   "      --numeric-scale=N     scale of unconstrained numeric as decimal128(38, N)\n"
		   "                            (default %d)\n"
		   "      --dictionary=COL1,COL2  write these text columns dictionary-encoded\n"
		   "                            (int32 indices, one dictionary per column)\n"
		   "      --dictionary=auto     every text column with at most 65536 distinct\n"
		   "                            values in the first 100000 rows\n\n"
		   "Other:\n"
		   "      --set=NAME:VALUE      set a configuration parameter before the query\n"
		   "      --progress            show rows, bytes, rate (and percent and ETA)\n"
		   "      --dump=FILE           print the layout of an Arrow file\n"
		   "      --recover=FILE        undo an --append of FILE that was killed or\n"
		   "                            crashed (any export to FILE also does it)\n"
		   "      --help                show this help, then exit\n"
		   "      --version             show the version, then exit\n",
		   DEFAULT_NUMERIC_SCALE);
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

/* --numeric=MODE, or exits */
static NumericMode
parse_numeric_mode(const char *s)
{
	if (strcmp(s, "decimal") == 0)
		return NUMERIC_DECIMAL;
	if (strcmp(s, "float8") == 0)
		return NUMERIC_FLOAT8;
	if (strcmp(s, "text") == 0)
		return NUMERIC_TEXT;
	fatal("invalid --numeric \"%s\": expected decimal, float8 or text", s);
}

/*
 * Takes one option other than the connection options into opts; exits on
 * bad values, unknown options, --help and --version.  *n_given is set when
 * -n was given.
 */
static void
take_option(Options *opts, int c, char *arg, bool *n_given)
{
	switch (c)
	{
		case 'c':
			opts->command = arg;
			break;
		case 't':
			opts->table = arg;
			break;
		case 'o':
			opts->output = arg;
			break;
		case OPT_APPEND:
			opts->append = arg;
			break;
		case 'n':
			opts->n_workers = parse_int(arg, "number of workers", 1, MAX_WORKERS - 1);
			*n_given = true;
			break;
		case 'k':
			opts->keys = split_list(arg, &opts->n_keys);
			if (opts->n_keys == 0 || opts->n_keys >= MAX_WORKERS)
				fatal("-k/--parallel-keys needs 1 to %d keys", MAX_WORKERS - 1);
			break;
		case OPT_CTID_TABLE:
			opts->ctid_table = arg;
			break;
		case 's':
			if ((opts->segment_size = parse_size(arg)) < 0)
				fatal("invalid segment size \"%s\": 1 byte to 1g (examples: 64m, 1g, 500k)", arg);
			break;
		case 'S':
			if (arg == NULL)
				opts->stat_all = true;
			else
				opts->stat_cols = split_list(arg, &opts->n_stat_cols);
			break;
		case OPT_SET:
			if (strchr(arg, ':') == NULL || arg[0] == ':')
				fatal("invalid --set \"%s\": expected NAME:VALUE", arg);
			opts->sets[opts->n_sets++] = arg;
			break;
		case OPT_PROGRESS:
			opts->progress = true;
			break;
		case OPT_DUMP:
			opts->dump = arg;
			break;
		case OPT_RECOVER:
			opts->recover = arg;
			break;
		case OPT_NUMERIC:
			opts->types.numeric_mode = parse_numeric_mode(arg);
			break;
		case OPT_DICTIONARY:
			if (strcmp(arg, "auto") == 0)
				opts->dict_auto = true;
			else
				opts->dict_cols = split_list(arg, &opts->n_dict_cols);
			break;
		case OPT_NUMERIC_SCALE:
			opts->types.numeric_scale = parse_int(arg, "numeric scale", 0, 38);
			break;
		case OPT_HELP:
			usage();
			exit(0);
		case OPT_VERSION:
			printf("%s (pg_warp) %s\n", progname, PG2ARROW_VERSION);
			exit(0);
		default:
			try_help(1);
	}
}

/* Checks that the options given make one export (or one action); exits if not */
static void
check_options(Options *opts, bool n_given)
{
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

/* Parses argv into opts; exits on errors, --help and --version */
void
parse_options(int argc, char **argv, Options *opts)
{
	static const struct option long_options[] = {
		CONN_LONG_OPTIONS,
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
		{"dictionary", required_argument, NULL, OPT_DICTIONARY},
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

	while ((c = getopt_long(argc, argv, CONN_SHORT_OPTIONS "c:t:o:n:k:s:S::",
							long_options, NULL)) != -1)
		if (!conn_option(&opts->conn, c, optarg))
			take_option(opts, c, optarg, &n_given);
	if (optind < argc)
		fatal("too many command-line arguments (first is \"%s\")", argv[optind]);
	check_options(opts, n_given);
}

/* Frees what parse_options allocated (and the password typed, if any) */
void
free_options(Options *opts)
{
	for (int i = 0; i < opts->n_keys; i++)
		free(opts->keys[i]);
	free(opts->keys);
	for (int i = 0; i < opts->n_stat_cols; i++)
		free(opts->stat_cols[i]);
	free(opts->stat_cols);
	for (int i = 0; i < opts->n_dict_cols; i++)
		free(opts->dict_cols[i]);
	free(opts->dict_cols);
	free(opts->sets);
	conn_options_free(&opts->conn);
}

/* Marks the columns that keep statistics (-S); exits on unknown names */
void
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
