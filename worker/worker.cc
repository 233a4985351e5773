#include "worker/worker.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

#include "config/load/parse.h"
#include "shared/exit_codes.h"
#include "shared/ipc/http_errors.h"
#include "shared/ipc/limits.h"
#include "shared/log.h"
#include "shared/proc.h"
#include "shared/uv/pulse.h"

namespace corral::worker {
namespace {

constexpr uint64_t kMemoryCheckMs = 200;
constexpr uint64_t kFaultDelayMs = 500;
constexpr uint64_t kLeaveFlushMs = 1000;  // give up flushing to a master that does not read
constexpr uint64_t kEventFlushMs = 50;    // events wait at most this long to be batched
constexpr size_t kEventBatch = 2000;      // ... or until this many are pending
constexpr double kSlowBeatMs = 2000;      // a heartbeat this late is logged
// Checkpoints per hand-back frame. The master handles a frame in one go (about 10 us per
// checkpoint in a reload, parsing and the journal row included), between frames it may let the
// loop turn: 50 keep a frame within the master's 1 ms slice of work (uv::Slice), where frames of
// 500 held its API for 20 ms each.
constexpr size_t kHandbackPerFrame = 50;
// A release (rebalancing) is answered in one frame of at most the master's chunk (500): the
// master counts a release as done when its answer comes.
constexpr size_t kReleasePerFrame = 500;

void on_out_of_memory() {
  static const char msg[] = "corral worker: allocation refused by the kernel memory limit\n";
  ssize_t ignored = write(2, msg, sizeof(msg) - 1);
  (void)ignored;
  _exit(kExitOutOfMemory);
}

// The kernel backstop: RLIMIT_DATA (private writable memory). RLIMIT_AS would also count
// address space libuv reserves for its thread pool and abort it under a tight cap.
Status apply_kernel_limit(uint64_t bytes) {
  if (bytes == 0) return Status::ok();
  rlimit rl{bytes, bytes};
  if (setrlimit(RLIMIT_DATA, &rl) != 0) {
    return io_error(std::string("setrlimit(RLIMIT_DATA) failed: ") + std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace

Worker::Worker(uv_loop_t* loop, int slot, std::string home)
    : loop_(loop), slot_(slot), home_(std::move(home)) {}

Status Worker::start() {
  pipe_ = uv::Stream::pipe(loop_, false);
  if (Status s = pipe_->open_fd(3); !s) return s;
  Status s = pipe_->start_read(
      [this](std::string_view b) { on_bytes(b); },
      [this](int status) {
        // EOF: the master is gone or wants us gone. Nobody is left to
        // hand work to, so leave at once.
        leave(kExitOk, status == UV_EOF ? "IPC pipe closed by master" : uv_strerror(status));
      });
  if (!s) return s;
  send(ipc::MessageType::kHello, ipc::to_json(ipc::Hello{ipc::kProtocolVersion, getpid(), slot_}));
  return Status::ok();
}

void Worker::send(ipc::MessageType type, const nlohmann::json& payload) {
  if (!pipe_ || !pipe_->is_open()) return;
  auto frame = ipc::encode(type, payload);
  if (!frame) {
    spdlog::error("cannot send {}: {}", ipc::message_info(type).name, frame.status().message());
    return;
  }
  (void)pipe_->write(std::move(*frame));  // a broken pipe shows up as EOF/error on read
}

void Worker::on_bytes(std::string_view bytes) {
  frames_.clear();
  Status s = decoder_.feed(bytes, frames_);
  for (auto& f : frames_) {
    if (leaving_) return;
    std::string_view name = ipc::message_info(f.type).name;
    try {
      on_frame(std::move(f));
    } catch (const std::exception& e) {
      // A field of the wrong type: the master broke the contract.
      leave(kExitProtocol, "bad \"" + std::string(name) + "\" payload from master: " + e.what());
      return;
    }
  }
  if (!s && !leaving_) leave(kExitProtocol, "protocol error from master: " + s.message());
  if (fault_ == Fault::kThrow && welcomed_ && !thrown_in_read_) {
    thrown_in_read_ = true;
    throw std::runtime_error("test fault: thrown from the IPC read callback");
  }
}

template <typename T>
std::optional<T> Worker::payload(const ipc::Frame& f) {
  auto m = ipc::read<T>(f.payload);
  if (m) return std::move(*m);
  leave(kExitProtocol, "bad \"" + std::string(ipc::message_info(f.type).name) +
                           "\" payload from master: " + m.status().message());
  return std::nullopt;
}

void Worker::on_frame(ipc::Frame&& f) {
  switch (f.type) {
    case ipc::MessageType::kWelcome:
      if (auto w = payload<ipc::Welcome>(f)) on_welcome(*w);
      return;
    case ipc::MessageType::kStop:
      if (!payload<ipc::Stop>(f)) return;
      flush_events();
      hand_back();
      leave(kExitOk, "asked to stop");
      return;
    case ipc::MessageType::kDefineRun:
      if (auto d = payload<ipc::DefineRun>(f)) on_define_run(*d);
      return;
    case ipc::MessageType::kStart:
      if (auto s = payload<ipc::Start>(f)) on_start(*s);
      return;
    case ipc::MessageType::kRelease:
      if (auto r = payload<ipc::Release>(f)) release(r->count);
      return;
    case ipc::MessageType::kCancel:
      if (auto c = payload<ipc::Cancel>(f); c && engine_) engine_->cancel_run(c->run);
      return;
    case ipc::MessageType::kCallback:
      if (auto c = payload<ipc::Callback>(f)) on_callback(*c);
      return;
    case ipc::MessageType::kLimits:
      if (auto shares = ipc::limit_shares_from_json(f.payload); !shares) {
        leave(kExitProtocol, "bad \"limits\" payload from master");
      } else if (engine_) {
        engine_->apply_limits(*shares);
      }
      return;
    case ipc::MessageType::kLease:
      if (auto l = payload<ipc::Lease>(f); l && engine_) engine_->set_lease(l->until_ms);
      return;
    case ipc::MessageType::kLoadStart:
      if (auto l = payload<ipc::LoadStart>(f)) on_load_start(*l);
      return;
    case ipc::MessageType::kLoadStop:
      if (auto l = payload<ipc::LoadStop>(f)) {
        if (auto it = loads_.find(l->load); it != loads_.end()) it->second->stop();
      }
      return;
    case ipc::MessageType::kHello:
    case ipc::MessageType::kReady:
    case ipc::MessageType::kHeartbeat:
    case ipc::MessageType::kLeaving:
    case ipc::MessageType::kEvents:
    case ipc::MessageType::kHandback:
    case ipc::MessageType::kLoadStats:
      std::abort();  // the decoder rejects worker-only types before they get here
  }
}

void Worker::on_welcome(const ipc::Welcome& w) {
  if (welcomed_) return;
  welcomed_ = true;
  slot_ = w.slot;  // a spare learns its slot here
  if (slot_ < 0) {
    leave(kExitInitFailed, "welcome without a slot");
    return;
  }
  fault_ = fault_from_env(slot_);
  if (fault_ == Fault::kCrashAtStart) _exit(1);
  if (fault_ == Fault::kInitFail) {
    leave(kExitInitFailed, "test fault init_fail");
    return;
  }
  heartbeat_ms_ = w.heartbeat_ms;
  max_memory_ = w.max_memory_bytes;
  LogOptions log{home_ + "/logs", "worker-" + std::to_string(slot_),
                 w.log_max_bytes, w.log_files,
                 w.log_level,     false};
  if (Status s = open_log(log); !s) {
    std::fprintf(stderr, "corral worker %d: %s\n", slot_, s.message().c_str());
    leave(kExitInitFailed, s.message());
    return;
  }
  std::set_new_handler(&on_out_of_memory);
  if (Status s = apply_kernel_limit(w.kernel_memory_bytes); !s) {
    spdlog::error("{}", s.message());
    leave(kExitInitFailed, s.message());
    return;
  }
  spdlog::info("worker {} (pid {}) starting: heartbeat {} ms, max_memory {} bytes", slot_, getpid(),
               heartbeat_ms_, max_memory_);
  start_engine(w);
  flush_timer_ = std::make_unique<uv::Timer>(loop_);
  heartbeat_ = std::make_unique<uv::Timer>(loop_);
  next_beat_ns_ = uv_hrtime() + heartbeat_ms_ * 1000000;
  heartbeat_->start(heartbeat_ms_, heartbeat_ms_, [this] { on_heartbeat_timer(); });
  uv::set_pulse([this] { on_heartbeat_timer(); });
  uv::pulse_due(next_beat_ns_ + heartbeat_ms_ * 1000000);
  if (max_memory_ != 0) {
    memory_ = std::make_unique<uv::Timer>(loop_);
    memory_->start(kMemoryCheckMs, kMemoryCheckMs, [this] { check_memory(); });
  }
  idle_rss_ = self_rss_bytes();
  if (fault_ != Fault::kNeverReady) send(ipc::MessageType::kReady, nlohmann::json::object());
  spdlog::info("worker {} ready", slot_);
  start_fault();
}

// The HTTP clients and the engine, as the welcome sets them up. Throws std::invalid_argument
// for settings that break the contract (the master's protocol error).
void Worker::start_engine(const ipc::Welcome& w) {
  for (const auto& [name, value] : w.secrets) secrets_.add(name, value);
  ClientOptions http;
  if (w.max_response_bytes != 0) http.max_body_bytes = w.max_response_bytes;
  if (w.response_memory_bytes != 0) http.memory_budget_bytes = w.response_memory_bytes;
  if (w.max_connections_per_host != 0) http.max_connections_per_host = w.max_connections_per_host;
  http::TlsOptions tls;
  if (!w.tls.is_null()) {
    auto read = http::tls_options_from_json(w.tls, "welcome.tls");
    if (!read) throw std::invalid_argument(read.status().message());
    tls = std::move(*read);
  }
  auto version = http::http_version_from(w.http_version);
  if (!version) throw std::invalid_argument("welcome.http_version: not auto, 1.1 or 2");
  http.tls = tls;
  budget_.limit = http.memory_budget_bytes;
  curl_ = std::make_unique<LazyClient>(
      [this, http] { return std::make_unique<CurlClient>(loop_, http, &budget_); });
  HttpClient* client = curl_.get();
  if (w.http_client != "curl") {
    lean_ = std::make_unique<LeanClient>(loop_, http, *curl_, budget_);
    client = lean_.get();
  }
  engine_ = std::make_unique<Engine>(
      loop_, *client, [this](ipc::Event&& ev) { on_event(std::move(ev)); }, secrets_);
  engine_->set_http_defaults(std::move(tls), *version);
  engine_->set_callbacks(w.callback_base, w.callback_key);
  // The page is owned by the master; it stays mapped until this process ends.
  engine_->set_in_hand(ipc::map_in_hand(ipc::kInHandFd));
  engine_->set_poison(poison_instance_from_env());
  engine_->set_lease(w.lease_until_ms);
}

void Worker::on_heartbeat_timer() {
  uint64_t now = uv_hrtime();
  // How late this tick fired: the time the loop spent on something else.
  last_lag_ms_ = now > next_beat_ns_ ? static_cast<double>(now - next_beat_ns_) / 1e6 : 0.0;
  if (last_lag_ms_ >= kSlowBeatMs) {
    spdlog::warn("worker {}: the heartbeat is {:.0f} ms late (a busy or starved loop)", slot_,
                 last_lag_ms_);
  }
  next_beat_ns_ = now + heartbeat_ms_ * 1000000;
  // Should the timer be a whole interval late, the engine's callbacks beat (shared/uv/pulse.h).
  uv::pulse_due(next_beat_ns_ + heartbeat_ms_ * 1000000);
  ipc::Heartbeat beat;
  beat.seq = ++seq_;
  beat.loop_lag_ms = last_lag_ms_;
  beat.rss_bytes = self_rss_bytes();
  beat.idle_rss_bytes = idle_rss_;
  beat.active = engine_ ? engine_->active() : 0;
  beat.requests = engine_ ? engine_->requests_sent() : 0;
  if (HttpClient* http = lean_ ? static_cast<HttpClient*>(lean_.get()) : curl_.get()) {
    std::vector<ipc::HttpErrorCounts> counts;
    for (const auto& [origin, e] : http->origin_errors()) {
      counts.push_back({origin, e.connect, e.reset, e.timeout, e.retried});
    }
    if (!counts.empty()) beat.http_errors = ipc::http_errors_to_json(counts);
  }
  if (engine_ && engine_->has_limits()) beat.limits = ipc::to_json(engine_->limit_use());
  send(ipc::MessageType::kHeartbeat, ipc::to_json(beat));
  check_memory();
}

void Worker::check_memory() {
  if (max_memory_ == 0 || leaving_) return;
  uint64_t rss = self_rss_bytes();
  if (rss <= max_memory_) return;
  spdlog::warn("worker {}: RSS {} bytes is past max_memory {} bytes; leaving to be replaced", slot_,
               rss, max_memory_);
  send(ipc::MessageType::kLeaving, ipc::to_json(ipc::Leaving{"memory_soft", rss}));
  leave(kExitMemorySoft, "soft memory limit");
}

void Worker::leave(int code, const std::string& why) {
  if (leaving_) return;
  leaving_ = true;
  exit_code_ = code;
  spdlog::info("worker {} leaving (exit {}): {}", slot_, code, why);
  heartbeat_.reset();
  uv::set_pulse(nullptr);
  memory_.reset();
  fault_timer_.reset();
  flush_timer_.reset();
  reap_timer_.reset();
  loads_.clear();
  engine_.reset();
  lean_.reset();
  curl_.reset();
  auto close_all = [this] {
    leave_timer_.reset();
    if (pipe_) pipe_->close();
  };
  leave_timer_ = std::make_unique<uv::Timer>(loop_);
  leave_timer_->start(kLeaveFlushMs, 0, close_all);
  if (pipe_ && pipe_->is_open()) {
    pipe_->shutdown(close_all);
  } else {
    close_all();
  }
}

void Worker::on_define_run(const ipc::DefineRun& d) {
  if (!engine_) return;
  RunShape shape;
  shape.size = d.size;
  shape.created_ms = d.created_ms;
  shape.priority = d.priority;
  shape.data = d.data;
  Status s = engine_->define_run(d.run, d.scenario, d.vars, shape);
  if (!s) spdlog::error("run {}: scenario rejected: {}", d.run, s.message());
}

// A call of an instance's callback URL, or a heartbeat, that the master journaled.
void Worker::on_callback(const ipc::Callback& c) {
  if (!engine_) return;
  std::optional<nlohmann::json> body;
  if (!c.heartbeat) body = c.body;
  engine_->callback(c.run, c.index, c.step, std::move(body));
}

void Worker::on_start(const ipc::Start& start) {
  if (!engine_) return;
  const std::string& run = start.run;
  auto fail = [&](uint32_t i, const std::string& why) {
    ipc::Event ev;
    ev.kind = ipc::EventKind::kDone;
    ev.run = run;
    ev.index = i;
    ev.outcome = ipc::Outcome::kErrored;
    ev.reason = why;
    ev.started_ms = ev.ended_ms = unix_ms_now();
    on_event(std::move(ev));
  };
  if (start.resume.is_object()) {
    for (const auto& [key, json_cp] : start.resume.items()) {
      auto i = static_cast<uint32_t>(std::stoul(key));
      auto cp = ipc::checkpoint_from_json(json_cp, "resume." + key);
      // A checkpoint of the wrong shape is the master's protocol error: leave.
      if (!cp) throw std::invalid_argument(cp.status().message());
      Status s = engine_->start(run, i, *cp);
      if (!s) fail(i, s.message());
    }
    return;
  }
  for (uint32_t i = start.first; i < start.first + start.count; ++i) {
    Status s = engine_->start(run, i, ipc::Checkpoint{});
    if (!s) fail(i, s.message());
  }
}

void Worker::on_load_start(const ipc::LoadStart& l) {
  if (!engine_) return;
  const std::string& id = l.load;
  if (id.empty() || loads_.count(id) != 0) return;
  auto spec = load::parse_load(l.spec);
  if (!spec) {
    load_failed(id, spec.status().message());
    return;
  }
  LoadShare share{l.index, l.of, l.host, l.hosts};
  auto driver = std::make_unique<LoadDriver>(
      loop_, *engine_, id, std::move(*spec), share, [this](ipc::LoadSecond&& s) {
        send(ipc::MessageType::kLoadStats, ipc::to_json(s));
        if (s.done) reap_loads();
      });
  Status s = driver->start(l.scenario, l.vars, l.delay_ms);
  if (!s) {
    load_failed(id, s.message());
    return;
  }
  spdlog::info("load {}: share {} of {} (host {} of {}) starting", id, share.index, share.of,
               share.host, share.hosts);
  loads_.emplace(id, std::move(driver));
}

// Forgets finished load tests, from the loop: a driver reports its end from its own callbacks.
void Worker::reap_loads() {
  if (!reap_timer_) reap_timer_ = std::make_unique<uv::Timer>(loop_);
  reap_timer_->start(0, 0, [this] {
    std::erase_if(loads_, [](const auto& entry) { return entry.second->finished(); });
  });
}

void Worker::load_failed(const std::string& id, const std::string& why) {
  spdlog::error("load {}: cannot start: {}", id, why);
  ipc::LoadSecond s;
  s.load = id;
  s.done = true;
  s.reasons["cannot start: " + why] = 1;
  send(ipc::MessageType::kLoadStats, ipc::to_json(s));
}

void Worker::hand_back() {
  if (!engine_ || engine_->active() == 0) return;
  nlohmann::json all = engine_->take_all();
  nlohmann::json chunk = nlohmann::json::object();
  size_t n = 0, total = 0;
  for (auto& [run, instances] : all.items()) {
    for (auto& [index, cp] : instances.items()) {
      chunk[run][index] = std::move(cp);
      ++total;
      if (++n == kHandbackPerFrame) {
        send(ipc::MessageType::kHandback, ipc::to_json(ipc::Handback{std::move(chunk), false}));
        chunk = nlohmann::json::object();
        n = 0;
      }
    }
  }
  if (n > 0)
    send(ipc::MessageType::kHandback, ipc::to_json(ipc::Handback{std::move(chunk), false}));
  spdlog::info("worker {}: handed back {} running instances", slot_, total);
}

void Worker::release(uint32_t count) {
  // The events of the instances about to leave go first: the master applies their finished
  // steps before it takes their checkpoints.
  flush_events();
  size_t taken = 0;
  nlohmann::json instances = nlohmann::json::object();
  if (engine_) instances = engine_->take_waiting(std::min<size_t>(count, kReleasePerFrame), taken);
  send(ipc::MessageType::kHandback, ipc::to_json(ipc::Handback{std::move(instances), true}));
  spdlog::log(taken > 0 ? spdlog::level::info : spdlog::level::debug,
              "worker {}: released {} of the {} instances asked for", slot_, taken, count);
}

void Worker::on_event(ipc::Event&& ev) {
  events_.push_back(ipc::to_json(ev));
  if (events_.size() >= kEventBatch) {
    flush_events();
  } else if (events_.size() == 1 && flush_timer_) {
    flush_timer_->start(kEventFlushMs, 0, [this] { flush_events(); });
  }
}

void Worker::flush_events() {
  if (events_.empty()) return;
  send(ipc::MessageType::kEvents, {{"events", std::move(events_)}});
  events_ = nlohmann::json::array();
}

void Worker::start_fault() {
  if (fault_ == Fault::kNone || fault_ == Fault::kNeverReady) return;
  fault_timer_ = std::make_unique<uv::Timer>(loop_);
  // alloc_soft grows 4 MiB per 100 ms, well under the gap between the soft and hard limits per
  // memory check, so the worker notices before the master would.
  uint64_t repeat = fault_ == Fault::kAllocSoft ? 100 : 0;
  fault_timer_->start(kFaultDelayMs, repeat, [this] {
    switch (fault_) {
      case Fault::kHang:
        spdlog::warn("test fault: hanging the loop");
        for (;;) pause();
      case Fault::kGarbageFrame:
        spdlog::warn("test fault: sending a garbage frame");
        (void)pipe_->write(std::string("\xff\xff\xff\xff garbage", 12));
        return;
      case Fault::kBadPayload:
        spdlog::warn("test fault: sending a heartbeat whose fields have the wrong types");
        send(ipc::MessageType::kHeartbeat, {{"seq", "one"}, {"rss_bytes", "lots"}});
        return;
      case Fault::kAllocSoft: {
        constexpr size_t kChunk = 4u << 20;
        auto chunk = std::make_unique<char[]>(kChunk);
        std::memset(chunk.get(), 1, kChunk);
        ballast_.push_back(std::move(chunk));
        return;
      }
      case Fault::kAllocHard: {
        spdlog::warn("test fault: blocking the loop while growing past the hard limit");
        uint64_t target = max_memory_ + max_memory_ * 3 / 8;
        while (self_rss_bytes() < target) {
          constexpr size_t kChunk = 4u << 20;
          auto chunk = std::make_unique<char[]>(kChunk);
          std::memset(chunk.get(), 1, kChunk);
          ballast_.push_back(std::move(chunk));
        }
        for (;;) pause();
      }
      case Fault::kAllocKernel: {
        spdlog::warn("test fault: one allocation of 4x max_memory");
        volatile char* p = static_cast<char*>(::operator new(max_memory_ * 4));
        p[0] = 1;
        return;
      }
      case Fault::kThrow:
        throw std::runtime_error("test fault: thrown from a timer callback");
      case Fault::kNone:
      case Fault::kCrashAtStart:
      case Fault::kInitFail:
      case Fault::kNeverReady:
        return;
    }
  });
}

}  // namespace corral::worker
