// SPDX-License-Identifier: GPL-2.0
/*
 * rig-preinit: load one kernel module, then become the rig's init.
 *
 *   rdinit=/bin/rig-preinit -- NAME [PARAM=VALUE ...]
 *
 * The kernel runs it as PID 1 with the words after "--" as arguments; it
 * loads /lib/modules/NAME.ko with the parameters, waits for the module's init
 * function (prbstress does its whole test there), and execs /init, which runs
 * the rig.* steps as in every boot. It exists so that a module only `rig
 * bench` needs travels in the bench's own initramfs (the standard one plus
 * this program and the module), leaving the scenarios' initramfs, and so
 * their deterministic runs, untouched.
 *
 * Its own messages go to the console (the kernel opened it as fds 0-2).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char path[128], params[1024] = "";
	char *init_argv[] = { "/init", NULL };
	int i, fd;

	if (argc < 2) {
		fprintf(stderr,
			"rig-preinit: usage: rdinit=/bin/rig-preinit -- NAME [PARAM=VALUE ...]\n");
	} else {
		snprintf(path, sizeof(path), "/lib/modules/%s.ko", argv[1]);
		for (i = 2; i < argc; i++) {
			strncat(params, argv[i], sizeof(params) - strlen(params) - 2);
			strcat(params, " ");
		}
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			fprintf(stderr, "rig-preinit: %s: %s\n", path, strerror(errno));
		else if (syscall(SYS_finit_module, fd, params, 0) != 0)
			fprintf(stderr, "rig-preinit: finit_module(%s, \"%s\"): %s\n", path, params,
				strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	execv(init_argv[0], init_argv);
	fprintf(stderr, "rig-preinit: exec /init: %s\n", strerror(errno));
	return 1;
}
