#include "config/fields.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

namespace corral::config {
namespace {

constexpr double kMs = 1;
constexpr double kSecond = 1000 * kMs;
constexpr double kDay = 86400 * kSecond;
constexpr double kOneKiB = 1024;
constexpr double kOnePiB = kOneKiB * kOneKiB * kOneKiB * kOneKiB * kOneKiB;
// Caps that keep other code's arithmetic (now + duration, limit * factor) far from overflow.
constexpr double kMaxDuration = 365 * kDay;
constexpr double kMaxBytes = kOnePiB;

// One maker per kind, so that a row cannot pair a kind with a member of the wrong type.
constexpr Field int_field(std::string_view name, int Config::*m, double min, double max,
                          std::string_view help) {
  return {name, Kind::kInt, m, min, max, {}, help};
}
constexpr Field double_field(std::string_view name, double Config::*m, double min, double max,
                             std::string_view help) {
  return {name, Kind::kDouble, m, min, max, {}, help};
}
constexpr Field string_field(std::string_view name, std::string Config::*m,
                             std::span<const std::string_view> choices, std::string_view help) {
  return {name, Kind::kString, m, 0, 0, choices, help};
}
constexpr Field duration_field(std::string_view name, uint64_t Config::*m, double min,
                               std::string_view help) {
  return {name, Kind::kDuration, m, min, kMaxDuration, {}, help};
}
constexpr Field bytes_field(std::string_view name, uint64_t Config::*m, double min,
                            std::string_view help) {
  return {name, Kind::kBytes, m, min, kMaxBytes, {}, help};
}

constexpr Field bytes_field_up_to(std::string_view name, uint64_t Config::*m, double min,
                                  double max, std::string_view help) {
  return {name, Kind::kBytes, m, min, max, {}, help};
}

constexpr Field hooks_field(std::string_view name, Hooks Config::*m, std::string_view help) {
  return {name, Kind::kHooks, m, 0, 0, {}, help};
}

constexpr Field limits_field(std::string_view name, TargetLimits Config::*m,
                             std::string_view help) {
  return {name, Kind::kLimits, m, 0, 0, {}, help};
}

constexpr Field tls_field(std::string_view name, http::TlsOptions Config::*m,
                          std::string_view help) {
  return {name, Kind::kTls, m, 0, 0, {}, help};
}

constexpr std::array<std::string_view, 5> kLogLevels = {"trace", "debug", "info", "warn", "error"};
constexpr std::array<std::string_view, 2> kHttpClients = {"lean", "curl"};
constexpr std::array<std::string_view, 3> kHttpVersions = {"auto", "1.1", "2"};

// clang-format off
const Field kFields[] = {
  int_field("workers", &Config::workers, 0, 1024,
            "worker processes; 0 = one per usable CPU"),
  string_field("listen", &Config::listen, {},
               "HOST:PORT of the TCP control API, or \"off\""),
  bytes_field("max_memory", &Config::max_memory_bytes, 0,
              "memory limit per worker; 0 = no limit"),
  double_field("memory_hard_factor", &Config::memory_hard_factor, 1.0, 100,
               "the master kills a worker at max_memory times this"),
  double_field("memory_kernel_factor", &Config::memory_kernel_factor, 1.0, 100,
               "the kernel's backstop limit is max_memory times this"),
  duration_field("heartbeat_interval", &Config::heartbeat_interval_ms, 10 * kMs,
                 "how often workers report in"),
  duration_field("heartbeat_timeout", &Config::heartbeat_timeout_ms, 10 * kMs,
                 "a worker silent this long is hung"),
  duration_field("ready_timeout", &Config::ready_timeout_ms, 10 * kMs,
                 "a worker not ready this long after spawn failed to start"),
  int_field("spare_workers", &Config::spare_workers, 0, 1,
            "a worker started in advance, so that a dead one is replaced at once; 0: none"),
  duration_field("reload_grace", &Config::reload_grace_ms, 0,
                 "a reload's new worker must stay healthy this long before it takes over"),
  duration_field("kill_grace", &Config::kill_grace_ms, 0,
                 "time after a stop or a leaving worker's notice before SIGKILL"),
  duration_field("stop_grace", &Config::stop_grace_ms, 0,
                 "time workers get to finish on a graceful stop"),
  duration_field("backoff_initial", &Config::backoff_initial_ms, 1 * kMs,
                 "restart delay after the first unstable exit"),
  double_field("backoff_factor", &Config::backoff_factor, 1.0, 100,
               "each further unstable exit multiplies the delay by this"),
  duration_field("backoff_max", &Config::backoff_max_ms, 1 * kMs,
                 "the restart delay never exceeds this"),
  duration_field("stable_after", &Config::stable_after_ms, 0,
                 "a worker ready this long is stable: its backoff resets"),
  int_field("crash_loop_exits", &Config::crash_loop_exits, 1, 1000000,
            "this many unstable exits in a row (none stable between) => errored"),
  duration_field("errored_retry", &Config::errored_retry_ms, 1 * kMs,
                 "an errored slot is retried this often"),
  bytes_field("log_max_size", &Config::log_max_bytes, kOneKiB,
              "a log file is rotated at this size"),
  int_field("log_files", &Config::log_files, 1, 1000,
            "rotated log files kept"),
  string_field("log_level", &Config::log_level, kLogLevels,
               "trace, debug, info, warn or error"),
  string_field("journal", &Config::journal, {},
               "the journal: a SQLite file, or a PostgreSQL database as postgresql://USER:PASSWORD@"
               "HOST:PORT/DB (docs/cluster.md); empty: journal.db in the home"),
  int_field("journal_max_queued", &Config::journal_max_queued, 100, 100000000,
            "while the journal cannot be written, its writes wait in memory; past this many, "
            "new runs are refused with 503 (running ones go on)"),
  int_field("worker_instances", &Config::worker_instances, 0, 10000000,
            "instances one worker runs at once at most; more wait in the master's queue. 0: as "
            "many as fit in the worker's memory budget"),
  int_field("max_resumes", &Config::max_resumes, 0, 1000,
            "an instance whose worker died with it more often than this is errored"),
  int_field("quarantine_after", &Config::quarantine_after, 0, 1000,
            "workers that hang or crash while running a run's instances before the run is "
            "quarantined (no longer placed; `corral resume` or cancel it); 0: never"),
  duration_field("quarantine_window", &Config::quarantine_window_ms, kSecond,
                 "those deaths count when they happen within this long"),
  int_field("keep_runs", &Config::keep_runs, 1, 100000000,
            "finished runs kept in the journal; older ones are pruned"),
  duration_field("keep_runs_for", &Config::keep_runs_for_ms, 1 * kMs,
                 "finished runs older than this are pruned from the journal"),
  bytes_field_up_to("max_response", &Config::max_response_bytes, kOneKiB, kOneKiB * kOneKiB * kOneKiB,
                    "a response body larger than this is a transport error (a request's "
                    "max_response overrides it)"),
  bytes_field("response_memory", &Config::response_memory_bytes, kOneKiB * kOneKiB,
              "per worker: response bodies in flight together; past it, requests wait"),
  string_field("http_client", &Config::http_client, kHttpClients,
               "lean: http:// and https:// requests on the worker's own client (HTTP/1.1, "
               "HTTP/2, TLS), proxies by libcurl; curl: every request by libcurl"),
  string_field("http_version", &Config::http_version, kHttpVersions,
               "requests' default: auto (HTTP/2 when an https server offers it by ALPN), 1.1, "
               "or 2 (h2c by prior knowledge over http://)"),
  tls_field("tls", &Config::tls,
            "requests' default TLS options: ca_file, client_cert, client_key, server_name, "
            "verify, min_version (a scenario's or request's \"tls\" overrides each)"),
  int_field("max_connections_per_host", &Config::max_connections_per_host, 1, 100000,
            "connections one worker opens to one origin; more requests wait in FIFO order"),
  int_field("load_connections_per_worker", &Config::load_connections_per_worker, 0, 1000000,
            "held connections one worker opens in a load test; 0: its file-descriptor limit "
            "less 2000"),
  string_field("secrets_file", &Config::secrets_file, {},
               "a JSON object of secret values for {{secret.NAME}}; must not be readable by "
               "group or others"),
  string_field("api_token", &Config::api_token, {},
               "TCP requests need \"Authorization: Bearer <token>\"; default $CORRAL_API_TOKEN"),
  string_field("callback_base", &Config::callback_base, {},
               "the URL callback steps' URLs start with (e.g. https://corral.example.com); "
               "default http://<listen>"),
  hooks_field("hooks", &Config::hooks,
              "webhooks and commands run on worker_exit, run_finished, journal_failed and "
              "journal_recovered (docs/operations.md, Hooks)"),
  limits_field("limits", &Config::limits,
               "per origin, max_in_flight and rate across all workers, for every run's requests "
               "(docs/scenarios.md, Per-target limits)"),
};
// clang-format on

}  // namespace

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kInt:
      return "integer";
    case Kind::kDouble:
      return "number";
    case Kind::kString:
      return "string";
    case Kind::kDuration:
      return "duration";
    case Kind::kBytes:
      return "size";
    case Kind::kHooks:
    case Kind::kLimits:
    case Kind::kTls:
      return "object";
  }
  return "?";
}

