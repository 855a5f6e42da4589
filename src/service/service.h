/*-------------------------------------------------------------------------
 *
 * service.h
 *		Declarations shared by the files of pg_warp_service, the process
 *		that owns the GPUs of one PostgreSQL cluster (doc/service.md).
 *
 * The service is a program of its own: it includes no PostgreSQL header and
 * talks to backends only through xpu/protocol.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_H
#define PG_WARP_SERVICE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "xpu/protocol.h"

/* in main.c */
extern void svc_log(const char *level, const char *fmt, ...)
			__attribute__((format(printf, 2, 3)));
extern int64_t svc_now_us(int clock_id);

/* in gpu.c */

/* what the CUDA driver gave the service at start; fixed for its life */
typedef struct ServiceGpu
{
	WarpEngine	engine;			/* GPU when n_devices > 0 */
	char		detail[192];	/* why there is no GPU, or "" */
	uint32_t	n_devices;
	WarpDeviceInfo devices[WARP_MAX_DEVICES];
} ServiceGpu;

extern void gpu_open(ServiceGpu *gpu, bool use_gpus);
extern void gpu_close(ServiceGpu *gpu);

/* in server.c */

/* the counters that STATUS reports */
typedef struct ServiceCounters
{
	uint64_t	memory_in_use;	/* bytes of GPU + pinned memory held */
	uint32_t	running_tasks;	/* tasks executing now */
	uint32_t	connections;	/* clients connected now */
} ServiceCounters;

extern ServiceCounters svc_counters;

extern int	server_listen(void);
extern int	server_run(int listen_fd, int signal_fd, pid_t parent_pid,
					   const ServiceGpu *gpu);
extern void server_unlink_socket(void);

#endif							/* PG_WARP_SERVICE_H */
