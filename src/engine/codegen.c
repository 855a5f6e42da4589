/*-------------------------------------------------------------------------
 *
 * codegen.c
 *		Compiles PostgreSQL expression trees (after planning) into xPU
 *		programs (src/xpu/xpu_program.h) with the builder of xpu_build.c.
 *
 * What compiles: Vars of the scan relation whose column the scan can load
 * exactly (CodegenScan.column), Consts of the engine's types, OpExpr and
 * FuncExpr whose function is in cg_funcs[] (the one table from PostgreSQL
 * function OIDs to opcodes) or, for pg_warp's own float2 type, in
 * cg_float2_funcs[] (by the C function, as the extension's OIDs vary),
 * AND/OR/NOT, NullTest, BooleanTest, IN lists
 * (ScalarArrayOpExpr ... = ANY (const array)), CASE, COALESCE, NULLIF and
 * RelabelType.  Anything else (Params, volatile or unknown functions,
 * other types, numerics beyond 38 digits, a LIKE pattern ending in its
 * escape, ILIKE outside a C ctype, whatever needs the rules of a time zone
 * whose UTC offset changes) is "not compilable": the caller keeps it in
 * PostgreSQL, and codegen_why_not() says which expression and why (the
 * line EXPLAIN (VERBOSE) shows, explain_why.c).  doc/engine.md ("What the engine evaluates")
 * lists what compiles, type by type.  A program is never an approximation: every opcode computes
 * exactly what PostgreSQL's function does (the oracle tests of src/xpu).
 *
 * Evaluation order follows PostgreSQL's: AND and OR evaluate their
 * arguments left to right and stop where the result is decided, CASE and
 * COALESCE evaluate a branch or argument only where PostgreSQL would; the
 * program expresses this with MASK_PUSH_* / MASK_POP, so an instruction
 * raises an error only for rows PostgreSQL would evaluate it for.
 *
 * Collations.  text compiles only in a UTF8 database (the engine reads
 * the file's UTF-8 bytes; PostgreSQL converts them to the server
 * encoding).  <, <=, >, >= compile only where lc_collate_is_c() holds for
 * the comparison's collation (C, POSIX, or a default collation that is
 * C): that is exactly when PostgreSQL itself compares with memcmp.  = and
 * <> (and IN lists, LIKE) compile for any deterministic collation:
 * PostgreSQL's texteq is then bytewise equality whatever the locale.  A
 * nondeterministic collation never compiles.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/regproc.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "pgtime.h"

#include "engine/codegen.h"
#include "xpu/xpu_join.h"
#include "xpu/xpu_half.h"
#include "xpu/xpu_date.h"

/* ---------------- the function table ---------------- */

/* flags of a table entry */
#define CGF_ORDER	0x01		/* text order: collation must be C-like */
#define CGF_EQ		0x02		/* text equality: collation deterministic */
#define CGF_LIKE	0x04		/* LIKE: pattern constant compiled */
#define CGF_NEGATE	0x08		/* NOT of the opcode's result */
#define CGF_FIELD	0x10		/* date_part/date_trunc: field constant */
#define CGF_NS_MAX	0x20		/* numeric result scale: max of the args */
#define CGF_NS_SUM	0x40		/* numeric result scale: sum of the args */
#define CGF_NS_ARG	0x80		/* numeric result scale: the argument's */
#define CGF_NS_FIELD 0x100		/* numeric result scale: extract()'s field's */
#define CGF_DATE_TS	0x200		/* arg 0 (date) converted by DATE_TO_TS */
#define CGF_IV_US	0x400		/* arg 1: an interval constant of no days
								 * or months (timestamptz arithmetic) */
#define CGF_ILIKE	0x800		/* ILIKE: pattern constant, C ctype */
#define CGF_TZ		0x1000		/* the session's fixed UTC offset as a
								 * further int8 argument (cg_tz_reg) */

/* how deep codegen_qual_program nests the masks of a qual's conjuncts */
#define CG_QUAL_NEST	16

typedef struct CgFunc
{
	Oid			fn;				/* pg_proc OID (fmgroids.h) */
	XpuOpcode	op;
	uint8		nargs;
	uint8		arg[3];			/* XpuType of each SQL argument */
	uint8		opnd;			/* args widened to this type, NONE: as is */
	uint8		result;			/* XpuType of the result */
	uint16		flags;
} CgFunc;

