#include "worker/http/curl_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "config/config.h"
#include "shared/http/curl_lazy.h"
#include "shared/uv/guard.h"
#include "shared/uv/handle.h"
#include "worker/http/curl_transfer.h"
#include "worker/http/redirect.h"
#include "worker/http/url.h"

namespace corral::worker {

// One socket curl asked us to watch. Its uv_poll_t memory is freed by the close callback.
struct CurlClient::SocketWatch {
  CurlClient* client;
  curl_socket_t fd;
  uv::Handle<uv_poll_t> poll;
};

CurlClient::CurlClient(uv_loop_t* loop, ClientOptions opts, BodyBudget* budget)
    : loop_(loop),
      opts_(opts),
      own_budget_{opts.memory_budget_bytes, 0},
      budget_(budget != nullptr ? budget : &own_budget_),
      multi_(curl_multi_init()),
      timer_(loop),
      failed_timer_(loop),
      rebalance_timer_(loop),
      turn_timer_(loop) {
  static const bool global = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!global || multi_ == nullptr) {
    // libcurl could not be loaded (shared/http/curl_lazy.h): every request fails, saying why.
    const std::string& why = http::curl_load_failure();
    unusable_ = why.empty() ? "libcurl failed to initialise" : why;
    spdlog::error("{}; requests that need it (proxies, \"http_client\": \"curl\") fail", unusable_);
    return;
  }
  curl_multi_setopt(multi_, CURLMOPT_SOCKETFUNCTION, &CurlClient::on_socket);
  curl_multi_setopt(multi_, CURLMOPT_SOCKETDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_TIMERFUNCTION, &CurlClient::on_timer);
  curl_multi_setopt(multi_, CURLMOPT_TIMERDATA, this);
  curl_multi_setopt(multi_, CURLMOPT_MAX_HOST_CONNECTIONS, opts_.max_connections_per_host);
  curl_multi_setopt(multi_, CURLMOPT_MAX_TOTAL_CONNECTIONS, opts_.max_total_connections);
  curl_multi_setopt(multi_, CURLMOPT_MAXCONNECTS, opts_.connection_cache);
}

CurlClient::~CurlClient() {
  timer_.close();
  failed_timer_.close();
  rebalance_timer_.close();
  turn_timer_.close();
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

bool CurlClient::has_room() const {
  return in_curl_ < opts_.max_in_flight && budget_->used < budget_->limit &&
         started_this_turn_ < std::max<size_t>(1, opts_.curl_starts_per_turn);
}

void CurlClient::start(HttpRequest req, Done done) {
  if (++started_this_turn_ == std::max<size_t>(1, opts_.curl_starts_per_turn)) {
    turn_timer_.start(0, 0, [this] {
      started_this_turn_ = 0;
      start_waiting();
    });
  }
  begin(new Transfer{this, nullptr, nullptr, std::move(req), {}, std::move(done)});
}

void CurlClient::begin(Transfer* t) {
  t->easy = unusable_.empty() ? take_easy() : nullptr;
  t->max_body = t->req.max_response_bytes != 0 ? t->req.max_response_bytes : opts_.max_body_bytes;
  t->deadline_ms = uv_now(loop_) + t->req.timeout_ms;
  t->resp.url = t->req.url;
  ++in_curl_;
  live_.insert(t);
  if (!unusable_.empty()) {
    fail_soon(t, unusable_);
    return;
  }
  if (Status s = t->configure(t->req.timeout_ms); !s) {
    fail_soon(t, s.message());
    return;
  }
  add(t);
}

void CurlClient::add(Transfer* t) {
  CURLMcode rc = curl_multi_add_handle(multi_, t->easy);
  if (rc != CURLM_OK) {
    fail_soon(t, std::string("curl_multi_add_handle() failed: ") + curl_multi_strerror(rc));
  }
}

// Ends `t` with `error` through a timer, so that `done` never runs inside send() or a curl
// callback. `t` must not be in the multi handle.
void CurlClient::fail_soon(Transfer* t, std::string error) {
  t->resp.error = std::move(error);
  t->resp.status = 0;
  failed_.push_back(t);
  failed_timer_.start(0, 0, [this] {
    std::vector<Transfer*> failed = std::move(failed_);
    failed_.clear();
    for (Transfer* f : failed) {
      if (f->easy != nullptr) idle_easy_.push_back(f->easy);
      finish(f);
    }
  });
}

void CurlClient::finish(Transfer* t) {
  live_.erase(t);
  if (t->paused) std::erase(paused_, t);
  curl_slist_free_all(t->headers);
  --in_flight_;
  --in_curl_;
  ++completed_;
  uint64_t held = t->resp.body.size();
  Done done = std::move(t->done);
  HttpResponse resp = std::move(t->resp);
  delete t;
  uv::guard("response", [&] { done(std::move(resp)); });
  // The body is released once its callback has seen it.
  body_bytes_ -= std::min(body_bytes_, held);
  budget_->release(held);
  if (!paused_.empty()) schedule_rebalance();
  start_waiting();
}

int CurlClient::on_timer(CURLM*, long timeout_ms, void* userp) noexcept {
  auto* self = static_cast<CurlClient*>(userp);
  if (timeout_ms < 0) {
    self->timer_.stop();
    return 0;
  }
  // Even a 0 ms timeout goes through the loop: curl must not be re-entered from here.
  self->timer_.start(static_cast<uint64_t>(timeout_ms), 0,
                     [self] { self->socket_action(CURL_SOCKET_TIMEOUT, 0); });
  return 0;
}

int CurlClient::on_socket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) noexcept {
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
    watch = new (std::nothrow) SocketWatch{self, s, {}};
    if (watch == nullptr || uv_poll_init_socket(self->loop_, watch->poll.get(), s) != 0) {
      uv::report_callback_failure("curl socket", "cannot watch a socket");
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
  // CURL_CSELECT_ERR, not IN: on a read error from a reused connection curl would retry the
  // request itself, whatever its method (a POST too). It reports a reset as a send failure.
  if (status < 0) flags = CURL_CSELECT_ERR;
  if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
  if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  CurlClient* client = watch->client;
  curl_socket_t fd = watch->fd;
  uv::guard("curl socket", [client, fd, flags] { client->socket_action(fd, flags); });
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
    Transfer* t = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &t);
    on_transfer_done(t, msg->data.result);
  }
}

