/*-------------------------------------------------------------------------
 *
 * file_reg.c
 *		Arrow files' page-cache pages registered for DMA and kept between
 *		runs: the GPU input path (gpu_agg.c) copies a column buffer of a
 *		registered region straight from the page cache to GPU memory,
 *		instead of a pread into pinned memory and a copy from there.
 *
 * Why: on the H200 host (bench/results/README.md), threads pread a
 * page-cached file into pinned memory at about 3 GB/s each and 24 GB/s for
 * 16 of them, while registering a read-only mapping of the file runs at
 * about 20 GB/s for one thread, and the copies from registered pages at the
 * bus rate (55 GB/s).  Registering costs one pass over the pages once; the
 * pages then stay pinned, so every later run that reads the file (other
 * columns, or columns the GPU column cache let go) copies at the bus rate.
 *
 * A file is mapped whole (read-only, MAP_SHARED) on its first use and
 * registered (cuMemHostRegister, read-only and portable to every device's
 * context) region by region as runs first need them, by the run's I/O
 * threads, so registering overlaps the GPU's work on the batches before.
 * The mapping is file_map.c's: were a page of it touched by the CPU after
 * the file shrank (the stand-in driver of the tests copies with memcpy),
 * the fault is caught and the mapping marked lost, which fails the run
 * (input.c) and retires the entry.
 * An entry is keyed by the file's identity (device, inode, size,
 * modification and change times, as the GPU column cache's), so a file
 * replaced or rewritten is a new entry; the old one is dropped once no run
 * holds it.  The CPU never reads a mapping: only the device's copies do,
 * so a file truncated while registered cannot fault the service (the
 * pinned pages stay readable); the run that read it fails at its end,
 * when input.c finds the file changed.  Utf8 offsets are never copied from
 * here: the input path reads them into memory of its own to check them,
 * which a writer cannot change under the check.
 *
 * The registered bytes over all files stay within --pinned-files (pinned
 * pages are memory the kernel cannot reclaim); to make room, the entries
 * no run holds go first, replaced files before the least recently used.
 * A region the driver refuses (a file system whose pages cannot be
 * pinned) is not tried again for that entry; its bytes are read with pread.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/file_map.h"
#include "service/file_reg.h"

#define FILE_REG_MAX_FILES	256	/* entries kept, held or not (file_map.c has 4096 slots) */

enum
{
	REG_NONE = 0,				/* not registered */
	REG_BUSY,					/* a thread registers it */
	REG_READY,					/* registered: copies may read it */
	REG_REFUSED					/* the driver refused it: never tried again */
};

