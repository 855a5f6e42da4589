/*-------------------------------------------------------------------------
 *
 * xpu_program.h
 *		The xPU program: position-independent plain data that the host
 *		builds (xpu_build.c), validates, prints for EXPLAIN VERBOSE, and
 *		copies as is to the GPU or hands to the CPU engine; and the chunk of
 *		Arrow columns and the result buffers a program runs over.
 *
 * Layout (every offset counts from the start of the XpuProgram; sections
 * are 16-byte aligned):
 *
 *	XpuProgram	header
 *	XpuInstr	[n_instrs]	16 bytes each, in program order
 *	XpuReg		[n_regs]	type and numeric scale of each register
 *	XpuColumn	[n_cols]	the Arrow columns that LOAD_COL reads
 *	uint8_t		[n_outs]	projected registers, in output column order
 *	constants	consts_len bytes of 8-byte aligned slots: int64, float8,
 *				float4 (in the first 4 bytes), int128 numerics (16 bytes),
 *				text as int32 length + bytes; IN lists as XpuInList
 *
 * Stages run in order: LOAD (columns -> registers), QUAL (leaves the WHERE
 * clause's bool in register 0), JOIN (the hash-join depths: JOIN_PROBE and
 * JOIN_PAY of the inner tables in XpuChunk.joins, and register 0 updated,
 * under MASK_PUSH_TRUE r0 so that only rows that passed probe), the
 * GROUP/AGG stages (reserved for later milestones: must be empty now) and
 * PROJ.  LOAD, QUAL and JOIN run for every row; a row passes when QUAL and
 * JOIN are both empty or register 0 is true after them
 * (xpu_program_filters); PROJ runs only for rows that passed and computes
 * the registers that outs[] names.  stage_start[s] is the first instruction
 * of stage s; stage s ends where stage s + 1 starts (stage_start[XPU_N_STAGES]
 * == n_instrs).  Masks pushed in a stage are popped in the same stage.
 *
 * The first n_hoisted instructions (of LOAD) are constants whose registers
 * no other instruction writes (xpu_program_hoist_consts): an interpreter may
 * run them once for all rows and keep their registers; one that runs them
 * for every row gets the same results.
 *
 *-------------------------------------------------------------------------
 */
#ifndef XPU_PROGRAM_H
#define XPU_PROGRAM_H

#include "xpu_types.h"
#include "xpu_opcodes.h"

#define XPU_PROGRAM_MAGIC		0x55505857	/* "WXPU" */
#define XPU_PROGRAM_VERSION		1
#define XPU_MAX_REGS			255
#define XPU_MAX_MASK_DEPTH		32
/* join depths a program may have (codegen: a depth needs two mask levels),
 * each with its count of the rows entering it (XpuCtx.probes) */
#define XPU_JOIN_COUNT_DEPTHS	(XPU_MAX_MASK_DEPTH / 2)
#define XPU_TILE				1024	/* rows per CPU tile */

typedef enum XpuStage
{
	XPU_STAGE_LOAD = 0,
	XPU_STAGE_QUAL,
	XPU_STAGE_JOIN,
	XPU_STAGE_GROUP,
	XPU_STAGE_AGG,
	XPU_STAGE_PROJ,
	XPU_N_STAGES
} XpuStage;

typedef struct XpuProgram
{
	uint32_t	magic;
	uint32_t	version;
	uint32_t	total_len;		/* bytes of the whole program */
	uint16_t	n_instrs;
	uint16_t	n_regs;
	uint16_t	n_cols;
	uint16_t	n_outs;
	uint32_t	instrs_off;
	uint32_t	regs_off;
	uint32_t	cols_off;
	uint32_t	outs_off;
	uint32_t	consts_off;
	uint32_t	consts_len;
	uint16_t	stage_start[XPU_N_STAGES + 1];
	uint16_t	n_hoisted;		/* leading constants (see above); 0: none */
} XpuProgram;

typedef struct XpuInstr
{
	uint16_t	op;				/* XpuOpcode */
	uint8_t		dst;			/* destination register */
	uint8_t		flags;			/* reserved, 0 */
	uint16_t	a;				/* argument registers */
	uint16_t	b;
	uint16_t	c;
	uint16_t	pad;
	int32_t		imm;			/* immediate: see xpu_opcodes.h */
} XpuInstr;

typedef struct XpuReg
{
	uint8_t		type;			/* XpuType */
	uint8_t		pad;
	int16_t		scale;			/* numeric registers: digits after the point */
} XpuReg;

