/*-------------------------------------------------------------------------
 *
 * run.h
 *		The one description of a run of the service (run.c): whatever the
 *		request (AGG_RUN, HEAP_RUN, SCAN_RUN of xpu/protocol.h), a run is a
 *		source, a list of stages and a sink, parsed from the request by one
 *		parser, and run by the operator's file (agg.c, heap_chunk.c,
 *		scan.c) on the CPU engine or through the GPU input path (gpu_agg.c).
 *
 *	source	Arrow record batches (files), heap chunks (a ring in the
 *			backend's memfd), or heap units in the GPU column cache (probed
 *			through the same ring: WARP_HEAP_UNITS)
 *	stages	quals (the program), join depths (the loaded tables its
 *			JOIN_PROBE steps probe: join_store.c),
 *			group/aggregate (spec), projection (the chunk columns returned)
 *	sink	groups (AGG_RESULT) or rows (SCAN_RESULT, or a heap scan's pass
 *			bitmaps in HEAP_DONE)
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_RUN_H
#define PG_WARP_SERVICE_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service/input.h"
#include "xpu/protocol.h"
#include "xpu/xpu_agg.h"

#define SVC_RUN_MAX_THREADS		256	/* CPU threads of one run, at most */

typedef enum SvcSource
{
	SVC_SOURCE_ARROW = 1,		/* record batches of Arrow files */
	SVC_SOURCE_HEAP				/* heap chunks and units (heap_chunk.c) */
} SvcSource;

typedef enum SvcSink
{
	SVC_SINK_GROUPS = 1,		/* partial groups: AGG_RESULT */
	SVC_SINK_ROWS				/* passing rows: SCAN_RESULT, or a heap scan's
								 * pass bitmaps */
} SvcSink;

typedef struct SvcRunDesc
{
	const char *what;			/* the request's name, for messages */
	/* the source */
	SvcSource	source;
	uint32_t	n_files;		/* ARROW: the file parts, parsed (fd -1) */
	SvcInputFile *files;		/* the caller's once parsed: it closes and frees */
	int64_t		n_batches;		/* record batches of every file */
	const uint8_t *heap;		/* HEAP: its part of the request (heap_run_parse) */
	size_t		heap_len;
	/* the stages, in the order a row meets them */
	const XpuProgram *prog;		/* quals, keys and aggregate arguments; validated */
	uint32_t	n_joins;		/* join depths */
	const uint64_t *join_ids;	/* [n_joins]: depth d probes join_ids[d] */
	XpuAggSpec	spec;			/* group/aggregate; n_keys = n_aggs = 0: none */
	uint32_t	n_cols;			/* chunk columns of a file part */
	uint32_t	n_outs;			/* projection: the first n_outs chunk columns
								 * are returned (sink ROWS over Arrow) */
	/* the sink */
	SvcSink		sink;
	/* a part or the finish of a query's shared run (xpu/protocol.h), or 0 */
	uint64_t	share_id;
	uint32_t	share_role;		/* WARP_SHARE_PART or WARP_SHARE_FINISH */
	const uint8_t *spec_bytes;	/* keys, aggregates and program, as sent: */
	size_t		spec_len;		/* what the parts and the finish must share */
	/* how it runs */
	uint32_t	engine;			/* asked for: 0 (the service's choice) or WarpEngine */
	uint32_t	n_threads;		/* CPU engine threads (the default filled in) */
	int64_t		max_buffer_size;	/* per Arrow buffer (0: no limit) */
} SvcRunDesc;

extern bool svc_run_parse(uint32_t type, const uint8_t *payload, size_t len, SvcRunDesc *d,
						  char *msg, size_t msglen);
extern uint8_t *svc_run_copy(const uint8_t *payload, size_t len);
extern void svc_run_free_files(SvcRunDesc *d);

struct SvcJoinSet;
extern bool svc_run_joins(const SvcRunDesc *d, struct SvcJoinSet *set, uint32_t *werr,
						  char *msg, size_t msglen);

struct ServiceGpu;
extern bool svc_run_engine(const struct ServiceGpu *gpu, const SvcRunDesc *d,
						   WarpEngine *engine, uint32_t *werr, char *msg, size_t msglen);

#endif							/* PG_WARP_SERVICE_RUN_H */
