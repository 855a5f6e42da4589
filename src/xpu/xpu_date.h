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
 * other fields); date_trunc() works on timestamp without time zone, and on
 * timestamptz (and date::timestamptz) only in a time zone of one fixed UTC
 * offset, which codegen passes in a register (seconds, PostgreSQL's sign:
 * west of Greenwich is positive); other timestamptz fields need the zone's
 * rules: codegen keeps them in PostgreSQL.  Interval opcodes: xpu_interval.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_DATE_H
#define XPU_DATE_H

#include <math.h>

#include "xpu_step.h"

/* the fields of DATE_PART_TS / EXTRACT_* and units of DATE_TRUNC_TS (the
 * immediate); xpu_date_field_ok says which opcode takes which */
typedef enum XpuDateField
{
	XPU_DF_YEAR = 1,
	XPU_DF_QUARTER,
	XPU_DF_MONTH,
	XPU_DF_WEEK,				/* ISO week (date_trunc: its Monday) */
	XPU_DF_DAY,
	XPU_DF_HOUR,
	XPU_DF_MINUTE,
	XPU_DF_SECOND,
	XPU_DF_DOW,
	XPU_DF_DOY,
	XPU_DF_EPOCH,
	XPU_DF_ISODOW,
	XPU_DF_ISOYEAR,
	XPU_DF_DECADE,
	XPU_DF_CENTURY,
	XPU_DF_MILLENNIUM,
	XPU_DF_MILLISECONDS,
	XPU_DF_MICROSECONDS,
	XPU_DF_JULIAN,
	XPU_DF_N_FIELDS
} XpuDateField;

/*
 * Does the opcode (XpuOpcode) take field f: the fields PostgreSQL 15
 * accepts for it, less those whose result the engine cannot hold exactly
 * (extract(julian from timestamp) is a numeric quotient of data-dependent
 * scale) or that are errors (extract(hour from date)).
 */
XPU_HOST_DEVICE int
xpu_date_field_ok(int op, int f)
{
	if (f < XPU_DF_YEAR || f >= XPU_DF_N_FIELDS)
		return 0;
	switch (op)
	{
		case XPU_OP_DATE_PART_TS: return 1;
		case XPU_OP_EXTRACT_TS: return f != XPU_DF_JULIAN;
		case XPU_OP_EXTRACT_DATE:
			return f != XPU_DF_HOUR && f != XPU_DF_MINUTE && f != XPU_DF_SECOND &&
				f != XPU_DF_MILLISECONDS && f != XPU_DF_MICROSECONDS;
		case XPU_OP_DATE_TRUNC_TS:
		case XPU_OP_DATE_TRUNC_TSTZ:
			return f <= XPU_DF_SECOND ||
				(f >= XPU_DF_DECADE && f <= XPU_DF_MICROSECONDS);
		case XPU_OP_DATE_PART_IV:
		case XPU_OP_EXTRACT_IV:
			return f != XPU_DF_WEEK && f != XPU_DF_DOW && f != XPU_DF_DOY &&
				f != XPU_DF_ISODOW && f != XPU_DF_ISOYEAR && f != XPU_DF_JULIAN;
		default: return 0;
	}
}

/* PostgreSQL's name of field f ("" for none) */
XPU_HOST_DEVICE const char *
xpu_date_field_name(int f)
{
	switch (f)
	{
		case XPU_DF_YEAR: return "year";
		case XPU_DF_QUARTER: return "quarter";
		case XPU_DF_MONTH: return "month";
		case XPU_DF_WEEK: return "week";
		case XPU_DF_DAY: return "day";
		case XPU_DF_HOUR: return "hour";
		case XPU_DF_MINUTE: return "minute";
		case XPU_DF_SECOND: return "second";
		case XPU_DF_DOW: return "dow";
		case XPU_DF_DOY: return "doy";
		case XPU_DF_EPOCH: return "epoch";
		case XPU_DF_ISODOW: return "isodow";
		case XPU_DF_ISOYEAR: return "isoyear";
		case XPU_DF_DECADE: return "decade";
		case XPU_DF_CENTURY: return "century";
		case XPU_DF_MILLENNIUM: return "millennium";
		case XPU_DF_MILLISECONDS: return "milliseconds";
		case XPU_DF_MICROSECONDS: return "microseconds";
		case XPU_DF_JULIAN: return "julian";
		default: return "";
	}
}

