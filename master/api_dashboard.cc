// The web dashboard on the API listener: its page and files, compiled into the binary
// (master/dashboard/).
//   GET /            index.html
//   GET /ui/<file>   the dashboard's scripts and styles
// The page and its files hold no data, so they answer without the API token (a browser cannot
// send one when it opens a page); the page asks for the token when a data call answers 401.
// (The route table is api_routes.cc.)
#include "master/daemon_impl.h"
#include "master/dashboard/assets.h"

namespace corral::master {

void Daemon::api_dashboard_page(const ApiCall& c) {
  const EmbeddedFile* page = dashboard::find_file("index.html");
  if (page == nullptr) {  // the build embeds it: only a broken build gets here
    c.respond.send(http::Response::error(500, "the dashboard was not built into this binary"));
    return;
  }
  c.respond.send(dashboard::file_response(*page, c.req.header("if-none-match")));
}

void Daemon::api_dashboard_file(const ApiCall& c) {
  const EmbeddedFile* file = dashboard::find_file(c.args.at(0));
  if (file == nullptr) {
    c.respond.send(http::Response::error(404, "no dashboard file \"" + c.args[0] + "\""));
    return;
  }
  c.respond.send(dashboard::file_response(*file, c.req.header("if-none-match")));
}

}  // namespace corral::master
