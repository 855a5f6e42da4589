/*
 * test_xpu.c
 *		Unit tests of the xPU programs and interpreter (src/xpu): the
 *		validator refuses malformed programs (and never crashes on mutated
 *		ones), conditional evaluation under the active mask (errors only for
 *		active rows; AND, OR, CASE, COALESCE lowered onto masks), SQL's
 *		three-valued logic, Arrow loads, the disassembler, and the per-row
 *		(GPU) and per-tile (CPU) forms giving identical results.  The value
 *		semantics of each opcode are compared with PostgreSQL itself by
 *		test/python/test_xpu_oracle.py through xpu_harness.
 */
#include <stdio.h>

#include "tap.h"
#include "xpu_testlib.h"
#include "xpu_interp.h"

static char errbuf[256];

/* ---------------------------------------------------------------- validator */

/* a small valid program: r0 = (c0 int4) > 5 as the qual, output r0 + 1 */
static XpuProgram *
sample_program(void)
{
	XpuBuilder *b = xpu_builder_create();
	int64_t		five = 5, one = 1;
	XpuProgram *p;
	int			q = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int			y = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &five, 8));
	xpu_add_instr(b, XPU_OP_GT_INT, q, x, k, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &one, 8));
	xpu_add_instr(b, XPU_OP_ADD_I4, y, x, k, 0, 0);
	xpu_add_output(b, y);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/* a copy of prog with instruction pc replaced; is it refused? */
static int
refuses_instr(const XpuProgram *prog, int pc, XpuInstr in)
{
	XpuProgram *c = (XpuProgram *) malloc(prog->total_len);
	int			ok;

	memcpy(c, prog, prog->total_len);
	((XpuInstr *) ((char *) c + c->instrs_off))[pc] = in;
	ok = xpu_program_validate(c, c->total_len, errbuf, sizeof(errbuf));
	free(c);
	return !ok;
}

/* a copy of prog with the header patched by fn; is it refused? */
static int
refuses_header(const XpuProgram *prog, void (*fn) (XpuProgram *), size_t len)
{
	XpuProgram *c = (XpuProgram *) malloc(prog->total_len);
	int			ok;

	memcpy(c, prog, prog->total_len);
	if (fn)
		fn(c);
	ok = xpu_program_validate(c, len, errbuf, sizeof(errbuf));
	free(c);
	return !ok;
}

static void bad_magic(XpuProgram *p) { p->magic ^= 1; }
static void bad_regs(XpuProgram *p) { p->n_regs = 2; }
static void bad_consts(XpuProgram *p) { p->consts_len = p->total_len; }
/* instruction 2 (the qual's comparison) made a GROUP / an AGG stage, reserved */
static void bad_stage(XpuProgram *p) { p->stage_start[XPU_STAGE_JOIN] = p->stage_start[XPU_STAGE_GROUP] = 2; }
static void bad_agg_stage(XpuProgram *p)
{
	p->stage_start[XPU_STAGE_JOIN] = p->stage_start[XPU_STAGE_GROUP] = p->stage_start[XPU_STAGE_AGG] = 2;
}
static void bad_regtype(XpuProgram *p) { ((XpuReg *) ((char *) p + p->regs_off))[1].type = 99; }
static void bad_qualtype(XpuProgram *p) { ((XpuReg *) ((char *) p + p->regs_off))[0].type = XPU_T_INT4; }
static void bad_output(XpuProgram *p) { ((uint8_t *) p + p->outs_off)[0] = 200; }
static void
bad_col(XpuProgram *p)
{
	XpuColumn  *c = (XpuColumn *) ((char *) p + p->cols_off);

	c[0].kind = XPU_COL_FLOAT64;
	c[0].width = 8;				/* the kind's width: the register is what does not fit */
}
static void bad_width(XpuProgram *p) { ((XpuColumn *) ((char *) p + p->cols_off))[0].width = 0; }

static void
test_validator(void)
{
	XpuProgram *p = sample_program();
	const XpuInstr *ins;
	XpuInstr	in;

	if (!tap_ok(p != NULL, "the sample program builds and validates"))
	{
		tap_diag("%s", errbuf);
		return;
	}
	ins = XPU_INSTRS(p);
	tap_ok(!refuses_header(p, NULL, p->total_len), "an unchanged copy is accepted");
	tap_ok(refuses_header(p, NULL, p->total_len - 16), "a truncated program is refused");
	tap_ok(refuses_header(p, NULL, 8), "a program shorter than its header is refused");
	tap_ok(refuses_header(p, bad_magic, p->total_len), "a bad magic number is refused");
	tap_ok(refuses_header(p, bad_regs, p->total_len), "instructions naming registers >= n_regs are refused");
	tap_ok(refuses_header(p, bad_consts, p->total_len), "a constants pool beyond the program is refused");
	tap_ok(refuses_header(p, bad_stage, p->total_len), "a non-empty GROUP stage is refused");
	tap_ok(refuses_header(p, bad_agg_stage, p->total_len), "a non-empty AGG stage is refused");
	tap_ok(refuses_header(p, bad_regtype, p->total_len), "an unknown register type is refused");
	tap_ok(refuses_header(p, bad_qualtype, p->total_len), "a qual whose r0 is not bool is refused");
	tap_ok(refuses_header(p, bad_output, p->total_len), "an output naming a missing register is refused");
	tap_ok(refuses_header(p, bad_col, p->total_len), "a LOAD_COL whose column kind does not fit its register is refused");
	tap_ok(XPU_COLS(p)[0].width == xpu_col_kind_width(XPU_COLS(p)[0].kind) &&
		   XPU_COLS(p)[0].width > 0, "the builder sets a column's value width from its kind");
	tap_ok(refuses_header(p, bad_width, p->total_len), "a column whose width is not its kind's is refused");

	in = ins[4];				/* ADD_I4 y, x, k */
	in.op = XPU_N_OPCODES;
	tap_ok(refuses_instr(p, 4, in), "an unknown opcode is refused");
	in = ins[4];
	in.a = 0;					/* the bool register */
	tap_ok(refuses_instr(p, 4, in), "an int4 opcode on a bool register is refused");
	in = ins[4];
	in.dst = 7;
	tap_ok(refuses_instr(p, 4, in), "a destination register >= n_regs is refused");
	in = ins[4];
	in.c = 2;
	tap_ok(refuses_instr(p, 4, in), "a set unused argument field is refused");
	in = ins[3];				/* CONST_INT k */
	in.imm = (int32_t) p->consts_len;
	tap_ok(refuses_instr(p, 3, in), "a constant offset past the pool is refused");
	in.imm = 4;
	tap_ok(refuses_instr(p, 3, in), "a misaligned constant offset is refused");
	in.imm = -8;
	tap_ok(refuses_instr(p, 3, in), "a negative constant offset is refused");
	memset(&in, 0, sizeof(in));
	in.op = XPU_OP_MASK_POP;
	tap_ok(refuses_instr(p, 4, in), "MASK_POP without a push is refused");
	in.op = XPU_OP_MASK_PUSH_TRUE;
	tap_ok(refuses_instr(p, 4, in), "a stage that ends with a pushed mask is refused");
	in = ins[0];
	in.imm = 3;
	tap_ok(refuses_instr(p, 0, in), "LOAD_COL of a missing column descriptor is refused");
	in = ins[2];				/* GT_INT */
	in.flags = 1;
	tap_ok(refuses_instr(p, 2, in), "reserved instruction bits are refused");
	free(p);
}

