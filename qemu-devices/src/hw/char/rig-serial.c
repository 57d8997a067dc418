/*
 * rig-serial: an ISA 16550A UART that records every register access.
 *
 * A drop-in for isa-serial (same registers, same SerialState core, same
 * iobase/irq/chardev properties) that appends a fixed-size binary record to
 * the file given by the "log" property for every register write and, with
 * "log-reads", every LSR/IIR read.  Each record carries a sequence number,
 * QEMU_CLOCK_VIRTUAL in ns, the index of the vCPU that did the access and the
 * DLAB-resolved register.  A second I/O port (marker-iobase, 4 bytes) lets
 * guest code put markers into the same ordered log.
 *
 * With "baud-model" (on by default) the transmitter takes the time a real
 * UART takes: LSR.THRE and LSR.TEMT follow the bit time of the divisor the
 * guest programmed (8N1 at 115200 baud: 86.8 us a byte of virtual time), and
 * the THR-empty interrupt is held back until the modelled FIFO has drained.
 * Bytes still reach the chardev at once; only what the guest sees is timed.
 *
 * A one-shot NMI trigger fires after the Nth THR byte ("nmi-after-thr") or
 * after "nmi-pattern-offset" bytes following a byte pattern ("nmi-pattern"),
 * and sends an NMI to vCPU "nmi-cpu" (-1: the vCPU that wrote the byte) as an
 * MSI with NMI delivery mode, the way an IOAPIC line or another CPU would.
 * Setting either trigger property (also at run time with QMP qom-set) arms
 * it; every firing is logged.
 *
 * Writing the value of "stop-marker" to the marker port pauses the VM at
 * that instruction, the way a QMP stop would but at a point the guest
 * chooses: the rig saves such a VM once (init stops itself when it is ready
 * for a scenario) and restores it for each scenario.  Under -icount the stop
 * is synchronous, so the saved state does not depend on host timing.  A
 * restored VM appends to the template's log ("log-append"): one log, one
 * sequence, the boot's divisor writes included.
 *
 * With "slice-ns", a virtual timer every that many ns ends the running
 * vCPU's turn under -icount.  The vCPUs share one virtual clock but run one
 * at a time, and a vCPU that does not pause runs until the next virtual
 * timer, a whole guest tick: the records of another vCPU then show it idle
 * for that long, though on hardware it would have run alongside.  The
 * slice bounds that error.
 *
 * Records are written with one write(2) each, so that the log survives a
 * guest panic and a SIGKILL of QEMU: the data is in the host's page cache as
 * soon as the access returns.  When QEMU ends, the header gets the number of
 * records and of those a failed write lost, so a cut log is told from a
 * whole one.  The format is documented in qemu-devices/uart-log-format.md.
 *
 * Copyright (c) 2026 printk-rig authors
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "exec/address-spaces.h"
#include "qemu/bswap.h"
#include "qemu/module.h"
#include "qemu/timer.h"
#include "hw/acpi/acpi_aml_interface.h"
#include "hw/boards.h"
#include "hw/char/serial.h"
#include "hw/core/cpu.h"
#include "hw/isa/isa.h"
#include "hw/qdev-properties.h"
#include "migration/vmstate.h"
#include "qom/object.h"
#include "sysemu/cpu-timers.h"
#include "sysemu/runstate.h"
#include "sysemu/sysemu.h"
#include "trace.h"

#define TYPE_RIG_SERIAL "rig-serial"
OBJECT_DECLARE_SIMPLE_TYPE(RigSerialState, RIG_SERIAL)

#define RIG_LOG_MAGIC "RIGUART\0"
#define RIG_LOG_VERSION 2
#define RIG_LOG_HEADER_SIZE 64
#define RIG_LOG_NO_CPU 0xffff

/* Register codes in the log: the UART registers resolved through DLAB. */
enum {
    RIG_REG_THR = 0, RIG_REG_IER, RIG_REG_FCR, RIG_REG_LCR, RIG_REG_MCR,
    RIG_REG_LSR, RIG_REG_MSR, RIG_REG_SCR, RIG_REG_DLL, RIG_REG_DLM,
    RIG_REG_IIR, RIG_REG_RBR,
    RIG_REG_MARKER = 16,
    RIG_REG_NMI = 17,
};

