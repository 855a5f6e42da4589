/*-------------------------------------------------------------------------
 *
 * codegen.h
 *		Compiling PostgreSQL expressions into xPU programs (codegen.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_CODEGEN_H
#define PG_WARP_CODEGEN_H

#include "nodes/pg_list.h"
#include "xpu/xpu_program.h"

/*
 * How a scan supplies the columns of its relation to a program: for a
 * column attno of type typid, the hook returns true with the chunk column
 * index and the Arrow layout (and a decimal's scale, a varchar(n)'s n: the
 * XpuColumn's scale) the engine loads exactly
 * as PostgreSQL converts it, or false when the engine cannot load it.
 */
typedef bool (*CodegenColumnHook) (void *arg, AttrNumber attno, Oid typid,
								   int *col_index, XpuColKind *kind, int *scale);

typedef struct CodegenScan
{
	Index		scanrelid;		/* varno of the scan relation's Vars */
	CodegenColumnHook column;
	void	   *column_arg;
	bool		every_row;		/* PostgreSQL's reader converts every row's
								 * columns (arrow_fdw): a program with quals
								 * loads, for every row, the columns of its
								 * expressions and of preload whose load can
								 * fail (cg_load_checked) */
	List	   *preload;		/* Vars of columns the program does not
								 * otherwise read, or NIL */
} CodegenScan;

/*
 * Why a compilation failed: the innermost expression that does not compile
 * (a node of the caller's trees; NULL where the reason is the whole
 * program's) and why, in a few words (codegen_why_not).
 */
typedef struct CodegenWhyNot
{
	Expr	   *expr;
	char		why[160];
} CodegenWhyNot;

/*
 * One depth of a join (GpuJoin) in a program: the inner relation relid's
 * columns come from its inner table, whose payload column i holds
 * pay_vars[i] (Vars of relid); outer_keys (1 to 3 expressions over the
 * scan relation and the depths before) are probed against its keys;
 * jointype is XPU_JOIN_INNER, XPU_JOIN_LEFT, XPU_JOIN_SEMI or
 * XPU_JOIN_ANTI (xpu/xpu_join.h); quals: an inner join's quals beyond the
 * keys, or the WHERE clauses over a left join's row (its inner columns NULL
 * where it found no inner row).
 */
typedef struct CodegenJoin
{
	Index		relid;
	int			jointype;
	List	   *outer_keys;
	List	   *quals;
	List	   *pay_vars;
	bool		each;			/* the inner keys may repeat: probe every match */
} CodegenJoin;

/* in codegen.c */
extern bool codegen_expr_supported(const CodegenScan *scan, Expr *expr);
extern XpuProgram *codegen_qual_program(const CodegenScan *scan, List *quals);
extern XpuProgram *codegen_proj_program(const CodegenScan *scan, List *quals,
										List *exprs);
extern XpuProgram *codegen_join_program(const CodegenScan *scan, List *quals,
										List *joins, List *exprs);
extern char *codegen_disassemble(const XpuProgram *prog);
extern const CodegenWhyNot *codegen_why_not(void);
extern bool codegen_used_timezone(int64 *offset);
extern Oid	codegen_float2_type(void);

/* in codegen_types.c */
extern XpuType codegen_builtin_type(Oid typid);
extern XpuType codegen_value_type(Oid typid, int32 typmod, int *scale);
extern int	codegen_numeric_typmod_scale(int32 typmod);
extern bool codegen_numeric_value(Datum d, __int128 *v, int *scale);
extern Datum codegen_numeric_datum(__int128 v, int scale);

#endif							/* PG_WARP_CODEGEN_H */
