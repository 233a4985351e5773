// The sockets of the WebSocket steps in one engine (a StepRunner::State shared by the four
// kinds). A socket belongs to a holder and has a name: the holder is the instance that opened it
// (it goes when the instance leaves the engine), or, in a held load test, the VU (it lives
// across the VU's iterations and goes when the VU retires: IterationSink::SocketHold). Messages
// that come while no ws_receive waits are kept in the socket's backlog, oldest dropped first.
// Loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/uv/timer.h"
#include "worker/engine/engine.h"
#include "worker/engine/step_runner.h"
#include "worker/http/link.h"
#include "worker/http/tls_context.h"
#include "worker/ws/client.h"
#include "worker/ws/socket.h"

namespace corral::steps::ws {

struct Message {
  corral::ws::Kind kind;
  std::string data;
  uint64_t arrived_ns = 0;
};

// A socket of a holder, by name. The socket's user data points here (events find it without a
// lookup) until its holder lets it go.
struct Entry {
  worker::ws::Socket* socket = nullptr;
  std::string name;
  uint64_t serial = 0;  // the instance using it now; 0: none (a held socket between iterations)
  bool open = false;
  std::optional<worker::ws::Closed> closed;
  std::vector<Message> backlog;
  size_t backlog_max = 0;
  uint64_t wait_from_ns = 0;  // what a ws_receive's latency counts from: the last send, or 0
};

// "closed by the server with 1001 \"bye\"", "ended: the connection was reset".
std::string how_closed(const worker::ws::Closed& c);

class Sockets final : public worker::StepRunner::State, public worker::ws::Events {
 public:
  explicit Sockets(worker::Engine& engine);

  // The socket `name` of instance `serial` (its own, or its VU's), or nullptr.
  Entry* find(uint64_t serial, const std::string& name);
  // Opens `name` for instance `serial` under `hold` (hold.key 0: the instance's own), closing
  // a socket of that name the holder had. Returns the entry.
  Entry& open(uint64_t serial, const std::string& name,
              const worker::IterationSink::SocketHold& hold, worker::ws::OpenRequest req,
              size_t backlog);
  // A held socket that is open serves instance `serial` from now on; false when there is none
  // (it must be opened).
  bool reuse(uint64_t serial, const std::string& name, uint64_t key);

  // The waiting ws_receive of `in` fails at its deadline unless a message ends it first.
  // Deadlines of one step limit come in order, so each limit has a FIFO behind one timer: a
  // receive costs no entry in the engine's wake-up heap, where an answered one would stay until
  // its time (at thousands of messages a second, tens of thousands of them).
  void time_out(worker::Instance& in);

  void instance_gone(uint64_t serial) override;
  void holder_gone(uint64_t key) override;
  void count_sockets(uint32_t group, bool forget, worker::SocketCounts& out) override;

 private:
  // Entries by name; an entry's address stays while it is in the map.
  using Named = std::unordered_map<std::string, Entry>;

  Named* named(bool held, uint64_t key);
  void forget(bool held, uint64_t key, const std::string& name);
  // Ends a socket whose holder went: a close handshake when it is open (the socket is dropped
  // once that ends; its user data is cleared meanwhile), else at once.
  void let_go(Entry& e);
  // Runs fn(instance, entry) for an event of socket `s`: the instance is nullptr between a
  // held socket's iterations. Nothing runs for a socket being let go.
  template <typename Fn>
  void deliver(worker::ws::Socket& s, const char* where, Fn&& fn);

  struct Deadline {
    int64_t at_ms;
    uint64_t serial;
    size_t step;  // which wait of the instance it is
    int64_t step_started_ms;
  };
  void on_deadlines();
  void arm_deadlines();

  void on_open(worker::ws::Socket& s, worker::ws::Opened&& o) override;
  void on_message(worker::ws::Socket& s, corral::ws::Kind kind, std::string_view data) override;
  void on_closed(worker::ws::Socket& s, worker::ws::Closed&& c) override;

  worker::Engine& engine_;
  worker::tls::Contexts contexts_;  // its own: the engine's HTTP client keeps its to itself
  worker::Handshakes handshakes_;
  worker::ws::Client client_;
  std::unordered_map<uint64_t, Named> own_;                // by instance serial
  std::unordered_map<uint64_t, Named> held_;               // by SocketHold::key
  std::unordered_map<uint64_t, uint64_t> held_by_serial_;  // instance -> its VU's key
  std::map<uint64_t, std::deque<Deadline>> deadlines_;  // by step limit, oldest first
  uv::Timer deadline_timer_;
  int64_t timer_at_ms_ = 0;  // when the timer fires; 0 when it is stopped
};

// The engine's Sockets.
Sockets& sockets(worker::Engine& engine);

// Judges a message for the instance's waiting ws_receive: abort_if fails the step, `until`
// passes it (with the captures); true when the message ended the wait.
bool judge_message(worker::Engine& engine, worker::Instance& in, Entry& e, std::string_view data,
                   uint64_t arrived_ns);

}  // namespace corral::steps::ws
