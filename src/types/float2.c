/*-------------------------------------------------------------------------
 *
 * float2.c
 *		The float2 type (IEEE 754 binary16): text and binary I/O, and the
 *		casts to and from the integers, float4, float8 and numeric.
 *
 * The rules follow float4's (doc/float2.md has the user's view):
 *	- Input rounds the exact decimal value to the nearest half, ties to even
 *	  (never through an intermediate rounding).  A value that rounds to an
 *	  infinity, or a non-zero value that rounds to zero, is an error 22003,
 *	  as float4in does in PostgreSQL 15; subnormal results are accepted.
 *	- Output is the shortest decimal that reads back as the same half (the
 *	  closest to the exact value among the shortest), formatted as float4out
 *	  formats its shortest output; with extra_float_digits <= 0 it is
 *	  "%.*g" with 3 + extra_float_digits digits (at least 1), as float4out
 *	  does with FLT_DIG.
 *	- Casts from float4, float8 and the integers round to nearest even and
 *	  raise float4's overflow/underflow errors ("value out of range");
 *	  casts to the integers are float4's (rint, then a range check); casts
 *	  from numeric go through the text form, like numeric -> float4.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <errno.h>
#include <fenv.h>
#include <math.h>

#include "fmgr.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/numeric.h"

#include "pg_warp.h"
#include "types/float2.h"

/* ----------------------------------------------------------------
 * Parsing and printing
 * ----------------------------------------------------------------
 */

/*
 * Which side of d the decimal value of 'num' (whose nearest double is d)
 * lies on: > 0 above, < 0 below, 0 when d is exact.  strtod honours the
 * rounding mode, so the value is above d exactly when rounding it upwards
 * gives more than d, and below when rounding downwards gives less.
 */
static int
decimal_side(const char *num, double d)
{
	int			saved = fegetround();
	double		up,
				down;

	fesetround(FE_UPWARD);
	up = strtod(num, NULL);
	fesetround(FE_DOWNWARD);
	down = strtod(num, NULL);
	fesetround(saved);
	if (up > d)
		return 1;
	if (down < d)
		return -1;
	return 0;
}

/*
 * Parses the longest prefix of 'num' that strtod accepts into the nearest
 * half (ties to even, from the exact decimal value).  Returns the end of
 * the prefix (num when there is none); *h is the half and *d the nearest
 * double, which tells the caller about overflow (a finite *d with an
 * infinite *h) and underflow (*d != 0 with a zero *h); *erange is strtod's
 * report of a value beyond the range of double.
 */
static char *
parse_half(const char *num, float2 *h, double *d, bool *erange)
{
	char	   *end;
	int			tie = 0;

	errno = 0;
	*d = strtod(num, &end);
	*erange = (errno == ERANGE);
	if (end == num)
		return end;
	*h = float2_from_double(*d);
	/* a double that is exactly halfway between two halves may hide a tie-break */
	if (!isnan(*d) && !isinf(*d) && *d != 0 &&
		float2_from_double_tie(*d, 1) != float2_from_double_tie(*d, -1))
	{
		char	   *copy = pnstrdup(num, end - num);

		tie = decimal_side(copy, *d);
		pfree(copy);
		*h = float2_from_double_tie(*d, *d < 0 ? -tie : tie);
	}
	return end;
}

/*
 * The half that the text 'str' names, as float2in reads it (leading and
 * trailing white space, what strtod accepts: NaN, [+-]Infinity, [+-]inf,
 * exponents, hexadecimal).  'orig' is the text to quote in errors.
 */
float2
float2_from_cstring(const char *str, const char *orig)
{
	const char *num = str;
	char	   *end;
	float2		h = 0;
	double		d = 0;
	bool		erange;

	while (*num != '\0' && isspace((unsigned char) *num))
		num++;
	if (*num == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "float2", orig)));
	end = parse_half(num, &h, &d, &erange);
	if (end == num)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "float2", orig)));
	while (*end != '\0' && isspace((unsigned char) *end))
		end++;
	if (*end != '\0')
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
				 errmsg("invalid input syntax for type %s: \"%s\"", "float2", orig)));
	/* beyond the finite halves, or a non-zero value that rounds to zero */
	if ((float2_isinf(h) && (!isinf(d) || erange)) ||
		(float2_iszero(h) && (d != 0 || erange)))
		ereport(ERROR,
				(errcode(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
				 errmsg("\"%s\" is out of range for type float2", orig)));
	return h;
}

/* whether the text of a decimal reads back as h */
static bool
reads_back(const char *text, float2 h)
{
	float2		back = 0;
	double		d;
	bool		erange;

	return *parse_half(text, &back, &d, &erange) == '\0' && back == h;
}

/*
 * The digits of |v| rounded to p significant digits, as an integer
 * (*digits) and the decimal exponent of its last digit (*exp10), by
 * glibc's exactly rounded printf.
 */
