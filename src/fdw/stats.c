/*-------------------------------------------------------------------------
 *
 * stats.c
 *		Skipping record batches by their min/max statistics.
 *
 * pg2arrow -S writes the smallest and largest value of each column of each
 * record batch into the batch's custom metadata (doc/arrow-metadata.md).  A
 * scan can then leave out a batch in which no row can satisfy the WHERE
 * clause.  Usable conditions compare a column with a constant through a
 * btree operator of the column type's default operator family:
 *
 *		col = c, col < c, col <= c, col > c, col >= c (either side),
 *		BETWEEN (two of those), col = ANY('{...}') / col IN (...),
 *		and AND of these.
 *
 * Anything else is simply not used for skipping (PostgreSQL still checks
 * every qual on every returned row, so skipping only ever saves work).
 *
 * Floating point: statistics leave NaN out, and PostgreSQL sorts NaN above
 * every number, so for float columns a batch is never skipped because of its
 * maximum (a NaN in it may satisfy col > c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amproc.h"
#include "nodes/nodeFuncs.h"
#include "nodes/pathnodes.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"

#include "fdw/arrow_fdw.h"

/* pg_warp.arrow_stats_skip */
bool		pg_warp_arrow_stats_skip = true;

/* strips binary-compatible relabelling */
static Node *
strip(Node *n)
{
	while (n && IsA(n, RelabelType))
		n = (Node *) ((RelabelType *) n)->arg;
	return n;
}

static bool
is_our_var(Node *n, Index relid)
{
	Var		   *v = (Var *) n;

	return n && IsA(n, Var) && v->varno == relid && v->varattno > 0 &&
		v->varlevelsup == 0;
}

/*
 * Looks up the btree strategy of opno for a column of type coltype compared
 * with a value of type valtype (column on the left).  Fills opfamily/proc.
 * Domains compare as their base types (the statistics are base values).
 */
static int
btree_strategy(Oid opno, Oid coltype, Oid valtype, bool var_on_left,
			   Oid *cmpproc)
{
	Oid			opfamily;
	int			strategy;

	coltype = getBaseType(coltype);
	valtype = getBaseType(valtype);
	/* the default btree opclass's family, from the type cache (no catalog scan) */
	opfamily = lookup_type_cache(coltype, TYPECACHE_BTREE_OPFAMILY)->btree_opf;
	if (!OidIsValid(opfamily))
		return 0;
	strategy = get_op_opfamily_strategy(opno, opfamily);
	if (strategy == 0)
		return 0;
	*cmpproc = get_opfamily_proc(opfamily, coltype, valtype, BTORDER_PROC);
	if (!OidIsValid(*cmpproc))
		return 0;
	if (!var_on_left)
	{
		switch (strategy)
		{
			case BTLessStrategyNumber:
				strategy = BTGreaterStrategyNumber;
				break;
			case BTLessEqualStrategyNumber:
				strategy = BTGreaterEqualStrategyNumber;
				break;
			case BTGreaterStrategyNumber:
				strategy = BTLessStrategyNumber;
				break;
			case BTGreaterEqualStrategyNumber:
				strategy = BTLessEqualStrategyNumber;
				break;
		}
	}
	return strategy;
}

