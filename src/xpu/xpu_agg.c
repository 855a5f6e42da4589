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
 * hashes; no key is hashed twice.  Arrays of 2 MiB or more are mappings
 * with huge pages (arr_resize).
 *
 * An update works on a whole XpuResult: first every passing row finds its
 * group, then each aggregate runs one tight loop over the rows.  A row's
 * key is not encoded to be found: a block of rows at a time, each key
 * column gives every row a fixed-size print of its value (KeyPrint) and
 * adds it to the row's hash (short texts without a branch on their length:
 * print_text_rows); the probe then compares the prints with those each
 * group keeps (the bytes of texts longer than 16 where the prints agree),
 * with the slots and groups of rows further on prefetched, since a table
 * of many groups is larger than the caches; a row whose key is the row
 * before's takes its group, and where each key column has few values
 * their numbers in small dictionaries name the group without a hash or a
 * probe (KeyDict).  Only a new group's key bytes are encoded.  A group folded in from key bytes (fold) is hashed and
 * printed from them, with the same results (read_encoded); a merge takes
 * the hash and prints the source table keeps, and may take one partition
 * of the hashes only (xpu_agg_table_merge_part), so that threads can merge
 * the same tables at once.  A table with a spill limit moves its groups
 * into buffers by partition once it holds that many, and goes on from an
 * empty hash (spill_groups: partitioned aggregation, xpu_agg.h).  A
 * table without keys has exactly one group from its creation (the one row
 * of a query without GROUP BY, even over no rows) and skips the lookup.
 *
 * HLL states point to a set of their own: pg_warp's sketch
 * (xpu_hll_sketch.h), the distinct hashes while they are few, 2^p
 * registers once more than XPU_HLL_EXPLICIT_LIMIT(p) are distinct; their
 * bytes count against the aggregate's limit.  MIN_TEXT and
 * MAX_TEXT states point to a copy of their text (TextCopy).
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xpu_agg_ops.h"
#include "xpu_hll_sketch.h"

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

	/* the bytes of each array of the groups (arr_resize) */
	size_t		ghash_bytes,
				koff_bytes,
				klen_bytes,
				states_bytes,
				gprint_bytes;

	/* slots: (hash >> 32) << 32 | (group + 1), 0 = empty */
	uint64_t   *slots;
	uint64_t	mask;			/* slot count - 1 */

	/* HLL sets: bytes held, and the most the table may hold (0: no HLL) */
	size_t		hll_bytes;
	size_t		hll_max;

	/*
	 * Spilling (xpu_agg_table_set_spill): the groups from which an update
	 * moves every group into spill[] (0: never), and the groups moved so
	 * far, by partition of their hash (tables without slots; NULL: none)
	 */
	int64_t		spill_limit;
	struct XpuAggTable **spill; /* [XPU_AGG_PARTS] */
	int			spilled_groups; /* this is a buffer of spill[] */

	/*
	 * The few-values shortcut of find_groups (KeyDict): 0 not tried yet, 1
	 * on, -1 off for good; per key column the values met (dict[n_keys]),
	 * and the group of each combination of their numbers (combo), and how
	 * many blocks in a row missed it
	 */
	int			dict_on;
	struct KeyDict *dict;
	int32_t    *combo;
	int			dict_misses;
	int64_t		dict_hits;		/* blocks it found (xpu_agg_table_shortcut) */

	/*
	 * grouping on dictionary indices (xpu_agg_index.h): the group of each
	 * combination of the keys' indices (-1: not known yet) for the
	 * dictionary versions and lengths ix_version / ix_len; ix_off: never
	 */
	int32_t    *ix_map;			/* [ix_cap] */
	int64_t		ix_cap;
	int64_t		ix_combos;
	uint64_t	ix_version[2];
	int64_t		ix_len[2];
	int			ix_valid;
	int			ix_off;

	/* each group's key prints (KeyPrint), n_keys a group */
	struct KeyPrint *gprint;	/* [gcap * n_keys] */

	/* scratch of an update: a row's key, a block's key prints, each row's group */
	struct KeyPrint *rprint;	/* [KEY_BLOCK * n_keys] */
	uint8_t    *kbuf;
	size_t		kbuf_cap;
	int64_t    *rowgroup;
	int64_t		rowgroup_cap;
};

/*
 * KeyPrint: one key value in fixed size, so that a row's key is compared
 * with a group's without a loop over bytes or a branch per length: tag
 * KEY_TAG_NULL for NULL, a text's length, else 0; w0 and w1 the value's
 * words (a text of up to 8 bytes its zero-padded word and 0, a longer one
 * its first and last 8 bytes; numeric its halves; other types their
 * canonical word and 0).  Values of up to 16 bytes are equal when their
 * prints are; longer texts when their bytes are too.  print_rows makes
 * them from a block's rows, read_encoded from key bytes.
 */
typedef struct KeyPrint
{
	uint64_t	w0;
	uint64_t	w1;
	uint32_t	tag;
	uint32_t	pad;
} KeyPrint;

#define KEY_TAG_NULL	UINT32_MAX
#define KEY_TAG_BAD		(UINT32_MAX - 1)	/* key bytes of no key of the table */

static int	kbuf_reserve(XpuAggTable *t, size_t need, XpuError *err);
static size_t dict_combos(const XpuAggTable *t);
static uint64_t read_encoded(const XpuAggTable *t, const uint8_t *key, uint32_t len,
							 KeyPrint *print);

/* ---------------------------------------------------------------- HLL sets */

/* an HLL state's set (the file header): a sketch of xpu_hll_sketch.h */
#define HLL_SET(s)	((HllSketch *) (uintptr_t) (s)->v.i)

/* the sets' memory (HllResizeFn): malloc, realloc, free; NULL: out of memory */
static void *
hll_resize(void *arg, void *ptr, size_t size)
{
	if (size == 0)
	{
		free(ptr);
		return NULL;
	}
	return realloc(ptr, size);
}

/*
 * hll_done: after an operation on set h, which held `before` bytes
 * (hll_memory) and returned ok: the change counted against the table's
 * limit; 0 with err set when it ran out of memory or (FALLBACK) the sets
 * passed the limit
 */
static int
hll_done(XpuAggTable *t, const HllSketch *h, size_t before, int ok, XpuError *err)
{
	t->hll_bytes = t->hll_bytes - before + hll_memory(h);
	if (!ok)
		return OOM(err), 0;
	if (t->hll_bytes > t->hll_max)
	{
		XPU_ERROR(err, XPU_ERR_FALLBACK,
				  "HyperLogLog sketches of the groups need more memory than allowed");
		return 0;
	}
	return 1;
}

