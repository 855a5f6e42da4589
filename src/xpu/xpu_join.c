/*-------------------------------------------------------------------------
 *
 * xpu_join.c
 *		Building a hash join's inner table on the host (xpu_join.h gives the
 *		layout and the semantics), and checking one received from another
 *		process.  Plain C, no PostgreSQL headers.
 *
 * The builder collects the rows first (xpu_join_builder_add may be called
 * once per batch of the inner relation, whose size is not known in
 * advance): per row its payload values, and for a row without a NULL key
 * its hash and canonical key bytes.  xpu_join_builder_finish then knows
 * every size, picks the form, and writes the table in one allocation:
 * the hash form's entries sorted by bucket with a counting sort (stable,
 * so duplicates of a key stay in inner-row order), the key bytes copied in
 * entry order so that a bucket's keys are together in memory.
 *
 *-------------------------------------------------------------------------
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE				/* mremap (nvcc's host builds of the GPU checks) */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xpu_join.h"

/* a growing byte array */
typedef struct Buf
{
	uint8_t    *p;
	uint64_t	len;
	uint64_t	cap;
} Buf;

/* per keyed row, while building */
typedef struct KeyedRow
{
	uint64_t	hash;
	uint64_t	key_off;		/* its key bytes in the builder's keys buffer */
	uint32_t	key_len;
	uint32_t	row;
} KeyedRow;

/*
 * a run of a builder's rows as the layout reads them: its own (buffers
 * of its own), or those of an image attached in place
 * (xpu_join_builder_attach), whose row numbers and text offsets are its
 * own and move past base_rows and base_text in the table
 */
typedef struct RowsView
{
	const uint8_t *keyed;		/* KeyedRow[n_keyed], 8-byte aligned */
	uint64_t	n_keyed;
	const uint8_t *keys;
	uint64_t	len_keys;
	const uint8_t *null_rows;	/* uint32[n_null] */
	uint64_t	n_null;
	const uint8_t *text;
	uint64_t	len_text;
	const uint8_t *pay_vals[XPU_JOIN_MAX_PAYLOAD];
	const uint8_t *pay_nulls[XPU_JOIN_MAX_PAYLOAD];
	uint32_t	n_rows;
	uint32_t	base_rows;
	uint64_t	base_text;
	/* an image's: its integer-like keys' least and greatest (attach), if span */
	int			span;
	int64_t		key_lo;
	int64_t		key_hi;
} RowsView;

struct XpuJoinBuilder
{
	XpuJoinSpec spec;
	uint64_t	limit;			/* bytes the table may take */
	uint32_t	n_rows;
	Buf			keyed;			/* KeyedRow[] */
	Buf			keys;			/* key bytes of the keyed rows */
	Buf			null_rows;		/* uint32[] */
	Buf			pay_vals[XPU_JOIN_MAX_PAYLOAD];	/* width bytes a row; texts as
												 * XpuJoinText with off into text */
	Buf			pay_nulls[XPU_JOIN_MAX_PAYLOAD];
	Buf			text;			/* payload text bytes */
	/* images attached in place: their rows follow the builder's own */
	RowsView   *parts;
	int			n_parts;
	int			cap_parts;
	/* the layout, once xpu_join_builder_layout made it (no rows after) */
	int			laid_out;
	int			trusted;		/* dense, its keys' uniqueness not checked yet */
	int			no_dense;		/* a key repeated in a trusted dense table */
	XpuJoinTable hdr;
};

#define ALIGN16(x)	(((x) + 15) & ~(uint64_t) 15)

static int
fail(XpuError *err, int code, const char *msg)
{
	XPU_ERROR(err, code, msg);
	return 0;
}

static int
oom(XpuError *err)
{
	return fail(err, XPU_ERR_INTERNAL, "out of memory");
}

/*
 * A buffer of BUF_MAP_MIN bytes or more is a mapping of its own, advised
 * onto transparent huge pages and grown with mremap: a process that adds a
 * large dimension's rows (a serial build, a parallel GpuPreAgg's leader)
 * grows them to tens of megabytes, where each fresh 4 kB page costs a
 * fault (about 2 us on the GPU hosts' guests) and a realloc from the heap
 * copies what it holds.  Smaller ones (a parallel build's shares, mostly)
 * are malloc's.
 */
#define BUF_MAP_MIN		((uint64_t) 2 << 20)

/* a mapping of len bytes (a multiple of BUF_MAP_MIN) for a buffer; NULL: none */
static uint8_t *
buf_map(uint8_t *old, uint64_t old_len, uint64_t len)
{
	void	   *p = old != NULL ?
		mremap(old, (size_t) old_len, (size_t) len, MREMAP_MAYMOVE) :
		mmap(NULL, (size_t) len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void) madvise(p, (size_t) len, MADV_HUGEPAGE);
	return (uint8_t *) p;
}

/* room for more bytes at the end of b; 0 when memory runs out */
static int
buf_reserve(Buf *b, uint64_t more)
{
	uint64_t	need = b->len + more;
	uint64_t	cap = b->cap ? b->cap : 256;
	uint8_t    *p;

	if (need <= b->cap)
		return 1;
	while (cap < need)
		cap *= 2;
	if (cap != (size_t) cap)
		return 0;
	if (cap < BUF_MAP_MIN)
		p = (uint8_t *) realloc(b->p, (size_t) cap);
	else if (b->cap >= BUF_MAP_MIN)
		p = buf_map(b->p, b->cap, cap);
	else if ((p = buf_map(NULL, 0, cap)) != NULL)
	{
		if (b->len > 0)
			memcpy(p, b->p, (size_t) b->len);
		free(b->p);
	}
	if (p == NULL)
		return 0;
	b->p = p;
	b->cap = cap;
	return 1;
}

static int
buf_append(Buf *b, const void *src, uint64_t n)
{
	if (!buf_reserve(b, n))
		return 0;
	if (n > 0)
		memcpy(b->p + b->len, src, (size_t) n);
	b->len += n;
	return 1;
}

/* copies b's bytes to dst (b may never have been given any) */
static void
buf_copy_to(void *dst, const Buf *b)
{
	if (b->len > 0)
		memcpy(dst, b->p, (size_t) b->len);
}

