// A webhook's delivery: POST the payload to the hook's URL, and try again after a pause when
// the receiver cannot be reached, times out, or answers 5xx, 408 or 429, up to the hook's
// `retries`. Each try runs on libuv's thread pool with a blocking libcurl request
// (shared/http/blocking_client.h), as the load watcher scrapes, so the loop never waits.
// Loop thread only.
#pragma once

#include <uv.h>

#include <memory>
#include <string>

#include "config/hooks.h"
#include "master/hooks/delivery.h"
#include "shared/http/blocking_client.h"

namespace corral::master {

// What one try's outcome means: delivered, worth another try, or failed for good; `why` says
// what happened ("HTTP 503", "Timeout was reached").
struct TryVerdict {
  bool ok = false;
  bool retry = false;
  std::string why;
};
TryVerdict judge_try(const Result<http::HttpResult>& result);

// The pause before try number `next` (2 for the first retry): 500 ms, doubling, at most 30 s.
uint64_t retry_delay_ms(int next);

// Starts the first try of POSTing `payload` (a JSON text) to `hook.url`. Fails only when the
// try cannot be queued; every later failure comes through `done`.
Result<std::unique_ptr<Delivery>> start_webhook(uv_loop_t* loop, const config::Hook& hook,
                                                std::string payload, Delivery::Done done);

}  // namespace corral::master
