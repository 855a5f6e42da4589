/*-------------------------------------------------------------------------
 *
 * conn.c
 *		fluent2arrow: listening sockets, connections and the event loop
 *		(one thread, epoll, level-triggered).
 *
 * A connection reads into its buffer, cuts complete frames with
 * frame_scan, and hands each to forward.c; a data frame then goes into the
 * WAL and its chunk's ack waits until the WAL is durable past it.  With a
 * shared_key, the connection first sends HELO and accepts nothing but a
 * PING with the right digest (answered by PONG); a wrong key gets a PONG
 * with auth_result false and the connection is closed.
 *
 * Memory is bounded and shared fairly: a frame above max_frame closes its
 * connection before its bytes are buffered; a connection holds a buffer
 * only while it has part of a frame (the buffer is freed once its frames
 * are consumed, and shrinks after a large one); the buffers of all
 * connections together stay under max_buffer, and always leave room for
 * the oldest frame to grow to max_frame (fits()): a connection that has
 * bytes to read and needs more memory waits, in the order the waits began,
 * and is granted memory as others free theirs.  A waiting connection is
 * still watched for its peer's close (EPOLLRDHUP), so a dead sender's
 * memory comes free at once; and when the first waiter has waited
 * stall_timeout, connections that have held part of a frame that long
 * without a byte (not counting the time they waited) are closed (unacked:
 * the sender resends), so a stalled sender never blocks the others for
 * long.  While
 * the WAL has more than 64 MB not yet durable, or files wait for the
 * finisher, no socket is read at all, so senders see TCP back-pressure.
 *
 *-------------------------------------------------------------------------
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fluent2arrow.h"

#define READ_CHUNK		(256 * 1024)
#define WAL_BACKLOG_MAX (64LL << 20)
#define FINISH_QUEUE_MAX 4
#define REPLY_BACKLOG_MAX (1 << 20)	/* unsent replies that stop reading */

typedef struct Ack
{
	uint64_t	lsn;
	char		chunk[128];
} Ack;

typedef struct Conn
{
	int			fd;
	uint8_t    *buf;
	size_t		start,
				len,
				cap;			/* unparsed bytes are buf[start..len) */
	FrameScan	scan;
	bool		authed;
	bool		close_after_write;
	bool		waiting;		/* not read: waits for buffer memory */
	bool		peer_done;		/* waiting, and its peer shut its side */
	uint64_t	seq;			/* when its frame (or its wait) began */
	size_t		want;			/* the buffer size it waits for */
	int64_t		wait_ms;		/* when the wait began */
	int64_t		rx_ms;			/* when a byte last came */
	uint32_t	ep_events;		/* what epoll watches for it */
	uint8_t		nonce[16];
	uint8_t    *out;
	size_t		out_len,
				out_cap;
	Ack		   *acks;
	int			ack_head,
				ack_n,
				ack_cap;
	int			index;			/* in conns[] */
} Conn;

static int	ep = -1;
static int	listen_tcp = -1,
			listen_unix = -1;
static Conn **conns;
static int	n_conns;
static int64_t buffered;		/* bytes of all connection buffers */
static int	n_waiting;			/* connections waiting for memory */
static uint64_t seq_counter;	/* orders frames and waits (Conn.seq) */
static int64_t accept_paused_until; /* listeners off till then (0: on) */
static int64_t refusal_logged_ms;	/* when refusals were last logged */
static unsigned long refusals;	/* connections refused since then */
static char refusal_why[128];	/* the reason of the last line */
static msgpack_unpacked frame_obj;

/* epoll data for the listeners and eventfds (connections use their Conn *) */
static char tag_tcp,
			tag_unix,
			tag_wal,
			tag_fin;

static void
ep_add(int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = {.events = events, .data.ptr = ptr};

	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
		fatal("epoll_ctl: %s", strerror(errno));
}

/*
 * Whether the replies a connection owes (unsent bytes, pending acks) are
 * so many that it is not read until its peer reads them: a sender that
 * never reads its acks must not grow the server's memory without end.
 */
