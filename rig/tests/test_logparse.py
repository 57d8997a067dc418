import lzma
from pathlib import Path

import pytest

from rig.evidence.logparse import (DROPPED_RE, REPLAY_LINE, KmsgFormatError, cut_marker,
                                   parse_console_line, parse_kmsg, parse_transcript, split_lines)


def test_plain_6_12_console_line():
    ln = parse_console_line(1, "[    1.234567] Freeing unused kernel image memory: 1234K")
    assert ln.ts_usec == 1234567 and ln.cpu is None and ln.text.startswith("Freeing")


def test_seed_cpu_field_and_caller_and_prio():
    ln = parse_console_line(1, "[    0.000000] 001: Linux version 6.12")
    assert ln.cpu == 1 and ln.text == "Linux version 6.12"
    ln = parse_console_line(1, "[    0.100000][    T1] Run /init as init process")
    assert ln.caller == "T1" and ln.text == "Run /init as init process"
    ln = parse_console_line(1, "<6>[   12.000001] eth0: up")
    assert ln.prio == 6 and ln.ts_usec == 12000001


def test_dropped_line():
    assert parse_console_line(1, "** 42 printk messages dropped **").dropped == 42


def test_transcript_splits_firmware_and_crlf():
    data = (b"SeaBIOS (version 1.16)\r\nBooting from ROM..\r\n"
            b"[    0.000000] Linux version 6.12\r\n[    0.000001] x\r\ngarbage line\r\n\r\n")
    t = parse_transcript(data)
    assert t.firmware == ["SeaBIOS (version 1.16)", "Booting from ROM.."]
    assert [ln.text for ln in t.lines] == ["Linux version 6.12", "x"]
    assert [ln.raw for ln in t.unparsed] == ["garbage line"]


def test_split_lines_handles_mixed_endings():
    assert split_lines(b"a\r\nb\nc\r") == ["a", "b", "c"]


def test_kmsg_records_with_escapes_props_and_unknown_fields():
    data = (b"6,0,0,-;Linux version 6.12\n"
            b"4,1,5140900,c,2;tab\\x09here \\x5c done\n"
            b" SUBSYSTEM=tty\n DEVICE=c4:64\n"
            b"12,2,5140901,-,caller=T1;user message\n")
    recs = parse_kmsg(data)
    assert [r.seq for r in recs] == [0, 1, 2]
    assert recs[1].text == "tab\there \\ done" and recs[1].extra == ["2"]
    assert recs[1].props == {"SUBSYSTEM": "tty", "DEVICE": "c4:64"}
    assert recs[2].facility == 1 and recs[2].level == 4 and recs[2].extra == ["caller=T1"]


@pytest.mark.parametrize("bad,msg", [
    (b"6,0,0,-no semicolon\n", "no ';'"),
    (b"6,0;short\n", "fewer than 4"),
    (b"x,0,0,-;text\n", "invalid literal"),
    (b" KEY=V\n", "continuation line before any record"),
])
def test_kmsg_format_errors(bad, msg):
    with pytest.raises(KmsgFormatError, match=msg):
        parse_kmsg(bad)


DATA = Path(__file__).parent / "data"


def test_replay_line_and_interrupted_fragment_from_a_real_patched_boot():
    # Captured on the patched kernel: two emergency messages (KERN_ERR and
    # KERN_WARNING) took the console over from the printer thread mid-line.
    t = parse_transcript((DATA / "patched-boot-takeover.console").read_bytes())
    assert not t.unparsed
    assert [(a.raw, b.raw) for a, b in t.interrupted] == [
        ("[    1.309", "[    1.309941] 001: pci_bus 0000:00: root bus resource "
                       "[mem 0x000a0000-0x000bffff window]"),
        ("[    1.553299] 0", "[    1.553299] 001: 00:00: ttyS1 at I/O 0x2f8 (irq = 3, "
                             "base_baud = 115200) is a 16550A"),
    ]
    replays = [ln for ln in t.lines if ln.replay]
    assert len(replays) == 2
    # The fragments are not kernel lines of their own.
    assert all(ln.raw not in ("[    1.309", "[    1.553299] 0") for ln in t.lines)
    assert all(ln.cpu is not None for ln in t.lines if not ln.replay)


def test_fragment_that_is_a_whole_line_is_a_reprint():
    data = (b"[    1.000000] 000: first\r\n"
            b"[    1.000001] 001: emergency\r\n"
            b"** replaying previous printk message **\r\n"
            b"[    1.000000] 000: first\r\n")
    t = parse_transcript(data)
    assert [ln.text for ln in t.lines if not ln.replay] == ["emergency", "first"]
    assert t.interrupted[0][0].lineno == 1


