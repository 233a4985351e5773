// Hosts on a real network, for the cluster's tests (tools/netns-cluster): a bridge and a
// network namespace per name on it, each with its own address in 198.18.K.0/24, deleted when
// this goes away. The test's own namespace is 198.18.K.1 on the bridge, so it reaches every
// host by address. Partitions are made by taking a host's link down (cut) or by blackhole
// routes between two hosts (split); its processes keep running.
#pragma once

#include <string>
#include <vector>

namespace corral::test {

class Netns {
 public:
  // Why this machine cannot make network namespaces (not root, no veth); "" when it can. A test
  // that needs them prints "SKIPPED: <why>" and returns: ctest counts it as skipped.
  static std::string unavailable();

  // Makes the bridge and a namespace per name ("db", "h1", ...); fails the test when it cannot.
  // The net number K is chosen from the test program's pid, so that two programs do not meet.
  explicit Netns(std::vector<std::string> names);
  ~Netns();
  Netns(const Netns&) = delete;
  Netns& operator=(const Netns&) = delete;

  std::string addr(const std::string& name) const;         // "198.18.K.N"
  std::string ns(const std::string& name) const;           // "crlK-name", for `ip netns exec`
  void cut(const std::string& name);                       // its link goes down
  void mend(const std::string& name);                      // and up again
  void split(const std::string& a, const std::string& b);  // a and b stop reaching each other
  void join(const std::string& a, const std::string& b);

 private:
  void tool(const std::string& args) const;
  int net_ = 0;
  std::vector<std::string> names_;
};

}  // namespace corral::test