static void
buf_free(Buf *b)
{
	if (b->cap >= BUF_MAP_MIN)
		munmap(b->p, (size_t) b->cap);
	else
		free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- the rows' runs */

/* the builder's own rows as a view (numbered from 0) */
static void
own_view(const XpuJoinBuilder *b, RowsView *v)
{
	memset(v, 0, sizeof(*v));
	v->keyed = b->keyed.p;
	v->n_keyed = b->keyed.len / sizeof(KeyedRow);
	v->keys = b->keys.p;
	v->len_keys = b->keys.len;
	v->null_rows = b->null_rows.p;
	v->n_null = b->null_rows.len / 4;
	v->text = b->text.p;
	v->len_text = b->text.len;
	for (int c = 0; c < b->spec.n_pay; c++)
	{
		v->pay_vals[c] = b->pay_vals[c].p;
		v->pay_nulls[c] = b->pay_nulls[c].p;
	}
	/* no rows are added once an image is attached: the images' rows follow */
	v->n_rows = b->n_parts > 0 ? b->parts[0].base_rows : b->n_rows;
}

/* view i of b's rows in their order: 0 its own, then the attached images */
static const RowsView *
view_at(const XpuJoinBuilder *b, const RowsView *own, int i)
{
	return i == 0 ? own : &b->parts[i - 1];
}

/* the sums over b's views: keyed rows, key bytes, NULL-key rows, text bytes */
static void
view_totals(const XpuJoinBuilder *b, uint64_t *keyed, uint64_t *keys, uint64_t *nulls,
			uint64_t *text)
{
	*keyed = b->keyed.len / sizeof(KeyedRow);
	*keys = b->keys.len;
	*nulls = b->null_rows.len / 4;
	*text = b->text.len;
	for (int i = 0; i < b->n_parts; i++)
	{
		*keyed += b->parts[i].n_keyed;
		*keys += b->parts[i].len_keys;
		*nulls += b->parts[i].n_null;
		*text += b->parts[i].len_text;
	}
}

/* keyed row i of view v */
static inline KeyedRow
view_keyed(const RowsView *v, uint64_t i)
{
	KeyedRow	kr;

	memcpy(&kr, v->keyed + i * sizeof(KeyedRow), sizeof(kr));
	return kr;
}

/* ---------------------------------------------------------------- the spec */

static int
check_spec(const XpuJoinSpec *spec, XpuError *err)
{
	if (spec->n_keys < 1 || spec->n_keys > XPU_JOIN_MAX_KEYS)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join needs 1 to 4 key columns");
	if (spec->n_pay < 0 || spec->n_pay > XPU_JOIN_MAX_PAYLOAD)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "too many payload columns for a join depth");
	if (spec->form != XPU_JOIN_AUTO && spec->form != XPU_JOIN_HASH)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "unknown join table form");
	if (spec->n_parts > XPU_JOIN_MAX_PARTS ||
		(spec->n_parts > 1 && spec->part >= spec->n_parts))
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "join table partition out of range");
	for (int k = 0; k < spec->n_keys; k++)
	{
		const XpuJoinKeyDesc *d = &spec->keys[k];

		if (!xpu_join_key_supported(d->type, d->probe_type))
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "join key types cannot be compared");
		if (d->type == XPU_T_NUMERIC &&
			(d->scale < 0 || d->scale > XPU_NUMERIC_MAX_SCALE ||
			 d->probe_scale < 0 || d->probe_scale > XPU_NUMERIC_MAX_SCALE))
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "join key numeric scale out of range");
	}
	for (int c = 0; c < spec->n_pay; c++)
		if (xpu_join_pay_width(spec->pay_types[c]) == 0)
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "unknown join payload type");
	return 1;
}

XpuJoinBuilder *
xpu_join_builder_create(const XpuJoinSpec *spec, XpuError *err)
{
	XpuJoinBuilder *b;

	if (!check_spec(spec, err))
		return NULL;
	if ((b = (XpuJoinBuilder *) calloc(1, sizeof(XpuJoinBuilder))) == NULL)
	{
		oom(err);
		return NULL;
	}
	b->spec = *spec;
	for (int k = 0; k < spec->n_keys; k++)
	{
		XpuJoinKeyDesc *d = &b->spec.keys[k];

		d->key_scale = 0;
		if (d->type == XPU_T_NUMERIC)
			d->key_scale = d->scale > d->probe_scale ? d->scale : d->probe_scale;
	}
	b->limit = spec->max_bytes == 0 || spec->max_bytes > XPU_JOIN_MAX_BYTES ?
		XPU_JOIN_MAX_BYTES : spec->max_bytes;
	return b;
}

void
xpu_join_builder_free(XpuJoinBuilder *b)
{
	if (b == NULL)
		return;
	buf_free(&b->keyed);
	buf_free(&b->keys);
	buf_free(&b->null_rows);
	for (int c = 0; c < XPU_JOIN_MAX_PAYLOAD; c++)
	{
		buf_free(&b->pay_vals[c]);
		buf_free(&b->pay_nulls[c]);
	}
	buf_free(&b->text);
	free(b->parts);
	free(b);
}

/* ---------------------------------------------------------------- adding rows */

/*
 * a lower bound of the finished table's bytes: what the rows take in the
 * hash form (buckets and entries, key bytes, payload, null list, texts),
 * or where the dense form may be chosen its least (a slot a keyed row)
 */
static uint64_t
bytes_so_far(const XpuJoinBuilder *b)
{
	const XpuJoinSpec *sp = &b->spec;
	uint64_t	n,
				keys,
				nulls,
				text,
				s;

	view_totals(b, &n, &keys, &nulls, &text);
	s = sizeof(XpuJoinTable) + 4 * nulls + text;

	if (sp->form == XPU_JOIN_AUTO && sp->n_keys == 1 && xpu_agg_intlike(sp->keys[0].type) &&
		xpu_agg_intlike(sp->keys[0].probe_type))
		s += 4 * n;
	else
	{
		s += 4 * (n + 1) + sizeof(XpuJoinEntry) * n;
		/* one-word keys live in the entries (xpu_join.h) */
		if (!xpu_join_key_inline(sp->keys, sp->n_keys))
			s += keys;
	}
	/* a payload value and its NULL flag a row, every row */
	for (int c = 0; c < sp->n_pay; c++)
		s += (uint64_t) b->n_rows * (xpu_join_pay_width(sp->pay_types[c]) + 1);
	return s;
}

static int
too_large(XpuError *err)
{
	return fail(err, XPU_ERR_FALLBACK, "join inner table exceeds its size limit");
}

/* add_key's result for a row of another partition: not kept */
#define ROW_SKIPPED		2

/*
 * the key of row i (of n) into b: its hash and key bytes, or the NULL
 * list; returns 1, ROW_SKIPPED (the row is another partition's), or 0
 * with err set
 */
static int
add_key(XpuJoinBuilder *b, int64_t n, int64_t i, const XpuValue *keys,
		const uint8_t *key_nulls, XpuError *err)
{
	const XpuJoinSpec *sp = &b->spec;
	XpuValue	vals[XPU_JOIN_MAX_KEYS];
	uint8_t		nulls[XPU_JOIN_MAX_KEYS];
	XpuJoinKeyForm f;
	KeyedRow	kr;
	uint64_t	key_len;
	int			r;

	for (int k = 0; k < sp->n_keys; k++)
	{
		vals[k] = keys[k * n + i];
		nulls[k] = key_nulls[k * n + i];
	}
	r = xpu_join_key_form(sp->keys, sp->n_keys, 0, vals, nulls, &f);
	if (r == XPU_JOIN_FORM_NULL && sp->n_parts > 1 && sp->part != 0)
		return ROW_SKIPPED;		/* partition 0 keeps the NULL keys */
	if (r == XPU_JOIN_FORM_NULL)
		return buf_append(&b->null_rows, &b->n_rows, 4) || oom(err);
	if (r == XPU_JOIN_FORM_RANGE)
		return fail(err, XPU_ERR_FALLBACK,
					"join key out of the engine's 38-digit numeric range at the key scale");
	kr.hash = xpu_join_form_hash(sp->keys, sp->n_keys, &f);
	if (sp->n_parts > 1 && xpu_join_part_of(kr.hash, sp->n_parts) != sp->part)
		return ROW_SKIPPED;
	kr.key_off = b->keys.len;
	kr.row = b->n_rows;
	key_len = 0;
	for (int k = 0; k < sp->n_keys; k++)
		key_len += xpu_agg_key_value_len(sp->keys[k].type, &vals[k], 0);
	if (key_len > UINT32_MAX)
		return too_large(err);
	kr.key_len = (uint32_t) key_len;
	if (!buf_reserve(&b->keys, kr.key_len))
		return oom(err);
	for (int k = 0; k < sp->n_keys; k++)
	{
		XpuValue	x;

		xpu_join_key_value(&sp->keys[k], 0, &vals[k], &x);
		b->keys.len += xpu_agg_key_value_put(b->keys.p + b->keys.len, sp->keys[k].type, &x, 0);
	}
	return buf_append(&b->keyed, &kr, sizeof(kr)) || oom(err);
}

