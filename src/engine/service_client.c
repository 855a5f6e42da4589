/*-------------------------------------------------------------------------
 *
 * service_client.c
 *		The backend's side of the warp service protocol (xpu/protocol.h):
 *		connecting to the service, HELLO, requests, and
 *		pgwarp.service_status() and pgwarp.service_tasks(); the GPUs'
 *		description and self-test for device.c (DEVICES).
 *
 * Every wait for the service is a WaitLatchOrSocket() on the backend's latch,
 * followed by CHECK_FOR_INTERRUPTS(), so that a query cancel, a
 * statement_timeout or a terminate reaches a backend that waits for the
 * service at once; pg_warp.service_timeout bounds each exchange.  A service
 * that is not running (restarting after a crash, or not started because
 * pg_warp is not preloaded) is a clear error, never a hang.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "access/xact.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "pg_warp.h"
#include "engine/engine.h"
#include "xpu/protocol.h"

/* pg_warp.service_timeout: how long one exchange with the service may take */
int			pg_warp_service_timeout = 10000;

/* pg_warp.map_arrow_files: the service's CPU engine may map Arrow files */
bool		pg_warp_map_arrow_files = true;

/* an open connection to the service */
typedef struct ServiceConn
{
	int			fd;
	TimestampTz deadline;		/* of the exchange in progress */
} ServiceConn;

/* pg_warp_service_client_init: defines the client's settings */
void
pg_warp_service_client_init(void)
{
	DefineCustomIntVariable("pg_warp.service_timeout",
							"How long a backend waits for the pg_warp service.",
							"Bounds connecting to the service and each request; "
							"a query cancel or statement_timeout ends the wait sooner.",
							&pg_warp_service_timeout,
							10000, 1, INT_MAX,
							PGC_USERSET,
							GUC_UNIT_MS,
							NULL, NULL, NULL);
	DefineCustomBoolVariable("pg_warp.map_arrow_files",
							 "Lets the pg_warp service's CPU engine read Arrow files "
							 "through a mapping of them instead of copying their buffers.",
							 "Off: every buffer that a query reads is copied from the file.",
							 &pg_warp_map_arrow_files, true,
							 PGC_USERSET, 0, NULL, NULL, NULL);
}

/*
 * service_file_part: the WarpAggFile of an AGG_RUN or SCAN_RUN for file ef,
 * n_batches of whose record batches and n_cols chunk columns it reads
 */
WarpAggFile
service_file_part(const ArrowEngineFile *ef, uint32 n_batches, uint32 n_cols)
{
	WarpAggFile wf = {0};

	wf.dev = ef->dev;
	wf.ino = ef->ino;
	wf.size = ef->size;
	wf.mtime_ns = ef->mtime_ns;
	wf.path_len = (uint32) strlen(ef->path);
	wf.n_batches = n_batches;
	wf.n_cols = n_cols;
	wf.flags = pg_warp_map_arrow_files ? WARP_FILE_MAP : 0;
	return wf;
}

/* lost: the connection broke in the middle of an exchange */
static void
lost(const char *what) pg_attribute_noreturn();

static void
lost(const char *what)
{
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("lost the connection to the pg_warp service"),
			 errdetail("%s", what),
			 errhint("The service may have been restarted; retry the query, "
					 "and see the server log if this persists.")));
}

/*
 * wait_for
 *		Waits until the socket is ready for `event` (WL_SOCKET_READABLE or
 *		WL_SOCKET_WRITEABLE), serving interrupts; raises an error at the
 *		exchange's deadline.
 */
static void
wait_for(ServiceConn *conn, int event)
{
	for (;;)
	{
		long		remain = TimestampDifferenceMilliseconds(GetCurrentTimestamp(),
															 conn->deadline);
		int			rc;

		/* a deadline of DT_NOEND: wait an hour at a time */
		remain = Min(remain, 3600 * 1000L);

		if (remain <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("pg_warp service did not answer within %d ms",
							pg_warp_service_timeout),
					 errhint("The service may be overloaded or stuck; see the server log "
							 "and pg_warp.service_timeout.")));
		rc = WaitLatchOrSocket(MyLatch,
							   WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH | event,
							   conn->fd, remain, PG_WAIT_EXTENSION);
		if (rc & WL_LATCH_SET)
			ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (rc & event)
			return;
	}
}

/*
 * service_connect
 *		Connects to the service's socket in the data directory (the backend's
 *		working directory); raises "pg_warp service is not running" when
 *		nobody listens there.
 */
