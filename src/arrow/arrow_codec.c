/*-------------------------------------------------------------------------
 *
 * arrow_codec.c
 *		LZ4_FRAME and ZSTD decompression of IPC body buffers.
 *
 * With BodyCompression method BUFFER each buffer of a compressed batch is an
 * int64 uncompressed length followed by one compressed frame (the reader
 * handles the length prefix, including -1 for "stored uncompressed").  Here
 * we decompress one frame into a buffer of the declared length.
 *
 * Guard against decompression bombs: the declared length is checked against
 * the most the codec can produce from the compressed size before anything
 * is allocated.  LZ4 emits at most 255 bytes per input byte (a match length
 * grows by 255 per extra length byte); ZSTD's densest encoding is an RLE
 * block, 4 bytes for up to 128 KiB (32768:1).  We allow 256:1 and 65536:1,
 * so no genuine frame is refused, yet a few bytes of input cannot make us
 * allocate gigabytes.
 *
 * The codec libraries allocate their contexts through our allocator (their
 * "advanced" creation functions), so no memory escapes the caller's
 * allocator.
 *
 *-------------------------------------------------------------------------
 */
#define LZ4F_STATIC_LINKING_ONLY
#define ZSTD_STATIC_LINKING_ONLY
#include "arrow_codec.h"

#include <string.h>

#include <lz4frame.h>
#include <zstd.h>
#include <zstd_errors.h>

#define LZ4_MAX_RATIO		256
#define ZSTD_MAX_RATIO		65536

/* Allocation callbacks for the codec libraries */
static void *
codec_alloc(void *opaque, size_t size)
{
	const ArrowAllocator *alloc = opaque;

	return alloc->malloc_fn(alloc->ctx, size);
}

static void *
codec_calloc(void *opaque, size_t size)
{
	void	   *p = codec_alloc(opaque, size);

	if (p != NULL)
		memset(p, 0, size);
	return p;
}

static void
codec_free(void *opaque, void *ptr)
{
	const ArrowAllocator *alloc = opaque;

	if (ptr != NULL)
		alloc->free_fn(alloc->ctx, ptr);
}

/* Sets up cc; contexts are created on first use */
void
arrow_codec_init(ArrowCodecCtx *cc, const ArrowAllocator *alloc)
{
	cc->alloc = arrow_alloc_or_default(alloc);
	cc->lz4 = NULL;
	cc->zstd = NULL;
}

/* Frees the contexts cc created */
void
arrow_codec_free(ArrowCodecCtx *cc)
{
	if (cc->lz4 != NULL)
		LZ4F_freeDecompressionContext(cc->lz4);
	if (cc->zstd != NULL)
		ZSTD_freeDCtx(cc->zstd);
	cc->lz4 = NULL;
	cc->zstd = NULL;
}

/*
 * One LZ4 frame of src_len bytes into dst, which must end up holding exactly
 * 'expected' bytes with no input left over.
 */
static int
lz4_decompress(ArrowCodecCtx *cc, const uint8_t *src, size_t src_len,
			   uint8_t *dst, size_t expected, ArrowError *err)
{
	size_t		produced = 0;
	size_t		consumed = 0;

	if (cc->lz4 == NULL)
	{
		LZ4F_CustomMem mem = {codec_alloc, codec_calloc, codec_free, (void *) cc->alloc};

		cc->lz4 = LZ4F_createDecompressionContext_advanced(mem, LZ4F_VERSION);
		if (cc->lz4 == NULL)
			return arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory creating an lz4 context");
	}
	LZ4F_resetDecompressionContext(cc->lz4);
	for (;;)
	{
		size_t		dst_size = expected - produced;
		size_t		src_size = src_len - consumed;
		size_t		ret;

		ret = LZ4F_decompress(cc->lz4, dst + produced, &dst_size,
							  src + consumed, &src_size, NULL);
		if (LZ4F_isError(ret))
		{
			if (LZ4F_getErrorCode(ret) == LZ4F_ERROR_allocation_failed)
				return arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory decompressing lz4");
			return arrow_set_error(err, ARROW_ERR_INVALID, "corrupt lz4 frame: %s",
								   LZ4F_getErrorName(ret));
		}
		produced += dst_size;
		consumed += src_size;
		if (ret == 0)
			break;				/* end of the frame */
		if (dst_size == 0 && src_size == 0)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   produced == expected ?
								   "lz4 frame holds more than the declared %zu bytes" :
								   "truncated lz4 frame (%zu bytes declared)", expected);
	}
	if (consumed != src_len)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "%zu bytes follow the end of the lz4 frame", src_len - consumed);
	if (produced != expected)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "lz4 frame holds %zu bytes, %zu declared", produced, expected);
	return ARROW_OK;
}

