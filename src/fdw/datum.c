/*-------------------------------------------------------------------------
 *
 * datum.c
 *		Arrow values as PostgreSQL Datums: which PostgreSQL types can hold an
 *		Arrow field exactly, the default type of each Arrow type, and the
 *		conversion of one value (also of record-batch statistics).
 *
 * The rule is exactness: a value is never silently changed.  A type that
 * cannot hold every value of a field is refused when the table is defined
 * (arrow_conv_init returns false with the reason); a value that the chosen
 * type cannot hold (a timestamp with nanoseconds, a date beyond PostgreSQL's
 * range, text that is not valid UTF-8) raises an error when it is read.
 * doc/arrow_fdw.md lists the rules.
 *
 * An ArrowConv is prepared once per column (arrow_conv_init) and then
 * converts values with arrow_conv_value.  It does not point into the Arrow
 * schema, so it can outlive the file that it was prepared from.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "mb/pg_wchar.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "utils/uuid.h"

#include "fdw/arrow_fdw.h"
#include "arrow/arrow_types.h"

/* microseconds between 1970-01-01 and 2000-01-01 */
#define EPOCH_DIFF_USECS \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)
#define EPOCH_DIFF_DAYS	(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE)

/* what a column converts to */
typedef enum
{
	TK_BOOL,
	TK_INT2,
	TK_INT4,
	TK_INT8,
	TK_NUMERIC,
	TK_FLOAT4,
	TK_FLOAT8,
	TK_DATE,
	TK_TIME,
	TK_TIMESTAMP,				/* also timestamptz: both are UTC instants */
	TK_INTERVAL,
	TK_TEXT,					/* text: verified UTF-8 converted to the server encoding */
	TK_INPUT,					/* any other type from text, by its input function */
	TK_FLOAT2,					/* float16 into pg_warp's float2: the bits as they are */
	TK_FLOAT_INPUT,				/* float16 into another type named float2, via text */
	TK_BYTEA,
	TK_UUID,
	TK_ARRAY,
	TK_COMPOSITE,
	TK_DECIMAL256,				/* Decimal256 into numeric, through its text */
	TK_MAP,						/* a map into json/jsonb (map_datum) */
	TK_NULL						/* an Arrow NULL field: always NULL */
} TargetKind;

/* one Arrow value before it becomes a Datum */
typedef struct RawValue
{
	int64		i;				/* integers, temporal types as stored */
	uint64		u;				/* UINT64 */
	bool		is_u64;
	double		d;				/* floats */
	ArrowDecimal128 dec;
	int32		months;
	int32		days;
	int64		sub;			/* INTERVAL_DT ms, INTERVAL_MDN ns */
	const char *ptr;			/* strings, binaries */
	int64		len;
} RawValue;

static bool arrow_conv_init_internal(ArrowConv *c, const ArrowField *f,
									 Oid typid, int32 typmod, char **why,
									 int depth);
static bool conv_init_newer(ArrowConv *c, const ArrowField *f, Oid typid,
							int32 typmod, char **why, int depth);
static bool conv_init_map(ArrowConv *c, const ArrowField *f, Oid base,
						  char **why, int depth);
static Datum map_datum(const ArrowConv *c, const ArrowArray *a, int64 row);
static Datum decimal256_datum(const ArrowConv *c, const ArrowArray *a,
							  int64 row);

/* whether the type's own name (any schema) is 'name' */
static bool
type_is_named(Oid typid, const char *name)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(typid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = strcmp(NameStr(((Form_pg_type) GETSTRUCT(tup))->typname), name) == 0;
	ReleaseSysCache(tup);
	return result;
}

static char *
type_name(Oid typid, int32 typmod)
{
	return format_type_with_typemod(typid, typmod);
}

static char *
arrow_type_name(const ArrowType *t)
{
	char		buf[128];

	arrow_type_format(t, buf, sizeof(buf));
	return pstrdup(buf);
}

/*
 * Integer-backed Arrow types whose stored integer a column of type int8 (or
 * int4 for the 32-bit ones, or numeric) can hold as is: the types stored as
 * signed integers that are not integer types (dates, times, timestamps,
 * durations, INTERVAL_YM); 0 for the others.
 */
static int
stored_int_bits(ArrowTypeId id)
{
	const ArrowTypeInfo *info = arrow_type_info(id);

	if (info == NULL || info->value != ARROW_VALUE_INT || arrow_type_is_int(id))
		return 0;
	return info->bit_width;
}

/*
 * smallest signed width (bits, at least 16) that holds every value of
 * integer type id: an unsigned one needs twice its width (UINT64: 128,
 * numeric only)
 */
static int
int_bits_needed(ArrowTypeId id)
{
	const ArrowTypeInfo *info = arrow_type_info(id);
	int			bits = info->bit_width * (info->value == ARROW_VALUE_UINT ? 2 : 1);

	return Max(bits, 16);
}

/* fractional-second digits the unit needs (timestamp(p), time(p)) */
static int
unit_digits(ArrowTimeUnit unit)
{
	switch (unit)
	{
		case ARROW_UNIT_SECOND:
			return 0;
		case ARROW_UNIT_MILLI:
			return 3;
		default:
			return 6;			/* ns values must be whole microseconds */
	}
}

/*
 * numeric(p,s) typmods, encoded as PostgreSQL 15 does: the precision in the
 * high 16 bits, the scale (-1000 .. 1000) as an 11-bit two's complement
 * number in the low bits, plus VARHDRSZ.  PostgreSQL 15 accepts every
 * combination of precision 1 .. 1000 and scale -1000 .. 1000, so every
 * Decimal128(p, s) that the reader accepts (p 1 .. 38, s -38 .. 38) has one.
 */
static int32
numeric_typmod(int precision, int scale)
{
	return ((precision << 16) | (scale & 0x7ff)) + VARHDRSZ;
}

/* precision and scale of a numeric typmod; false for plain numeric */
static bool
numeric_typmod_decode(int32 typmod, int *precision, int *scale)
{
	if (typmod < (int32) VARHDRSZ)
		return false;
	*precision = ((typmod - VARHDRSZ) >> 16) & 0xffff;
	*scale = (((typmod - VARHDRSZ) & 0x7ff) ^ 1024) - 1024;
	return true;
}

/* The type named 'name' in pg_catalog (the type table's default types) */
static Oid
catalog_type(const char *name)
{
	Oid			typid = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
										CStringGetDatum(name),
										ObjectIdGetDatum(PG_CATALOG_NAMESPACE));

	if (!OidIsValid(typid))
		elog(ERROR, "type %s is missing from pg_catalog", name);
	return typid;
}

/* float2 when such a type exists (a later pg_warp adds it), else float4 */
static Oid
float16_type(void)
{
	Oid			f2 = TypenameGetTypid("float2");

	if (!OidIsValid(f2) && OidIsValid(get_namespace_oid("pgwarp", true)))
		f2 = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
							 CStringGetDatum("float2"),
							 ObjectIdGetDatum(get_namespace_oid("pgwarp", true)));
	return OidIsValid(f2) ? f2 : catalog_type("float4");
}

/* The array type of the default type of a list field's child */
static bool
list_default_type(const ArrowField *f, Oid *typid, int32 *typmod, char **why)
{
	Oid			elem;
	int32		elemmod;
	Oid			arr;

	if (f->n_children != 1)
	{
		*why = psprintf("list field \"%s\" has %d children", f->name, f->n_children);
		return false;
	}
	if (f->children[0].type.id == ARROW_TYPE_LIST ||
		f->children[0].type.id == ARROW_TYPE_LARGE_LIST ||
		f->children[0].type.id == ARROW_TYPE_FIXED_SIZE_LIST)
	{
		*why = psprintf("field \"%s\" is a list of lists, which has no PostgreSQL type", f->name);
		return false;
	}
	if (!arrow_default_type(&f->children[0], &elem, &elemmod, why))
		return false;
	arr = get_array_type(elem);
	if (!OidIsValid(arr))
	{
		*why = psprintf("type %s has no array type", type_name(elem, -1));
		return false;
	}
	*typid = arr;
	*typmod = elemmod;
	return true;
}

