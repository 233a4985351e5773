// The load tests API: start a load test on the ready workers, watch it, stop it.
//   POST   /loads        {"scenario": {...}, "load": {...}, "vars": {...}}  -> 201 {"load": id}
//   GET    /loads        recent tests, newest first, without their time series
//   GET    /loads/<id>   totals, latency, thresholds and the per-second series
//   DELETE /loads/<id>   ends the test now: running iterations get the grace period
#include <spdlog/spdlog.h>

#include "config/load/parse.h"
#include "config/scenario/parse.h"
#include "master/daemon_impl.h"
#include "master/ids.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

// Workers start a test this long after it is accepted, so that they start together.
constexpr uint64_t kStartDelayMs = 200;

// The scenario, load section and vars of a submission, checked; or the answer that refuses it.
struct Submission {
  json scenario, load, vars;
  load::LoadSpec spec;
};

std::optional<Response> check(const json& body, const scenario::ParseOptions& base,
                              Submission& out) {
  auto sc = body.find("scenario");
  if (sc == body.end() || !sc->is_object()) {
    return Response::error(400, "scenario: expected a scenario object");
  }
  out.vars = body.value("vars", json::object());
  if (!out.vars.is_object()) return Response::error(400, "vars: expected an object");
  // The load section comes from the body, else from the scenario document itself.
  out.load = body.contains("load") ? body["load"] : sc->value("load", json());
  if (out.load.is_null()) return Response::error(400, "load: missing: say how to load the target");
  scenario::ParseOptions options = base;
  for (const auto& [k, v] : out.vars.items()) options.extra_vars.insert(k);
  auto parsed = scenario::parse_scenario(*sc, options);
  if (!parsed) return Response::error(400, "scenario." + parsed.status().message());
  auto spec = load::parse_load(out.load);
  if (!spec) return Response::error(400, spec.status().message());
  if (spec->model == load::Model::kHeld) {
    return Response::error(400, "load.connections: the held-connection model is not available yet");
  }
  for (const load::Threshold& th : spec->thresholds) {
    if (th.step.empty()) continue;
    const auto& steps = (*parsed)->steps;
    bool known = std::any_of(steps.begin(), steps.end(),
                             [&](const scenario::Step& s) { return s.name == th.step; });
    if (!known) {
      return Response::error(400, "load.thresholds: " + th.name + ": no step is named \"" +
                                      th.step + "\"");
    }
  }
  out.scenario = *sc;
  out.scenario.erase("load");
  out.spec = std::move(*spec);
  return std::nullopt;
}

}  // namespace

void Daemon::start_load(const http::Request& req, const http::Responder& respond) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    respond.send(Response::error(400, "request body must be a JSON object"));
    return;
  }
  if (supervisor_.shutting_down()) {
    respond.send(Response::error(503, "the daemon is stopping; load tests are not accepted"));
    return;
  }
  scenario::ParseOptions options;
  options.has_env = [](const std::string& name) { return std::getenv(name.c_str()) != nullptr; };
  options.has_secret = [this](const std::string& name) { return secrets_.find(name) != nullptr; };
  Submission sub;
  if (auto refused = check(body, options, sub)) {
    respond.send(std::move(*refused));
    return;
  }
  std::vector<int> ready;
  for (const Slot& s : supervisor_.slots()) {
    if (s.state == SlotState::kReady && workers_.count(s.index) != 0) ready.push_back(s.index);
  }
  if (ready.empty()) {
    respond.send(Response::error(503, "no worker is ready to run a load test"));
    return;
  }
  std::string id = numbered_id('l', ++load_seq_);
  const int64_t now = unix_ms_now();
  LoadTest& t = loads_.add(id, sub.scenario, sub.vars, sub.load, std::move(sub.spec),
                           {ready.begin(), ready.end()}, now, now + kStartDelayMs);
  for (size_t i = 0; i < ready.size(); ++i) {
    json start = {{"load", id},        {"scenario", t.scenario},  {"vars", t.vars},
                  {"spec", t.load},    {"index", i},              {"of", ready.size()},
                  {"delay_ms", kStartDelayMs}};
    if (!send_to(ready[i], ipc::MessageType::kLoadStart, start)) {
      loads_.worker_gone(ready[i], unix_ms_now());
    }
  }
  spdlog::info("load {}: \"{}\" ({} model, {}) on {} workers", id, t.name,
               load::to_string(t.spec.model), config::format_duration_ms(t.spec.duration_ms()),
               ready.size());
  respond.send(Response::json(201, {{"load", id}, {"workers", ready.size()}}));
}

// Ends `t` early as `state`, asking its workers to stop.
void Daemon::end_load(LoadTest& t, LoadState state, const std::string& reason) {
  std::set<int> slots = t.slots;
  if (!loads_.end(t, state, reason, unix_ms_now())) return;
  spdlog::info("load {}: {}", t.id, reason);
  for (int slot : slots) (void)send_to(slot, ipc::MessageType::kLoadStop, {{"load", t.id}});
}

Status Daemon::on_load_stats(int slot, const nlohmann::json& payload) {
  auto second = ipc::load_second_from_json(payload);
  if (!second) return Status(Code::kProtocol, "load_stats: " + second.status().message());
  std::string id = second->load;
  if (Status s = loads_.on_second(slot, std::move(*second), unix_ms_now()); !s) return s;
  LoadTest* t = loads_.find(id);
  if (t == nullptr || t->ended() || t->ending) return Status::ok();
  auto crossed = loads_.crossed_aborting(*t, unix_ms_now());
  if (!crossed.empty()) end_load(*t, LoadState::kAborted, "aborted: " + crossed[0].threshold->name + " crossed");
  return Status::ok();
}

bool Daemon::handle_loads_api(const http::Request& req, const http::Responder& respond) {
  const std::string& m = req.method;
  const std::string& path = req.path;
  if (path == "/loads") {
    if (m == "POST") {
      start_load(req, respond);
    } else if (m == "GET") {
      json list = json::array();
      for (const LoadTest* t : loads_.list()) {
        list.push_back(loads_.to_json(*t, false, unix_ms_now()));
      }
      respond.send(Response::json(200, {{"loads", list}}));
    } else {
      respond.send(Response::error(405, "method " + m + " not allowed on /loads"));
    }
    return true;
  }
  if (path.rfind("/loads/", 0) != 0) return false;
  const std::string id = path.substr(std::string_view("/loads/").size());
  LoadTest* t = loads_.find(id);
  if (t == nullptr) {
    respond.send(Response::error(404, "no load test \"" + id + "\""));
  } else if (m == "GET") {
    respond.send(Response::json(200, loads_.to_json(*t, true, unix_ms_now())));
  } else if (m == "DELETE") {
    end_load(*t, LoadState::kStopped, "stopped by request");
    respond.send(Response::json(200, loads_.to_json(*t, false, unix_ms_now())));
  } else {
    respond.send(Response::error(405, "method " + m + " not allowed on " + path));
  }
  return true;
}

}  // namespace corral::master
