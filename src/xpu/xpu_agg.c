/*-------------------------------------------------------------------------
 *
 * xpu_agg.c
 *		The CPU engine's hash aggregation table (xpu_agg.h): groups keyed by
 *		their canonical key bytes in an open-addressing table, with the
 *		per-row bodies of xpu_agg_ops.h.  Plain C, no PostgreSQL headers.
 *
 * Layout.  Groups are numbered in the order they appear; group g keeps
 * its hash, its key bytes (offset and length into one growing arena) and
 * n_aggs states at states[g * n_aggs].  The slot array (a power of two,
 * at most half full, linear probing) holds per slot the upper 32 bits of
 * the hash and g + 1 (0: empty), so that a probe rarely touches a group
 * whose hash differs.  Growth doubles the slots and re-inserts the stored
 * hashes; no key is hashed twice.
 *
 * An update works on a whole XpuResult: first every passing row finds its
 * group (key encoded into a scratch buffer, hashed 8 bytes at a time,
 * probed), then each aggregate runs one tight loop over the rows.  A
 * table without keys has exactly one group from its creation (the one row
 * of a query without GROUP BY, even over no rows) and skips the lookup.
 *
 * HLL states point to a set of their own (HllSet): the distinct hashes
 * while they are few (appended, sorted and deduplicated when the array is
 * full), 2^p registers once more than XPU_HLL_EXPLICIT_LIMIT(p) are
 * distinct; their bytes count against the aggregate's limit.  MIN_TEXT and
 * MAX_TEXT states point to a copy of their text (TextCopy).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "xpu_agg_ops.h"

#define OOM(err)	XPU_ERROR((err), XPU_ERR_INTERNAL, "out of memory")

/* rows whose keys find_groups encodes before it hashes and looks them up */
#define KEY_BLOCK	256

struct XpuAggTable
{
	int			n_keys;
	int			n_aggs;
	uint16_t	key_outs[XPU_AGG_MAX_KEYS];
	uint8_t		key_types[XPU_AGG_MAX_KEYS];
	XpuAggDesc	aggs[XPU_AGG_MAX_AGGS];
	uint8_t		arg_types[XPU_AGG_MAX_AGGS];

	/* groups */
	int64_t		ngroups;
	int64_t		gcap;
	uint64_t   *ghash;			/* [gcap] */
	int64_t    *koff;			/* [gcap] key bytes at keys + koff[g] */
	uint32_t   *klen;			/* [gcap] */
	XpuAggState *states;		/* [gcap * n_aggs] */
	uint8_t    *keys;			/* arena */
	int64_t		keys_len;
	int64_t		keys_cap;

	/* slots: (hash >> 32) << 32 | (group + 1), 0 = empty */
	uint64_t   *slots;
	uint64_t	mask;			/* slot count - 1 */

	/* HLL sets: bytes held, and the most the table may hold (0: no HLL) */
	size_t		hll_bytes;
	size_t		hll_max;

	/* scratch of an update: a row's key, and each row's group */
	uint8_t    *kbuf;
	size_t		kbuf_cap;
	int64_t    *rowgroup;
	int64_t		rowgroup_cap;
};

static int	kbuf_reserve(XpuAggTable *t, size_t need, XpuError *err);

/* ---------------------------------------------------------------- HLL sets */

/* an HLL state's set (the file header) */
typedef struct HllSet
{
	int			p;
	int			dense;
	uint32_t	n;				/* explicit: hashes[0..n), repeats possible */
	uint32_t	sorted;			/* hashes[0..sorted) sorted and distinct */
	uint32_t	cap;
	uint64_t   *hashes;
	uint8_t    *regs;			/* dense: 2^p registers */
} HllSet;

#define HLL_SET(s)	((HllSet *) (uintptr_t) (s)->v.i)

/* counts delta bytes of sets; 0 (FALLBACK) past the table's limit */
static int
hll_account(XpuAggTable *t, size_t delta, XpuError *err)
{
	t->hll_bytes += delta;
	if (t->hll_bytes > t->hll_max)
	{
		XPU_ERROR(err, XPU_ERR_FALLBACK,
				  "HyperLogLog sketches of the groups need more memory than allowed");
		return 0;
	}
	return 1;
}

/* the set of HLL state s (precision p), made when s has none */
static HllSet *
hll_set_of(XpuAggTable *t, XpuAggState *s, int p, XpuError *err)
{
	HllSet	   *h = HLL_SET(s);

	if (h != NULL)
		return h;
	if (!hll_account(t, sizeof(HllSet), err))
		return NULL;
	if ((h = calloc(1, sizeof(HllSet))) == NULL)
		return OOM(err), NULL;
	h->p = p;
	s->v.i = (int64_t) (uintptr_t) h;
	return h;
}

