#include "master/limit_shares.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace corral::master {

std::vector<double> water_fill(double total, const std::vector<double>& demand) {
  const size_t n = demand.size();
  std::vector<double> out(n, 0);
  if (n == 0) return out;
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return demand[a] < demand[b]; });
  double left = total;
  for (size_t k = 0; k < n; ++k) {
    double fair = left / static_cast<double>(n - k);
    double give = std::min(std::max(0.0, demand[order[k]]), fair);
    out[order[k]] = give;
    left -= give;
  }
  for (double& share : out) share += left / static_cast<double>(n);
  return out;
}

std::vector<uint32_t> water_fill_whole(uint32_t total, const std::vector<double>& demand,
                                       const std::vector<bool>& starved,
                                       const std::vector<uint32_t>& now, uint64_t turn) {
  const size_t n = demand.size();
  std::vector<double> real = water_fill(total, demand);
  std::vector<uint32_t> out(n);
  uint64_t given = 0;
  for (size_t i = 0; i < n; ++i) {
    out[i] = static_cast<uint32_t>(std::floor(real[i] + 1e-9));
    given += out[i];
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto frac = [&](size_t i) { return real[i] - static_cast<double>(out[i]); };
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (std::abs(frac(a) - frac(b)) > 1e-9) return frac(a) > frac(b);
    if (starved[a] != starved[b]) return static_cast<bool>(starved[a]);
    if (now[a] != now[b]) return now[a] > now[b];
    return (a + turn) % n < (b + turn) % n;
  });
  for (size_t k = 0; given < total && k < n; ++k, ++given) out[order[k]] += 1;
  return out;
}

void LimitShares::set_limits(std::map<ipc::LimitKey, config::TargetLimit> limits) {
  limits_ = std::move(limits);
  for (auto& [slot, w] : workers_) {
    std::erase_if(w.held, [&](const auto& e) { return !limits_.count(e.first); });
    std::erase_if(w.use, [&](const auto& e) { return !limits_.count(e.first); });
  }
  std::erase_if(retired_, [&](const auto& e) { return !limits_.count(e.first); });
}

void LimitShares::worker_ready(int slot) {
  worker_gone(slot);
  workers_.try_emplace(slot);
}

void LimitShares::worker_gone(int slot) {
  auto it = workers_.find(slot);
  if (it == workers_.end()) return;
  for (const auto& [key, use] : it->second.use) {
    retired_[key].started += use.last.started;
    retired_[key].throttled += use.last.throttled;
  }
  workers_.erase(it);
}

void LimitShares::report(int slot, const ipc::LimitUses& uses, uint64_t now_ms) {
  auto it = workers_.find(slot);
  if (it == workers_.end()) return;
  Worker& w = it->second;
  uint64_t interval_ms = w.reported_ms == 0 ? 0 : now_ms - w.reported_ms;
  w.reported_ms = now_ms;
  for (const ipc::LimitUse& u : uses.use) {
    if (!limits_.count(u.key)) continue;
    Use& use = w.use[u.key];
    if (interval_ms > 0 && u.started >= use.last.started) {
      use.started_per_s = static_cast<double>(u.started - use.last.started) * 1000.0 /
                          static_cast<double>(interval_ms);
    }
    use.last = u;
  }
  if (uses.version == w.sent) {
    // It applies the shares last sent: they are all it may use.
    for (auto& [key, held] : w.held) {
      held.flight_most = held.flight;
      held.rate_most = held.rate;
    }
  }
}

