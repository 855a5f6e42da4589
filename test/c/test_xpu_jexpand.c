/*
 * test_xpu_jexpand.c
 *		Unit tests of join probes of every match (row expansion: JOIN_PROBE
 *		with XPU_JOIN_PROBE_EACH; xpu_join.h, xpu_interp.h, xpu_cpu.c): the
 *		cases of jexpand_testlib.h (duplicate keys, a hot key, NULL keys on
 *		both sides, LEFT with and without matches, a composite key read
 *		from an expanding depth's payload, a join qual that writes r0 after
 *		a probe, a qual stage, a dense table) through xpu_cpu_exec_each
 *		(several batch sizes) and the GPU kernel's loop run on the host
 *		(hoisted constants, xpu_row_each_first / xpu_row_each_next), each
 *		against the nested-loop oracle, output rows in order; the
 *		validator's checks of such programs, the disassembly, and the
 *		refusals of the runs that cannot expand rows; tables of unique keys
 *		(XPU_JOIN_UNIQUE: found by the builder, checked by validation),
 *		whose probes of every match run vectorised.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "jexpand_testlib.h"
#include "xpu_interp.h"

static char errbuf[256];

/* what collect keeps: the rows of a program of n_outs outputs */
typedef struct Collect
{
	JxRows	   *got;
	int			n_outs;
} Collect;

/* a sink that keeps the rows of a batch whose mask is set */
static int
collect(void *arg, const XpuResult *res, XpuError *err)
{
	Collect    *cl = (Collect *) arg;
	JxRows	   *got = cl->got;

	for (int64_t i = 0; i < res->nrows; i++)
	{
		JxRow		row;

		if (!res->mask[i])
			continue;
		jx_row_of(res, i, cl->n_outs, &row);
		jx_rows_add(got, &row);
	}
	return 1;
}

/* the matched flags of a program that marks (zeroed), NULL for one that does not */
static uint32_t *
flags_for(const XpuProgram *prog, const XpuChunk *chunk)
{
	int			pc = xpu_program_marks(prog);

	if (pc < 0)
		return NULL;
	return (uint32_t *) calloc(xpu_join_matched_words(
		chunk->joins[XPU_JOIN_IMM_DEPTH(XPU_INSTRS(prog)[pc].imm)]->n_rows) + 1, 4);
}

/*
 * xpu_cpu_exec_each of prog over chunk, batches of cap rows, into got;
 * where prog marks (a RIGHT/FULL depth), with flags of its own, then
 * xpu_cpu_exec_unmatched's rows after the others
 */
static int
run_each(const XpuProgram *prog, const XpuChunk *in, int64_t cap, JxRows *got, XpuError *err)
{
	XpuResult	res;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	Collect		cl = {got, prog->n_outs};
	XpuChunk	c = *in;
	const XpuChunk *chunk = &c;
	int			rc;

	c.matched = flags_for(prog, in);
	res.nrows = cap;
	res.mask = (uint8_t *) calloc((size_t) cap, 1);
	res.values = (XpuValue *) calloc((size_t) (cap * prog->n_outs), sizeof(XpuValue));
	res.nulls = (uint8_t *) calloc((size_t) (cap * prog->n_outs), 1);
	memset(err, 0, sizeof(*err));
	rc = xpu_cpu_exec_each(prog, chunk, &res, ws, err, collect, &cl);
	if (rc > 0 && c.matched != NULL)
		rc = xpu_cpu_exec_unmatched(prog, chunk, c.matched, &res, err, collect, &cl);
	free(c.matched);
	free(res.mask);
	free(res.values);
	free(res.nulls);
	free(ws);
	return rc;
}

/*
 * the GPU kernel's loop (kern_agg.cu gagg_eval, gagg_eval_next) on the
 * host: the hoisted constants once, every row from their null flags
 */
