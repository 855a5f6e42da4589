/*-------------------------------------------------------------------------
 *
 * output.c
 *		fluent2arrow: the Arrow files of each route.
 *
 * A route's rows gather in its column builders; every batch_rows rows (or
 * 64 MB) they are written as one record batch, with pg_warp.min.N /
 * pg_warp.max.N statistics as pg2arrow -S writes them, into the route's
 * open file, a hidden ".fluent2arrow-PID-SEQ.tmp" in the route's directory
 * (arrow_fdw's dir option skips names that start with a dot).  When the
 * file reaches rotate_rows, rotate_size or rotate_age it goes to the
 * finisher thread, which writes the footer and fsyncs (arrow_writer_close),
 * renames it to PREFIX-YYYYMMDDTHHMMSS.ffffffZ-SEQ.arrow without replacing
 * anything, and fsyncs the directory.  The WAL position of the first frame
 * with rows in a file is kept until the file is finished (the WAL's low
 * water mark).  When a file is handed over, the position before which
 * every event will then be stored is noted with it (checkpoint_bound), and
 * the finisher records it as the WAL's checkpoint right after the rename,
 * so that a replay skips the rows already in finished files.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "fluent2arrow.h"

typedef struct OutFile
{
	ArrowWriter *w;
	char	   *tmp_path;
	char	   *dir;
	char	   *prefix;
	int64_t		rows;			/* rows written or in the builders */
	int64_t		bytes;			/* batch bodies written */
	int64_t		opened_ms;
	int64_t		opened_us;
	WalPos		first;			/* the position of its first row */
	WalPos		checkpoint;		/* true once it is finished ... */
	bool		has_checkpoint; /* ... if set */
	bool		writeback_only; /* a queue item that asks for writeback */
	struct OutFile *next;
} OutFile;

static pthread_t fin_thread;
static pthread_mutex_t fin_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fin_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t fin_done_cond = PTHREAD_COND_INITIALIZER;
static OutFile *fin_head,
		   *fin_tail;
static int	fin_pending;		/* files queued or being finished */
static bool fin_stop;
static int	fin_efd = -1;
static atomic_bool failed;
static uint64_t file_seq;

/* mkdir -p */
static bool
make_dirs(const char *path, char *errbuf, size_t errlen)
{
	char	   *p = xstrdup(path);

	for (char *s = p + 1;; s++)
	{
		if (*s == '/' || *s == '\0')
		{
			char		c = *s;

			*s = '\0';
			if (mkdir(p, 0755) != 0 && errno != EEXIST)
			{
				snprintf(errbuf, errlen, "cannot create directory \"%s\": %s", p, strerror(errno));
				free(p);
				return false;
			}
			*s = c;
			if (c == '\0')
				break;
		}
	}
	free(p);
	return true;
}

/* Creates the builders of a route and its directory */
bool
output_route_init(Route *r, char *errbuf, size_t errlen)
{
	if (!make_dirs(r->dir, errbuf, errlen))
		return false;
	r->builders = xcalloc(r->n_columns, sizeof(ArrowBuilder *));
	for (int i = 0; i < r->n_columns; i++)
	{
		ArrowError	err;

		if (arrow_builder_create(&r->schema.fields[i], NULL, &r->builders[i], &err) != ARROW_OK)
			return snprintf(errbuf, errlen, "route \"%s\", column \"%s\": %s",
							r->name, r->columns[i].name, err.message), false;
	}
	return true;
}

void
output_route_free(Route *r)
{
	for (int i = 0; r->builders && i < r->n_columns; i++)
		if (r->builders[i])
			arrow_builder_free(r->builders[i]);
	free(r->builders);
	free(r->key_hint);
	r->builders = NULL;
	r->key_hint = NULL;
	r->n_hint = 0;
}

/* Formats a float statistic as doc/arrow-metadata.md says */
static void
float_stat(double v, char *buf, size_t len)
{
	if (isinf(v))
		snprintf(buf, len, "%s", v > 0 ? "Infinity" : "-Infinity");
	else if (v == 0 && signbit(v))
		snprintf(buf, len, "-0.0");
	else
		snprintf(buf, len, "%.17g", v);
}

