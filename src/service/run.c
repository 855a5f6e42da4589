/*-------------------------------------------------------------------------
 *
 * run.c
 *		The one parser of the service's run requests (AGG_RUN, AGG_FILL,
 *		HEAP_RUN, SCAN_RUN: xpu/protocol.h) into a run description (run.h: source x
 *		stages x sink), and the choice of the engine that runs it.
 *
 * The payload stays the caller's (a 16-byte aligned copy of the request):
 * the description points into it.  The file parts are parsed by input.c
 * (not opened: the run's thread opens them).
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "service/join_store.h"
#include "service/run.h"

#define ALIGN8(x)	(((size_t) (x) + 7) & ~(size_t) 7)

/* the request's CPU threads: its own, else the service's default, capped */
static uint32_t
run_threads(uint32_t asked)
{
	uint32_t	n = asked ? asked : (uint32_t) svc_cpu_threads;

	if (n > SVC_RUN_MAX_THREADS)
		n = SVC_RUN_MAX_THREADS;
	return n > 0 ? n : 1;
}

/* the program (prog_len bytes, 16-aligned) at *off; false with msg set */
static bool
parse_program(SvcRunDesc *d, const uint8_t *p, size_t len, size_t *off, uint32_t prog_len,
			  char *msg, size_t msglen)
{
	char		why[256];

	d->prog = svc_take(p, len, off, prog_len, 16);
	if (d->prog == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is truncated at the program",
						d->what, len), false;
	if (!xpu_program_validate(d->prog, prog_len, why, sizeof(why)))
		return snprintf(msg, msglen, "invalid program: %s", why), false;
	return true;
}

/* the n_joins join ids after the program at *off; false with msg set */
static bool
parse_join_ids(SvcRunDesc *d, const uint8_t *p, size_t len, size_t *off, uint32_t n_joins,
			   char *msg, size_t msglen)
{
	if (n_joins > WARP_MAX_JOINS)
		return snprintf(msg, msglen, "%s has %u join depths, more than %d", d->what,
						n_joins, WARP_MAX_JOINS), false;
	d->n_joins = n_joins;
	if (n_joins == 0)
		return true;
	d->join_ids = svc_take(p, len, off, n_joins * sizeof(uint64_t), 8);
	if (d->join_ids == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is truncated at the join ids",
						d->what, len), false;
	return true;
}

/* the n_files file parts (input.c) from *off to the end; false with msg set */
static bool
parse_files(SvcRunDesc *d, const uint8_t *p, size_t len, size_t off, char *msg, size_t msglen)
{
	d->files = calloc(d->n_files ? d->n_files : 1, sizeof(SvcInputFile));
	if (d->files == NULL)
		return snprintf(msg, msglen, "out of memory"), false;
	for (uint32_t i = 0; i < d->n_files; i++)
		d->files[i].fd = -1;
	for (uint32_t i = 0; i < d->n_files; i++)
	{
		if (!svc_input_parse(&d->files[i], i, p, len, &off, d->n_cols, d->what, msg, msglen))
			return false;
		d->n_batches += d->files[i].n_batches;
	}
	if (ALIGN8(off) < len)
		return snprintf(msg, msglen, "%s has %zu bytes after its last part",
						d->what, len - off), false;
	return true;
}

/*
 * AGG_RUN and HEAP_RUN: WarpAggRequest, the keys, the aggregates and the
 * program; then the files (AGG_RUN) or the heap part (HEAP_RUN)
 */
