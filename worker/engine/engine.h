// The scenario engine of one worker: runs every assigned instance at once on the worker's
// loop. A waiting instance is one small struct and one libuv timer: no thread, no stack, no
// buffer. An instance in flight holds one curl transfer. All instances of a run share its
// parsed, immutable scenario.
//
// The engine reports state transitions, never polls: one event when a step ends and one when
// an instance ends. Events are JSON objects handed to `emit`; the worker batches them to the
// master.
//   {"t":"step","run","i","step","state":"passed|failed|errored","attempts","started_ms",
//    "ended_ms","status","reason","until_ms","next":<checkpoint of the next step>}
//   {"t":"done","run","i","state":"passed|failed|errored|cancelled","reason","started_ms",
//    "ended_ms"}
// Loop thread only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "config/scenario/model.h"
#include "shared/ipc/in_hand.h"
#include "shared/status.h"
#include "worker/engine/checkpoint.h"
#include "worker/http/curl_client.h"

namespace corral::worker {

struct Instance;

class Engine {
 public:
  using Emit = std::function<void(nlohmann::json&&)>;
  Engine(uv_loop_t* loop, CurlClient& http, Emit emit);
  ~Engine();

  // Makes a run known: its scenario document (validated by the master, parsed again here)
  // and its run-time vars. Fails with the parser's message.
  Status define_run(const std::string& run, const nlohmann::json& scenario,
                    const nlohmann::json& vars);
  bool has_run(const std::string& run) const { return runs_.count(run) != 0; }
  // Starts instance `index` of `run` from `cp` (a fresh instance has the default checkpoint).
  Status start(const std::string& run, uint32_t index, Checkpoint cp);
  // Ends every instance of `run` as cancelled (a transfer in flight is dropped) and forgets it.
  void cancel_run(const std::string& run);
  // Stops every instance without an event and returns their checkpoints, keyed by run then
  // index: for handing them back to the master.
  nlohmann::json take_all();

  size_t active() const { return instances_.size(); }
  // The shared page that tells the master which instance the loop is in (may be null).
  void set_in_hand(ipc::InHand* page) { in_hand_ = page; }
  // Tests only (CORRAL_TEST_POISON_INSTANCE): abort whenever a step of instance `index` runs.
  void set_poison(std::optional<uint32_t> index) { poison_ = index; }

 private:
  struct Run {
    std::string id;
    std::shared_ptr<const scenario::Scenario> scenario;
    nlohmann::json vars;  // scenario vars overlaid with run-time vars
    size_t active = 0;
  };
  friend struct Instance;

  void run_step(Instance& in);
  void send(Instance& in);
  HttpRequest build_request(const Instance& in) const;
  void on_response(uint64_t serial, HttpResponse&& resp);
  void on_timer(Instance& in);
  void wait_until(Instance& in, int64_t at_ms);
  bool retry_later(Instance& in, const std::string& why);
  void step_passed(Instance& in, const HttpResponse* resp, int64_t until_ms);
  void finish(Instance& in, const char* state, const std::string& reason, int status);
  void end_instance(Instance& in, const char* state, const std::string& reason);

  uv_loop_t* loop_;
  CurlClient& http_;
  Emit emit_;
  std::unordered_map<std::string, std::unique_ptr<Run>> runs_;
  std::unordered_map<uint64_t, std::unique_ptr<Instance>> instances_;  // by serial
  uint64_t next_serial_ = 1;
  ipc::InHand* in_hand_ = nullptr;
  std::optional<uint32_t> poison_;
};

}  // namespace corral::worker
