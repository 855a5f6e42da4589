/*-------------------------------------------------------------------------
 *
 * xpu_agg_dict.h
 *		KeyDict, the few-values shortcut of the CPU engine's hash
 *		aggregation table (xpu_agg.c's find_groups).  Included by xpu_agg.c
 *		alone, after the table (struct XpuAggTable), the key prints
 *		(KeyPrint, text_masks, text_print, key_word) and print_rows: it is
 *		a part of that file, kept apart for its size.
 *
 * Where each key column of a table of one or two keys holds few distinct
 * values (lo_shipmode and lo_orderpriority: 7 and 5), a row's group
 * follows from the numbers of its values in small per-column dictionaries,
 * without the key's hash or a probe of the slots: each value's print
 * (KeyPrint, of up to 16 bytes: a print is the value) is looked up in its
 * column's dictionary, and the numbers index combo[], every combination's
 * group (-1: none known yet).
 *
 * dict_groups does it a key column at a time over a block of rows, straight
 * from the rows' values: a text's print is made in registers (two loads of
 * 8 bytes masked to its length where the texts of the rows after it are
 * known to follow it in memory, as print_text_rows does) and looked up at
 * once, never stored; each row keeps one byte, its value's number.  A
 * block whose rows all passed is indexed without the row list; a text
 * column of such a block without NULLs whose texts follow one another (an
 * Arrow column's values: dict_packed_ids) is looked up in one loop without
 * a test of where a run of texts ends, in a table by length and 5 bits of
 * one product of the print (fw/fid), without a probe loop.  So such a
 * block costs per row and text key two loads of the text, one product and
 * one compare of a table entry, and one load of combo a row.
 *
 * A block of rows that misses (a value or a combination not met yet, a
 * text longer than 16 bytes) takes the probe, then teaches the
 * dictionaries its values and groups (dict_learn, from the prints that
 * print_rows made for the probe).  A column of more than DICT_IDS values,
 * or DICT_MISS_BLOCKS blocks in a row that missed, turn the shortcut off
 * for the table; a spill forgets the groups (combo).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_DICT_H
#define XPU_AGG_DICT_H

#define DICT_IDS			255
#define DICT_SLOTS			512
#define DICT_MISS_BLOCKS	64

/*
 * dict_packed_ids' table of the values of up to 16 bytes: by length and
 * FAST_BITS bits of a product of the print's words, the words of the first
 * value learnt there and its number + 1 (0: none); a value that lost its
 * slot to another is found in e[] (dict_find)
 */
#define FAST_BITS			5
#define FAST_SLOTS			(17 << FAST_BITS)

typedef struct KeyDict
{
	KeyPrint	e[DICT_SLOTS];	/* pad: the value's number + 1, 0: empty */
	int			n;				/* numbers given */
	uint64_t	fw[FAST_SLOTS][2];
	uint8_t		fid[FAST_SLOTS];
} KeyDict;

/* the fast slot of a text of len (<= 16) bytes and print words w0, w1 */
static inline uint32_t
fast_slot(uint64_t w0, uint64_t w1, uint32_t len)
{
	return len << FAST_BITS | (uint32_t) (((w0 ^ w1) * TEXT_MIX_W0) >> (64 - FAST_BITS));
}

/* combo's entries: DICT_IDS + 1 numbers a key column */
static size_t
dict_combos(const XpuAggTable *t)
{
	return t->n_keys == 1 ? 256 : 65536;
}

/*
 * the first slot of print (w0, w1, tag) in a dictionary: two independent
 * products, so that a row's slot costs one product's latency
 */
static inline uint32_t
dict_slot(uint64_t w0, uint64_t w1, uint32_t tag)
{
	return (uint32_t) ((((w0 + tag) * TEXT_MIX_W0) ^ (w1 * TEXT_MIX_W1)) >> 55);
}

