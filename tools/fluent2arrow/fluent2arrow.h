/*-------------------------------------------------------------------------
 *
 * fluent2arrow.h
 *		fluent2arrow: a Fluentd / Fluent Bit Forward-protocol sink that writes
 *		Arrow files (doc/fluent2arrow.md).  What its files share.
 *
 * The data path: a connection (conn.c) cuts complete msgpack frames out of
 * its byte stream (frame_scan), forward.c decodes the Forward-protocol
 * modes into events, convert.c turns each record into one row of its
 * route's column builders (or a dead-letter line), output.c writes the
 * builders as record batches into a hidden temporary file and hands full
 * files to the finisher thread (footer, fsync, rename, fsync of the
 * directory).  Every data frame is also appended to the write-ahead log
 * (wal.c) whose thread writes and fdatasyncs it in groups; a chunk's ack is
 * sent once the log holding its frame is durable.  Log segments are removed
 * when every event they hold is in a finished file; the next start replays
 * what is left (at-least-once).
 *
 *-------------------------------------------------------------------------
 */
#ifndef FLUENT2ARROW_H
#define FLUENT2ARROW_H

#include <msgpack.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "arrow.h"
#include "util.h"

/* ------------------------------------------------------------------------
 * Configuration (config.c)
 * ------------------------------------------------------------------------
 */
typedef enum ColKind
{
	CK_TAG,						/* the event's tag (utf8) */
	CK_TIME,					/* the event's time (timestamp[us, tz=UTC]) */
	CK_BOOL,
	CK_INT,						/* int8..int64 */
	CK_UINT,					/* uint8..uint64 */
	CK_FLOAT,					/* float16, float32, float64 */
	CK_DECIMAL,
	CK_UTF8,
	CK_BINARY,
	CK_DATE,					/* date32 (days), date64 (ms) */
	CK_TIMESTAMP,
	CK_TIMEOFDAY				/* time32, time64 */
} ColKind;

typedef struct Column
{
	char	   *name;
	size_t		name_len;
	ColKind		kind;
	ArrowType	type;
	bool		required;		/* a missing key or nil is a reject */
	int64_t		imin,
				imax;			/* CK_INT range */
	uint64_t	umax;			/* CK_UINT range */
	int64_t		per_second;		/* CK_TIMESTAMP/CK_TIMEOFDAY/CK_DATE units */
} Column;

struct OutFile;

typedef struct Route
{
	char	   *name;
	int			n_match;
	char	  **match;			/* tag patterns: a.b, a.*, a.**, ** */
	char	   *dir;
	char	   *prefix;			/* final names PREFIX-TIME-SEQ.arrow */
	bool		strict;			/* an unknown key is a reject */
	int64_t		rotate_rows;
	int64_t		rotate_bytes;
	int64_t		rotate_ms;
	int64_t		batch_rows;
	int			n_columns;
	Column	   *columns;
	ArrowSchema schema;
	/* state (output.c) */
	ArrowBuilder **builders;
	int64_t		batch_n;		/* rows in the builders */
	struct OutFile *file;		/* the open temporary file, or NULL */
	uint16_t   *key_hint;		/* record key position -> column guess */
	int			n_hint;
} Route;

typedef struct Config
{
	char	   *path;
	char	   *listen_host;
	int			listen_port;	/* 0: no TCP */
	char	   *unix_path;		/* NULL: no UNIX socket */
	char	   *shared_key;		/* NULL: no handshake */
	char	   *self_hostname;
	char	   *spool_dir;
	char	   *deadletter_path;
	char	   *log_path;		/* NULL: stderr */
	int64_t		max_frame;		/* bytes of one frame */
	int64_t		max_buffer;		/* bytes of all connection buffers */
	int64_t		wal_segment;	/* bytes of one log segment */
	int			max_connections;
	int64_t		stall_ms;		/* a frame part held this long without a byte
								 * is dropped when others wait for memory */
	int			stats_interval; /* seconds; 0: none */
	int			n_routes;
	Route	   *routes;
} Config;

