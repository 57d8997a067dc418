"""QEMU command line and kernel command line for one rig boot."""
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from rig import paths, protocol, rundir

# ttyS0 carries the console under test; ttyS1 is the side channel for evidence.
BASE_CMDLINE = ("console=ttyS0,115200 panic=-1 printk.devkmsg=on "
                "rig.side=/dev/ttyS1")
ISA_DEBUG_EXIT = f"isa-debug-exit,iobase={protocol.DEBUG_EXIT_PORT:#x},iosize=0x04"
# ttyS0: the instrumented UART (qemu-devices/); ttyS1: a stock 16550A.
CONSOLE_UART = "rig-serial,id=uart0,chardev=con0,index=0,iobase=0x3f8,irq=4,log={log}"
CONSOLE_UART_QOM = "/machine/peripheral/uart0"   # for qom-set of its NMI trigger
SIDE_UART = "isa-serial,chardev=side0,index=1,iobase=0x2f8,irq=3"
# The second console UART (ttyS2's port, an IRQ of its own and a marker port
# of its own): the test module's nbcon console writes it (second_console=).
# The 8250 driver finds it as ttyS2 and probes it at boot, but nothing
# opens ttyS2: after the probe only the module's console writes it. (With
# fewer 8250 ports than UARTs, ACPI's order would give it ttyS0's line.)
SECOND_UART = (f"rig-serial,id=uart2,chardev=con2,index=2,iobase={protocol.UART2_BASE:#x},"
               f"irq=5,marker-iobase={protocol.UART2_MARKER_PORT:#x},log={{log}}")
# QEMU's seccomp filter: no obsolete system calls, no setuid, no fork or
# exec (the snapshot's migration goes through a passed fd), no scheduler or
# CPU-affinity changes; all of it is what TCG and the rig's devices allow.
SANDBOX = ["-sandbox", "on,obsolete=deny,elevateprivileges=deny,spawn=deny,"
           "resourcecontrol=deny"]
UNIX_PATH_MAX = 108          # sun_path of struct sockaddr_un, NUL included
# A boot's clock. HOST: the guest's time is the host's, and a run depends on
# how the host schedules QEMU. ICOUNT: instruction counting drives virtual
# time, the RTC follows it, so an SMP run repeats byte for byte (see
# docs/architecture.md, Determinism).
HOST_CLOCK, ICOUNT_CLOCK = "host", "icount"
CLOCKS = (HOST_CLOCK, ICOUNT_CLOCK)
ICOUNT_ARGS = ["-icount", "shift={shift},sleep=off,align=off",
               "-rtc", "base=2000-01-01T00:00:00,clock=vm"]
# 2^N ns of virtual time per instruction (docs/architecture.md, "Deterministic
# mode": chosen by measurement).
DEFAULT_ICOUNT_SHIFT = 4
# Under -icount the vCPUs run one at a time on one virtual clock: rig-serial
# ends each vCPU's turn this often, so that the time between two events of
# one vCPU does not include a whole turn of the other (up to a guest tick).
VCPU_SLICE_NS = 200_000


@dataclass
class MachineConfig:
    qemu: Path
    kernel: Path
    initrd: Path
    run_dir: Path
    cmdline: str = ""           # appended to BASE_CMDLINE
    smp: int = 2
    memory_mb: int = 256
    accel: str = "tcg"          # "tcg" or "kvm"
    clock: str = HOST_CLOCK     # HOST_CLOCK or ICOUNT_CLOCK
    icount_shift: int = 0
    baud_model: bool = True     # rig-serial times THRE/TEMT like a real UART
    uart_props: Dict[str, str] = field(default_factory=dict)  # more rig-serial properties
    second_uart: bool = False   # a second rig-serial for the module's second console
    warm_reset: bool = False    # let a guest reboot reset the machine instead of ending QEMU
    extra_args: List[str] = field(default_factory=list)
    # Snapshot restore (rig/vm/snapshot.py): the saved VM to load instead of
    # booting (the logs are then appended to), and the file of parameters
    # init reads from fw_cfg.
    restore: str = ""
    fw_cfg_args: str = ""
    # The firmware directory (rig.artifacts.firmware's cache entry); None:
    # the system's (paths.FIRMWARE_DIRS), for machines of the tests only.
    firmware: Optional[Path] = None

    @property
    def run(self) -> rundir.RunDir:
        return rundir.RunDir(self.run_dir)

    @property
    def qmp_socket(self) -> Path:
        return self.socket("qmp")

    def socket(self, name: str) -> Path:
        """A unix socket in the run directory (0700), unless that path is too
        long (108 bytes with the NUL): then a short one named after it in the
        user's private runtime directory (rig.rundir), never in /tmp."""
        path = self.run_dir / f"{name}.sock"
        if len(str(path).encode()) < UNIX_PATH_MAX:
            return path
        digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
        return rundir.runtime_dir() / f"{name}-{digest}.sock"


