/*-------------------------------------------------------------------------
 *
 * pack_frames.h
 *		bench/data_paths' packing of integer column values (pack_frames.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PACK_FRAMES_H
#define PACK_FRAMES_H

#include <stdint.h>

/* values a frame holds at most (256 KiB of int32) */
#define PACK_FRAME_VALUES	65536

extern int	pack_values(const void *in, uint32_t n, int width, uint8_t *out, int64_t *base);

#endif							/* PACK_FRAMES_H */
