"""Unit tests of the named properties on hand-made evidence (the scenarios
check them on real boots)."""
import lzma
from pathlib import Path
from types import SimpleNamespace

import pytest

from rig.evidence import logparse
from rig.evidence.boot import Evidence
from rig.evidence.properties import (assert_immediate, assert_no_irqsoff_wait,
                                     assert_no_lockup_report, assert_panic_complete,
                                     assert_printed_by_deadline,
                                     assert_written_by_its_cpu_or_handed, call_latency,
                                     call_windows, nmi_windows,
                                     panic_complete, printed_by_deadline)
from rig.protocol import MARK_AFTER, MARK_BEFORE, MARK_DEADLINE, MARK_NMI_ENTER, MARK_NMI_EXIT
from rig.rigprintk import Tag
from rig.tests.test_wire import SETUP_115200_8N1, log_of, thr, timed_log

DATA = Path(__file__).parent / "data"
LINES = ["[    1.000000] 000: rigprintk: scen=S18 cpu=0 ctx=task seq=0 lvl=6",
         "[    1.000100] 000: rigprintk: scen=S18 cpu=0 ctx=task seq=1 lvl=6"]


def evidence(writes):
    console = "".join(f"{ln}\r\n" for ln in LINES).encode()
    transcript = logparse.parse_transcript(console)
    return Evidence(SimpleNamespace(run_dir="RUN"), transcript, None, log_of(writes))


def tagged(ev):
    return ev.tagged("S18")


def test_lines_out_before_the_deadline_pass():
    ev = evidence(thr(1, LINES[0] + "\r\n") + thr(1, LINES[1] + "\r\n")
                  + [(0, "MARKER", MARK_DEADLINE)])
    assert_printed_by_deadline(ev, tagged(ev), 2000, printer_cpu=1)


def test_a_property_is_a_check_and_its_assertion_fails_with_the_checks_message():
    on_time = evidence(thr(1, LINES[0] + "\r\n") + thr(1, LINES[1] + "\r\n")
                       + [(0, "MARKER", MARK_DEADLINE)])
    check = printed_by_deadline(on_time, tagged(on_time), 2000, printer_cpu=1)
    assert (check.prop, check.ok) == ("printer-thread liveness", True)
    late = evidence(thr(1, LINES[0] + "\r\n") + [(0, "MARKER", MARK_DEADLINE)]
                    + thr(1, LINES[1] + "\r\n"))
    check = printed_by_deadline(late, tagged(late), 2000, printer_cpu=1)
    assert (check.prop, check.ok) == ("printer-thread liveness", False)
    with pytest.raises(AssertionError) as e:
        assert_printed_by_deadline(late, tagged(late), 2000, printer_cpu=1)
    assert str(e.value) == check.message
    assert check.message.startswith("printer-thread liveness: 1 of 2 lines were not printed")


def test_a_line_after_the_deadline_names_the_property_and_the_line():
    ev = evidence(thr(1, LINES[0] + "\r\n") + [(0, "MARKER", MARK_DEADLINE)]
                  + thr(1, LINES[1] + "\r\n"))
    with pytest.raises(AssertionError) as e:
        assert_printed_by_deadline(ev, tagged(ev), 2000, printer_cpu=1)
    msg = str(e.value)
    assert msg.startswith("printer-thread liveness: 1 of 2 lines were not printed within "
                          "2000 ms of quiet")
    assert "seq=1" in msg and "written by vCPU 1" in msg and "after the deadline" in msg
    assert "RUN" in msg


def test_a_printer_that_never_printed_is_named_though_another_cpu_did():
    ev = evidence(thr(0, LINES[0] + "\r\n") + thr(1, LINES[1] + "\r\n")
                  + [(0, "MARKER", MARK_DEADLINE)])
    with pytest.raises(AssertionError, match=r"the printer thread on CPU 1 did not print: the "
                                             r"first of the 2 lines, .* written by vCPU \[0\]"):
        assert_printed_by_deadline(ev, tagged(ev), 2000, printer_cpu=1)


