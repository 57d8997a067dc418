// SPDX-License-Identifier: GPL-2.0
/*
 * latency: the guest's recorder of interrupts-off stretches, on a kernel
 * with the irqsoff latency tracer (the debug profile, docs/profiles.md).
 *
 *   latency start THRESH_US TRACER FUNCTIONS
 *                             set TRACER up (irqsoff, preemptoff or
 *                             preemptirqsoff): every stretch of at least
 *                             THRESH_US is reported (tracing_thresh), with
 *                             its start, end and the stack where it ended;
 *                             with FUNCTIONS 1 also the console writes it
 *                             ran (FUNCTION_FILTER)
 *   latency watch OUT         record each reported stretch into OUT until
 *                             SIGTERM: the kernel notifies a change of
 *                             tracing_max_latency (fsnotify) for each one,
 *                             and the watcher appends the tracer's report
 *                             of it, "# latency: N us, ... CPU#c" with its
 *                             start, end and the functions it ran
 *
 * rig-init starts both before its snapshot point, stops the watcher when
 * the steps are done and sends OUT as the side-channel section "latency"
 * (rig.evidence.latency reads it), ending with the tracer's state.
 *
 * Reading a report costs: the open and read of "trace" took 100-250 ms of
 * virtual time on the debug kernel, and the tracer pauses while the file
 * is open (pause-on-trace, which keeps the report whole), so a stretch
 * that ends then is not reported. Reports that come faster than the
 * watcher reads them are merged: it then reads the newest, and says how
 * many notifications it took at once. So THRESH_US is of the order of
 * the bound the stretches are judged by (rig.evidence.latency), not far
 * lower: a run that keeps its bound has few reports, and the first
 * stretch over it is reported whole.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

#define TRACING "/sys/kernel/tracing/"
/* At most this much of one report: its header and the first functions. */
#define REPORT_MAX (64 << 10)
/*
 * Per-CPU ring of the tracer. It takes an entry at the start and the end
 * of every interrupts-off section, and one for each console write: a
 * report needs a few, and a small ring keeps the read of a report short.
 */
#define BUFFER_KB "16"
/*
 * The functions a report lists with FUNCTIONS 1: each console write of one
 * record, on every path (the printer threads, emergency and handed
 * writes, the legacy consoles), so a report says whether console writes
 * ran in the stretch and how many. Called once a record, they cost the
 * stretch little; tracing every function would cost several times it.
 */
#define FUNCTION_FILTER "serial8250_console_write univ8250_console_write* " \
	"nbcon_emit_next_record console_emit_next_record nbcon_emergency_emit*"

static volatile sig_atomic_t stop;

static int setting(const char *name, const char *value)
{
	char path[128];

	snprintf(path, sizeof(path), TRACING "%s", name);
	if (write_file(path, value) == 0)
		return 0;
	fprintf(stderr, "latency: %s <- %s: %s\n", path, value, strerror(errno));
	return -1;
}

/* set_ftrace_filter takes a pattern per write: a list is written one by one. */
static int function_filter(void)
{
	char list[] = FUNCTION_FILTER, *save = NULL, *pattern;
	int fd = open(TRACING "set_ftrace_filter", O_WRONLY | O_TRUNC);

	if (fd < 0)
		return -1;
	for (pattern = strtok_r(list, " ", &save); pattern; pattern = strtok_r(NULL, " ", &save)) {
		if (write(fd, pattern, strlen(pattern)) < 0)
			fprintf(stderr, "latency: set_ftrace_filter <- %s: %s\n", pattern,
				strerror(errno));
	}
	close(fd);
	return 0;
}

static int start(const char *thresh_us, const char *tracer, const char *functions)
{
	char tracers[512];
	ssize_t n;

	mkdir("/sys/kernel/tracing", 0755);
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0 && errno != EBUSY) {
		fprintf(stderr, "latency: mount tracefs: %s\n", strerror(errno));
		return 2;
	}
	n = read_file(TRACING "available_tracers", tracers, sizeof(tracers) - 1);
	tracers[n > 0 ? n : 0] = '\0';
	if (!strstr(tracers, tracer)) {
		fprintf(stderr, "latency: no %s tracer in this kernel (tracers: %s)\n",
			tracer, tracers);
		return 3;
	}
	/*
	 * The function tracer costs instructions, and so virtual time, inside
	 * the very stretches it measures: the lengths are the kernel's own
	 * only without it.
	 */
	if (setting("tracing_on", "0") || setting("buffer_size_kb", BUFFER_KB) ||
	    setting("options/function-trace", functions) ||
	    (strcmp(functions, "0") && function_filter()) ||
	    setting("options/display-graph", "0") ||
	    setting("current_tracer", tracer) || setting("tracing_thresh", thresh_us) ||
	    setting("tracing_max_latency", "0") || setting("tracing_on", "1"))
		return 1;
	return 0;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* Append the tracer's report of the newest stretch to out. */
static void record(int out, unsigned int merged)
{
	static char report[REPORT_MAX];
	char head[64];
	ssize_t n = read_file(TRACING "trace", report, sizeof(report));
	int len = snprintf(head, sizeof(head), "#### report notifications=%u\n", merged);

	if (write(out, head, len) != len)
		return;
	if (n > 0 && write(out, report, n) != n)
		return;
	if (n > 0 && report[n - 1] != '\n' && write(out, "\n", 1) != 1)
		return;
}

/* The tracer's state at the end: on till the end, and with which settings. */
static void final_state(int out)
{
	static const char *const files[] = { "current_tracer", "tracing_on", "tracing_thresh",
					     "tracing_max_latency" };
	char line[256], value[64];
	size_t i;
	int len = snprintf(line, sizeof(line), "#### state");

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[128];
		ssize_t n;

		snprintf(path, sizeof(path), TRACING "%s", files[i]);
		n = read_file(path, value, sizeof(value) - 1);
		value[n > 0 ? n : 0] = '\0';
		value[strcspn(value, "\n")] = '\0';
		len += snprintf(line + len, sizeof(line) - len, " %s=%s", files[i], value);
	}
	len += snprintf(line + len, sizeof(line) - len, "\n");
	if (write(out, line, len) != len)
		return;
}

static int watch(const char *path)
{
	char events[4096];
	struct sigaction sa = { .sa_handler = on_term };
	struct pollfd ready;
	sigset_t term, none;
	int out, in;

	/*
	 * SIGTERM is blocked (rig-init blocks it before the exec) but while
	 * the watcher waits: one sent before the handler was in place, or
	 * between the check of stop and the wait, ends the wait, not the
	 * watcher, and the tracer's state is still recorded.
	 */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	sigprocmask(SIG_BLOCK, &term, NULL);
	sigemptyset(&none);
	sigaction(SIGTERM, &sa, NULL);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	in = inotify_init1(0);
	if (out < 0 || in < 0 ||
	    inotify_add_watch(in, TRACING "tracing_max_latency", IN_MODIFY) < 0) {
		fprintf(stderr, "latency: watch: %s\n", strerror(errno));
		return 1;
	}
	ready.fd = in;
	ready.events = POLLIN;
	while (!stop) {
		ssize_t n;

		if (ppoll(&ready, 1, NULL, &none) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		n = read(in, events, sizeof(events));
		if (n <= 0)
			break;
		record(out, (unsigned int)(n / sizeof(struct inotify_event)));
	}
	final_state(out);
	close(out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "start"))
		return start(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "watch"))
		return watch(argv[2]);
	fprintf(stderr, "usage: latency start THRESH_US TRACER FUNCTIONS | latency watch OUT\n");
	return 2;
}
