// This daemon as one host of a cluster, when its journal is PostgreSQL (docs/cluster.md):
// its row in the hosts table, renewed every second (master/cluster/hosts.h), and GET /cluster.
#include <unistd.h>

#include <cstdio>

#include "master/daemon_impl.h"

namespace corral::master {
namespace {

// This host's id: the machine's name and a hash of the home, so that a restart on the same
// home is the same host, and two homes on one machine are two hosts.
std::string host_id(const std::string& home) {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') std::snprintf(name, 10, "host");
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : home) h = (h ^ c) * 16777619u;
  char suffix[16];
  std::snprintf(suffix, sizeof suffix, "%08x", h);
  return std::string(name) + "/" + suffix;
}

}  // namespace

void Daemon::start_cluster() {
  if (!journal::is_postgresql(journal_path())) return;
  auto load = [this] {
    cluster::Hosts::Load l;
    for (const Slot& s : supervisor_.slots()) l.held += dispatcher_.load(s.index);
    l.capacity = dispatcher_.capacity();
    return l;
  };
  hosts_ = std::make_unique<cluster::Hosts>(loop_, journal_path(), journal_label(),
                                            host_id(cfg_.home), [this] { return listen_address(); },
                                            load);
  hosts_->start();
}

void Daemon::api_cluster(const ApiCall& c) {
  if (!hosts_) {
    c.respond.send(Response::error(
        404, "this daemon is in no cluster: its journal is not a PostgreSQL database "
             "(docs/cluster.md)"));
    return;
  }
  c.respond.send(Response::json(200, hosts_->to_json()));
}

}  // namespace corral::master
