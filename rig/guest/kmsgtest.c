// SPDX-License-Identifier: GPL-2.0
/*
 * kmsgtest: exercise /dev/kmsg and syslog(2) from inside the guest and print
 * what happened, one "name value..." line per observation. It judges
 * nothing: the host-side scenarios (S11, S12, and S9 with "follow") compare
 * the observations with the documented ABI
 * (Documentation/ABI/testing/dev-kmsg, syslog(2)).
 *
 * Records it writes carry "kmsgtest:" so that the host can find them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <unistd.h>

#define REC_MAX 8192

static int kmsg_open(void)
{
	return open("/dev/kmsg", O_RDWR | O_NONBLOCK);
}

static void put(int fd, const char *text)
{
	if (write(fd, text, strlen(text)) < 0)
		printf("write-error %s\n", strerror(errno));
}

/* Read one record; print it as "tag <len> <errno-name> <record>". */
static ssize_t get(int fd, const char *tag, size_t size)
{
	static char buf[REC_MAX];
	ssize_t n = read(fd, buf, size);

	if (n < 0) {
		printf("%s -1 %s\n", tag, errno == EPIPE ? "EPIPE" : errno == EAGAIN ? "EAGAIN" :
		       errno == EINVAL ? "EINVAL" : strerror(errno));
		return -errno;
	}
	printf("%s %zd OK %.*s", tag, n, (int)n, buf);
	if (n == 0 || buf[n - 1] != '\n')
		printf("\n");
	return n;
}

static const char *seek_result(int fd, off_t off, int whence)
{
	static char r[32];

	if (lseek(fd, off, whence) == (off_t)-1)
		snprintf(r, sizeof(r), "%s", errno == ESPIPE ? "ESPIPE" :
			 errno == EINVAL ? "EINVAL" : strerror(errno));
	else
		snprintf(r, sizeof(r), "OK");
	return r;
}

static int poll_in(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0 && (p.revents & POLLIN);
}

/* poll()'s revents for a reader, as letters: I(n) E(rr) P(ri). */
static const char *poll_flags(int fd)
{
	static char out[4];
	struct pollfd p = { .fd = fd, .events = POLLIN | POLLPRI };
	char *o = out;

	if (poll(&p, 1, 0) > 0) {
		if (p.revents & POLLIN)
			*o++ = 'I';
		if (p.revents & POLLERR)
			*o++ = 'E';
		if (p.revents & POLLPRI)
			*o++ = 'P';
	}
	*o = '\0';
	return o == out ? "-" : out;
}

static void s11(void)
{
	int fd = kmsg_open(), fd2, fd3, i;
	char line[256];

	if (fd < 0) {
		printf("open-error %s\n", strerror(errno));
		return;
	}
	/* One record per read, escaping, <N> prefixes. */
	lseek(fd, 0, SEEK_END);
	put(fd, "<3>kmsgtest: level three\n");
	put(fd, "<27>kmsgtest: daemon err\n");
	put(fd, "kmsgtest: no prefix\n");
	put(fd, "<6>kmsgtest: ctl\001 back\\slash\n");
	for (i = 0; i < 4; i++)
		get(fd, "record", REC_MAX);
	get(fd, "after-last", REC_MAX);

	/* A too-small buffer: EINVAL, and the record is still there. */
	put(fd, "<6>kmsgtest: small buffer\n");
	get(fd, "small", 8);
	get(fd, "small-retry", REC_MAX);

	/* poll(): readable when a record waits, not after SEEK_END. */
	put(fd, "<6>kmsgtest: poll\n");
	printf("poll-pending %d\n", poll_in(fd));
	lseek(fd, 0, SEEK_END);
	printf("poll-at-end %d\n", poll_in(fd));

	/* Seeks: offset 0 only; SEEK_CUR not supported. */
	printf("seek-set-nonzero %s\n", seek_result(fd, 5, SEEK_SET));
	printf("seek-cur %s\n", seek_result(fd, 0, SEEK_CUR));
	printf("seek-set %s\n", seek_result(fd, 0, SEEK_SET));
	get(fd, "first", REC_MAX);
	put(fd, "<6>kmsgtest: before clear\n");
	printf("syslog-clear %d\n", klogctl(5, NULL, 0));
	put(fd, "<6>kmsgtest: after clear\n");
	printf("seek-data %s\n", seek_result(fd, 0, SEEK_DATA));
	get(fd, "data", REC_MAX);
	printf("seek-end %s\n", seek_result(fd, 0, SEEK_END));
	get(fd, "end", REC_MAX);

	/*
	 * Overrun: poll() flags a reader left behind (POLLERR, POLLPRI), its
	 * read gets EPIPE once, then the oldest record still in the buffer.
	 */
	fd2 = kmsg_open();
	lseek(fd2, 0, SEEK_SET);
	get(fd2, "overrun-first", REC_MAX);
	for (i = 0; i < 4000; i++) {
		snprintf(line, sizeof(line), "<7>kmsgtest: overrun %d %0100d\n", i, 0);
		put(fd, line);
	}
	printf("overrun-poll %s\n", poll_flags(fd2));
	get(fd2, "overrun", REC_MAX);
	printf("overrun-poll-after %s\n", poll_flags(fd2));
	/* The oldest record now, for a reader that opens the device afresh. */
	fd3 = kmsg_open();
	get(fd3, "overrun-oldest", REC_MAX);
	close(fd3);
	get(fd2, "overrun-next", REC_MAX);
	close(fd2);
	close(fd);
}

