/*
 * tap.h
 *		A minimal Test Anything Protocol emitter for the C unit tests in
 *		test/c.  Each test program prints "ok N - name" / "not ok N - name"
 *		lines and a final plan "1..N", and exits non-zero if any failed.
 */
#ifndef PG_WARP_TAP_H
#define PG_WARP_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int	tap_count = 0;
static int	tap_failed = 0;

/* Records one check; returns cond so callers can chain diagnostics. */
static inline int
tap_ok(int cond, const char *fmt,...)
{
	va_list		ap;

	tap_count++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_count);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return cond;
}

/* Prints a diagnostic line ("# ...") */
static inline void
tap_diag(const char *fmt,...)
{
	va_list		ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* Prints the plan; use as 'return tap_done();' at the end of main */
static inline int
tap_done(void)
{
	printf("1..%d\n", tap_count);
	return tap_failed ? 1 : 0;
}

#endif							/* PG_WARP_TAP_H */
