/*-------------------------------------------------------------------------
 *
 * gpu_cache.c
 *		The GPU-resident column cache of the service (gpu_cache.h): column
 *		buffers of Arrow record batches kept in device memory across runs,
 *		bounded per device by pg_warp.gpu_cache_size (--gpu-cache-size).
 *
 * Per device: a hash table of entries keyed by (file identity, record
 * batch, field, column kind), an LRU list of them, and a list of the files
 * they came from, each file with its entries, so that a file whose identity
 * changed loses all of its entries at once.  One mutex guards it all; device
 * memory is allocated and freed outside it.  An entry leaves the table
 * (evicted, dropped as stale) only when no run references it; a referenced
 * entry that must go is unlinked and marked DEAD, and its last release
 * frees it.
 *
 * A read-ahead (AGG_FILL: the outer columns of a GpuJoin read while its
 * inner tables are built) reserves its entries `ahead`: a run that finds
 * one FILLING waits until it is published or dropped (gpu_cache_get_wait),
 * rather than reading the same bytes a second time.  Only runs wait, and
 * only for a read-ahead, which itself never waits for anyone: no cycle.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "gpu_cache.h"
#include "gpu_driver.h"

#define GPU_CACHE_BUCKETS	8192	/* a power of 2 */
#define GPU_CACHE_SLAB_MAX	((size_t) 1 << 30)
#define GPU_CACHE_SLAB_MIN	((size_t) 1 << 20)

typedef enum
{
	ENTRY_FILLING,				/* reserved; its copy is not known complete */
	ENTRY_READY,				/* complete: later runs may read it */
	ENTRY_DEAD					/* out of the table; freed at its last release */
} EntryState;

typedef struct GpuCacheFile GpuCacheFile;
typedef struct GpuCacheSlab GpuCacheSlab;

struct GpuCacheEntry
{
	GpuCacheFileId id;
	int32_t		batch;
	int32_t		field;
	int32_t		kind;
	uint32_t	device;
	EntryState	state;
	int			refs;
	CUdeviceptr ptr;			/* inside its slab */
	size_t		bytes;
	size_t		len[3];			/* validity, values, utf8 data */
	uint64_t	tag;			/* the filler's word about its contents (rows) */
	uint64_t	hits;			/* gpu_cache_get calls that found it READY */
	bool		ahead;			/* reserved by a read-ahead: runs wait for it */
	GpuCacheSlab *slab;			/* kept while DEAD: its references pin the slab */
	GpuCacheFile *file;
	GpuCacheEntry *hnext;		/* hash chain */
	GpuCacheEntry *fprev;		/* the file's entries */
	GpuCacheEntry *fnext;
	GpuCacheEntry *sprev;		/* the slab's entries */
	GpuCacheEntry *snext;
};

/* the entries of one version of one file */
struct GpuCacheFile
{
	GpuCacheFileId id;
	GpuCacheEntry *entries;
	GpuCacheFile *next;
};

/*
 * One device allocation that entries are carved from, front to back.  A
 * slab is evicted (its entries dropped, its space reused) as a whole, the
 * least recently used first, once no run references any of its entries.
 */
struct GpuCacheSlab
{
	CUdeviceptr base;
	size_t		size;
	size_t		top;			/* bytes handed out */
	int			refs;			/* references held to its entries */
	uint64_t	last_use;
	GpuCacheEntry *entries;
	GpuCacheSlab *next;
};

typedef struct GpuCacheDev
{
	pthread_mutex_t lock;
	pthread_cond_t moved;		/* an `ahead` entry left FILLING */
	GpuCacheStats st;			/* capacity, used (slab bytes), entries, counters */
	size_t		slab_size;
	uint64_t	tick;
	GpuCacheEntry *buckets[GPU_CACHE_BUCKETS];
	GpuCacheFile *files;
	GpuCacheSlab *slabs;
	GpuCacheSlab *cur;			/* the slab new entries go to */
} GpuCacheDev;

static GpuCacheDev *caches[WARP_MAX_DEVICES];
static uint32_t n_caches;

