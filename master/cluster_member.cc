// This daemon as one host of a cluster (cluster_member.h).
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "master/cluster_member.h"

namespace corral::master {

std::string host_id(const std::string& home) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, 10, "host");
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : home) h = (h ^ c) * 16777619u;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", h);
  return std::string(name) + "/" + suffix;
}

void ClusterMember::start(journal::Journal* journal, const std::string& path,
                          const std::string& label, const std::string& home,
                          std::function<std::string()> address) {
  if (!journal::is_postgresql(path)) return;
  journal_ = journal;
  auto reader = journal::open_journal_store(path);
  if (reader) {
    reader_ = std::make_unique<journal::Journal>(loop_, std::move(*reader));
  } else {
    spdlog::warn("cluster: claimed ranges are read on the journal's connection: {}",
                 reader.status().message());
  }
  auto load = [this] {
    cluster::Hosts::Load l;
    l.held = dispatcher_.held();
    l.capacity = dispatcher_.capacity();
    l.waiting = runs_.pending();
    return l;
  };
  cluster::Hosts::Events events;
  events.registered = [this](int64_t epoch) {
    // In the journal's order: writes queued before are checked against the old epoch.
    journal_->read([id = hosts_->id(), epoch](journal::Store& s) { s.set_fence(id, epoch); },
                   nullptr);
  };
  events.leased = [this](uint64_t until_ms) {
    workers_.send_to_all(ipc::MessageType::kLease, ipc::to_json(ipc::Lease{until_ms}));
  };
  events.claimed = [this](std::vector<cluster::Claim> c) { on_claimed(std::move(c)); };
  events.fenced = [this](const std::string& why) {
    drop_claims(why);
    // Registering again fences off the old epoch: its writes queued so far are committed first
    // (held for as long as the database fails).
    journal_->read_committed([](journal::Store&) {},
                             [this] {
                               if (hosts_) hosts_->settled();
                             });
  };
  events.open_runs = [this](const cluster::OpenRuns& open) { on_open_runs(open); };
  events.pruned_before = [this](int64_t before_ms) {
    if (before_ms <= pruned_before_ms_) return;
    pruned_before_ms_ = before_ms;
    size_t n = runs_.prune_finished_before(before_ms);
    if (n > 0) spdlog::info("prune: {} finished runs forgotten, as another host pruned them", n);
  };
  hosts_ = std::make_unique<cluster::Hosts>(loop_, path, label, host_id(home), std::move(address),
                                            load, std::move(events));
  hosts_->start();
  run_service_.set_hosts(hosts_.get());
  load_service_.join_cluster(hosts_.get());
}

// Claimed ranges are read from the journal a page at a time: up to kRangesPerRead ranges of
// one run that follow each other (a claim takes free ranges in order, so most of a beat's
// claims of a run are one span) come in one page, four queries, instead of four per range.
// The reader's connection has no writes of this host's to wait for: a host claims a range only
// once it registered, after what it wrote under an earlier epoch was committed (settled()).
void ClusterMember::on_claimed(std::vector<cluster::Claim> claims) {
  std::sort(claims.begin(), claims.end(), [](const cluster::Claim& a, const cluster::Claim& b) {
    return std::tie(a.run, a.lo) < std::tie(b.run, b.lo);
  });
  for (size_t first = 0; first < claims.size();) {
    size_t end = first + 1;
    while (end < claims.size() && end - first < kRangesPerRead &&
           claims[end].run == claims[first].run && claims[end].lo == claims[end - 1].hi) {
      ++end;
    }
    load_claimed(
        {claims.begin() + static_cast<long>(first), claims.begin() + static_cast<long>(end)});
    first = end;
  }
}

void ClusterMember::load_claimed(std::vector<cluster::Claim> span) {
  auto page = std::make_shared<Result<journal::StoredRun>>(Status(Code::kInternal, "not read"));
  const std::string run = span.front().run;
  const uint32_t lo = span.front().lo, hi = span.back().hi;
  reader().read([page, run, lo, hi](journal::Store& s) { *page = s.load_run_page(run, lo, hi); },
                [this, page, span = std::move(span), run, lo, hi] {
                  if (!hosts_ || hosts_->epoch() != span.front().epoch) return;  // fenced off since
                  if (!*page) {
                    spdlog::error("cluster: cannot load instances {}..{} of run {}, given back: {}",
                                  lo, hi - 1, run, page->status().message());
                    for (const cluster::Claim& c : span) hosts_->release(c);
                    return;
                  }
                  std::vector<Runs::Range> ranges;
                  for (const cluster::Claim& c : span) ranges.emplace_back(c.lo, c.hi);
                  auto n = runs_.claimed(**page, ranges);
                  if (!n) {
                    spdlog::error("cluster: claimed instances of run {} cannot run: {}", run,
                                  n.status().message());
                    return;
                  }
                  if (*n > 0) workers_.place_soon();
                });
}

