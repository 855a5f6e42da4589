/*-------------------------------------------------------------------------
 *
 * gpu_multi.c
 *		GpuPreAgg over Arrow files on every GPU of the service (gpu_agg_run,
 *		service.h): the run's record batches are spread over the devices,
 *		each device aggregates its share with the one GPU input path of
 *		gpu_agg.c (its own slots, I/O threads, column cache and copies of the
 *		join tables) into a table of its own, on a thread of its own, and the
 *		devices' tables are merged into the run's.
 *
 * Which device reads a record batch depends only on the file's identity and
 * the batch number (gmulti_owner), never on the run: every run over a file
 * sends a batch to the same device, so that each device's column cache holds
 * its own batches and no batch is cached twice.  Batches go in groups of
 * GMULTI_STRIDE consecutive ones, which keeps a device's launches over
 * neighbouring batches.
 *
 * With one GPU (or a run of one batch) the run goes to one device, the
 * devices taken in turn by successive runs, as before.  The matched flags of
 * a RIGHT or FULL join are the run's: each device ORs its own into them
 * (gpu_agg.c, gagg_matched_back), and agg.c emits the unmatched inner rows
 * once the devices are done.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpu_agg_int.h"
#include "gpu_driver.h"
#include "service.h"

#define GMULTI_STRIDE	8		/* consecutive batches that go to one device */

/* one device's share of a run */
typedef struct GmultiPart
{
	const ServiceGpu *gpu;
	uint32_t	device;
	AggRun		run;			/* the run's, with only this device's batches */
	XpuAggTable *table;
	XpuError	err;
	int			werr;
	char		msg[256];
	int			rc;
	pthread_t	thread;
	bool		started;
	bool		fill;			/* a read-ahead: no table, no kernel */
} GmultiPart;

/* the device (of n) that reads batch b of the file fd refers to */
static uint32_t
gmulti_owner(const struct stat *st, int32_t b, uint32_t n)
{
	uint64_t	h = (uint64_t) st->st_ino * 0x9E3779B97F4A7C15ULL ^ (uint64_t) st->st_dev;

	h ^= h >> 31;
	return (uint32_t) ((h + (uint64_t) (b / GMULTI_STRIDE)) % n);
}

/* gmulti_main: a device's share, on its own thread (or the caller's) */
static void *
gmulti_main(void *arg)
{
	GmultiPart *p = arg;
	GpuAggOptions opts = {0, p->device};
	GaggTableSink ts = {p->table, &p->run.spec};

	if (p->fill)
		p->rc = gpu_agg_fill_device(p->gpu, &p->run, p->device, &p->werr, p->msg,
									sizeof(p->msg));
	else
		p->rc = gpu_agg_execute(p->gpu, &p->run, &opts, gagg_fold_into_table, &ts, &p->err,
								&p->werr, p->msg, sizeof(p->msg));
	return NULL;
}

/*
 * gmulti_split: parts[d].run made the run with only device d's batches
 * (of n devices); false when out of memory
 */
static bool
gmulti_split(const AggRun *run, GmultiPart *parts, uint32_t n)
{
	for (uint32_t d = 0; d < n; d++)
	{
		parts[d].run = *run;
		parts[d].run.rows_in = parts[d].run.rows_passed = parts[d].run.batches = 0;
		parts[d].run.bytes_read = parts[d].run.bytes_cached = 0;
		parts[d].run.bytes_mapped = parts[d].run.bytes_to_pin = 0;
		parts[d].run.bytes_direct = 0;
		parts[d].run.io_us = parts[d].run.exec_us = 0;
		parts[d].run.devices_used = 0;
		memset(parts[d].run.devices, 0, sizeof(parts[d].run.devices));
		memset(&parts[d].run.join_rows, 0, sizeof(parts[d].run.join_rows));
		parts[d].run.files = calloc(run->n_files > 0 ? run->n_files : 1, sizeof(AggRunFile));
		if (parts[d].run.files == NULL)
			return false;
	}
	for (uint32_t fi = 0; fi < run->n_files; fi++)
	{
		const AggRunFile *f = &run->files[fi];
		struct stat st;

		memset(&st, 0, sizeof(st));
		if (fstat(f->fd, &st) != 0)
			memset(&st, 0, sizeof(st));
		for (uint32_t d = 0; d < n; d++)
		{
			int32_t    *b = malloc((f->n_batches > 0 ? f->n_batches : 1) * sizeof(int32_t));

			if (b == NULL)
				return false;
			parts[d].run.files[fi] = *f;
			parts[d].run.files[fi].batches = b;
			parts[d].run.files[fi].n_batches = 0;
		}
		for (uint32_t bi = 0; bi < f->n_batches; bi++)
		{
			AggRunFile *pf = &parts[gmulti_owner(&st, f->batches[bi], n)].run.files[fi];

			((int32_t *) pf->batches)[pf->n_batches++] = f->batches[bi];
		}
	}
	return true;
}

/* gmulti_free: what gmulti_split and the parts' tables took */
static void
gmulti_free(GmultiPart *parts, uint32_t n, const AggRun *run)
{
	for (uint32_t d = 0; d < n; d++)
	{
		for (uint32_t fi = 0; parts[d].run.files != NULL && fi < run->n_files; fi++)
			if (parts[d].run.files[fi].batches != run->files[fi].batches)
				free((void *) parts[d].run.files[fi].batches);
		free(parts[d].run.files);
		if (parts[d].table != NULL)
			xpu_agg_table_free(parts[d].table);
	}
	free(parts);
}

