/*-------------------------------------------------------------------------
 *
 * xpu_build.c
 *		Host-side handling of xPU programs (xpu_program.h): a builder that
 *		lays a program out, the validator that every program passes before
 *		it runs (a malformed program is an error, never a crash), and the
 *		disassembler that prints a program for EXPLAIN VERBOSE.
 *
 * Plain C, no PostgreSQL headers: the backend (codegen.c), the service
 * and the tests link it.  Allocation failures are reported, not aborted on.
 *
 *-------------------------------------------------------------------------
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xpu_program.h"
#include "xpu_date.h"
#include "xpu_half.h"
#include "xpu_join.h"

/* what the opcode table says about each opcode */
typedef enum OpKind
{
	KIND_VAL,
	KIND_NS,
	KIND_MASK
} OpKind;

typedef struct OpInfo
{
	const char *name;
	uint8_t		kind;
	uint8_t		nargs;
	uint8_t		result;
	uint8_t		args[3];
	const char *form;
} OpInfo;

static const OpInfo op_info[] = {
#define XPU_OP_INFO(NAME, KIND, NARGS, R, A1, A2, A3, FORM) \
	{#NAME, KIND_##KIND, NARGS, XPU_T_##R, {XPU_T_##A1, XPU_T_##A2, XPU_T_##A3}, FORM},
	XPU_OPCODE_TABLE(XPU_OP_INFO)
#undef XPU_OP_INFO
};

static const char *const type_names[XPU_T_N_TYPES] = {
	"none", "bool", "int2", "int4", "int8", "float4", "float8", "numeric",
	"date", "time", "timestamp", "timestamptz", "interval", "text", "float2"
};

const char *
xpu_opcode_name(int op)
{
	return op >= 0 && op < XPU_N_OPCODES ? op_info[op].name : "?";
}

const char *
xpu_type_name(int type)
{
	return type > 0 && type < XPU_T_N_TYPES ? type_names[type] : "?";
}

/* the opcode called name, or -1 */
int
xpu_opcode_lookup(const char *name)
{
	int			op;

	for (op = 0; op < XPU_N_OPCODES; op++)
	{
		if (strcmp(op_info[op].name, name) == 0)
			return op;
	}
	return -1;
}

/* ---------------- builder ---------------- */

/* a growable byte array */
typedef struct Buf
{
	char	   *data;
	size_t		len;
	size_t		cap;
} Buf;

struct XpuBuilder
{
	Buf			instrs;
	Buf			regs;
	Buf			cols;
	Buf			outs;
	Buf			consts;
	uint16_t	stage_start[XPU_N_STAGES + 1];
	int			stage;			/* the stage being filled */
	int			failed;			/* out of memory or a limit exceeded */
};

/* append len bytes (NULL: zeros) aligned to align; returns the offset or -1 */
static long
buf_append(XpuBuilder *b, Buf *buf, const void *bytes, size_t len, size_t align)
{
	size_t		off = (buf->len + align - 1) & ~(align - 1);

	if (off + len > buf->cap)
	{
		size_t		cap = buf->cap ? buf->cap * 2 : 256;
		char	   *p;

		while (cap < off + len)
			cap *= 2;
		p = (char *) realloc(buf->data, cap);
		if (p == NULL)
		{
			b->failed = 1;
			return -1;
		}
		buf->data = p;
		buf->cap = cap;
	}
	memset(buf->data + buf->len, 0, off - buf->len);
	if (bytes)
		memcpy(buf->data + off, bytes, len);
	else
		memset(buf->data + off, 0, len);
	buf->len = off + len;
	return (long) off;
}

XpuBuilder *
xpu_builder_create(void)
{
	return (XpuBuilder *) calloc(1, sizeof(XpuBuilder));
}

void
xpu_builder_free(XpuBuilder *b)
{
	if (b == NULL)
		return;
	free(b->instrs.data);
	free(b->regs.data);
	free(b->cols.data);
	free(b->outs.data);
	free(b->consts.data);
	free(b);
}

/* a new register of type (and scale for numeric); returns its index or -1 */
int
xpu_add_reg(XpuBuilder *b, XpuType type, int scale)
{
	XpuReg		r;
	long		off;

	if (b->regs.len / sizeof(XpuReg) >= XPU_MAX_REGS)
	{
		b->failed = 1;
		return -1;
	}
	memset(&r, 0, sizeof(r));
	r.type = (uint8_t) type;
	r.scale = (int16_t) scale;
	off = buf_append(b, &b->regs, &r, sizeof(r), 1);
	return off < 0 ? -1 : (int) (off / sizeof(XpuReg));
}

/* a column descriptor; returns its index (LOAD_COL's imm) or -1 */
int
xpu_add_column(XpuBuilder *b, int col_index, XpuColKind kind, int scale)
{
	XpuColumn	c;
	long		off;

	memset(&c, 0, sizeof(c));
	c.col_index = (uint16_t) col_index;
	c.kind = (uint8_t) kind;
	c.width = (uint8_t) xpu_col_kind_width(kind);
	c.scale = scale;
	off = buf_append(b, &b->cols, &c, sizeof(c), 1);
	return off < 0 ? -1 : (int) (off / sizeof(XpuColumn));
}

/* len bytes into the constants pool, 8-byte aligned; returns the offset */
int32_t
xpu_add_const(XpuBuilder *b, const void *bytes, size_t len)
{
	return (int32_t) buf_append(b, &b->consts, bytes, len, 8);
}

/* a text constant (int32 length + bytes); returns its offset */
int32_t
xpu_add_const_text(XpuBuilder *b, const char *s, int32_t len)
{
	long		off = buf_append(b, &b->consts, &len, sizeof(len), 8);

	if (off >= 0 && buf_append(b, &b->consts, s, (size_t) len, 1) < 0)
		return -1;
	return (int32_t) off;
}

/* an IN list of int64 or float8 bit patterns; returns its offset */
int32_t
xpu_add_in_list(XpuBuilder *b, const int64_t *vals, int n, int sorted, int has_null)
{
	XpuInList	h;
	long		off;

	memset(&h, 0, sizeof(h));
	h.n = n;
	h.sorted = (uint8_t) (sorted != 0);
	h.has_null = (uint8_t) (has_null != 0);
	off = buf_append(b, &b->consts, &h, sizeof(h), 8);
	if (off >= 0 && buf_append(b, &b->consts, vals, (size_t) n * 8, 1) < 0)
		return -1;
	return (int32_t) off;
}

/* an IN list of texts: header, offsets, then the texts; returns its offset */
int32_t
xpu_add_in_text_list(XpuBuilder *b, const char *const *strs, const int32_t *lens,
					 int n, int has_null)
{
	XpuInList	h;
	long		off, offs;
	int			i;

	memset(&h, 0, sizeof(h));
	h.n = n;
	h.has_null = (uint8_t) (has_null != 0);
	off = buf_append(b, &b->consts, &h, sizeof(h), 8);
	offs = buf_append(b, &b->consts, NULL, (size_t) n * sizeof(int32_t), 1);
	for (i = 0; i < n && off >= 0 && offs >= 0; i++)
	{
		int32_t		t = xpu_add_const_text(b, strs[i], lens[i]);
		int32_t		rel = t - (int32_t) off;

		if (t < 0)
			return -1;
		memcpy(b->consts.data + offs + (size_t) i * sizeof(int32_t), &rel, sizeof(rel));
	}
	return off < 0 || offs < 0 ? -1 : (int32_t) off;
}

/* append an instruction; returns its index or -1 */
int
xpu_add_instr(XpuBuilder *b, XpuOpcode op, int dst, int a, int bb, int c, int32_t imm)
{
	XpuInstr	in;
	long		off;

	if (b->instrs.len / sizeof(XpuInstr) >= UINT16_MAX)
	{
		b->failed = 1;
		return -1;
	}
	memset(&in, 0, sizeof(in));
	in.op = (uint16_t) op;
	in.dst = (uint8_t) dst;
	in.a = (uint16_t) a;
	in.b = (uint16_t) bb;
	in.c = (uint16_t) c;
	in.imm = imm;
	off = buf_append(b, &b->instrs, &in, sizeof(in), 1);
	return off < 0 ? -1 : (int) (off / sizeof(XpuInstr));
}

/* the instructions added from now on belong to stage (stages in order) */
void
xpu_begin_stage(XpuBuilder *b, XpuStage stage)
{
	uint16_t	here = (uint16_t) (b->instrs.len / sizeof(XpuInstr));

	if ((int) stage < b->stage)
	{
		b->failed = 1;
		return;
	}
	while (b->stage < (int) stage)
		b->stage_start[++b->stage] = here;
}

/* register reg becomes the next output column; returns its index or -1 */
int
xpu_add_output(XpuBuilder *b, int reg)
{
	uint8_t		r = (uint8_t) reg;
	long		off = buf_append(b, &b->outs, &r, 1, 1);

	return (int) off;
}

/*
 * count_reg_uses: writes[r] and reads[r] = how many of the n instructions
 * write and read register r (the arguments the opcode reads; reads also
 * counts the n_outs outputs); reads may be NULL
 */
static void
count_reg_uses(const XpuInstr *ins, int n, const uint8_t *outs, int n_outs,
			   int *writes, int *reads)
{
	memset(writes, 0, sizeof(int) * (XPU_MAX_REGS + 1));
	if (reads != NULL)
		memset(reads, 0, sizeof(int) * (XPU_MAX_REGS + 1));
	for (int pc = 0; pc < n; pc++)
	{
		const OpInfo *oi = &op_info[ins[pc].op];
		const uint16_t args[3] = {ins[pc].a, ins[pc].b, ins[pc].c};

		if (oi->result != XPU_T_NONE)
			writes[ins[pc].dst]++;
		for (int k = 0; reads != NULL && k < oi->nargs; k++)
			reads[args[k] <= XPU_MAX_REGS ? args[k] : XPU_MAX_REGS]++;
	}
	for (int k = 0; reads != NULL && k < n_outs; k++)
		reads[outs[k]]++;
}

/*
 * xpu_builder_fold_moves: removes each MOVE whose argument is a temporary
 * that only the instruction just before it (in the same stage) writes and
 * only the MOVE reads, and that is no output: that instruction writes the
 * MOVE's destination itself (codegen's "r0 = rN" after each conjunct).
 * Both ran under the same mask one after the other, so every row gets the
 * same values; the instruction must not read the destination, whose old
 * value it would otherwise see changed.  Returns how many were removed.
 */
int
xpu_builder_fold_moves(XpuBuilder *b)
{
	XpuInstr   *ins = (XpuInstr *) b->instrs.data;
	int			n = (int) (b->instrs.len / sizeof(XpuInstr));
	int			writes[XPU_MAX_REGS + 1];
	int			reads[XPU_MAX_REGS + 1];
	uint16_t	start[XPU_N_STAGES + 1];
	int			out = 0,
				stage = 0,
				removed = 0;

	if (b->failed)
		return 0;
	count_reg_uses(ins, n, (const uint8_t *) b->outs.data, (int) b->outs.len, writes, reads);
	memcpy(start, b->stage_start, sizeof(start));
	for (int pc = 0; pc < n; pc++)
	{
		XpuInstr   *prev = out > 0 ? &ins[out - 1] : NULL;
		int			t = ins[pc].a;
		int			d = ins[pc].dst;

		while (stage < b->stage && pc == b->stage_start[stage + 1])
			start[++stage] = (uint16_t) out;
		if (ins[pc].op == XPU_OP_MOVE && prev != NULL && out > start[stage] &&
			op_info[prev->op].kind != KIND_MASK && prev->dst == t && t != d &&
			writes[t] == 1 && reads[t] == 1)
		{
			const OpInfo *pi = &op_info[prev->op];
			const uint16_t pargs[3] = {prev->a, prev->b, prev->c};
			int			reads_d = 0;

			for (int k = 0; k < pi->nargs; k++)
				reads_d |= pargs[k] == d;
			if (!reads_d)
			{
				prev->dst = (uint8_t) d;
				writes[t] = reads[t] = 0;
				removed++;
				continue;
			}
		}
		ins[out++] = ins[pc];
	}
	while (stage < b->stage)
		start[++stage] = (uint16_t) out;
	memcpy(b->stage_start, start, sizeof(start));
	b->instrs.len = (size_t) out * sizeof(XpuInstr);
	return removed;
}

/* copy one section into the program at its 16-byte aligned offset */
static uint32_t
place(char *prog, size_t *pos, const Buf *buf)
{
	uint32_t	off = (uint32_t) *pos;

	if (buf->len)
		memcpy(prog + off, buf->data, buf->len);
	*pos = (off + buf->len + 15) & ~(size_t) 15;
	return off;
}

/*
 * xpu_builder_finish: lay the program out in one malloc'ed block (the
 * caller frees it) and validate it; NULL with a message in errbuf if the
 * builder failed or the program is not valid.  The builder stays the
 * caller's to free.
 */
XpuProgram *
xpu_builder_finish(XpuBuilder *b, char *errbuf, size_t errlen)
{
	size_t		total = (sizeof(XpuProgram) + 15) & ~(size_t) 15;
	size_t		pos = total;
	XpuProgram *prog;
	char	   *p;

	if (b->failed)
	{
		snprintf(errbuf, errlen, "xpu program builder ran out of memory or limits");
		return NULL;
	}
	xpu_begin_stage(b, XPU_N_STAGES);
	total += ((b->instrs.len + 15) & ~(size_t) 15) + ((b->regs.len + 15) & ~(size_t) 15) +
		((b->cols.len + 15) & ~(size_t) 15) + ((b->outs.len + 15) & ~(size_t) 15) +
		((b->consts.len + 15) & ~(size_t) 15);
	if (total > UINT32_MAX || (p = (char *) calloc(1, total)) == NULL)
	{
		snprintf(errbuf, errlen, "xpu program too large");
		return NULL;
	}
	prog = (XpuProgram *) p;
	prog->magic = XPU_PROGRAM_MAGIC;
	prog->version = XPU_PROGRAM_VERSION;
	prog->total_len = (uint32_t) total;
	prog->n_instrs = (uint16_t) (b->instrs.len / sizeof(XpuInstr));
	prog->n_regs = (uint16_t) (b->regs.len / sizeof(XpuReg));
	prog->n_cols = (uint16_t) (b->cols.len / sizeof(XpuColumn));
	prog->n_outs = (uint16_t) b->outs.len;
	prog->consts_len = (uint32_t) b->consts.len;
	prog->instrs_off = place(p, &pos, &b->instrs);
	prog->regs_off = place(p, &pos, &b->regs);
	prog->cols_off = place(p, &pos, &b->cols);
	prog->outs_off = place(p, &pos, &b->outs);
	prog->consts_off = place(p, &pos, &b->consts);
	memcpy(prog->stage_start, b->stage_start, sizeof(prog->stage_start));
	if (!xpu_program_validate(prog, total, errbuf, errlen))
	{
		free(prog);
		return NULL;
	}
	return prog;
}

/* is op one of the CONST_* opcodes (no arguments, no errors, one value) */
static int
is_const_op(int op)
{
	switch (op)
	{
		case XPU_OP_CONST_NULL:
		case XPU_OP_CONST_BOOL:
		case XPU_OP_CONST_INT:
		case XPU_OP_CONST_F2:
		case XPU_OP_CONST_F4:
		case XPU_OP_CONST_F8:
		case XPU_OP_CONST_NUM:
		case XPU_OP_CONST_TEXT:
		case XPU_OP_CONST_IV:
			return 1;
		default:
			return 0;
	}
}

/* programs longer than this are not searched for constants to hoist */
#define HOIST_MAX_INSTRS	4096

/*
 * may constant instruction i (in stage stage[i], under depth[i] masks) run
 * once for all rows: no other instruction writes its register, and every
 * row that reads the register ran it before.  A reader runs only where i
 * ran when it comes later in the same stage with the mask depth never below
 * i's in between (i's mask still narrows it), or in a later stage when i
 * is at depth 0 of LOAD or QUAL (which run for every row).  As an output
 * (read for passing rows) the register needs i at depth 0.
 */
static int
hoistable(const XpuProgram *prog, int i, const uint8_t *stage, const uint8_t *depth,
		  const int *writes)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	int			t = ins[i].dst;

	if (writes[t] != 1)
		return 0;
	for (int k = 0; k < prog->n_outs; k++)
	{
		if (XPU_OUTS(prog)[k] == t && depth[i] != 0)
			return 0;
	}
	for (int j = 0; j < prog->n_instrs; j++)
	{
		const OpInfo *oi = &op_info[ins[j].op];
		const uint16_t args[3] = {ins[j].a, ins[j].b, ins[j].c};
		int			reads = 0;

		for (int k = 0; k < oi->nargs; k++)
			reads |= args[k] == t;
		if (!reads)
			continue;
		if (j < i)
			return 0;
		if (stage[j] != stage[i])
		{
			if (depth[i] != 0 || stage[i] >= XPU_STAGE_JOIN)
				return 0;
			continue;
		}
		for (int pc = i + 1; pc <= j; pc++)
		{
			if (depth[pc] < depth[i])
				return 0;
		}
	}
	return 1;
}

