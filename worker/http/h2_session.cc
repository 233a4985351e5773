#include "worker/http/h2_session.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <deque>
#include <limits>

#include "config/config.h"
#include "config/scenario/response.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"
#include "worker/http/redirect.h"
#include "worker/http/wire.h"

namespace corral::worker::h2 {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr int kNoKind = -1;
// Windows this client opens: a stream may have 1 MiB in flight towards it, and the connection
// 16 MiB. Bytes are given back only once a body has taken them (see the header).
constexpr int32_t kStreamWindow = 1 << 20;
constexpr int32_t kConnectionWindow = 16 << 20;
constexpr uint32_t kAssumedStreams = 100;  // until the server's SETTINGS say

Session* of(void* user) { return static_cast<Session*>(user); }

}  // namespace

struct Session::Stream final : lean::Paused {
  Session& session;
  int32_t id = 0;
  std::unique_ptr<Exchange> ex;
  size_t body_sent = 0;       // of the request's body, by read_body
  bool got_bytes = false;     // a frame of the answer came
  bool interim = false;       // the headers in progress are a 1xx
  bool headers_done = false;  // the final headers came
  bool paused = false;        // by the BodyBudget
  bool ended = false;         // the server ended the stream while it was paused
  uint64_t need = 0;          // a content-length to reserve before the body is taken
  std::string wait;           // a decoded piece the budget has no room for yet
  size_t wait_raw = 0;        // the DATA bytes it came from
  std::deque<std::string> raw;  // DATA that came while paused
  uint64_t raw_bytes = 0;

  explicit Stream(Session& s) : session(s) {}
  bool try_resume() override { return session.resume(*this); }
  uint64_t held_body() const override { return ex ? ex->resp.body.size() : 0; }
  uint64_t waiting_bytes() const override { return need + wait.size() + raw_bytes; }
  void fail_over_budget() override {
    Session& owner = session;  // reset() frees this stream
    owner.reset(*this, NGHTTP2_CANCEL,
                "response bodies in flight exceed the worker's response memory budget (" +
                    config::format_bytes(owner.client_.budget().limit) + ")",
                kNoKind);
    owner.after_call();
  }
};

Session::Session(LeanClient& client, lean::Origin& origin, std::unique_ptr<Link> link)
    : client_(client), origin_(origin), link_(std::move(link)) {
  link_->set_owner(this);
  idle_since_ms_ = uv_now(client.loop());
}

Session::~Session() {
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
    const int32_t window = client_.options().h2_stream_window > 0
                               ? client_.options().h2_stream_window
                               : kStreamWindow;
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                   {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE,
                                    static_cast<uint32_t>(window)}};
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
  flush();
  return !closed_;
}

uint32_t Session::max_streams() const {
  return h2_ == nullptr ? kAssumedStreams
                        : nghttp2_session_get_remote_settings(
                              h2_, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
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
    nva.push_back({reinterpret_cast<uint8_t*>(name.data()), reinterpret_cast<uint8_t*>(value.data()),
                   name.size(), value.size(), NGHTTP2_NV_FLAG_NONE});
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
  flush();
}

ssize_t Session::read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source* source, void*) {
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
    close(std::string("HTTP/2 protocol error: ") + nghttp2_strerror(static_cast<int>(rv)) +
          " (" + origin_.key() + ")");
    return;
  }
  after_call();
}

// What follows a call into nghttp2: the frames it queued go out, the exchanges that ended are
// handed on, and a session the server is done with closes.
void Session::after_call() {
  if (closed_ || depth_ > 0) return;
  flush();
  deliver();
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

// --- nghttp2 callbacks -----------------------------------------------------------------------

int Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                       void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Stream* s = of(user)->stream(frame->hd.stream_id);
  if (s == nullptr || s->headers_done) return 0;  // trailers are not kept
  s->got_bytes = true;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  HttpResponse& resp = s->ex->resp;
  if (n == ":status") {
    int status = 0;
    std::from_chars(v.data(), v.data() + v.size(), status);
    resp.status = status;
    resp.headers.clear();
    s->interim = status / 100 == 1;
    return 0;
  }
  if (!n.empty() && n[0] == ':') return 0;
  resp.headers.emplace_back(std::string(n), std::string(v));
  return 0;
}

int Session::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  Session* self = of(user);
  switch (frame->hd.type) {
    case NGHTTP2_HEADERS: {
      Stream* s = self->stream(frame->hd.stream_id);
      if (s == nullptr || s->headers_done) return 0;
      if (s->interim) {  // a 1xx: the real answer follows
        s->interim = false;
        s->ex->resp.headers.clear();
        return 0;
      }
      self->headers_done(*s);
      return 0;
    }
    case NGHTTP2_GOAWAY:
      self->goaway_ = true;
      return 0;
    default:
      return 0;
  }
}

void Session::headers_done(Stream& s) {
  s.headers_done = true;
  Exchange& ex = *s.ex;
  HttpResponse& resp = ex.resp;
  uint64_t length = std::numeric_limits<uint64_t>::max();
  for (const auto& [name, value] : resp.headers) {
    if (!ex.inflate && name == "content-encoding") ex.inflate = Inflater::for_encoding(value);
    if (name == "content-length") {
      uint64_t n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc() && end == value.data() + value.size()) length = n;
    }
  }
  bool bodiless = ex.req.method == "HEAD" || resp.status == 204 || resp.status == 304;
  if (bodiless || length == std::numeric_limits<uint64_t>::max() || length == 0 || ex.inflate) {
    return;
  }
  if (length > ex.max_body) {
    ex.too_large = true;
    reset(s, NGHTTP2_CANCEL, lean::too_large_error(ex), kNoKind);
    return;
  }
  if (!lean::reserve_body(client_, ex, length)) {  // without room, the body is not taken yet
    s.need = length;
    s.paused = true;
    client_.paused(&s);
  }
}

