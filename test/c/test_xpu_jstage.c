/*
 * test_xpu_jstage.c
 *		Unit tests of the xPU program's JOIN stage (JOIN_PROBE, JOIN_PAY;
 *		xpu_interp.h, xpu_tile.h, xpu_join.h): the cases of jstage_testlib.h
 *		(INNER, SEMI, ANTI; two depths, depth 1 keyed by depth 0's payload;
 *		NULL outer keys and payloads; text keys and payloads; int2/int4
 *		probes of int8 tables; numeric keys of different scales; dense and
 *		hash tables; with and without a qual) through the per-row form (the
 *		GPU's) and the per-tile form (the CPU engine's), each against the
 *		nested-loop oracle, and their counts of the rows entering each
 *		depth (EXPLAIN ANALYZE's rows in) against the oracle's; the
 *		validator's checks of the two opcodes, the
 *		disassembly, xpu_program_join_check and the refusals of a program
 *		that does not fit the chunk's tables (errors, never a fault).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "jstage_testlib.h"
#include "xpu_interp.h"

static char errbuf[256];

/* one form's run: results of js's shape */
typedef struct JsRun
{
	XpuResult	res;
	XpuError	err;
} JsRun;

static void
js_run_alloc(JsRun *r, int64_t n, int n_outs)
{
	memset(r, 0, sizeof(*r));
	r->res.nrows = n;
	r->res.mask = (uint8_t *) calloc((size_t) n + 1, 1);
	r->res.values = (XpuValue *) calloc((size_t) (n * n_outs) + 1, sizeof(XpuValue));
	r->res.nulls = (uint8_t *) calloc((size_t) (n * n_outs) + 1, 1);
}

static void
js_run_free(JsRun *r)
{
	free(r->res.mask);
	free(r->res.values);
	free(r->res.nulls);
}

/* run prog over chunk in form 0 (per row) or 1 (per tile) into r */
static int
js_exec(const XpuProgram *prog, const XpuChunk *chunk, int form, JsRun *r)
{
	void	   *ws;

	js_run_alloc(r, chunk->nrows, prog->n_outs);
	if (form == 0)
		return xpu_row_exec(prog, chunk, &r->res, &r->err);
	ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	xpu_cpu_exec(prog, chunk, &r->res, ws, &r->err);
	free(ws);
	return r->err.code;
}

/*
 * js_exec_compacted: the GPU kernel's compacted walk (kern_agg.cu,
 * gagg_rows_compacted) of program p, a row at a time, into r:
 * the hoisted constants once, then per row its first pass to just after
 * the compact point (xpu_program_compact_point, *cp) and, for a row still
 * active there, a second pass from the start on fresh registers and PROJ.
 * A row the first pass drops is run on to the GROUP stage all the same,
 * and *dropped_pass counts those that pass (must be none).  probes gets
 * the rows entering each depth as the kernel counts them: the first pass
 * up to the point, the second after it.
 */
