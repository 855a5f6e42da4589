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
 *		bench/results/README.md.)
 *
 *		cc -std=gnu11 -O3 -D_GNU_SOURCE -Isrc/xpu -o /tmp/join_build_bench \
 *			bench/join_build_bench.c src/xpu/xpu_join.c src/xpu/xpu_agg.c \
 *			src/xpu/xpu_hll_sketch.c -lm
 *		/tmp/join_build_bench [n [shares]]	(defaults 400000, 13)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "xpu_join.h"

#define RUNS	7

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
 * the leader's part, once: the table of the images in a fresh memfd; its
 * bytes copied to *out
 */
static double
finish(const XpuJoinSpec *spec, void **images, const uint64_t *lens, int shares, void **out,
	   uint64_t *out_len)
{
	XpuError	err = {0};
	double		t0 = now();
	XpuJoinBuilder *b = xpu_join_builder_create(spec, &err);
	uint64_t	len;
	int			fd;
	void	   *p;
	double		secs;

	for (int s = 0; s < shares; s++)
		if (!xpu_join_builder_attach(b, images[s], lens[s], &err))
		{
			fprintf(stderr, "attach: %s\n", err.message);
			exit(1);
		}
	if ((len = xpu_join_builder_layout(b, &err)) == 0 ||
		(fd = memfd_create("join_build_bench", MFD_CLOEXEC)) < 0 ||
		ftruncate(fd, (off_t) len) != 0 ||
		(p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0)) ==
		MAP_FAILED)
	{
		fprintf(stderr, "layout or memfd failed: %s\n", err.message);
		exit(1);
	}
	xpu_join_builder_write_zeroed(b, p);
	xpu_join_builder_free(b);
	secs = now() - t0;
	if (out != NULL)
	{
		*out = malloc((size_t) len);
		memcpy(*out, p, (size_t) len);
		*out_len = len;
	}
	munmap(p, len);
	close(fd);
	return secs;
}

int
main(int argc, char **argv)
{
	int			n = argc > 1 ? atoi(argv[1]) : 400000;
	int			shares = argc > 2 ? atoi(argv[2]) : 13;

	printf("%d rows in %d shares, the leader's part (attach, layout, write into a fresh "
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
		finish(&spec, images, lens, shares, &tab, &tab_len);
		for (int r = 0; r < RUNS; r++)
			t[r] = finish(&spec, images, lens, shares, NULL, NULL);
		qsort(t, RUNS, sizeof(double), cmp_double);
		if ((one = xpu_join_builder_create(&spec, &err)) == NULL)
			exit(1);
		add_rows(one, 0, n);
		whole = xpu_join_builder_finish(one, &err);
		xpu_join_builder_free(one);
		same = whole != NULL && whole->total_len == tab_len && memcmp(whole, tab, tab_len) == 0;
		printf("  %-22s %7.2f   (%s form, %llu bytes; %s)\n",
			   text ? "key + text payload:" : "key only:", t[RUNS / 2] * 1e3,
			   ((XpuJoinTable *) tab)->form == XPU_JOIN_DENSE ? "dense" : "hash",
			   (unsigned long long) tab_len,
			   same ? "the bytes of one builder's table" : "NOT one builder's table");
		if (!same)
			return 1;
		for (int s = 0; s < shares; s++)
			free(images[s]);
		free(images);
		free(lens);
		free(tab);
		free(whole);
	}
	return 0;
}
