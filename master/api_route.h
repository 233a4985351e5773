// The control API's route table: each route is a method, a path pattern (see
// shared/http/router.h), the part and member function that answer it, and one line of
// documentation. Daemon::handle_api finds the route, checks the token and calls the handler;
// the 405 answer and the README's route table come from the same list (a unit test compares
// them).
#pragma once

#include <string>
#include <tuple>
#include <vector>

#include "shared/http/server.h"

namespace corral::master {

class Daemon;
class RunService;
class ScheduleService;
class LoadService;
class ClusterMember;

// The parts that answer routes: each handler is a member function of one of them. Daemon:
// probes, workers, reload, config, metrics, logs, dashboard; RunService: runs and callbacks;
// ScheduleService: schedules; LoadService: load tests; ClusterMember: GET /cluster.
using ApiParts = std::tuple<Daemon*, RunService*, ScheduleService*, LoadService*, ClusterMember*>;

// One request to a route: the request, where to answer, and the pattern's {parameters}.
struct ApiCall {
  const http::Request& req;
  const http::Responder& respond;
  std::vector<std::string> args;
};

struct ApiRoute {
  std::string method;
  std::string pattern;  // "/runs/{id}/instances/{n}"
  void (*handle)(ApiParts& parts, const ApiCall& call);  // calls the part's member function
  // Answered without the API token: the probes and the dashboard's page and files, which show
  // no run data.
  bool open = false;
  std::string doc;  // Markdown, one line: what the route answers
};

// Every route of the control API: the daemon's and each part's, in the README's order
// (api_routes.cc).
const std::vector<ApiRoute>& api_routes();

// on<&Part::handler>: a route's function that calls `handler` on the part.
template <auto Handler>
struct ApiBound;
template <class Part, void (Part::*Handler)(const ApiCall&)>
struct ApiBound<Handler> {
  static void call(ApiParts& p, const ApiCall& c) { (std::get<Part*>(p)->*Handler)(c); }
};
template <auto Handler>
constexpr auto on = &ApiBound<Handler>::call;

}  // namespace corral::master