/*
 * xpu_program_hoist_consts: a copy of prog (malloc'ed) whose constants that
 * may run once for all rows (hoistable) come first, in their order, and are
 * counted in n_hoisted; NULL when none may (or out of memory): prog serves
 * as it is.  For the GPU's per-row interpreter, which then keeps their
 * registers for all of a thread's rows instead of filling them every row.
 */
XpuProgram *
xpu_program_hoist_consts(const XpuProgram *prog)
{
	int			n = prog->n_instrs;
	const XpuInstr *ins = XPU_INSTRS(prog);
	uint8_t    *stage, *depth, *hoist;
	int			writes[XPU_MAX_REGS + 1];
	int			n_hoist = 0;
	XpuProgram *out = NULL;

	if (n == 0 || n > HOIST_MAX_INSTRS || prog->n_hoisted != 0)
		return NULL;
	stage = (uint8_t *) calloc((size_t) n * 3, 1);
	if (stage == NULL)
		return NULL;
	depth = stage + n;
	hoist = depth + n;
	count_reg_uses(ins, n, NULL, 0, writes, NULL);
	for (int s = 0; s < XPU_N_STAGES; s++)
	{
		int			d = 0;

		for (int pc = prog->stage_start[s]; pc < prog->stage_start[s + 1]; pc++)
		{
			const OpInfo *oi = &op_info[ins[pc].op];

			stage[pc] = (uint8_t) s;
			if (ins[pc].op == XPU_OP_MASK_POP)
				d--;
			depth[pc] = (uint8_t) d;
			if (oi->kind == KIND_MASK && ins[pc].op != XPU_OP_MASK_POP)
				d++;
		}
	}
	for (int pc = 0; pc < n; pc++)
	{
		hoist[pc] = is_const_op(ins[pc].op) && hoistable(prog, pc, stage, depth, writes);
		n_hoist += hoist[pc];
	}
	if (n_hoist > 0 && (out = (XpuProgram *) malloc(prog->total_len)) != NULL)
	{
		XpuInstr   *oi;
		int			h = 0,
					r = n_hoist;
		char		errbuf[128];

		memcpy(out, prog, prog->total_len);
		oi = (XpuInstr *) ((char *) out + out->instrs_off);
		for (int pc = 0; pc < n; pc++)
			oi[hoist[pc] ? h++ : r++] = ins[pc];
		/* a stage starts later by the constants moved from it and after it */
		for (int s = 1; s <= XPU_N_STAGES; s++)
		{
			int			moved = 0;

			for (int pc = prog->stage_start[s]; pc < n; pc++)
				moved += hoist[pc];
			out->stage_start[s] = (uint16_t) (prog->stage_start[s] + moved);
		}
		out->n_hoisted = (uint16_t) n_hoist;
		if (!xpu_program_validate(out, out->total_len, errbuf, sizeof(errbuf)))
		{
			free(out);
			out = NULL;
		}
	}
	free(stage);
	return out;
}

