/*-------------------------------------------------------------------------
 *
 * gpu_cache.h
 *		The service's GPU-resident column cache (gpu_cache.c): the column
 *		buffers that GPU runs copied to a device, kept there across runs and
 *		found again by file identity, record batch and field.
 *
 * An entry holds one column of one record batch as the kernels read it: its
 * validity bitmap, values (or utf8 offsets) and utf8 data, each at a
 * GPU_CACHE_ALIGN-aligned offset of one device allocation, the compressed
 * files' buffers after decompression.  The key is the file's identity
 * (device, inode, size, mtime, ctime), the record batch, the field and the
 * column kind the program reads it as; a run that finds a file's identity
 * changed drops the entries of its old contents.
 *
 * The life of an entry: gpu_cache_reserve makes it FILLING (the caller
 * copies into it), gpu_cache_publish makes it READY once the copy is
 * complete, gpu_cache_get hands READY entries to later runs.  Every entry a
 * caller holds is referenced until gpu_cache_release; referenced entries are
 * never evicted or freed, so a kernel never reads freed memory.  Each device
 * has its own cache of the configured capacity, under one mutex; LRU order.
 *
 * The functions that may free device memory (reserve, release, shrink,
 * check_file) must be called with device dev's context current.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_GPU_CACHE_H
#define PG_WARP_GPU_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "service.h"
#include "xpu/file_id.h"
#include "xpu/cuda_driver.h"

#define GPU_CACHE_ALIGN		64	/* the pieces' alignment inside an entry */

/* a file's identity: which contents its buffers came from */
typedef WarpFileId GpuCacheFileId;

typedef struct GpuCacheEntry GpuCacheEntry;

/* what gpu_cache_stats reports for one device */
typedef struct GpuCacheStats
{
	uint64_t	capacity;		/* bytes; 0: the cache is off */
	uint64_t	used;			/* bytes of device memory in entries */
	uint64_t	entries;
	uint64_t	hits;			/* lookups that found a READY entry */
	uint64_t	misses;
	uint64_t	evictions;		/* entries evicted for room (LRU or out of memory) */
	uint64_t	stale_drops;	/* entries dropped because their file changed */
} GpuCacheStats;

/* size_bytes < 0: a quarter of the smallest device's memory; 0: off */
extern void gpu_cache_configure(const ServiceGpu *gpu, int64_t size_bytes);
extern uint64_t gpu_cache_capacity(uint32_t dev);

/* fills *id from fstat(fd); false when fstat fails */
extern bool gpu_cache_file_id(int fd, GpuCacheFileId *id);

/* drops the entries of an older version of file id (same dev and inode) */
extern void gpu_cache_check_file(uint32_t dev, const GpuCacheFileId *id);

/* drops every entry of file id (its contents changed while a run read it) */
extern void gpu_cache_drop_file(uint32_t dev, const GpuCacheFileId *id);

/* a READY entry (referenced), or NULL (counted as a miss) */
extern GpuCacheEntry *gpu_cache_get(uint32_t dev, const GpuCacheFileId *id,
									int32_t batch, int32_t field, int32_t kind);

/*
 * gpu_cache_get, but an entry that a read-ahead is filling
 * (gpu_cache_reserve_ahead) is waited for: the entry once published, NULL
 * when it was dropped instead or *canceled (NULL: never) became nonzero
 */
extern GpuCacheEntry *gpu_cache_get_wait(uint32_t dev, const GpuCacheFileId *id,
										 int32_t batch, int32_t field, int32_t kind,
										 const volatile int *canceled);

/*
 * a new FILLING entry (referenced) with room for pieces of len[0..2] bytes,
 * or NULL when the key is there already, the cache is off or has no room
 * that eviction can make, or the device has no memory for it
 */
extern GpuCacheEntry *gpu_cache_reserve(uint32_t dev, const GpuCacheFileId *id,
										int32_t batch, int32_t field, int32_t kind,
										const size_t len[3]);

/* gpu_cache_reserve for a read-ahead: runs wait for the entry (gpu_cache_get_wait) */
extern GpuCacheEntry *gpu_cache_reserve_ahead(uint32_t dev, const GpuCacheFileId *id,
											  int32_t batch, int32_t field, int32_t kind,
											  const size_t len[3]);

/* the device address of an entry's first piece, and its pieces' lengths */
extern CUdeviceptr gpu_cache_entry_ptr(const GpuCacheEntry *e);
extern const size_t *gpu_cache_entry_lens(const GpuCacheEntry *e);

/* a word the filler keeps with an entry (a heap unit: its rows), set before publishing */
extern void gpu_cache_entry_set_tag(GpuCacheEntry *e, uint64_t tag);
extern uint64_t gpu_cache_entry_tag(const GpuCacheEntry *e);

/* a FILLING entry's contents are complete: later runs may use it */
extern void gpu_cache_publish(GpuCacheEntry *e);

/* drops the caller's reference; an entry never published is dropped */
extern void gpu_cache_release(GpuCacheEntry *e);

/* evicts unreferenced entries until want bytes are freed; returns the bytes freed */
extern size_t gpu_cache_shrink(uint32_t dev, size_t want);

/*
 * evicts every unreferenced entry of device dev (pushes its context itself);
 * returns the bytes freed
 */
extern size_t gpu_cache_clear(uint32_t dev);

extern void gpu_cache_stats(uint32_t dev, GpuCacheStats *st);

/*
 * the entries of device dev summed per file version, field and column kind
 * into out (room for max); returns how many it filled, or more than max
 * when some were left out
 */
extern uint32_t gpu_cache_list(uint32_t dev, WarpCacheInfo *out, uint32_t max);

#endif							/* PG_WARP_GPU_CACHE_H */
