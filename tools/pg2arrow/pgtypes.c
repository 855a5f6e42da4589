/*-------------------------------------------------------------------------
 *
 * pgtypes.c
 *		Maps the columns of a query result to Arrow fields.
 *
 * The result's type OIDs and typmods (from PQdescribePrepared) are looked up
 * in the source database's catalog: domains become their base type, arrays
 * lists, composite types structs (recursively), enums dictionary-encoded
 * utf8.  Built-in types are recognised by their fixed OIDs.  The mapping is
 * documented as a table in doc/pg2arrow.md; keep both in step.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg2arrow.h"

/* OIDs of built-in types (fixed in PostgreSQL's catalog, pg_type.dat) */
#define BOOLOID			16
#define BYTEAOID		17
#define NAMEOID			19
#define INT8OID			20
#define INT2OID			21
#define INT4OID			23
#define TEXTOID			25
#define JSONOID			114
#define CIDROID			650
#define FLOAT4OID		700
#define FLOAT8OID		701
#define MACADDR8OID		774
#define MACADDROID		829
#define INETOID			869
#define BPCHAROID		1042
#define VARCHAROID		1043
#define DATEOID			1082
#define TIMEOID			1083
#define TIMESTAMPOID	1114
#define TIMESTAMPTZOID	1184
#define INTERVALOID		1186
#define TIMETZOID		1266
#define NUMERICOID		1700
#define UUIDOID			2950
#define JSONBOID		3802

#define MAX_TYPE_DEPTH	32		/* arrays of composites of arrays ... */

/* What pg_type says about one type */
typedef struct TypeInfo
{
	char		typname[64];
	char		typtype;
	unsigned int typelem;
	unsigned int typbasetype;
	int			typtypmod;
	unsigned int typrelid;
	bool		is_array;
	char	   *formatted;		/* format_type(oid, typmod), malloc'd */
} TypeInfo;

/* Context of one resolution: connection, options, the error buffer */
typedef struct Resolver
{
	PGconn	   *conn;
	const TypeOptions *opts;
	int64_t		next_dict_id;
	char	   *errbuf;
	size_t		errlen;
} Resolver;

/*
 * Runs a catalog query with text parameters; returns the result when it
 * succeeded with tuples, else NULL with the error in r->errbuf.
 */