/* the number of the value of print (w0, w1, tag) in d, or -1: not there */
static inline int
dict_find(const KeyDict *d, uint64_t w0, uint64_t w1, uint32_t tag)
{
	for (uint32_t i = dict_slot(w0, w1, tag);; i = (i + 1) & (DICT_SLOTS - 1))
	{
		const KeyPrint *e = &d->e[i];

		if (e->w0 == w0 && e->w1 == w1 && e->tag == tag)
			return (int) e->pad - 1;	/* the empty slot (all 0) finds -1 */
		if (e->pad == 0)
			return -1;
	}
}

/*
 * the number of value p in dictionary d, or -1: not there (or a text
 * longer than 16 bytes, whose print is not the value); with add, a value
 * not there gets the next number, -1 when DICT_IDS are given
 */
static inline int
dict_number(KeyDict *d, const KeyPrint *p, int add)
{
	uint32_t	i = dict_slot(p->w0, p->w1, p->tag);

	if (p->tag > 16 && p->tag != KEY_TAG_NULL)
		return -1;
	for (;; i = (i + 1) & (DICT_SLOTS - 1))
	{
		KeyPrint   *e = &d->e[i];

		if (e->pad == 0)
			break;
		if (e->tag == p->tag && e->w0 == p->w0 && e->w1 == p->w1)
			return (int) e->pad - 1;
	}
	if (!add || d->n >= DICT_IDS)
		return -1;
	d->e[i] = *p;
	d->e[i].pad = (uint32_t) ++d->n;
	if (p->tag <= 16 && d->fid[i = fast_slot(p->w0, p->w1, p->tag)] == 0)
	{
		d->fw[i][0] = p->w0;
		d->fw[i][1] = p->w1;
		d->fid[i] = (uint8_t) d->n;
	}
	return d->n - 1;
}

/* turns the shortcut on (a table of one or two keys, memory there) or off */
static void
dict_start(XpuAggTable *t)
{
	t->dict_on = -1;
	if (t->n_keys > 2 ||
		(t->dict = calloc(t->n_keys, sizeof(KeyDict))) == NULL ||
		(t->combo = malloc(dict_combos(t) * sizeof(int32_t))) == NULL)
		return;
	memset(t->combo, 0xFF, dict_combos(t) * sizeof(int32_t));
	t->dict_on = 1;
}

/* the combo index of the key of prints rp (t->n_keys of them), or -1; add as dict_number's */
static inline int
dict_index(XpuAggTable *t, const KeyPrint *rp, int add)
{
	int			i0 = dict_number(&t->dict[0], &rp[0], add),
				i1 = t->n_keys == 2 ? dict_number(&t->dict[1], &rp[1], add) : 0;

	return (i0 | i1) < 0 ? -1 : i0 | i1 << 8;
}

/*
 * dict_text_ids: the numbers in d of text column v/nl's values of the n
 * rows rows[] (NULL: rows 0 to n - 1) into id[]; false at the first value
 * not there (or longer than 16 bytes).  The rows are walked from the last, as print_text_rows walks
 * them, so that each knows how far the run of adjacent texts that it
 * starts reaches: where 16 bytes from its start are in that run, the print
 * is the two words loaded there, masked to its length; else text_print
 * reads the text's bytes alone.
 */
static inline __attribute__((always_inline)) int
dict_text_ids(const KeyDict *d, const XpuValue *v, const uint8_t *nl, const int64_t *rows, int n,
			  uint8_t *id)
{
	uintptr_t	next_p = 0,		/* the text of row j + 1 starts here */
				run_end = 0;	/* ... and its run of adjacent texts ends here */

	for (int j = n - 1; j >= 0; j--)
	{
		int64_t		r = rows != NULL ? rows[j] : j;
		uintptr_t	s = (uintptr_t) v[r].t.p;
		uint32_t	len = (uint32_t) v[r].t.len;
		uint64_t	w0, w1;
		int			c;

		if (nl[r])
		{
			next_p = 0;
			if ((c = dict_find(d, 0, 0, KEY_TAG_NULL)) < 0)
				return 0;
			id[j] = (uint8_t) c;
			continue;
		}
		if (s + len != next_p)
			run_end = s + len;
		next_p = s;
		if (__builtin_expect(len <= 16 && s + 16 <= run_end, 1))
		{
			memcpy(&w0, (const void *) s, 8);
			memcpy(&w1, (const void *) (s + 8), 8);
			w0 &= text_masks[len][0];
			w1 &= text_masks[len][1];
		}
		else
		{
			KeyPrint	p;

			if (len > 16)
				return 0;
			(void) text_print((const uint8_t *) s, len, &p);
			w0 = p.w0;
			w1 = p.w1;
		}
		if ((c = dict_find(d, w0, w1, len)) < 0)
			return 0;
		id[j] = (uint8_t) c;
	}
	return 1;
}

