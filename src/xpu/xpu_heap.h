/*-------------------------------------------------------------------------
 *
 * xpu_heap.h
 *		Decoding PostgreSQL heap pages and tuples outside PostgreSQL: the
 *		line pointers of a page, the attributes of a heap tuple (null
 *		bitmap, alignment, short and long varlena headers, attributes
 *		missing from short tuples), and the conversion of one attribute's
 *		on-disk bytes into the Arrow physical form that LOAD_COL reads
 *		(xpu_load.h), so that a heap chunk becomes a chunk of columns the
 *		unchanged programs run over.
 *
 * Plain C with the XPU_* qualifiers (xpu_common.h): the service's CPU
 * engine includes it, and a GPU kernel can.  No PostgreSQL header: the few
 * layout facts used here are PostgreSQL 15's on-disk format on a
 * little-endian host (bufpage.h, itemid.h, htup_details.h, varatt.h in
 * postgres.h, numeric.c), restated with their names.
 *
 * What is not decoded is a FALLBACK, never a guess: a compressed or
 * external (TOAST) value of a column the program reads, a numeric NaN or
 * infinity or one that does not fit the column's fixed-point scale, a
 * timestamp or interval the Arrow form cannot carry.  A line pointer or
 * tuple that does not fit its page is a FALLBACK too (PostgreSQL then reads
 * the table itself and reports the corruption its own way).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_HEAP_H
#define XPU_HEAP_H

#ifndef __CUDACC__
#include <string.h>
#endif

#include "xpu_common.h"
#include "xpu_program.h"

#define XPU_HEAP_PAGE_SIZE		8192	/* BLCKSZ */
#define XPU_HEAP_VIS_BYTES		40		/* visibility bits per page (>= 291 tuples) */
#define XPU_HEAP_PAGE_HDR		24		/* SizeOfPageHeaderData: pd_linp's offset */
#define XPU_HEAP_TUPLE_HDR		23		/* offsetof(HeapTupleHeaderData, t_bits) */

/* what the service knows of one attribute of the table (attnum = index + 1) */
typedef struct XpuHeapAtt
{
	int16_t		attlen;			/* > 0 fixed width, -1 varlena, -2 cstring */
	uint8_t		align;			/* attalign in bytes: 1, 2, 4 or 8 */
	uint8_t		flags;			/* XPU_HEAP_ATT_* */
	uint32_t	missing_off;	/* XPU_HEAP_ATT_MISSING: its bytes in the missing area */
	uint32_t	missing_len;
	uint32_t	pad;
} XpuHeapAtt;

#define XPU_HEAP_ATT_MISSING	0x01	/* atthasmissing: tuples without it read this value */

XPU_HOST_DEVICE uint16_t
xpu_heap_rd16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

XPU_HOST_DEVICE uint32_t
xpu_heap_rd32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) |
		((uint32_t) p[3] << 24);
}

/*
 * xpu_heap_item: line pointer i (0-based; offset number i + 1) of page:
 * the tuple's offset and length, false unless it is LP_NORMAL and lies
 * inside the page past the line pointer array.
 */
XPU_HOST_DEVICE int
xpu_heap_item(const uint8_t *page, int i, uint32_t *off, uint32_t *len)
{
	uint32_t	lower = xpu_heap_rd16(page + 12);	/* pd_lower */
	uint32_t	w;

	if (lower < XPU_HEAP_PAGE_HDR || lower > XPU_HEAP_PAGE_SIZE ||
		(uint32_t) i >= (lower - XPU_HEAP_PAGE_HDR) / 4)
		return 0;
	w = xpu_heap_rd32(page + XPU_HEAP_PAGE_HDR + 4 * i);
	*off = w & 0x7FFF;			/* lp_off:15, lp_flags:2, lp_len:15 */
	*len = w >> 17;
	return ((w >> 15) & 3) == 1 /* LP_NORMAL */ && *off >= lower &&
		*len >= XPU_HEAP_TUPLE_HDR && *off + *len <= XPU_HEAP_PAGE_SIZE;
}

/*
 * xpu_heap_varsize: the bytes (header included) of the varlena at p, of
 * which avail bytes are readable; 0 when it is malformed or does not fit.
 */
XPU_HOST_DEVICE uint32_t
xpu_heap_varsize(const uint8_t *p, uint32_t avail)
{
	uint32_t	sz;

	if (avail < 1)
		return 0;
	if (p[0] == 0x01)			/* VARATT_IS_1B_E: a TOAST pointer */
		sz = avail >= 2 && p[1] == 18 /* VARTAG_ONDISK */ ? 2 + 16 : 0;
	else if (p[0] & 0x01)		/* VARATT_IS_1B: short header */
		sz = (p[0] >> 1) & 0x7F;
	else
		sz = avail >= 4 ? xpu_heap_rd32(p) >> 2 : 0;	/* 4-byte header */
	return sz <= avail ? sz : 0;
}

XPU_HOST_DEVICE uint32_t
xpu_heap_align(uint32_t off, uint32_t align)
{
	return (off + align - 1) & ~(align - 1);
}