/* ---------------- validator ---------------- */

/* a validation failure: message into errbuf, returns 0 */
static int	bad(char *errbuf, size_t errlen, const char *fmt,...)
			__attribute__((format(printf, 3, 4)));

static int
bad(char *errbuf, size_t errlen, const char *fmt,...)
{
	va_list		ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
	return 0;
}

/* does section [off, off + n * size) lie inside the program, aligned */
static int
section_ok(const XpuProgram *prog, uint32_t off, uint64_t n, uint64_t size)
{
	return off % 16 == 0 && off >= sizeof(XpuProgram) &&
		(uint64_t) off + n * size <= prog->total_len;
}

static int
check_header(const XpuProgram *prog, size_t len, char *errbuf, size_t errlen)
{
	int			s;

	if (len < sizeof(XpuProgram))
		return bad(errbuf, errlen, "xpu program shorter than its header");
	if (prog->magic != XPU_PROGRAM_MAGIC || prog->version != XPU_PROGRAM_VERSION)
		return bad(errbuf, errlen, "not an xpu program of version %d", XPU_PROGRAM_VERSION);
	if (prog->total_len != len || len % 16 != 0)
		return bad(errbuf, errlen, "xpu program length %u does not match %zu",
				   prog->total_len, len);
	if (prog->n_regs > XPU_MAX_REGS || (prog->n_regs == 0 && prog->n_instrs > 0))
		return bad(errbuf, errlen, "xpu program has %d registers", prog->n_regs);
	if (!section_ok(prog, prog->instrs_off, prog->n_instrs, sizeof(XpuInstr)) ||
		!section_ok(prog, prog->regs_off, prog->n_regs, sizeof(XpuReg)) ||
		!section_ok(prog, prog->cols_off, prog->n_cols, sizeof(XpuColumn)) ||
		!section_ok(prog, prog->outs_off, prog->n_outs, 1) ||
		!section_ok(prog, prog->consts_off, prog->consts_len, 1))
		return bad(errbuf, errlen, "xpu program section out of bounds");
	if (prog->stage_start[0] != 0 || prog->stage_start[XPU_N_STAGES] != prog->n_instrs)
		return bad(errbuf, errlen, "xpu program stages do not cover its instructions");
	for (s = 0; s < XPU_N_STAGES; s++)
	{
		if (prog->stage_start[s] > prog->stage_start[s + 1])
			return bad(errbuf, errlen, "xpu program stages out of order");
	}
	for (s = XPU_STAGE_GROUP; s <= XPU_STAGE_AGG; s++)
	{
		if (prog->stage_start[s] != prog->stage_start[s + 1])
			return bad(errbuf, errlen, "xpu program stage %d is not supported yet", s);
	}
	return 1;
}

