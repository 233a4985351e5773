#include "steps/ws/sockets.h"

#include <algorithm>
#include <vector>

#include "shared/proc.h"
#include "steps/ws/ws.h"
#include "worker/engine/instance.h"

namespace corral::steps::ws {
namespace {

using worker::Engine;
using worker::Instance;
using worker::ws::Closed;
using worker::ws::Opened;
using worker::ws::Socket;
namespace wire = corral::ws;

// The key of the engine's Sockets: every ws kind asks the engine for the state of this one
// runner (Engine::state_of), so that all of them share the sockets. It runs no step.
class SocketsKey final : public worker::StepRunner {
 public:
  void run(Engine&, Instance&) const override {}
  std::unique_ptr<State> make_state(Engine& engine) const override {
    return std::make_unique<Sockets>(engine);
  }
};
const SocketsKey kSockets;

// The step on `name` that instance `in` runs now, if it waits for an event of that socket.
const OnSocket* waiting_on(const Instance& in, const std::string& name) {
  if (in.cp.step_started_ms == 0) return nullptr;
  std::string_view kind = in.step().kind->name;
  if (kind != "ws_receive" && kind != "ws_close") return nullptr;
  const auto& spec = in.step().spec_as<OnSocket>();
  return spec.socket == name ? &spec : nullptr;
}

int64_t ns_of_ms(double ms) { return static_cast<int64_t>(ms * 1e6); }

// Whether the step's `retry.on` covers how the opening failed: no answer (transport), or an
// answer other than 101 (by its status class).
bool retryable(const scenario::RetryOn& on, const Opened& o) {
  if (o.status == 0) return on.transport;
  if (o.status >= 500) return on.server_error;
  if (o.status >= 400) return on.client_error;
  return false;
}

}  // namespace

std::string how_closed(const Closed& c) {
  if (!c.error.empty()) return "ended: " + c.error;
  std::string code = c.code == wire::kCloseNoStatus ? "no code" : std::to_string(c.code);
  std::string reason = c.reason.empty() ? "" : " \"" + c.reason + "\"";
  return std::string(c.by_server ? "closed by the server" : "closed") + " with " + code + reason;
}

Sockets& sockets(Engine& engine) { return static_cast<Sockets&>(*engine.state_of(kSockets)); }

Sockets::Sockets(Engine& engine)
    : engine_(engine),
      handshakes_(engine.loop()),
      client_(engine.loop(), contexts_, handshakes_, engine.default_tls()),
      deadline_timer_(engine.loop()) {}

void Sockets::time_out(Instance& in) {
  std::deque<Deadline>& fifo = deadlines_[in.step().limit_ms];
  if (!fifo.empty() && fifo.back().at_ms > in.cp.deadline_ms) {
    // Out of order (a wait resumed from a checkpoint): the engine's own wake-up.
    engine_.time_out_at(in, in.cp.deadline_ms,
                        engine_.timed_out_reason(in, -1) + ": no message matched");
    return;
  }
  fifo.push_back({in.cp.deadline_ms, in.serial, in.cp.step, in.cp.step_started_ms});
  if (timer_at_ms_ == 0 || in.cp.deadline_ms < timer_at_ms_) arm_deadlines();
}

void Sockets::arm_deadlines() {
  int64_t first = 0;
  for (const auto& [limit, fifo] : deadlines_) {
    if (!fifo.empty() && (first == 0 || fifo.front().at_ms < first)) first = fifo.front().at_ms;
  }
  timer_at_ms_ = first;
  if (first == 0) {
    deadline_timer_.stop();
    return;
  }
  const int64_t wait = std::max<int64_t>(0, first - unix_ms_now());
  deadline_timer_.start(static_cast<uint64_t>(wait), 0, [this] { on_deadlines(); });
}

void Sockets::on_deadlines() {
  const int64_t now = unix_ms_now();
  std::vector<Deadline> due;
  for (auto& [limit, fifo] : deadlines_) {
    while (!fifo.empty() && fifo.front().at_ms <= now) {
      due.push_back(fifo.front());
      fifo.pop_front();
    }
  }
  for (const Deadline& d : due) {
    engine_.with_instance(d.serial, "a ws_receive's deadline", [&](Instance& in) {
      // Still the same wait: the step has not ended (nor a later one begun) since.
      if (in.cp.step != d.step || in.cp.step_started_ms != d.step_started_ms) {
        return;
      }
      engine_.measure_step(in, worker::ExchangeClass::kTimeout, 0, -1);
      engine_.finish(in, ipc::Outcome::kFailed,
                     engine_.timed_out_reason(in, -1) + ": no message matched");
    });
  }
  arm_deadlines();
}

Sockets::Named* Sockets::named(bool held, uint64_t key) {
  auto& map = held ? held_ : own_;
  auto it = map.find(key);
  return it == map.end() ? nullptr : &it->second;
}

Entry* Sockets::find(uint64_t serial, const std::string& name) {
  auto h = held_by_serial_.find(serial);
  Named* n = h == held_by_serial_.end() ? named(false, serial) : named(true, h->second);
  if (n == nullptr) return nullptr;
  auto e = n->find(name);
  return e == n->end() ? nullptr : &e->second;
}

Entry& Sockets::open(uint64_t serial, const std::string& name,
                     const worker::IterationSink::SocketHold& hold, worker::ws::OpenRequest req,
                     size_t backlog) {
  const bool held = hold.key != 0;
  const uint64_t key = held ? hold.key : serial;
  if (held) held_by_serial_[serial] = key;
  forget(held, key, name);
  req.group = hold.group;
  if (!hold.source.empty()) req.source = hold.source;
  Socket* s = client_.open(std::move(req), *this);
  Entry& e = (held ? held_ : own_)[key][name];
  s->set_user_data(&e);
  e.socket = s;
  e.name = name;
  e.serial = serial;
  e.backlog_max = backlog;
  return e;
}

bool Sockets::reuse(uint64_t serial, const std::string& name, uint64_t key) {
  held_by_serial_[serial] = key;
  Named* n = named(true, key);
  auto it = n == nullptr ? Named::iterator() : n->find(name);
  if (n == nullptr || it == n->end() || !it->second.open || it->second.closed) return false;
  it->second.serial = serial;
  it->second.wait_from_ns = 0;
  return true;
}

void Sockets::instance_gone(uint64_t serial) {
  if (auto h = held_by_serial_.find(serial); h != held_by_serial_.end()) {
    if (Named* n = named(true, h->second)) {
      for (auto& [name, e] : *n) {
        if (e.serial == serial) e.serial = 0;
      }
    }
    held_by_serial_.erase(h);
    return;
  }
  auto it = own_.find(serial);
  if (it == own_.end()) return;
  for (auto& [name, e] : it->second) let_go(e);
  own_.erase(it);
}

void Sockets::holder_gone(uint64_t key) {
  auto it = held_.find(key);
  if (it == held_.end()) return;
  for (auto& [name, e] : it->second) let_go(e);
  held_.erase(it);
}

void Sockets::count_sockets(uint32_t group, bool forget, worker::SocketCounts& out) {
  const worker::ws::Counts& c = client_.counts(group);
  out.open += c.open;
  out.opened += c.opened;
  out.failed += c.failed;
  out.closed += c.closed_by_server + c.errors;
  out.sent += c.sent;
  out.received += c.received;
  for (const auto& [code, n] : c.close_codes) out.close_codes[code] += n;
  if (forget) client_.forget_counts(group);
}

void Sockets::forget(bool held, uint64_t key, const std::string& name) {
  Named* n = named(held, key);
  if (n == nullptr) return;
  auto e = n->find(name);
  if (e == n->end()) return;
  let_go(e->second);
  n->erase(e);
}

void Sockets::let_go(Entry& e) {
  e.socket->set_user_data(nullptr);  // the entry goes; on_closed drops the socket
  if (e.open && !e.closed) {
    e.socket->close(wire::kCloseNormal, "");
    return;
  }
  client_.drop(e.socket);
}

template <typename Fn>
void Sockets::deliver(Socket& s, const char* where, Fn&& fn) {
  auto* entry = static_cast<Entry*>(s.user_data());
  if (entry == nullptr) return;  // being let go
  if (entry->serial == 0) {
    fn(nullptr, *entry);
    return;
  }
  engine_.with_instance(entry->serial, where, [&](Instance& in) { fn(&in, *entry); });
}

bool judge_message(Engine& engine, Instance& in, Entry& e, std::string_view data,
                   uint64_t arrived_ns) {
  const scenario::Step& step = in.step();
  nlohmann::json parsed;
  if (step.reads_json) parsed = nlohmann::json::parse(data, nullptr, false);
  scenario::ResponseView view;
  view.body = data;
  view.json = step.reads_json && !parsed.is_discarded() ? &parsed : nullptr;
  auto abort = scenario::first_holding(step.abort_if, view);
  if (!abort && !scenario::all_hold(step.spec_as<Receive>().until, view).held) return false;
  const uint64_t from = e.wait_from_ns;
  e.wait_from_ns = 0;
  engine.measure_step(in, worker::ExchangeClass::kOk, data.size(),
                      arrived_ns > from ? static_cast<int64_t>(arrived_ns - from) : 0);
  if (abort) {
    engine.expect_failed(in);
    engine.finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation);
    return true;
  }
  engine.judge_result(in, view, "");
  return true;
}

