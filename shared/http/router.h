// A server's routes as one table: each route is a method, a path pattern and a handler. The
// server finds the route for a request, and when the path is known but not the method, the
// methods it does accept (the 405 answer's Allow header).
//
// A pattern is a path of segments, each literal ("runs") or a parameter ("{id}") that takes any
// one non-empty segment. Empty segments, from a doubled or trailing slash, are skipped in both
// the pattern and the path, so "/runs/" finds the route of "/runs".
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace corral::http {

// The parameters of `path` in order when it matches `pattern`, nullopt when it does not.
std::optional<std::vector<std::string>> match_path(std::string_view pattern,
                                                   std::string_view path);

// What find_route found.
template <class Route>
struct RouteMatch {
  const Route* route = nullptr;   // the route, nullptr when none takes this method and path
  std::vector<std::string> args;  // its parameters, in the pattern's order
  std::string allow;              // no route: the methods the path accepts, "GET, DELETE"
};

// The first route in `routes` (anything with `method` and `pattern` members) that takes
// `method` and `path`. A GET route takes HEAD too (RFC 9110: the same answer, which the
// connection sends without its body), and an Allow list names HEAD after GET.
template <class Route>
RouteMatch<Route> find_route(const std::vector<Route>& routes, std::string_view method,
                             std::string_view path) {
  RouteMatch<Route> found;
  for (const Route& r : routes) {
    auto args = match_path(r.pattern, path);
    if (!args) continue;
    if (r.method == method || (method == "HEAD" && r.method == "GET")) {
      found.route = &r;
      found.args = std::move(*args);
      found.allow.clear();
      return found;
    }
    if (found.allow.find(r.method) == std::string::npos) {
      found.allow += found.allow.empty() ? "" : ", ";
      found.allow += r.method == "GET" ? "GET, HEAD" : r.method;
    }
  }
  return found;
}

}  // namespace corral::http
