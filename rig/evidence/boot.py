"""One boot's evidence, parsed: the transcript, the /dev/kmsg dump and the
other side-channel sections, the UART register log and the wire lines cut
from it, and the test module's tagged messages. Scenarios assert on this."""
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Set, Tuple

from rig.evidence import logparse, sidechannel, takeover, uartlog
from rig.evidence.wire import WireLine, find_line, wire_lines
from rig.protocol import MARK_AFTER, MARK_BEFORE
from rig.rigprintk import Tag, parse_tag
from rig.rundir import BootResult


@dataclass
class Evidence:
    result: BootResult
    # None when the reader did not ask for it (a report of a long run reads
    # the console as a stream instead).
    transcript: Optional[logparse.Transcript]
    side: sidechannel.SideChannel
    log: Optional[uartlog.UartLog]       # None for a console without a UART
    kmsg: List[logparse.KmsgRecord] = field(default_factory=list)
    console_name: str = "ttyS0"          # whose transcript and register log these are
    # What a lenient read could not parse: "side" or "kmsg" -> the error.
    unreadable: Dict[str, str] = field(default_factory=dict)
    _wire: Optional[List[WireLine]] = None
    _takeovers: Dict[int, List[takeover.Takeover]] = field(default_factory=dict)

    @classmethod
    def of(cls, result: BootResult, lenient: bool = False,
           transcript: bool = True) -> "Evidence":
        """The run's evidence, parsed. Lenient, for a reader that shows
        whatever a damaged or cut-short run left (the report): a side
        channel or /dev/kmsg dump that does not parse counts as empty, and
        a missing register log as none. Without transcript, the console is
        not parsed into memory (the boot checks stream it)."""
        unreadable = {}
        try:
            side = sidechannel.parse(result.side)
        except sidechannel.SideChannelError as e:
            if not lenient:
                raise
            side, unreadable["side"] = sidechannel.SideChannel(), str(e)
        try:
            kmsg = (logparse.parse_kmsg(side.section("kmsg")) if "kmsg" in side.sections
                    else [])
        except logparse.KmsgFormatError as e:
            if not lenient:
                raise
            kmsg, unreadable["kmsg"] = [], str(e)
        uart = result.run.uart_log
        log = uartlog.read(uart) if uart.is_file() or not lenient else None
        return cls(result, logparse.parse_transcript(result.console) if transcript else None,
                   side, log, kmsg, unreadable=unreadable)

    def second_console(self) -> "Evidence":
        """The run seen through the test module's nbcon console on the second
        UART (console2.log, uart2.log): a console's properties apply to it
        unchanged."""
        run = self.result.run
        transcript = logparse.parse_transcript(run.console2_log.read_bytes())
        return replace(self, transcript=transcript, log=uartlog.read(run.uart2_log),
                       console_name="riguart2",
                       _wire=None, _takeovers={})

    def test_console(self) -> "Evidence":
        """The run seen through the module's legacy test console (the side
        channel's conlog section); it has no register log."""
        return replace(self, transcript=logparse.parse_transcript(self.side.section("conlog")),
                       log=None, console_name="the legacy test console",
                       _wire=None, _takeovers={})

    @property
    def wire(self) -> List[WireLine]:
        if self._wire is None:
            self._wire = wire_lines(self.log)
        return self._wire

    def takeovers(self, from_seq: int) -> List[takeover.Takeover]:
        """rig.evidence.takeover.takeovers over this log from from_seq, computed once:
        every run checks them, and S22 again with its own expectation."""
        if from_seq not in self._takeovers:
            self._takeovers[from_seq] = takeover.takeovers(self.log, from_seq)
        return self._takeovers[from_seq]

    def where(self) -> str:
        return f"run directory {self.result.run_dir}"

    def tagged(self, scen: str) -> List[Tuple[logparse.ConsoleLine, Tag]]:
        """(console line, tag) of the module's messages for scen, in console order."""
        out = []
        for line in self.transcript.lines:
            tag = parse_tag(line.text)
            if tag and tag.scen == scen:
                out.append((line, tag))
        return out

    def record_seq(self, needle: str) -> Optional[int]:
        """The sequence number of the first /dev/kmsg record containing needle."""
        return next((r.seq for r in self.kmsg if needle in r.text), None)

    def printk_sysctl(self) -> List[int]:
        return [int(v) for v in self.side.section("printk-sysctl").split()]

    def during_call(self, tag: Tag) -> List[uartlog.Record]:
        """THR records between the module's before/after markers of one call."""
        return self.call(tag)[0]

    def call(self, tag: Tag) -> Tuple[List[uartlog.Record], Set[int]]:
        """during_call, and the vCPUs the caller ran on: the one it began on
        and the one it ended on (a task that is not pinned may move during
        its call, uartlog.call_span)."""
        records, end_cpu = uartlog.call_span(self.log, tag.marker(MARK_BEFORE),
                                             tag.marker(MARK_AFTER), cpu=tag.cpu)
        return [r for r in records if r.reg == "THR"], {tag.cpu, end_cpu}

    def wire_line_of(self, line: logparse.ConsoleLine) -> Optional[WireLine]:
        return find_line(self.wire, line.raw)
