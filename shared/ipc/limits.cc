#include "shared/ipc/limits.h"

#include <cmath>

namespace corral::ipc {
namespace {

using nlohmann::json;

json key_json(const LimitKey& k) { return {{"run", k.run}, {"origin", k.origin}}; }

bool read_key(const json& e, LimitKey& k) {
  auto run = e.find("run");
  auto origin = e.find("origin");
  if (run == e.end() || origin == e.end() || !run->is_string() || !origin->is_string()) {
    return false;
  }
  k.run = run->get<std::string>();
  k.origin = origin->get<std::string>();
  return !k.origin.empty();
}

bool read_u64(const json& e, const char* name, uint64_t& out) {
  auto it = e.find(name);
  if (it == e.end() || !it->is_number_unsigned()) return false;
  out = it->get<uint64_t>();
  return true;
}

bool finite_at_least(const json& v, double min) {
  return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= min;
}

// The entries of `j[name]`: an array of objects, at most kMaxLimitShares; nullptr otherwise.
const json* entries(const json& j, const char* name, uint64_t& version) {
  if (!j.is_object() || !read_u64(j, "version", version)) return nullptr;
  auto it = j.find(name);
  if (it == j.end() || !it->is_array() || it->size() > kMaxLimitShares) return nullptr;
  for (const json& e : *it) {
    if (!e.is_object()) return nullptr;
  }
  return &*it;
}

}  // namespace

json to_json(const LimitShares& s) {
  json shares = json::array();
  for (const LimitShare& share : s.shares) {
    json e = key_json(share.key);
    if (share.max_in_flight) e["max_in_flight"] = *share.max_in_flight;
    if (share.rate) e["rate"] = *share.rate;
    e["burst"] = share.burst;
    shares.push_back(std::move(e));
  }
  return {{"version", s.version}, {"shares", std::move(shares)}};
}

json to_json(const LimitUses& u) {
  json use = json::array();
  for (const LimitUse& l : u.use) {
    json e = key_json(l.key);
    e["in_flight"] = l.in_flight;
    e["waiting"] = l.waiting;
    e["started"] = l.started;
    e["throttled"] = l.throttled;
    use.push_back(std::move(e));
  }
  return {{"version", u.version}, {"use", std::move(use)}};
}

std::optional<LimitShares> limit_shares_from_json(const json& j) {
  LimitShares out;
  const json* list = entries(j, "shares", out.version);
  if (list == nullptr) return std::nullopt;
  for (const json& e : *list) {
    LimitShare s;
    if (!read_key(e, s.key)) return std::nullopt;
    if (auto m = e.find("max_in_flight"); m != e.end()) {
      if (!m->is_number_unsigned() || m->get<uint64_t>() > UINT32_MAX) return std::nullopt;
      s.max_in_flight = m->get<uint32_t>();
    }
    if (auto r = e.find("rate"); r != e.end()) {
      if (!finite_at_least(*r, 0)) return std::nullopt;
      s.rate = r->get<double>();
    }
    auto b = e.find("burst");
    if (b == e.end() || !finite_at_least(*b, 0)) return std::nullopt;
    s.burst = b->get<double>();
    out.shares.push_back(std::move(s));
  }
  return out;
}

std::optional<LimitUses> limit_uses_from_json(const json& j) {
  LimitUses out;
  const json* list = entries(j, "use", out.version);
  if (list == nullptr) return std::nullopt;
  for (const json& e : *list) {
    LimitUse u;
    if (!read_key(e, u.key) || !read_u64(e, "in_flight", u.in_flight) ||
        !read_u64(e, "waiting", u.waiting) || !read_u64(e, "started", u.started) ||
        !read_u64(e, "throttled", u.throttled)) {
      return std::nullopt;
    }
    out.use.push_back(std::move(u));
  }
  return out;
}

}  // namespace corral::ipc