/* numeric scale rules and immediates of date opcodes */
static void
test_validator_types(void)
{
	TOp			o;
	XpuProgram *p;

	memset(&o, 0, sizeof(o));
	o.op = XPU_OP_ADD_NUM;
	o.rt = XPU_T_NUMERIC;
	o.rs = 1;
	o.nargs = 2;
	o.at[0] = o.at[1] = XPU_T_NUMERIC;
	o.as[0] = 2;
	o.as[1] = 1;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "ADD_NUM with a result scale below the arguments' is refused (%s)", errbuf);
	free(p);
	o.op = XPU_OP_MUL_NUM;
	o.rs = 3;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p != NULL, "MUL_NUM with the sum of the scales is accepted");
	free(p);
	memset(&o, 0, sizeof(o));
	o.op = XPU_OP_DATE_PART_TS;
	o.rt = XPU_T_FLOAT8;
	o.nargs = 1;
	o.at[0] = XPU_T_TIMESTAMP;
	o.imm = XPU_DF_N_FIELDS;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "date_part of an unknown field is refused");
	free(p);
	o.op = XPU_OP_DATE_TRUNC_TS;
	o.rt = XPU_T_TIMESTAMP;
	o.imm = XPU_DF_DOW;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "date_trunc of a field that is no unit is refused");
	free(p);
	o.op = XPU_OP_EXTRACT_TS;
	o.rt = XPU_T_NUMERIC;
	o.imm = XPU_DF_SECOND;
	o.rs = 0;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "extract(second) at a scale other than 6 is refused");
	free(p);
	o.rs = 6;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p != NULL, "extract(second) at scale 6 is accepted");
	free(p);
	o.imm = XPU_DF_JULIAN;
	o.rs = 0;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "extract(julian from timestamp) is refused");
	free(p);
	o.op = XPU_OP_EXTRACT_DATE;
	o.at[0] = XPU_T_DATE;
	o.imm = XPU_DF_HOUR;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "extract(hour from date) is refused");
	free(p);
	o.at[0] = XPU_T_TIMESTAMP;
	o.rs = 0;
	o.op = XPU_OP_LT_INT;
	o.rt = XPU_T_BOOL;
	o.nargs = 2;
	o.at[1] = XPU_T_DATE;
	o.imm = 0;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tap_ok(p == NULL, "comparing a timestamp with a date register is refused");
	free(p);
}

/* mutate valid programs at random: refused, or run without a fault */
static void
test_validator_fuzz(void)
{
	XpuProgram *p = sample_program();
	TVal		vals[40];
	TCol		col;
	int			i, accepted = 0, refused = 0;

	srand(11);
	for (i = 0; i < 40; i++)
	{
		memset(&vals[i], 0, sizeof(TVal));
		vals[i].i = i * 3 - 50;
		vals[i].null = (i % 7 == 0);
	}
	tcol_build(&col, XPU_T_INT4, 0, vals, 40);
	for (i = 0; i < 20000; i++)
	{
		XpuProgram *c = (XpuProgram *) malloc(p->total_len);
		int			n = 1 + rand() % 3, k;

		memcpy(c, p, p->total_len);
		for (k = 0; k < n; k++)
			((uint8_t *) c)[rand() % p->total_len] ^= (uint8_t) (1 << (rand() % 8));
		if (xpu_program_validate(c, p->total_len, errbuf, sizeof(errbuf)))
		{
			TRun		r;

			trun_exec(&r, c, &col, 1, 40);
			trun_free(&r);
			accepted++;
		}
		else
			refused++;
		free(c);
	}
	tcol_free(&col);
	tap_ok(refused > 0 && accepted > 0,
		   "20000 mutated programs: %d refused, %d accepted and run without a fault",
		   refused, accepted);
	free(p);
}

/* ---------------------------------------------------------------- masks */

/* a new int4 register holding constant v */
static int
cint(XpuBuilder *b, int64_t v)
{
	int			r = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_add_instr(b, XPU_OP_CONST_INT, r, 0, 0, 0, xpu_add_const(b, &v, 8));
	return r;
}

/* int4 test values; N_NULL stands for NULL */
#define N_NULL	INT64_MIN

static void
int_col(TCol *col, const int64_t *v, int n)
{
	TVal		vals[64];
	int			i;

	memset(vals, 0, sizeof(vals));
	for (i = 0; i < n; i++)
	{
		vals[i].null = (v[i] == N_NULL);
		vals[i].i = v[i];
	}
	tcol_build(col, XPU_T_INT4, 0, vals, n);
}

/* the qual x <> 0 AND 10 / x > 1 (masked: the division only where needed) */
static XpuProgram *
and_program(int masked)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int			q = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			ne = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			gt = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			quo = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_NE_INT, ne, x, cint(b, 0), 0, 0);
	if (masked)
		xpu_add_instr(b, XPU_OP_MASK_PUSH_NOT_FALSE, 0, ne, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_DIV_I4, quo, cint(b, 10), x, 0, 0);
	xpu_add_instr(b, XPU_OP_GT_INT, gt, quo, cint(b, 1), 0, 0);
	if (masked)
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_AND, q, ne, gt, 0, 0);
	xpu_add_output(b, x);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/* CASE WHEN x > 0 THEN 100 / x ELSE -x END, projected */
