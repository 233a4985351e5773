// The HTTP client against corral-target's routes on the same loop: redirects, size limits and
// the memory budget of bodies in flight.
#include <catch2/catch.hpp>

#include <functional>
#include <vector>

#include "shared/proc.h"
#include "tools/target/target.h"
#include "worker/http/curl_client.h"

using corral::worker::CurlClient;
using corral::worker::CurlOptions;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;
using nlohmann::json;

namespace {

struct Fixture {
  explicit Fixture(CurlOptions opts = {}) {
    uv_loop_init(&loop);
    for (auto* t : {&a, &b}) {
      *t = std::make_unique<corral::target::Target>(&loop);
      REQUIRE((*t)->listen("127.0.0.1", 0).is_ok());
    }
    base_a = "http://127.0.0.1:" + std::to_string(a->port());
    base_b = "http://127.0.0.1:" + std::to_string(b->port());
    http = std::make_unique<CurlClient>(&loop, opts);
  }
  ~Fixture() {
    http.reset();
    a.reset();
    b.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
  }

  bool run_until(const std::function<bool()>& done, uint64_t timeout_ms = 10000) {
    uv_timer_t tick;
    uv_timer_init(&loop, &tick);
    uv_timer_start(
        &tick, [](uv_timer_t*) {}, 5, 5);
    uint64_t deadline = corral::monotonic_ms() + timeout_ms;
    while (!done() && corral::monotonic_ms() < deadline) {
      uv_run(&loop, UV_RUN_ONCE);
      peak_body_bytes = std::max(peak_body_bytes, http->body_bytes());
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&tick), nullptr);
    uv_run(&loop, UV_RUN_NOWAIT);
    return done();
  }

  HttpResponse fetch(HttpRequest req) {
    std::optional<HttpResponse> got;
    http->send(std::move(req), [&](HttpResponse&& r) { got = std::move(r); });
    REQUIRE(run_until([&] { return got.has_value(); }));
    return std::move(*got);
  }

  json echo_of(HttpRequest req) {
    HttpResponse r = fetch(std::move(req));
    INFO(r.error << " " << r.status << " " << r.body);
    REQUIRE(r.status == 200);
    return json::parse(r.body);
  }

  uv_loop_t loop;
  std::unique_ptr<corral::target::Target> a, b;
  std::string base_a, base_b;
  std::unique_ptr<CurlClient> http;
  uint64_t peak_body_bytes = 0;
};

HttpRequest request(std::string method, std::string url, std::string body = "") {
  HttpRequest r;
  r.method = std::move(method);
  r.url = std::move(url);
  r.body = std::move(body);
  r.headers = {"Authorization: Bearer t0k", "Cookie: c=1", "Content-Type: application/json",
               "X-Keep: yes"};
  return r;
}

}  // namespace

TEST_CASE("curl client: 303 turns a POST into a GET without its body, and the final URL is kept") {
  Fixture f;
  auto req = request("POST", f.base_a + "/redirect?code=303&to=/echo", R"({"a":1})");
  HttpResponse r = f.fetch(req);
  REQUIRE(r.status == 200);
  CHECK(r.redirects == 1);
  CHECK(r.url == f.base_a + "/echo");
  json echo = json::parse(r.body);
  CHECK(echo["method"] == "GET");
  CHECK(echo["body"] == "");
  CHECK_FALSE(echo["headers"].contains("content-type"));
  CHECK(echo["headers"]["authorization"] == "Bearer t0k");  // same origin: kept
  CHECK(echo["headers"]["x-keep"] == "yes");
}

TEST_CASE("curl client: 307 and 308 keep the method and the body") {
  Fixture f;
  for (const char* code : {"307", "308"}) {
    auto req = request("PUT", f.base_a + "/redirect?code=" + code + "&to=/echo", R"({"a":1})");
    json echo = f.echo_of(req);
    CHECK(echo["method"] == "PUT");
    CHECK(echo["body"] == R"({"a":1})");
    CHECK(echo["headers"]["content-type"] == "application/json");
  }
}

TEST_CASE("curl client: 301 and 302 turn a POST into a GET, and keep a PUT") {
  Fixture f;
  CHECK(f.echo_of(request("POST", f.base_a + "/redirect?code=301&to=/echo", "x"))["method"] ==
        "GET");
  CHECK(f.echo_of(request("POST", f.base_a + "/redirect?code=302&to=/echo", "x"))["method"] ==
        "GET");
  CHECK(f.echo_of(request("PUT", f.base_a + "/redirect?code=302&to=/echo", "x"))["method"] ==
        "PUT");
}

