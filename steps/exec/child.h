// One command of an exec step, run with uv::Process (no shell, no fork of the worker) in a process
// group of its own, its stdin /dev/null, its stdout and stderr read into buffers of at most
// `max_output` bytes each. It is done once the command has exited and both pipes are closed; what
// is left of its process group when the command exits is killed then, so that a background child
// holding a pipe cannot keep the step waiting. Loop thread only.
#pragma once

#include <uv.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shared/status.h"
#include "shared/uv/process.h"
#include "shared/uv/stream.h"

namespace corral::steps::exec {

struct Command {
  std::vector<std::string> argv;  // not empty
  std::vector<std::string> env;   // NAME=value, the whole environment
  std::string cwd;                // empty: the worker's
  uint64_t max_output = 0;        // per stream
};

struct Outcome {
  int exit_code = -1;   // -1 when a signal ended it
  int term_signal = 0;  // the signal that ended it, or 0
  std::string out, err;
  bool out_cut = false, err_cut = false;  // more was written than max_output
};

class Child {
 public:
  using Done = std::function<void(Outcome&&)>;
  // Starts `cmd`; fails when it cannot (no such program, a cwd that does not exist). `done`
  // is called once, from the loop, unless the Child is destroyed first.
  static Result<std::unique_ptr<Child>> start(uv_loop_t* loop, const Command& cmd, Done done);
  // Kills the process group (SIGKILL) if the command still runs.
  ~Child();

 private:
  Child(uv_loop_t* loop, uint64_t max_output, Done done);
  void on_exit(int64_t exit_status, int term_signal);
  void read(uv::Stream& pipe, std::string& into, bool& cut);
  void finish_if_done();

  uint64_t max_output_;
  Done done_;
  std::unique_ptr<uv::Process> process_;
  std::unique_ptr<uv::Stream> out_pipe_, err_pipe_;
  pid_t pid_ = 0;
  bool exited_ = false;
  int open_pipes_ = 2;
  Outcome outcome_;
};

}  // namespace corral::steps::exec
