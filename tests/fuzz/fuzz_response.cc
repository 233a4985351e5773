// Fuzz target: the response path of a worker, from the bytes curl hands over to what an
// instance keeps: the header and body callbacks (worker/http/curl_transfer.h), the body parsed
// as JSON, every kind of condition and capture of a scenario evaluated on it, and the captured
// values through their wire form (shared/ipc/vars.h) and back.
//
// Input layout: a status byte pair, then header lines and body chunks separated by "\n":
// lines before the first empty line go to the header callback (with "\r\n" put back, as curl
// delivers them), the rest of the input is the body, handed over in chunks whose sizes come
// from the status bytes. Decompression is curl's and zlib's, fuzzed by their own projects.
#include <uv.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/scenario/parse.h"
#include "shared/ipc/vars.h"
#include "tests/fuzz/check.h"
#include "worker/http/curl_transfer.h"

namespace {

using nlohmann::json;

// One step that reads the response every way a scenario can.
const char* const kScenario = R"({"name": "read everything", "steps": [
  {"request": {"url": "http://h/"},
   "expect": [{"status": [200, 201]}, {"json": "/status", "in": ["done", "failed"]},
              {"json": "/a/0/b", "lt": 5}, {"json": "/n", "gt": 1.5},
              {"header": "Content-Type", "matches": "json|(a+)+$"},
              {"header": "x-count", "gt": 3}, {"body_contains": "ok"},
              {"json": "/id", "exists": true}, {"json": "", "not_equals": {"a": 1}}],
   "capture": {"id": {"json": "/id"}, "all": {"json": ""}, "loc": {"header": "Location"},
               "code": {"status": true}, "raw": {"body": true}}}]})";

struct Fixture {
  Fixture() {
    uv_loop_init(&loop);
    auto s = corral::scenario::parse_scenario(json::parse(kScenario));
    FUZZ_CHECK(s.is_ok());
    scenario = *s;
  }
  uv_loop_t loop;
  std::shared_ptr<const corral::scenario::Scenario> scenario;
};

Fixture& fixture() {
  static Fixture* f = new Fixture();  // lives for the whole process, as a worker's loop does
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  Fixture& c = fixture();
  // A client of its own per input, so that one input's bodies never count against the next's
  // budget (a small budget, so that inputs reach the pause path).
  corral::worker::ClientOptions opts;
  opts.max_body_bytes = 1 << 16;
  opts.memory_budget_bytes = 1 << 15;
  auto http = std::make_unique<corral::worker::CurlClient>(&c.loop, opts);
  corral::worker::CurlClient::Transfer t;
  t.client = http.get();
  t.max_body = opts.max_body_bytes;
  t.resp.status = 100 + data[0] % 500;
  size_t chunk = 1 + data[1] % 64;
  std::string_view in(reinterpret_cast<const char*>(data) + 2, size - 2);
  // Header lines up to the first empty line.
  while (!in.empty()) {
    size_t nl = in.find('\n');
    std::string_view line = in.substr(0, nl);
    in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
    if (line.empty()) break;
    std::string wire = std::string(line) + "\r\n";
    FUZZ_CHECK(corral::worker::on_header(wire.data(), 1, wire.size(), &t) == wire.size());
  }
  while (!in.empty()) {
    std::string piece(in.substr(0, chunk));
    in.remove_prefix(piece.size());
    size_t took = corral::worker::on_body(piece.data(), 1, piece.size(), &t);
    if (took != piece.size()) break;  // too large, or paused by the budget: curl would stop
  }
  // What the engine does with a response.
  const auto& step = c.scenario->steps[0];
  json body = json::parse(t.resp.body, nullptr, false);
  corral::scenario::ResponseView view;
  view.status = t.resp.status;
  view.headers = t.resp.headers;
  view.body = t.resp.body;
  view.json = body.is_discarded() ? nullptr : &body;
  auto held = corral::scenario::all_hold(step.expect, view);
  (void)held;
  json vars = json::object();
  for (const auto& capture : step.captures) {
    auto v = corral::scenario::capture(capture, view);
    if (v) vars[capture.name] = std::move(*v);
  }
  corral::Secrets secrets;
  secrets.add("K", "ok");
  json wire = corral::ipc::vars_to_wire(vars, secrets);
  auto back = corral::ipc::vars_from_wire(json::parse(wire.dump()), secrets);
  FUZZ_CHECK(back.is_ok());
  (void)corral::ipc::vars_for_display(wire).dump();
  http.reset();
  uv_run(&c.loop, UV_RUN_NOWAIT);  // frees the client's handles
  return 0;
}
