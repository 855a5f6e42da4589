/*-------------------------------------------------------------------------
 *
 * share.c
 *		The shared runs of parallel queries (xpu/protocol.h,
 *		WARP_MSG_SHARE_OPEN): a registry of runs by their id, each holding
 *		the groups its parts left until the finish takes them.
 *
 * Life.  The leader's SHARE_OPEN creates the run (server.c keeps it with
 * that connection); every AGG_RUN or HEAP_RUN naming it attaches (agg.c),
 * and whoever detaches last frees it with the groups still in it: a query
 * that ends early (an error, a cancel) leaves nothing behind.  Because the
 * leader's connection outlives its workers' runs, the groups of a part
 * stay until the finish, whenever the part ended.
 *
 * Threads.  The epoll thread opens, attaches (agg_task_start) and
 * detaches; the runs' threads deposit and take.  One mutex guards the
 * registry and every run's parts: deposits and takes are a few pointer
 * moves.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service.h"
#include "service/share.h"

struct SvcShare
{
	uint64_t	id;
	uint32_t	participants;	/* the processes that take part, at most */
	int			refs;			/* the opener's connection and the runs attached */
	uint8_t    *spec;			/* the first part's spec bytes, or NULL */
	size_t		spec_len;
	XpuAggTable **parts;		/* the groups left so far */
	uint32_t	n_parts;
	uint32_t	cap;
	uint32_t   *matched;		/* the matched flags of a RIGHT/FULL depth */
	uint64_t	matched_words;
	SvcShare   *next;
};

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static SvcShare *shares;

/* the run of id in the registry, or NULL (share_lock held) */
static SvcShare *
find(uint64_t id)
{
	for (SvcShare *s = shares; s != NULL; s = s->next)
		if (s->id == id)
			return s;
	return NULL;
}

/*
 * svc_share_open: a new shared run of id for at most participants
 * processes, with one reference (the opener's); NULL with msg set when id
 * is 0 or in use, or memory runs out
 */
SvcShare *
svc_share_open(uint64_t id, uint32_t participants, char *msg, size_t msglen)
{
	SvcShare   *s;

	if (id == 0 || participants == 0)
		return snprintf(msg, msglen, "a shared run needs an id and participants"), NULL;
	if ((s = calloc(1, sizeof(SvcShare))) == NULL)
		return snprintf(msg, msglen, "out of memory"), NULL;
	s->id = id;
	s->participants = participants;
	s->refs = 1;
	pthread_mutex_lock(&share_lock);
	if (find(id) != NULL)
	{
		pthread_mutex_unlock(&share_lock);
		free(s);
		return snprintf(msg, msglen, "shared run %016llx is open already",
						(unsigned long long) id), NULL;
	}
	s->next = shares;
	shares = s;
	pthread_mutex_unlock(&share_lock);
	return s;
}

/* svc_share_attach: a new reference to the run of id, or NULL if there is none */
SvcShare *
svc_share_attach(uint64_t id)
{
	SvcShare   *s;

	pthread_mutex_lock(&share_lock);
	if ((s = find(id)) != NULL)
		s->refs++;
	pthread_mutex_unlock(&share_lock);
	return s;
}

/* svc_share_detach: drops a reference; the last frees the run and its groups */
void
svc_share_detach(SvcShare *s)
{
	bool		last;

	if (s == NULL)
		return;
	pthread_mutex_lock(&share_lock);
	last = --s->refs == 0;
	if (last)
		for (SvcShare **p = &shares; *p != NULL; p = &(*p)->next)
			if (*p == s)
			{
				*p = s->next;
				break;
			}
	pthread_mutex_unlock(&share_lock);
	if (!last)
		return;
	for (uint32_t i = 0; i < s->n_parts; i++)
		xpu_agg_table_free(s->parts[i]);
	free(s->parts);
	free(s->spec);
	free(s->matched);
	free(s);
}

/*
 * svc_share_matched: the run's matched flags of its RIGHT/FULL OUTER depth
 * (xpu_join.h), words of them, zeroed by the first part or finish that
 * asks: every part of the query marks the same flags, the finish emits
 * the rows none marked.  NULL with msg set when memory runs out or
 * another part asked for another size (another inner table).
 */
