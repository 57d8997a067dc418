// SPDX-License-Identifier: GPL-2.0
/*
 * rig-init: PID 1 of the printk-rig guest.
 *
 * It reads rig.* parameters from /proc/cmdline, runs the steps they ask for,
 * sends evidence out over a side channel that is not the console under test
 * (ttyS1 by default) and ends the run with an explicit status written to
 * QEMU's isa-debug-exit port, so that the harness can tell a clean end from a
 * panic, a hang and a QEMU crash.
 *
 * Progress lines go to /dev/kmsg ("rig-init: ..."), so they reach the console
 * through printk like any kernel message and the harness can tell the phases
 * apart from the transcript alone.
 *
 * Parameters:
 *   rig.steps=a,b,c   steps to run in order (default: kmsg)
 *                     kmsg   dump /dev/kmsg from the first record to the side channel
 *                     hang   stop here forever (the harness must report a hang)
 *                     panic  crash the kernel through /proc/sysrq-trigger
 *                     shell  run busybox sh on the console until it exits
 *                     sleep  sleep rig.sleep_ms milliseconds
 *                     line   print one console line of exactly rig.line_len bytes
 *                            (prefix of rig.line_prefix bytes, default 15, and
 *                            CRLF included, default 1000), bracketed
 *                            by markers 1 and 2 on the UART's marker port
 *                     run    run the test module's configured actions
 *                     conlog send what the module's test console received
 *                     follow start a /dev/kmsg reader that falls behind
 *                            (kmsgtest follow, rig.follow_delay_us after each
 *                            record) until the module's "run end" record;
 *                            followed waits for it and sends what it read
 *                     exports  send syslog(2) READ_ALL's text and what
 *                            /proc/kmsg has unread
 *                     dmesg  run util-linux dmesg (/dev/kmsg) and busybox
 *                            dmesg (syslog(2)), send what they print
 *                     kmsgtest / syslogtest  run /bin/kmsgtest (rig/guest/
 *                            kmsgtest.c) and send what it observed
 *                     pstore send what kmsg_dump left in pstore (ramoops)
 *                            before the last warm reset, one section
 *                            "pstore:FILE" per dmesg record; if there was
 *                            any, this is the boot after the panic and the
 *                            run ends here, without the later steps
 *                     printk set /proc/sys/kernel/printk from rig.printk
 *                            (fields separated by ':') and printk_delay from
 *                            rig.printk_delay (ms), then send the printk content
 *   rig.hang=1        shorthand for a trailing "hang" step
 *   rig.panic=1       shorthand for a trailing "panic" step
 *   rig.side=PATH     side channel device (default /dev/ttyS1)
 *   rigprintk.NAME=V  parameters of the test module, which init loads from
 *                     /lib/modules/rigprintk.ko at start when it is there
 *   rig.snapshot=1    stop the VM once the side channel is open, before the
 *                     module loads (the rig saves it there), and on resuming
 *                     append the fw_cfg file opt/rig/args to the parameters
 *                     read so far: each restore of the saved VM is a scenario
 *
 * Before the run ends, init asks the module to wait until every console has
 * printed everything: on the patched kernel the consoles print from threads,
 * and the run must not end with the transcript cut short.
 *
 * Side channel framing (all ASCII headers, binary-safe bodies):
 *   @@rig begin NAME LEN\n <LEN bytes> \n@@rig end NAME\n
 *   @@rig status CODE\n   (last thing sent)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "protocol.h"

#define CMDLINE_MAX 4096
#define MODULE_PATH "/lib/modules/rigprintk.ko"
#define MODULE_PARAMS "/sys/module/rigprintk/parameters/"
#define KMSG_RECORD_MAX 8192

static int kmsg_fd = -1;
static int side_fd = -1;
static char cmdline[CMDLINE_MAX];

static void say(const char *fmt, ...)
{
	char buf[512];
	int n;
	va_list ap;

	n = snprintf(buf, sizeof(buf), "<5>rig-init: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	/*
	 * The newline finalizes the record at once: a record without one stays
	 * open for continuation and no console prints it until the next message.
	 */
	buf[n++] = '\n';
	if (kmsg_fd >= 0 && write(kmsg_fd, buf, n) == n)
		return;
	/* No /dev/kmsg: fall back to the console so the line is not lost. */
	fprintf(stderr, "%.*s", n - 3, buf + 3);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= n;
	}
}

