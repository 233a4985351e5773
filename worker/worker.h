// A worker process: one libuv loop that talks to the master over fd 3, says when it is ready,
// heartbeats from the loop it works on, and watches its own memory (the soft limit).
// The scenario engine runs on this same loop. Loop thread only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "shared/ipc/codec.h"
#include "shared/ipc/control.h"
#include "shared/uv/stream.h"
#include "shared/uv/timer.h"
#include "worker/engine/engine.h"
#include "worker/http/curl_client.h"
#include "worker/http/lazy_client.h"
#include "worker/http/lean_client.h"
#include "worker/load/driver.h"
#include "worker/test_faults.h"

namespace corral::worker {

class Worker {
 public:
  // `slot` is -1 for a spare: its welcome names the slot it serves.
  Worker(uv_loop_t* loop, int slot, std::string home);
  // Opens fd 3 and says hello. Fails when fd 3 is not usable.
  Status start();
  // The process exit code, valid once the loop has ended.
  int exit_code() const { return exit_code_; }

 private:
  void on_bytes(std::string_view bytes);
  void on_frame(ipc::Frame&& f);
  // The frame's payload as message T; nullopt once it has left, when the payload breaks the
  // contract (the master's protocol error).
  template <typename T>
  std::optional<T> payload(const ipc::Frame& f);
  void on_welcome(const ipc::Welcome& w);
  void start_engine(const ipc::Welcome& w);
  void on_heartbeat_timer();
  void check_memory();
  void send(ipc::MessageType type, const nlohmann::json& payload);
  // Flushes what is queued to the master, then closes every handle so the loop ends.
  void leave(int code, const std::string& why);
  void start_fault();
  void on_define_run(const ipc::DefineRun& d);
  void on_start(const ipc::Start& start);
  void on_callback(const ipc::Callback& c);
  void on_load_start(const ipc::LoadStart& l);
  // Reports a load test that could not start as done, with the reason.
  void load_failed(const std::string& id, const std::string& why);
  void reap_loads();
  void on_event(ipc::Event&& ev);
  void flush_events();
  // On stop: checkpoints every running instance and sends them to the master.
  void hand_back();
  // A `release`: hands back up to `count` waiting instances, in one `handback` frame.
  void release(uint32_t count);

  uv_loop_t* loop_;
  int slot_;
  std::string home_;
  Fault fault_ = Fault::kNone;  // from CORRAL_TEST_FAULT, once the slot is known
  std::unique_ptr<uv::Stream> pipe_;
  ipc::Decoder decoder_{ipc::Sender::kWorker};
  std::vector<ipc::Frame> frames_;
  std::unique_ptr<uv::Timer> heartbeat_;
  std::unique_ptr<uv::Timer> memory_;
  std::unique_ptr<uv::Timer> fault_timer_;
  std::unique_ptr<uv::Timer> leave_timer_;
  Secrets secrets_;  // from `welcome`; the engine expands and masks them
  BodyBudget budget_;  // shared by both clients
  // libcurl's client, made on its first request: proxies, and everything when http_client is
  // curl.
  std::unique_ptr<LazyClient> curl_;
  std::unique_ptr<LeanClient> lean_;    // http:// and https:// when http_client is lean
  std::unique_ptr<Engine> engine_;
  std::map<std::string, std::unique_ptr<LoadDriver>> loads_;  // by test id; before engine_ dies
  std::unique_ptr<uv::Timer> reap_timer_;
  nlohmann::json events_ = nlohmann::json::array();  // not yet sent to the master
  std::unique_ptr<uv::Timer> flush_timer_;
  std::vector<std::unique_ptr<char[]>> ballast_;  // alloc_soft fault only
  bool welcomed_ = false;
  bool leaving_ = false;
  bool thrown_in_read_ = false;  // Fault::kThrow
  uint64_t heartbeat_ms_ = 1000;
  uint64_t max_memory_ = 0;
  uint64_t seq_ = 0;
  uint64_t next_beat_ns_ = 0;
  double last_lag_ms_ = 0;
  uint64_t idle_rss_ = 0;  // RSS when it said ready, before any instance
  int exit_code_ = 0;
};

}  // namespace corral::worker
