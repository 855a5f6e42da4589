/*-------------------------------------------------------------------------
 *
 * protocol.h
 *		The messages between a PostgreSQL backend
 *		(src/engine/service_client.c) and the warp service (src/service/):
 *		plain C, no PostgreSQL header, so that both sides include the same
 *		definitions.
 *
 * The transport is a UNIX stream socket named PGWARP_SOCKET_NAME in the data
 * directory (mode 0600; the service refuses peers of another uid).  Every
 * message is a WarpMsgHeader followed by `length` bytes of payload whose
 * layout the message type fixes.  Both ends run on one host, so integers are
 * in the host's byte order (little-endian on every platform pg_warp builds
 * for); structures use fixed-width fields with explicit padding, checked by
 * the static assertions below, so that their layout never depends on the
 * compiler.
 *
 * A session: the backend connects and sends HELLO (its pid); the service
 * answers HELLO (its pid and protocol version) or ERROR (version mismatch,
 * after which it closes the connection).  Any later request gets exactly one
 * reply, of the request's type or ERROR.  doc/service.md describes this for
 * users, doc/engine-design.md (section 5) the query messages to come.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_PROTOCOL_H
#define XPU_PROTOCOL_H

#include <stdint.h>

#define PGWARP_SOCKET_NAME		"pg_warp.sock"
#define PGWARP_PROTO_MAGIC		0x50524157u		/* "WARP" in memory */
#define PGWARP_PROTO_VERSION	11

/* the largest payload either side accepts; longer messages are refused */
#define PGWARP_MAX_PAYLOAD		(1024 * 1024)

#ifdef __cplusplus
#define WARP_STATIC_ASSERT(cond, msg)	static_assert(cond, msg)
#else
#define WARP_STATIC_ASSERT(cond, msg)	_Static_assert(cond, msg)
#endif

typedef struct WarpMsgHeader
{
	uint32_t	magic;			/* PGWARP_PROTO_MAGIC */
	uint16_t	version;		/* PGWARP_PROTO_VERSION of the sender */
	uint16_t	type;			/* WarpMsgType */
	uint32_t	length;			/* payload bytes after this header */
	uint32_t	reserved;		/* zero */
} WarpMsgHeader;

WARP_STATIC_ASSERT(sizeof(WarpMsgHeader) == 16, "WarpMsgHeader layout");