/* Parses one usable clause; returns false when it is not one. */
static bool
parse_clause(Expr *clause, Index relid, ArrowStatCond *cond)
{
	Oid			cmpproc;

	if (IsA(clause, OpExpr))
	{
		OpExpr	   *op = (OpExpr *) clause;
		Node	   *l,
				   *r;
		Var		   *var;
		Const	   *cst;
		bool		left;

		if (list_length(op->args) != 2)
			return false;
		l = strip(linitial(op->args));
		r = strip(lsecond(op->args));
		if (is_our_var(l, relid) && r && IsA(r, Const))
		{
			var = (Var *) l;
			cst = (Const *) r;
			left = true;
		}
		else if (is_our_var(r, relid) && l && IsA(l, Const))
		{
			var = (Var *) r;
			cst = (Const *) l;
			left = false;
		}
		else
			return false;
		if (cst->constisnull)
			return false;
		cond->strategy = btree_strategy(op->opno, var->vartype, cst->consttype,
										left, &cmpproc);
		if (cond->strategy == 0)
			return false;
		cond->attno = var->varattno;
		cond->n_values = 1;
		cond->values = palloc(sizeof(Datum));
		cond->values[0] = cst->constvalue;
		fmgr_info(cmpproc, &cond->cmp);
		cond->collation = op->inputcollid;
		return true;
	}
	if (IsA(clause, ScalarArrayOpExpr))
	{
		ScalarArrayOpExpr *sa = (ScalarArrayOpExpr *) clause;
		Node	   *l,
				   *r;
		Var		   *var;
		Const	   *cst;
		ArrayType  *arr;
		Datum	   *elems;
		bool	   *nulls;
		int			n,
					k = 0;
		int16		elmlen;
		bool		elmbyval;
		char		elmalign;
		Oid			elemtype;

		if (!sa->useOr || list_length(sa->args) != 2)
			return false;
		l = strip(linitial(sa->args));
		r = strip(lsecond(sa->args));
		if (!is_our_var(l, relid) || !r || !IsA(r, Const) ||
			((Const *) r)->constisnull)
			return false;
		var = (Var *) l;
		cst = (Const *) r;
		elemtype = get_element_type(cst->consttype);
		if (!OidIsValid(elemtype))
			return false;
		if (btree_strategy(sa->opno, var->vartype, elemtype, true, &cmpproc) !=
			BTEqualStrategyNumber)
			return false;
		arr = DatumGetArrayTypeP(cst->constvalue);
		get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
		deconstruct_array(arr, elemtype, elmlen, elmbyval, elmalign,
						  &elems, &nulls, &n);
		cond->attno = var->varattno;
		cond->strategy = BTEqualStrategyNumber;
		cond->values = palloc(sizeof(Datum) * Max(n, 1));
		for (int i = 0; i < n; i++)
			if (!nulls[i])
				cond->values[k++] = elems[i];
		cond->n_values = k;
		fmgr_info(cmpproc, &cond->cmp);
		cond->collation = sa->inputcollid;
		return true;
	}
	return false;
}

static void
usable_walk(Expr *e, Index relid, List **out)
{
	ArrowStatCond dummy;

	if (IsA(e, RestrictInfo))
		e = ((RestrictInfo *) e)->clause;
	if (is_andclause(e))
	{
		ListCell   *lc;

		foreach(lc, ((BoolExpr *) e)->args)
			usable_walk(lfirst(lc), relid, out);
		return;
	}
	memset(&dummy, 0, sizeof(dummy));
	if (parse_clause(e, relid, &dummy))
		*out = lappend(*out, e);
}

/*
 * Parses one clause (a plain expression, not a RestrictInfo) into *cond when
 * statistics can decide it: a comparison of a column of relation 'relid'
 * with a constant, or an IN list.  Returns false, leaving *cond undefined,
 * for anything else.  (The row estimates of estimate.c use it.)
 */
bool
arrow_stats_parse_clause(Expr *clause, Index relid, ArrowStatCond *cond)
{
	memset(cond, 0, sizeof(*cond));
	return parse_clause(clause, relid, cond);
}

/*
 * The clauses of 'exprs' (RestrictInfos or plain expressions, implicitly
 * ANDed) that statistics can decide, as a list of plain expressions.
 */
List *
arrow_stats_usable_clauses(List *exprs, Index relid)
{
	List	   *out = NIL;
	ListCell   *lc;

	foreach(lc, exprs)
		usable_walk(lfirst(lc), relid, &out);
	return out;
}

/*
 * Prepares the clauses returned by arrow_stats_usable_clauses (with Vars of
 * any varno: only the attribute numbers matter) for evaluation.
 */
ArrowStatCond *
arrow_stats_prepare(List *clauses, int *n_conds)
{
	ArrowStatCond *conds = palloc0(sizeof(ArrowStatCond) * Max(list_length(clauses), 1));
	ListCell   *lc;
	int			n = 0;

	foreach(lc, clauses)
	{
		Expr	   *e = lfirst(lc);
		Var		   *v = NULL;
		List	   *vars = pull_var_clause((Node *) e, 0);

		if (list_length(vars) != 1)
			continue;
		v = linitial(vars);
		if (parse_clause(e, v->varno, &conds[n]))
			n++;
	}
	*n_conds = n;
	return conds;
}

