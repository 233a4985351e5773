#include "master/hooks/command.h"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <vector>

#include "config/config.h"
#include "shared/proc.h"
#include "shared/uv/guard.h"
#include "shared/uv/handle.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"

extern char** environ;

namespace corral::master {
namespace {

// The daemon's environment with CORRAL_EVENT set to `event` (replacing one it had).
std::vector<std::string> hook_environment(config::HookEvent event) {
  constexpr std::string_view kVariable = "CORRAL_EVENT=";
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::string_view(*e).rfind(kVariable, 0) != 0) env.emplace_back(*e);
  }
  env.push_back(std::string(kVariable) + std::string(config::to_string(event)));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

class CommandRun final : public Delivery {
 public:
  CommandRun(uv_loop_t* loop, const config::Hook& hook, Done done)
      : hook_(hook), done_(std::move(done)), stdin_(uv::Stream::pipe(loop)), timer_(loop) {}
  ~CommandRun() override {
    timer_.close();
    if (stdin_) stdin_->close();
    process_.close();
  }

  Status spawn(uv_loop_t* loop, config::HookEvent event, const std::string& payload);
  void abort() override { kill("killed: the daemon stopped"); }

 private:
  static void on_exit(uv_process_t* p, int64_t exit_status, int term_signal);
  void kill(const std::string& why);
  Status outcome(int64_t exit_status, int term_signal) const;

  config::Hook hook_;
  Done done_;
  uv::Handle<uv_process_t> process_;
  std::unique_ptr<uv::Stream> stdin_;
  uv::Timer timer_;
  pid_t pid_ = 0;
  std::string killed_;  // why it was killed, when it was
};

Status CommandRun::spawn(uv_loop_t* loop, config::HookEvent event, const std::string& payload) {
  std::vector<std::string> argv_strings = hook_.command;
  std::vector<char*> argv = c_strings(argv_strings);
  std::vector<std::string> env_strings = hook_environment(event);
  std::vector<char*> env = c_strings(env_strings);

  uv_stdio_container_t stdio[3];
  stdio[0].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_READABLE_PIPE);
  stdio[0].data.stream = stdin_->raw();
  stdio[1].flags = UV_INHERIT_FD;
  stdio[1].data.fd = 1;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;

  uv_process_options_t opts{};
  opts.file = argv[0];
  opts.args = argv.data();
  opts.env = env.data();
  opts.exit_cb = &CommandRun::on_exit;
  opts.stdio_count = 3;
  opts.stdio = stdio;
  // A process group of its own (setsid), so that a timeout kills what it started too.
  opts.flags = UV_PROCESS_DETACHED;

  int rc = uv_spawn(loop, process_.get(), &opts);
  if (rc != 0) {
    // uv_spawn initialises the handle even when it fails; it must still be closed.
    process_.set_live(nullptr);
    return io_error("cannot start " + hook_.command[0] + ": " + uv_strerror(rc));
  }
  process_.set_live(this);
  pid_ = process_.get()->pid;
  timer_.start(hook_.timeout_ms, 0, [this] {
    kill("timed out after " + config::format_duration_ms(hook_.timeout_ms) + ": killed");
  });
  // A command that does not read its stdin may exit first: the write then fails, unheard.
  (void)stdin_->write(payload + "\n");
  stdin_->shutdown([this] { stdin_->close(); });
  return Status::ok();
}

void CommandRun::kill(const std::string& why) {
  if (pid_ == 0 || !killed_.empty()) return;
  killed_ = why;
  if (uv_kill(-pid_, SIGKILL) != 0) uv_process_kill(process_.get(), SIGKILL);
}

Status CommandRun::outcome(int64_t exit_status, int term_signal) const {
  if (!killed_.empty()) return Status(Code::kTimeout, killed_);
  if (term_signal != 0) return Status(Code::kUnavailable, "killed by " + signal_name(term_signal));
  if (exit_status != 0) return Status(Code::kUnavailable, "exit " + std::to_string(exit_status));
  return Status::ok();
}

void CommandRun::on_exit(uv_process_t* p, int64_t exit_status, int term_signal) {
  auto* self = uv::owner_of<CommandRun>(p);
  if (self == nullptr) return;
  uv::guard("hook command exit", [&] {
    self->timer_.stop();
    Status s = self->outcome(exit_status, term_signal);
    Done done = std::move(self->done_);
    if (done) done(std::move(s));  // may destroy self
  });
}

}  // namespace

Result<std::unique_ptr<Delivery>> start_command(uv_loop_t* loop, const config::Hook& hook,
                                                config::HookEvent event, const std::string& payload,
                                                Delivery::Done done) {
  auto run = std::make_unique<CommandRun>(loop, hook, std::move(done));
  if (Status s = run->spawn(loop, event, payload); !s) return s;
  return std::unique_ptr<Delivery>(std::move(run));
}

}  // namespace corral::master
