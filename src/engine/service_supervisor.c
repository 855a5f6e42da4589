/*-------------------------------------------------------------------------
 *
 * service_supervisor.c
 *		The background worker that runs the warp service (pg_warp_service,
 *		src/service/) for the cluster: starts it, restarts it when it dies,
 *		and stops it when PostgreSQL shuts down (doc/service.md).
 *
 * Why a supervisor between the postmaster and the service: the postmaster
 * treats the abnormal exit of any of its own children (a signal, an exit
 * code other than 0 or 1) as a crash and restarts the whole cluster.  The
 * service is the supervisor's child, so the postmaster never sees its death:
 * a crash or kill -9 of the service costs only its queries, and the
 * supervisor starts a new one after a short backoff.
 *
 * The supervisor itself is a normal PostgreSQL 15 background worker (workers
 * must have shared memory access in 15, so the postmaster's rules apply to
 * it): it exits with code 1 on SIGTERM, so that the postmaster starts it
 * again after bgw_restart_time if the cluster keeps running (e.g. after
 * pg_terminate_backend()), and it stops the service before exiting.  If it
 * is killed outright, the postmaster restarts the cluster as for any crashed
 * child; the service then receives SIGTERM from the kernel (the parent-death
 * signal it asked for) and exits, and the new supervisor starts a new one.
 * So the service never outlives its supervisor.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "miscadmin.h"
#include "optimizer/cost.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "engine/heap_source.h"

#define SERVICE_PROGRAM		"pg_warp_service"
#define RESTART_MIN_MS		100		/* first delay after an unexpected exit */
#define RESTART_MAX_MS		5000	/* the delay doubles up to this ... */
#define STABLE_RUN_MS		10000	/* ... unless the service ran this long */
#define STOP_WAIT_MS		5000	/* SIGTERM, then SIGKILL after this */

PGDLLEXPORT void pg_warp_supervisor_main(Datum main_arg);

/*
 * pg_warp.gpu_cache_size: the service's GPU column cache per device, in MB
 * (-1: a quarter of the smallest GPU's memory; 0: off).  Set at server
 * start: the service is started with it (--gpu-cache-size).
 */
static int	gpu_cache_size_mb = -1;
static int	heap_unit_buffers = -1;
/*
 * pg_warp.gpujoin_cache_size: the join tables the service keeps for later
 * queries, in MB of host memory (--join-cache-size; 0: none)
 */
static int	join_cache_size_mb = 1024;
/*
 * pg_warp.pinned_files_size: the Arrow and heap segment files' page-cache
 * pages the service keeps registered for the GPUs' copies, in MB (--pinned-files; -1, the
 * default: a quarter of the memory, or of the cgroup's limit where lower;
 * 0: none, every read a pread)
 */
static int	pinned_files_mb = -1;
/*
 * pg_warp.pinned_files_restore: whether the service registers again, when it
 * starts, the file pages it had registered before (--pinned-files-restore)
 */
static bool pinned_files_restore = true;
/*
 * pg_warp.gpus: the CUDA device ordinals the service uses, e.g. '0,1'
 * (--gpus; '': every GPU the driver reports)
 */
static char *gpus_setting = "";
/*
 * pg_warp.gpudirect: whether GPU runs read Arrow files (and the heap units
 * the service reads) with cuFile
 * (--gpudirect; service/gpu_direct.c), and pg_warp.cufile_library, the
 * libcufile to load (--cufile-library; '': libcufile.so.0 on the library path)
 */
static int	gpudirect_setting = 1;
static char *cufile_library = "";

static const struct config_enum_entry gpudirect_options[] = {
	{"off", 0, false},
	{"auto", 1, false},
	{"on", 2, false},
	{NULL, 0, false}
};
/* pg_warp.max_async_tasks: runs the service executes at once (--max-async-tasks) */
int			pg_warp_max_async_tasks = 16;
/*
 * pg_warp.service_threads: the CPU engine's threads per run (--threads; 0,
 * the default: one per CPU the service may run on)
 */
static int	service_threads = 0;

