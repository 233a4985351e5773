// Load tests spread over the hosts of a cluster (docs/cluster.md, "Load tests over hosts";
// master/cluster/load_shares.h). The origin, the host the test was submitted to, picks the
// hosts, writes a share for each, runs share 0 and adds up what the others send as if each
// were one more worker. Every other host starts its share at the test's start time and sends
// its complete seconds; it ends its share when the origin stops the test or the test is gone.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <utility>

#include "master/load_service.h"
#include "shared/ipc/load_stats.h"
#include "shared/proc.h"

namespace corral::master {
namespace {

using http::Response;
using nlohmann::json;

// Between writing a test's shares and its start: each host reads its shares once a second.
constexpr int64_t kSpreadStartMs = 2500;
// A host that has not started its share this long after the test's start is left out of it.
constexpr int64_t kShareStartWithinMs = 10000;

// The hosts of a test over `asked` hosts (0: every live one): this one first, then the live
// hosts holding the fewest instances; or why there are not enough.
Result<std::vector<std::string>> pick_hosts(const cluster::Hosts& hosts, uint32_t asked) {
  if (!hosts.alive())
    return Status(Code::kUnavailable, "this host has no heartbeat in the cluster now");
  std::vector<cluster::HostRow> others;
  for (const cluster::HostRow& h : hosts.hosts()) {
    if (!h.dead && h.id != hosts.id()) others.push_back(h);
  }
  std::sort(others.begin(), others.end(), [](const cluster::HostRow& a, const cluster::HostRow& b) {
    return std::tie(a.held, a.id) < std::tie(b.held, b.id);
  });
  const size_t want = asked == 0 ? others.size() + 1 : asked;
  if (want > others.size() + 1) {
    return Status(Code::kUnavailable, "the test asks for " + std::to_string(want) + " hosts and " +
                                          std::to_string(others.size() + 1) + " are alive");
  }
  std::vector<std::string> ids = {hosts.id()};
  for (size_t i = 0; i + 1 < want; ++i) ids.push_back(others[i].id);
  return ids;
}

// Test `id` while it runs, and the slot of another host taking part in it; {nullptr, 0} when
// either is unknown, or the test ended.
std::pair<LoadTest*, int> remote_of(Loads& loads, const std::string& id, const std::string& host) {
  LoadTest* t = loads.find(id);
  if (t == nullptr || t->ended()) return {nullptr, 0};
  for (const auto& [slot, r] : t->remote) {
    if (r.host == host) return {t, slot};
  }
  return {nullptr, 0};
}

std::string error_of(const Response& r) {
  json j = json::parse(r.body, nullptr, false);
  return j.is_object() ? j.value("error", r.body) : r.body;
}

}  // namespace

void LoadService::join_cluster(cluster::Hosts* hosts) {
  hosts_ = hosts;
  cluster::LoadShares::Events events;
  events.shares = [this](std::vector<cluster::ShareRow> rows) { on_shares(std::move(rows)); };
  events.originated = [this] {
    std::vector<std::string> running;
    for (auto it = spread_.begin(); it != spread_.end();) {
      const LoadTest* t = loads_.find(*it);
      if (t == nullptr || t->ended()) {
        load_shares_->forget(*it);
        it = spread_.erase(it);
      } else {
        running.push_back(*it++);
      }
    }
    return running;
  };
  events.second = [this](const std::string& id, const std::string& host, json second) {
    on_remote_second(id, host, std::move(second));
  };
  events.share_state = [this](const std::string& id, const std::string& host,
                              const std::string& state) { on_share_state(id, host, state); };
  events.claimed = [this](cluster::ClaimedLoad c) { on_claimed(std::move(c)); };
  events.lost = [this](const std::string& id, const std::string& origin) { on_lost(id, origin); };
  load_shares_ =
      std::make_unique<cluster::LoadShares>(loop_, hosts_->db(), hosts_->id(), std::move(events));
  loads_.set_forward([this](const LoadTest& t, const ipc::LoadSecond& s) {
    if (!load_shares_) return;
    json j = ipc::to_json(s);
    j["load"] = t.id;
    load_shares_->post(t.id, std::move(j));
    if (s.done) load_shares_->set_state(t.id, "done");
  });
  load_shares_->start();
  hosts_->each_beat([this] {
    if (load_shares_) load_shares_->beat();
  });
  hosts_->each_death([this] {
    if (load_shares_) load_shares_->host_died();
  });
}

void LoadService::spread(LoadSubmission sub, const http::Responder& respond) {
  if (!hosts_ || !load_shares_) {
    respond.send(
        Response::error(400,
                        "load.hosts: this daemon is in no cluster: its journal is not a PostgreSQL "
                        "database (docs/cluster.md)"));
    return;
  }
  auto hosts = pick_hosts(*hosts_, sub.spec.hosts);
  if (!hosts) {
    respond.send(Response::error(503, "load.hosts: " + hosts.status().message()));
    return;
  }
  sub.id = loads_.next_id();
  if (hosts->size() == 1) {  // "all" of a lone host
    run(
        std::move(sub),
        [respond](const LoadTest& t) {
          respond.send(Response::json(201, {{"load", t.id}, {"workers", t.workers}, {"hosts", 1}}));
        },
        [respond](const std::string& why) { respond.send(Response::error(503, why)); });
    return;
  }
  sub.hosts = std::move(*hosts);
  sub.host_count = static_cast<uint32_t>(sub.hosts.size());
  sub.start_ms = unix_ms_now() + kSpreadStartMs;
  publish(std::make_shared<LoadSubmission>(std::move(sub)), respond);
}

// Writes the test and its shares for the other hosts, then starts share 0 here.
void LoadService::publish(std::shared_ptr<LoadSubmission> sub, const http::Responder& respond) {
  json body = {{"scenario", sub->scenario}, {"vars", sub->vars}, {"load", sub->load}};
  load_shares_->publish(sub->id, body, sub->start_ms, sub->hosts, [this, sub, respond](Status s) {
    if (s.code() == Code::kAlreadyExists) {
      spread(std::move(*sub), respond);  // the id is taken: another one
      return;
    }
    if (!s) {
      respond.send(Response::error(503, "load.hosts: cannot share the test: " + s.message()));
      return;
    }
    const std::string id = sub->id;
    const std::vector<std::string> hosts = sub->hosts;
    spread_.insert(id);
    run(
        std::move(*sub),
        [respond, hosts](const LoadTest& t) {
          respond.send(
              Response::json(201, {{"load", t.id}, {"workers", t.workers}, {"hosts", hosts}}));
        },
        [this, respond, id](const std::string& why) {
          respond.send(Response::error(503, why));
          spread_.erase(id);
          if (load_shares_) load_shares_->forget(id);  // the other hosts' shares end
        });
  });
}

void LoadService::on_shares(std::vector<cluster::ShareRow> rows) {
  std::set<std::string> listed;
  for (const cluster::ShareRow& row : rows) {
    listed.insert(row.load);
    if (LoadTest* t = loads_.find(row.load)) {
      if (!t->origin.empty() && !row.orphaned && t->origin != row.origin && !t->ended()) {
        spdlog::info("load {}: its origin is host {} now", row.load, row.origin);
        t->origin = row.origin;  // another host took the test over
      }
      if (t->origin == row.origin && row.stopping && !t->ended()) {
        end(*t, LoadState::kStopped, "stopped on its origin host " + row.origin);
      }
      continue;
    }
    if (starting_shares_.count(row.load) != 0) continue;
    if (row.state == "running") {
      load_shares_->set_state(row.load, "failed: the host restarted during the test");
    } else if (row.stopping) {
      load_shares_->set_state(row.load, "done");  // stopped before it started here
    } else {
      start_share(row);
    }
  }
  // Shares whose test is gone: ended on its origin, or its origin was declared dead.
  std::vector<std::string> gone;
  for (const LoadTest* t : loads_.list()) {
    if (!t->origin.empty() && !t->ended() && listed.count(t->id) == 0) gone.push_back(t->id);
  }
  for (const std::string& id : gone) {
    LoadTest* t = loads_.find(id);
    end(*t, LoadState::kStopped, "the test is gone from its origin host " + t->origin);
  }
}

void LoadService::start_share(const cluster::ShareRow& row) {
  LoadSubmission sub;
  if (!row.body.is_object()) {
    load_shares_->set_state(row.load, "failed: the test's row is not JSON");
    return;
  }
  if (auto refused = check(row.body, sub)) {
    load_shares_->set_state(row.load, "failed: " + error_of(*refused));
    return;
  }
  sub.id = row.load;
  sub.origin = row.origin;
  sub.host_index = row.index;
  sub.host_count = row.hosts;
  sub.start_ms = row.start_ms;
  sub.spec.thresholds.clear();  // the origin judges the test, and watches its target
  sub.spec.watch = {};
  starting_shares_.insert(row.load);
  spdlog::info("load {}: share {} of {} hosts, for host {}", row.load, row.index, row.hosts,
               row.origin);
  run(
      std::move(sub),
      [this](const LoadTest& t) {
        starting_shares_.erase(t.id);
        if (load_shares_) load_shares_->set_state(t.id, "running");
      },
      [this, id = row.load](const std::string& why) {
        starting_shares_.erase(id);
        if (load_shares_) load_shares_->set_state(id, "failed: " + why);
      });
}

void LoadService::on_remote_second(const std::string& id, const std::string& host, json second) {
  auto [t, slot] = remote_of(loads_, id, host);
  if (t == nullptr) return;
  second["load"] = id;
  auto s = ipc::load_second_from_json(second);
  if (!s) {
    loads_.drop(*t, slot, "host " + host + " sent a malformed second: " + s.status().message(),
                unix_ms_now());
    return;
  }
  (void)loads_.on_second(slot, std::move(*s), unix_ms_now());
  check_aborting(id);
}

void LoadService::on_share_state(const std::string& id, const std::string& host,
                                 const std::string& state) {
  auto [t, slot] = remote_of(loads_, id, host);
  if (t == nullptr || t->slots.count(slot) == 0) return;
  t->remote[slot].state = state;
  const int64_t now = unix_ms_now();
  if (state.rfind("failed", 0) == 0) {
    loads_.drop(*t, slot, "host " + host + ": " + state, now);
    return;
  }
  if (!hosts_->lists_alive(host)) {
    loads_.drop(*t, slot, "host " + host + " left during the test", now);
  } else if (state.empty() && now > t->started_ms + kShareStartWithinMs) {
    loads_.drop(*t, slot, "host " + host + " did not start its share", now);
  }
}

}  // namespace corral::master
