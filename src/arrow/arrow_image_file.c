/*-------------------------------------------------------------------------
 *
 * arrow_image_file.c
 *		The file that keeps the image of an Arrow file's record batches
 *		(arrow_read_image.c) for other processes: the backends' sessions
 *		(src/fdw/meta_image.c, which write it) and the pg_warp service
 *		(src/service/file_meta.c, which only reads it), in ARROW_IMAGE_DIR of
 *		the data directory, named after the Arrow file's device and inode.
 *
 * It holds the identity of the Arrow file it was made from (device, inode,
 * size, modification and change times) and a CRC-32C of the image: a file
 * replaced, appended to or written in place has another identity, and an
 * image torn by a crash or changed on disk fails its CRC; either is no
 * image.  It is mapped, not read: its pages come from the page cache
 * without a copy into fresh memory.  A write goes to a file of its own and
 * is renamed over the old one, so a reader sees a whole image or the one
 * before.  Anything but a regular file at the path is no image (opened
 * without blocking: a FIFO does not hang the reader).
 *
 * It also names the path of the Arrow file it was made from (the source;
 * images written before it had none), so that arrow_image_file_prune can
 * tell the images of files that are gone (deleted, or their path now names
 * another file) from the others: named after a device and an inode, such an
 * image would otherwise stay in the data directory for good.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IMAGE_FILE_MAGIC	"pgwarpM1"

typedef struct ImageFileHead
{
	char		magic[8];
	ArrowFileIdentity id;
	uint64_t	len;			/* of the image that follows */
	uint32_t	crc;			/* of the image (arrow_crc32c) */
	uint32_t	source_len;		/* bytes of the source's path after this head
								 * (no NUL), padded to 8; 0: none */
} ImageFileHead;

#define IMAGE_SOURCE_MAX	ARROW_IMAGE_SOURCE_MAX	/* a longer path is not kept (PATH_MAX) */
#define IMAGE_PAD8(n)		(((uint64_t) (n) + 7) & ~(uint64_t) 7)

/* ---------------------------------------------------------------- CRC-32C */

static uint32_t crc_table[256];
static int	crc_table_ready;	/* 0, then 1 once crc_table is set */

/* the table of the reflected Castagnoli polynomial, one byte at a time */
static void
crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++)
	{
		uint32_t	c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		crc_table[i] = c;
	}
	__atomic_store_n(&crc_table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t
crc_bytes(uint32_t c, const uint8_t *p, size_t n)
{
	if (!__atomic_load_n(&crc_table_ready, __ATOMIC_ACQUIRE))
		crc_table_init();		/* two threads writing the same table is harmless */
	while (n-- > 0)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
/* SSE 4.2's crc32 instruction: the same polynomial, 8 bytes at a time */
__attribute__((target("sse4.2")))
static uint32_t
crc_sse42(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t	c64 = c;

	for (; n >= 8; n -= 8, p += 8)
	{
		uint64_t	w;

		memcpy(&w, p, 8);
		c64 = __builtin_ia32_crc32di(c64, w);
	}
	c = (uint32_t) c64;
	for (; n > 0; n--, p++)
		c = __builtin_ia32_crc32qi(c, *p);
	return c;
}
#endif

/* see arrow.h */
uint32_t
arrow_crc32c(const void *data, size_t len)
{
	uint32_t	c = 0xFFFFFFFFu;

#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return crc_sse42(c, data, len) ^ 0xFFFFFFFFu;
#endif
	return crc_bytes(c, data, len) ^ 0xFFFFFFFFu;
}

/* ---------------------------------------------------------------- the file */

/* see arrow.h */
const void *
arrow_image_file_map(const char *path, const ArrowFileIdentity *id, uint64_t *len,
					 void **map, size_t *map_len)
{
	ImageFileHead h;
	struct stat st;
	const uint8_t *image = NULL;
	uint64_t	at;
	void	   *p;
	int			fd;

	*map = NULL;
	*map_len = 0;
	*len = 0;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= (off_t) sizeof(h) ||
		(p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0)) ==
		MAP_FAILED)
	{
		close(fd);
		return NULL;
	}
	close(fd);
	memcpy(&h, p, sizeof(h));
	/* where the image starts: after the head and its source's path */
	at = sizeof(h) + IMAGE_PAD8(h.source_len);
	if (memcmp(h.magic, IMAGE_FILE_MAGIC, 8) == 0 && memcmp(&h.id, id, sizeof(*id)) == 0 &&
		h.source_len <= IMAGE_SOURCE_MAX && at <= (uint64_t) st.st_size &&
		h.len == (uint64_t) st.st_size - at &&
		arrow_crc32c((const uint8_t *) p + at, h.len) == h.crc)
		image = (const uint8_t *) p + at;
	if (image == NULL)
	{
		munmap(p, (size_t) st.st_size);
		return NULL;
	}
	*map = p;
	*map_len = (size_t) st.st_size;
	*len = h.len;
	return image;
}

