// The FIFO both HTTP clients put in front of their transport: a request starts at once while
// the client has room, else it waits, unbuilt (send_lazy), until start_waiting() finds room.
// Loop thread only.
#pragma once

#include <deque>

#include "worker/http/client.h"

namespace corral::worker {

class QueuedClient : public HttpClient {
 public:
  void send(HttpRequest req, Done done) final;
  void send_lazy(Make make, Done done) final;
  size_t in_flight() const override { return in_flight_; }

 protected:
  // Whether one more request may start now.
  virtual bool has_room() const = 0;
  // Starts a request already counted in in_flight_; the client decrements it when the
  // request ends (or leaves this client).
  virtual void start(HttpRequest req, Done done) = 0;
  // Starts waiting requests while there is room; call it whenever room frees.
  void start_waiting();

  size_t in_flight_ = 0;  // started and waiting, not yet done

 private:
  void start_made(Make make, Done done);

  struct Waiting {
    Make make;
    Done done;
  };
  std::deque<Waiting> waiting_;
};

}  // namespace corral::worker
