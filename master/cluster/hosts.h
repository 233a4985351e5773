// This daemon's place among the hosts whose journal is one PostgreSQL database
// (docs/cluster.md). At start it registers in the hosts table: its row's epoch goes up by one
// at each registration, so a daemon that was replaced can tell. Every second it renews its
// heartbeat with the instances it holds and could still take, and reads every host's row back,
// each with the age of its heartbeat by the database's clock (hosts' own clocks may differ).
// A host whose heartbeat is older than kDeadAfterMs is dead. Every query runs on the loop
// without blocking it (pg_async.h). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/cluster/pg_async.h"
#include "shared/uv/timer.h"

namespace corral::master::cluster {

struct HostRow {
  std::string id;
  std::string address;  // its control API's TCP address; "" when it has none
  int64_t epoch = 0;
  int64_t started_ms = 0;
  int64_t heartbeat_age_ms = 0;  // by the database's clock, when the table was read
  uint64_t held = 0;             // instances on its workers
  uint64_t capacity = 0;         // instances it could still take
  bool dead = false;
};

class Hosts {
 public:
  static constexpr uint64_t kEveryMs = 1000;
  static constexpr int64_t kDeadAfterMs = 5000;

  struct Load {
    uint64_t held = 0;
    uint64_t capacity = 0;
  };
  // `id`: this host's (kept in the home, so that a restart is the same host); `address`
  // gives its API's TCP address when asked; `load` its instances.
  Hosts(uv_loop_t* loop, std::string url, std::string label, std::string id,
        std::function<std::string()> address, std::function<Load()> load);

  // Registers, then heartbeats every kEveryMs. A failure is logged and tried again at the
  // next beat.
  void start();

  const std::string& id() const { return id_; }
  int64_t epoch() const { return epoch_; }  // 0 until registered
  // Whether the last heartbeat was written less than kDeadAfterMs ago.
  bool alive() const;
  // GET /cluster: this host's id and epoch, and every host's row as last read.
  nlohmann::json to_json() const;
  // Every host's row as last read (by id).
  const std::vector<HostRow>& hosts() const { return hosts_; }

 private:
  void beat();
  void registered(Result<PgRows> r);
  void renewed(Result<PgRows> r);
  void listed(Result<PgRows> r);
  void failed(const Status& s);

  uv_loop_t* loop_;
  PgAsync db_;
  std::string id_;
  std::function<std::string()> address_;
  std::function<Load()> load_;
  uv::Timer timer_;
  int64_t epoch_ = 0;
  uint64_t renewed_ms_ = 0;  // monotonic, of the last heartbeat written
  bool superseded_ = false;  // another daemon registered as this host since
  std::string error_;        // the last failure, while failing
  std::vector<HostRow> hosts_;
};

}  // namespace corral::master::cluster
