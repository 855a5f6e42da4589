/*-------------------------------------------------------------------------
 *
 * arrow_load.c
 *		arrow_batch_load: reads the buffers of the wanted columns of a record
 *		batch, decompresses them, and validates everything a value accessor
 *		relies on (buffer sizes for the node lengths, offsets, child lengths,
 *		views, run ends, dictionary indices).  Memory of a loaded batch lives
 *		in its arena.  The dictionaries it needs come from arrow_load_dict.c.
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
 * Batch loading
 * ------------------------------------------------------------------------
 */

/* What zero-length buffers point to: readable as offsets {0} of any width */
static const int64_t zero_block[2];

/* Registers p (allocated with arena->alloc) with the arena; frees it on failure */
static int
arena_add(Arena *arena, void *p, ArrowError *err)
{
	if (arena->n == arena->cap)
	{
		int32_t		cap = arena->cap ? arena->cap * 2 : 32;
		void	  **ptrs = arrow_realloc(arena->alloc, arena->ptrs, sizeof(void *) * cap, err);

		if (ptrs == NULL)
		{
			arrow_free(arena->alloc, p);
			return ARROW_ERR_NOMEM;
		}
		arena->ptrs = ptrs;
		arena->cap = cap;
	}
	arena->ptrs[arena->n++] = p;
	return ARROW_OK;
}

/* Zeroed memory owned by the arena */
void *
arrow_arena_calloc(Arena *arena, size_t n, size_t size, ArrowError *err)
{
	void	   *p = arrow_calloc(arena->alloc, n, size, err);

	if (p == NULL || arena_add(arena, p, err) != ARROW_OK)
		return NULL;
	return p;
}

/* Frees every allocation of the arena */
void
arrow_arena_free(Arena *arena)
{
	for (int32_t i = 0; i < arena->n; i++)
		arrow_free(arena->alloc, arena->ptrs[i]);
	arrow_free(arena->alloc, arena->ptrs);
	arena->ptrs = NULL;
	arena->n = arena->cap = 0;
}

/* Sets an ARROW_ERR_INVALID naming the batch and the field */
int
arrow_load_error(Loader *L, const ArrowField *f, const char *fmt,...)
{
	char		detail[384];
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	return arrow_set_error(L->err, ARROW_ERR_INVALID, "%s, field \"%s\": %s",
						   L->what, f->name, detail);
}

/* Sets an ARROW_ERR_LIMIT for a buffer of 'bytes' above the caller's cap */
static int
limit_error(Loader *L, const ArrowField *f, int64_t bytes)
{
	return arrow_set_error(L->err, ARROW_ERR_LIMIT,
						   "%s, field \"%s\": buffer of %lld bytes exceeds the limit of %lld bytes",
						   L->what, f->name, (long long) bytes,
						   (long long) L->file->max_buffer_size);
}

/* Whether a buffer of 'bytes' is above the caller's cap (0: none) */
static bool
above_limit(const Loader *L, int64_t bytes)
{
	return L->file->max_buffer_size > 0 && bytes > L->file->max_buffer_size;
}

/*
 * Reads the next buffer of the batch (decompressing it) into arena memory,
 * or, when 'plain' (nothing checks its bytes: see ArrowFile.map) and the
 * caller mapped the file, points it into the mapping where that holds it
 * uncompressed at a multiple of 8.  A zero-length buffer gives zero_block.
 *
 * What a buffer may declare, and what it costs:
 *	- A buffer of an empty node (length 0) is not read at all, whatever it
 *	  declares, and gives zero_block: no value of the array is ever read,
 *	  and its offsets read as {0}.  Writers may leave such a buffer whole:
 *	  the C++ writer (pyarrow) writes an empty slice with its parent's whole
 *	  offsets buffer, compressed or not.
 *	- 'max' is the most bytes the buffer can need for a non-empty node (-1:
 *	  unknown, for variable-width data).  A compressed buffer declaring more
 *	  than that, rounded up to the 64-byte padding of writers, is corrupt:
 *	  writers cut the buffers of a non-empty slice to its padded length.
 *	- No buffer, stored or decompressed, may exceed file->max_buffer_size.
 * Both checks come before the output of a decompression is allocated, so
 * a bomb costs no more than its stored bytes or what its node needs.
 */
