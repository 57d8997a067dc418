"""One way to start a pytest run of the rig's tests from a rig command
(golden, run, flakes, determinism, mutants, the gate): the interpreter that
runs the rig, the repository as the working directory, no cache directory
written into the tree, the JUnit file the caller reads the verdicts from,
and a death signal: pytest ends (and its QEMUs) when the rig command does."""
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional

from rig import children, paths


def argv(args: List[str], junit: Optional[Path] = None, quiet: bool = True) -> List[str]:
    out = [sys.executable, "-m", "pytest", "-q" if quiet else "-v", "-p", "no:cacheprovider"]
    if junit is not None:
        out.append(f"--junitxml={junit}")
    return out + list(args)


def run(args: List[str], junit: Optional[Path] = None, quiet: bool = True,
        env: Optional[Dict[str, str]] = None) -> int:
    """Run pytest to its end with its output on ours; its exit status."""
    return children.run_tied(argv(args, junit, quiet), cwd=paths.REPO, env=env).returncode


def start(args: List[str], junit: Optional[Path] = None,
          env: Optional[Dict[str, str]] = None) -> subprocess.Popen:
    """Start pytest with its output (stdout and stderr, as text) on a pipe."""
    return children.popen_tied(argv(args, junit), cwd=paths.REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