#define RIG_PATTERN_MAX 64
#define RIG_MSI_BASE 0xfee00000ULL
#define RIG_MSI_DM_NMI 0x400

#define RIG_FLAG_READ   0x01
#define RIG_FLAG_DLAB   0x02

#define RIG_HDR_FLAG_LOG_READS 0x01
#define RIG_HDR_FLAG_BAUD_MODEL 0x02

/* Transmit FIFO plus the shift register. */
#define RIG_TX_SLOTS (UART_FIFO_LENGTH + 1)
#define RIG_LSR_THRE 0x20
#define RIG_LSR_TEMT 0x40
#define RIG_IER_THRI 0x02

typedef struct QEMU_PACKED RigLogRecord {
    uint64_t seq;
    uint64_t vtime_ns;
    uint16_t cpu;
    uint8_t reg;
    uint8_t flags;
    uint32_t value;
} RigLogRecord;

typedef struct QEMU_PACKED RigLogHeader {
    char magic[8];
    uint32_t version;
    uint32_t record_size;
    uint32_t header_size;
    uint32_t baudbase;
    uint32_t iobase;
    uint32_t irq;
    uint32_t marker_iobase;
    uint32_t flags;
    /* Version 2: the machine, then the counts written when QEMU ends. */
    uint32_t cpus;
    uint32_t state;             /* RIG_LOG_OPEN, RIG_LOG_CLOSED */
    uint64_t records;           /* accesses logged or meant to be */
    uint32_t lost;              /* of them, not written (a write failed) */
    uint32_t error;             /* errno of the first failed write */
} RigLogHeader;

#define RIG_LOG_OPEN 0
#define RIG_LOG_CLOSED 1

QEMU_BUILD_BUG_ON(sizeof(RigLogRecord) != 24);
QEMU_BUILD_BUG_ON(sizeof(RigLogHeader) != RIG_LOG_HEADER_SIZE);

struct RigSerialState {
    ISADevice parent_obj;

    uint32_t index;
    uint32_t iobase;
    uint32_t isairq;
    uint32_t marker_iobase;
    char *log_path;
    bool log_reads;
    bool baud_model;
    bool log_append;
    uint32_t stop_marker;
    uint32_t slice_ns;

    SerialState state;
    MemoryRegion marker_io;
    int log_fd;
    uint64_t seq;
    off_t log_size;             /* bytes of whole records and header */
    uint32_t log_lost;
    int log_errno;
    Notifier exit_notifier;

    /* Baud model: virtual time at which each queued byte leaves the wire. */
    int64_t tx_done[RIG_TX_SLOTS];
    uint32_t tx_head, tx_count;
    int64_t tx_last_done;
    uint8_t guest_ier;          /* IER as the guest wrote it */
    QEMUTimer *thri_timer;
    QEMUTimer *slice_timer;     /* ends a vCPU's turn every slice_ns */

    /* NMI trigger: armed when nmi_after_thr or nmi_pattern is set. */
    uint64_t nmi_after_thr;
    char *nmi_pattern;
    uint32_t nmi_pattern_offset;
    int32_t nmi_cpu;
    bool nmi_armed;
    uint64_t nmi_thr_count;     /* THR bytes since arming */
    uint32_t nmi_match;         /* pattern bytes matched so far */
    int64_t nmi_countdown;      /* bytes left after the pattern, -1: not found */
};

static const char *const reg_names[] = {
    [RIG_REG_THR] = "THR", [RIG_REG_IER] = "IER", [RIG_REG_FCR] = "FCR",
    [RIG_REG_LCR] = "LCR", [RIG_REG_MCR] = "MCR", [RIG_REG_LSR] = "LSR",
    [RIG_REG_MSR] = "MSR", [RIG_REG_SCR] = "SCR", [RIG_REG_DLL] = "DLL",
    [RIG_REG_DLM] = "DLM", [RIG_REG_IIR] = "IIR", [RIG_REG_RBR] = "RBR",
    [RIG_REG_MARKER] = "MARKER", [RIG_REG_NMI] = "NMI",
};

