/*
 * heap_gpucheck.c
 *		On a GPU host: GpuPreAgg over heap tables on the GPU (kern_heap.cu
 *		decoding, kern_agg.cu aggregating, driven by service/heap_chunk.c's
 *		heap_run_exec_gpu and service/gpu_agg.c) against the CPU engine's
 *		heap_run_exec over the same ring of chunks.  No service process, no
 *		PostgreSQL: the heap pages are built here in PostgreSQL 15's on-disk
 *		format, by the rules test/python/test_service_heap.py uses (tuple
 *		headers, null bitmaps, alignment, short and long varlena headers, a
 *		dropped column, an attribute missing from older tuples, per-tuple
 *		visibility bitmaps and all-visible pages), and shipped through a
 *		sealed memfd as the backend does.  Prints TAP.
 *
 *		heap_gpucheck FATBIN
 *
 * Cases: every column type the heap decode serves (int2/4/8, float2/4/8,
 * numeric, date, timestamp, text, bool) with NULLs, grouped and not, an
 * empty run and a chunk of invisible tuples, one tuple, 10^6 tuples, the
 * FALLBACKs (a compressed value, a numeric NaN, a line pointer that is not
 * a tuple) and a cancel.  Every group must match the CPU engine's:
 * integers, numerics and counts exactly, float sums within 1e-9 relative.
 * On the GPU (or "fake") also the units of WARP_HEAP_UNITS: kept in the
 * GPU column cache by a run of UNIT chunks, served to later probes while
 * their segment file is unchanged and never after, kept only when the file
 * had settled before their read began; with segment files made in a
 * directory of the current one, removed at the end (those checks are in
 * heap_gpucheck_units.c, the types and runs both use in heap_gpucheck.h).
 *
 * Without a GPU the same cases run the GPU path's per-tuple functions
 * (xpu/xpu_heap_gpu.h) on the host in the kernels' order, with the CPU
 * engine's aggregation over the decoded columns, so the decode and its
 * column layout are checked on any machine.  With "fake" (heap_gpucheck
 * FATBIN fake, libcuda.so.1 being fake_cuda.c's stand-in) the service's
 * GPU path itself runs, its kernels emulated on the host and its
 * aggregation done by the CPU engine into a side table that is compared.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "service/gpu_agg_int.h"
#include "service/gpu_driver.h"
#include "service/join_store.h"
#include "xpu/xpu_agg.h"
#include "xpu/xpu_half.h"
#include "xpu/xpu_heap_gpu.h"
#include "xpu/xpu_program.h"
#include "tap.h"
#include "heap_gpucheck.h"

/* what the service's main.c and server.c define */
ServiceCounters svc_counters;

