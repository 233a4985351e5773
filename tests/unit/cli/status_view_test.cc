// What `corral status` and `corral describe` print, from fixed API answers and a fixed clock.
#include <string>

#include <catch2/catch.hpp>

#include "cli/format.h"
#include "cli/status_view.h"

namespace corral::cli {
namespace {

const auto kNow = *parse_utc_timestamp("2026-11-30T15:02:00Z");

// One ready worker and one errored after a crash loop, as GET /workers returns them
// (deliberately out of slot order), read as the CLI reads them.
Workers two_workers() {
  auto read = api::workers_from_json(nlohmann::json::parse(R"json({"workers":[
    {"slot":1,"pid":0,"state":"errored","restarts":11,"starts":12,"uptime_s":0,
     "rss_bytes":0,"heartbeat_lag_ms":0,"loop_lag_ms":0,"active":0,
     "reason":"crash loop: 11 exits in 60s, last: crash (exit 1)",
     "last_exit":{"reason":"crash","code":1,"signal":0,"signal_name":"",
                  "at":"2026-11-30T15:01:30Z"},
     "next_start_in_ms":45000},
    {"slot":0,"pid":456,"state":"ready","restarts":1,"starts":2,"uptime_s":185.2,
     "rss_bytes":12897484,"heartbeat_lag_ms":120,"loop_lag_ms":0.3,"active":7,"reason":"",
     "last_exit":{"reason":"signal","code":0,"signal":9,"signal_name":"SIGKILL",
                  "at":"2026-11-30T15:00:00Z"},
     "next_start_in_ms":0}]})json"));
  REQUIRE(read.is_ok());
  return read->workers;
}

// The cells of the table line that starts with "| <slot> ".
std::string row_of(const std::string& table, const std::string& slot) {
  const size_t at = table.find("\n| " + slot + " ");
  REQUIRE(at != std::string::npos);
  return table.substr(at + 1, table.find('\n', at + 1) - at - 1);
}

TEST_CASE(
    "cli status table: a ready worker's row shows its pid, uptime, memory, lag and last exit") {
  const std::string table = render_status_table(two_workers(), kNow, TableStyle::kAscii);
  const std::string row = row_of(table, "0");
  CHECK(row ==
        "| 0    | 456 | ready   | 1        | 3m     | 12.3mb | 0.3ms | 7      | "
        "signal SIGKILL 2m ago  |");
}

TEST_CASE("cli status table: an errored worker shows dashes for its process and a note with why") {
  const std::string table = render_status_table(two_workers(), kNow, TableStyle::kAscii);
  const std::string row = row_of(table, "1");
  CHECK(row ==
        "| 1    | -   | errored | 11       | -      | -      | -     | 0      | "
        "crash (exit 1) 30s ago |");
  CHECK(table.find("slot 1 errored: crash loop: 11 exits in 60s, last: crash (exit 1); "
                   "next try in 45s\n") != std::string::npos);
  CHECK(table.find("\n| 0 ") < table.find("\n| 1 "));  // slot order
}

TEST_CASE("cli status table: a slot being reloaded has a note with its new worker") {
  Workers workers = two_workers();
  REQUIRE(workers[0].slot == 0);  // read in slot order
  workers[0].successor = api::SuccessorEntry{789, "probation", 2.4};
  std::string table = render_status_table(workers, kNow, TableStyle::kAscii);
  CHECK(table.find("slot 0 reloading: new worker pid 789 on probation, ready for 2s\n") !=
        std::string::npos);
  workers[0].successor->state = "promoted";
  table = render_status_table(workers, kNow, TableStyle::kAscii);
  CHECK(table.find("slot 0 reloading: new worker pid 789 taking over\n") != std::string::npos);
  CHECK(render_status_table(two_workers(), kNow, TableStyle::kAscii).find("reloading") ==
        std::string::npos);
}

TEST_CASE("cli status table: box style draws with box characters, ascii style with + - |") {
  const std::string box = render_status_table(two_workers(), kNow, TableStyle::kBox);
  CHECK(box.rfind("┌──────┬", 0) == 0);
  CHECK(box.find("│ slot │ pid │ state   │") != std::string::npos);
  CHECK(box.find("└") != std::string::npos);
  const std::string ascii = render_status_table(two_workers(), kNow, TableStyle::kAscii);
  CHECK(ascii.rfind("+------+", 0) == 0);
  CHECK(ascii.find("\xe2") == std::string::npos);  // no UTF-8 at all
}

TEST_CASE("cli status table: every line of the box is as wide as the header line") {
  const std::string box = render_status_table(two_workers(), kNow, TableStyle::kBox);
  const std::string first = box.substr(0, box.find('\n'));
  size_t start = 0;
  for (int i = 0; i < 6; ++i) {  // 3 rules, header, 2 rows
    const size_t end = box.find('\n', start);
    CHECK(display_width(box.substr(start, end - start)) == display_width(first));
    start = end + 1;
  }
}

TEST_CASE("cli status summary: counts ready workers against the wanted number") {
  auto health = api::health_from_json(nlohmann::json::parse(
      R"({"status":"ok","pid":123,"home":"/root/.corral","listen":"127.0.0.1:7070",
          "workers_wanted":2,"workers_ready":1})"));
  REQUIRE(health.is_ok());
  CHECK(render_summary_line(*health, two_workers()) ==
        "1/2 workers ready · daemon pid 123 · api 127.0.0.1:7070 · home /root/.corral");
}

TEST_CASE("cli status --cluster: one row per host, this one starred, then the hosts alive") {
  const auto cluster = nlohmann::json::parse(R"({
    "self": {"id": "db1/00000002", "epoch": 3, "alive": true},
    "hosts": [
      {"id": "db1/00000001", "address": "10.0.0.1:7070", "epoch": 1, "heartbeat_age_ms": 7300,
       "held": 0, "capacity": 900, "state": "dead"},
      {"id": "db1/00000002", "address": "10.0.0.2:7070", "epoch": 3, "heartbeat_age_ms": 120,
       "held": 1500, "capacity": 98500, "state": "alive"}]})");
  CHECK(render_cluster_table(cluster, TableStyle::kAscii) ==
        "+----------------+---------------+-------+-------+-----------+-----------+-------+\n"
        "| host           | address       | state | epoch | heartbeat | instances | room  |\n"
        "+----------------+---------------+-------+-------+-----------+-----------+-------+\n"
        "|   db1/00000001 | 10.0.0.1:7070 | dead  | 1     | 7.3s      | 0         | 900   |\n"
        "| * db1/00000002 | 10.0.0.2:7070 | alive | 3     | 120ms     | 1500      | 98500 |\n"
        "+----------------+---------------+-------+-------+-----------+-----------+-------+\n"
        "1/2 hosts alive\n");
  CHECK(render_cluster_table(nlohmann::json::object(), TableStyle::kAscii) ==
        "+------+---------+-------+-------+-----------+-----------+------+\n"
        "| host | address | state | epoch | heartbeat | instances | room |\n"
        "+------+---------+-------+-------+-----------+-----------+------+\n"
        "+------+---------+-------+-------+-----------+-----------+------+\n"
        "0/0 hosts alive\n");
}