void CurlClient::on_transfer_done(Transfer* t, CURLcode result) {
  CURL* e = t->easy;
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  double total = 0;
  curl_easy_getinfo(e, CURLINFO_TOTAL_TIME, &total);
  t->resp.total_ms += total * 1000.0;
  note_connection(t);
  curl_multi_remove_handle(multi_, e);
  if (result == CURLE_OK && t->req.follow_redirects && is_redirect(status) &&
      follow_redirect(t, status)) {
    return;
  }
  if (retry_on_fresh_connection(t, result, status)) return;
  idle_easy_.push_back(e);
  if (result == CURLE_OK) {
    t->resp.status = static_cast<int>(status);
  } else {
    t->resp.status = 0;
    t->resp.timed_out = result == CURLE_OPERATION_TIMEDOUT;
    count_error(t->req.url, result);
    bool too_large = t->too_large || result == CURLE_FILESIZE_EXCEEDED;
    t->resp.error = too_large ? "response body larger than max_response (" +
                                    config::format_bytes(t->max_body) + ")"
                              : curl_easy_strerror(result);
  }
  finish(t);
}

// What the lean client tells of a response's connection too: the TLS handshake it waited for
// (from the TCP connection to the handshake's end, on a new connection) and the protocol.
void CurlClient::note_connection(Transfer* t) {
  CURL* e = t->easy;
  long connects = 0;
  curl_off_t tcp_us = 0, tls_us = 0;
  curl_easy_getinfo(e, CURLINFO_NUM_CONNECTS, &connects);
  curl_easy_getinfo(e, CURLINFO_CONNECT_TIME_T, &tcp_us);
  curl_easy_getinfo(e, CURLINFO_APPCONNECT_TIME_T, &tls_us);
  if (connects > 0 && tls_us > tcp_us) {
    t->resp.tls_ms += static_cast<double>(tls_us - tcp_us) / 1000.0;
  }
  long version = 0;
  curl_easy_getinfo(e, CURLINFO_HTTP_VERSION, &version);
  if (version == CURL_HTTP_VERSION_2_0) t->resp.protocol = "HTTP/2";
  if (version == CURL_HTTP_VERSION_1_1 || version == CURL_HTTP_VERSION_1_0) {
    t->resp.protocol = "HTTP/1.1";
  }
}

void CurlClient::count_error(const std::string& url, int result) {
  using Kind = OriginErrorTable::Kind;
  switch (static_cast<CURLcode>(result)) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_CONNECT: errors_.count(origin_label(url), Kind::kConnect); break;
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE: errors_.count(origin_label(url), Kind::kReset); break;
    case CURLE_OPERATION_TIMEDOUT: errors_.count(origin_label(url), Kind::kTimeout); break;
    default: break;
  }
}

std::vector<std::pair<std::string, OriginErrors>> CurlClient::origin_errors() const {
  return errors_.snapshot();
}

