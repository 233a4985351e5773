#include "shared/ipc/http_errors.h"

namespace corral::ipc {
namespace {

constexpr const char* kKinds[] = {"connect", "reset", "timeout", "retried"};

uint64_t* field(HttpErrorCounts& c, int k) {
  uint64_t* fields[] = {&c.connect, &c.reset, &c.timeout, &c.retried};
  return fields[k];
}

}  // namespace

nlohmann::json http_errors_to_json(const std::vector<HttpErrorCounts>& counts) {
  nlohmann::json j = nlohmann::json::object();
  for (HttpErrorCounts c : counts) {
    nlohmann::json& e = j[c.origin];
    for (int k = 0; k < 4; ++k) e[kKinds[k]] = *field(c, k);
  }
  return j;
}

std::optional<std::vector<HttpErrorCounts>> http_errors_from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.size() > kMaxHttpErrorOrigins + 1) return std::nullopt;
  std::vector<HttpErrorCounts> out;
  for (const auto& [origin, e] : j.items()) {
    if (!e.is_object() || e.size() != 4) return std::nullopt;
    HttpErrorCounts c;
    c.origin = origin;
    for (int k = 0; k < 4; ++k) {
      auto it = e.find(kKinds[k]);
      if (it == e.end() || !it->is_number_unsigned()) return std::nullopt;
      *field(c, k) = it->get<uint64_t>();
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace corral::ipc