/* payload column c of row i (of n) into b */
static int
add_pay(XpuJoinBuilder *b, int c, int64_t n, int64_t i, const XpuValue *pay,
		const uint8_t *pay_nulls, XpuError *err)
{
	int			type = b->spec.pay_types[c];
	int			width = xpu_join_pay_width(type);
	uint8_t		isnull = pay_nulls[c * n + i] ? 1 : 0;
	const XpuValue *v = &pay[c * n + i];
	uint8_t		slot[16];

	memset(slot, 0, sizeof(slot));
	if (!isnull && type == XPU_T_TEXT)
	{
		XpuJoinText tx;

		if (v->t.len < 0)
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "negative text length");
		/* the offset is made the table's when it is written */
		tx.off = b->text.len;
		tx.len = v->t.len;
		tx.pad = 0;
		if (!buf_append(&b->text, v->t.p, (uint64_t) v->t.len))
			return oom(err);
		memcpy(slot, &tx, sizeof(tx));
	}
	else if (!isnull)
		memcpy(slot, v, (size_t) width);
	if (!buf_append(&b->pay_vals[c], slot, (uint64_t) width) ||
		!buf_append(&b->pay_nulls[c], &isnull, 1))
		return oom(err);
	return 1;
}

int
xpu_join_builder_add(XpuJoinBuilder *b, int64_t n, const XpuValue *keys,
					 const uint8_t *key_nulls, const XpuValue *pay,
					 const uint8_t *pay_nulls, XpuError *err)
{
	if (n < 0 || b->laid_out || b->n_parts > 0)
		return fail(err, XPU_ERR_INVALID_ARGUMENT,
					n < 0 ? "negative row count" : b->laid_out ?
					"rows added to a laid-out join table" :
					"rows added after an attached image");
	for (int64_t i = 0; i < n; i++)
	{
		int			kept;

		if (b->n_rows >= XPU_JOIN_MAX_ROWS)
			return too_large(err);
		for (int k = 0; k < b->spec.n_keys; k++)
			if (!key_nulls[k * n + i] && b->spec.keys[k].type == XPU_T_TEXT &&
				keys[k * n + i].t.len < 0)
				return fail(err, XPU_ERR_INVALID_ARGUMENT, "negative text length");
		kept = add_key(b, n, i, keys, key_nulls, err);
		if (kept == 0)
			return 0;
		if (kept == ROW_SKIPPED)
			continue;
		for (int c = 0; c < b->spec.n_pay; c++)
			if (!add_pay(b, c, n, i, pay, pay_nulls, err))
				return 0;
		b->n_rows++;
		/* now and then: a table past its limit fails before it is finished */
		if ((b->n_rows & 1023) == 0 && bytes_so_far(b) > b->limit)
			return too_large(err);
	}
	if (bytes_so_far(b) > b->limit)
		return too_large(err);
	return 1;
}

/* ---------------------------------------------------------------- images */

/*
 * A builder's rows as one flat image (xpu_join_builder_image), so that
 * several processes can each add a share of an inner relation's rows and one
 * of them attach the shares (xpu_join_builder_attach) before the layout: a
 * header, then the builder's buffers in a fixed order, each 8-byte aligned.
 */
#define IMAGE_MAGIC		0x4a4d4957	/* "WIMJ" */
#define ALIGN8(x)		(((x) + 7) & ~(uint64_t) 7)

typedef struct ImageHeader
{
	uint32_t	magic;
	uint32_t	n_rows;
	int32_t		n_keys;
	int32_t		n_pay;
	uint8_t		pay_types[XPU_JOIN_MAX_PAYLOAD];
	uint64_t	len_keyed;
	uint64_t	len_keys;
	uint64_t	len_null_rows;
	uint64_t	len_text;
	uint64_t	len_pay_vals[XPU_JOIN_MAX_PAYLOAD];
} ImageHeader;

uint64_t
xpu_join_builder_image_len(const XpuJoinBuilder *b)
{
	uint64_t	len = ALIGN8(sizeof(ImageHeader));

	len += ALIGN8(b->keyed.len) + ALIGN8(b->keys.len) + ALIGN8(b->null_rows.len) +
		ALIGN8(b->text.len);
	for (int c = 0; c < b->spec.n_pay; c++)
		len += ALIGN8(b->pay_vals[c].len) + ALIGN8(b->pay_nulls[c].len);
	return len;
}

/* b's buffer i, in the image's order */
static const Buf *
image_buf(const XpuJoinBuilder *b, int i)
{
	if (i < 4)
		return i == 0 ? &b->keyed : i == 1 ? &b->keys : i == 2 ? &b->null_rows : &b->text;
	i -= 4;
	return i % 2 == 0 ? &b->pay_vals[i / 2] : &b->pay_nulls[i / 2];
}

void
xpu_join_builder_image(const XpuJoinBuilder *b, void *dst)
{
	ImageHeader h;
	uint8_t    *p = (uint8_t *) dst;
	uint64_t	off = ALIGN8(sizeof(ImageHeader));

	memset(&h, 0, sizeof(h));
	h.magic = IMAGE_MAGIC;
	h.n_rows = b->n_rows;
	h.n_keys = b->spec.n_keys;
	h.n_pay = b->spec.n_pay;
	memcpy(h.pay_types, b->spec.pay_types, sizeof(h.pay_types));
	h.len_keyed = b->keyed.len;
	h.len_keys = b->keys.len;
	h.len_null_rows = b->null_rows.len;
	h.len_text = b->text.len;
	for (int c = 0; c < b->spec.n_pay; c++)
		h.len_pay_vals[c] = b->pay_vals[c].len;
	memcpy(p, &h, sizeof(h));
	for (int i = 0; i < 4 + 2 * b->spec.n_pay; i++)
	{
		const Buf  *buf = image_buf(b, i);

		buf_copy_to(p + off, buf);
		off += ALIGN8(buf->len);
	}
}

/*
 * checks an image's header against b's spec and its length; the sizes of
 * its buffers into lens (image_buf's order)
 */
static int
image_check(const XpuJoinBuilder *b, const ImageHeader *h, uint64_t len, uint64_t *lens,
			XpuError *err)
{
	uint64_t	need = ALIGN8(sizeof(ImageHeader));
	int			n_bufs = 4 + 2 * b->spec.n_pay;

	if (h->magic != IMAGE_MAGIC || h->n_keys != b->spec.n_keys || h->n_pay != b->spec.n_pay ||
		memcmp(h->pay_types, b->spec.pay_types, sizeof(h->pay_types)) != 0)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of another spec");
	lens[0] = h->len_keyed;
	lens[1] = h->len_keys;
	lens[2] = h->len_null_rows;
	lens[3] = h->len_text;
	for (int c = 0; c < h->n_pay; c++)
	{
		lens[4 + 2 * c] = h->len_pay_vals[c];
		lens[5 + 2 * c] = h->n_rows;
		if (h->len_pay_vals[c] != (uint64_t) h->n_rows * xpu_join_pay_width(h->pay_types[c]))
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of bad payload sizes");
	}
	if (h->len_keyed % sizeof(KeyedRow) != 0 || h->len_null_rows % 4 != 0 ||
		h->len_keyed / sizeof(KeyedRow) + h->len_null_rows / 4 > h->n_rows)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of bad row counts");
	for (int i = 0; i < n_bufs; i++)
	{
		if (lens[i] > len)
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image shorter than it says");
		need += ALIGN8(lens[i]);
	}
	if (need != len)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image shorter than it says");
	return 1;
}

