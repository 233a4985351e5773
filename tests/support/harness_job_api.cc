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

JobApi::JobApi() : child_(std::make_unique<Child>()) {
  child_->process = bp::child(std::string(CORRAL_TARGET_BINARY), "--listen", "127.0.0.1:0",
                              bp::std_out > child_->out, bp::std_err > bp::null);
  std::string line;
  REQUIRE(std::getline(child_->out, line));
  REQUIRE(line.rfind("listening on ", 0) == 0);
  base_ = "http://" + line.substr(std::string("listening on ").size());
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

Json JobApi::get(const std::string& path) const {
  auto r = try_tcp_request("127.0.0.1", port_, "GET", path);
  REQUIRE(r);
  return r->json;
}

}  // namespace corral::test