def test_another_cpu_may_take_over_once_the_printer_printed():
    ev = evidence(thr(1, LINES[0] + "\r\n") + thr(0, LINES[1] + "\r\n")
                  + [(0, "MARKER", MARK_DEADLINE)])
    assert_printed_by_deadline(ev, tagged(ev), 2000, printer_cpu=1)


def test_no_deadline_marker_is_named():
    ev = evidence(thr(1, LINES[0] + "\r\n"))
    with pytest.raises(AssertionError, match="no deadline marker"):
        assert_printed_by_deadline(ev, tagged(ev), 2000, printer_cpu=1)


def timed_evidence(records):
    return Evidence(SimpleNamespace(run_dir="RUN"), logparse.parse_transcript(b""), None,
                    timed_log(SETUP_115200_8N1 + records))


def call_window(cpu, t0, t1, seq=0, writes=()):
    """A marked printk() call on cpu from t0 to t1 (ns), with THR writes (t, cpu) in it."""
    recs = [(t0, cpu, "MARKER", (MARK_BEFORE << 28) | seq)]
    recs += [(t, c, "THR", 0x41) for t, c in writes]
    return recs + [(t1, cpu, "MARKER", (MARK_AFTER << 28) | seq)]


def test_windows_pair_each_vcpus_markers_also_when_interleaved():
    ev = timed_evidence(call_window(0, 1000, 5_000_000)[:1]
                        + call_window(1, 2000, 3_000_000, seq=3)
                        + call_window(0, 1000, 5_000_000)[1:])
    wins = sorted((w.cpu, w.ns) for w in call_windows(ev))
    assert wins == [(0, 4_999_000), (1, 2_998_000)]


def test_writing_its_own_bytes_is_not_waiting():
    c = 86806      # one character at 115200 8N1
    own = [(1_000_000 + i * c, 0) for i in range(40)]
    ev = timed_evidence(call_window(0, 1_000_000, 1_000_000 + 40 * c + 500_000, writes=own))
    assert_no_irqsoff_wait(ev, call_windows(ev), 1.0)


def test_waiting_while_another_vcpu_writes_names_the_cpu_and_the_wait():
    c = 86806
    theirs = [(1_000_000 + i * c, 1) for i in range(100)]
    ev = timed_evidence(call_window(0, 1_000_000, 1_000_000 + 101 * c, seq=7, writes=theirs))
    with pytest.raises(AssertionError) as e:
        assert_no_irqsoff_wait(ev, call_windows(ev), 1.0)
    msg = str(e.value)
    assert msg.startswith("interrupts-off wait: CPU 0 waited 8.8 ms with interrupts off in a "
                          "printk() call of 8.8 ms (0.0 ms of it in NMI), beyond the 0.0 ms its "
                          "own lines took")


def nmi(cpu, t0, t1, writes=()):
    """An NMI on cpu from t0 to t1 (ns), with THR writes (t, cpu) in it."""
    return ([(t0, cpu, "MARKER", MARK_NMI_ENTER)] + [(t, c, "THR", 0x41) for t, c in writes]
            + [(t1, cpu, "MARKER", MARK_NMI_EXIT)])


def test_time_in_nmi_is_the_nmis_not_the_calls():
    c = 86806
    window = call_window(0, 1_000_000, 9_000_000, seq=2)
    ev = timed_evidence(window[:1] + nmi(0, 1_500_000, 8_800_000) + window[1:])
    assert_no_irqsoff_wait(ev, call_windows(ev), 1.0, nmi_windows(ev))
    with pytest.raises(AssertionError, match=r"waited 8\.0 ms .* \(0\.0 ms of it in NMI\)"):
        assert_no_irqsoff_wait(ev, call_windows(ev), 1.0)
    # Bytes the NMI wrote are not the call's own: they do not excuse a wait.
    theirs = [(2_000_000 + i * c, 0) for i in range(50)]
    ev = timed_evidence(window[:1] + nmi(0, 2_000_000, 2_000_000 + 50 * c, theirs)
                        + window[1:])
    with pytest.raises(AssertionError, match=r"waited 3\.7 ms .* \(4\.3 ms of it in NMI\)"):
        assert_no_irqsoff_wait(ev, call_windows(ev), 1.0, nmi_windows(ev))


