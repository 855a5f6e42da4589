/*-------------------------------------------------------------------------
 *
 * pg2arrow.h
 *		Shared declarations of pg2arrow, the parallel PostgreSQL -> Arrow
 *		exporter.
 *
 * pg2arrow reads query results with binary COPY (one libpq connection per
 * worker thread, all in one exported snapshot), turns them into Arrow
 * columns with the project's Arrow library (src/arrow) and writes the record
 * batches of every worker concurrently into one Arrow file.
 *
 * Source files (main.c only calls the others; none calls main.c):
 *	main.c		the steps of an export (and of --dump, --recover): the
 *				temporary file, its rename, failures
 *	options.c	command-line options, --help, -S applied to the columns
 *	cancel.c	termination signals and the cancel objects of the queries
 *	progress.c	--progress reports
 *	session.c	the snapshot, --set, the query's columns, per-worker SQL
 *				and COPY commands
 *	worker.c	worker threads: binary COPY stream, batches, leftovers
 *	dictionary.c enum dictionaries: written to new files, checked on append
 *	text_dict.c	--dictionary: text columns dictionary-encoded, one
 *				dictionary per column for the file, deltas as it grows
 *	pgtypes.c	PostgreSQL types -> Arrow fields (catalog look-ups)
 *	decode.c	binary COPY tuples -> Arrow builders, batch statistics
 *	target.c	the output file: links, stale temporary files, recovery
 *
 * tools/common gives messages and allocation (util.h), the connection
 * options (connection.h) and the printer of --dump (arrow_print.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG2ARROW_H
#define PG2ARROW_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "arrow.h"
#include "../common/connection.h"
#include "../common/util.h"

#define PG2ARROW_VERSION	"0.1.0"
#define MAX_WORKERS			1024
#define ERRLEN				2048	/* size of error message buffers */

/* How a PostgreSQL value is decoded (after domains are resolved) */
typedef enum PgKind
{
	PK_BOOL,
	PK_INT2,
	PK_INT4,
	PK_INT8,
	PK_FLOAT2,					/* arrives as float4 (cast in SQL) */
	PK_FLOAT4,
	PK_FLOAT8,
	PK_NUMERIC,
	PK_TEXT,					/* text, varchar, name, bpchar, json */
	PK_JSONB,
	PK_BYTEA,
	PK_DATE,
	PK_TIME,
	PK_TIMETZ,
	PK_TIMESTAMP,
	PK_TIMESTAMPTZ,
	PK_INTERVAL,
	PK_UUID,
	PK_INET,					/* inet, cidr: as their text output */
	PK_MACADDR,
	PK_MACADDR8,
	PK_ENUM,
	PK_ARRAY,
	PK_COMPOSITE
} PgKind;

/* --numeric: what unconstrained (or too wide) numeric becomes */
typedef enum NumericMode
{
	NUMERIC_DECIMAL,
	NUMERIC_FLOAT8,
	NUMERIC_TEXT
} NumericMode;

/*
 * One column (or array element, or composite attribute) of the result: how
 * to decode it and which Arrow field it becomes.
 */
typedef struct PgColumn
{
	char	   *name;			/* Arrow field name */
	char	   *pg_type;		/* format_type() of the column's own type */
	char	   *path;			/* "col", "col[]", "col.attr" for messages */
	PgKind		kind;
	NumericMode numeric_mode;	/* PK_NUMERIC */
	int32_t		precision;		/* PK_NUMERIC as decimal128 */
	int32_t		scale;
	int32_t		n_labels;		/* PK_ENUM: labels in sort order */
	char	  **labels;
	int32_t    *by_name;		/* label indexes sorted by label bytes */
	int64_t		dict_id;		/* PK_ENUM: the Arrow dictionary id */
	int32_t		n_children;		/* PK_ARRAY: 1, PK_COMPOSITE: attributes */
	struct PgColumn *children;
	const char *cast;			/* top level: SQL cast to apply (float2), or NULL */
	struct TextDict *tdict;		/* top level, --dictionary: the file's
								 * dictionary of the column (text_dict.c) */
	bool		stats;			/* top level: keep min/max per batch */
} PgColumn;

/* Options that change the mapping of types */
typedef struct TypeOptions
{
	NumericMode numeric_mode;
	int32_t		numeric_scale;
} TypeOptions;

/*
 * The rows of one record batch under construction: one builder per
 * top-level column.  A worker's last partial batch is merged into the
 * shared final batch by copying rows between builders; statistics are
 * computed from the builders when the batch is written.
 */
typedef struct BatchState
{
	int32_t		n_columns;
	ArrowBuilder **builders;
	int64_t		n_rows;
} BatchState;

/* Command-line options */
typedef struct Options
{
	ConnOptions conn;			/* -d -h -p -u -w -W */
	const char *command;
	const char *table;
	const char *output;
	const char *append;
	const char *ctid_table;
	int			n_workers;
	char	  **keys;			/* -k, n_keys entries */
	int			n_keys;
	int64_t		segment_size;
	bool		stat_all;		/* -S without a list */
	char	  **stat_cols;		/* -S COL1,COL2 */
	int			n_stat_cols;
	char	  **sets;			/* --set NAME:VALUE */
	int			n_sets;
	bool		progress;
	const char *dump;
	const char *recover;		/* --recover FILE */
	TypeOptions types;
	bool		dict_auto;		/* --dictionary=auto */
	char	  **dict_cols;		/* --dictionary=COL1,COL2 */
	int			n_dict_cols;
} Options;

struct Export;