struct FileReg
{
	FileReg    *next;
	GpuCacheFileId id;
	SvcFileMap *fmap;
	uint8_t    *map;				/* its bytes */
	size_t		map_len;		/* the file's size in whole pages */
	int32_t		n_regions;
	uint8_t    *state;			/* per region (atomic reads outside the lock) */
	uint64_t	pinned;			/* bytes of its registered regions */
	int			refs;
	bool		replaced;		/* a newer version of the file was acquired */
	uint64_t	last_use;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_done = PTHREAD_COND_INITIALIZER;
static FileReg *reg_files;
static int	reg_n_files;
static uint64_t reg_limit;
static uint64_t reg_pinned;		/* registered or being registered, all files */
static uint64_t reg_tick;

void
file_reg_set_limit(uint64_t bytes)
{
	reg_limit = bytes;
}

uint64_t
file_reg_limit(void)
{
	return reg_limit;
}

static size_t
region_len(const FileReg *r, int32_t i)
{
	size_t		start = (size_t) i * FILE_REG_REGION;

	return r->map_len - start < (size_t) FILE_REG_REGION ? r->map_len - start :
		(size_t) FILE_REG_REGION;
}

/* unregisters every registered region of r and unmaps it (reg_lock held) */
static void
reg_drop(FileReg *r)
{
	for (int32_t i = 0; i < r->n_regions; i++)
		if (r->state[i] == REG_READY)
			gpu_drv.cuMemHostUnregister(r->map + (size_t) i * FILE_REG_REGION);
	reg_pinned -= r->pinned;
	svc_file_map_close(r->fmap);
	free(r->state);
	free(r);
	reg_n_files--;
}

/*
 * reg_evict: drops the unheld entries, replaced files first, then the least
 * recently used, until want more bytes fit (want 0: until the entries are
 * fewer than FILE_REG_MAX_FILES); only entries with nothing registered when
 * unregister is false (no context current); reg_lock held
 */
static void
reg_evict(uint64_t want, bool unregister)
{
	/* the unheld entries of replaced files first: no run finds them again */
	for (FileReg **p = &reg_files; unregister && *p != NULL;)
	{
		FileReg    *r = *p;

		if ((r->replaced || svc_file_map_lost(r->fmap)) && r->refs == 0)
		{
			*p = r->next;
			reg_drop(r);
		}
		else
			p = &r->next;
	}
	for (;;)
	{
		FileReg   **victim = NULL;

		if (want > 0 ? reg_pinned + want <= reg_limit : reg_n_files < FILE_REG_MAX_FILES)
			return;
		for (FileReg **p = &reg_files; *p != NULL; p = &(*p)->next)
		{
			FileReg    *r = *p;

			if (r->refs > 0 || (!unregister && r->pinned > 0))
				continue;
			if (victim == NULL || (r->replaced && !(*victim)->replaced) ||
				(r->replaced == (*victim)->replaced && r->last_use < (*victim)->last_use))
				victim = p;
		}
		if (victim == NULL)
			return;
		{
			FileReg    *r = *victim;

			*victim = r->next;
			reg_drop(r);
		}
	}
}

FileReg *
file_reg_acquire(const GpuCacheFileId *id, int fd)
{
	FileReg    *r;
	size_t		page = (size_t) sysconf(_SC_PAGESIZE);

	if (reg_limit == 0 || id->ino == 0 || id->size <= 0)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	for (r = reg_files; r != NULL; r = r->next)
	{
		if (svc_file_map_lost(r->fmap))
			r->replaced = true;
		else if (memcmp(&r->id, id, sizeof(*id)) == 0)
			break;
		if (r->id.dev == id->dev && r->id.ino == id->ino)
			r->replaced = true;
	}
	if (r == NULL)
	{
		reg_evict(0, false);
		r = calloc(1, sizeof(FileReg));
		if (r != NULL)
		{
			r->id = *id;
			r->map_len = ((size_t) id->size + page - 1) / page * page;
			r->n_regions = (int32_t) ((r->map_len + FILE_REG_REGION - 1) / FILE_REG_REGION);
			r->state = calloc((size_t) r->n_regions, 1);
			r->fmap = r->state != NULL ? svc_file_map_open(fd, (size_t) id->size) : NULL;
			if (r->fmap == NULL)
			{
				free(r->state);
				free(r);
				r = NULL;
			}
			else
			{
				r->map = (uint8_t *) svc_file_map_bytes(r->fmap);
				r->next = reg_files;
				reg_files = r;
				reg_n_files++;
			}
		}
	}
	if (r != NULL)
		r->refs++;
	pthread_mutex_unlock(&reg_lock);
	return r;
}

void
file_reg_release(FileReg *r)
{
	if (r == NULL)
		return;
	pthread_mutex_lock(&reg_lock);
	r->refs--;
	r->last_use = ++reg_tick;
	pthread_mutex_unlock(&reg_lock);
}

const uint8_t *
file_reg_addr(const FileReg *r, int64_t off)
{
	return r->map + off;
}

void
file_reg_regions(int64_t off, size_t len, int32_t *first, int32_t *last)
{
	*first = (int32_t) (off / FILE_REG_REGION);
	*last = (int32_t) ((off + (int64_t) (len > 0 ? len : 1) - 1) / FILE_REG_REGION);
}

bool
file_reg_ready(const FileReg *r, int32_t i)
{
	return i >= 0 && i < r->n_regions &&
		__atomic_load_n(&r->state[i], __ATOMIC_ACQUIRE) == REG_READY;
}

int64_t
file_reg_region(FileReg *r, int32_t i, CUcontext ctx)
{
	size_t		len;
	CUresult	rc;
	CUcontext	popped;

	if (i < 0 || i >= r->n_regions)
		return -1;
	len = region_len(r, i);
	pthread_mutex_lock(&reg_lock);
	while (r->state[i] == REG_BUSY)
		pthread_cond_wait(&reg_done, &reg_lock);
	if (r->state[i] != REG_NONE)
	{
		int64_t		ready = r->state[i] == REG_READY ? 0 : -1;

		pthread_mutex_unlock(&reg_lock);
		return ready;
	}
	if (gpu_drv.cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
	{
		pthread_mutex_unlock(&reg_lock);
		return -1;
	}
	reg_evict(len, true);
	if (reg_pinned + len > reg_limit)
	{
		gpu_drv.cuCtxPopCurrent(&popped);
		pthread_mutex_unlock(&reg_lock);
		return -1;
	}
	reg_pinned += len;
	r->state[i] = REG_BUSY;
	pthread_mutex_unlock(&reg_lock);

	rc = gpu_drv.cuMemHostRegister(r->map + (size_t) i * FILE_REG_REGION, len,
								   CU_MEMHOSTREGISTER_READ_ONLY | CU_MEMHOSTREGISTER_PORTABLE);
	gpu_drv.cuCtxPopCurrent(&popped);

	pthread_mutex_lock(&reg_lock);
	if (rc == CUDA_SUCCESS)
		r->pinned += len;
	else
		reg_pinned -= len;
	__atomic_store_n(&r->state[i], rc == CUDA_SUCCESS ? REG_READY : REG_REFUSED, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&reg_done);
	pthread_mutex_unlock(&reg_lock);
	return rc == CUDA_SUCCESS ? (int64_t) len : -1;
}
