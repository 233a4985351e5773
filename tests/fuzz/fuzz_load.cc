// Fuzz target: load mode's two inputs from outside the worker: a user's load section
// (config/load/parse.h, from POST /loads and scenario files) and a worker's per-second
// measurements (shared/ipc/load_stats.h and the histograms inside, from load_stats frames).
//
// Input: any bytes. Parsed as JSON (non-JSON inputs stop there), then, for the document and
// each of its members, decoded as a load section, a LoadSecond and a Histogram. For each one
// that decodes, checks that:
// - a load section's target stays between 0 and its peak at every time, and its duration
//   within the limit; a target it starts has a program, a ready check that can pass, and runs
//   on one host;
// - a LoadSecond encodes and decodes to the same JSON, and adding it to another keeps the
//   counts (the master's merge);
// - a histogram's percentiles are ordered, between its min and max, and it round-trips.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "config/load/parse.h"
#include "shared/ipc/load_stats.h"
#include "shared/stats/histogram.h"
#include "tests/fuzz/check.h"

namespace {

using nlohmann::json;
using corral::stats::Histogram;

void check_load(const json& j) {
  auto spec = corral::load::parse_load(j);
  if (!spec) return;
  FUZZ_CHECK(!spec->stages.empty());
  FUZZ_CHECK(spec->duration_ms() <= corral::load::kMaxDurationMs);
  const double peak = spec->peak();
  for (uint64_t t : {uint64_t{0}, spec->duration_ms() / 3, spec->duration_ms() / 2,
                     spec->duration_ms(), spec->duration_ms() + 1}) {
    double v = spec->target_at(t);
    FUZZ_CHECK(v >= 0);
    FUZZ_CHECK(v <= peak * (1 + 1e-9));
  }
  for (const auto& th : spec->thresholds) (void)th.holds(1.0);
  const corral::load::TargetCommand& t = spec->target;
  if (t.any()) {
    FUZZ_CHECK(!t.cmd[0].empty());
    FUZZ_CHECK(t.ready_timeout_ms > 0);
    FUZZ_CHECK(t.ready != corral::load::TargetCommand::Ready::kPort || t.port > 0);
    FUZZ_CHECK(t.ready != corral::load::TargetCommand::Ready::kUrl ||
               t.url.rfind("http://", 0) == 0);
    FUZZ_CHECK(spec->hosts == 1);
  }
}

void check_histogram(const json& j) {
  auto h = Histogram::from_json(j);
  if (!h) return;
  uint64_t previous = 0;
  for (double p : {0.0, 1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    uint64_t v = h->value_at(p);
    FUZZ_CHECK(v >= previous);
    if (!h->empty()) FUZZ_CHECK(v >= Histogram::lowest_in(Histogram::bucket_of(h->min())));
    FUZZ_CHECK(v <= h->max());
    previous = v;
  }
  auto back = Histogram::from_json(json::parse(h->to_json().dump()));
  FUZZ_CHECK(back.is_ok());
  FUZZ_CHECK(*back == *h);
}

void check_second(const json& j) {
  auto s = corral::ipc::load_second_from_json(j);
  if (!s) {
    FUZZ_CHECK(s.status().code() == corral::Code::kProtocol);
    return;
  }
  json again = corral::ipc::to_json(*s);
  auto back = corral::ipc::load_second_from_json(json::parse(again.dump()));
  FUZZ_CHECK(back.is_ok());
  FUZZ_CHECK(corral::ipc::to_json(*back) == again);
  corral::ipc::LoadSecond sum = *s;
  sum.add(*back);
  FUZZ_CHECK(sum.passed == s->passed * 2 || sum.passed < s->passed);  // or it wrapped
  for (const auto& [index, step] : sum.steps) (void)step.latency.value_at(99);
}

void check_all(const json& j) {
  check_load(j);
  check_histogram(j);
  check_second(j);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json j = json::parse(std::string(reinterpret_cast<const char*>(data), size), nullptr, false);
  if (j.is_discarded()) return 0;
  check_all(j);
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) check_all(value);
  }
  return 0;
}