/*
 * gmulti_run: the run on devices 0 .. n-1 at once, each device's groups
 * merged into out (out NULL: the read-ahead, gpu_agg_fill); returns as
 * gpu_agg_run does, the first device's failure (in device order) when any
 * fails
 */
static int
gmulti_run(const ServiceGpu *gpu, AggRun *run, uint32_t n, XpuAggTable *out, XpuError *err,
		   int *werr, char *msg, size_t msglen)
{
	GmultiPart *parts = calloc(n, sizeof(GmultiPart));
	int			rc = 0;

	if (parts == NULL || !gmulti_split(run, parts, n))
	{
		if (parts != NULL)
			gmulti_free(parts, n, run);
		*werr = WARP_ERR_OUT_OF_MEMORY;
		snprintf(msg, msglen, "out of memory");
		return -1;
	}
	for (uint32_t d = 0; d < n; d++)
	{
		parts[d].gpu = gpu;
		parts[d].device = d;
		parts[d].fill = out == NULL;
		if (out != NULL &&
			(parts[d].table = xpu_agg_table_create(run->prog, &run->spec, err)) == NULL)
		{
			gmulti_free(parts, n, run);
			*werr = WARP_ERR_OUT_OF_MEMORY;
			snprintf(msg, msglen, "out of memory");
			return -1;
		}
	}
	/* devices 1.. on threads of their own (one that cannot start runs here) */
	for (uint32_t d = 1; d < n; d++)
		parts[d].started = pthread_create(&parts[d].thread, NULL, gmulti_main, &parts[d]) == 0;
	gmulti_main(&parts[0]);
	for (uint32_t d = 1; d < n; d++)
	{
		if (parts[d].started)
			pthread_join(parts[d].thread, NULL);
		else
			gmulti_main(&parts[d]);
	}
	for (uint32_t d = 0; d < n; d++)
	{
		AggRun	   *pr = &parts[d].run;

		GAGG_ADD(run->rows_in, pr->rows_in);
		GAGG_ADD(run->rows_passed, pr->rows_passed);
		GAGG_ADD(run->batches, pr->batches);
		GAGG_ADD(run->bytes_read, pr->bytes_read);
		GAGG_ADD(run->bytes_cached, pr->bytes_cached);
		GAGG_ADD(run->bytes_mapped, pr->bytes_mapped);
		GAGG_ADD(run->bytes_to_pin, pr->bytes_to_pin);
		GAGG_ADD(run->bytes_direct, pr->bytes_direct);
		GAGG_ADD(run->io_us, pr->io_us);
		GAGG_ADD(run->exec_us, pr->exec_us);
		for (int j = 0; j < WARP_JOIN_DEPTHS; j++)
			GAGG_ADD(run->join_rows.in[j], pr->join_rows.in[j]);
		for (int j = 0; j < WARP_REPORT_DEVICES; j++)
			if (pr->devices_used & (1u << j))
				gagg_device_add(run, &pr->devices[j]);
		if (rc == 0 && parts[d].rc != 0)
		{
			rc = parts[d].rc;
			*err = parts[d].err;
			*werr = parts[d].werr;
			snprintf(msg, msglen, "%s", parts[d].msg);
		}
	}
	for (uint32_t d = 0; d < n && rc == 0 && out != NULL; d++)
		if (xpu_agg_table_merge(out, parts[d].table, err) != XPU_OK)
			rc = err->code;
	gmulti_free(parts, n, run);
	return rc;
}

/* the record batches of run, over its files */
static uint32_t
gmulti_batches(const AggRun *run)
{
	uint32_t	n = 0;

	for (uint32_t fi = 0; fi < run->n_files; fi++)
		n += run->files[fi].n_batches;
	return n;
}

/* see service.h */
int
gpu_agg_run(const ServiceGpu *gpu, AggRun *run, struct XpuAggTable *out, XpuError *err,
			int *werr, char *msg, size_t msglen)
{
	static uint32_t next_device;
	GpuAggOptions opts;
	GaggTableSink ts = {out, &run->spec};

	if (gpu->n_devices > 1 && gmulti_batches(run) > 1)
		return gmulti_run(gpu, run, gpu->n_devices, out, err, werr, msg, msglen);
	opts.initial_groups = 0;
	opts.device = __atomic_fetch_add(&next_device, 1, __ATOMIC_RELAXED);
	return gpu_agg_execute(gpu, run, &opts, gagg_fold_into_table, &ts, err, werr, msg, msglen);
}

/* see service.h */
int
gpu_agg_fill(const ServiceGpu *gpu, AggRun *run, int *werr, char *msg, size_t msglen)
{
	XpuError	err = {0};

	if (gpu->n_devices > 1 && gmulti_batches(run) > 1)
		return gmulti_run(gpu, run, gpu->n_devices, NULL, &err, werr, msg, msglen);
	if (gpu->n_devices != 1)
		return 0;
	return gpu_agg_fill_device(gpu, run, 0, werr, msg, msglen);
}