def kernel_cmdline(extra: str) -> str:
    return f"{BASE_CMDLINE} {extra}".strip()


def second_uart_args(cfg: MachineConfig) -> List[str]:
    if not cfg.second_uart:
        return []
    return ["-chardev", f"file,id=con2,path={cfg.run.console2_log}" +
            (",append=on" if cfg.restore else ""),
            "-device", SECOND_UART.format(log=cfg.run.uart2_log) +
            ("" if cfg.baud_model else ",baud-model=off") +
            (",log-append=on" if cfg.restore else "")]


def build_argv(cfg: MachineConfig, firmware_dirs: Optional[Sequence[Path]] = None) -> List[str]:
    if cfg.accel not in ("tcg", "kvm"):
        raise ValueError(f"accel must be tcg or kvm, not {cfg.accel!r}")
    if cfg.clock not in CLOCKS:
        raise ValueError(f"clock must be one of {', '.join(CLOCKS)}, not {cfg.clock!r}")
    if cfg.clock == ICOUNT_CLOCK and cfg.accel != "tcg":
        raise ValueError("the icount clock needs TCG, not KVM")
    for path in (cfg.run_dir, cfg.qmp_socket):
        if "," in str(path):        # rig.rundir.check_room names it first for a boot
            raise rundir.RunDirError(f"{path}: a comma in a path QEMU takes as an option value")
    argv = [str(cfg.qemu)]
    if firmware_dirs is None:
        firmware_dirs = [cfg.firmware] if cfg.firmware else paths.FIRMWARE_DIRS
    for d in firmware_dirs:
        argv += ["-L", str(d)]
    argv += [
        "-M", "pc", "-accel", cfg.accel, "-cpu", "qemu64" if cfg.accel == "tcg" else "host",
        "-smp", str(cfg.smp), "-m", f"{cfg.memory_mb}M",
        "-nodefaults", "-no-user-config", "-display", "none", "-vga", "none", *SANDBOX,
        "-chardev", f"stdio,id=con0,signal=off,logfile={cfg.run.console_log},"
        f"logappend={'on' if cfg.restore else 'off'}",
        "-device", CONSOLE_UART.format(log=cfg.run.uart_log) +
        ("" if cfg.baud_model else ",baud-model=off") +
        (",log-append=on" if cfg.restore else "") +
        (f",slice-ns={VCPU_SLICE_NS}" if cfg.clock == ICOUNT_CLOCK else "") +
        "".join(f",{k}={v}" for k, v in sorted(cfg.uart_props.items())),
        "-chardev", f"file,id=side0,path={cfg.run.side_log}" + (",append=on" if cfg.restore else ""),
        "-device", SIDE_UART,
        *second_uart_args(cfg),
        "-device", ISA_DEBUG_EXIT,
        "-device", "pvpanic",
        "-action", "panic=none",
        "-qmp", f"unix:{cfg.qmp_socket},server=on,wait=off",
        "-kernel", str(cfg.kernel), "-initrd", str(cfg.initrd),
        "-append", kernel_cmdline(cfg.cmdline),
    ]
    if not cfg.warm_reset:
        argv.append("-no-reboot")
    if cfg.clock == ICOUNT_CLOCK:
        argv += [a.format(shift=cfg.icount_shift) for a in ICOUNT_ARGS]
    if cfg.fw_cfg_args:
        argv += ["-fw_cfg", f"name={protocol.SNAPSHOT_ARGS_FILE},file={cfg.fw_cfg_args}"]
    if cfg.restore:
        argv += ["-incoming", "defer"]
    return argv + list(cfg.extra_args)
