/*-------------------------------------------------------------------------
 *
 * executor.c
 *		What the engine's CustomScan nodes share (executor.h): GpuScan
 *		(gpuscan.c) and GpuPreAgg (gpu_preagg.c) plan, run and explain their
 *		work in the service through these pieces; their one executor
 *		(engine_scan.c) runs them.
 *
 * The program in the plan.  A node's xPU program is compiled once, when
 * the plan is made, and kept in the plan's custom_private
 * (engine_plan_program): a bytea constant, so that it is copied with the
 * plan, cached with a prepared statement and sent to parallel workers as
 * the rest of the plan is.  Beside it the plan keeps what the program was
 * compiled against and PostgreSQL's plan cache does not watch: the columns
 * of the Arrow table's files (their layouts, as arrow_fdw found them) and
 * the session's UTC offset where the program computes with it.  At run
 * time engine_exec_program hands out the program, or says why it no longer
 * fits (the files were replaced by others of another layout, the session's
 * time zone changed): the node then leaves the program's work to
 * PostgreSQL, as it does for any other fallback; nothing is compiled again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "commands/explain.h"
#include "nodes/makefuncs.h"
#include "nodes/value.h"
#include "pgtime.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/executor.h"

/*
 * engine_parallel_divisor: the share of a parallel scan's rows one
 * participant reads, inverted, as PostgreSQL's cost model reckons it
 * (costsize.c: the leader helps less the more workers there are)
 */
double
engine_parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation && 1.0 - 0.3 * workers > 0)
		divisor += 1.0 - 0.3 * workers;
	return divisor;
}

/* a bytea constant of len bytes at data */
static Const *
bytea_const(const void *data, Size len)
{
	bytea	   *b = palloc(VARHDRSZ + len);

	SET_VARSIZE(b, VARHDRSZ + len);
	memcpy(VARDATA(b), data, len);
	return makeConst(BYTEAOID, -1, InvalidOid, -1, PointerGetDatum(b), false, false);
}

/*
 * engine_plan_program: the custom_private item that carries prog (a program
 * just compiled: its time zone dependence is the last compilation's; NULL:
 * none compiled, and engine_exec_program will say so) and, for an Arrow
 * table, the columns ec it was compiled against (NULL: a heap table, whose
 * layout the plan cache watches).
 */
Node *
engine_plan_program(const XpuProgram *prog, const EngineColumns *ec)
{
	int64		tz = 0;
	bool		used_tz = codegen_used_timezone(&tz);
	Node	   *cols;

	if (ec != NULL)
		cols = (Node *) bytea_const(ec->cols, sizeof(ArrowScanColumn) * ec->n_cols);
	else
		cols = (Node *) makeNullConst(BYTEAOID, -1, InvalidOid);
	return (Node *) list_make4(prog ? (Node *) bytea_const(prog, prog->total_len) :
							   (Node *) makeNullConst(BYTEAOID, -1, InvalidOid), cols,
							   makeInteger(prog && used_tz ? 1 : 0), makeInteger((int) tz));
}

/* are the columns the plan was compiled against (bytea b) the columns now? */
static bool
columns_same(bytea *b, const EngineColumns *now)
{
	Size		len = VARSIZE_ANY_EXHDR(b);
	ArrowScanColumn then;

	if (len != sizeof(ArrowScanColumn) * now->n_cols)
		return false;
	for (int i = 0; i < now->n_cols; i++)
	{
		const ArrowScanColumn *c = &now->cols[i];

		memcpy(&then, VARDATA_ANY(b) + sizeof(ArrowScanColumn) * i, sizeof(then));
		if (then.attno != c->attno || then.typid != c->typid || then.plain != c->plain ||
			then.dict_text != c->dict_text ||
			then.checked != c->checked || then.may_fail != c->may_fail ||
			then.max_chars != c->max_chars || then.arrow_id != c->arrow_id ||
			then.unit != c->unit || then.scale != c->scale)
			return false;
	}
	return true;
}

