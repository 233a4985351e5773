// Loading, checking and printing a Config, all driven by the field table in fields.cc.
#include "config/config.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "config/fields.h"
#include "shared/text/strict_json.h"

namespace corral::config {
namespace {

using nlohmann::json;

[[noreturn]] void fail(std::string_view field, const std::string& what) {
  throw ConfigError(std::string(field) + ": " + what);
}

std::string show_bound(const Field& f, double bound) {
  switch (f.kind) {
    case Kind::kDuration:
      return format_duration_ms(static_cast<uint64_t>(bound));
    case Kind::kBytes:
      return format_bytes(static_cast<uint64_t>(bound));
    case Kind::kDouble:
      return json(bound).dump();
    case Kind::kInt:
    case Kind::kString:
    case Kind::kHooks:
    case Kind::kLimits:
    case Kind::kTls:
      return std::to_string(static_cast<long long>(bound));
  }
  return "?";
}

// Written as "not inside" so that NaN is rejected too.
void check_range(const Field& f, double value, const json& shown) {
  if (value >= f.min && value <= f.max) return;
  fail(f.name, "must be between " + show_bound(f, f.min) + " and " + show_bound(f, f.max) +
                   ", got " + shown.dump());
}

int read_int(const Field& f, const json& v) {
  if (!v.is_number_integer()) fail(f.name, "expected a whole number, got " + v.dump());
  double d = v.is_number_unsigned() ? static_cast<double>(v.get<uint64_t>())
                                    : static_cast<double>(v.get<int64_t>());
  check_range(f, d, v);
  return static_cast<int>(d);
}

double read_double(const Field& f, const json& v) {
  if (!v.is_number()) fail(f.name, "expected a number, got " + v.dump());
  double d = v.get<double>();
  check_range(f, d, v);
  return d;
}

std::string read_string(const Field& f, const json& v) {
  if (!v.is_string()) fail(f.name, "expected a string, got " + v.dump());
  std::string s = v.get<std::string>();
  if (f.choices.empty()) return s;
  std::string list;
  for (std::string_view choice : f.choices) {
    if (choice == s) return s;
    list += (list.empty() ? "" : ", ") + std::string(choice);
  }
  fail(f.name, "expected one of " + list + ", got " + v.dump());
}

uint64_t read_duration(const Field& f, const json& v) {
  if (!v.is_string()) fail(f.name, "expected a duration like \"5s\", got " + v.dump());
  Result<uint64_t> ms = parse_duration_ms(v.get<std::string>());
  if (!ms) fail(f.name, ms.status().message());
  check_range(f, static_cast<double>(*ms), v);
  return *ms;
}

// A size is a string like "512MB" or a JSON integer >= 0 counting bytes.
uint64_t read_bytes(const Field& f, const json& v) {
  Result<uint64_t> bytes = invalid_argument("expected a size like \"512MB\", got " + v.dump());
  if (v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0)) {
    bytes = v.get<uint64_t>();
  } else if (v.is_string()) {
    bytes = parse_bytes(v.get<std::string>());
  }
  if (!bytes) fail(f.name, bytes.status().message());
  check_range(f, static_cast<double>(*bytes), v);
  return *bytes;
}

// The hooks report their own path ("hooks.worker_exit[1].url: ...").
Hooks read_hooks(const json& v) {
  Result<Hooks> hooks = parse_hooks(v);
  if (!hooks) throw ConfigError(hooks.status().message());
  return std::move(*hooks);
}

// The limits report their own path ("limits[\"http://a:1\"].rate: ...").
TargetLimits read_limits(const Field& f, const json& v) {
  Result<TargetLimits> limits = parse_limits(v, std::string(f.name));
  if (!limits) throw ConfigError(limits.status().message());
  return std::move(*limits);
}

http::TlsOptions read_tls(const Field& f, const json& v) {
  Result<http::TlsOptions> tls = http::tls_options_from_json(v, std::string(f.name));
  if (!tls) throw ConfigError(tls.status().message());
  return std::move(*tls);
}

void apply_field(Config& cfg, const Field& f, const json& v) {
  switch (f.kind) {
    case Kind::kInt:
      cfg.*std::get<int Config::*>(f.member) = read_int(f, v);
      return;
    case Kind::kDouble:
      cfg.*std::get<double Config::*>(f.member) = read_double(f, v);
      return;
    case Kind::kString:
      cfg.*std::get<std::string Config::*>(f.member) = read_string(f, v);
      return;
    case Kind::kDuration:
      cfg.*std::get<uint64_t Config::*>(f.member) = read_duration(f, v);
      return;
    case Kind::kBytes:
      cfg.*std::get<uint64_t Config::*>(f.member) = read_bytes(f, v);
      return;
    case Kind::kHooks:
      cfg.*std::get<Hooks Config::*>(f.member) = read_hooks(v);
      return;
    case Kind::kLimits:
      cfg.*std::get<TargetLimits Config::*>(f.member) = read_limits(f, v);
      return;
    case Kind::kTls:
      cfg.*std::get<http::TlsOptions Config::*>(f.member) = read_tls(f, v);
      return;
  }
}

json field_to_json(const Config& cfg, const Field& f) {
  switch (f.kind) {
    case Kind::kInt:
      return cfg.*std::get<int Config::*>(f.member);
    case Kind::kDouble:
      return cfg.*std::get<double Config::*>(f.member);
    case Kind::kString:
      return cfg.*std::get<std::string Config::*>(f.member);
    case Kind::kDuration:
      return format_duration_ms(cfg.*std::get<uint64_t Config::*>(f.member));
    case Kind::kBytes:
      return format_bytes(cfg.*std::get<uint64_t Config::*>(f.member));
    case Kind::kHooks:
      return hooks_to_json(cfg.*std::get<Hooks Config::*>(f.member));
    case Kind::kLimits:
      return limits_to_json(cfg.*std::get<TargetLimits Config::*>(f.member));
    case Kind::kTls:
      return http::to_json(cfg.*std::get<http::TlsOptions Config::*>(f.member));
  }
  return nullptr;
}

}  // namespace