/* cmp(stat, value) */
static inline int
cmp_stat(const ArrowStatCond *c, Datum stat, Datum value)
{
	return DatumGetInt32(FunctionCall2Coll((FmgrInfo *) &c->cmp, c->collation,
										   stat, value));
}

/*
 * where a field's min and max statistics were found in the last batch's
 * metadata: pg2arrow writes every batch's keys in one order, so the next
 * batch has them there too (arrow_metadata_get_hinted checks it)
 */
#define STAT_HINTS	256
static int32 stat_hints[2][STAT_HINTS];

/* the min and max statistics of top-level field in batch as written (NULL: none) */
void
arrow_batch_stat_strings(const ArrowBatchInfo *batch, int field, const char **smin,
						 const char **smax)
{
	char		key[64];

	snprintf(key, sizeof(key), "pg_warp.min.%d", field);
	*smin = arrow_metadata_get_hinted(&batch->metadata, key,
									  &stat_hints[0][field % STAT_HINTS]);
	snprintf(key, sizeof(key), "pg_warp.max.%d", field);
	*smax = arrow_metadata_get_hinted(&batch->metadata, key,
									  &stat_hints[1][field % STAT_HINTS]);
}

/*
 * the field that the rest of a statistics key names ("pg_warp.min." or
 * "pg_warp.max." and then the field as "%d" writes it: "0", or digits that do
 * not start with 0), if below n_fields; else -1
 */
static int
stat_key_field(const char *digits, int n_fields)
{
	int64		f = 0;
	const char *d = digits;

	if (*d == '0')
		return d[1] == '\0' ? 0 : -1;
	for (; *d >= '0' && *d <= '9'; d++)
	{
		f = f * 10 + (*d - '0');
		if (f >= n_fields)
			return -1;
	}
	return (d == digits || *d != '\0') ? -1 : (int) f;
}

/*
 * arrow_batch_stats_all
 *		The min and max statistics of each of the first n_fields top-level
 *		fields of batch as written into smin[field] and smax[field] (NULL:
 *		none), what arrow_batch_stat_strings finds field by field, from one
 *		pass over the batch's metadata: of a key written twice, the first (as
 *		arrow_metadata_get finds it)
 */
void
arrow_batch_stats_all(const ArrowBatchInfo *batch, int n_fields, const char **smin,
					  const char **smax)
{
	static const char prefix[] = "pg_warp.m";
	const ArrowMetadata *md = &batch->metadata;

	for (int f = 0; f < n_fields; f++)
		smin[f] = smax[f] = NULL;
	for (int32 i = 0; i < md->count; i++)
	{
		const char *k = md->items[i].key;
		const char **to;
		int			f;

		if (strncmp(k, prefix, sizeof(prefix) - 1) != 0)
			continue;
		k += sizeof(prefix) - 1;
		if (strncmp(k, "in.", 3) == 0)
			to = smin;
		else if (strncmp(k, "ax.", 3) == 0)
			to = smax;
		else
			continue;
		f = stat_key_field(k + 3, n_fields);
		if (f >= 0 && to[f] == NULL)
			to[f] = md->items[i].value;
	}
}

/*
 * arrow_stats_values
 *		The min and max statistics of top-level field in batch b of file as
 *		Datums of conv's column (has_*: false where the batch has none or it is
 *		not exactly representable); from what the metadata cache keeps per
 *		field where file is a copy of a cached file's (file.c), else looked up
 *		and parsed here
 */
