/*-------------------------------------------------------------------------
 *
 * gpu_join_memfd.h
 *		A GpuJoin inner table's memfd: made (ahead, or after the scan),
 *		fitted to the table, written by several threads, finished.  No
 *		PostgreSQL call: gpu_join_table.c runs these in threads of its own,
 *		and bench/join_build_bench.c runs them as gj_table_make does.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_JOIN_MEMFD_H
#define PG_WARP_GPU_JOIN_MEMFD_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "xpu/xpu_join.h"

/* a memfd mapped read-write, shared, populated: len bytes (whole pages) at map */
typedef struct GjMemfd
{
	int			fd;
	void	   *map;
	uint64_t	len;
} GjMemfd;

/* memory made ahead is not used where it passes twice the table by this much */
#define GJ_MEMFD_SLACK		((uint64_t) 256 << 10)

extern bool gj_memfd_make(GjMemfd *m, uint64_t len);
extern bool gj_memfd_fit(GjMemfd *m, uint64_t len);
extern bool gj_memfd_finish(GjMemfd *m, uint64_t len);
extern void gj_memfd_drop(GjMemfd *m, bool background);
extern bool gj_thread_start(pthread_t *tid, bool detached, void *(*fn) (void *), void *arg);
extern void gj_table_write(XpuJoinBuilder *b, void *dst, uint64_t len);

#endif							/* PG_WARP_GPU_JOIN_MEMFD_H */
