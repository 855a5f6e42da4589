/*-------------------------------------------------------------------------
 *
 * analyze.c
 *		ANALYZE of an arrow_fdw table: a uniform sample of the rows of a
 *		bounded random subset of the record batches, and the exact row count
 *		from the files' footers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/htup_details.h"
#include "commands/vacuum.h"
#include "foreign/foreign.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/sampling.h"

#include "fdw/arrow_fdw.h"

/*
 * Puts the rows of one record batch through the reservoir of
 * arrow_acquire_sample_rows, converting only the rows that enter it.
 * *n: rows in the reservoir, *seen: rows offered so far.
 */
static void
sample_batch_rows(ArrowFdwTable *t, TupleDesc tupdesc, ArrowBatch *batch,
				  HeapTuple *rows, int targrows, int *n, double *seen,
				  double *skip, ReservoirState rstate, MemoryContext row_cxt)
{
	Datum	   *values = palloc(sizeof(Datum) * Max(tupdesc->natts, 1));
	bool	   *nulls = palloc(sizeof(bool) * Max(tupdesc->natts, 1));

	for (int64 r = 0; r < batch->n_rows; r++)
	{
		int			pos = -1;
		MemoryContext old;

		if (*n < targrows)
			pos = (*n)++;
		else
		{
			/* Vitter's algorithm, as in PostgreSQL's own samplers */
			if (*skip < 0)
				*skip = reservoir_get_next_S(rstate, *seen, targrows);
			if (*skip <= 0)
			{
				pos = (int) (targrows * sampler_random_fract(&rstate->randstate));
				heap_freetuple(rows[pos]);
			}
			*skip -= 1;
		}
		*seen += 1;
		if (pos < 0)
			continue;
		MemoryContextReset(row_cxt);
		old = MemoryContextSwitchTo(row_cxt);
		for (int i = 0; i < tupdesc->natts; i++)
		{
			if (t->fields[i] < 0)
			{
				nulls[i] = true;
				continue;
			}
			values[i] = arrow_conv_value(&t->convs[i], &batch->columns[t->fields[i]],
										 r, &nulls[i]);
		}
		MemoryContextSwitchTo(old);
		rows[pos] = heap_form_tuple(tupdesc, values, nulls);
	}
	pfree(values);
	pfree(nulls);
}

/*
 * ANALYZE's sampler.  It reads a bounded random subset of the record
 * batches (arrow_sample_batches: enough for targrows rows and about the
 * bytes that ANALYZE of a heap table reads), takes a uniform sample of the
 * rows of those batches and reports the table's exact row count from the
 * files' footers.
 */
static int
arrow_acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows,
						  int targrows, double *totalrows,
						  double *totaldeadrows)
{
	ArrowFdwTable *t = arrow_table_open(rel, NIL);
	TupleDesc	tupdesc = RelationGetDescr(rel);
	bool	   *want = palloc0(sizeof(bool) * Max(arrow_table_n_fields(t), 1));
	const ArrowFile **files = palloc(sizeof(ArrowFile *) * Max(t->n_files, 1));
	MemoryContext row_cxt = AllocSetContextCreate(CurrentMemoryContext,
												  "arrow_fdw analyze",
												  ALLOCSET_DEFAULT_SIZES);
	ReservoirStateData rstate;
	double		seen = 0;
	double		skip = -1;
	int			n = 0;
	int32	   *chosen;
	int32		n_chosen;
	int64		bytes = 0;

	for (int i = 0; i < t->natts; i++)
		if (t->fields[i] >= 0)
			want[t->fields[i]] = true;
	for (int f = 0; f < t->n_files; f++)
		files[f] = t->files[f].file;
	reservoir_init_selection_state(&rstate, targrows);
	chosen = arrow_sample_batches(files, t->n_files, t->total_batches, targrows,
								  &n_chosen);
	for (int32 k = 0; k < n_chosen; k++)
	{
		ArrowBatch *batch = NULL;
		ArrowError	err;
		int			f;
		int32		b;

		vacuum_delay_point();
		arrow_table_locate_batch(t, chosen[k], &f, &b);
		memset(&err, 0, sizeof(err));
		if (arrow_batch_load(t->files[f].file, b, want, &batch, &err) != ARROW_OK)
			arrow_pg_report(&err, psprintf("read record batch %d of", b), t->files[f].path);
		sample_batch_rows(t, tupdesc, batch, rows, targrows, &n, &seen, &skip,
						  &rstate, row_cxt);
		arrow_batch_free(batch);
		/* at most one file open at a time */
		if (k + 1 == n_chosen || chosen[k + 1] >= t->batch_start[f + 1])
			arrow_pg_source_close(t->files[f].src);
	}
	for (int f = 0; f < t->n_files; f++)
		bytes += t->files[f].src->bytes_read;
	MemoryContextDelete(row_cxt);
	*totalrows = (double) t->total_rows;
	*totaldeadrows = 0;
	ereport(elevel,
			(errmsg("\"%s\": sampled %d of %.0f rows, reading %d of %d record batches (" INT64_FORMAT " bytes) in %d Arrow files",
					RelationGetRelationName(rel), n, *totalrows, n_chosen,
					t->total_batches, bytes, t->n_files)));
	return n;
}

/*
 * AnalyzeForeignTable: the table's size in pages (from the sizes of its
 * files) and the sampler.
 */
bool
arrowAnalyzeForeignTable(Relation relation, AcquireSampleRowsFunc *func,
						 BlockNumber *totalpages)
{
	ForeignTable *ft = GetForeignTable(RelationGetRelid(relation));
	List	   *files = arrow_fdw_file_list(ft->options, NULL);
	ListCell   *lc;
	int64		bytes = 0;

	foreach(lc, files)
	{
		struct stat sb;

		if (stat(lfirst(lc), &sb) == 0)
			bytes += sb.st_size;
	}
	*totalpages = (BlockNumber) Min(bytes / BLCKSZ + 1, (int64) MaxBlockNumber);
	*func = arrow_acquire_sample_rows;
	return true;
}