void
arrow_stats_values(const ArrowFile *file, int32 b, int field, const ArrowConv *conv,
				   bool *has_min, Datum *dmin, bool *has_max, Datum *dmax)
{
	const ArrowStatColumn *c = arrow_pg_stat_datums(file, field, conv);
	const char *smin,
			   *smax;

	if (c != NULL)
	{
		*has_min = (c->dflags[b] & ARROW_STAT_MIN) != 0;
		*dmin = c->dmin[b];
		*has_max = (c->dflags[b] & ARROW_STAT_MAX) != 0;
		*dmax = c->dmax[b];
		return;
	}
	c = arrow_pg_stat_column(file, field);
	if (c != NULL && c->as_bits)
	{
		*has_min = (c->parsed[b] & ARROW_STAT_MIN) != 0 &&
			arrow_conv_stat_bits(conv, c->min[b], dmin);
		*has_max = (c->parsed[b] & ARROW_STAT_MAX) != 0 &&
			arrow_conv_stat_bits(conv, c->max[b], dmax);
		return;
	}
	if (c != NULL)
	{
		smin = c->min_s[b];
		smax = c->max_s[b];
	}
	else
		arrow_batch_stat_strings(&file->batches[b], field, &smin, &smax);
	*has_min = smin != NULL && arrow_conv_stat(conv, smin, dmin);
	*has_max = smax != NULL && arrow_conv_stat(conv, smax, dmax);
}

/*
 * The widths in bytes of the two sides of a btree comparison function that
 * compares signed integers (the integer types, date, timestamp and
 * timestamptz: their Datums hold the value), else false
 */
static bool
int_cmp_sides(Oid fn, int *left, int *right)
{
	switch (fn)
	{
		case F_BTINT2CMP:
			*left = 2, *right = 2;
			return true;
		case F_BTINT24CMP:
			*left = 2, *right = 4;
			return true;
		case F_BTINT28CMP:
			*left = 2, *right = 8;
			return true;
		case F_BTINT42CMP:
			*left = 4, *right = 2;
			return true;
		case F_BTINT4CMP:
		case F_DATE_CMP:
			*left = 4, *right = 4;
			return true;
		case F_BTINT48CMP:
			*left = 4, *right = 8;
			return true;
		case F_BTINT82CMP:
			*left = 8, *right = 2;
			return true;
		case F_BTINT84CMP:
			*left = 8, *right = 4;
			return true;
		case F_BTINT8CMP:
		case F_TIMESTAMP_CMP:
		case F_TIMESTAMPTZ_CMP:
			*left = 8, *right = 8;
			return true;
	}
	return false;
}

/* a Datum holding a signed integer of width bytes, as an int64 */
static inline int64
int_of(Datum d, int width)
{
	return width == 2 ? (int64) DatumGetInt16(d) :
		width == 4 ? (int64) DatumGetInt32(d) : DatumGetInt64(d);
}

/*
 * A batch's minimum (side 0) or maximum (side 1) compared with value k of a
 * condition: < 0, 0 or > 0, as the condition's btree comparison says
 */
typedef int (*StatCompare) (const void *arg, int side, int k);

/*
 * stat_rules_out: does a batch whose statistics compare with condition c's
 * values as cmp says (has_min, has_max: whether it has each) hold no row
 * that can satisfy c.  One decision for both ways of comparing (stat_fmgr_cmp,
 * stat_int_cmp); inlined, so that cmp is a direct call.
 */
static inline __attribute__((always_inline)) bool
stat_rules_out(const ArrowStatCond *c, bool has_min, bool has_max, StatCompare cmp,
			   const void *arg)
{
	switch (c->strategy)
	{
		case BTLessStrategyNumber:
			return has_min && cmp(arg, 0, 0) >= 0;
		case BTLessEqualStrategyNumber:
			return has_min && cmp(arg, 0, 0) > 0;
		case BTGreaterStrategyNumber:
			return has_max && cmp(arg, 1, 0) <= 0;
		case BTGreaterEqualStrategyNumber:
			return has_max && cmp(arg, 1, 0) < 0;
		case BTEqualStrategyNumber:

			/*
			 * Every value of the list is below the minimum or above the
			 * maximum.  (For floats only the minimum is used: a NaN constant
			 * sorts above every maximum but equals the NaN rows that
			 * statistics leave out.)
			 */
			if (!has_min && !has_max)
				return false;
			for (int k = 0; k < c->n_values; k++)
				if (!(has_min && cmp(arg, 0, k) > 0) && !(has_max && cmp(arg, 1, k) < 0))
					return false;
			return true;
	}
	return false;
}

/* a batch's statistics as Datums, compared by the condition's function */
typedef struct StatFmgr
{
	const ArrowStatCond *c;
	Datum		stat[2];		/* min, max */
} StatFmgr;

