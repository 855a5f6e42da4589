/*
 * join_build_bench.c
 *		The serial part of a parallel inner-table build (src/engine/
 *		gpu_join_build.c) on one thread: the participants' shares exist as
 *		images (xpu_join_builder_image, made before the clock starts, as the
 *		workers make them), and the leader turns them into the table in a
 *		fresh memfd, as gj_load does: it attaches them in place
 *		(xpu_join_builder_attach), lays the table out and writes it.  The
 *		rows: n of a dimension of 2.5 n keys (SSB SF 20's part: 1,000,000
 *		keys, MFGR#1 or #2 keeps 400,000), unique int4 keys in scan order,
 *		without and with a text payload ("Brand12"), in as many shares as
 *		participants.  The table is checked against the one a single
 *		builder makes of the same rows (the same bytes).  Median of 7 runs,
 *		ms.  (Built at 494940d it also timed the way before, every image
 *		merged into the builder first; since gpu_join_table.c the memfd is
 *		mapped populated and written where not 0, as gj_table_make does:
 *		bench/results/README.md.)  The memfd's steps and the write are
 *		gj_table_make's (src/engine/gpu_join_memfd.c: a table of 4 MB or
 *		more written by up to 8 threads).  Each table also with its memory
 *		made ahead (gj_table_prepare: before the clock here, during the
 *		scan there) for 1.25, 0.5 and 100 times its size: then grown or
 *		shrunk, which the time includes (over twice the table's size it is
 *		not used: a fresh memfd, the unused one let go by a detached thread).
 *		And each with the keys said unique (XpuJoinSpec.unique_keys, as
 *		GpuJoin says of keys a unique index proves): the layout takes the
 *		keys' span from the images' attach and skips its pass for repeats,
 *		and the slots are counted once written.
 *
 *		cc -std=gnu11 -O3 -D_GNU_SOURCE -Isrc -Isrc/xpu -o /tmp/join_build_bench \
 *			bench/join_build_bench.c src/engine/gpu_join_memfd.c src/xpu/xpu_join.c \
 *			src/xpu/xpu_agg.c src/xpu/xpu_hll_sketch.c -lm -lpthread
 *		/tmp/join_build_bench [n [shares]]	(defaults 400000, 13)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "engine/gpu_join_memfd.h"

#define RUNS	7

/* the memory made ahead, in table sizes (0: none, a fresh memfd after the scan) */
static const double AHEAD[] = {0, 1.25, 0.5, 100};
static const char *const AHEAD_NAME[] = {
	"fresh memfd:", "memory made ahead, 1.25x:", "memory made ahead, 0.5x:",
	"memory made ahead, 100x:"
};

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return x < y ? -1 : x > y;
}

/* rows from .. to - 1 added to a builder of spec (exits on failure) */
static void
add_rows(XpuJoinBuilder *b, int from, int to)
{
	int			m = to - from;
	XpuValue   *keys = calloc((size_t) m + 1, sizeof(XpuValue)),
			   *pay = calloc((size_t) m + 1, sizeof(XpuValue));
	uint8_t    *knull = calloc((size_t) m + 1, 1),
			   *pnull = calloc((size_t) m + 1, 1);
	char	  (*brands)[16] = calloc((size_t) m + 1, 16);
	XpuError	err = {0};

	for (int i = 0; i < m; i++)
	{
		int			row = from + i;

		/* kept keys of a 2.5 n key dimension, in scan order */
		keys[i].i = 1 + (int64_t) row * 5 / 2;
		snprintf(brands[i], sizeof(brands[i]), "Brand%02d", row % 40);
		pay[i].t.p = brands[i];
		pay[i].t.len = 7;
	}
	if (!xpu_join_builder_add(b, m, keys, knull, pay, pnull, &err))
	{
		fprintf(stderr, "rows %d..%d: %s\n", from, to, err.message);
		exit(1);
	}
	free(keys);
	free(pay);
	free(knull);
	free(pnull);
	free(brands);
}

/* the images of n rows in shares */
static void **
make_images(const XpuJoinSpec *spec, int n, int shares, uint64_t *lens)
{
	void	  **images = calloc((size_t) shares, sizeof(void *));
	XpuError	err = {0};

	for (int s = 0; s < shares; s++)
	{
		XpuJoinBuilder *b = xpu_join_builder_create(spec, &err);

		if (b == NULL)
			exit(1);
		add_rows(b, (int) ((int64_t) n * s / shares), (int) ((int64_t) n * (s + 1) / shares));
		lens[s] = xpu_join_builder_image_len(b);
		if (posix_memalign(&images[s], 64, (size_t) lens[s]) != 0)
			exit(1);
		xpu_join_builder_image(b, images[s]);
		xpu_join_builder_free(b);
	}
	return images;
}

