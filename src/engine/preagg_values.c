/*-------------------------------------------------------------------------
 *
 * preagg_values.c
 *		The engine's groups as PostgreSQL values, for GpuPreAgg (gpu_preagg.c):
 *		group keys decoded from the service's bytes, each aggregate's final
 *		value (PostgreSQL's own numeric code and final functions where that is
 *		what PostgreSQL does) or its partial state in the serial form its
 *		Partial Aggregate would return.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"


#include "nodes/makefuncs.h"
#include "libpq/pqformat.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/pg_locale.h"

#include "engine/codegen.h"
#include "engine/gpu_preagg.h"
#include "xpu/xpu_half.h"

/* ---------------- groups into tuples ---------------- */

/*
 * the Datum of type typid held as an XpuValue-like int64/double/int128;
 * float2_oid: pg_warp's float2, held as the double of its exact float4
 */
static Datum
gpa_value_datum(Oid typid, Oid float2_oid, int scale, int64 i, double f8, __int128 n)
{
	if (OidIsValid(float2_oid) && typid == float2_oid)
		return UInt16GetDatum(xpu_half_from_double(f8));	/* float2's Datum: its bits */
	switch (typid)
	{
		case BOOLOID: return BoolGetDatum(i != 0);
		case INT2OID: return Int16GetDatum((int16) i);
		case INT4OID: return Int32GetDatum((int32) i);
		case INT8OID: return Int64GetDatum(i);
		case FLOAT4OID: return Float4GetDatum((float4) f8);
		case FLOAT8OID: return Float8GetDatum(f8);
		case NUMERICOID: return codegen_numeric_datum(n, scale);
		case DATEOID: return DateADTGetDatum((DateADT) i);
		case TIMESTAMPOID:
		case TIMESTAMPTZOID: return Int64GetDatum(i);
		default:
			elog(ERROR, "GpuPreAgg: unexpected type %u", typid);
	}
	return (Datum) 0;
}

/* see gpu_preagg.h */
void
gpa_decode_keys(int n_keys, const Oid *key_types, const int *key_scales, Oid float2_oid,
				const uint8 *p, uint32 len, Datum *values, bool *nulls)
{
	const uint8 *end = p + len;

	for (int k = 0; k < n_keys; k++)
	{
		Oid			t = key_types[k];
		int64		i = 0;
		double		f8 = 0;
		__int128	n = 0;

		if (p >= end)
			elog(ERROR, "GpuPreAgg: a group key from the service is too short");
		nulls[k] = (*p++ == 0);
		if (nulls[k])
			continue;
		if (t == TEXTOID || t == VARCHAROID)
		{
			int32		l;

			if (end - p < 4)
				elog(ERROR, "GpuPreAgg: a group key from the service is too short");
			memcpy(&l, p, 4);
			if (l < 0 || end - p - 4 < l)
				elog(ERROR, "GpuPreAgg: a group key from the service is malformed");
			values[k] = PointerGetDatum(cstring_to_text_with_len((const char *) p + 4, l));
			p += 4 + l;
			continue;
		}
		if (end - p < (t == NUMERICOID ? 16 : 8))
			elog(ERROR, "GpuPreAgg: a group key from the service is too short");
		if (t == NUMERICOID)
			memcpy(&n, p, 16), p += 16;
		else if (t == FLOAT4OID || t == FLOAT8OID || t == float2_oid)
			memcpy(&f8, p, 8), p += 8;
		else
			memcpy(&i, p, 8), p += 8;
		values[k] = gpa_value_datum(t, float2_oid, key_scales[k], i, f8, n);
	}
}

/* see gpu_preagg.h */
void
gpa_key_zero_sign(Oid typid, Oid float2_oid, const XpuAggState *sign, Datum *value)
{
	if (sign->count == 0 || sign->v.i != 0)
		return;
	if (typid == FLOAT8OID)
		*value = Float8GetDatum(-0.0);
	else if (typid == FLOAT4OID)
		*value = Float4GetDatum(-0.0f);
	else if (OidIsValid(float2_oid) && typid == float2_oid)
		*value = UInt16GetDatum(xpu_half_from_double(-0.0));
}