/*
 * The type a column gets by default for field f (IMPORT FOREIGN SCHEMA):
 * the one the type table names (arrow_type_pg_name), with a numeric typmod
 * for decimals, float2 for float16 where it exists, arrays for lists (of
 * their child's type), the values' type for run-end encoded fields.
 * Returns false with *why set when there is none (a struct needs an
 * existing composite type; nested lists have no PostgreSQL equivalent).
 */
bool
arrow_default_type(const ArrowField *f, Oid *typid, int32 *typmod, char **why)
{
	const ArrowType *t = &f->type;
	const ArrowTypeInfo *info = arrow_type_info(t->id);
	const char *name = arrow_type_pg_name(t);

	*typmod = -1;
	if (info == NULL)
	{
		*why = psprintf("field \"%s\" has an unknown Arrow type", f->name);
		return false;
	}
	if (t->id == ARROW_TYPE_FLOAT16)
	{
		*typid = float16_type();
		return true;
	}
	if (t->id == ARROW_TYPE_RUN_END_ENCODED)
		return arrow_default_type(&f->children[1], typid, typmod, why);
	if (t->id == ARROW_TYPE_MAP)
	{
		/* keys and values convert through their own default types */
		const ArrowField *entries = &f->children[0];
		Oid			t2;
		int32		m2;

		if (!arrow_default_type(&entries->children[0], &t2, &m2, why) ||
			!arrow_default_type(&entries->children[1], &t2, &m2, why))
			return false;
	}
	if (info->layout == ARROW_LAYOUT_LIST || info->layout == ARROW_LAYOUT_LIST_VIEW ||
		info->layout == ARROW_LAYOUT_FIXED_LIST)
	{
		if (t->id != ARROW_TYPE_MAP)
			return list_default_type(f, typid, typmod, why);
	}
	if (name == NULL)
	{
		/* a struct */
		*why = psprintf("field \"%s\" is a struct: it needs a composite type", f->name);
		return false;
	}
	*typid = catalog_type(name);
	/* decimals: also a negative scale, or one above the precision */
	if (info->value == ARROW_VALUE_DECIMAL &&
		t->precision >= 1 && t->precision <= NUMERIC_MAX_PRECISION &&
		t->scale >= -1000 && t->scale <= 1000)
		*typmod = numeric_typmod(t->precision, t->scale);
	return true;
}

/*
 * Prepares c to convert values of field f into typid/typmod.  Returns false
 * with *why set (palloc'd) when the type cannot hold every value of the
 * field exactly.  Memory: the current context, which must outlive c.
 */
bool
arrow_conv_init(ArrowConv *c, const ArrowField *f, Oid typid, int32 typmod,
				char **why)
{
	if (!arrow_conv_init_internal(c, f, typid, typmod, why, 0))
		return false;

	/* the common fixed-width cases take a shortcut in arrow_conv_value */
	c->fast = ARROW_FAST_NONE;
	if (!c->has_dictionary && !OidIsValid(c->domain_type))
	{
		if (c->kind == TK_INT2 && c->arrow_id == ARROW_TYPE_INT16)
			c->fast = ARROW_FAST_I16;
		else if (c->kind == TK_INT4 && c->arrow_id == ARROW_TYPE_INT32)
			c->fast = ARROW_FAST_I32;
		else if (c->kind == TK_INT8 && c->arrow_id == ARROW_TYPE_INT64)
			c->fast = ARROW_FAST_I64;
		else if (c->kind == TK_FLOAT4 && c->arrow_id == ARROW_TYPE_FLOAT32)
			c->fast = ARROW_FAST_F32;
		else if (c->kind == TK_FLOAT8 && c->arrow_id == ARROW_TYPE_FLOAT64)
			c->fast = ARROW_FAST_F64;
		else if (c->kind == TK_FLOAT2)
			c->fast = ARROW_FAST_F16;
	}
	if (c->run_end_encoded)
		c->fast = ARROW_FAST_NONE;	/* the values sit behind the run ends */
	return true;
}

/*
 * Sets *why to say that 'typid' cannot hold field f ('detail' says why, or
 * is NULL) and returns false.
 */
static bool
refuse(char **why, const ArrowField *f, Oid typid, int32 typmod,
	   const char *detail)
{
	*why = psprintf("type %s cannot hold Arrow field \"%s\" of type %s%s%s",
					type_name(typid, typmod), f->name, arrow_type_name(&f->type),
					detail ? ": " : "", detail ? detail : "");
	return false;
}

/* how one step of arrow_conv_init_internal decides */
typedef enum ConvMatch
{
	CONV_NO_MATCH,				/* not this step's case: the next step decides */
	CONV_OK,					/* the converter is ready */
	CONV_REFUSED				/* the type cannot hold the field; *why is set */
} ConvMatch;

/* refuse() for a step that returns a ConvMatch */
static ConvMatch
refuse_match(char **why, const ArrowField *f, Oid typid, int32 typmod,
			 const char *detail)
{
	(void) refuse(why, f, typid, typmod, detail);
	return CONV_REFUSED;
}

/*
 * The first step of arrow_conv_init_internal: copies what c needs of the
 * field's type and of the column's type into c.  For a domain, c checks its
 * base type and remembers the domain; *typid and *typmod become the base
 * type's.
 */
static void
conv_init_types(ArrowConv *c, const ArrowField *f, Oid *typid, int32 *typmod)
{
	const ArrowType *t = &f->type;
	Oid			base;
	int32		basemod = *typmod;

	c->typid = *typid;
	c->typmod = *typmod;
	c->arrow_id = t->id;
	c->unit = t->unit;
	c->scale = t->scale;
	c->byte_width = t->byte_width;
	c->list_size = t->list_size;
	c->has_dictionary = f->has_dictionary;
	c->index_type = f->dictionary.index_type;

	/* a domain: check against its base type, then apply its constraints */
	base = getBaseTypeAndTypmod(*typid, &basemod);
	if (base != *typid)
	{
		/* domain_check caches its state here: not in a per-row context */
		c->domain_cxt = CurrentMemoryContext;
		c->domain_type = *typid;
		*typid = base;
		*typmod = basemod;
		c->typid = base;
		c->typmod = basemod;
	}
	get_typlenbyvalalign(*typid, &c->typlen, &c->typbyval, &c->typalign);
}

/* the layout that a view or list view converts as: the type it stands for */
static ArrowTypeId
conv_layout_id(ArrowTypeId id)
{
	if (id == ARROW_TYPE_UTF8_VIEW)
		return ARROW_TYPE_UTF8;
	if (id == ARROW_TYPE_BINARY_VIEW)
		return ARROW_TYPE_BINARY;
	if (id == ARROW_TYPE_LIST_VIEW || id == ARROW_TYPE_LARGE_LIST_VIEW)
		return ARROW_TYPE_LARGE_LIST;
	return id;
}

/*
 * boolean, the integers, numeric and the floats: whether the field (of
 * layout 'id') converts exactly into base type 'typid'.
 */
