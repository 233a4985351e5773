// The runs panel: the newest runs from GET /runs with a progress bar and their counts by state,
// and under a run with failures its largest failure groups (from GET /runs/<id>, asked again
// only while the run has not finished).
import {enc} from "./api.js";
import {STATES, duration, el, panel, progress, runBadge, secondsBetween, table, timeCell}
    from "./dom.js";

const LIMIT = 50;           // runs listed
const DETAILED = 10;        // of them, at most this many get their failure groups asked for
const GROUPS_SHOWN = 3;     // failure groups under a run; the run's page lists them all
const HEAD = ["run", "scenario", "state", "progress", ...STATES, "created", "elapsed"];

// `get` asks the API.
export function runsPanel(get) {
  const body = el("div", {class: "panel-body"}, el("p", {class: "empty"}, "loading…"));
  const count = el("span", {class: "panel-note"});
  const details = new Map();  // run id -> GET /runs/<id> of a finished run, kept

  async function refresh() {
    const runs = (await get(`runs?limit=${LIMIT}`)).runs || [];
    const failing = runs.filter((r) => failures(r) > 0).slice(0, DETAILED);
    await Promise.all(failing.map(async (r) => {
      if (details.has(r.id) && isOver(details.get(r.id))) return;
      try {
        details.set(r.id, await get(`runs/${enc(r.id)}`));
      } catch (e) {
        if (e.status === 401) throw e;  // the token: the page asks for it
      }                                 // a run pruned meanwhile: shown without its groups
    }));
    const rows = runs.flatMap((r) => [runRow(r), ...groupRows(details.get(r.id))]);
    body.replaceChildren(runs.length ? table(HEAD, rows, "runs")
                                     : el("p", {class: "empty"}, "no runs yet: corral run FILE"));
    count.replaceChildren(runs.length >= LIMIT ? `the newest ${LIMIT}` : "");
  }
  return {node: panel("Runs", count, body), refresh};
}

const failures = (r) => (r.counts?.failed || 0) + (r.counts?.errored || 0);
const isOver = (r) => r.state === "finished" || r.state === "cancelled";

function runRow(r) {
  const counts = r.counts || {};
  return el("tr", {data: {run: r.id, state: r.state}},
            el("td", {}, el("a", {href: "#/runs/" + enc(r.id)}, r.id)),
            el("td", {class: "name"}, r.scenario),
            el("td", {}, runBadge(r)),
            el("td", {class: "progress-cell"}, progress(counts, r.instances)),
            STATES.map((s) => el("td", {class: "num" + (counts[s] ? " n-" + s : "")},
                                 counts[s] ?? 0)),
            timeCell(r.created_at),
            el("td", {class: "num"}, duration(secondsBetween(r.created_at, r.finished_at))));
}

// "40 × step 1 (wait for export): fail_if held: /status was "failed"" under the run's row.
function groupRows(detail) {
  const groups = (detail && detail.failures) || [];
  const rows = groups.slice(0, GROUPS_SHOWN).map((g) =>
    el("tr", {class: "failure-group", data: {groupOf: detail.id}},
       el("td", {colspan: HEAD.length},
          el("span", {class: "count"}, `${g.count} × `),
          `step ${g.step}` + (g.step_name ? ` (${g.step_name})` : "") + ": ",
          el("span", {class: "reason"}, g.reason))));
  if (groups.length > GROUPS_SHOWN) {
    rows.push(el("tr", {class: "failure-group"},
                 el("td", {colspan: HEAD.length},
                    el("a", {href: "#/runs/" + enc(detail.id)},
                       `${groups.length - GROUPS_SHOWN} more failure groups`))));
  }
  return rows;
}