static void
hll_set_free(HllSet *h)
{
	if (h == NULL)
		return;
	free(h->hashes);
	free(h->regs);
	free(h);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t	x = *(const uint64_t *) a,
				y = *(const uint64_t *) b;

	return (x > y) - (x < y);
}

/* sorts the explicit hashes and drops repeats */
static void
hll_compact(HllSet *h)
{
	uint32_t	out = 0;

	if (h->sorted == h->n)
		return;
	qsort(h->hashes, h->n, sizeof(uint64_t), cmp_u64);
	for (uint32_t i = 0; i < h->n; i++)
		if (out == 0 || h->hashes[out - 1] != h->hashes[i])
			h->hashes[out++] = h->hashes[i];
	h->n = h->sorted = out;
}

/* the explicit hashes into 2^p registers */
static int
hll_densify(XpuAggTable *t, HllSet *h, XpuError *err)
{
	size_t		m = (size_t) 1 << h->p;

	if (!hll_account(t, m, err))
		return 0;
	if ((h->regs = calloc(m, 1)) == NULL)
		return OOM(err), 0;
	for (uint32_t i = 0; i < h->n; i++)
		xpu_hll_update(h->regs, h->p, h->hashes[i]);
	t->hll_bytes -= (size_t) h->cap * sizeof(uint64_t);
	free(h->hashes);
	h->hashes = NULL;
	h->n = h->sorted = h->cap = 0;
	h->dense = 1;
	return 1;
}

/* the final form: distinct hashes, registers past the explicit limit */
static int
hll_normalize(XpuAggTable *t, HllSet *h, XpuError *err)
{
	if (h->dense)
		return 1;
	hll_compact(h);
	return h->n <= XPU_HLL_EXPLICIT_LIMIT(h->p) || hll_densify(t, h, err);
}

/* adds one hash to h */
static int
hll_add(XpuAggTable *t, HllSet *h, uint64_t hash, XpuError *err)
{
	if (!h->dense && h->n == h->cap)
	{
		uint32_t	maxcap = 2 * XPU_HLL_EXPLICIT_LIMIT(h->p);

		if (h->cap < maxcap)
		{
			uint32_t	cap = h->cap ? 2 * h->cap : 16;
			uint64_t   *p;

			cap = cap > maxcap ? maxcap : cap;
			if (!hll_account(t, (size_t) (cap - h->cap) * sizeof(uint64_t), err))
				return 0;
			if ((p = realloc(h->hashes, cap * sizeof(uint64_t))) == NULL)
				return OOM(err), 0;
			h->hashes = p;
			h->cap = cap;
		}
		else if (!hll_normalize(t, h, err))
			return 0;
	}
	if (h->dense)
		xpu_hll_update(h->regs, h->p, hash);
	else
		h->hashes[h->n++] = hash;
	return 1;
}

/* folds set src into dst */
static int
hll_merge(XpuAggTable *t, HllSet *dst, const HllSet *src, XpuError *err)
{
	if (!src->dense)
	{
		for (uint32_t i = 0; i < src->n; i++)
			if (!hll_add(t, dst, src->hashes[i], err))
				return 0;
		return 1;
	}
	/* src has more distinct hashes than the explicit limit: so has the union */
	if (!dst->dense && !hll_densify(t, dst, err))
		return 0;
	for (size_t i = 0; i < ((size_t) 1 << dst->p); i++)
		if (dst->regs[i] < src->regs[i])
			dst->regs[i] = src->regs[i];
	return 1;
}

/* ---------------------------------------------------------------- min/max of text */

/* the text of a MIN_TEXT / MAX_TEXT state */
typedef struct TextCopy
{
	uint32_t	len;
	uint32_t	cap;
	char		data[];
} TextCopy;

#define TEXT_COPY(s)	((TextCopy *) (uintptr_t) (s)->v.i)

/* the C collation's order of two strings: bytewise, a prefix first */
static int
text_cmp_c(const char *a, uint32_t la, const char *b, uint32_t lb)
{
	int			c = memcmp(a, b, la < lb ? la : lb);

	return c != 0 ? c : (la > lb) - (la < lb);
}

/*
 * text_fold: folds the text p[len] into MIN_TEXT / MAX_TEXT state s (count
 * counted by the caller): replaces its copy when there is none or p is
 * less (MIN) / greater (MAX)
 */
static int
text_fold(XpuAggState *s, int kind, const char *p, uint32_t len, XpuError *err)
{
	TextCopy   *c = TEXT_COPY(s);

	if (c != NULL)
	{
		int			cmp = text_cmp_c(p, len, c->data, c->len);

		if (kind == XPU_AGG_MIN_TEXT ? cmp >= 0 : cmp <= 0)
			return 1;
	}
	if (c == NULL || c->cap < len)
	{
		TextCopy   *n = realloc(c, sizeof(TextCopy) + len + 1);

		if (n == NULL)
			return OOM(err), 0;
		n->cap = len;
		c = n;
		s->v.i = (int64_t) (uintptr_t) c;
	}
	c->len = len;
	if (len > 0)
		memcpy(c->data, p, len);
	return 1;
}

