/*
 * agg_client.c
 *		A small client of pg_warp_service's AGG_RUN (src/xpu/protocol.h)
 *		for the end-to-end tests and the CPU engine's measurements
 *		(test/python/test_service_agg.py): builds the xPU program of one of
 *		a few fixed query shapes with the xpu_build.c API, sends AGG_RUN
 *		over the Arrow files given, and prints the groups as text.
 *
 *	agg_client [--threads N] [--engine E] [--max-buffer N] [--cancel-ms MS]
 *			   [--dump FILE] [--join DIM]... [--join-fault F] [--hold-ms MS]
 *			   [--fill 1] SOCKET SHAPE FILE...
 *
 * The shapes name the columns they read (e.g. q1 reads price, discount and
 * quantity); each file must have them.  --dump writes the AGG_RUN payload
 * to FILE instead of sending it (SOCKET is then ignored).  --cancel-ms
 * sends CANCEL that many milliseconds after the request.  --join adds a
 * join depth probing test dimension DIM ("even" or "text", warp_client.h),
 * loaded (JOIN_LOAD) before the run; --join-fault breaks the first load or
 * the ids (WcJoins.fault); --hold-ms keeps the connection, and its join
 * tables, open that long after the last reply (printing "HELD" first).
 * --fill 1 sends the request as AGG_FILL (the read-ahead into the GPU
 * column cache) instead.
 *
 * Output, one line each: "JOIN", the depth and the join id of each table
 * loaded; "G" then the keys and the states, tab-separated;
 * "END" with the status and counters of the last AGG_RESULT, or "ERROR
 * code message".  Keys: N for NULL, integers and dates/timestamps as
 * their int64, floats as %.17g, numerics as decimals, text as x + hex.
 * States: count, then ":" and the value (SUM_INT/SUM_NUMERIC/SUM_FLOAT
 * the sum, MOMENTS sum:sum of squares, MIN/MAX the value, nothing when the
 * count is 0), "!" after the count when XPU_AGGF_OVERFLOW is set.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warp_client.h"
#include "xpu_agg.h"
#include "xpu_join.h"

#define MAX_COLS	32

/* a query shape being built */
typedef struct Query
{
	XpuBuilder *b;
	int			n_cols;
	const char *col_names[MAX_COLS];
	int			n_keys;
	uint16_t	key_outs[XPU_AGG_MAX_KEYS];
	int			n_aggs;
	XpuAggDesc	aggs[XPU_AGG_MAX_AGGS];
	XpuType		key_types[XPU_AGG_MAX_KEYS];
	int			key_scales[XPU_AGG_MAX_KEYS];
	XpuType		arg_types[XPU_AGG_MAX_AGGS];
	int			arg_scales[XPU_AGG_MAX_AGGS];
	int			n_outs;
	XpuType		out_types[64];
	int			out_scales[64];
	WcJoins    *joins;			/* the depths the shape probes (join shapes) */
} Query;

/* loads column `name` (kind, scale) into a new register of type */
static int
load(Query *q, const char *name, XpuColKind kind, XpuType type, int scale)
{
	int			r = xpu_add_reg(q->b, type, scale);
	int			c = xpu_add_column(q->b, q->n_cols, kind, scale);

	q->col_names[q->n_cols++] = name;
	xpu_add_instr(q->b, XPU_OP_LOAD_COL, r, 0, 0, 0, c);
	return r;
}

static int
iconst(Query *q, XpuType type, int64_t v)
{
	int			r = xpu_add_reg(q->b, type, 0);

	xpu_add_instr(q->b, XPU_OP_CONST_INT, r, 0, 0, 0, xpu_add_const(q->b, &v, 8));
	return r;
}

/* register r becomes the next out */
static int
out(Query *q, int r, XpuType type, int scale)
{
	q->out_types[q->n_outs] = type;
	q->out_scales[q->n_outs] = scale;
	xpu_add_output(q->b, r);
	return q->n_outs++;
}

static void
key(Query *q, int r, XpuType type, int scale)
{
	q->key_types[q->n_keys] = type;
	q->key_scales[q->n_keys] = scale;
	q->key_outs[q->n_keys++] = (uint16_t) out(q, r, type, scale);
}

