/*-------------------------------------------------------------------------
 *
 * read_paths.c
 *		How fast THREADS threads can read a page-cached file's bytes (a
 *		benchmark tool, not part of pg_warp): the ways the service's CPU
 *		workers could reach an Arrow file's buffers, side by side.
 *
 *	   read_paths FILE THREADS [CHUNK_MIB]
 *
 * Each way runs the threads over the whole file in chunks of CHUNK_MIB
 * (default 64, about a record batch's referenced bytes) claimed from one
 * counter, and every chunk's bytes are summed a word at a time (what a
 * program's load does with them):
 *	 pread     pread into the thread's own buffer (reused), then the sum:
 *	           the service today (src/arrow/arrow_read.c's read_buffer)
 *	 mmap      one fresh read-only MAP_SHARED mapping of the file, summed
 *	           in place (its pages faulted in on first touch)
 *	 mmap-pop  the same, each chunk populated first (MADV_POPULATE_READ)
 *	 mmap-warm the last mapping again: its page tables already filled
 *	 mmap-copy a fresh mapping, each chunk copied (memcpy) into the thread's
 *	           buffer and summed there: pread's copy done in user space
 *	 sum-only  the sum over each thread's own buffer: the consumer alone
 * Prints one line per way: seconds and GB/s.  Read the file once first (cat
 * FILE > /dev/null) so that every way finds it in the page cache.
 *
 *-------------------------------------------------------------------------
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

enum Way
{
	WAY_PREAD, WAY_MMAP, WAY_MMAP_POP, WAY_MMAP_WARM, WAY_MMAP_COPY, WAY_SUM_ONLY
};

static const char *way_names[] = {"pread", "mmap", "mmap-pop", "mmap-warm", "mmap-copy",
"sum-only"};

static int	fd;
static off_t file_size;
static size_t chunk;
static int64_t n_chunks;
static int64_t next_chunk;
static const uint8_t *map;
static enum Way way;
static uint64_t total_sum;

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t
sum_words(const uint8_t *p, size_t len)
{
	const uint64_t *w = (const uint64_t *) p;
	uint64_t	s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	size_t		i, n = len / 8;

	for (i = 0; i + 4 <= n; i += 4)
	{
		s0 += w[i];
		s1 += w[i + 1];
		s2 += w[i + 2];
		s3 += w[i + 3];
	}
	for (; i < n; i++)
		s0 += w[i];
	return s0 + s1 + s2 + s3;
}

static void *
worker(void *arg)
{
	uint8_t    *buf = NULL;
	uint64_t	sum = 0;
	int64_t		c;

	(void) arg;
	if ((way == WAY_PREAD || way == WAY_MMAP_COPY || way == WAY_SUM_ONLY) &&
		(buf = aligned_alloc(4096, chunk)) == NULL)
	{
		perror("aligned_alloc");
		exit(1);
	}
	if (buf)
		memset(buf, 1, chunk);
	while ((c = __atomic_fetch_add(&next_chunk, 1, __ATOMIC_RELAXED)) < n_chunks)
	{
		off_t		off = (off_t) c * chunk;
		size_t		len = (size_t) (file_size - off) < chunk ? (size_t) (file_size - off) : chunk;

		switch (way)
		{
			case WAY_PREAD:
				{
					size_t		done = 0;

					while (done < len)
					{
						ssize_t		r = pread(fd, buf + done, len - done, off + done);

						if (r <= 0)
						{
							fprintf(stderr, "pread: %s\n", r < 0 ? strerror(errno) : "end of file");
							exit(1);
						}
						done += r;
					}
					sum += sum_words(buf, len);
					break;
				}
			case WAY_MMAP_POP:
				if (madvise((void *) (map + off), len, MADV_POPULATE_READ) != 0)
				{
					perror("madvise(MADV_POPULATE_READ)");
					exit(1);
				}
				/* FALLTHROUGH */
			case WAY_MMAP:
			case WAY_MMAP_WARM:
				sum += sum_words(map + off, len);
				break;
			case WAY_MMAP_COPY:
				memcpy(buf, map + off, len);
				sum += sum_words(buf, len);
				break;
			case WAY_SUM_ONLY:
				sum += sum_words(buf, len);
				break;
		}
	}
	__atomic_fetch_add(&total_sum, sum, __ATOMIC_RELAXED);
	free(buf);
	return NULL;
}

static void
run_way(enum Way w, int threads)
{
	pthread_t  *tids = calloc(threads, sizeof(pthread_t));
	double		t0;
	int			i;

	if (w == WAY_MMAP || w == WAY_MMAP_POP || w == WAY_MMAP_COPY)
	{
		if (map != NULL)
			munmap((void *) map, file_size);
		map = mmap(NULL, file_size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
		{
			perror("mmap");
			exit(1);
		}
	}
	way = w;
	next_chunk = 0;
	total_sum = 0;
	t0 = now_s();
	for (i = 0; i < threads; i++)
		pthread_create(&tids[i], NULL, worker, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(tids[i], NULL);
	t0 = now_s() - t0;
	printf("%-9s %2d threads  %.3f s  %6.2f GB/s  (sum %016llx)\n", way_names[w], threads, t0,
		   file_size / t0 / 1e9, (unsigned long long) total_sum);
	free(tids);
}

int
main(int argc, char **argv)
{
	struct stat st;
	int			threads;

	if (argc < 3 || (threads = atoi(argv[2])) < 1)
	{
		fprintf(stderr, "usage: read_paths FILE THREADS [CHUNK_MIB]\n");
		return 2;
	}
	chunk = (size_t) (argc > 3 ? atoi(argv[3]) : 64) << 20;
	if (chunk == 0 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st) != 0)
	{
		perror(argv[1]);
		return 1;
	}
	file_size = st.st_size & ~(off_t) 7;
	n_chunks = (file_size + chunk - 1) / chunk;
	run_way(WAY_SUM_ONLY, threads);
	run_way(WAY_PREAD, threads);
	run_way(WAY_MMAP, threads);
	run_way(WAY_MMAP_WARM, threads);
	run_way(WAY_MMAP_POP, threads);
	run_way(WAY_MMAP_COPY, threads);
	run_way(WAY_PREAD, threads);
	run_way(WAY_MMAP, threads);
	run_way(WAY_MMAP_COPY, threads);
	return 0;
}
