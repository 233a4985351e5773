// One side of a WebSocket after its handshake: frames in and out through wslay's event API
// (libwslay), which masks a client's frames, puts fragmented messages together, answers pings,
// checks the UTF-8 of text and close frames, enforces a message size cap and runs the close
// handshake (RFC 6455). Framing never touches a socket: bytes from the peer go in, and what
// must be sent is appended to a string its owner writes.
//
// wslay keeps two 4 KiB buffers in each context (about 8.7 KB). A socket of a load test spends
// nearly all its life between messages, so Framing lets go of the context whenever nothing is
// held: every byte fed belongs to frames that ended (it counts them from the frame headers wslay
// reports), no fragmented message is half received, nothing waits to be sent and no close has
// begun. The next byte or message takes one again. An idle socket holds only this object.
//
// A context let go that way is, to wslay, a stream between two frames, with nothing queued and
// no close begun: any other connection of the same role may go on from there. So each thread
// keeps a few such contexts (kSpares per role) for the next Framing that needs one, and a
// socket that sends a message and reads its echo costs no allocation. A context that saw a
// close or an error is freed.
//
// With permessage-deflate agreed (use_deflate), messages go out compressed (RSV1 set) and a
// compressed message from the peer is inflated (shared/ws/deflate.h) before the Peer hears it:
// its inflated size is held to the cap, and a text message's UTF-8 is checked then.
//
// A peer that breaks the protocol gets the close wslay chooses (1002 protocol error, 1007
// invalid UTF-8, 1009 too big), or corral's for a compressed message (1007 when it does not
// inflate or is not UTF-8, 1009 when it inflates past the cap), and feed() says which in words.
// Loop thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shared/status.h"

namespace corral::ws {

enum class Role { kClient, kServer };
enum class Kind { kText, kBinary };

// Close codes corral sends or reports (RFC 6455, 7.4.1).
constexpr uint16_t kCloseNormal = 1000;
constexpr uint16_t kCloseGoingAway = 1001;
constexpr uint16_t kCloseProtocolError = 1002;
constexpr uint16_t kCloseNoStatus = 1005;  // reported when a close frame had no code
constexpr uint16_t kCloseAbnormal = 1006;  // reported when the connection ended without a close
constexpr uint16_t kCloseInvalidData = 1007;
constexpr uint16_t kCloseTooBig = 1009;

struct Context;  // a wslay context and the Framing it serves now (framing.cc)

class Framing {
 public:
  // Idle contexts each thread keeps for reuse, per role.
  static constexpr size_t kSpares = 16;

  class Peer {
   public:
    // A whole message (fragments joined).
    virtual void on_message(Kind kind, std::string_view data) = 0;
    // A pong came (the answer to ping()).
    virtual void on_pong(std::string_view /*data*/) {}
    // A ping came; Framing has queued its pong.
    virtual void on_ping(std::string_view /*data*/) {}
    // The peer's close frame came; Framing has queued its answer (the same code).
    virtual void on_close_received(uint16_t code, std::string_view reason) = 0;

   protected:
    ~Peer() = default;
  };

  // `max_message`: the largest message accepted, in bytes (a larger one closes with 1009).
  Framing(Role role, uint64_t max_message, Peer& peer);
  ~Framing();
  Framing(const Framing&) = delete;
  Framing& operator=(const Framing&) = delete;

  // Bytes from the peer; what must go back (pongs, the answer to a close) is appended to `out`.
  // An error when they broke the protocol: the close sent for it is in `out` already.
  Status feed(const char* data, size_t n, std::string& out);
  // Queues a message, a ping or a close (reason at most 123 bytes) and appends its frames to
  // `out`. Nothing is sent after a close.
  void send(Kind kind, std::string_view data, std::string& out);
  void ping(std::string_view data, std::string& out);
  void close(uint16_t code, std::string_view reason, std::string& out);

  // Whether messages are compressed both ways (permessage-deflate agreed in the handshake).
  void use_deflate(bool on) { deflate_ = on; }
  bool deflate() const { return deflate_; }

  bool close_sent() const { return close_sent_; }
  bool close_received() const { return close_received_; }
  // The code of the close received (kCloseNoStatus when it had none), 0 before one came.
  uint16_t code_received() const { return code_received_; }
  // Whether a wslay context is held now (tests and memory accounting).
  bool holds_context() const { return ctx_ != nullptr; }

 private:
  bool ensure();
  void flush(std::string& out);
  void release_if_idle();
  // Gives the context back: to the thread's spares when it can serve another Framing.
  void let_go();
  Status broken() const;
  // A compressed message from the peer, inflated and checked; false after closing for it.
  bool inflate(Kind kind, std::string_view data);
  void complain(uint16_t code, std::string words);

  friend struct FramingCallbacks;  // wslay's callbacks (framing.cc)

  Role role_;
  uint64_t max_message_;
  Peer& peer_;
  Context* ctx_ = nullptr;
  // The bytes of the call in progress.
  const char* in_ = nullptr;
  size_t in_left_ = 0;
  std::string* out_ = nullptr;
  // For release_if_idle: bytes handed to wslay, and bytes of the frames that ended.
  uint64_t taken_ = 0;
  uint64_t ended_ = 0;
  uint64_t frame_bytes_ = 0;  // header and payload of the frame being received
  bool mid_message_ = false;  // a fragmented message has begun and not ended
  uint8_t last_opcode_ = 0;   // of the last frame begun
  bool feeding_ = false;      // inside wslay_event_recv (a Peer callback is on the stack)
  bool close_sent_ = false;
  bool close_received_ = false;
  uint16_t code_received_ = 0;
  uint16_t code_sent_ = 0;
  bool closing_ourselves_ = false;  // close() was called: the close sent is not a complaint
  bool deflate_ = false;
  std::string complaint_;  // why corral closed for a compressed message, in words
};

}  // namespace corral::ws
