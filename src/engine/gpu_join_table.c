/*-------------------------------------------------------------------------
 *
 * gpu_join_table.c
 *		A GpuJoin depth's inner table made and loaded into the service
 *		(gj_load), and the tables of a group's depths made at once
 *		(gj_tables_make).
 *
 * A table goes through three steps.  gj_table_begin (the backend's work:
 * the inner plan run, or a parallel build's images taken, and whether the
 * relation may be kept) gives a builder with the rows; gj_table_make lays
 * the table out and writes it into a fresh memfd, mapped populated so that
 * its pages are not faulted in one by one, and written where it is not 0
 * (xpu_join_builder_write_zeroed: the memfd's pages are 0); gj_table_end
 * seals the memfd and loads it into the service.
 *
 * gj_table_make touches no PostgreSQL state: the builder (malloc's), the
 * images it reads where they lie in the query's DSA (mapped by the
 * backend before), the memfd.  So when a group's scans have run
 * (gpu_join_build.c) and several of its depths are to be built, their
 * tables are made at once, one in the backend and each other in a thread
 * of its own, with every signal blocked so that PostgreSQL's handlers
 * stay the backend's; the backend joins them before it reports anything
 * and loads the tables in the depths' order (gj_exec_load).  On the GPU
 * host that serial part of SSB Q4.1 (customer's table, then part's) took
 * 13-19 and 20-27 ms one after the other ("Where a build's time goes",
 * bench/results/README.md).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include "access/table.h"
#include "commands/explain.h"
#include "portability/instr_time.h"

#include "engine/engine.h"
#include "engine/gpu_join.h"

/* one depth's table on its way (gj_table_begin, _make, _end) */
typedef struct GjTable
{
	GjInner    *g;
	int			d;
	GjFind		local;			/* f when the depth had found nothing before */
	GjFind	   *f;
	XpuJoinBuilder *b;			/* the rows, until gj_table_end */
	bool		keep;			/* the service keeps the table (gpu_join_cache.c) */
	/* gj_table_make's: the table in fd (len bytes), or why not */
	uint64		len;
	int			fd;
	XpuError	err;			/* len 0: the layout's refusal */
	int			sys_errno;		/* fd < 0, len > 0: the memfd's failure */
	instr_time	start;
	instr_time	rows_read;
	instr_time	made;
} GjTable;

/* the tables of a group's depths made at once (gj_tables_make) */
struct GjTables
{
	int			n;
	GjTable    *t;
	int			failed_d;		/* the depth whose rows could not be taken, or -1 */
	const char *why;			/* and why */
};

/*
 * gj_read_rows: the rows of depth g's inner plan into builder b of spec gs;
 * false (why) where the engine cannot take them.  b's memory is malloc's:
 * freed here when the inner plan raises.
 */