static void
run_gpu_form(const XpuProgram *prog, const XpuChunk *in, JxRows *got, XpuError *err)
{
	const uint16_t *st = prog->stage_start;
	const uint8_t *outs = XPU_OUTS(prog);
	XpuValue	regs[XPU_MAX_REGS];
	uint8_t		nulls[XPU_MAX_REGS], null0[XPU_MAX_REGS];
	XpuEach		each;
	XpuChunk	c = *in;
	const XpuChunk *chunk = &c;

	c.matched = flags_for(prog, in);
	memset(err, 0, sizeof(*err));
	memset(regs, 0, sizeof(regs));
	memset(nulls, 1, sizeof(nulls));
	xpu_row_run(prog, 0, prog->n_hoisted, chunk, chunk->cols, 0, regs, nulls, 1, err);
	memcpy(null0, nulls, sizeof(null0));
	for (int64_t row = 0; row < chunk->nrows; row++)
	{
		int64_t		in_part = row;
		const XpuColumnData *cols = xpu_chunk_part(chunk, &in_part);

		memcpy(nulls, null0, (size_t) prog->n_regs);
		xpu_row_each_first(prog, prog->n_hoisted, chunk, cols, in_part, regs, nulls, &each, err);
		do
		{
			JxRow		r;

			if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
				continue;
			xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, each.cols,
						each.row, regs, nulls, 1, err);
			memset(&r, 0, sizeof(r));
			for (int k = 0; k < JX_OUTS; k++)
			{
				r.n[k] = nulls[outs[k]];
				r.v[k] = r.n[k] ? 0 : regs[outs[k]].i;
			}
			jx_rows_add(got, &r);
		} while (xpu_row_each_next(prog, chunk, &each, err));
	}
	/* a RIGHT/FULL depth: the rows none marked, one after the other (xpu_row_unmatched) */
	for (int64_t r = 0; c.matched != NULL && err->code == XPU_OK &&
		 r < chunk->joins[2]->n_rows; r++)
	{
		JxRow		row;

		if (xpu_join_marked(c.matched, (int32_t) r))
			continue;
		xpu_row_unmatched(prog, xpu_program_marks(prog), chunk, (int32_t) r, regs, nulls, err);
		if (xpu_program_filters(prog) && !XPU_TRUE(&regs[0], nulls[0]))
			continue;
		xpu_row_run(prog, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], chunk, chunk->cols, 0,
					regs, nulls, 1, err);
		memset(&row, 0, sizeof(row));
		for (int k = 0; k < JX_OUTS; k++)
		{
			row.n[k] = nulls[outs[k]];
			row.v[k] = row.n[k] ? 0 : regs[outs[k]].i;
		}
		jx_rows_add(got, &row);
	}
	free(c.matched);
}

static void
report(const char *what, const JxCase *c, const JxData *x, const JxRows *got, const XpuError *err)
{
	int64_t		i = err->code == XPU_OK ? jx_diff(&x->want, got) : -2;

	if (!tap_ok(i == -1, "%s: %s: %lld rows equal the nested loops", c->name, what,
				(long long) x->want.n))
	{
		tap_diag("error %d (%s); %lld rows, want %lld, first difference at %lld",
				 err->code, err->message, (long long) got->n, (long long) x->want.n,
				 (long long) i);
		if (i >= 0 && i < got->n && i < x->want.n)
			tap_diag("got id %lld rows %lld/%lld/%lld, want id %lld rows %lld/%lld/%lld",
					 (long long) got->r[i].v[0], (long long) got->r[i].v[1],
					 (long long) got->r[i].v[2], (long long) got->r[i].v[3],
					 (long long) x->want.r[i].v[0], (long long) x->want.r[i].v[1],
					 (long long) x->want.r[i].v[2], (long long) x->want.r[i].v[3]);
	}
}

