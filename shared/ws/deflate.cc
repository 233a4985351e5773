#include "shared/ws/deflate.h"

#include <zlib.h>

#include <cstring>
#include <stdexcept>

namespace corral::ws {
namespace {

constexpr unsigned char kTail[4] = {0x00, 0x00, 0xff, 0xff};

// The thread's zlib streams, made on first use and reset for each message.
struct Streams {
  z_stream def{};
  z_stream inf{};
  bool def_ok = false;
  bool inf_ok = false;

  ~Streams() {
    if (def_ok) deflateEnd(&def);
    if (inf_ok) inflateEnd(&inf);
  }

  z_stream& deflater() {
    if (!def_ok) {
      // A raw stream (negative window bits) with a 32 KB window: what a peer that agreed to
      // permessage-deflate without client_max_window_bits can read.
      if (deflateInit2(&def, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        throw std::bad_alloc();
      }
      def_ok = true;
    } else {
      deflateReset(&def);
    }
    return def;
  }

  z_stream& inflater() {
    if (!inf_ok) {
      if (inflateInit2(&inf, -15) != Z_OK) throw std::bad_alloc();
      inf_ok = true;
    } else {
      inflateReset(&inf);
    }
    return inf;
  }
};

Streams& streams() {
  thread_local Streams s;
  return s;
}

}  // namespace

void deflate_message(std::string_view data, std::string& out) {
  z_stream& z = streams().deflater();
  const size_t start = out.size();
  // A sync flush of n bytes never takes more than the bound plus the flush's own bytes.
  out.resize(start + deflateBound(&z, data.size()) + 16);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data() + start);
  z.avail_out = static_cast<uInt>(out.size() - start);
  deflate(&z, Z_SYNC_FLUSH);
  size_t made = out.size() - start - z.avail_out;
  out.resize(start + made);
  if (made >= 4 && std::memcmp(out.data() + out.size() - 4, kTail, 4) == 0)
    out.resize(out.size() - 4);
}

InflateResult inflate_message(std::string_view data, uint64_t cap, std::string& out,
                              std::string& why) {
  z_stream& z = streams().inflater();
  out.clear();
  char buf[16384];
  // The message's bytes, then the empty block its sender removed.
  for (std::string_view piece : {data, std::string_view(reinterpret_cast<const char*>(kTail), 4)}) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(piece.data()));
    z.avail_in = static_cast<uInt>(piece.size());
    while (true) {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      int rc = inflate(&z, Z_SYNC_FLUSH);
      size_t made = sizeof buf - z.avail_out;
      if (out.size() + made > cap) return InflateResult::kTooBig;
      out.append(buf, made);
      if (rc == Z_STREAM_END) return InflateResult::kOk;  // a final block: what follows is ignored
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        why = z.msg != nullptr ? z.msg : "zlib error " + std::to_string(rc);
        return InflateResult::kBadData;
      }
      if (z.avail_in == 0 && z.avail_out != 0) break;  // this piece is used up
    }
  }
  return InflateResult::kOk;
}

}  // namespace corral::ws