void
svc_log(const char *level, const char *fmt,...)
{
	va_list		ap;

	printf("# %s: ", level);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

int64_t
svc_now_us(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t	rng = 88172645463325252ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---------------- the table ---------------- */

/* the attributes (A_*) and a case's rows (Gen): heap_gpucheck.h */

#define OLD_NATTS	(N_ATTS - 1)	/* tuples from before A_M was added */
#define M_MISSING	INT64_C(42)		/* A_M's missing value */

static const struct
{
	int16_t		attlen;
	uint8_t		align;
	XpuType		type;
	XpuColKind	kind;
}			atts[N_ATTS] = {
	[A_K] = {4, 4, XPU_T_INT4, XPU_COL_INT32},
	[A_DROPPED] = {4, 4, XPU_T_INT4, XPU_COL_INT32},
	[A_S] = {2, 2, XPU_T_INT2, XPU_COL_INT16},
	[A_B] = {1, 1, XPU_T_BOOL, XPU_COL_BOOL},
	[A_V] = {8, 8, XPU_T_INT8, XPU_COL_INT64},
	[A_F4] = {4, 4, XPU_T_FLOAT4, XPU_COL_FLOAT32},
	[A_F8] = {8, 8, XPU_T_FLOAT8, XPU_COL_FLOAT64},
	[A_N] = {-1, 4, XPU_T_NUMERIC, XPU_COL_DECIMAL128},
	[A_DT] = {4, 4, XPU_T_DATE, XPU_COL_DATE32},
	[A_TS] = {8, 8, XPU_T_TIMESTAMP, XPU_COL_TIMESTAMP_US},
	[A_T] = {-1, 4, XPU_T_TEXT, XPU_COL_UTF8},
	[A_H] = {2, 2, XPU_T_FLOAT2, XPU_COL_FLOAT16},
	[A_M] = {8, 8, XPU_T_INT8, XPU_COL_INT64},
};

#define DMG_COMPRESSED	1
#define DMG_NAN			2
#define DMG_LP_UNUSED	3

/* a numeric of scale 2 (v / 100) as its varlena data (NumericShort or Long) */
static size_t
numeric_bytes(__int128 v, int long_form, uint8_t *out)
{
	int			neg = v < 0;
	unsigned __int128 a = neg ? -(unsigned __int128) v : (unsigned __int128) v;
	uint64_t	ip = (uint64_t) (a / 100),
				fp = (uint64_t) (a % 100);
	int16_t		ig[8],
				dig[10];
	int			ni = 0,
				nd = 0,
				weight;
	size_t		n = 0;

	for (uint64_t x = ip; x > 0; x /= 10000)
		ig[ni++] = (int16_t) (x % 10000);
	for (int i = ni - 1; i >= 0; i--)
		dig[nd++] = ig[i];
	weight = ni - 1;
	if (fp != 0)
		dig[nd++] = (int16_t) (fp * 100);
	while (nd > 0 && dig[nd - 1] == 0)
		nd--;
	if (nd == 0)
		weight = 0, neg = 0;
	if (!long_form)
	{
		uint16_t	h = 0x8000 | (neg ? 0x2000 : 0) | (2 << 7) | (weight & 0x7F);

		memcpy(out, &h, 2);
		n = 2;
	}
	else
	{
		uint16_t	h = (neg ? 0x4000 : 0) | 2;
		int16_t		w = (int16_t) weight;

		memcpy(out, &h, 2);
		memcpy(out + 2, &w, 2);
		n = 4;
	}
	memcpy(out + n, dig, 2 * (size_t) nd);
	return n + 2 * (size_t) nd;
}

/* appends a varlena of data (len bytes) at off of tuple buf: short header or 4-byte aligned */
static uint32_t
put_varlena(uint8_t *buf, uint32_t off, const uint8_t *data, uint32_t len, int want_short,
			uint8_t flags4)
{
	if (want_short && len + 1 <= 127)
	{
		buf[off] = (uint8_t) (((len + 1) << 1) | 1);
		memcpy(buf + off + 1, data, len);
		return off + 1 + len;
	}
	off = xpu_heap_align(off, 4);
	{
		uint32_t	h = ((len + 4) << 2) | flags4;

		memcpy(buf + off, &h, 4);
	}
	memcpy(buf + off + 4, data, len);
	return off + 4 + len;
}

/* one attribute's value of row r (damage: plant the case's bad value here) */
static uint32_t
put_att(uint8_t *buf, uint32_t off, int a, int64_t r, int damage)
{
	uint64_t	x = rnd();
	uint8_t		tmp[64];
	uint32_t	len;

	if (atts[a].attlen > 0)
		off = xpu_heap_align(off, atts[a].align);
	switch (a)
	{
		case A_K:
		case A_DROPPED:
		case A_DT:
			{
				int32_t		v = (int32_t) (x % 20000) - 5000;

				memcpy(buf + off, &v, 4);
				return off + 4;
			}
		case A_S:
			{
				int16_t		v = (int16_t) (x % 60001) - 30000;

				memcpy(buf + off, &v, 2);
				return off + 2;
			}
		case A_B:
			buf[off] = x & 1;
			return off + 1;
		case A_V:
		case A_M:
		case A_TS:
			{
				int64_t		v = (int64_t) (x >> 1) - (INT64_C(1) << 62);

				if (a == A_V)
					v >>= 20;	/* sums that fit */
				if (a == A_TS)
					v %= INT64_C(1000000000000000);	/* about 31 years around 2000 */
				memcpy(buf + off, &v, 8);
				return off + 8;
			}
		case A_H:
			{
				/* float2: quarters in [-512, 512), exact in half precision */
				uint16_t	v = xpu_half_from_double((double) ((int64_t) (x % 4096) - 2048) / 4.0);

				memcpy(buf + off, &v, 2);
				return off + 2;
			}
		case A_F4:
			{
				float		v = (float) ((int64_t) (x % 2000001) - 1000000) / 64.0f;

				memcpy(buf + off, &v, 4);
				return off + 4;
			}
		case A_F8:
			{
				double		v = (double) ((int64_t) (x % 200000001) - 100000000) / 1024.0;

				memcpy(buf + off, &v, 8);
				return off + 8;
			}
		case A_N:
			if (damage == DMG_NAN)
			{
				uint16_t	nan = 0xC000;

				return put_varlena(buf, off, (const uint8_t *) &nan, 2, 1, 0);
			}
			len = (uint32_t) numeric_bytes((__int128) ((int64_t) (x % 2000000000001ULL) -
													   1000000000000LL) * (x % 3 == 0 ? 1 : 1000),
										   (x >> 20) & 1, tmp);
			return put_varlena(buf, off, tmp, len, (x >> 21) & 1, 0);
		case A_T:
			{
				uint32_t	n = (uint32_t) (x % 7 == 0 ? 130 + x % 60 : x % 24);
				char		s[200];

				for (uint32_t i = 0; i < n; i++)
					s[i] = (char) ('a' + (r + i) % 3);	/* few distinct short keys */
				if (n < 24)
					n = n % 4;
				return put_varlena(buf, off, (const uint8_t *) s, n,
								   ((x >> 22) & 1) && damage != DMG_COMPRESSED,
								   damage == DMG_COMPRESSED ? 0x02 : 0);
			}
	}
	return off;
}

/*
 * the heap tuple of row r into buf (MAXALIGN'ed room); its length.  Row r
 * is an old one (OLD_NATTS attributes) every fifth row; the key is r's
 * group; damage plants a bad value in this row.
 */
static uint32_t
tuple_bytes(uint8_t *buf, int64_t r, const Gen *g, int damage)
{
	int			natts = r % 5 == 0 ? OLD_NATTS : N_ATTS;
	uint8_t		isnull[N_ATTS];
	int			hasnull = 0;
	uint32_t	off;

	for (int a = 0; a < natts; a++)
	{
		isnull[a] = (int) (rnd() % 100) < g->null_pct;
		if (a == A_DROPPED)
			isnull[a] = r % 2 == 0;
		if (damage && (a == A_N || a == A_T))
			isnull[a] = 0;
		hasnull |= isnull[a];
	}
	off = XPU_HEAP_TUPLE_HDR + (hasnull ? (natts + 7) / 8 : 0);
	off = xpu_heap_align(off, 8);
	memset(buf, 0, 1024);
	buf[18] = natts & 0xFF;		/* t_infomask2 */
	buf[19] = (natts >> 8) & 0x07;
	buf[20] = hasnull;			/* HEAP_HASNULL */
	buf[22] = (uint8_t) off;	/* t_hoff */
	for (int a = 0; a < natts; a++)
	{
		if (hasnull && !isnull[a])
			buf[XPU_HEAP_TUPLE_HDR + a / 8] |= 1 << (a % 8);
		if (isnull[a])
			continue;
		if (a == A_K)
		{
			int32_t		k = (int32_t) (rnd() % (uint64_t) g->n_groups);

			memcpy(buf + off, &k, 4);
			off += 4;
			continue;
		}
		off = put_att(buf, off, a, r, (a == A_N && damage == DMG_NAN) ||
					  (a == A_T && damage == DMG_COMPRESSED) ? damage : 0);
	}
	return off;
}

/* ---------------- the ring ---------------- */

/* Ring: heap_gpucheck.h */

/* page p of the run at ring r */
static uint8_t *
ring_page(Ring *r, int64_t p, uint8_t **vis)
{
	uint64_t	slot = (uint64_t) p / r->slot_pages,
				k = (uint64_t) p % r->slot_pages;
	uint8_t    *s = r->base + slot * r->slot_size;

	*vis = s + (size_t) r->slot_pages * XPU_HEAP_PAGE_SIZE + k * XPU_HEAP_VIS_BYTES;
	r->slot_n_pages[slot] = (uint32_t) k + 1;
	return s + k * XPU_HEAP_PAGE_SIZE;
}

/* the rows of g in pages, slot_pages a slot; the damage goes to row n / 2 */
void
ring_build(Ring *r, const Gen *g, uint32_t slot_pages)
{
	int64_t		max_pages = g->n_rows / 20 + 2;	/* tuples are at most ~330 bytes */
	uint8_t		tup[2048];
	int64_t		row = 0,
				p = 0;

	memset(r, 0, sizeof(*r));
	r->slot_pages = slot_pages;
	r->slot_size = (((uint64_t) slot_pages * (XPU_HEAP_PAGE_SIZE + XPU_HEAP_VIS_BYTES) +
		  XPU_HEAP_PAGE_SIZE - 1) / XPU_HEAP_PAGE_SIZE) * XPU_HEAP_PAGE_SIZE;
	r->n_slots = (uint32_t) ((max_pages + slot_pages - 1) / slot_pages);
	if (r->n_slots > 64)
	{
		printf("Bail out! a case of %ld rows needs more than 64 slots\n", (long) g->n_rows);
		exit(1);
	}
	r->size = (size_t) r->n_slots * r->slot_size;
	r->fd = memfd_create("heap_gpucheck", MFD_ALLOW_SEALING);
	if (r->fd < 0 || ftruncate(r->fd, (off_t) r->size) != 0 ||
		fcntl(r->fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0 ||
		(r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0)) == MAP_FAILED)
	{
		printf("Bail out! could not make the ring\n");
		exit(1);
	}
	r->slot_n_pages = calloc(r->n_slots, sizeof(uint32_t));
	while (row < g->n_rows)
	{
		uint8_t    *vis,
				   *page = ring_page(r, p, &vis);
		uint32_t	upper = XPU_HEAP_PAGE_SIZE;
		int			n = 0;

		while (row < g->n_rows && n < 291)
		{
			int			damage = row == g->n_rows / 2 ? g->damage : 0;
			uint32_t	len = tuple_bytes(tup, row, g, damage == DMG_LP_UNUSED ? 0 : damage);
			uint32_t	at = (upper - len) & ~7u;
			uint32_t	lp;

			if (upper < len || at < XPU_HEAP_PAGE_HDR + 4 * (uint32_t) (n + 1))
				break;
			memcpy(page + at, tup, len);
			lp = at | (1u << 15) | (len << 17);		/* LP_NORMAL */
			if (damage == DMG_LP_UNUSED)
				lp = 0;			/* LP_UNUSED, yet marked visible below */
			memcpy(page + XPU_HEAP_PAGE_HDR + 4 * n, &lp, 4);
			upper = at;
			/* the damaged tuple is visible, wherever the layout puts it */
			if (g->vis_mod == 0 || damage != 0 || (7 * p + n) % g->vis_mod != 0)
			{
				vis[n / 8] |= 1 << (n % 8);
				r->visible++;
			}
			n++;
			row++;
		}
		{
			uint16_t	hdr[4] = {(uint16_t) (XPU_HEAP_PAGE_HDR + 4 * n), (uint16_t) upper,
			XPU_HEAP_PAGE_SIZE, XPU_HEAP_PAGE_SIZE | 4};

			memcpy(page + 12, hdr, 8);	/* pd_lower, pd_upper, pd_special, pd_pagesize_version */
		}
		p++;
	}
}

void
ring_free(Ring *r)
{
	munmap(r->base, r->size);
	close(r->fd);
	free(r->slot_n_pages);
}

/* ---------------- queries ---------------- */

typedef struct Query
{
	const char *name;
	int			n_keys;
	int			keys[4];		/* attributes */
	int			n_aggs;
	XpuAggDesc	aggs[16];		/* out: an attribute until build_query maps it */
	int			qual_att;		/* -1, or keep rows where this int attribute > 0 */
} Query;

/* Built: heap_gpucheck.h */

static void
build_query(const Query *q, Built *bq)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			used[N_ATTS],
				col_of[N_ATTS],
				regs[N_ATTS],
				n = 0;
	char		errbuf[256];

	memset(used, 0, sizeof(used));
	for (int i = 0; i < q->n_keys; i++)
		used[q->keys[i]] = 1;
	for (int j = 0; j < q->n_aggs; j++)
		if (q->aggs[j].kind != XPU_AGG_COUNT_STAR)
			used[q->aggs[j].out] = 1;
	if (q->qual_att >= 0)
		used[q->qual_att] = 1;
	xpu_begin_stage(b, XPU_STAGE_LOAD);
	for (int a = 0; a < N_ATTS; a++)
		if (used[a])
		{
			col_of[a] = n;
			bq->col_att[n++] = (int16_t) (a + 1);
			regs[a] = xpu_add_reg(b, atts[a].type, a == A_N ? 2 : 0);
		}
	/* the descriptors in the reverse order: program column i reads chunk column n - 1 - i */
	for (int a = N_ATTS - 1; a >= 0; a--)
		if (used[a])
			xpu_add_instr(b, XPU_OP_LOAD_COL, regs[a], 0, 0, 0,
						  xpu_add_column(b, col_of[a], atts[a].kind, a == A_N ? 2 : 0));
	if (q->qual_att >= 0)
	{
		int64_t		zero = 0;
		int			c = xpu_add_reg(b, atts[q->qual_att].type, 0);

		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_INT, c, 0, 0, 0, xpu_add_const(b, &zero, 8));
		xpu_add_instr(b, XPU_OP_GT_INT, r0, regs[q->qual_att], c, 0, 0);
	}
	if (used[A_H])
	{
		/* float2 is aggregated as its exact float4, as codegen widens it */
		int			h4 = xpu_add_reg(b, XPU_T_FLOAT4, 0);

		xpu_begin_stage(b, XPU_STAGE_PROJ);
		xpu_add_instr(b, XPU_OP_F2_TO_F4, h4, regs[A_H], 0, 0, 0);
		regs[A_H] = h4;
	}
	for (int a = 0; a < N_ATTS; a++)
		if (used[a])
			xpu_add_output(b, regs[a]);
	bq->prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (bq->prog == NULL || !xpu_program_validate(bq->prog, bq->prog->total_len, errbuf,
												  sizeof(errbuf)))
	{
		printf("Bail out! program %s: %s\n", q->name, errbuf);
		exit(1);
	}
	bq->n_cols = n;
	for (int i = 0; i < q->n_keys; i++)
		bq->key_outs[i] = (uint16_t) col_of[q->keys[i]];
	for (int j = 0; j < q->n_aggs; j++)
	{
		bq->aggs[j] = q->aggs[j];
		bq->aggs[j].out = q->aggs[j].kind == XPU_AGG_COUNT_STAR ? 0 :
			(uint16_t) col_of[q->aggs[j].out];
	}
	bq->spec.n_keys = q->n_keys;
	bq->spec.key_outs = bq->key_outs;
	bq->spec.n_aggs = q->n_aggs;
	bq->spec.aggs = bq->aggs;
}

