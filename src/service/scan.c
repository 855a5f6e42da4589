/*-------------------------------------------------------------------------
 *
 * scan.c
 *		SCAN_RUN (xpu/protocol.h): GpuScan's filter of record batches of
 *		Arrow files with an xPU qual program, run on a pool of threads (the
 *		CPU engine, or each thread's batches on a GPU); the passing rows of the requested columns go back
 *		in SCAN_RESULT messages, in column form (each column in its field's
 *		own Arrow layout), in the order of the request's batches.
 *
 * A run's life is that of an AGG_RUN (agg.c): scan_task_start copies and
 * checks the request and starts the run's thread; the thread opens the
 * files (identity checked), then n_threads workers claim batches from one
 * counter, load only the chunk columns' fields, run the program in slices
 * to a pass mask and compact the passing rows of the first n_outs columns
 * into blocks that each fit one message.  When every batch is done the
 * thread writes the eventfd and the epoll loop (server.c) sends the blocks,
 * batch by batch in request order, then a last message with the counters.
 * A backend asks for a few batches at a time (gpuscan.c), so what one run
 * holds stays bounded.
 *
 * Errors of the program (overflow, division by zero, a value the engine
 * does not hold exactly) do not end the run: that batch is returned whole,
 * every chunk column of every row, flagged WARP_SCAN_RECHECK, and the
 * backend evaluates the qual in PostgreSQL, which raises its own error.
 *
 * A projection run (a program with outputs, which the request asks for with
 * n_outs 0: GpuJoin's, whose outputs read the inner tables of its join
 * depths) returns the program's outputs for the passing rows instead of
 * chunk columns, each in the layout of its type (out_layout).  On the CPU
 * engine the workers compute the outputs as they filter; on the GPU engine
 * the GPU runs the quals and the join depths (gpu_scan.c,
 * kern_join_scan.cu) and hands over with each batch's mask the inner row
 * each probe found, and the workers compute the outputs of the passing
 * rows from the batch and the host copies of the inner tables
 * (xpu_join_scan_project).  A batch whose GPU run raised an error or
 * FALLBACK runs on the CPU engine in the worker, as it would have on a
 * host without a GPU (a recheck by PostgreSQL only where that raises it
 * too); the reply counts those batches (recheck_batches does not).
 *
 * On the GPU engine the run's thread filters the batches on a GPU
 * (gpu_scan.c: the GPU input path GpuPreAgg uses, with its I/O threads,
 * double-buffered pinned slots and column cache) and hands each batch's
 * mask to the same workers, which load only the returned columns and
 * compact; the replies say which engine ran.
 *
 *-------------------------------------------------------------------------
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service.h"
#include "service/gpu_direct.h"
#include "service/join_store.h"
#include "service/run.h"
#include "service/input.h"
#include "service/threads.h"
#include "arrow/arrow.h"
#include "arrow/arrow_bits.h"
#include "xpu/xpu_join_scan.h"

#define SCAN_SLICE			16384	/* rows per xpu_cpu_exec */
#define SCAN_ALIGN(x)		(((size_t) (x) + 7) & ~(size_t) 7)

/* one file of the request (input.h), opened by the run's thread */
typedef SvcInputFile ScanFile;

/* one block of rows: a whole SCAN_RESULT payload */
typedef struct ScanPiece
{
	uint8_t    *buf;
	uint32_t	len;
} ScanPiece;

/* where a batch's pass mask is (ScanWork.state) */
typedef enum ScanMask
{
	SCAN_MASK_LOCAL = 0,		/* the worker computes it (CPU engine); on
								 * the GPU engine: not there yet */
	SCAN_MASK_GPU,				/* the GPU's, in ScanWork.mask */
	SCAN_MASK_RECHECK			/* the GPU's program failed: recheck it */
} ScanMask;

/* one record batch to read, and its blocks once done */
typedef struct ScanWork
{
	uint32_t	file;
	int32_t		batch;
	uint32_t	n_pieces;
	ScanPiece  *pieces;
	int			state;			/* ScanMask; under ScanTask.lock on the GPU */
	uint8_t    *mask;			/* SCAN_MASK_GPU: one byte per row */
	int32_t    *rows;			/* SCAN_MASK_GPU of a projection run: probe p's
								 * inner row of row r at [p * rows + r] */
} ScanWork;

struct ScanTask
{
	uint8_t    *payload;		/* copy of the request, 16-byte aligned */
	SvcRunDesc	desc;			/* the request, parsed (run.c); its files are
								 * files[] below */
	const XpuProgram *prog;
	SvcJoinSet	joins;			/* the join depths' tables, held (join_store.c) */
	uint32_t	n_pouts;		/* a projection run: the program's outputs; 0: none */
	uint32_t	n_files;
	ScanFile   *files;
	ScanWork   *work;
	int64_t		n_work;
	int64_t		next_work;		/* atomic */
	uint32_t	n_threads;
	uint32_t	threads;		/* used */
	const ServiceGpu *gpu;
	WarpEngine	engine;			/* GPU: the workers filter on the GPUs */
	SvcTaskThread task;			/* the run's thread (threads.c) */
	/* the GPU engine: the masks that the run's thread hands to the workers */
	pthread_mutex_t lock;
	pthread_cond_t mask_ready;
	bool		gpu_done;		/* no more masks will come */
	volatile int canceled;
	int64_t		start_us;
	SvcFailure	fail;			/* the first failure; werr 0: the run was done */
	/* counters (atomic while the workers run) */
	uint64_t	rows_in;
	uint64_t	rows_passed;
	uint64_t	batches;
	uint64_t	recheck_batches;
	uint64_t	cpu_batches;	/* a projection run on the GPU: batches its
								 * workers ran on the CPU engine */
	uint64_t	bytes_read;
	uint64_t	bytes_mapped;	/* the GPU's data path (WarpScanResult) */
	uint64_t	bytes_to_pin;
	uint64_t	bytes_direct;
	uint64_t	bytes_sent;
	uint64_t	io_us;
	uint64_t	exec_us;
	uint64_t	memory;
	SvcJoinCounts join_rows;	/* the rows entering each join depth */
	bool		gpu_counted;	/* a projection run on the GPU counted them */
	/* replies */
	int64_t		reply_work;
	uint32_t	reply_piece;
};

