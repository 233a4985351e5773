// Reading and writing the `hooks` setting. The field readers and their messages are the
// scenario parser's (parse_internal.h), so that a hook's errors read like a step's.
#include "config/hooks.h"

#include <curl/curl.h>

#include <cctype>
#include <memory>

#include "config/config.h"
#include "config/fields.h"
#include "config/scenario/parse_internal.h"

namespace corral::config {
namespace {

using nlohmann::json;
// Qualified rather than imported: config.cc, built in the same unity batch, has readers of the
// same names.
namespace sd = scenario::detail;

constexpr std::array<std::string_view, kHookEvents> kEventNames = {
#define CORRAL_HOOK_EVENT_NAME(name, text) text,
    CORRAL_HOOK_EVENTS(CORRAL_HOOK_EVENT_NAME)
#undef CORRAL_HOOK_EVENT_NAME
};

struct UrlDeleter {
  void operator()(CURLU* u) const { curl_url_cleanup(u); }
};
using UrlHandle = std::unique_ptr<CURLU, UrlDeleter>;

// The URL parsed by libcurl, which sends it: what it accepts is what it can send.
UrlHandle parse_url(const std::string& text) {
  UrlHandle u(curl_url());
  if (!u || curl_url_set(u.get(), CURLUPART_URL, text.c_str(), 0) != CURLUE_OK) return nullptr;
  return u;
}

// A part of a parsed URL; "" when it has none.
std::string url_part(CURLU* u, CURLUPart part) {
  char* text = nullptr;
  if (curl_url_get(u, part, &text, 0) != CURLUE_OK || text == nullptr) return "";
  std::string out = text;
  curl_free(text);
  return out;
}

std::string read_url(const json& j, const std::string& path) {
  const std::string text = j.is_string() ? j.get<std::string>() : "";
  UrlHandle u = parse_url(text);
  const std::string scheme = u ? url_part(u.get(), CURLUPART_SCHEME) : "";
  if ((scheme != "http" && scheme != "https") || text.rfind(scheme + "://", 0) != 0 ||
      url_part(u.get(), CURLUPART_HOST).empty()) {
    sd::fail(path, "expected an http:// or https:// URL, got " + sd::shown(j));
  }
  return text;
}

uint64_t read_timeout(const json& j, const std::string& path) {
  const uint64_t ms = sd::read_duration(j, path);
  if (ms < kMinHookTimeoutMs || ms > kMaxHookTimeoutMs) {
    sd::fail(path, "must be between " + format_duration_ms(kMinHookTimeoutMs) + " and " +
                       format_duration_ms(kMaxHookTimeoutMs) + ", got " + sd::shown(j));
  }
  return ms;
}

// RFC 9110 token characters: what a header name may hold.
bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    if (std::isalnum(c) == 0 &&
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

bool same_name(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::vector<std::pair<std::string, std::string>> read_headers(const json& j,
                                                              const std::string& path) {
  if (!j.is_object()) {
    sd::fail(path, "expected an object of header names and values, got " + sd::shown(j));
  }
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : j.items()) {
    const std::string at = sd::field_path(path, name);
    if (!is_token(name)) sd::fail(at, "not a valid header name");
    if (same_name(name, "Content-Type") || same_name(name, "Content-Length")) {
      sd::fail(at, "set by corral (the payload is JSON)");
    }
    // The value itself stays out of every message: it may be a token.
    if (!value.is_string()) sd::fail(at, "expected a string");
    if (value.get_ref<const std::string&>().find_first_of("\r\n") != std::string::npos) {
      sd::fail(at, "a header value cannot hold a line break");
    }
    headers.emplace_back(name, value.get<std::string>());
  }
  return headers;
}

std::vector<std::string> read_argv(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) {
    sd::fail(path, "expected an array of strings, the program first, got " + sd::shown(j));
  }
  std::vector<std::string> argv;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string at = sd::element_path(path, i);
    if (!j[i].is_string()) sd::fail(at, "expected a string, got " + sd::shown(j[i]));
    if (j[i].get_ref<const std::string&>().find('\0') != std::string::npos) {
      sd::fail(at, "cannot hold a NUL byte");
    }
    argv.push_back(j[i].get<std::string>());
  }
  if (argv[0].empty()) sd::fail(sd::element_path(path, 0), "expected the program to run");
  return argv;
}

Hook read_hook(const json& j, const std::string& path) {
  if (!j.is_object()) sd::fail(path, "expected a hook object, got " + sd::shown(j));
  const bool webhook = j.contains("url");
  if (webhook == j.contains("command")) {
    sd::fail(path, webhook ? "give either \"url\" or \"command\", not both"
                           : "expected \"url\" (a webhook) or \"command\" (a program to run)");
  }
  Hook h;
  if (webhook) {
    sd::check_fields(j, path, {"url", "timeout", "retries", "headers"});
    h.url = read_url(j["url"], sd::field_path(path, "url"));
    if (j.contains("retries")) {
      h.retries =
          sd::read_int(j["retries"], sd::field_path(path, "retries"), 0, kMaxWebhookRetries);
    }
    if (j.contains("headers")) {
      h.headers = read_headers(j["headers"], sd::field_path(path, "headers"));
    }
  } else {
    sd::check_fields(j, path, {"command", "timeout"});
    h.command = read_argv(j["command"], sd::field_path(path, "command"));
    h.retries = 0;
    h.timeout_ms = kCommandTimeoutMs;
  }
  if (j.contains("timeout")) {
    h.timeout_ms = read_timeout(j["timeout"], sd::field_path(path, "timeout"));
  }
  return h;
}

Hooks read_hooks_object(const json& j) {
  const std::string kPath = "hooks";
  if (!j.is_object()) {
    sd::fail(kPath, "expected an object of events and their hooks, got " + sd::shown(j));
  }
  Hooks hooks;
  for (const auto& [name, value] : j.items()) {
    std::optional<HookEvent> event = hook_event_from(name);
    if (!event) sd::fail(kPath, unknown_name("event", name, kEventNames));
    const std::string path = sd::field_path(kPath, name);
    std::vector<Hook>& list = hooks.by_event[static_cast<size_t>(*event)];
    if (!value.is_array()) {
      list.push_back(read_hook(value, path));
      continue;
    }
    for (size_t i = 0; i < value.size(); ++i) {
      list.push_back(read_hook(value[i], sd::element_path(path, i)));
    }
  }
  return hooks;
}

json hook_json(const Hook& h, bool show_headers) {
  json j = json::object();
  if (h.is_webhook()) {
    j["url"] = h.url;
    j["retries"] = h.retries;
    if (!h.headers.empty()) {
      json headers = json::object();
      for (const auto& [name, value] : h.headers) headers[name] = show_headers ? value : "(set)";
      j["headers"] = headers;
    }
  } else {
    j["command"] = h.command;
  }
  j["timeout"] = format_duration_ms(h.timeout_ms);
  return j;
}

json hooks_json(const Hooks& hooks, bool show_headers) {
  json j = json::object();
  for (HookEvent e : all_hook_events()) {
    if (hooks.of(e).empty()) continue;
    json list = json::array();
    for (const Hook& h : hooks.of(e)) list.push_back(hook_json(h, show_headers));
    j[std::string(to_string(e))] = list;
  }
  return j;
}

}  // namespace

