/*-------------------------------------------------------------------------
 *
 * main.c
 *		pg2arrow: exports the result of a query (or a table) from PostgreSQL
 *		into an Apache Arrow file, in parallel, from one snapshot.
 *
 * The first connection opens a REPEATABLE READ READ ONLY transaction and
 * exports its snapshot; every other worker imports it, so all workers see
 * the same data.  Each worker thread has its own connection, reads its rows
 * with COPY (...) TO STDOUT (FORMAT binary), builds record batches of about
 * --segment-size bytes and writes them itself into the one output file with
 * arrow_writer_write_batch (which reserves a file range atomically and
 * writes straight from the column builders).  The rows left at the end of
 * each worker are merged into one shared final batch (see merge_leftovers),
 * so the file has no tiny batches.
 *
 * The output is written under a temporary name in the target directory and
 * renamed when complete (then the directory is fsynced); any failure (query
 * error, a worker failing, disk full, a termination signal) removes it.
 * --append restores the original file on failure (arrow_writer_abort), and
 * its journal lets the next run (or --recover) restore it after a crash.
 * Symbolic links are followed to the file written; targets that are not
 * regular files are refused (target.c).
 *
 * This file only runs the steps; the other files of pg2arrow do the work
 * and none of them calls back into this one.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arrow_print.h"
#include "pg2arrow.h"

/* --dump prints the layout of the whole file */
static const ArrowPrintOptions dump_options = {.json = false, .values = false, .batch = -1};

/* --recover FILE: undoes an interrupted --append of FILE; returns the exit status */
static int
run_recover(const char *path)
{
	char		errbuf[ERRLEN];
	char	   *target = resolve_target(path, "--recover");
	bool		ok;

	remove_stale_temps(target);
	ok = recover_target(target, false, errbuf, sizeof(errbuf));
	if (!ok)
		report("%s", errbuf);
	free(target);
	return ok ? 0 : 1;
}

/* Sets up ex for the export opts describe: its workers, nothing connected */
static void
init_export(Export *ex, Options *opts)
{
	memset(ex, 0, sizeof(*ex));
	ex->opts = opts;
	ex->n_workers = opts->n_workers;
	ex->workers = xcalloc(ex->n_workers, sizeof(Worker));
	for (int i = 0; i < ex->n_workers; i++)
	{
		ex->workers[i].ex = ex;
		ex->workers[i].id = i;
	}
	pthread_mutex_init(&ex->final_lock, NULL);
	pthread_mutex_init(&ex->error_lock, NULL);
}

/*
 * Points opts->output or opts->append at the file really written (symbolic
 * links followed; exits if it is a device, FIFO, socket or directory), then
 * clears what crashed runs left next to it: stale temporary files and the
 * journal of an interrupted append.  ex->target gets that path; false with
 * errbuf set when an interrupted append cannot be undone.
 */
static bool
prepare_target(Export *ex, char *errbuf, size_t errlen)
{
	Options    *opts = ex->opts;
	char	   *target = resolve_target(opts->output ? opts->output : opts->append,
										opts->output ? "-o/--output" : "--append");

	if (opts->output)
		opts->output = target;
	else
		opts->append = target;
	remove_stale_temps(target);
	if (!recover_target(target, true, errbuf, errlen))
	{
		free(target);
		opts->output = opts->append = NULL;
		return false;
	}
	ex->target = target;
	return true;
}

/*
 * Connects every worker.  Worker 0 comes first: its snapshot, the workers'
 * SQL, the query's columns, which of them keep statistics, the Arrow
 * schema and the COPY commands; then the other workers join its snapshot.
 */