/* MIN_TEXT / MAX_TEXT aggregate a over the passing rows of res (rg as update_hll's) */
static int
update_text(XpuAggTable *t, int a, const XpuResult *res, const int64_t *rg, XpuError *err)
{
	const XpuAggDesc *d = &t->aggs[a];
	const XpuValue *v = res->values + d->out * res->nrows;
	const uint8_t *nl = res->nulls + d->out * res->nrows;

	for (int64_t r = 0; r < res->nrows; r++)
	{
		XpuAggState *s;

		if ((rg ? rg[r] < 0 : (res->mask && !res->mask[r])) || nl[r])
			continue;
		s = &t->states[(rg ? rg[r] : 0) * t->n_aggs + a];
		if (!text_fold(s, d->kind, v[r].t.p, (uint32_t) v[r].t.len, err))
			return 0;
		s->count++;
	}
	return 1;
}

/* an extended aggregate a over the passing rows of res (rg as update_hll's) */
static int update_hll(XpuAggTable *t, int a, const XpuResult *res, const int64_t *rg,
					  XpuError *err);

static int
update_extended(XpuAggTable *t, int a, const XpuResult *res, const int64_t *rg, XpuError *err)
{
	if (t->aggs[a].kind == XPU_AGG_HLL)
		return update_hll(t, a, res, rg, err);
	return update_text(t, a, res, rg, err);
}

/* HLL aggregate a over the passing rows of res (rg: each row's group, NULL: group 0) */
static int
update_hll(XpuAggTable *t, int a, const XpuResult *res, const int64_t *rg, XpuError *err)
{
	const XpuAggDesc *d = &t->aggs[a];
	const XpuValue *v = res->values + d->out * res->nrows;
	const uint8_t *nl = res->nulls + d->out * res->nrows;
	int			type = t->arg_types[a];

	for (int64_t r = 0; r < res->nrows; r++)
	{
		XpuAggState *s;
		HllSet	   *h;

		if ((rg ? rg[r] < 0 : (res->mask && !res->mask[r])) || nl[r])
			continue;
		s = &t->states[(rg ? rg[r] : 0) * t->n_aggs + a];
		if ((h = hll_set_of(t, s, d->param, err)) == NULL ||
			!hll_add(t, h, xpu_agg_hll_hash(type, &v[r]), err))
			return 0;
		s->count++;
	}
	return 1;
}

/* ---------------------------------------------------------------- groups */

/* makes room for one more group */
static int
groups_reserve(XpuAggTable *t, XpuError *err)
{
	int64_t		cap;
	void	   *p;

	if (t->ngroups < t->gcap)
		return 1;
	cap = t->gcap ? t->gcap * 2 : 64;
	if (cap > (int64_t) UINT32_MAX - 1)
		cap = (int64_t) UINT32_MAX - 1;
	if (t->ngroups >= cap)
	{
		XPU_ERROR(err, XPU_ERR_INTERNAL, "too many groups");
		return 0;
	}
	if ((p = realloc(t->ghash, cap * sizeof(uint64_t))) == NULL)
		return OOM(err), 0;
	t->ghash = p;
	if ((p = realloc(t->koff, cap * sizeof(int64_t))) == NULL)
		return OOM(err), 0;
	t->koff = p;
	if ((p = realloc(t->klen, cap * sizeof(uint32_t))) == NULL)
		return OOM(err), 0;
	t->klen = p;
	if ((p = realloc(t->states, cap * (t->n_aggs ? t->n_aggs : 1) * sizeof(XpuAggState))) == NULL)
		return OOM(err), 0;
	t->states = p;
	t->gcap = cap;
	return 1;
}

/* doubles the slot array (or makes the first) and re-inserts every group */
static int
slots_grow(XpuAggTable *t, XpuError *err)
{
	uint64_t	n = t->slots ? (t->mask + 1) * 2 : 256;
	uint64_t   *s = calloc(n, sizeof(uint64_t));
	int64_t		g;

	if (s == NULL)
		return OOM(err), 0;
	for (g = 0; g < t->ngroups; g++)
	{
		uint64_t	i = t->ghash[g] & (n - 1);

		while (s[i] != 0)
			i = (i + 1) & (n - 1);
		s[i] = (t->ghash[g] & ~(uint64_t) UINT32_MAX) | (uint64_t) (g + 1);
	}
	free(t->slots);
	t->slots = s;
	t->mask = n - 1;
	return 1;
}