/* Arrow physical layouts that LOAD_COL converts */
typedef enum XpuColKind
{
	XPU_COL_BOOL = 1,			/* bit-packed -> bool */
	XPU_COL_INT8,				/* int8_t -> int2 */
	XPU_COL_INT16,				/* -> int2 */
	XPU_COL_INT32,				/* -> int4 */
	XPU_COL_INT64,				/* -> int8 */
	XPU_COL_FLOAT32,			/* -> float4 */
	XPU_COL_FLOAT64,			/* -> float8 */
	XPU_COL_DATE32,				/* days since 1970 -> date */
	XPU_COL_TIMESTAMP_S,		/* int64 since 1970 -> timestamp[tz] */
	XPU_COL_TIMESTAMP_MS,
	XPU_COL_TIMESTAMP_US,
	XPU_COL_TIMESTAMP_NS,		/* exact only at whole microseconds */
	XPU_COL_DECIMAL128,			/* -> numeric of the column's scale */
	XPU_COL_UTF8,				/* int32 offsets + bytes -> text */
	XPU_COL_INTERVAL_MDN,		/* int32 months, int32 days, int64 ns -> interval */
	XPU_COL_FLOAT16,			/* binary16 bits -> float2 */
	XPU_COL_N_KINDS
} XpuColKind;

typedef struct XpuColumn
{
	uint16_t	col_index;		/* index into the chunk's columns */
	uint8_t		kind;			/* XpuColKind */
	uint8_t		width;			/* xpu_col_kind_width(kind): set by the
								 * builder, checked by the validator */
	int32_t		scale;			/* decimal128: its scale; utf8: the most
								 * characters a value may have (a
								 * varchar(n) column: a longer one is a
								 * FALLBACK), 0: any */
} XpuColumn;

/*
 * xpu_col_kind_width: the bytes of one value in the Arrow values buffer that
 * a column of kind reads: 0 for bool (bits) and utf8 (int32 offsets and
 * bytes), whose buffers are sized otherwise, and for an unknown kind.
 */
XPU_HOST_DEVICE int
xpu_col_kind_width(int kind)
{
	switch (kind)
	{
		case XPU_COL_INT8: return 1;
		case XPU_COL_INT16:
		case XPU_COL_FLOAT16: return 2;
		case XPU_COL_INT32:
		case XPU_COL_FLOAT32:
		case XPU_COL_DATE32: return 4;
		case XPU_COL_INT64:
		case XPU_COL_FLOAT64:
		case XPU_COL_TIMESTAMP_S:
		case XPU_COL_TIMESTAMP_MS:
		case XPU_COL_TIMESTAMP_US:
		case XPU_COL_TIMESTAMP_NS: return 8;
		case XPU_COL_DECIMAL128:
		case XPU_COL_INTERVAL_MDN: return 16;
		default: return 0;
	}
}

/* an IN list in the constants pool: header, then n sorted or unsorted
 * 8-byte values (int64 / float8), or for text n int32 offsets (from the
 * header) of (int32 length, bytes) entries */
typedef struct XpuInList
{
	int32_t		n;
	uint8_t		sorted;			/* ascending (PostgreSQL's order): binary search */
	uint8_t		has_null;		/* the list has a NULL: no match gives NULL */
	uint16_t	pad;
} XpuInList;

/*
 * one Arrow column of a chunk in memory the interpreter can read.  A
 * dictionary-encoded utf8 column (the CPU engine alone, xpu_dict.h): its
 * dict_magic is XPU_DICT_MAGIC, which xpu_column_bind sets (any other
 * value, even the garbage of a descriptor whose dict_* fields its maker
 * never set: not a dictionary); values are the rows' dictionary indices,
 * validity the indices' bitmap, data the dictionary values' bytes, at
 * dict_offsets[index]; dict_version names the dictionary (the same
 * version: the same index -> value mapping)
 */
typedef struct XpuColumnData
{
	const uint8_t *validity;	/* null bitmap (1 = valid) or NULL: no nulls */
	const void *values;			/* fixed-width values, or utf8 int32 offsets */
	const char *data;			/* utf8 bytes */
	int64_t		offset;			/* Arrow array offset, in rows */
	const int32_t *dict_offsets;	/* [dict_len + 1] the values' offsets */
	const uint8_t *dict_validity;	/* the values' null bitmap, or NULL */
	int64_t		dict_len;		/* values in the dictionary */
	uint64_t	dict_version;
	uint64_t	dict_magic;		/* XPU_DICT_MAGIC: a dictionary column */
	int32_t		dict_width;		/* index bytes: 1, 2, 4, 8 signed, -1 .. -8
								 * unsigned */
	int32_t		dict_max_chars; /* the most characters of a value (a
								 * varchar(n) column's check once for all
								 * rows); -1: not known */
} XpuColumnData;

