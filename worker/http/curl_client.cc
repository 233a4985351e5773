#include "worker/http/curl_client.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>

#include "shared/uv/handle.h"

namespace corral::worker {

struct CurlClient::Transfer {
  CurlClient* client;
  CURL* easy;
  curl_slist* headers = nullptr;
  HttpRequest req;
  HttpResponse resp;
  Done done;
  bool too_large = false;
};

// One socket curl asked us to watch. Its uv_poll_t memory is freed by the close callback.
struct CurlClient::SocketWatch {
  CurlClient* client;
  curl_socket_t fd;
  uv::Handle<uv_poll_t> poll;
};

namespace {

size_t on_body(char* data, size_t size, size_t n, void* userp) {
  auto* t = static_cast<CurlClient::Transfer*>(userp);
  size_t bytes = size * n;
  if (t->resp.body.size() + bytes > t->client->max_body_bytes()) {
    t->too_large = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  t->resp.body.append(data, bytes);
  return bytes;
}

size_t on_header(char* data, size_t size, size_t n, void* userp) {
  auto* t = static_cast<CurlClient::Transfer*>(userp);
  size_t bytes = size * n;
  std::string_view line(data, bytes);
  if (line.rfind("HTTP/", 0) == 0) {
    t->resp.headers.clear();  // a new response (after 100 Continue or a redirect)
    return bytes;
  }
  size_t colon = line.find(':');
  if (colon == std::string_view::npos) return bytes;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == '\r' || s.back() == '\n' || s.back() == ' ')) {
      s.remove_suffix(1);
    }
    return s;
  };
  t->resp.headers.emplace_back(std::string(line.substr(0, colon)),
                               std::string(trim(line.substr(colon + 1))));
  return bytes;
}

}  // namespace

CurlClient::CurlClient(uv_loop_t* loop, CurlOptions opts)
    : loop_(loop), opts_(opts), multi_(curl_multi_init()), timer_(loop), failed_timer_(loop) {
  static const bool global = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!global || multi_ == nullptr) std::abort();
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlClient::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlClient::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, opts_.max_host_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, opts_.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, opts_.connection_cache);
}

CurlClient::~CurlClient() {
  timer_.close();
  failed_timer_.close();
  // Removing an easy handle makes curl report its sockets as removed: the watches close.
  for (Transfer* t : live_) {
    curl_multi_remove_handle(multi_, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    delete t;
  }
  for (CURL* e : idle_easy_) curl_easy_cleanup(e);
  curl_multi_cleanup(multi_);
}

CURL* CurlClient::take_easy() {
  if (idle_easy_.empty()) return curl_easy_init();
  CURL* e = idle_easy_.back();
  idle_easy_.pop_back();
  curl_easy_reset(e);
  return e;
}

void CurlClient::send(HttpRequest req, Done done) {
  if (in_curl_ < opts_.max_in_flight) {
    ++in_flight_;
    begin(new Transfer{this, nullptr, nullptr, std::move(req), {}, std::move(done)});
    return;
  }
  send_lazy([r = std::move(req)]() mutable { return std::optional<HttpRequest>(std::move(r)); },
            std::move(done));
}

void CurlClient::send_lazy(Make make, Done done) {
  ++in_flight_;
  if (in_curl_ >= opts_.max_in_flight) {
    waiting_.push_back(Waiting{std::move(make), std::move(done)});
    return;
  }
  start_made(std::move(make), std::move(done));
}

void CurlClient::start_made(Make make, Done done) {
  std::optional<HttpRequest> req = make();
  if (!req) {
    --in_flight_;
    return;
  }
  begin(new Transfer{this, nullptr, nullptr, std::move(*req), {}, std::move(done)});
}

void CurlClient::begin(Transfer* t) {
  t->easy = take_easy();
  CURL* e = t->easy;
  curl_easy_setopt(e, CURLOPT_URL, t->req.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(t->req.timeout_ms));
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
  if (t->req.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (t->req.method != "GET" || !t->req.body.empty()) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, t->req.method.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->req.body.data());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->req.body.size()));
  }
  for (const auto& h : t->req.headers) t->headers = curl_slist_append(t->headers, h.c_str());
  // curl adds "Expect: 100-continue" to large bodies, which costs a round trip: turn it off.
  t->headers = curl_slist_append(t->headers, "Expect:");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
  ++in_curl_;
  live_.insert(t);
  CURLMcode rc = curl_multi_add_handle(multi_, e);
  if (rc != CURLM_OK) {
    // Reported through a timer, so that `done` never runs inside send().
    t->resp.error = std::string("curl_multi_add_handle() failed: ") + curl_multi_strerror(rc);
    failed_.push_back(t);
    failed_timer_.start(0, 0, [this] {
      std::vector<Transfer*> failed = std::move(failed_);
      failed_.clear();
      for (Transfer* f : failed) {
        idle_easy_.push_back(f->easy);
        finish(f);
      }
    });
  }
}