/* ---------------------------------------------------------------- errors */

/* should the workers stop: canceled, or the run failed */
static bool
scan_stopping(ScanTask *t)
{
	return svc_stopping(&t->fail, &t->canceled);
}

/* ---------------------------------------------------------------- files */

/* the layout in which a field's values are returned; 0: not returnable */
static WarpScanLayout
field_layout(const ArrowField *fld, uint32_t *width)
{
	*width = 0;
	if (fld->has_dictionary)
		return 0;
	switch (fld->type.id)
	{
		case ARROW_TYPE_BOOL:
			return WARP_SCAN_BITS;
		case ARROW_TYPE_UTF8:
		case ARROW_TYPE_BINARY:
			return WARP_SCAN_VAR32;
		case ARROW_TYPE_LARGE_UTF8:
		case ARROW_TYPE_LARGE_BINARY:
			return WARP_SCAN_VAR64;
		default:
			*width = (uint32_t) arrow_type_value_width(&fld->type);
			return *width > 0 ? WARP_SCAN_FIXED : 0;
	}
}

/*
 * open_file: opens file i (input.c: identity, footer, batches and fields
 * against the program) and checks that every chunk column's field has a
 * layout SCAN_RESULT can carry; false with the run's failure set.
 */
static bool
open_file(ScanTask *t, uint32_t i)
{
	ScanFile   *f = &t->files[i];
	const ArrowSchema *sc;
	uint32_t	width;

	/* the workers read in place on either engine: the GPU's input path preads */
	if (!svc_input_open(f, t->desc.max_buffer_size, true, &t->fail) ||
		!svc_input_check(f, t->prog, t->desc.n_cols, &t->fail))
		return false;
	sc = &f->file->schema;
	for (uint32_t j = 0; j < t->desc.n_cols; j++)
		if (field_layout(&sc->fields[f->fields[j]], &width) == 0)
			return svc_fail(&t->fail, WARP_ERR_PROTOCOL,
							"field \"%s\" of file \"%s\" has no flat layout",
							sc->fields[f->fields[j]].name, f->path), false;
	return true;
}

/* ---------------------------------------------------------------- blocks */

/* what one worker thread owns */
typedef struct ScanWorker
{
	ScanTask   *task;
	void	   *workspace;
	uint8_t    *mask;			/* [mask_cap] */
	int64_t		mask_cap;
	uint32_t   *sel;			/* [mask_cap]: rows to return */
	XpuColumnData *cols;		/* [n_cols] */
	bool	   *want;			/* [widest schema] */
	/* a projection run: a slice's outputs, then the batch's in column form */
	XpuValue   *ovals;			/* [n_pouts * SCAN_SLICE] */
	uint8_t    *onulls;			/* [n_pouts * SCAN_SLICE] */
	struct ScanOut *outs;		/* [n_pouts] */
} ScanWorker;

/* one program output of a projection run over one batch, in column form */
typedef struct ScanOut
{
	WarpScanColumn cs;			/* its layout (out_layout) */
	ArrowArray	arr;			/* over the buffers below, for put_column */
	uint8_t    *validity;		/* [cap / 8] */
	uint8_t    *values;			/* [cap * width] or bits */
	int32_t    *offsets;		/* [cap + 1] (VAR32) */
	uint8_t    *data;			/* [data_cap] (VAR32) */
	size_t		data_len;
	size_t		data_cap;
	int64_t		cap;			/* rows the buffers hold */
} ScanOut;

/* bytes that row r takes in a block of columns arrays[0 .. n - 1], at most */
static size_t
row_bytes(const ArrowArray *const *arrays, const WarpScanColumn *cs, uint32_t n, uint32_t r)
{
	size_t		bytes = 0;

	for (uint32_t j = 0; j < n; j++)
	{
		bytes += 1;				/* its validity bit, rounded up */
		if (cs[j].layout == WARP_SCAN_FIXED)
			bytes += cs[j].width;
		else if (cs[j].layout == WARP_SCAN_BITS)
			bytes += 1;
		else if (cs[j].layout == WARP_SCAN_VAR32)
			bytes += 4 + (size_t) (((const int32_t *) arrays[j]->offsets)[r + 1] -
								   ((const int32_t *) arrays[j]->offsets)[r]);
		else
			bytes += 8 + (size_t) (((const int64_t *) arrays[j]->offsets)[r + 1] -
								   ((const int64_t *) arrays[j]->offsets)[r]);
	}
	return bytes;
}