def test_lockup_reports_are_named():
    ev = Evidence(SimpleNamespace(run_dir="RUN"), logparse.parse_transcript(
        b"[    1.000000] 000: ok\r\n[   22.000000] 001: watchdog: BUG: soft lockup - CPU#1 "
        b"stuck for 22s! [rigflood/1:60]\r\n"), None, log_of([]))
    with pytest.raises(AssertionError, match=r"lockup report: console line 2: .*soft lockup"):
        assert_no_lockup_report(ev)


HANDED = ["[    1.000000] 001: rigprintk: scen=S2 cpu=1 ctx=task seq=4 lvl=3",
          "[    1.000100] 000: rigprintk: scen=S2 cpu=0 ctx=nmi seq=0 lvl=3"]


def handed_evidence(writes):
    transcript = logparse.parse_transcript("".join(f"{ln}\r\n" for ln in HANDED).encode())
    return Evidence(SimpleNamespace(run_dir="RUN"), transcript, None, log_of(writes))


def test_a_handed_record_written_after_the_owners_line_passes_only_where_it_may_hand():
    ev = handed_evidence(thr(1, HANDED[0] + "\r\n") + thr(1, HANDED[1] + "\r\n"))
    nmi_line = ev.transcript.lines[1]
    assert_written_by_its_cpu_or_handed(ev, nmi_line, 0, may_hand=True)
    with pytest.raises(AssertionError) as e:
        assert_written_by_its_cpu_or_handed(ev, nmi_line, 0, may_hand=False)
    assert str(e.value).startswith("emergency line writer: the line from cpu0 was written by "
                                   "vCPUs [1]")


def test_a_line_of_two_writers_is_never_handed():
    half = len(HANDED[1]) // 2
    ev = handed_evidence(thr(1, HANDED[0] + "\r\n") + thr(1, HANDED[1][:half])
                         + thr(0, HANDED[1][half:] + "\r\n"))
    with pytest.raises(AssertionError, match=r"written by vCPUs \[0, 1\]"):
        assert_written_by_its_cpu_or_handed(ev, ev.transcript.lines[1], 0, may_hand=True)


def test_writing_another_cpus_lines_is_not_its_own_work():
    c = 86806
    mine = "[    1.000000] 000: rigprintk: scen=S19 cpu=0 ctx=task seq=0 lvl=3\r\n"
    theirs = "[    1.000100] 001: NMI backtrace for cpu 1\r\n"
    text = mine + theirs * 3
    writes = [(1_000_000 + i * c, 0) for i in range(len(text))]
    recs = call_window(0, 1_000_000, 1_000_000 + (len(text) + 1) * c)
    body = [(t, cpu, "THR", ord(ch)) for (t, cpu), ch in zip(writes, text)]
    ev = timed_evidence(recs[:1] + body + recs[1:])
    with pytest.raises(AssertionError, match=r"waited 11\.8 ms .* beyond the 5\.9 ms its own lines"):
        assert_no_irqsoff_wait(ev, call_windows(ev), 1.0)


def immediacy_evidence(writes):
    """A call by CPU 0 of tag cpu0#59 with THR writes (text, vCPU) between its markers."""
    tag = Tag("S24", 0, "task", 59, 3, 0)
    recs, t = [(1000, 0, "MARKER", tag.marker(MARK_BEFORE))], 2000
    for text, cpu in writes:
        for ch in text:
            recs.append((t, cpu, "THR", ord(ch)))
            t += 86806
    recs.append((t, 0, "MARKER", tag.marker(MARK_AFTER)))
    console = "".join(text for text, _ in writes).encode()
    return (Evidence(SimpleNamespace(run_dir="RUN"), logparse.parse_transcript(console), None,
                     timed_log(SETUP_115200_8N1 + recs)), tag)