static void
agg(Query *q, XpuAggKind kind, int o)
{
	q->aggs[q->n_aggs].kind = (uint8_t) kind;
	q->aggs[q->n_aggs].out = (uint16_t) (o < 0 ? 0 : o);
	q->arg_types[q->n_aggs] = o < 0 ? XPU_T_NONE : q->out_types[o];
	q->arg_scales[q->n_aggs] = o < 0 ? 0 : q->out_scales[o];
	q->n_aggs++;
}

/* the same column loaded and made an out */
static int
col_out(Query *q, const char *name, XpuColKind kind, XpuType type, int scale)
{
	return out(q, load(q, name, kind, type, scale), type, scale);
}

/* q1: count(*), sum(price * discount) WHERE discount BETWEEN 1 AND 3 AND quantity < 25 */
static void
shape_q1(Query *q)
{
	int			acc = xpu_add_reg(q->b, XPU_T_BOOL, 0);	/* r0 */
	int			t = xpu_add_reg(q->b, XPU_T_BOOL, 0);
	int			d, qty, p, d8, m;

	xpu_begin_stage(q->b, XPU_STAGE_QUAL);
	d = load(q, "discount", XPU_COL_INT32, XPU_T_INT4, 0);
	xpu_add_instr(q->b, XPU_OP_GE_INT, acc, d, iconst(q, XPU_T_INT4, 1), 0, 0);
	xpu_add_instr(q->b, XPU_OP_MASK_PUSH_NOT_FALSE, 0, acc, 0, 0, 0);
	xpu_add_instr(q->b, XPU_OP_LE_INT, t, d, iconst(q, XPU_T_INT4, 3), 0, 0);
	xpu_add_instr(q->b, XPU_OP_AND, acc, acc, t, 0, 0);
	xpu_add_instr(q->b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_add_instr(q->b, XPU_OP_MASK_PUSH_NOT_FALSE, 0, acc, 0, 0, 0);
	qty = load(q, "quantity", XPU_COL_INT32, XPU_T_INT4, 0);
	xpu_add_instr(q->b, XPU_OP_LT_INT, t, qty, iconst(q, XPU_T_INT4, 25), 0, 0);
	xpu_add_instr(q->b, XPU_OP_AND, acc, acc, t, 0, 0);
	xpu_add_instr(q->b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	p = load(q, "price", XPU_COL_INT64, XPU_T_INT8, 0);
	d8 = xpu_add_reg(q->b, XPU_T_INT8, 0);
	m = xpu_add_reg(q->b, XPU_T_INT8, 0);
	xpu_add_instr(q->b, XPU_OP_I4_TO_I8, d8, d, 0, 0, 0);
	xpu_add_instr(q->b, XPU_OP_MUL_I8, m, p, d8, 0, 0);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_SUM_INT, out(q, m, XPU_T_INT8, 0));
}

/* text2: GROUP BY s1, s2: count(*), sum(rev), sum(qty), max(cost) */
static void
shape_text2(Query *q)
{
	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	key(q, load(q, "s1", XPU_COL_UTF8, XPU_T_TEXT, 0), XPU_T_TEXT, 0);
	key(q, load(q, "s2", XPU_COL_UTF8, XPU_T_TEXT, 0), XPU_T_TEXT, 0);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_SUM_INT, col_out(q, "rev", XPU_COL_INT64, XPU_T_INT8, 0));
	agg(q, XPU_AGG_SUM_INT, col_out(q, "qty", XPU_COL_INT32, XPU_T_INT4, 0));
	agg(q, XPU_AGG_MAX, col_out(q, "cost", XPU_COL_INT32, XPU_T_INT4, 0));
}

