// One run's page (#/runs/<id>?state=failed): its counts, durations and variables (GET
// /runs/<id>), every failure group, and its instances filtered by state, a page at a time
// (GET /runs/<id>/instances?state=&from=&limit=, following "next"). While the run has not
// finished, each refresh asks again for the instances already shown.
import {enc} from "./api.js";
import {STATES, badge, duration, el, ms, panel, plain, progress, runBadge, secondsBetween, table,
        timeCell, when} from "./dom.js";

const PAGE = 100;           // instances a page
const REFRESHED_MAX = 1000; // instances asked for again on a refresh, while the run goes on
const INSTANCE_HEAD = ["#", "state", "step", "worker", "resumes", "started", "took", "reason"];

// `get` asks the API; `changed` asks the page for a refresh (which calls refresh()).
export function runView(get, id, state, changed) {
  const summary = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const groups = el("div", {class: "panel-body"});
  const filters = el("nav", {class: "filters"});
  const list = el("div", {class: "panel-body"});
  const more = el("button", {type: "button", hidden: true}, "show more");
  const node = el("div", {class: "view run-view", data: {run: id}},
                  el("nav", {class: "crumbs"}, el("a", {href: "#/"}, "overview"), " / run ",
                     el("strong", {}, id)),
                  panel("Run", null, summary), panel("Failure groups", null, groups),
                  panel("Instances", filters, list, more));
  let rows = [], next = null, over = false, loaded = false, wantMore = false;

  more.addEventListener("click", () => { wantMore = true; changed(); });

  async function page(from, limit, appending) {
    const q = `runs/${enc(id)}/instances?limit=${limit}&from=${from}` +
              (state ? `&state=${enc(state)}` : "");
    const answer = await get(q);
    rows = appending ? rows.concat(answer.instances) : answer.instances;
    next = answer.next;
    drawInstances();
  }

  function drawInstances() {
    list.replaceChildren(rows.length ? table(INSTANCE_HEAD, rows.map((i) => instanceRow(id, i)),
                                             "instances")
                                     : el("p", {class: "empty"}, state ? `no ${state} instances` : "no instances"));
    more.hidden = next === null || next === undefined;
  }

  async function refresh() {
    const run = await get(`runs/${enc(id)}`);
    summary.replaceChildren(...summaryOf(run));
    groups.replaceChildren(groupsOf(run));
    filters.replaceChildren(...filterLinks(run, state));
    if (wantMore && next !== null) {
      wantMore = false;
      await page(next, PAGE, true);
    } else if (!loaded || !over) {
      await page(0, Math.min(Math.max(rows.length, PAGE), REFRESHED_MAX), false);
    }
    loaded = true;
    over = run.state === "finished" || run.state === "cancelled";
  }
  return {node, refresh};
}

function summaryOf(run) {
  const d = run.duration_ms || {};
  const facts = [
    ["scenario", run.scenario], ["state", runBadge(run)], ["instances", run.instances],
    ["created", timeText(run.created_at)], ["finished", timeText(run.finished_at)],
    ["elapsed", duration(secondsBetween(run.created_at, run.finished_at))],
    ["took", `p50 ${ms(d.p50)}, p95 ${ms(d.p95)}, max ${ms(d.max)}`],
  ];
  if (run.queued_reason) facts.push(["queued", run.queued_reason]);
  const vars = Object.entries(run.vars || {});
  if (vars.length) facts.push(["vars", vars.map(([k, v]) => `${k}=${plain(v)}`).join("  ")]);
  return [progress(run.counts || {}, run.instances), factList(facts)];
}

// A time as local time, the API's exact value on hover.
export function timeText(iso) {
  return el("span", {title: iso || null}, when(iso));
}

// How long an instance or step took, or has taken so far while it runs.
export function took(item) {
  if (!item.started_at) return "-";
  return item.ended_at ? ms(item.duration_ms)
                       : duration(secondsBetween(item.started_at, null)) + " so far";
}

export function factList(facts) {
  return el("dl", {class: "facts"}, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]));
}

function groupsOf(run) {
  const groups = run.failures || [];
  if (!groups.length) return el("p", {class: "empty"}, "no failures");
  const rows = groups.map((g) => el("tr", {},
                                    el("td", {class: "num"}, g.count),
                                    el("td", {class: "num"}, g.step),
                                    el("td", {class: "name"}, g.step_name),
                                    el("td", {class: "reason"}, g.reason)));
  return table(["instances", "step", "name", "reason"], rows, "groups");
}

// "all 200 · queued 0 · running 180 · passed 20 ...", each a link that filters the list.
function filterLinks(run, current) {
  const counts = run.counts || {};
  const link = (s, n) => el("a", {href: `#/runs/${enc(run.id)}` + (s ? `?state=${s}` : ""),
                                   class: (s || "") === (current || "") ? "current" : null},
                            `${s || "all"} ${n}`);
  return [link("", run.instances), ...STATES.map((s) => link(s, counts[s] || 0))];
}

function instanceRow(id, i) {
  const href = `#/runs/${enc(id)}/${i.i}`;
  return el("tr", {data: {instance: i.i, state: i.state}},
            el("td", {class: "num"}, el("a", {href}, i.i)),
            el("td", {}, badge(i.state)),
            el("td", {class: "num"}, i.step),
            el("td", {class: "num"}, i.worker ?? "-"),
            el("td", {class: "num", title: (i.resume_reasons || []).join(", ") || null}, i.resumes),
            timeCell(i.started_at),
            el("td", {class: "num"}, took(i)),
            el("td", {class: "reason"}, i.reason || ""));
}
