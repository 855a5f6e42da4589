/*-------------------------------------------------------------------------
 *
 * engine_source.c
 *		What the engine needs to read an Arrow foreign table itself
 *		(fdw_scan.h): the columns as the engine loads them, and the files
 *		with their identity and the record batches that the statistics of
 *		the scan's quals do not rule out.
 *
 * The engine (GpuPreAgg) hands these to the warp service, which opens the
 * files again and refuses any whose device, inode, size or modification
 * time differ from what was opened here, so that one query never reads two
 * versions of a file.  The caller has checked the user's privileges on the
 * table; files are opened here exactly as a scan opens them (regular files
 * only, file.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/rel.h"

#include "fdw/arrow_fdw.h"
#include "fdw/fdw_scan.h"

/*
 * arrow_table_scan_columns: the columns attnos[0 .. n - 1] of table t as the
 * engine sees them (fdw_scan.h), in that order.
 */
ArrowScanColumn *
arrow_table_scan_columns(const ArrowFdwTable *t, const AttrNumber *attnos, int n)
{
	ArrowScanColumn *cols = palloc0(sizeof(ArrowScanColumn) * Max(n, 1));

	for (int i = 0; i < n; i++)
	{
		const ArrowConv *c = &t->convs[attnos[i] - 1];

		cols[i].attno = attnos[i];
		cols[i].typid = OidIsValid(c->domain_type) ? c->domain_type : c->typid;
		cols[i].checked = OidIsValid(c->domain_type) || arrow_conv_checks_typmod(c);
		cols[i].may_fail = arrow_conv_may_fail(c);
		cols[i].max_chars = arrow_conv_checks_typmod(c) && c->typid == VARCHAROID ?
			c->typmod - VARHDRSZ : 0;
		cols[i].plain = !c->has_dictionary && !c->run_end_encoded &&
			!OidIsValid(c->domain_type) &&
			!(arrow_conv_checks_typmod(c) && c->typid != VARCHAROID);
		/* text of a dictionary (any integer index type): the CPU engine's */
		cols[i].dict_text = c->has_dictionary && !c->run_end_encoded &&
			c->arrow_id == ARROW_TYPE_UTF8 && !OidIsValid(c->domain_type) &&
			(c->typid == TEXTOID || c->typid == VARCHAROID) &&
			c->index_type >= ARROW_TYPE_INT8 && c->index_type <= ARROW_TYPE_UINT64;
		cols[i].arrow_id = c->arrow_id;
		cols[i].unit = c->unit;
		cols[i].scale = c->scale;
	}
	return cols;
}

/* arrow_fdw_columns: the columns attnos[0 .. n - 1] of foreign table rel */
ArrowScanColumn *
arrow_fdw_columns(Relation rel, const AttrNumber *attnos, int n)
{
	ArrowFdwTable *t = arrow_table_open(rel, NIL);
	ArrowScanColumn *cols = arrow_table_scan_columns(t, attnos, n);

	for (int i = 0; i < t->n_files; i++)
		arrow_pg_source_close(t->files[i].src);
	return cols;
}

/*
 * arrow_fdw_engine_source: foreign table rel (range table index relid) as a
 * source for the engine, reading columns attnos[0 .. n - 1] and skipping the
 * record batches that quals (the scan's restriction clauses, implicit AND)
 * rule out by their statistics.  Everything is palloc'ed in the current
 * memory context; no file stays open.
 */
ArrowEngineSource *
arrow_fdw_engine_source(Relation rel, Index relid, List *quals,
						const AttrNumber *attnos, int n)
{
	ArrowFdwTable *t = arrow_table_open(rel, NIL);
	ArrowEngineSource *es = palloc0(sizeof(ArrowEngineSource));
	List	   *clauses = arrow_stats_usable_clauses(quals, relid);
	int			n_conds = 0;
	ArrowStatCond *conds = arrow_stats_prepare(clauses, &n_conds);
	ArrowConv  *convs;

	es->n_files = t->n_files;
	es->files = palloc0(sizeof(ArrowEngineFile) * Max(t->n_files, 1));
	es->n_cols = n;
	es->cols = arrow_table_scan_columns(t, attnos, n);
	es->fields = palloc(sizeof(int) * Max(n, 1));
	convs = palloc(sizeof(ArrowConv) * Max(n, 1));
	for (int i = 0; i < n; i++)
	{
		es->fields[i] = t->fields[attnos[i] - 1];
		convs[i] = t->convs[attnos[i] - 1];
	}
	es->convs = convs;
	for (int f = 0; f < t->n_files; f++)
	{
		const ArrowFdwFile *file = &t->files[f];
		ArrowEngineFile *ef = &es->files[f];
		bool	   *skip = palloc(sizeof(bool) * Max(file->file->n_batches, 1));

		ef->path = file->path;
		ef->dev = file->src->dev;
		ef->ino = file->src->ino;
		ef->size = file->src->size;
		ef->mtime_ns = file->src->mtime_ns;
		ef->batches = palloc(sizeof(int32) * Max(file->file->n_batches, 1));
		arrow_stats_skip_batches(conds, n_conds, t->convs, t->fields, file->file, skip);
		for (int32 b = 0; b < file->file->n_batches; b++)
		{
			const ArrowBatchInfo *bi = &file->file->batches[b];

			es->batches_total++;
			if (skip[b])
			{
				es->batches_skipped++;
				continue;
			}
			ef->batches[ef->n_batches++] = b;
			es->rows_to_read += bi->n_rows;
		}
		pfree(skip);
		arrow_pg_source_close(file->src);
	}
	return es;
}

/*
 * arrow_fdw_engine_value: the value at row of array a, which holds values
 * of column col of src in the layout of its field (the engine's copy of
 * the column, say), as a Datum of the column's type: the FDW's own
 * conversion, so that the engine's rows equal the scan's.
 */
Datum
arrow_fdw_engine_value(const ArrowEngineSource *src, int col, const ArrowArray *a,
					   int64 row, bool *isnull)
{
	const ArrowConv *convs = src->convs;

	return arrow_conv_value(&convs[col], a, row, isnull);
}
