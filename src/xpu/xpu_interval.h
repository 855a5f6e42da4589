/*-------------------------------------------------------------------------
 *
 * xpu_interval.h
 *		Opcode bodies of interval (xpu_step.h states the contract): the
 *		comparisons, timestamp +/- interval and timestamp - timestamp, for
 *		timestamp without time zone.
 *
 * Semantics are PostgreSQL 15's (timestamp.c): intervals compare by
 * months * 30 days + days, in microseconds, as int128 (so '1 mon' equals
 * '30 days'); timestamp + interval adds the months first (clamping the day
 * to the month's length), then the days, then the microseconds, and raises
 * 22008 "timestamp out of range"; an infinite timestamp stays as it is.
 * timestamp - timestamp gives microseconds justified into days
 * (interval_justify_hours) and raises 22008 "cannot subtract infinite
 * timestamps"; like PostgreSQL 15 it does not check the int64 difference
 * (it wraps where PostgreSQL's does).  timestamptz - timestamptz is the
 * same; timestamptz +/- interval only for intervals of microseconds (the
 * rest needs the session's time zone).  Interval constants are
 * PostgreSQL's Interval bytes; interval + - interval and unary - check
 * each field for overflow (22008 "interval out of range").
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_INTERVAL_H
#define XPU_INTERVAL_H

#include "xpu_date.h"

/* the comparable span of an interval in microseconds */
XPU_HOST_DEVICE __int128
xpu_iv_span(const XpuInterval *iv)
{
	int64_t		days = (int64_t) iv->months * 30 + iv->days;

	return (__int128) iv->us + (__int128) days * XPU_USECS_PER_DAY;
}

#define XPU_IV_CMP(NAME, OP) \
XPU_STEP(NAME) \
{ \
	__int128	a = xpu_iv_span(&s->a->iv), b = xpu_iv_span(&s->b->iv); \
	XPU_SET_I(s, a OP b); \
}
XPU_IV_CMP(EQ_IV, ==)
XPU_IV_CMP(NE_IV, !=)
XPU_IV_CMP(LT_IV, <)
XPU_IV_CMP(LE_IV, <=)
XPU_IV_CMP(GT_IV, >)
XPU_IV_CMP(GE_IV, >=)

XPU_HOST_DEVICE int
xpu_is_leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

XPU_HOST_DEVICE int
xpu_month_days(int64_t y, int m)
{
	static const int8_t mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

	return m == 2 && xpu_is_leap(y) ? 29 : mdays[m - 1];
}

/* *r = the timestamp of day d at time of day tod, if valid (no overflow) */
XPU_HOST_DEVICE int
xpu_day_ts(int64_t d, int64_t tod, int64_t *r)
{
	if (d < XPU_DATE_MIN || d > XPU_TIMESTAMP_END / XPU_USECS_PER_DAY)
		return 0;
	*r = d * XPU_USECS_PER_DAY + tod;
	return xpu_timestamp_valid(*r);
}

/*
 * t + (months, days, us), t finite; returns 1 when the result (or a step
 * of the way, as in PostgreSQL) leaves the valid range.
 */
XPU_HOST_DEVICE int
xpu_ts_add_iv(int64_t t, int64_t months, int64_t days, int64_t us, int64_t *r)
{
	int64_t		d = xpu_floor_div(t, XPU_USECS_PER_DAY);
	int64_t		tod = t - d * XPU_USECS_PER_DAY;
	int64_t		y;
	int			m, md;

	if (months != 0)
	{
		int64_t		mm;

		xpu_ymd_from_days(d, &y, &m, &md);
		mm = y * 12 + (m - 1) + months;
		y = xpu_floor_div(mm, 12);
		m = (int) (mm - y * 12) + 1;
		if (md > xpu_month_days(y, m))
			md = xpu_month_days(y, m);
		d = xpu_days_from_ymd(y, m, md);
		if (!xpu_day_ts(d, tod, &t))
			return 1;
	}
	d += days;
	if (!xpu_day_ts(d, tod, &t))
		return 1;
	t = (int64_t) ((uint64_t) t + (uint64_t) us);
	if (!xpu_timestamp_valid(t))
		return 1;
	*r = t;
	return 0;
}

