/*-------------------------------------------------------------------------
 *
 * main.c
 *		pg_warp_service: the process that owns every GPU of one PostgreSQL
 *		cluster and runs the engine's work for its backends (doc/service.md).
 *
 *		pg_warp_service -D DATADIR [--parent-pid PID] [--no-gpu] [--threads N]
 *						[--fatbin PATH] [--gpu-cache-size MB|auto]
 *						[--max-async-tasks N]
 *
 * The supervisor background worker (src/engine/service_supervisor.c) starts
 * it with the cluster's data directory and its own pid.  The service then
 * lives as long as that parent: it asks the kernel for SIGTERM when the
 * parent dies (PR_SET_PDEATHSIG) and checks getppid() as well, which also
 * covers a parent that died before the request was made.  SIGTERM or SIGINT stop it cleanly:
 * the socket is removed and the GPU contexts released.  It writes its log
 * lines to stderr, which the supervisor shares with PostgreSQL's server log.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file_map.h"
#include "gpu_cache.h"
#include "gpu_driver.h"
#include "service.h"

/* --threads: the CPU engine's threads per AGG_RUN that names none */
int			svc_cpu_threads;

/* --max-async-tasks: runs executed at once; later ones wait in a queue */
int			svc_max_async_tasks = 16;

/*
 * svc_log
 *		Writes one line "TIMESTAMP [pid] pg_warp service LEVEL:  message" to
 *		stderr with a single write(), so that lines of concurrent writers to
 *		the server log never interleave.
 */
void
svc_log(const char *level, const char *fmt, ...)
{
	char		buf[1024];
	char		ts[64];
	struct tm	tm;
	time_t		now = time(NULL);
	va_list		ap;
	int			n;

	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S UTC", &tm);
	n = snprintf(buf, sizeof(buf), "%s [%d] pg_warp service %s:  ",
				 ts, (int) getpid(), level);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, n) < 0)
		return;					/* nowhere left to report it */
}

/* svc_now_us: the time on clock clock_id in microseconds */
int64_t
svc_now_us(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* usage: explains the command line on stderr and exits with code 2 */
static void
usage(void)
{
	fprintf(stderr, "usage: pg_warp_service -D DATADIR [--parent-pid PID] [--no-gpu] [--threads N]\n"
			"                       [--fatbin PATH] [--gpu-cache-size MB|auto]\n"
			"                       [--max-async-tasks N]\n"
			"Serves pg_warp's engine to the backends of the PostgreSQL cluster in\n"
			"DATADIR through the socket DATADIR/%s.  Started by pg_warp's\n"
			"supervisor background worker, not by hand.  --no-gpu serves with the\n"
			"CPU engine without loading the GPU driver.  --threads N: the CPU\n"
			"engine's threads per run (default: the online CPUs).  --fatbin names\n"
			"the GPU code (pg_warp.fatbin) that the GPU engine runs.  --gpu-cache-size:\n"
			"the GPU column cache per device in MiB (0: off; auto, the default: a\n"
			"quarter of the smallest GPU's memory).\n"
			"--max-async-tasks N: the runs executed at once (default 16); later\n"
			"ones wait in a queue, first come first served.\n", PGWARP_SOCKET_NAME);
	exit(2);
}

/*
 * parse_cache_size
 *		--gpu-cache-size: "auto" (-1) or a number of MiB (0: off); exits
 *		through usage() on anything else
 */
static int64_t
parse_cache_size(const char *s)
{
	char	   *end;
	long long	mb;

	if (strcmp(s, "auto") == 0)
		return -1;
	errno = 0;
	mb = strtoll(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || mb < 0 || mb > (INT64_MAX >> 20))
		usage();
	return (int64_t) mb << 20;
}

/*
 * setup_signals
 *		Resets what the parent may have left (a signal mask, ignored
 *		signals: both survive exec) and returns a signalfd that reports
 *		SIGTERM and SIGINT, which stay blocked so that only the main loop
 *		sees them.  Returns -1 on failure.
 */
static int
setup_signals(void)
{
	static const int defaults[] = {SIGQUIT, SIGUSR1, SIGUSR2, SIGCHLD, SIGALRM};
	sigset_t	set;

	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		signal(defaults[i], SIG_DFL);
	signal(SIGPIPE, SIG_IGN);	/* sends use MSG_NOSIGNAL; belt and braces */
	signal(SIGHUP, SIG_IGN);	/* nothing to reload */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_SETMASK, &set, NULL) != 0)
		return -1;
	return signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