/* the numeric scale of extract(f from a timestamp or interval): PostgreSQL's */
XPU_HOST_DEVICE int
xpu_extract_scale(int f)
{
	if (f == XPU_DF_SECOND || f == XPU_DF_EPOCH)
		return 6;
	return f == XPU_DF_MILLISECONDS ? 3 : 0;
}

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

/* the first day (a Monday) of ISO year y's week 1: the week of January 4 */
XPU_HOST_DEVICE int64_t
xpu_iso_week1(int64_t y)
{
	int64_t		jan4 = xpu_days_from_ymd(y, 1, 4);

	return jan4 - ((jan4 % 7 + 7 + 5) % 7);		/* 2000-01-01 was a Saturday */
}

/* the ISO week of days (in calendar year y); *iy its ISO year */
XPU_HOST_DEVICE int64_t
xpu_iso_week(int64_t days, int64_t y, int64_t *iy)
{
	int64_t		w1 = xpu_iso_week1(y);

	*iy = y;
	if (days < w1)
		w1 = xpu_iso_week1(--*iy);
	else if (days >= xpu_iso_week1(y + 1))
		w1 = xpu_iso_week1(++*iy);
	return (days - w1) / 7 + 1;
}

/*
 * Field f of day 'days' at time of day tod (0 <= tod < a day), as the
 * integer timestamp_part / extract_date compute it; SECOND and
 * MILLISECONDS give the microseconds of the minute (their numeric forms at
 * scale 6 and 3), EPOCH and JULIAN are the callers'.
 */
XPU_HOST_DEVICE int64_t
xpu_field_int(int64_t days, int64_t tod, int f)
{
	int64_t		y, iy, w;
	int			m, d;

	xpu_ymd_from_days(days, &y, &m, &d);
	switch (f)
	{
		case XPU_DF_YEAR: return y > 0 ? y : y - 1;
		case XPU_DF_QUARTER: return (m - 1) / 3 + 1;
		case XPU_DF_MONTH: return m;
		case XPU_DF_WEEK: return xpu_iso_week(days, y, &iy);
		case XPU_DF_DAY: return d;
		case XPU_DF_HOUR: return tod / (3600 * XPU_USECS_PER_SEC);
		case XPU_DF_MINUTE: return tod / (60 * XPU_USECS_PER_SEC) % 60;
		case XPU_DF_DOW: return ((days + 6) % 7 + 7) % 7;
		case XPU_DF_ISODOW:
			w = ((days + 6) % 7 + 7) % 7;
			return w == 0 ? 7 : w;
		case XPU_DF_DOY: return days - xpu_days_from_ymd(y, 1, 1) + 1;
		case XPU_DF_ISOYEAR:
			xpu_iso_week(days, y, &iy);
			return iy <= 0 ? iy - 1 : iy;
		case XPU_DF_DECADE: return y >= 0 ? y / 10 : -((8 - (y - 1)) / 10);
		case XPU_DF_CENTURY: return y > 0 ? (y + 99) / 100 : -((99 - (y - 1)) / 100);
		case XPU_DF_MILLENNIUM:
			return y > 0 ? (y + 999) / 1000 : -((999 - (y - 1)) / 1000);
		case XPU_DF_JULIAN: return days + XPU_POSTGRES_EPOCH_JDATE;
		default: return tod % (60 * XPU_USECS_PER_SEC);	/* [MICRO|MILLI]SECONDS */
	}
}

/* is f a field whose value at an infinity is +-Infinity (else NULL) */
XPU_HOST_DEVICE int
xpu_field_infinite(int f)
{
	return f == XPU_DF_YEAR || f == XPU_DF_EPOCH || f == XPU_DF_DECADE ||
		f == XPU_DF_CENTURY || f == XPU_DF_MILLENNIUM || f == XPU_DF_JULIAN ||
		f == XPU_DF_ISOYEAR;
}