/*
 * xpu_heap_deform_some: walks the attributes 1 .. n_atts of the heap tuple
 * tup (len bytes, starting at a MAXALIGN'ed address as every tuple of a
 * page does) and returns the bytes of those wanted: with want NULL every
 * one, attribute a + 1's into ptrs[a] / lens[a] (n_out = n_atts); else
 * attribute a + 1's into ptrs[want[a]] / lens[want[a]] where want[a] >= 0
 * (n_out entries).  ptrs[w] is NULL for a NULL attribute.  An attribute the
 * tuple is too short to have reads the table's missing value (missing +
 * atts[a].missing_off) or is NULL.  Returns XPU_OK, or XPU_ERR_FALLBACK
 * when the tuple is malformed.  The CPU engine (xpu_heap_deform) and the
 * GPU's heap kernels (xpu_hg_deform, xpu_heap_gpu.h) both decode with it.
 */
XPU_HOST_DEVICE int
xpu_heap_deform_some(const uint8_t *tup, uint32_t len, const XpuHeapAtt *atts, int n_atts,
					 const uint8_t *missing, const int16_t *want, int n_out,
					 const uint8_t **ptrs, uint32_t *lens)
{
	int			natts = xpu_heap_rd16(tup + 18) & 0x07FF;	/* t_infomask2 */
	int			hasnull = xpu_heap_rd16(tup + 20) & 0x0001;	/* HEAP_HASNULL */
	uint32_t	off = tup[22];	/* t_hoff */

	for (int w = 0; w < n_out; w++)
	{
		ptrs[w] = NULL;
		lens[w] = 0;
	}
	if (off < XPU_HEAP_TUPLE_HDR || off > len ||
		(hasnull && XPU_HEAP_TUPLE_HDR + (uint32_t) (natts + 7) / 8 > off))
		return XPU_ERR_FALLBACK;
	for (int a = 0; a < n_atts; a++)
	{
		const XpuHeapAtt *at = &atts[a];
		int			w = want != NULL ? want[a] : a;
		uint32_t	sz;

		if (a >= natts)
		{
			if (w >= 0 && (at->flags & XPU_HEAP_ATT_MISSING))
			{
				ptrs[w] = missing + at->missing_off;
				lens[w] = at->missing_len;
			}
			continue;
		}
		if (hasnull && !(tup[XPU_HEAP_TUPLE_HDR + (a >> 3)] & (1 << (a & 7))))
			continue;
		/* att_align_pointer: a varlena's nonzero first byte is never padding */
		if (at->attlen != -1 || off >= len || tup[off] == 0)
			off = xpu_heap_align(off, at->align);
		if (off > len)
			return XPU_ERR_FALLBACK;
		if (at->attlen > 0)
			sz = (uint32_t) at->attlen;
		else if (at->attlen == -1)
			sz = xpu_heap_varsize(tup + off, len - off);
		else
		{
			for (sz = 0; off + sz < len && tup[off + sz] != 0; sz++)
				;
			sz++;				/* the NUL */
		}
		if (sz == 0 || sz > len - off)
			return XPU_ERR_FALLBACK;
		if (w >= 0)
		{
			ptrs[w] = tup + off;
			lens[w] = sz;
		}
		off += sz;
	}
	return XPU_OK;
}

/*
 * xpu_heap_deform: every attribute 1 .. n_atts of tup into ptrs[a] /
 * lens[a] (xpu_heap_deform_some without want)
 */
XPU_HOST_DEVICE int
xpu_heap_deform(const uint8_t *tup, uint32_t len, const XpuHeapAtt *atts, int n_atts,
				const uint8_t *missing, const uint8_t **ptrs, uint32_t *lens)
{
	return xpu_heap_deform_some(tup, len, atts, n_atts, missing, NULL, n_atts, ptrs, lens);
}

/*
 * xpu_heap_varlena: the data bytes of the varlena p of sz bytes (as
 * xpu_heap_varsize measured it); XPU_ERR_FALLBACK when it is compressed or
 * a TOAST pointer.
 */
XPU_HOST_DEVICE int
xpu_heap_varlena(const uint8_t *p, uint32_t sz, const uint8_t **data, uint32_t *dlen)
{
	if (p[0] == 0x01 || (p[0] & 0x03) == 0x02 || (!(p[0] & 0x01) && sz < 4))
		return XPU_ERR_FALLBACK;	/* external, compressed, or malformed */
	if (p[0] & 0x01)
	{
		*data = p + 1;
		*dlen = sz - 1;
	}
	else
	{
		*data = p + 4;
		*dlen = sz - 4;
	}
	return XPU_OK;
}

/*
 * xpu_heap_numeric: the numeric of data (dlen bytes: the varlena's data,
 * NumericShort or NumericLong) as an int128 at `scale` digits after the
 * point; XPU_ERR_FALLBACK for NaN, infinities, and values that have more
 * digits after the point than scale or more than 38 digits in all.
 */
