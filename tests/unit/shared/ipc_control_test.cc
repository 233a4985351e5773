// The control payloads (shared/ipc/control.h): every message survives the round trip with every
// field set, and a field of the wrong type, out of range, missing or unknown is a protocol
// error that names it.
#include <catch2/catch.hpp>

#include "shared/ipc/codec.h"
#include "shared/ipc/control.h"
#include "shared/ipc/protocol.h"

using namespace corral::ipc;  // NOLINT: the messages
using corral::Code;
using nlohmann::json;

namespace {

template <typename T>
T round_trip(const T& m) {
  auto back = read<T>(to_json(m));
  INFO(back.status().message());
  REQUIRE(back.is_ok());
  return *back;
}

template <typename T>
std::string error_of(const json& payload) {
  auto got = read<T>(payload);
  REQUIRE_FALSE(got.is_ok());
  CHECK(got.status().code() == Code::kProtocol);
  return got.status().message();
}

}  // namespace

TEST_CASE("ipc control: every message survives the round trip with every field set") {
  CHECK(round_trip(Hello{kProtocolVersion, 4242, 3}) == Hello{kProtocolVersion, 4242, 3});

  Welcome w;
  w.protocol = kProtocolVersion, w.slot = 1, w.heartbeat_ms = 250, w.max_memory_bytes = 1 << 30;
  w.kernel_memory_bytes = 3u << 30, w.log_max_bytes = 1000, w.log_files = 2, w.log_level = "debug";
  w.max_response_bytes = 1 << 20, w.response_memory_bytes = 2 << 20, w.http_client = "curl";
  w.http_version = "2", w.tls = {{"verify", false}}, w.max_connections_per_host = 9;
  w.secrets = {{"TOKEN", "s3cr3t"}}, w.callback_base = "http://h:1", w.callback_key = "ab";
  w.lease_until_ms = 123456;
  CHECK(round_trip(w) == w);
  // A daemon in no cluster gives no lease: the field stays out, and its absence reads as none.
  w.lease_until_ms = kNoLease;
  CHECK(to_json(w).contains("lease_until_ms") == false);
  CHECK(round_trip(w).lease_until_ms == kNoLease);

  Heartbeat b;
  b.seq = 7, b.loop_lag_ms = 1.25, b.rss_bytes = 100, b.idle_rss_bytes = 50, b.active = 3;
  b.requests = 99, b.http_errors = json::array({1}), b.limits = {{"x", 1}};
  CHECK(round_trip(b) == b);
  CHECK(to_json(Heartbeat{}).contains("limits") == false);  // absent documents stay out

  CHECK(round_trip(Stop{1500}) == Stop{1500});
  CHECK(round_trip(Leaving{"memory_soft", 12}) == Leaving{"memory_soft", 12});
  DefineRun d{"r1-aa", {{"name", "s"}}, {{"base", "x"}}, 10, 1700, 5, {{"path", "/rows"}}};
  CHECK(round_trip(d) == d);
  Start fresh{"r1-aa", 20, 30, nullptr};
  CHECK(round_trip(fresh) == fresh);
  Start resume{"r1-aa", 0, 0, {{"4", {{"step", 1}}}}};
  CHECK(round_trip(resume) == resume);
  CHECK(round_trip(Cancel{"r1-aa"}) == Cancel{"r1-aa"});
  CHECK(round_trip(Release{500}) == Release{500});
  CHECK(round_trip(Lease{987654321}) == Lease{987654321});
  CHECK(round_trip(Lease{0}) == Lease{0});
  Callback called{"r1-aa", 4, 2, false, {{"ok", true}}};
  CHECK(round_trip(called) == called);
  Callback ping{"r1-aa", 4, 2, true, nullptr};
  CHECK(round_trip(ping) == ping);
  LoadStart l{"l1-aa", {{"name", "s"}}, json::object(), {{"vus", 2}}, 1, 2, 0, 3, 250};
  CHECK(round_trip(l) == l);
  CHECK(round_trip(LoadStop{"l1-aa"}) == LoadStop{"l1-aa"});
  Handback h{{{"r1-aa", {{"3", {{"step", 0}}}}}}, true};
  CHECK(round_trip(h) == h);
}

