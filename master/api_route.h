// The control API's route table: each route is a method, a path pattern (see
// shared/http/router.h), the Daemon member that answers it and one line of documentation.
// Daemon::handle_api finds the route, checks the token and calls the handler; the 405 answer
// and the README's route table come from the same list (a unit test compares them).
#pragma once

#include <string>
#include <vector>

#include "shared/http/server.h"

namespace corral::master {

class Daemon;

// One request to a route: the request, where to answer, and the pattern's {parameters}.
struct ApiCall {
  const http::Request& req;
  const http::Responder& respond;
  std::vector<std::string> args;
};

struct ApiRoute {
  std::string method;
  std::string pattern;  // "/runs/{id}/instances/{n}"
  void (Daemon::*handle)(const ApiCall& call);
  // Answered without the API token: the probes and the dashboard's page and files, which show
  // no run data.
  bool open = false;
  std::string doc;  // Markdown, one line: what the route answers
};

}  // namespace corral::master