/*
 * engine_exec_program: the program of a plan's engine_plan_program item
 * (palloc'ed, 16-byte aligned, as the protocol sends it), or NULL with
 * *stale saying why it no longer fits: the Arrow table's columns `now`
 * (NULL for a heap table) differ from the plan's, or the session's UTC
 * offset from the one the program holds.
 */
XpuProgram *
engine_exec_program(Node *planned, const EngineColumns *now, const char **stale)
{
	List	   *item = castNode(List, planned);
	Const	   *pc = linitial_node(Const, item);
	Const	   *cc = lsecond_node(Const, item);
	bytea	   *code;
	Size		len;
	XpuProgram *prog;
	long int	gmtoff;

	if (pc->constisnull)
	{
		*stale = "the engine's expressions did not compile when the plan was made";
		return NULL;
	}
	code = DatumGetByteaPP(pc->constvalue);
	len = VARSIZE_ANY_EXHDR(code);

	if (intVal(lthird(item)) != 0 &&
		(session_timezone == NULL || !pg_get_timezone_offset(session_timezone, &gmtoff) ||
		 -(int64) gmtoff != (int64) intVal(lfourth(item))))
	{
		*stale = "the time zone is not the one the plan was made under";
		return NULL;
	}
	if (now != NULL && (cc->constisnull || !columns_same(DatumGetByteaPP(cc->constvalue), now)))
	{
		*stale = "the table's files changed since the plan was made";
		return NULL;
	}
	if (len < sizeof(XpuProgram))
		elog(ERROR, "pg_warp: the plan's program is truncated");
	prog = (XpuProgram *) TYPEALIGN(16, (uintptr_t) palloc(len + 15));
	memcpy(prog, VARDATA_ANY(code), len);
	if (prog->magic != XPU_PROGRAM_MAGIC || prog->total_len != len)
		elog(ERROR, "pg_warp: the plan's program is damaged");
	*stale = NULL;
	return prog;
}

/*
 * engine_pass_all_program: a program that reads no column and passes every
 * row (palloc'ed, 16-byte aligned): a scan whose program no longer fits
 * still lets the service read its rows, and PostgreSQL filters them.
 */
XpuProgram *
engine_pass_all_program(void)
{
	CodegenScan scan = {0};
	XpuProgram *built = codegen_proj_program(&scan, NIL, NIL);
	XpuProgram *prog;

	if (built == NULL)
		elog(ERROR, "pg_warp: could not build a program that passes every row");
	prog = (XpuProgram *) TYPEALIGN(16, (uintptr_t) palloc(built->total_len + 15));
	memcpy(prog, built, built->total_len);
	free(built);
	return prog;
}

/* the query's memory context reset callback: the run's end */
static void
run_close_callback(void *arg)
{
	engine_run_close((EngineRun *) arg);
}

/* engine_run_init: no connection yet; closed when the query ends */
void
engine_run_init(EngineRun *run, EState *estate)
{
	MemoryContextCallback *cb = MemoryContextAlloc(estate->es_query_cxt, sizeof(*cb));

	run->conn = -1;
	run->active = false;
	cb->func = run_close_callback;
	cb->arg = run;
	MemoryContextRegisterResetCallback(estate->es_query_cxt, cb);
}

/* engine_run_close: closes the connection (a run not finished is cancelled) */
void
engine_run_close(EngineRun *run)
{
	if (run->conn >= 0)
		service_run_end(run->conn);
	run->conn = -1;
	run->active = false;
}

/*
 * engine_run_keep: as engine_run_close for a run whose last reply came: its
 * connection is kept for the backend's next run (service_run_keep)
 */
void
engine_run_keep(EngineRun *run)
{
	int			fd = run->conn;

	run->conn = -1;
	engine_run_close(run);
	if (fd >= 0)
		service_run_keep(fd);
}

