"""rig.vm.completeness on a console log held to the count of bytes the
harness read from QEMU's console (real runs exercise it in test_faults.py)."""
from types import SimpleNamespace

from rig.vm.completeness import console_problem


def run_with_console(tmp_path, logged: bytes, sent: int):
    (tmp_path / "console.log").write_bytes(logged)
    return tmp_path, SimpleNamespace(console_log_expected=lambda: sent)


def test_a_console_log_short_of_what_the_console_sent_is_incomplete(tmp_path):
    run_dir, machine = run_with_console(tmp_path, b"x" * 9, 10)
    assert console_problem(run_dir, machine) == [
        "console.log holds 9 bytes, QEMU's console sent 10: QEMU could not write the last 1 "
        "(a full disk or a write error)"]
    assert console_problem(*run_with_console(tmp_path, b"x" * 10, 10)) == []


def test_a_qemu_killed_by_a_signal_may_not_have_logged_its_last_bytes(tmp_path):
    run_dir, machine = run_with_console(tmp_path, b"x" * 9, 10)
    assert console_problem(run_dir, machine, died_by_signal=True) == []
    # More than was sent is never explained by a crash.
    run_dir, machine = run_with_console(tmp_path, b"x" * 11, 10)
    assert console_problem(run_dir, machine, died_by_signal=True) != []
