#include "master/cluster/load_shares.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace corral::master::cluster {
namespace {

using nlohmann::json;

// clang-format off
// The test, and a share per host ($5: a JSON array of host ids, the origin first, which runs
// its own share from the start).
constexpr const char* kPublish =
    "WITH l AS (INSERT INTO loads (id, origin, body, start_ms, hosts, created_ms) "
    "VALUES ($1, $2, $3, $4, json_array_length($5::json), " CORRAL_DB_NOW ") "
    "ON CONFLICT (id) DO NOTHING RETURNING id), "
    "s AS (INSERT INTO load_shares (load_id, host, idx, state) "
    "SELECT (SELECT id FROM l), h.value, h.ord - 1, CASE WHEN h.ord = 1 THEN 'running' ELSE '' END "
    "FROM json_array_elements_text($5::json) WITH ORDINALITY AS h(value, ord) "
    "WHERE EXISTS (SELECT 1 FROM l)) "
    "SELECT id FROM l";
// A test whose origin was declared dead, or gave it up when it restarted ('').
#define CORRAL_ORPHANED(l)                                                             \
  "(" l ".origin = '' OR EXISTS (SELECT 1 FROM hosts h WHERE h.id = " l ".origin " \
  "AND h.fenced_ms <> 0))"
// The shares this host is to start or runs, of tests other hosts submitted.
constexpr const char* kShares =
    "SELECT l.id, l.origin, l.body, l.start_ms, l.hosts, s.idx, l.stop_ms, s.state, "
    CORRAL_ORPHANED("l") " FROM load_shares s JOIN loads l ON l.id = s.load_id "
    "WHERE s.host = $1 AND l.origin <> $1 AND s.state IN ('', 'running')";
// An orphaned test this host runs a share of becomes its own, one at a time: the test, every
// share and every second sent so far. SKIP LOCKED: of hosts claiming at once, one gets it.
constexpr const char* kClaimLoad =
    "WITH o AS (SELECT l.id, l.origin FROM loads l WHERE l.origin <> $1 AND l.stop_ms = 0 AND "
    CORRAL_ORPHANED("l") " AND EXISTS (SELECT 1 FROM load_shares s WHERE s.load_id = l.id "
    "AND s.host = $1 AND s.state = 'running') ORDER BY l.id LIMIT 1 FOR UPDATE OF l SKIP LOCKED), "
    "c AS (UPDATE loads l SET origin = $1 FROM o WHERE l.id = o.id "
    "RETURNING l.id, o.origin AS old, l.body) "
    "SELECT 'c', id, old, 0, body FROM c UNION ALL "
    "SELECT 'h', load_id, host, idx, state FROM load_shares WHERE load_id IN (SELECT id FROM c) "
    "UNION ALL SELECT 's', load_id, host, seq, body FROM load_seconds "
    "WHERE load_id IN (SELECT id FROM c)";
// The seconds other hosts sent for the tests this host is the origin of ($1: a JSON array of
// ids) that it has not had yet ($3, for each test and host, the next second it wants:
// {"load", "host", "next"}), the state of each share, and the tests of $1 whose origin is
// another host now, or that are gone.
constexpr const char* kSeconds =
    "WITH mine AS (SELECT value AS id FROM json_array_elements_text($1::json)), "
    "had AS (SELECT a->>'load' AS load_id, a->>'host' AS host, CAST(a->>'next' AS BIGINT) AS next "
    "FROM json_array_elements($3::json) AS a) "
    "SELECT 's', s.load_id, s.host, s.seq, s.body FROM load_seconds s LEFT JOIN had "
    "ON had.load_id = s.load_id AND had.host = s.host WHERE s.load_id IN (SELECT id FROM mine) "
    "AND s.host <> $2 AND s.seq >= COALESCE(had.next, 0) UNION ALL "
    "SELECT 'h', load_id, host, idx, state FROM load_shares "
    "WHERE load_id IN (SELECT id FROM mine) AND host <> $2 UNION ALL "
    "SELECT 'o', m.id, COALESCE(l.origin, ''), 0, '' FROM mine m LEFT JOIN loads l ON l.id = m.id "
    "WHERE l.origin IS DISTINCT FROM $2";
// Seconds of a share ($4: a JSON array, numbered from $3), while the test is there.
constexpr const char* kPost =
    "INSERT INTO load_seconds (load_id, host, seq, body) "
    "SELECT $1, $2, CAST($3 AS BIGINT) + s.ord - 1, s.value::text "
    "FROM json_array_elements($4::json) WITH ORDINALITY AS s(value, ord) "
    "WHERE EXISTS (SELECT 1 FROM loads WHERE id = $1) "
    "ON CONFLICT DO NOTHING";
// Only while this host ($2) is the test's origin, as kForget's $1: not once another took it over.
constexpr const char* kStop =
    "UPDATE loads SET stop_ms = " CORRAL_DB_NOW " WHERE id = $1 AND origin = $2 AND stop_ms = 0";
constexpr const char* kSetState =
    "UPDATE load_shares SET state = $3 WHERE load_id = $1 AND host = $2";
// The rows of test $1 while this host ($2) is its origin; with $1 '', those of every orphaned
// test that no host will claim: one asked to stop, or with no share waiting or running on a
// live host (they then see it gone).
constexpr const char* kForget =
    "WITH gone AS (DELETE FROM loads l WHERE (l.id = $1 AND l.origin = $2) OR ($1 = '' AND "
    CORRAL_ORPHANED("l")
    " AND (l.stop_ms <> 0 OR NOT EXISTS (SELECT 1 FROM load_shares s JOIN hosts h "
    "ON h.id = s.host WHERE s.load_id = l.id AND s.state IN ('', 'running') "
    "AND h.fenced_ms = 0 AND s.host <> l.origin))) RETURNING l.id), "
    "s AS (DELETE FROM load_shares WHERE load_id IN (SELECT id FROM gone)) "
    "DELETE FROM load_seconds WHERE load_id IN (SELECT id FROM gone)";
// The tests this host ($1) was the origin of in an earlier life: orphaned, its share gone.
constexpr const char* kGiveUp =
    "WITH o AS (UPDATE loads SET origin = '' WHERE origin = $1 RETURNING id) "
    "UPDATE load_shares SET state = 'failed: the host restarted during the test' "
    "WHERE host = $1 AND load_id IN (SELECT id FROM o)";
#undef CORRAL_ORPHANED
// clang-format on

void log_failure(const char* what, const Result<PgRows>& r) {
  if (!r) spdlog::warn("load shares: {}: {}", what, r.status().message());
}

}  // namespace

