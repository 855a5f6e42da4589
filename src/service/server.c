/*-------------------------------------------------------------------------
 *
 * server.c
 *		The service's socket: listening on DATADIR/pg_warp.sock, accepting
 *		backends of the same uid, and serving their requests (protocol.h).
 *
 * One thread runs an epoll loop over the listening socket, a signalfd and
 * every connection.  Sockets are non-blocking and each connection has its
 * own input and output buffers, so a slow client (half a message sent, or
 * replies not read) or a dead one never holds up the others; a client also
 * gets at most MAX_MSGS_PER_WAKEUP requests served before the others get
 * their turn.  The loop wakes at least once a second to check that the
 * parent (the supervisor) is still alive.
 *
 * AGG_RUN (agg.c) and SCAN_RUN (scan.c) run on threads of their own (the
 * loop reaches either through its RunOps): the connection is busy meanwhile
 * (it may send only CANCEL, or close, which cancels too), and the loop goes
 * on serving the others.  The run writes to an eventfd when it
 * is done; the loop then sends its replies as the socket takes them
 * (conn_pump), a message at a time, so that its output never holds more
 * than about PUMP_LOW bytes plus one message.  A run whose connection
 * closed is canceled and freed once its thread ends (orphans).
 *
 * JOIN_LOAD comes with a memfd too: the table is registered (join_store.c),
 * owned by the connection, whose close drops its ids.
 *
 * HEAP_RUN comes with a memfd (SCM_RIGHTS, kept by conn_recv); while it
 * runs, its HEAP_CHUNK and HEAP_END messages go to heap_chunk.c, and the
 * HEAP_DONE of each chunk goes out when the run's eventfd fires.
 *
 * Admission: at most svc_max_async_tasks runs execute at once (orphans
 * count until their threads end).  A later run (AGG_RUN, HEAP_RUN,
 * SCAN_RUN) waits in a FIFO queue, its request kept (with a HEAP_RUN's memfd
 * and the HEAP_CHUNK / HEAP_END messages that arrive meanwhile), the
 * connection busy as for a running one: CANCEL or a closed connection takes
 * it out of the queue.  After every round of events the loop starts queued
 * runs while there is room.  TASKS lists the running and queued runs.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gpu_driver.h"
#include "service.h"
#include "gpu_cache.h"
#include "service/file_map.h"
#include "service/file_reg.h"
#include "service/join_store.h"
#include "service/share.h"

#define HDR_SIZE			sizeof(WarpMsgHeader)
#define MAX_MSGS_PER_WAKEUP	16
#define MAX_OUT_BACKLOG		(4 * 1024 * 1024)	/* unread replies: drop the client */
#define PUMP_LOW			(1024 * 1024)	/* queue another AGG_RESULT below this */

/* the most HEAP_CHUNK / HEAP_END messages a waiting HEAP_RUN keeps */
#define MAX_HELD	64

/* one client connection */
typedef struct Conn
{
	int			fd;
	pid_t		peer_pid;		/* from SO_PEERCRED */
	bool		said_hello;
	bool		closing;		/* close once the output is flushed */
	bool		want_out;		/* EPOLLOUT registered */
	uint8_t    *in;				/* the message being received */
	size_t		in_len;
	size_t		in_cap;
	uint8_t    *out;			/* replies not yet sent: out[out_off..out_len) */
	size_t		out_off;
	size_t		out_len;
	size_t		out_cap;
	void	   *task;			/* its AGG_RUN, HEAP_RUN or SCAN_RUN, running or
								 * sending replies */
	const struct RunOps *ops;	/* the task's functions */
	int			passed_fd;		/* a descriptor sent with SCM_RIGHTS, or -1 */
	bool		task_collected; /* the run is done: replies are being sent */
	int64_t		task_since_us;	/* when the run started or was queued */
	uint8_t    *queued;			/* a run's request waiting for admission */
	uint32_t	queued_len;
	uint16_t	queued_type;	/* WARP_MSG_AGG_RUN, HEAP_RUN or SCAN_RUN */
	int			queued_fd;		/* a waiting HEAP_RUN's memfd, or -1 */
	uint32_t	n_held;			/* HEAP_CHUNK / HEAP_END that came while it waited */
	struct
	{
		uint16_t	type;
		WarpHeapChunk chunk;
	}			held[MAX_HELD];
	SvcShare   *share;			/* the shared run it opened (SHARE_OPEN), or NULL */
	struct Conn *qnext;			/* the next one in the admission queue */
	struct Conn *prev;
	struct Conn *next;
} Conn;

/*
 * The functions of one kind of long request (agg.c, scan.c): both have the
 * same life (start, done, replies, free), so the loop serves them alike.
 */
typedef struct RunOps
{
	void		(*cancel) (void *t);
	bool		(*done) (const void *t);
	uint32_t	(*reply) (void *t, uint8_t *buf, uint32_t *type, bool *last);
	size_t		(*memory) (const void *t);
	void		(*free) (void *t);
} RunOps;

/* the RunOps of AGG_RUN (agg.c) and SCAN_RUN (scan.c) */
static void
agg_cancel(void *t)
{
	agg_task_cancel(t);
}

static bool
agg_done(const void *t)
{
	return agg_task_done(t);
}

static uint32_t
agg_reply(void *t, uint8_t *buf, uint32_t *type, bool *last)
{
	return agg_task_reply(t, buf, type, last);
}

static size_t
agg_memory(const void *t)
{
	return agg_task_memory(t);
}

static void
agg_free(void *t)
{
	agg_task_free(t);
}

static const RunOps agg_ops = {agg_cancel, agg_done, agg_reply, agg_memory, agg_free};

static void
scan_cancel(void *t)
{
	scan_task_cancel(t);
}

static bool
scan_done(const void *t)
{
	return scan_task_done(t);
}

static uint32_t
scan_reply(void *t, uint8_t *buf, uint32_t *type, bool *last)
{
	return scan_task_reply(t, buf, type, last);
}

