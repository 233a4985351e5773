// This daemon's place among the hosts whose journal is one PostgreSQL database
// (docs/cluster.md). At start it registers in the hosts table: its row's epoch goes up by one
// at each registration, so a daemon that was replaced can tell, and the claims it held before
// are released. Every second it renews its heartbeat with the instances it holds and could
// still take (four times a second while it holds any), and reads every host's row back, each with
// the age of its heartbeat by the database's clock (hosts' own clocks may differ). A host whose
// heartbeat is older than the age its row gives (dead_after_ms, see kDeadAfterMs) is dead: any
// host declares it so (its epoch goes up, which fences off its writes, see
// journal::Store::set_fence) and releases its claims, at its beat, or at the moment a
// heartbeat it listed reaches that age if that comes first (sweep_when_due).
//
// Work is shared by claims: each run's instances are cut into ranges of 100 when it is
// submitted, and every second each live host claims free ranges (FOR UPDATE SKIP LOCKED), up
// to its fair share of the open ranges and what its workers have room for. A host that
// declares another dead notifies the others (PostgreSQL NOTIFY): they claim at once, not at
// their next beat.
//
// A host that finds its epoch taken (declared dead while it could not beat, say after a
// SIGSTOP), or whose lease ended (kFenceMarginMs before it may be declared dead), stops its own
// work (self-fencing: Events::fenced) and registers again, once what it wrote under its old epoch
// is in the journal (settled()).
//
// A beat is one round trip to the database: its queries (heartbeat, hosts, open runs, sweep,
// claim, and those the other parts of the cluster ask at each beat, each_beat()) go out
// together on one pipelined connection, which those parts share (db()). Every query runs on the
// loop without blocking it (pg_async.h). Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "master/cluster/pg_async.h"
#include "shared/uv/timer.h"

namespace corral::master::cluster {

// A range of a run's instances, lo..hi-1, claimed by this host.
struct Claim {
  std::string run;
  uint32_t lo = 0, hi = 0;
  int64_t epoch = 0;  // this host's, when it claimed the range
};

// Every unfinished run in the journal, each with its instances' rows counted by state ("" for
// a run without any row yet).
using OpenRuns = std::map<std::string, std::map<std::string, uint64_t>>;

struct HostRow {
  std::string id;
  std::string address;  // its control API's TCP address; "" when it has none
  int64_t epoch = 0;
  int64_t started_ms = 0;
  int64_t heartbeat_age_ms = 0;  // by the database's clock, when the table was read
  int64_t dead_after_ms = 0;     // the heartbeat's age that makes it dead, as it last wrote
  uint64_t held = 0;             // instances on its workers
  uint64_t capacity = 0;         // instances it could still take
  bool dead = false;
  int64_t up_ms = 0;  // since it registered, by the database's clock
};

class Hosts {
 public:
  static constexpr uint64_t kEveryMs = 1000;
  // A host that holds instances also renews its heartbeat between beats, alone (one query):
  // every kBusyEveryMs.
  static constexpr uint64_t kBusyEveryMs = 250;
  // Each heartbeat writes the age at which the others may declare its host dead
  // (hosts.dead_after_ms): kDeadAfterMs for a host that beats every kEveryMs, kBusyDeadAfterMs
  // for one that holds instances and renews every kBusyEveryMs. Either must outlast an outage
  // of the database's link of 3 s and the beat before it (docs/cluster.md, the lease).
  static constexpr int64_t kDeadAfterMs = 5000;
  static constexpr int64_t kBusyDeadAfterMs = 4250;
  // The lease. A host stops every instance it holds (it fences itself) kFenceMarginMs before
  // the age it wrote with its last heartbeat that was written is reached, counted from when
  // that heartbeat was sent, unless another was written since. Safe because the database
  // stamped that heartbeat after it was sent, and the others declare the host dead only once
  // the database's clock is that age past the stamp: the host has stopped its instances at
  // least kFenceMarginMs before anyone may take them over, whatever the network delayed, as
  // long as the two clocks run at the same rate (they need not show the same time).
  // The workers hold the lease too (Events::leased, ipc::Lease): past its end, each starts no
  // step and builds no request, by the clock at that moment, so a late fence timer or a late
  // stop does not let an instance act. The margin covers a request built just before the end
  // on its way to the target.
  static constexpr int64_t kFenceMarginMs = 250;
  // A host whose lease ends before this host's next beat is swept this long after it ends (by
  // the age the database gave its heartbeat), not at the next beat: up to a second sooner.
  static constexpr int64_t kSweepLateMs = 20;
  static constexpr uint64_t kMaxClaim = 1000;  // ranges claimed at most per beat
  // The heartbeat is late (GET /health says degraded) once the last one written was sent this
  // long ago.
  static constexpr int64_t kLateAfterMs = 2 * static_cast<int64_t>(kEveryMs);
  // A host registered this recently counts in the share of work even before it reports room.
  static constexpr int64_t kSettleMs = 10000;
  // After it registers, a host waits this long before it claims: hosts coming back together
  // (after the database was away) register first, and share the free ranges between them.
  static constexpr uint64_t kFirstClaimAfterMs = 2000;