/* writes column a's rows sel[0 .. n - 1] at p; returns the bytes written */
static size_t
put_column(uint8_t *p, const ArrowArray *a, WarpScanColumn cs, const uint32_t *sel, uint32_t n)
{
	size_t		off = SCAN_ALIGN(sizeof(WarpScanColumn));
	size_t		bits = ((size_t) n + 7) / 8;

	cs.null_count = 0;
	if (a->validity != NULL)
		for (uint32_t i = 0; i < n; i++)
			cs.null_count += !arrow_bit_valid(a->validity, sel[i]);
	if (cs.null_count > 0)
	{
		memset(p + off, 0, bits);
		for (uint32_t i = 0; i < n; i++)
			if (arrow_bit_valid(a->validity, sel[i]))
				p[off + i / 8] |= (uint8_t) (1u << (i % 8));
		off = SCAN_ALIGN(off + bits);
	}
	if (cs.layout == WARP_SCAN_BITS)
	{
		memset(p + off, 0, bits);
		for (uint32_t i = 0; i < n; i++)
			if (arrow_bit_get(a->values, sel[i]))
				p[off + i / 8] |= (uint8_t) (1u << (i % 8));
		off = SCAN_ALIGN(off + bits);
	}
	else if (cs.layout == WARP_SCAN_FIXED)
	{
		for (uint32_t i = 0; i < n; i++)
			memcpy(p + off + (size_t) i * cs.width, a->values + (size_t) sel[i] * cs.width,
				   cs.width);
		off = SCAN_ALIGN(off + (size_t) n * cs.width);
	}
	else
	{
		bool		wide = cs.layout == WARP_SCAN_VAR64;
		size_t		ow = wide ? 8 : 4;
		uint8_t    *data = p + SCAN_ALIGN(off + ow * ((size_t) n + 1));
		int64_t		pos = 0;

		for (uint32_t i = 0; i <= n; i++)
		{
			int64_t		s = 0, e = 0;

			if (wide)
				memcpy(p + off + 8 * (size_t) i, &pos, 8);
			else
			{
				int32_t		p32 = (int32_t) pos;

				memcpy(p + off + 4 * (size_t) i, &p32, 4);
			}
			if (i == n)
				break;
			s = wide ? ((const int64_t *) a->offsets)[sel[i]] : ((const int32_t *) a->offsets)[sel[i]];
			e = wide ? ((const int64_t *) a->offsets)[sel[i] + 1] : ((const int32_t *) a->offsets)[sel[i] + 1];
			memcpy(data + pos, a->data + s, (size_t) (e - s));
			pos += e - s;
		}
		cs.data_len = (uint64_t) pos;
		off = SCAN_ALIGN((size_t) (data - p) + (size_t) pos);
	}
	memcpy(p, &cs, sizeof(cs));
	return off;
}

/* one block of rows sel[0 .. n - 1] of arrays[0 .. n_cols - 1]; false: OOM */
static bool
add_piece(ScanTask *t, ScanWork *w, const ArrowArray *const *arrays, const WarpScanColumn *cs,
		  uint32_t n_cols, const uint32_t *sel, uint32_t n, size_t bound, bool recheck)
{
	ScanPiece  *pieces = realloc(w->pieces, sizeof(ScanPiece) * (w->n_pieces + 1));
	WarpScanResult h;
	uint8_t    *buf;
	size_t		off = sizeof(WarpScanResult);

	if (pieces == NULL)
		return false;
	w->pieces = pieces;
	if ((buf = malloc(bound)) == NULL)
		return false;
	for (uint32_t j = 0; j < n_cols; j++)
		off += put_column(buf + off, arrays[j], cs[j], sel, n);
	memset(&h, 0, sizeof(h));
	h.flags = recheck ? WARP_SCAN_RECHECK : 0;
	h.n_rows = n;
	h.n_cols = n_cols;
	h.engine = t->engine;
	memcpy(buf, &h, sizeof(h));
	w->pieces[w->n_pieces].buf = buf;
	w->pieces[w->n_pieces].len = (uint32_t) off;
	w->n_pieces++;
	svc_add_counter(&t->bytes_sent, off);
	svc_add_counter(&t->memory, bound);
	return true;
}

/*
 * pieces_of: the blocks of rows sel[0 .. n - 1] of columns arrays[0 ..
 * n_cols - 1] (layouts cs) of batch `batch` of file f, each small enough
 * for one message.
 */
static void
pieces_of(ScanTask *t, ScanWork *w, const ScanFile *f, const ArrowBatch *batch,
		  const ArrowArray *const *arrays, const WarpScanColumn *cs,
		  const uint32_t *sel, uint32_t n, uint32_t n_cols, bool recheck)
{
	const size_t fixed = sizeof(WarpScanResult) +
		(size_t) n_cols * (SCAN_ALIGN(sizeof(WarpScanColumn)) + 4 * 8 + 16);
	const size_t budget = PGWARP_MAX_PAYLOAD - fixed;
	uint32_t	start = 0;
	size_t		bytes = 0;

	for (uint32_t i = 0; i < n && !scan_stopping(t); i++)
	{
		size_t		rb = row_bytes(arrays, cs, n_cols, sel[i]);

		if (rb > budget)
		{
			svc_fail(&t->fail, WARP_ERR_UNSUPPORTED,
					  "row %u of record batch %d of file \"%s\" is too large for a SCAN_RESULT",
					  sel[i], batch->index, f->path);
			return;
		}
		if (bytes + rb > budget)
		{
			if (!add_piece(t, w, arrays, cs, n_cols, sel + start, i - start,
						   fixed + bytes, recheck))
			{
				svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
				return;
			}
			start = i;
			bytes = 0;
		}
		bytes += rb;
	}
	if (n > start && !scan_stopping(t) &&
		!add_piece(t, w, arrays, cs, n_cols, sel + start, n - start, fixed + bytes, recheck))
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
}

/*
 * make_pieces: the blocks of rows sel[0 .. n - 1] of batch `batch` (columns:
 * the first n_cols chunk columns), each small enough for one message.
 */
static void
make_pieces(ScanTask *t, ScanWork *w, const ScanFile *f, const ArrowBatch *batch,
			const uint32_t *sel, uint32_t n, uint32_t n_cols, bool recheck)
{
	const ArrowArray *arrays[4096];
	WarpScanColumn cs[4096];

	for (uint32_t j = 0; j < n_cols; j++)
	{
		arrays[j] = &batch->columns[f->fields[j]];
		memset(&cs[j], 0, sizeof(cs[j]));
		cs[j].layout = field_layout(&f->file->schema.fields[f->fields[j]], &cs[j].width);
	}
	pieces_of(t, w, f, batch, arrays, cs, sel, n, n_cols, recheck);
}

/* ---------------------------------------------------------------- outputs */

/*
 * out_layout: the layout in which a projection run returns an output of
 * XpuType type (its width): integers, dates, timestamps and floats as
 * their C values, numeric as its 128-bit fixed point (the register's
 * scale, which the backend knows from the program), text as VAR32; 0: none
 */
