/*-------------------------------------------------------------------------
 *
 * plan.c
 *		Planning a scan of an arrow_fdw table: its size and row estimate,
 *		its costs, a plain and a parallel path, and the plan.
 *
 * The files are opened at planning, and only the buffers of the referenced
 * columns of the record batches that the statistics (stats.c) do not rule
 * out count as bytes to read.  The row estimate is estimate.c's.  The plan
 * records each file's identity, which the scan checks (scan.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/sysattr.h"
#include "access/table.h"
#include "foreign/foreign.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"

#include "fdw/arrow_fdw.h"

/* planner state in baserel->fdw_private */
typedef struct ArrowFdwPlanState
{
	ArrowFdwTable *table;
	Bitmapset  *attrs_used;		/* offsets FirstLowInvalidHeapAttributeNumber */
	List	   *referenced;		/* attnos (Integer) read by the scan */
	List	   *stat_clauses;	/* usable for skipping */
	int64	   *file_bytes;		/* per file: bytes of referenced columns to read */
	int64		read_bytes;
	int64		kept_rows;
	int32		kept_batches;
	int			parallel_workers;	/* option, -1 when not set */
} ArrowFdwPlanState;

static double estimate_rows(PlannerInfo *root, RelOptInfo *baserel,
							const ArrowFdwTable *t);

/*
 * GetForeignRelSize: opens the table's files (checking the columns against
 * them), finds the referenced columns and the record batches that the
 * statistics do not rule out, and estimates the rows that pass the quals.
 * The state for the next steps goes to baserel->fdw_private.
 */
void
arrowGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel,
					   Oid foreigntableid)
{
	ArrowFdwPlanState *ps = palloc0(sizeof(ArrowFdwPlanState));
	ForeignTable *ft = GetForeignTable(foreigntableid);
	Relation	rel;
	ListCell   *lc;
	bool	   *want;
	int			n_fields;
	int			n_conds;
	ArrowStatCond *conds;
	bool		whole_row;

	rel = table_open(foreigntableid, NoLock);
	ps->table = arrow_table_open(rel, arrow_fdw_file_list(ft->options, &ps->parallel_workers));
	table_close(rel, NoLock);

	/* the columns the query needs: target list and restriction clauses */
	pull_varattnos((Node *) baserel->reltarget->exprs, baserel->relid, &ps->attrs_used);
	foreach(lc, baserel->baserestrictinfo)
		pull_varattnos((Node *) ((RestrictInfo *) lfirst(lc))->clause,
					   baserel->relid, &ps->attrs_used);
	whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, ps->attrs_used);
	n_fields = arrow_table_n_fields(ps->table);
	want = palloc0(sizeof(bool) * Max(n_fields, 1));
	for (int i = 0; i < ps->table->natts; i++)
	{
		if (ps->table->fields[i] < 0)
			continue;
		if (whole_row ||
			bms_is_member(i + 1 - FirstLowInvalidHeapAttributeNumber, ps->attrs_used))
		{
			ps->referenced = lappend_int(ps->referenced, i + 1);
			want[ps->table->fields[i]] = true;
		}
	}

	/* statistics: which batches remain, how many bytes they need */
	ps->stat_clauses = arrow_stats_usable_clauses(baserel->baserestrictinfo,
												  baserel->relid);
	conds = arrow_stats_prepare(ps->stat_clauses, &n_conds);
	ps->file_bytes = palloc0(sizeof(int64) * Max(ps->table->n_files, 1));
	for (int f = 0; f < ps->table->n_files; f++)
	{
		ArrowFdwFile *file = &ps->table->files[f];
		bool	   *skip = palloc(sizeof(bool) * Max(file->file->n_batches, 1));

		arrow_stats_skip_batches(conds, n_conds, ps->table->convs, ps->table->fields,
								 file->file, skip);
		for (int32 b = 0; b < file->file->n_batches; b++)
		{
			if (skip[b])
				continue;
			ps->kept_batches++;
			ps->kept_rows += file->file->batches[b].n_rows;
			ps->file_bytes[f] += arrow_table_batch_bytes(file, b, want, n_fields);
		}
		pfree(skip);
		ps->read_bytes += ps->file_bytes[f];
	}

	baserel->tuples = (double) ps->table->total_rows;
	baserel->rows = clamp_row_est(estimate_rows(root, baserel, ps->table));
	baserel->fdw_private = ps;
}

/* rows of the scan that pass its restriction clauses (estimate.c) */
static double
estimate_rows(PlannerInfo *root, RelOptInfo *baserel, const ArrowFdwTable *t)
{
	ArrowEstimateTable et;

	et.relid = t->relid;
	et.n_files = t->n_files;
	et.files = palloc(sizeof(ArrowFile *) * Max(t->n_files, 1));
	for (int f = 0; f < t->n_files; f++)
		et.files[f] = t->files[f].file;
	et.convs = t->convs;
	et.fields = t->fields;
	et.natts = t->natts;
	et.total_rows = t->total_rows;
	return arrow_estimate_rows(root, baserel, &et);
}

