/*-------------------------------------------------------------------------
 *
 * dictionary.c
 *		Enum dictionaries of pg2arrow: a new file gets one dictionary batch per
 *		enum column with every label; --append checks that the labels are the
 *		ones in the file's dictionaries, since it writes none.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

/*
 * Writes the dictionary batches of the enum columns (all labels, in sort
 * order) into a new file, before any record batch.
 */
bool
write_dictionaries(Export *ex, const PgColumn *cols, int n, char *errbuf,
				   size_t errlen)
{
	for (int i = 0; i < n; i++)
	{
		const PgColumn *c = &cols[i];

		if (c->kind == PK_ENUM)
		{
			ArrowField	f = {0};
			ArrowBuilder *b = NULL;
			ArrowError	err;
			int			rc;

			f.name = c->name;
			f.nullable = false;
			f.type.id = ARROW_TYPE_UTF8;
			rc = arrow_builder_create(&f, NULL, &b, &err);
			for (int j = 0; rc == ARROW_OK && j < c->n_labels; j++)
				rc = arrow_append_bytes(b, c->labels[j], strlen(c->labels[j]), &err);
			if (rc == ARROW_OK)
				rc = arrow_writer_write_dictionary(ex->writer, c->dict_id, b, false, &err);
			if (b != NULL)
				arrow_builder_free(b);
			if (rc != ARROW_OK)
			{
				snprintf(errbuf, errlen, "cannot write the dictionary of column \"%s\": %s",
						 c->path, err.message);
				return false;
			}
		}
		if (!write_dictionaries(ex, c->children, c->n_children, errbuf, errlen))
			return false;
	}
	return true;
}

/* True when col or a column nested in it is an enum */
static bool
has_enum(const PgColumn *col)
{
	if (col->kind == PK_ENUM)
		return true;
	for (int i = 0; i < col->n_children; i++)
		if (has_enum(&col->children[i]))
			return true;
	return false;
}

/*
 * Compares the labels of the enum columns in col (recursively) with the
 * dictionaries of array a, loaded from the file appended to.
 */
static bool
same_labels(const PgColumn *col, const ArrowArray *a, char *errbuf, size_t errlen)
{
	if (col->kind == PK_ENUM)
	{
		const ArrowArray *d = a->dictionary;
		bool		same = d != NULL && d->length == col->n_labels &&
			d->offsets != NULL;

		for (int i = 0; same && i < col->n_labels; i++)
		{
			const int32_t *off = d->offsets;
			size_t		len = strlen(col->labels[i]);

			same = (size_t) (off[i + 1] - off[i]) == len &&
				memcmp(d->data + off[i], col->labels[i], len) == 0;
		}
		if (!same)
			snprintf(errbuf, errlen,
					 "column \"%s\": the labels of enum type %s differ from the dictionary in the file\n"
					 "hint: write a new file with -o",
					 col->path, col->pg_type);
		return same;
	}
	if (a->n_children != col->n_children)
	{
		snprintf(errbuf, errlen, "column \"%s\" has another shape in the file", col->path);
		return false;
	}
	for (int i = 0; i < col->n_children; i++)
		if (!same_labels(&col->children[i], &a->children[i], errbuf, errlen))
			return false;
	return true;
}

/*
 * read_append_batch: record batch 0 (last: the last one) of the file to
 * append to, with the columns want[], for its dictionaries (what: what the
 * caller reads them for, for the messages); false with errbuf set, *file
 * and *batch then NULL.  Free both with close_append_batch.
 */
bool
read_append_batch(const char *path, const bool *want, bool last, const char *what,
				  ArrowFile **file, ArrowBatch **batch, char *errbuf, size_t errlen)
{
	ArrowError	err;

	*batch = NULL;
	if (arrow_file_open(path, NULL, file, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot read \"%s\": %s", path, err.message);
		*file = NULL;
		return false;
	}
	if ((*file)->n_batches == 0)
		snprintf(errbuf, errlen,
				 "cannot check the %s of \"%s\": it has no record batch\n"
				 "hint: write a new file with -o", what, path);
	else if (arrow_batch_load(*file, last ? (*file)->n_batches - 1 : 0, want, batch,
							  &err) != ARROW_OK)
		snprintf(errbuf, errlen, "cannot read \"%s\": %s", path, err.message);
	else
		return true;
	close_append_batch(*file, *batch);
	*file = NULL;
	*batch = NULL;
	return false;
}

/* frees what read_append_batch opened (either may be NULL) */
void
close_append_batch(ArrowFile *file, ArrowBatch *batch)
{
	if (batch)
		arrow_batch_free(batch);
	if (file)
		arrow_file_close(file);
}

/*
 * --append writes no dictionary batches: the rows appended index into the
 * file's dictionaries, so the enum labels must be the ones in the file.
 * Reads them from the file's first record batch (a file without one cannot
 * be checked and is refused).
 */
bool
check_append_dictionaries(Export *ex, const char *path, char *errbuf, size_t errlen)
{
	ArrowFile  *file;
	ArrowBatch *batch;
	bool	   *want;
	bool		any = false,
				ok;

	want = xcalloc(ex->n_columns, sizeof(bool));
	for (int i = 0; i < ex->n_columns; i++)
		any |= want[i] = has_enum(&ex->columns[i]);
	if (!any)
	{
		free(want);
		return true;
	}
	ok = read_append_batch(path, want, false, "enum labels", &file, &batch, errbuf, errlen);
	for (int i = 0; ok && i < ex->n_columns; i++)
		if (want[i])
			ok = same_labels(&ex->columns[i], &batch->columns[i], errbuf, errlen);
	close_append_batch(file, batch);
	free(want);
	return ok;
}
