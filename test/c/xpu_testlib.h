/*
 * xpu_testlib.h
 *		Helpers shared by the xPU unit tests (test_xpu.c) and the oracle
 *		harness (xpu_harness.c): Arrow column buffers built from test values,
 *		one-opcode programs over them, and runs through both interpreter
 *		forms (per row, as on the GPU, and per tile, as on the CPU) whose
 *		results must be identical.
 */
#ifndef XPU_TESTLIB_H
#define XPU_TESTLIB_H

#include <stdlib.h>
#include <string.h>

#include "xpu_program.h"
#include "xpu_date.h"
#include "xpu_half.h"

/* one test value of any register type; dates/timestamps in PostgreSQL's
 * epoch (days / us since 2000), numerics scaled by the type's scale, float2
 * as its 16 bits in i */
typedef struct TVal
{
	int			null;
	int64_t		i;
	double		f;
	__int128	n;
	const char *s;				/* text */
	int32_t		len;
	XpuInterval iv;				/* interval */
} TVal;

/* an Arrow column built from nrows test values of one type */
typedef struct TCol
{
	XpuType		type;
	int			scale;
	XpuColKind	kind;
	uint8_t    *validity;
	void	   *values;
	char	   *data;
} TCol;

static inline XpuColKind
tcol_kind(XpuType t)
{
	switch (t)
	{
		case XPU_T_BOOL: return XPU_COL_BOOL;
		case XPU_T_INT2: return XPU_COL_INT16;
		case XPU_T_INT4: return XPU_COL_INT32;
		case XPU_T_INT8: return XPU_COL_INT64;
		case XPU_T_FLOAT4: return XPU_COL_FLOAT32;
		case XPU_T_FLOAT8: return XPU_COL_FLOAT64;
		case XPU_T_FLOAT2: return XPU_COL_FLOAT16;
		case XPU_T_NUMERIC: return XPU_COL_DECIMAL128;
		case XPU_T_DATE: return XPU_COL_DATE32;
		case XPU_T_TIMESTAMP:
		case XPU_T_TIMESTAMPTZ: return XPU_COL_TIMESTAMP_US;
		case XPU_T_INTERVAL: return XPU_COL_INTERVAL_MDN;
		default: return XPU_COL_UTF8;
	}
}

/* fill col with vals[0 .. n-1], Arrow layout (1970 epochs) */
static inline void
tcol_build(TCol *col, XpuType t, int scale, const TVal *vals, int64_t n)
{
	int64_t		i, pos = 0, total = 0;

	col->type = t;
	col->scale = scale;
	col->kind = tcol_kind(t);
	col->validity = (uint8_t *) calloc((size_t) n / 8 + 1, 1);
	col->values = calloc((size_t) n + 1, 16);
	col->data = NULL;
	for (i = 0; i < n; i++)
		total += vals[i].null || t != XPU_T_TEXT ? 0 : vals[i].len;
	if (t == XPU_T_TEXT)
		col->data = (char *) malloc((size_t) total + 1);
	for (i = 0; i < n; i++)
	{
		const TVal *v = &vals[i];

		if (!v->null)
			col->validity[i / 8] |= (uint8_t) (1 << (i % 8));
		switch (t)
		{
			case XPU_T_BOOL:
				if (!v->null && v->i)
					((uint8_t *) col->values)[i / 8] |= (uint8_t) (1 << (i % 8));
				break;
			case XPU_T_INT2: ((int16_t *) col->values)[i] = (int16_t) v->i; break;
			case XPU_T_INT4: ((int32_t *) col->values)[i] = (int32_t) v->i; break;
			case XPU_T_INT8: ((int64_t *) col->values)[i] = v->i; break;
			case XPU_T_FLOAT4: ((float *) col->values)[i] = (float) v->f; break;
			case XPU_T_FLOAT8: ((double *) col->values)[i] = v->f; break;
			case XPU_T_FLOAT2: ((uint16_t *) col->values)[i] = (uint16_t) v->i; break;
			case XPU_T_NUMERIC: memcpy((char *) col->values + 16 * i, &v->n, 16); break;
			case XPU_T_INTERVAL:
				{
					char	   *p = (char *) col->values + 16 * i;
					int64_t		ns = v->iv.us * 1000;

					memcpy(p, &v->iv.months, 4);
					memcpy(p + 4, &v->iv.days, 4);
					memcpy(p + 8, &ns, 8);
					break;
				}
			case XPU_T_DATE:
				((int32_t *) col->values)[i] =
					(int32_t) (uint32_t) ((uint64_t) v->i + XPU_UNIX_EPOCH_DAYS);
				break;
			case XPU_T_TIMESTAMP:
			case XPU_T_TIMESTAMPTZ:
				((int64_t *) col->values)[i] =
					(int64_t) ((uint64_t) v->i + UINT64_C(946684800000000));
				break;
			default:
				((int32_t *) col->values)[i] = (int32_t) pos;
				if (!v->null)
				{
					memcpy(col->data + pos, v->s, (size_t) v->len);
					pos += v->len;
				}
				((int32_t *) col->values)[i + 1] = (int32_t) pos;
				break;
		}
	}
}

