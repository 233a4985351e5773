// The load watcher's readers: a process from /proc, and metrics documents.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "master/load_watch.h"

using corral::master::parse_metrics;
using corral::master::read_proc;

TEST_CASE("load watch: Prometheus text gives the named series, labels summed, comments skipped") {
  const std::string text =
      "# HELP nodejs_heap_size_used_bytes Process heap size used.\n"
      "# TYPE nodejs_heap_size_used_bytes gauge\n"
      "nodejs_heap_size_used_bytes 98765432\n"
      "nodejs_heap_space_size_used_bytes{space=\"old\"} 1000 1700000000000\n"
      "nodejs_heap_space_size_used_bytes{space=\"new\",x=\"a b\"} 24.5\n"
      "nodejs_heap_size_used_bytes_total 1\n"
      "broken_line\n"
      "up NaN\n";
  auto v = parse_metrics(text, {"nodejs_heap_size_used_bytes", "nodejs_heap_space_size_used_bytes",
                                "missing"});
  CHECK(v.size() == 2);
  CHECK(v["nodejs_heap_size_used_bytes"] == 98765432);
  CHECK(v["nodejs_heap_space_size_used_bytes"] == 1024.5);
}

TEST_CASE("load watch: a JSON object gives its top-level numbers") {
  auto v = parse_metrics(R"({"heapUsed": 1234, "rss": 5e6, "name": "x", "nested": {"a": 1}})",
                         {"heapUsed", "rss", "name", "nested"});
  CHECK(v.size() == 2);
  CHECK(v["heapUsed"] == 1234);
  CHECK(v["rss"] == 5e6);
}

TEST_CASE("load watch: /proc readings of this process, and none for a process that is gone") {
  auto me = read_proc(::getpid());
  REQUIRE(me);
  CHECK(me->rss_bytes > 1000000);
  CHECK(me->threads >= 1);
  CHECK(me->fds >= 3);
  CHECK_FALSE(read_proc(4194304 + 1));  // above the kernel's largest pid
}
