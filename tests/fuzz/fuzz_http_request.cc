// Fuzz target: the control API's request parser (shared/http/request_parser.h), the code that
// reads what any client of the daemon's socket or TCP port sends.
//
// Input layout:
//   byte 0       split: the bytes after it are fed in pieces of (byte0 % 32) + 1 bytes, or
//                whole when byte0 >= 224
//   the rest     the byte stream of one connection
//
// Checks that any stream ends in "need more" or a refusal without crashing or looping, that
// a refusal carries one of the statuses the server answers, that every feed consumes bytes or
// asks for more, and that feeding in pieces gives the same requests, and the refusal at the
// same point, as feeding whole.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "shared/http/request_parser.h"
#include "tests/fuzz/check.h"

namespace {

using corral::http::ParseLimits;
using corral::http::RequestParser;

// What one connection's bytes gave: each request as "METHOD path?query #headers body-size",
// then the refusal status, if any.
std::vector<std::string> parse(std::string_view stream, size_t piece) {
  ParseLimits limits;
  limits.max_header_bytes = 4096;  // small, so the fuzzer reaches the limits
  limits.max_header_count = 16;
  limits.max_body_bytes = 8192;
  RequestParser parser(limits);
  std::vector<std::string> seen;
  while (true) {
    std::string_view in = stream.substr(0, piece);
    bool last = in.size() == stream.size();
    while (true) {
      RequestParser::Step step = parser.feed(in);
      FUZZ_CHECK(step.consumed <= in.size());
      in.remove_prefix(step.consumed);
      stream.remove_prefix(step.consumed);
      if (step.event == RequestParser::Event::kNeedMore) {
        FUZZ_CHECK(in.empty());
        break;
      }
      if (step.event == RequestParser::Event::kRefused) {
        int status = parser.refusal().status;
        FUZZ_CHECK(status == 400 || status == 413 || status == 431 || status == 505);
        FUZZ_CHECK(!parser.refusal().message.empty());
        // Which refusal can depend on where the bytes were split when a request is wrong in two
        // ways (a bad version and a bad header: http-parser reports a field only at the end
        // of a piece): that it is refused, after the same requests, cannot.
        seen.push_back("refused");
        return seen;
      }
      if (step.event == RequestParser::Event::kRequest) {
        corral::http::Request r = std::move(parser.request());
        FUZZ_CHECK(!r.method.empty());
        FUZZ_CHECK(r.body.size() <= limits.max_body_bytes);
        FUZZ_CHECK(r.headers.size() <= limits.max_header_count);
        seen.push_back(r.method + " " + r.path + "?" + r.query + " #" +
                       std::to_string(r.headers.size()) + " " + std::to_string(r.body.size()));
      }
    }
    if (last) return seen;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
  size_t piece = data[0] >= 224 ? stream.size() + 1 : (data[0] % 32) + 1;
  std::vector<std::string> whole = parse(stream, stream.size() + 1);
  std::vector<std::string> pieces = parse(stream, piece);
  FUZZ_CHECK(whole == pieces);
  return 0;
}