void ClusterMember::worker_adopted(int slot) {
  if (hosts_) {
    (void)workers_.send_to(slot, ipc::MessageType::kLease,
                           ipc::to_json(ipc::Lease{lease_until_ms()}));
  }
}

void ClusterMember::leave() {
  if (!hosts_) return;
  if (hosts_->epoch() != 0 && journal_) {
    journal_->write([id = hosts_->id(), epoch = hosts_->epoch()](journal::Store& s) {
      return s.leave(id, epoch);
    });
    spdlog::info("cluster: host {} leaves; its ranges go to the other hosts", hosts_->id());
  }
  load_service_.leave_cluster();
  run_service_.set_hosts(nullptr);
  hosts_.reset();
}

void ClusterMember::drop_claims(const std::string& why) {
  size_t runs = 0;
  for (const auto& r : runs_.all()) {
    if (!r->clustered || r->finished_ms != 0 || !r->whole) continue;
    if (r->count(InstanceState::kRunning) == 0 && r->claims.empty()) continue;
    dispatcher_.forget_run(*r);
    run_service_.stop_on_workers(r->id);
    ++runs;
  }
  runs_.drop_claims();
  spdlog::warn("cluster: stopped the instances of {} runs: {}", runs, why);
}

// The journal's unfinished runs: their counts over every host; runs submitted on other hosts
// (listed here too); and runs this host holds unfinished that the journal no longer lists,
// which ended elsewhere (finished, or cancelled): read their row, and end them here too.
void ClusterMember::on_open_runs(const cluster::OpenRuns& open) {
  for (const auto& [id, counts] : open) {
    if (Run* run = runs_.find(id)) {
      runs_.set_cluster_counts(*run, counts);
    } else {
      load_run_row(id, [this, counts = counts](const journal::RunRow& row) {
        if (Run* added = runs_.adopt(row)) runs_.set_cluster_counts(*added, counts);
      });
    }
  }
  for (const auto& r : runs_.all()) {
    if (!r->clustered || r->finished_ms != 0 || open.count(r->id)) continue;
    load_run_row(r->id, [this](const journal::RunRow& row) {
      if (row.finished_ms == 0) return;
      Run* run = runs_.find(row.id);
      if (run == nullptr || run->finished_ms != 0) return;
      if (run->count(InstanceState::kRunning) > 0) {
        dispatcher_.forget_run(*run);
        run_service_.stop_on_workers(run->id);
      }
      runs_.finished_elsewhere(row);
    });
  }
}

void ClusterMember::load_run_row(const std::string& id,
                                 std::function<void(const journal::RunRow&)> fn) {
  auto page = std::make_shared<Result<journal::StoredRun>>(Status(Code::kInternal, "not read"));
  journal_->read([page, id](journal::Store& s) { *page = s.load_run_page(id, 0, 0); },
                 [page, fn = std::move(fn)] {
                   if (*page) fn((*page)->run);
                 });
}

void ClusterMember::api_cluster(const ApiCall& c) {
  if (!hosts_) {
    c.respond.send(
        Response::error(404,
                        "this daemon is in no cluster: its journal is not a PostgreSQL database "
                        "(docs/cluster.md)"));
    return;
  }
  c.respond.send(Response::json(200, hosts_->to_json()));
}

// The cluster's route.
const std::vector<ApiRoute>& ClusterMember::routes() {
  static const std::vector<ApiRoute> routes = {
      {"GET", "/cluster", on<&ClusterMember::api_cluster>, false,
       "the hosts sharing this daemon's PostgreSQL journal: `{\"self\":{\"id\",\"epoch\","
       "\"alive\"},\"hosts\":[{\"id\",\"address\",\"epoch\",\"heartbeat_age_ms\",\"dead_after_ms\","
       "\"held\","
       "\"capacity\",\"state\":\"alive|dead\"}]}`; 404 with an SQLite journal"
       " ([docs/cluster.md](docs/cluster.md))"},
  };
  return routes;
}

}  // namespace corral::master