/* HEAP_RUN's heap part for bq over ring r (heap_run_parse's input); its length */
size_t
heap_request(const Built *bq, const Ring *r, uint8_t *buf)
{
	WarpHeapRequest req = {r->n_slots, r->slot_pages, r->slot_size, N_ATTS, 8, 0, 0};
	size_t		off = sizeof(req);
	int64_t		missing = M_MISSING;

	memcpy(buf, &req, sizeof(req));
	for (int a = 0; a < N_ATTS; a++)
	{
		XpuHeapAtt	at = {atts[a].attlen, atts[a].align, 0, 0, 0, 0};

		if (a == A_M)
		{
			at.flags = XPU_HEAP_ATT_MISSING;
			at.missing_len = 8;
		}
		memcpy(buf + off, &at, sizeof(at));
		off += sizeof(at);
	}
	memset(buf + off, 0, ((size_t) bq->n_cols * 2 + 7) & ~(size_t) 7);
	memcpy(buf + off, bq->col_att, (size_t) bq->n_cols * 2);
	off += ((size_t) bq->n_cols * 2 + 7) & ~(size_t) 7;
	memcpy(buf + off, &missing, 8);
	return off + 8;
}

/* ---------------- the GPU path's decode on the host ---------------- */

#define EMU_SLICE	16384

/* the run's XpuHeapGpuDesc with host arrays (as gpu_agg.c builds it on the device) */
typedef struct EmuDesc
{
	XpuHeapGpuDesc d;
	XpuHeapAtt	atts[N_ATTS];
	int16_t		want[N_ATTS],
				col_want[N_ATTS],
				col_scale[N_ATTS],
				col_text[N_ATTS];
	uint8_t		col_kind[N_ATTS];
	int64_t		missing;
} EmuDesc;

static void
emu_desc(const Built *bq, EmuDesc *e)
{
	const XpuProgram *prog = bq->prog;

	memset(e, 0, sizeof(*e));
	e->missing = M_MISSING;
	for (int a = 0; a < N_ATTS; a++)
	{
		e->atts[a].attlen = atts[a].attlen;
		e->atts[a].align = atts[a].align;
		if (a == A_M)
		{
			e->atts[a].flags = XPU_HEAP_ATT_MISSING;
			e->atts[a].missing_len = 8;
		}
		e->want[a] = -1;
	}
	for (int j = 0; j < bq->n_cols; j++)
	{
		int			a = bq->col_att[j] - 1;

		if (a + 1 > e->d.n_deform)
			e->d.n_deform = a + 1;
		if (e->want[a] < 0)
			e->want[a] = (int16_t) e->d.n_want++;
		e->col_want[j] = e->want[a];
		for (int i = prog->n_cols - 1; i >= 0; i--)
			if (XPU_COLS(prog)[i].col_index == j)
			{
				e->col_kind[j] = XPU_COLS(prog)[i].kind;
				e->col_scale[j] = (int16_t) XPU_COLS(prog)[i].scale;
			}
		e->col_text[j] = e->col_kind[j] == XPU_COL_UTF8 ? (int16_t) e->d.n_text++ : -1;
	}
	e->d.atts = e->atts;
	e->d.missing = (const uint8_t *) &e->missing;
	e->d.want = e->want;
	e->d.col_want = e->col_want;
	e->d.col_kind = e->col_kind;
	e->d.col_scale = e->col_scale;
	e->d.col_text = e->col_text;
	e->d.n_cols = bq->n_cols;
}