static void side_printf(const char *fmt, ...)
{
	char buf[256];
	int n;
	va_list ap;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (side_fd >= 0 && n > 0)
		write_all(side_fd, buf, n < (int)sizeof(buf) ? n : (int)sizeof(buf) - 1);
}

static void side_section(const char *name, const char *data, size_t len)
{
	side_printf(RIG_SIDE_BEGIN " %s %zu\n", name, len);
	if (side_fd >= 0)
		write_all(side_fd, data, len);
	side_printf("\n" RIG_SIDE_END " %s\n", name);
}

/* Value of KEY= (a whole kernel parameter name) on the command line, or NULL. */
static const char *cmdline_value(const char *name, char *out, size_t outlen)
{
	char key[64];
	const char *p = cmdline;
	size_t klen;

	klen = snprintf(key, sizeof(key), "%s=", name);
	while ((p = strstr(p, key)) != NULL) {
		if (p == cmdline || p[-1] == ' ') {
			size_t n = strcspn(p + klen, " \n");

			if (n >= outlen)
				n = outlen - 1;
			memcpy(out, p + klen, n);
			out[n] = '\0';
			return out;
		}
		p += klen;
	}
	return NULL;
}

/* Value of rig.NAME= on the command line, or NULL. */
static const char *param(const char *name, char *out, size_t outlen)
{
	char key[64];

	snprintf(key, sizeof(key), "rig.%s", name);
	return cmdline_value(key, out, outlen);
}

static int flag(const char *name)
{
	char v[16];

	return param(name, v, sizeof(v)) && strcmp(v, "0") != 0;
}

