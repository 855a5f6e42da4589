/*-------------------------------------------------------------------------
 *
 * estimate.c
 *		Row estimates of arrow_fdw scans from what the files know, and the
 *		record batches that ANALYZE samples.
 *
 * Without ANALYZE PostgreSQL has no statistics for a foreign table and
 * falls back to fixed selectivities (0.5 % for a range such as BETWEEN),
 * which on a large table gives absurd estimates and absurd plans.  The
 * files know more: the exact row count of every record batch, its null
 * count per column, and (pg2arrow -S, doc/arrow-metadata.md) the smallest
 * and largest value of each column of each batch.
 *
 * The estimate groups the restriction clauses that stats.c can parse
 * (a column compared with constants, BETWEEN, IN) by column.  For each
 * column and each batch it computes three fractions of the batch's rows:
 *
 *		lower	rows that certainly pass (the batch's [min, max] lies inside
 *				the allowed range: every non-null row passes);
 *		upper	rows that may pass (0 where statistics rule the batch out,
 *				else the non-null rows);
 *		guess	values taken as uniform over [min, max] (integers and dates
 *				as discrete values), times the non-null fraction.
 *
 * A column with statistics of its own in pg_statistic (after ANALYZE), or of
 * a type that has no numeric scale (text, ...), takes PostgreSQL's
 * selectivity for its clauses, clamped into [sum of lower, sum of upper]:
 * PostgreSQL's histograms and most common values know the distribution
 * inside a batch, the batch statistics only bound it, so PostgreSQL wins
 * unless the files prove it wrong.  Other columns take the guess; a batch
 * without statistics for the column takes a default (1/3 per bound, 0.5 %
 * per IN value) times its non-null fraction.  Columns are independent
 * within a batch (the per-batch product of their fractions, summed over
 * batches weighted by rows, so that columns correlated through the batches,
 * e.g. sorted data, are estimated well).  IS [NOT] NULL takes the exact null
 * counts of the batches.  The clauses it cannot parse go to
 * clauselist_selectivity.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/stratnum.h"
#include "catalog/pg_type.h"
#include "common/pg_prng.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "fdw/arrow_fdw.h"

/* the scales on which values can be placed (comparable within one only) */
typedef enum ArrowScale
{
	SCALE_NONE,
	SCALE_NUMBER,
	SCALE_DATE,
	SCALE_TIMESTAMP,
	SCALE_TIMESTAMPTZ,
	SCALE_TIME
} ArrowScale;

/* the clauses on one column and what the estimate made of them */
typedef struct ArrowColEstimate
{
	AttrNumber	attno;
	int			field;			/* its top-level field */
	const ArrowConv *conv;
	List	   *rinfos;			/* its RestrictInfos */
	List	   *conds;			/* ArrowStatCond *, one per RestrictInfo */
	List	   *const_types;	/* Oid of each condition's constant(s) */
	bool		positioned;		/* values placed on a scale (else PostgreSQL's) */
	bool		discrete;		/* integers and dates */
	double		lo,
				hi;				/* the values the conditions allow */
	bool		lo_incl,
				hi_incl;
	int			n_eq;			/* -1: no equality; else the allowed values */
	double	   *eq;
	double		def_sel;		/* batches without statistics */
	int			null_tests;		/* NULL_TEST_IS | NULL_TEST_NOT of its clauses */
	double	   *frac;			/* per global batch: the fraction kept */
} ArrowColEstimate;

#define NULL_TEST_IS	1		/* col IS NULL */
#define NULL_TEST_NOT	2		/* col IS NOT NULL */

static ArrowScale
scale_of(Oid type, bool *discrete)
{
	*discrete = false;
	switch (type)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
			*discrete = true;
			return SCALE_NUMBER;
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
			return SCALE_NUMBER;
		case DATEOID:
			*discrete = true;
			return SCALE_DATE;
		case TIMESTAMPOID:
			return SCALE_TIMESTAMP;
		case TIMESTAMPTZOID:
			return SCALE_TIMESTAMPTZ;
		case TIMEOID:
			return SCALE_TIME;
		default:
			return SCALE_NONE;
	}
}

/*
 * Value d of a type that scale_of places, as a double.  False for NaN and
 * for the infinite dates and timestamps (infinite floats stay infinite).
 */
