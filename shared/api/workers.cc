#include "shared/api/workers.h"

#include <algorithm>

#include "shared/api/present.h"
#include "shared/ipc/fields.h"

namespace corral::api {

using detail::or_null;
using detail::present;
using ipc::detail::FieldReader;
using nlohmann::json;

namespace {

template <typename T>
Result<T> done(const FieldReader& r, T m) {
  if (!r.ok()) return r.status();
  return m;
}

LastExit read_last_exit(FieldReader& parent, const json& j) {
  FieldReader r(j, parent.path("last_exit"));
  LastExit e;
  r.text("reason", e.reason);
  r.i64("code", e.code);
  r.i32("signal", e.signal);
  r.text("signal_name", e.signal_name);
  r.text("at", e.at);
  r.text("detail", e.detail);
  parent.take(r);
  return e;
}

SuccessorEntry read_successor(FieldReader& parent, const json& j) {
  FieldReader r(j, parent.path("successor"));
  SuccessorEntry n;
  r.i64("pid", n.pid);
  r.text("state", n.state);
  r.number("ready_for_s", n.ready_for_s);
  parent.take(r);
  return n;
}

}  // namespace

json to_json(const LastExit& e) {
  json j = {{"reason", e.reason},
            {"code", e.code},
            {"signal", e.signal},
            {"signal_name", e.signal_name},
            {"at", e.at}};
  if (!e.detail.empty()) j["detail"] = e.detail;
  return j;
}

json to_json(const WorkerEntry& w) {
  json j = {{"slot", w.slot},
            {"pid", w.pid},
            {"state", w.state},
            {"restarts", w.restarts},
            {"starts", w.starts},
            {"uptime_s", w.uptime_s},
            {"rss_bytes", w.rss_bytes},
            {"cpu_percent", or_null(w.cpu_percent)},
            {"heartbeat_lag_ms", w.heartbeat_lag_ms},
            {"loop_lag_ms", w.loop_lag_ms},
            {"active", w.active},
            {"instances", w.instances},
            {"capacity", or_null(w.capacity)},
            {"reason", w.reason},
            {"last_exit", w.last_exit ? to_json(*w.last_exit) : json(nullptr)},
            {"next_start_in_ms", w.next_start_in_ms}};
  if (w.successor) {
    j["successor"] = {{"pid", w.successor->pid},
                      {"state", w.successor->state},
                      {"ready_for_s", w.successor->ready_for_s}};
  }
  return j;
}

json to_json(const WorkersAnswer& a) {
  return {{"workers", detail::array_of(a.workers)},
          {"memory",
           {{"budget_bytes", a.memory.budget_bytes},
            {"instance_bytes", a.memory.instance_bytes},
            {"measured", a.memory.measured}}}};
}

json to_json(const Health& h) {
  json j = {{"status", h.status},
            {"version", h.version},
            {"pid", h.pid},
            {"uptime_s", h.uptime_s},
            {"home", h.home},
            {"listen", h.listen},
            {"workers_wanted", h.workers_wanted},
            {"workers_ready", h.workers_ready},
            {"spare_pid", h.spare_pid},
            {"kernel_memory_backstop", h.kernel_memory_backstop},
            {"journal", h.journal}};
  if (!h.cluster.is_null()) j["cluster"] = h.cluster;
  return j;
}

Result<WorkerEntry> worker_from_json(const json& j, const std::string& path) {
  FieldReader r(j, path);
  WorkerEntry w;
  r.i32("slot", w.slot);
  r.i64("pid", w.pid);
  r.text("state", w.state);
  r.i64("restarts", w.restarts);
  r.i64("starts", w.starts);
  r.number("uptime_s", w.uptime_s);
  r.u64("rss_bytes", w.rss_bytes);
  if (present(j, "cpu_percent")) r.number("cpu_percent", w.cpu_percent.emplace());
  r.u64("heartbeat_lag_ms", w.heartbeat_lag_ms);
  r.number("loop_lag_ms", w.loop_lag_ms);
  r.u64("active", w.active);
  r.u64("instances", w.instances);
  if (present(j, "capacity")) r.u64("capacity", w.capacity.emplace());
  r.text("reason", w.reason);
  if (r.ok() && present(j, "last_exit")) w.last_exit = read_last_exit(r, j["last_exit"]);
  r.u64("next_start_in_ms", w.next_start_in_ms);
  if (r.ok() && present(j, "successor")) w.successor = read_successor(r, j["successor"]);
  return done(r, std::move(w));
}

Result<WorkersAnswer> workers_from_json(const json& answer) {
  if (!answer.is_object() || !answer.contains("workers") || !answer["workers"].is_array()) {
    return protocol_error("GET /workers: expected an object with a \"workers\" array");
  }
  WorkersAnswer out;
  const json& list = answer["workers"];
  for (size_t i = 0; i < list.size(); ++i) {
    auto w = worker_from_json(list[i], "workers[" + std::to_string(i) + "]");
    if (!w) return w.status();
    out.workers.push_back(std::move(*w));
  }
  std::stable_sort(out.workers.begin(), out.workers.end(),
                   [](const WorkerEntry& a, const WorkerEntry& b) { return a.slot < b.slot; });
  if (present(answer, "memory")) {
    FieldReader r(answer["memory"], "memory");
    r.u64("budget_bytes", out.memory.budget_bytes);
    r.u64("instance_bytes", out.memory.instance_bytes);
    r.boolean("measured", out.memory.measured);
    if (!r.ok()) return r.status();
  }
  return out;
}

Result<Health> health_from_json(const json& j) {
  FieldReader r(j, "health");
  Health h;
  r.text("status", h.status);
  r.text("version", h.version);
  r.i64("pid", h.pid);
  r.number("uptime_s", h.uptime_s);
  r.text("home", h.home);
  r.text("listen", h.listen);
  r.i64("workers_wanted", h.workers_wanted);
  r.i64("workers_ready", h.workers_ready);
  r.i64("spare_pid", h.spare_pid);
  r.text("kernel_memory_backstop", h.kernel_memory_backstop);
  r.any("journal", h.journal);
  r.object("cluster", h.cluster);
  return done(r, std::move(h));
}

}  // namespace corral::api
