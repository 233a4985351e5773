// The parts the lean client's protocols share (lean_client.h): one request in flight
// (Exchange), how its response body is taken in (decoded, capped, counted against the
// worker's BodyBudget), and what a transfer paused by that budget offers the client.
// Internal to worker/http.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "worker/http/client.h"
#include "worker/http/inflate.h"
#include "worker/http/url.h"

namespace corral::worker {
class LeanClient;
}

namespace corral::worker::lean {

struct Exchange {
  HttpRequest req;
  HttpResponse resp;
  HttpClient::Done done;
  HttpUrl url;
  uint64_t deadline_ms = 0;  // uv_now() by which every hop must be done
  uint64_t started_ns = 0;   // this hop's start, for total_ms
  uint64_t max_body = 0;
  bool retried = false;      // sent again once after a stale connection or a refused stream
  uint64_t budget_held = 0;  // counted in the BodyBudget for this exchange
  uint64_t reserved = 0;     // of which reserved up front for a Content-Length
  // The body as it comes.
  std::unique_ptr<Inflater> inflate;  // Content-Encoding gzip or deflate
  bool too_large = false;             // it passed max_body
  std::string bad_body;               // why it could not be decoded
};

// Takes a piece of `ex`'s body as it came on the wire.
enum class Take {
  kTaken,     // appended (or it decoded to nothing yet)
  kWait,      // decoded into `wait`, which the budget has no room for yet: pause the transfer
  kTooLarge,  // past max_body (ex.too_large is set)
  kBad,       // not what its Content-Encoding says (ex.bad_body says why)
};
Take take_body(LeanClient& client, Exchange& ex, const char* data, size_t len, std::string& wait);
// Appends decoded bytes to the body, counting past the reservation against the budget.
void append_body(LeanClient& client, Exchange& ex, const char* data, size_t len);
// Takes `bytes` (a Content-Length) from the budget at once, before the body is read, so that
// bodies in flight never all wait for each other's memory. False when there is no room.
bool reserve_body(LeanClient& client, Exchange& ex, uint64_t bytes);
// The transport error for a body past max_body, naming the cap.
std::string too_large_error(const Exchange& ex);

// A transfer paused by the BodyBudget (an HTTP/1.1 connection or an HTTP/2 stream), in the
// client's list until it resumes or fails.
class Paused {
 public:
  // Resumes when the bytes it waits with fit the budget; false when they don't (it stays).
  virtual bool try_resume() = 0;
  virtual uint64_t held_body() const = 0;
  virtual uint64_t waiting_bytes() const = 0;
  // Ends the transfer: the budget cannot ever let it finish.
  virtual void fail_over_budget() = 0;

 protected:
  ~Paused() = default;
};

}  // namespace corral::worker::lean