LoadShares::LoadShares(uv_loop_t* loop, PgAsync& db, std::string host, Events events)
    : db_(db), host_(std::move(host)), events_(std::move(events)), reader_(loop) {}

void LoadShares::ask(const char* sql, std::vector<std::string> params, PgAsync::Done done) {
  ++out_;
  db_.query(sql, std::move(params),
            [this, life = std::weak_ptr<int>(life_), done = std::move(done)](Result<PgRows> r) {
              if (life.expired()) return;  // this host left the cluster meanwhile
              --out_;
              done(std::move(r));
            });
}

void LoadShares::start() {
  clean();  // first: a test published from now on comes after it
  reader_.start(kReadEveryMs, kReadEveryMs, [this] {
    if (cleaned_ && !reading_) read_seconds();
  });
}

// Gives up the tests this host was the origin of in an earlier life: their other hosts claim
// them, or see them gone.
void LoadShares::clean() {
  cleaning_ = true;
  ask(kGiveUp, {host_}, [this](Result<PgRows> r) {
    cleaning_ = false;
    cleaned_ = r.is_ok();
    log_failure("giving up this host's tests of an earlier life", r);
  });
}

void LoadShares::beat() {
  // The last beat's queries are still out (a read of seconds aside): no pile-up.
  if (out_ > (reading_ ? 1u : 0u)) return;
  if (!cleaned_) {
    if (!cleaning_) clean();
    return;
  }
  // Orphaned tests no host will claim: their shares see them gone.
  ask(kForget, {"", ""}, [](Result<PgRows> r) { log_failure("deleting orphaned tests", r); });
  flush();
  read_shares();
}