/* ZSTD frames of src_len bytes into exactly 'expected' bytes at dst */
static int
zstd_decompress(ArrowCodecCtx *cc, const uint8_t *src, size_t src_len,
				uint8_t *dst, size_t expected, ArrowError *err)
{
	size_t		ret;

	if (cc->zstd == NULL)
	{
		ZSTD_customMem mem = {codec_alloc, codec_free, (void *) cc->alloc};

		cc->zstd = ZSTD_createDCtx_advanced(mem);
		if (cc->zstd == NULL)
			return arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory creating a zstd context");
	}
	ret = ZSTD_decompressDCtx(cc->zstd, dst, expected, src, src_len);
	if (ZSTD_isError(ret))
	{
		if (ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
			return arrow_set_error(err, ARROW_ERR_NOMEM, "out of memory decompressing zstd");
		return arrow_set_error(err, ARROW_ERR_INVALID, "corrupt zstd frame: %s",
							   ZSTD_getErrorName(ret));
	}
	if (ret != expected)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "zstd frame holds %zu bytes, %zu declared", ret, expected);
	return ARROW_OK;
}

/* See arrow_codec.h */
int
arrow_decompress(ArrowCodecCtx *cc, ArrowCodec codec, const uint8_t *src,
				 size_t src_len, int64_t expected, uint8_t **out, ArrowError *err)
{
	int64_t		ratio = (codec == ARROW_CODEC_LZ4_FRAME) ? LZ4_MAX_RATIO : ZSTD_MAX_RATIO;
	int64_t		limit;
	uint8_t    *dst;
	int			rc;

	*out = NULL;
	if (codec != ARROW_CODEC_LZ4_FRAME && codec != ARROW_CODEC_ZSTD)
		return arrow_set_error(err, ARROW_ERR_UNSUPPORTED, "unsupported compression codec %d", (int) codec);
	if (arrow_mul_overflow((int64_t) src_len, ratio, &limit) ||
		expected <= 0 || expected > limit || (uint64_t) expected > SIZE_MAX / 2)
		return arrow_set_error(err, ARROW_ERR_INVALID,
							   "declared uncompressed length %lld is impossible for %zu compressed bytes",
							   (long long) expected, src_len);
	if (codec == ARROW_CODEC_ZSTD)
	{
		unsigned long long content = ZSTD_getFrameContentSize(src, src_len);

		if (content == ZSTD_CONTENTSIZE_ERROR)
			return arrow_set_error(err, ARROW_ERR_INVALID, "corrupt zstd frame header");
		if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != (unsigned long long) expected)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "zstd frame holds %llu bytes, %lld declared",
								   content, (long long) expected);
	}
	dst = arrow_malloc(cc->alloc, (size_t) expected, err);
	if (dst == NULL)
		return ARROW_ERR_NOMEM;
	if (codec == ARROW_CODEC_LZ4_FRAME)
		rc = lz4_decompress(cc, src, src_len, dst, (size_t) expected, err);
	else
		rc = zstd_decompress(cc, src, src_len, dst, (size_t) expected, err);
	if (rc != ARROW_OK)
	{
		arrow_free(cc->alloc, dst);
		return rc;
	}
	*out = dst;
	return ARROW_OK;
}