TEST_CASE("curl client: Authorization and Cookie are dropped when a redirect leaves the origin") {
  Fixture f;
  json echo = f.echo_of(request("GET", f.base_a + "/redirect?code=302&to=" + f.base_b + "/echo"));
  CHECK_FALSE(echo["headers"].contains("authorization"));
  CHECK_FALSE(echo["headers"].contains("cookie"));
  CHECK(echo["headers"]["x-keep"] == "yes");
}

TEST_CASE("curl client: a redirect loop ends as too many redirects") {
  Fixture f;
  auto req = request("GET", f.base_a + "/redirect-loop");
  req.max_redirects = 4;
  HttpResponse r = f.fetch(req);
  CHECK(r.status == 0);
  CHECK(r.error == "too many redirects (4 followed, max_redirects is 4)");
  CHECK(f.a->requests() == 5);
}

TEST_CASE("curl client: with follow_redirects off the 3xx is the answer") {
  Fixture f;
  auto req = request("GET", f.base_a + "/redirect?code=303&to=/echo");
  req.follow_redirects = false;
  HttpResponse r = f.fetch(req);
  CHECK(r.status == 303);
  CHECK(r.redirects == 0);
  CHECK(f.a->requests() == 1);
}

TEST_CASE("curl client: a redirect to something other than http or https is refused") {
  Fixture f;
  HttpResponse r = f.fetch(request("GET", f.base_a + "/redirect?code=302&to=file:///etc/passwd"));
  CHECK(r.status == 0);
  CHECK(r.error == "redirect to a URL that is not http or https: file:///etc/passwd");
}

TEST_CASE("curl client: a body over max_response is a transport error that names the limit") {
  Fixture f;
  auto req = request("GET", f.base_a + "/big?bytes=300000");
  req.max_response_bytes = 100 * 1024;
  HttpResponse r = f.fetch(req);
  CHECK(r.status == 0);
  CHECK(r.error == "response body larger than max_response (100KB)");
  // Within the limit it arrives whole.
  req.max_response_bytes = 400 * 1024;
  r = f.fetch(req);
  CHECK(r.status == 200);
  CHECK(r.body.size() == 300000);
}

TEST_CASE("curl client: bodies in flight stay within the memory budget, and requests wait instead") {
  CurlOptions opts;
  opts.max_body_bytes = 1 << 20;
  opts.memory_budget_bytes = 1 << 20;
  Fixture f(opts);
  int ok = 0, failed = 0;
  for (int k = 0; k < 12; ++k) {
    f.http->send(request("GET", f.base_a + "/big?bytes=400000"), [&](HttpResponse&& r) {
      (r.status == 200 && r.body.size() == 400000 ? ok : failed) += 1;
    });
  }
  REQUIRE(f.run_until([&] { return ok + failed == 12; }, 30000));
  CHECK(ok == 12);
  CHECK(f.peak_body_bytes <= opts.memory_budget_bytes);
  CHECK(f.http->body_bytes() == 0);
}

TEST_CASE("curl client: a body larger than the whole budget fails rather than stalling") {
  CurlOptions opts;
  opts.max_body_bytes = 4 << 20;
  opts.memory_budget_bytes = 1 << 20;
  Fixture f(opts);
  HttpResponse r = f.fetch(request("GET", f.base_a + "/big?bytes=3000000"));
  CHECK(r.status == 0);
  CHECK(r.error == "response bodies in flight exceed the worker's response memory budget (1MB)");
  CHECK(f.peak_body_bytes <= opts.memory_budget_bytes);
  // The client goes on.
  CHECK(f.fetch(request("GET", f.base_a + "/big?bytes=1000")).status == 200);
}

TEST_CASE("curl client: an exception thrown by a response callback goes no further") {
  Fixture f;
  bool second = false;
  f.http->send(request("GET", f.base_a + "/echo"),
               [](HttpResponse&&) { throw std::runtime_error("boom"); });
  f.http->send(request("GET", f.base_a + "/echo"), [&](HttpResponse&&) { second = true; });
  REQUIRE(f.run_until([&] { return second; }));
  CHECK(f.http->in_flight() == 0);
}
