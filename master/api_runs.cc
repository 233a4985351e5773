// The runs API: submit a scenario with N instances, watch it, read each instance's history,
// cancel it, prune old runs.
//   POST   /runs                         {"scenario": {...}, "instances": N, "vars": {...}}
//   GET    /runs?limit=200               recent runs with counts, newest first
//   DELETE /runs?older_than=7d           forgets finished runs older than that (default: the
//                                        configured retention)
//   GET    /runs/<id>                    counts, durations, top failures
//   DELETE /runs/<id>                    cancels what has not finished
//   GET    /runs/<id>/instances?state=failed&limit=100[&steps=true]
//   GET    /runs/<id>/instances/<n>      one instance's step history
#include <charconv>
#include <cstdlib>
#include <set>

#include "config/scenario/parse.h"
#include "master/daemon_impl.h"
#include "shared/proc.h"

#include <spdlog/spdlog.h>

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

constexpr uint32_t kMaxInstances = kMaxRunInstances;  // per submission
constexpr size_t kMaxQueued = 2000000;                // waiting for a worker, over all runs

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    size_t slash = path.find('/');
    parts.push_back(path.substr(0, slash));
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
  }
  return parts;
}

std::optional<uint32_t> to_index(std::string_view s) {
  uint32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

http::Response Daemon::instances_response(const Run& run, const http::Request& req) const {
  auto parts = split_path(req.path);
  if (parts.size() == 4) {
    auto i = to_index(parts[3]);
    if (!i || *i >= run.size) {
      return Response::error(404, "run " + run.id + " has no instance " + std::string(parts[3]));
    }
    return Response::json(200, runs_.instance_json(run, *i, true));
  }
  std::optional<InstanceState> filter;
  if (auto s = req.query_param("state")) {
    filter = instance_state_from(*s);
    if (!filter) {
      return Response::error(400,
                             "state: expected one of queued, running, passed, failed, errored, "
                             "cancelled, got \"" +
                                 *s + "\"");
    }
  }
  uint32_t limit = to_index(req.query_param("limit").value_or("100")).value_or(100);
  bool with_steps = req.query_param("steps").value_or("") == "true";
  json list = json::array();
  for (uint32_t i = 0; i < run.size && list.size() < limit; ++i) {
    if (!filter || run.instances[i].state == *filter) {
      list.push_back(runs_.instance_json(run, i, with_steps));
    }
  }
  return Response::json(200, {{"run", run.id}, {"instances", list}});
}

bool Daemon::handle_runs_api(const http::Request& req, const http::Responder& respond) {
  auto parts = split_path(req.path);
  if (parts.empty() || parts[0] != "runs") return false;
  const std::string& m = req.method;

  if (parts.size() == 1 && m == "POST") {
    json body = json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
      respond.send(Response::error(400, "request body must be a JSON object"));
      return true;
    }
    if (supervisor_.shutting_down()) {
      respond.send(Response::error(503, "the daemon is stopping; runs are not accepted"));
      return true;
    }
    auto sc = body.find("scenario");
    if (sc == body.end() || !sc->is_object()) {
      respond.send(Response::error(400, "scenario: expected a scenario object"));
      return true;
    }
    json n = body.value("instances", json(1));
    if (!n.is_number_integer() || n.get<int64_t>() < 1 || n.get<int64_t>() > kMaxInstances) {
      respond.send(Response::error(400, "instances: expected an integer from 1 to " +
                                            std::to_string(kMaxInstances) + ", got " + n.dump()));
      return true;
    }
    json vars = body.value("vars", json::object());
    if (!vars.is_object()) {
      respond.send(Response::error(400, "vars: expected an object, got " + vars.dump()));
      return true;
    }
    scenario::ParseOptions options;
    for (const auto& [k, v] : vars.items()) options.extra_vars.insert(k);
    // Workers inherit the daemon's environment and get its secrets: check against those.
    options.has_env = [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; };
    options.has_secret = [this](const std::string& name) { return secrets_.find(name) != nullptr; };
    auto parsed = scenario::parse_scenario(*sc, options);
    if (!parsed) {
      respond.send(Response::error(400, "scenario." + parsed.status().message()));
      return true;
    }
    auto count = n.get<uint32_t>();
    if (runs_.pending() + count > kMaxQueued + dispatcher_.capacity()) {
      respond.send(Response::error(
          429, "queue full: " + std::to_string(runs_.pending()) +
                   " instances are waiting for a worker; try again when some have finished"));
      return true;
    }
    Run& run = runs_.create(*parsed, vars, count, unix_ms_now());
    spdlog::info("run {}: {} instances of \"{}\" submitted", run.id, count, run.scenario->name);
    schedule_pump();
    json created = {{"run", run.id}, {"instances", count}};
    if (!journal_) {
      respond.send(Response::json(201, created));
      return true;
    }
    // Answer once the run is in the journal: a run the caller was told about survives a
    // crash of the master from then on.
    journal_->read([](journal::Store&) {},
                   [this, created, respond]() mutable {
                     journal::Journal::Health h = journal_->health();
                     if (!h.ok) created["warning"] = "the journal cannot be written: " + h.error;
                     respond.send(Response::json(201, created));
                   });
    return true;
  }
  if (parts.size() == 1 && m == "GET") {
    uint32_t limit = to_index(req.query_param("limit").value_or("200")).value_or(200);
    json list = json::array();
    for (auto it = runs_.all().rbegin(); it != runs_.all().rend() && list.size() < limit; ++it) {
      list.push_back(runs_.summary_json(**it));
    }
    respond.send(Response::json(200, {{"runs", list}}));
    return true;
  }
  if (parts.size() == 1 && m == "DELETE") {
    size_t n = 0;
    if (auto older = req.query_param("older_than")) {
      auto ms = config::parse_duration_ms(*older);
      if (!ms) {
        respond.send(Response::error(400, "older_than: " + ms.status().message()));
        return true;
      }
      n = runs_.prune_finished_before(unix_ms_now() - static_cast<int64_t>(*ms));
    } else {
      n = runs_.prune(unix_ms_now());
    }
    spdlog::info("prune: {} finished runs forgotten", n);
    respond.send(Response::json(200, {{"pruned", n}}));
    return true;
  }
  Run* run = parts.size() >= 2 ? runs_.find(std::string(parts[1])) : nullptr;
  if (run == nullptr) {
    respond.send(
        Response::error(404, "no run \"" + std::string(parts.size() >= 2 ? parts[1] : "") + "\""));
    return true;
  }
  if (parts.size() == 2 && m == "GET") {
    respond.send(Response::json(200, runs_.detail_json(*run)));
  } else if (parts.size() == 2 && m == "DELETE") {
    for (const auto& in : run->instances) {  // empty when the run is held as a summary
      if (in.state == InstanceState::kRunning) dispatcher_.instance_done(in.worker);
    }
    size_t n = runs_.cancel(*run, unix_ms_now());
    for (const auto& [slot, w] : workers_) {
      (void)send_to(slot, ipc::MessageType::kCancel, {{"run", run->id}});
    }
    spdlog::info("run {}: cancelled ({} instances had not finished)", run->id, n);
    respond.send(Response::json(200, {{"run", run->id}, {"cancelled", n}}));
  } else if (parts.size() >= 3 && parts.size() <= 4 && parts[2] == "instances" && m == "GET") {
    // A finished run may be held as a summary only: its instances come from the journal.
    runs_.with_whole(run->id, [this, req, respond](Run* whole) {
      if (whole == nullptr) {
        respond.send(Response::error(503, "the run's instances cannot be read from the journal"));
        return;
      }
      respond.send(instances_response(*whole, req));
    });
  } else {
    respond.send(Response::error(404, "no route for " + m + " " + req.path));
  }
  return true;
}

}  // namespace corral::master