static void rig_log(RigSerialState *r, uint8_t reg, uint8_t flags,
                    uint32_t value)
{
    RigLogRecord rec;
    int cpu = current_cpu ? current_cpu->cpu_index : -1;

    rec.seq = cpu_to_le64(r->seq++);
    rec.vtime_ns = cpu_to_le64(qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    rec.cpu = cpu_to_le16(cpu < 0 ? RIG_LOG_NO_CPU : cpu);
    rec.reg = reg;
    rec.flags = flags;
    rec.value = cpu_to_le32(value);
    trace_rig_serial_record(le64_to_cpu(rec.seq), cpu,
                            reg < ARRAY_SIZE(reg_names) && reg_names[reg] ?
                            reg_names[reg] : "?", flags, value);
    if (r->log_fd < 0) {
        return;
    }
    if (r->log_errno) {
        r->log_lost++;
        return;
    }
    if (qemu_write_full(r->log_fd, &rec, sizeof(rec)) != sizeof(rec)) {
        /*
         * A full disk, say. The log must not end in a partial record nor
         * go on after a gap: it keeps the records before this one, and
         * the header counts the rest as lost when QEMU ends, so that a
         * reader can tell a cut log from a whole one.
         */
        r->log_errno = errno ? errno : EIO;
        r->log_lost++;
        error_report("rig-serial: writing %s failed: %s; later records are "
                     "counted as lost", r->log_path, strerror(r->log_errno));
        if (ftruncate(r->log_fd, r->log_size) != 0) {
            error_report("rig-serial: cutting %s back to its last whole "
                         "record failed: %s", r->log_path, strerror(errno));
        }
        return;
    }
    r->log_size += sizeof(rec);
}

/* Write the header's counts: state, records, lost, error. */
static void rig_log_counts(RigSerialState *r, uint32_t state)
{
    RigLogHeader hdr;
    const size_t at = offsetof(RigLogHeader, state);
    const size_t len = sizeof(hdr) - at;

    hdr.state = cpu_to_le32(state);
    hdr.records = cpu_to_le64(r->seq);
    hdr.lost = cpu_to_le32(r->log_lost);
    hdr.error = cpu_to_le32(r->log_errno);
    if (pwrite(r->log_fd, (uint8_t *)&hdr + at, len, at) != (ssize_t)len) {
        error_report("rig-serial: writing the counts into %s failed: %s",
                     r->log_path, strerror(errno));
    }
}

static void rig_log_close(RigSerialState *r)
{
    if (r->log_fd < 0) {
        return;
    }
    rig_log_counts(r, RIG_LOG_CLOSED);
    close(r->log_fd);
    r->log_fd = -1;
}

/* QEMU ends (the guest's isa-debug-exit, a shutdown): seal the log. */
static void rig_log_exit_notify(Notifier *n, void *data)
{
    rig_log_close(container_of(n, RigSerialState, exit_notifier));
}

static uint8_t reg_code(SerialState *s, hwaddr addr, bool is_write)
{
    bool dlab = s->lcr & 0x80;

    switch (addr & 7) {
    case 0:
        return dlab ? RIG_REG_DLL : (is_write ? RIG_REG_THR : RIG_REG_RBR);
    case 1:
        return dlab ? RIG_REG_DLM : RIG_REG_IER;
    case 2:
        return is_write ? RIG_REG_FCR : RIG_REG_IIR;
    case 3:
        return RIG_REG_LCR;
    case 4:
        return RIG_REG_MCR;
    case 5:
        return RIG_REG_LSR;
    case 6:
        return RIG_REG_MSR;
    default:
        return RIG_REG_SCR;
    }
}

/* Drop the bytes that have left the wire by now; return how many are left. */
static uint32_t tx_pending(RigSerialState *r, int64_t now)
{
    while (r->tx_count && r->tx_done[r->tx_head] <= now) {
        r->tx_head = (r->tx_head + 1) % RIG_TX_SLOTS;
        r->tx_count--;
    }
    return r->tx_count;
}

static int64_t char_time_ns(SerialState *s)
{
    /* serial.c computes it from the divisor and frame format, in ns. */
    return s->char_transmit_time ? s->char_transmit_time : 86805;
}

static void tx_enqueue(RigSerialState *r, int64_t now)
{
    int64_t start = MAX(now, r->tx_last_done);

    tx_pending(r, now);
    if (r->tx_count == RIG_TX_SLOTS) {
        /* Overrun: a real 16550A loses the byte; we keep timing the rest. */
        r->tx_head = (r->tx_head + 1) % RIG_TX_SLOTS;
        r->tx_count--;
    }
    r->tx_last_done = start + char_time_ns(&r->state);
    r->tx_done[(r->tx_head + r->tx_count) % RIG_TX_SLOTS] = r->tx_last_done;
    r->tx_count++;
}

/* Give the core the guest's IER, holding THRI back while bytes are queued. */
static void sync_core_ier(RigSerialState *r, int64_t now)
{
    SerialState *s = &r->state;
    uint8_t ier = r->guest_ier;
    uint8_t saved_lcr = s->lcr;

    if (r->baud_model && tx_pending(r, now) > 1) {
        ier &= ~RIG_IER_THRI;
        timer_mod(r->thri_timer, r->tx_done[(r->tx_head + r->tx_count - 2) %
                                            RIG_TX_SLOTS]);
    }
    if (s->ier == ier) {
        return;
    }
    s->lcr &= ~0x80;
    serial_io_ops.write(s, 1, ier, 1);
    s->lcr = saved_lcr;
}

static void rig_slice_timer_arm(RigSerialState *r)
{
    if (r->slice_ns) {
        timer_mod(r->slice_timer,
                  qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + r->slice_ns);
    }
}

/* Only the deadline matters: it ends the budget of the running vCPU. */
static void rig_slice_timer_cb(void *opaque)
{
    rig_slice_timer_arm(opaque);
}

static void rig_thri_timer_cb(void *opaque)
{
    RigSerialState *r = opaque;

    sync_core_ier(r, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
}

static void nmi_arm(RigSerialState *r)
{
    r->nmi_thr_count = 0;
    r->nmi_match = 0;
    r->nmi_countdown = -1;
    r->nmi_armed = r->nmi_after_thr ||
                   (r->nmi_pattern && r->nmi_pattern[0] != '\0');
}

static void nmi_fire(RigSerialState *r, int writer)
{
    int target = r->nmi_cpu >= 0 ? r->nmi_cpu : writer;

    r->nmi_armed = false;
    trace_rig_serial_nmi(target, r->nmi_thr_count);
    rig_log(r, RIG_REG_NMI, 0, target < 0 ? RIG_LOG_NO_CPU : target);
    if (target < 0) {
        return;
    }
    /* On the pc machine the APIC ID of vCPU n is n. */
    address_space_stl_le(&address_space_memory,
                         RIG_MSI_BASE | ((uint64_t)target << 12),
                         RIG_MSI_DM_NMI, MEMTXATTRS_UNSPECIFIED, NULL);
}

/* Called after each THR byte: does the armed trigger fire now? */
static void nmi_check(RigSerialState *r, uint8_t byte, int writer)
{
    const char *pat = r->nmi_pattern;
    size_t len = pat ? strlen(pat) : 0;

    if (!r->nmi_armed) {
        return;
    }
    r->nmi_thr_count++;
    if (r->nmi_after_thr && r->nmi_thr_count == r->nmi_after_thr) {
        nmi_fire(r, writer);
        return;
    }
    if (!len) {
        return;
    }
    if (r->nmi_countdown >= 0) {
        if (--r->nmi_countdown == 0) {
            nmi_fire(r, writer);
        }
        return;
    }
    /* Naive restart on mismatch: patterns are short console text. */
    if (byte == (uint8_t)pat[r->nmi_match]) {
        r->nmi_match++;
    } else {
        r->nmi_match = byte == (uint8_t)pat[0];
    }
    if (r->nmi_match == len) {
        r->nmi_countdown = r->nmi_pattern_offset;
        if (r->nmi_countdown == 0) {
            nmi_fire(r, writer);
        }
    }
}

static void rig_serial_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    RigSerialState *r = opaque;
    SerialState *s = &r->state;
    uint8_t flags = (s->lcr & 0x80) ? RIG_FLAG_DLAB : 0;
    uint8_t reg = reg_code(s, addr, true);
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);

    /* Logged before the access takes effect: the log order is the bus order. */
    rig_log(r, reg, flags, val & 0xff);
    if (reg == RIG_REG_IER) {
        r->guest_ier = val & 0x0f;
        sync_core_ier(r, now);
        return;
    }
    serial_io_ops.write(s, addr, val, size);
    if (reg == RIG_REG_THR) {
        if (r->baud_model) {
            tx_enqueue(r, now);
            sync_core_ier(r, now);
        }
        nmi_check(r, val, current_cpu ? current_cpu->cpu_index : -1);
    }
}