static void
round_digits(double v, int p, int64 *digits, int *exp10)
{
	char		buf[64];
	char	   *e;
	int64		n = 0;

	snprintf(buf, sizeof(buf), "%.*e", p - 1, fabs(v));
	for (e = buf; *e != 'e'; e++)
		if (isdigit((unsigned char) *e))
			n = n * 10 + (*e - '0');
	*digits = n;
	*exp10 = atoi(e + 1) - (p - 1);
}

/*
 * Formats digits * 10^exp10 (digits > 0) into buf as float4out formats its
 * shortest output: fixed notation when the decimal exponent of the first
 * digit is in [-4, 15), else d.ddde[+-]XX.  Returns the length.
 */
static int
format_digits(int64 digits, int exp10, bool negative, char *buf)
{
	char		ds[24];
	int			n;
	int			x;
	char	   *p = buf;

	while (digits % 10 == 0)
	{
		digits /= 10;
		exp10++;
	}
	n = snprintf(ds, sizeof(ds), INT64_FORMAT, digits);
	x = exp10 + n - 1;			/* exponent of the first digit */
	if (negative)
		*p++ = '-';
	if (x < -4 || x >= 15)
	{
		*p++ = ds[0];
		if (n > 1)
		{
			*p++ = '.';
			memcpy(p, ds + 1, n - 1);
			p += n - 1;
		}
		p += sprintf(p, "e%c%02d", x < 0 ? '-' : '+', abs(x));
	}
	else if (x < 0)
	{
		*p++ = '0';
		*p++ = '.';
		for (int i = 0; i < -x - 1; i++)
			*p++ = '0';
		memcpy(p, ds, n);
		p += n;
	}
	else
	{
		for (int i = 0; i <= x; i++)
			*p++ = i < n ? ds[i] : '0';
		if (n > x + 1)
		{
			*p++ = '.';
			memcpy(p, ds + x + 1, n - x - 1);
			p += n - x - 1;
		}
	}
	*p = '\0';
	return p - buf;
}

/*
 * The shortest decimal that reads back as h, into buf (at least
 * FLOAT2_SHORTEST_LEN bytes): NaN, Infinity, -Infinity, 0, -0, or the
 * fewest significant digits (1 to 5) whose value rounds to h, the closest
 * to h's exact value among them.  Returns the length.
 */
int
float2_shortest(float2 h, char *buf)
{
	double		v = float2_to_double(h);
	bool		negative = (h & FLOAT2_SIGN) != 0;

	if (float2_isnan(h))
		return sprintf(buf, "NaN");
	if (float2_isinf(h))
		return sprintf(buf, negative ? "-Infinity" : "Infinity");
	if (float2_iszero(h))
		return sprintf(buf, negative ? "-0" : "0");
	for (int p = 1;; p++)
	{
		int64		digits;
		int			exp10;
		char		text[32];

		/*
		 * The correctly rounded p digits are the closest; when they fall
		 * outside h's rounding interval (which is narrower below a power
		 * of two), the neighbour on the other side may still be inside.
		 */
		round_digits(v, p, &digits, &exp10);
		for (int delta = 0; delta <= 2; delta++)
		{
			int64		cand = digits + (delta == 0 ? 0 : delta == 1 ? -1 : 1);

			if (cand <= 0)
				continue;
			snprintf(text, sizeof(text), "%s" INT64_FORMAT "e%d",
					 negative ? "-" : "", cand, exp10);
			if (reads_back(text, h))
				return format_digits(cand, exp10, negative, buf);
		}
		if (p >= 17)
			elog(ERROR, "no decimal form found for float2 bits %04x", h);
	}
}

/* ----------------------------------------------------------------
 * I/O functions
 * ----------------------------------------------------------------
 */

PG_FUNCTION_INFO_V1(float2in);

/* float2in(cstring) returns float2: see float2_from_cstring */
Datum
float2in(PG_FUNCTION_ARGS)
{
	char	   *num = PG_GETARG_CSTRING(0);

	PG_RETURN_FLOAT2(float2_from_cstring(num, num));
}

PG_FUNCTION_INFO_V1(float2out);

/*
 * float2out(float2) returns cstring: the shortest decimal that reads back
 * as the same half when extra_float_digits > 0 (the default, 1), else
 * "%.*g" with 3 + extra_float_digits significant digits (at least 1).
 */
Datum
float2out(PG_FUNCTION_ARGS)
{
	float2		h = PG_GETARG_FLOAT2(0);
	char	   *buf = palloc(32);
	int			ndig = 3 + extra_float_digits;

	if (extra_float_digits > 0 || float2_isnan(h) || float2_isinf(h))
		float2_shortest(h, buf);
	else
		snprintf(buf, 32, "%.*g", ndig < 1 ? 1 : ndig, float2_to_double(h));
	PG_RETURN_CSTRING(buf);
}

PG_FUNCTION_INFO_V1(float2recv);

/* float2recv(internal) returns float2: two bytes in network order, any bits */
Datum
float2recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);

	PG_RETURN_FLOAT2((float2) pq_getmsgint(buf, 2));
}

PG_FUNCTION_INFO_V1(float2send);

