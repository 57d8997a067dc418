// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * uartlog: decode a rig-serial register log.
 *
 *   uartlog [--json] [--reg NAME] [--cpu N] LOG      one line per record
 *   uartlog --streams [--cpu N] LOG                  THR bytes per vCPU, raw
 *   uartlog --stats LOG                              counts and time span
 */
#include "uartlog.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f)
		return NULL;
	for (;;) {
		if (n == cap) {
			uint8_t *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		n += got;
		if (got == 0)
			break;
	}
	fclose(f);
	*len = n;
	return buf;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: uartlog [--json] [--reg NAME] [--cpu N] [--streams | --stats] LOG\n");
}

static int cpu_of(const struct uartlog_record *r)
{
	return r->cpu == UARTLOG_NO_CPU ? -1 : r->cpu;
}

static void print_record(const struct uartlog_record *r, int json)
{
	if (json)
		printf("{\"seq\":%" PRIu64 ",\"vtime_ns\":%" PRIu64 ",\"cpu\":%d,\"reg\":\"%s\","
		       "\"flags\":%u,\"value\":%" PRIu32 "}\n", r->seq, r->vtime_ns, cpu_of(r),
		       uartlog_reg_name(r->reg), r->flags, r->value);
	else
		printf("%8" PRIu64 " %15" PRIu64 " cpu%-3d %-6s %s 0x%02" PRIx32 "\n", r->seq,
		       r->vtime_ns, cpu_of(r), uartlog_reg_name(r->reg),
		       r->flags & UARTLOG_FLAG_READ ? "R" : "W", r->value);
}

static void print_stats(const struct uartlog *log)
{
	size_t per_reg[256] = { 0 }, thr_cpu[64] = { 0 };

	for (size_t i = 0; i < log->n; i++) {
		per_reg[log->rec[i].reg]++;
		if (log->rec[i].reg == 0 && log->rec[i].cpu < 64)
			thr_cpu[log->rec[i].cpu]++;
	}
	printf("records %zu baudbase %" PRIu32 " iobase 0x%" PRIx32 " irq %" PRIu32 "\n",
	       log->n, log->hdr.baudbase, log->hdr.iobase, log->hdr.irq);
	if (log->hdr.version >= 2)
		printf("vcpus %" PRIu32 ", %s: QEMU logged %" PRIu64 " records, lost %" PRIu32
		       " (errno %" PRIu32 ")\n", log->hdr.cpus,
		       log->hdr.state == UARTLOG_CLOSED ? "closed" : "open (QEMU running or killed)",
		       log->hdr.records, log->hdr.lost, log->hdr.error);
	if (log->n)
		printf("vtime %" PRIu64 " .. %" PRIu64 " ns\n", log->rec[0].vtime_ns,
		       log->rec[log->n - 1].vtime_ns);
	for (int i = 0; i < 256; i++)
		if (per_reg[i])
			printf("%-6s %zu\n", uartlog_reg_name((uint8_t)i), per_reg[i]);
	for (int i = 0; i < 64; i++)
		if (thr_cpu[i])
			printf("THR from cpu%d %zu\n", i, thr_cpu[i]);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' }, { "reg", required_argument, NULL, 'r' },
		{ "cpu", required_argument, NULL, 'c' }, { "streams", no_argument, NULL, 's' },
		{ "stats", no_argument, NULL, 'S' }, { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int json = 0, streams = 0, stats = 0, reg = -1, cpu = -2, c;
	struct uartlog log;
	char err[256];
	uint8_t *data;
	size_t len = 0;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 's': streams = 1; break;
		case 'S': stats = 1; break;
		case 'c': cpu = atoi(optarg); break;
		case 'r':
			reg = uartlog_reg_code(optarg);
			if (reg < 0) {
				fprintf(stderr, "uartlog: unknown register %s\n", optarg);
				return 2;
			}
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return 2;
	}
	data = slurp(argv[optind], &len);
	if (!data) {
		fprintf(stderr, "uartlog: %s: %s\n", argv[optind], strerror(errno));
		return 2;
	}
	if (uartlog_parse(data, len, &log, err, sizeof(err))) {
		fprintf(stderr, "uartlog: %s: %s\n", argv[optind], err);
		free(data);
		return 1;
	}
	free(data);
	if (stats) {
		print_stats(&log);
	} else {
		for (size_t i = 0; i < log.n; i++) {
			const struct uartlog_record *r = &log.rec[i];

			if (cpu != -2 && cpu_of(r) != cpu)
				continue;
			if (streams) {
				if (r->reg == 0 && !(r->flags & UARTLOG_FLAG_READ))
					putchar(r->value);
				continue;
			}
			if (reg >= 0 && r->reg != reg)
				continue;
			print_record(r, json);
		}
	}
	uartlog_free(&log);
	return 0;
}
