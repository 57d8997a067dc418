/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Decoder for the rig-serial register log (see ../uart-log-format.md). */
#ifndef UARTLOG_H
#define UARTLOG_H

#include <stddef.h>
#include <stdint.h>

#define UARTLOG_MAGIC "RIGUART"
#define UARTLOG_VERSION 2		/* reads 1 and 2 */
#define UARTLOG_HEADER_SIZE 64
#define UARTLOG_RECORD_SIZE 24
#define UARTLOG_NO_CPU 0xffff
#define UARTLOG_FLAG_READ 0x01
#define UARTLOG_FLAG_DLAB 0x02
#define UARTLOG_CLOSED 1

struct uartlog_header {
	uint32_t version, record_size, header_size, baudbase, iobase, irq;
	uint32_t marker_iobase, flags;
	/* Version 2 (zero in version 1): vCPUs, and QEMU's counts at its end. */
	uint32_t cpus, state, lost, error;
	uint64_t records;
};

struct uartlog_record {
	uint64_t seq, vtime_ns;
	uint16_t cpu;
	uint8_t reg, flags;
	uint32_t value;
};

struct uartlog {
	struct uartlog_header hdr;
	struct uartlog_record *rec;
	size_t n;
};

/* Parse a whole log held in memory. Returns 0, or -1 with err filled in. */
int uartlog_parse(const uint8_t *data, size_t len, struct uartlog *log,
		  char *err, size_t errlen);
void uartlog_free(struct uartlog *log);
const char *uartlog_reg_name(uint8_t reg);
int uartlog_reg_code(const char *name);

#endif