/* a numeric Datum of v / 10^scale for any scale >= 0 */
static Datum
gpa_numeric_wide(__int128 v, int scale)
{
	char		digits[64];
	StringInfoData buf;
	const char *d = digits;
	int			n;

	xpu_numeric_format(v, 0, digits);
	initStringInfo(&buf);
	if (*d == '-')
		appendStringInfoChar(&buf, *d++);
	n = (int) strlen(d);
	if (n <= scale)
	{
		appendStringInfoString(&buf, "0.");
		appendStringInfoSpaces(&buf, scale - n);
		for (char *p = buf.data + buf.len - (scale - n); *p; p++)
			*p = '0';
		appendStringInfoString(&buf, d);
	}
	else
	{
		appendBinaryStringInfo(&buf, d, n - scale);
		if (scale > 0)
		{
			appendStringInfoChar(&buf, '.');
			appendStringInfoString(&buf, d + n - scale);
		}
	}
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf.data),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * gpa_put_numericvar: appends the numeric value v / 10^scale to buf in the
 * form PostgreSQL's numeric aggregate serial functions give a NumericVar
 * (numeric.c's numericvar_serialize: ndigits, weight, sign and dscale as
 * int32, then the base-10000 digits as int16, network byte order), made
 * from numeric_send's form of it (the same fields as int16)
 */
static void
gpa_put_numericvar(StringInfo buf, __int128 v, int scale)
{
	bytea	   *sent = DatumGetByteaPP(DirectFunctionCall1(numeric_send,
														   gpa_numeric_wide(v, scale)));
	const uint8 *b = (const uint8 *) VARDATA_ANY(sent);
	int16		hdr[4];

	for (int i = 0; i < 4; i++)
		hdr[i] = (int16) ((b[2 * i] << 8) | b[2 * i + 1]);
	pq_sendint32(buf, (uint32) hdr[0]); /* ndigits */
	pq_sendint32(buf, (uint32) (int32) hdr[1]); /* weight */
	pq_sendint32(buf, (uint32) (uint16) hdr[2]);	/* sign */
	pq_sendint32(buf, (uint32) hdr[3]); /* dscale */
	appendBinaryStringInfo(buf, (const char *) b + 8, 2 * hdr[0]);
}

/*
 * gpa_call1: fn(arg) with fcinfo->context = context; *isnull set when the
 * function returns NULL
 */
static Datum
gpa_call1(FmgrInfo *fn, Datum arg, Node *context, bool *isnull)
{
	LOCAL_FCINFO(fcinfo, 2);
	Datum		r;

	InitFunctionCallInfoData(*fcinfo, fn, fn->fn_nargs, InvalidOid, context, NULL);
	fcinfo->args[0].value = arg;
	fcinfo->args[0].isnull = *isnull;
	fcinfo->args[1].value = (Datum) 0;	/* a deserial function's unused internal */
	fcinfo->args[1].isnull = true;
	r = FunctionCallInvoke(fcinfo);
	*isnull = fcinfo->isnull;
	return r;
}

/*
 * gpa_var_serialized: the transition state of stddev/variance of integers
 * or numerics from the engine's exact N, sum(x) (s[0]) and sum(x * x)
 * (s[1]), serialized as the aggregate's serial function would serialize it
 * (numeric_poly_serialize for int2/int4, numeric_serialize otherwise)
 */
static bytea *
gpa_var_serialized(GpaAggExec *ae, const XpuAggState *s)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, s[0].count);
	gpa_put_numericvar(&buf, s[0].v.i128, ae->scale);
	gpa_put_numericvar(&buf, s[1].v.i128, 2 * ae->scale);
	if (!ae->poly)
	{
		pq_sendint32(&buf, (uint32) ae->scale); /* maxScale */
		pq_sendint64(&buf, s[0].count); /* maxScaleCount */
		pq_sendint64(&buf, 0);	/* NaNcount */
		pq_sendint64(&buf, 0);	/* pInfcount */
		pq_sendint64(&buf, 0);	/* nInfcount */
	}
	return pq_endtypsend(&buf);
}

/*
 * gpa_avg_serialized: the transition state of sum or avg of int8 or
 * numeric from the engine's exact N and sum(x), serialized as the
 * aggregate's serial function would (int8_avg_serialize: N, sumX;
 * numeric_avg_serialize: N, sumX, maxScale, maxScaleCount and the counts
 * of NaN and infinities, none of which the engine holds)
 */
static bytea *
gpa_avg_serialized(GpaAggExec *ae, const XpuAggState *s)
{
	StringInfoData buf;

	pq_begintypsend(&buf);
	pq_sendint64(&buf, s->count);
	gpa_put_numericvar(&buf, s->v.i128, ae->scale);
	if (ae->argtype == NUMERICOID)
	{
		pq_sendint32(&buf, (uint32) ae->scale); /* maxScale */
		pq_sendint64(&buf, s->count);	/* maxScaleCount */
		pq_sendint64(&buf, 0);	/* NaNcount */
		pq_sendint64(&buf, 0);	/* pInfcount */
		pq_sendint64(&buf, 0);	/* nInfcount */
	}
	return pq_endtypsend(&buf);
}

/*
 * gpa_final_var_exact: stddev/variance of integers or numerics through
 * PostgreSQL's own functions: the serialized state (gpa_var_serialized)
 * handed to the aggregate's deserial function (which insists on an
 * aggregate's call context: an AggState node), and the state it makes to
 * its final function
 */
