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
 * the table out and writes it into a memfd whose pages are 0 and mapped
 * populated (xpu_join_builder_write_zeroed writes where it is not 0; a
 * large table by several threads, gpu_join_memfd.c); gj_table_end seals
 * the memfd and loads it into the service.
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
 * Most of making a table was the memfd's pages (gpu_join_memfd.c).  So
 * before a depth's rows are scanned, gj_table_prepare has a thread make a
 * memfd of the size the planner's rows give (GjPrepared) while the scan
 * runs; gj_table_make fits it to the table (grown, kept and shrunk, or not
 * used where it is over twice the table).  Unused, it goes when the
 * depth's table is made or refused, or at the query's end (a memory
 * context callback, which joins the thread).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "access/table.h"
#include "commands/explain.h"
#include "portability/instr_time.h"

#include "engine/engine.h"
#include "engine/gpu_join.h"
#include "engine/gpu_join_memfd.h"

/*
 * A table's memory is made ahead (gj_table_prepare) only where the
 * planner expects it to take this much: below, MAP_POPULATE costs about as
 * much as the thread
 */
#define GJ_PREPARE_MIN		((uint64) 256 << 10)
/*
 * ... and no more than this: a larger table grows into the rest, and a
 * planner that expects far more rows than come makes memory held for
 * nothing while the scan runs (256 MB of pages take about 180 ms of a
 * core at the development VM's 0.7 ms a MB)
 */
#define GJ_PREPARE_MAX		((uint64) 256 << 20)

/* a depth's table memory made while its rows are scanned */
typedef struct GjPrepared
{
	pthread_t	tid;
	bool		running;		/* tid to be joined */
	uint64		len;			/* the bytes asked (whole pages) */
	GjMemfd		mem;			/* what the thread made, fd -1: none (or taken) */
	MemoryContextCallback cb;
} GjPrepared;

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
	uint64		prepared;		/* the bytes of memory made during the scan */
	bool		prepared_used;	/* and the table written into them */
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

/* ---------------------------------------------------------------- memory made ahead */

static void *
gj_prepared_thread(void *arg)
{
	GjPrepared *m = arg;

	if (!gj_memfd_make(&m->mem, m->len))
		m->mem.fd = -1;
	return NULL;
}

/* m's thread joined: m->mem is then its memfd, if it made one (else fd -1) */
static void
gj_prepared_wait(GjPrepared *m)
{
	if (m->running)
		pthread_join(m->tid, NULL);
	m->running = false;
}

/* what m made let go (once its thread is done) */
static void
gj_prepared_free(void *arg)
{
	GjPrepared *m = arg;

	gj_prepared_wait(m);
	if (m->mem.fd >= 0)
		gj_memfd_drop(&m->mem, false);
}

/* depth g's memory made ahead, if unused, let go */
static void
gj_prepared_release(GjInner *g)
{
	if (g->prepared != NULL)
		gj_prepared_free(g->prepared);
	g->prepared = NULL;
}

/*
 * gj_table_prepare: the memory of depth g's table (of spec gs), whose
 * scan the planner expects to give rows rows, made by a thread while the
 * rows are scanned, where it would take GJ_PREPARE_MIN bytes or more.
 * Memory made for fewer rows than come costs nothing more than a fresh
 * memfd's (the rest is made after the scan, as before), for more it costs
 * its freeing (gj_memfd_fit): so the size is the least a row takes, the
 * dense form's slot, each payload column's value and NULL flag, and the
 * bytes of its texts (the plan's width less 8 for each column that is
 * not a text).
 */
