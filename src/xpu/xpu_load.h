/*-------------------------------------------------------------------------
 *
 * xpu_load.h
 *		Opcode bodies that bring values into registers (xpu_step.h states
 *		the contract): LOAD_COL from an Arrow column of the chunk, and the
 *		CONST_* opcodes from the constants pool.
 *
 * LOAD_COL converts Arrow's physical values to PostgreSQL's (a float16
 * keeps its bits: that is pg_warp's float2 representation): dates and
 * timestamps move from the 1970 epoch to 2000, timestamps of any unit
 * become microseconds; decimal128 keeps its scale (the register's).  A
 * The storage type's minimum and maximum of a date32 or timestamp (any
 * unit) are PostgreSQL's -infinity and infinity, as arrow_fdw reads them
 * (pg2arrow writes its infinities so).  A
 * value that PostgreSQL cannot hold exactly (a timestamp or interval with nanoseconds,
 * a date or timestamp out of PostgreSQL's range, a decimal beyond 38
 * digits, a string of more characters than its varchar(n) column holds) is
 * a FALLBACK: PostgreSQL's own Arrow reader decides for it.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_LOAD_H
#define XPU_LOAD_H

#include "xpu_numeric.h"
#include "xpu_date.h"
#include "xpu_text.h"
#include "xpu_dict.h"

#define XPU_LOAD_FALLBACK(s) \
	XPU_STEP_FAIL(s, XPU_ERR_FALLBACK, "arrow value outside what the engine holds exactly")

/* is bit i of an Arrow bitmap set */
XPU_HOST_DEVICE int
xpu_bit(const uint8_t *bits, int64_t i)
{
	return (bits[i >> 3] >> (i & 7)) & 1;
}

/* a timestamp of unit mult microseconds (div: 1000 for ns) since 1970 */
XPU_HOST_DEVICE void
xpu_load_ts(XpuCtx *s, int64_t v, int64_t mult, int64_t div)
{
	int64_t		us;

	/* the storage type's min/max in every unit: -infinity / infinity */
	if (v == INT64_MIN || v == INT64_MAX)
	{
		XPU_SET_I(s, v == INT64_MIN ? XPU_DT_NOBEGIN : XPU_DT_NOEND);
		return;
	}
	if (div > 1)
	{
		if (v % div != 0)
		{
			XPU_LOAD_FALLBACK(s);
			return;
		}
		us = v / div;
	}
	else if (xpu_mul_i64(v, mult, &us))
	{
		XPU_LOAD_FALLBACK(s);
		return;
	}
	/* the lower bound first: the subtraction cannot overflow after it */
	if (us < XPU_TIMESTAMP_MIN + INT64_C(946684800000000) ||
		!xpu_timestamp_valid(us - INT64_C(946684800000000)))
		XPU_LOAD_FALLBACK(s);
	else
		XPU_SET_I(s, us - INT64_C(946684800000000));
}