static ConvMatch
conv_init_number(ArrowConv *c, const ArrowField *f, ArrowTypeId id,
				 Oid typid, int32 typmod, char **why)
{
	const ArrowType *t = &f->type;
	int			p,
				s;

	switch (typid)
	{
		case BOOLOID:
			c->kind = TK_BOOL;
			return id == ARROW_TYPE_BOOL ? CONV_OK : CONV_NO_MATCH;
		case INT2OID:
		case INT4OID:
		case INT8OID:
			{
				int			bits = typid == INT2OID ? 16 : typid == INT4OID ? 32 : 64;

				c->kind = typid == INT2OID ? TK_INT2 : typid == INT4OID ? TK_INT4 : TK_INT8;
				if (arrow_type_is_int(id))
				{
					if (int_bits_needed(id) <= bits)
						return CONV_OK;
					return refuse_match(why, f, typid, typmod, "values may not fit");
				}
				if (stored_int_bits(id) != 0 && stored_int_bits(id) <= bits)
					return CONV_OK; /* the stored integer, in the field's unit */
				return CONV_NO_MATCH;
			}
		case NUMERICOID:
			c->kind = TK_NUMERIC;
			if (arrow_type_is_int(id) || stored_int_bits(id) != 0)
			{
				/* digits of the largest value: 64 bits -> 20 */
				if (numeric_typmod_decode(typmod, &p, &s) && (s != 0 || p < 20))
					return refuse_match(why, f, typid, typmod, "the precision is too small for the integer type");
				return CONV_OK;
			}
			if (id == ARROW_TYPE_DECIMAL128)
			{
				/*
				 * Any scale, also a negative one or one above the precision:
				 * the value is unscaled * 10^-scale.  numeric(P,S) holds every
				 * value when S is the field's scale and P - S >= p - s (the
				 * digits left of the point).
				 */
				if (numeric_typmod_decode(typmod, &p, &s))
				{
					if (s != t->scale)
						return refuse_match(why, f, typid, typmod, "the scale differs");
					if (p - s < t->precision - t->scale)
						return refuse_match(why, f, typid, typmod, "the precision is too small");
				}
				return CONV_OK;
			}
			return CONV_NO_MATCH;
		case FLOAT4OID:
			c->kind = TK_FLOAT4;
			return id == ARROW_TYPE_FLOAT16 || id == ARROW_TYPE_FLOAT32
				? CONV_OK : CONV_NO_MATCH;
		case FLOAT8OID:
			c->kind = TK_FLOAT8;
			return id == ARROW_TYPE_FLOAT16 || id == ARROW_TYPE_FLOAT32 ||
				id == ARROW_TYPE_FLOAT64 ? CONV_OK : CONV_NO_MATCH;
		default:
			return CONV_NO_MATCH;
	}
}

/*
 * date, time, timestamp, timestamptz and interval: whether the field (of
 * layout 'id') converts exactly into base type 'typid'.
 */
static ConvMatch
conv_init_temporal(ArrowConv *c, const ArrowField *f, ArrowTypeId id,
				   Oid typid, int32 typmod, char **why)
{
	const ArrowType *t = &f->type;

	switch (typid)
	{
		case DATEOID:
			c->kind = TK_DATE;
			return id == ARROW_TYPE_DATE32 || id == ARROW_TYPE_DATE64
				? CONV_OK : CONV_NO_MATCH;
		case TIMEOID:
			c->kind = TK_TIME;
			if (id != ARROW_TYPE_TIME32 && id != ARROW_TYPE_TIME64)
				return CONV_NO_MATCH;
			if (typmod >= 0 && typmod < unit_digits(t->unit))
				return refuse_match(why, f, typid, typmod, "the precision is too small");
			return CONV_OK;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
			c->kind = TK_TIMESTAMP;
			if (id != ARROW_TYPE_TIMESTAMP)
				return CONV_NO_MATCH;
			if ((typid == TIMESTAMPTZOID) != (t->timezone != NULL))
				return refuse_match(why, f, typid, typmod,
									t->timezone ? "the field has a time zone; use timestamp with time zone"
									: "the field has no time zone; use timestamp without time zone");
			if (typmod >= 0 && typmod < unit_digits(t->unit))
				return refuse_match(why, f, typid, typmod, "the precision is too small");
			return CONV_OK;
		case INTERVALOID:
			c->kind = TK_INTERVAL;
			if (id != ARROW_TYPE_INTERVAL_YM && id != ARROW_TYPE_INTERVAL_DT &&
				id != ARROW_TYPE_INTERVAL_MDN && id != ARROW_TYPE_DURATION)
				return CONV_NO_MATCH;
			if (typmod >= 0)
				return refuse_match(why, f, typid, typmod, "interval fields or precision would round values");
			return CONV_OK;
		default:
			return CONV_NO_MATCH;
	}
}

/*
 * bytea, uuid and text: whether the field (of layout 'id') converts exactly
 * into base type 'typid'.
 */
static ConvMatch
conv_init_bytes(ArrowConv *c, const ArrowField *f, ArrowTypeId id,
				Oid typid, int32 typmod, char **why)
{
	switch (typid)
	{
		case BYTEAOID:
			c->kind = TK_BYTEA;
			return id == ARROW_TYPE_BINARY || id == ARROW_TYPE_LARGE_BINARY ||
				id == ARROW_TYPE_FIXED_SIZE_BINARY ? CONV_OK : CONV_NO_MATCH;
		case UUIDOID:
			c->kind = TK_UUID;
			if (id == ARROW_TYPE_FIXED_SIZE_BINARY && f->type.byte_width == 16)
				return CONV_OK;
			if (id == ARROW_TYPE_UTF8 || id == ARROW_TYPE_LARGE_UTF8)
				return CONV_NO_MATCH;	/* by the input function */
			return refuse_match(why, f, typid, typmod, "uuid needs fixed_size_binary(16)");
		case TEXTOID:
			c->kind = TK_TEXT;
			return id == ARROW_TYPE_UTF8 || id == ARROW_TYPE_LARGE_UTF8
				? CONV_OK : CONV_NO_MATCH;
		default:
			return CONV_NO_MATCH;
	}
}

/*
 * Whether typid is pg_warp's float2 (the type named float2 in the schema
 * pgwarp, two bytes passed by value: IEEE 754 binary16 bits), which holds a
 * float16 value as its bits.
 */
static bool
is_pg_warp_float2(const ArrowConv *c, Oid typid)
{
	Oid			nsp = get_namespace_oid("pgwarp", true);

	return OidIsValid(nsp) && c->typlen == 2 && c->typbyval &&
		GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("float2"),
						ObjectIdGetDatum(nsp)) == typid;
}

/*
 * Conversions through the input function of 'typid': float16 into a type
 * named float2 other than pg_warp's (whose values are the bits themselves,
 * TK_FLOAT2), from the exact decimal form of the half value; strings into
 * string-like types (varchar(n), enums, json, ...).  Returns whether c
 * converts that way.
 */
static bool
conv_init_input(ArrowConv *c, ArrowTypeId id, Oid typid)
{
	Oid			infunc;
	char		cat;
	bool		pref;

	if (id == ARROW_TYPE_FLOAT16 && is_pg_warp_float2(c, typid))
	{
		c->kind = TK_FLOAT2;
		return true;
	}
	if (id == ARROW_TYPE_FLOAT16 && type_is_named(typid, "float2"))
		c->kind = TK_FLOAT_INPUT;
	else if ((id == ARROW_TYPE_UTF8 || id == ARROW_TYPE_LARGE_UTF8) &&
			 !type_is_array(typid) && !type_is_rowtype(typid))
	{
		get_type_category_preferred(typid, &cat, &pref);
		if (strchr("SUEIGV", cat) == NULL)
			return false;
		c->kind = TK_INPUT;
	}
	else
		return false;
	getTypeInputInfo(typid, &infunc, &c->ioparam);
	fmgr_info(infunc, &c->infunc);
	return true;
}

