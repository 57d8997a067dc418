"""The HTML of a run's report and of a suite's index: one file each, no
external resources (the data is embedded as JSON, the timeline drawn by the
page's own script into SVG)."""
import html
import json
from typing import List

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em} h2{font-size:1.1em;margin-top:1.5em}
table.props td{padding:2px 8px;vertical-align:top}
.ok{color:#176f2c;font-weight:bold} .bad{color:#b00020;font-weight:bold}
.xfail{color:#8a6d00;font-weight:bold}
#timeline{border:1px solid #ccc;background:#fafafa;cursor:grab;user-select:none}
#timeline text{font:11px monospace}
.lane-bg{fill:#fff;stroke:#ddd} .bar{fill:#4a78c2} .bar.mixed{fill:#e08a00}
.nmi{stroke:#d00;stroke-width:2} .nmi-label{fill:#d00;font-weight:bold}
.marker{stroke:#888;stroke-width:1} .ier{fill:#6a3d9a}
pre#transcript{font:12px/1.35 monospace;background:#111;color:#ddd;padding:8px;
 max-height:40em;overflow:auto;white-space:pre-wrap}
.l0,.l1,.l2{color:#ff5c8a;font-weight:bold} .l3{color:#ff6b6b} .l4{color:#ffb347}
.l5{color:#7fb8ff} .l6{color:#ddd} .l7{color:#888} .fw{color:#777}
.em::before{content:"E ";color:#111;background:#ff5c8a;font-weight:bold}
.cut{text-decoration:underline wavy #e08a00}
.legend span{margin-right:1em}
"""

SCRIPT = r"""
"use strict";
window.onerror = function (msg) { document.body.dataset.error = String(msg); };
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function fmt(ns) { return (ns / 1e6).toFixed(3) + " ms"; }
function drawTranscript() {
  const pre = document.getElementById("transcript");
  for (const l of D.lines) {
    const s = document.createElement("span");
    s.textContent = l.text + "\n";
    const cls = [l.kind === "firmware" ? "fw" : "l" + (l.level == null ? 6 : l.level)];
    if (l.emergency) cls.push("em");
    if (l.cut) cls.push("cut");
    s.className = cls.join(" ");
    s.id = "line-" + l.n;
    if (l.level != null) s.title = D.levels[l.level] + (l.emergency ? " (emergency)" : "");
    pre.appendChild(s);
  }
}
const T = D.timeline;
const LANE_H = 34, LEFT = 70, TOP = 22;
let view = [0, 1];
function lanes() {
  const cpus = [];
  for (let c = 0; c < D.cpus; c++) cpus.push(c);
  return cpus;
}
function drawTimeline() {
  const svg = document.getElementById("timeline");
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = svg.clientWidth || 1200, cpus = lanes();
  const H = TOP + (cpus.length + 1) * LANE_H + 10;
  svg.setAttribute("height", H);
  const x = t => LEFT + (t - view[0]) / (view[1] - view[0]) * (W - LEFT - 10);
  const laneY = cpu => TOP + cpus.indexOf(cpu) * LANE_H;
  el("text", {x: LEFT, y: 14}, svg).textContent =
      fmt(view[0]) + " .. " + fmt(view[1]) + " (virtual time; wheel zooms, drag pans)";
  for (const c of cpus) {
    const g = el("g", {"class": "lane", "data-cpu": c}, svg);
    el("rect", {"class": "lane-bg", x: LEFT, y: laneY(c), width: W - LEFT - 10,
                height: LANE_H - 4}, g);
    el("text", {x: 4, y: laneY(c) + 20}, g).textContent = "vCPU " + c;
  }
  const ierY = TOP + cpus.length * LANE_H;
  el("text", {x: 4, y: ierY + 20}, svg).textContent = "IER";
  const clip = el("clipPath", {id: "clip"}, svg);
  el("rect", {x: LEFT, y: 0, width: W - LEFT - 10, height: H}, clip);
  const plot = el("g", {"clip-path": "url(#clip)"}, svg);
  for (const b of T.bars) {
    if (b.t1 < view[0] || b.t0 > view[1] || cpus.indexOf(b.cpu) < 0) continue;
    const x0 = x(b.t0), w = Math.max(1.5, x(b.t1) - x0);
    const r = el("rect", {"class": "bar" + (b.mixed ? " mixed" : ""), x: x0,
                          y: laneY(b.cpu) + 4, width: w, height: LANE_H - 12}, plot);
    el("title", {}, r).textContent = "vCPU " + b.cpu + ", wire line " + b.line + ", " +
        fmt(b.t0) + " .. " + fmt(b.t1) + (b.mixed ? " (line written by more than one vCPU)" : "") +
        "\n" + b.text;
  }
  for (const e of T.events) {
    if (e.t < view[0] || e.t > view[1]) continue;
    if (e.kind === "NMI") {
      const c = e.value, y = cpus.indexOf(c) < 0 ? TOP : laneY(c);
      el("line", {"class": "nmi", x1: x(e.t), x2: x(e.t), y1: y, y2: y + LANE_H - 4}, plot);
      el("text", {"class": "nmi-label", x: x(e.t) + 3, y: y + 11}, plot).textContent = "NMI";
    } else if (e.kind === "MARKER" && cpus.indexOf(e.cpu) >= 0) {
      const m = el("line", {"class": "marker", x1: x(e.t), x2: x(e.t), y1: laneY(e.cpu),
                            y2: laneY(e.cpu) + 6}, plot);
      el("title", {}, m).textContent = "marker 0x" + e.value.toString(16) + " at " + fmt(e.t);
    } else if (e.kind === "IER") {
      const r = el("rect", {"class": "ier", x: x(e.t) - 1, y: ierY + (e.value ? 4 : 16),
                            width: 3, height: 10}, plot);
      el("title", {}, r).textContent = "IER := 0x" + e.value.toString(16) + " by vCPU " +
          e.cpu + " at " + fmt(e.t);
    }
  }
}
function setView(a, b) {
  const span = Math.max(1000, b - a);
  view = [a, a + span];
  drawTimeline();
}
function fromHash() {
  const m = /t=(\d+),(\d+)/.exec(location.hash);
  if (m) setView(Number(m[1]), Number(m[2])); else setView(T.start, T.end);
}
function interact() {
  const svg = document.getElementById("timeline");
  svg.addEventListener("wheel", ev => {
    ev.preventDefault();
    const W = svg.clientWidth, f = ev.deltaY > 0 ? 1.5 : 1 / 1.5;
    const at = view[0] + (ev.offsetX - LEFT) / (W - LEFT - 10) * (view[1] - view[0]);
    setView(at - (at - view[0]) * f, at + (view[1] - at) * f);
  });
  let drag = null;
  svg.addEventListener("mousedown", ev => { drag = [ev.clientX, view[0], view[1]]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", ev => {
    if (!drag) return;
    const W = svg.clientWidth, dt = (ev.clientX - drag[0]) / (W - LEFT - 10) *
        (drag[2] - drag[1]);
    setView(drag[1] - dt, drag[2] - dt);
  });
  const nav = document.getElementById("jumps");
  const all = document.createElement("button");
  all.textContent = "whole run";
  all.onclick = () => setView(T.start, T.end);
  nav.appendChild(all);
  T.events.filter(e => e.kind === "NMI").forEach((e, i) => {
    const b = document.createElement("button");
    b.textContent = "NMI " + (i + 1) + " on vCPU " + e.value + " at " + fmt(e.t);
    b.onclick = () => setView(e.t - 15e6, e.t + 25e6);
    nav.appendChild(b);
  });
}
drawTranscript();
if (T) { interact(); fromHash(); window.addEventListener("resize", drawTimeline); }
document.body.dataset.rendered = "ok";
"""


def esc(text) -> str:
    return html.escape(str(text))


def status(prop: dict) -> str:
    return "PASS" if prop["ok"] else "XFAIL" if prop["expected"] else "FAIL"


def status_class(verdict: str, expected_end: bool = False) -> str:
    """ok for PASS, xfail for XFAIL and for an end the test asked for (its
    class shown as the verdict), bad for everything else."""
    if expected_end:
        return "xfail"
    return {"PASS": "ok", "XFAIL": "xfail"}.get(verdict, "bad")


def run_page(d: dict) -> str:
    props = "".join(
        f'<tr><td class="{status_class(status(p))}">{status(p)}</td>'
        f'<td>{esc(p["prop"])}</td><td>{esc(p["detail"])}</td></tr>' for p in d["properties"])
    tl = d["timeline"]
    timeline = ("<p>No register log (uart.log) in this run.</p>" if tl is None else
                f'<p>{tl["lines_on_wire"]} lines on the wire, {tl["interrupted_lines"]} of '
                'them written by more than one vCPU (orange bars: a line interrupted and '
                'finished by another CPU). Red: NMIs; grey ticks: the test module\'s '
                'markers; purple: IER writes (high: set, low: cleared).</p>'
                '<div id="jumps"></div><svg id="timeline" width="100%" height="120"></svg>')
    data = json.dumps(d, separators=(",", ":")).replace("</", "<\\/")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{esc(d["name"])} ({esc(d["flavor"])}): printk-rig report</title>
<style>{STYLE}</style></head>
<body>
<h1>{esc(d["name"])} on the {esc(d["flavor"])} kernel:
<span class="{status_class(d["verdict"], d["expected_end"])}" id="verdict">{d["verdict"]}</span></h1>
<p>Test {esc(d["test"] or "(none: a plain boot)")}; kernel {esc(d["kernel"])};
outcome <b>{esc(d["outcome"]["class"])}</b>: {esc(d["outcome"]["detail"])};
{"deterministic (-icount)" if d["deterministic"] else "not deterministic"};
run directory <code>{esc(d["run_dir"])}</code></p>
<h2>Verdict per property</h2>
<table class="props">{props}</table>
<h2>Timeline (from the UART register log)</h2>
{timeline}
<h2>Transcript</h2>
<p class="legend">Coloured by level: <span class="l3">ERR and above</span>
<span class="l4">WARNING</span> <span class="l5">NOTICE</span> <span class="l6"
style="background:#111">INFO</span> <span class="l7">DEBUG</span>;
<span class="em">emergency message (below the emergency loglevel)</span>
<span class="cut">cut short by a takeover</span></p>
<pre id="transcript"></pre>
<script type="application/json" id="data">{data}</script>
<script>{SCRIPT}</script>
</body></html>
"""


def index_page(title: str, rows: List[dict]) -> str:
    """rows: name, flavor, test, verdict, expected_end, outcome, href (None:
    a run directory the report could not read; outcome says why)."""
    def link(r):
        return (f'<a href="{esc(r["href"])}">{esc(r["name"])}</a>' if r["href"]
                else esc(r["name"]))
    body = "".join(
        f'<tr><td class="{status_class(r["verdict"], r["expected_end"])}">{r["verdict"]}</td>'
        f'<td>{link(r)}</td><td>{esc(r["flavor"])}</td>'
        f'<td>{esc(r["outcome"])}</td><td>{esc(r["test"] or "")}</td></tr>' for r in rows)
    failed = sum(status_class(r["verdict"], r["expected_end"]) == "bad" for r in rows)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>
<style>{STYLE}</style></head><body>
<h1>{esc(title)}</h1><p>{len(rows)} runs, {failed} that did not end clean or have a
property that fails unexpectedly (XFAIL: fails as expected of that kernel; a class such as
PANIC in grey: the run's test ended it so on purpose and passed).</p>
<table class="props"><tr><th></th><th>run</th><th>flavor</th><th>outcome</th><th>test</th></tr>
{body}</table><script>document.body.dataset.rendered = "ok";</script></body></html>
"""
