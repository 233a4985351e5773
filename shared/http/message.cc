#include "shared/http/message.h"

#include <http_parser.h>

#include <charconv>

namespace corral::http {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_number(std::string& out, uint64_t n) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof(buf), n);
  out.append(buf, res.ptr);
}

bool has_crlf(std::string_view s) { return s.find_first_of("\r\n") != std::string_view::npos; }

// Headers the server writes itself, so that a handler cannot break the framing.
bool is_reserved(std::string_view name) {
  return iequals(name, "content-length") || iequals(name, "content-type") ||
         iequals(name, "connection") || iequals(name, "transfer-encoding");
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '%' && i + 2 < s.size() && hex_value(s[i + 1]) >= 0 && hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (iequals(key, name)) return value;
  }
  return "";
}

std::optional<std::string> Request::query_param(std::string_view name) const {
  std::string_view rest = query;
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    size_t eq = pair.find('=');
    std::string_view key = pair.substr(0, eq);
    bool plain = key.find_first_of("%+") == std::string_view::npos;
    if (plain ? key == name : percent_decode(key, true) == name) {
      return eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1), true);
    }
  }
  return std::nullopt;
}

Response Response::json(int status, const nlohmann::json& body) {
  Response r;
  r.status = status;
  r.body = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return r;
}

Response Response::error(int status, std::string message) {
  return json(status, nlohmann::json{{"error", std::move(message)}});
}

void append_response(const Response& r, ConnectionHeader connection, bool omit_body,
                     std::string& out) {
  int status = (r.status >= 100 && r.status <= 999) ? r.status : 500;
  const char* reason = http_status_str(static_cast<http_status>(status));
  if (reason[0] == '<') reason = "Unknown";  // http-parser says "<unknown>"
  // 1xx and 204 have no body by definition, so their length is 0; HEAD and 304 announce the
  // length the body would have.
  bool bodiless = status < 200 || status == 204;
  bool send_body = !bodiless && !omit_body && status != 304;

  size_t extra = 0;
  for (const auto& [name, value] : r.headers) extra += name.size() + value.size() + 4;
  out.reserve(out.size() + 128 + r.content_type.size() + extra + (send_body ? r.body.size() : 0));

  out += "HTTP/1.1 ";
  append_number(out, static_cast<uint64_t>(status));
  out += ' ';
  out += reason;
  out += "\r\n";
  // A 1xx has no body and may carry neither length nor type (RFC 9110, 8.6); a 101 names its
  // new protocol in the handler's Connection and Upgrade headers.
  const bool switching = r.upgrade != nullptr && status == 101;
  if (status >= 200) {
    out += "Content-Type: ";
    out += has_crlf(r.content_type) ? "application/octet-stream" : r.content_type;
    out += "\r\nContent-Length: ";
    append_number(out, bodiless ? 0 : r.body.size());
    out += "\r\n";
  }
  if (connection == ConnectionHeader::kKeepAlive) out += "Connection: keep-alive\r\n";
  if (connection == ConnectionHeader::kClose) out += "Connection: close\r\n";
  for (const auto& [name, value] : r.headers) {
    const bool allowed = !is_reserved(name) || (switching && iequals(name, "connection"));
    if (name.empty() || !allowed || has_crlf(name) || has_crlf(value)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
  out += "\r\n";
  if (send_body) out += r.body;
}

}  // namespace corral::http