/*
 * the rows of an image (h, lens: its sizes; bufs: its buffers in
 * image_buf's order, wherever they lie) refer only to its own bytes: each
 * keyed row to its row and key bytes, each NULL-key row to a row, each
 * text payload value (not NULL) to its text bytes
 */
static int
image_rows_ok(const XpuJoinBuilder *b, const ImageHeader *h, const uint64_t *lens,
			  const uint8_t *const *bufs, RowsView *v, XpuError *err)
{
	/* one integer-like key: its span on the way, for the dense form (dense_fits) */
	int			span = b->spec.n_keys == 1 && xpu_agg_intlike(b->spec.keys[0].type);
	int64_t		lo = INT64_MAX,
				hi = INT64_MIN;

	for (uint64_t o = 0; o < lens[0]; o += sizeof(KeyedRow))
	{
		KeyedRow	kr;
		int64_t		key;

		memcpy(&kr, bufs[0] + o, sizeof(kr));
		if (kr.row >= h->n_rows || kr.key_off > h->len_keys ||
			kr.key_len > h->len_keys - kr.key_off)
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of bad keys");
		if (!span)
			continue;
		if (kr.key_len < 9)
		{
			span = 0;
			continue;
		}
		memcpy(&key, bufs[1] + kr.key_off + 1, 8);
		lo = key < lo ? key : lo;
		hi = key > hi ? key : hi;
	}
	v->span = span;
	v->key_lo = lo;
	v->key_hi = hi;
	for (uint64_t o = 0; o < lens[2]; o += 4)
	{
		uint32_t	r;

		memcpy(&r, bufs[2] + o, 4);
		if (r >= h->n_rows)
			return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of bad rows");
	}
	for (int c = 0; c < b->spec.n_pay; c++)
	{
		if (b->spec.pay_types[c] != XPU_T_TEXT)
			continue;
		for (uint32_t r = 0; r < h->n_rows; r++)
		{
			XpuJoinText tx;

			if (bufs[5 + 2 * c][r])
				continue;		/* a NULL's slot stays 0 */
			memcpy(&tx, bufs[4 + 2 * c] + (uint64_t) r * 16, sizeof(tx));
			if (tx.len < 0 || tx.off > h->len_text || (uint64_t) tx.len > h->len_text - tx.off)
				return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image of bad texts");
		}
	}
	return 1;
}

/*
 * the header of the image at p (len bytes) into *h and its buffers' sizes
 * and places into lens and bufs, checked against b's spec and len
 */
static int
image_open(const XpuJoinBuilder *b, const uint8_t *p, uint64_t len, ImageHeader *h,
		   uint64_t *lens, const uint8_t **bufs, XpuError *err)
{
	uint64_t	off = ALIGN8(sizeof(ImageHeader));

	if (b->laid_out)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "rows added to a laid-out join table");
	if (len < sizeof(*h))
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image shorter than it says");
	memcpy(h, p, sizeof(*h));
	if (!image_check(b, h, len, lens, err))
		return 0;
	if ((uint64_t) b->n_rows + h->n_rows > XPU_JOIN_MAX_ROWS)
		return too_large(err);
	for (int i = 0; i < 4 + 2 * b->spec.n_pay; i++)
	{
		bufs[i] = p + off;
		off += ALIGN8(lens[i]);
	}
	return 1;
}

int
xpu_join_builder_attach(XpuJoinBuilder *b, const void *image, uint64_t len, XpuError *err)
{
	ImageHeader h;
	uint64_t	lens[4 + 2 * XPU_JOIN_MAX_PAYLOAD];
	const uint8_t *bufs[4 + 2 * XPU_JOIN_MAX_PAYLOAD];
	uint64_t	keyed,
				keys,
				nulls,
				text;
	RowsView   *v;
	RowsView	span;

	if (((uintptr_t) image & 7) != 0)
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "a join table image not 8-byte aligned");
	memset(&span, 0, sizeof(span));
	if (!image_open(b, (const uint8_t *) image, len, &h, lens, bufs, err) ||
		!image_rows_ok(b, &h, lens, bufs, &span, err))
		return 0;
	if (b->n_parts == b->cap_parts)
	{
		int			cap = b->cap_parts ? 2 * b->cap_parts : 8;
		RowsView   *more = (RowsView *) realloc(b->parts, sizeof(RowsView) * (size_t) cap);

		if (more == NULL)
			return oom(err);
		b->parts = more;
		b->cap_parts = cap;
	}
	view_totals(b, &keyed, &keys, &nulls, &text);
	v = &b->parts[b->n_parts];
	memset(v, 0, sizeof(*v));
	v->keyed = bufs[0];
	v->n_keyed = lens[0] / sizeof(KeyedRow);
	v->keys = bufs[1];
	v->len_keys = lens[1];
	v->null_rows = bufs[2];
	v->n_null = lens[2] / 4;
	v->text = bufs[3];
	v->len_text = lens[3];
	for (int c = 0; c < b->spec.n_pay; c++)
	{
		v->pay_vals[c] = bufs[4 + 2 * c];
		v->pay_nulls[c] = bufs[5 + 2 * c];
	}
	v->n_rows = h.n_rows;
	v->base_rows = b->n_rows;
	v->base_text = text;
	v->span = span.span;
	v->key_lo = span.key_lo;
	v->key_hi = span.key_hi;
	b->n_parts++;
	b->n_rows += h.n_rows;
	if (bytes_so_far(b) > b->limit)
		return too_large(err);
	return 1;
}

/* ---------------------------------------------------------------- finishing */

/*
 * dense_view_rows: fn for each keyed row of run rv, with its integer-like
 * key and its number in the table; a nonzero return of fn stops the pass
 * and is returned.  Inlined, so that each pass calls its fn directly (no
 * call through a pointer a row).
 */
typedef int (*DenseRowFn) (void *ctx, int64_t key, uint32_t row);

static inline __attribute__((always_inline)) int
dense_view_rows(const RowsView *rv, DenseRowFn fn, void *ctx)
{
	for (uint64_t i = 0; i < rv->n_keyed; i++)
	{
		KeyedRow	kr = view_keyed(rv, i);
		int64_t		v;
		int			r;

		memcpy(&v, rv->keys + kr.key_off + 1, 8);
		if ((r = fn(ctx, v, rv->base_rows + kr.row)) != 0)
			return r;
	}
	return 0;
}

/* dense_view_rows over each run of b (its own, then each attached image) */
static inline __attribute__((always_inline)) int
dense_rows(const XpuJoinBuilder *b, DenseRowFn fn, void *ctx)
{
	RowsView	own;
	int			r;

	own_view(b, &own);
	for (int p = 0; p <= b->n_parts; p++)
		if ((r = dense_view_rows(view_at(b, &own, p), fn, ctx)) != 0)
			return r;
	return 0;
}

