/*-------------------------------------------------------------------------
 *
 * shm_chunk.c
 *		The backend's side of a heap run's chunk ring: a memfd of a few
 *		chunks of heap pages, mapped here and passed once to the warp
 *		service with the HEAP_RUN request (SCM_RIGHTS); then the pages of
 *		the table go through it chunk by chunk, the socket carrying only
 *		"chunk i ready" (HEAP_CHUNK) and "chunk i done" (HEAP_DONE).
 *
 * The memfd is sealed against shrinking (the service, which maps it, can
 * then never fault on a page that vanished) and its memory is allocated at
 * once (posix_fallocate), so that a lack of memory is a clean fallback to
 * PostgreSQL's own plan rather than a SIGBUS.  The mapping and the
 * descriptor belong to the query: a memory context callback releases them
 * on every path, errors included.  The service keeps its own mapping, so
 * the backend may release the ring as soon as every chunk is shipped.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "engine/heap_source.h"

typedef struct ShmRing
{
	int			fd;
	char	   *base;
	size_t		size;
} ShmRing;

/* releases the ring (a memory context callback, and at the end of shipping) */
static void
shm_ring_release(void *arg)
{
	ShmRing    *r = arg;

	if (r->base != NULL)
		munmap(r->base, r->size);
	r->base = NULL;
	if (r->fd >= 0)
	{
		close(r->fd);
		ReleaseExternalFD();
	}
	r->fd = -1;
}

/*
 * shm_ring_create: the ring of h (n_slots * slot_size bytes) in a new
 * sealed memfd, mapped read-write; NULL with *why set when the memfd
 * cannot be made (no descriptor, no memory, a file size limit)
 */
static ShmRing *
shm_ring_create(HeapAggRun *h, const char **why)
{
	ShmRing    *r = MemoryContextAllocZero(CurrentMemoryContext, sizeof(ShmRing));
	MemoryContextCallback *cb = palloc0(sizeof(MemoryContextCallback));
	int			rc;

	r->fd = -1;
	r->size = (size_t) h->n_slots * h->slot_size;
	cb->func = shm_ring_release;
	cb->arg = r;
	MemoryContextRegisterResetCallback(CurrentMemoryContext, cb);
	if (!AcquireExternalFD())
	{
		*why = "no file descriptor is left for the shared memory ring";
		return NULL;
	}
	r->fd = memfd_create("pg_warp heap ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0)
	{
		ReleaseExternalFD();
		*why = psprintf("could not create the shared memory ring: %m");
		return NULL;
	}
	if (ftruncate(r->fd, (off_t) r->size) != 0)
		rc = errno;
	else
		rc = posix_fallocate(r->fd, 0, (off_t) r->size);
	if (rc == 0 && fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		rc = errno;
	if (rc == 0 &&
		(r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0)) ==
		MAP_FAILED)
		rc = errno;
	if (rc != 0)
	{
		r->base = NULL;
		errno = rc;
		*why = psprintf("could not allocate the shared memory ring of %zu bytes: %m", r->size);
		shm_ring_release(r);
		return NULL;
	}
	return r;
}

/* waits for the next message of the run that is not a stale HEAP_DONE */
static void *
next_message(int conn, uint32 *type, uint32 *len)
{
	void	   *msg = service_run_next_any(conn, type, len);

	if (*type != WARP_MSG_HEAP_DONE && *type != WARP_MSG_AGG_RESULT)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("Received message type %u of %u bytes during a heap run.",
						   *type, *len)));
	if (*type == WARP_MSG_HEAP_DONE && *len != sizeof(WarpHeapChunk))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("HEAP_DONE of %u bytes.", *len)));
	return msg;
}

/*
 * ship: fills the free chunks with pages and sends them until the run's
 * claims are read (heap_agg_read_pages); a unit the service may hold in its
 * GPU cache goes as a probe (heap_agg_probe_unit) and, if it is not served,
 * is read and shipped once its HEAP_DONE says so.  False when the run ended
 * early (its AGG_RESULT is pending).
 */
