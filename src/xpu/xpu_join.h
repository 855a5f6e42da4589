/*-------------------------------------------------------------------------
 *
 * xpu_join.h
 *		The inner table of one hash-join depth (GpuJoin) and its probe.  The
 *		host builds the table from the inner relation's rows (xpu_join.c);
 *		the table is position-independent plain data, so the same bytes are
 *		probed by the CPU engine where the host built them and by a GPU
 *		kernel after a plain copy to device memory.  The probe functions are
 *		XPU_HOST_DEVICE: kern_*.cu and the CPU engine run the same bodies.
 *
 * Keys.  Up to XPU_JOIN_MAX_KEYS key columns, each of a type the engine
 * evaluates: bool, int2/4/8, date, time, timestamp[tz], float4/8, numeric,
 * text.  The outer (probe) key of a column may have another type of the same
 * class (int2/int4/int8 one with another, float4 with float8; numeric with
 * any scale), as PostgreSQL's cross-type hash opfamilies allow; other types
 * must be the same on both sides (codegen casts before).  Equality is
 * exactly the group-key equality of xpu_agg.h: a key value is written in
 * the group-key bytes by the one writer, xpu_agg_key_value_put, on both
 * sides, so that -0 = 0 and NaN = NaN for floats, int2 = int8 by value,
 * texts bytewise (deterministic collations only, as for group keys).  A
 * numeric key is written at the column's key scale, the larger of the two
 * sides' scales (XpuJoinKeyDesc.key_scale), so 1.0 and 1.00 meet: the
 * group-key bytes of a numeric are its int128 at one scale.  An inner
 * value that does not fit the 38-digit range at the key scale fails the
 * build with XPU_ERR_FALLBACK (the join stays in PostgreSQL); an outer one
 * has no match, exactly: every inner key fits that range.
 *
 * Partitions.  An inner side too large for one table is joined in passes:
 * the builder of pass p of P (XpuJoinSpec.n_parts, part) keeps only the
 * rows whose key hash falls into partition p (xpu_join_part_of: the hash's
 * high 32 bits scaled to P), and inner rows with a NULL key in pass 0 only.
 * A probe of a partition's table looks up only the outer keys of that
 * partition; an outer row of another partition yields nothing there, not
 * even LEFT's NULL-extended or ANTI's row (XpuJoinCursor.other_part), and
 * an outer row that matches nowhere (NULL key, or a numeric beyond the key
 * scale) yields its unmatched row in pass 0.  So the passes together yield
 * each output row once, and each pass's RIGHT/FULL unmatched inner rows
 * are its own.  A table's rows are numbered in the order they were kept.
 *
 * Unique keys.  A table whose keyed rows hold no key twice has
 * XPU_JOIN_UNIQUE in flags (the builder finds out: a dense table always;
 * validation refuses a table that claims it falsely).  A probe of every
 * match (below) of such a table meets at most one match, as a probe of the
 * first does: the CPU engine then runs the program vectorised
 * (xpu_program_expands_over), where the planner could not prove the keys
 * unique (no unique index on the inner side) but the rows are.
 *
 * NULL never matches: an inner row with a NULL in any key column is not
 * put into the hash or dense form, but keeps its payload row and is listed
 * in null_rows[] (RIGHT/FULL OUTER emit it unmatched); an outer row with a
 * NULL key finds no match.
 *
 * Layout (every offset counts from the start of the XpuJoinTable; sections
 * are 16-byte aligned; the table must lie at a 16-byte aligned address):
 *
 *	XpuJoinTable	header, with the key and payload descriptions
 *	hash form (XPU_JOIN_HASH):
 *	  uint32	buckets[n_buckets + 1]	the entries of bucket b are
 *					[buckets[b], buckets[b + 1]) (sorted by bucket: no
 *					chains to follow, a bucket's entries are contiguous)
 *	  XpuJoinEntry entries[n_keyed]	32-bit hash tag, inner row, key bytes
 *	  uint8		keys[keys_len]	the entries' key bytes, in entry order;
 *					none when the key is one column of an 8-byte form
 *					(not text or numeric: inline_key), whose 8 canonical
 *					bytes the entry holds itself (one load fewer a probe)
 *	dense form (XPU_JOIN_DENSE):
 *	  uint32	slots[dense_range]	slot key - dense_min: the row + 1 of
 *					the inner row with that key, 0 none
 *	uint32		null_rows[n_null_keys]	rows with a NULL key, ascending
 *	per payload column c:
 *	  values	pay[c].vals_off: n_rows values of pay[c].width bytes
 *				(8: the first 8 bytes of XpuValue; 16: numeric, interval,
 *				or text as XpuJoinText)
 *	  nulls		pay[c].nulls_off: n_rows bytes, 1 = NULL
 *	uint8		text[text_len]	the payload texts' bytes
 *
 * The bucket of a key is the low bits of its 64-bit hash (xpu_join_form_hash,
 * over the canonical forms with xpu_agg_hash_*), its tag the high 32 bits;
 * duplicate keys are several entries of one bucket, in inner-row order, so
 * a probe meets an outer row's matches in inner-row order (SEMI's row is
 * the first of them that passes the join quals).
 *
 * The dense form is chosen (form XPU_JOIN_AUTO) for one key column of an
 * integer-like type (integers, bool, date, time, timestamp[tz]) whose keys
 * are unique and span a range of at most XPU_JOIN_DENSE_RATIO times the
 * number of keyed rows, or of at most XPU_JOIN_DENSE_SMALL slots
 * (xpu_join_dense_fits): its 4 bytes a slot then take at most 32 bytes a
 * row (or 1 MB in all), against the hash form's 4 to 8 (buckets) + 16
 * (entry); a probe is one subtraction, one compare and one load, against
 * the hash form's hash, bucket, entries (and key bytes where the key is
 * not in the entry), with a branch on whether the walk found the key.
 * Dimension primary keys (SSB's c_custkey) are of this kind, and so are
 * most of them filtered (c_region = 'ASIA': a fifth of the customers over
 * the range of them all; d_year = 1993: 365 days over 1,130 key values),
 * and small ones (SSB's date1: 2,556 days over 70,000 key values).
 * A partitioned table (above) is dense only where its own rows follow the
 * rule.
 *
 * On the CPU, xpu_join_first_batch probes a tile's rows with their loads
 * overlapped (a table larger than the caches costs a few misses a probe,
 * which one row at a time would wait for one after the other).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_JOIN_H
#define XPU_JOIN_H

#include "xpu_agg_ops.h"
#include "xpu_numeric.h"

#define XPU_JOIN_MAGIC			0x4e4a5857	/* "WXJN" */
#define XPU_JOIN_VERSION		1
#define XPU_JOIN_MAX_KEYS		4
#define XPU_JOIN_MAX_PAYLOAD	64
/* rows are numbered in uint32 (slots hold row + 1), and int32 in a cursor */
#define XPU_JOIN_MAX_ROWS		INT32_MAX
/* the largest table the builder makes, whatever the caller's limit */
#define XPU_JOIN_MAX_BYTES		(UINT64_C(1) << 40)
#define XPU_JOIN_MAX_PARTS		65536