static void
service_connect(ServiceConn *conn)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};

	strlcpy(addr.sun_path, PGWARP_SOCKET_NAME, sizeof(addr.sun_path));
	conn->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (conn->fd < 0)
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not create a socket for the pg_warp service: %m")));
	for (;;)
	{
		if (connect(conn->fd, (struct sockaddr *) &addr, sizeof(addr)) == 0)
			return;
		if (errno != EAGAIN && errno != EINTR)
			break;
		/* the listen queue is full: the service is busy accepting; retry */
		if (GetCurrentTimestamp() >= conn->deadline)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 10, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	ereport(ERROR,
			(errcode(ERRCODE_CONNECTION_FAILURE),
			 errmsg("pg_warp service is not running"),
			 errdetail("Could not connect to \"%s\" in the data directory: %m.",
					   PGWARP_SOCKET_NAME),
			 errhint("The pg_warp supervisor restarts the service within seconds; "
					 "see the server log if this persists.")));
}

/* message_of: a message of `type` (header and payload), palloc'ed; *size its bytes */
static char *
message_of(WarpMsgType type, const void *payload, uint32 len, size_t *size)
{
	WarpMsgHeader hdr = {PGWARP_PROTO_MAGIC, PGWARP_PROTO_VERSION, type, len, 0};
	char	   *buf = palloc(sizeof(hdr) + len);

	memcpy(buf, &hdr, sizeof(hdr));
	if (len > 0)
		memcpy(buf + sizeof(hdr), payload, len);
	*size = sizeof(hdr) + len;
	return buf;
}

/*
 * send_from: sends message buf (size bytes) from byte off on; pass_fd, when
 * not -1, goes with its first byte (off 0) as SCM_RIGHTS ancillary data
 */
static void
send_from(ServiceConn *conn, const char *buf, size_t size, size_t off, int pass_fd)
{
	while (off < size)
	{
		ssize_t		n;

		if (off == 0 && pass_fd >= 0)
		{
			struct iovec iov = {(void *) buf, size};
			union
			{
				struct cmsghdr hdr;
				char		space[CMSG_SPACE(sizeof(int))];
			}			cbuf;
			struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cbuf.space, .msg_controllen = sizeof(cbuf.space)};
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);

			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
			n = sendmsg(conn->fd, &mh, MSG_NOSIGNAL);
		}
		else
			n = send(conn->fd, buf + off, size - off, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			wait_for(conn, WL_SOCKET_WRITEABLE);
		else if (n < 0)
			lost(strerror(errno));
		else
			off += n;
	}
}

/*
 * service_send_fd: sends one message; pass_fd, when not -1, goes with its
 * first byte as SCM_RIGHTS ancillary data (the service keeps it for the
 * message: a HEAP_RUN's memfd)
 */
static void
service_send_fd(ServiceConn *conn, WarpMsgType type, const void *payload, uint32 len,
				int pass_fd)
{
	size_t		size;
	char	   *buf = message_of(type, payload, len, &size);

	send_from(conn, buf, size, 0, pass_fd);
	pfree(buf);
}

/* service_send: sends one message */
static void
service_send(ServiceConn *conn, WarpMsgType type, const void *payload, uint32 len)
{
	service_send_fd(conn, type, payload, len, -1);
}