static inline void
tcol_free(TCol *col)
{
	free(col->validity);
	free(col->values);
	free(col->data);
}

/* the results of one program over one chunk in both forms */
typedef struct TRun
{
	int64_t		nrows;
	XpuResult	res[2];			/* [0] per row, [1] per tile */
	XpuError	err[2];
} TRun;

static inline void
trun_free(TRun *r)
{
	int			k;

	for (k = 0; k < 2; k++)
	{
		free(r->res[k].mask);
		free(r->res[k].values);
		free(r->res[k].nulls);
	}
}

#define TRUN_MAX_PARTS	8

/*
 * run prog over ncols columns of nrows rows in both forms; with n_cuts > 0
 * the per-row form reads them as a chunk of n_cuts + 1 parts (XpuChunk.parts,
 * the GPU's launch over several record batches), part p starting at row
 * cuts[p - 1] (ascending; equal cuts make empty parts), each part an Arrow
 * slice (XpuColumnData.offset) of the same buffers
 */
static inline void
trun_exec_parts(TRun *r, const XpuProgram *prog, const TCol *cols, int ncols, int64_t nrows,
				const int64_t *cuts, int n_cuts)
{
	XpuColumnData cd[TRUN_MAX_PARTS][8];
	XpuChunkPart parts[TRUN_MAX_PARTS];
	XpuChunk	chunk,
				parted;
	void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	int			k, p;

	memset(cd, 0, sizeof(cd));
	for (p = 0; p <= n_cuts && p < TRUN_MAX_PARTS; p++)
	{
		parts[p].first_row = p == 0 ? 0 : cuts[p - 1];
		parts[p].cols = cd[p];
		for (k = 0; k < ncols; k++)
		{
			cd[p][k].validity = cols[k].validity;
			cd[p][k].values = cols[k].values;
			cd[p][k].data = cols[k].data;
			cd[p][k].offset = parts[p].first_row;
		}
	}
	memset(&chunk, 0, sizeof(chunk));
	chunk.nrows = nrows;
	chunk.ncols = ncols;
	chunk.n_parts = 0;
	chunk.cols = cd[0];
	chunk.parts = NULL;
	parted = chunk;
	if (n_cuts > 0)
	{
		parted.n_parts = n_cuts + 1;
		parted.parts = parts;
	}
	r->nrows = nrows;
	for (k = 0; k < 2; k++)
	{
		size_t		nout = (size_t) (prog->n_outs ? prog->n_outs : 1) * (size_t) (nrows + 1);

		memset(&r->err[k], 0, sizeof(XpuError));
		r->res[k].nrows = nrows;
		r->res[k].mask = (uint8_t *) calloc((size_t) nrows + 1, 1);
		r->res[k].values = (XpuValue *) calloc(nout, sizeof(XpuValue));
		r->res[k].nulls = (uint8_t *) calloc(nout, 1);
	}
	xpu_row_exec(prog, &parted, &r->res[0], &r->err[0]);
	xpu_cpu_exec(prog, &chunk, &r->res[1], ws, &r->err[1]);
	free(ws);
}

/* run prog over ncols columns of nrows rows in both forms */
static inline void
trun_exec(TRun *r, const XpuProgram *prog, const TCol *cols, int ncols, int64_t nrows)
{
	trun_exec_parts(r, prog, cols, ncols, nrows, NULL, 0);
}