/* the chunk's columns decoded as kern_heap_measure, _scan and _decode do; 0 or a status code */
static int
emu_decode(const EmuDesc *e, const uint8_t *pages, const uint8_t *vis, uint32_t n_pages,
		   const uint32_t *rows, int64_t text_cap, XpuColumnData *cols)
{
	const XpuHeapGpuDesc *d = &e->d;
	uint64_t   *page_text = calloc((size_t) d->n_text * n_pages + 1, sizeof(uint64_t));
	const uint8_t *ptrs[XPU_HEAP_GPU_MAX_WANT];
	uint32_t	lens[XPU_HEAP_GPU_MAX_WANT];
	int			status = 0;

	for (int pass = 0; pass < 2; pass++)
		for (uint32_t p = 0; p < n_pages; p++)
		{
			const uint8_t *page = pages + (size_t) p * XPU_HEAP_PAGE_SIZE;
			const uint8_t *pv = vis + (size_t) p * XPU_HEAP_VIS_BYTES;
			uint64_t	run[N_ATTS] = {0};

			for (int i = 0; i < XPU_HEAP_GPU_BLOCK; i++)
			{
				int			visible = xpu_hg_visible(pv, i);
				int			code = visible ? xpu_hg_tuple(d, page, i, ptrs, lens) : 0;
				const uint8_t *const *pp = visible && code == 0 ? ptrs : NULL;
				uint32_t	r = visible ? rows[p] + xpu_hg_rank(pv, i) : 0;

				for (int j = 0; j < d->n_cols; j++)
				{
					int			t = d->col_text[j];
					uint64_t	n = t >= 0 ? xpu_hg_text_len(d, j, pp, lens) : 0,
								start = t >= 0 ? page_text[(size_t) t * n_pages + p] + run[t] : 0;
					int			c;

					if (t >= 0)
						run[t] += n;
					if (pass == 0 || !visible)
						continue;
					c = xpu_hg_put(d, &cols[j], j, r, pp, lens, start, text_cap);
					if (code == 0)
						code = c;
				}
				if (pass == 1 && code != 0 && status == 0)
					status = code;
			}
			for (int t = 0; pass == 0 && t < d->n_text; t++)
				page_text[(size_t) t * n_pages + p] = run[t];
			if (pass == 0 && p == n_pages - 1)
				for (int t = 0; t < d->n_text; t++)
				{
					uint64_t	sum = 0;

					for (uint32_t k = 0; k < n_pages; k++)
					{
						uint64_t	v = page_text[(size_t) t * n_pages + k];

						page_text[(size_t) t * n_pages + k] = sum;
						sum += v;
					}
				}
		}
	free(page_text);
	return status;
}

/* the CPU engine's aggregation over the decoded rows, a slice at a time */
static int
emu_aggregate(const Built *bq, XpuColumnData *cols, int64_t nrows, XpuAggTable *t,
			  XpuError *err)
{
	const XpuProgram *prog = bq->prog;
	size_t		outs = prog->n_outs ? prog->n_outs : 1;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	XpuValue   *values = aligned_alloc(16, outs * EMU_SLICE * sizeof(XpuValue));
	uint8_t    *nulls = malloc(outs * EMU_SLICE),
			   *mask = malloc(EMU_SLICE);
	int			rc = XPU_OK;

	for (int64_t r0 = 0; r0 < nrows && rc == XPU_OK; r0 += EMU_SLICE)
	{
		int64_t		n = nrows - r0 < EMU_SLICE ? nrows - r0 : EMU_SLICE;
		XpuChunk	chunk = {n, bq->n_cols, 0, cols};
		XpuResult	res = {n, mask, values, nulls};

		for (int j = 0; j < bq->n_cols; j++)
			cols[j].offset = r0;
		rc = xpu_cpu_exec(prog, &chunk, &res, ws, err);
		if (rc == XPU_OK && !xpu_agg_table_update(t, &res, err))
			rc = err->code ? err->code : XPU_ERR_INTERNAL;
	}
	free(ws);
	free(values);
	free(nulls);
	free(mask);
	return rc;
}

/* one slot through the emulated GPU path into t; XPU_OK or the FALLBACK */
static int
emu_chunk(const Built *bq, const EmuDesc *e, const uint8_t *slot, uint32_t slot_pages,
		  uint32_t n_pages, XpuAggTable *t, XpuError *err)
{
	const uint8_t *vis = slot + (size_t) slot_pages * XPU_HEAP_PAGE_SIZE;
	uint32_t   *rows = calloc(n_pages + 1, sizeof(uint32_t));
	XpuColumnData cols[N_ATTS];
	int64_t		nrows = 0,
				text_cap;
	int			code,
				rc = XPU_OK;

	for (uint32_t p = 0; p < n_pages; p++)
	{
		rows[p] = (uint32_t) nrows;
		for (int b = 0; b < XPU_HEAP_VIS_BYTES; b++)
			nrows += __builtin_popcount(vis[(size_t) p * XPU_HEAP_VIS_BYTES + b]);
	}
	text_cap = (int64_t) n_pages * XPU_HEAP_PAGE_SIZE;
	memset(cols, 0, sizeof(cols));
	for (int j = 0; j < bq->n_cols; j++)
	{
		int			kind = e->col_kind[j];
		size_t		bm = ((size_t) nrows + 31) / 32 * 4 + 4;

		cols[j].validity = calloc(bm, 1);
		if (kind == XPU_COL_BOOL)
			cols[j].values = calloc(bm, 1);
		else if (kind == XPU_COL_UTF8)
		{
			cols[j].values = calloc((size_t) nrows + 1, sizeof(int32_t));
			cols[j].data = calloc((size_t) text_cap + 1, 1);
		}
		else
			cols[j].values = calloc((size_t) nrows + 1, 16);
	}
	code = emu_decode(e, slot, vis, n_pages, rows, text_cap, cols);
	if (code != 0)
	{
		XPU_ERROR(err, XPU_ERR_FALLBACK, code == XPU_HEAP_GPU_MALFORMED ?
				  "a malformed heap page" :
				  "a heap value the engine does not decode (compressed, external or out of range)");
		rc = XPU_ERR_FALLBACK;
	}
	else if (nrows > 0)
		rc = emu_aggregate(bq, cols, nrows, t, err);
	for (int j = 0; j < bq->n_cols; j++)
	{
		free((void *) cols[j].validity);
		free((void *) cols[j].values);
		free((void *) cols[j].data);
	}
	free(rows);
	return rc;
}

/* ---------------- runs and their comparison ---------------- */

/* ENG_* and Outcome: heap_gpucheck.h */

const ServiceGpu *the_gpu;
static XpuAggTable **fake_side;	/* fake_cuda.c's fake_side_table, in "fake" mode */
static int *fake_registers;		/* its fake_host_registers and fake_host_registered */
static int *fake_registered;
static int *fake_allocs;		/* its fake_allocs */
static int *fake_handles;		/* its fake_handles */
int		   *fake_unit_allocs;	/* its fake_unit_host_allocs, _watch and _copies */
int		   *fake_unit_watch;
int		   *fake_unit_copies;

typedef struct CancelArg
{
	HeapRun    *h;
	volatile int *canceled;
	int			after_us;
} CancelArg;

static void *
cancel_main(void *arg)
{
	CancelArg  *c = arg;

	usleep(c->after_us);
	*c->canceled = 1;
	heap_run_cancel(c->h);
	return NULL;
}