/* one fixed-width or utf8 value of row i (validity already checked) */
XPU_HOST_DEVICE void
xpu_load_value(XpuCtx *s, const XpuColumn *col, const XpuColumnData *cd, int64_t i)
{
	const void *v = cd->values;

	switch (col->kind)
	{
		case XPU_COL_BOOL: XPU_SET_I(s, xpu_bit((const uint8_t *) v, i)); break;
		case XPU_COL_INT8: XPU_SET_I(s, ((const int8_t *) v)[i]); break;
		case XPU_COL_INT16: XPU_SET_I(s, ((const int16_t *) v)[i]); break;
		case XPU_COL_INT32: XPU_SET_I(s, ((const int32_t *) v)[i]); break;
		case XPU_COL_INT64: XPU_SET_I(s, ((const int64_t *) v)[i]); break;
		case XPU_COL_FLOAT32: s->d->f4 = ((const float *) v)[i]; *s->dn = 0; break;
		case XPU_COL_FLOAT64: s->d->f8 = ((const double *) v)[i]; *s->dn = 0; break;
		case XPU_COL_FLOAT16: XPU_SET_I(s, ((const uint16_t *) v)[i]); break;
		case XPU_COL_DATE32:
			{
				int32_t		raw = ((const int32_t *) v)[i];
				int64_t		d = (int64_t) raw - XPU_UNIX_EPOCH_DAYS;

				if (raw == INT32_MIN || raw == INT32_MAX)
					XPU_SET_I(s, raw == INT32_MIN ? XPU_DATEVAL_NOBEGIN : XPU_DATEVAL_NOEND);
				else if (!xpu_date_valid(d))
					XPU_LOAD_FALLBACK(s);
				else
					XPU_SET_I(s, d);
				break;
			}
		case XPU_COL_TIMESTAMP_S: xpu_load_ts(s, ((const int64_t *) v)[i], 1000000, 1); break;
		case XPU_COL_TIMESTAMP_MS: xpu_load_ts(s, ((const int64_t *) v)[i], 1000, 1); break;
		case XPU_COL_TIMESTAMP_US: xpu_load_ts(s, ((const int64_t *) v)[i], 1, 1); break;
		case XPU_COL_TIMESTAMP_NS: xpu_load_ts(s, ((const int64_t *) v)[i], 1, 1000); break;
		case XPU_COL_DECIMAL128:
			{
				const uint64_t *w = (const uint64_t *) v + 2 * i;
				__int128	n = (__int128) (((unsigned __int128) w[1] << 64) | w[0]);

				if (n > xpu_num_max() || n < -xpu_num_max())
					XPU_LOAD_FALLBACK(s);
				else
					xpu_num_set(s, n);
				break;
			}
		case XPU_COL_UTF8:
			{
				const int32_t *off = (const int32_t *) v;

				if (xpu_is_dict(cd))
				{
					/* dictionary-encoded (xpu_dict.h): the value at the row's index */
					i = xpu_dict_index(cd, i);
					if (!xpu_dict_index_ok(cd, i))
					{
						XPU_STEP_FAIL(s, XPU_ERR_INVALID_ARGUMENT,
									  "dictionary index outside the dictionary");
						break;
					}
					if (xpu_dict_value_null(cd, i))
					{
						*s->dn = 1;
						break;
					}
					off = cd->dict_offsets;
				}
				s->d->t.p = cd->data + off[i];
				s->d->t.len = off[i + 1] - off[i];
				*s->dn = 0;
				/* longer than varchar(n): PostgreSQL's reader errs or trims */
				if (col->scale > 0 && s->d->t.len > col->scale &&
					xpu_utf8_skip(&s->d->t, 0, col->scale) < s->d->t.len)
					XPU_LOAD_FALLBACK(s);
				break;
			}
		case XPU_COL_INTERVAL_MDN:
			{
				const char *p = (const char *) v + 16 * i;
				int64_t		ns = *(const int64_t *) (p + 8);

				if (ns % 1000 != 0)
					XPU_LOAD_FALLBACK(s);
				else
				{
					s->d->iv.months = *(const int32_t *) p;
					s->d->iv.days = *(const int32_t *) (p + 4);
					s->d->iv.us = ns / 1000;
					*s->dn = 0;
				}
				break;
			}
		default:
			XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "unknown column kind");
	}
}

/* LOAD_COL: column descriptor imm, row s->row of the chunk */
XPU_STEP(LOAD_COL)
{
	const XpuColumn *col = XPU_COLS(s->prog) + s->ins->imm;
	const XpuColumnData *cd = s->cols + col->col_index;
	int64_t		i = s->row + cd->offset;

	if (cd->validity != NULL && !xpu_bit(cd->validity, i))
		*s->dn = 1;
	else
		xpu_load_value(s, col, cd, i);
}

XPU_STEP(CONST_NULL) { *s->dn = 1; }
XPU_STEP(CONST_BOOL) { XPU_SET_I(s, s->ins->imm != 0); }
XPU_STEP(CONST_INT) { XPU_SET_I(s, *(const int64_t *) xpu_const_ptr(s)); }

XPU_STEP(CONST_F4)
{
	s->d->f4 = *(const float *) xpu_const_ptr(s);
	*s->dn = 0;
}

XPU_STEP(CONST_F8)
{
	s->d->f8 = *(const double *) xpu_const_ptr(s);
	*s->dn = 0;
}

XPU_STEP(CONST_NUM)
{
	const uint64_t *w = (const uint64_t *) xpu_const_ptr(s);

	xpu_num_set(s, (__int128) (((unsigned __int128) w[1] << 64) | w[0]));
}

XPU_STEP(CONST_TEXT)
{
	s->d->t = xpu_const_text(s->prog, s->ins->imm);
	*s->dn = 0;
}

#endif							/* XPU_LOAD_H */
