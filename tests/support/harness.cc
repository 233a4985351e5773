#include "tests/support/harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include "shared/http/blocking_client.h"

namespace corral::test {
namespace {

namespace bp = boost::process;
namespace fs = std::filesystem;

constexpr milliseconds kPoll{20};

// --- failure tracking: TempHome keeps the evidence of a failed test case ---

bool g_test_failed = false;

struct FailureListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(const Catch::TestCaseInfo& info) override {
    g_test_failed = false;
    TestEventListenerBase::testCaseStarting(info);
  }
  bool assertionEnded(const Catch::AssertionStats& stats) override {
    if (!stats.assertionResult.isOk()) g_test_failed = true;
    return true;
  }
};

std::string millis_text(milliseconds d) { return std::to_string(d.count()) + " ms"; }

// Fields of /proc/<pid>/stat after the command name, which may itself hold spaces and ')'.
std::vector<std::string> stat_fields(pid_t pid) {
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream in(stat.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  return fields;  // [0] is field 3 (state), [19] is field 22 (starttime)
}

bool same_process(pid_t pid, unsigned long long start_time) {
  return pid > 0 && start_time != 0 && process_start_time(pid) == start_time;
}

// Kills `pid` with SIGKILL only if it is still the process that started at `start_time`.
void kill_if_same(pid_t pid, unsigned long long start_time) {
  if (same_process(pid, start_time) && process_alive(pid)) ::kill(pid, SIGKILL);
}

std::optional<ApiResponse> to_response(Result<http::HttpResult> r) {
  if (!r) return std::nullopt;
  ApiResponse out;
  out.status = r->status;
  out.body = r->body;
  out.json = r->json();
  return out;
}

bp::environment child_environment(const std::string& home,
                                  const std::map<std::string, std::string>& extra) {
  bp::environment env = boost::this_process::environment();
  // A fault left in the developer's shell must not leak into every test.
  if (env.count("CORRAL_TEST_FAULT") != 0) env.erase("CORRAL_TEST_FAULT");
  if (!home.empty()) env["CORRAL_HOME"] = home;
  for (const auto& [k, v] : extra) env[k] = v;
  return env;
}

int decode_wait_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::string temp_file(const char* tag) {
  std::string name = std::string("/tmp/corral-") + tag + "-XXXXXX";
  int fd = ::mkstemp(name.data());
  REQUIRE(fd >= 0);
  ::close(fd);
  return name;
}

}  // namespace

CATCH_REGISTER_LISTENER(FailureListener)

bool current_test_failed() { return g_test_failed || std::uncaught_exceptions() > 0; }

std::string corral_binary() {
  // CORRAL_TEST_BINARY runs the suite against another build (e.g. an installed corral).
  const char* other = std::getenv("CORRAL_TEST_BINARY");
  return other != nullptr && *other != '\0' ? other : CORRAL_BINARY;
}

// --- processes ---

bool process_alive(pid_t pid) {
  if (pid <= 0) return false;
  std::vector<std::string> f = stat_fields(pid);
  if (f.empty()) return false;
  return f[0] != "Z" && f[0] != "X" && f[0] != "x";
}

unsigned long long process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  std::vector<std::string> f = stat_fields(pid);
  if (f.size() < 20) return 0;
  return std::stoull(f[19]);
}

int expected_usable_cpus() {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  REQUIRE(sched_getaffinity(0, sizeof(mask), &mask) == 0);
  int cpus = CPU_COUNT(&mask);
  // cgroup v2: the line "0::<path>" of /proc/self/cgroup; a quota anywhere up the tree applies.
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    for (fs::path p = fs::path("/sys/fs/cgroup") / fs::path(line.substr(3)).relative_path();;
         p = p.parent_path()) {
      std::istringstream max(read_file((p / "cpu.max").string()));
      std::string quota;
      double period = 0;
      if (max >> quota >> period && quota != "max" && period > 0) {
        int limit = static_cast<int>(std::ceil(std::stod(quota) / period));
        cpus = std::min(cpus, std::max(limit, 1));
      }
      if (p == "/sys/fs/cgroup" || !p.has_parent_path() || p == p.parent_path()) break;
    }
  }
  return std::max(cpus, 1);
}

