/*-------------------------------------------------------------------------
 *
 * pack.h
 *		Integer column values packed on the host for the trip over the bus
 *		(pack.c); the frame format is xpu/xpu_pack.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SVC_PACK_H
#define SVC_PACK_H

#include <stdint.h>

extern int	svc_pack_values(const void *in, uint32_t n, int width, uint8_t *out,
							int64_t *base);

#endif							/* SVC_PACK_H */
