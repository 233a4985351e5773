// The WebSocket steps: "ws", "ws_send", "ws_receive", "ws_close". docs/scenarios.md,
// "WebSocket".
#include <openssl/evp.h>

#include "config/scenario/parse_internal.h"
#include "steps/ws/ws.h"

namespace corral::steps::ws {
namespace {

using namespace corral::scenario;
using namespace corral::scenario::detail;

std::string read_socket(const json& j, const std::string& path) {
  if (!j.contains("socket")) return "ws";
  return check_variable_name(read_string(j["socket"], field_path(path, "socket")),
                             field_path(path, "socket"));
}

std::vector<std::string> read_protocols(const json& j, const std::string& path) {
  if (!j.is_array()) fail(path, "expected an array of subprotocol names");
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(read_string(j[i], element_path(path, i)));
  return out;
}

void parse_open(const json& j, const std::string& path, Step& s, Scope& scope) {
  const std::string at = field_path(path, "ws");
  const json& spec = j["ws"];
  check_fields(spec, at,
               {"url", "socket", "headers", "protocols", "max_message", "backlog", "ping_every",
                "deflate", "tls"});
  auto open = std::make_shared<Open>();
  open->socket = read_socket(spec, at);
  open->url = read_template(required(spec, at, "url", "a URL like \"ws://host/path\""),
                            field_path(at, "url"), scope);
  const std::string& url = open->url.source();
  if (!starts_with_ignoring_case(url, "ws://") && !starts_with_ignoring_case(url, "wss://") &&
      !url.starts_with("{{")) {
    fail(field_path(at, "url"), "expected a ws:// or wss:// URL, got " + shown(url));
  }
  if (spec.contains("headers")) {
    open->headers = read_headers(spec["headers"], field_path(at, "headers"), scope);
  }
  if (spec.contains("protocols")) {
    open->protocols = read_protocols(spec["protocols"], field_path(at, "protocols"));
  }
  if (spec.contains("max_message")) {
    open->max_message =
        read_size(spec["max_message"], field_path(at, "max_message"), kMaxResponseLimit);
  }
  if (spec.contains("backlog")) {
    open->backlog =
        static_cast<size_t>(read_int(spec["backlog"], field_path(at, "backlog"), 0, 100000));
  }
  if (spec.contains("ping_every")) {
    open->ping_every_ms = read_positive_duration(spec["ping_every"], field_path(at, "ping_every"));
  }
  if (spec.contains("deflate"))
    open->deflate = read_bool(spec["deflate"], field_path(at, "deflate"));
  // Over the scenario's and the daemon's, as a request's are (Engine::resolve_http).
  if (spec.contains("tls")) s.request.tls = read_tls(spec["tls"], field_path(at, "tls"), scope);
  s.limit_ms = j.contains("timeout")
                   ? read_positive_duration(j["timeout"], field_path(path, "timeout"))
                   : kDefaultOpenTimeoutMs;
  s.name = "ws " + open->socket + " " + url;
  s.spec = std::move(open);
}

// The socket step `s` uses: opened by an earlier "ws" step of the same list (a branch of a
// parallel step runs apart from its instance, with sockets of its own).
void read_on_socket(const json& spec, const std::string& at, Step& s, Scope& scope, OnSocket& out) {
  out.socket = read_socket(spec, at);
  for (size_t i = s.index; i-- > 0;) {
    const Step& earlier = (*scope.steps)[i];
    if (earlier.kind == nullptr || earlier.kind->name != "ws" || earlier.branch != scope.branch) {
      continue;
    }
    if (earlier.spec_as<Open>().socket == out.socket) {
      out.open_step = earlier.index;
      s.resume_at = std::min(s.resume_at.value_or(s.index), earlier.index);
      // The socket cannot move: an instance that resumes between the open and this step
      // resumes at the open.
      for (size_t k = earlier.index + 1; k < s.index; ++k) {
        Step& between = (*scope.steps)[k];
        between.resume_at = std::min(between.resume_at.value_or(k), earlier.index);
      }
      return;
    }
  }
  fail(at, "no earlier \"ws\" step opens a socket called \"" + out.socket + "\"");
}

std::string decode_base64(const std::string& text, const std::string& path) {
  std::string out(text.size() / 4 * 3 + 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()),
                          static_cast<int>(text.size()));
  if (n < 0 || text.size() % 4 != 0) fail(path, "expected base64 text");
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && pad < 2; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

void parse_send(const json& j, const std::string& path, Step& s, Scope& scope) {
  const std::string at = field_path(path, "ws_send");
  const json& spec = j["ws_send"];
  check_fields(spec, at, {"socket", "text", "json", "binary_base64"});
  auto send = std::make_shared<Send>();
  read_on_socket(spec, at, s, scope, *send);
  int bodies = 0;
  if (spec.contains("text")) {
    send->text = read_template(spec["text"], field_path(at, "text"), scope);
    ++bodies;
  }
  if (spec.contains("json")) {
    send->json = read_json_body(spec["json"], field_path(at, "json"), scope);
    ++bodies;
  }
  if (spec.contains("binary_base64")) {
    const std::string b = field_path(at, "binary_base64");
    send->binary = decode_base64(read_string(spec["binary_base64"], b), b);
    ++bodies;
  }
  if (bodies != 1) fail(at, "needs exactly one of \"text\", \"json\" and \"binary_base64\"");
  s.name = "ws_send " + send->socket;
  s.spec = std::move(send);
}

void parse_receive(const json& j, const std::string& path, Step& s, Scope& scope) {
  const std::string at = field_path(path, "ws_receive");
  const json& spec = j["ws_receive"];
  check_fields(spec, at, {"socket", "until"});
  auto receive = std::make_shared<Receive>();
  read_on_socket(spec, at, s, scope, *receive);
  if (spec.contains("until")) {
    receive->until = parse_conditions(spec["until"], field_path(at, "until"), false);
  }
  s.reads_json = any_json(receive->until);
  s.limit_ms = j.contains("timeout")
                   ? read_positive_duration(j["timeout"], field_path(path, "timeout"))
                   : kDefaultReceiveTimeoutMs;
  s.name = "ws_receive " + receive->socket;
  s.spec = std::move(receive);
}

void parse_close(const json& j, const std::string& path, Step& s, Scope& scope) {
  const std::string at = field_path(path, "ws_close");
  const json& spec = j["ws_close"];
  check_fields(spec, at, {"socket", "code", "reason"});
  auto close = std::make_shared<Close>();
  read_on_socket(spec, at, s, scope, *close);
  if (spec.contains("code")) {
    // 1000, or one an application may send (RFC 6455 7.4.2: 3000-4999).
    int code = read_int(spec["code"], field_path(at, "code"), 1000, 4999);
    if (code != 1000 && code < 3000) {
      fail(field_path(at, "code"), "expected 1000 or an application's code, 3000 to 4999");
    }
    close->code = static_cast<uint16_t>(code);
  }
  if (spec.contains("reason")) {
    close->reason = read_string(spec["reason"], field_path(at, "reason"));
    if (close->reason.size() > 123) fail(field_path(at, "reason"), "at most 123 bytes");
  }
  s.limit_ms = j.contains("timeout")
                   ? read_positive_duration(j["timeout"], field_path(path, "timeout"))
                   : kDefaultCloseTimeoutMs;
  s.name = "ws_close " + close->socket;
  s.spec = std::move(close);
}

}  // namespace

CORRAL_REGISTER_STEP_KIND({
    .name = "ws",
    .mark = "ws",
    .fields = {"ws", "expect", "abort_if", "capture", "retry", "timeout"},
    .hints = {},
    .subjects = {"status", "header"},
    .parse = parse_open,
})

CORRAL_REGISTER_STEP_KIND({
    .name = "ws_send",
    .mark = "ws_send",
    .fields = {"ws_send"},
    .hints = {},
    .subjects = {},
    .parse = parse_send,
})

CORRAL_REGISTER_STEP_KIND({
    .name = "ws_receive",
    .mark = "ws_receive",
    .fields = {"ws_receive", "abort_if", "capture", "timeout"},
    .hints = {{"expect",
               "a ws_receive waits for a message that matches \"until\"; "
               "\"abort_if\" fails the step on a message"}},
    .subjects = {"json", "body_contains"},
    .parse = parse_receive,
})

CORRAL_REGISTER_STEP_KIND({
    .name = "ws_close",
    .mark = "ws_close",
    .fields = {"ws_close", "timeout"},
    .hints = {},
    .subjects = {},
    .parse = parse_close,
})

}  // namespace corral::steps::ws