/* are two values of type t equal (NaN equal to NaN, text by content) */
static inline int
tval_same(XpuType t, const XpuValue *a, const XpuValue *b)
{
	switch (t)
	{
		case XPU_T_FLOAT4:
			return (a->f4 != a->f4 && b->f4 != b->f4) || memcmp(&a->f4, &b->f4, 4) == 0;
		case XPU_T_FLOAT8:
			return (a->f8 != a->f8 && b->f8 != b->f8) || memcmp(&a->f8, &b->f8, 8) == 0;
		case XPU_T_FLOAT2:
			return (xpu_half_isnan((uint16_t) a->i) && xpu_half_isnan((uint16_t) b->i)) ||
				a->i == b->i;
		case XPU_T_NUMERIC: return a->n == b->n;
		case XPU_T_TEXT:
			return a->t.len == b->t.len && memcmp(a->t.p, b->t.p, (size_t) a->t.len) == 0;
		case XPU_T_INTERVAL:
			return a->iv.months == b->iv.months && a->iv.days == b->iv.days &&
				a->iv.us == b->iv.us;
		default: return a->i == b->i;
	}
}

/* do both forms agree on the results of output 0 (of type t) and errors */
static inline int
trun_agree(const TRun *r, const XpuProgram *prog, XpuType t)
{
	int64_t		i;
	int			k;

	if (r->err[0].code != r->err[1].code)
		return 0;
	if (r->err[0].code != XPU_OK)
		return 1;
	for (i = 0; i < r->nrows; i++)
	{
		if (r->res[0].mask[i] != r->res[1].mask[i])
			return 0;
		for (k = 0; k < prog->n_outs; k++)
		{
			int64_t		o = k * r->nrows + i;

			if (r->res[0].nulls[o] != r->res[1].nulls[o])
				return 0;
			if (k == 0 && !r->res[0].nulls[o] &&
				!tval_same(t, &r->res[0].values[o], &r->res[1].values[o]))
				return 0;
		}
	}
	return 1;
}

/* a program of one opcode over loaded (or constant) arguments */
typedef struct TOp
{
	XpuOpcode	op;
	XpuType		rt;				/* result type and scale */
	int			rs;
	int			nargs;
	XpuType		at[3];			/* argument types and scales */
	int			as[3];
	int			is_const[3];	/* argument k is CONST_INT const_val[k] */
	int64_t		const_val[3];
	int32_t		imm;			/* the immediate, unless a constant sets it */
	const char *text;			/* a text constant for imm (LIKE_*) */
	int32_t		textlen;
	const int64_t *list;		/* an IN list for imm (IN_INT, IN_F8) */
	const char *const *tlist;	/* an IN list of texts (IN_TEXT) */
	const int32_t *tlens;
	int			nlist;
	int			sorted;
	int			has_null;
} TOp;

/*
 * top_build: registers r0 .. r(nargs-1) hold the arguments (LOAD_COL of
 * column k, or CONST_INT), r(nargs) the result, the only output; the
 * opcode runs in the PROJ stage.  NULL with errbuf filled if invalid.
 */
static inline XpuProgram *
top_build(const TOp *o, char *errbuf, size_t errlen)
{
	XpuBuilder *b = xpu_builder_create();
	XpuProgram *prog;
	int32_t		imm = o->imm;
	int			k, a[3] = {0, 0, 0}, d;

	for (k = 0; k < o->nargs; k++)
	{
		a[k] = xpu_add_reg(b, o->at[k], o->as[k]);
		if (o->is_const[k])
			xpu_add_instr(b, XPU_OP_CONST_INT, a[k], 0, 0, 0,
						  xpu_add_const(b, &o->const_val[k], 8));
		else
			xpu_add_instr(b, XPU_OP_LOAD_COL, a[k], 0, 0, 0,
						  xpu_add_column(b, k, tcol_kind(o->at[k]), o->as[k]));
	}
	d = xpu_add_reg(b, o->rt, o->rs);
	if (o->text)
		imm = xpu_add_const_text(b, o->text, o->textlen);
	else if (o->list)
		imm = xpu_add_in_list(b, o->list, o->nlist, o->sorted, o->has_null);
	else if (o->tlist)
		imm = xpu_add_in_text_list(b, o->tlist, o->tlens, o->nlist, o->has_null);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_instr(b, o->op, d, a[0], a[1], a[2], imm);
	xpu_add_output(b, d);
	prog = xpu_builder_finish(b, errbuf, errlen);
	xpu_builder_free(b);
	return prog;
}

#endif							/* XPU_TESTLIB_H */
