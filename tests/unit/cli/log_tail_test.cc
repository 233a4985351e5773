// Following log files for `corral logs --follow`, across rotation.
#include <filesystem>
#include <fstream>
#include <sstream>

#include <catch2/catch.hpp>

#include "tests/support/temp_dir.h"

#include "cli/log_tail.h"

namespace corral::cli {
namespace {

using corral::test::TempDir;

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