/* the set of HLL state s (precision p), made when s has none */
static HllSketch *
hll_set_of(XpuAggTable *t, XpuAggState *s, int p, XpuError *err)
{
	HllSketch  *h = HLL_SET(s);

	if (h != NULL)
		return h;
	t->hll_bytes += sizeof(HllSketch);
	if ((h = calloc(1, sizeof(HllSketch))) == NULL)
		return OOM(err), NULL;
	if (!hll_done(t, h, 0, 1, err))
	{
		free(h);
		return NULL;
	}
	hll_init(h, p, hll_resize, NULL);
	s->v.i = (int64_t) (uintptr_t) h;
	return h;
}

static void
hll_set_free(HllSketch *h)
{
	if (h == NULL)
		return;
	hll_free(h);
	free(h);
}

/* adds one hash to set h */
static int
hll_set_add(XpuAggTable *t, HllSketch *h, uint64_t hash, XpuError *err)
{
	size_t		before = hll_memory(h);

	return hll_done(t, h, before, hll_add_hash(h, hash), err);
}

/*
 * hll_set_merge: folds into set h the set src, or (src NULL) the 2^p
 * registers regs, or (both NULL) nothing: h is made its final form
 * (hll_normalize)
 */
static int
hll_set_merge(XpuAggTable *t, HllSketch *h, const HllSketch *src, const uint8_t *regs,
			  XpuError *err)
{
	size_t		before = hll_memory(h);
	int			ok = src != NULL ? hll_merge(h, src) :
		regs != NULL ? hll_merge_registers(h, h->p, regs) : hll_normalize(h);

	return hll_done(t, h, before, ok, err);
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
		HllSketch  *h;

		if ((rg ? rg[r] < 0 : (res->mask && !res->mask[r])) || nl[r])
			continue;
		s = &t->states[(rg ? rg[r] : 0) * t->n_aggs + a];
		if ((h = hll_set_of(t, s, d->param, err)) == NULL ||
			!hll_set_add(t, h, xpu_agg_hll_hash(type, &v[r]), err))
			return 0;
		s->count++;
	}
	return 1;
}

/* ---------------------------------------------------------------- groups */

/*
 * The arrays of a table (groups, key bytes, slots) of BIG_ARRAY bytes or
 * more are mappings of their own, with transparent huge pages asked for:
 * a table of many groups is read at random, and with 4 KiB pages nearly
 * every probe of one larger than the caches also missed the TLB (and
 * walked page tables that missed the caches too); a mapping grows by
 * mremap, which moves pages rather than copying bytes.  Smaller arrays
 * come from malloc, and so do all arrays of spilled groups (written and
 * read in order, and sized as they come: huge pages would mostly be zeroed
 * for nothing).  arr_resize: the array p of old bytes made size bytes
 * (p NULL, old 0: a new one), its first old bytes kept (zero when zero is
 * set: the new bytes are zero); NULL when memory runs out (p unchanged).
 */
#define BIG_ARRAY	((size_t) 2 << 20)

static size_t
big_size(size_t size)
{
	return (size + BIG_ARRAY - 1) & ~(BIG_ARRAY - 1);
}

