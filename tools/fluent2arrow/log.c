/*-------------------------------------------------------------------------
 *
 * log.c
 *		fluent2arrow: the log (stderr, or the file of log_path), the clock,
 *		and the counters that its status lines report.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <time.h>

#include "fluent2arrow.h"

Counters	g_count;

/* the totals of the last status line, and when it was written */
static Counters last_count;
static int64_t last_ms;

/* Milliseconds on the monotonic clock */
int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* "2026-11-24 23:05:00 fluent2arrow: message" on stderr (the log) */
void
logmsg(const char *fmt,...)
{
	va_list		ap;
	time_t		t = time(NULL);
	struct tm	tm;
	char		ts[32];

	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
	flockfile(stderr);			/* one line at a time from each thread */
	fprintf(stderr, "%s UTC fluent2arrow: ", ts);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	funlockfile(stderr);
}

/* Counts the first status line's rates from now */
void
stats_start(void)
{
	last_ms = now_ms();
}

/* The status line: totals and rates since the last line */
void
stats_line(bool final)
{
	int64_t		now = now_ms();
	double		dt = (now - last_ms) / 1000.0;
	uint64_t	files = __atomic_load_n(&g_count.files, __ATOMIC_RELAXED);

	if (dt <= 0)
		dt = 1e-3;
	logmsg("%sevents=%llu (%.0f/s) bytes=%llu (%.1f MB/s) frames=%llu acks=%llu files=%llu rejects=%llu bad_frames=%llu auth_failures=%llu",
		   final ? "final: " : "",
		   (unsigned long long) g_count.events, (g_count.events - last_count.events) / dt,
		   (unsigned long long) g_count.bytes, (g_count.bytes - last_count.bytes) / dt / 1e6,
		   (unsigned long long) g_count.frames, (unsigned long long) g_count.acks,
		   (unsigned long long) files, (unsigned long long) g_count.rejects,
		   (unsigned long long) g_count.bad_frames, (unsigned long long) g_count.auth_failures);
	last_count = g_count;
	last_ms = now;
}