/* a list field into array type 'typid': the element converts as well */
static bool
conv_init_list(ArrowConv *c, const ArrowField *f, Oid typid, int32 typmod,
			   char **why, int depth)
{
	Oid			elemtype = get_element_type(typid);

	if (!OidIsValid(elemtype))
		return refuse(why, f, typid, typmod, "a list needs an array type");
	if (f->n_children != 1)
		return refuse(why, f, typid, typmod, "malformed list");
	if (f->children[0].type.id == ARROW_TYPE_LIST ||
		f->children[0].type.id == ARROW_TYPE_LARGE_LIST ||
		f->children[0].type.id == ARROW_TYPE_FIXED_SIZE_LIST)
		return refuse(why, f, typid, typmod, "lists of lists are not supported");
	c->kind = TK_ARRAY;
	c->elem = palloc(sizeof(ArrowConv));
	if (!arrow_conv_init_internal(c->elem, &f->children[0], elemtype,
								  typmod, why, depth + 1))
		return false;
	return true;
}

/*
 * A struct field into composite type 'typid': the type's attributes (not
 * dropped) are the struct's fields, in order and by name, and each converts.
 */
static bool
conv_init_struct(ArrowConv *c, const ArrowField *f, Oid typid, int32 typmod,
				 char **why, int depth)
{
	TupleDesc	tupdesc;
	int			n = 0;

	if (!type_is_rowtype(typid))
		return refuse(why, f, typid, typmod, "a struct needs a composite type");
	tupdesc = lookup_rowtype_tupdesc_copy(typid, -1);
	for (int i = 0; i < tupdesc->natts; i++)
		if (!TupleDescAttr(tupdesc, i)->attisdropped)
			n++;
	if (n != f->n_children)
		return refuse(why, f, typid, typmod,
					  psprintf("the struct has %d fields, the type %d attributes",
							   f->n_children, n));
	c->kind = TK_COMPOSITE;
	c->tupdesc = BlessTupleDesc(tupdesc);
	c->n_children = tupdesc->natts;
	c->children = palloc0(sizeof(ArrowConv) * tupdesc->natts);
	c->child_field = palloc(sizeof(int) * tupdesc->natts);
	n = 0;
	for (int i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		const ArrowField *cf;

		if (att->attisdropped)
		{
			c->child_field[i] = -1;
			continue;
		}
		cf = &f->children[n];
		if (strcmp(NameStr(att->attname), cf->name) != 0)
			return refuse(why, f, typid, typmod,
						  psprintf("attribute %d is \"%s\" but the struct's field is \"%s\"",
								   n + 1, NameStr(att->attname), cf->name));
		c->child_field[i] = n;
		if (!arrow_conv_init_internal(&c->children[i], cf, att->atttypid,
									  att->atttypmod, why, depth + 1))
			return false;
		n++;
	}
	return true;
}

/*
 * arrow_conv_init without the shortcut: prepares c to convert field f (at
 * nesting depth 'depth') into typid/typmod, or returns false with *why set.
 * The steps: the types; the Arrow NULL type; the newer layouts
 * (conv_init_newer); the built-in types, each of which accepts exactly the
 * Arrow types that it holds without loss; input functions; lists into
 * arrays; structs into composite types.
 */
static bool
arrow_conv_init_internal(ArrowConv *c, const ArrowField *f, Oid typid,
						 int32 typmod, char **why, int depth)
{
	ArrowTypeId id = f->type.id;
	ConvMatch	m;

	memset(c, 0, sizeof(ArrowConv));
	if (depth > ARROW_MAX_NESTING)
	{
		*why = pstrdup("nesting too deep");
		return false;
	}
	conv_init_types(c, f, &typid, &typmod);

	if (id == ARROW_TYPE_NULL)
	{
		c->kind = TK_NULL;
		return true;
	}
	if (id == ARROW_TYPE_RUN_END_ENCODED || id == ARROW_TYPE_DECIMAL256 ||
		id == ARROW_TYPE_MAP)
		return conv_init_newer(c, f, OidIsValid(c->domain_type) ? c->domain_type : typid,
							   typmod, why, depth);
	/* views and list views convert as the layouts they stand for */
	id = conv_layout_id(id);

	m = conv_init_number(c, f, id, typid, typmod, why);
	if (m == CONV_NO_MATCH)
		m = conv_init_temporal(c, f, id, typid, typmod, why);
	if (m == CONV_NO_MATCH)
		m = conv_init_bytes(c, f, id, typid, typmod, why);
	if (m != CONV_NO_MATCH)
		return m == CONV_OK;

	if (conv_init_input(c, id, typid))
		return true;
	if (id == ARROW_TYPE_LIST || id == ARROW_TYPE_LARGE_LIST ||
		id == ARROW_TYPE_FIXED_SIZE_LIST)
		return conv_init_list(c, f, typid, typmod, why, depth);
	if (id == ARROW_TYPE_STRUCT)
		return conv_init_struct(c, f, typid, typmod, why, depth);
	return refuse(why, f, typid, typmod, NULL);
}

/* ----------------------------------------------------------------
 * Reading raw values
 * ----------------------------------------------------------------
 */

/* integer of type id at index row of values */
static inline void
read_int(ArrowTypeId id, const uint8 *values, int64 row, RawValue *r)
{
	const ArrowTypeInfo *info = arrow_type_info(id);
	int			width = info->bit_width / 8;
	const uint8 *p = values + row * width;

	r->is_u64 = false;
	if (info->value != ARROW_VALUE_UINT)
		r->i = arrow_load_int(p, width);
	else if (width < 8)
		r->i = (int64) arrow_load_uint(p, width);
	else
	{
		r->u = arrow_load_uint(p, width);
		r->is_u64 = true;
		r->i = (int64) r->u;
	}
}

static void
read_raw(const ArrowConv *c, const ArrowArray *a, int64 row, RawValue *r)
{
	switch (c->arrow_id)
	{
		case ARROW_TYPE_BOOL:
			r->i = arrow_bit_get(a->values, row);
			break;
		case ARROW_TYPE_FLOAT16:
			r->i = ((const uint16 *) a->values)[row];
			r->d = arrow_half_to_float((uint16) r->i);
			break;
		case ARROW_TYPE_FLOAT32:
			r->d = ((const float *) a->values)[row];
			break;
		case ARROW_TYPE_FLOAT64:
			r->d = ((const double *) a->values)[row];
			break;
		case ARROW_TYPE_DECIMAL128:
			memcpy(&r->dec.lo, a->values + row * 16, 8);
			memcpy(&r->dec.hi, a->values + row * 16 + 8, 8);
			break;
		case ARROW_TYPE_INTERVAL_DT:
			{
				int32		v[2];

				memcpy(v, a->values + row * 8, 8);
				r->months = 0;
				r->days = v[0];
				r->sub = v[1];
				break;
			}
		case ARROW_TYPE_INTERVAL_MDN:
			memcpy(&r->months, a->values + row * 16, 4);
			memcpy(&r->days, a->values + row * 16 + 4, 4);
			memcpy(&r->sub, a->values + row * 16 + 8, 8);
			break;
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_BINARY:
			{
				const int32 *o = a->offsets;

				r->ptr = (const char *) a->data + o[row];
				r->len = o[row + 1] - o[row];
				break;
			}
		case ARROW_TYPE_LARGE_UTF8:
		case ARROW_TYPE_LARGE_BINARY:
			{
				const int64 *o = a->offsets;

				r->ptr = (const char *) a->data + o[row];
				r->len = o[row + 1] - o[row];
				break;
			}
		case ARROW_TYPE_UTF8_VIEW:
		case ARROW_TYPE_BINARY_VIEW:
			{
				int32		n;

				r->ptr = (const char *) arrow_view_value(a, row, &n);
				r->len = n;
				break;
			}
		case ARROW_TYPE_FIXED_SIZE_BINARY:
			r->ptr = (const char *) a->values + row * (int64) c->byte_width;
			r->len = c->byte_width;
			break;
		default:
			read_int(c->arrow_id, a->values, row, r);
			break;
	}
}

