/*-------------------------------------------------------------------------
 *
 * arrow_fdw.h
 *		The internals of arrow_fdw (src/fdw), shared by its source files and
 *		grouped by the file that defines them.
 *
 * Only src/fdw includes this header.  The engine reaches Arrow scans through
 * fdw_scan.h; the Arrow library itself (plain C, no postgres.h) is
 * arrow/arrow.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_FDW_H
#define PG_WARP_ARROW_FDW_H

#include "pg_warp.h"

#include "access/tupdesc.h"
#include "fmgr.h"
#include "foreign/fdwapi.h"
#include "nodes/pg_list.h"
#include "utils/palloc.h"
#include "utils/relcache.h"

#include "arrow/arrow.h"
#include "arrow/arrow_bits.h"

/* in file.c */

/* an ArrowSource over a file that PostgreSQL closes at transaction abort */
typedef struct ArrowPgSource
{
	ArrowSource src;			/* read_at/size/ctx, ctx points here */
	char	   *path;
	int			fd;				/* -1 while closed; opened on demand */
	int64		size;			/* st_size when initialised */
	int64		mtime_ns;		/* st_mtime in nanoseconds */
	int64		dev;			/* st_dev and st_ino of the file opened */
	int64		ino;
	int64		bytes_read;		/* counts every read */
} ArrowPgSource;

extern ArrowAllocator *arrow_pg_allocator(MemoryContext cxt);
extern void arrow_pg_source_init(ArrowPgSource *s, const char *path,
								 const char *within);
extern void arrow_pg_source_close(ArrowPgSource *s);
/* s's change time in nanoseconds (its descriptor open), -1 where unknown */
extern int64 arrow_pg_source_ctime_ns(const ArrowPgSource *s);
extern void arrow_pg_check_regular(const char *path);
struct stat;
extern int	arrow_pg_resolve_within(const char *path, const char *dir,
									struct stat *st);
extern ArrowFile *arrow_pg_open(const char *path, ArrowPgSource *s,
								const char *within);

/* the files whose batches' metadata is kept for later sessions: 64 batches or more */
#define ARROW_META_MIN_BATCHES	64

/* meta_image.c: the metadata of large files' record batches kept on disk */
extern bool pg_warp_arrow_metadata_images;
extern int	arrow_pg_open_image(const ArrowPgSource *s, int64 ctime_ns,
								const ArrowAllocator *alloc, ArrowFile **out, ArrowError *err);
extern void arrow_pg_image_touch(const ArrowPgSource *s, int64 ctime_ns);

/*
 * The min and max statistics of one top-level field in every record batch
 * of a file (arrow_pg_stat_column): as written (NULL: none), and, where the
 * field's type keeps them as bits (as_bits), parsed by arrow_stat_parse
 * (parsed[b]: ARROW_STAT_MIN / ARROW_STAT_MAX where that succeeded)
 */
#define ARROW_STAT_MIN	1
#define ARROW_STAT_MAX	2
typedef struct ArrowStatColumn
{
	const char **min_s;
	const char **max_s;
	bool		as_bits;
	int64	   *min;
	int64	   *max;
	uint8	   *parsed;
	/* the parsed ones as Datums of one column type (arrow_pg_stat_datums) */
	Oid			d_typid;
	int32		d_typmod;
	int			d_kind;
	Datum	   *dmin;
	Datum	   *dmax;
	uint8	   *dflags;			/* ARROW_STAT_MIN / MAX: that Datum is exact */
} ArrowStatColumn;

struct ArrowConv;
extern const ArrowStatColumn *arrow_pg_stat_column(const ArrowFile *file, int field);
/* a top-level field's bytes and null count in each batch (arrow_pg_field_sizes) */
typedef struct ArrowFieldSizes
{
	int64	   *bytes;
	int64	   *nulls;			/* -1: the batch has no node for the field */
} ArrowFieldSizes;

