"""One way to start a pytest run of the rig's tests from a rig command
(golden, run, flakes, determinism, mutants, the gate): the interpreter that
runs the rig, the repository as the working directory, no cache directory
written into the tree, the JUnit file the caller reads the verdicts from,
and a death signal: pytest ends (and its QEMUs) when the rig command does."""
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

from rig import children, faults, paths


def argv(args: List[str], junit: Optional[Path] = None, quiet: bool = True) -> List[str]:
    out = [sys.executable, "-m", "pytest", "-q" if quiet else "-v", "-p", "no:cacheprovider"]
    if junit is not None:
        out.append(f"--junitxml={junit}")
    return out + list(args)


def run(args: List[str], junit: Optional[Path] = None, quiet: bool = True,
        env: Optional[Dict[str, str]] = None) -> int:
    """Run pytest to its end with its output on ours; its exit status."""
    return children.run_tied(argv(args, junit, quiet), cwd=paths.REPO, env=env).returncode


def run_judged(args: List[str], junit: Path, env: Optional[Dict[str, str]] = None) -> int:
    """run() for a tool that reads the verdicts (flakes, determinism,
    mutants): a run that ended on the rig's own failure, or wrote no JUnit,
    judged nothing, and raises SuiteFault; else pytest's status (0 or 1)."""
    rc = run(args, junit, env=env)
    code = faults.exit_code_of(rc)
    if code in (faults.EXIT_RIG, faults.EXIT_INCOMPLETE) or not junit.is_file():
        raise SuiteFault(f"pytest {' '.join(args)} judged nothing: it ended with exit "
                         f"status {rc} (" + ("the run's evidence was incomplete"
                                             if code == faults.EXIT_INCOMPLETE else
                                             "the rig or its input failed") +
                         f"{'' if junit.is_file() else f', and wrote no {junit}'}): see its "
                         "output above", code)
    return rc


class SuiteFault(faults.RigFault):
    def __init__(self, message: str, code: int = faults.EXIT_RIG):
        super().__init__(message)
        self.exit_code = code


def start(args: List[str], junit: Optional[Path] = None,
          env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    """Start pytest with its output (stdout and stderr, as text) on a pipe."""
    return children.popen_tied(argv(args, junit), cwd=paths.REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
