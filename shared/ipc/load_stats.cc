#include "shared/ipc/load_stats.h"

#include <algorithm>
#include <charconv>

#include "shared/ipc/fields.h"

namespace corral::ipc {

using nlohmann::json;

namespace {

// The counters of a step, by wire name: one list for encoding, decoding and adding.
struct StepCounter {
  const char* name;
  uint64_t StepSecond::*field;
};
constexpr StepCounter kStepCounters[] = {
    {"requests", &StepSecond::requests}, {"bytes", &StepSecond::bytes},
    {"status", &StepSecond::status},     {"transport", &StepSecond::transport},
    {"timeout", &StepSecond::timeout},   {"expect", &StepSecond::expect},
};

struct LoadCounter {
  const char* name;
  uint64_t LoadSecond::*field;
};
constexpr LoadCounter kLoadCounters[] = {
    {"vus", &LoadSecond::vus},
    {"running", &LoadSecond::running},
    {"passed", &LoadSecond::passed},
    {"failed", &LoadSecond::failed},
    {"dropped", &LoadSecond::dropped},
    {"interrupted", &LoadSecond::interrupted},
    {"connections", &LoadSecond::connections},
    {"opened", &LoadSecond::opened},
    {"connect_failed", &LoadSecond::connect_failed},
    {"closed", &LoadSecond::closed},
    {"handshakes", &LoadSecond::handshakes},
    {"resumed", &LoadSecond::resumed},
    {"http1", &LoadSecond::http1},
    {"http2", &LoadSecond::http2},
    {"messages_sent", &LoadSecond::messages_sent},
    {"messages_received", &LoadSecond::messages_received},
};

// A histogram field; an absent one is empty.
void read_histogram(detail::FieldReader& r, const json& j, const char* name,
                    stats::Histogram& out) {
  if (!r.ok()) return;
  auto it = j.find(name);
  if (it == j.end()) return;
  auto h = stats::Histogram::from_json(*it);
  if (!h) {
    r.fail(name, h.status().message());
    return;
  }
  out = std::move(*h);
}

Result<StepSecond> step_from_json(const json& j, const std::string& path) {
  detail::FieldReader r(j, path);
  StepSecond s;
  for (const StepCounter& c : kStepCounters) r.u64(c.name, s.*c.field);
  read_histogram(r, j, "latency", s.latency);
  read_histogram(r, j, "raw", s.raw);
  if (!r.ok()) return r.status();
  return s;
}

bool read_index(const std::string& key, uint32_t& out) {
  auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), out);
  return ec == std::errc() && end == key.data() + key.size() && !key.empty() &&
         (key.size() == 1 || key[0] != '0');
}

void read_steps(detail::FieldReader& r, LoadSecond& s) {
  json steps;
  r.object("steps", steps);
  if (!r.ok() || steps.is_null()) return;
  for (const auto& [key, value] : steps.items()) {
    uint32_t index = 0;
    if (!read_index(key, index)) {
      r.fail("steps", "\"" + key + "\" is not a step index");
      return;
    }
    auto step = step_from_json(value, r.path("steps") + "." + key);
    if (!step) {
      r.fail("steps", step.status().message());
      return;
    }
    s.steps.emplace(index, std::move(*step));
  }
}

void read_reasons(detail::FieldReader& r, LoadSecond& s) {
  json reasons;
  r.object("reasons", reasons);
  if (!r.ok() || reasons.is_null()) return;
  for (const auto& [why, count] : reasons.items()) {
    if (!count.is_number_unsigned()) {
      r.fail("reasons", "the count of \"" + why + "\" is not an unsigned integer");
      return;
    }
    s.reasons[why] = count.get<uint64_t>();
  }
  json traces;
  r.object("reason_traces", traces);
  if (!r.ok() || traces.is_null()) return;
  for (const auto& [why, trace] : traces.items()) {
    if (!trace.is_string() || s.reasons.count(why) == 0) {
      r.fail("reason_traces", "\"" + why + "\" is not a counted reason with a trace id");
      return;
    }
    s.reason_traces[why] = trace.get<std::string>();
  }
}

// At most kSlowestPerTest, each with its fields in range, the slowest first.
void read_slowest(detail::FieldReader& r, const json& j, LoadSecond& s) {
  if (!r.ok() || !j.is_object() || !j.contains("slowest")) return;
  const json& list = j["slowest"];
  if (!list.is_array() || list.size() > kSlowestPerTest) {
    return r.fail("slowest", "expected an array of at most " + std::to_string(kSlowestPerTest));
  }
  for (size_t i = 0; i < list.size() && r.ok(); ++i) {
    detail::FieldReader e(list[i], r.path("slowest") + "[" + std::to_string(i) + "]");
    SlowRequest one;
    e.u64("us", one.us, true);
    e.u32("step", one.step, true);
    e.i32("status", one.status);
    e.text("outcome", one.outcome);
    e.u32("second", one.second);
    e.text("trace", one.trace);
    r.take(e);
    if (r.ok()) keep_slowest(s.slowest, std::move(one), kSlowestPerTest);
  }
}

