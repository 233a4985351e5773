#include "master/hooks/payloads.h"

#include "shared/proc.h"

namespace corral::master {

using nlohmann::json;

json hook_envelope(config::HookEvent event, int64_t at_ms, const HookSource& source) {
  return {{"event", config::to_string(event)},
          {"at", iso8601_utc(at_ms)},
          {"host", source.host},
          {"daemon_pid", source.daemon_pid}};
}

json worker_exit_payload(const HookSource& source, const WorkerExit& w) {
  json j = hook_envelope(config::HookEvent::kWorkerExit, w.exit.at_unix_ms, source);
  j["slot"] = w.slot;
  j["pid"] = w.pid;
  j["reason"] = to_string(w.exit.reason);
  j["code"] = w.exit.code;
  j["signal"] = w.exit.signal;
  j["signal_name"] = w.exit.signal != 0 ? signal_name(w.exit.signal) : "";
  j["detail"] = w.exit.detail;
  j["restarts"] = w.restarts;
  j["next_state"] = w.next_state;
  if (w.restart_in_ms >= 0) j["restart_in_ms"] = w.restart_in_ms;
  return j;
}

json run_finished_payload(const HookSource& source, const json& detail, int64_t created_ms,
                          int64_t finished_ms) {
  json j = hook_envelope(config::HookEvent::kRunFinished, finished_ms, source);
  const json& counts = detail.at("counts");
  j["run"] = detail.at("id");
  j["scenario"] = detail.at("scenario");
  j["state"] = detail.at("state");
  j["instances"] = detail.at("instances");
  j["counts"] = counts;
  // What an alert most often asks: did every instance pass?
  j["all_passed"] = counts.value("passed", json(0)) == detail.at("instances");
  j["duration_ms"] = finished_ms >= created_ms ? finished_ms - created_ms : 0;
  j["created_at"] = detail.at("created_at");
  j["finished_at"] = detail.at("finished_at");
  j["instance_duration_ms"] = detail.value("duration_ms", json::object());
  j["failures"] = detail.value("failures", json::array());
  return j;
}

json run_quarantined_payload(const HookSource& source, const json& detail, int64_t at_ms) {
  json j = hook_envelope(config::HookEvent::kRunQuarantined, at_ms, source);
  j["run"] = detail.at("id");
  j["scenario"] = detail.at("scenario");
  j["instances"] = detail.at("instances");
  j["counts"] = detail.at("counts");
  j["reason"] = detail.at("quarantine").at("reason");
  j["deaths"] = detail.at("quarantine").at("deaths");
  return j;
}

json journal_failed_payload(const HookSource& source, const std::string& path,
                            const journal::Journal::Health& health, int64_t now_ms) {
  json j = hook_envelope(config::HookEvent::kJournalFailed, now_ms, source);
  j["path"] = path;
  j["error"] = health.error;
  j["failing_since"] = iso8601_utc(health.failing_since_ms != 0 ? health.failing_since_ms : now_ms);
  j["queued_writes"] = health.queued;
  return j;
}

json journal_recovered_payload(const HookSource& source, const std::string& path,
                               const journal::Journal::Health& health, int64_t failing_since_ms,
                               int64_t now_ms) {
  json j = hook_envelope(config::HookEvent::kJournalRecovered, now_ms, source);
  j["path"] = path;
  j["failing_since"] = iso8601_utc(failing_since_ms);
  j["failed_for_ms"] = now_ms >= failing_since_ms ? now_ms - failing_since_ms : 0;
  j["failed_batches"] = health.failed_batches;
  j["queued_writes"] = health.queued;
  return j;
}

std::optional<config::HookEvent> JournalWatch::observe(const journal::Journal::Health& health) {
  if (health.ok == !failing_) return std::nullopt;
  failing_ = !health.ok;
  if (failing_) {
    failing_since_ms_ = health.failing_since_ms;
    return config::HookEvent::kJournalFailed;
  }
  return config::HookEvent::kJournalRecovered;
}

}  // namespace corral::master
