// The log tail: the last lines of master.log and the worker logs, merged in time order
// (GET /logs), with a choice of file and of how many lines, a filter on the text, and "follow",
// which keeps the newest line in view.
import {enc} from "./api.js";
import {el, panel} from "./dom.js";

const LINE_CHOICES = [100, 200, 500, 1000];
// "2026-12-02T21:42:08.816+00:00 master[11399] warning ...": the level is the third word.
const LEVEL = /^\S+ \S+ (trace|debug|info|warning|error|critical)\b/;

// `get` asks the API; `changed` asks the page for a refresh when the user picks another file or
// line count.
export function logsPanel(get, changed) {
  const source = el("select", {"aria-label": "log file"}, el("option", {value: ""}, "all files"));
  const lines = el("select", {"aria-label": "lines"},
                   LINE_CHOICES.map((n) => el("option", {value: n}, `${n} lines`)));
  lines.value = "200";
  const filter = el("input", {type: "search", placeholder: "filter", "aria-label": "filter"});
  const follow = el("input", {type: "checkbox", checked: true});
  const box = el("div", {class: "log", tabindex: 0}, el("div", {class: "empty"}, "loading…"));
  const where = el("p", {class: "panel-foot"});
  let last = null;

  const controls = el("div", {class: "controls"}, source, lines, filter,
                      el("label", {}, follow, " follow"));
  filter.addEventListener("input", () => last && draw(last));
  source.addEventListener("change", changed);
  lines.addEventListener("change", changed);
  follow.addEventListener("change", () => follow.checked && (box.scrollTop = box.scrollHeight));

  function draw(answer) {
    const needle = filter.value.trim().toLowerCase();
    const shown = (answer.lines || []).filter((l) => !needle || l.toLowerCase().includes(needle));
    box.replaceChildren(...shown.map(lineOf));
    if (!shown.length) box.append(el("div", {class: "empty"}, needle ? "no line matches" : "no lines"));
    if (follow.checked) box.scrollTop = box.scrollHeight;
    where.replaceChildren(`${answer.dir}: ${(answer.files || []).join(", ") || "no log files"}`);
  }

  async function refresh() {
    const query = `logs?lines=${lines.value}` + (source.value ? `&source=${enc(source.value)}` : "");
    last = await get(query);
    keepSources(source, last.files || []);
    draw(last);
  }
  return {node: panel("Logs", controls, box, where), refresh};
}

function lineOf(text) {
  const m = LEVEL.exec(text);
  return el("div", {class: "line" + (m ? " l-" + m[1] : "")}, text);
}

// The file choices: every file the daemon has had a log for, in the order it lists them.
function keepSources(select, files) {
  const have = new Set([...select.options].map((o) => o.value));
  for (const f of files) {
    if (!have.has(f)) select.append(el("option", {value: f}, f));
  }
}
