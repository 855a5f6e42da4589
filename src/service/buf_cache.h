/*-------------------------------------------------------------------------
 *
 * buf_cache.h
 *		The Arrow reader's allocator for the service's runs (buf_cache.c):
 *		large buffers that a thread frees are kept for its next batch.
 *
 *-------------------------------------------------------------------------
 */
#ifndef SVC_BUF_CACHE_H
#define SVC_BUF_CACHE_H

#include "arrow/arrow.h"

extern const ArrowAllocator svc_buffer_allocator;

#endif							/* SVC_BUF_CACHE_H */
