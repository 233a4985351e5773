// stats::Histogram: layout, percentiles, merging and the JSON form that workers send.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "shared/stats/histogram.h"

using corral::stats::Histogram;
using nlohmann::json;

TEST_CASE("histogram: buckets tile every value up to an hour, each within 1/1,024 of its values") {
  for (size_t i = 0; i + 1 < Histogram::kBuckets; ++i) {
    REQUIRE(Histogram::highest_in(i) + 1 == Histogram::lowest_in(i + 1));
  }
  CHECK(Histogram::lowest_in(0) == 0);
  CHECK(Histogram::highest_in(Histogram::kBuckets - 1) >= Histogram::kMax);
  std::mt19937_64 rng(7);
  std::vector<uint64_t> values;
  for (uint64_t v = 0; v < 5000; ++v) values.push_back(v);
  for (int i = 0; i < 100000; ++i) values.push_back(rng() % (Histogram::kMax + 1));
  for (uint64_t v : values) {
    size_t b = Histogram::bucket_of(v);
    REQUIRE(Histogram::lowest_in(b) <= v);
    REQUIRE(v <= Histogram::highest_in(b));
    uint64_t width = Histogram::highest_in(b) - Histogram::lowest_in(b) + 1;
    if (v < 2048) {
      REQUIRE(width == 1);
    } else {
      REQUIRE(width * 1024 <= v);
    }
  }
}

TEST_CASE("histogram: percentiles of 1 to 1,000,000 are never below the exact ones, and within 1/1,024") {
  Histogram h;
  for (uint64_t v = 1; v <= 1000000; ++v) h.record(v);
  CHECK(h.count() == 1000000);
  CHECK(h.min() == 1);
  CHECK(h.max() == 1000000);
  CHECK(h.mean() == Approx(500000.5));
  for (double p : {0.0, 1.0, 50.0, 90.0, 95.0, 99.0, 99.9, 99.99}) {
    auto exact = static_cast<uint64_t>(std::max(1.0, std::ceil(p / 100.0 * 1000000)));
    uint64_t got = h.value_at(p);
    INFO("p" << p << " exact " << exact << " reported " << got);
    CHECK(got >= exact);
    CHECK(got - exact <= exact / 1024);
  }
  CHECK(h.value_at(100) == 1000000);
  CHECK(h.count_at_or_below(1000) == 1000);
}

TEST_CASE("histogram: a few values give the arithmetic's percentiles") {
  // 99 answers of 1 ms and one stall of 2 s: p99 is 1 ms, the maximum is the stall.
  Histogram h;
  h.record(1000, 99);
  h.record(2000000);
  CHECK(h.value_at(50) == 1000);
  CHECK(h.value_at(99) == 1000);
  CHECK(h.value_at(99.5) == 2000000);  // the bucket's top, capped by the largest value
  CHECK(h.value_at(98) == 1000);
  CHECK(h.value_at(100) == 2000000);
  CHECK(h.sum() == 99 * 1000 + 2000000);
}

TEST_CASE("histogram: merging histograms equals recording every value in one") {
  std::mt19937_64 rng(11);
  std::lognormal_distribution<double> latency(9.0, 1.5);  // about 8 ms, with a long tail
  Histogram all, parts[3];
  for (int i = 0; i < 30000; ++i) {
    auto v = static_cast<uint64_t>(latency(rng));
    all.record(v);
    parts[i % 3].record(v);
  }
  Histogram merged;
  for (const auto& p : parts) merged.add(p);
  CHECK(merged == all);
  for (double p : {50.0, 99.0, 99.9}) CHECK(merged.value_at(p) == all.value_at(p));
  merged.clear();
  CHECK(merged.empty());
  CHECK(merged == Histogram{});
}

TEST_CASE("histogram: a value past an hour counts as an hour, and as saturated") {
  Histogram h;
  h.record(Histogram::kMax * 2);
  h.record(5);
  CHECK(h.count() == 2);
  CHECK(h.saturated() == 1);
  CHECK(h.max() == Histogram::kMax);
  CHECK(h.value_at(100) == Histogram::kMax);
}

TEST_CASE("histogram: the JSON form round-trips") {
  Histogram h;
  CHECK(*Histogram::from_json(h.to_json()) == h);
  h.record(0);
  h.record(3, 4);
  h.record(123456789);
  h.record(Histogram::kMax + 1);
  json j = h.to_json();
  CHECK(j["b"] == json::array({1, 1, 3, 4, static_cast<long>(Histogram::bucket_of(123456789)) - 3,
                               1, static_cast<long>(Histogram::bucket_of(Histogram::kMax) -
                                                    Histogram::bucket_of(123456789)),
                               1}));
  auto back = Histogram::from_json(j);
  REQUIRE(back);
  CHECK(*back == h);
  CHECK(back->value_at(50) == 3);
}

TEST_CASE("histogram: a malformed JSON form is refused, naming what is wrong") {
  Histogram h;
  h.record(10, 2);
  h.record(5000);
  const json good = h.to_json();
  struct Case {
    const char* name;
    json j;
    const char* message;
  };
  auto with = [&](const char* key, json value) {
    json j = good;
    j[key] = std::move(value);
    return j;
  };
  const std::vector<Case> cases = {
      {"not an object", json::array(), "expected an object"},
      {"n missing", [&] { json j = good; j.erase("n"); return j; }(), "\"n\" must be a count"},
      {"negative min", with("min", -1), "\"min\" must be a count"},
      {"odd pairs", with("b", json::array({1})), "gap, count pairs"},
      {"zero gap", with("b", json::array({1, 2, 0, 1})), "not a positive integer"},
      {"zero count", with("b", json::array({11, 0})), "not a positive integer"},
      {"past the end", with("b", json::array({Histogram::kBuckets + 1, 1})), "past the last"},
      {"n differs", with("n", 4), "\"n\" is not the sum"},
      {"min elsewhere", with("min", 11), "disagrees with the counts"},
      {"max elsewhere", with("max", 4000), "disagrees with the counts"},
      {"sum too small", with("sum", 1), "\"sum\" disagrees"},
      {"sat without max", with("sat", 1), "\"sat\" disagrees"},
      {"overflow", with("b", json::array({11, UINT64_MAX, 1, 4})), "overflow"},
      {"empty with values", json{{"n", 0}, {"min", 0}, {"max", 9}, {"sum", 0}, {"sat", 0},
                                 {"b", json::array()}}, "an empty histogram has values"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto r = Histogram::from_json(c.j);
    REQUIRE_FALSE(r);
    CHECK_THAT(r.status().message(), Catch::Contains(c.message));
  }
}