def test_replay_line_without_fragment_leaves_lines_alone():
    data = b"[    1.000000] 000: a\r\n** replaying previous printk message **\r\n[    2.0] 000: b\r\n"
    t = parse_transcript(data)
    assert not t.interrupted and [ln.text for ln in t.lines][0] == "a"


def test_chained_takeovers_from_a_real_patched_run():
    # Captured on the patched kernel (S2): CPU 1's printer was cut three times
    # while printing one record, at byte 1, after "001:" and after the
    # timestamp (shorter than the cut before it), by emergency lines from both
    # CPUs, each cut followed by a replay line; the fourth attempt is whole.
    t = parse_transcript((DATA / "patched-s2-chained-takeovers.console").read_bytes())
    whole = "[    2.086232] 001: rigprintk: scen=S2 cpu=1 ctx=task seq=7 lvl=6 pad=" + "x" * 20
    chain = [(a.raw, a.lineno) for a, b in t.interrupted if b.raw == whole]
    assert chain == [("[", 205), ("[    2.086232] 001:", 214), ("[    2.086232] ", 217)]
    assert all(ln.cpu is not None for ln in t.lines if ln.dropped is None and not ln.replay)
    assert [ln.raw for ln in t.lines].count(whole) == 1


def test_the_last_attempt_of_a_chain_is_the_whole_line():
    # The transcript cannot tell that "firs" was cut too: the last attempt
    # after a replay line is the record as printed.
    data = (b"[    1.000000] 000: fir\r\n"
            b"[    1.000001] 001: emergency\r\n"
            b"** replaying previous printk message **\r\n"
            b"[    1.000000] 000: firs\r\n")
    t = parse_transcript(data)
    assert [(a.text, b.text) for a, b in t.interrupted] == [("fir", "firs")]
    assert [ln.text for ln in t.lines if not ln.replay] == ["emergency", "firs"]


def test_cut_replay_and_dropped_lines_from_real_patched_runs():
    # A takeover cuts the replay line too (an oops on the patched kernel,
    # captured in rig/tests/data for rig diff); the printer prints it again whole.
    t = parse_transcript(lzma.decompress((DATA / "patched-oops.console.xz").read_bytes()))
    assert not t.unparsed
    cut = [(a.lineno, a.raw, b.raw) for a, b in t.interrupted if a.raw.startswith("*")]
    assert cut == [(184, "** replaying previo", "** replaying previous printk message **")]
    assert all(ln.replay for ln in t.lines if ln.raw.startswith("**"))
    # S9's flood: cut replay lines never printed whole, cut dropped lines.
    t = parse_transcript(lzma.decompress((DATA / "patched-s9-flood-a.console.xz").read_bytes()))
    assert not any(ln.raw.startswith("*") for ln in t.unparsed)
    assert [ln.dropped for ln in t.lines if ln.dropped is not None] == [953, 1]


def test_a_whole_dropped_line_is_no_fragment_and_no_attempt():
    # S9 on the debug profile: "** 25 printk messages dropped **" printed whole
    # several times, and after a replay line the dropped line comes before the
    # record printed again. Every whole dropped line is a count, the record
    # after a replay line is the attempt its fragment pairs with.
    data = lzma.decompress((DATA / "patched-debug-s9-flood.console.xz").read_bytes())
    t = parse_transcript(data)
    raw = split_lines(data)
    assert ([ln.lineno for ln in t.lines if ln.dropped is not None] ==
            [n for n, r in enumerate(raw, 1) if DROPPED_RE.match(r)])
    synthetic = (b"[    1.000000] 000: first\r\n"
                 b"[    1.000001] 001: emergency\r\n"
                 b"** replaying previous printk message **\r\n"
                 b"** 3 printk messages dropped **\r\n"
                 b"[    1.000000] 000: first record\r\n")
    t = parse_transcript(synthetic)
    assert [(a.text, b.text) for a, b in t.interrupted] == [("first", "first record")]
    assert [ln.dropped for ln in t.lines if ln.dropped is not None] == [3]


@pytest.mark.parametrize("raw,cut", [
    ("*", True), ("** replayin", True), ("** 5", True), ("** 53 printk messages dr", True),
    ("** 53 printk messages dropped *", True), (REPLAY_LINE, False),
    ("** 53 printk messages dropped **", False), ("***", False), ("** note", False), ("", False),
])
def test_cut_marker(raw, cut):
    assert cut_marker(raw) is cut
