/*
 * warp_client.h
 *		What the small test clients of pg_warp_service (agg_client.c,
 *		scan_client.c) share: a growing request buffer, the file part of a
 *		run request (src/xpu/protocol.h's WarpAggFile), and one run over the
 *		service's socket (HELLO, the request, an optional CANCEL, the
 *		replies).  warp_client.c has the code.
 */
#ifndef WARP_CLIENT_H
#define WARP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "arrow.h"
#include "protocol.h"
#include "xpu_program.h"
#include "xpu_types.h"

/* a request being built: len bytes used of cap at p */
typedef struct WcBuf
{
	uint8_t    *p;
	size_t		len;
	size_t		cap;
} WcBuf;

/*
 * Called for each reply of the run's result type (payload p of h->length
 * bytes); returns nonzero when that reply was the last one.
 */
typedef int (*WcReplyFn) (void *arg, const WarpMsgHeader *h, const uint8_t *p);

/*
 * The test dimensions a run may join (warp_client.c builds them with the
 * xpu_join builder; test/python/test_service_join.py has the same rows):
 *	WC_DIM_EVEN	999 keyed rows, i = 0 .. 998: key int8 2 * i; payload 0 int8
 *				i % 7 (NULL where i % 50 == 3), payload 1 text "n" (i % 5);
 *				one more row with a NULL key
 *	WC_DIM_TEXT	50 rows, i = 0 .. 49: key text "c" i; payload 0 int4 3 * i
 */
typedef enum WcDim
{
	WC_DIM_EVEN = 0,
	WC_DIM_TEXT = 1
} WcDim;

/*
 * The join tables of a run: dims[d] is loaded (JOIN_LOAD) for depth d on
 * the run's connection before the run, and its id written into the request
 * at ids_off + 8 * d.  probe_type: the outer key's type the table is built
 * for (0: the dimension's key type).  fault breaks the loads or the ids on
 * purpose (NULL: none): "unsealed" (a memfd without seals), "plainfile"
 * (a regular file's descriptor), "short" (table_len past the memfd's
 * end), "corrupt" (a table with a bucket offset out of its bounds),
 * "unknown" (an id never loaded), "closed" (the ids of a connection
 * closed before the run).  A refused load prints "ERROR code message" and
 * ends the client as a refused run does.  hold_ms > 0: after the last
 * reply the client prints "HELD" and keeps the connection (and so its
 * tables) open that many milliseconds more.
 */
typedef struct WcJoins
{
	int			n;
	WcDim		dims[WARP_MAX_JOINS];
	XpuType		probe_type[WARP_MAX_JOINS];
	size_t		ids_off;
	const char *fault;
	int			hold_ms;
} WcJoins;

extern void wc_die(const char *msg) __attribute__((noreturn));
extern int	wc_join_begin(XpuBuilder *b);
extern void wc_join_depth(XpuBuilder *b, WcJoins *joins, WcDim dim, int key, int jt,
						  int n_pay, const int *pay, const XpuType *types, int *regs);
extern void *wc_put(WcBuf *b, const void *data, size_t n, size_t align);
extern ArrowFile *wc_put_file_head(WcBuf *b, const char *path, uint32_t n_cols);
extern int	wc_run(const char *sock, int run_type, int result_type, const WcBuf *req,
				   const WcJoins *joins, int cancel_ms, WcReplyFn reply, void *arg);

#endif							/* WARP_CLIENT_H */
