/*-------------------------------------------------------------------------
 *
 * share.h
 *		The shared runs of parallel queries (share.c): one run of the
 *		service per query, whose participants (the leader and its parallel
 *		workers, each on a connection of its own) leave their groups in it,
 *		and which gives them back once, merged (xpu/protocol.h,
 *		WARP_MSG_SHARE_OPEN).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_SHARE_H
#define PG_WARP_SERVICE_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpu/xpu_agg.h"

typedef struct SvcShare SvcShare;

/*
 * The spec of a shared run's groups: the request's keys, aggregates and
 * program, as bytes (run.c), which every part and the finish must equal
 */
typedef struct SvcShareSpec
{
	const uint8_t *bytes;
	size_t		len;
} SvcShareSpec;

extern SvcShare *svc_share_open(uint64_t id, uint32_t participants, char *msg, size_t msglen);
extern SvcShare *svc_share_attach(uint64_t id);
extern void svc_share_detach(SvcShare *s);
extern uint32_t svc_share_threads(const SvcShare *s, uint32_t threads);
extern bool svc_share_deposit(SvcShare *s, const SvcShareSpec *spec, XpuAggTable **tables,
							  uint32_t n, char *msg, size_t msglen);
extern bool svc_share_take(SvcShare *s, const SvcShareSpec *spec, XpuAggTable ***tables,
						   uint32_t *n, char *msg, size_t msglen);
extern uint64_t svc_share_memory(void);
extern uint32_t *svc_share_matched(SvcShare *s, uint64_t words, char *msg, size_t msglen);

#endif							/* PG_WARP_SERVICE_SHARE_H */
