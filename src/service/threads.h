/*-------------------------------------------------------------------------
 *
 * threads.h
 *		The threads of the service's runs (threads.c): a run's workers, n
 *		threads over n per-thread arguments, started and joined in one
 *		place with one answer to a thread that cannot start; and the task
 *		thread that runs a request off the epoll thread (agg.c, scan.c).
 *
 * Workers.  Every caller's workers claim their work from something shared
 * (a counter of batches, a queue of heap chunks, a counter of partitions),
 * so any number of them from one up finishes it.  A thread that cannot
 * start (pthread_create fails: the process's or the user's thread limit,
 * no memory for a stack) is therefore not a failure of the run: the
 * threads that did start do the work, and when none could start the
 * calling thread runs the first worker itself.  The service logs a
 * WARNING each time.  A caller learns how many workers ran (the replies'
 * thread count): args[0 .. that - 1]; the arguments past it were never run.
 * The started workers begin together, once the last pthread_create has
 * returned, so that how many start under a thread limit does not hang on
 * whether an early one has already ended.
 *
 * The threads live for one run: starting one costs microseconds against a
 * run's milliseconds (doc/service.md "Threads"), so the service keeps no
 * pool of idle threads.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_SERVICE_THREADS_H
#define PG_WARP_SERVICE_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef void *(*SvcThreadMain) (void *arg);

/*
 * a run's workers: main over args[0 .. n - 1], each size bytes (size 0:
 * every worker gets args itself, as a merge's threads share one state)
 */
typedef struct SvcWorkers
{
	SvcThreadMain main;
	char	   *args;
	size_t		size;
	uint32_t	n;				/* asked for */
	uint32_t	started;		/* on threads of their own: args[0 .. started - 1] */
	pthread_t  *ids;			/* [n] */
	const char *what;			/* for the log: "AGG_RUN workers" */
	struct WorkerGate *gate;	/* threads.c: where the workers wait to begin */
} SvcWorkers;

extern uint32_t svc_workers_start(SvcWorkers *ws, const char *what, SvcThreadMain main,
								  void *args, size_t size, uint32_t n);
extern uint32_t svc_workers_join(SvcWorkers *ws);
extern uint32_t svc_workers_run(const char *what, SvcThreadMain main, void *args, size_t size,
								uint32_t n);

/*
 * The task thread of a request: main(arg) runs on it, then the thread
 * marks itself done and writes notify_fd (an eventfd) so that the epoll
 * thread sends the replies.  There is no inline fallback (the epoll
 * thread must not run a request): a task thread that cannot start refuses
 * the request.
 */
typedef struct SvcTaskThread
{
	pthread_t	id;
	bool		started;
	int			done;			/* atomic: main returned */
	int			notify_fd;
	const char *what;			/* the request's name, for the log */
	void		(*main) (void *arg);
	void	   *arg;
} SvcTaskThread;

extern bool svc_task_thread_start(SvcTaskThread *tt, const char *what, void (*main) (void *arg),
								  void *arg, int notify_fd, uint32_t *werr, char *msg,
								  size_t msglen);
extern bool svc_task_thread_done(const SvcTaskThread *tt);
extern void svc_task_thread_join(SvcTaskThread *tt);

#endif							/* PG_WARP_SERVICE_THREADS_H */
