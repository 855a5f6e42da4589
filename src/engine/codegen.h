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

/* in codegen.c */
extern bool codegen_expr_supported(const CodegenScan *scan, Expr *expr);
extern XpuProgram *codegen_qual_program(const CodegenScan *scan, List *quals);
extern XpuProgram *codegen_proj_program(const CodegenScan *scan, List *quals,
										List *exprs);
extern char *codegen_disassemble(const XpuProgram *prog);
extern const CodegenWhyNot *codegen_why_not(void);
extern bool codegen_used_timezone(int64 *offset);
extern Oid	codegen_float2_type(void);

#endif							/* PG_WARP_CODEGEN_H */