/* registers, columns and outputs */
static int
check_tables(const XpuProgram *prog, char *errbuf, size_t errlen)
{
	const XpuReg *regs = XPU_REGS(prog);
	int			i;

	for (i = 0; i < prog->n_regs; i++)
	{
		if (regs[i].type == XPU_T_NONE || regs[i].type >= XPU_T_N_TYPES)
			return bad(errbuf, errlen, "register r%d has an unknown type", i);
		if (regs[i].type == XPU_T_NUMERIC ?
			(regs[i].scale < 0 || regs[i].scale > XPU_NUMERIC_MAX_SCALE) : regs[i].scale != 0)
			return bad(errbuf, errlen, "register r%d has an invalid scale", i);
	}
	for (i = 0; i < prog->n_cols; i++)
	{
		const XpuColumn *c = XPU_COLS(prog) + i;

		if (c->kind == 0 || c->kind >= XPU_COL_N_KINDS ||
			c->width != xpu_col_kind_width(c->kind) || c->scale < 0 ||
			(c->kind != XPU_COL_UTF8 && c->scale > XPU_NUMERIC_MAX_SCALE))
			return bad(errbuf, errlen, "column descriptor %d is invalid", i);
	}
	for (i = 0; i < prog->n_outs; i++)
	{
		if (XPU_OUTS(prog)[i] >= prog->n_regs)
			return bad(errbuf, errlen, "output %d names a missing register", i);
	}
	if (xpu_program_filters(prog) && regs[0].type != XPU_T_BOOL)
		return bad(errbuf, errlen, "the qual's register r0 is not bool");
	return 1;
}