TEST_CASE("ipc control: a field of the wrong type, missing or unknown is named") {
  CHECK(error_of<Welcome>({{"slot", 1}, {"heartbeat_ms", "1s"}}) ==
        "welcome.heartbeat_ms: expected an unsigned 64-bit integer, got \"1s\"");
  CHECK(error_of<Welcome>({{"heartbeat_ms", 1000}}) == "welcome.slot: missing");
  // A renamed field is an error, not a default: the reason typed payloads exist.
  CHECK(error_of<Welcome>({{"slot", 1}, {"heartbeat_interval_ms", 1000}}) ==
        "welcome.heartbeat_interval_ms: unknown field");
  CHECK(error_of<Welcome>({{"slot", 1}, {"http_client", "wget"}}) ==
        "welcome.http_client: expected \"lean\" or \"curl\", got \"wget\"");
  CHECK(error_of<Welcome>({{"slot", 1}, {"secrets", {{"A", 1}}}}) ==
        "welcome.secrets: expected A to be a string");
  CHECK(error_of<Welcome>({{"slot", 1}, {"callback", {{"base", "x"}, {"kye", "y"}}}}) ==
        "welcome.callback.kye: unknown field");
  CHECK(error_of<Heartbeat>({{"seq", "one"}}) ==
        "heartbeat.seq: expected an unsigned 64-bit integer, got \"one\"");
  CHECK(error_of<Heartbeat>({{"loop_lag_ms", true}}) ==
        "heartbeat.loop_lag_ms: expected a number, got true");
  CHECK(error_of<Leaving>({{"rss_bytes", 1}}) == "leaving.reason: missing");
  CHECK(error_of<Release>({{"count", -1}}) ==
        "release.count: expected an unsigned 32-bit integer, got -1");
  CHECK(error_of<Lease>(json::object()) == "lease.until_ms: missing");
  CHECK(error_of<Lease>({{"until_ms", "soon"}}) ==
        "lease.until_ms: expected an unsigned 64-bit integer, got \"soon\"");
  CHECK(error_of<Start>({{"run", "r"}, {"first", 0}, {"resume", json::object()}}) ==
        "start.resume: expected either resume or first and count, not both");
  CHECK(error_of<DefineRun>({{"run", "r"}}) == "define_run.scenario: missing");
  CHECK(error_of<Callback>({{"run", "r"}, {"index", 1}, {"step", 0}}) == "callback.body: missing");
  CHECK(error_of<LoadStart>({{"load", "l"},
                             {"scenario", json::object()},
                             {"spec", json::object()},
                             {"index", 2},
                             {"of", 2}}) == "load_start.index: expected an index below of");
  CHECK(error_of<Stop>(json::array()) == "stop: expected an object");
}

TEST_CASE("ipc control: a hand-back taken from its payload reads as read<Handback> does") {
  const Handback h{{{"r1-aa", {{"3", {{"step", 0}}}}}}, true};
  json payload = to_json(h);
  auto taken = read_handback(std::move(payload));
  REQUIRE(taken.is_ok());
  CHECK(*taken == h);
  CHECK(read_handback(json::object())->instances == json::object());
  CHECK(read_handback({{"instances", 3}}).status().message() ==
        "handback.instances: expected an object, got 3");
  CHECK(read_handback({{"instances", json::object()}, {"relased", true}}).status().message() ==
        "handback.relased: unknown field");
  CHECK(read_handback({{"instances", {{"r1-aa", json::object()}}}, {"released", 1}})
            .status()
            .message() == "handback.released: expected true or false, got 1");
}

TEST_CASE("ipc control: a hello of another protocol version says so before anything else") {
  CHECK(check_hello(to_json(Hello{kProtocolVersion, 1, 0})).is_ok());
  json other = {{"protocol", kProtocolVersion + 1}, {"features", {"x"}}};
  CHECK(check_hello(other).message() == "speaks protocol " + std::to_string(kProtocolVersion + 1) +
                                            ", master speaks " + std::to_string(kProtocolVersion));
  CHECK(check_hello({{"pid", 1}}).message() == "hello.protocol: missing");
  CHECK(check_hello({{"protocol", kProtocolVersion}, {"pid", "me"}}).message() ==
        "hello.pid: expected a 64-bit integer, got \"me\"");
}

TEST_CASE("ipc control: a start frame written as text parses to the Start it stands for") {
  Checkpoint made;
  made.step = 2, made.started_ms = 1700000000000, made.vars = {{"id", "a\"b"}};
  Checkpoint held;
  held.step = 1, held.attempts = 3, held.callback = {{"step", 1}};
  StartWriter w("r1-00aa");
  CHECK(w.count() == 0);
  w.add(7, made);
  w.add(12, held);
  CHECK(w.count() == 2);
  const Start expected{"r1-00aa", 0, 0, {{"7", to_json(made)}, {"12", to_json(held)}}};
  const std::string text = w.finish();
  CHECK(json::parse(text) == to_json(expected));
  auto back = read<Start>(json::parse(text));
  REQUIRE(back.is_ok());
  CHECK(*back == expected);
  // And framed like any other payload.
  auto framed = encode_payload(MessageType::kStart, Payload::text(text));
  auto plain = encode(MessageType::kStart, to_json(expected));
  REQUIRE(framed.is_ok());
  REQUIRE(plain.is_ok());
  std::vector<Frame> a, b;
  REQUIRE(Decoder(Sender::kWorker).feed(*framed, a).is_ok());
  REQUIRE(Decoder(Sender::kWorker).feed(*plain, b).is_ok());
  REQUIRE(a.size() == 1);
  REQUIRE(b.size() == 1);
  CHECK(a[0].payload == b[0].payload);
}
