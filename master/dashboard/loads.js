// Load tests: the overview's panel of the newest (GET /loads?limit=N), and a test's page
// (#/loads/<id>, GET /loads/<id>): its numbers, thresholds, charts of its per-second series
// with its events marked, and the target corral started for it. A running test's page is asked
// again on every refresh; an ended one's is kept.
import {enc} from "./api.js";
import {lineChart, markColour} from "./chart.js";
import {badge, bytes, duration, el, ms, panel, table, timeCell} from "./dom.js";
import {factList, timeText} from "./run.js";

const LIMIT = 20;  // tests listed on the overview
const HEAD = ["load", "scenario", "model", "state", "elapsed", "requests/s", "p99", "errors",
              "created"];

const pct = (v) => (100 * (v || 0)).toFixed(2) + "%";
const num = (v, d) => Number(v || 0).toFixed(d);

export function loadsPanel(get) {
  const body = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const count = el("span", {class: "panel-note"});
  async function refresh() {
    const answer = await get(`loads?limit=${LIMIT}`);
    const loads = answer.loads || [];
    body.replaceChildren(loads.length ? table(HEAD, loads.map(loadRow), "loads")
                                      : el("p", {class: "empty"}, "no load tests yet: corral load FILE"));
    count.replaceChildren(answer.total > loads.length ? `the newest ${loads.length} of ${answer.total}` : "");
  }
  return {node: panel("Load tests", count, body), refresh};
}

function loadRow(t) {
  return el("tr", {data: {load: t.id, state: t.state}},
            el("td", {}, el("a", {href: "#/loads/" + enc(t.id)}, t.id)),
            el("td", {class: "name"}, t.name),
            el("td", {}, t.model),
            el("td", {}, badge(t.state)),
            el("td", {class: "num"}, duration(t.elapsed_s)),
            el("td", {class: "num"}, num(t.rps, 0)),
            el("td", {class: "num"}, ms(t.latency?.p99)),
            el("td", {class: "num"}, pct(t.errors?.rate)),
            timeCell(t.created));
}

export function loadView(get, id) {
  const facts = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const thresholds = el("div", {class: "panel-body"});
  const charts = el("div", {class: "panel-body charts"});
  const events = el("div", {class: "panel-body"});
  const target = el("div", {class: "panel-body"});
  const slowest = el("div", {class: "panel-body"});
  const failures = el("div", {class: "panel-body"});
  const node = el("div", {class: "view load-view", data: {load: id}},
                  el("nav", {class: "crumbs"}, el("a", {href: "#/"}, "overview"), " / load test ",
                     el("strong", {}, id)),
                  panel("Load test", null, facts), panel("Thresholds", null, thresholds),
                  panel("Over time", null, charts, events),
                  panel("Failures", null, failures), panel("Slowest requests", null, slowest),
                  panel("Target", null, target));
  let ended = false;

  async function refresh() {
    if (ended) return;
    const t = await get(`loads/${enc(id)}`);
    node.dataset.state = t.state;
    facts.replaceChildren(factList(factsOf(t)));
    thresholds.replaceChildren(thresholdsOf(t.thresholds || []));
    charts.replaceChildren(...chartsOf(t));
    events.replaceChildren(eventsOf(t.events || []));
    target.replaceChildren(targetOf(t.target));
    slowest.replaceChildren(slowestOf(t.slowest || []));
    failures.replaceChildren(failuresOf(t.reasons || {}, t.reason_traces || {}));
    ended = t.state !== "running" && !(t.target?.process?.state === "running");
  }
  return {node, refresh};
}

function factsOf(t) {
  const l = t.latency || {};
  const facts = [["scenario", t.name], ["state", badge(t.state)], ["model", t.model],
                 ["elapsed", `${duration(t.elapsed_s)} of ${duration(t.duration_s)} on ` +
                             `${t.workers} worker${t.workers === 1 ? "" : "s"}`],
                 ["requests", `${t.requests} (${num(t.rps, 1)}/s)`],
                 ["errors", `${t.errors?.count || 0} (${pct(t.errors?.rate)})`],
                 ["latency", `p50 ${ms(l.p50)} · p90 ${ms(l.p90)} · p99 ${ms(l.p99)} · ` +
                             `max ${ms(l.max)}` + (t.corrected ? " (from the intended start)" : "")],
                 ["load", t.model === "held" ? `${t.connections?.open || 0} connections open, ` +
                                               `up to ${t.connections?.max || 0}`
                                             : `${t.vus} VUs, up to ${t.vus_max}`],
                 ["created", timeText(t.created)], ["ended", timeText(t.ended)]];
  if (t.reason) facts.push(["reason", t.reason]);
  return facts;
}

// A threshold's value as the CLI prints it: latency in ms, rates in %.
function thresholdValue(th) {
  if (/^(ws_)?latency/.test(th.name)) return ms(th.value);
  if (th.name.includes("rate")) return pct(th.value);
  return num(th.value, Number.isInteger(th.value) ? 0 : 1);
}

