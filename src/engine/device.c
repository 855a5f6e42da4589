/*-------------------------------------------------------------------------
 *
 * device.c
 *		GPU discovery (pgwarp.gpu_devices()) and the self-test of the
 *		installed GPU code on every GPU (pgwarp.gpu_selftest()), both asked
 *		of the warp service (DEVICES, xpu/protocol.h), and the report of an
 *		error that device code recorded.
 *
 * The backend never loads the CUDA driver: the service owns every GPU (one
 * context per device, created when it starts, src/service/gpu.c) and its
 * loader is the only one.  What the service found is one of three:
 *
 *	ready	the driver works: gpu_devices() lists the devices;
 *	absent	no GPU (no driver, its stub, no device, the service started with
 *			--no-gpu): not an error, pg_warp uses its CPU engine.
 *			gpu_devices() returns no rows, gpu_selftest() no rows and a
 *			NOTICE;
 *	failed	a driver is installed but does not work.  gpu_devices() reports
 *			it as a WARNING and returns no rows (the CPU engine still works);
 *			gpu_selftest() raises an ERROR, since a self-test exists to
 *			expose exactly this.
 *
 * A service that cannot be asked (pg_warp not preloaded, the service
 * restarting) is a WARNING and no rows for gpu_devices(), the service's
 * error for gpu_selftest().
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <sys/stat.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/tuplestore.h"

#include "pg_warp.h"
#include "engine/engine.h"

/* pg_warp.fatbin_path: the GPU code to load; "$libdir" is expanded */
char	   *pg_warp_fatbin_path = NULL;

/*
 * pg_warp_gpu_init
 *		Called from _PG_init: defines the GUCs of this file.
 */
void
pg_warp_gpu_init(void)
{
	DefineCustomStringVariable("pg_warp.fatbin_path",
							   "Path of the GPU code (fatbin) that pg_warp loads.",
							   "A leading \"$libdir\" stands for PostgreSQL's package library directory.",
							   &pg_warp_fatbin_path,
							   "$libdir/pg_warp.fatbin",
							   PGC_SUSET,
							   0,
							   NULL, NULL, NULL);
}

/*
 * pg_warp_report_xpu_error
 *		Raises the error that device code recorded in *err (see XpuError);
 *		returns if it recorded none.  The error code selects the SQLSTATE;
 *		the source position goes to errcontext.
 */
void
pg_warp_report_xpu_error(const XpuError *err)
{
	int			sqlstate;
	char		file[XPU_ERROR_FILE_LEN];
	char		message[XPU_ERROR_MESSAGE_LEN];

	if (err->code == XPU_OK)
		return;

	/*
	 * No default case: -Wswitch then flags a new XpuErrorCode without a
	 * SQLSTATE.  A code the host does not know (a damaged buffer) stays an
	 * internal error.
	 */
	sqlstate = ERRCODE_INTERNAL_ERROR;
	switch ((XpuErrorCode) err->code)
	{
		case XPU_OK:
			break;
		case XPU_ERR_INTERNAL:
		case XPU_ERR_INVALID_ARGUMENT:
		case XPU_ERR_BAD_PROGRAM:
			/* bugs in pg_warp, not in the query */
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
		case XPU_ERR_FALLBACK:
			/* the caller re-evaluates the rows in PostgreSQL: never reported */
			sqlstate = ERRCODE_INTERNAL_ERROR;
			break;
		case XPU_ERR_OUT_OF_RANGE:
			sqlstate = ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
			break;
		case XPU_ERR_DIVISION_BY_ZERO:
			sqlstate = ERRCODE_DIVISION_BY_ZERO;
			break;
		case XPU_ERR_DATETIME_OUT_OF_RANGE:
			sqlstate = ERRCODE_DATETIME_VALUE_OUT_OF_RANGE;
			break;
		case XPU_ERR_SUBSTRING:
			sqlstate = ERRCODE_SUBSTRING_ERROR;
			break;
	}
	/* the buffers came from the device: do not trust their terminators */
	memcpy(file, err->file, sizeof(file));
	file[sizeof(file) - 1] = '\0';
	memcpy(message, err->message, sizeof(message));
	message[sizeof(message) - 1] = '\0';

	ereport(ERROR,
			(errcode(sqlstate),
			 errmsg_internal("%s", message),
			 errcontext("GPU code at %s:%d (error code %d)",
						file, err->line, err->code)));
}

/*
 * ask_devices_or_warn
 *		The service's DEVICES reply; a service that cannot be asked is a
 *		WARNING and NULL (a cancel stays an error).
 */
static WarpDevices *
ask_devices_or_warn(void)
{
	MemoryContext cxt = CurrentMemoryContext;
	WarpDevices *reply = NULL;

	PG_TRY();
	{
		reply = service_devices(NULL);
	}
	PG_CATCH();
	{
		ErrorData  *e = service_caught(cxt);

		ereport(WARNING,
				(errcode(e->sqlerrcode),
				 errmsg("could not ask the pg_warp service for its GPUs: %s", e->message),
				 e->detail ? errdetail("%s", e->detail) : 0,
				 e->hint ? errhint("%s", e->hint) : 0));
		FreeErrorData(e);
	}
	PG_END_TRY();
	return reply;
}

/* the service's reason for having no GPU, NUL-terminated */
static const char *
devices_detail(WarpDevices *d)
{
	d->detail[sizeof(d->detail) - 1] = '\0';
	return d->detail;
}

/* report_failed_driver: the service's driver does not work, at elevel */
static void
report_failed_driver(WarpDevices *d, int elevel)
{
	ereport(elevel,
			(errcode(ERRCODE_SYSTEM_ERROR),
			 errmsg("could not initialize the CUDA driver"),
			 errdetail("The pg_warp service reports: %s", devices_detail(d)),
			 errhint("pg_warp uses its CPU engine until the NVIDIA driver works.")));
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_devices);

