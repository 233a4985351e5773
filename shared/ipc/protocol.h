// The master <-> worker IPC contract. Everything both sides must agree on is in this file.
//
// Transport: the master spawns each worker with one end of a unix stream socket on fd 3.
//
// Framing: every message is one frame:
//
//     +----------------------+---------+-------------------------------+
//     | length: u32, big-end | type:u8 | payload: UTF-8 JSON object    |
//     +----------------------+---------+-------------------------------+
//
//   `length` counts the type byte and the payload (so it is at least 1) and is at most
//   kMaxFrameBytes. An empty payload means {}. A frame whose length is 0 or too large, whose
//   type is not in the table below, whose payload is not a JSON object, or whose type the
//   receiver may not receive, is a protocol error: the stream cannot be trusted after it.
//   The master kills and replaces a worker that commits one (exit reason `protocol_error`);
//   a worker that receives one exits with kExitProtocol. Neither side ever crashes on one.
//
// Handshake: the worker's first frame is `hello` carrying kProtocolVersion; the master answers
//   `welcome` (the worker's settings) or, on a version mismatch, closes the pipe. The worker
//   is *ready* only once it sends `ready`; the master sends it work only after that.
//
// Requests and replies: a frame that expects an answer carries "id" (u64, unique per pipe and
//   direction); the answer carries "re" with the same id. hello/welcome is the only pair today.
//
// Liveness: the worker sends `heartbeat` every heartbeat interval from the same loop that does
//   its work, so a blocked loop shows as silence. Traffic is per state transition, never per
//   poll of a scenario: a worker batches its step and instance events into `events` frames.
//
// Work: the master sends `define_run` (the scenario, once per run and worker), then `start`
//   for ranges of instances; the worker reports each finished step and instance in `events`.
//   A load test is `load_start` to each worker taking part; each reports `load_stats` every
//   second until its last one says done.
//
// Rebalance: the master evens out its workers' loads (after a worker returned, or a scale-up)
//   with `release`: the worker takes up to that many of its waiting instances (none with a
//   request in flight) off its loop and answers with one `handback` marked "released"; the
//   master places them on the less-loaded workers.
//
// End: the master closes the pipe or sends `stop`; a worker exits on `stop` (after finishing
//   or handing back its work) and at once on EOF of fd 3. A worker leaving on its own (soft
//   memory limit) sends `leaving` with the reason first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace corral::ipc {

// 2: release, checkpoints with wake_ms; 3: callback; 4: limits; 5: lease
constexpr uint32_t kProtocolVersion = 5;
constexpr uint32_t kMaxFrameBytes = 8u << 20;  // type byte + payload
constexpr size_t kHeaderBytes = 5;             // length + type

enum class Sender : uint8_t { kMaster, kWorker };

// The closed table of message types: X(name, wire value, who sends it, wire name).
// Both sides switch over MessageType without a default, so a type one side does not handle
// fails the build (-Werror=switch).
#define CORRAL_IPC_MESSAGES(X)                                    \
  X(kHello, 1, ::corral::ipc::Sender::kWorker, "hello")           \
  X(kWelcome, 2, ::corral::ipc::Sender::kMaster, "welcome")       \
  X(kReady, 3, ::corral::ipc::Sender::kWorker, "ready")           \
  X(kHeartbeat, 4, ::corral::ipc::Sender::kWorker, "heartbeat")   \
  X(kStop, 5, ::corral::ipc::Sender::kMaster, "stop")             \
  X(kLeaving, 6, ::corral::ipc::Sender::kWorker, "leaving")       \
  X(kDefineRun, 7, ::corral::ipc::Sender::kMaster, "define_run")  \
  X(kStart, 8, ::corral::ipc::Sender::kMaster, "start")           \
  X(kCancel, 9, ::corral::ipc::Sender::kMaster, "cancel")         \
  X(kEvents, 10, ::corral::ipc::Sender::kWorker, "events")        \
  X(kHandback, 11, ::corral::ipc::Sender::kWorker, "handback")    \
  X(kLoadStart, 12, ::corral::ipc::Sender::kMaster, "load_start") \
  X(kLoadStop, 13, ::corral::ipc::Sender::kMaster, "load_stop")   \
  X(kLoadStats, 14, ::corral::ipc::Sender::kWorker, "load_stats") \
  X(kRelease, 15, ::corral::ipc::Sender::kMaster, "release")      \
  X(kCallback, 16, ::corral::ipc::Sender::kMaster, "callback")    \
  X(kLimits, 17, ::corral::ipc::Sender::kMaster, "limits")        \
  X(kLease, 18, ::corral::ipc::Sender::kMaster, "lease")