extern const ArrowFieldSizes *arrow_pg_field_sizes(const ArrowFile *file, int field);
extern void arrow_pg_stat_fill(const ArrowFile *file, const ArrowBatchInfo *batches, int field,
							   ArrowStatColumn *c);
extern void arrow_pg_stat_fill_all(const ArrowFile *file, const ArrowBatchInfo *batches,
								   ArrowStatColumn *stats);
extern bool arrow_pg_sizes_fill(const ArrowFile *file, int field, ArrowFieldSizes *fs,
								ArrowError *err);

/*
 * meta_shared.c: a file's record batches laid out in shared memory, with
 * each top-level field's statistics (their Datums zero: each session makes
 * its own) and sizes (bytes NULL: not known) in every batch
 */
typedef struct ArrowMetaShared
{
	int			n_fields;
	const ArrowStatColumn *stats;
	const ArrowFieldSizes *sizes;
} ArrowMetaShared;
extern int	pg_warp_arrow_shared_metadata_size;
extern bool pg_warp_arrow_shared_metadata;
extern void arrow_meta_shared_init(void);
extern int	arrow_pg_open_shared(const ArrowPgSource *s, int64 ctime_ns,
								 const ArrowAllocator *alloc, ArrowFile **out,
								 const ArrowMetaShared **shared, ArrowError *err);
extern int64 arrow_pg_batch_field_bytes(const ArrowFile *file, int32 b, int field,
										const char *path);
extern const ArrowStatColumn *arrow_pg_stat_datums(const ArrowFile *file, int field,
												   const struct ArrowConv *conv);
extern void arrow_pg_report(const ArrowError *err, const char *what,
							const char *path) pg_attribute_noreturn();
extern void arrow_pg_report_errno(int save_errno, const char *path)
			pg_attribute_noreturn();

/* in datum.c */

/* how the values of one Arrow field become Datums of one PostgreSQL type */
typedef struct ArrowConv
{
	int			kind;			/* what to convert to (datum.c) */
	int			fast;			/* a shortcut for plain fixed-width values */
	Oid			typid;			/* the base type when typid is a domain */
	int32		typmod;
	Oid			domain_type;	/* the column's domain, or InvalidOid */
	void	   *domain_extra;	/* domain_check's cache, in domain_cxt */
	MemoryContext domain_cxt;	/* lives as long as the converter */
	int16		typlen;
	bool		typbyval;
	char		typalign;
	ArrowTypeId arrow_id;		/* the field's type (values' type if dictionary) */
	ArrowTimeUnit unit;
	int32		scale;
	int32		byte_width;
	int32		list_size;
	bool		has_dictionary;
	ArrowTypeId index_type;
	FmgrInfo	infunc;			/* strings into other types */
	Oid			ioparam;
	struct ArrowConv *elem;		/* lists: the element */
	int			n_children;		/* structs: one per attribute */
	struct ArrowConv *children;
	int		   *child_field;	/* attribute -> struct child, -1 if dropped */
	TupleDesc	tupdesc;
	bool		run_end_encoded;	/* values of children[1] through run ends */
	FmgrInfo   *map_fns;		/* maps: key output function, to_jsonb */
} ArrowConv;

extern bool arrow_default_type(const ArrowField *f, Oid *typid, int32 *typmod,
							   char **why);
extern bool arrow_conv_init(ArrowConv *c, const ArrowField *f, Oid typid,
							int32 typmod, char **why);
extern Datum arrow_conv_value(const ArrowConv *c, const ArrowArray *a,
							  int64 row, bool *isnull);
extern bool arrow_conv_stat(const ArrowConv *c, const char *s, Datum *out);
extern bool arrow_stat_parse(ArrowTypeId id, const char *s, int64 *bits);
extern bool arrow_conv_stat_bits(const ArrowConv *c, int64 bits, Datum *out);

/* c->fast values (the value is the stored value: no check, no memory) */
#define ARROW_FAST_NONE		0
#define ARROW_FAST_I16		1
#define ARROW_FAST_I32		2
#define ARROW_FAST_I64		3
#define ARROW_FAST_F32		4
#define ARROW_FAST_F64		5
#define ARROW_FAST_F16		6	/* float16 into pg_warp's float2: the bits */

