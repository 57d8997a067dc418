"""The boot options `rig boot` and pytest share, declared once: each is
registered with the same name, choices and default on an argparse parser
(add_to(parser.add_argument)) and on pytest's option group
(add_to(group.addoption)); apply() makes the kernel and backend they choose
the configuration (rig.config) of the process and its children."""
from typing import Any, Callable

from rig.vm import backend
from rig.vm.qemu_argv import CLOCKS, DEFAULT_ICOUNT_SHIFT

OPTIONS = (
    (("--kernel",), dict(
        metavar="BZIMAGE",
        help="a kernel image of your own (flavor 'custom'); the test module is built "
             "against --kernel-build")),
    (("--kernel-build",), dict(
        metavar="DIR",
        help="build directory of --kernel, with .config and Module.symvers (default: the "
             "tree above arch/x86/boot/bzImage)")),
    (("--clock",), dict(
        choices=CLOCKS, default=None,
        help="the boots' clock: host (real time) or icount (instruction-counted virtual "
             "time: byte-identical runs); default: each scenario's own, host for a plain "
             "boot")),
    (("--icount-shift",), dict(
        type=int, default=None, metavar="N",
        help="on the icount clock, 2^N ns of virtual time per instruction (default: the "
             f"scenario's, else {DEFAULT_ICOUNT_SHIFT})")),
    (("--backend",), dict(
        choices=backend.BACKENDS, default=None,
        help="what starts QEMU: direct (the harness, the default) or libvirt (libvirtd, "
             "from a transient domain; `make libvirtd` starts it)")),
    (("--libvirt-uri",), dict(
        action="append", metavar="URI",
        help="libvirt URI for --backend libvirt (default qemu:///system); repeat it to "
             "spread pytest-xdist workers over several hosts")),
    (("--hosts",), dict(
        metavar="FILE",
        help="a fleet of libvirt hosts, one `NAME URI [slots=N] [lock=host|machine]` per "
             "line (docs/fleet.md); implies --backend libvirt")),
    (("--host-slots",), dict(
        type=int, metavar="N",
        help="boots each --libvirt-uri host runs at once (default 1)")),
    (("--snapshot",), dict(
        choices=["on", "off"], default="on",
        help="start boots from the VM saved at init's snapshot point where they allow it "
             "(on, the default; docs/architecture.md, Snapshot restore), or boot (off)")),
    (("--lock-timeout",), dict(
        type=float, metavar="SECONDS",
        help="a boot that waits longer than this for the host lock fails, naming who holds "
             "it (default: wait)")),
)


def add_to(add_option: Callable[..., Any]) -> None:
    for flags, kwargs in OPTIONS:
        add_option(*flags, **kwargs)


def apply(option: Callable[[str], Any]) -> bool:
    """Set up the kernel and backend the options choose; option(name) reads
    one (argparse's dest name). True if --kernel chose a kernel."""
    if option("backend") or option("libvirt_uri") or option("hosts"):
        backend.choose(option("backend") or "libvirt", option("libvirt_uri") or [],
                       option("hosts"), option("host_slots"))
    if option("kernel"):
        from rig.artifacts import custom
        custom.use(option("kernel"), option("kernel_build"))
        return True
    return False


def icount_shift(option: Callable[[str], Any], own: Any = None) -> int:
    """The icount shift of a boot: --icount-shift, else its own, else the default."""
    forced = option("icount_shift")
    if forced is not None:
        return forced
    return DEFAULT_ICOUNT_SHIFT if own is None else own