/* Reads the file; NULL (message in errbuf) when it is not valid */
extern Config *config_load(const char *path, char *errbuf, size_t errlen);
/* Frees cfg (the output state of its routes must be freed first) */
extern void config_free(Config *cfg);
/* The route whose patterns match tag first, or NULL */
extern Route *config_route(Config *cfg, const char *tag, size_t len);
/* Parses "16MB", "512k", "100": bytes; -1 if not a size */
extern int64_t parse_size(const char *s);

/* ------------------------------------------------------------------------
 * Counters (log.c) and the configuration in force (config.c)
 * ------------------------------------------------------------------------
 */
typedef struct Counters
{
	uint64_t	events;			/* rows stored */
	uint64_t	rejects;		/* events sent to the dead-letter file */
	uint64_t	bytes;			/* frame bytes received */
	uint64_t	frames;
	uint64_t	files;			/* files finished */
	uint64_t	bad_frames;		/* malformed frames (connection closed) */
	uint64_t	auth_failures;
	uint64_t	acks;
} Counters;

extern Config *g_cfg;
extern unsigned g_cfg_generation;	/* changes at each reload */
extern Counters g_count;

/*
 * Where an event is in the WAL: the position of its frame and its index
 * among the frame's events.  A checkpoint (wal.c) is such a position:
 * every event before it is in a finished file or the dead-letter file.
 */
typedef struct WalPos
{
	uint64_t	lsn;
	uint32_t	k;
} WalPos;

static inline bool
walpos_before(WalPos a, WalPos b)
{
	return a.lsn < b.lsn || (a.lsn == b.lsn && a.k < b.k);
}

/* ------------------------------------------------------------------------
 * Frame scanning (frame.c) and decoding (forward.c)
 * ------------------------------------------------------------------------
 */
#define SCAN_MAX_DEPTH 32
typedef struct FrameScan
{
	size_t		pos;			/* bytes of the frame scanned so far */
	int			depth;
	uint32_t	left[SCAN_MAX_DEPTH];	/* objects still due per level */
	bool		started;
	bool		any;			/* set by the caller: any object, not just an array */
} FrameScan;

/*
 * Advances the scan over buf[0..len) (the start of a frame): 1 when a whole
 * msgpack object of *frame_len bytes is there, 0 when more bytes are
 * needed, -1 (why in errbuf) when the frame is malformed or would exceed
 * max_frame bytes.
 */
extern int	frame_scan(FrameScan *st, const uint8_t *buf, size_t len,
					   int64_t max_frame, size_t *frame_len,
					   char *errbuf, size_t errlen);

/* Seconds and ns of an EventTime (ext 0) or msgpack timestamp (ext -1) (frame.c) */
extern bool ext_time(const msgpack_object *o, int64_t *sec, int64_t *ns);

/* Big-endian unsigned integer of n bytes */
extern uint64_t be(const uint8_t *p, int n);

/* What decoding one frame asks the connection to do */
typedef struct FrameResult
{
	bool		has_chunk;
	char		chunk[128];		/* the "chunk" option, for the ack */
} FrameResult;

/*
 * Decodes one complete data frame (Message, Forward, PackedForward,
 * CompressedPackedForward) and routes its events.  false (why in errbuf)
 * when the frame is malformed: the connection is then closed unacked.
 * lsn: where the frame starts in the WAL (0 during replay is fine).
 */
extern bool forward_frame(const msgpack_object *frame, uint64_t lsn,
						  FrameResult *res, char *errbuf, size_t errlen);

/* ------------------------------------------------------------------------
 * Records to rows (convert.c)
 * ------------------------------------------------------------------------
 */
/*
 * Appends the event as one row of route's builders, or writes it to the
 * dead-letter file with the reason.  true when stored.
 */
extern bool convert_event(Route *route, const char *tag, size_t tag_len,
						  int64_t time_us, const msgpack_object *record);
/* Writes a dead-letter line; record may be NULL */
extern void deadletter(const char *reason, const char *tag, size_t tag_len,
					   int64_t time_us, const msgpack_object *record);
/* The same for an event whose time is invalid: the time as it came */
extern void deadletter_bad_time(const char *reason, const char *tag, size_t tag_len,
								const msgpack_object *time, const msgpack_object *record);
