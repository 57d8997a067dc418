"""The test module's conventions, seen from the host: its kernel parameters,
the tag of every message it prints and its timing summary lines
(rig/guest/module/main.c is the other half; keep them in step). Its UART
markers are part of the guest/host protocol (rig.protocol)."""
import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional

CTX = {"task": 0, "irq": 1, "nmi": 2}

TAG_RE = re.compile(r"rigprintk: scen=(?P<scen>\S+) cpu=(?P<cpu>\d+) ctx=(?P<ctx>task|irq|nmi) "
                    r"seq=(?P<seq>\d+) lvl=(?P<lvl>\d)(?: t=(?P<t>\d+))?(?: pad=(?P<pad>x*))?$")
STAT_RE = re.compile(r"rigprintk: stat scen=(?P<scen>\S+) kind=(?P<kind>\w+) calls=(?P<calls>\d+) "
                     r"p50_ns=(?P<p50>\d+) p99_ns=(?P<p99>\d+) p999_ns=(?P<p999>\d+) "
                     r"max_ns=(?P<max>\d+)$")

CONSOLE_STAT_RE = re.compile(r"rigprintk: console scen=(?P<scen>\S+) writes=(?P<writes>\d+) "
                             r"by_flood_callers=(?P<by_callers>\d+)$")


@dataclass(frozen=True)
class Tag:
    scen: str
    cpu: int
    ctx: str
    seq: int
    level: int
    pad: int
    t_call_ns: Optional[int] = None    # local_clock() just before the call (stamp=1)

    @property
    def key(self):
        """Identifies one printk() call of the module: (cpu, ctx, seq)."""
        return (self.cpu, self.ctx, self.seq)

    def marker(self, phase: int) -> int:
        """The marker value the module writes before (1) or after (2) this call."""
        return phase << 28 | CTX[self.ctx] << 24 | (self.seq & 0xFFFFFF)


def parse_tag(text: str) -> Optional[Tag]:
    m = TAG_RE.search(text)
    if not m:
        return None
    return Tag(m["scen"], int(m["cpu"]), m["ctx"], int(m["seq"]), int(m["lvl"]),
               len(m["pad"] or ""), int(m["t"]) if m["t"] else None)


def stats(texts: Iterable[str]) -> Dict[str, Dict[str, int]]:
    """kind -> {calls, p50, p99, p999, max} (ns) from the module's summary lines."""
    out = {}
    for t in texts:
        m = STAT_RE.search(t)
        if m:
            out[m["kind"]] = {k: int(m[k]) for k in ("calls", "p50", "p99", "p999", "max")}
    return out


def console_stats(texts: Iterable[str]) -> Optional[Dict[str, int]]:
    """{writes, by_callers} from the module's test console summary line: how
    often the test console's write() ran, and how often in a flood thread,
    i.e. in the printk() caller's context."""
    for t in texts:
        m = CONSOLE_STAT_RE.search(t)
        if m:
            return {"writes": int(m["writes"]), "by_callers": int(m["by_callers"])}
    return None


def cmdline(**params) -> str:
    """rigprintk.NAME=VALUE kernel parameters; rig-init hands them to the module."""
    def fmt(v):
        if isinstance(v, bool):
            return "1" if v else "0"
        return str(v)
    return " ".join(f"rigprintk.{k}={fmt(v)}" for k, v in params.items())


def mask(cpus: List[int]) -> int:
    return sum(1 << c for c in cpus)
