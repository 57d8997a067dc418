"""rig.vm.phases.drive: the phase state machine on scripted wait results (the
real boots that exercise it are in test_lifecycle.py and the scenarios)."""
from rig.vm.phases import default_phases, drive, panic_hold_phases, warm_reset_phases


class Script:
    """A machine whose waits end as scripted, in order."""
    def __init__(self, *ends):
        self.ends, self.asked = list(ends), []

    def wait(self, until, timeout_s, watch_panic=True):
        self.asked.append((until, watch_panic))
        return self.ends.pop(0)


def ended(driven):
    return [(r.name, r.ended_by) for r in driven.results]


def test_a_clean_boot_ends_with_qemus_exit():
    d = drive(Script("matched", "matched", "matched", "qemu-exit"), default_phases(), True)
    assert ended(d) == [("firmware", "matched"), ("kernel", "matched"), ("init", "matched"),
                        ("exit", "qemu-exit")]
    assert d.hung is None and d.last == "exit"


def test_a_timeout_hangs_the_boot_and_skips_the_rest():
    d = drive(Script("matched", "timeout"), default_phases(), True)
    assert d.hung == "kernel"
    assert ended(d)[-2:] == [("init", "skipped"), ("exit", "skipped")]


def test_an_unexpected_panic_waits_for_qemu_to_exit():
    d = drive(Script("matched", "matched", "panic", "qemu-exit"), default_phases(), True)
    assert ended(d) == [("firmware", "matched"), ("kernel", "matched"), ("init", "panic"),
                        ("exit", "qemu-exit")]
    d = drive(Script("matched", "matched", "panic", "timeout"), default_phases(), True)
    assert d.hung == "init (after it, QEMU did not exit)"


def test_an_expected_panic_ends_its_phase_and_the_boot_goes_on():
    m = Script("matched", "matched", "panic", "matched", "matched", "matched", "qemu-exit")
    d = drive(m, warm_reset_phases(), True)
    assert ("panic", "matched") in ended(d) and d.hung is None
    assert [watch for _, watch in m.asked[3:]] == [False] * 4   # the banner repeats after it


def test_a_hold_that_holds_ends_the_boot():
    d = drive(Script("matched", "matched", "matched", "matched", "timeout"),
              panic_hold_phases(), True)
    assert ended(d)[-1] == ("hold", "held") and d.hung is None
    d = drive(Script("matched", "matched", "matched", "matched", "qemu-exit"),
              panic_hold_phases(), True)
    assert ended(d)[-1] == ("hold", "qemu-exit")


def test_a_machine_that_is_not_alive_only_waits_for_its_exit():
    d = drive(Script("qemu-exit"), default_phases(), False)
    assert ended(d) == [("exit", "qemu-exit")] and d.last is None
    d = drive(Script("timeout"), default_phases(), False)
    assert d.hung == "qemu (after it, QEMU did not exit)"