static bool
parse_agg(SvcRunDesc *d, bool heap, const uint8_t *p, size_t len, char *msg, size_t msglen)
{
	size_t		off = 0;
	const WarpAggRequest *req = svc_take(p, len, &off, sizeof(*req), 8);

	if (req == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is too short", d->what, len), false;
	if (req->n_keys > XPU_AGG_MAX_KEYS || req->n_aggs > XPU_AGG_MAX_AGGS ||
		req->n_files > PGWARP_MAX_PAYLOAD / sizeof(WarpAggFile) || req->max_buffer_size < 0)
		return snprintf(msg, msglen, "%s has too many keys, aggregates or files", d->what), false;
	d->spec.n_keys = (int) req->n_keys;
	d->spec.key_outs = svc_take(p, len, &off, req->n_keys * sizeof(uint16_t), 8);
	d->spec.n_aggs = (int) req->n_aggs;
	d->spec.aggs = d->spec.key_outs == NULL ? NULL :
		svc_take(p, len, &off, req->n_aggs * sizeof(XpuAggDesc), 8);
	if (d->spec.aggs == NULL)
		return snprintf(msg, msglen, "%s of %zu bytes is truncated at %s", d->what, len,
						d->spec.key_outs == NULL ? "the key list" : "the aggregate list"), false;
	if (!parse_program(d, p, len, &off, req->prog_len, msg, msglen) ||
		!parse_join_ids(d, p, len, &off, req->n_joins, msg, msglen))
		return false;
	/* a shared run's parts and finish share keys, aggregates, program and join ids */
	d->spec_bytes = p + sizeof(*req);
	d->spec_len = off - sizeof(*req);
	d->share_id = req->share_id;
	d->share_role = req->share_role;
	if ((d->share_role == 0) != (d->share_id == 0) ||
		(d->share_role == WARP_SHARE_PART && !heap) ||
		(d->share_role == WARP_SHARE_FINISH && (heap || req->n_files != 0)) ||
		d->share_role > WARP_SHARE_FINISH)
		return snprintf(msg, msglen, "%s has a shared run role %u it cannot take",
						d->what, d->share_role), false;
	d->sink = SVC_SINK_GROUPS;
	d->n_files = req->n_files;
	d->n_cols = (uint32_t) d->prog->n_cols;
	d->engine = req->engine;
	d->n_threads = run_threads(req->n_threads);
	d->max_buffer_size = req->max_buffer_size;
	if (!heap)
		return parse_files(d, p, len, off, msg, msglen);
	/* the heap part follows the program (heap_chunk.c parses it) */
	off = ALIGN8(off);
	if (req->n_files != 0 || off > len)
		return snprintf(msg, msglen, "HEAP_RUN names files or is truncated"), false;
	d->source = SVC_SOURCE_HEAP;
	d->heap = p + off;
	d->heap_len = len - off;
	if (d->heap_len >= sizeof(WarpHeapRequest) &&
		(((const WarpHeapRequest *) d->heap)->flags & WARP_HEAP_SCAN))
		d->sink = SVC_SINK_ROWS;
	if (d->sink == SVC_SINK_ROWS && d->share_role != 0)
		return snprintf(msg, msglen, "a heap scan is no part of a shared run"), false;
	return true;
}

/* SCAN_RUN: WarpScanRequest, a qual (or projection) program, the files */
static bool
parse_scan(SvcRunDesc *d, const uint8_t *p, size_t len, char *msg, size_t msglen)
{
	size_t		off = 0;
	const WarpScanRequest *req = svc_take(p, len, &off, sizeof(*req), 8);

	if (req == NULL)
		return snprintf(msg, msglen, "SCAN_RUN of %zu bytes is too short", len), false;
	if (req->n_cols > 4096 || req->n_outs > req->n_cols ||
		req->n_files > PGWARP_MAX_PAYLOAD / sizeof(WarpAggFile) || req->max_buffer_size < 0)
		return snprintf(msg, msglen, "SCAN_RUN has too many columns or files"), false;
	if (!parse_program(d, p, len, &off, req->prog_len, msg, msglen) ||
		!parse_join_ids(d, p, len, &off, req->n_joins, msg, msglen))
		return false;
	if (req->pad != 0)
		return snprintf(msg, msglen, "SCAN_RUN's pad is not zero"), false;
	/* a projection run (scan.c) returns its program's outputs, no chunk column */
	if (d->prog->n_outs != 0 && req->n_outs != 0)
		return snprintf(msg, msglen, "a SCAN_RUN program with outputs returns no chunk column"),
			false;
	for (int i = 0; i < d->prog->n_cols; i++)
		if (XPU_COLS(d->prog)[i].col_index >= req->n_cols)
			return snprintf(msg, msglen, "program column %d reads chunk column %u of %u",
							i, XPU_COLS(d->prog)[i].col_index, req->n_cols), false;
	d->sink = SVC_SINK_ROWS;
	d->n_files = req->n_files;
	d->n_cols = req->n_cols;
	d->n_outs = req->n_outs;
	d->engine = req->engine;
	d->n_threads = run_threads(req->n_threads);
	d->max_buffer_size = req->max_buffer_size;
	return parse_files(d, p, len, off, msg, msglen);
}

/*
 * svc_run_parse: the run description of a request of message `type`
 * (WARP_MSG_AGG_RUN, HEAP_RUN or SCAN_RUN) whose payload is p[0 .. len),
 * 16-byte aligned, which must outlive d.  False with msg set ("out of
 * memory", or why the request is malformed); d->files, when set, is the
 * caller's to free (svc_run_free_files) either way.
 */
bool
svc_run_parse(uint32_t type, const uint8_t *payload, size_t len, SvcRunDesc *d,
			  char *msg, size_t msglen)
{
	memset(d, 0, sizeof(*d));
	d->source = SVC_SOURCE_ARROW;
	switch (type)
	{
		case WARP_MSG_AGG_RUN:
			d->what = "AGG_RUN";
			return parse_agg(d, false, payload, len, msg, msglen);
		case WARP_MSG_AGG_FILL:
			d->what = "AGG_FILL";
			if (!parse_agg(d, false, payload, len, msg, msglen))
				return false;
			if (d->share_role != 0)
				return snprintf(msg, msglen, "AGG_FILL names a shared run"), false;
			return true;
		case WARP_MSG_HEAP_RUN:
			d->what = "HEAP_RUN";
			return parse_agg(d, true, payload, len, msg, msglen);
		case WARP_MSG_SCAN_RUN:
			d->what = "SCAN_RUN";
			return parse_scan(d, payload, len, msg, msglen);
		default:
			return snprintf(msg, msglen, "message type %u is no run", type), false;
	}
}

/*
 * svc_run_copy: the run's copy of a request's payload (len bytes), 16-byte
 * aligned as svc_run_parse wants it; the run keeps pointers into it while
 * it lives.  NULL when out of memory.
 */
uint8_t *
svc_run_copy(const uint8_t *payload, size_t len)
{
	uint8_t    *p = aligned_alloc(16, (len + 16) & ~(size_t) 15);

	if (p != NULL)
		memcpy(p, payload, len);
	return p;
}

/* svc_run_free_files: closes and frees the description's files */
void
svc_run_free_files(SvcRunDesc *d)
{
	for (uint32_t i = 0; d->files != NULL && i < d->n_files; i++)
		svc_input_close(&d->files[i]);
	free(d->files);
	d->files = NULL;
}

/*
 * svc_run_joins: a reference on each table that d's join ids name, into
 * set, and the program checked against them (xpu_program_join_check); false
 * with *werr and msg set (a table not loaded, a program that does not fit
 * them), nothing held then.  The caller releases the set when the run ends
 * (svc_join_release_set).
 */
bool
svc_run_joins(const SvcRunDesc *d, SvcJoinSet *set, uint32_t *werr, char *msg, size_t msglen)
{
	*werr = WARP_ERR_PROTOCOL;
	if (!svc_join_acquire(set, d->join_ids, d->n_joins, msg, msglen))
		return false;
	if (!svc_join_check(set, d->prog, msg, msglen))
	{
		svc_join_release_set(set);
		return false;
	}
	return true;
}

/* does spec have an aggregate only the CPU engine computes (min/max of text) */
static bool
spec_extended(const XpuAggSpec *spec)
{
	for (int a = 0; a < spec->n_aggs; a++)
		if (!xpu_agg_kind_gpu(spec->aggs[a].kind))
			return true;
	return false;
}

/*
 * svc_run_engine: the engine that runs d (asking for d->engine, 0: the
 * service's choice: the GPU when there is one); false with *werr and msg
 * set when it cannot run.  Min/max of text are the CPU engine's alone;
 * HyperLogLog sketches run on either (service/gpu_agg.c).
 */
bool
svc_run_engine(const ServiceGpu *gpu, const SvcRunDesc *d, WarpEngine *engine,
			   uint32_t *werr, char *msg, size_t msglen)
{
	bool		ext = spec_extended(&d->spec);

	if (d->engine > WARP_ENGINE_GPU)
	{
		*werr = WARP_ERR_PROTOCOL;
		return snprintf(msg, msglen, "unknown engine %u", d->engine), false;
	}
	if (d->engine == WARP_ENGINE_GPU && (gpu->engine != WARP_ENGINE_GPU || ext))
	{
		*werr = WARP_ERR_UNSUPPORTED;
		return snprintf(msg, msglen, ext ? "the GPU engine does not compute min/max of text" :
						"no GPU"), false;
	}
	*engine = d->engine == WARP_ENGINE_CPU || gpu->engine != WARP_ENGINE_GPU || ext ?
		WARP_ENGINE_CPU : WARP_ENGINE_GPU;
	return true;
}