/*
 * exec_run: heap run h (its chunks queued) on the CPU engine or the GPUs of
 * gpu into o; with the stand-in driver, o's table is the rows it aggregated
 */
void
exec_run(int engine, const Built *bq, HeapRun *h, const ServiceGpu *gpu, Outcome *o)
{
	XpuAggTable *tables[256] = {0};	/* one a worker (heap_chunk.c's HEAP_MAX_THREADS) */
	uint32_t	n = 0;

	if (engine == ENG_GPU && fake_side != NULL)
		*fake_side = xpu_agg_table_create(bq->prog, &bq->spec, &o->err);
	if (engine == ENG_CPU)
		o->rc = heap_run_exec(h, &o->run, tables, &n, &o->threads, &o->err, &o->werr,
							  o->msg, sizeof(o->msg));
	else
	{
		WarpEngine	ran = WARP_ENGINE_GPU;

		o->rc = heap_run_exec_gpu(h, gpu, &o->run, tables, &n, &o->threads, &ran,
								  &o->err, &o->werr, o->msg, sizeof(o->msg));
		/* a check of the GPU that the CPU engine answered checks nothing */
		if (ran != WARP_ENGINE_GPU && o->rc == XPU_OK)
		{
			o->rc = -1;
			o->werr = WARP_ERR_UNSUPPORTED;
			snprintf(o->msg, sizeof(o->msg), "the GPU did not serve the run: the CPU engine ran it");
		}
	}
	/* the workers' tables into one, as the service's agg.c merges them */
	o->table = n > 0 ? tables[0] : NULL;
	for (uint32_t i = 1; i < n; i++)
	{
		if (o->rc == XPU_OK && !xpu_agg_table_merge(o->table, tables[i], &o->err))
		{
			o->rc = -1;
			o->werr = WARP_ERR_OUT_OF_MEMORY;
			snprintf(o->msg, sizeof(o->msg), "merging the workers' tables: %s", o->err.message);
		}
		xpu_agg_table_free(tables[i]);
	}
	if (engine == ENG_GPU && fake_side != NULL)
	{
		/* the rows the stand-in aggregated, not the emulated device's empty table */
		xpu_agg_table_free(o->table);
		o->table = *fake_side;
		*fake_side = NULL;
	}
}

/*
 * runs bq over ring r with engine into o; cancel_after_us >= 0: a thread
 * cancels the run then (0: before it starts)
 */
void
run_engine(int engine, const Built *bq, Ring *r, int cancel_after_us, Outcome *o)
{
	uint8_t    *req = calloc(1, 8192);
	size_t		len = heap_request(bq, r, req);
	int			notify = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	volatile int canceled = cancel_after_us == 0;
	CancelArg	ca;
	pthread_t	th;
	HeapRun    *h;
	int64_t		t0 = svc_now_us(CLOCK_MONOTONIC);

	memset(o, 0, sizeof(*o));
	o->run.prog = bq->prog;
	o->run.spec = bq->spec;
	o->run.n_threads = 4;
	o->run.canceled = &canceled;
	if (engine == ENG_EMU)
	{
		EmuDesc		e;

		emu_desc(bq, &e);
		o->table = xpu_agg_table_create(bq->prog, &bq->spec, &o->err);
		o->threads = 1;
		for (uint32_t s = 0; s < r->n_slots && o->rc == XPU_OK; s++)
			if (r->slot_n_pages[s] > 0)
				o->rc = emu_chunk(bq, &e, r->base + (size_t) s * r->slot_size, r->slot_pages,
								  r->slot_n_pages[s], o->table, &o->err);
	}
	else
	{
		if ((h = heap_run_parse(req, len, bq->prog, r->fd, notify, o->msg, sizeof(o->msg))) == NULL)
		{
			printf("Bail out! heap_run_parse: %s\n", o->msg);
			exit(1);
		}
		for (uint32_t s = 0; s < r->n_slots; s++)
			if (r->slot_n_pages[s] > 0)
			{
				WarpHeapChunk ch = {s, r->slot_n_pages[s]};

				heap_run_message(h, WARP_MSG_HEAP_CHUNK, (const uint8_t *) &ch, sizeof(ch),
								 o->msg, sizeof(o->msg));
			}
		heap_run_message(h, WARP_MSG_HEAP_END, NULL, 0, o->msg, sizeof(o->msg));
		ca.h = h;
		ca.canceled = &canceled;
		ca.after_us = cancel_after_us;
		if (cancel_after_us > 0)
			pthread_create(&th, NULL, cancel_main, &ca);
		exec_run(engine, bq, h, the_gpu, o);
		if (cancel_after_us > 0)
			pthread_join(th, NULL);
		heap_run_free(h);
	}
	o->run.canceled = NULL;
	o->secs = (svc_now_us(CLOCK_MONOTONIC) - t0) / 1e6;
	close(notify);
	free(req);
}

static int
f8_close(double a, double b)
{
	return fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)) + 1e-6;
}

/* are states a (GPU) and b (CPU) of aggregate j the same; why not into why */
static int
state_same(const Built *bq, int j, const XpuAggState *a, const XpuAggState *b, char *why)
{
	int			kind = bq->aggs[j].kind;
	int			type = kind == XPU_AGG_COUNT_STAR ? 0 :
		XPU_REGS(bq->prog)[XPU_OUTS(bq->prog)[bq->aggs[j].out]].type;
	int			same;

	if (a->count != b->count || a->flags != b->flags)
		return sprintf(why, "aggregate %d: count %ld/%ld flags %u/%u", j, (long) a->count,
					   (long) b->count, a->flags, b->flags), 0;
	switch (kind)
	{
		case XPU_AGG_COUNT_STAR:
		case XPU_AGG_COUNT:
			same = 1;
			break;
		case XPU_AGG_SUM_FLOAT:
			same = f8_close(a->v.f8[0], b->v.f8[0]);
			break;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			same = a->count == 0 ||
				(type == XPU_T_FLOAT8 ? a->v.f8[0] == b->v.f8[0] :
				 type == XPU_T_FLOAT4 ? a->v.f4 == b->v.f4 :
				 type == XPU_T_NUMERIC ? a->v.i128 == b->v.i128 : a->v.i == b->v.i);
			break;
		default:
			same = a->v.i128 == b->v.i128;
	}
	if (!same)
		sprintf(why, "aggregate %d (kind %d) differs", j, kind);
	return same;
}

/* every group of gpu (the GPU's or the emulation's table) is cpu's, with the same states */
int
tables_same(const Built *bq, const XpuAggTable *gpu, const XpuAggTable *cpu, char *why)
{
	int64_t		n = xpu_agg_table_ngroups(cpu);

	if (xpu_agg_table_ngroups(gpu) != n)
		return sprintf(why, "%ld groups, the CPU engine %ld", (long) xpu_agg_table_ngroups(gpu),
					   (long) n), 0;
	for (int64_t i = 0; i < n; i++)
	{
		const uint8_t *key,
				   *gkey = NULL;
		uint32_t	len,
					glen = 0;
		const XpuAggState *st,
				   *gst = NULL;
		int64_t		k;

		xpu_agg_table_group(cpu, i, &key, &len, &st);
		for (k = 0; k < n; k++)
		{
			xpu_agg_table_group(gpu, k, &gkey, &glen, &gst);
			if (glen == len && memcmp(gkey, key, len) == 0)
				break;
		}
		if (k == n)
			return sprintf(why, "the CPU engine's group %ld is missing", (long) i), 0;
		for (int j = 0; j < bq->spec.n_aggs; j++)
			if (!state_same(bq, j, &gst[j], &st[j], why))
				return 0;
	}
	return 1;
}

/* ---------------- the cases ---------------- */

