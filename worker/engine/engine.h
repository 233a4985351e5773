// The scenario engine of one worker: runs every assigned instance at once on the worker's
// loop. A waiting instance is one small struct and one entry in the engine's WakeQueue: no
// thread, no stack, no buffer, no handle of its own. An instance in flight holds one HTTP
// request. All instances of a run share its parsed, immutable scenario.
//
// The engine reports state transitions, never polls (shared/ipc/events.h): one event when a
// step ends, one when an instance ends, and a `progress` event when a step's counters must
// survive a crash (each retry; every minute's worth of attempts of a poll with max_attempts).
// Everything it reports has secrets masked.
//
// No response, variable or bug in a step can take the worker down: every callback from the
// loop into an instance's code is a boundary where an exception ends that instance `errored`,
// with the exception's text as the reason. Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario/model.h"
#include "shared/data/rows.h"
#include "shared/ipc/checkpoint.h"
#include "shared/ipc/control.h"
#include "shared/ipc/events.h"
#include "shared/ipc/in_hand.h"
#include "shared/secrets.h"
#include "shared/status.h"
#include "shared/trace_context.h"
#include "worker/engine/gates.h"
#include "worker/engine/step_runner.h"
#include "worker/engine/wake_queue.h"
#include "worker/http/client.h"

namespace corral::worker {

struct Instance;

// What an instance held by the host's ended lease does when a later lease comes
// (Engine::set_lease): start its step again, or send its request.
enum class Held : uint8_t { kNo, kRunStep, kSend };

class HttpStepRunner;
namespace otlp {
class SpanExporter;
}

// How one HTTP exchange of a load iteration went. kExpect is reported separately, by
// IterationSink::on_expect_failed, because it is known only once the step judged the response.
enum class ExchangeClass : uint8_t {
  kOk,
  kStatus,     // 400 or more, in a request step without `expect`
  kTransport,  // no response: connect, reset, protocol
  kTimeout,    // no response before the request's timeout
};

// Load mode (worker/load/): a run defined with a sink is a stream of iterations. Its
// instances are iterations of virtual users (the instance index is the VU), nothing of it is
// emitted as events, and the sink hears of every exchange and every iteration's end instead.
// Calls come from the loop, inside the engine: a sink may start the VU's next iteration from
// on_iteration_end, and must not end other instances of the run from these calls.
class IterationSink {
 public:
  virtual ~IterationSink() = default;
  // `elapsed_ns`: from the step deciding to send (the client's queue included) to the
  // response's last byte, or the error.
  // `trace`: the trace its traceparent carried (all zeros: none).
  virtual void on_exchange(uint32_t vu, size_t step, const HttpResponse& resp, ExchangeClass cls,
                           uint64_t elapsed_ns, TraceId trace) = 0;
  // The step failed on the response just reported (expect, fail_if).
  virtual void on_expect_failed(uint32_t vu, size_t step) = 0;
  // `reason`: why it did not pass (secrets masked); empty when it passed. `trace`: the
  // iteration's (all zeros: its requests carried none).
  virtual void on_iteration_end(uint32_t vu, ipc::Outcome outcome, const std::string& reason,
                                TraceId trace) = 0;
  // The VU's request is about to go to the client: the sink may set how it travels (a held
  // connection's pin and source address).
  virtual void on_request(uint32_t /*vu*/, HttpRequest& /*req*/) {}

  // Where the VU's socket to `url` lives (the WebSocket steps). `key` 0: with the iteration,
  // closed when it ends; else the VU's for the whole test (the held model), under that key
  // (StepRunner::State::holder_gone ends it). Its counts go to `group`; it connects from
  // `source` ("": the kernel's choice).
  struct SocketHold {
    uint64_t key = 0;
    uint32_t group = 0;
    std::string source;
  };
  virtual SocketHold socket_hold(uint32_t /*vu*/, std::string_view /*url*/) { return {}; }
  // A step that sends no HTTP request measured one of its operations (a WebSocket's opening,
  // a message sent or received): counted as one of the step's requests, of class `cls`, with
  // `bytes` received; `elapsed_ns` < 0 records no latency.
  virtual void on_measure(uint32_t /*vu*/, size_t /*step*/, ExchangeClass /*cls*/,
                          uint64_t /*bytes*/, int64_t /*elapsed_ns*/, TraceId /*trace*/) {}
};

// What the master says of a run's size, for spreading its starts (ipc define_run).
struct RunShape {
  uint32_t size = 0;       // instances in the run; 0: unknown, no spread
  int64_t created_ms = 0;  // when it was submitted
  // A run over data rows (shared/data/rows.h): {"path", "format", "index", "columns": [...]};
  // instance i reads row i as {{row.<column>}}. Null for other runs.
  nlohmann::json data = nullptr;
  uint32_t priority = 1;  // its weight in the fair share of per-target limits (1 to 100)
};

class Engine {
 public:
  using Emit = std::function<void(ipc::Event&&)>;
  // `secrets` are expanded by `{{secret.NAME}}` and masked in all that is emitted; they must
  // outlive the engine.
  Engine(uv_loop_t* loop, HttpClient& http, Emit emit, const Secrets& secrets);
  ~Engine();

