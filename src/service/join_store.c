/*-------------------------------------------------------------------------
 *
 * join_store.c
 *		The registry of loaded join tables (join_store.h): JOIN_LOAD's
 *		checks of the backend's memfd, the ids, the references that runs
 *		hold, and each table's copies in device memory.
 *
 * A JOIN_LOAD maps the table only once the memfd cannot change: the
 * service refuses a descriptor that is not sealed against shrinking,
 * growing and writing (and against new seals, which could lift none of
 * those but would say the sender keeps control), so the bytes
 * xpu_join_table_validate checked are the bytes every later probe reads.
 * The tables are few (one a join depth of a running query) and a run looks
 * its ids up once: a list under one mutex serves.
 *
 * The cache (WARP_JOIN_CACHE, JOIN_FIND): a table loaded to be kept stays
 * in the registry after its loader's connection closed, holding a
 * reference of its own, until a JOIN_FIND of its key with another version
 * (the relation changed), a load of its key, or the room a new table needs
 * (--join-cache-size; the least recently found one first, never one a run
 * or a connection holds) drops it.  A connection that found it holds it
 * as its loader does (a SvcJoinHold each), so that the ids of its query
 * name the table until the connection closes.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "gpu_cache.h"
#include "gpu_driver.h"
#include "service.h"
#include "service/join_store.h"

#define REQUIRED_SEALS	(F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

/*
 * A table of JOIN_REGISTER_MIN bytes or more is registered with the driver
 * for its copy to a device (read-only, as a heap run's ring: gpu_heap.c),
 * so that the copy runs at the pinned rate: copied from pageable memory,
 * SSB Q4.2's tables (13 MB of part's among them) took 3.0 ms of the run's
 * setup on the H200 host, where pageable copies run at about 3 GB/s and
 * pinned ones at about 55 (8 GiB registered in about 0.2 s).  Where the
 * driver refuses, the pageable copy as before.  (The bound is a choice, not
 * yet measured on a GPU host: below it a copy takes a fraction of a
 * millisecond either way.)
 */
#define JOIN_REGISTER_MIN	((uint64_t) 1 << 20)

struct SvcJoin
{
	uint64_t	id;
	const void *owner;			/* the loading connection; NULL once it closed */
	int			refs;			/* the owner's (while it is open), the cache's
								 * (while cached), the holders' and the runs' */
	bool		cached;			/* kept for later queries under key, version */
	uint8_t		key[WARP_JOIN_DIGEST];
	uint8_t		version[WARP_JOIN_DIGEST];
	uint64_t	last_found;		/* cache clock of its load or last JOIN_FIND */
	const XpuJoinTable *table;	/* mapped read-only */
	uint64_t	len;			/* bytes mapped */
	pthread_mutex_t copy_lock;	/* guards dev_copy[]: one copy a device */
	CUdeviceptr dev_copy[WARP_MAX_DEVICES];	/* device copies, 0: none yet */
	SvcJoin    *next;			/* in the registry, while owned or cached */
};

/* a connection's hold on a cached table it found (JOIN_FIND) */
typedef struct SvcJoinHold
{
	const void *owner;
	SvcJoin    *join;
	struct SvcJoinHold *next;
} SvcJoinHold;

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static SvcJoin *registry;		/* the tables whose owner is open, or cached */
static SvcJoinHold *holds;		/* the finders' holds */
static uint64_t store_bytes;	/* mapped + device copies, every live table */
static uint64_t cache_bytes;	/* the host bytes of the cached tables */
static uint64_t cache_clock;	/* counts loads and finds */
uint64_t	svc_join_cache_limit = UINT64_C(1024) * 1024 * 1024;

