#include "master/hooks/command.h"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <vector>

#include "config/config.h"
#include "shared/proc.h"
#include "shared/uv/process.h"
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

class CommandRun final : public Delivery {
 public:
  CommandRun(uv_loop_t* loop, const config::Hook& hook, Done done)
      : hook_(hook), done_(std::move(done)), stdin_(uv::Stream::pipe(loop)), timer_(loop) {}
  ~CommandRun() override {
    timer_.close();
    if (stdin_) stdin_->close();
    process_.reset();
  }

  Status spawn(uv_loop_t* loop, config::HookEvent event, const std::string& payload);
  void abort() override { kill("killed: the daemon stopped"); }

 private:
  void on_exit(int64_t exit_status, int term_signal);
  void kill(const std::string& why);
  Status outcome(int64_t exit_status, int term_signal) const;

  config::Hook hook_;
  Done done_;
  std::unique_ptr<uv::Process> process_;
  std::unique_ptr<uv::Stream> stdin_;
  uv::Timer timer_;
  pid_t pid_ = 0;
  std::string killed_;  // why it was killed, when it was
};

Status CommandRun::spawn(uv_loop_t* loop, config::HookEvent event, const std::string& payload) {
  uv::Process::Spec spec;
  spec.argv = hook_.command;
  spec.env = hook_environment(event);
  spec.fds = {uv::Process::Fd::pipe_to(*stdin_), uv::Process::Fd::inherit(),
              uv::Process::Fd::inherit()};
  // A process group of its own (setsid), so that a timeout kills what it started too.
  spec.new_session = true;
  auto started = uv::Process::spawn(loop, spec, [this](int64_t exit_status, int term_signal) {
    on_exit(exit_status, term_signal);
  });
  if (!started)
    return io_error("cannot start " + hook_.command[0] + ": " + started.status().message());
  process_ = std::move(*started);
  pid_ = process_->pid();
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
  if (uv_kill(-pid_, SIGKILL) != 0) process_->kill(SIGKILL);
}

Status CommandRun::outcome(int64_t exit_status, int term_signal) const {
  if (!killed_.empty()) return Status(Code::kTimeout, killed_);
  if (term_signal != 0) return Status(Code::kUnavailable, "killed by " + signal_name(term_signal));
  if (exit_status != 0) return Status(Code::kUnavailable, "exit " + std::to_string(exit_status));
  return Status::ok();
}

void CommandRun::on_exit(int64_t exit_status, int term_signal) {
  timer_.stop();
  Status s = outcome(exit_status, term_signal);
  Done done = std::move(done_);
  if (done) done(std::move(s));  // may destroy this
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