/* XpuJoinTable.form; XPU_JOIN_AUTO only in an XpuJoinSpec */
typedef enum XpuJoinForm
{
	XPU_JOIN_AUTO = 0,			/* dense where the rule above holds, else hash */
	XPU_JOIN_HASH = 1,
	XPU_JOIN_DENSE = 2
} XpuJoinForm;

/* join types the probe helpers implement (PostgreSQL's semantics) */
typedef enum XpuJoinType
{
	XPU_JOIN_INNER = 1,			/* each match */
	XPU_JOIN_LEFT,				/* each match, or the outer row with NULL inner */
	XPU_JOIN_SEMI,				/* the outer row once, on its first match */
	XPU_JOIN_ANTI,				/* the outer row when it has no match */
	XPU_JOIN_RIGHT,				/* INNER, inner rows marked matched */
	XPU_JOIN_FULL				/* LEFT, inner rows marked matched */
} XpuJoinType;

/* one key column: its types and scales on both sides */
typedef struct XpuJoinKeyDesc
{
	uint8_t		type;			/* XpuType of the inner key */
	uint8_t		probe_type;		/* XpuType of the outer key (same class) */
	int16_t		scale;			/* numeric: the inner key's scale */
	int16_t		probe_scale;	/* numeric: the outer key's scale */
	int16_t		key_scale;		/* numeric: max(scale, probe_scale), set by
								 * the builder; the scale of the key bytes */
} XpuJoinKeyDesc;

/* one payload column: an inner column that later stages read */
typedef struct XpuJoinPayCol
{
	uint8_t		type;			/* XpuType */
	uint8_t		width;			/* bytes of one value: 8 or 16 */
	uint16_t	pad;
	uint32_t	pad2;
	uint64_t	vals_off;
	uint64_t	nulls_off;
} XpuJoinPayCol;

/* a text payload value: its bytes at off (from the table's start) */
typedef struct XpuJoinText
{
	uint64_t	off;
	int32_t		len;
	int32_t		pad;
} XpuJoinText;

/* a hash form entry (16 bytes) */
typedef struct XpuJoinEntry
{
	uint32_t	tag;			/* the key hash's high 32 bits */
	uint32_t	row;			/* the inner row */
	uint64_t	key_off;		/* its key bytes (xpu_agg.h's form); with
								 * inline_key the 8 bytes after the key's
								 * leading 1 */
} XpuJoinEntry;

typedef struct XpuJoinTable
{
	uint32_t	magic;
	uint32_t	version;
	uint64_t	total_len;		/* bytes of the whole table, a multiple of 16 */
	uint8_t		form;			/* XPU_JOIN_HASH or XPU_JOIN_DENSE */
	uint8_t		n_keys;
	uint8_t		n_pay;
	uint8_t		inline_key;		/* hash: entries hold the key (see above) */
	uint32_t	n_rows;			/* inner rows: payload rows 0 .. n_rows - 1 */
	uint32_t	n_keyed;		/* rows without a NULL key (in the hash or slots) */
	uint32_t	n_null_keys;	/* rows with a NULL key (null_rows[]) */
	uint32_t	n_buckets;		/* hash: a power of 2 */
	uint32_t	n_parts;		/* partitions of the inner side (0, 1: one) */
	uint32_t	part;			/* the partition of this table */
	uint32_t	flags;			/* XPU_JOIN_UNIQUE */
	int64_t		dense_min;		/* dense: the least key */
	uint64_t	dense_range;	/* dense: slots (max - min + 1) */
	uint64_t	buckets_off;
	uint64_t	entries_off;
	uint64_t	keys_off;
	uint64_t	keys_len;
	uint64_t	slots_off;
	uint64_t	null_rows_off;
	uint64_t	text_off;
	uint64_t	text_len;
	XpuJoinKeyDesc keys[XPU_JOIN_MAX_KEYS];
	XpuJoinPayCol pay[XPU_JOIN_MAX_PAYLOAD];
} XpuJoinTable;

/* XpuJoinTable.flags: no key of the keyed rows appears twice */
#define XPU_JOIN_UNIQUE			1

/* the dense form's limits (see above) */
#define XPU_JOIN_DENSE_RATIO	8
#define XPU_JOIN_DENSE_SMALL	262144

/* may keys of a range of range values, n_keyed of them, take the dense form */
static inline int
xpu_join_dense_fits(uint64_t range, uint64_t n_keyed)
{
	return range > 0 &&
		(range <= XPU_JOIN_DENSE_SMALL || (range - 1) / XPU_JOIN_DENSE_RATIO < n_keyed);
}

#define XPU_JOIN_AT(t, off)		((const uint8_t *) (t) + (off))

/* ---------------------------------------------------------------- key types */

/*
 * xpu_join_key_class: the class of a key type (two types of one class
 * compare by value), 0 for a type that cannot be a join key
 */
XPU_HOST_DEVICE int
xpu_join_key_class(int type)
{
	switch (type)
	{
		case XPU_T_INT2:
		case XPU_T_INT4:
		case XPU_T_INT8:
			return XPU_T_INT8;
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8:
			return XPU_T_FLOAT8;
		case XPU_T_BOOL:
		case XPU_T_DATE:
		case XPU_T_TIME:
		case XPU_T_TIMESTAMP:
		case XPU_T_TIMESTAMPTZ:
		case XPU_T_NUMERIC:
		case XPU_T_TEXT:
			return type;
		default:
			return 0;
	}
}

/* may an inner key of type and an outer key of probe_type be joined */
XPU_HOST_DEVICE int
xpu_join_key_supported(int type, int probe_type)
{
	return xpu_join_key_class(type) != 0 &&
		xpu_join_key_class(type) == xpu_join_key_class(probe_type);
}

/* the partition (0 .. n_parts - 1) of a key of hash hash, for n_parts >= 1 */
XPU_HOST_DEVICE uint32_t
xpu_join_part_of(uint64_t hash, uint32_t n_parts)
{
	return (uint32_t) (((hash >> 32) * (uint64_t) n_parts) >> 32);
}

/* do the keys of descs fit an entry (XpuJoinTable.inline_key) */
XPU_HOST_DEVICE int
xpu_join_key_inline(const XpuJoinKeyDesc *descs, int n_keys)
{
	return n_keys == 1 && descs[0].type != XPU_T_TEXT && descs[0].type != XPU_T_NUMERIC;
}

/* bytes of one payload value of type in the table: 0 for an unknown type */
XPU_HOST_DEVICE int
xpu_join_pay_width(int type)
{
	if (type == XPU_T_NUMERIC || type == XPU_T_INTERVAL || type == XPU_T_TEXT)
		return 16;
	return type > XPU_T_NONE && type < XPU_T_N_TYPES ? 8 : 0;
}

/* ---------------------------------------------------------------- key forms */

/*
 * XpuJoinKeyForm: the canonical form of one row's key, what its key bytes
 * say after each column's leading 1: w[k] the 8 bytes (16 for a numeric)
 * that xpu_agg_key_value_put writes, or a text's bytes (tp[k], tl[k]).
 */
