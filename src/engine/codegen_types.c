/*-------------------------------------------------------------------------
 *
 * codegen_types.c
 *		PostgreSQL types and values as the engine's: the engine type of a
 *		built-in type, of values a program receives from outside a column
 *		load (a join's inner columns), numeric typmods and numeric Datums
 *		as 128-bit fixed point.  Used by codegen.c and by the callers that
 *		convert values for a program (gpu_join.c, heap_source.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/numeric.h"

#include "engine/codegen.h"
#include "xpu/xpu_numeric.h"

/* the engine's type of a built-in PostgreSQL type, XPU_T_NONE if it has none */
XpuType
codegen_builtin_type(Oid typid)
{
	switch (typid)
	{
		case BOOLOID: return XPU_T_BOOL;
		case INT2OID: return XPU_T_INT2;
		case INT4OID: return XPU_T_INT4;
		case INT8OID: return XPU_T_INT8;
		case FLOAT4OID: return XPU_T_FLOAT4;
		case FLOAT8OID: return XPU_T_FLOAT8;
		case NUMERICOID: return XPU_T_NUMERIC;
		case DATEOID: return XPU_T_DATE;
		case TIMESTAMPOID: return XPU_T_TIMESTAMP;
		case TIMESTAMPTZOID: return XPU_T_TIMESTAMPTZ;
		case INTERVALOID: return XPU_T_INTERVAL;
		case TEXTOID:
		case VARCHAROID:		/* text's representation and operators */
			/* the engine compares the file's UTF-8 bytes */
			return GetDatabaseEncoding() == PG_UTF8 ? XPU_T_TEXT : XPU_T_NONE;
		default: return XPU_T_NONE;
	}
}

/*
 * codegen_value_type: the engine's type of values of PostgreSQL type typid
 * with typmod that a program receives from outside a column load (a join's
 * inner columns, which the backend converts): XPU_T_NONE where the engine
 * does not take them so (interval, float2, a numeric without a scale of 0
 * to XPU_NUMERIC_MAX_SCALE in its typmod, text outside a UTF8 database);
 * *scale: a numeric's
 */
XpuType
codegen_value_type(Oid typid, int32 typmod, int *scale)
{
	XpuType		t = typid == INTERVALOID ? XPU_T_NONE : codegen_builtin_type(typid);

	*scale = 0;
	if (t == XPU_T_NUMERIC)
	{
		*scale = codegen_numeric_typmod_scale(typmod);
		return *scale >= 0 ? XPU_T_NUMERIC : XPU_T_NONE;
	}
	return t;
}

/* the scale of a numeric typmod the engine takes (0 .. XPU_NUMERIC_MAX_SCALE), or -1 */
int
codegen_numeric_typmod_scale(int32 typmod)
{
	int			scale;

	if (typmod < (int32) VARHDRSZ)
		return -1;				/* unconstrained: no fixed scale */
	scale = ((((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024);
	return scale >= 0 && scale <= XPU_NUMERIC_MAX_SCALE ? scale : -1;
}

/*
 * A numeric Datum as v / 10^scale with |v| < 10^38; false for NaN, the
 * infinities and values beyond the fixed-point form.
 */
bool
codegen_numeric_value(Datum d, __int128 *v, int *scale)
{
	char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out, d));
	bool		neg = false,
				point = false;
	int			digits = 0;
	__int128	acc = 0;

	*scale = 0;
	if (*s == '-')
		neg = true, s++;
	for (; *s; s++)
	{
		if (*s == '.' && !point)
		{
			point = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return false;		/* NaN, Infinity */
		if (acc != 0 || *s != '0')
			digits++;
		if (digits > 38)
			return false;
		acc = acc * 10 + (*s - '0');
		if (point)
			(*scale)++;
	}
	*v = neg ? -acc : acc;
	return *scale <= XPU_NUMERIC_MAX_SCALE;
}

/* the numeric Datum of v / 10^scale (the inverse of codegen_numeric_value) */
Datum
codegen_numeric_datum(__int128 v, int scale)
{
	char		buf[64];

	xpu_numeric_format(v, scale, buf);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}
