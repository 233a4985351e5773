// corral-target's WebSocket routes (see target.h for the list): an echo with an optional push,
// and what a broken server answers, for the tests of corral's WebSocket client. The frames are
// wslay's (shared/ws/framing.h); only /ws/raw writes bytes a test chose.
#include <charconv>

#include "shared/uv/stream.h"
#include "shared/ws/handshake.h"
#include "tools/target/target.h"
#include "tools/target/ws_peer.h"

namespace corral::target {
namespace {

using http::Response;

// "8103414243" -> the bytes; stops at the first pair that is not hex.
std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    if (ec != std::errc() || end != hex.data() + i + 2) break;
    out.push_back(static_cast<char>(v));
  }
  return out;
}

}  // namespace

bool Target::websocket(const http::Request& req, const http::Responder& respond) {
  const std::string& p = req.path;
  if (p != "/ws" && p.rfind("/ws/", 0) != 0) return false;
  if (p == "/ws/status") {  // a server that does not switch
    respond.send(
        Response::error(static_cast<int>(query_number(req, "code", 200)), "no WebSocket here"));
    return true;
  }
  if (const uint64_t most = query_number(req, "max_open", 0);
      most > 0 && ws_peers_.size() >= most) {
    respond.send(Response::error(503, std::to_string(most) + " WebSockets are open already"));
    return true;
  }
  if (!ws::is_upgrade(req)) {
    respond.send(Response::error(426, "this route speaks WebSocket: send an Upgrade request"));
    return true;
  }
  auto headers = ws::answer_upgrade(req, {"echo", "chat"});
  if (!headers) {
    respond.send(Response::error(400, headers.status().message()));
    return true;
  }
  WsPeer::Options opts;
  opts.push_ms = query_number(req, "push_ms", 0);
  opts.close_after = query_number(req, "close_after", 0);
  opts.close_code = static_cast<uint16_t>(query_number(req, "close_code", ws::kCloseNormal));
  if (p == "/ws/raw") opts.raw = from_hex(req.query_param("hex").value_or(""));
  Response r;
  r.status = 101;
  r.headers = std::move(*headers);
  // The trace context the handshake carried, back as a header a test can capture.
  if (std::string tp = req.header("traceparent"); !tp.empty()) {
    r.headers.emplace_back("X-Echo-Traceparent", std::move(tp));
  }
  if (query_number(req, "deflate", 0) != 0) {  // permessage-deflate when the client offers it
    std::string agreed = ws::deflate_answer(req.header("Sec-WebSocket-Extensions"));
    opts.deflate = !agreed.empty();
    if (opts.deflate) r.headers.emplace_back("Sec-WebSocket-Extensions", std::move(agreed));
  }
  if (p == "/ws/bad-accept") {
    for (auto& [name, value] : r.headers) {
      if (name == "Sec-WebSocket-Accept") value = "bm90IHRoZSByaWdodCBhbnN3ZXI=";
    }
  }
  r.upgrade = [this, opts = std::move(opts)](std::unique_ptr<uv::Stream> stream,
                                             std::string rest) mutable {
    uint64_t id = ++next_ws_;
    auto peer = std::make_unique<WsPeer>(*this, id, std::move(stream), std::move(opts));
    WsPeer* raw = peer.get();
    ws_peers_.emplace(id, std::move(peer));
    raw->start(rest);
  };
  respond.send(std::move(r));
  return true;
}

void Target::forget_ws(uint64_t id) {
  auto it = ws_peers_.find(id);
  if (it == ws_peers_.end()) return;
  it->second->close();
  // Freed on the next turn: this may run inside one of the peer's own callbacks.
  dead_ws_.push_back(std::move(it->second));
  ws_peers_.erase(it);
  if (dead_ws_.size() == 1) reap_ws_.start(0, 0, [this] { dead_ws_.clear(); });
}

}  // namespace corral::target