/* appends a group of key bytes key[len] with hash h; returns it or -1 */
static int64_t
group_add(XpuAggTable *t, const uint8_t *key, uint32_t len, uint64_t h, XpuError *err)
{
	int64_t		g = t->ngroups;
	int			a;

	if (!groups_reserve(t, err))
		return -1;
	if (t->keys_len + len > t->keys_cap)
	{
		int64_t		cap = t->keys_cap ? t->keys_cap : 4096;
		uint8_t    *p;

		while (cap < t->keys_len + len)
			cap *= 2;
		if ((p = realloc(t->keys, cap)) == NULL)
			return OOM(err), -1;
		t->keys = p;
		t->keys_cap = cap;
	}
	if (len > 0)
		memcpy(t->keys + t->keys_len, key, len);
	t->koff[g] = t->keys_len;
	t->klen[g] = len;
	t->keys_len += len;
	t->ghash[g] = h;
	for (a = 0; a < t->n_aggs; a++)
		xpu_agg_init(&t->states[g * t->n_aggs + a], t->aggs[a].kind);
	t->ngroups++;
	return g;
}

/*
 * are the len bytes at a and b equal (short keys: no library call; the
 * last word compared overlaps the one before, so no byte loop and no read
 * past either end)
 */
static inline int
keys_equal(const uint8_t *a, const uint8_t *b, uint32_t len)
{
	uint64_t	x, y;
	uint32_t	i = 0;

	if (len < 8)
	{
		for (; i < len; i++)
			if (a[i] != b[i])
				return 0;
		return 1;
	}
	for (; i + 8 < len; i += 8)
	{
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	memcpy(&x, a + len - 8, 8);
	memcpy(&y, b + len - 8, 8);
	return x == y;
}

/*
 * group_find: the group of key bytes key[len] with hash h, added when it is
 * new; -1 (err set) when memory runs out.
 */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int64_t
group_find(XpuAggTable *t, const uint8_t *key, uint32_t len, uint64_t h, XpuError *err)
{
	uint64_t	tag = h & ~(uint64_t) UINT32_MAX;
	uint64_t	i = h & t->mask;
	int64_t		g;

	for (;;)
	{
		uint64_t	s = t->slots[i];

		if (s == 0)
			break;
		if ((s & ~(uint64_t) UINT32_MAX) == tag)
		{
			g = (int64_t) (s & UINT32_MAX) - 1;
			if (t->klen[g] == len && keys_equal(t->keys + t->koff[g], key, len))
				return g;
		}
		i = (i + 1) & t->mask;
	}
	if ((g = group_add(t, key, len, h, err)) < 0)
		return -1;
	t->slots[i] = tag | (uint64_t) (g + 1);
	if ((uint64_t) t->ngroups * 2 > t->mask + 1 && !slots_grow(t, err))
		return -1;
	return g;
}

/* ---------------------------------------------------------------- the API */

/* the type of program out `out` */
static int
out_type(const XpuProgram *prog, int out)
{
	return XPU_REGS(prog)[XPU_OUTS(prog)[out]].type;
}

/*
 * xpu_agg_table_create: see xpu_agg.h.  Refuses (XPU_ERR_INVALID_ARGUMENT)
 * a spec with too many keys or aggregates, an out the program lacks, a key
 * type that cannot group (interval) or an argument type the kind does not
 * take (xpu_agg_ops.h).
 */
XpuAggTable *
xpu_agg_table_create(const XpuProgram *prog, const XpuAggSpec *spec, XpuError *err)
{
	XpuAggTable *t;
	int			i;

	if (spec->n_keys < 0 || spec->n_keys > XPU_AGG_MAX_KEYS ||
		spec->n_aggs < 0 || spec->n_aggs > XPU_AGG_MAX_AGGS)
	{
		XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "too many group keys or aggregates");
		return NULL;
	}
	for (i = 0; i < spec->n_keys; i++)
	{
		if (spec->key_outs[i] >= prog->n_outs ||
			!xpu_agg_key_supported(out_type(prog, spec->key_outs[i])))
		{
			XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "a group key is not an output of a groupable type");
			return NULL;
		}
	}
	for (i = 0; i < spec->n_aggs; i++)
	{
		const XpuAggDesc *a = &spec->aggs[i];

		if (a->kind < XPU_AGG_COUNT_STAR || a->kind >= XPU_AGG_N_KINDS ||
			(a->kind != XPU_AGG_COUNT_STAR &&
			 (a->out >= prog->n_outs || !xpu_agg_arg_supported(a->kind, out_type(prog, a->out)))) ||
			(a->kind == XPU_AGG_HLL &&
			 (a->param < XPU_HLL_MIN_BITS || a->param > XPU_HLL_MAX_BITS)))
		{
			XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT, "an aggregate's kind or argument is invalid");
			return NULL;
		}
	}
	if ((t = calloc(1, sizeof(XpuAggTable))) == NULL)
		return OOM(err), NULL;
	t->n_keys = spec->n_keys;
	t->n_aggs = spec->n_aggs;
	for (i = 0; i < spec->n_keys; i++)
	{
		t->key_outs[i] = spec->key_outs[i];
		t->key_types[i] = (uint8_t) out_type(prog, spec->key_outs[i]);
	}
	for (i = 0; i < spec->n_aggs; i++)
	{
		if (spec->aggs[i].kind == XPU_AGG_HLL)
			t->hll_max = (size_t) spec->aggs[i].limit << 20;
		t->aggs[i] = spec->aggs[i];
		t->arg_types[i] = spec->aggs[i].kind == XPU_AGG_COUNT_STAR ? XPU_T_NONE :
			(uint8_t) out_type(prog, spec->aggs[i].out);
	}
	if (!slots_grow(t, err) || !kbuf_reserve(t, XPU_AGG_MAX_KEYS * 17, err) ||
		(t->n_keys == 0 && group_find(t, NULL, 0, xpu_agg_hash(NULL, 0), err) < 0))
	{
		xpu_agg_table_free(t);
		return NULL;
	}
	return t;
}