typedef enum WarpMsgType
{
	WARP_MSG_HELLO = 1,			/* both ways: WarpHello */
	WARP_MSG_STATUS = 2,		/* request: no payload; reply: WarpStatus */
	WARP_MSG_ERROR = 3,			/* service -> backend: WarpErrorMsg */

	/*
	 * CANCEL (no payload): stop the run in progress on this connection.
	 * Numbers 16 to 19 and 21 are not used: the service answers them as
	 * any unknown type.
	 */
	WARP_MSG_CANCEL = 20,

	/*
	 * GpuPreAgg over Arrow files: the backend sends AGG_RUN (WarpAggRequest
	 * and what follows it); the service answers one or more AGG_RESULT
	 * messages, the last with WARP_AGG_LAST, or ERROR.  While a run is in
	 * progress the backend may send only CANCEL (no payload); closing the
	 * connection cancels too.  A cancelled run ends with ERROR
	 * (WARP_ERR_CANCELED).
	 */
	WARP_MSG_AGG_RUN = 22,
	WARP_MSG_AGG_RESULT = 23,

	/*
	 * GpuPreAgg over a heap table (see WarpHeapRequest): HEAP_RUN carries the
	 * request and, as SCM_RIGHTS ancillary data, the memfd of the chunk
	 * ring; then the backend sends HEAP_CHUNK (WarpHeapChunk) for each slot
	 * it filled and HEAP_END (no payload) after the last, and the service
	 * answers HEAP_DONE (WarpHeapChunk) for each slot it no longer reads,
	 * every HEAP_DONE before the run's AGG_RESULT messages (as for
	 * AGG_RUN) or ERROR.  The backend refills a slot only after its
	 * HEAP_DONE.  A run may end (FALLBACK, error) before HEAP_END: HEAP_CHUNK
	 * and HEAP_END that cross its end are ignored.
	 *
	 * GpuScan over a heap table is a HEAP_RUN with WARP_HEAP_SCAN (no keys,
	 * no aggregates, a qual program): each HEAP_DONE then carries the
	 * chunk's pass bitmaps (WarpHeapPass), sent once the chunk is filtered,
	 * and the backend returns the passing tuples from its own copy of the
	 * pages before it refills the slot; the last reply is one AGG_RESULT
	 * with WARP_AGG_LAST and no groups (the counters).
	 */
	WARP_MSG_HEAP_RUN = 24,
	WARP_MSG_HEAP_CHUNK = 25,
	WARP_MSG_HEAP_DONE = 26,
	WARP_MSG_HEAP_END = 27,

	/*
	 * GpuScan over Arrow files: the backend sends SCAN_RUN (WarpScanRequest
	 * and what follows it); the service answers SCAN_RESULT messages, one
	 * block of rows each, the last with WARP_SCAN_LAST, or ERROR.  CANCEL
	 * and closing the connection work as for AGG_RUN.  After the last
	 * reply the connection may carry another SCAN_RUN.
	 */
	WARP_MSG_SCAN_RUN = 28,
	WARP_MSG_SCAN_RESULT = 29,

	/*
	 * TASKS: request without payload; the reply is a WarpTaskList: the
	 * runs executing and those waiting for admission (at most
	 * max_async_tasks execute at once; the others wait, first come first
	 * served, and a waiting run is cancelled as a running one is).
	 */
	WARP_MSG_TASKS = 30,

	/*
	 * DEVICES: the GPUs the service owns (pgwarp.gpu_devices()) and, with
	 * WARP_DEVICES_SELFTEST, the self-test of GPU code on each of them
	 * (pgwarp.gpu_selftest()); see WarpDevicesRequest.
	 */
	WARP_MSG_DEVICES = 31,

	/*
	 * SHARE_OPEN: the leader of a parallel query opens the query's shared
	 * run (WarpShareOpen) before its workers start; the service answers
	 * SHARE_OPEN with the same payload, or ERROR.  The shared run lives
	 * until this connection closes.  The participants' HEAP_RUNs
	 * (WARP_SHARE_PART) leave their groups in it, and one AGG_RUN without
	 * files (WARP_SHARE_FINISH) takes them all back, merged: see
	 * WarpAggRequest.
	 */
	WARP_MSG_SHARE_OPEN = 32,

	/*
	 * JOIN_LOAD: the backend hands the service the inner table of one join
	 * depth (WarpJoinLoad, with a sealed memfd as SCM_RIGHTS ancillary data
	 * holding an XpuJoinTable, xpu/xpu_join.h, at offset 0); the service
	 * answers JOIN_LOAD (WarpJoinLoaded: the table's join id) or ERROR.
	 * Runs name the tables they probe by join id (WarpAggRequest.n_joins).
	 * The table lives until this connection closes and no run holds it.
	 */
	WARP_MSG_JOIN_LOAD = 33,

	/*
	 * JOIN_FIND: the backend asks for a table an earlier query loaded with
	 * WARP_JOIN_CACHE (WarpJoinFind: its key and version); the service
	 * answers JOIN_FIND (WarpJoinLoaded, join_id 0: none of that version).
	 */
	WARP_MSG_JOIN_FIND = 34,

	/*
	 * JOIN_DROP: the backend is done with a table it loaded or found
	 * (WarpJoinDrop); the id stops naming it for this connection's runs (a
	 * run that holds it keeps it; a kept table stays kept).  The answer is
	 * JOIN_DROP with the same payload; an id the connection does not hold
	 * is no error.
	 */
	WARP_MSG_JOIN_DROP = 35,

	/*
	 * CACHE_INFO (no payload): what the GPU column caches hold now; the
	 * answer is CACHE_INFO with a WarpCacheList and its WarpCacheInfo
	 * entries (pgwarp.gpu_cache_info()).
	 */
	WARP_MSG_CACHE_INFO = 36,

	/*
	 * AGG_FILL: a read-ahead.  The payload is an AGG_RUN's (share_id 0; the
	 * join ids are not looked up, and may be 0: the backend sends it while
	 * it is still building the tables).  The service copies the columns
	 * the program reads, of every record batch, into the GPU column cache
	 * of the GPU that an AGG_RUN would read the batch on, and runs no
	 * kernel; a column the cache holds, or that another run is filling,
	 * is left alone.  A run that meets a column the read-ahead is filling
	 * waits for it rather than reading it again.  Nothing is read under
	 * the CPU engine, with the cache off, or when the columns would take
	 * more than half of a GPU's cache.  The answer is one AGG_RESULT with
	 * WARP_AGG_LAST and no groups (engine, batches, bytes_read: read into
	 * the cache, bytes_cached: there already, io_us, wall_us), or ERROR.
	 * CANCEL and closing the connection work as for AGG_RUN.
	 */
	WARP_MSG_AGG_FILL = 37,

	/*
	 * CACHE_DROP (no payload): empties the GPU column cache of every device
	 * and lets go of the join inner tables kept for later queries
	 * (WARP_JOIN_CACHE); what runs hold now stays until they let go, and
	 * pages kept registered for copies (--pinned-files) stay registered.
	 * The answer is CACHE_DROP with a WarpCacheDropped
	 * (pgwarp.gpu_cache_drop()).
	 */
	WARP_MSG_CACHE_DROP = 38
} WarpMsgType;

/* HELLO: the backend sends its pid, the service answers with its own */
typedef struct WarpHello
{
	uint32_t	pid;
	uint32_t	protocol_version;	/* PGWARP_PROTO_VERSION of the sender */
} WarpHello;

WARP_STATIC_ASSERT(sizeof(WarpHello) == 8, "WarpHello layout");

/* ERROR: why a request failed */
typedef enum WarpErrorCode
{
	WARP_ERR_PROTOCOL = 1,		/* malformed message or wrong order */
	WARP_ERR_VERSION = 2,		/* protocol version mismatch */
	WARP_ERR_UNSUPPORTED = 3,	/* a message type this service does not serve */
	WARP_ERR_FILE_CHANGED = 4,	/* a file's identity is not the plan's (55000) */
	WARP_ERR_IO = 5,			/* a file could not be opened or read (58030) */
	WARP_ERR_BAD_FILE = 6,		/* an Arrow file is corrupt (XX001) */
	WARP_ERR_OUT_OF_MEMORY = 7, /* (53200) */
	WARP_ERR_CANCELED = 8		/* the backend cancelled the run */
} WarpErrorCode;

typedef struct WarpErrorMsg
{
	uint32_t	code;			/* WarpErrorCode */
	uint32_t	reserved;
	char		message[248];	/* NUL-terminated */
} WarpErrorMsg;

WARP_STATIC_ASSERT(sizeof(WarpErrorMsg) == 256, "WarpErrorMsg layout");

/* STATUS reply */
#define WARP_MAX_DEVICES		16

typedef enum WarpEngine
{
	WARP_ENGINE_CPU = 1,		/* no usable GPU: the CPU engine only */
	WARP_ENGINE_GPU = 2			/* at least one GPU with a context */
} WarpEngine;

