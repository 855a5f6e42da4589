/*-------------------------------------------------------------------------
 *
 * preagg_aggs.c
 *		The aggregates GpuPreAgg computes in the engine: PostgreSQL's
 *		aggregate functions (by OID, by their C functions for pg_warp's own
 *		HLL and float2 aggregates) and the engine's form of each (its
 *		aggregate kind, argument type and the final step PostgreSQL's
 *		result needs: gpu_preagg.h's GpaAggInfo).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "pg_warp.h"
#include "engine/codegen.h"
#include "engine/gpu_preagg.h"
#include "xpu/xpu_agg.h"

/* the six stddev/variance aggregates of one argument type */
#define GPA_VAR_AGGS(T, OID, K, K2, FIN) \
	{F_STDDEV_##T, K, OID, FIN, K2}, \
	{F_STDDEV_SAMP_##T, K, OID, FIN, K2}, \
	{F_STDDEV_POP_##T, K, OID, FIN, K2}, \
	{F_VARIANCE_##T, K, OID, FIN, K2}, \
	{F_VAR_SAMP_##T, K, OID, FIN, K2}, \
	{F_VAR_POP_##T, K, OID, FIN, K2}

static const GpaAggInfo gpa_aggs[] = {
	{F_COUNT_, XPU_AGG_COUNT_STAR, InvalidOid, FIN_COUNT},
	{F_COUNT_ANY, XPU_AGG_COUNT, InvalidOid, FIN_COUNT},
	{F_SUM_INT2, XPU_AGG_SUM_INT, INT2OID, FIN_SUM_INT8},
	{F_SUM_INT4, XPU_AGG_SUM_INT, INT4OID, FIN_SUM_INT8},
	{F_SUM_INT8, XPU_AGG_SUM_INT, INT8OID, FIN_SUM_NUMERIC},
	{F_SUM_NUMERIC, XPU_AGG_SUM_NUMERIC, NUMERICOID, FIN_SUM_NUMERIC},
	{F_SUM_FLOAT8, XPU_AGG_SUM_FLOAT, FLOAT8OID, FIN_SUM_FLOAT8},
	{F_AVG_INT2, XPU_AGG_SUM_INT, INT2OID, FIN_AVG_NUMERIC},
	{F_AVG_INT4, XPU_AGG_SUM_INT, INT4OID, FIN_AVG_NUMERIC},
	{F_AVG_INT8, XPU_AGG_SUM_INT, INT8OID, FIN_AVG_NUMERIC},
	{F_AVG_NUMERIC, XPU_AGG_SUM_NUMERIC, NUMERICOID, FIN_AVG_NUMERIC},
	/* PostgreSQL's avg(float) keeps a sum of squares too, which can overflow */
	{F_AVG_FLOAT4, XPU_AGG_MOMENTS, FLOAT4OID, FIN_AVG_FLOAT8},
	{F_AVG_FLOAT8, XPU_AGG_MOMENTS, FLOAT8OID, FIN_AVG_FLOAT8},
	{F_MIN_INT2, XPU_AGG_MIN, INT2OID, FIN_MINMAX},
	{F_MIN_INT4, XPU_AGG_MIN, INT4OID, FIN_MINMAX},
	{F_MIN_INT8, XPU_AGG_MIN, INT8OID, FIN_MINMAX},
	{F_MIN_FLOAT4, XPU_AGG_MIN, FLOAT4OID, FIN_MINMAX},
	{F_MIN_FLOAT8, XPU_AGG_MIN, FLOAT8OID, FIN_MINMAX},
	{F_MIN_NUMERIC, XPU_AGG_MIN, NUMERICOID, FIN_MINMAX},
	{F_MIN_DATE, XPU_AGG_MIN, DATEOID, FIN_MINMAX},
	{F_MIN_TIMESTAMP, XPU_AGG_MIN, TIMESTAMPOID, FIN_MINMAX},
	{F_MIN_TIMESTAMPTZ, XPU_AGG_MIN, TIMESTAMPTZOID, FIN_MINMAX},
	{F_MAX_INT2, XPU_AGG_MAX, INT2OID, FIN_MINMAX},
	{F_MAX_INT4, XPU_AGG_MAX, INT4OID, FIN_MINMAX},
	{F_MAX_INT8, XPU_AGG_MAX, INT8OID, FIN_MINMAX},
	{F_MAX_FLOAT4, XPU_AGG_MAX, FLOAT4OID, FIN_MINMAX},
	{F_MAX_FLOAT8, XPU_AGG_MAX, FLOAT8OID, FIN_MINMAX},
	{F_MAX_NUMERIC, XPU_AGG_MAX, NUMERICOID, FIN_MINMAX},
	{F_MAX_DATE, XPU_AGG_MAX, DATEOID, FIN_MINMAX},
	{F_MAX_TIMESTAMP, XPU_AGG_MAX, TIMESTAMPOID, FIN_MINMAX},
	{F_MAX_TIMESTAMPTZ, XPU_AGG_MAX, TIMESTAMPTZOID, FIN_MINMAX},
	{F_SUM_FLOAT4, XPU_AGG_SUM_FLOAT4, FLOAT4OID, FIN_SUM_FLOAT4},
	/* in the C collation only (gpa_compiles) */
	{F_MIN_TEXT, XPU_AGG_MIN_TEXT, TEXTOID, FIN_TEXT},
	{F_MAX_TEXT, XPU_AGG_MAX_TEXT, TEXTOID, FIN_TEXT},
	GPA_VAR_AGGS(INT2, INT2OID, XPU_AGG_SUM_INT, XPU_AGG_SUMSQ_INT, FIN_VAR_EXACT),
	GPA_VAR_AGGS(INT4, INT4OID, XPU_AGG_SUM_INT, XPU_AGG_SUMSQ_INT, FIN_VAR_EXACT),
	GPA_VAR_AGGS(INT8, INT8OID, XPU_AGG_SUM_INT, XPU_AGG_SUMSQ_INT, FIN_VAR_EXACT),
	GPA_VAR_AGGS(NUMERIC, NUMERICOID, XPU_AGG_SUM_NUMERIC, XPU_AGG_SUMSQ_NUMERIC,
				 FIN_VAR_EXACT),
	GPA_VAR_AGGS(FLOAT4, FLOAT4OID, XPU_AGG_VAR_FLOAT, 0, FIN_VAR_FLOAT),
	GPA_VAR_AGGS(FLOAT8, FLOAT8OID, XPU_AGG_VAR_FLOAT, 0, FIN_VAR_FLOAT),
};

/* how many engine states (XpuAggDesc) an aggregate takes */
int
gpa_n_states(const GpaAggInfo *info)
{
	return info->kind2 != 0 ? 2 : 1;
}

/* pg_warp's hll_count and hll_sketch (any OID: the extension's) */
static const GpaAggInfo gpa_hll_agg = {InvalidOid, XPU_AGG_HLL, InvalidOid, FIN_HLL, 0};

/*
 * The aggregates of pg_warp's float2 (sql/pg_warp.sql; any OID: the
 * extension's), whose argument the program hands over as its exact float4
 * (codegen_proj_program): sum is float2_sum_accum, float4_pl over the
 * widened values, so float4's sum; min and max keep float4's order (NaN
 * above all) and their result goes back to float2 exactly; avg, stddev and
 * variance are float2_accum, float8_accum over the widened values, so
 * float4's.
 */
static const GpaAggInfo gpa_f2_sum = {InvalidOid, XPU_AGG_SUM_FLOAT4, InvalidOid, FIN_SUM_FLOAT4, 0};
static const GpaAggInfo gpa_f2_min = {InvalidOid, XPU_AGG_MIN, InvalidOid, FIN_MINMAX, 0};
static const GpaAggInfo gpa_f2_max = {InvalidOid, XPU_AGG_MAX, InvalidOid, FIN_MINMAX, 0};
static const GpaAggInfo gpa_f2_avg = {InvalidOid, XPU_AGG_MOMENTS, InvalidOid, FIN_AVG_FLOAT8, 0};
static const GpaAggInfo gpa_f2_var = {InvalidOid, XPU_AGG_VAR_FLOAT, InvalidOid, FIN_VAR_FLOAT, 0};

/* the C function name (prosrc) of function fn */
static char *
gpa_prosrc(Oid fn)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	Datum		src;
	bool		isnull;
	char	   *r = NULL;

	if (!HeapTupleIsValid(tup))
		return NULL;
	src = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
	if (!isnull)
		r = TextDatumGetCString(src);
	ReleaseSysCache(tup);
	return r;
}

/*
 * gpa_agg_prosrcs: the C function names (prosrc) of the transition function
 * (*trans) and the final function (*final, NULL if none) of aggregate fn,
 * one that is not built in (an extension's OIDs vary, its C names do not);
 * false for a built-in aggregate or one whose transition function has none
 */
static bool
gpa_agg_prosrcs(Oid fn, char **trans, char **final)
{
	HeapTuple	tup;
	Oid			transfn,
				finalfn;

	if (fn < FirstNormalObjectId)
		return false;
	tup = SearchSysCache1(AGGFNOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		return false;
	transfn = ((Form_pg_aggregate) GETSTRUCT(tup))->aggtransfn;
	finalfn = ((Form_pg_aggregate) GETSTRUCT(tup))->aggfinalfn;
	ReleaseSysCache(tup);
	*trans = gpa_prosrc(transfn);
	*final = OidIsValid(finalfn) ? gpa_prosrc(finalfn) : NULL;
	return *trans != NULL;
}

/*
 * gpa_is_hll_agg: is fn pg_warp's hll_count or hll_sketch (an aggregate of
 * the C function pg_warp_hll_trans with one of their final functions)
 */
static bool
gpa_is_hll_agg(Oid fn)
{
	char	   *t,
			   *f;

	return gpa_agg_prosrcs(fn, &t, &f) && f != NULL && strcmp(t, "pg_warp_hll_trans") == 0 &&
		(strcmp(f, "pg_warp_hll_final_count") == 0 || strcmp(f, "pg_warp_hll_final_sketch") == 0);
}

/*
 * gpa_float2_agg: the engine's form of fn if it is one of pg_warp's float2
 * aggregates (by the C functions of its transition and final functions),
 * else NULL
 */
static const GpaAggInfo *
gpa_float2_agg(Oid fn)
{
	static const char *const var_finals[] = {
		"float8_stddev_samp", "float8_stddev_pop", "float8_var_samp", "float8_var_pop"
	};
	char	   *t,
			   *f;

	if (!gpa_agg_prosrcs(fn, &t, &f))
		return NULL;
	if (f == NULL)
		return strcmp(t, "float2_sum_accum") == 0 ? &gpa_f2_sum :
			strcmp(t, "float2smaller") == 0 ? &gpa_f2_min :
			strcmp(t, "float2larger") == 0 ? &gpa_f2_max : NULL;
	if (strcmp(t, "float2_accum") != 0)
		return NULL;
	if (strcmp(f, "float8_avg") == 0)
		return &gpa_f2_avg;
	for (int i = 0; i < lengthof(var_finals); i++)
		if (strcmp(f, var_finals[i]) == 0)
			return &gpa_f2_var;
	return NULL;
}

/* gpa_agg_info: the engine's form of aggregate fn, or NULL */
const GpaAggInfo *
gpa_agg_info(Oid fn)
{
	const GpaAggInfo *f2;

	for (int i = 0; i < lengthof(gpa_aggs); i++)
		if (gpa_aggs[i].fn == fn)
			return &gpa_aggs[i];
	if ((f2 = gpa_float2_agg(fn)) != NULL)
		return f2;
	return gpa_is_hll_agg(fn) ? &gpa_hll_agg : NULL;
}

