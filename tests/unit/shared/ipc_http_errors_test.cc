// The heartbeat's HTTP error counts (shared/ipc/http_errors.h): round trip, and a malformed
// entry is refused rather than half read.
#include <catch2/catch.hpp>

#include "shared/ipc/http_errors.h"

using corral::ipc::HttpErrorCounts;
using corral::ipc::http_errors_from_json;
using corral::ipc::http_errors_to_json;
using nlohmann::json;

TEST_CASE("ipc http_errors: counts per origin survive their round trip") {
  std::vector<HttpErrorCounts> counts = {{"http://127.0.0.1:8080", 3, 1, 2, 5},
                                         {"https://api.example:443", 0, 0, 7, 0}};
  json j = http_errors_to_json(counts);
  CHECK(j["http://127.0.0.1:8080"] == json{{"connect", 3}, {"reset", 1}, {"timeout", 2},
                                           {"retried", 5}});
  auto back = http_errors_from_json(j);
  REQUIRE(back.has_value());
  CHECK(*back == counts);
}

TEST_CASE("ipc http_errors: a wrong type, a missing or extra kind, or too many origins is refused") {
  const char* bad[] = {
      R"([])",
      R"({"o": 1})",
      R"({"o": {"connect": 1, "reset": 0, "timeout": 0}})",
      R"({"o": {"connect": 1, "reset": 0, "timeout": 0, "retried": -1}})",
      R"({"o": {"connect": "1", "reset": 0, "timeout": 0, "retried": 0}})",
      R"({"o": {"connect": 1, "reset": 0, "timeout": 0, "retried": 0, "x": 0}})",
  };
  for (const char* text : bad) {
    CAPTURE(text);
    CHECK_FALSE(http_errors_from_json(json::parse(text)).has_value());
  }
  json many = json::object();
  for (int k = 0; k < 70; ++k) {
    many["o" + std::to_string(k)] = {{"connect", 0}, {"reset", 0}, {"timeout", 0}, {"retried", 0}};
  }
  CHECK_FALSE(http_errors_from_json(many).has_value());
}