/* all: keys of every type, every aggregate kind */
static void
shape_all(Query *q)
{
	int			vi, vn, vf, vg, vd, vs;

	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	key(q, load(q, "ki", XPU_COL_INT32, XPU_T_INT4, 0), XPU_T_INT4, 0);
	key(q, load(q, "ks", XPU_COL_UTF8, XPU_T_TEXT, 0), XPU_T_TEXT, 0);
	key(q, load(q, "kf", XPU_COL_FLOAT64, XPU_T_FLOAT8, 0), XPU_T_FLOAT8, 0);
	key(q, load(q, "kg", XPU_COL_FLOAT32, XPU_T_FLOAT4, 0), XPU_T_FLOAT4, 0);
	key(q, load(q, "kn", XPU_COL_DECIMAL128, XPU_T_NUMERIC, 2), XPU_T_NUMERIC, 2);
	key(q, load(q, "kd", XPU_COL_DATE32, XPU_T_DATE, 0), XPU_T_DATE, 0);
	key(q, load(q, "kt", XPU_COL_TIMESTAMP_US, XPU_T_TIMESTAMP, 0), XPU_T_TIMESTAMP, 0);
	key(q, load(q, "kb", XPU_COL_BOOL, XPU_T_BOOL, 0), XPU_T_BOOL, 0);
	key(q, load(q, "kh", XPU_COL_INT16, XPU_T_INT2, 0), XPU_T_INT2, 0);
	vi = col_out(q, "vi", XPU_COL_INT64, XPU_T_INT8, 0);
	vn = col_out(q, "vn", XPU_COL_DECIMAL128, XPU_T_NUMERIC, 3);
	vf = col_out(q, "vf", XPU_COL_FLOAT64, XPU_T_FLOAT8, 0);
	vg = col_out(q, "vg", XPU_COL_FLOAT32, XPU_T_FLOAT4, 0);
	vd = col_out(q, "vd", XPU_COL_DATE32, XPU_T_DATE, 0);
	vs = col_out(q, "vs", XPU_COL_INT16, XPU_T_INT2, 0);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_COUNT, vi);
	agg(q, XPU_AGG_SUM_INT, vi);
	agg(q, XPU_AGG_SUM_INT, vs);
	agg(q, XPU_AGG_SUM_NUMERIC, vn);
	agg(q, XPU_AGG_SUM_FLOAT, vf);
	agg(q, XPU_AGG_MOMENTS, vg);
	agg(q, XPU_AGG_MIN, vi);
	agg(q, XPU_AGG_MAX, vi);
	agg(q, XPU_AGG_MIN, vf);
	agg(q, XPU_AGG_MAX, vf);
	agg(q, XPU_AGG_MIN, vn);
	agg(q, XPU_AGG_MAX, vn);
	agg(q, XPU_AGG_MIN, vd);
	agg(q, XPU_AGG_MAX, vg);
	agg(q, XPU_AGG_COUNT, vf);
}

/* many: GROUP BY k (int64): count(*), sum(v) */
static void
shape_many(Query *q)
{
	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	key(q, load(q, "k", XPU_COL_INT64, XPU_T_INT8, 0), XPU_T_INT8, 0);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_SUM_INT, col_out(q, "v", XPU_COL_INT64, XPU_T_INT8, 0));
}

/* cnt: count(*), sum(v), min(v), max(v) (v int64), no GROUP BY */
static void
shape_cnt(Query *q)
{
	int			v;

	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	v = col_out(q, "v", XPU_COL_INT64, XPU_T_INT8, 0);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_SUM_INT, v);
	agg(q, XPU_AGG_MIN, v);
	agg(q, XPU_AGG_MAX, v);
}

/* divzero: sum(v / z) (int64): division by zero where z = 0 */
static void
shape_divzero(Query *q)
{
	int			v, z, r;

	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	v = load(q, "v", XPU_COL_INT64, XPU_T_INT8, 0);
	z = load(q, "z", XPU_COL_INT64, XPU_T_INT8, 0);
	r = xpu_add_reg(q->b, XPU_T_INT8, 0);
	xpu_add_instr(q->b, XPU_OP_DIV_I8, r, v, z, 0, 0);
	agg(q, XPU_AGG_SUM_INT, out(q, r, XPU_T_INT8, 0));
}

/* numsum: sum(n) of a decimal128(38, 0) */
static void
shape_numsum(Query *q)
{
	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	agg(q, XPU_AGG_SUM_NUMERIC, col_out(q, "n", XPU_COL_DECIMAL128, XPU_T_NUMERIC, 0));
}

/* ---------------------------------------------------------------- join shapes */