/* dense_rows' passes: the keys' span, their uniqueness, the slots */
typedef struct DenseCtx
{
	int64_t		lo;
	int64_t		hi;
	uint64_t   *seen;			/* a bit a slot */
	uint32_t   *slots;
} DenseCtx;

static int
dense_span(void *ctx, int64_t key, uint32_t row)
{
	DenseCtx   *c = (DenseCtx *) ctx;

	c->lo = key < c->lo ? key : c->lo;
	c->hi = key > c->hi ? key : c->hi;
	return 0;
}

static int
dense_seen(void *ctx, int64_t key, uint32_t row)
{
	DenseCtx   *c = (DenseCtx *) ctx;
	uint64_t	slot = (uint64_t) key - (uint64_t) c->lo;
	uint64_t	bit = (uint64_t) 1 << (slot % 64);

	if (c->seen[slot / 64] & bit)
		return 1;				/* a duplicate key */
	c->seen[slot / 64] |= bit;
	return 0;
}

static int
dense_slot(void *ctx, int64_t key, uint32_t row)
{
	DenseCtx   *c = (DenseCtx *) ctx;

	c->slots[(uint64_t) key - (uint64_t) c->lo] = row + 1;
	return 0;
}

/*
 * images_span: the span of b's keys into c (lo, hi) from its attached
 * images' (xpu_join_builder_attach) and a pass over its own rows; false
 * where an image has none (dense_rows' pass then)
 */
static int
images_span(const XpuJoinBuilder *b, DenseCtx *c)
{
	RowsView	own;

	for (int p = 0; p < b->n_parts; p++)
	{
		if (!b->parts[p].span)
			return 0;
		if (b->parts[p].n_keyed == 0)
			continue;
		c->lo = b->parts[p].key_lo < c->lo ? b->parts[p].key_lo : c->lo;
		c->hi = b->parts[p].key_hi > c->hi ? b->parts[p].key_hi : c->hi;
	}
	own_view(b, &own);
	dense_view_rows(&own, dense_span, c);
	return 1;
}

/*
 * dense_fits: does the dense form take b's rows (xpu_join.h: one
 * integer-like key, unique, max - min + 1 <= 2 * keyed rows)?  *min and
 * *range then hold its slots' span.  The keys' uniqueness is checked with a
 * bitmap of the span (an eighth of a byte a slot, against the 4 bytes of
 * the slot array that write_dense_slots fills straight into the table),
 * or, where the spec says the keys are unique, not before the slots are
 * written (2: xpu_join_builder_written counts them); 0 when the rows do
 * not qualify (or memory runs out: the hash form is then tried, which
 * needs no such array)
 */
static int
dense_fits(const XpuJoinBuilder *b, int64_t *min, uint64_t *range)
{
	uint64_t	n,
				keys,
				nulls,
				text;
	int			type = b->spec.keys[0].type;
	DenseCtx	c = {INT64_MAX, INT64_MIN, NULL, NULL};
	int			dup;

	view_totals(b, &n, &keys, &nulls, &text);
	if (b->spec.form == XPU_JOIN_HASH || b->no_dense || b->spec.n_keys != 1 || n == 0 ||
		!xpu_agg_intlike(type) || !xpu_agg_intlike(b->spec.keys[0].probe_type))
		return 0;
	if (!images_span(b, &c))
		dense_rows(b, dense_span, &c);
	/* unsigned: hi - lo may pass INT64_MAX */
	if ((uint64_t) c.hi - (uint64_t) c.lo == UINT64_MAX ||
		!xpu_join_dense_fits((uint64_t) c.hi - (uint64_t) c.lo + 1, n))
		return 0;
	*range = (uint64_t) c.hi - (uint64_t) c.lo + 1;
	*min = c.lo;
	/* known unique: checked once the slots are written (xpu_join_builder_written) */
	if (b->spec.unique_keys)
		return 2;
	if ((c.seen = (uint64_t *) calloc((size_t) ((*range + 63) / 64), 8)) == NULL)
		return 0;
	dup = dense_rows(b, dense_seen, &c);
	free(c.seen);
	return !dup;
}

/* the dense form's slots of run v's rows into t (zeroed): each keyed row's number + 1 */
static void
write_dense_slots(const RowsView *v, XpuJoinTable *t)
{
	DenseCtx	c = {t->dense_min, 0, NULL, (uint32_t *) ((uint8_t *) t + t->slots_off)};

	dense_view_rows(v, dense_slot, &c);
}

/*
 * key_bytes_len: the length of the key bytes at off (within end) in the
 * form of t's keys, 0 where they do not have it (a key takes 9 bytes or more)
 */
static uint64_t
key_bytes_len(const XpuJoinTable *t, uint64_t off, uint64_t end)
{
	const uint8_t *base = (const uint8_t *) t;
	uint64_t	start = off;

	for (int k = 0; k < t->n_keys; k++)
	{
		int			type = t->keys[k].type;
		uint64_t	need = type == XPU_T_NUMERIC ? 16 : 8;

		if (off >= end || base[off++] != 1)
			return 0;
		if (type == XPU_T_TEXT)
		{
			int32_t		len;

			if (end - off < 4)
				return 0;
			memcpy(&len, base + off, 4);
			off += 4;
			if (len < 0)
				return 0;
			need = (uint64_t) len;
		}
		if (end - off < need)
			return 0;
		off += need;
	}
	return off - start;
}

/* do entries a and b of hash table t hold the same key */
static int
same_key(const XpuJoinTable *t, const XpuJoinEntry *a, const XpuJoinEntry *b)
{
	uint64_t	len;

	if (a->tag != b->tag)
		return 0;
	if (t->inline_key)
		return a->key_off == b->key_off;
	len = key_bytes_len(t, a->key_off, t->keys_off + t->keys_len);
	return len != 0 && len == key_bytes_len(t, b->key_off, t->keys_off + t->keys_len) &&
		memcmp(XPU_JOIN_AT(t, a->key_off), XPU_JOIN_AT(t, b->key_off), (size_t) len) == 0;
}

/*
 * keys_unique: does no key of hash table t appear twice (its entries and
 * key bytes written, or checked by validate_hash); a bucket of more than
 * UNIQUE_BUCKET_MAX entries counts as not (its pairs are not compared)
 */
#define UNIQUE_BUCKET_MAX	64

static int
keys_unique(const XpuJoinTable *t)
{
	const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
	const XpuJoinEntry *ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);

	for (uint32_t b = 0; b < t->n_buckets; b++)
	{
		if (buckets[b + 1] - buckets[b] > UNIQUE_BUCKET_MAX)
			return 0;
		for (uint32_t i = buckets[b]; i < buckets[b + 1]; i++)
			for (uint32_t j = i + 1; j < buckets[b + 1]; j++)
				if (same_key(t, &ents[i], &ents[j]))
					return 0;
	}
	return 1;
}

