// The control API: HTTP/1.1 + JSON on the unix socket and the TCP listener. The CLI is a
// client of exactly these routes, so anything the CLI does, curl can do. This file finds a
// request's route (the table is api_routes.cc) and answers the probes, /workers and /config.
#include <unistd.h>

#include <functional>
#include <string_view>

#include "master/api_body.h"
#include "master/daemon_impl.h"
#include "shared/api/workers.h"
#include "shared/http/router.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Request;
using http::Responder;
using http::Response;
using nlohmann::json;


// Whether `given` equals `want`, taking the same time wherever they differ: a client cannot
// find the token a byte at a time by timing the answers.
bool same_token(std::string_view given, std::string_view want) {
  unsigned char diff = given.size() == want.size() ? 0 : 1;
  for (size_t i = 0; i < want.size(); ++i) {
    unsigned char g = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned char>(g ^ static_cast<unsigned char>(want[i]));
  }
  return diff == 0;
}

}  // namespace

// TCP requests need the token when one is set; the unix socket (mode 0600) does not. (Nor do
// the open routes, the probes: see api_routes.cc.)
bool Daemon::authorized(const Request& req) const {
  if (cfg_.api_token.empty() || req.transport == http::Transport::kUnix) return true;
  const std::string given = req.header("authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (given.size() < kBearer.size() ||
      !http::iequals(std::string_view(given).substr(0, kBearer.size()), kBearer)) {
    return false;
  }
  return same_token(std::string_view(given).substr(kBearer.size()), cfg_.api_token);
}

api::WorkerEntry Daemon::worker_entry(const Slot& s) const {
  uint64_t now = monotonic_ms();
  bool running = has_process(s.state);
  auto cpu = cpu_use_.find(s.index);
  api::WorkerEntry w;
  w.slot = s.index;
  w.pid = running ? s.pid : 0;
  w.state = std::string(to_string(s.state));
  w.restarts = s.restarts;
  w.starts = s.starts;
  if (s.ready_at_ms != 0 && running) w.uptime_s = static_cast<double>(now - s.ready_at_ms) / 1000;
  w.rss_bytes = s.rss_bytes;
  if (cpu != cpu_use_.end() && running && cpu->second.pid == s.pid) {
    w.cpu_percent = cpu->second.percent;
  }
  w.heartbeat_lag_ms = running ? now - s.last_heard_ms : 0;
  w.loop_lag_ms = s.loop_lag_ms;
  w.active = s.active;
  w.instances = dispatcher_.load(s.index);
  if (running) w.capacity = dispatcher_.cap(s.index);
  w.reason = s.error;
  if (s.last_exit) w.last_exit = last_exit_entry(*s.last_exit);
  w.next_start_in_ms = !running && s.next_start_at_ms > now ? s.next_start_at_ms - now : 0;
  if (s.successor) {
    const Successor& n = *s.successor;
    w.successor = api::SuccessorEntry{
        n.pid, std::string(to_string(n.state)),
        n.ready_at_ms != 0 ? static_cast<double>(now - n.ready_at_ms) / 1000 : 0.0};
  }
  return w;
}

void Daemon::handle_api(Request&& req, Responder respond) {
  auto found = http::find_route(api_routes(), req.method, req.path);
  bool open = found.route != nullptr && found.route->open;
  if (!open && !authorized(req)) {
    // The same answer for every route: it does not tell which routes exist.
    Response r = Response::error(401, "missing or wrong API token");
    r.headers.emplace_back("WWW-Authenticate", "Bearer");
    respond.send(std::move(r));
    return;
  }
  if (found.route != nullptr) {
    found.route->handle(api_parts_, ApiCall{req, respond, std::move(found.args)});
  } else if (!found.allow.empty()) {
    Response r = Response::error(405, "method " + req.method + " not allowed on " + req.path +
                                          " (it takes " + found.allow + ")");
    r.headers.emplace_back("Allow", found.allow);
    respond.send(std::move(r));
  } else {
    respond.send(Response::error(404, "no route for " + req.method + " " + req.path));
  }
}

void Daemon::api_latency(const ApiCall& c) {
  c.respond.send(Response::json(200, json{{"ok", true}}));
}

