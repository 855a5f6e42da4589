/*-------------------------------------------------------------------------
 *
 * arrow_io.h
 *		Positioned reads and writes of whole ranges (arrow_io.c): the one
 *		pread loop and the one pwrite loop of the Arrow library, for its
 *		reader and writer and for any caller that reads an Arrow file
 *		through a file descriptor.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PG_WARP_ARROW_IO_H
#define PG_WARP_ARROW_IO_H

#include "arrow.h"

#include <sys/uio.h>

/*
 * Sets err to ARROW_ERR_IO with the message "<what> \"<path>\": <the text
 * of errno>" and returns ARROW_ERR_IO; errno is kept (for sys_errno).
 */
extern int	arrow_io_error(ArrowError *err, const char *what, const char *path);

/*
 * Reads exactly len bytes at offset of fd into buf, continuing short reads
 * and retrying after EINTR.  A failed read is ARROW_ERR_IO (sys_errno set);
 * the file ending first is ARROW_ERR_INVALID.  path names the file in the
 * messages; NULL leaves it out (the messages then give the offset).
 */
extern int	arrow_pread_all(int fd, void *buf, size_t len, int64_t offset,
							const char *path, ArrowError *err);

/*
 * Writes the n pieces of iov, one after the other, at offset of fd (pwritev,
 * at most IOV_MAX pieces per call; a short write is continued, EINTR
 * retried).  iov is consumed: its entries are advanced past what was
 * written.  A failure is ARROW_ERR_IO naming path.
 */
extern int	arrow_pwritev_all(int fd, struct iovec *iov, int n, int64_t offset,
							  const char *path, ArrowError *err);

/* arrow_pwritev_all of the one buffer buf */
extern int	arrow_pwrite_all(int fd, const void *buf, size_t len, int64_t offset,
							 const char *path, ArrowError *err);

#endif							/* PG_WARP_ARROW_IO_H */
