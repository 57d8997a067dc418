"""The guest/host protocol, host side: the I/O ports, values and framing
that rig-init and the rigprintk module share with the harness. The guest's
side is rig/guest/protocol.h; rig/tests/test_protocol.py checks that the two
say the same."""

# isa-debug-exit: QEMU exits with status (value << 1) | 1.
DEBUG_EXIT_PORT = 0xF4
EXIT_OK = 0x10
EXIT_FAIL = 0x11

# rig-serial's marker ports: a 32-bit write is a MARKER record in the log.
MARKER_PORT = 0x4F0             # of the console UART, ttyS0
UART2_BASE = 0x3E8              # the second instrumented UART
UART2_MARKER_PORT = 0x4F8

# Markers: the top four bits say what, the rest which call or CPU.
MARK_BEFORE, MARK_AFTER = 0x1, 0x2      # << 28: before and after a tagged printk()
MARK_RUN_BEGIN = 0x30000000
MARK_RUN_END = 0x40000000
MARK_SPIN_BEGIN = 0x50000000
MARK_SPIN_END = 0x60000000
MARK_SELF_NMI = 0x70000000
MARK_DEADLINE = 0x80000000       # end of the quiet wait after the floods (liveness_ms)
MARK_NMI_ENTER = 0x90000000      # around every local NMI on a vCPU (nmi_markers)
MARK_NMI_EXIT = 0xA0000000

# Snapshot boots: rig-init writes the stop marker ("SNAP") when it is ready
# to be saved, and after the restore reads its arguments from the fw_cfg file.
SNAPSHOT_STOP_MARKER = 0x534E4150
SNAPSHOT_ARGS_FILE = "opt/rig/args"

# The side channel (ttyS1): "@@rig begin NAME LEN\n" <LEN bytes>
# "\n@@rig end NAME\n" per section and, last, "@@rig status CODE\n".
SIDE_BEGIN = "@@rig begin"
SIDE_END = "@@rig end"
SIDE_STATUS = "@@rig status"
