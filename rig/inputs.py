"""A boot request checked before anything is built or started.

Each check names the bad value and the values it may take, so a typo costs
a second instead of a module build, an initramfs and a QEMU start that ends
in a confusing guest error. The step names and parameters rig-init reads,
and the test module's parameters with their types, are read from their C
sources (rig/guest/), so the checks cannot drift from what the guest
accepts; the narrower ranges of some module parameters are listed here.
"""
import re
import shlex
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from rig import paths
from rig.faults import RigFault

# The test module's CPU masks are unsigned longs.
MAX_SMP = 64
# Guest RAM a boot needs besides its images: with the kernel image once (it
# is decompressed) and the initramfs twice (the archive and its unpacked
# files) on top. Measured on 2026-12-06 (patched, 1.6 MiB image, 5.7 MiB
# initramfs): 36 MiB reach init, 34 MiB do not ("No working init found");
# this rule asks 38.
BASE_MEMORY_MB = 24


class BadInput(RigFault, ValueError):
    """The request cannot give a meaningful run; exit 2, the message says why."""


# -- what the guest accepts, read from its sources ---------------------------
STEP_RE = re.compile(r'!strcmp\(name, "(\w+)"\)')
INIT_PARAM_RE = re.compile(r'\b(?:param|flag)\("(\w+)"')
MODULE_PARAM_RE = re.compile(
    r"\bmodule_param(?:_named)?\((\w+),\s*(?:\w+,\s*)?(\w+),\s*\w+\)")


@lru_cache(maxsize=None)
def init_steps() -> Tuple[str, ...]:
    """The step names rig-init's run_step() knows."""
    return tuple(STEP_RE.findall((paths.GUEST_SRC / "init.c").read_text()))


@lru_cache(maxsize=None)
def section_steps() -> Tuple[str, ...]:
    """The steps that send a side-channel section (their function calls
    side_section or run_capture): a section sent twice makes the side
    channel unreadable, so each of these may run once."""
    src = (paths.GUEST_SRC / "init.c").read_text()
    start = src.index("static int run_step(")
    body = src[start:src.index("\n}\n", start)]
    found = []
    for name, captured, fn in STEP_CALL_RE.findall(body):
        m = re.search(r"\n(?:static )?[\w ]+\*?\b" + fn + r"\([^)]*\)\n\{(.*?)\n\}\n", src,
                      re.S) if fn else None
        if captured or (m and SENDS_RE.search(m.group(1))):
            found.append(name)
    return tuple(found)


STEP_CALL_RE = re.compile(r'!strcmp\(name, "(\w+)"\)\)\s*(?:\{.*?(run_capture)\(|'
                          r'(?:return )?(\w+)\(\))', re.S)
SENDS_RE = re.compile(r"\bside_section\(|\brun_capture\(")


@lru_cache(maxsize=None)
def init_params() -> Tuple[str, ...]:
    """The rig.NAME parameters rig-init reads."""
    return tuple(sorted(set(INIT_PARAM_RE.findall((paths.GUEST_SRC / "init.c").read_text()))))


@lru_cache(maxsize=None)
def module_params() -> Dict[str, str]:
    """rigprintk.NAME -> its kernel parameter type (uint, int, ulong, bool, charp)."""
    out: Dict[str, str] = {}
    for src in sorted((paths.GUEST_SRC / "module").glob("*.c")):
        out.update(MODULE_PARAM_RE.findall(src.read_text()))
    return out


# Narrower than their types: loglevels, CPU numbers and masks, choices.
LEVEL_PARAMS = ("flood_level", "flood_emerg_level", "nmi_level", "irq_level")
CPU_PARAMS = ("printer_cpu", "spin_cpu", "crash_cpu")      # -1: none
MASK_PARAMS = ("flood_cpus", "nmi_cpus", "unknown_nmi_cpus", "irq_cpus")
CHOICES = {
    "crash": ("none", "panic-task", "panic-irq", "panic-nmi", "oops-task", "oops-irq",
              "oops-nmi"),
    "second_console": ("none", "early", "late"),
}
TYPE_RANGES = {"uint": (0, 2**32 - 1), "int": (-2**31, 2**31 - 1), "ulong": (0, 2**64 - 1)}
BOOL_VALUES = ("0", "1", "y", "n", "Y", "N")


def parse_int(text: str) -> Optional[int]:
    """The kernel's kstrto*() with base 0: decimal, 0x hex or 0 octal."""
    try:
        return int(text, 0) if not re.fullmatch(r"-?0\d+", text) else int(text, 8)
    except ValueError:
        return None


def check_module_param(name: str, value: str, smp: int) -> Optional[str]:
    """Why rigprintk.NAME=VALUE would be refused or meaningless; None if fine."""
    kinds = module_params()
    if name not in kinds:
        return (f"rigprintk.{name}: the test module has no such parameter; it has: "
                + ", ".join(sorted(kinds)))
    kind = kinds[name]
    if kind == "bool":
        if value not in BOOL_VALUES:
            return f"rigprintk.{name}={value}: a bool is one of {', '.join(BOOL_VALUES)}"
        return None
    if kind == "charp":
        if name in CHOICES and value not in CHOICES[name]:
            return f"rigprintk.{name}={value}: one of {', '.join(CHOICES[name])}"
        return None
    number = parse_int(value)
    low, high = TYPE_RANGES.get(kind, (None, None))
    if number is None or low is None or not low <= number <= high:
        return f"rigprintk.{name}={value}: a {kind} from {low} to {high}"
    if name in LEVEL_PARAMS and not 0 <= number <= 7:
        return f"rigprintk.{name}={value}: a loglevel from 0 (EMERG) to 7 (DEBUG)"
    if name in CPU_PARAMS and not -1 <= number < smp:
        return f"rigprintk.{name}={value}: a CPU from 0 to {smp - 1} ({smp} vCPUs), or -1"
    if name in MASK_PARAMS and number >> smp:
        return (f"rigprintk.{name}={value}: a mask of CPUs 0 to {smp - 1} "
                f"(below {1 << smp:#x}; {smp} vCPUs)")
    return None