static int
read_buffer(Loader *L, const ArrowField *f, int64_t max, bool plain,
			const uint8_t **data, int64_t *len)
{
	const ArrowBufferRef *ref = &L->info->buffers[L->buffer++];
	int64_t		offset = L->info->body_offset + ref->offset;
	Arena	   *arena = &L->bp->arena;
	uint8_t    *raw;
	int64_t		declared;
	uint8_t    *out;

	*data = (const uint8_t *) zero_block;
	*len = 0;
	if (ref->length == 0 || L->info->nodes[L->node - 1].length == 0)
		return ARROW_OK;
	if (above_limit(L, ref->length))
		return limit_error(L, f, ref->length);
	if ((uint64_t) ref->length > SIZE_MAX / 2)
		return arrow_load_error(L, f, "buffer of %lld bytes is too large", (long long) ref->length);
	if (plain && L->file->map != NULL && L->info->codec == ARROW_CODEC_NONE &&
		offset % 8 == 0 && offset >= 0 && offset <= L->file->source.size &&
		ref->length <= L->file->source.size - offset)
	{
		*data = L->file->map + offset;
		*len = ref->length;
		return ARROW_OK;
	}
	raw = arrow_malloc(arena->alloc, (size_t) ref->length, L->err);
	if (raw == NULL)
		return ARROW_ERR_NOMEM;
	if (arrow_read_bytes(L->file, offset, raw, (size_t) ref->length, L->err) != ARROW_OK)
	{
		arrow_free(arena->alloc, raw);
		return L->err->code;
	}
	if (L->info->codec == ARROW_CODEC_NONE)
	{
		*data = raw;
		*len = ref->length;
		return arena_add(arena, raw, L->err);
	}
	/* compressed: int64 uncompressed length (-1: stored as is), then data */
	if (ref->length < 8)
	{
		arrow_free(arena->alloc, raw);
		return arrow_load_error(L, f, "compressed buffer of %lld bytes has no length prefix",
						  (long long) ref->length);
	}
	declared = (int64_t) fb_le64(raw);
	if (declared == -1)
	{
		*data = raw + 8;
		*len = ref->length - 8;
		return arena_add(arena, raw, L->err);
	}
	if (declared < -1)
	{
		arrow_free(arena->alloc, raw);
		return arrow_load_error(L, f, "invalid uncompressed buffer length %lld", (long long) declared);
	}
	if (declared == 0)
	{
		arrow_free(arena->alloc, raw);
		return ARROW_OK;
	}
	/* a decompression bomb is refused before its output is allocated */
	if (max >= 0 && max <= INT64_MAX - ARROW_ALIGNMENT && declared > arrow_align64(max))
	{
		arrow_free(arena->alloc, raw);
		return arrow_load_error(L, f, "compressed buffer declares %lld bytes, %lld values need at most %lld",
						  (long long) declared, (long long) L->info->nodes[L->node - 1].length,
						  (long long) max);
	}
	if (above_limit(L, declared))
	{
		arrow_free(arena->alloc, raw);
		return limit_error(L, f, declared);
	}
	if (arrow_decompress(L->codec, L->info->codec, raw + 8, (size_t) (ref->length - 8),
						 declared, &out, L->err) != ARROW_OK)
	{
		int			rc = L->err->code;

		arrow_free(arena->alloc, raw);
		if (rc == ARROW_ERR_INVALID)
			return arrow_load_error(L, f, "%s", L->err->message);
		return rc;
	}
	arrow_free(arena->alloc, raw);
	*data = out;
	*len = declared;
	return arena_add(arena, out, L->err);
}

/* Bytes for n values of 'width' bytes, or -1 on overflow */
static int64_t
bytes_for(int64_t n, int64_t width)
{
	int64_t		r;

	return arrow_mul_overflow(n, width, &r) ? -1 : r;
}

/* The validity buffer: required (ceil(length/8) bytes) when there are nulls */
static int
load_validity(Loader *L, const ArrowField *f, ArrowArray *a)
{
	const uint8_t *p;
	int64_t		len;

	if (read_buffer(L, f, arrow_bitmap_bytes(a->length), true, &p, &len) != ARROW_OK)
		return L->err->code;
	if (a->null_count == 0)
		return ARROW_OK;		/* a->validity stays NULL: no value is null */
	if (len < arrow_bitmap_bytes(a->length))
		return arrow_load_error(L, f, "validity bitmap of %lld bytes is too short for %lld values",
						  (long long) len, (long long) a->length);
	a->validity = p;
	return ARROW_OK;
}

/*
 * The values buffer of a: at least 'need' bytes (-1: the size overflowed)
 * into a->values.
 */
