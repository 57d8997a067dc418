"""Run a long build command with its output in a log and progress on stdout."""
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Tuple

from rig.children import popen_guarded
from rig.faults import RigFault

PROGRESS_EVERY_S = 20.0


class BuildError(RigFault, RuntimeError):
    """A build step failed; the message names the step and shows the log tail."""


def tail(path: Path, lines: int = 40) -> str:
    try:
        data = path.read_bytes()[-16384:].decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def minutes(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60}m{seconds % 60:02d}s"


@dataclass
class Progress:
    """What a long build says while it runs: how far it is out of a known
    total, and the time left at the rate so far."""
    unit: str
    count: Callable[[Path], Tuple[int, Optional[int]]]   # log -> (done, total it states)
    total: Optional[int] = None       # known beforehand: the last build's, or the plan's
    total_from: str = ""              # where that total comes from, said once

    def line(self, log: Path, elapsed: float) -> str:
        done, stated = self.count(log)
        total = stated or self.total
        if not total:
            return f"{done} {self.unit}, {minutes(elapsed)} so far"
        # An estimated total may be short: never claim the end before make does.
        percent = min(99, 100 * done // total)
        left = (f"about {minutes(elapsed * (total - done) / done)} left" if 0 < done < total
                else "finishing" if done else "starting")
        source = f" (total from {self.total_from})" if self.total_from and not stated else ""
        return (f"{done}/{total} {self.unit} ({percent}%){source}, {minutes(elapsed)} so far, "
                f"{left}")


KBUILD_COMMAND = re.compile(rb"^  (CC|AR) +\S", re.M)


def kbuild_done(log: Path) -> Tuple[int, Optional[int]]:
    """Kbuild's CC and AR command lines so far: one per object and directory."""
    try:
        return len(KBUILD_COMMAND.findall(log.read_bytes())), None
    except FileNotFoundError:
        return 0, None


def kbuild_progress(total: Optional[int], total_from: str = "") -> Progress:
    return Progress("objects and directories", kbuild_done, total, total_from)


def ninja_done(log: Path) -> Tuple[int, Optional[int]]:
    """ninja's last "[N/M]" counter: M is its own plan."""
    matches = re.findall(rb"\[(\d+)/(\d+)\]", tail(log, 5).encode())
    return tuple(int(x) for x in matches[-1]) if matches else (0, None)


ninja_progress = Progress("ninja steps", ninja_done)


def _wait_reporting(proc, label, log, start, progress) -> int:
    next_report = start + PROGRESS_EVERY_S
    while True:
        try:
            return proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            pass
        if progress and time.monotonic() >= next_report:
            print(f"[{label}] {progress.line(log, time.monotonic() - start)}", flush=True)
            next_report += PROGRESS_EVERY_S


def stop(proc: subprocess.Popen) -> None:
    """End a build the rig gives up on: its guardian kills its whole
    session on SIGTERM (processes in groups of their own too, as ninja's
    jobs are); the group is killed outright if the guardian is slow."""
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def run_logged(label: str, argv: Sequence[str], log: Path, cwd: Optional[Path] = None,
               env: Optional[dict] = None,
               progress: Optional[Progress] = None) -> None:
    """Run argv, appending its output to log; print progress while it runs."""
    full_env = dict(os.environ, **(env or {}))
    start = time.monotonic()
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(argv) + "\n").encode())
        out.flush()
        # A session of its own under a guardian: an interrupted build takes
        # all of make's children along, and so does a harness killed outright.
        proc = popen_guarded(argv, cwd=cwd, env=full_env, stdout=out,
                             stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = _wait_reporting(proc, label, log, start, progress)
        except BaseException:
            stop(proc)
            raise
    if rc != 0:
        raise BuildError(f"[{label}] `{' '.join(argv[:3])} ...` failed with status {rc}; "
                         f"full log: {log}\n--- last lines ---\n{tail(log)}")
