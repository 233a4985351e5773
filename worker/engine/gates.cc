#include "worker/engine/gates.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace corral::worker {
namespace {

double capacity(const Gates::Gate& g) { return std::max(1.0, g.share.burst); }

void refill(Gates::Gate& g, uint64_t now_ns) {
  if (g.share.rate && now_ns > g.refilled_ns) {
    double seconds = static_cast<double>(now_ns - g.refilled_ns) / 1e9;
    g.tokens = std::min(capacity(g), g.tokens + *g.share.rate * seconds);
  }
  g.refilled_ns = now_ns;
}

// The queue of the run let through least per unit of weight (the first on a tie).
std::map<std::string, Gates::Queue, std::less<>>::iterator fairest(Gates::Gate& g) {
  auto best = g.queues.begin();
  for (auto it = g.queues.begin(); it != g.queues.end(); ++it) {
    if (it->second.served < best->second.served) best = it;
  }
  return best;
}

}  // namespace

Gates::Gates(uv_loop_t* loop, Go go) : go_(std::move(go)), timer_(loop) {}

Gates::~Gates() { timer_.close(); }

const std::shared_ptr<Gates::Gate>* Gates::find(std::string_view run,
                                                 std::string_view origin) const {
  auto it = table_.find(KeyLess::View{run, origin});
  return it == table_.end() ? nullptr : &it->second;
}

void Gates::apply(const ipc::LimitShares& shares) {
  uint64_t now = uv_hrtime();
  Table next;
  for (const ipc::LimitShare& s : shares.shares) {
    auto it = table_.find(s.key);
    std::shared_ptr<Gate> g;
    if (it != table_.end()) {
      g = it->second;
      refill(*g, now);
      g->share = s;
      g->tokens = std::min(g->tokens, capacity(*g));
    } else {
      g = std::make_shared<Gate>();
      g->share = s;
      g->tokens = capacity(*g);
      g->refilled_ns = now;
    }
    next[s.key] = std::move(g);
  }
  std::vector<std::shared_ptr<Gate>> gone;
  for (auto& [key, g] : table_) {
    if (!next.count(key)) gone.push_back(g);
  }
  table_ = std::move(next);
  version_ = shares.version;
  for (const auto& g : gone) {
    g->live = false;
    auto queues = std::move(g->queues);
    g->queues.clear();
    g->waiting = 0;
    for (auto& [run, q] : queues) {
      for (Waiter& w : q.waiters) advance(run, q.weight, g->share.key.origin, std::move(w));
    }
  }
  pump();
}

bool Gates::submit(std::string_view run, uint32_t weight, std::string_view origin,
                   uint64_t serial) {
  size_t stage = 0;
  const std::shared_ptr<Gate>* gate = find(run, origin);
  if (gate == nullptr) {
    stage = 1;
    gate = find("", origin);
    if (gate == nullptr) return false;
  }
  enter(*gate, run, weight, Waiter{serial, std::make_shared<Pass>(), stage});
  return true;
}

void Gates::advance(std::string_view run, uint32_t weight, std::string_view origin,
                    Waiter w) {
  if (w.stage == 0) {
    // Past its run's gate: on to the daemon's on the same origin, if there is one.
    w.stage = 1;
    if (const std::shared_ptr<Gate>* all = find("", origin)) {
      enter(*all, run, weight, std::move(w));
      return;
    }
  }
  go_(w.serial, std::move(w.pass));
}

void Gates::enter(const std::shared_ptr<Gate>& gate, std::string_view run, uint32_t weight,
                  Waiter w) {
  if (gate->queues.empty() && may_pass(*gate, uv_hrtime())) {
    let_through(gate, w);
    advance(run, weight, gate->share.key.origin, std::move(w));
    return;
  }
  auto it = gate->queues.find(run);
  if (it == gate->queues.end()) {
    it = gate->queues.emplace(std::string(run), Queue{}).first;
    // It starts level with the others, not behind all they were let through.
    double level = std::numeric_limits<double>::max();
    for (const auto& [r, q] : gate->queues) {
      if (r != run) level = std::min(level, q.served);
    }
    it->second.served = level == std::numeric_limits<double>::max() ? 0 : level;
  }
  it->second.weight = std::max<uint32_t>(1, weight);
  it->second.waiters.push_back(std::move(w));
  gate->waiting += 1;
  gate->throttled += 1;
  pump();  // arms the timer when a token is what it waits for
}

bool Gates::may_pass(Gate& g, uint64_t now_ns) const {
  if (g.share.max_in_flight && g.in_flight >= *g.share.max_in_flight) return false;
  if (g.share.rate) {
    refill(g, now_ns);
    if (g.tokens < 1) return false;
  }
  return true;
}

void Gates::let_through(const std::shared_ptr<Gate>& gate, Waiter& w) {
  gate->in_flight += 1;
  gate->started += 1;
  if (gate->share.rate) gate->tokens -= 1;
  w.pass->held[w.stage] = gate;
}

void Gates::done(Pass& pass, bool sent) {
  for (auto& held : pass.held) {
    if (!held) continue;
    held->in_flight -= std::min<uint64_t>(held->in_flight, 1);
    if (!sent && held->share.rate) held->tokens = std::min(capacity(*held), held->tokens + 1);
    held.reset();
  }
  pump();
}

void Gates::pump() {
  if (pumping_) {
    again_ = true;
    return;
  }
  pumping_ = true;
  do {
    again_ = false;
    uint64_t now = uv_hrtime();
    // (A request let through may end at once and re-enter: work on a copy of the table.)
    std::vector<std::shared_ptr<Gate>> gates;
    for (const auto& [key, g] : table_) {
      if (!g->queues.empty()) gates.push_back(g);
    }
    for (const auto& g : gates) pump_gate(g, now);
  } while (again_);
  pumping_ = false;
  // The earliest token a gate with waiting requests (and room in flight) waits for.
  double wait_s = -1;
  for (const auto& [key, g] : table_) {
    if (g->queues.empty() || !g->share.rate) continue;
    if (g->share.max_in_flight && g->in_flight >= *g->share.max_in_flight) continue;
    if (*g->share.rate <= 0) continue;  // a share of 0: the master's next share frees it
    double s = std::max(0.0, (1 - g->tokens) / *g->share.rate);
    if (wait_s < 0 || s < wait_s) wait_s = s;
  }
  if (wait_s < 0) {
    timer_.stop();
    return;
  }
  auto ms = static_cast<uint64_t>(std::ceil(wait_s * 1000));
  timer_.start(std::max<uint64_t>(ms, 1), 0, [this] { pump(); });
}

void Gates::pump_gate(const std::shared_ptr<Gate>& gate, uint64_t now_ns) {
  while (gate->live && !gate->queues.empty() && may_pass(*gate, now_ns)) {
    auto q = fairest(*gate);
    std::string run = q->first;
    Waiter w = std::move(q->second.waiters.front());
    q->second.waiters.pop_front();
    q->second.served += 1.0 / q->second.weight;
    uint32_t weight = q->second.weight;
    gate->waiting -= 1;
    if (q->second.waiters.empty()) gate->queues.erase(q);
    let_through(gate, w);
    advance(run, weight, gate->share.key.origin, std::move(w));
  }
}

ipc::LimitUses Gates::use() const {
  ipc::LimitUses out;
  out.version = version_;
  for (const auto& [key, g] : table_) {
    out.use.push_back({key, g->in_flight, g->waiting, g->started, g->throttled});
  }
  return out;
}

}  // namespace corral::worker
