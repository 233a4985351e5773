#include "worker/http/h2_session.h"

#include <algorithm>
#include <cstring>

#include "config/config.h"
#include "config/scenario/response.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"
#include "worker/http/redirect.h"
#include "worker/http/wire.h"

namespace corral::worker::h2 {
namespace {

using Kind = OriginErrorTable::Kind;
// Windows this client opens: a stream may have 1 MiB in flight towards it, and the connection
// 16 MiB. Bytes are given back only once a body has taken them (see the header).
constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;
constexpr uint32_t kAssumedStreams = 100;  // until the server's SETTINGS say

}  // namespace

Session::Session(LeanClient& client, lean::Origin& origin, std::unique_ptr<Link> link)
    : client_(client), origin_(origin), link_(std::move(link)) {
  link_->set_owner(this);
  idle_since_ms_ = uv_now(client.loop());
}

Session::~Session() {
  if (flush_pending_) client_.flush_cancel(this);
  link_->close();
  for (auto& [id, s] : streams_) {
    if (s->paused) client_.unpaused(s.get());
    if (s->ex) client_.on_wire(-1);
  }
  if (h2_ != nullptr) nghttp2_session_del(h2_);
}

bool Session::start() {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_header_callback(cb, &Session::on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &Session::on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &Session::on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &Session::on_stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, 1);
  // Until the server's SETTINGS come, as many streams as its other connections were allowed:
  // a stream sent past the limit is refused, and one refused twice fails.
  nghttp2_option_set_peer_max_concurrent_streams(opt, origin_.h2_streams_hint());
  int rv = nghttp2_session_client_new2(&h2_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv == 0) {
    const int32_t window =
        client_.options().h2_stream_window > 0 ? client_.options().h2_stream_window : kStreamWindow;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(window)}};
    rv = nghttp2_submit_settings(h2_, NGHTTP2_FLAG_NONE, iv, 2);
    if (rv == 0) {
      rv = nghttp2_session_set_local_window_size(h2_, NGHTTP2_FLAG_NONE, 0,
                                                 std::max(kConnectionWindow, window));
    }
  }
  if (rv != 0) {
    close(std::string("cannot start an HTTP/2 session: ") + nghttp2_strerror(rv));
    return false;
  }
  want_flush();
  return !closed_;
}

