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
 * context) region by region, in the background: a run that needs bytes of
 * a region not registered yet reads them with pread, as it would with
 * registration off, and queues the region for the registering thread (one
 * for the service, at nice FILE_REG_NICE, started while there is work),
 * which registers it once its pages are in the page cache and no run is in
 * progress (file_reg_run_begin/_end; a region waits at most
 * FILE_REG_DEFER_MS for that); the runs after copy from it.  So registering
 * never makes a run wait, nor competes with its reads and copies (it costs
 * a pass over the region's pages: about a second for a 10 GB file on the
 * H200 host, once), and a file that is not in the page cache is not read from
 * the disk a second time by the registration: a region whose sampled pages
 * are not all cached (preadv2 RWF_NOWAIT of a byte every
 * FILE_REG_SAMPLE bytes, through a descriptor with read-ahead off: a miss
 * reads that one page) is left for a later run to queue again.
 * The mapping is file_map.c's: were a page of it touched by the CPU after
 * the file shrank (the stand-in driver of the tests copies with memcpy),
 * the fault is caught and the mapping marked lost, which fails the run
 * (input.c) and retires the entry.
 * An entry is keyed by the file's identity (device, inode, size,
 * modification and change times, as the GPU column cache's), so a file
 * replaced or rewritten is a new entry; the old one is dropped once no run
 * holds it and no region of it is queued.  The CPU never reads a mapping:
 * only the device's copies do, so a file truncated while registered cannot
 * fault the service (the pinned pages stay readable); the run that read it
 * fails at its end, when input.c finds the file changed.  Utf8 offsets are
 * never copied from here: the input path reads them into memory of its own
 * to check them, which a writer cannot change under the check.
 *
 * The registered bytes over all files stay within --pinned-files (pinned
 * pages are memory the kernel cannot reclaim); to make room, the entries
 * no run holds go first, replaced files before the least recently used.
 * A region the driver refuses (a file system whose pages cannot be
 * pinned) is not tried again for that entry; its bytes are read with pread.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "service/file_map.h"
#include "service/file_reg.h"
#include "service/service.h"

#define FILE_REG_MAX_FILES	256	/* entries kept, held or not (file_map.c has 4096 slots) */
#define FILE_REG_NICE		10	/* the registering thread's nice value */
#define FILE_REG_SAMPLE		(64 << 10)	/* a region's pages sampled this far apart */
#define FILE_REG_DEFER_MS	250		/* the longest a region waits for the runs to end */
/* the list of registered files kept across restarts, in the data directory */
#define FILE_REG_LIST		"pg_warp_pinned_files"
#define FILE_REG_LIST_HEAD	"pg_warp pinned files 1\n"

enum
{
	REG_NONE = 0,				/* not registered */
	REG_QUEUED,					/* queued for, or being registered */
	REG_READY,					/* registered: copies may read it */
	REG_REFUSED					/* the driver refused it: never tried again */
};

/* a region queued for the registering thread (holding a reference to r) */
typedef struct RegJob
{
	struct RegJob *next;
	FileReg    *r;
	int32_t		region;
	CUcontext	ctx;
} RegJob;

