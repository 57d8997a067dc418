"""S21 continuation records: a record built with pr_cont() reaches the
console whole, once, with the CPU that printed it.

CPU 1 prints ten ERR records in three pieces each (`printk()` without a
newline, then two `pr_cont()`), with preemption off so the pieces share a
CPU, while CPU 0 floods INFO lines. 6.12 keeps a continuation in the same
record only while no other caller stored a record in between; otherwise
each piece becomes a record of its own. Either way, the property is the
same, record by record, as /dev/kmsg lists them:

- every record of the module's pieces (a whole tag, or a piece of one) is
  on the console exactly once, as a line of its own with the same text;
- where the kernel has a CPU field, a line's field is the record's and, for
  a whole tag, the tag's; a whole ERR record (an emergency) is written by
  its own vCPU during the pr_cont() call that completed it (the module marks
  that call on the UART);
- across all records, every one of the ten tags is accounted for, whole or
  in its pieces.

Vanilla passes without the CPU-field and immediacy checks (it has no CPU
field and no emergency writes)."""
import re
from collections import Counter

import pytest

from rig.evidence.properties import (assert_immediate, assert_written_by_its_cpu_or_handed,
                                     printed_records)
from rig.rigprintk import mask, parse_tag

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]

COUNT = 10
CONT_CPU = 1
# A whole tag of CPU 1 or a piece of one (CPU 0's flood records are whole).
PIECE = re.compile(rf"^(rigprintk: scen=S21 cpu={CONT_CPU} ctx=task( seq=\d+ lvl=\d( pad=x*)?)?"
                   r"| ?seq=\d+ lvl=\d( pad=x*)?| ?pad=x*)$")


def test_s21_continued_records_are_whole_once_with_their_cpu(rig_run, flavor, like):
    ev = rig_run(flavor, "S21", "run,kmsg", cont_count=COUNT, single_cpu=CONT_CPU,
                 single_len=20, markers=True, flood_count=60, flood_cpus=mask([0]),
                 flood_wait=False, flood_backlog_ms=5)
    pieces = [r for r in ev.kmsg if PIECE.match(r.text)]
    assert pieces, f"continuation records: none in /dev/kmsg ({ev.where()})"
    lines = printed_records(ev)
    # A record split by another CPU's record in between leaves pieces of
    # equal text (the first piece of two tags): as many lines as records.
    records_of = Counter(r.text.strip() for r in pieces)
    for r in pieces:
        on_console = [ln for ln in lines if ln.text.strip() == r.text.strip()]
        want = records_of[r.text.strip()]
        assert len(on_console) == want, (
            f"continuation records: /dev/kmsg record seq {r.seq} {r.text!r} is on the "
            f"console {len(on_console)} times, not once as a line of its own"
            + (f" (/dev/kmsg has {want} records of that text)" if want > 1 else "")
            + f" ({ev.where()})")
        line = on_console[0]
        if like != "vanilla":
            assert line.cpu == int(r.extra[0]), (
                f"continuation records: record seq {r.seq} {r.text!r} was stored on CPU "
                f"{r.extra[0]}, its console line says CPU {line.cpu} ({ev.where()})")
        tag = parse_tag(r.text)
        if tag is None:
            continue
        if like != "vanilla":
            assert line.cpu == tag.cpu, (
                f"continuation records: console line {line.lineno} says CPU {line.cpu}, the "
                f"module printed the record on CPU {tag.cpu} ({ev.where()})")
            if tag.level < 5:
                assert_written_by_its_cpu_or_handed(ev, line, tag.cpu, may_hand=False)
                # An emergency record goes out during the call that completes it.
                assert_immediate(ev, line, tag)
    whole = {t.seq for t in map(parse_tag, (r.text for r in pieces)) if t}
    split = {int(m.group(1)) for r in pieces for m in [re.search(r"seq=(\d+)", r.text)]
             if m and parse_tag(r.text) is None}
    assert whole | split == set(range(COUNT)), (
        f"continuation records: tags {sorted(set(range(COUNT)) - whole - split)} are in "
        f"no record, whole or in pieces ({ev.where()})")
