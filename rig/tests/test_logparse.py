import pytest

from rig.logparse import (KmsgFormatError, parse_console_line, parse_kmsg, parse_transcript,
                          split_lines)


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
