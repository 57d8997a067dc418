/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whole writes and reads of the small files of /proc, /sys and tracefs,
 * for rig-init and the guest's tools (init.c, latency.c).
 */
#ifndef RIG_FILEIO_H
#define RIG_FILEIO_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* Write a value to a file; 0 on success, with the write's errno kept. */
static inline int write_file(const char *path, const char *value)
{
	int fd = open(path, O_WRONLY);
	ssize_t n = fd >= 0 ? write(fd, value, strlen(value)) : -1;
	int err = errno;

	if (fd >= 0)
		close(fd);
	errno = err;
	return n == (ssize_t)strlen(value) ? 0 : -1;
}

/* Read a whole (small) file into buf; its length, or -1. */
static inline ssize_t read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	size_t used = 0;
	ssize_t n = 0;

	if (fd < 0)
		return -1;
	while (used < size && (n = read(fd, buf + used, size - used)) > 0)
		used += n;
	close(fd);
	return n < 0 ? -1 : (ssize_t)used;
}

#endif