  // Makes a run known: its scenario document (validated by the master, parsed again here)
  // and its run-time vars. A fresh instance i of a run with a start spread S waits until
  // created_ms + S * i / size before its first step. Fails with the parser's message, or when a
  // step's kind has no runner in this worker.
  Status define_run(const std::string& run, const nlohmann::json& scenario,
                    const nlohmann::json& vars, RunShape shape = {});
  // The same for a load run: `sink` (which must outlive the run) hears what happens, and an
  // iteration pauses `think_ms` between two steps.
  Status define_load_run(const std::string& run, const nlohmann::json& scenario,
                         const nlohmann::json& vars, IterationSink* sink, uint64_t think_ms);
  bool has_run(const std::string& run) const { return runs_.count(run) != 0; }
  // Starts instance `index` of `run` from `cp` (a fresh instance has the default checkpoint;
  // cp.vars is in wire form). Fails when the run is unknown or the checkpoint does not fit it.
  Status start(const std::string& run, uint32_t index, const ipc::Checkpoint& cp);
  // Ends every instance of `run` as cancelled (a transfer in flight is dropped) and forgets it.
  void cancel_run(const std::string& run);
  // Instances of `run` running now (for a load run: iterations in progress).
  size_t active(const std::string& run) const;
  // Stops every instance without an event and returns their checkpoints (wire form), keyed by
  // run then index: for handing them back to the master. Iterations of load runs are dropped:
  // a load test does not move between workers.
  nlohmann::json take_all();
  // Stops up to `max` instances that are waiting (between poll attempts, before a retry,
  // sleeping), without an event, and returns their checkpoints as take_all() does: for moving
  // them to another worker. An instance with a request in flight or queued is not taken, so
  // that no request is sent twice; nor is a load iteration. `taken` is how many were.
  nlohmann::json take_waiting(size_t max, size_t& taken);

  size_t active() const { return instances_.size() - branch_of_.size(); }
  // HTTP requests built and handed to the client since the engine started (retries included).
  uint64_t requests_sent() const { return requests_sent_; }
  HttpClient& http() { return http_; }
  // The shared page that tells the master which instance the loop is in (may be null).
  void set_in_hand(ipc::InHand* page) { in_hand_ = page; }
  // The daemon's defaults for requests' TLS options and HTTP version (config "tls" and
  // "http_version"), under a scenario's and a request's own. Before define_run().
  void set_http_defaults(http::TlsOptions tls, http::HttpVersion version) {
    default_tls_ = std::move(tls);
    default_version_ = version;
  }
  // Callback steps (steps/callback): the URL their tokens are put under (the daemon's, as its
  // systems under test reach it) and the key the tokens are made with (shared/callback).
  void set_callbacks(std::string base_url, std::string key);
  // The master passes on a call of the callback URL of step `step` of instance `index` of `run`
  // (its JSON body), or with no body a heartbeat. The instance keeps it until it reaches that
  // step, or uses it at once when it waits there; unknown instances and steps it has passed
  // ignore it.
  void callback(const std::string& run, uint32_t index, uint32_t step,
                std::optional<nlohmann::json> body);
  // {{callback_url}} for the instance: its next callback step's URL; "" when none follows.
  std::string callback_url(const Instance& in) const;
  // Branches (steps/parallel): a step that runs lists of steps at once runs each list as a
  // branch, an Instance of its own with the same run and index, its own position and
  // captures, that reads the instance's variables too. A branch's step events go to the master
  // with the instance's checkpoint (every branch's position in it); its end goes to the step's
  // runner (StepRunner::branch_ended), not to the master.
  struct Branch {
    enum class State : uint8_t { kWaiting, kRunning, kPassed, kFailed };
    State state = State::kWaiting;
    size_t first = 0;     // its first step
    uint64_t serial = 0;  // kRunning: its instance
    nlohmann::json from;  // kWaiting: the checkpoint (wire form) it resumes from; null: fresh
    nlohmann::json vars;  // kPassed: what it captured
    ipc::Outcome outcome = ipc::Outcome::kFailed;  // kFailed: failed or errored, and why
    std::string reason;
  };
  // Opens the branches of the instance's current step, one per first step: where its
  // checkpoint left them (cp.branches), else fresh. Starts none. Throws when the checkpoint's
  // branches do not fit the step.
  std::vector<Branch>& fork(Instance& in, const std::vector<size_t>& first);
  // The instance's open branches; nullptr when it has none.
  std::vector<Branch>* branches(const Instance& in);
  // Starts waiting branch `b`. Its step runs from the loop, after this call returns.
  void start_branch(Instance& in, size_t b);
  // Ends the branches still running, without events (a request of theirs in flight is
  // aborted: abandon_request), and forgets all of them.
  void close_fork(const Instance& in);
  // The instance a branch belongs to; nullptr for an instance that is no branch.
  const Instance* parent_of(const Instance& in) const;
  // {{row.<column>}} of the instance (of the instance it is a branch of); nullptr when its run
  // has no data rows or the row has no such column.
  const nlohmann::json* row_value(const Instance& in, std::string_view column) const;

