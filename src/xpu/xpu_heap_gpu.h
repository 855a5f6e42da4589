/*-------------------------------------------------------------------------
 *
 * xpu_heap_gpu.h
 *		The launch contract of the heap decoding kernels (kern_heap.cu),
 *		shared by the kernels and the service code that drives them
 *		(service/gpu_heap.c, gpu_heap_execute): plain data with
 *		fixed-width fields, so that host C and device code agree on the
 *		layout.
 *
 * A heap chunk on the device is the slot's pages, their visibility
 * bitmaps and the first row number of each page (the host counts the
 * visible tuples of each page from the bitmaps while it stages them, or,
 * for a unit read with cuFile, from kern_heap_check's counts).  The
 * kernels decode the referenced attributes of every visible tuple into the
 * Arrow physical form of an XpuChunk (xpu_program.h) whose buffers the host
 * placed in device memory, so that kern_agg_exec runs over it unchanged:
 *
 *	kern_heap_measure(desc, hc, cancel)
 *		text columns only: the bytes of each page's values of each text
 *		column into hc->page_text[t * n_pages + p]
 *	kern_heap_scan(desc, hc)
 *		one block: page_text made an exclusive prefix sum per text column
 *	kern_heap_decode(desc, hc, chunk, cancel)
 *		every visible tuple's values into chunk's columns: validity bits and
 *		BOOL values OR-ed into zeroed bitmaps, fixed-width values, numeric
 *		as int128 at the column's scale, text as offsets and bytes
 *	kern_heap_check(pages, n_pages, vis, tuples)
 *		before them, for a unit read into device memory with cuFile (its
 *		pages not seen by the host): each page checked as the host checks
 *		those it reads (xpu_hg_check_page), its bitmap into vis and its
 *		count of visible tuples (or -1) into tuples, which the host reads
 *		back to count the rows or give the unit back
 *
 * measure and decode run one block per page and one thread per line
 * pointer (XPU_HEAP_GPU_BLOCK threads); a tuple's row number is its page's
 * first row plus the visible line pointers before it.  A line pointer or
 * value that the CPU engine's decode (service/heap_chunk.c) turns into a
 * FALLBACK sets hc->status (XPU_HEAP_GPU_MALFORMED or _VALUE, the first one
 * wins) and its row is written as NULLs, so that the aggregation kernel
 * after it still reads consistent buffers; the host then discards the run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_HEAP_GPU_H
#define XPU_HEAP_GPU_H

#include "xpu_heap.h"

#define XPU_HEAP_GPU_BLOCK		(XPU_HEAP_VIS_BYTES * 8)	/* a thread per line pointer */
#define XPU_HEAP_GPU_SCAN_BLOCK	1024
#define XPU_HEAP_GPU_MAX_WANT	32	/* distinct attributes a run decodes */

/* XpuHeapGpuChunk.status->code: why the chunk falls back */
#define XPU_HEAP_GPU_MALFORMED	1	/* a line pointer that does not decode */
#define XPU_HEAP_GPU_VALUE		2	/* a tuple or value the engine does not decode */

/* what a run decodes: the same for every chunk (device memory) */
typedef struct XpuHeapGpuDesc
{
	const XpuHeapAtt *atts;		/* [n_deform]: attributes 1 .. n_deform */
	const uint8_t *missing;		/* the missing values' bytes */
	const int16_t *want;		/* [n_deform]: index of the attribute among the
								 * wanted ones, or -1 */
	const int16_t *col_want;	/* [n_cols]: chunk column j's wanted attribute */
	const uint8_t *col_kind;	/* [n_cols]: XpuColKind (0: read by no column) */
	const int16_t *col_scale;	/* [n_cols]: a DECIMAL128 column's scale */
	const int16_t *col_text;	/* [n_cols]: a UTF8 column's text index, else -1 */
	int32_t		n_deform;
	int32_t		n_cols;
	int32_t		n_want;
	int32_t		n_text;
} XpuHeapGpuDesc;

typedef struct XpuHeapGpuStatus
{
	int32_t		code;			/* 0, XPU_HEAP_GPU_MALFORMED or _VALUE */
	int32_t		pad;
} XpuHeapGpuStatus;

/* one chunk (device memory, written by the host with the pages) */
typedef struct XpuHeapGpuChunk
{
	const uint8_t *pages;		/* [n_pages * XPU_HEAP_PAGE_SIZE] */
	const uint8_t *vis;			/* [n_pages * XPU_HEAP_VIS_BYTES] */
	const uint32_t *row_start;	/* [n_pages]: the row of the page's first tuple */
	uint64_t   *page_text;		/* [n_text * n_pages] */
	XpuHeapGpuStatus *status;
	int64_t		text_cap;		/* bytes of each text column's data buffer */
	uint32_t	n_pages;
	uint32_t	pad;
} XpuHeapGpuChunk;


