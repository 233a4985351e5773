// The held-connection model's part of LoadDriver (driver.h): pins, source addresses and the
// connection counts of each second.
#include <atomic>
#include <string_view>

#include "worker/load/driver.h"

namespace corral::worker {
namespace {

// Connections from one source address to one loopback target, before the next address is
// used. Linux's default ephemeral range has 28,232 ports, and connect() searches the ports of
// one parity first: past about 14,000 connections per pair, every connect() walks the whole
// used half before it finds a port (measured: 74 % of a worker's CPU in
// __inet_check_established at 25,000 per pair). 10,000 keeps the search short.
constexpr uint64_t kPerSource = 10000;

// Each held test of this worker counts its connections apart in the client.
std::atomic<uint32_t> g_next_group{1};

bool loopback_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.substr(0, kScheme.size()) != kScheme) return false;
  url.remove_prefix(kScheme.size());
  return url.substr(0, 4) == "127." || url.substr(0, 9) == "localhost";
}

}  // namespace

void LoadDriver::start_held() {
  group_ = g_next_group.fetch_add(1);
  sources_ = spec_.source_addresses;
  if (sources_.empty() && spec_.peak() > static_cast<double>(kPerSource)) {
    // Only used for a loopback target (source_for): these addresses reach nothing else.
    auto n = static_cast<uint64_t>((spec_.peak() + kPerSource - 1) / kPerSource);
    for (uint64_t i = 1; i <= n && i < 255; ++i) sources_.push_back("127.0.0." + std::to_string(i));
  }
}

// VU `vu` of this worker is the test's VU share_.test_vu(vu): the same number on every run.
uint64_t LoadDriver::pin_of(uint32_t vu) const {
  uint64_t test_vu = share_.test_vu(vu);
  return (uint64_t{group_} << 32) | ((test_vu + 1) & 0xffffffffu);
}

const std::string* LoadDriver::source_for(uint32_t vu, const std::string& url) const {
  if (sources_.empty()) return nullptr;
  if (spec_.source_addresses.empty() && !loopback_url(url)) return nullptr;
  uint64_t test_vu = share_.test_vu(vu);
  return &sources_[test_vu % sources_.size()];
}

void LoadDriver::on_request(uint32_t vu, HttpRequest& req) {
  if (!held_) return;
  req.pin = pin_of(vu);
  if (const std::string* source = source_for(vu, req.url)) req.source = *source;
}

void LoadDriver::release_connection(uint32_t vu) { engine_.http().unpin(pin_of(vu)); }

void LoadDriver::release_connections() {
  for (uint32_t vu = 0; vu < vus_.size(); ++vu) release_connection(vu);
}

void LoadDriver::count_connections(ipc::LoadSecond& out) {
  HeldCounts now = engine_.http().held(group_, phase_ == Phase::kFinished);
  out.connections = now.open;
  out.opened = now.opened - held_seen_.opened;
  out.connect_failed = now.failed - held_seen_.failed;
  out.closed = now.closed - held_seen_.closed;
  held_seen_ = now;
}

}  // namespace corral::worker