typedef struct WarpDeviceInfo
{
	char		name[96];		/* NUL-terminated */
	uint64_t	total_memory;	/* bytes */
	uint32_t	index;			/* the CUDA device ordinal */
	uint32_t	multiprocessors;
	uint32_t	cc_major;		/* compute capability */
	uint32_t	cc_minor;
} WarpDeviceInfo;

WARP_STATIC_ASSERT(sizeof(WarpDeviceInfo) == 120, "WarpDeviceInfo layout");

typedef struct WarpStatus
{
	uint32_t	service_pid;
	uint32_t	protocol_version;
	int64_t		started_at_us;	/* start, microseconds since the Unix epoch */
	int64_t		uptime_us;		/* on a monotonic clock */
	uint64_t	memory_in_use;	/* bytes of GPU and pinned memory held */
	uint32_t	running_tasks;	/* tasks executing now */
	uint32_t	connections;	/* backends connected now (this one included) */
	uint32_t	engine;			/* WarpEngine */
	uint32_t	n_devices;		/* valid entries of devices[] */
	uint64_t	files_pinned;	/* bytes of Arrow file pages registered
								 * (protocol 11; service/file_reg.c) */
	uint64_t	files_to_pin;	/* bytes queued to be registered */
	char		engine_detail[192]; /* why there is no GPU, or "" */
	WarpDeviceInfo devices[WARP_MAX_DEVICES];
} WarpStatus;

WARP_STATIC_ASSERT(sizeof(WarpStatus) == 64 + 192 + 16 * 120, "WarpStatus layout");

/*
 * CACHE_INFO reply: WarpCacheList, then n_entries WarpCacheInfo: the
 * entries of the devices' GPU column caches summed per device, file version
 * (its identity when its buffers were read), field and column kind.  A
 * file is an Arrow file (batches: record batches) or a segment file of a
 * heap relation (batches: units of its blocks; field: the attribute).
 */
typedef struct WarpCacheList
{
	uint32_t	n_entries;		/* WarpCacheInfo that follow */
	uint32_t	truncated;		/* 1: more than fit one message were left out */
} WarpCacheList;

WARP_STATIC_ASSERT(sizeof(WarpCacheList) == 8, "WarpCacheList layout");

typedef struct WarpCacheInfo
{
	int64_t		dev;			/* the file's identity (GpuCacheFileId) */
	int64_t		ino;
	int64_t		size;
	int64_t		mtime_ns;
	int64_t		ctime_ns;
	uint32_t	device;			/* index into the service's GPUs */
	int32_t		field;
	int32_t		kind;			/* XpuColKind the runs read it as */
	uint32_t	reserved;
	uint64_t	batches;		/* entries: one per record batch (heap unit) */
	uint64_t	bytes;			/* device memory they hold */
	uint64_t	hits;			/* runs that found them there */
} WarpCacheInfo;

WARP_STATIC_ASSERT(sizeof(WarpCacheInfo) == 80, "WarpCacheInfo layout");

/* CACHE_DROP reply: what left the caches */
typedef struct WarpCacheDropped
{
	uint64_t	column_bytes;	/* device memory of the column entries freed */
	uint64_t	join_bytes;		/* bytes of the join tables no longer kept */
	uint32_t	join_tables;	/* join tables no longer kept */
	uint32_t	reserved;
} WarpCacheDropped;

WARP_STATIC_ASSERT(sizeof(WarpCacheDropped) == 24, "WarpCacheDropped layout");

/*
 * TASKS reply: WarpTaskList, then n_entries WarpTaskInfo, the running runs
 * first (oldest first), then the queued ones in their queue order.
 */
typedef enum WarpTaskKind
{
	WARP_TASK_AGG = 1,			/* AGG_RUN, AGG_FILL or HEAP_RUN */
	WARP_TASK_SCAN = 2			/* SCAN_RUN */
} WarpTaskKind;

typedef enum WarpTaskState
{
	WARP_TASK_RUNNING = 1,		/* executing (a canceled one until it stops) */
	WARP_TASK_QUEUED = 2		/* waiting for admission */
} WarpTaskState;

typedef struct WarpTaskList
{
	uint32_t	n_running;		/* runs executing now */
	uint32_t	n_queued;		/* runs waiting for admission */
	uint32_t	max_async_tasks;	/* the service's limit of n_running */
	uint32_t	n_entries;		/* WarpTaskInfo that follow */
} WarpTaskList;

WARP_STATIC_ASSERT(sizeof(WarpTaskList) == 16, "WarpTaskList layout");

typedef struct WarpTaskInfo
{
	uint32_t	backend_pid;	/* the client's pid (0: its connection closed) */
	uint16_t	kind;			/* WarpTaskKind */
	uint16_t	state;			/* WarpTaskState */
	uint32_t	queue_position; /* 1 for the next to run; 0 when running */
	uint32_t	pad;
	uint64_t	rows_done;		/* rows of the batches read so far */
	int64_t		since_us;		/* queued or started, us since the Unix epoch */
} WarpTaskInfo;

WARP_STATIC_ASSERT(sizeof(WarpTaskInfo) == 32, "WarpTaskInfo layout");

