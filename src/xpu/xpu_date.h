/*-------------------------------------------------------------------------
 *
 * xpu_date.h
 *		Opcode bodies of date and timestamp (xpu_step.h states the contract).
 *
 * date is int32 days since 2000-01-01 and timestamp int64 microseconds
 * since 2000-01-01 00:00, both proleptic Gregorian, with PostgreSQL's
 * infinities (DATEVAL_NOBEGIN/NOEND, DT_NOBEGIN/NOEND = INT64_MIN/MAX) and
 * valid ranges (IS_VALID_DATE, IS_VALID_TIMESTAMP).  Comparisons use the
 * integer ones (EQ_INT, ...).  Errors are 22008 with PostgreSQL's messages.
 * date_part() returns float8 as PostgreSQL 15's date_part(text, timestamp)
 * does (an infinite input gives +-Infinity for year and epoch, NULL for the
 * other fields); date_trunc() works on timestamp without time zone.
 * timestamptz fields and date_trunc need a time zone: not implemented, so
 * codegen must keep them in PostgreSQL.  Interval opcodes: xpu_interval.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_DATE_H
#define XPU_DATE_H

#include <math.h>

#include "xpu_step.h"

/* the fields of DATE_PART_TS and units of DATE_TRUNC_TS (the immediate) */
typedef enum XpuDateField
{
	XPU_DF_YEAR = 1,
	XPU_DF_QUARTER,
	XPU_DF_MONTH,
	XPU_DF_WEEK,				/* date_trunc only */
	XPU_DF_DAY,
	XPU_DF_HOUR,
	XPU_DF_MINUTE,
	XPU_DF_SECOND,
	XPU_DF_DOW,					/* date_part only */
	XPU_DF_DOY,					/* date_part only */
	XPU_DF_EPOCH,				/* date_part only */
	XPU_DF_N_FIELDS
} XpuDateField;

#define XPU_DATE_ERROR(s, msg)	XPU_STEP_FAIL(s, XPU_ERR_DATETIME_OUT_OF_RANGE, msg)

