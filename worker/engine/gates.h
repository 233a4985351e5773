// This worker's side of per-target limits (config/limits.h): a gate per limit, holding back
// the requests of instances until the limit lets them through. The master splits each limit
// between the workers (master/limit_shares.h) and gives this worker its share (apply()); a
// request of run R to origin O passes R's gate on O, if R's scenario limits O, then the
// daemon's gate on O, if its config does, each in turn.
//
// A gate lets a request through while fewer than its max_in_flight are in flight and, with a
// rate, while its token bucket holds a token (filled at the rate, up to its burst). Waiting
// requests are held as small entries, one queue per run; the next to go is from the run with
// the fewest let through per unit of its priority since it began waiting, so a small run
// behind a large one is not starved. A request's timeout starts when it is built, after its
// gates: waiting here does not count against it (a step's own deadline still does).
// Loop thread only.
#pragma once

#include <uv.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

#include "shared/ipc/limits.h"
#include "shared/uv/timer.h"

namespace corral::worker {

class Gates {
 public:
  struct Gate;
  // The places a request let through holds, until it ends (done()).
  struct Pass {
    std::shared_ptr<Gate> held[2];
  };
  // A request may go now: the engine sends it and calls done(pass) once it ended.
  using Go = std::function<void(uint64_t serial, std::shared_ptr<Pass> pass)>;

  Gates(uv_loop_t* loop, Go go);
  ~Gates();
  Gates(const Gates&) = delete;
  Gates& operator=(const Gates&) = delete;

  // The master's shares, replacing the table. The requests waiting at a gate that is no longer
  // in it go on to their next gate, or go.
  void apply(const ipc::LimitShares& shares);
  bool empty() const { return table_.empty(); }
  // A request of instance `serial`, of `run` to `origin`. False when it has no gate to pass
  // (nothing is done: the caller sends it). Else it goes now (go() is called before this
  // returns) or waits until its gates let it through. `weight`: its run's priority (1 to 100).
  bool submit(std::string_view run, uint32_t weight, std::string_view origin, uint64_t serial);
  // The request that held `pass` ended; `sent`: whether it went out at all (if not, its
  // tokens are given back).
  void done(Pass& pass, bool sent);
  // What each gate's requests are doing, for the heartbeat.
  ipc::LimitUses use() const;

  struct Waiter {
    uint64_t serial;
    std::shared_ptr<Pass> pass;
    size_t stage;  // which of pass->held it waits to fill
  };
  struct Queue {
    std::deque<Waiter> waiters;
    uint32_t weight = 1;
    double served = 0;  // let through since it began waiting, per unit of weight
  };
  struct Gate {
    ipc::LimitShare share;
    bool live = true;  // in the table; a gate that left it lives on in the passes holding it
    double tokens = 0;
    uint64_t refilled_ns = 0;
    uint64_t in_flight = 0, waiting = 0, started = 0, throttled = 0;
    std::map<std::string, Queue, std::less<>> queues;  // by run
  };

 private:
  // Fills `w` at `gate` at once if it may go, else queues it there.
  void enter(const std::shared_ptr<Gate>& gate, std::string_view run, uint32_t weight,
             Waiter w);
  // `w` is past its gate on `origin` at w.stage (let through, or the gate is gone): on to the
  // daemon's gate, or go.
  void advance(std::string_view run, uint32_t weight, std::string_view origin, Waiter w);
  bool may_pass(Gate& g, uint64_t now_ns) const;
  void let_through(const std::shared_ptr<Gate>& gate, Waiter& w);
  // Lets waiting requests through while the gates allow, then arms the timer for the next
  // token any gate waits for. Re-entered calls (a request that goes and ends at once) only
  // ask the outer call to go round again.
  void pump();
  void pump_gate(const std::shared_ptr<Gate>& gate, uint64_t now_ns);

  // Orders keys as LimitKey does, and finds one by views of its parts without copying them.
  struct KeyLess {
    using is_transparent = void;
    using View = std::pair<std::string_view, std::string_view>;
    static View view(const ipc::LimitKey& k) { return {k.run, k.origin}; }
    static const View& view(const View& v) { return v; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const { return view(a) < view(b); }
  };
  using Table = std::map<ipc::LimitKey, std::shared_ptr<Gate>, KeyLess>;
  const std::shared_ptr<Gate>* find(std::string_view run, std::string_view origin) const;

  Go go_;
  uv::Timer timer_;
  Table table_;
  uint64_t version_ = 0;
  bool pumping_ = false;
  bool again_ = false;
};

}  // namespace corral::worker