static XpuProgram *
case_program(void)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			c = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			t = xpu_add_reg(b, XPU_T_INT4, 0);
	int			e = xpu_add_reg(b, XPU_T_INT4, 0);
	int			d = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_GT_INT, c, x, cint(b, 0), 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, c, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_DIV_I4, t, cint(b, 100), x, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_NOT_TRUE, 0, c, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_NEG_I4, e, x, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_SELECT, d, c, t, e, 0);
	xpu_add_output(b, d);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/* COALESCE(x, 10 / y) and x = 0 OR 10 / x > 1 (OR's mask), projected */
static XpuProgram *
coalesce_or_program(void)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			y = xpu_add_reg(b, XPU_T_INT4, 0);
	int			q = xpu_add_reg(b, XPU_T_INT4, 0);
	int			co = xpu_add_reg(b, XPU_T_INT4, 0);
	int			eq = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			gt = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			q2 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			or = xpu_add_reg(b, XPU_T_BOOL, 0);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_add_instr(b, XPU_OP_LOAD_COL, y, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_NULL, 0, x, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_DIV_I4, q, cint(b, 10), y, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_COALESCE, co, x, q, 0, 0);
	xpu_add_instr(b, XPU_OP_EQ_INT, eq, x, cint(b, 0), 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_NOT_TRUE, 0, eq, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_DIV_I4, q2, cint(b, 10), x, 0, 0);
	xpu_add_instr(b, XPU_OP_GT_INT, gt, q2, cint(b, 1), 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_OR, or, eq, gt, 0, 0);
	xpu_add_output(b, co);
	xpu_add_output(b, or);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/* the value (or N_NULL) of output k of row i in form f */
static int64_t
outv(const TRun *r, int f, int k, int i)
{
	int64_t		o = k * r->nrows + i;

	return r->res[f].nulls[o] ? N_NULL : r->res[f].values[o].i;
}

static void
test_masks(void)
{
	static const int64_t xs[] = {0, 5, 20, N_NULL, -3, 10, 1};
	static const uint8_t want_mask[] = {0, 1, 0, 0, 0, 0, 1};
	static const int64_t cx[] = {0, 4, -4, N_NULL, 200};
	static const int64_t want_case[] = {0, 25, 4, N_NULL, 0};
	static const int64_t cox[] = {3, N_NULL, 0, N_NULL, 20};
	static const int64_t coy[] = {0, 5, 0, N_NULL, 0};
	static const int64_t want_co[] = {3, 2, 0, N_NULL, 20};
	static const int64_t want_or[] = {1, N_NULL, 1, N_NULL, 0};
	XpuProgram *p;
	TCol		cols[2];
	TRun		r;
	int			f, i, ok;

	int_col(&cols[0], xs, 7);
	p = and_program(1);
	trun_exec(&r, p, cols, 1, 7);
	for (f = 0; f < 2; f++)
	{
		ok = r.err[f].code == XPU_OK && memcmp(r.res[f].mask, want_mask, 7) == 0;
		tap_ok(ok, "%s: x <> 0 AND 10 / x > 1 filters without dividing by zero",
			   f ? "per tile" : "per row");
	}
	trun_free(&r);
	free(p);
	p = and_program(0);
	trun_exec(&r, p, cols, 1, 7);
	tap_ok(r.err[0].code == XPU_ERR_DIVISION_BY_ZERO && r.err[1].code == XPU_ERR_DIVISION_BY_ZERO,
		   "without the mask the same program divides by zero (%s)", r.err[1].message);
	tap_ok(strcmp(r.err[1].file, "xpu_int.h") == 0 && r.err[1].line > 0,
		   "the error names its source file and line (%s:%d)", r.err[1].file, r.err[1].line);
	trun_free(&r);
	free(p);
	tcol_free(&cols[0]);

	int_col(&cols[0], cx, 5);
	p = case_program();
	trun_exec(&r, p, cols, 1, 5);
	for (f = 0; f < 2; f++)
	{
		for (ok = r.err[f].code == XPU_OK, i = 0; i < 5; i++)
			ok = ok && outv(&r, f, 0, i) == want_case[i];
		tap_ok(ok, "%s: CASE WHEN x > 0 THEN 100 / x ELSE -x END", f ? "per tile" : "per row");
	}
	trun_free(&r);
	tcol_free(&cols[0]);
	{
		static const int64_t bad[] = {5, -2147483648LL, 0};

		int_col(&cols[0], bad, 3);
		trun_exec(&r, p, cols, 1, 3);
		tap_ok(r.err[0].code == XPU_ERR_OUT_OF_RANGE && r.err[1].code == XPU_ERR_OUT_OF_RANGE,
			   "an active ELSE branch raises its error (-INT_MIN)");
		trun_free(&r);
		tcol_free(&cols[0]);
	}
	free(p);

	int_col(&cols[0], cox, 5);
	int_col(&cols[1], coy, 5);
	p = coalesce_or_program();
	trun_exec(&r, p, cols, 2, 5);
	for (f = 0; f < 2; f++)
	{
		for (ok = r.err[f].code == XPU_OK, i = 0; i < 5; i++)
			ok = ok && outv(&r, f, 0, i) == want_co[i] && outv(&r, f, 1, i) == want_or[i];
		tap_ok(ok, "%s: COALESCE(x, 10 / y) and x = 0 OR 10 / x > 1 evaluate only what they need",
			   f ? "per tile" : "per row");
	}
	trun_free(&r);
	free(p);
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
}

/* ---------------------------------------------------------------- MOVE folding */

/*
 * The qual of codegen's form (each conjunct's value moved into r0, the
 * later ones under "r0 is true"): x >= 1 AND x <= 3 AND y < 25, then
 * outputs x * y and, with keep_out, also the third conjunct's temporary;
 * with fold, xpu_builder_fold_moves ran (its count in *folded).
 */
