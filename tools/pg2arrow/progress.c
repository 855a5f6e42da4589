/*-------------------------------------------------------------------------
 *
 * progress.c
 *		--progress: rows, megabytes and rates of a running export, and the
 *		percent done and time left when the row count is known.
 *
 * On a terminal the report is rewritten in place once a second; otherwise
 * it is one line a second.
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pg2arrow.h"

/* Monotonic clock in seconds */
double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The part of a report after the rates: percent and ETA when the row count
 * is estimated, and at the end the number of record batches.
 */
static void
format_extra(Export *ex, int64_t rows, double rate, bool last, char *extra,
			 size_t len)
{
	extra[0] = '\0';
	if (ex->total_rows > 0)
	{
		double		pct = 100.0 * rows / ex->total_rows;

		if (pct > 100)
			pct = 100;
		if (last)
			snprintf(extra, len, ", 100%%");
		else if (rate > 0 && rows < ex->total_rows)
		{
			int			eta = (int) ((ex->total_rows - rows) / rate);

			snprintf(extra, len, ", %.0f%%, ETA %d:%02d:%02d",
					 pct, eta / 3600, eta / 60 % 60, eta % 60);
		}
		else
			snprintf(extra, len, ", %.0f%%", pct);
	}
	if (last)
	{
		int64_t		nb = atomic_load(&ex->batches);

		snprintf(extra + strlen(extra), len - strlen(extra),
				 ", %" PRId64 " record batch%s", nb, nb == 1 ? "" : "es");
	}
}

/* Prints one --progress report (in place on a terminal); 'last' ends it */
void
print_progress(Export *ex, bool last)
{
	static bool tty = false,
				tty_checked = false;
	double		elapsed = now_seconds() - ex->start;
	int64_t		rows = atomic_load(&ex->rows);
	double		mb = atomic_load(&ex->bytes) / 1048576.0;
	double		rate = elapsed > 0 ? rows / elapsed : 0;
	char		extra[100];

	if (!tty_checked)
	{
		tty = isatty(fileno(stderr));
		tty_checked = true;
	}
	format_extra(ex, rows, rate, last, extra, sizeof(extra));
	fprintf(stderr, "%s%s: %" PRId64 " rows, %.1f MB, %.0f rows/s, %.1f MB/s%s%s",
			tty ? "\r" : "", progname, rows, mb, rate,
			elapsed > 0 ? mb / elapsed : 0, extra,
			!tty ? "\n" : last ? "\033[K\n" : "\033[K");
	fflush(stderr);
}