/* date_part of an infinite timestamp: +-Infinity or NULL */
XPU_HOST_DEVICE void
xpu_part_infinite(XpuCtx *s, int field)
{
	if (xpu_field_infinite(field))
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
	int64_t		t = s->a->i, days, tod, us;
	int			f = s->ins->imm;
	double		r;

	if (!xpu_ts_finite(t))
	{
		xpu_part_infinite(s, f);
		return;
	}
	days = xpu_floor_div(t, XPU_USECS_PER_DAY);
	tod = t - days * XPU_USECS_PER_DAY;
	us = tod % (60 * XPU_USECS_PER_SEC);
	switch (f)
	{
		case XPU_DF_SECOND:
			r = (double) (us / XPU_USECS_PER_SEC) +
				(double) (us % XPU_USECS_PER_SEC) / 1000000.0;
			break;
		case XPU_DF_MILLISECONDS:
			r = (double) (us / XPU_USECS_PER_SEC) * 1000.0 +
				(double) (us % XPU_USECS_PER_SEC) / 1000.0;
			break;
		case XPU_DF_EPOCH: r = xpu_ts_epoch(t); break;
		case XPU_DF_JULIAN:
			r = (double) (days + XPU_POSTGRES_EPOCH_JDATE) +
				((double) (tod / XPU_USECS_PER_SEC) +
				 (double) (tod % XPU_USECS_PER_SEC) / 1000000.0) / 86400.0;
			break;
		default: r = (double) xpu_field_int(days, tod, f); break;
	}
	s->d->f8 = r;
	*s->dn = 0;
}

/*
 * extract() of an infinite input: NULL for a field PostgreSQL answers NULL
 * for, else (its +-Infinity numeric, which the engine's form cannot hold)
 * a fallback with msg
 */
XPU_HOST_DEVICE void
xpu_extract_infinite(XpuCtx *s, int f, const char *msg)
{
	if (xpu_field_infinite(f))
		XPU_STEP_FAIL(s, XPU_ERR_FALLBACK, msg);
	else
		*s->dn = 1;
}

/*
 * extract(f from timestamp): numeric at xpu_extract_scale(f); an infinite
 * timestamp is NULL or an infinity, which only PostgreSQL holds.
 */
XPU_STEP(EXTRACT_TS)
{
	int64_t		t = s->a->i, days;
	int			f = s->ins->imm;

	if (!xpu_ts_finite(t))
	{
		xpu_extract_infinite(s, f, "extract() of an infinite timestamp");
		return;
	}
	if (f == XPU_DF_EPOCH)
		s->d->n = (__int128) t + INT64_C(946684800000000);
	else
	{
		days = xpu_floor_div(t, XPU_USECS_PER_DAY);
		s->d->n = xpu_field_int(days, t - days * XPU_USECS_PER_DAY, f);
	}
	*s->dn = 0;
}

/* extract(f from date) (extract_date): integers, at scale 0 */
XPU_STEP(EXTRACT_DATE)
{
	int64_t		d = s->a->i;
	int			f = s->ins->imm;

	if (!xpu_date_finite(d))
	{
		xpu_extract_infinite(s, f, "extract() of an infinite date");
		return;
	}
	if (f == XPU_DF_EPOCH)
		s->d->n = (__int128) (d + XPU_UNIX_EPOCH_DAYS) * 86400;
	else
		s->d->n = xpu_field_int(d, 0, f);
	*s->dn = 0;
}

/* date2timestamp for comparisons (date_cmp_timestamp): never an error */
XPU_STEP(DATE_CMP_TS)
{
	int64_t		d = s->a->i;

	if (d == XPU_DATEVAL_NOBEGIN)
		XPU_SET_I(s, XPU_DT_NOBEGIN);
	else if (d == XPU_DATEVAL_NOEND)
		XPU_SET_I(s, XPU_DT_NOEND);
	else if (d >= 109203528 - XPU_POSTGRES_EPOCH_JDATE)
		XPU_SET_I(s, XPU_TIMESTAMP_END);	/* above every finite timestamp */
	else
		XPU_SET_I(s, d * XPU_USECS_PER_DAY);
}

/* year y (astronomical) truncated to its decade, century or millennium */
XPU_HOST_DEVICE int64_t
xpu_trunc_year(int64_t y, int f)
{
	if (f == XPU_DF_MILLENNIUM)
		return y > 0 ? (y + 999) / 1000 * 1000 - 999 : -((999 - (y - 1)) / 1000) * 1000 + 1;
	if (f == XPU_DF_CENTURY)
		return y > 0 ? (y + 99) / 100 * 100 - 99 : -((99 - (y - 1)) / 100) * 100 + 1;
	return y > 0 ? y / 10 * 10 : -((8 - (y - 1)) / 10) * 10;
}

