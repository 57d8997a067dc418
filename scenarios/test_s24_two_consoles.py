"""S24 more than one console: ttyS0 (the 8250's nbcon console), the test
module's nbcon console on the second instrumented UART (riguart2, its own
register log) and the module's legacy test console, all registered while
CPU 0 floods INFO records with an ERR record every tenth.

- Every emergency line reaches both nbcon consoles during its printk()
  call, written with write_atomic() by the calling CPU (each UART's
  register log, between the module's markers in it).
- Each console prints every record exactly once and in order from the
  record that announced it ("console [...] enabled"; the legacy test
  console gets the history): the per-console "already written" marks of
  one console must not make another skip or repeat a record. On the
  nbcon consoles of the patched kernel, emergency records overtake the
  backlog, so they are in order among themselves.

S13 checks a late nbcon console's history and its dropped count.

Vanilla has no emergency messages: the ERR lines wait for riguart2's
printer thread."""
import pytest

from rig.evidence.properties import assert_immediate, assert_records_once_in_order
from rig.rigprintk import mask

pytestmark = [pytest.mark.boots, pytest.mark.emergency]

# On the icount clock: the two tests make the same request, so they judge one
# run (scenarios/conftest.py, SHARED_RUNS), and the run shares the host.
FLOOD = dict(flood_count=200, flood_cpus=mask([0]), flood_len=40, flood_emerg_every=10,
             flood_emerg_level=3, markers=True, early_console=True, second_console="early",
             clock="icount")
STEPS = "run,conlog,kmsg"
SECOND = "console [riguart2] enabled"
# The legacy test console's output is read by this step: it holds what came before.
CONLOG_READ = "rig-init: step conlog begin"


def test_s24_emergency_lines_reach_every_nbcon_console_during_the_call(rig_run, flavor, lacks):
    lacks("vanilla", "no emergency messages: riguart2's printer thread prints the ERR lines "
          "after their printk() returned")
    ev = rig_run(flavor, "S24", STEPS, second_uart=True, **FLOOD)
    second = ev.second_console()
    on_second = {tag.key: line for line, tag in second.tagged("S24")}
    emergency = [(line, tag) for line, tag in ev.tagged("S24") if tag.level == 3]
    assert len(emergency) == FLOOD["flood_count"] // FLOOD["flood_emerg_every"], (
        f"records once: {len(emergency)} ERR lines of the flood on ttyS0 ({ev.where()})")
    for line, tag in emergency:
        assert_immediate(ev, line, tag)
        assert tag.key in on_second, (
            f"records once on riguart2: ERR line {line.raw!r} is not on it ({ev.where()})")
        assert_immediate(second, on_second[tag.key], tag)


def test_s24_every_console_prints_every_record_once_in_order(rig_run, flavor, like):
    ev = rig_run(flavor, "S24", STEPS, second_uart=True, **FLOOD)
    # Patched: warnings and worse are emergency messages, ahead of the backlog
    # on the nbcon consoles; the legacy console gets them in order.
    overtaking = 0 if like == "vanilla" else 5
    second_from = ev.record_seq(SECOND)
    assert second_from is not None, f"no {SECOND!r} record in /dev/kmsg ({ev.where()})"
    assert_records_once_in_order(ev, overtaking_below=overtaking)
    assert_records_once_in_order(ev.second_console(), overtaking_below=overtaking,
                                 from_seq=second_from)
    assert_records_once_in_order(ev.test_console(), to_seq=ev.record_seq(CONLOG_READ))


def test_s24_without_the_second_uart_the_module_names_it(rig_run, flavor):
    """Bad input: a run that asks for the second console on a machine
    without its UART ends in error, and the console says what is missing."""
    ev = rig_run(flavor, "S24-no-uart", "run", expect="guest-error", second_console="early")
    want = "rigprintk: no UART at 0x3e8 for the second console"
    assert any(want in ln.text for ln in ev.transcript.lines), (
        f"second console: the run without its UART does not say {want!r} on the console "
        f"({ev.where()})")
