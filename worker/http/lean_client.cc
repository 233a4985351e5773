#include "worker/http/lean_client.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "config/scenario/response.h"
#include "shared/uv/guard.h"
#include "worker/http/h1_connection.h"
#include "worker/http/h2_session.h"
#include "worker/http/origin.h"
#include "worker/http/redirect.h"
#include "worker/http/wire.h"

namespace corral::worker {
namespace {

// curl sends requests through a proxy when http_proxy (https_proxy or HTTPS_PROXY for https) or
// all_proxy is set (upper case HTTP_PROXY is ignored, a CGI safety rule): those go to curl,
// which also knows no_proxy.
bool proxy_in_environment() {
  for (const char* name : {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

const std::string* header(const HttpResponse& r, std::string_view name) {
  for (const auto& [n, v] : r.headers) {
    if (scenario::equals_ignoring_case(n, name)) return &v;
  }
  return nullptr;
}

}  // namespace

LeanClient::LeanClient(uv_loop_t* loop, ClientOptions opts, HttpClient& fallback, BodyBudget& budget)
    : loop_(loop),
      opts_(opts),
      fallback_(fallback),
      budget_(budget),
      use_proxy_(proxy_in_environment()),
      handshakes_(loop, opts.handshake_slice_ns),
      deliver_timer_(loop),
      rebalance_timer_(loop),
      reap_timer_(loop),
      idle_timer_(loop) {
  // Idle connections are closed within a quarter of max_idle_ms past it (at most 10 s).
  uint64_t every = std::clamp<uint64_t>(opts_.max_idle_ms / 4, 1, 10000);
  idle_timer_.start(every, every, [this] { close_idle(); });
  idle_timer_.unref();  // the loop does not wait on it alone
  uv_prepare_init(loop, before_poll_.get());
  before_poll_.set_live(this);
  uv_check_init(loop, after_poll_.get());
  after_poll_.set_live(this);
}

LeanClient::~LeanClient() {
  deliver_timer_.close();
  rebalance_timer_.close();
  reap_timer_.close();
  idle_timer_.close();
  before_poll_.close();
  after_poll_.close();
  origins_.clear();
  dead_.clear();
}

bool LeanClient::has_room() const {
  return started_ < opts_.max_in_flight && budget_.used < budget_.limit;
}

// A request counted in in_flight_ goes to an origin here, or to the fallback client.
void LeanClient::start(HttpRequest req, Done done) {
  std::optional<HttpUrl> url;
  if (!use_proxy_) url = parse_http_url(req.url);
  if (!url) {
    --in_flight_;
    fallback_.send(std::move(req), std::move(done));
    return;
  }
  auto ex = std::make_unique<lean::Exchange>();
  ex->req = std::move(req);
  ex->done = std::move(done);
  ex->url = std::move(*url);
  ex->max_body = ex->req.max_response_bytes != 0 ? ex->req.max_response_bytes : opts_.max_body_bytes;
  // The loop's clock is as old as this loop iteration: a deadline counted from it would come
  // early by however long the iteration has run (the engine counts deadlines on the wall clock).
  // It also counts whole milliseconds, so a timer can fire up to 1 ms before its duration has
  // passed: one more makes a timeout never early.
  uv_update_time(loop_);
  ex->deadline_ms = uv_now(loop_) + ex->req.timeout_ms + 1;
  ++started_;
  submit(std::move(ex));
}

// Origins are told apart by everything that makes their connections differ: scheme, host and
// port, and for https the TLS options and the HTTP version offered.
void LeanClient::submit(std::unique_ptr<lean::Exchange> ex) {
  if (Status s = lean::check_request(*ex); !s) {
    ex->resp.error = s.message();
    exchange_failed(std::move(ex));
    return;
  }
  const http::TlsOptions& tls = ex->req.tls ? *ex->req.tls : opts_.tls;
  std::string key = ex->url.origin();
  key += '\n';
  key += http::to_string(ex->req.http_version);
  if (ex->url.tls) {
    key += '\n';
    key += tls.key();
  }
  auto& origin = origins_[key];
  if (!origin) {
    tls::Context* ctx = nullptr;
    if (ex->url.tls) {
      auto made = contexts_.context(tls, uv_now(loop_));
      if (!made) {
        origins_.erase(key);
        ex->resp.error = made.status().message();
        exchange_failed(std::move(ex));
        return;
      }
      ctx = *made;
    }
    origin = std::make_unique<lean::Origin>(*this, ex->url, ex->req.http_version, ctx);
  }
  origin->submit(std::move(ex));
}

void LeanClient::exchange_done(std::unique_ptr<lean::Exchange> ex) {
  if (ex->req.follow_redirects && is_redirect(ex->resp.status) && follow(ex)) return;
  finish(std::move(ex));
}

// Sends `ex` on to its response's Location. False when there is none: the 3xx is the answer.
bool LeanClient::follow(std::unique_ptr<lean::Exchange>& ex) {
  const std::string* location = header(ex->resp, "location");
  if (location == nullptr) return false;
  std::string to = resolve_location(ex->req.url, *location);
  if (to.empty()) to = *location;  // refused below, with the reason
  release(*ex);  // the redirect's own body is not kept
  uint64_t now = uv_now(loop_);
  Status s = redirect_request(ex->req, ex->resp.redirects, to, ex->resp.status);
  if (s.is_ok() && now >= ex->deadline_ms) {
    s = Status(Code::kUnavailable, "Timeout was reached (following a redirect)");
    ex->resp.timed_out = true;
  }
  if (!s) {
    ex->resp.error = s.message();
    exchange_failed(std::move(ex));
    return true;
  }
  ex->resp.redirects += 1;
  ex->resp.headers.clear();
  std::optional<HttpUrl> url;
  if (!use_proxy_) url = parse_http_url(ex->req.url);
  if (!url) {  // to a proxy: curl takes the rest of the way, within what is left of the timeout
    hand_to_fallback(std::move(ex), now);
    return true;
  }
  ex->url = std::move(*url);
  submit(std::move(ex));
  return true;
}

void LeanClient::hand_to_fallback(std::unique_ptr<lean::Exchange> ex, uint64_t now) {
  HttpRequest req = std::move(ex->req);
  req.timeout_ms = ex->deadline_ms - now;
  req.max_redirects -= ex->resp.redirects;
  int followed = ex->resp.redirects;
  double spent = ex->resp.total_ms;
  Done done = std::move(ex->done);
  --started_;
  --in_flight_;
  fallback_.send(std::move(req), [followed, spent, done = std::move(done)](HttpResponse&& r) {
    r.redirects += followed;
    r.total_ms += spent;
    done(std::move(r));
  });
  start_waiting();
}

void LeanClient::exchange_failed(std::unique_ptr<lean::Exchange> ex) {
  ex->resp.status = 0;
  release(*ex);
  finished_.push_back(std::move(ex));
  deliver_timer_.start(0, 0, [this] { deliver(); });
}

void LeanClient::deliver() {
  std::vector<std::unique_ptr<lean::Exchange>> ready = std::move(finished_);
  finished_.clear();
  for (auto& ex : ready) finish(std::move(ex));
}

void LeanClient::finish(std::unique_ptr<lean::Exchange> ex) {
  --started_;
  --in_flight_;
  ++completed_;
  HttpResponse resp = std::move(ex->resp);
  resp.url = std::move(ex->req.url);  // the URL of the last hop (redirect_request moves it on)
  Done done = std::move(ex->done);
  uint64_t held = resp.body.size();
  uint64_t counted = ex->budget_held;
  ex.reset();
  uv::guard("response", [&] { done(std::move(resp)); });
  // The body is released once its callback has seen it.
  budget_.release(counted);
  body_bytes_ -= std::min(body_bytes_, held);
  if (!paused_.empty()) schedule_rebalance();
  start_waiting();
}

void LeanClient::release(lean::Exchange& ex) {
  budget_.release(ex.budget_held);
  ex.budget_held = ex.reserved = 0;
  body_bytes_ -= std::min<uint64_t>(body_bytes_, ex.resp.body.size());
  std::string().swap(ex.resp.body);
}

void LeanClient::paused(lean::Paused* p) {
  paused_.push_back(p);
  schedule_rebalance();
}

void LeanClient::unpaused(lean::Paused* p) { std::erase(paused_, p); }

void LeanClient::schedule_rebalance() {
  if (rebalance_pending_) return;
  rebalance_pending_ = true;
  rebalance_timer_.start(1, 0, [this] {
    rebalance_pending_ = false;
    rebalance();
  });
}

// Resumes paused transfers whose waiting bytes fit. When every transfer on the wire is paused
// and none fits, none can finish and free memory: the one holding the most fails.
void LeanClient::rebalance() {
  if (paused_.empty()) return;
  std::vector<lean::Paused*> paused = paused_;
  bool resumed = false;
  for (lean::Paused* c : paused) {
    // A connection failed meanwhile has left paused_ already (it is freed only later).
    if (std::find(paused_.begin(), paused_.end(), c) == paused_.end()) continue;
    std::erase(paused_, c);
    // Resumed, it may pause again at once and come back here by itself.
    if (c->try_resume()) {
      resumed = true;
    } else {
      paused_.push_back(c);
    }
  }
  if (resumed || paused_.size() < on_wire_) return;
  auto biggest = std::max_element(paused_.begin(), paused_.end(), [](auto* a, auto* b) {
    return a->held_body() + a->waiting_bytes() < b->held_body() + b->waiting_bytes();
  });
  (*biggest)->fail_over_budget();
}

// Closes connections idle past max_idle_ms and forgets origins left with nothing: a scenario
// that reaches many hosts, each once, does not keep a pool for every one of them. An origin is
// freed only when no closed connection is waiting to be freed (one may still point to it).
void LeanClient::close_idle() {
  uint64_t now = uv_now(loop_);
  for (auto it = origins_.begin(); it != origins_.end();) {
    bool unused = it->second->close_idle(now);
    if (unused && dead_.empty()) {
      it = origins_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<std::pair<std::string, OriginErrors>> LeanClient::origin_errors() const {
  auto mine = errors_.snapshot();
  for (auto& e : fallback_.origin_errors()) mine.push_back(std::move(e));
  return mine;
}

void LeanClient::unpin(uint64_t pin) {
  for (auto& [key, o] : origins_) o->unpin(pin);
}

void LeanClient::cancel(uint64_t tag) {
  if (tag == 0) return;
  for (auto& [key, o] : origins_) {
    if (o->cancel(tag)) return;
  }
  fallback_.cancel(tag);  // a proxy, or a redirect that went there
}

void LeanClient::flush_soon(h2::Session* s) {
  to_flush_.push_back(s);
  if (to_flush_.size() > 1) return;
  uv_prepare_start(before_poll_.get(), [](uv_prepare_t* h) {
    if (auto* c = uv::owner_of<LeanClient>(h)) c->flush_sessions();
  });
  uv_check_start(after_poll_.get(), [](uv_check_t* h) {
    if (auto* c = uv::owner_of<LeanClient>(h)) c->flush_sessions();
  });
}

void LeanClient::flush_cancel(h2::Session* s) { std::erase(to_flush_, s); }

void LeanClient::flush_sessions() {
  std::vector<h2::Session*> now = std::move(to_flush_);
  to_flush_.clear();
  for (h2::Session* s : now) s->flush_now();  // may close it; it is freed later
  if (!to_flush_.empty()) return;
  uv_prepare_stop(before_poll_.get());
  uv_check_stop(after_poll_.get());
}

TlsCounts LeanClient::tls_counts() const {
  TlsCounts c = counts_;
  c.full = handshakes_.full();
  c.resumed = handshakes_.resumed();
  return c;
}

HeldCounts LeanClient::held(uint32_t group, bool forget) {
  auto it = held_.find(group);
  if (it == held_.end()) return {};
  HeldCounts counts = it->second;
  if (forget) held_.erase(it);
  return counts;
}

size_t LeanClient::idle_connections() const {
  size_t n = 0;
  for (const auto& [key, o] : origins_) n += o->idle();
  return n;
}

size_t LeanClient::open_connections() const {
  size_t n = 0;
  for (const auto& [key, o] : origins_) n += o->open();
  return n;
}

}  // namespace corral::worker