static void
test_cases(void)
{
	static const int64_t caps[3] = {1, 7, 4096};

	for (int i = 0; i < JX_N_CASES; i++)
	{
		JxCase		c;
		JxData		x;
		XpuColumnData cd[4];
		XpuChunk	chunk;
		XpuProgram *hoisted;
		int			expands;

		jx_case(i, &c);
		if (!tap_ok(jx_build(&c, &x, errbuf, sizeof(errbuf)), "%s: builds", c.name))
		{
			tap_diag("%s", errbuf);
			continue;
		}
		expands = c.each[0] || c.each[1] || c.each[2];
		tap_ok(xpu_program_expands(x.prog) == expands, "%s: expands %d", c.name, expands);
		/* the oracle: rows expand where a depth probes every match (not vacuous) */
		if (expands && !c.dense0)
			tap_ok(x.want.n > c.n_outer, "%s: %lld joined rows from %d outer rows", c.name,
				   (long long) x.want.n, c.n_outer);
		jx_chunk(&c, &x, cd, &chunk);
		for (int k = 0; k < 3; k++)
		{
			JxRows		got = {0};
			XpuError	err;
			char		what[64];

			run_each(x.prog, &chunk, expands ? caps[k] : chunk.nrows, &got, &err);
			snprintf(what, sizeof(what), "xpu_cpu_exec_each, batches of %lld",
					 (long long) (expands ? caps[k] : chunk.nrows));
			report(what, &c, &x, &got, &err);
			free(got.r);
			if (!expands)
				break;
		}
		hoisted = xpu_program_hoist_consts(x.prog);
		/* (an outer join's depth 2 has no join qual: without the QUAL stage, no constant) */
		tap_ok(hoisted != NULL || (c.outer2 && !c.qual), "%s: the constants hoist", c.name);
		if (hoisted != NULL)
		{
			JxRows		got = {0};
			XpuError	err;

			if (expands)
			{
				run_gpu_form(hoisted, &chunk, &got, &err);
				report("the GPU's loop, constants hoisted", &c, &x, &got, &err);
				free(got.r);
				memset(&got, 0, sizeof(got));
			}
			run_each(hoisted, &chunk, expands ? 1000 : chunk.nrows, &got, &err);
			report("xpu_cpu_exec_each, constants hoisted", &c, &x, &got, &err);
			free(got.r);
			free(hoisted);
		}
		jx_free(&x);
	}
}

/* ---------------------------------------------------------------- refusals */

/*
 * a one-depth program of a probe of every match: r0 bool, r1 int4 key, r2
 * int8 probe, r3 int4 payload; bad 1: the payload written into the key
 * register after the probe; 2: r3 written before the probe too; 3: nine
 * probes of every match
 */
static XpuProgram *
each_program(int bad)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int			p = xpu_add_reg(b, XPU_T_INT8, 0);
	int			v = xpu_add_reg(b, XPU_T_INT4, 0);
	XpuProgram *prog;

	xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	if (bad == 2)
		xpu_add_instr(b, XPU_OP_LOAD_COL, v, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_JOIN);
	xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
	for (int i = 0; i < (bad == 3 ? XPU_JOIN_EACH_MAX + 1 : 1); i++)
	{
		/* each probe its own registers */
		if (i > 0)
		{
			p = xpu_add_reg(b, XPU_T_INT8, 0);
			v = xpu_add_reg(b, XPU_T_INT4, 0);
		}
		xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_JOIN_PROBE, p, k, k, k, 0 | (1 << 8) | XPU_JOIN_PROBE_EACH);
		xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_JOIN_PAY, bad == 1 ? k : v, p, 0, 0, 0);
		xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	}
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_output(b, v);
	prog = xpu_builder_finish(b, errbuf, sizeof(errbuf));
	xpu_builder_free(b);
	return prog;
}

/* the table of spec sp over the n rows of keys kv and payload pv (n <= 16; none NULL) */
static XpuJoinTable *
built(const XpuJoinSpec *sp, int n, const XpuValue *kv, const XpuValue *pv)
{
	uint8_t		kn[16] = {0}, pn[16] = {0};
	XpuError	err = {0};
	XpuJoinBuilder *b;
	XpuJoinTable *t = NULL;

	if ((b = xpu_join_builder_create(sp, &err)) != NULL &&
		xpu_join_builder_add(b, n, kv, kn, pv, sp->n_pay > 0 ? pn : NULL, &err))
		t = xpu_join_builder_finish(b, &err);
	xpu_join_builder_free(b);
	return t;
}