Clock::time_point wait_for(const std::function<bool()>& done, milliseconds timeout,
                           const std::string& what, const std::function<std::string()>& describe) {
  const auto start = Clock::now();
  const auto deadline = start + timeout;
  while (true) {
    auto now = Clock::now();
    if (done()) return now;
    if (now >= deadline) break;
    std::this_thread::sleep_for(kPoll);
  }
  std::string msg = "timed out after " + millis_text(timeout) + " waiting for " + what;
  if (describe) msg += "\nlast seen: " + describe();
  FAIL(msg);
  return Clock::now();  // not reached: FAIL throws
}

void hold_for(const std::function<bool()>& holds, milliseconds duration, const std::string& what,
              const std::function<std::string()>& describe) {
  const auto start = Clock::now();
  const auto end = start + duration;
  while (true) {
    auto now = Clock::now();
    if (!holds()) {
      std::string msg = what + " stopped holding after " +
                        millis_text(std::chrono::duration_cast<milliseconds>(now - start));
      if (describe) msg += "\nlast seen: " + describe();
      FAIL(msg);
    }
    if (now >= end) return;
    std::this_thread::sleep_for(kPoll);
  }
}

// --- files and the temporary home ---

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

double metric_sample(const std::string& metrics, const std::string& series) {
  size_t at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + series.size() + 2));
}

std::string tail_file(const std::string& path, size_t n) {
  std::istringstream in(read_file(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::string out;
  for (size_t i = lines.size() > n ? lines.size() - n : 0; i < lines.size(); ++i) {
    out += "    " + lines[i] + "\n";
  }
  return out;
}

TempHome::TempHome() {
  std::string templ = "/tmp/corral-it-XXXXXX";
  REQUIRE(::mkdtemp(templ.data()) != nullptr);
  path_ = templ;
}

TempHome::~TempHome() {
  if (!current_test_failed()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
    return;
  }
  std::cerr << "\n=== test failed: kept CORRAL_HOME " << path_ << "\n";
  std::cerr << "--- tail of " << master_log() << ":\n" << tail_file(master_log(), 40);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("daemon-", 0) == 0 && entry.path().extension() == ".out") {
      std::cerr << "--- tail of " << entry.path().string() << ":\n"
                << tail_file(entry.path().string(), 20);
    }
  }
  std::cerr << "===\n";
}

std::string TempHome::write_config(const Json& config) const {
  const std::string path = file("corral.json");
  std::ofstream out(path, std::ios::trunc);
  out << config.dump(2) << "\n";
  out.close();
  REQUIRE(out.good());
  return path;
}

// --- the CLI ---

std::string CliResult::describe() const {
  return "exit " + std::to_string(exit_code) + "\n--- stdout:\n" + out + "--- stderr:\n" + err;
}

CliResult run_cli(const std::vector<std::string>& args, const std::string& home,
                  const std::map<std::string, std::string>& env, milliseconds timeout) {
  return run_program(corral_binary(), args, home, env, timeout);
}