/* the registered table with id (store_lock held), or NULL */
static SvcJoin *
find_locked(uint64_t id)
{
	for (SvcJoin *j = registry; j != NULL; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

/* unmaps j and frees its device copies (its last reference is gone) */
static void
join_free(SvcJoin *j)
{
	uint64_t	freed = j->len;

	for (uint32_t d = 0; d < WARP_MAX_DEVICES; d++)
	{
		CUcontext	ctx;

		if (j->dev_copy[d] == 0)
			continue;
		if (gpu_drv.cuCtxPushCurrent(gpu_device_context(d)) == CUDA_SUCCESS)
		{
			gpu_drv.cuMemFree(j->dev_copy[d]);
			gpu_drv.cuCtxPopCurrent(&ctx);
		}
		freed += j->len;
	}
	munmap((void *) j->table, j->len);
	pthread_mutex_destroy(&j->copy_lock);
	pthread_mutex_lock(&store_lock);
	store_bytes -= freed;
	pthread_mutex_unlock(&store_lock);
	free(j);
}

/* drops one reference (store_lock held); true when it was the last */
static bool
unref_locked(SvcJoin *j)
{
	return --j->refs == 0;
}

/* the memfd checks of JOIN_LOAD: a sealed file of at least req's bytes */
static bool
check_fd(int fd, const WarpJoinLoad *req, char *msg, size_t msglen)
{
	struct stat st;
	int			seals;

	if ((req->flags & ~WARP_JOIN_CACHE) != 0 || req->pad != 0)
		return snprintf(msg, msglen, "JOIN_LOAD with flags %u it does not know",
						req->flags), false;
	if (req->table_len < sizeof(XpuJoinTable) || req->table_len > XPU_JOIN_MAX_BYTES)
		return snprintf(msg, msglen, "a join table of %llu bytes is out of range",
						(unsigned long long) req->table_len), false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return snprintf(msg, msglen, "the join table's descriptor is not a memfd"), false;
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS)
		return snprintf(msg, msglen, "the join table's memfd is not sealed "
						"(F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE and F_SEAL_SEAL)"), false;
	if ((uint64_t) st.st_size < req->table_len)
		return snprintf(msg, msglen, "the join table's memfd has %lld bytes, not %llu",
						(long long) st.st_size, (unsigned long long) req->table_len), false;
	return true;
}

/* a random non-zero id that no registered table has (store_lock held) */
static bool
new_id_locked(uint64_t *id)
{
	for (int tries = 0; tries < 16; tries++)
	{
		if (getrandom(id, sizeof(*id), 0) != sizeof(*id))
			return false;
		if (*id != 0 && find_locked(*id) == NULL)
			return true;
	}
	return false;
}

/*
 * uncache_locked: j leaves the cache (store_lock held), and the registry
 * unless its loader's connection is still open; true when that dropped its
 * last reference (the caller frees it, outside the lock)
 */
static bool
uncache_locked(SvcJoin *j)
{
	j->cached = false;
	cache_bytes -= j->len;
	if (j->owner == NULL)
	{
		for (SvcJoin **p = &registry; *p != NULL; p = &(*p)->next)
			if (*p == j)
			{
				*p = j->next;
				break;
			}
		j->next = NULL;
	}
	return unref_locked(j);
}

/* the cached table of key, or NULL (store_lock held) */
static SvcJoin *
cached_locked(const uint8_t *key)
{
	for (SvcJoin *j = registry; j != NULL; j = j->next)
		if (j->cached && memcmp(j->key, key, WARP_JOIN_DIGEST) == 0)
			return j;
	return NULL;
}

/*
 * cache_locked: keeps j (just registered) under req's key and version,
 * dropping what the cache held under that key and, while the room is
 * short, its least recently found tables that nothing else holds; j is not
 * kept when that does not make room.  Tables whose last reference went are
 * put on *unheld for the caller to free.
 */
static void
cache_locked(SvcJoin *j, const WarpJoinLoad *req, SvcJoin **unheld)
{
	SvcJoin    *old = cached_locked(req->key);

	if (old != NULL && uncache_locked(old))
	{
		old->next = *unheld;
		*unheld = old;
	}
	while (cache_bytes + j->len > svc_join_cache_limit)
	{
		SvcJoin    *lru = NULL;

		for (SvcJoin *c = registry; c != NULL; c = c->next)
			if (c->cached && c->refs == 1 && (lru == NULL || c->last_found < lru->last_found))
				lru = c;
		if (lru == NULL)
			return;
		if (uncache_locked(lru))
		{
			lru->next = *unheld;
			*unheld = lru;
		}
	}
	memcpy(j->key, req->key, WARP_JOIN_DIGEST);
	memcpy(j->version, req->version, WARP_JOIN_DIGEST);
	j->cached = true;
	j->last_found = ++cache_clock;
	j->refs++;
	cache_bytes += j->len;
}

/* frees the tables of list (linked by next), outside store_lock */
static void
free_list(SvcJoin *list)
{
	while (list != NULL)
	{
		SvcJoin    *j = list;

		list = j->next;
		join_free(j);
	}
}

bool
svc_join_find(const void *owner, const WarpJoinFind *req, WarpJoinLoaded *res)
{
	SvcJoinHold *h = malloc(sizeof(SvcJoinHold));
	SvcJoin    *unheld = NULL;
	SvcJoin    *j;

	memset(res, 0, sizeof(*res));
	if (h == NULL)
		return false;
	pthread_mutex_lock(&store_lock);
	j = cached_locked(req->key);
	if (j != NULL && memcmp(j->version, req->version, WARP_JOIN_DIGEST) != 0)
	{
		/* the relation changed since: no query finds these rows again */
		if (uncache_locked(j))
			unheld = j;
		j = NULL;
	}
	if (j != NULL)
	{
		j->refs++;
		j->last_found = ++cache_clock;
		h->owner = owner;
		h->join = j;
		h->next = holds;
		holds = h;
		res->join_id = j->id;
		res->bytes = j->len;
		res->rows = j->table->n_rows;
		res->flags = j->table->flags;
	}
	pthread_mutex_unlock(&store_lock);
	if (j == NULL)
		free(h);
	free_list(unheld);
	return true;
}

bool
svc_join_load(const void *owner, int fd, const WarpJoinLoad *req, WarpJoinLoaded *res,
			  char *msg, size_t msglen)
{
	SvcJoin    *unheld = NULL;
	SvcJoin    *j;
	void	   *map;
	XpuError	err;
	bool		ok;

	if (!check_fd(fd, req, msg, msglen))
		return false;
	map = mmap(NULL, req->table_len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return snprintf(msg, msglen, "could not map the join table: %s",
						strerror(errno)), false;
	memset(&err, 0, sizeof(err));
	if (!xpu_join_table_validate(map, req->table_len, &err))
	{
		munmap(map, req->table_len);
		return snprintf(msg, msglen, "invalid join table: %s", err.message), false;
	}
	if ((j = calloc(1, sizeof(SvcJoin))) == NULL)
	{
		munmap(map, req->table_len);
		return snprintf(msg, msglen, "out of memory"), false;
	}
	pthread_mutex_init(&j->copy_lock, NULL);
	j->owner = owner;
	j->refs = 1;
	j->table = map;
	j->len = req->table_len;
	pthread_mutex_lock(&store_lock);
	if ((ok = new_id_locked(&j->id)))
	{
		j->next = registry;
		registry = j;
		store_bytes += j->len;
		if (req->flags & WARP_JOIN_CACHE)
			cache_locked(j, req, &unheld);
	}
	pthread_mutex_unlock(&store_lock);
	free_list(unheld);
	if (!ok)
	{
		munmap(map, req->table_len);
		pthread_mutex_destroy(&j->copy_lock);
		free(j);
		return snprintf(msg, msglen, "could not draw a join id: %s", strerror(errno)), false;
	}
	memset(res, 0, sizeof(*res));
	res->join_id = j->id;
	res->bytes = j->len;
	res->rows = j->table->n_rows;
	res->flags = j->table->flags;
	return true;
}

void
svc_join_uncache_all(uint32_t *n, uint64_t *bytes)
{
	SvcJoin    *unheld = NULL;

	*n = 0;
	*bytes = 0;
	pthread_mutex_lock(&store_lock);
	for (;;)
	{
		SvcJoin    *j = registry;

		/* (uncache_locked may take j out of the registry: start over each time) */
		while (j != NULL && !j->cached)
			j = j->next;
		if (j == NULL)
			break;
		(*n)++;
		*bytes += j->len;
		if (uncache_locked(j))
		{
			j->next = unheld;
			unheld = j;
		}
	}
	pthread_mutex_unlock(&store_lock);
	free_list(unheld);
}

void
svc_join_drop_owner(const void *owner)
{
	SvcJoin   **p = &registry;
	SvcJoin    *unheld = NULL;
	SvcJoinHold **hp = &holds;

	pthread_mutex_lock(&store_lock);
	while (*p != NULL)
	{
		SvcJoin    *j = *p;

		if (j->owner != owner)
		{
			p = &j->next;
			continue;
		}
		j->owner = NULL;
		/* a cached table stays in the registry (and keeps the cache's reference) */
		if (!j->cached)
		{
			*p = j->next;
			j->next = NULL;
		}
		else
			p = &j->next;
		if (unref_locked(j))
		{
			/* (only an uncached table can lose its last reference here) */
			j->next = unheld;
			unheld = j;
		}
	}
	while (*hp != NULL)
	{
		SvcJoinHold *h = *hp;

		if (h->owner != owner)
		{
			hp = &h->next;
			continue;
		}
		*hp = h->next;
		if (unref_locked(h->join))
		{
			/* (not cached any more, nor in the registry) */
			h->join->next = unheld;
			unheld = h->join;
		}
		free(h);
	}
	pthread_mutex_unlock(&store_lock);
	free_list(unheld);
}

void
svc_join_drop(const void *owner, uint64_t id)
{
	SvcJoin    *unheld = NULL;
	SvcJoin    *j;

	pthread_mutex_lock(&store_lock);
	if ((j = find_locked(id)) != NULL && j->owner == owner)
	{
		j->owner = NULL;
		if (!j->cached)
		{
			for (SvcJoin **p = &registry; *p != NULL; p = &(*p)->next)
				if (*p == j)
				{
					*p = j->next;
					break;
				}
			j->next = NULL;
		}
		if (unref_locked(j))
			unheld = j;
	}
	else
	{
		for (SvcJoinHold **hp = &holds; *hp != NULL; hp = &(*hp)->next)
		{
			SvcJoinHold *h = *hp;

			if (h->owner != owner || h->join->id != id)
				continue;
			*hp = h->next;
			if (unref_locked(h->join))
				unheld = h->join;
			free(h);
			break;
		}
	}
	pthread_mutex_unlock(&store_lock);
	free_list(unheld);
}

bool
svc_join_acquire(SvcJoinSet *set, const uint64_t *ids, uint32_t n, char *msg, size_t msglen)
{
	memset(set, 0, sizeof(*set));
	if (n > WARP_MAX_JOINS)
		return snprintf(msg, msglen, "%u join depths, more than %d", n, WARP_MAX_JOINS), false;
	pthread_mutex_lock(&store_lock);
	for (uint32_t d = 0; d < n; d++)
	{
		SvcJoin    *j = ids[d] != 0 ? find_locked(ids[d]) : NULL;

		if (j == NULL)
		{
			pthread_mutex_unlock(&store_lock);
			svc_join_release_set(set);
			return snprintf(msg, msglen, "join table %llu is not loaded",
							(unsigned long long) ids[d]), false;
		}
		j->refs++;
		set->refs[d] = j;
		set->tables[d] = j->table;
		set->n = d + 1;
	}
	pthread_mutex_unlock(&store_lock);
	return true;
}

void
svc_join_release_set(SvcJoinSet *set)
{
	for (uint32_t d = 0; d < set->n; d++)
	{
		SvcJoin    *j = set->refs[d];
		bool		last;

		pthread_mutex_lock(&store_lock);
		last = unref_locked(j);
		pthread_mutex_unlock(&store_lock);
		if (last)
			join_free(j);
	}
	memset(set, 0, sizeof(*set));
}

bool
svc_join_check(const SvcJoinSet *set, const XpuProgram *prog, char *msg, size_t msglen)
{
	XpuError	err;

	memset(&err, 0, sizeof(err));
	if (xpu_program_join_check(prog, set->tables, (int) set->n, &err))
		return true;
	return snprintf(msg, msglen, "the program does not fit its join tables: %s",
					err.message), false;
}

CUdeviceptr
svc_join_device_copy(const SvcJoinSet *set, uint32_t d, uint32_t dev, CUstream st,
					 CUresult *rc)
{
	SvcJoin    *j = set->refs[d];
	CUdeviceptr p;

	*rc = CUDA_SUCCESS;
	if (dev >= WARP_MAX_DEVICES)
		return *rc = CUDA_ERROR_OUT_OF_MEMORY, 0;
	/*
	 * one copy a device: the table's own lock is held across it (the
	 * registry's would hold up the service's loop meanwhile); the caller's
	 * reference keeps the table
	 */
	pthread_mutex_lock(&j->copy_lock);
	if ((p = j->dev_copy[dev]) == 0)
	{
		bool		reg = false;

		while ((*rc = gpu_drv.cuMemAlloc(&p, j->len)) == CUDA_ERROR_OUT_OF_MEMORY &&
			   gpu_cache_shrink(dev, j->len) > 0)
			;
		if (*rc == CUDA_SUCCESS && j->len >= JOIN_REGISTER_MIN)
			reg = gpu_drv.cuMemHostRegister((void *) j->table, j->len,
											CU_MEMHOSTREGISTER_READ_ONLY) == CUDA_SUCCESS;
		if (*rc == CUDA_SUCCESS)
			*rc = gpu_drv.cuMemcpyHtoDAsync(p, j->table, j->len, st);
		if (*rc == CUDA_SUCCESS)
			*rc = gpu_drv.cuStreamSynchronize(st);
		if (reg)
			gpu_drv.cuMemHostUnregister((void *) j->table);
		if (*rc == CUDA_SUCCESS)
		{
			j->dev_copy[dev] = p;
			pthread_mutex_lock(&store_lock);
			store_bytes += j->len;
			pthread_mutex_unlock(&store_lock);
		}
		else
		{
			if (p != 0)
				gpu_drv.cuMemFree(p);
			p = 0;
		}
	}
	pthread_mutex_unlock(&j->copy_lock);
	return p;
}

uint64_t
svc_join_memory(void)
{
	uint64_t	n;

	pthread_mutex_lock(&store_lock);
	n = store_bytes;
	pthread_mutex_unlock(&store_lock);
	return n;
}