static WarpScanLayout
out_layout(uint8_t type, uint32_t *width)
{
	*width = 0;
	switch (type)
	{
		case XPU_T_BOOL:
			return WARP_SCAN_BITS;
		case XPU_T_INT2:
			*width = 2;
			return WARP_SCAN_FIXED;
		case XPU_T_INT4: case XPU_T_DATE: case XPU_T_FLOAT4:
			*width = 4;
			return WARP_SCAN_FIXED;
		case XPU_T_INT8: case XPU_T_TIMESTAMP: case XPU_T_TIMESTAMPTZ: case XPU_T_FLOAT8:
			*width = 8;
			return WARP_SCAN_FIXED;
		case XPU_T_NUMERIC:
			*width = 16;
			return WARP_SCAN_FIXED;
		case XPU_T_TEXT:
			return WARP_SCAN_VAR32;
		default:
			return 0;
	}
}

/* the type of output k of prog */
static uint8_t
out_type(const XpuProgram *prog, uint32_t k)
{
	return XPU_REGS(prog)[XPU_OUTS(prog)[k]].type;
}

/* room for n_rows rows in each output of worker w; false: out of memory */
static bool
out_reserve(ScanWorker *w, const ScanTask *t, int64_t n_rows)
{
	for (uint32_t k = 0; k < t->n_pouts; k++)
	{
		ScanOut    *o = &w->outs[k];
		size_t		vb = o->cs.layout == WARP_SCAN_BITS ? (size_t) (n_rows + 7) / 8 :
			(size_t) n_rows * o->cs.width;
		void	   *v, *b, *off;

		if (n_rows <= o->cap)
			continue;
		b = realloc(o->validity, (size_t) (n_rows + 7) / 8);
		if (b != NULL)
			o->validity = b;
		v = realloc(o->values, vb > 0 ? vb : 1);
		if (v != NULL)
			o->values = v;
		off = realloc(o->offsets, sizeof(int32_t) * (size_t) (n_rows + 1));
		if (off != NULL)
			o->offsets = off;
		if (b == NULL || v == NULL || off == NULL)
			return false;
		o->cap = n_rows;
	}
	return true;
}

/* appends len bytes to output o's data; false: out of memory or too long */
static bool
out_data(ScanOut *o, const char *p, int32_t len)
{
	if (o->data_len + (size_t) len > (size_t) INT32_MAX)
		return false;
	if (o->data_len + (size_t) len > o->data_cap)
	{
		size_t		cap = o->data_cap ? o->data_cap : 65536;
		uint8_t    *d;

		while (cap < o->data_len + (size_t) len)
			cap *= 2;
		if ((d = realloc(o->data, cap)) == NULL)
			return false;
		o->data = d;
		o->data_cap = cap;
	}
	memcpy(o->data + o->data_len, p, (size_t) len);
	o->data_len += (size_t) len;
	return true;
}

/*
 * out_value: output k's value v of row r, not null, into its column form
 * (text appended to its data); false: out of memory, or text beyond VAR32
 */
static bool
out_value(ScanOut *o, uint8_t type, const XpuValue *v, int64_t r)
{
	uint8_t    *p = o->values + (size_t) r * o->cs.width;

	o->validity[r / 8] |= (uint8_t) (1u << (r % 8));
	switch (type)
	{
		case XPU_T_TEXT:
			o->offsets[r] = (int32_t) o->data_len;
			if (!out_data(o, v->t.p, v->t.len))
				return false;
			o->offsets[r + 1] = (int32_t) o->data_len;
			return true;
		case XPU_T_BOOL:
			if (v->i)
				o->values[r / 8] |= (uint8_t) (1u << (r % 8));
			else
				o->values[r / 8] &= (uint8_t) ~(1u << (r % 8));
			return true;
		case XPU_T_INT2:
			{
				int16_t		x = (int16_t) v->i;

				memcpy(p, &x, 2);
				return true;
			}
		case XPU_T_INT4:
		case XPU_T_DATE:
			{
				int32_t		x = (int32_t) v->i;

				memcpy(p, &x, 4);
				return true;
			}
		case XPU_T_FLOAT4:
			memcpy(p, &v->f4, 4);
			return true;
		case XPU_T_FLOAT8:
			memcpy(p, &v->f8, 8);
			return true;
		case XPU_T_NUMERIC:
			memcpy(p, &v->n, 16);
			return true;
		default:
			memcpy(p, &v->i, 8);
			return true;
	}
}

/*
 * out_slice: the outputs of rows row0 .. row0 + n - 1 of the batch (the
 * slice just run: w->ovals, w->onulls) into its column form, for the rows
 * that passed (only they are returned: pieces_of reads the rows of
 * w->sel); the others are null.  row0 is a multiple of 8 (SCAN_SLICE).
 * False: out of memory, or text beyond VAR32.
 */
static bool
out_slice(ScanWorker *w, const ScanTask *t, int64_t row0, int64_t n)
{
	for (uint32_t k = 0; k < t->n_pouts; k++)
	{
		ScanOut    *o = &w->outs[k];

		if (row0 == 0)
			o->data_len = 0;
		memset(o->validity + row0 / 8, 0, (size_t) (n + 7) / 8);
	}
	for (int64_t i = 0; i < n; i++)
	{
		if (!w->mask[row0 + i])
			continue;
		for (uint32_t k = 0; k < t->n_pouts; k++)
		{
			ScanOut    *o = &w->outs[k];
			size_t		at = (size_t) k * n + i;

			if (w->onulls[at])
			{
				/* a null text still has its (empty) place in the offsets */
				if (o->cs.layout == WARP_SCAN_VAR32)
					o->offsets[row0 + i] = o->offsets[row0 + i + 1] = (int32_t) o->data_len;
				continue;
			}
			if (!out_value(o, out_type(t->prog, k), &w->ovals[at], row0 + i))
				return false;
		}
	}
	return true;
}

