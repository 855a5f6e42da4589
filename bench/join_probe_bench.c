/*
 * join_probe_bench.c
 *		The CPU cost of a join depth's inner table (src/xpu/xpu_join.h) on one
 *		thread: building it from n inner rows (a dimension: unique keys
 *		1 .. n, an int4 and a text payload column) and probing it with m
 *		outer keys drawn at random from 1 .. n + n / 8 (about one in nine
 *		misses), reading the int4 payload of each match, as a star join's
 *		fact-table rows do, one outer row at a time (xpu_join_first/next)
 *		and 1,024 at a time (xpu_join_first_batch).  Three tables of the
 *		same rows: the dense form, the hash form (forced), and a hash form
 *		keyed by a text ("Customer#000000123").  For the int4 keys, also a
 *		program whose JOIN stage probes and reads the payload, run by the CPU
 *		engine's tile form (xpu_cpu_exec; with COUNTED=1 in the environment
 *		xpu_cpu_exec_counted, which also counts the rows entering the depth,
 *		EXPLAIN ANALYZE's rows in).  Best of 3.
 *
 *		cc -std=gnu11 -O3 -D_GNU_SOURCE -Isrc/xpu -Itest/c -o /tmp/join_probe_bench \
 *			bench/join_probe_bench.c src/xpu/xpu_join.c src/xpu/xpu_cpu.c \
 *			src/xpu/xpu_build.c -lm
 *		/tmp/join_probe_bench [n_inner [n_outer]]	(defaults 600000, 10000000)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "join_testlib.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define NAME_LEN	18			/* "Customer#000000123" */

/* the name of key into buf's NAME_LEN bytes (no terminator: names lie side by side) */
static void
name_of(int64_t key, char *buf)
{
	char		s[32];

	snprintf(s, sizeof(s), "Customer#%09u", (unsigned) (key % 1000000000));
	memcpy(buf, s, NAME_LEN);
}

/* the table of n dimension rows keyed by int4 (text: by their name) */
static XpuJoinTable *
build(int n, int form, int text_key, char *names, double *secs)
{
	XpuJoinSpec spec;
	XpuJoinBuilder *b;
	XpuJoinTable *t = NULL;
	XpuValue   *keys = calloc(n, sizeof(XpuValue)),
			   *pay = calloc(2 * (size_t) n, sizeof(XpuValue));
	uint8_t    *knull = calloc(n, 1),
			   *pnull = calloc(2 * (size_t) n, 1);
	XpuError	err = {0};
	double		t0;

	memset(&spec, 0, sizeof(spec));
	spec.n_keys = 1;
	spec.keys[0].type = spec.keys[0].probe_type = text_key ? XPU_T_TEXT : XPU_T_INT4;
	spec.n_pay = 2;
	spec.pay_types[0] = XPU_T_INT4;
	spec.pay_types[1] = XPU_T_TEXT;
	spec.form = form;
	for (int i = 0; i < n; i++)
	{
		int64_t		key = 1 + (int64_t) ((i * UINT64_C(2654435761)) % n);	/* a permutation */

		name_of(key, names + (size_t) (key - 1) * NAME_LEN);
		if (text_key)
		{
			keys[i].t.p = names + (size_t) (key - 1) * NAME_LEN;
			keys[i].t.len = NAME_LEN;
		}
		else
			keys[i].i = key;
		pay[i].i = key % 25;	/* c_nation-like */
		pay[n + i].t.p = names + (size_t) (key - 1) * NAME_LEN;
		pay[n + i].t.len = NAME_LEN;
	}
	t0 = now();
	if ((b = xpu_join_builder_create(&spec, &err)) != NULL &&
		xpu_join_builder_add(b, n, keys, knull, pay, pnull, &err))
		t = xpu_join_builder_finish(b, &err);
	*secs = now() - t0;
	xpu_join_builder_free(b);
	if (t == NULL)
	{
		fprintf(stderr, "build failed: %s\n", err.message);
		exit(1);
	}
	free(keys);
	free(pay);
	free(knull);
	free(pnull);
	return t;
}

/* adds the int4 payload of r and of the cursor's further matches to *sum */
static void
add_matches(const XpuJoinTable *t, XpuJoinCursor *c, int32_t r, int64_t *sum,
			int64_t *matches)
{
	for (; r >= 0; r = xpu_join_next(t, c))
	{
		XpuValue	v;
		uint8_t		isnull;

		xpu_join_payload(t, r, 0, &v, &isnull);
		*sum += v.i;
		(*matches)++;
	}
}

