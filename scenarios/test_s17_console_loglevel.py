"""S17 console loglevel: with loglevel=4 the INFO records stay off the console
without being counted as dropped, and EMERG always reaches it; /dev/kmsg has
every record. Inherited from 6.12: both flavors must pass."""
import pytest

from rig.rigprintk import mask, parse_tag

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]


def test_s17_suppressed_records_are_not_dropped_and_emerg_gets_through(rig_run, flavor):
    ev = rig_run(flavor, "S17", "run,kmsg", extra="loglevel=4", flood_count=10,
                 flood_cpus=mask([0]), flood_emerg_every=5, flood_emerg_level=0)
    on_console = {t.seq: t.level for _, t in ev.tagged("S17")}
    assert on_console == {4: 0, 9: 0}, (f"console shows records {sorted(on_console)} of S17; "
                                        f"expected only the two EMERG ones ({ev.where()})")
    dropped = [ln.raw for ln in ev.transcript.lines if ln.dropped is not None]
    assert not dropped, f"suppressed records counted as dropped: {dropped} ({ev.where()})"
    in_kmsg = sorted(t.seq for t in (parse_tag(r.text) for r in ev.kmsg)
                     if t and t.scen == "S17")
    assert in_kmsg == list(range(10)), f"/dev/kmsg has {in_kmsg} ({ev.where()})"