/* the batch's outputs (out_slice) as arrays for pieces_of, over n_rows rows */
static void
out_arrays(ScanWorker *w, const ScanTask *t, int64_t n_rows,
		   const ArrowArray **arrays, WarpScanColumn *cs)
{
	for (uint32_t k = 0; k < t->n_pouts; k++)
	{
		ScanOut    *o = &w->outs[k];

		memset(&o->arr, 0, sizeof(o->arr));
		o->arr.length = n_rows;
		o->arr.validity = o->validity;
		o->arr.values = o->values;
		o->arr.offsets = o->offsets;
		o->arr.data = o->data;
		o->arr.data_length = (int64_t) o->data_len;
		arrays[k] = &o->arr;
		cs[k] = o->cs;
	}
}

/* ---------------------------------------------------------------- workers */

/*
 * filter_batch: runs the program over a loaded batch into w->mask on this
 * thread (the CPU engine); 1, or 0 when it raised an error or FALLBACK
 * (the batch is then rechecked)
 */
static int
filter_batch(ScanWorker *w, const ScanFile *f, const ArrowBatch *batch)
{
	ScanTask   *t = w->task;
	const XpuProgram *prog = t->prog;
	XpuError	err;
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};

	svc_input_bind(f, prog, batch, w->cols);
	for (int64_t row0 = 0; row0 < batch->n_rows && !scan_stopping(t); row0 += SCAN_SLICE)
	{
		int64_t		n = batch->n_rows - row0 < SCAN_SLICE ? batch->n_rows - row0 : SCAN_SLICE;
		XpuChunk	chunk = {n, (int32_t) t->desc.n_cols, 0, w->cols};
		XpuResult	res = {n, w->mask + row0, t->n_pouts ? w->ovals : NULL,
		t->n_pouts ? w->onulls : NULL};

		svc_join_chunk(&chunk, &t->joins);

		for (uint32_t k = 0; k < t->desc.n_cols; k++)
			w->cols[k].offset = row0;
		memset(&err, 0, sizeof(err));
		if (xpu_cpu_exec_counted(prog, &chunk, &res, w->workspace, &err,
								 chunk.n_joins > 0 ? probes : NULL) != XPU_OK)
			return 0;
		if (t->n_pouts > 0 && !out_slice(w, t, row0, n))
		{
			svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY,
					  "out of memory for the outputs of a projection (or text beyond 2 GB)");
			return 0;
		}
	}
	/* a rechecked batch's rows are PostgreSQL's to join (none counted) */
	svc_join_counts_add(&t->join_rows, probes, XPU_JOIN_COUNT_DEPTHS);
	return 1;
}

/*
 * project_batch: a projection run's outputs of a loaded batch whose GPU run
 * passed the rows of wk->mask with the probes' rows wk->rows, computed on
 * this thread (xpu_join_scan_project) into the column form; the mask is
 * copied to w->mask.  1, or 0 when the replay raised an error (the batch
 * then runs on the CPU engine: filter_batch).
 */
static int
project_batch(ScanWorker *w, const ScanFile *f, const ArrowBatch *batch, const ScanWork *wk)
{
	ScanTask   *t = w->task;
	const XpuProgram *prog = t->prog;
	XpuChunk	chunk = {batch->n_rows, (int32_t) t->desc.n_cols, 0, w->cols};
	XpuError	err;

	memcpy(w->mask, wk->mask, (size_t) batch->n_rows);
	svc_input_bind(f, prog, batch, w->cols);
	svc_join_chunk(&chunk, &t->joins);
	for (uint32_t k = 0; k < t->desc.n_cols; k++)
		w->cols[k].offset = 0;
	for (int64_t row0 = 0; row0 < batch->n_rows && !scan_stopping(t); row0 += SCAN_SLICE)
	{
		int64_t		n = batch->n_rows - row0 < SCAN_SLICE ? batch->n_rows - row0 : SCAN_SLICE;

		memset(&err, 0, sizeof(err));
		if (xpu_join_scan_project(prog, &chunk, w->mask, wk->rows, batch->n_rows, row0, n,
								  w->ovals, w->onulls, &err) != XPU_OK)
			return 0;
		if (!out_slice(w, t, row0, n))
		{
			svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY,
					  "out of memory for the outputs of a projection (or text beyond 2 GB)");
			return 0;
		}
	}
	return 1;
}

/*
 * gpu_mask: on the GPU engine, waits until the run's thread has handed over
 * work item wk's mask; 1 (a mask), 0 (a recheck), or -1 when the run stops
 * first (failed or canceled)
 */
static int
gpu_mask(ScanTask *t, ScanWork *wk)
{
	int			state;

	pthread_mutex_lock(&t->lock);
	while ((state = wk->state) == SCAN_MASK_LOCAL && !t->gpu_done && !scan_stopping(t))
		pthread_cond_wait(&t->mask_ready, &t->lock);
	pthread_mutex_unlock(&t->lock);
	if (state == SCAN_MASK_LOCAL)
	{
		if (!scan_stopping(t))
			svc_fail(&t->fail, WARP_ERR_IO, "the GPU returned no mask for a record batch");
		return -1;
	}
	return state == SCAN_MASK_GPU;
}

/*
 * scan_one: filters batch i of the work (or takes its mask from the GPU)
 * and makes its blocks.  Of the chunk columns it loads those it returns,
 * and the program's too on the CPU engine or for a recheck.
 */
