/*-------------------------------------------------------------------------
 *
 * cancel.c
 *		Termination signals and query cancellation of pg2arrow.
 *
 * Every signal that would end pg2arrow by default interrupts the export
 * instead: the handler records the signal in 'interrupted' and cancels the
 * running query of every connection, and the export then removes its
 * temporary file (or puts an appended file back).  The cancel objects are
 * registered as the connections open; a failing worker cancels them too
 * (cancel_queries), so that the others stop.
 *
 *-------------------------------------------------------------------------
 */
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "pg2arrow.h"

/* Set by the signal handler; the cancel objects it uses are set up first */
atomic_int	interrupted = 0;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "signal handlers need lock-free atomic int");

/*
 * The cancel objects of the connections: the handler cancels the queries
 * of cancels[0 .. n_cancels - 1].  n_cancels is lock-free, so that both
 * the handler and the threads may use it.
 */
static PGcancel *cancels[MAX_WORKERS];
static atomic_int n_cancels = 0;

/*
 * The signals that end pg2arrow by default and can be caught.  SIGPIPE is
 * ignored instead: libpq and the stderr messages see EPIPE, and an export
 * never needs to stop for it.
 */
static const int term_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2, SIGXFSZ,
	SIGXCPU, SIGVTALRM, SIGPROF,
#ifdef SIGPWR
	SIGPWR,
#endif
#ifdef SIGPOLL
	SIGPOLL,
#endif
#ifdef SIGSTKFLT
	SIGSTKFLT,
#endif
};
#define N_TERM_SIGNALS ((int) (sizeof(term_signals) / sizeof(term_signals[0])))

/* Cancels every registered query (async-signal-safe: PQcancel is) */
void
cancel_queries(void)
{
	char		errbuf[256];
	int			n = n_cancels;

	for (int i = 0; i < n; i++)
		if (cancels[i] != NULL)
			PQcancel(cancels[i], errbuf, sizeof(errbuf));
}

/* A termination signal: remember it and cancel every running query */
static void
handle_signal(int signo)
{
	interrupted = signo;
	cancel_queries();
}

/*
 * Makes every termination signal interrupt the export (handle_signal) and
 * ignores SIGPIPE; *block gets the set of those signals, blocked while the
 * file is finished.
 */
void
install_signal_handlers(sigset_t *block)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handle_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(block);
	for (int i = 0; i < N_TERM_SIGNALS; i++)
	{
		sigaddset(&sa.sa_mask, term_signals[i]);
		sigaddset(block, term_signals[i]);
	}
	for (int i = 0; i < N_TERM_SIGNALS; i++)
		sigaction(term_signals[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Registers the cancel object of connection i (connections are opened in
 * order, from 0): from now on a signal or a failure cancels its query.
 */
void
cancel_register(int i, PGconn *conn)
{
	cancels[i] = PQgetCancel(conn);
	n_cancels = i + 1;
}

/* Forgets and frees every cancel object (before the connections close) */
void
cancel_forget_all(void)
{
	n_cancels = 0;
	for (int i = 0; i < MAX_WORKERS; i++)
	{
		if (cancels[i] != NULL)
			PQfreeCancel(cancels[i]);
		cancels[i] = NULL;
	}
}