static bool
replies_backlogged(const Conn *c)
{
	return c->out_len + (size_t) c->ack_n * sizeof(Ack) > REPLY_BACKLOG_MAX;
}

/*
 * Tells epoll what the connection now waits for (when that changed): its
 * bytes, unless it waits for memory (then only its peer's close, until
 * the peer is known to have shut its side) or owes too many replies.
 */
static void
ep_mod(Conn *c)
{
	struct epoll_event ev = {.data.ptr = c};

	if (c->waiting)
		ev.events = c->peer_done ? 0 : EPOLLRDHUP;
	else
		ev.events = replies_backlogged(c) ? 0 : EPOLLIN;
	if (c->out_len)
		ev.events |= EPOLLOUT;

	if (ev.events == c->ep_events)
		return;
	c->ep_events = ev.events;
	epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Turns the listeners' readiness on or off */
static void
listeners_on(bool on)
{
	struct epoll_event ev = {.events = on ? EPOLLIN : 0};

	if (listen_tcp >= 0)
	{
		ev.data.ptr = &tag_tcp;
		epoll_ctl(ep, EPOLL_CTL_MOD, listen_tcp, &ev);
	}
	if (listen_unix >= 0)
	{
		ev.data.ptr = &tag_unix;
		epoll_ctl(ep, EPOLL_CTL_MOD, listen_unix, &ev);
	}
}

/*
 * Counts a refused connection and logs at most one line a second about
 * them, so that a flood of connections cannot flood the log; a new reason
 * is logged at once (reasons change rarely: a reload, descriptors freed),
 * and conn_close_all logs the refusals counted since the last line.
 */
static void
note_refusal(const char *why)
{
	int64_t		now = now_ms();

	refusals++;
	if (now - refusal_logged_ms < 1000 && strcmp(why, refusal_why) == 0)
		return;
	logmsg("refusing connections: %s (%lu refused since the last such line)", why, refusals);
	snprintf(refusal_why, sizeof(refusal_why), "%s", why);
	refusals = 0;
	refusal_logged_ms = now;
}

/* Binds and listens on TCP host:port and the UNIX socket path */
bool
conn_listen(Config *cfg, char *errbuf, size_t errlen)
{
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (cfg->listen_port > 0)
	{
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
		struct addrinfo *ai;
		char		port[16];
		int			one = 1;

		snprintf(port, sizeof(port), "%d", cfg->listen_port);
		if (getaddrinfo(cfg->listen_host, port, &hints, &ai) != 0)
			return snprintf(errbuf, errlen, "cannot resolve \"%s\"", cfg->listen_host), false;
		listen_tcp = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		setsockopt(listen_tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (listen_tcp < 0 || bind(listen_tcp, ai->ai_addr, ai->ai_addrlen) != 0 ||
			listen(listen_tcp, 512) != 0)
		{
			freeaddrinfo(ai);
			return snprintf(errbuf, errlen, "cannot listen on %s:%d: %s", cfg->listen_host,
							cfg->listen_port, strerror(errno)), false;
		}
		freeaddrinfo(ai);
		ep_add(listen_tcp, EPOLLIN, &tag_tcp);
	}
	if (cfg->unix_path)
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};

		if (strlen(cfg->unix_path) >= sizeof(sa.sun_path))
			return snprintf(errbuf, errlen, "UNIX socket path too long: \"%s\"", cfg->unix_path), false;
		strcpy(sa.sun_path, cfg->unix_path);
		unlink(cfg->unix_path);
		listen_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (listen_unix < 0 || bind(listen_unix, (struct sockaddr *) &sa, sizeof(sa)) != 0 ||
			listen(listen_unix, 512) != 0)
			return snprintf(errbuf, errlen, "cannot listen on \"%s\": %s", cfg->unix_path, strerror(errno)), false;
		ep_add(listen_unix, EPOLLIN, &tag_unix);
	}
	ep_add(wal_eventfd(), EPOLLIN, &tag_wal);
	ep_add(output_eventfd(), EPOLLIN, &tag_fin);
	msgpack_unpacked_init(&frame_obj);
	return true;
}