static PGresult *
catalog_query(Resolver *r, const char *sql, int nparams, const char *const *params)
{
	PGresult   *res = PQexecParams(r->conn, sql, nparams, NULL, params,
								   NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
	{
		snprintf(r->errbuf, r->errlen, "catalog query failed: %s",
				 PQerrorMessage(r->conn));
		PQclear(res);
		return NULL;
	}
	return res;
}

/* Fills *ti for type oid with typmod; false (errbuf set) on failure. */
static bool
lookup_type(Resolver *r, unsigned int oid, int typmod, TypeInfo *ti)
{
	char		oidbuf[16],
				modbuf[16];
	const char *params[2] = {oidbuf, modbuf};
	PGresult   *res;

	snprintf(oidbuf, sizeof(oidbuf), "%u", oid);
	snprintf(modbuf, sizeof(modbuf), "%d", typmod);
	res = catalog_query(r,
						"SELECT t.typname, t.typtype, t.typelem, t.typbasetype,"
						" t.typtypmod, t.typrelid,"
						" t.typsubscript = 'pg_catalog.array_subscript_handler'::pg_catalog.regproc,"
						" pg_catalog.format_type(t.oid, $2::int4)"
						" FROM pg_catalog.pg_type t WHERE t.oid = $1::pg_catalog.oid",
						2, params);
	if (res == NULL)
		return false;
	if (PQntuples(res) != 1)
	{
		snprintf(r->errbuf, r->errlen, "type with OID %u does not exist", oid);
		PQclear(res);
		return false;
	}
	snprintf(ti->typname, sizeof(ti->typname), "%s", PQgetvalue(res, 0, 0));
	ti->typtype = PQgetvalue(res, 0, 1)[0];
	ti->typelem = (unsigned int) strtoul(PQgetvalue(res, 0, 2), NULL, 10);
	ti->typbasetype = (unsigned int) strtoul(PQgetvalue(res, 0, 3), NULL, 10);
	ti->typtypmod = atoi(PQgetvalue(res, 0, 4));
	ti->typrelid = (unsigned int) strtoul(PQgetvalue(res, 0, 5), NULL, 10);
	ti->is_array = PQgetvalue(res, 0, 6)[0] == 't';
	ti->formatted = xstrdup(PQgetvalue(res, 0, 7));
	PQclear(res);
	return true;
}

/* qsort_r comparator of label indexes: byte-wise, like the COPY bytes */
static int
cmp_label_index(const void *a, const void *b, void *arg)
{
	char	  **labels = arg;

	return strcmp(labels[*(const int32_t *) a], labels[*(const int32_t *) b]);
}

/* Loads the labels of enum type oid into col, in enumsortorder. */
static bool
load_enum(Resolver *r, unsigned int oid, PgColumn *col)
{
	char		oidbuf[16];
	const char *params[1] = {oidbuf};
	PGresult   *res;

	snprintf(oidbuf, sizeof(oidbuf), "%u", oid);
	res = catalog_query(r,
						"SELECT enumlabel FROM pg_catalog.pg_enum"
						" WHERE enumtypid = $1::pg_catalog.oid ORDER BY enumsortorder",
						1, params);
	if (res == NULL)
		return false;
	col->kind = PK_ENUM;
	col->n_labels = PQntuples(res);
	col->labels = xcalloc(col->n_labels + 1, sizeof(char *));
	col->by_name = xcalloc(col->n_labels + 1, sizeof(int32_t));
	for (int i = 0; i < col->n_labels; i++)
	{
		col->labels[i] = xstrdup(PQgetvalue(res, i, 0));
		col->by_name[i] = i;
	}
	PQclear(res);
	qsort_r(col->by_name, col->n_labels, sizeof(int32_t), cmp_label_index,
			col->labels);
	col->dict_id = r->next_dict_id++;
	return true;
}

static bool resolve_column(Resolver *r, PgColumn *col, unsigned int oid,
						   int typmod, int depth, PgColumn *top, bool direct);

/* Loads the attributes of composite type (relation relid) as children. */
static bool
load_composite(Resolver *r, unsigned int relid, PgColumn *col, int depth,
			   PgColumn *top)
{
	char		oidbuf[16];
	const char *params[1] = {oidbuf};
	PGresult   *res;

	snprintf(oidbuf, sizeof(oidbuf), "%u", relid);
	res = catalog_query(r,
						"SELECT attname, atttypid, atttypmod FROM pg_catalog.pg_attribute"
						" WHERE attrelid = $1::pg_catalog.oid AND attnum > 0"
						" AND NOT attisdropped ORDER BY attnum",
						1, params);
	if (res == NULL)
		return false;
	col->kind = PK_COMPOSITE;
	col->n_children = PQntuples(res);
	col->children = xcalloc(col->n_children + 1, sizeof(PgColumn));
	for (int i = 0; i < col->n_children; i++)
	{
		PgColumn   *child = &col->children[i];

		child->name = xstrdup(PQgetvalue(res, i, 0));
		child->path = xasprintf("%s.%s", col->path, child->name);
		if (!resolve_column(r, child,
							(unsigned int) strtoul(PQgetvalue(res, i, 1), NULL, 10),
							atoi(PQgetvalue(res, i, 2)), depth + 1, top, false))
		{
			PQclear(res);
			return false;
		}
	}
	PQclear(res);
	return true;
}

/*
 * Sets the decimal128 precision and scale of a numeric column, or the
 * --numeric fallback for unconstrained numeric and for numeric(p,s) that
 * decimal128 cannot hold exactly (p > 38, negative scale, scale > p).
 */
static void
set_numeric(Resolver *r, PgColumn *col, int typmod)
{
	col->kind = PK_NUMERIC;
	if (typmod >= 4)
	{
		int			p = ((typmod - 4) >> 16) & 0xffff;
		int			s = (int16_t) ((typmod - 4) & 0xffff);

		if (p >= 1 && p <= 38 && s >= 0 && s <= p)
		{
			col->numeric_mode = NUMERIC_DECIMAL;
			col->precision = p;
			col->scale = s;
			return;
		}
	}
	col->numeric_mode = r->opts->numeric_mode;
	col->precision = 38;
	col->scale = r->opts->numeric_scale;
}

/*
 * float2 (pg_warp's half-precision type) travels as float4: the query casts
 * the column, or the elements of an array column, to float4 (exact).  Deeper
 * inside composites no cast can be added, so there it is an error.
 */
static bool
set_float2(Resolver *r, PgColumn *col, PgColumn *top, bool direct)
{
	if (!direct)
	{
		snprintf(r->errbuf, r->errlen,
				 "column \"%s\" has type float2 inside a composite type, which pg2arrow cannot convert\n"
				 "hint: cast the column in the query, e.g. \"%s\"::text",
				 col->path, top->name);
		return false;
	}
	col->kind = PK_FLOAT2;
	top->cast = (top == col) ? "float4" : "float4[]";
	return true;
}

/* the built-in base types that map to one column kind each (numeric aside) */
static const struct
{
	unsigned int oid;
	PgKind		kind;
}			builtin_kinds[] =
{
	{BOOLOID, PK_BOOL}, {INT2OID, PK_INT2}, {INT4OID, PK_INT4}, {INT8OID, PK_INT8},
	{FLOAT4OID, PK_FLOAT4}, {FLOAT8OID, PK_FLOAT8},
	{TEXTOID, PK_TEXT}, {VARCHAROID, PK_TEXT}, {BPCHAROID, PK_TEXT}, {NAMEOID, PK_TEXT},
	{JSONOID, PK_TEXT}, {JSONBOID, PK_JSONB}, {BYTEAOID, PK_BYTEA},
	{DATEOID, PK_DATE}, {TIMEOID, PK_TIME}, {TIMETZOID, PK_TIMETZ},
	{TIMESTAMPOID, PK_TIMESTAMP}, {TIMESTAMPTZOID, PK_TIMESTAMPTZ},
	{INTERVALOID, PK_INTERVAL}, {UUIDOID, PK_UUID}, {INETOID, PK_INET}, {CIDROID, PK_INET},
	{MACADDROID, PK_MACADDR}, {MACADDR8OID, PK_MACADDR8},
};

/* builtin_kind: the column kind of built-in base type oid; false if none */
static bool
builtin_kind(unsigned int oid, PgKind *kind)
{
	for (size_t i = 0; i < sizeof(builtin_kinds) / sizeof(builtin_kinds[0]); i++)
	{
		if (builtin_kinds[i].oid == oid)
		{
			*kind = builtin_kinds[i].kind;
			return true;
		}
	}
	return false;
}

/*
 * Resolves type oid (with typmod) into col.  top is the top-level column;
 * direct is true when col is top itself or the element of a top-level array
 * (where an SQL cast can still be applied).
 */
static bool
resolve_column(Resolver *r, PgColumn *col, unsigned int oid, int typmod,
			   int depth, PgColumn *top, bool direct)
{
	TypeInfo	ti;
	bool		is_float2 = false;

	if (depth > MAX_TYPE_DEPTH)
	{
		snprintf(r->errbuf, r->errlen,
				 "column \"%s\" nests types more than %d levels deep",
				 col->path, MAX_TYPE_DEPTH);
		return false;
	}
	if (!lookup_type(r, oid, typmod, &ti))
		return false;
	col->pg_type = ti.formatted;

	/* domains: the base type's representation, the domain's name */
	while (ti.typtype == 'd')
	{
		if (strcmp(ti.typname, "float2") == 0)
			is_float2 = true;
		oid = ti.typbasetype;
		typmod = ti.typtypmod;
		if (!lookup_type(r, oid, typmod, &ti))
			return false;
		free(ti.formatted);
	}
	if (strcmp(ti.typname, "float2") == 0)
		is_float2 = true;

	if (ti.typtype == 'e')
		return load_enum(r, oid, col);
	if (ti.typtype == 'c')
		return load_composite(r, ti.typrelid, col, depth, top);
	if (ti.typtype == 'b' && ti.is_array)
	{
		col->kind = PK_ARRAY;
		col->n_children = 1;
		col->children = xcalloc(1, sizeof(PgColumn));
		col->children[0].name = xstrdup("item");
		col->children[0].path = xasprintf("%s[]", col->path);
		return resolve_column(r, &col->children[0], ti.typelem, typmod,
							  depth + 1, top, direct && col == top);
	}
	if (is_float2)
		return set_float2(r, col, top, direct);

	if (ti.typtype == 'b' && oid == NUMERICOID)
	{
		set_numeric(r, col, typmod);
		return true;
	}
	if (ti.typtype == 'b' && builtin_kind(oid, &col->kind))
		return true;
	snprintf(r->errbuf, r->errlen,
			 "column \"%s\" has type %s, which has no Arrow mapping\n"
			 "hint: cast it in the query to a supported type, e.g. \"%s\"::text",
			 col->path, col->pg_type, top->name);
	return false;
}

/*
 * The protocol describes a domain-typed column by its base type.  For a
 * column that comes straight from a table, the table's attribute gives the
 * declared type (domain included); *oid and *typmod are replaced by it.
 */
static bool
table_column_type(Resolver *r, unsigned int relid, int attnum,
				  unsigned int *oid, int *typmod)
{
	char		relbuf[16],
				attbuf[16];
	const char *params[2] = {relbuf, attbuf};
	PGresult   *res;

	snprintf(relbuf, sizeof(relbuf), "%u", relid);
	snprintf(attbuf, sizeof(attbuf), "%d", attnum);
	res = catalog_query(r,
						"SELECT atttypid, atttypmod FROM pg_catalog.pg_attribute"
						" WHERE attrelid = $1::pg_catalog.oid AND attnum = $2::int2"
						" AND NOT attisdropped",
						2, params);
	if (res == NULL)
		return false;
	if (PQntuples(res) == 1)
	{
		*oid = (unsigned int) strtoul(PQgetvalue(res, 0, 0), NULL, 10);
		*typmod = atoi(PQgetvalue(res, 0, 1));
	}
	PQclear(res);
	return true;
}

/*
 * Resolves every column of the described result desc (PQdescribePrepared)
 * into a new array of PgColumn (*columns_out, PQnfields(desc) entries).
 * Catalog queries run on conn.  On failure returns false with a message in
 * errbuf naming the column.
 */
bool
pgtypes_resolve(PGconn *conn, const PGresult *desc, const TypeOptions *opts,
				PgColumn **columns_out, char *errbuf, size_t errlen)
{
	Resolver	r = {conn, opts, 0, errbuf, errlen};
	int			n = PQnfields(desc);
	PgColumn   *cols = xcalloc(n + 1, sizeof(PgColumn));

	*columns_out = cols;
	for (int i = 0; i < n; i++)
	{
		unsigned int oid = PQftype(desc, i);
		int			typmod = PQfmod(desc, i);

		cols[i].name = xstrdup(PQfname(desc, i));
		cols[i].path = xstrdup(cols[i].name);
		if (PQftable(desc, i) != InvalidOid && PQftablecol(desc, i) > 0 &&
			!table_column_type(&r, PQftable(desc, i), PQftablecol(desc, i),
							   &oid, &typmod))
			return false;
		if (!resolve_column(&r, &cols[i], oid, typmod, 0, &cols[i], true))
			return false;
	}
	return true;
}

/* True when -S keeps min/max for col (doc/arrow-metadata.md) */
bool
pgtypes_stats_supported(const PgColumn *col)
{
	switch (col->kind)
	{
		case PK_INT2:
		case PK_INT4:
		case PK_INT8:
		case PK_FLOAT2:
		case PK_FLOAT4:
		case PK_FLOAT8:
		case PK_DATE:
		case PK_TIME:
		case PK_TIMESTAMP:
		case PK_TIMESTAMPTZ:
			return true;
		case PK_NUMERIC:
			return col->numeric_mode != NUMERIC_TEXT;
		default:
			return false;
	}
}

/* Fills the Arrow type of a column */
static void
arrow_type_of(const PgColumn *col, ArrowType *t)
{
	memset(t, 0, sizeof(*t));
	switch (col->kind)
	{
		case PK_BOOL:
			t->id = ARROW_TYPE_BOOL;
			break;
		case PK_INT2:
			t->id = ARROW_TYPE_INT16;
			break;
		case PK_INT4:
			t->id = ARROW_TYPE_INT32;
			break;
		case PK_INT8:
			t->id = ARROW_TYPE_INT64;
			break;
		case PK_FLOAT2:
			t->id = ARROW_TYPE_FLOAT16;
			break;
		case PK_FLOAT4:
			t->id = ARROW_TYPE_FLOAT32;
			break;
		case PK_FLOAT8:
			t->id = ARROW_TYPE_FLOAT64;
			break;
		case PK_NUMERIC:
			if (col->numeric_mode == NUMERIC_DECIMAL)
			{
				t->id = ARROW_TYPE_DECIMAL128;
				t->precision = col->precision;
				t->scale = col->scale;
			}
			else if (col->numeric_mode == NUMERIC_FLOAT8)
				t->id = ARROW_TYPE_FLOAT64;
			else
				t->id = ARROW_TYPE_UTF8;
			break;
		case PK_TEXT:
		case PK_JSONB:
		case PK_ENUM:
		case PK_INET:
		case PK_MACADDR:
		case PK_MACADDR8:
			t->id = ARROW_TYPE_UTF8;
			break;
		case PK_BYTEA:
			t->id = ARROW_TYPE_BINARY;
			break;
		case PK_DATE:
			t->id = ARROW_TYPE_DATE32;
			break;
		case PK_TIME:
		case PK_TIMETZ:
			t->id = ARROW_TYPE_TIME64;
			t->unit = ARROW_UNIT_MICRO;
			break;
		case PK_TIMESTAMP:
		case PK_TIMESTAMPTZ:
			t->id = ARROW_TYPE_TIMESTAMP;
			t->unit = ARROW_UNIT_MICRO;
			break;
		case PK_INTERVAL:
			t->id = ARROW_TYPE_INTERVAL_MDN;
			break;
		case PK_UUID:
			t->id = ARROW_TYPE_FIXED_SIZE_BINARY;
			t->byte_width = 16;
			break;
		case PK_ARRAY:
			t->id = ARROW_TYPE_LIST;
			break;
		case PK_COMPOSITE:
			t->id = ARROW_TYPE_STRUCT;
			break;
	}
}

/* Fills field f (malloc'd strings, freed by arrow_schema_free) from col */
static bool
build_field(const PgColumn *col, ArrowField *f, char *errbuf, size_t errlen)
{
	ArrowError	err;

	f->name = xstrdup(col->name);
	f->nullable = true;
	arrow_type_of(col, &f->type);
	if (col->kind == PK_TIMESTAMPTZ)
		f->type.timezone = xstrdup("UTC");
	if (col->kind == PK_ENUM)
	{
		f->has_dictionary = true;
		f->dictionary.id = col->dict_id;
		f->dictionary.index_type = ARROW_TYPE_INT32;
		f->dictionary.ordered = true;
	}
	else if (col->tdict != NULL)
	{
		/* --dictionary (text_dict.c): values in the order first met */
		f->has_dictionary = true;
		f->dictionary.id = text_dict_id(col->tdict);
		f->dictionary.index_type = ARROW_TYPE_INT32;
	}
	if (arrow_metadata_set(NULL, &f->metadata, "pg_type", col->pg_type,
						   &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "%s", err.message);
		return false;
	}
	if (col->n_children > 0)
	{
		f->n_children = col->n_children;
		f->children = xcalloc(col->n_children, sizeof(ArrowField));
		for (int i = 0; i < col->n_children; i++)
			if (!build_field(&col->children[i], &f->children[i], errbuf, errlen))
				return false;
	}
	return true;
}

/*
 * Builds the Arrow schema of the resolved columns into *schema (zeroed by
 * the caller; free with arrow_schema_free(NULL, schema), also on failure).
 */
bool
pgtypes_build_schema(const PgColumn *columns, int32_t n_columns,
					 ArrowSchema *schema, char *errbuf, size_t errlen)
{
	schema->n_fields = n_columns;
	schema->fields = xcalloc(n_columns + 1, sizeof(ArrowField));
	for (int i = 0; i < n_columns; i++)
		if (!build_field(&columns[i], &schema->fields[i], errbuf, errlen))
			return false;
	return true;
}

/* Frees columns and everything they own (n_columns entries) */
void
pgtypes_free(PgColumn *columns, int32_t n_columns)
{
	if (columns == NULL)
		return;
	for (int i = 0; i < n_columns; i++)
	{
		PgColumn   *c = &columns[i];

		free(c->name);
		free(c->pg_type);
		free(c->path);
		for (int j = 0; j < c->n_labels; j++)
			free(c->labels[j]);
		free(c->labels);
		free(c->by_name);
		pgtypes_free(c->children, c->n_children);
	}
	free(columns);
}
