// The "target" part of a load section: the server corral starts for the test.
//   {"cmd": ["node", "--max-old-space-size=128", "server.js"], "cwd": "examples",
//    "env": {"PORT": "8080"}, "ready": {"url": "http://127.0.0.1:8080/health"},
//    "ready_timeout": "10s", "stop_grace": "5s"}
#include <re2/re2.h>

#include "config/config.h"
#include "config/load/parse.h"
#include "config/scenario/parse_internal.h"

namespace corral::load {
namespace {

using nlohmann::json;
using scenario::detail::check_fields;
using scenario::detail::element_path;
using scenario::detail::fail;
using scenario::detail::field_path;
using scenario::detail::ParseError;
using scenario::detail::read_duration;
using scenario::detail::read_positive_duration;
using scenario::detail::read_string;
using scenario::detail::shown;

std::vector<std::string> read_cmd(const json& j, const std::string& path) {
  if (!j.is_array() || j.empty()) {
    fail(path,
         "expected the program and its arguments, like [\"node\", \"server.js\"], got " + shown(j));
  }
  std::vector<std::string> cmd;
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) fail(element_path(path, i), "expected a string, got " + shown(j[i]));
    cmd.push_back(j[i].get<std::string>());
  }
  if (cmd[0].empty()) fail(element_path(path, 0), "the program's name is empty");
  return cmd;
}

void read_env(const json& j, const std::string& path, TargetCommand& t) {
  if (!j.is_object()) fail(path, "expected an object of names and values");
  for (const auto& [name, value] : j.items()) {
    const std::string p = field_path(path, name);
    if (name.empty() || name.find('=') != std::string::npos) {
      fail(p, "an environment variable's name may not be empty or hold \"=\"");
    }
    if (!value.is_string()) fail(p, "expected a string, got " + shown(value));
    t.env.emplace_back(name, value.get<std::string>());
  }
}

// {"url": "http://..."}, {"log": "regex"} or {"port": 8080}: exactly one.
void read_ready(const json& j, const std::string& path, TargetCommand& t) {
  if (!j.is_object() || j.size() != 1) {
    fail(path,
         "expected one of {\"url\": \"http://...\"}, {\"log\": \"a pattern\"} or "
         "{\"port\": 8080}, got " +
             shown(j));
  }
  check_fields(j, path, {"url", "log", "port"});
  if (j.contains("url")) {
    t.ready = TargetCommand::Ready::kUrl;
    t.url = read_string(j["url"], field_path(path, "url"));
    if (t.url.rfind("http://", 0) != 0) {
      fail(field_path(path, "url"), "expected an http:// URL, got \"" + t.url + "\"");
    }
  } else if (j.contains("log")) {
    t.ready = TargetCommand::Ready::kLog;
    t.log = read_string(j["log"], field_path(path, "log"));
    RE2 re(t.log, RE2::Quiet);
    if (!re.ok()) fail(field_path(path, "log"), "not a valid pattern: " + re.error());
  } else {
    const json& p = j["port"];
    if (!p.is_number_unsigned() || p.get<uint64_t>() < 1 || p.get<uint64_t>() > 65535) {
      fail(field_path(path, "port"), "expected a port from 1 to 65535, got " + shown(p));
    }
    t.ready = TargetCommand::Ready::kPort;
    t.port = p.get<uint16_t>();
  }
}

}  // namespace

Result<TargetCommand> parse_target(const json& j, const std::string& path) {
  try {
    if (!j.is_object()) fail(path, "expected an object with \"cmd\"");
    check_fields(j, path, {"cmd", "cwd", "env", "ready", "ready_timeout", "stop_grace"});
    if (!j.contains("cmd")) fail(field_path(path, "cmd"), "missing: the command that starts it");
    TargetCommand t;
    t.cmd = read_cmd(j["cmd"], field_path(path, "cmd"));
    if (j.contains("cwd")) t.cwd = read_string(j["cwd"], field_path(path, "cwd"));
    if (j.contains("env")) read_env(j["env"], field_path(path, "env"), t);
    if (j.contains("ready")) read_ready(j["ready"], field_path(path, "ready"), t);
    if (j.contains("ready_timeout")) {
      t.ready_timeout_ms =
          read_positive_duration(j["ready_timeout"], field_path(path, "ready_timeout"));
    }
    if (j.contains("stop_grace")) {
      t.stop_grace_ms = read_duration(j["stop_grace"], field_path(path, "stop_grace"));
    }
    return t;
  } catch (const ParseError& e) {
    return invalid_argument(e.message);
  }
}

}  // namespace corral::load
