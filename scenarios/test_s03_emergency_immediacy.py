"""S3 emergency immediacy: an emergency-level printk() has every byte of its
line (prefix, text, CRLF) written to THR between the module's before/after
markers, by the calling CPU.

Vanilla passes too when the console is idle: its printk() caller takes the
console lock and prints the line itself. S4 shows the difference under load."""
import pytest

from rig.evidence.properties import assert_immediate, single

pytestmark = [pytest.mark.boots, pytest.mark.emergency, pytest.mark.golden]


def test_s3_emergency_line_is_written_during_the_call(rig_run, flavor):
    ev = rig_run(flavor, "S3", "run", single_level=3, markers=True)
    assert_immediate(ev, *single(ev, "S3"))