static bool
connect_workers(Export *ex, char *errbuf, size_t errlen)
{
	PGconn	   *conn0;

	if (!open_worker(ex, 0, errbuf, errlen))
		return false;
	conn0 = ex->workers[0].conn;
	if (!build_worker_sql(ex, conn0, errbuf, errlen) ||
		!describe_columns(ex, conn0, errbuf, errlen))
		return false;
	select_stats(ex);
	if (!select_dictionaries(ex, conn0, errbuf, errlen))
		return false;
	if (!pgtypes_build_schema(ex->columns, ex->n_columns, &ex->schema, errbuf, errlen))
		return false;
	for (int i = 0; i < ex->n_workers; i++)
		ex->workers[i].copy = build_copy(ex, ex->workers[i].sql);
	for (int i = 1; i < ex->n_workers; i++)
		if (!open_worker(ex, i, errbuf, errlen))
			return false;
	return !interrupted;
}

/*
 * Opens the output: -o a new file under a temporary name (with the
 * dictionaries of its enum columns), --append the existing file (whose
 * dictionaries must hold the enum labels); then the batches of the workers
 * and the shared final batch.
 */
static bool
open_output(Export *ex, char *errbuf, size_t errlen)
{
	const Options *opts = ex->opts;
	ArrowError	err;

	if (opts->output)
	{
		ex->tmp_path = xasprintf("%s.pg2arrow-%d.tmp", opts->output, (int) getpid());
		if (arrow_writer_create(ex->tmp_path, &ex->schema, NULL, &ex->writer, &err) != ARROW_OK)
		{
			snprintf(errbuf, errlen, "%s", err.message);	/* names the file */
			return false;
		}
		if (!write_dictionaries(ex, ex->columns, ex->n_columns, errbuf, errlen) ||
			!text_dicts_start(ex, errbuf, errlen))
			return false;
	}
	else if (arrow_writer_open_append(opts->append, &ex->schema, NULL, &ex->writer,
									  &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "%s", err.message);	/* names the file */
		return false;
	}
	else if (!check_append_dictionaries(ex, opts->append, errbuf, errlen) ||
			 !text_dicts_append(ex, opts->append, errbuf, errlen))
		return false;

	for (int i = 0; i < ex->n_workers; i++)
		if (!batch_init(&ex->workers[i].batch, &ex->schema, ex->columns, errbuf, errlen))
			return false;
	return batch_init(&ex->final, &ex->schema, ex->columns, errbuf, errlen);
}

/*
 * Completes the file: the footer, then (for -o) the rename to its name and
 * the fsync of its directory.  The termination signals ('block') stay
 * blocked from here on: the file is either complete or left as it was.
 */
static bool
finish_output(Export *ex, const sigset_t *block, char *errbuf, size_t errlen)
{
	const Options *opts = ex->opts;
	ArrowError	err;
	int			rc;

	sigprocmask(SIG_BLOCK, block, NULL);
	if (interrupted)
		return false;
	rc = arrow_writer_close(ex->writer, &err);
	ex->writer = NULL;
	if (rc != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot finish \"%s\": %s",
				 ex->tmp_path ? ex->tmp_path : opts->append, err.message);
		if (ex->tmp_path)
			unlink(ex->tmp_path);
		return false;
	}
	if (ex->tmp_path && rename(ex->tmp_path, opts->output) != 0)
	{
		snprintf(errbuf, errlen, "cannot put the new \"%s\" in place (rename): %s",
				 opts->output, strerror(errno));
		unlink(ex->tmp_path);
		return false;
	}
	if (ex->tmp_path && arrow_writer_sync_dir(opts->output, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "\"%s\" is written, but a crash could still undo its rename: %s",
				 opts->output, err.message);
		return false;
	}
	return true;
}

/*
 * Makes errbuf (of errlen bytes) name the output file wherever it names the
 * temporary file that -o writes first: the user knows only the former.
 */
