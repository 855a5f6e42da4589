/*
 * warp_client.c
 *		The parts shared by the test clients of pg_warp_service (agg_client.c
 *		for AGG_RUN, scan_client.c for SCAN_RUN): building a request in a
 *		growing buffer, each file's identity and batch list, and the run
 *		itself over the service's UNIX-domain socket, with the join tables
 *		it probes built and loaded first (JOIN_LOAD).  Any failure of the
 *		client's own (a write, a file it cannot open, a closed connection)
 *		ends the program with exit code 2 and a message on stderr; an ERROR
 *		from the service is printed as "ERROR code message" and is a normal
 *		end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "warp_client.h"
#include "xpu_join.h"

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

/* ---------------------------------------------------------------- joins */

/* register 0 (r0), and a QUAL stage that passes every row to the JOIN stage */
int
wc_join_begin(XpuBuilder *b)
{
	int			acc = xpu_add_reg(b, XPU_T_BOOL, 0);

	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_CONST_BOOL, acc, 0, 0, 0, 1);
	return acc;
}

/*
 * The next join depth of joins, as codegen makes it (xpu/xpu_program.h):
 * under MASK_PUSH_TRUE r0, probe dimension dim with key register key,
 * update r0 for join type jt (XPU_JOIN_INNER or SEMI: a match; ANTI: none)
 * and load payload columns pay[0 .. n_pay - 1] (of types types[]) into new
 * registers regs[].  The first depth begins the JOIN stage.
 */
void
wc_join_depth(XpuBuilder *b, WcJoins *joins, WcDim dim, int key, int jt, int n_pay,
			  const int *pay, const XpuType *types, int *regs)
{
	int			d = joins->n;
	int			row = xpu_add_reg(b, XPU_T_INT8, 0);

	if (d >= WARP_MAX_JOINS)
		wc_die("too many join depths");
	joins->dims[joins->n++] = dim;
	if (d == 0)
		xpu_begin_stage(b, XPU_STAGE_JOIN);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, row, key, key, key, d | (1 << 8));
	xpu_add_instr(b, jt == XPU_JOIN_ANTI ? XPU_OP_IS_NULL : XPU_OP_IS_NOT_NULL, 0, row, 0, 0, 0);
	for (int i = 0; i < n_pay; i++)
	{
		regs[i] = xpu_add_reg(b, types[i], 0);
		xpu_add_instr(b, XPU_OP_JOIN_PAY, regs[i], row, 0, 0, d | (pay[i] << 8));
	}
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
}

/* the rows of the test dimension dim (warp_client.h) into a new builder */
static XpuJoinBuilder *
build_dim(WcDim dim, XpuType probe_type)
{
	enum {EVEN_ROWS = 1000, TEXT_ROWS = 50};
	XpuJoinSpec spec = {0};
	XpuValue	keys[EVEN_ROWS], pay[2 * EVEN_ROWS];
	uint8_t		key_nulls[EVEN_ROWS], pay_nulls[2 * EVEN_ROWS];
	char		text[EVEN_ROWS][16];
	XpuJoinBuilder *b;
	XpuError	err = {0};
	int			n = dim == WC_DIM_EVEN ? EVEN_ROWS : TEXT_ROWS;

	spec.n_keys = 1;
	spec.keys[0].type = dim == WC_DIM_EVEN ? XPU_T_INT8 : XPU_T_TEXT;
	spec.keys[0].probe_type = probe_type ? probe_type : spec.keys[0].type;
	spec.n_pay = dim == WC_DIM_EVEN ? 2 : 1;
	spec.pay_types[0] = dim == WC_DIM_EVEN ? XPU_T_INT8 : XPU_T_INT4;
	spec.pay_types[1] = XPU_T_TEXT;
	memset(pay, 0, sizeof(pay));
	for (int i = 0; i < n; i++)
	{
		key_nulls[i] = dim == WC_DIM_EVEN && i == EVEN_ROWS - 1;
		pay_nulls[i] = dim == WC_DIM_EVEN && i % 50 == 3;
		pay_nulls[n + i] = 0;
		if (dim == WC_DIM_EVEN)
		{
			keys[i].i = 2 * (int64_t) i;
			pay[i].i = i % 7;
			snprintf(text[i], sizeof(text[i]), "n%d", i % 5);
			pay[n + i].t = (XpuText) {text[i], (int32_t) strlen(text[i])};
		}
		else
		{
			snprintf(text[i], sizeof(text[i]), "c%d", i);
			keys[i].t = (XpuText) {text[i], (int32_t) strlen(text[i])};
			pay[i].i = 3 * i;
		}
	}
	if ((b = xpu_join_builder_create(&spec, &err)) == NULL ||
		!xpu_join_builder_add(b, n, keys, key_nulls, pay, pay_nulls, &err))
		wc_die(err.message);
	return b;
}

/*
 * the descriptor of a file holding dim's table (*len bytes), sealed, or
 * broken as fault says (warp_client.h)
 */