static XpuProgram *
conj_program(int fold, int keep_out, int *folded)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	int			q = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			y = xpu_add_reg(b, XPU_T_INT4, 0);
	int			c1 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			c2 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			c3 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			m = xpu_add_reg(b, XPU_T_INT4, 0);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	xpu_add_instr(b, XPU_OP_GE_INT, c1, x, cint(b, 1), 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, q, c1, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, q, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_LE_INT, c2, x, cint(b, 3), 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, q, c2, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, q, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_LOAD_COL, y, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_INT32, 0));
	xpu_add_instr(b, XPU_OP_LT_INT, c3, y, cint(b, 25), 0, 0);
	xpu_add_instr(b, XPU_OP_MOVE, q, c3, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_MUL_I4, m, x, y, 0, 0);
	xpu_add_output(b, m);
	if (keep_out)
		xpu_add_output(b, c3);
	*folded = fold ? xpu_builder_fold_moves(b) : 0;
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/* one MOVE that must stay: instructions of the form variant (see below) */
static int
fold_refused(int variant)
{
	XpuBuilder *b = xpu_builder_create();
	int			q = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			t = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			u = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			n;

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_QUAL);
	switch (variant)
	{
		case 0:				/* the temporary is read again later */
			xpu_add_instr(b, XPU_OP_GT_INT, t, x, cint(b, 0), 0, 0);
			xpu_add_instr(b, XPU_OP_MOVE, q, t, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_AND, u, q, t, 0, 0);
			break;
		case 1:				/* the instruction reads the destination */
			xpu_add_instr(b, XPU_OP_GT_INT, t, x, cint(b, 0), 0, 0);
			xpu_add_instr(b, XPU_OP_MOVE, q, t, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_AND, u, q, t, 0, 0);
			xpu_add_instr(b, XPU_OP_MOVE, q, u, 0, 0, 0);
			break;
		case 2:				/* a mask instruction comes between */
			xpu_add_instr(b, XPU_OP_GT_INT, t, x, cint(b, 0), 0, 0);
			xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, t, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_MOVE, q, t, 0, 0, 0);
			break;
		case 3:				/* the temporary is written twice */
			xpu_add_instr(b, XPU_OP_GT_INT, t, x, cint(b, 0), 0, 0);
			xpu_add_instr(b, XPU_OP_LT_INT, t, x, cint(b, 9), 0, 0);
			xpu_add_instr(b, XPU_OP_MOVE, q, t, 0, 0, 0);
			break;
		default:			/* the MOVE starts its stage */
			xpu_add_instr(b, XPU_OP_GT_INT, t, x, cint(b, 0), 0, 0);
			xpu_begin_stage(b, XPU_STAGE_PROJ);
			xpu_add_instr(b, XPU_OP_MOVE, q, t, 0, 0, 0);
			break;
	}
	xpu_add_output(b, x);
	n = xpu_builder_fold_moves(b);
	xpu_builder_free(b);
	return n == 0;
}

static void
test_fold_moves(void)
{
	static const int64_t xs[] = {0, 1, 2, 3, 4, N_NULL, 3, 1, -2147483648LL, 2147483647LL, 2};
	static const int64_t ys[] = {5, 24, 25, N_NULL, 1, 1, -7, 2147483647LL, 0, 0, 46341};
	XpuProgram *plain, *folded;
	TCol		cols[2];
	TRun		r1, r2;
	int			n, n2, ok = 1;

	plain = conj_program(0, 0, &n);
	folded = conj_program(1, 0, &n);
	tap_ok(plain && folded && n == 3 && folded->n_instrs == plain->n_instrs - 3,
		   "the three MOVEs into r0 fold (%d instructions -> %d)",
		   plain ? plain->n_instrs : -1, folded ? folded->n_instrs : -1);
	tap_ok(folded && folded->stage_start[XPU_STAGE_PROJ] == plain->stage_start[XPU_STAGE_PROJ] - 3 &&
		   folded->stage_start[XPU_STAGE_QUAL] == plain->stage_start[XPU_STAGE_QUAL],
		   "stage starts follow the removed instructions");
	int_col(&cols[0], xs, 11);
	int_col(&cols[1], ys, 11);
	trun_exec(&r1, plain, cols, 2, 11);
	trun_exec(&r2, folded, cols, 2, 11);
	for (int f = 0; f < 2; f++)
	{
		ok = ok && r1.err[f].code == r2.err[f].code &&
			memcmp(r1.res[f].mask, r2.res[f].mask, 11) == 0;
		for (int i = 0; i < 11; i++)
			ok = ok && outv(&r1, f, 0, i) == outv(&r2, f, 0, i);
	}
	tap_ok(ok && r1.err[0].code == XPU_OK && r1.res[0].mask[1] && !r1.res[0].mask[2] &&
		   !r1.res[0].mask[5] && r1.res[0].mask[6] && outv(&r1, 0, 0, 6) == -21,
		   "folded and plain programs give the same rows and values in both forms");
	trun_free(&r1);
	trun_free(&r2);
	free(plain);
	free(folded);
	folded = conj_program(1, 1, &n2);
	tap_ok(folded && n2 == 2, "a temporary that is an output keeps its MOVE (%d folded)", n2);
	free(folded);
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
	for (int v = 0; v <= 4; v++)
		tap_ok(fold_refused(v), "MOVE kept: case %d", v);
}

/* ---------------------------------------------------------------- hoisted constants */

/*
 * run prog over the chunk as the GPU's aggregate kernel does with hoisted
 * constants: the first n_hoisted instructions once, then every row from
 * the null flags they left; the mask and output 0 into mask/out/onull
 */
static int
run_hoisted(const XpuProgram *prog, const TCol *cols, int ncols, int nrows,
			uint8_t *mask, int64_t *out)
{
	XpuColumnData cd[4];
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS], null0[XPU_MAX_REGS];
	const uint16_t *st = prog->stage_start;
	XpuChunk	chunk;
	XpuError	err;

	memset(&err, 0, sizeof(err));
	memset(cd, 0, sizeof(cd));
	memset(&chunk, 0, sizeof(chunk));
	chunk.nrows = nrows;
	chunk.ncols = ncols;
	chunk.cols = cd;
	for (int k = 0; k < ncols; k++)
	{
		cd[k].validity = cols[k].validity;
		cd[k].values = cols[k].values;
		cd[k].data = cols[k].data;
	}
	for (int k = 0; k < prog->n_regs; k++)
		nulls[k] = 1;
	xpu_row_run(prog, 0, prog->n_hoisted, &chunk, cd, 0, regs, nulls, 1, &err);
	memcpy(null0, nulls, sizeof(null0));
	for (int row = 0; row < nrows && err.code == XPU_OK; row++)
	{
		int			reg = XPU_OUTS(prog)[0];

		memcpy(nulls, null0, sizeof(nulls));
		xpu_row_run(prog, prog->n_hoisted, st[XPU_STAGE_GROUP], &chunk, cd, row, regs, nulls,
					1, &err);
		mask[row] = !xpu_program_filters(prog) || XPU_TRUE(&regs[0], nulls[0]);
		if (mask[row])
			xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], &chunk, cd, row, regs,
						nulls, 1, &err);
		out[row] = !mask[row] || nulls[reg] ? N_NULL : regs[reg].i;
	}
	return err.code;
}

