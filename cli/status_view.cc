#include "cli/status_view.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace corral::cli {
namespace {

std::string percent_cell(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", v);
  return buf;
}

std::string memory_cell(const api::WorkerEntry& w) {
  return w.alive() && w.rss_bytes > 0 ? human_bytes(w.rss_bytes) : "-";
}

std::vector<std::string> status_row(const api::WorkerEntry& w, WallClock::time_point now) {
  return {
      std::to_string(w.slot),
      w.alive() ? std::to_string(w.pid) : "-",
      w.state.empty() ? "?" : w.state,
      std::to_string(w.restarts),
      w.alive() ? human_duration(w.uptime_s) : "-",
      memory_cell(w),
      w.alive() ? human_ms(w.loop_lag_ms) : "-",
      std::to_string(w.active),
      describe_last_exit(w.last_exit, now),
  };
}

}  // namespace

std::string describe_last_exit(const std::optional<api::LastExit>& last_exit,
                               WallClock::time_point now) {
  if (!last_exit) return "-";
  const api::LastExit& e = *last_exit;
  std::string out = e.reason.empty() ? "exit" : e.reason;
  if (e.signal != 0) {
    out += " " + (e.signal_name.empty() ? "signal " + std::to_string(e.signal) : e.signal_name);
  } else if (e.code != 0) {
    out += " (exit " + std::to_string(e.code) + ")";
  }
  if (auto at = parse_utc_timestamp(e.at)) {
    out += " " + human_duration(std::chrono::duration<double>(now - *at).count()) + " ago";
  }
  return out;
}

std::string worker_note(const api::WorkerEntry& w) {
  const std::string slot = "slot " + std::to_string(w.slot);
  const auto next_ms = static_cast<double>(w.next_start_in_ms);
  std::string note;
  if (w.state == "errored") {
    note = slot + " errored: " + (w.reason.empty() ? "?" : w.reason);
    if (next_ms > 0) note += "; next try in " + human_duration(next_ms / 1000);
  } else if (w.state == "backoff" && next_ms > 0) {
    note = slot + " restarts in " + human_ms(next_ms);
  }
  if (w.successor) {
    // A reload's new worker beside the slot's current one.
    const api::SuccessorEntry& n = *w.successor;
    std::string what = n.state == "probation"
                           ? "on probation, ready for " + human_duration(n.ready_for_s)
                       : n.state == "promoted" ? "taking over"
                                               : n.state;
    if (!note.empty()) note += "\n";
    note += slot + " reloading: new worker pid " + std::to_string(n.pid) + " " + what;
  }
  return note;
}

std::string render_status_table(const Workers& workers, WallClock::time_point now,
                                TableStyle style) {
  static const std::vector<std::string> kHeader = {"slot",   "pid", "state",  "restarts", "uptime",
                                                   "memory", "lag", "active", "last exit"};
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  for (const api::WorkerEntry& w : workers) {
    rows.push_back(status_row(w, now));
    if (std::string note = worker_note(w); !note.empty()) notes += note + "\n";
  }
  return render_table(kHeader, rows, style) + notes;
}

std::string render_summary_line(const api::Health& health, const Workers& workers) {
  const auto ready = std::count_if(workers.begin(), workers.end(),
                                   [](const api::WorkerEntry& w) { return w.state == "ready"; });
  const int64_t wanted =
      health.workers_wanted > 0 ? health.workers_wanted : static_cast<int64_t>(workers.size());
  return std::to_string(ready) + "/" + std::to_string(wanted) + " workers ready · daemon pid " +
         std::to_string(health.pid) + " · api " + (health.listen.empty() ? "off" : health.listen) +
         " · home " + (health.home.empty() ? "?" : health.home);
}

std::string render_worker_description(const api::WorkerEntry& w, WallClock::time_point now) {
  const bool alive = w.alive();
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::vector<std::pair<std::string, std::string>> lines = {
      {"slot", std::to_string(w.slot)},
      {"state", w.state.empty() ? "?" : w.state},
      {"reason", or_dash(w.reason)},
      {"pid", alive ? std::to_string(w.pid) : "-"},
      {"uptime", alive ? human_duration(w.uptime_s) : "-"},
      {"restarts", std::to_string(w.restarts)},
      {"starts", std::to_string(w.starts)},
      {"memory", memory_cell(w)},
      {"cpu", alive && w.cpu_percent ? percent_cell(*w.cpu_percent) : "-"},
      {"heartbeat lag", alive ? human_ms(static_cast<double>(w.heartbeat_lag_ms)) : "-"},
      {"loop lag", alive ? human_ms(w.loop_lag_ms) : "-"},
      {"active scenarios", std::to_string(w.active)},
      {"instances", std::to_string(w.instances)},
      {"capacity", w.capacity ? std::to_string(*w.capacity) : "-"},
      {"last exit", describe_last_exit(w.last_exit, now)},
      {"last exit at", w.last_exit ? or_dash(w.last_exit->at) : "-"},
      {"last exit detail", w.last_exit ? or_dash(w.last_exit->detail) : "-"},
      {"next start in",
       w.next_start_in_ms > 0 ? human_ms(static_cast<double>(w.next_start_in_ms)) : "-"},
      {"reloading",
       w.successor ? "new worker pid " + std::to_string(w.successor->pid) + " " + w.successor->state
                   : "-"},
  };
  size_t width = 0;
  for (const auto& [key, value] : lines) width = std::max(width, key.size());
  std::string out;
  for (const auto& [key, value] : lines) {
    out += key + std::string(width - key.size(), ' ') + " : " + value + "\n";
  }
  return out;
}

std::string render_cluster_table(const nlohmann::json& cluster, TableStyle style) {
  const std::string self = json_string(json_field(cluster, "self"), "id");
  nlohmann::json hosts = json_field(cluster, "hosts");
  std::vector<std::vector<std::string>> rows;
  size_t alive = 0;
  if (hosts.is_array()) {
    for (const nlohmann::json& h : hosts) {
      const std::string id = json_string(h, "id");
      const std::string state = json_string(h, "state", "?");
      alive += state == "alive" ? 1 : 0;
      rows.push_back({(id == self ? "* " : "  ") + id, json_string(h, "address", "-"), state,
                      std::to_string(static_cast<int64_t>(json_number(h, "epoch"))),
                      human_ms(json_number(h, "heartbeat_age_ms")),
                      std::to_string(static_cast<uint64_t>(json_number(h, "held"))),
                      std::to_string(static_cast<uint64_t>(json_number(h, "capacity")))});
    }
  }
  return render_table({"host", "address", "state", "epoch", "heartbeat", "instances", "room"},
                      rows, style) +
         std::to_string(alive) + "/" + std::to_string(rows.size()) + " hosts alive\n";
}

}  // namespace corral::cli
