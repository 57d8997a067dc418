/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guest/host protocol of printk-rig: the I/O ports, values and framing
 * that the guest's programs (rig-init, the rigprintk module) and the host's
 * harness agree on. The guest's C code includes this file; the host's
 * Python side is rig/protocol.py, checked against it by
 * rig/tests/test_protocol.py. Only #defines of numbers and strings here.
 */
#ifndef RIG_PROTOCOL_H
#define RIG_PROTOCOL_H

/* isa-debug-exit: QEMU exits with status (value << 1) | 1. */
#define RIG_DEBUG_EXIT_PORT		0xf4
#define RIG_EXIT_OK			0x10
#define RIG_EXIT_FAIL			0x11

/* rig-serial's marker ports: a 32-bit write is a MARKER record in the log. */
#define RIG_MARKER_PORT			0x4f0	/* of the console UART, ttyS0 */
#define RIG_UART2_BASE			0x3e8	/* the second instrumented UART */
#define RIG_UART2_MARKER_PORT		0x4f8

/* Markers: the top four bits say what, the rest which call or CPU. */
#define RIG_MARK_BEFORE			0x1	/* << 28: before a tagged printk() */
#define RIG_MARK_AFTER			0x2	/* << 28: after it */
#define RIG_MARK_RUN_BEGIN		0x30000000
#define RIG_MARK_RUN_END		0x40000000
#define RIG_MARK_SPIN_BEGIN		0x50000000
#define RIG_MARK_SPIN_END		0x60000000
#define RIG_MARK_SELF_NMI		0x70000000
#define RIG_MARK_DEADLINE		0x80000000	/* end of the quiet wait (liveness_ms) */
#define RIG_MARK_NMI_ENTER		0x90000000	/* around every local NMI (nmi_markers) */
#define RIG_MARK_NMI_EXIT		0xa0000000

/*
 * Snapshot boots: rig-init writes this marker ("SNAP") when it is ready to
 * be saved, and after the restore reads its arguments from this fw_cfg file.
 */
#define RIG_SNAPSHOT_STOP_MARKER	0x534e4150
#define RIG_SNAPSHOT_ARGS_FILE		"opt/rig/args"

/*
 * The side channel (ttyS1): sections framed as
 *   "@@rig begin NAME LEN\n" <LEN bytes> "\n@@rig end NAME\n"
 * and, last, "@@rig status CODE\n".
 */
#define RIG_SIDE_BEGIN			"@@rig begin"
#define RIG_SIDE_END			"@@rig end"
#define RIG_SIDE_STATUS			"@@rig status"

#endif