/* do prog and its hoisted form give the same rows, output 0 and error */
static int
hoist_agrees(const XpuProgram *prog, const XpuProgram *h, const TCol *cols, int ncols,
			 int nrows)
{
	TRun		r;
	uint8_t		mask[64];
	int64_t		out[64];
	int			code, ok;

	trun_exec(&r, prog, cols, ncols, nrows);
	code = run_hoisted(h, cols, ncols, nrows, mask, out);
	ok = code == r.err[0].code;
	for (int i = 0; ok && code == XPU_OK && i < nrows; i++)
		ok = mask[i] == r.res[0].mask[i] && out[i] == outv(&r, 0, 0, i);
	trun_free(&r);
	return ok;
}

/* a constant that must stay where it is (variant below), in PROJ */
static int
hoist_refused(int variant)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p, *h;
	int			x = xpu_add_reg(b, XPU_T_INT4, 0);
	int			c = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int			y = xpu_add_reg(b, XPU_T_INT4, 0);
	int64_t		seven = 7;
	int32_t		off = xpu_add_const(b, &seven, 8);

	xpu_add_instr(b, XPU_OP_LOAD_COL, x, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_GT_INT, c, x, cint(b, 0), 0, 0);
	switch (variant)
	{
		case 0:				/* set under a mask, read after it: NULL where not set */
			xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, c, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, off);
			xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_ADD_I4, y, x, k, 0, 0);
			xpu_add_output(b, y);
			break;
		case 1:				/* an output set under a mask */
			xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, c, 0, 0, 0);
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, off);
			xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
			xpu_add_output(b, k);
			break;
		case 2:				/* read before it is set */
			xpu_add_instr(b, XPU_OP_ADD_I4, y, x, k, 0, 0);
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, off);
			xpu_add_output(b, y);
			break;
		default:			/* written again */
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, off);
			xpu_add_instr(b, XPU_OP_ADD_I4, y, x, k, 0, 0);
			xpu_add_instr(b, XPU_OP_ADD_I4, k, x, x, 0, 0);
			xpu_add_output(b, y);
			break;
	}
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	h = p ? xpu_program_hoist_consts(p) : NULL;
	/* only the "0" of x > 0 moves */
	{
		int			ok = p != NULL && h != NULL && h->n_hoisted == 1;

		free(p);
		free(h);
		return ok;
	}
}

static void hoist_too_many(XpuProgram *p) { p->n_hoisted = p->stage_start[1] + 1; }
static void hoist_non_const(XpuProgram *p) { p->n_hoisted = 1; }

static void
test_hoist_consts(void)
{
	static const int64_t xs[] = {0, 1, 2, 3, 4, N_NULL, 3, 1, -2147483648LL, 2147483647LL, 2};
	static const int64_t ys[] = {5, 24, 25, N_NULL, 1, 1, -7, 2147483647LL, 0, 0, 46341};
	static const int64_t cx[] = {0, 4, -4, N_NULL, 200, -2147483647LL};
	static const int64_t cox[] = {3, N_NULL, 0, N_NULL, 20};
	static const int64_t coy[] = {0, 5, 0, N_NULL, 0};
	XpuProgram *p, *h;
	TCol		cols[2];
	int			n;

	p = conj_program(1, 0, &n);
	h = xpu_program_hoist_consts(p);
	tap_ok(h && h->n_hoisted == 3 && h->n_instrs == p->n_instrs &&
		   XPU_INSTRS(h)[0].op == XPU_OP_CONST_INT && XPU_INSTRS(h)[2].op == XPU_OP_CONST_INT &&
		   XPU_INSTRS(h)[3].op == XPU_OP_LOAD_COL &&
		   h->stage_start[XPU_STAGE_QUAL] == p->stage_start[XPU_STAGE_QUAL] + 3 &&
		   h->stage_start[XPU_STAGE_PROJ] == p->stage_start[XPU_STAGE_PROJ],
		   "the qual's three constants move to the front of the load stage");
	int_col(&cols[0], xs, 11);
	int_col(&cols[1], ys, 11);
	tap_ok(h && hoist_agrees(p, h, cols, 2, 11),
		   "run once per thread, they give the plain program's rows and values");
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
	tap_ok(h && refuses_header(h, hoist_too_many, h->total_len) &&
		   refuses_header(p, hoist_non_const, p->total_len),
		   "the validator refuses a hoisted count past the load stage or over a non-constant");
	tap_ok(h && refuses_instr(h, h->n_instrs - 1,
							  (XpuInstr) {XPU_OP_MUL_I4, XPU_INSTRS(h)[0].dst, 0,
								  XPU_INSTRS(h)[h->n_instrs - 1].a,
								  XPU_INSTRS(h)[h->n_instrs - 1].b, 0, 0, 0}),
		   "the validator refuses a hoisted register written again");
	free(p);
	free(h);

	/* constants inside masks that only their own branch reads */
	p = case_program();
	h = xpu_program_hoist_consts(p);
	int_col(&cols[0], cx, 6);
	tap_ok(h && h->n_hoisted == 2 && hoist_agrees(p, h, cols, 1, 6),
		   "CASE: the branch's constant and the condition's hoist, same values and error");
	tcol_free(&cols[0]);
	free(p);
	free(h);
	p = coalesce_or_program();
	h = xpu_program_hoist_consts(p);
	int_col(&cols[0], cox, 5);
	int_col(&cols[1], coy, 5);
	tap_ok(h && h->n_hoisted == 4 && hoist_agrees(p, h, cols, 2, 5),
		   "COALESCE and OR: constants under NULL and NOT TRUE masks hoist, same values");
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
	free(p);
	free(h);
	for (int v = 0; v <= 3; v++)
		tap_ok(hoist_refused(v), "a constant that must stay does: case %d", v);
}

