/*-------------------------------------------------------------------------
 *
 * arrow_views.c
 *		The newer Arrow layouts that the reader accepts: binary and string
 *		views, list views, run-end encoding, and Decimal256 text.
 *
 * arrow_read.c reads the buffers of these arrays; here each layout is
 * validated, once, before any accessor touches it, and the accessors
 * (arrow_view_value in arrow.h, arrow_list_range, arrow_ree_index) then rely
 * on that:
 *	- a view (16 bytes: int32 length, then 12 inline bytes, or a 4-byte
 *	  prefix, int32 buffer index and int32 offset) of a non-null row has a
 *	  length >= 0; a long one names an existing data buffer and lies within
 *	  it, and its prefix equals the data's first 4 bytes;
 *	- a list view of a non-null row has offset >= 0, size >= 0 and
 *	  offset + size within the child;
 *	- run ends are positive and strictly increasing, the last at or past
 *	  the array's length, and the values child has one value per run.
 * The functions return false with a message in 'why' (whylen bytes).
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_internal.h"
#include "arrow_bits.h"
#include "arrow_types.h"

#include <stdio.h>
#include <string.h>

/* little-endian int32 at p */
static inline int32_t
get32(const uint8_t *p)
{
	int32_t		v;

	memcpy(&v, p, 4);
	return v;
}

/* See arrow_internal.h */
bool
arrow_views_validate(const uint8_t *views, int64_t length,
					 const uint8_t *validity, int32_t n_variadic,
					 const uint8_t *const *variadic, const int64_t *lengths,
					 char *why, size_t whylen)
{
	for (int64_t i = 0; i < length; i++)
	{
		const uint8_t *v = views + i * 16;
		int32_t		n = get32(v);
		int32_t		buf;
		int32_t		off;

		if (!arrow_bit_valid(validity, i))
			continue;
		if (n < 0)
		{
			snprintf(why, whylen, "view %lld has a negative length %d", (long long) i, n);
			return false;
		}
		if (n <= 12)
			continue;
		buf = get32(v + 8);
		off = get32(v + 12);
		if (buf < 0 || buf >= n_variadic)
		{
			snprintf(why, whylen, "view %lld refers to data buffer %d of %d",
					 (long long) i, buf, n_variadic);
			return false;
		}
		if (off < 0 || (int64_t) off + n > lengths[buf])
		{
			snprintf(why, whylen, "view %lld (%d bytes at %d) is past data buffer %d (%lld bytes)",
					 (long long) i, n, off, buf, (long long) lengths[buf]);
			return false;
		}
		if (memcmp(v + 4, variadic[buf] + off, 4) != 0)
		{
			snprintf(why, whylen, "view %lld has a prefix that differs from its data",
					 (long long) i);
			return false;
		}
	}
	return true;
}

/* See arrow_internal.h */
bool
arrow_list_views_validate(const void *offsets, const void *sizes, bool large,
						  int64_t length, const uint8_t *validity,
						  int64_t child_length, char *why, size_t whylen)
{
	for (int64_t i = 0; i < length; i++)
	{
		int64_t		o = arrow_offset_at(offsets, large, i);
		int64_t		n = arrow_offset_at(sizes, large, i);

		if (!arrow_bit_valid(validity, i))
			continue;
		if (o < 0 || n < 0 || o > child_length || n > child_length - o)
		{
			snprintf(why, whylen, "list view %lld (%lld values at %lld) is outside the child (%lld values)",
					 (long long) i, (long long) n, (long long) o, (long long) child_length);
			return false;
		}
	}
	return true;
}

/* Run end i of a run_ends child (int16, int32 or int64) */
static int64_t
run_end_at(const ArrowArray *ends, int64_t i)
{
	int			width = arrow_type_info(ends->field->type.id)->bit_width / 8;

	return arrow_load_int(ends->values + i * width, width);
}

