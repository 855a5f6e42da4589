/*-------------------------------------------------------------------------
 *
 * xpu_agg_index.h
 *		Grouping on dictionary indices: the CPU engine's hash aggregation
 *		(xpu_agg.c) over rows whose one or two GROUP BY keys are
 *		dictionary-encoded text columns loaded as they are
 *		(xpu_cpu_dict_outs, xpu_dict.h).  Included by xpu_agg.c alone,
 *		after print_rows and row_group: a part of that file, kept apart.
 *
 * A row's group follows from its keys' indices alone: the table keeps a
 * map from the combination of the indices (i0 * n1 + i1, each key's NULL
 * index the dictionary's length) to the group, -1 where not known yet.
 * A combination met for the first time finds its group as any row does
 * (print_rows and row_group, from the key values xpu_cpu_exec loaded:
 * two indices of equal values, a NULL index and a NULL value meet in one
 * group); every other row costs a load of each index and one of the map.
 *
 * The map holds for one dictionary version a key (XpuColumnData's
 * dict_version: the same version, the same index -> value mapping); rows
 * of another version, or a spill (which renumbers the groups), start it
 * anew.  Combinations beyond INDEX_MAX_COMBOS, more than two keys or a
 * key that is no dictionary column: find_groups as for any rows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_AGG_INDEX_H
#define XPU_AGG_INDEX_H

#include "xpu_dict.h"

#define INDEX_MAX_COMBOS	(INT64_C(1) << 20)

/* is an index of least lo and largest hi outside a dictionary of len values */
static inline int
index_out(int64_t lo, uint64_t hi, uint64_t len)
{
	return lo < 0 || hi >= len;
}

/*
 * index_decode: ix[j] = the index of the column's row off + j (j < m), its
 * dictionary's length for a NULL index; 1 where every non-NULL index is
 * in the dictionary, else 0.  One loop a width, without a branch a row.
 */
static int
index_decode(const XpuColumnData *cd, int64_t off, int m, uint32_t *ix)
{
	const uint8_t *vb = cd->validity;
	uint64_t	len = (uint64_t) cd->dict_len,
				bad = 0;
	int			j;

	/* a negative index is a huge one as uint64; len < 2^20: ix holds the rest */
#define INDEX_DECODE(T) \
	do { \
		const T *v = (const T *) cd->values + off; \
		if (vb == NULL && m > 0) \
		{ \
			/* the least and the largest index: loops the compiler vectorizes */ \
			T			lo = v[0], \
						hi = v[0]; \
			for (j = 0; j < m; j++) \
			{ \
				lo = v[j] < lo ? v[j] : lo; \
				hi = v[j] > hi ? v[j] : hi; \
				ix[j] = (uint32_t) v[j]; \
			} \
			bad = index_out(lo, hi, len); \
		} \
		else \
			for (j = 0; j < m; j++) \
			{ \
				int64_t		r = off + j; \
				uint64_t	valid = vb != NULL ? (vb[r >> 3] >> (r & 7)) & 1 : 1; \
				bad |= valid & ((uint64_t) v[j] >= len); \
				ix[j] = valid ? (uint32_t) v[j] : (uint32_t) len; \
			} \
	} while (0)
	switch (cd->dict_width)
	{
		case 1: INDEX_DECODE(int8_t); break;
		case 2: INDEX_DECODE(int16_t); break;
		case 4: INDEX_DECODE(int32_t); break;
		case 8: INDEX_DECODE(int64_t); break;
		case -1: INDEX_DECODE(uint8_t); break;
		case -2: INDEX_DECODE(uint16_t); break;
		case -4: INDEX_DECODE(uint32_t); break;
		default: INDEX_DECODE(uint64_t); break;
	}
#undef INDEX_DECODE
	return bad == 0;
}

/*
 * index_fill: output k's value and null flag of row r of res (a key of
 * dictionary column cd, which xpu_cpu_exec_skip may have left unloaded)
 * from the dictionary; ix its index (the dictionary's length: NULL)
 */