/* ----------------------------------------------------------------
 * Raw value -> Datum
 * ----------------------------------------------------------------
 */

/*
 * Reports (or with noerror, returns false for) a value that the column's
 * type cannot hold exactly.
 */
static bool
inexact(const ArrowConv *c, bool noerror, const char *value, const char *hint)
{
	ArrowType	t;

	if (noerror)
		return false;
	memset(&t, 0, sizeof(t));
	t.id = c->arrow_id;
	t.unit = c->unit;
	t.scale = c->scale;
	t.byte_width = c->byte_width;
	t.list_size = c->list_size;
	ereport(ERROR,
			(errcode(c->kind == TK_DATE || c->kind == TK_TIME ||
					 c->kind == TK_TIMESTAMP || c->kind == TK_INTERVAL
					 ? ERRCODE_DATETIME_VALUE_OUT_OF_RANGE
					 : ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE),
			 errmsg("Arrow value %s cannot be represented exactly as type %s",
					value, type_name(c->domain_type ? c->domain_type : c->typid,
									 c->typmod)),
			 errdetail("The field's Arrow type is %s.", arrow_type_name(&t)),
			 hint ? errhint("%s", hint) : 0));
	return false;
}

static inline int64
unit_per_sec(ArrowTimeUnit u)
{
	switch (u)
	{
		case ARROW_UNIT_SECOND:
			return 1;
		case ARROW_UNIT_MILLI:
			return 1000;
		case ARROW_UNIT_MICRO:
			return 1000000;
		default:
			return 1000000000;
	}
}

/* value in 'unit' -> microseconds; false when not exact or overflowing */
static bool
to_usecs(int64 v, ArrowTimeUnit unit, int64 *us)
{
	switch (unit)
	{
		case ARROW_UNIT_SECOND:
			return !pg_mul_s64_overflow(v, USECS_PER_SEC, us);
		case ARROW_UNIT_MILLI:
			return !pg_mul_s64_overflow(v, 1000, us);
		case ARROW_UNIT_MICRO:
			*us = v;
			return true;
		default:
			if (v % 1000 != 0)
				return false;
			*us = v / 1000;
			return true;
	}
}

#define TEMPORAL_HINT "Declare the column as bigint to read the value as stored."

/*
 * -1 or 1 when the stored integer v of a Date or Timestamp field is the
 * smallest or largest value of its storage type (int32 for Date32, int64
 * for Date64 and Timestamp of every unit): PostgreSQL's sentinels for
 * -infinity and infinity, which pg2arrow writes.  No finite value that
 * PostgreSQL can store maps to them (pg2arrow refuses the one timestamp
 * whose microseconds would), so the rule is the same in every unit.  0 for
 * any other value.
 */
static int
temporal_infinity(ArrowTypeId id, int64 v)
{
	int64		lo = id == ARROW_TYPE_DATE32 ? PG_INT32_MIN : PG_INT64_MIN;
	int64		hi = id == ARROW_TYPE_DATE32 ? PG_INT32_MAX : PG_INT64_MAX;

	return v == lo ? -1 : v == hi ? 1 : 0;
}

/* TK_INT2, TK_INT4, TK_INT8: the integer, when the column's type holds it */
static bool
int_datum(const ArrowConv *c, const RawValue *r, Datum *out, bool noerror)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];

	switch (c->kind)
	{
		case TK_INT2:
			if (r->i < PG_INT16_MIN || r->i > PG_INT16_MAX)
				break;
			*out = Int16GetDatum((int16) r->i);
			return true;
		case TK_INT4:
			if (r->i < PG_INT32_MIN || r->i > PG_INT32_MAX)
				break;
			*out = Int32GetDatum((int32) r->i);
			return true;
		default:
			if (r->is_u64 && r->u > (uint64) PG_INT64_MAX)
				break;
			*out = Int64GetDatum(r->i);
			return true;
	}
	if (r->is_u64)
		snprintf(buf, sizeof(buf), UINT64_FORMAT, r->u);
	else
		snprintf(buf, sizeof(buf), INT64_FORMAT, r->i);
	return inexact(c, noerror, buf, "Use a wider integer type or numeric.");
}

/* TK_NUMERIC: an integer or a Decimal128, with the column's typmod */
static bool
numeric_datum(const ArrowConv *c, const RawValue *r, Datum *out)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];

	if (c->arrow_id == ARROW_TYPE_DECIMAL128)
		arrow_decimal128_format(r->dec, c->scale, buf, sizeof(buf));
	else if (r->is_u64)
		snprintf(buf, sizeof(buf), UINT64_FORMAT, r->u);
	else
	{
		Numeric		n = int64_to_numeric(r->i);

		if (c->typmod >= 0)
			*out = DirectFunctionCall2(numeric, NumericGetDatum(n),
									   Int32GetDatum(c->typmod));
		else
			*out = NumericGetDatum(n);
		return true;
	}
	/* the format above is always valid numeric input (statistics too) */
	*out = DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid),
							   Int32GetDatum(c->typmod));
	return true;
}

/* TK_DATE: a Date32 (days) or Date64 (milliseconds, whole days) value */
static bool
date_datum(const ArrowConv *c, const RawValue *r, Datum *out, bool noerror)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];
	int64		days;
	int			inf = temporal_infinity(c->arrow_id, r->i);

	if (inf != 0)
	{
		*out = DateADTGetDatum(inf < 0 ? DATEVAL_NOBEGIN : DATEVAL_NOEND);
		return true;
	}
	if (c->arrow_id == ARROW_TYPE_DATE64)
	{
		if (r->i % (int64) (SECS_PER_DAY * 1000) != 0)
		{
			snprintf(buf, sizeof(buf), INT64_FORMAT " ms", r->i);
			return inexact(c, noerror, buf,
						   "A date64 value must be a whole number of days. " TEMPORAL_HINT);
		}
		days = r->i / (SECS_PER_DAY * 1000);
	}
	else
		days = r->i;
	days -= EPOCH_DIFF_DAYS;
	if (days < PG_INT32_MIN || days > PG_INT32_MAX ||
		!IS_VALID_DATE((int32) days))
	{
		snprintf(buf, sizeof(buf), INT64_FORMAT " days since 1970-01-01",
				 days + EPOCH_DIFF_DAYS);
		return inexact(c, noerror, buf, "The date is out of PostgreSQL's range. " TEMPORAL_HINT);
	}
	*out = DateADTGetDatum((DateADT) days);
	return true;
}

/*
 * TK_TIME and TK_TIMESTAMP: a time of day, or an instant since the Unix
 * epoch, in the field's unit; exact in microseconds or refused.
 */
static bool
time_datum(const ArrowConv *c, const RawValue *r, Datum *out, bool noerror)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];
	int64		us;

	if (c->kind == TK_TIME)
	{
		if (to_usecs(r->i, c->unit, &us) && us >= 0 && us <= USECS_PER_DAY)
		{
			*out = TimeADTGetDatum(us);
			return true;
		}
	}
	else
	{
		int			inf = temporal_infinity(c->arrow_id, r->i);

		if (inf != 0)
		{
			*out = TimestampGetDatum(inf < 0 ? DT_NOBEGIN : DT_NOEND);
			return true;
		}
		if (to_usecs(r->i, c->unit, &us) &&
			!pg_sub_s64_overflow(us, EPOCH_DIFF_USECS, &us) &&
			IS_VALID_TIMESTAMP(us))
		{
			*out = TimestampGetDatum(us);
			return true;
		}
	}
	snprintf(buf, sizeof(buf), INT64_FORMAT " (unit 1/" INT64_FORMAT " s)",
			 r->i, unit_per_sec(c->unit));
	return inexact(c, noerror, buf, TEMPORAL_HINT);
}

