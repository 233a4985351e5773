// The runs API: submit a scenario with N instances, watch it, read each instance's history,
// cancel it, prune old runs.
//   POST   /runs                         {"scenario": {...}, "instances": N, "vars": {...},
//                                          "priority": P}; or "data" for one instance per row
//                                          of a file (api_run_data.cc)
//   GET    /runs?limit=200               recent runs with counts, newest first
//   DELETE /runs?older_than=7d           forgets finished runs older than that (default: the
//                                        configured retention)
//   GET    /runs/<id>                    counts, durations, top failures
//   DELETE /runs/<id>                    cancels what has not finished
//   GET    /runs/<id>/instances, GET /runs/<id>/instances/<n>: api_run_instances.cc
// (The route table is at the end of this file.)
#include <charconv>
#include <cstdlib>
#include <set>

#include "config/scenario/parse.h"
#include "master/api_body.h"
#include "master/cluster/hosts.h"
#include "master/journal/journal.h"
#include "master/run_service.h"
#include "shared/proc.h"

#include <spdlog/spdlog.h>

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

constexpr uint32_t kMaxInstances = kMaxRunInstances;  // per submission
constexpr size_t kMaxQueued = 2000000;                // waiting for a worker, over all runs

std::optional<uint32_t> to_index(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

// The run named by a route's {id}; answers 404 and returns nullptr when there is none.
Run* RunService::run_of(const ApiCall& c) {
  Run* run = runs_.find(c.args.at(0));
  if (run == nullptr) c.respond.send(Response::error(404, "no run \"" + c.args[0] + "\""));
  return run;
}

Result<RunService::RunRequest> RunService::request(const json& body,
                                                   const std::set<std::string>& extra) const {
  auto sc = body.find("scenario");
  if (sc == body.end() || !sc->is_object()) {
    return invalid_argument("scenario: expected a scenario object");
  }
  json n = body.value("instances", json(1));
  if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxInstances) {
    return invalid_argument("instances: expected an integer from 1 to " +
                            std::to_string(kMaxInstances) + ", got " + n.dump());
  }
  json vars = body.value("vars", json::object());
  if (!vars.is_object()) return invalid_argument("vars: expected an object, got " + vars.dump());
  json priority = body.value("priority", json(1));
  if (!priority.is_number_integer() || priority.get<int64_t>() < 1 ||
      priority.get<int64_t>() > 100) {
    return invalid_argument("priority: expected an integer from 1 to 100, got " + priority.dump());
  }
  scenario::ParseOptions options;
  for (const auto& [k, v] : vars.items()) options.extra_vars.insert(k);
  options.extra_vars.insert(extra.begin(), extra.end());
  // Workers inherit the daemon's environment and get its secrets: check against those.
  options.has_env = [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; };
  options.has_secret = [this](const std::string& name) { return secrets_.find(name) != nullptr; };
  options.check_files = true;  // the workers read them on this host
  auto parsed = scenario::parse_scenario(*sc, options);
  if (!parsed) return invalid_argument("scenario." + parsed.status().message());
  if (auto problem = callback_problem(**parsed)) return invalid_argument("scenario." + *problem);
  if (auto limits = scenario::run_limits(**parsed, vars); !limits) {
    return invalid_argument("scenario." + limits.status().message());
  }
  return RunRequest{*parsed, std::move(vars), n.get<uint32_t>(), priority.get<uint32_t>()};
}

std::optional<RunService::Refusal> RunService::refuse(uint32_t count) const {
  if (hosts_ != nullptr && !hosts_->fenced().empty()) {
    return Refusal{503, "this host is fenced off from the cluster (" + hosts_->fenced() +
                            "): new runs are refused until its heartbeat is written again"};
  }
  if (journal_) {
    journal::Journal::Health h = journal_->health();
    if (!h.ok && h.queued >= static_cast<uint64_t>(cfg_.journal_max_queued)) {
      return Refusal{503, "the journal cannot be written (" + h.error + ") and holds " +
                              std::to_string(h.queued) +
                              " writes not saved yet (journal_max_queued "
                              "is " +
                              std::to_string(cfg_.journal_max_queued) +
                              "): new runs are refused until it can be written"};
    }
  }
  const size_t waiting = runs_.pending();
  if (waiting + count <= kMaxQueued + dispatcher_.capacity()) return std::nullopt;
  return Refusal{429, "queue full: " + std::to_string(waiting) +
                          " instances are waiting for a worker; try again when some have finished"};
}

void RunService::api_submit(const ApiCall& c) {
  auto submitted = submission_body(c, workers_.stopping(), "runs",
                                   {"scenario", "instances", "vars", "priority", "data"});
  if (!submitted) return;
  if (submitted->contains("data")) {
    submit_data(c, std::move(*submitted));
    return;
  }
  auto req = request(*submitted);
  if (!req) {
    c.respond.send(Response::error(400, req.status().message()));
    return;
  }
  if (auto refused = refuse(req->count)) {
    c.respond.send(Response::error(refused->status, refused->why));
    return;
  }
  submit({std::move(req->scenario), std::move(req->vars), req->count, c.respond, req->priority,
          std::nullopt, nullptr});
}