/* the share of the rows one process of a parallel scan handles, inverted */
static double
parallel_divisor(int workers)
{
	double		divisor = workers;

	if (parallel_leader_participation)
	{
		double		leader = 1.0 - (0.3 * workers);

		if (leader > 0)
			divisor += leader;
	}
	return divisor;
}

/*
 * Startup and total cost of a scan by 'workers' parallel workers (0: not
 * parallel): reading the referenced bytes of the kept batches, forming
 * their rows and evaluating the quals.
 */
static void
estimate_costs(PlannerInfo *root, RelOptInfo *baserel, ArrowFdwPlanState *ps,
			   int workers, Cost *startup, Cost *total)
{
	double		pages = (double) ps->read_bytes / BLCKSZ;
	QualCost	qcost;
	double		cpu;
	double		rows;

	cost_qual_eval(&qcost, baserel->baserestrictinfo, root);
	*startup = qcost.startup + baserel->reltarget->cost.startup;
	/* per row: forming the tuple (per column) and the quals */
	cpu = (cpu_tuple_cost + qcost.per_tuple +
		   cpu_operator_cost * list_length(ps->referenced)) * ps->kept_rows;
	/* the target list is computed for the rows the scan returns */
	rows = baserel->rows;
	if (workers > 0)
	{
		cpu /= parallel_divisor(workers);
		rows = clamp_row_est(rows / parallel_divisor(workers));
	}
	*total = *startup + seq_page_cost * pages + cpu +
		baserel->reltarget->cost.per_tuple * rows;
}

/*
 * GetForeignPaths: one plain path and, when the scan has more than one
 * record batch to read, one partial path for a parallel scan.
 */
void
arrowGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel,
					 Oid foreigntableid)
{
	ArrowFdwPlanState *ps = baserel->fdw_private;
	Cost		startup,
				total;
	ForeignPath *path;

	estimate_costs(root, baserel, ps, 0, &startup, &total);
	add_path(baserel, (Path *)
			 create_foreignscan_path(root, baserel, NULL, baserel->rows,
									 startup, total, NIL, NULL, NULL, NIL));

	if (baserel->consider_parallel && ps->kept_batches > 1)
	{
		int			workers;

		if (ps->parallel_workers >= 0)
			workers = Min(ps->parallel_workers, max_parallel_workers_per_gather);
		else
			workers = compute_parallel_worker(baserel,
											  (double) ps->read_bytes / BLCKSZ,
											  -1, max_parallel_workers_per_gather);
		workers = Min(workers, ps->kept_batches);
		if (workers > 0)
		{
			estimate_costs(root, baserel, ps, workers, &startup, &total);
			path = create_foreignscan_path(root, baserel, NULL,
										   clamp_row_est(baserel->rows / parallel_divisor(workers)),
										   startup, total, NIL, NULL, NULL, NIL);
			path->path.parallel_aware = true;
			path->path.parallel_safe = true;
			path->path.parallel_workers = workers;
			add_partial_path(baserel, (Path *) path);
		}
	}
}

/* an int64 as a String node, for fdw_private */
static String *
int64_string(int64 v)
{
	return makeString(psprintf(INT64_FORMAT, v));
}

/*
 * GetForeignPlan: the plan records each file's path, size, modification
 * time, identity and planned bytes and the referenced columns
 * (fdw_private, FdwPriv*), and the statistics conditions (fdw_exprs).
 */
ForeignScan *
arrowGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel,
					Oid foreigntableid, ForeignPath *best_path,
					List *tlist, List *scan_clauses, Plan *outer_plan)
{
	ArrowFdwPlanState *ps = baserel->fdw_private;
	List	   *files = NIL,
			   *sizes = NIL,
			   *mtimes = NIL,
			   *bytes = NIL,
			   *idents = NIL;

	for (int f = 0; f < ps->table->n_files; f++)
	{
		ArrowFdwFile *file = &ps->table->files[f];

		files = lappend(files, makeString(file->path));
		sizes = lappend(sizes, int64_string(file->src->size));
		mtimes = lappend(mtimes, int64_string(file->src->mtime_ns));
		bytes = lappend(bytes, int64_string(ps->file_bytes[f]));
		idents = lappend(idents,
						 makeString(psprintf(INT64_FORMAT ":" INT64_FORMAT,
											 file->src->dev, file->src->ino)));
	}
	scan_clauses = extract_actual_clauses(scan_clauses, false);
	/* the statistics conditions go to fdw_exprs, where setrefs fixes Vars */
	return make_foreignscan(tlist, scan_clauses, baserel->relid,
							ps->stat_clauses,
							lappend(list_make5(files, sizes, mtimes, bytes,
											   ps->referenced), idents),
							NIL, NIL, outer_plan);
}

/* every scan of an Arrow table may run in parallel workers */
bool
arrowIsForeignScanParallelSafe(PlannerInfo *root, RelOptInfo *rel,
							   RangeTblEntry *rte)
{
	return true;
}