/* Queues bytes to send and tries to send them now */
static void
conn_send(Conn *c, const void *p, size_t len)
{
	if (c->out_len + len > c->out_cap)
	{
		c->out_cap = (c->out_len + len) * 2;
		c->out = xrealloc(c->out, c->out_cap);
	}
	memcpy(c->out + c->out_len, p, len);
	c->out_len += len;
}

/* Writes what is queued; false when the connection failed */
static bool
conn_flush(Conn *c)
{
	size_t		off = 0;

	while (off < c->out_len)
	{
		ssize_t		n = send(c->fd, c->out + off, c->out_len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n < 0)
			return false;
		off += n;
	}
	memmove(c->out, c->out + off, c->out_len - off);
	c->out_len -= off;
	ep_mod(c);
	return !(c->close_after_write && c->out_len == 0);
}

/*
 * Gives the connection a buffer of size bytes (0: none), keeping its
 * bytes; a first buffer starts a frame (Conn.seq).
 */
static void
resize_buffer(Conn *c, size_t size)
{
	if (c->cap == 0)
		c->seq = ++seq_counter;
	buffered += (int64_t) size - (int64_t) c->cap;
	if (size == 0)
	{
		free(c->buf);
		c->buf = NULL;
	}
	else
		c->buf = xrealloc(c->buf, size);
	c->cap = size;
}

/* The most a frame's buffer grows to: a frame of max_frame bytes fits */
static size_t
frame_limit(void)
{
	return (size_t) g_cfg->max_frame + READ_CHUNK;
}

/* The connection holding the oldest frame under way, or NULL */
static const Conn *
oldest_frame(void)
{
	const Conn *o = NULL;

	for (int i = 0; i < n_conns; i++)
		if (conns[i]->fd >= 0 && conns[i]->cap > 0 && (o == NULL || conns[i]->seq < o->seq))
			o = conns[i];
	return o;
}

/*
 * Whether the connection may have a buffer of want bytes: all buffers stay
 * under max_buffer, and memory given to any other than the oldest frame
 * leaves enough for the oldest to grow to frame_limit().  So the oldest
 * frame never waits for memory held by younger ones: either its sender
 * completes it (which frees memory) or it falls silent (and is closed
 * after stall_timeout), and the others never all wait on one another.
 */
static bool
fits(const Conn *c, size_t want)
{
	const Conn *o = oldest_frame();
	int64_t		need = buffered + (int64_t) want - (int64_t) c->cap;

	if (o != NULL && o != c && o->cap < frame_limit())
		need += (int64_t) (frame_limit() - o->cap);
	return need <= g_cfg->max_buffer;
}

/* Whether a is served before b: frames under way first, the oldest first */
static bool
served_before(const Conn *a, const Conn *b)
{
	if ((a->cap == 0) != (b->cap == 0))
		return a->cap > 0;
	return a->seq < b->seq;
}

/*
 * The waiting connection to serve first (n_waiting > 0): finishing the
 * frames under way frees memory, starting new ones takes it, so a
 * connection holding part of a frame comes before one that holds none;
 * among them, the oldest frame (or wait) first.
 */
static Conn *
first_waiter(void)
{
	Conn	   *head = NULL;

	for (int i = 0; i < n_conns; i++)
		if (conns[i]->waiting && (head == NULL || served_before(conns[i], head)))
			head = conns[i];
	return head;
}

/*
 * Starts (or ends) the connection's wait for memory.  Its silence (for
 * stall_timeout) counts from when it is read again.
 */
static void
set_waiting(Conn *c, bool on)
{
	if (on == c->waiting)
		return;
	c->waiting = on;
	n_waiting += on ? 1 : -1;
	if (on)
	{
		c->peer_done = false;
		if (c->cap == 0)
			c->seq = ++seq_counter;
		c->wait_ms = now_ms();
	}
	else
		c->rx_ms = now_ms();
	if (c->fd >= 0)
		ep_mod(c);
}

/*
 * Grants memory to the waiting connections in first_waiter's order; the
 * first that does not fit ends the round, so that a large need is not
 * passed by smaller ones for ever.  Called whenever memory is freed.
 */
