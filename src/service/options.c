/*-------------------------------------------------------------------------
 *
 * options.c
 *		pg_warp_service's command line and the settings it gives the rest
 *		of the service:
 *
 *		pg_warp_service -D DATADIR [--parent-pid PID] [--no-gpu] [--threads N]
 *						[--fatbin PATH] [--gpu-cache-size MB|auto]
 *						[--max-async-tasks N] [--join-cache-size MB]
 *						[--gpus N[,N...]] [--pinned-files MB|auto]
 *						[--pinned-files-restore on|off]
 *						[--gpudirect auto|on|off] [--cufile-library PATH]
 *						[--unit-buffers N] [--arrow-metadata-prewarm on|off]
 *
 * The supervisor background worker (src/engine/service_supervisor.c) passes
 * them; doc/service.md describes each.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_driver.h"
#include "service.h"
#include "service/file_reg.h"
#include "service/gpu_direct.h"
#include "service/join_store.h"

/* --threads: the CPU engine's threads per AGG_RUN that names none */
int			svc_cpu_threads;

/* --max-async-tasks: runs executed at once; later ones wait in a queue */
int			svc_max_async_tasks = 16;

/* usage: explains the command line on stderr and exits with code 2 */
static void
usage(void)
{
	fprintf(stderr, "usage: pg_warp_service -D DATADIR [--parent-pid PID] [--no-gpu] [--threads N]\n"
			"                       [--fatbin PATH] [--gpu-cache-size MB|auto]\n"
			"                       [--max-async-tasks N] [--join-cache-size MB]\n"
			"                       [--gpus N[,N...]] [--pinned-files MB|auto]\n"
			"                       [--pinned-files-restore on|off]\n"
			"                       [--gpudirect auto|on|off] [--cufile-library PATH]\n"
			"                       [--unit-buffers N] [--arrow-metadata-prewarm on|off]\n"
			"Serves pg_warp's engine to the backends of the PostgreSQL cluster in\n"
			"DATADIR through the socket DATADIR/%s.  Started by pg_warp's\n"
			"supervisor background worker, not by hand.  --no-gpu serves with the\n"
			"CPU engine without loading the GPU driver.  --threads N: the CPU\n"
			"engine's threads per run (default: the CPUs it may run on).  --fatbin names\n"
			"the GPU code (pg_warp.fatbin) that the GPU engine runs.  --gpu-cache-size:\n"
			"the GPU column cache per device in MiB (0: off; auto, the default: a\n"
			"quarter of the smallest GPU's memory).\n"
			"--max-async-tasks N: the runs executed at once (default 16); later\n"
			"ones wait in a queue, first come first served.  --join-cache-size: the\n"
			"join tables kept for later queries, in MiB of host memory (default\n"
			"1024; 0: none kept).  --gpus: the CUDA device ordinals to use, e.g.\n"
			"0,1 (default: every GPU the driver reports).  --pinned-files: the Arrow\n"
			"files' page-cache pages kept registered for the GPUs' copies, in MiB\n"
			"(auto, the default: a quarter of the memory, or of the cgroup's memory\n"
			"limit where lower; 0: none, every read a pread).  --pinned-files-restore:\n"
			"whether the service registers again at its start what it had registered\n"
			"before (the list pg_warp_pinned_files in DATADIR; on, the default, or\n"
			"off).  --gpudirect: read the files' column buffers into GPU memory\n"
			"with cuFile (auto, the default: only with GPUDirect Storage's nvidia-fs\n"
			"driver; on: in compatibility mode too, and a run fails when cuFile\n"
			"cannot read its files).  --cufile-library: libcufile's path (default\n"
			"libcufile.so.0 on the library path).  --unit-buffers: the pinned\n"
			"buffers of heap units pinned at the start and kept, per GPU (default 0).\n"
			"--arrow-metadata-prewarm: whether the service reads, at its start, the\n"
			"metadata of the Arrow files whose images in DATADIR/pg_warp/arrow_meta\n"
			"were used last (on, the default, or off).\n",
			PGWARP_SOCKET_NAME);
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
 * memory_limit: the bytes of memory this process may use: the machine's,
 * or its cgroup's (v2: memory.max of its cgroup and of each one above it)
 * where lower
 */
static uint64_t
memory_limit(void)
{
	uint64_t	limit = (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGESIZE);
	char		line[4096];
	char		path[4200];
	FILE	   *f = fopen("/proc/self/cgroup", "r");
	char	   *cg = NULL;

	if (f == NULL)
		return limit;
	/* the v2 hierarchy's line: "0::/path" */
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::/", 4) == 0)
		{
			cg = line + 3;
			cg[strcspn(cg, "\n")] = '\0';
			break;
		}
	fclose(f);
	while (cg != NULL)
	{
		char	   *slash;
		unsigned long long max;

		snprintf(path, sizeof(path), "/sys/fs/cgroup%s/memory.max", cg);
		if ((f = fopen(path, "r")) != NULL)
		{
			/* "max": no limit at this level */
			if (fscanf(f, "%llu", &max) == 1 && max < limit)
				limit = max;
			fclose(f);
		}
		if ((slash = strrchr(cg, '/')) == NULL || slash == cg)
			break;
		*slash = '\0';
	}
	return limit;
}

/*
 * svc_options_parse
 *		Reads the command line into *opts and the settings svc_cpu_threads,
 *		svc_max_async_tasks and gpu_fatbin_path; on a bad or missing
 *		argument explains the usage and exits with code 2.
 */
void
svc_options_parse(int argc, char **argv, ServiceOptions *opts)
{
	int64_t		pinned = -1;
	int			direct = GPU_DIRECT_AUTO;
	const char *cufile_library = NULL;

	memset(opts, 0, sizeof(*opts));
	opts->use_gpus = true;
	opts->cache_size = -1;
	opts->meta_prewarm = true;
	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "-D") == 0 && i + 1 < argc)
			opts->datadir = argv[++i];
		else if (strcmp(argv[i], "--parent-pid") == 0 && i + 1 < argc)
			opts->parent = (pid_t) atoi(argv[++i]);
		else if (strcmp(argv[i], "--no-gpu") == 0)
			opts->use_gpus = false;
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
		{
			svc_cpu_threads = atoi(argv[++i]);
			if (svc_cpu_threads < 1 || svc_cpu_threads > 256)
				usage();
		}
		else if (strcmp(argv[i], "--fatbin") == 0 && i + 1 < argc)
			gpu_fatbin_path = argv[++i];
		else if (strcmp(argv[i], "--gpu-cache-size") == 0 && i + 1 < argc)
			opts->cache_size = parse_cache_size(argv[++i]);
		else if (strcmp(argv[i], "--join-cache-size") == 0 && i + 1 < argc)
		{
			int64_t		bytes = parse_cache_size(argv[++i]);

			if (bytes < 0)
				usage();
			svc_join_cache_limit = (uint64_t) bytes;
		}
		else if (strcmp(argv[i], "--pinned-files") == 0 && i + 1 < argc)
			pinned = parse_cache_size(argv[++i]);
		else if (strcmp(argv[i], "--pinned-files-restore") == 0 && i + 1 < argc)
		{
			i++;
			if (strcmp(argv[i], "on") != 0 && strcmp(argv[i], "off") != 0)
				usage();
			file_reg_set_restore(strcmp(argv[i], "on") == 0);
		}
		else if (strcmp(argv[i], "--arrow-metadata-prewarm") == 0 && i + 1 < argc)
		{
			i++;
			if (strcmp(argv[i], "on") != 0 && strcmp(argv[i], "off") != 0)
				usage();
			opts->meta_prewarm = strcmp(argv[i], "on") == 0;
		}
		else if (strcmp(argv[i], "--gpudirect") == 0 && i + 1 < argc)
		{
			if ((direct = gpu_direct_parse(argv[++i])) < 0)
				usage();
		}
		else if (strcmp(argv[i], "--unit-buffers") == 0 && i + 1 < argc)
		{
			char	   *end;

			opts->unit_buffers = (int) strtol(argv[++i], &end, 10);
			if (end == argv[i] || *end != '\0' || opts->unit_buffers < 0 ||
				opts->unit_buffers > 256)
				usage();
		}
		else if (strcmp(argv[i], "--cufile-library") == 0 && i + 1 < argc)
			cufile_library = argv[++i];
		else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc)
		{
			const char *p = argv[++i];

			/* digits and commas, at least one digit */
			if (strspn(p, "0123456789,") != strlen(p) || strpbrk(p, "0123456789") == NULL)
				usage();
			svc_gpu_list = p;
		}
		else if (strcmp(argv[i], "--max-async-tasks") == 0 && i + 1 < argc)
		{
			svc_max_async_tasks = atoi(argv[++i]);
			if (svc_max_async_tasks < 1 || svc_max_async_tasks > 10000)
				usage();
		}
		else
			usage();
	}
	if (opts->datadir == NULL)
		usage();
	if (pinned < 0)
		pinned = (int64_t) (memory_limit() / 4);
	file_reg_set_limit(pinned > 0 ? (uint64_t) pinned : 0);
	gpu_direct_configure(direct, cufile_library);
	if (svc_cpu_threads == 0)
	{
		/* the CPUs this process may run on (taskset, a cpuset), else the online ones */
		cpu_set_t	cpus;
		long		n;

		if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0)
			n = CPU_COUNT(&cpus);
		else
			n = sysconf(_SC_NPROCESSORS_ONLN);

		svc_cpu_threads = n < 1 ? 1 : (n > 256 ? 256 : (int) n);
	}
}
