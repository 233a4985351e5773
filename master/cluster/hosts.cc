#include "master/cluster/hosts.h"

#include <spdlog/spdlog.h>

#include <cstdlib>

#include "shared/proc.h"

namespace corral::master::cluster {
namespace {

// The database's clock in Unix milliseconds: hosts compare heartbeats on one clock.
#define CORRAL_DB_NOW "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)"

constexpr const char* kRegister =
    "INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held) "
    "VALUES ($1, $2, " CORRAL_DB_NOW ", " CORRAL_DB_NOW ", 1, $3, $4) "
    "ON CONFLICT (id) DO UPDATE SET address = excluded.address, "
    "started_ms = excluded.started_ms, heartbeat_ms = excluded.heartbeat_ms, "
    "epoch = hosts.epoch + 1, capacity = excluded.capacity, held = excluded.held "
    "RETURNING epoch";
// Renews only the row of this registration: a newer one (the same host started again
// elsewhere) changes the epoch, and then nothing is renewed.
constexpr const char* kRenew =
    "UPDATE hosts SET heartbeat_ms = " CORRAL_DB_NOW ", address = $3, capacity = $4, held = $5 "
    "WHERE id = $1 AND epoch = $2 RETURNING epoch";
constexpr const char* kList =
    "SELECT id, address, epoch, started_ms, " CORRAL_DB_NOW " - heartbeat_ms, held, capacity "
    "FROM hosts ORDER BY id";

int64_t i64(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

}  // namespace

Hosts::Hosts(uv_loop_t* loop, std::string url, std::string label, std::string id,
             std::function<std::string()> address, std::function<Load()> load)
    : loop_(loop),
      db_(loop, std::move(url), std::move(label)),
      id_(std::move(id)),
      address_(std::move(address)),
      load_(std::move(load)),
      timer_(loop) {}

void Hosts::start() {
  timer_.start(0, kEveryMs, [this] { beat(); });
}

void Hosts::beat() {
  if (db_.waiting() > 0) return;  // the last beat's queries are still out: no pile-up
  Load l = load_();
  if (epoch_ == 0) {
    db_.query(kRegister,
              {id_, address_(), std::to_string(l.capacity), std::to_string(l.held)},
              [this](Result<PgRows> r) { registered(std::move(r)); });
  } else if (!superseded_) {
    db_.query(kRenew,
              {id_, std::to_string(epoch_), address_(), std::to_string(l.capacity),
               std::to_string(l.held)},
              [this](Result<PgRows> r) { renewed(std::move(r)); });
  }
  db_.query(kList, {}, [this](Result<PgRows> r) { listed(std::move(r)); });
}

void Hosts::registered(Result<PgRows> r) {
  if (!r || r->rows.empty()) {
    failed(r ? io_error("registering: no row came back") : r.status());
    return;
  }
  epoch_ = i64(r->rows[0][0]);
  renewed_ms_ = monotonic_ms();
  error_.clear();
  spdlog::info("cluster: this host is {} (epoch {})", id_, epoch_);
}

void Hosts::renewed(Result<PgRows> r) {
  if (!r) {
    failed(r.status());
    return;
  }
  if (r->rows.empty()) {
    superseded_ = true;
    spdlog::error("cluster: host {} registered again elsewhere (its epoch is no longer {}): "
                  "this daemon stops renewing its heartbeat",
                  id_, epoch_);
    return;
  }
  if (!error_.empty()) spdlog::info("cluster: heartbeats written again");
  error_.clear();
  renewed_ms_ = monotonic_ms();
}

void Hosts::listed(Result<PgRows> r) {
  if (!r) return;  // the heartbeat's failure is the one logged
  std::vector<HostRow> hosts;
  for (const auto& row : r->rows) {
    if (row.size() < 7) continue;
    HostRow h{row[0], row[1], i64(row[2]), i64(row[3]), i64(row[4]),
              static_cast<uint64_t>(i64(row[5])), static_cast<uint64_t>(i64(row[6])), false};
    h.dead = h.heartbeat_age_ms > kDeadAfterMs;
    hosts.push_back(std::move(h));
  }
  hosts_ = std::move(hosts);
}

void Hosts::failed(const Status& s) {
  if (error_.empty()) spdlog::error("cluster: heartbeat failed: {}", s.message());
  error_ = s.message();
}

bool Hosts::alive() const {
  return epoch_ != 0 && !superseded_ &&
         monotonic_ms() - renewed_ms_ < static_cast<uint64_t>(kDeadAfterMs);
}

nlohmann::json Hosts::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const HostRow& h : hosts_) {
    list.push_back({{"id", h.id},
                    {"address", h.address},
                    {"epoch", h.epoch},
                    {"started_at", iso8601_utc(h.started_ms)},
                    {"heartbeat_age_ms", h.heartbeat_age_ms},
                    {"held", h.held},
                    {"capacity", h.capacity},
                    {"state", h.dead ? "dead" : "alive"}});
  }
  nlohmann::json self = {{"id", id_}, {"epoch", epoch_}, {"alive", alive()},
                         {"superseded", superseded_}};
  if (!error_.empty()) self["error"] = error_;
  return {{"self", self}, {"hosts", list}};
}

}  // namespace corral::master::cluster
