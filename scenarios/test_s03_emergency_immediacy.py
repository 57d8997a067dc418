"""S3 emergency immediacy: an emergency-level printk() has every byte of its
line (prefix, text, CRLF) written to THR between the module's before/after
markers, by the calling CPU.

Vanilla passes too when the console is idle: its printk() caller takes the
console lock and prints the line itself. S4 shows the difference under load.
Not on PREEMPT_RT (the rt profile): there 6.12 prints legacy consoles from a
thread, and vanilla has no emergency write to put the line out during the call."""
import pytest

from rig.evidence.properties import assert_immediate, single

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]


def test_s3_emergency_line_is_written_during_the_call(rig_run, flavor, lacks):
    lacks("vanilla", "no emergency messages, and PREEMPT_RT prints the legacy ttyS0 from the "
          "legacy printer thread: the ERR line goes out after its printk() returned", ("rt",))
    ev = rig_run(flavor, "S3", "run", single_level=3, markers=True)
    assert_immediate(ev, *single(ev, "S3"))
