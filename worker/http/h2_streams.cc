// The streams of an HTTP/2 session (h2_session.h): nghttp2's callbacks as an answer comes in
// (headers, body, the stream's end), and how a stream ends or resumes.
#include <charconv>
#include <limits>

#include "config/config.h"
#include "worker/http/h2_session.h"
#include "worker/http/lean_client.h"
#include "worker/http/origin.h"

namespace corral::worker::h2 {
namespace {

using Kind = OriginErrorTable::Kind;
constexpr size_t kMaxHeaderBytes = 80 * 1024;

}  // namespace

void Session::Stream::fail_over_budget() {
  Session& owner = session;  // reset() frees this stream
  owner.reset(*this, NGHTTP2_CANCEL,
              "response bodies in flight exceed the worker's response memory budget (" +
                  config::format_bytes(owner.client_.budget().limit) + ")",
              kNoKind);
  owner.after_call();
}

// --- nghttp2 callbacks -----------------------------------------------------------------------

int Session::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  if (frame->hd.type != NGHTTP2_HEADERS) return 0;
  Stream* s = of(user)->stream(frame->hd.stream_id);
  if (s == nullptr || s->headers_done) return 0;  // trailers are not kept
  s->got_bytes = true;
  // The same cap on a response's head as HTTP/1.1's (http-parser's 80 KiB), counted as HPACK
  // counts a header's size.
  // The rest of the block still comes (HPACK must decode it), so no new stream goes on this
  // connection: the next request opens another, as over HTTP/1.1.
  s->header_bytes += namelen + valuelen + 32;
  if (s->header_bytes > kMaxHeaderBytes) {
    Session* self = of(user);
    self->goaway_ = true;
    self->reset(*s, NGHTTP2_CANCEL,
                "invalid HTTP response: too many header bytes seen; overflow detected", kNoKind);
    return 0;
  }
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
  // Refused (by RST_STREAM, or above a GOAWAY's last stream) before any of its answer came: the
  // server did not process it, and it may go again. A stream whose answer had begun was
  // processed, whatever the server says after.
  bool refused = (code == NGHTTP2_REFUSED_STREAM || goaway_) && !s.got_bytes;
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
    finish(s.id, false,
           "the server ended the HTTP/2 stream without an answer (" + origin_.key() + ")",
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

}  // namespace corral::worker::h2
