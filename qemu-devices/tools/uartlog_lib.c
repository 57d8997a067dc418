// SPDX-License-Identifier: GPL-2.0-or-later
#include "uartlog.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const names[] = {
	[0] = "THR", [1] = "IER", [2] = "FCR", [3] = "LCR", [4] = "MCR", [5] = "LSR",
	[6] = "MSR", [7] = "SCR", [8] = "DLL", [9] = "DLM", [10] = "IIR", [11] = "RBR",
	[16] = "MARKER", [17] = "NMI",
};

const char *uartlog_reg_name(uint8_t reg)
{
	if (reg < sizeof(names) / sizeof(names[0]) && names[reg])
		return names[reg];
	return "?";
}

int uartlog_reg_code(const char *name)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i] && !strcasecmp(names[i], name))
			return (int)i;
	return -1;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static int is_read_reg(uint8_t reg)
{
	return reg == 5 || reg == 10;		/* LSR, IIR: the only reads logged */
}

/*
 * Why the device cannot have written this record, or NULL; the same rules
 * as rig/uartlog.py's impossible(). cpus is 0 when the header does not say.
 */
static const char *impossible(const struct uartlog_record *r, uint32_t cpus,
			      uint64_t prev_ns, char *buf, size_t len)
{
	const char *name = uartlog_reg_name(r->reg);
	int read = r->flags & UARTLOG_FLAG_READ;

	if (!strcmp(name, "?"))
		snprintf(buf, len, "unknown register code %u", r->reg);
	else if (r->cpu != UARTLOG_NO_CPU && cpus && r->cpu >= cpus)
		snprintf(buf, len, "vCPU %u on a machine of %" PRIu32, r->cpu, cpus);
	else if (r->flags & ~(UARTLOG_FLAG_READ | UARTLOG_FLAG_DLAB))
		snprintf(buf, len, "unknown flags 0x%02x", r->flags);
	else if (!read != !is_read_reg(r->reg))
		snprintf(buf, len, "a %s of %s, which the device logs only as %s",
			 read ? "read" : "write", name, read ? "a write" : "a read");
	else if ((r->reg == 8 || r->reg == 9) && !(r->flags & UARTLOG_FLAG_DLAB))
		snprintf(buf, len, "%s without DLAB", name);
	else if (r->reg < 16 && r->value > 0xff)
		snprintf(buf, len, "value 0x%" PRIx32 " in the 8-bit register %s", r->value, name);
	else if (r->reg == 17 && cpus && r->value >= cpus)
		snprintf(buf, len, "an NMI for vCPU %" PRIu32 " on a machine of %" PRIu32,
			 r->value, cpus);
	else if (r->vtime_ns < prev_ns)
		snprintf(buf, len, "virtual time %" PRIu64 " ns before the previous record's %"
			 PRIu64 " ns", r->vtime_ns, prev_ns);
	else
		return NULL;
	return buf;
}

int uartlog_parse(const uint8_t *data, size_t len, struct uartlog *log,
		  char *err, size_t errlen)
{
	struct uartlog_header *h = &log->hdr;
	char what[128];
	const char *why;
	size_t body, n;

	memset(log, 0, sizeof(*log));
	if (len < UARTLOG_HEADER_SIZE) {
		snprintf(err, errlen, "log is %zu bytes, shorter than its %d-byte header",
			 len, UARTLOG_HEADER_SIZE);
		return -1;
	}
	if (memcmp(data, UARTLOG_MAGIC, 8)) {
		snprintf(err, errlen, "bad magic at offset 0: not a rig-serial log");
		return -1;
	}
	h->version = le32(data + 8);
	h->record_size = le32(data + 12);
	h->header_size = le32(data + 16);
	h->baudbase = le32(data + 20);
	h->iobase = le32(data + 24);
	h->irq = le32(data + 28);
	h->marker_iobase = le32(data + 32);
	h->flags = le32(data + 36);
	if (h->version != 1 && h->version != 2) {
		snprintf(err, errlen, "log format version %" PRIu32
			 " at offset 8; this decoder knows versions 1, 2", h->version);
		return -1;
	}
	if (h->record_size != UARTLOG_RECORD_SIZE || h->header_size != UARTLOG_HEADER_SIZE) {
		snprintf(err, errlen, "record size %" PRIu32 " / header size %" PRIu32
			 " at offset 12 do not match version %" PRIu32, h->record_size,
			 h->header_size, h->version);
		return -1;
	}
	if (h->version == 2) {
		h->cpus = le32(data + 40);
		h->state = le32(data + 44);
		h->records = le64(data + 48);
		h->lost = le32(data + 56);
		h->error = le32(data + 60);
		if (h->cpus < 1 || h->cpus >= UARTLOG_NO_CPU) {
			snprintf(err, errlen, "%" PRIu32 " vCPUs at offset 40: a damaged header",
				 h->cpus);
			return -1;
		}
		if (h->state > UARTLOG_CLOSED || h->lost > h->records) {
			snprintf(err, errlen, "state %" PRIu32 ", %" PRIu32 " of %" PRIu64
				 " records lost at offset 44: a damaged header", h->state,
				 h->lost, h->records);
			return -1;
		}
	}
	body = len - UARTLOG_HEADER_SIZE;
	if (body % UARTLOG_RECORD_SIZE) {
		snprintf(err, errlen, "log truncated: %zu stray bytes of a partial record at offset %zu",
			 body % UARTLOG_RECORD_SIZE,
			 UARTLOG_HEADER_SIZE + body / UARTLOG_RECORD_SIZE * UARTLOG_RECORD_SIZE);
		return -1;
	}
	n = body / UARTLOG_RECORD_SIZE;
	log->rec = calloc(n ? n : 1, sizeof(*log->rec));
	if (!log->rec) {
		snprintf(err, errlen, "out of memory for %zu records", n);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = data + UARTLOG_HEADER_SIZE + i * UARTLOG_RECORD_SIZE;
		struct uartlog_record *r = &log->rec[i];

		r->seq = le64(p);
		r->vtime_ns = le64(p + 8);
		r->cpu = (uint16_t)(p[16] | p[17] << 8);
		r->reg = p[18];
		r->flags = p[19];
		r->value = le32(p + 20);
		if (r->seq != i) {
			snprintf(err, errlen, "record at offset %zu has seq %" PRIu64
				 ", expected %zu: records missing or corrupted",
				 (size_t)(p - data), r->seq, i);
			uartlog_free(log);
			return -1;
		}
		why = impossible(r, h->cpus, i ? log->rec[i - 1].vtime_ns : 0, what,
				 sizeof(what));
		if (why) {
			snprintf(err, errlen, "record %zu at offset %zu cannot be: %s (a damaged file)",
				 i, (size_t)(p - data), why);
			uartlog_free(log);
			return -1;
		}
	}
	log->n = n;
	return 0;
}

void uartlog_free(struct uartlog *log)
{
	free(log->rec);
	log->rec = NULL;
	log->n = 0;
}