static int
js_exec_compacted(const XpuProgram *p, const XpuChunk *chunk, JsRun *r, int *cp,
				  int64_t *dropped_pass, uint64_t *probes)
{
	const uint16_t *st = p->stage_start;
	const uint8_t *outs = XPU_OUTS(p);
	XpuValue	regs0[XPU_MAX_REGS],
				regs[XPU_MAX_REGS];
	uint8_t		null0[XPU_MAX_REGS],
				nulls[XPU_MAX_REGS];

	js_run_alloc(r, chunk->nrows, p->n_outs);
	*cp = xpu_program_compact_point(p, chunk->joins, chunk->n_joins);
	*dropped_pass = 0;
	memset(regs0, 0, sizeof(regs0));
	memset(null0, 1, sizeof(null0));
	xpu_row_run(p, 0, p->n_hoisted, chunk, chunk->cols, 0, regs0, null0, 1, &r->err);
	for (int64_t o = 0; o < chunk->nrows && *cp >= 0; o++)
	{
		uint64_t	stack = 0;
		int			kept,
					active,
					pass;

		memcpy(regs, regs0, sizeof(regs));
		memcpy(nulls, null0, sizeof(nulls));
		kept = xpu_row_go(p, p->n_hoisted, *cp + 1, chunk, chunk->cols, o, regs, nulls, 1,
						  &stack, NULL, probes, &r->err);
		if (!kept)
		{
			xpu_row_go(p, *cp + 1, st[XPU_STAGE_GROUP], chunk, chunk->cols, o, regs, nulls, 0,
					   &stack, NULL, NULL, &r->err);
			*dropped_pass += XPU_TRUE(&regs[0], nulls[0]);
			for (int k = 0; k < p->n_outs; k++)
				r->res.nulls[k * r->res.nrows + o] = 1;
			continue;
		}
		memcpy(regs, regs0, sizeof(regs));
		memcpy(nulls, null0, sizeof(nulls));
		stack = 0;
		active = xpu_row_go(p, p->n_hoisted, *cp + 1, chunk, chunk->cols, o, regs, nulls, 1,
							&stack, NULL, NULL, &r->err);
		xpu_row_go(p, *cp + 1, st[XPU_STAGE_GROUP], chunk, chunk->cols, o, regs, nulls, active,
				   &stack, NULL, probes, &r->err);
		pass = !xpu_program_filters(p) || XPU_TRUE(&regs[0], nulls[0]);
		r->res.mask[o] = (uint8_t) pass;
		if (pass)
			xpu_row_run(p, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, chunk->cols, o, regs,
						nulls, 1, &r->err);
		for (int k = 0; k < p->n_outs; k++)
		{
			r->res.values[k * r->res.nrows + o] = regs[outs[k]];
			r->res.nulls[k * r->res.nrows + o] = pass ? nulls[outs[k]] : 1;
		}
	}
	return r->err.code;
}

/* ---------------------------------------------------------------- the cases */

static void
test_cases(void)
{
	static const char *const forms[2] = {"per row", "per tile"};

	for (int i = 0; i < JS_N_CASES; i++)
	{
		JsCase		c;
		JsData		js;
		XpuColumnData cd[16];
		XpuChunk	chunk;
		XpuProgram *hoisted;
		int64_t		pass;

		js_case(i, &c);
		if (!tap_ok(js_build(&c, &js, errbuf, sizeof(errbuf)), "%s: builds", c.name))
		{
			tap_diag("%s", errbuf);
			continue;
		}
		pass = js_passing(&js);
		tap_ok(pass > 0 && pass < c.n_outer, "%s: %lld of %d outer rows pass (some, not all)",
			   c.name, (long long) pass, c.n_outer);
		js_chunk(&c, &js, cd, &chunk);
		/* the program, and its form with hoisted constants (the GPU kernel's) */
		hoisted = xpu_program_hoist_consts(js.prog);
		for (int f = 0; f < 4; f++)
		{
			const XpuProgram *p = f < 2 ? js.prog : hoisted;
			JsRun		r;
			int64_t		row;
			int			out;
			int64_t		bad;

			if (p == NULL)
				continue;
			js_exec(p, &chunk, f % 2, &r);
			bad = r.err.code == XPU_OK ? js_compare(&js, &r.res, &row, &out) : -1;
			if (!tap_ok(bad == 0, "%s: %s%s equals the nested loop", c.name, forms[f % 2],
						f < 2 ? "" : " (constants hoisted)"))
				tap_diag("error %d (%s); %lld rows differ, the first %lld at output %d",
						 r.err.code, r.err.message, (long long) bad, (long long) row, out);
			js_run_free(&r);
		}
		{
			JsRun		r;
			int			cp;
			int64_t		dropped_pass,
						row,
						bad;
			int			out;
			uint64_t	counts[XPU_JOIN_COUNT_DEPTHS] = {0};

			/* the kernel's program: hoisted where it has constants to hoist */
			js_exec_compacted(hoisted != NULL ? hoisted : js.prog, &chunk, &r, &cp,
							  &dropped_pass, counts);
			bad = r.err.code == XPU_OK ? js_compare(&js, &r.res, &row, &out) : -1;
			for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
				if (counts[d] != (d < JS_MAX_DEPTHS ? js.in[d] : 0) && bad == 0)
					bad = -2;	/* the counts differ */
			if (!tap_ok(cp > 0 && dropped_pass == 0 && bad == 0,
						"%s: the compacted walk (compact point %d) equals "
						"the nested loop, with its rows entering each depth, and no row it "
						"drops passes", c.name, cp))
				tap_diag("error %d (%s); %lld dropped rows pass; %lld rows differ, the first "
						 "%lld at output %d", r.err.code, r.err.message,
						 (long long) dropped_pass, (long long) bad, (long long) row, out);
			js_run_free(&r);
		}
		tap_ok(!c.qual || hoisted != NULL, "%s: the qual's constants hoist", c.name);
		free(hoisted);
		js_free(&c, &js);
	}
}

