// Exporting requests' spans over OTLP/HTTP JSON: the encoding, the endpoint's URL, and a
// queue that batches, holds one POST in flight, and drops and counts what it cannot hold.
#include <catch2/catch.hpp>

#include <uv.h>

#include <nlohmann/json.hpp>

#include "shared/proc.h"
#include "shared/trace_context.h"
#include "worker/otlp/span_exporter.h"

using corral::parse_traceparent;
using corral::TraceId;
using corral::worker::HttpClient;
using corral::worker::HttpRequest;
using corral::worker::HttpResponse;
using corral::worker::otlp::ClientSpan;
using corral::worker::otlp::encode_json;
using corral::worker::otlp::SpanExporter;
using corral::worker::otlp::traces_url;
using nlohmann::json;

namespace {

// Keeps each request and its callback; the test answers them.
class HeldClient final : public HttpClient {
 public:
  struct Sent {
    HttpRequest req;
    Done done;
  };
  std::vector<Sent> sent;
  void send(HttpRequest req, Done done) override {
    sent.push_back({std::move(req), std::move(done)});
  }
  void send_lazy(Make make, Done done) override {
    if (auto req = make()) send(std::move(*req), std::move(done));
  }
  size_t in_flight() const override { return sent.size(); }
  uint64_t completed() const override { return 0; }
  uint64_t body_bytes() const override { return 0; }
  // Answers the i-th request with `status`; returns how many spans it carried.
  size_t answer(size_t i, int status) {
    const size_t n =
        json::parse(sent[i].req.body)["resourceSpans"][0]["scopeSpans"][0]["spans"].size();
    HttpResponse resp;
    resp.status = status;
    if (status == 0) resp.error = "connect failed: refused";
    sent[i].done(std::move(resp));
    return n;
  }
};

ClientSpan span(uint64_t n, int status = 200) {
  ClientSpan s;
  s.trace = {0x0af7651916cd43ddULL, 0x8448eb211c80319cULL + n};
  s.span = 0xb7ad6b7169203331ULL + n;
  s.name = "poll";
  s.method = "GET";
  s.url = "http://127.0.0.1:8080/jobs/" + std::to_string(n);
  s.run = "r1-abcd";
  s.instance = static_cast<uint32_t>(n);
  s.start_ns = 1'800'000'000'000'000'000 + static_cast<int64_t>(n);
  s.end_ns = s.start_ns + 2'500'000;
  s.status = status;
  s.protocol = "HTTP/1.1";
  return s;
}

// {key: value} of an OTLP attribute list.
json attrs(const json& list) {
  json out = json::object();
  for (const json& a : list) out[a["key"].get<std::string>()] = a["value"];
  return out;
}

}  // namespace

