"""Parser for what rig-init sends over the side channel (ttyS1).

Framing (rig.protocol, rig/guest/protocol.h):
    @@rig begin NAME LEN\\n <LEN bytes> \\n@@rig end NAME\\n
    @@rig status CODE\\n
Bytes outside frames (for example a getty banner) are kept as noise.
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Optional

from rig import protocol

BEGIN = re.compile(re.escape(protocol.SIDE_BEGIN.encode()) + rb" (\S+) (\d+)\n")
STATUS = re.compile(re.escape(protocol.SIDE_STATUS.encode()) + rb" (-?\d+)\n")
END = b"\n" + protocol.SIDE_END.encode() + b" "


class SideChannelError(ValueError):
    """The side channel output is malformed; the message names the offset."""


@dataclass
class SideChannel:
    sections: Dict[str, bytes] = field(default_factory=dict)
    status: Optional[int] = None
    noise: int = 0  # bytes outside any frame

    def section(self, name: str) -> bytes:
        if name not in self.sections:
            have = ", ".join(sorted(self.sections)) or "none"
            raise SideChannelError(f"side channel has no section {name!r} (sections: {have}; "
                                   f"status: {self.status})")
        return self.sections[name]


def parse(data: bytes) -> SideChannel:
    out = SideChannel()
    pos = 0
    while pos < len(data):
        begin = BEGIN.search(data, pos)
        status = STATUS.search(data, pos)
        nxt = min((m for m in (begin, status) if m), key=lambda m: m.start(), default=None)
        if nxt is None:
            out.noise += len(data) - pos
            break
        out.noise += nxt.start() - pos
        if nxt is status:
            out.status = int(status.group(1))
            pos = status.end()
            continue
        name, length = begin.group(1).decode(), int(begin.group(2))
        body_start = begin.end()
        body_end = body_start + length
        trailer = END + begin.group(1) + b"\n"
        if body_end > len(data):
            raise SideChannelError(
                f"section {name!r} at offset {begin.start()} announces {length} bytes but only "
                f"{len(data) - body_start} follow: the guest stopped while sending it")
        if data[body_end:body_end + len(trailer)] != trailer:
            raise SideChannelError(f"section {name!r} at offset {begin.start()}: no end marker "
                                   f"at offset {body_end}")
        if name in out.sections:
            raise SideChannelError(f"section {name!r} sent twice (second at offset "
                                   f"{begin.start()})")
        out.sections[name] = data[body_start:body_end]
        pos = body_end + len(trailer)
    return out
