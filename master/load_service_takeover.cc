// A test over hosts whose origin is gone (docs/cluster.md, "Load tests over hosts"): a host
// running a share claims it (master/cluster/load_shares.h) and goes on as its origin; the old
// origin, back from being cut off, sees the test taken over and ends its copy.
#include <spdlog/spdlog.h>

#include <utility>

#include "master/load_service.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using nlohmann::json;

bool failed(const std::string& state) { return state.rfind("failed", 0) == 0; }

// The seconds of a claimed test's shares, read: this host's own, and each other host's with
// why it left, if it did (`from`: the old origin).
struct Histories {
  std::vector<ipc::LoadSecond> own;
  std::vector<Loads::ShareHistory> others;
};

Histories histories_of(cluster::ClaimedLoad& c, const std::string& from,
                       const cluster::Hosts& hosts) {
  Histories out;
  for (cluster::ClaimedLoad::Share& share : c.shares) {
    Loads::ShareHistory h{share.host, share.index, share.state, "", {}};
    for (json& j : share.seconds) {
      j["load"] = c.load;
      auto s = ipc::load_second_from_json(j);
      if (!s) {
        h.left = "host " + share.host + " sent a malformed second: " + s.status().message();
        break;
      }
      h.seconds.push_back(std::move(*s));
    }
    if (share.host == hosts.id()) {
      out.own = std::move(h.seconds);
      continue;
    }
    if (share.host == from) {
      h.left = "host " + from + ", the test's origin, left during the test; host " + hosts.id() +
               " took the test over";
    } else if (h.left.empty() && failed(share.state)) {
      h.left = "host " + share.host + ": " + share.state;
    } else if (h.left.empty() && !hosts.lists_alive(share.host)) {
      h.left = "host " + share.host + " left during the test";  // an earlier origin, say
    }
    out.others.push_back(std::move(h));
  }
  return out;
}

}  // namespace

void LoadService::on_claimed(cluster::ClaimedLoad c) {
  LoadTest* t = loads_.find(c.load);
  LoadSubmission sub;
  std::optional<http::Response> refused;
  if (c.body.is_object()) refused = check(c.body, sub);
  if (t == nullptr || t->ended() || t->origin.empty() || !c.body.is_object() || refused) {
    spdlog::warn("load {}: claimed, but this host cannot go on with it: the test ends", c.load);
    load_shares_->forget(c.load);  // its shares see it gone
    return;
  }
  // The old origin: as the claim says, or share 0's host when it gave the test up restarting.
  const std::string from = !c.from.empty() ? c.from : c.shares.empty() ? "" : c.shares[0].host;
  Histories seconds = histories_of(c, from, *hosts_);
  const int64_t now = unix_ms_now();
  t->spec.thresholds = std::move(sub.spec.thresholds);
  // A watched metrics URL is watched from here; a process was on the old origin's machine.
  const int64_t pid = sub.spec.watch.pid;
  t->spec.watch = std::move(sub.spec.watch);
  t->spec.watch.pid = 0;
  loads_.adopt(*t, std::move(seconds.own), std::move(seconds.others), now);
  t->events.push_back(
      {Loads::elapsed_s(*t, now), "origin",
       "host " + from + ", the test's origin, left; host " + hosts_->id() + " took it over"});
  spread_.insert(t->id);
  if (pid != 0) {
    t->reason += std::string(t->reason.empty() ? "" : "; ") + "the target's process (pid " +
                 std::to_string(pid) + ") is no longer watched: it is on host " + from;
  }
  if (t->spec.watch.any()) start_watch(*t);
  check_aborting(t->id);
}

void LoadService::on_lost(const std::string& id, const std::string& origin) {
  LoadTest* t = loads_.find(id);
  spread_.erase(id);  // the rows are no longer this host's to delete
  if (t == nullptr || t->ended()) return;
  end(*t, LoadState::kStopped,
      origin.empty() ? "the test is gone from the database: its other hosts gave it up"
                     : "host " + origin + " took the test over while this host was cut off");
  // The other hosts' shares send nothing more here: the copy ends with this host's workers.
  for (const auto& [slot, remote] : std::map<int, LoadTest::Remote>(t->remote))
    loads_.drop(*t, slot, "", unix_ms_now());
  // Taken over, the copy is another host's test, as a share is: the new origin keeps the test's
  // record (under the same id, in the table every host shares), this host forgets its copy a
  // while after it ends.
  if (!origin.empty()) t->origin = origin;
}

}  // namespace corral::master
