#include "tests/support/h2_script_server.h"

#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "shared/uv/timer.h"
#include "tests/support/h2_answer.h"

namespace corral::test {
namespace {

// One request stream: the request as it comes, then its script and the answer it makes.
struct Stream {
  Stream(int32_t stream_id, uv_loop_t* loop) : id(stream_id), timer(loop) {}
  int32_t id;
  RawRequest req;
  std::string method, authority;
  std::string head;       // the request's header lines, "name: value\r\n"
  bool answered = false;  // the request came whole and got its script
  size_t index = 0;       // in the server's requests()
  Script script;
  size_t step = 0;
  uv::Timer timer;
  bool closed = false;  // nghttp2 closed the stream; kept until its script ends
  std::unique_ptr<H2Answer> answer;  // once answered

  bool pending() const { return answer != nullptr && !closed && answer->pending(); }
};

class H2Script final : public RawProtocol {
 public:
  H2Script(RawHttpServer& server, RawWire& wire, const H2ServerOptions& options);
  ~H2Script() override { nghttp2_session_del(h2_); }
  void on_bytes(const char* data, size_t n) override;
  void on_closed() override {
    dead_ = true;
    streams_.clear();  // their timers stop
  }

 private:
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                       void* user);
  static int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t n,
                     void* user);
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_stream_close(nghttp2_session*, int32_t id, uint32_t, void* user);

  std::shared_ptr<Stream> find(int32_t id) const {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }
  void request_done(Stream& s);
  void play(int32_t id);
  void go_away(int32_t last, int32_t fin_after);
  bool flush(std::function<void()> written);
  void maybe_fin();

  RawHttpServer& server_;
  RawWire& wire_;
  H2ServerOptions opts_;
  nghttp2_session* h2_ = nullptr;
  std::map<int32_t, std::shared_ptr<Stream>> streams_;
  std::vector<int32_t> ready_;  // requests that came whole inside nghttp2_session_mem_recv
  int32_t goaway_last_ = -1;    // a GOAWAY went with this last-stream-id
  int32_t fin_after_ = 0;       // FIN once this stream's answer is out
  bool fin_when_idle_ = false;  // FIN once the streams up to goaway_last_ are answered
  bool dead_ = false;
};

H2Script::H2Script(RawHttpServer& server, RawWire& wire, const H2ServerOptions& options)
    : server_(server), wire_(wire), opts_(options) {
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &on_data);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &on_frame);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &on_stream_close);
  nghttp2_option* opt = nullptr;
  nghttp2_option_new(&opt);
  // nghttp2 refuses to send a header block over 64 KiB; tests send larger ones on purpose.
  nghttp2_option_set_max_send_header_block_length(opt, 16u << 20);
  nghttp2_session_server_new2(&h2_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, opts_.max_concurrent_streams},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<uint32_t>(opts_.window)}};
  nghttp2_submit_settings(h2_, NGHTTP2_FLAG_NONE, iv, 2);
  if (opts_.window > NGHTTP2_INITIAL_CONNECTION_WINDOW_SIZE) {
    nghttp2_session_set_local_window_size(h2_, NGHTTP2_FLAG_NONE, 0, opts_.window);
  }
}

void H2Script::on_bytes(const char* data, size_t n) {
  if (dead_) return;
  ssize_t rv = nghttp2_session_mem_recv(h2_, reinterpret_cast<const uint8_t*>(data), n);
  if (rv < 0) {  // not HTTP/2: nghttp2 queued a GOAWAY, if anything
    flush(nullptr);
    return wire_.shut_down();
  }
  // Scripts play outside nghttp2's callbacks, where they may send.
  std::vector<int32_t> ready = std::move(ready_);
  ready_.clear();
  for (int32_t id : ready) play(id);
  flush(nullptr);
}

// --- requests in ------------------------------------------------------------------------------

int H2Script::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<H2Script*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  int32_t id = frame->hd.stream_id;
  self->streams_[id] = std::make_shared<Stream>(id, self->wire_.loop());
  self->server_.streams_open(std::count_if(self->streams_.begin(), self->streams_.end(),
                                           [](const auto& s) { return !s.second->closed; }));
  return 0;
}

int H2Script::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                        size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                        void* user) {
  auto s = static_cast<H2Script*>(user)->find(frame->hd.stream_id);
  if (s == nullptr || s->answered) return 0;  // the request's trailers are not kept
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":method") {
    s->method = v;
  } else if (n == ":path") {
    s->req.target = v;
  } else if (n == ":authority") {
    s->authority = v;
  } else if (n.empty() || n[0] != ':') {
    s->head.append(n).append(": ").append(v).append("\r\n");
  }
  return 0;
}

int H2Script::on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t n,
                      void* user) {
  if (auto s = static_cast<H2Script*>(user)->find(id)) {
    s->req.body.append(reinterpret_cast<const char*>(data), n);
  }
  return 0;
}

int H2Script::on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<H2Script*>(user);
  auto s = self->find(frame->hd.stream_id);
  if (s == nullptr) return 0;
  bool ends = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && ends &&
      !s->answered) {
    self->request_done(*s);
  } else if (frame->hd.type == NGHTTP2_RST_STREAM && s->answered) {
    self->server_.request(s->index).client_reset = frame->rst_stream.error_code;
  }
  return 0;
}