static void
serve_waiters(void)
{
	while (n_waiting > 0)
	{
		Conn	   *head = first_waiter();

		if (!fits(head, head->want))
			return;
		resize_buffer(head, head->want);
		set_waiting(head, false);
	}
}

/*
 * After frames were consumed: frees the buffer when no byte of a frame is
 * left in it (an idle connection holds no memory), or shrinks it when the
 * part of the next frame needs less than half of it.
 */
static void
shrink_buffer(Conn *c)
{
	size_t		left = c->len - c->start;
	size_t		size = READ_CHUNK;

	if (c->cap == 0)
		return;
	while (size < left + READ_CHUNK / 4)
		size *= 2;
	if (left > 0 && size * 2 > c->cap)
		return;
	memmove(c->buf, c->buf + c->start, left);
	c->start = 0;
	c->len = left;
	resize_buffer(c, left == 0 ? 0 : size);
	serve_waiters();
}

/*
 * Closes a connection (a part of a frame it held is dropped, unacked), and
 * gives its memory to those waiting.  The Conn itself is freed by
 * sweep_closed(), after the events of this round (which may still point
 * to it) were handled.
 */
static void
conn_close(Conn *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	set_waiting(c, false);
	resize_buffer(c, 0);
	serve_waiters();
}

/* Frees the connections closed since the last call */
static void
sweep_closed(void)
{
	for (int i = 0; i < n_conns; i++)
	{
		Conn	   *c = conns[i];

		if (c->fd >= 0)
			continue;
		conns[i] = conns[--n_conns];
		conns[i]->index = i;
		i--;
		free(c->buf);
		free(c->out);
		free(c->acks);
		free(c);
	}
}

/* msgpack str header + bytes */
static void
put_str(Conn *c, const char *s, size_t len)
{
	uint8_t		h[2] = {0xd9, (uint8_t) len};

	if (len < 32)
	{
		h[0] = 0xa0 | len;
		conn_send(c, h, 1);
	}
	else
		conn_send(c, h, 2);
	conn_send(c, s, len);
}

static void
send_helo(Conn *c)
{
	static const uint8_t head[] = {0x92, 0xa4, 'H', 'E', 'L', 'O', 0x83,
		0xa5, 'n', 'o', 'n', 'c', 'e', 0xc4, 16};
	static const uint8_t tail[] = {0xa4, 'a', 'u', 't', 'h', 0xa0,
		0xa9, 'k', 'e', 'e', 'p', 'a', 'l', 'i', 'v', 'e', 0xc3};

	if (RAND_bytes(c->nonce, sizeof(c->nonce)) != 1)
		fatal("cannot get random bytes for the handshake nonce");
	conn_send(c, head, sizeof(head));
	conn_send(c, c->nonce, sizeof(c->nonce));
	conn_send(c, tail, sizeof(tail));
}