static void
scan_one(ScanWorker *w, int64_t i)
{
	ScanTask   *t = w->task;
	ScanWork   *wk = &t->work[i];
	const ScanFile *f = &t->files[wk->file];
	ArrowBatch *batch = NULL;
	ArrowError	aerr;
	int64_t		t0, t1;
	const uint8_t *mask;
	uint32_t	n = 0,
				n_load = t->desc.n_cols;
	int			ok = 1;

	if (t->engine == WARP_ENGINE_GPU && (ok = gpu_mask(t, wk)) < 0)
		return;
	/* a projection run reads the program's columns (all of them) either way */
	if (t->engine == WARP_ENGINE_GPU && ok && t->n_pouts == 0)
		n_load = t->desc.n_outs;
	t0 = svc_now_us(CLOCK_MONOTONIC);
	memset(w->want, 0, sizeof(bool) * f->file->schema.n_fields);
	for (uint32_t j = 0; j < n_load; j++)
		w->want[f->fields[j]] = true;
	if (arrow_batch_load(f->file, wk->batch, w->want, &batch, &aerr) != ARROW_OK)
	{
		svc_fail_arrow(&t->fail, f->path, &aerr);
		return;
	}
	t1 = svc_now_us(CLOCK_MONOTONIC);
	svc_add_counter(&t->io_us, t1 - t0);
	svc_add_counter(&t->batches, 1);
	svc_add_counter(&t->rows_in, batch->n_rows);
	svc_add_counter(&t->bytes_read, svc_input_batch_bytes(f, wk->batch, w->want));
	if (batch->n_rows > w->mask_cap)
	{
		free(w->mask);
		free(w->sel);
		w->mask = malloc(batch->n_rows);
		w->sel = malloc(sizeof(uint32_t) * batch->n_rows);
		w->mask_cap = w->mask && w->sel ? batch->n_rows : 0;
		if (w->mask_cap == 0)
		{
			arrow_batch_free(batch);
			svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
			return;
		}
	}
	if (t->n_pouts > 0 && !out_reserve(w, t, batch->n_rows))
	{
		arrow_batch_free(batch);
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		return;
	}
	if (t->engine == WARP_ENGINE_CPU)
		ok = filter_batch(w, f, batch);
	else if (t->n_pouts > 0 && !(ok && project_batch(w, f, batch, wk)) && !scan_stopping(t))
	{
		/* the GPU's run of a projection raised an error: the CPU engine's */
		svc_add_counter(&t->cpu_batches, 1);
		ok = filter_batch(w, f, batch);
	}
	mask = t->engine == WARP_ENGINE_GPU && t->n_pouts == 0 ? wk->mask : w->mask;
	for (int64_t r = 0; r < batch->n_rows; r++)
		if (!ok || mask[r])
			w->sel[n++] = (uint32_t) r;
	if (!scan_stopping(t) && ok && t->n_pouts > 0)
	{
		/* a projection run: the program's outputs */
		const ArrowArray *arrays[4096];
		WarpScanColumn cs[4096];

		out_arrays(w, t, batch->n_rows, arrays, cs);
		pieces_of(t, wk, f, batch, arrays, cs, w->sel, n, t->n_pouts, false);
	}
	else if (!scan_stopping(t))
		make_pieces(t, wk, f, batch, w->sel, n, ok ? t->desc.n_outs : t->desc.n_cols, !ok);
	svc_add_counter(&t->rows_passed, n);
	if (!ok)
		svc_add_counter(&t->recheck_batches, 1);
	arrow_batch_free(batch);
	free(wk->mask);
	wk->mask = NULL;
	free(wk->rows);
	wk->rows = NULL;
	svc_add_counter(&t->exec_us, svc_now_us(CLOCK_MONOTONIC) - t1);
}

static void *
worker_main(void *arg)
{
	ScanWorker *w = arg;
	ScanTask   *t = w->task;

	while (!scan_stopping(t))
	{
		int64_t		i = __atomic_fetch_add(&t->next_work, 1, __ATOMIC_RELAXED);

		if (i >= t->n_work)
			break;
		scan_one(w, i);
	}
	return NULL;
}

/*
 * gpu_pass: a batch's mask from the GPU (GpuScanPass): kept for the worker
 * that takes the batch, which is woken
 */
static void
gpu_pass(void *arg, int64_t work, const uint8_t *mask, const int32_t *rows,
		 int64_t rows_stride, int64_t nrows)
{
	ScanTask   *t = arg;
	ScanWork   *wk = &t->work[work];
	uint8_t    *copy = NULL;
	int32_t    *rcopy = NULL;
	int			n_probes = rows != NULL ? xpu_join_scan_probes(t->prog) : 0;

	if (mask != NULL && (copy = malloc(nrows > 0 ? (size_t) nrows : 1)) == NULL)
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	else if (mask != NULL)
		memcpy(copy, mask, (size_t) nrows);
	/* a projection run's probe rows, probe p's nrows at [p * nrows] */
	if (copy != NULL && rows != NULL &&
		(rcopy = malloc(sizeof(int32_t) * (size_t) (n_probes * nrows + 1))) == NULL)
	{
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		free(copy);
		copy = NULL;
	}
	for (int p = 0; rcopy != NULL && p < n_probes; p++)
		memcpy(rcopy + (int64_t) p * nrows, rows + (int64_t) p * rows_stride,
			   sizeof(int32_t) * (size_t) nrows);
	pthread_mutex_lock(&t->lock);
	wk->rows = rcopy;
	wk->mask = copy;
	wk->state = mask == NULL ? SCAN_MASK_RECHECK : copy != NULL ? SCAN_MASK_GPU : SCAN_MASK_LOCAL;
	pthread_cond_broadcast(&t->mask_ready);
	pthread_mutex_unlock(&t->lock);
}

/*
 * gpu_filter: on the run's thread, the GPU engine's filter of every batch
 * (gpu_scan.c), the masks going to the workers; then no more will come
 */
