// Running the WebSocket steps. The sockets of an engine live in one State (Sockets), by
// instance and name, so that a socket opened by a "ws" step serves the steps after it. Messages
// that come while no ws_receive waits are kept (the socket's backlog, oldest dropped first). An
// instance that leaves the engine closes its sockets; one that resumes elsewhere (a crash, a
// move) resumes at the step that opened the socket (Step::resume_at, set by the parser): a
// socket cannot move between workers.
#include <algorithm>
#include <unordered_map>
#include <vector>

#include "shared/proc.h"
#include "steps/ws/ws.h"
#include "worker/engine/instance.h"
#include "worker/engine/step_runner.h"
#include "worker/http/link.h"
#include "worker/http/tls_context.h"
#include "worker/ws/client.h"
#include "worker/ws/socket.h"

namespace corral::steps::ws {
namespace {

using worker::Engine;
using worker::Instance;
using worker::ws::Closed;
using worker::ws::Opened;
using worker::ws::Socket;
namespace wire = corral::ws;

struct Message {
  wire::Kind kind;
  std::string data;
};

struct Entry {
  Socket* socket = nullptr;
  bool open = false;
  std::optional<Closed> closed;
  std::vector<Message> backlog;
  size_t backlog_max = kDefaultBacklog;
};

// "closed by the server with 1001 (going away)", "ended: the connection was reset".
std::string how_closed(const Closed& c) {
  if (!c.error.empty()) return "ended: " + c.error;
  std::string code = c.code == wire::kCloseNoStatus ? "no code" : std::to_string(c.code);
  std::string reason = c.reason.empty() ? "" : " \"" + c.reason + "\"";
  return std::string(c.by_server ? "closed by the server" : "closed") + " with " + code + reason;
}

class Sockets final : public worker::StepRunner::State, public worker::ws::Events {
 public:
  explicit Sockets(Engine& engine)
      : engine_(engine),
        handshakes_(engine.loop()),
        client_(engine.loop(), contexts_, handshakes_, engine.default_tls()) {}

  Entry* find(uint64_t serial, const std::string& name) {
    auto it = by_instance_.find(serial);
    if (it == by_instance_.end()) return nullptr;
    auto e = it->second.find(name);
    return e == it->second.end() ? nullptr : &e->second;
  }

  // Opens `name` for instance `serial`, closing a socket of that name it held.
  void open(uint64_t serial, const std::string& name, worker::ws::OpenRequest req, size_t backlog) {
    forget(serial, name);
    Socket* s = client_.open(std::move(req), *this);
    owners_[s] = {serial, name};
    Entry& e = by_instance_[serial][name];
    e.socket = s;
    e.backlog_max = backlog;
  }

  void instance_gone(uint64_t serial) override {
    auto it = by_instance_.find(serial);
    if (it == by_instance_.end()) return;
    for (auto& [name, e] : it->second) drop(e);
    by_instance_.erase(it);
  }

 private:
  void forget(uint64_t serial, const std::string& name) {
    auto it = by_instance_.find(serial);
    if (it == by_instance_.end()) return;
    auto e = it->second.find(name);
    if (e == it->second.end()) return;
    drop(e->second);
    it->second.erase(e);
  }

  void drop(Entry& e) {
    owners_.erase(e.socket);
    client_.drop(e.socket);
  }

  // The instance and step that hear of an event of socket `s`.
  void deliver(Socket& s, const char* where,
               const std::function<void(Instance&, Entry&, const std::string& name)>& fn) {
    auto it = owners_.find(&s);
    if (it == owners_.end()) return;
    const uint64_t serial = it->second.first;
    const std::string name = it->second.second;
    engine_.with_instance(serial, where, [&](Instance& in) {
      if (Entry* e = find(in.serial, name)) fn(in, *e, name);
    });
  }

  void on_open(Socket& s, Opened&& o) override;
  void on_message(Socket& s, wire::Kind kind, std::string_view data) override;
  void on_closed(Socket& s, Closed&& c) override;

