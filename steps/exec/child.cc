#include "steps/exec/child.h"

#include <csignal>

namespace corral::steps::exec {
Child::Child(uv_loop_t* loop, uint64_t max_output, Done done)
    : max_output_(max_output),
      done_(std::move(done)),
      out_pipe_(uv::Stream::pipe(loop)),
      err_pipe_(uv::Stream::pipe(loop)) {}

Child::~Child() {
  if (pid_ != 0 && !exited_) uv_kill(-pid_, SIGKILL);
  out_pipe_->close();
  err_pipe_->close();
  process_.reset();
}

Result<std::unique_ptr<Child>> Child::start(uv_loop_t* loop, const Command& cmd, Done done) {
  std::unique_ptr<Child> c(new Child(loop, cmd.max_output, std::move(done)));
  uv::Process::Spec spec;
  spec.argv = cmd.argv;
  spec.env = cmd.env;
  spec.cwd = cmd.cwd;
  spec.fds = {uv::Process::Fd::null(), uv::Process::Fd::pipe_to(*c->out_pipe_),
              uv::Process::Fd::pipe_to(*c->err_pipe_)};
  spec.new_session = true;  // setsid: a group of its own, killed as one
  Child* self = c.get();
  auto started = uv::Process::spawn(loop, spec, [self](int64_t exit_status, int term_signal) {
    self->on_exit(exit_status, term_signal);
  });
  if (!started) {
    c->done_ = nullptr;
    return io_error("cannot start " + cmd.argv[0] + ": " + started.status().message());
  }
  c->process_ = std::move(*started);
  c->pid_ = c->process_->pid();
  c->read(*c->out_pipe_, c->outcome_.out, c->outcome_.out_cut);
  c->read(*c->err_pipe_, c->outcome_.err, c->outcome_.err_cut);
  return c;
}

void Child::read(uv::Stream& pipe, std::string& into, bool& cut) {
  Status s = pipe.start_read(
      [this, &into, &cut](std::string_view bytes) {
        size_t room = max_output_ > into.size() ? max_output_ - into.size() : 0;
        if (bytes.size() > room) cut = true;
        into.append(bytes.substr(0, room));
      },
      [this](int /*uv_status*/) {
        --open_pipes_;
        finish_if_done();
      });
  if (!s) --open_pipes_;
}

void Child::on_exit(int64_t exit_status, int term_signal) {
  exited_ = true;
  outcome_.exit_code = term_signal != 0 ? -1 : static_cast<int>(exit_status);
  outcome_.term_signal = term_signal;
  // What it left running in its group would hold the pipes open: the step is over for it.
  uv_kill(-pid_, SIGKILL);
  finish_if_done();
}

void Child::finish_if_done() {
  if (!exited_ || open_pipes_ > 0 || !done_) return;
  Done done = std::move(done_);
  done_ = nullptr;
  done(std::move(outcome_));  // may destroy this
}

}  // namespace corral::steps::exec