void
gj_table_prepare(GjInner *g, const GjSpec *gs, double rows)
{
	const XpuJoinSpec *spec = &gs->spec;
	double		row = 4;
	double		texts = g->ps->plan->plan_width;
	double		bytes;
	uint64		limit = spec->max_bytes == 0 ? XPU_JOIN_MAX_BYTES :
		Min(spec->max_bytes, XPU_JOIN_MAX_BYTES);
	uint64		page = (uint64) sysconf(_SC_PAGESIZE);
	GjPrepared *m;
	bool		text = false;

	gj_prepared_release(g);		/* a rescan's: made for the rows before */
	for (int k = 0; k < spec->n_keys; k++)
	{
		text |= spec->keys[k].type == XPU_T_TEXT;
		texts -= spec->keys[k].type == XPU_T_TEXT ? 0 : 8;
	}
	for (int c = 0; c < spec->n_pay; c++)
	{
		row += xpu_join_pay_width(spec->pay_types[c]) + 1;
		text |= spec->pay_types[c] == XPU_T_TEXT;
		texts -= spec->pay_types[c] == XPU_T_TEXT ? 0 : 8;
	}
	if (text && texts > 0)
		row += texts;
	if (spec->n_parts > 1)
		rows /= spec->n_parts;	/* the table of one partition of the rows */
	bytes = Max(rows, 1) * row + 4096;
	bytes = Min(bytes, (double) Min(limit, GJ_PREPARE_MAX));
	if (bytes < GJ_PREPARE_MIN)
		return;
	m = MemoryContextAllocZero(g->ps->state->es_query_cxt, sizeof(GjPrepared));
	m->mem.fd = -1;
	m->len = ((uint64) bytes + page - 1) / page * page;
	m->cb.func = gj_prepared_free;
	m->cb.arg = m;
	MemoryContextRegisterResetCallback(g->ps->state->es_query_cxt, &m->cb);
	m->running = gj_thread_start(&m->tid, false, gj_prepared_thread, m);
	g->prepared = m;
}

/*
 * gj_prepared_take: depth g's memory made ahead, fitted to a table of len
 * bytes (gj_memfd_fit): true with it in *mem; false where none was made or
 * it does not fit (let go).  *made: the bytes made ahead, where any were.
 * No PostgreSQL call.
 */
static bool
gj_prepared_take(GjInner *g, uint64 len, GjMemfd *mem, uint64 *made)
{
	GjPrepared *m = g->prepared;

	if (m == NULL)
		return false;
	g->prepared = NULL;
	gj_prepared_wait(m);
	if (m->mem.fd < 0)
		return false;
	*made = m->mem.len;
	*mem = m->mem;
	m->mem.fd = -1;				/* the table's now */
	return gj_memfd_fit(mem, len);
}

/* ---------------------------------------------------------------- the steps */

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
	g->prepared_bytes = 0;
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
		gj_prepared_release(g);
		return -1;
	}
	/* a group's depth had its memory made before its group's scans */
	if (g->group == NULL)
		gj_table_prepare(g, &t->f->gs, gj_build_rows(g->ps));
	if (!gj_read_rows(g, &t->f->gs, t->b, why))
	{
		xpu_join_builder_free(t->b);
		t->b = NULL;
		gj_release_rows(g);
		gj_prepared_release(g);
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
	GjMemfd		mem;

	/* a second time where a key repeated though proven unique: the hash form, a fresh memfd */
	for (;;)
	{
		if ((t->len = xpu_join_builder_layout(t->b, &t->err)) == 0)
			return;
		t->prepared_used = gj_prepared_take(t->g, t->len, &mem, &t->prepared);
		if (!t->prepared_used && !gj_memfd_make(&mem, t->len))
		{
			t->sys_errno = errno;
			return;
		}
		gj_table_write(t->b, mem.map, t->len);
		if (xpu_join_builder_written(t->b, mem.map))
			break;
		gj_memfd_drop(&mem, true);
	}
	/* (memory made ahead for more rows than came: the rest let go) */
	if (!gj_memfd_finish(&mem, t->len))
	{
		t->sys_errno = errno;
		return;
	}
	t->fd = mem.fd;
	INSTR_TIME_SET_CURRENT(t->made);
}

/* what t holds let go (a table made and not loaded) */
static void
gj_table_discard(GjTable *t)
{
	gj_prepared_release(t->g);
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
	gj_prepared_release(g);		/* made ahead and not taken (a refused layout) */
	g->prepared_bytes = t->prepared;
	g->prepared_used = t->prepared_used;
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
	for (int i = 1; i < m->n; i++)
		started[i] = gj_thread_start(&tid[i], false, gj_table_thread, &m->t[i]);
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