static int
dim_file(WcDim dim, XpuType probe_type, const char *fault, uint64_t *len)
{
	XpuJoinBuilder *b = build_dim(dim, probe_type);
	XpuError	err = {0};
	int			fd;
	uint8_t    *p;

	if ((*len = xpu_join_builder_layout(b, &err)) == 0)
		wc_die(err.message);
	if (strcmp(fault, "plainfile") == 0)
	{
		char		path[] = "/tmp/wc_join.XXXXXX";

		if ((fd = mkstemp(path)) >= 0)
			unlink(path);
	}
	else
		fd = memfd_create("wc_join", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, (off_t) *len) != 0)
		wc_die("could not make the join table's file");
	p = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		wc_die("could not map the join table's file");
	xpu_join_builder_write(b, p);
	xpu_join_builder_free(b);
	if (strcmp(fault, "corrupt") == 0)
	{
		const XpuJoinTable *t = (const XpuJoinTable *) p;

		/* the NULL-keyed row's number past the table's rows */
		if (t->n_null_keys == 0)
			wc_die("corrupt: the table has no NULL-keyed row");
		((uint32_t *) (p + t->null_rows_off))[0] = t->n_rows + 5;
	}
	munmap(p, *len);
	if (strcmp(fault, "unsealed") != 0 && strcmp(fault, "plainfile") != 0 &&
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
		wc_die("could not seal the join table's memfd");
	if (strcmp(fault, "short") == 0)
		*len += 4096;
	return fd;
}

/* sends JOIN_LOAD (req) with descriptor memfd as SCM_RIGHTS */
static void
send_join_load(int fd, int memfd, const WarpJoinLoad *req)
{
	uint8_t		buf[sizeof(WarpMsgHeader) + sizeof(WarpJoinLoad)];
	WarpMsgHeader h = {PGWARP_PROTO_MAGIC, PGWARP_PROTO_VERSION, WARP_MSG_JOIN_LOAD,
	sizeof(WarpJoinLoad), 0};
	struct iovec iov = {buf, sizeof(buf)};
	union
	{
		struct cmsghdr hdr;
		char		space[CMSG_SPACE(sizeof(int))];
	}			cbuf;
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
	.msg_control = cbuf.space, .msg_controllen = sizeof(cbuf.space)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), req, sizeof(*req));
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &memfd, sizeof(int));
	if (sendmsg(fd, &mh, 0) != (ssize_t) sizeof(buf))
		wc_die("sendmsg failed");
}

/* a connection to sock that said HELLO */
static int
wc_connect(const char *sock)
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
	return fd;
}

/*
 * loads the tables of joins on connection fd, their ids into ids[] (each
 * printed: "JOIN depth id"); 0 when the service refused one (its ERROR
 * printed)
 */
static int
load_joins(int fd, const WcJoins *joins, uint64_t *ids)
{
	const char *fault = joins->fault ? joins->fault : "";

	for (int d = 0; d < joins->n; d++)
	{
		WarpJoinLoad req = {0};
		WarpMsgHeader h;
		uint8_t    *p;
		int			memfd = dim_file(joins->dims[d], joins->probe_type[d],
									 d == 0 ? fault : "", &req.table_len);

		send_join_load(fd, memfd, &req);
		close(memfd);
		if (!recv_msg(fd, &h, &p))
			wc_die("connection closed before the JOIN_LOAD reply");
		if (h.type == WARP_MSG_ERROR)
		{
			const WarpErrorMsg *e = (const WarpErrorMsg *) p;

			printf("ERROR\t%u\t%s\n", e->code, e->message);
			free(p);
			return 0;
		}
		if (h.type != WARP_MSG_JOIN_LOAD || h.length != sizeof(WarpJoinLoaded))
			wc_die("no JOIN_LOAD reply");
		memcpy(&ids[d], p, 8);
		free(p);
		printf("JOIN\t%d\t%llu\n", d, (unsigned long long) ids[d]);
	}
	return 1;
}

/* waits until the service counts connection fd as its only one (STATUS) */
static void
wait_alone(int fd)
{
	for (int tries = 0; tries < 500; tries++)
	{
		WarpMsgHeader h;
		uint8_t    *p;
		uint32_t	conns;

		send_msg(fd, WARP_MSG_STATUS, NULL, 0);
		if (!recv_msg(fd, &h, &p) || h.type != WARP_MSG_STATUS)
			wc_die("no STATUS reply");
		conns = ((const WarpStatus *) p)->connections;
		free(p);
		if (conns == 1)
			return;
		usleep(10 * 1000);
	}
	wc_die("the other connection did not close");
}

/*
 * Connects to sock, says HELLO, loads the join tables of joins (NULL: none)
 * and writes their ids into req, sends req as a message of run_type and,
 * with cancel_ms > 0, CANCEL when no reply came within that many
 * milliseconds.  Then hands each reply of result_type to reply until it
 * says it was the last, or prints an ERROR reply.  Returns the exit code
 * (0).
 */
int
wc_run(const char *sock, int run_type, int result_type, const WcBuf *req,
	   const WcJoins *joins, int cancel_ms, WcReplyFn reply, void *arg)
{
	int			fd = wc_connect(sock);
	WarpMsgHeader h;
	uint8_t    *p;

	if (joins != NULL && joins->n > 0)
	{
		uint64_t	ids[WARP_MAX_JOINS];
		const char *fault = joins->fault ? joins->fault : "";

		if (strcmp(fault, "closed") == 0)
		{
			/* the tables of another connection, closed before the run */
			int			other = wc_connect(sock);

			if (!load_joins(other, joins, ids))
				return 0;
			close(other);
			wait_alone(fd);
		}
		else if (!load_joins(fd, joins, ids))
			return 0;
		if (strcmp(fault, "unknown") == 0)
			ids[0] ^= UINT64_C(0x5a5a5a5a00000001);
		memcpy(req->p + joins->ids_off, ids, 8 * joins->n);
	}
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
		if (last && joins != NULL && joins->hold_ms > 0)
		{
			printf("HELD\n");
			fflush(stdout);
			usleep(joins->hold_ms * 1000);
		}
		if (last)
		{
			close(fd);
			return 0;
		}
	}
	wc_die("connection closed before the last reply");
}
