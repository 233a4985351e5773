// Template compilation and expansion.
#include "config/scenario/template.h"

#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdlib>
#include <optional>
#include <random>

#include "shared/text/utf8.h"

namespace corral::scenario {
namespace {

constexpr std::string_view kOpen = "{{";
constexpr std::string_view kClose = "}}";
constexpr std::string_view kEnvPrefix = "env.";
constexpr std::string_view kSecretPrefix = "secret.";

std::string json_quote(std::string_view text) { return nlohmann::json(text).dump(); }

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

// The segment a reference's inner text names, or nullopt if it is not a valid name.
std::optional<Template::Segment> reference(std::string_view name) {
  using Kind = Template::Kind;
  if (name == "instance") return Template::Segment{Kind::kInstance, ""};
  if (name == "run") return Template::Segment{Kind::kRun, ""};
  if (name == "uuid") return Template::Segment{Kind::kUuid, ""};
  if (name == "callback_url") return Template::Segment{Kind::kCallbackUrl, ""};
  if (name.starts_with(kEnvPrefix)) {
    std::string_view env = name.substr(kEnvPrefix.size());
    if (!is_identifier(env)) return std::nullopt;
    return Template::Segment{Kind::kEnv, std::string(env)};
  }
  if (name.starts_with(kSecretPrefix)) {
    std::string_view secret = name.substr(kSecretPrefix.size());
    if (!is_identifier(secret)) return std::nullopt;
    return Template::Segment{Kind::kSecret, std::string(secret)};
  }
  // "eu.job": a variable a parallel step's branch "eu" captured, named after the join.
  std::string_view first = name.substr(0, name.find('.'));
  if (name.empty() || is_builtin_name(first)) return std::nullopt;
  for (std::string_view rest = name; !rest.empty();) {
    size_t dot = rest.find('.');
    if (!is_identifier(rest.substr(0, dot))) return std::nullopt;
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    if (dot != std::string_view::npos && rest.empty()) return std::nullopt;
  }
  return Template::Segment{Kind::kVariable, std::string(name)};
}

void append_literal(std::vector<Template::Segment>& segments, std::string_view text) {
  if (text.empty()) return;
  if (!segments.empty() && segments.back().kind == Template::Kind::kLiteral) {
    segments.back().text += text;
  } else {
    segments.push_back({Template::Kind::kLiteral, std::string(text)});
  }
}

std::string json_text(const nlohmann::json& value) {
  if (value.is_string()) return value.get_ref<const std::string&>();
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void report(Status* error, std::string message) {
  if (error && error->is_ok()) *error = Status(Code::kNotFound, std::move(message));
}

// Appends the text of one non-literal segment.
void expand_reference(const Template::Segment& s, const Vars& vars, std::string& out,
                      Status* error) {
  switch (s.kind) {
    case Template::Kind::kLiteral:
      out += s.text;
      return;
    case Template::Kind::kVariable:
      if (const nlohmann::json* value = vars.find(s.text)) {
        out += json_text(*value);
      } else {
        report(error, "unknown variable " + json_quote(s.text));
      }
      return;
    case Template::Kind::kInstance:
      out += std::to_string(vars.instance());
      return;
    case Template::Kind::kRun:
      out += vars.run();
      return;
    case Template::Kind::kUuid:
      out += make_uuid();
      return;
    case Template::Kind::kCallbackUrl: {
      std::string url = vars.callback_url();
      if (url.empty()) report(error, "no callback step follows, so there is no {{callback_url}}");
      out += url;
      return;
    }
    case Template::Kind::kEnv:
      if (const char* value = std::getenv(s.text.c_str())) {
        out += value;
      } else {
        report(error, "environment variable " + json_quote(s.text) + " is not set");
      }
      return;
    case Template::Kind::kSecret:
      if (const std::string* value = vars.secret(s.text)) {
        out += *value;
      } else {
        report(error, "secret " + json_quote(s.text) + " is not set");
      }
      return;
  }
}

// The name of the first reference in `t` whose text is not UTF-8, or "" when it is a
// literal or built-in that is at fault.
std::string first_non_utf8(const Template& t, const Vars& vars) {
  for (const Template::Segment& s : t.segments()) {
    const std::string* text = nullptr;
    std::string env;
    if (s.kind == Template::Kind::kVariable) {
      const nlohmann::json* v = vars.find(s.text);
      if (v && v->is_string()) text = &v->get_ref<const std::string&>();
    } else if (s.kind == Template::Kind::kSecret) {
      text = vars.secret(s.text);
    } else if (s.kind == Template::Kind::kEnv) {
      if (const char* e = std::getenv(s.text.c_str())) env = e;
      text = &env;
    }
    if (text && !text::is_utf8(*text)) {
      std::string_view what = s.kind == Template::Kind::kVariable ? "variable "
                              : s.kind == Template::Kind::kSecret ? "secret "
                                                                  : "environment variable ";
      return std::string(what) + json_quote(s.text);
    }
  }
  return "a value";
}

void compile_json(const nlohmann::json& node, const nlohmann::json::json_pointer& where,
                  const std::string& path, std::vector<JsonTemplate::Slot>& slots, Status& error) {
  if (!error.is_ok()) return;
  if (node.is_string()) {
    Result<Template> t = Template::compile(node.get_ref<const std::string&>());
    if (!t) {
      error = invalid_argument(path + ": " + t.status().message());
    } else if (!t->is_literal()) {
      slots.push_back({where, path, std::move(*t)});
    }
  } else if (node.is_object()) {
    for (const auto& [key, child] : node.items()) {
      compile_json(child, where / key, path + "." + key, slots, error);
    }
  } else if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      compile_json(node[i], where / i, path + "[" + std::to_string(i) + "]", slots, error);
    }
  }
}

}  // namespace