/* arrow_conv_value for a converter with c->fast set */
static inline Datum
arrow_conv_fast(const ArrowConv *c, const ArrowArray *a, int64 row, bool *isnull)
{
	if (!arrow_bit_valid(a->validity, row))
	{
		*isnull = true;
		return (Datum) 0;
	}
	*isnull = false;
	switch (c->fast)
	{
		case ARROW_FAST_I16:
			return Int16GetDatum(((const int16 *) a->values)[row]);
		case ARROW_FAST_I32:
			return Int32GetDatum(((const int32 *) a->values)[row]);
		case ARROW_FAST_I64:
			return Int64GetDatum(((const int64 *) a->values)[row]);
		case ARROW_FAST_F32:
			return Float4GetDatum(((const float4 *) a->values)[row]);
		case ARROW_FAST_F16:
			return UInt16GetDatum(((const uint16 *) a->values)[row]);
		default:
			return Float8GetDatum(((const float8 *) a->values)[row]);
	}
}
extern bool arrow_conv_is_float(const ArrowConv *c);
extern bool arrow_conv_checks_typmod(const ArrowConv *c);
extern bool arrow_conv_may_fail(const ArrowConv *c);

/* in stats.c */

/* one condition on record-batch statistics (pg_warp.min.N / pg_warp.max.N) */
typedef struct ArrowStatCond
{
	AttrNumber	attno;			/* the column */
	int			strategy;		/* BTLessStrategyNumber .. BTGreaterStrategyNumber */
	int			n_values;		/* 1, or the elements of an IN list */
	Datum	   *values;
	FmgrInfo	cmp;			/* btree comparison (column type, constant type) */
	Oid			collation;
} ArrowStatCond;

extern bool pg_warp_arrow_stats_skip;
extern List *arrow_stats_usable_clauses(List *exprs, Index relid);
extern ArrowStatCond *arrow_stats_prepare(List *clauses, int *n_conds);
struct Expr;
extern bool arrow_stats_parse_clause(struct Expr *clause, Index relid,
									 ArrowStatCond *cond);
extern void arrow_batch_stat_strings(const ArrowBatchInfo *batch, int field,
									 const char **smin, const char **smax);
extern void arrow_batch_stats_all(const ArrowBatchInfo *batch, int n_fields,
								  const char **smin, const char **smax);
extern void arrow_stats_values(const ArrowFile *file, int32 b, int field,
							   const ArrowConv *conv, bool *has_min, Datum *dmin,
							   bool *has_max, Datum *dmax);
extern bool arrow_stats_skip_batch(const ArrowStatCond *conds, int n_conds,
								   const ArrowConv *convs, const int *fields,
								   const ArrowFile *file, int32 b);
extern void arrow_stats_skip_batches(const ArrowStatCond *conds, int n_conds,
									 const ArrowConv *convs, const int *fields,
									 const ArrowFile *file, bool *skip);

/* in estimate.c */

/* what the row estimate needs to know of a foreign table's files */
typedef struct ArrowEstimateTable
{
	Oid			relid;
	int			n_files;
	ArrowFile **files;			/* their metadata (footers, batch metadata) */
	const ArrowConv *convs;		/* attno-1 -> converter */
	const int  *fields;			/* attno-1 -> top-level field, -1: none */
	int			natts;
	int64		total_rows;
} ArrowEstimateTable;

struct PlannerInfo;
struct RelOptInfo;
extern double arrow_estimate_rows(struct PlannerInfo *root,
								  struct RelOptInfo *baserel,
								  const ArrowEstimateTable *t);
extern int32 *arrow_sample_batches(const ArrowFile *const *files, int n_files,
								   int32 total_batches, int targrows,
								   int32 *n_chosen);

