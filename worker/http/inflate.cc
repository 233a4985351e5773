#include "worker/http/inflate.h"

#include "config/scenario/response.h"

namespace corral::worker {
namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::unique_ptr<Inflater> Inflater::for_encoding(std::string_view encoding) {
  encoding = trimmed(encoding);
  if (scenario::equals_ignoring_case(encoding, "gzip") || scenario::equals_ignoring_case(encoding, "x-gzip")) {
    return std::unique_ptr<Inflater>(new Inflater(true));
  }
  if (scenario::equals_ignoring_case(encoding, "deflate")) return std::unique_ptr<Inflater>(new Inflater(false));
  return nullptr;
}

Inflater::~Inflater() {
  if (started_) inflateEnd(&z_);
}

// "deflate" is meant to be zlib-wrapped, but some servers send a raw deflate stream: a zlib
// header (a valid check sum over its first two bytes, method 8) tells them apart.
bool Inflater::start(const char* data, size_t len) {
  int bits = 15 + 16;  // gzip only
  if (!gzip_) {
    auto b0 = static_cast<unsigned char>(data[0]);
    auto b1 = len > 1 ? static_cast<unsigned char>(data[1]) : 0;
    bool zlib = (b0 & 0x0f) == 8 && (b0 * 256 + b1) % 31 == 0;
    bits = zlib ? 15 : -15;
  }
  if (inflateInit2(&z_, bits) != Z_OK) {
    error_ = "cannot start zlib";
    return false;
  }
  started_ = true;
  return true;
}

Inflater::Result Inflater::feed(const char* data, size_t len, std::string& out, uint64_t limit) {
  if (len == 0 || ended_) return Result::kOk;  // bytes after the end of the stream are ignored
  if (!started_ && !start(data, len)) return Result::kBad;
  z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data));
  z_.avail_in = static_cast<uInt>(len);
  char buf[16384];
  while (z_.avail_in > 0) {
    z_.next_out = reinterpret_cast<Bytef*>(buf);
    z_.avail_out = sizeof buf;
    int rc = inflate(&z_, Z_NO_FLUSH);
    size_t made = sizeof buf - z_.avail_out;
    if (out.size() + made > limit) return Result::kTooLarge;
    out.append(buf, made);
    if (rc == Z_STREAM_END) {
      ended_ = true;
      return Result::kOk;
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      error_ = std::string("body is not valid ") + (gzip_ ? "gzip" : "deflate") + " data (" +
               (z_.msg != nullptr ? z_.msg : "zlib error " + std::to_string(rc)) + ")";
      return Result::kBad;
    }
    if (rc == Z_BUF_ERROR && made == 0) break;  // needs more input
  }
  return Result::kOk;
}

}  // namespace corral::worker