static size_t
align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

static bool
same_file(const GpuCacheFileId *a, const GpuCacheFileId *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

static uint32_t
bucket_of(const GpuCacheFileId *id, int32_t batch, int32_t field, int32_t kind)
{
	uint64_t	h = (uint64_t) id->ino * 0x9E3779B97F4A7C15ULL;

	h ^= (uint64_t) id->dev + 0x632BE59BD9B4E019ULL + (h << 6) + (h >> 2);
	h ^= ((uint64_t) (uint32_t) batch << 24 | (uint64_t) (uint32_t) field << 8 |
		  (uint64_t) (uint32_t) kind) * 0xC2B2AE3D27D4EB4FULL;
	h ^= h >> 29;
	return (uint32_t) h & (GPU_CACHE_BUCKETS - 1);
}

/* the slab size for a capacity: a sixteenth of it, within [1 MiB, 1 GiB], at most all of it */
static size_t
slab_size_for(uint64_t cap)
{
	size_t		n = (size_t) (cap / 16);

	n = n < GPU_CACHE_SLAB_MIN ? GPU_CACHE_SLAB_MIN :
		n > GPU_CACHE_SLAB_MAX ? GPU_CACHE_SLAB_MAX : n;
	n = align_up(n, GPU_CACHE_SLAB_MIN);
	return n < cap ? n : (size_t) cap;
}

/*
 * gpu_cache_configure
 *		Sets every device's capacity: size_bytes, or a quarter of the
 *		smallest device's memory when size_bytes < 0; 0 turns the cache off.
 *		Called at start, before any run (tests call it again between runs:
 *		the entries are then evicted).
 */
void
gpu_cache_configure(const ServiceGpu *gpu, int64_t size_bytes)
{
	uint64_t	cap = (uint64_t) size_bytes;

	if (size_bytes < 0)
	{
		cap = UINT64_MAX;
		for (uint32_t i = 0; i < gpu->n_devices; i++)
			if (gpu->devices[i].total_memory / 4 < cap)
				cap = gpu->devices[i].total_memory / 4;
		if (gpu->n_devices == 0)
			cap = 0;
	}
	for (uint32_t i = 0; i < gpu->n_devices; i++)
	{
		GpuCacheDev *c = caches[i];

		if (c != NULL)
		{
			gpu_cache_clear(i);
			pthread_mutex_lock(&c->lock);
			c->st.capacity = cap;
			c->slab_size = slab_size_for(cap);
			pthread_mutex_unlock(&c->lock);
			continue;
		}
		if ((c = calloc(1, sizeof(GpuCacheDev))) == NULL)
		{
			svc_log("WARNING", "GPU cache of device %u off: out of memory", i);
			continue;
		}
		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->moved, NULL);
		c->st.capacity = cap;
		c->slab_size = slab_size_for(cap);
		caches[i] = c;
	}
	n_caches = gpu->n_devices;
	if (gpu->n_devices > 0)
		svc_log("LOG", cap > 0 ? "GPU cache: %lu MiB per device" : "GPU cache: off",
				(unsigned long) (cap >> 20));
}

static GpuCacheDev *
cache_of(uint32_t dev)
{
	return dev < n_caches ? caches[dev] : NULL;
}

/* gpu_cache_capacity: device dev's cache size in bytes (0: off) */
uint64_t
gpu_cache_capacity(uint32_t dev)
{
	GpuCacheDev *c = cache_of(dev);

	return c != NULL ? c->st.capacity : 0;
}

/* gpu_cache_file_id: the identity of the file open as fd */
bool
gpu_cache_file_id(int fd, GpuCacheFileId *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (fstat(fd, &st) != 0)
		return false;
	*id = warp_file_id_of(&st);
	return true;
}

/* ---------------- the table (caller holds the lock) ---------------- */

static GpuCacheEntry *
find_entry(GpuCacheDev *c, const GpuCacheFileId *id, int32_t batch, int32_t field,
		   int32_t kind)
{
	for (GpuCacheEntry *e = c->buckets[bucket_of(id, batch, field, kind)]; e; e = e->hnext)
		if (e->batch == batch && e->field == field && e->kind == kind && same_file(&e->id, id))
			return e;
	return NULL;
}