static void mount_filesystems(void)
{
	mkdir("/proc", 0755);
	mkdir("/sys", 0755);
	mkdir("/dev", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
}

static void read_cmdline(void)
{
	int fd = open("/proc/cmdline", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof(cmdline) - 1) : -1;

	cmdline[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

static void open_side_channel(void)
{
	char path[128];
	struct termios tio;

	if (!param("side", path, sizeof(path)))
		strcpy(path, "/dev/ttyS1");
	side_fd = open(path, O_WRONLY | O_NOCTTY);
	if (side_fd < 0) {
		say("cannot open side channel %s: %s", path, strerror(errno));
		return;
	}
	/* Raw: no \n -> \r\n translation, the bytes arrive as written. */
	if (tcgetattr(side_fd, &tio) == 0) {
		cfmakeraw(&tio);
		cfsetospeed(&tio, B115200);
		tcsetattr(side_fd, TCSANOW, &tio);
	}
}

/* Read every /dev/kmsg record from the first one still in the buffer. */
static int step_kmsg(void)
{
	static char dump[4 << 20];
	char rec[KMSG_RECORD_MAX];
	char meta[128];
	size_t used = 0;
	unsigned long records = 0, epipe = 0, truncated = 0;
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);

	if (fd < 0) {
		say("step kmsg: open /dev/kmsg: %s", strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, rec, sizeof(rec));

		if (n < 0 && errno == EPIPE) {
			epipe++;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (used + n > sizeof(dump)) {
			truncated++;
			continue;
		}
		memcpy(dump + used, rec, n);
		used += n;
		records++;
	}
	close(fd);
	side_section("kmsg", dump, used);
	snprintf(meta, sizeof(meta), "records=%lu epipe=%lu truncated=%lu\n", records, epipe,
		 truncated);
	side_section("kmsg-meta", meta, strlen(meta));
	say("step kmsg: %lu records, %lu EPIPE", records, epipe);
	return truncated ? -1 : 0;
}

static void step_hang(void)
{
	say("step hang: stopping here on purpose");
	for (;;)
		pause();
}

static int step_panic(void)
{
	int fd = open("/proc/sysrq-trigger", O_WRONLY);

	say("step panic: crashing the kernel through sysrq-trigger");
	if (fd < 0 || write(fd, "c", 1) != 1) {
		say("step panic: sysrq-trigger: %s", strerror(errno));
		return -1;
	}
	return -1; /* not reached when the crash works */
}

static int step_shell(void)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		execl("/bin/sh", "sh", NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int step_sleep(void)
{
	char v[32];
	long ms = param("sleep_ms", v, sizeof(v)) ? atol(v) : 1000;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
	return 0;
}

/*
 * Console prefix "[    1.234567] " (rig.line_prefix=20 for the patched
 * kernel's "[    1.234567] 001: ") and the 8250 console's "\r\n".
 */
#define CONSOLE_PREFIX_LEN 15
#define CONSOLE_EOL_LEN 2

static void marker(unsigned int value)
{
	if (ioperm(RIG_MARKER_PORT, 4, 1) == 0)
		outl(value, RIG_MARKER_PORT);
}

static int step_line(void)
{
	char v[32], buf[1100];
	long len = param("line_len", v, sizeof(v)) ? atol(v) : 1000;
	long prefix = param("line_prefix", v, sizeof(v)) ? atol(v) : CONSOLE_PREFIX_LEN;
	long text = len - prefix - CONSOLE_EOL_LEN;
	int n;

	if (text < 12 || text + 16 > (long)sizeof(buf)) {
		say("step line: rig.line_len=%ld out of range", len);
		return -1;
	}
	n = snprintf(buf, sizeof(buf), "<5>rig-line: ");
	memset(buf + n, 'x', text - (n - 3));
	n += text - (n - 3);
	buf[n++] = '\n';
	marker(1);
	if (write(kmsg_fd, buf, n) != n) {
		say("step line: write /dev/kmsg: %s", strerror(errno));
		return -1;
	}
	marker(2);
	return 0;
}

/* QEMU's fw_cfg through its I/O ports (no CONFIG_FW_CFG_SYSFS needed). */
#define FW_CFG_PORT_SEL 0x510
#define FW_CFG_PORT_DATA 0x511
#define FW_CFG_SIGNATURE 0x0000
#define FW_CFG_FILE_DIR 0x0019

struct fw_cfg_file {
	uint32_t size;		/* big-endian, like select */
	uint16_t select;
	uint16_t reserved;
	char name[56];
};

static void fw_cfg_read(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len--)
		*p++ = inb(FW_CFG_PORT_DATA);
}

/*
 * Contents of fw_cfg file NAME into out (NUL-terminated); its length, or -1.
 * Looked up by name each time: selectors depend on the file set of the QEMU
 * process that runs now, which after a restore is not the one that booted.
 */
static long fw_cfg_file(const char *name, char *out, size_t outlen)
{
	struct fw_cfg_file f;
	uint32_t count;
	char sig[4];

	if (ioperm(FW_CFG_PORT_SEL, 2, 1) != 0)
		return -1;
	outw(FW_CFG_SIGNATURE, FW_CFG_PORT_SEL);
	fw_cfg_read(sig, sizeof(sig));
	if (memcmp(sig, "QEMU", 4) != 0)
		return -1;
	outw(FW_CFG_FILE_DIR, FW_CFG_PORT_SEL);
	fw_cfg_read(&count, sizeof(count));
	for (count = be32toh(count); count > 0; count--) {
		size_t n;

		fw_cfg_read(&f, sizeof(f));
		if (strncmp(f.name, name, sizeof(f.name)) != 0)
			continue;
		n = be32toh(f.size);
		if (n >= outlen)
			n = outlen - 1;
		outw(be16toh(f.select), FW_CFG_PORT_SEL);
		fw_cfg_read(out, n);
		out[n] = '\0';
		return n;
	}
	return -1;
}

/*
 * rig.snapshot=1: the rig saves the VM at this stop and restores it once
 * per scenario. Nothing of the scenario has happened yet: the module is not
 * loaded and the side channel carries nothing. A restored run continues
 * here and takes its rig.* and rigprintk.* parameters from fw_cfg; the
 * boot's own (/proc/cmdline) hold none of those, so appending them is safe.
 */
static void snapshot_point(void)
{
	char args[CMDLINE_MAX];
	size_t used;
	long n;

	if (!flag("snapshot"))
		return;
	marker(RIG_SNAPSHOT_STOP_MARKER);
	n = fw_cfg_file(RIG_SNAPSHOT_ARGS_FILE, args, sizeof(args));
	if (n < 0) {
		say("snapshot: no fw_cfg file %s, running with the boot's parameters",
		    RIG_SNAPSHOT_ARGS_FILE);
		return;
	}
	used = strcspn(cmdline, "\n");
	snprintf(cmdline + used, sizeof(cmdline) - used, " %s", args);
	say("restored: %ld bytes of parameters", n);
}

/*
 * Load the test module with the rigprintk.* parameters of the command line.
 * Returns -1 if the module is there and refused to load: the kernel printed
 * its reason (a parameter it could not parse, or the module's own check).
 */
static int load_module(void)
{
	char params[CMDLINE_MAX] = "";
	const char *p = cmdline;
	int fd = open(MODULE_PATH, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((p = strstr(p, "rigprintk.")) != NULL) {
		size_t n = strcspn(p, " \n");

		if (p == cmdline || p[-1] == ' ') {
			strncat(params, p + strlen("rigprintk."), n - strlen("rigprintk."));
			strncat(params, " ", sizeof(params) - strlen(params) - 1);
		}
		p += n;
	}
	if (syscall(SYS_finit_module, fd, params, 0) != 0) {
		say("module: rigprintk refused to load (%s) with \"%s\": its reason is the kernel's line above",
		    strerror(errno), params);
		close(fd);
		return -1;
	}
	say("module: rigprintk loaded (%s)", params);
	close(fd);
	return 0;
}

static int step_run(void)
{
	if (write_file(MODULE_PARAMS "run", "1") != 0) {
		say("step run: %s: %s", MODULE_PARAMS "run", strerror(errno));
		return -1;
	}
	return 0;
}

static void finish(int code);

static int step_pstore(void)
{
	static char rec[1 << 20];
	char path[300], section[300];
	struct dirent *e;
	int found = 0;
	ssize_t n;
	DIR *d;

	if (mount("pstore", "/sys/fs/pstore", "pstore", 0, NULL) != 0 && errno != EBUSY) {
		say("step pstore: mount: %s", strerror(errno));
		return -1;
	}
	d = opendir("/sys/fs/pstore");
	if (!d) {
		say("step pstore: %s", strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "dmesg-", 6))
			continue;
		snprintf(path, sizeof(path), "/sys/fs/pstore/%s", e->d_name);
		n = read_file(path, rec, sizeof(rec));
		if (n < 0) {
			say("step pstore: %s: %s", path, strerror(errno));
			closedir(d);
			return -1;
		}
		snprintf(section, sizeof(section), "pstore:%s", e->d_name);
		side_section(section, rec, n);
		found++;
	}
	closedir(d);
	say("step pstore: %d dmesg record(s)", found);
	if (found) {
		say("steps done");
		finish(RIG_EXIT_OK);
	}
	return 0;
}

static void flush_consoles(void);

static int step_conlog(void)
{
	static char log[512 * 1024];
	ssize_t n;

	/* The late console may print from a thread: let it catch up first. */
	flush_consoles();
	n = read_file("/sys/kernel/debug/rigprintk/console", log, sizeof(log));

	if (n < 0) {
		say("step conlog: %s", strerror(errno));
		return -1;
	}
	side_section("conlog", log, n);
	return 0;
}

static int step_printk(void)
{
	char v[64], now[128];
	ssize_t n;
	char *c;

	if (param("printk", v, sizeof(v))) {
		for (c = v; *c; c++)
			if (*c == ':')
				*c = ' ';
		if (write_file("/proc/sys/kernel/printk", v) != 0) {
			say("step printk: write \"%s\": %s", v, strerror(errno));
			return -1;
		}
	}
	if (param("printk_delay", v, sizeof(v)) &&
	    write_file("/proc/sys/kernel/printk_delay", v) != 0) {
		say("step printk: printk_delay \"%s\": %s", v, strerror(errno));
		return -1;
	}
	n = read_file("/proc/sys/kernel/printk", now, sizeof(now));
	if (n < 0)
		return -1;
	side_section("printk-sysctl", now, n);
	return 0;
}

/* Run argv, send its stdout+stderr as section name and its status as name-status. */
static int run_capture(const char *name, char *const argv[])
{
	static char out[2 << 20];
	char status[32], section[64];
	size_t used = 0;
	int pipefd[2], wstatus = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(pipefd) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	while ((n = read(pipefd[0], out + used, sizeof(out) - used)) > 0)
		used += n;
	close(pipefd[0]);
	if (pid < 0 || waitpid(pid, &wstatus, 0) < 0)
		return -1;
	side_section(name, out, used);
	snprintf(status, sizeof(status), "%d\n",
		 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
	snprintf(section, sizeof(section), "%s-status", name);
	side_section(section, status, strlen(status));
	return 0;
}

/*
 * follow: start "kmsgtest follow" in the background, a /dev/kmsg reader
 * that falls behind (rig.follow_delay_us after each record) until the
 * module's "run end" record; followed: wait for it and send what it saw.
 */
#define FOLLOW_OUT "/tmp/follow.out"
static pid_t follow_pid = -1;

static int step_follow(void)
{
	char scen[64] = "none", delay[32] = "0", stop[96];
	int fd;

	param("follow_delay_us", delay, sizeof(delay));
	cmdline_value("rigprintk.scen", scen, sizeof(scen));
	snprintf(stop, sizeof(stop), "rigprintk: scen=%s run end", scen);
	fd = open(FOLLOW_OUT, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	follow_pid = fork();
	if (follow_pid == 0) {
		char *argv[] = { "/bin/kmsgtest", "follow", stop, delay, NULL };

		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	return follow_pid < 0 ? -1 : 0;
}

static int step_followed(void)
{
	static char out[2 << 20];
	char status[32];
	int wstatus = 0, waited;
	ssize_t n;

	if (follow_pid <= 0) {
		say("step followed: no follow step before");
		return -1;
	}
	for (waited = 0; waitpid(follow_pid, &wstatus, WNOHANG) == 0; waited++) {
		if (waited == 300) {
			say("step followed: the reader did not reach the run's end in 30 s");
			kill(follow_pid, SIGKILL);
			waitpid(follow_pid, &wstatus, 0);
			break;
		}
		usleep(100000);
	}
	n = read_file(FOLLOW_OUT, out, sizeof(out));
	if (n < 0)
		return -1;
	side_section("follow", out, n);
	snprintf(status, sizeof(status), "%d\n",
		 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
	side_section("follow-status", status, strlen(status));
	return 0;
}

static int step_dmesg(void)
{
	char *util[] = { "/usr/bin/dmesg", "--decode", "--nopager", "--color=never", NULL };
	char *util_raw[] = { "/usr/bin/dmesg", "--raw", "--nopager", NULL };
	char *bb[] = { "/bin/busybox", "dmesg", NULL };

	if (run_capture("util-dmesg", util) || run_capture("util-dmesg-raw", util_raw) ||
	    run_capture("busybox-dmesg", bb))
		return -1;
	return 0;
}

/*
 * The log's other text exports, for the CPU field record by record: the
 * whole buffer through syslog(2) READ_ALL, and what /proc/kmsg has unread
 * (all of it, unless a syslog READ consumed some).
 */
static int step_exports(void)
{
	static char buf[256 << 10];
	size_t used = 0;
	ssize_t n;
	int fd;

	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf));
	if (n < 0) {
		say("step exports: syslog READ_ALL: %s", strerror(errno));
		return -1;
	}
	side_section("syslog-read-all", buf, n);
	fd = open("/proc/kmsg", O_RDONLY | O_NONBLOCK);
	if (fd < 0) {
		say("step exports: open /proc/kmsg: %s", strerror(errno));
		return -1;
	}
	while (used < sizeof(buf) && (n = read(fd, buf + used, sizeof(buf) - used)) > 0)
		used += n;
	close(fd);
	side_section("proc-kmsg", buf, used);
	say("step exports: %zu bytes of /proc/kmsg", used);
	return 0;
}

#define CONSOLE_LSR 0x3fd
#define LSR_TEMT 0x40
#define QUIET_POLL_US 1000
#define QUIET_POLLS 200		/* the console UART idle this long: 200 ms */
#define QUIET_WAIT_POLLS 10000	/* give up after 10 s */

/*
 * Without the module (it refused to load) nothing can ask the consoles
 * whether they are done; wait until the console UART's transmitter has been
 * empty for a while, so that the run's last lines reach the transcript.
 */
static void wait_console_quiet(void)
{
	int quiet = 0, polls;

	if (ioperm(CONSOLE_LSR, 1, 1) != 0)
		return;
	for (polls = 0; quiet < QUIET_POLLS && polls < QUIET_WAIT_POLLS; polls++) {
		quiet = (inb(CONSOLE_LSR) & LSR_TEMT) ? quiet + 1 : 0;
		usleep(QUIET_POLL_US);
	}
}

/* Wait until every console printed everything. */
static void flush_consoles(void)
{
	if (access(MODULE_PARAMS "flush", W_OK) != 0) {
		wait_console_quiet();
		return;
	}
	if (write_file(MODULE_PARAMS "flush", "1") != 0)
		fprintf(stderr, "rig-init: console flush: %s\n", strerror(errno));
}

static int run_step(const char *name)
{
	say("step %s begin", name);
	if (!strcmp(name, "kmsg"))
		return step_kmsg();
	if (!strcmp(name, "hang"))
		step_hang();
	if (!strcmp(name, "panic"))
		return step_panic();
	if (!strcmp(name, "shell"))
		return step_shell();
	if (!strcmp(name, "sleep"))
		return step_sleep();
	if (!strcmp(name, "line"))
		return step_line();
	if (!strcmp(name, "run"))
		return step_run();
	if (!strcmp(name, "conlog"))
		return step_conlog();
	if (!strcmp(name, "printk"))
		return step_printk();
	if (!strcmp(name, "pstore"))
		return step_pstore();
	if (!strcmp(name, "dmesg"))
		return step_dmesg();
	if (!strcmp(name, "follow"))
		return step_follow();
	if (!strcmp(name, "followed"))
		return step_followed();
	if (!strcmp(name, "exports"))
		return step_exports();
	if (!strcmp(name, "kmsgtest")) {
		char *argv[] = { "/bin/kmsgtest", NULL };

		return run_capture("kmsgtest", argv);
	}
	if (!strcmp(name, "syslogtest")) {
		char *argv[] = { "/bin/kmsgtest", "syslog", NULL };

		return run_capture("syslogtest", argv);
	}
	say("unknown step '%s'", name);
	return -1;
}

/*
 * The interrupts-off stretches of the whole run, on a kernel with the
 * latency tracers (the debug profile): /bin/latency sets rig.latency_tracer
 * up (default irqsoff) and a watcher records each stretch of at least
 * rig.latency_us (default LATENCY_THRESH_US), with the console writes it
 * ran if rig.latency_functions=1 (which makes the printer's stretches 1.5-2
 * times longer: for a diagnosis, not a verdict), until the steps are done;
 * finish() sends them as section "latency".
 */
#define LATENCY_OUT "/tmp/latency.out"
/*
 * The stretches reported: 30 ms, under the bound rig.evidence.latency
 * judges by for lines of 160 bytes and more (two of them at 115200 baud
 * and the 3 ms wait), and over the printer thread's one-record stretches
 * on the debug kernel (20-25 ms). A report costs the tracer a pause
 * (/bin/latency says why), and one CPU's report drops a stretch of the
 * other CPU that overlaps it: a threshold of 20 ms reported the printer's
 * records and lost a 205 ms stretch of the other CPU.
 */
#define LATENCY_THRESH_US "30000"
#define LATENCY_NO_TRACER 3	/* /bin/latency start: the kernel has no such tracer */
static pid_t latency_pid = -1;
static char latency_failed[128];	/* why the tracer did not start, if it did not */

static void latency_start(void)
{
	char thresh[32] = LATENCY_THRESH_US, tracer[32] = "irqsoff", functions[8] = "0";
	pid_t pid;
	int status = 0;

	if (access("/sys/kernel/tracing", F_OK) != 0 || access("/bin/latency", X_OK) != 0)
		return;		/* no tracing in this kernel: not a debug profile */
	param("latency_us", thresh, sizeof(thresh));
	param("latency_tracer", tracer, sizeof(tracer));
	param("latency_functions", functions, sizeof(functions));
	pid = fork();
	if (pid == 0) {
		execl("/bin/latency", "latency", "start", thresh, tracer, functions, NULL);
		_exit(127);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	    WEXITSTATUS(status) == LATENCY_NO_TRACER)
		return;		/* tracing, but not this tracer: nothing to measure */
	if (pid < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		say("latency: the %s tracer did not start (status %d)", tracer, status);
		snprintf(latency_failed, sizeof(latency_failed),
			 "/bin/latency start %s %s %s: status %d\n", thresh, tracer, functions, status);
		return;
	}
	latency_pid = fork();
	if (latency_pid == 0) {
		sigset_t term;

		/*
		 * A SIGTERM from finish() before the watcher's handler is in
		 * place would kill it unreported: held until then (latency.c).
		 */
		sigemptyset(&term);
		sigaddset(&term, SIGTERM);
		sigprocmask(SIG_BLOCK, &term, NULL);
		execl("/bin/latency", "latency", "watch", LATENCY_OUT, NULL);
		_exit(127);
	}
	say("latency: %s tracer on, stretches of %s us and more recorded", tracer, thresh);
}

static void latency_send(void)
{
	static char out[4 << 20];
	char status[32];
	int wstatus = 0;
	ssize_t n;

	if (latency_failed[0])
		side_section("latency-status", latency_failed, strlen(latency_failed));
	if (latency_pid <= 0)
		return;
	/* The stretches the run ended with are reported to it a moment later. */
	usleep(20000);
	kill(latency_pid, SIGTERM);
	waitpid(latency_pid, &wstatus, 0);
	latency_pid = -1;
	n = read_file(LATENCY_OUT, out, sizeof(out));
	side_section("latency", out, n > 0 ? n : 0);
	snprintf(status, sizeof(status), "%d\n",
		 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus));
	side_section("latency-status", status, strlen(status));
}

static void finish(int code)
{
	latency_send();
	say("end status=%d", code);
	flush_consoles();
	side_printf(RIG_SIDE_STATUS " %d\n", code);
	if (side_fd >= 0)
		tcdrain(side_fd);
	if (ioperm(RIG_DEBUG_EXIT_PORT, 1, 1) == 0)
		outb(code, RIG_DEBUG_EXIT_PORT);
	else
		say("ioperm(0x%x): %s", RIG_DEBUG_EXIT_PORT, strerror(errno));
	/* Still here: no isa-debug-exit device. Power off; the harness says so. */
	say("isa-debug-exit did not end the run, powering off");
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

int main(void)
{
	char steps[512], *step, *save;
	int failed = 0;

	mount_filesystems();
	kmsg_fd = open("/dev/kmsg", O_WRONLY);
	read_cmdline();
	say("start");
	open_side_channel();
	latency_start();
	snapshot_point();
	if (load_module() != 0) {
		say("step module failed");
		finish(RIG_EXIT_FAIL);
	}

	if (!param("steps", steps, sizeof(steps)))
		strcpy(steps, "kmsg");
	if (flag("hang"))
		strncat(steps, ",hang", sizeof(steps) - strlen(steps) - 1);
	if (flag("panic"))
		strncat(steps, ",panic", sizeof(steps) - strlen(steps) - 1);

	for (step = strtok_r(steps, ",", &save); step; step = strtok_r(NULL, ",", &save)) {
		if (run_step(step) != 0) {
			say("step %s failed", step);
			failed = 1;
			break;
		}
		say("step %s done", step);
	}
	say("steps done");
	finish(failed ? RIG_EXIT_FAIL : RIG_EXIT_OK);
	return 0;
}