static size_t
scan_memory(const void *t)
{
	return scan_task_memory(t);
}

static void
scan_free(void *t)
{
	scan_task_free(t);
}

static const RunOps scan_ops = {scan_cancel, scan_done, scan_reply, scan_memory, scan_free};

static int	epoll_fd = -1;
static Conn *conns;				/* every open connection */
static const ServiceGpu *service_gpu;
static int64_t started_at_us;	/* CLOCK_REALTIME */
static int64_t started_mono_us;	/* CLOCK_MONOTONIC */

/* the socket we bound, to remove it at exit only if it is still ours */
static bool socket_bound;
static struct stat socket_stat;

/* tags of the three non-connection descriptors in the epoll set */
static int	listen_tag;
static int	signal_tag;
static int	notify_tag;

/*
 * The eventfd that AGG_RUN threads write when they are done; made by the
 * first AGG_RUN, so that a service that runs none holds no descriptor more.
 */
static int	notify_fd = -1;

/* runs whose connection closed before they ended */
typedef struct Orphan
{
	void	   *task;
	const struct RunOps *ops;
	int64_t		since_us;		/* when it started */
	struct Orphan *next;
} Orphan;

static Orphan *orphans;

/* the admission queue, first to run first (Conn.qnext) */
static Conn *queue_head;

/* one AGG_RESULT being built (the loop is single-threaded) */
static uint8_t pump_buf[PGWARP_MAX_PAYLOAD] __attribute__((aligned(16)));

/*
 * Out of file descriptors, accepting stops (the listening socket leaves the
 * epoll set, or the level-triggered loop would spin) until a connection
 * closes; new clients wait in the listen queue meanwhile.
 */
static int	listen_sock = -1;
static bool accept_paused;

/*
 * socket_is_stale
 *		Whether PGWARP_SOCKET_NAME, which exists, is a socket that nobody
 *		listens on (left by a service that was killed) and may be removed.
 */
static bool
socket_is_stale(void)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct stat st;
	int			fd;
	int			rc;
	int			save_errno;

	if (lstat(PGWARP_SOCKET_NAME, &st) != 0 || !S_ISSOCK(st.st_mode))
	{
		svc_log("FATAL", "\"%s\" exists in the data directory and is not a socket; remove it",
				PGWARP_SOCKET_NAME);
		return false;
	}
	strcpy(addr.sun_path, PGWARP_SOCKET_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = connect(fd, (struct sockaddr *) &addr, sizeof(addr));
	save_errno = errno;
	close(fd);
	if (rc != 0 && save_errno == ECONNREFUSED)
		return true;
	svc_log("FATAL", "another pg_warp service is listening on \"%s\"%s%s",
			PGWARP_SOCKET_NAME, rc == 0 ? "" : ": ", rc == 0 ? "" : strerror(save_errno));
	return false;
}

/*
 * server_listen
 *		Creates the listening socket PGWARP_SOCKET_NAME in the current
 *		directory (the data directory; the umask gives it mode 0600).  A
 *		stale socket is replaced; a live one (another service) or a file of
 *		another kind is left alone and -1 returned, with the reason logged.
 */
int
server_listen(void)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	char		cwd[4096];
	int			fd;
	int			rc;

	strcpy(addr.sun_path, PGWARP_SOCKET_NAME);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
	{
		svc_log("FATAL", "could not create a socket: %s", strerror(errno));
		return -1;
	}
	rc = bind(fd, (struct sockaddr *) &addr, sizeof(addr));
	if (rc != 0 && errno == EADDRINUSE && socket_is_stale())
	{
		svc_log("LOG", "removing the stale socket \"%s\"", PGWARP_SOCKET_NAME);
		unlink(PGWARP_SOCKET_NAME);
		rc = bind(fd, (struct sockaddr *) &addr, sizeof(addr));
	}
	if (rc != 0)
	{
		if (errno != EADDRINUSE)
			svc_log("FATAL", "could not bind \"%s\": %s", PGWARP_SOCKET_NAME, strerror(errno));
		close(fd);
		return -1;
	}
	socket_bound = (stat(PGWARP_SOCKET_NAME, &socket_stat) == 0);
	if (chmod(PGWARP_SOCKET_NAME, 0600) != 0 || listen(fd, SOMAXCONN) != 0)
	{
		svc_log("FATAL", "could not listen on \"%s\": %s", PGWARP_SOCKET_NAME, strerror(errno));
		server_unlink_socket();
		close(fd);
		return -1;
	}
	svc_log("LOG", "listening on \"%s/%s\"",
			getcwd(cwd, sizeof(cwd)) ? cwd : "?", PGWARP_SOCKET_NAME);
	return fd;
}

/* server_unlink_socket: removes our socket unless another one replaced it */
void
server_unlink_socket(void)
{
	struct stat st;

	if (socket_bound && stat(PGWARP_SOCKET_NAME, &st) == 0 &&
		st.st_dev == socket_stat.st_dev && st.st_ino == socket_stat.st_ino)
		unlink(PGWARP_SOCKET_NAME);
	socket_bound = false;
}

/* task_release: frees a connection's run once it is done (or orphans it) */
static void
task_release(Conn *c)
{
	void	   *t = c->task;
	Orphan	   *o;

	c->task = NULL;
	if (t == NULL)
		return;
	if (c->task_collected)
	{
		svc_counters.memory_in_use -= c->ops->memory(t);
		c->ops->free(t);
		return;
	}
	c->ops->cancel(t);
	if ((o = malloc(sizeof(Orphan))) == NULL)
	{
		svc_counters.running_tasks--;
		c->ops->free(t);		/* waits for the canceled run: about a batch */
		return;
	}
	o->task = t;
	o->ops = c->ops;
	o->since_us = c->task_since_us;
	o->next = orphans;
	orphans = o;
}

