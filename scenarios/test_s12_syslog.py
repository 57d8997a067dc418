"""S12 syslog(2), observed by `kmsgtest syslog` (rig/guest/kmsgtest.c) inside
the guest and judged here against syslog(2) and /dev/kmsg: SIZE_BUFFER,
READ_ALL, the consuming READ and SIZE_UNREAD, CLEAR and READ_CLEAR agree
with each other and with /dev/kmsg (read by kmsgtest right after READ_ALL), also after the buffer wrapped while
both the READ position and the READ_ALL start lagged behind.

syslog(2) is inherited from 6.12: both flavors must pass."""
import re
from typing import Dict, List, Tuple

import pytest

from rig.evidence import logparse

pytestmark = [pytest.mark.boots, pytest.mark.kmsg]

BODY_RE = re.compile(rb"^@(?P<name>[a-z-]+) (?P<len>-?\d+)\n", re.M)
WRAP_RE = re.compile(r"^kmsgtest: wrap (\d+) 0+$")
WRAP_RECORDS = 3000


def parse_syslogtest(data: bytes) -> Tuple[Dict[str, int], Dict[str, bytes]]:
    """("name value" lines, "@name LEN ... @name-end" bodies) of kmsgtest syslog."""
    values, bodies, pos = {}, {}, 0
    for m in BODY_RE.finditer(data):
        for line in data[pos:m.start()].decode().splitlines():
            if line:
                name, value = line.split(" ", 1)
                values[name] = int(value) if re.fullmatch(r"-?\d+", value) else value
        n = int(m.group("len"))
        body = data[m.end():m.end() + max(n, 0)]
        end = b"\n@" + m.group("name") + b"-end\n"
        assert data.startswith(end, m.end() + max(n, 0)), (
            f"syslogtest body {m.group('name').decode()} is not {n} bytes long")
        bodies[m.group("name").decode()] = body
        pos = m.end() + max(n, 0) + len(end)
    for line in data[pos:].decode("utf-8", "replace").splitlines():
        if line:
            name, value = line.split(" ", 1)
            values[name] = int(value) if re.fullmatch(r"-?\d+", value) else value
    return values, bodies


def lines(body: bytes) -> List[logparse.ConsoleLine]:
    out = [logparse.parse_console_line(i, raw)
           for i, raw in enumerate(body.decode("utf-8", "replace").splitlines(), 1)]
    assert all(ln is not None and ln.prio is not None for ln in out), (
        "a syslog(2) line is not '<N>[timestamp] text'")
    return out


def texts(body: bytes) -> List[str]:
    return [ln.text for ln in lines(body)]


def ours(body: bytes) -> List[str]:
    """kmsgtest's own records: the kernel may log something of its own meanwhile."""
    return [t for t in texts(body) if t.startswith("kmsgtest: ")]


def assert_counted(what: str, size_unread: int, body: bytes):
    """SIZE_UNREAD counted exactly the whole lines READ then returned first (a
    kernel record that arrived in between may follow them)."""
    assert size_unread <= len(body) and body[size_unread - 1:size_unread] == b"\n", (
        f"{what}: SIZE_UNREAD said {size_unread} bytes, READ gave {len(body)} "
        f"that do not end a line there")
    extra = texts(body[size_unread:])
    assert not [t for t in extra if t.startswith("kmsgtest: ")], (
        f"{what}: SIZE_UNREAD did not count kmsgtest records {extra}")


@pytest.fixture(scope="module")
def syslog_runs() -> Dict[str, object]:
    return {}


@pytest.fixture
def syslog(rig_run, flavor, syslog_runs):
    """One syslogtest boot per flavor, shared by the S12 tests."""
    # Deterministic, to share the host with the other deterministic boots;
    # not golden-compared: whichever test comes first boots it.
    if flavor not in syslog_runs:
        ev = rig_run(flavor, "S12", "syslogtest", clock="icount")
        syslog_runs[flavor] = (ev,) + parse_syslogtest(ev.side.section("syslogtest"))
    return syslog_runs[flavor]


def test_s12_read_all_agrees_with_dev_kmsg(syslog):
    ev, values, bodies = syslog
    assert values["size-buffer"] == 128 * 1024, f"SIZE_BUFFER {values['size-buffer']}"
    syslog_texts = texts(bodies["read-all"])
    kmsg_texts = [ln for r in logparse.parse_kmsg(bodies["kmsg"]) for ln in r.text.split("\n")]
    missing = [t for t in syslog_texts if t not in kmsg_texts]
    assert syslog_texts and not missing, (
        f"READ_ALL records missing from /dev/kmsg: {missing[:3]} ({ev.where()})")