static int
intlike(int t)
{
	return t == XPU_T_BOOL || t == XPU_T_INT2 || t == XPU_T_INT4 || t == XPU_T_INT8 ||
		t == XPU_T_DATE || t == XPU_T_TIME || t == XPU_T_TIMESTAMP ||
		t == XPU_T_TIMESTAMPTZ;
}

/* does register r satisfy type spec of an instruction with dst and arg a */
static int
type_ok(const XpuProgram *prog, int spec, int r, int dst, int a)
{
	const XpuReg *regs = XPU_REGS(prog);
	const XpuReg *x = &regs[r];

	switch (spec)
	{
		case XPU_T_ANY: return 1;
		case XPU_T_INTLIKE: return intlike(x->type);
		case XPU_T_DST: return x->type == regs[dst].type && x->scale == regs[dst].scale;
		case XPU_T_ARG1: return x->type == regs[a].type && x->scale == regs[a].scale;
		default: return x->type == spec;
	}
}

/* is there a constant of size bytes at off, aligned to 8 */
static int
const_ok(const XpuProgram *prog, int64_t off, int64_t size)
{
	return off >= 0 && off % 8 == 0 && size >= 0 && off + size <= prog->consts_len;
}

static int
const_text_ok(const XpuProgram *prog, int64_t off)
{
	int32_t		len;

	if (off < 0 || off + 4 > prog->consts_len || off % 4 != 0)
		return 0;
	memcpy(&len, XPU_CONSTS(prog) + off, 4);
	return len >= 0 && off + 4 + len <= prog->consts_len;
}

static int
in_list_ok(const XpuProgram *prog, const XpuInstr *in)
{
	XpuInList	h;
	int			i;

	if (!const_ok(prog, in->imm, sizeof(h)))
		return 0;
	memcpy(&h, XPU_CONSTS(prog) + in->imm, sizeof(h));
	if (h.n < 0 || h.sorted > 1 || h.has_null > 1)
		return 0;
	if (in->op != XPU_OP_IN_TEXT)
		return const_ok(prog, in->imm, (int64_t) sizeof(h) + (int64_t) h.n * 8);
	if (h.sorted || !const_ok(prog, in->imm, (int64_t) sizeof(h) + (int64_t) h.n * 4))
		return 0;
	for (i = 0; i < h.n; i++)
	{
		int32_t		rel;

		memcpy(&rel, XPU_CONSTS(prog) + in->imm + sizeof(h) + i * 4, 4);
		if (!const_text_ok(prog, (int64_t) in->imm + rel))
			return 0;
	}
	return 1;
}

/* the register type each column kind loads into */
static int
col_type_ok(const XpuColumn *c, const XpuReg *r)
{
	switch (c->kind)
	{
		case XPU_COL_BOOL: return r->type == XPU_T_BOOL;
		case XPU_COL_INT8:
		case XPU_COL_INT16: return r->type == XPU_T_INT2;
		case XPU_COL_INT32: return r->type == XPU_T_INT4;
		case XPU_COL_INT64: return r->type == XPU_T_INT8;
		case XPU_COL_FLOAT32: return r->type == XPU_T_FLOAT4;
		case XPU_COL_FLOAT64: return r->type == XPU_T_FLOAT8;
		case XPU_COL_DATE32: return r->type == XPU_T_DATE;
		case XPU_COL_TIMESTAMP_S:
		case XPU_COL_TIMESTAMP_MS:
		case XPU_COL_TIMESTAMP_US:
		case XPU_COL_TIMESTAMP_NS:
			return r->type == XPU_T_TIMESTAMP || r->type == XPU_T_TIMESTAMPTZ;
		case XPU_COL_DECIMAL128:
			return r->type == XPU_T_NUMERIC && r->scale == c->scale;
		case XPU_COL_UTF8: return r->type == XPU_T_TEXT;
		case XPU_COL_INTERVAL_MDN: return r->type == XPU_T_INTERVAL;
		case XPU_COL_FLOAT16: return r->type == XPU_T_FLOAT2;
		default: return 0;
	}
}

/*
 * a LIKE pattern for xpu_like_match: a text constant whose every '\\'
 * has a byte after it (the matcher reads it unchecked)
 */
static int
like_pattern_ok(const XpuProgram *prog, int64_t off)
{
	int32_t		len;
	const char *p;

	if (!const_text_ok(prog, off))
		return 0;
	memcpy(&len, XPU_CONSTS(prog) + off, 4);
	p = XPU_CONSTS(prog) + off + 4;
	for (int32_t i = 0; i < len; i++)
	{
		if (p[i] == '\\' && ++i >= len)
			return 0;
	}
	return 1;
}