void Daemon::api_health(const ApiCall& c) {
  api::Health h;
  h.journal = journal_json();
  if (const cluster::Hosts* hosts = cluster_.hosts()) h.cluster = hosts->health();
  const bool cluster_ok = h.cluster.is_null() || h.cluster["ok"].get<bool>();
  h.status = supervisor_.shutting_down()                 ? "stopping"
             : h.journal["ok"].get<bool>() && cluster_ok ? "ok"
                                                         : "degraded";
  h.version = CORRAL_VERSION;
  h.pid = getpid();
  h.uptime_s = uptime_s();
  h.home = cfg_.home;
  h.listen = listen_address();
  h.workers_wanted = supervisor_.wanted();
  h.workers_ready = supervisor_.ready_count();
  h.spare_pid = spare_ != 0 ? spares_.at(spare_)->pid() : 0;
  h.kernel_memory_backstop = cfg_.max_memory_bytes ? "rlimit_data" : "none";
  c.respond.send(Response::json(200, api::to_json(h)));
}

void Daemon::api_metrics(const ApiCall& c) {
  Response r;
  r.content_type = "text/plain; version=0.0.4";
  r.body = metrics_text();
  c.respond.send(std::move(r));
}

void Daemon::api_config(const ApiCall& c) {
  json settings = config::to_json(cfg_);
  if (!cfg_.api_token.empty()) settings["api_token"] = "(set)";
  settings["hooks"] = config::hooks_for_display(cfg_.hooks);
  c.respond.send(Response::json(200, {{"config", settings},
                                      {"home", cfg_.home},
                                      {"file", config_file_},
                                      {"workers",
                                       {{"wanted", supervisor_.wanted()},
                                        {"from", supervisor_.scaled() ? "corral scale"
                                                 : cfg_.workers > 0 ? "config"
                                                                    : "one per usable CPU"}}},
                                      {"needs_master_restart", reload_notes_}}));
}

void Daemon::api_workers(const ApiCall& c) {
  api::WorkersAnswer a;
  for (const Slot& s : supervisor_.slots()) a.workers.push_back(worker_entry(s));
  const MemoryModel& m = dispatcher_.memory();
  a.memory = {m.budget(), m.bytes_per_instance(), m.measured()};
  c.respond.send(Response::json(200, api::to_json(a)));
}

void Daemon::api_scale(const ApiCall& c) {
  auto body = json_body(c.req, c.respond, {"workers"});
  if (!body) return;
  auto it = body->find("workers");
  if (it == body->end() || !it->is_number_integer() || *it < 0 || *it > 1024) {
    c.respond.send(Response::error(400, "workers: expected an integer from 0 to 1024"));
    return;
  }
  if (supervisor_.shutting_down()) {
    c.respond.send(Response::error(409, "the daemon is stopping"));
    return;
  }
  supervisor_.scale(it->get<int>());
  kick();
  c.respond.send(Response::json(200, {{"workers", supervisor_.wanted()}}));
}

void Daemon::api_restart(const ApiCall& c) {
  auto body = json_body(c.req, c.respond, {"slot"});
  if (!body) return;
  std::optional<int> slot;
  if (auto it = body->find("slot"); it != body->end()) {
    if (!it->is_number_integer()) {
      c.respond.send(Response::error(400, "slot: expected an integer"));
      return;
    }
    slot = it->get<int>();
  }
  if (!supervisor_.request_restart(slot)) {
    c.respond.send(Response::error(404, "no worker slot " + std::to_string(*slot)));
    return;
  }
  json slots = json::array();
  for (const Slot& s : supervisor_.slots()) {
    if (!slot || s.index == *slot) slots.push_back(s.index);
  }
  kick();
  c.respond.send(Response::json(200, {{"restarting", slots}}));
}

void Daemon::api_reload_start(const ApiCall& c) {
  Status s = begin_reload("API request");
  if (!s) {
    c.respond.send(Response::error(s.code() == Code::kAlreadyExists ? 409 : 400, s.message()));
    return;
  }
  c.respond.send(Response::json(202, {{"reload", reload_json()}}));
}

void Daemon::api_reload_get(const ApiCall& c) {
  c.respond.send(Response::json(200, {{"reload", reload_json()}}));
}

void Daemon::api_shutdown(const ApiCall& c) {
  c.respond.send(Response::json(200, {{"stopping", true}}));
  shutdown("API request");
}

}  // namespace corral::master