/* One worker: a connection, its query, the batch it is building */
typedef struct Worker
{
	struct Export *ex;
	int			id;
	PGconn	   *conn;
	char	   *sql;			/* the query, macros replaced */
	char	   *copy;			/* the COPY command that runs it */
	pthread_t	thread;
	bool		started;
	BatchState	batch;
	int64_t		rows;			/* rows decoded by this worker */
	char	   *carry;			/* bytes of an incomplete tuple (or header) */
	size_t		carry_len;
	size_t		carry_cap;
	bool		header_done;
	bool		trailer_seen;
	int			size_check;		/* 0: not decided; 1: bound; 2: every row */
	int64_t		size_known;		/* exact body size of batch at the last check */
	int64_t		size_growth;	/* bound on its growth since then */
} Worker;

/* The whole export */
typedef struct Export
{
	Options    *opts;
	PgColumn   *columns;
	int32_t		n_columns;
	ArrowSchema schema;
	ArrowWriter *writer;
	int			n_workers;
	Worker	   *workers;
	BatchState	final;			/* leftovers of the workers; under final_lock */
	pthread_mutex_t final_lock;
	pthread_mutex_t error_lock;
	char		error[ERRLEN];	/* the first failure; under error_lock */
	atomic_bool stop;			/* a worker failed: everyone stops */
	atomic_int_fast64_t rows;	/* for --progress */
	atomic_int_fast64_t bytes;	/* COPY bytes received */
	atomic_int_fast64_t batches;	/* record batches written */
	double		total_rows;		/* estimate for --progress, 0: unknown */
	double		start;			/* when the workers started (now_seconds) */
	char	   *snapshot;		/* exported by worker 0 for the others */
	char	   *target;			/* the file really written (links followed) */
	char	   *tmp_path;		/* -o: written under this name, then renamed */
} Export;

/* in options.c */
extern void parse_options(int argc, char **argv, Options *opts);
extern void free_options(Options *opts);
extern void select_stats(Export *ex);

/* in cancel.c */
/*
 * Set (to the signal number) by a termination signal, read by every
 * thread.  A lock-free atomic, so that both the handler and the threads
 * may use it.
 */
extern atomic_int interrupted;
extern void install_signal_handlers(sigset_t *block);
extern void cancel_register(int i, PGconn *conn);
extern void cancel_queries(void);
extern void cancel_forget_all(void);

/* in progress.c */
extern double now_seconds(void);
extern void print_progress(Export *ex, bool last);

/* in pgtypes.c */
extern bool pgtypes_resolve(PGconn *conn, const PGresult *desc,
							const TypeOptions *opts, PgColumn **columns_out,
							char *errbuf, size_t errlen);
extern bool pgtypes_build_schema(const PgColumn *columns, int32_t n_columns,
								 ArrowSchema *schema, char *errbuf,
								 size_t errlen);
extern bool pgtypes_stats_supported(const PgColumn *col);
extern void pgtypes_free(PgColumn *columns, int32_t n_columns);

/* in decode.c */
extern bool batch_init(BatchState *bs, const ArrowSchema *schema,
					   const PgColumn *columns, char *errbuf, size_t errlen);
extern void batch_free(BatchState *bs);
extern void batch_reset(BatchState *bs);
extern int64_t batch_body_size(const BatchState *bs);
extern bool decode_tuple(BatchState *bs, const PgColumn *columns,
						 const char *tuple, size_t len, int64_t row,
						 char *errbuf, size_t errlen);
extern bool batch_stats_metadata(const BatchState *bs,
								 const PgColumn *columns,
								 const ArrowSchema *schema,
								 ArrowMetadata *md, char *errbuf,
								 size_t errlen);
extern int	copy_tuple_length(const char *p, size_t avail, int32_t n_columns,
							  size_t *len, char *errbuf, size_t errlen);

/* in session.c */
extern bool build_worker_sql(Export *ex, PGconn *conn, char *errbuf,
							 size_t errlen);
extern bool describe_columns(Export *ex, PGconn *conn, char *errbuf,
							 size_t errlen);
extern char *build_copy(const Export *ex, const char *sql);
extern bool open_worker(Export *ex, int i, char *errbuf, size_t errlen);

/* in text_dict.c */
typedef struct TextDict TextDict;
extern bool select_dictionaries(Export *ex, PGconn *conn, char *errbuf, size_t errlen);
extern int64_t text_dict_index(TextDict *d, const char *p, int32_t len, char *errbuf,
							   size_t errlen);
extern bool text_dicts_start(Export *ex, char *errbuf, size_t errlen);
extern bool text_dicts_append(Export *ex, const char *path, char *errbuf, size_t errlen);
extern bool text_dicts_flush(Export *ex, char *errbuf, size_t errlen);
extern void text_dicts_thread_done(void);
extern int64_t text_dict_id(const TextDict *d);
extern void text_dicts_free(PgColumn *columns, int32_t n_columns);

/* in worker.c */
extern bool run_workers(Export *ex, char *errbuf, size_t errlen);

/* in dictionary.c */
extern bool write_dictionaries(Export *ex, const PgColumn *cols, int n,
							   char *errbuf, size_t errlen);
extern bool read_append_batch(const char *path, const bool *want, bool last,
							  const char *what, ArrowFile **file, ArrowBatch **batch,
							  char *errbuf, size_t errlen);
extern void close_append_batch(ArrowFile *file, ArrowBatch *batch);
extern bool check_append_dictionaries(Export *ex, const char *path,
									  char *errbuf, size_t errlen);

/* in target.c */
extern char *resolve_target(const char *path, const char *what);
extern void remove_stale_temps(const char *target);
extern bool recover_target(const char *target, bool quiet_none, char *errbuf,
						   size_t errlen);

#endif							/* PG2ARROW_H */