std::string_view to_string(HookEvent e) { return kEventNames[static_cast<size_t>(e)]; }

std::optional<HookEvent> hook_event_from(std::string_view name) {
  for (HookEvent e : all_hook_events()) {
    if (to_string(e) == name) return e;
  }
  return std::nullopt;
}

const std::array<HookEvent, kHookEvents>& all_hook_events() {
  static constexpr std::array<HookEvent, kHookEvents> kAll = {
#define CORRAL_HOOK_EVENT_VALUE(name, text) HookEvent::name,
      CORRAL_HOOK_EVENTS(CORRAL_HOOK_EVENT_VALUE)
#undef CORRAL_HOOK_EVENT_VALUE
  };
  return kAll;
}

bool Hooks::empty() const {
  for (const auto& list : by_event) {
    if (!list.empty()) return false;
  }
  return true;
}

Result<Hooks> parse_hooks(const json& j) {
  try {
    return read_hooks_object(j);
  } catch (const sd::ParseError& e) {
    return invalid_argument(e.message);
  }
}

json hooks_to_json(const Hooks& hooks) { return hooks_json(hooks, true); }

json hooks_for_display(const Hooks& hooks) { return hooks_json(hooks, false); }

std::string hook_name(const Hook& hook) {
  if (!hook.is_webhook()) return hook.command.empty() ? "" : hook.command[0];
  UrlHandle u = parse_url(hook.url);
  if (!u) return hook.url;
  const std::string port = url_part(u.get(), CURLUPART_PORT);
  return url_part(u.get(), CURLUPART_SCHEME) + "://" + url_part(u.get(), CURLUPART_HOST) +
         (port.empty() ? "" : ":" + port) + url_part(u.get(), CURLUPART_PATH);
}

}  // namespace corral::config
