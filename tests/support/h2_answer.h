// One HTTP/2 stream's answer in the scripted raw server (h2_script_server.h), made from the
// HTTP/1.1 response bytes of its script as they play: http-parser (response mode) reads them,
// and what it finds is submitted to the nghttp2 server session:
// - a head: HEADERS (names lower-cased, the connection-specific fields dropped); a 1xx head
//   an informational HEADERS, the final answer following;
// - the body, de-chunked, to a deferred data provider that hands nghttp2 the bytes as they come;
//   END_STREAM once the message is complete, or the trailers when it had some;
// - bytes that are not an HTTP/1.1 answer: RST_STREAM (INTERNAL_ERROR).
// Loop thread only.
#pragma once

#include <http_parser.h>
#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace corral::test {

class H2Answer {
 public:
  // `head_request`: the answer to HEAD has no body, whatever its head says.
  H2Answer(nghttp2_session* h2, int32_t stream_id, bool head_request);
  H2Answer(const H2Answer&) = delete;
  H2Answer& operator=(const H2Answer&) = delete;

  // More of the script's bytes.
  void feed(std::string_view bytes);
  // The script closed the connection: a body delimited by the close ends here.
  void end_of_input();
  // Bytes of the answer nghttp2 has not taken yet.
  bool pending() const { return out_.size() > out_at_ || (body_done_ && !sent_); }
  // The answer is one after which an HTTP/1.1 server closes the connection ("Connection:
  // close", HTTP/1.0).
  bool closes() const { return closes_; }

 private:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  static const http_parser_settings kSettings;
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                           uint32_t* flags, nghttp2_data_source* source, void*);
  int head_done();
  void body(const char* data, size_t n);
  void message_done();
  void resume();

  nghttp2_session* h2_;
  int32_t id_;
  bool head_request_;
  http_parser parser_;
  Fields fields_;  // of the head being read; after the final head, the trailers
  bool in_value_ = false;
  bool in_head_ = true;
  bool final_head_ = false;  // the final answer's HEADERS are submitted
  std::string out_;          // body bytes nghttp2 has not taken yet, from out_at_
  size_t out_at_ = 0;
  bool body_done_ = false;  // the final message is complete
  bool deferred_ = false;   // the data provider waits for bytes
  bool sent_ = false;       // END_STREAM (or the trailers) handed to nghttp2
  bool bad_ = false;        // the bytes are not an HTTP/1.1 answer
  bool closes_ = false;
};

}  // namespace corral::test
