"""Where each vCPU is when a guest hangs: stack walks read over QMP.

A hang report that names only the phase and the last console lines leaves a
printk developer guessing which CPU waits for which. The rig's kernels have
frame pointers and no KASLR (kernel-patches/rig.config), so the harness can
walk each vCPU's RBP chain itself while QEMU is stopped: HMP `info registers`
for RIP and RBP, then `x /2gx` along the chain (saved RBP, return address),
symbolised with the kernel's System.map. A kernel built without frame
pointers gives a short or empty chain, and one without System.map raw
addresses; the report says so rather than guess.
"""
import bisect
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Tuple

from rig.vm.qmp import QMPClient, QMPError

MAX_FRAMES = 24
SAMPLES = 3                      # stops, spaced by SAMPLE_GAP_S of running
SAMPLE_GAP_S = 0.2
KERNEL_SPACE = 0xffff800000000000

_REG_RE = re.compile(r"\b(RIP|RBP|RSP)=([0-9a-f]{16})")
_CPL_RE = re.compile(r"\bCPL=(\d)")
_WORDS_RE = re.compile(r"^[0-9a-f]+:\s+0x([0-9a-f]{16})\s+0x([0-9a-f]{16})", re.M)


class Symbols:
    """Text symbols of System.map, for address -> "name+0xoff"."""

    def __init__(self, system_map: Optional[Path]):
        self.addrs: List[int] = []
        self.names: List[str] = []
        if system_map is None or not system_map.is_file():
            return
        for line in system_map.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in "tTwW":
                self.addrs.append(int(parts[0], 16))
                self.names.append(parts[2])
        order = sorted(range(len(self.addrs)), key=self.addrs.__getitem__)
        self.addrs = [self.addrs[i] for i in order]
        self.names = [self.names[i] for i in order]

    def name(self, addr: int) -> str:
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0 or addr - self.addrs[i] > 0x100000:
            return f"0x{addr:x}"
        return f"{self.names[i]}+0x{addr - self.addrs[i]:x}"


@dataclass
class VcpuStack:
    cpu: int
    user: bool = False
    frames: List[int] = field(default_factory=list)   # RIP first, then return addresses
    error: str = ""

    def render(self, syms: Symbols, depth: int = MAX_FRAMES) -> str:
        if self.error:
            return f"vCPU {self.cpu}: ({self.error})"
        if self.user:
            return f"vCPU {self.cpu}: in user space at 0x{self.frames[0]:x}"
        return f"vCPU {self.cpu}: " + " < ".join(syms.name(a) for a in self.frames[:depth])


def _hmp(qmp: QMPClient, cmd: str, cpu: int) -> str:
    return qmp.execute("human-monitor-command", {"command-line": cmd, "cpu-index": cpu})


def _read_pair(qmp: QMPClient, cpu: int, addr: int) -> Optional[Tuple[int, int]]:
    m = _WORDS_RE.search(_hmp(qmp, f"x /2gx 0x{addr:x}", cpu))
    return (int(m.group(1), 16), int(m.group(2), 16)) if m else None


def walk(qmp: QMPClient, cpu: int) -> VcpuStack:
    """One vCPU's frames; QEMU must be stopped."""
    st = VcpuStack(cpu)
    regs = _hmp(qmp, "info registers", cpu)
    found = dict(_REG_RE.findall(regs))
    if "RIP" not in found:
        st.error = "no registers"
        return st
    st.frames.append(int(found["RIP"], 16))
    cpl = _CPL_RE.search(regs)
    if cpl and cpl.group(1) != "0":
        st.user = True
        return st
    rbp = int(found.get("RBP", "0"), 16)
    while len(st.frames) < MAX_FRAMES and rbp >= KERNEL_SPACE and rbp % 8 == 0:
        pair = _read_pair(qmp, cpu, rbp)
        if pair is None:
            break
        next_rbp, ret = pair
        if ret < KERNEL_SPACE:
            break
        st.frames.append(ret)
        if next_rbp <= rbp:          # stacks grow down: a caller's frame is higher
            break
        rbp = next_rbp
    return st


def sample(qmp: QMPClient, cpus: int, system_map: Optional[Path],
           samples: int = SAMPLES, gap_s: float = SAMPLE_GAP_S) -> str:
    """Stop the guest a few times and walk every vCPU's stack; the text for
    vcpu-stacks.txt. Leaves the guest stopped: the caller kills it next."""
    syms = Symbols(system_map)
    out = [f"# vCPU stacks at the hang, {samples} samples {gap_s:.1f} s apart; "
           f"symbols from {system_map if syms.addrs else '(no System.map)'}"]
    for n in range(samples):
        if n:
            qmp.execute("cont")
            time.sleep(gap_s)
        qmp.execute("stop")
        out.append(f"## sample {n + 1}")
        for cpu in range(cpus):
            try:
                out.append(walk(qmp, cpu).render(syms))
            except QMPError as e:
                out.append(f"vCPU {cpu}: ({e})")
    return "\n".join(out) + "\n"


def summary(text: str, depth: int = 6) -> str:
    """The last sample's stacks, each cut to its innermost frames."""
    lines = text.splitlines()
    last = max((i for i, ln in enumerate(lines) if ln.startswith("## sample")), default=-1)
    picked = []
    for ln in lines[last + 1:]:
        head, _, chain = ln.partition(": ")
        frames = chain.split(" < ")
        picked.append(f"{head}: " + " < ".join(frames[:depth])
                      + (" < ..." if len(frames) > depth else ""))
    return "\n".join(picked)
