// The `hooks` setting: what it accepts, the defaults it fills in, its errors (each naming the
// field at fault), its config-file form, and how logs name a hook.
#include "config/hooks.h"

#include <catch2/catch.hpp>

#include "config/check.h"
#include "config/config.h"
#include "tests/support/temp_dir.h"

namespace corral::config {
namespace {

using nlohmann::json;

// The error parse_hooks() gives for `text`, or "(no error)".
std::string error_of(const char* text) {
  Result<Hooks> h = parse_hooks(json::parse(text));
  return h ? "(no error)" : h.status().message();
}

TEST_CASE("hooks: a webhook and a command, alone or in a list, with their defaults") {
  Result<Hooks> h = parse_hooks(json::parse(R"({
    "worker_exit": {"url": "https://alerts.example.com/corral"},
    "run_finished": [
      {"command": ["/usr/local/bin/notify", "--run"]},
      {"url": "http://127.0.0.1:9000/hook", "timeout": "2s", "retries": 0,
       "headers": {"Authorization": "Bearer abc", "X-Team": "qa"}}
    ]})"));
  REQUIRE(h);
  REQUIRE(h->of(HookEvent::kWorkerExit).size() == 1);
  const Hook& alert = h->of(HookEvent::kWorkerExit)[0];
  CHECK(alert.is_webhook());
  CHECK(alert.url == "https://alerts.example.com/corral");
  CHECK(alert.timeout_ms == kWebhookTimeoutMs);
  CHECK(alert.retries == kWebhookRetries);
  CHECK(alert.headers.empty());

  REQUIRE(h->of(HookEvent::kRunFinished).size() == 2);
  const Hook& notify = h->of(HookEvent::kRunFinished)[0];
  CHECK_FALSE(notify.is_webhook());
  CHECK(notify.command == std::vector<std::string>{"/usr/local/bin/notify", "--run"});
  CHECK(notify.timeout_ms == kCommandTimeoutMs);
  const Hook& local = h->of(HookEvent::kRunFinished)[1];
  CHECK(local.timeout_ms == 2000);
  CHECK(local.retries == 0);
  // nlohmann keeps object keys sorted.
  CHECK(local.headers == std::vector<std::pair<std::string, std::string>>{
                             {"Authorization", "Bearer abc"}, {"X-Team", "qa"}});

  CHECK(h->of(HookEvent::kJournalFailed).empty());
  CHECK_FALSE(h->empty());
  CHECK(parse_hooks(json::object())->empty());
}

TEST_CASE("hooks: each mistake is an error naming its field") {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {R"([])", "hooks: expected an object of events and their hooks, got []"},
      {R"({"worker_exit": [{"url": "http://a/x"}, {"url": "ftp://b/x"}]})",
       R"(hooks.worker_exit[1].url: expected an http:// or https:// URL, got "ftp://b/x")"},
      {R"({"worker_exit": {"url": "example.com/hook"}})",
       R"(hooks.worker_exit.url: expected an http:// or https:// URL, got "example.com/hook")"},
      {R"({"worker_exit": {"url": "http://"}})",
       R"(hooks.worker_exit.url: expected an http:// or https:// URL, got "http://")"},
      {R"({"worker_exit": {"url": 7}})",
       "hooks.worker_exit.url: expected an http:// or https:// URL, got 7"},
      {R"({"run_finished": {}})",
       R"(hooks.run_finished: expected "url" (a webhook) or "command" (a program to run))"},
      {R"({"run_finished": {"url": "http://a/", "command": ["/bin/true"]}})",
       R"(hooks.run_finished: give either "url" or "command", not both)"},
      {R"({"run_finished": "http://a/"})",
       R"(hooks.run_finished: expected a hook object, got "http://a/")"},
      {R"({"run_finished": {"url": "http://a/", "timeout": "5"}})",
       R"(hooks.run_finished.timeout: expected a duration like "10s", got "5")"},
      {R"({"run_finished": {"url": "http://a/", "timeout": "2h"}})",
       R"(hooks.run_finished.timeout: must be between 10ms and 1h, got "2h")"},
      {R"({"run_finished": {"url": "http://a/", "retries": 11}})",
       "hooks.run_finished.retries: expected an integer from 0 to 10, got 11"},
      {R"({"run_finished": {"url": "http://a/", "retry": 1}})",
       "hooks.run_finished.retry: unknown field (known: url, timeout, retries, headers)"},
      {R"({"run_finished": {"command": ["/bin/true"], "retries": 1}})",
       "hooks.run_finished.retries: unknown field (known: command, timeout)"},
      {R"({"run_finished": {"url": "http://a/", "headers": {"Bad Name": "x"}}})",
       "hooks.run_finished.headers.Bad Name: not a valid header name"},
      {R"({"run_finished": {"url": "http://a/", "headers": {"content-type": "text/plain"}}})",
       "hooks.run_finished.headers.content-type: set by corral (the payload is JSON)"},
      {R"({"run_finished": {"url": "http://a/", "headers": {"X-Token": 12345}}})",
       "hooks.run_finished.headers.X-Token: expected a string"},
      {R"({"run_finished": {"url": "http://a/", "headers": {"X-Token": "a\r\nX: y"}}})",
       "hooks.run_finished.headers.X-Token: a header value cannot hold a line break"},
      {R"({"journal_failed": {"command": "/bin/notify --now"}})",
       R"(hooks.journal_failed.command: expected an array of strings, the program first, got "/bin/notify --now")"},
      {R"({"journal_failed": {"command": []}})",
       "hooks.journal_failed.command: expected an array of strings, the program first, got []"},
      {R"({"journal_failed": {"command": ["/bin/echo", 3]}})",
       "hooks.journal_failed.command[1]: expected a string, got 3"},
      {R"({"journal_failed": {"command": ["", "x"]}})",
       "hooks.journal_failed.command[0]: expected the program to run"},
      {R"({"worker_exits": {"url": "http://a/"}})",
       R"(hooks: unknown event "worker_exits" (did you mean "worker_exit"?); known events: )"
       "worker_exit, run_finished, run_quarantined, journal_failed, journal_recovered"},
      {R"({"on_crash": {"url": "http://a/"}})",
       R"(hooks: unknown event "on_crash" (known events: worker_exit, run_finished, run_quarantined, )"
       "journal_failed, journal_recovered)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.json);
    CHECK(error_of(c.json) == c.error);
  }
}

TEST_CASE("hooks: a header's value never appears in an error") {
  const std::string error =
      error_of(R"({"worker_exit": {"url": "http://a/", "headers": {"X-Token": ["s3cret"]}}})");
  CHECK(error == "hooks.worker_exit.headers.X-Token: expected a string");
  CHECK(error.find("s3cret") == std::string::npos);
}

TEST_CASE("hooks: the config-file form round-trips, and the display form hides header values") {
  const json given = json::parse(R"({
    "worker_exit": {"url": "https://u:p@alerts.example.com/c?k=1",
                    "headers": {"Authorization": "Bearer abc"}},
    "journal_failed": [{"command": ["/bin/logger", "-t", "corral"], "timeout": "3s"}]})");
  Result<Hooks> h = parse_hooks(given);
  REQUIRE(h);
  const json file_form = hooks_to_json(*h);
  CHECK(file_form == json::parse(R"({
    "worker_exit": [{"url": "https://u:p@alerts.example.com/c?k=1", "retries": 3,
                     "timeout": "5s", "headers": {"Authorization": "Bearer abc"}}],
    "journal_failed": [{"command": ["/bin/logger", "-t", "corral"], "timeout": "3s"}]})"));
  Result<Hooks> back = parse_hooks(file_form);
  REQUIRE(back);
  CHECK(*back == *h);

  const json shown = hooks_for_display(*h);
  CHECK(shown["worker_exit"][0]["headers"]["Authorization"] == "(set)");
  CHECK(shown.dump().find("abc") == std::string::npos);
  CHECK(hooks_to_json(Hooks{}) == json::object());
}

TEST_CASE(
    "hooks: logs name a webhook by its URL without user info or query, a command by argv[0]") {
  Hook web;
  web.url = "https://user:pw@alerts.example.com:8443/corral/hook?token=abc#x";
  CHECK(hook_name(web) == "https://alerts.example.com:8443/corral/hook");
  web.url = "http://127.0.0.1/";
  CHECK(hook_name(web) == "http://127.0.0.1/");
  Hook cmd;
  cmd.command = {"/usr/local/bin/notify", "--secret", "x"};
  CHECK(hook_name(cmd) == "/usr/local/bin/notify");
}

TEST_CASE("hooks: a config file's bad hook is reported with its path, by apply_json and check") {
  Config cfg;
  try {
    apply_json(cfg, json::parse(R"({"hooks": {"run_finished": {"url": "mailto:qa@x"}}})"));
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          R"(hooks.run_finished.url: expected an http:// or https:// URL, got "mailto:qa@x")");
  }
  CHECK(cfg.hooks.empty());

  test::TempDir dir;
  const std::string path = dir.write("hooks.json", R"({"workers": 2, "hooks": {
      "worker_exit": [{"url": "http://a/"}, {"url": "ftp://b/"}]}})");
  const FileCheck check = check_file(path);
  REQUIRE(check.problems.size() == 1);
  CHECK(check.problems[0] ==
        R"(hooks.worker_exit[1].url: expected an http:// or https:// URL, got "ftp://b/")");
}

}  // namespace
}  // namespace corral::config