/* probes t with outer keys, summing the int4 payload of the matches */
static int64_t
probe(const XpuJoinTable *t, const XpuValue *outer, int m, int64_t *matches)
{
	int64_t		sum = 0;
	uint8_t		nonull = 0;

	*matches = 0;
	for (int o = 0; o < m; o++)
	{
		XpuJoinCursor c;

		add_matches(t, &c, xpu_join_first(t, &c, &outer[o], &nonull), &sum, matches);
	}
	return sum;
}

/* the same through xpu_join_first_batch, 1,024 outer rows (a CPU tile) at a time */
static int64_t
probe_batch(const XpuJoinTable *t, const XpuValue *outer, int m, int64_t *matches)
{
	static XpuJoinCursor curs[1024];
	static uint8_t nonull[1024];
	int32_t		first[1024];
	int64_t		sum = 0;

	*matches = 0;
	for (int from = 0; from < m; from += 1024)
	{
		int			n = m - from < 1024 ? m - from : 1024;
		const XpuValue *keys[1] = {outer + from};
		const uint8_t *nulls[1] = {nonull};

		xpu_join_first_batch(t, XPU_JOIN_INNER, n, NULL, keys, nulls, curs, first);
		for (int i = 0; i < n; i++)
			add_matches(t, &curs[i], first[i], &sum, matches);
	}
	return sum;
}

/*
 * the same as a program's JOIN stage through the CPU engine's per-tile form
 * (xpu_cpu_exec over slices of 16,384 outer rows, as the service runs it):
 * the int4 key column loaded, JOIN_PROBE over the tile's rows
 * (xpu_join_first_batch), r0 = probe IS NOT NULL, JOIN_PAY of the int4
 * payload (a gather), which is the output; the sum of the passing rows'
 */
#define SLICE		16384