  // Per-target limits (worker/engine/gates.h): this worker's shares, from the master, and what
  // each limit's requests do here, for the heartbeat. Load runs pass no gate.
  void apply_limits(const ipc::LimitShares& shares) { gates_.apply(shares); }
  ipc::LimitUses limit_use() const { return gates_.use(); }
  bool has_limits() const { return !gates_.empty(); }

  // The host's lease (ipc::Lease; ipc::kNoLease: none). Past its end, by the monotonic clock
  // read at that moment, no instance of a run starts a step or builds a request: each is held
  // where it was, and goes on when a later lease comes (or is cancelled meanwhile). A request
  // already handed to the client goes on. Load runs are not held.
  void set_lease(uint64_t until_ms);

  // Tests only (CORRAL_TEST_POISON_INSTANCE): abort whenever a step of instance `index` runs.
  void set_poison(std::optional<uint32_t> index) { poison_ = index; }

  // For the step runners (worker/engine/step_runner.h, steps/*/run.cc): what a step may do with
  // its instance. Loop thread, inside a runner's call.
  uv_loop_t* loop() const { return loop_; }
  const Secrets& secrets() const { return secrets_; }
  // The traceparent for a new request of `in` (an HTTP request, a WebSocket handshake): a span
  // of its own in the instance's trace, or the load iteration's; "" when its scenario sends none
  // (shared/trace_context.h).
  std::string next_traceparent(const Instance& in) const;
  // The trace of `in`'s requests: the instance's, or the load iteration's; all zeros when its
  // scenario sends none.
  TraceId trace_of(const Instance& in) const;
  // The daemon's TLS options (set_http_defaults): what a step without its own uses.
  const http::TlsOptions& default_tls() const { return default_tls_; }
  // The kind's per-engine state (StepRunner::make_state), made on first use.
  StepRunner::State* state_of(const StepRunner& runner);
  // A load run's step measured itself (IterationSink::on_measure); nothing for other runs.
  void measure_step(const Instance& in, ExchangeClass cls, uint64_t bytes, int64_t elapsed_ns);
  // The kinds' things held under `key` (IterationSink::SocketHold::key) go.
  void release_held(uint64_t key);
  // What the kinds' sockets of `group` did (StepRunner::State::count_sockets).
  SocketCounts socket_counts(uint32_t group, bool forget);
  // Calls `fn` with the instance `serial` if it is still there, from a callback of the loop
  // (a child's exit): as a wake-up or a response does, exceptions ending the instance.
  void with_instance(uint64_t serial, const char* where, const std::function<void(Instance&)>& fn);
  struct Run {
    std::string id;
    std::shared_ptr<const scenario::Scenario> scenario;
    std::vector<const StepRunner*> runners;  // of each step, by index
    nlohmann::json vars;                     // scenario vars overlaid with run-time vars
    size_t active = 0;
    IterationSink* sink = nullptr;  // set for a load run
    uint64_t think_ms = 0;          // load runs: the pause between two steps
    uint64_t jitter_seed = 0;       // of the id: the first key of every jitter factor
    RunShape shape;
    uint64_t start_spread_ms = 0;  // scenario::start_spread_ms() of the run
    // Runs with callback steps only: for each step, the next callback step at or after it
    // (-1: none); and the serial of each instance here, so that a call finds its instance.
    std::vector<int32_t> next_callback;
    std::unordered_map<uint32_t, uint64_t> serials;
    std::unique_ptr<data::RowFile> rows;  // a run over data rows: its file
    // Of each step: its requests' TLS options, the request's over the scenario's over the
    // daemon's (nullptr when they are the daemon's: the client's own), and HTTP version.
    std::vector<std::shared_ptr<const http::TlsOptions>> tls;
    std::vector<http::HttpVersion> versions;
    // Where its requests' spans go (scenario "otlp_endpoint", the traces URL); null: nowhere.
    std::shared_ptr<const std::string> otlp_url;
  };
  // Fills Run::tls, Run::versions and Run::otlp_url.
  void resolve_http(Run& r) const;
  // Wakes the step's runner (StepRunner::on_wake) at `at_ms` (Unix ms); the instance counts
  // as waiting until then, so it may move to another worker.
  void wake_step_at(Instance& in, int64_t at_ms);
  // Sends the step's request (its try counted in in.cp.tries); the answer goes to the runner's
  // on_response.
  void send(Instance& in);
  // The instance leaves with its request in flight: the request is aborted (its connection
  // closes) instead of being answered to no one. Load runs' requests are left to end: the end
  // of a load run closes its held connections itself.
  void abandon_request(const Instance& in);
  // The engine's judgement of a response common to every kind that sends: a transport error
  // (retried or the step's end), `abort_if`, a retryable status. Calls runner.judge() with what
  // is left.
  void on_http_response(Instance& in, HttpResponse&& resp, const HttpStepRunner& runner);
  // Tries the step's request again after its retry interval, when `retry` allows another try;
  // false when it does not.
  bool retry_later(Instance& in, const std::string& why);
  // Fails the step, and returns true, when its deadline passed while it did not run (it
  // resumed late, or waited for its turn).
  bool ended_past_deadline(Instance& in);
  // Waits for the step's deadline, then fails it with `reason`; its record shows the status
  // and the start of `last` (the response the step is still not satisfied with), if given.
  void time_out_at(Instance& in, int64_t at_ms, std::string reason,
                   const HttpResponse* last = nullptr);
  // "step timed out after 30s (last request in flight 2s)"; `in_flight_ms` < 0 leaves it out.
  std::string timed_out_reason(const Instance& in, int64_t in_flight_ms) const;
  // Sets the step's captures from what `view` shows (`resp`, when it is a response); false
  // when one failed (the step ended).
  bool capture_all(Instance& in, const scenario::Step& step, const scenario::ResponseView& view,
                   const HttpResponse* resp);
  // Judges what a step that sends nothing got (a command's end, a caller's body): `abort_if`,
  // then `expect` (a failure's reason ends with `detail`), then the captures; the step passes
  // or the instance ends.
  void judge_result(Instance& in, const scenario::ResponseView& view, const std::string& detail);
  // The step failed on the response just judged: a load run's sink hears of it.
  void expect_failed(const Instance& in);
  // The step passed: on to the next, or the instance passed. `resp` is the response it passed
  // on, if any; `until_ms` the time a poll's condition took to hold (-1 for other kinds).
  void step_passed(Instance& in, const HttpResponse* resp, int64_t until_ms);
  // Reports the checkpoint to the master, so that a counted event survives a crash.
  void report_progress(Instance& in);
  // Ends the step and the instance; `resp` is the response the step ended on, if any.
  void finish(Instance& in, ipc::Outcome outcome, const std::string& reason,
              const HttpResponse* resp = nullptr);

