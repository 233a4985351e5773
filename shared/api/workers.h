// The answers of GET /workers and GET /health: written by the master (master/api.cc) and read
// by the CLI (`corral status`, `describe`, `monit`, the waits of `scale`, `restart` and
// `reload`), from these structs on both sides. A field renamed on one side is a compile error
// on the other.
//
// Reading is strict about types and lenient about presence: a field of the wrong type is an
// error that names it ("workers[1].pid: expected a signed 64-bit integer, got \"x\""); a field
// that is absent keeps its default and one this build does not know is ignored, so that a CLI
// can still read a daemon one version older or newer. Pure, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::api {

// How a worker process last ended (master/exit_reason.h decides the reason).
struct LastExit {
  std::string reason;  // "crash", "signal", "hung", …
  int64_t code = 0;    // exit status, when it exited
  int signal = 0;      // terminating signal, when killed
  std::string signal_name;
  std::string at;      // ISO 8601, UTC
  std::string detail;  // "" when none
  bool operator==(const LastExit&) const = default;
};

// A reload's new worker beside a slot's current one.
struct SuccessorEntry {
  int64_t pid = 0;
  std::string state;  // "starting", "probation", "promoted", "failed"
  double ready_for_s = 0;
  bool operator==(const SuccessorEntry&) const = default;
};

// One slot of GET /workers.
struct WorkerEntry {
  int slot = -1;
  int64_t pid = 0;    // 0 when the slot has no process
  std::string state;  // master/slot.h's states: "starting", "ready", "backoff", …
  int64_t restarts = 0;
  int64_t starts = 0;
  double uptime_s = 0;
  uint64_t rss_bytes = 0;
  std::optional<double> cpu_percent;  // none until measured
  uint64_t heartbeat_lag_ms = 0;      // since the master last heard from it
  double loop_lag_ms = 0;
  uint64_t active = 0;     // instances on its loop, as it last said
  uint64_t instances = 0;  // instances the master placed there
  std::optional<uint64_t> capacity;
  std::string reason;  // why it is errored
  std::optional<LastExit> last_exit;
  uint64_t next_start_in_ms = 0;
  std::optional<SuccessorEntry> successor;

  bool alive() const { return pid > 0; }
  bool operator==(const WorkerEntry&) const = default;
};

// What the master's placement assumes of the workers' memory (master/memory_model.h).
struct WorkerMemory {
  uint64_t budget_bytes = 0;    // per worker; 0: no limit
  uint64_t instance_bytes = 0;  // one instance, as measured or assumed
  bool measured = false;
  bool operator==(const WorkerMemory&) const = default;
};

// GET /workers.
struct WorkersAnswer {
  std::vector<WorkerEntry> workers;  // in slot order
  WorkerMemory memory;
  bool operator==(const WorkersAnswer&) const = default;
};

// GET /health.
struct Health {
  std::string status;  // "ok", "degraded", "stopping"
  std::string version;
  int64_t pid = 0;
  double uptime_s = 0;
  std::string home;
  std::string listen;  // "" when the TCP API is off
  int64_t workers_wanted = 0;
  int64_t workers_ready = 0;
  int64_t spare_pid = 0;
  std::string kernel_memory_backstop;
  nlohmann::json journal;  // the journal's own state (master/daemon_impl.h's journal_json)
  // With a PostgreSQL journal, this host's place in the cluster: {"ok", "epoch", and "error"
  // while its heartbeat fails, "fenced" while it is fenced off}; null otherwise.
  nlohmann::json cluster;
  bool operator==(const Health&) const = default;
};

nlohmann::json to_json(const LastExit& e);
nlohmann::json to_json(const WorkerEntry& w);
nlohmann::json to_json(const Health& h);
nlohmann::json to_json(const WorkersAnswer& a);

Result<WorkerEntry> worker_from_json(const nlohmann::json& j, const std::string& path = "worker");
// A GET /workers body; its workers in slot order.
Result<WorkersAnswer> workers_from_json(const nlohmann::json& answer);
Result<Health> health_from_json(const nlohmann::json& j);

}  // namespace corral::api
