// Variables on the wire: bytes that are not UTF-8 and secrets' values survive the trip from a
// worker to the master and back, and neither shows where people look.
#include <catch2/catch.hpp>

#include "shared/ipc/codec.h"
#include "shared/ipc/vars.h"
#include "shared/text/utf8.h"

using corral::Secrets;
using corral::ipc::vars_for_display;
using corral::ipc::vars_from_wire;
using corral::ipc::vars_to_wire;
using nlohmann::json;

namespace {

const std::string kBytes("\xff\xfe raw \xc3", 8);

Secrets some_secrets() {
  Secrets s;
  s.add("API_KEY", "k-123456");
  s.add("PASSWORD", "hunter2");
  return s;
}

}  // namespace

TEST_CASE("vars: a text that is not UTF-8 travels as hex and comes back as the same bytes") {
  Secrets none;
  json vars = {{"raw", kBytes}, {"job", "j-1"}, {"n", 3}};
  json wire = vars_to_wire(vars, none);
  CHECK(wire == json{{"job", "j-1"}, {"n", 3}, {"$bytes", {{"raw", "fffe2072617720c3"}}}});
  // The wire form is valid JSON text, so it fits a frame and a journal row.
  CHECK(corral::text::is_utf8(wire.dump()));
  auto back = vars_from_wire(json::parse(wire.dump()), none);
  REQUIRE(back.is_ok());
  CHECK(*back == vars);
}

TEST_CASE("vars: secrets are masked on the wire and restored for the same worker") {
  Secrets secrets = some_secrets();
  json vars = {{"echo", "user=bob&pass=hunter2&key=k-123456"},
               {"obj", {{"token", "k-123456"}, {"n", 1}}},
               {"raw", std::string("\xff") + "hunter2"},
               {"plain", "nothing here"}};
  json wire = vars_to_wire(vars, secrets);
  std::string text = wire.dump();
  CHECK(text.find("hunter2") == std::string::npos);
  CHECK(text.find("k-123456") == std::string::npos);
  CHECK(wire["echo"] == "user=bob&pass={{secret.PASSWORD}}&key={{secret.API_KEY}}");
  CHECK(wire["$secrets"]["echo"] == json{"PASSWORD", "API_KEY"});
  auto back = vars_from_wire(wire, secrets);
  REQUIRE(back.is_ok());
  CHECK(*back == vars);
}

TEST_CASE("vars: a marker in a server's text is not turned into a secret on the way back") {
  Secrets secrets = some_secrets();
  // The server sent the marker text itself; no secret was in the value, so none is restored.
  json vars = {{"echo", "{{secret.PASSWORD}}"}};
  json wire = vars_to_wire(vars, secrets);
  CHECK_FALSE(wire.contains("$secrets"));
  CHECK(*vars_from_wire(wire, secrets) == vars);
}

TEST_CASE("vars: the display form hides secrets and shows bytes as U+FFFD") {
  Secrets secrets = some_secrets();
  json vars = {{"echo", "pass=hunter2;"}, {"raw", std::string("a\xff") + "b"}, {"n", 1}};
  json shown = vars_for_display(vars_to_wire(vars, secrets));
  CHECK(shown == json{{"echo", "pass=***;"},
                      {"raw",
                       "a\xef\xbf\xbd"
                       "b"},
                      {"n", 1}});
}

TEST_CASE("vars: malformed reserved keys are protocol errors") {
  Secrets none;
  CHECK_FALSE(vars_from_wire(json{{"$bytes", "x"}}, none).is_ok());
  CHECK_FALSE(vars_from_wire(json{{"$bytes", {{"raw", "zz"}}}}, none).is_ok());
  CHECK_FALSE(vars_from_wire(json{{"$bytes", {{"raw", "abc"}}}}, none).is_ok());
  CHECK_FALSE(vars_from_wire(json{{"$secrets", {{"x", "API_KEY"}}}}, none).is_ok());
  CHECK_FALSE(vars_from_wire(json::array(), none).is_ok());
  CHECK(vars_from_wire(json(), none)->empty());
}

TEST_CASE("ipc codec: a payload text that is not UTF-8 is sent with U+FFFD, never thrown") {
  auto frame = corral::ipc::encode(corral::ipc::MessageType::kEvents,
                                   {{"events", json::array({{{"reason", kBytes}}})}});
  REQUIRE(frame.is_ok());
  CHECK(corral::text::is_utf8(frame->substr(5)));
}
