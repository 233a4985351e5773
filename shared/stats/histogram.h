// Histogram: counts of values (microseconds, by convention) in HdrHistogram's log-linear
// scheme, so that load mode can measure every request's latency at a fixed cost and merge the
// histograms of several workers exactly.
//
// Layout. Values below 2,048 each have their own bucket. Above, the range [2^k, 2^(k+1)) is
// cut into 1,024 buckets of width 2^(k-10): a bucket is never wider than 1/1,024 of its
// values, which keeps three significant digits. Values from 0 to kMax (one hour in
// microseconds) fit in 23,552 buckets; a larger value is counted as kMax (and in
// saturated()). Every histogram has this same layout, so adding one to another adds counts.
//
// Percentiles are reported as the highest value of the bucket they fall in, capped by the
// largest value recorded: a reported percentile is never below the true one, and at most
// 1/1,024 above it. min, max and the sum are exact.
//
// The counts are allocated by the first record (188 KB); an empty histogram is small.
// Not thread-safe: one owner at a time.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::stats {

class Histogram {
 public:
  static constexpr uint64_t kMax = 3'600'000'000ull;  // one hour in microseconds
  static constexpr int kSubBits = 11;                 // 2,048 buckets of width 1 at the start
  static constexpr uint64_t kSubCount = uint64_t{1} << kSubBits;
  static constexpr uint64_t kHalf = kSubCount / 2;
  // Bucket groups: group 0 is [0, 2048), group g >= 1 is [2^(10+g), 2^(11+g)).
  static constexpr int kGroups = 22;  // 2^(10+21) = 2^31 ... 2^32 > kMax
  static constexpr size_t kBuckets = (kGroups + 1) * kHalf;

  void record(uint64_t value, uint64_t times = 1);
  // Adds every count of `other` (same layout, always).
  void add(const Histogram& other);
  void clear();

  uint64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  uint64_t min() const { return count_ == 0 ? 0 : min_; }
  uint64_t max() const { return max_; }
  uint64_t sum() const { return sum_; }
  double mean() const { return count_ == 0 ? 0.0 : static_cast<double>(sum_) / count_; }
  uint64_t saturated() const { return saturated_; }
  // The smallest reported value v such that at least `percentile` % of the values are <= v
  // (see the header comment for how v is rounded); 0 when empty. percentile in [0, 100].
  uint64_t value_at(double percentile) const;
  // Values counted at or below `value` (rounded to its bucket's top).
  uint64_t count_at_or_below(uint64_t value) const;

  // The bucket a value falls in, and the lowest and highest value of a bucket.
  static size_t bucket_of(uint64_t value);
  static uint64_t lowest_in(size_t bucket);
  static uint64_t highest_in(size_t bucket);

  // Compact form for IPC and reports: {"n", "min", "max", "sum", "sat", "b": [gap, count, ...]}
  // where each gap is the distance from the previous non-empty bucket (the first from -1).
  nlohmann::json to_json() const;
  // Refuses anything to_json() could not have produced, naming what is wrong.
  static Result<Histogram> from_json(const nlohmann::json& j);

  bool operator==(const Histogram& other) const;

 private:
  std::vector<uint64_t> counts_;  // kBuckets entries once anything was recorded
  uint64_t count_ = 0;
  uint64_t min_ = 0;
  uint64_t max_ = 0;
  uint64_t sum_ = 0;
  uint64_t saturated_ = 0;
};

}  // namespace corral::stats
