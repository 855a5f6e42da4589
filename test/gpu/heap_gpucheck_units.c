/*
 * heap_gpucheck_units.c
 *		heap_gpucheck's checks of the units of WARP_HEAP_UNITS, on the GPU
 *		(or "fake"): kept in the GPU column cache by a run of UNIT chunks,
 *		served to later probes while their segment file is unchanged and
 *		never after, kept only when the file had settled before their read
 *		began; the protocol's checks of unit requests and chunks; units read
 *		by the service itself (WARP_HEAP_SERVICE_READS), a unit with a page
 *		it may not take going back as a miss; and the units' pinned buffers
 *		pinned at the service's start.  The segment files are made in a
 *		directory of the current one, removed at the end.  The table, the
 *		rings, the queries and the runs are heap_gpucheck.c's (declared in
 *		heap_gpucheck.h); the TAP lines are counted there (heap_tap_ok:
 *		tap.h counts in static variables).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "service/file_map.h"
#include "service/file_reg.h"
#include "service/gpu_cache.h"
#include "service/gpu_direct.h"
#include "service/gpu_driver.h"
#include "xpu/xpu_agg.h"
#include "xpu/xpu_heap_gpu.h"
#include "heap_gpucheck.h"

/* ---------------- units kept in the GPU column cache ---------------- */

/*
 * WARP_HEAP_UNITS (xpu/protocol.h, gpu_heap.c's "Units"): a run whose
 * chunks are whole units (WARP_HEAP_UNIT_BLOCKS pages) read from a segment file keeps their
 * decoded columns in the GPU column cache; a later run's probe of a unit is
 * served from there while the file is as it was, and only then.  The
 * "segment files" are files of a directory made in the current directory
 * (the service opens them relative to its own), holding the ring's pages.
 */

#define UNIT_ROWS		(90000 * (WARP_HEAP_UNIT_BLOCKS / 512))	/* about 2.5 units of pages: the last one partial, as a table's */
#define UNIT_SEG_BLOCKS	131072	/* RELSEG_SIZE */
#define UNIT_MAX_CHUNKS	64

/*
 * heap_request with WARP_HEAP_UNITS: path (no NUL) at the next 8-byte
 * aligned offset after the missing values, pad bytes more of which there are
 */
static size_t
heap_request_units(const Built *bq, const Ring *r, const char *path, uint32_t seg_blocks,
				   uint32_t pad, uint8_t *buf)
{
	size_t		off = heap_request(bq, r, buf),
				n = strlen(path);
	WarpHeapRequest req;

	memcpy(&req, buf, sizeof(req));
	req.flags |= WARP_HEAP_UNITS;
	req.missing_len += pad;
	req.path_len = (uint32_t) n;
	req.seg_blocks = seg_blocks;
	memcpy(buf, &req, sizeof(req));
	memset(buf + off, 0, ((off + pad + 7) & ~(size_t) 7) - off);
	off = (off + pad + 7) & ~(size_t) 7;
	memset(buf + off, 0, (n + 7) & ~(size_t) 7);
	memcpy(buf + off, path, n);
	return off + n;
}

/* a run of chosen HEAP_CHUNKs and what came back */
typedef struct UnitRun
{
	Outcome		o;
	int			refused;		/* HEAP_CHUNKs heap_run_message refused */
	char		refused_msg[256];
	int			n_done;
	int			bad_done;		/* HEAP_DONEs not a WarpHeapChunk */
	WarpHeapChunk done[UNIT_MAX_CHUNKS];
} UnitRun;

/* the units run on device 0 only: a unit is kept in the cache of the device that decoded it */
static ServiceGpu unit_gpu;

/* unit_gpu: the_gpu's first device alone, its column cache at the service's default size */
static void
unit_gpu_one(void)
{
	unit_gpu = *the_gpu;
	unit_gpu.n_devices = 1;
	gpu_cache_configure(&unit_gpu, -1);	/* the service's default: a quarter of the memory */
}

/*
 * run_engine for request req (len bytes) over ring r with the HEAP_CHUNKs
 * ch[0 .. n), then HEAP_END; every HEAP_DONE of the run into u->done
 */
static void
run_chunks(int engine, const Built *bq, Ring *r, const uint8_t *req, size_t len,
		   const WarpHeapChunk *ch, int n, UnitRun *u)
{
	Outcome    *o = &u->o;
	int			notify = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	volatile int canceled = 0;
	uint8_t    *buf = malloc(PGWARP_MAX_PAYLOAD);
	uint32_t	blen;
	HeapRun    *h;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	memset(u, 0, sizeof(*u));
	o->run.prog = bq->prog;
	o->run.spec = bq->spec;
	o->run.n_threads = 4;
	o->run.canceled = &canceled;
	if ((h = heap_run_parse(req, len, bq->prog, r->fd, notify, o->msg, sizeof(o->msg))) == NULL)
	{
		o->rc = -1;
		o->werr = WARP_ERR_PROTOCOL;
		close(notify);
		free(buf);
		return;
	}
	for (int i = 0; i < n; i++)
		if (!heap_run_message(h, WARP_MSG_HEAP_CHUNK, (const uint8_t *) &ch[i], sizeof(ch[i]),
							  u->refused_msg, sizeof(u->refused_msg)))
			u->refused++;
	heap_run_message(h, WARP_MSG_HEAP_END, NULL, 0, o->msg, sizeof(o->msg));
	exec_run(engine, bq, h, &unit_gpu, o);
	while (heap_run_next_done(h, buf, &blen))
		if (blen == sizeof(WarpHeapChunk) && u->n_done < UNIT_MAX_CHUNKS)
			memcpy(&u->done[u->n_done++], buf, sizeof(WarpHeapChunk));
		else
			u->bad_done++;
	heap_run_free(h);
	o->run.canceled = NULL;
	o->secs = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	close(notify);
	free(buf);
}

/*
 * the HEAP_CHUNKs of ring r's filled slots as units: slot s holds unit s
 * (blocks WARP_HEAP_UNIT_BLOCKS * s ..); flags PROBE (no pages), UNIT (read from read_start_us
 * on) or 0 (plain pages); skip: a slot left out (-1: none)
 */
static int
unit_chunks(const Ring *r, uint32_t flags, int64_t read_start_us, int skip, WarpHeapChunk *ch)
{
	int			n = 0;

	for (uint32_t s = 0; s < r->n_slots; s++)
		if (r->slot_n_pages[s] > 0 && (int) s != skip)
			ch[n++] = (WarpHeapChunk) {s, flags == WARP_CHUNK_PROBE ? 0 : r->slot_n_pages[s],
				s * WARP_HEAP_UNIT_BLOCKS, flags, flags == WARP_CHUNK_UNIT ? read_start_us : 0};
	return n;
}

/*
 * u's HEAP_DONEs: one for each of the n chunks ch, each of its slot and
 * unit with flags want(i); false with why
 */
static int
dones_are(const UnitRun *u, const WarpHeapChunk *ch, int n, const uint32_t *want, char *why)
{
	if (u->refused)
		return sprintf(why, "%d HEAP_CHUNKs refused: %s", u->refused, u->refused_msg), 0;
	if (u->n_done != n || u->bad_done)
		return sprintf(why, "%d HEAP_DONEs (%d malformed) for %d chunks", u->n_done, u->bad_done,
					   n), 0;
	for (int i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; k < n; k++)
			if (u->done[k].slot == ch[i].slot)
				break;
		if (k == n)
			return sprintf(why, "no HEAP_DONE of slot %u", ch[i].slot), 0;
		if (u->done[k].unit != ch[i].unit || u->done[k].flags != want[i])
			return sprintf(why, "slot %u: unit %u flags %#x, not unit %u flags %#x", ch[i].slot,
						   u->done[k].unit, u->done[k].flags, ch[i].unit, want[i]), 0;
	}
	return 1;
}