/* queue_remove: takes c's waiting run out of the admission queue */
static void
queue_remove(Conn *c)
{
	Conn	  **p;

	if (c->queued == NULL)
		return;
	for (p = &queue_head; *p != NULL && *p != c; p = &(*p)->qnext)
		;
	if (*p == c)
		*p = c->qnext;
	c->qnext = NULL;
	free(c->queued);
	c->queued = NULL;
	if (c->queued_fd >= 0)
		close(c->queued_fd);
	c->queued_fd = -1;
	c->n_held = 0;
	svc_counters.queued_tasks--;
}

/* conn_close: drops a connection and everything it holds */
static void
conn_close(Conn *c)
{
	queue_remove(c);
	task_release(c);
	svc_share_detach(c->share);
	svc_join_drop_owner(c);
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c->in);
	free(c->out);
	free(c);
	svc_counters.connections--;
	if (accept_paused)
	{
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &listen_tag};

		accept_paused = (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_sock, &ev) != 0);
	}
}

/* conn_set_want_out: (un)registers interest in writability */
static bool
conn_set_want_out(Conn *c, bool want)
{
	struct epoll_event ev = {.data.ptr = c};

	/* a connection that is closing reads no more: it only sends its ERROR */
	ev.events = (c->closing ? 0 : EPOLLIN) | (want ? EPOLLOUT : 0);

	if (c->want_out == want)
		return true;
	c->want_out = want;
	return epoll_ctl(epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) == 0;
}

/*
 * conn_flush
 *		Sends what the connection's output buffer holds, as far as the socket
 *		takes it.  Returns false when the connection was closed (an error, or
 *		a connection marked closing whose output is all sent).
 */
static bool
conn_flush(Conn *c)
{
	while (c->out_off < c->out_len)
	{
		ssize_t		n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
							 MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		{
			if (conn_set_want_out(c, true))
				return true;
		}
		if (n <= 0)
		{
			conn_close(c);
			return false;
		}
		c->out_off += n;
	}
	c->out_off = c->out_len = 0;
	if (c->closing || !conn_set_want_out(c, false))
	{
		conn_close(c);
		return false;
	}
	return true;
}

/*
 * conn_send
 *		Queues one message and tries to send it.  Returns false when the
 *		connection was closed (an error, or a client that leaves more than
 *		MAX_OUT_BACKLOG bytes of replies unread).
 */
static bool
conn_send(Conn *c, WarpMsgType type, const void *payload, uint32_t len)
{
	WarpMsgHeader hdr = {PGWARP_PROTO_MAGIC, PGWARP_PROTO_VERSION, type, len, 0};
	size_t		need;

	/* what was sent already makes room (the backlog counts unsent bytes) */
	if (c->out_off > 0)
	{
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
	}
	need = c->out_len + HDR_SIZE + len;

	if (need > MAX_OUT_BACKLOG)
	{
		svc_log("LOG", "dropping the connection of pid %d: it does not read its replies",
				(int) c->peer_pid);
		conn_close(c);
		return false;
	}
	if (need > c->out_cap)
	{
		uint8_t    *p = realloc(c->out, need);

		if (p == NULL)
		{
			conn_close(c);
			return false;
		}
		c->out = p;
		c->out_cap = need;
	}
	memcpy(c->out + c->out_len, &hdr, HDR_SIZE);
	memcpy(c->out + c->out_len + HDR_SIZE, payload, len);
	c->out_len += HDR_SIZE + len;
	return conn_flush(c);
}

/*
 * conn_fail
 *		Sends ERROR with a formatted message; with `fatal` the connection is
 *		closed once it is sent.  Returns what conn_send returns.
 */