/* the hash form's buckets and entries (sorted by bucket) and key bytes into t */
static void
write_hash(const XpuJoinBuilder *b, XpuJoinTable *t)
{
	uint32_t	n = t->n_keyed;
	uint32_t   *buckets = (uint32_t *) ((uint8_t *) t + t->buckets_off);
	XpuJoinEntry *ents = (XpuJoinEntry *) ((uint8_t *) t + t->entries_off);
	uint64_t	kpos = t->keys_off;
	uint32_t	mask = t->n_buckets - 1;
	RowsView	own;

	own_view(b, &own);
	/* counts, then each bucket's start; buckets[b + 1] is then b's end */
	for (int p = 0; p <= b->n_parts; p++)
	{
		const RowsView *v = view_at(b, &own, p);

		for (uint64_t i = 0; i < v->n_keyed; i++)
			buckets[(view_keyed(v, i).hash & mask) + 1]++;
	}
	for (uint32_t i = 0; i < t->n_buckets; i++)
		buckets[i + 1] += buckets[i];
	/* place (key_off holds the view and its keyed row for now):
	 * buckets[bk] counts up to bk's end, then the array is shifted back
	 * to the starts */
	for (int p = 0; p <= b->n_parts; p++)
	{
		const RowsView *v = view_at(b, &own, p);

		for (uint64_t i = 0; i < v->n_keyed; i++)
		{
			KeyedRow	kr = view_keyed(v, i);
			uint32_t	bk = (uint32_t) (kr.hash & mask);
			XpuJoinEntry *e = &ents[buckets[bk]++];

			e->tag = (uint32_t) (kr.hash >> 32);
			e->row = v->base_rows + kr.row;
			e->key_off = (uint64_t) p << 32 | i;
		}
	}
	for (uint32_t i = t->n_buckets; i > 0; i--)
		buckets[i] = buckets[i - 1];
	buckets[0] = 0;
	/* key bytes in entry order, so that a bucket's keys lie together */
	for (uint32_t e = 0; e < n; e++)
	{
		const RowsView *v = view_at(b, &own, (int) (ents[e].key_off >> 32));
		KeyedRow	k = view_keyed(v, (uint32_t) ents[e].key_off);

		if (t->inline_key)
		{
			memcpy(&ents[e].key_off, v->keys + k.key_off + 1, 8);
			continue;
		}
		memcpy((uint8_t *) t + kpos, v->keys + k.key_off, k.key_len);
		ents[e].key_off = kpos;
		kpos += k.key_len;
	}
	if (keys_unique(t))
		t->flags |= XPU_JOIN_UNIQUE;
}

/*
 * run p's rows with a NULL key into t, numbered as the table's rows, after
 * those of the runs before it
 */
static void
write_null_rows(const XpuJoinBuilder *b, const RowsView *own, int p, XpuJoinTable *t)
{
	const RowsView *v = view_at(b, own, p);
	uint8_t    *dst = (uint8_t *) t + t->null_rows_off;

	for (int q = 0; q < p; q++)
		dst += 4 * view_at(b, own, q)->n_null;
	for (uint64_t i = 0; i < v->n_null; i++)
	{
		uint32_t	r;

		memcpy(&r, v->null_rows + 4 * i, 4);
		r += v->base_rows;
		memcpy(dst, &r, 4);
		dst += 4;
	}
}

/* run v's payload values and texts into t (offsets set) */
static void
write_payload(const RowsView *v, XpuJoinTable *t)
{
	if (v->len_text > 0)
		memcpy((uint8_t *) t + t->text_off + v->base_text, v->text, (size_t) v->len_text);
	for (int c = 0; c < t->n_pay && v->n_rows > 0; c++)
	{
		XpuJoinPayCol *pc = &t->pay[c];
		uint8_t    *at = (uint8_t *) t + pc->vals_off + (uint64_t) v->base_rows * pc->width;

		memcpy(at, v->pay_vals[c], (size_t) v->n_rows * pc->width);
		memcpy((uint8_t *) t + pc->nulls_off + v->base_rows, v->pay_nulls[c], v->n_rows);
		if (pc->type != XPU_T_TEXT)
			continue;
		/* a NULL's slot stays 0 but for the table's text offset */
		for (uint32_t r = 0; r < v->n_rows; r++)
		{
			XpuJoinText tx;

			memcpy(&tx, at + (uint64_t) r * 16, sizeof(tx));
			tx.off += t->text_off + (v->pay_nulls[c][r] ? 0 : v->base_text);
			memcpy(at + (uint64_t) r * 16, &tx, sizeof(tx));
		}
	}
}

uint64_t
xpu_join_builder_layout(XpuJoinBuilder *b, XpuError *err)
{
	XpuJoinTable *h = &b->hdr;
	uint64_t	n_keyed,
				keys_len,
				n_null,
				text_len;
	uint64_t	off,
				nb = 1;

	if (b->laid_out)
		return h->total_len;
	view_totals(b, &n_keyed, &keys_len, &n_null, &text_len);
	memset(h, 0, sizeof(*h));
	h->magic = XPU_JOIN_MAGIC;
	h->version = XPU_JOIN_VERSION;
	h->n_keys = (uint8_t) b->spec.n_keys;
	h->n_pay = (uint8_t) b->spec.n_pay;
	h->n_rows = b->n_rows;
	h->n_keyed = (uint32_t) n_keyed;
	h->n_null_keys = (uint32_t) n_null;
	h->n_parts = b->spec.n_parts > 1 ? b->spec.n_parts : 1;
	h->part = b->spec.n_parts > 1 ? b->spec.part : 0;
	memcpy(h->keys, b->spec.keys, sizeof(h->keys));
	off = ALIGN16(sizeof(XpuJoinTable));
	if ((b->trusted = dense_fits(b, &h->dense_min, &h->dense_range)) != 0)
	{
		b->trusted = b->trusted == 2;
		h->form = XPU_JOIN_DENSE;
		h->flags = XPU_JOIN_UNIQUE;		/* dense_fits refuses a repeated key */
		h->slots_off = off;
		off = ALIGN16(off + 4 * h->dense_range);
	}
	else
	{
		h->form = XPU_JOIN_HASH;
		while (nb < n_keyed)
			nb *= 2;
		h->n_buckets = (uint32_t) nb;
		h->buckets_off = off;
		off = ALIGN16(off + 4 * (nb + 1));
		h->entries_off = off;
		off = ALIGN16(off + sizeof(XpuJoinEntry) * n_keyed);
		h->inline_key = (uint8_t) xpu_join_key_inline(b->spec.keys, b->spec.n_keys);
		h->keys_off = off;
		h->keys_len = h->inline_key ? 0 : keys_len;
		off = ALIGN16(off + h->keys_len);
	}
	h->null_rows_off = off;
	off = ALIGN16(off + 4 * n_null);
	for (int c = 0; c < b->spec.n_pay; c++)
	{
		XpuJoinPayCol *pc = &h->pay[c];

		pc->type = b->spec.pay_types[c];
		pc->width = (uint8_t) xpu_join_pay_width(pc->type);
		pc->vals_off = off;
		off = ALIGN16(off + (uint64_t) pc->width * h->n_rows);
		pc->nulls_off = off;
		off = ALIGN16(off + h->n_rows);
	}
	h->text_off = off;
	h->text_len = text_len;
	off = ALIGN16(off + text_len);
	h->total_len = off;
	if (off > b->limit)
	{
		too_large(err);
		return 0;
	}
	b->laid_out = 1;
	return off;
}

void
xpu_join_builder_write(XpuJoinBuilder *b, void *dst)
{
	/* zeroed: padding, empty slots and the counting sort's counts are 0 */
	memset(dst, 0, (size_t) b->hdr.total_len);
	xpu_join_builder_write_zeroed(b, dst);
}

void
xpu_join_builder_write_zeroed(XpuJoinBuilder *b, void *dst)
{
	xpu_join_builder_write_head(b, dst);
	for (int p = 0; p < xpu_join_builder_runs(b); p++)
		xpu_join_builder_write_run(b, dst, p);
}

int
xpu_join_builder_runs(const XpuJoinBuilder *b)
{
	return b->n_parts + 1;
}

