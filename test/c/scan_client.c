/*
 * scan_client.c
 *		A small client of pg_warp_service's SCAN_RUN (src/xpu/protocol.h)
 *		for the end-to-end tests (test/python/test_service_scan.py): builds
 *		one of a few fixed qual programs with the xpu_build.c API, sends
 *		SCAN_RUN over the Arrow files given (every top-level field a chunk
 *		column, in the schema's order) and prints the blocks as text.
 *
 *	scan_client [--threads N] [--outs N] [--cancel-ms MS] SOCKET QUAL FILE...
 *
 * QUAL: "none" (every row passes), "pos" (field 0, int32, > 0) or "div"
 * (field 0 / field 1, both int32, > 0: division by zero rechecks a batch),
 * "sgt" (field 1, utf8, > 'v5' bytewise);
 * or a join qual over the test dimensions of warp_client.h, loaded before
 * the run: "jsemi" / "janti" (field 0, int64, has / lacks a match in
 * WC_DIM_EVEN), "j2" (field 0 in WC_DIM_EVEN and field 1, utf8, in
 * WC_DIM_TEXT).
 * --outs: the chunk columns returned (the first N; default all).
 *
 * Output, one line each: "B", the block's rows and columns and "recheck"
 * or "-"; then one "R" line per row with each column's value, tab-separated:
 * N for NULL, BITS as 0/1, fixed-width values and variable-length bytes as
 * hex; "END" with the counters of the last SCAN_RESULT, or "ERROR code
 * message".
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "warp_client.h"
#include "xpu_join.h"
#include "xpu_program.h"

/*
 * the join quals: "jsemi" / "janti", field 0 (int64) has / lacks a match
 * in WC_DIM_EVEN; "j2", field 0 matches in WC_DIM_EVEN and field 1 (utf8)
 * in WC_DIM_TEXT (warp_client.h); false when q is none of them
 */
static bool
build_join(XpuBuilder *b, const char *q, WcJoins *joins)
{
	int			k,
				c;

	if (strcmp(q, "jsemi") != 0 && strcmp(q, "janti") != 0 && strcmp(q, "j2") != 0)
		return false;
	wc_join_begin(b);
	k = xpu_add_reg(b, XPU_T_INT8, 0);
	xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT64, 0));
	wc_join_depth(b, joins, WC_DIM_EVEN, k, strcmp(q, "janti") == 0 ? XPU_JOIN_ANTI :
				  XPU_JOIN_SEMI, 0, NULL, NULL, NULL);
	if (strcmp(q, "j2") == 0)
	{
		c = xpu_add_reg(b, XPU_T_TEXT, 0);
		xpu_add_instr(b, XPU_OP_LOAD_COL, c, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_UTF8, 0));
		wc_join_depth(b, joins, WC_DIM_TEXT, c, XPU_JOIN_INNER, 0, NULL, NULL, NULL);
	}
	return true;
}

