"""rig report RUN... [--junit FILE] [--out DIR]: write RUN/report.html for
each run directory, and, for more than one run (or --junit), an index page.
With --junit and no RUN, the runs are those the JUnit file's tests name
(their run_dir property: passing tests' runs exist only with --keep-runs)."""
import os
from pathlib import Path
from typing import Dict, List, Optional

from rig import paths
from rig.evidence.uartlog import UartLogError
from rig.rundir import RunDir
from rig.tools.junit import failure_messages, run_dirs, skip_reasons, verdicts
from rig.tools.report import page
from rig.tools.report.data import ReportError, gather


def junit_runs(junit: Path) -> Dict[str, dict]:
    """run directory -> the verdict of the test that made it, from JUnit XML."""
    verdict, failed, skipped = verdicts(junit), failure_messages(junit), skip_reasons(junit)
    return {run: {"test": test, "verdict": verdict[test],
                  "message": failed.get(test) or skipped.get(test, "")}
            for run, test in run_dirs(junit).items()}


def write_run(run_dir: Path, verdict: Optional[dict]) -> dict:
    """RUN/report.html, and the further pages of a long transcript
    (report-N.html), written as the transcript is read."""
    d = gather(run_dir, verdict)
    run = RunDir(run_dir)
    for old in run_dir.glob(PAGE_FILE.format(n="*")):
        old.unlink()
    numbers, waiting = [d["page"]], None
    for number, lines in d.pop("more_pages"):
        if waiting is not None:
            write_page(run, d, waiting, numbers[-2], number)
        numbers.append(number)
        waiting = (number, lines)
    if waiting is not None:
        write_page(run, d, waiting, numbers[-2], None)
    d["pages"] = numbers
    d["next_page"] = page_href(numbers[1]) if len(numbers) > 1 else None
    run.write_text(RunDir.REPORT, page.run_page(d))
    return d


PAGE_FILE = "report-{n}.html"


def page_href(n: int) -> str:
    return RunDir.REPORT if n == 1 else PAGE_FILE.format(n=n)


def write_page(run: RunDir, d: dict, numbered: tuple, before: int, after: Optional[int]) -> None:
    number, lines = numbered
    run.write_text(page_href(number), page.lines_page(
        d, lines, number, page_href(before), page_href(after) if after else None))


def main(runs: List[Path], junit: Optional[Path], out: Optional[Path]) -> int:
    verdicts = junit_runs(junit) if junit else {}
    if not runs:
        runs = [Path(r) for r in verdicts if Path(r).is_dir()]
        if not runs:
            print(f"error: no run directory to report on ({junit} names none that "
                  "still exists; run pytest with --keep-runs)" if junit else
                  "error: give run directories, or --junit FILE")
            return 2
    index_dir = (out or paths.runs_root()).resolve()
    rows, bad = [], 0
    for run_dir in sorted(r.resolve() for r in runs):
        try:
            d = write_run(run_dir, verdicts.get(str(run_dir)))
        except (ReportError, UartLogError, OSError) as e:
            print(f"ERROR {run_dir}: {e}")
            bad += 1
            rows.append({"name": run_dir.name, "flavor": "?", "profile": "?", "test": None,
                         "verdict": "ERROR", "expected_end": False,
                         "outcome": f"not reported: {e}", "href": None})
            continue
        page_file = RunDir(run_dir).file(RunDir.REPORT)
        print(f"{d['verdict']:<5} {page_file}")
        rows.append({"name": d["name"], "flavor": d["flavor"], "profile": d["profile"],
                     "test": d["test"],
                     "verdict": d["verdict"], "expected_end": d["expected_end"],
                     "outcome": d["outcome"]["class"],
                     "href": os.path.relpath(page_file, index_dir)})
    if len(rows) > 1 or junit:
        index_dir.mkdir(parents=True, exist_ok=True)
        title = f"printk-rig runs ({junit.name if junit else f'{len(rows)} runs'})"
        (index_dir / "index.html").write_text(page.index_page(title, rows))
        print(f"index: {index_dir / 'index.html'}")
    return 2 if bad else 0