XPU_HOST_DEVICE int64_t
xpu_floor_div(int64_t a, int64_t b)
{
	int64_t		q = a / b;

	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* days since 2000-01-01 of y-m-d (y astronomical: 0 is 1 BC) */
XPU_HOST_DEVICE int64_t
xpu_days_from_ymd(int64_t y, int m, int d)
{
	int64_t		era, yoe, doy, doe;

	y -= (m <= 2);
	era = xpu_floor_div(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 730425;	/* 730425: 0000-03-01 to 2000-01-01 */
}

/* the inverse: y-m-d of days since 2000-01-01 */
XPU_HOST_DEVICE void
xpu_ymd_from_days(int64_t days, int64_t *y, int *m, int *d)
{
	int64_t		z = days + 730425;
	int64_t		era = xpu_floor_div(z, 146097);
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;

	*d = (int) (doy - (153 * mp + 2) / 5 + 1);
	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

XPU_HOST_DEVICE int
xpu_date_valid(int64_t d)
{
	return d >= XPU_DATE_MIN && d < XPU_DATE_END;
}

XPU_HOST_DEVICE int
xpu_timestamp_valid(int64_t t)
{
	return t >= XPU_TIMESTAMP_MIN && t < XPU_TIMESTAMP_END;
}

XPU_HOST_DEVICE int
xpu_date_finite(int64_t d)
{
	return d != XPU_DATEVAL_NOBEGIN && d != XPU_DATEVAL_NOEND;
}

XPU_HOST_DEVICE int
xpu_ts_finite(int64_t t)
{
	return t != XPU_DT_NOBEGIN && t != XPU_DT_NOEND;
}

/* date + days (date_pli) and date - days (date_mii) */
XPU_HOST_DEVICE void
xpu_date_add(XpuCtx *s, int64_t days)
{
	int64_t		r = s->a->i + days;

	if (!xpu_date_finite(s->a->i))
		XPU_SET_I(s, s->a->i);
	else if (!xpu_date_valid(r))
		XPU_DATE_ERROR(s, "date out of range");
	else
		XPU_SET_I(s, r);
}

XPU_STEP(DATE_PL_INT) { xpu_date_add(s, s->b->i); }
XPU_STEP(DATE_MI_INT) { xpu_date_add(s, -s->b->i); }

XPU_STEP(DATE_MI_DATE)
{
	if (!xpu_date_finite(s->a->i) || !xpu_date_finite(s->b->i))
		XPU_DATE_ERROR(s, "cannot subtract infinite dates");
	else
		XPU_SET_I(s, s->a->i - s->b->i);
}

/* date::timestamp (date2timestamp): 294277-01-01 and later do not fit */
XPU_STEP(DATE_TO_TS)
{
	int64_t		d = s->a->i;

	if (d == XPU_DATEVAL_NOBEGIN)
		XPU_SET_I(s, XPU_DT_NOBEGIN);
	else if (d == XPU_DATEVAL_NOEND)
		XPU_SET_I(s, XPU_DT_NOEND);
	else if (d >= 109203528 - XPU_POSTGRES_EPOCH_JDATE)
		XPU_DATE_ERROR(s, "date out of range for timestamp");
	else
		XPU_SET_I(s, d * XPU_USECS_PER_DAY);
}

XPU_STEP(TS_TO_DATE)
{
	int64_t		t = s->a->i;

	if (t == XPU_DT_NOBEGIN)
		XPU_SET_I(s, XPU_DATEVAL_NOBEGIN);
	else if (t == XPU_DT_NOEND)
		XPU_SET_I(s, XPU_DATEVAL_NOEND);
	else
		XPU_SET_I(s, xpu_floor_div(t, XPU_USECS_PER_DAY));
}

/* date_part of an infinite timestamp: +-Infinity or NULL */
XPU_HOST_DEVICE void
xpu_part_infinite(XpuCtx *s, int field)
{
	if (field == XPU_DF_YEAR || field == XPU_DF_EPOCH)
	{
		s->d->f8 = s->a->i == XPU_DT_NOBEGIN ? -HUGE_VAL : HUGE_VAL;
		*s->dn = 0;
	}
	else
		*s->dn = 1;
}

/* the epoch of a timestamp as float8, as timestamp_part() computes it */
XPU_HOST_DEVICE double
xpu_ts_epoch(int64_t t)
{
	const int64_t epoch = -INT64_C(946684800000000);

	if (t < INT64_MAX + epoch)
		return (double) (t - epoch) / 1000000.0;
	return ((double) t - (double) epoch) / 1000000.0;
}

XPU_STEP(DATE_PART_TS)
{
	int64_t		t = s->a->i, days, tod, y;
	int			m, d, f = s->ins->imm;
	double		r = 0;

	if (!xpu_ts_finite(t))
	{
		xpu_part_infinite(s, f);
		return;
	}
	days = xpu_floor_div(t, XPU_USECS_PER_DAY);
	tod = t - days * XPU_USECS_PER_DAY;
	xpu_ymd_from_days(days, &y, &m, &d);
	switch (f)
	{
		case XPU_DF_YEAR: r = (double) (y > 0 ? y : y - 1); break;
		case XPU_DF_QUARTER: r = (m - 1) / 3 + 1; break;
		case XPU_DF_MONTH: r = m; break;
		case XPU_DF_DAY: r = d; break;
		case XPU_DF_HOUR: r = (double) (tod / (3600 * XPU_USECS_PER_SEC)); break;
		case XPU_DF_MINUTE: r = (double) (tod / (60 * XPU_USECS_PER_SEC) % 60); break;
		case XPU_DF_SECOND:
			r = (double) (tod / XPU_USECS_PER_SEC % 60) +
				(double) (tod % XPU_USECS_PER_SEC) / 1000000.0;
			break;
		case XPU_DF_DOW: r = (double) (((days + 6) % 7 + 7) % 7); break;
		case XPU_DF_DOY: r = (double) (days - xpu_days_from_ymd(y, 1, 1) + 1); break;
		case XPU_DF_EPOCH: r = xpu_ts_epoch(t); break;
		default:
			XPU_STEP_FAIL(s, XPU_ERR_INTERNAL, "unknown date_part field");
			return;
	}
	s->d->f8 = r;
	*s->dn = 0;
}

/* the day of a timestamp truncated to unit f (year .. day), in days */
XPU_HOST_DEVICE int64_t
xpu_trunc_days(int64_t days, int f)
{
	int64_t		y;
	int			m, d;

	xpu_ymd_from_days(days, &y, &m, &d);
	switch (f)
	{
		case XPU_DF_YEAR: return xpu_days_from_ymd(y, 1, 1);
		case XPU_DF_QUARTER: return xpu_days_from_ymd(y, (m - 1) / 3 * 3 + 1, 1);
		case XPU_DF_MONTH: return xpu_days_from_ymd(y, m, 1);
		case XPU_DF_WEEK: return days - ((days + 5) % 7 + 7) % 7;	/* Monday */
		default: return days;
	}
}

XPU_STEP(DATE_TRUNC_TS)
{
	int64_t		t = s->a->i, days, tod, r;
	int			f = s->ins->imm;

	if (!xpu_ts_finite(t))
	{
		XPU_SET_I(s, t);
		return;
	}
	days = xpu_floor_div(t, XPU_USECS_PER_DAY);
	tod = t - days * XPU_USECS_PER_DAY;
	if (f == XPU_DF_HOUR)
		tod -= tod % (3600 * XPU_USECS_PER_SEC);
	else if (f == XPU_DF_MINUTE)
		tod -= tod % (60 * XPU_USECS_PER_SEC);
	else if (f == XPU_DF_SECOND)
		tod -= tod % XPU_USECS_PER_SEC;
	else
		tod = 0;
	r = xpu_trunc_days(days, f) * XPU_USECS_PER_DAY + tod;
	if (!xpu_timestamp_valid(r))
		XPU_DATE_ERROR(s, "timestamp out of range");
	else
		XPU_SET_I(s, r);
}

#endif							/* XPU_DATE_H */
