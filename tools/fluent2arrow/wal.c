/*-------------------------------------------------------------------------
 *
 * wal.c
 *		fluent2arrow: the write-ahead log ("spool") that makes an ack safe
 *		long before the events are in a finished Arrow file.
 *
 * Every data frame, as received, is appended as a record [u32 length,
 * u32 crc32, frame bytes] (little-endian) to an in-memory buffer; the WAL
 * thread swaps the buffer out, write()s it to the current segment and
 * fdatasyncs it: one fsync covers every frame that arrived meanwhile (group
 * commit), and then the durable position moves on and the main loop sends
 * the acks it covers.  Positions (LSNs) count record bytes from the start
 * of the log; a segment "wal-<start LSN in hex>.log" is closed when it
 * passes wal_segment bytes, and removed once every frame in it is in
 * finished files (wal_truncate with output's low water mark).  At start,
 * the segments a previous run left are replayed (a torn last record, never
 * acknowledged, ends a segment), their files finished, and then removed.
 * A lock file keeps a second process off the spool.
 *
 * The checkpoint: the finisher, right after a file's rename and the fsync
 * of its directory, records the position (WalPos) before which every
 * event is in a finished file or the dead-letter file, in "checkpoint"
 * (written to "checkpoint.tmp", renamed over it):
 *
 *	"F2ACKPT1", le64 LSN, le32 event index, le32 CRC-32 of the 20 bytes before
 *
 * A replay skips the events before it, so a crash duplicates next to
 * nothing.  It is not fsynced: after a power loss the file is the old
 * one, the new one, or fails its CRC (then everything left is replayed);
 * each is safe, an older checkpoint skips less.  A new log starts past
 * the checkpoint's LSN, so that no later event can fall before it.
 *
 *-------------------------------------------------------------------------
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fluent2arrow.h"

typedef struct Buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
} Buf;

static char *wal_dir;
static int64_t seg_size;
static pthread_t wal_thread;
static pthread_mutex_t wal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wal_cond = PTHREAD_COND_INITIALIZER;
static Buf pending;				/* appended, not yet taken by the thread */
static uint64_t appended_lsn;	/* end of pending (under wal_lock) */
static uint64_t next_lsn;		/* main thread's copy */
static _Atomic uint64_t durable_lsn;
static _Atomic int64_t backlog;
static bool wal_stopping;
static bool thread_started;
static int	wal_efd = -1;
static int	seg_fd = -1;
static int64_t seg_bytes;
static int	lock_fd = -1;

#define CHECKPOINT_MAGIC "F2ACKPT1"
#define CHECKPOINT_SIZE 24

static void
buf_append(Buf *b, const void *p, size_t len)
{
	if (b->len + len > b->cap)
	{
		size_t		cap = b->cap ? b->cap : 1 << 20;

		while (cap < b->len + len)
			cap *= 2;
		b->data = xrealloc(b->data, cap);
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, len);
	b->len += len;
}

static char *
seg_path(uint64_t start)
{
	return xasprintf("%s/wal-%016llx.log", wal_dir, (unsigned long long) start);
}

/* fsync of the spool directory; exits on failure (acks depend on it) */
static void
sync_spool_dir(void)
{
	int			fd = open(wal_dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || fsync(fd) != 0)
	{
		logmsg("cannot fsync the spool directory \"%s\": %s", wal_dir, strerror(errno));
		_exit(3);
	}
	close(fd);
}

/* Starts the segment that begins at LSN start (WAL thread, or before it) */
static void
new_segment(uint64_t start)
{
	char	   *path = seg_path(start);

	if (seg_fd >= 0)
		close(seg_fd);
	seg_fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (seg_fd < 0)
	{
		logmsg("cannot create the spool segment \"%s\": %s", path, strerror(errno));
		_exit(3);
	}
	free(path);
	seg_bytes = 0;
	sync_spool_dir();
}