/* LSR as the modelled transmitter has it at virtual time now. */
static uint8_t model_lsr(RigSerialState *r, uint8_t lsr, int64_t now)
{
    uint32_t pending = tx_pending(r, now);

    lsr &= ~(RIG_LSR_THRE | RIG_LSR_TEMT);
    if (pending <= 1) {
        lsr |= RIG_LSR_THRE;
    }
    if (pending == 0) {
        lsr |= RIG_LSR_TEMT;
    }
    return lsr;
}

static uint64_t rig_serial_read(void *opaque, hwaddr addr, unsigned size)
{
    RigSerialState *r = opaque;
    SerialState *s = &r->state;
    uint8_t reg = reg_code(s, addr, false);
    uint8_t flags = RIG_FLAG_READ | ((s->lcr & 0x80) ? RIG_FLAG_DLAB : 0);
    uint64_t val = serial_io_ops.read(s, addr, size);

    if (reg == RIG_REG_IER) {
        val = r->guest_ier;
    } else if (reg == RIG_REG_LSR && r->baud_model) {
        val = model_lsr(r, val, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL));
    }
    if (r->log_reads && (reg == RIG_REG_LSR || reg == RIG_REG_IIR)) {
        rig_log(r, reg, flags, val & 0xff);
    }
    return val;
}

