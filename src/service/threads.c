/*-------------------------------------------------------------------------
 *
 * threads.c
 *		Starting and joining the threads of the service's runs: a run's
 *		workers (agg.c's batch workers and merge, heap_chunk.c's chunk
 *		workers, scan.c's workers) and the task thread of a request (agg.c,
 *		scan.c).  threads.h says what happens when a thread cannot start.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service.h"
#include "service/threads.h"

/* ---------------------------------------------------------------- workers */

/*
 * The gate the workers of one start wait at until every thread that could
 * start has: a worker that ended before the next pthread_create would have
 * given its place under the user's thread limit (RLIMIT_NPROC counts live
 * threads) to one more, so how many ran would hang on timing.  On the heap:
 * the caller's SvcWorkers may move between start and join.
 */
typedef struct WorkerStart
{
	struct WorkerGate *gate;
	void	   *arg;
} WorkerStart;

typedef struct WorkerGate
{
	pthread_mutex_t lock;
	pthread_cond_t opened;
	bool		open;
	SvcThreadMain main;
	WorkerStart start[];
} WorkerGate;

static void *
worker_main(void *arg)
{
	WorkerStart *st = arg;
	WorkerGate *gate = st->gate;

	pthread_mutex_lock(&gate->lock);
	while (!gate->open)
		pthread_cond_wait(&gate->opened, &gate->lock);
	pthread_mutex_unlock(&gate->lock);
	return gate->main(st->arg);
}

/*
 * svc_workers_start: starts main(args + i * size) on a thread of its own
 * for i in 0 .. n - 1, in that order, stopping at the first thread that
 * cannot start (the next would fail as well); the workers begin once all
 * of them have started; returns the threads started (ws->started).
 * Whatever it returns, svc_workers_join must follow: it joins them, or
 * runs args[0] itself when none started.
 */
uint32_t
svc_workers_start(SvcWorkers *ws, const char *what, SvcThreadMain main, void *args, size_t size,
				  uint32_t n)
{
	int			rc = ENOMEM;
	WorkerGate *gate;

	*ws = (SvcWorkers) {main, args, size, n, 0, NULL, what, NULL};
	if (n == 0 || (ws->ids = calloc(n, sizeof(pthread_t))) == NULL ||
		(gate = malloc(offsetof(WorkerGate, start) + n * sizeof(WorkerStart))) == NULL)
		return 0;
	pthread_mutex_init(&gate->lock, NULL);
	pthread_cond_init(&gate->opened, NULL);
	gate->open = false;
	gate->main = main;
	ws->gate = gate;
	while (ws->started < n)
	{
		WorkerStart *st = &gate->start[ws->started];

		st->gate = gate;
		st->arg = ws->args + ws->started * size;
		if ((rc = pthread_create(&ws->ids[ws->started], NULL, worker_main, st)) != 0)
			break;
		ws->started++;
	}
	pthread_mutex_lock(&gate->lock);
	gate->open = true;
	pthread_cond_broadcast(&gate->opened);
	pthread_mutex_unlock(&gate->lock);
	if (ws->started < n)
		svc_log("WARNING", "%s: could not start thread %u of %u (%s): %u run the work",
				what, ws->started + 1, n, strerror(rc), ws->started ? ws->started : 1);
	return ws->started;
}

/*
 * svc_workers_join: waits for the threads that svc_workers_start started;
 * when none did, runs the first worker on the calling thread first (the
 * workers claim their work from what they share: one does it all).
 * Returns how many workers ran: args[0 .. that - 1].
 */
uint32_t
svc_workers_join(SvcWorkers *ws)
{
	uint32_t	ran = ws->started;

	if (ws->n > 0 && ws->started == 0)
	{
		ws->main(ws->args);
		ran = 1;
	}
	for (uint32_t i = 0; i < ws->started; i++)
		pthread_join(ws->ids[i], NULL);
	if (ws->gate != NULL)
	{
		pthread_mutex_destroy(&ws->gate->lock);
		pthread_cond_destroy(&ws->gate->opened);
		free(ws->gate);
		ws->gate = NULL;
	}
	free(ws->ids);
	ws->ids = NULL;
	ws->started = 0;
	return ran;
}

/*
 * svc_workers_run: runs n workers and waits for them (svc_workers_start,
 * then svc_workers_join); one worker runs on the calling thread, which
 * would only wait for it.  Returns how many workers ran.
 */
uint32_t
svc_workers_run(const char *what, SvcThreadMain main, void *args, size_t size, uint32_t n)
{
	SvcWorkers	ws;

	if (n == 1)
	{
		main(args);
		return 1;
	}
	svc_workers_start(&ws, what, main, args, size, n);
	return svc_workers_join(&ws);
}

/* ---------------------------------------------------------------- tasks */

/* the task thread: the request's main, then done and the eventfd */
static void *
task_thread_main(void *arg)
{
	SvcTaskThread *tt = arg;
	uint64_t	one = 1;

	tt->main(tt->arg);
	__atomic_store_n(&tt->done, 1, __ATOMIC_RELEASE);
	if (write(tt->notify_fd, &one, sizeof(one)) < 0)
		svc_log("WARNING", "could not signal the end of a %s: %s", tt->what, strerror(errno));
	return NULL;
}

/*
 * svc_task_thread_start: runs main(arg) on a thread of its own, which then
 * writes notify_fd (threads.h).  False with *werr (OUT_OF_MEMORY) and msg
 * set when the thread cannot start: the caller refuses the request.
 */
bool
svc_task_thread_start(SvcTaskThread *tt, const char *what, void (*main) (void *arg), void *arg,
					  int notify_fd, uint32_t *werr, char *msg, size_t msglen)
{
	int			rc;

	tt->what = what;
	tt->main = main;
	tt->arg = arg;
	tt->notify_fd = notify_fd;
	tt->done = 0;
	if ((rc = pthread_create(&tt->id, NULL, task_thread_main, tt)) != 0)
	{
		svc_log("WARNING", "could not start the thread of a %s: %s", what, strerror(rc));
		*werr = WARP_ERR_OUT_OF_MEMORY;
		snprintf(msg, msglen, "could not start a thread");
		return false;
	}
	tt->started = true;
	return true;
}

/* svc_task_thread_done: has the task's main returned (its outcome is complete) */
bool
svc_task_thread_done(const SvcTaskThread *tt)
{
	return __atomic_load_n(&tt->done, __ATOMIC_ACQUIRE) != 0;
}

/* svc_task_thread_join: waits for the task thread, if it started */
void
svc_task_thread_join(SvcTaskThread *tt)
{
	if (tt->started)
		pthread_join(tt->id, NULL);
	tt->started = false;
}