/* Writes and fdatasyncs one swapped-out buffer ending at LSN end */
static void
commit(Buf *b, uint64_t end)
{
	size_t		off = 0;
	uint64_t	one = 1;

	if (seg_bytes >= seg_size)
		new_segment(end - b->len);
	while (off < b->len)
	{
		ssize_t		n = write(seg_fd, b->data + off, b->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
		{
			logmsg("cannot write the spool: %s (exiting: nothing acknowledged is lost)", strerror(errno));
			_exit(3);
		}
		off += n;
	}
	if (fdatasync(seg_fd) != 0)
	{
		logmsg("cannot fsync the spool: %s (exiting: nothing acknowledged is lost)", strerror(errno));
		_exit(3);
	}
	seg_bytes += b->len;
	atomic_fetch_sub(&backlog, (int64_t) b->len);
	atomic_store(&durable_lsn, end);
	b->len = 0;
	if (write(wal_efd, &one, sizeof(one)) < 0)
		(void) 0;				/* cannot overflow */
}

static void *
wal_main(void *arg)
{
	Buf			mine = {0};
	sigset_t	all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;)
	{
		Buf			t;
		uint64_t	end;

		pthread_mutex_lock(&wal_lock);
		while (pending.len == 0 && !wal_stopping)
			pthread_cond_wait(&wal_cond, &wal_lock);
		if (pending.len == 0)
		{
			pthread_mutex_unlock(&wal_lock);
			break;
		}
		t = pending;
		pending = mine;
		mine = t;
		end = appended_lsn;
		pthread_mutex_unlock(&wal_lock);
		commit(&mine, end);
	}
	free(mine.data);
	return NULL;
}

/* Takes the spool's lock; creates the directory */
bool
wal_open(const char *dir, int64_t segment_size, char *errbuf, size_t errlen)
{
	char	   *lock;

	wal_dir = xstrdup(dir);
	seg_size = segment_size;
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		return snprintf(errbuf, errlen, "cannot create the spool directory \"%s\": %s", dir, strerror(errno)), false;
	lock = xasprintf("%s/lock", dir);
	lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(lock);
	if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
		return snprintf(errbuf, errlen, "cannot lock the spool \"%s\": %s (is another fluent2arrow using it?)",
						dir, strerror(errno)), false;
	wal_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wal_efd < 0)
		return snprintf(errbuf, errlen, "eventfd: %s", strerror(errno)), false;
	return true;
}

/* Starts the thread with a new segment at LSN start */
static void
wal_start(uint64_t start)
{
	next_lsn = appended_lsn = start;
	atomic_store(&durable_lsn, start);
	new_segment(start);
	if (pthread_create(&wal_thread, NULL, wal_main, NULL) != 0)
		fatal("cannot start the spool thread");
	thread_started = true;
}

/* Appends a frame; returns the LSN after it */
uint64_t
wal_append(const uint8_t *frame, size_t len)
{
	uint32_t	hdr[2];

	hdr[0] = (uint32_t) len;
	hdr[1] = (uint32_t) crc32(0, frame, (uInt) len);
	pthread_mutex_lock(&wal_lock);
	buf_append(&pending, hdr, sizeof(hdr));
	buf_append(&pending, frame, len);
	appended_lsn += sizeof(hdr) + len;
	next_lsn = appended_lsn;
	pthread_cond_signal(&wal_cond);
	pthread_mutex_unlock(&wal_lock);
	atomic_fetch_add(&backlog, (int64_t) (sizeof(hdr) + len));
	return next_lsn;
}

uint64_t
wal_next_lsn(void)
{
	return next_lsn;
}

uint64_t
wal_durable_lsn(void)
{
	return atomic_load(&durable_lsn);
}

int64_t
wal_backlog(void)
{
	return atomic_load(&backlog);
}

int
wal_eventfd(void)
{
	return wal_efd;
}