int H2Script::on_stream_close(nghttp2_session*, int32_t id, uint32_t, void* user) {
  auto* self = static_cast<H2Script*>(user);
  auto s = self->find(id);
  if (s == nullptr) return 0;
  s->closed = true;
  // What follows the answer in the script (a wait, a close) is the connection's: it plays on.
  if (!s->answered || s->step == s->script.size()) self->streams_.erase(id);
  return 0;
}

void H2Script::request_done(Stream& s) {
  if (goaway_last_ >= 0 && s.id > goaway_last_) return;  // not processed: the client retries
  RawRequest& req = s.req;
  req.connection = wire_.index();
  req.on_connection = wire_.count_request();
  req.peer = wire_.peer();
  req.method = s.method;
  req.stream = s.id;
  req.bytes = s.method + " " + req.target + " HTTP/1.1\r\nhost: " + s.authority + "\r\n" +
              s.head + "\r\n" + req.body;
  s.answer = std::make_unique<H2Answer>(h2_, s.id, s.method == "HEAD");
  s.script = server_.answer(std::move(req));
  s.index = server_.requests().size() - 1;
  s.answered = true;
  if (server_.requests().size() == opts_.goaway_after) {
    go_away(opts_.goaway_last_stream, 0);
    fin_when_idle_ = true;
  }
  ready_.push_back(s.id);
}

// --- scripts out ------------------------------------------------------------------------------

// Runs stream `id`'s script from its next step; each step that waits calls back here. Steps of
// the stream (sends, reset_stream) do nothing once it is closed; the others still play.
void H2Script::play(int32_t id) {
  std::shared_ptr<Stream> s = find(id);  // kept while a step closes it
  while (s != nullptr && !dead_ && s->step < s->script.size()) {
    Step& step = s->script[s->step++];
    switch (step.kind) {
      case Step::Kind::kSend:
        if (s->closed) break;
        s->answer->feed(step.bytes);
        if (s->answer->closes()) {  // an HTTP/1.1 server would close after this answer
          go_away(nghttp2_session_get_last_proc_stream_id(h2_), id);
        }
        if (flush([this, id] { play(id); })) return;
        break;  // nothing could go (a closed window): the next step comes at once
      case Step::Kind::kRaw:
        return wire_.write_raw(std::move(step.bytes), [this, id] { play(id); });
      case Step::Kind::kWait:
        return s->timer.start(step.ms, 0, [this, id] { play(id); });
      case Step::Kind::kClose:
        // The end of a body delimited by the close, then the connection's end.
        if (!s->closed) s->answer->end_of_input();
        if (s->answer->closes()) go_away(nghttp2_session_get_last_proc_stream_id(h2_), id);
        go_away(nghttp2_session_get_last_proc_stream_id(h2_), id);
        flush(nullptr);
        return;
      case Step::Kind::kReset:
        return wire_.reset();
      case Step::Kind::kResetStream:
        if (s->closed) break;
        nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, id, static_cast<uint32_t>(step.ms));
        flush(nullptr);
        break;
      case Step::Kind::kTrickle:
        std::abort();  // expanded into sends and waits
    }
  }
  if (s != nullptr && s->closed && s->step == s->script.size()) streams_.erase(id);
  if (!dead_) maybe_fin();  // a script that ends with its answer incomplete leaves it so
}

// --- the connection ---------------------------------------------------------------------------

void H2Script::go_away(int32_t last, int32_t fin_after) {
  if (goaway_last_ < 0) {
    goaway_last_ = last;
    nghttp2_submit_goaway(h2_, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, nullptr, 0);
  }
  if (fin_after_ == 0) fin_after_ = fin_after;
}

// Writes the frames nghttp2 has queued; `written` runs once they are in the kernel. False when
// there were none (and `written` never runs).
bool H2Script::flush(std::function<void()> written) {
  if (dead_) return false;
  std::string out;
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(h2_, &data);
    if (n < 0) {
      wire_.reset();
      return false;
    }
    if (n == 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  bool wrote = !out.empty();
  if (wrote) wire_.write(std::move(out), std::move(written));
  maybe_fin();
  return wrote;
}

// After a GOAWAY: FIN once what has to go first is out.
void H2Script::maybe_fin() {
  if (dead_ || wire_.closing() || goaway_last_ < 0) return;
  if (fin_after_ != 0) {
    std::shared_ptr<Stream> s = find(fin_after_);
    if (s != nullptr && s->pending()) return;
  } else if (fin_when_idle_) {
    for (const auto& [id, s] : streams_) {
      if (id > goaway_last_) break;
      if (!s->answered || s->step < s->script.size() || s->pending()) return;
    }
  } else {
    return;
  }
  wire_.shut_down();
}

}  // namespace

std::unique_ptr<RawHttpServer> h2_server(uv_loop_t* loop, RawHttpServer::ScriptFor script_for,
                                         H2ServerOptions options,
                                         std::optional<TlsServerOptions> tls) {
  if (tls) tls->alpn = "h2";
  auto protocol = [options](RawHttpServer& server, RawWire& wire) {
    return std::make_unique<H2Script>(server, wire, options);
  };
  return std::make_unique<RawHttpServer>(loop, std::move(script_for), protocol,
                                         tls ? &*tls : nullptr);
}

}  // namespace corral::test