/* the record of file id (created when create), or NULL */
static GpuCacheFile *
file_record(GpuCacheDev *c, const GpuCacheFileId *id, bool create)
{
	GpuCacheFile *f;

	for (f = c->files; f != NULL; f = f->next)
		if (same_file(&f->id, id))
			return f;
	if (!create || (f = calloc(1, sizeof(GpuCacheFile))) == NULL)
		return NULL;
	f->id = *id;
	f->next = c->files;
	c->files = f;
	return f;
}

/*
 * unlink_entry: takes e out of the table, its file's list and its slab's
 * list (DEAD); an unreferenced entry is freed (its space stays in the slab
 * until the slab is reused)
 */
static void
unlink_entry(GpuCacheDev *c, GpuCacheEntry *e)
{
	GpuCacheEntry **pp = &c->buckets[bucket_of(&e->id, e->batch, e->field, e->kind)];
	GpuCacheFile *f = e->file;

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	if (e->fprev != NULL)
		e->fprev->fnext = e->fnext;
	else
		f->entries = e->fnext;
	if (e->fnext != NULL)
		e->fnext->fprev = e->fprev;
	if (f->entries == NULL)
	{
		GpuCacheFile **fp = &c->files;

		while (*fp != f)
			fp = &(*fp)->next;
		*fp = f->next;
		free(f);
	}
	if (e->sprev != NULL)
		e->sprev->snext = e->snext;
	else
		e->slab->entries = e->snext;
	if (e->snext != NULL)
		e->snext->sprev = e->sprev;
	if (e->ahead && e->state == ENTRY_FILLING)
		pthread_cond_broadcast(&c->moved);
	e->state = ENTRY_DEAD;
	c->st.entries--;
	if (e->refs == 0)
		free(e);
}

/* empties an unreferenced slab: its entries dropped (counted as evictions) */
static void
empty_slab(GpuCacheDev *c, GpuCacheSlab *sl)
{
	while (sl->entries != NULL)
	{
		c->st.evictions++;
		unlink_entry(c, sl->entries);
	}
	sl->top = 0;
}

/* the unreferenced slab used least recently (NULL: none) */
static GpuCacheSlab *
lru_slab(GpuCacheDev *c)
{
	GpuCacheSlab *best = NULL;

	for (GpuCacheSlab *sl = c->slabs; sl != NULL; sl = sl->next)
		if (sl->refs == 0 && (best == NULL || sl->last_use < best->last_use))
			best = sl;
	return best;
}

/* takes slab sl out of the cache (emptied) and onto *victims, to be freed */
static void
retire_slab(GpuCacheDev *c, GpuCacheSlab *sl, GpuCacheSlab **victims)
{
	GpuCacheSlab **pp = &c->slabs;

	empty_slab(c, sl);
	while (*pp != sl)
		pp = &(*pp)->next;
	*pp = sl->next;
	if (c->cur == sl)
		c->cur = NULL;
	c->st.used -= sl->size;
	sl->next = *victims;
	*victims = sl;
}

/* frees the victims' device memory (lock not held; the device's context current) */
static void
free_slabs(GpuCacheSlab *v)
{
	while (v != NULL)
	{
		GpuCacheSlab *next = v->next;

		gpu_drv.cuMemFree(v->base);
		__atomic_fetch_sub(&svc_counters.memory_in_use, (uint64_t) v->size, __ATOMIC_RELAXED);
		free(v);
		v = next;
	}
}

/*
 * new_slab: a slab of size bytes, allocated while the capacity allows
 * (unreferenced slabs freed, least recently used first, to make room);
 * NULL when it cannot be had
 */
