// One running instance of a run, as the engine holds it. Internal to worker/engine.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "config/scenario/template.h"
#include "shared/ipc/checkpoint.h"
#include "worker/engine/engine.h"

namespace corral::worker {

struct Instance {
  // What the instance's timer does when it fires: wake the step's runner, fail the step at its
  // deadline, or run the step (a load iteration's think time is over, or a fresh instance's
  // place in its run's start spread came).
  enum class Next : uint8_t { kStep, kTimedOut, kRunStep };

  Engine* engine;
  Engine::Run* run;
  uint64_t serial;
  uint32_t index;
  // Its position. In the engine cp.vars holds the captured variables as the server sent
  // them (bytes, secrets), not their wire form; cp.branches is unused (Engine::Branch).
  ipc::Checkpoint cp;
  int64_t sent_ms = 0;  // when the request in flight was handed to the HTTP client
  uint64_t send_ns = 0;  // load runs: when the step decided to send it (monotonic)
  Next next = Next::kStep;
  // A branch of a parallel step (steps/parallel): it belongs to the instance running that
  // step (Engine::parent_of), has the same index, and ends into it instead of the master.
  bool branch = false;
  bool requesting = false;  // its request is with the HTTP client (tagged with its serial)
  Held held = Held::kNo;    // by the host's ended lease (Engine::set_lease)
  // TLS handshakes the step's requests waited for (ms), for its record; in the padding.
  float step_tls_ms = 0;
  uint64_t wake_token = 0;  // of its pending wake-up in the engine's WakeQueue; 0 for none
  int64_t wake_ms = 0;      // when that wake-up is due (Unix ms)

  const scenario::Step& step() const { return run->scenario->steps[cp.step]; }
  const StepRunner& runner() const { return *run->runners[cp.step]; }
};

// The variables one instance's templates read: its captures, then the run's vars; and the
// worker's secrets.
class InstanceVars final : public scenario::Vars {
 public:
  InstanceVars(const Instance& in, const Secrets& secrets) : in_(in), secrets_(secrets) {}
  const nlohmann::json* find(std::string_view name) const override {
    // Its own captures; in a branch, then those of the instance it belongs to, and up.
    for (const Instance* at = &in_; at != nullptr; at = at->engine->parent_of(*at)) {
      if (at->cp.vars.is_object()) {
        if (auto it = at->cp.vars.find(name); it != at->cp.vars.end()) return &*it;
      }
    }
    if (name.starts_with("row.") && in_.run->rows) return in_.engine->row_value(in_, name.substr(4));
    const auto& vars = in_.run->vars;
    if (auto it = vars.find(name); it != vars.end()) return &*it;
    return nullptr;
  }
  uint64_t instance() const override { return in_.index; }
  std::string_view run() const override { return in_.run->id; }
  const std::string* secret(std::string_view name) const override { return secrets_.find(name); }
  std::string callback_url() const override { return in_.engine->callback_url(in_); }

 private:
  const Instance& in_;
  const Secrets& secrets_;
};

}  // namespace corral::worker
