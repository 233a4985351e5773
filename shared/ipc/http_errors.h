// Connection errors of a worker's HTTP clients per origin, carried in its heartbeat as
// "http_errors": {"<origin>": {"connect": u64, "reset": u64, "timeout": u64, "retried": u64}}
// (counts since the worker started; absent when there are none). The master shows them in
// /metrics as corral_http_connection_errors_total{slot,origin,kind}.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace corral::ipc {

struct HttpErrorCounts {
  std::string origin;
  uint64_t connect = 0, reset = 0, timeout = 0, retried = 0;
  bool operator==(const HttpErrorCounts&) const = default;
};

// At most this many origins travel; a worker counts the rest under "other".
constexpr size_t kMaxHttpErrorOrigins = 64;

nlohmann::json http_errors_to_json(const std::vector<HttpErrorCounts>& counts);
// Entries of the wrong shape are a protocol error: nullopt.
std::optional<std::vector<HttpErrorCounts>> http_errors_from_json(const nlohmann::json& j);

}  // namespace corral::ipc
