// `limits`: the forms it accepts (origins normalized, rates per second, minute or hour), its
// errors (each naming the field at fault), its config-file form, and a scenario's limits on
// templated origins, expanded per run.
#include "config/limits.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <string>

#include "config/config.h"
#include "config/scenario/parse.h"

namespace corral::config {
namespace {

using nlohmann::json;

std::string error_of(const char* text, bool templates = false) {
  Result<TargetLimits> l = parse_limits(json::parse(text), "limits", templates);
  return l ? "(no error)" : l.status().message();
}

TEST_CASE("limits: origins, rates and bursts") {
  auto l = parse_limits(json::parse(R"({
    "http://Mail.Internal": {"max_in_flight": 20, "rate": "600/m", "burst": 10},
    "https://api.example.com:8443": {"rate": 2.5},
    "http://[::1]:9000": {"max_in_flight": 1}})"),
                        "limits");
  REQUIRE(l);
  REQUIRE(l->size() == 3);
  const TargetLimit* mail = nullptr;
  for (const TargetLimit& t : *l) {
    if (t.origin == "http://mail.internal:80") mail = &t;
  }
  REQUIRE(mail != nullptr);
  CHECK(mail->max_in_flight == 20);
  CHECK(mail->rate == 10);
  CHECK(mail->burst == 10);
  CHECK(parse_rate(json("3600/h")).value() == 1);
  CHECK(parse_rate(json("50/s")).value() == 50);
  CHECK(parse_rate(json(0.5)).value() == 0.5);
  // The config form reads back the same (keyed by the normalized origins, so in their order).
  auto by_origin = [](TargetLimits v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.origin < b.origin; });
    return v;
  };
  CHECK(by_origin(parse_limits(limits_to_json(*l), "limits").value()) == by_origin(*l));
}

TEST_CASE("limits: errors name the field") {
  CHECK(error_of(R"([1])") == "limits: expected an object of origins, like {\"http://host:port\": "
                              "{\"max_in_flight\": 10}}, got [1]");
  CHECK(error_of(R"({"http://a/x": {"rate": 1}})") ==
        "limits[\"http://a/x\"]: expected an origin like \"http://host:port\" (no path), got "
        "\"http://a/x\"");
  CHECK(error_of(R"({"ftp://a": {"rate": 1}})").find("expected an origin") != std::string::npos);
  CHECK(error_of(R"({"http://a": {}})") == "limits[\"http://a\"]: expected max_in_flight, rate or both");
  CHECK(error_of(R"({"http://a": {"max_in_flight": 0}})") ==
        "limits[\"http://a\"].max_in_flight: expected a whole number from 1 to 1000000, got 0");
  CHECK(error_of(R"({"http://a": {"rate": "5/d"}})") ==
        "limits[\"http://a\"].rate: expected a rate like \"50/s\", \"600/m\" or \"1000/h\", got \"5/d\"");
  CHECK(error_of(R"({"http://a": {"rate": "0/s"}})") ==
        "limits[\"http://a\"].rate: must be between 1/h and 1000000/s, got \"0/s\"");
  CHECK(error_of(R"({"http://a": {"max_in_flight": 2, "burst": 3}})") ==
        "limits[\"http://a\"].burst: needs a rate");
  CHECK(error_of(R"({"http://a": {"max_in_flight": 2, "speed": 3}})") ==
        "limits[\"http://a\"].speed: unknown field (known: max_in_flight, rate, burst)");
  CHECK(error_of(R"({"http://a": {"rate": 1}, "http://A:80": {"rate": 2}})")
            .find("names http://a:80 a second time") != std::string::npos);
  // Templates only where they may be.
  CHECK(error_of(R"({"{{base}}": {"rate": 1}})").find("expected an origin") != std::string::npos);
  CHECK(error_of(R"({"{{base}}": {"rate": 1}})", true) == "(no error)");
}

TEST_CASE("limits: in the daemon's config") {
  Config cfg = defaults();
  apply_json(cfg, json::parse(R"({"limits": {"http://a:81": {"max_in_flight": 3}}})"));
  REQUIRE(cfg.limits.size() == 1);
  CHECK(cfg.limits[0].origin == "http://a:81");
  CHECK(to_json(cfg)["limits"] == json::parse(R"({"http://a:81": {"max_in_flight": 3}})"));
  CHECK_THROWS_WITH(apply_json(cfg, json::parse(R"({"limits": {"http://a": {"rate": "x"}}})")),
                    Catch::Contains("limits[\"http://a\"].rate: expected a rate"));
}

TEST_CASE("limits: a scenario's limits on templated origins, expanded per run") {
  json doc = json::parse(R"({"name": "s", "vars": {"base": "http://h:1/api"},
    "limits": {"{{base}}": {"max_in_flight": 2}, "http://other": {"rate": "1/s"}},
    "steps": [{"request": {"url": "{{base}}/x"}, "capture": {"id": {"json": "/id"}}}]})");
  auto s = scenario::parse_scenario(doc, std::set<std::string>{});
  REQUIRE(s);
  auto l = scenario::run_limits(**s, json::object());
  REQUIRE(l);
  REQUIRE(l->size() == 2);
  // (In the order of their keys: "http://other" before "{{base}}".)
  CHECK((*l)[0].origin == "http://other:80");
  CHECK((*l)[1].origin == "http://h:1");
  CHECK((*l)[1].max_in_flight == 2);
  l = scenario::run_limits(**s, {{"base", "https://B:443/v2"}});
  CHECK((*l)[1].origin == "https://b:443");
  l = scenario::run_limits(**s, {{"base", "nope"}});
  REQUIRE_FALSE(l);
  CHECK(l.status().message() == "limits[\"{{base}}\"]: expected an http(s) URL, got \"nope\"");
  l = scenario::run_limits(**s, {{"base", "http://other"}});
  REQUIRE_FALSE(l);
  CHECK(l.status().message().find("a second time") != std::string::npos);

  // Only what is known per run: no captures, instance numbers or data rows.
  doc["limits"] = {{"{{id}}", {{"rate", 1}}}};
  CHECK(scenario::parse_scenario(doc, std::set<std::string>{}).status().message().find("unknown variable") !=
        std::string::npos);
  doc["limits"] = {{"http://h-{{instance}}", {{"rate", 1}}}};
  CHECK(scenario::parse_scenario(doc, std::set<std::string>{}).status().message() ==
        "limits[\"http://h-{{instance}}\"]: an origin may use the run's variables only, as in "
        "\"{{base}}\"");
  doc["limits"] = {{"{{row.host}}", {{"rate", 1}}}};
  CHECK(scenario::parse_scenario(doc, std::set<std::string>{"row.host"}).status().message().find("run's variables only") !=
        std::string::npos);
}

}  // namespace
}  // namespace corral::config