static bool
scalar_of(Datum d, Oid type, double *out)
{
	switch (type)
	{
		case INT2OID:
			*out = DatumGetInt16(d);
			break;
		case INT4OID:
			*out = DatumGetInt32(d);
			break;
		case INT8OID:
			*out = (double) DatumGetInt64(d);
			break;
		case FLOAT4OID:
			*out = DatumGetFloat4(d);
			break;
		case FLOAT8OID:
			*out = DatumGetFloat8(d);
			break;
		case NUMERICOID:
			*out = DatumGetFloat8(DirectFunctionCall1(numeric_float8_no_overflow, d));
			break;
		case DATEOID:
			if (DATE_NOT_FINITE(DatumGetDateADT(d)))
				return false;
			*out = DatumGetDateADT(d);
			break;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			if (TIMESTAMP_NOT_FINITE(DatumGetTimestamp(d)))
				return false;
			*out = (double) DatumGetTimestamp(d);
			break;
		case TIMEOID:
			*out = (double) DatumGetTimeADT(d);
			break;
		default:
			return false;
	}
	return !isnan(*out);
}

/* the type of the constant (the array's element type for IN) of a clause */
static Oid
const_type_of(Expr *clause)
{
	List	   *args;
	ListCell   *lc;

	args = IsA(clause, OpExpr) ? ((OpExpr *) clause)->args :
		((ScalarArrayOpExpr *) clause)->args;
	foreach(lc, args)
	{
		Node	   *n = lfirst(lc);

		while (n && IsA(n, RelabelType))
			n = (Node *) ((RelabelType *) n)->arg;
		if (n && IsA(n, Const))
		{
			Oid			type = ((Const *) n)->consttype;

			return IsA(clause, ScalarArrayOpExpr) ? get_element_type(type) : type;
		}
	}
	return InvalidOid;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

static int
cmp_int32(const void *a, const void *b)
{
	int32		x = *(const int32 *) a,
				y = *(const int32 *) b;

	return x < y ? -1 : x > y;
}

/* narrows g's range by one condition; false when its constant is not placed */
static bool
add_bound(ArrowColEstimate *g, const ArrowStatCond *c, Oid ctype)
{
	bool		discrete;
	double		v;

	if (scale_of(ctype, &discrete) != scale_of(g->conv->typid, &discrete))
		return false;
	if (c->strategy == BTEqualStrategyNumber)
	{
		if (g->n_eq >= 0)
			return false;		/* two equality lists: leave it to PostgreSQL */
		g->eq = palloc(sizeof(double) * Max(c->n_values, 1));
		g->n_eq = 0;
		for (int k = 0; k < c->n_values; k++)
		{
			if (!scalar_of(c->values[k], ctype, &v))
				return false;
			g->eq[g->n_eq++] = v;
		}
		return true;
	}
	if (!scalar_of(c->values[0], ctype, &v))
		return false;
	if (c->strategy == BTLessStrategyNumber || c->strategy == BTLessEqualStrategyNumber)
	{
		if (v < g->hi || (v == g->hi && c->strategy == BTLessStrategyNumber))
		{
			g->hi = v;
			g->hi_incl = c->strategy == BTLessEqualStrategyNumber;
		}
	}
	else if (v > g->lo || (v == g->lo && c->strategy == BTGreaterStrategyNumber))
	{
		g->lo = v;
		g->lo_incl = c->strategy == BTGreaterEqualStrategyNumber;
	}
	return true;
}

/*
 * Turns g's conditions into a range (and a list of allowed values); false
 * when the values cannot be placed, e.g. text, or equality on a continuous
 * type (no distinct count to divide by).
 */
static bool
prepare_range(ArrowColEstimate *g)
{
	ListCell   *lc,
			   *lt;
	int			bounds = 0;

	g->lo = -INFINITY;
	g->hi = INFINITY;
	g->lo_incl = g->hi_incl = true;
	g->n_eq = -1;
	if (scale_of(g->conv->typid, &g->discrete) == SCALE_NONE)
		return false;
	forboth(lc, g->conds, lt, g->const_types)
		if (!add_bound(g, lfirst(lc), lfirst_oid(lt)))
			return false;
	if (g->n_eq >= 0 && !g->discrete)
		return false;
	if (g->discrete)
	{
		/* integer bounds, inclusive; only the integral allowed values in them */
		g->lo = g->lo_incl ? ceil(g->lo) : floor(g->lo) + 1;
		g->hi = g->hi_incl ? floor(g->hi) : ceil(g->hi) - 1;
		g->lo_incl = g->hi_incl = true;
		if (g->n_eq > 0)
		{
			int			k = 0;

			qsort(g->eq, g->n_eq, sizeof(double), cmp_double);
			for (int i = 0; i < g->n_eq; i++)
				if (g->eq[i] == floor(g->eq[i]) && g->eq[i] >= g->lo &&
					g->eq[i] <= g->hi && (k == 0 || g->eq[k - 1] != g->eq[i]))
					g->eq[k++] = g->eq[i];
			g->n_eq = k;
		}
	}
	bounds = (g->lo > -INFINITY) + (g->hi < INFINITY);
	if (g->n_eq >= 0)
		g->def_sel = Min(1.0, g->n_eq * DEFAULT_EQ_SEL);
	else
		g->def_sel = pow(DEFAULT_INEQ_SEL, bounds);
	if (g->lo > g->hi)
		g->def_sel = 0;
	return true;
}

/* true when v satisfies g's range (not its equality list) */
static bool
in_range(const ArrowColEstimate *g, double v)
{
	return (v > g->lo || (v == g->lo && g->lo_incl)) &&
		(v < g->hi || (v == g->hi && g->hi_incl));
}

/* the batch's [min, max] of g's column on g's scale; false when unknown */
static bool
batch_min_max(const ArrowColEstimate *g, const ArrowFile *file, int32 b,
			  double *min, double *max)
{
	Datum		dmin,
				dmax;
	bool		has_min,
				has_max;

	arrow_stats_values(file, b, g->field, g->conv, &has_min, &dmin, &has_max, &dmax);
	if (!has_min || !scalar_of(dmin, g->conv->typid, min))
		return false;
	if (!has_max || !scalar_of(dmax, g->conv->typid, max))
		return false;
	return isfinite(*min) && isfinite(*max) && *min <= *max;
}

/*
 * The guess for one batch whose values of g's column lie in [m, M]: the
 * fraction of its non-null values that pass, as if uniform over [m, M].
 * Sets *all when every value in [m, M] passes.
 */
static double
guess_in(const ArrowColEstimate *g, double m, double M, double nonnull_rows,
		 bool *all)
{
	double		a = Max(g->lo, m),
				z = Min(g->hi, M);

	*all = false;
	if (g->discrete && g->n_eq >= 0)
	{
		int			in = 0;

		for (int i = 0; i < g->n_eq; i++)
			in += g->eq[i] >= m && g->eq[i] <= M;
		*all = m == M && in > 0;
		return Min(1.0, in / (M - m + 1));
	}
	*all = in_range(g, m) && in_range(g, M);
	if (*all)
		return 1.0;
	if (z < a || (z == a && !in_range(g, a)))
		return 0.0;
	if (g->discrete)
		return (z - a + 1) / (M - m + 1);
	if (z == a)
		return 1.0 / Max(nonnull_rows, 1.0);	/* only the value at the edge */
	return (z - a) / (M - m);
}

/*
 * Fills lower/upper/guess (fractions of all the batch's rows) for g in one
 * batch; see the file header.  'skipped': statistics rule the batch out.
 */
static void
batch_eval(const ArrowColEstimate *g, const ArrowFile *file, int32 b, const int64 *nulls,
		   bool skipped, double *lower, double *upper, double *guess)
{
	const ArrowBatchInfo *batch = &file->batches[b];
	int32		node = file->columns[g->field].first_node;
	double		nonnull = 1.0,
				m,
				M;
	bool		all;

	*lower = *upper = *guess = 0;
	if (batch->n_rows <= 0 || skipped)
		return;
	if (nulls != NULL)
	{
		if (nulls[b] >= 0)
			nonnull = 1.0 - (double) nulls[b] / batch->n_rows;
	}
	else if (node >= 0 && node < batch->n_nodes)
		nonnull = 1.0 - (double) batch->nodes[node].null_count / batch->n_rows;
	if (nonnull <= 0)
		return;
	*upper = nonnull;
	if (!g->positioned)
		return;
	if (!batch_min_max(g, file, b, &m, &M))
	{
		*guess = nonnull * g->def_sel;
		return;
	}
	*guess = nonnull * guess_in(g, m, M, nonnull * batch->n_rows, &all);
	if (all)
		*lower = nonnull;
	else if (*guess == 0)
		*upper = 0;
}

/*
 * Computes g->frac for every batch: the guess, or PostgreSQL's selectivity
 * clamped into the bounds and spread over the batches between them.
 */
static void
eval_column(PlannerInfo *root, const ArrowEstimateTable *t, ArrowColEstimate *g,
			bool has_pg_stats, int32 total_batches)
{
	int			n_conds = list_length(g->conds);
	ArrowStatCond *conds = palloc(sizeof(ArrowStatCond) * Max(n_conds, 1));
	double	   *lower = palloc(sizeof(double) * Max(total_batches, 1));
	double	   *upper = palloc(sizeof(double) * Max(total_batches, 1));
	double		sum_lower = 0,
				sum_upper = 0,
				sel;
	int32		gb = 0;
	int			k = 0;
	ListCell   *lc;

	foreach(lc, g->conds)
		conds[k++] = *(ArrowStatCond *) lfirst(lc);
	g->frac = palloc(sizeof(double) * Max(total_batches, 1));
	for (int f = 0; f < t->n_files; f++)
	{
		bool	   *skip = palloc(sizeof(bool) * Max(t->files[f]->n_batches, 1));
		const ArrowFieldSizes *sizes = arrow_pg_field_sizes(t->files[f], g->field);
		const int64 *nulls = sizes != NULL ? sizes->nulls : NULL;

		arrow_stats_skip_batches(conds, n_conds, t->convs, t->fields, t->files[f], skip);
		for (int32 b = 0; b < t->files[f]->n_batches; b++, gb++)
		{
			const ArrowBatchInfo *batch = &t->files[f]->batches[b];

			batch_eval(g, t->files[f], b, nulls, skip[b], &lower[gb], &upper[gb],
					   &g->frac[gb]);
			sum_lower += lower[gb] * batch->n_rows;
			sum_upper += upper[gb] * batch->n_rows;
		}
		pfree(skip);
	}
	if (g->positioned && !has_pg_stats)
		return;
	if (t->total_rows <= 0)
		return;
	sum_lower /= t->total_rows;
	sum_upper /= t->total_rows;
	sel = clauselist_selectivity(root, g->rinfos, 0, JOIN_INNER, NULL);
	sel = Max(Min(sel, sum_upper), sum_lower);
	for (int32 i = 0; i < total_batches; i++)
		g->frac[i] = sum_upper > sum_lower ?
			lower[i] + (upper[i] - lower[i]) * (sel - sum_lower) / (sum_upper - sum_lower) :
			lower[i];
}

/*
 * The column of a NullTest clause on a column of the table (with its kind in
 * *kind), or 0 when the clause is something else.
 */
static AttrNumber
null_test_column(Expr *clause, Index relid, const ArrowEstimateTable *t, int *kind)
{
	NullTest   *nt = (NullTest *) clause;
	Node	   *arg;
	Var		   *v;

	if (!IsA(clause, NullTest) || nt->argisrow)
		return 0;
	arg = (Node *) nt->arg;
	while (arg && IsA(arg, RelabelType))
		arg = (Node *) ((RelabelType *) arg)->arg;
	if (!arg || !IsA(arg, Var))
		return 0;
	v = (Var *) arg;
	if (v->varno != relid || v->varlevelsup != 0 || v->varattno <= 0 ||
		v->varattno > t->natts || t->fields[v->varattno - 1] < 0)
		return 0;
	*kind = nt->nulltesttype == IS_NULL ? NULL_TEST_IS : NULL_TEST_NOT;
	return v->varattno;
}

/*
 * Applies g's IS [NOT] NULL clauses to g->frac, from the exact null counts of
 * the batches: alone, the fraction of NULLs (or not); beside comparisons,
 * which NULL never passes, IS NOT NULL changes nothing and IS NULL leaves no
 * row.
 */
static void
apply_null_tests(const ArrowEstimateTable *t, ArrowColEstimate *g,
				 int32 total_batches)
{
	int32		gb = 0;

	if (g->null_tests == 0)
		return;
	if (g->frac == NULL)
		g->frac = palloc(sizeof(double) * Max(total_batches, 1));
	for (int f = 0; f < t->n_files; f++)
		for (int32 b = 0; b < t->files[f]->n_batches; b++, gb++)
		{
			const ArrowBatchInfo *batch = &t->files[f]->batches[b];
			int32		node = t->files[f]->columns[g->field].first_node;
			double		nulls = 0;

			if (batch->n_rows > 0 && node >= 0 && node < batch->n_nodes)
				nulls = (double) batch->nodes[node].null_count / batch->n_rows;
			if (g->null_tests == (NULL_TEST_IS | NULL_TEST_NOT))
				g->frac[gb] = 0;
			else if (g->conds != NIL)
				g->frac[gb] = g->null_tests == NULL_TEST_IS ? 0 : g->frac[gb];
			else
				g->frac[gb] = g->null_tests == NULL_TEST_IS ? nulls : 1.0 - nulls;
		}
}

/* the group of column attno in *groups, created when new */
static ArrowColEstimate *
group_of(List **groups, const ArrowEstimateTable *t, AttrNumber attno)
{
	ListCell   *lc;
	ArrowColEstimate *g;

	foreach(lc, *groups)
	{
		g = lfirst(lc);
		if (g->attno == attno)
			return g;
	}
	g = palloc0(sizeof(ArrowColEstimate));
	g->attno = attno;
	g->field = t->fields[attno - 1];
	g->conv = &t->convs[attno - 1];
	*groups = lappend(*groups, g);
	return g;
}

/*
 * The estimated number of rows of 'baserel' (an arrow_fdw scan of table t)
 * that pass its restriction clauses; see the file header.
 */
double
arrow_estimate_rows(PlannerInfo *root, RelOptInfo *baserel,
					const ArrowEstimateTable *t)
{
	List	   *groups = NIL,
			   *rest = NIL;
	ListCell   *lc;
	int32		total_batches = 0;
	double		kept = 0;
	int32		gb = 0;

	foreach(lc, baserel->baserestrictinfo)
	{
		RestrictInfo *ri = lfirst(lc);
		ArrowStatCond *c = palloc(sizeof(ArrowStatCond));
		ArrowColEstimate *g;
		int			kind;
		AttrNumber	attno = null_test_column(ri->clause, baserel->relid, t, &kind);

		if (attno > 0)
		{
			group_of(&groups, t, attno)->null_tests |= kind;
			continue;
		}
		if (!arrow_stats_parse_clause((Expr *) ri->clause, baserel->relid, c) ||
			c->attno > t->natts || t->fields[c->attno - 1] < 0)
		{
			rest = lappend(rest, ri);
			continue;
		}
		g = group_of(&groups, t, c->attno);
		g->rinfos = lappend(g->rinfos, ri);
		g->conds = lappend(g->conds, c);
		g->const_types = lappend_oid(g->const_types, const_type_of(ri->clause));
	}
	for (int f = 0; f < t->n_files; f++)
		total_batches += t->files[f]->n_batches;
	foreach(lc, groups)
	{
		ArrowColEstimate *g = lfirst(lc);
		bool		has_pg_stats = SearchSysCacheExists3(STATRELATTINH,
														 ObjectIdGetDatum(t->relid),
														 Int16GetDatum(g->attno),
														 BoolGetDatum(false));

		if (g->conds != NIL)
		{
			g->positioned = prepare_range(g);
			eval_column(root, t, g, has_pg_stats, total_batches);
		}
		apply_null_tests(t, g, total_batches);
	}
	for (int f = 0; f < t->n_files; f++)
		for (int32 b = 0; b < t->files[f]->n_batches; b++, gb++)
		{
			double		p = (double) t->files[f]->batches[b].n_rows;

			foreach(lc, groups)
				p *= ((ArrowColEstimate *) lfirst(lc))->frac[gb];
			kept += p;
		}
	if (groups == NIL)
		kept = (double) t->total_rows;
	return kept * clauselist_selectivity(root, rest, 0, JOIN_INNER, NULL);
}

/*
 * The record batches (global numbers, ascending) that ANALYZE reads: a
 * random subset, taken in random order until it holds at least targrows
 * rows and at least targrows * BLCKSZ bytes (what ANALYZE of a heap table
 * reads at most: targrows blocks), or every batch.  Decided from the
 * footers alone (row counts, body lengths), before anything is read.
 */
int32 *
arrow_sample_batches(const ArrowFile *const *files, int n_files,
					 int32 total_batches, int targrows, int32 *n_chosen)
{
	int32	   *order = palloc(sizeof(int32) * Max(total_batches, 1));
	const ArrowBatchInfo **info = palloc(sizeof(ArrowBatchInfo *) * Max(total_batches, 1));
	double		budget = (double) targrows * BLCKSZ;
	double		rows = 0,
				bytes = 0;
	int32		n = 0,
				gb = 0;

	for (int f = 0; f < n_files; f++)
		for (int32 b = 0; b < files[f]->n_batches; b++, gb++)
		{
			order[gb] = gb;
			info[gb] = &files[f]->batches[b];
		}
	Assert(gb == total_batches);
	/* a partial Fisher-Yates shuffle: order[0 .. n-1] is the sample */
	while (n < total_batches && (rows < targrows || bytes < budget))
	{
		int32		j = n + (int32) pg_prng_uint64_range(&pg_global_prng_state, 0,
														 total_batches - n - 1);
		int32		tmp = order[j];

		order[j] = order[n];
		order[n] = tmp;
		rows += info[tmp]->n_rows;
		bytes += info[tmp]->body_length;
		n++;
	}
	qsort(order, n, sizeof(int32), cmp_int32);
	*n_chosen = n;
	return order;
}