static void
gpu_filter(ScanTask *t)
{
	AggRun		run;
	int			werr = 0;
	char		msg[248];
	uint64_t	join_in[XPU_JOIN_COUNT_DEPTHS] = {0};

	memset(&run, 0, sizeof(run));
	run.prog = t->prog;
	run.n_files = t->n_files;
	run.files = t->files;
	run.n_threads = t->n_threads;
	run.max_buffer_size = t->desc.max_buffer_size;
	run.canceled = &t->canceled;
	run.joins = &t->joins;
	if (t->fail.werr == 0 &&
		gpu_scan_run(t->gpu, &run, gpu_pass, t, t->joins.n > 0 ? join_in : NULL, &werr, msg,
					 sizeof(msg)) != 0)
		svc_fail(&t->fail, (WarpErrorCode) werr, "%s", msg);
	else if (t->fail.werr == 0 && t->joins.n > 0 && t->prog->n_outs > 0)
	{
		svc_join_counts_add(&t->join_rows, join_in, XPU_JOIN_COUNT_DEPTHS);
		t->gpu_counted = true;
	}
	svc_add_counter(&t->bytes_read, run.bytes_read);
	svc_add_counter(&t->bytes_mapped, run.bytes_mapped);
	svc_add_counter(&t->bytes_to_pin, run.bytes_to_pin);
	svc_add_counter(&t->bytes_direct, run.bytes_direct);
	svc_add_counter(&t->io_us, run.io_us);
	svc_add_counter(&t->exec_us, run.exec_us);
	pthread_mutex_lock(&t->lock);
	t->gpu_done = true;
	pthread_cond_broadcast(&t->mask_ready);
	pthread_mutex_unlock(&t->lock);
}

/*
 * runs the workers over t->work (on the GPU engine, with gpu_filter on
 * this thread meanwhile); t->threads is then the number of workers that
 * ran (threads.h: fewer when threads could not start; when none could,
 * this thread runs one after the GPU's filter, whose masks wait for it)
 */
static void
run_workers(ScanTask *t)
{
	uint32_t	n = t->n_threads;
	ScanWorker *ws;
	SvcWorkers	pool;
	int			widest = 1;

	if ((int64_t) n > t->n_work)
		n = t->n_work > 0 ? (uint32_t) t->n_work : 1;
	t->threads = n;
	for (uint32_t i = 0; i < t->n_files; i++)
		if (t->files[i].file->schema.n_fields > widest)
			widest = t->files[i].file->schema.n_fields;
	if ((ws = calloc(n, sizeof(ScanWorker))) == NULL)
	{
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
		return;
	}
	for (uint32_t i = 0; i < n; i++)
	{
		ScanWorker *w = &ws[i];

		w->task = t;
		w->workspace = aligned_alloc(16, (xpu_cpu_workspace_size(t->prog) + 15) & ~(size_t) 15);
		w->cols = calloc(t->desc.n_cols ? t->desc.n_cols : 1, sizeof(XpuColumnData));
		w->want = calloc(widest, sizeof(bool));
		if (t->n_pouts > 0)
		{
			w->ovals = malloc(sizeof(XpuValue) * t->n_pouts * SCAN_SLICE);
			w->onulls = malloc((size_t) t->n_pouts * SCAN_SLICE);
			if ((w->outs = calloc(t->n_pouts, sizeof(ScanOut))) != NULL)
				for (uint32_t k = 0; k < t->n_pouts; k++)
					w->outs[k].cs.layout = out_layout(out_type(t->prog, k),
													  &w->outs[k].cs.width);
		}
		if (!w->workspace || !w->cols || !w->want ||
			(t->n_pouts > 0 && (!w->ovals || !w->onulls || !w->outs)))
		{
			svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
			break;
		}
	}
	if (t->fail.werr == 0)
	{
		svc_workers_start(&pool, "a SCAN_RUN's workers", worker_main, ws, sizeof(ScanWorker), n);
		if (t->engine == WARP_ENGINE_GPU)
			gpu_filter(t);
		t->threads = svc_workers_join(&pool);
	}
	for (uint32_t i = 0; i < t->n_files; i++)
		svc_input_check_end(&t->files[i], &t->fail);
	for (uint32_t i = 0; i < n; i++)
	{
		free(ws[i].workspace);
		free(ws[i].cols);
		free(ws[i].want);
		free(ws[i].mask);
		free(ws[i].sel);
		free(ws[i].ovals);
		free(ws[i].onulls);
		for (uint32_t k = 0; ws[i].outs != NULL && k < t->n_pouts; k++)
		{
			free(ws[i].outs[k].validity);
			free(ws[i].outs[k].values);
			free(ws[i].outs[k].offsets);
			free(ws[i].outs[k].data);
		}
		free(ws[i].outs);
	}
	free(ws);
}

/* the run's thread: files, work list, workers (threads.c then tells the epoll thread) */
static void
task_main(void *arg)
{
	ScanTask   *t = arg;
	int64_t		k = 0;

	for (uint32_t i = 0; i < t->n_files && t->fail.werr == 0 && !t->canceled; i++)
		open_file(t, i);
	if (t->fail.werr == 0 && (t->work = calloc(t->n_work ? t->n_work : 1, sizeof(ScanWork))) == NULL)
		svc_fail(&t->fail, WARP_ERR_OUT_OF_MEMORY, "out of memory");
	for (uint32_t i = 0; i < t->n_files && t->fail.werr == 0; i++)
		for (uint32_t b = 0; b < t->files[i].wf->n_batches; b++)
			t->work[k++] = (ScanWork) {i, t->files[i].batches[b], 0, NULL, SCAN_MASK_LOCAL, NULL,
			NULL};
	if (t->fail.werr == 0 && !t->canceled)
		run_workers(t);
}

/* ---------------------------------------------------------------- the API */

/*
 * scan_task_start: parses and checks a SCAN_RUN payload of len bytes and
 * starts its run on a thread of its own, which writes to notify_fd when
 * done.  NULL with *werr and msg set when the request is refused.
 */