void
xpu_agg_table_free(XpuAggTable *t)
{
	if (t == NULL)
		return;
	for (int a = 0; a < t->n_aggs; a++)
		for (int64_t g = 0; XPU_AGG_EXTENDED(t->aggs[a].kind) && g < t->ngroups; g++)
		{
			XpuAggState *s = &t->states[g * t->n_aggs + a];

			if (t->aggs[a].kind == XPU_AGG_HLL)
				hll_set_free(HLL_SET(s));
			else
				free(TEXT_COPY(s));
		}
	free(t->ghash);
	free(t->koff);
	free(t->klen);
	free(t->states);
	free(t->keys);
	free(t->slots);
	free(t->kbuf);
	free(t->rowgroup);
	free(t);
}

/*
 * hash_key: xpu_agg_hash of the len key bytes at k, which have at least 8
 * bytes of room after them (in t->kbuf): the tail is one masked load (the
 * same value xpu_agg_hash computes byte-wise).
 */
static inline uint64_t
hash_key(const uint8_t *k, uint32_t len)
{
	uint64_t	h = xpu_agg_hash_start(len);
	uint64_t	w;
	uint32_t	i = 0;

	for (; i + 8 <= len; i += 8)
	{
		memcpy(&w, k + i, 8);
		h = xpu_agg_hash_step(h, w);
	}
	if (i < len)
	{
		memcpy(&w, k + i, 8);
		w &= ~UINT64_C(0) >> (64 - 8 * (len - i));
		h = xpu_agg_hash_step(h, w);
	}
	return xpu_agg_hash_end(h);
}

/* makes t->kbuf hold at least need bytes (keeping its first len) */
static int
kbuf_reserve(XpuAggTable *t, size_t need, XpuError *err)
{
	size_t		cap;
	uint8_t    *p;

	need += 8;					/* hash_key's tail load */
	cap = need < 256 ? 256 : need * 2;
	if (need <= t->kbuf_cap)
		return 1;
	if ((p = realloc(t->kbuf, cap)) == NULL)
		return OOM(err), 0;
	t->kbuf = p;
	t->kbuf_cap = cap;
	return 1;
}

/*
 * copy_text: len bytes from src to dst, a word at a time; the last word
 * copied overlaps the one before, so nothing past either end is touched
 */
static inline void
copy_text(uint8_t *dst, const char *src, int32_t len)
{
	uint64_t	w;
	uint32_t	h, l;
	int32_t		i = 0;

	if (len >= 8)
	{
		for (; i + 8 < len; i += 8)
		{
			memcpy(&w, src + i, 8);
			memcpy(dst + i, &w, 8);
		}
		memcpy(&w, src + len - 8, 8);
		memcpy(dst + len - 8, &w, 8);
	}
	else if (len >= 4)
	{
		memcpy(&h, src, 4);
		memcpy(&l, src + len - 4, 4);
		memcpy(dst, &h, 4);
		memcpy(dst + len - 4, &l, 4);
	}
	else
		for (; i < len; i++)
			dst[i] = (uint8_t) src[i];
}

/*
 * encode_row: the key bytes of row `row` of res into t->kbuf at offset pos
 * (growing it: there are always 8 bytes of room after them); their length,
 * 0 when memory ran out.
 */
