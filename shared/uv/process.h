// A child process started with posix_spawn and watched through a pidfd.
//
// uv_spawn forks. While the parent's loop waits, the kernel copies its page tables (about
// 10 ms for a master of 120 MB), and afterwards the parent takes a copy-on-write fault on each
// page it writes until the child has exec'd. glibc's posix_spawn starts the child with
// CLONE_VM | CLONE_VFORK instead: the child borrows the parent's memory until its exec, so
// starting one costs the same however big the parent is.
//
// The exit is seen on a pidfd (readable once the child has exited) and reaped with waitpid;
// libuv's SIGCHLD handler, which waits only for the pids of its own uv_process_t handles, never
// sees these children. In the child, every signal from 1 to 31 has its default action and none
// is blocked (32 and 33, glibc's own, are left ignored by its posix_spawn); fds other than those in
// Spec::fds are closed at exec when they are close-on-exec, as libuv and corral open every fd.
//
// Destroying a Process that has not exited neither kills it nor waits for it: it is reaped
// then if it has exited already, and is otherwise left to exit unheard. Loop thread only.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/status.h"
#include "shared/uv/handle.h"
#include "shared/uv/stream.h"

namespace corral::uv {

class Process {
 public:
  // What one of the child's fds is.
  struct Fd {
    static Fd null() { return {Kind::kNull, -1, nullptr}; }        // /dev/null
    static Fd inherit() { return {Kind::kInherit, -1, nullptr}; }  // the parent's of that number
    static Fd of(int parent_fd) { return {Kind::kFd, parent_fd, nullptr}; }
    // One end of a new unix stream socket pair; the other is opened into `stream` (a pipe
    // Stream that is not open yet).
    static Fd pipe_to(Stream& stream) { return {Kind::kStream, -1, &stream}; }

    enum class Kind { kNull, kInherit, kFd, kStream } kind;
    int fd;
    Stream* stream;
  };
  struct Spec {
    // Not empty. argv[0] is looked for in PATH when it has no '/': env's PATH when env is
    // given and has one, as execvp in the child would.
    std::vector<std::string> argv;
    std::string file;               // run instead of argv[0] when not empty
    std::optional<std::vector<std::string>> env;  // NAME=value; none: the parent's
    std::string cwd;                              // empty: the parent's
    std::vector<Fd> fds;                          // the child's fds 0, 1, 2, …
    bool new_session = false;  // setsid(): a process group of its own, killed as one
  };
  using OnExit = std::function<void(int64_t exit_status, int term_signal)>;

  // Fails with the reason as libuv words it ("no such file or directory") when the program
  // cannot be started. `on_exit` is called once, from the loop, and may destroy the Process.
  static Result<std::unique_ptr<Process>> spawn(uv_loop_t* loop, const Spec& spec, OnExit on_exit);
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  bool exited() const { return exited_; }
  // Sends `signum` unless the process has been reaped; returns 0 or a libuv error.
  int kill(int signum);

 private:
  Process() = default;
  static void on_readable(uv_poll_t* p, int status, int events);
  void stop_watching();

  Handle<uv_poll_t> poll_;
  OnExit on_exit_;
  pid_t pid_ = 0;
  int pidfd_ = -1;
  bool exited_ = false;
};

}  // namespace corral::uv
