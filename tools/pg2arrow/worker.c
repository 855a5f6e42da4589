/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The worker threads of pg2arrow.
 *
 * Each worker runs its COPY (...) TO STDOUT (FORMAT binary), splits the
 * CopyData stream into tuples, decodes them into its batch (decode.c) and
 * writes every full batch into the output itself (arrow_writer_write_batch
 * reserves a file range atomically).  Its last partial batch is merged into
 * the shared final batch (merge_leftovers).  The first failure of any
 * worker is recorded and cancels the queries of all of them.  The main
 * thread starts the workers and waits for them (run_workers), reporting
 * progress meanwhile.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pg2arrow.h"

/* Records the first failure and makes every worker stop */
static void
set_failure(Export *ex, const char *msg)
{
	pthread_mutex_lock(&ex->error_lock);
	if (ex->error[0] == '\0')
		snprintf(ex->error, sizeof(ex->error), "%s", msg);
	pthread_mutex_unlock(&ex->error_lock);
	if (!atomic_exchange(&ex->stop, true))
		cancel_queries();
}

/*
 * Writes the rows in bs as one record batch (with its statistics, straight
 * from the builders, at a reserved range of the file) and resets bs.
 */
static bool
flush_batch(Export *ex, BatchState *bs, char *errbuf, size_t errlen)
{
	ArrowMetadata md = {0};
	ArrowError	err;

	if (!batch_stats_metadata(bs, ex->columns, &ex->schema, &md, errbuf, errlen))
	{
		free_metadata(&md);
		return false;
	}
	/* the dictionary values the batch uses first (--dictionary) */
	if (!text_dicts_flush(ex, errbuf, errlen))
	{
		free_metadata(&md);
		return false;
	}
	if (arrow_writer_write_batch(ex->writer, bs->builders, &md, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot write a record batch: %s", err.message);
		free_metadata(&md);
		return false;
	}
	free_metadata(&md);
	atomic_fetch_add(&ex->batches, 1);
	batch_reset(bs);
	return true;
}

/*
 * Number of rows of 'from', starting at row 'pos', to copy into 'to' so
 * that it reaches the segment size: the fewest that do (by the bytes the
 * rows take in their buffers), or all that are left.  At least one.
 */
static int64_t
rows_to_fill(const Export *ex, const BatchState *to, const BatchState *from,
			 int64_t pos)
{
	int64_t		room = ex->opts->segment_size - batch_body_size(to);
	int64_t		lo = 1,
				hi = from->n_rows - pos;

	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;
		int64_t		size = 0;

		for (int i = 0; i < ex->n_columns && size < room; i++)
			size += arrow_builder_rows_size(from->builders[i], pos, mid);
		if (size >= room)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/*
 * Hands a worker's last partial batch to the shared final batch.  The
 * smaller of the two is copied, row range by row range, into the larger
 * one, which becomes the final batch: the first worker to finish hands its
 * batch over without any work.  The final batch is written whenever it
 * reaches the segment size, the rest at the end of the export.
 */
static bool
merge_leftovers(Worker *w, char *errbuf, size_t errlen)
{
	Export	   *ex = w->ex;
	BatchState *from = &w->batch;
	int64_t		pos = 0;
	bool		ok = true;

	pthread_mutex_lock(&ex->final_lock);
	if (from->n_rows > ex->final.n_rows)
	{
		BatchState	tmp = ex->final;

		ex->final = *from;
		*from = tmp;
	}
	while (ok && pos < from->n_rows)
	{
		int64_t		n = rows_to_fill(ex, &ex->final, from, pos);

		for (int i = 0; ok && i < ex->n_columns; i++)
		{
			ArrowError	err;

			if (arrow_builder_append_rows(ex->final.builders[i], from->builders[i],
										  pos, n, &err) != ARROW_OK)
			{
				snprintf(errbuf, errlen, "cannot merge the last rows of worker %d: %s",
						 w->id, err.message);
				ok = false;
			}
		}
		ex->final.n_rows += n;
		pos += n;
		if (ok && batch_body_size(&ex->final) >= ex->opts->segment_size)
			ok = flush_batch(ex, &ex->final, errbuf, errlen);
	}
	pthread_mutex_unlock(&ex->final_lock);
	batch_reset(from);
	return ok;
}

/* Appends bytes to the worker's carry buffer */
static bool
carry_append(Worker *w, const char *data, size_t len, char *errbuf, size_t errlen)
{
	if (w->carry_cap - w->carry_len < len)
	{
		size_t		cap = w->carry_cap ? w->carry_cap : 8192;
		char	   *p;

		while (cap - w->carry_len < len)
			cap *= 2;
		if ((p = realloc(w->carry, cap)) == NULL)
		{
			snprintf(errbuf, errlen, "out of memory");
			return false;
		}
		w->carry = p;
		w->carry_cap = cap;
	}
	memcpy(w->carry + w->carry_len, data, len);
	w->carry_len += len;
	return true;
}

/*
 * Whether the batch's body may have reached the segment size after a row
 * of tlen COPY bytes.  Computing the exact size walks every builder, so it
 * is done only when this says so; batches are still cut at exactly the
 * same row.  For flat columns other than inet/cidr and numeric-as-text, a
 * row grows the body by at most its COPY bytes plus 16 per column (a
 * decimal128 is at most 4 bytes wider than numeric's COPY form; every other
 * value is narrower than its COPY form), and alignment adds at most 63
 * bytes per buffer (3 per column) in all.  Other columns can grow more than
 * their COPY bytes (text of a numeric, elements of an array): then every
 * row is checked.
 */
static bool
size_may_be_reached(const Export *ex, Worker *w, int64_t tlen)
{
	if (w->size_check == 0)
	{
		w->size_check = 1;
		for (int i = 0; i < ex->n_columns; i++)
		{
			const PgColumn *c = &ex->columns[i];

			if (c->kind == PK_ARRAY || c->kind == PK_COMPOSITE || c->kind == PK_INET ||
				(c->kind == PK_NUMERIC && c->numeric_mode == NUMERIC_TEXT))
				w->size_check = 2;
		}
	}
	if (w->size_check == 2)
		return true;
	w->size_growth += tlen + 16 * (int64_t) ex->n_columns;
	return w->size_known + w->size_growth + 192 * (int64_t) ex->n_columns >=
		ex->opts->segment_size;
}

/*
 * Consumes one CopyData message: the header first, then complete tuples.
 * A tuple split across messages waits in the carry buffer (the server sends
 * one tuple per message, so the fast path decodes straight from libpq's
 * buffer).
 */
static bool
consume(Worker *w, const char *data, size_t len, char *errbuf, size_t errlen)
{
	static const char signature[11] = "PGCOPY\n\377\r\n\0";
	Export	   *ex = w->ex;
	const char *p = data;
	size_t		avail = len,
				used = 0;

	if (w->carry_len > 0 || !w->header_done)
	{
		if (!carry_append(w, data, len, errbuf, errlen))
			return false;
		p = w->carry;
		avail = w->carry_len;
	}
	if (!w->header_done)
	{
		uint32_t	flags,
					extlen;

		if (avail < 19)
			return true;
		if (memcmp(p, signature, 11) != 0)
		{
			snprintf(errbuf, errlen, "the server did not send a binary COPY header");
			return false;
		}
		memcpy(&flags, p + 11, 4);
		memcpy(&extlen, p + 15, 4);
		flags = __builtin_bswap32(flags);
		extlen = __builtin_bswap32(extlen);
		if ((flags & 0xffff0000u) != 0 || extlen > (1u << 20))
		{
			snprintf(errbuf, errlen, "unsupported binary COPY header (flags 0x%x)", flags);
			return false;
		}
		if (avail - 19 < extlen)
			return true;
		used = 19 + extlen;
		w->header_done = true;
	}
	while (used < avail)
	{
		size_t		tlen;
		int			rc;

		if (w->trailer_seen)
		{
			snprintf(errbuf, errlen, "binary COPY data continues after its trailer");
			return false;
		}
		rc = copy_tuple_length(p + used, avail - used, ex->n_columns, &tlen,
							   errbuf, errlen);
		if (rc < 0)
			return false;
		if (rc == 0)
			break;
		if (rc == 2)
		{
			w->trailer_seen = true;
			used += tlen;
			continue;
		}
		w->rows++;
		if (!decode_tuple(&w->batch, ex->columns, p + used, tlen,
						  w->rows, errbuf, errlen))
			return false;
		used += tlen;
		if (!size_may_be_reached(ex, w, tlen))
			continue;
		w->size_known = batch_body_size(&w->batch);
		w->size_growth = 0;
		if (w->size_known >= ex->opts->segment_size)
		{
			if (!flush_batch(ex, &w->batch, errbuf, errlen))
				return false;
			w->size_known = 0;
		}
	}
	/* keep the incomplete rest */
	if (p == w->carry)
	{
		memmove(w->carry, w->carry + used, avail - used);
		w->carry_len = avail - used;
	}
	else if (used < avail && !carry_append(w, p + used, avail - used, errbuf, errlen))
		return false;
	return true;
}

/* The body of a worker: run the COPY, decode, write.  False on failure. */
static bool
worker_run(Worker *w, char *errbuf, size_t errlen)
{
	Export	   *ex = w->ex;
	PGresult   *res = PQexec(w->conn, w->copy);
	int64_t		counted = 0,
				bytes = 0;
	char	   *buf;
	int			n;

	if (PQresultStatus(res) != PGRES_COPY_OUT)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		PQclear(res);
		return false;
	}
	PQclear(res);
	while ((n = PQgetCopyData(w->conn, &buf, 0)) > 0)
	{
		bool		ok;

		if (atomic_load(&ex->stop) || interrupted)
		{
			PQfreemem(buf);
			snprintf(errbuf, errlen, "stopped");
			return false;
		}
		ok = consume(w, buf, n, errbuf, errlen);
		PQfreemem(buf);
		if (!ok)
			return false;
		/* shared counters for --progress, updated now and then */
		bytes += n;
		if (w->rows - counted >= 4096)
		{
			atomic_fetch_add(&ex->bytes, bytes);
			atomic_fetch_add(&ex->rows, w->rows - counted);
			counted = w->rows;
			bytes = 0;
		}
	}
	atomic_fetch_add(&ex->bytes, bytes);
	atomic_fetch_add(&ex->rows, w->rows - counted);
	if (n == -2)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		return false;
	}
	res = PQgetResult(w->conn);
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
	{
		snprintf(errbuf, errlen, "query failed: %s", PQerrorMessage(w->conn));
		PQclear(res);
		return false;
	}
	PQclear(res);
	if (w->carry_len > 0 || !w->trailer_seen)
	{
		snprintf(errbuf, errlen, "binary COPY data ended in the middle of a row");
		return false;
	}
	if (w->batch.n_rows == 0)
		return true;
	if (ex->n_workers == 1)
		return flush_batch(ex, &w->batch, errbuf, errlen);
	return merge_leftovers(w, errbuf, errlen);
}