/* ---------------------------------------------------------------- 3VL */

/* run a bool opcode over all (a, b) in {true, false, NULL}^nargs; 3 = NULL */
static void
check_truth_table(XpuOpcode op, const char *name, int nargs, const int *want)
{
	TVal		av[9], bv[9];
	TCol		cols[2];
	TRun		r;
	TOp			o;
	XpuProgram *p;
	int			i, n = nargs == 2 ? 9 : 3, f, ok = 1;

	memset(av, 0, sizeof(av));
	memset(bv, 0, sizeof(bv));
	for (i = 0; i < n; i++)
	{
		int			a = nargs == 2 ? i / 3 : i, b = i % 3;

		av[i].i = (a == 0);		/* order: true, false, NULL */
		av[i].null = (a == 2);
		bv[i].i = (b == 0);
		bv[i].null = (b == 2);
	}
	memset(&o, 0, sizeof(o));
	o.op = op;
	o.rt = XPU_T_BOOL;
	o.nargs = nargs;
	o.at[0] = o.at[1] = XPU_T_BOOL;
	p = top_build(&o, errbuf, sizeof(errbuf));
	tcol_build(&cols[0], XPU_T_BOOL, 0, av, n);
	tcol_build(&cols[1], XPU_T_BOOL, 0, bv, n);
	trun_exec(&r, p, cols, nargs, n);
	for (f = 0; f < 2; f++)
	{
		for (i = 0; i < n; i++)
		{
			int			got = r.res[f].nulls[i] ? 3 : (int) r.res[f].values[i].i;

			ok = ok && got == want[i];
		}
	}
	tap_ok(ok && trun_agree(&r, p, XPU_T_BOOL), "three-valued %s truth table (both forms)", name);
	trun_free(&r);
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
	free(p);
}

static void
test_three_valued_logic(void)
{
	/* rows (a, b): TT TF TN FT FF FN NT NF NN; 3 is NULL */
	static const int and_t[] = {1, 0, 3, 0, 0, 0, 3, 0, 3};
	static const int or_t[] = {1, 1, 1, 1, 0, 3, 1, 3, 3};
	/* rows a: T F N */
	static const int not_t[] = {0, 1, 3};
	static const int is_true[] = {1, 0, 0};
	static const int is_not_true[] = {0, 1, 1};
	static const int is_false[] = {0, 1, 0};
	static const int is_not_false[] = {1, 0, 1};
	static const int is_null[] = {0, 0, 1};

	check_truth_table(XPU_OP_AND, "AND", 2, and_t);
	check_truth_table(XPU_OP_OR, "OR", 2, or_t);
	check_truth_table(XPU_OP_NOT, "NOT", 1, not_t);
	check_truth_table(XPU_OP_IS_TRUE, "IS TRUE", 1, is_true);
	check_truth_table(XPU_OP_IS_NOT_TRUE, "IS NOT TRUE", 1, is_not_true);
	check_truth_table(XPU_OP_IS_FALSE, "IS FALSE", 1, is_false);
	check_truth_table(XPU_OP_IS_NOT_FALSE, "IS NOT FALSE", 1, is_not_false);
	check_truth_table(XPU_OP_IS_NULL, "IS NULL", 1, is_null);
}

/* ---------------------------------------------------------------- both forms */

/* random int4 values with NULLs, zeros and extremes */
static void
random_int_col(TCol *col, int n, unsigned seed)
{
	TVal	   *v = (TVal *) calloc((size_t) n, sizeof(TVal));
	int			i;

	srand(seed);
	for (i = 0; i < n; i++)
	{
		int			k = rand() % 20;

		v[i].null = (k == 0);
		v[i].i = k == 1 ? 0 : k == 2 ? INT32_MAX : k == 3 ? INT32_MIN + 1 : rand() % 2001 - 1000;
	}
	tcol_build(col, XPU_T_INT4, 0, v, n);
	free(v);
}

static void
test_forms_agree(void)
{
	XpuProgram *progs[3] = {and_program(1), case_program(), coalesce_or_program()};
	TCol		cols[2];
	TRun		r;
	int			k, n = 5000;

	random_int_col(&cols[0], n, 1);
	random_int_col(&cols[1], n, 2);
	for (k = 0; k < 3; k++)
	{
		trun_exec(&r, progs[k], cols, 2, n);
		tap_ok(r.err[0].code == r.err[1].code && trun_agree(&r, progs[k], XPU_T_INT4),
			   "program %d over %d random rows (5 tiles): per-row and per-tile forms agree "
			   "(error code %d)", k, n, r.err[0].code);
		trun_free(&r);
		free(progs[k]);
	}
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
}

/*
 * a chunk of several parts (the GPU's launch over several record batches)
 * gives each row the results of the whole chunk in one: parts at odd
 * boundaries (not multiples of 8, so the validity bits are sliced), an empty
 * part in the middle and one at the end
 */
static void
test_chunk_parts(void)
{
	static const int64_t cuts[] = {1, 77, 77, 2501, 4999, 5000};
	XpuProgram *progs[3] = {and_program(1), case_program(), coalesce_or_program()};
	XpuColumnData cd[4];
	XpuChunkPart parts[4];
	XpuChunk	chunk = {100, 1, 4, cd, parts};
	TCol		cols[2];
	TRun		r;
	int			k, n = 5000, ok = 1;
	int64_t		row;

	for (k = 0; k < 4; k++)
		parts[k] = (XpuChunkPart) {k == 0 ? 0 : k == 1 ? 10 : k == 2 ? 10 : 60, &cd[k]};
	for (row = 0; row < 100; row++)
	{
		int64_t		in = row;
		const XpuColumnData *c = xpu_chunk_part(&chunk, &in);
		int			want = row < 10 ? 0 : row < 60 ? 2 : 3;

		ok &= c == &cd[want] && in == row - parts[want].first_row;
	}
	tap_ok(ok, "xpu_chunk_part finds each row's part, past an empty one");
	random_int_col(&cols[0], n, 1);
	random_int_col(&cols[1], n, 2);
	for (k = 0; k < 3; k++)
	{
		trun_exec_parts(&r, progs[k], cols, 2, n, cuts, 6);
		tap_ok(r.err[0].code == r.err[1].code && (k == 2 || r.err[1].code == XPU_OK) &&
			   trun_agree(&r, progs[k], XPU_T_INT4),
			   "program %d over %d rows in 7 parts (per row) and in one chunk (per tile) agree "
			   "(error code %d, %d)", k, n, r.err[0].code, r.err[1].code);
		trun_free(&r);
		free(progs[k]);
	}
	tcol_free(&cols[0]);
	tcol_free(&cols[1]);
}

