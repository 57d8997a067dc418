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
    if (l.crash) cls.push("crash");
    s.className = cls.join(" ");
    s.id = "line-" + l.n;
    if (l.level != null) s.title = D.levels[l.level] + (l.emergency ? " (emergency)" : "");
    if (l.crash) s.title = l.crash;
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