/* recv_exact: receives exactly len bytes */
static void
recv_exact(ServiceConn *conn, void *buf, size_t len)
{
	size_t		off = 0;

	while (off < len)
	{
		ssize_t		n = recv(conn->fd, (char *) buf + off, len - off, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			wait_for(conn, WL_SOCKET_READABLE);
		else if (n < 0)
			lost(strerror(errno));
		else if (n == 0)
			lost("The service closed the connection.");
		else
			off += n;
	}
}

/*
 * raise_service_error: an ERROR reply as a PostgreSQL error, with the
 * SQLSTATE of what went wrong in the service
 */
static void
raise_service_error(const WarpErrorMsg *err) pg_attribute_noreturn();

static void
raise_service_error(const WarpErrorMsg *err)
{
	switch ((WarpErrorCode) err->code)
	{
		case WARP_ERR_FILE_CHANGED:
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("%s", err->message),
					 errdetail("The Arrow file changed after the query opened it: its device, inode, size or modification time differs."),
					 errhint("Run the query again.")));
			break;
		case WARP_ERR_IO:
			ereport(ERROR,
					(errcode(ERRCODE_IO_ERROR),
					 errmsg("pg_warp service could not read a file: %s", err->message)));
			break;
		case WARP_ERR_BAD_FILE:
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("%s", err->message)));
			break;
		case WARP_ERR_OUT_OF_MEMORY:
			ereport(ERROR,
					(errcode(ERRCODE_OUT_OF_MEMORY),
					 errmsg("pg_warp service is out of memory: %s", err->message)));
			break;
		case WARP_ERR_CANCELED:
			ereport(ERROR,
					(errcode(ERRCODE_QUERY_CANCELED),
					 errmsg("pg_warp service cancelled the request: %s", err->message)));
			break;
		default:
			ereport(ERROR,
					(errcode(err->code == WARP_ERR_UNSUPPORTED ? ERRCODE_FEATURE_NOT_SUPPORTED
							 : ERRCODE_PROTOCOL_VIOLATION),
					 errmsg("pg_warp service refused the request: %s", err->message),
					 err->code == WARP_ERR_VERSION ?
					 errhint("The installed pg_warp_service and pg_warp.so differ; "
							 "restart PostgreSQL after installing pg_warp.") :
					 err->code == WARP_ERR_UNSUPPORTED && strcmp(err->message, "no GPU") == 0 ?
					 errhint("pg_warp.engine is \"gpu\" but the pg_warp service found no GPU "
							 "(see pgwarp.gpu_devices() and pgwarp.service_status()); "
							 "SET pg_warp.engine = auto runs the CPU engine.") : 0));
	}
	pg_unreachable();
}

/*
 * service_recv
 *		Receives the reply to a request: a message of `type` whose payload is
 *		exactly `len` bytes.  An ERROR reply is raised as an ERROR.
 */
static void
service_recv(ServiceConn *conn, WarpMsgType type, void *payload, uint32 len)
{
	WarpMsgHeader hdr;

	recv_exact(conn, &hdr, sizeof(hdr));
	if (hdr.magic != PGWARP_PROTO_MAGIC)
		lost("The service sent a message with a bad magic number.");
	if (hdr.version != PGWARP_PROTO_VERSION && hdr.type != WARP_MSG_ERROR)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("pg_warp service speaks protocol version %u, this library version %d",
						hdr.version, PGWARP_PROTO_VERSION),
				 errhint("The installed pg_warp_service and pg_warp.so differ; "
						 "restart PostgreSQL after installing pg_warp.")));
	if (hdr.type == WARP_MSG_ERROR && hdr.length == sizeof(WarpErrorMsg))
	{
		WarpErrorMsg err;

		recv_exact(conn, &err, sizeof(err));
		err.message[sizeof(err.message) - 1] = '\0';
		raise_service_error(&err);
	}
	if (hdr.type != type || hdr.length != len)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("Expected message type %d of %u bytes, received type %d of %u bytes.",
						   type, len, hdr.type, hdr.length)));
	recv_exact(conn, payload, len);
}

/*
 * service_recv_list
 *		Receives the reply to a request whose payload has a fixed head of
 *		`head` bytes and then entries of `entry` bytes: a message of `type`,
 *		its payload palloc'ed (*len bytes).  An ERROR reply is raised.
 */
static void *
service_recv_list(ServiceConn *conn, WarpMsgType type, uint32 head, uint32 entry,
				  uint32 *len)
{
	WarpMsgHeader hdr;
	void	   *payload;

	recv_exact(conn, &hdr, sizeof(hdr));
	if (hdr.magic != PGWARP_PROTO_MAGIC || hdr.length > PGWARP_MAX_PAYLOAD)
		lost("The service sent a malformed message.");
	if (hdr.type == WARP_MSG_ERROR && hdr.length == sizeof(WarpErrorMsg))
	{
		WarpErrorMsg err;

		recv_exact(conn, &err, sizeof(err));
		err.message[sizeof(err.message) - 1] = '\0';
		raise_service_error(&err);
	}
	if (hdr.type != type || hdr.length < head || (hdr.length - head) % entry != 0)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("Expected message type %d, received type %d of %u bytes.",
						   type, hdr.type, hdr.length)));
	payload = palloc(hdr.length);
	recv_exact(conn, payload, hdr.length);
	*len = hdr.length;
	return payload;
}

/*
 * service_request
 *		Sends a request and receives its reply (see service_recv), within
 *		pg_warp.service_timeout.
 */
