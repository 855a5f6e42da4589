/*-------------------------------------------------------------------------
 *
 * util.c
 *		Messages, exits, allocation and small helpers shared by pg2arrow,
 *		arrow-inspect and arrow-gen (see util.h).
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

const char *progname = "pg_warp";

/* Sets the name every message starts with */
void
set_progname(const char *name)
{
	progname = name;
}

/* "prog: " + the formatted message + newline, to stderr */
static void
vreport(const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: ", progname);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

/* Prints "prog: message" (and a newline) to stderr */
void
report(const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
}

/*
 * Reports and exits with status 1.  Standard output is flushed first, so
 * that what a tool printed before the error comes out before it.
 */
void
fatal(const char *fmt,...)
{
	va_list		ap;

	fflush(stdout);
	va_start(ap, fmt);
	vreport(fmt, ap);
	va_end(ap);
	exit(1);
}

/* The hint after a usage error; exits with status */
void
try_help(int status)
{
	fprintf(stderr, "Try \"%s --help\" for more information.\n", progname);
	exit(status);
}

/*
 * malloc, calloc, realloc, strdup, strndup and asprintf that end the
 * program (fatal: "out of memory") instead of returning NULL.  A size of 0
 * allocates 1 byte, so that NULL never means success.
 */
void *
xmalloc(size_t size)
{
	void	   *p = malloc(size ? size : 1);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void	   *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

void *
xrealloc(void *p, size_t size)
{
	void	   *q = realloc(p, size ? size : 1);

	if (q == NULL)
		fatal("out of memory");
	return q;
}

char *
xstrdup(const char *s)
{
	char	   *p = strdup(s);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char	   *p = strndup(s, n);

	if (p == NULL)
		fatal("out of memory");
	return p;
}

char *
xasprintf(const char *fmt,...)
{
	va_list		ap;
	char	   *p;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		fatal("out of memory");
	va_end(ap);
	return p;
}

/* The value of hex digit c (either case), or -1 */
int
hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Frees custom metadata built with the default allocator (such as by
 * arrow_metadata_set(NULL, ...)); md becomes empty.
 */
void
free_metadata(ArrowMetadata *md)
{
	for (int32_t i = 0; i < md->count; i++)
	{
		free(md->items[i].key);
		free(md->items[i].value);
	}
	free(md->items);
	memset(md, 0, sizeof(*md));
}
