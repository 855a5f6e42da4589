/*-------------------------------------------------------------------------
 *
 * xpu_arrow_bind.h
 *		xpu_column_bind: an XpuColumnData over a loaded Arrow column (the
 *		service's workers, the backend's row filter, the benchmarks),
 *		dictionary-encoded utf8 included (xpu_dict.h).  Host code only.
 *
 * src/xpu includes nothing of src/arrow (test/python/test_layout.py): the
 * functions are there where the includer has included the Arrow library's
 * arrow.h first (its guard PG_WARP_ARROW_H), as the service, the backend's
 * filter (through fdw/fdw_scan.h), the benchmarks and the tests do.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_ARROW_BIND_H
#define XPU_ARROW_BIND_H

#include "xpu_dict.h"

#ifdef PG_WARP_ARROW_H

/* the dict_width of an Arrow index type (0: none) */
static inline int32_t
xpu_dict_width_of(ArrowTypeId id)
{
	switch (id)
	{
		case ARROW_TYPE_INT8: return 1;
		case ARROW_TYPE_INT16: return 2;
		case ARROW_TYPE_INT32: return 4;
		case ARROW_TYPE_INT64: return 8;
		case ARROW_TYPE_UINT8: return -1;
		case ARROW_TYPE_UINT16: return -2;
		case ARROW_TYPE_UINT32: return -4;
		case ARROW_TYPE_UINT64: return -8;
		default: return 0;
	}
}

/*
 * the most characters (UTF-8: bytes that continue none) of a value of
 * dictionary d, for a varchar(n) column's check once for all its rows
 * (xpu_dict.h); -1 for a dictionary above XPU_DICT_MAX_CHARS_BYTES bytes,
 * which would cost more than the rows' own checks
 */
#define XPU_DICT_MAX_CHARS_BYTES	(1 << 20)

static inline int32_t
xpu_dict_max_chars(const ArrowArray *d)
{
	const int32_t *o = (const int32_t *) d->offsets;
	int32_t		most = 0;

	if (d->length == 0 || o[d->length] - o[0] > XPU_DICT_MAX_CHARS_BYTES)
		return d->length == 0 ? 0 : -1;
	for (int64_t i = 0; i < d->length; i++)
	{
		int32_t		chars = 0;

		for (int32_t b = o[i]; b < o[i + 1]; b++)
			chars += (d->data[b] & 0xC0) != 0x80;
		most = chars > most ? chars : most;
	}
	return most;
}

/*
 * xpu_column_bind: cd over column a, top-level field `field` of a batch of
 * file (NULL: not known), its offset left as it is.  A dictionary-encoded column of utf8 values gets its dictionary:
 * in the file format every record batch sees every dictionary batch, so
 * the dictionary's version is the file's and the field's (unique while
 * the file is open); in a stream, one of its own per bind.
 */
static inline void
xpu_column_bind(XpuColumnData *cd, const ArrowArray *a, const ArrowFile *file, int32_t field)
{
	const ArrowArray *d = a->dictionary;

	cd->validity = a->validity;
	cd->dict_offsets = NULL;
	cd->dict_validity = NULL;
	cd->dict_len = 0;
	cd->dict_version = 0;
	cd->dict_width = 0;
	cd->dict_magic = 0;
	cd->dict_max_chars = -1;
	if (a->field->has_dictionary && d != NULL && d->field != NULL &&
		d->field->type.id == ARROW_TYPE_UTF8)
	{
		cd->values = a->values;
		cd->data = (const char *) d->data;
		cd->dict_offsets = (const int32_t *) d->offsets;
		cd->dict_validity = d->validity;
		cd->dict_len = d->length;
		cd->dict_width = xpu_dict_width_of(a->field->dictionary.index_type);
		cd->dict_magic = XPU_DICT_MAGIC;
		cd->dict_max_chars = xpu_dict_max_chars(d);
		if (file != NULL && !file->is_stream)
			cd->dict_version = ((uint64_t) (uintptr_t) file << 16) ^ (uint16_t) field;
		else
			cd->dict_version = xpu_dict_new_version();
		return;
	}
	cd->values = a->field->type.id == ARROW_TYPE_UTF8 ? a->offsets : a->values;
	cd->data = (const char *) a->data;
}

#endif							/* PG_WARP_ARROW_H */

#endif							/* XPU_ARROW_BIND_H */
