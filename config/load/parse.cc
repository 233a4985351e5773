// Parsing a load section: the model, its stages and its timing. Thresholds are read in
// threshold.cc.
#include "config/load/parse.h"

#include <algorithm>
#include <arpa/inet.h>

#include "config/scenario/parse_internal.h"

namespace corral::load {
namespace {

using nlohmann::json;
using scenario::detail::check_fields;
using scenario::detail::element_path;
using scenario::detail::fail;
using scenario::detail::field_path;
using scenario::detail::ParseError;
using scenario::detail::read_duration;
using scenario::detail::read_positive_duration;
using scenario::detail::shown;

const std::string kPath = "load";

std::string at(std::string_view name) { return field_path(kPath, name); }

// What the targets of a model count, and how many there may be.
struct TargetKind {
  const char* field;  // the constant form's field
  double max;
};

TargetKind target_kind(Model m) {
  switch (m) {
    case Model::kClosed:
      return {"vus", kMaxVus};
    case Model::kOpen:
      return {"rate", kMaxRate};
    case Model::kHeld:
      return {"connections", kMaxConnections};
  }
  return {"vus", kMaxVus};
}

Model read_model(const json& j) {
  if (j.contains("model")) {
    const json& m = j["model"];
    for (Model model : {Model::kClosed, Model::kOpen, Model::kHeld}) {
      if (m == to_string(model)) return model;
    }
    fail(at("model"), "expected one of closed, open, held, got " + shown(m));
  }
  int given = 0;
  Model model = Model::kClosed;
  for (Model m : {Model::kClosed, Model::kOpen, Model::kHeld}) {
    if (j.contains(target_kind(m).field)) {
      ++given;
      model = m;
    }
  }
  if (given > 1) fail(kPath, "give only one of \"vus\", \"rate\", \"connections\"");
  return model;
}

// A number from `min` to `max`; a whole one unless the model's target is a rate.
double read_amount(const json& j, const std::string& path, double min, double max, bool whole) {
  bool ok = j.is_number() && j.get<double>() >= min && j.get<double>() <= max &&
            (!whole || j.is_number_integer());
  if (!ok) {
    fail(path, std::string(whole ? "expected a whole number" : "expected a number") + " from " +
                   std::to_string(static_cast<int64_t>(min)) + " to " +
                   std::to_string(static_cast<int64_t>(max)) + ", got " + shown(j));
  }
  return j.get<double>();
}

double read_target(const json& j, const std::string& path, Model model, double min) {
  return read_amount(j, path, min, target_kind(model).max, model != Model::kOpen);
}

std::vector<Stage> read_stages(const json& j, Model model) {
  const std::string path = at("stages");
  if (!j.is_array() || j.empty()) fail(path, "expected a non-empty array of stages");
  std::vector<Stage> stages;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = element_path(path, i);
    check_fields(j[i], p, {"duration", "target"});
    if (!j[i].contains("duration") || !j[i].contains("target")) {
      fail(p, "a stage needs \"duration\" and \"target\"");
    }
    stages.push_back({read_duration(j[i]["duration"], field_path(p, "duration")),
                      read_target(j[i]["target"], field_path(p, "target"), model, 0)});
  }
  return stages;
}

// The constant form ("vus": 100, "duration": "30s") or the stages, never both.
void read_shape(const json& j, LoadSpec& spec) {
  const TargetKind kind = target_kind(spec.model);
  for (Model other : {Model::kClosed, Model::kOpen, Model::kHeld}) {
    const char* field = target_kind(other).field;
    if (other != spec.model && j.contains(field)) {
      fail(at(field), std::string("not part of the ") + std::string(to_string(spec.model)) +
                          " model (its target is \"" + kind.field + "\")");
    }
  }
  const bool constant = j.contains(kind.field);
  if (constant == j.contains("stages")) {
    fail(kPath, std::string("give either \"") + kind.field +
                    "\" with \"duration\", or \"stages\"");
  }
  if (constant) {
    if (j.contains("start")) fail(at("start"), "only with \"stages\"");
    if (!j.contains("duration")) fail(at("duration"), "missing, expected a duration like \"30s\"");
    spec.start = read_target(j[kind.field], at(kind.field), spec.model, 1);
    spec.stages = {{read_positive_duration(j["duration"], at("duration")), spec.start}};
    return;
  }
  if (j.contains("duration")) fail(at("duration"), "not with \"stages\": each stage has one");
  if (j.contains("start")) spec.start = read_target(j["start"], at("start"), spec.model, 0);
  spec.stages = read_stages(j["stages"], spec.model);
  if (spec.peak() <= 0) fail(at("stages"), "every target is 0: nothing would run");
}

void read_timing(const json& j, LoadSpec& spec) {
  if (j.contains("pace")) {
    if (spec.model == Model::kOpen) fail(at("pace"), "the open model's pace is its \"rate\"");
    spec.pace_ms = read_positive_duration(j["pace"], at("pace"));
  } else if (spec.model == Model::kHeld) {
    fail(at("pace"), "missing: each held connection sends an iteration every \"pace\"");
  }
  if (j.contains("think")) spec.think_ms = read_duration(j["think"], at("think"));
  if (j.contains("grace")) spec.grace_ms = read_duration(j["grace"], at("grace"));
  if (j.contains("max_vus")) {
    if (spec.model != Model::kOpen) fail(at("max_vus"), "only for the open model");
    spec.max_vus = static_cast<uint64_t>(read_amount(j["max_vus"], at("max_vus"), 1, kMaxVus, true));
  } else if (spec.model == Model::kOpen) {
    spec.max_vus = 1000;
  }
  if (spec.duration_ms() > kMaxDurationMs) fail(kPath, "the test would last more than 7 days");
}

void read_sources(const json& j, LoadSpec& spec) {
  if (!j.contains("source_addresses")) return;
  const std::string path = at("source_addresses");
  if (spec.model != Model::kHeld) fail(path, "only for the held model");
  const json& list = j["source_addresses"];
  if (!list.is_array() || list.empty()) fail(path, "expected a non-empty array of IPv4 addresses");
  for (size_t i = 0; i < list.size(); ++i) {
    in_addr addr{};
    if (!list[i].is_string() || inet_pton(AF_INET, list[i].get<std::string>().c_str(), &addr) != 1) {
      fail(element_path(path, i), "expected an IPv4 address like \"127.0.0.2\", got " +
                                      shown(list[i]));
    }
    spec.source_addresses.push_back(list[i].get<std::string>());
  }
}

// "hosts": a count, or "all".
void read_hosts(const json& j, LoadSpec& spec) {
  if (!j.contains("hosts")) return;
  const json& h = j["hosts"];
  if (h == "all") {
    spec.hosts = 0;
  } else if (h.is_number_unsigned() && h.get<uint64_t>() >= 1 && h.get<uint64_t>() <= kMaxHosts) {
    spec.hosts = h.get<uint32_t>();
  } else {
    fail(at("hosts"), "expected a number of hosts from 1 to " + std::to_string(kMaxHosts) +
                          ", or \"all\", got " + shown(h));
  }
}

void read_thresholds(const json& j, LoadSpec& spec) {
  if (!j.contains("thresholds")) return;
  const json& t = j["thresholds"];
  const std::string path = at("thresholds");
  if (!t.is_object()) fail(path, "expected an object of metric: [threshold, ...]");
  for (const auto& [key, items] : t.items()) {
    const std::string p = field_path(path, key);
    if (!items.is_array() || items.empty()) fail(p, "expected a non-empty array of thresholds");
    for (size_t i = 0; i < items.size(); ++i) {
      Result<Threshold> th = parse_threshold(key, items[i], element_path(p, i));
      if (!th) throw ParseError{th.status().message()};
      spec.thresholds.push_back(std::move(*th));
    }
  }
}

LoadSpec parse(const json& j) {
  check_fields(
      j, kPath,
      {"model", "vus", "rate", "connections", "duration", "stages", "start", "pace", "think",
       "grace", "max_vus", "source_addresses", "thresholds", "watch", "target", "hosts"});
  LoadSpec spec;
  spec.model = read_model(j);
  read_shape(j, spec);
  read_timing(j, spec);
  read_sources(j, spec);
  read_hosts(j, spec);
  read_thresholds(j, spec);
  if (j.contains("target")) {
    Result<TargetCommand> t = parse_target(j["target"], at("target"));
    if (!t) throw ParseError{t.status().message()};
    spec.target = std::move(*t);
    if (spec.hosts != 1)
      fail(at("target"), "a target corral starts runs on one host: not with \"hosts\"");
  }
  if (j.contains("watch")) {
    Result<Watch> w = parse_watch(j["watch"], at("watch"), spec.target.any());
    if (!w) throw ParseError{w.status().message()};
    spec.watch = std::move(*w);
  }
  return spec;
}

}  // namespace

std::string_view to_string(Model model) {
  switch (model) {
    case Model::kClosed:
      return "closed";
    case Model::kOpen:
      return "open";
    case Model::kHeld:
      return "held";
  }
  return "?";
}

uint64_t LoadSpec::duration_ms() const {
  uint64_t total = 0;
  for (const Stage& s : stages) total += s.duration_ms;
  return total;
}

double LoadSpec::target_at(uint64_t t_ms) const {
  double from = start;
  for (const Stage& s : stages) {
    if (t_ms < s.duration_ms) {
      return from + (s.target - from) * static_cast<double>(t_ms) / static_cast<double>(s.duration_ms);
    }
    t_ms -= s.duration_ms;
    from = s.target;
  }
  return from;
}

double LoadSpec::peak() const {
  double peak = start;
  for (const Stage& s : stages) peak = std::max(peak, s.target);
  return peak;
}

Result<LoadSpec> parse_load(const nlohmann::json& load) {
  try {
    return parse(load);
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  } catch (const nlohmann::json::exception& e) {
    return invalid_argument(std::string("invalid load section: ") + e.what());
  }
}

}  // namespace corral::load
