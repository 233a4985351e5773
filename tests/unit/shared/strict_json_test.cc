// parse_strict_json: JSON read from people refuses repeated keys and says where a syntax error is.
#include <catch2/catch.hpp>

#include "shared/text/strict_json.h"

using corral::text::parse_strict_json;

namespace {

std::string error_of(std::string_view text) {
  auto r = parse_strict_json(text);
  REQUIRE_FALSE(r);
  return r.status().message();
}

}  // namespace

TEST_CASE("strict json: a document without repeated keys reads as nlohmann reads it") {
  const char* text = R"({"a": [1, {"b": 2, "c": [true, null]}], "d": {"e": "x"}, "b": 3})";
  auto r = parse_strict_json(text);
  REQUIRE(r);
  CHECK(*r == nlohmann::json::parse(text));
  CHECK(*parse_strict_json("[]") == nlohmann::json::array());
  CHECK(*parse_strict_json("7") == 7);
}

TEST_CASE("strict json: a repeated key is refused with its path") {
  CHECK(error_of(R"({"sleep": "1s", "sleep": "2s"})") == "the key \"sleep\" appears twice");
  CHECK(error_of(R"({"steps": [{"name": "a"}, {"expect": [], "name": "b", "expect": []}]})") ==
        "steps[1]: the key \"expect\" appears twice");
  CHECK(error_of(R"({"load": {"thresholds": {"errors": [], "errors": []}}})") ==
        "load.thresholds: the key \"errors\" appears twice");
  CHECK(error_of(R"({"a": [[1, 2], [3, {"x": 1, "x": 2}]]})") ==
        "a[1][1]: the key \"x\" appears twice");
  // Equal keys in different objects are not repeated.
  CHECK(parse_strict_json(R"({"a": {"x": 1}, "b": {"x": 2}, "x": 3})"));
}

TEST_CASE("strict json: a syntax error says its line and column") {
  CHECK(error_of("{\n  \"name\": \"a\"\n  \"steps\": []\n}") ==
        "line 3, column 9: syntax error while parsing object - unexpected string literal; "
        "expected '}'");
  CHECK_THAT(error_of(""), Catch::StartsWith("line 1, column 1: "));
}