static inline void
index_fill(const XpuAggTable *t, const XpuResult *res, int k, const XpuColumnData *cd,
		   int64_t r, uint64_t ix)
{
	int64_t		o = t->key_outs[k] * res->nrows + r;

	if (ix >= (uint64_t) cd->dict_len || xpu_dict_value_null(cd, (int64_t) ix))
	{
		res->nulls[o] = 1;
		return;
	}
	res->nulls[o] = 0;
	res->values[o].t.p = cd->data + cd->dict_offsets[ix];
	res->values[o].t.len = cd->dict_offsets[ix + 1] - cd->dict_offsets[ix];
}

/*
 * index_fill_all: every key output of a dictionary column, of every row of
 * res that passed, from the dictionary (before find_groups does the rows:
 * xpu_cpu_exec_skip may have left them unloaded); 0 (err set) at an index
 * outside the dictionary
 */
static int
index_fill_all(const XpuAggTable *t, const XpuResult *res,
			   const XpuColumnData *const *dict_cols, XpuError *err)
{
	uint32_t	ix[KEY_BLOCK];

	for (int k = 0; dict_cols != NULL && k < t->n_keys; k++)
	{
		const XpuColumnData *cd = dict_cols[t->key_outs[k]];

		for (int64_t r0 = 0; cd != NULL && r0 < res->nrows; r0 += KEY_BLOCK)
		{
			int			m = (int) (res->nrows - r0 < KEY_BLOCK ? res->nrows - r0 : KEY_BLOCK);

			if (!index_decode(cd, r0 + cd->offset, m, ix))
				return XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT,
								 "dictionary index outside the dictionary"), 0;
			for (int j = 0; j < m; j++)
				if (res->mask == NULL || res->mask[r0 + j])
					index_fill(t, res, k, cd, r0 + j, ix[j]);
		}
	}
	return 1;
}

/*
 * index_start: makes the table's map fit the key columns cd[] (emptied
 * when their versions are not the map's); 0 (err set) when memory runs out
 */
static int
index_start(XpuAggTable *t, const XpuColumnData *const *cd, int64_t combos, XpuError *err)
{
	int			same = t->ix_valid && t->ix_combos == combos;

	for (int k = 0; k < t->n_keys; k++)
		same &= t->ix_version[k] == cd[k]->dict_version && t->ix_len[k] == cd[k]->dict_len;
	if (same)
		return 1;
	if (combos > t->ix_cap)
	{
		int32_t    *m = realloc(t->ix_map, (size_t) combos * sizeof(int32_t));

		if (m == NULL)
			return OOM(err), 0;
		t->ix_map = m;
		t->ix_cap = combos;
	}
	memset(t->ix_map, 0xFF, (size_t) combos * sizeof(int32_t));
	for (int k = 0; k < t->n_keys; k++)
	{
		t->ix_version[k] = cd[k]->dict_version;
		t->ix_len[k] = cd[k]->dict_len;
	}
	t->ix_combos = combos;
	t->ix_valid = 1;
	return 1;
}

/* would index_groups take rows of the key columns cd[] (n of them: the table's keys) */
static int
index_fits(const XpuAggTable *t, const XpuColumnData *const *dict_cols, int64_t *combos)
{
	int64_t		c = 1;

	if (dict_cols == NULL || t->n_keys < 1 || t->n_keys > 2 || t->ix_off)
		return 0;
	for (int k = 0; k < t->n_keys; k++)
	{
		const XpuColumnData *cd = dict_cols[t->key_outs[k]];

		if (cd == NULL || t->key_types[k] != XPU_T_TEXT || cd->dict_len >= INDEX_MAX_COMBOS)
			return 0;
		c *= cd->dict_len + 1;
	}
	*combos = c;
	return c <= INDEX_MAX_COMBOS;
}

/*
 * index_learn: the group of row r, whose combination c of indices (n1:
 * the second key's indices + 1) is not in the map yet, by its key values,
 * into the map; -1 (err set) on an error, -2 when the table turns the
 * index grouping off (the key values filled in for find_groups)
 */