def test_s12_consuming_read_and_size_unread(syslog):
    ev, values, bodies = syslog
    assert bodies["read"].startswith(bodies["read-all"]), (
        "the first consuming READ does not start with what READ_ALL returned")
    assert values["size-unread-after-read"] == 0, (
        f"SIZE_UNREAD {values['size-unread-after-read']} after READ consumed everything")
    three = ours(bodies["read-three"])
    assert three == [f"kmsgtest: s12 unread {i}" for i in range(3)], (
        f"READ after three new records gave {three}")
    assert_counted("three records", values["size-unread-three"], bodies["read-three"])


def test_s12_clear_and_read_clear(syslog):
    ev, values, bodies = syslog
    assert values["clear"] == 0, f"CLEAR returned {values['clear']}"
    assert values["read-all-after-clear"] == 0, "READ_ALL returned records after CLEAR"
    after = ours(bodies["read-after-clear"])
    assert after == ["kmsgtest: s12 before clear"], (
        f"CLEAR moved the READ position: READ then gave {after}")
    assert_counted("after CLEAR", values["size-unread-after-clear"], bodies["read-after-clear"])
    assert ours(bodies["read-clear"]) == ["kmsgtest: s12 read-clear"], (
        "READ_CLEAR did not return the one record since CLEAR")
    assert values["read-all-after-read-clear"] == 0, "READ_CLEAR did not clear READ_ALL"


def test_s12_read_and_read_all_after_a_buffer_wrap(syslog):
    ev, values, bodies = syslog
    wrap = wrap_indexes(bodies["read-wrap"])
    assert wrap and wrap[0] > 0, (
        f"READ after {WRAP_RECORDS} records into the 128 KB buffer starts at wrap record "
        f"{wrap[:1]}: the buffer did not wrap")
    assert wrap == list(range(wrap[0], WRAP_RECORDS)), (
        f"READ after the wrap skipped or repeated records: {len(wrap)} records from "
        f"{wrap[0]}, expected every one up to {WRAP_RECORDS - 1}")
    assert_counted("after the wrap", values["size-unread-wrap"], bodies["read-wrap"])
    # READ_ALL came last: the same records, and any the kernel logged since.
    assert read_all_follows_read(bodies["read-wrap"], bodies["read-all-wrap"]), (
        "READ_ALL and READ disagree on what survived the wrap: READ_ALL starts at wrap "
        f"record {wrap_indexes(bodies['read-all-wrap'])[:1]}, READ at {wrap[0]}")
    first = values["kmsg-first-after-wrap"].split(" ", 2)
    assert first[1] == "OK", f"/dev/kmsg read after the wrap: {first[1]}"
    oldest = WRAP_RE.match(first[2].split(";", 1)[1])
    logged_since = logged_after_the_wrap(bodies["read-all-wrap"])
    assert oldest and (int(oldest.group(1)) == wrap[0]
                       or (int(oldest.group(1)) > wrap[0] and logged_since)), (
        f"/dev/kmsg's oldest record after the wrap is not READ's first (wrap {wrap[0]}): "
        f"{first[2][:80]!r}")


def read_all_follows_read(read: bytes, read_all: bytes) -> bool:
    """READ_ALL, issued after READ on a full buffer, returns READ's records
    and any logged since. Records logged after the wrap's last one, even
    while READ ran (a deterministic run logs two clocksource lines then),
    may have pushed the oldest of READ's out. Lines are unique: each carries
    its timestamp."""
    read_lines = read.splitlines(keepends=True)
    all_lines = read_all.splitlines(keepends=True)
    if not all_lines or all_lines[0] not in read_lines:
        return False
    skipped = read_lines.index(all_lines[0])
    if all_lines[:len(read_lines) - skipped] != read_lines[skipped:]:
        return False
    return skipped == 0 or logged_after_the_wrap(read_all)


def logged_after_the_wrap(body: bytes) -> bool:
    """Whether a record follows the wrap's last one in this syslog output."""
    records = texts(body)
    wraps = [i for i, t in enumerate(records) if WRAP_RE.match(t)]
    return bool(wraps) and wraps[-1] < len(records) - 1


def wrap_indexes(body: bytes) -> List[int]:
    return [int(m.group(1)) for m in (WRAP_RE.match(t) for t in texts(body)) if m]