def check_init_param(name: str, value: str) -> Optional[str]:
    if name not in init_params():
        return (f"rig.{name}: rig-init reads no such parameter; it reads: "
                + ", ".join(init_params()))
    if name == "steps":
        unknown = [s for s in value.split(",") if s not in init_steps()]
        if unknown:
            return (f"rig.steps={value}: no step {', '.join(map(repr, unknown))}; "
                    f"the steps are: {', '.join(init_steps())}")
        twice = sorted({s for s in value.split(",")
                        if s in section_steps() and value.split(",").count(s) > 1})
        if twice:
            return (f"rig.steps={value}: step {', '.join(map(repr, twice))} twice; it sends "
                    f"a side-channel section, which a run holds once (steps that do: "
                    f"{', '.join(section_steps())})")
    if name in ("sleep_ms", "line_len", "line_prefix", "follow_delay_us", "printk_delay"):
        number = parse_int(value)
        if number is None or number < 0:
            return f"rig.{name}={value}: a number from 0 up"
    if name == "printk" and not re.fullmatch(r"\d+(:\d+){0,4}", value):
        return f"rig.printk={value}: up to five loglevels separated by ':', e.g. 7:4:1:7"
    return None


def cmdline_params(cmdline: str) -> Iterable[Tuple[str, str, str]]:
    """(prefix, name, value) of every rig.* and rigprintk.* parameter."""
    for word in shlex.split(cmdline):
        m = re.fullmatch(r"(rig|rigprintk)\.(\w+)(?:=(.*))?", word)
        if m:
            yield m[1], m[2], m[3] if m[3] is not None else ""


def memory_problem(memory_mb: int, sizes: Dict[str, int]) -> Optional[str]:
    """Why memory_mb is too little for a boot of these images ({} before
    they are built: the base alone); None if it is enough."""
    kernel_mb = -(-sizes.get("kernel image", 0) // 2**20)
    initramfs_mb = -(-sizes.get("initramfs", 0) // 2**20)
    need = BASE_MEMORY_MB + kernel_mb + 2 * initramfs_mb
    if memory_mb >= need:
        return None
    detail = (f": {BASE_MEMORY_MB} MiB, the kernel image ({kernel_mb} MiB) and twice the "
              f"initramfs ({initramfs_mb} MiB)" if sizes else " before its images")
    return f"--memory {memory_mb}: this boot needs at least {need} MiB{detail}"


def problems(smp: int, memory_mb: int, cmdline: str,
             sizes: Dict[str, int]) -> List[str]:
    """Everything wrong with these machine and boot parameters."""
    out = []
    if not 1 <= smp <= MAX_SMP:
        out.append(f"--smp {smp}: vCPUs from 1 to {MAX_SMP} (the test module's CPU masks "
                   f"are {MAX_SMP} bits)")
    memory = memory_problem(memory_mb, sizes)
    if memory:
        out.append(memory)
    try:
        params = list(cmdline_params(cmdline))
    except ValueError as e:
        return out + [f"kernel command line {cmdline!r}: {e}"]
    for prefix, name, value in params:
        why = (check_init_param(name, value) if prefix == "rig"
               else check_module_param(name, value, max(smp, 1)))
        if why:
            out.append(why)
    return out


def check(smp: int, memory_mb: int, cmdline: str, sizes: Dict[str, int]) -> None:
    found = problems(smp, memory_mb, cmdline, sizes)
    if found:
        raise BadInput("bad boot request: " + "; ".join(found))


def check_memory(memory_mb: int, sizes: Dict[str, int]) -> None:
    """Once the images exist: enough memory for their sizes."""
    found = memory_problem(memory_mb, sizes)
    if found:
        raise BadInput("bad boot request: " + found)


# -- kernel images -----------------------------------------------------------
# The x86 boot protocol's setup header (Documentation/arch/x86/boot.rst).
BOOT_FLAG_OFFSET, BOOT_FLAG = 0x1FE, b"\x55\xaa"
HEADER_OFFSET, HEADER_MAGIC = 0x202, b"HdrS"


def bzimage_problem(image: Path) -> Optional[str]:
    """Why QEMU could not boot this file as an x86 kernel; None if it can."""
    image = Path(image)
    if not image.exists():
        return f"kernel image {image}: no such file"
    if not image.is_file():
        return f"kernel image {image}: not a file"
    size = image.stat().st_size
    if size == 0:
        return f"kernel image {image}: empty file"
    with open(image, "rb") as f:
        head = f.read(HEADER_OFFSET + 4)
    if (head[BOOT_FLAG_OFFSET:BOOT_FLAG_OFFSET + 2] != BOOT_FLAG
            or head[HEADER_OFFSET:HEADER_OFFSET + 4] != HEADER_MAGIC):
        return (f"kernel image {image}: not a bzImage ({size} bytes without the x86 boot "
                f"setup header: boot flag 0xaa55 at 0x1fe, 'HdrS' at 0x202); give "
                f"<build>/arch/x86/boot/bzImage")
    return None


def check_kernel_image(image: Path) -> None:
    why = bzimage_problem(image)
    if why:
        raise BadInput(why)