extern bool deadletter_open(const char *path, char *errbuf, size_t errlen);
extern bool deadletter_sync(void);
extern void deadletter_close(void);

/* ------------------------------------------------------------------------
 * Files (output.c)
 * ------------------------------------------------------------------------
 */
/* Creates the builders of a route; false (errbuf) on failure */
extern bool output_route_init(Route *route, char *errbuf, size_t errlen);
extern void output_route_free(Route *route);
/* After the row of the event at pos was appended: batch and rotation */
extern void output_row_added(Route *route, WalPos pos);
/* Rotation by age of every open file (ms since the epoch: now) */
extern void output_tick(Config *cfg, int64_t now_ms);
/* Finishes every open file (hands them to the finisher) */
extern void output_finish_all(Config *cfg);
extern bool output_start(char *errbuf, size_t errlen);
/* Waits until the finisher has finished every file handed to it */
extern void output_drain(void);
extern void output_stop(void);
/* Lowest WAL position some unfinished file still needs (UINT64_MAX: none) */
extern uint64_t output_low_water(void);
/* Files handed over but not yet finished */
extern int	output_pending(void);
/* eventfd the finisher signals after each finished file */
extern int	output_eventfd(void);
/* A file failed: true from then on (the WAL is kept for the next start) */
extern bool output_failed(void);
/* No file failed and the dead letters are durable: WAL segments may go */
extern bool output_stored(void);
/* Removes hidden temporary files left by dead processes in dir */
extern void output_remove_stale(const char *dir);

/* ------------------------------------------------------------------------
 * Write-ahead log (wal.c)
 * ------------------------------------------------------------------------
 */
extern bool wal_open(const char *dir, int64_t segment_size, char *errbuf,
					 size_t errlen);
/* Appends a frame; returns the WAL position after it (ack when durable) */
extern uint64_t wal_append(const uint8_t *frame, size_t len);
/* Position where the next frame starts */
extern uint64_t wal_next_lsn(void);
/* Everything before this position is durable */
extern uint64_t wal_durable_lsn(void);
/* Bytes appended but not yet durable (back-pressure) */
extern int64_t wal_backlog(void);
extern int	wal_eventfd(void);
/* Removes segments wholly before low_water (all of them: UINT64_MAX),
 * once output_stored() */
extern void wal_truncate(uint64_t low_water);
/* Records that every event before pos is stored (the finisher calls it) */
extern void wal_checkpoint(WalPos pos);
/*
 * What a replay does with the spool a previous run left: each frame that
 * holds events not yet stored is handed to frame (false: malformed, why
 * logged), and finish is called after the last (false: the events could
 * not be stored; the spool is kept)
 */
typedef struct WalReplayOps
{
	bool		(*frame) (const msgpack_object *frame, uint64_t lsn, char *why,
						  size_t whylen);
	bool		(*finish) (void);
} WalReplayOps;

/* Replays the segments a previous run left; returns frames replayed */
extern int64_t wal_replay(const char *dir, const WalReplayOps *ops, char *errbuf,
						  size_t errlen);

/*
 * The events' positions: the frame at lsn starts (wal_frame_start), each
 * event takes the next position (wal_next_event: false when a replay skips
 * the event, stored already); wal_event_position is the next event's
 */
extern void wal_frame_start(uint64_t lsn);
extern bool wal_next_event(WalPos *pos);
extern WalPos wal_event_position(void);
extern void wal_close(void);

/* ------------------------------------------------------------------------
 * Connections (conn.c)
 * ------------------------------------------------------------------------
 */
extern bool conn_listen(Config *cfg, char *errbuf, size_t errlen);
/* Runs the event loop until *stop is set; on_reload when *reload is set */
extern void conn_loop(volatile int *stop, volatile int *reload, void (*on_reload) (void));
extern void conn_close_all(void);

/* ------------------------------------------------------------------------
 * The log and the clock (log.c)
 * ------------------------------------------------------------------------
 */
extern void stats_start(void);
extern void stats_line(bool final);
extern int64_t now_ms(void);
extern void logmsg(const char *fmt,...) __attribute__((format(printf, 1, 2)));

#endif							/* FLUENT2ARROW_H */
