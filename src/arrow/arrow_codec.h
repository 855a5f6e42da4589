/*-------------------------------------------------------------------------
 *
 * arrow_codec.h
 *		Decompression of IPC body buffers (LZ4_FRAME, ZSTD); internal to the
 *		Arrow library, used by the reader (arrow_read.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_CODEC_H
#define PG_WARP_ARROW_CODEC_H

#include "arrow_internal.h"

/*
 * Decompression contexts, created on first use through the allocator and
 * reused for every buffer of one batch load.
 */
typedef struct ArrowCodecCtx
{
	const ArrowAllocator *alloc;
	void	   *lz4;			/* LZ4F_dctx * */
	void	   *zstd;			/* ZSTD_DCtx * */
} ArrowCodecCtx;

extern void arrow_codec_init(ArrowCodecCtx *cc, const ArrowAllocator *alloc);
extern void arrow_codec_free(ArrowCodecCtx *cc);

/*
 * Decompresses one buffer body (the bytes after the 8-byte uncompressed
 * length) of src_len bytes into a new allocation of exactly 'expected' bytes
 * (> 0), returned in *out; free it with arrow_free(cc->alloc, ...).
 * Fails with ARROW_ERR_INVALID when 'expected' is more than the codec could
 * possibly produce from src_len bytes (a guard against decompression bombs
 * that would make us allocate huge buffers), when the data is corrupt, or
 * when it does not decompress to exactly 'expected' bytes.
 */
extern int	arrow_decompress(ArrowCodecCtx *cc, ArrowCodec codec,
							 const uint8_t *src, size_t src_len,
							 int64_t expected, uint8_t **out, ArrowError *err);

#endif							/* PG_WARP_ARROW_CODEC_H */