/* the service process as the supervisor knows it */
typedef struct ServiceProc
{
	pid_t		pid;			/* 0 while not running */
	TimestampTz started;		/* when pid was started */
	TimestampTz next_start;		/* when to start it again */
	int			backoff_ms;		/* the delay after the next unexpected exit */
} ServiceProc;

/* pg_warp.gpus: digits and commas only (the service's --gpus) */
static bool
check_gpus(char **newval, void **extra, GucSource source)
{
	if (strspn(*newval, "0123456789, ") != strlen(*newval))
	{
		GUC_check_errdetail("pg_warp.gpus takes CUDA device ordinals separated by commas, such as '0,1'.");
		return false;
	}
	return true;
}

/*
 * pg_warp_service_init
 *		Called by _PG_init: defines the service's settings and, when pg_warp
 *		is being preloaded, registers the supervisor background worker and
 *		defines the settings it starts the service with (PGC_POSTMASTER
 *		settings can only be defined then).
 */
void
pg_warp_service_init(void)
{
	BackgroundWorker worker;

	pg_warp_service_client_init();
	if (!process_shared_preload_libraries_in_progress)
		return;
	/* a postmaster setting: only while preloading (it is the service's) */
	DefineCustomIntVariable("pg_warp.max_async_tasks",
							"Runs the pg_warp service executes at once.",
							"Further runs wait in a queue, first come first served, "
							"until a running one ends.",
							&pg_warp_max_async_tasks,
							16, 1, 10000,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_warp.service_threads",
							"CPU threads of the pg_warp service's CPU engine per run.",
							"0 (the default): one per CPU the service may run on (its "
							"CPU affinity, e.g. under taskset or a cpuset).",
							&service_threads,
							0, 0, 256,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_warp.gpu_cache_size",
							"Size of the GPU column cache of the pg_warp service, per GPU.",
							"Column buffers that GPU runs copied to a GPU stay there for later "
							"runs, up to this size.  -1: a quarter of the smallest GPU's "
							"memory; 0 turns the cache off.",
							&gpu_cache_size_mb,
							-1, -1, INT_MAX,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_warp.heap_unit_buffers",
							"Pinned host buffers the pg_warp service keeps for reading heap "
							"units, per GPU.",
							"A GPU run over a heap table reads each unit the GPU column cache "
							"misses into one of these (19 MB each; two per participant of a "
							"query), pinned when the service starts and kept between runs.  "
							"-1 (the default): two per participant of a parallel query whose "
							"service reads the units (pg_warp.gpu_heap_workers, within "
							"max_parallel_workers_per_gather, and the leader), none where the "
							"GPU column cache is off; 0: none kept, each run pins its own.",
							&heap_unit_buffers,
							-1, -1, 256,
							PGC_POSTMASTER,
							0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_warp.gpujoin_cache_size",
							"Host memory of the GpuJoin inner tables the pg_warp service keeps "
							"for later queries.",
							"A later query whose join depth reads the same rows of an unchanged "
							"table probes the kept table instead of building it again "
							"(pg_warp.gpujoin_cache); the least recently used go first.  "
							"0 keeps none.",
							&join_cache_size_mb,
							1024, 0, INT_MAX,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("pg_warp.pinned_files_size",
							"File pages the pg_warp service keeps pinned for the GPUs.",
							"GPU runs copy an Arrow file's column buffers, and the heap units "
							"the service reads, straight from their page-cache pages once "
							"they are registered with the GPU driver; "
							"the service registers them in the background after a run first "
							"reads them, and they stay registered for later runs, up to this "
							"much memory (the least recently used files go first).  -1 (the "
							"default): a quarter of the memory, or of the cgroup's memory "
							"limit where lower; 0: none, the service reads every buffer with "
							"pread (doc/service.md).",
							&pinned_files_mb,
							-1, -1, INT_MAX,
							PGC_POSTMASTER,
							GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("pg_warp.pinned_files_restore",
							 "Whether the pg_warp service registers again, when it starts, the "
							 "file pages it had registered before.",
							 "The service keeps a list of the files whose pages it keeps "
							 "registered (pg_warp_pinned_files in the data directory); on (the "
							 "default): when it starts, it registers their regions again in the "
							 "background, for the files that have not changed and the pages "
							 "still in the page cache, so that the first runs after a restart "
							 "copy from them; off: the first run over a file after a restart "
							 "reads it with pread.",
							 &pinned_files_restore,
							 true,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomEnumVariable("pg_warp.gpudirect",
							 "Whether the pg_warp service reads Arrow files and heap table units "
							 "into GPU memory with cuFile (GPUDirect Storage).",
							 "auto (the default): only where libcufile runs GPUDirect Storage "
							 "(the nvidia-fs driver is loaded), else pread into pinned buffers; "
							 "on: in libcufile's compatibility mode too, and a GPU run fails "
							 "when cuFile cannot read its files; off: never.",
							 &gpudirect_setting,
							 1, gpudirect_options,
							 PGC_POSTMASTER,
							 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("pg_warp.cufile_library",
							   "The libcufile the pg_warp service loads for pg_warp.gpudirect.",
							   "A path, or '' (the default) for libcufile.so.0 on the library "
							   "path; the nvidia-cufile wheel on PyPI ships one.",
							   &cufile_library,
							   "",
							   PGC_POSTMASTER,
							   0,
							   NULL, NULL, NULL);

	DefineCustomStringVariable("pg_warp.gpus",
							   "The GPUs the pg_warp service uses, as CUDA device ordinals.",
							   "A comma-separated list such as '0,1'; empty: every GPU the driver "
							   "reports.  Runs over Arrow files spread their record batches over "
							   "these GPUs.",
							   &gpus_setting,
							   "",
							   PGC_POSTMASTER,
							   0,
							   check_gpus, NULL, NULL);

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_PostmasterStart;
	worker.bgw_restart_time = 1;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "pg_warp");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "pg_warp_supervisor_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "pg_warp service supervisor");
	snprintf(worker.bgw_type, BGW_MAXLEN, "pg_warp supervisor");
	RegisterBackgroundWorker(&worker);
}

/* SIGCHLD: wake the main loop to reap the service */
static void
handle_sigchld(SIGNAL_ARGS)
{
	int			save_errno = errno;

	SetLatch(MyLatch);
	errno = save_errno;
}

/*
 * service_heap_unit_threads: the CPU threads with which the service reads
 * the heap units of GPU runs (planner, heap_unit_workers), none where it
 * keeps no GPU column cache: pg_warp.service_threads, else the CPUs this
 * process may run on, as the service counts its own
 */
int
service_heap_unit_threads(void)
{
	cpu_set_t	cpus;
	long		n;

	if (gpu_cache_size_mb == 0)
		return 0;
	if (service_threads > 0)
		return service_threads;
	n = sched_getaffinity(0, sizeof(cpus), &cpus) == 0 ? CPU_COUNT(&cpus) :
		sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : (n > 256 ? 256 : (int) n);
}

/* a size setting in MB as the service's command line takes it: "auto" below 0 */
static char *
mb_argument(char *buf, size_t len, int mb)
{
	if (mb < 0)
		strlcpy(buf, "auto", len);
	else
		snprintf(buf, len, "%d", mb);
	return buf;
}

/*
 * start_service
 *		Forks and execs the service with the data directory, our pid, the
 *		GPU code to load (pg_warp.fatbin_path), the GPU cache size
 *		(pg_warp.gpu_cache_size), pg_warp.max_async_tasks, the join
 *		cache's size (pg_warp.gpujoin_cache_size), the pinned files' size
 *		and pg_warp.pinned_files_restore, pg_warp.gpudirect, the heap units' pinned buffers
 *		(pg_warp.heap_unit_buffers), pg_warp.arrow_metadata_prewarm, pg_warp.cufile_library,
 *		pg_warp.service_threads and pg_warp.gpus.
 *		Between fork and exec the child runs nothing of PostgreSQL (no
 *		ereport, no exit handlers): it closes the descriptors it inherited
 *		except stdin/stdout/stderr (stderr is the server log) and execs.
 */
static void
start_service(ServiceProc *svc)
{
	char		path[MAXPGPATH];
	char		ppid[16];
	char		fatbin[MAXPGPATH];
	char		cache_size[16];
	char		max_tasks[16];
	char		join_cache[16];
	char		pinned[16];
	char		gpus[256];
	char		threads[16];
	char		unit_buffers[16];
	char	   *argv[32];
	const char *prewarm;
	int			argc;
	pid_t		pid;

	snprintf(path, sizeof(path), "%s/%s", pkglib_path, SERVICE_PROGRAM);
	snprintf(ppid, sizeof(ppid), "%d", (int) MyProcPid);
	/* pg_warp.fatbin_path, a leading "$libdir" expanded as device.c does */
	if (strncmp(pg_warp_fatbin_path, "$libdir", 7) == 0 &&
		(pg_warp_fatbin_path[7] == '/' || pg_warp_fatbin_path[7] == '\0'))
		snprintf(fatbin, sizeof(fatbin), "%s%s", pkglib_path, pg_warp_fatbin_path + 7);
	else
		strlcpy(fatbin, pg_warp_fatbin_path, sizeof(fatbin));
	argv[0] = path;
	argv[1] = "-D";
	argv[2] = DataDir;
	argv[3] = "--parent-pid";
	argv[4] = ppid;
	argv[5] = "--fatbin";
	argv[6] = fatbin;
	argv[7] = "--gpu-cache-size";
	argv[8] = mb_argument(cache_size, sizeof(cache_size), gpu_cache_size_mb);
	snprintf(max_tasks, sizeof(max_tasks), "%d", pg_warp_max_async_tasks);
	argv[9] = "--max-async-tasks";
	argv[10] = max_tasks;
	snprintf(join_cache, sizeof(join_cache), "%d", join_cache_size_mb);
	argv[11] = "--join-cache-size";
	argv[12] = join_cache;
	argv[13] = "--pinned-files";
	argv[14] = mb_argument(pinned, sizeof(pinned), pinned_files_mb);
	argv[15] = "--gpudirect";
	argv[16] = (char *) gpudirect_options[gpudirect_setting].name;
	argv[17] = "--pinned-files-restore";
	argv[18] = pinned_files_restore ? "on" : "off";
	/*
	 * pg_warp.heap_unit_buffers: -1, two per participant of a parallel
	 * query whose service reads the units (heap_unit_worker_limit), while
	 * units are kept
	 */
	{
		int			limit = heap_unit_worker_limit();
		int			workers = limit < 0 ? max_parallel_workers_per_gather :
			Min(limit, max_parallel_workers_per_gather);

		snprintf(unit_buffers, sizeof(unit_buffers), "%d",
				 heap_unit_buffers >= 0 ? heap_unit_buffers :
				 gpu_cache_size_mb == 0 ? 0 : 2 * (workers + 1));
	}
	argv[19] = "--unit-buffers";
	argv[20] = unit_buffers;
	argv[21] = "--arrow-metadata-prewarm";
	/* defined by arrow_fdw (src/fdw/meta_shared.c), which lays the same files out */
	prewarm = GetConfigOption("pg_warp.arrow_metadata_prewarm", true, false);
	argv[22] = prewarm != NULL && strcmp(prewarm, "off") == 0 ? "off" : "on";
	argc = 23;
	if (cufile_library[0] != '\0')
	{
		argv[argc++] = "--cufile-library";
		argv[argc++] = cufile_library;
	}
	if (service_threads > 0)
	{
		snprintf(threads, sizeof(threads), "%d", service_threads);
		argv[argc++] = "--threads";
		argv[argc++] = threads;
	}
	/* pg_warp.gpus without its blanks; none: every GPU */
	{
		int			n = 0;

		for (const char *p = gpus_setting; *p != '\0' && n < (int) sizeof(gpus) - 1; p++)
			if (*p != ' ')
				gpus[n++] = *p;
		gpus[n] = '\0';
		if (strpbrk(gpus, "0123456789") != NULL)
		{
			argv[argc++] = "--gpus";
			argv[argc++] = gpus;
		}
	}
	argv[argc] = NULL;
	Assert(argc < lengthof(argv));

	svc->started = GetCurrentTimestamp();
	pid = fork();
	if (pid == 0)
	{
		if (close_range(3, ~0U, 0) != 0)
			for (int fd = 3; fd < 1024; fd++)
				close(fd);
		execv(path, argv);
		fprintf(stderr, "pg_warp supervisor: could not execute \"%s\": %s\n",
				path, strerror(errno));
		_exit(127);
	}
	if (pid < 0)
	{
		ereport(LOG,
				(errmsg("could not fork the pg_warp service: %m")));
		svc->next_start = TimestampTzPlusMilliseconds(svc->started, svc->backoff_ms);
		return;
	}
	svc->pid = pid;
	ereport(LOG,
			(errmsg("pg_warp service started (pid %d)", (int) pid)));
}

/*
 * reap_service
 *		Collects exited children; when the service is one of them, logs how
 *		it ended and schedules its restart: RESTART_MIN_MS after a service
 *		that ran STABLE_RUN_MS or more, else twice the previous delay (up to
 *		RESTART_MAX_MS), so that a service that cannot start is not retried
 *		in a tight loop.
 */
static void
reap_service(ServiceProc *svc)
{
	pid_t		pid;
	int			status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		TimestampTz now = GetCurrentTimestamp();
		char		how[128];

		if (pid != svc->pid)
			continue;
		if (TimestampDifferenceExceeds(svc->started, now, STABLE_RUN_MS))
			svc->backoff_ms = RESTART_MIN_MS;
		if (WIFSIGNALED(status))
			snprintf(how, sizeof(how), "was terminated by signal %d: %s",
					 WTERMSIG(status), pg_strsignal(WTERMSIG(status)));
		else
			snprintf(how, sizeof(how), "exited with exit code %d", WEXITSTATUS(status));
		ereport(LOG,
				(errmsg("pg_warp service (pid %d) %s; restarting it in %d ms",
						(int) pid, how, svc->backoff_ms)));
		svc->pid = 0;
		svc->next_start = TimestampTzPlusMilliseconds(now, svc->backoff_ms);
		svc->backoff_ms = Min(svc->backoff_ms * 2, RESTART_MAX_MS);
	}
}

/*
 * stop_service
 *		Sends SIGTERM to a running service and waits for it to exit, with
 *		SIGKILL after STOP_WAIT_MS.
 */
static void
stop_service(ServiceProc *svc)
{
	int			status;

	if (svc->pid == 0)
		return;
	kill(svc->pid, SIGTERM);
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 10)
	{
		pid_t		rc = waitpid(svc->pid, &status, WNOHANG);

		if (rc == svc->pid || (rc < 0 && errno == ECHILD))
			return;
		pg_usleep(10 * 1000L);
	}
	ereport(LOG,
			(errmsg("pg_warp service (pid %d) did not stop within %d ms; killing it",
					(int) svc->pid, STOP_WAIT_MS)));
	kill(svc->pid, SIGKILL);
	waitpid(svc->pid, &status, 0);
}

/*
 * pg_warp_supervisor_main
 *		The background worker's entry point: keeps one service running until
 *		SIGTERM (shutdown or pg_terminate_backend) or the postmaster's death.
 */
void
pg_warp_supervisor_main(Datum main_arg)
{
	ServiceProc svc = {0, 0, 0, RESTART_MIN_MS};

	pqsignal(SIGTERM, SignalHandlerForShutdownRequest);
	pqsignal(SIGHUP, SIG_IGN);
	pqsignal(SIGCHLD, handle_sigchld);
	BackgroundWorkerUnblockSignals();

	for (;;)
	{
		long		timeout_ms = 1000;

		reap_service(&svc);
		if (ShutdownRequestPending)
			break;
		if (svc.pid == 0)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (now >= svc.next_start)
				start_service(&svc);
			else
				timeout_ms = TimestampDifferenceMilliseconds(now, svc.next_start);
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout_ms, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
	stop_service(&svc);

	/* exit code 1: the postmaster restarts us if the cluster keeps running */
	proc_exit(1);
}
