#include "tests/support/harness_job_api.h"

#include <signal.h>

#include <boost/process.hpp>
#include <catch2/catch.hpp>

namespace bp = boost::process;

namespace corral::test {

struct JobApi::Child {
  bp::ipstream out;
  bp::child process;
};

JobApi::JobApi(int processes) : child_(std::make_unique<Child>()) {
  start(
      {CORRAL_TARGET_BINARY, "--listen", "127.0.0.1:0", "--processes", std::to_string(processes)});
}

JobApi::JobApi(const std::string& netns, const std::string& host)
    : child_(std::make_unique<Child>()) {
  // `ip netns exec` execs corral-target: the pid is corral-target's.
  start({bp::search_path("ip").string(), "netns", "exec", netns, CORRAL_TARGET_BINARY, "--listen",
         host + ":0"});
}

void JobApi::start(const std::vector<std::string>& argv) {
  child_->process =
      bp::child(argv.front(), bp::args = std::vector<std::string>(argv.begin() + 1, argv.end()),
                bp::std_out > child_->out, bp::std_err > bp::null);
  std::string line;
  REQUIRE(std::getline(child_->out, line));
  REQUIRE(line.rfind("listening on ", 0) == 0);
  const size_t at = std::string("listening on ").size();
  base_ = "http://" + line.substr(at, line.find(' ', at) - at);  // "(K processes)" follows
  port_ = std::stoi(line.substr(line.rfind(':') + 1));
}

JobApi::~JobApi() {
  if (child_->process.running()) ::kill(child_->process.id(), SIGKILL);
  child_->process.wait();
}

int JobApi::pid() const { return child_->process.id(); }

void JobApi::kill_now() {
  if (child_->process.running()) ::kill(child_->process.id(), SIGKILL);
  child_->process.wait();
}

Json JobApi::stats() const { return get("/stats"); }

std::map<int, Json> JobApi::stats_of_each(int processes) const {
  std::map<int, Json> seen;
  for (int i = 0; i < 2000 && static_cast<int>(seen.size()) < processes; ++i) {
    Json s = stats();
    seen[s["pid"].get<int>()] = s;
  }
  REQUIRE(static_cast<int>(seen.size()) == processes);
  return seen;
}

Json JobApi::get(const std::string& path) const {
  const std::string host = base_.substr(7, base_.rfind(':') - 7);  // "http://HOST:PORT"
  auto r = try_tcp_request(host, port_, "GET", path);
  REQUIRE(r);
  return r->json;
}

}  // namespace corral::test
