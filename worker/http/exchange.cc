#include "worker/http/exchange.h"

#include <algorithm>
#include <string_view>

#include "config/config.h"
#include "worker/http/lean_client.h"

namespace corral::worker::lean {

Take take_body(LeanClient& client, Exchange& ex, const char* data, size_t len, std::string& wait) {
  std::string decoded;
  std::string_view piece(data, len);
  uint64_t room = ex.max_body - std::min<uint64_t>(ex.max_body, ex.resp.body.size());
  if (ex.inflate) {
    switch (ex.inflate->feed(data, len, decoded, room)) {
      case Inflater::Result::kOk:
        break;
      case Inflater::Result::kTooLarge:
        ex.too_large = true;
        return Take::kTooLarge;
      case Inflater::Result::kBad:
        ex.bad_body = ex.inflate->error();
        return Take::kBad;
    }
    piece = decoded;
  } else if (len > room) {
    ex.too_large = true;
    return Take::kTooLarge;
  }
  if (piece.empty()) return Take::kTaken;
  bool covered = ex.resp.body.size() + piece.size() <= ex.reserved;
  if (!covered && !client.budget().fits(piece.size())) {
    wait.assign(piece);
    return Take::kWait;
  }
  append_body(client, ex, piece.data(), piece.size());
  return Take::kTaken;
}

void append_body(LeanClient& client, Exchange& ex, const char* data, size_t len) {
  uint64_t before = ex.resp.body.size();
  ex.resp.body.append(data, len);
  // Bytes past the reservation (a body without Content-Length has none) count as they come.
  if (ex.resp.body.size() > ex.reserved) {
    uint64_t past = ex.resp.body.size() - std::max<uint64_t>(before, ex.reserved);
    client.budget().used += past;
    ex.budget_held += past;
  }
  client.body_grew(len);
}

bool reserve_body(LeanClient& client, Exchange& ex, uint64_t bytes) {
  if (!client.budget().fits(bytes)) return false;
  client.budget().used += bytes;
  ex.budget_held += bytes;
  ex.reserved = bytes;
  return true;
}

std::string too_large_error(const Exchange& ex) {
  return "response body larger than max_response (" + config::format_bytes(ex.max_body) + ")";
}

}  // namespace corral::worker::lean
