// A webhook receiver for the integration tests: an HTTP server on 127.0.0.1 (an ephemeral
// port), with a loop and a thread of its own, that keeps every request it reads and answers
// each as the test says. Built on RawHttpServer; the test's thread only reads copies.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/harness.h"

namespace corral::test {

class WebhookReceiver {
 public:
  // The status for the n-th request (counting from 1) to `path`; 0: no answer at all (the
  // connection stays open until the client gives up). Runs on the receiver's thread.
  using Answer = std::function<int(const std::string& path, size_t n)>;

  // Listens at once; every request gets 200 when `answer` is empty.
  explicit WebhookReceiver(Answer answer = {});
  ~WebhookReceiver();
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  // "http://127.0.0.1:<port>" followed by `path`.
  std::string url(const std::string& path) const;

  struct Received {
    std::string path;
    std::string head;  // the request line and headers, as sent
    Json body;         // parsed; null when it is not JSON
  };
  std::vector<Received> received() const;
  // The bodies of the requests to `path`, in the order they came.
  std::vector<Json> bodies(const std::string& path) const;
  // Waits until a request to `path` has a body for which `match` holds, and returns that body;
  // fails the test on the deadline, showing what came.
  Json wait_for(const std::string& path, const std::function<bool(const Json&)>& match,
                milliseconds timeout, const std::string& what) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
  int port_ = 0;
};

}  // namespace corral::test