/* ---------------------------------------------------------------- loads */

/* load one column of kind/scale into a register of type t; run both forms */
static void
load_run(TRun *r, XpuColKind kind, XpuType t, int scale, const XpuColumnData *cd, int n)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	XpuChunk	chunk;
	int			d = xpu_add_reg(b, t, scale);
	void	   *ws;
	int			f;

	xpu_add_instr(b, XPU_OP_LOAD_COL, d, 0, 0, 0, xpu_add_column(b, 0, kind, scale));
	xpu_add_output(b, d);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	memset(&chunk, 0, sizeof(chunk));
	chunk.nrows = n;
	chunk.ncols = 1;
	chunk.n_parts = 0;
	chunk.parts = NULL;
	chunk.cols = cd;
	r->nrows = n;
	ws = aligned_alloc(16, xpu_cpu_workspace_size(p));
	for (f = 0; f < 2; f++)
	{
		memset(&r->err[f], 0, sizeof(XpuError));
		r->res[f].nrows = n;
		r->res[f].mask = (uint8_t *) calloc((size_t) n, 1);
		r->res[f].values = (XpuValue *) calloc((size_t) n, sizeof(XpuValue));
		r->res[f].nulls = (uint8_t *) calloc((size_t) n, 1);
	}
	xpu_row_exec(p, &chunk, &r->res[0], &r->err[0]);
	xpu_cpu_exec(p, &chunk, &r->res[1], ws, &r->err[1]);
	free(ws);
	free(p);
}

static void
test_loads(void)
{
	static const int32_t dates[] = {0, 10957, -719528, 1};
	static const int64_t ts_ms[] = {0, 946684800000LL, -1};
	static const int64_t ts_ns[] = {946684800000001000LL, 1};
	static const int64_t ts_inf[] = {INT64_MAX, INT64_MIN};
	static const int32_t date_inf[] = {INT32_MAX, INT32_MIN};
	static const uint8_t valid[] = {0x0d};	/* rows 0, 2, 3 */
	static const int32_t offs[] = {0, 1, 3, 3, 7, 9};
	static const char data[] = "a\xc3\xa9" "abcdzz";
	__int128	dec[2] = {-12345, (__int128) ((unsigned __int128) 1 << 127)};
	XpuColumnData cd;
	TRun		r;

	memset(&cd, 0, sizeof(cd));
	cd.values = dates;
	load_run(&r, XPU_COL_DATE32, XPU_T_DATE, 0, &cd, 4);
	tap_ok(r.err[1].code == 0 && r.res[1].values[0].i == -10957 && r.res[1].values[1].i == 0 &&
		   r.res[1].values[2].i == -730485 && r.res[0].values[2].i == -730485,
		   "date32 loads as days since 2000-01-01");
	trun_free(&r);
	cd.values = ts_ms;
	load_run(&r, XPU_COL_TIMESTAMP_MS, XPU_T_TIMESTAMP, 0, &cd, 3);
	tap_ok(r.err[1].code == 0 && r.res[1].values[0].i == -946684800000000LL &&
		   r.res[1].values[1].i == 0 && r.res[1].values[2].i == -946684800001000LL,
		   "timestamp[ms] loads as microseconds since 2000-01-01");
	trun_free(&r);
	cd.values = ts_ns;
	load_run(&r, XPU_COL_TIMESTAMP_NS, XPU_T_TIMESTAMP, 0, &cd, 1);
	tap_ok(r.err[0].code == 0 && r.res[0].values[0].i == 1, "timestamp[ns] at a whole microsecond loads");
	trun_free(&r);
	load_run(&r, XPU_COL_TIMESTAMP_NS, XPU_T_TIMESTAMP, 0, &cd, 2);
	tap_ok(r.err[0].code == XPU_ERR_FALLBACK && r.err[1].code == XPU_ERR_FALLBACK,
		   "timestamp[ns] with nanoseconds is a fallback, not a rounding");
	trun_free(&r);
	cd.values = ts_inf;
	load_run(&r, XPU_COL_TIMESTAMP_NS, XPU_T_TIMESTAMP, 0, &cd, 2);
	tap_ok(r.err[0].code == 0 && r.res[0].values[0].i == XPU_DT_NOEND &&
		   r.res[0].values[1].i == XPU_DT_NOBEGIN,
		   "timestamp int64 max/min load as infinity/-infinity, as arrow_fdw reads them");
	trun_free(&r);
	load_run(&r, XPU_COL_TIMESTAMP_US, XPU_T_TIMESTAMP, 0, &cd, 2);
	tap_ok(r.err[0].code == 0 && r.res[0].values[0].i == XPU_DT_NOEND &&
		   r.res[0].values[1].i == XPU_DT_NOBEGIN, "... in every unit");
	trun_free(&r);
	cd.values = date_inf;
	load_run(&r, XPU_COL_DATE32, XPU_T_DATE, 0, &cd, 2);
	tap_ok(r.err[0].code == 0 && r.res[0].values[0].i == XPU_DATEVAL_NOEND &&
		   r.res[0].values[1].i == XPU_DATEVAL_NOBEGIN,
		   "date32 int32 max/min load as infinity/-infinity");
	trun_free(&r);
	cd.values = dec;
	load_run(&r, XPU_COL_DECIMAL128, XPU_T_NUMERIC, 2, &cd, 1);
	tap_ok(r.err[0].code == 0 && r.res[0].values[0].n == -12345, "decimal128 loads with its scale");
	trun_free(&r);
	load_run(&r, XPU_COL_DECIMAL128, XPU_T_NUMERIC, 2, &cd, 2);
	tap_ok(r.err[1].code == XPU_ERR_FALLBACK, "a decimal128 beyond 38 digits is a fallback");
	trun_free(&r);
	cd.values = offs;
	cd.data = data;
	cd.validity = valid;
	cd.offset = 1;				/* rows 1..4 of the arrays: validity bits 1..4 */
	load_run(&r, XPU_COL_UTF8, XPU_T_TEXT, 0, &cd, 4);
	tap_ok(r.err[0].code == 0 && r.res[0].nulls[0] && !r.res[0].nulls[1] &&
		   r.res[0].values[1].t.len == 0 && !r.res[0].nulls[2] &&
		   r.res[0].values[2].t.len == 4 && memcmp(r.res[0].values[2].t.p, "abcd", 4) == 0 &&
		   r.res[0].nulls[3] == 1 && r.res[1].nulls[3] == 1 && r.res[1].values[2].t.len == 4,
		   "utf8 with an array offset and a validity bitmap loads (both forms)");
	trun_free(&r);
}