static int64_t
index_learn(XpuAggTable *t, const XpuResult *res, const XpuColumnData *const *cd, int64_t r,
			uint32_t c, int64_t n1, const XpuColumnData *const *dict_cols, XpuError *err)
{
	uint64_t	h;
	uint8_t		lng;
	int64_t		g;

	index_fill(t, res, 0, cd[0], r, t->n_keys == 2 ? c / n1 : c);
	if (t->n_keys == 2)
		index_fill(t, res, 1, cd[1], r, c % n1);
	print_rows(t, res, &r, 1, &h, &lng);
	if ((g = row_group(t, res, r, t->rprint, h, lng, err)) < 0)
		return -1;
	if (g > INT32_MAX)
	{
		/* the map holds int32: find_groups from now on */
		t->ix_off = 1;
		return index_fill_all(t, res, dict_cols, err) ? -2 : -1;
	}
	t->ix_map[c] = (int32_t) g;
	return g;
}

/*
 * index_groups: t->rowgroup[r] for every row of res from the indices of
 * its dictionary keys (dict_cols[k]: output k's column, xpu_cpu_dict_outs);
 * 1 done, 0 not for this table or these rows (find_groups does it, the
 * key values filled in), -1 (err set) on an error
 */
static int
index_groups(XpuAggTable *t, const XpuResult *res, const XpuColumnData *const *dict_cols,
			 XpuError *err)
{
	const XpuColumnData *cd[2];
	const uint8_t *mask = res->mask;
	int64_t		n = res->nrows,
				n1 = 1,
				combos;
	uint32_t	ix0[KEY_BLOCK],
				ix1[KEY_BLOCK];
	const int32_t *map;
	int64_t    *rg;

	if (!index_fits(t, dict_cols, &combos))
		return index_fill_all(t, res, dict_cols, err) ? 0 : -1;
	for (int k = 0; k < t->n_keys; k++)
		cd[k] = dict_cols[t->key_outs[k]];
	if (t->n_keys == 2)
		n1 = cd[1]->dict_len + 1;
	if (!index_start(t, cd, combos, err))
		return -1;
	map = t->ix_map;
	rg = t->rowgroup;
	for (int64_t r0 = 0; r0 < n; r0 += KEY_BLOCK)
	{
		int			m = (int) (n - r0 < KEY_BLOCK ? n - r0 : KEY_BLOCK);
		int			all = all_pass(mask, r0, r0 + m);

		if (!index_decode(cd[0], r0 + cd[0]->offset, m, ix0) ||
			(t->n_keys == 2 && !index_decode(cd[1], r0 + cd[1]->offset, m, ix1)))
			return XPU_ERROR(err, XPU_ERR_INVALID_ARGUMENT,
							 "dictionary index outside the dictionary"), -1;
		if (t->n_keys == 2)
			for (int j = 0; j < m; j++)
				ix0[j] = ix0[j] * (uint32_t) n1 + ix1[j];
		if (all)
			for (int j = 0; j < m; j++)
			{
				int64_t		g = map[ix0[j]];

				if (__builtin_expect(g < 0, 0) &&
					(g = index_learn(t, res, cd, r0 + j, ix0[j], n1, dict_cols, err)) < 0)
					return g == -1 ? -1 : 0;
				rg[r0 + j] = g;
			}
		else
			for (int j = 0; j < m; j++)
			{
				int64_t		g = map[ix0[j]];

				if (!mask[r0 + j])
					g = -1;
				else if (__builtin_expect(g < 0, 0) &&
						 (g = index_learn(t, res, cd, r0 + j, ix0[j], n1, dict_cols, err)) < 0)
					return g == -1 ? -1 : 0;
				rg[r0 + j] = g;
			}
	}
	return 1;
}

/* see xpu_agg.h */
int
xpu_agg_table_dict_skip(const XpuAggTable *t, int n_outs, const XpuColumnData *const *dict_cols,
						uint8_t *skip)
{
	int			n = 0;

	for (int k = 0; k < n_outs; k++)
		skip[k] = 0;
	if (dict_cols == NULL)
		return 0;
	for (int k = 0; k < t->n_keys; k++)
	{
		int			o = t->key_outs[k];
		int			read = 0;

		for (int a = 0; a < t->n_aggs; a++)
			read |= t->aggs[a].kind != XPU_AGG_COUNT_STAR && t->aggs[a].out == o;
		if (o < n_outs && dict_cols[o] != NULL && !read && !skip[o])
		{
			skip[o] = 1;
			n++;
		}
	}
	return n;
}

#endif							/* XPU_AGG_INDEX_H */
