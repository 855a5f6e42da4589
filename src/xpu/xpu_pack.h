/*-------------------------------------------------------------------------
 *
 * xpu_pack.h
 *		Integer columns packed for the trip over the bus: what the service's
 *		I/O threads write (service/pack.c) and what kern_unpack (kern_pack.cu)
 *		or the stand-in driver turn back into the column's values.
 *
 * A frame is up to XPU_PACK_FRAME_VALUES consecutive values of one column
 * buffer (4- or 8-byte integers: int32, int64, date32, timestamps...).  Its
 * values are stored as their distance from the frame's smallest value
 * (`base`), each in in_width bytes (1, 2, 3 or 4; see xpu_unpack_distance
 * for the layout); unpacking adds base back and stores out_width bytes (the
 * buffer as the file has it, bit for bit).  The packed bytes start at an
 * address aligned to 4 bytes.  A frame whose values span too
 * wide a range to gain is not packed: the host copies it as it is.
 *
 * The host fills an array of XpuPackFrame (device addresses of the packed
 * bytes and of where the values go) and copies it beside the packed bytes;
 * one launch unpacks every frame of a chunk before the chunk's kernel runs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_PACK_H
#define XPU_PACK_H

#include "xpu_common.h"

/* values a frame holds at most (256 KiB of int32) */
#define XPU_PACK_FRAME_VALUES	65536

typedef struct XpuPackFrame
{
	uint64_t	dst;			/* device address: where the values go */
	uint64_t	src;			/* device address: the packed values */
	int64_t		base;			/* a value is base + its packed distance */
	uint32_t	n;				/* values (0: nothing to do) */
	uint8_t		in_width;		/* bytes a packed value takes: 1, 2, 3 or 4 */
	uint8_t		out_width;		/* bytes a value takes: 4 or 8 */
	uint16_t	pad;
} XpuPackFrame;

/* threads of a kern_unpack block, and blocks a frame gets (grid: frames x this) */
#define XPU_UNPACK_THREADS		256
#define XPU_UNPACK_SPLIT		16

/*
 * the packed distance of value i of a frame of n values whose distances take
 * w bytes: w = 1, 2, 4 an array of bytes, 16- or 32-bit words; w = 3 the
 * low 16 bits of every distance (an array of 16-bit words), then their
 * third bytes
 */
XPU_HOST_DEVICE uint64_t
xpu_unpack_distance(const uint8_t *src, uint32_t n, uint32_t i, int w)
{
	switch (w)
	{
		case 1:
			return src[i];
		case 2:
			return ((const uint16_t *) src)[i];
		case 3:
			return ((const uint16_t *) src)[i] | (uint64_t) src[2 * (uint64_t) n + i] << 16;
		default:
			return ((const uint32_t *) src)[i];
	}
}

/*
 * xpu_unpack_range: unpacks values [from, to) of frame f, every step-th
 * one from `from` (a GPU thread's share, or the whole frame with step 1)
 */
XPU_HOST_DEVICE void
xpu_unpack_range(const XpuPackFrame *f, uint32_t from, uint32_t to, uint32_t step)
{
	const uint8_t *src = (const uint8_t *) (uintptr_t) f->src;
	int			w = f->in_width;

	if (f->out_width == 4)
	{
		int32_t    *dst = (int32_t *) (uintptr_t) f->dst;

		for (uint32_t i = from; i < to; i += step)
			dst[i] = (int32_t) (uint32_t) ((uint64_t) f->base + xpu_unpack_distance(src, f->n, i, w));
	}
	else
	{
		int64_t    *dst = (int64_t *) (uintptr_t) f->dst;

		for (uint32_t i = from; i < to; i += step)
			dst[i] = (int64_t) ((uint64_t) f->base + xpu_unpack_distance(src, f->n, i, w));
	}
}

#endif							/* XPU_PACK_H */
