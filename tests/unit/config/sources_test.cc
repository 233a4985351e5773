// origin_of() and effective_settings(): where each setting of `corral config show` came from.
#include "config/sources.h"

#include <catch2/catch.hpp>

#include "tests/support/scoped_env.h"

namespace corral::config {
namespace {

using nlohmann::json;
using test::ScopedEnv;

TEST_CASE("config sources: each kind of origin is described the way config show prints it") {
  CHECK(describe({}) == "default");
  CHECK(describe({Source::kEnvironment, "CORRAL_API_TOKEN"}) == "env CORRAL_API_TOKEN");
  CHECK(describe({Source::kFile, "/etc/corral.json"}) == "file /etc/corral.json");
  CHECK(describe({Source::kFlag, "--workers"}) == "flag --workers");
}

TEST_CASE("config sources: a flag beats the file, the file beats the environment") {
  ScopedEnv home("CORRAL_HOME", "/srv/corral");
  ScopedEnv token("CORRAL_API_TOKEN", "from-env");
  Given given;
  given.file = "corral.json";
  given.settings = {{"workers", 2}, {"max_memory", "1GB"}, {"api_token", "from-file"}};
  given.flags = {{"workers", "--workers"}, {"listen", "--listen"}};
  struct Case {
    const char* setting;
    Origin origin;
  };
  const Case cases[] = {
      {"workers", {Source::kFlag, "--workers"}},  // in the file too
      {"listen", {Source::kFlag, "--listen"}},
      {"max_memory", {Source::kFile, "corral.json"}},
      {"api_token", {Source::kFile, "corral.json"}},  // $CORRAL_API_TOKEN too
      {"home", {Source::kEnvironment, "CORRAL_HOME"}},
      {"log_level", {}},
  };
  for (const Case& c : cases) {
    CAPTURE(c.setting);
    CHECK(origin_of(c.setting, given) == c.origin);
  }
}

TEST_CASE("config sources: home and api_token come from the environment when set") {
  ScopedEnv home("CORRAL_HOME", "/srv/corral");
  ScopedEnv token("CORRAL_API_TOKEN", "from-env");
  CHECK(origin_of("home", {}) == Origin{Source::kEnvironment, "CORRAL_HOME"});
  CHECK(origin_of("api_token", {}) == Origin{Source::kEnvironment, "CORRAL_API_TOKEN"});
  CHECK(origin_of("workers", {}) == Origin{});  // no variable sets it

  Given flagged;
  flagged.flags = {{"home", "--home"}};
  CHECK(origin_of("home", flagged) == Origin{Source::kFlag, "--home"});
}

TEST_CASE("config sources: an unset or empty variable leaves the default") {
  ScopedEnv home("CORRAL_HOME", "");
  ScopedEnv token("CORRAL_API_TOKEN", nullptr);
  CHECK(origin_of("home", {}) == Origin{});
  CHECK(origin_of("api_token", {}) == Origin{});
}

TEST_CASE("config sources: a key in the file that is not a field is no origin") {
  Given given;
  given.file = "corral.json";
  given.settings = {{"home", "/elsewhere"}};
  ScopedEnv home("CORRAL_HOME", nullptr);
  CHECK(origin_of("home", given) == Origin{});
}

TEST_CASE("config sources: the effective settings list home and every field, never the token") {
  ScopedEnv token("CORRAL_API_TOKEN", nullptr);
  Config cfg;
  cfg.home = "/srv/corral";
  cfg.max_memory_bytes = uint64_t{512} << 20;
  cfg.api_token = "s3cret-t0ken";
  Given given;
  given.file = "corral.json";
  given.settings = {{"max_memory", "512MB"}, {"api_token", "s3cret-t0ken"}};

  const std::vector<Setting> settings = effective_settings(cfg, given);
  REQUIRE(settings.size() == to_json(cfg).size() + 1);
  CHECK(settings[0].name == "home");
  CHECK(settings[0].value == "/srv/corral");
  CHECK(settings[1].name == "workers");  // then the fields in the table's order
  json all = json::object();
  for (const Setting& s : settings) {
    all[s.name] = {{"value", s.value}, {"source", describe(s.origin)}};
  }
  CHECK(all.dump().find("s3cret-t0ken") == std::string::npos);
  CHECK(all["api_token"] == json{{"value", "(set)"}, {"source", "file corral.json"}});
  CHECK(all["max_memory"] == json{{"value", "512MB"}, {"source", "file corral.json"}});
  CHECK(all["heartbeat_timeout"] == json{{"value", "5s"}, {"source", "default"}});

  cfg.api_token.clear();
  for (const Setting& s : effective_settings(cfg, {})) {
    if (s.name == "api_token") CHECK(s.value == "(not set)");
  }
}

TEST_CASE("config sources: the hooks are listed with their header values hidden") {
  Config cfg;
  Hook hook;
  hook.url = "http://127.0.0.1:9000/corral";
  hook.headers = {{"Authorization", "Bearer s3cret"}};
  cfg.hooks.by_event[static_cast<size_t>(HookEvent::kWorkerExit)].push_back(hook);
  bool listed = false;
  for (const Setting& s : effective_settings(cfg, {})) {
    if (s.name != "hooks") continue;
    listed = true;
    CHECK(s.value["worker_exit"][0]["url"] == "http://127.0.0.1:9000/corral");
    CHECK(s.value["worker_exit"][0]["headers"]["Authorization"] == "(set)");
    CHECK(s.value.dump().find("s3cret") == std::string::npos);
  }
  CHECK(listed);
}

}  // namespace
}  // namespace corral::config