static GpuCacheSlab *
new_slab(GpuCacheDev *c, size_t size, GpuCacheSlab **victims)
{
	GpuCacheSlab *sl;
	GpuCacheSlab *v;

	while (c->st.used + size > c->st.capacity && (v = lru_slab(c)) != NULL)
		retire_slab(c, v, victims);
	if (c->st.used + size > c->st.capacity || (sl = calloc(1, sizeof(GpuCacheSlab))) == NULL)
		return NULL;
	if (gpu_drv.cuMemAlloc(&sl->base, size) != CUDA_SUCCESS)
	{
		free(sl);
		return NULL;
	}
	__atomic_fetch_add(&svc_counters.memory_in_use, (uint64_t) size, __ATOMIC_RELAXED);
	sl->size = size;
	sl->next = c->slabs;
	c->slabs = sl;
	c->st.used += size;
	return sl;
}

/*
 * slab_for: the slab to carve bytes from: the current one while it has
 * room, else a new one, else the least recently used unreferenced slab of
 * the standard size, emptied; entries larger than a slab get their own
 */
static GpuCacheSlab *
slab_for(GpuCacheDev *c, size_t bytes, GpuCacheSlab **victims)
{
	GpuCacheSlab *sl;

	if (bytes > c->slab_size)
		return new_slab(c, bytes, victims);
	if (c->cur != NULL && c->cur->top + bytes <= c->cur->size)
		return c->cur;
	sl = c->st.used + c->slab_size <= c->st.capacity ? new_slab(c, c->slab_size, victims) : NULL;
	if (sl == NULL)
	{
		GpuCacheSlab *v = lru_slab(c);

		if (v != NULL && v->size == c->slab_size)
		{
			empty_slab(c, v);
			sl = v;
		}
		else if (v != NULL)
			sl = new_slab(c, c->slab_size, victims);	/* frees odd-sized ones */
	}
	if (sl != NULL)
		c->cur = sl;
	return sl;
}

/* drops the entries of file id (other_versions false) or of the other
 * versions of the same device and inode (true) */