/* engine_put: appends len bytes at data to buf after zero padding to align */
void
engine_put(StringInfo buf, const void *data, size_t len, int align)
{
	while (buf->len % align != 0)
		appendStringInfoChar(buf, '\0');
	appendBinaryStringInfo(buf, data, (int) len);
}

/*
 * engine_put_file: a request's part for file ef (xpu/protocol.h): its
 * WarpAggFile, path, the n_batches record batches to read and the field of
 * each of the n_cols chunk columns
 */
void
engine_put_file(StringInfo buf, const ArrowEngineFile *ef, const int32 *batches,
				int n_batches, const int *fields, int n_cols)
{
	WarpAggFile wf = service_file_part(ef, (uint32) n_batches, (uint32) n_cols);

	StaticAssertStmt(sizeof(int) == sizeof(int32), "fields are sent as int32");
	engine_put(buf, &wf, sizeof(wf), 8);
	engine_put(buf, ef->path, wf.path_len, 1);
	engine_put(buf, batches, sizeof(int32) * n_batches, 8);
	engine_put(buf, fields, sizeof(int32) * n_cols, 8);
}

/*
 * engine_request_end: pads the request to its 8-byte end; false when it is
 * larger than one message of the protocol
 */
bool
engine_request_end(StringInfo buf)
{
	while (buf->len % 8 != 0)
		appendStringInfoChar(buf, '\0');
	return buf->len <= PGWARP_MAX_PAYLOAD;
}

/* a part of n bytes at the next 8-byte boundary of msg (len bytes) */
static const char *
rows_take(const char *msg, uint32 len, uint32 *off, uint64 n, const char *who)
{
	uint32		o = (uint32) TYPEALIGN(8, *off);

	if (o > len || n > len - o)
		elog(ERROR, "%s: a SCAN_RESULT from the pg_warp service is truncated", who);
	*off = o + (uint32) n;
	return msg + o;
}

/*
 * engine_rows_block: the columns of a block of rows from the service (msg,
 * len bytes, its header h: a SCAN_RESULT, xpu/protocol.h) as Arrow arrays
 * arrays[0 .. h->n_cols - 1] pointing into msg; who names the node in
 * errors.  The caller checks that h->n_cols is what it asked for.
 */
void
engine_rows_block(const char *msg, uint32 len, const WarpScanResult *h, ArrowArray *arrays,
				  const char *who)
{
	uint32		off = sizeof(WarpScanResult);
	uint64		bits = ((uint64) h->n_rows + 7) / 8;

	for (uint32 j = 0; j < h->n_cols; j++)
	{
		WarpScanColumn cs;
		ArrowArray *a = &arrays[j];

		memcpy(&cs, rows_take(msg, len, &off, sizeof(cs), who), sizeof(cs));
		memset(a, 0, sizeof(*a));
		a->length = h->n_rows;
		a->null_count = cs.null_count;
		a->validity = cs.null_count ? (const uint8 *) rows_take(msg, len, &off, bits, who) : NULL;
		if (cs.layout == WARP_SCAN_BITS)
			a->values = (const uint8 *) rows_take(msg, len, &off, bits, who);
		else if (cs.layout == WARP_SCAN_FIXED)
			a->values = (const uint8 *) rows_take(msg, len, &off,
												  (uint64) cs.width * h->n_rows, who);
		else if (cs.layout == WARP_SCAN_VAR32 || cs.layout == WARP_SCAN_VAR64)
		{
			uint64		ow = cs.layout == WARP_SCAN_VAR32 ? 4 : 8;

			a->offsets = rows_take(msg, len, &off, ow * (h->n_rows + 1), who);
			a->data = (const uint8 *) rows_take(msg, len, &off, cs.data_len, who);
			a->data_length = (int64) cs.data_len;
		}
		else
			elog(ERROR, "%s: unknown column layout %u from the pg_warp service", who, cs.layout);
	}
}