#define AGG(k, a)	{(k), 0, (a), 0}

static const Query queries[] = {
	{"by k", 1, {A_K}, 15, {AGG(XPU_AGG_COUNT_STAR, 0), AGG(XPU_AGG_COUNT, A_S),
			AGG(XPU_AGG_SUM_INT, A_S), AGG(XPU_AGG_SUM_INT, A_V), AGG(XPU_AGG_SUM_NUMERIC, A_N),
			AGG(XPU_AGG_SUM_FLOAT, A_F8), AGG(XPU_AGG_MIN, A_F4), AGG(XPU_AGG_MAX, A_F8),
			AGG(XPU_AGG_MIN, A_DT), AGG(XPU_AGG_MAX, A_TS), AGG(XPU_AGG_COUNT, A_T),
			AGG(XPU_AGG_SUM_INT, A_M), AGG(XPU_AGG_COUNT, A_B), AGG(XPU_AGG_MAX, A_H),
	AGG(XPU_AGG_COUNT, A_H)}, -1},
	{"by t, b where v > 0", 2, {A_T, A_B}, 4, {AGG(XPU_AGG_COUNT_STAR, 0), AGG(XPU_AGG_SUM_INT, A_K),
	AGG(XPU_AGG_MAX, A_N), AGG(XPU_AGG_MIN, A_V)}, A_V},
	{"by dt where k > 0", 1, {A_DT}, 4, {AGG(XPU_AGG_COUNT_STAR, 0), AGG(XPU_AGG_MIN, A_TS),
	AGG(XPU_AGG_SUMSQ_INT, A_S), AGG(XPU_AGG_MAX, A_K)}, A_K},
	{"no group", 0, {0}, 7, {AGG(XPU_AGG_COUNT_STAR, 0), AGG(XPU_AGG_SUM_INT, A_V),
			AGG(XPU_AGG_SUM_NUMERIC, A_N), AGG(XPU_AGG_COUNT, A_T), AGG(XPU_AGG_MIN, A_K),
	AGG(XPU_AGG_MAX, A_M), AGG(XPU_AGG_SUM_FLOAT, A_F8)}, -1},
};

/* the programs of queries[] (Q_BY_K .. Q_NO_GROUP: heap_gpucheck.h), built by run_checks */
Built		built[4];

/* the CPU engine and engine over ring r with query qi: the same groups */
static void
check_query(int engine, const char *name, Ring *r, int qi)
{
	const Built *bq = &built[qi];
	Outcome		cpu,
				gpu;
	char		why[256] = "";

	run_engine(ENG_CPU, bq, r, -1, &cpu);
	run_engine(engine, bq, r, -1, &gpu);
	if (cpu.rc != XPU_OK)
		tap_ok(0, "%s, %s: the CPU engine failed: %d %s %s", name, queries[qi].name, cpu.rc,
			   cpu.err.message, cpu.msg);
	else if (gpu.rc != XPU_OK)
		tap_ok(0, "%s, %s: failed: %d %s %s", name, queries[qi].name, gpu.rc, gpu.err.message,
			   gpu.msg);
	else
	{
		int			ok = tables_same(bq, gpu.table, cpu.table, why) && gpu.threads == 1;

		tap_ok(ok, "%s, %s: %ld groups as the CPU engine's (%.3f s, CPU %.3f s)%s%s", name,
			   queries[qi].name, (long) xpu_agg_table_ngroups(cpu.table), gpu.secs, cpu.secs,
			   ok ? "" : ": ", gpu.threads == 1 ? why : "it ran on the CPU engine");
	}
	if (qi == Q_NO_GROUP && cpu.rc == XPU_OK)
	{
		const uint8_t *key;
		uint32_t	len;
		const XpuAggState *st;

		xpu_agg_table_group(cpu.table, 0, &key, &len, &st);
		tap_ok(st[0].count == r->visible, "%s: count(*) is the %ld visible tuples", name,
			   (long) r->visible);
	}
	xpu_agg_table_free(cpu.table);
	xpu_agg_table_free(gpu.table);
}

/* a case: rows of g in slots of slot_pages, every query */
static void
check_case(int engine, const char *name, const Gen *g, uint32_t slot_pages)
{
	Ring		r;

	ring_build(&r, g, slot_pages);
	for (int qi = 0; qi < 4; qi++)
		check_query(engine, name, &r, qi);
	ring_free(&r);
}

/* a FALLBACK planted in the middle row: both engines fall back alike */
static void
check_fallback(int engine, const char *name, int damage, int qi)
{
	Gen			g = {3000, 20, 10, 5, damage};	/* about 40 pages */
	Ring		r;
	Outcome		cpu,
				gpu;

	ring_build(&r, &g, 4);
	run_engine(ENG_CPU, &built[qi], &r, -1, &cpu);
	run_engine(engine, &built[qi], &r, -1, &gpu);
	tap_ok(cpu.rc == XPU_ERR_FALLBACK && gpu.rc == XPU_ERR_FALLBACK &&
		   strcmp(cpu.err.message, gpu.err.message) == 0,
		   "%s: FALLBACK as the CPU engine (%d \"%s\", CPU %d \"%s\")", name, gpu.rc,
		   gpu.err.message, cpu.rc, cpu.err.message);
	xpu_agg_table_free(cpu.table);
	xpu_agg_table_free(gpu.table);
	/* a query that does not read the damaged column runs */
	if (damage == DMG_COMPRESSED)
		check_query(engine, "a compressed value of a column not read", &r, Q_BY_DATE);
	ring_free(&r);
}

/* a canceled GPU run ends CANCELED, promptly */
static void
check_cancel(void)
{
	Gen			g = {1000000, 1000, 5, 0, 0};
	Ring		r;
	Outcome		o;

	ring_build(&r, &g, 1024);
	for (int when = 0; when <= 2000; when += 2000)
	{
		run_engine(ENG_GPU, &built[Q_BY_K], &r, when, &o);
		tap_ok((o.rc == -1 && o.werr == WARP_ERR_CANCELED) || (when > 0 && o.rc == XPU_OK),
			   "a GPU run canceled %s ends %s in %.3f s (%d: %s)",
			   when == 0 ? "before it starts" : "after 2 ms",
			   o.rc == XPU_OK ? "done (before the cancel)" : "canceled", o.secs, o.rc, o.msg);
		xpu_agg_table_free(o.table);
	}
	ring_free(&r);
}

/*
 * gpu_mem.c keeps a run's per-run device and pinned blocks for the next
 * run on the device: the same run twice, the second asks the driver for
 * fewer blocks than the first (the stand-in counts them), same answer
 */
static void
check_kept_blocks(void)
{
	Gen			g = {30011, 37, 10, 5, 0};	/* sizes no other check makes */
	Ring		r;
	Outcome		o[2];
	int			allocs[2];

	ring_build(&r, &g, 48);
	for (int i = 0; i < 2; i++)
	{
		int			before = *fake_allocs;

		run_engine(ENG_GPU, &built[Q_BY_K], &r, -1, &o[i]);
		allocs[i] = *fake_allocs - before;
	}
	tap_ok(o[0].rc == XPU_OK && o[1].rc == XPU_OK && allocs[1] < allocs[0] &&
		   xpu_agg_table_ngroups(o[0].table) == xpu_agg_table_ngroups(o[1].table),
		   "a second identical GPU run takes kept blocks: %d allocations, then %d "
		   "(%d groups, then %d)", allocs[0], allocs[1],
		   o[0].table ? (int) xpu_agg_table_ngroups(o[0].table) : -1,
		   o[1].table ? (int) xpu_agg_table_ngroups(o[1].table) : -1);
	for (int i = 0; i < 2; i++)
		xpu_agg_table_free(o[i].table);
	ring_free(&r);
}

