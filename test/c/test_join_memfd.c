/*
 * test_join_memfd.c
 *		Unit tests of a GpuJoin inner table's memfd and its write in parts
 *		(src/engine/gpu_join_memfd.c, xpu_join_builder_write_head/_run):
 *		a table of several attached images (as a parallel build's
 *		participants give them), dense and hash forms, with NULL keys and
 *		text payloads, small and past the threaded-write size, written by
 *		gj_table_write into a memfd made fresh, made ahead larger (kept,
 *		then shrunk), made ahead smaller (grown), or made ahead over twice
 *		its size (not used, let go): the memfd holds exactly the bytes of
 *		one builder's table, and its size is the table's.  The runs written
 *		in reverse order give the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"
#include "engine/gpu_join_memfd.h"

#define SHARES	5

/*
 * rows from .. to - 1 of a dimension added to b, a batch at a time: int8
 * keys step apart, every 97th NULL; a text payload, every 13th NULL
 */
#define BATCH	1024

static void
add_rows(XpuJoinBuilder *b, int from, int to, int step)
{
	static XpuValue keys[BATCH],
				pay[BATCH];
	static uint8_t knull[BATCH],
				pnull[BATCH];
	static char texts[BATCH][24];
	XpuError	err = {0};

	for (int at = from; at < to; at += BATCH)
	{
		int			m = to - at < BATCH ? to - at : BATCH;

		for (int i = 0; i < m; i++)
		{
			keys[i].i = (int64_t) (at + i) * step - 7;
			knull[i] = (at + i) % 97 == 5;
			pnull[i] = (at + i) % 13 == 2;
			pay[i].t.len = snprintf(texts[i], sizeof(texts[i]), "label-%d",
									(at + i) * 31 % 1000003);
			pay[i].t.p = texts[i];
		}
		if (!xpu_join_builder_add(b, m, keys, knull, pay, pnull, &err))
		{
			fprintf(stderr, "rows from %d: %s\n", at, err.message);
			exit(1);
		}
	}
}

static void
spec_of(XpuJoinSpec *spec)
{
	memset(spec, 0, sizeof(*spec));
	spec->n_keys = 1;
	spec->keys[0].type = spec->keys[0].probe_type = XPU_T_INT8;
	spec->n_pay = 1;
	spec->pay_types[0] = XPU_T_TEXT;
	spec->form = XPU_JOIN_AUTO;
}

/* a builder with n rows: its own first share, the others attached as images (kept in images) */
static XpuJoinBuilder *
built(int n, int step, void **images)
{
	XpuJoinSpec spec;
	XpuError	err = {0};
	XpuJoinBuilder *b;

	spec_of(&spec);
	b = xpu_join_builder_create(&spec, &err);
	add_rows(b, 0, n / SHARES, step);
	for (int s = 1; s < SHARES; s++)
	{
		XpuJoinBuilder *own = xpu_join_builder_create(&spec, &err);
		uint64_t	len;

		add_rows(own, (int) ((int64_t) n * s / SHARES), (int) ((int64_t) n * (s + 1) / SHARES),
				 step);
		len = xpu_join_builder_image_len(own);
		if (posix_memalign(&images[s], 64, (size_t) len) != 0)
			exit(1);
		xpu_join_builder_image(own, images[s]);
		xpu_join_builder_free(own);
		if (!xpu_join_builder_attach(b, images[s], len, &err))
		{
			fprintf(stderr, "attach: %s\n", err.message);
			exit(1);
		}
	}
	return b;
}

/* the table one builder makes of the same rows */
static XpuJoinTable *
reference(int n, int step)
{
	XpuJoinSpec spec;
	XpuError	err = {0};
	XpuJoinBuilder *one;
	XpuJoinTable *t;

	spec_of(&spec);
	one = xpu_join_builder_create(&spec, &err);
	add_rows(one, 0, n, step);
	t = xpu_join_builder_finish(one, &err);
	xpu_join_builder_free(one);
	return t;
}

