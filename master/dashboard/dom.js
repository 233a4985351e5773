// Building the page's elements, and formatting the API's values for people.
//
// Every value from the API reaches the DOM as text (a text node, textContent, an attribute set
// with setAttribute): run names, failure reasons and log lines come from systems under test and
// may hold markup. Nothing here, or in the views, parses a string as HTML.

const SVG = "http://www.w3.org/2000/svg";  // a namespace name, not fetched

// el("td", {class: "num", title: "..."}, "text", childNode, [more], null): an element with
// attributes, event handlers (on: {click: fn}), data-* attributes (data: {slot: 0}) and
// children; strings and numbers become text nodes, null and false are skipped.
export function el(tag, props, ...children) {
  const node = document.createElement(tag);
  setProps(node, props);
  append(node, children);
  return node;
}

function setProps(node, props) {
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "on") {
      for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    } else if (key === "data") {
      for (const [name, v] of Object.entries(value)) node.dataset[name] = String(v);
    } else if (key === "style") {
      Object.assign(node.style, value);
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// A table: its header cells, then one <tr> per row (build rows with el("tr", ...)).
export function table(headers, rows, className) {
  const head = el("tr", {}, headers.map((h) => el("th", {}, h)));
  return el("table", {class: className || null}, el("thead", {}, head), el("tbody", {}, rows));
}

// A state as a coloured label. The class takes only [a-z_] from the value.
export function badge(state) {
  const text = String(state ?? "-");
  return el("span", {class: "badge s-" + text.toLowerCase().replace(/[^a-z_]/g, "")}, text);
}

// A run's state as a label coloured by its outcome: a finished run is green only when every
// instance passed, amber when some did not, red when none passed.
export function runBadge(run) {
  const b = badge(run.state);
  if (run.state !== "finished") return b;
  const c = run.counts || {};
  const bad = (c.failed || 0) + (c.errored || 0) + (c.cancelled || 0);
  if (bad > 0) b.className = "badge " + ((c.passed || 0) === 0 ? "s-failed" : "s-partial");
  return b;
}

// The instance states, in the API's order, and the ones that have ended.
export const STATES = ["queued", "running", "passed", "failed", "errored", "cancelled"];
export const ENDED = ["passed", "failed", "errored", "cancelled"];

// A bar of a run's instances by state (ended ones first, then running, then queued), with
// "ended/total pct%" beside it.
export function progress(counts, total) {
  const bar = el("div", {class: "bar", role: "img"});
  const ended = ENDED.reduce((n, s) => n + (counts[s] || 0), 0);
  for (const s of [...ENDED, "running"]) {
    const n = counts[s] || 0;
    if (n > 0 && total > 0) {
      bar.append(el("span", {class: "seg s-" + s, title: `${s}: ${n}`,
                             style: {width: (100 * n / total).toFixed(2) + "%"}}));
    }
  }
  const pct = total > 0 ? Math.floor(100 * ended / total) : 0;
  bar.setAttribute("aria-label", `${ended} of ${total} instances ended`);
  return el("div", {class: "progress"}, bar,
            el("span", {class: "progress-text"}, `${ended}/${total} ${pct}%`));
}

// A line of the last values, scaled from 0 to the largest (at least `floor`), newest on the right.
export function sparkline(values, floor) {
  const w = 80, h = 18;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("preserveAspectRatio", "none");
  if (values.length > 1) {
    const max = Math.max(floor || 0, ...values) || 1;
    const step = w / (values.length - 1);
    const points = values.map((v, i) =>
      `${(i * step).toFixed(1)},${(h - 1 - (h - 2) * v / max).toFixed(1)}`);
    const area = document.createElementNS(SVG, "polygon");
    area.setAttribute("points", `0,${h} ${points.join(" ")} ${w},${h}`);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.join(" "));
    svg.append(area, line);
  }
  return svg;
}

// 18.7mb, as `corral status` writes it.
export function bytes(n) {
  if (!(n > 0)) return "-";
  if (n < 1024) return n + "b";
  const units = ["kb", "mb", "gb", "tb"];
  let v = n / 1024, u = 0;
  while (v >= 1023.95 && u + 1 < units.length) { v /= 1024; u++; }
  return v.toFixed(1) + units[u];
}

// 0.4ms, 37ms, 2.1s.
export function ms(v) {
  if (!(v > 0)) return "0ms";
  if (v < 10) return v.toFixed(1) + "ms";
  if (v < 1000) return Math.round(v) + "ms";
  return (v / 1000).toFixed(1) + "s";
}

// 45s, 12m 5s, 3h 20m, 2d 4h.
export function duration(seconds) {
  let s = Math.floor(seconds);
  if (!(s > 0)) return "0s";
  if (s < 60) return s + "s";
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor(s % 86400 / 3600)}h`;
}

// An API time ("2026-11-30T15:00:00Z") as local time, with the date when not today; "-" for null.
export function when(iso) {
  if (!iso) return "-";
  const t = new Date(iso);
  if (isNaN(t)) return String(iso);
  const clock = t.toLocaleTimeString([], {hour12: false});
  return t.toDateString() === new Date().toDateString()
      ? clock : `${t.toISOString().slice(0, 10)} ${clock}`;
}

// Seconds from one API time to another (or to now).
export function secondsBetween(fromIso, toIso) {
  if (!fromIso) return 0;
  const end = toIso ? new Date(toIso) : new Date();
  return Math.max(0, (end - new Date(fromIso)) / 1000);
}

// A cell holding a time, with the exact value on hover.
export function timeCell(iso) {
  return el("td", {title: iso || null}, when(iso));
}

// A section of the page with a title, an optional line of controls, and a body.
export function panel(title, controls, ...body) {
  return el("section", {class: "panel"},
            el("div", {class: "panel-head"}, el("h2", {}, title), controls || null), body);
}

// What a JSON value reads as in a cell: strings as they are, the rest as JSON.
export function plain(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}