typedef struct XpuJoinKeyForm
{
	uint64_t	w[XPU_JOIN_MAX_KEYS][2];
	const char *tp[XPU_JOIN_MAX_KEYS];
	int32_t		tl[XPU_JOIN_MAX_KEYS];
} XpuJoinKeyForm;

/* xpu_join_key_form's results */
#define XPU_JOIN_FORM_OK		0
#define XPU_JOIN_FORM_NULL		1	/* a key is NULL */
#define XPU_JOIN_FORM_RANGE		2	/* a numeric is beyond 38 digits at the key scale */

/*
 * xpu_join_key_value: the value of key column d of one side (probe: the
 * outer side) brought to the key scale into *x; 0 when it leaves the range
 */
XPU_HOST_DEVICE int
xpu_join_key_value(const XpuJoinKeyDesc *d, int probe, const XpuValue *v, XpuValue *x)
{
	int			type = probe ? d->probe_type : d->type;
	int			scale = probe ? d->probe_scale : d->scale;

	*x = *v;
	if (type == XPU_T_NUMERIC && d->key_scale > scale)
		return !xpu_num_upscale(v->n, d->key_scale - scale, &x->n);
	return 1;
}

/*
 * xpu_join_key_form: the canonical form of a row's keys (vals[n_keys],
 * nulls[n_keys]: consecutive, in key column order) of one side into *f
 */
XPU_HOST_DEVICE int
xpu_join_key_form(const XpuJoinKeyDesc *descs, int n_keys, int probe,
				  const XpuValue *vals, const uint8_t *nulls, XpuJoinKeyForm *f)
{
	for (int k = 0; k < n_keys; k++)
	{
		const XpuJoinKeyDesc *d = &descs[k];
		int			type = probe ? d->probe_type : d->type;
		XpuValue	x;
		uint8_t		b[17];

		if (nulls[k])
			return XPU_JOIN_FORM_NULL;
		if (!xpu_join_key_value(d, probe, &vals[k], &x))
			return XPU_JOIN_FORM_RANGE;
		f->w[k][0] = f->w[k][1] = 0;
		if (type == XPU_T_TEXT)
		{
			f->tp[k] = x.t.p;
			f->tl[k] = x.t.len;
			continue;
		}
		f->tp[k] = 0;
		f->tl[k] = 0;
		/* the group key's writer: floats canonical (-0, NaN), integers as int64 */
		xpu_agg_key_value_put(b, type, &x, 0);
		memcpy(&f->w[k][0], b + 1, 8);
		if (type == XPU_T_NUMERIC)
			memcpy(&f->w[k][1], b + 9, 8);
	}
	return XPU_JOIN_FORM_OK;
}

/* the hash of n bytes at p, 8 at a time (the last word zero-padded), into h */
XPU_HOST_DEVICE uint64_t
xpu_join_hash_bytes(uint64_t h, const uint8_t *p, int32_t n)
{
	int32_t		i = 0;

	for (; i + 8 <= n; i += 8)
	{
		uint64_t	w;

		memcpy(&w, p + i, 8);
		h = xpu_agg_hash_step(h, w);
	}
	if (i < n)
	{
		uint64_t	w = 0;

		for (int j = 0; i + j < n; j++)
			w |= (uint64_t) p[i + j] << (8 * j);
		h = xpu_agg_hash_step(h, w);
	}
	return h;
}

/*
 * xpu_join_form_hash: the 64-bit hash of a key's canonical form (the
 * group-key hash steps, xpu_agg_ops.h): one step per 8 canonical bytes,
 * a text's length and then its bytes.  The builder and every probe hash
 * with it, so a key hashes alike on the host and on the GPU.
 */
XPU_HOST_DEVICE uint64_t
xpu_join_form_hash(const XpuJoinKeyDesc *descs, int n_keys, const XpuJoinKeyForm *f)
{
	uint64_t	h = xpu_agg_hash_start((uint32_t) n_keys);

	for (int k = 0; k < n_keys; k++)
	{
		int			type = descs[k].type;

		if (type == XPU_T_TEXT)
		{
			h = xpu_agg_hash_step(h, (uint64_t) (uint32_t) f->tl[k] | UINT64_C(0x6ED9EBA1) << 32);
			h = xpu_join_hash_bytes(h, (const uint8_t *) f->tp[k], f->tl[k]);
			continue;
		}
		h = xpu_agg_hash_step(h, f->w[k][0]);
		if (type == XPU_T_NUMERIC)
			h = xpu_agg_hash_step(h, f->w[k][1]);
	}
	return xpu_agg_hash_end(h);
}

/*
 * xpu_join_key_equal: do the key bytes at p (an entry's, xpu_agg.h's form,
 * no NULL in them) say the key of form f
 */
XPU_HOST_DEVICE int
xpu_join_key_equal(const XpuJoinTable *t, const uint8_t *p, const XpuJoinKeyForm *f)
{
	for (int k = 0; k < t->n_keys; k++)
	{
		int			type = t->keys[k].type;
		uint64_t	w;

		if (*p++ != 1)
			return 0;
		if (type == XPU_T_TEXT)
		{
			int32_t		len;

			memcpy(&len, p, 4);
			p += 4;
			if (len != f->tl[k])
				return 0;
			for (int32_t i = 0; i < len; i++)
				if (p[i] != (uint8_t) f->tp[k][i])
					return 0;
			p += len;
			continue;
		}
		memcpy(&w, p, 8);
		if (w != f->w[k][0])
			return 0;
		if (type == XPU_T_NUMERIC)
		{
			memcpy(&w, p + 8, 8);
			if (w != f->w[k][1])
				return 0;
			p += 8;
		}
		p += 8;
	}
	return 1;
}

/* ---------------------------------------------------------------- the probe */

/*
 * XpuJoinCursor: one outer row's walk over its matches.  xpu_join_first
 * starts it, xpu_join_next goes on; the join-type helpers below keep their
 * state in it too.  Plain data of 136 bytes: a GPU thread keeps its
 * own.
 */
typedef struct XpuJoinCursor
{
	XpuJoinKeyForm key;
	uint64_t	hash;
	uint32_t	pos;			/* the next entry to look at */
	uint32_t	end;			/* the end of the bucket's entries */
	int32_t		row;			/* the current match (candidate), -1 none */
	uint8_t		jointype;		/* XpuJoinType (xpu_join_begin) */
	uint8_t		accepted;		/* a match was accepted (xpu_join_accept) */
	uint8_t		done;			/* the outer row has no further output */
	uint8_t		other_part;		/* the outer row is another partition's */
} XpuJoinCursor;