static void
service_request(ServiceConn *conn, WarpMsgType type, const void *req, uint32 req_len,
				void *reply, uint32 reply_len)
{
	conn->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												 pg_warp_service_timeout);
	service_send(conn, type, req, req_len);
	service_recv(conn, type, reply, reply_len);
}

/*
 * service_open
 *		Connects to the service and says HELLO: conn->fd is then open (an
 *		external FD acquired), for service_run_end to close.  On error
 *		nothing is left open.
 */
static void
service_open(ServiceConn *conn)
{
	WarpHello	hello = {(uint32) MyProcPid, PGWARP_PROTO_VERSION};
	WarpHello	reply;

	if (!pg_warp_preloaded)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("pg_warp service is not available"),
				 errdetail("The service is started only when pg_warp is in shared_preload_libraries."),
				 errhint("Add pg_warp to shared_preload_libraries and restart PostgreSQL.")));
	if (!AcquireExternalFD())
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_RESOURCES),
				 errmsg("could not connect to the pg_warp service: too many open files")));
	conn->fd = -1;
	PG_TRY();
	{
		conn->deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													 pg_warp_service_timeout);
		service_connect(conn);
		service_request(conn, WARP_MSG_HELLO, &hello, sizeof(hello), &reply, sizeof(reply));
	}
	PG_CATCH();
	{
		if (conn->fd >= 0)
			close(conn->fd);
		ReleaseExternalFD();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * service_session
 *		Connects to the service, says HELLO and runs exchange(conn, arg): its
 *		requests and their replies; the connection is closed on every path,
 *		errors included.
 */
static void
service_session(void (*exchange) (ServiceConn *conn, void *arg), void *arg)
{
	ServiceConn *conn = palloc0(sizeof(ServiceConn));	/* survives longjmp */

	service_open(conn);
	PG_TRY();
	{
		exchange(conn, arg);
	}
	PG_FINALLY();
	{
		service_run_end(conn->fd);
	}
	PG_END_TRY();
}

/* what service_fetch_status asks for */
typedef struct StatusReply
{
	WarpStatus *st;
	WarpTaskList **tasks;
} StatusReply;

/* exchange_status: STATUS and TASKS into a StatusReply */
static void
exchange_status(ServiceConn *conn, void *arg)
{
	StatusReply *r = arg;
	uint32		len;

	service_request(conn, WARP_MSG_STATUS, NULL, 0, r->st, sizeof(*r->st));
	service_send(conn, WARP_MSG_TASKS, NULL, 0);
	*r->tasks = service_recv_list(conn, WARP_MSG_TASKS, sizeof(WarpTaskList),
								  sizeof(WarpTaskInfo), &len);
}

/*
 * service_fetch_status
 *		Asks the service for its STATUS and its TASKS (*tasks: the palloc'ed
 *		WarpTaskList and its entries).
 */
static void
service_fetch_status(WarpStatus *st, WarpTaskList **tasks)
{
	StatusReply r = {st, tasks};

	service_session(exchange_status, &r);
}

/* exchange_cache_info: CACHE_INFO into *(WarpCacheList **) arg */
static void
exchange_cache_info(ServiceConn *conn, void *arg)
{
	WarpCacheList *list;
	uint32		len;

	service_send(conn, WARP_MSG_CACHE_INFO, NULL, 0);
	list = service_recv_list(conn, WARP_MSG_CACHE_INFO, sizeof(WarpCacheList),
							 sizeof(WarpCacheInfo), &len);
	if (list->n_entries != (len - sizeof(WarpCacheList)) / sizeof(WarpCacheInfo))
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("pg_warp service sent a malformed CACHE_INFO reply")));
	*(WarpCacheList **) arg = list;
}

/*
 * service_cache_info
 *		What the service's GPU column caches hold (CACHE_INFO): the palloc'ed
 *		WarpCacheList and its entries.
 */
WarpCacheList *
service_cache_info(void)
{
	WarpCacheList *list = NULL;

	service_session(exchange_cache_info, &list);
	return list;
}

/* exchange_cache_drop: CACHE_DROP into *(WarpCacheDropped *) arg */
static void
exchange_cache_drop(ServiceConn *conn, void *arg)
{
	service_request(conn, WARP_MSG_CACHE_DROP, NULL, 0, arg, sizeof(WarpCacheDropped));
}

/*
 * service_cache_drop
 *		Empties the service's GPU column caches and the join tables it keeps
 *		for later queries (CACHE_DROP); *out: what left them.
 */
