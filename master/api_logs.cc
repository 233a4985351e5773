// GET /logs?lines=200&source=master: the last lines of the daemon's log files, merged in time
// order (log_view.h), for the web dashboard's log tail. (The route table is api_routes.cc.)
#include "master/daemon_impl.h"
#include "master/log_view.h"

namespace corral::master {

void Daemon::api_logs(const ApiCall& c) {
  auto q = log_query(c.req);
  if (!q) {
    c.respond.send(http::Response::error(400, q.status().message()));
    return;
  }
  c.respond.send(http::Response::json(200, read_log_tail(cfg_.home + "/logs", *q)));
}

}  // namespace corral::master