/* the day of a timestamp truncated to unit f (millennium .. day), in days */
XPU_HOST_DEVICE int64_t
xpu_trunc_days(int64_t days, int f)
{
	int64_t		y;
	int			m, d;

	xpu_ymd_from_days(days, &y, &m, &d);
	switch (f)
	{
		case XPU_DF_MILLENNIUM:
		case XPU_DF_CENTURY:
		case XPU_DF_DECADE: return xpu_days_from_ymd(xpu_trunc_year(y, f), 1, 1);
		case XPU_DF_YEAR: return xpu_days_from_ymd(y, 1, 1);
		case XPU_DF_QUARTER: return xpu_days_from_ymd(y, (m - 1) / 3 * 3 + 1, 1);
		case XPU_DF_MONTH: return xpu_days_from_ymd(y, m, 1);
		case XPU_DF_WEEK: return days - ((days + 5) % 7 + 7) % 7;	/* Monday */
		default: return days;
	}
}

/* the time of day tod truncated to unit f; units of a day or more: 0 */
XPU_HOST_DEVICE int64_t
xpu_trunc_tod(int64_t tod, int f)
{
	switch (f)
	{
		case XPU_DF_HOUR: return tod - tod % (3600 * XPU_USECS_PER_SEC);
		case XPU_DF_MINUTE: return tod - tod % (60 * XPU_USECS_PER_SEC);
		case XPU_DF_SECOND: return tod - tod % XPU_USECS_PER_SEC;
		case XPU_DF_MILLISECONDS: return tod - tod % 1000;
		case XPU_DF_MICROSECONDS: return tod;
		default: return 0;
	}
}

XPU_STEP(DATE_TRUNC_TS)
{
	int64_t		t = s->a->i, days, r;
	int			f = s->ins->imm;

	if (!xpu_ts_finite(t))
	{
		XPU_SET_I(s, t);
		return;
	}
	days = xpu_floor_div(t, XPU_USECS_PER_DAY);
	r = xpu_trunc_days(days, f) * XPU_USECS_PER_DAY +
		xpu_trunc_tod(t - days * XPU_USECS_PER_DAY, f);
	if (!xpu_timestamp_valid(r))
		XPU_DATE_ERROR(s, "timestamp out of range");
	else
		XPU_SET_I(s, r);
}

/*
 * date::timestamptz (date2timestamptz) in a zone of fixed offset b: the
 * date's local midnight; 22008 for dates past the timestamp range, before
 * or after the offset is applied
 */
XPU_STEP(DATE_TO_TSTZ)
{
	int64_t		d = s->a->i;

	if (d == XPU_DATEVAL_NOBEGIN)
		XPU_SET_I(s, XPU_DT_NOBEGIN);
	else if (d == XPU_DATEVAL_NOEND)
		XPU_SET_I(s, XPU_DT_NOEND);
	else if (d >= 109203528 - XPU_POSTGRES_EPOCH_JDATE ||
			 !xpu_timestamp_valid(d * XPU_USECS_PER_DAY + s->b->i * XPU_USECS_PER_SEC))
		XPU_DATE_ERROR(s, "date out of range for timestamp");
	else
		XPU_SET_I(s, d * XPU_USECS_PER_DAY + s->b->i * XPU_USECS_PER_SEC);
}

/*
 * date_trunc(unit, timestamptz) in a zone of fixed offset b
 * (timestamptz_trunc): the local time truncated, back to UTC; 22008 where
 * the truncated local date is before 4714-11-24 BC (tm2timestamp's Julian
 * check) or the result past the timestamp range
 */
XPU_STEP(DATE_TRUNC_TSTZ)
{
	int64_t		t = s->a->i,
				tz = s->b->i * XPU_USECS_PER_SEC,
				local, days, r;
	int			f = s->ins->imm;

	if (!xpu_ts_finite(t))
	{
		XPU_SET_I(s, t);
		return;
	}
	local = t - tz;
	days = xpu_floor_div(local, XPU_USECS_PER_DAY);
	r = xpu_trunc_days(days, f) * XPU_USECS_PER_DAY +
		xpu_trunc_tod(local - days * XPU_USECS_PER_DAY, f);
	if (r < XPU_TIMESTAMP_MIN || !xpu_timestamp_valid(r + tz))
		XPU_DATE_ERROR(s, "timestamp out of range");
	else
		XPU_SET_I(s, r + tz);
}

#endif							/* XPU_DATE_H */