/* one record batch of a chunk that holds several (XpuChunk.parts) */
typedef struct XpuChunkPart
{
	int64_t		first_row;		/* the chunk's row that is its row 0 */
	const XpuColumnData *cols;	/* [ncols] */
} XpuChunkPart;

/*
 * XpuChunk: the rows a run evaluates.  One record batch: cols, n_parts 0
 * (or 1).  The GPU input path launches a kernel over several small record
 * batches at once (n_parts > 1): the chunk's rows are the parts' rows one
 * after the other, parts[] ascending by first_row, parts[0].first_row 0,
 * and xpu_chunk_part finds a row's part.
 */
typedef struct XpuChunk
{
	int64_t		nrows;
	int32_t		ncols;
	int32_t		n_parts;
	const XpuColumnData *cols;	/* [ncols]: the columns of one batch (parts[0]'s) */
	const XpuChunkPart *parts;	/* [n_parts] where n_parts > 1 */
	/* the inner tables of the JOIN stage: joins[d] is depth d's (host
	 * memory for the CPU engine; in a chunk a GPU kernel reads, a device
	 * array of device pointers); n_joins 0: none */
	const struct XpuJoinTable *const *joins;
	int32_t		n_joins;
	int32_t		pad_joins;
	/* the run's matched flags of its RIGHT/FULL depth (xpu_join.h,
	 * XPU_JOIN_PROBE_MARK), NULL: the probes mark nothing */
	uint32_t   *matched;
} XpuChunk;

/*
 * xpu_program_filters: does the program decide which rows pass (a QUAL or a
 * JOIN stage: register 0 after them), rather than passing every row
 */
XPU_HOST_DEVICE int
xpu_program_filters(const XpuProgram *prog)
{
	return prog->stage_start[XPU_STAGE_QUAL] != prog->stage_start[XPU_STAGE_GROUP];
}

/*
 * xpu_chunk_part_index: the index of the part that chunk row row lies in
 * (a chunk of n_parts > 1)
 */
