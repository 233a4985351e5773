// What a request asks of TLS and of the HTTP version: the "tls" and "http_version" of a
// request, of its scenario, or the daemon's defaults (docs/scenarios.md, "TLS and HTTP
// versions"). A field left unset takes the value of the level below: request, then scenario,
// then the daemon's config, then the built-in default written next to each field.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "shared/status.h"

namespace corral::http {

struct TlsOptions {
  // A PEM file of the CAs to trust instead of the system's store (curl's --cacert).
  std::optional<std::string> ca_file;
  // A PEM certificate (chain) and its private key, presented when the server asks for one
  // (mutual TLS). The key file must not be readable by its group or others.
  std::optional<std::string> client_cert;
  std::optional<std::string> client_key;
  // The name sent as SNI and checked against the certificate, instead of the URL's host.
  std::optional<std::string> server_name;
  // false: any certificate is accepted (a throwaway test host); default true.
  std::optional<bool> verify;
  // The lowest TLS version offered: "1.2" (default) or "1.3".
  std::optional<std::string> min_version;

  // These options with every unset field taken from `base`.
  TlsOptions over(const TlsOptions& base) const;
  bool empty() const;
  bool operator==(const TlsOptions&) const = default;
  // The same text for equal options: what a client keys its TLS contexts by.
  std::string key() const;
};

// Reads a "tls" object; `where` names it in errors ("steps[2].request.tls"). Unknown fields,
// wrong types and an empty path are refused with the field named.
Result<TlsOptions> tls_options_from_json(const nlohmann::json& j, const std::string& where);
nlohmann::json to_json(const TlsOptions& o);
// Checks that the files named can be read, and that a client key is not readable by its group
// or others (as secrets files): what a worker would refuse, said when the run is submitted.
Status check_tls_files(const TlsOptions& o, const std::string& where);

// Which HTTP version a request is sent with. kAuto: HTTP/2 when the server offers it by ALPN
// over TLS, else HTTP/1.1; kHttp2 over http:// is HTTP/2 by prior knowledge (h2c).
enum class HttpVersion : unsigned char { kAuto, kHttp11, kHttp2 };
// "auto", "1.1", "2"; nullopt for anything else.
std::optional<HttpVersion> http_version_from(std::string_view s);
const char* to_string(HttpVersion v);

}  // namespace corral::http