uint32_t Session::max_streams() const {
  return h2_ == nullptr
             ? kAssumedStreams
             : nghttp2_session_get_remote_settings(h2_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

bool Session::can_take() const {
  return !closed_ && !goaway_ && h2_ != nullptr && streams_.size() < max_streams() &&
         nghttp2_session_check_request_allowed(h2_) != 0;
}

void Session::begin(std::unique_ptr<Exchange> ex) {
  ex->started_ns = uv_hrtime();
  if (completed_ == 0 && streams_.empty() && link_->tls()) {  // it waited for the handshake
    ex->resp.tls_ms += link_->handshake_ms();
    ex->resp.total_ms += link_->handshake_ms();
    ex->resp.tls_resumed = link_->resumed();
  }
  lean::HeaderList headers;
  lean::h2_request_headers(*ex, origin_.host_header(), headers);
  std::vector<nghttp2_nv> nva;
  nva.reserve(headers.size());
  for (auto& [name, value] : headers) {
    nva.push_back({reinterpret_cast<uint8_t*>(name.data()),
                   reinterpret_cast<uint8_t*>(value.data()), name.size(), value.size(),
                   NGHTTP2_NV_FLAG_NONE});
  }
  auto s = std::make_unique<Stream>(*this);
  nghttp2_data_provider body{};
  body.source.ptr = s.get();
  body.read_callback = &Session::read_body;
  bool with_body = !ex->req.body.empty();
  int32_t id = nghttp2_submit_request(h2_, nullptr, nva.data(), nva.size(),
                                      with_body ? &body : nullptr, nullptr);
  if (id < 0) {
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) goaway_ = true;  // ids used up: another
    ex->resp.status = 0;
    ex->resp.error = std::string("cannot send the request over HTTP/2: ") + nghttp2_strerror(id);
    client_.exchange_failed(std::move(ex));
    return;
  }
  s->id = id;
  s->ex = std::move(ex);
  link_->arm(s->ex->deadline_ms);
  client_.on_wire(+1);
  streams_.emplace(id, std::move(s));
  want_flush();
}

ssize_t Session::read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                           nghttp2_data_source* source, void*) {
  auto* s = static_cast<Stream*>(source->ptr);
  const std::string& body = s->ex->req.body;
  size_t n = std::min(length, body.size() - s->body_sent);
  std::memcpy(buf, body.data() + s->body_sent, n);
  s->body_sent += n;
  if (s->body_sent == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

Session::Stream* Session::stream(int32_t id) {
  auto it = streams_.find(id);
  return it == streams_.end() || !it->second->ex ? nullptr : it->second.get();
}

// --- bytes in, frames out -------------------------------------------------------------------

void Session::on_link_data(Link&, const char* data, size_t n) {
  if (closed_) return;
  ++depth_;
  ssize_t rv = nghttp2_session_mem_recv(h2_, reinterpret_cast<const uint8_t*>(data), n);
  --depth_;
  if (rv < 0) {
    close(std::string("HTTP/2 protocol error: ") + nghttp2_strerror(static_cast<int>(rv)) + " (" +
          origin_.key() + ")");
    return;
  }
  after_call();
}

// What follows a call into nghttp2: the frames it queued go out, the exchanges that ended are
// handed on, and a session the server is done with closes.
void Session::after_call() {
  if (closed_ || depth_ > 0) return;
  want_flush();
  deliver();
}

// Frames go out once the loop's turn is done with its callbacks (LeanClient::flush_soon): the
// requests and window updates of one turn share a write, instead of a system call each.
void Session::want_flush() {
  if (flush_pending_ || closed_) return;
  flush_pending_ = true;
  client_.flush_soon(this);
}

void Session::flush_now() {
  flush_pending_ = false;
  flush();
  if (!closed_ && nghttp2_session_want_read(h2_) == 0 && nghttp2_session_want_write(h2_) == 0) {
    close("the server closed the HTTP/2 session (" + origin_.key() + ")");
  }
}

void Session::flush() {
  if (closed_ || depth_ > 0) return;
  out_.clear();
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(h2_, &data);
    if (n < 0) {
      close(std::string("HTTP/2 error: ") + nghttp2_strerror(static_cast<int>(n)));
      return;
    }
    if (n == 0) break;
    out_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  if (out_.empty()) return;
  uv_buf_t buf = uv_buf_init(out_.data(), static_cast<unsigned>(out_.size()));
  int rc = link_->send(&buf, 1);
  if (out_.capacity() > 64 * 1024) std::string().swap(out_);  // an upload's buffer is not kept
  if (rc != 0) {
    close("cannot send to the server: " +
          std::string(rc == UV_EPROTO ? link_->tls_error() : uv_strerror(rc)));
  }
}

void Session::deliver() {
  std::vector<Ended> ended = std::move(ended_);
  ended_.clear();
  std::vector<std::unique_ptr<Exchange>> again = std::move(unsent_);
  unsent_.clear();
  for (auto& e : ended) {
    if (e.ok) {
      client_.exchange_done(std::move(e.ex));
    } else {
      client_.exchange_failed(std::move(e.ex));
    }
  }
  for (auto& ex : again) origin_.submit(std::move(ex));
  if (!closed_ && can_take()) origin_.on_room(this);
  if (!closed_ && goaway_ && streams_.empty()) close("");
}

bool Session::cancel(uint64_t tag) {
  for (auto& [id, s] : streams_) {
    if (!s->ex || s->ex->req.tag != tag) continue;
    reset(*s, NGHTTP2_CANCEL, "request cancelled", kNoKind);
    after_call();
    return true;
  }
  return false;
}

void Session::on_link_timer(Link&) {
  uint64_t now = uv_now(client_.loop());
  std::vector<int32_t> late;
  uint64_t next = 0;
  for (auto& [id, s] : streams_) {
    if (!s->ex) continue;
    if (s->ex->deadline_ms <= now) {
      late.push_back(id);
    } else if (next == 0 || s->ex->deadline_ms < next) {
      next = s->ex->deadline_ms;
    }
  }
  for (int32_t id : late) {
    if (Stream* s = stream(id)) {
      reset(*s, NGHTTP2_CANCEL, "Timeout was reached", static_cast<int>(Kind::kTimeout));
    }
  }
  if (next != 0) link_->arm(next);
  after_call();
}

void Session::on_link_down(Link&, int status, const std::string& error) {
  std::string why;
  if (!error.empty()) {
    why = error + " (" + origin_.key() + ")";
  } else if (status == UV_EOF) {
    why = "connection closed by the server before the response ended";
  } else {
    why = std::string("connection failed during the response: ") + uv_strerror(status);
  }
  close(why);
}

void Session::on_link_write_failed(Link&, int status) {
  close(std::string("cannot send to the server: ") + uv_strerror(status));
}

// Streams that got nothing back and may be sent again (idempotent, not sent twice already, on
// a session that had served others: it may have gone stale) are; the rest fail with `error`.
void Session::close(const std::string& error) {
  if (closed_) return;
  closed_ = true;
  if (flush_pending_) client_.flush_cancel(this);
  flush_pending_ = false;
  link_->close();
  std::vector<int32_t> ids;
  for (auto& [id, s] : streams_) ids.push_back(id);
  for (int32_t id : ids) {
    Stream* s = stream(id);
    if (s == nullptr) continue;
    if (!s->got_bytes && !s->ex->retried && completed_ > 0 && is_idempotent(s->ex->req.method)) {
      client_.errors().count(origin_.key(), Kind::kRetried);
      std::unique_ptr<Exchange> ex = std::move(s->ex);
      ex->retried = true;
      if (s->paused) client_.unpaused(s);
      client_.on_wire(-1);
      unsent_.push_back(std::move(ex));
      continue;
    }
    finish(id, false, error.empty() ? "the HTTP/2 session ended" : error,
           static_cast<int>(Kind::kReset));
  }
  streams_.clear();
  std::vector<Ended> ended = std::move(ended_);
  ended_.clear();
  for (auto& e : ended) {
    if (e.ok) {
      client_.exchange_done(std::move(e.ex));
    } else {
      client_.exchange_failed(std::move(e.ex));
    }
  }
  std::vector<std::unique_ptr<Exchange>> again = std::move(unsent_);
  unsent_.clear();
  origin_.on_closed(this, std::move(again));  // frees this object later
}

}  // namespace corral::worker::h2