XPU_HOST_DEVICE int
xpu_heap_numeric(const uint8_t *d, uint32_t dlen, int scale, __int128 *out)
{
	const __int128 max = ((__int128) 10000000000000000000ULL) * 10000000000000000000ULL - 1;
	uint16_t	h;
	int			weight,
				neg,
				ndig;
	const uint8_t *dig;
	__int128	v = 0;

	if (dlen < 2)
		return XPU_ERR_FALLBACK;
	h = xpu_heap_rd16(d);
	if ((h & 0xC000) == 0xC000)
		return XPU_ERR_FALLBACK;	/* NUMERIC_SPECIAL: NaN, +-Infinity */
	if (h & 0x8000)
	{
		/* NUMERIC_SHORT: sign 0x2000, weight sign 0x0040, weight 0x003F */
		neg = (h & 0x2000) != 0;
		weight = (h & 0x0040) ? (int) (h & 0x003F) - 64 : (int) (h & 0x003F);
		dig = d + 2;
		ndig = (int) (dlen - 2) / 2;
	}
	else
	{
		if (dlen < 4)
			return XPU_ERR_FALLBACK;
		neg = (h & 0xC000) == 0x4000;
		weight = (int16_t) xpu_heap_rd16(d + 2);
		dig = d + 4;
		ndig = (int) (dlen - 4) / 2;
	}
	for (int i = 0; i < ndig; i++)
	{
		__int128	x = (int16_t) xpu_heap_rd16(dig + 2 * i);
		int			e = 4 * (weight - i) + scale;	/* this digit's power of ten */

		if (x == 0)
			continue;
		if (x < 0 || x > 9999 || e < -3 || e > 38)
			return XPU_ERR_FALLBACK;
		for (; e < 0; e++)
		{
			if (x % 10 != 0)
				return XPU_ERR_FALLBACK;
			x /= 10;
		}
		for (; e > 0; e--)
		{
			if (x > max / 10)
				return XPU_ERR_FALLBACK;
			x *= 10;
		}
		if (x > max - v)
			return XPU_ERR_FALLBACK;
		v += x;
	}
	*out = neg ? -v : v;
	return XPU_OK;
}

/*
 * xpu_heap_fixed: the fixed-width Arrow value of column kind `kind` read
 * from an attribute's bytes p (sz bytes) into dst (16 bytes of room; BOOL
 * writes one byte 0/1).  PostgreSQL's dates and timestamps count from 2000,
 * Arrow's from 1970; their infinities stay the storage type's extremes,
 * which LOAD_COL reads back as infinities.  Returns XPU_OK, or
 * XPU_ERR_FALLBACK for what the Arrow form cannot carry or a width that
 * does not match.
 */
XPU_HOST_DEVICE int
xpu_heap_fixed(int kind, const uint8_t *p, uint32_t sz, void *dst)
{
	switch (kind)
	{
		case XPU_COL_BOOL:
			if (sz != 1)
				return XPU_ERR_FALLBACK;
			*(uint8_t *) dst = p[0] != 0;
			return XPU_OK;
		case XPU_COL_INT16:
		case XPU_COL_FLOAT16:
		case XPU_COL_INT32:
		case XPU_COL_INT64:
		case XPU_COL_FLOAT32:
		case XPU_COL_FLOAT64:
			if (sz != (kind == XPU_COL_INT16 || kind == XPU_COL_FLOAT16 ? 2 :
					   kind == XPU_COL_INT32 ||
					   kind == XPU_COL_FLOAT32 ? 4 : 8))
				return XPU_ERR_FALLBACK;
			memcpy(dst, p, sz);
			return XPU_OK;
		case XPU_COL_DATE32:
			{
				int32_t		d;

				if (sz != 4)
					return XPU_ERR_FALLBACK;
				memcpy(&d, p, 4);
				/* 10957 days from 1970 to 2000; the range leaves room for them */
				if (d != INT32_MIN && d != INT32_MAX)
					d += 10957;
				memcpy(dst, &d, 4);
				return XPU_OK;
			}
		case XPU_COL_TIMESTAMP_US:
			{
				int64_t		t;

				if (sz != 8)
					return XPU_ERR_FALLBACK;
				memcpy(&t, p, 8);
				if (t != INT64_MIN && t != INT64_MAX)
				{
					if (t > INT64_MAX - INT64_C(946684800000000) - 1)
						return XPU_ERR_FALLBACK;
					t += INT64_C(946684800000000);
				}
				memcpy(dst, &t, 8);
				return XPU_OK;
			}
		case XPU_COL_INTERVAL_MDN:
			{
				int64_t		us;
				int32_t		day,
							month;
				int64_t		ns;

				/* Interval: int64 time (us), int32 day, int32 month */
				if (sz != 16)
					return XPU_ERR_FALLBACK;
				memcpy(&us, p, 8);
				memcpy(&day, p + 8, 4);
				memcpy(&month, p + 12, 4);
				if (us > INT64_MAX / 1000 || us < INT64_MIN / 1000)
					return XPU_ERR_FALLBACK;
				ns = us * 1000;
				memcpy(dst, &month, 4);
				memcpy((uint8_t *) dst + 4, &day, 4);
				memcpy((uint8_t *) dst + 8, &ns, 8);
				return XPU_OK;
			}
		default:
			return XPU_ERR_FALLBACK;
	}
}

#endif							/* XPU_HEAP_H */
