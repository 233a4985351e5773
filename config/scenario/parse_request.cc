// Parsing a step's "request".
#include <array>
#include <cctype>

#include "config/scenario/parse_internal.h"

namespace corral::scenario::detail {

bool starts_with_ignoring_case(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() &&
         equals_ignoring_case(text.substr(0, prefix.size()), prefix);
}

namespace {

constexpr std::array<std::string_view, 7> kMethods = {"GET",    "POST", "PUT",    "PATCH",
                                                      "DELETE", "HEAD", "OPTIONS"};

std::string read_method(const json& j, const std::string& path) {
  std::string upper;
  if (j.is_string()) {
    for (char c : j.get_ref<const std::string&>()) {
      upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
  }
  std::string list;
  for (std::string_view m : kMethods) {
    if (m == upper) return upper;
    list += (list.empty() ? "" : ", ") + std::string(m);
  }
  fail(path, "expected one of " + list + ", got " + shown(j));
}

Template read_url(const json& j, const std::string& path, const Scope& scope) {
  Template url = read_template(j, path, scope);
  const std::string& text = url.source();
  bool ok = starts_with_ignoring_case(text, "http://") ||
            starts_with_ignoring_case(text, "https://") || text.starts_with("{{");
  if (!ok &&
      (starts_with_ignoring_case(text, "ws://") || starts_with_ignoring_case(text, "wss://"))) {
    fail(path, "expected an http:// or https:// URL, got " + shown(text) +
                   " (a WebSocket is opened by a \"ws\" step: docs/scenarios.md, \"WebSocket\")");
  }
  if (!ok) fail(path, "expected an http:// or https:// URL, got " + shown(text));
  return url;
}

// RFC 9110 token characters.
bool is_header_name(std::string_view name) {
  static constexpr std::string_view kSymbols = "!#$%&'*+-.^_`|~";
  if (name.empty()) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        kSymbols.find(c) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::vector<std::pair<std::string, Template>> read_headers(const json& j, const std::string& path,
                                                           const Scope& scope) {
  if (!j.is_object()) fail(path, "expected an object of header names and values");
  std::vector<std::pair<std::string, Template>> headers;
  for (const auto& [name, value] : j.items()) {
    std::string at = field_path(path, name);
    if (!is_header_name(name)) fail(at, "invalid header name");
    Template t = read_template(value, at, scope);
    if (t.source().find_first_of("\r\n") != std::string::npos) {
      fail(at, "a header value must not contain line breaks");
    }
    headers.emplace_back(name, std::move(t));
  }
  return headers;
}

JsonTemplate read_json_body(const json& j, const std::string& path, const Scope& scope) {
  Result<JsonTemplate> body = JsonTemplate::compile(j);
  if (!body) fail("", path + body.status().message());
  for (const JsonTemplate::Slot& slot : body->slots()) {
    check_scope(slot.value, path + slot.path, scope);
  }
  return std::move(*body);
}

namespace {

void add_json_content_type(RequestSpec& spec) {
  for (const auto& [name, value] : spec.headers) {
    if (equals_ignoring_case(name, "Content-Type")) return;
  }
  spec.headers.emplace_back("Content-Type", *Template::compile("application/json"));
}

}  // namespace

http::TlsOptions read_tls(const json& j, const std::string& path, const Scope& scope) {
  auto tls = http::tls_options_from_json(j, path);
  if (!tls) throw ParseError{tls.status().message()};
  if (scope.options != nullptr && scope.options->check_files) {
    if (Status s = http::check_tls_files(*tls, path); !s) throw ParseError{s.message()};
  }
  return std::move(*tls);
}

http::HttpVersion read_http_version(const json& j, const std::string& path) {
  std::optional<http::HttpVersion> v;
  if (j.is_string()) v = http::http_version_from(j.get_ref<const std::string&>());
  if (!v) fail(path, "expected \"auto\", \"1.1\" or \"2\", got " + shown(j));
  return *v;
}

RequestSpec parse_request(const json& j, const std::string& path, const Scope& scope) {
  check_fields(j, path,
               {"method", "url", "headers", "json", "body", "timeout", "follow_redirects",
                "max_redirects", "max_response", "tls", "http_version"});
  RequestSpec spec;
  if (j.contains("method")) spec.method = read_method(j["method"], field_path(path, "method"));
  const json& url = required(j, path, "url", "a URL like \"http://host/path\"");
  spec.url = read_url(url, field_path(path, "url"), scope);
  if (j.contains("headers")) {
    spec.headers = read_headers(j["headers"], field_path(path, "headers"), scope);
  }
  if (j.contains("json") && j.contains("body")) {
    fail(path, "a request takes \"json\" or \"body\", not both");
  }
  if (j.contains("json")) {
    spec.json = read_json_body(j["json"], field_path(path, "json"), scope);
    add_json_content_type(spec);
  }
  if (j.contains("body")) {
    std::string at = field_path(path, "body");
    if (!j["body"].is_string()) fail(at, "expected a string (use \"json\" for a JSON body)");
    spec.body = read_template(j["body"], at, scope);
  }
  if (j.contains("timeout")) {
    spec.timeout_ms = read_positive_duration(j["timeout"], field_path(path, "timeout"));
  }
  if (j.contains("follow_redirects")) {
    spec.follow_redirects = read_bool(j["follow_redirects"], field_path(path, "follow_redirects"));
  }
  if (j.contains("max_redirects")) {
    spec.max_redirects = read_int(j["max_redirects"], field_path(path, "max_redirects"), 0, 50);
  }
  if (j.contains("max_response")) {
    spec.max_response_bytes =
        read_size(j["max_response"], field_path(path, "max_response"), kMaxResponseLimit);
  }
  if (j.contains("tls")) spec.tls = read_tls(j["tls"], field_path(path, "tls"), scope);
  if (j.contains("http_version")) {
    spec.http_version = read_http_version(j["http_version"], field_path(path, "http_version"));
  }
  return spec;
}

}  // namespace corral::scenario::detail
