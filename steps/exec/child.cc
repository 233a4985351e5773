#include "steps/exec/child.h"

#include <csignal>

namespace corral::steps::exec {
namespace {

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

Child::Child(uv_loop_t* loop, uint64_t max_output, Done done)
    : max_output_(max_output),
      done_(std::move(done)),
      out_pipe_(uv::Stream::pipe(loop)),
      err_pipe_(uv::Stream::pipe(loop)) {}

Child::~Child() {
  if (pid_ != 0 && !exited_) uv_kill(-pid_, SIGKILL);
  out_pipe_->close();
  err_pipe_->close();
  process_.close();
}

Result<std::unique_ptr<Child>> Child::start(uv_loop_t* loop, const Command& cmd, Done done) {
  std::unique_ptr<Child> c(new Child(loop, cmd.max_output, std::move(done)));
  std::vector<std::string> argv_strings = cmd.argv, env_strings = cmd.env;
  std::vector<char*> argv = c_strings(argv_strings), env = c_strings(env_strings);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[1].data.stream = c->out_pipe_->raw();
  stdio[2].flags = static_cast<uv_stdio_flags>(UV_CREATE_PIPE | UV_WRITABLE_PIPE);
  stdio[2].data.stream = c->err_pipe_->raw();
  uv_process_options_t opts{};
  opts.file = argv[0];
  opts.args = argv.data();
  opts.env = env.data();
  opts.cwd = cmd.cwd.empty() ? nullptr : cmd.cwd.c_str();
  opts.exit_cb = &Child::on_exit;
  opts.stdio_count = 3;
  opts.stdio = stdio;
  opts.flags = UV_PROCESS_DETACHED;  // setsid: a group of its own, killed as one
  int rc = uv_spawn(loop, c->process_.get(), &opts);
  if (rc != 0) {
    // uv_spawn initialises the handle even when it fails; it must still be closed.
    c->process_.set_live(nullptr);
    c->done_ = nullptr;
    return io_error("cannot start " + cmd.argv[0] + ": " + uv_strerror(rc));
  }
  c->process_.set_live(c.get());
  c->pid_ = c->process_.get()->pid;
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

void Child::on_exit(uv_process_t* p, int64_t exit_status, int term_signal) {
  auto* self = uv::owner_of<Child>(p);
  if (self == nullptr) return;
  self->exited_ = true;
  self->outcome_.exit_code = term_signal != 0 ? -1 : static_cast<int>(exit_status);
  self->outcome_.term_signal = term_signal;
  // What it left running in its group would hold the pipes open: the step is over for it.
  uv_kill(-self->pid_, SIGKILL);
  self->finish_if_done();
}

void Child::finish_if_done() {
  if (!exited_ || open_pipes_ > 0 || !done_) return;
  Done done = std::move(done_);
  done_ = nullptr;
  done(std::move(outcome_));  // may destroy this
}

}  // namespace corral::steps::exec
