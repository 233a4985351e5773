// The runner base of the kinds that send the step's request and judge each answer (request,
// poll). The engine sends, tries again (`retry`), and ends the step on a transport error or an
// `abort_if` (Engine::on_http_response); the kind judges what is left.
#pragma once

#include "worker/engine/engine.h"
#include "worker/engine/step_runner.h"

namespace corral::worker {

// Whether `retry` may try again after a response of `status` (not in retry.non_retryable).
bool retryable_status(const scenario::Step& step, int status);

class HttpStepRunner : public StepRunner {
 public:
  // Fails the step if its deadline passed while it was not running (resumed late); else sends.
  void run(Engine& engine, Instance& in) const override;
  // The next try or attempt is due.
  void on_wake(Engine& engine, Instance& in) const override;
  void on_response(Engine& engine, Instance& in, HttpResponse&& resp) const final;
  // Leaving (a cancelled branch or run, a step past its deadline, handed on): a request in
  // flight is aborted.
  void left(Engine& engine, const Instance& in) const final { engine.abandon_request(in); }

  // Counts what starts as a try is sent (in.cp.attempts; the engine counts in.cp.tries).
  virtual void count_attempt(ipc::Checkpoint& cp) const = 0;
  // A response that is no transport error, held no `abort_if` and was not retried: pass the
  // step, fail it, or wait for another attempt.
  virtual void judge(Engine& engine, Instance& in, const scenario::ResponseView& view,
                     const HttpResponse& resp) const = 0;
  // Load mode: whether a status of 400 or more is an error in itself, for the step's
  // counters (a step that judges the status with conditions says no).
  virtual bool status_is_error(const scenario::Step& /*step*/) const { return false; }

 private:
  void send_try(Engine& engine, Instance& in) const;
};

}  // namespace corral::worker