void
service_cache_drop(WarpCacheDropped *out)
{
	service_session(exchange_cache_drop, out);
}

/* what service_devices asks: the request, and where its reply goes */
typedef struct DevicesExchange
{
	WarpDevicesRequest *req;	/* followed by the path */
	WarpDevices *reply;
} DevicesExchange;

/* exchange_devices: DEVICES */
static void
exchange_devices(ServiceConn *conn, void *arg)
{
	DevicesExchange *x = arg;
	uint32		len;

	service_send(conn, WARP_MSG_DEVICES, x->req, sizeof(*x->req) + x->req->path_len);
	x->reply = service_recv_list(conn, WARP_MSG_DEVICES, sizeof(WarpDevices),
								 sizeof(WarpDeviceDetail), &len);
	if (x->reply->n_devices != (len - sizeof(WarpDevices)) / sizeof(WarpDeviceDetail))
		lost("The service sent a malformed DEVICES reply.");
}

/*
 * service_devices
 *		Asks the service for its GPUs (DEVICES), and with selftest_path (a
 *		fatbin) for the self-test of that code on each of them: the reply,
 *		palloc'ed, a WarpDevices and its WarpDeviceDetail entries.  Raises
 *		the errors of service_status (no service, no answer).
 */
WarpDevices *
service_devices(const char *selftest_path)
{
	uint32		path_len = selftest_path ? strlen(selftest_path) : 0;
	DevicesExchange x = {palloc0(sizeof(WarpDevicesRequest) + path_len), NULL};

	x.req->flags = selftest_path ? WARP_DEVICES_SELFTEST : 0;
	x.req->path_len = path_len;
	memcpy(x.req + 1, selftest_path, path_len);
	service_session(exchange_devices, &x);
	return x.reply;
}

/*
 * service_caught
 *		In the PG_CATCH of a request to the service: its error, copied into
 *		cxt and flushed, for the caller to report or drop when the service
 *		could not answer.  A cancel or a shutdown is re-thrown.
 */
ErrorData *
service_caught(MemoryContext cxt)
{
	ErrorData  *e;

	MemoryContextSwitchTo(cxt);
	e = CopyErrorData();
	if (e->sqlerrcode == ERRCODE_QUERY_CANCELED || e->sqlerrcode == ERRCODE_ADMIN_SHUTDOWN)
		PG_RE_THROW();
	FlushErrorState();
	return e;
}

/*
 * service_engine_gpu
 *		Whether the service runs its work on a GPU (its STATUS), asked once
 *		per backend: for the planner, which offers some plans only where
 *		they run on a GPU.  False, and asked again next time, when the
 *		service cannot be reached.
 */
bool
service_engine_gpu(void)
{
	static int	known = -1;
	MemoryContext cxt = CurrentMemoryContext;
	WarpStatus	st;
	WarpTaskList *tasks;

	if (known >= 0)
		return known == 1;
	PG_TRY();
	{
		service_fetch_status(&st, &tasks);
		known = st.engine == WARP_ENGINE_GPU ? 1 : 0;
	}
	PG_CATCH();
	{
		/* no service (not up yet, gone): no GPU known; a cancel stays one */
		FreeErrorData(service_caught(cxt));
	}
	PG_END_TRY();
	return known == 1;
}

/* ---------------- long requests (AGG_RUN) ---------------- */

/*
 * The connection of this backend's last run whose replies all came, kept
 * for its next run (service_run_keep): the next query's run skips the
 * connect and the HELLO round trip.  A run that passes a descriptor does
 * not take it.  Before it is used a poll must find it quiet: a connection
 * the service closed meanwhile (a restart) reads as EOF, and is replaced
 * by a new one.
 */
static int	run_spare = -1;

/* service_run_keep: connection fd of a run whose last reply came, kept or closed */
void
service_run_keep(int fd)
{
	if (run_spare < 0)
		run_spare = fd;
	else
		service_run_end(fd);
}

/*
 * spare_send: sends the request on the kept connection, which is then
 * given up; its descriptor, or -1 (none kept, the service closed it, or the
 * send failed at once: the caller connects anew)
 */