  Engine& engine_;
  worker::tls::Contexts contexts_;  // its own: the engine's HTTP client keeps its to itself
  worker::Handshakes handshakes_;
  worker::ws::Client client_;
  std::unordered_map<uint64_t, std::unordered_map<std::string, Entry>> by_instance_;
  std::unordered_map<Socket*, std::pair<uint64_t, std::string>> owners_;
};

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

Sockets& sockets(Engine& engine) { return static_cast<Sockets&>(*engine.state_of(kSockets)); }

// The step on `name` that instance `in` runs now, if it waits for an event of that socket.
const OnSocket* waiting_on(const Instance& in, const std::string& name) {
  if (in.cp.step_started_ms == 0) return nullptr;
  std::string_view kind = in.step().kind->name;
  if (kind != "ws_receive" && kind != "ws_close") return nullptr;
  const auto& spec = in.step().spec_as<OnSocket>();
  return spec.socket == name ? &spec : nullptr;
}

// Judges a message for a waiting ws_receive: abort_if fails the step, `until` passes it (with
// the captures); true when the message ended the wait.
bool judge_message(Engine& engine, Instance& in, const Message& m) {
  const scenario::Step& step = in.step();
  nlohmann::json parsed;
  if (step.reads_json) parsed = nlohmann::json::parse(m.data, nullptr, false);
  scenario::ResponseView view;
  view.body = m.data;
  view.json = step.reads_json && !parsed.is_discarded() ? &parsed : nullptr;
  if (auto abort = scenario::first_holding(step.abort_if, view)) {
    engine.finish(in, ipc::Outcome::kFailed, "abort_if held: " + abort->explanation);
    return true;
  }
  if (!scenario::all_hold(step.spec_as<Receive>().until, view).held) return false;
  engine.judge_result(in, view, "");
  return true;
}

void Sockets::on_open(Socket& s, Opened&& o) {
  deliver(s, "a WebSocket's opening", [&](Instance& in, Entry& e, const std::string&) {
    if (!o.error.empty()) {
      engine_.finish(in, ipc::Outcome::kFailed, "ws " + s.request().url + ": " + o.error);
      return;
    }
    e.open = true;
    scenario::ResponseView view;
    view.status = o.status;
    view.headers = o.headers;
    engine_.judge_result(in, view, "");
  });
}

void Sockets::on_message(Socket& s, wire::Kind kind, std::string_view data) {
  deliver(s, "a WebSocket message", [&](Instance& in, Entry& e, const std::string& name) {
    Message m{kind, std::string(data)};
    const OnSocket* step = waiting_on(in, name);
    if (step != nullptr && in.step().kind->name == "ws_receive") {
      judge_message(engine_, in, m);  // one that does not match is passed over
      return;
    }
    if (e.backlog_max == 0) return;
    if (e.backlog.size() == e.backlog_max) e.backlog.erase(e.backlog.begin());
    e.backlog.push_back(std::move(m));
  });
}

void Sockets::on_closed(Socket& s, Closed&& c) {
  deliver(s, "a WebSocket's end", [&](Instance& in, Entry& e, const std::string& name) {
    e.open = false;
    e.closed = std::move(c);
    const OnSocket* step = waiting_on(in, name);
    if (step == nullptr) return;
    if (in.step().kind->name == "ws_close") {
      engine_.step_passed(in, nullptr, -1);
      return;
    }
    engine_.finish(in, ipc::Outcome::kFailed,
                   "socket \"" + step->socket + "\" " + how_closed(*e.closed) +
                       " while waiting for a message");
  });
}

// The socket a step needs, or the step's end with the reason it cannot be used.
Entry* usable(Engine& engine, Instance& in) {
  const auto& spec = in.step().spec_as<OnSocket>();
  Entry* e = sockets(engine).find(in.serial, spec.socket);
  if (e == nullptr || (!e->open && !e->closed)) {
    engine.finish(in, ipc::Outcome::kErrored, "socket \"" + spec.socket + "\" is not open");
    return nullptr;
  }
  return e;
}

class OpenRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override;
};

void OpenRunner::run(Engine& engine, Instance& in) const {
  if (engine.ended_past_deadline(in)) return;
  const Open& spec = in.step().spec_as<Open>();
  worker::InstanceVars vars(in, engine.secrets());
  Status error;
  worker::ws::OpenRequest req;
  req.url = spec.url.expand(vars, &error);
  for (const auto& [name, value] : spec.headers) {
    req.headers.push_back(name + ": " + value.expand(vars, &error));
  }
  if (!error.is_ok()) {
    engine.finish(in, ipc::Outcome::kErrored, "ws: " + error.message());
    return;
  }
  req.protocols = spec.protocols;
  req.max_message = spec.max_message;
  req.tls = in.run->tls[in.cp.step];
  const int64_t left = in.cp.deadline_ms - unix_ms_now();
  req.timeout_ms = in.cp.deadline_ms == 0 ? kDefaultOpenTimeoutMs
                                          : static_cast<uint64_t>(std::max<int64_t>(1, left));
  in.cp.attempts += 1;
  sockets(engine).open(in.serial, spec.socket, std::move(req), spec.backlog);
}

class SendRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    Entry* e = usable(engine, in);
    if (e == nullptr) return;
    const Send& spec = in.step().spec_as<Send>();
    if (e->closed) {
      engine.finish(in, ipc::Outcome::kFailed,
                    "socket \"" + spec.socket + "\" " + how_closed(*e->closed));
      return;
    }
    worker::InstanceVars vars(in, engine.secrets());
    Status error;
    std::string data;
    wire::Kind kind = wire::Kind::kText;
    if (spec.text) data = spec.text->expand(vars, &error);
    if (spec.json) data = spec.json->expand(vars, &error).dump();
    if (spec.binary) data = *spec.binary, kind = wire::Kind::kBinary;
    if (!error.is_ok()) {
      engine.finish(in, ipc::Outcome::kErrored, "ws_send: " + error.message());
      return;
    }
    e->socket->send(kind, data);
    engine.step_passed(in, nullptr, -1);
  }
};

class ReceiveRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    if (engine.ended_past_deadline(in)) return;
    Entry* e = usable(engine, in);
    if (e == nullptr) return;
    // What came before the step ran: in order, each passed over unless it matches.
    while (!e->backlog.empty()) {
      Message m = std::move(e->backlog.front());
      e->backlog.erase(e->backlog.begin());
      if (judge_message(engine, in, m)) return;
    }
    const auto& spec = in.step().spec_as<Receive>();
    if (e->closed) {
      engine.finish(
          in, ipc::Outcome::kFailed,
          "socket \"" + spec.socket + "\" " + how_closed(*e->closed) + " before a message matched");
      return;
    }
    if (in.cp.deadline_ms != 0) {
      engine.time_out_at(in, in.cp.deadline_ms,
                         engine.timed_out_reason(in, -1) + ": no message matched");
    }
  }
  std::string_view limit_word() const override { return "ws_receive"; }
};

class CloseRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    Entry* e = usable(engine, in);
    if (e == nullptr) return;
    if (e->closed) {
      engine.step_passed(in, nullptr, -1);
      return;
    }
    const Close& spec = in.step().spec_as<Close>();
    e->socket->close(spec.code, spec.reason);
    if (in.cp.deadline_ms != 0) {
      engine.time_out_at(in, in.cp.deadline_ms,
                         engine.timed_out_reason(in, -1) + ": the server did not answer the close");
    }
  }
};

}  // namespace

CORRAL_REGISTER_STEP_RUNNER(OpenRunner, "ws")
CORRAL_REGISTER_STEP_RUNNER(SendRunner, "ws_send")
CORRAL_REGISTER_STEP_RUNNER(ReceiveRunner, "ws_receive")
CORRAL_REGISTER_STEP_RUNNER(CloseRunner, "ws_close")

}  // namespace corral::steps::ws