/* see arrow.h */
void
arrow_image_file_path(char *path, size_t size, const ArrowFileIdentity *id)
{
	snprintf(path, size, ARROW_IMAGE_DIR "/%llx-%llx", (unsigned long long) id->dev,
			 (unsigned long long) id->ino);
}

/* see arrow.h */
void
arrow_image_file_unmap(void *map, size_t map_len)
{
	if (map != NULL)
		munmap(map, map_len);
}

/* all n bytes of buf written to fd */
static bool
write_all(int fd, const void *buf, uint64_t n)
{
	uint64_t	done = 0;

	while (done < n)
	{
		ssize_t		w = write(fd, (const char *) buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		done += (uint64_t) w;
	}
	return true;
}

/* see arrow.h */
int
arrow_image_file_write(const char *path, const char *tmp, const ArrowFileIdentity *id,
					   const char *source, const void *image, uint64_t len)
{
	static const char zeros[8];
	ImageFileHead h;
	size_t		n = source != NULL ? strlen(source) : 0;
	int			fd;
	int			e = 0;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, IMAGE_FILE_MAGIC, 8);
	h.id = *id;
	h.len = len;
	h.crc = arrow_crc32c(image, len);
	h.source_len = n <= IMAGE_SOURCE_MAX ? (uint32_t) n : 0;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) < 0)
		return errno;
	errno = 0;
	if (!write_all(fd, &h, sizeof(h)) || !write_all(fd, source, h.source_len) ||
		!write_all(fd, zeros, IMAGE_PAD8(h.source_len) - h.source_len) ||
		!write_all(fd, image, len))
		e = errno ? errno : EIO;
	if (close(fd) != 0 && e == 0)
		e = errno;
	if (e == 0 && rename(tmp, path) != 0)
		e = errno;
	if (e != 0)
		unlink(tmp);
	return e;
}

/*
 * the head of the image file fd and its source's path (room for
 * IMAGE_SOURCE_MAX + 1 bytes): false where it cannot be read, is not an
 * image's or names no source
 */
static bool
image_head(int fd, ImageFileHead *h, char *source)
{
	if (pread(fd, h, sizeof(*h), 0) != (ssize_t) sizeof(*h) ||
		memcmp(h->magic, IMAGE_FILE_MAGIC, 8) != 0 || h->source_len == 0 ||
		h->source_len > IMAGE_SOURCE_MAX ||
		pread(fd, source, h->source_len, sizeof(*h)) != (ssize_t) h->source_len)
		return false;
	source[h->source_len] = '\0';
	return true;
}

/*
 * is the image file fd one of an Arrow file that is gone: its source path
 * names no file, or another one than its device and inode (images without
 * a source, or unreadable, are kept)
 */
static bool
image_orphaned(int fd)
{
	ImageFileHead h;
	char		source[IMAGE_SOURCE_MAX + 1];
	struct stat st;

	if (!image_head(fd, &h, source))
		return false;
	if (stat(source, &st) != 0)
		return errno == ENOENT || errno == ENOTDIR;
	return (int64_t) st.st_dev != h.id.dev || (int64_t) st.st_ino != h.id.ino;
}

/* see arrow.h */
int
arrow_image_file_prune(const char *dir, int64_t tmp_age_s)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	time_t		now = time(NULL);
	int			removed = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
	{
		size_t		nlen = strlen(de->d_name);
		struct stat st;
		bool		gone;
		int			fd;

		if (de->d_name[0] == '.')
			continue;
		/* a writer's file: removed once it is older than any write takes */
		if (nlen > 4 && strcmp(de->d_name + nlen - 4, ".tmp") == 0)
		{
			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISREG(st.st_mode) && now - st.st_mtime > tmp_age_s &&
				unlinkat(dirfd(d), de->d_name, 0) == 0)
				removed++;
			continue;
		}
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		gone = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && image_orphaned(fd);
		close(fd);
		if (gone && unlinkat(dirfd(d), de->d_name, 0) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}

/* see arrow.h */
int
arrow_image_file_recent(const char *dir, ArrowImageEntry *out, int max)
{
	DIR		   *d = opendir(dir);
	struct dirent *de;
	int			n = 0;

	if (d == NULL)
		return -1;
	while (max > 0 && (de = readdir(d)) != NULL)
	{
		size_t		nlen = strlen(de->d_name);
		ImageFileHead h;
		ArrowImageEntry e;
		struct stat st;
		bool		ok;
		int			fd;
		int			at;

		if (de->d_name[0] == '.' || (nlen > 4 && strcmp(de->d_name + nlen - 4, ".tmp") == 0))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && image_head(fd, &h, e.source);
		close(fd);
		if (!ok)
			continue;
		e.id = h.id;
		e.image_mtime_ns = (int64_t) st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		/* kept newest first: where e goes among the n kept, if anywhere */
		for (at = n; at > 0 && out[at - 1].image_mtime_ns < e.image_mtime_ns; at--)
			;
		if (at >= max)
			continue;
		if (n < max)
			n++;
		memmove(&out[at + 1], &out[at], sizeof(ArrowImageEntry) * (size_t) (n - 1 - at));
		out[at] = e;
	}
	closedir(d);
	return n;
}