static bool
gj_read_rows(GjInner *g, const GjSpec *gs, XpuJoinBuilder *b, const char **why)
{
	bool		ok = false;

	PG_TRY();
	{
		/* a parallel build's participants add the rows they read (gpu_join_build.c) */
		if (g->group != NULL)
			ok = gj_build_take(g->ps, b, &g->rows, why);
		else if (gj_build_node(g->ps) != NULL)
			ok = gj_build_run(g->ps, gs, b, &g->rows, why);
		else
			ok = gj_add_rows(gj_next_exec, g->ps, gs, b, &g->rows, why);
	}
	PG_CATCH();
	{
		xpu_join_builder_free(b);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return ok;
}

/*
 * gj_release_rows: what a parallel build of depth g attached to its
 * builder in place (gj_build_take), let go once the table is written or
 * the builder freed
 */
static void
gj_release_rows(GjInner *g)
{
	PlanState  *node = g->group != NULL ? g->ps : gj_build_node(g->ps);

	if (node != NULL)
		gj_build_release(node);
}

/*
 * gj_table_begin: depth g's rows into t's builder; 1 then, 0 where the
 * service kept the table (g takes it), -1 where the engine cannot take the
 * rows (why).  before (NULL: none) is called before the rows are read, if
 * the inner plan costs enough.  A depth of a group was found missing when
 * the group ran (g->find).
 */
static int
gj_table_begin(GjTable *t, GjInner *g, int d, const XpuProgram *prog, GjBuildStart *before,
			   const char **why)
{
	XpuError	err = {0};

	memset(t, 0, sizeof(*t));
	t->g = g;
	t->d = d;
	t->fd = -1;
	t->f = g->find != NULL ? g->find : &t->local;
	INSTR_TIME_SET_CURRENT(t->start);
	g->rows = 0;
	g->from_cache = false;
	g->find = NULL;
	if (t->f == &t->local && gj_find(g, d, prog, t->f))
	{
		instr_time	end;

		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_SUBTRACT(end, t->start);
		g->build_ms = INSTR_TIME_GET_MILLISEC(end);
		return 0;
	}
	if (before != NULL && !before->done && before->min_cost >= 0 &&
		g->ps->plan->total_cost >= before->min_cost)
	{
		before->done = true;
		before->fn(before->arg);
	}
	if ((t->b = xpu_join_builder_create(&t->f->gs.spec, &err)) == NULL)
	{
		*why = pstrdup(err.message);
		return -1;
	}
	if (!gj_read_rows(g, &t->f->gs, t->b, why))
	{
		xpu_join_builder_free(t->b);
		t->b = NULL;
		gj_release_rows(g);
		return -1;
	}
	INSTR_TIME_SET_CURRENT(t->rows_read);
	/* kept for later queries only if no tuple changed while the rows were read */
	if (OidIsValid(t->f->relid))
	{
		Relation	rel = table_open(t->f->relid, NoLock);
		uint8		after[WARP_JOIN_DIGEST];

		t->keep = gj_cache_version(rel, after) &&
			memcmp(after, t->f->version, sizeof(after)) == 0;
		table_close(rel, NoLock);
	}
	return 1;
}

/*
 * gj_table_make: t's table laid out and written into a fresh memfd
 * (t->fd, t->len), else t->err (the layout's refusal) or t->sys_errno.
 * No PostgreSQL call: it may run in a thread of its own (gj_tables_make).
 */
static void
gj_table_make(GjTable *t)
{
	int			fd;
	void	   *p;

	if ((t->len = xpu_join_builder_layout(t->b, &t->err)) == 0)
		return;
	fd = memfd_create("pg_warp_join", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t) t->len) != 0 ||
		(p = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) ==
		MAP_FAILED)
	{
		t->sys_errno = errno;
		if (fd >= 0)
			close(fd);
		return;
	}
	xpu_join_builder_write_zeroed(t->b, p);
	munmap(p, t->len);
	t->fd = fd;
	INSTR_TIME_SET_CURRENT(t->made);
}

/* what t holds let go (a table made and not loaded) */
static void
gj_table_discard(GjTable *t)
{
	if (t->b != NULL)
		xpu_join_builder_free(t->b);
	t->b = NULL;
	if (t->fd >= 0)
		close(t->fd);
	t->fd = -1;
}

/*
 * gj_build_times: depth g's build time (from start to end) and its parts
 * for EXPLAIN VERBOSE: the scan of its inner rows (its group's where it
 * has one, else up to rows_read), the table (its rows taken, laid out and
 * written: up to made) and its load into the service (from loading)
 */
static void
gj_build_times(GjInner *g, instr_time start, instr_time rows_read, instr_time made,
			   instr_time loading, instr_time end)
{
	double		group_ms = g->group != NULL ? g->group->ms : 0;
	instr_time	from = g->group != NULL ? start : rows_read;

	INSTR_TIME_SUBTRACT(rows_read, start);
	INSTR_TIME_SUBTRACT(made, from);
	INSTR_TIME_SUBTRACT(end, loading);
	g->scan_ms = g->group != NULL ? group_ms : INSTR_TIME_GET_MILLISEC(rows_read);
	g->table_ms = INSTR_TIME_GET_MILLISEC(made);
	g->load_ms = INSTR_TIME_GET_MILLISEC(end);
	INSTR_TIME_SET_CURRENT(end);
	INSTR_TIME_SUBTRACT(end, start);
	/* a group's scan is part of each of its tables' build */
	g->build_ms = INSTR_TIME_GET_MILLISEC(end) + group_ms;
}