static int
load_values(Loader *L, const ArrowField *f, ArrowArray *a, int64_t need,
			const char *name, bool plain)
{
	const uint8_t *p;
	int64_t		len;

	if (need < 0)
		return arrow_load_error(L, f, "%s buffer for %lld values would overflow",
						  name, (long long) a->length);
	if (read_buffer(L, f, need, plain, &p, &len) != ARROW_OK)
		return L->err->code;
	if (len < need)
		return arrow_load_error(L, f, "%s buffer of %lld bytes is too short for %lld values",
						  name, (long long) len, (long long) a->length);
	a->values = p;
	return ARROW_OK;
}

/*
 * The offsets buffer of a - length + 1 entries, starting at >= 0, never
 * decreasing - into a->offsets.  The caller checks the last one against the
 * data or child length.
 */
static int
load_offsets(Loader *L, const ArrowField *f, ArrowArray *a, bool large)
{
	const uint8_t *p;
	int64_t		len;
	int64_t		need;
	int64_t		prev;

	need = (a->length == INT64_MAX) ? -1 : bytes_for(a->length + 1, large ? 8 : 4);
	if (need < 0)
		return arrow_load_error(L, f, "offsets buffer for %lld values would overflow",
						  (long long) a->length);
	if (read_buffer(L, f, need, false, &p, &len) != ARROW_OK)
		return L->err->code;
	if (a->length == 0)
	{
		a->offsets = zero_block;	/* {0}: read_buffer reads nothing of it */
		return ARROW_OK;
	}
	if (len < need)
		return arrow_load_error(L, f, "offsets buffer of %lld bytes is too short for %lld values",
						  (long long) len, (long long) a->length);
	prev = arrow_offset_at(p, large, 0);
	if (prev < 0)
		return arrow_load_error(L, f, "first offset %lld is negative", (long long) prev);
	for (int64_t i = 1; i <= a->length; i++)
	{
		int64_t		o = arrow_offset_at(p, large, i);

		if (o < prev)
			return arrow_load_error(L, f, "offset %lld (%lld) is less than the one before (%lld)",
							  (long long) i, (long long) o, (long long) prev);
		prev = o;
	}
	a->offsets = p;
	return ARROW_OK;
}

static inline int64_t
last_offset(const ArrowArray *a, bool large)
{
	return arrow_offset_at(a->offsets, large, a->length);
}


/* Loads the arrays of the children of f into a->children */
static int
load_children(Loader *L, const ArrowField *f, ArrowArray *a)
{
	if (f->n_children == 0)
		return ARROW_OK;
	a->children = arrow_arena_calloc(&L->bp->arena, f->n_children, sizeof(ArrowArray), L->err);
	if (a->children == NULL)
		return ARROW_ERR_NOMEM;
	a->n_children = f->n_children;
	for (int32_t i = 0; i < f->n_children; i++)
	{
		if (arrow_load_array(L, &f->children[i], &a->children[i]) != ARROW_OK)
			return L->err->code;
	}
	return ARROW_OK;
}


/* Index i of an index array of type 'type', as int64 (uint64 > INT64_MAX: -1) */
static int64_t
index_at(const ArrowArray *a, ArrowTypeId type, int64_t i)
{
	const ArrowTypeInfo *info = arrow_type_info(type);
	int			width = info->bit_width / 8;
	uint64_t	u;

	if (info->value == ARROW_VALUE_INT)
		return arrow_load_int(a->values + i * width, width);
	u = arrow_load_uint(a->values + i * width, width);
	return u > INT64_MAX ? -1 : (int64_t) u;
}

/*
 * Are the non-null indices of a (of type `type`) all below dict_len: one
 * loop a type without a branch a row (a negative or a uint64 index above
 * INT64_MAX is a huge one as uint64); the caller finds the row otherwise
 */