/* dones_are with the same flags for every chunk */
static int
dones_all(const UnitRun *u, const WarpHeapChunk *ch, int n, uint32_t flags, char *why)
{
	uint32_t	want[UNIT_MAX_CHUNKS];

	for (int i = 0; i < n; i++)
		want[i] = flags;
	return dones_are(u, ch, n, want, why);
}

/* TAP: u's run ended well with cpu's groups */
static void
unit_groups(const char *name, const Built *bq, const UnitRun *u, const XpuAggTable *cpu)
{
	const Outcome *o = &u->o;
	char		why[256] = "";

	int			ok;

	if (o->rc != XPU_OK)
		heap_tap_ok(0, "%s: failed: %d %s %s", name, o->rc, o->err.message, o->msg);
	else
	{
		ok = tables_same(bq, o->table, cpu, why) && o->threads == 1;
		heap_tap_ok(ok, "%s: %ld groups as the CPU engine's%s%s", name,
					(long) xpu_agg_table_ngroups(cpu), ok ? "" : ": ",
					o->threads == 1 ? why : "it ran on the CPU engine");
	}
}

/* TAP: u's HEAP_DONEs are dones_all's */
static void
unit_dones(const char *name, const UnitRun *u, const WarpHeapChunk *ch, int n, uint32_t flags)
{
	char		why[256] = "";
	int			ok = u->o.rc == XPU_OK && dones_all(u, ch, n, flags, why);

	if (u->o.rc != XPU_OK)
		heap_tap_ok(0, "%s: failed: %d %s %s", name, u->o.rc, u->o.err.message, u->o.msg);
	else
		heap_tap_ok(ok, "%s: the %d HEAP_DONEs say %#x%s%s", name, n, flags, ok ? "" : ": ", why);
}

