#include "cli/format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iterator>

namespace corral::cli {

std::string human_duration(double seconds) {
  if (!(seconds > 0)) return "0s";
  const auto s = static_cast<uint64_t>(seconds);
  if (s < 60) return std::to_string(s) + "s";
  if (s < 3600) return std::to_string(s / 60) + "m";
  if (s < 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "D";
}

std::string human_bytes(uint64_t bytes) {
  static const char* const kUnits[] = {"kb", "mb", "gb", "tb"};
  if (bytes < 1024) return std::to_string(bytes) + "b";
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  // Move up while the one-decimal rendering would reach 1024.0 in this unit.
  while (value >= 1023.95 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%s", value, kUnits[unit]);
  return buf;
}

std::string counted(long n, const std::string& one, const std::string& many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string human_ms(double ms) {
  char buf[32];
  if (!(ms > 0)) return "0ms";
  if (ms < 10) {
    std::snprintf(buf, sizeof buf, "%.1fms", ms);
  } else if (ms < 1000) {
    std::snprintf(buf, sizeof buf, "%.0fms", ms);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fs", ms / 1000);
  }
  return buf;
}

std::optional<WallClock::time_point> parse_utc_timestamp(const std::string& text) {
  std::tm tm{};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  double fraction = 0;
  if (*rest == '.') {
    char* end = nullptr;
    fraction = std::strtod(rest, &end);
    rest = end;
  }
  if (std::string(rest) != "Z") return std::nullopt;
  const std::time_t t = timegm(&tm);
  return WallClock::from_time_t(t) +
         std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(fraction));
}

double json_number(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : fallback;
}

std::string json_string(const nlohmann::json& j, const char* key, std::string fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

nlohmann::json json_field(const nlohmann::json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it != j.end() ? *it : nlohmann::json();
}

}  // namespace corral::cli