static bool
indices_fit(const ArrowArray *a, ArrowTypeId type, int64_t dict_len)
{
	const uint8_t *vb = a->validity;
	uint64_t	len = (uint64_t) dict_len,
				bad = 0;

#define INDICES_FIT(T) \
	do { \
		const T *v = (const T *) a->values; \
		if (vb == NULL) \
			for (int64_t i = 0; i < a->length; i++) \
				bad |= (uint64_t) v[i] >= len; \
		else \
			for (int64_t i = 0; i < a->length; i++) \
				bad |= ((vb[i >> 3] >> (i & 7)) & 1) & ((uint64_t) v[i] >= len); \
	} while (0)
	switch (type)
	{
		case ARROW_TYPE_INT8: INDICES_FIT(int8_t); break;
		case ARROW_TYPE_INT16: INDICES_FIT(int16_t); break;
		case ARROW_TYPE_INT32: INDICES_FIT(int32_t); break;
		case ARROW_TYPE_INT64: INDICES_FIT(int64_t); break;
		case ARROW_TYPE_UINT8: INDICES_FIT(uint8_t); break;
		case ARROW_TYPE_UINT16: INDICES_FIT(uint16_t); break;
		case ARROW_TYPE_UINT32: INDICES_FIT(uint32_t); break;
		case ARROW_TYPE_UINT64: INDICES_FIT(uint64_t); break;
		default: return false;
	}
#undef INDICES_FIT
	return bad == 0;
}

/* A dictionary-encoded array: validity, indices, and its dictionary */
static int
load_dictionary_encoded(Loader *L, const ArrowField *f, ArrowArray *a)
{
	ArrowType	itype = {.id = f->dictionary.index_type};
	int			width = arrow_type_value_width(&itype);
	int64_t		dict_len;

	if (load_validity(L, f, a) != ARROW_OK ||
		load_values(L, f, a, bytes_for(a->length, width), "indices", false) != ARROW_OK ||
		arrow_get_dictionary(L, f, &a->dictionary) != ARROW_OK)
		return L->err->code;
	dict_len = a->dictionary->length;
	if (indices_fit(a, itype.id, dict_len))
		return ARROW_OK;
	for (int64_t i = 0; i < a->length; i++)
	{
		int64_t		ix;

		if (a->validity != NULL && !arrow_bit_get(a->validity, i))
			continue;
		ix = index_at(a, itype.id, i);
		if (ix < 0 || ix >= dict_len)
			return arrow_load_error(L, f, "dictionary index %lld at row %lld is outside the dictionary (%lld values)",
							  (long long) ix, (long long) i, (long long) dict_len);
	}
	return ARROW_OK;
}

/* A buffer of at least 'need' bytes (-1: overflowed) into *out */
static int
load_sized(Loader *L, const ArrowField *f, int64_t need, const char *name,
		   int64_t length, const void **out)
{
	const uint8_t *p;
	int64_t		len;

	if (need < 0)
		return arrow_load_error(L, f, "%s buffer for %lld values would overflow", name, (long long) length);
	if (read_buffer(L, f, need, false, &p, &len) != ARROW_OK)
		return L->err->code;
	if (len < need)
		return arrow_load_error(L, f, "%s buffer of %lld bytes is too short for %lld values",
						  name, (long long) len, (long long) length);
	*out = p;
	return ARROW_OK;
}

/*
 * A UTF8_VIEW/BINARY_VIEW array: validity, the 16-byte views, then this
 * batch's count of data buffers (arrow_views_validate checks the views).
 */
static int
load_views(Loader *L, const ArrowField *f, ArrowArray *a)
{
	int64_t		count;
	const uint8_t **bufs;
	int64_t    *lens;
	char		why[256];

	if (load_validity(L, f, a) != ARROW_OK ||
		load_values(L, f, a, bytes_for(a->length, 16), "views", false) != ARROW_OK)
		return L->err->code;
	if (L->variadic >= L->info->n_variadic)
		return arrow_load_error(L, f, "no variadic buffer count for the field");
	count = L->info->variadic_counts[L->variadic++];
	bufs = arrow_arena_calloc(&L->bp->arena, count + 1, sizeof(uint8_t *), L->err);
	lens = arrow_arena_calloc(&L->bp->arena, count + 1, sizeof(int64_t), L->err);
	if (bufs == NULL || lens == NULL)
		return ARROW_ERR_NOMEM;
	for (int64_t i = 0; i < count; i++)
	{
		if (read_buffer(L, f, -1, false, &bufs[i], &lens[i]) != ARROW_OK)
			return L->err->code;
	}
	a->n_variadic = (int32_t) count;
	a->variadic = bufs;
	a->variadic_lengths = lens;
	if (!arrow_views_validate(a->values, a->length, a->validity, a->n_variadic,
							  bufs, lens, why, sizeof(why)))
		return arrow_load_error(L, f, "%s", why);
	return ARROW_OK;
}

