"""S20 panic timeouts: the panic paths every other boot skips. The rig boots
with panic=-1 (reboot at once); a machine in the field runs panic=N>0
(reboot after N seconds) or panic=0 (stay). kernel-patches/0007 changes
what panic() does before a reboot for every panic_timeout other than 0, so
both other settings need their own check.

- reboot-after: panic=5. After the panic message, its backtrace and the
  panic notifiers, "Rebooting in 5 seconds.." is on the wire whole, as the
  last line, and QEMU ends by the reboot (-no-reboot).
- hold: panic=0. The kernel prints "---[ end Kernel panic - not syncing:
  ... ]---" and stays: the line is on the wire whole, as the last line, and
  QEMU still runs 2 s later (the rig's `hold` phase), when the rig ends it.

Both while CPU 0 floods, so the console is busy when the panic comes from a
task. The patched flavor passes both. Vanilla holds, but loses the
"Rebooting" line: it is printed after panic()'s console flush while the
stopped CPU 0 holds the console lock, and only panic=0 flushes once more."""
import pytest

from rig.evidence.properties import assert_last_line_whole, printed_records
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.panic, pytest.mark.golden]

PANIC = "Kernel panic - not syncing: rigprintk: panic-task on CPU"
REBOOTING = "Rebooting in 5 seconds.."


def panic_run(rig_run, flavor, name, extra, **kw):
    return rig_run(flavor, name, "run", extra=extra, expect="panic", crash="panic-task",
                   flood_count=50, flood_cpus=mask([0]), flood_wait=False,
                   flood_backlog_ms=20, **kw)


def panic_message(ev) -> str:
    line = next((ln for ln in printed_records(ev) if PANIC in ln.text), None)
    assert line is not None, f"panic timeout: no panic message on the wire ({ev.where()})"
    return line.text[line.text.index("Kernel panic"):]


def test_s20_panic_reboots_after_its_timeout(rig_run, flavor, lacks, cannot_judge):
    cannot_judge("vanilla", ("debug",), "lockdep's slower locking moves the timing: the "
                 "flooding CPU is stopped outside the console lock in this deterministic run, "
                 "so it does not reach the case the gap is about")
    lacks("vanilla", "'Rebooting in N seconds..' is stored after panic()'s console flush; "
          "the console lock is held by the stopped flooding CPU, so the caller cannot "
          "print it, and nothing flushes again before emergency_restart()")
    ev = panic_run(rig_run, flavor, "S20-reboot", "panic=5")
    panic_message(ev)
    assert_last_line_whole(ev, REBOOTING, PANIC)
    assert ev.result.outcome.exit_status is not None, (
        f"panic timeout: QEMU did not end by the reboot after 5 s: {ev.result.outcome.detail}")


def test_s20_panic_holds_with_timeout_zero(rig_run, flavor):
    ev = panic_run(rig_run, flavor, "S20-hold", "panic=0", panic_hold=True)
    ended = {p.name: p.ended_by for p in ev.result.phases}
    assert ended.get("hold") == "held", (
        f"panic timeout: with panic=0 QEMU did not stay: phases {ended} ({ev.where()})")
    assert_last_line_whole(ev, f"---[ end {panic_message(ev)} ]---", PANIC)