/* The segments in the spool, sorted by start LSN; *n gets their number */
static uint64_t *
list_segments(int *n)
{
	DIR		   *d = opendir(wal_dir);
	struct dirent *de;
	uint64_t   *v = NULL;

	*n = 0;
	if (d == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL)
	{
		unsigned long long s;
		char		tail[8];

		if (sscanf(de->d_name, "wal-%16llx%7s", &s, tail) == 2 && strcmp(tail, ".log") == 0)
		{
			v = xrealloc(v, sizeof(uint64_t) * (*n + 1));
			v[(*n)++] = s;
		}
	}
	closedir(d);
	for (int i = 1; i < *n; i++)	/* insertion sort: a few segments */
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--)
		{
			uint64_t	t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v;
}

/*
 * Removes segments wholly before low_water (all of them: UINT64_MAX); the
 * caller has made sure that their events are stored (output_stored)
 */
void
wal_truncate(uint64_t low_water)
{
	int			n;
	uint64_t   *seg;
	bool		removed = false;

	seg = list_segments(&n);
	for (int i = 0; i < n; i++)
	{
		bool		last = i == n - 1;

		if (last ? low_water != UINT64_MAX : seg[i + 1] > low_water)
			break;
		{
			char	   *path = seg_path(seg[i]);

			if (unlink(path) != 0)
				logmsg("cannot remove \"%s\": %s", path, strerror(errno));
			free(path);
		}
		removed = true;
	}
	if (removed)
		sync_spool_dir();
	free(seg);
}

