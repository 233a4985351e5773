// The HTTP/2 pool of an origin: exchanges go on the first session with room (so that the fewest
// connections carry them), up to the server's SETTINGS_MAX_CONCURRENT_STREAMS each; when none
// has room, connections are dialled for what waits, a session's worth at a time, within
// max_connections_per_host.
#include <algorithm>

#include "worker/http/h2_session.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"

namespace corral::worker::lean {

bool Origin::begin_h2(std::unique_ptr<Exchange>& ex) {
  for (auto& s : sessions_) {
    if (!s->can_take()) continue;
    s->begin(std::move(ex));
    return true;
  }
  return false;
}

// Called with exchanges queued and the host's addresses known.
void Origin::dispatch_h2() {
  for (size_t i = 0; i < sessions_.size() && !queue_.empty(); ++i) {
    h2::Session* s = sessions_[i].get();
    while (!queue_.empty() && s->can_take()) {
      std::unique_ptr<Exchange> ex = std::move(queue_.front());
      queue_.pop_front();
      s->begin(std::move(ex));
    }
  }
  if (queue_.empty()) {
    uv_timer_stop(sweep_.get());
    return;
  }
  size_t per = std::max<uint32_t>(1, h2_streams_hint_);
  size_t want = (queue_.size() + per - 1) / per;
  auto cap = static_cast<size_t>(std::max(1L, client_.options().max_connections_per_host));
  uint64_t deadline = queue_.front()->deadline_ms;
  while (dialing_ < want && sessions_.size() + dialing_ < cap) dial(preferred_addr_, 0, deadline);
}

void Origin::adopt_h2(std::unique_ptr<Link> link) {
  auto s = std::make_unique<h2::Session>(client_, *this, std::move(link));
  h2::Session* raw = s.get();
  sessions_.push_back(std::move(s));
  if (!raw->start()) return;  // closed: on_closed() has taken it out
  on_room(raw);
}

void Origin::on_room(h2::Session* s) {
  h2_streams_hint_ = std::max<uint32_t>(1, std::min<uint32_t>(s->max_streams(), 100000));
  while (!queue_.empty() && s->can_take()) {
    std::unique_ptr<Exchange> ex = std::move(queue_.front());
    queue_.pop_front();
    s->begin(std::move(ex));
  }
  if (queue_.empty()) uv_timer_stop(sweep_.get());
}

void Origin::on_closed(h2::Session* s, std::vector<std::unique_ptr<Exchange>> unsent) {
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (it->get() != s) continue;
    client_.free_later(std::move(*it));
    sessions_.erase(it);
    break;
  }
  // They were sent before anything queued now: they go first.
  for (auto it = unsent.rbegin(); it != unsent.rend(); ++it) queue_.push_front(std::move(*it));
  dispatch();
}

bool Origin::close_idle_h2(uint64_t now) {
  std::vector<h2::Session*> old;
  for (auto& s : sessions_) {
    if (s->streams() == 0 && now - s->idle_since_ms() > client_.options().max_idle_ms) {
      old.push_back(s.get());
    }
  }
  for (h2::Session* s : old) s->close("");
  return sessions_.empty();
}

}  // namespace corral::worker::lean
