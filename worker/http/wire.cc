#include "worker/http/wire.h"

#include <algorithm>
#include <cctype>

#include <string_view>

#include "config/scenario/response.h"

namespace corral::worker::lean {
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

// "Name: value" split, the value without its surrounding blanks; false for a line with no colon.
bool split_header(const std::string& line, std::string_view& name, std::string_view& value) {
  size_t colon = line.find(':');
  if (colon == std::string::npos) return false;
  name = std::string_view(line.data(), colon);
  value = std::string_view(line).substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  return true;
}

bool connection_specific(std::string_view name, std::string_view value) {
  for (std::string_view n : {"Connection", "Keep-Alive", "Proxy-Connection", "Transfer-Encoding",
                             "Upgrade"}) {
    if (equals_ignoring_case(name, n)) return true;
  }
  return equals_ignoring_case(name, "TE") && !equals_ignoring_case(value, "trailers");
}

std::string lowercase(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
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

void h2_request_headers(const Exchange& ex, const std::string& authority, HeaderList& out) {
  const HttpRequest& req = ex.req;
  out.clear();
  out.emplace_back(":method", req.method);
  out.emplace_back(":scheme", ex.url.tls ? "https" : "http");
  out.emplace_back(":authority", authority);
  out.emplace_back(":path", ex.url.target);
  unsigned set = 0;
  for (const std::string& line : req.headers) {
    std::string_view name, value;
    if (!split_header(line, name, value)) continue;
    set |= added_flag(name);
    if (value.empty() || connection_specific(name, value)) continue;  // "Name:" removes it
    if (added_flag(name) == kHost) {
      out[2].second = std::string(value);
      continue;
    }
    out.emplace_back(lowercase(name), std::string(value));
  }
  if (!(set & kAccept)) out.emplace_back("accept", "*/*");
  if (!(set & kEncoding)) out.emplace_back("accept-encoding", "gzip, deflate");
  if (!(set & kLength) && has_body(req)) {
    out.emplace_back("content-length", std::to_string(req.body.size()));
  }
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

}  // namespace corral::worker::lean