/* See arrow_internal.h */
bool
arrow_run_ends_validate(const ArrowArray *a, char *why, size_t whylen)
{
	const ArrowArray *ends = &a->children[0];
	int64_t		prev = 0;

	if (ends->null_count != 0)
	{
		snprintf(why, whylen, "run ends have %lld nulls", (long long) ends->null_count);
		return false;
	}
	if (a->children[1].length < ends->length)
	{
		snprintf(why, whylen, "%lld runs but %lld values", (long long) ends->length,
				 (long long) a->children[1].length);
		return false;
	}
	for (int64_t i = 0; i < ends->length; i++)
	{
		int64_t		e = run_end_at(ends, i);

		if (e <= prev)
		{
			snprintf(why, whylen, "run end %lld (%lld) is not above the one before (%lld)",
					 (long long) i, (long long) e, (long long) prev);
			return false;
		}
		prev = e;
	}
	if (a->length > 0 && prev < a->length)
	{
		snprintf(why, whylen, "the runs end at %lld, the array has %lld values",
				 (long long) prev, (long long) a->length);
		return false;
	}
	return true;
}

/* See arrow.h */
int64_t
arrow_ree_index(const ArrowArray *a, int64_t row)
{
	const ArrowArray *ends = &a->children[0];
	int64_t		lo = 0;
	int64_t		hi = ends->length - 1;

	/* the first run whose end is above row; validation made one exist */
	while (lo < hi)
	{
		int64_t		mid = lo + (hi - lo) / 2;

		if (run_end_at(ends, mid) > row)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* See arrow.h */
void
arrow_list_range(const ArrowArray *a, int64_t row, int64_t *start, int64_t *end)
{
	const ArrowTypeInfo *info = arrow_type_info(a->field->type.id);
	bool		large = info->offset_width == 8;

	if (info->layout == ARROW_LAYOUT_FIXED_LIST)
	{
		*start = row * (int64_t) a->field->type.list_size;
		*end = *start + a->field->type.list_size;
	}
	else if (info->layout == ARROW_LAYOUT_LIST_VIEW)
	{
		*start = arrow_offset_at(a->offsets, large, row);
		*end = *start + arrow_offset_at(a->sizes, large, row);
	}
	else
	{
		/* LIST, LARGE_LIST, MAP */
		*start = arrow_offset_at(a->offsets, large, row);
		*end = arrow_offset_at(a->offsets, large, row + 1);
	}
}

/* See arrow.h */
void
arrow_decimal256_format(const uint8_t *v, int32_t scale, char *buf, size_t len)
{
	uint32_t	limb[8];		/* magnitude, least significant first */
	bool		neg = (v[31] & 0x80) != 0;
	char		digits[100];
	int			nd = 0;
	char		out[ARROW_DECIMAL256_MAX_TEXT];
	int			o = 0;
	bool		nonzero = true;

	memcpy(limb, v, 32);
	if (neg)
	{
		/* two's complement negation */
		uint64_t	carry = 1;

		for (int i = 0; i < 8; i++)
		{
			uint64_t	x = (uint64_t) (uint32_t) ~limb[i] + carry;

			limb[i] = (uint32_t) x;
			carry = x >> 32;
		}
	}
	/* decimal digits, least significant first, by repeated division by 10 */
	while (nonzero)
	{
		uint64_t	rem = 0;

		nonzero = false;
		for (int i = 7; i >= 0; i--)
		{
			uint64_t	cur = (rem << 32) | limb[i];

			limb[i] = (uint32_t) (cur / 10);
			rem = cur % 10;
			if (limb[i] != 0)
				nonzero = true;
		}
		digits[nd++] = (char) ('0' + rem);
	}
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	if (neg && !(nd == 1 && digits[0] == '0'))
		out[o++] = '-';
	if (scale <= 0)
	{
		for (int i = nd - 1; i >= 0; i--)
			out[o++] = digits[i];
		for (int i = 0; i < -scale && !(nd == 1 && digits[0] == '0'); i++)
			out[o++] = '0';
	}
	else
	{
		int			whole = nd - scale;

		if (whole <= 0)
			out[o++] = '0';
		for (int i = nd - 1; i >= scale; i--)
			out[o++] = digits[i];
		out[o++] = '.';
		for (int i = scale - 1; i >= 0; i--)
			out[o++] = i < nd ? digits[i] : '0';
	}
	out[o] = '\0';
	snprintf(buf, len, "%s", out);
}