/* hex(sha512(salt + host + nonce + key)) into out[129] */
static void
digest(const msgpack_object *salt, const char *host, size_t host_len,
	   const uint8_t *nonce, const char *key, char *out)
{
	size_t		klen = strlen(key);
	size_t		n = salt->via.str.size + host_len + 16 + klen;
	uint8_t    *in = xmalloc(n + 1);
	uint8_t		md[SHA512_DIGEST_LENGTH];

	memcpy(in, salt->via.str.ptr, salt->via.str.size);
	memcpy(in + salt->via.str.size, host, host_len);
	memcpy(in + salt->via.str.size + host_len, nonce, 16);
	memcpy(in + salt->via.str.size + host_len + 16, key, klen);
	SHA512(in, n, md);
	free(in);
	for (int i = 0; i < SHA512_DIGEST_LENGTH; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
}

/* A PING: [PING, hostname, shared_key_salt, digest, username, password] */
static bool
handle_ping(Conn *c, const msgpack_object *f)
{
	const msgpack_object *a = f->via.array.ptr;
	char		want[2 * SHA512_DIGEST_LENGTH + 1];
	bool		ok;

	if (f->via.array.size != 6 || a[0].type != MSGPACK_OBJECT_STR || a[0].via.str.size != 4 ||
		memcmp(a[0].via.str.ptr, "PING", 4) != 0 ||
		(a[1].type != MSGPACK_OBJECT_STR) ||
		(a[2].type != MSGPACK_OBJECT_STR && a[2].type != MSGPACK_OBJECT_BIN) ||
		a[3].type != MSGPACK_OBJECT_STR)
	{
		logmsg("connection %d: expected a PING (the shared key handshake), closing", c->fd);
		g_count.auth_failures++;
		return false;
	}
	digest(&a[2], a[1].via.str.ptr, a[1].via.str.size, c->nonce, g_cfg->shared_key, want);
	ok = a[3].via.str.size == strlen(want) && memcmp(a[3].via.str.ptr, want, strlen(want)) == 0;
	conn_send(c, "\x95\xa4PONG", 6);
	conn_send(c, ok ? "\xc3" : "\xc2", 1);
	if (!ok)
	{
		put_str(c, "shared_key mismatch", 19);
		put_str(c, "", 0);
		put_str(c, "", 0);
		g_count.auth_failures++;
		logmsg("connection %d: wrong shared key from \"%.*s\", closing", c->fd,
			   (int) a[1].via.str.size, a[1].via.str.ptr);
		c->close_after_write = true;
		return conn_flush(c);
	}
	put_str(c, "", 0);
	put_str(c, g_cfg->self_hostname, strlen(g_cfg->self_hostname));
	digest(&a[2], g_cfg->self_hostname, strlen(g_cfg->self_hostname), c->nonce, g_cfg->shared_key, want);
	put_str(c, want, strlen(want));
	c->authed = true;
	return conn_flush(c);
}

/* Sends the acks that the durable WAL position covers */
static bool
send_acks(Conn *c, uint64_t durable)
{
	bool		sent = false;

	while (c->ack_n > 0 && c->acks[c->ack_head].lsn <= durable)
	{
		const char *ch = c->acks[c->ack_head].chunk;

		conn_send(c, "\x81\xa3" "ack", 5);
		put_str(c, ch, strlen(ch));
		c->ack_head = (c->ack_head + 1) % c->ack_cap;
		c->ack_n--;
		g_count.acks++;
		sent = true;
	}
	return !sent || conn_flush(c);
}

static void
queue_ack(Conn *c, uint64_t lsn, const char *chunk)
{
	if (c->ack_n == c->ack_cap)
	{
		Ack		   *n = xmalloc(sizeof(Ack) * (c->ack_cap ? c->ack_cap * 2 : 16));

		for (int i = 0; i < c->ack_n; i++)
			n[i] = c->acks[(c->ack_head + i) % c->ack_cap];
		free(c->acks);
		c->acks = n;
		c->ack_head = 0;
		c->ack_cap = c->ack_cap ? c->ack_cap * 2 : 16;
	}
	c->acks[(c->ack_head + c->ack_n) % c->ack_cap].lsn = lsn;
	snprintf(c->acks[(c->ack_head + c->ack_n) % c->ack_cap].chunk, 128, "%s", chunk);
	c->ack_n++;
}

/* One complete frame; false closes the connection */
static bool
handle_frame(Conn *c, const uint8_t *p, size_t len)
{
	size_t		off = 0;
	FrameResult res;
	char		why[256];
	uint64_t	end;

	g_count.frames++;
	g_count.bytes += len;
	if (msgpack_unpack_next(&frame_obj, (const char *) p, len, &off) != MSGPACK_UNPACK_SUCCESS)
	{
		logmsg("connection %d: malformed msgpack frame, closing", c->fd);
		g_count.bad_frames++;
		return false;
	}
	if (g_cfg->shared_key && !c->authed)
		return handle_ping(c, &frame_obj.data);
	if (!forward_frame(&frame_obj.data, wal_next_lsn(), &res, why, sizeof(why)))
	{
		logmsg("connection %d: %s, closing", c->fd, why);
		g_count.bad_frames++;
		return false;
	}
	end = wal_append(p, len);
	if (res.has_chunk)
		queue_ack(c, end, res.chunk);
	return true;
}

/*
 * Makes room for at least READ_CHUNK / 4 more bytes, doubling the buffer
 * up to what a frame of max_frame bytes needs.  false when that takes
 * memory beyond max_buffer, or others wait for memory already (the
 * connection must then wait its turn for c->want bytes).
 */
static bool
make_room(Conn *c)
{
	size_t		limit = frame_limit();

	if (c->cap - c->len >= READ_CHUNK / 4)
		return true;
	if (c->start > 0)
	{
		memmove(c->buf, c->buf + c->start, c->len - c->start);
		c->len -= c->start;
		c->start = 0;
		if (c->cap - c->len >= READ_CHUNK / 4)
			return true;
	}
	c->want = c->cap == 0 ? READ_CHUNK : c->cap * 2 < limit ? c->cap * 2 : limit;
	if (n_waiting > 0 || !fits(c, c->want))
		return false;
	resize_buffer(c, c->want);
	return true;
}

/*
 * Whether the peer has sent bytes not yet read: 1 yes, 0 none (for now),
 * -1 it closed its side with nothing left, or the connection failed.
 */
static int
peer_pending(Conn *c)
{
	char		b;
	ssize_t		n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n > 0)
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	return -1;
}

