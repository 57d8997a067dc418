"""S11 /dev/kmsg semantics, observed by rig/guest/kmsgtest.c inside the guest
and judged here against the documented ABI (Documentation/ABI/testing/dev-kmsg).

One record per read; `<N>` prefixes (default facility LOG_USER); `\\xNN`
escaping; EAGAIN on an empty non-blocking read; poll(); seeks (offset 0 only,
SEEK_CUR refused, SEEK_DATA after a syslog clear); EPIPE after an overrun,
then the oldest record; a too-small buffer gets EINVAL and loses nothing.

6.12 loses the record on a too-small buffer (it advances the reader before
the size check); kernel-patches/0006 fixes it, so that one property is a
strict xfail on vanilla and everything else must hold on both."""
from typing import Dict, List, Tuple

import pytest

from rig.evidence import logparse

pytestmark = [pytest.mark.boots, pytest.mark.kmsg]


def observations(ev, section: str) -> List[Tuple[str, List[str]]]:
    out = []
    for line in logparse.split_lines(ev.side.section(section)):
        if line:
            name, _, rest = line.partition(" ")
            out.append((name, rest.split(" ", 2)))
    return out


def first(obs, name) -> List[str]:
    found = next((v for n, v in obs if n == name), None)
    assert found is not None, f"kmsgtest did not report {name}"
    return found


def record(obs, name) -> logparse.KmsgRecord:
    v = first(obs, name)
    assert v[1] == "OK", f"{name}: read failed with {v[1]}"
    return logparse.parse_kmsg((v[2] + "\n").encode())[0]


@pytest.fixture(scope="module")
def kmsg_runs() -> Dict[str, object]:
    return {}


@pytest.fixture
def obs(rig_run, flavor, kmsg_runs):
    """One kmsgtest boot per flavor, shared by the S11 tests."""
    # Deterministic, to share the host with the other deterministic boots;
    # not golden-compared: whichever test comes first boots it.
    if flavor not in kmsg_runs:
        ev = rig_run(flavor, "S11", "kmsgtest", clock="icount")
        kmsg_runs[flavor] = (ev, observations(ev, "kmsgtest"))
    return kmsg_runs[flavor]


def test_s11_one_record_per_read_prefixes_and_escaping(obs):
    ev, o = obs
    reads = [v for n, v in o if n == "record"]
    assert len(reads) == 4 and all(v[1] == "OK" for v in reads), reads
    recs = [logparse.parse_kmsg((v[2] + "\n").encode()) for v in reads]
    assert all(len(r) == 1 for r in recs), "a read returned more or less than one record"
    r3, r27, rnone, rctl = (r[0] for r in recs)
    assert (r3.facility, r3.level) == (1, 3), f"<3> gave prio {r3.prio}; expected user.err"
    assert (r27.facility, r27.level) == (3, 3), f"<27> gave prio {r27.prio}"
    assert rnone.facility == 1, f"no prefix gave facility {rnone.facility}, not LOG_USER"
    raw = reads[3][2]
    assert "ctl\\x01 back\\x5cslash" in raw, f"not escaped as \\xNN: {raw!r}"
    assert rctl.text.endswith("ctl\x01 back\\slash")
    assert first(o, "after-last")[1] == "EAGAIN"


def test_s11_poll_and_seeks(obs):
    ev, o = obs
    assert first(o, "poll-pending")[0] == "1" and first(o, "poll-at-end")[0] == "0"
    assert first(o, "seek-set-nonzero")[0] == "ESPIPE"
    assert first(o, "seek-cur")[0] == "EINVAL"
    assert record(o, "first").seq == 0, "SEEK_SET did not go to the first record"
    assert record(o, "data").text == "kmsgtest: after clear", \
        "SEEK_DATA did not go to the first record after the syslog clear"
    assert first(o, "end")[1] == "EAGAIN", "SEEK_END did not go past the last record"


def test_s11_overrun_gives_epipe_then_the_oldest_record(obs):
    ev, o = obs
    assert first(o, "overrun-poll")[0] == "IEP", (
        f"/dev/kmsg overrun: poll() of the reader left behind gave "
        f"{first(o, 'overrun-poll')[0]}, not POLLIN|POLLERR|POLLPRI ({ev.where()})")
    assert first(o, "overrun")[1] == "EPIPE", (f"/dev/kmsg overrun: the read gave "
                                               f"{first(o, 'overrun')}, not EPIPE")
    assert first(o, "overrun-poll-after")[0] == "I", (
        f"/dev/kmsg overrun: poll() after the EPIPE gave {first(o, 'overrun-poll-after')[0]}, "
        f"not POLLIN alone ({ev.where()})")
    nxt, oldest = record(o, "overrun-next"), record(o, "overrun-oldest")
    assert nxt.seq == oldest.seq and "kmsgtest: overrun" in nxt.text, (
        f"/dev/kmsg overrun: after EPIPE the reader got record seq {nxt.seq} {nxt.text[:40]!r}, "
        f"the oldest in the buffer was seq {oldest.seq} ({ev.where()})")


def test_s11_too_small_buffer_loses_nothing(obs, flavor, lacks):
    lacks("vanilla", "6.12 advances the reader before the size check: the record is lost")
    ev, o = obs
    assert first(o, "small")[1] == "EINVAL", (f"/dev/kmsg too-small buffer: the read gave "
                                              f"{first(o, 'small')}, not EINVAL")
    retry = first(o, "small-retry")
    got = " ".join(retry[2:])
    assert retry[1] == "OK" and "kmsgtest: small buffer" in got, (
        f"/dev/kmsg too-small buffer: after EINVAL the record was gone: the retry gave "
        f"{retry[1]} {got!r} ({ev.where()})")