/* the qual program named q (a join qual's depths into joins) */
static XpuProgram *
build(const char *q, WcJoins *joins)
{
	XpuBuilder *b = xpu_builder_create();
	int			acc;
	char		err[256];
	XpuProgram *prog;

	if (build_join(b, q, joins))
		goto done;
	acc = xpu_add_reg(b, XPU_T_BOOL, 0);	/* r0 */
	if (strcmp(q, "pos") == 0 || strcmp(q, "div") == 0)
	{
		int			a = xpu_add_reg(b, XPU_T_INT4, 0);
		int			zero = xpu_add_reg(b, XPU_T_INT4, 0);
		int			t = xpu_add_reg(b, XPU_T_BOOL, 0);
		int64_t		v = 0;

		xpu_add_instr(b, XPU_OP_LOAD_COL, a, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
		if (strcmp(q, "div") == 0)
		{
			int			z = xpu_add_reg(b, XPU_T_INT4, 0);
			int			quo;

			xpu_add_instr(b, XPU_OP_LOAD_COL, z, 0, 0, 0,
						  xpu_add_column(b, 1, XPU_COL_INT32, 0));
			quo = xpu_add_reg(b, XPU_T_INT4, 0);
			xpu_begin_stage(b, XPU_STAGE_QUAL);
			xpu_add_instr(b, XPU_OP_DIV_I4, quo, a, z, 0, 0);
			a = quo;
		}
		else
			xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_INT, zero, 0, 0, 0, xpu_add_const(b, &v, 8));
		xpu_add_instr(b, XPU_OP_GT_INT, t, a, zero, 0, 0);
		xpu_add_instr(b, XPU_OP_MOVE, acc, t, 0, 0, 0);
	}
	else if (strcmp(q, "sgt") == 0)
	{
		int			s = xpu_add_reg(b, XPU_T_TEXT, 0);
		int			c = xpu_add_reg(b, XPU_T_TEXT, 0);
		int			t = xpu_add_reg(b, XPU_T_BOOL, 0);

		xpu_add_instr(b, XPU_OP_LOAD_COL, s, 0, 0, 0, xpu_add_column(b, 1, XPU_COL_UTF8, 0));
		xpu_begin_stage(b, XPU_STAGE_QUAL);
		xpu_add_instr(b, XPU_OP_CONST_TEXT, c, 0, 0, 0, xpu_add_const_text(b, "v5", 2));
		xpu_add_instr(b, XPU_OP_GT_TEXT, t, s, c, 0, 0);
		xpu_add_instr(b, XPU_OP_MOVE, acc, t, 0, 0, 0);
	}
	else if (strcmp(q, "none") != 0)
		wc_die("unknown qual");
done:
	if ((prog = xpu_builder_finish(b, err, sizeof(err))) == NULL)
		wc_die(err);
	xpu_builder_free(b);
	return prog;
}

/* appends file path's part: identity, every batch, every field */
static void
put_file(WcBuf *b, const char *path, uint32_t n_cols)
{
	ArrowFile  *f = wc_put_file_head(b, path, n_cols);

	for (uint32_t i = 0; i < n_cols; i++)
		wc_put(b, &i, 4, 4);
	arrow_file_close(f);
}

static void
hex(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("%02x", p[i]);
}

/* prints the block of a SCAN_RESULT (len bytes) */
static void
print_block(const uint8_t *p, uint32_t len)
{
	const WarpScanResult *h = (const WarpScanResult *) p;
	const uint8_t *vals[4096], *valid[4096], *data[4096];
	WarpScanColumn cs[4096];
	size_t		off = sizeof(*h);
	size_t		bits = ((size_t) h->n_rows + 7) / 8;

#define TAKE(n) (off = (off + 7) & ~(size_t) 7, off += (n), off > len ? (wc_die("truncated"), p) : p + off - (n))
	if (h->n_cols > 4096)
		wc_die("too many columns");
	printf("B\t%u\t%u\t%s\n", h->n_rows, h->n_cols, h->flags & WARP_SCAN_RECHECK ? "recheck" : "-");
	for (uint32_t j = 0; j < h->n_cols; j++)
	{
		memcpy(&cs[j], TAKE(sizeof(WarpScanColumn)), sizeof(WarpScanColumn));
		valid[j] = cs[j].null_count ? TAKE(bits) : NULL;
		if (cs[j].layout == WARP_SCAN_BITS)
			vals[j] = TAKE(bits);
		else if (cs[j].layout == WARP_SCAN_FIXED)
			vals[j] = TAKE((size_t) cs[j].width * h->n_rows);
		else
		{
			vals[j] = TAKE((cs[j].layout == WARP_SCAN_VAR32 ? 4 : 8) * ((size_t) h->n_rows + 1));
			data[j] = TAKE(cs[j].data_len);
		}
	}
	for (uint32_t r = 0; r < h->n_rows; r++)
	{
		printf("R");
		for (uint32_t j = 0; j < h->n_cols; j++)
		{
			printf("\t");
			if (valid[j] && !(valid[j][r / 8] & (1 << (r % 8))))
				printf("N");
			else if (cs[j].layout == WARP_SCAN_BITS)
				printf("%d", (vals[j][r / 8] >> (r % 8)) & 1);
			else if (cs[j].layout == WARP_SCAN_FIXED)
				hex(vals[j] + (size_t) r * cs[j].width, cs[j].width);
			else if (cs[j].layout == WARP_SCAN_VAR32)
			{
				int32_t		o[2];

				memcpy(o, vals[j] + 4 * (size_t) r, 8);
				hex(data[j] + o[0], o[1] - o[0]);
			}
			else
			{
				int64_t		o[2];

				memcpy(o, vals[j] + 8 * (size_t) r, 16);
				hex(data[j] + o[0], o[1] - o[0]);
			}
		}
		printf("\n");
	}
#undef TAKE
}

