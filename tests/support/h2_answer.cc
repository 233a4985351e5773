#include "tests/support/h2_answer.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace corral::test {
namespace {

// HTTP/2 has no connection-specific header fields (RFC 9113, 8.2.2).
bool connection_specific(const std::string& name) {
  return name == "connection" || name == "keep-alive" || name == "proxy-connection" ||
         name == "transfer-encoding" || name == "upgrade";
}

// Fields as nghttp2 takes them: lower-cased names, the connection-specific ones dropped,
// after `status` when it is set. The nghttp2_nv entries point into `keep`.
std::vector<nghttp2_nv> h2_fields(const std::vector<std::pair<std::string, std::string>>& fields,
                                  int status,
                                  std::vector<std::pair<std::string, std::string>>& keep) {
  keep.clear();
  if (status != 0) keep.emplace_back(":status", std::to_string(status));
  for (const auto& [name, value] : fields) {
    std::string n = name;
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!connection_specific(n)) keep.emplace_back(std::move(n), value);
  }
  std::vector<nghttp2_nv> nva;
  for (auto& [n, v] : keep) {
    nva.push_back({reinterpret_cast<uint8_t*>(n.data()), reinterpret_cast<uint8_t*>(v.data()),
                   n.size(), v.size(), NGHTTP2_NV_FLAG_NONE});
  }
  return nva;
}

}  // namespace

const http_parser_settings H2Answer::kSettings = [] {
  http_parser_settings s{};
  s.on_message_begin = [](http_parser* p) {
    static_cast<H2Answer*>(p->data)->in_head_ = true;
    return 0;
  };
  s.on_header_field = [](http_parser* p, const char* at, size_t n) {
    auto& a = *static_cast<H2Answer*>(p->data);
    if (a.fields_.empty() || a.in_value_) a.fields_.emplace_back();
    a.in_value_ = false;
    a.fields_.back().first.append(at, n);
    return 0;
  };
  s.on_header_value = [](http_parser* p, const char* at, size_t n) {
    auto& a = *static_cast<H2Answer*>(p->data);
    a.in_value_ = true;
    a.fields_.back().second.append(at, n);
    return 0;
  };
  s.on_headers_complete = [](http_parser* p) { return static_cast<H2Answer*>(p->data)->head_done(); };
  s.on_body = [](http_parser* p, const char* at, size_t n) {
    static_cast<H2Answer*>(p->data)->body(at, n);
    return 0;
  };
  s.on_message_complete = [](http_parser* p) {
    static_cast<H2Answer*>(p->data)->message_done();
    return 0;
  };
  return s;
}();

H2Answer::H2Answer(nghttp2_session* h2, int32_t stream_id, bool head_request)
    : h2_(h2), id_(stream_id), head_request_(head_request) {
  http_parser_init(&parser_, HTTP_RESPONSE);
  parser_.data = this;
}

void H2Answer::feed(std::string_view bytes) {
  while (!bytes.empty() && !bad_) {
    // http-parser caps a head at 80 KiB, a process-wide limit (http_parser_set_max_header_size)
    // that the client under test shares and must keep: the server restarts its count every
    // 16 KiB, so that a test can send a larger head.
    size_t slice = in_head_ ? std::min<size_t>(bytes.size(), 16 * 1024) : bytes.size();
    if (in_head_) parser_.nread = 0;
    size_t n = http_parser_execute(&parser_, &kSettings, bytes.data(), slice);
    http_errno err = HTTP_PARSER_ERRNO(&parser_);
    if (err == HPE_PAUSED) return;  // the final answer is complete: the rest is not read
    if (err != HPE_OK) {
      bad_ = true;
      nghttp2_submit_rst_stream(h2_, NGHTTP2_FLAG_NONE, id_, NGHTTP2_INTERNAL_ERROR);
      return;
    }
    bytes.remove_prefix(n);
  }
}

void H2Answer::end_of_input() {
  if (final_head_ && !body_done_ && !bad_) http_parser_execute(&parser_, &kSettings, "", 0);
}

int H2Answer::head_done() {
  in_head_ = false;
  int status = parser_.status_code;
  Fields keep;
  std::vector<nghttp2_nv> nva = h2_fields(fields_, status, keep);
  fields_.clear();
  in_value_ = false;
  if (status / 100 == 1) {  // informational: the final answer follows
    nghttp2_submit_headers(h2_, NGHTTP2_FLAG_NONE, id_, nullptr, nva.data(), nva.size(), nullptr);
    return 1;  // no body
  }
  final_head_ = true;
  if (head_request_ || status == 204 || status == 304) {  // no body, whatever the head says
    nghttp2_submit_response(h2_, id_, nva.data(), nva.size(), nullptr);
    sent_ = true;
    return 1;
  }
  nghttp2_data_provider provider{};
  provider.source.ptr = this;
  provider.read_callback = &read_body;
  nghttp2_submit_response(h2_, id_, nva.data(), nva.size(), &provider);
  return 0;
}

void H2Answer::body(const char* data, size_t n) {
  if (out_at_ > (1u << 20)) {  // what nghttp2 took is let go now and then
    out_.erase(0, out_at_);
    out_at_ = 0;
  }
  out_.append(data, n);
  resume();
}

void H2Answer::message_done() {
  if (!final_head_) return;  // a 1xx
  body_done_ = true;
  closes_ = !http_should_keep_alive(&parser_);
  http_parser_pause(&parser_, 1);
  resume();
}

void H2Answer::resume() {
  if (!deferred_) return;
  deferred_ = false;
  nghttp2_session_resume_data(h2_, id_);
}

ssize_t H2Answer::read_body(nghttp2_session*, int32_t, uint8_t* buf, size_t length,
                            uint32_t* flags, nghttp2_data_source* source, void*) {
  auto& a = *static_cast<H2Answer*>(source->ptr);
  size_t n = std::min(length, a.out_.size() - a.out_at_);
  std::memcpy(buf, a.out_.data() + a.out_at_, n);
  a.out_at_ += n;
  if (a.out_at_ == a.out_.size()) {
    a.out_.clear();
    a.out_at_ = 0;
  }
  if (n == 0 && !a.body_done_) {
    a.deferred_ = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  if (a.body_done_ && a.out_.empty()) {
    *flags |= NGHTTP2_DATA_FLAG_EOF;
    a.sent_ = true;
    if (!a.fields_.empty()) {  // trailers end the stream instead
      *flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
      Fields keep;
      std::vector<nghttp2_nv> nva = h2_fields(a.fields_, 0, keep);
      nghttp2_submit_trailer(a.h2_, a.id_, nva.data(), nva.size());
    }
  }
  return static_cast<ssize_t>(n);
}

}  // namespace corral::test