/* ---------------------------------------------------------------- compact points */

/* chunk: n rows of one int4 column of values (cd describes it) */
static void
int4_chunk(const int32_t *values, int64_t n, XpuColumnData *cd, XpuChunk *chunk)
{
	memset(cd, 0, sizeof(*cd));
	cd->values = values;
	memset(chunk, 0, sizeof(*chunk));
	chunk->nrows = n;
	chunk->ncols = 1;
	chunk->cols = cd;
}

/*
 * cp_program: r1 = column 0 (int4); QUAL r0 = r1 > 5; then per shape:
 * 0: where r0 is true: r2 = r1 + r1; end  (the push settles: point 3)
 * 1: shape 0, then r0 = r1 < 3 after the end (a row the push left can
 *    pass again: no point)
 * 2: r3 = r1 > 7; where r3 is true: where r0 is true: r2 = r1 + r1; end;
 *    end (the push on r0 is enclosed by one on r3, whose rows may have r0
 *    true: no point)
 * 3: no qual, no push (no point)
 * 4: shape 0, then r2 = r1 + r1 after the end (r0 untouched, but the
 *    row-at-a-time walk would evaluate it for a row the push left: no point)
 */
static XpuProgram *
cp_program(int shape)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			r1 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			r2 = xpu_add_reg(b, XPU_T_INT4, 0);
	int			r3 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int64_t		v5 = 5,
				v3 = 3,
				v7 = 7;
	XpuProgram *p;

	xpu_add_instr(b, XPU_OP_LOAD_COL, r1, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	if (shape != 3)
	{
		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &v5, 8));
		xpu_add_instr(b, XPU_OP_GT_INT, r0, r1, k, 0, 0);
		if (shape == 2)
		{
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &v7, 8));
			xpu_add_instr(b, XPU_OP_GT_INT, r3, r1, k, 0, 0);
			xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r3, 0, 0, 0);
		}
		xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_ADD_I4, r2, r1, r1, 0, 0);
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
		if (shape == 2)
			xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
		if (shape == 1)
		{
			xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &v3, 8));
			xpu_add_instr(b, XPU_OP_LT_INT, r0, r1, k, 0, 0);
		}
		if (shape == 4)
			xpu_add_instr(b, XPU_OP_ADD_I4, r2, r1, r1, 0, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_output(b, r1);
	p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return p;
}

/*
 * xpu_program_compact_point on programs where a push settles its rows and
 * where it does not (the GPU kernel must not drop a row that can pass);
 * each program also run through the compacted walk over ids 0 .. 9 against
 * the per-row form
 */
