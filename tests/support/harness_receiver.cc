#include "tests/support/harness_receiver.h"

#include <uv.h>

#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "shared/uv/async.h"
#include "tests/support/raw_http_server.h"

namespace corral::test {

struct WebhookReceiver::State {
  Answer answer;
  mutable std::mutex mu;
  std::vector<Received> received;
  std::map<std::string, size_t> counts;  // requests per path
  uv::Async* stop = nullptr;             // lives on the thread's stack while it runs
  std::thread thread;

  // On the receiver's thread: keeps the request and says how to answer it.
  Script on_request(const RawRequest& req) {
    const std::string head = req.bytes.substr(0, req.bytes.find("\r\n\r\n"));
    const std::string path = req.target.substr(0, req.target.find('?'));
    size_t n = 0;
    {
      std::lock_guard lk(mu);
      Json body = Json::parse(req.body, nullptr, /*allow_exceptions=*/false);
      received.push_back({path, head, body.is_discarded() ? Json() : body});
      n = ++counts[path];
    }
    const int status = answer ? answer(path, n) : 200;
    if (status == 0) return {};
    return {send("HTTP/1.1 " + std::to_string(status) +
                 " X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            close_connection()};
  }
};

WebhookReceiver::WebhookReceiver(Answer answer) : state_(std::make_shared<State>()) {
  state_->answer = std::move(answer);
  std::promise<int> listening;
  std::future<int> port = listening.get_future();
  state_->thread = std::thread([st = state_, &listening] {
    uv_loop_t loop;
    uv_loop_init(&loop);
    {
      RawHttpServer server(&loop, [&st](const RawRequest& req) { return st->on_request(req); });
      uv::Async stop(&loop, [&] {
        server.close();
        stop.close();
      });
      st->stop = &stop;
      listening.set_value(server.port());
      uv_run(&loop, UV_RUN_DEFAULT);
    }
    uv_run(&loop, UV_RUN_DEFAULT);  // the close callbacks
    uv_loop_close(&loop);
  });
  port_ = port.get();
}

WebhookReceiver::~WebhookReceiver() {
  state_->stop->send();
  state_->thread.join();
}

std::string WebhookReceiver::url(const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(port_) + path;
}

std::vector<WebhookReceiver::Received> WebhookReceiver::received() const {
  std::lock_guard lk(state_->mu);
  return state_->received;
}

std::vector<Json> WebhookReceiver::bodies(const std::string& path) const {
  std::vector<Json> out;
  for (const Received& r : received()) {
    if (r.path == path) out.push_back(r.body);
  }
  return out;
}

Json WebhookReceiver::wait_for(const std::string& path,
                               const std::function<bool(const Json&)>& match, milliseconds timeout,
                               const std::string& what) const {
  Json found;
  corral::test::wait_for(
      [&] {
        for (const Json& body : bodies(path)) {
          if (match(body)) {
            found = body;
            return true;
          }
        }
        return false;
      },
      timeout, what,
      [&] {
        std::string seen;
        for (const Received& r : received()) seen += "\n  " + r.path + " " + r.body.dump();
        return "requests so far:" + (seen.empty() ? std::string(" none") : seen);
      });
  return found;
}

}  // namespace corral::test
