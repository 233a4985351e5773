// One running worker process as the master sees it: the process (uv::Process, started without
// forking the master) and the IPC pipe on the worker's fd 3, with frame decoding and bounded
// outgoing buffering.
//
// Owned by the daemon, one per slot generation. Destroying it closes the pipe (the worker then
// exits on EOF) but does not kill the process; the exit callback is not delivered after the
// object is gone. Loop thread only; spawn only from the loop thread, because PR_SET_PDEATHSIG
// in the child fires when the *thread* that spawned it exits.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/ipc/codec.h"
#include "shared/ipc/in_hand.h"
#include "shared/status.h"
#include "shared/uv/handle.h"
#include "shared/uv/next_turn.h"
#include "shared/uv/process.h"
#include "shared/uv/stream.h"

namespace corral::master {

struct SpawnSpec {
  std::string executable;         // the corral binary itself: argv[0]
  std::string file;               // what to execute, when not `executable` (/proc/self/fd/N)
  std::vector<std::string> args;  // after argv[0]
};

class WorkerProcess {
 public:
  // on_frame and on_protocol_error must not destroy the WorkerProcess; on_exit may.
  struct Callbacks {
    std::function<void(ipc::Frame&&)> on_frame;
    // The worker broke the IPC contract (bad frame, pipe error). Reported once.
    std::function<void(const Status&)> on_protocol_error;
    std::function<void(int64_t exit_status, int term_signal)> on_exit;
  };

  // The most bytes queued towards one worker before send() refuses (backpressure: libuv's
  // write queue is unbounded, and a worker that stops reading must not grow the master).
  static constexpr size_t kMaxQueuedBytes = 64u << 20;
  static Result<std::unique_ptr<WorkerProcess>> spawn(uv_loop_t* loop, const SpawnSpec& spec,
                                                      Callbacks cb);
  ~WorkerProcess();

  // Replaces the callbacks (a spare worker taken by a slot). Not from inside a callback.
  void set_callbacks(Callbacks cb) { cb_ = std::move(cb); }
  pid_t pid() const { return process_ ? process_->pid() : 0; }
  bool exited() const { return exited_; }
  Status send(ipc::MessageType type, const ipc::Payload& payload);
  Status send(ipc::MessageType type, const nlohmann::json& payload) {
    return send(type, ipc::Payload(payload));
  }
  // The worker broke the IPC contract in a frame's contents: stops reading its pipe and
  // reports it through on_protocol_error (once). Safe inside on_frame.
  void fail_protocol(const Status& s) { report_protocol_error(s); }
  // Whether the worker sent frames the master has not handled yet: read ones waiting for a
  // turn's slice, or bytes in the pipe. A worker with unread frames has spoken, however long
  // ago its last frame was handled: the master is behind, not the worker (Daemon::reconcile).
  bool has_unread() const;
  // While the master watches a silent worker: whether its process made read or write system
  // calls since the last look (the first look takes a baseline and says no). A starved loop
  // makes them when it runs; a stuck or stopped one makes none. stop_watching drops the
  // baseline once the worker is heard again.
  bool made_calls();
  void stop_watching() { calls_seen_.reset(); }
  // Sends `signum` to the process if it has not exited yet.
  void signal(int signum);
  void close_pipe();
  // After the process exited: the instance its loop was running code for when it died.
  std::optional<std::pair<std::string, uint32_t>> culprit() const;

 private:
  WorkerProcess() : decoder_(ipc::Sender::kMaster) {}
  void on_process_exit(int64_t exit_status, int term_signal);
  Status start_reading();
  void on_bytes(std::string_view bytes);
  // Decodes frames and hands them to on_frame (at least one) until the turn's slice
  // (uv::Slice::of_turn) is over, then, if frames are left or the slice is spent, stops reading
  // the pipe and goes on in the next turn of the loop: a worker's burst (a hand-back of
  // thousands of checkpoints) never holds the master's loop, and its API, for long. A frame is
  // parsed when its turn comes, so the parsing is in the slice too.
  void drain();
  // After the exit: every byte still in the pipe is read at once (into the decoder), then
  // handed to on_frame a slice per turn; on_exit comes once the last frame is handled, so that
  // the frames a worker sent before it exited (a hand-back) are all handled before its exit is.
  void read_rest();
  void finish_exit();
  // Decodes the next frame and hands it to on_frame. False when no complete frame is buffered
  // or the worker broke the contract (a broken frame is reported when its turn comes).
  bool handle_next();
  void report_protocol_error(const Status& s);

  std::unique_ptr<uv::Process> process_;
  std::unique_ptr<uv::Stream> pipe_;
  ipc::Decoder decoder_;  // read from the pipe, not handed to on_frame yet
  std::unique_ptr<uv::NextTurn> resume_;
  bool paused_ = false;  // reading stopped until the next turn
  // libuv calls the read callback up to 32 times in a row in one turn: they share the turn's
  // slice (uv::Slice::of_turn).
  uv_loop_t* loop_ = nullptr;
  Callbacks cb_;
  bool exited_ = false;
  int64_t exit_status_ = 0;
  int term_signal_ = 0;
  bool protocol_broken_ = false;
  ipc::InHand* in_hand_ = nullptr;
  std::optional<uint64_t> calls_seen_;  // made_calls: the process's system calls at the last look
};

}  // namespace corral::master