static Datum
gpa_final_var_exact(GpaAggExec *ae, const XpuAggState *s, bool *isnull)
{
	AggState   *agg = makeNode(AggState);
	Datum		state;

	*isnull = false;
	state = gpa_call1(&ae->deserialfn, PointerGetDatum(gpa_var_serialized(ae, s)),
					  (Node *) agg, isnull);
	if (*isnull)
		elog(ERROR, "GpuPreAgg: a deserial function returned NULL");
	return gpa_call1(&ae->finalfn, state, (Node *) agg, isnull);
}

/* float8_accum's state, the float8[] {N, Sx, Sxx}, of a VAR_FLOAT state */
static Datum
gpa_float8_accum_state(const XpuAggState *s)
{
	Datum		elems[3];

	elems[0] = Float8GetDatum((double) s->count);
	elems[1] = Float8GetDatum(s->v.f8[0]);
	elems[2] = Float8GetDatum(s->v.f8[1]);
	return PointerGetDatum(construct_array(elems, 3, FLOAT8OID, 8,
										   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
}

/*
 * gpa_final_var_float: stddev/variance of floats: PostgreSQL's final
 * function over the float8[] {N, Sx, Sxx} of float8_accum's state
 */
static Datum
gpa_final_var_float(GpaAggExec *ae, const XpuAggState *s, bool *isnull)
{
	*isnull = false;
	return gpa_call1(&ae->finalfn, gpa_float8_accum_state(s), NULL, isnull);
}

/*
 * pg_warp's serialized HyperLogLog sketch (doc/hll.md, the format
 * src/xpu/xpu_hll_sketch.h defines): an 8-byte header (magic "WH", version 1,
 * the precision, the encoding), then the distinct hashes in increasing
 * order (8 bytes each, little-endian) or the 2^p registers packed 6 bits
 * each (register i in bits 6i .. 6i+5 of the payload as one little-endian
 * bit string)
 */
#define GPA_HLL_HEADER		8
#define GPA_HLL_EXPLICIT	0
#define GPA_HLL_DENSE		1

/*
 * gpa_hll_serialized: the group's set (s: its form; extra: its bytes,
 * xpu_agg.h) as a serialized sketch of precision p
 */
static bytea *
gpa_hll_serialized(const XpuAggState *s, const uint8 *extra, int p)
{
	uint32		len = (uint32) s->v.i;
	size_t		m = (size_t) 1 << p;
	size_t		payload = s->pad == 0 ? len : 6 * m / 8;
	bytea	   *b = palloc0(VARHDRSZ + GPA_HLL_HEADER + payload);
	uint8	   *out = (uint8 *) VARDATA(b);

	SET_VARSIZE(b, VARHDRSZ + GPA_HLL_HEADER + payload);
	out[0] = 'W';
	out[1] = 'H';
	out[2] = 1;
	out[3] = (uint8) p;
	out[4] = s->pad == 0 ? GPA_HLL_EXPLICIT : GPA_HLL_DENSE;
	if (s->pad == 0)
	{
		/* the engine's hashes: distinct, increasing, little-endian (x86, ARM) */
		memcpy(out + GPA_HLL_HEADER, extra, len);
		return b;
	}
	if (len != m)
		elog(ERROR, "GpuPreAgg: the service sent %u HyperLogLog registers", len);
	for (size_t i = 0; i < m; i++)
	{
		size_t		bit = 6 * i;
		uint32		v = (uint32) extra[i] << (bit % 8);

		out[GPA_HLL_HEADER + bit / 8] |= (uint8) v;
		if (v >> 8)
			out[GPA_HLL_HEADER + bit / 8 + 1] |= (uint8) (v >> 8);
	}
	return b;
}

/*
 * gpa_final_hll: hll_count or hll_sketch through pg_warp's own functions:
 * the group's sketch, serialized, made a state by the aggregate's deserial
 * function (which checks it), and that state handed to its final function;
 * the final function of a NULL state when the group had no non-NULL
 * argument (hll_trans leaves its state NULL then)
 */
static Datum
gpa_final_hll(GpaAggExec *ae, const XpuAggState *s, const uint8 *extra, bool *isnull)
{
	Datum		state;

	*isnull = s->count == 0;
	if (*isnull)
		return gpa_call1(&ae->finalfn, (Datum) 0, NULL, isnull);
	state = gpa_call1(&ae->deserialfn, PointerGetDatum(gpa_hll_serialized(s, extra, ae->hll_p)),
					  NULL, isnull);
	if (*isnull)
		elog(ERROR, "GpuPreAgg: a deserial function returned NULL");
	return gpa_call1(&ae->finalfn, state, NULL, isnull);
}

/*
 * PostgreSQL's result of aggregate ae from its engine states s[0 ..
 * gpa_n_states - 1] (and for HLL the bytes of its set, extra)
 */
Datum
gpa_final(GpaAggExec *ae, const XpuAggState *s, const uint8 *extra, bool *isnull)
{
	*isnull = false;
	switch (ae->info->final)
	{
		case FIN_COUNT:
			return Int64GetDatum(s->count);
		case FIN_HLL:
			return gpa_final_hll(ae, s, extra, isnull);
		case FIN_TEXT:
			*isnull = s->count == 0;
			return *isnull ? (Datum) 0 :
				PointerGetDatum(cstring_to_text_with_len((const char *) extra, (int) s->v.i));
		default:
			break;
	}
	if (s->count == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (ae->info->final)
	{
		case FIN_SUM_INT8:
			/* int4_sum and int2_sum add in int64 without an overflow check */
			return Int64GetDatum((int64) (uint64) s->v.i128);
		case FIN_SUM_NUMERIC:
			return codegen_numeric_datum(s->v.i128, ae->scale);
		case FIN_AVG_NUMERIC:
			return DirectFunctionCall2(numeric_div, codegen_numeric_datum(s->v.i128, ae->scale),
									   DirectFunctionCall1(int8_numeric,
														   Int64GetDatum(s->count)));
		case FIN_SUM_FLOAT8:
			return Float8GetDatum(s->v.f8[0]);
		case FIN_AVG_FLOAT8:
			return Float8GetDatum(s->v.f8[0] / (double) s->count);
		case FIN_SUM_FLOAT4:
			return Float4GetDatum(s->v.f4);
		case FIN_MINMAX:
			return gpa_value_datum(ae->argtype, ae->arg_float2 ? ae->argtype : InvalidOid,
								   ae->scale, s->v.i, s->v.f8[0], s->v.i128);
		case FIN_VAR_EXACT:
			return gpa_final_var_exact(ae, s, isnull);
		case FIN_VAR_FLOAT:
			return gpa_final_var_float(ae, s, isnull);
		default:
			break;
	}
	elog(ERROR, "GpuPreAgg: unexpected final %d", (int) ae->info->final);
	return (Datum) 0;
}

/*
 * gpa_partial: the partial state of aggregate ae that PostgreSQL's Partial
 * Aggregate would return for the group (AGGSPLIT_INITIAL_SERIAL: the
 * transition value, serialized where it is internal), from its engine
 * states s (and for HLL the bytes of its set, extra).  Where the group had
 * no non-NULL argument the state is NULL (or count's 0, avg(int)'s {0,0},
 * float8_accum's {0,0,0}): every combine and final function treats a NULL
 * state as one of no input.
 */
Datum
gpa_partial(GpaAggExec *ae, const XpuAggState *s, const uint8 *extra, bool *isnull)
{
	*isnull = false;
	switch (ae->info->final)
	{
		case FIN_AVG_NUMERIC:
			if (ae->argtype == INT2OID || ae->argtype == INT4OID)
			{
				/* int2/int4_avg_accum's int8[] {N, sum}, the sum wrapping as theirs */
				Datum		elems[2] = {Int64GetDatum(s->count),
				Int64GetDatum((int64) (uint64) s->v.i128)};

				return PointerGetDatum(construct_array(elems, 2, INT8OID, 8,
													   FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
			}
			break;
		case FIN_AVG_FLOAT8:	/* a VAR_FLOAT state in a parallel run */
		case FIN_VAR_FLOAT:
			return gpa_float8_accum_state(s);
		case FIN_COUNT:
		case FIN_TEXT:
			return gpa_final(ae, s, extra, isnull);
		default:
			break;
	}
	if (s->count == 0)
	{
		*isnull = true;
		return (Datum) 0;
	}
	switch (ae->info->final)
	{
		case FIN_SUM_NUMERIC:
			if (ae->argtype == INT8OID || ae->argtype == NUMERICOID)
				return PointerGetDatum(gpa_avg_serialized(ae, s));
			break;
		case FIN_AVG_NUMERIC:
			return PointerGetDatum(gpa_avg_serialized(ae, s));
		case FIN_VAR_EXACT:
			return PointerGetDatum(gpa_var_serialized(ae, s));
		case FIN_HLL:
			return PointerGetDatum(gpa_hll_serialized(s, extra, ae->hll_p));
		default:
			/* sum of int2/int4 (int8), of floats, min and max: their value */
			return gpa_final(ae, s, extra, isnull);
	}
	elog(ERROR, "GpuPreAgg: unexpected partial state of aggregate %u", ae->aggfn);
	return (Datum) 0;
}