/* writes the pages of ring r's slots [s0, s1) into file path at block 0 (size at least len) */
static void
unit_file(const char *path, const Ring *r, uint32_t s0, uint32_t s1, off_t len)
{
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	off_t		at = 0;

	for (uint32_t s = s0; fd >= 0 && s < s1; s++)
	{
		size_t		n = (size_t) r->slot_n_pages[s] * XPU_HEAP_PAGE_SIZE;

		if (pwrite(fd, r->base + (size_t) s * r->slot_size, n, at) != (ssize_t) n)
			break;
		at += (off_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE;
	}
	if (fd < 0 || ftruncate(fd, len > at ? len : at) != 0 || close(fd) != 0)
	{
		printf("Bail out! could not write the segment file %s\n", path);
		exit(1);
	}
}

/* changes one byte of file path in place (its ctime and mtime: now) */
static void
unit_touch(const char *path)
{
	int			fd = open(path, O_WRONLY | O_CLOEXEC);
	uint8_t		b = 0x5a;

	if (fd < 0 || pwrite(fd, &b, 1, 8100) != 1 || close(fd) != 0)
	{
		printf("Bail out! could not write %s\n", path);
		exit(1);
	}
}

/* the settle delay of gpu_heap.c (1 s) and some */
static void
unit_settle(void)
{
	usleep(1200 * 1000);
}

/*
 * the file's modification time made now: a run right after reads a file
 * changed within the settle delay, however long the runs before took (on a
 * loaded machine two runs can outlast it, and the second would keep its units)
 */
static void
unit_touch_times(const char *path)
{
	if (utimensat(AT_FDCWD, path, NULL, 0) != 0)
	{
		printf("Bail out! utimensat %s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* heap_run_message of HEAP_CHUNK ch to a run of request req (len bytes) over ring r */
static bool
unit_message(const Built *bq, Ring *r, const uint8_t *req, size_t len, WarpHeapChunk ch,
			 char *msg)
{
	HeapRun    *h = heap_run_parse(req, len, bq->prog, r->fd, -1, msg, 256);
	bool		ok;

	if (h == NULL)
	{
		printf("Bail out! heap_run_parse: %s\n", msg);
		exit(1);
	}
	msg[0] = '\0';
	ok = heap_run_message(h, WARP_MSG_HEAP_CHUNK, (const uint8_t *) &ch, sizeof(ch), msg, 256);
	heap_run_free(h);
	return ok;
}

/* heap_run_parse of request req (len bytes) over r with flags added: refused (TAP) */
static void
request_refused(const char *name, const Built *bq, Ring *r, uint8_t *req, size_t len,
				uint32_t flags)
{
	WarpHeapRequest hr;
	char		msg[256] = "";
	HeapRun    *h;

	memcpy(&hr, req, sizeof(hr));
	hr.flags |= flags;
	memcpy(req, &hr, sizeof(hr));
	h = heap_run_parse(req, len, bq->prog, r->fd, -1, msg, sizeof(msg));
	heap_tap_ok(h == NULL, "%s: heap_run_parse refuses it (%s)", name, h ? "accepted" : msg);
	heap_run_free(h);
}

/* heap_run_parse of a units request over r with path, seg_blocks and extra flags: refused */
static void
unit_parse_refused(const char *name, const Built *bq, Ring *r, const char *path,
				   uint32_t seg_blocks, uint32_t flags)
{
	uint8_t    *req = calloc(1, 8192);
	size_t		len = heap_request_units(bq, r, path, seg_blocks, 0, req);
	char		what[200];

	snprintf(what, sizeof(what), "units: %s", name);
	request_refused(what, bq, r, req, len, flags);
	free(req);
}

/* the protocol's checks of unit requests and chunks (heap_run_parse, heap_run_message) */
static void
check_unit_messages(const Built *bq, Ring *r, const char *path)
{
	uint8_t    *req = calloc(1, 8192),
			   *plain = calloc(1, 8192);
	size_t		len = heap_request_units(bq, r, path, UNIT_SEG_BLOCKS, 0, req),
				plen = heap_request(bq, r, plain);
	char		msg[256];
	bool		ok;
	Gen			small = {100, 3, 0, 0, 0};
	Ring		r4;
	int64_t		now = svc_now_us(CLOCK_REALTIME);

	ok = unit_message(bq, r, req, len, (WarpHeapChunk) {0, 0, WARP_HEAP_UNIT_BLOCKS, WARP_CHUNK_PROBE, 0}, msg) &&
		unit_message(bq, r, req, len, (WarpHeapChunk) {1, WARP_HEAP_UNIT_BLOCKS, 2 * WARP_HEAP_UNIT_BLOCKS, WARP_CHUNK_UNIT, now}, msg) &&
		unit_message(bq, r, req, len, (WarpHeapChunk) {1, 7, 0, WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(ok, "units: heap_run_message takes a PROBE and UNIT chunks of a units run%s%s",
				ok ? "" : ": ", ok ? "" : msg);
	ok = unit_message(bq, r, plain, plen, (WarpHeapChunk) {0, 0, 0, WARP_CHUNK_PROBE, 0}, msg);
	heap_tap_ok(!ok, "units: a PROBE to a run without WARP_HEAP_UNITS is refused (%s)",
				ok ? "taken" : msg);
	ok = unit_message(bq, r, plain, plen, (WarpHeapChunk) {0, WARP_HEAP_UNIT_BLOCKS, 0, WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(!ok, "units: a UNIT chunk to a run without WARP_HEAP_UNITS is refused (%s)",
				ok ? "taken" : msg);
	ok = unit_message(bq, r, req, len, (WarpHeapChunk) {0, 1, 0, WARP_CHUNK_PROBE, 0}, msg);
	heap_tap_ok(!ok, "units: a PROBE with pages is refused (%s)", ok ? "taken" : msg);
	ok = unit_message(bq, r, req, len, (WarpHeapChunk) {0, 0, WARP_HEAP_UNIT_BLOCKS / 2, WARP_CHUNK_PROBE, 0}, msg);
	heap_tap_ok(!ok, "units: a PROBE of half a unit's blocks in is refused (%s)",
				ok ? "taken" : msg);
	ok = unit_message(bq, r, req, len, (WarpHeapChunk) {0, WARP_HEAP_UNIT_BLOCKS, WARP_HEAP_UNIT_BLOCKS + 1, WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(!ok, "units: a UNIT chunk of a unit one block past a unit's start is refused (%s)", ok ? "taken" : msg);
	ok = unit_message(bq, r, req, len,
					  (WarpHeapChunk) {0, 0, 0, WARP_CHUNK_PROBE | WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(!ok, "units: a chunk both PROBE and UNIT is refused (%s)", ok ? "taken" : msg);
	ok = unit_message(bq, r, req, len, (WarpHeapChunk) {0, 0, 0, WARP_CHUNK_SERVED, 0}, msg);
	heap_tap_ok(!ok, "units: a HEAP_CHUNK flagged SERVED is refused (%s)", ok ? "taken" : msg);
	/* a unit is at most WARP_HEAP_UNIT_BLOCKS pages, in a ring of larger slots */
	ring_build(&r4, &small, 2 * WARP_HEAP_UNIT_BLOCKS);
	len = heap_request_units(bq, &r4, path, UNIT_SEG_BLOCKS, 0, req);
	ok = unit_message(bq, &r4, req, len, (WarpHeapChunk) {0, WARP_HEAP_UNIT_BLOCKS, 0, WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(ok, "units: a UNIT chunk of a unit's pages in a slot of twice as many is taken%s%s",
				ok ? "" : ": ", ok ? "" : msg);
	ok = unit_message(bq, &r4, req, len, (WarpHeapChunk) {0, WARP_HEAP_UNIT_BLOCKS + 88, 0, WARP_CHUNK_UNIT, now}, msg);
	heap_tap_ok(!ok, "units: a UNIT chunk of 88 pages more than a unit is refused (%s)", ok ? "taken" : msg);
	ring_free(&r4);
	unit_parse_refused("an absolute path", bq, r, "/etc/passwd", UNIT_SEG_BLOCKS, 0);
	unit_parse_refused("a path out of the data directory", bq, r, "base/../../x",
					   UNIT_SEG_BLOCKS, 0);
	unit_parse_refused("segments of 1000 blocks", bq, r, path, 1000, 0);
	unit_parse_refused("units of a GpuScan", bq, r, path, UNIT_SEG_BLOCKS, WARP_HEAP_SCAN);
	ring_build(&r4, &small, 4);
	unit_parse_refused("units of a ring of 4-page slots", bq, &r4, path, UNIT_SEG_BLOCKS, 0);
	ring_free(&r4);
	free(req);
	free(plain);
}

/*
 * the ring of units of g into r, and one of the same layout with no pages in
 * it for the probes into blank; the units (slots with pages) it holds
 */
static int
unit_rings(Ring *r, Ring *blank, const Gen *g)
{
	uint64_t	seed = rng;
	int			n_units = 0;

	ring_build(r, g, WARP_HEAP_UNIT_BLOCKS);
	rng = seed;
	ring_build(blank, g, WARP_HEAP_UNIT_BLOCKS);
	memset(blank->base, 0, blank->size);
	for (uint32_t s = 0; s < r->n_slots; s++)
		n_units += r->slot_n_pages[s] > 0;
	return n_units;
}

void
check_units(void)
{
	Gen			g = {UNIT_ROWS, 200, 10, 0, 0};
	const Built *bq = &built[Q_BY_K],
			   *bt = &built[Q_BY_TEXT];
	Ring		r,
				blank;
	char		dir[] = "heap_gpucheck_units.XXXXXX",
				path[64],
				wide_path[64],
				seg_path[64],
				seg_file[80];
	uint8_t    *req = calloc(1, 8192),
			   *seg_req = calloc(1, 8192),
			   *plain = calloc(1, 8192);
	size_t		len,
				seg_len,
				plen;
	WarpHeapChunk ch[UNIT_MAX_CHUNKS],
				pr[UNIT_MAX_CHUNKS];
	UnitRun    *u = calloc(1, sizeof(UnitRun));
	Outcome		cpu,
				cpu_text;
	UnitRun    *cpu_skip = calloc(1, sizeof(UnitRun));
	int			n,
				n_units = 0,
				ok;
	char		why[256];
	GpuCacheStats st;
	struct stat fst;

	n_units = unit_rings(&r, &blank, &g);
	if (n_units < 3 || r.slot_n_pages[0] != WARP_HEAP_UNIT_BLOCKS ||
		r.slot_n_pages[1] != WARP_HEAP_UNIT_BLOCKS)
	{
		printf("Bail out! the units' ring has %d units, not 2 whole and a part\n", n_units);
		exit(1);
	}
	heap_tap_diag("units: %d units of %d pages (the last of %u), %ld visible tuples", n_units, WARP_HEAP_UNIT_BLOCKS,
				  r.slot_n_pages[n_units - 1], (long) r.visible);
	if (mkdtemp(dir) == NULL)
	{
		printf("Bail out! could not make a directory in the current one\n");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/16384", dir);
	snprintf(seg_path, sizeof(seg_path), "%s/16390", dir);
	unit_file(path, &r, 0, n_units, (off_t) n_units * WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE);
	/* and one unit a segment file (seg_blocks WARP_HEAP_UNIT_BLOCKS): unit s in "seg_path.s", block 0 of it */
	for (int s = 0; s < n_units; s++)
	{
		if (s == 0)
			snprintf(seg_file, sizeof(seg_file), "%s", seg_path);
		else
			snprintf(seg_file, sizeof(seg_file), "%s.%d", seg_path, s);
		unit_file(seg_file, &r, s, s + 1, (off_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE);
	}
	/* a file for one query's units kept first and a wider one's after (written now, settled below) */
	snprintf(wide_path, sizeof(wide_path), "%s/16388", dir);
	unit_file(wide_path, &r, 0, n_units, (off_t) n_units * WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE);
	len = heap_request_units(bq, &r, path, UNIT_SEG_BLOCKS, 0, req);
	plen = heap_request(bq, &r, plain);
	unit_gpu_one();
	run_engine(ENG_CPU, bq, &r, -1, &cpu);
	run_engine(ENG_CPU, bt, &r, -1, &cpu_text);
	n = unit_chunks(&blank, WARP_CHUNK_PROBE, 0, -1, pr);

	/* before any unit is kept: not served */
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes before any unit was kept", u, pr, n, WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);
	unit_settle();

	/* run 1: the units read, kept */
	n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
	run_chunks(ENG_GPU, bq, &r, req, len, ch, n, u);
	unit_groups("units: run 1, each unit a UNIT chunk", bq, u, cpu.table);
	unit_dones("units: run 1", u, ch, n, 0);
	heap_tap_ok(u->o.run.rows_in == (uint64_t) r.visible && u->o.run.bytes_cached == 0,
				"units: run 1 decoded the %ld visible tuples (rows_in %lu, bytes_cached %lu)",
				(long) r.visible, (unsigned long) u->o.run.rows_in,
				(unsigned long) u->o.run.bytes_cached);
	xpu_agg_table_free(u->o.table);

	/* run 2: every unit probed, served from the cache (the ring holds no pages) */
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: run 2, each unit probed", u, pr, n, WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	unit_groups("units: run 2, every unit served from the cache", bq, u, cpu.table);
	heap_tap_ok(u->o.run.rows_in == (uint64_t) r.visible && u->o.run.bytes_cached > 0 &&
				u->o.run.bytes_read == 0 && u->o.run.batches == (uint64_t) n,
				"units: run 2 aggregated the %ld visible tuples from the cache (rows_in %lu, "
				"bytes_cached %lu, bytes_read %lu, batches %lu)", (long) r.visible,
				(unsigned long) u->o.run.rows_in, (unsigned long) u->o.run.bytes_cached,
				(unsigned long) u->o.run.bytes_read, (unsigned long) u->o.run.batches);
	xpu_agg_table_free(u->o.table);

	/* another query over the same units: the columns it reads were kept */
	len = heap_request_units(bt, &r, path, UNIT_SEG_BLOCKS, 0, req);
	run_chunks(ENG_GPU, bt, &blank, req, len, pr, n, u);
	unit_dones("units: another query's probes", u, pr, n, WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	unit_groups("units: another query (by t, b where v > 0) served from the cache", bt, u,
				cpu_text.table);
	xpu_agg_table_free(u->o.table);
	/* the path at an aligned offset past missing values of 11 bytes */
	len = heap_request_units(bq, &r, path, UNIT_SEG_BLOCKS, 3, req);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes of a request whose path follows 11 bytes of missing values", u, pr,
			   n, WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	xpu_agg_table_free(u->o.table);
	len = heap_request_units(bq, &r, path, UNIT_SEG_BLOCKS, 0, req);

	/* a unit never kept, and the kept ones of another file of the same contents */
	{
		WarpHeapChunk other = {n, 0, (uint32_t) n * WARP_HEAP_UNIT_BLOCKS, WARP_CHUNK_PROBE, 0};
		char		copy_path[80];
		uint8_t    *copy_req = calloc(1, 8192);
		size_t		copy_len;

		if ((uint32_t) n >= blank.n_slots)
			other.slot = 0;
		run_chunks(ENG_GPU, bq, &blank, req, len, &other, 1, u);
		unit_dones("units: a probe of a unit never kept", u, &other, 1, WARP_CHUNK_PROBE);
		xpu_agg_table_free(u->o.table);
		snprintf(copy_path, sizeof(copy_path), "%s/16385", dir);
		unit_file(copy_path, &r, 0, n_units,
				  (off_t) n_units * WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE);
		copy_len = heap_request_units(bq, &r, copy_path, UNIT_SEG_BLOCKS, 0, copy_req);
		run_chunks(ENG_GPU, bq, &blank, copy_req, copy_len, pr, n, u);
		unit_dones("units: probes of a copy of the file", u, pr, n, WARP_CHUNK_PROBE);
		xpu_agg_table_free(u->o.table);
		unlink(copy_path);
		/* a symbolic link to the file is not followed */
		snprintf(copy_path, sizeof(copy_path), "%s/16386", dir);
		if (symlink("16384", copy_path) != 0)
		{
			printf("Bail out! could not make the symbolic link %s\n", copy_path);
			exit(1);
		}
		copy_len = heap_request_units(bq, &r, copy_path, UNIT_SEG_BLOCKS, 0, copy_req);
		run_chunks(ENG_GPU, bq, &blank, copy_req, copy_len, pr, n, u);
		unit_dones("units: probes through a symbolic link to the file", u, pr, n,
				   WARP_CHUNK_PROBE);
		xpu_agg_table_free(u->o.table);
		unlink(copy_path);
		/* a FIFO where the file belongs: not waited on, neither kept nor served */
		snprintf(copy_path, sizeof(copy_path), "%s/16387", dir);
		if (mkfifo(copy_path, 0600) != 0)
		{
			printf("Bail out! could not make the FIFO %s\n", copy_path);
			exit(1);
		}
		copy_len = heap_request_units(bq, &r, copy_path, UNIT_SEG_BLOCKS, 0, copy_req);
		n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
		run_chunks(ENG_GPU, bq, &r, copy_req, copy_len, ch, n, u);
		unit_groups("units: a UNIT run whose segment file is a FIFO", bq, u, cpu.table);
		xpu_agg_table_free(u->o.table);
		run_chunks(ENG_GPU, bq, &blank, copy_req, copy_len, pr, n, u);
		unit_dones("units: probes of a FIFO", u, pr, n, WARP_CHUNK_PROBE);
		xpu_agg_table_free(u->o.table);
		unlink(copy_path);
		free(copy_req);
	}

	/* the file changed: its units are stale, never served */
	unit_touch(path);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes after the file changed (stale)", u, pr, n, WARP_CHUNK_PROBE);
	heap_tap_ok(u->o.rc == XPU_OK && u->o.run.rows_in == 0 && u->o.run.bytes_cached == 0 &&
				u->o.table != NULL && xpu_agg_table_ngroups(u->o.table) == 0,
				"units: the stale units aggregated nothing (rows_in %lu, bytes_cached %lu)",
				(unsigned long) u->o.run.rows_in, (unsigned long) u->o.run.bytes_cached);
	xpu_agg_table_free(u->o.table);
	gpu_cache_stats(0, &st);
	heap_tap_ok(st.stale_drops > 0, "units: the stale units were dropped from the cache (%lu)",
				(unsigned long) st.stale_drops);

	/* units read within a second of the change: aggregated, not kept */
	n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
	run_chunks(ENG_GPU, bq, &r, req, len, ch, n, u);
	unit_groups("units: a UNIT run right after the change", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes after units read within a second of the file's change", u, pr, n,
			   WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);

	unit_settle();

	/* settled now, but a read that began within a second of the change: not kept */
	if (stat(path, &fst) != 0)
	{
		printf("Bail out! stat %s\n", path);
		exit(1);
	}
	n = unit_chunks(&r, WARP_CHUNK_UNIT,
					(int64_t) fst.st_ctim.tv_sec * 1000000 + fst.st_ctim.tv_nsec / 1000 + 500000,
					-1, ch);
	run_chunks(ENG_GPU, bq, &r, req, len, ch, n, u);
	unit_groups("units: a UNIT run that began reading 0.5 s after the change", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes after units whose read began 0.5 s after the change", u, pr, n,
			   WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);

	/* read now, more than a second after the change: kept and served again */
	n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
	run_chunks(ENG_GPU, bq, &r, req, len, ch, n, u);
	unit_groups("units: a UNIT run once the file settled", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes of the units read after the file settled", u, pr, n,
			   WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	unit_groups("units: the units read after the file settled, served", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);

	/*
	 * the file's ctime alone changed (its mtime set to what it was): stale;
	 * and units read now, the mtime long past but the ctime not: not kept
	 */
	if (stat(path, &fst) != 0)
	{
		printf("Bail out! stat %s\n", path);
		exit(1);
	}
	{
		struct timespec times[2] = {{0, UTIME_OMIT}, fst.st_mtim};

		if (utimensat(AT_FDCWD, path, times, 0) != 0)
		{
			printf("Bail out! utimensat %s\n", path);
			exit(1);
		}
	}
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes after the file's ctime alone changed (stale)", u, pr, n,
			   WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);
	n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
	run_chunks(ENG_GPU, bq, &r, req, len, ch, n, u);
	unit_groups("units: a UNIT run right after the ctime changed", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: probes after units read within a second of a ctime change (mtime old)",
			   u, pr, n, WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);

	/* one unit a segment file (written before the first settle) */
	seg_len = heap_request_units(bq, &r, seg_path, WARP_HEAP_UNIT_BLOCKS, 0, seg_req);
	n = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);
	run_chunks(ENG_GPU, bq, &r, seg_req, seg_len, ch, n, u);
	unit_groups("units: one unit a segment file, each a UNIT chunk", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, seg_req, seg_len, pr, n, u);
	unit_dones("units: one unit a segment file, probed", u, pr, n,
			   WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	unit_groups("units: one unit a segment file, served", bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	/* segment 1 changed: its unit alone is not served */
	snprintf(seg_file, sizeof(seg_file), "%s.1", seg_path);
	unit_touch(seg_file);
	{
		uint32_t	want[UNIT_MAX_CHUNKS];
		WarpHeapChunk plain_ch[UNIT_MAX_CHUNKS];
		int			np = unit_chunks(&r, 0, 0, 1, plain_ch);

		for (int i = 0; i < n; i++)
			want[i] = WARP_CHUNK_PROBE | (pr[i].slot == 1 ? 0 : WARP_CHUNK_SERVED);
		run_chunks(ENG_GPU, bq, &blank, seg_req, seg_len, pr, n, u);
		why[0] = '\0';
		ok = u->o.rc == XPU_OK && dones_are(u, pr, n, want, why);
		heap_tap_ok(ok, "units: segment 1 changed: its unit alone is not served%s%s", ok ? "" : ": ",
					u->o.rc == XPU_OK ? why : u->o.msg);
		run_chunks(ENG_CPU, bq, &r, plain, plen, plain_ch, np, cpu_skip);
		unit_groups("units: segment 1 changed: the others served", bq, u, cpu_skip->o.table);
		xpu_agg_table_free(u->o.table);
		xpu_agg_table_free(cpu_skip->o.table);
	}

	/*
	 * units kept by a query that reads some columns ("by dt"), then read by
	 * one that reads those and more ("by k"): its run keeps the others beside
	 * them, and its probes are served
	 */
	{
		const Built *bd = &built[Q_BY_DATE];
		uint8_t    *wide_req = calloc(1, 8192);
		size_t		wide_len = heap_request_units(bd, &r, wide_path, UNIT_SEG_BLOCKS, 0, wide_req);
		int			nw = unit_chunks(&r, WARP_CHUNK_UNIT, svc_now_us(CLOCK_REALTIME), -1, ch);

		run_chunks(ENG_GPU, bd, &r, wide_req, wide_len, ch, nw, u);
		xpu_agg_table_free(u->o.table);
		wide_len = heap_request_units(bq, &r, wide_path, UNIT_SEG_BLOCKS, 0, wide_req);
		run_chunks(ENG_GPU, bq, &r, wide_req, wide_len, ch, nw, u);
		unit_groups("units: by k read over units that by dt kept first", bq, u, cpu.table);
		xpu_agg_table_free(u->o.table);
		nw = unit_chunks(&blank, WARP_CHUNK_PROBE, 0, -1, pr);
		run_chunks(ENG_GPU, bq, &blank, wide_req, wide_len, pr, nw, u);
		unit_dones("units: probes by k once by dt and by k kept their columns", u, pr, nw,
				   WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
		unit_groups("units: by k served from the columns of both runs", bq, u, cpu.table);
		xpu_agg_table_free(u->o.table);
		unlink(wide_path);
		free(wide_req);
	}

	/* the CPU engine keeps no units: NO_CACHE */
	run_chunks(ENG_CPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: the CPU engine's probes", u, pr, n, WARP_CHUNK_PROBE | WARP_CHUNK_NO_CACHE);
	xpu_agg_table_free(u->o.table);
	/* nor does the GPU without its cache */
	gpu_cache_configure(&unit_gpu, 0);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones("units: the probes of a GPU with its cache off", u, pr, n,
			   WARP_CHUNK_PROBE | WARP_CHUNK_NO_CACHE);
	xpu_agg_table_free(u->o.table);

	check_unit_messages(bq, &r, path);

	for (int s = 0; s < n_units; s++)
	{
		if (s == 0)
			snprintf(seg_file, sizeof(seg_file), "%s", seg_path);
		else
			snprintf(seg_file, sizeof(seg_file), "%s.%d", seg_path, s);
		unlink(seg_file);
	}
	unlink(path);
	rmdir(dir);
	xpu_agg_table_free(cpu.table);
	xpu_agg_table_free(cpu_text.table);
	ring_free(&r);
	ring_free(&blank);
	free(u);
	free(cpu_skip);
	free(req);
	free(seg_req);
	free(plain);
}

/* ---------------- units read by the service ---------------- */

/*
 * WARP_HEAP_SERVICE_READS (protocol.h, gpu_heap.c's "Units read here"): a
 * GPU run that misses a probed unit reads it from the segment file itself,
 * takes each page as the backend's direct read would, aggregates and
 * keeps it; a unit it cannot take so goes back as a miss.  The files hold
 * the units' pages marked all-visible, as VACUUM leaves a settled table.
 */

#define UR_OK			0
#define UR_NOT_VISIBLE	1		/* a page of unit 1 without PD_ALL_VISIBLE */
#define UR_BAD_HEADER	2		/* a page of unit 1 whose pd_lower passes its pd_upper */
#define UR_ZERO_UPPER	3		/* a page of unit 1 with pd_upper 0 that is not all zeros */
#define UR_BAD_FLAGS	4		/* a page of unit 1 with a pd_flags bit PostgreSQL never sets */

/*
 * writes ring r's n_units units into file path, unit s at block s * a
 * unit's blocks, each page marked PD_ALL_VISIBLE, the rest of a partial
 * unit all zeros (new pages); damage in unit 1's page 5; the file then
 * cut or extended to len bytes
 */
static void
unit_file_visible(const char *path, const Ring *r, int n_units, off_t len, int damage)
{
	size_t		n = (size_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE;
	uint8_t    *buf = malloc(n);
	int			fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int			ok = buf != NULL && fd >= 0;

	for (int s = 0; ok && s < n_units; s++)
	{
		memset(buf, 0, n);
		memcpy(buf, r->base + (size_t) s * r->slot_size,
			   (size_t) r->slot_n_pages[s] * XPU_HEAP_PAGE_SIZE);
		for (uint32_t p = 0; p < r->slot_n_pages[s]; p++)
			buf[(size_t) p * XPU_HEAP_PAGE_SIZE + 10] |= 0x04;	/* pd_flags: PD_ALL_VISIBLE */
		if (s == 1 && damage != UR_OK)
		{
			uint8_t    *pg = buf + 5 * XPU_HEAP_PAGE_SIZE;
			uint16_t	v;

			if (damage == UR_NOT_VISIBLE)
				pg[10] &= (uint8_t) ~0x04;
			else if (damage == UR_BAD_FLAGS)
				pg[10] |= 0x08;
			else if (damage == UR_BAD_HEADER)
			{
				memcpy(&v, pg + 14, 2);	/* pd_upper */
				v += 8;
				memcpy(pg + 12, &v, 2);	/* pd_lower */
			}
			else
				memset(pg + 14, 0, 2);
		}
		ok = pwrite(fd, buf, n, (off_t) s * (off_t) n) == (ssize_t) n;
	}
	if (!ok || ftruncate(fd, len) != 0 || close(fd) != 0)
	{
		printf("Bail out! could not write the segment file %s\n", path);
		exit(1);
	}
	free(buf);
}

/* heap_request_units with WARP_HEAP_SERVICE_READS */
static size_t
heap_request_reads(const Built *bq, const Ring *r, const char *path, uint8_t *buf)
{
	size_t		len = heap_request_units(bq, r, path, UNIT_SEG_BLOCKS, 0, buf);
	WarpHeapRequest req;

	memcpy(&req, buf, sizeof(req));
	req.flags |= WARP_HEAP_SERVICE_READS;
	memcpy(buf, &req, sizeof(req));
	return len;
}

/* TAP: u's HEAP_DONEs say READ for every unit but those of slots >= from, or slot `miss` */
static void
unit_reads_dones(const char *name, const UnitRun *u, const WarpHeapChunk *pr, int n, int miss,
				 int from)
{
	uint32_t	want[UNIT_MAX_CHUNKS];
	char		why[256] = "";
	int			ok;

	for (int i = 0; i < n; i++)
		want[i] = WARP_CHUNK_PROBE |
			((int) pr[i].slot == miss || (int) pr[i].slot >= from ? 0 :
			 WARP_CHUNK_SERVED | WARP_CHUNK_READ);
	ok = u->o.rc == XPU_OK && dones_are(u, pr, n, want, why);
	heap_tap_ok(ok, "%s%s%s", name, ok ? "" : ": ", u->o.rc == XPU_OK ? why : u->o.msg);
}

/*
 * a file the stand-in libcufile refuses (PG_WARP_FAKE_CUFILE_REFUSE): with
 * pg_warp.gpudirect on the run fails and says why; with auto (nvidia-fs
 * "loaded") its units are read with pread, every answer right
 */
static void
unit_reads_refused(const Built *bq, Ring *blank, const Ring *r, const XpuAggTable *cpu,
				   const WarpHeapChunk *pr, int n, const char *dir, off_t full, UnitRun *u)
{
	char		path[80];
	uint8_t    *req = calloc(1, 8192);
	size_t		len;

	snprintf(path, sizeof(path), "%s/16412", dir);
	unit_file_visible(path, r, n, full, UR_OK);
	len = heap_request_reads(bq, r, path, req);
	setenv("PG_WARP_FAKE_CUFILE_REFUSE", "1", 1);
	run_chunks(ENG_GPU, bq, blank, req, len, pr, n, u);
	heap_tap_ok(u->o.rc != XPU_OK && strstr(u->o.msg, "with cuFile") != NULL &&
				strstr(u->o.msg, "error 5027") != NULL,
				"unit reads with cuFile: on, a segment file cuFile refuses: the run fails (%s)",
				u->o.msg);
	xpu_agg_table_free(u->o.table);
	/* auto, where nvidia-fs is "loaded" and the library runs GPUDirect Storage */
	gpu_direct_stop();
	setenv("PG_WARP_TEST_NVFS_PROC", path, 1);
	setenv("PG_WARP_FAKE_CUFILE_GDS", "1", 1);
	gpu_direct_configure(GPU_DIRECT_AUTO, NULL);
	gpu_direct_start(&unit_gpu);
	run_chunks(ENG_GPU, bq, blank, req, len, pr, n, u);
	unit_reads_dones("unit reads with cuFile: auto, a segment file cuFile refuses: read with pread",
					 u, pr, n, -1, n);
	unit_groups("unit reads with cuFile: auto, the refused file's units", bq, u, cpu);
	heap_tap_ok(gpu_direct_mode() == WARP_CUFILE_GDS && u->o.run.bytes_direct == 0 &&
				u->o.run.bytes_read > 0,
				"unit reads with cuFile: auto, nothing read with cuFile (mode %u, bytes_read %lu, "
				"with cuFile %lu)", gpu_direct_mode(), (unsigned long) u->o.run.bytes_read,
				(unsigned long) u->o.run.bytes_direct);
	xpu_agg_table_free(u->o.table);
	unsetenv("PG_WARP_FAKE_CUFILE_REFUSE");
	unsetenv("PG_WARP_TEST_NVFS_PROC");
	unsetenv("PG_WARP_FAKE_CUFILE_GDS");
	unlink(path);
	free(req);
}

/*
 * unit_bytes_taken: the run counted bytes bytes read, and as read with
 * cuFile all of them (cufile) or none: a unit given back to the backend
 * counts in neither, though some of its slices were read
 */
static void
unit_bytes_taken(const char *what, const UnitRun *u, uint64_t bytes, bool cufile)
{
	heap_tap_ok(u->o.run.bytes_read == bytes && u->o.run.bytes_direct == (cufile ? bytes : 0),
				"%s: only the units taken counted (bytes_read %lu, with cuFile %lu, want %lu)",
				what, (unsigned long) u->o.run.bytes_read, (unsigned long) u->o.run.bytes_direct,
				(unsigned long) bytes);
}

/* how check_unit_reads reads the units: "" (pread) or " with cuFile" */
static const char *ur_how = "";

/* "unit reads" and ur_how before what (a few at a time: TAP names and formats) */
static const char *
UR(const char *what)
{
	static char buf[4][256];
	static int	k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "unit reads%s: %s", ur_how, what);
	return buf[k];
}

void
check_unit_reads(const char *cufile)
{
	Gen			g = {UNIT_ROWS, 200, 10, 0, 0};
	const Built *bq = &built[Q_BY_K];
	Ring		r,
				blank;
	char		dir[] = "heap_gpucheck_reads.XXXXXX",
				path[80];
	uint8_t    *req = calloc(1, 8192),
			   *plain = calloc(1, 8192);
	size_t		len,
				plen,
				unit_bytes = (size_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE;
	off_t		full;
	WarpHeapChunk pr[UNIT_MAX_CHUNKS],
				plain_ch[UNIT_MAX_CHUNKS];
	UnitRun    *u = calloc(1, sizeof(UnitRun)),
			   *ref = calloc(1, sizeof(UnitRun));
	Outcome		cpu;
	int			n,
				np,
				n_units = 0;
	static const struct
	{
		int			damage;
		const char *what;
	}			damages[] = {
		{UR_NOT_VISIBLE, "a page without PD_ALL_VISIBLE"},
		{UR_BAD_HEADER, "a page whose pd_lower passes its pd_upper"},
		{UR_ZERO_UPPER, "a page with pd_upper 0 that is not all zeros"},
		{UR_BAD_FLAGS, "a page with an unknown pd_flags bit"},
	};

	n_units = unit_rings(&r, &blank, &g);
	if (n_units < 3 || mkdtemp(dir) == NULL)
	{
		printf("Bail out! unit reads: %d units, or no directory\n", n_units);
		exit(1);
	}
	full = (off_t) n_units * (off_t) unit_bytes;
	unit_gpu_one();
	ur_how = "";
	if (cufile != NULL)
	{
		/* pg_warp.gpudirect = on: every unit read with cuFile, into device memory */
		ur_how = " with cuFile";
		gpu_direct_configure(GPU_DIRECT_ON, cufile);
		gpu_direct_start(&unit_gpu);
		if (!heap_tap_ok(gpu_direct_mode() != WARP_CUFILE_NONE, UR("%s loaded (%s)"), cufile,
						 gpu_direct_unusable() != NULL ? gpu_direct_unusable() : "its mode"))
		{
			gpu_direct_configure(GPU_DIRECT_OFF, NULL);
			rmdir(dir);
			return;
		}
		heap_tap_diag("%s", UR(gpu_direct_mode() == WARP_CUFILE_GDS ? "GPUDirect Storage" :
							   "compatibility mode"));
	}
	run_engine(ENG_CPU, bq, &r, -1, &cpu);
	n = unit_chunks(&blank, WARP_CHUNK_PROBE, 0, -1, pr);
	plen = heap_request(bq, &r, plain);
	snprintf(path, sizeof(path), "%s/16384", dir);
	unit_file_visible(path, &r, n_units, full, UR_OK);
	len = heap_request_reads(bq, &r, path, req);

	/* the file just written: read and aggregated, not kept (it changed within a second) */
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_reads_dones(UR("probes the cache misses, each unit read by the service"), u,
					 pr, n, -1, n);
	unit_groups(UR("the units read by the service"), bq, u, cpu.table);
	heap_tap_ok(u->o.run.rows_in == (uint64_t) r.visible &&
				u->o.run.bytes_read == (uint64_t) n * unit_bytes && u->o.run.bytes_cached == 0 &&
				u->o.run.bytes_direct == (cufile != NULL ? u->o.run.bytes_read : 0),
				UR("%d units read, %ld tuples (rows_in %lu, bytes_read %lu, bytes_cached %lu, "
				   "with cuFile %lu)"),
				n, (long) r.visible, (unsigned long) u->o.run.rows_in,
				(unsigned long) u->o.run.bytes_read, (unsigned long) u->o.run.bytes_cached,
				(unsigned long) u->o.run.bytes_direct);
	xpu_agg_table_free(u->o.table);
	unit_touch_times(path);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_reads_dones(UR("a file changed within a second: read again, not kept"), u,
					 pr, n, -1, n);
	xpu_agg_table_free(u->o.table);

	/* settled: read and kept, then served from the cache */
	unit_settle();
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_reads_dones(UR("the settled file's units read"), u, pr, n, -1, n);
	unit_groups(UR("the settled file's units"), bq, u, cpu.table);
	xpu_agg_table_free(u->o.table);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones(UR("probes of the units the service read and kept"), u, pr, n,
			   WARP_CHUNK_PROBE | WARP_CHUNK_SERVED);
	unit_groups(UR("served from the cache"), bq, u, cpu.table);
	heap_tap_ok(u->o.run.bytes_read == 0 && u->o.run.bytes_cached > 0,
				UR("nothing read the second time (bytes_read %lu, bytes_cached %lu)"),
				(unsigned long) u->o.run.bytes_read, (unsigned long) u->o.run.bytes_cached);
	xpu_agg_table_free(u->o.table);

	/* without WARP_HEAP_SERVICE_READS, a file the cache does not hold: misses */
	snprintf(path, sizeof(path), "%s/16385", dir);
	unit_file_visible(path, &r, n_units, full, UR_OK);
	len = heap_request_units(bq, &r, path, UNIT_SEG_BLOCKS, 0, req);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones(UR("a request without SERVICE_READS: the backend reads them"), u, pr, n,
			   WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);
	/* nor does the CPU engine read any */
	len = heap_request_reads(bq, &r, path, req);
	run_chunks(ENG_CPU, bq, &blank, req, len, pr, n, u);
	unit_dones(UR("the CPU engine reads none"), u, pr, n,
			   WARP_CHUNK_PROBE | WARP_CHUNK_NO_CACHE);
	xpu_agg_table_free(u->o.table);
	unlink(path);

	/* a page the service may not take as read: that unit is the backend's, the others read */
	np = unit_chunks(&r, 0, 0, 1, plain_ch);
	run_chunks(ENG_CPU, bq, &r, plain, plen, plain_ch, np, ref);
	for (size_t d = 0; d < sizeof(damages) / sizeof(damages[0]); d++)
	{
		char		name[160];

		snprintf(path, sizeof(path), "%s/1640%d", dir, (int) d);
		unit_file_visible(path, &r, n_units, full, damages[d].damage);
		len = heap_request_reads(bq, &r, path, req);
		run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
		snprintf(name, sizeof(name), UR("%s: its unit missed, the others read"),
				 damages[d].what);
		unit_reads_dones(name, u, pr, n, 1, n);
		unit_groups(name, bq, u, ref->o.table);
		unit_bytes_taken(name, u, (uint64_t) (n - 1) * unit_bytes, cufile != NULL);
		xpu_agg_table_free(u->o.table);
		unlink(path);
	}
	xpu_agg_table_free(ref->o.table);

	/* a file cut in the middle of unit 1: unit 0 read, the rest missed */
	snprintf(path, sizeof(path), "%s/16410", dir);
	unit_file_visible(path, &r, n_units, (off_t) unit_bytes + (off_t) unit_bytes / 2, UR_OK);
	len = heap_request_reads(bq, &r, path, req);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_reads_dones(UR("a file cut in unit 1: unit 0 read, the others missed"), u, pr,
					 n, -1, 1);
	unit_bytes_taken(UR("a file cut in unit 1"), u, unit_bytes, cufile != NULL);
	plain_ch[0] = (WarpHeapChunk) {0, r.slot_n_pages[0], 0, 0, 0};
	run_chunks(ENG_CPU, bq, &r, plain, plen, plain_ch, 1, ref);
	unit_groups(UR("a file cut in unit 1, unit 0's groups"), bq, u, ref->o.table);
	xpu_agg_table_free(ref->o.table);
	xpu_agg_table_free(u->o.table);
	unlink(path);

	/* no file, and a FIFO where it belongs (not waited on): every unit missed */
	snprintf(path, sizeof(path), "%s/16411", dir);
	len = heap_request_reads(bq, &r, path, req);
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones(UR("no segment file: every unit missed"), u, pr, n, WARP_CHUNK_PROBE);
	xpu_agg_table_free(u->o.table);
	if (mkfifo(path, 0600) != 0)
	{
		printf("Bail out! could not make the FIFO %s\n", path);
		exit(1);
	}
	run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
	unit_dones(UR("a FIFO where the segment file belongs: every unit missed"), u, pr, n,
			   WARP_CHUNK_PROBE);
	heap_tap_ok(u->o.rc == XPU_OK && u->o.run.rows_in == 0,
				UR("nothing aggregated from the FIFO (rows_in %lu)"),
				(unsigned long) u->o.run.rows_in);
	xpu_agg_table_free(u->o.table);
	unlink(path);

	/* SERVICE_READS is a units request's only */
	request_refused(UR("SERVICE_READS without UNITS"), bq, &r, plain, plen,
					WARP_HEAP_SERVICE_READS);

	/* the stand-in libcufile refusing the file: on fails the run, auto reads it with pread */
	if (cufile != NULL && fake_unit_allocs != NULL)
		unit_reads_refused(bq, &blank, &r, cpu.table, pr, n, dir, full, u);
	if (cufile != NULL)
	{
		gpu_direct_stop();
		gpu_direct_configure(GPU_DIRECT_OFF, NULL);
	}
	snprintf(path, sizeof(path), "%s/16384", dir);
	unlink(path);
	rmdir(dir);
	xpu_agg_table_free(cpu.table);
	ring_free(&r);
	ring_free(&blank);
	free(u);
	free(ref);
	free(req);
	free(plain);
}

/* ---------------- units from registered pages ---------------- */

/* waits (10 s at most) until nothing is queued to be registered; the bytes registered */
static uint64_t
unit_reg_wait(void)
{
	uint64_t	pinned = 0,
				queued = 1;

	for (int i = 0; i < 1000 && queued > 0; i++)
	{
		file_reg_stats(&pinned, &queued);
		if (queued > 0)
			usleep(10 * 1000);
	}
	return queued > 0 ? 0 : pinned;
}

/*
 * unit_pinned_pair: the file at path read twice by runs that read every
 * unit (the file changed within the settle delay: none kept): the first
 * with pread, queueing the file's regions, the second, once they are
 * registered, copying from the registered pages; each run's HEAP_DONEs
 * (miss: the unit missed, from: the units missed from there on), its
 * groups against ref, and the bytes each copied from there (want_mapped
 * the second time: the units taken, not those that went back)
 */
static void
unit_pinned_pair(const char *what, const Built *bq, Ring *blank, const char *path,
				 const WarpHeapChunk *pr, int n, int miss, int from, const XpuAggTable *ref,
				 uint64_t want_mapped, UnitRun *u)
{
	uint8_t    *req = calloc(1, 8192);
	size_t		len = heap_request_reads(bq, blank, path, req),
				unit_bytes = (size_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE;
	uint64_t	pinned;
	char		name[200];

	/* (a stand-in driver that refuses registrations: every unit read with pread) */
	if (getenv("PG_WARP_FAKE_CUDA_NO_REGISTER") != NULL)
		want_mapped = 0;
	/* changed now: neither run keeps a unit (the second starts well within the delay) */
	unit_touch_times(path);
	for (int run = 1; run <= 2; run++)
	{
		if (run == 2)
		{
			/* the first run's regions registered (the registering thread waits for no run) */
			pinned = unit_reg_wait();
			heap_tap_ok(pinned >= want_mapped, "units from registered pages: %s: %lu bytes "
						"registered once the first run ended (%lu wanted)", what,
						(unsigned long) pinned, (unsigned long) want_mapped);
		}
		run_chunks(ENG_GPU, bq, blank, req, len, pr, n, u);
		snprintf(name, sizeof(name), "units from registered pages: %s, run %d", what, run);
		unit_reads_dones(name, u, pr, n, miss, from);
		unit_groups(name, bq, u, ref);
		heap_tap_ok(u->o.run.bytes_mapped == (run == 1 ? 0 : want_mapped) &&
					(run == 1 ? u->o.run.bytes_to_pin >= want_mapped : u->o.run.bytes_to_pin == 0) &&
					u->o.run.bytes_read >= u->o.run.bytes_mapped &&
					u->o.run.bytes_read % unit_bytes == 0,
					"%s: copied from registered pages %lu bytes (%lu wanted), queued %lu, "
					"read %lu", name, (unsigned long) u->o.run.bytes_mapped,
					(unsigned long) (run == 1 ? 0 : want_mapped),
					(unsigned long) u->o.run.bytes_to_pin, (unsigned long) u->o.run.bytes_read);
		xpu_agg_table_free(u->o.table);
	}
	free(req);
}

/*
 * Units from registered pages (gpu_heap.c): with file pages kept registered
 * (file_reg.c, --pinned-files), a unit the service reads queues its region;
 * once registered, later runs copy the unit from there and check its pages
 * on the device (kern_heap_check), every answer the CPU engine's: a page
 * refused there leaves that unit to the backend, and a unit that runs past
 * the file's end is never copied from the mapping (a file written since,
 * registered anew: test_heap_gpu_cache.py on a GPU host).
 */
void
check_unit_reads_pinned(void)
{
	Gen			g = {UNIT_ROWS, 200, 10, 0, 0};
	const Built *bq = &built[Q_BY_K];
	Ring		r,
				blank;
	char		dir[] = "heap_gpucheck_pinned.XXXXXX",
				path[80];
	uint8_t    *plain = calloc(1, 8192);
	size_t		plen,
				unit_bytes = (size_t) WARP_HEAP_UNIT_BLOCKS * XPU_HEAP_PAGE_SIZE;
	WarpHeapChunk pr[UNIT_MAX_CHUNKS],
				plain_ch[UNIT_MAX_CHUNKS];
	UnitRun    *u = calloc(1, sizeof(UnitRun)),
			   *ref = calloc(1, sizeof(UnitRun));
	Outcome		cpu;
	off_t		full;
	int			n,
				np,
				n_units = unit_rings(&r, &blank, &g);

	/* the service's mappings of files (file_map.c), as main.c sets them up */
	if (n_units < 3 || mkdtemp(dir) == NULL || !svc_file_map_init())
	{
		printf("Bail out! units from registered pages: %d units, no directory or no mappings\n",
			   n_units);
		exit(1);
	}
	full = (off_t) n_units * (off_t) unit_bytes;
	unit_gpu_one();
	file_reg_set_limit((uint64_t) 1 << 30);
	run_engine(ENG_CPU, bq, &r, -1, &cpu);
	n = unit_chunks(&blank, WARP_CHUNK_PROBE, 0, -1, pr);
	plen = heap_request(bq, &r, plain);

	snprintf(path, sizeof(path), "%s/16384", dir);
	unit_file_visible(path, &r, n_units, full, UR_OK);
	unit_pinned_pair("every unit", bq, &blank, path, pr, n, -1, n, cpu.table,
					 (uint64_t) n * unit_bytes, u);

	/* a page kern_heap_check refuses in a registered unit: that unit is the backend's */
	np = unit_chunks(&r, 0, 0, 1, plain_ch);
	run_chunks(ENG_CPU, bq, &r, plain, plen, plain_ch, np, ref);
	snprintf(path, sizeof(path), "%s/16385", dir);
	unit_file_visible(path, &r, n_units, full, UR_BAD_HEADER);
	unit_pinned_pair("a page whose pd_lower passes its pd_upper", bq, &blank, path, pr, n,
					 1, n, ref->o.table, (uint64_t) (n - 1) * unit_bytes, u);
	xpu_agg_table_free(ref->o.table);

	/* a file cut in unit 1: unit 0 from the registered pages, the others the backend's */
	snprintf(path, sizeof(path), "%s/16386", dir);
	unit_file_visible(path, &r, n_units, (off_t) unit_bytes + (off_t) unit_bytes / 2, UR_OK);
	plain_ch[0] = (WarpHeapChunk) {0, r.slot_n_pages[0], 0, 0, 0};
	run_chunks(ENG_CPU, bq, &r, plain, plen, plain_ch, 1, ref);
	unit_pinned_pair("a file cut in unit 1", bq, &blank, path, pr, n, -1, 1, ref->o.table,
					 (uint64_t) unit_bytes, u);
	xpu_agg_table_free(ref->o.table);

	/* as the service's end does: no registration left (the check at the end counts them) */
	if (gpu_drv.cuCtxPushCurrent(gpu_device_context(0)) == CUDA_SUCCESS)
	{
		CUcontext	popped;

		file_reg_stop();
		file_reg_drop_unheld();
		gpu_drv.cuCtxPopCurrent(&popped);
	}
	file_reg_set_limit(0);
	for (int i = 16384; i <= 16386; i++)
	{
		snprintf(path, sizeof(path), "%s/%d", dir, i);
		unlink(path);
	}
	rmdir(dir);
	xpu_agg_table_free(cpu.table);
	ring_free(&r);
	ring_free(&blank);
	free(u);
	free(ref);
	free(plain);
}

/*
 * the units' pinned buffers pinned at the service's start (gpu_agg_prewarm's
 * unit_buffers): a run that reads every unit of a file takes its slots'
 * buffers from them, pinning none of its own, and gives them back for the
 * next run; the answers stay the CPU engine's (the stand-in counts the
 * unit-sized pinned allocations and the copies from the prewarmed ones)
 */
void
check_unit_buffers(void)
{
	Gen			g = {UNIT_ROWS, 200, 10, 0, 0};
	const Built *bq = &built[Q_BY_K];
	Ring		r,
				blank;
	char		dir[] = "heap_gpucheck_bufs.XXXXXX",
				path[80];
	uint8_t    *req = calloc(1, 8192);
	size_t		len;
	WarpHeapChunk pr[UNIT_MAX_CHUNKS];
	UnitRun    *u = calloc(1, sizeof(UnitRun));
	Outcome		cpu;
	int			n,
				n_units = unit_rings(&r, &blank, &g),
				before = *fake_unit_allocs;

	if (n_units < 3 || mkdtemp(dir) == NULL)
	{
		printf("Bail out! unit buffers: %d units, or no directory\n", n_units);
		exit(1);
	}
	*fake_unit_watch = before;
	gpu_agg_prewarm(&unit_gpu, 3, gpu_heap_unit_buffer_bytes());	/* two slots and one more */
	heap_tap_ok(*fake_unit_allocs - before == 3,
				"unit buffers: %d pinned at the start (of 3 asked), %zu bytes each",
				*fake_unit_allocs - before, gpu_heap_unit_buffer_bytes());
	run_engine(ENG_CPU, bq, &r, -1, &cpu);
	n = unit_chunks(&blank, WARP_CHUNK_PROBE, 0, -1, pr);
	snprintf(path, sizeof(path), "%s/16384", dir);
	/* just written: every run reads every unit and keeps none */
	unit_file_visible(path, &r, n_units, (off_t) n_units * WARP_HEAP_UNIT_BLOCKS *
					  XPU_HEAP_PAGE_SIZE, UR_OK);
	len = heap_request_reads(bq, &r, path, req);
	for (int i = 0; i < 2; i++)
	{
		int			allocs = *fake_unit_allocs,
					copies = *fake_unit_copies;
		char		name[96];

		run_chunks(ENG_GPU, bq, &blank, req, len, pr, n, u);
		snprintf(name, sizeof(name), "unit buffers: run %d, every unit read", i + 1);
		unit_reads_dones(name, u, pr, n, -1, n);
		unit_groups(name, bq, u, cpu.table);
		heap_tap_ok(*fake_unit_allocs == allocs && *fake_unit_copies - copies >= n,
					"unit buffers: run %d pinned %d unit buffers of its own, copied %d units "
					"from the kept ones (%d read)", i + 1, *fake_unit_allocs - allocs,
					*fake_unit_copies - copies, n);
		xpu_agg_table_free(u->o.table);
	}
	unlink(path);
	rmdir(dir);
	xpu_agg_table_free(cpu.table);
	ring_free(&r);
	ring_free(&blank);
	free(u);
	free(req);
}