TEST_CASE("cli describe: prints every field as aligned label : value lines") {
  api::WorkerEntry w = two_workers()[0];
  w.cpu_percent = 12.5;
  w.instances = 40;
  w.capacity = 1000;
  const std::string text = render_worker_description(w, kNow);
  CHECK(text.find("slot             : 0\n") != std::string::npos);
  CHECK(text.find("pid              : 456\n") != std::string::npos);
  CHECK(text.find("memory           : 12.3mb\n") != std::string::npos);
  CHECK(text.find("cpu              : 12.5%\n") != std::string::npos);
  CHECK(text.find("heartbeat lag    : 120ms\n") != std::string::npos);
  CHECK(text.find("instances        : 40\n") != std::string::npos);
  CHECK(text.find("capacity         : 1000\n") != std::string::npos);
  CHECK(text.find("last exit        : signal SIGKILL 2m ago\n") != std::string::npos);
  CHECK(text.find("last exit at     : 2026-11-30T15:00:00Z\n") != std::string::npos);
  CHECK(text.find("next start in    : -\n") != std::string::npos);
  CHECK(text.find("reloading        : -\n") != std::string::npos);
  w.successor = api::SuccessorEntry{789, "probation", 2.4};
  CHECK(render_worker_description(w, kNow).find(
            "reloading        : new worker pid 789 probation\n") != std::string::npos);
}

TEST_CASE("cli human formats: durations round down to the largest whole unit") {
  struct Case {
    double seconds;
    const char* text;
  };
  for (const Case c : {Case{-3, "0s"},
                       {0, "0s"},
                       {5.9, "5s"},
                       {59, "59s"},
                       {60, "1m"},
                       {3599, "59m"},
                       {3600, "1h"},
                       {7200, "2h"},
                       {86399, "23h"},
                       {4 * 86400 + 5, "4D"}}) {
    INFO(c.seconds);
    CHECK(human_duration(c.seconds) == c.text);
  }
}

TEST_CASE("cli human formats: bytes in b, kb, mb, gb with one decimal") {
  struct Case {
    uint64_t bytes;
    const char* text;
  };
  for (const Case c : {Case{0, "0b"},
                       {1023, "1023b"},
                       {1024, "1.0kb"},
                       {1536, "1.5kb"},
                       {10485760, "10.0mb"},
                       {12897484, "12.3mb"},
                       {1048575, "1.0mb"},
                       {3ull << 30, "3.0gb"}}) {
    INFO(c.bytes);
    CHECK(human_bytes(c.bytes) == c.text);
  }
}

TEST_CASE("cli human formats: lags in ms with a decimal below 10, seconds from 1000") {
  CHECK(human_ms(0) == "0ms");
  CHECK(human_ms(0.34) == "0.3ms");
  CHECK(human_ms(12.4) == "12ms");
  CHECK(human_ms(1500) == "1.5s");
}

TEST_CASE("cli last exit: names the signal or the exit code, with the age when known") {
  CHECK(describe_last_exit(std::nullopt, kNow) == "-");
  CHECK(describe_last_exit(api::LastExit{"hung", 0, 6, "SIGABRT", "", ""}, kNow) == "hung SIGABRT");
  CHECK(describe_last_exit(api::LastExit{"crash", 3, 0, "", "garbage", ""}, kNow) ==
        "crash (exit 3)");
  CHECK(describe_last_exit(api::LastExit{"stopped", 0, 0, "", "2026-11-28T15:01:59.5Z", ""},
                           kNow) == "stopped 2D ago");
}

}  // namespace
}  // namespace corral::cli
