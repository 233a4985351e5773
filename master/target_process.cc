#include "master/target_process.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <utility>

#include <re2/re2.h>
#include <spdlog/spdlog.h>

#include "config/config.h"
#include "master/load_watch.h"
#include "master/target_exec.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using Ready = load::TargetCommand::Ready;

constexpr uint64_t kTickMs = 250;       // peak RSS, and the ready check, this often
constexpr long kProbeTimeoutMs = 1000;  // one ready check's request
constexpr uint64_t kDrainMs = 500;      // after its exit, for the last of its output

// The daemon's environment without its secrets, then the command's own variables.
std::vector<std::string> environment(const load::TargetCommand& cmd) {
  std::vector<std::string> env = environment_without_secrets();
  for (const auto& [name, value] : cmd.env) {
    const std::string prefix = name + "=";
    std::erase_if(env, [&prefix](const std::string& var) { return var.rfind(prefix, 0) == 0; });
    env.push_back(prefix + value);
  }
  return env;
}

// Whether a line says the process ran out of memory, as V8, the JVM, Go, Python and glibc's
// allocator word it.
bool says_out_of_memory(std::string_view line) {
  static const RE2 re(
      "(?i)(out of memory|OutOfMemoryError|MemoryError|heap limit|cannot allocate memory)");
  return RE2::PartialMatch(line, re);
}