/* Reads what there is and handles every complete frame; false: close */
static bool
conn_read(Conn *c)
{
	for (int rounds = 0; rounds < 8; rounds++)
	{
		ssize_t		n;

		if (replies_backlogged(c))
		{
			shrink_buffer(c);
			ep_mod(c);			/* read again once the peer read its replies */
			return true;
		}
		if (!make_room(c))
		{
			/*
			 * Only a connection with bytes to read waits for memory: one
			 * whose peer sent nothing more stays watched for its bytes (then
			 * it waits) or its close, and while it holds part of a frame its
			 * silence counts (victim_for).
			 */
			int			pending = peer_pending(c);

			if (pending < 0)
				return false;	/* closed mid-frame: never acked */
			if (pending == 0)
				break;
			set_waiting(c, true);
			serve_waiters();	/* it may come first, and fit */
			if (c->waiting)
				return true;
			continue;
		}
		n = recv(c->fd, c->buf + c->len, c->cap - c->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0)
			return false;		/* closed (maybe mid-frame: never acked) */
		c->len += n;
		c->rx_ms = now_ms();
		for (;;)
		{
			size_t		flen;
			char		why[200];
			int			r = frame_scan(&c->scan, c->buf + c->start, c->len - c->start,
									   g_cfg->max_frame, &flen, why, sizeof(why));

			if (r < 0)
			{
				logmsg("connection %d: %s, closing", c->fd, why);
				g_count.bad_frames++;
				return false;
			}
			if (r == 0)
				break;
			if (!handle_frame(c, c->buf + c->start, flen))
				return false;
			c->start += flen;
			memset(&c->scan, 0, sizeof(c->scan));
			c->seq = ++seq_counter; /* the next frame begins */
		}
		if (c->close_after_write)
			return true;
		if (c->len < c->cap)
			break;				/* read all there was */
	}
	shrink_buffer(c);
	return true;
}