/* xpu_join_next: the next inner row that matches the cursor's key, -1 when none is left */
XPU_HOST_DEVICE int32_t
xpu_join_next(const XpuJoinTable *t, XpuJoinCursor *c)
{
	const XpuJoinEntry *ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);
	uint32_t	tag = (uint32_t) (c->hash >> 32);

	if (t->inline_key)
	{
		/* the entry's 8 bytes are the whole key */
		while (c->pos < c->end)
		{
			const XpuJoinEntry *e = &ents[c->pos++];

			if (e->key_off == c->key.w[0][0])
				return c->row = (int32_t) e->row;
		}
		return c->row = -1;
	}
	while (c->pos < c->end)
	{
		const XpuJoinEntry *e = &ents[c->pos++];

		if (e->tag == tag && xpu_join_key_equal(t, XPU_JOIN_AT(t, e->key_off), &c->key))
			return c->row = (int32_t) e->row;
	}
	return c->row = -1;
}

/*
 * xpu_join_start: the first step of a probe (xpu_join_first, and
 * xpu_join_first_batch's): the outer key's form into c, and its hash
 * where the table needs it; returns 1 when the key may have matches in t,
 * 0 for a NULL key, a numeric beyond the key scale, or a key of another
 * partition (c->other_part: the partitions above)
 */
XPU_HOST_DEVICE int
xpu_join_start(const XpuJoinTable *t, XpuJoinCursor *c, const XpuValue *vals,
			   const uint8_t *nulls)
{
	int			parted = t->n_parts > 1;

	c->pos = c->end = 0;
	c->row = -1;
	c->other_part = 0;
	if (xpu_join_key_form(t->keys, t->n_keys, 1, vals, nulls, &c->key) != XPU_JOIN_FORM_OK)
	{
		/* no match in any partition: its unmatched row is pass 0's */
		c->other_part = parted && t->part != 0;
		return 0;
	}
	if (t->form == XPU_JOIN_HASH || parted)
		c->hash = xpu_join_form_hash(t->keys, t->n_keys, &c->key);
	if (parted && xpu_join_part_of(c->hash, t->n_parts) != t->part)
	{
		c->other_part = 1;
		return 0;
	}
	return 1;
}

/*
 * xpu_join_first: starts cursor c for the outer row whose key registers
 * are vals[n_keys] / nulls[n_keys] (consecutive, in key column order, of
 * the probe types) and returns its first matching inner row, -1 when it
 * has none (a NULL key never matches)
 */
XPU_HOST_DEVICE int32_t
xpu_join_first(const XpuJoinTable *t, XpuJoinCursor *c, const XpuValue *vals,
			   const uint8_t *nulls)
{
	if (!xpu_join_start(t, c, vals, nulls))
		return -1;
	if (t->form == XPU_JOIN_DENSE)
	{
		/* unsigned: a key below dense_min wraps past every slot */
		uint64_t	slot = c->key.w[0][0] - (uint64_t) t->dense_min;
		const uint32_t *slots = (const uint32_t *) XPU_JOIN_AT(t, t->slots_off);

		if (slot < t->dense_range && slots[slot] != 0)
			c->row = (int32_t) (slots[slot] - 1);
		return c->row;
	}
	else
	{
		const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
		uint32_t	b = (uint32_t) (c->hash & (t->n_buckets - 1));

		c->pos = buckets[b];
		c->end = buckets[b + 1];
		return xpu_join_next(t, c);
	}
}

/*
 * Probes without a cursor.  A table of one key column and one partition is
 * probed with the key's 8 canonical bytes alone (xpu_agg_key_word of the
 * probe type: the int64 of an integer-like key) where it is dense of an
 * integer-like key, or hash with the key in its entries (inline_key): the
 * first match as xpu_join_first finds it, without the cursor's 136 bytes
 * (a GPU thread's local memory) or the key form.  The JOIN stage's probe
 * takes this way where it can (xpu_join_word_form).
 */
#define XPU_JOIN_WORD_NONE		0	/* a cursor's probe (xpu_join_first) */
#define XPU_JOIN_WORD_DENSE		1
#define XPU_JOIN_WORD_HASH		2

XPU_HOST_DEVICE int
xpu_join_word_form(const XpuJoinTable *t)
{
	if (t->n_keys != 1 || t->n_parts > 1)
		return XPU_JOIN_WORD_NONE;
	if (t->form == XPU_JOIN_DENSE && xpu_agg_intlike(t->keys[0].probe_type))
		return XPU_JOIN_WORD_DENSE;
	if (t->form == XPU_JOIN_HASH && t->inline_key)
		return XPU_JOIN_WORD_HASH;
	return XPU_JOIN_WORD_NONE;
}

/* the bucket of key word w in a hash table of one key (xpu_join_form_hash's) */
XPU_HOST_DEVICE uint32_t
xpu_join_word_bucket(const XpuJoinTable *t, uint64_t w)
{
	XpuJoinKeyForm f;

	f.w[0][0] = w;
	f.w[0][1] = 0;
	f.tp[0] = 0;
	f.tl[0] = 0;
	return (uint32_t) (xpu_join_form_hash(t->keys, 1, &f) & (t->n_buckets - 1));
}

/* the row of the first of entries [pos, end) whose inline key is w, -1 none */
XPU_HOST_DEVICE int32_t
xpu_join_word_walk(const XpuJoinTable *t, uint32_t pos, uint32_t end, uint64_t w)
{
	const XpuJoinEntry *ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);

	for (; pos < end; pos++)
		if (ents[pos].key_off == w)
			return (int32_t) ents[pos].row;
	return -1;
}

/*
 * the row of the first of entries [*pos, end) whose inline key is w, -1
 * none; *pos moves past it (the probes of every match walk on from there)
 */
XPU_HOST_DEVICE int32_t
xpu_join_word_walk_at(const XpuJoinTable *t, uint32_t *pos, uint32_t end, uint64_t w)
{
	const XpuJoinEntry *ents = (const XpuJoinEntry *) XPU_JOIN_AT(t, t->entries_off);

	while (*pos < end)
		if (ents[(*pos)++].key_off == w)
			return (int32_t) ents[*pos - 1].row;
	return -1;
}

/* the first inner row whose key word is w (a key that is not NULL), -1 none */
XPU_HOST_DEVICE int32_t
xpu_join_first_word(const XpuJoinTable *t, int word_form, uint64_t w)
{
	if (word_form == XPU_JOIN_WORD_DENSE)
	{
		const uint32_t *slots = (const uint32_t *) XPU_JOIN_AT(t, t->slots_off);
		uint64_t	slot = w - (uint64_t) t->dense_min;

		return slot < t->dense_range ? (int32_t) slots[slot] - 1 : -1;
	}
	else
	{
		const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
		uint32_t	b = xpu_join_word_bucket(t, w);

		return xpu_join_word_walk(t, buckets[b], buckets[b + 1], w);
	}
}

/*
 * xpu_join_payload: payload column col of inner row row into *v, *isnull;
 * row -1 (no inner row: an outer join's NULL side) gives NULL.  A text
 * points into the table, wherever it lies now.
 */