/*
 * pgwarp.gpu_devices()
 *		One row per GPU of the warp service: the CUDA device index, name,
 *		memory, multiprocessors, compute capability ("9.0") and PCI bus id
 *		("0000:1b:00.0", lower case).  No rows where there is no driver or
 *		no device; a WARNING and no rows where the driver is installed but
 *		does not work, or where the service cannot be asked.
 */
Datum
pg_warp_gpu_devices(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarpDevices *devs;
	WarpDeviceDetail *d;

	InitMaterializedSRF(fcinfo, 0);
	devs = ask_devices_or_warn();
	if (devs == NULL)
		return (Datum) 0;
	if (devs->driver == WARP_DRIVER_FAILED)
		report_failed_driver(devs, WARNING);
	d = (WarpDeviceDetail *) (devs + 1);
	for (uint32 i = 0; i < devs->n_devices; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false};

		d[i].info.name[sizeof(d[i].info.name) - 1] = '\0';
		d[i].pci_bus_id[sizeof(d[i].pci_bus_id) - 1] = '\0';
		for (char *c = d[i].pci_bus_id; *c != '\0'; c++)
			*c = tolower((unsigned char) *c);
		values[0] = Int32GetDatum((int32) d[i].info.index);
		values[1] = CStringGetTextDatum(d[i].info.name);
		values[2] = Int64GetDatum((int64) d[i].info.total_memory);
		values[3] = Int32GetDatum((int32) d[i].info.multiprocessors);
		values[4] = CStringGetTextDatum(psprintf("%u.%u", d[i].info.cc_major,
												 d[i].info.cc_minor));
		values[5] = CStringGetTextDatum(d[i].pci_bus_id);
		nulls[5] = d[i].pci_bus_id[0] == '\0';
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * fatbin_path
 *		pg_warp.fatbin_path with a leading "$libdir" replaced by the package
 *		library directory; palloc'd.
 */
static char *
fatbin_path(void)
{
	const char *path = pg_warp_fatbin_path;
	size_t		len = strlen("$libdir");

	if (strncmp(path, "$libdir", len) == 0 &&
		(path[len] == '/' || path[len] == '\0'))
		return psprintf("%s%s", pkglib_path, path + len);
	return pstrdup(path);
}

/*
 * check_fatbin
 *		Raises a user-facing ERROR unless path is a readable regular file of
 *		a valid size: what the service will load for the self-test.
 */
static void
check_fatbin(const char *path)
{
	FILE	   *file;
	struct stat st;

	file = AllocateFile(path, PG_BINARY_R);
	if (file == NULL)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open GPU code file \"%s\": %m", path),
				 errhint("Install pg_warp from a build made where nvcc is on the PATH, or point pg_warp.fatbin_path to its pg_warp.fatbin.")));
	if (fstat(fileno(file), &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not stat GPU code file \"%s\": %m", path)));
	if (!S_ISREG(st.st_mode) || st.st_size <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("GPU code file \"%s\" is not a regular file of a valid size",
						path)));
	FreeFile(file);
}

PG_FUNCTION_INFO_V1(pg_warp_gpu_selftest);

/*
 * pgwarp.gpu_selftest()
 *		For each GPU of the service: loads the installed fatbin
 *		(pg_warp.fatbin_path) in the device's context, runs the self-test
 *		kernel over about a million elements and checks the result.  One
 *		row per device with result "ok" or a description of the wrong
 *		element, and elapsed_ms, the service's wall time of the whole test
 *		of that device (module load, copies, kernel, check).
 *
 *		With no GPU it returns no rows and raises a NOTICE.  A broken
 *		driver, a missing fatbin, a failing driver call or a service that
 *		cannot be asked raise an ERROR; the service releases every device
 *		resource of the test on every path.
 */
Datum
pg_warp_gpu_selftest(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarpDevices *devs;
	WarpDeviceDetail *d;
	char	   *path;

	InitMaterializedSRF(fcinfo, 0);
	devs = service_devices(NULL);
	if (devs->driver == WARP_DRIVER_FAILED)
		report_failed_driver(devs, ERROR);
	if (devs->n_devices == 0)
	{
		ereport(NOTICE,
				(errmsg("no GPU found: pg_warp uses its CPU engine"),
				 errdetail("%s", devs->detail[0] != '\0' ? devices_detail(devs) :
						   "The CUDA driver reports no device.")));
		return (Datum) 0;
	}

	path = fatbin_path();
	check_fatbin(path);
	devs = service_devices(path);
	d = (WarpDeviceDetail *) (devs + 1);
	for (uint32 i = 0; i < devs->n_devices; i++)
	{
		Datum		values[4];
		bool		nulls[4] = {false};

		d[i].info.name[sizeof(d[i].info.name) - 1] = '\0';
		d[i].result[sizeof(d[i].result) - 1] = '\0';
		if (d[i].selftest != WARP_SELFTEST_RAN)
			ereport(ERROR,
					(errcode(ERRCODE_SYSTEM_ERROR),
					 errmsg("GPU self-test failed on device %u (%s)",
							d[i].info.index, d[i].info.name),
					 errdetail("%s", d[i].result)));
		values[0] = Int32GetDatum((int32) d[i].info.index);
		values[1] = CStringGetTextDatum(d[i].info.name);
		values[2] = CStringGetTextDatum(d[i].result);
		values[3] = Float8GetDatum(d[i].selftest_us / 1000.0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pfree(path);
	return (Datum) 0;
}
