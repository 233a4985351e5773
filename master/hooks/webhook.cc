#include "master/hooks/webhook.h"

#include <algorithm>
#include <atomic>

#include "shared/uv/guard.h"
#include "shared/uv/timer.h"

namespace corral::master {
namespace {

constexpr uint64_t kFirstRetryMs = 500;
constexpr uint64_t kMaxRetryMs = 30000;

class Webhook final : public Delivery {
 public:
  Webhook(uv_loop_t* loop, const config::Hook& hook, std::string payload, Done done)
      : loop_(loop),
        hook_(hook),
        payload_(std::move(payload)),
        done_(std::move(done)),
        retry_timer_(loop) {}
  ~Webhook() override {
    if (trying_ != nullptr) trying_->owner = nullptr;  // on_tried frees it
  }

  Status try_once();
  void abort() override;

 private:
  // One try, on the thread pool. It owns what the thread reads, so that it can outlive the
  // Webhook.
  struct Try {
    uv_work_t req;
    Webhook* owner;  // null once the webhook is gone
    http::UrlRequest request;
    std::shared_ptr<std::atomic<bool>> abort;
    Result<http::HttpResult> result = Status(Code::kInternal, "not tried");
  };
  static void on_tried(uv_work_t* req, int status);
  void after_try(const Result<http::HttpResult>& result, bool cancelled);
  void finish(Status s);

  uv_loop_t* loop_;
  config::Hook hook_;
  std::string payload_;
  Done done_;
  uv::Timer retry_timer_;
  std::shared_ptr<std::atomic<bool>> abort_ = std::make_shared<std::atomic<bool>>(false);
  Try* trying_ = nullptr;
  int tries_ = 0;
};

Status Webhook::try_once() {
  auto* t = new Try{};
  t->req.data = t;
  t->owner = this;
  t->request.url = hook_.url;
  for (const auto& [name, value] : hook_.headers) t->request.headers.push_back(name + ": " + value);
  t->request.body_json = payload_;
  t->request.timeout_ms = static_cast<long>(hook_.timeout_ms);
  t->abort = abort_;
  t->request.abort = abort_.get();
  int rc = uv_queue_work(
      loop_, &t->req,
      [](uv_work_t* req) {
        auto* job = static_cast<Try*>(req->data);
        job->result = http::request_url(job->request);
      },
      &Webhook::on_tried);
  if (rc != 0) {
    delete t;
    return io_error(std::string("uv_queue_work() failed: ") + uv_strerror(rc));
  }
  trying_ = t;
  tries_ += 1;
  return Status::ok();
}

void Webhook::on_tried(uv_work_t* req, int status) {
  std::unique_ptr<Try> t(static_cast<Try*>(req->data));
  Webhook* self = t->owner;
  if (self == nullptr) return;
  self->trying_ = nullptr;
  uv::guard("webhook try", [&] { self->after_try(t->result, status == UV_ECANCELED); });
}

void Webhook::after_try(const Result<http::HttpResult>& result, bool cancelled) {
  if (cancelled) {
    finish(Status(Code::kUnavailable, "abandoned before its try: the daemon stopped"));
    return;
  }
  const TryVerdict v = judge_try(result);
  if (v.ok) {
    finish(Status::ok());
    return;
  }
  const std::string tries = " (" + std::to_string(tries_) + (tries_ == 1 ? " try)" : " tries)");
  if (abort_->load()) {
    finish(Status(Code::kUnavailable, v.why + tries + "; abandoned: the daemon stopped"));
    return;
  }
  if (!v.retry || tries_ > hook_.retries) {
    finish(Status(Code::kUnavailable, v.why + tries));
    return;
  }
  retry_timer_.start(retry_delay_ms(tries_ + 1), 0, [this] {
    if (Status s = try_once(); !s) finish(s);
  });
}

void Webhook::abort() {
  abort_->store(true);
  // A try still waiting for a pool thread is taken back at once (on_tried gets UV_ECANCELED); a
  // running one sees the flag in libcurl's progress callback.
  if (trying_ != nullptr) {
    uv_cancel(reinterpret_cast<uv_req_t*>(&trying_->req));
    return;
  }
  retry_timer_.stop();
  finish(Status(Code::kUnavailable, "abandoned: the daemon stopped"));
}

void Webhook::finish(Status s) {
  Done done = std::move(done_);
  if (done) done(std::move(s));  // may destroy this
}

}  // namespace

TryVerdict judge_try(const Result<http::HttpResult>& result) {
  if (!result) return {false, true, result.status().message()};
  const int status = result->status;
  const std::string why = "HTTP " + std::to_string(status);
  if (status >= 200 && status < 300) return {true, false, why};
  // The receiver may be fine a moment later: it is overloaded, restarting or rate-limiting.
  const bool retry = status >= 500 || status == 408 || status == 429;
  return {false, retry, why};
}

uint64_t retry_delay_ms(int next) {
  uint64_t ms = kFirstRetryMs;
  for (int k = 2; k < next && ms < kMaxRetryMs; ++k) ms *= 2;
  return std::min(ms, kMaxRetryMs);
}

Result<std::unique_ptr<Delivery>> start_webhook(uv_loop_t* loop, const config::Hook& hook,
                                                std::string payload, Delivery::Done done) {
  auto w = std::make_unique<Webhook>(loop, hook, std::move(payload), std::move(done));
  if (Status s = w->try_once(); !s) return s;
  return std::unique_ptr<Delivery>(std::move(w));
}

}  // namespace corral::master