static inline uint32_t
encode_row(XpuAggTable *t, const XpuResult *res, int64_t row, size_t pos, XpuError *err)
{
	const int	n_keys = t->n_keys;
	uint8_t    *kb;
	uint32_t	len = 0;
	int			k;

	if (pos + (size_t) n_keys * 17 + 8 > t->kbuf_cap &&
		!kbuf_reserve(t, pos + (size_t) n_keys * 17, err))
		return 0;
	kb = t->kbuf + pos;

	for (k = 0; k < n_keys; k++)
	{
		int64_t		o = t->key_outs[k] * res->nrows + row;
		const XpuValue *v = &res->values[o];
		int			type = t->key_types[k];

		if (res->nulls[o])
			kb[len++] = 0;
		else if (xpu_agg_intlike(type))
		{
			kb[len] = 1;
			memcpy(kb + len + 1, &v->i, 8);
			len += 9;
		}
		else if (type == XPU_T_TEXT)
		{
			int32_t		tl = v->t.len;

			if (pos + len + 5 + tl + (n_keys - k) * 17 + 8 > t->kbuf_cap)
			{
				if (!kbuf_reserve(t, pos + len + 5 + tl + (n_keys - k) * 17, err))
					return 0;
				kb = t->kbuf + pos;
			}
			kb[len] = 1;
			memcpy(kb + len + 1, &tl, 4);
			copy_text(kb + len + 5, v->t.p, tl);
			len += 5 + (uint32_t) tl;
		}
		else
			len += xpu_agg_key_value_put(kb + len, type, v, 0);
	}
	return len;
}

/* the no-key table: aggregate a over the passing rows of res, tight loops */
static void
update_one_group(XpuAggTable *t, int a, const XpuResult *res)
{
	XpuAggState *s = &t->states[a];
	const XpuAggDesc *d = &t->aggs[a];
	const uint8_t *mask = res->mask;
	int64_t		n = res->nrows, r;

	if (d->kind == XPU_AGG_COUNT_STAR)
	{
		int64_t		c = 0;

		for (r = 0; r < n; r++)
			c += mask ? mask[r] != 0 : 1;
		s->count += c;
		return;
	}
	else
	{
		const XpuValue *v = res->values + d->out * n;
		const uint8_t *nl = res->nulls + d->out * n;

		if (d->kind == XPU_AGG_SUM_INT)
		{
			/* |int64| < 2^63 per row: an int128 cannot overflow here */
			__int128	sum = 0;
			int64_t		c = 0;

			for (r = 0; r < n; r++)
			{
				int			take = (!mask || mask[r]) && !nl[r];

				sum += take ? v[r].i : 0;
				c += take;
			}
			s->v.i128 += sum;
			s->count += c;
			return;
		}
		for (r = 0; r < n; r++)
		{
			if (!mask || mask[r])
				xpu_agg_update(s, d->kind, t->arg_types[a], &v[r], nl[r]);
		}
	}
}

/*
 * update_rows: aggregate a over the rows of res whose group t->rowgroup
 * holds (-1: the row did not pass); the common kinds as plain loops.
 */
static void
update_rows(XpuAggTable *t, int a, const XpuResult *res)
{
	const XpuAggDesc *d = &t->aggs[a];
	int64_t		n = res->nrows, r;
	/* restrict: a state's update never changes the rows' groups or values */
	const int64_t *restrict rg = t->rowgroup;
	const XpuValue *restrict v = res->values + (d->kind == XPU_AGG_COUNT_STAR ? 0 : d->out * n);
	const uint8_t *restrict nl = res->nulls + (d->kind == XPU_AGG_COUNT_STAR ? 0 : d->out * n);
	XpuAggState *restrict st = t->states + a;
	int			na = t->n_aggs, type = t->arg_types[a];

	switch (d->kind)
	{
		case XPU_AGG_COUNT_STAR:
			for (r = 0; r < n; r++)
				if (rg[r] >= 0)
					st[rg[r] * na].count++;
			return;
		case XPU_AGG_COUNT:
			for (r = 0; r < n; r++)
				if (rg[r] >= 0 && !nl[r])
					st[rg[r] * na].count++;
			return;
		case XPU_AGG_SUM_INT:
			for (r = 0; r < n; r++)
			{
				if (rg[r] >= 0 && !nl[r])
				{
					st[rg[r] * na].v.i128 += v[r].i;
					st[rg[r] * na].count++;
				}
			}
			return;
		case XPU_AGG_MIN:
		case XPU_AGG_MAX:
			if (xpu_agg_intlike(type))
			{
				int			is_min = d->kind == XPU_AGG_MIN;

				for (r = 0; r < n; r++)
				{
					XpuAggState *s;

					if (rg[r] < 0 || nl[r])
						continue;
					s = &st[rg[r] * na];
					if (s->count == 0 || (is_min ? v[r].i <= s->v.i : v[r].i >= s->v.i))
						s->v.i128 = v[r].i;
					s->count++;
				}
				return;
			}
			break;
		default:
			break;
	}
	for (r = 0; r < n; r++)
	{
		if (rg[r] >= 0)
			xpu_agg_update(&st[rg[r] * na], d->kind, type, &v[r], nl[r]);
	}
}