static int
spare_send(WarpMsgType type, const void *req, uint32 len)
{
	ServiceConn conn = {run_spare, DT_NOEND};
	struct pollfd p = {run_spare, POLLIN, 0};
	size_t		size;
	char	   *buf;
	ssize_t		n;

	run_spare = -1;
	if (conn.fd < 0)
		return -1;
	buf = message_of(type, req, len, &size);
	/* readable when idle: EOF (the service closed it) or a stray message */
	if (poll(&p, 1, 0) != 0 || (n = send(conn.fd, buf, size, MSG_NOSIGNAL | MSG_DONTWAIT)) <= 0)
	{
		pfree(buf);
		service_run_end(conn.fd);
		return -1;
	}
	/* the rest of a request longer than the socket takes at once */
	PG_TRY();
	{
		send_from(&conn, buf, size, (size_t) n, -1);
	}
	PG_CATCH();
	{
		service_run_end(conn.fd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	pfree(buf);
	return conn.fd;
}

/*
 * service_run_begin
 *		Connects, says HELLO and sends a request whose replies come later
 *		(service_run_next); returns the connection's descriptor, which the
 *		caller must give to service_run_end on every path (a memory context
 *		callback does: see gpu_preagg.c).  Closing the connection before the
 *		last reply cancels the request in the service.
 */
int
service_run_begin(WarpMsgType type, const void *req, uint32 len)
{
	return service_run_begin_fd(type, req, len, -1);
}

/*
 * service_run_begin_fd: service_run_begin that passes descriptor pass_fd
 * (when not -1) with the request (HEAP_RUN's memfd)
 */
int
service_run_begin_fd(WarpMsgType type, const void *req, uint32 len, int pass_fd)
{
	ServiceConn conn;

	if (pass_fd < 0 && (conn.fd = spare_send(type, req, len)) >= 0)
		return conn.fd;
	service_open(&conn);
	PG_TRY();
	{
		service_send_fd(&conn, type, req, len, pass_fd);
	}
	PG_CATCH();
	{
		service_run_end(conn.fd);
		PG_RE_THROW();
	}
	PG_END_TRY();
	return conn.fd;
}

/*
 * service_run_next
 *		The next reply to the request of connection fd: a message of `type`,
 *		its payload palloc'ed (*len bytes, at most PGWARP_MAX_PAYLOAD).  The
 *		wait has no deadline of its own (a run takes as long as its data
 *		needs); a query cancel or statement_timeout ends it.  An ERROR reply
 *		is raised.
 */
void *
service_run_next(int fd, WarpMsgType type, uint32 *len)
{
	uint32		got;
	void	   *payload = service_run_next_any(fd, &got, len);

	if (got != type)
		ereport(ERROR,
				(errcode(ERRCODE_PROTOCOL_VIOLATION),
				 errmsg("unexpected reply from the pg_warp service"),
				 errdetail("Expected message type %d, received type %u of %u bytes.",
						   type, got, *len)));
	return payload;
}

/*
 * service_run_next_any: service_run_next for a reply of any type other
 * than ERROR (raised); *type is its type
 */
void *
service_run_next_any(int fd, uint32 *type, uint32 *len)
{
	ServiceConn conn = {fd, DT_NOEND};
	WarpMsgHeader hdr;
	void	   *payload;

	recv_exact(&conn, &hdr, sizeof(hdr));
	if (hdr.magic != PGWARP_PROTO_MAGIC || hdr.length > PGWARP_MAX_PAYLOAD)
		lost("The service sent a malformed message.");
	if (hdr.type == WARP_MSG_ERROR && hdr.length == sizeof(WarpErrorMsg))
	{
		WarpErrorMsg err;

		recv_exact(&conn, &err, sizeof(err));
		err.message[sizeof(err.message) - 1] = '\0';
		raise_service_error(&err);
	}
	payload = palloc(Max(hdr.length, 1));
	recv_exact(&conn, payload, hdr.length);
	*type = hdr.type;
	*len = hdr.length;
	return payload;
}

/*
 * service_run_send: sends one more message on connection fd of
 * service_run_begin: a part of a long request (HEAP_CHUNK, HEAP_END), or
 * another request once the replies of the one before have all been
 * received (SCAN_RUN); a cancel or statement_timeout ends the wait
 */
void
service_run_send(int fd, WarpMsgType type, const void *payload, uint32 len)
{
	ServiceConn conn = {fd, DT_NOEND};

	service_send(&conn, type, payload, len);
}

/* service_run_end: closes a connection of service_run_begin */
void
service_run_end(int fd)
{
	close(fd);
	ReleaseExternalFD();
}

/*
 * The join tables of this backend's query (JOIN_LOAD) live in the service
 * while the connection that loaded them is open: join_fd, kept until
 * service_join_release_all, which the transaction callback calls at the
 * end of the transaction (an error included); the node that loaded a table
 * drops it when it ends (service_join_drop), so that a loop of queries in
 * one transaction holds one query's tables at a time.
 */
static int	join_fd = -1;
static bool join_callback_registered;

/*
 * JOIN_DROPs sent on join_fd whose replies are not read yet: a node's end
 * does not wait for them (one round trip a join depth less a query); they
 * are read before the connection's next exchange, or go with it.
 */
static int	join_drops_unread;

static void
join_xact_callback(XactEvent event, void *arg)
{
	service_join_release_all();
}

/* the join connection, opened on first use */
static ServiceConn
service_join_conn(void)
{
	ServiceConn conn;

	if (!join_callback_registered)
	{
		RegisterXactCallback(join_xact_callback, NULL);
		join_callback_registered = true;
	}
	if (join_fd < 0)
	{
		service_open(&conn);
		join_fd = conn.fd;
		join_drops_unread = 0;
	}
	conn.fd = join_fd;
	conn.deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), pg_warp_service_timeout);
	PG_TRY();
	{
		for (; join_drops_unread > 0; join_drops_unread--)
		{
			WarpJoinDrop reply;

			service_recv(&conn, WARP_MSG_JOIN_DROP, &reply, sizeof(reply));
		}
	}
	PG_CATCH();
	{
		service_join_release_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
	return conn;
}

/*
 * service_join_load
 *		Loads the join table in memfd (len bytes at offset 0, sealed: see
 *		WarpJoinLoad in xpu/protocol.h) into the service over this backend's
 *		join connection; *loaded gets its join id for the requests of this
 *		transaction.  With key and version (WARP_JOIN_DIGEST bytes each), the
 *		service also keeps it for later queries (service_join_find).  A
 *		refused table raises an ERROR (the connection, and the tables loaded
 *		before, are dropped then).  The memfd stays the caller's.
 */
void
service_join_load(int memfd, uint64 len, const uint8 *key, const uint8 *version,
				  WarpJoinLoaded *loaded)
{
	ServiceConn conn = service_join_conn();
	WarpJoinLoad req = {0};

	req.table_len = len;
	if (key != NULL)
	{
		req.flags = WARP_JOIN_CACHE;
		memcpy(req.key, key, WARP_JOIN_DIGEST);
		memcpy(req.version, version, WARP_JOIN_DIGEST);
	}
	PG_TRY();
	{
		service_send_fd(&conn, WARP_MSG_JOIN_LOAD, &req, sizeof(req), memfd);
		service_recv(&conn, WARP_MSG_JOIN_LOAD, loaded, sizeof(*loaded));
	}
	PG_CATCH();
	{
		service_join_release_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * service_join_find
 *		The table an earlier query loaded with key as of version, into
 *		*found (join_id 0: none), held for this transaction as a loaded one
 */
void
service_join_find(const uint8 *key, const uint8 *version, WarpJoinLoaded *found)
{
	ServiceConn conn = service_join_conn();
	WarpJoinFind req;

	memcpy(req.key, key, WARP_JOIN_DIGEST);
	memcpy(req.version, version, WARP_JOIN_DIGEST);
	PG_TRY();
	{
		service_send(&conn, WARP_MSG_JOIN_FIND, &req, sizeof(req));
		service_recv(&conn, WARP_MSG_JOIN_FIND, found, sizeof(*found));
	}
	PG_CATCH();
	{
		service_join_release_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * service_join_drop
 *		This backend is done with table join_id (the node that loaded or
 *		found it ended): the service drops it unless a run holds it or it is
 *		kept.  Nothing when the join connection is closed (its ids went with
 *		it) or the id is not this connection's (a parallel worker's copy of
 *		the leader's).  The reply is not waited for: the service serves a
 *		connection's messages in order, so a later FIND or LOAD on it comes
 *		after the drop.
 */
void
service_join_drop(uint64 join_id)
{
	ServiceConn conn;
	WarpJoinDrop req = {join_id};

	if (join_fd < 0 || join_id == 0)
		return;
	conn = service_join_conn();
	PG_TRY();
	{
		/* its reply is read before the next exchange (join_drops_unread) */
		service_send(&conn, WARP_MSG_JOIN_DROP, &req, sizeof(req));
		join_drops_unread++;
	}
	PG_CATCH();
	{
		service_join_release_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * service_join_release_all
 *		Closes the join connection: the service drops this backend's join
 *		ids (a run that still holds a table keeps it until it ends).
 */
void
service_join_release_all(void)
{
	if (join_fd < 0)
		return;
	service_run_end(join_fd);
	join_fd = -1;
	join_drops_unread = 0;
}

PG_FUNCTION_INFO_V1(pg_warp_service_status);

/* a Unix-epoch microsecond time as a timestamptz */
static TimestampTz
unix_us_to_timestamptz(int64 us)
{
	return us - ((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY);
}

/*
 * pgwarp.service_status() returns record
 *		One row about the running service: its pid, start and uptime, the
 *		protocol version, the engine ("gpu" or "cpu only", with why), its
 *		devices, the memory it holds, its running tasks, its connections,
 *		its queued tasks, its limit of running tasks, and the Arrow file
 *		pages it keeps registered for the GPUs and has queued to be.
 */
Datum
pg_warp_service_status(PG_FUNCTION_ARGS)
{
	WarpStatus	st;
	WarpTaskList *tasks;
	TupleDesc	tupdesc;
	Datum		values[15];
	bool		nulls[15] = {0};
	Datum	   *names;
	Interval   *uptime;
	uint32		n_dev;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	service_fetch_status(&st, &tasks);

	n_dev = Min(st.n_devices, WARP_MAX_DEVICES);
	names = palloc(sizeof(Datum) * (n_dev + 1));
	for (uint32 i = 0; i < n_dev; i++)
	{
		st.devices[i].name[sizeof(st.devices[i].name) - 1] = '\0';
		names[i] = CStringGetTextDatum(st.devices[i].name);
	}
	st.engine_detail[sizeof(st.engine_detail) - 1] = '\0';
	uptime = palloc0(sizeof(Interval));
	uptime->time = st.uptime_us;

	values[0] = Int32GetDatum((int32) st.service_pid);
	values[1] = TimestampTzGetDatum(unix_us_to_timestamptz(st.started_at_us));
	values[2] = IntervalPGetDatum(uptime);
	values[3] = Int32GetDatum((int32) st.protocol_version);
	values[4] = CStringGetTextDatum(st.engine == WARP_ENGINE_GPU ? "gpu" : "cpu only");
	values[5] = CStringGetTextDatum(st.engine_detail);
	values[6] = Int32GetDatum((int32) n_dev);
	values[7] = PointerGetDatum(construct_array(names, n_dev, TEXTOID, -1, false, TYPALIGN_INT));
	values[8] = Int64GetDatum((int64) st.memory_in_use);
	values[9] = Int32GetDatum((int32) st.running_tasks);
	values[10] = Int32GetDatum((int32) st.connections);
	values[11] = Int32GetDatum((int32) tasks->n_queued);
	values[12] = Int32GetDatum((int32) tasks->max_async_tasks);
	values[13] = Int64GetDatum((int64) st.files_pinned);
	values[14] = Int64GetDatum((int64) st.files_to_pin);
	tupdesc = BlessTupleDesc(tupdesc);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

PG_FUNCTION_INFO_V1(pg_warp_service_tasks);

/*
 * pgwarp.service_tasks() returns setof record
 *		One row per run of the service: running ones (oldest first), then
 *		queued ones in the order they will run: the backend's pid (NULL when
 *		its connection closed and the run is stopping), the kind, the state,
 *		the queue position, the rows read so far and since when it runs or
 *		waits.
 */
Datum
pg_warp_service_tasks(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	WarpStatus	st;
	WarpTaskList *tasks;
	const WarpTaskInfo *e;

	InitMaterializedSRF(fcinfo, 0);
	service_fetch_status(&st, &tasks);
	e = (const WarpTaskInfo *) (tasks + 1);
	for (uint32 i = 0; i < tasks->n_entries; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {0};

		values[0] = Int32GetDatum((int32) e[i].backend_pid);
		nulls[0] = e[i].backend_pid == 0;
		values[1] = CStringGetTextDatum(e[i].kind == WARP_TASK_AGG ? "aggregate" :
											 e[i].kind == WARP_TASK_SCAN ? "scan" : "?");
		values[2] = CStringGetTextDatum(e[i].state == WARP_TASK_QUEUED ? "queued" : "running");
		values[3] = Int32GetDatum((int32) e[i].queue_position);
		nulls[3] = e[i].state != WARP_TASK_QUEUED;
		values[4] = Int64GetDatum((int64) e[i].rows_done);
		values[5] = TimestampTzGetDatum(unix_us_to_timestamptz(e[i].since_us));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
