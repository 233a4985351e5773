// Decodes a response body sent with Content-Encoding gzip or deflate, piece by piece (zlib).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace corral::worker {

class Inflater {
 public:
  // A decoder for a Content-Encoding value; nullptr for identity and encodings it does not
  // decode (those bodies are kept as they came).
  static std::unique_ptr<Inflater> for_encoding(std::string_view encoding);
  ~Inflater();
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  enum class Result { kOk, kTooLarge, kBad };
  // Appends what `data` decodes to onto `out`, stopping with kTooLarge once `out` would pass
  // `limit` bytes. kBad when the bytes are not what the encoding says (see error()).
  Result feed(const char* data, size_t len, std::string& out, uint64_t limit);
  const std::string& error() const { return error_; }

 private:
  explicit Inflater(bool gzip) : gzip_(gzip) {}
  bool start(const char* data, size_t len);

  bool gzip_;
  bool started_ = false;
  bool ended_ = false;
  z_stream z_{};
  std::string error_;
};

}  // namespace corral::worker