void
xpu_join_builder_write_head(XpuJoinBuilder *b, void *dst)
{
	XpuJoinTable *t = (XpuJoinTable *) dst;

	*t = b->hdr;
	if (t->form == XPU_JOIN_HASH)
		write_hash(b, t);
}

void
xpu_join_builder_write_run(const XpuJoinBuilder *b, void *dst, int run)
{
	XpuJoinTable *t = (XpuJoinTable *) dst;
	RowsView	own;
	const RowsView *v;

	own_view(b, &own);
	v = view_at(b, &own, run);
	if (t->form == XPU_JOIN_DENSE)
		write_dense_slots(v, t);
	write_null_rows(b, &own, run, t);
	write_payload(v, t);
}

int
xpu_join_builder_written(XpuJoinBuilder *b, const void *dst)
{
	const XpuJoinTable *t = (const XpuJoinTable *) dst;
	const uint32_t *slots = (const uint32_t *) XPU_JOIN_AT(t, t->slots_off);
	uint64_t	taken = 0;

	if (!b->trusted)
		return 1;
	for (uint64_t i = 0; i < t->dense_range; i++)
		taken += slots[i] != 0;
	b->trusted = 0;
	if (taken == t->n_keyed)
		return 1;
	/* a key repeated: two rows took one slot */
	b->no_dense = 1;
	b->laid_out = 0;
	return 0;
}

XpuJoinTable *
xpu_join_builder_finish(XpuJoinBuilder *b, XpuError *err)
{
	for (;;)
	{
		uint64_t	len = xpu_join_builder_layout(b, err);
		void	   *mem;

		if (len == 0)
			return NULL;
		if (len != (size_t) len || posix_memalign(&mem, 64, (size_t) len) != 0)
		{
			oom(err);
			return NULL;
		}
		xpu_join_builder_write(b, mem);
		if (xpu_join_builder_written(b, mem))
			return (XpuJoinTable *) mem;
		free(mem);
	}
}

/* ---------------------------------------------------------------- batch probe */

/* rows of xpu_join_first_batch whose loads are started together */
#define BATCH_GROUP		32

/* starts loading the cache line at p (a no-op where the compiler has no prefetch) */
#if defined(__GNUC__)
#define PREFETCH(p)		__builtin_prefetch((p), 0, 3)
#else
#define PREFETCH(p)		((void) (p))
#endif

/*
 * one group of rows [from, to) of xpu_join_first_batch: each step starts
 * the loads of the next for every row of the group before a row waits
 */
static void
first_group(const XpuJoinTable *t, int jointype, int from, int to, const uint16_t *sel,
			const XpuValue *const *keys, const uint8_t *const *nulls,
			XpuJoinCursor *curs, int32_t *first)
{
	const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
	const uint32_t *slots = (const uint32_t *) XPU_JOIN_AT(t, t->slots_off);
	const XpuJoinEntry *ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);
	uint8_t		ok[BATCH_GROUP];
	uint64_t	where[BATCH_GROUP];

	/* the keys' forms and hashes; the bucket or slot starts loading */
	for (int i = from; i < to; i++)
	{
		XpuJoinCursor *c = &curs[i];
		XpuValue	vals[XPU_JOIN_MAX_KEYS];
		uint8_t		nl[XPU_JOIN_MAX_KEYS];
		int			row = sel != NULL ? sel[i] : i;

		for (int k = 0; k < t->n_keys; k++)
		{
			vals[k] = keys[k][row];
			nl[k] = nulls[k][row];
		}
		c->jointype = (uint8_t) jointype;
		c->accepted = 0;
		c->done = 0;
		ok[i - from] = (uint8_t) xpu_join_start(t, c, vals, nl);
		if (!ok[i - from])
			continue;
		if (t->form == XPU_JOIN_DENSE)
		{
			where[i - from] = c->key.w[0][0] - (uint64_t) t->dense_min;
			if (where[i - from] < t->dense_range)
				PREFETCH(&slots[where[i - from]]);
			continue;
		}
		where[i - from] = c->hash & (t->n_buckets - 1);
		PREFETCH(&buckets[where[i - from]]);
	}
	/* the bucket's entries start loading (dense: the match is known) */
	for (int i = from; i < to; i++)
	{
		XpuJoinCursor *c = &curs[i];

		if (!ok[i - from])
			continue;
		if (t->form == XPU_JOIN_DENSE)
		{
			if (where[i - from] < t->dense_range && slots[where[i - from]] != 0)
				c->row = (int32_t) (slots[where[i - from]] - 1);
			continue;
		}
		c->pos = buckets[where[i - from]];
		c->end = buckets[where[i - from] + 1];
		if (c->pos < c->end)
			PREFETCH(&ents[c->pos]);
	}
	/* the first entry's key bytes start loading (keys not in the entries) */
	for (int i = from; i < to && t->form == XPU_JOIN_HASH && !t->inline_key; i++)
		if (curs[i].pos < curs[i].end)
			PREFETCH(XPU_JOIN_AT(t, ents[curs[i].pos].key_off));
	for (int i = from; i < to; i++)
	{
		if (t->form == XPU_JOIN_HASH && ok[i - from])
			xpu_join_next(t, &curs[i]);
		first[i] = curs[i].row;
	}
	/* the matches' payload starts loading for the caller */
	for (int i = from; i < to; i++)
		for (int col = 0; col < t->n_pay && first[i] >= 0; col++)
		{
			PREFETCH(XPU_JOIN_AT(t, t->pay[col].vals_off) +
					 (uint64_t) first[i] * t->pay[col].width);
			PREFETCH(XPU_JOIN_AT(t, t->pay[col].nulls_off) + first[i]);
		}
}

void
xpu_join_first_batch(const XpuJoinTable *t, int jointype, int n, const uint16_t *sel,
					 const XpuValue *const *keys, const uint8_t *const *nulls,
					 XpuJoinCursor *curs, int32_t *first)
{
	for (int from = 0; from < n; from += BATCH_GROUP)
		first_group(t, jointype, from, from + BATCH_GROUP < n ? from + BATCH_GROUP : n, sel,
					keys, nulls, curs, first);
}

/* ---------------------------------------------------------------- validation */

static int
bad(XpuError *err, const char *what)
{
	char		msg[XPU_ERROR_MESSAGE_LEN];

	snprintf(msg, sizeof(msg), "invalid join inner table: %s", what);
	return fail(err, XPU_ERR_INVALID_ARGUMENT, msg);
}

/* is [off, off + n) within len bytes, off 16-byte aligned */
static int
in_bounds(uint64_t off, uint64_t n, uint64_t len)
{
	return off % 16 == 0 && off <= len && n <= len - off;
}