/* pg_warp.min.N / pg_warp.max.N of the rows in the builders */
static void
batch_stats(Route *r, ArrowMetadata *md)
{
	for (int i = 0; i < r->n_columns; i++)
	{
		ArrowMinMax st;
		char		key[64],
					vmin[128],
					vmax[128];
		ArrowError	err;

		arrow_builder_minmax(r->builders[i], &st);
		if (st.kind == ARROW_MINMAX_NONE)
			continue;
		if (st.kind == ARROW_MINMAX_FLOAT)
		{
			float_stat(st.dmin, vmin, sizeof(vmin));
			float_stat(st.dmax, vmax, sizeof(vmax));
		}
		else if (st.kind == ARROW_MINMAX_DECIMAL)
		{
			arrow_decimal128_format(st.xmin, r->columns[i].type.scale, vmin, sizeof(vmin));
			arrow_decimal128_format(st.xmax, r->columns[i].type.scale, vmax, sizeof(vmax));
		}
		else
		{
			snprintf(vmin, sizeof(vmin), "%lld", (long long) st.imin);
			snprintf(vmax, sizeof(vmax), "%lld", (long long) st.imax);
		}
		snprintf(key, sizeof(key), "pg_warp.min.%d", i);
		if (arrow_metadata_set(NULL, md, key, vmin, &err) != ARROW_OK)
			fatal("out of memory");
		snprintf(key, sizeof(key), "pg_warp.max.%d", i);
		if (arrow_metadata_set(NULL, md, key, vmax, &err) != ARROW_OK)
			fatal("out of memory");
	}
}

/* Puts an item on the finisher's queue */
static void
fin_enqueue(OutFile *f)
{
	pthread_mutex_lock(&fin_lock);
	f->next = NULL;
	if (fin_tail)
		fin_tail->next = f;
	else
		fin_head = f;
	fin_tail = f;
	if (!f->writeback_only)
		fin_pending++;
	pthread_cond_signal(&fin_cond);
	pthread_mutex_unlock(&fin_lock);
}

/* Gives up the route's file (after a failure): the WAL keeps its events */
static void
drop_file(Route *r, const char *what, const char *msg)
{
	logmsg("route \"%s\": %s: %s; its events stay in the spool until the next start", r->name, what, msg);
	atomic_store(&failed, true);
	for (int i = 0; i < r->n_columns; i++)
		arrow_builder_reset(r->builders[i]);
	r->batch_n = 0;
	if (r->file)
	{
		free(r->file->tmp_path);
		free(r->file->dir);
		free(r->file->prefix);
		free(r->file);
		r->file = NULL;
	}
}

/* Writes the builders' rows as one record batch of the open file */
static void
flush_batch(Route *r)
{
	ArrowMetadata md = {0};
	ArrowError	err;
	int64_t		size = 0;

	for (int i = 0; i < r->n_columns; i++)
		size += arrow_builder_body_size(r->builders[i]);
	batch_stats(r, &md);
	if (arrow_writer_write_batch(r->file->w, r->builders, &md, &err) != ARROW_OK)
	{
		free_metadata(&md);
		r->file->w = NULL;		/* the writer removed the file */
		drop_file(r, "cannot write a record batch", err.message);
		return;
	}
	free_metadata(&md);
	r->file->bytes += size;
	r->batch_n = 0;
	{
		OutFile    *wb = xcalloc(1, sizeof(OutFile));

		wb->writeback_only = true;
		wb->w = r->file->w;
		fin_enqueue(wb);
	}
}

/*
 * The checkpoint that holds once the files handed to the finisher so far
 * are finished: the position of the next event, or the first row of a
 * file still open if that is earlier (the finisher finishes files in
 * order; a file opened later starts after the next event).  The dead
 * letters before it are made durable first; false when they cannot be,
 * or a file failed (then no checkpoint is recorded any more).
 */
static bool
checkpoint_bound(WalPos *pos)
{
	*pos = wal_event_position();
	for (int i = 0; i < g_cfg->n_routes; i++)
	{
		OutFile    *f = g_cfg->routes[i].file;

		if (f && walpos_before(f->first, *pos))
			*pos = f->first;
	}
	return deadletter_sync() && !atomic_load(&failed);
}

/*
 * Whether the events of the files finished so far are stored for good: no
 * file failed and the dead letters are durable (checked before WAL
 * segments are removed)
 */
