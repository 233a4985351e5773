#include "worker/http/h1_wire.h"

#include <string_view>

#include "config/scenario/response.h"
#include "worker/http/h1_connection.h"

namespace corral::worker::h1 {
namespace {

using scenario::equals_ignoring_case;

enum Added : unsigned { kHost = 1, kAccept = 2, kEncoding = 4, kLength = 8 };

unsigned added_flag(std::string_view name) {
  if (equals_ignoring_case(name, "Host")) return kHost;
  if (equals_ignoring_case(name, "Accept")) return kAccept;
  if (equals_ignoring_case(name, "Accept-Encoding")) return kEncoding;
  if (equals_ignoring_case(name, "Content-Length")) return kLength;
  return 0;
}

bool has_body(const HttpRequest& req) {
  return !req.body.empty() || req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
}

}  // namespace

void write_request_head(const Exchange& ex, const std::string& host_header, std::string& out) {
  const HttpRequest& req = ex.req;
  out += req.method;
  out += ' ';
  out += ex.url.target;
  out += " HTTP/1.1\r\n";
  unsigned set = 0;
  for (const std::string& line : req.headers) {
    size_t colon = line.find(':');
    std::string_view name(line.data(), colon == std::string::npos ? line.size() : colon);
    set |= added_flag(name);
    bool removes = colon != std::string::npos &&
                   line.find_first_not_of(" \t", colon + 1) == std::string::npos;
    if (removes || colon == std::string::npos) continue;
    out += line;
    out += "\r\n";
  }
  if (!(set & kHost)) {
    out += "Host: ";
    out += host_header;
    out += "\r\n";
  }
  if (!(set & kAccept)) out += "Accept: */*\r\n";
  if (!(set & kEncoding)) out += "Accept-Encoding: gzip, deflate\r\n";
  if (!(set & kLength) && has_body(req)) {
    out += "Content-Length: ";
    out += std::to_string(req.body.size());
    out += "\r\n";
  }
  out += "\r\n";
}

Status check_request(const Exchange& ex) {
  const std::string& m = ex.req.method;
  static constexpr char kSeparators[] = "()<>@,;:\\\"/[]?={} \t\r\n";  // sizeof: with NUL
  bool token = !m.empty() &&
               m.find_first_of(std::string_view(kSeparators, sizeof kSeparators)) ==
                   std::string::npos;
  if (!token) return invalid_argument("request method is not a token: " + m);
  for (const std::string& line : ex.req.headers) {
    if (line.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return invalid_argument("request header holds a line break or NUL byte: " +
                              line.substr(0, line.find_first_of(":")));
    }
  }
  return Status::ok();
}

}  // namespace corral::worker::h1