XPU_HOST_DEVICE int32_t
xpu_chunk_part_index(const XpuChunk *chunk, int64_t row)
{
	int32_t		lo = 0,
				hi = chunk->n_parts - 1;

	while (lo < hi)
	{
		int32_t		mid = (lo + hi + 1) / 2;

		if (chunk->parts[mid].first_row <= row)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/*
 * xpu_chunk_part: the columns that chunk row *row lies in, *row made the
 * row within them
 */
XPU_HOST_DEVICE const XpuColumnData *
xpu_chunk_part(const XpuChunk *chunk, int64_t *row)
{
	int32_t		k;

	if (chunk->n_parts <= 1)
		return chunk->cols;
	k = xpu_chunk_part_index(chunk, *row);
	*row -= chunk->parts[k].first_row;
	return chunk->parts[k].cols;
}

/*
 * XpuResult: where a run writes its results, nrows entries per array.
 * mask[row] is 1 where the row passed the qual; for those rows
 * values[k * nrows + row] / nulls[k * nrows + row] hold output k.  Text
 * outputs point into the chunk's or the program's memory.
 */
typedef struct XpuResult
{
	int64_t		nrows;
	uint8_t    *mask;
	XpuValue   *values;
	uint8_t    *nulls;
} XpuResult;

/* section accessors */
#define XPU_INSTRS(prog) \
	((const XpuInstr *) ((const char *) (prog) + (prog)->instrs_off))
#define XPU_REGS(prog) \
	((const XpuReg *) ((const char *) (prog) + (prog)->regs_off))
#define XPU_COLS(prog) \
	((const XpuColumn *) ((const char *) (prog) + (prog)->cols_off))
#define XPU_OUTS(prog) \
	((const uint8_t *) ((const char *) (prog) + (prog)->outs_off))
#define XPU_CONSTS(prog) \
	((const char *) (prog) + (prog)->consts_off)

/* host functions (declared for nvcc too: host code of a .cu may call them) */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* in xpu_build.c: building a program on the host */
typedef struct XpuBuilder XpuBuilder;

extern XpuBuilder *xpu_builder_create(void);
extern void xpu_builder_free(XpuBuilder *b);
extern int	xpu_add_reg(XpuBuilder *b, XpuType type, int scale);
extern int	xpu_add_column(XpuBuilder *b, int col_index, XpuColKind kind, int scale);
extern int32_t xpu_add_const(XpuBuilder *b, const void *bytes, size_t len);
extern int32_t xpu_add_const_text(XpuBuilder *b, const char *s, int32_t len);
extern int32_t xpu_add_in_list(XpuBuilder *b, const int64_t *vals, int n,
							   int sorted, int has_null);
extern int32_t xpu_add_in_text_list(XpuBuilder *b, const char *const *strs,
									const int32_t *lens, int n, int has_null);
extern int	xpu_add_instr(XpuBuilder *b, XpuOpcode op, int dst, int a, int bb,
						  int c, int32_t imm);
extern void xpu_begin_stage(XpuBuilder *b, XpuStage stage);
extern int	xpu_add_output(XpuBuilder *b, int reg);
extern int	xpu_builder_fold_moves(XpuBuilder *b);
extern XpuProgram *xpu_program_hoist_consts(const XpuProgram *prog);
extern XpuProgram *xpu_builder_finish(XpuBuilder *b, char *errbuf, size_t errlen);

/* in xpu_build.c: checking and printing programs */
extern int	xpu_program_validate(const XpuProgram *prog, size_t len,
								 char *errbuf, size_t errlen);
extern size_t xpu_program_disassemble(const XpuProgram *prog, char *buf, size_t len);
extern const char *xpu_opcode_name(int op);
extern const char *xpu_type_name(int type);
extern int	xpu_opcode_lookup(const char *name);
extern void xpu_numeric_format(__int128 v, int scale, char *buf);

/* in xpu_cpu.c: the CPU engine's vectorised run and the per-row run on
 * the host (the GPU's per-row form compiled for the CPU) */
extern size_t xpu_cpu_workspace_size(const XpuProgram *prog);
extern int	xpu_cpu_exec(const XpuProgram *prog, const XpuChunk *chunk,
						 XpuResult *res, void *workspace, XpuError *err);
extern int	xpu_row_exec(const XpuProgram *prog, const XpuChunk *chunk,
						 XpuResult *res, XpuError *err);

/*
 * xpu_cpu_dict_outs: dict_cols[k] (n_outs of them) = the dictionary-encoded
 * column (xpu_dict.h) of chunk whose rows output k of an xpu_cpu_exec of
 * prog over chunk is as they are (result row r: the column's row r +
 * offset), else NULL; returns how many outputs are such columns
 */
extern int	xpu_cpu_dict_outs(const XpuProgram *prog, const XpuChunk *chunk,
							  const XpuColumnData **dict_cols);
/*
 * xpu_cpu_exec_counted where output k, for skip[k] != 0, may be left
 * unloaded (values and nulls) where it is a dictionary column's rows
 * (xpu_cpu_dict_outs) that the consumer of res reads from the column
 * itself (xpu_agg_table_update_dict, xpu_agg_table_dict_skip); skip
 * NULL: xpu_cpu_exec_counted
 */
extern int	xpu_cpu_exec_skip(const XpuProgram *prog, const XpuChunk *chunk,
							  XpuResult *res, void *workspace, XpuError *err,
							  uint64_t *probes, const uint8_t *skip);
/* a dictionary version no other bind has (XpuColumnData.dict_version) */
extern uint64_t xpu_dict_new_version(void);

/* a taker of output rows (xpu_cpu_exec_each): 0 stops the run */
typedef int (*XpuResultSink) (void *arg, const XpuResult *res, XpuError *err);
extern int	xpu_cpu_exec_each(const XpuProgram *prog, const XpuChunk *chunk,
							  XpuResult *res, void *workspace, XpuError *err,
							  XpuResultSink sink, void *arg);
extern int	xpu_cpu_exec_unmatched(const XpuProgram *prog, const XpuChunk *chunk,
								   const uint32_t *matched, XpuResult *res, XpuError *err,
								   XpuResultSink sink, void *arg);
/*
 * the same, adding to probes[d] (XPU_JOIN_COUNT_DEPTHS of them, NULL: not
 * counted) the rows, or combinations of matches, that enter join depth d
 * (EXPLAIN ANALYZE's rows into each depth): per tile, no per-row atomics
 */
extern int	xpu_cpu_exec_counted(const XpuProgram *prog, const XpuChunk *chunk,
								 XpuResult *res, void *workspace, XpuError *err,
								 uint64_t *probes);
extern int	xpu_cpu_exec_each_counted(const XpuProgram *prog, const XpuChunk *chunk,
									  XpuResult *res, void *workspace, XpuError *err,
									  XpuResultSink sink, void *arg, uint64_t *probes);

#ifdef __cplusplus
}
#endif

#endif							/* XPU_PROGRAM_H */
