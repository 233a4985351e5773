// GET /logs: its parameters and their bounds, and the answer read from a logs directory.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "master/log_view.h"
#include "tests/support/temp_dir.h"

namespace corral::master {
namespace {

using corral::test::TempDir;

http::Request with_query(const std::string& query) {
  http::Request r;
  r.method = "GET";
  r.path = "/logs";
  r.query = query;
  return r;
}

TEST_CASE("log view: lines defaults to 200, is capped at 1000, and must be a number from 1") {
  CHECK(log_query(with_query(""))->lines == kLogLinesDefault);
  CHECK(kLogLinesDefault == 200);
  CHECK(log_query(with_query("lines=1"))->lines == 1);
  CHECK(log_query(with_query("lines=1000"))->lines == 1000);
  CHECK(log_query(with_query("lines=1001"))->lines == kLogLinesMax);
  CHECK(log_query(with_query("lines=99999999999999999999999"))->lines == kLogLinesMax);
  for (const char* bad : {"lines=0", "lines=-1", "lines=ten", "lines=", "lines=5x", "lines=+5"}) {
    INFO(bad);
    auto q = log_query(with_query(bad));
    REQUIRE_FALSE(q.is_ok());
    CHECK(q.status().code() == Code::kInvalidArgument);
    CHECK_THAT(q.status().message(), Catch::StartsWith("lines: expected a whole number from 1 to 1000"));
  }
}

TEST_CASE("log view: source is master or worker-<slot>, nothing else") {
  CHECK(log_query(with_query("source=master"))->source == "master");
  CHECK(log_query(with_query("source=worker-12"))->source == "worker-12");
  CHECK(log_query(with_query("source="))->source.empty());
  for (const char* bad : {"source=worker-", "source=worker-1x", "source=../master",
                          "source=daemon.out", "source=Master"}) {
    INFO(bad);
    auto q = log_query(with_query(bad));
    REQUIRE_FALSE(q.is_ok());
    CHECK_THAT(q.status().message(), Catch::StartsWith("source: expected master or worker-<slot>"));
  }
}

TEST_CASE("log view: reads 256 KiB a file at most, less when there are many files") {
  CHECK(log_bytes_per_file(0) == 256 * 1024);
  CHECK(log_bytes_per_file(1) == 256 * 1024);
  CHECK(log_bytes_per_file(4) == 256 * 1024);
  CHECK(log_bytes_per_file(8) == 128 * 1024);
  CHECK(log_bytes_per_file(65) * 65 <= kLogBytesTotal);
  CHECK(log_bytes_per_file(1000) == 8 * 1024);
}

TEST_CASE("log view: the last lines of every log merged in time order, or of one file") {
  TempDir dir;
  dir.write("master.log",
            "2026-12-01T10:00:00.000+00:00 master[1] info one\n"
            "2026-12-01T10:00:02.000+00:00 master[1] info three\n");
  dir.write("worker-0.log", "2026-12-01T10:00:01.000+00:00 worker-0[2] warning two\n");
  dir.write("worker-0.1.log", "2026-12-01T09:00:00.000+00:00 worker-0[2] info rotated\n");
  dir.write("daemon.out", "not a log\n");

  nlohmann::json all = read_log_tail(dir.path(), LogQuery{});
  CHECK(all["dir"] == dir.path());
  CHECK(all["files"] == nlohmann::json({"master", "worker-0"}));
  REQUIRE(all["lines"].size() == 3);
  CHECK(all["lines"][0].get<std::string>().ends_with("one"));
  CHECK(all["lines"][1].get<std::string>().ends_with("warning two"));
  CHECK(all["lines"][2].get<std::string>().ends_with("three"));

  nlohmann::json last = read_log_tail(dir.path(), LogQuery{2, ""});
  CHECK(last["lines"].size() == 2);
  CHECK(last["lines"][1].get<std::string>().ends_with("three"));

  nlohmann::json one = read_log_tail(dir.path(), LogQuery{200, "worker-0"});
  CHECK(one["files"] == nlohmann::json({"worker-0"}));
  CHECK(one["lines"].size() == 1);
  CHECK(read_log_tail(dir.path(), LogQuery{200, "worker-7"})["lines"].empty());
  CHECK(read_log_tail(dir.path() + "/none", LogQuery{})["files"].empty());
}

TEST_CASE("log view: a huge file is read only from its end") {
  TempDir dir;
  std::string text(2 << 20, 'x');  // 2 MiB of one unfinished line, then short lines
  text += "\n";
  for (int i = 0; i < 10; ++i) text += "2026-12-01T10:00:0" + std::to_string(i) + ".000 line\n";
  dir.write("master.log", text);
  nlohmann::json answer = read_log_tail(dir.path(), LogQuery{1000, ""});
  CHECK(answer["lines"].size() == 10);  // the 2 MiB line, cut by the limit, is left out
}

}  // namespace
}  // namespace corral::master