/*
 * the leader's part, once: the table of the images in a memfd, as
 * gj_table_make makes it; its bytes copied to *out.  ahead > 0: the memfd
 * made before the clock starts, ahead times the table's size, as
 * gj_table_prepare's thread makes it during the scan
 */
static double
finish(const XpuJoinSpec *spec, void **images, const uint64_t *lens, int shares, double ahead,
	   void **out, uint64_t *out_len)
{
	XpuError	err = {0};
	double		t0;
	XpuJoinBuilder *b = xpu_join_builder_create(spec, &err);
	uint64_t	len;
	GjMemfd		mem;
	int			used = 0;
	double		secs;

	if (ahead > 0)
	{
		/* the table's size, known here from a first layout (the plan's rows there) */
		for (int s = 0; s < shares; s++)
			xpu_join_builder_attach(b, images[s], lens[s], &err);
		len = xpu_join_builder_layout(b, &err);
		xpu_join_builder_free(b);
		b = xpu_join_builder_create(spec, &err);
		if (!gj_memfd_make(&mem, ((uint64_t) (len * ahead) + 4095) / 4096 * 4096))
		{
			fprintf(stderr, "memfd made ahead failed\n");
			exit(1);
		}
	}
	t0 = now();
	for (int s = 0; s < shares; s++)
		if (!xpu_join_builder_attach(b, images[s], lens[s], &err))
		{
			fprintf(stderr, "attach: %s\n", err.message);
			exit(1);
		}
	if ((len = xpu_join_builder_layout(b, &err)) == 0)
	{
		fprintf(stderr, "layout: %s\n", err.message);
		exit(1);
	}
	if (ahead > 0)
		used = gj_memfd_fit(&mem, len);
	if (!used && !gj_memfd_make(&mem, len))
	{
		fprintf(stderr, "memfd failed\n");
		exit(1);
	}
	gj_table_write(b, mem.map, len);
	if (!xpu_join_builder_written(b, mem.map))
	{
		fprintf(stderr, "a key repeated\n");		/* not in these rows */
		exit(1);
	}
	xpu_join_builder_free(b);
	/* (the first run's copy, whose time is not kept) */
	if (out != NULL)
	{
		*out = malloc((size_t) len);
		memcpy(*out, mem.map, (size_t) len);
		*out_len = len;
	}
	if (!gj_memfd_finish(&mem, len))
		exit(1);
	secs = now() - t0;
	close(mem.fd);
	return secs;
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 400000;
	int			shares = argc > 2 ? atoi(argv[2]) : 13;

	printf("%d rows in %d shares, the leader's part (attach, layout, write into a "
		   "memfd), median of %d, ms\n", n, shares, RUNS);
	for (int text = 0; text <= 1; text++)
	{
		XpuJoinSpec spec;
		uint64_t   *lens = calloc((size_t) shares, sizeof(uint64_t));
		void	  **images;
		void	   *tab;
		uint64_t	tab_len;
		XpuJoinTable *whole;
		XpuJoinBuilder *one;
		XpuError	err = {0};
		double		t[RUNS];
		int			same;

		memset(&spec, 0, sizeof(spec));
		spec.n_keys = 1;
		spec.keys[0].type = spec.keys[0].probe_type = XPU_T_INT4;
		spec.n_pay = text;
		spec.pay_types[0] = XPU_T_TEXT;
		spec.form = XPU_JOIN_AUTO;
		images = make_images(&spec, n, shares, lens);
		if ((one = xpu_join_builder_create(&spec, &err)) == NULL)
			exit(1);
		add_rows(one, 0, n);
		whole = xpu_join_builder_finish(one, &err);
		xpu_join_builder_free(one);
		for (int a = 0; a < 8; a++)
		{
			/* the keys said unique (a unique index): no pass for repeats before the layout */
			spec.unique_keys = a >= 4;
			finish(&spec, images, lens, shares, AHEAD[a % 4], &tab, &tab_len);
			for (int r = 0; r < RUNS; r++)
				t[r] = finish(&spec, images, lens, shares, AHEAD[a % 4], NULL, NULL);
			qsort(t, RUNS, sizeof(double), cmp_double);
			same = whole != NULL && whole->total_len == tab_len &&
				memcmp(whole, tab, tab_len) == 0;
			printf("  %-20s %-13s %-26s %7.2f   (%s form, %llu bytes; %s)\n",
				   text ? "key + text payload," : "key only,",
				   spec.unique_keys ? "said unique," : "", AHEAD_NAME[a % 4], t[RUNS / 2] * 1e3,
				   ((XpuJoinTable *) tab)->form == XPU_JOIN_DENSE ? "dense" : "hash",
				   (unsigned long long) tab_len,
				   same ? "the bytes of one builder's table" : "NOT one builder's table");
			free(tab);
			if (!same)
				return 1;
		}
		spec.unique_keys = 0;
		for (int s = 0; s < shares; s++)
			free(images[s]);
		free(images);
		free(lens);
		free(whole);
	}
	return 0;
}