static const MemoryRegionOps rig_serial_io_ops = {
    .read = rig_serial_read,
    .write = rig_serial_write,
    .valid = {
        .unaligned = 1,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 1,
    },
    .endianness = DEVICE_LITTLE_ENDIAN,
};

static uint64_t rig_marker_read(void *opaque, hwaddr addr, unsigned size)
{
    return 0;
}

/*
 * Queued vCPU work: runs between TBs, guest state committed, BQL held.
 * Under -icount all vCPUs live in one round-robin thread, so with
 * current_cpu cleared vm_stop() takes its synchronous path: every vCPU
 * stops and the virtual clock with it before the BQL is dropped, so no
 * other vCPU runs on and no sleep=off warp moves time by a host-timed
 * amount.  Only used under -icount (no other vCPU thread to wait for).
 */
static void rig_stop_work(CPUState *cpu, run_on_cpu_data unused)
{
    CPUState *self = current_cpu;

    /*
     * A timer due at this very instant may or may not have run yet: the
     * main loop runs virtual timers whenever it gets the BQL.  Run them
     * now, so that the saved state does not depend on when that was.
     */
    qemu_clock_run_timers(QEMU_CLOCK_VIRTUAL);
    current_cpu = NULL;
    vm_stop(RUN_STATE_PAUSED);
    current_cpu = self;
}