/* TK_INTERVAL: a year-month, day-time, month-day-nano interval or duration */
static bool
interval_datum(const ArrowConv *c, const RawValue *r, Datum *out, bool noerror)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];
	Interval   *iv = palloc0(sizeof(Interval));
	int64		us;

	switch (c->arrow_id)
	{
		case ARROW_TYPE_INTERVAL_YM:
			iv->month = (int32) r->i;
			break;
		case ARROW_TYPE_INTERVAL_DT:
			iv->day = r->days;
			iv->time = r->sub * 1000;	/* int32 ms: no overflow */
			break;
		case ARROW_TYPE_INTERVAL_MDN:
			if (r->sub % 1000 != 0)
			{
				snprintf(buf, sizeof(buf), "%d months %d days " INT64_FORMAT " ns",
						 r->months, r->days, r->sub);
				return inexact(c, noerror, buf, NULL);
			}
			iv->month = r->months;
			iv->day = r->days;
			iv->time = r->sub / 1000;
			break;
		default:				/* DURATION */
			if (!to_usecs(r->i, c->unit, &us))
			{
				snprintf(buf, sizeof(buf), INT64_FORMAT " (unit 1/" INT64_FORMAT " s)",
						 r->i, unit_per_sec(c->unit));
				return inexact(c, noerror, buf, TEMPORAL_HINT);
			}
			iv->time = us;
			break;
	}
	*out = IntervalPGetDatum(iv);
	return true;
}

/*
 * TK_TEXT and TK_INPUT: a UTF-8 string, verified and converted to the
 * server encoding, as text or through the type's input function.
 */
static Datum
string_datum(const ArrowConv *c, const RawValue *r)
{
	char	   *s;

	if (r->len > MaxAllocSize - VARHDRSZ - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("Arrow string of " INT64_FORMAT " bytes is too long", r->len)));
	/* verifies UTF-8 (no NUL bytes) and converts to the server encoding */
	s = pg_any_to_server(r->ptr, (int) r->len, PG_UTF8);
	if (c->kind == TK_TEXT)
		return PointerGetDatum(cstring_to_text_with_len(s, s == r->ptr ? (int) r->len : strlen(s)));
	if (s == r->ptr)
		s = pnstrdup(r->ptr, r->len);
	return InputFunctionCall((FmgrInfo *) &c->infunc, s, c->ioparam, c->typmod);
}

/* TK_FLOAT_INPUT: the exact decimal form of a float16 through the input function */
static Datum
float_input_datum(const ArrowConv *c, const RawValue *r)
{
	char		buf[ARROW_DECIMAL128_MAX_TEXT];

	if (isnan(r->d))
		strlcpy(buf, "NaN", sizeof(buf));
	else if (isinf(r->d))
		strlcpy(buf, r->d > 0 ? "Infinity" : "-Infinity", sizeof(buf));
	else
		snprintf(buf, sizeof(buf), "%.17g", r->d);
	return InputFunctionCall((FmgrInfo *) &c->infunc, buf, c->ioparam, c->typmod);
}

/* TK_BYTEA: the bytes of a binary value */
static Datum
bytea_datum(const RawValue *r)
{
	bytea	   *b;

	if (r->len > MaxAllocSize - VARHDRSZ)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("Arrow binary value of " INT64_FORMAT " bytes is too long", r->len)));
	b = palloc(r->len + VARHDRSZ);
	SET_VARSIZE(b, r->len + VARHDRSZ);
	memcpy(VARDATA(b), r->ptr, r->len);
	return PointerGetDatum(b);
}

/*
 * One raw value as a Datum of c's type (c->kind says which), in *out.
 * Returns true; a value that the type cannot hold exactly is an error, or
 * with noerror (statistics) makes it return false.
 */
static bool
raw_to_datum(const ArrowConv *c, RawValue *r, Datum *out, bool noerror)
{
	switch (c->kind)
	{
		case TK_BOOL:
			*out = BoolGetDatum(r->i != 0);
			return true;
		case TK_INT2:
		case TK_INT4:
		case TK_INT8:
			return int_datum(c, r, out, noerror);
		case TK_NUMERIC:
			return numeric_datum(c, r, out);
		case TK_FLOAT4:
			*out = Float4GetDatum((float4) r->d);
			return true;
		case TK_FLOAT8:
			*out = Float8GetDatum(r->d);
			return true;
		case TK_DATE:
			return date_datum(c, r, out, noerror);
		case TK_TIME:
		case TK_TIMESTAMP:
			return time_datum(c, r, out, noerror);
		case TK_INTERVAL:
			return interval_datum(c, r, out, noerror);
		case TK_TEXT:
		case TK_INPUT:
			*out = string_datum(c, r);
			return true;
		case TK_FLOAT2:
			*out = UInt16GetDatum((uint16) r->i);
			return true;
		case TK_FLOAT_INPUT:
			*out = float_input_datum(c, r);
			return true;
		case TK_BYTEA:
			*out = bytea_datum(r);
			return true;
		case TK_UUID:
			{
				pg_uuid_t  *u = palloc(sizeof(pg_uuid_t));

				memcpy(u->data, r->ptr, UUID_LEN);
				*out = UUIDPGetDatum(u);
				return true;
			}
		default:
			elog(ERROR, "arrow_fdw: unexpected conversion kind %d", c->kind);
	}
	return false;
}

/*
 * Applies the constraints of c's domain (if any) to a converted value and
 * returns it; ereports PostgreSQL's own errors (23502, 23514).  The cache of
 * domain_check lives in c->domain_cxt, as long as c: the caller's current
 * context is often reset for every row.
 */
static Datum
check_domain(const ArrowConv *c, Datum d, bool isnull)
{
	if (OidIsValid(c->domain_type))
		domain_check(d, isnull, c->domain_type,
					 (void **) &((ArrowConv *) c)->domain_extra, c->domain_cxt);
	return d;
}

/* list_bounds: the element range [*start, *end) of list row 'row' of a */
static void
list_bounds(const ArrowConv *c, const ArrowArray *a, int64 row, int64 *start, int64 *end)
{
	if (c->arrow_id == ARROW_TYPE_LIST_VIEW || c->arrow_id == ARROW_TYPE_LARGE_LIST_VIEW)
		arrow_list_range(a, row, start, end);
	else if (c->arrow_id == ARROW_TYPE_FIXED_SIZE_LIST)
	{
		*start = row * (int64) c->list_size;
		*end = *start + c->list_size;
	}
	else if (c->arrow_id == ARROW_TYPE_LARGE_LIST)
	{
		*start = ((const int64 *) a->offsets)[row];
		*end = ((const int64 *) a->offsets)[row + 1];
	}
	else
	{
		*start = ((const int32 *) a->offsets)[row];
		*end = ((const int32 *) a->offsets)[row + 1];
	}
}

/* array_datum: list row 'row' of a (not NULL) as a one-dimensional array */
static Datum
array_datum(const ArrowConv *c, const ArrowArray *a, int64 row)
{
	const ArrowArray *child = &a->children[0];
	Oid			elemtype = c->elem->domain_type ? c->elem->domain_type : c->elem->typid;
	int64		start,
				end;
	Datum	   *values;
	bool	   *nulls;
	int			dims[1];
	int			lbs[1] = {1};

	list_bounds(c, a, row, &start, &end);
	if (end - start > MaxArraySize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("Arrow list of " INT64_FORMAT " elements is too long for an array",
						end - start)));
	if (end == start)
		return PointerGetDatum(construct_empty_array(elemtype));
	values = palloc(sizeof(Datum) * (end - start));
	nulls = palloc(sizeof(bool) * (end - start));
	for (int64 i = start; i < end; i++)
		values[i - start] = arrow_conv_value(c->elem, child, i, &nulls[i - start]);
	dims[0] = (int) (end - start);
	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs, elemtype,
											  c->elem->typlen, c->elem->typbyval,
											  c->elem->typalign));
}