  struct Load {
    uint64_t held = 0;
    uint64_t capacity = 0;  // instances the workers could still take
    uint64_t waiting = 0;   // claimed instances not placed yet
  };
  struct Events {
    // Registered at this epoch: writes about instances carry it from now on.
    std::function<void(int64_t epoch)> registered;
    // Ranges claimed: load them and place their instances.
    std::function<void(std::vector<Claim>)> claimed;
    // This host's claims are no longer its own (`why`): stop every instance it holds, and call
    // settled() once every journal write queued before is written (or fenced off). The host
    // registers again (a new epoch, which fences off its old one) only then: writes that were
    // only late, such as those held up while the database was away, still count.
    std::function<void(const std::string& why)> fenced;
    // The lease ends at `until_ms` (monotonic), from now on; 0: it ended (fenced). The
    // workers hold it too (ipc::Lease), so that they stop in time even when the loop that
    // fences them off is late.
    std::function<void(uint64_t until_ms)> leased;
    // Every unfinished run, read at each beat.
    std::function<void(OpenRuns)> open_runs;
    // Runs finished before this time (Unix ms, 0: none) were pruned on some host: read at
    // each beat, so that every host forgets them too.
    std::function<void(int64_t before_ms)> pruned_before;
  };
  // `id`: this host's (kept in the home, so that a restart is the same host); `address`
  // gives its API's TCP address when asked; `load` its instances.
  Hosts(uv_loop_t* loop, std::string url, std::string label, std::string id,
        std::function<std::string()> address, std::function<Load()> load, Events events);

  // Registers, then heartbeats every kEveryMs (and renews every kBusyEveryMs while it holds
  // instances). A failure is logged and tried again at the next beat.
  void start();
  // `fn` runs at each beat, after the beat's own queries are asked: the queries it asks on
  // db() go in the beat's round trip.
  void each_beat(std::function<void()> fn) { each_beat_.push_back(std::move(fn)); }
  // `fn` runs whenever a host was declared dead, by this host or by another (which notifies
  // every host), once this host has claimed its ranges: what else a dead host held goes on.
  void each_death(std::function<void()> fn) { each_death_.push_back(std::move(fn)); }
  // The cluster's connection to the database.
  PgAsync& db() { return db_; }
  const PgAsync& db() const { return db_; }

  // After Events::fenced: the writes queued under the old epoch are done.
  void settled() { settling_ = false; }
  // Gives a claimed range back (its rows could not be loaded): any host may claim it again.
  void release(const Claim& c);
  // Runs finished before `before_ms` were pruned here: every host is to forget them.
  void announce_prune(int64_t before_ms);