static bool
conn_fail(Conn *c, bool fatal, WarpErrorCode code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static bool
conn_fail(Conn *c, bool fatal, WarpErrorCode code, const char *fmt, ...)
{
	WarpErrorMsg err = {.code = code};
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(err.message, sizeof(err.message), fmt, ap);
	va_end(ap);
	c->closing = c->closing || fatal;
	return conn_send(c, WARP_MSG_ERROR, &err, sizeof(err));
}

/* send_status: answers STATUS */
static bool
send_status(Conn *c)
{
	WarpStatus	st;

	memset(&st, 0, sizeof(st));
	st.service_pid = getpid();
	st.protocol_version = PGWARP_PROTO_VERSION;
	st.started_at_us = started_at_us;
	st.uptime_us = svc_now_us(CLOCK_MONOTONIC) - started_mono_us;
	st.memory_in_use = svc_counters.memory_in_use + svc_share_memory() + svc_join_memory();
	st.running_tasks = svc_counters.running_tasks;
	st.connections = svc_counters.connections;
	file_reg_stats(&st.files_pinned, &st.files_to_pin);
	st.engine = service_gpu->engine;
	st.n_devices = service_gpu->n_devices;
	memcpy(st.engine_detail, service_gpu->detail, sizeof(st.engine_detail));
	memcpy(st.devices, service_gpu->devices, sizeof(st.devices));
	return conn_send(c, WARP_MSG_STATUS, &st, sizeof(st));
}

/* running tasks' entries, oldest first */
static int
cmp_since(const void *a, const void *b)
{
	const WarpTaskInfo *x = a,
			   *y = b;

	return x->since_us < y->since_us ? -1 : x->since_us > y->since_us;
}

/* a running task's entry (pid 0: its connection closed) */
static WarpTaskInfo
running_info(const void *t, const struct RunOps *ops, pid_t pid, int64_t since_us)
{
	WarpTaskInfo e = {(uint32_t) pid, WARP_TASK_AGG, WARP_TASK_RUNNING, 0, 0, 0, since_us};

	if (ops == &scan_ops)
		e.kind = WARP_TASK_SCAN;
	else
		e.rows_done = __atomic_load_n(&AGG_TASK_RUN((const AggTask *) t)->rows_in,
									  __ATOMIC_RELAXED);
	return e;
}

/*
 * send_tasks
 *		Answers TASKS: the running runs (oldest first), then the queued ones
 *		in queue order, as many as fit one message.
 */
static bool
send_tasks(Conn *c)
{
	const uint32_t cap = (PGWARP_MAX_PAYLOAD - sizeof(WarpTaskList)) / sizeof(WarpTaskInfo);
	WarpTaskInfo *e = (WarpTaskInfo *) (pump_buf + sizeof(WarpTaskList));
	WarpTaskList h = {svc_counters.running_tasks, svc_counters.queued_tasks,
		(uint32_t) svc_max_async_tasks, 0};
	uint32_t	pos = 0;

	for (Conn *x = conns; x != NULL && h.n_entries < cap; x = x->next)
	{
		if (x->task != NULL && !x->task_collected)
			e[h.n_entries++] = running_info(x->task, x->ops, x->peer_pid, x->task_since_us);
	}
	for (Orphan *o = orphans; o != NULL && h.n_entries < cap; o = o->next)
		e[h.n_entries++] = running_info(o->task, o->ops, 0, o->since_us);
	qsort(e, h.n_entries, sizeof(WarpTaskInfo), cmp_since);
	for (Conn *x = queue_head; x != NULL && h.n_entries < cap; x = x->qnext)
	{
		WarpTaskInfo q = {(uint32_t) x->peer_pid,
			x->queued_type == WARP_MSG_SCAN_RUN ? WARP_TASK_SCAN : WARP_TASK_AGG,
		WARP_TASK_QUEUED, ++pos, 0, 0, x->task_since_us};

		e[h.n_entries++] = q;
	}
	memcpy(pump_buf, &h, sizeof(h));
	return conn_send(c, WARP_MSG_TASKS, pump_buf,
					 sizeof(h) + h.n_entries * sizeof(WarpTaskInfo));
}

/*
 * send_cache_info
 *		Answers CACHE_INFO: what each device's GPU column cache holds, summed
 *		per file version, field and kind (gpu_cache_list), as many as fit one
 *		message.
 */
static bool
send_cache_info(Conn *c)
{
	const uint32_t cap = (PGWARP_MAX_PAYLOAD - sizeof(WarpCacheList)) / sizeof(WarpCacheInfo);
	WarpCacheInfo *e = (WarpCacheInfo *) (pump_buf + sizeof(WarpCacheList));
	WarpCacheList h = {0, 0};

	for (uint32_t d = 0; d < service_gpu->n_devices; d++)
	{
		uint32_t	n = gpu_cache_list(d, e + h.n_entries, cap - h.n_entries);

		if (n > cap - h.n_entries)
		{
			h.truncated = 1;
			n = cap - h.n_entries;
		}
		h.n_entries += n;
	}
	memcpy(pump_buf, &h, sizeof(h));
	return conn_send(c, WARP_MSG_CACHE_INFO, pump_buf,
					 sizeof(h) + h.n_entries * sizeof(WarpCacheInfo));
}

/*
 * send_cache_drop
 *		Answers CACHE_DROP: empties every device's GPU column cache and the
 *		join tables kept for later queries (what runs hold stays).
 */
static bool
send_cache_drop(Conn *c)
{
	WarpCacheDropped r = {0, 0, 0, 0};

	for (uint32_t d = 0; d < service_gpu->n_devices; d++)
		r.column_bytes += gpu_cache_clear(d);
	svc_join_uncache_all(&r.join_tables, &r.join_bytes);
	svc_log("LOG", "emptied the GPU caches at the request of pid %d: %llu bytes of columns, "
			"%u kept join tables (%llu bytes)", (int) c->peer_pid,
			(unsigned long long) r.column_bytes, r.join_tables,
			(unsigned long long) r.join_bytes);
	return conn_send(c, WARP_MSG_CACHE_DROP, &r, sizeof(r));
}

/*
 * conn_pump
 *		Sends the replies of the connection's finished run while its output
 *		holds less than PUMP_LOW bytes; frees the run after its last reply.
 *		Returns false when the connection was closed.
 */
static bool
conn_pump(Conn *c)
{
	while (c->task != NULL && c->task_collected && c->out_len - c->out_off < PUMP_LOW)
	{
		uint32_t	type;
		bool		last;
		uint32_t	len = c->ops->reply(c->task, pump_buf, &type, &last);

		/*
		 * the reply goes out before the run is freed: freeing it closes its
		 * files, and a file mapping that is not kept is unmapped then (8 ms
		 * for a 518 MB file the CPU engine had read: its page tables); a
		 * failed send closed the connection, which freed the run
		 */
		if (!conn_send(c, type, pump_buf, len))
			return false;
		if (last)
			task_release(c);
	}
	return true;
}

/*
 * run_now: starts a run now: AGG_RUN, SCAN_RUN, or HEAP_RUN with memfd (the
 * descriptor that came with it, closed here; -1 for the others), or answers
 * ERROR
 */
static bool
run_now(Conn *c, uint16_t type, const uint8_t *payload, uint32_t len, int memfd)
{
	uint32_t	werr;
	char		msg[248];

	if (type == WARP_MSG_SCAN_RUN)
	{
		c->ops = &scan_ops;
		c->task = scan_task_start(payload, len, service_gpu, notify_fd, &werr, msg, sizeof(msg));
	}
	else
	{
		c->ops = &agg_ops;
		c->task = agg_task_start(payload, len, service_gpu, notify_fd, memfd,
								 type == WARP_MSG_AGG_FILL, &werr, msg, sizeof(msg));
	}
	if (memfd >= 0)
		close(memfd);
	if (c->task == NULL)
		return conn_fail(c, false, werr, "%s", msg);
	c->task_collected = false;
	c->task_since_us = svc_now_us(CLOCK_REALTIME);
	svc_counters.running_tasks++;
	return true;
}

/*
 * fail_gpu_lost: the answer to a run that comes, or waits for admission,
 * once a GPU fault lost the contexts (gpu_note_result): the service is
 * about to restart, the next query gets a new one
 */
static bool
fail_gpu_lost(Conn *c, int memfd)
{
	char		buf[96];

	if (memfd >= 0)
		close(memfd);
	return conn_fail(c, false, WARP_ERR_IO, "a GPU fault (%s) stopped the pg_warp service's "
					 "GPUs; the service is restarting: run the query again",
					 gpu_error_text(gpu_lost(), buf, sizeof(buf)));
}

/*
 * start_run
 *		Serves AGG_RUN, SCAN_RUN, or HEAP_RUN with memfd (-1 for the others):
 *		starts the run when fewer than svc_max_async_tasks run and none
 *		waits, else queues it (a copy of the request, the memfd kept); or
 *		answers ERROR.
 */
static bool
start_run(Conn *c, uint16_t type, const uint8_t *payload, uint32_t len, int memfd)
{
	Conn	  **p;

	if (gpu_lost() != 0)
		return fail_gpu_lost(c, memfd);
	if (notify_fd < 0)
	{
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &notify_tag};

		notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (notify_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, notify_fd, &ev) != 0)
		{
			int			save_errno = errno;

			if (memfd >= 0)
				close(memfd);
			if (notify_fd >= 0)
				close(notify_fd);
			notify_fd = -1;
			return conn_fail(c, false, WARP_ERR_OUT_OF_MEMORY,
							 "could not create an eventfd: %s", strerror(save_errno));
		}
	}
	if (queue_head == NULL && svc_counters.running_tasks < (uint32_t) svc_max_async_tasks)
		return run_now(c, type, payload, len, memfd);
	c->queued = malloc(len > 0 ? len : 1);
	if (c->queued == NULL)
	{
		if (memfd >= 0)
			close(memfd);
		return conn_fail(c, false, WARP_ERR_OUT_OF_MEMORY,
						 "no memory to queue a request of %u bytes", len);
	}
	memcpy(c->queued, payload, len);
	c->queued_len = len;
	c->queued_type = type;
	c->queued_fd = memfd;
	c->n_held = 0;
	c->task_since_us = svc_now_us(CLOCK_REALTIME);
	for (p = &queue_head; *p != NULL; p = &(*p)->qnext)
		;
	*p = c;
	svc_counters.queued_tasks++;
	return true;
}

