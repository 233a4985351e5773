#include "master/worker_frames.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "shared/ipc/events.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

// A frame's payload read as its message, for `handle`; a payload that breaks the contract is
// the worker's protocol error.
template <typename T, typename Handle>
void with_payload(WorkerProcess& w, Result<T> m, Handle&& handle) {
  if (!m) {
    w.fail_protocol(m.status());
    return;
  }
  handle(*m);
}

}  // namespace

void WorkerFrames::on_frame(int slot, WorkerProcess& w, ipc::Frame&& f, uint64_t now) {
  switch (f.type) {
    case ipc::MessageType::kHello:
      on_hello(slot, w, f.payload);
      return;
    case ipc::MessageType::kReady:
      on_ready(slot, w, now);
      return;
    case ipc::MessageType::kHeartbeat:
      with_payload(w, ipc::read<ipc::Heartbeat>(f.payload),
                   [&](const auto& b) { on_heartbeat(slot, w, b, now); });
      return;
    case ipc::MessageType::kLeaving:
      with_payload(w, ipc::read<ipc::Leaving>(f.payload),
                   [&](const auto& l) { on_leaving(slot, w, l); });
      return;
    case ipc::MessageType::kEvents:
      if (Status st = on_events(slot, f.payload); !st) w.fail_protocol(st);
      return;
    case ipc::MessageType::kLoadStats:
      if (Status st = p_.loads.on_load_stats(slot, f.payload); !st) w.fail_protocol(st);
      return;
    case ipc::MessageType::kHandback:  // its checkpoints are moved out of the frame
      with_payload(w, ipc::read_handback(std::move(f.payload)),
                   [&](const auto& b) { on_handback(slot, w, b, now); });
      return;
    case ipc::MessageType::kWelcome:
    case ipc::MessageType::kStop:
    case ipc::MessageType::kDefineRun:
    case ipc::MessageType::kStart:
    case ipc::MessageType::kCancel:
    case ipc::MessageType::kLoadStart:
    case ipc::MessageType::kLoadStop:
    case ipc::MessageType::kRelease:
    case ipc::MessageType::kCallback:
    case ipc::MessageType::kLimits:
    case ipc::MessageType::kLease:
      // The decoder rejects master-only types before they get here.
      std::abort();
  }
}

void WorkerFrames::on_hello(int slot, WorkerProcess& w, const nlohmann::json& payload) {
  http_errors_.erase(slot);  // a new worker counts from 0
  if (Status st = ipc::check_hello(payload); !st) {
    p_.supervisor.on_protocol_error(slot, "worker " + st.message());
    host_.kick();
    return;
  }
  (void)w.send(ipc::MessageType::kWelcome, ipc::to_json(host_.welcome_for(slot)));
}

void WorkerFrames::on_ready(int slot, WorkerProcess& w, uint64_t now) {
  spdlog::info("slot {}: worker pid {} ready", slot, w.pid());
  p_.supervisor.on_ready(slot, now);
  if (p_.supervisor.slot(slot)->state == SlotState::kReady) {
    p_.dispatcher.worker_ready(slot);
    p_.limits.worker_ready(slot);
    host_.place_soon();
  }
  host_.kick();
}

void WorkerFrames::on_heartbeat(int slot, WorkerProcess& w, const ipc::Heartbeat& beat,
                                uint64_t now) {
  p_.supervisor.on_heartbeat(slot, now, beat.rss_bytes, beat.loop_lag_ms, beat.active);
  p_.dispatcher.memory().sample(slot, beat.rss_bytes, beat.idle_rss_bytes, beat.active);
  // What it measured may have made room for queued instances.
  if (p_.runs.pending() > 0 && p_.dispatcher.capacity() > 0) host_.place_soon();
  if (!beat.http_errors.is_null()) {
    auto counts = ipc::http_errors_from_json(beat.http_errors);
    if (!counts) {
      w.fail_protocol(protocol_error("heartbeat.http_errors: malformed"));
      return;
    }
    http_errors_[slot] = std::move(*counts);
  }
  requests_sent_[slot] = beat.requests;
  if (!beat.limits.is_null()) {
    if (Status st = p_.limits.on_use(slot, beat.limits, now); !st) w.fail_protocol(st);
  }
}

void WorkerFrames::on_leaving(int slot, WorkerProcess& w, const ipc::Leaving& leaving) {
  spdlog::warn("slot {}: worker pid {} is leaving: {} (RSS {} bytes)", slot, w.pid(),
               leaving.reason, leaving.rss_bytes);
  p_.supervisor.on_leaving(
      slot, leaving.reason == "memory_soft" ? ExitReason::kMemorySoft : ExitReason::kCrash);
  p_.dispatcher.worker_gone(slot);
  host_.kick();
}

Status WorkerFrames::on_events(int slot, const nlohmann::json& payload) {
  auto it = payload.find("events");
  if (it == payload.end() || !it->is_array()) {
    return protocol_error("events: expected an array of events");
  }
  int64_t now = unix_ms_now();
  size_t done = 0;
  Status broken;
  for (size_t k = 0; k < it->size(); ++k) {
    auto ev = ipc::event_from_json((*it)[k], "events[" + std::to_string(k) + "]");
    if (!ev) {
      // The events before it still count; the rest of this worker's stream cannot be trusted.
      broken = ev.status();
      break;
    }
    if (ev->kind == ipc::EventKind::kDone) {
      p_.dispatcher.instance_done(slot);
      ++done;
    } else if (ev->kind == ipc::EventKind::kStep) {
      count_step(*ev);
    }
    p_.runs.apply(slot, *ev, now);
  }
  if (done > 0) host_.place_soon();
  return broken;
}

void WorkerFrames::count_step(const ipc::Event& ev) {
  const Run* run = p_.runs.find(ev.run);
  if (run == nullptr || !run->scenario || ev.step >= run->scenario->steps.size()) return;
  const double seconds =
      static_cast<double>(std::max<int64_t>(ev.ended_ms - ev.started_ms, 0)) / 1000.0;
  p_.metrics.step_ended(run->scenario->steps[ev.step].kind->name, ipc::to_string(ev.outcome),
                        seconds);
}

void WorkerFrames::on_handback(int slot, WorkerProcess& w, const ipc::Handback& back,
                               uint64_t now) {
  const char* why = back.released                   ? "rebalanced"
                    : p_.supervisor.shutting_down() ? "master_stopped"
                                                    : "worker_stopped";
  auto n = p_.runs.hand_back(slot, back.instances, why);
  if (!n) {
    w.fail_protocol(n.status());
    return;
  }
  if (back.released) p_.dispatcher.released(slot, *n, now);
  if (*n > 0) {
    spdlog::log(back.released ? spdlog::level::debug : spdlog::level::info,
                "slot {}: {} instances handed back to resume elsewhere ({})", slot, *n, why);
    host_.place_soon();
  }
}

}  // namespace corral::master