static int64_t
probe_program(const XpuJoinTable *t, const int32_t *outer, int m, int64_t *matches)
{
	XpuBuilder *b = xpu_builder_create();
	int			r0 = xpu_add_reg(b, XPU_T_BOOL, 0);
	int			k = xpu_add_reg(b, XPU_T_INT4, 0);
	int			p = xpu_add_reg(b, XPU_T_INT8, 0);
	int			v = xpu_add_reg(b, XPU_T_INT4, 0);
	char		errbuf[256];
	XpuProgram *prog;
	void	   *ws;
	XpuValue   *vals = malloc(sizeof(XpuValue) * SLICE);
	uint8_t    *mask = malloc(SLICE),
			   *nulls = malloc(SLICE);
	int64_t		sum = 0;
	/* COUNTED=1: EXPLAIN ANALYZE's count of the rows entering the depth too */
	int			counted = getenv("COUNTED") != NULL && atoi(getenv("COUNTED")) != 0;
	uint64_t	probes[XPU_JOIN_COUNT_DEPTHS] = {0};

	xpu_add_instr(b, XPU_OP_LOAD_COL, k, 0, 0, 0, xpu_add_column(b, 0, XPU_COL_INT32, 0));
	xpu_begin_stage(b, XPU_STAGE_JOIN);
	xpu_add_instr(b, XPU_OP_CONST_BOOL, r0, 0, 0, 0, 1);
	xpu_add_instr(b, XPU_OP_MASK_PUSH_TRUE, 0, r0, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PROBE, p, k, k, k, 0 | (1 << 8));
	xpu_add_instr(b, XPU_OP_IS_NOT_NULL, r0, p, 0, 0, 0);
	xpu_add_instr(b, XPU_OP_JOIN_PAY, v, p, 0, 0, 0 | (0 << 8));
	xpu_add_instr(b, XPU_OP_MASK_POP, 0, 0, 0, 0, 0);
	xpu_begin_stage(b, XPU_STAGE_PROJ);
	xpu_add_output(b, v);
	if ((prog = xpu_builder_finish(b, errbuf, sizeof(errbuf))) == NULL)
	{
		fprintf(stderr, "program: %s\n", errbuf);
		exit(1);
	}
	xpu_builder_free(b);
	ws = aligned_alloc(16, (xpu_cpu_workspace_size(prog) + 15) & ~(size_t) 15);
	*matches = 0;
	for (int from = 0; from < m; from += SLICE)
	{
		int			n = m - from < SLICE ? m - from : SLICE;
		XpuColumnData cd = {NULL, outer + from, NULL, 0};
		XpuChunk	chunk = {n, 1, 0, &cd, NULL, &t, 1, 0};
		XpuResult	res = {n, mask, vals, nulls};
		XpuError	err = {0};

		if (xpu_cpu_exec_counted(prog, &chunk, &res, ws, &err, counted ? probes : NULL) !=
			XPU_OK)
		{
			fprintf(stderr, "run: %s\n", err.message);
			exit(1);
		}
		for (int i = 0; i < n; i++)
			if (mask[i])
			{
				sum += vals[i].i;
				(*matches)++;
			}
	}
	if (counted && probes[0] != (uint64_t) m)
	{
		fprintf(stderr, "counted %llu rows into the depth, not %d\n",
				(unsigned long long) probes[0], m);
		exit(1);
	}
	free(ws);
	free(prog);
	free(vals);
	free(mask);
	free(nulls);
	return sum;
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 600000;
	int			m = argc > 2 ? atoi(argv[2]) : 10000000;
	char	   *names = malloc((size_t) (n + n / 8 + 1) * NAME_LEN + 1);
	XpuValue   *outer_i = malloc(sizeof(XpuValue) * (size_t) m),
			   *outer_t = malloc(sizeof(XpuValue) * (size_t) m);
	int32_t    *outer_k = malloc(sizeof(int32_t) * (size_t) m);
	static const struct
	{
		const char *name;
		int			form;
		int			text_key;
	}			cases[] = {
		{"int4 key, dense form", XPU_JOIN_AUTO, 0},
		{"int4 key, hash form", XPU_JOIN_HASH, 0},
		{"text key, hash form", XPU_JOIN_AUTO, 1},
	};

	for (int64_t k = n + 1; k <= n + n / 8; k++)
		name_of(k, names + (size_t) (k - 1) * NAME_LEN);
	for (int o = 0; o < m; o++)
	{
		int64_t		key = 1 + (int64_t) (jt_rand() % (uint64_t) (n + n / 8));

		outer_i[o].i = key;
		outer_k[o] = (int32_t) key;
		outer_t[o].t.p = names + (size_t) (key - 1) * NAME_LEN;
		outer_t[o].t.len = NAME_LEN;
	}
	printf("%d inner rows, %d outer rows, one thread, best of 3\n", n, m);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		double		best_build = 1e9,
					best_probe = 1e9,
					best_batch = 1e9,
					best_prog = 1e9;
		int64_t		sum = 0,
					matches = 0;
		uint64_t	bytes = 0;
		int			form = 0;

		for (int rep = 0; rep < 3; rep++)
		{
			double		secs,
						t0;
			XpuJoinTable *t = build(n, cases[i].form, cases[i].text_key, names, &secs);

			best_build = secs < best_build ? secs : best_build;
			t0 = now();
			sum = probe(t, cases[i].text_key ? outer_t : outer_i, m, &matches);
			secs = now() - t0;
			best_probe = secs < best_probe ? secs : best_probe;
			t0 = now();
			if (probe_batch(t, cases[i].text_key ? outer_t : outer_i, m, &matches) != sum)
			{
				fprintf(stderr, "the batch probe's sum differs\n");
				return 1;
			}
			secs = now() - t0;
			best_batch = secs < best_batch ? secs : best_batch;
			if (!cases[i].text_key)
			{
				int64_t		pm;

				t0 = now();
				if (probe_program(t, outer_k, m, &pm) != sum || pm != matches)
				{
					fprintf(stderr, "the program's sum differs\n");
					return 1;
				}
				secs = now() - t0;
				best_prog = secs < best_prog ? secs : best_prog;
			}
			bytes = t->total_len;
			form = t->form;
			free(t);
		}
		printf("%-20s %s %5.1f MB: build %6.1f ms (%5.1f ns/row); probe %6.1f ms "
			   "(%5.1f ns/row), batch probe %6.1f ms (%5.1f ns/row); %lld matches\n",
			   cases[i].name, form == XPU_JOIN_DENSE ? "dense" : "hash ", bytes / 1e6,
			   best_build * 1e3, best_build * 1e9 / n, best_probe * 1e3,
			   best_probe * 1e9 / m, best_batch * 1e3, best_batch * 1e9 / m,
			   (long long) matches);
		if (!cases[i].text_key)
			printf("%-20s JOIN stage program (xpu_cpu_exec, tile form): %6.1f ms (%5.1f ns/row)\n",
				   cases[i].name, best_prog * 1e3, best_prog * 1e9 / m);
	}
	free(names);
	free(outer_i);
	free(outer_t);
	free(outer_k);
	return 0;
}
