// `corral monit` in a real terminal: tmux runs it against a daemon with work in progress, and the
// test reads the pane as a user would see it, then quits with q.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/process.hpp>
#include <catch2/catch.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/support/harness.h"
#include "tests/support/harness_job_api.h"
#include "tests/support/harness_runs.h"

using namespace corral::test;

namespace {

namespace bp = boost::process;

constexpr const char* kSession = "monit";

// A tmux server of the test's own (tmux -L with a name no other server uses, and a config file
// of its own) with one session, whose pane stays after its command exits. The destructor kills
// the server and, by PID, whatever outlived it.
class Tmux {
 public:
  explicit Tmux(const TempHome& home)
      : config_(home.file("tmux.conf")), end_file_(home.file("pane.end")) {
    static std::atomic<int> count{0};
    name_ = "corral-monit-" + std::to_string(::getpid()) + "-" + std::to_string(++count);
    tmux_ = bp::search_path("tmux").string();
    REQUIRE_FALSE(tmux_.empty());  // tools/install-deps installs it
    std::ofstream(config_) << "set -g remain-on-exit on\nset -g status off\n";
  }

  ~Tmux() {
    // Nothing may throw here: this also runs while a failed test unwinds.
    std::vector<std::pair<pid_t, unsigned long long>> pids = {{server_pid_, server_start_},
                                                              {pane_pid_, pane_start_}};
    for (pid_t child : children_of(pane_pid_)) pids.emplace_back(child, process_start_time(child));
    std::error_code ec;
    bp::system(bp::exe = tmux_, bp::args = with_server({"kill-server"}),
               bp::std_in<bp::null, bp::std_out> bp::null, bp::std_err > bp::null, ec);
    for (const auto& [pid, start] : pids) {
      if (start != 0 && process_start_time(pid) == start && process_alive(pid)) {
        ::kill(pid, SIGKILL);
      }
    }
  }

  // Starts `command` in a 160x50 pane, under a shell that then writes to a file how it ended:
  // "<exit status> <yes|no>", yes when the terminal's settings (stty -g) are as before. tmux 3.3
  // does not always report a dead pane's status (#{pane_dead_status} stays empty). The shell
  // lives through Ctrl-C (trap) to write it.
  void start(const std::vector<std::string>& command) {
    const std::string script =
        "trap : INT; tty=$(stty -g); \"$0\" \"$@\"; code=$?; "
        "[ \"$(stty -g)\" = \"$tty\" ] && same=yes || same=no; echo \"$code $same\" > " +
        end_file_;
    std::vector<std::string> args = {"new-session", "-d",     "-x",      "160", "-y",  "50",
                                     "-s",          kSession, "/bin/sh", "-c",  script};
    args.insert(args.end(), command.begin(), command.end());
    CliResult r = run(args);
    INFO(r.describe());
    REQUIRE(r.exit_code == 0);
    server_pid_ = std::stoi(query("#{pid}"));
    server_start_ = process_start_time(server_pid_);
    pane_pid_ = std::stoi(query("#{pane_pid}"));
    pane_start_ = process_start_time(pane_pid_);
  }

  // What the pane shows, one line per row.
  std::string screen() { return run({"capture-pane", "-p", "-t", kSession}).out; }
  void press(const std::string& key) {
    REQUIRE(run({"send-keys", "-t", kSession, key}).exit_code == 0);
  }
  void resize(int columns, int rows) {
    REQUIRE(run({"resize-window", "-t", kSession, "-x", std::to_string(columns), "-y",
                 std::to_string(rows)})
                .exit_code == 0);
  }
  // How the command ended ("0 yes": exit status 0, the terminal's settings restored), or ""
  // while it runs.
  std::string ending() const {
    const std::string text = read_file(end_file_);
    return text.empty() || text.back() != '\n' ? "" : text.substr(0, text.size() - 1);
  }

 private:
  CliResult run(const std::vector<std::string>& args) {
    return run_program(tmux_, with_server(args), "", {}, seconds(10));
  }
  // A tmux format of the pane, e.g. "#{pane_pid}".
  std::string query(const std::string& format) {
    std::string out = run({"display-message", "-p", "-t", kSession, format}).out;
    return out.substr(0, out.find('\n'));
  }
  std::vector<std::string> with_server(const std::vector<std::string>& args) const {
    std::vector<std::string> all = {"-L", name_, "-f", config_};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }
  static std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    if (pid <= 0) return out;
    std::istringstream in(
        read_file("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children"));
    for (pid_t child; in >> child;) out.push_back(child);
    return out;
  }

  std::string tmux_;
  std::string name_;
  std::string config_;
  std::string end_file_;
  pid_t server_pid_ = 0;
  pid_t pane_pid_ = 0;
  unsigned long long server_start_ = 0;
  unsigned long long pane_start_ = 0;
};

// The cells of a table row, trimmed: split at │ (or | where the locale is not UTF-8).
std::vector<std::string> cells_of(std::string line) {
  for (size_t at; (at = line.find("│")) != std::string::npos;) line.replace(at, 3, "|");
  std::vector<std::string> cells;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, '|');) {
    std::istringstream words(cell);
    std::string trimmed;
    for (std::string w; words >> w;) trimmed += (trimmed.empty() ? "" : " ") + w;
    cells.push_back(trimmed);
  }
  return cells;
}

// The cells of the row of `worker` (its slot and pid, ready) on `screen`; empty when none shows.
// [1] is the slot, [6] the CPU with its history, [9] the active instances with theirs.
std::vector<std::string> worker_row(const std::string& screen, const Json& worker) {
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells = cells_of(line);
    if (cells.size() > 9 && cells[1] == worker["slot"].dump() && cells[2] == worker["pid"].dump() &&
        cells[3] == "ready") {
      return cells;
    }
  }
  return {};
}