XPU_HOST_DEVICE void
xpu_join_payload(const XpuJoinTable *t, int32_t row, int col, XpuValue *v, uint8_t *isnull)
{
	const XpuJoinPayCol *pc = &t->pay[col];
	const uint8_t *p;

	v->n = 0;
	if (row < 0 || XPU_JOIN_AT(t, pc->nulls_off)[row])
	{
		*isnull = 1;
		return;
	}
	*isnull = 0;
	p = XPU_JOIN_AT(t, pc->vals_off) + (uint64_t) row * pc->width;
	if (pc->type == XPU_T_TEXT)
	{
		XpuJoinText tx;

		memcpy(&tx, p, sizeof(tx));
		v->t.p = (const char *) XPU_JOIN_AT(t, tx.off);
		v->t.len = tx.len;
		return;
	}
	memcpy(v, p, pc->width);
}

/* xpu_join_payload_row: every payload column of row into vals[n_pay], nulls[n_pay] */
XPU_HOST_DEVICE void
xpu_join_payload_row(const XpuJoinTable *t, int32_t row, XpuValue *vals, uint8_t *nulls)
{
	for (int c = 0; c < t->n_pay; c++)
		xpu_join_payload(t, row, c, &vals[c], &nulls[c]);
}

/* ---------------------------------------------------------------- matched flags */

/*
 * The matched flags of RIGHT/FULL OUTER: a bitmap of n_rows bits outside
 * the table (zeroed by the host), one word per 32 inner rows, that every
 * probe of the query sets (atomically: threads and GPU blocks share it).
 * After the pass, the rows whose bit is clear are the unmatched inner rows
 * (NULL-key rows among them: they never match).
 */
XPU_HOST_DEVICE uint64_t
xpu_join_matched_words(uint32_t n_rows)
{
	return ((uint64_t) n_rows + 31) / 32;
}

XPU_HOST_DEVICE void
xpu_join_mark(uint32_t *matched, int32_t row)
{
	uint32_t	bit = UINT32_C(1) << (row & 31);
	uint32_t   *w = &matched[row >> 5];

	/* a read first: a dimension row matched by many outer rows is set once */
	if (*(volatile uint32_t *) w & bit)
		return;
#ifdef __CUDA_ARCH__
	atomicOr((unsigned int *) w, bit);
#else
	__atomic_fetch_or(w, bit, __ATOMIC_RELAXED);
#endif
}

XPU_HOST_DEVICE int
xpu_join_marked(const uint32_t *matched, int32_t row)
{
	return (matched[row >> 5] >> (row & 31)) & 1;
}

/* ---------------------------------------------------------------- join types */

/*
 * The rows an outer row yields, by join type.  With join quals beyond the
 * hash keys (the caller evaluates them on each candidate):
 *
 *	xpu_join_begin(t, c, type, vals, nulls);
 *	while (c->row >= 0) {                 // a candidate: keys equal
 *	    if (quals pass for (outer, c->row) && xpu_join_accept(c, matched))
 *	        emit (outer, c->row);
 *	    xpu_join_advance(t, c);
 *	}
 *	if (xpu_join_unmatched(c))
 *	    emit (outer, NULL inner);         // LEFT/FULL: NULL payload; ANTI: the row
 *
 * as PostgreSQL's hash join does: a candidate that fails the quals is no
 * match (a LEFT join then still yields its NULL-extended row); SEMI stops at
 * its first accepted match and ANTI at its first match (no row).  In a
 * partitioned table, an outer row of another partition has no candidate
 * and no unmatched row.  Without join quals, xpu_join_emit runs that loop
 * one output row at a time.  A cursor of xpu_join_first_batch goes on as
 * one of xpu_join_begin.
 */
XPU_HOST_DEVICE int32_t
xpu_join_begin(const XpuJoinTable *t, XpuJoinCursor *c, int jointype,
			   const XpuValue *vals, const uint8_t *nulls)
{
	c->jointype = (uint8_t) jointype;
	c->accepted = 0;
	c->done = 0;
	return xpu_join_first(t, c, vals, nulls);
}

/*
 * xpu_join_accept: candidate c->row is a match (its join quals passed);
 * marks it in matched (RIGHT/FULL; matched may be NULL otherwise) and
 * returns whether (outer, c->row) is an output row
 */
XPU_HOST_DEVICE int
xpu_join_accept(XpuJoinCursor *c, uint32_t *matched)
{
	c->accepted = 1;
	switch (c->jointype)
	{
		case XPU_JOIN_SEMI:
			c->done = 1;
			return 1;
		case XPU_JOIN_ANTI:
			c->done = 1;
			return 0;
		case XPU_JOIN_RIGHT:
		case XPU_JOIN_FULL:
			if (matched != 0)
				xpu_join_mark(matched, c->row);
			return 1;
		default:
			return 1;
	}
}

/* xpu_join_advance: the next candidate into c->row (-1: none, or the outer row is done) */
XPU_HOST_DEVICE int32_t
xpu_join_advance(const XpuJoinTable *t, XpuJoinCursor *c)
{
	if (c->done)
		return c->row = -1;
	return xpu_join_next(t, c);
}

/* xpu_join_unmatched: after the candidates, is the outer row emitted without an inner row */
XPU_HOST_DEVICE int
xpu_join_unmatched(const XpuJoinCursor *c)
{
	return !c->accepted && !c->other_part &&
		(c->jointype == XPU_JOIN_LEFT || c->jointype == XPU_JOIN_FULL ||
		 c->jointype == XPU_JOIN_ANTI);
}

/*
 * xpu_join_emit: the next output row of an outer row begun with
 * xpu_join_begin, for a join without quals beyond its keys: returns 1 with
 * *row the inner row (-1: the NULL-extended row of LEFT/FULL, or ANTI's
 * row), 0 when the outer row has yielded all its rows
 */
XPU_HOST_DEVICE int
xpu_join_emit(const XpuJoinTable *t, XpuJoinCursor *c, uint32_t *matched, int32_t *row)
{
	while (c->row >= 0)
	{
		int32_t		r = c->row;
		int			out = xpu_join_accept(c, matched);

		xpu_join_advance(t, c);
		if (out)
		{
			*row = r;
			return 1;
		}
	}
	if (c->done)
		return 0;
	c->done = 1;
	if (xpu_join_unmatched(c))
	{
		*row = -1;
		return 1;
	}
	return 0;
}

/* ---------------------------------------------------------------- the JOIN stage */

/*
 * The opcodes of the xPU program's JOIN stage (xpu_opcodes.h), over the
 * chunk's tables (XpuCtx.joins).  xpu_program_join_check has matched the
 * program with the tables before a run; the bodies still refuse a depth,
 * key count, column or row that the tables do not have (an internal
 * error, never a read out of bounds).
 */
#define XPU_JOIN_IMM_DEPTH(imm)		((int) ((imm) & 0xff))
#define XPU_JOIN_IMM_ARG(imm)		((int) (((imm) >> 8) & 0xff))	/* n_keys, col */
#define XPU_JOIN_PROBE_MAX_KEYS		3	/* key registers a, b, c */