/* the bytes per row of a fixed-width column kind the heap decodes (0: not one) */
XPU_HOST_DEVICE int
xpu_hg_width(int kind)
{
	switch (kind)
	{
		case XPU_COL_INT16:
		case XPU_COL_FLOAT16: return 2;
		case XPU_COL_INT32:
		case XPU_COL_FLOAT32:
		case XPU_COL_DATE32: return 4;
		case XPU_COL_INT64:
		case XPU_COL_FLOAT64:
		case XPU_COL_TIMESTAMP_US: return 8;
		case XPU_COL_INTERVAL_MDN:
		case XPU_COL_DECIMAL128: return 16;
		default: return 0;
	}
}

#ifdef __CUDACC__
#define XPU_HG_OR32(p, v)	atomicOr((unsigned int *) (p), (unsigned int) (v))
#define XPU_HG_POPC(x)		__popc(x)
#else
#define XPU_HG_OR32(p, v)	__atomic_fetch_or((uint32_t *) (p), (uint32_t) (v), __ATOMIC_RELAXED)
#define XPU_HG_POPC(x)		__builtin_popcount(x)
#endif

/* is line pointer i (0-based) of the page with bitmap vis visible */
XPU_HOST_DEVICE int
xpu_hg_visible(const uint8_t *vis, int i)
{
	return i < XPU_HEAP_VIS_BYTES * 8 && ((vis[i >> 3] >> (i & 7)) & 1);
}

/* the visible line pointers of the page before line pointer i */
XPU_HOST_DEVICE uint32_t
xpu_hg_rank(const uint8_t *vis, int i)
{
	uint32_t	n = 0;

	for (int b = 0; b < (i >> 3); b++)
		n += XPU_HG_POPC((unsigned) vis[b]);
	if (i & 7)
		n += XPU_HG_POPC((unsigned) (vis[i >> 3] & ((1u << (i & 7)) - 1)));
	return n;
}

/* sets bit r of the bitmap bits (32-bit aligned) */
XPU_HOST_DEVICE void
xpu_hg_set_bit(uint8_t *bits, uint32_t r)
{
	XPU_HG_OR32((uint32_t *) bits + (r >> 5), 1u << (r & 31));
}

/*
 * xpu_hg_deform: the wanted attributes of a tuple (xpu_heap_deform_some
 * with the run's want[]): ptrs[w] / lens[w] for the attribute a with
 * d->want[a] == w; XPU_ERR_FALLBACK as the CPU engine's decode fails
 */
XPU_HOST_DEVICE int
xpu_hg_deform(const uint8_t *tup, uint32_t len, const XpuHeapGpuDesc *d,
			  const uint8_t **ptrs, uint32_t *lens)
{
	return xpu_heap_deform_some(tup, len, d->atts, d->n_deform, d->missing, d->want,
								d->n_want, ptrs, lens);
}

/*
 * xpu_hg_tuple: the wanted attributes of the tuple of visible line pointer
 * i of page; 0, or why the CPU engine would fall back
 */
XPU_HOST_DEVICE int
xpu_hg_tuple(const XpuHeapGpuDesc *d, const uint8_t *page, int i, const uint8_t **ptrs,
			 uint32_t *lens)
{
	uint32_t	off,
				len;

	if (!xpu_heap_item(page, i, &off, &len))
		return XPU_HEAP_GPU_MALFORMED;
	return xpu_hg_deform(page + off, len, d, ptrs, lens) == XPU_OK ? 0 : XPU_HEAP_GPU_VALUE;
}

/*
 * xpu_hg_text_len: the text bytes of UTF8 chunk column j's value in a
 * tuple (ptrs/lens from xpu_hg_tuple; NULL when the tuple did not decode);
 * 0 for NULL or a value that does not decode.  measure and decode call it
 * alike, so both agree on every row's room.
 */
XPU_HOST_DEVICE uint32_t
xpu_hg_text_len(const XpuHeapGpuDesc *d, int j, const uint8_t *const *ptrs,
				const uint32_t *lens)
{
	const uint8_t *data;
	uint32_t	dlen;
	int			w = d->col_want[j];

	if (ptrs == NULL || ptrs[w] == NULL ||
		xpu_heap_varlena(ptrs[w], lens[w], &data, &dlen) != XPU_OK)
		return 0;
	return dlen;
}

/*
 * xpu_hg_put: row r's value of chunk column j (col: its buffers) from the
 * tuple's attributes (ptrs NULL: the tuple did not decode, the row is
 * NULL); a UTF8 value goes at text byte `start` (clamped to text_cap,
 * which makes it a VALUE failure).  0 or XPU_HEAP_GPU_VALUE, as put_value
 * of service/heap_chunk.c fails.
 */