/*
 * The service's start fills the device's kept blocks with what a run's
 * setup takes at a fixed size (gagg_prewarm_kept, from gpu_agg_prewarm):
 * with all that is kept let go, a run asks the driver for its blocks,
 * streams and events; let go again and prewarmed, the same run asks for
 * fewer: none of the streams and events the runs keep (only the heap
 * path's four events of its own), and 2 GAGG_SLOTS + 4 blocks fewer (the
 * slots' launch statuses on both sides, the cancel flag on both, the
 * aggregates and the table), same answer
 */
static void
check_prewarm_kept(void)
{
	Gen			g = {30013, 41, 10, 5, 0};	/* sizes no other check makes */
	Ring		r;
	Outcome		o[2];
	int			allocs[2],
				handles[2];

	ring_build(&r, &g, 48);
	for (int i = 0; i < 2; i++)
	{
		int			a,
					h;

		gagg_kept_drop(0);
		if (i == 1)
			gagg_prewarm_kept(0);
		a = *fake_allocs;
		h = *fake_handles;
		run_engine(ENG_GPU, &built[Q_BY_K], &r, -1, &o[i]);
		allocs[i] = *fake_allocs - a;
		handles[i] = *fake_handles - h;
	}
	tap_ok(o[0].rc == XPU_OK && o[1].rc == XPU_OK && handles[0] - handles[1] == 3 * GAGG_SLOTS + 1 &&
		   allocs[0] - allocs[1] == 2 * GAGG_SLOTS + 4 &&
		   xpu_agg_table_ngroups(o[0].table) == xpu_agg_table_ngroups(o[1].table),
		   "a run after the start's prewarm of the kept blocks makes %d streams and events "
		   "(%d without it, %d fewer expected) and %d allocations (%d without it, %d fewer "
		   "expected); %d groups, then %d", handles[1], handles[0], 3 * GAGG_SLOTS + 1, allocs[1],
		   allocs[0], 2 * GAGG_SLOTS + 4,
		   o[0].table ? (int) xpu_agg_table_ngroups(o[0].table) : -1,
		   o[1].table ? (int) xpu_agg_table_ngroups(o[1].table) : -1);
	for (int i = 0; i < 2; i++)
		xpu_agg_table_free(o[i].table);
	ring_free(&r);
}

/*
 * A join table copied to the device (join_store.c, svc_join_device_copy):
 * one of a megabyte or more is registered with the driver for its copy and
 * let go after it (the stand-in counts both; where it refuses,
 * PG_WARP_FAKE_CUDA_NO_REGISTER, the copy is from pageable memory), a small
 * one is not registered; the device holds the table's bytes either way.
 */
static void
check_join_copy(void)
{
	static const char owner;
	bool		refused = getenv("PG_WARP_FAKE_CUDA_NO_REGISTER") != NULL;
	CUcontext	ctx;

	if (gpu_drv.cuCtxPushCurrent(gpu_device_context(0)) != CUDA_SUCCESS)
	{
		tap_ok(false, "a join table's copy: no context for device 0");
		return;
	}
	for (int big = 0; big < 2; big++)
	{
		int			n = big ? 100000 : 1000;
		XpuJoinSpec spec = {0};
		XpuValue   *keys = calloc(n, sizeof(XpuValue));
		XpuValue   *pay = calloc(n, sizeof(XpuValue));
		uint8_t    *nulls = calloc(n, 1);
		XpuError	err = {0};
		XpuJoinBuilder *b;
		WarpJoinLoad req = {0};
		WarpJoinLoaded res;
		SvcJoinSet	set = {0};
		char		msg[256] = "";
		uint64_t	len = 0;
		int			fd = memfd_create("join_copy", MFD_CLOEXEC | MFD_ALLOW_SEALING);
		int			regs = fake_registers ? *fake_registers : 0;
		int			held = fake_registered ? *fake_registered : 0;
		CUstream	st = NULL;
		CUresult	rc = CUDA_ERROR_INVALID_VALUE;
		CUdeviceptr dev = 0;
		uint8_t    *map;
		uint8_t    *back = NULL;
		bool		loaded = false,
					same = false;

		spec.n_keys = 1;
		spec.keys[0].type = spec.keys[0].probe_type = XPU_T_INT8;
		spec.n_pay = 1;
		spec.pay_types[0] = XPU_T_INT8;
		for (int i = 0; i < n; i++)
		{
			keys[i].i = i;
			pay[i].i = 3 * (int64_t) i;
		}
		if ((b = xpu_join_builder_create(&spec, &err)) != NULL &&
			xpu_join_builder_add(b, n, keys, nulls, pay, nulls, &err) &&
			(len = xpu_join_builder_layout(b, &err)) > 0 && fd >= 0 &&
			ftruncate(fd, (off_t) len) == 0 &&
			(map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED)
		{
			xpu_join_builder_write(b, map);
			munmap(map, len);
			req.table_len = len;
			loaded = fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
						   F_SEAL_SEAL) == 0 &&
				svc_join_load(&owner, fd, &req, &res, msg, sizeof(msg)) &&
				svc_join_acquire(&set, &res.join_id, 1, msg, sizeof(msg));
		}
		if (loaded && gpu_drv.cuStreamCreate(&st, 0) == CUDA_SUCCESS &&
			(dev = svc_join_device_copy(&set, 0, 0, st, &rc)) != 0 &&
			(back = malloc(len)) != NULL &&
			gpu_drv.cuMemcpyDtoHAsync(back, dev, len, st) == CUDA_SUCCESS &&
			gpu_drv.cuStreamSynchronize(st) == CUDA_SUCCESS)
			same = memcmp(back, set.tables[0], len) == 0;
		tap_ok(same, "a join table of %llu bytes copied to the device whole (%s)",
			   (unsigned long long) len, msg);
		if (fake_registers != NULL)
			tap_ok(*fake_registers - regs == (big && !refused) && *fake_registered == held,
				   "a join table of %llu bytes: %d registration(s) for its copy (%d expected), "
				   "%d left", (unsigned long long) len, *fake_registers - regs,
				   big && !refused, *fake_registered - held);
		free(back);
		if (st != NULL)
			gpu_drv.cuStreamDestroy(st);
		svc_join_release_set(&set);
		if (loaded)
			svc_join_drop(&owner, res.join_id);
		if (b != NULL)
			xpu_join_builder_free(b);
		if (fd >= 0)
			close(fd);
		free(keys);
		free(pay);
		free(nulls);
	}
	gpu_drv.cuCtxPopCurrent(&ctx);
}

/*
 * gpu_mem.c's pool of pinned batch buffers keeps the largest where more
 * come back than it holds: small buffers released first (the pool full of
 * them), then large ones, leave the large ones there, so that the next
 * large batches pin nothing (the stand-in counts the allocations).  The
 * sizes are no other check's, and no heap unit's (gagg_batch_buffer's
 * own path); the pool is left empty.
 */