/*
 * find_groups: t->rowgroup[r] = the group of row r of res (added when new),
 * -1 for a row that did not pass; 0 (err set) when memory runs out.  A
 * block of rows at a time: their keys encoded one after the other into
 * t->kbuf, then hashed, then looked up, so that no key is read back while
 * its bytes are still being stored.
 */
static int
find_groups(XpuAggTable *t, const XpuResult *res, XpuError *err)
{
	int64_t		n = res->nrows;
	int64_t		krow[KEY_BLOCK];
	size_t		kpos[KEY_BLOCK];
	uint32_t	klen[KEY_BLOCK];
	uint64_t	kh[KEY_BLOCK];

	for (int64_t r0 = 0; r0 < n; r0 += KEY_BLOCK)
	{
		int64_t		end = n - r0 < KEY_BLOCK ? n : r0 + KEY_BLOCK;
		size_t		pos = 0;
		int			m = 0, j;

		for (int64_t r = r0; r < end; r++)
		{
			t->rowgroup[r] = -1;
			if (res->mask && !res->mask[r])
				continue;
			if ((klen[m] = encode_row(t, res, r, pos, err)) == 0)
				return 0;
			krow[m] = r;
			kpos[m] = pos;
			pos += klen[m++];
		}
		for (j = 0; j < m; j++)
			kh[j] = hash_key(t->kbuf + kpos[j], klen[j]);
		for (j = 0; j < m; j++)
		{
			int64_t		g = group_find(t, t->kbuf + kpos[j], klen[j], kh[j], err);

			if (g < 0)
				return 0;
			t->rowgroup[krow[j]] = g;
		}
	}
	return 1;
}

/*
 * xpu_agg_table_update: see xpu_agg.h.  The nulls of a row that did not
 * pass are never read, so res may leave them unset.
 */
int
xpu_agg_table_update(XpuAggTable *t, const XpuResult *res, XpuError *err)
{
	int64_t		n = res->nrows;
	int			a;

	if (t->n_keys == 0)
	{
		for (a = 0; a < t->n_aggs; a++)
		{
			if (XPU_AGG_EXTENDED(t->aggs[a].kind))
			{
				if (!update_extended(t, a, res, NULL, err))
					return 0;
			}
			else
				update_one_group(t, a, res);
		}
		return 1;
	}
	if (n > t->rowgroup_cap)
	{
		int64_t    *p = realloc(t->rowgroup, n * sizeof(int64_t));

		if (p == NULL)
			return OOM(err), 0;
		t->rowgroup = p;
		t->rowgroup_cap = n;
	}
	if (!find_groups(t, res, err))
		return 0;
	for (a = 0; a < t->n_aggs; a++)
	{
		if (XPU_AGG_EXTENDED(t->aggs[a].kind))
		{
			if (!update_extended(t, a, res, t->rowgroup, err))
				return 0;
		}
		else
			update_rows(t, a, res);
	}
	return 1;
}

/* folds the states src of a group into dst group dg */
static int
combine_group(XpuAggTable *dst, int64_t dg, const XpuAggState *src, XpuError *err)
{
	int			a;

	for (a = 0; a < dst->n_aggs; a++)
	{
		XpuAggState *d = &dst->states[dg * dst->n_aggs + a];
		HllSet	   *h;

		int			kind = dst->aggs[a].kind;

		xpu_agg_combine(d, &src[a], kind, dst->arg_types[a]);
		if (!XPU_AGG_EXTENDED(kind) || src[a].v.i == 0)
			continue;
		if (kind != XPU_AGG_HLL)
		{
			if (!text_fold(d, kind, TEXT_COPY(&src[a])->data, TEXT_COPY(&src[a])->len, err))
				return 0;
			continue;
		}
		if ((h = hll_set_of(dst, d, dst->aggs[a].param, err)) == NULL ||
			!hll_merge(dst, h, HLL_SET(&src[a]), err))
			return 0;
	}
	return 1;
}

int
xpu_agg_table_merge(XpuAggTable *dst, const XpuAggTable *src, XpuError *err)
{
	int64_t		g;

	for (g = 0; g < src->ngroups; g++)
	{
		int64_t		dg = group_find(dst, src->keys + src->koff[g], src->klen[g],
									src->ghash[g], err);

		if (dg < 0 || !combine_group(dst, dg, src->states + g * src->n_aggs, err))
			return 0;
	}
	return 1;
}

int
xpu_agg_table_fold_group(XpuAggTable *t, const uint8_t *key, uint32_t key_len,
						 const XpuAggState *states, XpuError *err)
{
	int64_t		g = group_find(t, key, key_len, xpu_agg_hash(key, key_len), err);

	return g >= 0 && combine_group(t, g, states, err);
}

