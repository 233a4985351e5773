// Reading log files for `corral logs`: the last N lines, the files to show, and following them
// across rotation.
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/support/temp_dir.h"

#include "cli/log_tail.h"

namespace corral::cli {
namespace {

using Lines = std::vector<std::string>;

using corral::test::TempDir;

Lines tail(const std::string& path, size_t n) {
  auto lines = tail_lines(path, n);
  REQUIRE(lines.is_ok());
  return *lines;
}

TEST_CASE("cli log tail: returns the last N lines of a file") {
  TempDir dir;
  const auto file = dir.write("a.log", "one\ntwo\nthree\nfour\n");
  CHECK(tail(file, 2) == Lines{"three", "four"});
  CHECK(tail(file, 1) == Lines{"four"});
  CHECK(tail(file, 0) == Lines{});
}

TEST_CASE("cli log tail: counts a last line without a newline") {
  TempDir dir;
  const auto file = dir.write("a.log", "one\ntwo\nthree");
  CHECK(tail(file, 2) == Lines{"two", "three"});
}

TEST_CASE("cli log tail: returns the whole file when it has fewer than N lines") {
  TempDir dir;
  CHECK(tail(dir.write("a.log", "one\ntwo\n"), 20) == Lines{"one", "two"});
  CHECK(tail(dir.write("b.log", ""), 20) == Lines{});
  CHECK(tail(dir.write("c.log", "\n\n"), 20) == Lines{"", ""});
}

TEST_CASE("cli log tail: reads lines that straddle its 64 KiB read chunks") {
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

TEST_CASE("cli log tail: a missing file is kNotFound") {
  TempDir dir;
  auto lines = tail_lines(dir.path() + "/none.log", 5);
  REQUIRE_FALSE(lines.is_ok());
  CHECK(lines.status().code() == Code::kNotFound);
}

TEST_CASE("cli log files: master first, then current worker logs in slot order, no rotated ones") {
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

TEST_CASE("cli log follower: prints only complete lines appended since it started, labelled") {
  TempDir dir;
  const auto file = dir.write("worker-0.log", "old\n");
  LogFollower follower;
  follower.add({file, "worker-0"});
  std::ostringstream out;
  follower.poll(out);
  CHECK(out.str().empty());
  dir.write("worker-0.log", "new 1\nnew", std::ios::app);
  follower.poll(out);
  CHECK(out.str() == "worker-0 | new 1\n");
  dir.write("worker-0.log", " 2\n", std::ios::app);
  follower.poll(out);
  CHECK(out.str() == "worker-0 | new 1\nworker-0 | new 2\n");
}

TEST_CASE("cli log follower: starts again from the top of a file that was rotated or truncated") {
  TempDir dir;
  const auto file = dir.write("master.log", "before\n");
  LogFollower follower;
  follower.add({file, "master"});
  // Rotation: the file is renamed away and a new one (new inode) takes its name.
  std::filesystem::rename(file, dir.path() + "/master.1.log");
  dir.write("master.log", "after rotation\n");
  std::ostringstream out;
  follower.poll(out);
  CHECK(out.str() == "master | after rotation\n");
  // Truncation in place: same inode, smaller size.
  dir.write("master.log", "x\n");
  out.str("");
  follower.poll(out);
  CHECK(out.str() == "master | x\n");
}

TEST_CASE("cli log follower: reads a file that appears later from its start") {
  TempDir dir;
  LogFollower follower;
  follower.add({dir.path() + "/worker-3.log", "worker-3"});
  std::ostringstream out;
  follower.poll(out);
  CHECK(out.str().empty());
  dir.write("worker-3.log", "hello\n");
  follower.poll(out);
  CHECK(out.str() == "worker-3 | hello\n");
}

TEST_CASE("cli log follower: a file added as found later is read from its first line") {
  TempDir dir;
  const auto file = dir.write("worker-1.log", "first\n");
  LogFollower follower;
  follower.add({file, "worker-1"}, /*from_start=*/true);
  std::ostringstream out;
  follower.poll(out);
  CHECK(out.str() == "worker-1 | first\n");
}

}  // namespace
}  // namespace corral::cli