/*
 * replay_held: hands a HEAP_RUN that has just started the HEAP_CHUNK /
 * HEAP_END messages that came while it waited; false when the connection
 * was closed
 */
static bool
replay_held(Conn *c, uint32_t n_held)
{
	char		msg[200];

	for (uint32_t i = 0; i < n_held && c->task != NULL; i++)
	{
		HeapRun    *h = agg_task_heap(c->task);
		uint32_t	len = c->held[i].type == WARP_MSG_HEAP_CHUNK ? sizeof(WarpHeapChunk) : 0;

		if (h == NULL || c->task_collected)
			break;
		if (!heap_run_message(h, c->held[i].type, (const uint8_t *) &c->held[i].chunk, len,
							  msg, sizeof(msg)))
			return conn_fail(c, true, WARP_ERR_PROTOCOL, "%s", msg);
	}
	return true;
}

/* admit_queued: starts queued runs, oldest first, while there is room */
static void
admit_queued(void)
{
	while (queue_head != NULL && svc_counters.running_tasks < (uint32_t) svc_max_async_tasks)
	{
		Conn	   *c = queue_head;
		uint8_t    *payload = c->queued;
		uint32_t	n_held = c->n_held;
		uint16_t	type = c->queued_type;
		int			memfd = c->queued_fd;

		queue_head = c->qnext;
		c->qnext = NULL;
		c->queued = NULL;
		c->queued_fd = -1;
		c->n_held = 0;
		svc_counters.queued_tasks--;
		/* run_now and replay_held may close c: nothing reads c after them */
		if (gpu_lost() != 0)
			fail_gpu_lost(c, memfd);
		else if (run_now(c, type, payload, c->queued_len, memfd) && type == WARP_MSG_HEAP_RUN)
			replay_held(c, n_held);
		free(payload);
	}
}

/*
 * dispatch_busy
 *		Serves a message that arrives while the connection's run waits for
 *		admission, runs or sends its replies: HEAP_CHUNK / HEAP_END go to a
 *		HEAP_RUN (kept while it waits), CANCEL stops the run; anything else
 *		is a protocol error that closes the connection (which cancels it).
 */
static bool
dispatch_busy(Conn *c, const WarpMsgHeader *hdr, const uint8_t *payload)
{
	char		msg[200];

	if ((hdr->type == WARP_MSG_HEAP_CHUNK || hdr->type == WARP_MSG_HEAP_END) &&
		c->queued != NULL && c->queued_type == WARP_MSG_HEAP_RUN)
	{
		/* kept for the run until it is admitted */
		if (c->n_held == MAX_HELD ||
			hdr->length != (hdr->type == WARP_MSG_HEAP_CHUNK ? sizeof(WarpHeapChunk) : 0))
			return conn_fail(c, true, WARP_ERR_PROTOCOL,
							 "message type %u of %u bytes while a HEAP_RUN waits", hdr->type,
							 hdr->length);
		c->held[c->n_held].type = hdr->type;
		memcpy(&c->held[c->n_held].chunk, payload, hdr->length);
		c->n_held++;
		return true;
	}
	if ((hdr->type == WARP_MSG_HEAP_CHUNK || hdr->type == WARP_MSG_HEAP_END) &&
		c->task != NULL && c->ops == &agg_ops && agg_task_heap(c->task) != NULL && !c->task_collected)
		return heap_run_message(agg_task_heap(c->task), hdr->type, payload, hdr->length,
								msg, sizeof(msg)) ||
			conn_fail(c, true, WARP_ERR_PROTOCOL, "%s", msg);
	if ((hdr->type == WARP_MSG_HEAP_CHUNK || hdr->type == WARP_MSG_HEAP_END) &&
		c->task != NULL && c->ops == &agg_ops && agg_task_heap(c->task) != NULL)
		return true;			/* crossed the run's end: nothing reads it */
	if (hdr->type != WARP_MSG_CANCEL || hdr->length != 0)
		return conn_fail(c, true, WARP_ERR_PROTOCOL,
						 "message type %u while a run is in progress", hdr->type);
	if (c->queued != NULL)
	{
		queue_remove(c);
		return conn_fail(c, false, WARP_ERR_CANCELED,
						 "the run was canceled while it waited for admission");
	}
	c->ops->cancel(c->task);
	if (c->task_collected)
	{
		/* replies already going out: the rest are void, end with CANCELED */
		task_release(c);
		return conn_fail(c, false, WARP_ERR_CANCELED, "the run was canceled");
	}
	return true;
}