/* a table of int4 keys keys[n] (payload: the key) */
static XpuJoinTable *
int_table(const int64_t *keys, int n)
{
	XpuJoinSpec sp;
	XpuValue	kv[16], pv[16];

	memset(&sp, 0, sizeof(sp));
	sp.n_keys = 1;
	sp.keys[0].type = sp.keys[0].probe_type = XPU_T_INT4;
	sp.n_pay = 1;
	sp.pay_types[0] = XPU_T_INT4;
	for (int i = 0; i < n; i++)
		kv[i].i = pv[i].i = keys[i];
	return built(&sp, n, kv, pv);
}

/* chunk of n rows of one int4 column (values kcol, validity bits valid) over one table tabs[0] */
static void
key_chunk(XpuColumnData *cd, XpuChunk *chunk, int32_t *kcol, uint8_t *valid, int n,
		  const XpuJoinTable **tabs)
{
	memset(cd, 0, sizeof(*cd));
	cd->validity = valid;
	cd->values = kcol;
	memset(chunk, 0, sizeof(*chunk));
	chunk->nrows = n;
	chunk->ncols = 1;
	chunk->cols = cd;
	chunk->joins = tabs;
	chunk->n_joins = 1;
}

static void
test_refusals(void)
{
	XpuProgram *p;
	char		dis[2048];
	static const int64_t keys[4] = {5, 5, 6, 5};
	XpuJoinTable *t = int_table(keys, 4);
	const XpuJoinTable *tabs[1] = {t};
	int32_t		kcol[3] = {5, 6, 7};
	uint8_t		valid = 0x07;
	XpuColumnData cd;
	XpuChunk	chunk;

	p = each_program(1);
	tap_ok(p == NULL && strstr(errbuf, "probe of every match") != NULL,
		   "validator: a key register written after a probe of every match (%s)", errbuf);
	free(p);
	p = each_program(2);
	tap_ok(p == NULL && strstr(errbuf, "probe of every match") != NULL,
		   "validator: a register written before and after a probe of every match (%s)", errbuf);
	free(p);
	p = each_program(3);
	tap_ok(p == NULL && strstr(errbuf, "more than") != NULL,
		   "validator: %d probes of every match (%s)", XPU_JOIN_EACH_MAX + 1, errbuf);
	free(p);
	p = each_program(0);
	if (!tap_ok(p != NULL, "validator: a probe of every match (%s)", p ? "" : errbuf))
		return;
	xpu_program_disassemble(p, dis, sizeof(dis));
	tap_ok(strstr(dis, "probe (r1, each match)") != NULL, "disassembly says 'each match'");
	tap_ok(xpu_program_expands(p), "xpu_program_expands");

	/* three outer rows (keys 5, 6, 7): 3 + 1 + 0 output rows */
	key_chunk(&cd, &chunk, kcol, &valid, 3, tabs);
	{
		XpuResult	res;
		XpuValue	vals[8];
		uint8_t		nulls[8], mask[8];
		XpuError	err = {0};
		void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(p) + 15) & ~(size_t) 15);
		JxRows		got = {0};
		Collect		cl = {&got, 1};
		int			rc;

		res.nrows = 3;
		res.mask = mask;
		res.values = vals;
		res.nulls = nulls;
		xpu_cpu_exec(p, &chunk, &res, ws, &err);
		tap_ok(err.code == XPU_ERR_INVALID_ARGUMENT,
			   "xpu_cpu_exec refuses a program whose rows expand (%s)", err.message);
		memset(&err, 0, sizeof(err));
		xpu_row_exec(p, &chunk, &res, &err);
		tap_ok(err.code == XPU_ERR_INTERNAL,
			   "xpu_row_exec (no XpuEach) fails on a probe of every match (%s)", err.message);
		memset(&err, 0, sizeof(err));
		res.nrows = 2;
		rc = xpu_cpu_exec_each(p, &chunk, &res, ws, &err, collect, &cl);
		tap_ok(rc == 1 && got.n == 4,
			   "xpu_cpu_exec_each: 4 rows from keys 5 (three rows), 6 (one), 7 (none): %lld",
			   (long long) got.n);
		tap_ok(got.n == 4 && got.r[0].v[0] == 5 && got.r[1].v[0] == 5 && got.r[2].v[0] == 5 &&
			   got.r[3].v[0] == 6, "... their payloads in inner-row order");
		free(got.r);
		free(ws);
	}
	free(p);
	free(t);
}

