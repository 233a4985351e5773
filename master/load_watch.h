// Watching a load test's target (load::Watch, docs/load.md "Watching the target"): every
// second, a process's RSS, CPU, open files and threads from /proc, and named series scraped
// from a metrics URL (Prometheus text, or a JSON object of numbers) on libuv's thread pool, so
// that the loop never waits for the target. Each sample goes to `on_sample`:
//   {"t": 12.0, "up": true, "rss": 123456789, "cpu": 0.93, "fds": 1012, "threads": 11,
//    "nodejs_heap_size_used_bytes": 98765432}
// `t` is seconds since start(); "up" is false once the process is gone (or a zombie); a series
// the last scrape did not have is left out, and "scrape_error" says why. Loop thread only.
#pragma once

#include <uv.h>

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/load/model.h"
#include "shared/http/blocking_client.h"
#include "shared/uv/timer.h"

namespace corral::master {

// One reading of a process from /proc; nullopt when it is gone or a zombie.
struct ProcReading {
  uint64_t rss_bytes = 0;
  uint64_t cpu_ticks = 0;  // user + system, in clock ticks
  uint64_t threads = 0;
  uint64_t fds = 0;
};
std::optional<ProcReading> read_proc(pid_t pid);

// The values of `names` in a metrics document: Prometheus text (a series with labels is the
// sum of its lines) or a JSON object (top-level numbers). Names not found are left out.
std::map<std::string, double> parse_metrics(const std::string& body,
                                            const std::vector<std::string>& names);

// "http://host:port/path" -> where to connect and the path; nullopt when it is not that shape.
std::optional<std::pair<http::Target, std::string>> split_http_url(const std::string& url);

class TargetWatch {
 public:
  using OnSample = std::function<void(nlohmann::json sample)>;

  TargetWatch(uv_loop_t* loop, load::Watch watch, OnSample on_sample);
  // A scrape still running on the thread pool finishes there and is dropped.
  ~TargetWatch();
  TargetWatch(const TargetWatch&) = delete;
  TargetWatch& operator=(const TargetWatch&) = delete;

  void start();

 private:
  struct Scrape;
  void on_tick();
  void scrape();
  static void on_scraped(uv_work_t* req, int status);

  uv_loop_t* loop_;
  load::Watch watch_;
  OnSample on_sample_;
  uv::Timer timer_;
  uint64_t started_ms_ = 0;
  std::optional<ProcReading> last_;
  uint64_t last_ms_ = 0;
  bool died_ = false;
  Scrape* scraping_ = nullptr;  // in flight on the pool
  nlohmann::json scraped_ = nlohmann::json::object();  // the last scrape's values
  std::string scrape_error_;
};

}  // namespace corral::master
