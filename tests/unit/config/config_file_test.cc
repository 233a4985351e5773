// apply_file(): reading a config file, and errors that name the file.
#include <stdlib.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "config/config.h"

namespace corral::config {
namespace {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at scope end.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/corral-config-test-XXXXXX";
    path_ = ::mkdtemp(pattern.data());
    REQUIRE(!path_.empty());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }

  std::string write(const std::string& name, const std::string& text) const {
    std::string file = path_ + "/" + name;
    std::ofstream(file) << text;
    return file;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string apply_file_error(const std::string& path) {
  Config cfg;
  try {
    apply_file(cfg, path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_CASE("config file: applies the settings in a file") {
  TempDir dir;
  std::string path = dir.write("corral.json", R"({
    "workers": 3,
    "max_memory": "256MB",
    "heartbeat_interval": "500ms"
  })");
  Config cfg;
  apply_file(cfg, path);
  CHECK(cfg.workers == 3);
  CHECK(cfg.max_memory_bytes == uint64_t{256} << 20);
  CHECK(cfg.heartbeat_interval_ms == 500);
  CHECK(cfg.log_level == "info");
}

TEST_CASE("config file: a missing file is an error naming the path") {
  TempDir dir;
  std::string path = dir.path() + "/absent.json";
  CHECK(apply_file_error(path) ==
        "config file " + path + ": cannot open: No such file or directory");
}

TEST_CASE("config file: a directory is an error naming the path") {
  TempDir dir;
  CHECK(apply_file_error(dir.path()) ==
        "config file " + dir.path() + ": cannot read: Is a directory");
}

TEST_CASE("config file: invalid JSON is an error naming the path and the line") {
  TempDir dir;
  std::string path = dir.write("broken.json", "{\n  \"workers\": 3,\n  }\n");
  std::string error = apply_file_error(path);
  CHECK_THAT(error, Catch::StartsWith("config file " + path + ": line 3, column 3: syntax error"));
  CHECK(error.find("json.exception") == std::string::npos);

  std::string empty = dir.write("empty.json", "");
  CHECK_THAT(apply_file_error(empty),
             Catch::StartsWith("config file " + empty + ": line 1, column 1: "));
}

TEST_CASE("config file: a bad field is an error naming the path and the field") {
  TempDir dir;
  std::string path = dir.write("bad.json", R"({"max_memory": true})");
  CHECK(apply_file_error(path) ==
        "config file " + path + ": max_memory: expected a size like \"512MB\", got true");
  std::string unknown = dir.write("unknown.json", R"({"wokers": 2})");
  CHECK_THAT(apply_file_error(unknown),
             Catch::StartsWith("config file " + unknown +
                               ": unknown field \"wokers\" (did you mean \"workers\"?); known "
                               "fields: workers, "));
}

}  // namespace
}  // namespace corral::config
