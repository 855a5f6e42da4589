/*-------------------------------------------------------------------------
 *
 * fdw_scan.h
 *		What arrow_fdw offers the engine (src/engine) for scans of Arrow
 *		foreign tables.
 *
 * The engine includes this header and nothing else of src/fdw: the FDW's
 * internals (fdw/arrow_fdw.h) stay private to it, so that either side can
 * change them alone.  It grows as the engine takes over Arrow scans.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_FDW_SCAN_H
#define PG_WARP_FDW_SCAN_H

#include "postgres.h"

#include "arrow.h"
#include "utils/relcache.h"

/*
 * One column of an Arrow scan as the engine may load it from the record
 * batches' ArrowArrays: the column's type and the field's layout.  plain is
 * false when the values are not in the field's own layout (dictionary or
 * run-end encoded), the column has a domain, or is a char(n) (whose reads
 * pad): the engine leaves such a column to the FDW's conversion.  checked
 * is true when the FDW's conversion of a value can raise an error that its
 * type alone does not (a domain's constraints, the length of a varchar(n)
 * or char(n)): an engine that skips rows before PostgreSQL converts them
 * must not be used on a scan that reads such a column, and the engine
 * checks a varchar(n)'s length (max_chars) on every row it reads.  An
 * engine that skips rows also loads, for every row, each referenced column
 * whose conversion may_fail (a date beyond PostgreSQL's range...), or is
 * not used: PostgreSQL's reader would raise its error on such a row.
 */
typedef struct ArrowScanColumn
{
	AttrNumber	attno;
	Oid			typid;			/* the column's type (the domain, if any) */
	bool		plain;
	bool		dict_text;		/* dictionary-encoded utf8 values, otherwise
								 * as plain: the CPU engine reads it
								 * (xpu/xpu_dict.h), never returned as is */
	bool		checked;
	bool		may_fail;		/* the FDW's conversion can raise an error for
								 * some value (arrow_conv_may_fail) */
	int32		max_chars;		/* varchar(n): n, else 0 */
	ArrowTypeId arrow_id;		/* the field's type */
	ArrowTimeUnit unit;			/* timestamps */
	int32		scale;			/* decimals */
} ArrowScanColumn;

/*
 * An Arrow foreign table as a source of record batches for the engine, which
 * reads the files itself (in the warp service): each file's path and
 * identity when it was opened here, the record batches that the statistics
 * of the quals do not rule out, and the referenced columns with the
 * top-level field each one reads (the same in every file of a table).
 */
typedef struct ArrowEngineFile
{
	const char *path;
	int64		dev;
	int64		ino;
	int64		size;
	int64		mtime_ns;
	int32		n_batches;		/* batches to read */
	int32	   *batches;
} ArrowEngineFile;

typedef struct ArrowEngineSource
{
	int			n_files;
	ArrowEngineFile *files;
	int			n_cols;
	ArrowScanColumn *cols;		/* the columns asked for, in that order */
	int		   *fields;			/* cols[i]'s top-level field */
	int64		batches_total;	/* record batches of every file */
	int64		batches_skipped;	/* ruled out by statistics */
	int64		rows_to_read;	/* rows of the batches to read */
	const void *convs;			/* cols[i]'s converter (arrow_fdw_engine_value) */
} ArrowEngineSource;

/*
 * The row filter of Arrow scans: a hook that the engine installs at
 * _PG_init (arrow_fdw_set_scan_filter), so that arrow_fdw calls no function
 * of the engine by name.  Without it arrow_fdw filters nothing and
 * PostgreSQL evaluates every qual of the scan.
 *
 *	begin	at BeginForeignScan: the filter of the scan's quals over the
 *			referenced columns cols[n_cols], or NULL when the engine takes
 *			none; the quals it takes leave ss->ps.qual
 *	batch	runs the filter over a record batch whose columns (those begin
 *			was given, in that order) are arrays[0 .. n_cols - 1]
 *	row		may row of the current batch pass (false: skip it without
 *			building its tuple)?
 *	recheck	for a row that passed: evaluates the filter's quals on its
 *			tuple in PostgreSQL where the engine left the batch to it; true
 *			otherwise
 *	explain	EXPLAIN lines of the filter; without one (filter NULL: EXPLAIN
 *			alone) it compiles the quals over cols as begin would
 */
struct ScanState;
struct ExprContext;
struct TupleTableSlot;
struct ExplainState;
typedef struct ArrowScanFilter ArrowScanFilter;	/* the engine's */

typedef struct ArrowScanFilterHook
{
	ArrowScanFilter *(*begin) (struct ScanState *ss, Index scanrelid,
							   const ArrowScanColumn *cols, int n_cols);
	void		(*batch) (ArrowScanFilter *f, const ArrowArray *const *arrays,
						  int64 nrows);
	bool		(*row) (const ArrowScanFilter *f, int64 row);
	bool		(*recheck) (ArrowScanFilter *f, struct ExprContext *econtext,
							struct TupleTableSlot *slot);
	void		(*explain) (struct ScanState *ss, Index scanrelid,
							const ArrowScanColumn *cols, int n_cols,
							const ArrowScanFilter *f, struct ExplainState *es);
} ArrowScanFilterHook;

/* in fdw/arrow_fdw.c */
extern bool arrow_fdw_is_table(Oid relid);
extern List *arrow_fdw_table_files(Oid relid);

/* in fdw/scan.c: hook lives as long as the process (NULL: no filter) */
extern void arrow_fdw_set_scan_filter(const ArrowScanFilterHook *hook);

/* in fdw/engine_source.c */
extern ArrowScanColumn *arrow_fdw_columns(Relation rel, const AttrNumber *attnos,
										  int n);
extern ArrowEngineSource *arrow_fdw_engine_source(Relation rel, Index relid,
												  List *quals,
												  const AttrNumber *attnos,
												  int n);
extern Datum arrow_fdw_engine_value(const ArrowEngineSource *src, int col,
									const ArrowArray *a, int64 row, bool *isnull);

#endif							/* PG_WARP_FDW_SCAN_H */
