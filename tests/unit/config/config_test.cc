// Loading a Config from JSON, its error messages, validate(), to_json() and defaults().
#include "config/config.h"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

#include "tests/support/scoped_env.h"

namespace corral::config {
namespace {

using nlohmann::json;
using corral::test::ScopedEnv;

constexpr const char* kKnownFields =
    "workers, listen, max_memory, memory_hard_factor, memory_kernel_factor, heartbeat_interval, "
    "heartbeat_timeout, ready_timeout, spare_workers, reload_grace, kill_grace, stop_grace, "
    "backoff_initial, backoff_factor, "
    "backoff_max, stable_after, crash_loop_exits, errored_retry, "
    "log_max_size, log_files, log_level, journal, journal_max_queued, worker_instances, max_resumes, "
    "quarantine_after, quarantine_window, keep_runs, "
    "keep_runs_for, "
    "max_response, response_memory, http_client, http_version, tls, max_connections_per_host, "
    "load_connections_per_worker, secrets_file, api_token, callback_base, hooks, limits";

// kKnownFields in the order nlohmann::json keeps object keys (sorted).
std::string sorted_known_fields() {
  std::set<std::string> names;
  std::istringstream in(kKnownFields);
  for (std::string name; std::getline(in >> std::ws, name, ',');) names.insert(name);
  std::string list;
  for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
  return list;
}

// The ConfigError message thrown by `f`, or "(no error)".
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}


// Every field different from its default, and still valid.
Config all_changed() {
  Config c;
  c.home = "/srv/corral";
  c.workers = 7;
  c.listen = "[::1]:9000";
  c.max_memory_bytes = uint64_t{3} << 30;
  c.memory_hard_factor = 1.1;
  c.memory_kernel_factor = 2.75;
  c.heartbeat_interval_ms = 250;
  c.heartbeat_timeout_ms = 1500;
  c.ready_timeout_ms = 90000;
  c.reload_grace_ms = 0;
  c.spare_workers = 0;
  c.kill_grace_ms = 0;
  c.stop_grace_ms = 7200000;
  c.backoff_initial_ms = 1;
  c.backoff_factor = 1.5;
  c.backoff_max_ms = 86400000;
  c.stable_after_ms = 12345;
  c.crash_loop_exits = 3;
  c.errored_retry_ms = 3600000;
  c.log_max_bytes = 1536;
  c.log_files = 1;
  c.log_level = "trace";
  c.journal = "/var/lib/corral/journal.db";
  c.journal_max_queued = 5000;
  c.worker_instances = 1000;
  c.max_resumes = 0;
  c.quarantine_after = 0;
  c.quarantine_window_ms = 30000;
  c.keep_runs = 3;
  c.keep_runs_for_ms = 3600000;
  c.max_response_bytes = 1 << 20;
  c.response_memory_bytes = 2 << 20;
  c.http_client = "curl";
  c.http_version = "1.1";
  c.tls.verify = false;
  c.tls.min_version = "1.3";
  c.max_connections_per_host = 16;
  c.load_connections_per_worker = 500;
  c.secrets_file = "/etc/corral/secrets.json";
  c.api_token = "t0ken";
  c.callback_base = "https://corral.example.com";
  Hook hook;
  hook.url = "http://127.0.0.1:9000/corral";
  hook.headers = {{"X-Team", "qa"}};
  c.hooks.by_event[static_cast<size_t>(HookEvent::kWorkerExit)].push_back(hook);
  c.limits = {{"http://a:80", 5, 2.5, 3}};
  return c;
}

TEST_CASE("config: applies each kind of field from JSON") {
  Config cfg;
  apply_json(cfg, json::parse(R"({"workers": 4, "listen": "off", "max_memory": "512MB",
      "memory_hard_factor": 1.5, "heartbeat_timeout": "7s", "log_max_size": 2048,
      "log_level": "debug"})"));
  CHECK(cfg.workers == 4);
  CHECK(cfg.listen == "off");
  CHECK(cfg.max_memory_bytes == uint64_t{512} << 20);
  CHECK(cfg.memory_hard_factor == 1.5);
  CHECK(cfg.heartbeat_timeout_ms == 7000);
  CHECK(cfg.log_max_bytes == 2048);
  CHECK(cfg.log_level == "debug");
  CHECK(cfg.heartbeat_interval_ms == Config{}.heartbeat_interval_ms);  // absent: untouched
}

TEST_CASE("config: rejects a wrong type or a bad value, naming the field and the value") {
  struct Case {
    const char* json;
    const char* message;
  };
  const Case cases[] = {
      {R"({"max_memory": true})", R"(max_memory: expected a size like "512MB", got true)"},
      {R"({"max_memory": -1})", R"(max_memory: expected a size like "512MB", got -1)"},
      {R"({"max_memory": 1.5})", R"(max_memory: expected a size like "512MB", got 1.5)"},
      {R"({"max_memory": "12XB"})", R"(max_memory: expected a size like "512MB", got "12XB")"},
      {R"({"max_memory": "99999999999999PB"})",
       R"(max_memory: size "99999999999999PB" is too large)"},
      {R"({"heartbeat_timeout": 10})",
       R"(heartbeat_timeout: expected a duration like "5s", got 10)"},
      {R"({"heartbeat_timeout": "10"})",
       R"(heartbeat_timeout: expected a duration like "5s", got "10")"},
      {R"({"ready_timeout": null})", R"(ready_timeout: expected a duration like "5s", got null)"},
      {R"({"workers": "4"})", R"(workers: expected a whole number, got "4")"},
      {R"({"workers": 2.5})", R"(workers: expected a whole number, got 2.5)"},
      {R"({"workers": -1})", R"(workers: must be between 0 and 1024, got -1)"},
      {R"({"workers": 1025})", R"(workers: must be between 0 and 1024, got 1025)"},
      {R"({"workers": 18446744073709551615})",
       R"(workers: must be between 0 and 1024, got 18446744073709551615)"},
      {R"({"log_files": 0})", R"(log_files: must be between 1 and 1000, got 0)"},
      {R"({"crash_loop_exits": -3})", R"(crash_loop_exits: must be between 1 and 1000000, got -3)"},
      {R"({"memory_hard_factor": 0.5})",
       R"(memory_hard_factor: must be between 1.0 and 100.0, got 0.5)"},
      {R"({"backoff_factor": "2"})", R"(backoff_factor: expected a number, got "2")"},
      {R"({"listen": 7070})", R"(listen: expected a string, got 7070)"},
      {R"({"log_level": "verbose"})",
       R"(log_level: expected one of trace, debug, info, warn, error, got "verbose")"},
      {R"({"heartbeat_interval": "1ms"})",
       R"(heartbeat_interval: must be between 10ms and 365d, got "1ms")"},
      {R"({"kill_grace": "400d"})", R"(kill_grace: must be between 0s and 365d, got "400d")"},
      {R"({"log_max_size": 100})", R"(log_max_size: must be between 1KB and 1PB, got 100)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.json);
    Config cfg;
    CHECK(error_of([&] { apply_json(cfg, json::parse(c.json)); }) == c.message);
  }
}

TEST_CASE("config: rejects an unknown field, listing the known ones") {
  for (const char* name : {"home", "log_max_bytes", "zzz"}) {
    CAPTURE(name);
    Config cfg;
    CHECK(error_of([&] {
            apply_json(cfg, json{{name, 1}});
          }) == "unknown field \"" + std::string(name) + "\" (known fields: " + kKnownFields + ")");
  }
}

TEST_CASE("config: an unknown field close to a known one names it as a suggestion") {
  struct Case {
    const char* name;
    const char* meant;
  };
  const Case cases[] = {
      {"wokers", "workers"},               // a letter left out
      {"max_memroy", "max_memory"},        // two letters swapped
      {"Workers", "workers"},              // case
      {"max_memory_bytes", "max_memory"},  // the member's name: contains the field
      {"worker", "workers"},               // contained in two fields: the nearer one
      {"heartbeat_intervall", "heartbeat_interval"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Config cfg;
    CHECK(error_of([&] {
            apply_json(cfg, json{{c.name, 1}});
          }) == "unknown field \"" + std::string(c.name) + "\" (did you mean \"" + c.meant +
                    "\"?); known fields: " + kKnownFields);
  }
}

TEST_CASE("config: rejects a config that is not a JSON object") {
  Config cfg;
  CHECK(error_of([&] {
          apply_json(cfg, json::array({1, 2}));
        }) == "expected a JSON object of settings, got array");
}

TEST_CASE("config: leaves the config untouched when any field is bad") {
  Config cfg;
  CHECK(error_of([&] { apply_json(cfg, json{{"workers", 3}, {"zzz", 1}}); }) != "(no error)");
  CHECK(error_of([&] {
          apply_json(cfg, json{{"workers", 3}, {"max_memory", true}});
        }) != "(no error)");
  CHECK(cfg == Config{});
}

TEST_CASE("config: to_json then apply_json gives back an equal config") {
  const Config original = all_changed();
  const json j = to_json(original);
  const json defaults_json = to_json(Config{});
  for (const auto& [key, value] : j.items()) {
    CAPTURE(key);
    CHECK(value != defaults_json[key]);  // every field takes part in the round trip
  }
  Config back;
  back.home = original.home;
  apply_json(back, j);
  CHECK(back == original);
}

TEST_CASE("config: to_json writes every file field, sizes and durations as text, and not home") {
  const json j = to_json(Config{});
  std::string keys;
  for (const auto& [key, value] : j.items()) keys += (keys.empty() ? "" : ", ") + key;
  CHECK(keys == sorted_known_fields());
  CHECK(!j.contains("home"));
  CHECK(j["heartbeat_timeout"] == "5s");
  CHECK(j["log_max_size"] == "10MB");
  CHECK(j["max_memory"] == "0");
  CHECK(j["workers"] == 0);
  CHECK(j["memory_kernel_factor"] == 1.5);
  CHECK(j["log_level"] == "info");
}

TEST_CASE("config: the defaults and the round-trip config pass validate") {
  CHECK(error_of([] { validate(defaults()); }) == "(no error)");
  CHECK(error_of([] { validate(all_changed()); }) == "(no error)");
}

TEST_CASE("config: validate enforces the cross-field rules and each field's range") {
  struct Case {
    const char* name;
    void (*change)(Config&);
    const char* message;  // "" = valid
  };
  const Case cases[] = {
      {"timeout equal to interval",
       [](Config& c) { c.heartbeat_timeout_ms = c.heartbeat_interval_ms = 1000; },
       "heartbeat_timeout (1s) must be greater than heartbeat_interval (1s)"},
      {"timeout just above interval", [](Config& c) { c.heartbeat_timeout_ms = 1001; }, ""},
      {"backoff_max below initial", [](Config& c) { c.backoff_max_ms = 50; },
       "backoff_max (50ms) must be at least backoff_initial (100ms)"},
      {"backoff_max equal to initial", [](Config& c) { c.backoff_max_ms = 100; }, ""},
      {"kernel factor below hard factor", [](Config& c) { c.memory_kernel_factor = 1.1; },
       "memory_kernel_factor (1.1) must be at least memory_hard_factor (1.25)"},
      {"kernel factor equal to hard factor", [](Config& c) { c.memory_kernel_factor = 1.25; }, ""},
      {"listen off", [](Config& c) { c.listen = "off"; }, ""},
      {"listen IPv6", [](Config& c) { c.listen = "[::1]:0"; }, ""},
      {"listen without port", [](Config& c) { c.listen = "nowhere"; },
       R"(listen: expected HOST:PORT like "127.0.0.1:7070", got "nowhere" (no port); or "off" to disable it)"},
      {"listen port too big", [](Config& c) { c.listen = "localhost:65536"; },
       R"(listen: expected HOST:PORT like "127.0.0.1:7070", got "localhost:65536" (the port is above 65535); or "off" to disable it)"},
      {"workers out of range", [](Config& c) { c.workers = 5000; },
       "workers: must be between 0 and 1024, got 5000"},
      {"log_files zero", [](Config& c) { c.log_files = 0; },
       "log_files: must be between 1 and 1000, got 0"},
      {"log_level unknown", [](Config& c) { c.log_level = "loud"; },
       R"(log_level: expected one of trace, debug, info, warn, error, got "loud")"},
      {"factor NaN", [](Config& c) { c.backoff_factor = std::nan(""); },
       "backoff_factor: must be between 1.0 and 100.0, got null"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Config cfg = defaults();
    c.change(cfg);
    CHECK(error_of([&] { validate(cfg); }) == (*c.message ? c.message : "(no error)"));
  }
}

TEST_CASE("config: home comes from CORRAL_HOME, else HOME/.corral, else /tmp/corral-UID") {
  {
    ScopedEnv corral_home("CORRAL_HOME", "/var/lib/corral");
    ScopedEnv home("HOME", "/home/ann");
    CHECK(defaults().home == "/var/lib/corral");
  }
  {
    ScopedEnv corral_home("CORRAL_HOME", "");
    ScopedEnv home("HOME", "/home/ann");
    CHECK(defaults().home == "/home/ann/.corral");
  }
  {
    ScopedEnv corral_home("CORRAL_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    CHECK(defaults().home == "/tmp/corral-" + std::to_string(::getuid()));
  }
}

TEST_CASE("config: the field reference has one line per field with kind, default and help") {
  const std::string ref = field_reference();
  CHECK(ref.find(
            "heartbeat_timeout (duration, default \"5s\"): a worker silent this long is hung\n") !=
        std::string::npos);
  CHECK(ref.find("workers (integer, default 0): ") != std::string::npos);
  CHECK(ref.find("log_max_size (size, default \"10MB\"): ") != std::string::npos);
  const std::string known = kKnownFields;
  CHECK(std::count(ref.begin(), ref.end(), '\n') == std::count(known.begin(), known.end(), ',') + 1);
}

TEST_CASE("config: a TCP listener off loopback needs an api_token") {
  Config cfg;
  cfg.listen = "0.0.0.0:7070";
  CHECK(error_of([&] { validate(cfg); }) ==
        "listen: 0.0.0.0:7070 is not a loopback address: set api_token (or CORRAL_API_TOKEN) so "
        "that only those who know it can use the API");
  cfg.api_token = "t0ken";
  CHECK(error_of([&] { validate(cfg); }) == "(no error)");
  for (const char* loopback : {"127.0.0.1:1", "127.8.9.10:1", "[::1]:1"}) {
    Config local;
    local.listen = loopback;
    CHECK(error_of([&] { validate(local); }) == "(no error)");
  }
  Config v6;
  v6.listen = "[::]:7070";
  CHECK(error_of([&] { validate(v6); }) != "(no error)");
}

TEST_CASE("config: api_token defaults to $CORRAL_API_TOKEN, and a file overrides it") {
  ScopedEnv token("CORRAL_API_TOKEN", "from-env");
  Config cfg = defaults();
  CHECK(cfg.api_token == "from-env");
  apply_json(cfg, json{{"api_token", "from-file"}});
  CHECK(cfg.api_token == "from-file");
}

TEST_CASE("config: response_memory may not be smaller than max_response") {
  Config cfg;
  cfg.max_response_bytes = 64u << 20;
  cfg.response_memory_bytes = 32u << 20;
  CHECK(error_of([&] { validate(cfg); }) ==
        "response_memory (32MB) must be at least max_response (64MB)");
  CHECK(error_of([&] {
          apply_json(cfg, json{{"max_response", "2GB"}});
        }) == "max_response: must be between 1KB and 1GB, got \"2GB\"");
}
}  // namespace
}  // namespace corral::config