static void
test_compact_point(void)
{
	static const int want[5] = {3, -1, -1, -1, -1};
	static const char *const what[5] = {
		"a push on r0 that settles", "r0 written again after the push's end",
		"a push on r0 inside a push on another register", "no qual",
		"another register written after the push's end"};
	int32_t		ids[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	XpuColumnData cd;
	XpuChunk	chunk;

	int4_chunk(ids, 10, &cd, &chunk);
	for (int shape = 0; shape < 5; shape++)
	{
		XpuProgram *p = cp_program(shape);
		JsRun		a,
					b;
		int			cp = -2,
					same = 1;
		int64_t		dropped_pass = 0;

		if (!tap_ok(p != NULL, "compact point, %s: builds", what[shape]))
		{
			tap_diag("%s", errbuf);
			continue;
		}
		js_exec(p, &chunk, 0, &a);
		js_exec_compacted(p, &chunk, &b, &cp, &dropped_pass, NULL);
		for (int64_t o = 0; o < chunk.nrows && cp >= 0; o++)
			same = same && a.res.mask[o] == b.res.mask[o];
		tap_ok(cp == want[shape] && dropped_pass == 0 && same && a.err.code == XPU_OK,
			   "compact point, %s: %d (want %d), the compacted walk's rows are the per-row "
			   "form's", what[shape], cp, want[shape]);
		js_run_free(&a);
		js_run_free(&b);
		free(p);
	}
}

/* ---------------------------------------------------------------- rows entering each depth */

/*
 * the counts of the rows entering each depth: the per-tile form
 * (xpu_cpu_exec_counted, the CPU engine) and the per-row form
 * (xpu_row_span_counted, the GPU kernel's loop) against the oracle, the
 * tile form also when the counts go on over two chunks (added, not reset)
 */
static void
test_probe_counts(void)
{
	for (int i = 0; i < JS_N_CASES; i++)
	{
		JsCase		c;
		JsData		js;
		XpuColumnData cd[16];
		XpuChunk	chunk;
		uint64_t	want[XPU_JOIN_COUNT_DEPTHS] = {0},
					tile[XPU_JOIN_COUNT_DEPTHS] = {0},
					row[XPU_JOIN_COUNT_DEPTHS] = {0};
		XpuValue	regs[XPU_MAX_REGS];
		uint8_t		nulls[XPU_MAX_REGS];
		JsRun		r;
		void	   *ws;
		int			same_tile = 1,
					same_row = 1;

		js_case(i, &c);
		if (!js_build(&c, &js, errbuf, sizeof(errbuf)))
			continue;
		js_chunk(&c, &js, cd, &chunk);
		memcpy(want, js.in, sizeof(js.in));	/* js_expect's */
		js_run_alloc(&r, chunk.nrows, js.prog->n_outs);
		ws = aligned_alloc(16, (xpu_cpu_workspace_size(js.prog) + 15) & ~(size_t) 15);
		for (int twice = 0; twice < 2; twice++)
			xpu_cpu_exec_counted(js.prog, &chunk, &r.res, ws, &r.err, tile);
		for (int64_t o = 0; o < chunk.nrows && r.err.code == XPU_OK; o++)
		{
			for (int k = 0; k < js.prog->n_regs; k++)
				nulls[k] = 1;
			xpu_row_span_counted(js.prog, js.prog->stage_start[XPU_STAGE_LOAD],
								 js.prog->stage_start[XPU_STAGE_GROUP], &chunk, chunk.cols, o,
								 regs, nulls, 1, 0, NULL, row, &r.err);
		}
		for (int d = 0; d < XPU_JOIN_COUNT_DEPTHS; d++)
		{
			same_tile = same_tile && tile[d] == 2 * want[d];
			same_row = same_row && row[d] == want[d];
		}
		if (!tap_ok(r.err.code == XPU_OK && same_tile && same_row && want[0] > 0,
					"%s: the rows entering each depth, per tile and per row, are the nested "
					"loop's (%llu, %llu)", c.name, (unsigned long long) want[0],
					(unsigned long long) want[1]))
			for (int d = 0; d < c.n_depths; d++)
				tap_diag("depth %d: want %llu, tile %llu (two chunks), row %llu; error %d %s", d,
						 (unsigned long long) want[d], (unsigned long long) tile[d],
						 (unsigned long long) row[d], r.err.code, r.err.message);
		free(ws);
		js_run_free(&r);
		js_free(&c, &js);
	}
}

/* ---------------------------------------------------------------- validator, disassembler */

/* a one-depth program: r0 bool, r1 int4 key, r2 int8 probe, r3 int4 payload */
static XpuProgram *
small_program(int32_t probe_imm, int32_t pay_imm, int pay_stage, int balanced)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int			p = xpu_add_reg(b, XPU_T_INT8, 0);
	int			v = xpu_add_reg(b, XPU_T_INT4, 0);
	XpuProgram *prog;

	xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_JOIN);
	xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, p, k, k, k, probe_imm);
	xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p, 0, 0, 0);
	if (pay_stage == XPU_STAGE_JOIN)
		xpu_add_instr(b, XPU_OP_JOIN_PAY, v, p, 0, 0, pay_imm);
	if (balanced)
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	if (pay_stage == XPU_STAGE_PROJ)
		xpu_add_instr(b, XPU_OP_JOIN_PAY, v, p, 0, 0, pay_imm);
	xpu_add_output(b, v);
	prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return prog;
}