void CurlClient::finish(Transfer* t) {
  live_.erase(t);
  curl_slist_free_all(t->headers);
  --in_flight_;
  --in_curl_;
  ++completed_;
  Done done = std::move(t->done);
  HttpResponse resp = std::move(t->resp);
  delete t;
  while (in_curl_ < opts_.max_in_flight && !waiting_.empty()) {
    Waiting next = std::move(waiting_.front());
    waiting_.pop_front();
    start_made(std::move(next.make), std::move(next.done));
  }
  done(std::move(resp));
}

int CurlClient::on_timer(CURLM*, long timeout_ms, void* userp) {
  auto* self = static_cast<CurlClient*>(userp);
  if (timeout_ms < 0) {
    self->timer_.stop();
  } else {
    // Even a 0 ms timeout goes through the loop: curl must not be re-entered from here.
    self->timer_.start(static_cast<uint64_t>(timeout_ms), 0,
                       [self] { self->socket_action(CURL_SOCKET_TIMEOUT, 0); });
  }
  return 0;
}

int CurlClient::on_socket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) {
  auto* self = static_cast<CurlClient*>(userp);
  auto* watch = static_cast<SocketWatch*>(socketp);
  if (what == CURL_POLL_REMOVE) {
    if (watch != nullptr) {
      uv_poll_stop(watch->poll.get());
      curl_multi_assign(self->multi_, s, nullptr);
      delete watch;  // closes the poll handle; libuv frees it after the close callback
    }
    return 0;
  }
  if (watch == nullptr) {
    watch = new SocketWatch{self, s, {}};
    if (uv_poll_init_socket(self->loop_, watch->poll.get(), s) != 0) {
      spdlog::error("uv_poll_init_socket({}) failed", s);
      delete watch;
      return -1;
    }
    watch->poll.set_live(watch);
    curl_multi_assign(self->multi_, s, watch);
  }
  int events = 0;
  if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) events |= UV_READABLE;
  if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) events |= UV_WRITABLE;
  uv_poll_start(watch->poll.get(), events, &CurlClient::on_poll);
  return 0;
}

void CurlClient::on_poll(uv_poll_t* handle, int status, int events) {
  auto* watch = uv::owner_of<SocketWatch>(handle);
  if (watch == nullptr) return;
  int flags = 0;
  if (status < 0) flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  watch->client->socket_action(watch->fd, flags);
}

void CurlClient::socket_action(curl_socket_t s, int flags) {
  int running = 0;
  curl_multi_socket_action(multi_, s, flags, &running);
  collect_done();
}

void CurlClient::collect_done() {
  int pending = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &pending)) {
    if (msg->msg != CURLMSG_DONE) continue;
    CURL* e = msg->easy_handle;
    CURLcode result = msg->data.result;
    Transfer* t = nullptr;
    curl_easy_getinfo(e, CURLINFO_PRIVATE, &t);
    long status = 0;
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    double total = 0;
    curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &total);
    curl_multi_remove_handle(multi_, e);
    idle_easy_.push_back(e);
    t->resp.total_ms = total * 1000.0;
    if (result != CURLE_OK) {
      t->resp.status = 0;
      t->resp.error = t->too_large ? "response body larger than " +
                                         std::to_string(opts_.max_body_bytes) + " bytes"
                                   : curl_easy_strerror(result);
    } else {
      t->resp.status = static_cast<int>(status);
    }
    finish(t);
  }
}

}  // namespace corral::worker