/* ---------------------------------------------------------------- unique keys */

/* a table of text keys keys[n] (payload: none) */
static XpuJoinTable *
text_table(const char *const *keys, int n)
{
	XpuJoinSpec sp;
	XpuValue	kv[16];

	memset(&sp, 0, sizeof(sp));
	sp.n_keys = 1;
	sp.keys[0].type = sp.keys[0].probe_type = XPU_T_TEXT;
	for (int i = 0; i < n; i++)
	{
		kv[i].t.p = keys[i];
		kv[i].t.len = (int32_t) strlen(keys[i]);
	}
	return built(&sp, n, kv, NULL);
}

/* does validation refuse t with flags f, saying what */
static int
refused_with_flags(const XpuJoinTable *t, uint32_t f, const char *what)
{
	XpuJoinTable *c = (XpuJoinTable *) aligned_alloc(16, t->total_len);
	XpuError	err = {0};
	int			ok;

	memcpy(c, t, t->total_len);
	c->flags = f;
	ok = !xpu_join_table_validate(c, c->total_len, &err) && strstr(err.message, what) != NULL;
	if (!ok)
		tap_diag("validation: code %d (%s)", err.code, err.message);
	free(c);
	return ok;
}

/*
 * the builder finds unique keys (dense: always; hash, inline or text keys:
 * no key twice), validation refuses a false claim, and a probe of every
 * match of a table of unique keys runs vectorised with the rows, and the
 * counts, of the per-row form
 */
