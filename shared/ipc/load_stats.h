// What a worker measured of a load test in one second, sent to the master in `load_stats`
// frames (shared/ipc/protocol.h). Counts are deltas for that second; the master adds the
// seconds of every worker. Both sides encode and decode here; a field of the wrong type or
// range is the worker's protocol error.
//
//   {"load": "l1-2f3a", "second": 3, "vus": 120, "running": 118, "passed": 950, "failed": 2,
//    "dropped": 0, "interrupted": 0, "connections": 0, "opened": 0, "connect_failed": 0,
//    "closed": 0, "handshakes": 0, "resumed": 0, "http1": 950, "http2": 0,
//    "messages_sent": 0, "messages_received": 0, "close_codes": {"1001": 2},
//    "handshake": {histogram}, "late": {histogram}, "done": false,
//    "steps": {"0": {"requests": 952, "bytes": 81234, "status": 1, "transport": 0,
//                    "timeout": 1, "expect": 0, "latency": {histogram}, "raw": {histogram}}},
//    "reasons": {"expect: status was 500, expected 200": 2},
//    "slowest": [{"us": 48210, "step": 0, "status": 200, "outcome": "ok", "second": 3,
//                 "trace": "4bf92f3577b34da6a3ce929d0e0e4736"}]}
//
// `second` counts from the test's start: second 0 is [start, start + 1 s). Histograms are
// stats::Histogram's JSON form, in microseconds. Pure, any thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/stats/histogram.h"
#include "shared/status.h"

namespace corral::ipc {

// One step's requests in one second.
struct StepSecond {
  uint64_t requests = 0;
  uint64_t bytes = 0;  // response bodies, as received
  // Failed requests, by class: a status of 400 or more in a request step without `expect`;
  // no response (transport) or none in time (timeout); a step judging it failed (expect).
  uint64_t status = 0;
  uint64_t transport = 0;
  uint64_t timeout = 0;
  uint64_t expect = 0;
  stats::Histogram latency;  // from the iteration's intended start (see docs/load.md)
  stats::Histogram raw;      // from when the request was sent

  uint64_t errors() const { return status + transport + timeout + expect; }
  void add(const StepSecond& other);
};

// One of the slowest requests of a second (and, added up, of a test): how long it took from
// the iteration's intended start, its step, its status (0: no response) and outcome, the
// second it was in, and the trace id its traceparent carried ("" when the scenario sends none).
struct SlowRequest {
  uint64_t us = 0;
  uint32_t step = 0;
  int status = 0;
  std::string outcome;  // "ok", "status", "transport", "timeout"
  uint32_t second = 0;
  std::string trace;

  bool operator==(const SlowRequest&) const = default;
};

// The slowest requests a worker reports of a second, and the master keeps of a test.
constexpr size_t kSlowestPerSecond = 5;
constexpr size_t kSlowestPerTest = 10;
// Keeps `r` among `list`, the slowest first, when it is slower than the last of `keep`.
void keep_slowest(std::vector<SlowRequest>& list, SlowRequest r, size_t keep);

struct LoadSecond {
  std::string load;
  uint32_t second = 0;
  uint64_t vus = 0;      // the most VUs at once during the second
  uint64_t running = 0;  // iterations in progress at the end of the second
  uint64_t passed = 0;   // iterations that ended in this second, by outcome
  uint64_t failed = 0;
  uint64_t dropped = 0;      // open model: arrivals with no free VU
  uint64_t interrupted = 0;  // iterations cut off at the end of the grace period
  // Held connections and WebSockets: those open at the end of the second (a gauge), and in the
  // second those opened, those that could not connect, and those lost after connecting.
  uint64_t connections = 0;
  uint64_t opened = 0;
  uint64_t connect_failed = 0;
  uint64_t closed = 0;
  // TLS handshakes the second's requests waited for (a new connection each), of which those
  // that resumed a session (the lean client tells; libcurl does not), and how long each took
  // (us); requests answered over HTTP/1.1 and over HTTP/2.
  uint64_t handshakes = 0;
  uint64_t resumed = 0;
  stats::Histogram handshake;
  uint64_t http1 = 0;
  uint64_t http2 = 0;
  // WebSocket steps: messages sent and received in the second (their sockets count in the
  // connections above), and the close codes of the sockets counted in `closed` (1006: no close
  // frame came).
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  std::map<uint16_t, uint64_t> close_codes;
  stats::Histogram late;  // corral's own lateness in starting iterations (LoadDriver)
  std::map<uint32_t, StepSecond> steps;      // by step index; steps with no request omitted
  std::map<std::string, uint64_t> reasons;   // why iterations failed: a few, counted
  // Of some of those reasons: the trace id of an iteration that failed so (the first seen).
  std::map<std::string, std::string> reason_traces;
  std::vector<SlowRequest> slowest;          // the slowest first (keep_slowest)
  bool done = false;                         // the worker's last report of this test

  // Adds `other`'s counts (gauges add too: they are per worker). Keeps at most `max_reasons`,
  // and the kSlowestPerTest slowest requests.
  void add(const LoadSecond& other, size_t max_reasons = 20);
};

nlohmann::json to_json(const LoadSecond& s);
Result<LoadSecond> load_second_from_json(const nlohmann::json& j);

}  // namespace corral::ipc