void LimitShares::split(const ipc::LimitKey& key, const config::TargetLimit& limit) {
  std::vector<Worker*> ws;
  for (auto& [slot, w] : workers_) ws.push_back(&w);
  const size_t n = ws.size();
  std::vector<double> flights(n), rates(n);
  std::vector<bool> starved(n);
  std::vector<uint32_t> now(n);
  std::vector<uint64_t> in_flight(n);
  for (size_t i = 0; i < n; ++i) {
    const ipc::LimitUse& u = ws[i]->use[key].last;
    Held& h = ws[i]->held[key];
    in_flight[i] = u.in_flight;
    flights[i] = static_cast<double>(u.in_flight + u.waiting);
    rates[i] = ws[i]->use[key].started_per_s + static_cast<double>(u.waiting);
    starved[i] = u.waiting > 0 && h.flight == 0;
    now[i] = h.flight;
  }
  if (limit.max_in_flight != 0) {
    auto want = water_fill_whole(limit.max_in_flight, flights, starved, now, turn_);
    double room = limit.max_in_flight;
    for (size_t i = 0; i < n; ++i) {
      Held& h = ws[i]->held[key];
      h.flight = std::min(h.flight, want[i]);  // a share that shrinks does so at once
      room -= static_cast<double>(std::max<uint64_t>(h.flight_most, in_flight[i]));
    }
    for (size_t i = 0; i < n; ++i) {
      Held& h = ws[i]->held[key];
      if (want[i] <= h.flight) continue;
      double base = static_cast<double>(std::max<uint64_t>(h.flight_most, in_flight[i]));
      double may = std::min<double>(want[i], base + std::max(0.0, room));
      auto grown = std::max(h.flight, static_cast<uint32_t>(may));
      room -= std::max(0.0, static_cast<double>(grown) - base);
      h.flight = grown;
      h.flight_most = std::max(h.flight_most, grown);
    }
  }
  if (limit.rate != 0) {
    auto want = water_fill(limit.rate, rates);
    double room = limit.rate;
    for (size_t i = 0; i < n; ++i) {
      Held& h = ws[i]->held[key];
      h.rate = std::min(h.rate, want[i]);
      room -= h.rate_most;
    }
    for (size_t i = 0; i < n; ++i) {
      Held& h = ws[i]->held[key];
      if (want[i] <= h.rate) continue;
      double grown = std::max(h.rate, std::min(want[i], h.rate_most + std::max(0.0, room)));
      room -= std::max(0.0, grown - h.rate_most);
      h.rate = grown;
      h.rate_most = std::max(h.rate_most, grown);
    }
  }
}

std::map<int, ipc::LimitShares> LimitShares::update() {
  ++turn_;
  for (const auto& [key, limit] : limits_) split(key, limit);
  std::map<int, ipc::LimitShares> changed;
  for (auto& [slot, w] : workers_) {
    ipc::LimitShares next;
    for (const auto& [key, limit] : limits_) {
      const Held& h = w.held[key];
      ipc::LimitShare s{key, std::nullopt, std::nullopt, 1};
      if (limit.max_in_flight != 0) s.max_in_flight = h.flight;
      if (limit.rate != 0) {
        // Rounded down, so that a share that moves by a hair sends nothing and the sum stays
        // within the limit.
        s.rate = std::floor(h.rate * 1e6) / 1e6;
        s.burst = std::round(limit.burst * h.rate / limit.rate * 1000) / 1000;
      }
      next.shares.push_back(std::move(s));
    }
    if (next.shares == w.table.shares) continue;
    next.version = next_version_++;
    w.sent = next.version;
    w.table = next;
    changed[slot] = std::move(next);
  }
  return changed;
}

ipc::LimitShares LimitShares::table(int slot) const {
  auto it = workers_.find(slot);
  return it == workers_.end() ? ipc::LimitShares{} : it->second.table;
}

std::map<ipc::LimitKey, LimitShares::Totals> LimitShares::totals() const {
  std::map<ipc::LimitKey, Totals> out;
  for (const auto& [key, limit] : limits_) out[key] = {};
  for (const auto& [key, t] : retired_) {
    out[key].started += t.started;
    out[key].throttled += t.throttled;
  }
  for (const auto& [slot, w] : workers_) {
    for (const auto& [key, use] : w.use) {
      Totals& t = out[key];
      t.in_flight += use.last.in_flight;
      t.waiting += use.last.waiting;
      t.started += use.last.started;
      t.throttled += use.last.throttled;
    }
  }
  return out;
}

}  // namespace corral::master