static void
test_unique(void)
{
	static const int64_t dense[3] = {5, 6, 7}, spread[3] = {5, 1000, 700000},
				twice[4] = {5, 70000, 6, 5};
	static const char *const texts[3] = {"air", "rail", "a key longer than sixteen bytes"},
			   *const texts2[4] = {"air", "a key longer than sixteen bytes", "rail",
								   "a key longer than sixteen bytes"};
	XpuJoinTable *td = int_table(dense, 3), *th = int_table(spread, 3),
			   *tt = int_table(twice, 4), *sx = text_table(texts, 3),
			   *sx2 = text_table(texts2, 4);
	XpuProgram *p = each_program(0);
	int32_t		kcol[4] = {5, 6, 700000, 1000};
	uint8_t		valid = 0x0f;
	XpuColumnData cd;
	XpuChunk	chunk;
	const XpuJoinTable *tabs[1];
	XpuError	err = {0};

	if (!tap_ok(td && th && tt && sx && sx2 && p, "unique keys: tables and program build"))
		return;
	tap_ok(td->form == XPU_JOIN_DENSE && td->flags == XPU_JOIN_UNIQUE, "a dense table is unique");
	tap_ok(th->form == XPU_JOIN_HASH && th->inline_key && th->flags == XPU_JOIN_UNIQUE,
		   "a hash table of spread unique int4 keys is unique");
	tap_ok(tt->form == XPU_JOIN_HASH && tt->flags == 0, "... with a key twice it is not");
	tap_ok(!sx->inline_key && sx->flags == XPU_JOIN_UNIQUE, "a table of unique text keys is unique");
	tap_ok(!sx2->inline_key && sx2->flags == 0, "... with a long text key twice it is not");
	tap_ok(xpu_join_table_validate(th, th->total_len, &err) &&
		   xpu_join_table_validate(sx, sx->total_len, &err),
		   "validation takes the builder's unique tables");
	tap_ok(refused_with_flags(tt, XPU_JOIN_UNIQUE, "keys not unique") &&
		   refused_with_flags(sx2, XPU_JOIN_UNIQUE, "keys not unique"),
		   "validation refuses a table of repeated keys that claims to be unique");
	tap_ok(refused_with_flags(th, XPU_JOIN_UNIQUE | 2, "flags"), "validation refuses unknown flags");

	/* outer keys 5, 6, 700000, 1000: matches, none, matches, matches */
	key_chunk(&cd, &chunk, kcol, &valid, 4, tabs);
	tabs[0] = tt;
	tap_ok(xpu_program_expands_over(p, tabs, 1), "the probe expands over repeated keys");
	tabs[0] = th;
	tap_ok(xpu_program_expands(p) && !xpu_program_expands_over(p, tabs, 1),
		   "... not over unique keys");
	{
		XpuValue	vals[4];
		uint8_t		nulls[4], mask[4];
		XpuResult	res = {4, mask, vals, nulls};
		void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(p) + 15) & ~(size_t) 15);
		uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0}, probes1[XPU_JOIN_COUNT_DEPTHS] = {0};
		JxRows		got = {0};
		Collect		cl = {&got, 1};
		int			rc;

		memset(&err, 0, sizeof(err));
		rc = xpu_cpu_exec_counted(p, &chunk, &res, ws, &err, probes);
		tap_ok(rc == XPU_OK && mask[0] && !mask[1] && mask[2] && mask[3] &&
			   vals[0].i == 5 && vals[2].i == 700000 && vals[3].i == 1000 && probes[0] == 4,
			   "xpu_cpu_exec runs it vectorised: rows 0, 2, 3 with their payloads (%s)",
			   err.message);
		/* the per-row form (room for one row at a time) gives the same rows and counts */
		res.nrows = 1;
		memset(&err, 0, sizeof(err));
		rc = xpu_cpu_exec_each_counted(p, &chunk, &res, ws, &err, collect, &cl, probes1);
		tap_ok(rc == 1 && got.n == 3 && got.r[0].v[0] == 5 && got.r[1].v[0] == 700000 &&
			   got.r[2].v[0] == 1000 && probes1[0] == probes[0],
			   "xpu_cpu_exec_each per row: the same 3 rows and probe count (%lld rows)",
			   (long long) got.n);
		free(got.r);
		free(ws);
	}
	{
		/*
		 * the GPU kernel's form of a run that does not expand (kern_agg.cu:
		 * no XpuEach): each row once through the whole program, the probe
		 * taking the first match; the compacted walk may set rows aside
		 */
		const uint16_t *st = p->stage_start;
		XpuValue	regs[XPU_MAX_REGS],
					regs0[XPU_MAX_REGS];
		uint8_t		nulls[XPU_MAX_REGS],
					null0[XPU_MAX_REGS];
		int			passed[4],
					cp;

		memset(&err, 0, sizeof(err));
		memset(regs0, 0, sizeof(regs0));
		memset(null0, 1, sizeof(null0));
		xpu_row_run(p, 0, p->n_hoisted, &chunk, chunk.cols, 0, regs0, null0, 1, &err);
		for (int64_t row = 0; row < 4; row++)
		{
			memcpy(regs, regs0, sizeof(regs));
			memcpy(nulls, null0, sizeof(nulls));
			xpu_row_run(p, p->n_hoisted, st[XPU_STAGE_GROUP], &chunk, chunk.cols, row, regs,
						nulls, 1, &err);
			passed[row] = XPU_TRUE(&regs[0], nulls[0]);
			if (passed[row])
				xpu_row_run(p, st[XPU_STAGE_PROJ], st[XPU_N_STAGES], &chunk, chunk.cols, row,
							regs, nulls, 1, &err);
			if (row != 1 && passed[row] && regs[XPU_OUTS(p)[0]].i !=
				kcol[row])
				passed[row] = -1;
		}
		tap_ok(err.code == XPU_OK && passed[0] == 1 && passed[1] == 0 && passed[2] == 1 &&
			   passed[3] == 1,
			   "the per-row form without an XpuEach probes its first match: rows 0, 2, 3 (%s)",
			   err.message);
		cp = xpu_program_compact_point(p, tabs, 1);
		tabs[0] = tt;
		tap_ok(cp >= 0 && xpu_program_compact_point(p, tabs, 1) == -1,
			   "a compact point over unique keys (%d), none over repeated ones", cp);
		tabs[0] = th;
	}
	free(p);
	free(td);
	free(th);
	free(tt);
	free(sx);
	free(sx2);
}

int
main(void)
{
	test_cases();
	test_refusals();
	test_unique();
	return tap_done();
}
