// The dashboard's page: picks the view from the location's hash, and refreshes it and the
// header by polling the API every interval (1 s to 10 s, or paused; never while the tab is
// hidden, nor two refreshes at once). Polling with fetch rather than server-sent events because
// EventSource cannot send the Authorization header the API token needs.
//   #/                     overview: workers, runs, logs
//   #/runs/<id>?state=S    a run and its instances in state S
//   #/runs/<id>/<n>        one instance's steps
//   #/loads/<id>           a load test: its numbers, charts and events
import {ApiError, get, token} from "./api.js";
import {duration, el} from "./dom.js";
import {instanceView} from "./instance.js";
import {loadView, loadsPanel} from "./loads.js";
import {logsPanel} from "./logs.js";
import {runView} from "./run.js";
import {runsPanel} from "./runs.js";
import {workersPanel} from "./workers.js";

const INTERVAL_KEY = "corral.interval";
const $ = (id) => document.getElementById(id);
const page = {view: null, timer: null, busy: false, again: false, downSince: null,
              interval: Number(localStorage.getItem(INTERVAL_KEY) ?? 2000)};

function overview() {
  const panels = [workersPanel(get), runsPanel(get), loadsPanel(get), logsPanel(get, refreshNow)];
  return {node: el("div", {class: "view overview"}, panels.map((p) => p.node)),
          refresh: () => Promise.all(panels.map((p) => p.refresh()))};
}

function viewFor(hash) {
  const [path, query] = hash.replace(/^#\/?/, "").split("?");
  let parts;
  try {
    parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  } catch (e) {
    return overview();  // a malformed escape in a typed URL
  }
  const state = new URLSearchParams(query || "").get("state") || "";
  if (parts[0] === "runs" && parts.length === 2) return runView(get, parts[1], state, refreshNow);
  if (parts[0] === "runs" && parts.length === 3) return instanceView(get, parts[1], parts[2]);
  if (parts[0] === "loads" && parts.length === 2) return loadView(get, parts[1]);
  return overview();
}

function showView() {
  page.view = viewFor(location.hash);
  $("view").replaceChildren(page.view.node);
  refreshNow();
}

async function showHealth() {
  const h = await get("health");
  const status = $("status");
  status.textContent = h.status;
  status.className = "badge s-" + String(h.status).replace(/[^a-z_]/g, "");
  const journal = h.journal && h.journal.ok ? "journal ok" : "journal failing";
  $("facts").textContent = [`corral ${h.version}`, `pid ${h.pid}`, `up ${duration(h.uptime_s)}`,
                            `${h.workers_ready}/${h.workers_wanted} workers ready`, journal,
                            `api ${h.listen}`, h.home].join(" · ");
}

// Refreshes the header and the view now, then every interval. A request for a refresh while
// one runs is kept for when it ends.
async function refreshNow() {
  clearTimeout(page.timer);
  page.timer = null;
  if (page.busy) { page.again = true; return; }
  page.busy = true;
  const view = page.view;
  try {
    await Promise.all([showHealth(), view.refresh()]);
    if (view === page.view) connected();
  } catch (e) {
    if (view === page.view) failed(e);
  } finally {
    page.busy = false;
  }
  if (page.again) { page.again = false; return refreshNow(); }
  schedule();
}

function schedule() {
  if (page.interval > 0 && !document.hidden && !$("token-dialog").open && page.timer === null) {
    page.timer = setTimeout(refreshNow, page.interval);
  }
}

function connected() {
  page.downSince = null;
  document.body.dataset.state = "ok";
  $("banner").hidden = true;
  $("updated").textContent = "updated " + new Date().toLocaleTimeString([], {hour12: false});
  $("forget-token").hidden = !token.get();
}

function failed(e) {
  if (e instanceof ApiError && e.status === 401) return askToken();
  const down = e instanceof ApiError && e.status === 0;
  if (down && page.downSince === null) page.downSince = new Date();
  document.body.dataset.state = down ? "down" : "error";
  if (down) {
    $("status").textContent = "not answering";
    $("status").className = "badge s-down";
  }
  const every = page.interval > 0 ? `retrying every ${page.interval / 1000}s` : "refresh paused";
  const banner = $("banner");
  banner.textContent = down
      ? `daemon not answering at ${location.host} since ` +
        `${page.downSince.toLocaleTimeString([], {hour12: false})} · ${every} · ${e.message}`
      : e instanceof ApiError ? `${e.status}: ${e.message}` : `the page failed: ${e.message}`;
  banner.hidden = false;
}

function askToken() {
  document.body.dataset.state = "token";
  $("token-refused").hidden = !token.get();
  token.clear();
  if (!$("token-dialog").open) $("token-dialog").showModal();
  $("token-input").focus();
}

function start() {
  const select = $("interval");
  select.value = String(page.interval);
  if (select.value !== String(page.interval)) page.interval = Number(select.value = "2000");
  select.addEventListener("change", () => {
    page.interval = Number(select.value);
    localStorage.setItem(INTERVAL_KEY, select.value);
    refreshNow();
  });
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token.set($("token-input").value.trim());
    $("token-input").value = "";
    $("token-dialog").close();
    refreshNow();
  });
  // Without a token nothing but the header can show: the dialog stays until one is given.
  $("token-dialog").addEventListener("cancel", (ev) => ev.preventDefault());
  $("forget-token").addEventListener("click", () => { token.clear(); refreshNow(); });
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) refreshNow();
  });
  window.addEventListener("hashchange", showView);
  showView();
}

start();
