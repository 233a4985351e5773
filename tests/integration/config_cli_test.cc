// `corral config check FILE` and `corral config show`, run as a user would, without a daemon.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/support/harness.h"

namespace corral::test {
namespace {

std::string write_text(const TempHome& home, const std::string& name, const std::string& text) {
  const std::string path = home.file(name);
  std::ofstream(path, std::ios::trunc) << text;
  return path;
}

std::string trimmed(const std::string& s) {
  const size_t first = s.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// The cells of the ASCII table row whose first cell is `field` (the output is not a terminal,
// so the table is drawn with "|"); empty when there is no such row.
std::vector<std::string> row_of(const std::string& table, const std::string& field) {
  for (const std::string& line : lines_of(table)) {
    std::vector<std::string> cells;
    std::istringstream in(line);
    for (std::string cell; std::getline(in, cell, '|');) cells.push_back(trimmed(cell));
    // "| a | b | c |" splits into "", "a", "b", "c".
    if (cells.size() == 4 && cells[1] == field) return {cells[1], cells[2], cells[3]};
  }
  return {};
}

TEST_CASE("config cli: check accepts a good file and says how many fields it sets") {
  TempHome home;
  const std::string path = home.write_config({{"workers", 2}, {"max_memory", "256MB"}});
  CliResult r = run_cli({"config", "check", path}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 0);
  CHECK(r.out == "corral: " + path + ": ok (2 fields set)\n");
  CHECK(r.err.empty());
}

TEST_CASE("config cli: check lists every problem of a bad file, one per line, with exit 2") {
  TempHome home;
  const std::string path = home.write_config(
      {{"max_memroy", "512MB"}, {"workers", 5000}, {"heartbeat_timeout", 5}, {"log_files", 3}});
  CliResult r = run_cli({"config", "check", path}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK(r.out.empty());
  const std::vector<std::string> lines = lines_of(r.err);
  REQUIRE(lines.size() == 3);
  for (const std::string& line : lines) {
    CHECK_THAT(line, Catch::StartsWith("corral: " + path + ": "));
  }
  CHECK_THAT(r.err, Catch::Contains(R"(unknown field "max_memroy" (did you mean "max_memory"?))"));
  CHECK_THAT(r.err, Catch::Contains("workers: must be between 0 and 1024, got 5000"));
  CHECK_THAT(r.err, Catch::Contains(R"(heartbeat_timeout: expected a duration like "5s", got 5)"));
}

TEST_CASE("config cli: check on a file that is not JSON, or is missing, is one line and exit 2") {
  TempHome home;
  const std::string broken = write_text(home, "broken.json", "{\n  \"workers\": 3,\n  }\n");
  CliResult r = run_cli({"config", "check", broken}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("corral: " + broken + ": line 3, column 3: syntax error"));
  CHECK(lines_of(r.err).size() == 1);

  const std::string absent = home.file("absent.json");
  CliResult missing = run_cli({"config", "check", absent}, home.path());
  INFO(missing.describe());
  CHECK(missing.exit_code == 2);
  CHECK(missing.err == "corral: " + absent + ": cannot open: No such file or directory\n");
}

TEST_CASE("config cli: show says where each setting came from: flag, file, env or default") {
  TempHome home;
  const std::string path = home.write_config({{"workers", 2}, {"max_memory", "256MB"}});
  CliResult r = run_cli({"config", "show", "--config", path, "--workers", "3"}, home.path(),
                        {{"CORRAL_API_TOKEN", "it-s3cret"}});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  CHECK(row_of(r.out, "workers") == std::vector<std::string>{"workers", "3", "flag --workers"});
  CHECK(row_of(r.out, "max_memory") ==
        std::vector<std::string>{"max_memory", "256MB", "file " + path});
  CHECK(row_of(r.out, "log_level") == std::vector<std::string>{"log_level", "info", "default"});
  CHECK(row_of(r.out, "home") == std::vector<std::string>{"home", home.path(), "env CORRAL_HOME"});
  CHECK(row_of(r.out, "api_token") ==
        std::vector<std::string>{"api_token", "(set)", "env CORRAL_API_TOKEN"});
  CHECK(r.out.find("it-s3cret") == std::string::npos);

  // workers 0, the default, is shown with the count it stands for.
  CliResult defaults = run_cli({"config", "show"}, home.path());
  INFO(defaults.describe());
  const std::vector<std::string> workers = row_of(defaults.out, "workers");
  REQUIRE(workers.size() == 3);
  CHECK_THAT(workers[1], Catch::Matches(R"(0 \(one per usable CPU: [0-9]+\))"));
  CHECK(workers[2] == "default");
}

TEST_CASE("config cli: show --json prints the config and the sources as one object") {
  TempHome home;
  const std::string path = home.write_config({{"max_memory", "256MB"}});
  CliResult r = run_cli({"config", "show", "--config", path, "--workers", "3", "--json"},
                        home.path(), {{"CORRAL_API_TOKEN", "it-s3cret"}});
  INFO(r.describe());
  REQUIRE(r.exit_code == 0);
  const Json j = Json::parse(r.out);
  CHECK(j.at("config").at("workers") == 3);
  CHECK(j.at("sources").at("workers") == "flag --workers");
  CHECK(j.at("config").at("max_memory") == "256MB");
  CHECK(j.at("sources").at("max_memory") == "file " + path);
  CHECK(j.at("sources").at("stop_grace") == "default");
  CHECK(j.at("config").at("api_token") == "(set)");
  CHECK(r.out.find("it-s3cret") == std::string::npos);
  CHECK(j.at("config").size() == j.at("sources").size());
}

TEST_CASE("config cli: show with an invalid config file exits 2 naming the file") {
  TempHome home;
  const std::string path = home.write_config({{"workers", "many"}});
  CliResult r = run_cli({"config", "show", "--config", path}, home.path());
  INFO(r.describe());
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::StartsWith("corral: config file " + path + ": workers: "));
}

}  // namespace
}  // namespace corral::test
