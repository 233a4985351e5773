// The integration-test harness: runs the real `corral` binary in a temporary $CORRAL_HOME and
// looks at it from the outside, the way a user would (the control API, the CLI, /proc).
//
// Everything here runs on the test's thread and blocks. Waiting is always on a condition with a
// deadline (wait_for, Daemon::wait_until), never a bare sleep. A failed wait fails the running
// Catch2 test case (it throws), naming what was awaited and what was last seen.
//
// Cleanup is by recorded PID only: a Daemon kills its own daemon and the worker PIDs it saw in
// /workers, and checks a PID's start time before signalling it so a reused PID is never hit.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace corral::test {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The `corral` executable under test: $CORRAL_TEST_BINARY when set, else the CORRAL_BINARY
// compile definition (the one built next to the tests).
std::string corral_binary();

// --- processes, seen through /proc ---

// True while `pid` exists and is not a zombie (state Z or X in /proc/<pid>/stat): a zombie has
// already exited, whatever kill(pid, 0) says.
bool process_alive(pid_t pid);
// The process's start time (field 22 of /proc/<pid>/stat, clock ticks since boot), or 0 when
// there is no such process. With the PID it names one process, even after the PID is reused.
unsigned long long process_start_time(pid_t pid);
// The CPUs this test process may use: its affinity mask, limited by any cgroup v2 cpu.max quota
// on its cgroup or an ancestor (rounded up, at least 1). What `corral daemon` should default to.
int expected_usable_cpus();

// Polls `done` every ~20 ms until it returns true, and returns the time it first did. On the
// deadline, fails the current test with "timed out after T waiting for <what>", plus whatever
// `describe` returns (the state last seen) when one is given.
Clock::time_point wait_for(const std::function<bool()>& done, milliseconds timeout,
                           const std::string& what,
                           const std::function<std::string()>& describe = {});
// Checks `holds` every ~20 ms for `duration` and fails the current test as soon as it does not
// hold ("<what> stopped holding after T"). For "nothing more happens" assertions.
void hold_for(const std::function<bool()>& holds, milliseconds duration, const std::string& what,
              const std::function<std::string()>& describe = {});

// --- temporary home ---

// A fresh directory /tmp/corral-it-XXXXXX (short: the control socket's path must fit in 108
// bytes). Removed on destruction when the test case passed; kept when it failed (an assertion
// failed, or an exception is unwinding), with its path and the tail of its logs printed.
class TempHome {
 public:
  TempHome();
  ~TempHome();
  TempHome(const TempHome&) = delete;
  TempHome& operator=(const TempHome&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string socket_path() const { return file("corral.sock"); }
  std::string master_log() const { return file("logs/master.log"); }
  // Writes `config` as H/corral.json and returns its path.
  std::string write_config(const Json& config) const;

 private:
  std::string path_;
};

// Whether an assertion of the running test case has failed so far (tracked by a Catch2
// listener that the harness registers).
bool current_test_failed();

// The whole contents of a file, or "" if it cannot be read.
std::string read_file(const std::string& path);
// The last `n` lines of a file.
std::string tail_file(const std::string& path, size_t n);
// The lines of `text`, without their line breaks.
std::vector<std::string> lines_of(const std::string& text);

// --- the CLI ---

struct CliResult {
  int exit_code = -1;  // -1 if it was killed (e.g. on the timeout)
  std::string out;
  std::string err;
  std::string describe() const;  // "exit 3; stdout: ...; stderr: ..." for failure messages
};

// Runs `corral <args...>` to completion (killing it after `timeout`, which fails the test).
// The environment is the test's own, without CORRAL_TEST_FAULT, with CORRAL_HOME=`home` when
// given, plus `env`.
CliResult run_cli(const std::vector<std::string>& args, const std::string& home = "",
                  const std::map<std::string, std::string>& env = {},
                  milliseconds timeout = seconds(30));
// The same for any program, e.g. the daemon under `unshare`.
CliResult run_program(const std::string& exe, const std::vector<std::string>& args,
                      const std::string& home = "",
                      const std::map<std::string, std::string>& env = {},
                      milliseconds timeout = seconds(30));

// --- HTTP ---

struct ApiResponse {
  int status = 0;
  std::string body;
  Json json;  // the body parsed as JSON, null when it is not JSON
};

// Sends a request over the unix socket; nullopt when nothing answers (no socket, refused,
// timeout). Does not fail the test.
std::optional<ApiResponse> try_unix_request(const std::string& socket_path,
                                            const std::string& method, const std::string& path,
                                            const std::string& body = "",
                                            milliseconds timeout = seconds(3));
// The same over TCP.
std::optional<ApiResponse> try_tcp_request(const std::string& host, int port,
                                           const std::string& method, const std::string& path,
                                           const std::string& body = "",
                                           milliseconds timeout = seconds(3));
// The value of the sample line of a Prometheus text exposition that starts with `series`
// ("name{labels}"), or -1 when there is none.
double metric_sample(const std::string& metrics, const std::string& series);
// Writes `raw` bytes to host:port over a plain TCP socket and returns what comes back until the
// peer closes or `timeout` passes (no HTTP client in between, for malformed requests).
std::string raw_tcp_exchange(const std::string& host, int port, const std::string& raw,
                             milliseconds timeout = seconds(3));

// --- the daemon ---

struct DaemonOptions {
  std::optional<int> workers;                 // --workers N; none: the daemon's default
  std::optional<Json> config;                 // written to H/corral.json, passed as --config
  std::vector<std::string> extra_args;        // e.g. {"--max-memory", "64MB"}
  std::map<std::string, std::string> env;     // added to the environment, e.g. CORRAL_TEST_FAULT
  milliseconds health_timeout = seconds(10);  // how long the constructor waits for /health
  int pin_to_cpu = -1;  // >= 0: the daemon's affinity mask holds only this CPU
  std::string binary;   // the corral executable to start; empty: corral_binary()
  // A network namespace to start it in (tools/netns-cluster, tests/support/harness_netns.h), and
  // the address it listens on there; empty: the test's own namespace, 127.0.0.1.
  std::string netns;
  std::string listen_host = "127.0.0.1";

