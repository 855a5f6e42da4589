/*-------------------------------------------------------------------------
 *
 * main.c
 *		fluent2arrow: a Forward-protocol sink (Fluentd, Fluent Bit) that
 *		writes Arrow files for arrow_fdw (doc/fluent2arrow.md).
 *
 * The start: read the configuration, lock and replay the spool (the WAL a
 * crash left), listen, run the event loop.  SIGTERM/SIGINT: stop reading,
 * finish every file, make the WAL durable, send the last acks, remove the
 * spool's segments (everything is in finished files), exit 0.  SIGHUP:
 * reopen the log, reload the configuration (open files are finished first;
 * the listening sockets stay as they were).  --ingest FILE runs the same
 * decoding and writing over a file of frames without sockets or WAL (the
 * benchmark's raw write rate).
 *
 * This file is the entry point only (it exports main alone): the files
 * below it are used in one direction (fluent2arrow.h), and what the event
 * loop and the spool's replay call back here (a reload, the replayed frames)
 * they are handed as functions.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fluent2arrow.h"

static volatile int stop_flag;
static volatile int reload_flag;
static int	stats_option;	/* --stats: survives reloads */

static void
on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_flag = 1;
	else
		stop_flag = 1;
}

static void
install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void
open_log(void)
{
	if (g_cfg->log_path && freopen(g_cfg->log_path, "a", stderr) == NULL)
		fatal("cannot open the log \"%s\": %s", g_cfg->log_path, strerror(errno));
}

/* Builders and directories of every route; stale temporary files go */
static bool
init_routes(Config *cfg, char *errbuf, size_t errlen)
{
	for (int i = 0; i < cfg->n_routes; i++)
	{
		if (!output_route_init(&cfg->routes[i], errbuf, errlen))
			return false;
		output_remove_stale(cfg->routes[i].dir);
	}
	return true;
}

/* A configuration and the output state of its routes freed */
static void
drop_config(Config *cfg)
{
	for (int i = 0; i < cfg->n_routes; i++)
		output_route_free(&cfg->routes[i]);
	config_free(cfg);
}

/* SIGHUP: reopen the log, reload the configuration */
static void
reload_config(void)
{
	char		err[1024];
	Config	   *cfg;

	open_log();
	cfg = config_load(g_cfg->path, err, sizeof(err));
	if (cfg == NULL || !init_routes(cfg, err, sizeof(err)) ||
		!deadletter_open(cfg->deadletter_path, err, sizeof(err)))
	{
		logmsg("configuration not reloaded: %s", err);
		if (cfg)
			drop_config(cfg);
		return;
	}
	output_finish_all(g_cfg);
	/* settings that need a restart keep their old values */
	free(cfg->spool_dir);
	cfg->spool_dir = xstrdup(g_cfg->spool_dir);
	drop_config(g_cfg);
	g_cfg = cfg;
	g_cfg_generation++;
	if (stats_option > 0)
		g_cfg->stats_interval = stats_option;
	logmsg("configuration reloaded (%d routes; listen, unix_socket and spool_dir need a restart)",
		   cfg->n_routes);
}

/* --ingest: decode and write the frames of a file, no sockets, no WAL */
static int
ingest_file(const char *path)
{
	FILE	   *f = fopen(path, "rb");
	struct stat st;
	uint8_t    *data;
	size_t		off = 0;
	msgpack_unpacked u;
	struct timespec t0,
				t1;
	double		secs;

	if (f == NULL || fstat(fileno(f), &st) != 0)
		fatal("cannot read \"%s\": %s", path, strerror(errno));
	data = xmalloc(st.st_size + 1);
	if (fread(data, 1, st.st_size, f) != (size_t) st.st_size)
		fatal("cannot read \"%s\"", path);
	fclose(f);
	msgpack_unpacked_init(&u);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (off < (size_t) st.st_size)
	{
		FrameResult res;
		char		why[256];
		size_t		before = off;

		if (msgpack_unpack_next(&u, (const char *) data, st.st_size, &off) != MSGPACK_UNPACK_SUCCESS &&
			off == before)
			fatal("\"%s\": malformed frame at byte %zu", path, before);
		if (!forward_frame(&u.data, 0, &res, why, sizeof(why)))
			fatal("\"%s\": frame at byte %zu: %s", path, before, why);
		g_count.frames++;
		g_count.bytes += off - before;
	}
	output_finish_all(g_cfg);
	output_drain();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("{\"events\": %llu, \"rejects\": %llu, \"bytes\": %llu, \"seconds\": %.6f, \"events_per_s\": %.0f, \"mb_per_s\": %.2f}\n",
		   (unsigned long long) g_count.events, (unsigned long long) g_count.rejects,
		   (unsigned long long) g_count.bytes, secs, g_count.events / secs,
		   g_count.bytes / secs / 1e6);
	msgpack_unpacked_destroy(&u);
	free(data);
	return output_failed() ? 1 : 0;
}

