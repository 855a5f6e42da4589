/*
 * image_open_bench FILE [RUNS]: how long a new session's first open of an
 * Arrow file takes its record batches from their metadata image
 * (arrow_file_open_image, src/arrow/arrow_read_image.c).
 *
 * The image is made once from the file's messages; then each run forks a
 * child (fresh memory, as a new backend has) that opens the file with it,
 * and reports the open's wall time and the minor page faults it took.
 * Prints one line a run, then the medians.  Built against the Arrow library
 * as the extension links it (`make` at the top first, then
 * `make -C bench image_open_bench`).
 */
#include "arrow.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int	source_fd;

static int
read_at(void *ctx __attribute__((unused)), int64_t offset, void *dst, size_t len, ArrowError *err)
{
	if (pread(source_fd, dst, len, offset) != (ssize_t) len)
		return arrow_set_error(err, ARROW_ERR_IO, "short read at %lld", (long long) offset);
	return ARROW_OK;
}

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a;
	double		y = *(const double *) b;

	return (x > y) - (x < y);
}

typedef struct RunResult
{
	double		ms;
	long		faults;
	int			used;
} RunResult;

int
main(int argc, char **argv)
{
	ArrowFile  *file;
	ArrowError	err;
	ArrowSource src;
	void	   *image;
	uint64_t	image_len;
	int			runs = argc > 2 ? atoi(argv[2]) : 21;
	double	   *ms;
	double	   *faults;

	if (argc < 2 || runs < 1)
	{
		fprintf(stderr, "usage: %s FILE [RUNS]\n", argv[0]);
		return 2;
	}
	if ((source_fd = open(argv[1], O_RDONLY)) < 0 ||
		arrow_file_open(argv[1], NULL, &file, &err) != ARROW_OK ||
		arrow_file_batches_image(file, NULL, &image, &image_len, &err) != ARROW_OK)
	{
		fprintf(stderr, "%s: no image: %s\n", argv[1], err.message);
		return 1;
	}
	printf("%s: %d record batches, image %llu bytes\n", argv[1], file->n_batches,
		   (unsigned long long) image_len);
	memset(&src, 0, sizeof(src));
	src.read_at = read_at;
	src.size = lseek(source_fd, 0, SEEK_END);
	ms = calloc(runs, sizeof(double));
	faults = calloc(runs, sizeof(double));
	for (int i = 0; i < runs; i++)
	{
		int			pipefd[2];
		RunResult	r = {0, 0, 0};
		pid_t		pid;

		if (pipe(pipefd) != 0 || (pid = fork()) < 0)
			return 1;
		if (pid == 0)
		{
			ArrowFile  *again;
			struct rusage before;
			struct rusage after;
			bool		used = false;
			double		t0;
			int			rc;

			getrusage(RUSAGE_SELF, &before);
			t0 = now_ms();
			rc = arrow_file_open_image(&src, NULL, image, image_len, &again, &used, &err);
			r.ms = now_ms() - t0;
			getrusage(RUSAGE_SELF, &after);
			r.faults = after.ru_minflt - before.ru_minflt;
			r.used = rc == ARROW_OK && used;
			if (write(pipefd[1], &r, sizeof(r)) != sizeof(r))
				_exit(1);
			_exit(0);
		}
		if (read(pipefd[0], &r, sizeof(r)) != sizeof(r) || waitpid(pid, NULL, 0) != pid || !r.used)
		{
			fprintf(stderr, "run %d: the image was not taken\n", i + 1);
			return 1;
		}
		close(pipefd[0]);
		close(pipefd[1]);
		printf("run %d: %.3f ms, %ld minor faults\n", i + 1, r.ms, r.faults);
		ms[i] = r.ms;
		faults[i] = (double) r.faults;
	}
	qsort(ms, runs, sizeof(double), cmp_double);
	qsort(faults, runs, sizeof(double), cmp_double);
	printf("median of %d: %.3f ms (min %.3f, max %.3f), %.0f minor faults\n", runs,
		   ms[runs / 2], ms[0], ms[runs - 1], faults[runs / 2]);
	arrow_file_close(file);
	free(image);
	return 0;
}
