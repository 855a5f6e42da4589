/*-------------------------------------------------------------------------
 *
 * target.c
 *		pg2arrow: the output file's safety before an export starts.
 *
 * resolve_target follows symbolic links to the file that is really
 * written (so that the temporary file, the rename and an append's journal
 * all happen next to it, and the link is kept) and refuses anything that
 * is not a regular file: a device, FIFO, socket or directory must never be
 * replaced by a rename.  remove_stale_temps removes the temporary files
 * (FILE.pg2arrow-PID.tmp) of pg2arrow processes that no longer run.
 * recover_target undoes an --append that a crash interrupted, from the
 * journal FILE.pg2arrow-journal (see arrow_writer_recover).
 *
 *-------------------------------------------------------------------------
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pg2arrow.h"

/* Words for a file type in an error message */
static const char *
file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	return "not a regular file";
}

/* A new string: the link target 'target' read from link 'link', as a path */
static char *
link_path(const char *link, const char *target)
{
	const char *slash = strrchr(link, '/');

	if (target[0] == '/' || slash == NULL)
		return xstrdup(target);
	return xasprintf("%.*s/%s", (int) (slash - link), link, target);
}

/*
 * Follows the symbolic links of path (given by the user as 'what', e.g.
 * "-o/--output") to the file they name, which need not exist yet.  Exits
 * when that file exists and is not a regular file.  Returns a new string.
 */
char *
resolve_target(const char *path, const char *what)
{
	char	   *cur = xstrdup(path);

	for (int hops = 0;; hops++)
	{
		struct stat st;
		char		target[PATH_MAX];
		ssize_t		n;
		char	   *next;

		if (lstat(cur, &st) != 0)
		{
			if (errno == ENOENT)
				return cur;		/* to be created (or "does not exist" later) */
			fatal("cannot access \"%s\": %s", cur, strerror(errno));
		}
		if (!S_ISLNK(st.st_mode))
		{
			if (!S_ISREG(st.st_mode))
				fatal("%s \"%s\" is %s: pg2arrow writes regular files only",
					  what, strcmp(cur, path) == 0 ? path : cur, file_kind(st.st_mode));
			return cur;
		}
		if (hops >= 40)
			fatal("cannot resolve \"%s\": too many levels of symbolic links", path);
		n = readlink(cur, target, sizeof(target) - 1);
		if (n < 0)
			fatal("cannot read symbolic link \"%s\": %s", cur, strerror(errno));
		target[n] = '\0';
		next = link_path(cur, target);
		free(cur);
		cur = next;
	}
}

/* Whether name is "<base>.pg2arrow-<PID>.tmp"; *pid gets the PID */
static bool
temp_name_pid(const char *name, const char *base, long *pid)
{
	size_t		len = strlen(base);
	const char *p;
	char	   *end;

	if (strncmp(name, base, len) != 0 || strncmp(name + len, ".pg2arrow-", 10) != 0)
		return false;
	p = name + len + 10;
	if (!isdigit((unsigned char) *p))
		return false;
	errno = 0;
	*pid = strtol(p, &end, 10);
	return errno == 0 && strcmp(end, ".tmp") == 0 && *pid > 0 && *pid <= INT_MAX;
}

/*
 * Removes the temporary files target.pg2arrow-PID.tmp whose process PID no
 * longer exists (a pg2arrow killed by SIGKILL or a crash), saying so on
 * stderr, and makes the removal durable.  A PID that exists (even as
 * another program, or another user's) keeps its file.
 */
void
remove_stale_temps(const char *target)
{
	const char *slash = strrchr(target, '/');
	const char *base = slash ? slash + 1 : target;
	char	   *dir = slash == NULL ? xstrdup(".") :
		slash == target ? xstrdup("/") : xasprintf("%.*s", (int) (slash - target), target);
	DIR		   *d = opendir(dir);
	struct dirent *de;
	bool		removed = false;
	ArrowError	err;

	if (d == NULL)
	{
		free(dir);
		return;					/* the export reports what is wrong with it */
	}
	while ((de = readdir(d)) != NULL)
	{
		long		pid;
		char	   *path;

		if (!temp_name_pid(de->d_name, base, &pid) || pid == (long) getpid() ||
			kill((pid_t) pid, 0) == 0 || errno != ESRCH)
			continue;
		path = xasprintf("%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
		{
			report("removed \"%s\", left behind by pg2arrow process %ld, which no longer runs",
				   path, pid);
			removed = true;
		}
		free(path);
	}
	closedir(d);
	free(dir);
	if (removed && arrow_writer_sync_dir(target, &err) != ARROW_OK)
		report("%s", err.message);
}

/*
 * Undoes an interrupted --append of target (see arrow_writer_recover) and
 * says so on stderr; 'quiet_none': say nothing when there was nothing to
 * do.  Returns false (with the message in errbuf) when it cannot.
 */
bool
recover_target(const char *target, bool quiet_none, char *errbuf, size_t errlen)
{
	ArrowRecoverResult result;
	ArrowError	err;

	if (arrow_writer_recover(target, &result, &err) != ARROW_OK)
	{
		snprintf(errbuf, errlen, "cannot recover from the interrupted append of \"%s\": %s",
				 target, err.message);
		return false;
	}
	switch (result)
	{
		case ARROW_RECOVER_RESTORED:
			report("\"%s\" was left by an interrupted --append (journal \"%s%s\"): restored it as it was before that append",
				   target, target, ARROW_APPEND_JOURNAL_SUFFIX);
			break;
		case ARROW_RECOVER_DISCARDED:
			report("removed \"%s%s\": the journal of an --append that never touched \"%s\" (or of a file that is gone or was replaced)",
				   target, ARROW_APPEND_JOURNAL_SUFFIX, target);
			break;
		case ARROW_RECOVER_NONE:
			if (!quiet_none)
				report("\"%s\": no interrupted --append to recover", target);
			break;
	}
	return true;
}
