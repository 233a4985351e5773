// The workers panel: a row per slot from GET /workers, with the recent history of CPU, memory,
// loop lag and active instances as sparklines (kept here, in the page, for the last HISTORY
// refreshes), and notes on slots that are errored, backing off or being reloaded.
import {badge, bytes, duration, el, ms, panel, sparkline, table} from "./dom.js";

const HISTORY = 60;
const HEAD = ["slot", "pid", "state", "uptime", "restarts", "cpu", "memory", "loop lag",
              "heartbeat", "active", "placed", "last exit"];

// `get` asks the API.
export function workersPanel(get) {
  const body = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const notes = el("ul", {class: "notes"});
  const summary = el("span", {class: "panel-note"});
  const history = new Map();  // slot -> {pid, cpu: [], rss: [], lag: [], active: []}

  async function refresh() {
    const answer = await get("workers");
    const workers = [...(answer.workers || [])].sort((a, b) => a.slot - b.slot);
    const rows = workers.map((w) => row(w, remember(history, w)));
    body.replaceChildren(workers.length ? table(HEAD, rows, "workers")
                                        : el("p", {class: "empty"}, "no worker slots (scaled to 0)"));
    notes.replaceChildren(...workers.flatMap(noteOf).map((n) => el("li", {}, n)));
    summary.replaceChildren(memorySummary(answer.memory));
  }
  return {node: panel("Workers", summary, body, notes), refresh};
}

function remember(history, w) {
  let h = history.get(w.slot);
  if (!h || h.pid !== w.pid) h = {pid: w.pid, cpu: [], rss: [], lag: [], active: []};
  history.set(w.slot, h);
  const push = (list, v) => { list.push(Number(v) || 0); if (list.length > HISTORY) list.shift(); };
  push(h.cpu, w.cpu_percent);
  push(h.rss, w.rss_bytes);
  push(h.lag, w.loop_lag_ms);
  push(h.active, w.active);
  return h;
}

function row(w, h) {
  const running = w.pid > 0;
  return el("tr", {data: {slot: w.slot, pid: w.pid, state: w.state}},
            el("td", {class: "num"}, w.slot),
            el("td", {class: "num pid"}, running ? w.pid : "-"),
            el("td", {}, badge(w.state)),
            el("td", {}, w.uptime_s > 0 ? duration(w.uptime_s) : "-"),
            el("td", {class: "num"}, w.restarts),
            metric(typeof w.cpu_percent === "number" ? w.cpu_percent.toFixed(1) + "%" : "-",
                   h.cpu, 100),
            metric(bytes(w.rss_bytes), h.rss, 0),
            metric(ms(w.loop_lag_ms), h.lag, 10),
            el("td", {class: "num"}, running ? ms(w.heartbeat_lag_ms) : "-"),
            metric(String(w.active ?? 0), h.active, 0),
            el("td", {class: "num", title: capacityText(w)}, w.instances ?? 0),
            el("td", {class: "exit"}, lastExit(w.last_exit)));
}

function metric(text, values, floor) {
  return el("td", {class: "metric"}, el("span", {class: "value"}, text), sparkline(values, floor));
}

function capacityText(w) {
  if (w.capacity === null || w.capacity === undefined) return "placed by the master";
  return w.capacity >= 1e12 ? "placed by the master; no cap"
                            : `placed by the master; at most ${w.capacity}`;
}

// "signal SIGKILL 5m 2s ago", as `corral status` says it.
function lastExit(e) {
  if (!e) return "-";
  let text = e.reason || "exit";
  if (e.signal) text += " " + (e.signal_name || "signal " + e.signal);
  else if (e.code) text += ` (exit ${e.code})`;
  if (e.at) text += " " + duration((Date.now() - new Date(e.at)) / 1000) + " ago";
  return el("span", {title: e.detail || e.at || null}, text);
}

function noteOf(w) {
  const out = [];
  if (w.state === "errored") {
    let n = `slot ${w.slot} errored: ${w.reason || "?"}`;
    if (w.next_start_in_ms > 0) n += `; next try in ${duration(w.next_start_in_ms / 1000)}`;
    out.push(n);
  } else if (w.state === "backoff" && w.next_start_in_ms > 0) {
    out.push(`slot ${w.slot} restarts in ${ms(w.next_start_in_ms)}`);
  }
  if (w.successor) {
    const s = w.successor;
    const what = s.state === "probation" ? `on probation, ready for ${duration(s.ready_for_s)}`
               : s.state === "promoted" ? "taking over" : s.state;
    out.push(`slot ${w.slot} reloading: new worker pid ${s.pid} ${what}`);
  }
  return out;
}

function memorySummary(m) {
  if (!m || !(m.budget_bytes > 0)) return "";
  const per = m.instance_bytes > 0 ? `, ${bytes(m.instance_bytes)} an instance` +
                                     (m.measured ? " (measured)" : " (assumed)") : "";
  return `memory budget ${bytes(m.budget_bytes)} a worker${per}`;
}