/*
 * Probes of every match (row expansion).  A JOIN_PROBE whose imm has
 * XPU_JOIN_PROBE_EACH probes a depth whose inner keys are not known to be
 * unique (codegen sets it where the planner proved nothing): the row goes
 * on once per matching inner row, in inner-row order (or once with a NULL
 * row when none matches: LEFT's NULL-extended row, INNER's failing row).
 * The per-row form enumerates an outer row's combinations depth-first:
 *
 *	xpu_row_each_first		LOAD, QUAL and JOIN with the first match of each
 *							probe; a probe with a further match opens a point
 *	xpu_row_each_next		resumes the newest open point with its next
 *							match (closing it when that is its last) and
 *							runs the rest of the JOIN stage again
 *
 * and the caller runs what follows the JOIN stage (the pass test, PROJ,
 * the aggregation's update) after each; xpu_interp.h.  A point keeps what
 * a re-run from just after its probe needs and the registers do not: the
 * mask stack and register 0 at the probe (the JOIN stage writes r0 after
 * it), and where its bucket walk stands.  Every other register that an
 * instruction after the probe writes is, at the probe, still NULL as the
 * row started: xpu_program_validate refuses a program where such a
 * register is written before the probe too, or is one of the probe's key
 * registers (the walk reads them on); so a resume sets those NULL
 * (xpu_each_reset) and the re-run sees exactly the registers the first
 * run saw.  A table of unique keys (dense) never opens a point, nor an
 * outer key with one match: the walk looks one match ahead.  Only the
 * per-row form runs such probes (the tile form leaves them to it,
 * xpu_cpu.c); a run without an XpuEach fails on one.
 */
#define XPU_JOIN_PROBE_EACH			(1 << 16)
#define XPU_JOIN_EACH_MAX			8	/* such probes in one program */

/*
 * RIGHT and FULL OUTER depths.  A JOIN_PROBE whose imm has
 * XPU_JOIN_PROBE_MARK (always with XPU_JOIN_PROBE_EACH: the per-row form)
 * marks each inner row it yields in the run's matched flags
 * (XpuChunk.matched, XpuCtx.matched: one bitmap for the run, shared by
 * its threads and by every participant of a shared run); codegen puts it
 * only at the last depth, with no join quals beyond the keys, so a row
 * the probe yields is a match.  After the pass, xpu_row_unmatched runs
 * each inner row whose flag is clear through the rest of the program as
 * if the probe had yielded it for an outer row of NULLs: every register
 * written before the probe (the outer columns, codegen loads them all
 * before it, and the depths before) NULL, register 0 true.
 */
#define XPU_JOIN_PROBE_MARK			(1 << 17)

/* one open probe of every match */
typedef struct XpuEachPoint
{
	uint64_t	stack;			/* the mask stack at the probe */
	XpuValue	r0;				/* register 0 at the probe */
	uint32_t	pos;			/* the bucket entry after next_row's */
	uint32_t	end;			/* the bucket's end */
	uint32_t	tag;			/* the outer key hash's high 32 bits */
	int32_t		next_row;		/* the match the next resume takes */
	uint16_t	pc;				/* the probe's instruction */
	uint8_t		r0n;
	uint8_t		pad;
} XpuEachPoint;

/* one row's open points, newest last, and where the row's registers are */
typedef struct XpuEach
{
	int32_t		n;
	int32_t		pad;
	XpuValue   *regs;
	uint8_t    *nulls;
	const XpuColumnData *cols;	/* the row's part of the chunk, and */
	int64_t		row;			/* the row in it (LOAD_COL) */
	uint64_t   *probes;			/* NULL, or the rows entering each depth
								 * (xpu_row_each_first_counted) */
	XpuEachPoint p[XPU_JOIN_EACH_MAX];
} XpuEach;

/*
 * xpu_join_each_after: the match after p's walk position (the key of the
 * probe's registers vals/nulls, which matched before), -1 none; moves the
 * position past it
 */
XPU_HOST_DEVICE int32_t
xpu_join_each_after(const XpuJoinTable *t, XpuEachPoint *p, const XpuValue *vals,
					const uint8_t *nulls)
{
	XpuJoinCursor c;
	int32_t		row;

	if (xpu_join_word_form(t) == XPU_JOIN_WORD_HASH)
		return nulls[0] ? -1 :
			xpu_join_word_walk_at(t, &p->pos, p->end,
								  xpu_agg_key_word(t->keys[0].probe_type, &vals[0]));
	if (xpu_join_key_form(t->keys, t->n_keys, 1, vals, nulls, &c.key) != XPU_JOIN_FORM_OK)
		return -1;
	c.hash = (uint64_t) p->tag << 32;
	c.pos = p->pos;
	c.end = p->end;
	row = xpu_join_next(t, &c);
	p->pos = c.pos;
	return row;
}

/*
 * xpu_join_probe_each: the JOIN_PROBE body of a probe of every match: the
 * first match into the destination, and a point opened in s->each where
 * the bucket holds another
 */
XPU_HOST_DEVICE void
xpu_join_probe_each(XpuCtx *s, const XpuJoinTable *t, const XpuValue *vals,
					const uint8_t *nulls)
{
	XpuEach    *e = s->each;
	XpuJoinCursor c;
	int32_t		row;

	if (e == 0)
	{
		XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "a join probe of every match outside a run that expands rows");
		return;
	}
	if (xpu_join_word_form(t) == XPU_JOIN_WORD_HASH)
	{
		/* the key in the entries: the bucket's walk by the key word, no cursor */
		const uint32_t *buckets = (const uint32_t *) XPU_JOIN_AT(t, t->buckets_off);
		uint64_t	w = xpu_agg_key_word(t->keys[0].probe_type, &vals[0]);
		uint32_t	b = xpu_join_word_bucket(t, w);

		c.pos = buckets[b];
		c.end = buckets[b + 1];
		c.hash = 0;
		row = nulls[0] ? -1 : xpu_join_word_walk_at(t, &c.pos, c.end, w);
		c.row = row < 0 ? -1 : xpu_join_word_walk_at(t, &c.pos, c.end, w);
	}
	else
	{
		row = xpu_join_first(t, &c, vals, nulls);
		c.row = row >= 0 && t->form == XPU_JOIN_HASH ? xpu_join_next(t, &c) : -1;
	}
	s->d->i = row;
	*s->dn = row < 0;
	if (row >= 0 && (s->ins->imm & XPU_JOIN_PROBE_MARK) && s->matched != 0)
		xpu_join_mark(s->matched, row);
	if (c.row >= 0)
	{
		int32_t		next = c.row;
		XpuEachPoint *p;

		if (e->n >= XPU_JOIN_EACH_MAX)
		{
			XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "too many join probes of every match");
			return;
		}
		p = &e->p[e->n++];
		p->stack = s->stack;
		p->r0 = e->regs[0];
		p->r0n = e->nulls[0];
		p->pos = c.pos;
		p->end = c.end;
		p->tag = (uint32_t) (c.hash >> 32);
		p->next_row = next;
		p->pc = (uint16_t) (s->ins - XPU_INSTRS(s->prog));
	}
}

/*
 * may a probe of every match, ins, of one of tables joins[0 .. n_joins - 1]
 * (NULL: none known) meet more than one match, or must it run in the per-row
 * form for another reason (it marks inner rows, its table is missing)
 */
