// A client made on its first request. The worker's libcurl client is one: a worker whose
// requests all go through the lean client (no proxy, "http_client" not "curl") never makes it,
// and so never loads libcurl (shared/http/curl_lazy.h), which was most of a worker's start.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "worker/http/client.h"

namespace corral::worker {

class LazyClient final : public HttpClient {
 public:
  using Factory = std::function<std::unique_ptr<HttpClient>()>;
  explicit LazyClient(Factory factory) : factory_(std::move(factory)) {}

  void send(HttpRequest req, Done done) override { made().send(std::move(req), std::move(done)); }
  void send_lazy(Make make, Done done) override {
    made().send_lazy(std::move(make), std::move(done));
  }
  size_t in_flight() const override { return client_ ? client_->in_flight() : 0; }
  uint64_t completed() const override { return client_ ? client_->completed() : 0; }
  uint64_t body_bytes() const override { return client_ ? client_->body_bytes() : 0; }
  std::vector<std::pair<std::string, OriginErrors>> origin_errors() const override {
    return client_ ? client_->origin_errors() : std::vector<std::pair<std::string, OriginErrors>>{};
  }
  void unpin(uint64_t pin) override {
    if (client_) client_->unpin(pin);
  }
  HeldCounts held(uint32_t group, bool forget) override {
    return client_ ? client_->held(group, forget) : HeldCounts{};
  }
  void cancel(uint64_t tag) override {
    if (client_) client_->cancel(tag);
  }
  TlsCounts tls_counts() const override { return client_ ? client_->tls_counts() : TlsCounts{}; }

 private:
  HttpClient& made() {
    if (!client_) client_ = factory_();
    return *client_;
  }

  Factory factory_;
  std::unique_ptr<HttpClient> client_;
};

}  // namespace corral::worker