XPU_HOST_DEVICE void
xpu_ts_iv(XpuCtx *s, int sign)
{
	const XpuInterval *iv = &s->b->iv;
	int64_t		r;

	if (!xpu_ts_finite(s->a->i))
		XPU_SET_I(s, s->a->i);
	else if (xpu_ts_add_iv(s->a->i, sign * (int64_t) iv->months, sign * (int64_t) iv->days,
						   sign > 0 ? iv->us : (int64_t) (0 - (uint64_t) iv->us), &r))
		XPU_DATE_ERROR(s, "timestamp out of range");
	else
		XPU_SET_I(s, r);
}

XPU_STEP(TS_PL_IV) { xpu_ts_iv(s, 1); }
XPU_STEP(TS_MI_IV) { xpu_ts_iv(s, -1); }

/* timestamp - timestamp (timestamp_mi; timestamptz_mi is the same) */
XPU_HOST_DEVICE void
xpu_ts_mi(XpuCtx *s)
{
	int64_t		us, days;

	if (!xpu_ts_finite(s->a->i) || !xpu_ts_finite(s->b->i))
	{
		XPU_DATE_ERROR(s, "cannot subtract infinite timestamps");
		return;
	}
	us = (int64_t) ((uint64_t) s->a->i - (uint64_t) s->b->i);
	days = us / XPU_USECS_PER_DAY;
	us -= days * XPU_USECS_PER_DAY;
	if (days > 0 && us < 0)
	{
		us += XPU_USECS_PER_DAY;
		days--;
	}
	else if (days < 0 && us > 0)
	{
		us -= XPU_USECS_PER_DAY;
		days++;
	}
	s->d->iv.months = 0;
	s->d->iv.days = (int32_t) days;
	s->d->iv.us = us;
	*s->dn = 0;
}

XPU_STEP(TS_MI_TS) { xpu_ts_mi(s); }
XPU_STEP(TSTZ_MI_TSTZ) { xpu_ts_mi(s); }

/*
 * timestamptz +/- interval: months and days are added in the session's
 * time zone, which the engine does not have, so a row with either falls
 * back (codegen compiles only constants without them); the microseconds
 * add as for timestamp.
 */
XPU_HOST_DEVICE void
xpu_tstz_iv(XpuCtx *s, int sign)
{
	if (xpu_ts_finite(s->a->i) && (s->b->iv.months != 0 || s->b->iv.days != 0))
		XPU_STEP_FAIL(s, XPU_ERR_FALLBACK, "timestamptz +/- interval of days or months");
	else
		xpu_ts_iv(s, sign);
}

XPU_STEP(TSTZ_PL_IV) { xpu_tstz_iv(s, 1); }
XPU_STEP(TSTZ_MI_IV) { xpu_tstz_iv(s, -1); }

/* an interval constant: PostgreSQL's Interval, the same 16 bytes */
XPU_STEP(CONST_IV)
{
	const char *p = xpu_const_ptr(s);

	s->d->iv = *(const XpuInterval *) p;
	*s->dn = 0;
}

#define XPU_IV_ERROR(s)	\
	XPU_STEP_FAIL(s, XPU_ERR_DATETIME_OUT_OF_RANGE, "interval out of range")

/*
 * interval_pl / interval_mi: each field separately, 22008 "interval out
 * of range" where one overflows (PostgreSQL 15 does not justify).
 */
XPU_HOST_DEVICE void
xpu_iv_add(XpuCtx *s, int sign)
{
	const XpuInterval *a = &s->a->iv, *b = &s->b->iv;
	int64_t		months = (int64_t) a->months + sign * (int64_t) b->months;
	int64_t		days = (int64_t) a->days + sign * (int64_t) b->days;
	__int128	us = (__int128) a->us + sign * (__int128) b->us;

	if (months < INT32_MIN || months > INT32_MAX || days < INT32_MIN || days > INT32_MAX ||
		us < INT64_MIN || us > INT64_MAX)
	{
		XPU_IV_ERROR(s);
		return;
	}
	s->d->iv.months = (int32_t) months;
	s->d->iv.days = (int32_t) days;
	s->d->iv.us = (int64_t) us;
	*s->dn = 0;
}