XPU_HOST_DEVICE int
xpu_hg_put(const XpuHeapGpuDesc *d, const XpuColumnData *col, int j, uint32_t r,
		   const uint8_t *const *ptrs, const uint32_t *lens, uint64_t start,
		   int64_t text_cap)
{
	int			kind = d->col_kind[j];
	const uint8_t *p = ptrs != NULL ? ptrs[d->col_want[j]] : NULL;
	uint32_t	sz = ptrs != NULL ? lens[d->col_want[j]] : 0;
	uint8_t    *values = (uint8_t *) col->values;
	const uint8_t *data;
	uint32_t	dlen;

	if (kind == XPU_COL_UTF8)
	{
		uint64_t	cap = (uint64_t) text_cap;
		uint64_t	n = xpu_hg_text_len(d, j, ptrs, lens);
		uint64_t	s = start < cap ? start : cap;
		uint64_t	e = start + n < cap ? start + n : cap;

		if (r == 0)
			((int32_t *) values)[0] = 0;
		((int32_t *) values)[r + 1] = (int32_t) e;
		if (p == NULL)
			return 0;
		if (xpu_heap_varlena(p, sz, &data, &dlen) != XPU_OK)
			return XPU_HEAP_GPU_VALUE;
		xpu_hg_set_bit((uint8_t *) col->validity, r);
		if (e > s)
			memcpy((char *) col->data + s, data, e - s);
		return e - s == n ? 0 : XPU_HEAP_GPU_VALUE;
	}
	if (p == NULL)
		return 0;
	xpu_hg_set_bit((uint8_t *) col->validity, r);
	if (kind == XPU_COL_DECIMAL128)
	{
		__int128	v;

		if (xpu_heap_varlena(p, sz, &data, &dlen) != XPU_OK ||
			xpu_heap_numeric(data, dlen, d->col_scale[j], &v) != XPU_OK)
			return XPU_HEAP_GPU_VALUE;
		memcpy(values + (size_t) 16 * r, &v, 16);
		return 0;
	}
	if (kind == XPU_COL_BOOL)
	{
		uint8_t		b;

		if (xpu_heap_fixed(kind, p, sz, &b) != XPU_OK)
			return XPU_HEAP_GPU_VALUE;
		if (b)
			xpu_hg_set_bit(values, r);
		return 0;
	}
	{
		uint8_t		v[16];
		int			w = xpu_hg_width(kind);

		if (xpu_heap_fixed(kind, p, sz, v) != XPU_OK || w <= 0)
			return XPU_HEAP_GPU_VALUE;
		memcpy(values + (size_t) w * r, v, w);
		return 0;
	}
}

/* a heap page's header fields (PostgreSQL's PageHeaderData) and the flags they may hold */
#define XPU_HEAP_PD_FLAGS		10
#define XPU_HEAP_PD_LOWER		12
#define XPU_HEAP_PD_UPPER		14
#define XPU_HEAP_PD_SPECIAL		16
#define XPU_HEAP_PD_ALL_VISIBLE	0x0004
#define XPU_HEAP_PD_VALID_FLAGS	0x0007
#define XPU_HEAP_MAX_TUPLES		291		/* MaxHeapTuplesPerPage of 8 kB pages */

/*
 * xpu_hg_check_page: a page the service read from a segment file, taken as
 * the backend takes a direct read (heap_source.c's direct_page;
 * PageIsVerifiedExtended's header checks, no checksum: a run is asked to
 * read only where the cluster has none): its visible tuples with their
 * bitmap in vis (XPU_HEAP_VIS_BYTES), 0 for an all-zero (new) page, which
 * holds none, or -1 when the backend must read it: any other page without
 * PD_ALL_VISIBLE, or whose header is not sane.  The host's I/O threads run
 * it on the pages they read (service/gpu_heap.c), kern_heap_check on those
 * cuFile read into device memory.
 */
XPU_HOST_DEVICE int
xpu_hg_check_page(const uint8_t *page, uint8_t *vis)
{
	uint16_t	flags = xpu_heap_rd16(page + XPU_HEAP_PD_FLAGS),
				lower = xpu_heap_rd16(page + XPU_HEAP_PD_LOWER),
				upper = xpu_heap_rd16(page + XPU_HEAP_PD_UPPER),
				special = xpu_heap_rd16(page + XPU_HEAP_PD_SPECIAL);
	int			maxoff,
				n = 0;

	for (int i = 0; i < XPU_HEAP_VIS_BYTES; i++)
		vis[i] = 0;
	if (upper == 0)
	{
		for (int i = 0; i < XPU_HEAP_PAGE_SIZE; i += 8)
		{
			uint64_t	w;

			memcpy(&w, page + i, sizeof(w));
			if (w != 0)
				return -1;
		}
		return 0;
	}
	if (!(flags & XPU_HEAP_PD_ALL_VISIBLE) || (flags & ~XPU_HEAP_PD_VALID_FLAGS) != 0 ||
		lower < XPU_HEAP_PAGE_HDR || lower > upper || upper > special ||
		special > XPU_HEAP_PAGE_SIZE || special % 8 != 0)
		return -1;
	maxoff = (lower - XPU_HEAP_PAGE_HDR) / 4;
	if (maxoff > XPU_HEAP_MAX_TUPLES)
		return -1;
	for (int i = 0; i < maxoff; i++)
	{
		uint32_t	lp = xpu_heap_rd32(page + XPU_HEAP_PAGE_HDR + 4 * i);

		/* lp_off 15 bits, lp_flags 2, lp_len 15; LP_NORMAL is 1 */
		if (((lp >> 15) & 3) == 1)
		{
			vis[i >> 3] |= (uint8_t) (1 << (i & 7));
			n++;
		}
	}
	return n;
}

#endif							/* XPU_HEAP_GPU_H */