/* Print a syslog(2) result as "@name LEN" + body + "@name-end". */
static void section(const char *name, const char *buf, int n)
{
	printf("@%s %d\n", name, n);
	if (n > 0)
		fwrite(buf, 1, n, stdout);
	printf("\n@%s-end\n", name);
}

/* Consuming READ in 4 KB steps until SIZE_UNREAD says nothing is left. */
static int consume(char *buf, int size)
{
	int used = 0, n;

	while (used + 4096 <= size && klogctl(9, NULL, 0) > 0) {
		n = klogctl(2, buf + used, 4096);
		if (n <= 0)
			break;
		used += n;
	}
	return used;
}

/* Every /dev/kmsg record from the oldest one on, as read. */
static int kmsg_all(char *buf, int size)
{
	int fd = kmsg_open(), used = 0;
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	while (used + REC_MAX <= size) {
		n = read(fd, buf + used, REC_MAX);
		if (n < 0 && errno == EPIPE)
			continue;
		if (n <= 0)
			break;
		used += n;
	}
	close(fd);
	return used;
}

static void s12(void)
{
	static char buf[1 << 20];
	char line[256];
	int fd = kmsg_open(), i;

	if (fd < 0) {
		printf("open-error %s\n", strerror(errno));
		return;
	}
	printf("size-buffer %d\n", klogctl(10, NULL, 0));
	printf("size-unread %d\n", klogctl(9, NULL, 0));
	section("read-all", buf, klogctl(3, buf, sizeof(buf)));
	section("kmsg", buf, kmsg_all(buf, sizeof(buf)));
	section("read", buf, consume(buf, sizeof(buf)));
	printf("size-unread-after-read %d\n", klogctl(9, NULL, 0));

	/* SIZE_UNREAD counts exactly the bytes READ returns next. */
	for (i = 0; i < 3; i++) {
		snprintf(line, sizeof(line), "<6>kmsgtest: s12 unread %d\n", i);
		put(fd, line);
	}
	printf("size-unread-three %d\n", klogctl(9, NULL, 0));
	section("read-three", buf, consume(buf, sizeof(buf)));

	/* CLEAR empties READ_ALL; the READ position does not move. */
	put(fd, "<6>kmsgtest: s12 before clear\n");
	printf("clear %d\n", klogctl(5, NULL, 0));
	printf("read-all-after-clear %d\n", klogctl(3, buf, sizeof(buf)));
	printf("size-unread-after-clear %d\n", klogctl(9, NULL, 0));
	section("read-after-clear", buf, consume(buf, sizeof(buf)));

	/* READ_CLEAR returns what READ_ALL would, then clears. */
	put(fd, "<6>kmsgtest: s12 read-clear\n");
	section("read-clear", buf, klogctl(4, buf, sizeof(buf)));
	printf("read-all-after-read-clear %d\n", klogctl(3, buf, sizeof(buf)));
	consume(buf, sizeof(buf));

	/* A wrap: more than the buffer holds while both positions lag behind. */
	for (i = 0; i < 3000; i++) {
		snprintf(line, sizeof(line), "<7>kmsgtest: wrap %d %0100d\n", i, 0);
		put(fd, line);
	}
	printf("size-unread-wrap %d\n", klogctl(9, NULL, 0));
	section("read-wrap", buf, consume(buf, sizeof(buf)));
	section("read-all-wrap", buf, klogctl(3, buf, sizeof(buf)));
	close(fd);
	fd = kmsg_open();
	lseek(fd, 0, SEEK_SET);
	get(fd, "kmsg-first-after-wrap", REC_MAX);
	close(fd);
}

/*
 * S9: follow /dev/kmsg like a logging daemon that falls behind, from the
 * first record in the buffer until a record containing @stop, sleeping
 * @delay_us after each record. Print "r SEQ CPU CTX TAGSEQ" per record (the
 * test module's tag, or "- - -"), "EPIPE" for each overrun, and finally
 * "end RECORDS EPIPES". The host checks that every gap in SEQ follows an
 * EPIPE and that every flood record was read or fell into such a gap.
 */
static int follow(const char *stop, unsigned int delay_us)
{
	static char buf[REC_MAX];
	unsigned long records = 0, epipes = 0;
	int fd = open("/dev/kmsg", O_RDONLY);

	if (fd < 0) {
		printf("open-error %s\n", strerror(errno));
		return 1;
	}
	for (;;) {
		unsigned int prio, cpu, tagseq;
		unsigned long long seq;
		char ctx[16];
		const char *text, *tag;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		if (n < 0 && errno == EPIPE) {
			epipes++;
			printf("EPIPE\n");
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			printf("read-error %s\n", n < 0 ? strerror(errno) : "EOF");
			return 1;
		}
		buf[n] = '\0';
		if (sscanf(buf, "%u,%llu,", &prio, &seq) != 2) {
			printf("bad-record %.60s\n", buf);
			return 1;
		}
		records++;
		text = strchr(buf, ';');
		tag = text ? strstr(text, "rigprintk: scen=") : NULL;
		if (tag && sscanf(tag, "rigprintk: scen=%*s cpu=%u ctx=%15s seq=%u",
				  &cpu, ctx, &tagseq) == 3)
			printf("r %llu %u %s %u\n", seq, cpu, ctx, tagseq);
		else
			printf("r %llu - - -\n", seq);
		if (text && strstr(text, stop))
			break;
		if (delay_us)
			usleep(delay_us);
	}
	printf("end %lu %lu\n", records, epipes);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	if (argc > 3 && !strcmp(argv[1], "follow"))
		return follow(argv[2], strtoul(argv[3], NULL, 0));
	if (argc > 1 && !strcmp(argv[1], "syslog"))
		s12();
	else
		s11();
	return 0;
}
