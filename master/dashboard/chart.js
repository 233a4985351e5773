// Line charts drawn as SVG from a load test's per-second series, with the test's events as
// numbered dashed vertical lines (the same picture as the HTML report, cli/html_report.h).
const SVG = "http://www.w3.org/2000/svg";  // a namespace name, not fetched
const W = 860, H = 200, LEFT = 64, RIGHT = 16, TOP = 26, BOTTOM = 24;
export const MARK_COLOURS = {stage: "#888888", threshold: "#e08e0b"};  // else red
export const markColour = (kind) => MARK_COLOURS[kind] || "#b00000";

function node(tag, attrs, text) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== undefined) n.textContent = String(text);
  return n;
}

// Text in a colour of its own: set through the CSSOM, which wins over the stylesheet's text
// colour and which the page's Content-Security-Policy allows (a style attribute it would not).
function coloured(text, colour) {
  text.style.fill = colour;
  return text;
}

// The smallest of 1, 2, 5 x 10^k at least `v`.
function roundUp(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// lineChart("rps", "Requests per second", xs, [{name, colour, ys}], (y) => label, events):
// an <svg class="chart" data-chart=id>; y from 0 to a round number above the largest value.
export function lineChart(id, title, xs, lines, label, events) {
  const svg = node("svg", {class: "chart", "data-chart": id, viewBox: `0 0 ${W} ${H}`,
                           preserveAspectRatio: "xMinYMin meet"});
  svg.append(node("text", {x: LEFT, y: 16, class: "chart-title"}, title));
  const x0 = xs.length ? xs[0] : 0;
  // x reaches as far as the last event: an end falls in the last second, which is cut.
  const last = Math.max(xs.length ? xs[xs.length - 1] : 0, ...(events || []).map((e) => e.t));
  const x1 = last > x0 ? last : x0 + 1;
  const top = roundUp(Math.max(0, ...lines.flatMap((l) => l.ys.filter(Number.isFinite))));
  const w = W - LEFT - RIGHT, h = H - TOP - BOTTOM;
  const px = (x) => LEFT + (x - x0) / (x1 - x0) * w;
  const py = (y) => TOP + h - Math.min(Math.max(y / top, 0), 1) * h;
  let legend = W - RIGHT;
  for (const l of [...lines].reverse()) {
    legend -= 12 + 7 * l.name.length;
    svg.append(coloured(node("text", {x: legend, y: 16}, l.name), l.colour));
  }
  for (let i = 0; i <= 4; i++) {
    const y = py(top * i / 4);
    svg.append(node("line", {class: "grid", x1: LEFT, x2: LEFT + w, y1: y, y2: y}),
               node("text", {x: LEFT - 6, y: y + 4, "text-anchor": "end"}, label(top * i / 4)));
  }
  for (const x of [x0, (x0 + x1) / 2, x1]) {
    svg.append(node("text", {x: px(x), y: H - 6, "text-anchor": "middle"}, `${Math.round(x)} s`));
  }
  for (const l of lines) {
    const points = l.ys.slice(0, xs.length)
        .map((y, i) => `${px(xs[i]).toFixed(1)},${py(y || 0).toFixed(1)}`).join(" ");
    svg.append(node("polyline", {"data-series": l.name, fill: "none", stroke: l.colour,
                                 "stroke-width": 1.5, points}));
  }
  (events || []).forEach((e, i) => {
    if (e.t < x0 || e.t > x1) return;
    const g = node("g", {class: "mark", "data-mark": e.kind});
    g.append(node("title", {}, e.text),
             node("line", {x1: px(e.t), x2: px(e.t), y1: TOP, y2: TOP + h, stroke: markColour(e.kind),
                           "stroke-dasharray": "4 3"}),
             coloured(node("text", {x: px(e.t) + 3, y: TOP + 10}, i + 1), markColour(e.kind)));
    svg.append(g);
  });
  return svg;
}
