// The runs API: submit a scenario with N instances, watch it, read each instance's history,
// cancel it.
//   POST   /runs                         {"scenario": {...}, "instances": N, "vars": {...}}
//   GET    /runs                         recent runs with counts
//   GET    /runs/<id>                    counts, durations, top failures
//   DELETE /runs/<id>                    cancels what has not finished
//   GET    /runs/<id>/instances?state=failed&limit=100[&steps=true]
//   GET    /runs/<id>/instances/<n>      one instance's step history
#include <charconv>
#include <set>

#include "config/scenario/parse.h"
#include "master/daemon_impl.h"
#include "shared/proc.h"

#include <spdlog/spdlog.h>

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

constexpr uint32_t kMaxInstances = 1000000;  // per submission
constexpr size_t kMaxQueued = 2000000;       // waiting for a worker, over all runs

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
    std::set<std::string> extra;
    for (const auto& [k, v] : vars.items()) extra.insert(k);
    auto parsed = scenario::parse_scenario(*sc, extra);
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
    respond.send(Response::json(201, {{"run", run.id}, {"instances", count}}));
    return true;
  }
  if (parts.size() == 1 && m == "GET") {
    json list = json::array();
    for (auto it = runs_.all().rbegin(); it != runs_.all().rend(); ++it) {
      list.push_back(runs_.summary_json(**it));
    }
    respond.send(Response::json(200, {{"runs", list}}));
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
    for (const auto& in : run->instances) {
      if (in.state == InstanceState::kRunning) dispatcher_.instance_done(in.worker);
    }
    size_t n = runs_.cancel(*run, unix_ms_now());
    for (const auto& [slot, w] : workers_) {
      (void)send_to(slot, ipc::MessageType::kCancel, {{"run", run->id}});
    }
    spdlog::info("run {}: cancelled ({} instances had not finished)", run->id, n);
    respond.send(Response::json(200, {{"run", run->id}, {"cancelled", n}}));
  } else if (parts.size() == 3 && parts[2] == "instances" && m == "GET") {
    std::optional<InstanceState> filter;
    if (auto s = req.query_param("state")) {
      filter = instance_state_from(*s);
      if (!filter) {
        respond.send(Response::error(400,
                                     "state: expected one of queued, running, passed, "
                                     "failed, errored, cancelled, got \"" +
                                         *s + "\""));
        return true;
      }
    }
    uint32_t limit = to_index(req.query_param("limit").value_or("100")).value_or(100);
    bool with_steps = req.query_param("steps").value_or("") == "true";
    json list = json::array();
    for (uint32_t i = 0; i < run->instances.size() && list.size() < limit; ++i) {
      if (!filter || run->instances[i].state == *filter) {
        list.push_back(runs_.instance_json(*run, i, with_steps));
      }
    }
    respond.send(Response::json(200, {{"run", run->id}, {"instances", list}}));
  } else if (parts.size() == 4 && parts[2] == "instances" && m == "GET") {
    auto i = to_index(parts[3]);
    if (!i || *i >= run->instances.size()) {
      respond.send(
          Response::error(404, "run " + run->id + " has no instance " + std::string(parts[3])));
      return true;
    }
    respond.send(Response::json(200, runs_.instance_json(*run, *i, true)));
  } else {
    respond.send(Response::error(404, "no route for " + m + " " + req.path));
  }
  return true;
}

}  // namespace corral::master
