// The control API's route table: every route reachable, none shadowed, and the README's
// "Control API" table is exactly this list.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "master/api_route.h"
#include "shared/http/router.h"

using corral::master::ApiRoute;

namespace {

// The README's table as the route list makes it.
std::string routes_markdown() {
  std::string out = "| route | |\n|---|---|\n";
  for (const ApiRoute& r : corral::master::api_routes()) {
    std::string doc = r.open ? "no token needed; " + r.doc : r.doc;
    std::string cell;
    for (char ch : doc) cell += ch == '|' ? std::string("\\|") : std::string(1, ch);
    out += "| `" + r.method + " " + r.pattern + "` | " + cell + " |\n";
  }
  return out;
}

constexpr const char* kReadme = CORRAL_SOURCE_DIR "/README.md";
const std::string kBegin = "<!-- routes: begin -->\n";
const std::string kEnd = "<!-- routes: end -->";

std::string read_readme() {
  std::ifstream in(kReadme);
  std::stringstream whole;
  whole << in.rdbuf();
  return whole.str();
}

// The README's lines between its route-table markers. With CORRAL_WRITE_ROUTES=1 in the
// environment, writes the table there first.
std::string readme_routes() {
  std::string text = read_readme();
  size_t b = text.find(kBegin);
  size_t e = text.find(kEnd);
  if (b == std::string::npos || e == std::string::npos || e < b) return "(no route markers)";
  b += kBegin.size();
  if (const char* w = std::getenv("CORRAL_WRITE_ROUTES"); w != nullptr && std::string(w) == "1") {
    text.replace(b, e - b, routes_markdown());
    std::ofstream(kReadme) << text;
    return routes_markdown();
  }
  return text.substr(b, e - b);
}

}  // namespace

TEST_CASE("control API: the README lists every route") {
  INFO("README.md's route table differs from the route list in master/api_routes.cc; run the "
       "unit tests with CORRAL_WRITE_ROUTES=1 to write it");
  CHECK(readme_routes() == routes_markdown());
}

TEST_CASE("control API: each route is reachable and has a handler and a line of docs") {
  std::set<std::string> seen;
  for (const ApiRoute& r : corral::master::api_routes()) {
    INFO(r.method << " " << r.pattern);
    CHECK(r.handle != nullptr);
    CHECK_FALSE(r.doc.empty());
    CHECK(seen.insert(r.method + " " + r.pattern).second);
    // The path the pattern describes finds this very route, not an earlier one.
    std::string path = r.pattern;
    for (size_t at; (at = path.find('{')) != std::string::npos;) {
      path.replace(at, path.find('}', at) - at + 1, "x1");
    }
    auto found = corral::http::find_route(corral::master::api_routes(), r.method, path);
    CHECK(found.route == &r);
  }
}

TEST_CASE("control API: only the probes, the dashboard's page and files, and callbacks answer without "
          "the token") {
  std::set<std::string> open;
  for (const ApiRoute& r : corral::master::api_routes()) {
    if (r.open) open.insert(r.method + " " + r.pattern);
  }
  // A callback's token in its URL is its credential (shared/callback/token.h).
  CHECK(open == std::set<std::string>{"GET /health", "GET /latency", "GET /", "GET /ui/{file}",
                                      "POST /callbacks/{token}",
                                      "POST /callbacks/{token}/heartbeat"});
}
