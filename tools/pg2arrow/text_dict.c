/*-------------------------------------------------------------------------
 *
 * text_dict.c
 *		--dictionary: text columns written dictionary-encoded (int32 indices
 *		into utf8 values), one dictionary per column for the whole file.
 *
 * Which columns: --dictionary=COL[,COL...] names them (text, varchar, char:
 * PK_TEXT at the top level); --dictionary=auto takes every such column
 * whose distinct values among the first AUTO_SAMPLE_ROWS rows of worker 0's
 * query stay at most AUTO_LIMIT; with --append, auto takes the columns that
 * the file has dictionary-encoded (the schemas must match anyway).
 *
 * Workers.  Every worker decodes its rows straight into indices of the
 * file's one dictionary per column (TextDict): a value the worker's thread
 * has not met yet is looked up (added when new) under the dictionary's
 * lock, and then kept in a small cache of the thread's, so that the lock is
 * taken about once per distinct value and thread.  The indices of every
 * batch are the file's from the start, so the leftovers that workers merge
 * (worker.c) move indices as they are.  Before a record batch is written,
 * the values added since the last dictionary batch are written as a delta
 * dictionary batch (text_dicts_flush, under the lock): a record batch comes
 * after the values it uses.  A new file starts with an empty dictionary
 * batch per column (the file format's one non-delta batch per id); --append
 * starts from the values in the file (read from its last record batch,
 * which sees every dictionary batch) and adds deltas.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

#define AUTO_LIMIT			65536
#define AUTO_SAMPLE_ROWS	100000
#define CACHE_SLOTS			1024	/* a thread's cache per column */

/* The file's dictionary of one column */
struct TextDict
{
	pthread_mutex_t lock;
	int			column;			/* top-level column */
	int64_t		id;				/* Arrow dictionary id */
	char	  **vals;			/* [cap]: value i's bytes, each its own (never moves) */
	int32_t    *lens;			/* [cap] */
	int64_t		n,
				cap;
	int64_t		written;		/* values in the file's dictionary batches */
	/* open addressing: index + 1 (0: empty), a power of two of slots */
	int64_t    *slots;
	uint64_t	mask;
	int			serial;			/* which TextDict this is (thread caches) */
};

/* a thread's cache of one column: a value's hash, index and bytes */
typedef struct CacheEntry
{
	uint64_t	hash;
	int64_t		index;			/* -1: empty */
	const char *bytes;			/* the dictionary's copy */
	int32_t		len;
} CacheEntry;

#define MAX_CACHED_DICTS	64
static __thread CacheEntry *thread_cache[MAX_CACHED_DICTS];

static uint64_t
hash_bytes(const char *p, int32_t len)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325) ^ (uint64_t) len;

	for (int32_t i = 0; i < len; i++)
		h = (h ^ (unsigned char) p[i]) * UINT64_C(0x100000001b3);
	return h ^ (h >> 29);
}

static void
rehash(TextDict *d, uint64_t nslots)
{
	free(d->slots);
	d->slots = xcalloc(nslots, sizeof(int64_t));
	d->mask = nslots - 1;
	for (int64_t i = 0; i < d->n; i++)
	{
		uint64_t	s = hash_bytes(d->vals[i], d->lens[i]) & d->mask;

		while (d->slots[s] != 0)
			s = (s + 1) & d->mask;
		d->slots[s] = i + 1;
	}
}

/* appends value p[len] to d's values, listed in slot s (-1: not listed) */
static int64_t
add_value(TextDict *d, const char *p, int32_t len, int64_t s)
{
	if (d->n == d->cap)
	{
		d->cap = d->cap ? 2 * d->cap : 64;
		d->vals = xrealloc(d->vals, d->cap * sizeof(char *));
		d->lens = xrealloc(d->lens, d->cap * sizeof(int32_t));
	}
	d->vals[d->n] = xmalloc(len > 0 ? len : 1);
	memcpy(d->vals[d->n], p, len);
	d->lens[d->n] = len;
	d->n++;
	if (s >= 0)
	{
		d->slots[s] = d->n;
		if ((uint64_t) d->n * 2 > d->mask + 1)
			rehash(d, 2 * (d->mask + 1));
	}
	return d->n - 1;
}

