"""make demo end to end: the patched kernel's NMI emergency line overtakes a
backlog and cuts a line short, the demo says when and by how much, judges it
and writes the report; two runs give the same bytes (icount clock)."""
import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rig import config, paths

pytestmark = [pytest.mark.boots]


def demo(runs: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, **{config.VARIABLES["runs_root"]: str(runs)})
    return subprocess.run([sys.executable, "-m", "rig", "demo"], cwd=paths.REPO, env=env,
                          capture_output=True, text=True, timeout=900)


def digest(run_dir: Path, name: str) -> str:
    return hashlib.sha256((run_dir / name).read_bytes()).hexdigest()


def test_demo_shows_the_nmi_line_overtaking_the_backlog_with_figures_and_a_report(tmp_path):
    first = demo(tmp_path / "a")
    out = first.stdout
    assert first.returncode == 0, out[-4000:] + first.stderr[-2000:]
    # As it happens: the cut line, the NMI's line and the replay, in that order.
    cut = out.index("<- cut short")
    assert cut < out.index("<- the NMI's ERR line") < out.index("** replaying previous")
    called = re.search(r"printk\(\) of the ERR line called at guest time (\d+\.\d+) s", out)
    wire = re.search(r"its last bit left the wire (\d+\.\d+) ms later .* take (\d+\.\d+) ms "
                     r"at the programmed rate: (\d+\.\d+)x", out)
    waiting = re.search(r"(\d+) older INFO lines were still waiting behind it", out)
    assert called and wire and waiting, out[-3000:]
    assert float(wire.group(3)) <= 1.1 and int(waiting.group(1)) >= 100
    assert "[verdict] PASS: 13 of 13 properties hold" in out
    report = Path(re.search(r"report with the per-vCPU timeline: (\S+)", out).group(1))
    assert report.is_file() and 'id="timeline"' in report.read_text()
    # The icount clock from the snapshot: the same bytes on a second run.
    second = demo(tmp_path / "b")
    assert second.returncode == 0, second.stdout[-3000:]
    a, b = (next((tmp_path / d).glob("*-demo-patched-*")) for d in ("a", "b"))
    for name in ("console.log", "uart.log", "side.bin"):
        assert digest(a, name) == digest(b, name), f"demo not deterministic: {name} differs"
