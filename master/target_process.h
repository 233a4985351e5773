// A load test's target, started by the daemon (a load section's "target", load::TargetCommand):
// in a process group of its own, through `target-exec` so that it dies with the daemon
// (master/target_exec.h). It is ready once its check passes (a URL answers 2xx, a line of its
// output matches, a port accepts), or at once without one. Its last lines of stdout and stderr
// and its peak RSS are kept, and stop() ends its group: SIGTERM, then SIGKILL after the grace.
// Destroying it kills what is left of the group at once. Loop thread only.
#pragma once

#include <uv.h>

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "config/load/model.h"
#include "shared/status.h"
#include "shared/uv/process.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"

namespace re2 {
class RE2;
}

namespace corral::master {

class TargetProcess {
 public:
  // The lines kept, each cut at kMaxLineBytes.
  static constexpr size_t kMaxLines = 100;
  static constexpr size_t kMaxLineBytes = 2000;

  struct Line {
    bool err = false;  // stderr, else stdout
    std::string text;
  };
  struct Exit {
    int64_t exit_code = 0;
    int signal = 0;        // the signal that ended it; 0 when it exited
    bool stopped = false;  // it ended after stop() asked it to
  };
  // Once: ok when it is ready; else why not (it ended first, it did not start, it was not ready
  // in time). It is stopped then.
  using OnReady = std::function<void(Status)>;
  // Once, when it ends after it was ready. May destroy the TargetProcess.
  using OnExit = std::function<void(Exit)>;

  // Fails when the command cannot be started at all (target-exec itself not found). `corral`
  // is the binary with the target-exec role: the daemon's own, or the one tests built.
  static Result<std::unique_ptr<TargetProcess>> start(uv_loop_t* loop, load::TargetCommand cmd,
                                                      OnReady on_ready, OnExit on_exit,
                                                      const std::string& corral = "/proc/self/exe");
  ~TargetProcess();
  TargetProcess(const TargetProcess&) = delete;
  TargetProcess& operator=(const TargetProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running() const { return !exit_; }
  // SIGTERM to its group, SIGKILL to what is left after the command's stop_grace.
  void stop();

  const std::deque<Line>& lines() const { return lines_; }
  // The last line that says it ran out of memory ("JavaScript heap out of memory",
  // "OutOfMemoryError", ...), or "" when none did.
  const std::string& cause() const { return cause_; }
  // The most it held resident, as last read (every 250 ms while it runs).
  uint64_t rss_peak() const { return rss_peak_; }

 private:
  struct Probe;
  explicit TargetProcess(uv_loop_t* loop, load::TargetCommand cmd);
  void on_output(bool err, std::string_view bytes);
  void add_line(bool err, std::string text);
  void on_exit(int64_t exit_status, int term_signal);
  void on_tick();
  void probe();
  static void on_probed(uv_work_t* req, int status);
  void ready(Status s);
  void on_stream_end();
  // Calls on_ready, then on_exit, from a timer of their own: never from inside a stream's or
  // the process's callback, so that either may destroy this.
  void deliver();
  void kill_group(int signum);

  uv_loop_t* loop_;
  load::TargetCommand cmd_;
  OnReady on_ready_;
  OnExit on_exit_;
  std::unique_ptr<uv::Stream> out_, err_;
  std::unique_ptr<uv::Process> process_;
  pid_t pid_ = 0;
  std::string partial_[2];  // a line not ended yet, per stream
  std::deque<Line> lines_;
  std::string cause_;
  uint64_t rss_peak_ = 0;
  uint64_t started_ms_ = 0;
  std::unique_ptr<re2::RE2> ready_log_;
  std::optional<Status> ready_;  // answered, not yet delivered while on_ready_ is set
  bool stopping_ = false;
  std::unique_ptr<Exit> exit_;
  int open_streams_ = 2;  // its output is read to the end before its exit is told
  bool drained_ = false;
  uv::Timer tick_, grace_, drain_, deliver_;
  Probe* probing_ = nullptr;  // on the pool
};

}  // namespace corral::master
