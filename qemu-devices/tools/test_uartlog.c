// SPDX-License-Identifier: GPL-2.0-or-later
/* Unit tests for the uartlog decoder library. */
#include "uartlog.h"

#include <stdio.h>
#include <string.h>

static int failures;

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
	failures++; } } while (0)

static size_t header(uint8_t *p, uint32_t version)
{
	uint32_t f[8] = { version, 24, 64, 115200, 0x3f8, 4, 0x4f0, 0 };

	memset(p, 0, 64);
	memcpy(p, "RIGUART", 8);
	for (int i = 0; i < 8; i++)
		for (int b = 0; b < 4; b++)
			p[8 + 4 * i + b] = (uint8_t)(f[i] >> (8 * b));
	return 64;
}

static size_t record(uint8_t *p, uint64_t seq, uint64_t t, uint16_t cpu, uint8_t reg,
		     uint32_t val)
{
	for (int b = 0; b < 8; b++) {
		p[b] = (uint8_t)(seq >> (8 * b));
		p[8 + b] = (uint8_t)(t >> (8 * b));
	}
	p[16] = (uint8_t)cpu;
	p[17] = (uint8_t)(cpu >> 8);
	p[18] = reg;
	p[19] = 0;
	for (int b = 0; b < 4; b++)
		p[20 + b] = (uint8_t)(val >> (8 * b));
	return 24;
}

int main(void)
{
	uint8_t buf[256];
	struct uartlog log;
	char err[256];
	size_t n = header(buf, 1);

	n += record(buf + n, 0, 10, 1, 1, 0);
	n += record(buf + n, 1, 20, 1, 0, 'x');
	n += record(buf + n, 2, 30, UARTLOG_NO_CPU, 16, 0xdeadbeef);
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == 0);
	CHECK(log.n == 3 && log.hdr.baudbase == 115200 && log.hdr.iobase == 0x3f8);
	CHECK(log.rec[1].value == 'x' && log.rec[1].vtime_ns == 20 && log.rec[1].cpu == 1);
	CHECK(log.rec[2].value == 0xdeadbeef && log.rec[2].cpu == UARTLOG_NO_CPU);
	CHECK(!strcmp(uartlog_reg_name(log.rec[2].reg), "MARKER"));
	uartlog_free(&log);

	CHECK(uartlog_parse(buf, 64, &log, err, sizeof(err)) == 0 && log.n == 0);
	uartlog_free(&log);

	CHECK(uartlog_parse(buf, n - 5, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "partial record at offset 112") != NULL);

	CHECK(uartlog_parse(buf, 10, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "shorter than its 64-byte header") != NULL);

	header(buf, 9);
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "version 9 at offset 8") != NULL);

	header(buf, 1);
	buf[0] = 'X';
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "bad magic") != NULL);

	header(buf, 1);
	record(buf + 64 + 24, 5, 20, 1, 0, 'x');
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "offset 88 has seq 5, expected 1") != NULL);

	CHECK(uartlog_reg_code("ier") == 1 && uartlog_reg_code("bogus") == -1);

	/* Version 2: the vCPU count bounds the records; flipped bytes are named. */
	header(buf, 2);
	buf[40] = 2;
	record(buf + 64 + 24, 1, 20, 1, 0, 'x');
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == 0 && log.hdr.cpus == 2);
	uartlog_free(&log);
	buf[64 + 24 + 16] = 7;
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "record 1 at offset 88 cannot be: vCPU 7 on a machine of 2") != NULL);
	buf[64 + 24 + 16] = 1;
	buf[64 + 18] = 42;
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown register code 42") != NULL);
	buf[64 + 18] = 1;
	buf[64 + 19] = 0x80;
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown flags 0x80") != NULL);
	buf[64 + 19] = 0;
	buf[44] = 7;
	CHECK(uartlog_parse(buf, n, &log, err, sizeof(err)) == -1);
	CHECK(strstr(err, "state 7, 0 of 0 records lost at offset 44") != NULL);

	if (failures) {
		fprintf(stderr, "0 passed, %d failed\n", failures);
		return 1;
	}
	printf("test_uartlog: all checks passed\n");
	return 0;
}