/*
 * AGG_RUN: aggregate record batches of Arrow files with an xPU program.
 * Payload, each part starting at an 8-byte aligned offset (16 for the
 * program):
 *
 *	WarpAggRequest
 *	uint16_t	key_outs[n_keys]
 *	XpuAggDesc	aggs[n_aggs]			(xpu/xpu_agg.h)
 *	program		prog_len bytes			(xpu/xpu_program.h, validated by the
 *										service before it runs)
 *	uint64_t	join_ids[n_joins]		the loaded tables (JOIN_LOAD) that the
 *										program's join depths probe: depth d
 *										probes join_ids[d]
 *	n_files times:
 *		WarpAggFile
 *		char	path[path_len]			(absolute, no NUL)
 *		int32_t	batches[n_batches]		record batch numbers to read
 *		int32_t	fields[n_cols]			top-level field of the file that chunk
 *										column j holds (the program's columns
 *										read chunk column XpuColumn.col_index,
 *										which is below n_cols)
 *
 * The service opens each file, refuses it (WARP_ERR_FILE_CHANGED) unless
 * device, inode, size and modification time equal the request's, reads only
 * the fields the program loads, runs the program and folds the passing rows
 * into the groups.  Files are read by the service, which runs as the same OS
 * user as the backend; the backend has checked the user's privileges.
 *
 * A shared run (share_id, see WARP_MSG_SHARE_OPEN): the participants of one
 * parallel query aggregate into one run of the service, so that the groups
 * come back once for all of them, not once per participant.
 *	WARP_SHARE_PART		a HEAP_RUN (not a scan) whose groups stay in the
 *						shared run: its last AGG_RESULT has no groups, only
 *						the counters and status (groups_total: the part's)
 *	WARP_SHARE_FINISH	an AGG_RUN without files: the groups of every part
 *						left so far, merged (or, when the merged states would
 *						overflow or memory runs out, each part's groups as
 *						they are: partial states, which the backend's
 *						Finalize Aggregate combines either way).  Keys,
 *						aggregates, program and join ids must be the
 *						parts'.
 *
 * Join depths (n_joins > 0, at most WARP_MAX_JOINS): the run takes a
 * reference on each table named by join_ids (ERROR WARP_ERR_PROTOCOL when
 * one is not loaded, or its connection closed) and checks the program's
 * JOIN_PROBE and JOIN_PAY against the tables (xpu_program_join_check)
 * before it runs; the tables stay loaded while the run holds them.
 */
#define WARP_SHARE_PART			1
#define WARP_MAX_JOINS			16	/* join depths of a run, at most */
#define WARP_SHARE_FINISH		2

typedef struct WarpAggRequest
{
	uint32_t	n_files;
	uint32_t	n_keys;
	uint32_t	n_aggs;
	uint32_t	prog_len;
	uint32_t	n_threads;		/* CPU engine threads; 0: the service's default */
	uint32_t	engine;			/* 0: the service's choice, else WarpEngine */
	int64_t		max_buffer_size;	/* per Arrow buffer (0: no limit) */
	uint64_t	share_id;		/* 0, or the query's shared run */
	uint32_t	share_role;		/* WARP_SHARE_PART or _FINISH (share_id set) */
	uint32_t	n_joins;		/* join ids after the program */
} WarpAggRequest;

WARP_STATIC_ASSERT(sizeof(WarpAggRequest) == 48, "WarpAggRequest layout");

/*
 * SHARE_OPEN: a shared run for the participants of one query.  share_id is
 * random (the leader's strong random bytes), non-zero, and put in the
 * query's dynamic shared memory for its workers; participants at most the
 * processes that will take part (leader and workers): the service gives
 * each part its share of the CPU engine's threads.
 */
typedef struct WarpShareOpen
{
	uint64_t	share_id;
	uint32_t	participants;
	uint32_t	pad;			/* zero */
} WarpShareOpen;

WARP_STATIC_ASSERT(sizeof(WarpShareOpen) == 16, "WarpShareOpen layout");

/*
 * WARP_FILE_MAP: the service may read the file through a mapping of it
 * (pg_warp.map_arrow_files; the CPU engine only) instead of pread
 */
#define WARP_FILE_MAP			0x0001

typedef struct WarpAggFile
{
	int64_t		dev;
	int64_t		ino;
	int64_t		size;
	int64_t		mtime_ns;		/* st_mtim in nanoseconds */
	uint32_t	path_len;
	uint32_t	n_batches;
	uint32_t	n_cols;			/* the program's n_cols */
	uint32_t	flags;			/* WARP_FILE_MAP */
} WarpAggFile;

WARP_STATIC_ASSERT(sizeof(WarpAggFile) == 48, "WarpAggFile layout");

/*
 * AGG_RESULT: WarpAggResult, then n_groups groups, each:
 *	uint32_t	key_len, then key_len key bytes (xpu_agg.h), padded with zeros
 *				to a multiple of 16 counted from the group's start
 *	XpuAggState	states[n_aggs]
 *	for each extended aggregate (XPU_AGG_EXTENDED: HLL, MIN_TEXT, MAX_TEXT),
 *				in order: the v.i bytes of its value (xpu_agg.h), padded with
 *				zeros to a multiple of 16
 * Groups never span messages.  The message with WARP_AGG_LAST carries the
 * run's outcome and counters: status XPU_OK (the groups are exact), or
 * XPU_ERR_FALLBACK / an SQL error code (err says which row's error): the
 * groups of the run are then void and the backend evaluates the query in
 * PostgreSQL, which raises its own error if there is one.
 */
#define WARP_AGG_LAST			0x0001
/*
 * With WARP_AGG_LAST: the record batches of a file this run opened first
 * were taken from the image a backend kept in the data directory
 * (src/fdw/meta_image.c), not read from their messages (tests look at it)
 */
#define WARP_AGG_META_IMAGE		0x0002