/* the slot of value p[len] (hash h) in d: its index + 1 there, or an empty one */
static uint64_t
find_slot(const TextDict *d, const char *p, int32_t len, uint64_t h)
{
	uint64_t	s = h & d->mask;

	for (; d->slots[s] != 0; s = (s + 1) & d->mask)
	{
		int64_t		i = d->slots[s] - 1;

		if (d->lens[i] == len && memcmp(d->vals[i], p, len) == 0)
			break;
	}
	return s;
}

/* the index of value p[len] in d, added when new (caller holds the lock) */
static int64_t
lookup_locked(TextDict *d, const char *p, int32_t len, uint64_t h)
{
	uint64_t	s = find_slot(d, p, len, h);

	return d->slots[s] != 0 ? d->slots[s] - 1 : add_value(d, p, len, (int64_t) s);
}

/*
 * text_dict_index: the index of value p[len] in the file's dictionary d
 * (added when new); -1 past INT32_MAX values (errbuf set)
 */
int64_t
text_dict_index(TextDict *d, const char *p, int32_t len, char *errbuf, size_t errlen)
{
	uint64_t	h = hash_bytes(p, len);
	CacheEntry *c = d->serial < MAX_CACHED_DICTS ? thread_cache[d->serial] : NULL;
	CacheEntry *e = NULL;
	int64_t		ix;

	if (c == NULL && d->serial < MAX_CACHED_DICTS)
	{
		c = thread_cache[d->serial] = xcalloc(CACHE_SLOTS, sizeof(CacheEntry));
		for (int i = 0; i < CACHE_SLOTS; i++)
			c[i].index = -1;
	}
	if (c != NULL)
	{
		e = &c[h & (CACHE_SLOTS - 1)];
		if (e->index >= 0 && e->hash == h && e->len == len && memcmp(e->bytes, p, len) == 0)
			return e->index;
	}
	pthread_mutex_lock(&d->lock);
	ix = lookup_locked(d, p, len, h);
	if (e != NULL)
		*e = (CacheEntry) {h, ix, d->vals[ix], len};
	pthread_mutex_unlock(&d->lock);
	if (ix > INT32_MAX)
	{
		snprintf(errbuf, errlen, "its dictionary holds more than %d values", INT32_MAX);
		return -1;
	}
	return ix;
}

/*
 * Writes the values of d added since its last dictionary batch as one
 * (first: the file's non-delta batch, even when empty); under d's lock, so
 * that the record batch written next comes after every value it uses.
 */
static bool
flush_one(Export *ex, TextDict *d, bool first, char *errbuf, size_t errlen)
{
	ArrowField	f = {0};
	ArrowBuilder *b = NULL;
	ArrowError	err;
	int			rc;

	if (!first && d->written == d->n)
		return true;
	f.name = ex->columns[d->column].name;
	f.nullable = false;
	f.type.id = ARROW_TYPE_UTF8;
	rc = arrow_builder_create(&f, NULL, &b, &err);
	for (int64_t i = d->written; rc == ARROW_OK && i < d->n; i++)
		rc = arrow_append_bytes(b, d->vals[i], d->lens[i], &err);
	if (rc == ARROW_OK)
		rc = arrow_writer_write_dictionary(ex->writer, d->id, b, !first, &err);
	if (b != NULL)
		arrow_builder_free(b);
	if (rc != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot write the dictionary of column \"%s\": %s",
				 ex->columns[d->column].name, err.message);
		return false;
	}
	d->written = d->n;
	return true;
}

/*
 * text_dicts_flush: before a record batch, the values every dictionary
 * column's batch may use that the file has not got yet (delta batches)
 */
bool
text_dicts_flush(Export *ex, char *errbuf, size_t errlen)
{
	bool		ok = true;

	for (int i = 0; ok && i < ex->n_columns; i++)
	{
		TextDict   *d = ex->columns[i].tdict;

		if (d == NULL)
			continue;
		pthread_mutex_lock(&d->lock);
		ok = flush_one(ex, d, false, errbuf, errlen);
		pthread_mutex_unlock(&d->lock);
	}
	return ok;
}