/* gj_table_end: t's table (made) sealed and loaded into the service; false (why) */
static bool
gj_table_end(GjTable *t, const char **why)
{
	GjInner    *g = t->g;
	int			fd = t->fd;
	instr_time	loading,
				end;
	const uint8 *kept_key = t->keep ? t->f->key : NULL;
	const uint8 *kept_version = t->keep ? t->f->version : NULL;

	xpu_join_builder_free(t->b);
	t->b = NULL;
	gj_release_rows(g);
	if (t->len == 0)
	{
		*why = gj_build_why(&t->err);
		return false;
	}
	if (fd < 0)
	{
		errno = t->sys_errno;
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("could not make the shared memory of a GpuJoin inner table (%llu bytes): %m",
						(unsigned long long) t->len)));
	}
	t->fd = -1;					/* closed here, whatever happens */
	INSTR_TIME_SET_CURRENT(loading);
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
	{
		int			e = errno;

		close(fd);
		errno = e;
		elog(ERROR, "could not seal a GpuJoin inner table: %m");
	}
	PG_TRY();
	{
		WarpJoinLoaded loaded;

		service_join_load(fd, t->len, kept_key, kept_version, &loaded);
		g->join_id = loaded.join_id;
		g->unique = (loaded.flags & XPU_JOIN_UNIQUE) != 0;
	}
	PG_FINALLY();
	{
		close(fd);
	}
	PG_END_TRY();
	g->bytes = t->len;
	INSTR_TIME_SET_CURRENT(end);
	gj_build_times(g, t->start, t->rows_read, t->made, loading, end);
	return true;
}

/*
 * gj_load: depth d's table, written into a sealed memfd and loaded into
 * the service; false (why) where the engine cannot take it.  made (NULL:
 * none) holds it where gj_tables_make made it with its group's others.
 * before: gj_table_begin's.
 */
bool
gj_load(GjInner *g, int d, const XpuProgram *prog, GjBuildStart *before, GjTables *made,
		const char **why)
{
	GjTable		local;
	int			r;

	for (int i = 0; made != NULL && i < made->n; i++)
		if (made->t[i].d == d && made->t[i].g == g)
			return gj_table_end(&made->t[i], why);
	if (made != NULL && made->failed_d == d)
	{
		*why = made->why;
		return false;
	}
	if ((r = gj_table_begin(&local, g, d, prog, before, why)) <= 0)
		return r == 0;
	gj_table_make(&local);
	return gj_table_end(&local, why);
}

static void *
gj_table_thread(void *arg)
{
	gj_table_make(arg);
	return NULL;
}

/* is g a depth of a group (its scans run) whose table is still to be made */
static inline bool
gj_group_table_due(const GjInner *g)
{
	return g->group != NULL && g->find != NULL && g->join_id == 0;
}

/*
 * gj_tables_make: the tables of the depths of inner (n) that a group's
 * scans read for (g->find: gj_build_group_run), made at once; NULL where
 * fewer than two are.  Their rows are taken in the depths' order, up to
 * the first depth whose rows the engine cannot take (gj_load then says
 * why, as it would have).  gj_tables_discard lets go of what is not loaded.
 */
GjTables *
gj_tables_make(GjInner *inner, int n, const XpuProgram *prog, GjBuildStart *before)
{
	GjTables   *m;
	pthread_t	tid[WARP_MAX_JOINS];
	bool		started[WARP_MAX_JOINS];
	sigset_t	all,
				old;
	int			k = 0;
	int			r;

	Assert(n <= WARP_MAX_JOINS);
	for (int d = 0; d < n; d++)
		k += gj_group_table_due(&inner[d]);
	if (k < 2)
		return NULL;
	m = palloc0(sizeof(GjTables));
	m->t = palloc0(sizeof(GjTable) * k);
	m->failed_d = -1;
	PG_TRY();
	{
		for (int d = 0; d < n && m->failed_d < 0; d++)
		{
			GjInner    *g = &inner[d];

			if (!gj_group_table_due(g))
				continue;
			r = gj_table_begin(&m->t[m->n], g, d, prog, before, &m->why);
			if (r > 0)
				m->n++;
			else if (r < 0)
				m->failed_d = d;
		}
	}
	PG_CATCH();
	{
		gj_tables_discard(m);	/* the builders of the depths before */
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (m->n == 0)
		return m;
	/* one table in the backend, each other in a thread that takes no signal */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 1; i < m->n; i++)
		started[i] = pthread_create(&tid[i], NULL, gj_table_thread, &m->t[i]) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	gj_table_make(&m->t[0]);
	for (int i = 1; i < m->n; i++)
	{
		if (started[i])
			pthread_join(tid[i], NULL);
		else
			gj_table_make(&m->t[i]);
	}
	return m;
}

/* gj_tables_discard: what gj_tables_make made and gj_load did not load */
void
gj_tables_discard(GjTables *made)
{
	for (int i = 0; made != NULL && i < made->n; i++)
		gj_table_discard(&made->t[i]);
}
