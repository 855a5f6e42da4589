/*-------------------------------------------------------------------------
 *
 * hll.c
 *		SQL interface of pg_warp's HyperLogLog sketches (doc/hll.md): the
 *		aggregates hll_count(anyelement), hll_sketch(anyelement),
 *		hll_merge(bytea) and hll_combine(bytea), the function
 *		hll_sketch_histogram(bytea), and the GUC pg_warp.hll_registers_bits.
 *
 * This file turns a value of any type into the 64-bit hash of its
 * canonical form (hash_value), keeps an aggregate's sketch in the
 * aggregate's memory context, and checks every sketch that SQL hands in.
 * The sketch itself (plain C) is xpu/xpu_hll_sketch.c and the per-value
 * hash xpu/xpu_hll.h, both shared with the engine.  palloc never returns
 * NULL, so the sketch's out-of-memory results are void here.
 *
 * All four aggregates share one internal state (an HllSketch) with combine,
 * serialize and deserialize functions, so they run in parallel plans.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"

#include "pg_warp.h"
#include "xpu/xpu_hll_sketch.h"
#include "xpu/xpu_hll.h"

/* pg_warp.hll_registers_bits: the precision p of new sketches (2^p registers) */
int			pg_warp_hll_registers_bits = 14;

/* how a type's values become canonical bytes (doc/hll.md, "Hashing") */
typedef enum HllKind
{
	HLL_KIND_INT2,
	HLL_KIND_INT4,
	HLL_KIND_INT8,
	HLL_KIND_FLOAT4,
	HLL_KIND_FLOAT8,
	HLL_KIND_NUMERIC,
	HLL_KIND_TEXT,				/* text, varchar */
	HLL_KIND_BPCHAR,			/* without trailing spaces */
	HLL_KIND_NAME,
	HLL_KIND_BYVAL,				/* other fixed-length by-value types */
	HLL_KIND_SEND				/* everything else: the binary send form */
} HllKind;

/* per-call cache of the argument type's hashing (fn_extra) */
typedef struct HllTypeInfo
{
	Oid			typid;
	HllKind		kind;
	int16		typlen;
	FmgrInfo	send;
} HllTypeInfo;

/*
 * pg_warp_hll_init: defines pg_warp.hll_registers_bits (called by _PG_init).
 */
void
pg_warp_hll_init(void)
{
	DefineCustomIntVariable("pg_warp.hll_registers_bits",
							"Precision of new HyperLogLog sketches (log2 of the number of registers).",
							"hll_count and hll_sketch use 2^p registers; the standard error "
							"is about 1.04 / sqrt(2^p).",
							&pg_warp_hll_registers_bits,
							14,
							XPU_HLL_MIN_BITS,
							XPU_HLL_MAX_BITS,
							PGC_USERSET,
							0,
							NULL, NULL, NULL);
}

/* hll_palloc_resize: the HllResizeFn of palloc; arg is the memory context */
static void *
hll_palloc_resize(void *arg, void *ptr, size_t size)
{
	if (size == 0)
	{
		pfree(ptr);
		return NULL;
	}
	if (ptr == NULL)
		return MemoryContextAlloc((MemoryContext) arg, size);
	return repalloc(ptr, size);
}

/* new_sketch: an empty sketch of precision p (0: the first input's) in ctx */
static HllSketch *
new_sketch(MemoryContext ctx, int p)
{
	HllSketch  *sk = MemoryContextAlloc(ctx, sizeof(HllSketch));

	hll_init(sk, p, hll_palloc_resize, ctx);
	return sk;
}

/*
 * check_sketch: raises 22P03 unless the bytea is a sketch that this
 * version reads; returns its bytes.
 */
static const uint8_t *
check_sketch(bytea *b, size_t *len)
{
	const char *problem;

	*len = VARSIZE_ANY_EXHDR(b);
	problem = hll_validate((const uint8_t *) VARDATA_ANY(b), *len);
	if (problem)
		ereport(ERROR,
				errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				errmsg("invalid HyperLogLog sketch"),
				errdetail("%c%s.", pg_toupper((unsigned char) problem[0]), problem + 1),
				errhint("Sketches come from pgwarp.hll_sketch or pgwarp.hll_combine."));
	return (const uint8_t *) VARDATA_ANY(b);
}

