/*-------------------------------------------------------------------------
 *
 * join_store.h
 *		The join tables the backends loaded (JOIN_LOAD, xpu/protocol.h):
 *		each the inner table of one join depth (xpu/xpu_join.h), mapped
 *		read-only from the backend's sealed memfd, registered under a random
 *		non-zero id, owned by the connection that loaded it and
 *		reference-counted by the runs that probe it (join_store.c).
 *
 * A table lives while its owner's connection is open or a run holds it:
 * svc_join_drop_owner (the connection closed) takes the ids out of the
 * registry, so that no later run finds them, and the last reference
 * unmaps the table and frees its copies in device memory.  Every function
 * is thread-safe (one mutex): runs take and drop references on their own
 * threads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_JOIN_STORE_H
#define PG_WARP_JOIN_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "xpu/cuda_driver.h"
#include "xpu/protocol.h"
#include "xpu/xpu_join.h"
#include "xpu/xpu_program.h"

typedef struct SvcJoin SvcJoin;

/*
 * The tables of one run: its join ids resolved, a reference held on each
 * (svc_join_acquire .. svc_join_release_set); tables[d] is depth d's, as
 * XpuChunk.joins wants them for the CPU engine.
 */
typedef struct SvcJoinSet
{
	uint32_t	n;
	SvcJoin    *refs[WARP_MAX_JOINS];
	const XpuJoinTable *tables[WARP_MAX_JOINS];
	uint32_t   *matched;		/* the run's matched flags of its RIGHT/FULL
								 * depth (agg.c), NULL: none; a GPU run marks
								 * its own and ORs them in (gpu_agg.c) */
	uint64_t	matched_words;
} SvcJoinSet;

/*
 * JOIN_LOAD: registers the table in memfd fd (table_len bytes at offset 0)
 * for owner (and keeps it in the cache with WARP_JOIN_CACHE); the
 * descriptor stays the caller's.  True with *res set; false with msg set
 * ("out of memory" or why the table is refused).
 */
extern bool svc_join_load(const void *owner, int fd, const WarpJoinLoad *req,
						  WarpJoinLoaded *res, char *msg, size_t msglen);

/*
 * JOIN_FIND: the cached table of req's key and version into res (a hold of
 * owner on it, released as its own tables are), join_id 0 for none (a
 * table of another version is dropped); false: out of memory
 */
extern bool svc_join_find(const void *owner, const WarpJoinFind *req, WarpJoinLoaded *res);

/*
 * JOIN_DROP: owner is done with table id (one it loaded, or a hold of one it
 * found); nothing when owner holds no such table
 */
extern void svc_join_drop(const void *owner, uint64_t id);

/* --join-cache-size in bytes: the most the cached tables take (host memory) */
extern uint64_t svc_join_cache_limit;

/*
 * CACHE_DROP: no table stays kept for later queries (a connection or run
 * that holds one keeps it until it lets go); *n and *bytes: the tables that
 * left the cache and their bytes
 */
extern void svc_join_uncache_all(uint32_t *n, uint64_t *bytes);

/* the owner's connection closed: its ids are gone, its tables freed once unheld */
extern void svc_join_drop_owner(const void *owner);

/*
 * a reference on each table of ids[0 .. n - 1] into set (n at most
 * WARP_MAX_JOINS); false with msg set when one is not loaded (nothing held
 * then)
 */
extern bool svc_join_acquire(SvcJoinSet *set, const uint64_t *ids, uint32_t n,
							 char *msg, size_t msglen);

/* drops the set's references (a set never acquired, zeroed, holds none) */
extern void svc_join_release_set(SvcJoinSet *set);

/* the set's tables (NULL: none) as chunk's inner tables, for the CPU engine */
static inline void
svc_join_chunk(XpuChunk *chunk, const SvcJoinSet *set)
{
	if (set != NULL)
	{
		chunk->joins = set->tables;
		chunk->n_joins = (int32_t) set->n;
		chunk->matched = set->matched;
	}
}

/* xpu_program_join_check of prog against the set's tables; false with msg set */
extern bool svc_join_check(const SvcJoinSet *set, const XpuProgram *prog,
						   char *msg, size_t msglen);

/*
 * a copy of set's table d in device dev's memory (the caller's context is
 * dev's, stream st free for a copy), made on the first call for the table
 * and device and kept while the table lives; 0 on failure with *rc the
 * driver's result (CUDA_ERROR_OUT_OF_MEMORY when there is no room)
 */
extern CUdeviceptr svc_join_device_copy(const SvcJoinSet *set, uint32_t d, uint32_t dev,
										CUstream st, CUresult *rc);

/* bytes the tables hold: mapped, and copied to devices (STATUS) */
extern uint64_t svc_join_memory(void);

#endif							/* PG_WARP_JOIN_STORE_H */