function thresholdsOf(list) {
  if (!list.length) return el("p", {class: "empty"}, "no thresholds");
  return table(["", "threshold", "value"], list.map((th) =>
    el("tr", {class: th.ok ? "ok" : "crossed", data: {threshold: th.name}},
       el("td", {}, badge(th.ok ? "ok" : "crossed")), el("td", {}, th.name),
       el("td", {class: "num"}, thresholdValue(th)))), "thresholds");
}

function chartsOf(t) {
  let series = Array.isArray(t.series) ? t.series : [];
  // An ended test's last second is cut short by its end: drawn, it would look like a collapse.
  if (t.state !== "running" && series.length > 1) series = series.slice(0, -1);
  if (!series.length) return [el("p", {class: "empty"}, "no complete second yet")];
  const xs = series.map((s) => s.t);
  const col = (k) => series.map((s) => Number(s[k] || 0));
  const ev = t.events || [];
  const count = (v) => num(v, v >= 10 || Number.isInteger(v) ? 0 : 1);
  const out = [
    lineChart("rps", "Requests per second", xs,
              [{name: "requests/s", colour: "#1f77b4", ys: col("rps")},
               {name: "errors/s", colour: "#d62728", ys: col("errors")}], count, ev),
    lineChart("latency", "Latency from the intended start", xs,
              [{name: "p50", colour: "#2ca02c", ys: col("p50")},
               {name: "p90", colour: "#ff7f0e", ys: col("p90")},
               {name: "p99", colour: "#d62728", ys: col("p99")}], ms, ev),
    lineChart("load", "Virtual users and connections", xs,
              [{name: "VUs", colour: "#9467bd", ys: col("vus")},
               ...(t.model === "held" || t.connections?.opened > 0
                   ? [{name: "connections", colour: "#8c564b", ys: col("connections")}] : [])],
              count, ev)];
  const samples = Array.isArray(t.target?.series) ? t.target.series : [];
  if (samples.length) {
    out.push(lineChart("target", "Target: RSS", samples.map((s) => s.t),
                       [{name: "rss", colour: "#17becf", ys: samples.map((s) => Number(s.rss || 0))}],
                       (v) => (v > 0 ? bytes(v) : "0"), ev));
  }
  return out;
}

function eventsOf(list) {
  if (!list.length) return el("p", {class: "empty"}, "no events");
  return table(["#", "at", "what", ""], list.map((e, i) =>
    el("tr", {data: {event: e.kind}},
       el("td", {class: "num", style: {color: markColour(e.kind)}}, i + 1),
       el("td", {class: "num"}, `${num(e.t, 1)} s`), el("td", {}, e.kind),
       el("td", {class: "reason"}, e.text))), "events");
}

// Why iterations failed, each with the trace of one of them.
function failuresOf(reasons, traces) {
  const list = Object.entries(reasons);
  if (!list.length) return el("p", {class: "empty"}, "no iteration failed");
  return table(["iterations", "reason", "trace id, one of them"], list.map(([why, n]) =>
    el("tr", {data: {failure: traces[why] || ""}},
       el("td", {class: "num"}, n), el("td", {class: "reason"}, why),
       el("td", {class: "value"}, traces[why] || "-"))), "failures");
}

// Each with the trace id its traceparent carried, to look it up in the server's tracer.
function slowestOf(list) {
  if (!list.length) return el("p", {class: "empty"}, "no request yet");
  return table(["latency", "step", "status", "at", "trace id"], list.map((q) =>
    el("tr", {data: {slow: q.trace_id || ""}},
       el("td", {class: "num"}, ms(q.ms)), el("td", {}, `${q.step} ${q.step_name || ""}`),
       el("td", {}, q.status ? q.status : q.outcome),
       el("td", {class: "num"}, `${num(q.t, 0)} s`),
       el("td", {class: "value"}, q.trace_id || "-"))), "slowest");
}

function targetOf(target) {
  const p = target?.process;
  if (!target) return el("p", {class: "empty"}, "no target watched");
  const facts = [["pid", target.pid ?? "-"], ["RSS, most", bytes(p ? p.rss_peak : target.rss_max)]];
  if (p) {
    facts.unshift(["command", p.cmd.join(" ")], ["state", badge(p.state)]);
    if (p.signal) facts.push(["signal", p.signal]);
    if (p.exit_code !== undefined && p.exit_code !== null) facts.push(["exit code", p.exit_code]);
    if (p.cause) facts.push(["cause", el("span", {class: "reason cause"}, p.cause)]);
  }
  const lines = (p?.lines || []).map((l) => el("div", {class: "line l-" + (l.stream === "stderr" ? "warning" : "info")},
                                             `${l.stream}| ${l.text}`));
  return el("div", {}, factList(facts), lines.length ? el("div", {class: "log"}, lines) : null);
}