static void
name_output_for_temp(const Export *ex, char *errbuf, size_t errlen)
{
	size_t		tmp_len;
	char	   *out;
	size_t		used = 0;
	const char *p = errbuf;
	const char *hit;

	if (ex->tmp_path == NULL || strstr(errbuf, ex->tmp_path) == NULL)
		return;
	tmp_len = strlen(ex->tmp_path);
	out = xcalloc(errlen, 1);
	while ((hit = strstr(p, ex->tmp_path)) != NULL && used < errlen)
	{
		used += snprintf(out + used, errlen - used, "%.*s%s",
						 (int) (hit - p), p, ex->opts->output);
		p = hit + tmp_len;
	}
	if (used < errlen)
		snprintf(out + used, errlen - used, "%s", p);
	memcpy(errbuf, out, errlen);
	errbuf[errlen - 1] = '\0';
	free(out);
}

/*
 * After a failure: removes the unfinished file (or restores the appended
 * one) and reports errbuf, or the signal that interrupted the export.
 */
static void
report_failure(Export *ex, char *errbuf, size_t errlen)
{
	const Options *opts = ex->opts;
	size_t		len;

	if (interrupted)
		snprintf(errbuf, errlen, "interrupted by signal %d (%s)",
				 (int) interrupted, strsignal((int) interrupted));
	if (ex->writer)
		arrow_writer_abort(ex->writer);
	ex->writer = NULL;
	name_output_for_temp(ex, errbuf, errlen);
	len = strlen(errbuf);
	while (len > 0 && errbuf[len - 1] == '\n')
		errbuf[--len] = '\0';
	report("%s", errbuf);
	if (opts->append && access(opts->append, F_OK) == 0)
		report("\"%s\" is unchanged", opts->append);
}

/*
 * Frees the connections and cancel objects (the transactions end with them)
 * and everything else the export allocated.
 */
static void
free_export(Export *ex)
{
	cancel_forget_all();
	for (int i = 0; i < ex->n_workers; i++)
	{
		if (ex->workers[i].conn != NULL)
			PQfinish(ex->workers[i].conn);
		free(ex->workers[i].sql);
		free(ex->workers[i].copy);
		free(ex->workers[i].carry);
		batch_free(&ex->workers[i].batch);
	}
	batch_free(&ex->final);
	free(ex->workers);
	if (ex->columns != NULL)
		text_dicts_free(ex->columns, ex->n_columns);
	pgtypes_free(ex->columns, ex->n_columns);
	arrow_schema_free(NULL, &ex->schema);
	pthread_mutex_destroy(&ex->final_lock);
	pthread_mutex_destroy(&ex->error_lock);
	free(ex->snapshot);
	free(ex->tmp_path);
	free(ex->target);
}

/*
 * The export, step by step: the target file; the workers' connections (in
 * one snapshot) and the query's columns; the output file (temporary name,
 * or --append); the worker threads and the shared final batch; footer and
 * rename.  Every failure after the file exists removes it (or restores the
 * appended file).  Returns the exit status.
 */
static int
run_export(Options *opts)
{
	Export		ex;
	char		errbuf[ERRLEN] = "";
	sigset_t	block;
	bool		ok;

	init_export(&ex, opts);
	install_signal_handlers(&block);
	ok = prepare_target(&ex, errbuf, sizeof(errbuf)) &&
		connect_workers(&ex, errbuf, sizeof(errbuf)) &&
		open_output(&ex, errbuf, sizeof(errbuf)) &&
		run_workers(&ex, errbuf, sizeof(errbuf)) &&
		finish_output(&ex, &block, errbuf, sizeof(errbuf));
	if (ok && opts->progress)
		print_progress(&ex, true);
	if (!ok)
		report_failure(&ex, errbuf, sizeof(errbuf));
	free_export(&ex);
	return ok ? 0 : 1;
}

/* pg2arrow: an export, --dump or --recover; returns the exit status */
int
main(int argc, char **argv)
{
	Options		opts;
	int			rc;

	set_progname("pg2arrow");
	parse_options(argc, argv, &opts);
	if (opts.dump)
		rc = arrow_print_file(opts.dump, &dump_options);
	else if (opts.recover)
		rc = run_recover(opts.recover);
	else
		rc = run_export(&opts);
	free_options(&opts);
	return rc;
}
