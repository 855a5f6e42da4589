/*-------------------------------------------------------------------------
 *
 * file_map.c
 *		Read-only mappings of the Arrow files that CPU engine runs read in
 *		place: the workers' programs load a batch's values straight from
 *		the page cache instead of a pread copy of them (ArrowFile.map),
 *		which saves a copy of every byte read (the read rates of both
 *		paths: bench/results/README.md, bench/read_paths.c).
 *
 * A mapped file that shrinks (truncated by its owner while a query reads
 * it) would kill the service with SIGBUS on the first touch of a page past
 * its new end.  Every mapping is listed in a table of slots that the
 * SIGBUS handler reads without locks: a fault inside a listed mapping
 * replaces the rest of that mapping (from the faulting page on) with
 * zero-filled anonymous pages, marks it lost and returns, so that the
 * access reads zeros; the run that owns the mapping checks
 * svc_file_map_lost when its workers are done and fails with "changed
 * during scan", whatever else the zeros made its program do.  A SIGBUS
 * anywhere else takes its default action, as if no handler were set.
 * The same holds for a page that cannot be read (an I/O error of the
 * file's device), which also raises SIGBUS.
 *
 * What is written into the file in place while it is mapped is seen, as
 * it would be by a pread; the loader reads everything that it checks
 * (offsets, dictionary indices) into memory of its own, so such a change
 * cannot take a program outside a buffer, and the run fails when its
 * workers are done (input.c, svc_input_check_end: the modification time).
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "xpu/file_id.h"
#include "service/file_map.h"

/* mappings at once over all runs; a file past them is read with pread */
#define FILE_MAP_SLOTS	4096

typedef struct MapSlot
{
	uintptr_t	base;			/* atomic; 0: free */
	size_t		len;			/* whole pages */
	int			lost;			/* atomic: the handler replaced pages */
} MapSlot;

struct SvcFileMap
{
	int			slot;
	uint8_t    *base;
	size_t		len;
	/* a kept mapping (svc_file_map_open_kept): its file's identity, users */
	bool		kept;
	int			refs;
	uint64_t	used;
	int64_t		used_at;		/* CLOCK_MONOTONIC seconds of its last open */
	char	   *path;
	WarpFileId	id;
};

/*
 * The mappings of the files that runs read last are kept for the next run
 * of the same file (svc_file_map_open_kept), keyed by its identity (device,
 * inode, size, modification and change times: a file replaced or written
 * has another): with a mapping of its own, every run faults the file's
 * pages in again (the CPU engine's I/O Time, loading batches, was 406 ms
 * of its threads' 2,285 in a warm 16-thread GROUP BY over SSB SF 20
 * lineorder on the H200 host), and its end unmaps them (8 ms for a
 * 518 MB file on the development machine).  A kept mapping that lost
 * pages (svc_file_map_lost) is dropped once its last user closes it; an
 * unused one once its path names another file or none (the old file's
 * disk space is not held after it was replaced or removed) or after
 * FILE_MAP_IDLE seconds without a run (svc_file_map_expire).
 */
#define FILE_MAP_KEPT	8
#define FILE_MAP_IDLE	60

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static SvcFileMap *kept[FILE_MAP_KEPT];
static uint64_t kept_clock;

static MapSlot slots[FILE_MAP_SLOTS];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static bool installed;
static size_t page_size;

/*
 * The SIGBUS handler: async-signal-safe (atomic loads and stores, mmap).
 * Replaces the rest of the listed mapping that holds the faulting address,
 * or restores the default action (the access then faults again and kills
 * the process as it would have without the handler).
 */