/* Records that every event before pos is stored; see fluent2arrow.h */
void
wal_checkpoint(WalPos pos)
{
	static WalPos last;
	uint8_t		rec[CHECKPOINT_SIZE];
	uint32_t	crc;
	char	   *tmp,
			   *path;
	int			fd;
	bool		ok;

	if (wal_dir == NULL || !walpos_before(last, pos))
		return;
	memcpy(rec, CHECKPOINT_MAGIC, 8);
	for (int i = 0; i < 8; i++)
		rec[8 + i] = (uint8_t) (pos.lsn >> (8 * i));
	for (int i = 0; i < 4; i++)
		rec[16 + i] = (uint8_t) (pos.k >> (8 * i));
	crc = (uint32_t) crc32(0, rec, 20);
	for (int i = 0; i < 4; i++)
		rec[20 + i] = (uint8_t) (crc >> (8 * i));
	tmp = xasprintf("%s/checkpoint.tmp", wal_dir);
	path = xasprintf("%s/checkpoint", wal_dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ok = fd >= 0 && write(fd, rec, sizeof(rec)) == (ssize_t) sizeof(rec);
	if (fd >= 0)
		ok = close(fd) == 0 && ok;
	if (ok && rename(tmp, path) == 0)
		last = pos;
	else						/* harmless: a replay skips less */
		logmsg("cannot write the spool checkpoint \"%s\": %s", path, strerror(errno));
	free(tmp);
	free(path);
}

/* The checkpoint a previous run left; false when there is none (or torn) */
static bool
read_checkpoint(WalPos *pos)
{
	char	   *path = xasprintf("%s/checkpoint", wal_dir);
	int			fd = open(path, O_RDONLY | O_CLOEXEC);
	uint8_t		rec[CHECKPOINT_SIZE];
	bool		ok;
	uint32_t	crc = 0;
	WalPos		p = {0, 0};

	ok = fd >= 0 && read(fd, rec, sizeof(rec)) == (ssize_t) sizeof(rec) &&
		memcmp(rec, CHECKPOINT_MAGIC, 8) == 0;
	if (fd >= 0)
		close(fd);
	free(path);
	if (!ok)
		return false;
	for (int i = 0; i < 8; i++)
		p.lsn |= (uint64_t) rec[8 + i] << (8 * i);
	for (int i = 0; i < 4; i++)
		p.k |= (uint32_t) rec[16 + i] << (8 * i);
	for (int i = 0; i < 4; i++)
		crc |= (uint32_t) rec[20 + i] << (8 * i);
	if (crc != (uint32_t) crc32(0, rec, 20))
		return false;
	*pos = p;
	return true;
}

/* the next event's position, and (replay) the first one not stored yet */
static WalPos cursor;
static WalPos skip_to;

/* The next event's position; see fluent2arrow.h */
WalPos
wal_event_position(void)
{
	return cursor;
}

/* The events that follow are those of the frame at lsn; see fluent2arrow.h */
void
wal_frame_start(uint64_t lsn)
{
	cursor.lsn = lsn;
	cursor.k = 0;
}

/* Takes the next event's position; see fluent2arrow.h */
bool
wal_next_event(WalPos *pos)
{
	*pos = cursor;
	cursor.k++;
	return !walpos_before(*pos, skip_to);
}

/*
 * Replays one segment's frames, those wholly before skip.lsn unread (their
 * events are stored); returns the LSN after its last good one.
 */
static uint64_t
replay_segment(uint64_t start, WalPos skip, const WalReplayOps *ops, int64_t *frames)
{
	char	   *path = seg_path(start);
	FILE	   *f = fopen(path, "rb");
	uint8_t    *frame = NULL;
	size_t		cap = 0;
	uint64_t	lsn = start;
	msgpack_unpacked u;

	msgpack_unpacked_init(&u);
	while (f)
	{
		uint32_t	hdr[2];
		size_t		off = 0;
		char		why[256];

		if (fread(hdr, sizeof(hdr), 1, f) != 1)
			break;
		if (lsn < skip.lsn && lsn + sizeof(hdr) + hdr[0] <= skip.lsn &&
			fseeko(f, hdr[0], SEEK_CUR) == 0)
		{
			lsn += sizeof(hdr) + hdr[0];
			continue;
		}
		if (hdr[0] > cap)
			frame = xrealloc(frame, cap = hdr[0]);
		if (fread(frame, 1, hdr[0], f) != hdr[0] || crc32(0, frame, hdr[0]) != hdr[1])
		{
			logmsg("\"%s\": torn record at offset %llu ignored (it was never acknowledged)",
				   path, (unsigned long long) (lsn - start));
			break;
		}
		if (msgpack_unpack_next(&u, (const char *) frame, hdr[0], &off) == MSGPACK_UNPACK_SUCCESS &&
			!ops->frame(&u.data, lsn, why, sizeof(why)))
			logmsg("\"%s\": frame at offset %llu: %s", path, (unsigned long long) (lsn - start), why);
		lsn += sizeof(hdr) + hdr[0];
		(*frames)++;
	}
	msgpack_unpacked_destroy(&u);
	if (f)
		fclose(f);
	free(frame);
	free(path);
	return lsn;
}

/*
 * Replays what a previous run left (each frame to ops->frame), has the
 * files finished (ops->finish), removes the old segments and starts the
 * log; returns the number of frames replayed.
 */
int64_t
wal_replay(const char *dir, const WalReplayOps *ops, char *errbuf, size_t errlen)
{
	int			n;
	uint64_t   *seg = list_segments(&n);
	int64_t		frames = 0;
	uint64_t	end = 0;
	WalPos		skip = {0, 0};

	if (read_checkpoint(&skip))
		end = skip.lsn + 1;		/* a new log starts past it */
	skip_to = skip;
	for (int i = 0; i < n; i++)
	{
		uint64_t	e = replay_segment(seg[i], skip, ops, &frames);

		if (e > end)
			end = e;
		if (seg[i] + 1 > end)
			end = seg[i] + 1;
	}
	if (n > 0)
	{
		if (!ops->finish())
		{
			free(seg);
			return snprintf(errbuf, errlen, "the replayed events could not be written"), -1;
		}
		wal_truncate(UINT64_MAX);
		logmsg("replayed %lld frames from %d spool segments (events before position %llu.%u were stored already)",
			   (long long) frames, n, (unsigned long long) skip.lsn, skip.k);
	}
	free(seg);
	wal_start(end);
	return frames;
}

/* Stops the thread after it wrote everything; the segments stay */
void
wal_close(void)
{
	if (!thread_started)
		return;
	pthread_mutex_lock(&wal_lock);
	wal_stopping = true;
	pthread_cond_signal(&wal_cond);
	pthread_mutex_unlock(&wal_lock);
	pthread_join(wal_thread, NULL);
	thread_started = false;
	if (seg_fd >= 0)
		close(seg_fd);
	seg_fd = -1;
}
