// W3C trace context: the `traceparent` header every request of an instance carries, so that a
// failed or slow request can be found in the server's own traces (docs/scenarios.md, "Trace
// context"). One trace per instance of a run, and per iteration of a load test; one span per
// request. A run's trace id is derived from the run's id and the instance's index: it stays the
// same when the instance resumes on another worker, and the master and the CLI can say it
// without being told. Pure, any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/http/message.h"

namespace corral {

// A stable 64-bit number for a run's id (FNV-1a): the seed of its jitter and of its traces.
uint64_t run_hash(std::string_view run_id);
// SplitMix64's finaliser, a bijection of 64-bit values: every bit of the input moves about half
// the bits of the output. For values derived, not drawn (jitter factors, trace ids).
uint64_t mix64(uint64_t x);

struct TraceId {
  uint64_t hi = 0, lo = 0;
};

// The trace of `key` (an instance's index, or a load iteration's number on this worker mixed
// with the worker's own salt) in the run whose id hashes to `run_seed`. Never all zeros.
TraceId trace_id(uint64_t run_seed, uint64_t key);
// A span id from a counter of the worker's: distinct for distinct counters, never zero.
uint64_t span_id(uint64_t salt, uint64_t counter);
// The 32 lowercase hex digits of a trace id, as traceparent and trace viewers write it.
std::string to_hex(TraceId trace);
// Appends the 16 lowercase hex digits of `v` (a span id, half a trace id).
void append_hex(std::string& out, uint64_t v);
// "00-<32 hex trace id>-<16 hex span id>-01" (version 00, sampled).
std::string traceparent(TraceId trace, uint64_t span);
// The trace and span of a traceparent value ("00-<trace>-<span>-<flags>"); nullopt when it is
// not one (a wrong length, a non-hex digit, an all-zero id, version ff).
struct TraceParent {
  TraceId trace;
  uint64_t span = 0;
};
std::optional<TraceParent> parse_traceparent(std::string_view value);
// The trace id the requests of instance `index` of run `run_id` carry.
inline std::string instance_trace(std::string_view run_id, uint32_t index) {
  return to_hex(trace_id(run_hash(run_id), index));
}

// Whether `headers` (name, anything) has one named `name`, in any case.
template <typename Value>
bool has_header(const std::vector<std::pair<std::string, Value>>& headers, std::string_view name) {
  for (const auto& [n, v] : headers) {
    if (http::iequals(n, name)) return true;
  }
  return false;
}

}  // namespace corral
