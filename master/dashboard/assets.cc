#include "master/dashboard/assets.h"

#include <string>

namespace corral::master::dashboard {
namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// 'self' only: the dashboard names no other origin, and a value from the API that reached the
// DOM as markup still could not run a script or send data anywhere.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

}  // namespace

const EmbeddedFile* find_file(std::string_view name) {
  for (const EmbeddedFile& f : files()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string_view content_type_for(std::string_view name) {
  if (ends_with(name, ".html")) return "text/html; charset=utf-8";
  if (ends_with(name, ".js")) return "text/javascript; charset=utf-8";
  if (ends_with(name, ".css")) return "text/css; charset=utf-8";
  if (ends_with(name, ".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

http::Response file_response(const EmbeddedFile& file, std::string_view if_none_match) {
  const std::string etag = "\"" + std::string(file.sha256.substr(0, 32)) + "\"";
  http::Response r;
  const bool unchanged = !if_none_match.empty() && (if_none_match == "*" ||
                                                    if_none_match.find(etag) != std::string::npos);
  r.status = unchanged ? 304 : 200;
  r.content_type = std::string(content_type_for(file.name));
  // A 304 has no body, but its Content-Length, when sent, must be the 200's.
  r.body = std::string(file.bytes);
  r.headers = {{"ETag", etag},
               {"Cache-Control", "no-cache"},
               {"X-Content-Type-Options", "nosniff"},
               {"Content-Security-Policy", kContentSecurityPolicy},
               {"Referrer-Policy", "no-referrer"}};
  return r;
}

}  // namespace corral::master::dashboard