static void
check_batch_pool(void)
{
#define POOL_BUFS	8			/* more than the pool holds */
	GaggRun    *g = calloc(1, sizeof(GaggRun));
	uint8_t    *small[POOL_BUFS],
			   *large[POOL_BUFS];
	size_t		small_cap[POOL_BUFS],
				large_cap[POOL_BUFS];
	int			before,
				ok = 1;

	/* the pool emptied (what it held is taken), then large buffers pinned */
	for (int i = 0; i < POOL_BUFS; i++)
	{
		small_cap[i] = (size_t) 1 << 20;
		large_cap[i] = (size_t) 161 << 20;
		ok &= gagg_batch_buffer(g, &small[i], &small_cap[i]) == 0;
	}
	for (int i = 0; i < POOL_BUFS; i++)
		ok &= gagg_batch_buffer(g, &large[i], &large_cap[i]) == 0;
	for (int i = 0; i < POOL_BUFS; i++)
		gagg_batch_release(g, &small[i], small_cap[i]);
	for (int i = 0; i < POOL_BUFS; i++)
		gagg_batch_release(g, &large[i], large_cap[i]);
	/* two large batches, as a run's two slots take them */
	before = *fake_allocs;
	for (int i = 0; i < 2; i++)
	{
		large_cap[i] = (size_t) 161 << 20;
		ok &= gagg_batch_buffer(g, &large[i], &large_cap[i]) == 0 &&
			large_cap[i] >= ((size_t) 161 << 20);
	}
	tap_ok(ok && *fake_allocs == before && g->mem_held == 2 * ((size_t) 161 << 20),
		   "pinned batch buffers: released after small ones filled the pool, large ones take "
		   "their places (the next two large batches pinned %d buffers, 0 expected)",
		   *fake_allocs - before);
	/* a small buffer released into the pool of large ones is freed, not kept */
	for (int i = 0; i < 2; i++)
		gagg_batch_release(g, &large[i], large_cap[i]);
	ok = gagg_host_alloc(g, (void **) &small[0], (size_t) 1 << 20, "a check") == 0;
	gagg_batch_release(g, &small[0], (size_t) 1 << 20);
	before = *fake_allocs;
	for (int i = 0; i < 4; i++)
	{
		large_cap[i] = (size_t) 161 << 20;
		ok &= gagg_batch_buffer(g, &large[i], &large_cap[i]) == 0;
	}
	tap_ok(ok && small[0] == NULL && *fake_allocs == before,
		   "pinned batch buffers: a small one released displaces none larger (%d of 4 large "
		   "batches pinned afresh, 0 expected)", *fake_allocs - before);
	for (int i = 0; i < 4; i++)
		gagg_host_free(g, (void **) &large[i], large_cap[i]);
	free(g);
#undef POOL_BUFS
}

/* ---------------- TAP for heap_gpucheck_units.c ---------------- */

/* a TAP line of heap_gpucheck_units.c, formatted (malloc'ed) */
static char *
heap_tap_line(const char *fmt, va_list ap)
{
	char	   *line;

	if (vasprintf(&line, fmt, ap) < 0)
	{
		printf("Bail out! out of memory\n");
		exit(1);
	}
	return line;
}

/* tap_ok for heap_gpucheck_units.c: its checks counted with this file's */
int
heap_tap_ok(int cond, const char *fmt,...)
{
	va_list		ap;
	char	   *line;
	int			n;

	va_start(ap, fmt);
	line = heap_tap_line(fmt, ap);
	va_end(ap);
	n = tap_ok(cond, "%s", line);
	free(line);
	return n;
}

/* tap_diag for heap_gpucheck_units.c */
void
heap_tap_diag(const char *fmt,...)
{
	va_list		ap;
	char	   *line;

	va_start(ap, fmt);
	line = heap_tap_line(fmt, ap);
	va_end(ap);
	tap_diag("%s", line);
	free(line);
}

/* ---------------- all the checks ---------------- */

static void
run_checks(int engine)
{
	Gen			types = {20000, 50, 10, 5, 0},
				all_visible = {5000, 7, 20, 0, 0},
				empty = {0, 1, 0, 0, 0},
				invisible = {1000, 3, 10, 1, 0},
				one = {1, 1, 0, 0, 0},
				million = {1000000, 1000, 5, 9, 0};

	for (int qi = 0; qi < 4; qi++)
		build_query(&queries[qi], &built[qi]);
	check_case(engine, "every type, NULLs, per-tuple visibility", &types, 32);
	check_case(engine, "all-visible pages", &all_visible, 8);
	check_case(engine, "an empty run", &empty, 4);
	check_case(engine, "a chunk of invisible tuples", &invisible, 4);
	check_case(engine, "one tuple", &one, 4);
	check_case(engine, "10^6 tuples", &million, 4096);
	check_fallback(engine, "a compressed text", DMG_COMPRESSED, Q_BY_TEXT);
	check_fallback(engine, "a numeric NaN", DMG_NAN, Q_BY_K);
	check_fallback(engine, "a visible line pointer that is no tuple", DMG_LP_UNUSED, Q_NO_GROUP);
	if (engine == ENG_GPU)
	{
		check_cancel();
		check_units();
		check_unit_reads(NULL);
		check_unit_reads_pinned();
		/* and read with cuFile: the stand-in's ("fake"), or PG_WARP_TEST_CUFILE's on a GPU */
		if (getenv("PG_WARP_TEST_CUFILE") != NULL && getenv("PG_WARP_TEST_CUFILE")[0] != '\0')
			check_unit_reads(getenv("PG_WARP_TEST_CUFILE"));
		else
			tap_diag("units read with cuFile not checked: PG_WARP_TEST_CUFILE names no libcufile");
		check_join_copy();
		if (fake_allocs != NULL)
		{
			check_kept_blocks();
			check_prewarm_kept();
			check_batch_pool();
			check_unit_buffers();	/* last: it pins the service's start buffers */
		}
	}
}

int
main(int argc, char **argv)
{
	ServiceGpu	gpu;

	if (argc < 2)
	{
		fprintf(stderr, "usage: heap_gpucheck FATBIN [fake]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	gpu_fatbin_path = argv[1];
	gpu_open(&gpu, true);
	the_gpu = &gpu;
	if (argc >= 3 && strcmp(argv[2], "fake") == 0)
	{
		void	   *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (gpu.n_devices == 0 || lib == NULL ||
			(fake_side = dlsym(lib, "fake_side_table")) == NULL ||
			(fake_registers = dlsym(lib, "fake_host_registers")) == NULL ||
			(fake_registered = dlsym(lib, "fake_host_registered")) == NULL ||
			(fake_allocs = dlsym(lib, "fake_allocs")) == NULL ||
			(fake_handles = dlsym(lib, "fake_handles")) == NULL ||
			(fake_unit_allocs = dlsym(lib, "fake_unit_host_allocs")) == NULL ||
			(fake_unit_watch = dlsym(lib, "fake_unit_watch")) == NULL ||
			(fake_unit_copies = dlsym(lib, "fake_unit_host_copies")) == NULL)
		{
			printf("Bail out! \"fake\" needs fake_cuda.c's libcuda.so.1 on LD_LIBRARY_PATH\n");
			return 1;
		}
		tap_diag("a stand-in driver: %s", gpu.devices[0].name);
	}
	if (gpu.n_devices == 0)
		tap_diag("no GPU (%s): the GPU path's decode runs on the host instead", gpu.detail);
	run_checks(gpu.n_devices == 0 ? ENG_EMU : ENG_GPU);
	if (fake_registers != NULL)
	{
		bool		refused = getenv("PG_WARP_FAKE_CUDA_NO_REGISTER") != NULL;

		/* the runs copied from their registered rings, or staged when refused */
		tap_ok(refused ? *fake_registers == 0 : *fake_registers > 0,
			   "the heap runs registered their chunk rings %d times (%s)", *fake_registers,
			   refused ? "refused: staged" : "copied from the rings");
		tap_ok(*fake_registered == 0, "every ring registration was undone (%d left)",
			   *fake_registered);
	}
	gpu_close(&gpu);
	return tap_done();
}