static void *
arr_resize(const XpuAggTable *t, void *p, size_t old, size_t size, int zero)
{
	void	   *q;

	if (size < BIG_ARRAY || t->spilled_groups)
	{
		if (!zero)
			return realloc(p, size);
		if ((q = calloc(1, size)) != NULL && old > 0)
			memcpy(q, p, old);
		if (q != NULL)
			free(p);
		return q;
	}
	if (old >= BIG_ARRAY)
		q = mremap(p, big_size(old), big_size(size), MREMAP_MAYMOVE);
	else
		q = mmap(NULL, big_size(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				 -1, 0);
	if (q == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	(void) madvise(q, big_size(size), MADV_HUGEPAGE);
#endif
	if (old > 0 && old < BIG_ARRAY)
	{
		memcpy(q, p, old);
		free(p);
	}
	return q;
}

/* frees array p of size bytes (arr_resize's) */
static void
arr_free(const XpuAggTable *t, void *p, size_t size)
{
	if (p == NULL)
		return;
	if (size < BIG_ARRAY || t->spilled_groups)
		free(p);
	else
		munmap(p, big_size(size));
}

/* makes room for need groups in all */
static int
groups_reserve(XpuAggTable *t, int64_t need, XpuError *err)
{
	int64_t		cap;
	void	   *p;

	if (need <= t->gcap)
		return 1;
	cap = t->gcap ? t->gcap * 2 : 64;
	while (cap < need)
		cap *= 2;
	if (cap > (int64_t) UINT32_MAX - 1)
		cap = (int64_t) UINT32_MAX - 1;
	if (need > cap)
	{
		XPU_ERROR(err, XPU_ERR_INTERNAL, "too many groups");
		return 0;
	}
	/*
	 * each array resized and its size kept as it succeeds (groups_free: one
	 * that failed leaves the others larger), then gcap
	 */
#define GROW(field, unit) \
	if ((p = arr_resize(t, t->field, t->field##_bytes, cap * (unit), 0)) == NULL) \
		return OOM(err), 0; \
	t->field = p; \
	t->field##_bytes = cap * (unit)
	GROW(ghash, sizeof(uint64_t));
	GROW(koff, sizeof(int64_t));
	GROW(klen, sizeof(uint32_t));
	GROW(states, (t->n_aggs ? t->n_aggs : 1) * sizeof(XpuAggState));
	GROW(gprint, (t->n_keys ? t->n_keys : 1) * sizeof(KeyPrint));
#undef GROW
	t->gcap = cap;
	return 1;
}

/* frees the arrays of t's groups, keys and slots */
static void
groups_free(XpuAggTable *t)
{
	arr_free(t, t->ghash, t->ghash_bytes);
	arr_free(t, t->koff, t->koff_bytes);
	arr_free(t, t->klen, t->klen_bytes);
	arr_free(t, t->states, t->states_bytes);
	arr_free(t, t->gprint, t->gprint_bytes);
	arr_free(t, t->keys, t->keys_cap);
	if (t->slots != NULL)
		arr_free(t, t->slots, (t->mask + 1) * sizeof(uint64_t));
}

/* makes room for need more bytes of keys in the arena */
static int
keys_reserve(XpuAggTable *t, int64_t need, XpuError *err)
{
	int64_t		cap = t->keys_cap ? t->keys_cap : 4096;
	uint8_t    *p;

	if (t->keys_len + need <= t->keys_cap)
		return 1;
	while (cap < t->keys_len + need)
		cap *= 2;
	if ((p = arr_resize(t, t->keys, t->keys_cap, cap, 0)) == NULL)
		return OOM(err), 0;
	t->keys = p;
	t->keys_cap = cap;
	return 1;
}

/* doubles the slot array (or makes the first) and re-inserts every group */
static int
slots_grow(XpuAggTable *t, XpuError *err)
{
	uint64_t	n = t->slots ? (t->mask + 1) * 2 : 256;
	uint64_t   *s = arr_resize(t, NULL, 0, n * sizeof(uint64_t), 1);
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
	if (t->slots != NULL)
		arr_free(t, t->slots, (t->mask + 1) * sizeof(uint64_t));
	t->slots = s;
	t->mask = n - 1;
	return 1;
}

/*
 * appends a group of key bytes key[len] with hash h and key prints print;
 * returns it or -1
 */
static int64_t
group_add(XpuAggTable *t, const uint8_t *key, uint32_t len, uint64_t h,
		  const KeyPrint *print, XpuError *err)
{
	int64_t		g = t->ngroups;
	int			a;

	if (!groups_reserve(t, g + 1, err) || !keys_reserve(t, len, err))
		return -1;
	if (len > 0)
		memcpy(t->keys + t->keys_len, key, len);
	t->koff[g] = t->keys_len;
	t->klen[g] = len;
	t->keys_len += len;
	t->ghash[g] = h;
	memcpy(t->gprint + g * t->n_keys, print, t->n_keys * sizeof(KeyPrint));
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
 * group_insert: a new group of key bytes key[len] with hash h and key
 * prints print, listed in empty slot i (the end of its probe); -1 (err
 * set) when memory runs out
 */
static int64_t
group_insert(XpuAggTable *t, uint64_t i, const uint8_t *key, uint32_t len, uint64_t h,
			 const KeyPrint *print, XpuError *err)
{
	int64_t		g;

	if ((g = group_add(t, key, len, h, print, err)) < 0)
		return -1;
	t->slots[i] = (h & ~(uint64_t) UINT32_MAX) | (uint64_t) (g + 1);
	if ((uint64_t) t->ngroups * 2 > t->mask + 1 && !slots_grow(t, err))
		return -1;
	return g;
}

/*
 * probe_next: the next group on the probe for hash h from slot *i whose
 * slot holds h's upper 32 bits (*i then the slot after it), or -1 at the
 * empty slot that ends the probe (*i that slot, where a new group goes)
 */
static inline int64_t
probe_next(const XpuAggTable *t, uint64_t *i, uint64_t h)
{
	uint64_t	tag = h & ~(uint64_t) UINT32_MAX;

	for (;;)
	{
		uint64_t	s = t->slots[*i];

		if (s == 0)
			return -1;
		*i = (*i + 1) & t->mask;
		if ((s & ~(uint64_t) UINT32_MAX) == tag)
			return (int64_t) (s & UINT32_MAX) - 1;
	}
}

/* are the nk key prints a and b equal (values of up to 16 bytes: are the keys) */
static inline int
prints_equal(const KeyPrint *a, const KeyPrint *b, int nk)
{
	int			eq = 1;

	for (int k = 0; k < nk; k++)
		eq &= (a[k].tag == b[k].tag) & (a[k].w0 == b[k].w0) & (a[k].w1 == b[k].w1);
	return eq;
}

/*
 * print_needs_bytes: must a key of prints p be compared by its bytes too:
 * it has a text longer than 16 bytes, or it is no key of the table
 * (KEY_TAG_BAD, read_encoded)
 */
static inline int
print_needs_bytes(const XpuAggTable *t, const KeyPrint *p)
{
	for (int k = 0; k < t->n_keys; k++)
		if (p[k].tag > 16 && p[k].tag != KEY_TAG_NULL &&
			(t->key_types[k] == XPU_T_TEXT || p[k].tag == KEY_TAG_BAD))
			return 1;
	return 0;
}

/*
 * group_find: the group of key bytes key[len] with hash h and prints print
 * (read_encoded), added when it is new; -1 (err set) when memory runs out.
 * The prints are compared, the bytes too where print_needs_bytes.
 */
#ifdef __GNUC__
__attribute__((always_inline))
#endif
static inline int64_t
group_find(XpuAggTable *t, const uint8_t *key, uint32_t len, uint64_t h,
		   const KeyPrint *print, XpuError *err)
{
	const int	nk = t->n_keys;
	uint64_t	i = h & t->mask;
	int64_t		g;
	int			bytes = print_needs_bytes(t, print);

	while ((g = probe_next(t, &i, h)) >= 0)
	{
		if (prints_equal(t->gprint + g * nk, print, nk) && (!bytes ||
				   (t->klen[g] == len && keys_equal(t->keys + t->koff[g], key, len))))
			return g;
	}
	return group_insert(t, i, key, len, h, print, err);
}

/* ---------------------------------------------------------------- spilling */

/* the partition (0 .. nparts - 1) of a group of key hash h */
static inline int
hash_part(uint64_t h, int nparts)
{
	return (int) (((h >> 32) * (uint64_t) nparts) >> 32);
}

/* an empty table without slots for t's groups (a partition of t->spill), or NULL */
static XpuAggTable *
spill_buffer(const XpuAggTable *t)
{
	XpuAggTable *b = calloc(1, sizeof(XpuAggTable));

	if (b == NULL)
		return NULL;
	b->spilled_groups = 1;
	b->n_keys = t->n_keys;
	b->n_aggs = t->n_aggs;
	memcpy(b->key_outs, t->key_outs, sizeof(t->key_outs));
	memcpy(b->key_types, t->key_types, sizeof(t->key_types));
	memcpy(b->aggs, t->aggs, sizeof(t->aggs));
	memcpy(b->arg_types, t->arg_types, sizeof(t->arg_types));
	return b;
}

/*
 * spill_groups: moves every group of t (hash, key, prints and states, the
 * copies of MIN_TEXT / MAX_TEXT states with them) to the end of the buffer
 * of its partition in t->spill, and empties t's hash; 0 (err set, nothing
 * moved) when memory runs out.  Room is made in every buffer first, so
 * that no group is ever in two tables.
 */
static int
spill_groups(XpuAggTable *t, XpuError *err)
{
	int64_t		count[XPU_AGG_PARTS] = {0},
				bytes[XPU_AGG_PARTS] = {0};
	const int	nk = t->n_keys,
				na = t->n_aggs;
	int64_t		g;
	int			p;

	if (t->spill == NULL && (t->spill = calloc(XPU_AGG_PARTS, sizeof(XpuAggTable *))) == NULL)
		return OOM(err), 0;
	for (g = 0; g < t->ngroups; g++)
	{
		p = hash_part(t->ghash[g], XPU_AGG_PARTS);
		count[p]++;
		bytes[p] += t->klen[g];
	}
	for (p = 0; p < XPU_AGG_PARTS; p++)
	{
		XpuAggTable *b = t->spill[p];

		if (count[p] == 0)
			continue;
		if (b == NULL && (b = t->spill[p] = spill_buffer(t)) == NULL)
			return OOM(err), 0;
		if (!groups_reserve(b, b->ngroups + count[p], err) || !keys_reserve(b, bytes[p], err))
			return 0;
	}
	for (g = 0; g < t->ngroups; g++)
	{
		XpuAggTable *b = t->spill[hash_part(t->ghash[g], XPU_AGG_PARTS)];
		int64_t		bg = b->ngroups++;
		uint32_t	len = t->klen[g];

		b->ghash[bg] = t->ghash[g];
		b->koff[bg] = b->keys_len;
		b->klen[bg] = len;
		/* element by element: a library call per group cost more than the copies */
		for (uint32_t i = 0; i < len; i++)
			b->keys[b->keys_len + i] = t->keys[t->koff[g] + i];
		b->keys_len += len;
		for (int k = 0; k < nk; k++)
			b->gprint[bg * nk + k] = t->gprint[g * nk + k];
		for (int a = 0; a < na; a++)
			b->states[bg * na + a] = t->states[g * na + a];
	}
	t->ngroups = 0;
	t->keys_len = 0;
	memset(t->slots, 0, (t->mask + 1) * sizeof(uint64_t));
	if (t->combo != NULL)
		memset(t->combo, 0xFF, dict_combos(t) * sizeof(int32_t));
	t->ix_valid = 0;			/* the groups the index map names are gone */
	return 1;
}

/* can t spill: it has keys, and no HLL aggregate (whose limit holds for one table) */
static int
spillable(const XpuAggTable *t)
{
	for (int a = 0; a < t->n_aggs; a++)
		if (t->aggs[a].kind == XPU_AGG_HLL)
			return 0;
	return t->n_keys > 0;
}

void
xpu_agg_table_set_spill(XpuAggTable *t, int64_t limit)
{
	if (spillable(t))
		t->spill_limit = limit;
}

int
xpu_agg_table_spill(XpuAggTable *t, XpuError *err)
{
	return !spillable(t) || spill_groups(t, err);
}

int
xpu_agg_table_reserve(XpuAggTable *t, int64_t groups, XpuError *err)
{
	if (!groups_reserve(t, groups, err))
		return 0;
	while ((uint64_t) groups * 2 > t->mask + 1)
		if (!slots_grow(t, err))
			return 0;
	return 1;
}

int
xpu_agg_table_spilled(const XpuAggTable *t)
{
	return t->spill != NULL;
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
	KeyPrint	none = {0};
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
	if (t->n_keys > 0 &&
		(t->rprint = malloc(KEY_BLOCK * t->n_keys * sizeof(KeyPrint))) == NULL)
	{
		xpu_agg_table_free(t);
		return OOM(err), NULL;
	}
	if (!slots_grow(t, err) || !kbuf_reserve(t, XPU_AGG_MAX_KEYS * 17, err) ||
		(t->n_keys == 0 && group_find(t, NULL, 0, read_encoded(t, NULL, 0, NULL), &none, err) < 0))
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
	for (int p = 0; t->spill != NULL && p < XPU_AGG_PARTS; p++)
		xpu_agg_table_free(t->spill[p]);
	free(t->spill);
	free(t->dict);
	free(t->combo);
	free(t->ix_map);
	groups_free(t);
	free(t->kbuf);
	free(t->rprint);
	free(t->rowgroup);
	free(t);
}

/*
 * The hash of a group key.  Each key value adds one word to an
 * xpu_agg_hash_step chain (xpu_agg_ops.h), then xpu_agg_hash_end: a NULL
 * KEY_NULL_WORD; a numeric its two halves; any other non-text type its
 * canonical 8 bytes (floats canonical: xpu_agg_key_value_put); a text a mix
 * of its print (text_mix: three independent products, not a chain of
 * steps) and, when it is longer than 16 bytes, the hash of all its bytes.
 * print_rows computes it from a row's values, read_encoded from key bytes
 * (xpu_agg.h), so that a group folded in from outside (merge, fold) meets
 * the rows of the same key.
 *
 * The print of a text of up to 16 bytes is its bytes zero-padded: w0 bytes
 * 0..7, w1 bytes 8..15; of a longer one its first and its last 8 bytes.
 * No load reaches past the bytes of a value, or of the values of other
 * rows that follow it in memory (print_text_rows).
 */
#define KEY_NULL_WORD	UINT64_C(0x8F1BBCDCCA62C1D6)
#define KEY_TEXT_WORD	UINT64_C(0x6ED9EBA1)
#define TEXT_MIX_W0		UINT64_C(0x9E3779B97F4A7C15)
#define TEXT_MIX_W1		UINT64_C(0xC2B2AE3D27D4EB4F)
#define TEXT_MIX_LEN	UINT64_C(0x165667B19E3779F9)

/*
 * the masks of the bytes of a text of len (<= 16) bytes in the two words
 * of 8 bytes loaded from its start: [len][0] for bytes 0..7, [len][1] for
 * bytes 8..15
 */
static const uint64_t text_masks[17][2] = {
	{0, 0},
	{UINT64_C(0xFF), 0},
	{UINT64_C(0xFFFF), 0},
	{UINT64_C(0xFFFFFF), 0},
	{UINT64_C(0xFFFFFFFF), 0},
	{UINT64_C(0xFFFFFFFFFF), 0},
	{UINT64_C(0xFFFFFFFFFFFF), 0},
	{UINT64_C(0xFFFFFFFFFFFFFF), 0},
	{UINT64_MAX, 0},
	{UINT64_MAX, UINT64_C(0xFF)},
	{UINT64_MAX, UINT64_C(0xFFFF)},
	{UINT64_MAX, UINT64_C(0xFFFFFF)},
	{UINT64_MAX, UINT64_C(0xFFFFFFFF)},
	{UINT64_MAX, UINT64_C(0xFFFFFFFFFF)},
	{UINT64_MAX, UINT64_C(0xFFFFFFFFFFFF)},
	{UINT64_MAX, UINT64_C(0xFFFFFFFFFFFFFF)},
	{UINT64_MAX, UINT64_MAX},
};

/* the len (<= 8) bytes at p as a zero-padded little-endian word */
static inline uint64_t
text_word(const uint8_t *p, uint32_t len)
{
	uint64_t	w;
	uint32_t	lo, hi;

	if (len >= 8)
	{
		memcpy(&w, p, 8);
		return w;
	}
	if (len >= 4)
	{
		memcpy(&lo, p, 4);
		memcpy(&hi, p + len - 4, 4);
		return lo | (uint64_t) hi << (8 * (len - 4));
	}
	if (len == 0)
		return 0;
	return p[0] | (uint64_t) p[len / 2] << (8 * (len / 2)) |
		(uint64_t) p[len - 1] << (8 * (len - 1));
}

/* the hash of all len bytes of a text at p (one longer than 16 bytes) */
static inline uint64_t
text_bytes_hash(const uint8_t *p, uint32_t len)
{
	uint64_t	h = xpu_agg_hash_start(len),
				w;
	uint32_t	i;

	for (i = 0; i + 8 < len; i += 8)
	{
		memcpy(&w, p + i, 8);
		h = xpu_agg_hash_step(h, w);
	}
	memcpy(&w, p + len - 8, 8);
	return xpu_agg_hash_step(h, w);
}

/* the word a text of print (len, w0, w1) adds to its key's hash (but the
 * bytes of one longer than 16) */
static inline uint64_t
text_mix(uint32_t len, uint64_t w0, uint64_t w1)
{
	return (w0 * TEXT_MIX_W0) ^ (w1 * TEXT_MIX_W1) ^ (((uint64_t) len | KEY_TEXT_WORD << 32) * TEXT_MIX_LEN);
}

/*
 * text_print: the print of the len bytes of a text at p into *kp, loading
 * none but them; returns the word it adds to its key's hash
 */
static inline uint64_t
text_print(const uint8_t *p, uint32_t len, KeyPrint *kp)
{
	kp->tag = len;
	if (len > 16)
	{
		memcpy(&kp->w0, p, 8);
		memcpy(&kp->w1, p + len - 8, 8);
		return text_mix(len, kp->w0, kp->w1) ^ text_bytes_hash(p, len);
	}
	kp->w0 = text_word(p, len < 8 ? len : 8);
	kp->w1 = len > 8 ? text_word(p + 8, len - 8) : 0;
	return text_mix(len, kp->w0, kp->w1);
}

/* the canonical 8 bytes of a non-NULL key value of an 8-byte form */
static inline uint64_t
key_word(int type, const XpuValue *v)
{
	double		d;
	uint64_t	w;

	if (type != XPU_T_FLOAT4 && type != XPU_T_FLOAT8)
		return (uint64_t) v->i;
	d = xpu_agg_canon_f8(xpu_agg_as_f8(v, type));
	memcpy(&w, &d, 8);
	return w;
}

/*
 * read_encoded: the key hash of key bytes key[len] (made by encode_row) of
 * t's key types, and, when print is not NULL, their prints into
 * print[n_keys]; bytes that are no key of the table (never made by the
 * engine) get a hash and a print that no row's key has
 */
static uint64_t
read_encoded(const XpuAggTable *t, const uint8_t *key, uint32_t len, KeyPrint *print)
{
	uint64_t	h = xpu_agg_hash_start(0);
	uint32_t	pos = 0, tl;
	KeyPrint	one;
	int			k;

	if (print != NULL)
		memset(print, 0, t->n_keys * sizeof(KeyPrint));
	for (k = 0; k < t->n_keys; k++)
	{
		int			type = t->key_types[k];
		uint32_t	need = type == XPU_T_TEXT ? 4 : type == XPU_T_NUMERIC ? 16 : 8;
		KeyPrint   *p = print != NULL ? &print[k] : &one;

		if (pos >= len)
			break;
		if (key[pos++] == 0)
		{
			p->tag = KEY_TAG_NULL;
			h = xpu_agg_hash_step(h, KEY_NULL_WORD);
			continue;
		}
		if (len - pos < need)
			break;
		p->w0 = p->w1 = 0;
		if (type != XPU_T_TEXT)
		{
			memcpy(&p->w0, key + pos, 8);
			h = xpu_agg_hash_step(h, p->w0);
			if (type == XPU_T_NUMERIC)
			{
				memcpy(&p->w1, key + pos + 8, 8);
				h = xpu_agg_hash_step(h, p->w1);
			}
			pos += need;
			continue;
		}
		memcpy(&tl, key + pos, 4);
		pos += 4;
		if (tl > len - pos)
			break;
		h = xpu_agg_hash_step(h, text_print(key + pos, tl, p));
		pos += tl;
	}
	if (k == t->n_keys && pos == len)
		return xpu_agg_hash_end(h);
	if (print != NULL && t->n_keys > 0)
		print[0].tag = KEY_TAG_BAD;
	return xpu_agg_hash_end(h ^ 1);
}

/*
 * print_text_rows: the prints of text key column v/nl for the n rows
 * rows[] of a block into rp[j * nk] and their words into the hashes h[],
 * long[j] set where a text is longer than 16 bytes.
 *
 * A text of up to 16 bytes is printed from the two words of 8 bytes at its
 * start, masked to its length (no branch on the length: texts of random
 * lengths would mispredict), where those 16 bytes are known to be
 * readable: the texts of the rows that follow it in the block continue it
 * in memory (as the values of an Arrow column do) at least that far.  The
 * rows are walked from the last, so that each row knows where the run of
 * texts that it starts ends.  Other texts are printed byte-safely
 * (text_print).
 */
static void
print_text_rows(const XpuValue *v, const uint8_t *nl, const int64_t *rows, int n, int nk,
				KeyPrint *rp, uint64_t *h, uint8_t *lng)
{
	uintptr_t	next_p = 0,		/* the text of row j + 1 starts here */
				run_end = 0;	/* ... and its run of adjacent texts ends here */

	for (int j = n - 1; j >= 0; j--)
	{
		KeyPrint   *p = &rp[j * nk];
		const uint8_t *s;
		uint32_t	len;

		if (nl[rows[j]])
		{
			p->tag = KEY_TAG_NULL;
			p->w0 = p->w1 = 0;
			if (h != NULL)
				h[j] = xpu_agg_hash_step(h[j], KEY_NULL_WORD);
			next_p = 0;
			continue;
		}
		s = (const uint8_t *) v[rows[j]].t.p;
		len = (uint32_t) v[rows[j]].t.len;
		if ((uintptr_t) s + len != next_p)
			run_end = (uintptr_t) s + len;
		next_p = (uintptr_t) s;
		if (len <= 16 && (uintptr_t) s + 16 <= run_end)
		{
			uint64_t	w0, w1;

			memcpy(&w0, s, 8);
			memcpy(&w1, s + 8, 8);
			p->tag = len;
			p->w0 = w0 & text_masks[len][0];
			p->w1 = w1 & text_masks[len][1];
			if (h != NULL)
				h[j] = xpu_agg_hash_step(h[j], text_mix(len, p->w0, p->w1));
			continue;
		}
		if (h != NULL)
			h[j] = xpu_agg_hash_step(h[j], text_print(s, len, p));
		else
			(void) text_print(s, len, p);
		lng[j] |= len > 16;
	}
}

/*
 * print_rows: the key prints of the n rows rows[] of res into t->rprint
 * (row j's at j * n_keys) and their key hashes into h[] (read_encoded's
 * value for their key bytes; h NULL: the prints alone), a key column at a
 * time; long[j] set where row j has a text key longer than 16 bytes
 */
static void
print_rows(XpuAggTable *t, const XpuResult *res, const int64_t *rows, int n, uint64_t *h,
		   uint8_t *lng)
{
	const int	nk = t->n_keys;
	int			j;

	for (j = 0; j < n; j++)
	{
		if (h != NULL)
			h[j] = xpu_agg_hash_start(0);
		lng[j] = 0;
	}
	for (int k = 0; k < nk; k++)
	{
		int			type = t->key_types[k];
		const XpuValue *v = res->values + t->key_outs[k] * res->nrows;
		const uint8_t *nl = res->nulls + t->key_outs[k] * res->nrows;
		KeyPrint   *rp = t->rprint + k;

		if (type == XPU_T_TEXT)
		{
			print_text_rows(v, nl, rows, n, nk, rp, h, lng);
			continue;
		}
		for (j = 0; j < n; j++)
		{
			KeyPrint   *p = &rp[j * nk];
			int64_t		r = rows[j];

			p->tag = nl[r] ? KEY_TAG_NULL : 0;
			p->w0 = p->w1 = 0;
			if (!nl[r] && type == XPU_T_NUMERIC)
				memcpy(&p->w0, &v[r].n, 16);
			else if (!nl[r])
				p->w0 = key_word(type, &v[r]);
			if (h == NULL)
				continue;
			if (nl[r])
				h[j] = xpu_agg_hash_step(h[j], KEY_NULL_WORD);
			else if (type == XPU_T_NUMERIC)
				h[j] = xpu_agg_hash_step(xpu_agg_hash_step(h[j], p->w0), p->w1);
			else
				h[j] = xpu_agg_hash_step(h[j], p->w0);
		}
	}
	for (j = 0; h != NULL && j < n; j++)
		h[j] = xpu_agg_hash_end(h[j]);
}

/*
 * long_texts_equal: are the text keys longer than 16 bytes of group g
 * byte for byte those of row r of res (their prints are equal already)
 */
static int
long_texts_equal(const XpuAggTable *t, int64_t g, const XpuResult *res, int64_t r)
{
	const uint8_t *key = t->keys + t->koff[g];
	uint32_t	pos = 0, tl;

	for (int k = 0; k < t->n_keys; k++)
	{
		int			type = t->key_types[k];

		if (key[pos++] == 0)
			continue;
		if (type != XPU_T_TEXT)
		{
			pos += type == XPU_T_NUMERIC ? 16 : 8;
			continue;
		}
		memcpy(&tl, key + pos, 4);
		pos += 4;
		if (tl > 16 &&
			!keys_equal(key + pos, (const uint8_t *) res->values[t->key_outs[k] * res->nrows + r].t.p, tl))
			return 0;
		pos += tl;
	}
	return 1;
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
 * encode_row: the key bytes of row `row` of res (xpu_agg.h) into t->kbuf,
 * grown to hold them; their length, 0 when memory ran out.  Only a new
 * group's key is encoded.
 */
static uint32_t
encode_row(XpuAggTable *t, const XpuResult *res, int64_t row, XpuError *err)
{
	size_t		need = 0;
	uint32_t	len = 0;
	int			k;

	for (k = 0; k < t->n_keys; k++)
	{
		int64_t		o = t->key_outs[k] * res->nrows + row;

		need += xpu_agg_key_value_len(t->key_types[k], &res->values[o], res->nulls[o]);
	}
	if (!kbuf_reserve(t, need, err))
		return 0;
	for (k = 0; k < t->n_keys; k++)
	{
		int64_t		o = t->key_outs[k] * res->nrows + row;

		len += xpu_agg_key_value_put(t->kbuf + len, t->key_types[k], &res->values[o],
									 res->nulls[o]);
	}
	return len;
}

/*
 * The loop of update_one_group and update_rows for one kind: the kind a
 * constant, its piece inlined.  LOOP_PASS(r): does row r go in;
 * LOOP_STATE(r): the state it updates (each function defines both).
 */
#define UPDATE_LOOP_CASE(NAME, ARG, ST, GPU, INIT, UPD, COMB, FIN) \
	case XPU_AGG_##NAME: \
		for (r = 0; r < n; r++) \
		{ \
			if (LOOP_PASS(r)) \
				xpu_agg_update_mode(LOOP_STATE(r), XPU_AGG_##NAME, type, \
									(ARG) == XPU_AGG_ARG_NONE ? NULL : &v[r], \
									(ARG) == XPU_AGG_ARG_NONE ? 0 : nl[r], XPU_AGG_PLAIN); \
		} \
		return;

/* the loop of kind, one of UPDATE_LOOP_CASE's */
#define UPDATE_LOOPS(kind) \
	switch (kind) \
	{ \
			XPU_AGG_KIND_TABLE(UPDATE_LOOP_CASE) \
		default: \
			break; \
	}

/*
 * update_one_group: the no-key table: aggregate a over the passing rows of
 * res, one loop per kind (xpu_agg_kinds.h).  count(*) and integer sums,
 * whose arithmetic is exact, first sum the rows in registers (an int128
 * cannot overflow over fewer than 2^63 int64 values), then fold that into
 * the state with the kind's primitives.
 */
static void
update_one_group(XpuAggTable *t, int a, const XpuResult *res)
{
	XpuAggState *restrict s = &t->states[a];
	const XpuAggDesc *d = &t->aggs[a];
	const uint8_t *restrict mask = res->mask;
	int64_t		n = res->nrows, r;
	const XpuValue *restrict v = res->values + (d->kind == XPU_AGG_COUNT_STAR ? 0 : d->out * n);
	const uint8_t *restrict nl = res->nulls + (d->kind == XPU_AGG_COUNT_STAR ? 0 : d->out * n);
	int			type = t->arg_types[a];
	__int128	sum = 0;
	int64_t		c = 0;

	if (d->kind == XPU_AGG_COUNT_STAR)
	{
		for (r = 0; r < n; r++)
			c += mask ? mask[r] != 0 : 1;
		xpu_agg_add_count(s, c, XPU_AGG_PLAIN);
		return;
	}
	if (d->kind == XPU_AGG_SUM_INT)
	{
		for (r = 0; r < n; r++)
		{
			int			take = (!mask || mask[r]) && !nl[r];

			sum += take ? v[r].i : 0;
			c += take;
		}
		xpu_agg_add_i128(s, sum, 0, XPU_AGG_PLAIN);
		xpu_agg_add_count(s, c, XPU_AGG_PLAIN);
		return;
	}
#define LOOP_PASS(r)	(!mask || mask[r])
#define LOOP_STATE(r)	s
	UPDATE_LOOPS(d->kind);
#undef LOOP_PASS
#undef LOOP_STATE
}

/*
 * update_rows: aggregate a over the rows of res whose group t->rowgroup
 * holds (-1: the row did not pass): one loop per kind (xpu_agg_kinds.h)
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

#define LOOP_PASS(r)	(rg[r] >= 0)
#define LOOP_STATE(r)	(&st[rg[r] * na])
	UPDATE_LOOPS(d->kind);
#undef LOOP_PASS
#undef LOOP_STATE
}

/*
 * row_group: the group of row r of res, whose key prints are rp and key
 * hash h (print_rows; lng: a text key is longer than 16 bytes), added when
 * it is new; -1 (err set) when memory runs out.  The prints are compared
 * with each candidate group's, the bytes of long texts where they are;
 * only a new group's key is encoded (into t->kbuf).
 */
static inline int64_t
row_group(XpuAggTable *t, const XpuResult *res, int64_t r, const KeyPrint *rp, uint64_t h,
		  int lng, XpuError *err)
{
	const int	nk = t->n_keys;
	uint64_t	i = h & t->mask;
	int64_t		g;
	uint32_t	len;

	while ((g = probe_next(t, &i, h)) >= 0)
	{
		if (prints_equal(t->gprint + g * nk, rp, nk) && (!lng || long_texts_equal(t, g, res, r)))
			return g;
	}
	if ((len = encode_row(t, res, r, err)) == 0)
		return -1;
	return group_insert(t, i, t->kbuf, len, h, rp, err);
}

/* the few-values shortcut (KeyDict): needs the table, the prints and print_rows above */
#include "xpu_agg_dict.h"

/*
 * Prefetch distances of find_groups, in rows: the slot of a row's hash
 * PREFETCH_SLOT rows ahead, and PREFETCH_GROUP rows ahead the key prints
 * and first states of the group its slot names (the slot arrived by then),
 * so that a table larger than the caches has many misses in flight
 * instead of one at a time
 */
#define PREFETCH_SLOT	16
#define PREFETCH_GROUP	8

/* prefetches the prints and states of the group in the first slot of hash h */
static inline void
prefetch_group(const XpuAggTable *t, uint64_t h)
{
	uint64_t	s = t->slots[h & t->mask];

	if (s != 0)
	{
		int64_t		g = (int64_t) (s & UINT32_MAX) - 1;

		__builtin_prefetch(t->gprint + g * t->n_keys);
		__builtin_prefetch(t->states + g * t->n_aggs);
	}
}

/* is every byte of mask[r0 .. end - 1] 1 (mask NULL: every row passes) */
static inline int
all_pass(const uint8_t *mask, int64_t r0, int64_t end)
{
	uint64_t	w,
				diff = 0;
	int64_t		r = r0;

	if (mask == NULL)
		return 1;
	for (; r + 8 <= end; r += 8)
	{
		memcpy(&w, mask + r, 8);
		diff |= w ^ UINT64_C(0x0101010101010101);
	}
	for (; r < end; r++)
		diff |= mask[r] ^ 1;
	return diff == 0;
}

/* grouping on dictionary indices: needs the same, row_group and all_pass */
#include "xpu_agg_index.h"

/*
 * find_groups: t->rowgroup[r] = the group of row r of res (added when new),
 * -1 for a row that did not pass; 0 (err set) when memory runs out.  A
 * block of rows at a time: the passing rows' key prints and hashes first,
 * a key column at a time, then each row's lookup.
 */
static int
find_groups(XpuAggTable *t, const XpuResult *res, XpuError *err)
{
	int64_t		n = res->nrows;
	int64_t		krow[KEY_BLOCK];
	uint64_t	kh[KEY_BLOCK];
	uint8_t		lng[KEY_BLOCK];
	const int	nk = t->n_keys;

	for (int64_t r0 = 0; r0 < n; r0 += KEY_BLOCK)
	{
		int64_t		end = n - r0 < KEY_BLOCK ? n : r0 + KEY_BLOCK;
		int			m = 0, j, h, nh;
		int			heads[KEY_BLOCK + 1];

		/*
		 * the passing rows, without a branch a row; rowgroup[r] = -1 where a
		 * row did not pass (a block whose every mask byte is 1 passes whole)
		 */
		if (all_pass(res->mask, r0, end))
			for (int64_t r = r0; r < end; r++)
				krow[m++] = r;
		else
			for (int64_t r = r0; r < end; r++)
			{
				int			pass = !res->mask || res->mask[r];

				t->rowgroup[r] = -1;
				krow[m] = r;
				m += pass;
			}
		if (t->dict_on == 0)
			dict_start(t);
		if (t->dict_on > 0)
		{
			if (dict_groups(t, res, krow, m))
			{
				t->dict_misses = 0;
				t->dict_hits++;
				continue;
			}
			if (++t->dict_misses > DICT_MISS_BLOCKS)
				t->dict_on = -1;
		}
		print_rows(t, res, krow, m, kh, lng);

		/*
		 * Runs: a row whose hash and prints are the row before's (no text
		 * longer than 16 bytes) has its group; the rows that start a run
		 * (heads, without a branch a row) are looked up, and the prefetch
		 * distances count heads
		 */
		heads[0] = 0;
		nh = m > 0;
		for (j = 1; j < m; j++)
		{
			heads[nh] = j;
			nh += (kh[j] != kh[j - 1]) | lng[j] |
				!prints_equal(t->rprint + j * nk, t->rprint + (j - 1) * nk, nk);
		}
		heads[nh] = m;
		for (h = 0; h < nh && h < PREFETCH_SLOT; h++)
			__builtin_prefetch(&t->slots[kh[heads[h]] & t->mask]);
		for (h = 0; h < nh; h++)
		{
			int64_t		g;

			j = heads[h];
			if (h + PREFETCH_SLOT < nh)
				__builtin_prefetch(&t->slots[kh[heads[h + PREFETCH_SLOT]] & t->mask]);
			if (h + PREFETCH_GROUP < nh)
				prefetch_group(t, kh[heads[h + PREFETCH_GROUP]]);
			if ((g = row_group(t, res, krow[j], t->rprint + j * nk, kh[j], lng[j], err)) < 0)
				return 0;
			for (; j < heads[h + 1]; j++)
				t->rowgroup[krow[j]] = g;
		}
		if (t->dict_on > 0)
			dict_learn(t, krow, m);
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
	return xpu_agg_table_update_dict(t, res, NULL, err);
}

/* see xpu_agg.h */
int
xpu_agg_table_update_dict(XpuAggTable *t, const XpuResult *res,
						  const XpuColumnData *const *dict_cols, XpuError *err)
{
	int64_t		n = res->nrows;
	int			a,
				rc;

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
	if ((rc = index_groups(t, res, dict_cols, err)) < 0 ||
		(rc == 0 && !find_groups(t, res, err)))
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
	return t->spill_limit == 0 || t->ngroups < t->spill_limit || spill_groups(t, err);
}

/* see xpu_agg.h */
int
xpu_agg_sink(void *arg, const XpuResult *res, XpuError *err)
{
	XpuAggSink *as = (XpuAggSink *) arg;

	for (int64_t r = 0; r < res->nrows; r++)
		as->rows += res->mask[r];
	return xpu_agg_table_update(as->table, res, err);
}

/* folds the states src of a group into dst group dg */
static int
combine_group(XpuAggTable *dst, int64_t dg, const XpuAggState *src, XpuError *err)
{
	int			a;

	for (a = 0; a < dst->n_aggs; a++)
	{
		XpuAggState *d = &dst->states[dg * dst->n_aggs + a];
		HllSketch  *h;
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
			!hll_set_merge(dst, h, HLL_SET(&src[a]), NULL, err))
			return 0;
	}
	return 1;
}

/*
 * merge_block: folds the n groups sgs[] of src into dst, with the slots and
 * groups of dst that they meet prefetched ahead (find_groups)
 */
static int
merge_block(XpuAggTable *dst, const XpuAggTable *src, const int64_t *sgs, int n, XpuError *err)
{
	int			j;

	for (j = 0; j < n && j < PREFETCH_SLOT; j++)
		__builtin_prefetch(&dst->slots[src->ghash[sgs[j]] & dst->mask]);
	for (j = 0; j < n; j++)
	{
		int64_t		sg = sgs[j],
					dg;

		if (j + PREFETCH_SLOT < n)
		{
			int64_t		ahead = sgs[j + PREFETCH_SLOT];

			/* the source's groups too: one partition of a table is every nparts-th */
			__builtin_prefetch(&dst->slots[src->ghash[ahead] & dst->mask]);
			__builtin_prefetch(src->gprint + ahead * src->n_keys);
			__builtin_prefetch(src->states + ahead * src->n_aggs);
		}
		if (j + PREFETCH_GROUP < n)
			prefetch_group(dst, src->ghash[sgs[j + PREFETCH_GROUP]]);
		dg = group_find(dst, src->keys + src->koff[sg], src->klen[sg], src->ghash[sg],
						src->gprint + sg * src->n_keys, err);
		if (dg < 0 || !combine_group(dst, dg, src->states + sg * src->n_aggs, err))
			return 0;
	}
	return 1;
}

/* merge_part of the groups of src itself (not of its spill buffers) */
static int
merge_part_groups(XpuAggTable *dst, const XpuAggTable *src, int part, int nparts,
				  XpuError *err)
{
	int64_t		sgs[KEY_BLOCK];
	int			n = 0;

	for (int64_t g = 0; g < src->ngroups; g++)
	{
		if (nparts > 1 && hash_part(src->ghash[g], nparts) != part)
			continue;
		sgs[n++] = g;
		if (n == KEY_BLOCK)
		{
			if (!merge_block(dst, src, sgs, n, err))
				return 0;
			n = 0;
		}
	}
	return merge_block(dst, src, sgs, n, err);
}

/*
 * xpu_agg_table_merge_part: see xpu_agg.h.  The groups src spilled are
 * folded too: with nparts = XPU_AGG_PARTS partition part's buffer alone
 * (whole), else every buffer's groups of the partition.
 */
int
xpu_agg_table_merge_part(XpuAggTable *dst, const XpuAggTable *src, int part, int nparts,
						 XpuError *err)
{
	for (int p = 0; src->spill != NULL && p < XPU_AGG_PARTS; p++)
	{
		if (src->spill[p] == NULL || (nparts == XPU_AGG_PARTS && p != part))
			continue;
		if (!merge_part_groups(dst, src->spill[p], part, nparts == XPU_AGG_PARTS ? 1 : nparts,
							   err))
			return 0;
	}
	return merge_part_groups(dst, src, part, nparts, err);
}

int
xpu_agg_table_merge(XpuAggTable *dst, const XpuAggTable *src, XpuError *err)
{
	return xpu_agg_table_merge_part(dst, src, 0, 1, err);
}

/* the group of key bytes key[key_len] in t, added when new; -1 (err set) */
static int64_t
group_of_key(XpuAggTable *t, const uint8_t *key, uint32_t key_len, XpuError *err)
{
	KeyPrint	print[XPU_AGG_MAX_KEYS];
	uint64_t	h = read_encoded(t, key, key_len, print);

	return group_find(t, key, key_len, h, print, err);
}

int
xpu_agg_table_fold_group(XpuAggTable *t, const uint8_t *key, uint32_t key_len,
						 const XpuAggState *states, XpuError *err)
{
	int64_t		g = group_of_key(t, key, key_len, err);

	return g >= 0 && combine_group(t, g, states, err);
}

int
xpu_agg_table_fold_hll(XpuAggTable *t, const uint8_t *key, uint32_t key_len, int a,
					   int dense, const uint8_t *data, uint32_t len, XpuError *err)
{
	int64_t		g;
	HllSketch  *h;
	int			p;

	if (a < 0 || a >= t->n_aggs || t->aggs[a].kind != XPU_AGG_HLL ||
		(dense ? len != UINT32_C(1) << t->aggs[a].param : len % 8 != 0))
		return XPU_ERROR(err, XPU_ERR_INTERNAL, "a HyperLogLog sketch of the wrong size"), 0;
	if (len == 0)
		return 1;
	p = t->aggs[a].param;
	g = group_of_key(t, key, key_len, err);
	if (g < 0 || (h = hll_set_of(t, &t->states[g * t->n_aggs + a], p, err)) == NULL)
		return 0;
	if (!dense)
	{
		for (uint32_t i = 0; i < len; i += 8)
		{
			uint64_t	hash;

			memcpy(&hash, data + i, 8);
			if (!hll_set_add(t, h, hash, err))
				return 0;
		}
		return 1;
	}
	return hll_set_merge(t, h, NULL, data, err);
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
	for (int p = 0; t->spill != NULL && p < XPU_AGG_PARTS; p++)
		if (t->spill[p] != NULL)
			f |= xpu_agg_table_flags(t->spill[p]);
	return f;
}

size_t
xpu_agg_table_memory(const XpuAggTable *t)
{
	size_t		spilled = 0;

	for (int p = 0; t->spill != NULL && p < XPU_AGG_PARTS; p++)
		if (t->spill[p] != NULL)
			spilled += xpu_agg_table_memory(t->spill[p]);
	if (t->dict != NULL)
		spilled += t->n_keys * sizeof(KeyDict);
	if (t->combo != NULL)
		spilled += dict_combos(t) * sizeof(int32_t);
	return sizeof(XpuAggTable) + spilled +
		(size_t) t->gcap * (sizeof(uint64_t) + sizeof(int64_t) + sizeof(uint32_t) +
							(size_t) t->n_aggs * sizeof(XpuAggState) +
							(size_t) t->n_keys * sizeof(KeyPrint)) +
		(t->rprint ? (size_t) KEY_BLOCK * t->n_keys * sizeof(KeyPrint) : 0) +
		(size_t) t->keys_cap + (t->slots ? (size_t) (t->mask + 1) * sizeof(uint64_t) : 0) +
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
				HllSketch  *h = HLL_SET(&t->states[g * t->n_aggs + a]);

				if (h != NULL && !hll_set_merge(t, h, NULL, NULL, err))
					return 0;
			}
	return 1;
}

uint32_t
xpu_agg_extra_export(int kind, const XpuAggState *s, const uint8_t **data, int *dense)
{
	const HllSketch *h = HLL_SET(s);

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