/* a copy of prog with instruction pc's fields changed by fn; is it refused? */
static int
refused(const XpuProgram *prog, int pc, void (*fn) (XpuInstr *))
{
	XpuProgram *c = (XpuProgram *) malloc(prog->total_len);
	int			ok;

	memcpy(c, prog, prog->total_len);
	fn((XpuInstr *) ((char *) c + c->instrs_off) + pc);
	ok = xpu_program_validate(c, c->total_len, errbuf, sizeof(errbuf));
	free(c);
	return !ok;
}

/* instruction 3 of small_program is the probe, 5 the payload */
static void probe_no_keys(XpuInstr *in) { in->imm = 0; }
static void probe_four_keys(XpuInstr *in) { in->imm = 4 << 8; }
/* bit 16 is XPU_JOIN_PROBE_EACH (test_xpu_jexpand.c); every bit above is refused */
static void probe_high_bits(XpuInstr *in) { in->imm |= 1 << 17; }
static void probe_top_bit(XpuInstr *in) { in->imm |= 1 << 30; }
static void probe_negative(XpuInstr *in) { in->imm = -1; }
static void probe_b_differs(XpuInstr *in) { in->b = 2; }
static void probe_two_keys_c(XpuInstr *in) { in->imm = 2 << 8; in->b = 2; in->c = 2; }
static void probe_into_int4(XpuInstr *in) { in->dst = 1; }
static void pay_col_64(XpuInstr *in) { in->imm = 64 << 8; }
static void pay_col_63(XpuInstr *in) { in->imm = (63 << 8) | 255; }
static void pay_high_bits(XpuInstr *in) { in->imm = 1 << 16; }
static void pay_of_int4(XpuInstr *in) { in->a = 1; }