#define T(x)	XPU_T_##x
#define F1(fn, op, a, w, r, fl) {fn, XPU_OP_##op, 1, {T(a), 0, 0}, T(w), T(r), fl}
#define F2(fn, op, a, b, w, r, fl) {fn, XPU_OP_##op, 2, {T(a), T(b), 0}, T(w), T(r), fl}
#define CMP6(P, A, B, W, S) \
	F2(F_##P##EQ, EQ_##S, A, B, W, BOOL, 0), F2(F_##P##NE, NE_##S, A, B, W, BOOL, 0), \
	F2(F_##P##LT, LT_##S, A, B, W, BOOL, 0), F2(F_##P##LE, LE_##S, A, B, W, BOOL, 0), \
	F2(F_##P##GT, GT_##S, A, B, W, BOOL, 0), F2(F_##P##GE, GE_##S, A, B, W, BOOL, 0)
/* cross-type comparisons: F_<P>EQ<Q> etc. */
#define CMP6X(P, Q, A, B, W, S) \
	F2(F_##P##EQ##Q, EQ_##S, A, B, W, BOOL, 0), F2(F_##P##NE##Q, NE_##S, A, B, W, BOOL, 0), \
	F2(F_##P##LT##Q, LT_##S, A, B, W, BOOL, 0), F2(F_##P##LE##Q, LE_##S, A, B, W, BOOL, 0), \
	F2(F_##P##GT##Q, GT_##S, A, B, W, BOOL, 0), F2(F_##P##GE##Q, GE_##S, A, B, W, BOOL, 0)
#define ARITH4(P, A, B, W, S) \
	F2(F_##P##PL, ADD_##S, A, B, W, W, 0), F2(F_##P##MI, SUB_##S, A, B, W, W, 0), \
	F2(F_##P##MUL, MUL_##S, A, B, W, W, 0), F2(F_##P##DIV, DIV_##S, A, B, W, W, 0)

static const CgFunc cg_funcs[] = {
	/* integer comparisons, any two widths (compared as the wider) */
	CMP6(INT2, INT2, INT2, NONE, INT), CMP6(INT24, INT2, INT4, INT4, INT),
	CMP6(INT28, INT2, INT8, INT8, INT), CMP6(INT42, INT4, INT2, INT4, INT),
	CMP6(INT4, INT4, INT4, NONE, INT), CMP6(INT48, INT4, INT8, INT8, INT),
	CMP6(INT82, INT8, INT2, INT8, INT), CMP6(INT84, INT8, INT4, INT8, INT),
	CMP6(INT8, INT8, INT8, NONE, INT),
	CMP6(BOOL, BOOL, BOOL, NONE, INT), CMP6(DATE_, DATE, DATE, NONE, INT),
	CMP6(TIMESTAMP_, TIMESTAMP, TIMESTAMP, NONE, INT),
	CMP6(TIMESTAMPTZ_, TIMESTAMPTZ, TIMESTAMPTZ, NONE, INT),
	CMP6(INTERVAL_, INTERVAL, INTERVAL, NONE, IV),
	/* date against timestamp: the date as a timestamp (DATE_CMP_TS) */
	CMP6X(DATE_, _TIMESTAMP, DATE, TIMESTAMP, TIMESTAMP, INT),
	CMP6X(TIMESTAMP_, _DATE, TIMESTAMP, DATE, TIMESTAMP, INT),
	/* float comparisons: float4 against float8 compares as float8 */
	CMP6(FLOAT4, FLOAT4, FLOAT4, NONE, F4), CMP6(FLOAT48, FLOAT4, FLOAT8, FLOAT8, F8),
	CMP6(FLOAT84, FLOAT8, FLOAT4, FLOAT8, F8), CMP6(FLOAT8, FLOAT8, FLOAT8, NONE, F8),
	CMP6(NUMERIC_, NUMERIC, NUMERIC, NONE, NUM),
	/* integer arithmetic: mixed widths in the wider one, as int24pl etc. */
	ARITH4(INT2, INT2, INT2, INT2, I2), ARITH4(INT24, INT2, INT4, INT4, I4),
	ARITH4(INT42, INT4, INT2, INT4, I4), ARITH4(INT4, INT4, INT4, INT4, I4),
	ARITH4(INT28, INT2, INT8, INT8, I8), ARITH4(INT82, INT8, INT2, INT8, I8),
	ARITH4(INT48, INT4, INT8, INT8, I8), ARITH4(INT84, INT8, INT4, INT8, I8),
	ARITH4(INT8, INT8, INT8, INT8, I8),
	F2(F_INT2MOD, MOD_I2, INT2, INT2, NONE, INT2, 0),
	F2(F_MOD_INT2_INT2, MOD_I2, INT2, INT2, NONE, INT2, 0),
	F2(F_INT4MOD, MOD_I4, INT4, INT4, NONE, INT4, 0),
	F2(F_MOD_INT4_INT4, MOD_I4, INT4, INT4, NONE, INT4, 0),
	F2(F_INT8MOD, MOD_I8, INT8, INT8, NONE, INT8, 0),
	F2(F_MOD_INT8_INT8, MOD_I8, INT8, INT8, NONE, INT8, 0),
	F1(F_INT2UM, NEG_I2, INT2, NONE, INT2, 0), F1(F_INT4UM, NEG_I4, INT4, NONE, INT4, 0),
	F1(F_INT8UM, NEG_I8, INT8, NONE, INT8, 0),
	F1(F_INT2ABS, ABS_I2, INT2, NONE, INT2, 0), F1(F_ABS_INT2, ABS_I2, INT2, NONE, INT2, 0),
	F1(F_INT4ABS, ABS_I4, INT4, NONE, INT4, 0), F1(F_ABS_INT4, ABS_I4, INT4, NONE, INT4, 0),
	F1(F_INT8ABS, ABS_I8, INT8, NONE, INT8, 0), F1(F_ABS_INT8, ABS_I8, INT8, NONE, INT8, 0),
	F1(F_INT2UP, MOVE, INT2, NONE, INT2, 0), F1(F_INT4UP, MOVE, INT4, NONE, INT4, 0),
	F1(F_INT8UP, MOVE, INT8, NONE, INT8, 0),
	/* float arithmetic */
	ARITH4(FLOAT4, FLOAT4, FLOAT4, FLOAT4, F4), ARITH4(FLOAT48, FLOAT4, FLOAT8, FLOAT8, F8),
	ARITH4(FLOAT84, FLOAT8, FLOAT4, FLOAT8, F8), ARITH4(FLOAT8, FLOAT8, FLOAT8, FLOAT8, F8),
	F1(F_FLOAT4UM, NEG_F4, FLOAT4, NONE, FLOAT4, 0),
	F1(F_FLOAT8UM, NEG_F8, FLOAT8, NONE, FLOAT8, 0),
	F1(F_FLOAT4ABS, ABS_F4, FLOAT4, NONE, FLOAT4, 0),
	F1(F_ABS_FLOAT4, ABS_F4, FLOAT4, NONE, FLOAT4, 0),
	F1(F_FLOAT8ABS, ABS_F8, FLOAT8, NONE, FLOAT8, 0),
	F1(F_ABS_FLOAT8, ABS_F8, FLOAT8, NONE, FLOAT8, 0),
	F1(F_FLOAT4UP, MOVE, FLOAT4, NONE, FLOAT4, 0), F1(F_FLOAT8UP, MOVE, FLOAT8, NONE, FLOAT8, 0),
	/* numeric (no division: its result scale depends on the values) */
	F2(F_NUMERIC_MOD, MOD_NUM, NUMERIC, NUMERIC, NONE, NUMERIC, CGF_NS_MAX),
	F2(F_MOD_NUMERIC_NUMERIC, MOD_NUM, NUMERIC, NUMERIC, NONE, NUMERIC, CGF_NS_MAX),
	F1(F_NUMERIC_UPLUS, MOVE, NUMERIC, NONE, NUMERIC, CGF_NS_ARG),
	F2(F_NUMERIC_ADD, ADD_NUM, NUMERIC, NUMERIC, NONE, NUMERIC, CGF_NS_MAX),
	F2(F_NUMERIC_SUB, SUB_NUM, NUMERIC, NUMERIC, NONE, NUMERIC, CGF_NS_MAX),
	F2(F_NUMERIC_MUL, MUL_NUM, NUMERIC, NUMERIC, NONE, NUMERIC, CGF_NS_SUM),
	F1(F_NUMERIC_UMINUS, NEG_NUM, NUMERIC, NONE, NUMERIC, CGF_NS_ARG),
	F1(F_NUMERIC_ABS, ABS_NUM, NUMERIC, NONE, NUMERIC, CGF_NS_ARG),
	F1(F_ABS_NUMERIC, ABS_NUM, NUMERIC, NONE, NUMERIC, CGF_NS_ARG),
	/* casts among bool, integers, floats and numeric */
	F1(F_INT4_INT2, I2_TO_I4, INT2, NONE, INT4, 0), F1(F_INT8_INT2, I2_TO_I8, INT2, NONE, INT8, 0),
	F1(F_INT2_INT4, I4_TO_I2, INT4, NONE, INT2, 0), F1(F_INT8_INT4, I4_TO_I8, INT4, NONE, INT8, 0),
	F1(F_INT2_INT8, I8_TO_I2, INT8, NONE, INT2, 0), F1(F_INT4_INT8, I8_TO_I4, INT8, NONE, INT4, 0),
	F1(F_FLOAT4_INT2, I8_TO_F4, INT2, INT8, FLOAT4, 0),
	F1(F_FLOAT4_INT4, I8_TO_F4, INT4, INT8, FLOAT4, 0),
	F1(F_FLOAT4_INT8, I8_TO_F4, INT8, NONE, FLOAT4, 0),
	F1(F_FLOAT8_INT2, I8_TO_F8, INT2, INT8, FLOAT8, 0),
	F1(F_FLOAT8_INT4, I8_TO_F8, INT4, INT8, FLOAT8, 0),
	F1(F_FLOAT8_INT8, I8_TO_F8, INT8, NONE, FLOAT8, 0),
	F1(F_FLOAT8_FLOAT4, F4_TO_F8, FLOAT4, NONE, FLOAT8, 0),
	F1(F_FLOAT4_FLOAT8, F8_TO_F4, FLOAT8, NONE, FLOAT4, 0),
	F1(F_INT2_FLOAT4, F4_TO_I2, FLOAT4, NONE, INT2, 0), F1(F_INT4_FLOAT4, F4_TO_I4, FLOAT4, NONE, INT4, 0),
	F1(F_INT8_FLOAT4, F4_TO_I8, FLOAT4, NONE, INT8, 0), F1(F_INT2_FLOAT8, F8_TO_I2, FLOAT8, NONE, INT2, 0),
	F1(F_INT4_FLOAT8, F8_TO_I4, FLOAT8, NONE, INT4, 0), F1(F_INT8_FLOAT8, F8_TO_I8, FLOAT8, NONE, INT8, 0),
	F1(F_NUMERIC_INT2, I8_TO_NUM, INT2, INT8, NUMERIC, 0),
	F1(F_NUMERIC_INT4, I8_TO_NUM, INT4, INT8, NUMERIC, 0),
	F1(F_NUMERIC_INT8, I8_TO_NUM, INT8, NONE, NUMERIC, 0),
	F1(F_INT4_BOOL, BOOL_TO_I4, BOOL, NONE, INT4, 0),
	F1(F_BOOL_INT4, I4_TO_BOOL, INT4, NONE, BOOL, 0),
	F1(F_INT2_NUMERIC, NUM_TO_I2, NUMERIC, NONE, INT2, 0),
	F1(F_INT4_NUMERIC, NUM_TO_I4, NUMERIC, NONE, INT4, 0),
	F1(F_INT8_NUMERIC, NUM_TO_I8, NUMERIC, NONE, INT8, 0),
	/* text */
	F2(F_TEXTEQ, EQ_TEXT, TEXT, TEXT, NONE, BOOL, CGF_EQ),
	F2(F_TEXTNE, NE_TEXT, TEXT, TEXT, NONE, BOOL, CGF_EQ),
	F2(F_TEXT_LT, LT_TEXT, TEXT, TEXT, NONE, BOOL, CGF_ORDER),
	F2(F_TEXT_LE, LE_TEXT, TEXT, TEXT, NONE, BOOL, CGF_ORDER),
	F2(F_TEXT_GT, GT_TEXT, TEXT, TEXT, NONE, BOOL, CGF_ORDER),
	F2(F_TEXT_GE, GE_TEXT, TEXT, TEXT, NONE, BOOL, CGF_ORDER),
	F2(F_TEXTLIKE, LIKE_EXACT, TEXT, TEXT, NONE, BOOL, CGF_LIKE),
	F2(F_LIKE_TEXT_TEXT, LIKE_EXACT, TEXT, TEXT, NONE, BOOL, CGF_LIKE),
	F2(F_TEXTNLIKE, LIKE_EXACT, TEXT, TEXT, NONE, BOOL, CGF_LIKE | CGF_NEGATE),
	F2(F_NOTLIKE_TEXT_TEXT, LIKE_EXACT, TEXT, TEXT, NONE, BOOL, CGF_LIKE | CGF_NEGATE),
	F2(F_TEXTICLIKE, ILIKE_MATCH, TEXT, TEXT, NONE, BOOL, CGF_LIKE | CGF_ILIKE),
	F2(F_TEXTICNLIKE, ILIKE_MATCH, TEXT, TEXT, NONE, BOOL, CGF_LIKE | CGF_ILIKE | CGF_NEGATE),
	F1(F_LENGTH_TEXT, LENGTH_TEXT, TEXT, NONE, INT4, 0),
	F1(F_TEXTLEN, LENGTH_TEXT, TEXT, NONE, INT4, 0),
	F1(F_CHAR_LENGTH_TEXT, LENGTH_TEXT, TEXT, NONE, INT4, 0),
	F2(F_SUBSTRING_TEXT_INT4, SUBSTR_FROM, TEXT, INT4, NONE, TEXT, 0),
	F2(F_SUBSTR_TEXT_INT4, SUBSTR_FROM, TEXT, INT4, NONE, TEXT, 0),
	{F_SUBSTRING_TEXT_INT4_INT4, XPU_OP_SUBSTR_FOR, 3, {T(TEXT), T(INT4), T(INT4)}, 0, T(TEXT), 0},
	{F_SUBSTR_TEXT_INT4_INT4, XPU_OP_SUBSTR_FOR, 3, {T(TEXT), T(INT4), T(INT4)}, 0, T(TEXT), 0},
	/* date and timestamp (timestamp without time zone for fields) */
	F2(F_DATE_PLI, DATE_PL_INT, DATE, INT4, NONE, DATE, 0),
	F2(F_DATE_MII, DATE_MI_INT, DATE, INT4, NONE, DATE, 0),
	F2(F_DATE_MI, DATE_MI_DATE, DATE, DATE, NONE, INT4, 0),
	F1(F_TIMESTAMP_DATE, DATE_TO_TS, DATE, NONE, TIMESTAMP, 0),
	F1(F_DATE_TIMESTAMP, TS_TO_DATE, TIMESTAMP, NONE, DATE, 0),
	F2(F_DATE_PART_TEXT_TIMESTAMP, DATE_PART_TS, TEXT, TIMESTAMP, NONE, FLOAT8, CGF_FIELD),
	F2(F_DATE_TRUNC_TEXT_TIMESTAMP, DATE_TRUNC_TS, TEXT, TIMESTAMP, NONE, TIMESTAMP, CGF_FIELD),
	F2(F_TIMESTAMP_PL_INTERVAL, TS_PL_IV, TIMESTAMP, INTERVAL, NONE, TIMESTAMP, 0),
	F2(F_TIMESTAMP_MI_INTERVAL, TS_MI_IV, TIMESTAMP, INTERVAL, NONE, TIMESTAMP, 0),
	F2(F_TIMESTAMP_MI, TS_MI_TS, TIMESTAMP, TIMESTAMP, NONE, INTERVAL, 0),
	F2(F_EXTRACT_TEXT_TIMESTAMP, EXTRACT_TS, TEXT, TIMESTAMP, NONE, NUMERIC,
	   CGF_FIELD | CGF_NS_FIELD),
	F2(F_EXTRACT_TEXT_DATE, EXTRACT_DATE, TEXT, DATE, NONE, NUMERIC, CGF_FIELD | CGF_NS_FIELD),
	/* date +/- interval: date2timestamp, then timestamp's */
	F2(F_DATE_PL_INTERVAL, TS_PL_IV, DATE, INTERVAL, NONE, TIMESTAMP, CGF_DATE_TS),
	F2(F_DATE_MI_INTERVAL, TS_MI_IV, DATE, INTERVAL, NONE, TIMESTAMP, CGF_DATE_TS),
	/* date::timestamptz and date_trunc of timestamptz in a fixed-offset zone */
	F1(F_TIMESTAMPTZ_DATE, DATE_TO_TSTZ, DATE, NONE, TIMESTAMPTZ, CGF_TZ),
	F2(F_DATE_TRUNC_TEXT_TIMESTAMPTZ, DATE_TRUNC_TSTZ, TEXT, TIMESTAMPTZ, NONE, TIMESTAMPTZ,
	   CGF_FIELD | CGF_TZ),
	/* timestamptz: what needs no time zone */
	F2(F_TIMESTAMPTZ_MI, TSTZ_MI_TSTZ, TIMESTAMPTZ, TIMESTAMPTZ, NONE, INTERVAL, 0),
	F2(F_TIMESTAMPTZ_PL_INTERVAL, TSTZ_PL_IV, TIMESTAMPTZ, INTERVAL, NONE, TIMESTAMPTZ,
	   CGF_IV_US),
	F2(F_TIMESTAMPTZ_MI_INTERVAL, TSTZ_MI_IV, TIMESTAMPTZ, INTERVAL, NONE, TIMESTAMPTZ,
	   CGF_IV_US),
	/* interval */
	F2(F_INTERVAL_PL, ADD_IV, INTERVAL, INTERVAL, NONE, INTERVAL, 0),
	F2(F_INTERVAL_MI, SUB_IV, INTERVAL, INTERVAL, NONE, INTERVAL, 0),
	F1(F_INTERVAL_UM, NEG_IV, INTERVAL, NONE, INTERVAL, 0),
	F2(F_DATE_PART_TEXT_INTERVAL, DATE_PART_IV, TEXT, INTERVAL, NONE, FLOAT8, CGF_FIELD),
	F2(F_EXTRACT_TEXT_INTERVAL, EXTRACT_IV, TEXT, INTERVAL, NONE, NUMERIC,
	   CGF_FIELD | CGF_NS_FIELD),
};

/*
 * pg_warp's float2 functions (types/float2.c, float2_ops.c), found by their
 * C entry point: float2 with float2 in float2's opcodes, the mixed forms as
 * float4's and float8's opcodes on the exactly widened float2, float2 ->
 * int2/4/8 as float4's casts (float2.c calls ftoi2 etc. on the float4).
 */
typedef struct CgFloat2Func
{
	PGFunction	addr;
	CgFunc		f;
} CgFloat2Func;

#define FLOAT2_FUNCS(X) \
	X(float2pl) X(float2mi) X(float2mul) X(float2div) X(float2um) X(float2up) X(float2abs) \
	X(float24pl) X(float24mi) X(float24mul) X(float24div) \
	X(float42pl) X(float42mi) X(float42mul) X(float42div) \
	X(float28pl) X(float28mi) X(float28mul) X(float28div) \
	X(float82pl) X(float82mi) X(float82mul) X(float82div) \
	X(float2eq) X(float2ne) X(float2lt) X(float2le) X(float2gt) X(float2ge) \
	X(float24eq) X(float24ne) X(float24lt) X(float24le) X(float24gt) X(float24ge) \
	X(float42eq) X(float42ne) X(float42lt) X(float42le) X(float42gt) X(float42ge) \
	X(float28eq) X(float28ne) X(float28lt) X(float28le) X(float28gt) X(float28ge) \
	X(float82eq) X(float82ne) X(float82lt) X(float82le) X(float82gt) X(float82ge) \
	X(float2_to_float4) X(float2_to_float8) X(float4_to_float2) X(float8_to_float2) \
	X(int2_to_float2) X(int4_to_float2) X(int8_to_float2) \
	X(float2_to_int2) X(float2_to_int4) X(float2_to_int8)

#define FLOAT2_DECLARE(f) extern PGDLLEXPORT Datum f(PG_FUNCTION_ARGS);
FLOAT2_FUNCS(FLOAT2_DECLARE)

#define H1(fn, op, a, w, r) {fn, F1(InvalidOid, op, a, w, r, 0)}
#define H2(fn, op, a, b, w, r) {fn, F2(InvalidOid, op, a, b, w, r, 0)}
#define H_CMP6(P, A, B, W, S) \
	H2(P##eq, EQ_##S, A, B, W, BOOL), H2(P##ne, NE_##S, A, B, W, BOOL), \
	H2(P##lt, LT_##S, A, B, W, BOOL), H2(P##le, LE_##S, A, B, W, BOOL), \
	H2(P##gt, GT_##S, A, B, W, BOOL), H2(P##ge, GE_##S, A, B, W, BOOL)
#define H_ARITH4(P, A, B, W, R, S) \
	H2(P##pl, ADD_##S, A, B, W, R), H2(P##mi, SUB_##S, A, B, W, R), \
	H2(P##mul, MUL_##S, A, B, W, R), H2(P##div, DIV_##S, A, B, W, R)

static const CgFloat2Func cg_float2_funcs[] = {
	H_ARITH4(float2, FLOAT2, FLOAT2, NONE, FLOAT2, F2),
	H_ARITH4(float24, FLOAT2, FLOAT4, FLOAT4, FLOAT4, F4),
	H_ARITH4(float42, FLOAT4, FLOAT2, FLOAT4, FLOAT4, F4),
	H_ARITH4(float28, FLOAT2, FLOAT8, FLOAT8, FLOAT8, F8),
	H_ARITH4(float82, FLOAT8, FLOAT2, FLOAT8, FLOAT8, F8),
	H1(float2um, NEG_F2, FLOAT2, NONE, FLOAT2),
	H1(float2abs, ABS_F2, FLOAT2, NONE, FLOAT2),
	H1(float2up, MOVE, FLOAT2, NONE, FLOAT2),
	H_CMP6(float2, FLOAT2, FLOAT2, NONE, F2),
	H_CMP6(float24, FLOAT2, FLOAT4, FLOAT4, F4),
	H_CMP6(float42, FLOAT4, FLOAT2, FLOAT4, F4),
	H_CMP6(float28, FLOAT2, FLOAT8, FLOAT8, F8),
	H_CMP6(float82, FLOAT8, FLOAT2, FLOAT8, F8),
	H1(float2_to_float4, F2_TO_F4, FLOAT2, NONE, FLOAT4),
	H1(float2_to_float8, F2_TO_F8, FLOAT2, NONE, FLOAT8),
	H1(float4_to_float2, F4_TO_F2, FLOAT4, NONE, FLOAT2),
	H1(float8_to_float2, F8_TO_F2, FLOAT8, NONE, FLOAT2),
	H1(int2_to_float2, I8_TO_F2, INT2, INT8, FLOAT2),
	H1(int4_to_float2, I8_TO_F2, INT4, INT8, FLOAT2),
	H1(int8_to_float2, I8_TO_F2, INT8, NONE, FLOAT2),
	H1(float2_to_int2, F4_TO_I2, FLOAT2, FLOAT4, INT2),
	H1(float2_to_int4, F4_TO_I4, FLOAT2, FLOAT4, INT4),
	H1(float2_to_int8, F4_TO_I8, FLOAT2, FLOAT4, INT8),
};

/* ---------------- compilation state ---------------- */

typedef struct Cg
{
	XpuBuilder *b;
	const CodegenScan *scan;
	uint8		rtype[XPU_MAX_REGS];	/* type and scale of each register */
	int16		rscale[XPU_MAX_REGS];
	int			nregs;
	AttrNumber	var_attno[XPU_MAX_REGS];	/* loaded columns and their registers */
	int			var_reg[XPU_MAX_REGS];
	int			nvars;
	/* inner columns of the join depths compiled so far (JOIN_PAY) */
	Index		jvar_relid[XPU_MAX_REGS];
	AttrNumber	jvar_attno[XPU_MAX_REGS];
	int			jvar_reg[XPU_MAX_REGS];
	int			njvars;
	int			n_each;			/* join probes of every match so far */
	List	   *later;			/* what the program computes after the JOIN
								 * stage (a RIGHT/FULL depth loads its outer
								 * columns before its probe) */
	int			case_reg;		/* the CASE's test value (CaseTestExpr) */
	bool		in_qual;		/* compiling quals: only values matter */
	Oid			float2_oid;		/* pg_warp's float2 type, if this database has it */
	bool		failed;
	CodegenWhyNot why;			/* the first reason noted (why.why[0]: none) */
	bool		used_tz;		/* the program holds the session's UTC offset */
	int64		tz_offset;		/* that offset (cg_tz_reg) */
} Cg;

/* why the last compilation failed (codegen_why_not) */
static CodegenWhyNot cg_last_why;

/* the last program's dependence on the session's time zone (codegen_used_timezone) */
static bool cg_last_used_tz;
static int64 cg_last_tz_offset;

static int	cg_expr(Cg *cg, Expr *expr);
static bool cg_load_scan_vars(Cg *cg, List *exprs);

/*
 * cg_fail: fails the compilation, noting why expression e (NULL: the
 * innermost expression cg_expr is compiling) does not compile, unless a
 * reason is noted already (the first one, the innermost, is the one a user
 * can act on); returns -1 for the caller to return.
 */
static int
cg_fail(Cg *cg, Expr *e, const char *fmt,...) pg_attribute_printf(3, 4);

static int
cg_fail(Cg *cg, Expr *e, const char *fmt,...)
{
	va_list		ap;

	cg->failed = true;
	if (cg->why.why[0] != '\0')
		return -1;
	va_start(ap, fmt);
	vsnprintf(cg->why.why, sizeof(cg->why.why), fmt, ap);
	va_end(ap);
	cg->why.expr = e;
	return -1;
}

/*
 * codegen_float2_type: the OID of pg_warp's float2 type (pgwarp.float2) in
 * this database, InvalidOid where the extension is not installed.
 */
Oid
codegen_float2_type(void)
{
	Oid			nsp = get_namespace_oid("pgwarp", true);

	if (!OidIsValid(nsp))
		return InvalidOid;
	return GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid, CStringGetDatum("float2"),
						   ObjectIdGetDatum(nsp));
}

/* the engine's type of a PostgreSQL type, XPU_T_NONE if it has none */
static XpuType
cg_type(const Cg *cg, Oid typid)
{
	if (OidIsValid(cg->float2_oid) && typid == cg->float2_oid)
		return XPU_T_FLOAT2;
	return codegen_builtin_type(typid);
}

/* a new register; -1 (and the compilation fails) past the limit */
static int
cg_reg(Cg *cg, XpuType type, int scale)
{
	int			r;

	if (cg->failed)
		return -1;
	if (scale < 0 || scale > XPU_NUMERIC_MAX_SCALE)
		return cg_fail(cg, NULL, "a numeric scale of %d (the engine holds 0 to %d)",
					   scale, XPU_NUMERIC_MAX_SCALE);
	if ((r = xpu_add_reg(cg->b, type, type == XPU_T_NUMERIC ? scale : 0)) < 0)
		return cg_fail(cg, NULL, "more values than the engine's %d registers", XPU_MAX_REGS);
	Assert(r == cg->nregs);
	cg->rtype[r] = (uint8) type;
	cg->rscale[r] = (int16) (type == XPU_T_NUMERIC ? scale : 0);
	cg->nregs++;
	return r;
}

/* append an instruction; false if the builder refused it */
static bool
cg_emit(Cg *cg, XpuOpcode op, int dst, int a, int b, int c, int32 imm)
{
	if (cg->failed || xpu_add_instr(cg->b, op, dst, a, b, c, imm) < 0)
		cg->failed = true;
	return !cg->failed;
}

/* a new register of type that op (no arguments) fills from imm */
static int
cg_const_reg(Cg *cg, XpuOpcode op, XpuType type, int scale, int32 imm)
{
	int			r = cg_reg(cg, type, scale);

	if (r < 0 || imm < 0 || !cg_emit(cg, op, r, 0, 0, 0, imm))
		return -1;
	return r;
}

/*
 * reg converted to type 'to' without loss (int widening, float widening), or
 * for a comparison (date to timestamp: date_cmp_timestamp's order)
 */
static int
cg_widen(Cg *cg, int reg, XpuType to)
{
	XpuType		from;
	XpuOpcode	op;
	int			r;

	if (reg < 0)
		return -1;
	from = (XpuType) cg->rtype[reg];
	if (to == XPU_T_NONE || from == to)
		return reg;
	if (from == XPU_T_INT2 && to == XPU_T_INT4)
		op = XPU_OP_I2_TO_I4;
	else if (from == XPU_T_INT2 && to == XPU_T_INT8)
		op = XPU_OP_I2_TO_I8;
	else if (from == XPU_T_INT4 && to == XPU_T_INT8)
		op = XPU_OP_I4_TO_I8;
	else if (from == XPU_T_FLOAT4 && to == XPU_T_FLOAT8)
		op = XPU_OP_F4_TO_F8;
	else if (from == XPU_T_FLOAT2 && to == XPU_T_FLOAT4)
		op = XPU_OP_F2_TO_F4;
	else if (from == XPU_T_FLOAT2 && to == XPU_T_FLOAT8)
		op = XPU_OP_F2_TO_F8;
	else if (from == XPU_T_DATE && to == XPU_T_TIMESTAMP)
		op = XPU_OP_DATE_CMP_TS;	/* only comparisons widen a date */
	else
		return -1;
	r = cg_reg(cg, to, 0);
	if (r < 0 || !cg_emit(cg, op, r, reg, 0, 0, 0))
		return -1;
	return r;
}

/* ---------------- leaves: columns and constants ---------------- */

/* the register of an inner relation's column var (JOIN_PAY), -1 if none */
static int
cg_join_var(Cg *cg, Var *var)
{
	if (var->varlevelsup != 0)
		return -1;
	for (int i = 0; i < cg->njvars; i++)
	{
		if (cg->jvar_relid[i] == var->varno && cg->jvar_attno[i] == var->varattno)
			return cg->jvar_reg[i];
	}
	return -1;
}

/*
 * the register holding column attno (loaded in the LOAD stage), or an
 * inner relation's column of a join depth compiled before
 */
static int
cg_var(Cg *cg, Var *var)
{
	if (var->varno != cg->scan->scanrelid)
		return cg_join_var(cg, var);
	if (var->varlevelsup != 0 || var->varattno <= 0)
		return -1;
	for (int i = 0; i < cg->nvars; i++)
	{
		if (cg->var_attno[i] == var->varattno)
			return cg->var_reg[i];
	}
	return -1;
}

/* load every column that expr references; false if one cannot be loaded */
static bool
cg_load_vars(Cg *cg, Node *expr)
{
	List	   *vars = pull_var_clause(expr, PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *v = lfirst(lc);
		XpuType		type = cg_type(cg, v->vartype);
		int			col, scale = 0, reg, desc, i;
		XpuColKind	kind;

		if (IsA(v, Var) && v->varno != cg->scan->scanrelid && cg_join_var(cg, v) >= 0)
			continue;			/* a join depth's payload register */
		if (!IsA(v, Var) || v->varno != cg->scan->scanrelid ||
			v->varlevelsup != 0 || v->varattno <= 0)
		{
			cg_fail(cg, (Expr *) v, "a column of another relation, a system column or a whole row");
			return false;
		}
		if (type == XPU_T_NONE)
		{
			cg_fail(cg, (Expr *) v, "type %s is not one the engine computes",
						   format_type_be(v->vartype));
			return false;
		}
		for (i = 0; i < cg->nvars && cg->var_attno[i] != v->varattno; i++)
			;
		if (i < cg->nvars)
			continue;
		if (!cg->scan->column(cg->scan->column_arg, v->varattno, v->vartype,
							  &col, &kind, &scale))
		{
			cg_fail(cg, (Expr *) v, "the engine cannot load this %s column exactly",
					format_type_be(v->vartype));
			return false;
		}
		/* a utf8 column's "scale" is its length limit, not the register's */
		reg = cg_reg(cg, type, kind == XPU_COL_UTF8 ? 0 : scale);
		desc = xpu_add_column(cg->b, col, kind, scale);
		if (reg < 0 || desc < 0 || !cg_emit(cg, XPU_OP_LOAD_COL, reg, 0, 0, 0, desc))
			return false;
		cg->var_attno[cg->nvars] = v->varattno;
		cg->var_reg[cg->nvars++] = reg;
	}
	return true;
}

/*
 * cg_can_fail: can loading a column of kind (with scale: a utf8 column's
 * length limit) fail (FALLBACK) for a value of the Arrow layout: a date or
 * timestamp beyond PostgreSQL's range, a timestamp or interval with
 * nanoseconds, a decimal beyond 38 digits, a string longer than varchar(n)
 */
static bool
cg_can_fail(XpuColKind kind, int scale)
{
	switch (kind)
	{
		case XPU_COL_DATE32:
		case XPU_COL_TIMESTAMP_S:
		case XPU_COL_TIMESTAMP_MS:
		case XPU_COL_TIMESTAMP_US:
		case XPU_COL_TIMESTAMP_NS:
		case XPU_COL_DECIMAL128:
		case XPU_COL_INTERVAL_MDN:
			return true;
		case XPU_COL_UTF8:
			return scale > 0;
		default:
			return false;
	}
}

/*
 * cg_load_checked: load, for every row, the columns of exprs whose load
 * can fail: a varchar(n) column of an Arrow table (its typmod), and where
 * the scan's reader converts every row (scan->every_row) every column that
 * cg_can_fail.  PostgreSQL's Arrow reader converts every row's referenced
 * columns, and raises its error on rows that the quals then reject too; a
 * FALLBACK makes PostgreSQL's own plan run, which raises it.
 */
static bool
cg_load_checked(Cg *cg, List *exprs)
{
	List	   *vars = pull_var_clause((Node *) exprs, PVC_RECURSE_PLACEHOLDERS);
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *v = lfirst(lc);
		int			col,
					scale = 0;
		XpuColKind	kind;

		if (IsA(v, Var) && v->varno == cg->scan->scanrelid && v->varlevelsup == 0 &&
			v->varattno > 0 &&
			cg->scan->column(cg->scan->column_arg, v->varattno, v->vartype,
							 &col, &kind, &scale) &&
			((kind == XPU_COL_UTF8 && scale > 0) ||
			 (cg->scan->every_row && cg_can_fail(kind, scale))) &&
			!cg_load_vars(cg, (Node *) v))
			return false;
	}
	return true;
}

/* a Datum of an integer-like type as int64 */
static int64
cg_int_datum(Datum d, Oid typid)
{
	switch (typid)
	{
		case BOOLOID: return DatumGetBool(d) ? 1 : 0;
		case INT2OID: return DatumGetInt16(d);
		case INT4OID:
		case DATEOID: return DatumGetInt32(d);
		default: return DatumGetInt64(d);
	}
}

static int
cg_const(Cg *cg, Const *c)
{
	XpuType		type = cg_type(cg, c->consttype);
	int32		off;

	if (type == XPU_T_NONE)
		return cg_fail(cg, (Expr *) c, "type %s is not one the engine computes",
					   format_type_be(c->consttype));
	if (c->constisnull)
		return cg_const_reg(cg, XPU_OP_CONST_NULL, type, 0, 0);
	switch (type)
	{
		case XPU_T_FLOAT2:		/* the immediate holds the bits */
			return cg_const_reg(cg, XPU_OP_CONST_F2, type, 0,
								(int32) DatumGetUInt16(c->constvalue));
		case XPU_T_FLOAT4:
			{
				float		f[2] = {DatumGetFloat4(c->constvalue), 0};

				off = xpu_add_const(cg->b, f, sizeof(f));
				return cg_const_reg(cg, XPU_OP_CONST_F4, type, 0, off);
			}
		case XPU_T_FLOAT8:
			{
				double		f = DatumGetFloat8(c->constvalue);

				off = xpu_add_const(cg->b, &f, sizeof(f));
				return cg_const_reg(cg, XPU_OP_CONST_F8, type, 0, off);
			}
		case XPU_T_NUMERIC:
			{
				__int128	v;
				int			scale;
				uint64		w[2];

				if (!codegen_numeric_value(c->constvalue, &v, &scale))
					return cg_fail(cg, (Expr *) c, "a numeric constant beyond 38 digits, NaN or infinite");
				w[0] = (uint64) v;
				w[1] = (uint64) ((unsigned __int128) v >> 64);
				off = xpu_add_const(cg->b, w, sizeof(w));
				return cg_const_reg(cg, XPU_OP_CONST_NUM, type, scale, off);
			}
		case XPU_T_TEXT:
			{
				text	   *t = DatumGetTextPP(c->constvalue);

				off = xpu_add_const_text(cg->b, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t));
				return cg_const_reg(cg, XPU_OP_CONST_TEXT, type, 0, off);
			}
		case XPU_T_INTERVAL:
			{
				Interval   *iv = DatumGetIntervalP(c->constvalue);
				XpuInterval x;

				memset(&x, 0, sizeof(x));
				x.us = iv->time;
				x.days = iv->day;
				x.months = iv->month;
				off = xpu_add_const(cg->b, &x, sizeof(x));
				return cg_const_reg(cg, XPU_OP_CONST_IV, type, 0, off);
			}
		default:
			{
				int64		v = cg_int_datum(c->constvalue, c->consttype);

				off = xpu_add_const(cg->b, &v, sizeof(v));
				return cg_const_reg(cg, XPU_OP_CONST_INT, type, 0, off);
			}
	}
}

/* ---------------- functions and operators ---------------- */

/* NOT of bool register r (-1 passes through) */
static int
cg_not(Cg *cg, int r)
{
	int			n = r < 0 ? -1 : cg_reg(cg, XPU_T_BOOL, 0);

	if (n < 0 || !cg_emit(cg, XPU_OP_NOT, n, r, 0, 0, 0))
		return -1;
	return n;
}

/* the table entry of function fn, or NULL */
static const CgFunc *
cg_lookup(Oid fn)
{
	FmgrInfo	fi;
	HeapTuple	tup;
	Oid			lang;

	for (int i = 0; i < lengthof(cg_funcs); i++)
	{
		if (cg_funcs[i].fn == fn)
			return &cg_funcs[i];
	}
	/* pg_warp's float2 functions: C functions, by their entry point */
	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fn));
	if (!HeapTupleIsValid(tup))
		return NULL;
	lang = ((Form_pg_proc) GETSTRUCT(tup))->prolang;
	ReleaseSysCache(tup);
	if (lang != ClanguageId)
		return NULL;
	fmgr_info(fn, &fi);
	for (int i = 0; i < lengthof(cg_float2_funcs); i++)
	{
		if (cg_float2_funcs[i].addr == fi.fn_addr)
			return &cg_float2_funcs[i].f;
	}
	return NULL;
}

/*
 * may a text function of flags run in collation collid; ILIKE only where
 * the collation's ctype is C, where PostgreSQL's lower() folds ASCII A-Z
 * alone (asc_tolower) whatever the characters: any other ctype folds by
 * its locale's rules, which the engine does not have
 */
static bool
cg_collation_ok(int flags, Oid collid)
{
	if (!(flags & (CGF_ORDER | CGF_EQ | CGF_LIKE)))
		return true;
	if (!OidIsValid(collid))
		return false;
	if (flags & CGF_ILIKE)
		return lc_ctype_is_c(collid);
	if (lc_collate_is_c(collid))
		return true;
	return !(flags & CGF_ORDER) && get_collation_isdeterministic(collid);
}

/* cg_fail for a text function of flags that may not run in collation collid */
static int
cg_collation_fail(Cg *cg, int flags, Oid collid)
{
	const char *name = OidIsValid(collid) ? get_collation_name(collid) : NULL;

	if (name == NULL)
		return cg_fail(cg, NULL, "no collation");
	if (flags & CGF_ILIKE)
		return cg_fail(cg, NULL, "ILIKE in collation \"%s\", whose case folding is not C's", name);
	if ((flags & CGF_ORDER) && get_collation_isdeterministic(collid))
		return cg_fail(cg, NULL, "text order in collation \"%s\", which is not bytewise", name);
	return cg_fail(cg, NULL, "nondeterministic collation \"%s\"", name);
}

/*
 * A LIKE pattern as one of the engine's matchers of one literal: *op and
 * the literal (escapes resolved) in buf/len; false for '_', an inner '%',
 * or a trailing escape (xpu_like_match's forms).
 */
static bool
cg_like_pattern(const char *p, int plen, XpuOpcode *op, char *buf, int *len)
{
	bool		lead = false,
				trail = false;
	int			i = 0,
				n = 0;

	while (i < plen && p[i] == '%')
		lead = true, i++;
	for (; i < plen; i++)
	{
		if (p[i] == '%')
		{
			trail = true;
			continue;
		}
		if (trail || p[i] == '_')
			return false;		/* a literal after '%', or '_' */
		if (p[i] == '\\')
		{
			if (++i >= plen)
				return false;
		}
		buf[n++] = p[i];
	}
	*len = n;
	*op = lead ? (trail ? XPU_OP_LIKE_INFIX : XPU_OP_LIKE_SUFFIX) :
		(trail ? XPU_OP_LIKE_PREFIX : XPU_OP_LIKE_EXACT);
	return true;
}

/* does LIKE pattern p end in an escape that escapes nothing */
static bool
cg_like_dangling_escape(const char *p, int plen)
{
	for (int i = 0; i < plen; i++)
	{
		if (p[i] == '\\' && ++i >= plen)
			return true;
	}
	return false;
}

/*
 * text LIKE (ILIKE where fold) a constant pattern (the ESCAPE clause is a
 * like_escape() call that the planner folded into a pattern of '\'
 * escapes); reg holds the text.  A LIKE pattern of one literal compiles to
 * its matcher (cg_like_pattern), any other to LIKE_MATCH; ILIKE to
 * ILIKE_MATCH with the pattern lowered as PostgreSQL's lower() lowers it in
 * a C ctype (cg_collation_ok), which then matches the lowered text.  A
 * pattern that ends in an escape stays in PostgreSQL: it raises 22025 only
 * where a match reaches the end of the pattern.
 */
static int
cg_like(Cg *cg, int reg, Expr *pattern, bool fold)
{
	Const	   *c = (Const *) pattern;
	text	   *t;
	const char *p;
	char	   *buf;
	int			plen,
				len,
				r;
	XpuOpcode	op;

	if (!IsA(pattern, Const) || c->consttype != TEXTOID)
		return cg_fail(cg, NULL, "the pattern is not a text constant");
	if (c->constisnull)
		return cg_fail(cg, NULL, "the pattern is NULL");
	t = DatumGetTextPP(c->constvalue);
	p = VARDATA_ANY(t);
	plen = VARSIZE_ANY_EXHDR(t);
	if (cg_like_dangling_escape(p, plen))
		return cg_fail(cg, NULL, "the pattern ends with the escape character");
	buf = palloc(plen + 1);
	if (fold || !cg_like_pattern(p, plen, &op, buf, &len))
	{
		op = fold ? XPU_OP_ILIKE_MATCH : XPU_OP_LIKE_MATCH;
		for (len = 0; len < plen; len++)
			buf[len] = fold ? pg_ascii_tolower((unsigned char) p[len]) : p[len];
	}
	r = cg_reg(cg, XPU_T_BOOL, 0);
	if (r < 0 || !cg_emit(cg, op, r, reg, 0, 0, xpu_add_const_text(cg->b, buf, len)))
		return -1;
	return r;
}

/*
 * A register of the session's UTC offset (seconds, PostgreSQL's sign: west
 * of Greenwich positive), where its time zone has one fixed offset
 * (pg_get_timezone_offset): then date2timestamptz and timestamptz_trunc
 * are the same arithmetic on every date.  A zone with daylight saving time
 * or any other change of offset stays in PostgreSQL.  The plan keeps the
 * offset (codegen_used_timezone): an executor that runs under another one
 * leaves the program's work to PostgreSQL (executor.c).
 */
static int
cg_tz_reg(Cg *cg)
{
	long int	gmtoff;
	int64		tz;

	if (session_timezone == NULL || !pg_get_timezone_offset(session_timezone, &gmtoff))
		return cg_fail(cg, NULL, "the time zone \"%s\" changes its UTC offset",
					   session_timezone ? pg_get_timezone_name(session_timezone) : "?");
	tz = -(int64) gmtoff;
	cg->used_tz = true;
	cg->tz_offset = tz;
	return cg_const_reg(cg, XPU_OP_CONST_INT, XPU_T_INT8, 0,
						xpu_add_const(cg->b, &tz, sizeof(tz)));
}

/*
 * The XpuDateField of a date_part/extract/date_trunc field constant that
 * op takes (xpu_date_field_ok), or 0: the field stays in PostgreSQL
 * (another spelling, a field the engine does not compute, or an error).
 */
static int
cg_date_field(Expr *e, XpuOpcode op)
{
	Const	   *c = (Const *) e;
	char	   *s;

	if (!IsA(e, Const) || c->constisnull)
		return 0;
	s = TextDatumGetCString(c->constvalue);
	for (int f = XPU_DF_YEAR; f < XPU_DF_N_FIELDS; f++)
	{
		if (pg_strcasecmp(s, xpu_date_field_name(f)) == 0)
			return xpu_date_field_ok(op, f) ? f : 0;
	}
	return 0;
}

/* is e an interval constant of microseconds only (no days, no months) */
static bool
cg_iv_us_only(Expr *e)
{
	Const	   *c = (Const *) e;
	Interval   *iv;

	if (!IsA(e, Const) || c->consttype != INTERVALOID)
		return false;
	if (c->constisnull)
		return true;
	iv = DatumGetIntervalP(c->constvalue);
	return iv->month == 0 && iv->day == 0;
}

/* the numeric scale of a function's result */
static int
cg_result_scale(const CgFunc *f, const int *regs, const Cg *cg, int imm)
{
	if (f->result != XPU_T_NUMERIC)
		return 0;
	if (f->flags & CGF_NS_FIELD)
		return f->op == XPU_OP_EXTRACT_DATE ? 0 : xpu_extract_scale(imm);
	if (f->flags & CGF_NS_MAX)
		return Max(cg->rscale[regs[0]], cg->rscale[regs[1]]);
	if (f->flags & CGF_NS_SUM)
		return cg->rscale[regs[0]] + cg->rscale[regs[1]];
	if (f->flags & CGF_NS_ARG)
		return cg->rscale[regs[0]];
	return 0;
}

/* a call of function fn on args (an OpExpr or FuncExpr) */
static int
cg_call(Cg *cg, Oid fn, List *args, Oid collid)
{
	const CgFunc *f = cg_lookup(fn);
	int			regs[3] = {0, 0, 0};
	int			imm = 0,
				first = 0,
				r;

	if (f == NULL || list_length(args) != f->nargs)
		return cg_fail(cg, NULL, "function %s has no engine form", format_procedure(fn));
	if (!cg_collation_ok(f->flags, collid))
		return cg_collation_fail(cg, f->flags, collid);
	if ((f->flags & CGF_IV_US) && !cg_iv_us_only(lsecond(args)))
		return cg_fail(cg, NULL, "an interval of days or months (its length depends on the time zone)");
	if (f->flags & CGF_FIELD)
	{
		if ((imm = cg_date_field(linitial(args), f->op)) == 0)
			return cg_fail(cg, NULL, "a unit or field the engine does not compute here");
		first = 1;
	}
	for (int i = first; i < f->nargs; i++)
	{
		int			a = cg_expr(cg, list_nth(args, i));

		if (a < 0 || cg->rtype[a] != f->arg[i])
			return -1;
		regs[i - first] = cg_widen(cg, a, (XpuType) f->opnd);
		if (regs[i - first] < 0)
			return -1;
	}
	if (f->flags & CGF_DATE_TS)
	{
		/* date2timestamp, with its error for dates beyond timestamps */
		r = cg_reg(cg, XPU_T_TIMESTAMP, 0);
		if (r < 0 || !cg_emit(cg, XPU_OP_DATE_TO_TS, r, regs[0], 0, 0, 0))
			return -1;
		regs[0] = r;
	}
	if ((f->flags & CGF_TZ) && (regs[f->nargs - first] = cg_tz_reg(cg)) < 0)
		return -1;
	if (f->flags & CGF_LIKE)
		r = cg_like(cg, regs[0], lsecond(args), (f->flags & CGF_ILIKE) != 0);
	else
	{
		r = cg_reg(cg, (XpuType) f->result, cg_result_scale(f, regs, cg, imm));
		if (r < 0 || !cg_emit(cg, f->op, r, regs[0], regs[1], regs[2], imm))
			return -1;
	}
	return (f->flags & CGF_NEGATE) ? cg_not(cg, r) : r;
}

/* ---------------- boolean logic and conditionals ---------------- */

/* a fresh copy of reg (so that masked writes never touch a shared reg) */
static int
cg_copy(Cg *cg, int reg, int type, int scale)
{
	int			r = reg < 0 ? -1 : cg_reg(cg, (XpuType) type, scale);

	if (r < 0 || !cg_emit(cg, XPU_OP_MOVE, r, reg, 0, 0, 0))
		return -1;
	return r;
}

/*
 * AND / OR with PostgreSQL's short circuit: each further argument is
 * evaluated only where the result so far is not false (AND) / not true
 * (OR), and merged three-valued into the accumulator.
 */
static int
cg_andor(Cg *cg, BoolExpr *b)
{
	bool		is_and = b->boolop == AND_EXPR;
	int			acc = -1;
	ListCell   *lc;

	foreach(lc, b->args)
	{
		int			r;

		if (acc < 0)
		{
			r = cg_expr(cg, lfirst(lc));
			if (r < 0 || cg->rtype[r] != XPU_T_BOOL ||
				(acc = cg_copy(cg, r, XPU_T_BOOL, 0)) < 0)
				return -1;
			continue;
		}
		if (!cg_emit(cg, is_and ? XPU_OP_MASK_PUSH_NOT_FALSE : XPU_OP_MASK_PUSH_NOT_TRUE,
					 0, acc, 0, 0, 0))
			return -1;
		r = cg_expr(cg, lfirst(lc));
		if (r < 0 || cg->rtype[r] != XPU_T_BOOL ||
			!cg_emit(cg, is_and ? XPU_OP_AND : XPU_OP_OR, acc, acc, r, 0, 0) ||
			!cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
			return -1;
	}
	return acc;
}

static int
cg_bool(Cg *cg, BoolExpr *b)
{
	int			a,
				r;

	if (b->boolop != NOT_EXPR)
		return cg_andor(cg, b);
	a = cg_expr(cg, linitial(b->args));
	if (a < 0 || cg->rtype[a] != XPU_T_BOOL || (r = cg_reg(cg, XPU_T_BOOL, 0)) < 0 ||
		!cg_emit(cg, XPU_OP_NOT, r, a, 0, 0, 0))
		return -1;
	return r;
}

/*
 * The result of a CASE or COALESCE.  Of a numeric result PostgreSQL keeps
 * each value's own scale, which a register cannot; where only the value
 * matters (in a qual: comparisons, arithmetic, casts to integers see values
 * alone) the branches compile at one scale, the largest one cg_peek_scale
 * sees, each value rescaled upwards (exactly; a value beyond 38 digits
 * falls back), and a branch of a larger scale refuses the compilation.
 * The register of a numeric result is made at its first value: rows that
 * took an earlier NULL branch keep the NULL every register starts with.
 */
typedef struct CgMerge
{
	int			reg;			/* the result; -1 until made (numeric) */
	XpuType		type;
	int			scale;			/* numeric: the result's scale, -1: unknown */
} CgMerge;

/* the scale a numeric column or constant e has, or -1 */
static int
cg_peek_scale(Cg *cg, Expr *e)
{
	__int128	v;
	int			scale, r;

	while (e != NULL && IsA(e, RelabelType))
		e = ((RelabelType *) e)->arg;
	if (e != NULL && IsA(e, Const) && ((Const *) e)->consttype == NUMERICOID &&
		!((Const *) e)->constisnull &&
		codegen_numeric_value(((Const *) e)->constvalue, &v, &scale))
		return scale;
	if (e != NULL && IsA(e, Var) && (r = cg_var(cg, (Var *) e)) >= 0 &&
		cg->rtype[r] == XPU_T_NUMERIC)
		return cg->rscale[r];
	return -1;
}

/* start the result m of type typid whose values are the exprs (NULL: none) */
static bool
cg_merge_init(Cg *cg, CgMerge *m, Oid typid, List *exprs)
{
	ListCell   *lc;

	m->type = cg_type(cg, typid);
	m->reg = -1;
	m->scale = -1;
	if (m->type == XPU_T_NONE)
		return false;
	if (m->type != XPU_T_NUMERIC)
		return (m->reg = cg_reg(cg, m->type, 0)) >= 0;
	if (!cg->in_qual)
		return false;			/* a result's scale would differ */
	foreach(lc, exprs)
		m->scale = Max(m->scale, cg_peek_scale(cg, lfirst(lc)));
	return true;
}

/* the register of m, made now if no value made it (scale 0 if unknown) */
static int
cg_merge_reg(Cg *cg, CgMerge *m, int scale)
{
	if (m->reg < 0)
	{
		m->scale = Max(m->scale, scale);
		m->reg = cg_reg(cg, m->type, m->scale);
	}
	return m->reg;
}

/* m := value of e (NULL: a NULL) for the active rows */
static bool
cg_assign(Cg *cg, CgMerge *m, Expr *e)
{
	int			v;

	if (e == NULL || (IsA(e, Const) && ((Const *) e)->constisnull))
	{
		if (m->reg < 0)
			return true;		/* the rows keep their NULL */
		v = cg_const_reg(cg, XPU_OP_CONST_NULL, m->type, cg->rscale[m->reg], 0);
	}
	else
		v = cg_expr(cg, e);
	if (v < 0 || cg->rtype[v] != m->type || cg_merge_reg(cg, m, cg->rscale[v]) < 0 ||
		cg->rscale[v] > cg->rscale[m->reg])
		return false;
	if (cg->rscale[v] < cg->rscale[m->reg])
	{
		int			r = cg_reg(cg, m->type, m->scale);

		if (r < 0 || !cg_emit(cg, XPU_OP_NUM_RESCALE, r, v, 0, 0, 0))
			return false;
		v = r;
	}
	return cg_emit(cg, XPU_OP_MOVE, m->reg, v, 0, 0, 0);
}

/* the THEN and ELSE expressions of a CASE */
static List *
cg_case_results(CaseExpr *c)
{
	List	   *l = list_make1(c->defresult);
	ListCell   *lc;

	foreach(lc, c->args)
		l = lappend(l, ((CaseWhen *) lfirst(lc))->result);
	return l;
}

/*
 * CASE: a 'done' flag marks rows whose WHEN matched; each WHEN runs where
 * no earlier one matched, its THEN where it is true, ELSE where none did.
 */
static int
cg_case(Cg *cg, CaseExpr *c)
{
	CgMerge		m;
	int			done,
				saved = cg->case_reg;
	ListCell   *lc;

	if (!cg_merge_init(cg, &m, c->casetype, cg_case_results(c)))
		return -1;
	if (c->arg && (cg->case_reg = cg_expr(cg, c->arg)) < 0)
		return -1;
	done = cg_const_reg(cg, XPU_OP_CONST_BOOL, XPU_T_BOOL, 0, 0);
	if (done < 0)
		return -1;
	foreach(lc, c->args)
	{
		CaseWhen   *w = lfirst(lc);
		int			cond;

		if (!cg_emit(cg, XPU_OP_MASK_PUSH_NOT_TRUE, 0, done, 0, 0, 0))
			return -1;
		cond = cg_expr(cg, w->expr);
		if (cond < 0 || cg->rtype[cond] != XPU_T_BOOL ||
			!cg_emit(cg, XPU_OP_MASK_PUSH_TRUE, 0, cond, 0, 0, 0) ||
			!cg_assign(cg, &m, w->result) ||
			!cg_emit(cg, XPU_OP_CONST_BOOL, done, 0, 0, 0, 1) ||
			!cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0) ||
			!cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
			return -1;
	}
	if (!cg_emit(cg, XPU_OP_MASK_PUSH_NOT_TRUE, 0, done, 0, 0, 0) ||
		!cg_assign(cg, &m, c->defresult) ||
		!cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
		return -1;
	cg->case_reg = saved;
	return cg_merge_reg(cg, &m, 0);
}

/* COALESCE: each further argument only where the result is still NULL */
static int
cg_coalesce(Cg *cg, CoalesceExpr *c)
{
	CgMerge		m;
	ListCell   *lc;

	if (!cg_merge_init(cg, &m, c->coalescetype, c->args) ||
		!cg_assign(cg, &m, linitial(c->args)) || cg_merge_reg(cg, &m, 0) < 0)
		return -1;
	for_each_from(lc, c->args, 1)
	{
		if (!cg_emit(cg, XPU_OP_MASK_PUSH_NULL, 0, m.reg, 0, 0, 0) ||
			!cg_assign(cg, &m, lfirst(lc)) ||
			!cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
			return -1;
	}
	return m.reg;
}

/* NULLIF(a, b): a unless the equality operator says a = b */
static int
cg_nullif(Cg *cg, NullIfExpr *n)
{
	int			a,
				eq,
				r;

	if (list_length(n->args) != 2)
		return -1;
	a = cg_expr(cg, linitial(n->args));
	eq = cg_call(cg, n->opfuncid, n->args, n->inputcollid);
	if (a < 0 || eq < 0 || cg->rtype[eq] != XPU_T_BOOL ||
		cg_type(cg, n->opresulttype) != cg->rtype[a] ||
		(r = cg_reg(cg, (XpuType) cg->rtype[a], cg->rscale[a])) < 0 ||
		!cg_emit(cg, XPU_OP_NULLIF, r, a, eq, 0, 0))
		return -1;
	return r;
}

static int
cg_nulltest(Cg *cg, NullTest *t)
{
	int			a,
				r;

	if (t->argisrow)
		return -1;
	a = cg_expr(cg, t->arg);
	if (a < 0 || (r = cg_reg(cg, XPU_T_BOOL, 0)) < 0 ||
		!cg_emit(cg, t->nulltesttype == IS_NULL ? XPU_OP_IS_NULL : XPU_OP_IS_NOT_NULL,
				 r, a, 0, 0, 0))
		return -1;
	return r;
}

static int
cg_booltest(Cg *cg, BooleanTest *t)
{
	int			a = cg_expr(cg, t->arg),
				r;
	XpuOpcode	op;

	switch (t->booltesttype)
	{
		case IS_TRUE: op = XPU_OP_IS_TRUE; break;
		case IS_NOT_TRUE: op = XPU_OP_IS_NOT_TRUE; break;
		case IS_FALSE: op = XPU_OP_IS_FALSE; break;
		case IS_NOT_FALSE: op = XPU_OP_IS_NOT_FALSE; break;
		case IS_UNKNOWN: op = XPU_OP_IS_NULL; break;
		default: op = XPU_OP_IS_NOT_NULL; break;
	}
	if (a < 0 || cg->rtype[a] != XPU_T_BOOL || (r = cg_reg(cg, XPU_T_BOOL, 0)) < 0 ||
		!cg_emit(cg, op, r, a, 0, 0, 0))
		return -1;
	return r;
}

static int
cmp_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a,
				y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* the equality entry of cg_funcs[] whose negation is the <> entry ne */
static const CgFunc *
cg_eq_of(const CgFunc *ne)
{
	XpuOpcode	eq = ne->op == XPU_OP_NE_INT ? XPU_OP_EQ_INT :
		ne->op == XPU_OP_NE_F4 ? XPU_OP_EQ_F4 : ne->op == XPU_OP_NE_F8 ? XPU_OP_EQ_F8 :
		ne->op == XPU_OP_NE_TEXT ? XPU_OP_EQ_TEXT : XPU_OP_MOVE;

	for (int i = 0; eq != XPU_OP_MOVE && i < lengthof(cg_funcs); i++)
	{
		const CgFunc *f = &cg_funcs[i];

		if (f->op == eq && f->arg[0] == ne->arg[0] && f->arg[1] == ne->arg[1] &&
			f->opnd == ne->opnd && f->flags == ne->flags)
			return f;
	}
	return NULL;
}

/* at most this many elements of an IN list compile one comparison each */
#define CG_IN_EXPAND_MAX	32

/*
 * x op ANY / ALL (constant array) for any comparison f of the table: the
 * comparisons with each element, combined with OR (ANY) or AND (ALL) in
 * three-valued logic as ExecEvalScalarArrayOp does (an empty array is
 * false for ANY and true for ALL, whatever x).  Comparisons raise no
 * errors, so all of them run.
 */
static int
cg_in_expand(Cg *cg, ScalarArrayOpExpr *s, const CgFunc *f)
{
	ArrayType  *arr = DatumGetArrayTypeP(((Const *) lsecond(s->args))->constvalue);
	Oid			elemtype = ARR_ELEMTYPE(arr);
	Datum	   *elems;
	bool	   *nulls;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	int			n, x, acc = -1;

	if (f->nargs != 2 || f->result != XPU_T_BOOL || (f->flags & ~CGF_EQ & ~CGF_ORDER) ||
		cg_type(cg, elemtype) != f->arg[1])
		return -1;
	x = cg_expr(cg, linitial(s->args));
	if (x < 0 || cg->rtype[x] != f->arg[0] || (x = cg_widen(cg, x, (XpuType) f->opnd)) < 0)
		return -1;
	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(arr, elemtype, elmlen, elmbyval, elmalign, &elems, &nulls, &n);
	if (n > CG_IN_EXPAND_MAX)
		return -1;
	if (n == 0)
		return cg_const_reg(cg, XPU_OP_CONST_BOOL, XPU_T_BOOL, 0, s->useOr ? 0 : 1);
	for (int i = 0; i < n; i++)
	{
		Const	   *e = makeConst(elemtype, -1, s->inputcollid, elmlen, elems[i],
								  nulls[i], elmbyval);
		int			v = cg_widen(cg, cg_const(cg, e), (XpuType) f->opnd);
		int			r = v < 0 ? -1 : cg_reg(cg, XPU_T_BOOL, 0);

		if (r < 0 || !cg_emit(cg, f->op, r, x, v, 0, 0))
			return -1;
		if (acc >= 0 && !cg_emit(cg, s->useOr ? XPU_OP_OR : XPU_OP_AND, acc, acc, r, 0, 0))
			return -1;
		if (acc < 0)
			acc = r;
	}
	return acc;
}

/*
 * x IN (constants): x = ANY (const array) with an equality function of
 * the table; integers (sorted, binary search), floats and text in one
 * instruction, x NOT IN (...) (x <> ALL) as its negation; other
 * comparisons and types, and date against timestamps, element by element
 * (cg_in_expand).
 */
static int
cg_in_list(Cg *cg, ScalarArrayOpExpr *s)
{
	const CgFunc *f = cg_lookup(s->opfuncid);
	Const	   *c = lsecond(s->args);
	Datum	   *elems;
	bool	   *nulls;
	int			n, x, r, nvals = 0, has_null = 0;
	int16		elmlen;
	bool		elmbyval;
	char		elmalign;
	Oid			elemtype;
	XpuOpcode	op;
	int32		off;
	bool		negate = false;

	if (f == NULL || !IsA(c, Const) || c->constisnull ||
		!cg_collation_ok(f->flags, s->inputcollid))
		return -1;
	if (!s->useOr && cg_eq_of(f) != NULL)
	{
		f = cg_eq_of(f);
		negate = true;
	}
	else if (!s->useOr)
		return cg_in_expand(cg, s, f);
	if ((f->op != XPU_OP_EQ_INT && f->op != XPU_OP_EQ_F2 && f->op != XPU_OP_EQ_F4 &&
		 f->op != XPU_OP_EQ_F8 && f->op != XPU_OP_EQ_TEXT) ||
		(f->arg[1] == XPU_T_DATE && f->opnd == XPU_T_TIMESTAMP))
		return negate ? -1 : cg_in_expand(cg, s, f);
	x = cg_expr(cg, linitial(s->args));
	if (x < 0 || cg->rtype[x] != f->arg[0])
		return -1;
	op = f->op == XPU_OP_EQ_INT ? XPU_OP_IN_INT :
		f->op == XPU_OP_EQ_TEXT ? XPU_OP_IN_TEXT : XPU_OP_IN_F8;
	x = cg_widen(cg, x, op == XPU_OP_IN_F8 ? XPU_T_FLOAT8 : (XpuType) f->opnd);
	elemtype = ARR_ELEMTYPE(DatumGetArrayTypeP(c->constvalue));
	if (x < 0 || cg_type(cg, elemtype) != f->arg[1])
		return -1;
	get_typlenbyvalalign(elemtype, &elmlen, &elmbyval, &elmalign);
	deconstruct_array(DatumGetArrayTypeP(c->constvalue), elemtype, elmlen, elmbyval,
					  elmalign, &elems, &nulls, &n);
	if (n == 0)					/* false for ANY, true for ALL, even for NULL */
		return cg_const_reg(cg, XPU_OP_CONST_BOOL, XPU_T_BOOL, 0, negate ? 1 : 0);
	if (op == XPU_OP_IN_TEXT)
	{
		const char **strs = palloc(sizeof(char *) * Max(n, 1));
		int32	   *lens = palloc(sizeof(int32) * Max(n, 1));

		for (int i = 0; i < n; i++)
		{
			text	   *t;

			if (nulls[i])
			{
				has_null = 1;
				continue;
			}
			t = DatumGetTextPP(elems[i]);
			strs[nvals] = VARDATA_ANY(t);
			lens[nvals++] = VARSIZE_ANY_EXHDR(t);
		}
		off = xpu_add_in_text_list(cg->b, strs, lens, nvals, has_null);
	}
	else
	{
		int64	   *vals = palloc(sizeof(int64) * Max(n, 1));

		for (int i = 0; i < n; i++)
		{
			double		d;

			if (nulls[i])
			{
				has_null = 1;
				continue;
			}
			if (op == XPU_OP_IN_INT)
				vals[nvals++] = cg_int_datum(elems[i], elemtype);
			else
			{
				if (f->arg[1] == XPU_T_FLOAT2)
					d = xpu_half_to_double(DatumGetUInt16(elems[i]));
				else
					d = elemtype == FLOAT4OID ? (double) DatumGetFloat4(elems[i]) :
						DatumGetFloat8(elems[i]);
				memcpy(&vals[nvals++], &d, sizeof(d));
			}
		}
		if (op == XPU_OP_IN_INT)
			qsort(vals, nvals, sizeof(int64), cmp_int64);
		off = xpu_add_in_list(cg->b, vals, nvals, op == XPU_OP_IN_INT, has_null);
	}
	r = cg_reg(cg, XPU_T_BOOL, 0);
	if (r < 0 || off < 0 || !cg_emit(cg, op, r, x, 0, 0, off))
		return -1;
	return negate ? cg_not(cg, r) : r;
}

/* ---------------- the walker ---------------- */

/* what a user calls an expression node that codegen never compiles */
static const char *
cg_node_kind(Expr *expr)
{
	switch (nodeTag(expr))
	{
		case T_Param: return "a query parameter (the engine compiles constants)";
		case T_SubPlan:
		case T_AlternativeSubPlan: return "a subquery";
		case T_CoerceViaIO: return "a cast through text input and output";
		case T_ArrayCoerceExpr:
		case T_ArrayExpr: return "an array";
		case T_RowExpr:
		case T_RowCompareExpr: return "a row";
		case T_MinMaxExpr: return "GREATEST or LEAST";
		case T_SQLValueFunction: return "CURRENT_DATE, CURRENT_USER and the like";
		case T_DistinctExpr: return "IS DISTINCT FROM";
		case T_Aggref: return "an aggregate inside an expression";
		default: return "this kind of expression";
	}
}

/*
 * cg_expr: compile expr; returns the register that holds its value, or -1
 * if the expression (or a part of it) is not compilable.
 */
static int
cg_expr(Cg *cg, Expr *expr)
{
	int			r = -1;

	if (cg->failed || expr == NULL)
		return -1;
	check_stack_depth();
	switch (nodeTag(expr))
	{
		case T_Var:
			r = cg_var(cg, (Var *) expr);
			break;
		case T_Const:
			r = cg_const(cg, (Const *) expr);
			break;
		case T_OpExpr:
			r = cg_call(cg, ((OpExpr *) expr)->opfuncid, ((OpExpr *) expr)->args,
						((OpExpr *) expr)->inputcollid);
			break;
		case T_FuncExpr:
			r = cg_call(cg, ((FuncExpr *) expr)->funcid, ((FuncExpr *) expr)->args,
						((FuncExpr *) expr)->inputcollid);
			break;
		case T_BoolExpr:
			r = cg_bool(cg, (BoolExpr *) expr);
			break;
		case T_NullTest:
			r = cg_nulltest(cg, (NullTest *) expr);
			break;
		case T_BooleanTest:
			r = cg_booltest(cg, (BooleanTest *) expr);
			break;
		case T_ScalarArrayOpExpr:
			r = cg_in_list(cg, (ScalarArrayOpExpr *) expr);
			break;
		case T_CaseExpr:
			r = cg_case(cg, (CaseExpr *) expr);
			break;
		case T_CaseTestExpr:
			r = cg->case_reg;
			break;
		case T_CoalesceExpr:
			r = cg_coalesce(cg, (CoalesceExpr *) expr);
			break;
		case T_NullIfExpr:
			r = cg_nullif(cg, (NullIfExpr *) expr);
			break;
		case T_RelabelType:
			r = cg_expr(cg, ((RelabelType *) expr)->arg);
			if (r >= 0 && cg->rtype[r] != cg_type(cg, ((RelabelType *) expr)->resulttype))
				r = -1;
			break;
		default:
			r = cg_fail(cg, expr, "%s", cg_node_kind(expr));
			break;
	}
	/* the value must have the engine type of the expression's type */
	if (r >= 0 && cg->rtype[r] != cg_type(cg, exprType((Node *) expr)))
		r = cg_fail(cg, expr, "type %s is not one the engine computes",
					format_type_be(exprType((Node *) expr)));
	if (r < 0)
		cg_fail(cg, expr, "the engine does not compile it");
	if (r < 0 && cg->why.expr == NULL)
		cg->why.expr = expr;	/* the innermost expression of a reason */
	return r;
}

/* ---------------- programs ---------------- */

/*
 * cg_quals: the LOAD and QUAL stages of a program whose QUAL stage leaves in
 * r0 the conjunction of quals (an implicit-AND list, as a plan's qual), each
 * conjunct evaluated only where all before it are true, as ExecQual does.
 * An empty list leaves the QUAL stage empty: every row passes.  The columns
 * of quals and exprs (what the program computes after them) whose load
 * checks a typmod are loaded first, for every row (cg_load_checked).  False
 * if a conjunct is not compilable.
 */
static bool
cg_quals(Cg *cg, List *quals, List *exprs)
{
	ListCell   *lc;
	int			pushed = 0;

	xpu_begin_stage(cg->b, XPU_STAGE_LOAD);
	if (cg_reg(cg, XPU_T_BOOL, 0) != 0)
		return false;
	/* (without quals every row loads every column anyway) */
	if (quals != NIL &&
		!cg_load_checked(cg, list_concat(list_concat(list_copy(quals), exprs),
										 cg->scan->preload)))
		return false;
	/*
	 * A column is loaded just before the first conjunct that uses it, under
	 * that conjunct's mask: rows that an earlier conjunct rejected never load
	 * it (every later use, in a later conjunct, runs on a subset of those
	 * rows).
	 */
	if (quals != NIL && !cg_load_vars(cg, linitial(quals)))
		return false;

	/*
	 * Each conjunct runs under a mask "r0 is true" nested in the ones before,
	 * so every mask narrows the rows that are still active (CG_QUAL_NEST
	 * levels at most: then all are popped, and the next push starts again
	 * from r0, which is false on every row that failed a conjunct).
	 */
	xpu_begin_stage(cg->b, XPU_STAGE_QUAL);
	cg->in_qual = true;
	foreach(lc, quals)
	{
		int			r;

		if (lc != list_head(quals))
		{
			while (pushed >= CG_QUAL_NEST && cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
				pushed--;
			if (!cg_emit(cg, XPU_OP_MASK_PUSH_TRUE, 0, 0, 0, 0, 0))
				return false;
			pushed++;
		}
		if (!cg_load_vars(cg, lfirst(lc)))
			return false;
		r = cg_expr(cg, lfirst(lc));
		if (r < 0 || cg->rtype[r] != XPU_T_BOOL ||
			!cg_emit(cg, XPU_OP_MOVE, 0, r, 0, 0, 0))
			return false;
	}
	while (pushed > 0 && cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
		pushed--;
	cg->in_qual = false;
	return !cg->failed;
}

/* a new compilation for scan */
static Cg *
cg_create(const CodegenScan *scan)
{
	Cg		   *cg = palloc0(sizeof(Cg));

	cg->scan = scan;
	cg->case_reg = -1;
	cg->float2_oid = codegen_float2_type();
	cg->b = xpu_builder_create();
	if (cg->b == NULL)
	{
		pfree(cg);
		return NULL;
	}
	return cg;
}

/* the program compiled so far (malloc'ed), or NULL; frees the compilation */
static XpuProgram *
cg_finish(Cg *cg, bool ok)
{
	XpuProgram *prog = NULL;
	char		errbuf[256];

	if (ok && !cg->failed)
	{
		xpu_builder_fold_moves(cg->b);
		prog = xpu_builder_finish(cg->b, errbuf, sizeof(errbuf));
		if (prog == NULL)
			cg_fail(cg, NULL, "the program is beyond the engine's limits (%s)", errbuf);
	}
	if (prog == NULL && cg->why.why[0] == '\0')
		cg_fail(cg, NULL, "the program is beyond the engine's limits");
	cg_last_why = cg->why;
	cg_last_used_tz = prog != NULL && cg->used_tz;
	cg_last_tz_offset = cg->tz_offset;
	xpu_builder_free(cg->b);
	pfree(cg);
	return prog;
}

/*
 * codegen_qual_program: the program whose QUAL stage leaves in r0 the
 * conjunction of quals (see cg_quals; quals must not be empty); NULL if one
 * of them is not compilable.  The program is malloc'ed (the caller frees
 * it).
 */
XpuProgram *
codegen_qual_program(const CodegenScan *scan, List *quals)
{
	Cg		   *cg;

	if (quals == NIL || (cg = cg_create(scan)) == NULL)
		return NULL;
	return cg_finish(cg, cg_quals(cg, quals, NIL));
}

/*
 * cg_join_depth: depth d of the JOIN stage (see codegen_join_program), for
 * the rows still active: the outer keys, the probe, the inner columns later
 * expressions read, then r0 for the join type and the join quals.  pushed
 * counts the masks left open (the caller pops them).
 */
static bool
cg_join_depth(Cg *cg, const CodegenJoin *j, int d, int *pushed)
{
	int			keys[3];
	int			nk = 0, row, test, col = 0;
	ListCell   *lc;
	bool		outer = j->jointype == XPU_JOIN_RIGHT || j->jointype == XPU_JOIN_FULL;
	bool		each = j->each || outer;
	int			flags = (each ? XPU_JOIN_PROBE_EACH : 0) | (outer ? XPU_JOIN_PROBE_MARK : 0);

	if (each && !outer && j->jointype != XPU_JOIN_INNER && j->jointype != XPU_JOIN_LEFT)
		return cg_fail(cg, NULL, "a semi or anti join that probes every match") >= 0;
	/*
	 * a RIGHT/FULL depth (the last; its probes mark the inner rows they
	 * yield, in the per-row form): every outer column the rest reads loaded
	 * before its probe, so that an unmatched inner row runs on from the
	 * probe with them NULL (xpu_row_unmatched)
	 */
	if (outer && !cg_load_scan_vars(cg, list_concat(list_copy(j->quals), cg->later)))
		return false;
	if (each && ++cg->n_each > XPU_JOIN_EACH_MAX)
		return cg_fail(cg, NULL, "more than %d joins whose inner keys may repeat",
					   XPU_JOIN_EACH_MAX) >= 0;
	if (list_length(j->outer_keys) < 1 || list_length(j->outer_keys) > 3)
		return cg_fail(cg, NULL, "a join of %d key columns (the engine takes 1 to 3)",
					   list_length(j->outer_keys)) >= 0;
	if (list_length(j->pay_vars) > XPU_JOIN_MAX_PAYLOAD)
		return cg_fail(cg, NULL, "a join that reads %d inner columns (the engine holds %d)",
					   list_length(j->pay_vars), XPU_JOIN_MAX_PAYLOAD) >= 0;
	foreach(lc, j->outer_keys)
	{
		if (!cg_load_vars(cg, lfirst(lc)) || (keys[nk++] = cg_expr(cg, lfirst(lc))) < 0)
			return false;
	}
	row = cg_reg(cg, XPU_T_INT8, 0);
	if (row < 0 ||
		!cg_emit(cg, XPU_OP_JOIN_PROBE, row, keys[0], nk > 1 ? keys[1] : keys[0],
				 nk > 2 ? keys[2] : keys[0], d | (nk << 8) | flags))
		return false;
	foreach(lc, j->pay_vars)
	{
		Var		   *v = lfirst(lc);
		int			scale;
		XpuType		type = codegen_value_type(v->vartype, v->vartypmod, &scale);
		int			r;

		if (type == XPU_T_NONE)
			return cg_fail(cg, (Expr *) v, "the engine cannot carry this %s column of a join",
						   format_type_be(v->vartype)) >= 0;
		if ((r = cg_reg(cg, type, scale)) < 0 ||
			!cg_emit(cg, XPU_OP_JOIN_PAY, r, row, 0, 0, d | (col++ << 8)))
			return false;
		cg->jvar_relid[cg->njvars] = v->varno;
		cg->jvar_attno[cg->njvars] = v->varattno;
		cg->jvar_reg[cg->njvars++] = r;
	}
	/*
	 * INNER, RIGHT and SEMI keep the rows that found their inner row, ANTI
	 * the others, LEFT and FULL every row (a row without one reads NULL
	 * inner columns)
	 */
	test = cg_reg(cg, XPU_T_BOOL, 0);
	if (j->jointype != XPU_JOIN_LEFT && j->jointype != XPU_JOIN_FULL &&
		(test < 0 ||
		 !cg_emit(cg, j->jointype == XPU_JOIN_ANTI ? XPU_OP_IS_NULL : XPU_OP_IS_NOT_NULL,
				  test, row, 0, 0, 0) ||
		 !cg_emit(cg, XPU_OP_MOVE, 0, test, 0, 0, 0)))
		return false;
	if (j->quals != NIL && j->jointype != XPU_JOIN_INNER && j->jointype != XPU_JOIN_LEFT &&
		!outer)
		return cg_fail(cg, NULL, "join quals beyond the keys of a semi or anti join") >= 0;
	/*
	 * the join quals of an inner join, each where the ones before hold (as
	 * ExecQual); of a left, right or full join, the WHERE clauses above it
	 */
	foreach(lc, j->quals)
	{
		int			r;

		if (!cg_emit(cg, XPU_OP_MASK_PUSH_TRUE, 0, 0, 0, 0, 0))
			return false;
		(*pushed)++;
		if (!cg_load_vars(cg, lfirst(lc)) || (r = cg_expr(cg, lfirst(lc))) < 0)
			return false;
		if (cg->rtype[r] != XPU_T_BOOL || !cg_emit(cg, XPU_OP_MOVE, 0, r, 0, 0, 0))
			return false;
	}
	return true;
}

/* cg_load_vars of the scan relation's columns that expr reads (no other's) */
static bool
cg_load_scan_vars(Cg *cg, List *exprs)
{
	List	   *vars = pull_var_clause((Node *) exprs, PVC_RECURSE_PLACEHOLDERS);
	List	   *own = NIL;
	ListCell   *lc;

	foreach(lc, vars)
	{
		Var		   *v = lfirst(lc);

		if (IsA(v, Var) && v->varno == cg->scan->scanrelid)
			own = lappend(own, v);
	}
	return own == NIL || cg_load_vars(cg, (Node *) own);
}

/*
 * cg_joins: the JOIN stage: the depths of joins in order, each for the
 * rows that passed the quals and every depth before (a mask on r0 per
 * depth).  Without quals r0 starts true (in the QUAL stage).
 */
static bool
cg_joins(Cg *cg, List *quals, List *joins)
{
	ListCell   *lc;
	int			pushed = 0,
				d = 0;

	if (joins == NIL)
		return true;
	if (list_length(joins) > XPU_MAX_MASK_DEPTH / 2)
		return cg_fail(cg, NULL, "a join of %d depths (the engine takes %d)",
					   list_length(joins), XPU_MAX_MASK_DEPTH / 2) >= 0;
	if (quals == NIL && !cg_emit(cg, XPU_OP_CONST_BOOL, 0, 0, 0, 0, 1))
		return false;
	xpu_begin_stage(cg->b, XPU_STAGE_JOIN);
	cg->in_qual = false;
	foreach(lc, joins)
	{
		if (!cg_emit(cg, XPU_OP_MASK_PUSH_TRUE, 0, 0, 0, 0, 0))
			return false;
		pushed++;
		if (!cg_join_depth(cg, lfirst(lc), d++, &pushed))
			return false;
		/* past the mask depth: close them all, the next push starts from r0 */
		while (pushed > XPU_MAX_MASK_DEPTH / 2 && cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
			pushed--;
	}
	while (pushed > 0 && cg_emit(cg, XPU_OP_MASK_POP, 0, 0, 0, 0, 0))
		pushed--;
	return !cg->failed;
}

/*
 * codegen_proj_program: the program whose QUAL stage evaluates quals (see
 * cg_quals; NIL: every row passes) and whose PROJ stage computes, for the
 * rows that pass, exprs[i] into output i; NULL if anything is not
 * compilable.  The program is malloc'ed (the caller frees it).  The type of
 * output i is the register's: XPU_REGS(prog)[XPU_OUTS(prog)[i]]; a float2
 * expression is output as its exact float4 (F2_TO_F4), the type that group
 * keys and aggregate states take (gpu_preagg.c turns results back).
 */
XpuProgram *
codegen_proj_program(const CodegenScan *scan, List *quals, List *exprs)
{
	return codegen_join_program(scan, quals, NIL, exprs);
}

/*
 * codegen_join_program: codegen_proj_program with a JOIN stage between the
 * quals and the outputs: the depths of joins (CodegenJoin), in order.  A
 * row passes when it passes the quals and every depth (INNER and SEMI: its
 * inner row is found and the join quals hold; ANTI: none is found); exprs
 * may read the inner columns of every depth (pay_vars).
 */
XpuProgram *
codegen_join_program(const CodegenScan *scan, List *quals, List *joins, List *exprs)
{
	Cg		   *cg = cg_create(scan);
	ListCell   *lc;
	bool		ok;

	if (cg == NULL)
		return NULL;
	cg->later = exprs;
	ok = cg_quals(cg, quals, exprs) && cg_joins(cg, quals, joins);
	if (ok)
		xpu_begin_stage(cg->b, XPU_STAGE_PROJ);
	foreach(lc, exprs)
	{
		int			r;

		if (!ok)
			break;
		ok = cg_load_vars(cg, lfirst(lc)) &&
			(r = cg_expr(cg, lfirst(lc))) >= 0 &&
			(cg->rtype[r] != XPU_T_FLOAT2 || (r = cg_widen(cg, r, XPU_T_FLOAT4)) >= 0) &&
			xpu_add_output(cg->b, r) >= 0;
	}
	return cg_finish(cg, ok);
}

/*
 * codegen_expr_supported: can expr (a qual of the scan) be compiled?
 */
bool
codegen_expr_supported(const CodegenScan *scan, Expr *expr)
{
	XpuProgram *prog = codegen_qual_program(scan, list_make1(expr));

	free(prog);
	return prog != NULL;
}

/*
 * codegen_why_not: why the last codegen_qual_program, codegen_proj_program
 * or codegen_expr_supported of this backend compiled nothing (or nothing
 * but a reason, after one that compiled).  expr points into the caller's
 * trees: the caller reads it before those are freed.
 */
const CodegenWhyNot *
codegen_why_not(void)
{
	return &cg_last_why;
}

/*
 * codegen_used_timezone: does the last program this backend compiled hold
 * the session's UTC offset (a timestamptz computation), and which one (in
 * *offset, PostgreSQL's sign)?  A program that does is right only under a
 * time zone of that offset.
 */
bool
codegen_used_timezone(int64 *offset)
{
	*offset = cg_last_tz_offset;
	return cg_last_used_tz;
}

/* codegen_disassemble: the program in readable form (palloc'ed) */
char *
codegen_disassemble(const XpuProgram *prog)
{
	size_t		len = xpu_program_disassemble(prog, NULL, 0) + 1;
	char	   *buf = palloc(len);

	xpu_program_disassemble(prog, buf, len);
	return buf;
}
