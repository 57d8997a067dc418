"""S16 real userspace clients: Debian's util-linux dmesg (the real binary,
with its shared libraries, in the initramfs) reads /dev/kmsg without errors
and shows each record's level, facility and text as /dev/kmsg has them,
although the patched kernel's header carries an extra CPU field; busybox
dmesg reads the same records through syslog(2).

Both flavors must pass: the CPU field must not break existing readers."""
import re

import pytest

from rig.evidence import logparse

# Deterministic (-icount): the same run every time, its boots run beside the
# other deterministic ones (rig/vm/hostshare.py), and its wire-bound waits take
# less wall time than in real time.
pytestmark = [pytest.mark.boots, pytest.mark.kmsg, pytest.mark.golden]

LEVELS = ["emerg", "alert", "crit", "err", "warn", "notice", "info", "debug"]
FACILITIES = ["kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp",
              "cron", "authpriv", "ftp"]
RAW = re.compile(r"^<(\d+)>\[\s*(\d+)\.(\d{6})\] (.*)$")
DECODED = re.compile(r"^(\w+)\s*:(\w+)\s*: \[\s*(\d+)\.(\d{6})\] (.*)$")


def single_line_records(ev):
    return [r for r in ev.kmsg if "\n" not in r.text]


def continuation_lines(ev):
    """The second and later lines of multi-line records: the clients print
    them on lines of their own, indented, without prefix (the kernel writes
    such records now and then, e.g. calibrate_delay's warning under host load)."""
    return {ln.strip() for r in ev.kmsg if "\n" in r.text for ln in r.text.split("\n")[1:]}


def test_s16_util_linux_dmesg_reads_dev_kmsg(rig_run, flavor):
    ev = rig_run(flavor, "S16", "run,dmesg,kmsg", flood_count=5, flood_emerg_every=2)
    for name in ("util-dmesg", "util-dmesg-raw"):
        assert ev.side.section(f"{name}-status").strip() == b"0", (
            f"{name} exited with {ev.side.section(name + '-status')!r}: "
            f"{ev.side.section(name)[-300:]!r} ({ev.where()})")
    raw = logparse.split_lines(ev.side.section("util-dmesg-raw"))
    decoded = logparse.split_lines(ev.side.section("util-dmesg"))
    records = {r.seq: r for r in single_line_records(ev)}
    by_text = {}
    for r in records.values():
        by_text.setdefault((r.ts_usec, r.text), r)
    continued = continuation_lines(ev)
    matched = 0
    for line in raw:
        m = RAW.match(line)
        if m is None and line.strip() in continued:
            continue
        assert m, f"util-linux dmesg --raw printed a line it should not: {line!r} ({ev.where()})"
        r = by_text.get((int(m[2]) * 1_000_000 + int(m[3]), m[4]))
        if r is None:
            continue            # a record with a newline, or one after the dump
        # --raw shows the level; the facility is checked in the decoded output.
        assert int(m[1]) & 7 == r.level, (f"record seq {r.seq}: dmesg says <{m[1]}>, "
                                          f"/dev/kmsg level {r.level}")
        matched += 1
    assert matched >= 0.9 * len(records), (
        f"util-linux dmesg showed {matched} of the {len(records)} records of the /dev/kmsg "
        f"dump ({ev.where()})")
    for line in decoded:
        m = DECODED.match(line)
        if m is None and line.strip() in continued:
            continue
        assert m, f"util-linux dmesg --decode printed {line!r} ({ev.where()})"
        r = by_text.get((int(m[3]) * 1_000_000 + int(m[4]), m[5]))
        if r is not None:
            assert (m[1], m[2]) == (FACILITIES[r.facility], LEVELS[r.level]), (
                f"record seq {r.seq}: dmesg decodes {m[1]}:{m[2]}, /dev/kmsg has facility "
                f"{r.facility} level {r.level}")


def test_s16_busybox_dmesg_reads_syslog(rig_run, flavor):
    ev = rig_run(flavor, "S16-busybox", "dmesg,kmsg")
    assert ev.side.section("busybox-dmesg-status").strip() == b"0"
    lines = logparse.split_lines(ev.side.section("busybox-dmesg"))
    texts = {r.text for r in single_line_records(ev)}
    parsed = [logparse.parse_console_line(i, ln) for i, ln in enumerate(lines, 1)]
    continued = continuation_lines(ev)
    bad = [ln for ln, p in zip(lines, parsed) if p is None and ln.strip() not in continued]
    assert not bad, f"busybox dmesg line does not parse: {bad[0]!r} ({ev.where()})"
    found = sum(1 for p in parsed if p.text in texts)
    assert found >= 0.9 * len(texts), (
        f"busybox dmesg (syslog(2)) showed {found} of {len(texts)} /dev/kmsg records "
        f"({ev.where()})")
