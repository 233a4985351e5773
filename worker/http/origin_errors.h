// Connection errors per origin, as a client counts them for /metrics. At most kMaxOrigins
// origins are named; a scenario that reaches more (a URL per instance, say) counts the rest
// under "other", so the table stays small whatever the scenario does.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shared/ipc/http_errors.h"
#include "worker/http/client.h"

namespace corral::worker {

class OriginErrorTable {
 public:
  static constexpr size_t kMaxOrigins = ipc::kMaxHttpErrorOrigins;
  enum class Kind { kConnect, kReset, kTimeout, kRetried };

  void count(const std::string& origin, Kind kind) {
    auto it = table_.find(origin);
    if (it == table_.end()) {
      it = table_.size() < kMaxOrigins ? table_.emplace(origin, OriginErrors{}).first
                                       : table_.emplace("other", OriginErrors{}).first;
    }
    OriginErrors& e = it->second;
    switch (kind) {
      case Kind::kConnect: ++e.connect; break;
      case Kind::kReset: ++e.reset; break;
      case Kind::kTimeout: ++e.timeout; break;
      case Kind::kRetried: ++e.retried; break;
    }
  }
  std::vector<std::pair<std::string, OriginErrors>> snapshot() const {
    return {table_.begin(), table_.end()};
  }

 private:
  std::map<std::string, OriginErrors> table_;
};

}  // namespace corral::worker