/* does memfd fd hold exactly table want (its size, its bytes) */
static int
holds(int fd, const XpuJoinTable *want)
{
	struct stat st;
	void	   *p;
	int			same;

	if (fstat(fd, &st) != 0 || (uint64_t) st.st_size != want->total_len)
		return 0;
	p = mmap(NULL, want->total_len, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return 0;
	same = memcmp(p, want, want->total_len) == 0;
	munmap(p, want->total_len);
	return same;
}

enum
{
	FRESH, AHEAD_LARGER, AHEAD_SMALLER, AHEAD_FAR_LARGER
};
static const char *const ways[] = {"a fresh memfd", "made ahead 1.5x", "made ahead 0.4x",
"made ahead 3x + 1 MB"};

static void
check(const char *what, int n, int step, int way)
{
	void	   *images[SHARES] = {0};
	XpuJoinBuilder *b = built(n, step, images);
	XpuJoinTable *want = reference(n, step);
	XpuError	err = {0};
	uint64_t	len = xpu_join_builder_layout(b, &err);
	GjMemfd		mem;
	uint64_t	made = 0;
	int			used = 0;

	if (n > 100000)
		tap_ok(len > (4 << 20), "%s: %llu bytes, past the size written by several threads",
			   what, (unsigned long long) len);

	if (way == AHEAD_LARGER)
		made = len * 3 / 2;
	else if (way == AHEAD_SMALLER)
		made = len * 2 / 5;
	else if (way == AHEAD_FAR_LARGER)
		made = 3 * len + (1 << 20);
	made = (made + 4095) / 4096 * 4096;
	if (made > 0)
	{
		tap_ok(gj_memfd_make(&mem, made), "%s, %s: made", what, ways[way]);
		used = gj_memfd_fit(&mem, len);
		tap_ok(used == (way != AHEAD_FAR_LARGER), "%s, %s: %s", what, ways[way],
			   used ? "fitted to the table" : "not used (over twice the table)");
		if (used)
			tap_ok(mem.len == (len > made ? len : made),
				   "%s, %s: mapped %llu bytes for a table of %llu", what, ways[way],
				   (unsigned long long) mem.len, (unsigned long long) len);
		else
			tap_ok(mem.fd == -1, "%s, %s: let go", what, ways[way]);
	}
	if (!used)
		tap_ok(gj_memfd_make(&mem, len), "%s, %s: a fresh memfd", what, ways[way]);
	gj_table_write(b, mem.map, len);
	tap_ok(gj_memfd_finish(&mem, len) && holds(mem.fd, want),
		   "%s (%s form, %llu bytes), %s: the memfd holds one builder's table", what,
		   want->form == XPU_JOIN_DENSE ? "dense" : "hash", (unsigned long long) len, ways[way]);
	close(mem.fd);
	/* the runs written in reverse order, after the head */
	{
		uint8_t    *dst = calloc(1, (size_t) len);

		xpu_join_builder_write_head(b, dst);
		for (int r = xpu_join_builder_runs(b) - 1; r >= 0; r--)
			xpu_join_builder_write_run(b, dst, r);
		tap_ok(xpu_join_builder_runs(b) == SHARES && memcmp(dst, want, len) == 0,
			   "%s, %s: its %d runs written in reverse order give the same bytes", what,
			   ways[way], SHARES);
		free(dst);
	}
	xpu_join_builder_free(b);
	for (int s = 0; s < SHARES; s++)
		free(images[s]);
	free(want);
}

int
main(void)
{
	for (int way = FRESH; way <= AHEAD_FAR_LARGER; way++)
	{
		check("2,000 rows, consecutive keys", 2000, 1, way);
		check("2,000 rows, sparse keys", 2000, 1000, way);
		/* past 4 MB: written by several threads */
		check("300,000 rows, consecutive keys", 300000, 1, way);
		check("300,000 rows, sparse keys", 300000, 1000, way);
	}
	return tap_done();
}