/* sketch_bytea: *sk in the serialized format, as a bytea in the current context */
static bytea *
sketch_bytea(HllSketch *sk)
{
	size_t		len = hll_serialized_size(sk);
	bytea	   *out = palloc(VARHDRSZ + len);

	SET_VARSIZE(out, VARHDRSZ + len);
	hll_serialize(sk, (uint8_t *) VARDATA(out));
	return out;
}

/* classify: how values of type typid hash; errors where they cannot */
static void
classify(HllTypeInfo *info, Oid typid, Oid collid)
{
	Oid			base = getBaseType(typid);
	bool		byval;
	Oid			sendfn;
	bool		isvarlena;

	info->typid = typid;
	get_typlenbyval(base, &info->typlen, &byval);
	switch (base)
	{
		case INT2OID: info->kind = HLL_KIND_INT2; break;
		case INT4OID: info->kind = HLL_KIND_INT4; break;
		case INT8OID: info->kind = HLL_KIND_INT8; break;
		case FLOAT4OID: info->kind = HLL_KIND_FLOAT4; break;
		case FLOAT8OID: info->kind = HLL_KIND_FLOAT8; break;
		case NUMERICOID: info->kind = HLL_KIND_NUMERIC; break;
		case TEXTOID:
		case VARCHAROID: info->kind = HLL_KIND_TEXT; break;
		case BPCHAROID: info->kind = HLL_KIND_BPCHAR; break;
		case NAMEOID: info->kind = HLL_KIND_NAME; break;
		default:
			info->kind = (byval && info->typlen > 0) ? HLL_KIND_BYVAL : HLL_KIND_SEND;
			break;
	}
	if ((info->kind == HLL_KIND_TEXT || info->kind == HLL_KIND_BPCHAR) &&
		OidIsValid(collid) && !get_collation_isdeterministic(collid))
		ereport(ERROR,
				errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				errmsg("HyperLogLog sketches of strings in a nondeterministic collation are not supported"),
				errdetail("Sketches hash the bytes of a string, which a nondeterministic collation may call equal when they differ."),
				errhint("Apply a deterministic collation, e.g. COLLATE \"C\", to the argument."));
	if (info->kind == HLL_KIND_SEND)
	{
		getTypeBinaryOutputInfo(base, &sendfn, &isvarlena);
		fmgr_info_cxt(sendfn, &info->send, CurrentMemoryContext);
	}
}

/*
 * hll_hash_numeric: the hash of a numeric's canonical form: its binary send
 * form without the display scale, with leading and trailing zero base-10000
 * digits dropped (so 1.0 and 1.00 agree), zero as (+, weight 0, no
 * digits), and NaN and the infinities as their sign word alone.
 */
static uint64
hll_hash_numeric(Datum value)
{
	bytea	   *sent = DatumGetByteaPP(DirectFunctionCall1(numeric_send, value));
	const uint8 *b = (const uint8 *) VARDATA_ANY(sent);
	int			ndigits = (b[0] << 8) | b[1];
	int16		weight = (int16) ((b[2] << 8) | b[3]);
	const uint8 *digits = b + 8;
	uint8	   *canon;
	uint64		h;

	while (ndigits > 0 && digits[0] == 0 && digits[1] == 0)
	{
		digits += 2;
		ndigits--;
		weight--;
	}
	while (ndigits > 0 && digits[2 * ndigits - 2] == 0 && digits[2 * ndigits - 1] == 0)
		ndigits--;
	if (ndigits == 0)
		weight = 0;
	canon = palloc(4 + 2 * ndigits);
	/* the sign word (NaN and the infinities have no digits); zero is positive */
	canon[0] = (ndigits == 0 && b[4] == 0x40) ? 0 : b[4];
	canon[1] = b[5];
	canon[2] = (uint8) ((uint16) weight >> 8);
	canon[3] = (uint8) weight;
	memcpy(canon + 4, digits, 2 * ndigits);
	h = xpu_hll_hash_bytes(XPU_HLL_SEED_NUMERIC, canon, 4 + 2 * ndigits);
	pfree(canon);
	pfree(sent);
	return h;
}

