/*-------------------------------------------------------------------------
 *
 * arrow_load_dict.c
 *		Dictionaries of a loaded batch: the dictionary batches that a record
 *		batch sees are decoded (arrow_load_array), a dictionary and its
 *		deltas are concatenated into one array, and the result is kept with
 *		the batch for every field that uses the id.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_reader.h"
#include "arrow_bits.h"
#include "arrow_types.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Dictionaries
 * ------------------------------------------------------------------------
 */

/* A range of rows of an array, for concatenating delta dictionaries */
typedef struct Slice
{
	const ArrowArray *a;
	int64_t		start;
	int64_t		length;
} Slice;

static int	concat_slices(Loader *L, const ArrowField *f, const Slice *s, int n,
						  ArrowArray *out);

/* Bitmaps (validity: which = 0, BOOL values: 1) of the slices, one after another */
static uint8_t *
concat_bitmaps(Loader *L, const Slice *s, int n, int64_t total, int which)
{
	uint8_t    *v = arrow_arena_calloc(&L->bp->arena, arrow_bitmap_bytes(total) + which, 1, L->err);
	int64_t		at = 0;

	if (v == NULL)
		return NULL;
	for (int i = 0; i < n; i++)
	{
		arrow_bits_copy(v, at, which ? s[i].a->values : s[i].a->validity,
						s[i].start, s[i].length);
		at += s[i].length;
	}
	return v;
}

/* Fixed-width values of the slices (of 'width' bytes each) */
static int
concat_fixed(Loader *L, const Slice *s, int n, int64_t total, int64_t width,
			 ArrowArray *out)
{
	uint8_t    *v = arrow_arena_calloc(&L->bp->arena, total * width + 1, 1, L->err);
	int64_t		at = 0;

	if (v == NULL)
		return ARROW_ERR_NOMEM;
	for (int i = 0; i < n; i++)
	{
		memcpy(v + at * width, s[i].a->values + s[i].start * width, s[i].length * width);
		at += s[i].length;
	}
	out->values = v;
	return ARROW_OK;
}

/*
 * Offsets (rebased) and data of UTF8/BINARY slices, or offsets and the
 * child of LIST slices (is_list).
 */
static int
concat_offsets(Loader *L, const ArrowField *f, const Slice *s, int n,
			   int64_t total, bool large, bool is_list, ArrowArray *out)
{
	Arena	   *arena = &L->bp->arena;
	uint8_t    *offsets = arrow_arena_calloc(arena, total + 1, large ? 8 : 4, L->err);
	int64_t		base = 0;
	int64_t		bytes = 0;
	int64_t		at = 0;
	uint8_t    *data = NULL;
	Slice	   *cs = NULL;

	if (offsets == NULL)
		return ARROW_ERR_NOMEM;
	for (int i = 0; i < n; i++)
		bytes += arrow_offset_at(s[i].a->offsets, large, s[i].start + s[i].length) -
			arrow_offset_at(s[i].a->offsets, large, s[i].start);
	if (is_list)
		cs = arrow_arena_calloc(arena, n, sizeof(Slice), L->err);
	else
		data = arrow_arena_calloc(arena, bytes + 1, 1, L->err);
	if (cs == NULL && data == NULL)
		return ARROW_ERR_NOMEM;
	for (int i = 0; i < n; i++)
	{
		int64_t		first = arrow_offset_at(s[i].a->offsets, large, s[i].start);
		int64_t		last = arrow_offset_at(s[i].a->offsets, large, s[i].start + s[i].length);

		for (int64_t r = 0; r <= s[i].length; r++)
		{
			int64_t		o = arrow_offset_at(s[i].a->offsets, large, s[i].start + r) - first + base;
			int32_t		o32 = (int32_t) o;

			if (!large && o > INT32_MAX)
				return arrow_load_error(L, f, "concatenated dictionary exceeds 32-bit offsets");
			if (large)
				memcpy(offsets + (at + r) * 8, &o, 8);
			else
				memcpy(offsets + (at + r) * 4, &o32, 4);
		}
		if (is_list)
		{
			cs[i].a = &s[i].a->children[0];
			cs[i].start = first;
			cs[i].length = last - first;
		}
		else
			memcpy(data + base, s[i].a->data + first, last - first);
		base += last - first;
		at += s[i].length;
	}
	out->offsets = offsets;
	if (!is_list)
	{
		out->data = data;
		out->data_length = bytes;
		return ARROW_OK;
	}
	out->children = arrow_arena_calloc(arena, 1, sizeof(ArrowArray), L->err);
	if (out->children == NULL)
		return ARROW_ERR_NOMEM;
	out->n_children = 1;
	return concat_slices(L, &f->children[0], cs, n, &out->children[0]);
}

