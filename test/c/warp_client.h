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

extern void wc_die(const char *msg) __attribute__((noreturn));
extern void *wc_put(WcBuf *b, const void *data, size_t n, size_t align);
extern ArrowFile *wc_put_file_head(WcBuf *b, const char *path, uint32_t n_cols);
extern int	wc_run(const char *sock, int run_type, int result_type, const WcBuf *req,
				   int cancel_ms, WcReplyFn reply, void *arg);

#endif							/* WARP_CLIENT_H */
