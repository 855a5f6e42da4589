/*-------------------------------------------------------------------------
 *
 * util.c
 *		What every file of pg_warp_service uses: its log lines, its clock,
 *		and the counters that STATUS reports (server.c counts connections
 *		and tasks, the runs the memory they hold).
 *
 * The service writes its log to stderr, which the supervisor shares with
 * PostgreSQL's server log (doc/service.md).
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service.h"

/* the counters that STATUS reports */
ServiceCounters svc_counters;

/*
 * svc_log
 *		Writes one line "TIMESTAMP [pid] pg_warp service LEVEL:  message" to
 *		stderr with a single write(), so that lines of concurrent writers to
 *		the server log never interleave.
 */
void
svc_log(const char *level, const char *fmt, ...)
{
	char		buf[1024];
	char		ts[64];
	struct tm	tm;
	time_t		now = time(NULL);
	va_list		ap;
	int			n;

	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S UTC", &tm);
	n = snprintf(buf, sizeof(buf), "%s [%d] pg_warp service %s:  ",
				 ts, (int) getpid(), level);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(buf);
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, n) < 0)
		return;					/* nowhere left to report it */
}

/* svc_now_us: the time on clock clock_id in microseconds */
int64_t
svc_now_us(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
