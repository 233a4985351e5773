// Per-target limits on the wire: shares and uses round-trip, and payloads of the wrong shape are
// protocol errors, never a crash.
#include "shared/ipc/limits.h"

#include <catch2/catch.hpp>

namespace corral::ipc {
namespace {

using nlohmann::json;

TEST_CASE("ipc limits: shares and uses round-trip") {
  LimitShares shares{7, {{{"r1", "http://a:80"}, 3u, std::nullopt, 1},
                         {{"", "https://b:443"}, std::nullopt, 12.5, 2.5}}};
  auto back = limit_shares_from_json(to_json(shares));
  REQUIRE(back);
  CHECK(back->version == 7);
  CHECK(back->shares == shares.shares);
  CHECK_FALSE(to_json(shares)["shares"][0].contains("rate"));

  LimitUses uses{7, {{{"", "http://a:80"}, 1, 2, 3, 4}}};
  auto got = limit_uses_from_json(to_json(uses));
  REQUIRE(got);
  CHECK(got->version == 7);
  CHECK(got->use == uses.use);
}

TEST_CASE("ipc limits: payloads of the wrong shape are refused") {
  const char* bad_shares[] = {
      R"([])",
      R"({"shares": []})",
      R"({"version": 1})",
      R"({"version": 1, "shares": [1]})",
      R"({"version": 1, "shares": [{"run": "", "burst": 1}]})",
      R"({"version": 1, "shares": [{"run": "", "origin": "", "burst": 1}]})",
      R"({"version": 1, "shares": [{"run": "", "origin": "http://a:80"}]})",
      R"({"version": 1, "shares": [{"run": "", "origin": "http://a:80", "burst": -1}]})",
      R"({"version": 1, "shares": [{"run": "", "origin": "http://a:80", "burst": 1, "rate": "x"}]})",
      R"({"version": 1, "shares": [{"run": "", "origin": "http://a:80", "burst": 1,
          "max_in_flight": 5000000000}]})",
      R"({"version": -1, "shares": []})",
  };
  for (const char* text : bad_shares) {
    INFO(text);
    CHECK_FALSE(limit_shares_from_json(json::parse(text)));
  }
  const char* bad_uses[] = {
      R"({"version": 1, "use": [{"run": "", "origin": "http://a:80"}]})",
      R"({"version": 1, "use": [{"run": "", "origin": "http://a:80", "in_flight": -1,
          "waiting": 0, "started": 0, "throttled": 0}]})",
      R"({"version": 1, "use": {}})",
  };
  for (const char* text : bad_uses) {
    INFO(text);
    CHECK_FALSE(limit_uses_from_json(json::parse(text)));
  }
}

}  // namespace
}  // namespace corral::ipc