/* the immediate of one instruction */
static int
imm_ok(const XpuProgram *prog, const XpuInstr *in)
{
	const XpuReg *regs = XPU_REGS(prog);

	switch (in->op)
	{
		case XPU_OP_LOAD_COL:
			return in->imm >= 0 && in->imm < prog->n_cols &&
				col_type_ok(XPU_COLS(prog) + in->imm, &regs[in->dst]);
		case XPU_OP_CONST_BOOL: return in->imm == 0 || in->imm == 1;
		case XPU_OP_CONST_F2: return in->imm >= 0 && in->imm <= 0xffff;
		case XPU_OP_CONST_INT:
		case XPU_OP_CONST_F4:
		case XPU_OP_CONST_F8: return const_ok(prog, in->imm, 8);
		case XPU_OP_CONST_NUM:
		case XPU_OP_CONST_IV: return const_ok(prog, in->imm, 16);
		case XPU_OP_CONST_TEXT:
		case XPU_OP_LIKE_EXACT:
		case XPU_OP_LIKE_PREFIX:
		case XPU_OP_LIKE_SUFFIX:
		case XPU_OP_LIKE_INFIX: return const_text_ok(prog, in->imm);
		case XPU_OP_LIKE_MATCH:
		case XPU_OP_ILIKE_MATCH: return like_pattern_ok(prog, in->imm);
		case XPU_OP_IN_INT:
		case XPU_OP_IN_F8:
		case XPU_OP_IN_TEXT: return in_list_ok(prog, in);
		case XPU_OP_DATE_PART_TS:
		case XPU_OP_DATE_TRUNC_TS:
		case XPU_OP_DATE_TRUNC_TSTZ:
		case XPU_OP_EXTRACT_TS:
		case XPU_OP_EXTRACT_DATE:
		case XPU_OP_DATE_PART_IV:
		case XPU_OP_EXTRACT_IV: return xpu_date_field_ok(in->op, in->imm);
		case XPU_OP_JOIN_PROBE:
			/* depth | n_keys << 8 [| EACH], n_keys 1..3; key fields beyond n_keys repeat a */
			/* [| MARK, only with EACH] */
			return in->imm >= 0 &&
				((in->imm & ~(XPU_JOIN_PROBE_EACH | XPU_JOIN_PROBE_MARK)) >> 16) == 0 &&
				(!(in->imm & XPU_JOIN_PROBE_MARK) || (in->imm & XPU_JOIN_PROBE_EACH)) &&
				XPU_JOIN_IMM_ARG(in->imm) >= 1 &&
				XPU_JOIN_IMM_ARG(in->imm) <= XPU_JOIN_PROBE_MAX_KEYS &&
				(XPU_JOIN_IMM_ARG(in->imm) > 1 || in->b == in->a) &&
				(XPU_JOIN_IMM_ARG(in->imm) > 2 || in->c == in->a);
		case XPU_OP_JOIN_PAY:
			/* depth | col << 8 */
			return in->imm >= 0 && (in->imm >> 16) == 0 &&
				XPU_JOIN_IMM_ARG(in->imm) < XPU_JOIN_MAX_PAYLOAD;
		default: return in->imm == 0;
	}
}

/* numeric result scales: PostgreSQL's, so that results are exact */
static int
scale_ok(const XpuProgram *prog, const XpuInstr *in)
{
	const XpuReg *regs = XPU_REGS(prog);
	int			sd = regs[in->dst].scale, sa = regs[in->a].scale, sb = regs[in->b].scale;

	switch (in->op)
	{
		case XPU_OP_ADD_NUM:
		case XPU_OP_SUB_NUM:
		case XPU_OP_MOD_NUM: return sd == (sa > sb ? sa : sb);
		case XPU_OP_MUL_NUM: return sd == sa + sb;
		case XPU_OP_EXTRACT_TS:
		case XPU_OP_EXTRACT_IV: return sd == xpu_extract_scale(in->imm);
		case XPU_OP_EXTRACT_DATE: return sd == 0;
		default: return 1;
	}
}

/* one instruction's registers and types */
static int
check_instr(const XpuProgram *prog, int pc, char *errbuf, size_t errlen)
{
	const XpuInstr *in = XPU_INSTRS(prog) + pc;
	const OpInfo *oi;
	const uint16_t args[3] = {in->a, in->b, in->c};
	int			i;

	if (in->op >= XPU_N_OPCODES)
		return bad(errbuf, errlen, "instruction %d: unknown opcode %d", pc, in->op);
	oi = &op_info[in->op];
	if (in->flags != 0 || in->pad != 0)
		return bad(errbuf, errlen, "instruction %d: reserved fields are set", pc);
	if (oi->result == XPU_T_NONE ? in->dst != 0 : in->dst >= prog->n_regs)
		return bad(errbuf, errlen, "instruction %d: bad destination r%d", pc, in->dst);
	if (oi->result != XPU_T_NONE &&
		!type_ok(prog, oi->result, in->dst, in->dst, in->dst))
		return bad(errbuf, errlen, "instruction %d (%s): destination r%d is %s",
				   pc, oi->name, in->dst, xpu_type_name(XPU_REGS(prog)[in->dst].type));
	for (i = 0; i < 3; i++)
	{
		if (i >= oi->nargs ? args[i] != 0 : args[i] >= prog->n_regs)
			return bad(errbuf, errlen, "instruction %d: bad argument register %d", pc, args[i]);
		if (i < oi->nargs && !type_ok(prog, oi->args[i], args[i], in->dst, in->a))
			return bad(errbuf, errlen, "instruction %d (%s): argument r%d is %s",
					   pc, oi->name, args[i], xpu_type_name(XPU_REGS(prog)[args[i]].type));
	}
	if (!imm_ok(prog, in))
		return bad(errbuf, errlen, "instruction %d (%s): bad immediate %d", pc, oi->name, in->imm);
	if (!scale_ok(prog, in))
		return bad(errbuf, errlen, "instruction %d (%s): numeric scales do not match", pc, oi->name);
	return 1;
}

/* the leading constants that n_hoisted claims (xpu_program.h) */
static int
check_hoisted(const XpuProgram *prog, char *errbuf, size_t errlen)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	uint8_t		hoisted[XPU_MAX_REGS + 1];

	if (prog->n_hoisted == 0)
		return 1;
	if (prog->n_hoisted > prog->stage_start[XPU_STAGE_LOAD + 1])
		return bad(errbuf, errlen, "xpu program hoists more than its load stage");
	memset(hoisted, 0, sizeof(hoisted));
	for (int pc = 0; pc < prog->n_instrs; pc++)
	{
		const OpInfo *oi;

		if (ins[pc].op >= XPU_N_OPCODES)
			return bad(errbuf, errlen, "instruction %d: unknown opcode %d", pc, ins[pc].op);
		oi = &op_info[ins[pc].op];
		if (pc < prog->n_hoisted && !is_const_op(ins[pc].op))
			return bad(errbuf, errlen, "instruction %d: hoisted but no constant", pc);
		if (oi->result == XPU_T_NONE)
			continue;
		if (hoisted[ins[pc].dst])
			return bad(errbuf, errlen, "instruction %d: writes hoisted register r%d",
					   pc, ins[pc].dst);
		if (pc < prog->n_hoisted)
			hoisted[ins[pc].dst] = 1;
	}
	return 1;
}