  const std::string& id() const { return id_; }
  int64_t epoch() const { return epoch_; }  // 0 until registered
  // Whether its lease holds: the last heartbeat written was sent less than fence_after_ms()
  // ago.
  bool alive() const;
  // When its lease ends (monotonic ms): fence_after_ms() after the last heartbeat written was
  // sent; 0 when it holds none (not registered, or fenced off).
  uint64_t lease_until_ms() const {
    return epoch_ == 0 || superseded_ ? 0 : renewed_ms_ + static_cast<uint64_t>(fence_after_ms());
  }
  // Why this host is fenced off, from when it fenced itself until it registers again; ""
  // otherwise (also before its first registration).
  const std::string& fenced() const { return fenced_; }
  // GET /health's "cluster": {"ok", "epoch", "error" while its heartbeat fails, "fenced"}.
  nlohmann::json health() const;
  // GET /cluster: this host's id and epoch, and every host's row as last read.
  nlohmann::json to_json() const;
  // Heartbeats written since start: at beats, and between them while it held instances.
  uint64_t beat_heartbeats() const { return written_[0]; }
  uint64_t busy_heartbeats() const { return written_[1]; }
  // Every host's row as last read (by id).
  const std::vector<HostRow>& hosts() const { return hosts_; }
  // Whether host `id` was alive (listed, and not declared dead) when the table was last read.
  bool lists_alive(const std::string& id) const;

 private:
  void tick();  // every kBusyEveryMs: a beat, or between beats a renewal while busy
  void beat();
  // Writes the heartbeat, with the age that declares this host dead (by `l`); `between`: a
  // renewal between two beats.
  void renew(const Load& l, bool between);
  // Asks `sql` on the connection, counted in out_ until answered.
  void ask(const char* sql, std::vector<std::string> params, PgAsync::Done done);
  // `sent_ms`: when the heartbeat was sent (monotonic).
  void registered(Result<PgRows> r, uint64_t sent_ms);
  void renewed(Result<PgRows> r, uint64_t sent_ms, int64_t dead_after_ms, bool between);
  // The lease runs fence_after_ms() from renewed_ms_: fence() when it ends.
  void arm_fence();
  // Whether it holds instances: it renews every kBusyEveryMs, and may be declared dead sooner.
  static bool busy(const Load& l) { return l.held + l.waiting > 0; }
  // The lease's length: kFenceMarginMs short of dead_after_ms_.
  int64_t fence_after_ms() const { return dead_after_ms_ - kFenceMarginMs; }
  void lost_epoch(Result<PgRows> r);
  void listed(Result<PgRows> r);
  // Sweeps (and claims) when the first other host's lease ends before the next beat.
  void sweep_when_due();
  void tell_death();  // runs each_death_
  void sweep(const Load& l);
  void swept(Result<PgRows> r);
  void claim(const Load& l);
  void claimed(Result<PgRows> r, int64_t epoch);
  void fence(const std::string& why);
  void failed(const Status& s);

  uv_loop_t* loop_;
  PgAsync db_;
  std::string id_;
  std::function<std::string()> address_;
  std::function<Load()> load_;
  Events events_;
  std::vector<std::function<void()>> each_beat_;
  std::vector<std::function<void()>> each_death_;
  size_t out_ = 0;  // this part's queries not answered yet
  uv::Timer timer_;
  uv::Timer fence_timer_;
  uv::Timer sweep_timer_;
  int64_t epoch_ = 0;
  uint64_t renewed_ms_ = 0;     // monotonic: when the last heartbeat written was sent
  // The least age of death written with that heartbeat or sent since (perhaps written too).
  int64_t dead_after_ms_ = kDeadAfterMs;
  uint64_t ticks_ = 0;
  uint64_t written_[2] = {0, 0};  // heartbeats written at beats, and between them
  uint64_t registered_ms_ = 0;  // monotonic, of the last registration
  bool superseded_ = false;  // another daemon registered as this host since
  bool settling_ = false;    // fenced: waits for settled() before it registers again
  std::string error_;        // the last failure, while failing
  std::string fenced_;       // why, while fenced off
  std::string sweep_error_;  // the last sweep's failure, while failing
  std::vector<HostRow> hosts_;
};

}  // namespace corral::master::cluster
