/*-------------------------------------------------------------------------
 *
 * buf_cache.c
 *		An ArrowAllocator (svc_buffer_allocator) that keeps the large
 *		buffers a thread frees and hands them out again to the same thread.
 *
 * A worker loads a record batch, runs over it and frees it, batch after
 * batch, with buffers of nearly the same sizes every time.  From malloc,
 * buffers of megabytes are fresh mappings each time: every page is faulted
 * in and zeroed by the kernel before pread copies the file's bytes over it,
 * and unmapped again at the free, which took as long as the copy itself.
 * Here a freed buffer of at least BUF_CACHE_MIN bytes goes to a small cache
 * of the freeing thread (at most BUF_CACHE_SLOTS buffers and
 * BUF_CACHE_MAX_BYTES), and an allocation takes the smallest cached buffer
 * that holds it without wasting more than a quarter.  Only a thread that
 * allocated such a buffer itself has a cache: one that merely frees what
 * others loaded (the epoll thread closing a run's files) frees at once.  The cache is freed
 * when its thread exits (a pthread key's destructor), so the buffers live
 * no longer than the run's workers.  The buffers' contents are not zeroed:
 * the reader overwrites every byte it reads into.
 *
 * Every block carries a header of BUF_HDR bytes with its size, so that
 * free and realloc know it; the pointers handed out keep malloc's
 * alignment.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>

#include "service/buf_cache.h"

#define BUF_CACHE_MIN		(256 * 1024)
#define BUF_CACHE_SLOTS		16
#define BUF_CACHE_MAX_BYTES	((size_t) 512 << 20)
#define BUF_HDR				32

typedef struct BufCache
{
	int			n;
	size_t		bytes;
	char	   *blk[BUF_CACHE_SLOTS];	/* block bases, oldest first */
} BufCache;

static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static pthread_key_t cache_key;
static int	cache_key_ok;

/* the size stored in a block's header */
static size_t
blk_size(const char *base)
{
	return *(const size_t *) base;
}

static void
cache_destroy(void *arg)
{
	BufCache   *c = arg;

	for (int i = 0; i < c->n; i++)
		free(c->blk[i]);
	free(c);
}

static void
cache_key_init(void)
{
	cache_key_ok = pthread_key_create(&cache_key, cache_destroy) == 0;
}

/* the calling thread's cache; created when create is set (NULL: none) */
static BufCache *
thread_cache(int create)
{
	BufCache   *c;

	pthread_once(&cache_once, cache_key_init);
	if (!cache_key_ok)
		return NULL;
	c = pthread_getspecific(cache_key);
	if (c == NULL && create && (c = calloc(1, sizeof(BufCache))) != NULL &&
		pthread_setspecific(cache_key, c) != 0)
	{
		free(c);
		c = NULL;
	}
	return c;
}

/* removes cached block i of c */
static char *
cache_take(BufCache *c, int i)
{
	char	   *base = c->blk[i];

	c->bytes -= blk_size(base);
	for (; i + 1 < c->n; i++)
		c->blk[i] = c->blk[i + 1];
	c->n--;
	return base;
}

static void *
buf_malloc(void *ctx, size_t size)
{
	BufCache   *c = size >= BUF_CACHE_MIN ? thread_cache(1) : NULL;
	char	   *base;
	int			best = -1;

	for (int i = 0; c != NULL && i < c->n; i++)
	{
		size_t		have = blk_size(c->blk[i]);

		if (have >= size && have - size <= size / 4 &&
			(best < 0 || have < blk_size(c->blk[best])))
			best = i;
	}
	if (best >= 0)
		return cache_take(c, best) + BUF_HDR;
	if (size > SIZE_MAX - BUF_HDR || (base = malloc(size + BUF_HDR)) == NULL)
		return NULL;
	*(size_t *) base = size;
	return base + BUF_HDR;
}

static void
buf_free(void *ctx, void *p)
{
	char	   *base;
	size_t		size;
	BufCache   *c;

	if (p == NULL)
		return;
	base = (char *) p - BUF_HDR;
	size = blk_size(base);
	if (size < BUF_CACHE_MIN || size > BUF_CACHE_MAX_BYTES || (c = thread_cache(0)) == NULL)
	{
		free(base);
		return;
	}
	/* make room: the oldest blocks go first */
	while (c->n > 0 && (c->n == BUF_CACHE_SLOTS || c->bytes + size > BUF_CACHE_MAX_BYTES))
		free(cache_take(c, 0));
	c->blk[c->n++] = base;
	c->bytes += size;
}

static void *
buf_realloc(void *ctx, void *p, size_t size)
{
	char	   *base;

	if (p == NULL)
		return buf_malloc(ctx, size);
	if (size > SIZE_MAX - BUF_HDR ||
		(base = realloc((char *) p - BUF_HDR, size + BUF_HDR)) == NULL)
		return NULL;
	*(size_t *) base = size;
	return base + BUF_HDR;
}

const ArrowAllocator svc_buffer_allocator = {buf_malloc, buf_realloc, buf_free, NULL};
