"""Run a long build command with its output in a log and progress on stdout."""
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

PROGRESS_EVERY_S = 20.0


class BuildError(RuntimeError):
    """A build step failed; the message names the step and shows the log tail."""


def tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_bytes()[-16384:].decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def kbuild_progress(expected: Optional[int]) -> Callable[[Path], str]:
    """Counts Kbuild's short command lines ("  CC      init/main.o")."""
    pattern = re.compile(rb"^  [A-Z][A-Z0-9_\[\]]+ +\S", re.M)

    def report(log: Path) -> str:
        try:
            done = len(pattern.findall(log.read_bytes()))
        except FileNotFoundError:
            done = 0
        if expected:
            return f"{done}/{expected} build commands (~{min(99, 100 * done // expected)}%)"
        return f"{done} build commands"
    return report


def ninja_progress(log: Path) -> str:
    """Reads ninja's last "[N/M]" counter."""
    matches = re.findall(rb"\[(\d+)/(\d+)\]", tail(log, 5).encode())
    if not matches:
        return "configuring"
    done, total = (int(x) for x in matches[-1])
    return f"{done}/{total} ninja steps ({100 * done // total}%)"


def _wait_reporting(proc, label, log, start, progress) -> int:
    next_report = start + PROGRESS_EVERY_S
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        if progress and time.monotonic() >= next_report:
            elapsed = int(time.monotonic() - start)
            print(f"[{label}] {progress(log)}, {elapsed // 60}m{elapsed % 60:02d}s", flush=True)
            next_report += PROGRESS_EVERY_S


def run_logged(label: str, argv: Sequence[str], log: Path, cwd: Optional[Path] = None,
               env: Optional[dict] = None,
               progress: Optional[Callable[[Path], str]] = None) -> None:
    """Run argv, appending its output to log; print progress while it runs."""
    full_env = dict(os.environ, **(env or {}))
    start = time.monotonic()
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(argv) + "\n").encode())
        out.flush()
        # Own session, so that an interrupted build takes all of make's children along.
        proc = subprocess.Popen(list(argv), cwd=cwd, env=full_env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = _wait_reporting(proc, label, log, start, progress)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    if rc != 0:
        raise BuildError(f"[{label}] `{' '.join(argv[:3])} ...` failed with status {rc}; "
                         f"full log: {log}\n--- last lines ---\n{tail(log)}")