/* ---------------------------------------------------------------- disassembler */

static void
test_disassemble(void)
{
	XpuProgram *p = case_program();
	char		buf[4096];
	size_t		n = xpu_program_disassemble(p, buf, sizeof(buf));
	char		small[16];

	tap_ok(n == strlen(buf) && strstr(buf, "r4 = CASE WHEN r1 THEN r2 ELSE r3 END  [SELECT]") &&
		   strstr(buf, "where r1 is true:") && strstr(buf, "r0 = column 0  [LOAD_COL]") &&
		   strstr(buf, "r6 = 100  [CONST_INT]") && strstr(buf, "outputs: r4"),
		   "the disassembly reads as the expression");
	tap_ok(xpu_program_disassemble(p, small, sizeof(small)) == n && strlen(small) == 15,
		   "a short buffer gets a truncated, terminated text and the needed length");
	free(p);
}

/* ---------------------------------------------------------------- constants */

/* CONST_* into registers, then MOVE and NULLIF; projected, one row */
static void
test_constants(void)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *p;
	double		f8 = -2.75;
	float		f4[2] = {0.1f, 0.0f};
	__int128	num = -12345;
	int64_t		big = INT64_MIN;
	int			rf8 = xpu_add_reg(b, XPU_T_FLOAT8, 0);
	int			rf4 = xpu_add_reg(b, XPU_T_FLOAT4, 0);
	int			rnum = xpu_add_reg(b, XPU_T_NUMERIC, 2);
	int			rtxt = xpu_add_reg(b, XPU_T_TEXT, 0);
	int			rb = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			rnull = xpu_add_reg(b, XPU_T_INT8, 0);
	int			ri = xpu_add_reg(b, XPU_T_INT8, 0);
	int			rmove = xpu_add_reg(b, XPU_T_INT8, 0);
	int			rnf = xpu_add_reg(b, XPU_T_INT8, 0);
	int			rnt = xpu_add_reg(b, XPU_T_INT8, 0);
	int			rf = xpu_add_reg(b, XPU_T_BOOL, 0);
	char		buf[2048];
	TRun		r;
	int			f, ok;

	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, XPU_OP_CONST_F8, rf8, 0, 0, 0, xpu_add_const(b, &f8, 8));
	xpu_add_instr(b, XPU_OP_CONST_F4, rf4, 0, 0, 0, xpu_add_const(b, f4, 8));
	xpu_add_instr(b, XPU_OP_CONST_NUM, rnum, 0, 0, 0, xpu_add_const(b, &num, 16));
	xpu_add_instr(b, XPU_OP_CONST_TEXT, rtxt, 0, 0, 0, xpu_add_const_text(b, "h\xc3\xa9", 3));
	xpu_add_instr(b, XPU_OP_CONST_BOOL, rb, 0, 0, 0, 1);
	xpu_add_instr(b, XPU_OP_CONST_BOOL, rf, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_NULL, rnull, 0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_CONST_INT, ri, 0, 0, 0, xpu_add_const(b, &big, 8));
	xpu_add_instr(b, XPU_OP_MOVE, rmove, ri, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_NULLIF, rnf, ri, rf, 0, 0);
	xpu_add_instr(b, XPU_OP_NULLIF, rnt, ri, rb, 0, 0);
	xpu_add_output(b, rf8);
	xpu_add_output(b, rf4);
	xpu_add_output(b, rnum);
	xpu_add_output(b, rtxt);
	xpu_add_output(b, rb);
	xpu_add_output(b, rnull);
	xpu_add_output(b, rmove);
	xpu_add_output(b, rnf);
	xpu_add_output(b, rnt);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	if (!tap_ok(p != NULL, "a program of constants builds (%s)", p ? "" : errbuf))
		return;
	trun_exec(&r, p, NULL, 0, 1);
	for (f = 0; f < 2; f++)
	{
		const XpuValue *v = r.res[f].values;
		const uint8_t *n = r.res[f].nulls;

		ok = r.err[f].code == 0 && !n[0] && v[0].f8 == -2.75 && !n[1] && v[1].f4 == 0.1f &&
			!n[2] && v[2].n == -12345 && !n[3] && v[3].t.len == 3 &&
			memcmp(v[3].t.p, "h\xc3\xa9", 3) == 0 && !n[4] && v[4].i == 1 && n[5] &&
			!n[6] && v[6].i == INT64_MIN && !n[7] && v[7].i == INT64_MIN && n[8];
		tap_ok(ok, "%s: constants, MOVE, NULLIF(x, false) = x and NULLIF(x, true) IS NULL",
			   f ? "per tile" : "per row");
	}
	xpu_program_disassemble(p, buf, sizeof(buf));
	tap_ok(strstr(buf, "r2 = -123.45  [CONST_NUM]") && strstr(buf, "r3 = 'h\xc3\xa9'") &&
		   strstr(buf, "r0 = -2.75") && strstr(buf, "registers: r0 float8 r1 float4 r2 numeric(2)"),
		   "constants disassemble readably");
	trun_free(&r);
	free(p);
}

int
main(void)
{
	test_validator();
	test_validator_types();
	test_validator_fuzz();
	test_masks();
	test_fold_moves();
	test_hoist_consts();
	test_three_valued_logic();
	test_forms_agree();
	test_chunk_parts();
	test_loads();
	test_constants();
	test_disassemble();
	return tap_done();
}