/* in options.c */
extern Datum arrow_fdw_validator(PG_FUNCTION_ARGS);
extern List *arrow_fdw_file_list(List *options, int *parallel_workers);
extern char *arrow_fdw_confining_dir(List *options);

/* in table.c */

/* one file of a table while it is open */
typedef struct ArrowFdwFile
{
	char	   *path;
	ArrowPgSource *src;
	ArrowFile  *file;
} ArrowFdwFile;

/* a table's files, opened, with its columns mapped to fields */
typedef struct ArrowFdwTable
{
	Oid			relid;
	int			n_files;
	ArrowFdwFile *files;
	int			natts;
	int		   *fields;			/* attno-1 -> top-level field, -1: none */
	ArrowConv  *convs;			/* attno-1 -> converter */
	int64		total_rows;
	int32		total_batches;
	int32	   *batch_start;	/* file -> its first global batch number */
	char	   *within;			/* files must lie in this directory (NULL: any) */
} ArrowFdwTable;

extern ArrowFdwTable *arrow_table_open(Relation rel, List *paths);
extern void arrow_table_open_files(ArrowFdwTable *t, List *paths);
extern int	arrow_table_find_field(const ArrowSchema *schema, const char *name,
								   const char *path);
extern void arrow_table_locate_batch(const ArrowFdwTable *t, int32 g,
									 int *file, int32 *batch);
extern int64 arrow_table_batch_bytes(const ArrowFdwFile *f, int32 b,
									 const bool *want, int n_fields);
extern int	arrow_table_n_fields(const ArrowFdwTable *t);

/* in engine_source.c */
struct ArrowScanColumn;
extern struct ArrowScanColumn *arrow_table_scan_columns(const ArrowFdwTable *t,
														const AttrNumber *attnos,
														int n);

/* in plan.c */

/* indexes of ForeignScan.fdw_private (made by plan.c, read by scan.c) */
enum
{
	FdwPrivFiles,				/* List of String: paths */
	FdwPrivSizes,				/* List of String: int64 size at planning */
	FdwPrivMtimes,				/* List of String: int64 mtime (ns) */
	FdwPrivBytes,				/* List of String: planned bytes to read */
	FdwPrivReferenced,			/* List of Integer: attnos */
	FdwPrivIdents				/* List of String: "device:inode" at planning */
};

extern void arrowGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
								   Oid foreigntableid);
extern void arrowGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
								 Oid foreigntableid);
extern ForeignScan *arrowGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
										Oid foreigntableid, ForeignPath *best_path,
										List *tlist, List *scan_clauses,
										Plan *outer_plan);
extern bool arrowIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
										   RangeTblEntry *rte);

/* in scan.c */
extern void arrowExplainForeignScan(ForeignScanState *node,
									struct ExplainState *es);
extern void arrowBeginForeignScan(ForeignScanState *node, int eflags);
extern TupleTableSlot *arrowIterateForeignScan(ForeignScanState *node);
extern void arrowReScanForeignScan(ForeignScanState *node);
extern void arrowEndForeignScan(ForeignScanState *node);
extern Size arrowEstimateDSMForeignScan(ForeignScanState *node,
										ParallelContext *pcxt);
extern void arrowInitializeDSMForeignScan(ForeignScanState *node,
										  ParallelContext *pcxt, void *coordinate);
extern void arrowReInitializeDSMForeignScan(ForeignScanState *node,
											ParallelContext *pcxt, void *coordinate);
extern void arrowInitializeWorkerForeignScan(ForeignScanState *node,
											 shm_toc *toc, void *coordinate);
extern void arrowShutdownForeignScan(ForeignScanState *node);

/* in analyze.c */
extern bool arrowAnalyzeForeignTable(Relation relation,
									 AcquireSampleRowsFunc *func,
									 BlockNumber *totalpages);

/* in import.c */
extern List *arrowImportForeignSchema(ImportForeignSchemaStmt *stmt,
									  Oid serverOid);

#endif							/* PG_WARP_ARROW_FDW_H */