ScanTask *
scan_task_start(const uint8_t *payload, uint32_t len, const ServiceGpu *gpu,
				int notify_fd, uint32_t *werr, char *msg, size_t msglen)
{
	ScanTask   *t = calloc(1, sizeof(ScanTask));
	bool		ok;

	*werr = WARP_ERR_OUT_OF_MEMORY;
	snprintf(msg, msglen, "out of memory");
	if (t == NULL)
		return NULL;
	svc_failure_init(&t->fail);
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->mask_ready, NULL);
	t->gpu = gpu;
	t->start_us = svc_now_us(CLOCK_MONOTONIC);
	if ((t->payload = svc_run_copy(payload, len)) == NULL)
		return scan_task_free(t), NULL;
	ok = svc_run_parse(WARP_MSG_SCAN_RUN, t->payload, len, &t->desc, msg, msglen);
	/* the files are the run's (scan_task_free), parsed or not */
	t->n_files = t->desc.n_files;
	t->files = t->desc.files;
	t->desc.files = NULL;
	if (!ok)
	{
		*werr = strcmp(msg, "out of memory") == 0 ? WARP_ERR_OUT_OF_MEMORY : WARP_ERR_PROTOCOL;
		return scan_task_free(t), NULL;
	}
	t->prog = t->desc.prog;
	if (!svc_run_joins(&t->desc, &t->joins, werr, msg, msglen))
		return scan_task_free(t), NULL;
	t->n_work = t->desc.n_batches;
	t->n_threads = t->desc.n_threads;
	/* auto: the GPU where the service has one, as GpuPreAgg */
	if (!svc_run_engine(gpu, &t->desc, &t->engine, werr, msg, msglen))
		return scan_task_free(t), NULL;
	/* a projection run: outputs of types SCAN_RESULT carries */
	t->n_pouts = t->prog->n_outs;
	for (uint32_t k = 0; k < t->n_pouts; k++)
	{
		uint32_t	width;

		if (out_layout(out_type(t->prog, k), &width) == 0)
		{
			*werr = WARP_ERR_UNSUPPORTED;
			snprintf(msg, msglen, "SCAN_RUN output %u has a type SCAN_RESULT does not carry", k);
			return scan_task_free(t), NULL;
		}
	}
	/* rows that expand (never GpuJoin's without grouping): the CPU engine */
	if (t->n_pouts > 0 && xpu_program_expands(t->prog))
		t->engine = WARP_ENGINE_CPU;
	if (!svc_task_thread_start(&t->task, "SCAN_RUN", task_main, t, notify_fd, werr, msg, msglen))
		return scan_task_free(t), NULL;
	return t;
}

/* scan_task_cancel: asks the run to stop (it still signals when done) */
void
scan_task_cancel(ScanTask *t)
{
	t->canceled = 1;
}

/* scan_task_done: has the run's thread finished */
bool
scan_task_done(const ScanTask *t)
{
	return svc_task_thread_done(&t->task);
}

/*
 * scan_task_reply: the next reply of a finished run into buf (room for
 * PGWARP_MAX_PAYLOAD bytes): its type and length; *last on the last one.
 */
uint32_t
scan_task_reply(ScanTask *t, uint8_t *buf, uint32_t *type, bool *last)
{
	WarpScanResult *h = (WarpScanResult *) buf;

	*last = false;
	if (t->fail.werr != 0 || t->canceled)
	{
		*type = WARP_MSG_ERROR;
		*last = true;
		return svc_failure_reply(&t->fail, t->canceled, buf);
	}
	*type = WARP_MSG_SCAN_RESULT;
	while (t->reply_work < t->n_work)
	{
		ScanWork   *w = &t->work[t->reply_work];

		if (t->reply_piece < w->n_pieces)
		{
			ScanPiece  *p = &w->pieces[t->reply_piece++];
			uint32_t	len = p->len;

			memcpy(buf, p->buf, len);
			free(p->buf);
			p->buf = NULL;
			return len;
		}
		t->reply_work++;
		t->reply_piece = 0;
	}
	memset(h, 0, sizeof(*h));
	h->flags = WARP_SCAN_LAST;
	h->engine = t->engine;
	h->rows_in = t->rows_in;
	h->rows_passed = t->rows_passed;
	h->batches = t->batches;
	h->recheck_batches = t->recheck_batches;
	h->bytes_read = t->bytes_read;
	h->bytes_mapped = t->bytes_mapped;
	h->bytes_to_pin = t->bytes_to_pin;
	h->bytes_direct = t->bytes_direct;
	h->direct_mode = h->bytes_direct > 0 ? gpu_direct_mode() : WARP_CUFILE_NONE;
	h->bytes_sent = t->bytes_sent;
	h->io_us = t->io_us;
	h->exec_us = t->exec_us;
	h->wall_us = svc_now_us(CLOCK_MONOTONIC) - t->start_us;
	h->threads = t->threads;
	/* counted by the CPU engine or the GPU projection run, every batch answered by the engine */
	svc_join_counts_reply(&t->join_rows, (int) t->joins.n, t->rows_passed,
						  (t->engine != WARP_ENGINE_GPU || t->gpu_counted) &&
						  t->recheck_batches == 0 && t->cpu_batches == 0,
						  &h->join_depths, h->join_in, h->join_out);
	h->cpu_batches = (uint32_t) t->cpu_batches;
	*last = true;
	return sizeof(*h);
}

/* scan_task_memory: bytes of blocks the run holds (at its end) */
size_t
scan_task_memory(const ScanTask *t)
{
	return (size_t) t->memory;
}

/* scan_task_free: waits for the run's thread and frees everything of it */
void
scan_task_free(ScanTask *t)
{
	if (t == NULL)
		return;
	svc_task_thread_join(&t->task);
	for (uint32_t i = 0; t->files && i < t->n_files; i++)
		svc_input_close(&t->files[i]);
	for (int64_t i = 0; t->work && i < t->n_work; i++)
	{
		for (uint32_t p = 0; p < t->work[i].n_pieces; p++)
			free(t->work[i].pieces[p].buf);
		free(t->work[i].pieces);
		free(t->work[i].mask);
		free(t->work[i].rows);
	}
	free(t->files);
	free(t->work);
	svc_join_release_set(&t->joins);
	free(t->payload);
	svc_failure_destroy(&t->fail);
	pthread_cond_destroy(&t->mask_ready);
	pthread_mutex_destroy(&t->lock);
	free(t);
}
