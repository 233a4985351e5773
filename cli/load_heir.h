// A load test over hosts followed past its origin's death (docs/cluster.md, "Load tests over
// hosts"): the control API addresses of the cluster's hosts, read when the test starts, and the
// host that goes on as the test's origin once the one followed no longer answers.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "cli/api.h"

namespace corral::cli {

class LoadHeirs {
 public:
  // The other hosts of the cluster `api` is one of (GET /cluster), reached with `token`; none
  // when it is in no cluster, or they have no address.
  static LoadHeirs of(const Api& api, const std::string& token);
  bool empty() const { return addresses_.empty(); }
  // The host that is test `id`'s origin now, asked every second until `wait` has passed;
  // nullopt if none is by then.
  std::optional<Api> find(const std::string& id, std::chrono::milliseconds wait) const;

 private:
  std::map<std::string, std::string> addresses_;  // by host id
  std::string token_;
};

}  // namespace corral::cli