/*
 * The join depths' rows, in the last message of a run with join depths
 * (AGG_RESULT, SCAN_RESULT), summed over the run's threads (and a shared
 * run's part: this participant's): join_in[d] the rows that enter depth d
 * (those that passed the qual and every depth before), join_out[d] those
 * that leave it (INNER, SEMI: found, and the join quals hold; ANTI: none
 * found; LEFT: every row, found or NULL-extended, that the filters over it
 * keep; a probe of every match: a row once per combination of its
 * matches, so out may exceed in).  join_out[d] is join_in[d + 1]; the last
 * depth's is the rows that pass.
 */
#define WARP_JOIN_DEPTHS		16

/*
 * One GPU's share of a GPU run, in the last AGG_RESULT (EXPLAIN ANALYZE):
 * the record batches (or heap units) and rows it took, its kernels' time,
 * and its wall time in three steps: setup (the program, table, slots and
 * join tables on the device), the batches (reads, copies, kernels), and
 * the end (the groups copied back, the device's resources released).  A
 * run on more than WARP_REPORT_DEVICES GPUs reports the first ones.
 */
#define WARP_REPORT_DEVICES		8

typedef struct WarpDeviceWork
{
	uint32_t	device;			/* its index among the service's GPUs */
	uint32_t	drain_us;		/* the part of end_us that read the groups back */
	uint64_t	batches;
	uint64_t	rows_in;
	uint64_t	exec_us;		/* the kernels, summed */
	uint64_t	setup_us;
	uint64_t	run_us;
	uint64_t	end_us;
} WarpDeviceWork;

WARP_STATIC_ASSERT(sizeof(WarpDeviceWork) == 56, "WarpDeviceWork layout");

typedef struct WarpAggResult
{
	uint32_t	n_groups;		/* in this message */
	uint32_t	flags;			/* WARP_AGG_LAST */
	int32_t		status;			/* XpuErrorCode, in the last message */
	uint32_t	engine;			/* WarpEngine that ran it */
	uint64_t	rows_in;		/* rows of the batches read */
	uint64_t	rows_passed;	/* rows that passed the qual */
	uint64_t	batches;		/* record batches read */
	uint64_t	bytes_read;		/* bytes read from the files */
	uint64_t	groups_total;	/* groups of the whole result */
	uint64_t	io_us;			/* summed over threads: reading, decompressing */
	uint64_t	exec_us;		/* summed over threads: program + aggregation */
	uint64_t	wall_us;		/* the run, start to last group sent */
	uint32_t	threads;		/* CPU threads (or GPU streams) used */
	uint32_t	pad;
	uint64_t	bytes_cached;	/* bytes of the files' buffers that the GPU
								 * column cache served (not read) */
	char		err_message[128];	/* status's message, NUL-terminated */
	/* the join depths' rows (WarpJoinCounts) */
	uint32_t	join_depths;	/* depths counted; 0: none (no joins, or the
								 * runner does not count) */
	uint32_t	pad2;
	uint64_t	join_in[WARP_JOIN_DEPTHS];
	uint64_t	join_out[WARP_JOIN_DEPTHS];
	/* the GPU's data path (protocol 6, 11): of bytes_read, those copied
	 * from the files' registered page-cache pages (the rest: pread); the
	 * file bytes this run queued to be registered (service/file_reg.c) */
	uint64_t	bytes_mapped;
	uint64_t	bytes_to_pin;
	/* the GPUs that ran it (protocol 7): n_devices shares, in device order;
	 * 0 for a CPU run */
	uint32_t	n_devices;
	uint32_t	pad3;
	WarpDeviceWork devices[WARP_REPORT_DEVICES];
	/* GPUDirect Storage (protocol 9): of bytes_read, those read with cuFile
	 * straight into GPU memory, and its mode (WARP_CUFILE_*) */
	uint64_t	bytes_direct;
	uint32_t	direct_mode;
	uint32_t	pad4;
} WarpAggResult;

WARP_STATIC_ASSERT(sizeof(WarpAggResult) == 96 + 128 + 8 + 16 * WARP_JOIN_DEPTHS + 16 + 8 +
				   WARP_REPORT_DEVICES * 56 + 16, "WarpAggResult layout");

/* how the GPU read the files (gpu_direct.c): pread, or cuFile in one of its modes */
#define WARP_CUFILE_NONE		0
#define WARP_CUFILE_GDS			1	/* GPUDirect Storage (nvidia-fs) */
#define WARP_CUFILE_COMPAT		2	/* libcufile's compatibility mode */