static void rig_marker_write(void *opaque, hwaddr addr, uint64_t val,
                             unsigned size)
{
    RigSerialState *r = opaque;

    trace_rig_serial_marker(current_cpu ? current_cpu->cpu_index : -1, val);
    rig_log(r, RIG_REG_MARKER, 0, val);
    if (!r->stop_marker || val != r->stop_marker || !current_cpu) {
        return;
    }
    trace_rig_serial_stop(current_cpu->cpu_index, r->seq);
    if (icount_enabled()) {
        async_run_on_cpu(current_cpu, rig_stop_work, RUN_ON_CPU_NULL);
    } else {
        vm_stop(RUN_STATE_PAUSED);  /* multi-threaded TCG: asynchronous */
    }
}

static const MemoryRegionOps rig_marker_ops = {
    .read = rig_marker_read,
    .write = rig_marker_write,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
    .endianness = DEVICE_LITTLE_ENDIAN,
};

static void rig_open_log(RigSerialState *r, Error **errp)
{
    RigLogHeader hdr = { 0 };

    r->log_fd = -1;
    if (!r->log_path) {
        return;
    }
    if (r->log_append) {
        /*
         * A restored VM: the header and the records so far are there. Not
         * O_APPEND: the counts are written into the header with pwrite().
         */
        r->log_fd = qemu_create(r->log_path, O_WRONLY | O_BINARY, 0644, errp);
        if (r->log_fd < 0) {
            return;
        }
        r->log_size = lseek(r->log_fd, 0, SEEK_END);
        rig_log_counts(r, RIG_LOG_OPEN);
        return;
    }
    r->log_fd = qemu_create(r->log_path, O_WRONLY | O_TRUNC | O_BINARY, 0644,
                            errp);
    if (r->log_fd < 0) {
        return;
    }
    r->log_size = sizeof(hdr);
    hdr.cpus = cpu_to_le32(MACHINE(qdev_get_machine())->smp.cpus);
    hdr.state = cpu_to_le32(RIG_LOG_OPEN);
    memcpy(hdr.magic, RIG_LOG_MAGIC, sizeof(hdr.magic));
    hdr.version = cpu_to_le32(RIG_LOG_VERSION);
    hdr.record_size = cpu_to_le32(sizeof(RigLogRecord));
    hdr.header_size = cpu_to_le32(sizeof(RigLogHeader));
    hdr.baudbase = cpu_to_le32(r->state.baudbase);
    hdr.iobase = cpu_to_le32(r->iobase);
    hdr.irq = cpu_to_le32(r->isairq);
    hdr.marker_iobase = cpu_to_le32(r->marker_iobase);
    hdr.flags = cpu_to_le32((r->log_reads ? RIG_HDR_FLAG_LOG_READS : 0) |
                            (r->baud_model ? RIG_HDR_FLAG_BAUD_MODEL : 0));
    if (qemu_write_full(r->log_fd, &hdr, sizeof(hdr)) != sizeof(hdr)) {
        error_setg_errno(errp, errno, "rig-serial: cannot write %s",
                         r->log_path);
        close(r->log_fd);
        r->log_fd = -1;
    }
}

static void rig_serial_realize(DeviceState *dev, Error **errp)
{
    ISADevice *isadev = ISA_DEVICE(dev);
    RigSerialState *r = RIG_SERIAL(dev);
    SerialState *s = &r->state;
    Error *err = NULL;

    if (r->index >= MAX_ISA_SERIAL_PORTS) {
        error_setg(errp, "rig-serial: index must be below %d",
                   MAX_ISA_SERIAL_PORTS);
        return;
    }
    s->irq = isa_get_irq(isadev, r->isairq);
    /*
     * Every THR byte reaches the chardev (and console.log), in order; a
     * slow reader stalls the vCPU, never the transcript or virtual time.
     */
    s->xmit_blocking = true;
    if (!qdev_realize(DEVICE(s), NULL, errp)) {
        return;
    }
    qdev_set_legacy_instance_id(dev, r->iobase, 3);
    r->thri_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rig_thri_timer_cb, r);
    r->slice_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, rig_slice_timer_cb, r);
    rig_slice_timer_arm(r);
    rig_open_log(r, &err);
    if (err) {
        error_propagate(errp, err);
        return;
    }
    r->exit_notifier.notify = rig_log_exit_notify;
    qemu_add_exit_notifier(&r->exit_notifier);
    memory_region_init_io(&s->io, OBJECT(r), &rig_serial_io_ops, r,
                          "rig-serial", 8);
    isa_register_ioport(isadev, &s->io, r->iobase);
    memory_region_init_io(&r->marker_io, OBJECT(r), &rig_marker_ops, r,
                          "rig-serial-marker", 4);
    isa_register_ioport(isadev, &r->marker_io, r->marker_iobase);
}