CliResult run_program(const std::string& exe, const std::vector<std::string>& args,
                      const std::string& home, const std::map<std::string, std::string>& env,
                      milliseconds timeout) {
  // Files, not pipes: `corral start` leaves a daemon behind that must not hold our pipe open.
  const std::string out_path = temp_file("out");
  const std::string err_path = temp_file("err");
  std::error_code ec;
  bp::child cli(bp::exe = exe, bp::args = args, bp::env = child_environment(home, env),
                bp::std_in<bp::null, bp::std_out> boost::filesystem::path(out_path),
                bp::std_err > boost::filesystem::path(err_path), ec);
  INFO(exe << " " << [&] {
    std::string s;
    for (const auto& a : args) s += a + " ";
    return s;
  }());
  REQUIRE_FALSE(ec);
  CliResult r;
  const auto deadline = Clock::now() + timeout;
  bool timed_out = false;
  while (cli.running(ec)) {
    if (Clock::now() >= deadline) {
      ::kill(cli.id(), SIGKILL);
      cli.wait(ec);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(kPoll);
  }
  r.exit_code = timed_out ? -1 : decode_wait_status(cli.native_exit_code());
  r.out = read_file(out_path);
  r.err = read_file(err_path);
  ::unlink(out_path.c_str());
  ::unlink(err_path.c_str());
  if (timed_out)
    FAIL(exe << " did not finish within " << millis_text(timeout) << "\n" << r.describe());
  return r;
}

// --- HTTP ---

std::optional<ApiResponse> try_unix_request(const std::string& socket_path,
                                            const std::string& method, const std::string& path,
                                            const std::string& body, milliseconds timeout) {
  return to_response(http::request(http::Target::over_unix(socket_path), method, path, body,
                                   static_cast<long>(timeout.count())));
}

std::optional<ApiResponse> try_tcp_request(const std::string& host, int port,
                                           const std::string& method, const std::string& path,
                                           const std::string& body, milliseconds timeout) {
  return to_response(http::request(http::Target::over_tcp(host, port), method, path, body,
                                   static_cast<long>(timeout.count())));
}

std::string raw_tcp_exchange(const std::string& host, int port, const std::string& raw,
                             milliseconds timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  REQUIRE(::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    FAIL("cannot connect to " << host << ":" << port);
  }
  size_t sent = 0;
  while (sent < raw.size()) {
    ssize_t n = ::send(fd, raw.data() + sent, raw.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  // Read until the peer closes, or until one whole response (headers + Content-Length) is in.
  std::string got;
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    size_t head_end = got.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      std::string head = got.substr(0, head_end);
      for (auto& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      size_t cl = head.find("content-length:");
      if (cl != std::string::npos &&
          got.size() >= head_end + 4 + std::stoul(head.substr(cl + 15))) {
        break;
      }
    }
    pollfd p{fd, POLLIN, 0};
    auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return got;
}

// --- the daemon ---

struct Daemon::Child {
  bp::child process;
};

Daemon::Daemon(const TempHome& home, DaemonOptions options) : home_(home) {
  static int counter = 0;
  output_path_ = home.file("daemon-" + std::to_string(++counter) + ".out");
  std::vector<std::string> args = {"daemon", "--listen", options.listen_host + ":0", "--home",
                                   home.path()};
  if (options.workers) args.insert(args.end(), {"--workers", std::to_string(*options.workers)});
  if (options.config) args.insert(args.end(), {"--config", home.write_config(*options.config)});
  args.insert(args.end(), options.extra_args.begin(), options.extra_args.end());

  const int cpu = options.pin_to_cpu;
  std::string exe = options.binary.empty() ? corral_binary() : options.binary;
  if (!options.netns.empty()) {  // `ip netns exec` execs the daemon: the pid stays its own
    args.insert(args.begin(), {"netns", "exec", options.netns, exe});
    exe = bp::search_path("ip").string();
  }
  std::error_code ec;
  child_ = std::make_unique<Child>(Child{bp::child(
      bp::exe = exe, bp::args = args, bp::env = child_environment(home.path(), options.env),
      bp::start_dir = home.path(),
      bp::std_in<bp::null, (bp::std_out & bp::std_err)> boost::filesystem::path(output_path_),
      bp::extend::on_exec_setup =
          [cpu](auto&) {
            if (cpu < 0) return;
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            if (sched_setaffinity(0, sizeof(one), &one) != 0) _exit(127);
          },
      ec)});
  REQUIRE_FALSE(ec);
  pid_ = child_->process.id();
  start_time_ = process_start_time(pid_);

  wait_for(
      [&] {
        if (!running()) {
          FAIL("corral daemon exited during start-up (code " << exit_code_.value_or(-1)
                                                             << "); its output:\n"
                                                             << read_file(output_path_));
        }
        auto h = try_api("GET", "/health");
        return h && h->status == 200;
      },
      options.health_timeout, "the daemon's /health to answer on " + home.socket_path(),
      [&] { return read_file(output_path_); });
}

Daemon::Daemon(const TempHome& home, pid_t adopted_pid) : home_(home), pid_(adopted_pid) {
  start_time_ = process_start_time(pid_);
}

std::unique_ptr<Daemon> Daemon::adopt(const TempHome& home) {
  std::string text = read_file(home.file("corral.pid"));
  INFO("pid file " << home.file("corral.pid") << ": '" << text << "'");
  REQUIRE(!text.empty());
  pid_t pid = static_cast<pid_t>(std::stol(text));
  REQUIRE(process_alive(pid));
  return std::unique_ptr<Daemon>(new Daemon(home, pid));
}

Daemon::~Daemon() {
  // The daemon first, so its workers see their IPC pipe close and leave by themselves.
  if (running()) {
    kill_if_same(pid_, start_time_);
    const auto deadline = Clock::now() + seconds(5);
    while (running() && Clock::now() < deadline) std::this_thread::sleep_for(kPoll);
  }
  const auto deadline = Clock::now() + seconds(3);
  auto any_left = [&] {
    for (const auto& [pid, start] : worker_pids_) {
      if (same_process(pid, start) && process_alive(pid)) return true;
    }
    return false;
  };
  while (any_left() && Clock::now() < deadline) std::this_thread::sleep_for(kPoll);
  for (const auto& [pid, start] : worker_pids_) {
    if (same_process(pid, start) && process_alive(pid)) {
      std::cerr << "harness: worker pid " << pid << " outlived its daemon; killing it\n";
      kill_if_same(pid, start);
    }
  }
  if (child_) {
    std::error_code ec;
    if (child_->process.running(ec)) child_->process.wait(ec);
    child_->process.detach();  // already reaped; nothing left for bp::child to terminate
  }
}

std::optional<ApiResponse> Daemon::try_api(const std::string& method, const std::string& path,
                                           const std::string& body) {
  return try_unix_request(home_.socket_path(), method, path, body);
}

ApiResponse Daemon::api(const std::string& method, const std::string& path,
                        const std::string& body) {
  auto r = try_api(method, path, body);
  if (!r) FAIL("no answer to " << method << " " << path << " on " << home_.socket_path());
  return *r;
}

Json Daemon::health() {
  ApiResponse r = api("GET", "/health");
  INFO("GET /health: " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  return r.json;
}

void Daemon::record(const Json& workers) {
  for (const auto& w : workers) {
    pid_t pid = w.value("pid", 0);
    if (pid > 0 && worker_pids_.count(pid) == 0) {
      unsigned long long start = process_start_time(pid);
      if (start != 0) worker_pids_[pid] = start;
    }
  }
}

Json Daemon::workers() {
  ApiResponse r = api("GET", "/workers");
  INFO("GET /workers: " << r.status << " " << r.body);
  REQUIRE(r.status == 200);
  REQUIRE(r.json.contains("workers"));
  REQUIRE(r.json["workers"].is_array());
  last_workers_ = r.body;
  record(r.json["workers"]);
  return r.json["workers"];
}

Json Daemon::worker(int slot) {
  for (const auto& w : workers()) {
    if (w.value("slot", -1) == slot) return w;
  }
  return nullptr;
}

Clock::time_point Daemon::wait_until(const std::function<bool()>& done, milliseconds timeout,
                                     const std::string& what) {
  return wait_for(done, timeout, what, [&] {
    auto r = try_api("GET", "/workers");
    return r ? "GET /workers -> " + r->body : "no answer on " + home_.socket_path();
  });
}

Json Daemon::wait_ready(int n, milliseconds timeout) {
  Json list;
  wait_until(
      [&] {
        list = workers();
        return static_cast<int>(list.size()) == n && count_state(list, "ready") == n;
      },
      timeout, std::to_string(n) + " workers ready");
  return list;
}

void Daemon::signal(int signum) {
  REQUIRE(same_process(pid_, start_time_));
  REQUIRE(::kill(pid_, signum) == 0);
}

bool Daemon::running() {
  if (!child_) return same_process(pid_, start_time_) && process_alive(pid_);
  if (exit_code_) return false;
  std::error_code ec;
  if (child_->process.running(ec)) return true;
  if (ec) return false;
  exit_code_ = decode_wait_status(child_->process.native_exit_code());
  return false;
}

int Daemon::wait_exit(milliseconds timeout) {
  wait_for([&] { return !running(); }, timeout,
           "the daemon (pid " + std::to_string(pid_) + ") to exit");
  return child_ ? exit_code_.value_or(-1) : 0;
}

std::set<pid_t> Daemon::seen_worker_pids() const {
  std::set<pid_t> out;
  for (const auto& [pid, start] : worker_pids_) out.insert(pid);
  return out;
}

std::vector<std::string> states_of(const Json& workers) {
  std::vector<std::string> out;
  for (const auto& w : workers) out.push_back(w.value("state", ""));
  return out;
}

int count_state(const Json& workers, const std::string& state) {
  int n = 0;
  for (const auto& w : workers) n += w.value("state", "") == state ? 1 : 0;
  return n;
}

int tcp_port(Daemon& d) {
  const std::string listen = d.health().at("listen");
  INFO("listen: " << listen);
  REQUIRE(listen.rfind("127.0.0.1:", 0) == 0);
  int port = std::stoi(listen.substr(10));
  REQUIRE(port > 0);
  return port;
}

}  // namespace corral::test