// Whether 127.0.0.1:port accepts a connection.
bool port_accepts(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

// One ready check (a URL or a port) on libuv's thread pool.
struct TargetProcess::Probe {
  uv_work_t req;
  TargetProcess* owner;  // null once the process is gone
  Ready kind;
  std::string url;
  uint16_t port;
  bool ok = false;
};

TargetProcess::TargetProcess(uv_loop_t* loop, load::TargetCommand cmd)
    : loop_(loop), cmd_(std::move(cmd)), tick_(loop), grace_(loop), drain_(loop), deliver_(loop) {
  if (cmd_.ready == Ready::kLog) ready_log_ = std::make_unique<RE2>(cmd_.log);
}

Result<std::unique_ptr<TargetProcess>> TargetProcess::start(uv_loop_t* loop,
                                                            load::TargetCommand cmd,
                                                            OnReady on_ready, OnExit on_exit,
                                                            const std::string& corral) {
  std::unique_ptr<TargetProcess> t(new TargetProcess(loop, std::move(cmd)));
  t->on_ready_ = std::move(on_ready);
  t->on_exit_ = std::move(on_exit);
  t->out_ = uv::Stream::pipe(loop, false);
  t->err_ = uv::Stream::pipe(loop, false);
  uv::Process::Spec spec;
  spec.argv = target_exec_argv(t->cmd_.cmd, corral);
  spec.env = environment(t->cmd_);
  spec.cwd = t->cmd_.cwd;
  spec.fds = {uv::Process::Fd::null(), uv::Process::Fd::pipe_to(*t->out_),
              uv::Process::Fd::pipe_to(*t->err_)};
  spec.new_session = true;
  TargetProcess* self = t.get();
  auto started = uv::Process::spawn(
      loop, spec, [self](int64_t status, int signum) { self->on_exit(status, signum); });
  if (!started) return started.status();
  t->process_ = std::move(*started);
  t->pid_ = t->process_->pid();
  t->started_ms_ = monotonic_ms();
  for (bool err : {false, true}) {
    uv::Stream& s = err ? *t->err_ : *t->out_;
    Status reading =
        s.start_read([self, err](std::string_view bytes) { self->on_output(err, bytes); },
                     [self](int) { self->on_stream_end(); });
    if (!reading) self->on_stream_end();
  }
  t->tick_.start(0, kTickMs, [self] { self->on_tick(); });
  return t;
}

TargetProcess::~TargetProcess() {
  if (probing_ != nullptr) probing_->owner = nullptr;  // on_probed frees it
  if (!exit_) kill_group(SIGKILL);
}

void TargetProcess::kill_group(int signum) {
  if (pid_ > 0) ::kill(-pid_, signum);  // its own session: the group's id is its pid
}

void TargetProcess::stop() {
  if (exit_ || stopping_) return;
  stopping_ = true;
  kill_group(SIGTERM);
  grace_.start(cmd_.stop_grace_ms, 0, [this] { kill_group(SIGKILL); });
}

void TargetProcess::on_output(bool err, std::string_view bytes) {
  std::string& partial = partial_[err ? 1 : 0];
  while (!bytes.empty()) {
    size_t nl = bytes.find('\n');
    std::string_view piece = bytes.substr(0, nl);
    if (partial.size() < kMaxLineBytes) {
      partial.append(piece.substr(0, kMaxLineBytes - partial.size()));
    }
    if (nl == std::string_view::npos) break;
    add_line(err, std::move(partial));
    partial.clear();
    bytes.remove_prefix(nl + 1);
  }
}

void TargetProcess::add_line(bool err, std::string text) {
  if (!text.empty() && text.back() == '\r') text.pop_back();
  if (says_out_of_memory(text)) cause_ = text;
  if (ready_log_ && RE2::PartialMatch(text, *ready_log_)) ready(Status::ok());
  lines_.push_back({err, std::move(text)});
  if (lines_.size() > kMaxLines) lines_.pop_front();
}

void TargetProcess::on_tick() {
  if (exit_) return;
  rss_peak_ = std::max(rss_peak_, peak_rss_bytes(pid_));
  if (ready_ || stopping_) return;
  if (cmd_.ready == Ready::kStarted) {
    ready(Status::ok());
  } else if (monotonic_ms() - started_ms_ >= cmd_.ready_timeout_ms) {
    ready(Status(Code::kTimeout,
                 "was not ready after " + config::format_duration_ms(cmd_.ready_timeout_ms)));
  } else if (cmd_.ready != Ready::kLog && probing_ == nullptr) {
    probe();
  }
}

void TargetProcess::probe() {
  auto* p = new Probe{{}, this, cmd_.ready, cmd_.url, cmd_.port};
  p->req.data = p;
  int rc = uv_queue_work(
      loop_, &p->req,
      [](uv_work_t* req) {
        auto* job = static_cast<Probe*>(req->data);
        if (job->kind == Ready::kPort) {
          job->ok = port_accepts(job->port);
          return;
        }
        auto where = split_http_url(job->url);
        if (!where) return;
        auto r = http::request(where->first, "GET", where->second, {}, kProbeTimeoutMs);
        job->ok = r && r->status >= 200 && r->status < 300;
      },
      &TargetProcess::on_probed);
  if (rc != 0) {
    delete p;
    return;
  }
  probing_ = p;
}

void TargetProcess::on_probed(uv_work_t* req, int) {
  std::unique_ptr<Probe> p(static_cast<Probe*>(req->data));
  TargetProcess* self = p->owner;
  if (self == nullptr) return;
  self->probing_ = nullptr;
  if (p->ok && !self->exit_ && !self->stopping_) self->ready(Status::ok());
}

void TargetProcess::ready(Status s) {
  if (ready_) return;  // answered already: ready or not
  if (!s) stop();
  ready_ = std::move(s);
  deliver_.start(0, 0, [this] { deliver(); });
}

void TargetProcess::on_exit(int64_t exit_status, int term_signal) {
  exit_ = std::make_unique<Exit>(Exit{exit_status, term_signal, stopping_});
  tick_.stop();
  grace_.stop();
  kill_group(SIGKILL);  // what it started, if any is left
  drain_.start(kDrainMs, 0, [this] {
    open_streams_ = 0;
    on_stream_end();
  });
  if (open_streams_ == 0) on_stream_end();
}

// Its exit is told once its output has been read to the end (or after kDrainMs, if something
// it started still holds its stdout open): its last lines are often why it ended.
void TargetProcess::on_stream_end() {
  if (open_streams_ > 0) --open_streams_;
  if (!exit_ || open_streams_ > 0 || drained_) return;
  drained_ = true;
  drain_.stop();
  for (int i = 0; i < 2; ++i) {
    if (!partial_[i].empty()) add_line(i == 1, std::move(partial_[i]));
    partial_[i].clear();
  }
  if (!ready_) {
    std::string how = exit_->signal != 0 ? "was killed by " + signal_name(exit_->signal)
                                         : "exited with code " + std::to_string(exit_->exit_code);
    ready(Status(Code::kUnavailable, how + " before it was ready"));
  }
  deliver_.start(0, 0, [this] { deliver(); });
}

void TargetProcess::deliver() {
  if (on_ready_ && ready_) {
    OnReady cb = std::exchange(on_ready_, nullptr);
    if (!ready_->is_ok()) {
      on_exit_ = nullptr;  // a target that was never ready has no exit to tell
    } else if (drained_) {
      deliver_.start(0, 0, [this] { deliver(); });  // its exit, next
    }
    cb(*ready_);  // it may destroy this
    return;
  }
  if (!drained_ || !on_exit_ || !ready_ || !ready_->is_ok()) return;
  OnExit cb = std::exchange(on_exit_, nullptr);
  cb(*exit_);  // last: it may destroy this
}

}  // namespace corral::master