static bool
ship(HeapAggRun *h, ShmRing *r, int conn)
{
	uint32		free_slots[64];
	uint32		n_free = 0;
	List	   *missed = NIL;	/* probed units the service did not serve */
	uint32		probes_out = 0;
	bool		read_done = false;

	for (uint32 i = 0; i < h->n_slots; i++)
		free_slots[n_free++] = h->n_slots - 1 - i;
	for (;;)
	{
		uint32		type,
					len;
		void	   *msg;
		WarpHeapChunk done;
		instr_time	start,
					end;

		if (n_free > 0 && (missed != NIL || !read_done))
		{
			uint32		slot = free_slots[--n_free];
			char	   *base = r->base + (size_t) slot * h->slot_size;
			uint8	   *vis = (uint8 *) base + (size_t) h->slot_pages * BLCKSZ;
			WarpHeapChunk ch = {slot, 0, 0, 0, 0};

			if (missed != NIL)
			{
				bool		whole;

				ch.unit = linitial_oid(missed);
				missed = list_delete_first(missed);
				ch.n_pages = heap_agg_read_unit(h, ch.unit, base, vis, &whole, &ch.read_start_us);
				ch.flags = whole ? WARP_CHUNK_UNIT : 0;
			}
			else if (heap_agg_probe_unit(h, &ch.unit))
			{
				ch.flags = WARP_CHUNK_PROBE;
				probes_out++;
			}
			else if ((ch.n_pages = heap_agg_read_pages(h, base, vis, NULL, (int) h->slot_pages)) == 0)
				read_done = true;	/* nothing left to claim */
			if (ch.n_pages == 0 && ch.flags != WARP_CHUNK_PROBE)
			{
				free_slots[n_free++] = slot;	/* no visible tuple in it */
				continue;
			}
			service_run_send(conn, WARP_MSG_HEAP_CHUNK, &ch, sizeof(ch));
			if (ch.n_pages > 0)
				h->chunks++;
			continue;
		}
		if (read_done && missed == NIL && probes_out == 0)
			return true;		/* the table is read */
		INSTR_TIME_SET_CURRENT(start);
		msg = next_message(conn, &type, &len);
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_ACCUM_DIFF(h->wait_time, end, start);
		if (type == WARP_MSG_AGG_RESULT)
		{
			/* the run ended before the table did (a FALLBACK or an error) */
			h->pending = lappend(h->pending, msg);
			h->pending_len = lappend_int(h->pending_len, (int) len);
			return false;
		}
		memcpy(&done, msg, sizeof(done));
		pfree(msg);
		if (done.slot >= h->n_slots || (done.flags & WARP_CHUNK_PROBE && probes_out == 0))
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("pg_warp service returned a chunk it was not given")));
		free_slots[n_free++] = done.slot;
		if (done.flags & WARP_CHUNK_PROBE)
		{
			probes_out--;
			if ((done.flags & (WARP_CHUNK_SERVED | WARP_CHUNK_READ)) ==
				(WARP_CHUNK_SERVED | WARP_CHUNK_READ))
				h->units_read++;
			else if (done.flags & WARP_CHUNK_SERVED)
				h->units_served++;
			else
				missed = lappend_oid(missed, done.unit);
			if (done.flags & WARP_CHUNK_NO_CACHE)
				h->probe = -1;	/* this run's service keeps no units */
		}
	}
}

/*
 * heap_agg_begin: starts the heap run of h with the HEAP_RUN request req
 * (len bytes, heap_agg_put_request's part included) under snapshot snap,
 * ships every chunk and says HEAP_END.  *conn is the connection from the
 * moment it exists (the caller closes it on every path).  Returns false,
 * with *why set and nothing sent, when the ring cannot be created: the
 * caller then runs PostgreSQL's plan.
 */
bool
heap_agg_begin(HeapAggRun *h, Snapshot snap, const char *req, uint32 len, int *conn,
			   const char **why)
{
	ShmRing    *r = shm_ring_create(h, why);

	if (r == NULL)
		return false;
	h->ring = r;
	h->snap = snap;
	h->strategy = GetAccessStrategy(BAS_BULKREAD);
	*conn = service_run_begin_fd(WARP_MSG_HEAP_RUN, req, len, r->fd);
	if (ship(h, r, *conn))
		service_run_send(*conn, WARP_MSG_HEAP_END, NULL, 0);
	heap_agg_read_end(h);
	shm_ring_release(r);
	return true;
}

/*
 * heap_agg_next: the next AGG_RESULT payload of the heap run on conn
 * (palloc'ed, *len bytes): one that came while shipping first, then the
 * replies, skipping the HEAP_DONE of the last chunks
 */
void *
heap_agg_next(HeapAggRun *h, int conn, uint32 *len)
{
	for (;;)
	{
		uint32		type;
		void	   *msg;

		if (h->pending != NIL)
		{
			msg = linitial(h->pending);
			*len = (uint32) linitial_int(h->pending_len);
			h->pending = list_delete_first(h->pending);
			h->pending_len = list_delete_first(h->pending_len);
			return msg;
		}
		msg = next_message(conn, &type, len);
		if (type == WARP_MSG_AGG_RESULT)
			return msg;
		pfree(msg);
	}
}