void LoadShares::host_died() {
  if (cleaned_) read_shares();
}

void LoadShares::read_shares() {
  ask(kShares, {host_}, [this](Result<PgRows> r) {
    if (!r) {
      log_failure("reading this host's shares", r);
      return;
    }
    std::vector<ShareRow> shares;
    bool claimable = false;
    for (const auto& row : r->rows) {
      ShareRow s;
      s.load = row.at(0);
      s.origin = row.at(1);
      s.body = json::parse(row.at(2), nullptr, false);
      s.start_ms = pg_i64(row.at(3));
      s.hosts = static_cast<uint32_t>(std::max<int64_t>(1, pg_i64(row.at(4))));
      s.index = static_cast<uint32_t>(pg_i64(row.at(5)));
      s.stopping = pg_i64(row.at(6)) != 0;
      s.state = row.at(7);
      s.orphaned = row.at(8) == "t";
      claimable = claimable || (s.orphaned && !s.stopping && s.state == "running");
      shares.push_back(std::move(s));
    }
    if (events_.shares) events_.shares(std::move(shares));
    if (claimable) claim();
  });
}

void LoadShares::claim() {
  if (claiming_) return;
  claiming_ = true;
  ask(kClaimLoad, {host_}, [this](Result<PgRows> r) {
    claiming_ = false;
    if (!r) {
      log_failure("claiming a test whose origin is gone", r);
      return;
    }
    if (!r->rows.empty()) on_claim(*r);
  });
}

void LoadShares::on_claim(const PgRows& rows) {
  ClaimedLoad c;
  std::map<std::string, std::map<int64_t, json>> seconds;  // by host, then number
  for (const auto& row : rows.rows) {
    if (row.at(0) == "c") {
      c.load = row.at(1);
      c.from = row.at(2);
      c.body = json::parse(row.at(4), nullptr, false);
    } else if (row.at(0) == "h") {
      c.shares.push_back({row.at(2), static_cast<uint32_t>(pg_i64(row.at(3))), row.at(4), {}});
    } else {
      seconds[row.at(2)][pg_i64(row.at(3))] = json::parse(row.at(4), nullptr, false);
    }
  }
  // This host's own: those still in its outbox are not all in the database yet.
  if (auto box = outboxes_.find(c.load); box != outboxes_.end()) {
    for (size_t i = 0; i < box->second.seconds.size(); ++i) {
      seconds[host_][static_cast<int64_t>(box->second.next_seq + i)] = box->second.seconds[i];
    }
  }
  std::sort(c.shares.begin(), c.shares.end(),
            [](const auto& a, const auto& b) { return a.index < b.index; });
  for (ClaimedLoad::Share& share : c.shares) {
    const auto& sent = seconds[share.host];
    for (const auto& [seq, second] : sent) {
      if (!second.is_discarded()) share.seconds.push_back(second);
    }
    // The others' seconds are read on from there, as on any origin.
    if (share.host != host_ && !sent.empty())
      next_[{c.load, share.host}] = static_cast<uint64_t>(sent.rbegin()->first) + 1;
  }
  spdlog::info("load {}: its origin host {} is gone: this host takes the test over", c.load,
               c.from.empty() ? "(restarted)" : c.from);
  if (events_.claimed) events_.claimed(std::move(c));
}

// The next second wanted from each host, of the tests still originated here.
json LoadShares::had(const std::vector<std::string>& mine) {
  json out = json::array();
  for (auto it = next_.begin(); it != next_.end();) {
    if (std::find(mine.begin(), mine.end(), it->first.first) == mine.end()) {
      it = next_.erase(it);  // the test ended
      continue;
    }
    out.push_back({{"load", it->first.first}, {"host", it->first.second}, {"next", it->second}});
    ++it;
  }
  return out;
}