/*
 * watch_parent
 *		Has the kernel send SIGTERM when the parent dies, and exits at once
 *		if the parent is already gone (we were re-parented before the
 *		request took effect).
 */
static void
watch_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0)
		svc_log("WARNING", "prctl(PR_SET_PDEATHSIG) failed: %s", strerror(errno));
	if (getppid() != parent)
	{
		svc_log("LOG", "parent process %d is gone; not starting", (int) parent);
		exit(0);
	}
}

int
main(int argc, char **argv)
{
	const char *datadir = NULL;
	pid_t		parent = 0;
	bool		use_gpus = true;
	int64_t		cache_size = -1;
	ServiceGpu	gpu;
	int			signal_fd;
	int			listen_fd;
	int			rc;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "-D") == 0 && i + 1 < argc)
			datadir = argv[++i];
		else if (strcmp(argv[i], "--parent-pid") == 0 && i + 1 < argc)
			parent = (pid_t) atoi(argv[++i]);
		else if (strcmp(argv[i], "--no-gpu") == 0)
			use_gpus = false;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
		{
			svc_cpu_threads = atoi(argv[++i]);
			if (svc_cpu_threads < 1 || svc_cpu_threads > 256)
				usage();
		}
		else if (strcmp(argv[i], "--fatbin") == 0 && i + 1 < argc)
			gpu_fatbin_path = argv[++i];
		else if (strcmp(argv[i], "--gpu-cache-size") == 0 && i + 1 < argc)
			cache_size = parse_cache_size(argv[++i]);
		else if (strcmp(argv[i], "--max-async-tasks") == 0 && i + 1 < argc)
		{
			svc_max_async_tasks = atoi(argv[++i]);
			if (svc_max_async_tasks < 1 || svc_max_async_tasks > 10000)
				usage();
		}
		else
			usage();
	}
	if (datadir == NULL)
		usage();
	if (svc_cpu_threads == 0)
	{
		long		n = sysconf(_SC_NPROCESSORS_ONLN);

		svc_cpu_threads = n < 1 ? 1 : (n > 256 ? 256 : (int) n);
	}
	if (parent > 0)
		watch_parent(parent);

	/* the socket is named relative to the data directory: no sun_path limit */
	if (chdir(datadir) != 0)
	{
		svc_log("FATAL", "could not change to data directory \"%s\": %s",
				datadir, strerror(errno));
		return 1;
	}
	umask(S_IRWXG | S_IRWXO);	/* the socket is created with mode 0600 */
	signal_fd = setup_signals();
	if (signal_fd < 0)
	{
		svc_log("FATAL", "could not set up signal handling: %s", strerror(errno));
		return 1;
	}

	/*
	 * Listen before opening the GPUs: creating CUDA contexts takes a second
	 * or more, and a backend that connects meanwhile waits in the listen
	 * queue (bounded by pg_warp.service_timeout) instead of finding no
	 * socket and failing with "service is not running".
	 */
	listen_fd = server_listen();
	if (listen_fd < 0)
		return 1;
	gpu_open(&gpu, use_gpus);
	gpu_cache_configure(&gpu, cache_size);
	/* after the GPUs' driver is loaded, so that the handler is ours */
	if (!svc_file_map_init())
		svc_log("WARNING", "could not install the SIGBUS handler (%s): Arrow files are read, never mapped",
				strerror(errno));
	rc = server_run(listen_fd, signal_fd, parent, &gpu);
	server_unlink_socket();
	gpu_close(&gpu);
	svc_log("LOG", "shut down");
	return rc;
}
