/*-------------------------------------------------------------------------
 *
 * executor.h
 *		What the engine's CustomScan nodes (GpuScan, GpuPreAgg) share at plan
 *		and run time (executor.c): the program carried in the plan, the run
 *		in the service, the request's parts, the blocks of rows of its
 *		replies and EXPLAIN's common lines.  Their one executor is
 *		engine_scan.c (engine_scan.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_EXECUTOR_H
#define PG_WARP_EXECUTOR_H

#include "lib/stringinfo.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"

#include "engine/engine.h"
#include "xpu/xpu_program.h"

struct ExplainState;

/*
 * A node's run in the service: its connection (-1: none) and whether the
 * replies of a request are still coming.  engine_run_init registers the
 * close with the query's memory context, so that a query that ends early
 * (an error, a LIMIT) cancels the run.
 */
typedef struct EngineRun
{
	int			conn;
	bool		active;
} EngineRun;

/* in executor.c */
extern double engine_parallel_divisor(int workers);
extern Node *engine_plan_program(const XpuProgram *prog, const EngineColumns *ec);
extern XpuProgram *engine_exec_program(Node *planned, const EngineColumns *now,
									   const char **stale);
extern XpuProgram *engine_pass_all_program(void);
extern void engine_run_init(EngineRun *run, EState *estate);
extern void engine_run_close(EngineRun *run);
extern void engine_run_keep(EngineRun *run);
extern void engine_put(StringInfo buf, const void *data, size_t len, int align);
extern void engine_put_file(StringInfo buf, const ArrowEngineFile *ef, const int32 *batches,
							int n_batches, const int *fields, int n_cols);
extern bool engine_request_end(StringInfo buf);
extern void engine_rows_block(const char *msg, uint32 len, const WarpScanResult *h,
							  ArrowArray *arrays, const char *who);
extern void engine_explain_engine(struct ExplainState *es, bool ran, uint32 engine);
extern void engine_explain_filter(struct ExplainState *es, List *quals, List *ctx,
								  bool prefix);
extern void engine_explain_source(struct ExplainState *es, const ArrowEngineSource *src);
extern void engine_explain_cufile(struct ExplainState *es, uint64 direct, uint32 direct_mode);
extern void engine_explain_heap_pinned(struct ExplainState *es, uint64 mapped, uint64 to_pin);
extern void engine_explain_data_path(struct ExplainState *es, uint64 bytes_read,
									 int64 cached, uint64 mapped, uint64 to_pin,
									 uint64 io_us, uint64 direct, uint32 direct_mode);
extern void engine_explain_devices(struct ExplainState *es, uint32 n,
								   const WarpDeviceWork *w);
extern void engine_explain_times(struct ExplainState *es, uint64 io_us, uint64 exec_us,
								 uint32 threads);

#endif							/* PG_WARP_EXECUTOR_H */