/* float2send(float2) returns bytea: the two bytes in network order */
Datum
float2send(PG_FUNCTION_ARGS)
{
	float2		h = PG_GETARG_FLOAT2(0);
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint16(&buf, h);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* ----------------------------------------------------------------
 * Casts
 * ----------------------------------------------------------------
 */

/*
 * h, the rounded form of src, or float4's errors: "value out of range:
 * overflow" for a finite src that rounds to an infinity, "... underflow"
 * for a non-zero src that rounds to zero (as float8 -> float4 does).
 */
float2
float2_check_range(float2 h, double src)
{
	if (unlikely(float2_isinf(h)) && !isinf(src))
		float_overflow_error();
	if (unlikely(float2_iszero(h)) && src != 0)
		float_underflow_error();
	return h;
}

/* d rounded to the nearest half with float4's overflow/underflow errors */
float2
float2_round_checked(double d)
{
	return float2_check_range(float2_from_double(d), d);
}

PG_FUNCTION_INFO_V1(float2_to_float4);

/* float2 -> float4, exact */
Datum
float2_to_float4(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT4(float2_to_float(PG_GETARG_FLOAT2(0)));
}

PG_FUNCTION_INFO_V1(float2_to_float8);

/* float2 -> float8, exact */
Datum
float2_to_float8(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT8(float2_to_double(PG_GETARG_FLOAT2(0)));
}

PG_FUNCTION_INFO_V1(float4_to_float2);

/* float4 -> float2, rounded to nearest even; 22003 on overflow/underflow */
Datum
float4_to_float2(PG_FUNCTION_ARGS)
{
	float4		f = PG_GETARG_FLOAT4(0);

	PG_RETURN_FLOAT2(float2_check_range(float2_from_float(f), isnan(f) ? 0 : f));
}

PG_FUNCTION_INFO_V1(float8_to_float2);

/* float8 -> float2, rounded to nearest even; 22003 on overflow/underflow */
Datum
float8_to_float2(PG_FUNCTION_ARGS)
{
	float8		d = PG_GETARG_FLOAT8(0);

	PG_RETURN_FLOAT2(float2_check_range(float2_from_double(d), isnan(d) ? 0 : d));
}

PG_FUNCTION_INFO_V1(int2_to_float2);

/* int2 -> float2, rounded to nearest even; 22003 beyond 65519 */
Datum
int2_to_float2(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(float2_round_checked((double) PG_GETARG_INT16(0)));
}

PG_FUNCTION_INFO_V1(int4_to_float2);

/* int4 -> float2, rounded to nearest even; 22003 beyond 65519 */
Datum
int4_to_float2(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(float2_round_checked((double) PG_GETARG_INT32(0)));
}

PG_FUNCTION_INFO_V1(int8_to_float2);

/*
 * int8 -> float2, rounded to nearest even; 22003 beyond 65519 (an int8
 * that double cannot hold exactly is far beyond, so one rounding suffices)
 */
Datum
int8_to_float2(PG_FUNCTION_ARGS)
{
	PG_RETURN_FLOAT2(float2_round_checked((double) PG_GETARG_INT64(0)));
}

PG_FUNCTION_INFO_V1(float2_to_int2);

/* float2 -> int2: float4's cast (rint, then 22003 "smallint out of range") */
Datum
float2_to_int2(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(ftoi2, Float4GetDatum(float2_to_float(PG_GETARG_FLOAT2(0))));
}

PG_FUNCTION_INFO_V1(float2_to_int4);

/* float2 -> int4: float4's cast (rint; NaN and infinities are errors) */
Datum
float2_to_int4(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(ftoi4, Float4GetDatum(float2_to_float(PG_GETARG_FLOAT2(0))));
}

PG_FUNCTION_INFO_V1(float2_to_int8);

/* float2 -> int8: float4's cast (rint; NaN and infinities are errors) */
Datum
float2_to_int8(PG_FUNCTION_ARGS)
{
	return DirectFunctionCall1(ftoi8, Float4GetDatum(float2_to_float(PG_GETARG_FLOAT2(0))));
}

PG_FUNCTION_INFO_V1(float2_to_numeric);

/*
 * float2 -> numeric: the shortest decimal that reads back as the half (so
 * 0.1::float2::numeric is 0.1, as 0.1::float4::numeric is), NaN and
 * ±Infinity as numeric's own.
 */
Datum
float2_to_numeric(PG_FUNCTION_ARGS)
{
	char		buf[FLOAT2_SHORTEST_LEN];

	float2_shortest(PG_GETARG_FLOAT2(0), buf);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

PG_FUNCTION_INFO_V1(numeric_to_float2);

/*
 * numeric -> float2: the exact decimal rounded to nearest even, through
 * its text as numeric -> float4 does (so the errors are float2in's)
 */
Datum
numeric_to_float2(PG_FUNCTION_ARGS)
{
	char	   *text = DatumGetCString(DirectFunctionCall1(numeric_out,
														   PG_GETARG_DATUM(0)));

	PG_RETURN_FLOAT2(float2_from_cstring(text, text));
}
