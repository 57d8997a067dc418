"""Golden transcripts: what a deterministic scenario looks like on the wire.

One file per deterministic test, boot and flavor under golden/, normalized so
that it only changes when what the kernel prints changes: timestamps zeroed
(the byte-identity of whole runs is checked separately, by `rig
determinism`), addresses, code offsets, register values, pids and hashes
masked, CR removed, control bytes escaped. It stays a kernel log, so `rig
diff` reads it. Scenarios compare each deterministic boot with its golden
file (pytest --golden=check); `make golden` rewrites them (--golden=update)
and prints what changed.
"""
import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from rig import config, paths
from rig.evidence import logdiff, logparse

ZERO_TS = "[    0.000000]"
HEADER = logdiff.COMMENT     # rig diff skips these lines


def golden_root() -> Path:
    return config.path_or(config.current().golden_dir, paths.REPO / "golden")


def normalize_line(line: str) -> str:
    line = logparse.TS_RE.sub(ZERO_TS, line)
    return logparse.escape_controls(logdiff.mask(line))


def normalize(console: bytes) -> List[str]:
    return [normalize_line(ln) for ln in logparse.split_lines(console)]


def file_name(module: str, test: str, params: dict, kernel: str, boot: int) -> Path:
    """golden/<test file>/<test>[-<params>].<kernel>[.<boot>].txt, kernel the
    flavor on the default profile, FLAVOR-PROFILE on another (paths.kernel_name)."""
    stem = Path(module).stem
    extra = "".join(f"-{v}" for k, v in sorted(params.items()) if k != "flavor")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{test}{extra}")
    suffix = f".{boot}" if boot > 1 else ""
    return golden_root() / stem / f"{name}.{kernel}{suffix}.txt"


def header(test_id: str, boot: int, summary: dict) -> List[str]:
    k = summary.get("kernel", {})
    return [f"{HEADER}golden transcript: {test_id}, boot {boot}, flavor {summary.get('flavor')}, "
            f"profile {summary.get('profile') or paths.DEFAULT_PROFILE}",
            f"{HEADER}kernel {k.get('release')} ({k.get('source')}), icount shift "
            f"{summary.get('icount_shift')}",
            f"{HEADER}normalized (rig/evidence/golden.py): timestamps zeroed; addresses, code "
            f"offsets, pids and hashes masked; CR removed",
            f"{HEADER}regenerate: make golden; compare: python3 -m rig diff THIS_FILE RUN_DIR"]


def body(text: str) -> List[str]:
    return [ln for ln in text.splitlines() if not ln.startswith(HEADER)]


@dataclass
class Change:
    path: Path
    status: str              # new, changed, unchanged
    added: int = 0
    removed: int = 0


def update(path: Path, lines: List[str], head: List[str]) -> Change:
    old = body(path.read_text()) if path.is_file() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(head + lines) + "\n")
    if old is None:
        return Change(path, "new", added=len(lines))
    if old == lines:
        return Change(path, "unchanged")
    ops = difflib.SequenceMatcher(None, old, lines, autojunk=False).get_opcodes()
    return Change(path, "changed",
                  added=sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag != "equal"),
                  removed=sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag != "equal"))


# The header lines that say what the transcript is of: test, boot, flavor,
# kernel and icount shift (the third and fourth only say how it was made).
IDENTITY_LINES = 2


def read_golden(path: Path, head: List[str]) -> tuple:
    """(body lines, None) of a golden file whose header is this run's, or
    (None, why not) naming the file and what is wrong with it."""
    again = "record it again with `make golden` and review `git diff golden/`"
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as e:
        return None, f"golden file {path} cannot be read: {e.strerror}"
    except UnicodeDecodeError as e:
        return None, (f"golden file {path} is not UTF-8 text (byte {e.start}): damaged; "
                      f"{again}")
    found = [ln for ln in text.splitlines() if ln.startswith(HEADER)][:IDENTITY_LINES]
    for want, got in zip(head[:IDENTITY_LINES], found + [""] * IDENTITY_LINES):
        if want != got:
            return None, (f"golden file {path} is of another boot: its header says "
                          f"{got[len(HEADER):] or '(nothing)'!r}, this run is "
                          f"{want[len(HEADER):]!r}; {again}")
    lines = body(text)
    if not any(ln.strip() for ln in lines):
        return None, f"golden file {path} has a header and no transcript; {again}"
    return lines, None


def mismatch(path: Path, lines: List[str], run_file: Path,
             head: List[str]) -> Optional[str]:
    """None if the run matches its golden file; else a readable report: the
    records that differ (rig diff's findings) and a unified diff. head is
    the run's own header: a golden file of another test, kernel or icount
    shift is named as such, not compared line by line."""
    if not path.is_file():
        return (f"no golden transcript {path} for this boot: record it with `make golden` "
                f"(the run's normalized transcript is {run_file})")
    old, problem = read_golden(path, head)
    if problem:
        return problem
    if old == lines:
        return None
    a = logdiff.parse(str(path), path.read_bytes())
    b = logdiff.parse(str(run_file), "\n".join(lines).encode())
    res = logdiff.Result(a, b, logdiff.compare(a, b), logdiff.unified(a, b))
    return (f"the transcript differs from its golden file {path}\n"
            f"{logdiff.format_text(res, colour=False)}\n"
            f"If the change is intended, accept it with `make golden` and review "
            f"`git diff golden/`.")