// Both workers show with a CPU use read from /proc (a number, not "-"), and the instances they
// run add up to `instances`.
bool shows_workers(const std::string& screen, const Json& workers, int instances) {
  int active = 0;
  for (const Json& w : workers) {
    const std::vector<std::string> row = worker_row(screen, w);
    if (row.empty() || row[6].find('%') == std::string::npos) return false;
    active += std::atoi(row[9].c_str());
  }
  return active == instances;
}

// A line of `screen` that holds all of `parts`.
bool shows_line(const std::string& screen, const std::vector<std::string>& parts) {
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) {
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return true;
  }
  return false;
}

// The job-poll scenario whose first step expects a status the job API never answers.
Json failing_scenario() {
  Json s = job_poll_scenario("monit-fails", 1000, "500ms");
  s["steps"][0]["expect"] = Json::array({{{"status", 418}}});
  return s;
}

// Whether the top border of the screen's first table ends within `columns` (tmux cuts a line
// that a resize made too long, and a cut line has no corner at its end).
bool first_table_fits(const std::string& screen, size_t columns) {
  std::istringstream in(screen);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("┌", 0) != 0 && line.rfind("+-", 0) != 0) continue;
    const size_t width = std::count_if(line.begin(), line.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // UTF-8 code points
    });
    const bool closed = line.ends_with("┐") || line.ends_with("+");
    return closed && width <= columns;
  }
  return false;
}

// Presses `key` and expects monit to exit with status 0, the terminal as it found it.
void quit_with(Tmux& tmux, const std::string& key) {
  tmux.press(key);
  wait_for([&] { return !tmux.ending().empty(); }, seconds(10), "monit to exit after " + key,
           [&] { return tmux.screen(); });
  CHECK(tmux.ending() == "0 yes");
}

}  // namespace

TEST_CASE("monit: shows the workers, the runs with progress and failures, the logs, and q quits") {
  TempHome home;
  JobApi api;
  Daemon d(home, DaemonOptions().with_workers(2));
  d.wait_ready(2);
  const std::string polling =
      submit_run(d, job_poll_scenario("monit-polls", 120000, "500ms"), 200, api);
  const std::string failing = submit_run(d, failing_scenario(), 3, api);
  d.wait_until([&] { return run_of(d, polling)["counts"].value("running", 0) == 200; }, seconds(30),
               "every instance of the polling run to run");
  wait_run_finished(d, failing, seconds(30));

  Tmux tmux(home);
  tmux.start({corral_binary(), "--home", home.path(), "monit"});
  std::string screen;
  wait_for(
      [&] {
        screen = tmux.screen();
        Json workers = d.workers();
        return workers.size() == 2 && shows_workers(screen, workers, 200) &&
               shows_line(screen, {polling, "monit-polls", "running", "0/200 0%"}) &&
               shows_line(screen, {failing, "3/3 100%"}) &&
               shows_line(screen, {failing + ": 3 x step 0 (start):"}) &&
               shows_line(screen, {"run " + polling + ": 200 instances of"});
      },
      seconds(20), "monit to show both workers, the runs and a log line", [&] { return screen; });
  std::cout << "monit, 160x50:\n" << screen;  // the screen that docs/operations.md shows
  quit_with(tmux, "q");
}

TEST_CASE("monit: says so while the daemon is not answering, keeps asking, and Ctrl-C quits") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  CliResult piped = run_cli({"monit", "--home", home.path()}, home.path());
  INFO(piped.describe());
  CHECK(piped.exit_code == 1);
  CHECK_THAT(piped.err, Catch::Contains("monit draws on a terminal"));

  Tmux tmux(home);
  tmux.start({corral_binary(), "--home", home.path(), "monit", "--interval", "200ms"});
  wait_for([&] { return tmux.screen().find("refreshing every 200ms") != std::string::npos; },
           seconds(10), "monit to start", [&] { return tmux.screen(); });
  d.signal(SIGTERM);
  d.wait_exit(seconds(20));
  wait_for(
      [&] {
        return tmux.screen().find("daemon not answering on " + home.socket_path()) !=
               std::string::npos;
      },
      seconds(10), "monit to say the daemon is not answering", [&] { return tmux.screen(); });
  CHECK(tmux.ending().empty());  // still running
  quit_with(tmux, "C-c");
}

TEST_CASE("monit: redraws at once when the terminal is resized") {
  TempHome home;
  Daemon d(home, DaemonOptions().with_workers(1));
  d.wait_ready(1);
  Tmux tmux(home);
  // An hour between refreshes: only the resize can redraw the screen.
  tmux.start({corral_binary(), "--home", home.path(), "monit", "--interval", "1h"});
  wait_for([&] { return first_table_fits(tmux.screen(), 160); }, seconds(10), "monit to start",
           [&] { return tmux.screen(); });
  REQUIRE_FALSE(first_table_fits(tmux.screen(), 100));  // drawn for 160 columns
  tmux.resize(100, 30);
  wait_for([&] { return first_table_fits(tmux.screen(), 100); }, seconds(5),
           "monit to redraw for 100 columns", [&] { return tmux.screen(); });
  quit_with(tmux, "q");
}

TEST_CASE("monit: without a running daemon exits 3 with the one-line error") {
  TempHome home;
  CliResult r = run_cli({"monit", "--home", home.path()}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 3);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, Catch::StartsWith("corral: daemon is not running (no answer on " +
                                      home.socket_path() + ")"));
}