/*
 * HEAP_RUN: aggregate the visible tuples of a heap table.  Payload, each
 * part 8-byte aligned (16 for the program):
 *
 *	WarpAggRequest					n_files 0; engine as for AGG_RUN
 *	uint16_t	key_outs[n_keys]
 *	XpuAggDesc	aggs[n_aggs]
 *	program		prog_len bytes
 *	uint64_t	join_ids[n_joins]	as for AGG_RUN
 *	WarpHeapRequest
 *	XpuHeapAtt	atts[n_atts]		attributes 1 .. n_atts of the table
 *										(xpu/xpu_heap.h), dropped ones too
 *	int16_t		col_attnums[n_cols]	attribute that chunk column j holds
 *	uint8_t		missing[missing_len]	missing values (XPU_HEAP_ATT_MISSING)
 *	char		path[path_len]		WARP_HEAP_UNITS: the table's first segment
 *										file, relative to the data directory
 *										(no NUL; segment s > 0 is "path.s")
 *
 * The ring is a memfd of n_slots * slot_size bytes (at least), sealed
 * against shrinking.  Slot i starts at i * slot_size: slot_pages pages of
 * XPU_HEAP_PAGE_SIZE bytes, then slot_pages visibility bitmaps of
 * XPU_HEAP_VIS_BYTES bytes (bit k set: line pointer k + 1 of the page is a
 * tuple visible to the query's snapshot).  A HEAP_CHUNK says how many
 * pages of its slot are filled.
 *
 * Units (WARP_HEAP_UNITS, aggregation runs only).  A unit is the
 * WARP_HEAP_UNIT_BLOCKS blocks of one segment file that start at a multiple
 * of WARP_HEAP_UNIT_BLOCKS.  When every block of a unit is marked
 * all-visible and is absent from shared buffers or in a clean one, the
 * backend may send a
 * HEAP_CHUNK with WARP_CHUNK_PROBE and no pages: the service aggregates the
 * unit's columns from its GPU cache if it holds them for the segment file
 * as it is now, and its HEAP_DONE says WARP_CHUNK_SERVED; otherwise the
 * backend reads the unit and ships it in a HEAP_CHUNK with WARP_CHUNK_UNIT
 * when every block came from the file and passed its checks (the pages the
 * service may keep decoded for later runs), or as plain pages.  A HEAP_DONE
 * with WARP_CHUNK_NO_CACHE says the run serves no probe (CPU engine, cache
 * off): the backend stops probing.
 *
 * With WARP_HEAP_SERVICE_READS as well, a GPU run that does not hold a
 * probed unit reads its blocks from the segment file itself, takes each
 * page as the backend's direct read would (an all-zero page holds nothing;
 * any other must carry PD_ALL_VISIBLE and a sane header, and then every
 * LP_NORMAL line pointer is a visible tuple), aggregates them and keeps
 * them like a WARP_CHUNK_UNIT chunk; its HEAP_DONE says WARP_CHUNK_SERVED
 * and WARP_CHUNK_READ.  A unit it cannot take so (a page that fails, a
 * short or unreadable file) is answered as a miss, and the backend reads
 * it.  The backend asks for this only where a page needs no other check
 * (no data checksums).
 */
#define WARP_HEAP_SCAN			0x0001	/* GpuScan: pass bitmaps, no groups */
#define WARP_HEAP_UNITS			0x0002	/* the backend may probe units (path given) */
#define WARP_HEAP_SERVICE_READS	0x0004	/* UNITS: a missed unit may be read by the service */

#define WARP_HEAP_UNIT_BLOCKS	2048	/* blocks of a unit (16 MiB of 8 kB pages) */

typedef struct WarpHeapRequest
{
	uint32_t	n_slots;
	uint32_t	slot_pages;
	uint64_t	slot_size;
	uint32_t	n_atts;
	uint32_t	missing_len;
	uint32_t	flags;			/* WARP_HEAP_SCAN, WARP_HEAP_UNITS, WARP_HEAP_SERVICE_READS */
	uint32_t	path_len;		/* bytes of path (WARP_HEAP_UNITS) */
	uint32_t	seg_blocks;		/* blocks per segment file (RELSEG_SIZE) */
	uint32_t	pad;
} WarpHeapRequest;

WARP_STATIC_ASSERT(sizeof(WarpHeapRequest) == 40, "WarpHeapRequest layout");

#define WARP_CHUNK_PROBE		0x0001	/* no pages: serve unit from the GPU cache */
#define WARP_CHUNK_UNIT			0x0002	/* the pages of exactly unit, read from the file */
#define WARP_CHUNK_SERVED		0x0004	/* HEAP_DONE of a probe: the unit was aggregated */
#define WARP_CHUNK_NO_CACHE		0x0008	/* HEAP_DONE of a probe: this run serves none */
#define WARP_CHUNK_READ			0x0010	/* HEAP_DONE of a probe, with SERVED: the service
										 * read the unit from the file */

/* HEAP_CHUNK, and HEAP_DONE of an aggregation run (flags PROBE and SERVED echoed) */
typedef struct WarpHeapChunk
{
	uint32_t	slot;
	uint32_t	n_pages;
	uint32_t	unit;			/* PROBE, UNIT: the unit's first block */
	uint32_t	flags;			/* WARP_CHUNK_* */
	int64_t		read_start_us;	/* UNIT: when the backend began reading it
								 * (CLOCK_REALTIME, microseconds) */
} WarpHeapChunk;

WARP_STATIC_ASSERT(sizeof(WarpHeapChunk) == 24, "WarpHeapChunk layout");

/*
 * HEAP_DONE of a WARP_HEAP_SCAN run: WarpHeapPass, then n_pages bitmaps of
 * XPU_HEAP_VIS_BYTES bytes, one per page of the slot: bit k set where line
 * pointer k + 1 is a visible tuple that passed the qual.  With
 * WARP_SCAN_RECHECK the program raised an error or FALLBACK in this chunk
 * (or could not decode a value): the bitmaps are the visibility bitmaps and
 * the backend evaluates the qual itself, raising PostgreSQL's own error.
 */
typedef struct WarpHeapPass
{
	uint32_t	slot;
	uint32_t	n_pages;
	uint32_t	flags;			/* WARP_SCAN_RECHECK */
	uint32_t	n_passed;		/* bits set */
} WarpHeapPass;

WARP_STATIC_ASSERT(sizeof(WarpHeapPass) == 16, "WarpHeapPass layout");

