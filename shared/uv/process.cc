#include "shared/uv/process.h"

#include <fcntl.h>
#include <spawn.h>
// glibc 2.36's header lacks extern "C" (fixed in 2.37).
extern "C" {
#include <sys/pidfd.h>
}
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <string_view>

#include "shared/uv/guard.h"

extern char** environ;

namespace corral::uv {
namespace {

std::string reason(int sys_errno) { return uv_strerror(uv_translate_sys_error(sys_errno)); }

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The fds made for one spawn, closed when it is over whatever happens: the child's ends of the
// socket pairs and the copies that keep a source fd clear of the child's fd numbers. The
// parent's ends are closed too unless taken by their streams.
struct SpawnFds {
  ~SpawnFds() {
    for (int fd : temporary) ::close(fd);
    for (int fd : parent_ends) {
      if (fd >= 0) ::close(fd);
    }
  }
  std::vector<int> sources;      // per child fd: the parent fd dup2'd onto it, -1 for /dev/null
  std::vector<int> parent_ends;  // per child fd: the parent's end of its socket pair, or -1
  std::vector<int> temporary;
};

// Decides the source of each of the child's fds. A source below the number of the child's fds
// (other than its own number) is moved above them first, so that no dup2 in the child can
// overwrite a source another one still needs.
Status prepare(const std::vector<Process::Fd>& fds, SpawnFds& out) {
  const int n = static_cast<int>(fds.size());
  for (int i = 0; i < n; ++i) {
    const Process::Fd& fd = fds[static_cast<size_t>(i)];
    int source = -1, parent_end = -1;
    if (fd.kind == Process::Fd::Kind::kInherit) source = i;
    if (fd.kind == Process::Fd::Kind::kFd) source = fd.fd;
    if (fd.kind == Process::Fd::Kind::kStream) {
      int pair[2];
      if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        return io_error("socketpair() failed: " + reason(errno));
      }
      parent_end = pair[0];
      source = pair[1];
      out.temporary.push_back(source);
    }
    if (source >= 0 && source < n && source != i) {
      int moved = ::fcntl(source, F_DUPFD_CLOEXEC, n);
      if (moved < 0) return io_error("fcntl(F_DUPFD_CLOEXEC) failed: " + reason(errno));
      out.temporary.push_back(moved);
      source = moved;
    }
    out.sources.push_back(source);
    out.parent_ends.push_back(parent_end);
  }
  return Status::ok();
}

// posix_spawn's file actions and attributes, destroyed with it.
struct SpawnAttrs {
  SpawnAttrs() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  int set_up(const Process::Spec& spec, const SpawnFds& fds) {
    int rc = 0;
    for (size_t i = 0; i < fds.sources.size() && rc == 0; ++i) {
      const int target = static_cast<int>(i);
      // dup2 onto itself clears close-on-exec (glibc does, as POSIX now asks).
      rc = fds.sources[i] >= 0
               ? posix_spawn_file_actions_adddup2(&actions, fds.sources[i], target)
               : posix_spawn_file_actions_addopen(&actions, target, "/dev/null",
                                                  target == 0 ? O_RDONLY : O_RDWR, 0);
    }
    if (rc == 0 && !spec.cwd.empty()) {
      rc = posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
    }
    sigset_t defaults, mask;
    sigemptyset(&defaults);
    sigemptyset(&mask);
    for (int sig = 1; sig < 32; ++sig) {
      if (sig != SIGKILL && sig != SIGSTOP) sigaddset(&defaults, sig);
    }
    short flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
    if (spec.new_session) flags |= POSIX_SPAWN_SETSID;
    if (rc == 0) rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (rc == 0) rc = posix_spawnattr_setsigmask(&attr, &mask);
    if (rc == 0) rc = posix_spawnattr_setflags(&attr, flags);
    return rc;
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
};

// Where `file` (no '/') is found in the PATH of `env`, as execvp in the child would look for it:
// posix_spawnp looks in the parent's PATH instead. Empty when env has no PATH or nothing is
// found there (posix_spawnp then gives the error).
std::string search_path(const std::string& file, const std::vector<std::string>& env) {
  for (const std::string& e : env) {
    if (e.rfind("PATH=", 0) != 0) continue;
    std::string_view dirs = std::string_view(e).substr(5);
    for (size_t start = 0; start <= dirs.size();) {
      size_t end = std::min(dirs.find(':', start), dirs.size());
      std::string dir(dirs.substr(start, end - start));
      std::string path = (dir.empty() ? "." : dir) + "/" + file;
      if (::access(path.c_str(), X_OK) == 0) return path;
      start = end + 1;
    }
    return "";
  }
  return "";
}

// A child that was started but cannot be watched: killed and reaped at once.
void abandon(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

Result<std::unique_ptr<Process>> Process::spawn(uv_loop_t* loop, const Spec& spec, OnExit on_exit) {
  SpawnFds fds;
  if (Status s = prepare(spec.fds, fds); !s) return s;
  SpawnAttrs attrs;
  if (int rc = attrs.set_up(spec, fds); rc != 0) return io_error(reason(rc));

  std::string file = spec.file.empty() ? spec.argv.at(0) : spec.file;
  if (file.find('/') == std::string::npos && spec.env) {
    if (std::string found = search_path(file, *spec.env); !found.empty()) file = found;
  }
  std::vector<char*> argv = c_strings(spec.argv);
  std::vector<char*> env = spec.env ? c_strings(*spec.env) : std::vector<char*>();
  char** envp = spec.env ? env.data() : environ;
  pid_t pid = 0;
  const bool search = file.find('/') == std::string::npos;
  int rc = search ? posix_spawnp(&pid, file.c_str(), &attrs.actions, &attrs.attr, argv.data(), envp)
                  : posix_spawn(&pid, file.c_str(), &attrs.actions, &attrs.attr, argv.data(), envp);
  if (rc != 0) return io_error(reason(rc));

  std::unique_ptr<Process> p(new Process());
  p->pid_ = pid;
  p->on_exit_ = std::move(on_exit);
  for (size_t i = 0; i < spec.fds.size(); ++i) {
    if (spec.fds[i].kind != Fd::Kind::kStream) continue;
    Status opened = spec.fds[i].stream->open_fd(fds.parent_ends[i]);
    if (!opened) {
      abandon(pid);
      return opened;
    }
    fds.parent_ends[i] = -1;  // the stream's now
  }
  p->pidfd_ = ::pidfd_open(pid, 0);
  if (p->pidfd_ < 0) {
    const int err = errno;
    abandon(pid);
    return io_error("pidfd_open() failed: " + reason(err));
  }
  if (int init = uv_poll_init(loop, p->poll_.get(), p->pidfd_); init != 0) {
    abandon(pid);
    return io_error(std::string("uv_poll_init(pidfd) failed: ") + uv_strerror(init));
  }
  p->poll_.set_live(p.get());
  uv_poll_start(p->poll_.get(), UV_READABLE, &Process::on_readable);
  return p;
}

Process::~Process() {
  if (!exited_ && pid_ != 0) (void)::waitpid(pid_, nullptr, WNOHANG);
  stop_watching();
}

void Process::stop_watching() {
  poll_.close();  // uv_close stops the poll before the fd is closed
  if (pidfd_ >= 0) ::close(pidfd_);
  pidfd_ = -1;
}

int Process::kill(int signum) {
  if (exited_ || pidfd_ < 0) return UV_ESRCH;
  if (::pidfd_send_signal(pidfd_, signum, nullptr, 0) == 0) return 0;
  return uv_translate_sys_error(errno);
}

void Process::on_readable(uv_poll_t* handle, int /*status*/, int /*events*/) {
  auto* self = owner_of<Process>(handle);
  if (self == nullptr) return;
  int status = 0;
  pid_t got;
  while ((got = ::waitpid(self->pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
  }
  if (got == 0) return;  // not exited yet
  self->exited_ = true;
  self->stop_watching();
  int64_t exit_status = got > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  int term_signal = got > 0 && WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  OnExit cb = std::move(self->on_exit_);
  if (cb) guard("process exit", [&] { cb(exit_status, term_signal); });  // may destroy self
}

}  // namespace corral::uv