/* hash_byval: the value bytes (little-endian, typlen of them) of a by-value datum */
static uint64
hash_byval(Datum value, int16 typlen)
{
	uint64		v;
	uint8		bytes[8];
	int			k;

	switch (typlen)
	{
		case 1: v = (uint8) DatumGetChar(value); break;
		case 2: v = (uint16) DatumGetInt16(value); break;
		case 4: v = (uint32) DatumGetInt32(value); break;
		default: v = (uint64) DatumGetInt64(value); break;
	}
	for (k = 0; k < typlen; k++)
		bytes[k] = (uint8) (v >> (8 * k));
	return xpu_hll_hash_bytes(XPU_HLL_SEED_BYVAL, bytes, (uint32) typlen);
}

/* hash_value: the 64-bit hash of a non-NULL value's canonical form */
static uint64
hash_value(HllTypeInfo *info, Datum value)
{
	switch (info->kind)
	{
		case HLL_KIND_INT2: return xpu_hll_hash_int64(DatumGetInt16(value));
		case HLL_KIND_INT4: return xpu_hll_hash_int64(DatumGetInt32(value));
		case HLL_KIND_INT8: return xpu_hll_hash_int64(DatumGetInt64(value));
		case HLL_KIND_FLOAT4: return xpu_hll_hash_float8((double) DatumGetFloat4(value));
		case HLL_KIND_FLOAT8: return xpu_hll_hash_float8(DatumGetFloat8(value));
		case HLL_KIND_NUMERIC: return hll_hash_numeric(value);
		case HLL_KIND_NAME:
			{
				const char *s = NameStr(*DatumGetName(value));

				return xpu_hll_hash_bytes(XPU_HLL_SEED_TEXT, (const uint8 *) s, strlen(s));
			}
		case HLL_KIND_TEXT:
		case HLL_KIND_BPCHAR:
			{
				text	   *t = DatumGetTextPP(value);
				const char *s = VARDATA_ANY(t);
				int			len = VARSIZE_ANY_EXHDR(t);
				uint64		h;

				if (info->kind == HLL_KIND_BPCHAR)
					while (len > 0 && s[len - 1] == ' ')
						len--;
				h = xpu_hll_hash_bytes(XPU_HLL_SEED_TEXT, (const uint8 *) s, len);
				if ((Pointer) t != DatumGetPointer(value))
					pfree(t);
				return h;
			}
		case HLL_KIND_BYVAL: return hash_byval(value, info->typlen);
		case HLL_KIND_SEND:
			{
				bytea	   *sent = SendFunctionCall(&info->send, value);
				uint64		h = xpu_hll_hash_bytes(XPU_HLL_SEED_SEND,
												   (const uint8 *) VARDATA(sent),
												   VARSIZE(sent) - VARHDRSZ);

				pfree(sent);
				return h;
			}
	}
	elog(ERROR, "unexpected HyperLogLog value kind %d", (int) info->kind);
	return 0;
}

/* agg_context: the aggregate's memory context; an error outside aggregates */
static MemoryContext
agg_context(FunctionCallInfo fcinfo, const char *fn)
{
	MemoryContext ctx;

	if (!AggCheckCallContext(fcinfo, &ctx))
		elog(ERROR, "%s called in a non-aggregate context", fn);
	return ctx;
}

PG_FUNCTION_INFO_V1(pg_warp_hll_trans);

/*
 * pg_warp_hll_trans(internal, anyelement) returns internal
 *		Transition of hll_count and hll_sketch: adds the value's hash to the
 *		state (created at the first non-NULL value, at the precision of
 *		pg_warp.hll_registers_bits then); NULLs are skipped.
 */
