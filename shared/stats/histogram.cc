#include "shared/stats/histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

namespace corral::stats {

namespace {

int group_of(uint64_t value) {
  if (value < Histogram::kSubCount) return 0;
  return std::bit_width(value) - 1 - (Histogram::kSubBits - 1);
}

int group_of_bucket(size_t bucket) {
  return bucket < Histogram::kSubCount ? 0 : static_cast<int>(bucket / Histogram::kHalf) - 1;
}

}  // namespace

size_t Histogram::bucket_of(uint64_t value) {
  value = std::min(value, kMax);
  int g = group_of(value);
  return static_cast<size_t>(g) * kHalf + (value >> g);
}

uint64_t Histogram::lowest_in(size_t bucket) {
  int g = group_of_bucket(bucket);
  return (bucket - static_cast<size_t>(g) * kHalf) << g;
}

uint64_t Histogram::highest_in(size_t bucket) {
  return lowest_in(bucket) + (uint64_t{1} << group_of_bucket(bucket)) - 1;
}

void Histogram::record(uint64_t value, uint64_t times) {
  if (times == 0) return;
  if (value > kMax) {
    saturated_ += times;
    value = kMax;
  }
  if (counts_.empty()) counts_.assign(kBuckets, 0);
  counts_[bucket_of(value)] += times;
  min_ = count_ == 0 ? value : std::min(min_, value);
  max_ = std::max(max_, value);
  count_ += times;
  sum_ += value * times;
}

void Histogram::add(const Histogram& other) {
  if (other.count_ == 0) return;
  if (counts_.empty()) counts_.assign(kBuckets, 0);
  for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  min_ = count_ == 0 ? other.min_ : std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
  count_ += other.count_;
  sum_ += other.sum_;
  saturated_ += other.saturated_;
}

void Histogram::clear() {
  if (count_ != 0) std::fill(counts_.begin(), counts_.end(), 0);
  count_ = min_ = max_ = sum_ = saturated_ = 0;
}

uint64_t Histogram::value_at(double percentile) const {
  if (count_ == 0) return 0;
  percentile = std::clamp(percentile, 0.0, 100.0);
  // The rank of the value asked for, 1-based; at least the first value.
  auto rank = static_cast<uint64_t>(std::ceil(percentile / 100.0 * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (size_t i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(highest_in(i), max_);
  }
  return max_;  // unreachable while the counts add up to count_
}

uint64_t Histogram::count_at_or_below(uint64_t value) const {
  if (count_ == 0) return 0;
  size_t last = bucket_of(value);
  uint64_t seen = 0;
  for (size_t i = 0; i <= last; ++i) seen += counts_[i];
  return seen;
}

nlohmann::json Histogram::to_json() const {
  nlohmann::json buckets = nlohmann::json::array();
  long previous = -1;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (counts_[i] == 0) continue;
    buckets.push_back(static_cast<long>(i) - previous);
    buckets.push_back(counts_[i]);
    previous = static_cast<long>(i);
  }
  return {{"n", count_}, {"min", min()}, {"max", max_},
          {"sum", sum_}, {"sat", saturated_}, {"b", std::move(buckets)}};
}

namespace {

Status bad(const std::string& what) { return invalid_argument("histogram: " + what); }

// A non-negative integer, whichever way nlohmann holds it (parsed text gives unsigned, values
// built in memory may be signed).
bool as_count(const nlohmann::json& j, uint64_t& out) {
  if (j.is_number_unsigned()) {
    out = j.get<uint64_t>();
    return true;
  }
  if (!j.is_number_integer() || j.get<int64_t>() < 0) return false;
  out = static_cast<uint64_t>(j.get<int64_t>());
  return true;
}

bool read_count(const nlohmann::json& j, const char* key, uint64_t& out) {
  auto it = j.find(key);
  return it != j.end() && as_count(*it, out);
}

}  // namespace

Result<Histogram> Histogram::from_json(const nlohmann::json& j) {
  if (!j.is_object()) return bad("expected an object");
  uint64_t n = 0, min = 0, max = 0, sum = 0, sat = 0;
  for (auto [key, out] : {std::pair{"n", &n}, {"min", &min}, {"max", &max}, {"sum", &sum},
                          {"sat", &sat}}) {
    if (!read_count(j, key, *out)) return bad(std::string("\"") + key + "\" must be a count");
  }
  auto b = j.find("b");
  if (b == j.end() || !b->is_array() || b->size() % 2 != 0) {
    return bad("\"b\" must be an array of gap, count pairs");
  }
  Histogram h;
  uint64_t bucket = 0;
  bool first = true;
  for (size_t i = 0; i < b->size(); i += 2) {
    uint64_t step = 0, times = 0;
    if (!as_count((*b)[i], step) || !as_count((*b)[i + 1], times) || step == 0 || times == 0) {
      return bad("\"b\" holds a gap or count that is not a positive integer");
    }
    if (step > kBuckets) return bad("\"b\" goes past the last bucket");
    bucket = first ? step - 1 : bucket + step;
    first = false;
    if (bucket >= kBuckets) return bad("\"b\" goes past the last bucket");
    if (h.counts_.empty()) h.counts_.assign(kBuckets, 0);
    h.counts_[bucket] = times;
    if (h.count_ + h.counts_[bucket] < h.count_) return bad("the counts overflow");
    h.count_ += h.counts_[bucket];
  }
  if (h.count_ != n) return bad("\"n\" is not the sum of the counts");
  if (n == 0) {
    if (min != 0 || max != 0 || sum != 0 || sat != 0) return bad("an empty histogram has values");
    return h;
  }
  // min and max must fall in the first and last non-empty buckets; the sum between n*min and
  // n*max.
  size_t lo = 0, hi = kBuckets - 1;
  while (h.counts_[lo] == 0) ++lo;
  while (h.counts_[hi] == 0) --hi;
  if (max > kMax || bucket_of(min) != lo || bucket_of(max) != hi || min > max) {
    return bad("\"min\" or \"max\" disagrees with the counts");
  }
  if (sat > n || (sat > 0 && max != kMax)) return bad("\"sat\" disagrees with the counts");
  const double dn = static_cast<double>(n);
  if (static_cast<double>(sum) < dn * static_cast<double>(min) * (1 - 1e-9) ||
      static_cast<double>(sum) > dn * static_cast<double>(max) * (1 + 1e-9)) {
    return bad("\"sum\" disagrees with the counts");
  }
  h.min_ = min;
  h.max_ = max;
  h.sum_ = sum;
  h.saturated_ = sat;
  return h;
}

bool Histogram::operator==(const Histogram& other) const {
  if (count_ != other.count_ || min() != other.min() || max_ != other.max_ ||
      sum_ != other.sum_ || saturated_ != other.saturated_) {
    return false;
  }
  if (count_ == 0) return true;
  return counts_ == other.counts_;
}

}  // namespace corral::stats
