// The engine's side of callback steps (steps/callback): the URL templates hand out, and the
// calls the master passes on.
#include <algorithm>

#include "shared/callback/token.h"
#include "shared/proc.h"
#include "worker/engine/engine.h"
#include "worker/engine/instance.h"

namespace corral::worker {

void Engine::set_callbacks(std::string base_url, std::string key) {
  while (!base_url.empty() && base_url.back() == '/') base_url.pop_back();
  callback_base_ = std::move(base_url);
  callback_key_ = std::move(key);
}

void Engine::index_callbacks(Run& run) {
  const auto& steps = run.scenario->steps;
  int32_t next = -1;
  std::vector<int32_t> at(steps.size(), -1);
  for (size_t i = steps.size(); i-- > 0;) {
    if (steps[i].kind->takes_calls) next = static_cast<int32_t>(i);
    at[i] = next;
  }
  if (next != -1) run.next_callback = std::move(at);  // the first step has one ahead
}

std::string Engine::callback_url(const Instance& in) const {
  const auto& next = in.run->next_callback;
  if (next.empty() || next[in.cp.step] < 0 || callback_key_.empty()) return "";
  auto step = static_cast<uint32_t>(next[in.cp.step]);
  return callback_base_ + "/callbacks/" + callback::token(callback_key_, in.run->id, in.index, step);
}

void Engine::callback(const std::string& run, uint32_t index, uint32_t step,
                      std::optional<nlohmann::json> body) {
  auto r = runs_.find(run);
  if (r == runs_.end()) return;
  auto s = r->second->serials.find(index);
  if (s == r->second->serials.end()) return;
  Instance& in = *instances_.at(s->second);
  if (in.cp.step > step) return;
  nlohmann::json& got = in.cp.callback;
  if (!got.is_object() || got.value("step", uint64_t{0}) != step) got = {{"step", step}};
  if (!body) {
    got["heartbeat_ms"] = unix_ms_now();
    return;
  }
  got["body"] = std::move(*body);
  // Waiting at that step: it goes on now (its pending wake-up will find it rescheduled).
  if (in.cp.step == step && in.wake_token != 0 && in.next == Instance::Next::kStep) {
    in.wake_token = 0;
    with_instance(in.serial, "a callback", [this](Instance& i) { i.runner().on_wake(*this, i); });
  }
}

}  // namespace corral::worker