Datum
pg_warp_hll_trans(PG_FUNCTION_ARGS)
{
	MemoryContext ctx = agg_context(fcinfo, "pg_warp_hll_trans");
	HllSketch  *sk = PG_ARGISNULL(0) ? NULL : (HllSketch *) PG_GETARG_POINTER(0);
	HllTypeInfo *info = (HllTypeInfo *) fcinfo->flinfo->fn_extra;

	if (PG_ARGISNULL(1))
	{
		if (sk == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(sk);
	}
	if (info == NULL)
	{
		Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, 1);
		MemoryContext old = MemoryContextSwitchTo(fcinfo->flinfo->fn_mcxt);

		if (!OidIsValid(typid))
			elog(ERROR, "could not determine the argument type of a HyperLogLog aggregate");
		info = palloc(sizeof(HllTypeInfo));
		classify(info, typid, PG_GET_COLLATION());
		fcinfo->flinfo->fn_extra = info;
		MemoryContextSwitchTo(old);
	}
	if (sk == NULL)
		sk = new_sketch(ctx, pg_warp_hll_registers_bits);
	(void) hll_add_hash(sk, hash_value(info, PG_GETARG_DATUM(1)));
	PG_RETURN_POINTER(sk);
}

PG_FUNCTION_INFO_V1(pg_warp_hll_merge_trans);

/*
 * pg_warp_hll_merge_trans(internal, bytea) returns internal
 *		Transition of hll_merge and hll_combine: merges a sketch into the
 *		state (folding to the lower precision); NULLs are skipped, a corrupt
 *		sketch is an error.
 */
