// Human-readable values for the CLI's tables, in pm2's style ("3m", "12.3mb").
// Pure functions; any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace corral::cli {

using WallClock = std::chrono::system_clock;

// Whole units, rounded down: "0s", "59s", "3m", "2h", "4D". Negative counts as 0.
std::string human_duration(double seconds);
// "0b", "512b", "1.5kb", "12.3mb", "2.0gb" (powers of 1024, one decimal from kb on).
std::string human_bytes(uint64_t bytes);
// A lag or delay: "0.3ms", "12ms", "1.5s".
std::string human_ms(double ms);
// "1 instance", "3 instances": `n` and the noun in the number it needs.
std::string counted(long n, const std::string& one, const std::string& many);
// "2026-11-30T15:00:00Z" (fractional seconds allowed) -> that instant; nullopt if malformed.
std::optional<WallClock::time_point> parse_utc_timestamp(const std::string& text);

// Lenient field access for JSON from the daemon: a missing field or one of another type reads
// as the fallback, so a newer or older daemon never makes the CLI throw.
double json_number(const nlohmann::json& j, const char* key, double fallback = 0);
std::string json_string(const nlohmann::json& j, const char* key, std::string fallback = "");
// The field, or null when `j` is not an object or lacks it.
nlohmann::json json_field(const nlohmann::json& j, const char* key);

}  // namespace corral::cli