 private:
  friend struct Instance;
  friend class InstanceVars;

  // Entries from the loop. Each runs `fn` for the instance `serial` and turns an exception
  // into that instance's end (errored).
  template <typename Fn>
  void guarded(uint64_t serial, const char* where, Fn&& fn) noexcept;
  void fail_internal(uint64_t serial, const char* where, const std::string& what) noexcept;

  static void index_callbacks(Run& run);
  // A checkpoint from elsewhere at a step whose needs did not move with it goes back to the
  // step that makes them (Step::resume_at), with that step's progress cleared.
  static void rewind(const scenario::Scenario& sc, ipc::Checkpoint& cp);
  void resume_or_run(Instance& in);
  void run_step(Instance& in);
  // Whether `in` may act now (its lease holds, or it needs none); else it is held, to do
  // `then` when a later lease comes, and false (engine_lease.cc).
  bool leased(Instance& in, Held then);
  std::optional<HttpRequest> make_request(Instance& in);
  // Hands the request of instance `serial` to the client, once its gates let it through
  // (`pass`: the places it holds there, released when it ends; null when it passed none), with
  // its span for the collector (span_for) if its run exports them.
  struct PendingSpan;
  void dispatch(uint64_t serial, std::shared_ptr<Gates::Pass> pass,
                std::shared_ptr<PendingSpan> span);
  // The origin of the instance's request, "" when its URL does not expand.
  std::string request_origin(const Instance& in) const;
  // A request's span for the collector (engine_spans.cc): made when the instance sends, if its
  // run exports spans (else null), begun when the request is built, exported when it ends.
  std::shared_ptr<PendingSpan> span_for(const Instance& in) const;
  void begin_span(PendingSpan& span, const Instance& in, const HttpRequest& req) const;
  void end_span(PendingSpan& span, const HttpResponse& resp) const;
  void export_span(PendingSpan& span);
  Result<HttpRequest> build_request(const Instance& in) const;
  void on_wake(uint64_t serial, uint64_t token);
  void on_timer(Instance& in);
  void wait_until(Instance& in, int64_t at_ms);
  // A step event for the instance's current step, as it ends now.
  ipc::Event step_event(const Instance& in, ipc::Outcome outcome, const HttpResponse* resp) const;
  // Emits a step event of `in`; a branch's carries the checkpoint of the instance it is part of.
  void emit_step(const Instance& in, ipc::Event&& ev);
  void emit_in_branch(const Instance& owner, ipc::Event&& ev);
  // A branch's last step passed, or one of its steps ended it: its branch records how, its
  // step event `ev` goes out, and the step that runs the branch hears of it.
  void branch_done(Instance& child, ipc::Outcome outcome, const std::string& reason,
                   std::optional<ipc::Event> ev);
  // Forgets branch `serial`, without an event (its own branches too).
  void drop_branch(uint64_t serial);
  const Instance& root_of(const Instance& in) const;
  nlohmann::json branches_to_json(const std::vector<Branch>& list) const;
  void measure(const Instance& in, const HttpResponse& resp, const HttpStepRunner& runner);
  void end_instance(Instance& in, ipc::Outcome outcome, const std::string& reason);
  // With `moving`, a waiting instance's checkpoint says when its step's runner wakes.
  ipc::Checkpoint checkpoint_of(const Instance& in, bool moving = false) const;
  // Whether the instance waits for its wake-up with nothing sent or queued, and holds no
  // branches and is none.
  bool waiting(const Instance& in) const;
  // Tells the step's runner that the instance leaves (StepRunner::left), if a step runs, and
  // every kind's State (State::instance_gone).
  void release(const Instance& in);
  // Forgets the instance, without an event.
  void drop(std::unordered_map<uint64_t, std::unique_ptr<Instance>>::iterator it);