/*
 * Thread entry point: runs the worker and records its failure (prefixed
 * with the worker number when there are several) for run_workers to report.
 */
static void *
worker_main(void *arg)
{
	Worker	   *w = arg;
	char		errbuf[ERRLEN];

	if (!worker_run(w, errbuf, sizeof(errbuf)))
	{
		char		msg[ERRLEN + 32];
		size_t		len = strlen(errbuf);

		while (len > 0 && errbuf[len - 1] == '\n')
			errbuf[--len] = '\0';
		if (w->ex->n_workers > 1)
			snprintf(msg, sizeof(msg), "worker %d: %s", w->id, errbuf);
		else
			snprintf(msg, sizeof(msg), "%s", errbuf);
		set_failure(w->ex, msg);
	}
	text_dicts_thread_done();
	return NULL;
}

/*
 * Waits for the started workers to end.  Meanwhile reports progress
 * (--progress) and starts the disk writes of each batch the workers wrote,
 * so that the final fsync does not have the whole file left to write.
 */
static void
wait_for_workers(Export *ex)
{
	double		next = ex->start + 1;
	int64_t		batches_seen = 0;

	for (;;)
	{
		bool		running = false;
		int64_t		batches = atomic_load(&ex->batches);

		for (int i = 0; i < ex->n_workers; i++)
			if (ex->workers[i].started && pthread_tryjoin_np(ex->workers[i].thread, NULL) == 0)
				ex->workers[i].started = false;
			else if (ex->workers[i].started)
				running = true;
		if (!running)
			break;
		if (batches != batches_seen)
		{
			arrow_writer_start_writeback(ex->writer);
			batches_seen = batches;
		}
		if (ex->opts->progress && now_seconds() >= next)
		{
			print_progress(ex, false);
			next += 1;
		}
		usleep(20000);
	}
}

/*
 * Runs the export's workers (their connections and batches are set up) to
 * the end, then writes the shared final batch.  False with errbuf set when
 * a worker failed or the export was interrupted (then errbuf is left to
 * the caller).
 */
bool
run_workers(Export *ex, char *errbuf, size_t errlen)
{
	ex->start = now_seconds();
	for (int i = 0; i < ex->n_workers; i++)
	{
		if (pthread_create(&ex->workers[i].thread, NULL, worker_main, &ex->workers[i]) != 0)
		{
			set_failure(ex, "cannot start a worker thread");
			break;
		}
		ex->workers[i].started = true;
	}
	wait_for_workers(ex);
	if (interrupted)
		return false;
	if (ex->error[0] != '\0')
	{
		snprintf(errbuf, errlen, "%s", ex->error);
		return false;
	}
	return ex->final.n_rows == 0 || flush_batch(ex, &ex->final, errbuf, errlen);
}