/*
 * send_heap_done: sends HEAP_DONE for each chunk slot that the connection's
 * heap run has finished reading; false when the connection was closed
 */
static bool
send_heap_done(Conn *c)
{
	HeapRun    *h = c->ops == &agg_ops ? agg_task_heap(c->task) : NULL;
	uint32_t	len;

	while (h != NULL && heap_run_next_done(h, pump_buf, &len))
		if (!conn_send(c, WARP_MSG_HEAP_DONE, pump_buf, len))
			return false;
	return true;
}

/* collect_tasks: after the eventfd fired, starts the replies of finished runs */
static void
collect_tasks(void)
{
	uint64_t	n;
	Conn	   *c,
			   *next;
	Orphan	  **op = &orphans;

	if (read(notify_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		svc_log("WARNING", "could not read the run eventfd: %s", strerror(errno));
	for (c = conns; c != NULL; c = next)
	{
		bool		done;

		next = c->next;
		/* done first: every HEAP_DONE of a finished run is queued by then */
		done = c->task != NULL && !c->task_collected && c->ops->done(c->task);
		if (c->task != NULL && !c->task_collected && !send_heap_done(c))
			continue;
		if (done)
		{
			c->task_collected = true;
			svc_counters.running_tasks--;
			svc_counters.memory_in_use += c->ops->memory(c->task);
			conn_pump(c);
		}
	}
	while (*op != NULL)
	{
		Orphan	   *o = *op;

		if (!o->ops->done(o->task))
		{
			op = &o->next;
			continue;
		}
		*op = o->next;
		svc_counters.running_tasks--;
		o->ops->free(o->task);
		free(o);
	}
}

/*
 * open_share: SHARE_OPEN: the query's shared run, kept until the
 * connection closes (one a connection)
 */
static bool
open_share(Conn *c, const uint8_t *payload, uint32_t len)
{
	WarpShareOpen req;
	char		msg[200];

	if (len != sizeof(req))
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "SHARE_OPEN of %u bytes", len);
	if (c->share != NULL)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "a second SHARE_OPEN on a connection");
	memcpy(&req, payload, sizeof(req));
	if ((c->share = svc_share_open(req.share_id, req.participants, msg, sizeof(msg))) == NULL)
		return conn_fail(c, true, strcmp(msg, "out of memory") == 0 ?
						 WARP_ERR_OUT_OF_MEMORY : WARP_ERR_PROTOCOL, "%s", msg);
	return conn_send(c, WARP_MSG_SHARE_OPEN, &req, sizeof(req));
}

/*
 * join_load: JOIN_LOAD with the memfd that came with it (closed here: the
 * table stays mapped); a refused table is answered with ERROR and the
 * connection stays usable
 */
static bool
join_load(Conn *c, const uint8_t *payload, uint32_t len)
{
	int			fd = c->passed_fd;
	WarpJoinLoad req;
	WarpJoinLoaded res;
	char		msg[200];
	bool		ok;

	c->passed_fd = -1;
	if (len != sizeof(req))
	{
		if (fd >= 0)
			close(fd);
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "JOIN_LOAD of %u bytes", len);
	}
	if (fd < 0)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "JOIN_LOAD without its memfd");
	memcpy(&req, payload, sizeof(req));
	ok = svc_join_load(c, fd, &req, &res, msg, sizeof(msg));
	close(fd);
	if (!ok)
		return conn_fail(c, false, strcmp(msg, "out of memory") == 0 ?
						 WARP_ERR_OUT_OF_MEMORY : WARP_ERR_BAD_FILE, "%s", msg);
	return conn_send(c, WARP_MSG_JOIN_LOAD, &res, sizeof(res));
}

/* join_drop: JOIN_DROP, the backend is done with a table (join_store.c) */
static bool
join_drop(Conn *c, const uint8_t *payload, uint32_t len)
{
	WarpJoinDrop req;

	if (len != sizeof(req))
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "JOIN_DROP of %u bytes", len);
	memcpy(&req, payload, sizeof(req));
	svc_join_drop(c, req.join_id);
	return conn_send(c, WARP_MSG_JOIN_DROP, &req, sizeof(req));
}

/* join_find: JOIN_FIND, a table an earlier query kept (join_store.c) */
static bool
join_find(Conn *c, const uint8_t *payload, uint32_t len)
{
	WarpJoinFind req;
	WarpJoinLoaded res;

	if (len != sizeof(req))
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "JOIN_FIND of %u bytes", len);
	memcpy(&req, payload, sizeof(req));
	if (!svc_join_find(c, &req, &res))
		return conn_fail(c, false, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	return conn_send(c, WARP_MSG_JOIN_FIND, &res, sizeof(res));
}

/*
 * dispatch
 *		Serves one complete message.  Returns false when the connection was
 *		closed.
 */