/*
 * check_each: the probes of every match (xpu_join.h): at most
 * XPU_JOIN_EACH_MAX, and after each, every register an instruction writes
 * but r0 neither written before the probe nor one of its keys, so that
 * the probe's re-runs find them NULL (xpu_each_reset)
 */
static int
check_each(const XpuProgram *prog, char *errbuf, size_t errlen)
{
	const XpuInstr *ins = XPU_INSTRS(prog);
	uint8_t		before[XPU_MAX_REGS + 1];
	int			n_each = 0,
				from = 0;

	memset(before, 0, sizeof(before));
	for (int p = 0; p < prog->n_instrs; p++)
	{
		const XpuInstr *pin = &ins[p];

		if (pin->op != XPU_OP_JOIN_PROBE || !(pin->imm & XPU_JOIN_PROBE_EACH))
			continue;
		if (++n_each > XPU_JOIN_EACH_MAX)
			return bad(errbuf, errlen, "instruction %d: more than %d join probes of every match",
					   p, XPU_JOIN_EACH_MAX);
		/* a probe that marks: the last, no column loaded after it (xpu_row_unmatched) */
		for (int pc = p + 1; (pin->imm & XPU_JOIN_PROBE_MARK) && pc < prog->n_instrs; pc++)
			if (ins[pc].op == XPU_OP_JOIN_PROBE || ins[pc].op == XPU_OP_LOAD_COL)
				return bad(errbuf, errlen,
						   "instruction %d: a probe or a load after the marking probe at %d",
						   pc, p);
		for (; from < p; from++)
			if (op_info[ins[from].op].result != XPU_T_NONE)
				before[ins[from].dst] = 1;
		for (int pc = p + 1; pc < prog->n_instrs; pc++)
		{
			int			d = ins[pc].dst;

			if (op_info[ins[pc].op].result == XPU_T_NONE || d == 0)
				continue;
			if (before[d] || d == pin->a || d == pin->b || d == pin->c)
				return bad(errbuf, errlen,
						   "instruction %d: writes r%d, which the probe of every match "
						   "at %d finds written", pc, d, p);
		}
	}
	return 1;
}

/*
 * xpu_program_validate: is the len bytes at prog a well-formed program
 * that the interpreter can run without reading or writing out of bounds?
 * Returns 1, or 0 with a message in errbuf.
 */
int
xpu_program_validate(const XpuProgram *prog, size_t len, char *errbuf, size_t errlen)
{
	int			s, pc, depth;

	if (!check_header(prog, len, errbuf, errlen) || !check_tables(prog, errbuf, errlen))
		return 0;
	if (!check_hoisted(prog, errbuf, errlen))
		return 0;
	for (s = 0; s < XPU_N_STAGES; s++)
	{
		depth = 0;
		for (pc = prog->stage_start[s]; pc < prog->stage_start[s + 1]; pc++)
		{
			const XpuInstr *in = XPU_INSTRS(prog) + pc;

			if (!check_instr(prog, pc, errbuf, errlen))
				return 0;
			if ((in->op == XPU_OP_JOIN_PROBE || in->op == XPU_OP_JOIN_PAY) &&
				s != XPU_STAGE_JOIN)
				return bad(errbuf, errlen, "instruction %d (%s) outside the join stage",
						   pc, op_info[in->op].name);
			if (in->op == XPU_OP_MASK_POP && --depth < 0)
				return bad(errbuf, errlen, "instruction %d: MASK_POP without a push", pc);
			if (op_info[in->op].kind == KIND_MASK && in->op != XPU_OP_MASK_POP &&
				++depth > XPU_MAX_MASK_DEPTH)
				return bad(errbuf, errlen, "instruction %d: masks nested too deep", pc);
		}
		if (depth != 0)
			return bad(errbuf, errlen, "stage %d ends with %d masks pushed", s, depth);
	}
	return check_each(prog, errbuf, errlen);
}

/* ---------------- disassembler ---------------- */

/* an output buffer that never overflows and counts what did not fit */
typedef struct Out
{
	char	   *buf;
	size_t		len;
	size_t		pos;
} Out;

static void out(Out *o, const char *fmt,...) __attribute__((format(printf, 2, 3)));

static void
out(Out *o, const char *fmt,...)
{
	va_list		ap;
	int			n;

	va_start(ap, fmt);
	n = vsnprintf(o->pos < o->len ? o->buf + o->pos : NULL,
				  o->pos < o->len ? o->len - o->pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t) n;
}

/*
 * xpu_numeric_format: v / 10^scale as a decimal string into buf (at least
 * 44 bytes), with scale digits after the point as PostgreSQL prints it.
 */
void
xpu_numeric_format(__int128 v, int scale, char *buf)
{
	char		digits[48];
	int			n = 0, i, pos = 0;
	unsigned __int128 u = v < 0 ? -(unsigned __int128) v : (unsigned __int128) v;

	do
	{
		digits[n++] = (char) ('0' + (int) (u % 10));
		u /= 10;
	} while (u != 0 || n <= scale);
	if (v < 0)
		buf[pos++] = '-';
	for (i = n - 1; i >= 0; i--)
	{
		buf[pos++] = digits[i];
		if (i == scale && scale > 0)
			buf[pos++] = '.';
	}
	buf[pos] = '\0';
}

static void
out_text(Out *o, const XpuProgram *prog, int32_t off)
{
	int32_t		len;

	memcpy(&len, XPU_CONSTS(prog) + off, 4);
	out(o, "'%.*s'", (int) len, XPU_CONSTS(prog) + off + 4);
}

