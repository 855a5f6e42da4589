/*-------------------------------------------------------------------------
 *
 * arrow_inspect.c
 *		arrow-inspect: shows what an Arrow IPC file (or stream) holds.
 *
 *	arrow-inspect [--json] [--values] [--batch N] FILE
 *
 * The human form lists the file, its format, metadata version, schema, and
 * every dictionary and record batch with the file extents of its message,
 * body and buffers, so that people and tests can see where things are.
 * --values adds the rows of each record batch as JSON lines.  --json prints
 * exactly the JSON-lines form of doc/arrow-json.md (schema, then per batch
 * one line and one line per row).  --batch N limits both to record batch N.
 * The printing is tools/common/arrow_print.c, which `pg2arrow --dump` uses
 * too.
 *
 * Errors go to stderr as "arrow-inspect: FILE: message", exit status 1;
 * usage errors exit with status 2.
 *
 *-------------------------------------------------------------------------
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arrow_print.h"
#include "util.h"

#define ARROW_INSPECT_VERSION	"0.1.0"

/* --help */
static void
usage(void)
{
	printf("%s shows the schema, batches and buffer extents of an Arrow IPC file or stream.\n\n"
		   "Usage:\n"
		   "  %s [OPTION]... FILE\n\n"
		   "Options:\n"
		   "      --json        print the JSON-lines form (doc/arrow-json.md): schema,\n"
		   "                    then each record batch and its rows\n"
		   "      --values      also print the rows of each record batch as JSON lines\n"
		   "      --batch N     only record batch N (0-based)\n"
		   "      --help        show this help, then exit\n"
		   "      --version     show the version, then exit\n\n"
		   "Exit status: 0 ok, 1 the file could not be read, 2 usage error.\n",
		   progname, progname);
}

/* Parses --batch N, or exits with status 2 */
static int32_t
parse_batch(const char *s)
{
	char	   *end;
	long		n = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || n < 0 || n > INT32_MAX)
	{
		report("invalid batch number \"%s\"", s);
		exit(2);
	}
	return (int32_t) n;
}

/*
 * Parses argv into opts and *path; exits on usage errors (status 2),
 * --help and --version.
 */
static void
parse_options(int argc, char **argv, ArrowPrintOptions *opts, const char **path)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},
		{"values", no_argument, NULL, 'v'},
		{"batch", required_argument, NULL, 'b'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0}
	};
	int			c;

	memset(opts, 0, sizeof(*opts));
	opts->batch = -1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1)
	{
		switch (c)
		{
			case 'j':
				opts->json = true;
				break;
			case 'v':
				opts->values = true;
				break;
			case 'b':
				opts->batch = parse_batch(optarg);
				break;
			case 'h':
				usage();
				exit(0);
			case 'V':
				printf("%s (pg_warp) %s\n", progname, ARROW_INSPECT_VERSION);
				exit(0);
			default:
				try_help(2);
		}
	}
	if (optind != argc - 1)
	{
		report("%s", optind >= argc ? "no file given" : "too many arguments");
		try_help(2);
	}
	*path = argv[optind];
}

/* arrow-inspect [OPTION]... FILE; returns the exit status */
int
main(int argc, char **argv)
{
	ArrowPrintOptions opts;
	const char *path;

	set_progname("arrow-inspect");
	parse_options(argc, argv, &opts, &path);
	return arrow_print_file(path, &opts);
}