static void
drop_versions(uint32_t dev, const GpuCacheFileId *id, bool other_versions)
{
	GpuCacheDev *c = cache_of(dev);
	GpuCacheFile *f,
			   *next;

	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	for (f = c->files; f != NULL; f = next)
	{
		next = f->next;
		if (f->id.dev != id->dev || f->id.ino != id->ino ||
			same_file(&f->id, id) == other_versions)
			continue;
		for (GpuCacheEntry *e = f->entries, *enext; e != NULL; e = enext)
		{
			enext = e->fnext;	/* f is freed with its last entry */
			c->st.stale_drops++;
			unlink_entry(c, e);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/* ---------------- the interface ---------------- */

/* gpu_cache_check_file: drops the entries of other versions of file id */
void
gpu_cache_check_file(uint32_t dev, const GpuCacheFileId *id)
{
	drop_versions(dev, id, true);
}

/* gpu_cache_drop_file: drops the entries of file id */
void
gpu_cache_drop_file(uint32_t dev, const GpuCacheFileId *id)
{
	drop_versions(dev, id, false);
}

/*
 * cache_get: gpu_cache_get; with wait, an entry a read-ahead is filling is
 * waited for while *canceled (NULL: never) stays 0, 10 ms at a time so
 * that a cancel is seen
 */
static GpuCacheEntry *
cache_get(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field, int32_t kind,
		  bool wait, const volatile int *canceled)
{
	GpuCacheDev *c = cache_of(dev);
	GpuCacheEntry *e;

	if (c == NULL || c->st.capacity == 0)
		return NULL;
	pthread_mutex_lock(&c->lock);
	while ((e = find_entry(c, id, batch, field, kind)) != NULL && wait &&
		   e->state == ENTRY_FILLING && e->ahead && (canceled == NULL || *canceled == 0))
	{
		struct timespec until;

		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 10 * 1000 * 1000;
		if (until.tv_nsec >= 1000 * 1000 * 1000)
		{
			until.tv_sec++;
			until.tv_nsec -= 1000 * 1000 * 1000;
		}
		pthread_cond_timedwait(&c->moved, &c->lock, &until);
	}
	if (e != NULL && e->state == ENTRY_READY)
	{
		e->refs++;
		e->slab->refs++;
		e->slab->last_use = ++c->tick;
		e->hits++;
		c->st.hits++;
	}
	else
	{
		e = NULL;
		c->st.misses++;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* gpu_cache_get: see gpu_cache.h */
GpuCacheEntry *
gpu_cache_get(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field,
			  int32_t kind)
{
	return cache_get(dev, id, batch, field, kind, false, NULL);
}

/* gpu_cache_get_wait: see gpu_cache.h */
GpuCacheEntry *
gpu_cache_get_wait(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field,
				   int32_t kind, const volatile int *canceled)
{
	return cache_get(dev, id, batch, field, kind, true, canceled);
}

/* insert_filling: a FILLING entry of bytes in slab sl for the key (lock held), or NULL */
static GpuCacheEntry *
insert_filling(GpuCacheDev *c, GpuCacheSlab *sl, uint32_t dev, const GpuCacheFileId *id,
			   int32_t batch, int32_t field, int32_t kind, const size_t len[3], size_t bytes)
{
	GpuCacheEntry *e = calloc(1, sizeof(GpuCacheEntry));
	GpuCacheFile *f = e != NULL ? file_record(c, id, true) : NULL;
	uint32_t	b = bucket_of(id, batch, field, kind);

	if (f == NULL)
	{
		free(e);
		return NULL;
	}
	e->id = *id;
	e->batch = batch;
	e->field = field;
	e->kind = kind;
	e->device = dev;
	e->state = ENTRY_FILLING;
	e->refs = 1;
	e->ptr = sl->base + sl->top;
	e->bytes = bytes;
	memcpy(e->len, len, sizeof(e->len));
	e->slab = sl;
	sl->top += bytes;
	sl->refs++;
	sl->last_use = ++c->tick;
	e->snext = sl->entries;
	if (sl->entries != NULL)
		sl->entries->sprev = e;
	sl->entries = e;
	e->file = f;
	e->fnext = f->entries;
	if (f->entries != NULL)
		f->entries->fprev = e;
	f->entries = e;
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	c->st.entries++;
	return e;
}

/* cache_reserve: gpu_cache_reserve; ahead: for a read-ahead (runs wait for it) */
static GpuCacheEntry *
cache_reserve(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field,
			  int32_t kind, const size_t len[3], bool ahead)
{
	GpuCacheDev *c = cache_of(dev);
	GpuCacheSlab *victims = NULL,
			   *sl;
	GpuCacheEntry *e = NULL;
	size_t		bytes = 0;

	for (int p = 0; p < 3; p++)
		bytes += align_up(len[p], GPU_CACHE_ALIGN);
	bytes = align_up(bytes, 256);
	if (c == NULL || bytes > c->st.capacity)
		return NULL;
	pthread_mutex_lock(&c->lock);
	if (find_entry(c, id, batch, field, kind) == NULL &&
		(sl = slab_for(c, bytes, &victims)) != NULL &&
		(e = insert_filling(c, sl, dev, id, batch, field, kind, len, bytes)) != NULL)
		e->ahead = ahead;
	pthread_mutex_unlock(&c->lock);
	free_slabs(victims);
	return e;
}

/* gpu_cache_reserve: see gpu_cache.h */
GpuCacheEntry *
gpu_cache_reserve(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field,
				  int32_t kind, const size_t len[3])
{
	return cache_reserve(dev, id, batch, field, kind, len, false);
}

/* gpu_cache_reserve_ahead: see gpu_cache.h */
GpuCacheEntry *
gpu_cache_reserve_ahead(uint32_t dev, const GpuCacheFileId *id, int32_t batch, int32_t field,
						int32_t kind, const size_t len[3])
{
	return cache_reserve(dev, id, batch, field, kind, len, true);
}

CUdeviceptr
gpu_cache_entry_ptr(const GpuCacheEntry *e)
{
	return e->ptr;
}

const size_t *
gpu_cache_entry_lens(const GpuCacheEntry *e)
{
	return e->len;
}

/* set while FILLING (before publish), read once READY: no lock needed */
void
gpu_cache_entry_set_tag(GpuCacheEntry *e, uint64_t tag)
{
	e->tag = tag;
}

uint64_t
gpu_cache_entry_tag(const GpuCacheEntry *e)
{
	return e->tag;
}

/* gpu_cache_publish: see gpu_cache.h */
void
gpu_cache_publish(GpuCacheEntry *e)
{
	GpuCacheDev *c = cache_of(e->device);

	pthread_mutex_lock(&c->lock);
	if (e->state == ENTRY_FILLING)
	{
		e->state = ENTRY_READY;
		if (e->ahead)
			pthread_cond_broadcast(&c->moved);
	}
	pthread_mutex_unlock(&c->lock);
}

/* gpu_cache_release: see gpu_cache.h */
void
gpu_cache_release(GpuCacheEntry *e)
{
	GpuCacheDev *c = cache_of(e->device);

	pthread_mutex_lock(&c->lock);
	e->slab->refs--;
	if (--e->refs == 0)
	{
		if (e->state == ENTRY_FILLING)
			unlink_entry(c, e);	/* never published: dropped and freed */
		else if (e->state == ENTRY_DEAD)
			free(e);
	}
	pthread_mutex_unlock(&c->lock);
}

/* gpu_cache_shrink: see gpu_cache.h */
size_t
gpu_cache_shrink(uint32_t dev, size_t want)
{
	GpuCacheDev *c = cache_of(dev);
	GpuCacheSlab *victims = NULL,
			   *v;
	size_t		freed = 0;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	while (freed < want && (v = lru_slab(c)) != NULL)
	{
		freed += v->size;
		retire_slab(c, v, &victims);
	}
	pthread_mutex_unlock(&c->lock);
	free_slabs(victims);
	return freed;
}

/* gpu_cache_clear: see gpu_cache.h */
size_t
gpu_cache_clear(uint32_t dev)
{
	CUcontext	ctx;
	size_t		freed;

	if (cache_of(dev) == NULL ||
		gpu_drv.cuCtxPushCurrent(gpu_device_context(dev)) != CUDA_SUCCESS)
		return 0;
	freed = gpu_cache_shrink(dev, SIZE_MAX);
	gpu_drv.cuCtxPopCurrent(&ctx);
	return freed;
}

/* gpu_cache_stats: a snapshot of device dev's cache */
void
gpu_cache_stats(uint32_t dev, GpuCacheStats *st)
{
	GpuCacheDev *c = cache_of(dev);

	memset(st, 0, sizeof(*st));
	if (c == NULL)
		return;
	pthread_mutex_lock(&c->lock);
	*st = c->st;
	pthread_mutex_unlock(&c->lock);
}

/* see gpu_cache.h */
uint32_t
gpu_cache_list(uint32_t dev, WarpCacheInfo *out, uint32_t max)
{
	GpuCacheDev *c = cache_of(dev);
	uint32_t	n = 0;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	for (GpuCacheFile *f = c->files; f != NULL; f = f->next)
	{
		uint32_t	first = n;

		for (GpuCacheEntry *e = f->entries; e != NULL; e = e->fnext)
		{
			WarpCacheInfo *w = NULL;

			if (e->state != ENTRY_READY)
				continue;
			for (uint32_t i = first; i < n && i < max; i++)
				if (out[i].field == e->field && out[i].kind == e->kind)
					w = &out[i];
			if (w == NULL && n++ >= max)
				continue;		/* counted, left out */
			if (w == NULL)
			{
				w = &out[n - 1];
				memset(w, 0, sizeof(*w));
				w->dev = f->id.dev;
				w->ino = f->id.ino;
				w->size = f->id.size;
				w->mtime_ns = f->id.mtime_ns;
				w->ctime_ns = f->id.ctime_ns;
				w->device = dev;
				w->field = e->field;
				w->kind = e->kind;
			}
			w->batches++;
			w->bytes += e->bytes;
			w->hits += e->hits;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}
