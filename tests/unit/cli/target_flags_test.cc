// `corral load`'s target flags: the command split into words, the ready check, the directory.
#include <catch2/catch.hpp>

#include <filesystem>

#include <CLI/CLI.hpp>

#include "cli/target_flags.h"

using corral::cli::split_words;
using corral::cli::TargetFlags;
using nlohmann::json;

namespace {

std::vector<std::string> words(const std::string& text) {
  std::string error;
  auto out = split_words(text, error);
  INFO(text);
  CHECK(error.empty());
  return out;
}

}  // namespace

TEST_CASE("target flags: a command is split into words as a shell would, and not expanded") {
  using W = std::vector<std::string>;
  CHECK(words("node --max-old-space-size=128 server.js") ==
        W{"node", "--max-old-space-size=128", "server.js"});
  CHECK(words("  a\t b  ") == W{"a", "b"});
  CHECK(words(R"(sh -c 'exec node "my server.js" $PORT')") ==
        W{"sh", "-c", R"(exec node "my server.js" $PORT)"});
  CHECK(words(R"(a "b \"c\" d" e\ f '')") == W{"a", R"(b "c" d)", "e f", ""});
  std::string error;
  split_words("node 'server.js", error);
  CHECK(error == "a ' is not closed");
}

TEST_CASE("target flags: --target-cmd and --target-ready fill the load section's target") {
  auto applied = [](std::vector<std::string> args, json load) {
    CLI::App app;
    TargetFlags flags;
    flags.add(app);
    std::vector<std::string> argv(args.rbegin(), args.rend());  // CLI11 parses from the back
    app.parse(argv);
    std::string error = flags.apply(load, "/srv/tests/held.json");
    return std::make_pair(error, load);
  };
  auto [error, load] = applied({"--target-cmd", "./server --port 8080", "--target-ready", "8080",
                                "--target-ready-timeout", "30s"},
                               json::object());
  CHECK(error.empty());
  CHECK(load["target"]["cmd"] == json({"./server", "--port", "8080"}));
  CHECK(load["target"]["ready"] == json({{"port", 8080}}));
  CHECK(load["target"]["ready_timeout"] == "30s");
  // A command typed on the command line runs where it was typed.
  CHECK(load["target"]["cwd"] == std::filesystem::current_path().string());

  CHECK(applied({"--target-cmd", "x", "--target-ready", "http://127.0.0.1:8080/up"}, {})
            .second["target"]["ready"] == json({{"url", "http://127.0.0.1:8080/up"}}));
  CHECK(applied({"--target-cmd", "x", "--target-ready", "log:listening on"}, {})
            .second["target"]["ready"] == json({{"log", "listening on"}}));
  CHECK_THAT(applied({"--target-cmd", "x", "--target-ready", "soon"}, {}).first,
             Catch::Contains("--target-ready soon: expected a URL"));
  CHECK_THAT(applied({"--target-ready", "8080"}, {}).first,
             Catch::Contains("only with --target-cmd"));
  CHECK_THAT(applied({"--target-cmd", "'x"}, {}).first, Catch::Contains("--target-cmd: a '"));

  // The file's target runs from the file's directory, or from its "cwd" taken from there.
  json file_target = {{"target", {{"cmd", {"node", "server.js"}}}}};
  CHECK(applied({}, file_target).second["target"]["cwd"] == "/srv/tests");
  file_target["target"]["cwd"] = "../app";
  CHECK(applied({}, file_target).second["target"]["cwd"] == "/srv/app");
  file_target["target"]["cwd"] = "/opt/app";
  CHECK(applied({}, file_target).second["target"]["cwd"] == "/opt/app");
}
