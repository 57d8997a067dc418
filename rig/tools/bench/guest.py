"""printk figures from real boots, in guest virtual time (-icount, so the
host's load does not stretch them):

- INFO printk() caller latency with an idle console (one record every
  10 ms, twice a line's wire time) and under a backlog (LINES records from
  one CPU as fast as the caller can, nothing else printing: a vanilla caller
  prints them itself, a patched one leaves them to the printer thread): the
  test module's p50/p99/p99.9/max of its own timed calls;
- emergency latency: one ERR line printed from the other CPU while that
  backlog waits (a second boot: in vanilla that CPU then prints the
  backlog, which would hide the caller's cost in the first), from
  the call (the module's marker) to the line's last bit on the wire, against
  the line's own wire time at the rate the guest programmed (rig.evidence.wire);
- console throughput: THR bytes per virtual second while the flood's lines
  go out, against the programmed rate's limit;
- ringbuffer stress (rig/guest/prbstress/, the seed's shape): 1, 2 and 3
  pinned writers fill a 16 KB buffer with 33-byte records while two readers
  pinned to the fourth vCPU read it: records per virtual second and the
  share of the records each reader saw (and checked).
"""
import re
from dataclasses import dataclass, field
from typing import Dict, Iterable, List, Optional

from rig.boot import BootRequest, boot
from rig.evidence.boot import Evidence
from rig.evidence.properties import call_latency
from rig.evidence.wire import programmed_format
from rig.rigprintk import cmdline, mask, stats
from rig.vm.qemu_argv import ICOUNT_CLOCK
from rig.faults import RigFault

# 4 ns of virtual time per instruction: a 250 MIPS CPU, still some ten times
# slower than the hardware printk runs on, which stretches a CPU-bound cost
# such as a patched printk() (about 7,900 instructions with its irq_work:
# 31.5 us) while vanilla's cost is the wire's. Shift 3 made the patched
# caller look twice as slow; lower shifts multiply the wall time (the
# console's LSR spin runs 2^-shift times more instructions).
ICOUNT_SHIFT = 2
# The whole backlog must fit in the ring (about 100 bytes a record with its
# descriptor): 6.12's default 128 KB holds some 1300 lines, and vanilla then
# loses the ERR line itself to the wrap.
LOG_BUF = "log_buf_len=4M"
IDLE_LINES, IDLE_GAP_US = 200, 10_000


def backlog_after_ms(lines: int) -> int:
    """When the ERR line comes: 300 ms after the flood began and after the
    patched flood has stored its records (about 40 us a call at this shift).
    A vCPU still flooding takes turns with the writer on -icount's one
    virtual clock, so the writer's bytes leave slower than the wire's pace
    (94-99 us against 86.8 us a byte, measured), which no second CPU of a
    real machine would impose."""
    return 300 + lines // 20


STRESS_WRITERS = (1, 2, 3)      # a vCPU each; the readers have the fourth
STRESS_SMP = 4
STRESS_RECORD_BYTES = 33
RESULT_RE = re.compile(r"prbstress: result (.*)")


class BenchError(RigFault, RuntimeError):
    """A bench boot did not give its figure; says which and where."""


@dataclass
class FlavorFigures:
    flavor: str
    info_idle: Dict[str, int] = field(default_factory=dict)       # calls p50 p99 p999 max (ns)
    info_backlog: Dict[str, int] = field(default_factory=dict)
    emergency: Dict[str, float] = field(default_factory=dict)     # ns, physical_ns, ratio
    throughput: Dict[str, float] = field(default_factory=dict)    # bytes_per_s, limit, ratio
    stress: List[Dict[str, float]] = field(default_factory=list)  # one per writer count
    runs: Dict[str, str] = field(default_factory=dict)            # boot -> run directory


def clean_boot(req: BootRequest, what: str) -> Evidence:
    """Boot, and the evidence of a run that ended cleanly; any other end is a
    BenchError naming the boot and its run directory."""
    res = boot(req)
    if res.outcome.cls != "clean":
        raise BenchError(f"{what} on {req.flavor}: {res.outcome.cls}: {res.outcome.detail} "
                         f"(run directory {res.run_dir})")
    return Evidence.of(res)


def run_boot(flavor: str, name: str, timeout_s: float, **module) -> Evidence:
    return clean_boot(BootRequest(flavor=flavor, name=name, clock=ICOUNT_CLOCK,
                                  icount_shift=ICOUNT_SHIFT, init_timeout_s=timeout_s,
                                  cmdline=f"rig.steps=run {LOG_BUF} "
                                          f"{cmdline(scen=name, **module)}"), name)


def stress_results(texts: Iterable[str], where: str) -> List[Dict[str, float]]:
    """The module's result line per writer count (console lines' texts), as
    rates and shares; a reader that found a bad record (torn, out of order)
    fails the bench."""
    out = []
    for text in texts:
        m = RESULT_RE.search(text)
        if not m:
            continue
        f = {k: int(v) for k, v in (kv.split("=") for kv in m.group(1).split())}
        bad = f["r0_bad"] + f["r1_bad"]
        if bad:
            raise BenchError(f"ringbuffer stress, {f['writers']} writers: the readers found "
                             f"{bad} bad records ({where})")
        out.append({"writers": f["writers"], "records": f["records"], "ns": f["ns"],
                    "records_per_s": round(f["records"] / (f["ns"] / 1e9)),
                    "reserve_failed": f["reserve_failed"],
                    "reader_share": [round(f["r0_seen"] / f["records"], 4),
                                     round(f["r1_seen"] / f["records"], 4)],
                    "reader_lost": [f["r0_lost"], f["r1_lost"]]})
    if [r["writers"] for r in out] != list(STRESS_WRITERS):
        raise BenchError(f"ringbuffer stress: result lines for {[r['writers'] for r in out]} "
                         f"writers, expected {list(STRESS_WRITERS)} ({where})")
    return out