void LoadShares::read_seconds() {
  std::vector<std::string> mine = events_.originated ? events_.originated() : std::vector<std::string>{};
  if (mine.empty()) return;
  reading_ = true;
  ask(kSeconds, {json(mine).dump(), host_, had(mine).dump()}, [this](Result<PgRows> r) {
    reading_ = false;
    if (!r) {
      log_failure("reading the seconds of other hosts", r);
      return;
    }
    std::vector<const std::vector<std::string>*> seconds;
    for (const auto& row : r->rows) {
      if (row.at(0) == "s") {
        seconds.push_back(&row);
      } else if (row.at(0) == "o") {
        if (events_.lost) events_.lost(row.at(1), row.at(2));
      } else if (events_.share_state) {
        events_.share_state(row.at(1), row.at(2), row.at(4));
      }
    }
    std::sort(seconds.begin(), seconds.end(), [](const auto* a, const auto* b) {
      return std::make_tuple((*a)[1], (*a)[2], pg_i64((*a)[3])) <
             std::make_tuple((*b)[1], (*b)[2], pg_i64((*b)[3]));
    });
    for (const auto* row : seconds) {
      uint64_t& next = next_[{row->at(1), row->at(2)}];
      const auto seq = static_cast<uint64_t>(pg_i64(row->at(3)));
      if (seq < next) continue;  // had already
      next = seq + 1;
      json second = json::parse(row->at(4), nullptr, false);
      if (second.is_discarded() || !events_.second) continue;
      events_.second(row->at(1), row->at(2), std::move(second));
    }
  });
}

void LoadShares::flush() {
  for (auto& [id, box] : outboxes_) send(id, box);
}

void LoadShares::send(const std::string& id, Outbox& box) {
  if (box.sending || box.seconds.empty()) return;
  box.sending = true;
  const size_t n = box.seconds.size();
  ask(kPost, {id, host_, std::to_string(box.next_seq), json(box.seconds).dump()},
      [this, id, n](Result<PgRows> r) {
        auto it = outboxes_.find(id);
        if (it == outboxes_.end()) return;
        it->second.sending = false;
        if (!r) {
          log_failure("sending seconds to the origin", r);
          return;  // kept: sent again at the next beat
        }
        it->second.seconds.erase(it->second.seconds.begin(),
                                 it->second.seconds.begin() + static_cast<long>(n));
        it->second.next_seq += n;
        if (it->second.seconds.empty() && it->second.done) outboxes_.erase(it);
      });
}

void LoadShares::publish(const std::string& id, const json& body, int64_t start_ms,
                         const std::vector<std::string>& hosts, std::function<void(Status)> done) {
  if (!cleaned_ && !cleaning_) {
    done(Status(Code::kUnavailable, "the database was not reached yet"));
    return;
  }
  ask(kPublish, {id, host_, body.dump(), std::to_string(start_ms), json(hosts).dump()},
      [done = std::move(done), id](Result<PgRows> r) {
        if (!r) {
          done(r.status());
        } else if (r->rows.empty()) {
          done(Status(Code::kAlreadyExists, "load test " + id + " exists"));
        } else {
          done(Status::ok());
        }
      });
}

void LoadShares::stop(const std::string& id) {
  ask(kStop, {id, host_}, [](Result<PgRows> r) { log_failure("asking the hosts to stop", r); });
}

void LoadShares::forget(const std::string& id) {
  outboxes_.erase(id);  // the origin's own seconds: no longer wanted
  ask(kForget, {id, host_}, [](Result<PgRows> r) { log_failure("deleting a test", r); });
}

void LoadShares::set_state(const std::string& id, const std::string& state) {
  ask(kSetState, {id, host_, state},
      [](Result<PgRows> r) { log_failure("writing a share's state", r); });
}

void LoadShares::post(const std::string& id, json second) {
  Outbox& box = outboxes_[id];
  if (second.value("done", false)) box.done = true;
  box.seconds.push_back(std::move(second));
  send(id, box);  // at once: the origin's series waits for it
}

}  // namespace corral::master::cluster
