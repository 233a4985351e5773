#include "tests/support/h2_script_server.h"

#include <http_parser.h>
#include <nghttp2/nghttp2.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "shared/uv/timer.h"

namespace corral::test {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// HTTP/2 has no connection-specific header fields (RFC 9113, 8.2.2).
bool connection_specific(const std::string& name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

// Lower-cased names without the connection-specific ones, after `status` when it is set; the
// nghttp2_nv entries point into the returned strings.
Fields h2_fields(const Fields& fields, int status = 0) {
  Fields out;
  if (status != 0) out.emplace_back(":status", std::to_string(status));
  for (const auto& [name, value] : fields) {
    std::string n = lower(name);
    if (!connection_specific(n)) out.emplace_back(std::move(n), value);
  }
  return out;
}

std::vector<nghttp2_nv> nv_of(Fields& fields) {
  std::vector<nghttp2_nv> nva;
  for (auto& [n, v] : fields) {
    nva.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()),
                   n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nva;
}

class H2Script;

// One request stream: the request as it comes, then its script and the answer it makes.
struct Stream {
  Stream(H2Script& c, int32_t stream_id, uv_loop_t* loop) : conn(c), id(stream_id), timer(loop) {
    http_parser_init(&parser, HTTP_RESPONSE);
    parser.data = this;
  }
  H2Script& conn;
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
  // The answer, as http-parser reads the script's bytes.
  http_parser parser;
  Fields fields;  // of the head being read; after the final head, the trailers
  bool in_value = false;
  bool in_head = true;
  bool final_head = false;  // the final response's HEADERS are submitted
  std::string out;          // body bytes nghttp2 has not taken yet, from out_at
  size_t out_at = 0;
  bool body_done = false;  // the final message is complete
  bool deferred = false;   // the data provider waits for bytes
  bool sent = false;       // END_STREAM (or the trailers) handed to nghttp2
  bool bad = false;        // the script's bytes are not an HTTP/1.1 answer

  // Answer bytes nghttp2 still has to take.
  bool pending() const { return out.size() > out_at || (body_done && !sent); }
};

Stream& of(http_parser* p) { return *static_cast<Stream*>(p->data); }

class H2Script final : public RawProtocol {
 public:
  H2Script(RawHttpServer& server, RawWire& wire, const H2ServerOptions& options);
  ~H2Script() override { nghttp2_session_del(h2_); }
  void on_bytes(const char* data, size_t n) override;
  void on_closed() override {
    dead_ = true;
    streams_.clear();  // their timers stop
  }

  // From http-parser, reading a stream's script.
  int head_done(Stream& s);
  void body(Stream& s, const char* data, size_t n);
  void message_done(Stream& s);

 private:
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name,
                       size_t namelen, const uint8_t* value, size_t valuelen, uint8_t,
                       void* user);
  static int on_data(nghttp2_session*, uint8_t, int32_t id, const uint8_t* data, size_t n,
                     void* user);
  static int on_frame(nghttp2_session*, const nghttp2_frame* frame, void* user);
  static int on_stream_close(nghttp2_session*, int32_t id, uint32_t, void* user);
  static ssize_t read_body(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source*, void* user);

  std::shared_ptr<Stream> find(int32_t id) const {
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second;
  }
  void request_done(Stream& s);
  void play(int32_t id);
  void feed(Stream& s, std::string_view bytes);
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

const http_parser_settings kSettings = [] {
  http_parser_settings s{};
  s.on_message_begin = [](http_parser* p) {
    of(p).in_head = true;
    return 0;
  };
  s.on_header_field = [](http_parser* p, const char* at, size_t n) {
    Stream& st = of(p);
    if (st.fields.empty() || st.in_value) st.fields.emplace_back();
    st.in_value = false;
    st.fields.back().first.append(at, n);
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, size_t n) {
    Stream& st = of(p);
    st.in_value = true;
    st.fields.back().second.append(at, n);
    return 0;
  };
  s.on_headers_complete = [](http_parser* p) { return of(p).conn.head_done(of(p)); };
  s.on_body = [](http_parser* p, const char* at, size_t n) {
    of(p).conn.body(of(p), at, n);
    return 0;
  };
  s.on_message_complete = [](http_parser* p) {
    of(p).conn.message_done(of(p));
    return 0;
  };
  return s;
}();

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
  self->streams_[id] = std::make_shared<Stream>(*self, id, self->wire_.loop());
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
        feed(*s, step.bytes);
        if (flush([this, id] { play(id); })) return;
        break;  // nothing could go (a closed window): the next step comes at once
      case Step::Kind::kRaw:
        return wire_.write_raw(std::move(step.bytes), [this, id] { play(id); });
      case Step::Kind::kWait:
        return s->timer.start(step.ms, 0, [this, id] { play(id); });
      case Step::Kind::kClose:
        // The end of a body delimited by the close, then the connection's end.
        if (s->final_head && !s->body_done) http_parser_execute(&s->parser, &kSettings, "", 0);
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

// The script's bytes through http-parser, whose callbacks submit what they make.
void H2Script::feed(Stream& s, std::string_view bytes) {
  while (!bytes.empty() && !s.bad) {
    // http-parser caps a head at 80 KiB, a process-wide limit (http_parser_set_max_header_size)
    // that the client under test shares and must keep: the server restarts its count every
    // 16 KiB, so that a test can send a larger head.
    size_t slice = s.in_head ? std::min<size_t>(bytes.size(), 16 * 1024) : bytes.size();
    if (s.in_head) s.parser.nread = 0;
    size_t n = http_parser_execute(&s.parser, &kSettings, bytes.data(), slice);
    http_errno err = HTTP_PARSER_ERRNO(&s.parser);
    if (err == HPE_PAUSED) return;  // the final answer is complete: the rest is not read
    if (err != HPE_OK) {
      s.bad = true;
      nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_INTERNAL_ERROR);
      return;
    }
    bytes.remove_prefix(n);
  }
}

int H2Script::head_done(Stream& s) {
  s.in_head = false;
  int status = s.parser.status_code;
  Fields fields = h2_fields(s.fields, status);
  std::vector<nghttp2_nv> nva = nv_of(fields);
  s.fields.clear();
  s.in_value = false;
  if (status / 100 == 1) {  // informational: the final answer follows
    nghttp2_submit_headers(h2_, NGHTTP2_FLAG_NONE, s.id, nullptr, nva.data(), nva.size(),
                           nullptr);
    return 1;
  }
  s.final_head = true;
  if (s.method == "HEAD" || status == 204 || status == 304) {  // no body, whatever it says
    nghttp2_submit_response(h2_, s.id, nva.data(), nva.size(), nullptr);
    s.sent = true;
    return 1;
  }
  nghttp2_data_provider provider{};
  provider.read_callback = &read_body;
  nghttp2_submit_response(h2_, s.id, nva.data(), nva.size(), &provider);
  return 0;
}

void H2Script::body(Stream& s, const char* data, size_t n) {
  if (s.out_at > (1u << 20)) {  // what nghttp2 took is let go now and then
    s.out.erase(0, s.out_at);
    s.out_at = 0;
  }
  s.out.append(data, n);
  if (s.deferred) {
    s.deferred = false;
    nghttp2_session_resume_data(h2_, s.id);
  }
}

void H2Script::message_done(Stream& s) {
  if (!s.final_head) return;  // a 1xx
  s.body_done = true;
  http_parser_pause(&s.parser, 1);
  if (s.deferred) {
    s.deferred = false;
    nghttp2_session_resume_data(h2_, s.id);
  }
  // An HTTP/1.1 server would close the connection after this answer.
  if (!http_should_keep_alive(&s.parser)) {
    go_away(nghttp2_session_get_last_proc_stream_id(h2_), s.id);
  }
}

ssize_t H2Script::read_body(nghttp2_session*, int32_t id, uint8_t* buf, size_t length,
                            uint32_t* flags, nghttp2_data_source*, void* user) {
  auto* self = static_cast<H2Script*>(user);
  std::shared_ptr<Stream> s = self->find(id);
  if (s == nullptr) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t n = std::min(length, s->out.size() - s->out_at);
  std::memcpy(buf, s->out.data() + s->out_at, n);
  s->out_at += n;
  if (s->out_at == s->out.size()) {
    s->out.clear();
    s->out_at = 0;
  }
  if (n == 0 && !s->body_done) {
    s->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (s->body_done && s->out.empty()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    s->sent = true;
    if (!s->fields.empty()) {  // trailers end the stream instead
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      Fields trailers = h2_fields(s->fields);
      std::vector<nghttp2_nv> nva = nv_of(trailers);
      nghttp2_submit_trailer(self->h2_, id, nva.data(), nva.size());
    }
  }
  return static_cast<ssize_t>(n);
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
    if (s != nullptr && !s->closed && s->pending()) return;
  } else if (fin_when_idle_) {
    for (const auto& [id, s] : streams_) {
      if (id > goaway_last_) break;
      if (!s->answered || s->step < s->script.size() || (!s->closed && s->pending())) return;
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
