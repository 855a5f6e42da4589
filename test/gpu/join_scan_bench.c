/*
 * join_scan_bench.c
 *		The host's cost of GpuJoin's projection run on the GPU engine
 *		(src/xpu/xpu_join_scan.h) against the CPU engine's: over some of
 *		test/c/jstage_testlib.h's cases grown to ROWS outer rows, one thread,
 *		the best of five runs of
 *		  - the CPU engine's tiled run of the whole program (xpu_cpu_exec:
 *		    what a host without a GPU does for every outer row),
 *		  - the GPU kernel's work compiled for the host (xpu_join_scan_exec:
 *		    for reference only, the GPU does it), and
 *		  - the host's replay of the passing rows from the probes' rows
 *		    (xpu_join_scan_project: what the service's workers do on a GPU
 *		    host), per passing row and per outer row.
 *		No GPU needed:  make -C test/gpu joinscanbench [ROWS=200000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "jstage_testlib.h"
#include "xpu_join_scan.h"

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

int
main(int argc, char **argv)
{
	static const int cases[] = {0, 1, 4, 6, 8};
	int64_t		n = argc > 1 ? atoll(argv[1]) : 200000;

	for (unsigned ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++)
	{
		JsCase		c;
		JsData		js;
		XpuColumnData cd[16];
		XpuChunk	chunk;
		XpuError	err;
		char		eb[256];
		double		best[3] = {1e9, 1e9, 1e9};
		int64_t		pass = 0;
		size_t		nout;
		int			np;

		js_case(cases[ci], &c);
		c.n_outer = (int) n;
		if (!js_build(&c, &js, eb, sizeof(eb)))
		{
			printf("%s: %s\n", c.name, eb);
			continue;
		}
		js_chunk(&c, &js, cd, &chunk);
		nout = (size_t) js.n_outs * (size_t) n;
		np = xpu_join_scan_probes(js.prog);
		{
			XpuResult	r = {n, malloc(n), malloc(nout * sizeof(XpuValue)), malloc(nout)};
			void	   *ws = aligned_alloc(16, (xpu_cpu_workspace_size(js.prog) + 15) & ~15);
			uint8_t    *mask = malloc(n);
			int32_t    *rows = malloc(sizeof(int32_t) * ((size_t) np * n + 1));
			XpuValue   *v = malloc(nout * sizeof(XpuValue));
			uint8_t    *nn = malloc(nout);

			for (int rep = 0; rep < 5; rep++)
			{
				double		t[4];

				t[0] = now();
				memset(&err, 0, sizeof(err));
				xpu_cpu_exec(js.prog, &chunk, &r, ws, &err);
				t[1] = now();
				memset(&err, 0, sizeof(err));
				xpu_join_scan_exec(js.prog, &chunk, mask, rows, NULL, &err);
				t[2] = now();
				memset(&err, 0, sizeof(err));
				xpu_join_scan_project(js.prog, &chunk, mask, rows, n, 0, n, v, nn, &err);
				t[3] = now();
				for (int k = 0; k < 3; k++)
					if (t[k + 1] - t[k] < best[k])
						best[k] = t[k + 1] - t[k];
			}
			for (int64_t i = 0; i < n; i++)
				pass += mask[i];
			printf("%s: %lld rows, %lld pass\n  CPU engine %.1f ns/row; the GPU's work on the "
				   "host %.1f ns/row; the replay %.1f ns/passing row = %.1f ns/row\n",
				   c.name, (long long) n, (long long) pass, best[0] * 1e9 / n,
				   best[1] * 1e9 / n, pass ? best[2] * 1e9 / pass : 0.0, best[2] * 1e9 / n);
			free(r.mask);
			free(r.values);
			free(r.nulls);
			free(ws);
			free(mask);
			free(rows);
			free(v);
			free(nn);
		}
		js_free(&c, &js);
	}
	return 0;
}
