"""rig report: the timeline and transcript data from a real mid-line NMI
capture, and a real run's page in a real headless browser (Debian's
chromium): it loads without errors, has one lane per vCPU, and shows the
interrupted line."""
import json
import lzma
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rig import paths
from rig.evidence import uartlog
from rig.tests.helpers import run_suite
from rig.tools.report import data, page

DATA = Path(__file__).parent / "data"


def real_s7_run(tmp_path) -> Path:
    """A run directory holding the real S7 capture (patched, NMI mid-line)."""
    run = tmp_path / "run"
    run.mkdir(parents=True)
    for name, src in (("console.log", "patched-s7-nmi-mid-line.console.xz"),
                      ("uart.log", "patched-s7-nmi-mid-line.uart.log.xz")):
        (run / name).write_bytes(lzma.decompress((DATA / src).read_bytes()))
    (run / "bundle.json").write_text(json.dumps({
        "request": {"smp": 2}, "cmdline": "emergency_loglevel=5", "test": "s7", "name": "S7"}))
    (run / "summary.json").write_text(json.dumps({
        "name": "S7", "flavor": "patched", "outcome": {"class": "clean", "detail": "ok"}}))
    return run


def test_timeline_cuts_the_interrupted_line_at_the_other_cpu(tmp_path):
    log = uartlog.read(real_s7_run(tmp_path) / "uart.log")
    tl = data.timeline(log)
    assert tl["lines_on_wire"] == sum(r.value == 0x0A for r in log.writes("THR"))
    assert sum(len(b["text"]) for b in tl["bars"]) == sum(
        32 <= r.value < 127 for r in log.writes("THR"))
    nmi = [e for e in tl["events"] if e["kind"] == "NMI"]
    assert nmi, "the capture has the UART's NMI"
    # The line that was on the wire when the NMI came is split between vCPUs.
    cut = [b for b in tl["bars"] if b["mixed"] and b["t0"] <= nmi[0]["t"] <= b["t1"] + 1_000_000]
    assert cut and cut[0]["cpu"] != nmi[0]["value"]
    after = [b for b in tl["bars"] if b["t0"] > nmi[0]["t"] and b["cpu"] == nmi[0]["value"]]
    assert "ctx=nmi" in "".join(b["text"] for b in after[:3])


def test_levels_and_emergency_marks_come_from_the_tags_and_cmdline(tmp_path):
    d = data.gather(real_s7_run(tmp_path))
    emergency = [ln for ln in d["lines"] if ln.get("emergency")]
    assert emergency and all("ctx=nmi" in ln["text"] for ln in emergency)
    assert d["verdict"] == "PASS", d["properties"]
    assert {p["prop"] for p in d["properties"]} >= {"boots to init", "console lines parse",
                                                   "IER restored after every console write"}


def test_a_run_without_summary_takes_its_class_from_the_bundle(tmp_path):
    run = real_s7_run(tmp_path)
    (run / "summary.json").unlink()
    bundle = json.loads((run / "bundle.json").read_text())
    (run / "bundle.json").write_text(json.dumps(dict(bundle, outcome="hang")))
    d = data.gather(run)
    assert d["outcome"] == {"class": "hang", "detail": "run did not finish"}


def test_the_crash_headlines_are_listed_and_marked_in_the_transcript(tmp_path):
    run = real_s7_run(tmp_path)
    (run / "console.log").write_bytes(lzma.decompress((DATA / "patched-oops.console.xz")
                                                      .read_bytes()))
    d = data.gather(run)
    assert d["crashes"] == [
        {"title": "BUG: unable to handle kernel NULL pointer dereference in crash_now",
         "line": 185, "page": 1},
        {"title": "Oops in crash_now", "line": 194, "page": 1}]
    marked = {ln["n"]: ln for ln in d["lines"] if ln.get("crash")}
    assert sorted(marked) == [185, 194]
    assert "BUG: kernel NULL pointer dereference" in marked[185]["text"]
    assert '<a href="#line-185">line 185</a>: BUG: unable to handle' in page.run_page(d)