static int
validate_hash(const XpuJoinTable *t, uint64_t len, XpuError *err)
{
	const uint32_t *buckets;
	const XpuJoinEntry *ents;
	uint64_t	kend = t->keys_off + t->keys_len;

	if (t->n_buckets == 0 || (t->n_buckets & (t->n_buckets - 1)) != 0)
		return bad(err, "bucket count");
	if (t->inline_key > 1 || (t->inline_key && !xpu_join_key_inline(t->keys, t->n_keys)))
		return bad(err, "inline key");
	if (!in_bounds(t->buckets_off, 4 * ((uint64_t) t->n_buckets + 1), len) ||
		!in_bounds(t->entries_off, sizeof(XpuJoinEntry) * (uint64_t) t->n_keyed, len) ||
		!in_bounds(t->keys_off, t->keys_len, len))
		return bad(err, "section out of bounds");
	buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
	ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);
	if (buckets[0] != 0 || buckets[t->n_buckets] != t->n_keyed)
		return bad(err, "buckets");
	for (uint32_t i = 0; i < t->n_buckets; i++)
		if (buckets[i] > buckets[i + 1])
			return bad(err, "buckets not ascending");
	for (uint32_t e = 0; e < t->n_keyed; e++)
		if (ents[e].row >= t->n_rows)
			return bad(err, "entry row");
	for (uint32_t e = 0; e < t->n_keyed && !t->inline_key; e++)
		if (ents[e].key_off < t->keys_off ||
			ents[e].key_off >= kend || key_bytes_len(t, ents[e].key_off, kend) == 0)
			return bad(err, "entry");
	if ((t->flags & XPU_JOIN_UNIQUE) && !keys_unique(t))
		return bad(err, "keys not unique");
	return 1;
}

static int
validate_payload(const XpuJoinTable *t, uint64_t len, XpuError *err)
{
	if (!in_bounds(t->text_off, t->text_len, len))
		return bad(err, "text out of bounds");
	for (int c = 0; c < t->n_pay; c++)
	{
		const XpuJoinPayCol *pc = &t->pay[c];
		const uint8_t *vals;

		if (xpu_join_pay_width(pc->type) == 0 || pc->width != xpu_join_pay_width(pc->type) ||
			!in_bounds(pc->vals_off, (uint64_t) pc->width * t->n_rows, len) ||
			!in_bounds(pc->nulls_off, t->n_rows, len))
			return bad(err, "payload column");
		if (pc->type != XPU_T_TEXT)
			continue;
		vals = XPU_JOIN_AT(t, pc->vals_off);
		for (uint32_t r = 0; r < t->n_rows; r++)
		{
			XpuJoinText tx;

			if (XPU_JOIN_AT(t, pc->nulls_off)[r])
				continue;
			memcpy(&tx, vals + (uint64_t) r * 16, sizeof(tx));
			if (tx.len < 0 || tx.off < t->text_off ||
				tx.off - t->text_off > t->text_len ||
				(uint64_t) tx.len > t->text_len - (tx.off - t->text_off))
				return bad(err, "payload text out of bounds");
		}
	}
	return 1;
}

int
xpu_join_table_validate(const XpuJoinTable *t, uint64_t len, XpuError *err)
{
	const uint32_t *nr;

	if (((uintptr_t) t & 15) != 0)
		return bad(err, "not 16-byte aligned");
	if (len < sizeof(XpuJoinTable) || t->magic != XPU_JOIN_MAGIC ||
		t->version != XPU_JOIN_VERSION || t->total_len != len)
		return bad(err, "header");
	if (t->n_keys < 1 || t->n_keys > XPU_JOIN_MAX_KEYS || t->n_pay > XPU_JOIN_MAX_PAYLOAD ||
		t->n_rows > XPU_JOIN_MAX_ROWS ||
		(uint64_t) t->n_keyed + t->n_null_keys != t->n_rows)
		return bad(err, "counts");
	if (t->n_parts == 0 || t->n_parts > XPU_JOIN_MAX_PARTS || t->part >= t->n_parts)
		return bad(err, "partition");
	if (t->flags & ~(uint32_t) XPU_JOIN_UNIQUE)
		return bad(err, "flags");
	for (int k = 0; k < t->n_keys; k++)
	{
		const XpuJoinKeyDesc *d = &t->keys[k];

		if (!xpu_join_key_supported(d->type, d->probe_type) ||
			(d->type == XPU_T_NUMERIC &&
			 (d->scale < 0 || d->probe_scale < 0 || d->key_scale > XPU_NUMERIC_MAX_SCALE ||
			  d->key_scale < d->scale || d->key_scale < d->probe_scale)))
			return bad(err, "key column");
	}
	if (!in_bounds(t->null_rows_off, 4 * (uint64_t) t->n_null_keys, len))
		return bad(err, "null rows out of bounds");
	nr = (const uint32_t *) XPU_JOIN_AT(t, t->null_rows_off);
	for (uint32_t i = 0; i < t->n_null_keys; i++)
		if (nr[i] >= t->n_rows)
			return bad(err, "null row");
	if (t->form == XPU_JOIN_DENSE)
	{
		const uint32_t *slots;

		if (t->n_keys != 1 || !xpu_agg_intlike(t->keys[0].type) ||
			!xpu_agg_intlike(t->keys[0].probe_type) || t->dense_range == 0 ||
			!xpu_join_dense_fits(t->dense_range, t->n_keyed) ||
			!in_bounds(t->slots_off, 4 * t->dense_range, len))
			return bad(err, "dense slots");
		slots = (const uint32_t *) XPU_JOIN_AT(t, t->slots_off);
		for (uint64_t s = 0; s < t->dense_range; s++)
			if (slots[s] > t->n_rows)
				return bad(err, "dense slot");
	}
	else if (t->form != XPU_JOIN_HASH || !validate_hash(t, len, err))
		return err->code != XPU_OK ? 0 : bad(err, "form");
	return validate_payload(t, len, err);
}

/* ---------------------------------------------------------------- programs */

/* a program that does not fit its tables: the message into err, returns 0 */
static int
prog_bad(XpuError *err, int pc, const char *what)
{
	char		msg[XPU_ERROR_MESSAGE_LEN];

	snprintf(msg, sizeof(msg), "instruction %d: %s", pc, what);
	return fail(err, XPU_ERR_INVALID_ARGUMENT, msg);
}

int
xpu_program_join_check(const XpuProgram *prog, const XpuJoinTable *const *joins,
					   int n_joins, XpuError *err)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	const XpuReg *regs = XPU_REGS(prog);

	if (n_joins < 0 || (n_joins > 0 && joins == NULL))
		return fail(err, XPU_ERR_INVALID_ARGUMENT, "join tables missing");
	for (int pc = 0; pc < prog->n_instrs; pc++)
	{
		const XpuInstr *in = &ins[pc];
		int			depth = XPU_JOIN_IMM_DEPTH(in->imm);
		int			arg = XPU_JOIN_IMM_ARG(in->imm);
		const XpuJoinTable *t;

		if (in->op != XPU_OP_JOIN_PROBE && in->op != XPU_OP_JOIN_PAY)
			continue;
		if (depth >= n_joins || joins[depth] == NULL)
			return prog_bad(err, pc, "join depth without an inner table");
		t = joins[depth];
		if (in->op == XPU_OP_JOIN_PROBE)
		{
			const uint16_t keyregs[XPU_JOIN_PROBE_MAX_KEYS] = {in->a, in->b, in->c};

			if (arg != t->n_keys)
				return prog_bad(err, pc, "join probe of another number of keys than its table's");
			for (int k = 0; k < arg; k++)
			{
				const XpuReg *r = &regs[keyregs[k]];

				if (r->type != t->keys[k].probe_type ||
					(r->type == XPU_T_NUMERIC && r->scale != t->keys[k].probe_scale))
					return prog_bad(err, pc, "join probe key of another type than its table's");
			}
		}
		else if (arg >= t->n_pay)
			return prog_bad(err, pc, "join payload column the table has not");
		else if (regs[in->dst].type != t->pay[arg].type)
			return prog_bad(err, pc, "join payload into a register of another type");
	}
	return 1;
}