uint32_t *
svc_share_matched(SvcShare *s, uint64_t words, char *msg, size_t msglen)
{
	uint32_t   *m;

	pthread_mutex_lock(&share_lock);
	if (s->matched == NULL && (s->matched = calloc(words ? words : 1, sizeof(uint32_t))) != NULL)
		s->matched_words = words;
	m = s->matched;
	pthread_mutex_unlock(&share_lock);
	if (m == NULL)
		return snprintf(msg, msglen, "out of memory"), NULL;
	if (s->matched_words != words)
		return snprintf(msg, msglen, "a part of shared run %016llx probes another inner table",
						(unsigned long long) s->id), NULL;
	return m;
}

/*
 * svc_share_threads: the CPU threads of one part of s, of a run that would
 * have threads: the service's threads shared among the participants (at
 * least one), so that the parts of one query together use as many as one
 * run would; each thread's table holds every group it meets, so more
 * threads than cores only add tables to merge
 */
uint32_t
svc_share_threads(const SvcShare *s, uint32_t threads)
{
	uint32_t	n = threads / (s->participants ? s->participants : 1);

	return n > 0 ? n : 1;
}

/*
 * same_spec: does spec equal the run's (the first one seen becomes the
 * run's); false with msg set ("out of memory", or that what names the run
 * with other keys or aggregates); share_lock held
 */
static bool
same_spec(SvcShare *s, const SvcShareSpec *spec, const char *what, char *msg, size_t msglen)
{
	if (s->spec == NULL)
	{
		if ((s->spec = malloc(spec->len ? spec->len : 1)) == NULL)
			return snprintf(msg, msglen, "out of memory"), false;
		memcpy(s->spec, spec->bytes, spec->len);
		s->spec_len = spec->len;
		return true;
	}
	if (s->spec_len == spec->len && memcmp(s->spec, spec->bytes, spec->len) == 0)
		return true;
	return snprintf(msg, msglen, "%s of shared run %016llx groups other keys or aggregates",
					what, (unsigned long long) s->id), false;
}

/*
 * svc_share_deposit: leaves n tables of groups of spec in s, which then
 * owns them; false with msg set (the tables still the caller's) when spec
 * is not the run's or memory runs out
 */
bool
svc_share_deposit(SvcShare *s, const SvcShareSpec *spec, XpuAggTable **tables, uint32_t n,
				  char *msg, size_t msglen)
{
	bool		ok;

	pthread_mutex_lock(&share_lock);
	ok = same_spec(s, spec, "a part", msg, msglen);
	if (ok && s->n_parts + n > s->cap)
	{
		uint32_t	cap = (s->n_parts + n) * 2;
		XpuAggTable **parts = realloc(s->parts, sizeof(XpuAggTable *) * cap);

		if (!(ok = parts != NULL))
			snprintf(msg, msglen, "out of memory");
		else
			s->parts = parts, s->cap = cap;
	}
	for (uint32_t i = 0; ok && i < n; i++)
		s->parts[s->n_parts++] = tables[i];
	pthread_mutex_unlock(&share_lock);
	return ok;
}

/*
 * svc_share_take: the tables of groups left in s so far (*tables, *n: the
 * caller's now, *tables NULL when none), which must be of spec; false with
 * msg set when spec is not the run's
 */
bool
svc_share_take(SvcShare *s, const SvcShareSpec *spec, XpuAggTable ***tables, uint32_t *n,
			   char *msg, size_t msglen)
{
	bool		ok;

	pthread_mutex_lock(&share_lock);
	if ((ok = s->n_parts == 0 || same_spec(s, spec, "the finish", msg, msglen)))
	{
		*tables = s->parts;
		*n = s->n_parts;
		s->parts = NULL;
		s->n_parts = s->cap = 0;
	}
	pthread_mutex_unlock(&share_lock);
	return ok;
}

/* svc_share_memory: bytes of the groups left in every shared run (STATUS) */
uint64_t
svc_share_memory(void)
{
	uint64_t	n = 0;

	pthread_mutex_lock(&share_lock);
	for (SvcShare *s = shares; s != NULL; s = s->next)
		for (uint32_t i = 0; i < s->n_parts; i++)
			n += xpu_agg_table_memory(s->parts[i]);
	pthread_mutex_unlock(&share_lock);
	return n;
}