def test_a_long_transcript_goes_on_over_pages_each_of_bounded_size(tmp_path, monkeypatch):
    """The console's lines past the first page go to report-2.html, ...,
    linked both ways, and a crash headline's link names its page."""
    from rig.tools.report import main
    monkeypatch.setattr(data, "PAGE_LINES", 100)
    run = real_s7_run(tmp_path)
    console = lzma.decompress((DATA / "patched-oops.console.xz").read_bytes())
    (run / "console.log").write_bytes(console)
    total = console.count(b"\n")
    d = main.write_run(run, None)
    pages = sorted(run.glob("report-*.html"))
    assert d["pages"] == list(range(1, (total - 1) // 100 + 2))
    assert [p.name for p in pages] == [f"report-{n}.html" for n in d["pages"][1:]]
    first = (run / "report.html").read_text()
    assert '<a href="report-2.html">next' in first
    assert '<a href="report-2.html#line-185">line 185</a>' in first
    second = pages[0].read_text()
    assert '"n": 185' in second and '"n": 99' not in second and "previous page" in second
    shown = sum(len(json.loads(re.search(r'id="data">(.*?)</script>', p.read_text(), re.S)
                               .group(1))["lines"]) for p in [run / "report.html"] + pages)
    assert shown >= total - 5, "lines went missing between the pages"


def test_the_timeline_of_a_long_run_draws_a_bounded_number_of_bars(tmp_path, monkeypatch):
    monkeypatch.setattr(data, "MAX_BARS", 10)
    monkeypatch.setattr(data, "MAX_EVENTS", 5)
    tl = data.timeline(uartlog.read(real_s7_run(tmp_path) / "uart.log"))
    assert len(tl["bars"]) == 10 and tl["bars_not_drawn"] > 0
    assert len(tl["events"]) == 5 and tl["events_not_drawn"] > 0


@pytest.mark.parametrize("cls", ["hang", "panic", "qemu-crash", "rig-error", "unknown"])
def test_a_run_that_did_not_end_clean_is_never_a_pass(tmp_path, cls):
    run = real_s7_run(tmp_path)
    (run / "summary.json").write_text(json.dumps({
        "name": "S7", "flavor": "patched", "outcome": {"class": cls, "detail": "how"}}))
    d = data.gather(run)
    assert d["verdict"] == cls.upper() and not d["expected_end"]
    assert d["properties"][0] == {"prop": "run ended clean (init finished every step)",
                                  "ok": False, "expected": False, "detail": f"{cls}: how"}
    # The test that made it passed: a panic scenario ends its run so on purpose.
    passed = data.gather(run, {"test": "t", "verdict": "passed", "message": ""})
    assert passed["verdict"] == cls.upper() and passed["expected_end"]
    assert page.status_class(passed["verdict"], passed["expected_end"]) == "xfail"
    assert page.status_class(d["verdict"], d["expected_end"]) == "bad"


def test_a_damaged_run_in_a_batch_is_named_and_the_rest_reported(tmp_path, capsys):
    from rig.tools.report.main import main
    good, cut = real_s7_run(tmp_path / "a"), real_s7_run(tmp_path / "b")
    (cut / "summary.json").write_text('{"name": "S7", "outc')
    assert main([good, cut], None, tmp_path) == 2
    out = capsys.readouterr().out
    assert f"ERROR {cut}: {cut}/summary.json: not valid JSON" in out
    assert f"PASS  {good}/report.html" in out
    index = (tmp_path / "index.html").read_text()
    assert "2 runs, 1 that did not end clean" in index and "not reported:" in index


def test_page_embeds_its_data_safely(tmp_path):
    d = data.gather(real_s7_run(tmp_path))
    d["lines"].append({"n": 0, "text": "</script><b>x", "kind": "kernel", "level": 6})
    html = page.run_page(d)
    embedded = re.search(r'id="data">(.*?)</script>', html, re.S).group(1)
    assert json.loads(embedded)["lines"][-1]["text"] == "</script><b>x"


def test_a_run_directory_is_required(tmp_path, capsys):
    from rig.tools.report.main import main
    assert main([tmp_path], None, tmp_path) == 2
    assert "not a run directory (no console.log)" in capsys.readouterr().out


def chromium(*args) -> subprocess.CompletedProcess:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.fail("chromium is not installed: run `make deps`")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.mark.boots
def test_report_of_a_mid_line_nmi_run_in_a_real_browser(tmp_path):
    got, proc = run_suite(tmp_path, ["--flavor", "patched",
                                     "scenarios/test_s07_nmi_mid_line.py"])
    assert set(got.values()) == {"passed"}, proc.stdout[-3000:]
    rep = subprocess.run([sys.executable, "-m", "rig", "report", "--junit",
                          str(tmp_path / "junit.xml"), "--out", str(tmp_path)],
                         cwd=paths.REPO, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    run = next((tmp_path / "runs").iterdir())
    html = run / "report.html"
    d = json.loads(re.search(r'id="data">(.*?)</script>', html.read_text(), re.S).group(1))
    nmi = next(e for e in d["timeline"]["events"] if e["kind"] == "NMI")

    loaded = chromium("--dump-dom", html.as_uri())
    dom = loaded.stdout
    assert 'data-rendered="ok"' in dom, dom[:2000]
    assert "data-error" not in dom
    assert "Uncaught" not in loaded.stderr, loaded.stderr[-2000:]   # the page's console
    assert len(re.findall(r'<g class="lane" data-cpu="\d+"', dom)) == d["cpus"] == 2
    assert re.search(r'class="bar mixed"', dom), "no bar of an interrupted line"
    assert 'class="nmi"' in dom
    assert "PASS" in re.search(r'id="verdict">(\w+)<', dom).group(1)

    # The page around the NMI, as a person would look at it (kept in the run).
    shot = run / "report-nmi.png"
    chromium("--window-size=1400,900", f"--screenshot={shot}",
             f"{html.as_uri()}#t={nmi['t'] - 15_000_000},{nmi['t'] + 55_000_000}")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000

    index = chromium("--dump-dom", (tmp_path / "index.html").as_uri()).stdout
    assert 'data-rendered="ok"' in index and "report.html" in index
