// Kept load tests (master/kept_loads.h): a test that ended reads back whole, from memory and
// from the journal after a restart, and retention forgets the oldest.
#include <catch2/catch.hpp>

#include "config/load/parse.h"
#include "master/kept_loads.h"
#include "master/loads.h"
#include "shared/ipc/load_stats.h"
#include "shared/text/packed.h"
#include "tests/unit/master/journal_bench.h"

using corral::Code;
using corral::ipc::LoadSecond;
using corral::master::decode_detail;
using corral::master::encode_detail;
using corral::master::KeptLoads;
using corral::master::Loads;
using corral::master::LoadTest;
using nlohmann::json;
using namespace corral::test;  // NOLINT: the journal's test bench

namespace {

const json kScenario = {{"name", "kept"},
                        {"steps", json::array({{{"name", "get"}, {"request", {{"url", "x"}}}}})}};

// A test of `seconds` seconds that ended, as GET /loads/<id> answers it (with its series and
// its watched target's samples), and its merged seconds.
std::pair<corral::api::LoadAnswer, json> ended_test(const std::string& id, uint32_t seconds) {
  Loads loads;
  json load = {{"vus", 2},
               {"duration", std::to_string(seconds) + "s"},
               {"watch", {{"pid", 1}}},
               {"thresholds", {{"errors", {"rate < 10%"}}}}};
  auto spec = corral::load::parse_load(load);
  REQUIRE(spec);
  LoadTest& t = loads.add(id, kScenario, json::object(), load, *spec, {0}, 1000, 1000);
  for (uint32_t s = 0; s < seconds; ++s) {
    LoadSecond sec;
    sec.load = id;
    sec.second = s;
    sec.done = s + 1 == seconds;
    sec.vus = 2;
    sec.passed = 100 + s;
    sec.steps[0].requests = 100 + s;
    sec.steps[0].latency.record(1000 * (s + 1), 100 + s);
    sec.steps[0].raw.record(900 * (s + 1), 100 + s);
    t.target.push_back({{"t", s}, {"rss", 1000 * s}});
    REQUIRE(loads.on_second(0, std::move(sec), 2000 + 1000 * s));
  }
  REQUIRE(t.ended());
  return {loads.answer(t, true, 9000), corral::ipc::to_json(t.total)};
}

// Test `id` whole, as read() gives it (running the bench's loop until it does).
corral::Result<corral::api::LoadAnswer> read_whole(const KeptLoads& kept, const std::string& id,
                                                   Bench* bench = nullptr) {
  std::optional<corral::Result<corral::api::LoadAnswer>> got;
  kept.read(id, [&](corral::Result<corral::api::LoadAnswer> r) { got = std::move(r); });
  if (bench) bench->run_until([&] { return got.has_value(); });
  REQUIRE(got);
  return std::move(*got);
}

}  // namespace

TEST_CASE("kept loads: a test's detail encodes and decodes, and damage is named") {
  auto [answer, totals] = ended_test("l1-aaaa", 5);
  json detail = corral::master::take_detail(answer, totals);
  CHECK(answer.series.is_null());
  CHECK(answer.target->series.is_null());
  CHECK(detail["series"].size() == 5);
  CHECK(detail["target"].size() == 5);
  CHECK(detail["totals"] == totals);
  auto back = decode_detail(encode_detail(detail));
  REQUIRE(back);
  CHECK(*back == detail);
  CHECK(decode_detail("AAAA").status().message() ==
        "the test's series: not packed text: too short");
  CHECK(decode_detail(corral::pack("[1]")).status().message() ==
        "the test's series: not a JSON object");
}

TEST_CASE("kept loads: without a journal, a kept test reads back as it ended") {
  KeptLoads kept;
  auto [answer, totals] = ended_test("l1-aaaa", 3);
  const corral::api::LoadAnswer whole = answer;
  kept.keep(answer, totals, 1000, 5000);
  REQUIRE(kept.find("l1-aaaa") != nullptr);
  const json summary = json::parse(kept.find("l1-aaaa")->summary);
  CHECK(summary.value("series", json()).is_null());  // the summary holds no series
  CHECK(summary["requests"] == whole.requests);
  auto back = read_whole(kept, "l1-aaaa");
  REQUIRE(back);
  CHECK(*back == whole);
  CHECK(read_whole(kept, "l9-zzzz").status().code() == Code::kNotFound);
}

TEST_CASE("kept loads: the journal keeps them over a restart, each host its own") {
  Bench bench;
  auto [answer, totals] = ended_test("l1-aaaa", 60);
  const corral::api::LoadAnswer whole = answer;
  corral::api::LoadAnswer summary = whole;
  summary.series = nullptr;
  summary.target->series = nullptr;
  {
    KeptLoads kept;
    REQUIRE_OK(kept.restore(bench.journal.get(), ""));
    CHECK(kept.size() == 0);
    kept.keep(answer, totals, 1000, 61000);
    bench.journal->write([](Store& s) {  // another host's test, in the same journal
      return s.put_load_test({"l2-bbbb", "other/1", 2000, 3000, "{}", ""});
    });
    bench.journal->write([](Store& s) {  // a row whose summary does not read: skipped
      return s.put_load_test({"l3-cccc", "", 2000, 3000, "{\"id\": ", ""});
    });
    auto back = read_whole(kept, "l1-aaaa", &bench);
    REQUIRE(back);
    CHECK(*back == whole);
  }
  bench.journal.reset();  // the daemon restarts
  bench.journal = std::make_unique<Journal>(&bench.loop, open_store(bench.path));
  KeptLoads kept;
  REQUIRE_OK(kept.restore(bench.journal.get(), ""));
  REQUIRE(kept.size() == 1);
  CHECK(corral::api::load_from_json(json::parse(kept.find("l1-aaaa")->summary)).value() == summary);
  CHECK(kept.find("l1-aaaa")->created_ms == 1000);
  CHECK(kept.find("l1-aaaa")->ended_ms == 61000);
  auto back = read_whole(kept, "l1-aaaa", &bench);
  REQUIRE(back);
  CHECK(*back == whole);
  // A 60-second test costs the journal a few kilobytes.
  std::string bytes = sql(bench.path, "SELECT length(summary) + length(detail) FROM load_tests");
  INFO("bytes: " << bytes);
  CHECK(std::stoll(bytes) < 20000);
}

TEST_CASE("kept loads: retention forgets beyond the newest N and those ended too long ago") {
  Bench bench;
  KeptLoads kept;
  REQUIRE_OK(kept.restore(bench.journal.get(), ""));
  for (int i = 1; i <= 5; ++i) {
    auto [answer, totals] = ended_test("l" + std::to_string(i) + "-aaaa", 1);
    kept.keep(answer, totals, 1000 * i, 1000 * i + 500);
  }
  CHECK(kept.prune(10, 0) == 0);
  CHECK(kept.prune(4, 0) == 1);  // l1, the oldest
  CHECK(kept.find("l1-aaaa") == nullptr);
  CHECK(kept.prune(10, 3000) == 1);  // l2 ended at 2500
  CHECK(kept.find("l2-aaaa") == nullptr);
  REQUIRE(kept.size() == 3);
  bench.journal->flush();
  CHECK(sql(bench.path,
            "SELECT group_concat(id, ',') FROM (SELECT id FROM load_tests ORDER BY id)") ==
        "l3-aaaa,l4-aaaa,l5-aaaa");
  auto gone = read_whole(kept, "l1-aaaa", &bench);
  CHECK(gone.status().code() == Code::kNotFound);
}
