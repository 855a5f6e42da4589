/*-------------------------------------------------------------------------
 *
 * gpu_join_memfd.c
 *		A GpuJoin inner table's memfd, and the table written into it by
 *		several threads.  No PostgreSQL call (gpu_join_memfd.h).
 *
 * Most of making a table after its inner rows were scanned was its memfd's
 * pages, allocated, zeroed and mapped by MAP_POPULATE: 9 of the 13 ms of a
 * 13.6 MB table on the development VM (bench/join_build_bench.c).  So
 * gpu_join_table.c makes the memfd (gj_memfd_make) while the rows are
 * scanned, of the size the planner's rows give, and fits it to the table
 * once laid out (gj_memfd_fit): grown where more rows came (the mapping
 * extended in place, the rest populated), kept where fewer did and shrunk
 * once written (gj_memfd_finish), not used where it is over twice the table
 * (freeing pages costs about a third of what making them did: 0.33 ms a MB
 * there, so it is let go by a detached thread, and a fresh memfd made).
 *
 * A large table is written by several threads (gj_table_write): the header
 * (and the hash form's sort of all rows) first, then the runs of rows (the
 * leader's own, each participant's image), which write bytes of their own.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/gpu_join_memfd.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23	/* Linux 5.14 */
#endif

/* a table of this many bytes or more is written by several threads ... */
#define GJ_WRITE_THREADED	((uint64_t) 4 << 20)
/* ... up to this many */
#define GJ_WRITE_THREADS	8

/*
 * gj_memfd_make: m, a fresh memfd of len bytes (0), mapped populated;
 * false (errno) where it cannot be made
 */
bool
gj_memfd_make(GjMemfd *m, uint64_t len)
{
	int			fd = memfd_create("pg_warp_join", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void	   *p;
	int			e;

	if (fd < 0)
		return false;
	if (ftruncate(fd, (off_t) len) != 0 ||
		(p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) ==
		MAP_FAILED)
	{
		e = errno;
		close(fd);
		errno = e;
		return false;
	}
	m->fd = fd;
	m->map = p;
	m->len = len;
	return true;
}

/*
 * gj_memfd_fit: m (made ahead) fitted to a table of len bytes: grown where
 * it is smaller, kept where it is larger (gj_memfd_finish shrinks it);
 * false, m let go, where it cannot grow or is more than twice the table
 */
bool
gj_memfd_fit(GjMemfd *m, uint64_t len)
{
	void	   *p;

	if (m->len > 2 * len + GJ_MEMFD_SLACK)
	{
		gj_memfd_drop(m, true);
		return false;
	}
	if (len <= m->len)
		return true;
	if (ftruncate(m->fd, (off_t) len) != 0 ||
		(p = mremap(m->map, m->len, len, MREMAP_MAYMOVE)) == MAP_FAILED)
	{
		gj_memfd_drop(m, false);
		return false;
	}
	/* the rest populated as a fresh memfd's would be (older kernels fault it in) */
	(void) madvise((uint8_t *) p + m->len, len - m->len, MADV_POPULATE_WRITE);
	m->map = p;
	m->len = len;
	return true;
}

/*
 * gj_memfd_finish: m (the table written, len bytes) unmapped and shrunk to
 * len; false (errno, m let go) where it cannot be shrunk
 */
bool
gj_memfd_finish(GjMemfd *m, uint64_t len)
{
	int			e;

	munmap(m->map, m->len);
	m->map = NULL;
	if (m->len > len && ftruncate(m->fd, (off_t) len) != 0)
	{
		e = errno;
		close(m->fd);
		m->fd = -1;
		errno = e;
		return false;
	}
	m->len = len;
	return true;
}

/*
 * a memfd let go in the background: its pages freed by the truncation
 * first, which takes no lock of the process's mappings that munmap holds
 * while it frees them (a make's mmap in the backend would wait for it)
 */
static void *
gj_memfd_drop_thread(void *arg)
{
	GjMemfd    *m = arg;

	if (ftruncate(m->fd, 0) != 0)
	{
		/* the pages are then freed by the unmap and the close */
	}
	munmap(m->map, m->len);
	close(m->fd);
	free(m);
	return NULL;
}

/*
 * gj_thread_start: fn(arg) run by a new thread (detached: joined by no one)
 * that takes no signal, so that PostgreSQL's handlers stay the backend's;
 * false where none could be had
 */
bool
gj_thread_start(pthread_t *tid, bool detached, void *(*fn) (void *), void *arg)
{
	pthread_attr_t attr;
	sigset_t	all,
				old;
	bool		started;

	if (pthread_attr_init(&attr) != 0)
		return false;
	if (detached)
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	started = pthread_create(tid, &attr, fn, arg) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	return started;
}

/*
 * gj_memfd_drop: m (mapped) unmapped and closed; with background, by a
 * detached thread where one can be had
 */
void
gj_memfd_drop(GjMemfd *m, bool background)
{
	GjMemfd    *copy = background ? malloc(sizeof(GjMemfd)) : NULL;
	pthread_t	tid;

	if (copy != NULL)
	{
		*copy = *m;
		if (!gj_thread_start(&tid, true, gj_memfd_drop_thread, copy))
		{
			free(copy);
			copy = NULL;
		}
	}
	if (copy == NULL)
	{
		munmap(m->map, m->len);
		close(m->fd);
	}
	m->fd = -1;
	m->map = NULL;
}

typedef struct GjWriter
{
	XpuJoinBuilder *b;
	void	   *dst;
	int			first;			/* runs first, first + step, ... */
	int			step;
} GjWriter;

static void *
gj_writer_thread(void *arg)
{
	GjWriter   *w = arg;

	for (int r = w->first; r < xpu_join_builder_runs(w->b); r += w->step)
		xpu_join_builder_write_run(w->b, w->dst, r);
	return NULL;
}

/*
 * gj_table_write: b's table (laid out, len bytes) written at dst (zeroed):
 * where it is large, the header first, then the runs of rows by up to
 * GJ_WRITE_THREADS threads
 */
void
gj_table_write(XpuJoinBuilder *b, void *dst, uint64_t len)
{
	GjWriter	w[GJ_WRITE_THREADS];
	pthread_t	tid[GJ_WRITE_THREADS];
	bool		started[GJ_WRITE_THREADS];
	int			n = xpu_join_builder_runs(b);

	if (n > GJ_WRITE_THREADS)
		n = GJ_WRITE_THREADS;
	if (len < GJ_WRITE_THREADED || n < 2)
	{
		xpu_join_builder_write_zeroed(b, dst);
		return;
	}
	xpu_join_builder_write_head(b, dst);
	for (int i = 0; i < n; i++)
	{
		w[i].b = b;
		w[i].dst = dst;
		w[i].first = i;
		w[i].step = n;
		started[i] = i > 0 && gj_thread_start(&tid[i], false, gj_writer_thread, &w[i]);
	}
	/* this thread's share, and that of any thread that could not be had */
	for (int i = 0; i < n; i++)
		if (!started[i])
			gj_writer_thread(&w[i]);
	for (int i = 1; i < n; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
}
