#include "shared/http/origin.h"

#include <http_parser.h>

#include <algorithm>
#include <cctype>
#include <string_view>

namespace corral::http {

std::string origin_of(const std::string& url) {
  for (unsigned char c : url) {
    if (c <= 0x20 || c == 0x7f) return "";
  }
  http_parser_url u;
  http_parser_url_init(&u);
  if (http_parser_parse_url(url.data(), url.size(), 0, &u) != 0) return "";
  if (!(u.field_set & (1 << UF_SCHEMA)) || !(u.field_set & (1 << UF_HOST))) return "";
  auto part = [&](int f) {
    std::string s = url.substr(u.field_data[f].off, u.field_data[f].len);
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  std::string scheme = part(UF_SCHEMA);
  std::string host = part(UF_HOST);
  if (host.empty()) return "";
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  uint16_t port = u.port;
  if (!(u.field_set & (1 << UF_PORT))) port = scheme == "https" ? 443 : 80;
  return scheme + "://" + host + ":" + std::to_string(port);
}

}  // namespace corral::http