/*
 * The join shapes read the fact columns k (int64), c (utf8) and v (int64)
 * and probe the test dimensions (warp_client.h) in a JOIN stage as codegen
 * makes it (wc_join_begin, wc_join_depth).
 */

/* count(*), sum(v) in the PROJ stage */
static void
join_count_sum(Query *q)
{
	xpu_begin_stage(q->b, XPU_STAGE_PROJ);
	agg(q, XPU_AGG_COUNT_STAR, -1);
	agg(q, XPU_AGG_SUM_INT, col_out(q, "v", XPU_COL_INT64, XPU_T_INT8, 0));
}

/* JOIN even ON k GROUP BY even's payload column col (of type): count(*), sum(v) */
static void
by_even_payload(Query *q, int col, XpuType type)
{
	int			k,
				p;

	wc_join_begin(q->b);
	k = load(q, "k", XPU_COL_INT64, XPU_T_INT8, 0);
	wc_join_depth(q->b, q->joins, WC_DIM_EVEN, k, XPU_JOIN_INNER, 1, &col, &type, &p);
	key(q, p, type, 0);
	join_count_sum(q);
}

/* jinner: JOIN even ON k GROUP BY even.g (int8) */
static void
shape_jinner(Query *q)
{
	by_even_payload(q, 0, XPU_T_INT8);
}

/* jsemi / janti: WHERE [NOT] EXISTS (even with key k): count(*), sum(v) */
static void
semi_anti(Query *q, int jt)
{
	int			k;

	wc_join_begin(q->b);
	k = load(q, "k", XPU_COL_INT64, XPU_T_INT8, 0);
	wc_join_depth(q->b, q->joins, WC_DIM_EVEN, k, jt, 0, NULL, NULL, NULL);
	join_count_sum(q);
}

static void
shape_jsemi(Query *q)
{
	semi_anti(q, XPU_JOIN_SEMI);
}

static void
shape_janti(Query *q)
{
	semi_anti(q, XPU_JOIN_ANTI);
}

/* jtext: JOIN even ON k GROUP BY even.name (a text payload) */
static void
shape_jtext(Query *q)
{
	by_even_payload(q, 1, XPU_T_TEXT);
}

/*
 * j2: JOIN even ON k JOIN text ON c GROUP BY even.g, text.h: count(*),
 * sum(v) (two depths, the second on a text key)
 */
static void
shape_j2(Query *q)
{
	int			k,
				c,
				g,
				h;
	const int	pay[] = {0};
	const XpuType t1[] = {XPU_T_INT8},
				t2[] = {XPU_T_INT4};

	wc_join_begin(q->b);
	k = load(q, "k", XPU_COL_INT64, XPU_T_INT8, 0);
	c = load(q, "c", XPU_COL_UTF8, XPU_T_TEXT, 0);
	wc_join_depth(q->b, q->joins, WC_DIM_EVEN, k, XPU_JOIN_INNER, 1, pay, t1, &g);
	wc_join_depth(q->b, q->joins, WC_DIM_TEXT, c, XPU_JOIN_INNER, 1, pay, t2, &h);
	key(q, g, XPU_T_INT8, 0);
	key(q, h, XPU_T_INT4, 0);
	join_count_sum(q);
}

/*
 * jbadkey: jinner with the table built for an int4 outer key while the
 * program probes an int8 register: xpu_program_join_check refuses it
 */
static void
shape_jbadkey(Query *q)
{
	shape_jinner(q);
	q->joins->probe_type[0] = XPU_T_INT4;
}

static const struct
{
	const char *name;
	void		(*build) (Query *q);
}			shapes[] = {
	{"q1", shape_q1}, {"text2", shape_text2}, {"all", shape_all}, {"many", shape_many},
	{"cnt", shape_cnt}, {"divzero", shape_divzero}, {"numsum", shape_numsum},
	{"jinner", shape_jinner}, {"jsemi", shape_jsemi}, {"janti", shape_janti},
	{"jtext", shape_jtext}, {"j2", shape_j2}, {"jbadkey", shape_jbadkey},
};

/* ---------------------------------------------------------------- request */