Result<std::string> read_whole_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(std::string("cannot open: ") + std::strerror(errno));
  std::string text;
  char buf[8192];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  }
  int read_errno = errno;
  ::close(fd);
  if (n < 0) return io_error(std::string("cannot read: ") + std::strerror(read_errno));
  return text;
}

Config defaults() {
  Config cfg;
  const char* corral_home = std::getenv("CORRAL_HOME");
  const char* home = std::getenv("HOME");
  if (corral_home != nullptr && *corral_home != '\0') {
    cfg.home = corral_home;
  } else if (home != nullptr && *home != '\0') {
    cfg.home = std::string(home) + "/.corral";
  } else {
    cfg.home = "/tmp/corral-" + std::to_string(::getuid());
  }
  if (const char* token = std::getenv("CORRAL_API_TOKEN")) cfg.api_token = token;
  return cfg;
}

void apply_json(Config& cfg, const json& j) {
  if (!j.is_object()) {
    throw ConfigError(std::string("expected a JSON object of settings, got ") + j.type_name());
  }
  Config updated = cfg;  // so that a bad field leaves `cfg` as it was
  for (const auto& [key, value] : j.items()) {
    const Field* f = find_field(key);
    if (f == nullptr) throw ConfigError(unknown_name("field", key, field_names()));
    apply_field(updated, *f, value);
  }
  cfg = std::move(updated);
}

json read_settings(const std::string& path) {
  Result<std::string> text = read_whole_file(path);
  if (!text) throw ConfigError(text.status().message());
  Result<json> parsed = text::parse_strict_json(*text);
  if (!parsed) throw ConfigError(parsed.status().message());
  json j = std::move(*parsed);
  if (!j.is_object()) {
    throw ConfigError(std::string("expected a JSON object of settings, got ") + j.type_name());
  }
  return j;
}