bool is_builtin_name(std::string_view name) {
  return name == "instance" || name == "run" || name == "uuid" || name == "env" ||
         name == "secret" || name == "callback_url";
}

const nlohmann::json* JsonVars::find(std::string_view name) const {
  if (!values_.is_object()) return nullptr;
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : &*it;
}

Result<Template> Template::compile(std::string_view text) {
  Template t;
  t.source_ = std::string(text);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) break;
    size_t close = text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos) {
      return invalid_argument("unclosed \"{{\" in " + json_quote(text));
    }
    std::string_view whole = text.substr(open, close + kClose.size() - open);
    std::optional<Segment> ref = reference(trim(whole.substr(2, whole.size() - 4)));
    if (!ref) {
      return invalid_argument("invalid variable reference " + json_quote(whole) + " in " +
                              json_quote(text));
    }
    append_literal(t.segments_, text.substr(pos, open - pos));
    t.segments_.push_back(std::move(*ref));
    pos = close + kClose.size();
  }
  if (pos < text.size()) append_literal(t.segments_, text.substr(pos));
  return t;
}

std::string Template::expand(const Vars& vars, Status* error) const {
  if (segments_.size() == 1 && segments_[0].kind == Kind::kLiteral) return segments_[0].text;
  std::string out;
  out.reserve(source_.size() + 32);
  for (const Segment& s : segments_) expand_reference(s, vars, out, error);
  return out;
}

nlohmann::json Template::expand_json(const Vars& vars, Status* error) const {
  if (segments_.size() == 1) {
    const Segment& only = segments_[0];
    if (only.kind == Kind::kInstance) return vars.instance();
    if (only.kind == Kind::kVariable) {
      if (const nlohmann::json* value = vars.find(only.text)) return *value;
    }
  }
  return expand(vars, error);
}

std::vector<std::string> Template::names(Kind kind) const {
  std::vector<std::string> out;
  for (const Segment& s : segments_) {
    if (s.kind == kind) out.push_back(s.text);
  }
  return out;
}

bool Template::is_literal() const {
  return segments_.empty() || (segments_.size() == 1 && segments_[0].kind == Kind::kLiteral);
}

Result<JsonTemplate> JsonTemplate::compile(const nlohmann::json& doc) {
  JsonTemplate t;
  t.doc_ = doc;
  Status error;
  compile_json(doc, nlohmann::json::json_pointer(), "", t.slots_, error);
  if (!error.is_ok()) return error;
  return t;
}

nlohmann::json JsonTemplate::expand(const Vars& vars, Status* error) const {
  nlohmann::json out = doc_;
  for (const Slot& slot : slots_) {
    nlohmann::json value = slot.value.expand_json(vars, error);
    if (value.is_string() && !text::is_utf8(value.get_ref<const std::string&>())) {
      if (error && error->is_ok()) {
        *error = invalid_argument(first_non_utf8(slot.value, vars) + " in " +
                                  (slot.path.empty() ? "the JSON body" : slot.path) +
                                  " is not UTF-8 text (send bytes with \"body\")");
      }
      value = nullptr;
    }
    out[slot.where] = std::move(value);
  }
  return out;
}

std::string make_uuid() {
  // Reseeded in a forked child too: processes forked from one parent must not share UUIDs.
  thread_local std::mt19937_64 rng;
  thread_local pid_t seeded_in = 0;
  if (seeded_in != getpid()) {
    std::random_device device;
    std::seed_seq seed{device(), device(), device(), device()};
    rng.seed(seed);
    seeded_in = getpid();
  }
  std::array<uint8_t, 16> bytes;
  for (size_t half = 0; half < 2; ++half) {
    uint64_t r = rng();
    for (size_t i = 0; i < 8; ++i) bytes[half * 8 + i] = static_cast<uint8_t>(r >> (i * 8));
  }
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0f) | 0x40);  // version 4
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3f) | 0x80);  // RFC 4122 variant
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0x0f];
  }
  return out;
}

}  // namespace corral::scenario