/* prints a SCAN_RESULT: a block, or END with the counters of the last */
static int
reply(void *arg, const WarpMsgHeader *h, const uint8_t *p)
{
	const WarpScanResult *r = (const WarpScanResult *) p;

	if (!(r->flags & WARP_SCAN_LAST))
	{
		print_block(p, h->length);
		return 0;
	}
	printf("END\trows_in=%llu\trows_passed=%llu\tbatches=%llu\trecheck=%llu"
		   "\tthreads=%u\tengine=%u\tbytes_read=%llu\tmapped=%llu\tto_pin=%llu"
		   "\tdirect=%llu\tdirect_mode=%u\n",
		   (unsigned long long) r->rows_in, (unsigned long long) r->rows_passed,
		   (unsigned long long) r->batches,
		   (unsigned long long) r->recheck_batches, r->threads, r->engine,
		   (unsigned long long) r->bytes_read, (unsigned long long) r->bytes_mapped,
		   (unsigned long long) r->bytes_to_pin, (unsigned long long) r->bytes_direct,
		   r->direct_mode);
	return 1;
}

int
main(int argc, char **argv)
{
	WarpScanRequest hdr = {0};
	int			cancel_ms = 0,
				outs = -1,
				i = 1;
	XpuProgram *prog;
	WcBuf		req = {0};
	WcJoins		joins = {0};
	static const uint64_t no_ids[WARP_MAX_JOINS];	/* the ids, once loaded */
	ArrowFile  *f;
	ArrowError	err;

	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2)
	{
		if (strcmp(argv[i], "--threads") == 0)
			hdr.n_threads = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--outs") == 0)
			outs = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--cancel-ms") == 0)
			cancel_ms = atoi(argv[i + 1]);
		else
			wc_die("unknown option");
	}
	if (argc - i < 3)
		wc_die("usage: scan_client [options] SOCKET QUAL FILE...");
	prog = build(argv[i + 1], &joins);
	if (arrow_file_open(argv[i + 2], NULL, &f, &err) != ARROW_OK)
		wc_die(argv[i + 2]);
	hdr.n_cols = f->schema.n_fields;
	arrow_file_close(f);
	hdr.n_outs = outs < 0 ? hdr.n_cols : (uint32_t) outs;
	hdr.n_files = argc - i - 2;
	hdr.prog_len = prog->total_len;
	hdr.n_joins = joins.n;
	wc_put(&req, &hdr, sizeof(hdr), 8);
	wc_put(&req, prog, prog->total_len, 16);
	joins.ids_off = (uint8_t *) wc_put(&req, no_ids, 8 * joins.n, 8) - req.p;
	for (int k = i + 2; k < argc; k++)
		put_file(&req, argv[k], hdr.n_cols);
	wc_put(&req, NULL, 0, 8);
	return wc_run(argv[i], WARP_MSG_SCAN_RUN, WARP_MSG_SCAN_RESULT, &req, &joins, cancel_ms, reply,
				  NULL);
}
