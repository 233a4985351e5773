// Fuzz target: the lean client's HTTP/2 (worker/http/h2_session.h) reading whatever a server
// sends back, over h2c on a real loopback connection on the client's own loop: nghttp2's
// session and corral's callbacks behind it (headers, bodies, decoding, caps, the memory budget,
// RST_STREAM, GOAWAY, flow control).
//
// Input layout: byte 0 picks the size of the pieces the server writes (1 to 256 bytes), byte 1
// the request and limits (bit 0 HEAD, bit 1 a 64-byte max_response, bit 2 a 32-byte memory
// budget, bit 3 a well-formed HEADERS frame for stream 1 first, its :status from byte 2 and a
// gzip content-encoding when bit 4 is set). The rest is frames: each is a type, flags, a stream
// (0, 1, 3, or 2^31-1), a length and that many bytes of payload, after the server's SETTINGS;
// then the server closes.
// Checks: the callback runs exactly once; a response has no error and a body within
// max_response (none for HEAD); a failure has an error; the client ends with nothing in flight
// and every byte of the memory budget given back.
#include <nghttp2/nghttp2.h>
#include <uv.h>

#include <csignal>
#include <cstdint>
#include <string>

#include "tests/fuzz/check.h"
#include "tests/fuzz/loopback_server.h"

namespace {

void frame(std::string& out, uint8_t type, uint8_t flags, uint32_t stream,
           std::string_view payload) {
  const size_t n = payload.size();
  const char head[9] = {static_cast<char>(n >> 16),
                        static_cast<char>(n >> 8),
                        static_cast<char>(n),
                        static_cast<char>(type),
                        static_cast<char>(flags),
                        static_cast<char>(stream >> 24),
                        static_cast<char>(stream >> 16),
                        static_cast<char>(stream >> 8),
                        static_cast<char>(stream)};
  out.append(head, 9);
  out.append(payload);
}

// A HEADERS frame for stream 1, its block made by nghttp2's own HPACK encoder.
void headers(std::string& out, int status, bool gzip) {
  nghttp2_hd_deflater* d = nullptr;
  FUZZ_CHECK(nghttp2_hd_deflate_new(&d, 4096) == 0);
  std::string code = std::to_string(status);
  std::string names[] = {":status", "content-encoding"};
  std::string values[] = {code, "gzip"};
  nghttp2_nv nva[2];
  for (int i = 0; i < 2; ++i) {
    nva[i] = {reinterpret_cast<uint8_t*>(names[i].data()),
              reinterpret_cast<uint8_t*>(values[i].data()), names[i].size(), values[i].size(),
              NGHTTP2_NV_FLAG_NONE};
  }
  const size_t count = gzip ? 2 : 1;
  std::string block(nghttp2_hd_deflate_bound(d, nva, count), '\0');
  ssize_t n =
      nghttp2_hd_deflate_hd(d, reinterpret_cast<uint8_t*>(block.data()), block.size(), nva, count);
  FUZZ_CHECK(n > 0);
  block.resize(static_cast<size_t>(n));
  nghttp2_hd_deflate_del(d);
  frame(out, NGHTTP2_HEADERS, NGHTTP2_FLAG_END_HEADERS, 1, block);
}

std::string answer_of(const uint8_t* data, size_t size) {
  std::string out;
  frame(out, NGHTTP2_SETTINGS, 0, 0, "");  // the server's connection preface
  if (data[1] & 8) headers(out, 100 + data[2] % 500, data[1] & 16);
  static constexpr uint32_t kStreams[] = {0, 1, 3, 0x7fffffff};
  for (size_t at = 3; at + 4 <= size;) {
    uint8_t type = data[at], flags = data[at + 1];
    uint32_t stream = kStreams[data[at + 2] % 4];
    size_t len = std::min<size_t>(data[at + 3], size - at - 4);
    frame(out, type % 12, flags, stream,
          std::string_view(reinterpret_cast<const char*>(data) + at + 4, len));
    at += 4 + len;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::signal(SIGPIPE, SIG_IGN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  corral::fuzz::LoopbackFixture& f = corral::fuzz::loopback();
  static std::string answer;
  answer = answer_of(data, size);
  f.server->piece = 1 + data[0];
  f.server->answer = answer;
  const uint8_t mode = data[1];
  corral::fuzz::fetch_and_check(f, mode & 1, mode, corral::http::HttpVersion::kHttp2);
  return 0;
}
