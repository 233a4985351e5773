// The route table's matching: literal and {parameter} segments, the first route that takes
// the method, and the methods a known path accepts (the 405 answer's Allow header).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "shared/http/router.h"

using corral::http::find_route;
using corral::http::match_path;
using Args = std::vector<std::string>;

namespace {

struct TestRoute {
  std::string method;
  std::string pattern;
  int id;
};

const std::vector<TestRoute> kRoutes = {
    {"GET", "/runs", 1},           {"POST", "/runs", 2},
    {"GET", "/runs/{id}", 3},      {"DELETE", "/runs/{id}", 4},
    {"GET", "/runs/{id}/instances/{n}", 5}, {"GET", "/workers/reload", 6},
    {"POST", "/workers/reload", 7}};

}  // namespace

TEST_CASE("router: literal segments match themselves and parameters take one segment") {
  CHECK(match_path("/runs", "/runs") == Args{});
  CHECK(match_path("/runs/{id}", "/runs/r1-c034") == Args{"r1-c034"});
  CHECK(match_path("/runs/{id}/instances/{n}", "/runs/r1/instances/7") == Args{"r1", "7"});
  CHECK_FALSE(match_path("/runs", "/run"));
  CHECK_FALSE(match_path("/runs", "/runsx"));
  CHECK_FALSE(match_path("/runs/{id}", "/runs"));
  CHECK_FALSE(match_path("/runs/{id}", "/runs/r1/instances"));
  CHECK_FALSE(match_path("/runs/{id}/instances", "/runs/r1/steps"));
  CHECK_FALSE(match_path("/health", "/"));
}

TEST_CASE("router: doubled and trailing slashes are skipped") {
  CHECK(match_path("/runs", "/runs/") == Args{});
  CHECK(match_path("/runs/{id}", "//runs//r1/") == Args{"r1"});
  CHECK(match_path("/", "/") == Args{});
  CHECK(match_path("/", "") == Args{});
}

TEST_CASE("router: finds the route for the method, else names the methods the path takes") {
  auto get = find_route(kRoutes, "GET", "/runs/r9");
  REQUIRE(get.route != nullptr);
  CHECK(get.route->id == 3);
  CHECK(get.args == Args{"r9"});
  CHECK(get.allow.empty());

  auto del = find_route(kRoutes, "DELETE", "/runs/r9");
  REQUIRE(del.route != nullptr);
  CHECK(del.route->id == 4);

  auto put = find_route(kRoutes, "PUT", "/runs/r9");
  CHECK(put.route == nullptr);
  CHECK(put.allow == "GET, HEAD, DELETE");

  auto patch = find_route(kRoutes, "PATCH", "/workers/reload");
  CHECK(patch.route == nullptr);
  CHECK(patch.allow == "GET, HEAD, POST");

  auto none = find_route(kRoutes, "GET", "/nowhere");
  CHECK(none.route == nullptr);
  CHECK(none.allow.empty());
}

TEST_CASE("router: HEAD takes the GET route of a path, and no other") {
  auto head = find_route(kRoutes, "HEAD", "/runs/r9/instances/3");
  REQUIRE(head.route != nullptr);
  CHECK(head.route->id == 5);
  CHECK(head.args == Args{"r9", "3"});

  auto post_only = find_route(std::vector<TestRoute>{{"POST", "/jobs", 8}}, "HEAD", "/jobs");
  CHECK(post_only.route == nullptr);
  CHECK(post_only.allow == "POST");
}