/*
 * A warm reset (a guest reboot after a panic, S10's ramoops read-back)
 * empties the transmitter and forgets the guest's IER, as the core's own
 * reset does; the log and its sequence numbers go on across the reset.
 */
static void rig_serial_reset(DeviceState *dev)
{
    RigSerialState *r = RIG_SERIAL(dev);

    timer_del(r->thri_timer);
    r->tx_head = 0;
    r->tx_count = 0;
    r->tx_last_done = 0;
    r->guest_ier = 0;
    trace_rig_serial_reset(r->seq);
}

static void rig_serial_unrealize(DeviceState *dev)
{
    RigSerialState *r = RIG_SERIAL(dev);

    timer_free(r->thri_timer);
    timer_free(r->slice_timer);
    qemu_remove_exit_notifier(&r->exit_notifier);
    rig_log_close(r);
}

static void rig_serial_build_aml(AcpiDevAmlIf *adev, Aml *scope)
{
    RigSerialState *r = RIG_SERIAL(adev);
    Aml *crs = aml_resource_template();
    Aml *dev;

    aml_append(crs, aml_io(AML_DECODE16, r->iobase, r->iobase, 0x00, 0x08));
    aml_append(crs, aml_irq_no_flags(r->isairq));
    dev = aml_device("COM%d", r->index + 1);
    aml_append(dev, aml_name_decl("_HID", aml_eisaid("PNP0501")));
    aml_append(dev, aml_name_decl("_UID", aml_int(r->index + 1)));
    aml_append(dev, aml_name_decl("_STA", aml_int(0xf)));
    aml_append(dev, aml_name_decl("_CRS", crs));
    aml_append(scope, dev);
}

static const VMStateDescription vmstate_rig_serial = {
    .name = "rig-serial",
    .version_id = 2,
    .minimum_version_id = 2,
    .fields = (VMStateField[]) {
        VMSTATE_STRUCT(state, RigSerialState, 0, vmstate_serial, SerialState),
        VMSTATE_UINT64(seq, RigSerialState),
        VMSTATE_INT64_ARRAY(tx_done, RigSerialState, RIG_TX_SLOTS),
        VMSTATE_UINT32(tx_head, RigSerialState),
        VMSTATE_UINT32(tx_count, RigSerialState),
        VMSTATE_INT64(tx_last_done, RigSerialState),
        VMSTATE_UINT8(guest_ier, RigSerialState),
        VMSTATE_TIMER_PTR(thri_timer, RigSerialState),
        VMSTATE_TIMER_PTR(slice_timer, RigSerialState),
        VMSTATE_UINT64(nmi_after_thr, RigSerialState),
        VMSTATE_UINT32(nmi_pattern_offset, RigSerialState),
        VMSTATE_INT32(nmi_cpu, RigSerialState),
        VMSTATE_BOOL(nmi_armed, RigSerialState),
        VMSTATE_UINT64(nmi_thr_count, RigSerialState),
        VMSTATE_UINT32(nmi_match, RigSerialState),
        VMSTATE_INT64(nmi_countdown, RigSerialState),
        VMSTATE_END_OF_LIST()
    }
};

static Property rig_serial_properties[] = {
    DEFINE_PROP_UINT32("index", RigSerialState, index, 0),
    DEFINE_PROP_UINT32("iobase", RigSerialState, iobase, 0x3f8),
    DEFINE_PROP_UINT32("irq", RigSerialState, isairq, 4),
    DEFINE_PROP_UINT32("marker-iobase", RigSerialState, marker_iobase, 0x4f0),
    DEFINE_PROP_STRING("log", RigSerialState, log_path),
    DEFINE_PROP_BOOL("log-reads", RigSerialState, log_reads, false),
    DEFINE_PROP_BOOL("baud-model", RigSerialState, baud_model, true),
    DEFINE_PROP_BOOL("log-append", RigSerialState, log_append, false),
    DEFINE_PROP_UINT32("stop-marker", RigSerialState, stop_marker, 0),
    DEFINE_PROP_UINT32("slice-ns", RigSerialState, slice_ns, 0),
    DEFINE_PROP_END_OF_LIST(),
};

