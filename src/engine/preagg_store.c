/*-------------------------------------------------------------------------
 *
 * preagg_store.c
 *		The groups of a GpuPreAgg run between the service and the plan above:
 *		the service's AGG_RESULT messages, kept in memory up to the limit a
 *		HashAggregate has (work_mem * hash_mem_multiplier) and spilled to a
 *		temporary file past it, then read back in order, as often as the
 *		node is rescanned.
 *
 * A run's groups are only exact once its last message says so (protocol.h:
 * an error or FALLBACK voids them), so they are all received before the
 * first one is returned; the store keeps the backend's memory for them
 * within PostgreSQL's own limit whatever their number, as HashAggregate's
 * spill does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "engine/gpu_preagg.h"

struct GpaStore
{
	List	   *msgs;			/* the messages kept in memory (char *) */
	List	   *lens;			/* their lengths */
	Size		mem_used;		/* bytes of msgs */
	Size		mem_limit;
	BufFile    *file;			/* the messages past the limit, or NULL */
	uint64		n_file;			/* how many */
	uint64		file_bytes;
	/* reading */
	int			next_mem;		/* index of the next message in msgs */
	uint64		next_file;		/* index of the next message in the file */
	char	   *buf;			/* the message last read from the file */
	uint32		buf_cap;
};

/* reads exactly n bytes of the store's file into p */
static void
read_exact(GpaStore *s, void *p, size_t n)
{
	if (BufFileRead(s->file, p, n) != n)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read GpuPreAgg's temporary file: %m")));
}

/* gpa_store_create: an empty store in the current memory context */
GpaStore *
gpa_store_create(void)
{
	GpaStore   *s = palloc0(sizeof(GpaStore));

	s->mem_limit = get_hash_memory_limit();
	return s;
}

/*
 * gpa_store_add: appends message msg of len bytes (palloc'ed, which the
 * store owns from now on: it frees it once written to its file)
 */
void
gpa_store_add(GpaStore *s, char *msg, uint32 len)
{
	if (s->file == NULL && (s->mem_used + len <= s->mem_limit || s->msgs == NIL))
	{
		s->msgs = lappend(s->msgs, msg);
		s->lens = lappend_int(s->lens, (int) len);
		s->mem_used += len;
		return;
	}
	if (s->file == NULL)
		s->file = BufFileCreateTemp(false);
	BufFileWrite(s->file, &len, sizeof(len));
	BufFileWrite(s->file, msg, len);
	s->n_file++;
	s->file_bytes += sizeof(len) + len;
	pfree(msg);
}

/* gpa_store_rewind: the next gpa_store_next returns the first message */
void
gpa_store_rewind(GpaStore *s)
{
	s->next_mem = 0;
	s->next_file = 0;
	if (s->file != NULL && BufFileSeek(s->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not rewind GpuPreAgg's temporary file: %m")));
}

/*
 * gpa_store_next: the next message and its length, or NULL after the last;
 * the message stays valid until the next call
 */
const char *
gpa_store_next(GpaStore *s, uint32 *len)
{
	uint32		n;

	if (s->next_mem < list_length(s->msgs))
	{
		*len = (uint32) list_nth_int(s->lens, s->next_mem);
		return list_nth(s->msgs, s->next_mem++);
	}
	if (s->next_file >= s->n_file)
		return NULL;
	read_exact(s, &n, sizeof(n));
	if (n > s->buf_cap)
	{
		if (s->buf != NULL)
			pfree(s->buf);
		s->buf = MemoryContextAlloc(GetMemoryChunkContext(s), n);
		s->buf_cap = n;
	}
	read_exact(s, s->buf, n);
	s->next_file++;
	*len = n;
	return s->buf;
}

/* gpa_store_reset: drops every message (a new run fills the store again) */
void
gpa_store_reset(GpaStore *s)
{
	list_free_deep(s->msgs);
	list_free(s->lens);
	s->msgs = s->lens = NIL;
	s->mem_used = 0;
	if (s->file != NULL)
		BufFileClose(s->file);
	s->file = NULL;
	s->n_file = s->file_bytes = 0;
	s->next_mem = 0;
	s->next_file = 0;
}

/* gpa_store_spilled: the bytes written to the temporary file */
uint64
gpa_store_spilled(const GpaStore *s)
{
	return s->file_bytes;
}
