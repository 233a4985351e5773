// Reading corral's log files: the last N lines of one (bounded in bytes for the master), the
// files to show, and several tails merged in time order.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "shared/log_files.h"
#include "tests/support/temp_dir.h"

namespace corral {
namespace {

using Lines = std::vector<std::string>;

using corral::test::TempDir;

Lines tail(const std::string& path, size_t n) {
  auto lines = tail_lines(path, n);
  REQUIRE(lines.is_ok());
  return *lines;
}

TEST_CASE("log tail: returns the last N lines of a file") {
  TempDir dir;
  const auto file = dir.write("a.log", "one\ntwo\nthree\nfour\n");
  CHECK(tail(file, 2) == Lines{"three", "four"});
  CHECK(tail(file, 1) == Lines{"four"});
  CHECK(tail(file, 0) == Lines{});
}

TEST_CASE("log tail: counts a last line without a newline") {
  TempDir dir;
  const auto file = dir.write("a.log", "one\ntwo\nthree");
  CHECK(tail(file, 2) == Lines{"two", "three"});
}

TEST_CASE("log tail: returns the whole file when it has fewer than N lines") {
  TempDir dir;
  CHECK(tail(dir.write("a.log", "one\ntwo\n"), 20) == Lines{"one", "two"});
  CHECK(tail(dir.write("b.log", ""), 20) == Lines{});
  CHECK(tail(dir.write("c.log", "\n\n"), 20) == Lines{"", ""});
}

TEST_CASE("log tail: reads lines that straddle its 64 KiB read chunks") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i) + " of the log\n";
  REQUIRE(text.size() > 3 * 64 * 1024);
  const auto file = dir.write("big.log", text);
  const Lines last = tail(file, 15000);
  REQUIRE(last.size() == 15000);
  CHECK(last.front() == "line 5000 of the log");
  CHECK(last.back() == "line 19999 of the log");
}

TEST_CASE("log tail: with a byte limit, reads no further back and leaves out the line it cut") {
  TempDir dir;
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "line " + std::to_string(1000 + i) + "\n";  // 10 bytes
  const auto file = dir.write("a.log", text);
  // 95 bytes from the end: the last 9 lines whole, and 5 bytes of the one before, left out.
  auto cut = tail_lines(file, 50, 95);
  REQUIRE(cut.is_ok());
  CHECK(cut->size() == 9);
  CHECK(cut->front() == "line 1991");
  CHECK(cut->back() == "line 1999");
  // Enough lines within the limit: the limit changes nothing.
  auto few = tail_lines(file, 3, 95);
  REQUIRE(few.is_ok());
  CHECK(*few == Lines{"line 1997", "line 1998", "line 1999"});
  // A file shorter than the limit is read whole, its first line kept.
  CHECK(*tail_lines(dir.write("b.log", "one\ntwo\n"), 10, 95) == Lines{"one", "two"});
}

TEST_CASE("log tail: a line longer than the byte limit gives no line at all, not a piece") {
  TempDir dir;
  const auto file = dir.write("a.log", "short\n" + std::string(300 * 1024, 'x') + "\n");
  auto lines = tail_lines(file, 10, 256 * 1024);
  REQUIRE(lines.is_ok());
  CHECK(lines->empty());
}

TEST_CASE("log tail: a missing file is kNotFound") {
  TempDir dir;
  auto lines = tail_lines(dir.path() + "/none.log", 5);
  REQUIRE_FALSE(lines.is_ok());
  CHECK(lines.status().code() == Code::kNotFound);
}

TEST_CASE("log files: master first, then current worker logs in slot order, no rotated ones") {
  TempDir dir;
  for (const char* name : {"worker-10.log", "worker-2.log", "worker-2.1.log", "master.log",
                           "master.1.log", "daemon.out", "worker-x.log"}) {
    dir.write(name, "x\n");
  }
  Lines labels;
  for (const LogFile& f : current_log_files(dir.path())) labels.push_back(f.label);
  CHECK(labels == Lines{"master", "worker-2", "worker-10"});
  CHECK(current_log_files(dir.path() + "/missing").empty());
}

TEST_CASE("log tails: files merge by timestamp, a line without one after its file's line") {
  const std::vector<std::vector<std::string>> tails = {
      {"2026-11-30T15:00:01.000+0000 master[1] info a",
       "2026-11-30T15:00:03.000+0000 master[1] info c", "  continued"},
      {"no timestamp, first in its file", "2026-11-30T15:00:02.000+0000 worker-0[2] info b",
       "2026-11-30T15:00:03.000+0000 worker-0[2] info c too"}};
  const auto merged = merge_log_tails(tails, 10);
  REQUIRE(merged.size() == 6);
  CHECK(merged[0] == "no timestamp, first in its file");
  CHECK(merged[1].ends_with("info a"));
  CHECK(merged[2].ends_with("info b"));
  CHECK(merged[3].ends_with("info c"));
  CHECK(merged[4] == "  continued");
  CHECK(merged[5].ends_with("info c too"));
  CHECK(merge_log_tails(tails, 2) == std::vector<std::string>{merged[4], merged[5]});
  CHECK(merge_log_tails({}, 3).empty());
}

}  // namespace
}  // namespace corral