static int
stat_fmgr_cmp(const void *arg, int side, int k)
{
	const StatFmgr *f = arg;

	return cmp_stat(f->c, f->stat[side], f->c->values[k]);
}

/* a batch's statistics and a condition's values as signed integers (int_cmp_sides) */
typedef struct StatInt
{
	const int64 *vals;
	int64		stat[2];		/* min, max */
} StatInt;

static inline int
stat_int_cmp(const void *arg, int side, int k)
{
	const StatInt *i = arg;

	return (i->stat[side] > i->vals[k]) - (i->stat[side] < i->vals[k]);
}

/*
 * arrow_stats_skip_batches
 *		arrow_stats_skip_batch for every batch of file: skip[b] set where it
 *		is true.  A condition on a column whose statistics the metadata cache
 *		keeps as Datums (arrow_pg_stat_datums) and whose comparison is one of
 *		signed integers is decided in one loop over the batches, without a
 *		function call per batch; the others as arrow_stats_skip_batch does.
 *		The planner and each executor start decide this for every batch of
 *		the table: a short query over a file of a thousand batches spent most
 *		of its planning here.
 */
void
arrow_stats_skip_batches(const ArrowStatCond *conds, int n_conds, const ArrowConv *convs,
						 const int *fields, const ArrowFile *file, bool *skip)
{
	int32		n = file->n_batches;
	int			slow = 0;

	memset(skip, 0, sizeof(bool) * Max(n, 1));
	if (!pg_warp_arrow_stats_skip || n_conds == 0)
		return;
	for (int i = 0; i < n_conds; i++)
	{
		const ArrowStatCond *c = &conds[i];
		const ArrowConv *conv = &convs[c->attno - 1];
		int			field = fields[c->attno - 1];
		const ArrowStatColumn *col;
		int			lw,
					rw;
		int64		vals[8];

		if (field < 0)
			continue;
		if (c->n_values > lengthof(vals) || !int_cmp_sides(c->cmp.fn_oid, &lw, &rw) ||
			(col = arrow_pg_stat_datums(file, field, conv)) == NULL)
		{
			slow++;
			continue;
		}
		for (int k = 0; k < c->n_values; k++)
			vals[k] = int_of(c->values[k], rw);
		for (int32 b = 0; b < n; b++)
		{
			uint8		fl = col->dflags[b];
			StatInt		si = {vals, {int_of(col->dmin[b], lw), int_of(col->dmax[b], lw)}};

			if (file->batches[b].metadata.count == 0)
				continue;
			if (stat_rules_out(c, (fl & ARROW_STAT_MIN) != 0, (fl & ARROW_STAT_MAX) != 0,
							   stat_int_cmp, &si))
				skip[b] = true;
		}
	}
	if (slow == 0)
		return;
	for (int32 b = 0; b < n; b++)
		if (!skip[b])
			skip[b] = arrow_stats_skip_batch(conds, n_conds, convs, fields, file, b);
}

/*
 * True when no row of batch b of file can satisfy every condition according
 * to its statistics.  convs and fields are indexed by attno - 1 (fields: the
 * top-level field of the column, -1 when none).
 */
bool
arrow_stats_skip_batch(const ArrowStatCond *conds, int n_conds,
					   const ArrowConv *convs, const int *fields,
					   const ArrowFile *file, int32 b)
{
	if (!pg_warp_arrow_stats_skip || file->batches[b].metadata.count == 0)
		return false;
	for (int i = 0; i < n_conds; i++)
	{
		const ArrowStatCond *c = &conds[i];
		const ArrowConv *conv = &convs[c->attno - 1];
		int			field = fields[c->attno - 1];
		Datum		dmin,
					dmax;
		bool		has_min,
					has_max;
		StatFmgr	f;

		if (field < 0)
			continue;
		arrow_stats_values(file, b, field, conv, &has_min, &dmin, &has_max, &dmax);
		if (arrow_conv_is_float(conv))
			has_max = false;
		f = (StatFmgr) {c, {dmin, dmax}};
		if (stat_rules_out(c, has_min, has_max, stat_fmgr_cmp, &f))
			return true;
	}
	return false;
}