/* The children of STRUCT (k = 1) or FIXED_SIZE_LIST (k = list_size) slices */
static int
concat_children(Loader *L, const ArrowField *f, const Slice *s, int n, int64_t k,
				ArrowArray *out)
{
	Arena	   *arena = &L->bp->arena;
	Slice	   *cs = arrow_arena_calloc(arena, n, sizeof(Slice), L->err);

	if (cs == NULL)
		return ARROW_ERR_NOMEM;
	if (f->n_children > 0)
	{
		out->children = arrow_arena_calloc(arena, f->n_children, sizeof(ArrowArray), L->err);
		if (out->children == NULL)
			return ARROW_ERR_NOMEM;
		out->n_children = f->n_children;
	}
	for (int32_t c = 0; c < f->n_children; c++)
	{
		for (int i = 0; i < n; i++)
		{
			cs[i].a = &s[i].a->children[c];
			cs[i].start = s[i].start * k;
			cs[i].length = s[i].length * k;
		}
		if (concat_slices(L, &f->children[c], cs, n, &out->children[c]) != ARROW_OK)
			return L->err->code;
	}
	return ARROW_OK;
}

/*
 * Concatenates the slices (validated arrays of field f) into *out, memory
 * from the arena.  Used for a dictionary and its deltas.
 *
 * Null, struct and fixed-size-list arrays may claim any length without data
 * behind it, and concatenating costs at least a bit per value, so no level
 * may hold more than L->concat_limit values (the bits of the dictionary
 * batches' bodies): such a dictionary is refused rather than blown up.
 */
static int
concat_slices(Loader *L, const ArrowField *f, const Slice *s, int n, ArrowArray *out)
{
	const ArrowTypeInfo *info = arrow_type_info(f->type.id);
	int64_t		total = 0;
	int64_t		nulls = 0;

	memset(out, 0, sizeof(ArrowArray));
	out->field = f;
	for (int i = 0; i < n; i++)
	{
		if (arrow_add_overflow(total, s[i].length, &total) || total > L->concat_limit)
			return arrow_load_error(L, f, "concatenated dictionary has more values than its batches hold");
		if (s[i].a->validity != NULL)
			nulls += arrow_bits_count_zeros(s[i].a->validity, s[i].start, s[i].length);
	}
	out->length = total;
	out->null_count = (info->layout == ARROW_LAYOUT_NULL) ? total : nulls;
	if (info->layout == ARROW_LAYOUT_NULL)
		return ARROW_OK;
	if (nulls > 0 && (out->validity = concat_bitmaps(L, s, n, total, 0)) == NULL)
		return ARROW_ERR_NOMEM;

	switch (info->layout)
	{
		case ARROW_LAYOUT_BITS:
			out->values = concat_bitmaps(L, s, n, total, 1);
			return out->values ? ARROW_OK : ARROW_ERR_NOMEM;
		case ARROW_LAYOUT_VAR:
		case ARROW_LAYOUT_LIST:
			if (f->type.id == ARROW_TYPE_MAP)
				break;
			return concat_offsets(L, f, s, n, total, info->offset_width == 8,
								  info->layout == ARROW_LAYOUT_LIST, out);
		case ARROW_LAYOUT_FIXED_LIST:
			return concat_children(L, f, s, n, f->type.list_size, out);
		case ARROW_LAYOUT_STRUCT:
			return concat_children(L, f, s, n, 1, out);
		case ARROW_LAYOUT_FIXED:
			return concat_fixed(L, s, n, total, arrow_type_value_width(&f->type), out);
		case ARROW_LAYOUT_NULL:
		case ARROW_LAYOUT_VIEW:
		case ARROW_LAYOUT_LIST_VIEW:
		case ARROW_LAYOUT_RUN_END:
			break;
	}
	return arrow_set_error(L->err, ARROW_ERR_UNSUPPORTED,
						   "%s, field \"%s\": unsupported delta dictionary of views, list views, maps or run-end encoded values",
						   L->what, f->name);
}