void Sockets::on_open(Socket& s, Opened&& o) {
  deliver(s, "a WebSocket's opening", [&](Instance* in, Entry& e) {
    if (!o.error.empty()) {
      e.closed = Closed{0, "", false, o.error};
      if (in == nullptr) return;  // a held socket's iteration ended first: the next reopens
      auto cls = o.timed_out     ? worker::ExchangeClass::kTimeout
                 : o.status != 0 ? worker::ExchangeClass::kStatus
                                 : worker::ExchangeClass::kTransport;
      engine_.measure_step(*in, cls, 0, ns_of_ms(o.total_ms));
      const std::string why = "ws " + s.request().url + ": " + o.error;
      if (retryable(in->step().retry.on, o) && engine_.retry_later(*in, why)) return;
      engine_.finish(*in, ipc::Outcome::kFailed,
                     why + " (" + std::to_string(in->cp.tries) + " tries)");
      return;
    }
    e.open = true;
    if (in == nullptr) return;
    engine_.measure_step(*in, worker::ExchangeClass::kOk, 0, ns_of_ms(o.total_ms));
    scenario::ResponseView view;
    view.status = o.status;
    view.headers = o.headers;
    engine_.judge_result(*in, view, "");
  });
}

void Sockets::on_message(Socket& s, wire::Kind kind, std::string_view data) {
  deliver(s, "a WebSocket message", [&](Instance* in, Entry& e) {
    if (in != nullptr && waiting_on(*in, e.name) != nullptr &&
        in->step().kind->name == "ws_receive") {
      judge_message(engine_, *in, e, data, uv_hrtime());  // one that does not match is passed over
      return;
    }
    if (e.backlog_max == 0) return;
    if (e.backlog.size() == e.backlog_max) e.backlog.erase(e.backlog.begin());
    e.backlog.push_back(Message{kind, std::string(data), uv_hrtime()});
  });
}

void Sockets::on_closed(Socket& s, Closed&& c) {
  if (s.user_data() == nullptr) {  // let go: its close has ended
    client_.drop(&s);
    return;
  }
  deliver(s, "a WebSocket's end", [&](Instance* in, Entry& e) {
    e.open = false;
    e.closed = std::move(c);
    const OnSocket* step = in == nullptr ? nullptr : waiting_on(*in, e.name);
    if (step == nullptr) return;
    if (in->step().kind->name == "ws_close") {
      engine_.step_passed(*in, nullptr, -1);
      return;
    }
    engine_.measure_step(*in, worker::ExchangeClass::kTransport, 0, -1);
    engine_.finish(*in, ipc::Outcome::kFailed,
                   "socket \"" + step->socket + "\" " + how_closed(*e.closed) +
                       " while waiting for a message");
  });
}

}  // namespace corral::steps::ws