/*
 * SCAN_RUN: filter record batches of Arrow files with an xPU qual program
 * and return the passing rows of some of their columns.  Payload, each part
 * starting at an 8-byte aligned offset (16 for the program):
 *
 *	WarpScanRequest
 *	program		prog_len bytes			(a qual program: no outputs; its
 *										columns read chunk columns below n_cols)
 *	uint64_t	join_ids[n_joins]		as for AGG_RUN (SEMI and ANTI depths:
 *										a row passes on its probes' outcome)
 *	n_files times:
 *		WarpAggFile						(n_cols: the request's n_cols)
 *		char	path[path_len]
 *		int32_t	batches[n_batches]
 *		int32_t	fields[n_cols]			top-level field of chunk column j
 *
 * Chunk columns 0 .. n_outs - 1 are returned for the rows that pass; the
 * others (n_outs .. n_cols - 1) only the program reads.  Each record batch
 * is answered in the order of the request (files, then batches), as one or
 * more SCAN_RESULT blocks; a batch in which the program raised an error or
 * FALLBACK is returned whole, every chunk column of every row, flagged
 * WARP_SCAN_RECHECK: the backend evaluates the qual in PostgreSQL there.
 * Files are checked as for AGG_RUN.
 */
typedef struct WarpScanRequest
{
	uint32_t	n_files;
	uint32_t	n_cols;			/* chunk columns (every file's n_cols) */
	uint32_t	n_outs;			/* the first n_outs are returned */
	uint32_t	prog_len;
	uint32_t	n_threads;		/* CPU engine threads; 0: the service's default */
	uint32_t	engine;			/* 0: the service's choice, else WarpEngine */
	int64_t		max_buffer_size;	/* per Arrow buffer (0: no limit) */
	uint32_t	n_joins;		/* join ids after the program */
	uint32_t	pad;			/* zero */
} WarpScanRequest;

WARP_STATIC_ASSERT(sizeof(WarpScanRequest) == 40, "WarpScanRequest layout");

/*
 * SCAN_RESULT: WarpScanResult, then n_cols columns of n_rows rows, each a
 * WarpScanColumn followed by (each part 8-byte aligned):
 *	validity	(n_rows + 7) / 8 bytes, bit i set where row i is not null;
 *				absent when null_count is 0
 *	values		WARP_SCAN_BITS: (n_rows + 7) / 8 bytes; WARP_SCAN_FIXED:
 *				n_rows * width bytes; WARP_SCAN_VAR32 / VAR64: n_rows + 1
 *				int32 / int64 offsets into data, starting at 0
 *	data		data_len bytes (VAR32 / VAR64 only)
 * That is the Arrow layout of the column's field (the file's own), for the
 * returned rows only.  The message with WARP_SCAN_LAST has no rows; it
 * carries the run's counters.
 */
#define WARP_SCAN_LAST			0x0001
#define WARP_SCAN_RECHECK		0x0002	/* the qual is PostgreSQL's to evaluate */

typedef enum WarpScanLayout
{
	WARP_SCAN_BITS = 1,			/* bit-packed booleans */
	WARP_SCAN_FIXED = 2,		/* width bytes per value */
	WARP_SCAN_VAR32 = 3,		/* int32 offsets + data */
	WARP_SCAN_VAR64 = 4			/* int64 offsets + data */
} WarpScanLayout;

typedef struct WarpScanResult
{
	uint32_t	flags;			/* WARP_SCAN_LAST, WARP_SCAN_RECHECK */
	uint32_t	n_rows;			/* rows of this block */
	uint32_t	n_cols;			/* columns that follow: n_outs, or n_cols */
	uint32_t	engine;			/* WarpEngine that ran it */
	/* in the last message: the run's counters */
	uint64_t	rows_in;		/* rows of the batches read */
	uint64_t	rows_passed;	/* rows returned (rechecked batches: all) */
	uint64_t	batches;		/* record batches read */
	uint64_t	recheck_batches;	/* batches returned WARP_SCAN_RECHECK */
	uint64_t	bytes_read;		/* bytes read from the files */
	uint64_t	bytes_sent;		/* bytes of the blocks */
	uint64_t	io_us;			/* summed over threads: reading, decompressing */
	uint64_t	exec_us;		/* summed over threads: program + compaction */
	uint64_t	wall_us;		/* the run, start to last message */
	uint32_t	threads;		/* CPU threads used */
	uint32_t	cpu_batches;	/* a projection run on the GPU: batches whose
								 * GPU run raised an error, run on the CPU
								 * engine instead (service/scan.c) */
	/* the join depths' rows, as WarpAggResult's */
	uint32_t	join_depths;
	uint32_t	pad2;
	uint64_t	join_in[WARP_JOIN_DEPTHS];
	uint64_t	join_out[WARP_JOIN_DEPTHS];
	/* the GPU's data path, as WarpAggResult's (protocol 6, 9) */
	uint64_t	bytes_mapped;
	uint64_t	bytes_to_pin;
	uint64_t	bytes_direct;
	uint32_t	direct_mode;
	uint32_t	pad3;
} WarpScanResult;

WARP_STATIC_ASSERT(sizeof(WarpScanResult) == 96 + 8 + 16 * WARP_JOIN_DEPTHS + 16 + 16,
				   "WarpScanResult layout");

typedef struct WarpScanColumn
{
	uint32_t	layout;			/* WarpScanLayout */
	uint32_t	width;			/* WARP_SCAN_FIXED: bytes per value */
	uint32_t	null_count;		/* 0: no validity bitmap follows */
	uint32_t	pad;
	uint64_t	data_len;		/* VAR32 / VAR64: bytes of data */
} WarpScanColumn;

WARP_STATIC_ASSERT(sizeof(WarpScanColumn) == 24, "WarpScanColumn layout");

/*
 * DEVICES: request WarpDevicesRequest, then path_len bytes (no NUL) naming
 * the fatbin to test when flags has WARP_DEVICES_SELFTEST; reply
 * WarpDevices, then n_devices WarpDeviceDetail (the devices of STATUS).
 * The self-test (xpu/xpu_selftest.h) loads that fatbin into each device's
 * context, runs its kernel and checks the result; it runs on the service's
 * main loop, so other requests wait for it.
 */
