// The payloads of the frames that are not events, load seconds or limits (those have their own
// files): one struct per message of protocol.h, encoded with to_json() and decoded with
// read<T>(), by both sides. Decoding is strict, as for checkpoints: a field of the wrong type,
// out of range or unknown is the sender's protocol error, named with its path
// ("welcome.heartbeat_ms: expected an unsigned 64-bit integer, got \"1s\""). A field that is
// absent keeps the default below. Documents with readers of their own (a scenario, vars, a
// load section, TLS options, checkpoints) travel as raw JSON and are checked by those readers.
// Pure, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "shared/ipc/checkpoint.h"
#include "shared/status.h"

namespace corral::ipc {

struct Hello {
  uint32_t protocol = 0;  // required: kProtocolVersion of the worker's build
  int64_t pid = 0;
  int slot = -1;  // -1: a spare, which learns its slot from `welcome`
  bool operator==(const Hello&) const = default;
};

// A worker that is given no lease is not held by one (a daemon that is in no cluster).
constexpr uint64_t kNoLease = UINT64_MAX;

struct Welcome {
  uint32_t protocol = 0;
  int slot = -1;  // required
  uint64_t heartbeat_ms = 1000;
  uint64_t max_memory_bytes = 0;     // 0: none
  uint64_t kernel_memory_bytes = 0;  // RLIMIT_AS backstop; 0: none
  uint64_t log_max_bytes = 10u << 20;
  int log_files = 5;
  std::string log_level = "info";
  uint64_t max_response_bytes = 0;     // 0: the HTTP client's default
  uint64_t response_memory_bytes = 0;  // 0: the HTTP client's default
  std::string http_client = "lean";    // "lean" | "curl"
  std::string http_version = "auto";
  nlohmann::json tls;  // http::TlsOptions as JSON (shared/http/tls_options.h); null: defaults
  int max_connections_per_host = 0;            // 0: the client's default
  std::map<std::string, std::string> secrets;  // the pipe is the only place secrets travel
  std::string callback_base;                   // shared/callback
  std::string callback_key;                    // 64 hex digits
  uint64_t lease_until_ms = kNoLease;          // the lease at the time (see Lease)
  bool operator==(const Welcome&) const = default;
};

struct Heartbeat {
  uint64_t seq = 0;
  double loop_lag_ms = 0;
  uint64_t rss_bytes = 0;
  uint64_t idle_rss_bytes = 0;  // RSS when it said ready
  uint64_t active = 0;          // instances on its loop
  uint64_t requests = 0;        // HTTP requests sent since it started
  nlohmann::json http_errors;   // shared/ipc/http_errors.h; null when it has none to report
  nlohmann::json limits;        // shared/ipc/limits.h; null when it has no per-target limits
  bool operator==(const Heartbeat&) const = default;
};

struct Stop {
  uint64_t grace_ms = 0;
  bool operator==(const Stop&) const = default;
};

struct Leaving {
  std::string reason;  // "memory_soft"
  uint64_t rss_bytes = 0;
  bool operator==(const Leaving&) const = default;
};

struct DefineRun {
  std::string run;          // required
  nlohmann::json scenario;  // required: the scenario document
  nlohmann::json vars = nlohmann::json::object();
  uint32_t size = 0;  // instances in the run
  int64_t created_ms = 0;
  uint32_t priority = 1;
  nlohmann::json data;  // a run over data rows (master/runs.h Run::data); null for others
  bool operator==(const DefineRun&) const = default;
};

// Fresh instances first..first+count-1, or the instances of `resume` from their checkpoints.
struct Start {
  std::string run;  // required
  uint32_t first = 0, count = 0;
  nlohmann::json resume;  // {"<index>": {checkpoint}, ...}; null for fresh instances
  bool operator==(const Start&) const = default;
};

struct Cancel {
  std::string run;  // required
  bool operator==(const Cancel&) const = default;
};

struct Release {
  uint32_t count = 0;  // at most 500 waiting instances
  bool operator==(const Release&) const = default;
};

// The host's lease ends at until_ms, by CLOCK_MONOTONIC (0: it has ended).
struct Lease {
  uint64_t until_ms = 0;
  bool operator==(const Lease&) const = default;
};

// A callback step's URL was called (with `body`), or pinged (`heartbeat`, no body).
struct Callback {
  std::string run;  // required
  uint32_t index = 0, step = 0;
  bool heartbeat = false;
  nlohmann::json body;
  bool operator==(const Callback&) const = default;
};

struct LoadStart {
  std::string load;         // required
  nlohmann::json scenario;  // required
  nlohmann::json vars = nlohmann::json::object();
  nlohmann::json spec;           // required: the load section (config/load/parse.h)
  uint32_t index = 0, of = 1;    // this worker's share of the host's
  uint32_t host = 0, hosts = 1;  // this host's share of the test's
  uint64_t delay_ms = 0;
  bool operator==(const LoadStart&) const = default;
};

struct LoadStop {
  std::string load;  // required
  bool operator==(const LoadStop&) const = default;
};

// The instances a stopping worker hands back, or those a `release` took (`released`).
struct Handback {
  nlohmann::json instances = nlohmann::json::object();  // {"<run>": {"<index>": checkpoint}}
  bool released = false;
  bool operator==(const Handback&) const = default;
};

nlohmann::json to_json(const Hello& m);
nlohmann::json to_json(const Welcome& m);
nlohmann::json to_json(const Heartbeat& m);
nlohmann::json to_json(const Stop& m);
nlohmann::json to_json(const Leaving& m);
nlohmann::json to_json(const DefineRun& m);
nlohmann::json to_json(const Start& m);

// Writes the text of a Start that resumes instances from their checkpoints: parsed, it equals
// to_json of the Start with the same checkpoints. Placing the instances of a killed worker or a
// reload writes tens of thousands of checkpoints, and building each as JSON first was most of
// the master's work then (bench/master-stalls).
class StartWriter {
 public:
  explicit StartWriter(const std::string& run);
  void add(uint32_t index, const Checkpoint& cp);
  size_t count() const { return count_; }
  // The payload's text; the writer is spent.
  std::string finish();

 private:
  void key(uint32_t index);
  std::string text_;
  size_t count_ = 0;
};
nlohmann::json to_json(const Cancel& m);
nlohmann::json to_json(const Release& m);
nlohmann::json to_json(const Lease& m);
nlohmann::json to_json(const Callback& m);
nlohmann::json to_json(const LoadStart& m);
nlohmann::json to_json(const LoadStop& m);
nlohmann::json to_json(const Handback& m);

// The payload as message T; errors are protocol errors (Code::kProtocol) that name the field.
template <typename T>
Result<T> read(const nlohmann::json& payload);

// read<Handback> of a frame's payload, which it takes: the checkpoints a hand-back carries
// (thousands in a reload) are moved out of it, not copied.
Result<Handback> read_handback(nlohmann::json&& payload);

// A worker's hello, checked: its protocol version first ("speaks protocol 3, master speaks 4":
// another version's hello may carry other fields), then the payload.
Status check_hello(const nlohmann::json& payload);

}  // namespace corral::ipc
