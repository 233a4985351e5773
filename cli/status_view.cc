#include "cli/status_view.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace corral::cli {
namespace {

bool has_process(const nlohmann::json& w) { return json_number(w, "pid") > 0; }

std::string int_cell(const nlohmann::json& w, const char* key) {
  return std::to_string(static_cast<long long>(json_number(w, key)));
}

std::vector<std::string> status_row(const nlohmann::json& w, WallClock::time_point now) {
  const bool alive = has_process(w);
  return {
      int_cell(w, "slot"),
      alive ? int_cell(w, "pid") : "-",
      json_string(w, "state", "?"),
      int_cell(w, "restarts"),
      alive ? human_duration(json_number(w, "uptime_s")) : "-",
      alive && json_number(w, "rss_bytes") > 0
          ? human_bytes(static_cast<uint64_t>(json_number(w, "rss_bytes")))
          : "-",
      alive ? human_ms(json_number(w, "loop_lag_ms")) : "-",
      int_cell(w, "active"),
      describe_last_exit(json_field(w, "last_exit"), now),
  };
}

}  // namespace

std::string worker_note(const nlohmann::json& w) {
  const std::string state = json_string(w, "state");
  const double next_ms = json_number(w, "next_start_in_ms");
  std::string note;
  if (state == "errored") {
    const std::string reason = json_string(w, "reason");
    note = "slot " + int_cell(w, "slot") + " errored: " + (reason.empty() ? "?" : reason);
    if (next_ms > 0) note += "; next try in " + human_duration(next_ms / 1000);
  } else if (state == "backoff" && next_ms > 0) {
    note = "slot " + int_cell(w, "slot") + " restarts in " + human_ms(next_ms);
  }
  const nlohmann::json next = json_field(w, "successor");
  if (next.is_object()) {
    // A reload's new worker beside the slot's current one.
    const std::string phase = json_string(next, "state");
    std::string what = phase == "probation" ? "on probation, ready for " +
                                                  human_duration(json_number(next, "ready_for_s"))
                       : phase == "promoted" ? "taking over"
                                             : phase;
    if (!note.empty()) note += "\n";
    note += "slot " + int_cell(w, "slot") + " reloading: new worker pid " + int_cell(next, "pid") +
            " " + what;
  }
  return note;
}

std::vector<nlohmann::json> sorted_by_slot(const nlohmann::json& workers) {
  std::vector<nlohmann::json> list;
  for (const auto& w : worker_list(workers)) list.push_back(w);
  std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) {
    return json_number(a, "slot") < json_number(b, "slot");
  });
  return list;
}

nlohmann::json worker_list(const nlohmann::json& workers) {
  if (workers.is_array()) return workers;
  if (workers.is_object() && workers.contains("workers") && workers["workers"].is_array()) {
    return workers["workers"];
  }
  return nlohmann::json::array();
}

std::string render_status_table(const nlohmann::json& workers, WallClock::time_point now,
                                TableStyle style) {
  static const std::vector<std::string> kHeader = {"slot",   "pid", "state",  "restarts", "uptime",
                                                   "memory", "lag", "active", "last exit"};
  std::vector<std::vector<std::string>> rows;
  std::string notes;
  for (const auto& w : sorted_by_slot(workers)) {
    rows.push_back(status_row(w, now));
    if (std::string note = worker_note(w); !note.empty()) notes += note + "\n";
  }
  return render_table(kHeader, rows, style) + notes;
}

std::string render_summary_line(const nlohmann::json& health, const nlohmann::json& workers) {
  const nlohmann::json list = worker_list(workers);
  const auto ready = std::count_if(list.begin(), list.end(), [](const nlohmann::json& w) {
    return json_string(w, "state") == "ready";
  });
  const auto wanted = static_cast<long long>(
      json_number(health, "workers_wanted", static_cast<double>(list.size())));
  std::string listen = json_string(health, "listen");
  if (listen.empty()) listen = "off";
  return std::to_string(ready) + "/" + std::to_string(wanted) + " workers ready · daemon pid " +
         std::to_string(static_cast<long long>(json_number(health, "pid"))) + " · api " + listen +
         " · home " + json_string(health, "home", "?");
}

std::string render_worker_description(const nlohmann::json& w, WallClock::time_point now) {
  const bool alive = has_process(w);
  const nlohmann::json last_exit = json_field(w, "last_exit");
  const std::string reason = json_string(w, "reason");
  std::vector<std::pair<std::string, std::string>> lines = {
      {"slot", int_cell(w, "slot")},
      {"state", json_string(w, "state", "?")},
      {"reason", reason.empty() ? "-" : reason},
      {"pid", alive ? int_cell(w, "pid") : "-"},
      {"uptime", alive ? human_duration(json_number(w, "uptime_s")) : "-"},
      {"restarts", int_cell(w, "restarts")},
      {"starts", int_cell(w, "starts")},
      {"memory", alive && json_number(w, "rss_bytes") > 0
                     ? human_bytes(static_cast<uint64_t>(json_number(w, "rss_bytes")))
                     : "-"},
      {"heartbeat lag", alive ? human_ms(json_number(w, "heartbeat_lag_ms")) : "-"},
      {"loop lag", alive ? human_ms(json_number(w, "loop_lag_ms")) : "-"},
      {"active scenarios", int_cell(w, "active")},
      {"last exit", describe_last_exit(last_exit, now)},
      {"last exit at", json_string(last_exit, "at", "-")},
      {"next start in",
       json_number(w, "next_start_in_ms") > 0 ? human_ms(json_number(w, "next_start_in_ms")) : "-"},
  };
  // clang-format off
  static const std::set<std::string> kShown = {
      "slot", "state", "reason", "pid", "uptime_s", "restarts", "starts", "rss_bytes",
      "heartbeat_lag_ms", "loop_lag_ms", "active", "last_exit", "next_start_in_ms"};
  // clang-format on
  if (w.is_object()) {
    // The other fields of GET /workers, labelled as the ones above: "cpu_percent" as
    // "cpu percent", a string without its quotes.
    for (const auto& [key, value] : w.items()) {
      if (kShown.count(key)) continue;
      std::string label = key;
      std::replace(label.begin(), label.end(), '_', ' ');
      lines.emplace_back(label, value.is_string() ? value.get<std::string>()
                                : value.is_null() ? "-"
                                                  : value.dump());
    }
  }
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
