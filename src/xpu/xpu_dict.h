/*-------------------------------------------------------------------------
 *
 * xpu_dict.h
 *		Dictionary-encoded utf8 columns in the CPU engine: an Arrow column
 *		whose rows are indices into a dictionary of utf8 values (what
 *		Parquet writers, DuckDB, pyarrow and pg2arrow --dictionary write for
 *		text of few distinct values).  XpuColumnData (xpu_program.h) then
 *		holds the indices (values, of dict_width bytes), their validity,
 *		and the dictionary's offsets, bytes and validity.
 *
 * A row's text is the dictionary's value at its index; a NULL index and a
 * NULL dictionary value are both NULL.  Every reader of a utf8 column
 * reads such a column too: LOAD_COL (xpu_load.h), the tiles' loads
 * (xpu_tile.h, xpu_load_rows) and so everything the programs do with text
 * (quals, keys, aggregate arguments, join keys).  The hash aggregation
 * groups on the indices themselves (xpu_agg_index.h).
 *
 * Indices.  Arrow's loader (src/arrow, arrow_load.c) checks every non-NULL
 * index against the dictionary when it loads a batch; the engine checks
 * again where it reads one (xpu_dict_index_ok) and never reads outside the
 * dictionary: LOAD_COL records an error, the fast loads leave the rows to
 * LOAD_COL.  Index types int8 .. int64 and uint8 .. uint64 (Arrow allows
 * both); a uint64 index above INT64_MAX is outside every dictionary.
 *
 * Only the CPU engine reads them: the GPU kernels never take a column for
 * one (xpu_is_dict compiles to 0 there; service/input.c's svc_field_fits
 * refuses dictionaries for the GPU, and an AGG_RUN over such a file runs
 * on the CPU engine).
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_DICT_H
#define XPU_DICT_H

#include "xpu_program.h"

/* XpuColumnData.dict_magic of a dictionary column ("XPUDICT1") */
#define XPU_DICT_MAGIC		UINT64_C(0x5850554449435431)

/*
 * is cd a dictionary-encoded column: never in the GPU kernels, which read
 * no dictionaries (and whose descriptors' dict_* fields nobody sets)
 */
XPU_HOST_DEVICE int
xpu_is_dict(const XpuColumnData *cd)
{
#ifdef __CUDACC__
	return 0;
#else
	return cd->dict_magic == XPU_DICT_MAGIC;
#endif
}

/* the index of row i (in the column's rows: offset added) of column cd */
XPU_HOST_DEVICE int64_t
xpu_dict_index(const XpuColumnData *cd, int64_t i)
{
	const void *v = cd->values;

	switch (cd->dict_width)
	{
		case 1: return ((const int8_t *) v)[i];
		case 2: return ((const int16_t *) v)[i];
		case 4: return ((const int32_t *) v)[i];
		case 8: return ((const int64_t *) v)[i];
		case -1: return ((const uint8_t *) v)[i];
		case -2: return ((const uint16_t *) v)[i];
		case -4: return ((const uint32_t *) v)[i];
		default: return (int64_t) ((const uint64_t *) v)[i];	/* -8 */
	}
}

/* is index ix one of the dictionary's */
XPU_HOST_DEVICE int
xpu_dict_index_ok(const XpuColumnData *cd, int64_t ix)
{
	return ix >= 0 && ix < cd->dict_len;
}

/* is dictionary value ix NULL */
XPU_HOST_DEVICE int
xpu_dict_value_null(const XpuColumnData *cd, int64_t ix)
{
	return cd->dict_validity != NULL && !((cd->dict_validity[ix >> 3] >> (ix & 7)) & 1);
}

/*
 * does every value of dictionary column cd fit column col's varchar(n)
 * (checked once for the dictionary, xpu_arrow_bind.h: its rows need no
 * check of their own)
 */
XPU_HOST_DEVICE int
xpu_dict_fits(const XpuColumn *col, const XpuColumnData *cd)
{
	return xpu_is_dict(cd) && cd->dict_max_chars >= 0 && cd->dict_max_chars <= col->scale;
}

#endif							/* XPU_DICT_H */