/* composite_datum: struct row 'row' of a (not NULL) as a composite value */
static Datum
composite_datum(const ArrowConv *c, const ArrowArray *a, int64 row)
{
	Datum	   *values = palloc(sizeof(Datum) * c->n_children);
	bool	   *nulls = palloc(sizeof(bool) * c->n_children);

	for (int i = 0; i < c->n_children; i++)
	{
		if (c->child_field[i] < 0)
		{
			values[i] = (Datum) 0;
			nulls[i] = true;
		}
		else
			values[i] = arrow_conv_value(&c->children[i],
										 &a->children[c->child_field[i]],
										 row, &nulls[i]);
	}
	return HeapTupleGetDatum(heap_form_tuple(c->tupdesc, values, nulls));
}

/*
 * Value at 'row' of array a (a column of a loaded batch, or a child) as a
 * Datum of the column's type; *isnull set.  Errors name the value; the
 * caller's error context names the file, batch, row and column.
 */
Datum
arrow_conv_value(const ArrowConv *c, const ArrowArray *a, int64 row,
				 bool *isnull)
{
	RawValue	r;
	Datum		d;

	if (c->fast != ARROW_FAST_NONE)
		return arrow_conv_fast(c, a, row, isnull);
	if (c->kind == TK_NULL || arrow_array_is_null(a, row))
	{
		*isnull = true;
		return check_domain(c, (Datum) 0, true);
	}
	if (c->run_end_encoded)
	{
		/* the value of the run the row lies in */
		row = arrow_ree_index(a, row);
		a = &a->children[1];
	}
	if (a->dictionary != NULL)
	{
		RawValue	ix;

		read_int(c->index_type, a->values, row, &ix);
		/* the library checked every index against the dictionary */
		a = a->dictionary;
		row = ix.i;
		if (arrow_array_is_null(a, row))
		{
			*isnull = true;
			return check_domain(c, (Datum) 0, true);
		}
	}
	*isnull = false;

	if (c->kind == TK_ARRAY)
		d = array_datum(c, a, row);
	else if (c->kind == TK_COMPOSITE)
		d = composite_datum(c, a, row);
	else if (c->kind == TK_MAP)
		d = map_datum(c, a, row);
	else if (c->kind == TK_DECIMAL256)
		d = decimal256_datum(c, a, row);
	else
	{
		read_raw(c, a, row, &r);
		raw_to_datum(c, &r, &d, false);
	}

	return check_domain(c, d, false);
}

/* a parsed statistic (not a decimal into numeric) as a Datum of c's type */
static bool
stat_raw_datum(const ArrowConv *c, RawValue *r, Datum *out)
{
	if (c->kind == TK_NUMERIC && !r->is_u64 && c->arrow_id != ARROW_TYPE_DECIMAL128)
	{
		*out = NumericGetDatum(int64_to_numeric(r->i));
		return true;
	}
	switch (c->kind)
	{
		case TK_INT2:
		case TK_INT4:
		case TK_INT8:
		case TK_NUMERIC:
		case TK_FLOAT2:
		case TK_FLOAT4:
		case TK_FLOAT8:
		case TK_DATE:
		case TK_TIME:
		case TK_TIMESTAMP:
			return raw_to_datum(c, r, out, true);
		default:
			return false;
	}
}

/*
 * arrow_stat_parse
 *		A record-batch statistic (doc/arrow-metadata.md: the stored value in
 *		the field's unit, as text) of a field of Arrow type id, parsed into the
 *		64 bits that arrow_conv_stat_bits converts: the integer (temporal types
 *		as stored; UINT64 as its bits) or the double's bits.  False for a
 *		malformed statistic, a NaN, and a type whose statistics are not kept
 *		as bits (decimals: arrow_conv_stat parses those itself).
 */
bool
arrow_stat_parse(ArrowTypeId id, const char *s, int64 *bits)
{
	char	   *end;

	if (s == NULL || *s == '\0')
		return false;
	errno = 0;
	switch (id)
	{
		case ARROW_TYPE_INT8:
		case ARROW_TYPE_INT16:
		case ARROW_TYPE_INT32:
		case ARROW_TYPE_INT64:
		case ARROW_TYPE_UINT8:
		case ARROW_TYPE_UINT16:
		case ARROW_TYPE_UINT32:
		case ARROW_TYPE_DATE32:
		case ARROW_TYPE_DATE64:
		case ARROW_TYPE_TIME32:
		case ARROW_TYPE_TIME64:
		case ARROW_TYPE_TIMESTAMP:
			*bits = strtoll(s, &end, 10);
			return errno == 0 && *end == '\0';
		case ARROW_TYPE_UINT64:
			{
				uint64		u;

				if (*s == '-')
					return false;
				u = strtoull(s, &end, 10);
				*bits = (int64) u;
				return errno == 0 && *end == '\0';
			}
		case ARROW_TYPE_FLOAT16:
		case ARROW_TYPE_FLOAT32:
		case ARROW_TYPE_FLOAT64:
			{
				double		d = strtod(s, &end);

				if (*end != '\0' || isnan(d))
					return false;
				memcpy(bits, &d, sizeof(d));
				return true;
			}
		default:
			return false;
	}
}

/*
 * arrow_conv_stat_bits
 *		A statistic that arrow_stat_parse parsed for c's field, as a Datum of
 *		the column's type; false when it is not exactly representable (the
 *		caller then does not use it).
 */
bool
arrow_conv_stat_bits(const ArrowConv *c, int64 bits, Datum *out)
{
	RawValue	r;

	memset(&r, 0, sizeof(r));
	if (c->has_dictionary)
		return false;
	switch (c->arrow_id)
	{
		case ARROW_TYPE_UINT64:
			r.u = (uint64) bits;
			r.is_u64 = true;
			r.i = bits;
			break;
		case ARROW_TYPE_FLOAT16:
		case ARROW_TYPE_FLOAT32:
		case ARROW_TYPE_FLOAT64:
			memcpy(&r.d, &bits, sizeof(r.d));
			if (c->kind == TK_FLOAT2)
			{
				/* a statistic of a float16 field is a half value, exactly */
				r.i = arrow_float_to_half((float) r.d);
				if ((double) arrow_half_to_float((uint16) r.i) != r.d)
					return false;
			}
			break;
		case ARROW_TYPE_DECIMAL128:
			return false;
		default:
			r.i = bits;
			break;
	}
	return stat_raw_datum(c, &r, out);
}

/*
 * A record-batch statistic (doc/arrow-metadata.md: the stored value in the
 * field's unit, as text) as a Datum of the column's type.  Returns false
 * when the statistic is malformed or not exactly representable; the caller
 * then does not use it.  Only scalar integer, float, decimal, date, time and
 * timestamp fields have statistics.
 */
bool
arrow_conv_stat(const ArrowConv *c, const char *s, Datum *out)
{
	int64		bits;

	if (s == NULL || *s == '\0' || c->has_dictionary)
		return false;
	if (c->arrow_id == ARROW_TYPE_DECIMAL128)
	{
		ArrowDecimal128 dec;
		ArrowError	err;
		char		buf[ARROW_DECIMAL128_MAX_TEXT];

		if (arrow_decimal128_parse(s, 38, c->scale, &dec, &err) != ARROW_OK)
			return false;
		if (c->kind != TK_NUMERIC)
		{
			RawValue	r;

			memset(&r, 0, sizeof(r));
			r.dec = dec;
			return stat_raw_datum(c, &r, out);
		}
		/* a typmod could reject it: compare against the unconstrained value */
		arrow_decimal128_format(dec, c->scale, buf, sizeof(buf));
		*out = DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
								   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
		return true;
	}
	return arrow_stat_parse(c->arrow_id, s, &bits) && arrow_conv_stat_bits(c, bits, out);
}

