/*-------------------------------------------------------------------------
 *
 * util.h
 *		What every command-line tool of pg_warp needs: messages and exits
 *		("prog: message" on stderr), allocation that exits when memory runs
 *		out, and small helpers more than one tool uses.
 *
 * Each program sets its name once with set_progname(); every message of
 * this file starts with it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOOLS_UTIL_H
#define TOOLS_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "arrow.h"

/* The program's name, for messages ("pg2arrow", ...) */
extern const char *progname;
extern void set_progname(const char *name);

/* Prints "prog: message" (and a newline) to stderr */
extern void report(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

/*
 * report(), then exit with status 1 (standard output is flushed first).
 * Nothing is cleaned up: a tool that writes a file calls it only before
 * the file exists.
 */
extern void fatal(const char *fmt,...)
			__attribute__((format(printf, 1, 2), noreturn));

/* Prints 'Try "prog --help" for more information.' and exits with status */
extern void try_help(int status) __attribute__((noreturn));

/* malloc, calloc, realloc, strdup, asprintf that call fatal() on failure */
extern void *xmalloc(size_t size);
extern void *xcalloc(size_t n, size_t size);
extern void *xrealloc(void *p, size_t size);
extern char *xstrdup(const char *s);
extern char *xstrndup(const char *s, size_t n);
extern char *xasprintf(const char *fmt,...)
			__attribute__((format(printf, 1, 2)));

/* The value of hex digit c (either case), or -1 */
extern int	hex_digit(char c);

/* Frees custom metadata built with the default allocator; md becomes empty */
extern void free_metadata(ArrowMetadata *md);

#endif							/* TOOLS_UTIL_H */
