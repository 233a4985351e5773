#include "worker/engine/http_step.h"

#include <algorithm>

#include "shared/proc.h"
#include "worker/engine/instance.h"

namespace corral::worker {

bool retryable_status(const scenario::Step& step, int status) {
  const auto& never = step.retry.non_retryable;
  return std::find(never.begin(), never.end(), status) == never.end();
}

void HttpStepRunner::run(Engine& engine, Instance& in) const {
  if (!engine.ended_past_deadline(in)) send_try(engine, in);
}

void HttpStepRunner::on_wake(Engine& engine, Instance& in) const { send_try(engine, in); }

void HttpStepRunner::on_response(Engine& engine, Instance& in, HttpResponse&& resp) const {
  engine.on_http_response(in, std::move(resp), *this);
}

void HttpStepRunner::send_try(Engine& engine, Instance& in) const {
  count_attempt(in.cp);
  engine.send(in);
}

}  // namespace corral::worker