/*
 * dict_packed_ids: dict_text_ids of rows 0 to n - 1 where none is NULL and
 * their texts are packed, each starting where the one before ends (an
 * Arrow column's values); -1 when they are not (dict_text_ids then), else
 * as dict_text_ids.  Every text but the last few then has 16 readable bytes
 * from its start (up to the end of the last one), so that the loop has no
 * test of a run's end, and looks the dictionary's first slot up without a
 * branch per word; the last texts, and a value not in its first slot, take
 * dict_text_ids' ways.  Not inlined: in find_groups the loop would lack
 * registers.
 */
static __attribute__((noinline)) int
dict_packed_ids(const KeyDict *d, const XpuValue *v, const uint8_t *nl, int n, uint8_t *id)
{
	uint64_t	nulls = 0,
				eight;
	uintptr_t	end = (uintptr_t) v[0].t.p,
				gaps = 0;
	int			tail,
				j;

	if (n == 0)
		return 1;
	for (j = 0; j + 8 <= n; j += 8)
	{
		memcpy(&eight, nl + j, 8);
		nulls |= eight;
	}
	for (; j < n; j++)
		nulls |= nl[j];
	/* each text starts where the one before ends; end: where the last ends */
	for (j = 0; j < n; j++)
	{
		gaps |= (uintptr_t) v[j].t.p ^ end;
		end = (uintptr_t) v[j].t.p + (uint32_t) v[j].t.len;
	}
	if (nulls != 0 || gaps != 0)
		return -1;
	for (tail = n; tail > 0 && (uintptr_t) v[tail - 1].t.p + 16 > end; tail--)
		;
	for (j = 0; j < tail; j++)
	{
		const uint8_t *s = (const uint8_t *) v[j].t.p;
		uint32_t	len = (uint32_t) v[j].t.len,
					f;
		uint64_t	w0, w1;
		int			c;

		if (__builtin_expect(len > 16, 0))
			return 0;
		memcpy(&w0, s, 8);
		memcpy(&w1, s + 8, 8);
		w0 &= text_masks[len][0];
		w1 &= text_masks[len][1];
		f = fast_slot(w0, w1, len);
		if (__builtin_expect(((d->fw[f][0] ^ w0) | (d->fw[f][1] ^ w1)) == 0 && d->fid[f] != 0, 1))
			c = d->fid[f] - 1;
		else if ((c = dict_find(d, w0, w1, len)) < 0)
			return 0;
		id[j] = (uint8_t) c;
	}
	return dict_text_ids(d, v + tail, nl + tail, NULL, n - tail, id + tail);
}

/*
 * dict_value_ids: as dict_text_ids for a key column of another type (its
 * print as print_rows makes it)
 */
static inline __attribute__((always_inline)) int
dict_value_ids(const KeyDict *d, int type, const XpuValue *v, const uint8_t *nl,
			   const int64_t *rows, int n, uint8_t *id)
{
	for (int j = 0; j < n; j++)
	{
		int64_t		r = rows != NULL ? rows[j] : j;
		uint64_t	w[2] = {0, 0};
		int			c;

		if (!nl[r] && type == XPU_T_NUMERIC)
			memcpy(w, &v[r].n, 16);
		else if (!nl[r])
			w[0] = key_word(type, &v[r]);
		if ((c = dict_find(d, w[0], w[1], nl[r] ? KEY_TAG_NULL : 0)) < 0)
			return 0;
		id[j] = (uint8_t) c;
	}
	return 1;
}