/* text_dicts_start: a new file's first (empty) dictionary batch per column */
bool
text_dicts_start(Export *ex, char *errbuf, size_t errlen)
{
	for (int i = 0; i < ex->n_columns; i++)
		if (ex->columns[i].tdict != NULL &&
			!flush_one(ex, ex->columns[i].tdict, true, errbuf, errlen))
			return false;
	return true;
}

/*
 * text_dicts_append: --append starts from the values of the file's
 * dictionaries (those its last record batch sees: every one, in the file
 * format); a file without a record batch cannot be read and is refused
 */
bool
text_dicts_append(Export *ex, const char *path, char *errbuf, size_t errlen)
{
	ArrowFile  *file;
	ArrowBatch *batch;
	bool	   *want = xcalloc(ex->n_columns + 1, sizeof(bool));
	bool		any = false,
				ok;

	for (int i = 0; i < ex->n_columns; i++)
		any |= want[i] = ex->columns[i].tdict != NULL;
	if (!any)
	{
		free(want);
		return true;
	}
	ok = read_append_batch(path, want, true, "dictionaries", &file, &batch, errbuf, errlen);
	for (int i = 0; ok && i < ex->n_columns; i++)
	{
		TextDict   *d = ex->columns[i].tdict;
		const ArrowArray *a = want[i] ? batch->columns[i].dictionary : NULL;

		if (d == NULL)
			continue;
		if (a == NULL || a->offsets == NULL || a->field->type.id != ARROW_TYPE_UTF8)
		{
			snprintf(errbuf, errlen, "column \"%s\" of \"%s\" is not dictionary-encoded text",
					 ex->columns[i].name, path);
			ok = false;
			break;
		}
		for (int64_t j = 0; j < a->length; j++)
		{
			const int32_t *o = a->offsets;
			const char *p = (const char *) a->data + o[j];
			int32_t		len = o[j + 1] - o[j];
			uint64_t	slot = find_slot(d, p, len, hash_bytes(p, len));

			/*
			 * a NULL value, or a value met before: an index no new row gets
			 * (rows of NULL get a NULL index, of a value its first index)
			 */
			if (arrow_array_is_null(a, j) || d->slots[slot] != 0)
				add_value(d, "", 0, -1);
			else
				add_value(d, p, len, (int64_t) slot);
		}
		d->written = d->n;
	}
	close_append_batch(file, batch);
	free(want);
	return ok;
}

/* the Arrow dictionary id of d (pgtypes.c's schema) */
int64_t
text_dict_id(const TextDict *d)
{
	return d->id;
}

/* a new TextDict for top-level column i, dictionary id id */
static TextDict *
text_dict_new(int i, int64_t id, int serial)
{
	TextDict   *d = xcalloc(1, sizeof(TextDict));

	pthread_mutex_init(&d->lock, NULL);
	d->column = i;
	d->id = id;
	d->serial = serial;
	d->slots = xcalloc(64, sizeof(int64_t));
	d->mask = 63;
	return d;
}

/* the largest dictionary id of col and its children (enums), -1: none */
static int64_t
max_dict_id(const PgColumn *col)
{
	int64_t		m = col->kind == PK_ENUM ? col->dict_id : -1;

	for (int i = 0; i < col->n_children; i++)
	{
		int64_t		c = max_dict_id(&col->children[i]);

		m = c > m ? c : m;
	}
	return m;
}

/*
 * auto_columns: want[i] for the text columns whose distinct values among
 * the first AUTO_SAMPLE_ROWS rows of worker 0's query are at most
 * AUTO_LIMIT (one query on its connection, in the export's snapshot)
 */