static void
on_sigbus(int sig, siginfo_t *si, void *uctx)
{
	uintptr_t	addr = (uintptr_t) si->si_addr;
	struct sigaction dfl;

	(void) uctx;
	for (int i = 0; i < FILE_MAP_SLOTS; i++)
	{
		uintptr_t	base = __atomic_load_n(&slots[i].base, __ATOMIC_ACQUIRE);
		uintptr_t	page;

		if (base == 0 || addr < base || addr - base >= slots[i].len)
			continue;
		page = addr & ~(uintptr_t) (page_size - 1);
		if (mmap((void *) page, base + slots[i].len - page, PROT_READ,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			break;
		__atomic_store_n(&slots[i].lost, 1, __ATOMIC_RELEASE);
		return;
	}
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
}

/*
 * svc_file_map_init: installs the SIGBUS handler (once, before the first
 * run).  False when it could not: svc_file_map_open then maps nothing.
 */
bool
svc_file_map_init(void)
{
	struct sigaction sa;
	long		ps = sysconf(_SC_PAGESIZE);

	if (ps <= 0)
		return false;
	page_size = (size_t) ps;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return false;
	installed = true;
	return true;
}

/*
 * svc_file_map_open: maps the first size bytes of the file open on fd
 * read-only and lists the mapping; NULL when it cannot (no handler, an
 * empty file, no free slot, mmap failed): the caller reads the file.
 */
SvcFileMap *
svc_file_map_open(int fd, size_t size)
{
	SvcFileMap *m;
	void	   *p;
	int			i;

	if (!installed || size == 0 || (m = malloc(sizeof(SvcFileMap))) == NULL)
		return NULL;
	m->len = (size + page_size - 1) & ~(page_size - 1);
	p = mmap(NULL, m->len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
	{
		free(m);
		return NULL;
	}
	m->base = p;
	m->kept = false;
	m->path = NULL;
	pthread_mutex_lock(&slots_lock);
	for (i = 0; i < FILE_MAP_SLOTS; i++)
		if (__atomic_load_n(&slots[i].base, __ATOMIC_RELAXED) == 0)
			break;
	if (i < FILE_MAP_SLOTS)
	{
		slots[i].len = m->len;
		slots[i].lost = 0;
		__atomic_store_n(&slots[i].base, (uintptr_t) p, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&slots_lock);
	if (i == FILE_MAP_SLOTS)
	{
		munmap(p, m->len);
		free(m);
		return NULL;
	}
	m->slot = i;
	return m;
}

/* svc_file_map_bytes: the file's bytes */
const uint8_t *
svc_file_map_bytes(const SvcFileMap *m)
{
	return m->base;
}

/*
 * svc_file_map_lost: did a read of the mapping fault (the file shrank, or
 * a page could not be read) and read zeros instead
 */
bool
svc_file_map_lost(const SvcFileMap *m)
{
	return m != NULL && __atomic_load_n(&slots[m->slot].lost, __ATOMIC_ACQUIRE) != 0;
}

static int64_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec;
}

/* unlists and unmaps m: see svc_file_map_close */
static void
map_drop(SvcFileMap *m)
{
	pthread_mutex_lock(&slots_lock);
	__atomic_store_n(&slots[m->slot].base, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&slots_lock);
	munmap(m->base, m->len);
	free(m->path);
	free(m);
}

/*
 * svc_file_map_open_kept: svc_file_map_open of the whole file open on fd,
 * whose identity is st, or the kept mapping of that identity (see
 * FILE_MAP_KEPT); the caller closes it with svc_file_map_close as any
 */
SvcFileMap *
svc_file_map_open_kept(int fd, const struct stat *st, const char *path)
{
	SvcFileMap *m = NULL,
			   *old = NULL;
	WarpFileId	id = warp_file_id_of(st);
	int			victim = -1;

	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < FILE_MAP_KEPT && m == NULL; i++)
	{
		SvcFileMap *k = kept[i];

		if (k != NULL && warp_file_id_equal(&k->id, &id) && !svc_file_map_lost(k))
		{
			m = k;
			m->refs++;
			m->used = ++kept_clock;
			m->used_at = now_s();
		}
	}
	pthread_mutex_unlock(&kept_lock);
	if (m != NULL || (m = svc_file_map_open(fd, (size_t) st->st_size)) == NULL)
		return m;
	m->id = id;
	m->refs = 1;
	m->used_at = now_s();
	if ((m->path = strdup(path)) == NULL)
		return m;				/* not kept */
	/* kept in a free place, else in place of the unused one used longest ago */
	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < FILE_MAP_KEPT; i++)
		if (kept[i] == NULL || kept[i]->refs == 0)
			if (victim < 0 || (kept[victim] != NULL &&
							   (kept[i] == NULL || kept[i]->used < kept[victim]->used)))
				victim = i;
	if (victim >= 0)
	{
		old = kept[victim];
		kept[victim] = m;
		m->kept = true;
		m->used = ++kept_clock;
	}
	pthread_mutex_unlock(&kept_lock);
	if (old != NULL)
		map_drop(old);
	return m;
}

/*
 * svc_file_map_close: unlists and unmaps m (NULL: nothing); a kept mapping
 * only once it lost pages and its last user closes it, or it gives way to
 * another (svc_file_map_open_kept).  Nothing may read the mapping any
 * more: the slot is free before the pages go, so that the handler never
 * takes a later mapping at the same address for this one.
 */
void
svc_file_map_close(SvcFileMap *m)
{
	if (m == NULL)
		return;
	if (m->kept)
	{
		bool		drop;

		pthread_mutex_lock(&kept_lock);
		drop = --m->refs == 0 && svc_file_map_lost(m);
		for (int i = 0; drop && i < FILE_MAP_KEPT; i++)
			if (kept[i] == m)
				kept[i] = NULL;
		pthread_mutex_unlock(&kept_lock);
		if (!drop)
			return;
	}
	map_drop(m);
}

/*
 * svc_file_map_expire: drops the kept mappings that no run uses whose path
 * names another file or none, or that no run opened for FILE_MAP_IDLE
 * seconds (the service's loop, at most once a second)
 */
void
svc_file_map_expire(void)
{
	static int64_t last;
	int64_t		now = now_s();
	char	   *paths[FILE_MAP_KEPT];
	SvcFileMap *drop[FILE_MAP_KEPT];
	int			n = 0;

	if (now == last)
		return;
	last = now;
	pthread_mutex_lock(&kept_lock);
	for (int i = 0; i < FILE_MAP_KEPT; i++)
		paths[i] = kept[i] != NULL && kept[i]->refs == 0 ? strdup(kept[i]->path) : NULL;
	pthread_mutex_unlock(&kept_lock);
	for (int i = 0; i < FILE_MAP_KEPT; i++)
	{
		struct stat st;
		WarpFileId	id;
		bool		gone;

		if (paths[i] == NULL)
			continue;
		gone = stat(paths[i], &st) != 0;
		if (!gone)
			id = warp_file_id_of(&st);
		pthread_mutex_lock(&kept_lock);
		if (kept[i] != NULL && kept[i]->refs == 0 && strcmp(kept[i]->path, paths[i]) == 0 &&
			(gone || !warp_file_id_equal(&kept[i]->id, &id) ||
			 now - kept[i]->used_at >= FILE_MAP_IDLE))
		{
			drop[n++] = kept[i];
			kept[i] = NULL;
		}
		pthread_mutex_unlock(&kept_lock);
		free(paths[i]);
	}
	for (int i = 0; i < n; i++)
		map_drop(drop[i]);
}