enum class MessageType : uint8_t {
#define CORRAL_IPC_ENUM(name, value, sender, wire) name = value,
  CORRAL_IPC_MESSAGES(CORRAL_IPC_ENUM)
#undef CORRAL_IPC_ENUM
};

struct MessageInfo {
  MessageType type;
  Sender sender;
  std::string_view name;
};

// The table entry for a wire type byte, or nullptr when the byte names no message.
const MessageInfo* find_message(uint8_t wire_type);
const MessageInfo& message_info(MessageType type);

// Payload fields, by message (all optional unless noted). Each payload has a struct and a strict
// codec, used by both sides: control.h for the messages below, events.h, load_stats.h and
// limits.h for theirs. A field that is unknown, of the wrong type or out of range is a
// protocol error.
//   hello     {"protocol": u32 (required), "pid": int, "slot": int}
//   welcome   {"protocol": u32, "slot": int, "heartbeat_ms": u64, "max_memory_bytes": u64,
//              "kernel_memory_bytes": u64, "log_max_bytes": u64, "log_files": int,
//              "log_level": str, "max_response_bytes": u64, "response_memory_bytes": u64,
//              "http_client": "lean"|"curl", "max_connections_per_host": int,
//              "secrets": {"NAME": "value", ...},  (the pipe is the only place secrets travel)
//              "callback": {"base": "http://host:port", "key": "<64 hex>"},  (shared/callback)
//              "lease_until_ms": u64}  (in a cluster only: see `lease`)
//   ready     {}
//   heartbeat {"seq": u64, "loop_lag_ms": double, "rss_bytes": u64, "active": u64,
//             "idle_rss_bytes": u64 (RSS when it said ready), "requests": u64 (HTTP requests
//             sent since the worker started), "limits": {...} (shared/ipc/limits.h) while it
//             has per-target limits; the last three optional}
//   stop      {"grace_ms": u64}
//   leaving   {"reason": "memory_soft", "rss_bytes": u64}
//   define_run {"run": str, "scenario": {scenario document}, "vars": {run-time vars},
//               "size": u32 (instances in the run), "created_ms": i64 (its submission),
//               "priority": u32 (its weight in per-target limits' fair share),
//               "data": {data rows of the run, master/runs.h}}
//              sent once per worker before the first `start` of that run; the last two
//              place each fresh instance's start within the run's start_spread
//   start     {"run": str, "first": u32, "count": u32}  fresh instances first..first+count-1
//             or {"run": str, "resume": {"<index>": {checkpoint}, ...}}  (shared/ipc/checkpoint.h)
//   cancel    {"run": str}  drop every instance of the run, without events
//   events    {"events": [event, ...]}  state transitions, batched (shared/ipc/events.h)
//   handback  {"instances": {"<run>": {"<index>": {checkpoint}, ...}, ...}}  on `stop`: the
//             running instances, checkpointed, for the master to place elsewhere; sent after
//             the last `events` frame, 500 checkpoints per frame;
//             with "released": true, the one answer to a `release` (it may hold none)
//   release   {"count": u32}  hand back up to `count` (at most 500) waiting instances
//   callback  {"run": str, "index": u32, "step": u32, "body": <JSON>} the instance's callback
//             step was called (journaled by the master first), or, with "heartbeat": true and
//             no body, pinged (steps/callback)
//   limits    this worker's shares of the per-target limits (shared/ipc/limits.h); sent before
//             the define_run of a run whose scenario has limits, and whenever they change
//   lease     {"until_ms": u64}  the host's lease (master/cluster/hosts.h) ends then, by the
//             machine's monotonic clock (CLOCK_MONOTONIC, in ms): past it, the worker starts
//             no step and sends no request (its instances wait) until a later lease comes, or
//             the instances are cancelled. Sent with every renewal of the host's heartbeat, and
//             with 0 when the host fences itself; a worker without a lease (one not in a
//             cluster) is not held. Load tests are not held.
//   load_start {"load": str, "scenario": {scenario document}, "vars": {run-time vars},
//              "spec": {load section, config/load/parse.h}, "index": u32, "of": u32,
//              "delay_ms": u64}  run share `index` of `of` of a load test, starting in delay_ms
//   load_stop {"load": str}  end the test now (running iterations get the grace period)
//   load_stats {one second of measurements, shared/ipc/load_stats.h}  every second of a load
//             test, and a last one with "done": true (also when the test could not start)

}  // namespace corral::ipc