struct FileReg
{
	FileReg    *next;
	GpuCacheFileId id;
	SvcFileMap *fmap;
	int			fd;				/* a descriptor of its own (sample_fd) */
	uint8_t    *map;				/* its bytes */
	size_t		map_len;		/* the file's size in whole pages */
	int32_t		n_regions;
	uint8_t    *state;			/* per region (atomic reads outside the lock) */
	uint64_t	pinned;			/* bytes of its registered regions */
	int			refs;
	bool		replaced;		/* a newer version of the file was acquired */
	uint64_t	last_use;
	char	   *path;			/* where it was opened (NULL: not known), for the list */
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static FileReg *reg_files;
static int	reg_n_files;
static uint64_t reg_limit;
static bool reg_restore = true;	/* file_reg_restore restores */
static bool reg_keep_list;		/* file_reg_keep_list: the service keeps FILE_REG_LIST */
static uint64_t reg_pinned;		/* registered or being registered, all files */
static uint64_t reg_tick;
static RegJob *reg_jobs;		/* the queue, oldest first */
static RegJob **reg_jobs_tail = &reg_jobs;
static uint64_t reg_queued;		/* bytes of its regions */
static bool reg_thread_running;
static bool reg_stopped;		/* file_reg_stop: nothing more is queued */
static pthread_cond_t reg_idle = PTHREAD_COND_INITIALIZER;
static int	reg_runs;			/* runs between file_reg_run_begin and _end */
static pthread_cond_t reg_runs_done = PTHREAD_COND_INITIALIZER;	/* reg_runs fell to 0 */
static bool reg_changed;		/* regions registered or entries dropped since the list was saved */
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;	/* one writer of the list */

void
file_reg_set_limit(uint64_t bytes)
{
	reg_limit = bytes;
}

void
file_reg_set_restore(bool on)
{
	reg_restore = on;
}

void
file_reg_keep_list(void)
{
	reg_keep_list = true;
}

uint64_t
file_reg_limit(void)
{
	return reg_limit;
}

void
file_reg_stats(uint64_t *pinned, uint64_t *queued)
{
	pthread_mutex_lock(&reg_lock);
	*pinned = reg_pinned;
	*queued = reg_queued;
	pthread_mutex_unlock(&reg_lock);
}

static size_t
region_len(const FileReg *r, int32_t i)
{
	size_t		start = (size_t) i * FILE_REG_REGION;

	return r->map_len - start < (size_t) FILE_REG_REGION ? r->map_len - start :
		(size_t) FILE_REG_REGION;
}

/*
 * sample_fd: a descriptor of the file open as fd, of its own (opened again
 * through /proc/self/fd: the same inode, another open file), with read-ahead
 * off, for region_cached: a sample that misses the page cache then reads
 * that page only, and the runs' descriptor keeps its read-ahead; -1 when it
 * cannot be opened
 */
static int
sample_fd(int fd)
{
	char		path[64];
	int			own;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((own = open(path, O_RDONLY | O_CLOEXEC)) >= 0)
		(void) posix_fadvise(own, 0, 0, POSIX_FADV_RANDOM);
	return own;
}

/*
 * fd_path: the path the file open as fd was opened by (malloc'd), for the
 * list of registered files; NULL when not known, deleted, or not one line
 */
static char *
fd_path(int fd)
{
	char		link[64];
	char		buf[4096];
	ssize_t		n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/' || (size_t) n >= sizeof(buf) - 1)
		return NULL;
	buf[n] = '\0';
	if (strchr(buf, '\n') != NULL ||
		(n > 10 && strcmp(buf + n - 10, " (deleted)") == 0))
		return NULL;
	return strdup(buf);
}

/* unregisters every registered region of r and unmaps it (reg_lock held) */
static void
reg_drop(FileReg *r)
{
	for (int32_t i = 0; i < r->n_regions; i++)
		if (r->state[i] == REG_READY)
			gpu_drv.cuMemHostUnregister(r->map + (size_t) i * FILE_REG_REGION);
	reg_pinned -= r->pinned;
	reg_changed |= r->pinned > 0;
	svc_file_map_close(r->fmap);
	close(r->fd);
	free(r->state);
	free(r->path);
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
			r->fd = r->state != NULL ? sample_fd(fd) : -1;
			r->fmap = r->fd >= 0 ? svc_file_map_open(fd, (size_t) id->size) : NULL;
			if (r->fmap == NULL)
			{
				if (r->fd >= 0)
					close(r->fd);
				free(r->state);
				free(r);
				r = NULL;
			}
			else
			{
				r->map = (uint8_t *) svc_file_map_bytes(r->fmap);
				r->path = fd_path(fd);
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

size_t
file_reg_piece(int64_t off, size_t len, int32_t i, int64_t *from)
{
	int64_t		to = (int64_t) (i + 1) * FILE_REG_REGION;

	*from = (int64_t) i * FILE_REG_REGION > off ? (int64_t) i * FILE_REG_REGION : off;
	if (to > off + (int64_t) len)
		to = off + (int64_t) len;
	return (size_t) (to - *from);
}

/* are all of region i's sampled pages in the page cache (reg_lock not held) */
static bool
region_cached(const FileReg *r, int32_t i)
{
	int64_t		from = (int64_t) i * FILE_REG_REGION;
	int64_t		to = from + (int64_t) region_len(r, i);
	char		byte;

	if (to > r->id.size)
		to = r->id.size;
	for (int64_t off = from; off < to; off += FILE_REG_SAMPLE)
	{
		struct iovec iov = {.iov_base = &byte, .iov_len = 1};
		ssize_t		n = preadv2(r->fd, &iov, 1, off, RWF_NOWAIT);

		/* a file system without RWF_NOWAIT: the pages are taken to be there */
		if (n < 0 && (errno == EOPNOTSUPP || errno == EINVAL))
			return true;
		if (n != 1)
			return false;
	}
	return true;
}

/*
 * reg_one: registers job j's region if its pages are cached and the budget
 * has room, else leaves it to be queued again; drops the job's reference
 * (reg_lock held, released while the driver registers)
 */
static void
reg_one(RegJob *j)
{
	FileReg    *r = j->r;
	int32_t		i = j->region;
	size_t		len = region_len(r, i);
	uint8_t		state = REG_NONE;
	CUcontext	popped;

	if (!r->replaced && !svc_file_map_lost(r->fmap))
	{
		bool		cached;

		pthread_mutex_unlock(&reg_lock);
		cached = region_cached(r, i);
		pthread_mutex_lock(&reg_lock);
		if (cached && gpu_drv.cuCtxPushCurrent(j->ctx) == CUDA_SUCCESS)
		{
			reg_evict(len, true);
			if (reg_pinned + len <= reg_limit)
			{
				CUresult	rc;

				reg_pinned += len;
				pthread_mutex_unlock(&reg_lock);
				rc = gpu_drv.cuMemHostRegister(r->map + (size_t) i * FILE_REG_REGION, len,
											   CU_MEMHOSTREGISTER_READ_ONLY |
											   CU_MEMHOSTREGISTER_PORTABLE);
				pthread_mutex_lock(&reg_lock);
				if (rc == CUDA_SUCCESS)
				{
					r->pinned += len;
					reg_changed = true;
				}
				else
					reg_pinned -= len;
				state = rc == CUDA_SUCCESS ? REG_READY : REG_REFUSED;
			}
			gpu_drv.cuCtxPopCurrent(&popped);
		}
	}
	__atomic_store_n(&r->state[i], state, __ATOMIC_RELEASE);
	r->refs--;
}

void
file_reg_run_begin(void)
{
	pthread_mutex_lock(&reg_lock);
	reg_runs++;
	pthread_mutex_unlock(&reg_lock);
}

void
file_reg_run_end(void)
{
	pthread_mutex_lock(&reg_lock);
	if (--reg_runs == 0)
		pthread_cond_broadcast(&reg_runs_done);
	pthread_mutex_unlock(&reg_lock);
}

/*
 * reg_wait_runs: waits until no run is in progress, the service stops, or
 * FILE_REG_DEFER_MS passed (so that runs that always overlap still let a
 * region be registered now and then); reg_lock held
 */
static void
reg_wait_runs(void)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += (long) FILE_REG_DEFER_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	while (reg_runs > 0 && !reg_stopped &&
		   pthread_cond_timedwait(&reg_runs_done, &reg_lock, &until) == 0)
		;
}

static void list_save(void);

/*
 * the registering thread: the queue's jobs in order, each once no run is
 * reading (reg_wait_runs), then it ends.  Registering beside a run's own
 * reads and copies slowed them (a first run after a restart read the page
 * cache at 38-45 % of the pinned rate against 59-78 % before registration
 * ran in the background, H200 host): it only makes later runs faster, so
 * it gives way to the runs.
 */
static void *
reg_main(void *arg)
{
	(void) arg;
	(void) setpriority(PRIO_PROCESS, (id_t) syscall(SYS_gettid), FILE_REG_NICE);
	pthread_mutex_lock(&reg_lock);
	while (reg_jobs != NULL)
	{
		RegJob	   *j;
		size_t		len;

		reg_wait_runs();
		/* file_reg_stop may have emptied the queue meanwhile */
		if ((j = reg_jobs) == NULL)
			break;
		len = region_len(j->r, j->region);
		if ((reg_jobs = j->next) == NULL)
			reg_jobs_tail = &reg_jobs;
		reg_one(j);
		/* counted as queued until done, so that nothing queued means all done */
		reg_queued -= len;
		free(j);
	}
	reg_thread_running = false;
	pthread_cond_broadcast(&reg_idle);
	pthread_mutex_unlock(&reg_lock);
	list_save();
	return NULL;
}

/* unqueues every job not started (reg_lock held) */
static void
reg_unqueue(void)
{
	while (reg_jobs != NULL)
	{
		RegJob	   *j = reg_jobs;

		reg_jobs = j->next;
		reg_queued -= region_len(j->r, j->region);
		j->r->state[j->region] = REG_NONE;
		j->r->refs--;
		free(j);
	}
	reg_jobs_tail = &reg_jobs;
}

void
file_reg_stop(void)
{
	pthread_mutex_lock(&reg_lock);
	reg_stopped = true;
	reg_unqueue();
	pthread_cond_broadcast(&reg_runs_done);
	while (reg_thread_running)
		pthread_cond_wait(&reg_idle, &reg_lock);
	pthread_mutex_unlock(&reg_lock);
	list_save();
}

void
file_reg_drop_unheld(void)
{
	pthread_mutex_lock(&reg_lock);
	for (FileReg **p = &reg_files; *p != NULL;)
	{
		FileReg    *r = *p;

		if (r->refs == 0)
		{
			*p = r->next;
			reg_drop(r);
		}
		else
			p = &r->next;
	}
	pthread_mutex_unlock(&reg_lock);
}

static bool
region_ready(const FileReg *r, int32_t i)
{
	return __atomic_load_n(&r->state[i], __ATOMIC_ACQUIRE) == REG_READY;
}

bool
file_reg_want(FileReg *r, int64_t off, size_t len, CUcontext ctx, uint64_t *queued)
{
	int32_t		first,
				last;
	bool		ready = true;
	uint64_t	added = 0;

	file_reg_regions(off, len, &first, &last);
	if (first < 0 || last >= r->n_regions)
		return false;
	for (int32_t i = first; i <= last && ready; i++)
		ready = region_ready(r, i);
	if (ready)
		return true;
	pthread_mutex_lock(&reg_lock);
	for (int32_t i = first; i <= last && !reg_stopped; i++)
	{
		RegJob	   *j;

		if (r->state[i] != REG_NONE || (j = calloc(1, sizeof(RegJob))) == NULL)
			continue;
		j->r = r;
		j->region = i;
		j->ctx = ctx;
		*reg_jobs_tail = j;
		reg_jobs_tail = &j->next;
		r->state[i] = REG_QUEUED;
		r->refs++;
		reg_queued += region_len(r, i);
		added += region_len(r, i);
	}
	if (reg_jobs != NULL && !reg_thread_running)
	{
		pthread_t	t;
		pthread_attr_t attr;

		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		reg_thread_running = pthread_create(&t, &attr, reg_main, NULL) == 0;
		pthread_attr_destroy(&attr);
		/*
		 * no thread (a thread limit): the queue, only this call's jobs (the
		 * thread ends when it finds it empty), goes; a later run queues again
		 */
		if (!reg_thread_running)
		{
			reg_unqueue();
			added = 0;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	*queued += added;
	return false;
}

/* ---------------- the list kept across restarts ---------------- */

/*
 * The registrations end with the service, and the first run after a
 * restart would read every file with pread again (on the H200 host 38 GB/s
 * against 52 GB/s from registered pages, SSB SF 20).  So the service keeps
 * a list of what it has registered, FILE_REG_LIST in the data directory:
 * per file its identity, its path and the ranges of regions registered,
 * written (a new file renamed over the old one) whenever the registering
 * thread runs out of work after registering or dropping anything, and at
 * the end.  At its start (file_reg_restore) the service queues those
 * regions again for the registering thread, for each file whose path
 * still leads to the same identity: a file replaced or rewritten since is
 * left out, as are regions whose pages are no longer in the page cache
 * (region_cached: the list never reads a file from the disk).  The list
 * is a hint: a missing, damaged or foreign one is ignored.
 */

/* the ranges of r's registered regions, " first-last" each, to m (reg_lock held) */
static void
list_ranges(FILE *m, const FileReg *r)
{
	for (int32_t i = 0; i < r->n_regions; i++)
	{
		int32_t		j = i;

		if (r->state[i] != REG_READY)
			continue;
		while (j + 1 < r->n_regions && r->state[j + 1] == REG_READY)
			j++;
		fprintf(m, " %d-%d", i, j);
		i = j;
	}
}

/* writes FILE_REG_LIST when the registrations changed since the last time */
static void
list_save(void)
{
	char	   *buf = NULL;
	size_t		len = 0;
	int			n = 0;
	FILE	   *m;

	pthread_mutex_lock(&list_lock);
	pthread_mutex_lock(&reg_lock);
	if (!reg_keep_list || !reg_changed || reg_limit == 0 ||
		(m = open_memstream(&buf, &len)) == NULL)
	{
		pthread_mutex_unlock(&reg_lock);
		pthread_mutex_unlock(&list_lock);
		return;
	}
	reg_changed = false;
	fputs(FILE_REG_LIST_HEAD, m);
	for (FileReg *r = reg_files; r != NULL; r = r->next)
	{
		if (r->replaced || r->path == NULL || r->pinned == 0 || svc_file_map_lost(r->fmap))
			continue;
		fprintf(m, "%" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64,
				r->id.dev, r->id.ino, r->id.size, r->id.mtime_ns, r->id.ctime_ns);
		list_ranges(m, r);
		fprintf(m, "\t%s\n", r->path);
		n++;
	}
	pthread_mutex_unlock(&reg_lock);
	if (fclose(m) == 0 && buf != NULL)
	{
		int			fd = n > 0 ? open(FILE_REG_LIST ".tmp",
									  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
		bool		ok = fd >= 0 && write(fd, buf, len) == (ssize_t) len;

		if (fd >= 0 && close(fd) == 0 && ok)
			ok = rename(FILE_REG_LIST ".tmp", FILE_REG_LIST) == 0;
		if (n == 0)
			(void) unlink(FILE_REG_LIST);
		else if (!ok)
		{
			svc_log("WARNING", "could not write \"%s\": %s", FILE_REG_LIST, strerror(errno));
			(void) unlink(FILE_REG_LIST ".tmp");
		}
	}
	free(buf);
	pthread_mutex_unlock(&list_lock);
}

/*
 * list_restore_one: line (NUL-terminated, without its newline) of the
 * list: its file's regions queued again (in context ctx) when its path
 * leads to the same file; the bytes queued to *queued.  False when the
 * line does not name a file that is still there, unchanged.
 */
static bool
list_restore_one(char *line, CUcontext ctx, uint64_t *queued)
{
	GpuCacheFileId id;
	GpuCacheFileId now;
	struct stat st;
	char	   *tab = strchr(line, '\t');
	char	   *p;
	int			used = 0;
	int			fd;
	FileReg    *r;

	memset(&id, 0, sizeof(id));
	if (tab == NULL || tab[1] != '/')
		return false;
	*tab = '\0';
	if (sscanf(line, "%" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 " %" SCNd64 "%n",
			   &id.dev, &id.ino, &id.size, &id.mtime_ns, &id.ctime_ns, &used) != 5)
		return false;
	/* O_NONBLOCK: a FIFO that took the file's place does not stop the start */
	fd = open(tab + 1, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
		(now = warp_file_id_of(&st), !warp_file_id_equal(&now, &id)) ||
		(r = file_reg_acquire(&now, fd)) == NULL)
	{
		close(fd);
		return false;
	}
	close(fd);
	p = line + used;
	for (;;)
	{
		int64_t		first,
					last;
		int			n = 0;

		if (sscanf(p, " %" SCNd64 "-%" SCNd64 "%n", &first, &last, &n) != 2 || n == 0)
			break;
		p += n;
		for (int64_t i = first < 0 ? 0 : first; i <= last && i < r->n_regions; i++)
			(void) file_reg_want(r, i * FILE_REG_REGION, region_len(r, (int32_t) i), ctx,
								 queued);
	}
	file_reg_release(r);
	return true;
}

void
file_reg_restore(CUcontext ctx)
{
	FILE	   *f;
	char		line[8192];		/* a line of the list: a path of up to 4095 bytes fits */
	int			files = 0,
				gone = 0;
	uint64_t	queued = 0;

	file_reg_keep_list();
	if (reg_limit == 0 || !reg_restore || (f = fopen(FILE_REG_LIST, "re")) == NULL)
		return;
	if (fgets(line, sizeof(line), f) == NULL || strcmp(line, FILE_REG_LIST_HEAD) != 0)
		svc_log("WARNING", "\"%s\" is not a list of pinned files: ignored", FILE_REG_LIST);
	else
	{
		/* at most the entries the service keeps; a line too long is no entry */
		while (files + gone < 4 * FILE_REG_MAX_FILES && fgets(line, sizeof(line), f) != NULL)
		{
			size_t		n = strlen(line);

			if (n == 0 || line[n - 1] != '\n')
			{
				int			c;

				while ((c = getc(f)) != EOF && c != '\n')
					;
				if (c == EOF)
					break;		/* cut short: the last line is not whole */
				gone++;
				continue;
			}
			line[n - 1] = '\0';
			if (list_restore_one(line, ctx, &queued))
				files++;
			else
				gone++;
		}
		svc_log("LOG", "pinned files: %d file(s) pinned before the restart queued to be pinned "
				"again (%" PRIu64 " MB), %d changed or gone", files, queued >> 20, gone);
	}
	fclose(f);
}