/*
 * engine_explain_engine: EXPLAIN's "Engine": the one that ran (ANALYZE of a
 * node that ran), else the one pg_warp.engine asks for
 */
void
engine_explain_engine(ExplainState *es, bool ran, uint32 engine)
{
	if (es->analyze && ran)
		ExplainPropertyText("Engine", engine == WARP_ENGINE_GPU ? "GPU" : "CPU", es);
	else
		ExplainPropertyText("Engine", pg_warp_engine == WARP_ENGINE_GPU ? "GPU" :
							pg_warp_engine == WARP_ENGINE_CPU ? "CPU" : "auto", es);
}

/*
 * engine_explain_times: EXPLAIN ANALYZE's times of a run in the service
 * (microseconds) and its threads (0: not known)
 */
void
engine_explain_times(ExplainState *es, uint64 io_us, uint64 exec_us, uint32 threads)
{
	ExplainPropertyFloat("I/O Time", "ms", io_us / 1000.0, 3, es);
	ExplainPropertyFloat("Engine Time", "ms", exec_us / 1000.0, 3, es);
	if (threads > 0)
		ExplainPropertyInteger("Engine Threads", NULL, threads, es);
}

/* the words for a run's cuFile mode (WARP_CUFILE_*) */
static const char *
engine_cufile_mode(uint32 direct_mode)
{
	return direct_mode == WARP_CUFILE_GDS ? "GPUDirect Storage" :
		direct_mode == WARP_CUFILE_COMPAT ? "compatibility mode" : "none";
}

/*
 * engine_explain_cufile: the bytes a GPU run read with cuFile and its mode
 * (WARP_CUFILE_*), for a heap run (the units the service read; its Data
 * Path is the heap source's); text: a line only when it read any
 */
void
engine_explain_cufile(ExplainState *es, uint64 direct, uint32 direct_mode)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		if (direct > 0)
			ExplainPropertyText("Read With cuFile",
								psprintf(UINT64_FORMAT " kB (%s)", (direct + 1023) / 1024,
										 engine_cufile_mode(direct_mode)), es);
		return;
	}
	ExplainPropertyInteger("Bytes Read With cuFile", "bytes", (int64) direct, es);
	ExplainPropertyText("cuFile Mode", engine_cufile_mode(direct_mode), es);
}

/*
 * engine_explain_heap_pinned: EXPLAIN ANALYZE's bytes of heap units a GPU
 * run copied from the segment files' registered page-cache pages, and the
 * file pages it queued to be registered for later runs (service/gpu_heap.c,
 * "Units from registered pages").  Text: one line, when either is nonzero.
 */
void
engine_explain_heap_pinned(ExplainState *es, uint64 mapped, uint64 to_pin)
{
	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		if (mapped > 0 || to_pin > 0)
			ExplainPropertyText("Pinned File Pages",
								psprintf(UINT64_FORMAT " kB copied (queued to be pinned: "
										 UINT64_FORMAT " kB)", (mapped + 1023) / 1024,
										 (to_pin + 1023) / 1024), es);
		return;
	}
	ExplainPropertyInteger("Bytes From Pinned File Pages", "bytes", (int64) mapped, es);
	ExplainPropertyInteger("File Pages Queued To Pin", "bytes", (int64) to_pin, es);
}

/*
 * engine_explain_data_path: EXPLAIN ANALYZE's ways a GPU run's referenced
 * bytes reached the GPU: from the GPU column cache (cached; -1 when the
 * run does not say), copied from the files' pinned page-cache pages
 * (mapped), read with cuFile straight into GPU memory (direct, in
 * direct_mode: WARP_CUFILE_*), or read with pread into pinned buffers and
 * copied from there (the rest of bytes_read), with the rate of the file
 * bytes over the run's I/O time (io_us: the time its launches spent on
 * their reads, summed over its GPUs); and the file pages this run queued
 * to be pinned (registered by the service in the background, for later
 * runs; service/file_reg.c).  Text: one line.
 */
