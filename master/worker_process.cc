#include "master/worker_process.h"

#include <sys/ioctl.h>

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>

#include "shared/proc.h"
#include "shared/uv/guard.h"

namespace corral::master {

Result<std::unique_ptr<WorkerProcess>> WorkerProcess::spawn(uv_loop_t* loop, const SpawnSpec& spec,
                                                            Callbacks cb) {
  std::unique_ptr<WorkerProcess> w(new WorkerProcess());
  w->cb_ = std::move(cb);
  w->pipe_ = uv::Stream::pipe(loop, false);

  // fd 0: nothing; fds 1 and 2: the master's own (the daemon's output file); fd 3: IPC;
  // fd 4: the in-hand page (shared/ipc/in_hand.h).
  int in_hand_fd = ipc::create_in_hand();
  if (in_hand_fd < 0) return io_error(std::string("memfd_create() failed: ") + strerror(errno));
  w->in_hand_ = ipc::map_in_hand(in_hand_fd);
  if (w->in_hand_ == nullptr) {
    close(in_hand_fd);
    return io_error(std::string("mmap() of the in-hand page failed: ") + strerror(errno));
  }
  uv::Process::Spec process;
  process.argv.push_back(spec.executable);
  process.argv.insert(process.argv.end(), spec.args.begin(), spec.args.end());
  process.file = spec.file;
  process.fds = {uv::Process::Fd::null(), uv::Process::Fd::inherit(), uv::Process::Fd::inherit(),
                 uv::Process::Fd::pipe_to(*w->pipe_), uv::Process::Fd::of(in_hand_fd)};
  WorkerProcess* self = w.get();
  auto started = uv::Process::spawn(loop, process, [self](int64_t exit_status, int term_signal) {
    self->on_process_exit(exit_status, term_signal);
  });
  close(in_hand_fd);  // the mapping stays
  if (!started)
    return io_error("cannot start " + spec.executable + ": " + started.status().message());
  w->process_ = std::move(*started);

  w->resume_ = std::make_unique<uv::NextTurn>(loop);
  w->loop_ = loop;
  if (Status s = w->start_reading(); !s) return s;
  return w;
}

Status WorkerProcess::start_reading() {
  return pipe_->start_read([this](std::string_view bytes) { on_bytes(bytes); },
                           [this](int status) {
                             if (status != UV_EOF) {
                               report_protocol_error(io_error(
                                   std::string("IPC pipe read failed: ") + uv_strerror(status)));
                             }
                           });
}

WorkerProcess::~WorkerProcess() {
  close_pipe();
  process_.reset();
  ipc::unmap_in_hand(in_hand_);
}

std::optional<std::pair<std::string, uint32_t>> WorkerProcess::culprit() const {
  return in_hand_ ? in_hand_->culprit() : std::nullopt;
}

void WorkerProcess::on_process_exit(int64_t exit_status, int term_signal) {
  exited_ = true;
  exit_status_ = exit_status;
  term_signal_ = term_signal;
  uv::guard("reading an exited worker's pipe", [&] { read_rest(); });
  finish_exit();  // may destroy this
}

void WorkerProcess::on_bytes(std::string_view bytes) {
  if (protocol_broken_) return;
  decoder_.append(bytes);
  drain();
}

bool WorkerProcess::handle_next() {
  std::optional<ipc::Frame> f;
  if (Status s = decoder_.next(f); !s) {
    report_protocol_error(s);  // the frames before it are handled: they came first
    return false;
  }
  if (!f) return false;
  std::string_view name = ipc::message_info(f->type).name;
  // A frame whose fields have the wrong types makes its handler throw: that is the worker's
  // protocol error, never a crash of the master.
  try {
    cb_.on_frame(std::move(*f));
  } catch (const std::exception& e) {
    report_protocol_error(protocol_error("bad \"" + std::string(name) + "\" payload: " + e.what()));
  }
  return !protocol_broken_;
}

bool WorkerProcess::has_unread() const {
  if (decoder_.has_frame()) return true;
  if (!pipe_ || !pipe_->is_open()) return false;
  uv_os_fd_t fd = -1;
  int waiting = 0;
  return uv_fileno(reinterpret_cast<const uv_handle_t*>(pipe_->raw()), &fd) == 0 &&
         ::ioctl(fd, FIONREAD, &waiting) == 0 && waiting > 0;
}

bool WorkerProcess::made_calls() {
  std::optional<uint64_t> calls = exited_ ? std::nullopt : io_syscalls(pid());
  if (!calls) return false;
  const bool moved = calls_seen_ && *calls_seen_ != *calls;
  calls_seen_ = calls;
  return moved;
}

void WorkerProcess::drain() {
  const uv::Slice slice = uv::Slice::of_turn(loop_);
  while (handle_next() && !slice.over()) {
  }
  if (protocol_broken_) return;
  if (slice.over() || decoder_.has_frame()) {
    // No more reads this turn: libuv would call on_bytes again, each call a frame past the slice.
    if (!paused_ && pipe_) pipe_->stop_read();
    paused_ = true;
    resume_->schedule([this] { drain(); });
  } else if (paused_) {
    paused_ = false;
    if (pipe_ && pipe_->is_open()) (void)start_reading();
  }
}

void WorkerProcess::read_rest() {
  resume_->cancel();
  if (protocol_broken_ || !pipe_ || !pipe_->is_open()) return;
  int fd = -1;
  if (uv_fileno(reinterpret_cast<uv_handle_t*>(pipe_->raw()), &fd) != 0) return;
  pipe_->stop_read();
  // The worker is gone: what it wrote is all in the socket, and a read ends at EOF.
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) {
    decoder_.append(std::string_view(buf, static_cast<size_t>(n)));
  }
}

void WorkerProcess::finish_exit() {
  const uv::Slice slice = uv::Slice::of_turn(loop_);
  bool more = false;
  uv::guard("draining an exited worker's pipe", [&] {
    while (handle_next() && !slice.over()) {
    }
    more = !protocol_broken_ && decoder_.has_frame();
  });
  if (more) {
    resume_->schedule([this] { finish_exit(); });
    return;
  }
  auto cb = cb_.on_exit;
  uv::guard("process exit", [&] { cb(exit_status_, term_signal_); });  // may destroy self
}

void WorkerProcess::report_protocol_error(const Status& s) {
  if (protocol_broken_) return;
  protocol_broken_ = true;
  if (pipe_) pipe_->stop_read();
  auto cb = cb_.on_protocol_error;
  cb(s);
}

Status WorkerProcess::send(ipc::MessageType type, const ipc::Payload& payload) {
  if (!pipe_ || !pipe_->is_open()) return Status(Code::kUnavailable, "IPC pipe is closed");
  if (exited_) return Status(Code::kUnavailable, "the worker has exited");
  if (pipe_->queued_bytes() > kMaxQueuedBytes) {
    return Status(Code::kResourceExhausted, "worker is not reading its IPC pipe (" +
                                                std::to_string(pipe_->queued_bytes()) +
                                                " bytes queued)");
  }
  auto frame = ipc::encode_payload(type, payload);
  if (!frame) return frame.status();
  return pipe_->write(std::move(*frame));
}

void WorkerProcess::signal(int signum) {
  if (exited_ || !process_) return;
  int rc = process_->kill(signum);
  if (rc != 0 && rc != UV_ESRCH) {
    spdlog::warn("kill(pid {}, {}) failed: {}", pid(), signum, uv_strerror(rc));
  }
}

void WorkerProcess::close_pipe() {
  if (pipe_) pipe_->close();
}

}  // namespace corral::master
