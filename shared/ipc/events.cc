#include "shared/ipc/events.h"

#include "shared/ipc/fields.h"
#include "shared/text/utf8.h"

namespace corral::ipc {

using nlohmann::json;

std::string_view to_string(EventKind k) {
  switch (k) {
#define CORRAL_IPC_CASE(name, text) \
  case EventKind::name:             \
    return text;
    CORRAL_EVENT_KINDS(CORRAL_IPC_CASE)
#undef CORRAL_IPC_CASE
  }
  return "?";
}

std::string_view to_string(Outcome o) {
  switch (o) {
#define CORRAL_IPC_CASE(name, text) \
  case Outcome::name:               \
    return text;
    CORRAL_OUTCOMES(CORRAL_IPC_CASE)
#undef CORRAL_IPC_CASE
  }
  return "?";
}

std::optional<Outcome> outcome_from(std::string_view text) {
#define CORRAL_IPC_PARSE(name, word) \
  if (text == word) return Outcome::name;
  CORRAL_OUTCOMES(CORRAL_IPC_PARSE)
#undef CORRAL_IPC_PARSE
  return std::nullopt;
}

namespace {

std::optional<EventKind> kind_from(std::string_view text) {
#define CORRAL_IPC_PARSE(name, word) \
  if (text == word) return EventKind::name;
  CORRAL_EVENT_KINDS(CORRAL_IPC_PARSE)
#undef CORRAL_IPC_PARSE
  return std::nullopt;
}

void read_outcome(detail::FieldReader& r, Event& e, bool step) {
  std::string state;
  r.text("state", state, true);
  if (!r.ok()) return;
  auto o = outcome_from(state);
  if (!o || (step && *o == Outcome::kCancelled)) {
    r.fail("state", "unknown state \"" + state + "\"");
    return;
  }
  e.outcome = *o;
}

// The event's "checkpoint" (required) into e.checkpoint.
Status read_checkpoint(detail::FieldReader& r, Event& e) {
  json cp;
  r.object("checkpoint", cp, true);
  if (!r.ok()) return r.status();
  auto c = checkpoint_from_json(cp, r.path("checkpoint"));
  if (!c) return c.status();
  e.checkpoint = std::move(*c);
  return Status::ok();
}

}  // namespace

json to_json(const Event& e) {
  json j = {{"t", to_string(e.kind)}, {"run", e.run}, {"i", e.index}};
  switch (e.kind) {
    case EventKind::kStep:
      j["step"] = e.step;
      j["state"] = to_string(e.outcome);
      j["attempts"] = e.attempts;
      j["started_ms"] = e.started_ms;
      j["ended_ms"] = e.ended_ms;
      j["status"] = e.status;
      if (e.until_ms >= 0) j["until_ms"] = e.until_ms;
      if (e.tls_us > 0) j["tls_us"] = e.tls_us;
      if (!e.reason.empty()) j["reason"] = e.reason;
      if (!e.url.empty()) j["url"] = e.url;
      if (!e.body.empty()) j["body"] = e.body;
      if (!e.vars.is_null()) j["vars"] = e.vars;
      if (e.in_branch) j["checkpoint"] = to_json(e.checkpoint);
      return j;
    case EventKind::kDone:
      j["state"] = to_string(e.outcome);
      j["reason"] = e.reason;
      j["started_ms"] = e.started_ms;
      j["ended_ms"] = e.ended_ms;
      return j;
    case EventKind::kProgress:
      j["checkpoint"] = to_json(e.checkpoint);
      return j;
  }
  return j;
}

Result<Event> event_from_json(const json& j, const std::string& path) {
  detail::FieldReader r(j, path);
  std::string kind;
  Event e;
  r.text("t", kind, true);
  r.text("run", e.run, true);
  r.u32("i", e.index, true);
  if (!r.ok()) return r.status();
  auto k = kind_from(kind);
  if (!k) return protocol_error(r.path("t") + ": unknown event kind \"" + kind + "\"");
  e.kind = *k;
  switch (e.kind) {
    case EventKind::kStep:
      r.u32("step", e.step, true);
      r.u32("attempts", e.attempts);
      r.i64("started_ms", e.started_ms);
      r.i64("ended_ms", e.ended_ms);
      r.i32("status", e.status);
      r.i64("until_ms", e.until_ms);
      // Absent means "not a poll" (-1); a present time is never negative.
      if (r.ok() && j.contains("until_ms") && e.until_ms < 0) {
        r.fail("until_ms", "expected a time of 0 or more, got " + std::to_string(e.until_ms));
      }
      r.u64("tls_us", e.tls_us);
      r.text("reason", e.reason);
      r.text("url", e.url);
      r.text("body", e.body);
      if (r.ok() && e.body.size() > kBodyExcerptBytes + text::kEllipsis.size()) {
        r.fail("body", "expected at most " + std::to_string(kBodyExcerptBytes) +
                           " bytes of a response, got " + std::to_string(e.body.size()));
      }
      r.object("vars", e.vars);
      if (j.contains("checkpoint")) {
        if (Status s = read_checkpoint(r, e); !s) return s;
        e.in_branch = true;
      }
      break;
    case EventKind::kDone:
      r.text("reason", e.reason);
      r.i64("started_ms", e.started_ms);
      r.i64("ended_ms", e.ended_ms);
      break;
    case EventKind::kProgress:
      if (Status s = read_checkpoint(r, e); !s) return s;
      return e;
  }
  if (r.ok()) read_outcome(r, e, e.kind == EventKind::kStep);
  if (!r.ok()) return r.status();
  return e;
}

}  // namespace corral::ipc
