// The `hooks` setting: which events the daemon tells the outside world about, and how. Each
// event maps to one hook or a list of them; a hook is a webhook (an HTTP POST of the event's
// JSON payload) or a command (an argv run without a shell, the payload on its stdin).
// docs/operations.md "Hooks" describes the events, their payloads and the delivery rules.
//
//   "hooks": {
//     "worker_exit": {"url": "https://alerts.example.com/corral", "timeout": "5s",
//                     "retries": 3, "headers": {"Authorization": "Bearer abc"}},
//     "run_finished": [{"command": ["/usr/local/bin/notify", "--run"], "timeout": "10s"}]
//   }
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "shared/status.h"

namespace corral::config {

#define CORRAL_HOOK_EVENTS(X)                                                                 \
  X(kWorkerExit, "worker_exit")             /* a slot's worker process ended, any reason */   \
  X(kRunFinished, "run_finished")           /* a run ended: its last instance, or a cancel */ \
  X(kRunQuarantined, "run_quarantined")     /* a run's workers kept dying: it is not placed */ \
  X(kJournalFailed, "journal_failed")       /* journal writes started failing */              \
  X(kJournalRecovered, "journal_recovered") /* journal writes succeed again */

enum class HookEvent {
#define CORRAL_HOOK_EVENT_ENUM(name, text) name,
  CORRAL_HOOK_EVENTS(CORRAL_HOOK_EVENT_ENUM)
#undef CORRAL_HOOK_EVENT_ENUM
};
constexpr size_t kHookEvents = 5;

std::string_view to_string(HookEvent e);
std::optional<HookEvent> hook_event_from(std::string_view name);
// Every event, in the order above.
const std::array<HookEvent, kHookEvents>& all_hook_events();

// The defaults and bounds of a hook's settings.
constexpr uint64_t kWebhookTimeoutMs = 5000;
constexpr uint64_t kCommandTimeoutMs = 10000;
constexpr uint64_t kMinHookTimeoutMs = 10;
constexpr uint64_t kMaxHookTimeoutMs = 3600000;
constexpr int kWebhookRetries = 3;
constexpr int kMaxWebhookRetries = 10;

struct Hook {
  // A webhook has a url, a command has an argv: exactly one of the two is set.
  std::string url;                                           // http:// or https://
  std::vector<std::pair<std::string, std::string>> headers;  // sent with the POST, in order
  int retries = kWebhookRetries;                             // tries after the first one
  std::vector<std::string> command;  // argv; argv[0] is looked up in $PATH when it has no '/'
  // A webhook: each try's, connecting included. A command: its whole run, then SIGKILL.
  uint64_t timeout_ms = kWebhookTimeoutMs;

  bool is_webhook() const { return !url.empty(); }
  bool operator==(const Hook&) const = default;
};

struct Hooks {
  std::array<std::vector<Hook>, kHookEvents> by_event;

  const std::vector<Hook>& of(HookEvent e) const { return by_event[static_cast<size_t>(e)]; }
  bool empty() const;
  bool operator==(const Hooks&) const = default;
};

// Reads the `hooks` setting: an object from event names to a hook or an array of hooks.
// Errors are kInvalidArgument, naming the path of the field at fault:
//   `hooks.worker_exit[1].url: expected an http:// or https:// URL, got "ftp://x"`
//   `hooks: unknown event "worker_exits" (did you mean "worker_exit"?); known events: ...`
// Pure; any thread.
Result<Hooks> parse_hooks(const nlohmann::json& j);

// Back to config-file form: each event with hooks as an array, timeouts as text ("5s").
// parse_hooks(hooks_to_json(h)) gives back `h`.
nlohmann::json hooks_to_json(const Hooks& hooks);
// hooks_to_json() with every header value replaced by "(set)": for `corral config show` and
// GET /config, which must not show a token a header carries.
nlohmann::json hooks_for_display(const Hooks& hooks);

// A hook as logs name it: a webhook's URL without its user info, query or fragment
// ("https://alerts.example.com/corral"), or a command's argv[0]. Header values never appear.
std::string hook_name(const Hook& hook);

}  // namespace corral::config
