"""Console takeovers read off the register log, and what the writer that
lost the console did to the UART while the new owner wrote.

Every 8250 console write, on every kernel, clears IER first and restores
what it found last (rig.evidence.wire.ier_problem checks the values): the port's own
value, or 0 when it took the console over from a write that had cleared it.
So on each vCPU a write is open from an IER write of 0 to its next IER
write; one that restores the port's own value always ends it (the reading
may start in the middle of a write). When another vCPU
opens a write while one is open, the console changed hands in the middle
of it: by handover or takeover on an nbcon console, by a panic that broke
the port lock on a legacy one. Until the new owner's write ends, the ousted
vCPU must not touch the UART, not even to poll LSR: it does not own the
hardware, and the new owner does.

What the ousted vCPU does after the new owner's write ended cannot be told
apart from what it does once it owns the console again (a reacquired
writer polls LSR before it restores IER), so it is not judged. Nor is a
write interrupted by an NMI on its own vCPU: nothing on the bus says which
of the two an access came from.
"""
from dataclasses import dataclass
from typing import List, Optional

from rig.evidence.uartlog import Record, UartLog
from rig.evidence.wire import port_ier

# Records that are not accesses of the console driver: the test module's
# markers and the device's own NMI trigger.
NOT_DRIVER = ("MARKER", "NMI")


@dataclass
class Takeover:
    ousted_cpu: int
    opened: Record                   # the ousted write's first IER write
    taker: Record                    # the other vCPU's IER write that opened its own
    stray: Optional[Record] = None   # the ousted vCPU's first access during the taker's write
    ended: Optional[Record] = None   # the taker's IER write that ended its write


def takeovers(log: UartLog, from_seq: int) -> List[Takeover]:
    """Every cross-vCPU change of hands from log record from_seq on, up to the
    port's next programming of its divisor (a warm reset and the next boot's
    setup; what the first boot left open means nothing there): with the
    ousted vCPU's first access while the taker's write was open (stray, None
    when it kept off) and the end of the taker's write (ended, None if it
    never ended)."""
    own = port_ier(log, from_seq)
    open_since = {}     # vCPU -> the IER write that opened its write
    watched = {}        # ousted vCPU -> its Takeover, while the taker's write is open
    out = []
    for r in log.records[from_seq:]:
        if r.reg == "DLL" and not r.is_read:
            break       # the port programmed anew: after a reset, another boot
        if r.cpu is None or r.reg in NOT_DRIVER:
            continue
        t = watched.get(r.cpu)
        if t is not None and t.stray is None:
            t.stray = r
        if r.reg != "IER" or r.is_read:
            continue
        if r.cpu in open_since or (r.value == own and own):
            open_since.pop(r.cpu, None)
            for cpu, t in list(watched.items()):
                if t.taker.cpu == r.cpu:
                    t.ended = r
                    watched.pop(cpu)
            continue
        if r.value != 0:
            continue
        for cpu, opened in open_since.items():
            t = Takeover(cpu, opened, r)
            out.append(t)
            watched[cpu] = t
        open_since[r.cpu] = r
    return out