bool
output_stored(void)
{
	return !output_failed() && deadletter_sync();
}

/* Hands the route's file (after its last batch) to the finisher */
static void
rotate(Route *r)
{
	OutFile    *f;

	if (r->file == NULL)
		return;
	if (r->batch_n > 0)
		flush_batch(r);
	if (r->file == NULL)
		return;
	f = r->file;
	r->file = NULL;
	f->has_checkpoint = checkpoint_bound(&f->checkpoint);
	fin_enqueue(f);
}

/* Creates the route's hidden temporary file */
static bool
open_file(Route *r, WalPos pos)
{
	OutFile    *f = xcalloc(1, sizeof(OutFile));
	ArrowError	err;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	f->tmp_path = xasprintf("%s/.fluent2arrow-%d-%llu.tmp", r->dir, (int) getpid(),
							(unsigned long long) ++file_seq);
	f->dir = xstrdup(r->dir);
	f->prefix = xstrdup(r->prefix);
	f->opened_ms = now_ms();
	f->opened_us = (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	f->first = pos;
	r->file = f;
	if (arrow_writer_create(f->tmp_path, &r->schema, NULL, &f->w, &err) != ARROW_OK)
	{
		drop_file(r, "cannot create a file", err.message);
		return false;
	}
	return true;
}

/* After a row was appended: batch and rotation by rows and size */
void
output_row_added(Route *r, WalPos pos)
{
	g_count.events++;
	if (r->file == NULL && !open_file(r, pos))
		return;
	r->batch_n++;
	r->file->rows++;
	if (r->batch_n >= r->batch_rows ||
		((r->batch_n & 4095) == 0 && arrow_builder_body_size(r->builders[0]) > (64 << 20) / r->n_columns))
		flush_batch(r);
	if (r->file == NULL)
		return;
	if (r->file->rows >= r->rotate_rows)
		rotate(r);
	else if ((r->file->rows & 127) == 0)
	{
		int64_t		size = r->file->bytes;

		for (int i = 0; i < r->n_columns; i++)
			size += arrow_builder_body_size(r->builders[i]);
		if (size >= r->rotate_bytes)
			rotate(r);
	}
}

/* Rotation by age */
void
output_tick(Config *cfg, int64_t now)
{
	for (int i = 0; i < cfg->n_routes; i++)
	{
		Route	   *r = &cfg->routes[i];

		if (r->file && now - r->file->opened_ms >= r->rotate_ms)
			rotate(r);
	}
}

void
output_finish_all(Config *cfg)
{
	for (int i = 0; i < cfg->n_routes; i++)
		rotate(&cfg->routes[i]);
}

/* Final name of a file: PREFIX-YYYYMMDDTHHMMSS.ffffffZ-SEQ.arrow */
static char *
final_name(const OutFile *f, unsigned n)
{
	time_t		sec = f->opened_us / 1000000;
	struct tm	tm;
	char		ts[32];

	gmtime_r(&sec, &tm);
	strftime(ts, sizeof(ts), "%Y%m%dT%H%M%S", &tm);
	return xasprintf("%s/%s-%s.%06dZ-%06u.arrow", f->dir, f->prefix, ts,
					 (int) (f->opened_us % 1000000), n);
}

/*
 * Footer, fsync, rename, fsync of the directory (finisher thread); false
 * when the file could not be finished (its events stay in the spool).
 */
static bool
finish_file(OutFile *f)
{
	static unsigned seq;
	ArrowError	err;
	char	   *path = NULL;

	if (arrow_writer_close(f->w, &err) != ARROW_OK)
	{
		logmsg("cannot finish \"%s\": %s; its events stay in the spool until the next start", f->tmp_path, err.message);
		atomic_store(&failed, true);
		return false;
	}
	for (int tries = 0;; tries++)
	{
		free(path);
		path = final_name(f, ++seq);
		if (renameat2(AT_FDCWD, f->tmp_path, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
			break;
		if (errno != EEXIST || tries == 999)
		{
			logmsg("cannot rename \"%s\" to \"%s\": %s; its events stay in the spool until the next start",
				   f->tmp_path, path, strerror(errno));
			atomic_store(&failed, true);
			free(path);
			return false;
		}
	}
	free(path);
	if (arrow_writer_sync_dir(f->tmp_path, &err) != ARROW_OK)
	{
		logmsg("%s", err.message);
		atomic_store(&failed, true);
		return false;
	}
	__atomic_fetch_add(&g_count.files, 1, __ATOMIC_RELAXED);
	return true;
}

static void *
finisher_main(void *arg)
{
	sigset_t	all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;)
	{
		OutFile    *f;
		uint64_t	one = 1;

		pthread_mutex_lock(&fin_lock);
		while (fin_head == NULL && !fin_stop)
			pthread_cond_wait(&fin_cond, &fin_lock);
		if (fin_head == NULL)
		{
			pthread_mutex_unlock(&fin_lock);
			return NULL;
		}
		f = fin_head;			/* stays queued (for the low water) until done */
		pthread_mutex_unlock(&fin_lock);
		if (f->writeback_only)
			arrow_writer_start_writeback(f->w);
		else if (finish_file(f) && f->has_checkpoint && !atomic_load(&failed))
			wal_checkpoint(f->checkpoint);
		pthread_mutex_lock(&fin_lock);
		fin_head = f->next;
		if (fin_head == NULL)
			fin_tail = NULL;
		if (!f->writeback_only)
			fin_pending--;
		pthread_cond_broadcast(&fin_done_cond);
		pthread_mutex_unlock(&fin_lock);
		free(f->tmp_path);
		free(f->dir);
		free(f->prefix);
		free(f);
		if (write(fin_efd, &one, sizeof(one)) < 0)
			(void) 0;			/* the counter cannot overflow here */
	}
}

bool
output_start(char *errbuf, size_t errlen)
{
	fin_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fin_efd < 0)
		return snprintf(errbuf, errlen, "eventfd: %s", strerror(errno)), false;
	if (pthread_create(&fin_thread, NULL, finisher_main, NULL) != 0)
		return snprintf(errbuf, errlen, "cannot start the finisher thread"), false;
	return true;
}

void
output_drain(void)
{
	pthread_mutex_lock(&fin_lock);
	while (fin_head != NULL)
		pthread_cond_wait(&fin_done_cond, &fin_lock);
	pthread_mutex_unlock(&fin_lock);
}

void
output_stop(void)
{
	pthread_mutex_lock(&fin_lock);
	fin_stop = true;
	pthread_cond_signal(&fin_cond);
	pthread_mutex_unlock(&fin_lock);
	pthread_join(fin_thread, NULL);
}

/* Lowest WAL position an unfinished file needs; UINT64_MAX when none */
uint64_t
output_low_water(void)
{
	uint64_t	low = UINT64_MAX;

	for (int i = 0; i < g_cfg->n_routes; i++)
		if (g_cfg->routes[i].file && g_cfg->routes[i].file->first.lsn < low)
			low = g_cfg->routes[i].file->first.lsn;
	pthread_mutex_lock(&fin_lock);
	for (OutFile *f = fin_head; f; f = f->next)
		if (!f->writeback_only && f->first.lsn < low)
			low = f->first.lsn;
	pthread_mutex_unlock(&fin_lock);
	return low;
}

int
output_pending(void)
{
	int			n;

	pthread_mutex_lock(&fin_lock);
	n = fin_pending;
	pthread_mutex_unlock(&fin_lock);
	return n;
}

int
output_eventfd(void)
{
	return fin_efd;
}

bool
output_failed(void)
{
	return atomic_load(&failed);
}

/*
 * Removes ".fluent2arrow-PID-SEQ.tmp" files in dir whose process PID no
 * longer runs (left by a crash or SIGKILL; their events are replayed from
 * the spool).
 */
void
output_remove_stale(const char *dir)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL)
	{
		int			pid;
		unsigned long long seq;
		char		tail[8];

		if (sscanf(de->d_name, ".fluent2arrow-%d-%llu%7s", &pid, &seq, tail) == 3 &&
			strcmp(tail, ".tmp") == 0 && pid != getpid() &&
			kill(pid, 0) != 0 && errno == ESRCH)
		{
			char	   *path = xasprintf("%s/%s", dir, de->d_name);

			if (unlink(path) == 0)
				logmsg("removed \"%s\", left behind by process %d", path, pid);
			free(path);
		}
	}
	closedir(d);
}