static bool
auto_columns(Export *ex, PGconn *conn, bool *want, char *errbuf, size_t errlen)
{
	char	   *sql = NULL,
			   *cols = xstrdup(""),
			   *sel = xstrdup("");
	PGresult   *res;
	int			n = 0;
	bool		ok = true;

	for (int i = 0; i < ex->n_columns; i++)
	{
		char	   *id,
				   *t;

		if (ex->columns[i].kind != PK_TEXT || strcmp(ex->columns[i].pg_type, "json") == 0)
			continue;
		id = PQescapeIdentifier(conn, ex->columns[i].name, strlen(ex->columns[i].name));
		t = xasprintf("%s%scount(DISTINCT %s) <= %d", sel, n ? ", " : "", id, AUTO_LIMIT);
		free(sel);
		sel = t;
		t = xasprintf("%s%s%s", cols, n ? ", " : "", id);
		free(cols);
		cols = t;
		PQfreemem(id);
		n++;
	}
	if (n == 0)
	{
		free(cols);
		free(sel);
		return true;
	}
	sql = xasprintf("SELECT %s FROM (SELECT %s FROM (%s) q LIMIT %d) s", sel, cols,
					ex->workers[0].sql, AUTO_SAMPLE_ROWS);
	res = PQexec(conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1)
	{
		snprintf(errbuf, errlen, "--dictionary=auto: the sample query failed: %s",
				 PQerrorMessage(conn));
		ok = false;
	}
	for (int i = 0, k = 0; ok && i < ex->n_columns; i++)
		if (ex->columns[i].kind == PK_TEXT && strcmp(ex->columns[i].pg_type, "json") != 0)
			want[i] = strcmp(PQgetvalue(res, 0, k++), "t") == 0;
	PQclear(res);
	free(sql);
	free(cols);
	free(sel);
	return ok;
}

/* --append with auto: the text columns that the file has dictionary-encoded */
static bool
file_columns(Export *ex, const char *path, bool *want, char *errbuf, size_t errlen)
{
	ArrowFile  *file;
	ArrowError	err;

	if (arrow_file_open(path, NULL, &file, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot read \"%s\": %s", path, err.message);
		return false;
	}
	for (int i = 0; i < ex->n_columns && i < file->schema.n_fields; i++)
		want[i] = ex->columns[i].kind == PK_TEXT && file->schema.fields[i].has_dictionary;
	arrow_file_close(file);
	return true;
}

/*
 * select_dictionaries: the columns --dictionary names (or auto picks) get a
 * TextDict and the next dictionary ids after the enums'; exits on a name
 * that is no text column of the result
 */
bool
select_dictionaries(Export *ex, PGconn *conn, char *errbuf, size_t errlen)
{
	const Options *opts = ex->opts;
	bool	   *want = xcalloc(ex->n_columns + 1, sizeof(bool));
	int64_t		next_id = 0;
	int			serial = 0;
	bool		ok = true;

	for (int i = 0; i < ex->n_columns; i++)
	{
		int64_t		m = max_dict_id(&ex->columns[i]);

		next_id = m + 1 > next_id ? m + 1 : next_id;
	}
	if (opts->dict_auto)
		ok = opts->append ? file_columns(ex, opts->append, want, errbuf, errlen) :
			auto_columns(ex, conn, want, errbuf, errlen);
	for (int j = 0; ok && j < opts->n_dict_cols; j++)
	{
		int			i;

		for (i = 0; i < ex->n_columns; i++)
			if (strcmp(ex->columns[i].name, opts->dict_cols[j]) == 0)
				break;
		if (i == ex->n_columns)
			fatal("--dictionary: the result has no column \"%s\"", opts->dict_cols[j]);
		if (ex->columns[i].kind != PK_TEXT)
			fatal("--dictionary: column \"%s\" has type %s\n"
				  "hint: --dictionary takes text, varchar and char columns",
				  ex->columns[i].name, ex->columns[i].pg_type);
		want[i] = true;
	}
	for (int i = 0; ok && i < ex->n_columns; i++)
		if (want[i])
			ex->columns[i].tdict = text_dict_new(i, next_id++, serial++);
	free(want);
	return ok;
}

/* frees this thread's caches (a worker thread's end) */
void
text_dicts_thread_done(void)
{
	for (int i = 0; i < MAX_CACHED_DICTS; i++)
	{
		free(thread_cache[i]);
		thread_cache[i] = NULL;
	}
}

/* frees the columns' TextDicts (and this thread's caches) */
void
text_dicts_free(PgColumn *columns, int32_t n_columns)
{
	for (int i = 0; i < n_columns; i++)
	{
		TextDict   *d = columns[i].tdict;

		if (d == NULL)
			continue;
		for (int64_t j = 0; j < d->n; j++)
			free(d->vals[j]);
		free(d->vals);
		free(d->lens);
		free(d->slots);
		pthread_mutex_destroy(&d->lock);
		free(d);
		columns[i].tdict = NULL;
	}
	text_dicts_thread_done();
}
