// corral's settings: one struct, one table of fields, loaded from defaults, then a JSON config
// file, then command-line flags (each later source overrides the earlier).
//
// Loading throws ConfigError at start-up, with a message that names the field and the value at
// fault: `max_memory: expected a size like "512MB", got true`. Nothing else here throws.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/hooks.h"
#include "config/limits.h"
#include "shared/http/tls_options.h"
#include "shared/status.h"

namespace corral::config {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Config {
  std::string home;                       // $CORRAL_HOME, else ~/.corral (filled by load())
  int workers = 0;                        // 0 = one per usable CPU
  std::string listen = "127.0.0.1:7070";  // TCP control API; "off" disables it
  uint64_t max_memory_bytes = 0;          // per worker; 0 = no limit
  double memory_hard_factor = 1.25;       // master kills at max_memory * this
  double memory_kernel_factor = 1.5;      // kernel backstop at max_memory * this
  uint64_t heartbeat_interval_ms = 1000;
  uint64_t heartbeat_timeout_ms = 5000;  // silent this long => hung
  uint64_t ready_timeout_ms = 10000;     // not ready this long after spawn => failed start
  uint64_t reload_grace_ms = 5000;       // a reload's new worker stays healthy this long first
  int spare_workers = 1;  // workers started in advance, taken by a slot that needs one (0 or 1)
  uint64_t kill_grace_ms = 3000;         // after a stop or a leaving notice, before SIGKILL
  uint64_t stop_grace_ms = 10000;        // graceful stop: time workers get to finish
  uint64_t backoff_initial_ms = 100;
  double backoff_factor = 2.0;
  uint64_t backoff_max_ms = 30000;
  uint64_t stable_after_ms = 30000;       // ready this long => backoff resets
  int crash_loop_exits = 10;  // this many unstable exits in a row => errored
  uint64_t errored_retry_ms = 60000;      // an errored slot is retried this often
  uint64_t log_max_bytes = 10u << 20;     // per log file, before rotation
  int log_files = 5;                      // rotated files kept
  std::string log_level = "info";         // trace, debug, info, warn, error
  std::string journal;                    // the journal's file; "" = <home>/journal.db
  int journal_max_queued = 1000000;  // writes not saved while the journal fails; past it, new
                                     // runs are refused (503)
  int worker_instances = 0;  // instances one worker runs at once; 0: what fits in its memory
  int max_resumes = 5;                    // worker deaths one instance survives before errored
  int quarantine_after = 3;  // worker deaths with a run's instances that stop it being placed
  uint64_t quarantine_window_ms = 600000;  // ... when they happen within this long
  int keep_runs = 1000;                   // finished runs kept in the journal (newest)
  uint64_t keep_runs_for_ms = 7 * 86400000ull;  // finished runs older than this are pruned
  uint64_t max_response_bytes = 64u << 20;      // a request's default cap on its response body
  uint64_t response_memory_bytes = 512u << 20;  // per worker: all response bodies in flight
  std::string http_client = "lean";  // "lean": the worker's own client; "curl": all by curl
  std::string http_version = "auto";  // requests' default: "auto", "1.1", "2"
  http::TlsOptions tls;               // requests' default TLS options
  int max_connections_per_host = 256;  // per worker and origin; more requests wait (FIFO)
  // Held connections one worker opens in a load test; 0: its file-descriptor limit less 2,000.
  // A test that needs more workers than there are starts more for its duration.
  int load_connections_per_worker = 0;
  std::string secrets_file;  // JSON object of secret values; "" = only CORRAL_SECRET_<NAME>
  // Required on TCP requests as "Authorization: Bearer <token>" when set; a TCP listener off
  // loopback refuses to start without one. Defaults to $CORRAL_API_TOKEN.
  std::string api_token;
  // Where systems under test reach the daemon: callback steps' URLs are
  // <callback_base>/callbacks/<token>. "" = http://<listen> (its port as bound; a wildcard
  // address replaced by the host's name).
  std::string callback_base;
  Hooks hooks;  // webhooks and commands run on daemon events (config/hooks.h)
  TargetLimits limits;  // per origin, across workers, for every run (config/limits.h)