/* ---------------- GpuScan over heap tables ---------------- */

/*
 * heap_scan_begin: starts the heap GpuScan run of h (h->scan) with the
 * HEAP_RUN request req under snapshot snap; nothing is shipped yet
 * (heap_scan_next ships as the chunks come back).  When the ring cannot
 * be created the run is the backend's alone (*conn -1): heap_scan_next
 * reads one chunk at a time into local memory and returns it to be
 * filtered by PostgreSQL.
 */
void
heap_scan_begin(HeapAggRun *h, Snapshot snap, const char *req, uint32 len, int *conn)
{
	const char *why = NULL;
	ShmRing    *r = shm_ring_create(h, &why);

	h->snap = snap;
	h->strategy = GetAccessStrategy(BAS_BULKREAD);
	h->blocks = palloc(sizeof(BlockNumber) * h->n_slots * h->slot_pages);
	h->free_slots = palloc(sizeof(uint32) * h->n_slots);
	h->shipped = palloc(sizeof(uint32) * h->n_slots);
	h->early = palloc0(sizeof(char *) * h->n_slots);
	h->early_len = palloc0(sizeof(uint32) * h->n_slots);
	h->n_free = h->n_out = h->ship_head = h->n_shipped = 0;
	h->cur_slot = -1;
	h->cur_msg = NULL;
	h->read_done = false;
	h->ring = r;
	if (r == NULL)
	{
		ereport(DEBUG1,
				(errmsg("GpuScan of \"%s\" filters in the backend: %s",
						RelationGetRelationName(h->rel), why)));
		h->local = palloc(h->slot_size);
		*conn = -1;
		return;
	}
	for (uint32 i = 0; i < h->n_slots; i++)
		h->free_slots[h->n_free++] = h->n_slots - 1 - i;
	*conn = service_run_begin_fd(WARP_MSG_HEAP_RUN, req, len, r->fd);
}

/* the end of the reading: what it holds released */
static void
scan_read_end(HeapAggRun *h)
{
	h->read_done = true;
	heap_agg_read_end(h);
}

/*
 * scan_next_reply: the service's next reply of the heap GpuScan run of h,
 * with the chunks' HEAP_DONEs in the order the chunks were shipped (block
 * order), so that PostgreSQL's rechecks meet the rows, and their errors,
 * in the order of its own scan; a chunk's reply that comes back before its
 * turn (the service's threads finish out of order) is kept until then.
 * Checks every HEAP_DONE against the chunks shipped.
 */
static char *
scan_next_reply(HeapAggRun *h, int conn, uint32 *type, uint32 *len)
{
	for (;;)
	{
		uint32		want = h->shipped[h->ship_head];
		char	   *msg;
		WarpHeapPass ph;
		instr_time	start,
					end;

		if (h->n_shipped > 0 && h->early[want] != NULL)
		{
			msg = h->early[want];
			*len = h->early_len[want];
			*type = WARP_MSG_HEAP_DONE;
			h->early[want] = NULL;
			h->ship_head = (h->ship_head + 1) % h->n_slots;
			h->n_shipped--;
			return msg;
		}
		INSTR_TIME_SET_CURRENT(start);
		msg = service_run_next_any(conn, type, len);
		INSTR_TIME_SET_CURRENT(end);
		INSTR_TIME_ACCUM_DIFF(h->wait_time, end, start);
		if (*type != WARP_MSG_HEAP_DONE || *len < sizeof(ph))
			return msg;			/* the caller checks it */
		memcpy(&ph, msg, sizeof(ph));
		if (ph.slot >= h->n_slots || ph.n_pages == 0 || ph.n_pages > h->slot_pages ||
			*len != sizeof(ph) + (uint64) ph.n_pages * XPU_HEAP_VIS_BYTES || h->n_out == 0 ||
			h->n_shipped == 0 || h->early[ph.slot] != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("pg_warp service returned a heap chunk it was not given")));
		h->n_out--;
		h->early[ph.slot] = msg;
		h->early_len[ph.slot] = *len;
	}
}

/*
 * heap_scan_next: the next filtered chunk of the heap GpuScan run of h into
 * *out, valid until the next call (which gives its slot back to the ring);
 * false at the end, with the run's last AGG_RESULT header in *last (zeroed
 * for a run in the backend).  Fills and ships the free slots first, so
 * that the service filters ahead of the tuples returned.
 */