Datum
pg_warp_hll_merge_trans(PG_FUNCTION_ARGS)
{
	MemoryContext ctx = agg_context(fcinfo, "pg_warp_hll_merge_trans");
	HllSketch  *sk = PG_ARGISNULL(0) ? NULL : (HllSketch *) PG_GETARG_POINTER(0);
	const uint8_t *buf;
	size_t		len;

	if (PG_ARGISNULL(1))
	{
		if (sk == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(sk);
	}
	buf = check_sketch(PG_GETARG_BYTEA_PP(1), &len);
	if (sk == NULL)
		sk = new_sketch(ctx, 0);
	(void) hll_merge_serialized(sk, buf, len);
	PG_RETURN_POINTER(sk);
}

PG_FUNCTION_INFO_V1(pg_warp_hll_combine_states);

/*
 * pg_warp_hll_combine_states(internal, internal) returns internal
 *		Combine function of the four aggregates (parallel plans): the union
 *		of two states, kept in the aggregate's context (the second state is
 *		copied, never adopted: it may live in a shorter-lived context).
 */
Datum
pg_warp_hll_combine_states(PG_FUNCTION_ARGS)
{
	MemoryContext ctx = agg_context(fcinfo, "pg_warp_hll_combine_states");
	HllSketch  *a = PG_ARGISNULL(0) ? NULL : (HllSketch *) PG_GETARG_POINTER(0);
	HllSketch  *b = PG_ARGISNULL(1) ? NULL : (HllSketch *) PG_GETARG_POINTER(1);

	if (b == NULL)
	{
		if (a == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(a);
	}
	if (a == NULL)
		a = new_sketch(ctx, 0);
	(void) hll_merge(a, b);
	PG_RETURN_POINTER(a);
}

PG_FUNCTION_INFO_V1(pg_warp_hll_serialize_state);

/*
 * pg_warp_hll_serialize_state(internal) returns bytea
 *		Serial function (strict): the state as a sketch in the serialized
 *		format.
 */
Datum
pg_warp_hll_serialize_state(PG_FUNCTION_ARGS)
{
	HllSketch  *sk = (HllSketch *) PG_GETARG_POINTER(0);

	Assert(sk->p != 0);
	PG_RETURN_BYTEA_P(sketch_bytea(sk));
}

PG_FUNCTION_INFO_V1(pg_warp_hll_deserialize_state);

/*
 * pg_warp_hll_deserialize_state(bytea, internal) returns internal
 *		Deserial function (strict): a state (in the current context, which
 *		the combine function copies from) from a serialized sketch.
 */
Datum
pg_warp_hll_deserialize_state(PG_FUNCTION_ARGS)
{
	size_t		len;
	const uint8_t *buf = check_sketch(PG_GETARG_BYTEA_PP(0), &len);
	HllSketch  *sk = new_sketch(CurrentMemoryContext, 0);

	(void) hll_merge_serialized(sk, buf, len);
	PG_RETURN_POINTER(sk);
}

PG_FUNCTION_INFO_V1(pg_warp_hll_final_count);

/*
 * pg_warp_hll_final_count(internal) returns bigint
 *		Final function of hll_count and hll_merge: the estimate, rounded;
 *		0 when there was no non-NULL input.  It may reorganize the state
 *		(sort the explicit hashes) without changing what it represents.
 */
Datum
pg_warp_hll_final_count(PG_FUNCTION_ARGS)
{
	HllSketch  *sk;

	if (PG_ARGISNULL(0))
		PG_RETURN_INT64(0);
	sk = (HllSketch *) PG_GETARG_POINTER(0);
	PG_RETURN_INT64((int64) llround(hll_estimate(sk)));
}

PG_FUNCTION_INFO_V1(pg_warp_hll_final_sketch);

/*
 * pg_warp_hll_final_sketch(internal) returns bytea
 *		Final function of hll_sketch: the serialized sketch; an empty one at
 *		the precision of pg_warp.hll_registers_bits when there was no
 *		non-NULL input.
 */
Datum
pg_warp_hll_final_sketch(PG_FUNCTION_ARGS)
{
	HllSketch	empty;

	if (PG_ARGISNULL(0))
	{
		hll_init(&empty, pg_warp_hll_registers_bits, hll_palloc_resize, CurrentMemoryContext);
		PG_RETURN_BYTEA_P(sketch_bytea(&empty));
	}
	PG_RETURN_BYTEA_P(sketch_bytea((HllSketch *) PG_GETARG_POINTER(0)));
}

PG_FUNCTION_INFO_V1(pg_warp_hll_final_combine);

/*
 * pg_warp_hll_final_combine(internal) returns bytea
 *		Final function of hll_combine: the merged sketch; NULL when there was
 *		no non-NULL sketch (no precision to give an empty one).
 */
Datum
pg_warp_hll_final_combine(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	PG_RETURN_BYTEA_P(sketch_bytea((HllSketch *) PG_GETARG_POINTER(0)));
}

PG_FUNCTION_INFO_V1(pg_warp_hll_sketch_histogram);

/*
 * pg_warp_hll_sketch_histogram(bytea) returns int[]
 *		Element k (the array starts at index 0) is the number of registers
 *		of rank k, k = 0 .. 65 - p; the elements add up to 2^p.
 */
Datum
pg_warp_hll_sketch_histogram(PG_FUNCTION_ARGS)
{
	size_t		len;
	const uint8_t *buf = check_sketch(PG_GETARG_BYTEA_PP(0), &len);
	HllSketch  *sk = new_sketch(CurrentMemoryContext, 0);
	uint32_t	counts[XPU_HLL_MAX_RANK(XPU_HLL_MIN_BITS) + 1];
	int			n;
	Datum	   *elems;
	int			dims[1];
	int			lbs[1] = {0};
	int			k;

	(void) hll_merge_serialized(sk, buf, len);
	hll_histogram(sk, counts);
	n = XPU_HLL_MAX_RANK(sk->p) + 1;
	elems = palloc(sizeof(Datum) * n);
	for (k = 0; k < n; k++)
		elems[k] = Int32GetDatum((int32) counts[k]);
	dims[0] = n;
	PG_RETURN_ARRAYTYPE_P(construct_md_array(elems, NULL, 1, dims, lbs,
											 INT4OID, 4, true, TYPALIGN_INT));
}
