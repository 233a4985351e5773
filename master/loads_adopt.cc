// A test over hosts taken over by one of its hosts when its origin is gone (loads.h, adopt();
// docs/cluster.md, "Load tests over hosts").
#include "master/loads.h"

namespace corral::master {

void Loads::adopt(LoadTest& t, std::vector<ipc::LoadSecond> own, std::vector<ShareHistory> others,
                  int64_t now_ms) {
  // This host's workers' seconds not yet complete stay; everything else is added up again.
  std::map<uint32_t, ipc::LoadSecond> partial = std::move(t.pending);
  t.pending.clear();
  t.total = ipc::LoadSecond{};
  t.total.load = t.id;
  t.series.clear();
  t.seconds = 0;
  t.crossed.clear();
  t.origin.clear();
  for (const ipc::LoadSecond& s : own) {
    if (!s.done) t.pending[s.second].add(s);  // a share's end carries nothing
  }
  for (const auto& [second, s] : partial) {
    t.pending[second].add(s);
    t.local[second].add(s);  // forwarded, now as the origin's own
  }
  t.remote.clear();
  for (const ShareHistory& h : others) {
    t.remote[host_slot(h.index)] = {h.host, h.state};
    t.slots.insert(host_slot(h.index));
  }
  for (ShareHistory& h : others) {
    for (ipc::LoadSecond& s : h.seconds) {
      s.load = t.id;
      (void)on_second(host_slot(h.index), std::move(s), now_ms);
    }
  }
  for (const ShareHistory& h : others) {
    if (!h.left.empty()) drop(t, host_slot(h.index), h.left, now_ms);
  }
  complete_seconds(t);
  finish_if_done(t, now_ms);
}

}  // namespace corral::master