  bool operator==(const Config&) const = default;
};

// The defaults, with `home` resolved from $CORRAL_HOME or $HOME/.corral.
Config defaults();

// Applies the fields present in `j` (a JSON object, as in a config file) over `cfg`.
// Field names are those of Config without the unit suffix: "max_memory": "512MB",
// "heartbeat_timeout": "5s", "workers": 4, ... Unknown fields and wrong types throw ConfigError.
// Each field's own range is checked here; on a throw, `cfg` is unchanged. (The field list, its
// kinds and ranges are in config/fields.cc; "log_max_size" sets log_max_bytes.)
void apply_json(Config& cfg, const nlohmann::json& j);

// Reads a config file: its bytes, parsed as one JSON object. Throws ConfigError with a message
// that leaves the file's name to the caller: "cannot open: No such file or directory",
// "line 3, column 5: syntax error ...", "expected a JSON object of settings, got array".
nlohmann::json read_settings(const std::string& path);

// Reads a JSON config file and applies it over `cfg`. Throws ConfigError naming the file.
void apply_file(Config& cfg, const std::string& path);

// Checks cross-field rules (e.g. heartbeat_timeout > heartbeat_interval), that `listen` is
// HOST:PORT or "off" and has an api_token when it is not a loopback address, and each field's
// range again (flags may have set the struct directly). Throws ConfigError with the first
// problem of validation_problems().
void validate(const Config& cfg);
// Every problem validate() would find, in the order it checks them; empty when there is none.
std::vector<std::string> validation_problems(const Config& cfg);

// Every field, in config-file form (sizes and durations as strings like "512MB", "5s").
// `home` is not a file field and is left out, so apply_json(to_json(cfg)) round-trips.
nlohmann::json to_json(const Config& cfg);

// A config-file field as the documentation shows it (`corral man corral-config`).
struct FieldDoc {
  std::string name;
  std::string kind;                  // "integer", "number", "string", "duration", "size", "object"
  std::string default_value;         // as JSON: 4, "5s", ""
  std::string range;                 // "1 to 1024" for numbers; "" when any value of the kind goes
  std::vector<std::string> choices;  // the values a string may take; empty = any
  std::string help;
};
// Every config-file field, in the order of the field table.
std::vector<FieldDoc> field_docs();

// One line per config-file field, "name (kind, default D): what it does", for --help and docs.
std::string field_reference();

// A whole file's bytes; kIo with "cannot open: <strerror>" or "cannot read: ...".
Result<std::string> read_whole_file(const std::string& path);

// "250ms", "10s", "10m", "1h", "2d" -> milliseconds. Plain numbers are rejected.
Result<uint64_t> parse_duration_ms(const std::string& text);
// "512", "64KB", "512MB", "2GB" (powers of 1024; "KiB"/"MiB"/"GiB" also accepted) -> bytes.
Result<uint64_t> parse_bytes(const std::string& text);
std::string format_duration_ms(uint64_t ms);
std::string format_bytes(uint64_t bytes);

// Whether `host` (an IPv4 or IPv6 literal) is a loopback address: 127.0.0.0/8 or ::1.
bool is_loopback(const std::string& host);

// "HOST:PORT" -> parts; port 0 allowed (ephemeral). "off" is handled by the caller.
Result<std::pair<std::string, int>> parse_host_port(const std::string& text);

// The number of CPUs this process may use: the sched affinity mask, further limited by the
// cgroup v2 cpu.max quota of this process's cgroup when one is set (rounded up, at least 1).
int usable_cpus();

// The pure parts of usable_cpus(), for tests.
// The CPU limit in a cgroup v2 cpu.max ("<quota> <period>"), e.g. "150000 100000" -> 1.5;
// nullopt for "max <period>" (no limit) or anything malformed.
std::optional<double> parse_cpu_max(std::string_view contents);
// max(1, min(affinity_count, ceil(each limit in cpu_max_contents))): the contents of cpu.max
// from this process's cgroup and each of its ancestors, in any order.
int cpus_from(int affinity_count, const std::vector<std::string>& cpu_max_contents);

}  // namespace corral::config