#define WARP_DEVICES_SELFTEST	0x0001

typedef struct WarpDevicesRequest
{
	uint32_t	flags;			/* WARP_DEVICES_SELFTEST */
	uint32_t	path_len;		/* bytes of the fatbin's path that follow */
} WarpDevicesRequest;

WARP_STATIC_ASSERT(sizeof(WarpDevicesRequest) == 8, "WarpDevicesRequest layout");

typedef enum WarpDriverState
{
	WARP_DRIVER_READY = 1,		/* the driver works (n_devices may still be 0) */
	WARP_DRIVER_ABSENT = 2,		/* no driver, no device, or --no-gpu: no GPU */
	WARP_DRIVER_FAILED = 3		/* a driver is installed but does not work */
} WarpDriverState;

typedef struct WarpDevices
{
	uint32_t	driver;			/* WarpDriverState */
	uint32_t	n_devices;		/* WarpDeviceDetail that follow */
	char		detail[192];	/* why there is no GPU, or "" (as STATUS) */
} WarpDevices;

WARP_STATIC_ASSERT(sizeof(WarpDevices) == 200, "WarpDevices layout");

typedef enum WarpSelftestStatus
{
	WARP_SELFTEST_NONE = 0,		/* not asked for */
	WARP_SELFTEST_RAN = 1,		/* result: "ok" or the first wrong element */
	WARP_SELFTEST_FAILED = 2	/* result: the driver call or kernel error */
} WarpSelftestStatus;

typedef struct WarpDeviceDetail
{
	WarpDeviceInfo info;
	char		pci_bus_id[32];	/* "0000:1B:00.0" as the driver writes it */
	uint32_t	selftest;		/* WarpSelftestStatus */
	uint32_t	pad;
	int64_t		selftest_us;	/* the test's wall time on this device */
	char		result[240];	/* NUL-terminated */
} WarpDeviceDetail;

WARP_STATIC_ASSERT(sizeof(WarpDeviceDetail) == 120 + 32 + 16 + 240,
				   "WarpDeviceDetail layout");

/*
 * JOIN_LOAD: the inner table of one join depth, built by the backend with
 * xpu_join_builder_write into a memfd (offset 0, table_len bytes) sealed
 * with F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE and F_SEAL_SEAL, passed as
 * SCM_RIGHTS ancillary data with the request.  The service refuses (ERROR,
 * the connection stays usable) a descriptor without those seals, a file
 * shorter than table_len, or a table that xpu_join_table_validate rejects;
 * it maps the table read-only and registers it under a random non-zero
 * join_id, owned by this connection: the id stops naming the table when
 * the connection closes, and the table is unmapped once no run holds it.
 * bytes: the table's bytes counted in STATUS's memory_in_use (host; a GPU
 * run adds one device copy per device, kept as long); rows: its inner rows.
 *
 * With WARP_JOIN_CACHE the service also keeps the table for later queries
 * under key (what the table holds: the inner relation, its filters, keys
 * and payload; a digest made by the backend), as of version (a digest of
 * the relation's state the backend proved the rows are those of), replacing
 * what it kept under that key before, within --join-cache-size (the least
 * recently found tables not in use are dropped first; a table that does
 * not fit is not kept).  A JOIN_FIND with the same key and version finds
 * it; one with another version drops it.  The finder's connection holds it
 * as if it had loaded it.
 */
#define WARP_JOIN_CACHE			1	/* WarpJoinLoad.flags */
#define WARP_JOIN_DIGEST		32	/* bytes of a key or a version (SHA-256) */

typedef struct WarpJoinLoad
{
	uint64_t	table_len;		/* bytes of the table (XpuJoinTable.total_len) */
	uint32_t	flags;			/* 0 or WARP_JOIN_CACHE */
	uint32_t	pad;			/* zero */
	uint8_t		key[WARP_JOIN_DIGEST];	/* WARP_JOIN_CACHE: else zero */
	uint8_t		version[WARP_JOIN_DIGEST];	/* likewise */
} WarpJoinLoad;

WARP_STATIC_ASSERT(sizeof(WarpJoinLoad) == 16 + 2 * WARP_JOIN_DIGEST, "WarpJoinLoad layout");

typedef struct WarpJoinFind
{
	uint8_t		key[WARP_JOIN_DIGEST];
	uint8_t		version[WARP_JOIN_DIGEST];
} WarpJoinFind;

WARP_STATIC_ASSERT(sizeof(WarpJoinFind) == 2 * WARP_JOIN_DIGEST, "WarpJoinFind layout");

typedef struct WarpJoinDrop
{
	uint64_t	join_id;
} WarpJoinDrop;

WARP_STATIC_ASSERT(sizeof(WarpJoinDrop) == 8, "WarpJoinDrop layout");

/* the reply to JOIN_LOAD and JOIN_FIND */
typedef struct WarpJoinLoaded
{
	uint64_t	join_id;		/* non-zero; JOIN_FIND: 0 for none */
	uint64_t	bytes;			/* the table's bytes held by the service */
	uint64_t	rows;			/* the table's inner rows */
	uint32_t	flags;			/* the table's XpuJoinTable.flags (XPU_JOIN_UNIQUE) */
	uint32_t	pad;
} WarpJoinLoaded;

WARP_STATIC_ASSERT(sizeof(WarpJoinLoaded) == 32, "WarpJoinLoaded layout");

#endif							/* XPU_PROTOCOL_H */