static void
out_in_list(Out *o, const XpuProgram *prog, const XpuInstr *in)
{
	XpuInList	h;
	const char *p = XPU_CONSTS(prog) + in->imm;
	int			i;

	memcpy(&h, p, sizeof(h));
	out(o, "(");
	for (i = 0; i < h.n; i++)
	{
		int64_t		v;
		int32_t		rel;

		out(o, i ? ", " : "");
		if (in->op == XPU_OP_IN_TEXT)
		{
			memcpy(&rel, p + sizeof(h) + i * 4, 4);
			out_text(o, prog, in->imm + rel);
			continue;
		}
		memcpy(&v, p + sizeof(h) + i * 8, 8);
		if (in->op == XPU_OP_IN_F8)
		{
			double		d;

			memcpy(&d, &v, 8);
			out(o, "%.17g", d);
		}
		else
			out(o, "%lld", (long long) v);
	}
	out(o, "%s)", h.has_null ? (h.n ? ", NULL" : "NULL") : "");
}

/* an interval constant, as '<months> mons <days> days <us> us' */
static void
out_interval(Out *o, const char *p)
{
	XpuInterval iv;

	memcpy(&iv, p, sizeof(iv));
	out(o, "'%d mons %d days %lld us'", (int) iv.months, (int) iv.days, (long long) iv.us);
}

/* the readable form of an instruction's immediate ($k) */
static void
out_imm(Out *o, const XpuProgram *prog, const XpuInstr *in)
{
	const char *p = XPU_CONSTS(prog) + in->imm;
	char		num[48];
	int64_t		i;
	double		d;
	float		f;
	__int128	n;

	switch (in->op)
	{
		case XPU_OP_LOAD_COL: out(o, "%d", XPU_COLS(prog)[in->imm].col_index); break;
		case XPU_OP_CONST_BOOL: out(o, in->imm ? "true" : "false"); break;
		case XPU_OP_CONST_INT: memcpy(&i, p, 8); out(o, "%lld", (long long) i); break;
		case XPU_OP_CONST_F2: out(o, "%.9g", xpu_half_to_double((uint16_t) in->imm)); break;
		case XPU_OP_CONST_F4: memcpy(&f, p, 4); out(o, "%.9g", (double) f); break;
		case XPU_OP_CONST_F8: memcpy(&d, p, 8); out(o, "%.17g", d); break;
		case XPU_OP_CONST_NUM:
			memcpy(&n, p, 16);
			xpu_numeric_format(n, XPU_REGS(prog)[in->dst].scale, num);
			out(o, "%s", num);
			break;
		case XPU_OP_IN_INT:
		case XPU_OP_IN_F8:
		case XPU_OP_IN_TEXT: out_in_list(o, prog, in); break;
		case XPU_OP_DATE_PART_TS:
		case XPU_OP_DATE_TRUNC_TS:
		case XPU_OP_DATE_TRUNC_TSTZ:
		case XPU_OP_EXTRACT_TS:
		case XPU_OP_EXTRACT_DATE:
		case XPU_OP_DATE_PART_IV:
		case XPU_OP_EXTRACT_IV: out(o, "'%s'", xpu_date_field_name(in->imm)); break;
		case XPU_OP_CONST_IV: out_interval(o, p); break;
		default: out_text(o, prog, in->imm); break;
	}
}

static void
out_instr(Out *o, const XpuProgram *prog, int pc)
{
	const XpuInstr *in = XPU_INSTRS(prog) + pc;
	const OpInfo *oi = &op_info[in->op];
	const char *f;

	out(o, "  %3d: ", pc);
	for (f = oi->form; *f; f++)
	{
		if (*f != '$' || f[1] == '\0')
		{
			out(o, "%c", *f);
			continue;
		}
		switch (*++f)
		{
			case 'd': out(o, "r%d", in->dst); break;
			case 'a': out(o, "r%d", in->a); break;
			case 'b': out(o, "r%d", in->b); break;
			case 'c': out(o, "r%d", in->c); break;
			case 'j': out(o, "%d", XPU_JOIN_IMM_DEPTH(in->imm)); break;
			case 'p': out(o, "%d", XPU_JOIN_IMM_ARG(in->imm)); break;
			case 'K':
				/* the probe's n_keys key registers */
				out(o, "r%d", in->a);
				if (XPU_JOIN_IMM_ARG(in->imm) > 1)
					out(o, ", r%d", in->b);
				if (XPU_JOIN_IMM_ARG(in->imm) > 2)
					out(o, ", r%d", in->c);
				if (in->imm & XPU_JOIN_PROBE_EACH)
					out(o, ", each match");
				if (in->imm & XPU_JOIN_PROBE_MARK)
					out(o, ", marks matched");
				break;
			default: out_imm(o, prog, in); break;
		}
	}
	out(o, "  [%s]\n", oi->name);
}

/*
 * xpu_program_disassemble: the readable form of a valid program (one
 * instruction a line, by stage, then the registers and outputs) into buf
 * of len bytes, NUL-terminated and truncated if need be; returns the length
 * the whole text needs (as snprintf).
 */
size_t
xpu_program_disassemble(const XpuProgram *prog, char *buf, size_t len)
{
	static const char *const stage_names[XPU_N_STAGES] = {
		"load", "qual", "join", "group", "agg", "proj"
	};
	Out			o = {buf, len, 0};
	int			s, pc, r;

	if (len > 0)
		buf[0] = '\0';
	for (s = 0; s < XPU_N_STAGES; s++)
	{
		if (prog->stage_start[s] == prog->stage_start[s + 1])
			continue;
		out(&o, "%s:\n", stage_names[s]);
		for (pc = prog->stage_start[s]; pc < prog->stage_start[s + 1]; pc++)
			out_instr(&o, prog, pc);
	}
	out(&o, "registers:");
	for (r = 0; r < prog->n_regs; r++)
	{
		const XpuReg *reg = XPU_REGS(prog) + r;

		out(&o, reg->type == XPU_T_NUMERIC ? " r%d %s(%d)" : " r%d %s", r,
			xpu_type_name(reg->type), reg->scale);
	}
	out(&o, "\noutputs:");
	for (r = 0; r < prog->n_outs; r++)
		out(&o, " r%d", XPU_OUTS(prog)[r]);
	out(&o, "\n");
	return o.pos;
}