/*
 * The dictionary of dictionary-encoded field f as the record batch being
 * loaded sees it (decoded once per batch).
 */
int
arrow_get_dictionary(Loader *L, const ArrowField *f, const ArrowArray **out)
{
	const ArrowFile *file = L->file;
	int64_t		id = f->dictionary.id;
	const DictValueField *dv = arrow_find_dict_field(file, id);
	Arena	   *arena = &L->bp->arena;
	LoadedDict *ld;
	int32_t		start = -1;
	int			n = 0;
	int64_t		bytes = 0;		/* body bytes of the pieces */
	ArrowArray *pieces;
	ArrowArray *result;

	for (ld = L->bp->dicts; ld != NULL; ld = ld->next)
	{
		if (ld->id == id)
		{
			*out = ld->values;
			return ARROW_OK;
		}
	}
	/* the last replacement (non-delta) batch of id, then its deltas */
	for (int32_t i = 0; i < L->visible; i++)
	{
		if (file->dictionaries[i].id != id)
			continue;
		if (start < 0 || !file->dictionaries[i].is_delta)
		{
			start = i;
			n = 0;
		}
		n++;
	}
	if (start < 0)
		return arrow_load_error(L, f, "no dictionary batch for dictionary %lld comes before it",
						  (long long) id);
	pieces = arrow_arena_calloc(arena, n, sizeof(ArrowArray), L->err);
	result = arrow_arena_calloc(arena, 1, sizeof(ArrowArray), L->err);
	ld = arrow_arena_calloc(arena, 1, sizeof(LoadedDict), L->err);
	if (pieces == NULL || result == NULL || ld == NULL)
		return ARROW_ERR_NOMEM;
	n = 0;
	for (int32_t i = start; i < L->visible; i++)
	{
		Loader		sub;

		if (file->dictionaries[i].id != id)
			continue;
		sub = *L;
		sub.info = &file->dictionaries[i].batch;
		sub.node = 0;
		sub.buffer = 0;
		sub.variadic = 0;
		snprintf(sub.what, sizeof(sub.what), "dictionary batch %d", i);
		if (arrow_load_array(&sub, &dv->field, &pieces[n]) != ARROW_OK)
			return L->err->code;
		bytes += file->dictionaries[i].batch.body_length;
		n++;
	}
	if (n == 1)
		*result = pieces[0];
	else
	{
		Slice	   *s = arrow_arena_calloc(arena, n, sizeof(Slice), L->err);

		if (s == NULL)
			return ARROW_ERR_NOMEM;
		for (int i = 0; i < n; i++)
		{
			s[i].a = &pieces[i];
			s[i].start = 0;
			s[i].length = pieces[i].length;
		}
		L->concat_limit = bytes * 8 + 64;
		if (concat_slices(L, &dv->field, s, n, result) != ARROW_OK)
			return L->err->code;
	}
	ld->id = id;
	ld->values = result;
	ld->next = L->bp->dicts;
	L->bp->dicts = ld;
	*out = result;
	return ARROW_OK;
}