XPU_HOST_DEVICE int
xpu_join_probe_expands(const XpuInstr *ins, const XpuJoinTable *const *joins, int n_joins)
{
	int			depth = XPU_JOIN_IMM_DEPTH(ins->imm);

	return (ins->imm & XPU_JOIN_PROBE_MARK) || joins == 0 || depth >= n_joins ||
		joins[depth] == 0 || !(joins[depth]->flags & XPU_JOIN_UNIQUE);
}

/* the table of the instruction's depth, NULL (an error recorded) when none */
XPU_HOST_DEVICE const XpuJoinTable *
xpu_join_of(XpuCtx *s)
{
	int			depth = XPU_JOIN_IMM_DEPTH(s->ins->imm);

	if (depth >= s->n_joins || s->joins == 0 || s->joins[depth] == 0)
	{
		XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "join depth without an inner table");
		return 0;
	}
	return s->joins[depth];
}

/* the probe's key registers into vals[3], nulls[3] */
XPU_HOST_DEVICE void
xpu_join_probe_keys(const XpuCtx *s, XpuValue *vals, uint8_t *nulls)
{
	vals[0] = *s->a;
	vals[1] = *s->b;
	vals[2] = *s->c;
	nulls[0] = s->an;
	nulls[1] = s->bn;
	nulls[2] = s->cn;
}

XPU_STEP(JOIN_PROBE)
{
	const XpuJoinTable *t = xpu_join_of(s);
	XpuValue	vals[XPU_JOIN_PROBE_MAX_KEYS];
	uint8_t		nulls[XPU_JOIN_PROBE_MAX_KEYS];
	XpuJoinCursor c;
	int32_t		row;
	int			wf;

	if (t == 0)
		return;
	if (XPU_JOIN_IMM_ARG(s->ins->imm) != t->n_keys || t->n_keys > XPU_JOIN_PROBE_MAX_KEYS)
	{
		XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "join probe keys do not match the inner table");
		return;
	}
	/* one more row (or combination of matches) enters this depth */
	if (s->probes != 0 && XPU_JOIN_IMM_DEPTH(s->ins->imm) < XPU_JOIN_COUNT_DEPTHS)
		s->probes[XPU_JOIN_IMM_DEPTH(s->ins->imm)]++;
	/*
	 * a probe of every match; outside a run whose rows expand, one over a
	 * table of unique keys is a probe of the first (it meets no second
	 * match: xpu_join_probe_expands)
	 */
	if ((s->ins->imm & XPU_JOIN_PROBE_EACH) &&
		(s->each != 0 || xpu_join_probe_expands(s->ins, s->joins, s->n_joins)))
	{
		xpu_join_probe_keys(s, vals, nulls);
		xpu_join_probe_each(s, t, vals, nulls);
		return;
	}
	if ((wf = xpu_join_word_form(t)) != XPU_JOIN_WORD_NONE)
		row = s->an ? -1 :
			xpu_join_first_word(t, wf, xpu_agg_key_word(t->keys[0].probe_type, s->a));
	else
	{
		xpu_join_probe_keys(s, vals, nulls);
		row = xpu_join_first(t, &c, vals, nulls);
	}
	s->d->i = row;
	*s->dn = row < 0;
}

/* is row an inner row of t whose payload column col exists */
XPU_HOST_DEVICE int
xpu_join_pay_ok(const XpuJoinTable *t, int64_t row, int col)
{
	return row >= 0 && row < (int64_t) t->n_rows && col < t->n_pay;
}

XPU_STEP(JOIN_PAY)
{
	const XpuJoinTable *t = xpu_join_of(s);
	int			col = XPU_JOIN_IMM_ARG(s->ins->imm);

	if (t == 0)
		return;
	if (!xpu_join_pay_ok(t, s->a->i, col))
	{
		XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "join payload of a row or column the inner table has not");
		return;
	}
	xpu_join_payload(t, (int32_t) s->a->i, col, s->d, s->dn);
}

/*
 * xpu_program_probes: does the program run a JOIN stage opcode (and so
 * need the chunk's inner tables)
 */
XPU_HOST_DEVICE int
xpu_program_probes(const XpuProgram *prog)
{
	const XpuInstr *ins = XPU_INSTRS(prog);

	for (int pc = 0; pc < prog->n_instrs; pc++)
		if (ins[pc].op == XPU_OP_JOIN_PROBE || ins[pc].op == XPU_OP_JOIN_PAY)
			return 1;
	return 0;
}

/*
 * xpu_program_marks: the instruction of prog's probe that marks matched
 * inner rows (XPU_JOIN_PROBE_MARK), -1 none
 */
XPU_HOST_DEVICE int
xpu_program_marks(const XpuProgram *prog)
{
	const XpuInstr *ins = XPU_INSTRS(prog);

	for (int pc = prog->stage_start[XPU_STAGE_JOIN]; pc < prog->stage_start[XPU_STAGE_JOIN + 1]; pc++)
		if (ins[pc].op == XPU_OP_JOIN_PROBE && (ins[pc].imm & XPU_JOIN_PROBE_MARK))
			return pc;
	return -1;
}

/*
 * does prog hold a probe of every match whose rows may expand over tables
 * joins[0 .. n_joins - 1] (NULL: whatever the tables; xpu_cpu_exec_each
 * then runs it per row)
 */
XPU_HOST_DEVICE int
xpu_program_expands_over(const XpuProgram *prog, const XpuJoinTable *const *joins, int n_joins)
{
	const XpuInstr *ins = XPU_INSTRS(prog);

	for (int pc = prog->stage_start[XPU_STAGE_JOIN]; pc < prog->stage_start[XPU_STAGE_JOIN + 1]; pc++)
		if (ins[pc].op == XPU_OP_JOIN_PROBE && (ins[pc].imm & XPU_JOIN_PROBE_EACH) &&
			xpu_join_probe_expands(&ins[pc], joins, n_joins))
			return 1;
	return 0;
}

/* does prog hold a probe of every match (its rows may expand: xpu_cpu_exec_each) */
XPU_HOST_DEVICE int
xpu_program_expands(const XpuProgram *prog)
{
	return xpu_program_expands_over(prog, 0, 0);
}

/* ---------------------------------------------------------------- host: building */

/* host functions (declared for nvcc too: host code of a .cu may call them) */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* what one join depth's inner table holds */
typedef struct XpuJoinSpec
{
	int			n_keys;			/* 1 .. XPU_JOIN_MAX_KEYS */
	XpuJoinKeyDesc keys[XPU_JOIN_MAX_KEYS];	/* key_scale: set by the builder */
	int			n_pay;			/* 0 .. XPU_JOIN_MAX_PAYLOAD */
	uint8_t		pay_types[XPU_JOIN_MAX_PAYLOAD];
	int			form;			/* XPU_JOIN_AUTO or XPU_JOIN_HASH (never dense) */
	uint64_t	max_bytes;		/* the table's limit; 0: XPU_JOIN_MAX_BYTES */
	uint32_t	n_parts;		/* 0 or 1: all rows; else the table of */
	uint32_t	part;			/* partition part (< n_parts) only */
	/*
	 * 1: no key repeats (the caller knows it: a unique index), so the dense
	 * form's layout skips its pass over the keys for repeats, and its
	 * slots are counted once written (xpu_join_builder_written: a table
	 * where a key did repeat is laid out again in the hash form)
	 */
	uint8_t		unique_keys;
} XpuJoinSpec;

