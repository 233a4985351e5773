// corral-target: a small HTTP API on 127.0.0.1 that behaves like the job APIs corral tests, so
// the demo, the integration tests and the benchmarks have a real, local server to talk to.
//
//   POST /jobs {"polls_to_done": 3, "fail": false}   -> 201 {"id": "7", "status": "running"}
//   GET  /jobs/<id>        -> 200 {"id","status": "running"|"done"|"failed","polls": n}
//                             (each GET counts as one poll; after polls_to_done polls the job
//                             is done, or failed when "fail" was set); 404 for an unknown id
//   GET  /status/<id>      -> 200 {"status": "ok"} (the benchmark's poll endpoint)
//   GET  /flaky/<key>?fail=N  -> 503 for the first N requests with this key, then 200
//   GET  /slow?ms=N        -> 200 after N milliseconds
//   GET  /stats            -> {"requests": n, "polls": n, "jobs": n}
// Loop thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "shared/http/server.h"

namespace corral::target {

struct Job {
  uint32_t polls = 0;
  uint32_t polls_to_done = 3;
  bool fail = false;
};

class Target {
 public:
  explicit Target(uv_loop_t* loop);
  Status listen(const std::string& host, int port) { return server_.listen_tcp(host, port); }
  int port() const { return server_.tcp_port(); }
  void close() { server_.close(); }
  uint64_t requests() const { return requests_; }

 private:
  void handle(http::Request&& req, http::Responder respond);
  http::Response jobs(const http::Request& req);
  http::Response flaky(const http::Request& req);
  void slow(const http::Request& req, const http::Responder& respond);

  uv_loop_t* loop_;
  http::Server server_;
  std::unordered_map<uint64_t, Job> jobs_;
  std::unordered_map<std::string, uint32_t> flaky_;
  uint64_t next_job_ = 1;
  uint64_t requests_ = 0;
  uint64_t polls_ = 0;
};

}  // namespace corral::target