bool
heap_scan_next(HeapAggRun *h, int conn, HeapScanChunk *out, WarpAggResult *last)
{
	ShmRing    *r = h->ring;
	uint32		type,
				len;
	char	   *msg;
	WarpHeapPass ph;

	if (h->cur_slot >= 0)
		h->free_slots[h->n_free++] = (uint32) h->cur_slot;
	h->cur_slot = -1;
	if (h->cur_msg)
		pfree(h->cur_msg);
	h->cur_msg = NULL;
	memset(out, 0, sizeof(*out));
	if (r == NULL)
	{
		/* no ring: the backend reads and PostgreSQL filters, chunk by chunk */
		char	   *vis = h->local + (size_t) h->slot_pages * BLCKSZ;

		out->n_pages = h->read_done ? 0 :
			(uint32) heap_agg_read_pages(h, h->local, (uint8 *) vis, h->blocks,
										 (int) h->slot_pages);
		if (out->n_pages == 0)
		{
			scan_read_end(h);
			memset(last, 0, sizeof(*last));
			return false;
		}
		h->chunks++;
		out->pages = h->local;
		out->blocks = h->blocks;
		out->pass = (const uint8 *) vis;
		out->vis = (const uint8 *) vis;
		out->recheck = true;
		return true;
	}
	while (!h->read_done && h->n_free > 0)
	{
		uint32		slot = h->free_slots[--h->n_free];
		char	   *base = r->base + (size_t) slot * h->slot_size;
		WarpHeapChunk ch = {slot, 0};

		ch.n_pages = heap_agg_read_pages(h, base, (uint8 *) base + (size_t) h->slot_pages * BLCKSZ,
										 h->blocks + (size_t) slot * h->slot_pages,
										 (int) h->slot_pages);
		if (ch.n_pages == 0)
		{
			h->free_slots[h->n_free++] = slot;
			scan_read_end(h);
			service_run_send(conn, WARP_MSG_HEAP_END, NULL, 0);
			break;
		}
		service_run_send(conn, WARP_MSG_HEAP_CHUNK, &ch, sizeof(ch));
		h->shipped[(h->ship_head + h->n_shipped++) % h->n_slots] = slot;
		h->chunks++;
		h->n_out++;
	}
	msg = scan_next_reply(h, conn, &type, &len);
	if (type == WARP_MSG_AGG_RESULT && len >= sizeof(WarpAggResult))
	{
		memcpy(last, msg, sizeof(*last));
		last->err_message[sizeof(last->err_message) - 1] = '\0';
		if (h->n_out > 0 || h->n_shipped > 0 || !h->read_done ||
			!(last->flags & WARP_AGG_LAST) ||
			last->n_groups != 0 || last->status != XPU_OK)
			ereport(ERROR,
					(errcode(ERRCODE_INTERNAL_ERROR),
					 errmsg("pg_warp service ended a heap scan early"),
					 errdetail("Status %d: %s", last->status, last->err_message)));
		pfree(msg);
		return false;
	}
	if (type != WARP_MSG_HEAP_DONE || len < sizeof(ph))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("Received message type %u of %u bytes during a heap scan.",
						   type, len)));
	memcpy(&ph, msg, sizeof(ph));
	h->cur_slot = (int) ph.slot;
	h->cur_msg = msg;
	out->pages = r->base + (size_t) ph.slot * h->slot_size;
	out->blocks = h->blocks + (size_t) ph.slot * h->slot_pages;
	out->pass = (const uint8 *) msg + sizeof(ph);
	out->vis = (const uint8 *) out->pages + (size_t) h->slot_pages * BLCKSZ;
	out->n_pages = ph.n_pages;
	out->n_passed = ph.n_passed;
	out->recheck = (ph.flags & WARP_SCAN_RECHECK) != 0;
	return true;
}

/*
 * heap_scan_end: releases what the heap GpuScan run of h holds (its ring,
 * at once rather than at the end of the query: a rescan starts a new one)
 */
void
heap_scan_end(HeapAggRun *h)
{
	heap_agg_read_end(h);
	if (h->ring)
		shm_ring_release(h->ring);
	h->ring = NULL;
	if (h->cur_msg)
		pfree(h->cur_msg);
	h->cur_msg = NULL;
	h->cur_slot = -1;
	for (uint32 i = 0; h->early != NULL && i < h->n_slots; i++)
		if (h->early[i] != NULL)
			pfree(h->early[i]);
	h->early = NULL;
	h->n_shipped = 0;
}
