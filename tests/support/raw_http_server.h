// A scripted TCP server for testing HTTP clients byte by byte: on 127.0.0.1, an ephemeral
// port, the caller's loop (no thread). Each connection reads one request at a time (the head up
// to "\r\n\r\n", then Content-Length bytes of body) and plays the script the test returns for
// it: bytes to send, pauses, a clean close (FIN) or a reset (RST). A script that ends without
// closing keeps the connection for the next request; an empty one never answers.
//
// With TlsServerOptions it speaks TLS (OpenSSL through memory BIOs on the same loop): the
// script's bytes are encrypted, a close sends close_notify first, and raw() bytes go to the
// socket as they are (a truncated record, garbage).
//
// Another protocol can take the connections' plain bytes instead of the HTTP/1.1 script player:
// HTTP/2 (h2_script_server.h) plays the same scripts over streams.
//
// Everything the server read is kept for assertions: every request in order, and per
// connection the raw bytes (decrypted) and how many requests it carried. Loop thread only.
// Destroying the server (or close()) closes its handles; the loop then ends with none left.
#pragma once

#include <uv.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shared/uv/listener.h"

namespace corral::test {

// One step of a script. Each step starts once the previous one is done: a send once its bytes
// are in the kernel, a wait once its timer fires.
struct Step {
  enum class Kind { kSend, kTrickle, kWait, kClose, kReset, kRaw, kResetStream };
  Kind kind;
  std::string bytes;  // kSend, kTrickle
  uint64_t ms = 0;    // kWait; kTrickle: the pause between two bytes; kResetStream: the code
};
using Script = std::vector<Step>;

Step send(std::string bytes);
Step trickle(std::string bytes, uint64_t every_ms);  // one byte at a time
Step wait_ms(uint64_t ms);
Step close_connection();  // FIN once the bytes before it are sent; closed when the client ends
Step reset_connection();  // SO_LINGER 0 and close: the client gets an RST
Step raw(std::string bytes);  // over TLS: written to the socket unencrypted
// HTTP/2: RST_STREAM of the request's stream with `code` (an HTTP/2 error code). HTTP/1.1 has
// no streams: there it resets the connection.
Step reset_stream(uint32_t code);

// A server that speaks TLS.
struct TlsServerOptions {
  std::string cert, key;  // PEM files (tests/support/test_pki.h)
  // What the server answers to the client's ALPN offer when it holds this protocol: "http/1.1",
  // or "" not to answer (as a server without ALPN).
  std::string alpn = "http/1.1";
  std::string client_ca;  // set: a client certificate issued by this CA is required
  int min_version = 0;    // TLS1_2_VERSION, TLS1_3_VERSION; 0: OpenSSL's
  int max_version = 0;
  // Closes each connection as soon as the client's first flight came (a server that goes away
  // in the middle of the handshake).
  bool close_in_handshake = false;
};

// A request as the server read it.
struct RawRequest {
  size_t connection = 0;     // 0 for the first connection accepted, and so on
  size_t on_connection = 0;  // 1 for the first request of its connection
  std::string peer;          // the client's IP address, as the connection came from
  std::string method;
  std::string target;  // "/path?query", as sent
  std::string bytes;   // the request as received, head and body (HTTP/2: rendered as HTTP/1.1)
  std::string body;
  int32_t stream = 0;  // HTTP/2: its stream id
  // HTTP/2: the code of the RST_STREAM the client ended the stream with, if it did.
  std::optional<uint32_t> client_reset;
};

class RawHttpServer;

// One accepted connection's byte stream, as a protocol (RawProtocol) sees it.
class RawWire {
 public:
  virtual ~RawWire() = default;
  virtual uv_loop_t* loop() const = 0;
  virtual size_t index() const = 0;           // the connection's, as in RawRequest
  virtual const std::string& peer() const = 0;
  virtual bool is_open() const = 0;
  virtual bool closing() const = 0;           // shut_down() was called
  virtual size_t count_request() = 0;         // one more request on it; returns its number
  // Sends `bytes` (encrypted over TLS), or raw to the socket; `written` runs once they are in
  // the kernel, unless the connection is gone by then.
  virtual void write(std::string bytes, std::function<void()> written) = 0;
  virtual void write_raw(std::string bytes, std::function<void()> written) = 0;
  virtual void shut_down() = 0;  // FIN (close_notify first over TLS) after what is queued
  virtual void reset() = 0;      // RST, at once
};

// What a connection does with its plain bytes (after TLS): created at its first bytes.
class RawProtocol {
 public:
  virtual ~RawProtocol() = default;
  virtual void on_bytes(const char* data, size_t n) = 0;
  // The connection is gone: nothing more is sent, timers stop.
  virtual void on_closed() = 0;
};

class RawHttpServer {
 public:
  // Chooses the script for each request; called on the loop, as soon as the request is read.
  using ScriptFor = std::function<Script(const RawRequest&)>;
  using ProtocolFor = std::function<std::unique_ptr<RawProtocol>(RawHttpServer&, RawWire&)>;

  // Listens at once; aborts the test program when it cannot (a test has no use without it).
  RawHttpServer(uv_loop_t* loop, ScriptFor script_for);
  RawHttpServer(uv_loop_t* loop, ScriptFor script_for, const TlsServerOptions& tls);
  // Connections speak `protocol` (HTTP/1.1 scripts when empty), over TLS when `tls` is set.
  RawHttpServer(uv_loop_t* loop, ScriptFor script_for, ProtocolFor protocol,
                const TlsServerOptions* tls);
  ~RawHttpServer();
  RawHttpServer(const RawHttpServer&) = delete;
  RawHttpServer& operator=(const RawHttpServer&) = delete;

  int port() const { return port_; }  // kept after close(), for a test that needs a dead port
  // "http://127.0.0.1:<port>" (https:// over TLS) followed by `path`.
  std::string url(std::string_view path) const;

  const std::vector<RawRequest>& requests() const { return requests_; }
  size_t connections() const;  // accepted so far
  size_t open_connections() const { return open_; }
  size_t peak_open_connections() const { return peak_open_; }
  // The bytes connection `index` received, and the requests it carried.
  const std::string& received(size_t index) const;
  size_t requests_on(size_t index) const;

  // Stops listening and closes every connection at once. Safe to call twice.
  void close();

  // For protocols: records `req` and returns its script (expanded: no trickle left).
  Script answer(RawRequest req);
  RawRequest& request(size_t index) { return requests_.at(index); }
  // HTTP/2: request streams open at once on one connection, at most so far.
  size_t peak_streams() const { return peak_streams_; }
  void streams_open(size_t n) { peak_streams_ = std::max(peak_streams_, n); }

 private:
  class Connection;
  void on_connection(int status);
  void opened();
  void closed();

  uv_loop_t* loop_;
  ScriptFor script_for_;
  ProtocolFor protocol_for_;
  struct SslCtx;
  std::shared_ptr<SslCtx> tls_;  // null: plain TCP
  TlsServerOptions tls_options_;
  std::unique_ptr<uv::Listener> listener_;
  int port_ = 0;
  std::vector<std::unique_ptr<Connection>> connections_;  // kept once closed, for their logs
  std::vector<RawRequest> requests_;
  size_t open_ = 0;
  size_t peak_open_ = 0;
  size_t peak_streams_ = 0;
};

// A trickle step as one-byte sends with waits between them.
Script expand(Script script);

}  // namespace corral::test