static void
usage(void)
{
	printf("%s receives Fluentd / Fluent Bit events (Forward protocol) and writes Arrow files.\n\n"
		   "Usage:\n  %s -c CONFIG [OPTION]...\n\n"
		   "Options:\n"
		   "  -c, --config=FILE      the configuration file (doc/fluent2arrow.md)\n"
		   "      --check            check the configuration and exit\n"
		   "      --stats[=SECONDS]  a status line every SECONDS (default 10) on the log\n"
		   "      --ingest=FILE      decode and write a file of frames (no sockets, no\n"
		   "                         spool), print the rate as JSON and exit\n"
		   "  -h, --help             show this help and exit\n", progname, progname);
}

/* Replay: one frame of the spool, decoded and routed as when it came */
static bool
replay_frame(const msgpack_object *frame, uint64_t lsn, char *why, size_t whylen)
{
	FrameResult res;

	return forward_frame(frame, lsn, &res, why, whylen);
}

/* Replay: the replayed events' files finished; whether they are stored */
static bool
replay_finish(void)
{
	output_finish_all(g_cfg);
	output_drain();
	return output_stored();
}

/* Listens and runs until SIGTERM/SIGINT; returns the exit status */
static int
serve(void)
{
	char		err[1024];
	static const WalReplayOps replay = {replay_frame, replay_finish};

	if (!wal_open(g_cfg->spool_dir, g_cfg->wal_segment, err, sizeof(err)))
		fatal("%s", err);
	if (wal_replay(g_cfg->spool_dir, &replay, err, sizeof(err)) < 0)
		fatal("%s", err);
	if (!conn_listen(g_cfg, err, sizeof(err)))
		fatal("%s", err);
	logmsg("listening%s%s%s%s (spool \"%s\")", g_cfg->listen_port ? " on " : "",
		   g_cfg->listen_port ? g_cfg->listen_host : "",
		   g_cfg->unix_path ? " and on " : "", g_cfg->unix_path ? g_cfg->unix_path : "",
		   g_cfg->spool_dir);
	conn_loop(&stop_flag, &reload_flag, reload_config);
	logmsg("stopping: finishing files");
	output_finish_all(g_cfg);
	output_drain();
	wal_close();
	conn_close_all();
	if (output_stored())
		wal_truncate(UINT64_MAX);
	stats_line(true);
	return output_failed() || !deadletter_sync() ? 1 : 0;
}

int
main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"config", required_argument, NULL, 'c'},
		{"check", no_argument, NULL, 'k'},
		{"stats", optional_argument, NULL, 's'},
		{"ingest", required_argument, NULL, 'i'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}
	};
	const char *config = NULL,
			   *ingest = NULL;
	bool		check = false;
	int			stats = -1;
	int			opt,
				rc;
	char		err[1024];

	set_progname("fluent2arrow");
	while ((opt = getopt_long(argc, argv, "c:h", longopts, NULL)) != -1)
	{
		switch (opt)
		{
			case 'c':
				config = optarg;
				break;
			case 'k':
				check = true;
				break;
			case 's':
				stats = optarg ? atoi(optarg) : 10;
				if (stats <= 0)
					fatal("--stats: \"%s\" is not a positive number of seconds", optarg);
				break;
			case 'i':
				ingest = optarg;
				break;
			case 'h':
				usage();
				return 0;
			default:
				try_help(1);
		}
	}
	if (config == NULL || optind < argc)
	{
		report(config == NULL ? "no configuration file given (-c)" : "too many arguments");
		try_help(1);
	}
	if ((g_cfg = config_load(config, err, sizeof(err))) == NULL)
		fatal("%s", err);
	if (check)
	{
		printf("%s: %d routes\n", config, g_cfg->n_routes);
		return 0;
	}
	if (stats > 0)
		g_cfg->stats_interval = stats_option = stats;
	open_log();
	install_signals();
	stats_start();
	if (!init_routes(g_cfg, err, sizeof(err)) || !output_start(err, sizeof(err)) ||
		!deadletter_open(g_cfg->deadletter_path, err, sizeof(err)))
		fatal("%s", err);
	rc = ingest ? ingest_file(ingest) : serve();
	output_stop();
	deadletter_close();
	drop_config(g_cfg);
	return rc;
}
