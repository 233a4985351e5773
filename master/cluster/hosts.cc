#include "master/cluster/hosts.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>

#include "shared/proc.h"

namespace corral::master::cluster {
namespace {

// clang-format off
// Registers (the epoch goes up by one) and releases whatever the host's previous lives held.
constexpr const char* kRegister =
    "WITH me AS (INSERT INTO hosts (id, address, started_ms, heartbeat_ms, epoch, capacity, held, "
    "dead_after_ms) VALUES ($1, $2, " CORRAL_DB_NOW ", " CORRAL_DB_NOW ", 1, $3, $4, $5) "
    "ON CONFLICT (id) DO UPDATE SET address = excluded.address, "
    "started_ms = excluded.started_ms, heartbeat_ms = excluded.heartbeat_ms, "
    "epoch = hosts.epoch + 1, capacity = excluded.capacity, held = excluded.held, fenced_ms = 0, "
    "dead_after_ms = excluded.dead_after_ms RETURNING epoch), "
    "freed AS (UPDATE claims SET host = '' WHERE host = $1 AND epoch < (SELECT epoch FROM me)) "
    "SELECT epoch FROM me";
// Renews only the row of this registration: a newer one (the same host started again
// elsewhere, or another host declaring this one dead) changes the epoch, and then nothing is
// renewed. The heartbeat is not a key column: writing it does not wait for the host's journal
// transactions, which hold its row FOR KEY SHARE (journal::Store::set_fence).
constexpr const char* kRenew =
    "UPDATE hosts SET heartbeat_ms = " CORRAL_DB_NOW ", address = $3, capacity = $4, held = $5, "
    "dead_after_ms = $6 WHERE id = $1 AND epoch = $2 RETURNING epoch";
constexpr const char* kWhyLost = "SELECT epoch, fenced_ms FROM hosts WHERE id = $1";
constexpr const char* kList =
    "SELECT id, address, epoch, started_ms, " CORRAL_DB_NOW " - heartbeat_ms, held, capacity, "
    CORRAL_DB_NOW " - started_ms, dead_after_ms FROM hosts ORDER BY id";
// Declares every silent host dead (its heartbeat older than the age it wrote with it): its
// epoch goes up (a key column: the update waits for the host's transactions in flight), which
// fences off its writes from then on. Then releases every range claimed at an epoch its host
// has left (the host was declared dead, now or before, or registered again): a claim carries
// the epoch it was made at, so a range is released only once its holder can no longer write
// about it.
constexpr const char* kSweep =
    "WITH dead AS (UPDATE hosts SET epoch = epoch + 1, fenced_ms = " CORRAL_DB_NOW " "
    "WHERE id <> $1 AND fenced_ms = 0 AND heartbeat_ms < " CORRAL_DB_NOW " - dead_after_ms "
    "RETURNING id, epoch, dead_after_ms), "
    "now_at AS (SELECT id, MAX(epoch) AS epoch FROM "
    "(SELECT id, epoch FROM dead UNION ALL SELECT id, epoch FROM hosts) AS e GROUP BY id), "
    "freed AS (UPDATE claims c SET host = '' FROM now_at h "
    "WHERE c.host = h.id AND c.epoch < h.epoch RETURNING h.id AS host) "
    "SELECT 'dead', id, epoch - 1, dead_after_ms FROM dead UNION ALL "
    "SELECT 'freed', host, COUNT(*), 0 FROM freed GROUP BY host";
// Claims free ranges, oldest run first, while this host is at its epoch (the row's lock holds
// off a declaration of its death until the claim commits), each marked with the epoch: as many
// as bring it to its share of the open ranges, at most $3. The share is over the hosts live at
// that moment (heartbeat younger than the age that makes them dead, not declared dead) that
// have room or registered less than $4 ms ago, this one included: counted after the sweep
// before it in the same beat, so a host declared dead in that sweep no longer takes a share.
constexpr const char* kClaim =
    "WITH me AS (SELECT id FROM hosts WHERE id = $1 AND epoch = $2 FOR KEY SHARE), "
    "sharing AS (SELECT GREATEST(1, COUNT(*)) AS n FROM hosts WHERE id = $1 OR (fenced_ms = 0 "
    "AND heartbeat_ms >= " CORRAL_DB_NOW " - dead_after_ms "
    "AND (capacity > 0 OR started_ms >= " CORRAL_DB_NOW " - $4))), "
    "share AS (SELECT CAST(CEIL(COUNT(*) / CAST((SELECT n FROM sharing) AS FLOAT8)) AS BIGINT) "
    "- COUNT(*) FILTER (WHERE host = $1) AS n FROM claims WHERE done = 0), "
    "pick AS (SELECT run_id, lo FROM claims WHERE host = '' AND done = 0 "
    "AND EXISTS (SELECT 1 FROM me) ORDER BY seq, lo "
    "LIMIT GREATEST(0, LEAST(CAST($3 AS BIGINT), (SELECT n FROM share))) "
    "FOR UPDATE SKIP LOCKED) "
    "UPDATE claims c SET host = $1, epoch = $2 "
    "WHERE (c.run_id, c.lo) IN (SELECT run_id, lo FROM pick) "
    "RETURNING c.run_id, c.lo, c.hi";
constexpr const char* kRelease =
    "UPDATE claims SET host = '' WHERE run_id = $1 AND lo = $2 AND host = $3 AND epoch = $4";
// clang-format on
constexpr const char* kOpenRuns =
    "SELECT r.id, COALESCE(i.state, ''), COUNT(i.idx) FROM runs r "
    "LEFT JOIN instances i ON i.run_id = r.id WHERE r.finished_ms = 0 GROUP BY r.id, i.state";
constexpr const char* kPrunedBefore = "SELECT value FROM meta WHERE name = 'pruned_before'";
constexpr const char* kAnnouncePrune =
    "INSERT INTO meta (name, value) VALUES ('pruned_before', $1) ON CONFLICT (name) "
    "DO UPDATE SET value = GREATEST(meta.value, excluded.value)";
constexpr uint64_t kRange = 100;  // instances per claim (journal::sql::kPutClaims)
// Every host listens on it; a host that declares another dead notifies it (the dead one's id).
constexpr const char* kDeathChannel = "corral_host_dead";
constexpr const char* kNotifyDeath = "SELECT pg_notify('corral_host_dead', $1)";

}  // namespace

Hosts::Hosts(uv_loop_t* loop, std::string url, std::string label, std::string id,
             std::function<std::string()> address, std::function<Load()> load, Events events)
    : loop_(loop),
      db_(loop, std::move(url), std::move(label)),
      id_(std::move(id)),
      address_(std::move(address)),
      load_(std::move(load)),
      events_(std::move(events)),
      timer_(loop),
      fence_timer_(loop),
      sweep_timer_(loop) {}

void Hosts::start() {
  // A host declared dead: its ranges are free now, not at this host's next beat.
  db_.listen(kDeathChannel, [this](const std::string& dead) {
    if (!alive()) return;
    spdlog::info("cluster: host {} was declared dead by another host: claiming now", dead);
    claim(load_());
    tell_death();
  });
  timer_.start(0, kBusyEveryMs, [this] { tick(); });
}

void Hosts::tick() {
  if (ticks_++ % (kEveryMs / kBusyEveryMs) == 0) {
    beat();
    return;
  }
  if (out_ > 0 || epoch_ == 0 || superseded_) return;
  Load l = load_();
  if (busy(l)) renew(l, true);
}

void Hosts::renew(const Load& l, bool between) {
  const uint64_t sent = monotonic_ms();
  const int64_t dead_after_ms = busy(l) ? kBusyDeadAfterMs : kDeadAfterMs;
  if (dead_after_ms < dead_after_ms_) {  // the lease is shorter from now on, should it be written
    dead_after_ms_ = dead_after_ms;
    arm_fence();
  }
  ask(kRenew,
      {id_, std::to_string(epoch_), address_(), std::to_string(l.capacity), std::to_string(l.held),
       std::to_string(dead_after_ms)},
      [this, sent, dead_after_ms, between](Result<PgRows> r) {
        renewed(std::move(r), sent, dead_after_ms, between);
      });
}

void Hosts::beat() {
  if (out_ > 0) return;  // the last beat's queries are still out: no pile-up
  Load l = load_();
  const uint64_t sent = monotonic_ms();
  if (epoch_ == 0 && !superseded_) {
    if (!settling_) {  // else its old epoch's writes come first
      ask(kRegister,
          {id_, address_(), std::to_string(l.capacity), std::to_string(l.held),
           std::to_string(kDeadAfterMs)},
          [this, sent](Result<PgRows> r) { registered(std::move(r), sent); });
    }
  } else if (!superseded_) {
    renew(l, false);
  }
  ask(kList, {}, [this](Result<PgRows> r) { listed(std::move(r)); });
  if (events_.open_runs) {
    ask(kOpenRuns, {}, [this](Result<PgRows> r) {
      if (!r) return;
      OpenRuns open;
      for (const auto& row : r->rows) {
        open[row.at(0)][row.at(1)] += static_cast<uint64_t>(pg_i64(row.at(2)));
      }
      events_.open_runs(std::move(open));
    });
  }
  if (events_.pruned_before) {
    ask(kPrunedBefore, {}, [this](Result<PgRows> r) {
      if (r && !r->rows.empty()) events_.pruned_before(pg_i64(r->rows[0].at(0)));
    });
  }
  // The server runs them in order: the claim sees the ranges the sweep released. A host just
  // registered declares nobody dead for kDeadAfterMs: when the database comes back after an
  // outage, every host's heartbeat is old, and each gets the time to write what it holds and
  // register again before another fences its writes off.
  if (alive()) sweep(l);
  for (const auto& fn : each_beat_) fn();
}

void Hosts::sweep(const Load& l) {
  if (monotonic_ms() - registered_ms_ >= static_cast<uint64_t>(kDeadAfterMs)) {
    ask(kSweep, {id_}, [this](Result<PgRows> s) { swept(std::move(s)); });
  }
  claim(l);
}

void Hosts::sweep_when_due() {
  const HostRow* first = nullptr;
  auto left = [](const HostRow& h) { return h.dead_after_ms - h.heartbeat_age_ms; };
  for (const HostRow& h : hosts_) {
    if (h.id == id_ || h.dead) continue;
    if (first == nullptr || left(h) < left(*first)) first = &h;
  }
  if (first == nullptr || sweep_timer_.active()) return;
  const int64_t in = left(*first) + kSweepLateMs;
  if (in >= static_cast<int64_t>(kEveryMs)) return;
  spdlog::info("cluster: host {} has been silent for {} ms: declared dead in {} ms unless it beats",
               first->id, first->heartbeat_age_ms, std::max<int64_t>(in, 0));
  sweep_timer_.start(static_cast<uint64_t>(std::max<int64_t>(in, 0)), 0, [this] {
    if (alive()) sweep(load_());
  });
}

void Hosts::ask(const char* sql, std::vector<std::string> params, PgAsync::Done done) {
  ++out_;
  db_.query(sql, std::move(params), [this, done = std::move(done)](Result<PgRows> r) {
    --out_;
    done(std::move(r));
  });
}

void Hosts::arm_fence() {
  const uint64_t ends = lease_until_ms();
  if (events_.leased) events_.leased(ends);
  const uint64_t now = monotonic_ms();
  fence_timer_.start(ends > now ? ends - now : 0, 0, [this] {
    if (epoch_ == 0 || superseded_) return;
    if (alive()) {  // renewed since, or the loop's clock ran a millisecond ahead of ours
      arm_fence();
      return;
    }
    // Others may declare this host dead kFenceMarginMs later, and take its instances.
    fence("no heartbeat written for " + std::to_string(fence_after_ms()) + " ms");
  });
}

void Hosts::registered(Result<PgRows> r, uint64_t sent_ms) {
  if (!r || r->rows.empty()) {
    failed(r ? io_error("registering: no row came back") : r.status());
    return;
  }
  epoch_ = pg_i64(r->rows[0][0]);
  ++written_[0];
  renewed_ms_ = sent_ms;
  dead_after_ms_ = kDeadAfterMs;
  registered_ms_ = monotonic_ms();
  arm_fence();
  error_.clear();
  fenced_.clear();
  spdlog::info("cluster: this host is {} (epoch {})", id_, epoch_);
  if (events_.registered) events_.registered(epoch_);
}

void Hosts::renewed(Result<PgRows> r, uint64_t sent_ms, int64_t dead_after_ms, bool between) {
  if (!r) {
    failed(r.status());
    return;
  }
  if (r->rows.empty()) {
    ask(kWhyLost, {id_}, [this](Result<PgRows> w) { lost_epoch(std::move(w)); });
    return;
  }
  ++written_[between ? 1 : 0];
  if (!error_.empty()) spdlog::info("cluster: heartbeats written again");
  error_.clear();
  if (epoch_ == 0) return;  // fenced while it was on the way: registers again
  if (sent_ms >= renewed_ms_) {  // one renewal is out at a time: none was sent since
    renewed_ms_ = sent_ms;
    dead_after_ms_ = dead_after_ms;
  }
  arm_fence();
}

// The heartbeat found another epoch in this host's row: another host declared it dead (it
// registers again), or the same host registered elsewhere (this daemon stays out).
void Hosts::lost_epoch(Result<PgRows> r) {
  if (!r) {
    failed(r.status());
    return;
  }
  if (epoch_ == 0) return;
  bool declared = !r->rows.empty() && pg_i64(r->rows[0].at(1)) != 0;
  if (declared) {
    fence("another host declared it dead (its heartbeat was too old)");
    return;
  }
  spdlog::error(
      "cluster: host {} registered again elsewhere (its epoch is no longer {}): "
      "this daemon stops renewing its heartbeat and claims nothing",
      id_, epoch_);
  fence("it registered again elsewhere");
  superseded_ = true;
}

void Hosts::fence(const std::string& why) {
  spdlog::error(
      "cluster: host {} (epoch {}) stops every instance it holds: {}; it registers "
      "again and claims anew",
      id_, epoch_, why);
  epoch_ = 0;
  fenced_ = why;
  if (events_.leased) events_.leased(0);
  settling_ = events_.fenced != nullptr;
  if (events_.fenced) events_.fenced(why);
}

void Hosts::listed(Result<PgRows> r) {
  if (!r) return;  // the heartbeat's failure is the one logged
  std::vector<HostRow> hosts;
  for (const auto& row : r->rows) {
    if (row.size() < 9) continue;
    HostRow h{row[0],
              row[1],
              pg_i64(row[2]),
              pg_i64(row[3]),
              pg_i64(row[4]),
              pg_i64(row[8]),
              static_cast<uint64_t>(pg_i64(row[5])),
              static_cast<uint64_t>(pg_i64(row[6])),
              false,
              pg_i64(row[7])};
    h.dead = h.heartbeat_age_ms > h.dead_after_ms;
    hosts.push_back(std::move(h));
  }
  hosts_ = std::move(hosts);
  sweep_when_due();
}

// A sweep that failed (a silent host's row still locked by its transaction, which the server
// ends after a few seconds) is tried again at the next beat; the heartbeat is not at fault.
void Hosts::swept(Result<PgRows> r) {
  if (!r) {
    if (r.status().message() != sweep_error_) {
      spdlog::warn("cluster: cannot declare silent hosts dead yet: {}", r.status().message());
    }
    sweep_error_ = r.status().message();
    return;
  }
  sweep_error_.clear();
  bool died = false;
  for (const auto& row : r->rows) {
    if (row.at(0) == "dead") {
      spdlog::warn("cluster: host {} (epoch {}) declared dead: no heartbeat for {} ms", row.at(1),
                   row.at(2), row.at(3));
      // The other hosts claim their share of its ranges at once.
      ask(kNotifyDeath, {row.at(1)}, [](Result<PgRows>) {});
      died = true;
    } else {
      spdlog::warn("cluster: released {} ranges held by dead host {}", row.at(2), row.at(1));
    }
  }
  if (died) tell_death();
}

void Hosts::tell_death() {
  for (const auto& fn : each_death_) fn();
}

// Claims up to its share of the free ranges.
void Hosts::claim(const Load& l) {
  if (!events_.claimed) return;
  if (monotonic_ms() - registered_ms_ < kFirstClaimAfterMs) return;
  uint64_t room = l.capacity > l.waiting ? l.capacity - l.waiting : 0;
  uint64_t ranges = std::min<uint64_t>((room + kRange - 1) / kRange, kMaxClaim);
  if (ranges == 0) return;
  ask(kClaim, {id_, std::to_string(epoch_), std::to_string(ranges), std::to_string(kSettleMs)},
      [this, epoch = epoch_](Result<PgRows> c) { claimed(std::move(c), epoch); });
}

void Hosts::claimed(Result<PgRows> r, int64_t epoch) {
  if (!r) {
    failed(r.status());
    return;
  }
  // Claimed in a life this host has left since (fenced off meanwhile): not its to run; any
  // host's sweep releases them.
  if (r->rows.empty() || epoch_ != epoch) return;
  std::vector<Claim> claims;
  for (const auto& row : r->rows) {
    claims.push_back({row.at(0), static_cast<uint32_t>(pg_i64(row.at(1))),
                      static_cast<uint32_t>(pg_i64(row.at(2))), epoch});
  }
  events_.claimed(std::move(claims));
}

void Hosts::release(const Claim& c) {
  db_.query(kRelease, {c.run, std::to_string(c.lo), id_, std::to_string(c.epoch)},
            [](Result<PgRows> r) {
              if (!r) spdlog::warn("cluster: cannot give a range back: {}", r.status().message());
            });
}

void Hosts::announce_prune(int64_t before_ms) {
  db_.query(kAnnouncePrune, {std::to_string(before_ms)}, [](Result<PgRows> r) {
    if (!r) spdlog::warn("cluster: cannot tell the other hosts of a prune: {}", r.status().message());
  });
}

void Hosts::failed(const Status& s) {
  if (error_.empty()) spdlog::error("cluster: heartbeat failed: {}", s.message());
  error_ = s.message();
}

bool Hosts::alive() const {
  return epoch_ != 0 && !superseded_ &&
         monotonic_ms() - renewed_ms_ < static_cast<uint64_t>(fence_after_ms());
}

bool Hosts::lists_alive(const std::string& id) const {
  return std::any_of(hosts_.begin(), hosts_.end(),
                     [&](const HostRow& h) { return h.id == id && !h.dead; });
}

nlohmann::json Hosts::health() const {
  const int64_t age = static_cast<int64_t>(monotonic_ms() - renewed_ms_);
  const bool late = epoch_ != 0 && age > kLateAfterMs;
  nlohmann::json j = {{"ok", error_.empty() && fenced_.empty() && !superseded_ && !late},
                      {"epoch", epoch_}};
  if (epoch_ != 0) j["heartbeat_age_ms"] = age;
  if (!error_.empty()) {
    j["error"] = error_;
  } else if (late) {
    j["error"] = "no heartbeat written for " + std::to_string(age) + " ms";
  }
  if (!fenced_.empty()) j["fenced"] = fenced_;
  return j;
}

nlohmann::json Hosts::to_json() const {
  nlohmann::json list = nlohmann::json::array();
  for (const HostRow& h : hosts_) {
    list.push_back({{"id", h.id},
                    {"address", h.address},
                    {"epoch", h.epoch},
                    {"started_at", iso8601_utc(h.started_ms)},
                    {"heartbeat_age_ms", h.heartbeat_age_ms},
                    {"dead_after_ms", h.dead_after_ms},
                    {"held", h.held},
                    {"capacity", h.capacity},
                    {"state", h.dead ? "dead" : "alive"}});
  }
  nlohmann::json self = {
      {"id", id_}, {"epoch", epoch_}, {"alive", alive()}, {"superseded", superseded_}};
  if (!error_.empty()) self["error"] = error_;
  if (!fenced_.empty()) self["fenced"] = fenced_;
  return {{"self", self}, {"hosts", list}};
}

}  // namespace corral::master::cluster
