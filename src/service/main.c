/*-------------------------------------------------------------------------
 *
 * main.c
 *		pg_warp_service: the process that owns every GPU of one PostgreSQL
 *		cluster and runs the engine's work for its backends (doc/service.md).
 *
 * This file is the program's entry point only: the command line is read by
 * options.c, the socket served by server.c.
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
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_map.h"
#include "file_meta.h"
#include "file_reg.h"
#include "gpu_cache.h"
#include "gpu_driver.h"
#include "service.h"
#include "service/gpu_direct.h"

/*
 * the metadata prewarm's thread: the files whose images were used last
 * read into the service's cache (file_meta.c), beside the first requests;
 * the log says what it did where it found images
 */
#define META_PREWARM_FILES	8

static void *
meta_prewarm_main(void *arg)
{
	int64_t		start = svc_now_us(CLOCK_MONOTONIC);
	int			left_out;
	int			kept = svc_file_meta_prewarm(META_PREWARM_FILES, &left_out);

	(void) arg;
	if (kept + left_out > 0)
		svc_log("LOG", "arrow metadata: %d file(s) read from their images at the start, "
				"%d left out (%.1f ms)", kept, left_out,
				(double) (svc_now_us(CLOCK_MONOTONIC) - start) / 1000.0);
	return NULL;
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
	ServiceOptions opts;
	ServiceGpu	gpu;
	int			signal_fd;
	int			listen_fd;
	int			rc;

	svc_options_parse(argc, argv, &opts);
	if (opts.parent > 0)
		watch_parent(opts.parent);

	/* the socket is named relative to the data directory: no sun_path limit */
	if (chdir(opts.datadir) != 0)
	{
		svc_log("FATAL", "could not change to data directory \"%s\": %s",
				opts.datadir, strerror(errno));
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
	gpu_open(&gpu, opts.use_gpus);
	gpu_cache_configure(&gpu, opts.cache_size);
	gpu_agg_prewarm(&gpu, opts.unit_buffers, gpu_heap_unit_buffer_bytes());
	gpu_direct_start(&gpu);
	/* after the GPUs' driver is loaded, so that the handler is ours */
	if (!svc_file_map_init())
		svc_log("WARNING", "could not install the SIGBUS handler (%s): Arrow files are read, never mapped",
				strerror(errno));
	else if (gpu.n_devices > 0)
		file_reg_restore(gpu_device_context(0));
	if (opts.meta_prewarm)
	{
		pthread_t	t;
		pthread_attr_t attr;
		int			e;

		/* a thread that cannot start leaves the files to their first runs */
		if (pthread_attr_init(&attr) == 0)
		{
			if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0 &&
				(e = pthread_create(&t, &attr, meta_prewarm_main, NULL)) != 0)
				svc_log("WARNING", "could not start the arrow metadata prewarm: %s",
						strerror(e));
			pthread_attr_destroy(&attr);
		}
	}
	rc = server_run(listen_fd, signal_fd, opts.parent, &gpu);
	server_unlink_socket();
	file_reg_stop();
	if (gpu.n_devices > 0 && gpu_drv.cuCtxPushCurrent(gpu_device_context(0)) == CUDA_SUCCESS)
	{
		CUcontext	popped;

		file_reg_drop_unheld();
		gpu_drv.cuCtxPopCurrent(&popped);
	}
	for (uint32_t i = 0; i < gpu.n_devices; i++)
		gpu_cache_clear(i);
	gpu_direct_stop();
	gpu_close(&gpu);
	svc_log("LOG", "shut down");
	return rc;
}