void RunService::api_list(const ApiCall& c) {
  uint32_t limit = to_index(c.req.query_param("limit").value_or("200")).value_or(200);
  api::RunsAnswer answer;
  for (auto it = runs_.all().rbegin(); it != runs_.all().rend() && answer.runs.size() < limit;
       ++it) {
    answer.runs.push_back(runs_.summary_of(**it));
  }
  c.respond.send(Response::json(200, api::to_json(answer)));
}

void RunService::api_prune(const ApiCall& c) {
  size_t n = 0;
  if (auto older = c.req.query_param("older_than")) {
    auto ms = config::parse_duration_ms(*older);
    if (!ms) {
      c.respond.send(Response::error(400, "older_than: " + ms.status().message()));
      return;
    }
    const int64_t before = unix_ms_now() - static_cast<int64_t>(*ms);
    n = runs_.prune_finished_before(before);
    if (hosts_) hosts_->announce_prune(before);  // the other hosts forget them too
  } else {
    n = runs_.prune(unix_ms_now());
  }
  spdlog::info("prune: {} finished runs forgotten", n);
  // Answered once the journal has them deleted: a master killed after the answer keeps them
  // forgotten.
  respond_journaled(journal_, c.respond, 200, {{"pruned", n}});
}

void RunService::api_get(const ApiCall& c) {
  Run* run = run_of(c);
  if (run == nullptr) return;
  api::RunDetail detail = runs_.detail_of(*run);
  if (run->pending() > 0) {
    if (Dispatcher::Blocked b = dispatcher_.blocked(); !b.kind.empty())
      detail.queued_reason = b.why;
  }
  c.respond.send(Response::json(200, api::to_json(detail)));
}

void RunService::api_cancel(const ApiCall& c) {
  Run* run = run_of(c);
  if (run == nullptr) return;
  dispatcher_.forget_run(*run);  // its running instances free their workers' room
  size_t n = runs_.cancel(*run, unix_ms_now());
  stop_on_workers(run->id);
  spdlog::info("run {}: cancelled ({} instances had not finished)", run->id, n);
  c.respond.send(Response::json(200, {{"run", run->id}, {"cancelled", n}}));
}

void RunService::api_resume(const ApiCall& c) {
  Run* run = run_of(c);
  if (run == nullptr) return;
  std::string was = run->quarantine;
  if (!runs_.resume(*run)) {
    c.respond.send(Response::error(
        409, "run " + run->id + " is not quarantined (state " + run->state() + ")"));
    return;
  }
  spdlog::warn("run {}: resumed from quarantine by request (it was: {})", run->id, was);
  workers_.place_soon();
  c.respond.send(Response::json(200, {{"run", run->id}, {"state", run->state()}}));
}

// The routes of runs and callbacks, in the README's order (the handlers: this file,
// api_run_data.cc, api_run_instances.cc, api_callbacks.cc).
const std::vector<ApiRoute>& RunService::routes() {
  static const std::vector<ApiRoute> routes = {
      {"POST", "/runs", on<&RunService::api_submit>, false,
       "`{\"scenario\":{...},\"instances\":N,\"vars\":{...},\"priority\":P}`, or"
       " `\"data\":{\"path\":...}` for one instance per row of a file: 201"
       " `{\"run\":\"r1-c034\",\"instances\":N}`; 400 names the field at fault; 429 when the"
       " queue is full"},
      {"GET", "/runs", on<&RunService::api_list>, false,
       "recent runs with counts, newest first; `?limit=200`"},
      {"DELETE", "/runs", on<&RunService::api_prune>, false,
       "forgets finished runs; `?older_than=7d` (default: the configured retention)"},
      {"GET", "/runs/{id}", on<&RunService::api_get>, false,
       "counts, durations, top failures, the scenario's steps (`[{\"step\",\"name\"}]`)"},
      {"DELETE", "/runs/{id}", on<&RunService::api_cancel>, false, "cancels what has not finished"},
      {"POST", "/runs/{id}/resume", on<&RunService::api_resume>, false,
       "places a quarantined run's instances again (`state` was `quarantined`: its workers kept"
       " dying); 409 when it is not quarantined"},
      {"GET", "/runs/{id}/instances", on<&RunService::api_instances>, false,
       "`?state=failed&limit=100&from=0&steps=true` (`limit` at most 10,000); `next` is the"
       " index to ask `from` for more (a finished run is read back from the journal a page at"
       " a time)"},
      {"GET", "/runs/{id}/instances/{n}", on<&RunService::api_instance>, false,
       "one instance's step history"},
      {"POST", "/callbacks/{token}", on<&RunService::api_callback>, true,
       "completes an instance's callback step with the JSON body: 202 once journaled; 404 for"
       " a token this daemon did not make, 409 when called already, 410 when the step has ended"
       " ([docs/scenarios.md](docs/scenarios.md#callback))"},
      {"POST", "/callbacks/{token}/heartbeat", on<&RunService::api_callback_heartbeat>, true,
       "keeps a callback step with a `heartbeat` waiting: 202"},
  };
  return routes;
}

}  // namespace corral::master