  uv_loop_t* loop_;
  HttpClient& http_;
  Emit emit_;
  const Secrets& secrets_;
  std::unordered_map<std::string, std::unique_ptr<Run>> runs_;
  std::unordered_map<uint64_t, std::unique_ptr<Instance>> instances_;  // by serial
  // Instances waiting for their step's deadline, with the reason they will fail with and what
  // their record will show of the last response. Kept aside so that the many instances that
  // are not in this state pay nothing for it.
  struct Timeout {
    std::string reason;
    int status = 0;
    std::string body;  // an excerpt (Secrets::excerpt)
  };
  std::unordered_map<uint64_t, Timeout> timeouts_;
  // The branches of instances in a parallel step, by the instance's serial; and which
  // instance and branch each branch's serial is.
  std::unordered_map<uint64_t, std::vector<Branch>> forks_;
  struct BranchOf {
    uint64_t parent;
    size_t b;
  };
  std::unordered_map<uint64_t, BranchOf> branch_of_;
  // The data row of each instance of a run over data rows, by serial, read when it starts.
  std::unordered_map<uint64_t, nlohmann::json> rows_;
  WakeQueue wakes_;
  Gates gates_;  // per-target limits (engine_send.cc)
  uint64_t lease_until_ms_ = ipc::kNoLease;  // the host's lease (set_lease)
  std::vector<uint64_t> held_;  // serials of the instances it held (some may be gone since)
  uint64_t next_serial_ = 1;
  // Trace context (shared/trace_context.h): this worker's salt for load iterations' traces and for
  // span ids, and the spans given so far.
  const uint64_t trace_salt_;
  mutable uint64_t spans_ = 0;
  ipc::InHand* in_hand_ = nullptr;
  std::optional<uint32_t> poison_;
  http::TlsOptions default_tls_;
  http::HttpVersion default_version_ = http::HttpVersion::kAuto;
  uint64_t requests_sent_ = 0;
  std::string callback_base_, callback_key_;
  std::unique_ptr<otlp::SpanExporter> spans_out_;  // made for the first span
  // Last, so that a kind's state (which may refer to instances) goes first.
  std::unordered_map<const StepRunner*, std::unique_ptr<StepRunner::State>> states_;
};

}  // namespace corral::worker