int
xpu_agg_table_fold_hll(XpuAggTable *t, const uint8_t *key, uint32_t key_len, int a,
					   int dense, const uint8_t *data, uint32_t len, XpuError *err)
{
	int64_t		g;
	HllSet	   *h;
	int			p;

	if (a < 0 || a >= t->n_aggs || t->aggs[a].kind != XPU_AGG_HLL ||
		(dense ? len != UINT32_C(1) << t->aggs[a].param : len % 8 != 0))
		return XPU_ERROR(err, XPU_ERR_INTERNAL, "a HyperLogLog sketch of the wrong size"), 0;
	if (len == 0)
		return 1;
	p = t->aggs[a].param;
	g = group_find(t, key, key_len, xpu_agg_hash(key, key_len), err);
	if (g < 0 || (h = hll_set_of(t, &t->states[g * t->n_aggs + a], p, err)) == NULL)
		return 0;
	if (!dense)
	{
		for (uint32_t i = 0; i < len; i += 8)
		{
			uint64_t	hash;

			memcpy(&hash, data + i, 8);
			if (!hll_add(t, h, hash, err))
				return 0;
		}
		return 1;
	}
	if (!h->dense && !hll_densify(t, h, err))
		return 0;
	for (uint32_t i = 0; i < len; i++)
		if (h->regs[i] < data[i])
			h->regs[i] = data[i];
	return 1;
}

int64_t
xpu_agg_table_ngroups(const XpuAggTable *t)
{
	return t->ngroups;
}

void
xpu_agg_table_group(const XpuAggTable *t, int64_t i, const uint8_t **key,
					uint32_t *key_len, const XpuAggState **states)
{
	*key = t->keys + t->koff[i];
	*key_len = t->klen[i];
	*states = t->states + i * t->n_aggs;
}

/* xpu_agg_table_flags: the OR of every state's flags (XPU_AGGF_OVERFLOW) */
uint32_t
xpu_agg_table_flags(const XpuAggTable *t)
{
	uint32_t	f = 0;
	int64_t		i;

	for (i = 0; i < t->ngroups * t->n_aggs; i++)
		f |= t->states[i].flags;
	return f;
}

size_t
xpu_agg_table_memory(const XpuAggTable *t)
{
	return sizeof(XpuAggTable) +
		(size_t) t->gcap * (sizeof(uint64_t) + sizeof(int64_t) + sizeof(uint32_t) +
							(size_t) t->n_aggs * sizeof(XpuAggState)) +
		(size_t) t->keys_cap + (size_t) (t->mask + 1) * sizeof(uint64_t) +
		t->kbuf_cap + (size_t) t->rowgroup_cap * sizeof(int64_t) + t->hll_bytes;
}

/* xpu_agg_table_finish: see xpu_agg.h; 0 (err set) when memory runs out */
int
xpu_agg_table_finish(XpuAggTable *t, XpuError *err)
{
	for (int a = 0; a < t->n_aggs; a++)
		if (t->aggs[a].kind == XPU_AGG_HLL)
			for (int64_t g = 0; g < t->ngroups; g++)
			{
				HllSet	   *h = HLL_SET(&t->states[g * t->n_aggs + a]);

				if (h != NULL && !hll_normalize(t, h, err))
					return 0;
			}
	return 1;
}

uint32_t
xpu_agg_extra_export(int kind, const XpuAggState *s, const uint8_t **data, int *dense)
{
	const HllSet *h = HLL_SET(s);

	*data = NULL;
	*dense = 0;
	if (s->v.i == 0)
		return 0;
	if (kind != XPU_AGG_HLL)
	{
		*data = (const uint8_t *) TEXT_COPY(s)->data;
		return TEXT_COPY(s)->len;
	}
	*dense = h->dense;
	*data = h->dense ? h->regs : (const uint8_t *) h->hashes;
	return h->dense ? UINT32_C(1) << h->p : h->n * (uint32_t) sizeof(uint64_t);
}

void
xpu_agg_state_init(XpuAggState *s, XpuAggKind kind)
{
	xpu_agg_init(s, kind);
}

void
xpu_agg_state_combine(XpuAggState *dst, const XpuAggState *src, XpuAggKind kind,
					  XpuType type)
{
	xpu_agg_combine(dst, src, kind, type);
}

size_t
xpu_agg_key_encode(const XpuProgram *prog, const XpuAggSpec *spec,
				   const XpuResult *res, int64_t row, uint8_t *buf, size_t cap)
{
	size_t		len = 0;
	int			k;

	for (k = 0; k < spec->n_keys; k++)
	{
		int			type = out_type(prog, spec->key_outs[k]);
		int64_t		o = spec->key_outs[k] * res->nrows + row;
		size_t		l = xpu_agg_key_value_len(type, &res->values[o], res->nulls[o]);

		if (len + l <= cap)
			xpu_agg_key_value_put(buf + len, type, &res->values[o], res->nulls[o]);
		len += l;
	}
	return len;
}