static void
conn_accept(int lfd)
{
	for (;;)
	{
		int			fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int			one = 1;
		Conn	   *c;

		if (fd < 0)
		{
			/* out of descriptors: the listener would stay ready and spin */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
			{
				note_refusal(strerror(errno));
				listeners_on(false);
				accept_paused_until = now_ms() + 100;
			}
			return;
		}
		if (n_conns >= g_cfg->max_connections)
		{
			char		why[64];

			snprintf(why, sizeof(why), "max_connections (%d) reached", g_cfg->max_connections);
			note_refusal(why);
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = xcalloc(1, sizeof(Conn));
		c->fd = fd;
		c->rx_ms = now_ms();
		conns = xrealloc(conns, sizeof(Conn *) * (n_conns + 1));
		c->index = n_conns;
		conns[n_conns++] = c;
		ep_add(fd, EPOLLIN, c);
		c->ep_events = EPOLLIN;
		if (g_cfg->shared_key)
		{
			send_helo(c);
			if (!conn_flush(c))
				conn_close(c);
		}
	}
}

/* After the WAL became durable further: acks */
static void
wal_progress(void)
{
	uint64_t	v;
	uint64_t	durable;

	if (read(wal_eventfd(), &v, sizeof(v)) < 0)
		(void) 0;				/* nothing to read: fine */
	durable = wal_durable_lsn();
	for (int i = 0; i < n_conns; i++)
		if (conns[i]->fd >= 0 && conns[i]->ack_n > 0 && !send_acks(conns[i], durable))
			conn_close(conns[i]);
}

/* After the finisher finished a file: clears its eventfd */
static void
fin_progress(void)
{
	uint64_t	v;

	if (read(output_eventfd(), &v, sizeof(v)) < 0)
		(void) 0;				/* nothing to read: fine */
}

/* Periodic work: age rotation, WAL truncation, status line */
static void
tick(int64_t *last_trunc, int64_t *last_stats)
{
	int64_t		now = now_ms();

	output_tick(g_cfg, now);
	if (accept_paused_until != 0 && now >= accept_paused_until)
	{
		accept_paused_until = 0;
		listeners_on(true);
	}
	if (now - *last_trunc >= 500)
	{
		uint64_t	low = output_low_water();

		if (low > wal_next_lsn())
			low = wal_next_lsn();
		if (output_stored())	/* the rejects of these frames first */
			wal_truncate(low);
		deadletter_sync();
		*last_trunc = now;
	}
	if (g_cfg->stats_interval > 0 && now - *last_stats >= g_cfg->stats_interval * 1000LL)
	{
		stats_line(false);
		*last_stats = now;
	}
}

/*
 * A waiting connection whose peer shut its side: when nothing more is to
 * come, the part of a frame it holds can never be completed (false: close
 * it, which frees its memory at once); when bytes are still queued, it
 * keeps its turn, and epoll stops reporting the shutdown (level-triggered,
 * it would report it again and again).
 */
static bool
peer_has_more(Conn *c)
{
	char		b;
	ssize_t		n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
		return false;
	c->peer_done = true;
	ep_mod(c);
	return true;
}

/* The readiness of a connection; false: close it */
static bool
conn_event(Conn *c, uint32_t events)
{
	if ((events & EPOLLOUT) && !conn_flush(c))
		return false;
	if (c->close_after_write)
		return true;
	/* a reset peer; conn_read would not look at one it does not read */
	if ((events & (EPOLLHUP | EPOLLERR)) && (c->waiting || replies_backlogged(c)))
		return false;
	if (c->waiting)
		return !(events & EPOLLRDHUP) || peer_has_more(c);
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		return conn_read(c);
	return true;
}

/*
 * The connection to close so that the first waiter can be served, or
 * NULL.  When every connection holding memory waits for more, none will
 * free any: the youngest frame gives way to the oldest (at once; its
 * sender gets no ack and resends).  fits() keeps that from happening (the
 * oldest frame can always grow), but a connection that finished a frame
 * keeps the part of its next one, which may take the room that the new
 * oldest frame needs; this rule ends such a wait.  Otherwise, once the
 * first waiter has waited stall_timeout, the connection holding part of a
 * frame that has been silent longest, if for stall_timeout: a sender that
 * stalls mid-frame (or a crowd of them) must not keep the others waiting.
 * A waiting connection is never silent: it is not read because of the
 * sink (it waits only with bytes to read), and its silence counts from
 * when it is read again.
 */
static Conn *
victim_for(const Conn *head, int64_t now, bool *deadlock)
{
	Conn	   *youngest = NULL,
			   *silent = NULL;

	*deadlock = true;
	for (int i = 0; i < n_conns; i++)
	{
		Conn	   *o = conns[i];

		if (o == head || o->fd < 0 || o->cap == 0)
			continue;
		if (!o->waiting)
			*deadlock = false;
		else if (youngest == NULL || served_before(youngest, o))
			youngest = o;
		if (!o->waiting && now - o->rx_ms >= g_cfg->stall_ms &&
			(silent == NULL || o->rx_ms < silent->rx_ms))
			silent = o;
	}
	if (*deadlock)
		return youngest;
	return now - head->wait_ms >= g_cfg->stall_ms ? silent : NULL;
}

/*
 * Closes connections (victim_for) until the first waiter can be served or
 * none is to be closed.  The time the sink read no socket at all (a
 * pause) does not count as silence.
 */
static void
evict_for_waiters(int64_t now)
{
	serve_waiters();
	while (n_waiting > 0)
	{
		Conn	   *head = first_waiter();
		bool		deadlock;
		Conn	   *victim = victim_for(head, now, &deadlock);

		if (victim == NULL)
			return;
		if (deadlock)
			logmsg("connection %d: its part of a frame (%zu bytes) gives way to an older frame: every connection holding memory waits for more, closing (not acknowledged)",
				   victim->fd, victim->len - victim->start);
		else
			logmsg("connection %d: held %zu bytes of a frame for %lld ms without a byte while others waited for buffer memory, closing (not acknowledged)",
				   victim->fd, victim->len - victim->start, (long long) (now - victim->rx_ms));
		conn_close(victim);
	}
}

/* After a pause of all reading: the silence it caused counts against no one */
static void
forgive_pause(int64_t now)
{
	for (int i = 0; i < n_conns; i++)
	{
		conns[i]->rx_ms = now;
		if (conns[i]->waiting)
			conns[i]->wait_ms = now;
	}
}

/* One readiness event */
static void
dispatch(struct epoll_event *ev)
{
	void	   *p = ev->data.ptr;
	Conn	   *c = p;

	if (p == &tag_tcp || p == &tag_unix)
		conn_accept(p == &tag_tcp ? listen_tcp : listen_unix);
	else if (p == &tag_wal)
		wal_progress();
	else if (p == &tag_fin)
		fin_progress();
	else if (c->fd >= 0 && !conn_event(c, ev->events))	/* not closed earlier */
		conn_close(c);
}

/* Runs the event loop until *stop is set; see fluent2arrow.h */
void
conn_loop(volatile int *stop, volatile int *reload, void (*on_reload) (void))
{
	int64_t		last_trunc = now_ms(),
				last_stats = now_ms();
	bool		paused = false;
	struct epoll_event evs[64];

	while (!*stop)
	{
		int			n;

		if (*reload)
		{
			*reload = 0;
			on_reload();
		}
		if (wal_backlog() > WAL_BACKLOG_MAX || output_pending() > FINISH_QUEUE_MAX)
		{
			/* paused: only the WAL and the finisher can move us on */
			struct pollfd pf[2] = {{.fd = wal_eventfd(), .events = POLLIN},
			{.fd = output_eventfd(), .events = POLLIN}};

			if (poll(pf, 2, 100) > 0 && (pf[0].revents & POLLIN))
				wal_progress();
			if (pf[1].revents & POLLIN)
				fin_progress();	/* else poll would not wait next time */
			sweep_closed();
			tick(&last_trunc, &last_stats);
			paused = true;
			continue;
		}
		if (paused)
			forgive_pause(now_ms());
		paused = false;
		n = epoll_wait(ep, evs, 64, 100);
		for (int i = 0; i < n; i++)
			dispatch(&evs[i]);
		evict_for_waiters(now_ms());
		sweep_closed();
		tick(&last_trunc, &last_stats);
	}
}

/* Waits for the WAL, sends the last acks, closes everything */
void
conn_close_all(void)
{
	wal_progress();
	for (int i = 0; i < n_conns; i++)
		if (conns[i]->fd >= 0)
			send_acks(conns[i], wal_durable_lsn());
	for (int i = 0; i < n_conns; i++)
		conn_close(conns[i]);
	sweep_closed();
	if (refusals > 0)
		logmsg("refusing connections: %s (%lu refused since the last such line)",
			   refusal_why, refusals);
	if (listen_tcp >= 0)
		close(listen_tcp);
	if (listen_unix >= 0)
	{
		close(listen_unix);
		unlink(g_cfg->unix_path);
	}
}