XPU_STEP(ADD_IV) { xpu_iv_add(s, 1); }
XPU_STEP(SUB_IV) { xpu_iv_add(s, -1); }

/* interval_um: an error only for a field at its minimum */
XPU_STEP(NEG_IV)
{
	const XpuInterval *a = &s->a->iv;

	if (a->us == INT64_MIN || a->days == INT32_MIN || a->months == INT32_MIN)
	{
		XPU_IV_ERROR(s);
		return;
	}
	s->d->iv.months = -a->months;
	s->d->iv.days = -a->days;
	s->d->iv.us = -a->us;
	*s->dn = 0;
}

/*
 * Field f of an interval as interval2itm (PostgreSQL 15) splits it: years
 * and months of the months, the days, and int64 hours, minutes and the
 * microseconds of the minute of the microseconds (each with the sign of
 * its part).  SECOND and MILLISECONDS give the microseconds of the minute,
 * as xpu_field_int does.
 */
XPU_HOST_DEVICE int64_t
xpu_iv_field(const XpuInterval *iv, int f)
{
	int64_t		hours = iv->us / (3600 * XPU_USECS_PER_SEC);
	int64_t		rest = iv->us - hours * (3600 * XPU_USECS_PER_SEC);
	int64_t		years = iv->months / 12;

	switch (f)
	{
		case XPU_DF_MINUTE: return rest / (60 * XPU_USECS_PER_SEC);
		case XPU_DF_HOUR: return hours;
		case XPU_DF_DAY: return iv->days;
		case XPU_DF_MONTH: return iv->months % 12;
		case XPU_DF_QUARTER: return iv->months % 12 / 3 + 1;
		case XPU_DF_YEAR: return years;
		case XPU_DF_DECADE: return years / 10;
		case XPU_DF_CENTURY: return years / 100;
		case XPU_DF_MILLENNIUM: return years / 1000;
		default: return rest % (60 * XPU_USECS_PER_SEC);	/* [MICRO|MILLI]SECONDS */
	}
}

/* the seconds of an interval's months and days, as interval_part counts them */
XPU_HOST_DEVICE int64_t
xpu_iv_epoch_secs(const XpuInterval *iv)
{
	return INT64_C(31557600) * (iv->months / 12) + INT64_C(2592000) * (iv->months % 12) +
		INT64_C(86400) * iv->days;
}

XPU_STEP(DATE_PART_IV)
{
	const XpuInterval *iv = &s->a->iv;
	int			f = s->ins->imm;
	int64_t		v = xpu_iv_field(iv, f);
	double		r = (double) v;

	if (f == XPU_DF_EPOCH)
	{
		r = (double) iv->us / 1000000.0;
		r += (365.25 * 86400.0) * (double) (iv->months / 12);
		r += (30.0 * 86400.0) * (double) (iv->months % 12);
		r += 86400.0 * (double) iv->days;
	}
	else if (f == XPU_DF_SECOND)
		r = (double) (v / XPU_USECS_PER_SEC) + (double) (v % XPU_USECS_PER_SEC) / 1000000.0;
	else if (f == XPU_DF_MILLISECONDS)
		r = (double) (v / XPU_USECS_PER_SEC) * 1000.0 +
			(double) (v % XPU_USECS_PER_SEC) / 1000.0;
	s->d->f8 = r;
	*s->dn = 0;
}

/* extract(f from interval): numeric at xpu_extract_scale(f), always exact */
XPU_STEP(EXTRACT_IV)
{
	const XpuInterval *iv = &s->a->iv;

	if (s->ins->imm == XPU_DF_EPOCH)
		s->d->n = (__int128) xpu_iv_epoch_secs(iv) * 1000000 + iv->us;
	else
		s->d->n = xpu_iv_field(iv, s->ins->imm);
	*s->dn = 0;
}

#endif							/* XPU_INTERVAL_H */
