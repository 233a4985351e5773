#include "worker/http/queued_client.h"

#include "shared/uv/guard.h"

namespace corral::worker {

void QueuedClient::send(HttpRequest req, Done done) {
  if (has_room() && waiting_.empty()) {
    ++in_flight_;
    start(std::move(req), std::move(done));
    return;
  }
  send_lazy([r = std::move(req)]() mutable { return std::optional<HttpRequest>(std::move(r)); },
            std::move(done));
}

void QueuedClient::send_lazy(Make make, Done done) {
  ++in_flight_;
  if (!has_room() || !waiting_.empty()) {
    waiting_.push_back(Waiting{std::move(make), std::move(done)});
    return;
  }
  start_made(std::move(make), std::move(done));
}

void QueuedClient::start_made(Make make, Done done) {
  std::optional<HttpRequest> req;
  uv::guard("request builder", [&] { req = make(); });
  if (!req) {
    --in_flight_;
    return;
  }
  start(std::move(*req), std::move(done));
}

void QueuedClient::start_waiting() {
  while (has_room() && !waiting_.empty()) {
    Waiting next = std::move(waiting_.front());
    waiting_.pop_front();
    start_made(std::move(next.make), std::move(next.done));
  }
}

}  // namespace corral::worker