static bool
dispatch(Conn *c, const WarpMsgHeader *hdr, const uint8_t *payload)
{
	if (hdr->type == WARP_MSG_HELLO)
	{
		WarpHello	hello = {(uint32_t) getpid(), PGWARP_PROTO_VERSION};

		if (hdr->length != sizeof(WarpHello))
			return conn_fail(c, true, WARP_ERR_PROTOCOL, "HELLO of %u bytes", hdr->length);
		c->said_hello = true;
		return conn_send(c, WARP_MSG_HELLO, &hello, sizeof(hello));
	}
	if (!c->said_hello)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "message type %u before HELLO", hdr->type);
	if (c->task != NULL || c->queued != NULL)
		return dispatch_busy(c, hdr, payload);
	switch (hdr->type)
	{
		case WARP_MSG_STATUS:
			if (hdr->length != 0)
				return conn_fail(c, true, WARP_ERR_PROTOCOL, "STATUS with a payload");
			return send_status(c);
		case WARP_MSG_TASKS:
			if (hdr->length != 0)
				return conn_fail(c, true, WARP_ERR_PROTOCOL, "TASKS with a payload");
			return send_tasks(c);
		case WARP_MSG_CACHE_INFO:
			if (hdr->length != 0)
				return conn_fail(c, true, WARP_ERR_PROTOCOL, "CACHE_INFO with a payload");
			return send_cache_info(c);
		case WARP_MSG_CACHE_DROP:
			if (hdr->length != 0)
				return conn_fail(c, true, WARP_ERR_PROTOCOL, "CACHE_DROP with a payload");
			return send_cache_drop(c);
		case WARP_MSG_AGG_RUN:
		case WARP_MSG_AGG_FILL:
		case WARP_MSG_SCAN_RUN:
			return start_run(c, hdr->type, payload, hdr->length, -1);
		case WARP_MSG_HEAP_RUN:
			{
				int			memfd = c->passed_fd;

				c->passed_fd = -1;
				if (memfd < 0)
					return conn_fail(c, true, WARP_ERR_PROTOCOL,
									 "HEAP_RUN without its memfd");
				return start_run(c, WARP_MSG_HEAP_RUN, payload, hdr->length, memfd);
			}
		case WARP_MSG_HEAP_CHUNK:
		case WARP_MSG_HEAP_END:
			/* crossed the end of a run that ended early: nothing reads it */
			return true;
		case WARP_MSG_CANCEL:
			/* a CANCEL that crossed the run's last reply: nothing to stop */
			if (hdr->length != 0)
				return conn_fail(c, true, WARP_ERR_PROTOCOL, "CANCEL with a payload");
			return true;
		case WARP_MSG_SHARE_OPEN:
			return open_share(c, payload, hdr->length);
		case WARP_MSG_JOIN_LOAD:
			return join_load(c, payload, hdr->length);
		case WARP_MSG_JOIN_FIND:
			return join_find(c, payload, hdr->length);
		case WARP_MSG_JOIN_DROP:
			return join_drop(c, payload, hdr->length);
		case WARP_MSG_DEVICES:
			{
				uint32_t	type;
				uint32_t	n = devices_answer(service_gpu, payload, hdr->length, pump_buf, &type);

				return conn_send(c, type, pump_buf, n);
			}
		case WARP_MSG_AGG_RESULT:
		case WARP_MSG_SCAN_RESULT:
			/* a reply of the service's own, sent to it */
			return conn_fail(c, false, WARP_ERR_UNSUPPORTED,
							 "message type %u is not a request", hdr->type);
		default:
			return conn_fail(c, true, WARP_ERR_PROTOCOL, "unknown message type %u", hdr->type);
	}
}

/*
 * check_header
 *		Validates a received header and makes room for its payload.  A
 *		refused header is answered with ERROR and the connection closes once
 *		that is sent.  Returns false when the connection was closed.
 */
static bool
check_header(Conn *c, const WarpMsgHeader *hdr)
{
	size_t		need = HDR_SIZE + (size_t) hdr->length;
	uint8_t    *p;

	if (hdr->magic != PGWARP_PROTO_MAGIC)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "not a pg_warp message (bad magic)");
	if (hdr->version != PGWARP_PROTO_VERSION)
		return conn_fail(c, true, WARP_ERR_VERSION,
						 "protocol version mismatch: the service speaks version %d, the client version %u",
						 PGWARP_PROTO_VERSION, hdr->version);
	if (hdr->length > PGWARP_MAX_PAYLOAD)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "message of %u bytes is too long",
						 hdr->length);
	if (need <= c->in_cap)
		return true;
	p = realloc(c->in, need);
	if (p == NULL)
		return conn_fail(c, true, WARP_ERR_PROTOCOL, "out of memory");
	c->in = p;
	c->in_cap = need;
	return true;
}

/*
 * conn_recv: recv() that keeps a descriptor passed with SCM_RIGHTS (the
 * memfd of a HEAP_RUN) in c->passed_fd, closing any earlier one unused
 */
static ssize_t
conn_recv(Conn *c, void *buf, size_t len)
{
	struct iovec iov = {buf, len};
	union
	{
		struct cmsghdr hdr;
		char		space[CMSG_SPACE(sizeof(int) * 4)];
	}			cbuf;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
	.msg_control = cbuf.space, .msg_controllen = sizeof(cbuf.space)};
	ssize_t		n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);

	for (struct cmsghdr *cm = n >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm != NULL;
		 cm = CMSG_NXTHDR(&mh, cm))
	{
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
		{
			int			fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->passed_fd >= 0)
				close(c->passed_fd);
			c->passed_fd = fd;
		}
	}
	return n;
}

/*
 * conn_read
 *		Receives what the client sent and serves each complete message, at
 *		most MAX_MSGS_PER_WAKEUP of them (the level-triggered epoll comes
 *		back for the rest).  Returns false when the connection was closed.
 */
