/*-------------------------------------------------------------------------
 *
 * arrow_print.h
 *		The printer of Arrow files that `arrow-inspect` and `pg2arrow --dump`
 *		share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef TOOLS_ARROW_PRINT_H
#define TOOLS_ARROW_PRINT_H

#include <stdbool.h>
#include <stdint.h>

/* What to print */
typedef struct ArrowPrintOptions
{
	bool		json;			/* the JSON-lines form of doc/arrow-json.md */
	bool		values;			/* human form: also the rows of each batch */
	int32_t		batch;			/* only record batch N (0-based); -1: all */
} ArrowPrintOptions;

/*
 * Prints the Arrow IPC file or stream at path to standard output: the
 * human form (format, schema, dictionary and record batches with the file
 * extents of their messages, nodes and buffers) or the JSON-lines form.
 * Returns the exit status: 0, or 1 after a message on stderr when there is
 * no such record batch or the output cannot be written.  A file that
 * cannot be read ends the program: "prog: PATH: message", status 1.
 */
extern int	arrow_print_file(const char *path, const ArrowPrintOptions *opts);

#endif							/* TOOLS_ARROW_PRINT_H */