// A reused connection that failed before any byte of the answer came back was most likely
// closed by the server while idle: an idempotent request goes again, once, on a new one.
bool CurlClient::retry_on_fresh_connection(Transfer* t, CURLcode result, long status) {
  bool stale = result == CURLE_SEND_ERROR || result == CURLE_RECV_ERROR ||
               result == CURLE_GOT_NOTHING;
  long connects = 0;
  curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &connects);
  uint64_t now = uv_now(loop_);
  if (!stale || status != 0 || connects != 0 || !is_idempotent(t->req.method) || t->retried ||
      now >= t->deadline_ms) {
    return false;
  }
  t->retried = true;
  errors_.count(origin_label(t->req.url), OriginErrorTable::Kind::kRetried);
  release_body(t);
  t->resp.headers.clear();
  curl_easy_reset(t->easy);
  if (Status s = t->configure(t->deadline_ms - now); !s) {
    fail_soon(t, s.message());
    return true;
  }
  curl_easy_setopt(t->easy, CURLOPT_FRESH_CONNECT, 1L);
  add(t);
  return true;
}

// Sends `t` on to the response's Location. False when there is none (the 3xx is the answer).
bool CurlClient::follow_redirect(Transfer* t, long status) {
  char* location = nullptr;
  curl_easy_getinfo(t->easy, CURLINFO_REDIRECT_URL, &location);
  if (location == nullptr) return false;
  uint64_t now = uv_now(loop_);
  release_body(t);  // the redirect's own body is not kept
  Status s = t->redirect_to(location, status);
  if (s.is_ok() && now >= t->deadline_ms) {
    s = Status(Code::kUnavailable, "Timeout was reached (following a redirect)");
    t->resp.timed_out = true;
  }
  if (!s) {
    fail_soon(t, s.message());
    return true;
  }
  t->resp.url = t->req.url;
  curl_easy_reset(t->easy);
  if (Status st = t->configure(t->deadline_ms - now); !st) {
    fail_soon(t, st.message());
    return true;
  }
  add(t);
  return true;
}

bool CurlClient::take_budget(Transfer* t, size_t bytes) {
  if (!budget_->fits(bytes)) {
    t->waiting_bytes = bytes;  // curl offers the same bytes again once resumed
    if (!t->paused) {
      t->paused = true;
      paused_.push_back(t);
    }
    schedule_rebalance();
    return false;
  }
  body_bytes_ += bytes;
  budget_->used += bytes;
  return true;
}

void CurlClient::release_body(Transfer* t) {
  body_bytes_ -= std::min<uint64_t>(body_bytes_, t->resp.body.size());
  budget_->release(t->resp.body.size());
  std::string().swap(t->resp.body);
}

void CurlClient::schedule_rebalance() {
  if (rebalance_pending_) return;
  rebalance_pending_ = true;
  rebalance_timer_.start(1, 0, [this] {
    rebalance_pending_ = false;
    rebalance();
  });
}

// Removing a transfer's handle before it is done makes curl close its connection.
void CurlClient::cancel(uint64_t tag) {
  if (tag == 0) return;
  for (Transfer* t : live_) {
    if (t->req.tag != tag) continue;
    if (std::find(failed_.begin(), failed_.end(), t) != failed_.end()) return;  // ending now
    if (t->paused) std::erase(paused_, t);
    t->paused = false;
    curl_multi_remove_handle(multi_, t->easy);
    release_body(t);
    fail_soon(t, "request cancelled");
    return;
  }
}

// Resumes the paused transfers whose waiting bytes fit in the budget. When every transfer in
// curl is paused and none fits, none can finish and free memory: the one holding the most
// fails, so the others go on.
void CurlClient::rebalance() {
  if (paused_.empty()) return;
  uint64_t room = budget_->limit - std::min(budget_->used, budget_->limit);
  std::vector<Transfer*> resume;
  std::erase_if(paused_, [&](Transfer* t) {
    if (t->waiting_bytes > room) return false;
    room -= t->waiting_bytes;
    resume.push_back(t);
    return true;
  });
  for (Transfer* t : resume) {
    t->paused = false;
    curl_easy_pause(t->easy, CURLPAUSE_CONT);  // delivers the waiting bytes, or pauses again
  }
  if (!resume.empty()) {
    socket_action(CURL_SOCKET_TIMEOUT, 0);
    return;
  }
  if (paused_.size() < in_curl_) return;  // others are still moving
  auto biggest = std::max_element(paused_.begin(), paused_.end(), [](Transfer* a, Transfer* b) {
    return a->resp.body.size() < b->resp.body.size();
  });
  Transfer* t = *biggest;
  paused_.erase(biggest);
  t->paused = false;
  curl_multi_remove_handle(multi_, t->easy);
  release_body(t);
  fail_soon(t, "response bodies in flight exceed the worker's response memory budget (" +
                   config::format_bytes(budget_->limit) + ")");
}

}  // namespace corral::worker