/* True when values of this column are floating point (NaN sorts last) */
bool
arrow_conv_is_float(const ArrowConv *c)
{
	return c->kind == TK_FLOAT2 || c->kind == TK_FLOAT4 || c->kind == TK_FLOAT8;
}

/*
 * True when reading a value of this column applies the column's typmod in
 * a way that can reject or change it: strings into varchar(n) or char(n)
 * (their input functions raise "value too long" or trim trailing spaces,
 * and char(n) pads).  The engine leaves a char(n) column to PostgreSQL and
 * checks a varchar(n)'s lengths (fdw_scan.h).  The other typmods the
 * reader applies cannot reject a value of a valid file:
 * numeric(p,s), time(p) and timestamp(p) columns are refused at CREATE or
 * scan time unless every value of the field's declared type fits.
 */
bool
arrow_conv_checks_typmod(const ArrowConv *c)
{
	return c->kind == TK_INPUT && c->typmod >= 0;
}

/*
 * True when converting a value of this column can raise an error for some
 * value of a valid file: a date, time, timestamp or interval beyond what
 * PostgreSQL holds, a typmod or a domain, anything through an input
 * function, and nested values.  Booleans, integers (conv_init checked that
 * every value fits), floats, text (invalid UTF-8 is replaced), bytea, uuid
 * and Decimal128 numerics (every value of the field's type fits) cannot.
 */
bool
arrow_conv_may_fail(const ArrowConv *c)
{
	if (OidIsValid(c->domain_type) || arrow_conv_checks_typmod(c))
		return true;
	switch (c->kind)
	{
		case TK_BOOL:
		case TK_FLOAT2:
		case TK_FLOAT4:
		case TK_FLOAT8:
		case TK_TEXT:
		case TK_BYTEA:
		case TK_UUID:
		case TK_NULL:
			return false;
		case TK_INT2:
		case TK_INT4:
		case TK_INT8:
			return !arrow_type_is_int(c->arrow_id);
		case TK_NUMERIC:
			return c->arrow_id != ARROW_TYPE_DECIMAL128 && !arrow_type_is_int(c->arrow_id);
		default:
			return true;
	}
}

/* ----------------------------------------------------------------
 * The newer layouts: run-end encoded, Decimal256, Map
 * ----------------------------------------------------------------
 */

/*
 * Prepares c for a RUN_END_ENCODED, DECIMAL256 or MAP field f into typid
 * (the column's type, a domain included; c->domain_type is already set).
 *	- run-end encoded: as its values, read through the run ends
 *	- Decimal256: numeric, exactly; numeric(P,S) needs S equal to the
 *	  field's scale and P - S >= precision - scale
 *	- Map: json or jsonb, an object of the entries: keys as the text of
 *	  their default type, values as to_jsonb of theirs
 */
static bool
conv_init_newer(ArrowConv *c, const ArrowField *f, Oid typid, int32 typmod,
				char **why, int depth)
{
	const ArrowType *t = &f->type;
	Oid			base = OidIsValid(c->domain_type) ? c->typid : typid;

	if (t->id == ARROW_TYPE_RUN_END_ENCODED)
	{
		if (!arrow_conv_init_internal(c, &f->children[1], typid, typmod, why, depth + 1))
			return false;
		c->run_end_encoded = true;
		return true;
	}
	if (t->id == ARROW_TYPE_DECIMAL256)
	{
		int			p,
					s;

		if (base != NUMERICOID)
			return refuse(why, f, typid, typmod, NULL);
		if (numeric_typmod_decode(c->typmod, &p, &s))
		{
			if (s != t->scale)
				return refuse(why, f, typid, typmod, "the scale differs");
			if (p - s < t->precision - t->scale)
				return refuse(why, f, typid, typmod, "the precision is too small");
		}
		c->kind = TK_DECIMAL256;
		return true;
	}
	return conv_init_map(c, f, base, why, depth);
}

/* See conv_init_newer: a map into json/jsonb */
static bool
conv_init_map(ArrowConv *c, const ArrowField *f, Oid base, char **why, int depth)
{
	const ArrowField *entries = &f->children[0];
	Oid			ktype,
				vtype,
				func;
	int32		kmod,
				vmod;
	bool		varlena;
	FuncExpr   *expr;

	if (base != JSONBOID && base != JSONOID)
		return refuse(why, f, c->typid, c->typmod, "a map needs json or jsonb");
	if (!arrow_default_type(&entries->children[0], &ktype, &kmod, why) ||
		!arrow_default_type(&entries->children[1], &vtype, &vmod, why))
		return false;
	c->kind = TK_MAP;
	c->n_children = 2;
	c->children = palloc0(sizeof(ArrowConv) * 2);
	if (!arrow_conv_init_internal(&c->children[0], &entries->children[0], ktype, kmod,
								  why, depth + 1) ||
		!arrow_conv_init_internal(&c->children[1], &entries->children[1], vtype, vmod,
								  why, depth + 1))
		return false;
	getTypeInputInfo(base, &func, &c->ioparam);
	fmgr_info(func, &c->infunc);
	c->map_fns = palloc0(sizeof(FmgrInfo) * 2);
	getTypeOutputInfo(ktype, &func, &varlena);
	fmgr_info(func, &c->map_fns[0]);
	/* to_jsonb(anyelement) learns the value's type from its call expression */
	expr = makeFuncExpr(F_TO_JSONB, JSONBOID,
						list_make1(makeNullConst(vtype, vmod, InvalidOid)),
						InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL);
	fmgr_info(F_TO_JSONB, &c->map_fns[1]);
	fmgr_info_set_expr((Node *) expr, &c->map_fns[1]);
	return true;
}

/*
 * Row 'row' (not null) of a map as json/jsonb: {"key": value, ...} in the
 * file's order (jsonb keeps the last of equal keys).  A null key is an
 * error (the Arrow format forbids them).
 */
static Datum
map_datum(const ArrowConv *c, const ArrowArray *a, int64 row)
{
	const ArrowArray *entries = &a->children[0];
	int64		start,
				end;
	StringInfoData buf;

	arrow_list_range(a, row, &start, &end);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (int64 i = start; i < end; i++)
	{
		bool		isnull;
		Datum		k = arrow_conv_value(&c->children[0], &entries->children[0], i, &isnull);
		Datum		v;

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("Arrow map has a null key")));
		if (i > start)
			appendStringInfoString(&buf, ", ");
		escape_json(&buf, OutputFunctionCall(&c->map_fns[0], k));
		appendStringInfoString(&buf, ": ");
		v = arrow_conv_value(&c->children[1], &entries->children[1], i, &isnull);
		if (isnull)
			appendStringInfoString(&buf, "null");
		else
		{
			Jsonb	   *jb = DatumGetJsonbP(FunctionCall1(&c->map_fns[1], v));

			appendStringInfoString(&buf, JsonbToCString(NULL, &jb->root, VARSIZE(jb)));
		}
	}
	appendStringInfoChar(&buf, '}');
	return InputFunctionCall((FmgrInfo *) &c->infunc, buf.data, c->ioparam, -1);
}

/* Row 'row' (not null) of a Decimal256 array as numeric (22003 if too wide) */
static Datum
decimal256_datum(const ArrowConv *c, const ArrowArray *a, int64 row)
{
	char		text[ARROW_DECIMAL256_MAX_TEXT];

	arrow_decimal256_format(a->values + row * 32, c->scale, text, sizeof(text));
	return DirectFunctionCall3(numeric_in, CStringGetDatum(text),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(c->typmod));
}