/*
 * The builder (xpu_join.c).  Functions that fail return 0/NULL and set
 * *err: XPU_ERR_INVALID_ARGUMENT for a spec or input it cannot take,
 * XPU_ERR_FALLBACK when the table would pass its byte limit or
 * XPU_JOIN_MAX_ROWS rows, or an inner numeric key does not fit 38 digits at
 * the key scale (the join stays in PostgreSQL, or is split), XPU_ERR_INTERNAL
 * "out of memory" when an allocation fails.  The builder stays usable for
 * xpu_join_builder_free.
 */
typedef struct XpuJoinBuilder XpuJoinBuilder;

extern XpuJoinBuilder *xpu_join_builder_create(const XpuJoinSpec *spec, XpuError *err);
extern void xpu_join_builder_free(XpuJoinBuilder *b);

/*
 * adds n inner rows, numbered on from the rows added before: key column k
 * of row i at keys[k * n + i] / key_nulls[k * n + i] (the inner types),
 * payload column c at pay[c * n + i] / pay_nulls[c * n + i] (XpuResult's
 * layout); texts are copied, so the caller's memory may go after the call
 */
extern int	xpu_join_builder_add(XpuJoinBuilder *b, int64_t n, const XpuValue *keys,
								 const uint8_t *key_nulls, const XpuValue *pay,
								 const uint8_t *pay_nulls, XpuError *err);

/* the table of the rows added (malloc'd, 16-byte aligned, total_len bytes: free()) */
extern XpuJoinTable *xpu_join_builder_finish(XpuJoinBuilder *b, XpuError *err);

/*
 * The same in memory of the caller's (a shared-memory segment for the
 * service, pinned memory for a copy to the GPU): xpu_join_builder_layout
 * chooses the form and returns the table's bytes (0 with err set past the
 * limit; no rows may be added after it), xpu_join_builder_write writes
 * the table at dst (16-byte aligned, that many bytes).
 * xpu_join_builder_write_zeroed does where dst's bytes are all 0 already
 * (a fresh memfd's pages): it writes only what is not 0, so a page it does
 * not touch is never faulted in or copied.
 * The same in parts, for threads: xpu_join_builder_write_head (the header,
 * and the hash form's buckets, entries and keys, which sort all rows), then
 * xpu_join_builder_write_run for each run of rows 0 .. runs - 1 (the
 * builder's own, then each attached image: the dense form's slots, the
 * NULL-key rows and the payload of its rows), in any order and at once:
 * no two write the same bytes.
 * With spec.unique_keys the table written must then be checked:
 * xpu_join_builder_written returns 1 where it stands, 0 where a key did
 * repeat in a dense table (two rows took one slot): the builder is then to
 * be laid out again (the hash form) and written into fresh memory.
 */
extern uint64_t xpu_join_builder_layout(XpuJoinBuilder *b, XpuError *err);
extern void xpu_join_builder_write(XpuJoinBuilder *b, void *dst);
extern void xpu_join_builder_write_zeroed(XpuJoinBuilder *b, void *dst);
extern int	xpu_join_builder_runs(const XpuJoinBuilder *b);
extern void xpu_join_builder_write_head(XpuJoinBuilder *b, void *dst);
extern void xpu_join_builder_write_run(const XpuJoinBuilder *b, void *dst, int run);
extern int	xpu_join_builder_written(XpuJoinBuilder *b, const void *dst);

/*
 * Shares of one table built apart (each parallel worker of an inner scan
 * adds the rows it read to a builder of its own): xpu_join_builder_image
 * writes a builder's rows as one flat image of xpu_join_builder_image_len
 * bytes (8-byte aligned dst), which xpu_join_builder_attach adds to a
 * builder of the same spec, rows numbered on from its own, without copying
 * them: the layout and the write read them where they lie, so the image
 * (8-byte aligned) must stay, unchanged, until the table is written
 * (xpu_join_builder_write or _finish).  The image is checked, not
 * trusted: a malformed one is XPU_ERR_INVALID_ARGUMENT and leaves the
 * builder's rows as they were; past the limit it is XPU_ERR_FALLBACK, as
 * for xpu_join_builder_add.  Once an image is attached no rows may be
 * added (XPU_ERR_INVALID_ARGUMENT), and xpu_join_builder_image writes the
 * builder's own rows only.  (A copy of every share into the builder, the
 * way before, was most of the serial part of a parallel build:
 * bench/join_build_bench.c.)
 */
extern uint64_t xpu_join_builder_image_len(const XpuJoinBuilder *b);
extern void xpu_join_builder_image(const XpuJoinBuilder *b, void *dst);
extern int	xpu_join_builder_attach(XpuJoinBuilder *b, const void *image, uint64_t len,
									XpuError *err);

/*
 * xpu_join_first_batch: xpu_join_first of n outer rows at once, for the
 * CPU engine: the rows sel[0 .. n - 1] (a tile's selection vector; NULL:
 * rows 0 .. n - 1), key column k of row r at keys[k][r] / nulls[k][r]
 * (a tile's key registers: n_keys vectors); the i-th row's cursor into
 * curs[i] (go on with xpu_join_next) and its first match into first[i]
 * (-1 none), each cursor begun for jointype as xpu_join_begin begins it
 * (the join-type helpers go on from it).  The same results as n calls of
 * xpu_join_begin; faster on a table larger than the caches, since a group
 * of rows starts each of its loads (bucket, entries, key bytes, the first
 * match's payload) before any row waits for one.
 */
extern void xpu_join_first_batch(const XpuJoinTable *t, int jointype, int n,
								 const uint16_t *sel,
								 const XpuValue *const *keys, const uint8_t *const *nulls,
								 XpuJoinCursor *curs, int32_t *first);

/*
 * checks len bytes received as a table (from another process) before a
 * probe trusts them: header, offsets and sizes within len, buckets
 * ascending, every entry's row and key bytes in bounds, texts in bounds;
 * 0 with XPU_ERR_INVALID_ARGUMENT in err if not
 */
extern int	xpu_join_table_validate(const XpuJoinTable *t, uint64_t len, XpuError *err);

/*
 * xpu_program_join_check: may prog run with the inner tables joins[n_joins]
 * (joins[d]: depth d's): every JOIN_PROBE's depth < n_joins, its n_keys the
 * table's, key register k of the table's probe type (numeric: of its probe
 * scale); every JOIN_PAY's depth < n_joins, column < the table's n_pay,
 * destination of the column's type.  1, or 0 with XPU_ERR_INVALID_ARGUMENT
 * in err.  The program must have passed xpu_program_validate.
 */
extern int	xpu_program_join_check(const XpuProgram *prog, const XpuJoinTable *const *joins,
								   int n_joins, XpuError *err);

#ifdef __cplusplus
}
#endif

#endif							/* XPU_JOIN_H */
