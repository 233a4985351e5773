// One instance's page (#/runs/<id>/<n>): its state, where it is, why it ended, its variables
// (secrets masked by the API) and the history of its steps (GET /runs/<id>/instances/<n>).
// Asked again on each refresh until the instance has ended.
import {enc} from "./api.js";
import {ENDED, badge, el, ms, panel, plain, table, timeCell} from "./dom.js";
import {factList, timeText, took} from "./run.js";

const STEP_HEAD = ["step", "name", "state", "attempts", "took", "until held", "status", "started",
                   "reason", "url"];

export function instanceView(get, id, n) {
  const facts = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const vars = el("div", {class: "panel-body"});
  const steps = el("div", {class: "panel-body"});
  const node = el("div", {class: "view instance-view", data: {run: id, instance: n}},
                  el("nav", {class: "crumbs"}, el("a", {href: "#/"}, "overview"), " / run ",
                     el("a", {href: "#/runs/" + enc(id)}, id), " / instance ", el("strong", {}, n)),
                  panel("Instance", null, facts), panel("Steps", null, steps),
                  panel("Variables", null, vars));
  let ended = false;

  async function refresh() {
    if (ended) return;
    const i = await get(`runs/${enc(id)}/instances/${enc(n)}`);
    facts.replaceChildren(factList(factsOf(i)));
    steps.replaceChildren(stepsOf(i.steps || []));
    vars.replaceChildren(varsOf(i.vars || {}));
    ended = ENDED.includes(i.state);
  }
  return {node, refresh};
}

function factsOf(i) {
  const out = [["state", badge(i.state)], ["next step", i.step], ["worker", i.worker ?? "-"],
               ["started", timeText(i.started_at)], ["ended", timeText(i.ended_at)],
               ["took", took(i)], ["resumes", i.resumes]];
  if ((i.resume_reasons || []).length) out.push(["resumed after", i.resume_reasons.join(", ")]);
  if (i.reason) out.push(["reason", i.reason]);
  if (i.trace_id) out.push(["trace", el("span", {class: "value"}, i.trace_id)]);
  return out;
}

function stepsOf(list) {
  if (!list.length) return el("p", {class: "empty"}, "no step has run yet");
  const rows = list.map((s) => el("tr", {data: {step: s.step, state: s.state}},
                                  el("td", {class: "num"}, s.step),
                                  el("td", {class: "name"}, s.name),
                                  el("td", {}, badge(s.state)),
                                  el("td", {class: "num"}, s.attempts),
                                  el("td", {class: "num"}, ms(s.duration_ms)),
                                  el("td", {class: "num"}, s.until_ms >= 0 ? ms(s.until_ms) : "-"),
                                  el("td", {class: "num"}, s.status || "-"),
                                  timeCell(s.started_at),
                                  el("td", {class: "reason"}, s.reason || ""),
                                  el("td", {class: "url"}, s.url || "")));
  return table(STEP_HEAD, rows, "steps");
}

function varsOf(vars) {
  const entries = Object.entries(vars);
  if (!entries.length) return el("p", {class: "empty"}, "no variables");
  return table(["name", "value"], entries.map(([k, v]) =>
    el("tr", {}, el("td", {class: "name"}, k), el("td", {class: "value"}, plain(v)))), "vars");
}