/* appends file path's part: identity, every batch, the shape's fields */
static void
put_file(WcBuf *b, const Query *q, const char *path)
{
	ArrowFile  *f = wc_put_file_head(b, path, q->n_cols);
	int32_t		fields[MAX_COLS];

	for (int k = 0; k < q->n_cols; k++)
	{
		fields[k] = -1;
		for (int i = 0; i < f->schema.n_fields; i++)
			if (strcmp(f->schema.fields[i].name, q->col_names[k]) == 0)
				fields[k] = i;
		if (fields[k] < 0)
			wc_die(q->col_names[k]);
	}
	wc_put(b, fields, 4 * q->n_cols, 8);
	arrow_file_close(f);
}

/* ---------------------------------------------------------------- output */

static void
print_int128(__int128 v)
{
	char		buf[64];

	xpu_numeric_format(v, 0, buf);
	fputs(buf, stdout);
}

static void
print_value(XpuType type, int scale, const uint8_t *p)
{
	char		buf[64];
	int64_t		i;
	double		d;
	__int128	n;

	switch (type)
	{
		case XPU_T_FLOAT4:
		case XPU_T_FLOAT8:
			memcpy(&d, p, 8);
			printf("%.17g", d);
			break;
		case XPU_T_NUMERIC:
			memcpy(&n, p, 16);
			xpu_numeric_format(n, scale, buf);
			fputs(buf, stdout);
			break;
		default:
			memcpy(&i, p, 8);
			printf("%lld", (long long) i);
	}
}

/* prints one group at p; returns its size */
static size_t
print_group(const Query *q, const uint8_t *p)
{
	uint32_t	key_len;
	const uint8_t *k = p + 4;
	size_t		states_off;

	memcpy(&key_len, p, 4);
	states_off = (4 + key_len + 15) & ~(size_t) 15;
	putchar('G');
	for (int i = 0; i < q->n_keys; i++)
	{
		putchar('\t');
		if (*k++ == 0)
		{
			putchar('N');
			continue;
		}
		if (q->key_types[i] == XPU_T_TEXT)
		{
			int32_t		len;

			memcpy(&len, k, 4);
			putchar('x');
			for (int j = 0; j < len; j++)
				printf("%02x", k[4 + j]);
			k += 4 + len;
			continue;
		}
		print_value(q->key_types[i], q->key_scales[i], k);
		k += q->key_types[i] == XPU_T_NUMERIC ? 16 : 8;
	}
	for (int a = 0; a < q->n_aggs; a++)
	{
		XpuAggState s;

		memcpy(&s, p + states_off + a * sizeof(s), sizeof(s));
		printf("\t%lld%s", (long long) s.count, s.flags & XPU_AGGF_OVERFLOW ? "!" : "");
		switch (q->aggs[a].kind)
		{
			case XPU_AGG_SUM_INT:
				putchar(':');
				print_int128(s.v.i128);
				break;
			case XPU_AGG_SUM_NUMERIC:
				putchar(':');
				print_value(XPU_T_NUMERIC, q->arg_scales[a], (const uint8_t *) &s.v);
				break;
			case XPU_AGG_SUM_FLOAT:
				printf(":%.17g", s.v.f8[0]);
				break;
			case XPU_AGG_MOMENTS:
				printf(":%.17g:%.17g", s.v.f8[0], s.v.f8[1]);
				break;
			case XPU_AGG_MIN:
			case XPU_AGG_MAX:
				putchar(':');
				if (s.count > 0)
					print_value(q->arg_types[a], q->arg_scales[a], (const uint8_t *) &s.v);
				break;
			default:
				break;
		}
	}
	putchar('\n');
	return states_off + q->n_aggs * sizeof(XpuAggState);
}

/* ---------------------------------------------------------------- replies */

