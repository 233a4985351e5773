// Field readers shared by the scenario parser.
#include <cctype>

#include "config/config.h"
#include "config/fields.h"
#include "config/scenario/parse_internal.h"

namespace corral::scenario::detail {

void fail(const std::string& path, const std::string& what) {
  throw ParseError{path.empty() ? what : path + ": " + what};
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string field_path(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

std::string element_path(const std::string& path, size_t index) {
  return path + "[" + std::to_string(index) + "]";
}

std::string shown(const json& value) { return describe_value(value); }

std::string did_you_mean(std::string_view name, const std::vector<std::string_view>& known) {
  const std::string_view* close = config::closest_name(name, known);
  return close == nullptr ? "" : " (did you mean " + shown(std::string(*close)) + "?)";
}

void check_fields(const json& j, const std::string& path,
                  std::initializer_list<std::string_view> known) {
  check_fields(j, path, std::vector<std::string_view>(known));
}

void check_fields(const json& j, const std::string& path,
                  const std::vector<std::string_view>& known) {
  if (!j.is_object()) fail(path, "expected an object");
  for (const auto& [key, value] : j.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (found) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    fail(field_path(path, key),
         "unknown field" + did_you_mean(key, known) + " (known: " + list + ")");
  }
}

const json& required(const json& j, const std::string& path, std::string_view name,
                     std::string_view expected) {
  auto it = j.find(name);
  if (it == j.end()) fail(field_path(path, name), "missing, expected " + std::string(expected));
  return *it;
}

std::string read_string(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a string");
  if (j.get_ref<const std::string&>().empty()) fail(path, "expected a non-empty string");
  return j.get<std::string>();
}

uint64_t read_duration(const json& j, const std::string& path) {
  Result<uint64_t> ms = j.is_string() ? config::parse_duration_ms(j.get<std::string>())
                                      : Result<uint64_t>(invalid_argument(""));
  if (!ms) fail(path, "expected a duration like \"10s\", got " + shown(j));
  return *ms;
}

uint64_t read_positive_duration(const json& j, const std::string& path) {
  uint64_t ms = read_duration(j, path);
  if (ms == 0) fail(path, "expected a duration greater than 0, got " + shown(j));
  return ms;
}

int read_int(const json& j, const std::string& path, int min, int max) {
  bool ok = j.is_number_integer() && j.get<int64_t>() >= min && j.get<int64_t>() <= max;
  if (!ok) {
    fail(path, "expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
                   ", got " + shown(j));
  }
  return j.get<int>();
}

bool read_bool(const json& j, const std::string& path) {
  if (!j.is_boolean()) fail(path, "expected true or false, got " + shown(j));
  return j.get<bool>();
}

double read_number(const json& j, const std::string& path, double min, double max) {
  if (!j.is_number() || j.get<double>() < min || j.get<double>() > max) {
    fail(path, "expected a number from " + json(min).dump() + " to " + json(max).dump() + ", got " +
                   shown(j));
  }
  return j.get<double>();
}

uint64_t read_size(const json& j, const std::string& path, uint64_t max) {
  Result<uint64_t> bytes = j.is_string()            ? config::parse_bytes(j.get<std::string>())
                           : j.is_number_integer() && j.get<int64_t>() >= 0
                               ? Result<uint64_t>(j.get<uint64_t>())
                                                    : Result<uint64_t>(invalid_argument(""));
  if (!bytes || *bytes == 0) fail(path, "expected a size like \"64MB\", got " + shown(j));
  if (*bytes > max) fail(path, "at most " + config::format_bytes(max) + ", got " + shown(j));
  return *bytes;
}

json::json_pointer read_pointer(const json& j, const std::string& path) {
  if (!j.is_string()) fail(path, "expected a JSON Pointer like \"/id\", got " + shown(j));
  const std::string& text = j.get_ref<const std::string&>();
  if (!text.empty() && text.front() != '/') {
    fail(path, shown(j) + " is not a JSON Pointer (it must start with \"/\")");
  }
  try {
    return json::json_pointer(text);
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.108] parse error: <reason>".
    std::string reason = e.what();
    size_t colon = reason.rfind(": ");
    if (colon != std::string::npos) reason = reason.substr(colon + 2);
    fail(path, shown(j) + " is not a JSON Pointer (" + reason + ")");
  }
}

void check_nesting(const json& doc) {
  // The arrays and objects being walked; each one's `next` is the child walked into or seen next.
  struct Level {
    const json* node;
    json::const_iterator next;
    size_t index;  // of `next`, for an array
  };
  if (!doc.is_structured()) return;
  auto advance = [](Level& l) {
    ++l.next;
    ++l.index;
  };
  std::vector<Level> levels{{&doc, doc.cbegin(), 0}};
  while (!levels.empty()) {
    Level& top = levels.back();
    if (top.next == top.node->cend()) {
      levels.pop_back();
      if (!levels.empty()) advance(levels.back());
      continue;
    }
    const json& child = *top.next;
    if (!child.is_structured()) {
      advance(top);
      continue;
    }
    if (levels.size() == kMaxNesting) {
      std::string path;
      for (const Level& l : levels) {
        path = l.node->is_array() ? element_path(path, l.index) : field_path(path, l.next.key());
      }
      fail(path,
           "nested deeper than " + std::to_string(kMaxNesting) + " levels of arrays and objects");
    }
    levels.push_back({&child, child.cbegin(), 0});
  }
}

std::string check_variable_name(const std::string& name, const std::string& path) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name.front()));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok) fail(path, "a variable name may hold only letters, digits and \"_\"");
  if (is_builtin_name(name)) fail(path, shown(name) + " is a built-in variable");
  return name;
}

void check_scope(const Template& t, const std::string& path, const Scope& scope) {
  for (const Template::Segment& s : t.segments()) {
    if (s.kind == Template::Kind::kCallbackUrl && scope.callback_url_at.empty()) {
      scope.callback_url_at = path;
    }
  }
  for (const std::string& name : t.variables()) {
    if (!scope.contains(name)) {
      std::vector<std::string_view> known(scope.vars.begin(), scope.vars.end());
      for (std::string_view b : {"instance", "run", "uuid"}) known.push_back(b);
      fail(path, "unknown variable " + shown(name) + did_you_mean(name, known) + " in " +
                     shown(t.source()));
    }
  }
  for (const std::string& name : t.names(Template::Kind::kEnv)) {
    if (name.starts_with("CORRAL_SECRET_")) {
      fail(path, "use {{secret." + name.substr(14) + "}} rather than {{env." + name +
                     "}}: a secret's value must be masked");
    }
    if (scope.options && scope.options->has_env && !scope.options->has_env(name)) {
      fail(path, "environment variable " + shown(name) + " is not set");
    }
  }
  for (const std::string& name : t.names(Template::Kind::kSecret)) {
    if (scope.options && scope.options->has_secret && !scope.options->has_secret(name)) {
      fail(path, "unknown secret " + shown(name) +
                     " (secrets come from CORRAL_SECRET_<NAME> or the secrets_file)");
    }
  }
}

Template read_template(const json& j, const std::string& path, const Scope& scope) {
  if (!j.is_string()) fail(path, "expected a string");
  Result<Template> t = Template::compile(j.get_ref<const std::string&>());
  if (!t) fail(path, t.status().message());
  check_scope(*t, path, scope);
  return std::move(*t);
}

}  // namespace corral::scenario::detail