static void
test_validator(void)
{
	XpuProgram *p = small_program(1 << 8, 2 << 8, XPU_STAGE_JOIN, 1);
	char		text[2048];

	if (!tap_ok(p != NULL, "a program with a JOIN stage builds and validates"))
	{
		tap_diag("%s", errbuf);
		return;
	}
	tap_ok(XPU_INSTRS(p)[3].op == XPU_OP_JOIN_PROBE && XPU_INSTRS(p)[5].op == XPU_OP_JOIN_PAY,
		   "the probe and the payload are instructions 3 and 5");
	tap_ok(refused(p, 3, probe_no_keys), "JOIN_PROBE of 0 keys is refused");
	tap_ok(refused(p, 3, probe_four_keys), "JOIN_PROBE of 4 keys is refused");
	tap_ok(refused(p, 3, probe_high_bits), "JOIN_PROBE with immediate bit 17 (above the EACH flag) is refused");
	tap_ok(refused(p, 3, probe_top_bit), "JOIN_PROBE with immediate bit 30 is refused");
	tap_ok(refused(p, 3, probe_negative), "JOIN_PROBE with a negative immediate is refused");
	tap_ok(refused(p, 3, probe_b_differs), "JOIN_PROBE of 1 key whose b is not a is refused");
	tap_ok(refused(p, 3, probe_two_keys_c), "JOIN_PROBE of 2 keys whose c is not a is refused");
	tap_ok(refused(p, 3, probe_into_int4), "JOIN_PROBE into an int4 register is refused");
	tap_ok(refused(p, 5, pay_col_64), "JOIN_PAY of column 64 is refused");
	tap_ok(!refused(p, 5, pay_col_63), "JOIN_PAY of column 63 at depth 255 is accepted");
	tap_ok(refused(p, 5, pay_high_bits), "JOIN_PAY with immediate bits above 16 is refused");
	tap_ok(refused(p, 5, pay_of_int4), "JOIN_PAY of an int4 row register is refused");
	xpu_program_disassemble(p, text, sizeof(text));
	tap_ok(strstr(text, "join:\n") != NULL &&
		   strstr(text, "r2 = join 0 probe (r1)  [JOIN_PROBE]") != NULL &&
		   strstr(text, "r3 = join 0 column 2 of r2  [JOIN_PAY]") != NULL,
		   "the disassembly reads 'r2 = join 0 probe (r1)' and 'r3 = join 0 column 2 of r2'");
	free(p);

	p = small_program(3 | (2 << 8), 1 | (5 << 8), XPU_STAGE_JOIN, 1);
	{
		XpuProgram *c = (XpuProgram *) malloc(p->total_len);
		XpuInstr   *in;

		memcpy(c, p, p->total_len);
		in = (XpuInstr *) ((char *) c + c->instrs_off) + 3;
		in->a = 1;
		in->b = 3;				/* the int4 register: any key type validates */
		in->c = 1;
		tap_ok(xpu_program_validate(c, c->total_len, errbuf, sizeof(errbuf)),
			   "JOIN_PROBE of 2 keys (c repeating a) validates");
		xpu_program_disassemble(c, text, sizeof(text));
		tap_ok(strstr(text, "r2 = join 3 probe (r1, r3)") != NULL &&
			   strstr(text, "r3 = join 1 column 5 of r2") != NULL,
			   "two keys and another depth disassemble");
		free(c);
	}
	free(p);

	p = small_program(1 << 8, 0, XPU_STAGE_PROJ, 1);
	tap_ok(p == NULL && strstr(errbuf, "outside the join stage") != NULL,
		   "JOIN_PAY in the PROJ stage is refused (%s)", errbuf);
	free(p);
	p = small_program(1 << 8, 0, XPU_STAGE_JOIN, 0);
	tap_ok(p == NULL && strstr(errbuf, "masks pushed") != NULL,
		   "a JOIN stage that leaves a mask pushed is refused (%s)", errbuf);
	free(p);
	{
		/* JOIN_PROBE in the QUAL stage */
		XpuBuilder *b = xpu_builder_create();
		int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
		int			k = xpu_add_reg(b, XPU_T_INT4, 0);
		int			pr = xpu_add_reg(b, XPU_T_INT8, 0);

		xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, pr, k, k, k, 1 << 8);
		xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, pr, 0, 0, 0);
		p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
		xpu_builder_free(b);
		tap_ok(p == NULL && strstr(errbuf, "outside the join stage") != NULL,
			   "JOIN_PROBE in the QUAL stage is refused (%s)", errbuf);
		free(p);
	}
	{
		/* a JOIN stage without a qual needs a bool r0 */
		XpuBuilder *b = xpu_builder_create();
		int			r = xpu_add_reg(b, XPU_T_INT8, 0);

		xpu_begin_stage(b, XPU_STAGE_JOIN);
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, r, r, r, r, 1 << 8);
		p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
		xpu_builder_free(b);
		tap_ok(p == NULL && strstr(errbuf, "r0 is not bool") != NULL,
			   "a JOIN stage whose r0 is not bool is refused (%s)", errbuf);
		free(p);
	}
}

/* ---------------------------------------------------------------- join_check and refusals */

/* a table of one key (inner type, probe type, probe scale) and payload types */
static XpuJoinTable *
table_of(int type, int probe_type, int probe_scale, const uint8_t *pay, int n_pay, int n_keys)
{
	XpuJoinSpec spec;
	XpuJoinBuilder *b;
	XpuJoinTable *t;
	XpuValue	keys[4 * 3];
	uint8_t		knull[4 * 3];
	XpuValue	vals[4 * 8];
	uint8_t		vnull[4 * 8];
	XpuError	err;

	memset(&spec, 0, sizeof(spec));
	memset(keys, 0, sizeof(keys));
	memset(knull, 0, sizeof(knull));
	memset(vals, 0, sizeof(vals));
	memset(vnull, 1, sizeof(vnull));
	memset(&err, 0, sizeof(err));
	spec.n_keys = n_keys;
	for (int k = 0; k < n_keys; k++)
	{
		spec.keys[k].type = (uint8_t) type;
		spec.keys[k].probe_type = (uint8_t) probe_type;
		spec.keys[k].probe_scale = (int16_t) probe_scale;
	}
	spec.n_pay = n_pay;
	memcpy(spec.pay_types, pay, (size_t) n_pay);
	for (int i = 0; i < 4 * n_keys; i++)
		keys[i].i = i % 4;
	for (int c = 0; c < n_pay; c++)
		for (int i = 0; i < 4; i++)
		{
			if (pay[c] == XPU_T_TEXT)
			{
				vals[c * 4 + i].t.p = "text";
				vals[c * 4 + i].t.len = i;
			}
			else
				vals[c * 4 + i].i = 100 + i;
			vnull[c * 4 + i] = 0;
		}
	b = xpu_join_builder_create(&spec, &err);
	xpu_join_builder_add(b, 4, keys, knull, vals, vnull, &err);
	t = xpu_join_builder_finish(b, &err);
	xpu_join_builder_free(b);
	return t;
}