std::span<const Field> fields() { return kFields; }

const Field* find_field(std::string_view name) {
  for (const Field& f : kFields) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the classic table at a time: row[j] is the distance from a[0, i) to b[0, j).
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];  // the distance from a[0, i-1) to b[0, j-1)
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      diagonal = row[j];
      row[j] = std::min({substitute, row[j] + 1, row[j - 1] + 1});
    }
  }
  return row[b.size()];
}

std::span<const std::string_view> field_names() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> out;
    for (const Field& f : kFields) out.push_back(f.name);
    return out;
  }();
  return names;
}

const std::string_view* closest_name(std::string_view name,
                                     std::span<const std::string_view> names) {
  constexpr size_t kMaxEdits = 2;
  constexpr size_t kMinContained = 3;  // shorter ones ("a", "ma") are contained in too much
  const std::string_view* best = nullptr;
  size_t best_distance = 0;
  for (const std::string_view& candidate : names) {
    const size_t distance = edit_distance(name, candidate);
    const std::string_view shorter = name.size() < candidate.size() ? name : candidate;
    const bool contains =
        shorter.size() >= kMinContained && (candidate.find(name) != std::string_view::npos ||
                                            name.find(candidate) != std::string_view::npos);
    if (distance > kMaxEdits && !contains) continue;
    if (best == nullptr || distance < best_distance) {
      best = &candidate;
      best_distance = distance;
    }
  }
  return best;
}

const Field* closest_field(std::string_view name) {
  const std::string_view* close = closest_name(name, field_names());
  return close == nullptr ? nullptr : find_field(*close);
}

std::string unknown_name(std::string_view what, std::string_view name,
                         std::span<const std::string_view> names) {
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  const std::string quoted = nlohmann::json(std::string(name)).dump();
  const std::string known = "known " + std::string(what) + "s: " + list;
  const std::string_view* close = closest_name(name, names);
  if (close == nullptr) return "unknown " + std::string(what) + " " + quoted + " (" + known + ")";
  return "unknown " + std::string(what) + " " + quoted + " (did you mean " +
         nlohmann::json(std::string(*close)).dump() + "?); " + known;
}

}  // namespace corral::config
