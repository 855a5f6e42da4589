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
#define PGWARP_PROTO_VERSION	1

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
	 * The query messages of doc/engine-design.md section 5.  Not implemented
	 * yet: the service answers each with ERROR (WARP_ERR_UNSUPPORTED).
	 */
	WARP_MSG_OPEN_QUERY = 16,
	WARP_MSG_PROGRAM = 17,
	WARP_MSG_SOURCE = 18,
	WARP_MSG_RUN = 19,
	WARP_MSG_CANCEL = 20,
	WARP_MSG_RESULT = 21
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
	WARP_ERR_UNSUPPORTED = 3	/* a message type this service does not serve */
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
	char		engine_detail[192]; /* why there is no GPU, or "" */
	WarpDeviceInfo devices[WARP_MAX_DEVICES];
} WarpStatus;

WARP_STATIC_ASSERT(sizeof(WarpStatus) == 48 + 192 + 16 * 120, "WarpStatus layout");

#endif							/* XPU_PROTOCOL_H */
