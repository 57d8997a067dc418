"""rig parse on the rig's real captures (rig/tests/data)."""
import io
import json
from pathlib import Path

from rig.evidence import logcheck

DATA = Path(__file__).parent / "data"


def run(path, as_json=False, stdin=None):
    out = io.StringIO()
    code = logcheck.main(str(path), as_json, out, stdin=stdin)
    return code, out.getvalue()


def test_a_clean_boot_passes():
    code, text = run(DATA / "vanilla-boot.console.xz")
    assert code == 0 and "PASS console lines parse: 191 kernel lines" in text
    assert "PASS no crash: no crash headline" in text


def test_an_oops_fails_with_its_title_and_the_cpu_field_is_described():
    code, text = run(DATA / "patched-oops.console.xz")
    assert code == 1
    assert ("FAIL no crash: BUG: unable to handle kernel NULL pointer dereference in crash_now "
            "(line 185)") in text
    assert "info CPU field: 228 of 228 records: CPU 0: 118, CPU 1: 110" in text
    assert "info cut lines: 4 lines cut short, 3 replay lines" in text


def test_dropped_records_fail_and_json_says_so():
    code, text = run(DATA / "patched-s9-flood-a.console.xz", as_json=True)
    got = json.loads(text)
    assert code == 1 and got["ok"] is False
    dropped = next(p for p in got["properties"] if p["name"] == "no dropped records")
    assert dropped["ok"] is False and "dropped lines" in dropped["detail"]


def test_stdin_and_bad_input(capsys):
    boot = (DATA / "patched-boot-takeover.console").read_bytes()
    code, text = run("-", stdin=io.BytesIO(boot))
    assert code == 0 and text.startswith("<stdin>:")
    code, _ = run(DATA / "no-such.log")
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_an_unreadable_log_is_named(tmp_path):
    # Root reads any file: the harness asks as an unprivileged user.
    import os
    import shutil
    import subprocess
    import sys
    from rig import paths
    if shutil.which("runuser") is None:
        raise AssertionError("runuser (util-linux) is missing: run `make deps`")
    where = tmp_path / "open"
    where.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(where, 0o755)
    secret = where / "secret.log"
    secret.write_bytes(b"[    1.000000] x\n")
    secret.chmod(0)
    for cmd in (["parse", str(secret)], ["diff", str(secret), str(secret)]):
        got = subprocess.run(["runuser", "-u", "nobody", "--", sys.executable, "-m", "rig", *cmd],
                             cwd=paths.REPO, capture_output=True, text=True)
        assert got.returncode == 2 and f"{secret}: cannot be read: Permission denied" in \
            got.stderr, got.stderr


def test_a_log_without_kernel_lines_fails_and_kmsg_dumps_are_judged(tmp_path):
    for name, data in (("empty.log", b""), ("text.log", b"hello\n")):
        (tmp_path / name).write_bytes(data)
        code, text = run(tmp_path / name)
        assert code == 1 and "FAIL console lines parse: no kernel log line in it" in text
    dump = tmp_path / "kmsg.dump"
    dump.write_bytes(b"6,1,1000,-;ok\n4,2,2000,-;WARNING: CPU: 0 PID: 1 at kernel/foo.c:1 "
                     b"foo+0x1/0x2\n")
    code, text = run(dump)
    assert code == 1 and "PASS console lines parse: a /dev/kmsg dump of 2 records" in text
    assert "FAIL no crash: WARNING in foo (line 2)" in text