/* does xpu_program_join_check refuse p with tables[n] (message containing what) */
static int
check_refuses(const XpuProgram *p, XpuJoinTable *const *tabs, int n, const char *what)
{
	XpuError	err;

	memset(&err, 0, sizeof(err));
	if (xpu_program_join_check(p, (const XpuJoinTable *const *) tabs, n, &err))
		return 0;
	if (err.code != XPU_ERR_INVALID_ARGUMENT || strstr(err.message, what) == NULL)
	{
		tap_diag("code %d: %s", err.code, err.message);
		return 0;
	}
	return 1;
}

/* both forms over 5 rows of keys 0 .. 4 with tables tabs[n]: their error codes */
static void
run_small(const XpuProgram *p, XpuJoinTable *const *tabs, int n, int codes[2], int64_t outs[2][5])
{
	int32_t		keys[5] = {0, 1, 2, 3, 4};
	XpuColumnData cd;
	XpuChunk	chunk;

	int4_chunk(keys, 5, &cd, &chunk);
	chunk.joins = (const XpuJoinTable *const *) tabs;
	chunk.n_joins = n;
	for (int f = 0; f < 2; f++)
	{
		JsRun		r;

		codes[f] = js_exec(p, &chunk, f, &r);
		for (int i = 0; i < 5; i++)
			outs[f][i] = r.res.mask[i] && !r.res.nulls[i] ? r.res.values[i].i : -1;
		js_run_free(&r);
	}
}

