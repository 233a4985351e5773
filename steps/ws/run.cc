// Running the WebSocket steps, on the engine's Sockets (sockets.h). An instance that leaves
// the engine closes its sockets; one that resumes elsewhere (a crash, a move) resumes at the
// step that opened the socket (Step::resume_at, set by the parser): a socket cannot move between
// workers. In a held load test a socket is the VU's: the ws step of its next iteration finds it
// open and passes at once.
#include <algorithm>

#include "shared/proc.h"
#include "shared/trace_context.h"
#include "steps/ws/sockets.h"
#include "steps/ws/ws.h"
#include "worker/engine/instance.h"

namespace corral::steps::ws {
namespace {

using worker::Engine;
using worker::Instance;
namespace wire = corral::ws;

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
  // Its retry's wait is over (Engine::retry_later): it opens again.
  void on_wake(Engine& engine, Instance& in) const override { run(engine, in); }
};

void OpenRunner::run(Engine& engine, Instance& in) const {
  if (engine.ended_past_deadline(in)) return;
  const Open& spec = in.step().spec_as<Open>();
  worker::InstanceVars vars(in, engine.secrets());
  Status error;
  worker::ws::OpenRequest req;
  req.url = spec.url.expand(vars, &error);
  worker::IterationSink::SocketHold hold;
  if (error.is_ok() && in.run->sink != nullptr) hold = in.run->sink->socket_hold(in.index, req.url);
  if (hold.key != 0 && sockets(engine).reuse(in.serial, spec.socket, hold.key)) {
    engine.step_passed(in, nullptr, -1);  // the VU's socket, still open
    return;
  }
  for (const auto& [name, value] : spec.headers) {
    req.headers.push_back(name + ": " + value.expand(vars, &error));
  }
  if (!has_header(spec.headers, "traceparent")) {  // the handshake is a request of the trace
    if (std::string tp = engine.next_traceparent(in); !tp.empty()) {
      req.headers.push_back("traceparent: " + tp);
    }
  }
  if (!error.is_ok()) {
    engine.finish(in, ipc::Outcome::kErrored, "ws: " + error.message());
    return;
  }
  req.protocols = spec.protocols;
  req.max_message = spec.max_message;
  req.ping_every_ms = spec.ping_every_ms;
  req.deflate = spec.deflate;
  req.tls = in.run->tls[in.cp.step];
  const int64_t left = in.cp.deadline_ms - unix_ms_now();
  req.timeout_ms = in.cp.deadline_ms == 0 ? kDefaultOpenTimeoutMs
                                          : static_cast<uint64_t>(std::max<int64_t>(1, left));
  in.cp.attempts += 1;
  in.cp.tries += 1;
  sockets(engine).open(in.serial, spec.socket, hold, std::move(req), spec.backlog);
}

class SendRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    Entry* e = usable(engine, in);
    if (e == nullptr) return;
    const Send& spec = in.step().spec_as<Send>();
    if (e->closed) {
      engine.measure_step(in, worker::ExchangeClass::kTransport, 0, -1);
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
    e->wait_from_ns = uv_hrtime();
    engine.measure_step(in, worker::ExchangeClass::kOk, 0, -1);
    engine.step_passed(in, nullptr, -1);
  }
};

class ReceiveRunner final : public worker::StepRunner {
 public:
  void run(Engine& engine, Instance& in) const override {
    if (engine.ended_past_deadline(in)) return;
    Entry* e = usable(engine, in);
    if (e == nullptr) return;
    if (e->wait_from_ns == 0) e->wait_from_ns = uv_hrtime();  // no send before it
    // What came before the step ran: in order, each passed over unless it matches.
    while (!e->backlog.empty()) {
      Message m = std::move(e->backlog.front());
      e->backlog.erase(e->backlog.begin());
      if (judge_message(engine, in, *e, m.data, m.arrived_ns)) return;
    }
    const auto& spec = in.step().spec_as<Receive>();
    if (e->closed) {
      engine.measure_step(in, worker::ExchangeClass::kTransport, 0, -1);
      engine.finish(
          in, ipc::Outcome::kFailed,
          "socket \"" + spec.socket + "\" " + how_closed(*e->closed) + " before a message matched");
      return;
    }
    if (in.cp.deadline_ms != 0) sockets(engine).time_out(in);
  }
  std::string_view limit_word() const override { return "ws_receive"; }
  // A wait that resumed out of order times out through the engine (Sockets::time_out).
  void timed_out(Engine& engine, Instance& in) const override {
    engine.measure_step(in, worker::ExchangeClass::kTimeout, 0, -1);
  }
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
