#include "cli/load_heir.h"

#include <thread>

namespace corral::cli {

using nlohmann::json;

LoadHeirs LoadHeirs::of(const Api& api, const std::string& token) {
  LoadHeirs out;
  out.token_ = token;
  auto cluster = api.get("/cluster");
  if (!cluster || !cluster->is_object()) return out;
  const std::string self = cluster->value("/self/id"_json_pointer, "");
  for (const json& h : cluster->value("hosts", json::array())) {
    if (!h.is_object()) continue;
    const std::string id = h.value("id", ""), address = h.value("address", "");
    if (id != self && !address.empty()) out.addresses_[id] = address;
  }
  return out;
}

std::optional<Api> LoadHeirs::find(const std::string& id, std::chrono::milliseconds wait) const {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    for (const auto& [host, address] : addresses_) {
      Api api(address, token_, 2000);
      auto test = api.get("/loads/" + id);
      if (!test || !test->is_object()) continue;
      const json cluster = test->value("cluster", json());
      if (cluster.is_object() && cluster.value("origin", json()).is_null()) return api;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

}  // namespace corral::cli