/* prints an AGG_RESULT's groups (of Query arg), and END after the last */
static int
reply(void *arg, const WarpMsgHeader *h, const uint8_t *p)
{
	const WarpAggResult *r = (const WarpAggResult *) p;
	size_t		off = sizeof(*r);

	for (uint32_t g = 0; g < r->n_groups; g++)
		off += print_group(arg, p + off);
	if (!(r->flags & WARP_AGG_LAST))
		return 0;
	printf("END\tstatus=%d\tmsg=%s\trows_in=%llu\trows_passed=%llu\tbatches=%llu"
		   "\tbytes_read=%llu\tbytes_cached=%llu\tgroups=%llu\tthreads=%u\tengine=%u"
		   "\tio_us=%llu\texec_us=%llu\twall_us=%llu\tmeta_image=%d\n",
		   r->status, r->err_message, (unsigned long long) r->rows_in,
		   (unsigned long long) r->rows_passed, (unsigned long long) r->batches,
		   (unsigned long long) r->bytes_read, (unsigned long long) r->bytes_cached,
		   (unsigned long long) r->groups_total,
		   r->threads, r->engine, (unsigned long long) r->io_us,
		   (unsigned long long) r->exec_us, (unsigned long long) r->wall_us,
		   (r->flags & WARP_AGG_META_IMAGE) != 0);
	return 1;
}

int
main(int argc, char **argv)
{
	WarpAggRequest hdr = {0};
	const char *dump = NULL;
	int			cancel_ms = 0;
	int			i = 1;
	WarpMsgType type = WARP_MSG_AGG_RUN;
	Query		q = {0};
	XpuProgram *prog;
	WcBuf		req = {0};
	WcJoins		joins = {0};
	static const uint64_t no_ids[WARP_MAX_JOINS];	/* the ids, once loaded */
	char		errbuf[256];
	void		(*build) (Query *) = NULL;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2)
	{
		if (strcmp(argv[i], "--threads") == 0)
			hdr.n_threads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--engine") == 0)
			hdr.engine = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--max-buffer") == 0)
			hdr.max_buffer_size = atoll(argv[i + 1]);
		else if (strcmp(argv[i], "--cancel-ms") == 0)
			cancel_ms = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--dump") == 0)
			dump = argv[i + 1];
		else if (strcmp(argv[i], "--join") == 0 && joins.n < WARP_MAX_JOINS)
			joins.dims[joins.n++] = strcmp(argv[i + 1], "text") == 0 ? WC_DIM_TEXT : WC_DIM_EVEN;
		else if (strcmp(argv[i], "--join-fault") == 0)
			joins.fault = argv[i + 1];
		else if (strcmp(argv[i], "--hold-ms") == 0)
			joins.hold_ms = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--fill") == 0)
			type = atoi(argv[i + 1]) ? WARP_MSG_AGG_FILL : WARP_MSG_AGG_RUN;
		else
			wc_die("unknown option");
	}
	if (argc - i < 2)
		wc_die("usage: agg_client [options] SOCKET SHAPE FILE...");
	for (size_t s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++)
		if (strcmp(shapes[s].name, argv[i + 1]) == 0)
			build = shapes[s].build;
	if (build == NULL)
		wc_die("unknown shape");
	q.b = xpu_builder_create();
	q.joins = &joins;
	build(&q);
	if ((prog = xpu_builder_finish(q.b, errbuf, sizeof(errbuf))) == NULL)
		wc_die(errbuf);
	hdr.n_files = argc - i - 2;
	hdr.n_keys = q.n_keys;
	hdr.n_aggs = q.n_aggs;
	hdr.prog_len = prog->total_len;
	wc_put(&req, &hdr, sizeof(hdr), 8);
	wc_put(&req, q.key_outs, 2 * q.n_keys, 8);
	wc_put(&req, q.aggs, sizeof(XpuAggDesc) * q.n_aggs, 8);
	wc_put(&req, prog, prog->total_len, 16);
	hdr.n_joins = joins.n;
	memcpy(req.p, &hdr, sizeof(hdr));
	joins.ids_off = (uint8_t *) wc_put(&req, no_ids, 8 * joins.n, 8) - req.p;
	for (int f = i + 2; f < argc; f++)
		put_file(&req, &q, argv[f]);
	if (dump)
	{
		FILE	   *out = fopen(dump, "wb");

		if (out == NULL || fwrite(req.p, 1, req.len, out) != req.len || fclose(out) != 0)
			wc_die("could not write the dump");
		return 0;
	}
	return wc_run(argv[i], type, WARP_MSG_AGG_RESULT, &req, &joins, cancel_ms, reply, &q);
}
