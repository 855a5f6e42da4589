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

struct SvcJoin
{
	uint64_t	id;
	const void *owner;			/* the loading connection; NULL once it closed */
	int			refs;			/* the owner's (while it is open) + the runs' */
	const XpuJoinTable *table;	/* mapped read-only */
	uint64_t	len;			/* bytes mapped */
	pthread_mutex_t copy_lock;	/* guards dev_copy[]: one copy a device */
	CUdeviceptr dev_copy[WARP_MAX_DEVICES];	/* device copies, 0: none yet */
	SvcJoin    *next;			/* in the registry, while owned */
};

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static SvcJoin *registry;		/* the tables whose owner is open */
static uint64_t store_bytes;	/* mapped + device copies, every live table */

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

	if (req->flags != 0 || req->pad != 0)
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

bool
svc_join_load(const void *owner, int fd, const WarpJoinLoad *req,
			  uint64_t *id, uint64_t *bytes, char *msg, size_t msglen)
{
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
	}
	pthread_mutex_unlock(&store_lock);
	if (!ok)
	{
		munmap(map, req->table_len);
		pthread_mutex_destroy(&j->copy_lock);
		free(j);
		return snprintf(msg, msglen, "could not draw a join id: %s", strerror(errno)), false;
	}
	*id = j->id;
	*bytes = j->len;
	return true;
}

void
svc_join_drop_owner(const void *owner)
{
	SvcJoin   **p = &registry;
	SvcJoin    *unheld = NULL;

	pthread_mutex_lock(&store_lock);
	while (*p != NULL)
	{
		SvcJoin    *j = *p;

		if (j->owner != owner)
		{
			p = &j->next;
			continue;
		}
		*p = j->next;
		j->owner = NULL;
		j->next = NULL;
		if (unref_locked(j))
		{
			j->next = unheld;
			unheld = j;
		}
	}
	pthread_mutex_unlock(&store_lock);
	while (unheld != NULL)
	{
		SvcJoin    *j = unheld;

		unheld = j->next;
		join_free(j);
	}
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
		while ((*rc = gpu_drv.cuMemAlloc(&p, j->len)) == CUDA_ERROR_OUT_OF_MEMORY &&
			   gpu_cache_shrink(dev, j->len) > 0)
			;
		if (*rc == CUDA_SUCCESS)
			*rc = gpu_drv.cuMemcpyHtoDAsync(p, j->table, j->len, st);
		if (*rc == CUDA_SUCCESS)
			*rc = gpu_drv.cuStreamSynchronize(st);
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
