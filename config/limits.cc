#include "config/limits.h"

#include <cmath>
#include <set>

#include "shared/http/origin.h"

namespace corral::config {
namespace {

using nlohmann::json;

Status bad(const std::string& path, const std::string& what) {
  return invalid_argument(path + ": " + what);
}

Result<TargetLimit> read_limit(const json& j, const std::string& path) {
  if (!j.is_object()) return bad(path, "expected an object, got " + j.dump());
  TargetLimit limit;
  for (const auto& [name, v] : j.items()) {
    std::string at = path + "." + name;
    if (name == "max_in_flight") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > kMaxInFlightLimit) {
        return bad(at, "expected a whole number from 1 to 1000000, got " + v.dump());
      }
      limit.max_in_flight = v.get<uint32_t>();
    } else if (name == "rate") {
      Result<double> rate = parse_rate(v);
      if (!rate) return bad(at, rate.status().message());
      limit.rate = *rate;
    } else if (name == "burst") {
      if (!v.is_number_unsigned() || v.get<uint64_t>() < 1 || v.get<uint64_t>() > kMaxInFlightLimit) {
        return bad(at, "expected a whole number from 1 to 1000000, got " + v.dump());
      }
      limit.burst = v.get<uint32_t>();
    } else {
      return bad(at, "unknown field (known: max_in_flight, rate, burst)");
    }
  }
  if (limit.max_in_flight == 0 && limit.rate == 0) {
    return bad(path, "expected max_in_flight, rate or both");
  }
  if (j.contains("burst") && limit.rate == 0) return bad(path + ".burst", "needs a rate");
  return limit;
}

}  // namespace

Result<std::string> limit_origin(const std::string& key, const std::string& path, bool bare) {
  std::string origin = http::origin_of(key);
  std::string scheme = origin.substr(0, origin.find(':'));
  size_t host = key.find("://");
  bool only = host != std::string::npos && key.find_first_of("/?#", host + 3) == std::string::npos;
  if (origin.empty() || (bare && !only) || (scheme != "http" && scheme != "https")) {
    return bad(path, std::string(bare ? "expected an origin like \"http://host:port\" (no path)"
                                      : "expected an http(s) URL") +
                         ", got \"" + key + "\"");
  }
  return origin;
}

Result<double> parse_rate(const json& j) {
  const std::string expected = "expected a rate like \"50/s\", \"600/m\" or \"1000/h\", got " + j.dump();
  double n = 0;
  double per_s = 1;
  if (j.is_number()) {
    n = j.get<double>();
  } else if (j.is_string()) {
    const std::string s = j.get<std::string>();
    size_t slash = s.find('/');
    if (slash == std::string::npos || slash + 2 != s.size()) return invalid_argument(expected);
    char unit = s.back();
    per_s = unit == 's' ? 1 : unit == 'm' ? 60 : unit == 'h' ? 3600 : 0;
    size_t used = 0;
    try {
      n = std::stod(s.substr(0, slash), &used);
    } catch (const std::exception&) {
      return invalid_argument(expected);
    }
    if (per_s == 0 || used != slash) return invalid_argument(expected);
  } else {
    return invalid_argument(expected);
  }
  double rate = n / per_s;
  // Written as "not inside" so that NaN is refused too.
  if (!(rate >= (1 - 1e-9) / 3600 && rate <= kMaxRateLimit)) {
    return invalid_argument("must be between 1/h and 1000000/s, got " + j.dump());
  }
  return rate;
}

Result<TargetLimits> parse_limits(const json& j, const std::string& path, bool templates) {
  if (!j.is_object()) {
    return bad(path, "expected an object of origins, like {\"http://host:port\": "
                     "{\"max_in_flight\": 10}}, got " + j.dump());
  }
  if (j.size() > kMaxLimitedOrigins) {
    return bad(path, "at most " + std::to_string(kMaxLimitedOrigins) + " origins");
  }
  TargetLimits out;
  std::set<std::string> seen;
  for (const auto& [key, v] : j.items()) {
    std::string at = path + "[\"" + key + "\"]";
    const bool templated = templates && key.find("{{") != std::string::npos;
    Result<std::string> origin = templated ? Result<std::string>(key) : limit_origin(key, at, true);
    if (!origin) return origin.status();
    if (!seen.insert(*origin).second) return bad(at, "names " + *origin + " a second time");
    Result<TargetLimit> limit = read_limit(v, at);
    if (!limit) return limit.status();
    limit->origin = *origin;
    out.push_back(std::move(*limit));
  }
  return out;
}

json limits_to_json(const TargetLimits& limits) {
  json j = json::object();
  for (const TargetLimit& l : limits) {
    json& e = j[l.origin];
    e = json::object();
    if (l.max_in_flight != 0) e["max_in_flight"] = l.max_in_flight;
    if (l.rate != 0) {
      e["rate"] = l.rate;
      e["burst"] = l.burst;
    }
  }
  return j;
}

}  // namespace corral::config
