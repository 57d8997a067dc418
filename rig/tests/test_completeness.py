"""rig.vm.completeness on a console log held to the count of bytes the
harness read from QEMU's console (real runs exercise it in test_faults.py)."""
import hashlib
from types import SimpleNamespace

from rig.vm.completeness import console_problem


def run_with_console(tmp_path, logged: bytes, sent: int):
    (tmp_path / "console.log").write_bytes(logged)
    return tmp_path, SimpleNamespace(console_log_expected=lambda: sent,
                                     console_is_live_view=False)


def test_a_console_log_short_of_what_the_console_sent_is_incomplete(tmp_path):
    run_dir, machine = run_with_console(tmp_path, b"x" * 9, 10)
    assert console_problem(run_dir, machine) == [
        "console.log holds 9 bytes, QEMU's console sent 10: QEMU could not write the last 1 "
        "(a full disk or a write error)"]
    assert console_problem(*run_with_console(tmp_path, b"x" * 10, 10)) == []


def test_a_qemu_killed_by_a_signal_may_not_have_logged_its_last_bytes(tmp_path):
    run_dir, machine = run_with_console(tmp_path, b"x" * 9, 10)
    assert console_problem(run_dir, machine, died_by_signal=True) == []


def test_a_log_with_more_than_the_harness_read_is_whole(tmp_path):
    # QEMU's exit hung up its pty with bytes the harness had not read yet:
    # the tty discards them, the log has them (a debug-profile run did).
    run_dir, machine = run_with_console(tmp_path, b"x" * 11, 10)
    assert console_problem(run_dir, machine) == []
    assert console_problem(run_dir, machine, died_by_signal=True) == []


def live_view(tmp_path, logged: bytes, prefix: int, seen: bytes):
    (tmp_path / "console.log").write_bytes(logged)
    tally = SimpleNamespace(bytes=len(seen), sha256=hashlib.sha256(seen))
    return tmp_path, SimpleNamespace(console_is_live_view=True, console_prefix=prefix,
                                     tally=tally)


def test_a_remote_console_log_must_begin_with_what_the_stream_showed(tmp_path):
    # A restore's prefix, then what the stream showed, then its cut end.
    assert console_problem(*live_view(tmp_path, b"PRE" + b"seen" + b"tail", 3, b"seen")) == []
    assert console_problem(*live_view(tmp_path, b"PRE" + b"se", 3, b"seen")) == [
        "console.log holds 5 bytes, fewer than the 7 the console stream showed: QEMU could "
        "not write them (a full disk in the host's pool or a write error)"]
    assert "is not the console's" in console_problem(
        *live_view(tmp_path, b"PRE" + b"SEEN", 3, b"seen"))[0]