/*
 * dict_block: dict_groups of the m rows rows[] (NULL: rows 0 to m - 1) of
 * key columns vs[]/nls[] into rowgroup[]
 */
static inline __attribute__((always_inline)) int
dict_block(XpuAggTable *t, const XpuValue *const *vs, const uint8_t *const *nls,
		   const int64_t *rows, int m, int64_t *rowgroup)
{
	uint8_t		id[XPU_AGG_MAX_KEYS][KEY_BLOCK];
	int32_t		bad = 0;

	for (int k = 0; k < t->n_keys; k++)
	{
		int			p = rows == NULL && t->key_types[k] == XPU_T_TEXT ?
			dict_packed_ids(&t->dict[k], vs[k], nls[k], m, id[k]) : -1;

		if (p >= 0)
		{
			if (p == 0)
				return 0;
			continue;
		}
		if (t->key_types[k] == XPU_T_TEXT ?
			!dict_text_ids(&t->dict[k], vs[k], nls[k], rows, m, id[k]) :
			!dict_value_ids(&t->dict[k], t->key_types[k], vs[k], nls[k], rows, m, id[k]))
			return 0;
	}
	if (t->n_keys == 1)
		memset(id[1], 0, m);
	for (int j = 0; j < m; j++)
	{
		int32_t		g = t->combo[id[0][j] | id[1][j] << 8];

		bad |= g;
		rowgroup[rows != NULL ? rows[j] : j] = g;
	}
	return bad >= 0;
}

/*
 * dict_groups: the groups of the m rows krow[] of a block of res, from the
 * dictionaries into t->rowgroup; false when a row missed (the block must
 * take the probe, which sets every row's group).  A block whose rows all
 * passed (krow[] consecutive) is indexed without krow.
 */
static int
dict_groups(XpuAggTable *t, const XpuResult *res, const int64_t *krow, int m)
{
	const XpuValue *vs[2];
	const uint8_t *nls[2];
	int64_t		r0 = m > 0 ? krow[0] : 0;
	int			dense = m > 0 && krow[m - 1] - r0 == m - 1;

	for (int k = 0; k < t->n_keys; k++)
	{
		vs[k] = res->values + t->key_outs[k] * res->nrows + (dense ? r0 : 0);
		nls[k] = res->nulls + t->key_outs[k] * res->nrows + (dense ? r0 : 0);
	}
	if (dense)
		return dict_block(t, vs, nls, NULL, m, t->rowgroup + r0);
	return dict_block(t, vs, nls, krow, m, t->rowgroup);
}

/* dict_learn: after a block's probe, its values and groups into the dictionaries */
static void
dict_learn(XpuAggTable *t, const int64_t *krow, int m)
{
	const int	nk = t->n_keys;

	for (int j = 0; j < m; j++)
	{
		const KeyPrint *rp = t->rprint + j * nk;
		int64_t		g = t->rowgroup[krow[j]];
		int			c;

		if ((c = dict_index(t, rp, 1)) >= 0)
		{
			if (g <= INT32_MAX)
				t->combo[c] = (int32_t) g;
			continue;
		}
		/* a long text misses for ever; DICT_IDS values taken: no shortcut */
		for (int k = 0; k < nk; k++)
			if (rp[k].tag <= 16 || rp[k].tag == KEY_TAG_NULL)
				if (dict_number(&t->dict[k], &rp[k], 0) < 0)
					t->dict_on = -1;
		if (t->dict_on < 0)
			return;
	}
}

/* see xpu_agg.h */
int
xpu_agg_table_shortcut(const XpuAggTable *t, int64_t *hits)
{
	if (hits != NULL)
		*hits = t->dict_hits;
	return t->dict_on;
}

#endif							/* XPU_AGG_DICT_H */
