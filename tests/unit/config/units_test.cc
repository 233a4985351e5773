// Durations, sizes and HOST:PORT in their text forms.
#include <catch2/catch.hpp>

#include "config/config.h"

namespace corral::config {
namespace {

TEST_CASE("config units: parses durations with every unit, including decimals") {
  struct Case {
    const char* text;
    uint64_t ms;
  };
  const Case cases[] = {
      {"250ms", 250},    {"10s", 10000},  {"10m", 600000},   {"1h", 3600000},
      {"2d", 172800000}, {"1.5s", 1500},  {"0.25h", 900000}, {"0s", 0},
      {" 5s ", 5000},    {"10 s", 10000}, {"007s", 7000},    {"1.0005s", 1001},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<uint64_t> ms = parse_duration_ms(c.text);
    REQUIRE(ms.is_ok());
    CHECK(*ms == c.ms);
  }
}

TEST_CASE(
    "config units: rejects a duration that is a bare number, has no number or an unknown unit") {
  const char* cases[] = {"",   "10",    "s",   "10x",   "-5s", "+5s",  "1.s",   ".5s",
                         "5S", "1e3ms", "5s5", "5 s s", "inf", "1,5s", "10sec", "ms10"};
  for (const char* text : cases) {
    CAPTURE(text);
    Result<uint64_t> ms = parse_duration_ms(text);
    REQUIRE_FALSE(ms.is_ok());
    CHECK(ms.status().code() == Code::kInvalidArgument);
    CHECK(ms.status().message() ==
          "expected a duration like \"5s\", got " + nlohmann::json(text).dump());
  }
}

TEST_CASE("config units: rejects a duration too large for 64-bit milliseconds") {
  for (const char* text : {"18446744073709551616ms", "300000000000000d"}) {
    CAPTURE(text);
    Result<uint64_t> ms = parse_duration_ms(text);
    REQUIRE_FALSE(ms.is_ok());
    CHECK(ms.status().message() == "duration " + nlohmann::json(text).dump() + " is too large");
  }
}

TEST_CASE("config units: parses sizes in powers of 1024 with case-insensitive units") {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  constexpr uint64_t kKiB = 1024, kMiB = kKiB << 10, kGiB = kMiB << 10;
  const Case cases[] = {
      {"512", 512},
      {"0", 0},
      {"1B", 1},
      {"64KB", 64 * kKiB},
      {"512MB", 512 * kMiB},
      {"2GB", 2 * kGiB},
      {"1TB", kGiB << 10},
      {"1PB", kGiB << 20},
      {"1KiB", kKiB},
      {"3MiB", 3 * kMiB},
      {"1GiB", kGiB},
      {"64kb", 64 * kKiB},
      {"5mb", 5 * kMiB},
      {"1gib", kGiB},
      {"512M", 512 * kMiB},
      {"2g", 2 * kGiB},
      {"1.5GB", kGiB + kGiB / 2},
      {" 10 MB ", 10 * kMiB},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<uint64_t> bytes = parse_bytes(c.text);
    REQUIRE(bytes.is_ok());
    CHECK(*bytes == c.bytes);
  }
}

TEST_CASE("config units: rejects malformed sizes, naming the text") {
  const char* cases[] = {"", "MB", "12XB", "-1", "1.5.5MB", "1 MB B", "0x10", "1e6", "ten", "1KBB"};
  for (const char* text : cases) {
    CAPTURE(text);
    Result<uint64_t> bytes = parse_bytes(text);
    REQUIRE_FALSE(bytes.is_ok());
    CHECK(bytes.status().message() ==
          "expected a size like \"512MB\", got " + nlohmann::json(text).dump());
  }
  Result<uint64_t> huge = parse_bytes("17179869184GB");
  REQUIRE_FALSE(huge.is_ok());
  CHECK(huge.status().message() == "size \"17179869184GB\" is too large");
}

TEST_CASE("config units: formats durations and sizes in the largest exact unit") {
  CHECK(format_duration_ms(0) == "0s");
  CHECK(format_duration_ms(250) == "250ms");
  CHECK(format_duration_ms(1500) == "1500ms");
  CHECK(format_duration_ms(90000) == "90s");
  CHECK(format_duration_ms(600000) == "10m");
  CHECK(format_duration_ms(3600000) == "1h");
  CHECK(format_duration_ms(172800000) == "2d");
  CHECK(format_bytes(0) == "0");
  CHECK(format_bytes(512) == "512");
  CHECK(format_bytes(1536) == "1536");
  CHECK(format_bytes(64 << 10) == "64KB");
  CHECK(format_bytes(10 << 20) == "10MB");
  CHECK(format_bytes(uint64_t{2} << 30) == "2GB");
}

TEST_CASE("config units: formatted durations and sizes parse back to the same value") {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{999}, uint64_t{1024}, uint64_t{86400000},
                     uint64_t{123456789}, uint64_t{3} << 40, ~uint64_t{0}}) {
    CAPTURE(v);
    CHECK(*parse_duration_ms(format_duration_ms(v)) == v);
    CHECK(*parse_bytes(format_bytes(v)) == v);
  }
}

TEST_CASE("config units: splits HOST:PORT for IPv4, bracketed IPv6 and names") {
  struct Case {
    const char* text;
    const char* host;
    int port;
  };
  const Case cases[] = {
      {"127.0.0.1:7070", "127.0.0.1", 7070},
      {"[::1]:0", "::1", 0},
      {"localhost:80", "localhost", 80},
      {"0.0.0.0:65535", "0.0.0.0", 65535},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto parsed = parse_host_port(c.text);
    REQUIRE(parsed.is_ok());
    CHECK(parsed->first == c.host);
    CHECK(parsed->second == c.port);
  }
}

TEST_CASE("config units: rejects HOST:PORT without a port, with a bad port, or unbracketed IPv6") {
  struct Case {
    const char* text;
    const char* why;
  };
  const Case cases[] = {
      {"localhost", "no port"},
      {"localhost:", "no port"},
      {":80", "no host"},
      {"host:70000", "the port is above 65535"},
      {"host:99999999999", "the port is above 65535"},
      {"host:http", "the port is not a number"},
      {"host:-1", "the port is not a number"},
      {"host: 80", "the port is not a number"},
      {"::1:80", "an IPv6 address needs brackets, as in [::1]:7070"},
      {"[::1]", "an IPv6 address needs brackets, as in [::1]:7070"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto parsed = parse_host_port(c.text);
    REQUIRE_FALSE(parsed.is_ok());
    CHECK(parsed.status().message() == "expected HOST:PORT like \"127.0.0.1:7070\", got " +
                                           nlohmann::json(c.text).dump() + " (" + c.why + ")");
  }
}

}  // namespace
}  // namespace corral::config
