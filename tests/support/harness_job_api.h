// corral-target, the local job API, as a test fixture: started on an ephemeral 127.0.0.1 port
// and killed by its PID when the fixture goes away.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "tests/support/harness.h"

namespace corral::test {

class JobApi {
 public:
  // `processes` > 1: corral-target --processes K, K processes on one port, each with counts of
  // its own (stats_of_each).
  explicit JobApi(int processes = 1);  // fails the test when corral-target does not start
  // One process in network namespace `netns` (tests/support/harness_netns.h), on `host`.
  JobApi(const std::string& netns, const std::string& host);
  ~JobApi();
  JobApi(const JobApi&) = delete;
  JobApi& operator=(const JobApi&) = delete;

  // "http://127.0.0.1:PORT" (or the namespace's address), for a scenario's {{base}}.
  const std::string& base() const { return base_; }
  int port() const { return port_; }
  // The corral-target process, for tests that watch it or end it.
  int pid() const;
  void kill_now();
  // GET /stats: {"pid", "requests", "polls", "jobs", "connections", ...}.
  Json stats() const;
  // The /stats of each of `processes` processes, by pid: asked on new connections until each
  // has answered (the kernel spreads connections over them). Fails the test after 2,000 tries.
  std::map<int, Json> stats_of_each(int processes) const;
  // GET `path`'s JSON body (e.g. "/delay-stats").
  Json get(const std::string& path) const;

 private:
  struct Child;
  void start(const std::vector<std::string>& argv);
  std::unique_ptr<Child> child_;
  std::string base_;
  int port_ = 0;
};

}  // namespace corral::test
