/*
 * warp_client.c
 *		The parts shared by the test clients of pg_warp_service (agg_client.c
 *		for AGG_RUN, scan_client.c for SCAN_RUN): building a request in a
 *		growing buffer, each file's identity and batch list, and the run
 *		itself over the service's UNIX-domain socket.  Any failure of the
 *		client's own (a write, a file it cannot open, a closed connection)
 *		ends the program with exit code 2 and a message on stderr; an ERROR
 *		from the service is printed as "ERROR code message" and is a normal
 *		end.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "warp_client.h"

/* prints "PROGRAM: msg" on stderr and exits with code 2 */
void
wc_die(const char *msg)
{
	fprintf(stderr, "%s: %s\n", program_invocation_short_name, msg);
	exit(2);
}

/*
 * Appends n bytes of data (none when n is 0) at the next multiple of align
 * (a power of two), zeroing the padding; returns where they went.
 */
void *
wc_put(WcBuf *b, const void *data, size_t n, size_t align)
{
	size_t		off = (b->len + align - 1) & ~(align - 1);

	if (off + n > b->cap)
	{
		b->cap = (off + n) * 2 + 4096;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			wc_die("out of memory");
	}
	memset(b->p + b->len, 0, off - b->len);
	if (n)
		memcpy(b->p + off, data, n);
	b->len = off + n;
	return b->p + off;
}

/*
 * Appends the head of file path's part of a run request: its WarpAggFile
 * (identity, n_batches, n_cols), its path, and every record batch's index,
 * then aligns to 8.  Returns the open file: the caller appends the n_cols
 * field indexes and closes it.
 */
ArrowFile *
wc_put_file_head(WcBuf *b, const char *path, uint32_t n_cols)
{
	struct stat st;
	ArrowFile  *f;
	ArrowError	err;
	WarpAggFile wf = {0};

	if (stat(path, &st) != 0 || arrow_file_open(path, NULL, &f, &err) != ARROW_OK)
		wc_die(path);
	wf.dev = st.st_dev;
	wf.ino = st.st_ino;
	wf.size = st.st_size;
	wf.mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	wf.path_len = strlen(path);
	wf.n_batches = f->n_batches;
	wf.n_cols = n_cols;
	wc_put(b, &wf, sizeof(wf), 8);
	wc_put(b, path, wf.path_len, 8);
	wc_put(b, NULL, 0, 8);
	for (int i = 0; i < f->n_batches; i++)
		wc_put(b, &i, 4, 4);
	wc_put(b, NULL, 0, 8);
	return f;
}

/* sends one message (header and len bytes of payload) */
static void
send_msg(int fd, int type, const void *payload, uint32_t len)
{
	WarpMsgHeader h = {PGWARP_PROTO_MAGIC, PGWARP_PROTO_VERSION, (uint16_t) type, len, 0};

	if (write(fd, &h, sizeof(h)) != sizeof(h) ||
		(len && write(fd, payload, len) != (ssize_t) len))
		wc_die("write failed");
}

/* reads exactly n bytes; 0 at end of stream or on an error */
static int
read_all(int fd, void *p, size_t n)
{
	while (n > 0)
	{
		ssize_t		r = read(fd, p, n);

		if (r <= 0)
			return 0;
		p = (char *) p + r;
		n -= r;
	}
	return 1;
}

/* one message into *payload (malloc'ed, 8 bytes to spare); 0 at end of stream */
static int
recv_msg(int fd, WarpMsgHeader *h, uint8_t **payload)
{
	if (!read_all(fd, h, sizeof(*h)))
		return 0;
	if ((*payload = malloc(h->length + 8)) == NULL)
		wc_die("out of memory");
	return read_all(fd, *payload, h->length);
}

/*
 * Connects to sock, says HELLO, sends req as a message of run_type and, with
 * cancel_ms > 0, CANCEL when no reply came within that many milliseconds.
 * Then hands each reply of result_type to reply until it says it was the
 * last, or prints an ERROR reply.  Returns the exit code (0).
 */
int
wc_run(const char *sock, int run_type, int result_type, const WcBuf *req, int cancel_ms,
	   WcReplyFn reply, void *arg)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int			fd = socket(AF_UNIX, SOCK_STREAM, 0);
	WarpHello	hello = {(uint32_t) getpid(), PGWARP_PROTO_VERSION};
	WarpMsgHeader h;
	uint8_t    *p;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock);
	if (connect(fd, (struct sockaddr *) &addr, sizeof(addr)) != 0)
		wc_die("could not connect");
	send_msg(fd, WARP_MSG_HELLO, &hello, sizeof(hello));
	if (!recv_msg(fd, &h, &p) || h.type != WARP_MSG_HELLO)
		wc_die("no HELLO");
	free(p);
	send_msg(fd, run_type, req->p, req->len);
	if (cancel_ms > 0)
	{
		struct pollfd pfd = {fd, POLLIN, 0};

		if (poll(&pfd, 1, cancel_ms) == 0)
			send_msg(fd, WARP_MSG_CANCEL, NULL, 0);
	}
	while (recv_msg(fd, &h, &p))
	{
		int			last = 0;

		if (h.type == WARP_MSG_ERROR)
		{
			const WarpErrorMsg *e = (const WarpErrorMsg *) p;

			printf("ERROR\t%u\t%s\n", e->code, e->message);
			last = 1;
		}
		else if (h.type == result_type)
			last = reply(arg, &h, p);
		free(p);
		if (last)
		{
			close(fd);
			return 0;
		}
	}
	wc_die("connection closed before the last reply");
}
