// Fuzz target: the journal's rows read back into runs (master/runs_journal.cc), what a master
// does at start-up with whatever its journal file holds, damaged or not.
//
// Input: consumed by FuzzedDataProvider into one run row (its scenario and vars are either a
// valid scenario from a small set, or arbitrary text), a handful of instance rows (state,
// next step, JSON texts of vars, resume reasons and checkpoint) and step rows. Checks that
// run_from_journal never throws or crashes, and that a run it builds can be shown through
// the API's JSON and would only send well-formed checkpoints to a worker.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "master/runs.h"
#include "shared/ipc/checkpoint.h"
#include "tests/fuzz/check.h"

namespace {

using namespace corral::master;

const char* const kScenarios[] = {
    R"({"name":"s","steps":[{"request":{"url":"http://h/{{base}}"}},{"sleep":"1s"}]})",
    R"({"name":"p","steps":[{"request":{"url":"http://h/"},"poll":{"every":"1s","timeout":"5s",
        "until":[{"status":200}]},"capture":{"x":{"body":true}}}]})",
};
const char* const kStates[] = {"queued",  "running",   "passed", "failed",
                               "errored", "cancelled", "x"};

std::string json_text(FuzzedDataProvider& p, const char* usual) {
  return p.ConsumeBool() ? std::string(usual) : p.ConsumeRandomLengthString(200);
}

journal::StoredRun stored_from(FuzzedDataProvider& p) {
  journal::StoredRun s;
  s.run.id = "r1-fuzz";
  s.run.seq = 1;
  s.run.scenario = p.ConsumeBool() ? kScenarios[p.ConsumeIntegralInRange(0, 1)]
                                   : p.ConsumeRandomLengthString(300);
  s.run.vars = json_text(p, R"({"base":"x"})");
  // Mostly small; now and then past the limit (a run of 1,000,000 would cost 0.3 s an input).
  s.run.instances = p.ConsumeIntegralInRange(0, 15) != 0 ? p.ConsumeIntegralInRange<uint32_t>(0, 12)
                    : p.ConsumeBool()                    ? kMaxRunInstances + 1
                                                         : UINT32_MAX;
  s.run.finished_ms = p.ConsumeBool() ? 0 : p.ConsumeIntegral<int64_t>();
  s.run.cancelled = p.ConsumeBool();
  s.run.summary = json_text(p, R"({"counts":[1,0,0,0,0,0]})");
  int n = p.ConsumeIntegralInRange(0, 6);
  for (int k = 0; k < n; ++k) {
    journal::InstanceRow r;
    r.run_id = s.run.id;
    r.idx = p.ConsumeIntegralInRange<uint32_t>(0, 9);
    r.state = kStates[p.ConsumeIntegralInRange(0, 6)];
    r.next_step = p.ConsumeIntegralInRange<uint32_t>(0, 3);
    r.started_ms = p.ConsumeIntegral<int64_t>();
    r.ended_ms = p.ConsumeIntegral<int64_t>();
    r.resume_reasons = json_text(p, R"(["worker_signal"])");
    r.vars = json_text(p, R"({"x":"1","$bytes":{"y":"ff"}})");
    r.checkpoint = p.ConsumeBool() ? "" : json_text(p, R"({"step":0,"attempts":3,"tries":1})");
    s.instances.push_back(std::move(r));
  }
  int steps = p.ConsumeIntegralInRange(0, 4);
  for (int k = 0; k < steps; ++k) {
    journal::StepRow r;
    r.run_id = s.run.id;
    r.idx = p.ConsumeIntegralInRange<uint32_t>(0, 9);
    r.seq = static_cast<uint32_t>(k);
    r.step = p.ConsumeIntegralInRange<uint32_t>(0, 5);
    r.state = kStates[p.ConsumeIntegralInRange(0, 6)];
    r.reason = p.ConsumeRandomLengthString(40);
    r.body = p.ConsumeRandomLengthString(40);
    s.steps.push_back(std::move(r));
  }
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  journal::StoredRun stored = stored_from(p);
  bool whole = p.ConsumeBool();
  auto built = run_from_journal(stored, whole);
  if (!built) return 0;
  Run& run = **built;
  FUZZ_CHECK(run.size >= 1 && run.size <= kMaxRunInstances);
  Runs runs;
  (void)runs.detail_json(run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (!run.whole) return 0;
  for (uint32_t i = 0; i < run.size && i < 10; ++i) {
    (void)runs.instance_json(run, i, true)
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    const InstanceRecord& in = run.instance(i);
    FUZZ_CHECK(in.detail().vars.is_object() ||
               in.detail().vars.is_null());  // null: never dispatched
    if (const auto& cp = in.detail().checkpoint) FUZZ_CHECK(cp->step < run.scenario->steps.size());
    if (!is_terminal(in.state)) FUZZ_CHECK(in.next_step < run.scenario->steps.size());
  }
  return 0;
}
