/*-------------------------------------------------------------------------
 *
 * arrow_io.c
 *		Positioned reads and writes of whole ranges through a file
 *		descriptor (pread, pwritev), shared by the reader (the file
 *		descriptor source), the writer (appends, the journal) and callers
 *		outside the library.  See arrow_io.h.
 *
 *-------------------------------------------------------------------------
 */
#include "arrow_io.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* See arrow_io.h */
int
arrow_io_error(ArrowError *err, const char *what, const char *path)
{
	int			saved = errno;
	char		msg[128];

	snprintf(msg, sizeof(msg), "%s", strerror(saved));
	errno = saved;
	return arrow_set_error(err, ARROW_ERR_IO, "%s \"%s\": %s", what, path, msg);
}

/* The error of a failed pread of len bytes at offset (errno says why) */
static int
read_error(size_t len, int64_t offset, const char *path, ArrowError *err)
{
	int			e = errno;
	const char *msg;

	if (path != NULL)
		return arrow_io_error(err, "could not read", path);
	msg = strerror(e);
	errno = e;
	return arrow_set_error(err, ARROW_ERR_IO, "could not read %zu bytes at offset %lld: %s",
						   len, (long long) offset, msg);
}

/* See arrow_io.h */
int
arrow_pread_all(int fd, void *buf, size_t len, int64_t offset,
				const char *path, ArrowError *err)
{
	uint8_t    *p = buf;

	while (len > 0)
	{
		ssize_t		n = pread(fd, p, len, (off_t) offset);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return read_error(len, offset, path, err);
		if (n == 0 && path != NULL)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "\"%s\" ends before offset %lld", path,
								   (long long) (offset + (int64_t) len));
		if (n == 0)
			return arrow_set_error(err, ARROW_ERR_INVALID,
								   "unexpected end of file at offset %lld", (long long) offset);
		p += n;
		len -= (size_t) n;
		offset += n;
	}
	return ARROW_OK;
}

/* See arrow_io.h */
int
arrow_pwritev_all(int fd, struct iovec *iov, int n, int64_t offset,
				  const char *path, ArrowError *err)
{
	while (n > 0)
	{
		ssize_t		w;

		if (iov->iov_len == 0)
		{
			iov++, n--;
			continue;
		}
		w = pwritev(fd, iov, n < IOV_MAX ? n : IOV_MAX, (off_t) offset);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
		{
			char		what[96];

			if (w == 0)
				errno = EIO;
			snprintf(what, sizeof(what), "could not write %zu bytes at offset %lld of",
					 iov->iov_len, (long long) offset);
			return arrow_io_error(err, what, path);
		}
		offset += w;
		while (n > 0 && (size_t) w >= iov->iov_len)
		{
			w -= (ssize_t) iov->iov_len;
			iov++, n--;
		}
		if (n > 0)
		{
			iov->iov_base = (uint8_t *) iov->iov_base + w;
			iov->iov_len -= (size_t) w;
		}
	}
	return ARROW_OK;
}

/* See arrow_io.h */
int
arrow_pwrite_all(int fd, const void *buf, size_t len, int64_t offset,
				 const char *path, ArrowError *err)
{
	struct iovec iov = {(void *) buf, len};

	return arrow_pwritev_all(fd, &iov, 1, offset, path, err);
}
