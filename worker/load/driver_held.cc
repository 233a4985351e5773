// The held-connection model's part of LoadDriver (driver.h): pins, source addresses, and the
// connection and socket counts of each second.
#include <atomic>
#include <string_view>

#include "shared/uv/pulse.h"
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
  for (std::string_view scheme : {"http://", "ws://"}) {
    if (url.substr(0, scheme.size()) != scheme) continue;
    url.remove_prefix(scheme.size());
    return url.substr(0, 4) == "127." || url.substr(0, 9) == "localhost";
  }
  return false;
}

// The count `now` of a counter, less what the last report had; `seen` takes `now`.
uint64_t delta(uint64_t now, uint64_t& seen) {
  uint64_t d = now >= seen ? now - seen : 0;
  seen = now;
  return d;
}

}  // namespace

void LoadDriver::start_held() {
  group_ = g_next_group.fetch_add(1);
  if (!held_) return;
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

const std::string* LoadDriver::source_for(uint32_t vu, std::string_view url) const {
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

LoadDriver::SocketHold LoadDriver::socket_hold(uint32_t vu, std::string_view url) {
  SocketHold hold;
  hold.group = group_;
  if (!held_) return hold;
  hold.key = pin_of(vu);
  if (const std::string* source = source_for(vu, url)) hold.source = *source;
  return hold;
}

void LoadDriver::release_connection(uint32_t vu) {
  if (!held_) return;
  engine_.http().unpin(pin_of(vu));
  engine_.release_held(pin_of(vu));
}

void LoadDriver::release_connections() {
  if (!held_) return;
  for (uint32_t vu = 0; vu < vus_.size(); ++vu) {
    release_connection(vu);
    uv::pulse();  // thousands of sockets closed in one call: a loop this busy still beats
  }
}

// The HTTP client's held connections and the WebSocket steps' sockets, added up.
void LoadDriver::count_connections(ipc::LoadSecond& out) {
  const bool over = phase_ == Phase::kFinished;
  if (held_) {
    HeldCounts now = engine_.http().held(group_, over);
    out.connections = now.open;
    out.opened = delta(now.opened, held_seen_.opened);
    out.connect_failed = delta(now.failed, held_seen_.failed);
    out.closed = delta(now.closed, held_seen_.closed);
  }
  SocketCounts now = engine_.socket_counts(group_, over);
  SocketCounts& seen = sockets_seen_;
  out.connections += now.open;
  out.opened += delta(now.opened, seen.opened);
  out.connect_failed += delta(now.failed, seen.failed);
  out.closed += delta(now.closed, seen.closed);
  out.messages_sent = delta(now.sent, seen.sent);
  out.messages_received = delta(now.received, seen.received);
  for (const auto& [code, n] : now.close_codes) {
    if (uint64_t d = delta(n, seen.close_codes[code]); d > 0) out.close_codes[code] = d;
  }
}

}  // namespace corral::worker