int Session::on_data_chunk(nghttp2_session* h2, uint8_t, int32_t id, const uint8_t* data,
                           size_t len, void* user) {
  Session* self = of(user);
  Stream* s = self->stream(id);
  if (s == nullptr) {  // a stream that ended here already: its bytes free the window
    nghttp2_session_consume_connection(h2, len);
    return 0;
  }
  self->data(*s, data, len);
  return 0;
}

void Session::data(Stream& s, const uint8_t* data, size_t len) {
  s.got_bytes = true;
  const char* p = reinterpret_cast<const char*>(data);
  if (s.paused) {
    s.raw.emplace_back(p, len);
    s.raw_bytes += len;
    return;
  }
  switch (lean::take_body(client_, *s.ex, p, len, s.wait)) {
    case lean::Take::kTaken:
      nghttp2_session_consume(h2_, s.id, len);
      return;
    case lean::Take::kWait:
      s.wait_raw = len;
      s.paused = true;
      client_.paused(&s);
      return;
    case lean::Take::kTooLarge:
      reset(s, NGHTTP2_CANCEL, lean::too_large_error(*s.ex), kNoKind);
      return;
    case lean::Take::kBad:
      reset(s, NGHTTP2_CANCEL, s.ex->bad_body, kNoKind);
      return;
  }
}

int Session::on_stream_close(nghttp2_session*, int32_t id, uint32_t error_code, void* user) {
  Session* self = of(user);
  if (Stream* s = self->stream(id)) {
    self->stream_closed(*s, error_code);
  } else {
    self->streams_.erase(id);
  }
  return 0;
}

void Session::stream_closed(Stream& s, uint32_t code) {
  if (code == NGHTTP2_NO_ERROR && s.headers_done) {
    if (s.paused) {
      s.ended = true;  // the body waits for the budget; it ends when taken
      return;
    }
    finish(s.id, true);
    return;
  }
  bool refused = code == NGHTTP2_REFUSED_STREAM || (goaway_ && !s.got_bytes);
  if (refused && !s.ex->retried) {
    client_.errors().count(origin_.key(), Kind::kRetried);
    std::unique_ptr<Exchange> ex = std::move(s.ex);
    ex->retried = true;
    ex->resp = HttpResponse{};
    if (s.paused) client_.unpaused(&s);
    client_.on_wire(-1);
    streams_.erase(s.id);
    unsent_.push_back(std::move(ex));
    return;
  }
  if (code == NGHTTP2_NO_ERROR) {
    finish(s.id, false, "the server ended the HTTP/2 stream without an answer (" +
                            origin_.key() + ")",
           static_cast<int>(Kind::kReset));
    return;
  }
  finish(s.id, false,
         std::string("stream reset by the server: ") + nghttp2_http2_strerror(code) + " (" +
             std::to_string(code) + ", " + origin_.key() + ")",
         static_cast<int>(Kind::kReset));
}

// --- ending streams ---------------------------------------------------------------------------

void Session::reset(Stream& s, uint32_t code, const std::string& error, int kind) {
  nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, s.id, code);
  // Bytes held back from the windows are of no use now: the connection's window gets them.
  size_t held = s.raw_bytes + s.wait_raw;
  if (held > 0) nghttp2_session_consume_connection(h2_, held);
  finish(s.id, false, error, kind);
}

// Takes the exchange of stream `id` off the session; it is handed on by deliver().
void Session::finish(int32_t id, bool ok, const std::string& error, int kind) {
  auto it = streams_.find(id);
  if (it == streams_.end() || !it->second->ex) return;
  Stream& s = *it->second;
  std::unique_ptr<Exchange> ex = std::move(s.ex);
  if (s.paused) client_.unpaused(&s);
  client_.on_wire(-1);
  streams_.erase(it);  // nghttp2 holds no pointer to it
  if (ok) {
    ex->resp.protocol = "HTTP/2";
    ex->resp.total_ms += static_cast<double>(uv_hrtime() - ex->started_ns) / 1e6;
    ++completed_;
  } else {
    if (kind != kNoKind) client_.errors().count(origin_.key(), static_cast<Kind>(kind));
    ex->resp.status = 0;
    ex->resp.error = error;
    ex->resp.timed_out = kind == static_cast<int>(Kind::kTimeout);
  }
  if (streams_.empty()) idle_since_ms_ = uv_now(client_.loop());
  ended_.push_back(Ended{std::move(ex), ok});
}

bool Session::resume(Stream& s) {
  if (s.need > 0) {
    if (!client_.budget().fits(s.need)) return false;
    lean::reserve_body(client_, *s.ex, s.need);
    s.need = 0;
  }
  if (!s.wait.empty()) {
    if (!client_.budget().fits(s.wait.size())) return false;
    lean::append_body(client_, *s.ex, s.wait.data(), s.wait.size());
    std::string().swap(s.wait);
  }
  if (s.wait_raw > 0) nghttp2_session_consume(h2_, s.id, s.wait_raw);
  s.wait_raw = 0;
  s.paused = false;
  const int32_t id = s.id;
  while (!s.raw.empty() && !s.paused) {
    std::string piece = std::move(s.raw.front());
    s.raw.pop_front();
    s.raw_bytes -= piece.size();
    data(s, reinterpret_cast<const uint8_t*>(piece.data()), piece.size());
    if (stream(id) == nullptr) {  // the piece failed it (max_response, a bad encoding): gone
      after_call();
      return true;
    }
  }
  if (!s.paused && s.ended) finish(id, true);
  after_call();
  return true;
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
