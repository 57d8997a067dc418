"""Logs of any size, for the readers' memory bound: make bench's long-log case
and the tests of the bound.

A console log of the size asked for, in the form of a patched kernel's
flood (unique lines, the seed's CPU field, an emergency line now and then);
a copy of it with a few edits (a missing, an extra, a changed and a moved
record); a UART register log of that size, a real run's header followed by
a flood of THR writes and LSR polls from two vCPUs; and a run directory
that holds them. Then each reader runs as its own process, and its wall
time and peak resident memory (wait4's ru_maxrss) are what it cost:
rig parse, rig diff, rig report, and the judging a boot does after its run
(the completeness check, the evidence and the boot properties).
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List

from rig import paths
from rig.evidence import uartlog

LINE_BLOCK = 50_000
RECORD_BLOCK = 1 << 16
# The budget the readers keep to, whatever the size (docs/architecture.md).
BUDGET_MB = 300


def console_line(i: int) -> str:
    cpu = i % 2
    if i % 997 == 0:
        return (f"[{i / 20000:12.6f}] {cpu:03d}: rigprintk: scen=flood cpu={cpu} ctx=task "
                f"level=3 seq={i} emergency line {i}\n")
    return (f"[{i / 20000:12.6f}] {cpu:03d}: rigprintk: scen=flood cpu={cpu} ctx=task "
            f"level=6 seq={i} stamp=1 backlog line {i}\n")


def write_console(path: Path, size: int) -> int:
    """A console log of about size bytes; its number of lines."""
    n = 0
    with open(path, "w") as f:
        f.write("SeaBIOS (version rig)\nBooting from ROM...\n")
        while f.tell() < size:
            f.write("".join(console_line(i) for i in range(n, n + LINE_BLOCK)))
            n += LINE_BLOCK
    return n


def write_edited(src: Path, dst: Path) -> None:
    """src with a record missing, one extra, one changed and one moved."""
    with open(src) as f, open(dst, "w") as out:
        moved = None
        for i, line in enumerate(f):
            if i == 1000:
                continue                                # missing
            if i == 2000:
                out.write("[    0.100000] 000: an extra record\n")
            if i == 3000:
                line = line.rstrip("\n") + " changed\n"
            if i == 4000:
                moved = line
                continue
            out.write(line)
            if i == 4010 and moved:
                out.write(moved)


def write_register_log(path: Path, size: int) -> int:
    """A register log of about size bytes: a version 2 header of 2 vCPUs,
    closed, then THR writes each after an LSR poll; its record count."""
    n = max(0, (size - uartlog.HEADER.size) // uartlog.RECORD.size)
    lsr, thr = uartlog.REG_CODES["LSR"], uartlog.REG_CODES["THR"]
    pack = uartlog.RECORD.pack
    with open(path, "wb") as f:
        f.write(uartlog.pack_header(cpus=2, state=uartlog.STATE_CLOSED, records=n))
        for first in range(0, n, RECORD_BLOCK):
            block = bytearray()
            for seq in range(first, min(n, first + RECORD_BLOCK)):
                cpu = (seq >> 12) & 1
                if seq % 2 == 0:
                    block += pack(seq, seq * 500, cpu, lsr, uartlog.FLAG_READ, 0x60)
                else:
                    block += pack(seq, seq * 500, cpu, thr, 0, 0x0A if seq % 161 == 0 else 0x61)
            f.write(block)
    return n


def write_run(where: Path, size: int, base: Path) -> Path:
    """A run directory with a console and a register log of about size
    bytes each, and the side channel, records and bundle of the real run
    base."""
    run = where / "run"
    run.mkdir(parents=True)
    for name in ("side.bin", "summary.json", "bundle.json"):
        if (base / name).is_file():
            shutil.copyfile(base / name, run / name)
    write_console(run / "console.log", size)
    write_register_log(run / "uart.log", size)
    return run


JUDGE = ("import sys; from rig.rundir import BootResult; from rig.vm.outcome import Outcome; "
         "from rig.vm.completeness import register_log_problem; "
         "from rig.evidence.boot import Evidence; "
         "from rig.evidence.properties import boot_checks; from rig.evidence.wire import "
         "wire_lines; from rig.evidence.takeover import takeovers; from pathlib import Path; "
         "run = Path(sys.argv[1]); print(register_log_problem(run / 'uart.log', 2, True)); "
         "ev = Evidence.of(BootResult(run, Outcome('clean', 'ok'), [], 0.0), lenient=True, "
         "transcript=False); print([c.ok for c in boot_checks(ev)]); "
         "print(len(wire_lines(ev.log)), len(takeovers(ev.log, 0)))")


def measure(argv: List[str]) -> Dict:
    """Run argv; its exit status, wall seconds and peak RSS (MB)."""
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=paths.REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    return {"rc": os.waitstatus_to_exitcode(status), "seconds": round(time.monotonic() - start, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "stderr": err[-2000:]}


def cases(where: Path, size: int, base: Path) -> Dict[str, Dict]:
    """Each reader on logs of about size bytes, measured."""
    run = write_run(where, size, base)
    edited = where / "edited.log"
    write_edited(run / "console.log", edited)
    rig = [sys.executable, "-m", "rig"]
    out = {
        "parse": measure(rig + ["parse", str(run / "console.log")]),
        "diff": measure(rig + ["diff", str(run / "console.log"), str(edited)]),
        "report": measure(rig + ["report", str(run)]),
        "judge a run": measure([sys.executable, "-c", JUDGE, str(run)]),
    }
    for name, m in out.items():
        m["log_mb"] = round(size / 2**20)
    return out


def base_run(d: Path, name: str = "long-logs") -> Path:
    """A real run in d (a patched icount boot restored from init's snapshot,
    /dev/kmsg dumped): the big run directory takes its side channel and
    records, and the tests that need a real run use it too."""
    from rig.boot import BootRequest, boot
    res = boot(BootRequest(flavor="patched", name=name, cmdline="rig.steps=kmsg",
                           clock="icount", snapshot=True, run_dir=d))
    if res.outcome.cls != "clean":
        raise RuntimeError(f"the run {d} did not end clean: {res.outcome.detail}")
    return d


def measure_all(size: int, where: Path) -> Dict:
    """make bench's case: every reader on logs of size bytes, and whether
    each kept to BUDGET_MB."""
    where.mkdir(parents=True, exist_ok=True)
    try:
        found = cases(where, size, base_run(where / "base"))
    finally:
        shutil.rmtree(where, ignore_errors=True)
    for m in found.values():
        m.pop("stderr", None)
    return {"log_mb": size >> 20, "budget_mb": BUDGET_MB, "readers": found}


def table(d: Dict) -> str:
    lines = [f"Each reader on logs of {d['log_mb']} MB (a console log, a register log, a run "
             "directory holding both; `rig.tools.bench.biglog`), as its own process: wall "
             "time and peak resident memory (`wait4`'s `ru_maxrss`), against the "
             f"{d['budget_mb']} MB budget.\n",
             "| reader | exit | wall time | peak memory |", "|---|---|---|---|"]
    for name, m in d["readers"].items():
        lines.append(f"| {name} | {m['rc']} | {m['seconds']:.1f} s | {m['peak_rss_mb']:.0f} MB |")
    return "\n".join(lines) + "\n"


def check(d: Dict) -> List[str]:
    return [f"{name} on a {d['log_mb']} MB log took {m['peak_rss_mb']:.0f} MB, over the "
            f"{d['budget_mb']} MB budget" for name, m in d["readers"].items()
            if m["peak_rss_mb"] > d["budget_mb"]]


if __name__ == "__main__":
    print(json.dumps(measure_all(int(sys.argv[1]) << 20, Path(sys.argv[2])), indent=1))
