#include "tests/support/harness_netns.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

namespace corral::test {
namespace {

std::string netns_tool() { return std::string(CORRAL_SOURCE_DIR) + "/tools/netns-cluster"; }

}  // namespace

std::string Netns::unavailable() {
  const std::string cmd = netns_tool() + " check 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return "cannot run " + netns_tool();
  std::string why;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p) != nullptr) why += buf;
  const int rc = ::pclose(p);
  while (!why.empty() && why.back() == '\n') why.pop_back();
  if (rc == 0) return "";
  return why.empty() ? netns_tool() + " check failed" : why;
}

// The net number comes from the pid; one another test program holds is passed over (tests
// run side by side).
Netns::Netns(std::vector<std::string> names) : names_(std::move(names)) {
  ::setenv("CORRAL_NETNS_OWNER", std::to_string(::getpid()).c_str(), 1);
  std::string list;
  for (const std::string& n : names_) list += " " + n;
  for (int i = 0; i < 150; ++i) {
    net_ = 100 + static_cast<int>((::getpid() + i) % 150);
    const std::string cmd = netns_tool() + " up " + std::to_string(net_) + list;
    INFO(cmd);
    const int rc = std::system(cmd.c_str());
    if (rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 3) continue;  // in use
    REQUIRE(rc == 0);
    return;
  }
  FAIL("every net number from 100 to 249 is in use");
}

Netns::~Netns() {
  const std::string cmd = netns_tool() + " down " + std::to_string(net_) + " >/dev/null 2>&1";
  (void)std::system(cmd.c_str());
}

std::string Netns::addr(const std::string& name) const {
  auto at = std::find(names_.begin(), names_.end(), name);
  REQUIRE(at != names_.end());
  return "198.18." + std::to_string(net_) + "." + std::to_string(2 + (at - names_.begin()));
}

std::string Netns::ns(const std::string& name) const {
  return "crl" + std::to_string(net_) + "-" + name;
}

void Netns::cut(const std::string& name) { tool("cut " + std::to_string(net_) + " " + name); }
void Netns::mend(const std::string& name) { tool("mend " + std::to_string(net_) + " " + name); }
void Netns::split(const std::string& a, const std::string& b) {
  tool("split " + std::to_string(net_) + " " + a + " " + b);
}
void Netns::join(const std::string& a, const std::string& b) {
  tool("join " + std::to_string(net_) + " " + a + " " + b);
}

void Netns::tool(const std::string& args) const {
  const std::string cmd = netns_tool() + " " + args;
  INFO(cmd);
  REQUIRE(std::system(cmd.c_str()) == 0);
}

}  // namespace corral::test