def ringbuffer_stress(flavor: str, records: int) -> Evidence:
    """One boot of the bench initramfs: rig-preinit loads prbstress, whose init
    function runs the test per writer count, then rig-init dumps /dev/kmsg."""
    writers = ",".join(map(str, STRESS_WRITERS))
    return clean_boot(BootRequest(flavor=flavor, name="bench-prbstress", clock=ICOUNT_CLOCK,
                                  icount_shift=ICOUNT_SHIFT, smp=STRESS_SMP, initramfs="bench",
                                  init_timeout_s=120,
                                  cmdline=f"rig.steps=kmsg rdinit=/bin/rig-preinit -- "
                                          f"prbstress writers={writers} records={records}"),
                      "ringbuffer stress")


def flood_stats(ev: Evidence, what: str) -> Dict[str, int]:
    s = stats(ln.text for ln in ev.transcript.lines).get("flood")
    if not s:
        raise BenchError(f"{what}: no flood timing line from the module ({ev.where()})")
    return s


def emergency_latency(ev: Evidence, name: str) -> Dict[str, float]:
    err = [(ln, t) for ln, t in ev.tagged(name) if t.level == 3]
    if len(err) != 1:
        raise BenchError(f"{name}: {len(err)} ERR lines on the console ({ev.where()})")
    lat = call_latency(ev, *err[0])
    if lat is None:
        raise BenchError(f"{name}: the ERR line is not whole on the wire ({ev.where()})")
    return {"ns": round(lat.ns), "physical_ns": round(lat.physical_ns),
            "line_bytes": lat.line_bytes, "ratio": round(lat.ratio, 4)}


def throughput(ev: Evidence, name: str) -> Dict[str, float]:
    """THR bytes per virtual second from the first flood line's first byte to
    the last flood line's last byte on the wire: the console is busy all that
    time (a backlog waits), so this is the rate it sustains."""
    tagged = [wl for wl in ev.wire if f"scen={name} " in wl.text]
    if len(tagged) < 2:
        raise BenchError(f"{name}: fewer than two flood lines on the wire ({ev.where()})")
    first, last = tagged[0].first, tagged[-1].last
    thr = [r for r in ev.log.writes("THR") if first.seq <= r.seq <= last.seq]
    fmt = programmed_format(ev.log, first.seq)
    span_s = (last.vtime_ns - first.vtime_ns + fmt.char_ns) / 1e9
    limit = 1e9 / fmt.char_ns
    rate = len(thr) / span_s
    return {"bytes": len(thr), "seconds": round(span_s, 6), "bytes_per_s": round(rate, 1),
            "limit_bytes_per_s": round(limit, 1), "ratio": round(rate / limit, 4)}


def measure(flavor: str, lines: int, stress_records: int,
            timeout_s: Optional[float] = None) -> FlavorFigures:
    out = FlavorFigures(flavor)
    print(f"[bench] {flavor}: ringbuffer stress, {stress_records} records of "
          f"{STRESS_RECORD_BYTES} bytes into 16 KB, {'/'.join(map(str, STRESS_WRITERS))} "
          f"writers, 2 readers on one vCPU", flush=True)
    stress = ringbuffer_stress(flavor, stress_records)
    out.stress = stress_results((ln.text for ln in stress.transcript.lines), stress.where())
    out.runs["stress"] = str(stress.result.run_dir)
    print(f"[bench] {flavor}: INFO printk() with an idle console ({IDLE_LINES} records, "
          f"{IDLE_GAP_US // 1000} ms apart)", flush=True)
    idle = run_boot(flavor, "bench-idle", 120, flood_count=IDLE_LINES, flood_cpus=mask([0]),
                    flood_delay_us=IDLE_GAP_US)
    out.info_idle = flood_stats(idle, "idle console")
    out.runs["idle"] = str(idle.result.run_dir)
    print(f"[bench] {flavor}: {lines} INFO records from one CPU as fast as it can",
          flush=True)
    flood = run_boot(flavor, "bench-flood", timeout_s or max(120, lines * 0.03),
                     flood_count=lines, flood_cpus=mask([0]))
    out.info_backlog = flood_stats(flood, "backlog")
    out.throughput = throughput(flood, "bench-flood")
    out.runs["flood"] = str(flood.result.run_dir)
    print(f"[bench] {flavor}: the same backlog with an ERR line {backlog_after_ms(lines)} ms "
          "in, from the other CPU", flush=True)
    backlog = run_boot(flavor, "bench-backlog", timeout_s or max(120, lines * 0.03),
                       flood_count=lines, flood_cpus=mask([0]), flood_wait=False,
                       flood_backlog_ms=backlog_after_ms(lines), single_level=3, single_cpu=1,
                       stamp=True, markers=True)
    out.emergency = emergency_latency(backlog, "bench-backlog")
    out.runs["backlog"] = str(backlog.result.run_dir)
    return out