/* A LIST_VIEW/LARGE_LIST_VIEW array: validity, offsets, sizes, the child */
static int
load_list_views(Loader *L, const ArrowField *f, ArrowArray *a, bool large)
{
	int64_t		need = bytes_for(a->length, large ? 8 : 4);
	char		why[256];

	if (load_validity(L, f, a) != ARROW_OK ||
		load_sized(L, f, need, "offsets", a->length, &a->offsets) != ARROW_OK ||
		load_sized(L, f, need, "sizes", a->length, &a->sizes) != ARROW_OK ||
		load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	if (!arrow_list_views_validate(a->offsets, a->sizes, large, a->length, a->validity,
								   a->children[0].length, why, sizeof(why)))
		return arrow_load_error(L, f, "%s", why);
	return ARROW_OK;
}

/* A RUN_END_ENCODED array: no buffers, children run_ends and values */
static int
load_run_end_encoded(Loader *L, const ArrowField *f, ArrowArray *a)
{
	char		why[256];

	if (a->null_count != 0)
		return arrow_load_error(L, f, "a run-end encoded array has a null count (%lld)",
						  (long long) a->null_count);
	if (load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	if (!arrow_run_ends_validate(a, why, sizeof(why)))
		return arrow_load_error(L, f, "%s", why);
	return ARROW_OK;
}

/* A FIXED_SIZE_LIST array: validity, and a child of length * list_size values */
static int
load_fixed_size_list(Loader *L, const ArrowField *f, ArrowArray *a)
{
	int64_t		need = bytes_for(a->length, f->type.list_size);

	if (load_validity(L, f, a) != ARROW_OK ||
		load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	if (need < 0 || a->children[0].length < need)
		return arrow_load_error(L, f, "child has %lld values, %lld lists of %d need more",
								(long long) a->children[0].length, (long long) a->length,
								f->type.list_size);
	return ARROW_OK;
}

/* A STRUCT array: validity, and children of at least its length */
static int
load_struct(Loader *L, const ArrowField *f, ArrowArray *a)
{
	if (load_validity(L, f, a) != ARROW_OK ||
		load_children(L, f, a) != ARROW_OK)
		return L->err->code;
	for (int32_t i = 0; i < a->n_children; i++)
	{
		if (a->children[i].length < a->length)
			return arrow_load_error(L, f, "child \"%s\" has %lld values, the struct %lld",
									f->children[i].name, (long long) a->children[i].length,
									(long long) a->length);
	}
	return ARROW_OK;
}

/*
 * Loads the next node of the batch as an array of field f (and its
 * children), checking everything a value accessor relies on:
 *	- validity: NULL when null_count is 0, else at least ceil(length/8) bytes
 *	- fixed-width values: length * width bytes (bits for BOOL)
 *	- offsets: length + 1 entries, first >= 0, non-decreasing, last within
 *	  the data (UTF8/BINARY) or the child (LIST)
 *	- children: FIXED_SIZE_LIST child >= length * list_size values, STRUCT
 *	  children >= length values
 *	- dictionary indices: non-null ones within the dictionary
 *	- views, list views and run ends: see arrow_views.c
 */
int
arrow_load_array(Loader *L, const ArrowField *f, ArrowArray *a)
{
	const ArrowNode *node = &L->info->nodes[L->node++];
	const ArrowTypeInfo *info = arrow_type_info(f->type.id);
	bool		large = info != NULL && info->offset_width == 8;
	const uint8_t *p;
	int64_t		len;

	memset(a, 0, sizeof(ArrowArray));
	a->field = f;
	a->length = node->length;
	a->null_count = node->null_count;
	if (f->has_dictionary)
		return load_dictionary_encoded(L, f, a);
	if (info == NULL)
		return arrow_set_error(L->err, ARROW_ERR_UNSUPPORTED, "field \"%s\": unknown type id %d",
							   f->name, (int) f->type.id);
	switch (info->layout)
	{
		case ARROW_LAYOUT_NULL:
			a->null_count = a->length;
			return ARROW_OK;
		case ARROW_LAYOUT_BITS:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_values(L, f, a, arrow_bitmap_bytes(a->length), "values", true) != ARROW_OK)
				return L->err->code;
			return ARROW_OK;
		case ARROW_LAYOUT_FIXED:
			/* FIXED_SIZE_BINARY included */
			if (load_validity(L, f, a) != ARROW_OK ||
				load_values(L, f, a, bytes_for(a->length, arrow_type_value_width(&f->type)),
							"values", true) != ARROW_OK)
				return L->err->code;
			return ARROW_OK;
		case ARROW_LAYOUT_VAR:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_offsets(L, f, a, large) != ARROW_OK ||
				read_buffer(L, f, -1, true, &p, &len) != ARROW_OK)
				return L->err->code;
			if (last_offset(a, large) > len)
				return arrow_load_error(L, f, "last offset %lld is past the data (%lld bytes)",
										(long long) last_offset(a, large), (long long) len);
			a->data = p;
			a->data_length = len;
			return ARROW_OK;
		case ARROW_LAYOUT_VIEW:
			return load_views(L, f, a);
		case ARROW_LAYOUT_LIST_VIEW:
			return load_list_views(L, f, a, large);
		case ARROW_LAYOUT_RUN_END:
			return load_run_end_encoded(L, f, a);
		case ARROW_LAYOUT_LIST:
			if (load_validity(L, f, a) != ARROW_OK ||
				load_offsets(L, f, a, large) != ARROW_OK ||
				load_children(L, f, a) != ARROW_OK)
				return L->err->code;
			if (last_offset(a, large) > a->children[0].length)
				return arrow_load_error(L, f, "last offset %lld is past the child (%lld values)",
										(long long) last_offset(a, large), (long long) a->children[0].length);
			return ARROW_OK;
		case ARROW_LAYOUT_FIXED_LIST:
			return load_fixed_size_list(L, f, a);
		case ARROW_LAYOUT_STRUCT:
			return load_struct(L, f, a);
	}
	return ARROW_OK;
}

/* Frees a loaded batch: its arrays, buffers and dictionaries */
void
arrow_batch_free(ArrowBatch *batch)
{
	BatchPriv  *bp;
	const ArrowAllocator *alloc;

	if (batch == NULL)
		return;
	bp = batch->priv;
	alloc = bp->arena.alloc;
	arrow_arena_free(&bp->arena);
	arrow_free(alloc, bp);
	arrow_free(alloc, batch);
}

/*
 * See arrow.h.  Reads and checks the wanted columns with load_array; on
 * failure nothing stays allocated.
 */
int
arrow_batch_load(ArrowFile *file, int32_t batch, const bool *want,
				 ArrowBatch **out, ArrowError *err)
{
	ArrowBatch *b;
	BatchPriv  *bp;
	ArrowCodecCtx codec;
	Loader		L;
	int			rc = ARROW_OK;
	ArrowError	local;

	if (err == NULL)
		err = &local;
	if (out == NULL)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no output pointer");
	*out = NULL;
	if (file == NULL || batch < 0 || batch >= file->n_batches)
		return arrow_set_error(err, ARROW_ERR_ARGUMENT, "no record batch %d", batch);
	b = arrow_calloc(file->alloc, 1, sizeof(ArrowBatch), err);
	if (b == NULL)
		return ARROW_ERR_NOMEM;
	bp = arrow_calloc(file->alloc, 1, sizeof(BatchPriv), err);
	if (bp == NULL)
	{
		arrow_free(file->alloc, b);
		return ARROW_ERR_NOMEM;
	}
	bp->arena.alloc = file->alloc;
	b->priv = bp;
	b->file = file;
	b->index = batch;
	b->n_rows = file->batches[batch].n_rows;
	b->n_columns = file->schema.n_fields;
	if (b->n_columns > 0)
	{
		b->columns = arrow_arena_calloc(&bp->arena, b->n_columns, sizeof(ArrowArray), err);
		if (b->columns == NULL)
		{
			arrow_batch_free(b);
			return ARROW_ERR_NOMEM;
		}
	}

	arrow_codec_init(&codec, file->alloc);
	memset(&L, 0, sizeof(L));
	L.file = file;
	L.info = &file->batches[batch];
	L.bp = bp;
	L.codec = &codec;
	L.visible = ((const ReaderPriv *) file->priv)->visible_dicts[batch];
	L.err = err;
	snprintf(L.what, sizeof(L.what), "record batch %d", batch);
	for (int32_t c = 0; c < b->n_columns && rc == ARROW_OK; c++)
	{
		if (want != NULL && !want[c])
			continue;
		L.node = file->columns[c].first_node;
		L.buffer = file->columns[c].first_buffer;
		if (L.info->column_first_buffer != NULL)
		{
			L.buffer = L.info->column_first_buffer[c];
			L.variadic = L.info->column_first_variadic[c];
		}
		rc = arrow_load_array(&L, &file->schema.fields[c], &b->columns[c]);
	}
	arrow_codec_free(&codec);
	if (rc != ARROW_OK)
	{
		arrow_batch_free(b);
		return rc;
	}
	*out = b;
	return ARROW_OK;
}