void apply_file(Config& cfg, const std::string& path) {
  try {
    apply_json(cfg, read_settings(path));
  } catch (const ConfigError& e) {
    throw ConfigError("config file " + path + ": " + e.what());
  }
}

std::vector<std::string> validation_problems(const Config& cfg) {
  std::vector<std::string> problems;
  // Each field's own rules, by reading it back in config-file form into a scratch copy.
  Config scratch = cfg;
  for (const Field& f : fields()) {
    try {
      apply_field(scratch, f, field_to_json(cfg, f));
    } catch (const ConfigError& e) {
      problems.emplace_back(e.what());
    }
  }
  if (cfg.heartbeat_timeout_ms <= cfg.heartbeat_interval_ms) {
    problems.push_back("heartbeat_timeout (" + format_duration_ms(cfg.heartbeat_timeout_ms) +
                       ") must be greater than heartbeat_interval (" +
                       format_duration_ms(cfg.heartbeat_interval_ms) + ")");
  }
  if (cfg.backoff_max_ms < cfg.backoff_initial_ms) {
    problems.push_back("backoff_max (" + format_duration_ms(cfg.backoff_max_ms) +
                       ") must be at least backoff_initial (" +
                       format_duration_ms(cfg.backoff_initial_ms) + ")");
  }
  if (cfg.memory_kernel_factor < cfg.memory_hard_factor) {
    problems.push_back("memory_kernel_factor (" + json(cfg.memory_kernel_factor).dump() +
                       ") must be at least memory_hard_factor (" +
                       json(cfg.memory_hard_factor).dump() + ")");
  }
  if (cfg.response_memory_bytes < cfg.max_response_bytes) {
    problems.push_back("response_memory (" + format_bytes(cfg.response_memory_bytes) +
                       ") must be at least max_response (" + format_bytes(cfg.max_response_bytes) +
                       ")");
  }
  if (cfg.listen != "off") {
    auto parsed = parse_host_port(cfg.listen);
    if (!parsed) {
      problems.push_back("listen: " + parsed.status().message() + "; or \"off\" to disable it");
    } else if (!is_loopback(parsed->first) && cfg.api_token.empty()) {
      problems.push_back("listen: " + cfg.listen +
                         " is not a loopback address: set api_token (or CORRAL_API_TOKEN) so "
                         "that only those who know it can use the API");
    }
  }
  return problems;
}

void validate(const Config& cfg) {
  std::vector<std::string> problems = validation_problems(cfg);
  if (!problems.empty()) throw ConfigError(problems.front());
}

json to_json(const Config& cfg) {
  json j = json::object();
  for (const Field& f : fields()) j[std::string(f.name)] = field_to_json(cfg, f);
  return j;
}

namespace {

// "1 to 1024" for a number field; "" for the other kinds, whose ranges are their units'.
std::string range_of(const Field& f) {
  if (f.kind == Kind::kInt) {
    return std::to_string(static_cast<int64_t>(f.min)) + " to " +
           std::to_string(static_cast<int64_t>(f.max));
  }
  if (f.kind == Kind::kDouble) return json(f.min).dump() + " to " + json(f.max).dump();
  return "";
}

}  // namespace

std::vector<FieldDoc> field_docs() {
  const json defaults_json = to_json(Config{});
  std::vector<FieldDoc> docs;
  for (const Field& f : fields()) {
    FieldDoc doc{std::string(f.name),
                 std::string(kind_name(f.kind)),
                 defaults_json[std::string(f.name)].dump(),
                 range_of(f),
                 {},
                 std::string(f.help)};
    for (std::string_view c : f.choices) doc.choices.emplace_back(c);
    docs.push_back(std::move(doc));
  }
  return docs;
}

std::string field_reference() {
  std::string text;
  for (const FieldDoc& f : field_docs()) {
    text += f.name + " (" + f.kind + ", default " + f.default_value + "): " + f.help + "\n";
  }
  return text;
}

}  // namespace corral::config