void
engine_explain_data_path(ExplainState *es, uint64 bytes_read, int64 cached, uint64 mapped,
						 uint64 to_pin, uint64 io_us, uint64 direct, uint32 direct_mode)
{
	uint64		pread = bytes_read > mapped + direct ? bytes_read - mapped - direct : 0;
	double		gb_per_s = bytes_read > 0 && io_us > 0 ? (double) bytes_read / (io_us * 1000.0) : 0;

	if (es->format == EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData s;

		initStringInfo(&s);
		if (cached >= 0)
			appendStringInfo(&s, "GPU cache " INT64_FORMAT " kB, ", (cached + 1023) / 1024);
		appendStringInfo(&s, "pinned file pages " UINT64_FORMAT " kB, pread " UINT64_FORMAT " kB",
						 (mapped + 1023) / 1024, (pread + 1023) / 1024);
		if (direct > 0)
			appendStringInfo(&s, ", cuFile (%s) " UINT64_FORMAT " kB",
							 engine_cufile_mode(direct_mode), (direct + 1023) / 1024);
		if (gb_per_s > 0)
			appendStringInfo(&s, "; files at %.2f GB/s of I/O Time", gb_per_s);
		if (to_pin > 0)
			appendStringInfo(&s, " (queued to be pinned: " UINT64_FORMAT " kB)",
							 (to_pin + 1023) / 1024);
		ExplainPropertyText("Data Path", s.data, es);
		pfree(s.data);
		return;
	}
	ExplainPropertyInteger("Bytes From Pinned File Pages", "bytes", (int64) mapped, es);
	ExplainPropertyInteger("Bytes Read With pread", "bytes", (int64) pread, es);
	engine_explain_cufile(es, direct, direct_mode);
	ExplainPropertyFloat("File Read Rate", "GB/s", gb_per_s, 3, es);
	ExplainPropertyInteger("File Pages Queued To Pin", "bytes", (int64) to_pin, es);
}

/*
 * engine_explain_devices: EXPLAIN ANALYZE's share of each GPU that ran the
 * run (WarpDeviceWork): one property per device, "GPU n"
 */
void
engine_explain_devices(ExplainState *es, uint32 n, const WarpDeviceWork *w)
{
	for (uint32 i = 0; i < n && i < WARP_REPORT_DEVICES; i++)
	{
		char		label[32];

		snprintf(label, sizeof(label), "GPU %u", w[i].device);
		ExplainPropertyText(label, psprintf(UINT64_FORMAT " batches, " UINT64_FORMAT
											" rows, kernels %.3f ms; setup %.3f ms, "
											"batches %.3f ms, end %.3f ms (groups read "
											"back %.3f ms)",
											w[i].batches, w[i].rows_in,
											w[i].exec_us / 1000.0, w[i].setup_us / 1000.0,
											w[i].run_us / 1000.0, w[i].end_us / 1000.0,
											w[i].drain_us / 1000.0), es);
	}
}

/*
 * engine_explain_filter: EXPLAIN's "Engine Filter": the quals the engine
 * evaluates (none: no line), deparsed in ctx (prefix: with the relations'
 * names)
 */
void
engine_explain_filter(ExplainState *es, List *quals, List *ctx, bool prefix)
{
	if (quals != NIL)
		ExplainPropertyText("Engine Filter",
							deparse_expression((Node *) make_ands_explicit(quals), ctx,
											   prefix, false), es);
}

/* engine_explain_source: EXPLAIN's lines of an Arrow table read by the engine */
void
engine_explain_source(ExplainState *es, const ArrowEngineSource *src)
{
	ExplainPropertyInteger("Arrow Files", NULL, src->n_files, es);
	ExplainPropertyInteger("Record Batches", NULL,
						   src->batches_total - src->batches_skipped, es);
	ExplainPropertyInteger("Batches Skipped by Statistics", NULL, src->batches_skipped, es);
}