EMERG = "[    2.407617] 000: rigprintk: scen=S24 cpu=0 ctx=task seq=59 lvl=3"


def test_the_callers_copy_counts_after_a_printers_fragment_of_the_same_record():
    ev, tag = immediacy_evidence([(EMERG, 1), ("\r\n", 0),
                                  ("** replaying previous printk message **\r\n", 0),
                                  (EMERG + "\r\n", 0)])
    assert_immediate(ev, ev.transcript.lines[-1], tag)


def test_a_line_written_partly_by_another_cpu_is_not_immediate():
    ev, tag = immediacy_evidence([(EMERG[:30], 0), (EMERG[30:] + "\r\n", 1)])
    with pytest.raises(AssertionError, match=r"emergency immediacy on .*: the line's bytes came "
                                             r"from vCPUs \{0, 1\}, the caller ran on CPU 0"):
        assert_immediate(ev, ev.transcript.lines[-1], tag)


PANIC_NMI = "Kernel panic - not syncing: rigprintk: panic in NMI on CPU 1"


def real_panic(cut_at: str = ""):
    """The evidence of a real patched panic in NMI (rig/tests/data/SOURCES.md),
    its console cut before the first line holding cut_at."""
    console = lzma.decompress((DATA / "patched-panic-nmi.console.xz").read_bytes())
    if cut_at:
        console = console[:console.index(cut_at.encode())]
    return Evidence(SimpleNamespace(run_dir="RUN"), logparse.parse_transcript(console),
                    None, None)


def test_a_whole_panic_from_nmi_is_complete_on_the_wire():
    assert panic_complete(real_panic(), PANIC_NMI).ok


@pytest.mark.parametrize("cut_at, message", [
    ("Kernel Offset:", "the panic output is cut short: no 'Kernel Offset:' line after the "
                       "panic message (run directory RUN)"),
    ("Kernel panic", "panic on the wire: no panic message on the wire (run directory RUN)")])
def test_a_panic_cut_short_fails_with_what_is_missing(cut_at, message):
    with pytest.raises(AssertionError) as e:
        assert_panic_complete(real_panic(cut_at), PANIC_NMI)
    assert str(e.value) == message


def test_a_calls_latency_starts_at_its_own_cpus_marker_not_an_equal_one():
    """A tagged call's marker carries its per-CPU seq, not its CPU: CPU 1's
    first call marks what CPU 0's first did (rig bench once measured an ERR
    line from CPU 0's flood line 0, 328 ms early)."""
    err = "[    1.300000] 001: rigprintk: scen=S4 cpu=1 ctx=task seq=0 lvl=3"
    tag = Tag("S4", 1, "task", 0, 3, 0)
    char = 86_806
    records = SETUP_115200_8N1 + [(1_000_000, 0, "MARKER", tag.marker(MARK_BEFORE)),
                                  (1_000_100, 0, "MARKER", tag.marker(MARK_AFTER)),
                                  (300_000_000, 1, "MARKER", tag.marker(MARK_BEFORE))]
    t = 300_000_000 + char
    for b in (err + "\r\n").encode():
        records.append((t, 1, "THR", b))
        t += char
    records.append((t, 1, "MARKER", tag.marker(MARK_AFTER)))
    console = (err + "\r\n").encode()
    ev = Evidence(SimpleNamespace(run_dir="RUN"), logparse.parse_transcript(console), None,
                  timed_log(records))
    line = ev.transcript.lines[0]
    lat = call_latency(ev, line, tag)
    assert 1.0 <= lat.ratio < 1.1, f"{lat.ns / 1e6:.3f} ms, {lat.ratio:.3f}x"