static void
test_join_check(void)
{
	static const uint8_t pay3[] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_INT4};
	static const uint8_t pay2[] = {XPU_T_INT8, XPU_T_TEXT};
	static const uint8_t pay3b[] = {XPU_T_INT8, XPU_T_TEXT, XPU_T_INT8};
	XpuProgram *p = small_program(1 << 8, 2 << 8, XPU_STAGE_JOIN, 1);
	XpuJoinTable *good = table_of(XPU_T_INT8, XPU_T_INT4, 0, pay3, 3, 1);
	XpuJoinTable *tabs[2];
	XpuError	err;
	int			codes[2];
	int64_t		outs[2][5];

	memset(&err, 0, sizeof(err));
	tabs[0] = good;
	tap_ok(xpu_program_join_check(p, (const XpuJoinTable *const *) tabs, 1, &err),
		   "join_check accepts a program whose probe and payload fit the table");
	run_small(p, tabs, 1, codes, outs);
	tap_ok(codes[0] == XPU_OK && codes[1] == XPU_OK &&
		   memcmp(outs[0], outs[1], sizeof(outs[0])) == 0 &&
		   outs[1][0] == 100 && outs[1][3] == 103 && outs[1][4] == -1,
		   "both forms probe the int8 table with int4 keys (0 -> 100, 3 -> 103, 4 none)");
	tap_ok(check_refuses(p, tabs, 0, "join depth without an inner table"),
		   "join_check refuses a probe of depth 0 with no tables");
	run_small(p, tabs, 0, codes, outs);
	tap_ok(codes[0] == XPU_ERR_INVALID_ARGUMENT && codes[1] == XPU_ERR_INVALID_ARGUMENT,
		   "a program that probes with no tables is an error in both forms (%d, %d)",
		   codes[0], codes[1]);
	tabs[0] = NULL;
	tap_ok(check_refuses(p, tabs, 1, "join depth without an inner table"),
		   "join_check refuses a NULL table");
	run_small(p, tabs, 1, codes, outs);
	tap_ok(codes[0] == XPU_ERR_INVALID_ARGUMENT && codes[1] == XPU_ERR_INVALID_ARGUMENT,
		   "a NULL table is an error in both forms");

	tabs[0] = table_of(XPU_T_INT8, XPU_T_INT4, 0, pay3, 3, 2);
	tap_ok(check_refuses(p, tabs, 1, "another number of keys"),
		   "join_check refuses a probe of 1 key against a table of 2");
	free(tabs[0]);
	tabs[0] = table_of(XPU_T_INT8, XPU_T_INT8, 0, pay3, 3, 1);
	tap_ok(check_refuses(p, tabs, 1, "key of another type"),
		   "join_check refuses an int4 key register against the probe type int8");
	free(tabs[0]);
	tabs[0] = table_of(XPU_T_INT8, XPU_T_INT4, 0, pay2, 2, 1);
	tap_ok(check_refuses(p, tabs, 1, "payload column the table has not"),
		   "join_check refuses payload column 2 of a table of 2 columns");
	free(tabs[0]);
	tabs[0] = table_of(XPU_T_INT8, XPU_T_INT4, 0, pay3b, 3, 1);
	tap_ok(check_refuses(p, tabs, 1, "register of another type"),
		   "join_check refuses an int8 payload into an int4 register");
	free(tabs[0]);
	free(p);

	/* a probe of depth 1 with one table */
	p = small_program(1 | (1 << 8), 1 << 8, XPU_STAGE_JOIN, 1);
	tabs[0] = good;
	tap_ok(check_refuses(p, tabs, 1, "join depth without an inner table"),
		   "join_check refuses a probe of depth 1 with one table");
	free(p);

	/* numeric keys: the register's scale must be the probe scale */
	{
		XpuBuilder *b = xpu_builder_create();
		int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
		int			k = xpu_add_reg(b, XPU_T_NUMERIC, 2);
		int			pr = xpu_add_reg(b, XPU_T_INT8, 0);
		XpuJoinTable *num;

		xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_DECIMAL128, 2));
		xpu_begin_stage(b, XPU_STAGE_JOIN);
		xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
		xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, pr, k, k, k, 1 << 8);
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
		xpu_add_output(b, pr);
		p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
		xpu_builder_free(b);
		num = table_of(XPU_T_NUMERIC, XPU_T_NUMERIC, 2, pay3, 0, 1);
		tabs[0] = num;
		tap_ok(p != NULL && xpu_program_join_check(p, (const XpuJoinTable *const *) tabs, 1, &err),
			   "join_check accepts a numeric(2) key register against probe scale 2");
		free(num);
		tabs[0] = num = table_of(XPU_T_NUMERIC, XPU_T_NUMERIC, 3, pay3, 0, 1);
		tap_ok(p != NULL && check_refuses(p, tabs, 1, "key of another type"),
			   "join_check refuses a numeric(2) key register against probe scale 3");
		free(num);
		free(p);
	}

	/* JOIN_PAY of a row the table has not (not from a probe): an error, no read */
	{
		XpuBuilder *b = xpu_builder_create();
		int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
		int			k = xpu_add_reg(b, XPU_T_INT8, 0);
		int			v = xpu_add_reg(b, XPU_T_INT8, 0);
		int64_t		far = 4;

		xpu_begin_stage(b, XPU_STAGE_JOIN);
		xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
		xpu_add_instr(b, XPU_OP_CONST_INT, k, 0, 0, 0, xpu_add_const(b, &far, 8));
		xpu_add_instr(b, XPU_OP_JOIN_PAY, v, k, 0, 0, 0);
		xpu_add_output(b, v);
		p = xpu_builder_finish(b, errbuf, sizeof(errbuf));
		xpu_builder_free(b);
		tabs[0] = good;
		run_small(p, tabs, 1, codes, outs);
		tap_ok(p != NULL && codes[0] == XPU_ERR_INTERNAL && codes[1] == XPU_ERR_INTERNAL,
			   "JOIN_PAY of row 4 of a 4-row table is an internal error in both forms (%d, %d)",
			   codes[0], codes[1]);
		free(p);
	}
	free(good);
}

int
main(void)
{
	test_cases();
	test_compact_point();
	test_probe_counts();
	test_validator();
	test_join_check();
	return tap_done();
}