TEST_CASE("otlp: a span in OTLP's JSON encoding") {
  ClientSpan failed = span(1, 0);
  failed.error = "connect failed: refused";
  failed.protocol = "";
  ClientSpan refused = span(2, 503);
  refused.protocol = "HTTP/2";
  const json doc = json::parse(encode_json({span(0), failed, refused}, "runner-7"));
  const json& rs = doc["resourceSpans"][0];
  CHECK(attrs(rs["resource"]["attributes"])["service.name"]["stringValue"] == "corral");
  CHECK(attrs(rs["resource"]["attributes"])["host.name"]["stringValue"] == "runner-7");
  CHECK(rs["scopeSpans"][0]["scope"]["name"] == "corral");
  const json& spans = rs["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 3);

  const json& ok = spans[0];
  CHECK(ok["traceId"] == "0af7651916cd43dd8448eb211c80319c");  // hex, as OTLP/JSON wants
  CHECK(ok["spanId"] == "b7ad6b7169203331");
  CHECK(ok["name"] == "poll");
  CHECK(ok["kind"] == 3);  // client
  CHECK(ok["startTimeUnixNano"] == "1800000000000000000");
  CHECK(ok["endTimeUnixNano"] == "1800000000002500000");
  CHECK_FALSE(ok.contains("status"));  // unset: a success
  const json a = attrs(ok["attributes"]);
  CHECK(a["http.request.method"]["stringValue"] == "GET");
  CHECK(a["url.full"]["stringValue"] == "http://127.0.0.1:8080/jobs/0");
  CHECK(a["http.response.status_code"]["intValue"] == "200");
  CHECK(a["corral.run"]["stringValue"] == "r1-abcd");
  CHECK(a["corral.instance"]["intValue"] == "0");
  CHECK(a["network.protocol.version"]["stringValue"] == "1.1");

  CHECK(spans[1]["status"]["code"] == 2);
  CHECK(spans[1]["status"]["message"] == "connect failed: refused");
  CHECK(attrs(spans[1]["attributes"])["error.type"]["stringValue"] == "connect failed: refused");
  CHECK_FALSE(attrs(spans[1]["attributes"]).contains("http.response.status_code"));
  CHECK(spans[2]["status"]["code"] == 2);
  CHECK(attrs(spans[2]["attributes"])["error.type"]["stringValue"] == "503");
  CHECK(attrs(spans[2]["attributes"])["network.protocol.version"]["stringValue"] == "2");
}

TEST_CASE("otlp: names, URLs and errors are escaped, and bytes that are not UTF-8 replaced") {
  ClientSpan odd = span(1, 0);
  odd.name = "say \"hi\"\\ \x01 caf\xc3\xa9";
  odd.url = "http://127.0.0.1/\xff";
  odd.error = "line\nbreak";
  const json doc = json::parse(encode_json({odd}, ""));
  const json& s = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  CHECK(s["name"] == "say \"hi\"\\ \x01 caf\xc3\xa9");
  CHECK(attrs(s["attributes"])["url.full"]["stringValue"] == "http://127.0.0.1/\xef\xbf\xbd");
  CHECK(s["status"]["message"] == "line\nbreak");
  CHECK_FALSE(attrs(doc["resourceSpans"][0]["resource"]["attributes"]).contains("host.name"));
  CHECK(json::parse(encode_json({}, "h"))["resourceSpans"][0]["scopeSpans"][0]["spans"] ==
        json::array());
}

TEST_CASE("otlp: an endpoint given as an origin posts to /v1/traces") {
  CHECK(traces_url("http://127.0.0.1:4318") == "http://127.0.0.1:4318/v1/traces");
  CHECK(traces_url("http://127.0.0.1:4318/") == "http://127.0.0.1:4318/v1/traces");
  CHECK(traces_url("https://otel.example/custom/traces") == "https://otel.example/custom/traces");
}

TEST_CASE("otlp: a traceparent read back, and values that are none") {
  auto tp = parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
  REQUIRE(tp);
  CHECK(tp->trace.hi == 0x0af7651916cd43ddULL);
  CHECK(tp->trace.lo == 0x8448eb211c80319cULL);
  CHECK(tp->span == 0xb7ad6b7169203331ULL);
  CHECK(parse_traceparent("01-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-00-extra"));
  CHECK_FALSE(parse_traceparent(""));
  CHECK_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0"));
  CHECK_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x"));
  CHECK_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01"));
  CHECK_FALSE(parse_traceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01"));
  CHECK_FALSE(parse_traceparent("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));
  CHECK_FALSE(parse_traceparent("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
}

TEST_CASE("otlp: full batches go at once, one POST in flight, a bounded queue") {
  uv_loop_t loop;
  uv_loop_init(&loop);
  HeldClient client;
  {
    SpanExporter out(&loop, client);
    const std::string url = "http://127.0.0.1:4318/v1/traces";
    for (uint64_t i = 0; i < corral::worker::otlp::kBatch; ++i) out.add(url, span(i));
    REQUIRE(client.sent.size() == 1);  // a full batch does not wait for the timer
    CHECK(client.sent[0].req.method == "POST");
    CHECK(client.sent[0].req.url == url);
    CHECK(client.sent[0].req.headers == std::vector<std::string>{"Content-Type: application/json"});

    // While it is in flight, the queue fills to its bound; then spans are dropped and counted.
    for (uint64_t i = 0; i < corral::worker::otlp::kMaxQueued + 10; ++i) out.add(url, span(i));
    CHECK(client.sent.size() == 1);
    CHECK(out.counts().dropped == 10);

    // A failed POST loses its batch; the next full one goes as soon as the first ends.
    CHECK(client.answer(0, 500) == corral::worker::otlp::kBatch);
    CHECK(out.counts().lost == corral::worker::otlp::kBatch);
    REQUIRE(client.sent.size() == 2);
    CHECK(client.answer(1, 200) == corral::worker::otlp::kBatch);
    CHECK(out.counts().sent == corral::worker::otlp::kBatch);
    REQUIRE(client.sent.size() == 3);
    CHECK(client.answer(2, 0) == corral::worker::otlp::kBatch);  // no answer at all: lost too
    CHECK(out.counts().lost == 2 * corral::worker::otlp::kBatch);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}

TEST_CASE("otlp: a batch that is not full goes within a second") {
  uv_loop_t loop;
  uv_loop_init(&loop);
  HeldClient client;
  {
    SpanExporter out(&loop, client);
    out.add("http://127.0.0.1:4318/v1/traces", span(1));
    out.add("http://127.0.0.1:4318/v1/traces", span(2));
    out.add("http://127.0.0.1:9999/v1/traces", span(3));  // another collector, its own queue
    CHECK(client.sent.empty());
    // The exporter's timer does not keep the loop alive on its own; this one does.
    uv_timer_t keep;
    uv_timer_init(&loop, &keep);
    uv_timer_start(
        &keep, [](uv_timer_t*) {}, 3000, 0);
    const uint64_t deadline = corral::monotonic_ms() + 3000;
    while (client.sent.size() < 2 && corral::monotonic_ms() < deadline) {
      uv_run(&loop, UV_RUN_ONCE);
    }
    uv_close(reinterpret_cast<uv_handle_t*>(&keep), nullptr);
    REQUIRE(client.sent.size() == 2);
    CHECK(client.answer(0, 200) + client.answer(1, 200) == 3);
    CHECK(out.counts().sent == 3);
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&loop) == 0);
}