void read_close_codes(detail::FieldReader& r, LoadSecond& s) {
  json codes;
  r.object("close_codes", codes);
  if (!r.ok() || codes.is_null()) return;
  for (const auto& [key, count] : codes.items()) {
    uint32_t code = 0;
    if (!read_index(key, code) || code > 4999) {
      r.fail("close_codes", "\"" + key + "\" is not a close code");
      return;
    }
    if (!count.is_number_unsigned()) {
      r.fail("close_codes", "the count of " + key + " is not an unsigned integer");
      return;
    }
    s.close_codes[static_cast<uint16_t>(code)] = count.get<uint64_t>();
  }
}

}  // namespace

void StepSecond::add(const StepSecond& other) {
  for (const StepCounter& c : kStepCounters) this->*c.field += other.*c.field;
  latency.add(other.latency);
  raw.add(other.raw);
}

void keep_slowest(std::vector<SlowRequest>& list, SlowRequest r, size_t keep) {
  if (list.size() >= keep && !list.empty() && r.us <= list.back().us) return;
  auto at = std::upper_bound(list.begin(), list.end(), r.us,
                             [](uint64_t us, const SlowRequest& e) { return us > e.us; });
  list.insert(at, std::move(r));
  if (list.size() > keep) list.pop_back();
}

void LoadSecond::add(const LoadSecond& other, size_t max_reasons) {
  for (const SlowRequest& r : other.slowest) keep_slowest(slowest, r, kSlowestPerTest);
  for (const LoadCounter& c : kLoadCounters) this->*c.field += other.*c.field;
  late.add(other.late);
  handshake.add(other.handshake);
  for (const auto& [index, step] : other.steps) steps[index].add(step);
  for (const auto& [code, count] : other.close_codes) close_codes[code] += count;
  for (const auto& [why, count] : other.reasons) {
    auto it = reasons.find(why);
    if (it != reasons.end()) {
      it->second += count;
    } else if (reasons.size() < max_reasons) {
      reasons.emplace(why, count);
    }
  }
  for (const auto& [why, trace] : other.reason_traces) {
    if (reasons.count(why) != 0) reason_traces.emplace(why, trace);
  }
}

json to_json(const LoadSecond& s) {
  json j = {{"load", s.load}, {"second", s.second}, {"done", s.done}};
  for (const LoadCounter& c : kLoadCounters) j[c.name] = s.*c.field;
  if (!s.late.empty()) j["late"] = s.late.to_json();
  if (!s.handshake.empty()) j["handshake"] = s.handshake.to_json();
  json steps = json::object();
  for (const auto& [index, step] : s.steps) {
    json one = json::object();
    for (const StepCounter& c : kStepCounters) one[c.name] = step.*c.field;
    if (!step.latency.empty()) one["latency"] = step.latency.to_json();
    if (!step.raw.empty()) one["raw"] = step.raw.to_json();
    steps[std::to_string(index)] = std::move(one);
  }
  j["steps"] = std::move(steps);
  j["reasons"] = s.reasons;
  if (!s.reason_traces.empty()) j["reason_traces"] = s.reason_traces;
  if (!s.slowest.empty()) {
    json slowest = json::array();
    for (const SlowRequest& r : s.slowest) {
      slowest.push_back({{"us", r.us},
                         {"step", r.step},
                         {"status", r.status},
                         {"outcome", r.outcome},
                         {"second", r.second},
                         {"trace", r.trace}});
    }
    j["slowest"] = std::move(slowest);
  }
  if (!s.close_codes.empty()) {
    json codes = json::object();
    for (const auto& [code, count] : s.close_codes) codes[std::to_string(code)] = count;
    j["close_codes"] = std::move(codes);
  }
  return j;
}

Result<LoadSecond> load_second_from_json(const json& j) {
  detail::FieldReader r(j, "");
  LoadSecond s;
  r.text("load", s.load, true);
  r.u32("second", s.second, true);
  r.boolean("done", s.done);
  for (const LoadCounter& c : kLoadCounters) r.u64(c.name, s.*c.field);
  read_histogram(r, j, "late", s.late);
  read_histogram(r, j, "handshake", s.handshake);
  read_steps(r, s);
  read_reasons(r, s);
  read_close_codes(r, s);
  read_slowest(r, j, s);
  if (!r.ok()) return r.status();
  return s;
}

}  // namespace corral::ipc