static bool
conn_read(Conn *c)
{
	int			served = 0;

	while (!c->closing)
	{
		WarpMsgHeader hdr;
		size_t		want;
		ssize_t		n;

		if (c->in_len >= HDR_SIZE)
		{
			memcpy(&hdr, c->in, HDR_SIZE);
			if (c->in_len == HDR_SIZE + hdr.length)
			{
				c->in_len = 0;
				if (!dispatch(c, &hdr, c->in + HDR_SIZE))
					return false;
				if (++served >= MAX_MSGS_PER_WAKEUP)
					break;
				continue;
			}
			want = HDR_SIZE + hdr.length - c->in_len;
		}
		else
			want = HDR_SIZE - c->in_len;
		n = conn_recv(c, c->in + c->in_len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
		{
			conn_close(c);		/* the client left (or the socket failed) */
			return false;
		}
		c->in_len += n;
		if (c->in_len == HDR_SIZE)
		{
			memcpy(&hdr, c->in, HDR_SIZE);
			/* a refused header sets c->closing, which ends the loop */
			if (!check_header(c, &hdr))
				return false;
		}
	}
	return true;
}

/*
 * accept_clients
 *		Accepts every pending connection; a peer whose uid differs from the
 *		service's own is refused (closed at once) and logged.
 */
static void
accept_clients(int listen_fd)
{
	for (;;)
	{
		struct ucred cred;
		socklen_t	len = sizeof(cred);
		struct epoll_event ev = {.events = EPOLLIN};
		Conn	   *c;
		int			fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
		{
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if ((errno == EMFILE || errno == ENFILE) && conns != NULL &&
				epoll_ctl(epoll_fd, EPOLL_CTL_DEL, listen_fd, NULL) == 0)
			{
				svc_log("WARNING", "could not accept a connection: %s; "
						"waiting for a connection to close", strerror(errno));
				accept_paused = true;
			}
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				svc_log("WARNING", "could not accept a connection: %s", strerror(errno));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
			cred.uid != geteuid())
		{
			svc_log("WARNING", "refused a connection from uid %d (pid %d): only uid %d is served",
					(int) cred.uid, (int) cred.pid, (int) geteuid());
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(Conn));
		if (c != NULL)
			c->in = malloc(c->in_cap = HDR_SIZE + 256);
		ev.data.ptr = c;
		if (c == NULL || c->in == NULL || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0)
		{
			svc_log("WARNING", "could not serve a connection: out of memory");
			if (c)
				free(c->in);
			free(c);
			close(fd);
			continue;
		}
		c->fd = fd;
		c->passed_fd = -1;
		c->queued_fd = -1;
		c->peer_pid = cred.pid;
		c->next = conns;
		if (conns)
			conns->prev = c;
		conns = c;
		svc_counters.connections++;
	}
}

/* got_stop_signal: drains the signalfd; true when SIGTERM or SIGINT came */
static bool
got_stop_signal(int signal_fd)
{
	struct signalfd_siginfo si;
	bool		stop = false;

	while (read(signal_fd, &si, sizeof(si)) == sizeof(si))
	{
		svc_log("LOG", "received signal %u; shutting down", si.ssi_signo);
		stop = true;
	}
	return stop;
}

/*
 * server_run
 *		The service's main loop: serves connections on listen_fd until a
 *		SIGTERM/SIGINT arrives on signal_fd or the parent (parent_pid, when
 *		not 0) is gone.  Returns the process's exit code.
 */
int
server_run(int listen_fd, int signal_fd, pid_t parent_pid, const ServiceGpu *gpu)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct epoll_event events[64];
	bool		stop = false;
	bool		notified;
	int64_t		lost_since = 0;

	service_gpu = gpu;
	listen_sock = listen_fd;
	started_at_us = svc_now_us(CLOCK_REALTIME);
	started_mono_us = svc_now_us(CLOCK_MONOTONIC);
	epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	ev.data.ptr = &listen_tag;
	if (epoll_fd < 0 || epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) != 0 ||
		(ev.data.ptr = &signal_tag,
		 epoll_ctl(epoll_fd, EPOLL_CTL_ADD, signal_fd, &ev) != 0))
	{
		svc_log("FATAL", "could not set up epoll: %s", strerror(errno));
		return 1;
	}
	while (!stop)
	{
		int			n = epoll_wait(epoll_fd, events, 64, 1000);

		if (n < 0 && errno != EINTR)
		{
			svc_log("FATAL", "epoll_wait failed: %s", strerror(errno));
			return 1;
		}
		if (parent_pid > 0 && getppid() != parent_pid)
		{
			svc_log("LOG", "the supervisor (pid %d) is gone; shutting down", (int) parent_pid);
			break;
		}
		svc_file_map_expire();
		notified = false;
		for (int i = 0; i < n; i++)
		{
			void	   *tag = events[i].data.ptr;

			if (tag == &signal_tag)
				stop = got_stop_signal(signal_fd) || stop;
			else if (tag == &listen_tag)
				accept_clients(listen_fd);
			else if (tag == &notify_tag)
				notified = true;
			else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			{
				if (conn_read(tag) && (events[i].events & EPOLLOUT) && conn_flush(tag))
					conn_pump(tag);
			}
			else if ((events[i].events & EPOLLOUT) && conn_flush(tag))
				conn_pump(tag);
		}
		/* after the events: replies may close connections that had one */
		if (notified)
			collect_tasks();
		admit_queued();
		if (gpu_lost() != 0 && lost_since == 0)
			lost_since = svc_now_us(CLOCK_MONOTONIC);
		/* a lost context: restart once the runs are over (or after 10 s) */
		if (lost_since != 0 && (svc_counters.running_tasks == 0 ||
								svc_now_us(CLOCK_MONOTONIC) - lost_since > 10000000))
		{
			svc_log("LOG", "restarting: a GPU fault lost the CUDA contexts");
			break;
		}
	}
	while (conns)
		conn_close(conns);
	while (orphans)
	{
		Orphan	   *o = orphans;

		orphans = o->next;
		o->ops->free(o->task);	/* canceled: ends within about a batch */
		free(o);
	}
	close(listen_fd);
	return lost_since != 0 ? 3 : 0;	/* 3: the supervisor starts a new service */
}