  // Chainable setters: DaemonOptions().with_workers(2).with_config({...}).
  DaemonOptions& with_workers(int n) {
    workers = n;
    return *this;
  }
  DaemonOptions& with_config(Json c) {
    config = std::move(c);
    return *this;
  }
  DaemonOptions& with_args(std::vector<std::string> a) {
    extra_args = std::move(a);
    return *this;
  }
  DaemonOptions& with_env(const std::string& k, const std::string& v) {
    env[k] = v;
    return *this;
  }
  DaemonOptions& from_binary(std::string path) {
    binary = std::move(path);
    return *this;
  }
  DaemonOptions& pinned_to(int cpu) {
    pin_to_cpu = cpu;
    return *this;
  }
  // Listening on another address than loopback, the daemon needs an API token; the tests use
  // its unix socket, which needs none.
  DaemonOptions& in_netns(std::string ns, std::string host) {
    netns = std::move(ns);
    listen_host = std::move(host);
    env["CORRAL_API_TOKEN"] = "partition-test-token";
    return *this;
  }
};

// One `corral daemon --listen 127.0.0.1:0 --home H ...` started with Boost.Process, in the
// working directory H (so core dumps of aborted workers land there), stdout and stderr to
// H/daemon-N.out. The destructor SIGKILLs the daemon if it still runs, then kills
// any worker PID it recorded that outlived it.
class Daemon {
 public:
  // Starts the daemon and waits until /health answers (fails the test otherwise).
  Daemon(const TempHome& home, DaemonOptions options = {});
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Adopts a daemon started some other way (`corral start`): its PID is read from H/corral.pid.
  // It gets the same cleanup; wait_exit() cannot report an exit code for it.
  static std::unique_ptr<Daemon> adopt(const TempHome& home);

  pid_t pid() const { return pid_; }
  const TempHome& home() const { return home_; }
  // H/daemon-N.out: the daemon's stdout and stderr.
  const std::string& output_path() const { return output_path_; }

  // A request over the unix socket; fails the test when nothing answers.
  ApiResponse api(const std::string& method, const std::string& path, const std::string& body = "");
  std::optional<ApiResponse> try_api(const std::string& method, const std::string& path,
                                     const std::string& body = "");
  Json health();
  // GET /workers -> the "workers" array; every PID in it is recorded for cleanup.
  Json workers();
  // The entry of `slot` in workers(), or null when there is none.
  Json worker(int slot);
  // Polls `done` every ~20 ms; on the deadline fails the test naming `what` and showing the
  // last /workers answer. Returns the time `done` first held.
  Clock::time_point wait_until(const std::function<bool()>& done, milliseconds timeout,
                               const std::string& what);
  // Waits until `n` slots exist and all of them are ready; returns the workers array.
  Json wait_ready(int n, milliseconds timeout = seconds(10));

  void signal(int signum);
  // True until the daemon process has exited (and, for a child, been reaped).
  bool running();
  // Waits for the daemon to exit; returns its exit code (128 + N if killed by signal N). Fails
  // the test on the deadline. For an adopted daemon, returns 0 once the process is gone.
  int wait_exit(milliseconds timeout);
  // Every worker PID seen in /workers so far.
  std::set<pid_t> seen_worker_pids() const;

 private:
  struct Child;
  Daemon(const TempHome& home, pid_t adopted_pid);
  void record(const Json& workers);

  const TempHome& home_;
  std::unique_ptr<Child> child_;  // null for an adopted daemon
  pid_t pid_ = 0;
  unsigned long long start_time_ = 0;
  std::optional<int> exit_code_;
  std::string output_path_;
  std::map<pid_t, unsigned long long> worker_pids_;  // PID -> start time
  std::string last_workers_;
};

// The `state` of each entry in a workers array, e.g. {"ready", "ready"}.
std::vector<std::string> states_of(const Json& workers);
// How many entries of a workers array are in `state`.
int count_state(const Json& workers, const std::string& state);

// The daemon's TCP port, from /health "listen" ("127.0.0.1:PORT").
int tcp_port(Daemon& d);

}  // namespace corral::test
