/*-------------------------------------------------------------------------
 *
 * engine.h
 *		Declarations shared by the files of the engine's backend half
 *		(src/engine) that users of the engine do not need.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ENGINE_H
#define PG_WARP_ENGINE_H

#include "fdw/fdw_scan.h"
#include "xpu/protocol.h"
#include "xpu/xpu_program.h"

/* in filter.c */

/* The columns of an Arrow scan, for engine_column_hook */
typedef struct EngineColumns
{
	const ArrowScanColumn *cols;
	int			n_cols;
	bool		dict_ok;		/* dictionary-encoded text (dict_text) may be
								 * read: runs whose CPU engine reads it
								 * (xpu/xpu_dict.h) and never return it */
} EngineColumns;

extern bool engine_column_hook(void *arg, AttrNumber attno, Oid typid,
							   int *col_index, XpuColKind *kind, int *scale);
extern List *engine_filter_split(List *quals, Index scanrelid, EngineColumns *fc,
								 List **rest);
struct CodegenScan;
extern List *engine_filter_split_scan(List *quals, struct CodegenScan *scan, List **rest);
extern bool engine_every_row(struct CodegenScan *scan, const EngineColumns *ec);
struct PlannerInfo;
extern List *engine_order_quals(struct PlannerInfo *root, List *quals);
struct ExplainState;
extern void engine_explain_program(const XpuProgram *prog, struct ExplainState *es);

/* in service_client.c: the service's GPUs, and their self-test (device.c) */
extern WarpDevices *service_devices(const char *selftest_path);
struct ErrorData;
extern struct ErrorData *service_caught(MemoryContext cxt);

/* in service_client.c: what the GPU caches hold, and emptying them (gpu_cache_admin.c) */
extern WarpCacheList *service_cache_info(void);
extern void service_cache_drop(WarpCacheDropped *out);

/* in service_client.c: whether the service runs on a GPU (planner) */
extern bool service_engine_gpu(void);

/* in service_supervisor.c: the service's threads that read heap units (planner) */
extern int	service_heap_unit_threads(void);

/* in service_client.c: one long request (AGG_RUN) and its replies */
extern int	service_run_begin(WarpMsgType type, const void *req, uint32 len);
extern void *service_run_next(int fd, WarpMsgType type, uint32 *len);
extern void service_run_end(int fd);
extern void service_run_keep(int fd);
extern int	service_run_begin_fd(WarpMsgType type, const void *req, uint32 len,
								 int pass_fd);
extern void *service_run_next_any(int fd, uint32 *type, uint32 *len);
extern void service_run_send(int fd, WarpMsgType type, const void *payload, uint32 len);
extern WarpAggFile service_file_part(const ArrowEngineFile *ef, uint32 n_batches,
									 uint32 n_cols);

/* in service_client.c: the join tables of this backend's query (JOIN_LOAD) */
extern void service_join_load(int memfd, uint64 len, const uint8 *key, const uint8 *version,
							  WarpJoinLoaded *loaded);
extern void service_join_find(const uint8 *key, const uint8 *version, WarpJoinLoaded *found);
extern void service_join_drop(uint64 join_id);
extern void service_join_release_all(void);

#endif							/* PG_WARP_ENGINE_H */