static void rig_serial_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    AcpiDevAmlIfClass *adevc = ACPI_DEV_AML_IF_CLASS(klass);

    dc->realize = rig_serial_realize;
    dc->unrealize = rig_serial_unrealize;
    dc->reset = rig_serial_reset;
    dc->vmsd = &vmstate_rig_serial;
    dc->desc = "16550A UART that logs every register access (printk-rig)";
    adevc->build_dev_aml = rig_serial_build_aml;
    device_class_set_props(dc, rig_serial_properties);
    set_bit(DEVICE_CATEGORY_INPUT, dc->categories);
}

static void nmi_get_after(Object *obj, Visitor *v, const char *name,
                          void *opaque, Error **errp)
{
    visit_type_uint64(v, name, &RIG_SERIAL(obj)->nmi_after_thr, errp);
}

static void nmi_set_after(Object *obj, Visitor *v, const char *name,
                          void *opaque, Error **errp)
{
    RigSerialState *r = RIG_SERIAL(obj);

    if (visit_type_uint64(v, name, &r->nmi_after_thr, errp)) {
        nmi_arm(r);
    }
}

static char *nmi_get_pattern(Object *obj, Error **errp)
{
    return g_strdup(RIG_SERIAL(obj)->nmi_pattern ?: "");
}

static void nmi_set_pattern(Object *obj, const char *value, Error **errp)
{
    RigSerialState *r = RIG_SERIAL(obj);

    if (strlen(value) > RIG_PATTERN_MAX) {
        error_setg(errp, "nmi-pattern longer than %d bytes", RIG_PATTERN_MAX);
        return;
    }
    g_free(r->nmi_pattern);
    r->nmi_pattern = g_strdup(value);
    nmi_arm(r);
}

static void nmi_get_i32(Object *obj, Visitor *v, const char *name,
                        void *opaque, Error **errp)
{
    visit_type_int32(v, name, opaque, errp);
}

static void nmi_set_i32(Object *obj, Visitor *v, const char *name,
                        void *opaque, Error **errp)
{
    visit_type_int32(v, name, opaque, errp);
}

static void rig_serial_instance_init(Object *o)
{
    RigSerialState *r = RIG_SERIAL(o);

    /* Not qdev properties: these stay settable after realize (qom-set). */
    r->nmi_cpu = -1;
    r->nmi_countdown = -1;
    object_property_add(o, "nmi-after-thr", "uint64", nmi_get_after,
                        nmi_set_after, NULL, NULL);
    object_property_add_str(o, "nmi-pattern", nmi_get_pattern,
                            nmi_set_pattern);
    object_property_add_uint32_ptr(o, "nmi-pattern-offset",
                                   &r->nmi_pattern_offset,
                                   OBJ_PROP_FLAG_READWRITE);
    object_property_add(o, "nmi-cpu", "int32", nmi_get_i32, nmi_set_i32,
                        NULL, &r->nmi_cpu);
    r->log_fd = -1;
    object_initialize_child(o, "serial", &r->state, TYPE_SERIAL);
    qdev_alias_all_properties(DEVICE(&r->state), o);
}

static const TypeInfo rig_serial_info = {
    .name          = TYPE_RIG_SERIAL,
    .parent        = TYPE_ISA_DEVICE,
    .instance_size = sizeof(RigSerialState),
    .instance_init = rig_serial_instance_init,
    .class_init    = rig_serial_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_ACPI_DEV_AML_IF },
        { },
    },
};

static void rig_serial_register_types(void)
{
    type_register_static(&rig_serial_info);
}

type_init(rig_serial_register_types)
